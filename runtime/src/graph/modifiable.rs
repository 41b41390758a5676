//! The modifiable graph: its shared state's behaviour (the definitions are
//! `state.rs`'s), explicit construction, queries, ending recording and the
//! entry point of finalize (the recording of a queue is in
//! `crate::recording`, above the queue).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use cmdbuf_core::context::Context;
use cmdbuf_core::device::Device;
use cmdbuf_core::error::Result;
use cmdbuf_core::memory::{UsmKind, UsmPtr};
use cmdbuf_core::{ensure, err};

use super::dynamic::DynamicCommandGroup;
use super::handler::{Handler, Pending};
use super::memory::MemoryStats;
use super::node::is_ancestor;
use super::record;
use super::state::{Devices, GraphShared, GraphState, ModifiableHandle, NodeData, NodeKind, Target};
use super::{Executable, FinalizeProperties, Graph, GraphProperties, Modifiable, Node, NodeProperties};

static NEXT_GRAPH_ID: AtomicU64 = AtomicU64::new(1);

impl Drop for ModifiableHandle {
    fn drop(&mut self) {
        record::end_all(&self.shared);
    }
}

impl GraphShared {
    /// A node handle.
    pub(crate) fn node(self: &Arc<Self>, index: u32) -> Node {
        Node { graph: self.clone(), index }
    }

    /// The graph's device.
    pub(crate) fn device(&self) -> &Device {
        self.context.device()
    }

    /// `InvalidOperation` while a queue records into the graph.
    pub(crate) fn check_not_recording(&self, state: &GraphState, what: &str) -> Result<()> {
        ensure!(
            state.recording.is_empty(),
            InvalidOperation,
            "{what} graph #{} while {} queue(s) record into it: end recording first",
            self.id,
            state.recording.len()
        );
        Ok(())
    }

    /// Places a graph-owned allocation for a node that will depend on `deps`.
    pub(crate) fn allocate(&self, kind: UsmKind, size: usize, zero_init: bool, deps: &[u32]) -> Result<(u32, UsmPtr)> {
        let mut state = self.state.lock();
        let prune = !self.props.no_cycle_check;
        let GraphState { pool, nodes, topo, .. } = &mut *state;
        pool.allocate(&self.context, kind, size, zero_init, |free| is_ancestor(nodes, topo, free, deps, prune))
    }

    /// The allocation `ptr` starts, not yet freed.
    pub(crate) fn find_allocation(&self, ptr: UsmPtr) -> Result<u32> {
        let state = self.state.lock();
        let alloc = state.pool.find(ptr).map_err(|e| e.in_context(&format!("async_free in graph #{}", self.id)))?;
        ensure!(
            !state.pool.is_freed(alloc),
            InvalidValue,
            "async_free of {ptr:?}, already freed in graph #{}",
            self.id
        );
        Ok(alloc)
    }

    /// The dependencies `props` asks for, checked.
    fn prop_deps(&self, state: &GraphState, props: &NodeProperties<'_>) -> Result<Vec<u32>> {
        let mut deps = Vec::with_capacity(props.depends_on.len());
        for n in props.depends_on {
            ensure!(
                n.graph.id == self.id,
                InvalidGraph,
                "node {} of graph #{} given as a dependency in graph #{}",
                n.index,
                n.graph.id,
                self.id
            );
            deps.push(n.index);
        }
        if props.depends_on_all_leaves {
            deps.extend(state.leaves.iter().copied());
        }
        Ok(deps)
    }

