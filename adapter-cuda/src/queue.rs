//! Queues: an in-order queue is one stream; an out-of-order queue spreads its
//! commands over several streams, each command waiting only for its wait
//! list and the last barrier.
//!
//! Every submission records an event after its work (and, on profiling
//! queues, one before it). Wait lists become `cuStreamWaitEvent`s on issued
//! work. A submission that depends, directly or through other submissions,
//! on a user event not yet complete is held back on the host and issued when
//! that event completes (see `hold`): streams never wait for the host, so an
//! out-of-order queue's streams never block on work they do not depend on.
//!
//! A kernel launch whose dependencies are all issued, or handed to the
//! device's launcher, goes to the launcher (see `launcher`): the queue
//! prepares it and the launcher makes its driver calls. Anything the queue
//! issues itself first waits until its launches handed before are made.

use std::borrow::Cow;
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{NativeCommand, Ownership};
use cudarc::driver::sys;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::device::{DeviceShared, now_ns};
use crate::driver::{CuEvent, Stream, cu, stream_wait_event};
use crate::event::{Check, CudaEvent, CudaUserEvent, Issued, RunStatus, StreamClock, dep, timing_pair};
use crate::exec;
use crate::graph::{ExecGraph, native_graph};
use crate::hold::{Dep, Gate, Held, HeldJob, HeldList};
use crate::launcher::{Deferred, Launcher};
use crate::params::LaunchParams;

/// Streams an out-of-order queue has.
const OUT_OF_ORDER_STREAMS: usize = 4;

/// Events a queue takes from its device's pool at once (see
/// [`QueueState::events`]).
const EVENT_BATCH: usize = 32;

/// Work held back on the host until the events it waits for allow, for
/// every device of the adapter (see `hold`: why one list).
pub(crate) static HELD: Held<Job> = Held::new();

pub(crate) struct CudaQueue {
    core: Arc<QueueCore>,
}

/// A queue's state, shared with its held submissions.
pub(crate) struct QueueCore {
    pub(crate) dev: Arc<DeviceShared>,
    out_of_order: bool,
    pub(crate) profiling: bool,
    state: Mutex<QueueState>,
    /// For a queue adopted from a `CUstream`, who destroys the stream.
    adopted: Option<Ownership>,
}

#[derive(Default)]
struct QueueState {
    streams: Vec<Stream>,
    /// Round-robin position among the streams.
    next: usize,
    /// The last event issued on each stream.
    last: Vec<Option<Arc<CudaEvent>>>,
    /// What is known of each stream's completed work (see [`StreamClock`]).
    clocks: Vec<Arc<StreamClock>>,
    /// The newest submission of an in-order queue while it is held back on
    /// the host: what the next submission must not be issued before. Once
    /// issued work is the newest, the one stream orders what follows and
    /// nothing is kept here (an `Arc` clone and drop fewer per launch).
    tail: Option<Arc<CudaEvent>>,
    /// The last barrier of an out-of-order queue.
    barrier: Option<Arc<CudaEvent>>,
    /// Submissions held back on the host that may not be issued yet.
    held: Vec<Arc<CudaEvent>>,
    /// Events without timing for the next submissions, taken from the
    /// device's pool [`EVENT_BATCH`] at a time: a submission takes its end
    /// event here under the queue's lock, which it holds anyway, instead of
    /// locking the device's pool (an uncontended lock and unlock, 20-40 ns
    /// each on an H200's host, per eager launch: issue 31). Events come back
    /// to the device's pool when their command's event is dropped.
    events: Vec<Arc<CuEvent>>,
    /// The ticket of the queue's last launch handed to the device's
    /// launcher, while it may not be made yet; 0 when none is.
    deferred: u64,
    /// Whether a caller was given a stream of the queue: it may put work on
    /// it between our calls, so launches are no longer deferred (its work
    /// would overtake ours).
    exposed: bool,
    /// Kernel launches since the queue was last found idle (everything it
    /// issued known complete), and in the run before: see `defer`.
    run: u32,
    last_run: u32,
}

