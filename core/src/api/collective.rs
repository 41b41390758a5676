//! Collectives over a group of devices: all-reduce, all-gather,
//! reduce-scatter and broadcast between USM allocations of several contexts,
//! one per device (a *rank*), each rank's part enqueued on a queue of its
//! context.
//!
//! A [`Communicator`] is made over the contexts, in rank order. Where the
//! ranks' adapter runs collectives natively (the CUDA adapter with NCCL:
//! [`DeviceImpl::collective_group`](crate::adapter::DeviceImpl::collective_group)),
//! each call is one native group call on the ranks' queues. Otherwise, or
//! when asked ([`Implementation::HostStaged`]), a collective is staged
//! through the host with ordinary queue operations: each rank's data is
//! copied into host-visible staging memory of its context, the host reduces
//! (or gathers) once every rank's copy has completed, and each rank's result
//! is copied out of staging on its queue. That works between devices of any
//! backends, with the same results.
//!
//! The front end checks every call once (ranks, contexts, counts, ranges,
//! overlaps, wait lists); adapters trust it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::adapter::{CapturedCollectiveImpl, CollectiveImpl, CollectiveRank, DeviceImpl, EventImpl};
use crate::context::Context;
use crate::error::{Result, UrError};
use crate::event::{Event, EventStatus, UserEvent, as_refs, resolve_wait_list};
use crate::memory::{UsmAllocation, UsmKind, UsmPtr, UsmRef};
use crate::queue::Queue;
pub use crate::types::collective::{
    CollectiveOp, DataType, ReduceOp, bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, reduce_into,
};
use crate::types::device::UsmKinds;
use crate::{ensure, err};

/// Which implementation a communicator uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Implementation {
    /// The adapter's native collectives where it has them for these
    /// devices (NCCL on CUDA), else host staging (the reason is logged at
    /// `info` level).
    #[default]
    Auto,
    /// The adapter's native collectives: `UnsupportedFeature`, with the
    /// reason, where it has none for these devices.
    Native,
    /// Host staging, on any devices.
    HostStaged,
}

/// One rank's part of a collective call.
#[derive(Copy, Clone)]
pub struct Rank<'a> {
    /// A queue of the rank's context.
    pub queue: &'a Queue,
    /// What the rank sends: USM of the rank's context. A broadcast reads
    /// only the root's.
    pub send: UsmPtr,
    /// Where the rank receives: USM of the rank's context; equal to `send`
    /// for an in-place all-reduce or broadcast (see [`Communicator`] for
    /// all-gather and reduce-scatter).
    pub recv: UsmPtr,
    /// Events the rank's part waits for, of the rank's context.
    pub wait: &'a [&'a Event],
}

impl<'a> Rank<'a> {
    /// A rank's part without a wait list.
    pub fn new(queue: &'a Queue, send: UsmPtr, recv: UsmPtr) -> Rank<'a> {
        Rank { queue, send, recv, wait: &[] }
    }

    /// The same part, waiting for `wait`.
    pub fn after(self, wait: &'a [&'a Event]) -> Rank<'a> {
        Rank { wait, ..self }
    }
}

/// A group of devices that run collectives together, one rank per context.
///
/// Counts are of elements of the call's [`DataType`]: an all-reduce's and
/// a broadcast's `count` is what every rank sends and receives; an
/// all-gather's `count` is what every rank receives (each sends
/// `count / n`); a reduce-scatter's `count` is what every rank sends (each
/// receives `count / n`); `n`, the rank count, must divide the latter two.
/// In place means `send == recv` for an all-reduce and a broadcast; for an
/// all-gather, rank `r`'s `send` is `recv + r * count / n` elements (its own
/// slot of the result); for a reduce-scatter, rank `r`'s `recv` is `send + r
/// * count / n` elements. Other overlaps of a rank's ranges are
/// `OverlappingRegions`.
///
/// Each call returns one event per rank, of the rank's context, that ends
/// when the rank's result is written and reports the first failure of the
/// rank's part. After a failed collective, the receive ranges' contents are
/// unspecified. Calls on one communicator are made one at a time (a lock),
/// so that every rank sees them in the same order, as NCCL requires.
#[derive(Clone)]
pub struct Communicator {
    inner: Arc<Inner>,
}

