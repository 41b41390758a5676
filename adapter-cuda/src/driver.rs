//! The CUDA driver as this adapter calls it: opening it, naming its errors
//! (`conv` maps their codes to variants), binding contexts to threads, and
//! owning its handles.
//!
//! Every driver call goes through cudarc's `sys` bindings, which resolve each
//! entry point lazily from `libcuda` (the `dynamic-loading` feature): nothing
//! of CUDA is needed to build. cudarc panics when the library or a symbol is
//! missing, so [`open`] probes the library and every entry point this adapter
//! uses before the first call; a machine without a driver, or with one too old,
//! gets a reason instead of a panic.

use std::ffi::CStr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use cmdbuf_core::{Backend, Detail, Result, UrError};
use cudarc::driver::sys;
use parking_lot::Mutex;

use crate::conv::variant_for;

/// The reason the loader prints when `libcuda` cannot be loaded; CI (no GPU)
/// sees this one.
pub const NO_DRIVER: &str = "no CUDA driver";

/// Entry points this adapter calls, all present since CUDA 12.0. An older
/// driver is reported absent instead of panicking inside cudarc at first use.
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetUuid_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetP2PAttribute",
    "cuCtxEnablePeerAccess",
    "cuCtxDisablePeerAccess",
    "cuCtxSetCurrent",
    "cuCtxGetLimit",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuLaunchHostFunc",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemGetInfo_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemHostGetDevicePointer_v2",
    "cuMemAllocManaged",
    "cuMemcpyAsync",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpy3DAsync_v2",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemsetD2D8Async",
    "cuMemsetD2D16Async",
    "cuMemsetD2D32Async",
    "cuMemPrefetchAsync",
    "cuMemAdvise",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuFuncSetCacheConfig",
    "cuLaunchKernel",
    "cuGraphCreate",
    "cuGraphDestroy",
    "cuGraphAddKernelNode_v2",
    "cuGraphAddMemcpyNode",
    "cuGraphAddMemsetNode",
    "cuGraphAddEmptyNode",
    "cuGraphAddHostNode",
    "cuGraphAddEventRecordNode",
    "cuGraphAddEventWaitNode",
    "cuGraphKernelNodeSetParams_v2",
    "cuGraphEventRecordNodeSetEvent",
    "cuGraphEventWaitNodeSetEvent",
    "cuGraphInstantiateWithFlags",
    "cuGraphExecDestroy",
    "cuGraphExecKernelNodeSetParams_v2",
    "cuGraphExecEventRecordNodeSetEvent",
    "cuGraphExecEventWaitNodeSetEvent",
    "cuGraphExecUpdate_v2",
    "cuGraphNodeSetEnabled",
    "cuGraphLaunch",
    "cuStreamBeginCaptureToGraph",
    "cuStreamGetCaptureInfo_v2",
    "cuStreamEndCapture",
    "cuGraphAddChildGraphNode",
    "cuGraphDebugDotPrint",
];

static OPENED: AtomicBool = AtomicBool::new(false);

/// Opens the driver: loads `libcuda`, checks every entry point this adapter
/// uses and calls `cuInit`. `Err` is the reason the adapter is absent.
pub(crate) fn open() -> std::result::Result<(), String> {
    static RESULT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            catch_unwind(AssertUnwindSafe(open_once))
                .unwrap_or_else(|_| Err("the CUDA driver bindings panicked while opening the driver".into()))
        })
        .clone()
}

fn open_once() -> std::result::Result<(), String> {
    // SAFETY: only tries to dlopen the candidate names; no symbol is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(format!("{NO_DRIVER} (libcuda.so could not be loaded)"));
    }
    // SAFETY: the library is present, so cudarc's loader finds it rather than panicking.
    let lib = unsafe { sys::culib() };
    for name in REQUIRED_SYMBOLS {
        // SAFETY: the symbol is only looked up, never called through this pointer.
        if unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err() {
            return Err(format!("the CUDA driver is too old: it lacks {name} (CUDA 12.0 or newer is needed)"));
        }
    }
    // SAFETY: cuInit takes flags that must be 0.
    let result = unsafe { sys::cuInit(0) };
    OPENED.store(true, Ordering::Release);
    match result {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        sys::CUresult::CUDA_ERROR_NO_DEVICE => Err("the CUDA driver reports no device".into()),
        other => Err(format!("{NO_DRIVER}: cuInit failed with {}", error_name(other))),
    }
}

/// Whether `name` is an entry point of the loaded driver (for entry points
/// newer than CUDA 12.0, used only when present).
pub(crate) fn has_symbol(name: &str) -> bool {
    if !OPENED.load(Ordering::Acquire) {
        return false;
    }
    // SAFETY: the driver library was loaded by `open`; the symbol is only looked up.
    unsafe { sys::culib().get::<*const ()>(name.as_bytes()).is_ok() }
}

