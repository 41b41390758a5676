//! Finalize: the snapshot of the modifiable graph, its lowering and
//! partitioning, and one command buffer per device partition.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use cmdbuf_core::command_buffer::{AppendOptions, CommandBuffer, CommandBufferDesc, SyncPoint};
use cmdbuf_core::context::Context;
use cmdbuf_core::device::UpdateCapabilities;
use cmdbuf_core::error::Result;
use cmdbuf_core::launch::{ArgValue, KernelArg};
use cmdbuf_core::memory::{MigrationFlags, UsmAllocation, UsmKind};
use cmdbuf_core::program::Kernel;
use cmdbuf_core::queue::{Queue, QueueProperties};
use cmdbuf_core::{ensure, err};

use super::run::submission_order;
use crate::graph::multi_device::Route;
use crate::graph::partition::{Lowered, Part, is_chain, lower_empties, partition_placed, topological_order};
use crate::graph::state::{
    CrossDeviceTraffic, ExecInner, ExecState, FlatNode, FlatOp, GraphShared, GraphState, GroupOp, KernelSpec, NodeKind,
    Partition, Signature,
};
use crate::graph::{Executable, FinalizeProperties, Graph};

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
    let buffers = state.accesses_in_order();
    let inner = Arc::new(ExecInner {
        id: crate::graph::NEXT_EXEC_ID.fetch_add(1, Ordering::Relaxed),
        source: shared.clone(),
        props,
        signatures,
        has_allocations,
        memory: state.pool.stats(),
        traffic,
        host_bridges: if built.composed.is_some() {
            0
        } else {
            crate::graph::multi_device::host_bridges(&shared.devices, &built.parts, |p| {
                match &built.nodes[p.members[0] as usize].op {
                    FlatOp::Collective(run) => Some(run.ranks()),
                    _ => None,
                }
            })
        },
        _chunks: state.pool.chunks().to_vec(),
        runs: has_allocations.then(|| state.pool.run_slot()),
        state: Mutex::new(built),
        uses_buffers: AtomicBool::new(!buffers.is_empty()),
        buffers: Mutex::new(buffers),
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
        match flat_op(shared, state, &node.kind)? {
            Some(op) => flat.push(FlatNode { op, preds, origin, device }),
            None => inline_subgraph(&mut flat, children[i].take().unwrap_or_default(), preds, device),
        }
    }
    let signatures = signatures(state);
    tracing::trace!(graph = shared.id, flat = flat.len(), "snapshot");
    Ok((flat, signatures))
}

/// The flat operation of a node that is no sub-graph (`None` for a
/// sub-graph, whose nodes are inlined instead).
fn flat_op(shared: &GraphShared, state: &GraphState, kind: &NodeKind) -> Result<Option<FlatOp>> {
    Ok(Some(match kind {
        NodeKind::Subgraph(_) => return Ok(None),
        NodeKind::Empty | NodeKind::Barrier | NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. } => {
            FlatOp::Empty
        }
        NodeKind::Kernel(spec) => FlatOp::Kernel { spec: spec.clone(), alternatives: Vec::new() },
        NodeKind::Memory(command) => FlatOp::Command(command.clone()),
        NodeKind::HostTask(task) => FlatOp::Host(task.clone()),
        NodeKind::Native(callback) => FlatOp::Native(callback.clone()),
        NodeKind::Collective(node) => {
            FlatOp::Collective(Arc::new(crate::graph::state::CollectiveRun::new(node, &shared.devices)?))
        }
        NodeKind::Dynamic(g) => {
            let group = &state.groups[*g as usize];
            match group.active_op() {
                GroupOp::Kernel(spec) => FlatOp::Kernel { spec: spec.clone(), alternatives: group.alternatives() },
                GroupOp::Host(task) => FlatOp::Host(task.clone()),
            }
        }
    }))
}

/// Inlines a sub-graph's flat nodes after `preds`: an entry node, the
/// child's nodes (its roots after the entry) and an exit node after the
/// child's leaves, which the sub-graph node's successors wait for.
fn inline_subgraph(flat: &mut Vec<FlatNode>, child: Vec<FlatNode>, preds: Vec<u32>, device: u16) {
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
        let preds = if c.preds.is_empty() { vec![entry] } else { c.preds.iter().map(|p| p + base).collect() };
        flat.push(FlatNode { op: c.op, preds, origin: None, device });
    }
    let mut leaves: Vec<u32> =
        (0..has_succ.len() as u32).filter(|c| !has_succ[*c as usize]).map(|c| c + base).collect();
    if leaves.is_empty() {
        leaves.push(entry);
    }
    flat.push(FlatNode { op: FlatOp::Empty, preds: leaves, origin: None, device });
}

/// Each node's type and sorted predecessors, which a whole-graph update
/// compares with its source graph's.
fn signatures(state: &GraphState) -> Vec<Signature> {
    (0..state.nodes.len() as u32)
        .map(|i| {
            let mut preds = state.nodes[i as usize].preds.clone();
            preds.sort_unstable();
            Signature { ty: state.node_type(i), preds }
        })
        .collect()
}

