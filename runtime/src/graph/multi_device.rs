//! Multi-device graphs: a graph whose nodes run on several devices (an open
//! item of `sycl_ext_oneapi_graph`, "Allow an executable graph to contain
//! nodes targeting different devices", trending yes: "the definition of a
//! graph node is device specific ... it is the responsibility of the user to
//! decide the device each command will be processed for").
//!
//! A graph made with [`Graph::new_multi_device`] lists its devices, one
//! context each; the first is the graph's own device, whose queues submit the
//! executable graph. A node is placed on a device explicitly
//! ([`NodeProperties::on_device`](super::NodeProperties::on_device)) or by
//! the queue that recorded it (any queue of one of the graph's devices may
//! record into it); a sub-graph node is placed on the device of its
//! executable graph. Unplaced nodes run on the first device, so a graph made
//! with [`Graph::new`] behaves as before.
//!
//! Finalize makes one partition (one command buffer of that device's
//! context) per device and level, plus the host-task partitions; an edge
//! between devices splits partitions as a host task does. cmdbuf-core contexts
//! hold one device, so two devices never share a context here: a partition
//! waits for one of another device by that partition's event itself where
//! its context's queues wait for the other context's events device-side
//! ([`Context::waits_on_events_of`]: CUDA, the CPU adapter), else through a
//! *bridge*, a user event of its own context completed (or failed) by a host
//! thread when the other partition's event ends (the idea of the buffer
//! module's cross-context dependencies). The submission returns one event of
//! the submitting queue's context, which spans every partition and reports
//! the first failure.
//!
//! A [`Handler::memcpy`](super::Handler::memcpy) between USM of two of the
//! graph's devices is a *cross-device copy node*. Where one device can reach
//! the other's memory ([`Device::peer_access`]; CUDA devices of one host, the
//! CPU adapter's devices), finalize enables peer access and makes it a peer
//! copy ([`Queue::usm_copy_peer`]) on a queue of that device, destination
//! first: a partition of its own, waiting for the other device's partitions
//! like any partition. Otherwise it is lowered into a copy from the source into
//! a host-visible staging allocation of the source context (in a partition of
//! the source device), a host copy between the two staging allocations (a
//! host-task partition), and a copy from a staging allocation of the
//! destination context into the destination (in a partition of the
//! destination device). Each executable graph has staging allocations of its
//! own; [`Graph::cross_device_traffic`] tells the bytes each way moves.

use std::sync::Arc;

use cmdbuf_core::command::Command;
use cmdbuf_core::context::Context;
use cmdbuf_core::device::Device;
use cmdbuf_core::error::Result;
use cmdbuf_core::event::{Event, EventStatus, UserEvent};
use cmdbuf_core::launch::ArgValue;
use cmdbuf_core::memory::{UsmAllocation, UsmKind, UsmPtr, UsmRef};
use cmdbuf_core::queue::{Queue, QueueProperties};
use cmdbuf_core::{ensure, err};

use super::state::{
    CrossCopy, CrossDeviceTraffic, Devices, FlatNode, FlatOp, GraphShared, KernelSpec, Partition, Placement,
};
use super::{Executable, Graph, GraphProperties, Modifiable, Node};

impl Devices {
    /// The devices of a single-device graph.
    pub(crate) fn single(context: &Context) -> Devices {
        Devices::new(vec![context.clone()])
    }

    fn new(contexts: Vec<Context>) -> Devices {
        let direct = contexts.iter().flat_map(|on| contexts.iter().map(|from| on.waits_on_events_of(from))).collect();
        Devices { contexts, direct, collectives: Default::default() }
    }

    /// Whether a partition on device `on` waits for an event of device
    /// `from` through a host-side [`bridge`] (else it takes the event as it is).
    pub(crate) fn needs_bridge(&self, on: u16, from: u16) -> bool {
        on != from && !self.direct[on as usize * self.contexts.len() + from as usize]
    }

    /// `event`, of device `from`, as device `on`'s queues can wait for it:
    /// itself where they wait for `from`'s events device-side, else a
    /// [`bridge`] into `on`'s context.
    pub(crate) fn event_for(&self, on: u16, event: &Event, from: u16) -> Result<Event> {
        if self.needs_bridge(on, from) { bridge(event, self.context(on)) } else { Ok(event.clone()) }
    }

    /// The context of device `index`.
    pub(crate) fn context(&self, index: u16) -> &Context {
        &self.contexts[index as usize]
    }