/// The driver's name of an error (`CUDA_ERROR_OUT_OF_MEMORY`), or its number
/// when the driver is not loaded.
pub(crate) fn error_name(result: sys::CUresult) -> String {
    let code = result as u32;
    if OPENED.load(Ordering::Acquire) {
        let mut name: *const std::ffi::c_char = ptr::null();
        // SAFETY: the driver is loaded; cuGetErrorName writes a static string or fails.
        if unsafe { sys::cuGetErrorName(result, &mut name) } == sys::CUresult::CUDA_SUCCESS && !name.is_null() {
            // SAFETY: the driver returns a NUL-terminated static string.
            return unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        }
    }
    format!("CUresult {code}")
}

/// The error for a failed driver call `what`.
pub(crate) fn cu_error(result: sys::CUresult, what: &str) -> UrError {
    let code = result as u32;
    variant_for(code)(Detail::native(Backend::Cuda, i64::from(code), format!("{what} failed: {}", error_name(result))))
}

/// `Ok` for `CUDA_SUCCESS`, else the mapped error naming the call.
pub(crate) fn check(result: sys::CUresult, what: &str) -> Result<()> {
    if result == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(cu_error(result, what)) }
}

/// Calls a driver entry point and maps its result:
/// `cu!(cuStreamSynchronize(stream))`. The caller's `unsafe` block states why
/// the arguments are valid.
macro_rules! cu {
    ($name:ident($($arg:expr),* $(,)?)) => {
        $crate::driver::check(cudarc::driver::sys::$name($($arg),*), stringify!($name))
    };
}
pub(crate) use cu;

/// A CUDA context handle (a device's primary context).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ctx(pub(crate) sys::CUcontext);

// SAFETY: CUDA contexts may be used from any thread; the driver serialises
// what needs serialising.
unsafe impl Send for Ctx {}
// SAFETY: as for Send.
unsafe impl Sync for Ctx {}

impl Ctx {
    /// Makes this context current on the calling thread, as every driver call
    /// that allocates or creates objects needs. Cheap when it already is.
    pub(crate) fn bind(self) -> Result<()> {
        let mut current: sys::CUcontext = ptr::null_mut();
        // SAFETY: writes the calling thread's current context into `current`.
        unsafe { cu!(cuCtxGetCurrent(&mut current))? };
        if current != self.0 {
            // SAFETY: the context is retained by the device for as long as it exists.
            unsafe { cu!(cuCtxSetCurrent(self.0))? };
        }
        Ok(())
    }
}

/// A stream, destroyed on drop. Streams are created non-blocking, so that they
/// never synchronise with the legacy default stream.
#[derive(Debug)]
pub(crate) struct Stream(sys::CUstream);

// SAFETY: CUDA streams may be used from any thread.
unsafe impl Send for Stream {}
// SAFETY: as for Send: the driver serialises work submitted to one stream.
unsafe impl Sync for Stream {}

/// `CU_STREAM_NON_BLOCKING`.
const STREAM_NON_BLOCKING: u32 = 1;

impl Stream {
    /// A new non-blocking stream of the current context.
    pub(crate) fn new() -> Result<Stream> {
        let mut raw: sys::CUstream = ptr::null_mut();
        // SAFETY: writes a new stream handle into `raw`; the caller bound a context.
        unsafe { cu!(cuStreamCreate(&mut raw, STREAM_NON_BLOCKING))? };
        Ok(Stream(raw))
    }

    /// An adopted stream, destroyed when dropped.
    pub(crate) fn from_raw(raw: sys::CUstream) -> Stream {
        Stream(raw)
    }

    pub(crate) fn raw(&self) -> sys::CUstream {
        self.0
    }

    /// Blocks until everything submitted to the stream has completed.
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is alive.
        unsafe { cu!(cuStreamSynchronize(self.0)) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream is alive and destroyed once; work still in it
        // completes and its resources are released afterwards (driver contract).
        let _ = unsafe { sys::cuStreamDestroy_v2(self.0) };
    }
}

/// What `cuEventQuery` says of an event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    /// The last record has completed (or the event was never recorded).
    Ready,
    /// The last record has not completed.
    Pending,
}

/// An event, destroyed on drop.
#[derive(Debug)]
pub(crate) struct CuEvent {
    raw: sys::CUevent,
    timing: bool,
}

// SAFETY: CUDA events may be used from any thread.
unsafe impl Send for CuEvent {}
// SAFETY: as for Send.
unsafe impl Sync for CuEvent {}

/// `CU_EVENT_DISABLE_TIMING`.
const EVENT_DISABLE_TIMING: u32 = 2;

