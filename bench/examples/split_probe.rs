//! Probe (issue 29): how a two-GPU graph with a cross-device exchange is
//! best launched, measured with the driver API alone.
//!
//! The shape is the pipeline's: per device a half of `n` u32s, stage 1
//! (5 `bump`s of `mid`), each half's `mid` copied into the other device's
//! `recv`, stage 2 (5 `bump`s of `recv`). Four ways:
//! - `one`: the whole `n` on GPU 0, one graph (the exchange a copy inside it);
//! - `joint`: one CUDA graph over both GPUs (what a composition is today);
//! - `events`: one graph per GPU, cross-device edges as event record and
//!   wait nodes, GPU 0's graph launched first;
//! - `flags`: one graph per GPU, cross-device edges as a 32-bit flag written
//!   by the producer's graph (batch mem-op write node) and waited for, then
//!   cleared, by the consumer's (wait node); GPU 0's graph ends waiting for
//!   GPU 1's last flag; GPU 1's launch waits for the previous execution's end
//!   event.
//!
//! Prints, per way: host time of the launch calls, wall per execution
//! (launched and waited for), and how many executions gave exact values.
//!
//! `cargo run --release -p cmdbuf-bench --example split_probe -- [n ...]`

use std::ffi::{CString, c_void};
use std::ptr;
use std::time::Instant;

use cudarc::driver::sys;

type R<T> = Result<T, String>;

macro_rules! ck {
    ($call:expr) => {{
        // SAFETY: a probe: every handle is made above its use and alive.
        let status = unsafe { $call };
        if status != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("{}: {status:?}", stringify!($call)));
        }
    }};
}

const PTX: &str = r#"
.version 7.8
.target sm_90
.address_size 64
.visible .entry bump(.param .u64 p, .param .u32 n)
{
 .reg .pred %q<2>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [p];
 ld.param.u32 %r1, [n];
 mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;
 mad.lo.s32 %r5, %r2, %r3, %r4;
 setp.ge.u32 %q1, %r5, %r1;
 @%q1 bra DONE;
 cvta.to.global.u64 %rd2, %rd1;
 mul.wide.u32 %rd3, %r5, 4;
 add.s64 %rd2, %rd2, %rd3;
 ld.global.u32 %r6, [%rd2];
 add.s32 %r6, %r6, 1;
 st.global.u32 [%rd2], %r6;
DONE:
 ret;
}
"#;

struct Gpu {
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    bump: sys::CUfunction,
}

fn gpu(ordinal: i32) -> R<Gpu> {
    let mut dev = 0;
    ck!(sys::cuDeviceGet(&mut dev, ordinal));
    let mut ctx = ptr::null_mut();
    ck!(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev));
    ck!(sys::cuCtxSetCurrent(ctx));
    let mut stream = ptr::null_mut();
    ck!(sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32));
    let ptx = CString::new(PTX).unwrap();
    let mut module = ptr::null_mut();
    ck!(sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast()));
    let mut bump = ptr::null_mut();
    ck!(sys::cuModuleGetFunction(&mut bump, module, c"bump".as_ptr()));
    Ok(Gpu { ctx, stream, bump })
}

fn alloc(g: &Gpu, words: usize) -> R<u64> {
    ck!(sys::cuCtxSetCurrent(g.ctx));
    let mut p = 0;
    ck!(sys::cuMemAlloc_v2(&mut p, words * 4));
    ck!(sys::cuMemsetD32_v2(p, 0, words));
    Ok(p)
}

type Node = sys::CUgraphNode;

fn add_bumps(graph: sys::CUgraph, g: &Gpu, after: &[Node], p: u64, n: u32, count: usize) -> R<Node> {
    let mut prev: Vec<Node> = after.to_vec();
    let mut node = ptr::null_mut();
    for _ in 0..count {
        let mut ptr_arg = p;
        let mut n_arg = n;
        let mut args = [(&mut ptr_arg as *mut u64).cast::<c_void>(), (&mut n_arg as *mut u32).cast::<c_void>()];
        let params = sys::CUDA_KERNEL_NODE_PARAMS_v2 {
            func: g.bump,
            gridDimX: n.div_ceil(256),
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 256,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: args.as_mut_ptr(),
            extra: ptr::null_mut(),
            kern: ptr::null_mut(),
            ctx: g.ctx,
        };
        ck!(sys::cuGraphAddKernelNode_v2(&mut node, graph, prev.as_ptr(), prev.len(), &params));
        prev = vec![node];
    }
    Ok(node)
}

