//! Data parallelism as one graph over several devices: each device holds a
//! replica of the parameters `p` and a shard `x` of the data; a step is a
//! kernel per device computing its contribution `g = x * p`, an all-reduce
//! (sum) of `g` over the devices, and a kernel per device applying it,
//! `p += g`, so that the replicas stay equal. The step is one multi-device
//! graph (`cmdbuf-runtime`), finalized once and replayed; the all-reduce is
//! NCCL on CUDA GPUs (captured into a CUDA graph) and staged through the
//! host elsewhere. Results are checked exactly (wrapping `u32` arithmetic)
//! against the host after the first step and after the last.
//!
//! Runs over every selected device that builds its kernels (a Rust
//! function for the CPU adapter, OpenCL C, CUDA C); with one such device,
//! the all-reduce has one rank.
//!
//! ```sh
//! cargo run -p cmdbuf --example data_parallel
//! UR_DEVICE_SELECTOR='cuda:*' cargo run --release -p cmdbuf --example data_parallel
//! ```

use cmdbuf::collective::{DataType, ReduceOp};
use cmdbuf::prelude::*;
use cmdbuf::{ArgKind, NativeKernel, WorkGroup};
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, Node, NodeProperties};

/// Elements per shard and per replica.
const N: usize = 4096;
/// Steps replayed.
const STEPS: usize = 8;

/// `g[i] = x[i] * p[i]`.
fn grad(g: &WorkGroup<'_>) {
    let (out, x, p) = (g.ptr::<u32>(0), g.ptr::<u32>(1), g.ptr::<u32>(2));
    for item in g.items() {
        let i = item.global_linear_id();
        // SAFETY: the launches below pass allocations of N u32s and N items.
        unsafe { *out.add(i) = (*x.add(i)).wrapping_mul(*p.add(i)) };
    }
}

/// `p[i] += g[i]`.
fn update(g: &WorkGroup<'_>) {
    let (p, grads) = (g.ptr::<u32>(0), g.ptr::<u32>(1));
    for item in g.items() {
        let i = item.global_linear_id();
        // SAFETY: as for `grad`.
        unsafe { *p.add(i) = (*p.add(i)).wrapping_add(*grads.add(i)) };
    }
}

const OPENCL_C: &str = "__kernel void grad(__global uint *g, __global const uint *x, __global const uint *p) {\n\
    size_t i = get_global_id(0); g[i] = x[i] * p[i]; }\n\
    __kernel void update(__global uint *p, __global const uint *g) { size_t i = get_global_id(0); p[i] += g[i]; }";
/// CUDA C kernels from source take the CUDA adapter's launch block last (docs/cuda.md).
const CUDA_C: &str = "struct ur_launch { unsigned long long offset[3]; unsigned int *status; };\n\
    extern \"C\" __global__ void grad(unsigned *g, const unsigned *x, const unsigned *p, struct ur_launch l) {\n\
    size_t i = l.offset[0] + blockIdx.x * blockDim.x + threadIdx.x; g[i] = x[i] * p[i]; }\n\
    extern \"C\" __global__ void update(unsigned *p, const unsigned *g, struct ur_launch l) {\n\
    size_t i = l.offset[0] + blockIdx.x * blockDim.x + threadIdx.x; p[i] += g[i]; }";

/// One device's part: its context, kernels, queue and memory.
struct Replica {
    device: Device,
    context: Context,
    queue: Queue,
    grad: Kernel,
    update: Kernel,
    x: UsmAllocation,
    p: UsmAllocation,
    g: UsmAllocation,
}

/// Shard `d`'s data.
fn shard(d: usize) -> Vec<u32> {
    (0..N).map(|i| (i % 7 + d + 1) as u32).collect()
}

