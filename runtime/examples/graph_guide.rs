//! The worked example of `docs/graph.md`: the diamond of the Codeplay graph
//! proposal with a host task at the bottom and a dynamic parameter,
//! finalized, run, updated, and written as DOT.
//!
//! Without an argument the DOT files go to a folder under the system's
//! temporary directory (printed), so that a run leaves the checkout clean;
//! `UR_LOG=cmdbuf_runtime::graph=debug` shows the graph's tracing events.
//!
//! ```sh
//! cargo run -p cmdbuf-runtime --example graph_guide -- docs/images
//! dot -Tsvg docs/images/graph-guide.dot -o docs/images/graph-guide.svg
//! dot -Tsvg docs/images/graph-guide-exec.dot -o docs/images/graph-guide-exec.svg
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cmdbuf_core::{
    ArgKind, Context, Kernel, KernelArg, KernelLaunch, KernelSignature, NativeKernel, Program, ProgramBundle,
    ProgramSource, QueueProperties, UsmAllocation, UsmKind, WorkGroup,
};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{DynamicParameter, FinalizeProperties, Graph, GraphProperties, NodeProperties};

const N: usize = 1024;

/// `P[i] += 1`.
fn increment(g: &WorkGroup<'_>) {
    let p = g.ptr::<u32>(0);
    for item in g.items() {
        // SAFETY: launched over allocations of N elements with N items.
        unsafe { *p.add(item.global_id(0)) += 1 };
    }
}

/// `Z[i] = a * X[i] + Y[i]`.
fn saxpy(g: &WorkGroup<'_>) {
    let (z, a, x, y) = (g.ptr::<u32>(0), g.value::<u32>(1), g.ptr::<u32>(2), g.ptr::<u32>(3));
    for item in g.items() {
        let i = item.global_id(0);
        // SAFETY: as above.
        unsafe { *z.add(i) = a.wrapping_mul(*x.add(i)).wrapping_add(*y.add(i)) };
    }
}

fn main() -> cmdbuf_core::Result<()> {
    cmdbuf::init_logging()?;
    let out_dir: PathBuf = match std::env::args().nth(1) {
        Some(dir) => dir.into(),
        None => {
            let dir = std::env::temp_dir().join("ur-rs-graph-guide");
            std::fs::create_dir_all(&dir)
                .map_err(|e| cmdbuf_core::err!(InvalidValue, "cannot create {}: {e}", dir.display()))?;
            dir
        }
    };
    let device = cmdbuf_cpu::default_device();
    let ctx = Context::new(&device)?;
    let queue = Queue::new(&ctx, QueueProperties::default())?;
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("increment", [ArgKind::Global]))
        .kernel(KernelSignature::new("saxpy", [ArgKind::Global, ArgKind::Value(4), ArgKind::Global, ArgKind::Global]))
        .source(ProgramSource::Native(vec![
            NativeKernel::new("increment", increment),
            NativeKernel::new("saxpy", saxpy),
        ]));
    let program = Program::new(&ctx, &bundle)?;
    let (inc_k, saxpy_k) = (Kernel::new(&program, "increment")?, Kernel::new(&program, "saxpy")?);

    // Host USM, so that the host task can read the results.
    let alloc = || UsmAllocation::new(&ctx, UsmKind::Host, N * 4);
    let (a, b, c, b2) = (alloc()?, alloc()?, alloc()?, alloc()?);
    for (mem, value) in [(&a, 1u32), (&b, 10), (&c, 100), (&b2, 1000)] {
        queue.usm_fill(mem.ptr(), &value.to_le_bytes(), N * 4, &[])?.wait()?;
    }

    let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
    // The left branch's output is a dynamic parameter: an update can point
    // it at another allocation.
    let left_out = DynamicParameter::new(&graph, KernelArg::Pointer(b.ptr()))?;
    let top = graph.add(
        // SAFETY: N items over N-element allocations (also below).
        |h| unsafe { h.launch(&KernelLaunch::new(&inc_k, &[N], &[KernelArg::Pointer(a.ptr())])) },
        NodeProperties::new(),
    )?;
    let left = graph.add(
        |h| {
            h.set_arg(0, &left_out)?;
            h.set_arg(3, &left_out)?;
            let args = [
                KernelArg::Pointer(b.ptr()),
                KernelArg::value(&2u32),
                KernelArg::Pointer(a.ptr()),
                KernelArg::Pointer(b.ptr()),
            ];
            // SAFETY: as above; `b2` is as large as `b`.
            unsafe { h.launch(&KernelLaunch::new(&saxpy_k, &[N], &args)) }
        },
        NodeProperties::new().depends_on(&[&top]),
    )?;
    let right = graph.add(
        |h| {
            let args = [
                KernelArg::Pointer(c.ptr()),
                KernelArg::value(&3u32),
                KernelArg::Pointer(a.ptr()),
                KernelArg::Pointer(c.ptr()),
            ];
            // SAFETY: as above.
            unsafe { h.launch(&KernelLaunch::new(&saxpy_k, &[N], &args)) }
        },
        NodeProperties::new().depends_on(&[&top]),
    )?;
    let total = Arc::new(AtomicU64::new(0));
    let (sum, b_addr, c_addr) = (total.clone(), b.host_ptr().unwrap() as usize, c.host_ptr().unwrap() as usize);
    graph.add(
        move |h| {
            h.host_task(move || {
                // SAFETY: B and C hold N elements and both kernels writing
                // them have finished: the node depends on them.
                let (b, c) = unsafe {
                    (
                        std::slice::from_raw_parts(b_addr as *const u32, N),
                        std::slice::from_raw_parts(c_addr as *const u32, N),
                    )
                };
                sum.store(b.iter().chain(c).map(|x| u64::from(*x)).sum(), Ordering::SeqCst);
            })
        },
        NodeProperties::new().depends_on(&[&left, &right]),
    )?;

    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    for run in 1..=2 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
        println!("run {run}: sum of B and C = {}", total.load(Ordering::SeqCst));
    }
    // SAFETY: `b2` has N elements, as `b`.
    unsafe { left_out.update(KernelArg::Pointer(b2.ptr()))? };
    exec.update(&left)?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    let first: Vec<u32> = queue.core().clone_dtoh_range(b2.ptr(), 1, &[])?;
    println!("after the update the left branch writes B2: B2[0] = {}", first[0]);

    println!("partitions: {:#?}", exec.partitions());
    graph.print_graph(out_dir.join("graph-guide.dot"), true)?;
    exec.print_graph(out_dir.join("graph-guide-exec.dot"), false)?;
    println!("wrote graph-guide.dot and graph-guide-exec.dot in {}", out_dir.display());
    Ok(())
}
