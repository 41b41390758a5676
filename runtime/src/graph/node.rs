//! Nodes: what each one holds (defined in `state.rs`: kernels, node types,
//! the graph's node list), the public handle with its queries and
//! execution-range updates, and the ancestry search that graph-owned
//! allocations reuse memory by.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use cmdbuf_core::command::Command;
use cmdbuf_core::context::Context;
use cmdbuf_core::error::Result;
use cmdbuf_core::launch::{ArgValue, KernelArg, KernelCommand, KernelLaunch, LocalSizeOrigin, check_dims, to_3d};
use cmdbuf_core::program::{ArgKind, Kernel};
use cmdbuf_core::{ensure, err};

use super::state::{GraphShared, GraphState, HostFn, KernelSpec, NodeData, NodeKind, NodeType};
use super::topo::{Adjacency, TopoOrder};

impl fmt::Display for NodeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeType::Empty => "empty",
            NodeType::Subgraph => "subgraph",
            NodeType::Kernel => "kernel",
            NodeType::Memcpy => "memcpy",
            NodeType::Memset => "memset",
            NodeType::Memfill => "memfill",
            NodeType::Prefetch => "prefetch",
            NodeType::MemAdvise => "memadvise",
            NodeType::Barrier => "barrier",
            NodeType::HostTask => "host_task",
            NodeType::AsyncMalloc => "async_malloc",
            NodeType::AsyncFree => "async_free",
            NodeType::NativeCommand => "native_command",
            NodeType::Collective => "collective",
        })
    }
}

impl KernelSpec {
    /// The spec of a validated launch.
    pub(crate) fn new(command: KernelCommand, origin: LocalSizeOrigin) -> KernelSpec {
        let range = command.range;
        KernelSpec {
            kernel: command.kernel,
            work_dim: range.work_dim,
            global: range.global_size,
            offset: range.global_offset,
            local: (origin == LocalSizeOrigin::User).then_some(range.local_size),
            args: command.args,
        }
    }

    /// Validates the spec for `context`'s device and gives the launch.
    pub(crate) fn resolve(&self, context: &Context) -> Result<(KernelCommand, LocalSizeOrigin)> {
        KernelCommand::new(
            context,
            &self.kernel,
            self.work_dim,
            self.global,
            self.offset,
            self.local,
            &self.args.iter().map(ArgValue::as_arg).collect::<Vec<_>>(),
        )
    }

    /// The launch of the spec, with `args` (its arguments, as [`ArgValue::as_arg`] gives them).
    pub(crate) fn launch<'a>(&'a self, args: &'a [KernelArg<'a>]) -> KernelLaunch<'a> {
        let dim = self.work_dim as usize;
        KernelLaunch {
            kernel: &self.kernel,
            global_size: &self.global[..dim],
            local_size: self.local.as_ref().map(|l| &l[..dim]),
            global_offset: Some(&self.offset[..dim]),
            args,
        }
    }

    /// The used part of the global size.
    pub(crate) fn global_size(&self) -> &[usize] {
        &self.global[..self.work_dim as usize]
    }
}

/// Whether `value` can be argument `index` of `kernel`.
pub(crate) fn check_arg_kind(kernel: &Kernel, index: usize, value: &ArgValue) -> Result<()> {
    let kinds = &kernel.signature().args;
    ensure!(
        index < kinds.len(),
        InvalidKernelArgumentIndex,
        "argument index {index} of `{}`, which takes {}",
        kernel.name(),
        kinds.len()
    );
    match (kinds[index], value) {
        (ArgKind::Global, ArgValue::Pointer(_) | ArgValue::MemObj(_)) | (ArgKind::Local, ArgValue::Local(_)) => Ok(()),
        // Kinds the driver did not tell (adopted kernels): the value's own.
        (ArgKind::Unknown, _) | (ArgKind::AnyValue, ArgValue::Value(_)) => Ok(()),
        (ArgKind::Value(n), ArgValue::Value(bytes)) => {
            ensure!(
                bytes.len() == n,
                InvalidKernelArgumentSize,
                "argument {index} of `{}` is a {n}-byte value, the dynamic parameter holds {} bytes",
                kernel.name(),
                bytes.len()
            );
            Ok(())
        }
        (kind, value) => {
            Err(err!(InvalidValue, "argument {index} of `{}` is declared {kind:?}, given {value:?}", kernel.name()))
        }
    }
}

