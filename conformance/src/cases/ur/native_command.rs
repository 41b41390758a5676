//! Native commands and native handles (`urEnqueueNativeCommandExp`,
//! `urCommandBufferAppendNativeCommandExp`, `ur*GetNativeHandle`): callbacks
//! doing each backend's own work on the target they are given, with the
//! results read back through the API.
//!
//! The native work, per target:
//! - CPU ([`NativeTarget::Host`]): host stores through the buffer's native
//!   handle (its host address);
//! - OpenCL ([`NativeTarget::Queue`]): `clEnqueueFillBuffer` on the queue,
//!   on the buffer's `cl_mem`;
//! - Vulkan ([`NativeTarget::Recording`]): `vkCmdFillBuffer` into the
//!   command buffer, on the buffer's `VkBuffer`;
//! - CUDA ([`NativeTarget::Queue`]): `cuMemsetD32Async` on the stream, on the
//!   buffer's `CUdeviceptr`.
//!
//! The driver entry points are taken from the drivers' libraries (the same
//! ones the adapters load), so the suite needs no driver headers.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cmdbuf::{
    AppendOptions, Backend, CommandBufferDesc, Context, EventStatus, MemBuffer, NativeHandle, NativeScope,
    NativeTarget, UserEvent,
};

use crate::harness::{CaseError, CaseResult, Env, read, read_buffer};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["native_command";
        enqueue_fills_buffer,
        enqueue_now_runs_before_returning,
        enqueue_orders_with_queue,
        enqueue_waits_for_wait_list,
        enqueue_out_of_order_wait_list => Requires::OUT_OF_ORDER,
        queue_handle_inside_callback,
        callback_holding_its_queue_is_released,
        queue_methods_inside_callback,
        enqueue_panic_is_an_error,
        enqueue_misuse,
        append_fills_at_each_replay,
        append_callback_runs_once => Requires::update(cmdbuf::UpdateCapabilities::KERNEL_ARGUMENTS),
        append_orders_with_sync_points,
        command_buffer_handle_inside_callback,
        append_misuse,
        child_command_buffer,
        native_handles,
    ]
}

/// Long enough for a command that ignored its wait list to have run.
const SETTLE: Duration = Duration::from_millis(30);

/// Words of the buffers the cases fill.
pub(in crate::cases) const WORDS: usize = 256;

type ClFill = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *const c_void,
    usize,
    usize,
    usize,
    u32,
    *const c_void,
    *mut *mut c_void,
) -> i32;
type ClRelease = unsafe extern "C" fn(*mut c_void) -> i32;
type ClInfo = unsafe extern "C" fn(*mut c_void, u32, usize, *mut c_void, *mut usize) -> i32;
type ClExtension = unsafe extern "C" fn(*mut c_void, *const std::ffi::c_char) -> *mut c_void;
/// `clCommandFillBufferKHR` before 0.9.5 of `cl_khr_command_buffer`.
type ClRecordFillLegacy = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *const c_void,
    usize,
    usize,
    usize,
    u32,
    *const u32,
    *mut u32,
    *mut c_void,
) -> i32;
/// `clCommandFillBufferKHR` from 0.9.5 (a properties argument after the queue).
type ClRecordFill = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *const u64,
    *mut c_void,
    *const c_void,
    usize,
    usize,
    usize,
    u32,
    *const u32,
    *mut u32,
    *mut c_void,
) -> i32;
type VkFill = unsafe extern "C" fn(*mut c_void, u64, u64, u64, u32);
type CuMemset = unsafe extern "C" fn(u64, u32, usize, *mut c_void) -> i32;
type CuPointerAttribute = unsafe extern "C" fn(*mut c_void, u32, u64) -> i32;
type CuAddMemsetNode = unsafe extern "C" fn(
    *mut *mut c_void,
    *mut c_void,
    *const *mut c_void,
    usize,
    *const CuMemsetParams,
    *mut c_void,
) -> i32;

/// `CUDA_MEMSET_NODE_PARAMS`.
#[repr(C)]
struct CuMemsetParams {
    dst: u64,
    pitch: usize,
    value: u32,
    element_size: u32,
    width: usize,
    height: usize,
}

/// A driver library, opened once (drivers are never unloaded while the
/// adapters use them).
fn library(names: &[&str]) -> Option<&'static libloading::Library> {
    names.iter().find_map(|name| {
        // SAFETY: the drivers' libraries run no unsound initialisation; the
        // adapters load the same ones.
        unsafe { libloading::Library::new(*name) }.ok().map(|l| &*Box::leak(Box::new(l)))
    })
}

