//! Where the CUDA replay of a chain of `empty` kernels differs from the
//! raw baseline's (docs/performance.md, "CUDA replay at chain 10"): the
//! graphs are the same node for node, so this separates the two things
//! that are not, the kernel's code and the submission around
//! `cuGraphLaunch`. One chain of N `empty` launches, five ways, each
//! launched and waited for, sampled in turn in blocks:
//! - `adapter`: the adapter's in-order command buffer,
//!   `enqueue_command_buffer` and a wait on its event;
//! - `adapter, sync points`: the same chain in a command buffer that is not
//!   in order, each launch after the last one's sync point, as the bench's
//!   `build` makes it;
//! - `raw`: a graph of a hand-written PTX `empty` (a `ret` with the same
//!   32-byte parameter, for `sm_90` and later: the H100 and H200) built with the driver API on a stream of its own,
//!   `cuGraphLaunch`, `cuEventRecord`, `cuEventSynchronize` (the bench's
//!   `raw` column);
//! - `raw, adapter's kernel`: the same of the adapter's `CUfunction` (the
//!   kernel's native handle);
//! - `raw, adapter's kernel and stream`: that, launched on the adapter
//!   queue's stream;
//! - with a third argument `eager`, also `eager`: the N launches made
//!   eagerly on the adapter's queue (the command buffer's queue), and a
//!   wait for the last, as the bench's submission group does between its
//!   replay blocks;
//! - with `axpb`, also `axpb`: the N launches made eagerly on the adapter's
//!   queue as `axpb` over 256 work-items with a device USM pointer and two
//!   values, as the bench's `eager axpb` variant.
//!
//! With `single`, each way takes one sample per turn, as the bench's
//! submission group samples its variants, instead of blocks. With
//! `prior=K`, a chain of K in both forms (the adapter's, with sync points,
//! and the raw one) is built, replayed 100 times and dropped before the
//! chain of N is built, as the bench measures its sizes in turn
//! (`prior_rounds=R` times instead of 100); with
//! `prior_eager`, eager chains of K `empty` and of K `axpb` launches on
//! the adapter's queue after each of those replays, and with
//! `prior_raw_eager`, K raw `cuLaunchKernel`s on the raw stream.
//!
//! ```text
//! UR_DEVICE_SELECTOR=cuda:0 cargo run --release -p cmdbuf-bench --example graph_kernel_ab -- 10 20
//! ```
//!
//! Arguments: the chain's length (default 10), the rounds (default 20;
//! each round takes 100 samples of each way after 10 unmeasured), and a
//! comma-separated list of `eager`, `axpb`, `single`, `prior=K`,
//! `prior_rounds=R`, `prior_eager` and `prior_raw_eager`. Prints
//! wall µs per submission, median and 10th-90th percentiles, and each
//! way's median over `raw`'s.

use std::ffi::c_void;
use std::ptr;
use std::time::Instant;

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Kernel, KernelArg, KernelLaunch, Program, Queue,
    QueueProperties, SyncPoint, UsmAllocation, UsmKind,
};
use cudarc::driver::sys;

const PTX: &str = ".version 7.8\n.target sm_90\n.address_size 64\n\
                   .visible .entry empty(.param .align 8 .b8 launch[32])\n{\n    ret;\n}\n\0";

fn check(status: sys::CUresult, what: &str) -> Result<(), String> {
    if status == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(format!("{what}: {status:?}")) }
}

