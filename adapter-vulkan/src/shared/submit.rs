//! Submissions: one recorded primary command buffer (or none, for markers)
//! with its dependencies, its host-side copies and its event.
//!
//! [`schedule`] submits as soon as every dependency is resolved (its
//! timeline value is known), waiting for those values in `vkQueueSubmit`.
//! A submission with a host-side copy *into* staging memory (a write from
//! host memory) waits on the host until its dependencies are complete, since
//! the copy reads memory they may write; a host-side copy *out of* staging
//! runs on the lane's completion thread after the device part, and the
//! event completes after it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ash::vk;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::cmd::PooledCmd;
use crate::profiling::QuerySpan;
use crate::shared::event::{fail, run_waiters};
use crate::shared::host_work::{Checks, HostCopy, Keep, Kept};
use crate::shared::lane::wait_points;
use crate::shared::state::{Completion, EventCore, Lane, Waiter};

/// A submission being built.
pub(crate) struct Submission {
    pub(crate) lane: Arc<Lane>,
    pub(crate) deps: SmallVec<[Arc<EventCore>; 4]>,
    /// Copies from host memory into staging, made once `deps` are complete.
    pub(crate) pre: Vec<HostCopy>,
    pub(crate) cmd: Option<PooledCmd>,
    /// Command buffers submitted after `cmd`, in this order, kept alive by
    /// what `keep` holds: a reusable primary (not pending elsewhere, or
    /// recorded for simultaneous use) and what follows it.
    pub(crate) reused: SmallVec<[vk::CommandBuffer; 2]>,
    pub(crate) post: Vec<HostCopy>,
    pub(crate) queries: Option<QuerySpan>,
    pub(crate) keep: Keep,
    pub(crate) checks: Checks,
    pub(crate) inherit: Option<Arc<EventCore>>,
    pub(crate) out: Arc<EventCore>,
}

impl Submission {
    /// A submission on `lane` completing `out`.
    pub(crate) fn new(lane: Arc<Lane>, out: Arc<EventCore>) -> Submission {
        Submission {
            lane,
            deps: SmallVec::new(),
            pre: Vec::new(),
            cmd: None,
            reused: SmallVec::new(),
            post: Vec::new(),
            queries: None,
            keep: Keep::new(),
            checks: Checks::new(),
            inherit: None,
            out,
        }
    }

    pub(crate) fn with_cmd(mut self, cmd: PooledCmd) -> Submission {
        self.cmd = Some(cmd);
        self
    }
}

/// Submits `sub` once its dependencies allow; never blocks.
pub(crate) fn schedule(sub: Submission) {
    let needs_done = !sub.pre.is_empty();
    let deps: SmallVec<[Arc<EventCore>; 4]> = sub.deps.clone();
    struct Gate {
        remaining: AtomicUsize,
        sub: Mutex<Option<Submission>>,
    }
    impl Gate {
        fn arrive(&self) {
            if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
                && let Some(sub) = self.sub.lock().take()
            {
                launch(sub);
            }
        }
    }
    let gate = Arc::new(Gate { remaining: AtomicUsize::new(deps.len() + 1), sub: Mutex::new(Some(sub)) });
    for dep in deps {
        let g = gate.clone();
        let waiter: Waiter = Box::new(move || g.arrive());
        let ready = if needs_done { dep.when_done(waiter) } else { dep.when_resolved(waiter) };
        if let Some(waiter) = ready {
            waiter();
        }
    }
    gate.arrive();
}

/// Submits now: every dependency is resolved (complete, for host copies in).
fn launch(mut sub: Submission) {
    for copy in &sub.pre {
        // SAFETY: every dependency has completed, so nothing writes the host
        // memory now (the command's contract covers its validity), and the
        // staging memory is this submission's own.
        unsafe { copy.copy_in() };
    }
    let (waits, wait_values) = wait_points(&sub.deps);
    let cmds: SmallVec<[vk::CommandBuffer; 3]> =
        sub.cmd.as_ref().map(PooledCmd::raw).into_iter().chain(sub.reused.iter().copied()).collect();
    // The lanes waited on stay alive (with their semaphores) until this completes.
    sub.keep.push(Kept::Other(Box::new(waits)));
    let completion = Completion {
        out: sub.out.clone(),
        post: sub.post,
        queries: sub.queries,
        cmd: sub.cmd,
        keep: sub.keep,
        checks: sub.checks,
        inherit: sub.inherit,
    };
    match sub.lane.submit(&wait_values, &cmds, completion) {
        Ok(waiters) => run_waiters(waiters),
        Err(e) => fail(&sub.out, e),
    }
}
