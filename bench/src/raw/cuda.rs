//! The CUDA baseline: a CUDA graph of kernel nodes, built and launched with
//! the driver API through cudarc's `sys` bindings.
//!
//! It is compared like with like against a replay: its kernel has the
//! parameter block of the adapter's `empty` (the 32-byte `ur_launch` of the
//! CUDA kernel ABI, docs/cuda.md) on one thread, and each launch records an
//! event that the wait synchronizes on, as a replay's returned event does,
//! instead of synchronizing the whole stream.

use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::time::{Duration, Instant};

use cmdbuf_cuda::lanes::Lanes;
use cudarc::driver::sys;

use super::RawGraph;

/// The module of the baseline's kernels, in PTX for the device's own
/// architecture (the adapter's NVRTC compiles for `compute_XY` of the
/// device); the driver JIT-compiles it:
/// - `empty` does nothing, taking a `ur_launch` (three u64 offsets and a
///   status pointer) as the adapter's `empty` does;
/// - `axpb` sets `p[i] = a * p[i] + b` at its global index `i`, taking
///   the pointer and the two u32 values alone, as a kernel written for
///   CUDA takes them.
fn module_ptx(major: i32, minor: i32) -> CString {
    // The lowest PTX ISA that knows the target (PTX ISA notes, "Release History").
    let (isa, target) = match (major, minor) {
        (12.., _) => ("8.7", format!("sm_{major}{minor}")),
        (10.., _) => ("8.6", format!("sm_{major}{minor}")),
        (9.., _) | (8, 9..) => ("7.8", format!("sm_{major}{minor}")),
        (8, 7..) => ("7.4", format!("sm_{major}{minor}")),
        (8, 6) => ("7.1", "sm_86".into()),
        (8, _) => ("7.0", "sm_80".into()),
        (7, 5..) => ("6.3", "sm_75".into()),
        _ => ("6.0", "sm_70".into()),
    };
    let text = format!(
        ".version {isa}\n.target {target}\n.address_size 64\n\
         .visible .entry empty(.param .align 8 .b8 launch[32])\n{{\n    ret;\n}}\n\
         .visible .entry axpb(.param .u64 p, .param .u32 a, .param .u32 b)\n{{\n\
         .reg .u32 %r<8>;\n.reg .u64 %rd<5>;\n\
         ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [a];\nld.param.u32 %r2, [b];\n\
         mov.u32 %r3, %tid.x;\nmov.u32 %r4, %ctaid.x;\nmov.u32 %r5, %ntid.x;\nmad.lo.u32 %r6, %r4, %r5, %r3;\n\
         cvta.to.global.u64 %rd2, %rd1;\nmul.wide.u32 %rd3, %r6, 4;\nadd.u64 %rd4, %rd2, %rd3;\n\
         ld.global.u32 %r7, [%rd4];\nmad.lo.u32 %r7, %r7, %r1, %r2;\nst.global.u32 [%rd4], %r7;\nret;\n}}\n"
    );
    CString::new(text).expect("no NUL in the PTX")
}

/// Work-items of each `axpb` launch, one block (the bench's `AXPB_ITEMS`).
const AXPB_ITEMS: u32 = super::AXPB_ITEMS as u32;

/// The bytes of the kernel's `ur_launch` parameter: no offset, no status word.
const LAUNCH_BYTES: usize = 32;

/// Turns a driver status into the error text of `what`.
fn check(status: sys::CUresult, what: &str) -> Result<(), String> {
    if status == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(format!("{what}: {status:?}")) }
}

/// The primary context of the device, a stream and the empty kernel, with
/// the graph built last.
pub struct CudaGraph {
    device: sys::CUdevice,
    context: sys::CUcontext,
    stream: sys::CUstream,
    module: sys::CUmodule,
    function: sys::CUfunction,
    /// `axpb` and the `AXPB_ITEMS` u32 values it updates.
    axpb: sys::CUfunction,
    axpb_data: sys::CUdeviceptr,
    /// Recorded after each launch; what `wait` synchronizes on.
    done: sys::CUevent,
    /// The kernels' parameter block, read when nodes are added.
    launch: [u64; LAUNCH_BYTES / 8],
    /// One event per eagerly launched kernel, made once and recorded again
    /// at each eager submission.
    eager_events: Vec<sys::CUevent>,
    graph: Option<(sys::CUgraph, sys::CUgraphExec)>,
}

