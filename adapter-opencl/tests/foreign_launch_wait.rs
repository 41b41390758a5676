//! PoCL before 7.0 runs launches of one kernel one at a time, process-wide
//! (`src/one_launch.rs`): a launch waits for the last launch of the same
//! kernel, which the host waits for when it is another context's. That wait
//! once held the chain's lock, which every PoCL launch and every release of
//! an in-order queue takes: a context whose USM allocation (zeroed by the
//! adapter's fill kernel) waited behind another context's fill gated on a
//! user event stopped the thread that was to complete that event as soon as
//! it released a queue (issue 26).
//!
//! One test per OpenCL device (the scenario must not deadlock anywhere); a
//! deadlock fails it at the limit instead of hanging it. Without an OpenCL
//! device it is listed ignored with the reason, and fails when run anyway
//! or when `UR_RS_REQUIRE_DEVICES` names `opencl`.

use std::sync::mpsc;
use std::time::Duration;

use cmdbuf_core::{
    AdapterEntry, Context, Device, DeviceSelector, Loader, Queue, QueueProperties, UserEvent, UsmAllocation, UsmKind,
};
use cmdbuf_opencl::OpenClAdapterFactory;
use libtest_mimic::{Arguments, Failed, Trial};

/// How long the scenario may take before it counts as a deadlock.
const LIMIT: Duration = Duration::from_secs(120);

fn main() {
    let args = Arguments::from_args();
    let loader = Loader::load(&[AdapterEntry::Compiled(&OpenClAdapterFactory)], DeviceSelector::all());
    let mut trials = Vec::new();
    if loader.devices().is_empty() {
        let absent: Vec<&str> = loader.absent().iter().map(|a| a.reason.as_str()).collect();
        let why = format!("no OpenCL device ({})", absent.join("; "));
        let required = std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == "opencl"));
        println!("ignored foreign_launch_wait: {why}");
        trials.push(
            Trial::test("foreign_launch_wait", move || Err(Failed::from(format!("cannot run here: {why}"))))
                .with_ignored_flag(!required),
        );
    }
    for device in loader.devices() {
        let name = format!("foreign_launch_wait::{}", device.info().name);
        trials.push(Trial::test(name, move || guarded(device)));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// [`scenario`] on its own thread, failed at [`LIMIT`].
fn guarded(device: Device) -> Result<(), Failed> {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(scenario(&device));
    });
    match finished.recv_timeout(LIMIT) {
        Ok(result) => result.map_err(Failed::from),
        Err(_) => Err(Failed::from(format!(
            "deadlock: still running after {} s (a thread waiting for another context's launch under the \
             one-launch chain's lock?)",
            LIMIT.as_secs()
        ))),
    }
}

/// Context A fills USM behind a user event (the adapter's fill kernel for a
/// 3-byte pattern); another thread allocates USM in context B, whose zeroing
/// is a launch of the same kernel, waiting for A's; then this thread makes
/// and releases an in-order queue of A and only then completes the event.
fn scenario(device: &Device) -> Result<(), String> {
    let e = |e: cmdbuf_core::UrError| e.to_string();
    let a = Context::new(device).map_err(e)?;
    let b = Context::new(device).map_err(e)?;
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