fn main() -> Result<()> {
    cmdbuf::init_logging()?;
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("grad", [ArgKind::Global, ArgKind::Global, ArgKind::Global]))
        .kernel(KernelSignature::new("update", [ArgKind::Global, ArgKind::Global]))
        .source(ProgramSource::Native(vec![NativeKernel::new("grad", grad), NativeKernel::new("update", update)]))
        .source(ProgramSource::OpenClC(OPENCL_C.into()))
        .source(ProgramSource::CudaC(CUDA_C.into()));
    let loader = cmdbuf::load()?;
    let mut replicas = Vec::new();
    for device in loader.devices() {
        let context = Context::new(&device)?;
        let program = match Program::new(&context, &bundle) {
            Ok(program) => program,
            Err(e) => {
                println!("{device}: left out ({e})");
                continue;
            }
        };
        let queue = Queue::new(&context, QueueProperties::default())?;
        let alloc = || UsmAllocation::new(&context, UsmKind::Device, N * 4);
        let (x, p, g) = (alloc()?, alloc()?, alloc()?);
        let d = replicas.len();
        queue.write_usm(x.ptr(), bytes(&shard(d)), &[])?;
        queue.write_usm(p.ptr(), bytes(&[1u32; N]), &[])?;
        let (grad, update) = (Kernel::new(&program, "grad")?, Kernel::new(&program, "update")?);
        replicas.push(Replica { device, context, queue, grad, update, x, p, g });
    }
    if replicas.is_empty() {
        return Err(UrError::DeviceNotFound(cmdbuf::Detail::msg("no selected device builds the example's kernels")));
    }
    let contexts: Vec<&Context> = replicas.iter().map(|r| &r.context).collect();
    let graph = Graph::new_multi_device(&contexts, GraphProperties::default())?;
    let mut grads: Vec<Node> = Vec::new();
    for r in &replicas {
        let args = [KernelArg::Pointer(r.g.ptr()), KernelArg::Pointer(r.x.ptr()), KernelArg::Pointer(r.p.ptr())];
        let node = graph.add(
            // SAFETY: the three allocations hold N u32s and outlive the graph.
            |h| unsafe { h.launch(&KernelLaunch::new(&r.grad, &[N], &args)) },
            NodeProperties::new().on_device(&r.device),
        )?;
        grads.push(node);
    }
    let buffers: Vec<(UsmPtr, UsmPtr)> = replicas.iter().map(|r| (r.g.ptr(), r.g.ptr())).collect();
    let deps: Vec<&Node> = grads.iter().collect();
    let reduce = graph
        .add(|h| h.all_reduce(&buffers, N, DataType::U32, ReduceOp::Sum), NodeProperties::new().depends_on(&deps))?;
    let after = [&reduce];
    for r in &replicas {
        let args = [KernelArg::Pointer(r.p.ptr()), KernelArg::Pointer(r.g.ptr())];
        graph.add(
            // SAFETY: both allocations hold N u32s and outlive the graph.
            |h| unsafe { h.launch(&KernelLaunch::new(&r.update, &[N], &args)) },
            NodeProperties::new().on_device(&r.device).depends_on(&after),
        )?;
    }
    let step = graph.finalize(FinalizeProperties::default())?;

    // The host's replica of the parameters, stepped alongside.
    let shards: Vec<Vec<u32>> = (0..replicas.len()).map(shard).collect();
    let mut p = vec![1u32; N];
    let first = &replicas[0].queue;
    for s in 1..=STEPS {
        let done = step.enqueue_on(first, &[])?;
        let g: Vec<u32> =
            (0..N).map(|i| shards.iter().fold(0u32, |acc, x| acc.wrapping_add(x[i].wrapping_mul(p[i])))).collect();
        for (pi, gi) in p.iter_mut().zip(&g) {
            *pi = pi.wrapping_add(*gi);
        }
        if s == 1 || s == STEPS {
            done.wait()?;
            for r in &replicas {
                let mut got = vec![0u8; N * 4];
                r.queue.read_usm(r.p.ptr(), &mut got, &[])?;
                assert_eq!(got, bytes(&p), "{}: parameters after step {s}", r.device);
            }
        }
    }
    let names: Vec<String> = replicas.iter().map(|r| format!("{} ({})", r.device, r.device.info().name)).collect();
    println!(
        "ok: {STEPS} steps of one graph over {} device(s), replicas equal and exact: {}",
        replicas.len(),
        names.join(", ")
    );
    Ok(())
}

fn bytes(values: &[u32]) -> &[u8] {
    // SAFETY: u32s have no padding; the slice covers exactly their bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}
