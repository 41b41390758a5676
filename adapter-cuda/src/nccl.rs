//! Collectives through NCCL, loaded at run time (`libnccl.so.2`, see
//! `nccl_lib.rs`): one communicator per group of devices of this process
//! (`ncclCommInitAll`), each call one grouped NCCL call (`ncclGroupStart` /
//! `ncclGroupEnd`) with one rank per device, each rank's part on a stream of
//! its device that waits for the rank's queue.
//!
//! Per rank: a marker on the rank's queue after its wait list (the queue's
//! order too); a pooled stream of the rank's device waits for the marker's
//! event; NCCL enqueues the rank's part on that stream; an event recorded
//! after it, and a final marker on the queue after that event, is the
//! rank's event, so later work of the queue follows the collective.
//!
//! A marker held back on the host (its wait list holds a user event not yet
//! complete) is waited for on the host before the group call: NCCL's ranks
//! must all be enqueued in one group, so no rank can be left for later.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::{CapturedCollectiveImpl, CollectiveImpl, CollectiveRank};
use cmdbuf_core::collective::{CollectiveOp, DataType, ReduceOp};
use cmdbuf_core::ensure;

use cudarc::driver::sys;

use crate::device::{DeviceShared, Release};
use crate::driver::{CuEvent, Stream, cu, stream_wait_event};
use crate::event::CudaEvent;
use crate::graph::ExecGraph;
use crate::nccl_lib::{self, Comm, Nccl};
use crate::queue::CudaQueue;

/// Set to `0` to issue NCCL calls at each launch of a recorded collective
/// instead of capturing them into a CUDA graph (for comparisons).
pub const CAPTURE_ENV: &str = "UR_RS_NCCL_CAPTURE";

/// The loaded NCCL, or `UnsupportedFeature` with the reason where
/// `libnccl.so.2` or one of the symbols this module calls is missing.
fn api() -> Result<&'static Nccl> {
    nccl_lib::nccl().map_err(|reason| err!(UnsupportedFeature, "{reason}"))
}

/// `Ok` for `ncclSuccess`; otherwise the failure with NCCL's message
/// (`ncclInvalidArgument` and `ncclInvalidUsage`: `InvalidValue`;
/// `ncclSystemError`: `OutOfResources`; others `Unknown`).
fn check(nccl: &Nccl, status: c_int, call: &str) -> Result<()> {
    if status == nccl_lib::SUCCESS {
        return Ok(());
    }
    let message = nccl.error_string(status);
    Err(match status {
        4 | 5 => err!(InvalidValue, "{call} failed ({status}): {message}"),
        2 => err!(OutOfResources, "{call} failed ({status}): {message}"),
        _ => err!(Unknown, "{call} failed ({status}): {message}"),
    })
}

fn data_type(dtype: DataType) -> c_int {
    use nccl_lib::dtype as T;
    match dtype {
        DataType::I8 => T::INT8,
        DataType::U8 => T::UINT8,
        DataType::I32 => T::INT32,
        DataType::U32 => T::UINT32,
        DataType::I64 => T::INT64,
        DataType::U64 => T::UINT64,
        DataType::F16 => T::FLOAT16,
        DataType::F32 => T::FLOAT32,
        DataType::F64 => T::FLOAT64,
        DataType::BF16 => T::BFLOAT16,
    }
}

fn reduce_op(op: ReduceOp) -> c_int {
    use nccl_lib::op as O;
    match op {
        ReduceOp::Sum => O::SUM,
        ReduceOp::Prod => O::PROD,
        ReduceOp::Min => O::MIN,
        ReduceOp::Max => O::MAX,
    }
}

/// An NCCL communicator per device of a group, from `ncclCommInitAll`.
pub(crate) struct NcclGroup {
    nccl: &'static Nccl,
    comms: Vec<Comm>,
    devices: Vec<Arc<DeviceShared>>,
}

// SAFETY: NCCL communicators may be used from any thread; the front end
// makes calls on one group one at a time (`CollectiveImpl::enqueue`'s
// contract), as NCCL requires of one communicator.
unsafe impl Send for NcclGroup {}
// SAFETY: as for `Send`: `&self` methods only pass the handles to NCCL
// calls the front end serializes.
unsafe impl Sync for NcclGroup {}

