//! The executable graph: what finalize builds (a snapshot with sub-graphs
//! inlined, empty nodes lowered, partitions, one command buffer per device
//! partition), its submission, and its update.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;
use smallvec::SmallVec;

use ur_core::command::Command;
use ur_core::command_buffer::{
    AppendOptions, CommandBuffer, CommandBufferDesc, CommandHandle, KernelLaunchUpdate, LocalSizeUpdate, SyncPoint,
};
use ur_core::context::Context;
use ur_core::device::{CommandBufferSupport, Device, UpdateCapabilities};
use ur_core::error::{Result, UrError};
use ur_core::event::Event;
use ur_core::launch::{ArgValue, KernelArg};
use ur_core::memory::{MigrationFlags, UsmAllocation, UsmKind, UsmPtr};
use ur_core::program::Kernel;
use ur_core::queue::{Queue, QueueProperties};
use ur_core::{ensure, err};

use super::dynamic::GroupOp;
use super::memory::MemoryStats;
use super::modifiable::{GraphShared, GraphState};
use super::multi_device::{CrossDeviceTraffic, Route};
use super::node::{HostFn, KernelSpec, NativeFn, NodeKind, NodeType};
use super::partition::{Lowered, Part, is_chain, lower_empties, partition_placed, topological_order};
use super::{Executable, FinalizeProperties, Graph, Modifiable, Node};

/// A node of the finalized graph.
#[derive(Clone)]
pub(crate) enum FlatOp {
    Kernel {
        spec: KernelSpec,
        alternatives: Vec<Kernel>,
    },
    Command(Command),
    Host(HostFn),
    /// A native command: appended with `append_native_command`.
    Native(NativeFn),
    /// No command (lowered away or made a join).
    Empty,
    /// A no-op device command that orders many predecessors before many successors.
    Join,
    /// A cross-device copy between peers (`Queue::usm_copy_peer`), a
    /// partition of its own on the queue of the node's device.
    PeerCopy {
        dst: UsmPtr,
        src: UsmPtr,
        size: usize,
    },
}

#[derive(Clone)]
pub(crate) struct FlatNode {
    pub(crate) op: FlatOp,
    pub(crate) preds: Vec<u32>,
    /// The node of the source graph (`None` inside inlined sub-graphs).
    pub(crate) origin: Option<u32>,
    /// The device it runs on (an index of the graph's devices).
    pub(crate) device: u16,
}

/// What whole-graph update compares, per node of the source graph.
struct Signature {
    ty: NodeType,
    preds: Vec<u32>,
}

/// A partition of an executable graph.
pub(crate) struct Partition {
    pub(crate) host: bool,
    /// The device whose queue runs it (an index of the graph's devices).
    pub(crate) device: u16,
    pub(crate) members: Vec<u32>,
    pub(crate) preds: Vec<u32>,
    /// Whether no partition waits for it.
    leaf: bool,
    pub(crate) in_order: bool,
    pub(crate) cb: Option<CommandBuffer>,
    /// The command handle of each member (updatable command buffers).
    handles: Vec<Option<CommandHandle>>,
}

pub(crate) struct ExecInner {
    id: u64,
    pub(crate) source: Arc<GraphShared>,
    props: FinalizeProperties,
    signatures: Vec<Signature>,
    pub(crate) has_allocations: bool,
    memory: MemoryStats,
    /// What its cross-device copies move per execution.
    pub(crate) traffic: CrossDeviceTraffic,
    /// The pool's chunks: kernels reach graph-owned memory through plain pointers.
    _chunks: Vec<Arc<UsmAllocation>>,
    /// With allocations: where the last execution's event is left for the
    /// next executable graph of the same memory.
    runs: Option<super::memory::RunSlot>,
    pub(crate) state: Mutex<ExecState>,
    /// The accessors of its nodes, in the order their data is made current.
    pub(crate) buffers: Mutex<Vec<super::buffers::NodeUse>>,
}

pub(crate) struct ExecState {
    /// Nodes after lowering, numbered in execution order.
    pub(crate) nodes: Vec<FlatNode>,
    pub(crate) part_of: Vec<u32>,
    /// A node's position among its partition's members.
    slot_of: Vec<u32>,
    pub(crate) parts: Vec<Partition>,
    /// The order partitions are submitted in (see [`submission_order`]).
    submit_order: Vec<u32>,
    /// The node standing for each source node, when one does.
    by_origin: Vec<Option<u32>>,
    /// The previous submission, which the next one waits for.
    last: Option<Event>,
    /// The queue of the previous submission when it is in-order: a
    /// one-partition submission there follows it without waiting for it.
    last_in_order: Option<Queue>,
    /// An out-of-order queue of the graph's context that runs the partitions
    /// of multi-partition graphs (`None`: the device has none; the submission
    /// queue runs them).
    worker: Option<Queue>,
    /// The allocation join commands prefetch one byte of.
    scratch: Option<UsmAllocation>,
    /// A queue of each other device of a multi-device graph that runs its
    /// partitions (index 0, the graph's own device, is `None`: see `worker`).
    device_queues: Vec<Option<Queue>>,
}

