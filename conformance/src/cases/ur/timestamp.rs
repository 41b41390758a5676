//! Timestamp recordings (`urEnqueueTimestampRecordingExp`, UR's
//! `urEnqueueTimestampRecording.cpp`): an event timed on any queue, whose
//! start and end are the device time at which it ran — after its wait list
//! and, on an in-order queue, after the commands before it — on the clock of
//! the device's timestamp pairs.

use std::time::Duration;

use cmdbuf::{QueueProperties, UserEvent, UsmKind};

use crate::harness::{CaseResult, Env};
use crate::{Requires, cases, check, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["timestamp";
        between_global_timestamps,
        after_earlier_commands,
        after_earlier_commands_profiled => Requires::PROFILING,
        waits_for_its_wait_list,
        out_of_order_queue => Requires::OUT_OF_ORDER,
        wait_list_of_another_context,
    ]
}

/// As in the `device` group: the CUDA adapter's `f32` event times.
const SLACK_NS: u64 = 100_000;

/// Bytes of a fill long enough to be still running when the next command
/// is submitted.
const BIG: usize = 4 << 20;

/// On a queue that does not profile, the recording has times, between two
/// readings of the device's timestamp pair; queued and submit come first.
fn between_global_timestamps(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    // Once, so that the adapter's clock and queues are set up.
    queue.enqueue_timestamp(&[])?.wait()?;
    let before = env.device().global_timestamps()?;
    let stamp = queue.enqueue_timestamp(&[])?;
    stamp.wait()?;
    let after = env.device().global_timestamps()?;
    let p = stamp.profiling_info()?;
    check!(
        before.device <= p.start + SLACK_NS && p.end <= after.device + SLACK_NS,
        "device clock {} .. {}, the recording {p:?}",
        before.device,
        after.device
    );
    // The header's relation for a recording (UR's `common_check`): queued
    // and submit are both the call's time, start and end both the recorded
    // time, and the call does not come after the recording.
    check!(p.queued == p.submit && p.start == p.end && p.submit <= p.start, "{p:?}");
    check!(
        before.device <= p.submit + SLACK_NS,
        "called at {} after the device time {} read before",
        p.submit,
        before.device
    );
    Ok(())
}

/// On an in-order queue, the recording runs after the command before it
/// (through the device's timestamp pair on a queue without profiling).
fn after_earlier_commands(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Device, BIG)?;
    let first = queue.enqueue_timestamp(&[])?;
    let fill = queue.usm_fill(mem.ptr(), &[3], BIG, &[])?;
    let second = queue.enqueue_timestamp(&[])?;
    second.wait()?;
    check!(fill.status().is_terminal(), "the fill had not ended when the recording after it completed");
    let (a, b) = (first.profiling_info()?, second.profiling_info()?);
    check!(a.end <= b.start, "recordings out of order: {a:?} then {b:?}");
    Ok(())
}

/// On a profiling in-order queue, the recording starts no earlier than the
/// command before it ended.
fn after_earlier_commands_profiled(env: &Env) -> CaseResult {
    let queue = env.queue_with(QueueProperties { out_of_order: false, profiling: true })?;
    let mem = env.usm(UsmKind::Device, BIG)?;
    let fill = queue.usm_fill(mem.ptr(), &[5], BIG, &[])?;
    let stamp = queue.enqueue_timestamp(&[])?;
    stamp.wait()?;
    let (f, s) = (fill.profiling_info()?, stamp.profiling_info()?);
    check!(f.end <= s.start + SLACK_NS, "the fill ended at {}, the recording after it ran at {}", f.end, s.start);
    Ok(())
}

/// A recording waiting on a user event runs after the host completes it:
/// no times before, and times after the device time read before completing.
fn waits_for_its_wait_list(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let gate = UserEvent::new(env.context())?;
    let stamp = queue.enqueue_timestamp(&[gate.event()])?;
    std::thread::sleep(Duration::from_millis(20));
    check!(!stamp.status().is_terminal(), "the recording completed before its wait list");
    check_err!(stamp.profiling_info(), ProfilingInfoNotAvailable);
    let released = env.device().global_timestamps()?;
    gate.complete()?;
    stamp.wait()?;
    let p = stamp.profiling_info()?;
    check!(
        released.device <= p.start + SLACK_NS,
        "ran at {} before its wait list completed at {}",
        p.start,
        released.device
    );
    Ok(())
}

/// On an out-of-order queue, a recording waits for its wait list.
/// (Whether it may overtake a held command before it is not checked: PoCL
/// 3.1 runs nothing of an out-of-order queue past a command held by a user
/// event.)
fn out_of_order_queue(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let free = queue.enqueue_timestamp(&[])?;
    free.wait()?;
    let gate = UserEvent::new(env.context())?;
    let after = queue.enqueue_timestamp(&[gate.event()])?;
    std::thread::sleep(Duration::from_millis(10));
    check!(!after.status().is_terminal(), "the recording completed before its wait list");
    gate.complete()?;
    after.wait()?;
    check!(free.profiling_info()?.end <= after.profiling_info()?.start, "recordings out of order");
    Ok(())
}

/// A wait list with an event of another context is refused.
fn wait_list_of_another_context(env: &Env) -> CaseResult {
    let other = cmdbuf::Context::new(env.device())?;
    let foreign = UserEvent::new(&other)?;
    let queue = env.queue()?;
    let result = queue.enqueue_timestamp(&[foreign.event()]);
    foreign.complete()?;
    check_err!(result, InvalidEventWaitList);
    Ok(())
}