impl QueueState {
    /// The events stream `index` must wait on for `deps`: their end
    /// events, less the stream's own last one, which its order already
    /// puts first (an in-order queue's previous submission, a buffer's
    /// previous replay on the same queue): waiting on it again only costs
    /// a call.
    fn stream_waits<'d>(&self, index: usize, deps: &'d [Dep<'_>]) -> impl Iterator<Item = &'d Arc<CuEvent>> {
        let last = self.last[index].as_ref().map(|e| e.end().raw());
        deps.iter().filter_map(|d| d.end.as_deref()).filter(move |e| Some(e.raw()) != last)
    }

    /// Waits until the launcher has made every launch the queue handed it,
    /// before the queue puts anything on its streams itself.
    fn drain(&mut self, launcher: &Launcher) {
        if self.deferred != 0 {
            launcher.wait_made(self.deferred);
            self.deferred = 0;
        }
    }

    /// Adds the queue's own ordering to a submission's `deps`: a barrier
    /// comes after every stream's last work and every held submission,
    /// other work after the last barrier, and an in-order queue's work
    /// after its held tail. Owned: the state they are borrowed from changes
    /// as the submission is issued.
    fn order_deps(&self, order: &Order, deps: &mut SmallVec<[Dep<'_>; 4]>) {
        match order {
            Order::Barrier => {
                for last in self.last.iter().flatten() {
                    deps.push(last.dep(true).into_owned());
                }
                for held in &self.held {
                    deps.push(held.dep(true).into_owned());
                }
            }
            Order::Normal => {
                if let Some(barrier) = &self.barrier {
                    deps.push(barrier.dep(true).into_owned());
                }
            }
        }
        // An in-order queue's one stream orders its submissions once issued.
        if let Some(tail) = &self.tail {
            deps.push(tail.dep(false).into_owned());
        }
    }
}

/// What a submission waits for before its work.
pub(crate) enum Order {
    /// Its wait list (and the queue's own ordering).
    Normal,
    /// Also everything submitted before; everything after waits for it.
    Barrier,
}

/// What a submission does on its stream.
pub(crate) enum Work<'a> {
    /// Nothing: a marker, a barrier or a timestamp recording.
    Marker,
    /// An eager command.
    Command(Cow<'a, Command>),
    /// A launch of an executable graph.
    Launch(Launch),
}

/// A graph launch: a command buffer's submission, or a native command
/// captured while held.
pub(crate) struct Launch {
    pub(crate) exec: Arc<ExecGraph>,
    /// The submission's slot in its buffer's status ring.
    pub(crate) status: Option<Arc<RunStatus>>,
    /// A composition's: the slots of its parts whose kernels may report
    /// (empty, and no allocation, for a command buffer's own launch).
    pub(crate) parts_status: Vec<Arc<RunStatus>>,
    /// The buffer's signal events, recorded by the graph.
    pub(crate) signals: Vec<Arc<CudaEvent>>,
}

impl Work<'_> {
    fn into_owned(self) -> Work<'static> {
        match self {
            Work::Marker => Work::Marker,
            Work::Command(c) => Work::Command(Cow::Owned(c.into_owned())),
            Work::Launch(l) => Work::Launch(l),
        }
    }

    /// Issues the work on `stream`; returns what its event checks once complete.
    ///
    /// # Safety
    /// As for [`exec::issue`].
    unsafe fn issue(self, dev: &Arc<DeviceShared>, stream: sys::CUstream) -> Result<Option<Check>> {
        match self {
            Work::Marker => Ok(None),
            // SAFETY: the command is validated, its host memory valid until it completes and the
            // context bound (this function's `# Safety`), exactly `exec::issue`'s contract.
            Work::Command(command) => unsafe { exec::issue(dev, stream, &command) },
            Work::Launch(launch) => {
                // SAFETY: the executable graph is alive (the launch holds it)
                // and of this context; the stream is the queue's.
                unsafe { cu!(cuGraphLaunch(launch.exec.raw(), stream))? };
                // A clock read only for signal events, which time executions.
                if !launch.signals.is_empty() {
                    let now = now_ns();
                    for signal in &launch.signals {
                        signal.submitted_at(now);
                    }
                }
                if launch.parts_status.is_empty() {
                    Ok(launch.status.map(Check::Run))
                } else {
                    Ok(Some(Check::Runs(launch.parts_status)))
                }
            }
        }
    }
}

/// A submission held back on the host (see `hold`).
pub(crate) struct Job {
    queue: Arc<QueueCore>,
    deps: Vec<Dep<'static>>,
    work: Work<'static>,
    event: Arc<CudaEvent>,
    gate: Arc<Gate>,
    queued: u64,
}

// Jobs move to whichever thread opens the gate they wait for.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Job>();
};