/// How one partition was built, for [`Graph::partitions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionInfo {
    /// A host task (else a command buffer).
    pub host_task: bool,
    /// Its nodes (joins included), in execution order; for a command buffer,
    /// the commands appended.
    pub nodes: usize,
    /// The partitions it waits for.
    pub depends_on: Vec<usize>,
    /// Whether its command buffer was created in-order (the partition is a
    /// single chain and profiling is off).
    pub in_order: bool,
    /// Native or emulated command buffer; `None` for a host task.
    pub support: Option<CommandBufferSupport>,
    /// A peer-to-peer copy of a multi-device graph (not a host task, no command buffer).
    pub peer_copy: bool,
    /// The device it runs on: an index of the graph's devices, 0 for the
    /// graph's own (see [`Graph::devices`](super::Graph::devices)).
    pub device: usize,
}

/// The checks of adding `sub` as a sub-graph of `parent`; gives the device
/// of `parent` it runs on.
pub(crate) fn check_subgraph(parent: &GraphShared, sub: &Graph<Executable>) -> Result<u16> {
    let inner = &sub.0.inner;
    ensure!(
        !inner.source.devices.is_multi(),
        UnsupportedFeature,
        "executable graph #{} is a multi-device graph and cannot be a sub-graph of graph #{}",
        inner.id,
        parent.id
    );
    let device = parent.devices.index_of_context(&inner.source.context);
    ensure!(
        device.is_some(),
        InvalidContext,
        "executable graph #{} belongs to another context than graph #{}",
        inner.id,
        parent.id
    );
    ensure!(
        !inner.has_allocations,
        InvalidOperation,
        "executable graph #{} holds graph-owned allocations and cannot be a sub-graph of graph #{}",
        inner.id,
        parent.id
    );
    super::buffers::check_subgraph(parent, sub)?;
    Ok(device.unwrap_or(0))
}

/// The finalize of `shared` (see [`Graph::finalize`]).
pub(crate) fn finalize(shared: &Arc<GraphShared>, props: FinalizeProperties) -> Result<Graph<Executable>> {
    let mut state = shared.state.lock();
    let has_allocations = state.allocation_nodes();
    if has_allocations {
        ensure!(
            state.alloc_exec.upgrade().is_none(),
            InvalidOperation,
            "graph #{} holds graph-owned allocations and an executable graph made from it still exists: only one \
             may exist at a time",
            shared.id
        );
    }
    let mut traffic = CrossDeviceTraffic::default();
    let (flat, signatures) = snapshot(shared, &state, &mut traffic)?;
    let mut built = build(shared, &state, flat, &props)?;
    // The memory is the previous executable graph's: zero it, and run, only
    // after that graph's last execution.
    let previous = state.pool.last_run();
    state.pool.zero_initialize(&shared.context, previous.as_ref())?;
    built.last = previous;
    let inner = Arc::new(ExecInner {
        id: super::NEXT_EXEC_ID.fetch_add(1, Ordering::Relaxed),
        source: shared.clone(),
        props,
        signatures,
        has_allocations,
        memory: state.pool.stats(),
        traffic,
        _chunks: state.pool.chunks().to_vec(),
        runs: has_allocations.then(|| state.pool.run_slot()),
        state: Mutex::new(built),
        buffers: Mutex::new(state.accesses_in_order()),
    });
    if has_allocations {
        state.alloc_exec = Arc::downgrade(&inner);
    }
    tracing::debug!(graph = shared.id, exec = inner.id, partitions = inner.state.lock().parts.len(), "graph finalized");
    Ok(Graph(Executable { inner }))
}