fn add_copy(graph: sys::CUgraph, after: &[Node], dst: u64, src: u64, bytes: usize, ctx: sys::CUcontext) -> R<Node> {
    let copy = sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: ptr::null(),
        srcDevice: src,
        srcArray: ptr::null_mut(),
        reserved0: ptr::null_mut(),
        srcPitch: bytes,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: ptr::null_mut(),
        dstDevice: dst,
        dstArray: ptr::null_mut(),
        reserved1: ptr::null_mut(),
        dstPitch: bytes,
        dstHeight: 1,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    };
    let mut node = ptr::null_mut();
    ck!(sys::cuGraphAddMemcpyNode(&mut node, graph, after.as_ptr(), after.len(), &copy, ctx));
    Ok(node)
}

fn mem_op(
    graph: sys::CUgraph,
    after: &[Node],
    ctx: sys::CUcontext,
    ops: &mut [sys::CUstreamBatchMemOpParams],
) -> R<Node> {
    let params = sys::CUDA_BATCH_MEM_OP_NODE_PARAMS_v1_st {
        ctx,
        count: ops.len() as u32,
        paramArray: ops.as_mut_ptr(),
        flags: 0,
    };
    let mut node = ptr::null_mut();
    ck!(sys::cuGraphAddBatchMemOpNode(&mut node, graph, after.as_ptr(), after.len(), &params));
    Ok(node)
}

fn write_op(address: u64, value: u32) -> sys::CUstreamBatchMemOpParams {
    let mut op = sys::CUstreamBatchMemOpParams { pad: [0; 6] };
    op.writeValue.operation = sys::CUstreamBatchMemOpType::CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op.writeValue.address = address;
    op.writeValue.__bindgen_anon_1.value = value;
    op.writeValue.flags = sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32;
    op
}

fn wait_op(address: u64, value: u32) -> sys::CUstreamBatchMemOpParams {
    let mut op = sys::CUstreamBatchMemOpParams { pad: [0; 6] };
    op.waitValue.operation = sys::CUstreamBatchMemOpType::CU_STREAM_MEM_OP_WAIT_VALUE_32;
    op.waitValue.address = address;
    op.waitValue.__bindgen_anon_1.value = value;
    op.waitValue.flags = sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_EQ as u32;
    op
}

fn instantiate(graph: sys::CUgraph) -> R<sys::CUgraphExec> {
    let mut exec = ptr::null_mut();
    ck!(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0));
    Ok(exec)
}

fn new_graph() -> R<sys::CUgraph> {
    let mut graph = ptr::null_mut();
    ck!(sys::cuGraphCreate(&mut graph, 0));
    Ok(graph)
}

fn read_word(g: &Gpu, p: u64) -> R<u32> {
    ck!(sys::cuCtxSetCurrent(g.ctx));
    let mut v = 0u32;
    ck!(sys::cuMemcpyDtoH_v2((&mut v as *mut u32).cast(), p, 4));
    Ok(v)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// A way of launching one execution; returns its host time in µs.
type Launch<'a> = Box<dyn FnMut() -> R<f64> + 'a>;

struct Way<'a> {
    name: &'static str,
    launch: Launch<'a>,
    wait: Box<dyn Fn() -> R<()> + 'a>,
    /// The words that must read 5k + 5 after k executions: (gpu, address).
    check: Vec<(usize, u64)>,
}

fn measure(way: &mut Way<'_>, gpus: &[Gpu], n: usize) -> R<String> {
    let mut exact = 0;
    let checks = 20;
    for k in 1..=checks {
        (way.launch)()?;
        (way.wait)()?;
        let due = 5 * k as u32 + 5;
        let mut ok = true;
        for (g, p) in &way.check {
            ok &= read_word(&gpus[*g], *p)? == due;
        }
        exact += usize::from(ok);
    }
    let mut host = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        host.push((way.launch)()?);
        (way.wait)()?;
        wall.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let start = Instant::now();
    let burst = 200;
    for _ in 0..burst {
        (way.launch)()?;
    }
    (way.wait)()?;
    let per = start.elapsed().as_secs_f64() * 1e6 / burst as f64;
    Ok(format!("| {n} | {} | {:.1} | {:.1} | {:.1} | {exact}/{checks} |", way.name, median(host), median(wall), per))
}