/// A chain of `n` launches of `func` with a zeroed 32-byte parameter, instantiated.
///
/// # Safety
/// `func` is a function of the current context.
unsafe fn chain(func: sys::CUfunction, n: usize) -> Result<sys::CUgraphExec, String> {
    let mut launch = [0u64; 4];
    let mut args: [*mut c_void; 1] = [launch.as_mut_ptr().cast()];
    // SAFETY: a C struct of numbers and pointers, for which all zeros
    // (null pointers: no `extra`, no other context) is a valid value.
    let mut params: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
    params.func = func;
    (params.gridDimX, params.gridDimY, params.gridDimZ) = (1, 1, 1);
    (params.blockDimX, params.blockDimY, params.blockDimZ) = (1, 1, 1);
    params.kernelParams = args.as_mut_ptr();
    let mut graph = ptr::null_mut();
    let mut exec = ptr::null_mut();
    // SAFETY: out-pointers are valid, each node's dependency is the node
    // made before it, and the parameters outlive the calls, which copy them.
    unsafe {
        check(sys::cuGraphCreate(&mut graph, 0), "cuGraphCreate")?;
        let mut last: Option<sys::CUgraphNode> = None;
        for _ in 0..n {
            let mut node = ptr::null_mut();
            let deps: Vec<sys::CUgraphNode> = last.into_iter().collect();
            check(sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &params), "add node")?;
            last = Some(node);
        }
        check(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "cuGraphInstantiate")?;
    }
    Ok(exec)
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, rounds) = (number(10), number(20));
    let options = std::env::args().nth(3).unwrap_or_default();
    let option = |name: &str| options.split(',').any(|o| o == name);
    let (with_eager, with_axpb, single) = (option("eager"), option("axpb"), option("single"));
    let value = |name: &str| -> Option<usize> { options.split(',').find_map(|o| o.strip_prefix(name)?.parse().ok()) };
    let (prior, prior_rounds) = (value("prior="), value("prior_rounds=").unwrap_or(100));
    let e = |e: cmdbuf::UrError| e.to_string();
    let loader = cmdbuf::load().map_err(e)?;
    let device = loader.first_device().map_err(e)?;
    let context = Context::new(&device).map_err(e)?;
    let queue = Queue::new(&context, QueueProperties::default()).map_err(e)?;
    let library = Program::new(&context, &cmdbuf_conformance::kernels::bundle()).map_err(e)?;
    let empty = Kernel::new(&library, "empty").map_err(e)?;
    let axpb = Kernel::new(&library, "axpb").map_err(e)?;
    let axpb_data = UsmAllocation::new(&context, UsmKind::Device, 256 * 4).map_err(e)?;
    let (mut context_raw, mut module, mut own_func) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    let (mut stream, mut done) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: the adapter's device is ordinal 0 of the selector `cuda:0`;
    // its primary context is the adapter's; every out-pointer is valid.
    unsafe {
        let mut dev = 0;
        check(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet")?;
        check(sys::cuDevicePrimaryCtxRetain(&mut context_raw, dev), "cuDevicePrimaryCtxRetain")?;
        check(sys::cuCtxSetCurrent(context_raw), "cuCtxSetCurrent")?;
        check(sys::cuModuleLoadData(&mut module, PTX.as_ptr().cast()), "cuModuleLoadData")?;
        check(sys::cuModuleGetFunction(&mut own_func, module, c"empty".as_ptr()), "cuModuleGetFunction")?;
        check(sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32), "stream")?;
        check(sys::cuEventCreate(&mut done, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32), "event")?;
    }
    let raw_launch = |exec: sys::CUgraphExec, on: sys::CUstream| -> Result<(), String> {
        // SAFETY: a live executable graph, stream and event of the current context.
        unsafe {
            check(sys::cuGraphLaunch(exec, on), "cuGraphLaunch")?;
            check(sys::cuEventRecord(done, on), "cuEventRecord")?;
            check(sys::cuEventSynchronize(done), "cuEventSynchronize")
        }
    };
    // A chain of `len` launches of `empty`: in an in-order buffer, or in one
    // that is not, each launch after the last one's sync point.
    let adapter_chain = |len: usize, in_order: bool| -> Result<CommandBuffer, cmdbuf::UrError> {
        let cb = CommandBuffer::new(&context, &device, CommandBufferDesc { in_order, ..Default::default() })?;
        let mut last: Option<SyncPoint> = None;
        for _ in 0..len {
            let after: Vec<SyncPoint> = last.into_iter().collect();
            // SAFETY: `empty` touches no memory.
            let appended = unsafe {
                cb.append_kernel_launch(&KernelLaunch::new(&empty, &[1], &[]), &[], AppendOptions::new().after(&after))
            }?;
            last = Some(appended.sync_point);
        }
        cb.finalize()?;
        Ok(cb)
    };
    let eager_k = |launch: &KernelLaunch<'_>, k: usize| -> Result<(), cmdbuf::UrError> {
        // SAFETY: `empty` touches no memory; `axpb` one u32 per work-item of
        // its 256-item allocation, which outlives the wait.
        let mut last = unsafe { queue.launch_kernel(launch, &[]) }?;
        for _ in 1..k {
            // SAFETY: as above.
            last = unsafe { queue.launch_kernel(launch, &[]) }?;
        }
        last.wait()
    };
    let launch = KernelLaunch::new(&empty, &[1], &[]);
    let (a, b) = (1u32, 1u32);
    let axpb_args = [KernelArg::Pointer(axpb_data.ptr()), KernelArg::value(&a), KernelArg::value(&b)];
    let axpb_launch = KernelLaunch::new(&axpb, &[256], &axpb_args);
    let raw_eager = |k: usize| -> Result<(), String> {
        let mut params = [0u64; 4];
        let mut args: [*mut c_void; 1] = [params.as_mut_ptr().cast()];
        // SAFETY: the hand-written kernel of the current context, its one
        // 32-byte parameter, on a live stream; the event is live.
        unsafe {
            for _ in 0..k {
                let launched =
                    sys::cuLaunchKernel(own_func, 1, 1, 1, 1, 1, 1, 0, stream, args.as_mut_ptr(), ptr::null_mut());
                check(launched, "cuLaunchKernel")?;
            }
            check(sys::cuEventRecord(done, stream), "cuEventRecord")?;
            check(sys::cuEventSynchronize(done), "cuEventSynchronize")
        }
    };
    if let Some(prior) = prior {
        // The bench's order: a shorter chain's graphs built, replayed and
        // dropped before this one's are built; with `prior_eager` and
        // `prior_raw_eager`, the eager launches of that size too.
        let before = adapter_chain(prior, false).map_err(e)?;
        // SAFETY: a chain of the hand-written kernel, the context current.
        let raw_before = unsafe { chain(own_func, prior)? };
        for _ in 0..prior_rounds {
            queue.enqueue_command_buffer(&before, &[]).and_then(|ev| ev.wait()).map_err(e)?;
            raw_launch(raw_before, stream)?;
            if option("prior_eager") {
                eager_k(&launch, prior).map_err(e)?;
                eager_k(&axpb_launch, prior).map_err(e)?;
            }
            if option("prior_raw_eager") {
                raw_eager(prior)?;
            }
        }
        drop(before);
        // SAFETY: launched above and waited for; not used again.
        check(unsafe { sys::cuGraphExecDestroy(raw_before) }, "cuGraphExecDestroy")?;
    }
    let cb = adapter_chain(n, true).map_err(e)?;
    let cb_points = adapter_chain(n, false).map_err(e)?;
    let adapter_func = empty.native_handle().map_err(e)?.0 as sys::CUfunction;
    let adapter_stream = queue.native_handle().map_err(e)?.0 as sys::CUstream;
    // SAFETY: functions of the current context.
    let (own, theirs) = unsafe { (chain(own_func, n)?, chain(adapter_func, n)?) };
    let mut ways =
        vec!["adapter", "raw", "raw, adapter's kernel", "raw, adapter's kernel and stream", "adapter, sync points"];
    if with_eager {
        ways.push("eager");
    }
    if with_axpb {
        ways.push("axpb");
    }
    let sample = |way: &str| -> Result<f64, String> {
        let start = Instant::now();
        match way {
            "adapter" => queue.enqueue_command_buffer(&cb, &[]).and_then(|ev| ev.wait()).map_err(e)?,
            "adapter, sync points" => {
                queue.enqueue_command_buffer(&cb_points, &[]).and_then(|ev| ev.wait()).map_err(e)?
            }
            "raw" => raw_launch(own, stream)?,
            "raw, adapter's kernel" => raw_launch(theirs, stream)?,
            "raw, adapter's kernel and stream" => raw_launch(theirs, adapter_stream)?,
            "eager" => eager_k(&launch, n).map_err(e)?,
            _ => eager_k(&axpb_launch, n).map_err(e)?,
        }
        Ok(start.elapsed().as_secs_f64() * 1e6)
    };
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    // Blocks of 110 per way and turn, or one sample per way and turn (110
    // turns per round), the first 10 unmeasured either way.
    let (turns, per_turn) = if single { (110, 1) } else { (1, 110) };
    for round in 0..rounds {
        for turn in 0..turns {
            for k in 0..ways.len() {
                let way = (k + round + turn) % ways.len();
                for i in 0..per_turn {
                    let took = sample(ways[way])?;
                    if turn + i >= 10 {
                        samples[way].push(took);
                    }
                }
            }
        }
    }
    let quantile = |s: &mut Vec<f64>, q: f64| {
        s.sort_by(f64::total_cmp);
        s[((s.len() - 1) as f64 * q) as usize]
    };
    let medians: Vec<f64> = samples.iter_mut().map(|s| quantile(s, 0.5)).collect();
    println!("{device}, a chain of {n} `empty` launches, wall µs per submission ({rounds} rounds of 100 each)\n");
    println!("| way | median | p10 | p90 | / raw |\n|---|---|---|---|---|");
    for (way, s) in ways.iter().zip(samples.iter_mut()) {
        let (p10, p50, p90) = (quantile(s, 0.1), quantile(s, 0.5), quantile(s, 0.9));
        println!("| {way} | {p50:.2} | {p10:.2} | {p90:.2} | {:.3}x |", p50 / medians[1]);
    }
    Ok(())
}