/// The graph's nodes as finalize sees them, sub-graphs inlined.
fn snapshot(
    shared: &GraphShared,
    state: &GraphState,
    traffic: &mut CrossDeviceTraffic,
) -> Result<(Vec<FlatNode>, Vec<Signature>)> {
    let n = state.nodes.len();
    // Where each node's flat nodes start, and the flat node its successors wait for.
    let mut exit = vec![0u32; n];
    let mut children: Vec<Option<Vec<FlatNode>>> = vec![None; n];
    let mut routes: Vec<Option<Route>> = vec![None; n];
    let mut count = 0u32;
    for (i, node) in state.nodes.iter().enumerate() {
        if let NodeKind::Subgraph(g) = &node.kind {
            let child = g.0.inner.state.lock().nodes.clone();
            exit[i] = count + 1 + child.len() as u32;
            count += child.len() as u32 + 2;
            children[i] = Some(child);
        } else if let Some(copy) = state.placed.cross(i as u32) {
            let route = copy.route(&shared.devices)?;
            exit[i] = count + route.nodes() - 1;
            count += route.nodes();
            routes[i] = Some(route);
        } else {
            exit[i] = count;
            count += 1;
        }
    }
    let mut flat = Vec::with_capacity(count as usize);
    for (i, node) in state.nodes.iter().enumerate() {
        let preds: Vec<u32> = node.preds.iter().map(|p| exit[*p as usize]).collect();
        let origin = Some(i as u32);
        let device = state.placed.device(i as u32);
        if let (Some(copy), Some(route)) = (state.placed.cross(i as u32), routes[i]) {
            flat.extend(copy.lower(&shared.devices, route, preds, flat.len() as u32, i as u32, traffic)?);
            continue;
        }
        let op = match &node.kind {
            NodeKind::Subgraph(_) => {
                let child = children[i].take().unwrap_or_default();
                let entry = flat.len() as u32;
                flat.push(FlatNode { op: FlatOp::Empty, preds, origin: None, device });
                let base = entry + 1;
                let mut has_succ = vec![false; child.len()];
                for c in &child {
                    for p in &c.preds {
                        has_succ[*p as usize] = true;
                    }
                }
                for c in child {
                    let preds =
                        if c.preds.is_empty() { vec![entry] } else { c.preds.iter().map(|p| p + base).collect() };
                    flat.push(FlatNode { op: c.op, preds, origin: None, device });
                }
                let mut leaves: Vec<u32> =
                    (0..has_succ.len() as u32).filter(|c| !has_succ[*c as usize]).map(|c| c + base).collect();
                if leaves.is_empty() {
                    leaves.push(entry);
                }
                flat.push(FlatNode { op: FlatOp::Empty, preds: leaves, origin: None, device });
                continue;
            }
            NodeKind::Empty | NodeKind::Barrier | NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. } => {
                FlatOp::Empty
            }
            NodeKind::Kernel(spec) => FlatOp::Kernel { spec: spec.clone(), alternatives: Vec::new() },
            NodeKind::Memory(command) => FlatOp::Command(command.clone()),
            NodeKind::HostTask(task) => FlatOp::Host(task.clone()),
            NodeKind::Native(callback) => FlatOp::Native(callback.clone()),
            NodeKind::Dynamic(g) => {
                let group = &state.groups[*g as usize];
                match group.active_op() {
                    GroupOp::Kernel(spec) => FlatOp::Kernel { spec: spec.clone(), alternatives: group.alternatives() },
                    GroupOp::Host(task) => FlatOp::Host(task.clone()),
                }
            }
        };
        flat.push(FlatNode { op, preds, origin, device });
    }
    let signatures = (0..n as u32)
        .map(|i| {
            let mut preds = state.nodes[i as usize].preds.clone();
            preds.sort_unstable();
            Signature { ty: state.node_type(i), preds }
        })
        .collect();
    tracing::trace!(graph = shared.id, flat = flat.len(), "snapshot");
    Ok((flat, signatures))
}

/// Lowers, partitions and builds the command buffers of a snapshot.
fn build(
    shared: &GraphShared,
    state: &GraphState,
    flat: Vec<FlatNode>,
    props: &FinalizeProperties,
) -> Result<ExecState> {
    let start = std::time::Instant::now();
    let mut flat = flat;
    // The lists move out of the snapshot: `lowered` gives the nodes new ones.
    let preds: Vec<Vec<u32>> = flat.iter_mut().map(|f| std::mem::take(&mut f.preds)).collect();
    let order = topological_order(&preds, props.order).map_err(|v| {
        let at =
            flat[v as usize].origin.map_or_else(|| "an inlined sub-graph".to_string(), |o| state.describe(shared, o));
        err!(InvalidGraph, "graph #{} has a cycle through {at} (it was created with no_cycle_check)", shared.id)
    })?;
    let empty: Vec<bool> = flat.iter().map(|f| matches!(f.op, FlatOp::Empty)).collect();
    let lowered = lower_empties(&preds, &empty, &order);
    drop(preds);
    // Peer copies run on queues as host tasks do: partitions of their own.
    let host: Vec<bool> = lowered
        .original
        .iter()
        .map(|o| matches!(flat[*o as usize].op, FlatOp::Host(_) | FlatOp::PeerCopy { .. }))
        .collect();
    let device: Vec<u16> = lowered.original.iter().map(|o| flat[*o as usize].device).collect();
    let identity: Vec<u32> = (0..host.len() as u32).collect();
    let (parts, part_of) = partition_placed(&lowered.preds, &host, &device, &identity);
    let in_order: Vec<bool> = parts
        .iter()
        .map(|part| !part.host && !props.enable_profiling && is_chain(&part.members, &lowered.preds, &part_of))
        .collect();
    let Lowered { preds: mut new_preds, original, .. } = lowered;
    let nodes = if original.iter().enumerate().all(|(i, o)| *o as usize == i) && original.len() == flat.len() {
        // Nothing contracted nor reordered (graphs without empty nodes
        // added in a topological order): the snapshot's nodes stay in place.
        for (node, preds) in flat.iter_mut().zip(new_preds) {
            node.preds = preds;
            if matches!(node.op, FlatOp::Empty) {
                node.op = FlatOp::Join;
            }
        }
        flat
    } else {
        let mut slots: Vec<Option<FlatNode>> = flat.into_iter().map(Some).collect();
        let mut nodes = Vec::with_capacity(original.len());
        for (new, orig) in original.iter().enumerate() {
            let mut node = slots[*orig as usize].take().expect("each node is kept once");
            node.preds = std::mem::take(&mut new_preds[new]);
            if matches!(node.op, FlatOp::Empty) {
                node.op = FlatOp::Join;
            }
            nodes.push(node);
        }
        nodes
    };
    let mut slot_of = vec![0u32; nodes.len()];
    for part in &parts {
        for (i, m) in part.members.iter().enumerate() {
            slot_of[*m as usize] = i as u32;
        }
    }
    let mut by_origin = vec![None; state.nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        if let Some(o) = node.origin {
            by_origin[o as usize] = Some(i as u32);
        }
    }
    let context = &shared.context;
    let info = context.device().info();
    let used: BTreeSet<u16> = parts.iter().map(|p| p.device).collect();
    let device_queues = (0..used.last().map_or(1, |d| *d + 1))
        .map(|d| if d > 0 && used.contains(&d) { shared.devices.worker(d).map(Some) } else { Ok(None) })
        .collect::<Result<Vec<_>>>()?;
    let worker = if parts.len() > 1 && info.out_of_order_queues {
        Some(Queue::new(context, QueueProperties { out_of_order: true, profiling: false })?)
    } else {
        None
    };
    let mut st = ExecState {
        nodes,
        part_of,
        slot_of,
        parts: Vec::with_capacity(parts.len()),
        submit_order: submission_order(&parts),
        by_origin,
        last: None,
        last_in_order: None,
        worker,
        scratch: None,
        device_queues,
    };
    let layer = start.elapsed();
    let mut waited = vec![false; parts.len()];
    for part in &parts {
        for p in &part.preds {
            waited[*p as usize] = true;
        }
    }
    for (index, part) in parts.into_iter().enumerate() {
        st.parts.push(Partition {
            host: part.host,
            device: part.device,
            members: part.members,
            preds: part.preds,
            leaf: !waited[index],
            in_order: in_order[index],
            cb: None,
            handles: Vec::new(),
        });
        if !part.host {
            build_partition(shared.devices.context(part.device), props, &mut st, index)?;
        }
    }
    // What finalize costs in this layer against the command buffers' own
    // appends and finalize (issue 15, goal 6).
    tracing::debug!(
        graph = shared.id,
        nodes = st.nodes.len(),
        layer_us = layer.as_micros() as u64,
        command_buffers_us = (start.elapsed() - layer).as_micros() as u64,
        "finalize timing"
    );
    Ok(st)
}

