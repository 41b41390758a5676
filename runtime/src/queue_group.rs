//! Command groups with accessors on the SYCL queue ([`Queue::command_group`]):
//! `queue.submit([&](handler &h) { accessor a{buf, h}; ... })`.
//!
//! On an executing queue the group is an eager [`CommandGroup`] of the
//! cmdbuf-core queue: the data moves, the work waits for the earlier uses it
//! conflicts with. On a recording queue it becomes a graph node whose edges
//! come from its accessors (see [`crate::graph`]'s buffers).

use cmdbuf_core::{Result, err};
use smallvec::SmallVec;

use crate::buffer::graph::{self as bg, GraphAccess};
use crate::buffer::{AccessMode, AccessRange, Accessor, Buffer, CommandGroup};
use crate::graph::record::WaitEvent;
use crate::queue::{Event, Queue, QueueState};

/// A command group of a [`Queue`]: accessors, then one command.
///
/// ```
/// use cmdbuf_core::{Context, QueueProperties};
/// use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, Queue};
/// # let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
/// let queue = Queue::new(&context, QueueProperties::default())?;
/// let buffer = Buffer::from_host(&[1u32, 2, 3, 4], &[4])?;
/// let mut cg = queue.command_group();
/// let acc = cg.access(&buffer, AccessMode::WriteNoInit, AccessRange::all())?;
/// cg.submit(&[], |q, wait| q.usm_fill(acc.ptr(), &[9], 16, wait))?;
/// assert_eq!(buffer.host_access(AccessMode::Read, AccessRange::all())?.to_vec::<u32>()?, [0x0909_0909; 4]);
/// # Ok::<(), cmdbuf_core::UrError>(())
/// ```
pub struct QueueGroup<'q> {
    queue: &'q Queue,
    declared: Vec<(GraphAccess, AccessRange)>,
}

impl Queue {
    /// A command group for this queue (SYCL's `queue::submit` with a
    /// command-group function that declares accessors).
    pub fn command_group(&self) -> QueueGroup<'_> {
        QueueGroup { queue: self, declared: Vec::new() }
    }
}

impl QueueGroup<'_> {
    /// Declares an accessor of `buffer` and gives its device pointer on the
    /// queue's device (allocated there at first use); data moves at
    /// [`submit`](Self::submit) (or, recorded, at each execution).
    pub fn access(&mut self, buffer: &Buffer, mode: AccessMode, range: AccessRange) -> Result<Accessor> {
        let (access, accessor) = bg::declare(buffer, self.queue.core(), mode, &range)?;
        self.declared.push((access, range));
        Ok(accessor)
    }

    /// Submits the group: `launch` enqueues its one command on the queue it
    /// is given with the wait list it is given (`wait` and what the
    /// accessors need). On an executing queue the data moves first and the
    /// command waits for conflicting work on any device; on a recording
    /// queue the command is recorded with edges from the earlier nodes whose
    /// accessors conflict (the graph's buffer rules apply, see
    /// [`Handler::access`](crate::graph::Handler::access)). An executing
    /// queue given a recorded event in `wait` starts recording into its
    /// graph (transitive recording), or refuses it (`InvalidEventWaitList`)
    /// when the queue that recorded it no longer records.
    pub fn submit(self, wait: &[&Event], launch: impl FnOnce(&Queue, &[&Event]) -> Result<Event>) -> Result<Event> {
        let queue = self.queue;
        if queue.recording_state() == QueueState::Executing
            && let Some(rec) = wait.iter().find_map(|e| e.recorded())
        {
            crate::graph::record::begin_transitively(queue.inner(), rec)?;
        }
        if let Some(graph) = queue.recording_slot().occupant() {
            let declared = self.declared.into_iter().map(|(a, _)| a).collect();
            return crate::graph::record::with_accessors(graph, queue.key(), declared, |conflicts| {
                let conflicts: Vec<Event> = conflicts.into_iter().map(Event::Recorded).collect();
                let all: Vec<&Event> = wait.iter().copied().chain(&conflicts).collect();
                launch(queue, &all)
            });
        }
        let mut user: SmallVec<[Event; 8]> = SmallVec::new();
        for e in wait {
            match e {
                Event::Core(_) => user.push((*e).clone()),
                Event::Recorded(r) => return Err(r.outside_recording()),
            }
        }
        let mut cg = CommandGroup::new(queue.core());
        for (a, range) in &self.declared {
            cg.access(&a.buffer, a.mode, range.clone())?;
        }
        let event = cg.submit(|_, needed| {
            let mut all = user.clone();
            all.extend(needed.iter().map(|e| Event::Core((*e).clone())));
            let refs: SmallVec<[&Event; 8]> = all.iter().collect();
            match launch(queue, &refs)? {
                Event::Core(e) => Ok(e),
                Event::Recorded(_) => Err(err!(
                    InvalidOperation,
                    "the queue began recording while an eager command group was submitted to it"
                )),
            }
        })?;
        Ok(Event::Core(event))
    }
}