    /// Whether the graph has more than one device.
    pub(crate) fn is_multi(&self) -> bool {
        self.contexts.len() > 1
    }

    /// The index of `device`: `InvalidDevice` for a device the graph was not made for.
    pub(crate) fn index_of(&self, graph: u64, device: &Device) -> Result<u16> {
        self.contexts.iter().position(|c| c.device() == device).map(|i| i as u16).ok_or_else(|| {
            err!(
                InvalidDevice,
                "{device} is not one of the {} device(s) graph #{graph} was made for",
                self.contexts.len()
            )
        })
    }

    /// The index of `context`, where it is one of the graph's.
    pub(crate) fn index_of_context(&self, context: &Context) -> Option<u16> {
        self.contexts.iter().position(|c| c == context).map(|i| i as u16)
    }

    /// The device whose context holds `[ptr, ptr + size)`, and the reference to it.
    fn owner(&self, ptr: UsmPtr, size: usize) -> Option<(u16, UsmRef)> {
        self.contexts.iter().enumerate().find_map(|(i, c)| c.find_usm(ptr, size.max(1)).ok().map(|r| (i as u16, r)))
    }

    /// `InvalidContext` when a pointer argument of `spec`, placed on device
    /// `on`, is USM of another of the graph's devices: that device's memory
    /// is out of reach of the kernel (cmdbuf-core keeps USM per context).
    pub(crate) fn check_kernel(&self, graph: u64, on: u16, spec: &KernelSpec) -> Result<()> {
        if !self.is_multi() {
            return Ok(());
        }
        for (i, arg) in spec.args.iter().enumerate() {
            let ArgValue::Pointer(ptr) = arg else { continue };
            if self.context(on).find_usm(*ptr, 1).is_ok() {
                continue;
            }
            if let Some((owner, _)) = self.owner(*ptr, 1) {
                if self.context(on).device().peer_access_enabled(self.context(owner).device()) {
                    continue;
                }
                return Err(err!(
                    InvalidContext,
                    "argument {i} of kernel `{}` on {} in graph #{graph} is USM of {}, which that device cannot \
                     reach (no peer access enabled): copy it with a cross-device memcpy node first",
                    spec.kernel.name(),
                    self.context(on).device(),
                    self.context(owner).device()
                ));
            }
        }
        Ok(())
    }