fn symbol<T: Copy + 'static>(lib: &'static libloading::Library, name: &[u8]) -> T {
    // SAFETY: `T` is the entry point's C signature (the types above).
    let f: libloading::Symbol<'static, T> = unsafe { lib.get(name) }.unwrap_or_else(|e| {
        panic!("{} missing: {e}", String::from_utf8_lossy(name));
    });
    *f
}

fn opencl() -> &'static libloading::Library {
    static LIB: OnceLock<Option<&'static libloading::Library>> = OnceLock::new();
    LIB.get_or_init(|| library(&["libOpenCL.so.1", "libOpenCL.so"])).expect("libOpenCL")
}

fn vulkan() -> &'static libloading::Library {
    static LIB: OnceLock<Option<&'static libloading::Library>> = OnceLock::new();
    LIB.get_or_init(|| library(&["libvulkan.so.1", "libvulkan.so"])).expect("libvulkan")
}

fn cuda() -> &'static libloading::Library {
    static LIB: OnceLock<Option<&'static libloading::Library>> = OnceLock::new();
    LIB.get_or_init(|| library(&["libcuda.so.1", "libcuda.so"])).expect("libcuda")
}

/// Fills `words` 32-bit words of `buffer` from word `first` with `value`,
/// with the backend's own API on the scope's target. Panics on a driver
/// error: the command then fails with the message.
pub(in crate::cases) fn native_fill(
    scope: &NativeScope<'_>,
    buffer: &MemBuffer,
    first: usize,
    words: usize,
    value: u32,
) {
    let handle = buffer.native_handle().expect("the buffer's native handle").0;
    let (offset, size) = (first * 4, words * 4);
    match (scope.backend(), scope.target()) {
        (Backend::Cpu, NativeTarget::Host) => {
            let base = handle as *mut u32;
            for i in first..first + words {
                // SAFETY: the buffer's host memory holds `WORDS` words and
                // the command runs after everything that touches it before.
                unsafe { base.add(i).write(value) };
            }
        }
        (Backend::OpenCl, NativeTarget::Queue(queue)) => {
            let fill: ClFill = symbol(opencl(), b"clEnqueueFillBuffer\0");
            let release: ClRelease = symbol(opencl(), b"clReleaseEvent\0");
            let mut event = std::ptr::null_mut();
            // SAFETY: a valid queue and buffer, a 4-byte pattern, a range in bounds.
            let code = unsafe {
                fill(
                    queue.0 as *mut c_void,
                    handle as *mut c_void,
                    (&value as *const u32).cast(),
                    4,
                    offset,
                    size,
                    0,
                    std::ptr::null(),
                    &mut event,
                )
            };
            assert_eq!(code, 0, "clEnqueueFillBuffer");
            // SAFETY: the event the enqueue returned.
            unsafe { release(event) };
        }
        (Backend::OpenCl, NativeTarget::Recording(cb)) => cl_record_fill(cb.0, handle, offset, size, value),
        (Backend::Vulkan, NativeTarget::Recording(cb)) => {
            let fill: VkFill = symbol(vulkan(), b"vkCmdFillBuffer\0");
            // SAFETY: a command buffer in the recording state and a buffer of
            // its device; offset and size are multiples of 4, in bounds.
            unsafe { fill(cb.0 as *mut c_void, handle, offset as u64, size as u64, value) };
        }
        (Backend::Cuda, NativeTarget::Recording(graph)) => {
            cuda_graph_fill(graph.0, handle + offset as u64, words, value)
        }
        (Backend::Cuda, NativeTarget::Queue(stream)) => {
            let memset: CuMemset = symbol(cuda(), b"cuMemsetD32Async\0");
            // SAFETY: device memory of `WORDS` words, the queue's context is current.
            let code = unsafe { memset(handle + offset as u64, value, words, stream.0 as *mut c_void) };
            assert_eq!(code, 0, "cuMemsetD32Async");
        }
        (backend, target) => panic!("unexpected native target {target:?} on {backend}"),
    }
}

