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

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ash::vk;
use cmdbuf_core::HostPtr;
use cmdbuf_core::adapter::prelude::*;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::cmd::PooledCmd;
use crate::profiling::QuerySpan;
use crate::shared::event::{EventCore, run_waiters};
use crate::shared::{Lane, Point};

/// Host memory staged through host-visible memory: rows of
/// `(host offset, staging offset, length)`.
#[derive(Clone)]
pub(crate) struct HostCopy {
    pub(crate) host: HostPtr,
    pub(crate) staging: StagingPtr,
    pub(crate) rows: SmallVec<[(usize, usize, usize); 1]>,
}

/// The mapped address of staging memory.
#[derive(Copy, Clone)]
pub(crate) struct StagingPtr(pub(crate) *mut u8);

// SAFETY: an address of mapped memory that the submission holding it keeps
// alive; access is ordered by the submission's dependencies.
unsafe impl Send for StagingPtr {}
// SAFETY: as for Send.
unsafe impl Sync for StagingPtr {}

impl HostCopy {
    /// Copies host memory into staging.
    ///
    /// # Safety
    /// The host rows are readable (the command's contract) and the staging
    /// rows lie in live mapped memory nothing else uses now.
    pub(crate) unsafe fn copy_in(&self) {
        for &(h, s, n) in &self.rows {
            // SAFETY: the host rows are readable and the staging rows live mapped memory nothing else
            // uses (this function's `# Safety`); the two sides are distinct memory.
            unsafe { std::ptr::copy_nonoverlapping(self.host.as_ptr().add(h), self.staging.0.add(s), n) };
        }
    }

    /// Copies staging into host memory.
    ///
    /// # Safety
    /// As for [`copy_in`](Self::copy_in), with the host rows writable.
    pub(crate) unsafe fn copy_out(&self) {
        for &(h, s, n) in &self.rows {
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(self.staging.0.add(s), self.host.as_ptr().add(h), n) };
        }
    }
}

/// Status words of launches, checked once they have completed: a kernel
/// that set its word failed.
pub(crate) struct StatusCheck {
    /// The first of `count` consecutive 4-byte words.
    pub(crate) words: StagingPtr,
    pub(crate) count: usize,
    /// Which launch each word belongs to, for the error message.
    pub(crate) what: Launches,
}

/// The launches of a [`StatusCheck`]'s words.
pub(crate) enum Launches {
    /// One eager launch (one word) of this kernel: named only on failure,
    /// so that a launch makes no message.
    One(cmdbuf_core::Kernel),
    /// Kernel commands of a command buffer: word `k` is command
    /// `commands[k]`. The message is made only on failure, so that a
    /// submission costs nothing per kernel on the host.
    Commands { commands: Arc<[u32]>, names: Arc<KernelNames> },
}

/// The current kernel name of each command of a command buffer (empty for
/// other commands); an update that switches a command's kernel renames it.
pub(crate) type KernelNames = Mutex<Vec<Arc<str>>>;

impl StatusCheck {
    /// The failure of the first launch whose kernel reported one.
    ///
    /// # Safety
    /// The words are live mapped memory the completed launches wrote (if at all).
    unsafe fn failure(&self) -> Option<UrError> {
        let words = self.words.0.cast::<u32>();
        let (k, code) = (0..self.count).find_map(|k| {
            // SAFETY: the words are live mapped memory the completed launches wrote (this function's
            // `# Safety`); word `k` lies in the checked range, 4-byte aligned.
            let code = unsafe { words.add(k).read_volatile() };
            (code != 0).then_some((k, code))
        })?;
        let what = match &self.what {
            Launches::One(kernel) => format!("kernel `{}`", kernel.name()),
            Launches::Commands { commands, names } => {
                let i = commands[k];
                let name = names.lock().get(i as usize).cloned().unwrap_or_else(|| "?".into());
                format!("kernel `{name}` (command {i})")
            }
        };
        Some(cmdbuf_core::event::execution_error(
            cmdbuf_core::Backend::Vulkan,
            format!("{what} failed with code {code}"),
        ))
    }
}

/// What a submission keeps alive until it completes: inline for an eager
/// command's few objects (its argument block, its pipeline), so that a
/// command allocates no list for them.
pub(crate) type Keep = SmallVec<[Kept; 4]>;