    /// The cross-device copy of a `memcpy` placed on device `on`, where
    /// `src` and `dst` lie in different devices' USM; `None` for a copy
    /// inside one context, which the caller validates as usual.
    ///
    /// USM addresses need not be unique across contexts (Vulkan's buffer
    /// device addresses are per device): a copy whose two ranges both lie in
    /// allocations of the node's context `on` is a copy in that context, and
    /// a range that lies in allocations of several other contexts is
    /// `InvalidValue` (name the devices with [`Handler::memcpy_across`](super::Handler::memcpy_across)).
    pub(crate) fn cross_copy(&self, on: u16, dst: UsmPtr, src: UsmPtr, size: usize) -> Result<Option<CrossCopy>> {
        if !self.is_multi() {
            return Ok(None);
        }
        let local = |ptr| self.context(on).find_usm(ptr, size.max(1)).is_ok();
        if local(dst) && local(src) {
            return Ok(None);
        }
        let owners = |ptr: UsmPtr| -> Vec<(u16, UsmRef)> {
            self.contexts
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.find_usm(ptr, size.max(1)).ok().map(|r| (i as u16, r)))
                .collect()
        };
        let (mut dsts, mut srcs) = (owners(dst), owners(src));
        ensure!(
            dsts.len() <= 1 && srcs.len() <= 1,
            InvalidValue,
            "memcpy from {src:?} to {dst:?}: an address lies in allocations of several of the graph's devices; name \
             them with memcpy_across"
        );
        let (Some((dst_dev, dst_ref)), Some((src_dev, src_ref))) = (dsts.pop(), srcs.pop()) else {
            return Ok(None);
        };
        if dst_dev == src_dev {
            return Ok(None);
        }
        ensure!(size > 0, InvalidSize, "a cross-device memcpy of 0 bytes");
        Ok(Some(CrossCopy { src_dev, dst_dev, dst: dst_ref, src: src_ref, size }))
    }

    /// The copy of `size` bytes from `src`, USM of device `src_dev`, to
    /// `dst`, USM of device `dst_dev`: a cross-device copy, or `None` for one
    /// device (validated by the caller in its context).
    pub(crate) fn copy_between(
        &self,
        dst_dev: u16,
        dst: UsmPtr,
        src_dev: u16,
        src: UsmPtr,
        size: usize,
    ) -> Result<Option<CrossCopy>> {
        if dst_dev == src_dev {
            return Ok(None);
        }
        ensure!(size > 0, InvalidSize, "a cross-device memcpy of 0 bytes");
        let find = |dev: u16, ptr: UsmPtr, what: &str| {
            self.context(dev).find_usm(ptr, size).map_err(|e| e.in_context(&format!("{what} of a cross-device memcpy")))
        };
        let (dst_ref, src_ref) = (find(dst_dev, dst, "the destination")?, find(src_dev, src, "the source")?);
        Ok(Some(CrossCopy { src_dev, dst_dev, dst: dst_ref, src: src_ref, size }))
    }

    /// A queue of device `index` for the partitions of an executable graph:
    /// out-of-order where the device has such queues.
    pub(crate) fn worker(&self, index: u16) -> Result<Queue> {
        let context = self.context(index);
        let out_of_order = context.device().info().out_of_order_queues;
        Queue::new(context, QueueProperties { out_of_order, profiling: false })
    }

    /// The communicator over the devices for collective nodes, made once
    /// (NCCL communicators take long to make).
    pub(crate) fn communicator(&self) -> Result<cmdbuf_core::collective::Communicator> {
        let mut slot = self.collectives.lock();
        if let Some(comm) = &*slot {
            return Ok(comm.clone());
        }
        let contexts: Vec<&Context> = self.contexts.iter().collect();
        let comm = cmdbuf_core::collective::Communicator::new(&contexts)?;
        *slot = Some(comm.clone());
        Ok(comm)
    }

    /// The devices.
    fn devices(&self) -> Vec<Device> {
        self.contexts.iter().map(|c| c.device().clone()).collect()
    }
}

/// How finalize lowers a cross-device copy.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Route {
    /// A peer copy on a queue of this device (an index of the graph's).
    Peer(u16),
    /// Through host staging.
    Staged,
}

impl Route {
    /// The flat nodes it becomes.
    pub(crate) fn nodes(self) -> u32 {
        match self {
            Route::Peer(_) => 1,
            Route::Staged => 3,
        }
    }
}