    /// Adds the node a command group recorded.
    fn commit(self: &Arc<Self>, handler: &mut Handler) -> Result<Node> {
        let mut state = self.state.lock();
        self.check_not_recording(&state, "explicit add to")?;
        let index = state.nodes.len() as u32;
        let dynamic = std::mem::take(&mut handler.dynamic_args);
        let kind = match handler.pending.take() {
            None => NodeKind::Empty,
            Some(Pending::Kernel(mut spec)) => {
                for (arg, param) in &dynamic {
                    spec.args[*arg] = param.checked_value(self, &state, &spec.kernel, *arg)?;
                }
                NodeKind::Kernel(spec)
            }
            Some(Pending::Memory(c)) => NodeKind::Memory(c),
            Some(Pending::Host(f)) => NodeKind::HostTask(f),
            Some(Pending::Subgraph(g)) => NodeKind::Subgraph(g),
            Some(Pending::Malloc { alloc, ptr, size }) => NodeKind::AsyncMalloc { alloc, ptr, size },
            Some(Pending::Free { alloc, ptr }) => NodeKind::AsyncFree { alloc, ptr },
            Some(Pending::Native(callback)) => NodeKind::Native(callback),
            Some(Pending::Collective(node)) => NodeKind::Collective(node),
        };
        if !dynamic.is_empty() && !matches!(kind, NodeKind::Kernel(_)) {
            // Put an allocation back for `abandon`.
            if let NodeKind::AsyncMalloc { alloc, ptr, size } = kind {
                handler.pending = Some(Pending::Malloc { alloc, ptr, size });
            }
            return Err(err!(
                InvalidValue,
                "a dynamic parameter was registered with a command group of graph #{} that holds no kernel",
                self.id
            ));
        }
        if let NodeKind::AsyncFree { alloc, .. } = kind {
            state.pool.free(alloc, Some(index))?;
        }
        if let NodeKind::Kernel(spec) = &kind {
            self.devices.check_kernel(self.id, handler.device.unwrap_or(0), spec)?;
        }
        let accesses = state.take_accesses(handler, &kind);
        let deps = std::mem::take(&mut handler.deps);
        let index = state.commit(kind, deps, None);
        state.register_accesses(index, accesses);
        state.placed.place(index, handler.device.unwrap_or(0));
        if let Some(copy) = handler.cross.take() {
            state.placed.set_cross(index, copy);
        }
        for (arg, param) in &dynamic {
            state.params[param.id as usize].regs.push((Target::Node(index), *arg));
        }
        tracing::debug!(graph = self.id, node = index, "node added");
        Ok(self.node(index))
    }
}

impl GraphState {
    /// Appends a node after `deps` (a new node closes no cycle).
    pub(crate) fn commit(&mut self, kind: NodeKind, mut deps: Vec<u32>, queue: Option<usize>) -> u32 {
        dedup_in_order(&mut deps);
        let index = self.topo.push();
        for d in &deps {
            self.nodes[*d as usize].succs.push(index);
            self.leaves.remove(d);
        }
        self.edges += deps.len();
        self.leaves.insert(index);
        self.nodes.push(NodeData { kind, preds: deps, succs: Vec::new(), queue });
        index
    }

    /// Whether any graph-owned allocation node exists.
    pub(crate) fn allocation_nodes(&self) -> bool {
        self.nodes.iter().any(|n| matches!(n.kind, NodeKind::AsyncMalloc { .. } | NodeKind::AsyncFree { .. }))
    }
}

/// Removes repeated entries, keeping the first of each in place.
pub(crate) fn dedup_in_order(list: &mut Vec<u32>) {
    if list.len() <= 16 {
        let mut i = 0;
        while i < list.len() {
            if list[..i].contains(&list[i]) {
                list.remove(i);
            } else {
                i += 1;
            }
        }
    } else {
        let mut seen = std::collections::HashSet::with_capacity(list.len());
        list.retain(|x| seen.insert(*x));
    }
}

impl Graph<Modifiable> {
    /// Creates a modifiable graph for `device` in `context`
    /// (`command_graph(context, device, properties)`); `InvalidDevice` when
    /// `device` is not the context's device.
    ///
    /// ```
    /// use cmdbuf_core::*;
    /// use cmdbuf_runtime::graph::*;
    /// use cmdbuf_runtime::Queue;
    /// # let device = cmdbuf_cpu::default_device();
    /// let ctx = Context::new(&device)?;
    /// let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
    /// assert_eq!(graph.node_count(), 0);
    /// let exec = graph.finalize(FinalizeProperties::default())?; // an empty graph is fine
    /// let queue = Queue::new(&ctx, QueueProperties::default())?;
    /// queue.enqueue_graph(&exec, &[])?.wait()?;
    /// # Ok::<(), UrError>(())
    /// ```
    #[tracing::instrument(level = "debug", skip(context, device), fields(device = %device, label = props.label))]
    pub fn new(context: &Context, device: &Device, props: GraphProperties) -> Result<Graph<Modifiable>> {
        ensure!(context.device() == device, InvalidDevice, "{device} is not the device of the context");
        Ok(Graph::create(Devices::single(context), props))
    }

