//! Native command buffers: a pre-built DAG run with dependency counters.
//!
//! Appends build the DAG ([`CpuCommandBuffer`], the recording); finalize
//! plans it and returns [`CpuExecutable`], which runs and updates it.
//!
//! Each enqueue creates a run over an immutable snapshot of the graph, so an
//! update never reaches a submission in flight. An update costs what it
//! changes, however large the graph: it edits the graph in place when no run
//! holds it, and otherwise queues the change, which the next enqueue applies
//! (copying the graph first only if a run still holds it then). A run starts
//! when its wait list, the previous run of the same buffer and the queue's
//! ordering allow; then every node whose counter (predecessors plus
//! unfinished wait events) reaches zero runs. A worker that finishes a node runs the first successor it makes ready itself
//! and hands the others to the pool, so chains run without scheduling.
//!
//! When a node fails (a kernel panics), the rest of the run is skipped and
//! the run's event reports the error; later runs start afresh.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cmdbuf_core::NativeKernelFn;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::{ComposePart, ComposeWork};
use cmdbuf_core::event::execution_error;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::event::CpuEvent;
use crate::exec;
use crate::pool::{Pool, RawTask, Task};
use crate::queue::{CpuQueue, cpu_events};

#[derive(Clone)]
struct Node {
    command: Command,
    successors: SmallVec<[u32; 4]>,
    predecessors: u32,
    wait_events: Vec<Event>,
    signal: Option<Arc<CpuEvent>>,
    /// Ready as soon as its one predecessor finishes: no counter to decrement.
    sole_predecessor: bool,
    /// The kernel's function, looked up at finalize and update.
    func: Option<NativeKernelFn>,
    /// Its dependency counter in a run ([`Run::counters`]), for nodes that
    /// count ([`Graph::plan`]); [`NO_SLOT`] for the others.
    counter: u32,
    /// Its signal event's generation in a run ([`Run::generations`]), for
    /// nodes with a signal event; [`NO_SLOT`] for the others.
    generation: u32,
}

/// The `counter` or `generation` of a node that has none.
const NO_SLOT: u32 = u32::MAX;

/// What running a node takes, decided at finalize and update and kept apart
/// from the nodes so that a replay walks a small array.
#[derive(Clone, Copy)]
struct Step {
    /// The function of a kernel that runs as a direct call
    /// ([`exec::direct_fn`]), when the node has no signal event.
    direct: Option<NativeKernelFn>,
    /// The node to run next on the same thread with no counting: the only
    /// successor, when this node is its only predecessor; else [`NO_NEXT`].
    next: u32,
}

/// The `next` of a node whose successors are not a chain's next link.
const NO_NEXT: u32 = u32::MAX;

#[derive(Clone, Default)]
struct Graph {
    nodes: Vec<Node>,
    /// One per node.
    steps: Vec<Step>,
    /// The counters' values at the start of a run, one per node that counts
    /// (its `counter` slot): its predecessors, plus one for nodes with wait
    /// events, held until their events are registered. Only nodes with wait
    /// events or with several predecessors count: a root is ready at the
    /// start and a node with one predecessor when that one finishes, so a
    /// chain (an in-order buffer) has no counter, and a run allocates and
    /// copies counters for the joins of the graph, not for every node.
    initial_counters: Vec<u32>,
    /// Nodes with neither predecessors nor wait events.
    roots: Vec<u32>,
    /// Nodes with wait events.
    waiting: Vec<u32>,
    /// Nodes with signal events (fixed once finalized: an update may only
    /// replace the event of a command appended with one).
    signals: Vec<u32>,
    /// Nodes whose command does not run on one thread
    /// ([`exec::single_threaded`]); while there are none, the host thread
    /// waiting for a run may run it.
    multi_threaded: usize,
}