impl CudaGraph {
    /// Opens the first CUDA device named `name`.
    pub fn open(name: &str) -> Result<CudaGraph, String> {
        // cudarc panics when libcuda or one of its symbols is missing; the
        // adapter found a device, so this only guards against surprises.
        catch_unwind(AssertUnwindSafe(|| Self::open_unguarded(name)))
            .unwrap_or_else(|_| Err("the CUDA driver lacks an entry point the baseline uses".into()))
    }

    fn open_unguarded(name: &str) -> Result<CudaGraph, String> {
        // SAFETY: probing the library has no precondition.
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver".into());
        }
        // SAFETY: every call below gets valid out-pointers and handles made
        // by the calls before it.
        unsafe {
            check(sys::cuInit(0), "cuInit")?;
            let mut count = 0;
            check(sys::cuDeviceGetCount(&mut count), "cuDeviceGetCount")?;
            for ordinal in 0..count {
                let mut device = 0;
                check(sys::cuDeviceGet(&mut device, ordinal), "cuDeviceGet")?;
                let mut raw = [0 as c_char; 256];
                check(sys::cuDeviceGetName(raw.as_mut_ptr(), raw.len() as i32, device), "cuDeviceGetName")?;
                if CStr::from_ptr(raw.as_ptr()).to_string_lossy() != name {
                    continue;
                }
                let mut context = ptr::null_mut();
                check(sys::cuDevicePrimaryCtxRetain(&mut context, device), "cuDevicePrimaryCtxRetain")?;
                let mut graph = CudaGraph {
                    device,
                    context,
                    stream: ptr::null_mut(),
                    module: ptr::null_mut(),
                    function: ptr::null_mut(),
                    axpb: ptr::null_mut(),
                    axpb_data: 0,
                    done: ptr::null_mut(),
                    launch: [0; LAUNCH_BYTES / 8],
                    eager_events: Vec::new(),
                    graph: None,
                };
                check(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
                let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
                check(sys::cuStreamCreate(&mut graph.stream, flags), "cuStreamCreate")?;
                let timing = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
                check(sys::cuEventCreate(&mut graph.done, timing), "cuEventCreate")?;
                let attribute = |a| {
                    let mut value = 0;
                    check(sys::cuDeviceGetAttribute(&mut value, a, device), "cuDeviceGetAttribute").map(|()| value)
                };
                use sys::CUdevice_attribute::{
                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as MAJOR,
                    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as MINOR,
                };
                let ptx = module_ptx(attribute(MAJOR)?, attribute(MINOR)?);
                check(sys::cuModuleLoadData(&mut graph.module, ptx.as_ptr().cast()), "cuModuleLoadData")?;
                check(
                    sys::cuModuleGetFunction(&mut graph.function, graph.module, c"empty".as_ptr()),
                    "cuModuleGetFunction",
                )?;
                check(
                    sys::cuModuleGetFunction(&mut graph.axpb, graph.module, c"axpb".as_ptr()),
                    "cuModuleGetFunction",
                )?;
                check(sys::cuMemAlloc_v2(&mut graph.axpb_data, AXPB_ITEMS as usize * 4), "cuMemAlloc")?;
                return Ok(graph);
            }
        }
        Err(format!("no CUDA device is named {name}"))
    }

    fn current(&self) -> Result<(), String> {
        // SAFETY: the context is retained until drop.
        check(unsafe { sys::cuCtxSetCurrent(self.context) }, "cuCtxSetCurrent")
    }

    fn destroy_graph(&mut self) {
        if let Some((graph, exec)) = self.graph.take() {
            // SAFETY: both were made by `build` and are not in use: `wait`
            // ran before any rebuild or drop.
            unsafe {
                sys::cuGraphExecDestroy(exec);
                sys::cuGraphDestroy(graph);
            }
        }
    }
}

/// The costs of one raw build, for the `cuda_build` group.
pub struct BuildCost {
    /// Adding the nodes with their dependencies (and any relays and joins).
    pub add: Duration,
    /// `cuGraphInstantiateWithFlags`.
    pub instantiate: Duration,
    /// The first launch to completion (uploads included).
    pub first_launch: Duration,
    /// A later launch to completion.
    pub launch: Duration,
}

/// How a raw build gives each node its dependencies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Deps {
    /// As given.
    Direct,
    /// As given, plus the lane edges of the CUDA adapter's planner
    /// (`cmdbuf_cuda::lanes`: at most that many branches side by side),
    /// no edge dropped.
    Lanes(usize),
    /// What the CUDA adapter gives a graph: lane edges, and once the graph
    /// had one, no edge that another dependency of the node implies.
    LanesPruned(usize),
}