/// Adds a 32-bit memset node to a `CUgraph` (a child command buffer's), in
/// the context of the memory it fills.
fn cuda_graph_fill(graph: u64, dst: u64, words: usize, value: u32) {
    const CU_POINTER_ATTRIBUTE_CONTEXT: u32 = 1;
    let attribute: CuPointerAttribute = symbol(cuda(), b"cuPointerGetAttribute\0");
    let add: CuAddMemsetNode = symbol(cuda(), b"cuGraphAddMemsetNode\0");
    let mut context: *mut c_void = std::ptr::null_mut();
    // SAFETY: a device pointer and a pointer-sized attribute.
    let code = unsafe { attribute((&mut context as *mut *mut c_void).cast(), CU_POINTER_ATTRIBUTE_CONTEXT, dst) };
    assert_eq!(code, 0, "cuPointerGetAttribute");
    let params = CuMemsetParams { dst, pitch: 0, value, element_size: 4, width: words, height: 1 };
    let mut node = std::ptr::null_mut();
    // SAFETY: a valid graph, no dependencies, a memset within the allocation.
    let code = unsafe { add(&mut node, graph as *mut c_void, std::ptr::null(), 0, &params, context) };
    assert_eq!(code, 0, "cuGraphAddMemsetNode");
}

/// A pointer-sized OpenCL info value.
fn cl_info(query: &[u8], object: *mut c_void, param: u32) -> *mut c_void {
    let info: ClInfo = symbol(opencl(), query);
    let mut value: *mut c_void = std::ptr::null_mut();
    let size = size_of::<*mut c_void>();
    // SAFETY: a valid object and a pointer-sized parameter.
    let code = unsafe { info(object, param, size, (&mut value as *mut *mut c_void).cast(), std::ptr::null_mut()) };
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(query));
    value
}

/// Records `clCommandFillBufferKHR` into a recording `cl_command_buffer_khr`,
/// in the shape of the device's extension version, found from the buffer's
/// context.
fn cl_record_fill(cb: u64, mem: u64, offset: usize, size: usize, value: u32) {
    const CL_MEM_CONTEXT: u32 = 0x1106;
    const CL_CONTEXT_DEVICES: u32 = 0x1081;
    const CL_DEVICE_PLATFORM: u32 = 0x1031;
    const CL_DEVICE_EXTENSIONS_WITH_VERSION: u32 = 0x1060;
    let context = cl_info(b"clGetMemObjectInfo\0", mem as *mut c_void, CL_MEM_CONTEXT);
    let device = cl_info(b"clGetContextInfo\0", context, CL_CONTEXT_DEVICES);
    let platform = cl_info(b"clGetDeviceInfo\0", device, CL_DEVICE_PLATFORM);
    // The extension's version: `cl_name_version` entries of 4 + 64 bytes.
    let info: ClInfo = symbol(opencl(), b"clGetDeviceInfo\0");
    let mut len = 0usize;
    // SAFETY: a size query.
    unsafe { info(device, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, std::ptr::null_mut(), &mut len) };
    let mut bytes = vec![0u8; len];
    // SAFETY: `len` bytes of room.
    let code = unsafe {
        info(device, CL_DEVICE_EXTENSIONS_WITH_VERSION, len, bytes.as_mut_ptr().cast(), std::ptr::null_mut())
    };
    assert_eq!(code, 0, "CL_DEVICE_EXTENSIONS_WITH_VERSION");
    let version = bytes
        .chunks_exact(68)
        .find(|e| e[4..].split(|b| *b == 0).next() == Some(b"cl_khr_command_buffer"))
        .map(|e| u32::from_ne_bytes([e[0], e[1], e[2], e[3]]))
        .expect("cl_khr_command_buffer");
    let (minor, patch) = ((version >> 12) & 0x3ff, version & 0xfff);
    let properties = version >> 22 > 0 || minor > 9 || (minor == 9 && patch >= 5);
    let lookup: ClExtension = symbol(opencl(), b"clGetExtensionFunctionAddressForPlatform\0");
    // SAFETY: a valid platform and a NUL-terminated name.
    let address = unsafe { lookup(platform, c"clCommandFillBufferKHR".as_ptr()) };
    assert!(!address.is_null(), "clCommandFillBufferKHR");
    let (null, pattern) = (std::ptr::null_mut(), (&value as *const u32).cast());
    // SAFETY: the entry point in the shape of the device's version; a
    // recording command-buffer of the buffer's device; no sync points (the
    // adapter's barriers order the command).
    let code = unsafe {
        if properties {
            let fill: ClRecordFill = std::mem::transmute(address);
            fill(
                cb as *mut c_void,
                null,
                std::ptr::null(),
                mem as *mut c_void,
                pattern,
                4,
                offset,
                size,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                null,
            )
        } else {
            let fill: ClRecordFillLegacy = std::mem::transmute(address);
            fill(
                cb as *mut c_void,
                null,
                mem as *mut c_void,
                pattern,
                4,
                offset,
                size,
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
                null,
            )
        }
    };
    assert_eq!(code, 0, "clCommandFillBufferKHR");
}