impl CrossCopy {
    /// The route of the copy: peer where the destination's device, else the
    /// source's, can reach the other's memory (peer access is enabled here);
    /// else through the host. A failed peer query or enable is logged and
    /// falls back to staging.
    pub(crate) fn route(&self, devices: &Devices) -> Result<Route> {
        for (on, other) in [(self.dst_dev, self.src_dev), (self.src_dev, self.dst_dev)] {
            let (device, peer) = (devices.context(on).device(), devices.context(other).device());
            match device.peer_access(peer) {
                Ok(access) if access.supported => {}
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(%device, %peer, error = %e, "peer query failed; the copy goes through the host");
                    continue;
                }
            }
            if device.peer_access_enabled(peer) {
                return Ok(Route::Peer(on));
            }
            match device.enable_peer_access(peer) {
                Ok(()) => return Ok(Route::Peer(on)),
                Err(e) => tracing::warn!(%device, %peer, error = %e, "peer access not enabled"),
            }
        }
        Ok(Route::Staged)
    }

    /// The node's command, for queries and DOT output only: finalize lowers
    /// the node (see [`lower`](Self::lower)) and never appends it.
    pub(crate) fn command(&self) -> Result<Command> {
        Command::usm_copy_between(&self.dst, &self.src, self.size)
    }

    /// The flat nodes of the copy along `route`, after `preds`, the first
    /// numbered `first`; the last one is the node's exit.
    pub(crate) fn lower(
        &self,
        devices: &Devices,
        route: Route,
        preds: Vec<u32>,
        first: u32,
        origin: u32,
        traffic: &mut CrossDeviceTraffic,
    ) -> Result<Vec<FlatNode>> {
        let (dst, src) = (UsmPtr::from_addr(self.dst.address()), UsmPtr::from_addr(self.src.address()));
        if let Route::Peer(on) = route {
            traffic.peer_bytes += self.size as u64;
            let op = FlatOp::PeerCopy { dst, src, size: self.size };
            return Ok(vec![FlatNode { op, preds, origin: Some(origin), device: on }]);
        }
        traffic.staged_bytes += self.size as u64;
        self.staged(devices, preds, first, origin, dst, src)
    }

    /// Device to staging (source device), staging to staging (host),
    /// staging to device (destination device).
    fn staged(
        &self,
        devices: &Devices,
        preds: Vec<u32>,
        first: u32,
        origin: u32,
        dst: UsmPtr,
        src: UsmPtr,
    ) -> Result<Vec<FlatNode>> {
        let (src_ctx, dst_ctx) = (devices.context(self.src_dev), devices.context(self.dst_dev));
        let stage_src = staging(src_ctx, self.size)?;
        let stage_dst = staging(dst_ctx, self.size)?;
        let out = Command::usm_copy(src_ctx, stage_src.ptr(), src, self.size)?;
        let back = Command::usm_copy(dst_ctx, dst, stage_dst.ptr(), self.size)?;
        let (from, to) = (host_ptr(&stage_src)?, host_ptr(&stage_dst)?);
        let size = self.size;
        let (keep_src, keep_dst) = (Arc::new(stage_src), Arc::new(stage_dst));
        let host = move || {
            let _ = (&keep_src, &keep_dst);
            // SAFETY: both staging allocations are alive (the closure holds
            // them), host-visible, `size` bytes long and distinct; the graph
            // orders this task after the copy into `from` and before the copy
            // out of `to`, so nothing else touches them meanwhile.
            unsafe { std::ptr::copy_nonoverlapping(from.get(), to.get(), size) }
        };
        Ok(vec![
            FlatNode { op: FlatOp::Command(out), preds, origin: None, device: self.src_dev },
            FlatNode { op: FlatOp::Host(Arc::new(host)), preds: vec![first], origin: None, device: self.dst_dev },
            FlatNode { op: FlatOp::Command(back), preds: vec![first + 1], origin: Some(origin), device: self.dst_dev },
        ])
    }

    /// The device the node is reported on: its destination's.
    pub(crate) fn device(&self) -> u16 {
        self.dst_dev
    }
}

/// A host address of staging memory, sendable to the host task.
#[derive(Copy, Clone)]
struct HostAddr(*mut u8);

impl HostAddr {
    /// The address (a method, so that closures capture the whole `HostAddr`).
    fn get(self) -> *mut u8 {
        self.0
    }
}

// SAFETY: the address is of a USM allocation the host task keeps alive; it
// is only used by that task, which the graph orders against the device copies.
unsafe impl Send for HostAddr {}
// SAFETY: as for `Send`; the task never runs twice at once (submissions of
// one executable graph never overlap).
unsafe impl Sync for HostAddr {}

fn host_ptr(alloc: &UsmAllocation) -> Result<HostAddr> {
    alloc.host_ptr().map(HostAddr).ok_or_else(|| {
        err!(
            UnsupportedFeature,
            "the staging allocation of a cross-device copy on {} has no host address",
            alloc.ptr().addr()
        )
    })
}

/// A host-visible allocation of `size` bytes for a cross-device copy: host
/// USM, else shared USM; `UnsupportedFeature` on a device with neither.
fn staging(context: &Context, size: usize) -> Result<UsmAllocation> {
    let usm = context.device().info().usm;
    let kind = [UsmKind::Host, UsmKind::Shared]
        .into_iter()
        .find(|k| usm.contains(crate::aspect::usm_flag(*k)))
        .ok_or_else(|| {
            err!(
                UnsupportedFeature,
                "{} has neither host nor shared USM for the staging of a cross-device copy",
                context.device()
            )
        })?;
    UsmAllocation::new(context, kind, size)
}

impl Placement {
    /// The device of node `index`.
    pub(crate) fn device(&self, index: u32) -> u16 {
        self.cross.get(&index).map_or_else(|| self.on.get(&index).copied().unwrap_or(0), CrossCopy::device)
    }

    /// Places node `index` on device `device`.
    pub(crate) fn place(&mut self, index: u32, device: u16) {
        if device != 0 {
            self.on.insert(index, device);
        }
    }

    /// Marks node `index` as a cross-device copy.
    pub(crate) fn set_cross(&mut self, index: u32, copy: CrossCopy) {
        self.cross.insert(index, copy);
    }