/// One thing a submission keeps alive (held only to be dropped once it
/// completes). An eager launch's argument block and pipeline are held
/// unboxed: two allocations fewer per launch.
pub(crate) enum Kept {
    /// An arena slice: an argument block, staging.
    Slice(#[expect(dead_code, reason = "held for its drop")] crate::memory::Slice),
    /// A kernel's pipeline.
    Pipeline(#[expect(dead_code, reason = "held for its drop")] Arc<crate::program::Pipeline>),
    /// Anything else.
    Other(#[expect(dead_code, reason = "held for its drop")] Box<dyn Any + Send + Sync>),
}

/// Status words to check once a submission has completed: an eager
/// launch's one inline.
pub(crate) type Checks = SmallVec<[StatusCheck; 1]>;

/// What the completion thread does once a submission has finished.
pub(crate) struct Completion {
    pub(crate) out: Arc<EventCore>,
    /// Copies out of staging into host memory.
    pub(crate) post: Vec<HostCopy>,
    pub(crate) queries: Option<QuerySpan>,
    pub(crate) cmd: Option<PooledCmd>,
    pub(crate) keep: Keep,
    /// Status words of the kernels it ran.
    pub(crate) checks: Checks,
    /// An event whose failure this submission reports too (the stage before,
    /// in a command-buffer submission of several stages).
    pub(crate) inherit: Option<Arc<EventCore>>,
}

impl Completion {
    pub(crate) fn has_host_work(&self) -> bool {
        !self.post.is_empty() || !self.checks.is_empty()
    }

    /// Reads the timestamps, runs the host copies, completes the event and
    /// releases everything held.
    pub(crate) fn finish(self, mut result: Result<()>) {
        let times = if result.is_ok() { self.queries.as_ref().and_then(QuerySpan::read) } else { None };
        if result.is_ok() {
            // SAFETY: the words are kept alive by `keep` and were written by
            // the completed device work only.
            if let Some(e) = self.checks.iter().find_map(|c| unsafe { c.failure() }) {
                result = Err(e);
            } else if let Some(e) = self.inherit.as_ref().and_then(|e| e.error()) {
                result = Err(e);
            }
        }
        if result.is_ok() {
            for copy in &self.post {
                // SAFETY: the device part wrote the staging memory and has
                // completed; the host memory is valid until the event completes
                // (the command's contract), which happens below.
                unsafe { copy.copy_out() };
            }
        }
        let waiters = self.out.complete(result, times);
        // Release first: waiters may wait for memory this held to be reused.
        drop(self.cmd);
        drop(self.keep);
        drop(self.queries);
        run_waiters(waiters);
    }
}

/// A submission being built.
pub(crate) struct Submission {
    pub(crate) lane: Arc<Lane>,
    pub(crate) deps: SmallVec<[Arc<EventCore>; 4]>,
    /// Copies from host memory into staging, made once `deps` are complete.
    pub(crate) pre: Vec<HostCopy>,
    pub(crate) cmd: Option<PooledCmd>,
    /// A reusable primary command buffer submitted after `cmd`, kept alive
    /// (and not pending elsewhere) by what `keep` holds.
    pub(crate) reused: Option<vk::CommandBuffer>,
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
            reused: None,
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
        let waiter: crate::shared::event::Waiter = Box::new(move || g.arrive());
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
    let cmds: SmallVec<[vk::CommandBuffer; 2]> =
        sub.cmd.as_ref().map(PooledCmd::raw).into_iter().chain(sub.reused).collect();
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

/// Timeline values a submission waits for, one per lane.
pub(crate) type Points = SmallVec<[Point; 4]>;
/// The same as semaphore waits.
pub(crate) type SemaphoreWaits = SmallVec<[(vk::Semaphore, u64); 4]>;

/// The latest timeline value to wait for per lane, for resolved `deps`
/// (those complete or reached need no wait), and the same as semaphore waits.
pub(crate) fn wait_points(deps: &[Arc<EventCore>]) -> (Points, SemaphoreWaits) {
    let mut waits: SmallVec<[Point; 4]> = SmallVec::new();
    for dep in deps {
        if let Some(p) = dep.wait_point() {
            match waits.iter_mut().find(|w| Arc::ptr_eq(&w.lane, &p.lane)) {
                Some(w) => w.value = w.value.max(p.value),
                None => waits.push(p),
            }
        }
    }
    let values = waits.iter().map(|p| (p.lane.semaphore(), p.value)).collect();
    (waits, values)
}

/// Completes `out` with an error.
pub(crate) fn fail(out: &EventCore, error: UrError) {
    tracing::error!(%error, "a Vulkan submission failed");
    run_waiters(out.complete(Err(error), None));
}