impl HeldJob for Job {
    fn deps(&self) -> &[Dep<'_>] {
        &self.deps
    }

    fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Issues the job now that its dependencies allow, and opens its gate
    /// with the outcome (a failure is its event's).
    fn issue(self) {
        let Job { queue, deps, work, event, gate, queued } = self;
        let result = queue.dev.bind().and_then(|()| {
            let mut state = queue.state.lock();
            // SAFETY: as when the job was held: the front end keeps the
            // command's memory valid until its event completes.
            let (index, issued) =
                unsafe { queue.issue_locked(&mut state, &deps, work, event.end_shared(), event.start(), queued)? };
            event.issued(issued);
            state.last[index] = Some(event.clone());
            Ok(())
        });
        if let Err(e) = &result {
            tracing::warn!(error = %e, "issuing held CUDA work failed");
        }
        gate.open(result);
    }
}

impl QueueCore {
    /// Whether the queue runs its submissions in order, on one stream.
    pub(crate) fn in_order(&self) -> bool {
        !self.out_of_order
    }

    /// Submits work after `wait` (its stream waits for them) and `host_only`
    /// (events it must not be issued before, whose device work it does not
    /// wait for itself) and the queue's order: issued now when everything
    /// it depends on is issued, else held back until it is. Returns the
    /// work's event.
    ///
    /// # Safety
    /// As for [`exec::issue`] for a command; the work's memory stays valid
    /// until the event completes.
    pub(crate) unsafe fn submit(
        self: &Arc<Self>,
        wait: &[&dyn EventImpl],
        host_only: &[&dyn EventImpl],
        order: Order,
        profiling: bool,
        work: Work<'_>,
    ) -> Result<Arc<CudaEvent>> {
        // The context is bound only where this thread makes driver calls: a
        // launch handed to the launcher makes none here (`cuCtxGetCurrent`
        // included, which takes a lock the launcher's calls take too).
        let mut deps = wait_deps(wait, host_only)?;
        // Timing events are never pooled: made before the lock.
        let timing = if profiling {
            self.dev.bind()?;
            Some(timing_pair()?)
        } else {
            None
        };
        // Host times are only reported on profiling queues: no clock read otherwise.
        let queued = if profiling { now_ns() } else { 0 };
        let mut state = self.state.lock();
        let (end, start) = match timing {
            Some(pair) => pair,
            None => (self.plain_event(&mut state)?, None),
        };
        state.held.retain(|e| e.held_gate().is_some());
        state.order_deps(&order, &mut deps);
        // Dependencies without a gate were issued when looked up and stay
        // so: the submission is issued now without the device's held lock,
        // which only orders a decision to hold against a gate opening.
        let mut held = (!deps.iter().all(|d| d.gate.is_none())).then(|| HELD.lock());
        let is_held = held.is_some() && !deps.iter().all(Dep::is_open);
        let event = if is_held {
            let list = held.take().expect("held work took the lock");
            self.hold(list, deps, work, (end, start), queued)
        } else {
            drop(held);
            let deferred = match start {
                None => self.defer(&mut state, &deps, &work, &end),
                Some(_) => Ok(None),
            };
            let issued = match deferred {
                Ok(Some(issued)) => Ok(issued),
                // SAFETY: as `issue_locked` asks: validated work whose memory outlives its event (our
                // `# Safety`), context bound first.
                Ok(None) => self
                    .dev
                    .bind()
                    .and_then(|()| unsafe { self.issue_locked(&mut state, &deps, work, &end, start.as_ref(), queued) }),
                Err(e) => Err(e),
            };
            match issued {
                // Issued now: its event is made knowing where (see `Place`).
                Ok((index, issued)) => {
                    let event = Arc::new(CudaEvent::issued_now(end, start, issued));
                    state.last[index] = Some(event.clone());
                    event
                }
                Err(e) => {
                    self.dev.recycle_event(end);
                    return Err(e);
                }
            }
        };
        self.order_after(&mut state, &event, &order, is_held);
        Ok(event)
    }