    /// The cross-device copy node `index` is, if it is one.
    pub(crate) fn cross(&self, index: u32) -> Option<&CrossCopy> {
        self.cross.get(&index)
    }
}

/// An event of `to`'s context that ends when `event` (of another context)
/// does, failing when it fails: a host thread waits for `event`.
pub(crate) fn bridge(event: &Event, to: &Context) -> Result<Event> {
    let user = UserEvent::new(to)?;
    let bridged = user.event().clone();
    event.on_complete(move |status| {
        // The user event is completed once, here; nothing else holds it.
        let _ = if status == EventStatus::Complete {
            user.complete()
        } else {
            user.fail("a partition of a multi-device graph on another device failed")
        };
    })?;
    Ok(bridged)
}

/// The bridges one execution of a graph of several partitions makes (see
/// `run_partitions`): one per wait of a partition for another device's
/// event where its device's queues cannot wait for it (a partition without
/// predecessors waits for the submission's start, of the first device), and
/// one per partition of such a device for the submission's event. A
/// collective partition (`ranks` answers its rank count) waits on every
/// rank's device and joins every rank's event on its own device
/// (`collective::submit`).
pub(crate) fn host_bridges(devices: &Devices, parts: &[Partition], ranks: impl Fn(&Partition) -> Option<u16>) -> usize {
    if parts.len() == 1 && !parts[0].host && parts[0].device == 0 && ranks(&parts[0]).is_none() {
        return 0;
    }
    let waits_on = |on: u16, p: &Partition| -> usize {
        if p.preds.is_empty() {
            return usize::from(devices.needs_bridge(on, 0));
        }
        p.preds.iter().filter(|q| devices.needs_bridge(on, parts[**q as usize].device)).count()
    };
    let waits = |p: &Partition| -> usize {
        match ranks(p) {
            None => waits_on(p.device, p),
            Some(n) => (0..n).map(|r| waits_on(r, p) + usize::from(devices.needs_bridge(p.device, r))).sum(),
        }
    };
    parts.iter().map(|p| waits(p) + usize::from(devices.needs_bridge(0, p.device))).sum()
}

impl Graph<Modifiable> {
    /// Creates a multi-device graph over `contexts`, one per device; the
    /// first is the graph's own context and device (what [`context`](Self::context)
    /// and [`device`](Self::device) return, whose queues submit the
    /// executable graph). Nodes are placed with
    /// [`NodeProperties::on_device`](super::NodeProperties::on_device) or by
    /// recording queues of any of the devices (see [`crate::graph`], multi-device graphs).
    ///
    /// `InvalidValue` for no context, `InvalidDevice` for two contexts of one device.
    pub fn new_multi_device(contexts: &[&Context], props: GraphProperties) -> Result<Graph<Modifiable>> {
        ensure!(!contexts.is_empty(), InvalidValue, "a multi-device graph needs at least one context");
        for (i, c) in contexts.iter().enumerate() {
            ensure!(
                contexts[..i].iter().all(|o| o.device() != c.device()),
                InvalidDevice,
                "{} is given twice to a multi-device graph",
                c.device()
            );
        }
        let devices = Devices::new(contexts.iter().map(|c| (*c).clone()).collect());
        Ok(Graph::create(devices, props))
    }

    /// The devices the graph was made for, its own first.
    pub fn devices(&self) -> Vec<Device> {
        self.shared().devices.devices()
    }
}

impl Graph<Executable> {
    /// The bytes its cross-device copy nodes move at each execution, peer to
    /// peer and through host staging.
    pub fn cross_device_traffic(&self) -> CrossDeviceTraffic {
        self.0.inner.traffic
    }

    /// How many host-side bridges each execution uses: waits of one device's
    /// partition for another device's that a host thread relays (a user event
    /// completed from a callback), where the waiting device's queues cannot
    /// wait for the other's events themselves ([`Context::waits_on_events_of`]:
    /// OpenCL, Vulkan, devices of two backends). 0 for a graph of one device,
    /// and for devices that wait for each other device-side (CUDA GPUs, the
    /// CPU adapter's contexts).
    pub fn host_bridges(&self) -> usize {
        self.0.inner.host_bridges
    }
}

impl Node {
    /// The device the node runs on (a cross-device copy: its destination's).
    pub fn device(&self) -> Device {
        let graph: &GraphShared = &self.graph;
        let index = graph.state.lock().placed.device(self.index);
        graph.devices.context(index).device().clone()
    }
}
