//! SYCL's queue: an [`cmdbuf_core::Queue`] that can also record into a graph
//! ([`crate::graph`]), and its events, which are either cmdbuf-core events or
//! *recorded events* standing for graph nodes.
//!
//! While a queue records (`begin_recording`, see [`crate::graph::record`]),
//! its submitting methods add nodes instead of executing; otherwise they
//! forward to the cmdbuf-core queue. The check costs the eager path one load of
//! an atomic flag. Recording and UR's graph capture exclude each other: the
//! capture methods here refuse a recording queue, and recording refuses a
//! capturing one.
//!
//! Methods not listed here ([`Queue::core`]) run on the cmdbuf-core queue
//! directly and are never recorded.

use std::fmt;
use std::sync::Arc;

use cmdbuf_core::{
    CapturedGraph, Command, CommandBuffer, Context, Device, EventStatus, KernelLaunch, MemBuffer, MigrationFlags,
    NativeScope, ProfilingInfo, QueueProperties, RectLayout, RectRegion, Result, UsmAdvice, UsmKind, UsmPtr, err,
};
use smallvec::SmallVec;

use crate::graph::record::{self, QueueInner, Recordable, RecordedEvent, RecordingSlot, WaitEvent};
use crate::graph::{Graph, Modifiable};
use crate::pool::MemoryPool;

/// Whether a queue executes its submissions or records them into a graph
/// (`queue_state`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueState {
    /// Submissions execute.
    Executing,
    /// Submissions become nodes of a graph.
    Recording,
}

/// The event of a submission to a [`Queue`]: a cmdbuf-core event, or the event
/// of a node recorded into a graph, which never completes and stands for
/// the node in the wait lists of the same recording.
#[derive(Clone)]
pub enum Event {
    /// The event of executed work.
    Core(cmdbuf_core::Event),
    /// The event of a recorded node.
    Recorded(RecordedEvent),
}

impl Event {
    /// Blocks until the event completes; `InvalidOperation` for a recorded
    /// event (recorded commands do not execute).
    pub fn wait(&self) -> Result<()> {
        match self {
            Event::Core(e) => e.wait(),
            Event::Recorded(r) => Err(r.wait_error()),
        }
    }