    /// Holds work back in `list` (the adapter's held work, locked) until
    /// `deps` allow it to be issued: its event, and a graph launch's signal
    /// events, wait for the job's gate from now on.
    fn hold(
        self: &Arc<Self>,
        mut list: HeldList<'_, Job>,
        deps: SmallVec<[Dep<'_>; 4]>,
        work: Work<'_>,
        (end, start): (Arc<CuEvent>, Option<CuEvent>),
        queued: u64,
    ) -> Arc<CudaEvent> {
        let event = Arc::new(CudaEvent::command(&self.dev, end, start));
        let gate = Gate::new();
        event.hold(gate.clone());
        if let Work::Launch(launch) = &work {
            // The signal events stand for this execution from now on.
            for signal in &launch.signals {
                signal.hold(gate.clone());
            }
        }
        // Only held work owns its command (a clone).
        let job = Job {
            queue: self.clone(),
            deps: deps.into_iter().map(Dep::into_owned).collect(),
            work: work.into_owned(),
            event: event.clone(),
            gate,
            queued,
        };
        list.push(job);
        event
    }

    /// Makes a new submission's `event` what later ones are ordered after:
    /// an in-order queue's tail while it is held, an out-of-order queue's
    /// barrier, and one of the queue's held submissions while it is held.
    fn order_after(&self, state: &mut QueueState, event: &Arc<CudaEvent>, order: &Order, is_held: bool) {
        if !self.out_of_order {
            state.tail = is_held.then(|| event.clone());
        } else if matches!(order, Order::Barrier) {
            state.barrier = Some(event.clone());
        }
        if is_held {
            tracing::trace!("CUDA submission held back on the host");
            state.held.push(event.clone());
        }
    }

    /// Hands a kernel launch to the device's launcher when the queue and the
    /// launch allow (see `launcher`): where it will run and what its event
    /// must know, or `None` when the queue issues it itself. The launch
    /// must not be timed (its events would need host times around it), its
    /// dependencies must be issued or handed to the same launcher (whose
    /// order then makes them first), and the queue's stream must be its
    /// own: an adopted stream, or one a caller was given, takes the
    /// caller's work between ours. And the launcher must be awake (it
    /// stays so for a while after its last launch): otherwise the launch is
    /// made on the caller's thread, where it starts soonest, and when the
    /// queue has work in flight (more launches are likely to follow) the
    /// launcher is woken for the next. Nor is a launch handed over that
    /// finds the queue idle after a run of one launch: a launch waited for
    /// alone, in a loop, is made on the caller's thread (handed over, one
    /// launch waited for at once took 10.2 µs of wall time against 8.7 on
    /// an H200). A chain's launches after its first two go to the launcher,
    /// and so do all of the next chain's while it stays awake (a stream
    /// handed between threads twice per chain cost a chain of four 1.3x its
    /// time made on the caller's thread).
    fn defer(
        &self,
        state: &mut QueueState,
        deps: &[Dep<'_>],
        work: &Work<'_>,
        end: &Arc<CuEvent>,
    ) -> Result<Option<(usize, Issued)>> {
        let Work::Command(command) = work else { return Ok(None) };
        let Command::KernelLaunch(kernel) = &**command else { return Ok(None) };
        let launcher = &self.dev.launcher;
        if self.adopted.is_some() || state.exposed || !launcher.enabled() {
            return Ok(None);
        }
        if deps.iter().any(|d| d.pending.as_ref().is_some_and(|p| !std::ptr::eq(p.launcher, launcher))) {
            return Ok(None);
        }
        // Known complete without a driver call: waited for, or a later
        // record of its stream seen complete.
        let idle = state.last.iter().flatten().all(|e| e.known_done());
        if idle {
            state.last_run = state.run;
            state.run = 0;
        }
        state.run = state.run.saturating_add(1);
        // An idle queue whose last run was one launch (a launch waited for
        // alone, in a loop) makes its launch itself, where it starts soonest.
        let alone = idle && state.last_run <= 1;
        if alone || !launcher.ready() {
            // Work in flight: more launches are likely to come. The launcher
            // wakes for them while this one is made here.
            if !idle {
                launcher.rouse();
            }
            return Ok(None);
        }
        let params = LaunchParams::new(&self.dev, kernel, 0)?;
        // A kernel that may report needs its status word checked, and an
        // empty one launches nothing: the queue issues both itself.
        if params.empty || params.name.is_some() {
            return Ok(None);
        }
        let index = self.pick_stream(state);
        let stream = state.streams[index].raw();
        let waits = state.stream_waits(index, deps).cloned().collect();
        let Some(ticket) = launcher.defer(Deferred { stream, waits, params, end: end.clone() }) else {
            return Ok(None);
        };
        state.deferred = ticket;
        let clock = &state.clocks[index];
        let seq = clock.next(end, ticket);
        Ok(Some((index, Issued { clock: clock.clone(), seq, times: None, check: None, ticket })))
    }

    /// An event without timing from the queue's free list, refilled from
    /// the device's pool when empty.
    fn plain_event(&self, state: &mut QueueState) -> Result<Arc<CuEvent>> {
        if state.events.is_empty() {
            self.dev.plain_events(EVENT_BATCH, &mut state.events)?;
        }
        Ok(state.events.pop().expect("the free list was refilled"))
    }

    /// Issues work on a stream of the queue after `deps` and records its
    /// events, `end` after it and `start` (profiling) before: the stream's
    /// index, for the caller to make the work's event the stream's last,
    /// and what the event must know.
    ///
    /// # Safety
    /// As for [`submit`](Self::submit); the context is bound.
    unsafe fn issue_locked(
        &self,
        state: &mut QueueState,
        deps: &[Dep<'_>],
        work: Work<'_>,
        end: &Arc<CuEvent>,
        start: Option<&CuEvent>,
        queued: u64,
    ) -> Result<(usize, Issued)> {
        // Launches handed to the launcher before this work go first, and an
        // event is waited on only once its launch has recorded it.
        state.drain(&self.dev.launcher);
        for pending in deps.iter().filter_map(|d| d.pending.as_ref()) {
            pending.wait();
        }
        let index = self.pick_stream(state);
        let stream = state.streams[index].raw();
        for wait in state.stream_waits(index, deps) {
            stream_wait_event(stream, wait.raw())?;
        }
        if let Some(start) = start {
            start.record(stream)?;
        }
        // SAFETY: the work is validated, its memory stays valid until the event completes and the
        // context is bound (this function's `# Safety`): `Work::issue`'s contract, `exec::issue`'s.
        let check = unsafe { work.issue(&self.dev, stream)? };
        end.record(stream)?;
        let times = start.is_some().then(|| (queued, now_ns().max(queued)));
        let clock = &state.clocks[index];
        let seq = clock.next(end, 0);
        Ok((index, Issued { clock: clock.clone(), seq, times, check, ticket: 0 }))
    }

    /// The stream for the next submission: the only one of an in-order
    /// queue; on an out-of-order queue, a stream whose work is known to be
    /// done if there is one, else the next in turn. Known from what the
    /// streams' clocks have learnt, not asked of the driver: a
    /// `cuEventQuery` per submission cost 1.5 µs on an H200, a third of an
    /// eager launch (issue 31, item 3).
    fn pick_stream(&self, state: &mut QueueState) -> usize {
        if !self.out_of_order {
            return 0;
        }
        let n = state.streams.len();
        let index = (0..n)
            .map(|k| (state.next + k) % n)
            .find(|i| state.last[*i].as_ref().is_none_or(|e| e.known_done()))
            .unwrap_or(state.next % n);
        state.next = (index + 1) % n;
        index
    }
}

/// A submission's dependencies on its own events: its stream waits for the
/// device work of `wait`'s, and it is only not issued before `host_only`'s.
fn wait_deps<'a>(wait: &[&'a dyn EventImpl], host_only: &[&'a dyn EventImpl]) -> Result<SmallVec<[Dep<'a>; 4]>> {
    let mut deps: SmallVec<[Dep<'a>; 4]> = SmallVec::new();
    for event in wait {
        deps.push(dep(*event, true)?);
    }
    for event in host_only {
        deps.push(dep(*event, false)?);
    }
    Ok(deps)
}

impl Drop for QueueCore {
    fn drop(&mut self) {
        let state = self.state.get_mut();
        // The launcher's launches on the streams are made before the streams go.
        state.drain(&self.dev.launcher);
        // The free list's events, for submissions that will not come: back
        // to the device's pool.
        for event in state.events.drain(..) {
            self.dev.recycle_event(event);
        }
        for stream in state.streams.drain(..) {
            match self.adopted {
                None => self.dev.return_stream(stream),
                // The application's stream: not destroyed here.
                Some(Ownership::Shared) => std::mem::forget(stream),
                Some(Ownership::Transferred) => drop(stream),
            }
        }
    }
}

impl CudaQueue {
    pub(crate) fn new(dev: Arc<DeviceShared>, properties: QueueProperties) -> Result<CudaQueue> {
        dev.bind()?;
        let count = if properties.out_of_order { OUT_OF_ORDER_STREAMS } else { 1 };
        let streams = (0..count).map(|_| dev.take_stream()).collect::<Result<Vec<_>>>()?;
        let state =
            QueueState { streams, last: vec![None; count], clocks: clocks(&dev, count), ..QueueState::default() };
        Ok(CudaQueue {
            core: Arc::new(QueueCore {
                dev,
                out_of_order: properties.out_of_order,
                profiling: properties.profiling,
                state: Mutex::new(state),
                adopted: None,
            }),
        })
    }

    /// An in-order queue without profiling over an adopted stream of the
    /// device's primary context (checked by the caller).
    pub(crate) fn adopt(dev: Arc<DeviceShared>, stream: Stream, ownership: Ownership) -> CudaQueue {
        let state =
            QueueState { streams: vec![stream], last: vec![None], clocks: clocks(&dev, 1), ..QueueState::default() };
        let core = QueueCore {
            dev,
            out_of_order: false,
            profiling: false,
            state: Mutex::new(state),
            adopted: Some(ownership),
        };
        CudaQueue { core: Arc::new(core) }
    }

    /// The queue's state, for command-buffer submissions.
    pub(crate) fn core(&self) -> &Arc<QueueCore> {
        &self.core
    }

    /// [`QueueCore::submit`] with the queue's profiling and no host-only
    /// dependencies.
    ///
    /// # Safety
    /// As for [`QueueCore::submit`].
    unsafe fn submit(&self, wait: &[&dyn EventImpl], order: Order, work: Work<'_>) -> Result<Arc<CudaEvent>> {
        // SAFETY: the work's memory stays valid until its event completes (this function's `# Safety`,
        // `QueueCore::submit`'s), as `QueueCore::submit` requires.
        unsafe { self.core.submit(wait, &[], order, self.core.profiling, work) }
    }

    /// A marker after `wait` and the queue's order: where a collective's
    /// rank joins the queue (`nccl.rs`).
    ///
    /// # Safety
    /// The events of `wait` are of this queue's context, or of another
    /// context of this adapter.
    pub(crate) unsafe fn marker(&self, wait: &[&dyn EventImpl]) -> Result<Arc<CudaEvent>> {
        // SAFETY: a marker touches no memory.
        unsafe { self.submit(wait, Order::Normal, Work::Marker) }
    }

    /// A launch of `exec`, an executable graph of this queue's device, after
    /// `wait` and the queue's order: a captured collective (`nccl.rs`).
    ///
    /// # Safety
    /// As for [`marker`](Self::marker); the memory the graph reaches stays
    /// valid until the returned event completes.
    pub(crate) unsafe fn launch_graph(&self, exec: Arc<ExecGraph>, wait: &[&dyn EventImpl]) -> Result<Arc<CudaEvent>> {
        let launch = Launch { exec, status: None, signals: Vec::new(), parts_status: Vec::new() };
        // SAFETY: the graph's memory stays valid until the returned event completes (this function's
        // `# Safety`), and the graph launch is a `Work` whose memory `submit` asks exactly that of.
        unsafe { self.submit(wait, Order::Normal, Work::Launch(launch)) }
    }

    /// A native command: a marker after `wait` and the queue's order, a
    /// stream of its own waiting for the marker on which the callback
    /// enqueues its work, and a final submission after that stream, whose
    /// event is the command's. The callback runs without the queue's lock,
    /// so it may call the queue's methods. When the marker is held back on
    /// the host, the callback's work is captured into a graph instead, and
    /// the command is that graph's launch, held like any other submission.
    ///
    /// # Safety
    /// As for [`QueueImpl::enqueue`].
    unsafe fn native_command(&self, native: &NativeCommand, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let dev = &self.core.dev;
        // SAFETY: a marker touches no memory.
        let marker = unsafe { self.submit(wait, Order::Normal, Work::Marker)? };
        if marker.held_gate().is_some() {
            let exec = native_graph(dev, native)?;
            let launch = Launch { exec, status: None, signals: Vec::new(), parts_status: Vec::new() };
            // SAFETY: the graph holds the native work, whose memory the
            // command's contract keeps valid until its event completes.
            return Ok(unsafe { self.submit(&[&*marker], Order::Normal, Work::Launch(launch))? });
        }
        let stream = dev.take_stream()?;
        let raw = stream.raw();
        stream_wait_event(raw, marker.end().raw())?;
        // SAFETY: the stream waits for the command's dependencies, and the
        // final submission below waits for the stream.
        let result = unsafe { native.invoke(Backend::Cuda, NativeTarget::Queue(NativeHandle(raw as u64))) };
        dev.bind()?;
        let work = CudaEvent::new(dev, false)?;
        work.end().record(raw)?;
        dev.return_stream(stream);
        result?;
        // SAFETY: a marker touches no memory.
        Ok(unsafe { self.submit(&[&work], Order::Normal, Work::Marker)? })
    }
}

/// A clock for each of `count` new streams.
fn clocks(dev: &Arc<DeviceShared>, count: usize) -> Vec<Arc<StreamClock>> {
    (0..count).map(|_| Arc::new(StreamClock::new(dev))).collect()
}

impl QueueImpl for CudaQueue {
    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        if let Command::Native(native) = command {
            // SAFETY: this is `QueueImpl::enqueue`, whose contract (a validated command, host memory
            // valid until it completes) is `native_command`'s `# Safety`.
            return unsafe { self.native_command(native, wait) };
        }
        // SAFETY: the command was validated for this queue's context, its raw
        // host memory stays valid until its event completes (the trait's
        // contract), and `submit` binds the context.
        Ok(unsafe { self.submit(wait, Order::Normal, Work::Command(Cow::Borrowed(command)))? })
    }

    /// Unified addressing names every allocation of every device, so the
    /// copy is the eager `cuMemcpyAsync` on this queue's stream, which goes
    /// over the peer link once access is enabled. Events of the peer's
    /// contexts are `CudaEvent`s too: streams wait for events of any device.
    unsafe fn usm_copy_peer(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // SAFETY: the trait's `usm_copy_peer` contract is `enqueue`'s with one side on a peer whose
        // access is enabled; under unified addressing both sides are device addresses of live
        // allocations, which `enqueue`'s `cuMemcpyAsync` copies between (this method's doc).
        unsafe { self.enqueue(command, wait) }
    }

    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>> {
        let order = if barrier { Order::Barrier } else { Order::Normal };
        // SAFETY: a marker touches no memory.
        Ok(unsafe { self.submit(wait, order, Work::Marker)? })
    }

    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // Two timing events with nothing between them: the device time at
        // which the stream reached this point.
        // SAFETY: a marker touches no memory.
        let event = unsafe { self.core.submit(wait, &[], Order::Normal, true, Work::Marker)? };
        event.mark_recording();
        Ok(event)
    }

    fn finish(&self) -> Result<()> {
        // The last event of each stream and the held submissions, taken under
        // the lock and waited for outside it, so that other threads can go on
        // submitting (and complete the user events held work waits for).
        let events: Vec<Arc<CudaEvent>> = {
            let state = self.core.state.lock();
            state.last.iter().flatten().chain(&state.held).cloned().collect()
        };
        for event in events {
            // A command's own failure is its event's, not finish's.
            if let Some(gate) = event.held_gate() {
                let _ = gate.wait();
            }
            // Also tells the stream's clock, so that the front end's status
            // queries after `finish` need no driver call.
            event.synchronize()?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        // Work is handed to the device as it is submitted, or to the
        // device's launcher, which hands it on without being asked.
        Ok(())
    }

    /// The `CUstream` of the queue's first stream (an out-of-order queue
    /// has several; native commands get a stream of their own, the target).
    fn native_handle(&self) -> Result<NativeHandle> {
        let mut state = self.core.state.lock();
        // The caller may put work on the stream from now on, after ours.
        state.exposed = true;
        state.drain(&self.core.dev.launcher);
        Ok(NativeHandle(state.streams[0].raw() as u64))
    }
}

/// Completing a user event releases the work held back for it, which is the
/// queues': this is the user event's behaviour, above its definition in
/// `event.rs`.
impl CudaUserEvent {
    fn finish(&self, result: Result<()>) {
        // Whatever the outcome, waiters only order: held work goes on.
        if self.gate.open(result) {
            HELD.release();
        }
    }
}

impl Drop for CudaUserEvent {
    fn drop(&mut self) {
        // Nothing can complete it any more: release what waits for it.
        self.finish(Err(err!(InvalidOperation, "user event dropped")));
    }
}

impl UserEventImpl for CudaUserEvent {
    fn complete(&self, result: Result<()>) {
        self.finish(result);
    }
}