pub(in crate::cases) fn words(env: &Env, value: u32) -> Result<MemBuffer, CaseError> {
    env.buffer_with(&[value; WORDS])
}

/// UR's `urEnqueueNativeCommandTest.Success`-like: the callback's native
/// work fills the buffer; read back through the API.
fn enqueue_fills_buffer(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let buf = words(env, 0)?;
    let b = buf.clone();
    // SAFETY: the callback fills the buffer, which the command keeps alive.
    let done =
        unsafe { queue.enqueue_native_command(&[&buf], &[], move |s| native_fill(s, &b, 0, WORDS, 0xA5A5_0001))? };
    done.wait()?;
    check_eq!(done.status(), EventStatus::Complete);
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, vec![0xA5A5_0001u32; WORDS]);
    Ok(())
}

/// `enqueue_native_command_now` (UR's contract): the callback, which may
/// borrow, has run when the call returns, after the commands before it; its
/// work is complete when the event is.
fn enqueue_now_runs_before_returning(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let buf = words(env, 0)?;
    queue.fill_buffer(&buf, &3u32.to_le_bytes(), 0, WORDS * 4, &[])?;
    let calls = AtomicU32::new(0);
    // SAFETY: the callback fills the buffer and counts on this stack frame,
    // which outlives the call.
    let done = unsafe {
        queue.enqueue_native_command_now(&[&buf], &[], |s| {
            calls.fetch_add(1, Ordering::SeqCst);
            native_fill(s, &buf, 0, WORDS / 4, 77);
        })?
    };
    check_eq!(calls.load(Ordering::SeqCst), 1, "the callback ran before the call returned");
    done.wait()?;
    let mut expected = vec![77u32; WORDS / 4];
    expected.extend(vec![3u32; WORDS - WORDS / 4]);
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, expected);
    check_eq!(calls.load(Ordering::SeqCst), 1);
    Ok(())
}

/// On an in-order queue the native work runs after the commands before it
/// and before those after it.
fn enqueue_orders_with_queue(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    for round in 0..3u32 {
        queue.fill_buffer(&buf, &(10 + round).to_le_bytes(), 0, WORDS * 4, &[])?;
        let b = buf.clone();
        // SAFETY: as in `enqueue_fills_buffer`.
        unsafe { queue.enqueue_native_command(&[&buf], &[], move |s| native_fill(s, &b, 0, WORDS / 2, 100 + round))? };
        queue.copy_buffer(&buf, &out, 0, 0, WORDS * 4, &[])?;
        let mut expected = vec![100 + round; WORDS / 2];
        expected.extend(vec![10 + round; WORDS / 2]);
        check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, expected, "round {round}");
    }
    Ok(())
}

/// The native work waits for its wait list: gated by a user event.
fn enqueue_waits_for_wait_list(env: &Env) -> CaseResult {
    gated(env, env.queue()?)
}

fn enqueue_out_of_order_wait_list(env: &Env) -> CaseResult {
    gated(env, env.ooo_queue()?)
}

fn gated(env: &Env, queue: cmdbuf::Queue) -> CaseResult {
    let buf = words(env, 1)?;
    let gate = UserEvent::new(env.context())?;
    let fill = queue.fill_buffer(&buf, &2u32.to_le_bytes(), 0, WORDS * 4, &[gate.event()])?;
    let b = buf.clone();
    // SAFETY: as in `enqueue_fills_buffer`.
    let native = unsafe { queue.enqueue_native_command(&[&buf], &[&fill], move |s| native_fill(s, &b, 0, 8, 3))? };
    std::thread::sleep(SETTLE);
    check!(!native.status().is_terminal(), "the native command completed before its wait list");
    gate.complete()?;
    native.wait()?;
    let mut expected = vec![3u32; 8];
    expected.extend(vec![2u32; WORDS - 8]);
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, expected);
    Ok(())
}

/// A callback's target and the handle it was answered inside the callback.
type Seen = (NativeTarget, cmdbuf::Result<NativeHandle>);