impl Graph {
    /// Derives the start state of a run from the topology, which is fixed
    /// once finalized (wait-event updates keep each node's count).
    fn plan(&mut self) {
        self.initial_counters.clear();
        self.roots.clear();
        self.waiting.clear();
        self.signals.clear();
        self.steps.clear();
        self.multi_threaded = 0;
        for (index, node) in self.nodes.iter_mut().enumerate() {
            if node.signal.is_some() {
                self.signals.push(index as u32);
            }
            let waits = !node.wait_events.is_empty();
            node.sole_predecessor = node.predecessors == 1 && !waits;
            node.generation = match node.signal {
                Some(_) => (self.signals.len() - 1) as u32,
                None => NO_SLOT,
            };
            node.counter = NO_SLOT;
            if waits || node.predecessors > 1 {
                node.counter = self.initial_counters.len() as u32;
                self.initial_counters.push(node.predecessors + u32::from(waits));
            }
            node.func = exec::kernel_fn(&node.command);
            self.multi_threaded += usize::from(!exec::single_threaded(&node.command));
            self.steps.push(Step { direct: None, next: NO_NEXT });
            if waits {
                self.waiting.push(index as u32);
            } else if node.predecessors == 0 {
                self.roots.push(index as u32);
            }
        }
        for index in 0..self.nodes.len() {
            self.restep(index);
        }
    }

    /// Derives node `index`'s step (after finalize, or an update of it).
    fn restep(&mut self, index: usize) {
        let node = &self.nodes[index];
        let direct = if node.signal.is_none() { exec::direct_fn(&node.command) } else { None };
        let next = match node.successors.as_slice() {
            &[only] if self.nodes[only as usize].sole_predecessor => only,
            _ => NO_NEXT,
        };
        self.steps[index] = Step { direct, next };
    }
}

/// An update of one node.
enum Change {
    Command(Command),
    Signal(Arc<CpuEvent>),
    WaitEvents(Vec<Event>),
}

impl Change {
    fn apply(self, graph: &mut Graph, index: u32) {
        let node = &mut graph.nodes[index as usize];
        let multi_threaded = |node: &Node| usize::from(!exec::single_threaded(&node.command));
        let before = multi_threaded(node);
        match self {
            Change::Command(command) => {
                node.func = exec::kernel_fn(&command);
                node.command = command;
            }
            Change::Signal(signal) => node.signal = Some(signal),
            Change::WaitEvents(events) => node.wait_events = events,
        }
        let after = multi_threaded(node);
        // Only a finalized (planned) graph is updated: its steps exist.
        graph.multi_threaded = graph.multi_threaded + after - before;
        graph.restep(index as usize);
    }
}

/// A CPU command buffer being recorded: the graph, not yet planned.
pub(crate) struct CpuCommandBuffer {
    pool: Arc<Pool>,
    graph: Graph,
    profiling: bool,
}

impl CpuCommandBuffer {
    pub(crate) fn new(pool: Arc<Pool>, desc: CommandBufferDesc) -> CpuCommandBuffer {
        CpuCommandBuffer { pool, graph: Graph::default(), profiling: desc.profiling }
    }
}

/// A finalized CPU command buffer: the planned graph, which each run
/// snapshots.
struct CpuExecutable {
    pool: Arc<Pool>,
    graph: Arc<Graph>,
    /// Updates made while a run held the graph, in order, for the next enqueue.
    pending: Vec<(u32, Change)>,
    previous: Option<Arc<CpuEvent>>,
    profiling: bool,
}

impl CpuExecutable {
    /// Applies `change` to node `index` now if no run holds the graph, else
    /// at the next enqueue: copying the graph here would make an update cost
    /// the whole graph.
    fn change(&mut self, index: u32, change: Change) {
        match Arc::get_mut(&mut self.graph) {
            Some(graph) => {
                for (i, earlier) in self.pending.drain(..) {
                    earlier.apply(graph, i);
                }
                change.apply(graph, index);
            }
            None => self.pending.push((index, change)),
        }
    }