impl NcclGroup {
    /// Communicators over `devices`, rank `i` on `devices[i]`.
    pub(crate) fn new(devices: Vec<Arc<DeviceShared>>) -> Result<NcclGroup> {
        let nccl = api()?;
        let ordinals: Vec<c_int> = devices.iter().map(|d| d.device).collect();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        let n = c_int::try_from(devices.len()).map_err(|_| err!(InvalidValue, "too many ranks for NCCL"))?;
        // SAFETY: `comms` has room for `n` handles and `ordinals` holds `n`
        // distinct device ordinals (the front end checked the devices are
        // distinct; a `CUdevice` is its ordinal).
        check(nccl, unsafe { (nccl.comm_init_all)(comms.as_mut_ptr(), n, ordinals.as_ptr()) }, "ncclCommInitAll")?;
        tracing::debug!(version = %nccl.version, ranks = devices.len(), "NCCL communicators");
        Ok(NcclGroup { nccl, comms, devices })
    }
}

impl Drop for NcclGroup {
    fn drop(&mut self) {
        for comm in &self.comms {
            // SAFETY: each handle came from `ncclCommInitAll` and is destroyed
            // once; the front end's events of every call hold no reference
            // to it, and NCCL completes enqueued work before freeing.
            if let Err(e) = check(self.nccl, unsafe { (self.nccl.comm_destroy)(*comm) }, "ncclCommDestroy") {
                tracing::warn!(error = %e, "destroying an NCCL communicator");
            }
        }
    }
}

impl NcclGroup {
    /// One grouped NCCL call: rank `i`'s part with `addrs[i]` on `streams[i]`.
    ///
    /// # Safety
    /// As for [`CollectiveImpl::enqueue`]: the addresses are the checked
    /// ranges of each rank, and `streams[i]` is a stream of rank `i`'s device.
    unsafe fn group_call(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        addrs: &[(u64, u64)],
        streams: &[sys::CUstream],
    ) -> Result<()> {
        let n = addrs.len();
        let nccl = self.nccl;
        // SAFETY: no arguments.
        check(nccl, unsafe { (nccl.group_start)() }, "ncclGroupStart")?;
        let mut first_error = Ok(());
        for (i, (send, recv)) in addrs.iter().enumerate() {
            let (send, recv) = (*send as *const c_void, *recv as *mut c_void);
            let (comm, stream) = (self.comms[i], streams[i] as nccl_lib::Stream);
            let t = data_type(dtype);
            // SAFETY: the caller's contract: `send` and `recv` hold the
            // elements NCCL reads and writes for this rank, in allocations of
            // the rank's device kept alive until its work completes,
            // overlapping only in NCCL's in-place layouts; the stream is of
            // the rank's device and the communicator is the rank's.
            let result = unsafe {
                match *op {
                    CollectiveOp::AllReduce { count, op } => {
                        (nccl.all_reduce)(send, recv, count, t, reduce_op(op), comm, stream)
                    }
                    CollectiveOp::AllGather { count } => (nccl.all_gather)(send, recv, count / n, t, comm, stream),
                    CollectiveOp::ReduceScatter { count, op } => {
                        (nccl.reduce_scatter)(send, recv, count / n, t, reduce_op(op), comm, stream)
                    }
                    CollectiveOp::Broadcast { count, root } => {
                        (nccl.broadcast)(send, recv, count, t, root as c_int, comm, stream)
                    }
                }
            };
            if first_error.is_ok() {
                first_error = check(nccl, result, op.name());
            }
        }
        // Ended whatever happened inside: a group left open would take the
        // next calls of this thread.
        // SAFETY: no arguments; a group is open.
        let ended = check(nccl, unsafe { (nccl.group_end)() }, "ncclGroupEnd");
        first_error.and(ended)
    }
}

impl CollectiveImpl for NcclGroup {
    fn name(&self) -> String {
        format!("NCCL {}", self.nccl.version)
    }