impl CudaGraph {
    /// Builds the graph of `preds` (replacing the current one) with the
    /// dependencies `how` says, and times each step and two launches.
    pub fn build_timed(&mut self, preds: &[Vec<usize>], how: Deps) -> Result<BuildCost, String> {
        self.current()?;
        self.wait()?;
        self.destroy_graph();
        let mut args: [*mut c_void; 1] = [self.launch.as_mut_ptr().cast()];
        let params = self.kernel_params(args.as_mut_ptr());
        let start = Instant::now();
        let mut graph = ptr::null_mut();
        // SAFETY: out-pointer valid; flags 0.
        check(unsafe { sys::cuGraphCreate(&mut graph, 0) }, "cuGraphCreate")?;
        let mut nodes: Vec<sys::CUgraphNode> = Vec::with_capacity(preds.len());
        let mut lanes = match how {
            Deps::Direct => None,
            Deps::Lanes(lanes) | Deps::LanesPruned(lanes) => Some(Lanes::new(lanes)),
        };
        let pruned = matches!(how, Deps::LanesPruned(_));
        let added = (|| {
            let mut declared = Vec::new();
            for p in preds {
                let deps: Vec<sys::CUgraphNode> = match lanes.as_mut() {
                    Some(lanes) => {
                        declared.clear();
                        declared.extend(p.iter().map(|&d| d as u32));
                        let plan = lanes.plan(&declared);
                        lanes.commit(&declared, &plan);
                        if pruned {
                            plan.edges.iter().map(|&d| nodes[d as usize]).collect()
                        } else {
                            p.iter().copied().chain(plan.lane.map(|l| l as usize)).map(|d| nodes[d]).collect()
                        }
                    }
                    None => p.iter().map(|&d| nodes[d]).collect(),
                };
                let mut node = ptr::null_mut();
                // SAFETY: `deps` are nodes of `graph`; the parameters outlive the call, which copies them.
                let status =
                    unsafe { sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &params) };
                check(status, "cuGraphAddKernelNode")?;
                nodes.push(node);
            }
            Ok::<_, String>(())
        })();
        if let Err(e) = added {
            // SAFETY: the graph is not instantiated or used elsewhere.
            unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        let add = start.elapsed();
        // SAFETY: the graph is complete, of the current context.
        unsafe { cmdbuf_cuda::write_graph_dot(graph, "raw") };
        let mut exec = ptr::null_mut();
        // SAFETY: the graph is complete.
        if let Err(e) = check(unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }, "cuGraphInstantiate") {
            // SAFETY: as above.
            unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        let instantiate = start.elapsed() - add;
        self.graph = Some((graph, exec));
        let mut run = || {
            let start = Instant::now();
            self.launch()?;
            self.wait()?;
            Ok::<_, String>(start.elapsed())
        };
        let first_launch = run()?;
        let launch = run()?;
        Ok(BuildCost { add, instantiate, first_launch, launch })
    }

    /// Kernel node parameters of the empty kernel with `args` as its parameters.
    fn kernel_params(&self, args: *mut *mut c_void) -> sys::CUDA_KERNEL_NODE_PARAMS {
        sys::CUDA_KERNEL_NODE_PARAMS {
            func: self.function,
            gridDimX: 1,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 1,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: args,
            extra: ptr::null_mut(),
            kern: ptr::null_mut(),
            ctx: ptr::null_mut(),
        }
    }

