//! Submission: one execution of the executable graph on a queue.

use smallvec::SmallVec;

use cmdbuf_core::err;
use cmdbuf_core::error::Result;
use cmdbuf_core::event::Event;
use cmdbuf_core::queue::Queue;

use crate::graph::partition::Part;
use crate::graph::state::{ExecState, FlatOp};
use crate::graph::{Executable, Graph};

impl Graph<Executable> {
    /// Submits the graph on a cmdbuf-core queue, which never records, after
    /// `wait`: what [`Queue::enqueue_graph`](crate::Queue::enqueue_graph)
    /// does on an executing queue. A capturing queue refuses it
    /// (`GraphCaptureUnsupported`); `InvalidQueue` for a queue of another
    /// context or device.
    pub fn enqueue_on(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        self.check_queue(queue)?;
        self.enqueue_checked(queue, wait)
    }

    /// [`enqueue_on`](Self::enqueue_on) for a queue [`check_queue`](Self::check_queue) accepted.
    #[inline]
    pub(crate) fn enqueue_checked(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        queue.refuse_capture("an executable graph of the graph layer")?;
        self.run(queue, wait)
    }

    /// One execution on `queue` after `wait` (resolved already), its
    /// buffers' data current (see [`run`](Self::run)).
    #[inline]
    pub(crate) fn run_graph(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        let inner = self.inner();
        // Held across the submission: submissions of one graph are made one
        // at a time (each after the previous one, which a graph of several
        // partitions waits for by its event), and none sees half an update.
        let mut st = inner.state.lock();
        let single = st.is_single() || st.composed.is_some();
        let event =
            if single { self.run_single(&mut st, queue, wait)? } else { self.run_partitions(&mut st, queue, wait)? };
        if let Some(runs) = &inner.runs {
            *runs.lock() = Some(event.clone());
        }
        Ok(event)
    }

    /// A graph of one device partition: its command buffer; or a
    /// multi-device graph composed into one executable. Submissions of one
    /// command buffer (or composition) run one at a time in submission
    /// order, across queues too (cmdbuf-core's contract; the conformance group
    /// `enqueue`), so each follows the previous one without the graph
    /// keeping its event, querying its status or putting it in the wait
    /// list. Only a first submission may wait here, for the last run of the
    /// previous executable graph of the same graph-owned memory (or, after a
    /// composition was given up, of this graph's).
    #[inline]
    fn run_single(&self, st: &mut ExecState, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        let event = match st.last.as_ref().filter(|e| !e.status().is_terminal()) {
            None => submit_one(st, queue, wait)?,
            Some(previous) => {
                let waits: SmallVec<[&Event; 8]> = wait.iter().copied().chain([previous]).collect();
                submit_one(st, queue, &waits)?
            }
        };
        st.last = None;
        // Without `enable_profiling` the event reports no timestamps; only
        // a profiling queue's event has any to hide.
        if self.inner().props.enable_profiling || !queue.properties().profiling {
            Ok(event)
        } else {
            Event::span(&event, &event, &[], false)
        }
    }