/// Inside the callback, the queue's native handle is the target (the
/// stream, queue or command buffer the work goes to); the CPU has none.
fn queue_handle_inside_callback(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let seen: Arc<parking_lot::Mutex<Option<Seen>>> = Arc::default();
    let (q, record) = (queue.clone(), seen.clone());
    // SAFETY: the callback does no native work.
    let done = unsafe {
        queue.enqueue_native_command(&[], &[], move |s| *record.lock() = Some((s.target(), q.native_handle())))?
    };
    done.wait()?;
    let (target, handle) = seen.lock().take().ok_or_else(|| CaseError::Fail("the callback did not run".into()))?;
    match target.handle() {
        Some(expected) => check_eq!(handle?, expected),
        None => check_err!(handle, UnsupportedFeature),
    }
    Ok(())
}

/// A queue's native command runs once, and its callback is dropped once it
/// has run, with no later call on the queue: a callback holding its own
/// queue (and, here, the queue's last handle) forms no cycle that would leak
/// the queue. Found by valgrind (`scripts/memcheck.sh`): the queue kept the
/// callback in its in-flight list until its next enqueue or finish.
fn callback_holding_its_queue_is_released(env: &Env) -> CaseResult {
    /// Says when it is dropped, with the callback that holds it.
    struct Sentinel(std::sync::mpsc::Sender<()>);
    impl Drop for Sentinel {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let queue = env.queue()?;
    let (dropped, released) = std::sync::mpsc::channel();
    let (q, sentinel) = (queue.clone(), Sentinel(dropped));
    // SAFETY: the callback does no native work.
    let done = unsafe {
        queue.enqueue_native_command(&[], &[], move |_| {
            let _ = (&q, &sentinel);
        })?
    };
    // The callback alone keeps the queue now.
    drop(queue);
    done.wait()?;
    check!(released.recv_timeout(Duration::from_secs(10)).is_ok(), "the callback was not dropped after it ran");
    Ok(())
}

/// Queue methods called from the callback do not deadlock: an enqueue
/// works; on the CPU, where the callback runs on the queue's worker, a
/// blocking call is refused.
fn queue_methods_inside_callback(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let buf = words(env, 0)?;
    let outcome: Arc<parking_lot::Mutex<Vec<String>>> = Arc::default();
    let (q, b, log) = (queue.clone(), buf.clone(), outcome.clone());
    // SAFETY: the callback only calls the API.
    let done = unsafe {
        queue.enqueue_native_command(&[&buf], &[], move |s| {
            let fill = q.fill_buffer(&b, &5u32.to_le_bytes(), 0, 16, &[]);
            log.lock().push(format!("fill {}", fill.is_ok()));
            if s.target() == NativeTarget::Host {
                let finish = q.finish();
                log.lock().push(format!("finish {}", finish.err().map_or("ok", |e| e.ur_name())));
            }
        })?
    };
    done.wait()?;
    queue.finish()?;
    let log = outcome.lock().clone();
    check_eq!(log.first().map(String::as_str), Some("fill true"));
    if env.device().backend() == Backend::Cpu {
        check_eq!(log.get(1).map(String::as_str), Some("finish UR_RESULT_ERROR_INVALID_OPERATION"));
    }
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, 4)?, vec![5u32; 4]);
    Ok(())
}

/// A panicking callback fails the command (at the call, or in its event),
/// and the queue goes on.
fn enqueue_panic_is_an_error(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let enqueued = crate::expecting_panics(|| {
        // SAFETY: the callback does no native work.
        unsafe { queue.enqueue_native_command(&[], &[], |_| panic!("native work failed")) }
    });
    let failed = match enqueued {
        Err(_) => true,
        Ok(event) => event.wait().is_err(),
    };
    check!(failed, "a panicking native command reported success");
    let buf = words(env, 0)?;
    queue.fill_buffer(&buf, &6u32.to_le_bytes(), 0, WORDS * 4, &[])?;
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, 2)?, vec![6u32; 2]);
    Ok(())
}