struct Inner {
    /// Dropped before the contexts (fields drop in order).
    native: Option<Box<dyn CollectiveImpl>>,
    contexts: Vec<Context>,
    /// Orders calls, so that every rank's parts come in the same order.
    calls: Mutex<()>,
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("ranks", &self.inner.contexts.len())
            .field("native", &self.native_name())
            .finish()
    }
}

impl Communicator {
    /// A communicator over `contexts`, rank `i` being `contexts[i]`'s
    /// device, with the adapter's native collectives where it has them
    /// ([`Implementation::Auto`]).
    ///
    /// `InvalidValue` for no context; `InvalidDevice` for two contexts of
    /// one device (a device and its emulated view are one device).
    pub fn new(contexts: &[&Context]) -> Result<Communicator> {
        Communicator::with_implementation(contexts, Implementation::Auto)
    }

    /// A communicator over `contexts` with the given implementation;
    /// [`Implementation::Native`] is `UnsupportedFeature` where the adapter
    /// has no native collectives for these devices (devices of several
    /// backends, an adapter without them, CUDA without `libnccl.so.2`).
    #[tracing::instrument(level = "debug", skip(contexts), fields(ranks = contexts.len()))]
    pub fn with_implementation(contexts: &[&Context], implementation: Implementation) -> Result<Communicator> {
        ensure!(!contexts.is_empty(), InvalidValue, "a communicator needs at least one context");
        for (i, c) in contexts.iter().enumerate() {
            for o in &contexts[..i] {
                ensure!(
                    !Arc::ptr_eq(o.device().imp(), c.device().imp()),
                    InvalidDevice,
                    "{} and {} are one device: a communicator's ranks are distinct devices",
                    o.device(),
                    c.device()
                );
            }
        }
        let native = match implementation {
            Implementation::HostStaged => None,
            Implementation::Auto => match native_group(contexts) {
                Ok(group) => Some(group),
                Err(UrError::UnsupportedFeature(reason)) => {
                    tracing::info!(reason = %reason, "collectives staged through the host");
                    None
                }
                Err(e) => return Err(e),
            },
            Implementation::Native => Some(native_group(contexts)?),
        };
        if let Some(group) = &native {
            tracing::debug!(implementation = %group.name(), "native collectives");
        }
        let contexts = contexts.iter().map(|c| (*c).clone()).collect();
        Ok(Communicator { inner: Arc::new(Inner { native, contexts, calls: Mutex::new(()) }) })
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.inner.contexts.len()
    }

    /// The ranks' contexts, in rank order.
    pub fn contexts(&self) -> &[Context] {
        &self.inner.contexts
    }

    /// The native implementation's name (`NCCL 2.28.3`), or `None` where
    /// collectives are staged through the host.
    pub fn native_name(&self) -> Option<String> {
        self.inner.native.as_ref().map(|n| n.name())
    }