/// The type of a memory command's node.
pub(crate) fn command_type(command: &Command) -> NodeType {
    match command {
        Command::UsmFill { pattern, .. } | Command::BufferFill { pattern, .. } => {
            if pattern.len() == 1 {
                NodeType::Memset
            } else {
                NodeType::Memfill
            }
        }
        Command::UsmPrefetch { .. } => NodeType::Prefetch,
        Command::UsmAdvise { .. } => NodeType::MemAdvise,
        Command::KernelLaunch(_) => NodeType::Kernel,
        _ => NodeType::Memcpy,
    }
}

impl Adjacency for [NodeData] {
    fn succs(&self, node: u32) -> &[u32] {
        &self[node as usize].succs
    }

    fn preds(&self, node: u32) -> &[u32] {
        &self[node as usize].preds
    }
}

/// A node of a graph (`sycl::ext::oneapi::experimental::node`). Clones name
/// the same node; nodes compare equal when they are the same node of the
/// same graph.
///
/// ```
/// use cmdbuf_core::*;
/// use cmdbuf_runtime::graph::*;
/// use cmdbuf_runtime::Queue;
/// # let device = cmdbuf_cpu::default_device();
/// let ctx = Context::new(&device)?;
/// let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
/// let a = graph.add_empty(NodeProperties::new())?;
/// let b = graph.add_empty(NodeProperties::new().depends_on(&[&a]))?;
/// assert_eq!(b.node_type(), NodeType::Empty);
/// assert_eq!(b.predecessors(), vec![a.clone()]);
/// assert_eq!(a.successors(), vec![b]);
/// # Ok::<(), UrError>(())
/// ```
#[derive(Clone)]
pub struct Node {
    pub(crate) graph: Arc<GraphShared>,
    pub(crate) index: u32,
}

impl Node {
    /// Its number: the order in which it was added, from 0.
    pub fn index(&self) -> usize {
        self.index as usize
    }

    /// The identity of its graph ([`Graph::id`](super::Graph::id)).
    pub fn graph_id(&self) -> u64 {
        self.graph.id
    }

    /// The kind of command it holds.
    pub fn node_type(&self) -> NodeType {
        let state = self.graph.state.lock();
        state.node_type(self.index)
    }

    /// The nodes it directly depends on, in the order the edges were made.
    pub fn predecessors(&self) -> Vec<Node> {
        let state = self.graph.state.lock();
        state.nodes[self.index as usize].preds.iter().map(|p| self.graph.node(*p)).collect()
    }

    /// The nodes that directly depend on it, in the order the edges were made.
    pub fn successors(&self) -> Vec<Node> {
        let state = self.graph.state.lock();
        state.nodes[self.index as usize].succs.iter().map(|s| self.graph.node(*s)).collect()
    }

    /// Sets the global size of this kernel node (`node::update_range`); the
    /// local size becomes the implementation's choice again. Takes effect in
    /// the modifiable graph at once and in an executable graph at its next
    /// [`update`](super::Graph::update).
    ///
    /// `InvalidCommandHandle` for a node that is not a kernel,
    /// `InvalidWorkDimension` when the dimension differs from the launch's.
    ///
    /// # Safety
    /// The kernel runs over the new range at every execution that uses it: it
    /// may reach memory its arguments point to at any index the range gives.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.graph.id, node = self.index))]
    pub unsafe fn update_range(&self, global_size: &[usize]) -> Result<()> {
        self.update_spec(global_size, None, None)
    }

    /// Sets the global and local size, and optionally the global offset, of
    /// this kernel node (`node::update_nd_range`). As
    /// [`update_range`](Self::update_range) otherwise.
    ///
    /// # Safety
    /// As for [`update_range`](Self::update_range).
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.graph.id, node = self.index))]
    pub unsafe fn update_nd_range(
        &self,
        global_size: &[usize],
        local_size: &[usize],
        global_offset: Option<&[usize]>,
    ) -> Result<()> {
        self.update_spec(global_size, Some(local_size), global_offset)
    }

    fn update_spec(&self, global: &[usize], local: Option<&[usize]>, offset: Option<&[usize]>) -> Result<()> {
        let graph = &self.graph;
        let mut state = graph.state.lock();
        let name = state.describe(graph, self.index);
        let context = graph.devices.context(state.placed.device(self.index));
        let spec = state.kernel_spec_mut(self.index).ok_or_else(|| {
            err!(InvalidCommandHandle, "{name} is not a kernel node: only kernel ranges can be updated")
        })?;
        let work_dim = check_dims(global.len(), &[("local size", local), ("global offset", offset)])?;
        ensure!(
            work_dim == spec.work_dim,
            InvalidWorkDimension,
            "{name} is a {}-dimensional launch, the new range has {work_dim} dimensions",
            spec.work_dim
        );
        let mut new = spec.clone();
        new.global = to_3d(global, 1);
        new.local = local.map(|l| to_3d(l, 1));
        if let Some(o) = offset {
            new.offset = to_3d(o, 0);
        }
        new.resolve(context).map_err(|e| e.in_context(&name))?;
        *spec = new;
        Ok(())
    }
}

