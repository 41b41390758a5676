//! Executable CUDA graphs, which command buffers, queues (a native command
//! held back on the host) and NCCL captures launch, and native commands'
//! work captured into a graph. Below all three, so that they need not name
//! each other for it.

use std::path::PathBuf;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cmdbuf_core::NativeCommand;
use cmdbuf_core::adapter::prelude::*;
use cudarc::driver::sys;

use crate::device::{DeviceShared, Release};
use crate::driver::cu;

/// A node of a graph.
pub(crate) type Node = sys::CUgraphNode;

/// A folder: every command buffer's CUDA graph is written there as a DOT
/// file when it is finalized (`cuGraphDebugDotPrint`, verbose: each node's
/// parameters), named `cmdbuf-<process>-<n>.dot`, `n` counting the graphs
/// written by the process from 1 (`cmdbuf-bench`'s raw graphs are `raw-`
/// files of the same count). For comparing what the adapter builds with a
/// graph made by hand; unset, nothing is written.
pub const GRAPH_DOT_ENV: &str = "UR_CUDA_GRAPH_DOT";

/// Writes `graph` as `<prefix>-<process>-<n>.dot` into the
/// [`GRAPH_DOT_ENV`] folder where it is set, and nothing where it is not; a
/// failure is logged at `warn`, not returned: the graph is unaffected. For
/// the adapter's command buffers (`cmdbuf`) and benchmarks' own graphs.
///
/// # Safety
/// `graph` is a live CUDA graph of the calling thread's current context.
#[doc(hidden)]
pub unsafe fn write_graph_dot(graph: sys::CUgraph, prefix: &str) {
    static FOLDER: OnceLock<Option<PathBuf>> = OnceLock::new();
    static WRITTEN: AtomicU64 = AtomicU64::new(0);
    let Some(folder) = FOLDER.get_or_init(|| std::env::var_os(GRAPH_DOT_ENV).map(PathBuf::from)) else { return };
    let n = WRITTEN.fetch_add(1, Ordering::Relaxed) + 1;
    let path = folder.join(format!("{prefix}-{}-{n}.dot", std::process::id()));
    let Ok(text) = std::ffi::CString::new(path.to_string_lossy().into_owned()) else {
        tracing::warn!(path = %path.display(), "{GRAPH_DOT_ENV}: a path with a NUL byte");
        return;
    };
    let verbose = sys::CUgraphDebugDot_flags::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE as u32;
    // SAFETY: a live graph of the current context (this function's
    // contract) and a NUL-terminated path, which the driver only reads.
    match unsafe { cu!(cuGraphDebugDotPrint(graph, text.as_ptr(), verbose)) } {
        Ok(()) => tracing::info!(path = %path.display(), "CUDA graph written"),
        Err(error) => tracing::warn!(path = %path.display(), %error, "cannot write the CUDA graph"),
    }
}

/// An executable graph, destroyed when the last holder (its buffer, or a
/// held launch of it) lets go; launches already issued finish first (driver
/// contract of `cuGraphExecDestroy`).
pub(crate) struct ExecGraph {
    dev: Arc<DeviceShared>,
    raw: sys::CUgraphExec,
}

// SAFETY: executable graph handles may be used from any thread; launches of
// one are serialised by the queues that hold it.
unsafe impl Send for ExecGraph {}
// SAFETY: as for Send.
unsafe impl Sync for ExecGraph {}

impl ExecGraph {
    pub(crate) fn new(dev: &Arc<DeviceShared>, raw: sys::CUgraphExec) -> Arc<ExecGraph> {
        Arc::new(ExecGraph { dev: dev.clone(), raw })
    }

    pub(crate) fn raw(&self) -> sys::CUgraphExec {
        self.raw
    }
}

impl Drop for ExecGraph {
    fn drop(&mut self) {
        self.dev.release(Release::GraphExec(self.raw));
    }
}

/// Captures a native command's work, done by its callback now, into `graph`
/// after `deps`; returns an empty node after the last nodes it captured
/// (after `deps` when it captured none).
pub(crate) fn capture_native(
    dev: &DeviceShared,
    graph: sys::CUgraph,
    native: &NativeCommand,
    deps: &[Node],
) -> Result<Node> {
    let stream = dev.take_stream()?;
    let raw = stream.raw();
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: the graph is alive, `deps` are nodes of it, and the stream
    // is not capturing (it was idle).
    unsafe { cu!(cuStreamBeginCaptureToGraph(raw, graph, deps.as_ptr(), ptr::null(), deps.len(), mode))? };
    // SAFETY: work enqueued on the stream is captured into the graph after
    // `deps`; the empty node below follows it.
    let result = unsafe { native.invoke(Backend::Cuda, NativeTarget::Queue(NativeHandle(raw as u64))) };
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let (mut id, mut captured_into, mut leaves, mut count) = (0u64, ptr::null_mut(), ptr::null(), 0usize);
    // SAFETY: out-parameters of the right types; the node array is the
    // driver's, copied before the capture ends.
    let info = unsafe {
        cu!(cuStreamGetCaptureInfo_v2(raw, &mut status, &mut id, &mut captured_into, &mut leaves, &mut count))
    };
    let last: Vec<Node> = if info.is_ok() && !leaves.is_null() {
        // SAFETY: the driver returned `count` nodes at `leaves`.
        unsafe { std::slice::from_raw_parts(leaves, count) }.to_vec()
    } else {
        Vec::new()
    };
    let mut captured: sys::CUgraph = ptr::null_mut();
    // SAFETY: the stream is capturing into this graph.
    let end = unsafe { cu!(cuStreamEndCapture(raw, &mut captured)) };
    dev.return_stream(stream);
    result?;
    info?;
    end?;
    let last = if last.is_empty() { deps } else { &last[..] };
    let mut node: Node = ptr::null_mut();
    // SAFETY: the graph is alive; `last` are nodes of it.
    unsafe { cu!(cuGraphAddEmptyNode(&mut node, graph, last.as_ptr(), last.len()))? };
    Ok(node)
}

/// A native command of a queue whose dependencies are held back on the host:
/// its callback runs now, its work is captured into a graph of its own, and
/// the command is that graph's launch once the dependencies allow.
pub(crate) fn native_graph(dev: &Arc<DeviceShared>, native: &NativeCommand) -> Result<Arc<ExecGraph>> {
    dev.bind()?;
    let mut graph: sys::CUgraph = ptr::null_mut();
    // SAFETY: writes a new, empty graph; flags must be 0.
    unsafe { cu!(cuGraphCreate(&mut graph, 0))? };
    let exec = capture_native(dev, graph, native, &[]).and_then(|_| {
        let mut exec: sys::CUgraphExec = ptr::null_mut();
        // SAFETY: the graph is complete; writes a new executable graph.
        unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, graph, 0))? };
        Ok(ExecGraph::new(dev, exec))
    });
    // The executable graph does not need its template.
    dev.release(Release::Graph(graph));
    exec
}