/// Buffers of another context are refused before anything runs, except
/// where the adapter uses them as its own (`Context::uses_buffers_of`); its
/// events too, except where the adapter waits for them
/// (`Context::waits_on_events_of`).
fn enqueue_misuse(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let other = Context::new(env.device())?;
    let foreign = MemBuffer::new(&other, cmdbuf::MemFlags::READ_WRITE, 64)?;
    let ran = Arc::new(AtomicU32::new(0));
    let r = ran.clone();
    // SAFETY: the callback only counts.
    let result =
        unsafe { queue.enqueue_native_command(&[&foreign], &[], move |_| _ = r.fetch_add(1, Ordering::SeqCst)) };
    let shared = env.context().uses_buffers_of(&other);
    if shared {
        result?.wait()?;
        check_eq!(ran.swap(0, Ordering::SeqCst), 1, "a native command over another context's buffer ran once");
    } else {
        check_err!(result, InvalidMemObject);
    }
    let foreign_event = UserEvent::new(&other)?;
    let r = ran.clone();
    let wait = [foreign_event.event()];
    // Where the adapter waits for the other context's events, the event is
    // accepted (completed first: a native command may run at its enqueue).
    let accepted = env.context().waits_on_events_of(&other);
    if accepted {
        foreign_event.complete()?;
    }
    // SAFETY: as above.
    let result = unsafe { queue.enqueue_native_command(&[], &wait, move |_| _ = r.fetch_add(1, Ordering::SeqCst)) };
    if accepted {
        result?.wait()?;
        check_eq!(ran.load(Ordering::SeqCst), 1);
        return Ok(());
    }
    check_err!(result, InvalidEventWaitList);
    foreign_event.complete()?;
    check_eq!(ran.load(Ordering::SeqCst), 0);
    Ok(())
}

/// A native command in a command buffer does its work at every replay,
/// between the commands around it.
fn append_fills_at_each_replay(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let fill = cb.append_buffer_fill(&buf, &0x11u32.to_le_bytes(), 0, WORDS * 4, AppendOptions::new())?;
    let b = buf.clone();
    // SAFETY: the callback fills the buffer, which the closure keeps alive.
    let native =
        unsafe { cb.append_native_command(None, &[fill.sync_point], move |s| native_fill(s, &b, 0, WORDS / 2, 0xA5))? };
    cb.append_buffer_copy(&buf, &out, 0, 0, WORDS * 4, AppendOptions::new().after(&[native]))?;
    cb.finalize()?;
    let mut expected = vec![0xA5u32; WORDS / 2];
    expected.extend(vec![0x11u32; WORDS / 2]);
    for replay in 0..3 {
        queue.fill_buffer(&out, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, expected, "replay {replay}");
    }
    Ok(())
}

/// UR calls an appended native command's callback once, in the append:
/// updates and replays (several in flight, as the OpenCL adapter keeps an
/// instance per pending submission on some devices) reuse the work it
/// recorded. Exceptions, documented in `cmdbuf_core::interop`: Vulkan records
/// at finalize; where the callback's host work is the command (the CPU) or
/// the buffer is a software one or replayed as planned eager submissions
/// (OpenCL), it runs at each submission.
fn append_callback_runs_once(env: &Env) -> CaseResult {
    const N: usize = 32;
    let queue = env.queue()?;
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    let target = env.usm_u32(N)?;
    let kernel = env.kernel("fill")?;
    let cb = env.updatable_command_buffer()?;
    let args = [cmdbuf::KernelArg::Pointer(target.ptr()), cmdbuf::KernelArg::value(&5u32)];
    // SAFETY: fill writes 32 u32s into a 32-u32 allocation.
    let launch = unsafe {
        cb.append_kernel_launch(&cmdbuf::KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())?
    };
    let handle =
        launch.command.ok_or_else(|| CaseError::Fail("an updatable command buffer returned no handle".into()))?;
    let calls = Arc::new(AtomicU32::new(0));
    let (b, counter) = (buf.clone(), calls.clone());
    // SAFETY: the callback fills the buffer, which the closure keeps alive.
    let native = unsafe {
        cb.append_native_command(None, &[launch.sync_point], move |s| {
            counter.fetch_add(1, Ordering::SeqCst);
            native_fill(s, &b, 0, WORDS, 0x77);
        })?
    };
    cb.append_buffer_copy(&buf, &out, 0, 0, WORDS * 4, AppendOptions::new().after(&[native]))?;
    cb.finalize()?;
    // A planned replay (OpenCL where it beats the driver's command buffer)
    // enqueues each command anew, the native one included, like a software
    // buffer.
    let once = match env.device().backend() {
        Backend::Cpu => false,
        _ => {
            cb.support() == cmdbuf::CommandBufferSupport::Native
                && env.device().info().command_buffer.replay_path == cmdbuf::ReplayPath::Driver
        }
    };
    let mut submissions = 0u32;
    let check_calls = |submissions: u32, when: &str| -> CaseResult {
        let expected = if once { 1 } else { submissions };
        check_eq!(calls.load(Ordering::SeqCst), expected, "callback calls {when}");
        Ok(())
    };
    check_calls(0, "after finalize")?;
    for value in [5u32, 9] {
        if value == 9 {
            // SAFETY: the same 32 u32s, a new value.
            unsafe {
                cb.update_kernel_launches(&[
                    cmdbuf::KernelLaunchUpdate::new(&handle).arg(1, cmdbuf::KernelArg::value(&value))
                ])?
            };
        }
        // Several submissions in flight, then one waited for.
        let events = (0..3).map(|_| queue.enqueue_command_buffer(&cb, &[])).collect::<Result<Vec<_>, _>>()?;
        submissions += 3;
        for event in events {
            event.wait()?;
        }
        check_eq!(read::<u32>(&queue, target.ptr(), N)?, vec![value; N], "the kernel's value");
        check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, vec![0x77u32; WORDS], "the native fill");
        check_calls(submissions, &format!("after {submissions} submissions"))?;
    }
    Ok(())
}

