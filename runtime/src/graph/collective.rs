//! Collective nodes: an all-reduce, all-gather, reduce-scatter or broadcast
//! over the devices of a (multi-device) graph, one rank per device in the
//! graph's order ([`Handler::all_reduce`], ...), through cmdbuf-core's
//! [`Communicator`] (NCCL on CUDA devices, staged through the host
//! elsewhere).
//!
//! A collective node is a partition of its own, as a peer copy is (where
//! the graph is composed, a part of the composition: see
//! `executable::compose`). Finalize
//! records it on the graph's communicator ([`Communicator::record`]: on
//! CUDA with NCCL, the group call captured once into one CUDA graph over
//! the ranks' devices) and makes a queue per rank; at each execution the
//! recording is launched on those queues, each rank's part after the
//! node's predecessors (events of other devices as they are where the
//! rank's device waits for them, else through bridges), and the
//! partition's event, of the node's device, ends when every rank's part
//! has. Where it is not captured (host staging, or a failed capture), each
//! execution issues the collective.
//!
//! [`Communicator::record`]: cmdbuf_core::collective::Communicator::record

use std::sync::Arc;

use smallvec::SmallVec;

use cmdbuf_core::collective::{CollectiveOp, DataType, ReduceOp};
use cmdbuf_core::error::Result;
use cmdbuf_core::event::Event;
use cmdbuf_core::memory::UsmPtr;
use cmdbuf_core::queue::Queue;

use super::handler::{Handler, Pending};
use super::state::{CollectiveNode, CollectiveRun, Devices, ExecState, FlatOp, Partition};

impl CollectiveRun {
    /// The node with its communicator and a queue per rank.
    pub(crate) fn new(node: &CollectiveNode, devices: &Devices) -> Result<CollectiveRun> {
        let comm = devices.communicator()?;
        let queues = (0..comm.size() as u16).map(|d| devices.worker(d)).collect::<Result<_>>()?;
        let recorded = comm.record(node.op, node.dtype, &node.buffers)?;
        Ok(CollectiveRun { node: node.clone(), recorded, queues })
    }

    /// Its rank count: one per device of the graph.
    pub(crate) fn ranks(&self) -> u16 {
        self.queues.len() as u16
    }

    /// How it runs, for DOT output: the native implementation and whether
    /// it is captured, or host staging.
    pub(crate) fn how(&self) -> String {
        match (self.recorded.communicator().native_name(), self.recorded.is_captured()) {
            (Some(name), true) => format!("{name}, captured"),
            (Some(name), false) => format!("{name}, issued at each execution"),
            (None, _) => "staged through the host".to_string(),
        }
    }
}

/// Submits partition `part` where it is a collective node: every rank's
/// part after the partition's predecessors (`done`, or `start` for none),
/// and an event of the graph's own device after all ranks. `None` for
/// any other partition.
pub(crate) fn submit(
    st: &ExecState,
    part: &Partition,
    done: &[Option<Event>],
    start: &Event,
    devices: &Devices,
) -> Result<Option<Event>> {
    let FlatOp::Collective(run) = &st.nodes[part.members[0] as usize].op else { return Ok(None) };
    let preds: SmallVec<[(&Event, u16); 4]> = if part.preds.is_empty() {
        SmallVec::from_elem((start, 0), 1)
    } else {
        part.preds
            .iter()
            .map(|p| (done[*p as usize].as_ref().expect("predecessors go first"), st.parts[*p as usize].device))
            .collect()
    };
    let n = run.queues.len();
    let mut waits: Vec<Vec<Event>> = Vec::with_capacity(n);
    for rank in 0..n as u16 {
        let own = preds.iter().map(|(e, from)| devices.event_for(rank, e, *from)).collect::<Result<Vec<Event>>>()?;
        waits.push(own);
    }
    let refs: Vec<Vec<&Event>> = waits.iter().map(|w| w.iter().collect()).collect();
    let parts: Vec<(&Queue, &[&Event])> = run.queues.iter().zip(&refs).map(|(q, w)| (q, &w[..])).collect();
    let events = run.recorded.enqueue(&parts)?;
    // The partition's event is of the device it is placed on (the graph's
    // own unless placed elsewhere), where its successors look for it.
    let on = part.device;
    let joined =
        events.iter().enumerate().map(|(r, e)| devices.event_for(on, e, r as u16)).collect::<Result<Vec<Event>>>()?;
    let all: Vec<&Event> = joined.iter().collect();
    Ok(Some(run.queues[on as usize].events_wait(&all)?))
}

impl Handler {
    /// Records an all-reduce over the graph's devices: rank `d` is device
    /// `d` of [`Graph::devices`](super::Graph::devices), `buffers[d]` its
    /// `(send, recv)` USM pointers (equal for in place); every rank
    /// receives the element-wise `op` of every rank's `count` elements.
    /// Checked as [`Communicator::enqueue`] checks (the node's errors are
    /// its: `InvalidValue` for a rank count other than the graph's device
    /// count, `InvalidSize`, `OverlappingRegions`, ...). See
    /// [`crate::graph`], collectives.
    pub fn all_reduce(
        &mut self,
        buffers: &[(UsmPtr, UsmPtr)],
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<()> {
        self.collective(CollectiveOp::AllReduce { count, op }, dtype, buffers)
    }

    /// Records an all-gather over the graph's devices (see
    /// [`all_reduce`](Self::all_reduce)): every rank receives `count`
    /// elements, each rank's `count / n` in rank order.
    pub fn all_gather(&mut self, buffers: &[(UsmPtr, UsmPtr)], count: usize, dtype: DataType) -> Result<()> {
        self.collective(CollectiveOp::AllGather { count }, dtype, buffers)
    }

    /// Records a reduce-scatter over the graph's devices (see
    /// [`all_reduce`](Self::all_reduce)): rank `r` receives the `r`-th of
    /// `n` parts of the element-wise `op` of every rank's `count` elements.
    pub fn reduce_scatter(
        &mut self,
        buffers: &[(UsmPtr, UsmPtr)],
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<()> {
        self.collective(CollectiveOp::ReduceScatter { count, op }, dtype, buffers)
    }

    /// Records a broadcast of `count` elements from rank `root` over the
    /// graph's devices (see [`all_reduce`](Self::all_reduce)).
    pub fn broadcast(
        &mut self,
        buffers: &[(UsmPtr, UsmPtr)],
        count: usize,
        dtype: DataType,
        root: usize,
    ) -> Result<()> {
        self.collective(CollectiveOp::Broadcast { count, root }, dtype, buffers)
    }

    /// Records the collective `op` over the graph's devices, `buffers[d]`
    /// being device `d`'s `(send, recv)` (see [`all_reduce`](Self::all_reduce)).
    pub fn collective(&mut self, op: CollectiveOp, dtype: DataType, buffers: &[(UsmPtr, UsmPtr)]) -> Result<()> {
        let comm = self.graph.devices.communicator()?;
        comm.check_buffers(&op, dtype, buffers)
            .map_err(|e| e.in_context(&format!("collective node of graph #{}", self.graph.id)))?;
        self.set(Pending::Collective(Arc::new(CollectiveNode { op, dtype, buffers: buffers.to_vec() })))
    }
}
