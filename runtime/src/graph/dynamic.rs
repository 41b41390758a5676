//! Dynamic parameters and dynamic command groups: the parts of nodes that an
//! executable graph's update can change.

use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use cmdbuf_core::context::Context;
use cmdbuf_core::error::Result;
use cmdbuf_core::launch::{ArgValue, KernelArg, check_local_memory};
use cmdbuf_core::program::Kernel;
use cmdbuf_core::{ensure, err};

use super::handler::{Handler, Pending};
use super::node::check_arg_kind;
use super::state::{
    DynamicParameter, GraphShared, GraphState, GroupOp, GroupState, KernelSpec, NodeKind, ParamState, Target,
};
use super::{Graph, Modifiable};

impl GroupState {
    pub(crate) fn active_op(&self) -> &GroupOp {
        &self.cgs[self.active]
    }

    pub(crate) fn active_op_mut(&mut self) -> &mut GroupOp {
        &mut self.cgs[self.active]
    }

    /// The kernels of the other command groups, distinct and different from
    /// the active one's: the alternatives a command buffer may switch to.
    pub(crate) fn alternatives(&self) -> Vec<Kernel> {
        let GroupOp::Kernel(active) = self.active_op() else { return Vec::new() };
        let mut out: Vec<Kernel> = Vec::new();
        for op in &self.cgs {
            if let GroupOp::Kernel(spec) = op
                && !spec.kernel.same_kernel(&active.kernel)
                && !out.iter().any(|k| k.same_kernel(&spec.kernel))
            {
                out.push(spec.kernel.clone());
            }
        }
        out
    }
}

/// An argument value as a dynamic parameter holds it.
fn to_value(context: &Context, arg: &KernelArg<'_>) -> Result<ArgValue> {
    Ok(match arg {
        KernelArg::Value(bytes) => ArgValue::Value(SmallVec::from_slice(bytes)),
        KernelArg::Pointer(p) => ArgValue::Pointer(*p),
        KernelArg::MemObj(b) => {
            b.check_context(context)?;
            ArgValue::MemObj((*b).clone())
        }
        KernelArg::Local(n) => {
            ensure!(*n != 0, InvalidKernelArgumentSize, "a local-memory dynamic parameter of 0 bytes");
            ArgValue::Local(*n)
        }
    })
}

/// Whether two values are of the same kind (and value size).
fn same_kind(a: &ArgValue, b: &ArgValue) -> bool {
    match (a, b) {
        (ArgValue::Pointer(_) | ArgValue::MemObj(_), ArgValue::Pointer(_) | ArgValue::MemObj(_)) => true,
        (ArgValue::Value(x), ArgValue::Value(y)) => x.len() == y.len(),
        (ArgValue::Local(_), ArgValue::Local(_)) => true,
        _ => false,
    }
}

impl DynamicParameter {
    /// A parameter of `graph` with an initial value. Memory buffers must be
    /// of the graph's context; local-memory sizes non-zero.
    pub fn new(graph: &Graph<Modifiable>, initial: KernelArg<'_>) -> Result<DynamicParameter> {
        let shared = graph.shared();
        let value = to_value(&shared.context, &initial)?;
        let mut state = shared.state.lock();
        state.params.push(ParamState { value, regs: Vec::new() });
        Ok(DynamicParameter { graph: shared.clone(), id: state.params.len() as u32 - 1 })
    }

    /// Sets the value in every node argument registered with this parameter
    /// (`dynamic_parameter::update`). The new value must be of the same kind
    /// as the current one (a pointer or buffer, a value of the same size, a
    /// local-memory size): `InvalidValue` otherwise; a local-memory size the
    /// device cannot give a registered kernel is `OutOfResources`. Either
    /// every registered argument changes or none does.
    ///
    /// # Safety
    /// The kernels registered with this parameter run with the new value at
    /// every execution that uses it; they may reach any memory it lets them.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.graph.id, param = self.id))]
    pub unsafe fn update(&self, value: KernelArg<'_>) -> Result<()> {
        let graph = &self.graph;
        let value = to_value(&graph.context, &value)?;
        let mut state = graph.state.lock();
        let param = &state.params[self.id as usize];
        ensure!(
            same_kind(&param.value, &value),
            InvalidValue,
            "dynamic parameter {} of graph #{} holds {:?}; {value:?} is of another kind",
            self.id,
            graph.id,
            param.value
        );
        let regs = param.regs.clone();
        let info = graph.device().info();
        for (target, arg) in &regs {
            if let Some(spec) = spec_of(&state, *target) {
                let mut args = spec.args.clone();
                args[*arg] = value.clone();
                check_local_memory(info, &spec.kernel, &args)?;
            }
        }
        for (target, arg) in &regs {
            if let Some(spec) = spec_of_mut(&mut state, *target) {
                spec.args[*arg] = value.clone();
            }
        }
        state.params[self.id as usize].value = value;
        Ok(())
    }

