//! One launch of a kernel at a time, for PoCL's CPU devices before 7.0.
//!
//! PoCL's CPU drivers cache a compiled work-group function per kernel, local
//! size, global-offset-is-zero and grid width, take a reference to the item
//! when a launch starts and drop it when the launch ends. Before 7.0 the
//! release looks the item up by kernel and local size only and takes the
//! first match, so when launches of one kernel overlap, a release can drop
//! another launch's reference and PoCL aborts in
//! `pocl_release_dlhandle_cache` (or, without assertions, leaks). PoCL 5.0
//! on 16 cores aborted even with overlapping launches of one shape only, so
//! the rule is the strict one.
//!
//! On such devices launches of one kernel name never overlap:
//! - inside a recorded command-buffer, a kernel command waits (by sync
//!   point) for the previous command of the same name ([`RecordedKernels`]);
//! - every enqueue that runs kernels (an eager launch, one native segment of
//!   a command-buffer) waits for the last launch of each of its kernels,
//!   process-wide since PoCL's cache is ([`enqueue_exclusive`]).
//!
//! Launches of one kernel are thus a chain: each waits for one event. The
//! extra waits only add order between commands that had none, so results
//! are unchanged; independent launches of one kernel no longer run side by
//! side (a CPU device spreads each launch's work-groups over its cores
//! anyway), and an eager launch can wait behind an earlier launch of the
//! same kernel that is itself waiting for a user event.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use cl3::types::cl_event;
use cmdbuf_core::Result;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::ffi::{RawEvent, cl_sync_point_khr};

/// The last launch of each kernel on affected devices.
static LAST_LAUNCH: Mutex<Option<HashMap<String, LastLaunch, BuildHasherDefault<NameHasher>>>> = Mutex::new(None);