    unsafe fn capture(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        buffers: &[(u64, u64)],
    ) -> Result<Box<dyn CapturedCollectiveImpl>> {
        ensure!(
            std::env::var_os(CAPTURE_ENV).is_none_or(|v| v != "0"),
            UnsupportedFeature,
            "capture of NCCL calls disabled by {CAPTURE_ENV}=0"
        );
        ensure!(
            buffers.len() == self.comms.len(),
            InvalidValue,
            "{} ranks for {} communicators",
            buffers.len(),
            self.comms.len()
        );
        // SAFETY: the trait's `capture` contract (each rank's checked ranges in live USM, one queue
        // per rank's device) is `capture_graph`'s `# Safety`.
        let (exec, graph) = unsafe { self.capture_graph(op, dtype, buffers)? };
        let mut capture =
            NcclCapture { exec, graph, dev: self.devices[0].clone(), ranks: buffers.len(), not_child: None };
        // The capture still launches on its own where its nodes cannot be listed.
        capture.not_child =
            capture.child_refusal().unwrap_or_else(|e| Some(format!("its nodes could not be listed: {e}")));
        Ok(Box::new(capture))
    }

    unsafe fn enqueue(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        ranks: &[CollectiveRank<'_>],
    ) -> Result<Vec<Arc<dyn EventImpl>>> {
        ensure!(
            ranks.len() == self.comms.len(),
            InvalidValue,
            "{} ranks for {} communicators",
            ranks.len(),
            self.comms.len()
        );
        let queues: Vec<&CudaQueue> = ranks
            .iter()
            .map(|r| cmdbuf_core::adapter::downcast::<CudaQueue>(r.queue as &dyn std::any::Any, "a rank's queue"))
            .collect::<Result<_>>()?;
        // Each rank's queue order and wait list, as a marker whose event
        // the rank's stream waits for.
        let mut markers = Vec::with_capacity(ranks.len());
        for (rank, queue) in ranks.iter().zip(&queues) {
            // SAFETY: a marker touches no memory; the wait events are of the
            // rank's context (the front end resolved them there).
            markers.push(unsafe { queue.marker(rank.wait)? });
        }
        for marker in &markers {
            if let Some(gate) = marker.held_gate() {
                tracing::debug!("a rank of a collective waits on the host for its wait list");
                // The marker's own outcome does not matter: wait lists order.
                let _ = gate.wait();
            }
        }
        let mut streams = Vec::with_capacity(ranks.len());
        for (dev, marker) in self.devices.iter().zip(&markers) {
            let stream = dev.take_stream()?;
            dev.bind()?;
            stream_wait_event(stream.raw(), marker.end().raw())?;
            streams.push(stream);
        }
        let n = ranks.len();
        let addrs: Vec<(u64, u64)> = ranks.iter().map(|r| (r.send, r.recv)).collect();
        let raw: Vec<sys::CUstream> = streams.iter().map(Stream::raw).collect();
        // SAFETY: the ranges are the checked ranges of each rank (the trait's `enqueue` contract), and
        // each stream is of its rank's device, as `group_call` requires.
        let issued = unsafe { self.group_call(op, dtype, &addrs, &raw) };
        // Each rank's event: recorded on its stream after its part, then a
        // marker of its queue after it. The streams go back to their pools
        // (reused once idle) whether the call worked or not.
        let mut events: Vec<Arc<dyn EventImpl>> = Vec::with_capacity(n);
        let mut result = issued;
        for ((dev, stream), queue) in self.devices.iter().zip(streams).zip(&queues) {
            if result.is_ok() {
                let recorded = dev.bind().and_then(|()| {
                    let work = CudaEvent::new(dev, false)?;
                    work.end().record(stream.raw())?;
                    Ok(work)
                });
                match recorded {
                    // SAFETY: a marker touches no memory; the event is of the
                    // rank's device, whose queue this is.
                    Ok(work) => match unsafe { queue.marker(&[&work as &dyn EventImpl]) } {
                        Ok(event) => events.push(event as Arc<dyn EventImpl>),
                        Err(e) => result = Err(e),
                    },
                    Err(e) => result = Err(e),
                }
            }
            dev.return_stream(stream);
        }
        result?;
        Ok(events)
    }
}

impl NcclGroup {
    /// Captures the group call into one CUDA graph over the ranks' devices:
    /// a pooled stream of rank 0's device starts the capture and forks to a
    /// stream of each other rank's device through an event, NCCL enqueues
    /// every rank's part on its stream, and each stream joins back to the
    /// first through an event before the capture ends. One launch of the
    /// graph then runs every rank's part (NCCL advises against launching one
    /// graph per GPU from one thread: a launch may block until the others').
    /// Returns the executable graph and its template, which compositions
    /// take as a child graph (the caller releases it through rank 0's
    /// device).
    ///
    /// # Safety
    /// As for [`CollectiveImpl::capture`].
    unsafe fn capture_graph(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        addrs: &[(u64, u64)],
    ) -> Result<(Arc<ExecGraph>, sys::CUgraph)> {
        let mut streams = Vec::with_capacity(self.devices.len());
        for dev in &self.devices {
            streams.push(dev.take_stream()?);
        }
        let raw: Vec<sys::CUstream> = streams.iter().map(Stream::raw).collect();
        let dev0 = &self.devices[0];
        let result = (|| {
            dev0.bind()?;
            let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
            // SAFETY: the stream is idle (pooled) and not capturing.
            unsafe { cu!(cuStreamBeginCapture_v2(raw[0], mode))? };
            // The events live until the capture has ended.
            let mut events = Vec::with_capacity(self.devices.len());
            let body = (|| {
                let fork = CuEvent::new(false)?;
                fork.record(raw[0])?;
                for (dev, stream) in self.devices.iter().zip(&raw).skip(1) {
                    dev.bind()?;
                    // Joins the capture: a stream of another device may wait
                    // for an event of this one.
                    stream_wait_event(*stream, fork.raw())?;
                }
                events.push(fork);
                // SAFETY: the ranges are each rank's checked ranges, alive as long as the capture
                // (this function's `# Safety`, `capture`'s), and each stream is of its rank's device
                // and captures into the graph, as `group_call` requires.
                unsafe { self.group_call(op, dtype, addrs, &raw)? };
                for (dev, stream) in self.devices.iter().zip(&raw).skip(1) {
                    dev.bind()?;
                    let join = CuEvent::new(false)?;
                    join.record(*stream)?;
                    events.push(join);
                }
                dev0.bind()?;
                for join in &events[1..] {
                    stream_wait_event(raw[0], join.raw())?;
                }
                Ok(())
            })();
            let _ = dev0.bind();
            let mut graph: sys::CUgraph = std::ptr::null_mut();
            // SAFETY: the stream started the capture; ending it also ends
            // the other streams' part in it (they joined back, or the
            // capture is invalidated and the error below says so).
            let end = unsafe { cu!(cuStreamEndCapture(raw[0], &mut graph)) };
            drop(events);
            let captured = body.and(end);
            if let Err(e) = captured {
                if !graph.is_null() {
                    dev0.release(Release::Graph(graph));
                }
                return Err(e);
            }
            let mut exec: sys::CUgraphExec = std::ptr::null_mut();
            // SAFETY: the graph is complete; writes a new executable graph.
            let made = unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, graph, 0)) };
            if let Err(e) = made {
                dev0.release(Release::Graph(graph));
                return Err(e);
            }
            Ok((ExecGraph::new(dev0, exec), graph))
        })();
        for (dev, stream) in self.devices.iter().zip(streams) {
            dev.return_stream(stream);
        }
        result
    }
}