impl CuEvent {
    /// A new event of the current context; `timing` events can be measured
    /// with `cuEventElapsedTime`, the others are cheaper to wait on.
    pub(crate) fn new(timing: bool) -> Result<CuEvent> {
        let mut raw: sys::CUevent = ptr::null_mut();
        let flags = if timing { 0 } else { EVENT_DISABLE_TIMING };
        // SAFETY: writes a new event handle into `raw`; the caller bound a context.
        unsafe { cu!(cuEventCreate(&mut raw, flags))? };
        Ok(CuEvent { raw, timing })
    }

    pub(crate) fn raw(&self) -> sys::CUevent {
        self.raw
    }

    /// Whether it was created for timing.
    pub(crate) fn is_timing(&self) -> bool {
        self.timing
    }

    /// Records the event at the current end of `stream`.
    pub(crate) fn record(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: the event and the stream are alive and of the same context
        // (the caller's contract for every stream of this adapter).
        unsafe { cu!(cuEventRecord(self.raw, stream)) }
    }

    /// Whether its last record has completed; `Err` when the work it follows failed.
    pub(crate) fn query(&self) -> Result<Query> {
        // SAFETY: the event is alive.
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(Query::Ready),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(Query::Pending),
            other => Err(cu_error(other, "cuEventQuery")),
        }
    }

    /// Blocks until its last record has completed.
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the event is alive.
        unsafe { cu!(cuEventSynchronize(self.raw)) }
    }

    /// Milliseconds from `self` to `later`; both are complete timing events.
    pub(crate) fn elapsed_ms(&self, later: &CuEvent) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events are alive; the driver checks they are recorded and complete.
        unsafe { cu!(cuEventElapsedTime(&mut ms, self.raw, later.raw))? };
        Ok(ms)
    }
}

impl Drop for CuEvent {
    fn drop(&mut self) {
        // SAFETY: destroyed once; a pending record completes first (driver contract).
        let _ = unsafe { sys::cuEventDestroy_v2(self.raw) };
    }
}

/// Makes `stream` wait for the last record of `event`.
pub(crate) fn stream_wait_event(stream: sys::CUstream, event: sys::CUevent) -> Result<()> {
    // SAFETY: both handles are alive and of contexts of one device (callers pass
    // this adapter's objects of one context).
    unsafe { cu!(cuStreamWaitEvent(stream, event, 0)) }
}

/// Idle events a device keeps for reuse, at most.
const EVENTS_KEPT: usize = 4096;

/// A device's events without timing kept for reuse, shared with its
/// launcher: an eager launch's event is often dropped (its command replaced
/// by the next in the front end's list) before the launcher has recorded
/// it, and the launcher then holds it last.
#[derive(Default)]
pub(crate) struct EventPool(Mutex<Vec<Arc<CuEvent>>>);

impl EventPool {
    /// Keeps an event for reuse once nothing will wait on it again: waits
    /// already issued keep what its last record was, and recording it again
    /// only affects later waits. One that someone else still holds (held
    /// work, the launcher) is left to them: the last gives it back.
    pub(crate) fn recycle(&self, mut event: Arc<CuEvent>) {
        // A chain of a thousand eager commands whose events the application
        // drops together found a pool of 256 empty for three launches in
        // four: a `cuEventCreate` (0.25 µs on an H200) per launch, and a
        // `cuEventDestroy` for each event the pool refused (issue 31, item 3).
        // An idle event costs the driver a few hundred bytes.
        // Kept with its `Arc`, so that a submission's event costs no
        // allocation for it; not locked for one someone else holds.
        if Arc::get_mut(&mut event).is_some() {
            keep(&mut self.0.lock(), event);
        }
    }

    /// A kept event, if there is one.
    pub(crate) fn take(&self) -> Option<Arc<CuEvent>> {
        self.0.lock().pop()
    }

    /// Moves up to `count` kept events into `into`, under one lock.
    pub(crate) fn take_many(&self, count: usize, into: &mut Vec<Arc<CuEvent>>) {
        let mut pool = self.0.lock();
        let from = pool.len().saturating_sub(count);
        into.extend(pool.drain(from..));
    }

    /// [`recycle`](Self::recycle) of each of `events` (emptied), under one lock.
    pub(crate) fn recycle_all(&self, events: &mut Vec<Arc<CuEvent>>) {
        let mut pool = self.0.lock();
        for event in events.drain(..) {
            keep(&mut pool, event);
        }
    }
}

/// Keeps `event` in the pool (locked) if nothing else holds it, it has no
/// timing, and the pool has room.
fn keep(pool: &mut Vec<Arc<CuEvent>>, mut event: Arc<CuEvent>) {
    if Arc::get_mut(&mut event).is_some() && !event.is_timing() && pool.len() < EVENTS_KEPT {
        pool.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_the_call_and_code() {
        let e = cu_error(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc_v2");
        assert!(matches!(e, UrError::OutOfDeviceMemory(_)));
        let text = e.to_string();
        assert!(text.contains("cuMemAlloc_v2 failed"), "{text}");
        assert!(text.contains("cuda: native code 2"), "{text}");
    }
}