    /// Every rank receives the element-wise `op` of every rank's `count` elements.
    pub fn all_reduce(&self, ranks: &[Rank<'_>], count: usize, dtype: DataType, op: ReduceOp) -> Result<Vec<Event>> {
        self.enqueue(CollectiveOp::AllReduce { count, op }, dtype, ranks)
    }

    /// Every rank receives `count` elements: each rank's `count / n`, in rank order.
    pub fn all_gather(&self, ranks: &[Rank<'_>], count: usize, dtype: DataType) -> Result<Vec<Event>> {
        self.enqueue(CollectiveOp::AllGather { count }, dtype, ranks)
    }

    /// Rank `r` receives the `r`-th of `n` equal parts of the element-wise
    /// `op` of every rank's `count` elements.
    pub fn reduce_scatter(
        &self,
        ranks: &[Rank<'_>],
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<Vec<Event>> {
        self.enqueue(CollectiveOp::ReduceScatter { count, op }, dtype, ranks)
    }

    /// Every rank receives the `count` elements rank `root` sends.
    pub fn broadcast(&self, ranks: &[Rank<'_>], count: usize, dtype: DataType, root: usize) -> Result<Vec<Event>> {
        self.enqueue(CollectiveOp::Broadcast { count, root }, dtype, ranks)
    }

    /// Enqueues `op` over `dtype` elements, one part per rank in rank order.
    ///
    /// Errors: `InvalidValue` for a rank count other than the
    /// communicator's or a broadcast root out of range; `InvalidQueue` for a
    /// rank's queue of another context than the rank's; `InvalidSize` for a
    /// count of 0, one the rank count does not divide (all-gather,
    /// reduce-scatter), or a range that leaves its allocation;
    /// `InvalidValue` for a pointer in no USM allocation of the rank's
    /// context; `OverlappingRegions` for a rank's ranges that overlap other
    /// than in place; `InvalidEventWaitList` for an event of another
    /// context, unless the rank's context waits for that context's events
    /// ([`Context::waits_on_events_of`](crate::Context::waits_on_events_of));
    /// `GraphCaptureUnsupported` on a capturing queue.
    #[tracing::instrument(level = "debug", skip(self, ranks), fields(op = op.name(), %dtype))]
    pub fn enqueue(&self, op: CollectiveOp, dtype: DataType, ranks: &[Rank<'_>]) -> Result<Vec<Event>> {
        let checked = self.check(&op, dtype, ranks)?;
        let _order = self.inner.calls.lock();
        match &self.inner.native {
            Some(_) => native_call(self, &op, dtype, ranks, checked),
            None => staged(&op, dtype, ranks, checked),
        }
    }

    /// Records `op` over `dtype` elements with each rank's `(send, recv)`
    /// for launches at any time later ([`RecordedCollective::enqueue`]),
    /// checked now as [`enqueue`](Self::enqueue) checks them; the
    /// allocations are kept alive as long as the recording. Where the
    /// adapter can, the collective is captured once (CUDA: the NCCL group
    /// call captured into one CUDA graph over the ranks' devices) and each
    /// launch replays it; otherwise, or when the capture fails (logged at
    /// `warn` level), each launch issues it as `enqueue` does.
    #[tracing::instrument(level = "debug", skip(self, buffers), fields(op = op.name(), %dtype))]
    pub fn record(
        &self,
        op: CollectiveOp,
        dtype: DataType,
        buffers: &[(UsmPtr, UsmPtr)],
    ) -> Result<RecordedCollective> {
        self.check_op(&op, buffers.len())?;
        let mut refs = Vec::with_capacity(buffers.len());
        for (i, (send, recv)) in buffers.iter().enumerate() {
            let (send, recv, _, _) = self.check_ranges(&op, dtype, i, *send, *recv)?;
            refs.push((send, recv));
        }
        let captured = match &self.inner.native {
            None => None,
            Some(native) => {
                let addrs: Vec<(u64, u64)> =
                    refs.iter().map(|(s, r)| (s.as_ref().map_or(r.address(), UsmRef::address), r.address())).collect();
                let _order = self.inner.calls.lock();
                // SAFETY: the ranges were checked above, and `refs` keeps
                // their allocations alive as long as the capture.
                match unsafe { native.capture(&op, dtype, &addrs) } {
                    Ok(captured) => {
                        tracing::debug!(implementation = %native.name(), "collective captured");
                        Some(Arc::from(captured))
                    }
                    Err(UrError::UnsupportedFeature(reason)) => {
                        tracing::debug!(reason = %reason, "collective issued at each launch");
                        None
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "capturing a collective failed; it is issued at each launch");
                        None
                    }
                }
            }
        };
        Ok(RecordedCollective { captured, comm: self.clone(), op, dtype, refs, order: Arc::default() })
    }

    /// Checks `op` over `dtype` elements with each rank's `(send, recv)`
    /// pointers, as [`enqueue`](Self::enqueue) does but for queues and wait
    /// lists: what a graph checks when a collective node is added.
    pub fn check_buffers(&self, op: &CollectiveOp, dtype: DataType, buffers: &[(UsmPtr, UsmPtr)]) -> Result<()> {
        self.check_op(op, buffers.len())?;
        for (i, (send, recv)) in buffers.iter().enumerate() {
            self.check_ranges(op, dtype, i, *send, *recv)?;
        }
        Ok(())
    }

    /// The checks of a call that do not depend on the ranks' pointers.
    fn check_op(&self, op: &CollectiveOp, ranks: usize) -> Result<()> {
        let n = self.size();
        ensure!(ranks == n, InvalidValue, "{} given {ranks} rank(s); the communicator has {n}", op.name());
        let count = match *op {
            CollectiveOp::AllReduce { count, .. } | CollectiveOp::AllGather { count } => count,
            CollectiveOp::ReduceScatter { count, .. } | CollectiveOp::Broadcast { count, .. } => count,
        };
        ensure!(count > 0, InvalidSize, "{} of 0 elements", op.name());
        if matches!(op, CollectiveOp::AllGather { .. } | CollectiveOp::ReduceScatter { .. }) {
            ensure!(count % n == 0, InvalidSize, "{} of {count} elements over {n} ranks: not a multiple", op.name());
        }
        if let CollectiveOp::Broadcast { root, .. } = *op {
            ensure!(root < n, InvalidValue, "broadcast from rank {root} of {n}");
        }
        Ok(())
    }

    /// Rank `i`'s ranges: found in USM of its context, apart or in place.
    fn check_ranges(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        i: usize,
        send: UsmPtr,
        recv: UsmPtr,
    ) -> Result<(Option<UsmRef>, UsmRef, usize, usize)> {
        let context = &self.inner.contexts[i];
        let bytes = |elements: usize| {
            elements
                .checked_mul(dtype.size())
                .ok_or_else(|| err!(InvalidSize, "{elements} elements of {dtype} overflow a byte count"))
        };
        let (send_n, recv_n) = op.counts(self.size(), i);
        let (send_bytes, recv_bytes) = (bytes(send_n)?, bytes(recv_n)?);
        let find = |ptr: UsmPtr, size: usize, what: &str| {
            context.find_usm(ptr, size).map_err(|e| e.in_context(&format!("rank {i}'s {what} range")))
        };
        let recv = find(recv, recv_bytes, "receive")?;
        let send = if send_bytes > 0 { Some(find(send, send_bytes, "send")?) } else { None };
        if let Some(send) = &send {
            check_overlap(op, i, send, send_bytes, &recv, recv_bytes)?;
        }
        Ok((send, recv, send_bytes, recv_bytes))
    }

    /// Checks a call; returns each rank's checked ranges and resolved wait list.
    fn check(&self, op: &CollectiveOp, dtype: DataType, ranks: &[Rank<'_>]) -> Result<Vec<Checked>> {
        self.check_op(op, ranks.len())?;
        let mut out = Vec::with_capacity(ranks.len());
        for (i, (rank, context)) in ranks.iter().zip(&self.inner.contexts).enumerate() {
            ensure!(
                rank.queue.context() == context,
                InvalidQueue,
                "rank {i}'s queue is of another context than the communicator's rank {i} ({})",
                context.device()
            );
            rank.queue.check_not_capturing("a collective")?;
            let (send, recv, send_bytes, recv_bytes) = self.check_ranges(op, dtype, i, rank.send, rank.recv)?;
            let wait = resolve_wait_list(context.id(), rank.wait)
                .map_err(|e| e.in_context(&format!("rank {i}'s wait list")))?;
            out.push(Checked { send, recv, send_bytes, recv_bytes, wait });
        }
        Ok(out)
    }
}

/// A collective recorded by [`Communicator::record`], launched any number
/// of times, directly ([`enqueue`](Self::enqueue)) or as a part of
/// compositions ([`ComposedPart::Collective`](crate::command_buffer::ComposedPart::Collective)).
/// Clones share the recording (and its capture).
#[derive(Clone)]
pub struct RecordedCollective {
    /// Dropped before the communicator (fields drop in order): NCCL frees a
    /// captured graph's resources through its communicator.
    captured: Option<Arc<dyn CapturedCollectiveImpl>>,
    comm: Communicator,
    op: CollectiveOp,
    dtype: DataType,
    /// Each rank's checked ranges, kept alive for the capture.
    refs: Vec<(Option<UsmRef>, UsmRef)>,
    /// The last launches of the capture, by either way, shared by clones.
    order: Arc<Mutex<LaunchOrder>>,
}

/// The last launches of one capture: each launch runs after the last one
/// made the other way, so that a capture never runs twice at once, whether
/// launched directly or inside compositions (launches of one composition
/// are ordered by the composition itself, and direct launches by the
/// communicator's lock and their queues). NCCL takes concurrent launches of
/// graphs on one communicator, but two of one capture would use its
/// buffers at once.
#[derive(Default)]
pub(crate) struct LaunchOrder {
    /// The last submission of a composition holding the capture, with that
    /// composition's context.
    composed: Option<(Arc<dyn EventImpl>, Context)>,
    /// Every rank's event of the direct launches since the last
    /// composition's submission that had not ended at the last launch.
    direct: Vec<Arc<dyn EventImpl>>,
}

impl LaunchOrder {
    /// What a composition's submission must wait for: the direct
    /// launches' events (of the ranks' contexts, which the composition's
    /// context waits for: checked when it was made).
    pub(crate) fn direct(&self) -> &[Arc<dyn EventImpl>] {
        &self.direct
    }

    /// Records a composition's submission as the last launch.
    pub(crate) fn composed(&mut self, event: Arc<dyn EventImpl>, context: &Context) {
        self.composed = Some((event, context.clone()));
        self.direct.clear();
    }
}

impl std::fmt::Debug for RecordedCollective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordedCollective")
            .field("op", &self.op)
            .field("dtype", &self.dtype)
            .field("captured", &self.captured.is_some())
            .finish()
    }
}

impl RecordedCollective {
    /// Whether launches replay a capture (else each issues the collective).
    pub fn is_captured(&self) -> bool {
        self.captured.is_some()
    }

    /// The communicator it was recorded on.
    pub fn communicator(&self) -> &Communicator {
        &self.comm
    }

    /// The operation.
    pub fn op(&self) -> CollectiveOp {
        self.op
    }

    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Whether `other` is this recording or a clone of it.
    pub fn same_recording(&self, other: &RecordedCollective) -> bool {
        Arc::ptr_eq(&self.order, &other.order)
    }

    /// The capture, where there is one.
    pub(crate) fn captured_imp(&self) -> Option<&Arc<dyn CapturedCollectiveImpl>> {
        self.captured.as_ref()
    }

    /// The order of the capture's launches, locked; identified by
    /// [`order_key`](Self::order_key) (the order compositions lock several in).
    pub(crate) fn lock_order(&self) -> parking_lot::MutexGuard<'_, LaunchOrder> {
        self.order.lock()
    }

    /// A key of the shared launch order, for locking several in one order.
    pub(crate) fn order_key(&self) -> usize {
        Arc::as_ptr(&self.order) as usize
    }

    /// Launches the collective: rank `r`'s part on `parts[r].0`, a queue of
    /// the rank's context, after the events `parts[r].1` of that context;
    /// one event per rank as [`Communicator::enqueue`] returns. Errors: as
    /// `enqueue`'s for the rank count, queues and wait lists.
    pub fn enqueue(&self, parts: &[(&Queue, &[&Event])]) -> Result<Vec<Event>> {
        ensure!(
            parts.len() == self.refs.len(),
            InvalidValue,
            "{} given {} part(s); the communicator has {} ranks",
            self.op.name(),
            parts.len(),
            self.refs.len()
        );
        let ranks: Vec<Rank<'_>> = parts
            .iter()
            .zip(&self.refs)
            .map(|((queue, wait), (send, recv))| Rank {
                queue,
                send: UsmPtr::from_addr(send.as_ref().map_or(recv.address(), UsmRef::address)),
                recv: UsmPtr::from_addr(recv.address()),
                wait,
            })
            .collect();
        let Some(captured) = &self.captured else {
            return self.comm.enqueue(self.op, self.dtype, &ranks);
        };
        let mut checked = self.comm.check(&self.op, self.dtype, &ranks)?;
        let _calls = self.comm.inner.calls.lock();
        let mut order = self.order.lock();
        if let Some((last, composed_on)) = order.composed.clone() {
            // After the last composition that ran the capture: device-side
            // where the rank's context waits for the composition's events,
            // else on the host (before anything is launched).
            for (c, context) in checked.iter_mut().zip(&self.comm.inner.contexts) {
                if context.waits_on_events_of(&composed_on) {
                    c.wait.push(last.clone());
                } else {
                    // Its outcome does not matter here: this only orders.
                    let _ = Event::from_imp(last.clone(), &composed_on).wait_ended();
                }
            }
        }
        let waits: Vec<SmallVec<[&dyn EventImpl; 8]>> = checked.iter().map(|c| as_refs(&c.wait)).collect();
        let adapter_ranks = adapter_parts(&ranks, &checked, &waits);
        // SAFETY: `check` checked the queues and wait lists; the ranges are
        // the capture's, checked at `record` and kept alive by `self.refs`;
        // the communicator's lock orders the launch against its other calls.
        let events = unsafe { captured.launch(&adapter_ranks)? };
        drop(adapter_ranks);
        drop(waits);
        ensure!(events.len() == ranks.len(), Unknown, "the captured collective returned {} events", events.len());
        // Launched: the compositions' next submissions wait for it (and for
        // earlier direct launches still running, maybe on other queues).
        order.composed = None;
        order.direct.retain(|e| !e.status_quiet().is_terminal());
        order.direct.extend(events.iter().cloned());
        drop(order);
        // Each event keeps the rank's allocations, the capture and the
        // communicator, should the recording go first.
        Ok(events
            .into_iter()
            .zip(&ranks)
            .zip(&self.refs)
            .map(|((event, rank), (send, recv))| {
                let usm: Vec<UsmRef> = send.iter().cloned().chain([recv.clone()]).collect();
                rank.queue.adopt_event(event, Box::new((usm, captured.clone(), self.comm.clone())))
            })
            .collect())
    }
}

/// One rank's checked part of a call.
struct Checked {
    send: Option<UsmRef>,
    recv: UsmRef,
    send_bytes: usize,
    recv_bytes: usize,
    wait: SmallVec<[Arc<dyn EventImpl>; 4]>,
}

/// `OverlappingRegions` unless a rank's ranges are apart or in NCCL's
/// in-place layout for `op`.
fn check_overlap(
    op: &CollectiveOp,
    rank: usize,
    send: &UsmRef,
    send_bytes: usize,
    recv: &UsmRef,
    recv_bytes: usize,
) -> Result<()> {
    let (s, r) = (send.address(), recv.address());
    let apart = !send.same_allocation(recv) || s + send_bytes as u64 <= r || r + recv_bytes as u64 <= s;
    if apart {
        return Ok(());
    }
    let in_place = match op {
        CollectiveOp::AllReduce { .. } | CollectiveOp::Broadcast { .. } => s == r,
        CollectiveOp::AllGather { .. } => s == r + (rank * send_bytes) as u64,
        CollectiveOp::ReduceScatter { .. } => r == s + (rank * recv_bytes) as u64,
    };
    ensure!(
        in_place,
        OverlappingRegions,
        "rank {rank}'s send and receive ranges of {} overlap, other than in place",
        op.name()
    );
    Ok(())
}

/// The adapter's group over the contexts' devices: `UnsupportedFeature`
/// for devices of several backends or an adapter without one.
fn native_group(contexts: &[&Context]) -> Result<Box<dyn CollectiveImpl>> {
    let first = contexts[0].device();
    ensure!(
        contexts.iter().all(|c| c.device().backend() == first.backend()),
        UnsupportedFeature,
        "no native collectives between devices of several backends"
    );
    let devices: Vec<&dyn DeviceImpl> = contexts.iter().map(|c| &**c.device().imp()).collect();
    first.imp().collective_group(&devices)
}

/// The ranks as the adapter takes them.
fn adapter_parts<'r, 'a: 'r, 'w: 'r>(
    ranks: &'r [Rank<'a>],
    checked: &'r [Checked],
    waits: &'r [SmallVec<[&'w dyn EventImpl; 8]>],
) -> Vec<CollectiveRank<'r>> {
    ranks
        .iter()
        .zip(checked)
        .zip(waits)
        .map(|((rank, c), wait)| CollectiveRank {
            queue: rank.queue.imp(),
            send: c.send.as_ref().map_or(c.recv.address(), UsmRef::address),
            recv: c.recv.address(),
            wait,
        })
        .collect()
}