    /// A graph of several partitions (or a host task, or another device's
    /// partition): each partition after its predecessors, the first after
    /// `wait` and the previous submission; one span event for all. Out of
    /// line, so that the one-partition path keeps a small frame.
    #[inline(never)]
    fn run_partitions(&self, st: &mut ExecState, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        let inner = self.inner();
        let previous = st.last.as_ref().filter(|e| !e.status().is_terminal());
        let waits: SmallVec<[&Event; 8]> = wait.iter().copied().chain(previous).collect();
        let start = queue.events_wait(&waits)?;
        drop(waits);
        let worker = st.worker.clone().unwrap_or_else(|| queue.clone());
        let devices = &inner.source.devices;
        let mut done: Vec<Option<Event>> = vec![None; st.parts.len()];
        for &index in &st.submit_order {
            let part = &st.parts[index as usize];
            if let Some(event) = crate::graph::collective::submit(st, part, &done, &start, devices)? {
                done[index as usize] = Some(event);
                continue;
            }
            let event = {
                // Events of other devices' partitions are waited for as
                // they are where this device's queues wait for that device's
                // events, else through bridges.
                let on = part.device;
                let bridged = |e: &Event, from: u16| devices.event_for(on, e, from);
                let owned: SmallVec<[Event; 4]> = if part.preds.is_empty() {
                    SmallVec::from_elem(bridged(&start, 0)?, 1)
                } else {
                    part.preds
                        .iter()
                        .map(|p| {
                            let e = done[*p as usize].as_ref().expect("predecessors go first");
                            // A peer copy too: the adapters that wait across
                            // contexts order it after work not yet handed to
                            // the device (docs/multi-device.md).
                            bridged(e, st.parts[*p as usize].device)
                        })
                        .collect::<Result<_>>()?
                };
                let pw: SmallVec<[&Event; 4]> = owned.iter().collect();
                let worker = match st.device_queues.get(on as usize) {
                    Some(Some(q)) => q,
                    _ => &worker,
                };
                if let (true, FlatOp::PeerCopy { dst, src, size, .. }) =
                    (part.host, &st.nodes[part.members[0] as usize].op)
                {
                    worker.usm_copy_peer(*dst, *src, *size, &pw)?
                } else if part.host {
                    let FlatOp::Host(task) = &st.nodes[part.members[0] as usize].op else {
                        return Err(err!(Unknown, "a host partition without a host task"));
                    };
                    let task = task.clone();
                    worker.enqueue_host_task(&pw, move || task())?
                } else {
                    let cb = part.cb.as_ref().expect("device partitions have a command buffer");
                    worker.enqueue_command_buffer(cb, &pw)?
                }
            };
            done[index as usize] = Some(event);
        }
        // The span reports every partition's failure: those of other
        // devices as they are where the submitting queue's context waits for
        // them, else through bridges into it.
        let done: Vec<Event> = done
            .into_iter()
            .zip(&st.parts)
            .map(|(e, p)| {
                // The submitting queue is of device 0's context (checked above).
                devices.event_for(0, &e.expect("every partition is submitted"), p.device)
            })
            .collect::<Result<_>>()?;
        let mut leaves: Vec<&Event> = st.parts.iter().zip(&done).filter(|(p, _)| p.leaf).map(|(_, e)| e).collect();
        if leaves.is_empty() {
            leaves.push(&start);
        }
        let end = queue.events_wait(&leaves)?;
        let event = Event::span(&start, &end, &done, inner.props.enable_profiling)?;
        st.last = Some(event.clone());
        Ok(event)
    }
}

/// The one submission of a graph that makes one: its composition, else its
/// one command buffer.
#[inline]
fn submit_one(st: &ExecState, queue: &Queue, wait: &[&Event]) -> Result<Event> {
    match &st.composed {
        Some(composed) => queue.enqueue_composed(composed, wait),
        None => queue
            .enqueue_command_buffer(st.parts[0].cb.as_ref().expect("device partitions have a command buffer"), wait),
    }
}

/// The order partitions are submitted in: a topological order in which
/// every partition that waits, directly or not, for fewer host tasks comes
/// first. A device partition that waits for a host task is then submitted
/// after the independent work, so that a queue which runs its commands in
/// submission order (NVIDIA's OpenCL, whatever the out-of-order property
/// says) cannot hold independent branches behind it, one of which the host
/// task may be waiting for.
pub(super) fn submission_order(parts: &[Part]) -> Vec<u32> {
    // Host tasks on the longest path before each partition; partitions are
    // numbered topologically, so predecessors are already counted.
    let mut depth = vec![0u32; parts.len()];
    for (i, part) in parts.iter().enumerate() {
        depth[i] =
            part.preds.iter().map(|p| depth[*p as usize] + u32::from(parts[*p as usize].host)).max().unwrap_or(0);
    }
    let mut order: Vec<u32> = (0..parts.len() as u32).collect();
    // Stable: equal depths keep their topological order, and a predecessor
    // never has a greater depth than its successor.
    order.sort_by_key(|i| depth[*i as usize]);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(host: bool, preds: &[u32]) -> Part {
        Part { host, device: 0, members: Vec::new(), preds: preds.to_vec() }
    }

    #[test]
    fn work_after_host_tasks_is_submitted_last() {
        // Two branches, each device -> host task -> device, numbered branch
        // by branch: the partitions after the host tasks go last.
        let parts = [
            part(false, &[]),
            part(true, &[0]),
            part(false, &[1]),
            part(false, &[]),
            part(true, &[3]),
            part(false, &[4]),
        ];
        assert_eq!(submission_order(&parts), vec![0, 1, 3, 4, 2, 5]);
        // Without host tasks the order is the partitions' own.
        let plain = [part(false, &[]), part(false, &[0]), part(false, &[]), part(false, &[1, 2])];
        assert_eq!(submission_order(&plain), vec![0, 1, 2, 3]);
    }
}