fn run(gpus: &[Gpu], n: usize) -> R<Vec<String>> {
    let half = n / 2;
    let (g0, g1) = (&gpus[0], &gpus[1]);
    let mut rows = Vec::new();

    let two = || -> R<[u64; 4]> { Ok([alloc(g0, half)?, alloc(g1, half)?, alloc(g0, half)?, alloc(g1, half)?]) };

    // one: everything on GPU 0 (its "GPU 1" half too); joint: one graph
    // over both GPUs. Each copy runs on its destination's GPU.
    for (name, second) in [("one GPU", g0), ("one graph over two GPUs", g1)] {
        let [mid_a, mid_b, recv_a, recv_b] = if second.ctx == g0.ctx {
            [alloc(g0, half)?, alloc(g0, half)?, alloc(g0, half)?, alloc(g0, half)?]
        } else {
            two()?
        };
        ck!(sys::cuCtxSetCurrent(g0.ctx));
        let graph = new_graph()?;
        let s1a = add_bumps(graph, g0, &[], mid_a, half as u32, 5)?;
        let s1b = add_bumps(graph, second, &[], mid_b, half as u32, 5)?;
        let ca = add_copy(graph, &[s1a], recv_b, mid_a, half * 4, second.ctx)?;
        let cb = add_copy(graph, &[s1b], recv_a, mid_b, half * 4, g0.ctx)?;
        add_bumps(graph, g0, &[cb], recv_a, half as u32, 5)?;
        add_bumps(graph, second, &[ca], recv_b, half as u32, 5)?;
        let exec = instantiate(graph)?;
        let second_index = usize::from(second.ctx != g0.ctx);
        let mut way = Way {
            name,
            launch: Box::new(move || {
                let start = Instant::now();
                ck!(sys::cuGraphLaunch(exec, g0.stream));
                Ok(start.elapsed().as_secs_f64() * 1e6)
            }),
            wait: Box::new(move || {
                ck!(sys::cuStreamSynchronize(g0.stream));
                Ok(())
            }),
            check: vec![(0, recv_a), (second_index, recv_b + (half as u64 - 1) * 4)],
        };
        rows.push(measure(&mut way, gpus, n)?);
    }

    // events: a graph per GPU, event record and wait nodes between them.
    {
        let [mid_a, mid_b, recv_a, recv_b] = two()?;
        let mut ev = [ptr::null_mut(); 3];
        ck!(sys::cuCtxSetCurrent(g0.ctx));
        ck!(sys::cuEventCreate(&mut ev[0], sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32));
        ck!(sys::cuEventCreate(&mut ev[2], sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32));
        ck!(sys::cuCtxSetCurrent(g1.ctx));
        ck!(sys::cuEventCreate(&mut ev[1], sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32));
        let (e_a, e_b, end) = (ev[0], ev[1], ev[2]);
        // GPU 0: stage 1, record e_a; wait e_b, copy mid_b -> recv_a, stage 2.
        let ga = new_graph()?;
        let s1a = add_bumps(ga, g0, &[], mid_a, half as u32, 5)?;
        let mut ra = ptr::null_mut();
        ck!(sys::cuGraphAddEventRecordNode(&mut ra, ga, &s1a, 1, e_a));
        let mut wb = ptr::null_mut();
        ck!(sys::cuGraphAddEventWaitNode(&mut wb, ga, ptr::null(), 0, e_b));
        let cb = add_copy(ga, &[wb], recv_a, mid_b, half * 4, g0.ctx)?;
        add_bumps(ga, g0, &[cb], recv_a, half as u32, 5)?;
        let gb = new_graph()?;
        let s1b = add_bumps(gb, g1, &[], mid_b, half as u32, 5)?;
        let mut rb = ptr::null_mut();
        ck!(sys::cuGraphAddEventRecordNode(&mut rb, gb, &s1b, 1, e_b));
        let mut wa = ptr::null_mut();
        ck!(sys::cuGraphAddEventWaitNode(&mut wa, gb, ptr::null(), 0, e_a));
        let ca = add_copy(gb, &[wa], recv_b, mid_a, half * 4, g1.ctx)?;
        add_bumps(gb, g1, &[ca], recv_b, half as u32, 5)?;
        ck!(sys::cuCtxSetCurrent(g0.ctx));
        let (xa, xb) = (instantiate(ga)?, instantiate(gb)?);
        let mut way = Way {
            name: "a graph per GPU, event nodes",
            launch: Box::new(move || {
                let start = Instant::now();
                ck!(sys::cuStreamWaitEvent(g1.stream, end, 0));
                ck!(sys::cuGraphLaunch(xa, g0.stream));
                ck!(sys::cuGraphLaunch(xb, g1.stream));
                ck!(sys::cuStreamWaitEvent(g0.stream, e_b, 0));
                ck!(sys::cuEventRecord(end, g0.stream));
                Ok(start.elapsed().as_secs_f64() * 1e6)
            }),
            wait: Box::new(move || {
                ck!(sys::cuEventSynchronize(end));
                ck!(sys::cuStreamSynchronize(g1.stream));
                Ok(())
            }),
            check: vec![(0, recv_a), (1, recv_b + (half as u64 - 1) * 4)],
        };
        rows.push(measure(&mut way, gpus, n)?);
    }

    // flags: a graph per GPU, cross edges as flags in the consumer's memory.
    {
        let [mid_a, mid_b, recv_a, recv_b] = two()?;
        let flag_a = alloc(g0, 2)?; // written by GPU 1: [mid_b ready, GPU 1 done]
        let flag_b = alloc(g1, 1)?; // written by GPU 0: mid_a ready
        let mut end = ptr::null_mut();
        ck!(sys::cuCtxSetCurrent(g0.ctx));
        ck!(sys::cuEventCreate(&mut end, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32));
        let ga = new_graph()?;
        let s1a = add_bumps(ga, g0, &[], mid_a, half as u32, 5)?;
        mem_op(ga, &[s1a], g0.ctx, &mut [write_op(flag_b, 1)])?;
        let wb = mem_op(ga, &[], g0.ctx, &mut [wait_op(flag_a, 1), write_op(flag_a, 0)])?;
        let cb = add_copy(ga, &[wb], recv_a, mid_b, half * 4, g0.ctx)?;
        let s2a = add_bumps(ga, g0, &[cb], recv_a, half as u32, 5)?;
        mem_op(ga, &[s2a], g0.ctx, &mut [wait_op(flag_a + 4, 1), write_op(flag_a + 4, 0)])?;
        let gb = new_graph()?;
        let s1b = add_bumps(gb, g1, &[], mid_b, half as u32, 5)?;
        mem_op(gb, &[s1b], g1.ctx, &mut [write_op(flag_a, 1)])?;
        let wa = mem_op(gb, &[], g1.ctx, &mut [wait_op(flag_b, 1), write_op(flag_b, 0)])?;
        let ca = add_copy(gb, &[wa], recv_b, mid_a, half * 4, g1.ctx)?;
        let s2b = add_bumps(gb, g1, &[ca], recv_b, half as u32, 5)?;
        mem_op(gb, &[s2b], g1.ctx, &mut [write_op(flag_a + 4, 1)])?;
        let (xa, xb) = (instantiate(ga)?, instantiate(gb)?);
        let mut way = Way {
            name: "a graph per GPU, flags",
            launch: Box::new(move || {
                let start = Instant::now();
                ck!(sys::cuStreamWaitEvent(g1.stream, end, 0));
                ck!(sys::cuGraphLaunch(xb, g1.stream));
                ck!(sys::cuGraphLaunch(xa, g0.stream));
                ck!(sys::cuEventRecord(end, g0.stream));
                Ok(start.elapsed().as_secs_f64() * 1e6)
            }),
            wait: Box::new(move || {
                ck!(sys::cuEventSynchronize(end));
                Ok(())
            }),
            check: vec![(0, recv_a), (1, recv_b + (half as u64 - 1) * 4)],
        };
        rows.push(measure(&mut way, gpus, n)?);
    }
    Ok(rows)
}