impl GraphState {
    /// The type of node `index`.
    pub(crate) fn node_type(&self, index: u32) -> NodeType {
        match &self.nodes[index as usize].kind {
            NodeKind::Empty => NodeType::Empty,
            NodeKind::Barrier => NodeType::Barrier,
            NodeKind::Kernel(_) => NodeType::Kernel,
            NodeKind::Memory(c) => command_type(c),
            NodeKind::HostTask(_) => NodeType::HostTask,
            NodeKind::Subgraph(_) => NodeType::Subgraph,
            NodeKind::Dynamic(g) => match self.groups[*g as usize].active_op() {
                super::state::GroupOp::Kernel(_) => NodeType::Kernel,
                super::state::GroupOp::Host(_) => NodeType::HostTask,
            },
            NodeKind::AsyncMalloc { .. } => NodeType::AsyncMalloc,
            NodeKind::AsyncFree { .. } => NodeType::AsyncFree,
            NodeKind::Native(_) => NodeType::NativeCommand,
            NodeKind::Collective(_) => NodeType::Collective,
        }
    }

    /// The current kernel launch of node `index`, where it is a kernel.
    pub(crate) fn kernel_spec(&self, index: u32) -> Option<&KernelSpec> {
        match &self.nodes[index as usize].kind {
            NodeKind::Kernel(spec) => Some(spec),
            NodeKind::Dynamic(g) => match self.groups[*g as usize].active_op() {
                super::state::GroupOp::Kernel(spec) => Some(spec),
                super::state::GroupOp::Host(_) => None,
            },
            _ => None,
        }
    }

    /// As [`kernel_spec`](Self::kernel_spec), to change it.
    pub(crate) fn kernel_spec_mut(&mut self, index: u32) -> Option<&mut KernelSpec> {
        match &mut self.nodes[index as usize].kind {
            NodeKind::Kernel(spec) => Some(spec),
            NodeKind::Dynamic(g) => match self.groups[*g as usize].active_op_mut() {
                super::state::GroupOp::Kernel(spec) => Some(spec),
                super::state::GroupOp::Host(_) => None,
            },
            _ => None,
        }
    }

    /// The host task of node `index`, where it is one.
    pub(crate) fn host_task(&self, index: u32) -> Option<&HostFn> {
        match &self.nodes[index as usize].kind {
            NodeKind::HostTask(f) => Some(f),
            NodeKind::Dynamic(g) => match self.groups[*g as usize].active_op() {
                super::state::GroupOp::Host(f) => Some(f),
                super::state::GroupOp::Kernel(_) => None,
            },
            _ => None,
        }
    }

    /// "node 3 (kernel `saxpy`) of graph #2", for error messages.
    pub(crate) fn describe(&self, graph: &GraphShared, index: u32) -> String {
        let ty = self.node_type(index);
        match self.kernel_spec(index) {
            Some(spec) => format!("node {index} ({ty} `{}`) of graph #{}", spec.kernel.name(), graph.id),
            None => format!("node {index} ({ty}) of graph #{}", graph.id),
        }
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.graph.id == other.graph.id && self.index == other.index
    }
}

impl Eq for Node {}

impl Hash for Node {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.graph.id, self.index).hash(state);
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Node({} of graph #{})", self.index, self.graph.id)
    }
}

/// Whether `ancestor` is one of `deps` or an ancestor of one. With `prune`,
/// the maintained order limits the search to nodes after `ancestor`.
pub(crate) fn is_ancestor(nodes: &[NodeData], topo: &TopoOrder, ancestor: u32, deps: &[u32], prune: bool) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<u32> = deps.to_vec();
    while let Some(x) = stack.pop() {
        if x == ancestor {
            return true;
        }
        if (prune && !topo.precedes(ancestor, x)) || !seen.insert(x) {
            continue;
        }
        stack.extend_from_slice(&nodes[x as usize].preds);
    }
    false
}