fn native_call(
    comm: &Communicator,
    op: &CollectiveOp,
    dtype: DataType,
    ranks: &[Rank<'_>],
    checked: Vec<Checked>,
) -> Result<Vec<Event>> {
    let waits: Vec<SmallVec<[&dyn EventImpl; 8]>> = checked.iter().map(|c| as_refs(&c.wait)).collect();
    let parts = adapter_parts(ranks, &checked, &waits);
    // SAFETY: `check` found every range in a USM allocation of its rank's
    // context (the references are kept below until each event completes),
    // checked overlaps, counts and the root, and resolved each wait list in
    // its rank's context; the communicator's lock keeps calls one at a time.
    let events = unsafe { comm.inner.native.as_deref().expect("a native communicator").enqueue(op, dtype, &parts)? };
    drop(parts);
    drop(waits);
    ensure!(events.len() == ranks.len(), Unknown, "the native collective returned {} events", events.len());
    Ok(events
        .into_iter()
        .zip(ranks)
        .zip(checked)
        .map(|((event, rank), c)| {
            let usm: Vec<UsmRef> = c.send.into_iter().chain([c.recv]).collect();
            rank.queue.adopt_event(event, Box::new((usm, comm.clone())))
        })
        .collect())
}

/// A host-visible allocation of `size` bytes of `context` for staging:
/// host USM, else shared USM; `UnsupportedFeature` where there is neither.
fn staging(context: &Context, size: usize) -> Result<UsmAllocation> {
    let usm = context.device().info().usm;
    let kind = if usm.contains(UsmKinds::HOST) {
        UsmKind::Host
    } else if usm.contains(UsmKinds::SHARED) {
        UsmKind::Shared
    } else {
        return Err(err!(
            UnsupportedFeature,
            "{} has neither host nor shared USM to stage a collective through the host",
            context.device()
        ));
    };
    let alloc = UsmAllocation::new(context, kind, size)?;
    ensure!(
        alloc.host_ptr().is_some(),
        UnsupportedFeature,
        "the staging memory of a collective on {} has no host address",
        context.device()
    );
    Ok(alloc)
}

/// What the host does once every rank's data is staged.
struct Reduction {
    op: CollectiveOp,
    dtype: DataType,
    /// Each rank's staged input (`None`: a broadcast's other ranks).
    ins: Vec<Option<UsmAllocation>>,
    /// Each rank's staged output.
    outs: Vec<UsmAllocation>,
    /// Completed (or failed) when the outputs are written.
    done: Vec<UserEvent>,
    /// Ranks whose input is not staged yet.
    pending: AtomicUsize,
    /// The first failure among the staging copies.
    failed: Mutex<Option<String>>,
}

impl Reduction {
    /// One rank's staging copy ended with `status`; the last one runs the
    /// reduction.
    fn arrive(&self, rank: usize, status: EventStatus) {
        if status != EventStatus::Complete {
            self.failed.lock().get_or_insert_with(|| format!("rank {rank}'s copy into staging failed"));
        }
        if self.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let failed = self.failed.lock().take();
        match failed {
            Some(reason) => self.fail(&reason),
            None => {
                self.compute();
                for done in &self.done {
                    if let Err(e) = done.complete() {
                        tracing::error!(error = %e, "completing a collective's staged result");
                    }
                }
            }
        }
    }

    fn fail(&self, reason: &str) {
        for done in &self.done {
            // A user event completed already (a second failure) refuses: nothing to do then.
            let _ = done.fail(format!("collective staged through the host: {reason}"));
        }
    }

    /// Writes every rank's output from the staged inputs.
    fn compute(&self) {
        let n = self.outs.len();
        let input = |rank: usize| -> &[u8] {
            let alloc = self.ins[rank].as_ref().expect("every rank that sends is staged");
            // SAFETY: the staging allocation is host-visible (`staging`
            // checked its host address), alive (held by `self`) and its
            // size long; its staging copy has completed and nothing else
            // writes it until the rank's output copy, which waits for `done`.
            unsafe { std::slice::from_raw_parts(alloc.host_ptr().expect("checked"), alloc.size()) }
        };
        let mut reduced = Vec::new();
        if let CollectiveOp::AllReduce { op, .. } | CollectiveOp::ReduceScatter { op, .. } = self.op {
            reduced = input(0).to_vec();
            for rank in 1..n {
                reduce_into(&mut reduced, input(rank), self.dtype, op);
            }
        }
        for (rank, out) in self.outs.iter().enumerate() {
            // SAFETY: as for the inputs; the output copy of this rank waits
            // for `done`, so nothing reads it meanwhile, and it is distinct
            // from every input allocation.
            let out = unsafe { std::slice::from_raw_parts_mut(out.host_ptr().expect("checked"), out.size()) };
            match self.op {
                CollectiveOp::AllReduce { .. } => out.copy_from_slice(&reduced),
                CollectiveOp::ReduceScatter { .. } => {
                    out.copy_from_slice(&reduced[rank * out.len()..(rank + 1) * out.len()]);
                }
                CollectiveOp::AllGather { .. } => {
                    for (from, slot) in out.chunks_exact_mut(out.len() / n).enumerate() {
                        slot.copy_from_slice(input(from));
                    }
                }
                CollectiveOp::Broadcast { root, .. } => out.copy_from_slice(input(root)),
            }
        }
    }
}

/// The host-staged collective: every rank's input copied into staging on
/// its queue, the host's reduction once all have arrived, every rank's
/// output copied from staging on its queue after that.
fn staged(op: &CollectiveOp, dtype: DataType, ranks: &[Rank<'_>], checked: Vec<Checked>) -> Result<Vec<Event>> {
    // Everything that can fail before any work is enqueued.
    let mut ins = Vec::with_capacity(ranks.len());
    let mut outs = Vec::with_capacity(ranks.len());
    let mut done = Vec::with_capacity(ranks.len());
    for (rank, c) in ranks.iter().zip(&checked) {
        let context = rank.queue.context();
        ins.push(if c.send_bytes > 0 { Some(staging(context, c.send_bytes)?) } else { None });
        outs.push(staging(context, c.recv_bytes)?);
        done.push(UserEvent::new(context)?);
    }
    let mut arrived = Vec::with_capacity(ranks.len());
    for ((rank, c), stage) in ranks.iter().zip(&checked).zip(&ins) {
        let event = match (stage, &c.send) {
            (Some(stage), Some(send)) => {
                rank.queue.usm_memcpy(stage.ptr(), UsmPtr::from_addr(send.address()), c.send_bytes, rank.wait)?
            }
            _ => rank.queue.events_wait(rank.wait)?,
        };
        arrived.push(event);
    }
    let out_ptrs: Vec<UsmPtr> = outs.iter().map(UsmAllocation::ptr).collect();
    let done_events: Vec<Event> = done.iter().map(|d| d.event().clone()).collect();
    let reduction = Arc::new(Reduction {
        op: *op,
        dtype,
        ins,
        outs,
        done,
        pending: AtomicUsize::new(ranks.len()),
        failed: Mutex::new(None),
    });
    for (i, event) in arrived.iter().enumerate() {
        let r = reduction.clone();
        if let Err(e) = event.on_complete(move |status| r.arrive(i, status)) {
            // The count can no longer reach zero: release the output copies.
            reduction.fail("a staging copy could not be watched");
            return Err(e);
        }
    }
    let mut events = Vec::with_capacity(ranks.len());
    for (i, (rank, c)) in ranks.iter().zip(&checked).enumerate() {
        let recv = UsmPtr::from_addr(c.recv.address());
        let copied = rank.queue.usm_memcpy(recv, out_ptrs[i], c.recv_bytes, &[&done_events[i]])?;
        let profiled = rank.queue.properties().profiling;
        let parts = [arrived[i].clone(), done_events[i].clone(), copied.clone()];
        events.push(Event::span(&arrived[i], &copied, &parts, profiled)?);
    }
    // The staging memory lives until the host reduction has run (the
    // callbacks hold it); the output copies hold their allocations.
    drop(reduction);
    Ok(events)
}
