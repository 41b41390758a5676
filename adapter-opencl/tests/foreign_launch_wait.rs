//! PoCL before 7.0 runs launches of one kernel one at a time, process-wide
//! (`src/one_launch.rs`): a launch waits for the last launch of the same
//! kernel, which the host waits for when it is another context's. That wait
//! once held the chain's lock, which every PoCL launch and every release of
//! an in-order queue takes: a context whose USM allocation (zeroed by the
//! adapter's fill kernel) waited behind another context's fill gated on a
//! user event stopped the thread that was to complete that event as soon as
//! it released a queue (issue 26). Contexts made on one device share one
//! `cl_context`, whose launches chain in OpenCL wait lists; the other context
//! here is adopted from a `cl_context` of its own, as an application's is.
//!
//! One test per OpenCL device (the scenario must not deadlock anywhere); a
//! deadlock fails it at the limit instead of hanging it. Without an OpenCL
//! device it is listed ignored with the reason, and fails when run anyway
//! or when `UR_RS_REQUIRE_DEVICES` names `opencl`.

mod per_device;

use std::sync::mpsc;
use std::time::Duration;

use cmdbuf_core::{
    Context, Device, NativeHandle, Ownership, Queue, QueueProperties, UserEvent, UsmAllocation, UsmKind,
};

/// How long the scenario may take before it counts as a deadlock.
const LIMIT: Duration = Duration::from_secs(120);

fn main() {
    per_device::run("foreign_launch_wait", &[("foreign_launch_wait", guarded)])
}

/// [`scenario`] on its own thread, failed at [`LIMIT`].
fn guarded(device: &Device) -> Result<(), String> {
    let (done, finished) = mpsc::channel();
    let device = device.clone();
    std::thread::spawn(move || {
        let _ = done.send(scenario(&device));
    });
    match finished.recv_timeout(LIMIT) {
        Ok(result) => result,
        Err(_) => Err(format!(
            "deadlock: still running after {} s (a thread waiting for another context's launch under the \
             one-launch chain's lock?)",
            LIMIT.as_secs()
        )),
    }
}

/// Context A fills USM behind a user event (the adapter's fill kernel for a
/// 3-byte pattern); another thread allocates USM in context B, whose zeroing
/// is a launch of the same kernel, waiting for A's; then this thread makes
/// and releases an in-order queue of A and only then completes the event.
fn scenario(device: &Device) -> Result<(), String> {
    let e = |e: cmdbuf_core::UrError| e.to_string();
    let a = Context::new(device).map_err(e)?;
    let b = context_apart(device)?;
    let queue = Queue::new(&a, QueueProperties::default()).map_err(e)?;
    let target = UsmAllocation::new(&a, UsmKind::Device, 300).map_err(e)?;
    let gate = UserEvent::new(&a).map_err(e)?;
    let gated = queue.usm_fill(target.ptr(), &[1, 2, 3], 300, &[gate.event()]).map_err(e)?;
    let other = std::thread::spawn(move || -> Result<(), String> {
        let queue = Queue::new(&b, QueueProperties::default()).map_err(e)?;
        let usm = UsmAllocation::new(&b, UsmKind::Device, 300).map_err(e)?;
        queue.usm_fill(usm.ptr(), &[4, 5, 6], 300, &[]).map_err(e)?.wait().map_err(e)
    });
    // Time for the other thread to reach its wait; if it has not, the test
    // passes without having raced (it cannot fail falsely).
    std::thread::sleep(Duration::from_millis(500));
    drop(Queue::new(&a, QueueProperties::default()).map_err(e)?);
    gate.complete().map_err(e)?;
    gated.wait().map_err(e)?;
    other.join().map_err(|_| "the other context's thread panicked".to_string())??;
    Ok(())
}

/// A context in a `cl_context` made for it alone, adopted as an
/// application's own: not the one the device's other contexts share.
fn context_apart(device: &Device) -> Result<Context, String> {
    let id = device.native_handle().map_err(|e| e.to_string())?.0 as cl3::types::cl_device_id;
    let raw = cl3::context::create_context(&[id], std::ptr::null(), None, std::ptr::null_mut())
        .map_err(|code| format!("clCreateContext: {code}"))?;
    // SAFETY: a live cl_context of this device whose one reference is handed
    // to the adopted context.
    unsafe { Context::from_native(device, NativeHandle(raw as u64), Ownership::Transferred) }.map_err(|e| e.to_string())
}