    /// Applies the queued updates before a run takes its snapshot.
    fn apply_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        // A run completes its event before its worker lets go of the graph:
        // once the previous run is done, its hold ends within moments, so
        // wait for that rather than copy the whole graph. A run still going
        // (an enqueue behind one in flight) is worth the copy.
        if self.previous.as_ref().is_some_and(|p| p.is_done()) {
            let start = Instant::now();
            while Arc::get_mut(&mut self.graph).is_none() && start.elapsed() < RELEASE_WAIT {
                std::thread::yield_now();
            }
        }
        if Arc::get_mut(&mut self.graph).is_none() {
            tracing::debug!(nodes = self.graph.nodes.len(), "a run still holds the graph: updates copy it");
        }
        let graph = Arc::make_mut(&mut self.graph);
        for (i, change) in self.pending.drain(..) {
            change.apply(graph, i);
        }
    }
}

/// The composition of `parts` ([`ContextImpl::compose_command_buffers`](cmdbuf_core::adapter::ContextImpl::compose_command_buffers)):
/// one DAG of the parts' nodes, each part's first nodes after the last
/// nodes of the parts it follows, a peer copy a node of its own (CPU memory
/// is the process's); run on `pool` like any command buffer of this adapter,
/// so one submission runs it all.
///
/// Parts with signal or wait events are `UnsupportedFeature`: their events
/// belong to the part's own runs.
pub(crate) fn compose(pool: Arc<Pool>, parts: &mut [ComposePart<'_>]) -> Result<Box<dyn ExecutableCommandBufferImpl>> {
    let mut graph = Graph::default();
    // The nodes a part after part `i` waits for: its last nodes, or, for a
    // part with no nodes, what it waited for itself.
    let mut exits: Vec<Vec<u32>> = Vec::with_capacity(parts.len());
    for (index, part) in parts.iter_mut().enumerate() {
        let mut entry: Vec<u32> = part.after.iter().flat_map(|a| exits[*a as usize].iter().copied()).collect();
        entry.sort_unstable();
        entry.dedup();
        let base = graph.nodes.len() as u32;
        match &mut part.work {
            ComposeWork::CommandBuffer { executable, .. } => {
                let executable = (&mut **executable as &mut dyn Any)
                    .downcast_mut::<CpuExecutable>()
                    .ok_or_else(|| err!(UnsupportedFeature, "part {index}: not a command buffer of this adapter"))?;
                executable.apply_pending();
                let source = &*executable.graph;
                if source.nodes.iter().any(|n| n.signal.is_some() || !n.wait_events.is_empty()) {
                    return Err(err!(
                        UnsupportedFeature,
                        "part {index}: a command buffer with signal or wait events cannot be composed"
                    ));
                }
                if source.nodes.is_empty() {
                    exits.push(entry);
                    continue;
                }
                for node in &source.nodes {
                    let mut node = node.clone();
                    node.successors = node.successors.iter().map(|s| s + base).collect();
                    graph.nodes.push(node);
                }
                let count = source.nodes.len() as u32;
                for local in 0..count {
                    let at = (base + local) as usize;
                    if graph.nodes[at].predecessors == 0 {
                        graph.nodes[at].predecessors = entry.len() as u32;
                        for e in &entry {
                            graph.nodes[*e as usize].successors.push(base + local);
                        }
                    }
                }
                exits.push((base..base + count).filter(|n| graph.nodes[*n as usize].successors.is_empty()).collect());
            }
            ComposeWork::PeerCopy { command, .. } => {
                for e in &entry {
                    graph.nodes[*e as usize].successors.push(base);
                }
                graph.nodes.push(Node {
                    command: (*command).clone(),
                    successors: SmallVec::new(),
                    predecessors: entry.len() as u32,
                    wait_events: Vec::new(),
                    signal: None,
                    sole_predecessor: false,
                    func: None,
                    counter: NO_SLOT,
                    generation: NO_SLOT,
                });
                exits.push(vec![base]);
            }
            ComposeWork::Collective { .. } => {
                // The front end gives captured collectives only, and this
                // adapter captures none.
                return Err(err!(UnsupportedFeature, "part {index}: the CPU adapter has no captured collectives"));
            }
        }
    }
    graph.plan();
    tracing::debug!(parts = parts.len(), nodes = graph.nodes.len(), "CPU command buffers composed");
    Ok(Box::new(CpuExecutable { pool, graph: Arc::new(graph), pending: Vec::new(), previous: None, profiling: false }))
}

/// How long an enqueue with pending updates waits for a completed run to
/// release the graph before copying it.
const RELEASE_WAIT: Duration = Duration::from_micros(200);

impl RecordingCommandBufferImpl for CpuCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        _alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let graph = &mut self.graph;
        let index = graph.nodes.len() as u32;
        for d in deps {
            graph.nodes[*d as usize].successors.push(index);
        }
        let signal = signal.then(|| CpuEvent::signal(self.profiling));
        graph.nodes.push(Node {
            command: command.clone(),
            successors: SmallVec::new(),
            predecessors: deps.len() as u32,
            wait_events: wait_events.to_vec(),
            signal: signal.clone(),
            sole_predecessor: false,
            func: None,
            counter: NO_SLOT,
            generation: NO_SLOT,
        });
        Ok(signal.map(|s| s as Arc<dyn EventImpl>))
    }

    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        let CpuCommandBuffer { pool, mut graph, profiling } = *self;
        graph.plan();
        tracing::debug!(nodes = graph.nodes.len(), roots = graph.roots.len(), "CPU command buffer finalized");
        Ok(Box::new(CpuExecutable { pool, graph: Arc::new(graph), pending: Vec::new(), previous: None, profiling }))
    }
}