    /// A graph over `devices`, the first the graph's own.
    pub(crate) fn create(devices: Devices, props: GraphProperties) -> Graph<Modifiable> {
        let handle = Arc::new_cyclic(|weak| ModifiableHandle {
            shared: Arc::new(GraphShared {
                id: NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed),
                context: devices.context(0).clone(),
                devices,
                props,
                state: Mutex::new(GraphState::default()),
                handle: weak.clone(),
            }),
        });
        Graph(Modifiable { handle })
    }

    pub(crate) fn shared(&self) -> &Arc<GraphShared> {
        &self.0.handle.shared
    }

    /// The graph's identity, as error messages and DOT output name it (`graph #3`).
    pub fn id(&self) -> u64 {
        self.shared().id
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.shared().context
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.shared().device()
    }

    /// The properties it was created with.
    pub fn properties(&self) -> GraphProperties {
        self.shared().props
    }

    /// Adds a node holding the one command `cgf` records (`command_graph::add(cgf)`);
    /// a closure that records nothing makes an empty node. `cgf` runs once,
    /// now. `InvalidOperation` while a queue records into the graph.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn add(&self, cgf: impl FnOnce(&mut Handler) -> Result<()>, props: NodeProperties<'_>) -> Result<Node> {
        let shared = self.shared();
        let deps = {
            let state = shared.state.lock();
            shared.check_not_recording(&state, "explicit add to")?;
            shared.prop_deps(&state, &props)?
        };
        let mut handler = Handler::new(shared.clone(), deps, false);
        if let Some(device) = props.device {
            handler.device = Some(shared.devices.index_of(shared.id, device)?);
        }
        let result = cgf(&mut handler).and_then(|()| shared.commit(&mut handler));
        if result.is_err() {
            handler.abandon();
        }
        result
    }

    /// Adds an empty node (`command_graph::add(properties)`): a connection
    /// point between groups of nodes.
    pub fn add_empty(&self, props: NodeProperties<'_>) -> Result<Node> {
        self.add(|_| Ok(()), props)
    }

    /// Adds a node whose command is the active command group of `group`
    /// (`command_graph::add(dynamic_command_group)`); it depends on the
    /// group's dependencies and on `props`'. `InvalidGraph` for a group of
    /// another graph.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn add_dynamic(&self, group: &DynamicCommandGroup, props: NodeProperties<'_>) -> Result<Node> {
        let shared = self.shared();
        ensure!(
            group.graph.id == shared.id,
            InvalidGraph,
            "a dynamic command group of graph #{} added to graph #{}",
            group.graph.id,
            shared.id
        );
        if let Some(device) = props.device {
            ensure!(
                shared.devices.index_of(shared.id, device)? == 0,
                UnsupportedFeature,
                "dynamic command groups of multi-device graph #{} run on its own device only, not {device}",
                shared.id
            );
        }
        let mut state = shared.state.lock();
        shared.check_not_recording(&state, "explicit add to")?;
        let mut deps = shared.prop_deps(&state, &props)?;
        deps.extend_from_slice(&state.groups[group.id as usize].deps);
        let accesses = state.group_accesses(group.id, &mut deps)?;
        let index = state.commit(NodeKind::Dynamic(group.id), deps, None);
        state.register_group_accesses(index, accesses);
        state.groups[group.id as usize].nodes.push(index);
        Ok(shared.node(index))
    }

    /// Makes `dest` depend on `src` (`command_graph::make_edge`). Unless the
    /// graph was created with [`GraphProperties::no_cycle_check`], an edge
    /// that would close a cycle is `InvalidGraph` and changes nothing (the
    /// check is incremental, see [`crate::graph`]). An edge that exists
    /// already is accepted once more without effect. `InvalidOperation`
    /// while a queue records into the graph.
    ///
    /// ```
    /// use cmdbuf_core::*;
    /// use cmdbuf_runtime::graph::*;
    /// use cmdbuf_runtime::Queue;
    /// # let device = cmdbuf_cpu::default_device();
    /// # let ctx = Context::new(&device)?;
    /// let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
    /// let (a, b) = (graph.add_empty(NodeProperties::new())?, graph.add_empty(NodeProperties::new())?);
    /// graph.make_edge(&a, &b)?;
    /// assert!(matches!(graph.make_edge(&b, &a), Err(UrError::InvalidGraph(_))));
    /// # Ok::<(), UrError>(())
    /// ```
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id(), src = src.index, dest = dest.index))]
    pub fn make_edge(&self, src: &Node, dest: &Node) -> Result<()> {
        let shared = self.shared();
        for n in [src, dest] {
            ensure!(
                n.graph.id == shared.id,
                InvalidGraph,
                "make_edge in graph #{} with node {} of graph #{}",
                shared.id,
                n.index,
                n.graph.id
            );
        }
        let mut state = shared.state.lock();
        shared.check_not_recording(&state, "make_edge in")?;
        let (s, d) = (src.index, dest.index);
        ensure!(s != d, InvalidGraph, "make_edge from {} to itself", state.describe(shared, s));
        // Search the shorter list: a join with many predecessors gets each of
        // them by `make_edge` (O(N²) over its predecessor list).
        let (from, to) = (&state.nodes[s as usize], &state.nodes[d as usize]);
        let exists = if from.succs.len() < to.preds.len() { from.succs.contains(&d) } else { to.preds.contains(&s) };
        if exists {
            return Ok(());
        }
        if !shared.props.no_cycle_check {
            let GraphState { topo, nodes, .. } = &mut *state;
            if topo.add_edge(&nodes[..], s, d).is_err() {
                return Err(err!(
                    InvalidGraph,
                    "make_edge from {} to {} would close a cycle",
                    state.describe(shared, s),
                    state.describe(shared, d)
                ));
            }
        }
        state.nodes[s as usize].succs.push(d);
        state.nodes[d as usize].preds.push(s);
        state.leaves.remove(&s);
        state.edges += 1;
        Ok(())
    }

    /// Makes an executable graph of the current topology (`command_graph::finalize`).
    /// The modifiable graph stays usable: nodes may be added and the graph
    /// finalized again. See [`crate::graph`] for what finalize builds.
    ///
    /// `InvalidGraph` for a cycle (possible with `no_cycle_check`),
    /// `InvalidOperation` when the graph holds allocation nodes and an
    /// executable graph made from it still exists.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id(), label = self.label()))]
    pub fn finalize(&self, props: FinalizeProperties) -> Result<Graph<Executable>> {
        super::executable::finalize(self.shared(), props)
    }

    /// Every node, in the order they were added (`get_nodes`).
    pub fn nodes(&self) -> Vec<Node> {
        let shared = self.shared();
        let n = shared.state.lock().nodes.len() as u32;
        (0..n).map(|i| shared.node(i)).collect()
    }

    /// The nodes without dependencies, in the order they were added (`get_root_nodes`).
    pub fn root_nodes(&self) -> Vec<Node> {
        let shared = self.shared();
        let state = shared.state.lock();
        (0..state.nodes.len() as u32)
            .filter(|i| state.nodes[*i as usize].preds.is_empty())
            .map(|i| shared.node(i))
            .collect()
    }

    /// The nodes nothing depends on yet, in the order they were added.
    pub fn leaf_nodes(&self) -> Vec<Node> {
        let shared = self.shared();
        let state = shared.state.lock();
        state.leaves.iter().map(|i| shared.node(*i)).collect()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.shared().state.lock().nodes.len()
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.shared().state.lock().edges
    }

    /// Figures of the graph's memory pool: allocations, requested bytes,
    /// bytes the pool holds after liveness-based reuse.
    pub fn memory_stats(&self) -> MemoryStats {
        self.shared().state.lock().pool.stats()
    }

    /// Ends recording on every queue recording into this graph (`end_recording()`).
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn end_recording(&self) {
        record::end_all(self.shared());
    }

    /// Whether a queue records into this graph.
    pub fn is_recording(&self) -> bool {
        !self.shared().state.lock().recording.is_empty()
    }

    /// The graph in Graphviz DOT: node numbers, types and kernel names, and,
    /// with `verbose`, kernel arguments and ranges, addresses and sizes of
    /// memory commands.
    pub fn to_dot(&self, verbose: bool) -> String {
        let shared = self.shared();
        let state = shared.state.lock();
        super::dot::modifiable(shared, &state, verbose)
    }

    /// Writes [`to_dot`](Self::to_dot) to `path` (`print_graph`), which must
    /// end in `.dot`; `InvalidValue` otherwise or when writing fails.
    ///
    /// ```no_run
    /// # use cmdbuf_core::*;
    /// # use cmdbuf_runtime::graph::*;
    /// # use cmdbuf_runtime::Queue;
    /// # fn demo(graph: &Graph<Modifiable>) -> Result<()> {
    /// graph.print_graph("graph.dot", true)?; // then: dot -Tsvg graph.dot -o graph.svg
    /// # Ok(()) }
    /// ```
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.id()))]
    pub fn print_graph(&self, path: impl AsRef<Path>, verbose: bool) -> Result<()> {
        super::dot::write(path.as_ref(), &self.to_dot(verbose), self.id())
    }
}

impl fmt::Debug for Graph<Modifiable> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared().state.lock();
        f.debug_struct("Graph<Modifiable>")
            .field("id", &self.id())
            .field("nodes", &state.nodes.len())
            .field("edges", &state.edges)
            .field("recording_queues", &state.recording.len())
            .finish()
    }
}
