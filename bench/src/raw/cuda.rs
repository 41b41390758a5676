//! The CUDA baseline: a CUDA graph of kernel nodes, built and launched with
//! the driver API through cudarc's `sys` bindings.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use cudarc::driver::sys;

use super::RawGraph;

/// A kernel that does nothing, with no parameters; the driver JIT-compiles it.
const EMPTY_PTX: &CStr = c".version 6.0
.target sm_70
.address_size 64
.visible .entry empty()
{
    ret;
}
";

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
                    graph: None,
                };
                check(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
                let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
                check(sys::cuStreamCreate(&mut graph.stream, flags), "cuStreamCreate")?;
                check(sys::cuModuleLoadData(&mut graph.module, EMPTY_PTX.as_ptr().cast()), "cuModuleLoadData")?;
                check(
                    sys::cuModuleGetFunction(&mut graph.function, graph.module, c"empty".as_ptr()),
                    "cuModuleGetFunction",
                )?;
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

impl RawGraph for CudaGraph {
    fn mechanism(&self) -> String {
        "CUDA graph of kernel nodes, cuGraphLaunch".into()
    }

    fn build(&mut self, preds: &[Vec<usize>]) -> Result<(), String> {
        self.current()?;
        self.wait()?;
        self.destroy_graph();
        let params = sys::CUDA_KERNEL_NODE_PARAMS {
            func: self.function,
            gridDimX: 1,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 1,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: ptr::null_mut(),
            extra: ptr::null_mut(),
            kern: ptr::null_mut(),
            ctx: ptr::null_mut(),
        };
        let mut graph = ptr::null_mut();
        // SAFETY: out-pointers are valid; dependencies are nodes of `graph`
        // made earlier in this loop (`preds` is in topological order).
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
        // SAFETY: `exec` is a live executable graph of this context.
        check(unsafe { sys::cuGraphLaunch(exec, self.stream) }, "cuGraphLaunch")
    }

    fn wait(&mut self) -> Result<(), String> {
        // SAFETY: the stream lives until drop.
        check(unsafe { sys::cuStreamSynchronize(self.stream) }, "cuStreamSynchronize")
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let _ = self.current();
        let _ = self.wait();
        self.destroy_graph();
        // SAFETY: the handles were made in `open` and nothing uses them now.
        unsafe {
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