impl ExecutableCommandBufferImpl for CpuExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<CpuQueue>(queue as &dyn Any, "the queue")?;
        cpu_events(wait)?;
        self.apply_pending();
        let done = CpuEvent::pending(queue.profiling());
        // One generation per signal event and one counter per counting
        // node (`Node::generation`, `Node::counter`): a graph with neither
        // (an in-order buffer without events) allocates and copies nothing
        // per node here.
        let nodes = &self.graph.nodes;
        let generations: Vec<u64> =
            self.graph.signals.iter().map(|&i| nodes[i as usize].signal.as_ref().map_or(0, |s| s.rearm())).collect();
        let run = Arc::new(Run {
            graph: self.graph.clone(),
            generations,
            counters: self.graph.initial_counters.iter().map(|c| AtomicU32::new(*c)).collect(),
            remaining: AtomicUsize::new(self.graph.nodes.len()),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            done: done.clone(),
            pool: self.pool.clone(),
        });
        let previous = self.previous.clone();
        let mut deps: SmallVec<[&dyn EventImpl; 8]> = SmallVec::from_slice(wait);
        deps.extend(previous.as_deref().map(|e| e as &dyn EventImpl));
        let pool = queue.pool().clone();
        let claimable = self.graph.multi_threaded == 0;
        let event = done.clone();
        let start = move || {
            if claimable {
                event.spawn_claimable(&pool, Box::new(move |_| run.start()))
            } else {
                pool.spawn(move || run.start())
            }
        };
        queue.schedule(&deps, &done, false, Box::new(start))?;
        self.previous = Some(done.clone());
        Ok(done)
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        for u in updates {
            self.change(u.command, Change::Command(Command::KernelLaunch(u.launch.clone())));
        }
        Ok(())
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        let signal = CpuEvent::signal(self.profiling);
        self.change(command, Change::Signal(signal.clone()));
        Ok(signal)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.change(command, Change::WaitEvents(events.to_vec()));
        Ok(())
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(Arc::as_ptr(&self.graph) as u64))
    }
}