/// A collective captured into one CUDA graph over the ranks' devices.
pub(crate) struct NcclCapture {
    exec: Arc<ExecGraph>,
    /// The captured graph (owned, released through `dev`), which
    /// compositions copy into a child-graph node; its NCCL nodes keep the
    /// resources NCCL attached to the capture (user objects), which copies
    /// retain too.
    graph: sys::CUgraph,
    /// Rank 0's device, where the capture was made.
    dev: Arc<DeviceShared>,
    ranks: usize,
    /// Why the graph cannot be a child graph (of a composition), where it
    /// cannot: found once, after the capture.
    not_child: Option<String>,
}

// SAFETY: the graph handle is only read (copied by `cuGraphClone`, which
// the driver makes thread safe for a graph nobody changes) and released
// once on drop; everything else is `Send + Sync`.
unsafe impl Send for NcclCapture {}
// SAFETY: as for `Send`: `&self` never changes the graph.
unsafe impl Sync for NcclCapture {}

impl NcclCapture {
    /// Why the captured graph cannot be a child graph, if it cannot: CUDA
    /// refuses child graphs holding memory allocation or free nodes, or
    /// conditional nodes (node types 10, 11 and 13 of `CUgraphNodeType`).
    fn child_refusal(&self) -> Result<Option<String>> {
        self.dev.bind()?;
        let mut count = 0usize;
        // SAFETY: the graph is alive; a null array asks for the count.
        unsafe { cu!(cuGraphGetNodes(self.graph, std::ptr::null_mut(), &mut count))? };
        let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
        // SAFETY: `nodes` has room for `count` handles.
        unsafe { cu!(cuGraphGetNodes(self.graph, nodes.as_mut_ptr(), &mut count))? };
        for node in nodes.iter().take(count) {
            let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
            // SAFETY: `node` is a node of the live graph.
            unsafe { cu!(cuGraphNodeGetType(*node, &mut kind))? };
            let raw = kind as u32;
            if matches!(raw, 10 | 11 | 13) {
                return Ok(Some(format!(
                    "the NCCL capture holds a node of type {raw} (memory allocation, free or conditional), which a \
                     child graph cannot"
                )));
            }
        }
        Ok(None)
    }