    /// The current value for argument `arg` of `kernel`, checked: the
    /// parameter must be of `graph`, and of the argument's kind.
    pub(crate) fn checked_value(
        &self,
        graph: &GraphShared,
        state: &GraphState,
        kernel: &Kernel,
        arg: usize,
    ) -> Result<ArgValue> {
        ensure!(
            self.graph.id == graph.id,
            InvalidGraph,
            "dynamic parameter of graph #{} registered in graph #{}",
            self.graph.id,
            graph.id
        );
        let value = state.params[self.id as usize].value.clone();
        check_arg_kind(kernel, arg, &value).map_err(|e| e.in_context(&format!("dynamic parameter {}", self.id)))?;
        Ok(value)
    }
}

fn spec_of(state: &GraphState, target: Target) -> Option<&KernelSpec> {
    match target {
        Target::Node(n) => match &state.nodes[n as usize].kind {
            NodeKind::Kernel(spec) => Some(spec),
            _ => None,
        },
        Target::Group { group, cg } => match &state.groups[group as usize].cgs[cg as usize] {
            GroupOp::Kernel(spec) => Some(spec),
            GroupOp::Host(_) => None,
        },
    }
}

fn spec_of_mut(state: &mut GraphState, target: Target) -> Option<&mut KernelSpec> {
    match target {
        Target::Node(n) => match &mut state.nodes[n as usize].kind {
            NodeKind::Kernel(spec) => Some(spec),
            _ => None,
        },
        Target::Group { group, cg } => match &mut state.groups[group as usize].cgs[cg as usize] {
            GroupOp::Kernel(spec) => Some(spec),
            GroupOp::Host(_) => None,
        },
    }
}

impl fmt::Debug for DynamicParameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DynamicParameter({} of graph #{})", self.id, self.graph.id)
    }
}

/// A command-group closure, for [`DynamicCommandGroup::new`].
pub type CommandGroupFn<'a> = Box<dyn FnOnce(&mut Handler) -> Result<()> + 'a>;

/// A list of command groups of which one, the active one, is a node's
/// command (`dynamic_command_group`). Changing the active index changes the
/// node in the modifiable graph at once, and in an executable graph at its
/// next [`Graph::update`]: a kernel can be switched for another (with
/// another range and arguments), or a host task for another.
///
/// The closures run once, in order, when the group is made. They must all
/// record a kernel, or all a host task (`InvalidValue` otherwise, and for an
/// empty list), and declare the same dependencies: a group whose command
/// groups would give different topologies is `InvalidGraph`.
///
/// ```
/// use cmdbuf_core::*;
/// use cmdbuf_runtime::graph::*;
/// use cmdbuf_runtime::Queue;
/// # let device = cmdbuf_cpu::default_device();
/// # let ctx = Context::new(&device)?;
/// let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
/// let group = DynamicCommandGroup::new(
///     &graph,
///     vec![Box::new(|h: &mut Handler| h.host_task(|| {})), Box::new(|h: &mut Handler| h.host_task(|| {}))],
/// )?;
/// let node = graph.add_dynamic(&group, NodeProperties::new())?;
/// assert_eq!(node.node_type(), NodeType::HostTask);
/// group.set_active_index(1)?;
/// assert!(matches!(group.set_active_index(2), Err(UrError::InvalidValue(_))));
/// # Ok::<(), UrError>(())
/// ```
#[derive(Clone)]
pub struct DynamicCommandGroup {
    pub(crate) graph: Arc<GraphShared>,
    pub(crate) id: u32,
}