/// FNV-1a over a kernel's name, which every eager launch looks up twice:
/// SipHash, the map's default, was about a twentieth of an eager launch's
/// instructions on PoCL, and its protection against keys crafted to collide
/// is not needed for kernel names, which the application's own programs
/// declare.
struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> NameHasher {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One kernel's last launch.
struct LastLaunch {
    /// Its context's address.
    context: usize,
    /// The address of the in-order application queue it was enqueued on, 0
    /// for any other queue (see [`enqueue_exclusive`]).
    in_order_queue: usize,
    event: RawEvent,
}

/// Enqueues something that runs `kernels` after `wait` and the last launch
/// of each of them, and makes its event their last launch.
///
/// `enqueue` gets the complete wait list and returns the enqueued event. The
/// lock is held across it, so that launches chain in one order. A last
/// launch of another context (the chain is process-wide, as PoCL's cache is)
/// cannot be in an OpenCL wait list of this one (`CL_INVALID_CONTEXT`): the
/// host waits for it instead, without the lock, then looks again. Held, the
/// lock would stop every PoCL launch and in-order queue release of the
/// process until that launch ends, which may be never: when it waits for a
/// user event whose thread is itself about to launch or release a queue
/// (issue 26).
///
/// `in_order` is the application's in-order queue the enqueue goes to, if
/// it does: a last launch enqueued on that same queue already comes before
/// it, as PoCL orders an in-order queue's commands by the same event
/// dependency, so neither its status is asked nor its event listed (a
/// driver call and a wait-list entry an eager chain would pay per launch).
/// [`forget_in_order_queue`] unmarks a queue's launches before the queue is
/// released, so that a new queue at the same address is never taken for it.
pub(crate) fn enqueue_exclusive<S: AsRef<str>>(
    context: cl3::types::cl_context,
    in_order: Option<cl3::types::cl_command_queue>,
    kernels: &[S],
    wait: &[cl_event],
    enqueue: impl FnOnce(&[cl_event]) -> Result<RawEvent>,
) -> Result<RawEvent> {
    if kernels.is_empty() {
        return enqueue(wait);
    }
    let queue_key = in_order.map_or(0, |q| q as usize);
    let mut guard = LAST_LAUNCH.lock();
    // Another context's pending last launches are waited for with the lock
    // released; one may have been enqueued meanwhile, so the loop ends only
    // when, under the lock, none is pending.
    while let Some(foreign) = guard.as_ref().and_then(|last| {
        kernels.iter().find_map(|name| {
            last.get(name.as_ref())
                .filter(|launch| launch.context != context as usize && !launch.event.is_done())
                .map(|launch| launch.event.retain())
        })
    }) {
        parking_lot::MutexGuard::unlocked(&mut guard, || {
            // Its queue may hold it unflushed.
            crate::flush::flush_pending();
            if let Err(code) = foreign.wait() {
                // A failed launch has ended too: only its end matters here.
                tracing::debug!(code, "PoCL: the last launch of another context failed");
            }
        });
    }
    let last = guard.get_or_insert_with(HashMap::default);
    let mut full: SmallVec<[cl_event; 8]> = SmallVec::from_slice(wait);
    for name in kernels {
        let pending = last
            .get(name.as_ref())
            .filter(|launch| launch.context == context as usize)
            .filter(|launch| queue_key == 0 || launch.in_order_queue != queue_key)
            .filter(|launch| !launch.event.is_done());
        if let Some(launch) = pending {
            full.push(launch.event.get());
        }
    }
    if full.len() > wait.len() {
        // The last launch may be another queue's, with eager commands not yet flushed.
        crate::flush::flush_pending();
        tracing::trace!(added = full.len() - wait.len(), "PoCL: after the previous launch of the same kernels");
    }
    let event = enqueue(&full)?;
    for name in kernels {
        let entry = LastLaunch { context: context as usize, in_order_queue: queue_key, event: event.retain() };
        match last.get_mut(name.as_ref()) {
            Some(previous) => *previous = entry,
            None => {
                last.insert(name.as_ref().to_owned(), entry);
            }
        }
    }
    Ok(event)
}

/// Forgets the last launches of `context`, which is going away: waits for
/// each (a later launch of the same kernel must still not overlap it) and
/// releases it while its context and device live. An event kept past them
/// is released into freed memory on PoCL when the device was a sub-device,
/// which PoCL frees with its last reference.
pub(crate) fn forget_context(context: cl3::types::cl_context) {
    forget_where(|launch| launch.context == context as usize, "a context going away");
}

/// Forgets the last launches enqueued on `queue`, a queue on a sub-device
/// of its context's device that is going away: as [`forget_context`], its
/// events must be released while the sub-device lives, which the context
/// (made on the parent) does not ensure.
pub(crate) fn forget_queue(queue: cl3::types::cl_command_queue) {
    // An event whose queue cannot be read is kept: it cannot be told apart,
    // and keeping it is what every other queue's event gets.
    let on_queue = |launch: &LastLaunch| {
        cl3::event::get_event_info(launch.event.get(), cl3::event::CL_EVENT_COMMAND_QUEUE)
            .is_ok_and(|info| info.to_ptr() == queue as isize)
    };
    forget_where(on_queue, "a sub-device queue going away");
}

/// Removes the last launches `belongs` picks once each has ended. A pending
/// one stays in the chain while the host waits for it with the lock
/// released, as [`enqueue_exclusive`] waits for another context's: the
/// chain still orders later launches of its kernel after it, and no other
/// launch or queue release of the process waits behind this wait.
fn forget_where(belongs: impl Fn(&LastLaunch) -> bool, owner: &'static str) {
    let mut guard = LAST_LAUNCH.lock();
    loop {
        let Some(last) = guard.as_mut() else { return };
        last.retain(|_, launch| !(belongs(launch) && launch.event.is_done()));
        let Some(pending) = last.values().find(|launch| belongs(launch)).map(|launch| launch.event.retain()) else {
            return;
        };
        parking_lot::MutexGuard::unlocked(&mut guard, || {
            if let Err(code) = pending.wait() {
                // A failed launch has ended too: only its end matters here.
                tracing::debug!(code, owner, "PoCL: a last launch failed");
            }
        });
    }
}

/// Unmarks the last launches enqueued on `queue`, an in-order application
/// queue about to be released (see [`enqueue_exclusive`]): they stay the
/// last launches, now waited for as any other queue's.
pub(crate) fn forget_in_order_queue(queue: cl3::types::cl_command_queue) {
    let mut guard = LAST_LAUNCH.lock();
    let Some(last) = guard.as_mut() else { return };
    for launch in last.values_mut().filter(|launch| launch.in_order_queue == queue as usize) {
        launch.in_order_queue = 0;
    }
}

/// The kernel commands recorded so far into one command-buffer segment.
#[derive(Debug, Default)]
pub(crate) struct RecordedKernels {
    /// Every name recorded, once: what an enqueue of the segment runs.
    pub(crate) names: Vec<String>,
    /// Per name, the last command recorded.
    last: HashMap<String, cl_sync_point_khr>,
}

impl RecordedKernels {
    /// The sync point a new command of `name` must also wait for.
    pub(crate) fn extra_dep(&self, name: &str) -> Option<cl_sync_point_khr> {
        self.last.get(name).copied()
    }

    /// Notes a command recorded after [`extra_dep`](Self::extra_dep).
    pub(crate) fn recorded(&mut self, name: &str, point: cl_sync_point_khr) {
        if self.last.insert(name.to_owned(), point).is_none() {
            self.names.push(name.to_owned());
        }
    }
}

/// Whether a device is a CPU device of PoCL before 7.0, given its platform
/// version (`OpenCL 3.0 PoCL 5.0+debian  Linux, ...`).
pub(crate) fn affected(platform_version: &str, cpu: bool) -> bool {
    let Some(rest) = platform_version.split("PoCL ").nth(1) else { return false };
    let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
    cpu && major.parse::<u32>().is_ok_and(|m| m < 7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_commands_chain_per_kernel() {
        let mut r = RecordedKernels::default();
        assert_eq!(r.extra_dep("k"), None);
        r.recorded("k", 1);
        r.recorded("other", 2);
        assert_eq!(r.extra_dep("k"), Some(1));
        r.recorded("k", 3);
        assert_eq!(r.extra_dep("k"), Some(3));
        assert_eq!(r.extra_dep("other"), Some(2));
        assert_eq!(r.names, ["k", "other"]);
    }

    #[test]
    fn only_cpu_devices_of_pocl_before_7_are_affected() {
        assert!(affected("OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC", true));
        assert!(affected("OpenCL 3.0 PoCL 5.0+debian  Linux, None+Asserts, RELOC", true));
        assert!(!affected("OpenCL 3.0 PoCL 7.0  Linux, Release", true));
        assert!(!affected("OpenCL 3.0 PoCL 5.0  Linux", false));
        assert!(!affected("OpenCL 3.0 CUDA 13.0.88", true));
    }
}