/// Lowers, partitions and builds the command buffers of a snapshot, in
/// named steps: `plan` (order, empty nodes, partitions), the node tables
/// (`slots_and_origins`), the queues that run partitions (`partition_queues`)
/// and one command buffer per device partition (`add_partitions`).
fn build(
    shared: &GraphShared,
    state: &GraphState,
    flat: Vec<FlatNode>,
    props: &FinalizeProperties,
) -> Result<ExecState> {
    let start = std::time::Instant::now();
    let Plan { nodes, parts, part_of, in_order } = plan(shared, state, flat, props)?;
    let (slot_of, by_origin) = slots_and_origins(&parts, &nodes, state.nodes.len());
    let (device_queues, worker) = partition_queues(shared, &parts)?;
    let mut st = ExecState {
        nodes,
        part_of,
        slot_of,
        parts: Vec::with_capacity(parts.len()),
        submit_order: submission_order(&parts),
        by_origin,
        last: None,
        worker,
        scratch: None,
        device_queues,
        composed: None,
    };
    let layer = start.elapsed();
    add_partitions(shared, props, &mut st, parts, &in_order)?;
    st.composed = super::compose::compose(shared, &st);
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

/// A snapshot planned for execution: its nodes, in execution numbering,
/// and their partitions.
struct Plan {
    nodes: Vec<FlatNode>,
    parts: Vec<Part>,
    /// Each node's partition.
    part_of: Vec<u32>,
    /// Whether each partition may run as an in-order command buffer.
    in_order: Vec<bool>,
}

/// Orders the snapshot (refusing a cycle), contracts its empty nodes,
/// partitions the rest by kind and device, and renumbers the nodes.
fn plan(shared: &GraphShared, state: &GraphState, flat: Vec<FlatNode>, props: &FinalizeProperties) -> Result<Plan> {
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
        .map(|o| matches!(flat[*o as usize].op, FlatOp::Host(_) | FlatOp::PeerCopy { .. } | FlatOp::Collective(_)))
        .collect();
    let device: Vec<u16> = lowered.original.iter().map(|o| flat[*o as usize].device).collect();
    let identity: Vec<u32> = (0..host.len() as u32).collect();
    let (parts, part_of) = partition_placed(&lowered.preds, &host, &device, &identity);
    let in_order: Vec<bool> = parts
        .iter()
        .map(|part| !part.host && !props.enable_profiling && is_chain(&part.members, &lowered.preds, &part_of))
        .collect();
    let nodes = renumber(flat, lowered);
    Ok(Plan { nodes, parts, part_of, in_order })
}

/// The snapshot's nodes in `lowered`'s numbering, with its predecessor
/// lists; contracted empty nodes are gone and the kept ones become joins.
fn renumber(mut flat: Vec<FlatNode>, lowered: Lowered) -> Vec<FlatNode> {
    let Lowered { preds: mut new_preds, original, .. } = lowered;
    if original.iter().enumerate().all(|(i, o)| *o as usize == i) && original.len() == flat.len() {
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
    }
}

/// Each node's place in its partition, and the node standing for each of
/// the graph's `sources` source nodes.
fn slots_and_origins(parts: &[Part], nodes: &[FlatNode], sources: usize) -> (Vec<u32>, Vec<Option<u32>>) {
    let mut slot_of = vec![0u32; nodes.len()];
    for part in parts {
        for (i, m) in part.members.iter().enumerate() {
            slot_of[*m as usize] = i as u32;
        }
    }
    let mut by_origin = vec![None; sources];
    for (i, node) in nodes.iter().enumerate() {
        if let Some(o) = node.origin {
            by_origin[o as usize] = Some(i as u32);
        }
    }
    (slot_of, by_origin)
}

/// A worker queue of each other device the partitions use, and an
/// out-of-order worker of the graph's own device for a graph of several
/// partitions where the device has such queues.
fn partition_queues(shared: &GraphShared, parts: &[Part]) -> Result<(Vec<Option<Queue>>, Option<Queue>)> {
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
    Ok((device_queues, worker))
}

/// Adds the partitions to `st`, each marked a leaf when no other waits for
/// it, and builds the command buffer of each device partition.
fn add_partitions(
    shared: &GraphShared,
    props: &FinalizeProperties,
    st: &mut ExecState,
    parts: Vec<Part>,
    in_order: &[bool],
) -> Result<()> {
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
            build_partition(shared.devices.context(part.device), props, st, index)?;
        }
    }
    Ok(())
}

/// Records partition `index` into a new command buffer.
pub(super) fn build_partition(
    context: &Context,
    props: &FinalizeProperties,
    st: &mut ExecState,
    index: usize,
) -> Result<()> {
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
                cmdbuf_core::command_buffer::Appended { sync_point, event: None, command: None }
            }
            FlatOp::Join => {
                if st.scratch.is_none() {
                    st.scratch = Some(scratch(context)?);
                }
                let ptr = st.scratch.as_ref().map(UsmAllocation::ptr).expect("just made");
                cb.append_usm_prefetch(ptr, 1, MigrationFlags::HOST_TO_DEVICE, opts)?
            }
            FlatOp::Host(_) | FlatOp::Empty | FlatOp::PeerCopy { .. } | FlatOp::Collective(_) => {
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
        .find(|k| usm.contains(crate::aspect::usm_flag(*k)))
        .ok_or_else(|| err!(UnsupportedFeature, "{} has no USM for graph join commands", context.device()))?;
    UsmAllocation::new(context, kind, 64)
}