fn main() -> R<()> {
    // SAFETY: probing the library has no precondition.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver".into());
    }
    ck!(sys::cuInit(0));
    let mut count = 0;
    ck!(sys::cuDeviceGetCount(&mut count));
    if count < 2 {
        return Err(format!("needs two CUDA GPUs, found {count}"));
    }
    for ordinal in 0..2 {
        let (mut dev, mut major) = (0, 0);
        ck!(sys::cuDeviceGet(&mut dev, ordinal));
        ck!(sys::cuDeviceGetAttribute(
            &mut major,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            dev
        ));
        if major < 9 {
            return Err(format!("GPU {ordinal} is below compute capability 9.0, which the probe's PTX targets"));
        }
    }
    let gpus = [gpu(0)?, gpu(1)?];
    for (a, b) in [(0, 1), (1, 0)] {
        ck!(sys::cuCtxSetCurrent(gpus[a].ctx));
        // SAFETY: both primary contexts are retained for the process's life.
        let status = unsafe { sys::cuCtxEnablePeerAccess(gpus[b].ctx, 0) };
        if status != sys::CUresult::CUDA_SUCCESS && status != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            return Err(format!("peer access {a} -> {b}: {status:?}"));
        }
    }
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![65_536, 1_048_576, 16_777_216] } else { sizes };
    println!(
        "| elements | way | host µs (median) | wall µs per execution, waited (median) | µs per execution, 200 back to back | exact |"
    );
    println!("|---:|---|---:|---:|---:|---:|");
    for n in sizes {
        for row in run(&gpus, n)? {
            println!("{row}");
        }
    }
    Ok(())
}