/// The `list` of a span of the roots.
const ROOTS: u32 = u32::MAX;
/// The `list` of a span that is one node made ready by a wait event.
const READY: u32 = u32::MAX - 1;

/// One execution of a graph snapshot.
struct Run {
    graph: Arc<Graph>,
    /// The generation each signal event was armed with, by the node's
    /// `generation` slot (empty when no node has one).
    generations: Vec<u64>,
    /// The dependency counters, by the node's `counter` slot (empty when no
    /// node counts).
    counters: Box<[AtomicU32]>,
    remaining: AtomicUsize,
    /// Set once a node fails; the error is in `failure`.
    failed: AtomicBool,
    failure: Mutex<Option<UrError>>,
    done: Arc<CpuEvent>,
    pool: Arc<Pool>,
}

impl Run {
    /// Registers the wait events and runs the nodes that are ready.
    fn start(self: Arc<Self>) {
        self.done.start(1);
        if self.graph.nodes.is_empty() {
            self.done.finish(1, Ok(()));
            return;
        }
        for &index in &self.graph.waiting {
            let node = &self.graph.nodes[index as usize];
            for event in node.wait_events.iter().filter_map(EventBacking::resolve) {
                let Some(event) = (&*event as &dyn Any).downcast_ref::<CpuEvent>() else {
                    self.fail(cmdbuf_core::err!(
                        InvalidEvent,
                        "a wait event of command {index} belongs to another adapter"
                    ));
                    continue;
                };
                if !event.is_done() {
                    self.counter(node).fetch_add(1, Ordering::Relaxed);
                    let run = self.clone();
                    event.on_complete(Box::new(move || run.release(index)));
                }
            }
            // Drop the count that held the node back while registering.
            self.release(index);
        }
        let roots = self.graph.roots.len() as u32;
        self.run_span(ROOTS, 0, roots);
    }

    /// The counter of `node`, one that counts (waits for events or for
    /// several predecessors).
    fn counter(&self, node: &Node) -> &AtomicU32 {
        &self.counters[node.counter as usize]
    }

    /// One dependency of `index` completed.
    fn release(self: &Arc<Self>, index: u32) {
        if self.counter(&self.graph.nodes[index as usize]).fetch_sub(1, Ordering::AcqRel) == 1 {
            self.spawn_span(READY, index, index + 1);
        }
    }

    /// Hands a span to the pool; the task holds a reference to the run. A
    /// span that will split into several pieces wakes as many parked
    /// workers at once.
    fn spawn_span(self: &Arc<Self>, list: u32, lo: u32, hi: u32) {
        let data = Arc::into_raw(self.clone()).cast::<()>();
        let pieces = (hi - lo).div_ceil(self.grain(list)) as usize;
        self.pool.push_burst(Task::Raw(RawTask { run: Run::span_task, data, a: list, b: lo, c: hi }), pieces);
    }

    /// The nodes of span list `list` (see [`Run::run_span`]).
    fn span_nodes(&self, list: u32) -> &[u32] {
        match list {
            ROOTS => &self.graph.roots,
            READY => &[],
            node => &self.graph.nodes[node as usize].successors,
        }
    }

    /// The length under which a span of `list` runs without splitting: a
    /// few spans per worker.
    fn grain(&self, list: u32) -> u32 {
        (self.span_nodes(list).len() / (self.pool.threads() * 4)).max(1) as u32
    }

    /// # Safety
    /// `data` is a reference to a `Run` leaked by [`Run::spawn_span`], used once.
    unsafe fn span_task(data: *const (), list: u32, lo: u32, hi: u32) {
        // SAFETY: from `Arc::into_raw` in `spawn_span`, reclaimed only here.
        let run = unsafe { Arc::from_raw(data.cast::<Run>()) };
        run.run_span(list, lo, hi);
    }