/// Sync points order native work both ways: two native commands on
/// overlapping ranges, each after the other's predecessor.
fn append_orders_with_sync_points(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let buf = words(env, 0)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let (b1, b2) = (buf.clone(), buf.clone());
    // SAFETY: as in `append_fills_at_each_replay`.
    let first = unsafe { cb.append_native_command(None, &[], move |s| native_fill(s, &b1, 0, WORDS, 1))? };
    // SAFETY: as above.
    let second = unsafe { cb.append_native_command(None, &[first], move |s| native_fill(s, &b2, 0, WORDS / 4, 2))? };
    cb.append_buffer_fill(
        &buf,
        &3u32.to_le_bytes(),
        4 * (WORDS / 8),
        4 * (WORDS / 8),
        AppendOptions::new().after(&[second]),
    )?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected = vec![2u32; WORDS / 8];
    expected.extend(vec![3u32; WORDS / 8]);
    expected.extend(vec![1u32; WORDS - WORDS / 4]);
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, expected);
    Ok(())
}

/// Inside the callback, the command buffer's native handle is the target
/// (on the CPU, which has none, `UnsupportedFeature`), found while the
/// buffer is being recorded or run.
fn command_buffer_handle_inside_callback(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let seen: Arc<parking_lot::Mutex<Vec<Seen>>> = Arc::default();
    // The buffer keeps its callback, so a handle of the buffer inside it is
    // a cycle: the case breaks it when done (valgrind found the leak).
    let slot = Arc::new(parking_lot::Mutex::new(Some(cb.clone())));
    let (inner, record) = (slot.clone(), seen.clone());
    // SAFETY: the callback does no native work.
    unsafe {
        cb.append_native_command(None, &[], move |s| {
            let handle = inner.lock().as_ref().map(|cb| cb.native_handle());
            record.lock().extend(handle.map(|h| (s.target(), h)));
        })?
    };
    cb.finalize()?;
    let run = queue.enqueue_command_buffer(&cb, &[]).and_then(|e| e.wait());
    slot.lock().take();
    run?;
    let seen = std::mem::take(&mut *seen.lock());
    check!(!seen.is_empty(), "the callback never ran");
    // Where each backend's native command-buffer work goes (software command
    // buffers: the queue running the submission).
    // Pre-planned buffers (OpenCL's planned replay path) run native commands
    // on the queue, as software ones do.
    let native = cb.support() == cmdbuf::CommandBufferSupport::Native
        && env.device().info().command_buffer.replay_path != cmdbuf::ReplayPath::Planned;
    let recording = |t: &NativeTarget| matches!(t, NativeTarget::Recording(_));
    let queue_target = |t: &NativeTarget| matches!(t, NativeTarget::Queue(_));
    for (target, _) in &seen {
        let expected = match env.device().backend() {
            Backend::Cpu => *target == NativeTarget::Host,
            Backend::Vulkan => recording(target),
            Backend::OpenCl if native => recording(target),
            _ => queue_target(target),
        };
        check!(expected, "{target:?} on {} ({:?})", env.device().backend(), cb.support());
    }
    for (target, handle) in seen {
        match target.handle() {
            Some(expected) => check_eq!(handle?, expected),
            None => check_err!(handle, UnsupportedFeature),
        }
    }
    Ok(())
}