/// Records partition `index` into a new command buffer.
fn build_partition(context: &Context, props: &FinalizeProperties, st: &mut ExecState, index: usize) -> Result<()> {
    let caps = context.device().info().command_buffer;
    let part = &st.parts[index];
    let desc = CommandBufferDesc {
        updatable: props.updatable && !caps.update.is_empty(),
        in_order: part.in_order,
        profiling: props.enable_profiling,
        ..CommandBufferDesc::default()
    };
    let switch = desc.updatable && caps.update.contains(UpdateCapabilities::KERNEL_HANDLE);
    let cb = CommandBuffer::new(context, context.device(), desc)?;
    let mut points: Vec<SyncPoint> = Vec::with_capacity(part.members.len());
    let mut handles = Vec::with_capacity(part.members.len());
    for &m in &part.members {
        let node = &st.nodes[m as usize];
        let after: SmallVec<[SyncPoint; 4]> = node
            .preds
            .iter()
            .filter(|p| st.part_of[**p as usize] == index as u32)
            .map(|p| points[st.slot_of[*p as usize] as usize])
            .collect();
        let opts = AppendOptions::new().after(&after);
        let appended = match &node.op {
            FlatOp::Kernel { spec, alternatives } => {
                let alternatives: Vec<&Kernel> = if switch { alternatives.iter().collect() } else { Vec::new() };
                let args: Vec<KernelArg<'_>> = spec.args.iter().map(ArgValue::as_arg).collect();
                // SAFETY: the application vouched for what the kernel touches
                // when it added or updated the node; the launch is validated again.
                unsafe { cb.append_kernel_launch(&spec.launch(&args), &alternatives, opts) }
                    .map_err(|e| e.in_context(&kernel_name(node, spec)))?
            }
            FlatOp::Command(command) => cb.append_command(command.clone(), opts)?,
            FlatOp::Native(callback) => {
                let callback = callback.clone();
                // SAFETY: the application vouched for the native work when it
                // added the node (`Handler::native_command`); the graph keeps
                // the callback for as long as the command buffer lives.
                let sync_point = unsafe { cb.append_native_command(None, &after, move |scope| callback(scope)) }
                    .map_err(|e| e.in_context(&native_name(node)))?;
                ur_core::command_buffer::Appended { sync_point, event: None, command: None }
            }
            FlatOp::Join => {
                if st.scratch.is_none() {
                    st.scratch = Some(scratch(context)?);
                }
                let ptr = st.scratch.as_ref().map(UsmAllocation::ptr).expect("just made");
                cb.append_usm_prefetch(ptr, 1, MigrationFlags::HOST_TO_DEVICE, opts)?
            }
            FlatOp::Host(_) | FlatOp::Empty | FlatOp::PeerCopy { .. } => {
                return Err(err!(Unknown, "a host task or empty node in a command-buffer partition"));
            }
        };
        points.push(appended.sync_point);
        handles.push(appended.command);
    }
    cb.finalize()?;
    let part = &mut st.parts[index];
    part.cb = Some(cb);
    part.handles = handles;
    Ok(())
}

fn native_name(node: &FlatNode) -> String {
    match node.origin {
        Some(o) => format!("native-command node {o}"),
        None => "a native command of an inlined sub-graph".to_string(),
    }
}

fn kernel_name(node: &FlatNode, spec: &KernelSpec) -> String {
    match node.origin {
        Some(o) => format!("kernel node {o} (`{}`)", spec.kernel.name()),
        None => format!("kernel `{}` of an inlined sub-graph", spec.kernel.name()),
    }
}

