//! Update: kernel nodes and host tasks of an executable graph changed in
//! place, from nodes of its source graph or from a whole graph.

use std::collections::{BTreeMap, BTreeSet};

use cmdbuf_core::command_buffer::{CommandHandle, KernelLaunchUpdate, LocalSizeUpdate};
use cmdbuf_core::error::{Result, UrError};
use cmdbuf_core::launch::ArgValue;
use cmdbuf_core::program::Kernel;
use cmdbuf_core::{ensure, err};

use super::finalize::build_partition;
use crate::graph::state::{ExecInner, ExecState, FlatOp, GraphShared, GraphState, HostFn, KernelSpec, NodeType};
use crate::graph::{Executable, Graph, Modifiable, Node};

/// One node's change for [`Graph::update`].
enum Change {
    Kernel(KernelSpec),
    Host(HostFn),
    /// A collective node's operation and buffers (whole-graph update).
    Collective(std::sync::Arc<crate::graph::state::CollectiveNode>),
    /// The same, recorded again (captured again on CUDA) for this graph.
    Recorded(std::sync::Arc<crate::graph::state::CollectiveRun>),
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
    /// ranges, host tasks, and collective nodes' operations and buffers
    /// (recorded again, so captured again on CUDA).
    ///
    /// The specification leaves a mismatch undefined; here it is checked:
    /// the same number of nodes, each of the same type, with the same
    /// predecessors, and kernel nodes running the same kernel, else
    /// `InvalidGraph` naming the first difference. Nodes other than empty,
    /// barrier, kernel, host-task and collective nodes, and graph-owned
    /// allocations, are `InvalidOperation`; another context `InvalidContext`.
    #[tracing::instrument(level = "debug", skip_all, fields(exec = self.id(), source = source.id()))]
    pub fn update_from(&self, source: &Graph<Modifiable>) -> Result<()> {
        self.check_updatable()?;
        let inner = self.inner();
        let src = source.shared();
        let buffers = crate::graph::buffers::match_whole_update(self, src)?;
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
        let changes = whole_update_changes(inner, src, &src.state.lock())?;
        self.apply(changes, true)?;
        self.replace_buffers(buffers);
        Ok(())
    }

    /// Applies changes of source nodes; `whole` keeps each kernel function
    /// (whole-graph update cannot switch kernels). Every change is checked
    /// before any is made; the command buffers are updated in place where
    /// the device can, and rebuilt where it cannot.
    fn apply(&self, changes: Vec<(u32, Change)>, whole: bool) -> Result<()> {
        let inner = self.inner();
        let mut st = inner.state.lock();
        let mut resolved: Vec<(u32, Change)> = Vec::with_capacity(changes.len());
        for (origin, change) in changes {
            let at = st.by_origin[origin as usize]
                .ok_or_else(|| err!(Unknown, "node {origin} has no command in executable graph #{}", inner.id))?;
            if let Some(change) = resolve_change(inner, &st, origin, at, change, whole)? {
                resolved.push((at, change));
            }
        }
        let rebuild = update_in_place(inner, &st, &resolved)?;
        let recorded = store_changes(&mut st, resolved);
        for &p in &rebuild {
            tracing::debug!(exec = inner.id, partition = p, "rebuilding a partition for an update");
            let on = st.parts[p as usize].device;
            build_partition(inner.source.devices.context(on), &inner.props, &mut st, p as usize)?;
        }
        let rebuilt: Vec<u32> = rebuild.into_iter().collect();
        super::compose::refresh(inner.id, &mut st, &rebuilt, &recorded);
        Ok(())
    }
}

/// The changes a whole-graph update from `src` (in `state`) makes, once
/// `src` is checked topologically identical to the graph `inner` was
/// finalized from, and made of nodes the update supports.
fn whole_update_changes(inner: &ExecInner, src: &GraphShared, state: &GraphState) -> Result<Vec<(u32, Change)>> {
    let mut changes = Vec::new();
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
            matches!(
                ty,
                NodeType::Empty | NodeType::Barrier | NodeType::Kernel | NodeType::HostTask | NodeType::Collective
            ),
            InvalidOperation,
            "whole-graph update supports empty, barrier, kernel, host-task and collective nodes; {} is not one",
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
        } else if let crate::graph::state::NodeKind::Collective(node) = &state.nodes[i as usize].kind {
            changes.push((i, Change::Collective(node.clone())));
        }
    }
    Ok(changes)
}

/// Checks the change of source node `origin` against its command `at`: a
/// kernel resolved for its device (keeping the kernel function for a
/// `whole`-graph update), a host task, or a collective recorded again;
/// `None` for a collective that did not change.
fn resolve_change(
    inner: &ExecInner,
    st: &ExecState,
    origin: u32,
    at: u32,
    change: Change,
    whole: bool,
) -> Result<Option<Change>> {
    Ok(Some(match (change, &st.nodes[at as usize].op) {
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
        (Change::Collective(node), FlatOp::Collective(old)) => {
            if old.node == *node {
                return Ok(None);
            }
            // Recorded again on this graph's communicator: checked
            // there, and captured again where collectives are.
            let run = crate::graph::state::CollectiveRun::new(&node, &inner.source.devices)
                .map_err(|e| e.in_context(&format!("update of collective node {origin}")))?;
            Change::Recorded(std::sync::Arc::new(run))
        }
        _ => {
            return Err(err!(
                InvalidCommandHandle,
                "node {origin} changed kind since executable graph #{} was finalized",
                inner.id
            ));
        }
    }))
}

/// Updates the kernel commands of the resolved changes in their command
/// buffers, per partition; returns the partitions whose device cannot
/// update them in place, to be rebuilt.
fn update_in_place(inner: &ExecInner, st: &ExecState, resolved: &[(u32, Change)]) -> Result<BTreeSet<u32>> {
    let mut per_part: BTreeMap<u32, Vec<Diff>> = BTreeMap::new();
    for (at, change) in resolved {
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
    Ok(rebuild)
}

/// Stores the resolved changes in the nodes; returns the partitions of the
/// collectives recorded again.
fn store_changes(st: &mut ExecState, resolved: Vec<(u32, Change)>) -> Vec<u32> {
    let mut recorded: Vec<u32> = Vec::new();
    for (at, change) in resolved {
        match (change, &mut st.nodes[at as usize].op) {
            (Change::Kernel(new), FlatOp::Kernel { spec, .. }) => *spec = new,
            (Change::Host(new), FlatOp::Host(task)) => *task = new,
            // Executions already submitted keep the old recording: their
            // events (or the composition's submissions) hold its capture
            // and communicator.
            (Change::Recorded(new), FlatOp::Collective(run)) => {
                *run = new;
                recorded.push(st.part_of[at as usize]);
            }
            _ => {}
        }
    }
    recorded
}