    /// The nodes of a span: the roots (`ROOTS`), one ready node (`READY`),
    /// or the successors of node `list`, each released here. A long span is
    /// split in halves handed to the pool, down to a few spans per worker,
    /// so that a wide DAG costs a few tasks per worker instead of one per
    /// node; each ready node then runs its chain on this worker.
    fn run_span(self: &Arc<Self>, list: u32, lo: u32, mut hi: u32) {
        let nodes = self.span_nodes(list);
        let grain = self.grain(list);
        while hi - lo > grain {
            let mid = lo + (hi - lo) / 2;
            self.spawn_span(list, mid, hi);
            hi = mid;
        }
        let mut finished = 0;
        for i in lo..hi {
            let index = match list {
                ROOTS => nodes[i as usize],
                READY => i,
                _ => {
                    let s = nodes[i as usize];
                    let successor = &self.graph.nodes[s as usize];
                    if !successor.sole_predecessor && self.counter(successor).fetch_sub(1, Ordering::AcqRel) != 1 {
                        continue;
                    }
                    s
                }
            };
            finished += self.run_chain(index);
        }
        self.account(finished);
    }

    fn fail(&self, error: UrError) {
        self.failure.lock().get_or_insert(error);
        self.failed.store(true, Ordering::Release);
    }

    /// Counts `finished` nodes done; the last completes the run.
    fn account(&self, finished: usize) {
        // Nodes are counted per task: one atomic operation however many ran.
        if finished > 0 && self.remaining.fetch_sub(finished, Ordering::AcqRel) == finished {
            let failure = self.failure.lock().take();
            self.done.finish(1, failure.map_or(Ok(()), Err));
        }
    }

    /// Runs `index`, then keeps running the first successor it makes ready;
    /// returns how many nodes ran. A chain's links ([`Step::next`]) and
    /// direct kernel calls take no atomic operation and no queue.
    fn run_chain(self: &Arc<Self>, mut index: u32) -> usize {
        let mut finished = 0;
        loop {
            let step = self.graph.steps[index as usize];
            let node = &self.graph.nodes[index as usize];
            finished += 1;
            match (step.direct, &node.command) {
                (Some(func), Command::KernelLaunch(launch)) if !self.failed.load(Ordering::Acquire) => {
                    // SAFETY: validated when appended (or updated); every
                    // predecessor and wait event has completed.
                    if let Err(error) = unsafe { exec::run_direct(launch, func) } {
                        self.fail(error);
                    }
                }
                _ => self.run_node(node),
            }
            if step.next != NO_NEXT {
                index = step.next;
                continue;
            }
            // The first successor is released here; more than one, the rest
            // go to the pool as a span.
            let Some(&first) = node.successors.first() else { break };
            if node.successors.len() > 1 {
                self.spawn_span(index, 1, node.successors.len() as u32);
            }
            let successor = &self.graph.nodes[first as usize];
            if successor.sole_predecessor || self.counter(successor).fetch_sub(1, Ordering::AcqRel) == 1 {
                index = first;
            } else {
                break;
            }
        }
        finished
    }

    /// Runs `node` the general way: its signal event, any command, and
    /// skipping after an earlier failure.
    fn run_node(&self, node: &Node) {
        let generation = if node.signal.is_some() { self.generations[node.generation as usize] } else { 0 };
        if let Some(signal) = &node.signal {
            signal.start(generation);
        }
        let failed = if self.failed.load(Ordering::Acquire) { self.failure.lock().clone() } else { None };
        let result = match failed {
            Some(error) => Err(execution_error(Backend::Cpu, format!("skipped after an earlier failure: {error}"))),
            // SAFETY: the command was validated when appended (or updated),
            // and every predecessor and wait event has completed.
            None => unsafe { exec::execute_with(&node.command, node.func) },
        };
        if let Err(error) = &result {
            self.fail(error.clone());
        }
        if let Some(signal) = &node.signal {
            signal.finish(generation, result);
        }
    }
}