/// A small allocation of the first USM kind the device has.
fn scratch(context: &Context) -> Result<UsmAllocation> {
    let usm = context.device().info().usm;
    let kind = [UsmKind::Device, UsmKind::Shared, UsmKind::Host]
        .into_iter()
        .find(|k| usm.contains(super::usm_flag(*k)))
        .ok_or_else(|| err!(UnsupportedFeature, "{} has no USM for graph join commands", context.device()))?;
    UsmAllocation::new(context, kind, 64)
}

/// One node's change for [`Graph::update`].
enum Change {
    Kernel(KernelSpec),
    Host(HostFn),
}

/// The change of a kernel command for a command-buffer update.
struct Diff {
    handle: Option<CommandHandle>,
    kernel: Option<Kernel>,
    args: Vec<(usize, ArgValue)>,
    global: Option<Vec<usize>>,
    offset: Option<Vec<usize>>,
    /// `None`: keep; `Some(None)`: the implementation chooses; `Some(Some(l))`: set.
    local: Option<Option<Vec<usize>>>,
}

fn same_arg(a: &ArgValue, b: &ArgValue) -> bool {
    match (a, b) {
        (ArgValue::Value(x), ArgValue::Value(y)) => x == y,
        (ArgValue::Pointer(x), ArgValue::Pointer(y)) => x == y,
        (ArgValue::MemObj(x), ArgValue::MemObj(y)) => x.same_buffer(y),
        (ArgValue::Local(x), ArgValue::Local(y)) => x == y,
        _ => false,
    }
}

impl Diff {
    /// What changes from `old` to `new`, or `None` when nothing does.
    fn new(old: &KernelSpec, new: &KernelSpec, handle: Option<CommandHandle>) -> Option<Diff> {
        let dim = new.work_dim as usize;
        let dims_changed = old.work_dim != new.work_dim;
        let switched = !old.kernel.same_kernel(&new.kernel);
        let args: Vec<(usize, ArgValue)> = new
            .args
            .iter()
            .enumerate()
            .filter(|(i, v)| switched || !same_arg(&old.args[*i], v))
            .map(|(i, v)| (i, v.clone()))
            .collect();
        let global = (dims_changed || old.global != new.global).then(|| new.global[..dim].to_vec());
        let offset = (dims_changed || old.offset != new.offset).then(|| new.offset[..dim].to_vec());
        let local = (dims_changed || old.local != new.local).then(|| new.local.map(|l| l[..dim].to_vec()));
        let diff = Diff { handle, kernel: switched.then(|| new.kernel.clone()), args, global, offset, local };
        let empty = diff.kernel.is_none()
            && diff.args.is_empty()
            && diff.global.is_none()
            && diff.offset.is_none()
            && diff.local.is_none();
        (!empty).then_some(diff)
    }

    fn update<'a>(&'a self, handle: &'a CommandHandle) -> KernelLaunchUpdate<'a> {
        let mut update = KernelLaunchUpdate::new(handle);
        update.new_kernel = self.kernel.as_ref();
        update.args = self.args.iter().map(|(i, v)| (*i, v.as_arg())).collect();
        update.global_size = self.global.as_deref();
        update.global_offset = self.offset.as_deref();
        update.local_size = match &self.local {
            None => LocalSizeUpdate::Keep,
            Some(None) => LocalSizeUpdate::ImplementationChosen,
            Some(Some(l)) => LocalSizeUpdate::Set(l),
        };
        update
    }
}

/// Whether a whole-graph update may put `new` where `old` runs: the same
/// kernel, or one of the same name from the same program.
fn same_kernel_function(old: &Kernel, new: &Kernel) -> bool {
    old.same_kernel(new) || (old.name() == new.name() && old.program().same_program(new.program()))
}

impl Graph<Executable> {
    fn inner(&self) -> &ExecInner {
        &self.0.inner
    }

    /// The executable graph's identity (distinct from its source graph's).
    pub fn id(&self) -> u64 {
        self.inner().id
    }

    /// The identity of the modifiable graph it was finalized from.
    pub fn source_id(&self) -> u64 {
        self.inner().source.id
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.inner().source.context
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.inner().source.device()
    }

    /// The properties it was finalized with.
    pub fn properties(&self) -> FinalizeProperties {
        self.inner().props
    }

    /// Number of nodes of the source graph when it was finalized.
    pub fn node_count(&self) -> usize {
        self.inner().signatures.len()
    }

    /// The memory its graph-owned allocations need, in bytes
    /// (`get_required_mem_size`): the pool after liveness-based reuse.
    pub fn required_mem_size(&self) -> usize {
        self.inner().memory.required_bytes
    }

    /// Figures of its graph-owned memory (see [`MemoryStats::saved_bytes`]).
    pub fn memory_stats(&self) -> MemoryStats {
        self.inner().memory
    }

    /// How finalize partitioned it, in submission order.
    pub fn partitions(&self) -> Vec<PartitionInfo> {
        let st = self.inner().state.lock();
        st.parts
            .iter()
            .map(|p| PartitionInfo {
                host_task: p.host && !matches!(st.nodes[p.members[0] as usize].op, FlatOp::PeerCopy { .. }),
                peer_copy: p.host && matches!(st.nodes[p.members[0] as usize].op, FlatOp::PeerCopy { .. }),
                nodes: p.members.len(),
                depends_on: p.preds.iter().map(|x| *x as usize).collect(),
                in_order: p.in_order,
                support: p.cb.as_ref().map(CommandBuffer::support),
                device: p.device as usize,
            })
            .collect()
    }

