//! A user event that the driver's callbacks complete once every event of a
//! list has completed: a command that waits for it waits for the list
//! without the driver seeing the list in its wait list. NVIDIA's OpenCL
//! holds a host copy back for a user event, where a wait for another
//! queue's command still running let it read or write the host memory out
//! of order (`exec::staged_svm_host_copy`).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use cl3::types::{cl_context, cl_event, cl_int};
use cmdbuf_core::Result;
use smallvec::SmallVec;

use crate::conv::ClResultExt;
use crate::ffi::{CL_COMPLETE, RawEvent, execution_status};

/// The user event and the arrivals it still waits for, shared with the
/// callbacks; the last arrival completes the event and frees this.
struct Gate {
    remaining: AtomicUsize,
    user: RawEvent,
}

/// A user event of `context` complete once every event of `wait` has
/// completed, or `None` when every one has already. The events of `wait`
/// are valid while this runs.
///
/// A failed command opens the gate where the driver calls back for it, as
/// OpenCL says it does for every status past `CL_COMPLETE`; PoCL 3.1 does not
/// call back for a user event failed with a negative status, which this
/// library never makes (its user events complete with `CL_COMPLETE` even
/// when the host fails them, `event.rs`).
pub(crate) fn after(context: cl_context, wait: &[cl_event]) -> Result<Option<RawEvent>> {
    // The driver calls back only for commands it was given to run.
    crate::flush::flush_pending();
    let pending: SmallVec<[cl_event; 4]> =
        wait.iter().copied().filter(|&event| execution_status(event) > CL_COMPLETE).collect();
    if pending.is_empty() {
        return Ok(None);
    }
    let user = cl3::event::create_user_event(context).cl("clCreateUserEvent (a gate)")?;
    // SAFETY: clCreateUserEvent returned a new reference.
    let user = unsafe { RawEvent::from_raw(user) };
    // One arrival per pending event and one for this function, so that the
    // gate outlives the registrations below.
    let gate = Box::into_raw(Box::new(Gate { remaining: AtomicUsize::new(pending.len() + 1), user: user.retain() }));
    for event in pending {
        if let Err(code) = cl3::event::set_event_callback(event, CL_COMPLETE, on_complete, gate.cast()) {
            // Without a callback this event cannot open the gate: count it
            // as arrived rather than hold the command forever.
            tracing::error!(code, "clSetEventCallback failed; the gate does not wait for that event");
            // SAFETY: `gate` is live (this function's own arrival is pending)
            // and this is the arrival counted for `event`.
            unsafe { arrive(gate) };
        }
    }
    // SAFETY: as above; this function's own arrival.
    unsafe { arrive(gate) };
    Ok(Some(user))
}

extern "C" fn on_complete(_event: cl_event, _status: cl_int, data: *mut c_void) {
    // SAFETY: `data` is the gate `after` registered, live until its last
    // arrival, and this is the arrival counted for this event's callback.
    unsafe { arrive(data.cast()) }
}

/// Counts one arrival; the last completes the user event and frees the gate.
///
/// # Safety
/// `gate` came from `after`'s `Box::into_raw` and has not been freed: this
/// arrival is one of those counted in `remaining`.
unsafe fn arrive(gate: *mut Gate) {
    // SAFETY: live until the count reaches 0, which only the last arrival sees.
    let last = unsafe { (*gate).remaining.fetch_sub(1, Ordering::AcqRel) } == 1;
    if last {
        // SAFETY: the last arrival owns the gate (no other arrival is left).
        let gate = unsafe { Box::from_raw(gate) };
        if let Err(code) = cl3::event::set_user_event_status(gate.user.get(), CL_COMPLETE) {
            tracing::error!(code, "clSetUserEventStatus failed on a gate");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context of the first OpenCL device, or `None` without one (a
    /// failure where `UR_RS_REQUIRE_DEVICES` names `opencl`, as CI sets it).
    fn any_context() -> Option<opencl3::context::Context> {
        let device = cl3::platform::get_platform_ids().ok().into_iter().flatten().find_map(|platform| {
            cl3::device::get_device_ids(platform, cl3::device::CL_DEVICE_TYPE_ALL).ok()?.first().copied()
        });
        let required = std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == "opencl"));
        match device {
            Some(id) => {
                Some(opencl3::context::Context::from_device(&opencl3::device::Device::new(id)).expect("context"))
            }
            None if required => panic!("no OpenCL device, and UR_RS_REQUIRE_DEVICES names opencl"),
            None => None,
        }
    }

    fn user_event(context: &opencl3::context::Context) -> RawEvent {
        let raw = cl3::event::create_user_event(context.get()).expect("clCreateUserEvent");
        // SAFETY: a new reference.
        unsafe { RawEvent::from_raw(raw) }
    }

    #[test]
    fn opens_once_every_event_has_completed() {
        let Some(context) = any_context() else {
            eprintln!("no OpenCL device: the gate is not exercised");
            return;
        };
        let (first, second, done) = (user_event(&context), user_event(&context), user_event(&context));
        cl3::event::set_user_event_status(done.get(), CL_COMPLETE).expect("complete");
        assert!(after(context.get(), &[done.get()]).expect("gate").is_none(), "a gate over complete events");
        let gate = after(context.get(), &[first.get(), done.get(), second.get()]).expect("gate").expect("pending");
        assert!(!gate.is_done(), "open before any event completed");
        cl3::event::set_user_event_status(first.get(), CL_COMPLETE).expect("complete");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!gate.is_done(), "open with one event still pending");
        cl3::event::set_user_event_status(second.get(), CL_COMPLETE).expect("complete");
        gate.wait().expect("the gate opens");
        assert_eq!(gate.execution_status(), CL_COMPLETE);
    }
}