impl DynamicCommandGroup {
    /// Evaluates `cgfs` for `graph`; the first is active.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = graph.id(), groups = cgfs.len()))]
    pub fn new(graph: &Graph<Modifiable>, cgfs: Vec<CommandGroupFn<'_>>) -> Result<DynamicCommandGroup> {
        let shared = graph.shared();
        ensure!(
            !cgfs.is_empty(),
            InvalidValue,
            "a dynamic command group of graph #{} with no command group",
            shared.id
        );
        let mut evaluated = Vec::with_capacity(cgfs.len());
        let mut accesses = Vec::with_capacity(cgfs.len());
        for (i, cgf) in cgfs.into_iter().enumerate() {
            let mut handler = Handler::new(shared.clone(), Vec::new(), true);
            cgf(&mut handler)?;
            let mut deps = std::mem::take(&mut handler.deps);
            deps.sort_unstable();
            deps.dedup();
            let op = match handler.pending.take() {
                Some(Pending::Kernel(spec)) => GroupOp::Kernel(spec),
                Some(Pending::Host(f)) => GroupOp::Host(f),
                other => {
                    let what = other.map_or("nothing".to_string(), |p| format!("a {} command", p.node_type()));
                    return Err(err!(
                        InvalidValue,
                        "command group {i} of a dynamic command group of graph #{} records {what}; \
                         dynamic command groups hold kernels or host tasks",
                        shared.id
                    ));
                }
            };
            evaluated.push((op, deps, std::mem::take(&mut handler.dynamic_args)));
            accesses.push(std::mem::take(&mut handler.accesses));
        }
        let host = matches!(evaluated[0].0, GroupOp::Host(_));
        for (i, (op, deps, _)) in evaluated.iter().enumerate() {
            ensure!(
                matches!(op, GroupOp::Host(_)) == host,
                InvalidValue,
                "command group {i} of a dynamic command group of graph #{} is a {}, command group 0 a {}",
                shared.id,
                if host { "kernel" } else { "host task" },
                if host { "host task" } else { "kernel" }
            );
            ensure!(
                *deps == evaluated[0].1,
                InvalidGraph,
                "command group {i} of a dynamic command group of graph #{} depends on nodes {deps:?}, command \
                 group 0 on {:?}: the topology would change with the active index",
                shared.id,
                evaluated[0].1
            );
        }
        let group_deps = evaluated[0].1.clone();
        let mut state = shared.state.lock();
        let group = state.groups.len() as u32;
        let mut regs = Vec::new();
        let mut cgs = Vec::with_capacity(evaluated.len());
        for (cg, (mut op, _, dynamic)) in evaluated.into_iter().enumerate() {
            for (arg, param) in dynamic {
                let GroupOp::Kernel(spec) = &mut op else {
                    return Err(err!(
                        InvalidValue,
                        "a dynamic parameter was registered with host-task command group {cg} of graph #{}",
                        shared.id
                    ));
                };
                spec.args[arg] = param.checked_value(shared, &state, &spec.kernel, arg)?;
                regs.push((param.id, Target::Group { group, cg: cg as u32 }, arg));
            }
            cgs.push(op);
        }
        state.groups.push(GroupState { cgs, active: 0, deps: group_deps, nodes: Vec::new(), accesses });
        for (param, target, arg) in regs {
            state.params[param as usize].regs.push((target, arg));
        }
        Ok(DynamicCommandGroup { graph: shared.clone(), id: group })
    }

    /// The index of the active command group (`get_active_index`).
    pub fn active_index(&self) -> usize {
        self.graph.state.lock().groups[self.id as usize].active
    }

    /// Number of command groups.
    pub fn len(&self) -> usize {
        self.graph.state.lock().groups[self.id as usize].cgs.len()
    }

    /// Always false: a group has at least one command group.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Makes command group `index` active (`set_active_index`): the nodes
    /// made from this group hold its command from now on. `InvalidValue` for
    /// an index out of range.
    #[tracing::instrument(level = "debug", skip_all, fields(graph = self.graph.id, group = self.id, index))]
    pub fn set_active_index(&self, index: usize) -> Result<()> {
        let mut state = self.graph.state.lock();
        let group = &mut state.groups[self.id as usize];
        ensure!(
            index < group.cgs.len(),
            InvalidValue,
            "index {index} of a dynamic command group of graph #{} with {} command groups",
            self.graph.id,
            group.cgs.len()
        );
        group.active = index;
        Ok(())
    }
}

impl fmt::Debug for DynamicCommandGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DynamicCommandGroup({} of graph #{})", self.id, self.graph.id)
    }
}