    pub(crate) fn check_queue(&self, queue: &Queue) -> Result<()> {
        ensure!(
            queue.context() == self.context() && queue.device() == self.device(),
            InvalidQueue,
            "executable graph #{} of {} submitted to a queue of {}",
            self.id(),
            self.device(),
            queue.device()
        );
        Ok(())
    }

    /// Submits the graph on an ur-core queue, which never records, after
    /// `wait`: what [`Queue::enqueue_graph`](crate::Queue::enqueue_graph)
    /// does on an executing queue. A capturing queue refuses it
    /// (`GraphCaptureUnsupported`); `InvalidQueue` for a queue of another
    /// context or device.
    pub fn enqueue_on(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        self.check_queue(queue)?;
        queue.refuse_capture("an executable graph of the graph layer")?;
        self.run(queue, wait)
    }

    /// One execution on `queue` after `wait` (resolved already), its
    /// buffers' data current (see [`run`](Self::run)).
    pub(crate) fn run_graph(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        let inner = self.inner();
        // Held across the submission: submissions of one graph never overlap,
        // so each must see the previous one's event.
        let mut st = inner.state.lock();
        let single = st.parts.len() == 1 && !st.parts[0].host && st.parts[0].device == 0;
        // One command buffer on the in-order queue of the previous submission
        // follows it anyway: no wait, and no status query.
        let follows = single && st.last_in_order.as_ref().is_some_and(|q| q.same_queue(queue));
        let previous = if follows { None } else { st.last.clone() };
        let mut waits: SmallVec<[&Event; 8]> = wait.iter().copied().collect();
        if let Some(p) = previous.as_ref().filter(|p| !p.status().is_terminal()) {
            waits.push(p);
        }
        let event = if single {
            let cb = st.parts[0].cb.as_ref().expect("device partitions have a command buffer");
            let event = queue.enqueue_command_buffer(cb, &waits)?;
            // Without `enable_profiling` the event reports no timestamps; only
            // a profiling queue's event has any to hide.
            if inner.props.enable_profiling || !queue.properties().profiling {
                event
            } else {
                Event::span(&event, &event, &[], false)?
            }
        } else {
            let start = queue.events_wait(&waits)?;
            let worker = st.worker.clone().unwrap_or_else(|| queue.clone());
            let devices = &inner.source.devices;
            let mut done: Vec<Option<Event>> = vec![None; st.parts.len()];
            for &index in &st.submit_order {
                let part = &st.parts[index as usize];
                let event = {
                    // Events of other devices' partitions wait through bridges.
                    let on = part.device;
                    let bridged = |e: &Event, from: u16| {
                        if from == on { Ok(e.clone()) } else { super::multi_device::bridge(e, devices.context(on)) }
                    };
                    let owned: SmallVec<[Event; 4]> = if part.preds.is_empty() {
                        SmallVec::from_elem(bridged(&start, 0)?, 1)
                    } else {
                        part.preds
                            .iter()
                            .map(|p| {
                                let e = done[*p as usize].as_ref().expect("predecessors go first");
                                // Also a peer copy waits for its peer's events through
                                // a bridge: given directly, the copy overtook them on
                                // two CUDA GPUs (docs/multi-device.md).
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
            // devices through bridges into the submitting queue's context.
            let done: Vec<Event> = done
                .into_iter()
                .zip(&st.parts)
                .map(|(e, p)| {
                    let e = e.expect("every partition is submitted");
                    if p.device == 0 { Ok(e) } else { super::multi_device::bridge(&e, queue.context()) }
                })
                .collect::<Result<_>>()?;
            let mut leaves: Vec<&Event> = st.parts.iter().zip(&done).filter(|(p, _)| p.leaf).map(|(_, e)| e).collect();
            if leaves.is_empty() {
                leaves.push(&start);
            }
            let end = queue.events_wait(&leaves)?;
            Event::span(&start, &end, &done, inner.props.enable_profiling)?
        };
        st.last = Some(event.clone());
        let in_order = single && !queue.properties().out_of_order;
        match (&st.last_in_order, in_order) {
            (Some(q), true) if q.same_queue(queue) => {}
            (_, true) => st.last_in_order = Some(queue.clone()),
            (_, false) => st.last_in_order = None,
        }
        if let Some(runs) = &inner.runs {
            *runs.lock() = Some(event.clone());
        }
        Ok(event)
    }

    fn check_updatable(&self) -> Result<()> {
        ensure!(
            self.inner().props.updatable,
            InvalidOperation,
            "executable graph #{} was not finalized with the updatable property",
            self.id()
        );
        Ok(())
    }

    /// Applies the current state of `node` of the source graph (kernel
    /// arguments, range and, for a dynamic command group, the active
    /// command group) to this graph (`command_graph<executable>::update(node)`).
    /// Executions already submitted are not affected. Changes a device
    /// cannot make to a command buffer in place rebuild that partition's
    /// command buffer, so updates work on every device.
    ///
    /// `InvalidOperation` unless finalized [`updatable`](FinalizeProperties::updatable);
    /// `InvalidCommandHandle` for a node of another graph, one added after
    /// finalize, or one that is not a kernel or host task.
    pub fn update(&self, node: &Node) -> Result<()> {
        self.update_nodes(&[node])
    }

    /// [`update`](Self::update) of several nodes: every node is checked
    /// before any changes.
    #[tracing::instrument(level = "debug", skip_all, fields(exec = self.id(), nodes = nodes.len()))]
    pub fn update_nodes(&self, nodes: &[&Node]) -> Result<()> {
        self.check_updatable()?;
        let inner = self.inner();
        let source = &inner.source;
        let mut changes = Vec::with_capacity(nodes.len());
        {
            let state = source.state.lock();
            for node in nodes {
                ensure!(
                    node.graph.id == source.id,
                    InvalidCommandHandle,
                    "node {} of graph #{} given to executable graph #{}, finalized from graph #{}",
                    node.index,
                    node.graph.id,
                    inner.id,
                    source.id
                );
                ensure!(
                    (node.index as usize) < inner.signatures.len(),
                    InvalidCommandHandle,
                    "{} was added after executable graph #{} was finalized",
                    state.describe(source, node.index),
                    inner.id
                );
                let change = if let Some(spec) = state.kernel_spec(node.index) {
                    Change::Kernel(spec.clone())
                } else if let Some(task) = state.host_task(node.index) {
                    Change::Host(task.clone())
                } else {
                    return Err(err!(
                        InvalidCommandHandle,
                        "{} cannot be updated: only kernel and host-task nodes can",
                        state.describe(source, node.index)
                    ));
                };
                changes.push((node.index, change));
            }
        }
        self.apply(changes, false)?;
        self.refresh_accesses(nodes);
        Ok(())
    }

    /// Updates every node from `source`, a modifiable graph topologically
    /// identical to the one this graph was finalized from
    /// (`command_graph<executable>::update(graph)`): kernel arguments and
    /// ranges, host tasks.
    ///
    /// The specification leaves a mismatch undefined; here it is checked:
    /// the same number of nodes, each of the same type, with the same
    /// predecessors, and kernel nodes running the same kernel, else
    /// `InvalidGraph` naming the first difference. Nodes other than empty,
    /// barrier, kernel and host-task nodes, and graph-owned allocations, are
    /// `InvalidOperation`; another context `InvalidContext`.
    #[tracing::instrument(level = "debug", skip_all, fields(exec = self.id(), source = source.id()))]
    pub fn update_from(&self, source: &Graph<Modifiable>) -> Result<()> {
        self.check_updatable()?;
        let inner = self.inner();
        let src = source.shared();
        let buffers = super::buffers::match_whole_update(self, src)?;
        ensure!(
            src.context == inner.source.context,
            InvalidContext,
            "graph #{} belongs to another context than executable graph #{}",
            src.id,
            inner.id
        );
        ensure!(
            !inner.has_allocations,
            InvalidOperation,
            "executable graph #{} holds graph-owned allocations: whole-graph update is not allowed",
            inner.id
        );
        let mut changes = Vec::new();
        {
            let state = src.state.lock();
            ensure!(
                !state.allocation_nodes(),
                InvalidOperation,
                "graph #{} holds graph-owned allocations: whole-graph update is not allowed",
                src.id
            );
            ensure!(
                state.nodes.len() == inner.signatures.len(),
                InvalidGraph,
                "graph #{} has {} nodes, executable graph #{} was finalized with {}: not topologically identical",
                src.id,
                state.nodes.len(),
                inner.id,
                inner.signatures.len()
            );
            for (i, sig) in inner.signatures.iter().enumerate() {
                let i = i as u32;
                let ty = state.node_type(i);
                ensure!(
                    ty == sig.ty,
                    InvalidGraph,
                    "node {i} is a {ty} node in graph #{}, a {} node in executable graph #{}: not topologically \
                     identical",
                    src.id,
                    sig.ty,
                    inner.id
                );
                ensure!(
                    matches!(ty, NodeType::Empty | NodeType::Barrier | NodeType::Kernel | NodeType::HostTask),
                    InvalidOperation,
                    "whole-graph update supports empty, barrier, kernel and host-task nodes; {} is not one",
                    state.describe(src, i)
                );
                let mut preds = state.nodes[i as usize].preds.clone();
                preds.sort_unstable();
                ensure!(
                    preds == sig.preds,
                    InvalidGraph,
                    "node {i} depends on nodes {preds:?} in graph #{}, on {:?} in executable graph #{}: not \
                     topologically identical",
                    src.id,
                    sig.preds,
                    inner.id
                );
                if let Some(spec) = state.kernel_spec(i) {
                    changes.push((i, Change::Kernel(spec.clone())));
                } else if let Some(task) = state.host_task(i) {
                    changes.push((i, Change::Host(task.clone())));
                }
            }
        }
        self.apply(changes, true)?;
        self.replace_buffers(buffers);
        Ok(())
    }

    /// Applies changes of source nodes; `whole` keeps each kernel function
    /// (whole-graph update cannot switch kernels).
    fn apply(&self, changes: Vec<(u32, Change)>, whole: bool) -> Result<()> {
        let inner = self.inner();
        let mut st = inner.state.lock();
        // Validate everything first.
        let mut resolved: Vec<(u32, Change)> = Vec::with_capacity(changes.len());
        for (origin, change) in changes {
            let at = st.by_origin[origin as usize]
                .ok_or_else(|| err!(Unknown, "node {origin} has no command in executable graph #{}", inner.id))?;
            let change = match (change, &st.nodes[at as usize].op) {
                (Change::Kernel(mut spec), FlatOp::Kernel { spec: old, .. }) => {
                    if whole {
                        ensure!(
                            same_kernel_function(&old.kernel, &spec.kernel),
                            InvalidGraph,
                            "node {origin} runs `{}` in the source graph and `{}` in executable graph #{}: not \
                             topologically identical",
                            spec.kernel.name(),
                            old.kernel.name(),
                            inner.id
                        );
                        spec.kernel = old.kernel.clone();
                    }
                    let on = st.nodes[at as usize].device;
                    let devices = &inner.source.devices;
                    spec.resolve(devices.context(on))
                        .and_then(|_| devices.check_kernel(inner.source.id, on, &spec))
                        .map_err(|e| e.in_context(&format!("update of kernel node {origin}")))?;
                    Change::Kernel(spec)
                }
                (Change::Host(task), FlatOp::Host(_)) => Change::Host(task),
                _ => {
                    return Err(err!(
                        InvalidCommandHandle,
                        "node {origin} changed kind since executable graph #{} was finalized",
                        inner.id
                    ));
                }
            };
            resolved.push((at, change));
        }
        // Command-buffer updates, per partition; what a device cannot update
        // in place is rebuilt.
        let mut per_part: BTreeMap<u32, Vec<Diff>> = BTreeMap::new();
        for (at, change) in &resolved {
            if let (Change::Kernel(new), FlatOp::Kernel { spec: old, .. }) = (change, &st.nodes[*at as usize].op) {
                let p = st.part_of[*at as usize];
                let handle = st.parts[p as usize].handles[st.slot_of[*at as usize] as usize].clone();
                if let Some(diff) = Diff::new(old, new, handle) {
                    per_part.entry(p).or_default().push(diff);
                }
            }
        }
        let mut rebuild = BTreeSet::new();
        for (p, diffs) in &per_part {
            let part = &st.parts[*p as usize];
            let cb = part.cb.as_ref().expect("kernels are in device partitions");
            let handles: Option<Vec<&CommandHandle>> = diffs.iter().map(|d| d.handle.as_ref()).collect();
            let Some(handles) = handles else {
                rebuild.insert(*p);
                continue;
            };
            let updates: Vec<KernelLaunchUpdate<'_>> = diffs.iter().zip(handles).map(|(d, h)| d.update(h)).collect();
            // SAFETY: every launch was validated above; the application vouched
            // for what the kernels touch when it launched them, updated their
            // dynamic parameters or ranges (all `unsafe`).
            match unsafe { cb.update_kernel_launches(&updates) } {
                Ok(()) => {}
                Err(UrError::UnsupportedFeature(_)) => {
                    rebuild.insert(*p);
                }
                Err(e) => return Err(e.in_context(&format!("update of executable graph #{}", inner.id))),
            }
        }
        for (at, change) in resolved {
            match (change, &mut st.nodes[at as usize].op) {
                (Change::Kernel(new), FlatOp::Kernel { spec, .. }) => *spec = new,
                (Change::Host(new), FlatOp::Host(task)) => *task = new,
                _ => {}
            }
        }
        for p in rebuild {
            tracing::debug!(exec = inner.id, partition = p, "rebuilding a partition for an update");
            let on = st.parts[p as usize].device;
            build_partition(inner.source.devices.context(on), &inner.props, &mut st, p as usize)?;
        }
        Ok(())
    }

    /// The executable graph in Graphviz DOT, one cluster per partition.
    pub fn to_dot(&self, verbose: bool) -> String {
        let st = self.inner().state.lock();
        super::dot::executable(self.id(), self.source_id(), &st, verbose)
    }

    /// Writes [`to_dot`](Self::to_dot) to `path`, which must end in `.dot`.
    #[tracing::instrument(level = "debug", skip_all, fields(exec = self.id()))]
    pub fn print_graph(&self, path: impl AsRef<Path>, verbose: bool) -> Result<()> {
        super::dot::write(path.as_ref(), &self.to_dot(verbose), self.id())
    }
}

/// A graph-submission event: `first` to `last`, reporting the failure of any part.
/// The order partitions are submitted in: a topological order in which
/// every partition that waits, directly or not, for fewer host tasks comes
/// first. A device partition that waits for a host task is then submitted
/// after the independent work, so that a queue which runs its commands in
/// submission order (NVIDIA's OpenCL, whatever the out-of-order property
/// says) cannot hold independent branches behind it, one of which the host
/// task may be waiting for.
fn submission_order(parts: &[Part]) -> Vec<u32> {
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

impl fmt::Debug for Graph<Executable> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner().state.lock();
        f.debug_struct("Graph<Executable>")
            .field("id", &self.id())
            .field("source", &self.source_id())
            .field("commands", &st.nodes.len())
            .field("partitions", &st.parts.len())
            .finish()
    }
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