    /// Waits for every event; the first error, after all were waited for.
    pub fn wait_all(events: &[&Event]) -> Result<()> {
        let mut first = None;
        for e in events {
            if let Err(error) = e.wait() {
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Current status (`info::event::command_execution_status`); for a
    /// recorded event `InvalidOperation`, the specification's `invalid`
    /// (8.10.1: recorded commands have no execution status).
    pub fn status(&self) -> Result<EventStatus> {
        match self {
            Event::Core(e) => Ok(e.status()),
            Event::Recorded(r) => Err(r.query_error("an execution-status query")),
        }
    }

    /// Profiling timestamps (`get_profiling_info`); for a recorded event
    /// `InvalidOperation`, the specification's `invalid` (8.10.1).
    pub fn profiling_info(&self) -> Result<ProfilingInfo> {
        match self {
            Event::Core(e) => e.profiling_info(),
            Event::Recorded(r) => Err(r.query_error("a profiling query")),
        }
    }

    /// The cmdbuf-core event, unless this one was recorded.
    pub fn core(&self) -> Option<&cmdbuf_core::Event> {
        match self {
            Event::Core(e) => Some(e),
            Event::Recorded(_) => None,
        }
    }
}

impl WaitEvent for Event {
    fn recorded(&self) -> Option<&RecordedEvent> {
        match self {
            Event::Core(_) => None,
            Event::Recorded(r) => Some(r),
        }
    }
}

impl From<cmdbuf_core::Event> for Event {
    fn from(event: cmdbuf_core::Event) -> Event {
        Event::Core(event)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Core(e) => e.fmt(f),
            Event::Recorded(r) => r.fmt(f),
        }
    }
}

/// The cmdbuf-core events of a wait list, or the first recorded event in it.
fn core_events<'a>(
    wait: &[&'a Event],
) -> std::result::Result<SmallVec<[&'a cmdbuf_core::Event; 8]>, &'a RecordedEvent> {
    wait.iter()
        .map(|e| match e {
            Event::Core(c) => Ok(c),
            Event::Recorded(r) => Err(r),
        })
        .collect()
}

/// A graph [`Queue::enqueue_graph`] submits: an executable graph of this
/// crate, or one of UR's graph capture.
pub trait SubmitGraph {
    /// Submits the graph on `queue` after `wait` (or records it where
    /// `queue` records).
    fn submit_on(&self, queue: &Queue, wait: &[&Event]) -> Result<Event>;
}

/// A SYCL queue over an [`cmdbuf_core::Queue`]. Clone retains.
#[derive(Clone)]
pub struct Queue {
    inner: Arc<QueueInner>,
}

impl Queue {
    /// Creates a queue (see [`cmdbuf_core::Queue::new`]).
    pub fn new(context: &Context, properties: QueueProperties) -> Result<Queue> {
        Ok(Queue::from_core(cmdbuf_core::Queue::new(context, properties)?))
    }

    /// A SYCL queue over `core`. Work submitted to `core` directly is not
    /// recorded.
    pub fn from_core(core: cmdbuf_core::Queue) -> Queue {
        Queue { inner: QueueInner::new(core) }
    }

    /// The cmdbuf-core queue: its methods execute (or capture), never record.
    pub fn core(&self) -> &cmdbuf_core::Queue {
        &self.inner.core
    }

    /// The queue's context.
    pub fn context(&self) -> &Context {
        self.inner.core.context()
    }

    /// The queue's device.
    pub fn device(&self) -> &Device {
        self.inner.core.device()
    }

    /// The properties it was created with.
    pub fn properties(&self) -> QueueProperties {
        self.inner.core.properties()
    }

    /// Whether both handles are the same queue.
    pub fn same_queue(&self, other: &Queue) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether the queue records into a graph (`ext_oneapi_get_state`). In
    /// multi-threaded code the answer may be stale at once.
    pub fn recording_state(&self) -> QueueState {
        if self.inner.recording.is_active() { QueueState::Recording } else { QueueState::Executing }
    }

    /// The graph the queue records into (`ext_oneapi_get_graph`): a copy of
    /// the application's graph; `InvalidOperation` when it does not record.
    pub fn recording_graph(&self) -> Result<Graph<Modifiable>> {
        record::recording_graph(&self.inner)
    }

    /// The `begin_recording` properties the queue records with
    /// (inherited when it records transitively); `None` when it does not record.
    pub fn recording_properties(&self) -> Option<crate::graph::RecordingProperties> {
        record::recording_properties(&self.inner)
    }

    /// Its recording state, for the graph layer.
    pub(crate) fn recording_slot(&self) -> &RecordingSlot {
        &self.inner.recording
    }

    /// The queue's state, as the graph layer takes it.
    pub(crate) fn inner(&self) -> &Arc<QueueInner> {
        &self.inner
    }

    /// The queue's identity while it lives (graphs key recording queues by it).
    pub(crate) fn key(&self) -> usize {
        self.inner.key()
    }

    /// Records what `record` builds when the queue records (or starts
    /// recording because `wait` holds a recorded event of a recording
    /// queue); otherwise runs `eager` on the cmdbuf-core queue.
    #[inline]
    pub(crate) fn submit(
        &self,
        wait: &[&Event],
        record: impl FnOnce() -> Result<Recordable>,
        eager: impl FnOnce(&cmdbuf_core::Queue, &[&cmdbuf_core::Event]) -> Result<cmdbuf_core::Event>,
    ) -> Result<Event> {
        // The common case, no wait list on a queue that does not record,
        // goes straight to cmdbuf-core (a graph's replay, issue 15 goal 6).
        if wait.is_empty() && !self.inner.recording.is_active() {
            return eager(&self.inner.core, &[]).map(Event::Core);
        }
        self.submit_slow(wait, record, eager)
    }

    /// [`submit`](Self::submit) with a wait list or while recording.
    fn submit_slow(
        &self,
        wait: &[&Event],
        record: impl FnOnce() -> Result<Recordable>,
        eager: impl FnOnce(&cmdbuf_core::Queue, &[&cmdbuf_core::Event]) -> Result<cmdbuf_core::Event>,
    ) -> Result<Event> {
        let record = if self.inner.recording.is_active() {
            match record::submit(&self.inner, record, wait) {
                Ok(result) => return result.map(Event::Recorded),
                // Recording ended since the flag was read: execute.
                Err(record) => record,
            }
        } else {
            record
        };
        match core_events(wait) {
            Ok(core) => eager(&self.inner.core, &core).map(Event::Core),
            Err(rec) => {
                record::begin_transitively(&self.inner, rec)?;
                record::submit(&self.inner, record, wait).map_or_else(
                    |_| {
                        Err(err!(
                            InvalidEventWaitList,
                            "the wait list holds a recorded event; the queue stopped recording"
                        ))
                    },
                    |result| result.map(Event::Recorded),
                )
            }
        }
    }

    /// `InvalidOperation` when the queue records: `what` cannot be recorded.
    fn refuse_while_recording(&self, what: &str) -> Result<()> {
        if self.inner.recording.is_active() {
            record::refuse_while_recording(&self.inner, what)?;
        }
        Ok(())
    }

    /// The cmdbuf-core events of a wait list for an operation that is never
    /// recorded: `InvalidEventWaitList` for a recorded event.
    fn eager_wait<'a>(&self, wait: &[&'a Event]) -> Result<SmallVec<[&'a cmdbuf_core::Event; 8]>> {
        core_events(wait).map_err(|r| r.outside_recording())
    }

    /// Launches a kernel ([`cmdbuf_core::Queue::launch_kernel`]), or records a
    /// kernel node.
    ///
    /// # Safety
    /// As for [`cmdbuf_core::Queue::launch_kernel`]; while recording, at every
    /// execution of the graphs made from the graph.
    pub unsafe fn launch_kernel(&self, launch: &KernelLaunch<'_>, wait: &[&Event]) -> Result<Event> {
        self.submit(
            wait,
            || {
                let (command, origin) = launch.resolve(self.context())?;
                Ok(Recordable::Kernel(command, origin))
            },
            // SAFETY: the memory the launch's arguments reach stays allocated and unused by the host
            // until it completes, and while recording at every execution of the graphs made from the
            // graph (this function's `# Safety`), as `launch_kernel` requires.
            |q, w| unsafe { q.launch_kernel(launch, w) },
        )
    }

    /// Enqueues `command` ([`cmdbuf_core::Queue::enqueue`]), or records it
    /// as a memory node: the one path of every memory command, which the
    /// typed methods below wrap. `InvalidContext` for a command of another
    /// context, `InvalidValue` for a kernel launch (launched from a
    /// [`KernelLaunch`] with [`launch_kernel`](Self::launch_kernel)), on
    /// either path.
    pub fn enqueue(&self, command: Command, wait: &[&Event]) -> Result<Event> {
        // The common case as `submit` has it, with the command moved.
        if wait.is_empty() && !self.inner.recording.is_active() {
            return self.inner.core.enqueue(command, &[]).map(Event::Core);
        }
        // `submit_slow` calls at most one of its two closures, which share
        // the command through this slot.
        let slot = std::cell::Cell::new(Some(command));
        let take = || slot.take().ok_or_else(|| err!(Unknown, "the command was submitted twice"));
        self.submit_slow(
            wait,
            || {
                let command = take()?;
                command.check_context(self.context())?;
                Ok(Recordable::Command(command))
            },
            |q, w| q.enqueue(take()?, w),
        )
    }

    /// Copies between USM allocations.
    pub fn usm_memcpy(&self, dst: UsmPtr, src: UsmPtr, size: usize, wait: &[&Event]) -> Result<Event> {
        self.enqueue(Command::usm_copy(self.context(), dst, src, size)?, wait)
    }

    /// Fills `size` bytes of USM with a pattern of any length dividing the size.
    pub fn usm_fill(&self, dst: UsmPtr, pattern: &[u8], size: usize, wait: &[&Event]) -> Result<Event> {
        self.enqueue(Command::usm_fill(self.context(), dst, pattern, size)?, wait)
    }

    /// Prefetches USM.
    pub fn usm_prefetch(&self, ptr: UsmPtr, size: usize, flags: MigrationFlags, wait: &[&Event]) -> Result<Event> {
        self.enqueue(Command::usm_prefetch(self.context(), ptr, size, flags)?, wait)
    }

    /// Gives advice about USM.
    pub fn usm_advise(&self, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<Event> {
        self.enqueue(Command::usm_advise(self.context(), ptr, size, advice)?, &[])
    }

    /// Copies between buffers.
    pub fn copy_buffer(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue(Command::buffer_copy(self.context(), src, dst, src_offset, dst_offset, size)?, wait)
    }

    /// Copies a rect between buffers.
    pub fn copy_buffer_rect(
        &self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_layout: RectLayout,
        dst_layout: RectLayout,
        region: RectRegion,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue(Command::buffer_copy_rect(self.context(), src, dst, src_layout, dst_layout, region)?, wait)
    }

    /// Fills `size` bytes of a buffer from `offset` with a pattern of any length dividing the size.
    pub fn fill_buffer(
        &self,
        buffer: &MemBuffer,
        pattern: &[u8],
        offset: usize,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue(Command::buffer_fill(self.context(), buffer, pattern, offset, size)?, wait)
    }

    /// Reads `size` bytes of a buffer from `offset` into USM.
    pub fn read_buffer_to_usm(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        dst: UsmPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue(Command::buffer_read_to_usm(self.context(), buffer, offset, size, dst)?, wait)
    }

    /// Writes `size` bytes of USM into a buffer from `offset`.
    pub fn write_buffer_from_usm(
        &self,
        buffer: &MemBuffer,
        offset: usize,
        size: usize,
        src: UsmPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue(Command::buffer_write_from_usm(self.context(), buffer, offset, size, src)?, wait)
    }

    /// Copies host bytes into USM, blocking; `InvalidOperation` while recording.
    pub fn write_usm(&self, dst: UsmPtr, data: &[u8], wait: &[&Event]) -> Result<()> {
        self.refuse_while_recording("a blocking transfer")?;
        self.inner.core.write_usm(dst, data, &self.eager_wait(wait)?)
    }

    /// Copies USM into host bytes, blocking; `InvalidOperation` while recording.
    pub fn read_usm(&self, src: UsmPtr, out: &mut [u8], wait: &[&Event]) -> Result<()> {
        self.refuse_while_recording("a blocking transfer")?;
        self.inner.core.read_usm(src, out, &self.eager_wait(wait)?)
    }

    /// Reads a buffer into a host slice, blocking; `InvalidOperation` while recording.
    pub fn read_buffer(&self, buffer: &MemBuffer, offset: usize, out: &mut [u8], wait: &[&Event]) -> Result<()> {
        self.refuse_while_recording("a blocking transfer")?;
        self.inner.core.read_buffer(buffer, offset, out, &self.eager_wait(wait)?)
    }

    /// Writes a host slice into a buffer, blocking; `InvalidOperation` while recording.
    pub fn write_buffer(&self, buffer: &MemBuffer, offset: usize, data: &[u8], wait: &[&Event]) -> Result<()> {
        self.refuse_while_recording("a blocking transfer")?;
        self.inner.core.write_buffer(buffer, offset, data, &self.eager_wait(wait)?)
    }

    /// An event completing when all of `wait` have; while recording, an
    /// empty node after them.
    pub fn events_wait(&self, wait: &[&Event]) -> Result<Event> {
        self.submit(wait, || Ok(Recordable::Wait { barrier: false }), |q, w| q.events_wait(w))
    }

    /// A barrier (see [`cmdbuf_core::Queue::barrier`]); while recording, a
    /// barrier node: with an empty wait list, after the nodes recorded from
    /// this queue that no later node of it depends on.
    pub fn barrier(&self, wait: &[&Event]) -> Result<Event> {
        self.submit(wait, || Ok(Recordable::Wait { barrier: true }), |q, w| q.barrier(w))
    }

    /// Records the device's time ([`cmdbuf_core::Queue::enqueue_timestamp`]);
    /// `InvalidOperation` while recording.
    pub fn enqueue_timestamp(&self, wait: &[&Event]) -> Result<Event> {
        self.refuse_while_recording("a timestamp recording")?;
        self.inner.core.enqueue_timestamp(&self.eager_wait(wait)?).map(Event::Core)
    }

    /// Runs `task` once on a host thread ([`cmdbuf_core::Queue::enqueue_host_task`]).
    /// A task that runs once cannot be recorded into a graph: on a recording
    /// queue this is `InvalidOperation`; record
    /// [`enqueue_host_fn`](Self::enqueue_host_fn) instead.
    pub fn enqueue_host_task(&self, wait: &[&Event], task: impl FnOnce() + Send + 'static) -> Result<Event> {
        self.refuse_while_recording("`enqueue_host_task` (a task that runs once; record `enqueue_host_fn`)")?;
        self.inner.core.enqueue_host_task(&self.eager_wait(wait)?, task).map(Event::Core)
    }

    /// Runs `task` on a host thread after `wait` (and, on an in-order queue,
    /// after everything before), like [`enqueue_host_task`](Self::enqueue_host_task);
    /// since `task` can run more than once, a recording queue records it as
    /// a host-task node. A capturing queue refuses it (`GraphCaptureUnsupported`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use cmdbuf_core::{Context, QueueProperties, UrError};
    /// use cmdbuf_runtime::Queue;
    /// use cmdbuf_runtime::graph::*;
    /// # let device = cmdbuf_cpu::default_device();
    /// # let ctx = Context::new(&device)?;
    /// let queue = Queue::new(&ctx, QueueProperties::default())?;
    /// let graph = Graph::from_queue(&queue, GraphProperties::default())?;
    /// let runs = Arc::new(AtomicU32::new(0));
    /// graph.begin_recording(&queue)?;
    /// let counter = runs.clone();
    /// queue.enqueue_host_fn(&[], move || {
    ///     counter.fetch_add(1, Ordering::SeqCst);
    /// })?;
    /// graph.end_recording();
    /// let exec = graph.finalize(FinalizeProperties::default())?;
    /// queue.enqueue_graph(&exec, &[])?;
    /// queue.enqueue_graph(&exec, &[])?.wait()?;
    /// assert_eq!(runs.load(Ordering::SeqCst), 2);
    /// # Ok::<(), UrError>(())
    /// ```
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn enqueue_host_fn(&self, wait: &[&Event], task: impl Fn() + Send + Sync + 'static) -> Result<Event> {
        let task: record::HostFn = Arc::new(task);
        let recorded = task.clone();
        self.submit(
            wait,
            move || Ok(Recordable::HostTask(recorded)),
            |q, w| {
                q.refuse_capture("a host task")?;
                q.enqueue_host_task(w, move || task())
            },
        )
    }

    /// `async_malloc(queue, kind, size)`: while recording, a graph-owned
    /// allocation, returning its pointer and the node's event (see
    /// [`Handler::async_malloc`](crate::graph::Handler::async_malloc));
    /// otherwise an allocation from the default pool of the queue's context
    /// and `kind` ([`MemoryPool::default_pool`]), usable when the returned
    /// event completes, given back with [`async_free`](Self::async_free).
    pub fn async_malloc(&self, kind: UsmKind, size: usize, wait: &[&Event]) -> Result<(UsmPtr, Event)> {
        self.malloc_via(
            size,
            wait,
            || Ok(Recordable::Malloc { kind, size, zero_init: false }),
            |q| MemoryPool::default_pool(q.context(), q.device(), kind),
        )
    }

    /// `record` while recording; otherwise `size` bytes from the pool
    /// `pool` gives, eagerly on this queue after `wait`.
    fn malloc_via(
        &self,
        size: usize,
        wait: &[&Event],
        record: impl FnOnce() -> Result<Recordable>,
        pool: impl FnOnce(&cmdbuf_core::Queue) -> Result<MemoryPool>,
    ) -> Result<(UsmPtr, Event)> {
        let mut eager = None;
        let event = self.submit(wait, record, |q, w| {
            let (ptr, ready) = pool(q)?.allocate_eager(q, size, w)?;
            eager = Some(ptr);
            Ok(ready)
        })?;
        match eager {
            Some(ptr) => Ok((ptr, event)),
            None => recorded_allocation(event),
        }
    }

    /// `async_malloc_from_pool(queue, size, pool)`: while recording, a
    /// graph-owned allocation of the pool's kind, zeroed at each finalize
    /// when the pool has `zero_init` (see [`Handler::async_malloc_from_pool`](crate::graph::Handler::async_malloc_from_pool));
    /// otherwise an allocation from the pool, usable (and zeroed, with
    /// `zero_init`) when the returned event completes (see [`crate::pool`]).
    /// `InvalidContext` / `InvalidQueue` for a pool of another context.
    pub fn async_malloc_from_pool(&self, size: usize, pool: &MemoryPool, wait: &[&Event]) -> Result<(UsmPtr, Event)> {
        let zero_init = pool.properties().zero_init;
        self.malloc_via(
            size,
            wait,
            || {
                pool.check_for_graph(self.context())?;
                Ok(Recordable::Malloc { kind: pool.alloc_kind(), size, zero_init })
            },
            |_| Ok(pool.clone()),
        )
    }

    /// `async_free(queue, ptr)`: while recording, the release of a
    /// graph-owned allocation (see [`Handler::async_free`](crate::graph::Handler::async_free));
    /// otherwise the return of an eager [`async_malloc`](Self::async_malloc) or
    /// [`async_malloc_from_pool`](Self::async_malloc_from_pool) allocation to
    /// its pool after `wait` (`InvalidOperation` for a pointer no pool
    /// handed out).
    pub fn async_free(&self, ptr: UsmPtr, wait: &[&Event]) -> Result<Event> {
        self.submit(
            wait,
            || Ok(Recordable::Free(ptr)),
            |q, w| MemoryPool::free_eager(q, ptr, w).unwrap_or_else(|| only_recorded(q)),
        )
    }

    /// Submits an executable graph (`queue::ext_oneapi_graph`,
    /// `urEnqueueGraphExp`); see the graph's [`SubmitGraph`] implementation.
    pub fn enqueue_graph(&self, graph: &impl SubmitGraph, wait: &[&Event]) -> Result<Event> {
        graph.submit_on(self, wait)
    }

    /// Submits a finalized command buffer; `InvalidOperation` while recording.
    pub fn enqueue_command_buffer(&self, command_buffer: &CommandBuffer, wait: &[&Event]) -> Result<Event> {
        self.refuse_while_recording("a command-buffer enqueue (add an executable graph with `enqueue_graph`)")?;
        self.inner.core.enqueue_command_buffer(command_buffer, &self.eager_wait(wait)?).map(Event::Core)
    }

    /// Enqueues a native command ([`cmdbuf_core::Queue::enqueue_native_command`]);
    /// a recording queue records a native-command node
    /// ([`Handler::native_command`](crate::graph::Handler::native_command)).
    /// A recorded native command takes no memory buffers (the native command
    /// of a command buffer has none in its scope): non-empty `mems` while
    /// recording is `UnsupportedFeature`; reach the buffers' native handles
    /// from the callback instead.
    ///
    /// # Safety
    /// As for [`cmdbuf_core::Queue::enqueue_native_command`]; while recording, as
    /// for [`Handler::native_command`](crate::graph::Handler::native_command).
    pub unsafe fn enqueue_native_command(
        &self,
        mems: &[&MemBuffer],
        wait: &[&Event],
        callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'static,
    ) -> Result<Event> {
        let callback = Arc::new(callback);
        let recorded = callback.clone();
        self.submit(
            wait,
            || {
                cmdbuf_core::ensure!(
                    mems.is_empty(),
                    UnsupportedFeature,
                    "a recorded native command takes no memory buffers ({} given): use their native handles in the \
                     callback",
                    mems.len()
                );
                Ok(Recordable::Native(recorded))
            },
            // SAFETY: `callback`'s native work meets `enqueue_native_command`'s contract (this
            // function's `# Safety`), and while recording `Handler::native_command`'s.
            |q, w| unsafe { q.enqueue_native_command(mems, w, move |scope| callback(scope)) },
        )
    }

    /// [`cmdbuf_core::Queue::enqueue_native_command_now`]; a recording queue
    /// refuses it (`InvalidOperation`).
    ///
    /// # Safety
    /// As for [`cmdbuf_core::Queue::enqueue_native_command_now`].
    pub unsafe fn enqueue_native_command_now<'a>(
        &self,
        mems: &[&MemBuffer],
        wait: &[&Event],
        callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'a,
    ) -> Result<Event> {
        self.refuse_while_recording("a native command")?;
        let wait = self.eager_wait(wait)?;
        // SAFETY: `callback`'s native work meets `enqueue_native_command_now`'s contract (this
        // function's `# Safety`, the same).
        unsafe { self.inner.core.enqueue_native_command_now(mems, &wait, callback) }.map(Event::Core)
    }

    /// Blocks until everything submitted has completed; `InvalidOperation`
    /// on a recording queue.
    pub fn finish(&self) -> Result<()> {
        self.refuse_while_recording("`finish` (a host wait)")?;
        self.inner.core.finish()
    }

    /// Makes sure everything submitted will start.
    pub fn flush(&self) -> Result<()> {
        self.inner.core.flush()
    }

    /// `InvalidOperation` when the queue records into a graph: a queue
    /// records or captures, never both.
    fn check_can_capture(&self) -> Result<()> {
        cmdbuf_core::ensure!(
            !self.inner.recording.is_active(),
            InvalidOperation,
            "the queue records into a graph of the graph layer; end that recording before capturing"
        );
        Ok(())
    }

    /// [`cmdbuf_core::Queue::begin_capture`]; `InvalidOperation` while recording.
    pub fn begin_capture(&self) -> Result<()> {
        self.check_can_capture()?;
        self.inner.core.begin_capture()
    }

    /// [`cmdbuf_core::Queue::begin_capture_into`]; `InvalidOperation` while recording.
    pub fn begin_capture_into(&self, graph: &CapturedGraph) -> Result<()> {
        self.check_can_capture()?;
        self.inner.core.begin_capture_into(graph)
    }

    /// [`cmdbuf_core::Queue::end_capture`].
    pub fn end_capture(&self) -> Result<CapturedGraph> {
        self.inner.core.end_capture()
    }

    /// [`cmdbuf_core::Queue::is_capturing`].
    pub fn is_capturing(&self) -> bool {
        self.inner.core.is_capturing()
    }

    /// [`cmdbuf_core::Queue::capture_graph`].
    pub fn capture_graph(&self) -> Result<CapturedGraph> {
        self.inner.core.capture_graph()
    }
}

/// The pointer of a recorded allocation node's event.
fn recorded_allocation(event: Event) -> Result<(UsmPtr, Event)> {
    let ptr = event
        .recorded()
        .and_then(RecordedEvent::allocation)
        .ok_or_else(|| err!(Unknown, "async_malloc recorded no allocation"))?;
    Ok((ptr, event))
}

/// The eager side of operations that exist only in a recording: refused
/// on a capturing queue (which it invalidates), `InvalidOperation` otherwise.
fn only_recorded(queue: &cmdbuf_core::Queue) -> Result<cmdbuf_core::Event> {
    queue.refuse_capture("a graph-owned allocation")?;
    Err(err!(InvalidOperation, "async_malloc and async_free are only recorded: the queue does not record into a graph"))
}

/// `urEnqueueGraphExp` ([`cmdbuf_core::Queue::enqueue_graph`]); a recording
/// queue refuses it (`InvalidOperation`: record the commands instead).
impl SubmitGraph for cmdbuf_core::InstantiatedGraph {
    fn submit_on(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        if queue.recording_state() == QueueState::Recording {
            record::refuse_while_recording(
                queue.inner(),
                "an executable graph of UR's capture (record the commands instead)",
            )?;
        }
        queue.core().enqueue_graph(self, &queue.eager_wait(wait)?).map(Event::Core)
    }
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue").field("core", &self.inner.core).field("state", &self.recording_state()).finish()
    }
}