/// The append rules of every command hold for native commands.
fn append_misuse(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let other = env.command_buffer(CommandBufferDesc::default())?;
    // SAFETY: the callback does nothing.
    let foreign = unsafe { other.append_native_command(None, &[], |_| {})? };
    // SAFETY: the callbacks do nothing.
    check_err!(unsafe { cb.append_native_command(None, &[foreign], |_| {}) }, InvalidSyncPointWaitList);
    let early = cb.sync_point_from_raw(3);
    // SAFETY: as above.
    check_err!(unsafe { cb.append_native_command(None, &[early], |_| {}) }, InvalidSyncPointWaitList);
    cb.finalize()?;
    // SAFETY: as above.
    check_err!(unsafe { cb.append_native_command(None, &[], |_| {}) }, InvalidOperation);
    Ok(())
}

/// A child command buffer: another context's is refused, the buffer itself
/// and a finalized one too; a valid one is `UnsupportedFeature` where the
/// device does not nest command buffers, and holds the native work where it
/// does (CUDA: nodes added to the child's graph).
fn child_command_buffer(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let other_ctx = Context::new(env.device())?;
    let foreign = cmdbuf::CommandBuffer::new(&other_ctx, env.device(), CommandBufferDesc::default())?;
    // SAFETY: the callbacks do nothing.
    check_err!(unsafe { cb.append_native_command(Some(&foreign), &[], |_| {}) }, InvalidCommandBuffer);
    // SAFETY: as above.
    check_err!(unsafe { cb.append_native_command(Some(&cb), &[], |_| {}) }, InvalidValue);
    let finalized = env.command_buffer(CommandBufferDesc::default())?;
    finalized.finalize()?;
    // SAFETY: as above.
    check_err!(unsafe { cb.append_native_command(Some(&finalized), &[], |_| {}) }, InvalidOperation);
    let child = env.command_buffer(CommandBufferDesc::default())?;
    if !env.device().info().command_buffer.subgraphs {
        // SAFETY: as above.
        check_err!(unsafe { cb.append_native_command(Some(&child), &[], |_| {}) }, UnsupportedFeature);
        check_eq!(cb.len(), 0);
        return Ok(());
    }
    let queue = env.queue()?;
    let (buf, out) = (words(env, 4)?, words(env, 0)?);
    let (b, c) = (buf.clone(), child.clone());
    let seen: Arc<parking_lot::Mutex<Vec<Seen>>> = Arc::default();
    let record = seen.clone();
    // SAFETY: the callback fills the buffer, which the closure keeps alive.
    let native = unsafe {
        cb.append_native_command(Some(&child), &[], move |s| {
            record.lock().push((s.target(), c.native_handle()));
            native_fill(s, &b, 0, WORDS, 9);
        })?
    };
    cb.append_buffer_copy(&buf, &out, 0, 0, WORDS * 4, AppendOptions::new().after(&[native]))?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, vec![9u32; WORDS]);
    for (target, handle) in std::mem::take(&mut *seen.lock()) {
        check!(matches!(target, NativeTarget::Recording(_)), "{target:?}");
        check_eq!(handle.ok(), target.handle(), "the child's handle inside the callback is the target");
    }
    Ok(())
}

/// What each backend gives as native handles (see `cmdbuf_core::interop`).
fn native_handles(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let buf = words(env, 7)?;
    let event = queue.fill_buffer(&buf, &8u32.to_le_bytes(), 0, 16, &[])?;
    event.wait()?;
    let backend = env.device().backend();
    let results = [
        ("device", env.device().native_handle()),
        ("context", env.context().native_handle()),
        ("queue", queue.native_handle()),
        ("buffer", buf.native_handle()),
        ("event", event.native_handle()),
    ];
    for (what, result) in results {
        let supported = match (backend, what) {
            (Backend::Cpu, w) => w == "buffer",
            (Backend::Vulkan, w) => w != "event",
            _ => true,
        };
        match result {
            Ok(h) if supported => {
                // The CUDA device is an ordinal, 0 for the first device.
                check!(h.0 != 0 || (backend, what) == (Backend::Cuda, "device"), "{what}: a null handle");
            }
            Ok(h) => return Err(CaseError::Fail(format!("{what}: a handle {h:?} where none is documented"))),
            Err(cmdbuf::UrError::UnsupportedFeature(_)) if !supported => {}
            Err(e) => return Err(CaseError::Fail(format!("{what}: {} ({e})", e.ur_name()))),
        }
    }
    if backend == Backend::Cpu {
        // The CPU buffer's handle is its host memory.
        let words = buf.native_handle()?.0 as *const u32;
        // SAFETY: the buffer's host memory, not written while it is read.
        check_eq!(unsafe { (*words, *words.add(5)) }, (8, 7));
    }
    Ok(())
}