    /// A copy of the captured graph, owned by the caller (released through
    /// [`device`](Self::device)), for a child-graph node of a composition;
    /// `UnsupportedFeature` with the reason where the capture cannot be a
    /// child graph.
    pub(crate) fn copy_graph(&self) -> Result<sys::CUgraph> {
        if let Some(reason) = &self.not_child {
            return Err(err!(UnsupportedFeature, "{reason}"));
        }
        self.dev.bind()?;
        let mut copy: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: the graph is alive (owned by `self`) and never changed
        // after the capture; writes a new graph.
        unsafe { cu!(cuGraphClone(&mut copy, self.graph))? };
        Ok(copy)
    }

    /// Rank 0's device, where the capture was made.
    pub(crate) fn device(&self) -> &Arc<DeviceShared> {
        &self.dev
    }
}

impl Drop for NcclCapture {
    fn drop(&mut self) {
        // Compositions copied it; the executable graph does not need it.
        self.dev.release(Release::Graph(self.graph));
    }
}

impl CapturedCollectiveImpl for NcclCapture {
    /// Rank 0's queue launches the graph after its wait list and a marker
    /// of every other rank's queue (streams wait for events of other
    /// devices); every other rank's event is a marker of its queue after
    /// the launch, so that each queue's later work follows the collective.
    unsafe fn launch(&self, ranks: &[CollectiveRank<'_>]) -> Result<Vec<Arc<dyn EventImpl>>> {
        ensure!(ranks.len() == self.ranks, InvalidValue, "{} ranks for a capture of {}", ranks.len(), self.ranks);
        let queues: Vec<&CudaQueue> = ranks
            .iter()
            .map(|r| cmdbuf_core::adapter::downcast::<CudaQueue>(r.queue as &dyn std::any::Any, "a rank's queue"))
            .collect::<Result<_>>()?;
        let mut markers = Vec::with_capacity(ranks.len());
        for (rank, queue) in ranks.iter().zip(&queues).skip(1) {
            // SAFETY: a marker touches no memory; the events are the rank's.
            markers.push(unsafe { queue.marker(rank.wait)? });
        }
        let mut waits: Vec<&dyn EventImpl> = ranks[0].wait.to_vec();
        waits.extend(markers.iter().map(|m| &**m as &dyn EventImpl));
        // SAFETY: the graph's memory is the capture's ranges, which the
        // front end keeps alive; the wait events are of this adapter.
        let launched = unsafe { queues[0].launch_graph(self.exec.clone(), &waits)? };
        let mut events: Vec<Arc<dyn EventImpl>> = vec![launched.clone()];
        for queue in &queues[1..] {
            // SAFETY: a marker touches no memory; the event is of this adapter.
            events.push(unsafe { queue.marker(&[&*launched as &dyn EventImpl])? });
        }
        Ok(events)
    }
}