    /// Host time of `cuGraphLaunch` (median ns of `iterations`, waiting
    /// after each) of a raw chain of `n` nodes: kernel nodes of the empty
    /// kernel, and memory nodes as a SYCL graph of USM `fill` and `memcpy`
    /// makes (a 32-bit memset and a device-to-device copy of 1 KiB in turn).
    /// Whether the driver's launch of memory nodes grows with their count
    /// is what separates its cost from the adapter's in a replay of such a
    /// graph.
    pub fn launch_costs(&mut self, n: usize, iterations: usize) -> Result<[f64; 2], String> {
        const BYTES: usize = 1024;
        self.current()?;
        self.wait()?;
        let kernels = {
            let preds: Vec<Vec<usize>> = (0..n).map(|i| i.checked_sub(1).into_iter().collect()).collect();
            self.build(&preds)?;
            let (_, exec) = self.graph.ok_or("no graph was built")?;
            self.median_launch(exec, iterations)?
        };
        let (mut a, mut b) = (0, 0);
        // SAFETY: valid out-pointers; the context is current.
        unsafe {
            check(sys::cuMemAlloc_v2(&mut a, BYTES), "cuMemAlloc")?;
            if let Err(e) = check(sys::cuMemAlloc_v2(&mut b, BYTES), "cuMemAlloc") {
                sys::cuMemFree_v2(a);
                return Err(e);
            }
        }
        let memory = self.memory_chain(n, a, b, BYTES).and_then(|(graph, exec)| {
            let cost = self.median_launch(exec, iterations);
            // SAFETY: made by `memory_chain`, waited for by `median_launch`.
            unsafe {
                sys::cuGraphExecDestroy(exec);
                sys::cuGraphDestroy(graph);
            }
            cost
        });
        // SAFETY: the allocations above; no launch uses them any more.
        unsafe {
            sys::cuMemFree_v2(a);
            sys::cuMemFree_v2(b);
        }
        Ok([kernels, memory?])
    }

    /// A graph of `n` memory nodes in a chain over the device allocations
    /// `a` and `b` of `bytes` each, instantiated.
    fn memory_chain(
        &self,
        n: usize,
        a: sys::CUdeviceptr,
        b: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<(sys::CUgraph, sys::CUgraphExec), String> {
        let mut graph = ptr::null_mut();
        // SAFETY: a valid out-pointer.
        check(unsafe { sys::cuGraphCreate(&mut graph, 0) }, "cuGraphCreate")?;
        // Every field named: the memory types are enums, for which all-zero
        // bytes are no valid value.
        let copy = sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: ptr::null(),
            srcDevice: a,
            srcArray: ptr::null_mut(),
            reserved0: ptr::null_mut(),
            srcPitch: 0,
            srcHeight: 0,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: ptr::null_mut(),
            dstDevice: b,
            dstArray: ptr::null_mut(),
            reserved1: ptr::null_mut(),
            dstPitch: 0,
            dstHeight: 0,
            WidthInBytes: bytes,
            Height: 1,
            Depth: 1,
        };
        let set = sys::CUDA_MEMSET_NODE_PARAMS {
            dst: a,
            pitch: bytes,
            value: 7,
            elementSize: 4,
            width: bytes / 4,
            height: 1,
        };
        let mut last: Option<sys::CUgraphNode> = None;
        let added = (0..n).try_for_each(|i| {
            let deps: Vec<sys::CUgraphNode> = last.into_iter().collect();
            let mut node = ptr::null_mut();
            // SAFETY: the graph and the dependency are live; the parameters
            // name the two allocations, inside their bounds.
            let status = unsafe {
                if i % 2 == 0 {
                    sys::cuGraphAddMemsetNode(&mut node, graph, deps.as_ptr(), deps.len(), &set, self.context)
                } else {
                    sys::cuGraphAddMemcpyNode(&mut node, graph, deps.as_ptr(), deps.len(), &copy, self.context)
                }
            };
            last = Some(node);
            check(status, "cuGraphAdd{Memset,Memcpy}Node")
        });
        let mut exec = ptr::null_mut();
        let made = added.and_then(|()| {
            // SAFETY: the graph is complete.
            let status = unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
            check(status, "cuGraphInstantiate")
        });
        if let Err(e) = made {
            // SAFETY: made above, never launched.
            unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok((graph, exec))
    }

    /// Median host ns of `cuGraphLaunch` of `exec`, synchronizing after each.
    fn median_launch(&self, exec: sys::CUgraphExec, iterations: usize) -> Result<f64, String> {
        let mut costs = Vec::with_capacity(iterations);
        for _ in 0..iterations.max(1) {
            // SAFETY: a live executable graph of this context; the stream
            // and the event live until drop.
            unsafe {
                let start = Instant::now();
                check(sys::cuGraphLaunch(exec, self.stream), "cuGraphLaunch")?;
                costs.push(start.elapsed().as_nanos() as f64);
                check(sys::cuEventRecord(self.done, self.stream), "cuEventRecord")?;
                check(sys::cuEventSynchronize(self.done), "cuEventSynchronize")?;
            }
        }
        costs.sort_by(f64::total_cmp);
        Ok(costs[costs.len() / 2])
    }

    /// Host time of one call of each driver entry point a replay makes,
    /// in ns (median of `iterations` calls), on a built one-node graph:
    /// `cuGraphLaunch` + `cuEventRecord` (waiting after each), `cuEventQuery`
    /// of a complete event, `cuCtxGetCurrent`, `cuCtxSetCurrent`.
    pub fn call_costs(&mut self, iterations: usize) -> Result<Vec<(&'static str, f64)>, String> {
        self.build(&[vec![]])?;
        let (_, exec) = self.graph.ok_or("no graph was built")?;
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (mut launch, mut record, mut query, mut get, mut set) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..iterations {
            // SAFETY: live handles of this context, made in `open` and `build`.
            unsafe {
                let t0 = Instant::now();
                check(sys::cuGraphLaunch(exec, self.stream), "cuGraphLaunch")?;
                let t1 = Instant::now();
                check(sys::cuEventRecord(self.done, self.stream), "cuEventRecord")?;
                let t2 = Instant::now();
                check(sys::cuEventSynchronize(self.done), "cuEventSynchronize")?;
                let t3 = Instant::now();
                let _ = sys::cuEventQuery(self.done);
                let t4 = Instant::now();
                let mut ctx = ptr::null_mut();
                check(sys::cuCtxGetCurrent(&mut ctx), "cuCtxGetCurrent")?;
                let t5 = Instant::now();
                check(sys::cuCtxSetCurrent(self.context), "cuCtxSetCurrent")?;
                let t6 = Instant::now();
                launch.push((t1 - t0).as_nanos() as f64);
                record.push((t2 - t1).as_nanos() as f64);
                query.push((t4 - t3).as_nanos() as f64);
                get.push((t5 - t4).as_nanos() as f64);
                set.push((t6 - t5).as_nanos() as f64);
            }
        }
        Ok(vec![
            ("cuGraphLaunch (1 kernel node)", median(launch)),
            ("cuEventRecord", median(record)),
            ("cuEventQuery (complete)", median(query)),
            ("cuCtxGetCurrent", median(get)),
            ("cuCtxSetCurrent", median(set)),
        ])
    }
}

impl RawGraph for CudaGraph {
    fn mechanism(&self) -> String {
        "CUDA graph of kernel nodes, cuGraphLaunch + cuEventRecord, cuEventSynchronize".into()
    }

    fn build(&mut self, preds: &[Vec<usize>]) -> Result<(), String> {
        self.current()?;
        self.wait()?;
        self.destroy_graph();
        let mut graph = ptr::null_mut();
        let mut args: [*mut c_void; 1] = [self.launch.as_mut_ptr().cast()];
        let params = self.kernel_params(args.as_mut_ptr());
        // SAFETY: out-pointers are valid; dependencies are nodes of `graph`
        // made earlier in this loop (`preds` is in topological order); the
        // parameter block outlives the calls, which copy it.
        unsafe {
            check(sys::cuGraphCreate(&mut graph, 0), "cuGraphCreate")?;
            let mut nodes: Vec<sys::CUgraphNode> = Vec::with_capacity(preds.len());
            for p in preds {
                let deps: Vec<sys::CUgraphNode> = p.iter().map(|&d| nodes[d]).collect();
                let mut node = ptr::null_mut();
                let status = sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &params);
                if let Err(e) = check(status, "cuGraphAddKernelNode") {
                    sys::cuGraphDestroy(graph);
                    return Err(e);
                }
                nodes.push(node);
            }
            cmdbuf_cuda::write_graph_dot(graph, "raw");
            let mut exec = ptr::null_mut();
            if let Err(e) = check(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "cuGraphInstantiate") {
                sys::cuGraphDestroy(graph);
                return Err(e);
            }
            self.graph = Some((graph, exec));
        }
        Ok(())
    }

    fn launch(&mut self) -> Result<(), String> {
        let (_, exec) = self.graph.ok_or("no graph was built")?;
        // SAFETY: `exec` is a live executable graph of this context; the
        // event and the stream live until drop.
        unsafe {
            check(sys::cuGraphLaunch(exec, self.stream), "cuGraphLaunch")?;
            check(sys::cuEventRecord(self.done, self.stream), "cuEventRecord")
        }
    }

    fn eager_variants(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("raw_eager", "cuLaunchKernel + cuEventRecord per kernel on one stream"),
            (
                "raw_eager_axpb",
                "the same with axpb over 256 work-items, its device pointer and two values as kernel parameters",
            ),
        ]
    }

    fn eager(&mut self, variant: usize, nodes: usize) -> Result<(), String> {
        self.current()?;
        let timing = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        // The last kernel's event is `done`, which `wait` synchronizes on.
        let own = nodes.saturating_sub(1);
        while self.eager_events.len() < own {
            let mut event = ptr::null_mut();
            // SAFETY: a valid out-pointer; the context is current.
            check(unsafe { sys::cuEventCreate(&mut event, timing) }, "cuEventCreate")?;
            self.eager_events.push(event);
        }
        let (mut a, mut b) = (1u32, 1u32);
        let mut empty_args: [*mut c_void; 1] = [self.launch.as_mut_ptr().cast()];
        let mut axpb_args: [*mut c_void; 3] =
            [(&raw mut self.axpb_data).cast(), (&raw mut a).cast(), (&raw mut b).cast()];
        let (function, items, args) = match variant {
            0 => (self.function, 1, empty_args.as_mut_ptr()),
            _ => (self.axpb, AXPB_ITEMS, axpb_args.as_mut_ptr()),
        };
        // SAFETY: the functions, stream, allocation and events are this
        // context's and live until drop; each function's parameters are the
        // ones its array points to (a `ur_launch` block; axpb's pointer, a
        // and b), which outlive the calls that copy them; axpb's one block
        // stays within its allocation; the events' earlier records were
        // waited for.
        unsafe {
            for &event in self.eager_events[..own].iter().chain([&self.done]).take(nodes) {
                check(
                    sys::cuLaunchKernel(function, 1, 1, 1, items, 1, 1, 0, self.stream, args, ptr::null_mut()),
                    "cuLaunchKernel",
                )?;
                check(sys::cuEventRecord(event, self.stream), "cuEventRecord")?;
            }
        }
        Ok(())
    }

    fn wait(&mut self) -> Result<(), String> {
        // An event never recorded is complete, so the first wait returns at once.
        // SAFETY: the event lives until drop.
        check(unsafe { sys::cuEventSynchronize(self.done) }, "cuEventSynchronize")
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let _ = self.current();
        let _ = self.wait();
        self.destroy_graph();
        // SAFETY: the handles were made in `open` and nothing uses them now.
        unsafe {
            if !self.done.is_null() {
                sys::cuEventDestroy_v2(self.done);
            }
            for &event in &self.eager_events {
                sys::cuEventDestroy_v2(event);
            }
            if self.axpb_data != 0 {
                sys::cuMemFree_v2(self.axpb_data);
            }
            if !self.module.is_null() {
                sys::cuModuleUnload(self.module);
            }
            if !self.stream.is_null() {
                sys::cuStreamDestroy_v2(self.stream);
            }
            sys::cuDevicePrimaryCtxRelease_v2(self.device);
        }
    }
}

/// The host time of one `cuGraphLaunch` of an executable graph made
/// elsewhere (a composed multi-device graph's, `composed_native_handle`) on
/// `stream` with `context` current, the launch synchronized after the
/// timing: how much of a submission is the driver's own launch.
///
/// # Safety
/// `context`, `exec` and `stream` are live handles of the CUDA driver (the
/// caller holds their owners), nothing else submits to them meanwhile, and
/// launching the graph again is sound (its memory is alive).
pub unsafe fn launch_foreign(context: u64, exec: u64, stream: u64) -> Result<Duration, String> {
    let (context, exec, stream) = (context as sys::CUcontext, exec as sys::CUgraphExec, stream as sys::CUstream);
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract: live handles, used by nobody else.
        unsafe {
            check(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
            let start = Instant::now();
            check(sys::cuGraphLaunch(exec, stream), "cuGraphLaunch")?;
            let took = start.elapsed();
            check(sys::cuStreamSynchronize(stream), "cuStreamSynchronize")?;
            Ok(took)
        }
    }))
    .unwrap_or_else(|_| Err("the CUDA driver lacks an entry point the baseline uses".into()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ptx_targets_the_device() {
        let ptx = super::module_ptx(9, 0).into_string().unwrap();
        assert!(ptx.starts_with(".version 7.8\n.target sm_90\n"), "{ptx}");
        assert!(ptx.contains(".entry empty(.param .align 8 .b8 launch[32])"), "{ptx}");
        assert!(ptx.contains(".entry axpb(.param .u64 p, .param .u32 a, .param .u32 b)"), "{ptx}");
        let old = super::module_ptx(6, 1).into_string().unwrap();
        assert!(old.starts_with(".version 6.0\n.target sm_70\n"), "{old}");
    }
}
