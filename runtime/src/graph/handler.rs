//! The command-group handler: what a node-building closure records into.

use std::sync::Arc;

use cmdbuf_core::command::Command;
use cmdbuf_core::context::Context;
use cmdbuf_core::device::Device;
use cmdbuf_core::error::Result;
use cmdbuf_core::interop::NativeScope;
use cmdbuf_core::launch::KernelLaunch;
use cmdbuf_core::memory::{MemBuffer, MigrationFlags, UsmAdvice, UsmKind, UsmPtr};
use cmdbuf_core::rect::{RectLayout, RectRegion};
use cmdbuf_core::{ensure, err};

use super::node::command_type;
use super::state::{CrossCopy, DynamicParameter, GraphShared, HostFn, KernelSpec, NativeFn, NodeType};
use super::{Executable, Graph, Node};
use crate::pool::MemoryPool;

/// The one command a command group recorded.
pub(crate) enum Pending {
    Kernel(KernelSpec),
    Memory(Command),
    Host(HostFn),
    Subgraph(Graph<Executable>),
    Malloc { alloc: u32, ptr: UsmPtr, size: usize },
    Free { alloc: u32, ptr: UsmPtr },
    Native(NativeFn),
    Collective(Arc<super::state::CollectiveNode>),
}

impl Pending {
    pub(crate) fn node_type(&self) -> NodeType {
        match self {
            Pending::Kernel(_) => NodeType::Kernel,
            Pending::Memory(c) => command_type(c),
            Pending::Host(_) => NodeType::HostTask,
            Pending::Subgraph(_) => NodeType::Subgraph,
            Pending::Malloc { .. } => NodeType::AsyncMalloc,
            Pending::Free { .. } => NodeType::AsyncFree,
            Pending::Native(_) => NodeType::NativeCommand,
            Pending::Collective(_) => NodeType::Collective,
        }
    }
}

/// What a command-group closure records into (SYCL's `handler`): exactly
/// one command (none makes an empty node), its dependencies, and the
/// dynamic parameters of a kernel's arguments.
///
/// The closure runs once, when the node is added; the command it records
/// runs at every execution of the executable graphs made from the graph.
/// Memory commands are validated here, as for a command buffer; a kernel
/// launch is `unsafe` as everywhere in this API.
///
/// ```
/// use cmdbuf_core::*;
/// use cmdbuf_runtime::graph::*;
/// use cmdbuf_runtime::Queue;
/// # let device = cmdbuf_cpu::default_device();
/// let ctx = Context::new(&device)?;
/// let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
/// let (a, b) = (UsmAllocation::new(&ctx, UsmKind::Device, 64)?, UsmAllocation::new(&ctx, UsmKind::Device, 64)?);
/// let fill = graph.add(|h| h.fill(a.ptr(), &[1, 2, 3, 4], 64), NodeProperties::new())?;
/// let copy = graph.add(
///     |h| {
///         h.depends_on(&fill)?;
///         h.memcpy(b.ptr(), a.ptr(), 64)
///     },
///     NodeProperties::new(),
/// )?;
/// assert_eq!(copy.node_type(), NodeType::Memcpy);
/// // One command per group.
/// let twice = graph.add(|h| { h.memset(a.ptr(), 0, 64)?; h.memset(b.ptr(), 0, 64) }, NodeProperties::new());
/// assert!(matches!(twice, Err(UrError::InvalidOperation(_))));
/// # Ok::<(), UrError>(())
/// ```
pub struct Handler {
    pub(crate) graph: Arc<GraphShared>,
    pub(crate) deps: Vec<u32>,
    pub(crate) pending: Option<Pending>,
    pub(crate) dynamic_args: Vec<(usize, DynamicParameter)>,
    /// Evaluating a command group of a dynamic command group.
    pub(crate) in_group: bool,
    /// Accessors declared with [`access`](Self::access).
    pub(crate) accesses: Vec<super::state::PendingAccess>,
    /// The device the node runs on (an index of the graph's devices), where
    /// named; else the graph's own.
    pub(crate) device: Option<u16>,
    /// The cross-device copy recorded, if the command is one.
    pub(crate) cross: Option<CrossCopy>,
}

impl Handler {
    pub(crate) fn new(graph: Arc<GraphShared>, deps: Vec<u32>, in_group: bool) -> Handler {
        Handler {
            graph,
            deps,
            pending: None,
            dynamic_args: Vec::new(),
            in_group,
            accesses: Vec::new(),
            device: None,
            cross: None,
        }
    }

    /// The context of the node's device, which validates its commands.
    fn context(&self) -> &Context {
        self.graph.devices.context(self.device.unwrap_or(0))
    }

    pub(crate) fn set(&mut self, pending: Pending) -> Result<()> {
        if let Some(existing) = &self.pending {
            return Err(err!(
                InvalidOperation,
                "a command group holds one command; this one already has a {} command, a {} was added",
                existing.node_type(),
                pending.node_type()
            ));
        }
        self.pending = Some(pending);
        Ok(())
    }

    fn command(&mut self, command: Result<Command>) -> Result<()> {
        let command = command.map_err(|e| e.in_context(&format!("command group of graph #{}", self.graph.id)))?;
        self.set(Pending::Memory(command))
    }

    /// Makes the node depend on `node` (`handler::depends_on`); a node of
    /// another graph is `InvalidGraph`.
    pub fn depends_on(&mut self, node: &Node) -> Result<&mut Handler> {
        ensure!(
            node.graph.id == self.graph.id,
            InvalidGraph,
            "node {} of graph #{} given as a dependency in graph #{}",
            node.index,
            node.graph.id,
            self.graph.id
        );
        self.deps.push(node.index);
        Ok(self)
    }

    /// Records a kernel launch, validated as for a command buffer. Arguments
    /// set with [`set_arg`](Self::set_arg) replace the launch's argument of
    /// the same index (which must still be given, of the right kind).
    ///
    /// # Safety
    /// The kernel may read and write any memory its arguments let it reach,
    /// at every execution of every executable graph that holds the node:
    /// pointer arguments must stay valid for as long as those graphs may run.
    pub unsafe fn launch(&mut self, launch: &KernelLaunch<'_>) -> Result<()> {
        let (command, origin) = launch
            .resolve(self.context())
            .map_err(|e| e.in_context(&format!("command group of graph #{}", self.graph.id)))?;
        self.set(Pending::Kernel(KernelSpec::new(command, origin)))
    }

    /// Registers `param` as argument `index` of this group's kernel
    /// (`handler::set_arg` with a dynamic parameter): the argument takes the
    /// parameter's value now and at every [`DynamicParameter::update`].
    /// Checked when the closure returns: the group must hold a kernel
    /// (`InvalidValue`), `index` must be one of its arguments
    /// (`InvalidKernelArgumentIndex`) of the parameter's kind.
    pub fn set_arg(&mut self, index: usize, param: &DynamicParameter) -> Result<()> {
        self.dynamic_args.push((index, param.clone()));
        Ok(())
    }

    /// Records a USM copy of `size` bytes; in a multi-device graph, between
    /// the USM of two of its devices too (a cross-device copy, see
    /// [`crate::graph`]).
    pub fn memcpy(&mut self, dst: UsmPtr, src: UsmPtr, size: usize) -> Result<()> {
        let on = self.device.unwrap_or(0);
        if let Some(copy) = self.graph.devices.cross_copy(on, dst, src, size)? {
            return self.set_cross(copy);
        }
        self.command(Command::usm_copy(self.context(), dst, src, size))
    }

    /// Records a copy of `size` bytes from `src`, USM of `src_device`, to
    /// `dst`, USM of `dst_device`, both devices of a multi-device graph: a
    /// cross-device copy (see [`crate::graph`]) where they differ, a plain
    /// copy (on that device) where they are one. Where USM addresses are per
    /// device (Vulkan), this is how to name a copy's devices.
    /// `InvalidDevice` for a device the graph was not made for.
    pub fn memcpy_across(
        &mut self,
        dst_device: &Device,
        dst: UsmPtr,
        src_device: &Device,
        src: UsmPtr,
        size: usize,
    ) -> Result<()> {
        let devices = &self.graph.devices;
        let (d, s) = (devices.index_of(self.graph.id, dst_device)?, devices.index_of(self.graph.id, src_device)?);
        if let Some(copy) = devices.copy_between(d, dst, s, src, size)? {
            return self.set_cross(copy);
        }
        ensure!(
            self.device.is_none_or(|on| on == d),
            InvalidDevice,
            "a copy within {dst_device} placed on another device of graph #{}",
            self.graph.id
        );
        self.device = Some(d);
        self.command(Command::usm_copy(self.context(), dst, src, size))
    }

    fn set_cross(&mut self, copy: CrossCopy) -> Result<()> {
        self.set(Pending::Memory(copy.command()?))?;
        self.cross = Some(copy);
        Ok(())
    }

    /// Records a fill of `size` bytes with one byte (`handler::memset`).
    pub fn memset(&mut self, dst: UsmPtr, value: u8, size: usize) -> Result<()> {
        self.command(Command::usm_fill(self.context(), dst, &[value], size))
    }

    /// Records a fill of `size` bytes with a pattern of any length dividing the size (`handler::fill`).
    pub fn fill(&mut self, dst: UsmPtr, pattern: &[u8], size: usize) -> Result<()> {
        self.command(Command::usm_fill(self.context(), dst, pattern, size))
    }

    /// Records a USM prefetch.
    pub fn prefetch(&mut self, ptr: UsmPtr, size: usize, flags: MigrationFlags) -> Result<()> {
        self.command(Command::usm_prefetch(self.context(), ptr, size, flags))
    }

    /// Records USM advice.
    pub fn mem_advise(&mut self, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()> {
        self.command(Command::usm_advise(self.context(), ptr, size, advice))
    }

    /// Records a copy between buffers.
    pub fn copy_buffer(
        &mut self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_offset: usize,
        dst_offset: usize,
        size: usize,
    ) -> Result<()> {
        self.command(Command::buffer_copy(self.context(), src, dst, src_offset, dst_offset, size))
    }

    /// Records a rect copy between buffers.
    pub fn copy_buffer_rect(
        &mut self,
        src: &MemBuffer,
        dst: &MemBuffer,
        src_layout: RectLayout,
        dst_layout: RectLayout,
        region: RectRegion,
    ) -> Result<()> {
        self.command(Command::buffer_copy_rect(self.context(), src, dst, src_layout, dst_layout, region))
    }

    /// Records a buffer fill with a pattern of any length dividing the size.
    pub fn fill_buffer(&mut self, buffer: &MemBuffer, pattern: &[u8], offset: usize, size: usize) -> Result<()> {
        self.command(Command::buffer_fill(self.context(), buffer, pattern, offset, size))
    }

    /// Records a read of a buffer into USM.
    pub fn read_buffer(&mut self, buffer: &MemBuffer, offset: usize, size: usize, dst: UsmPtr) -> Result<()> {
        self.command(Command::buffer_read_to_usm(self.context(), buffer, offset, size, dst))
    }

    /// Records a write of USM into a buffer.
    pub fn write_buffer(&mut self, buffer: &MemBuffer, offset: usize, size: usize, src: UsmPtr) -> Result<()> {
        self.command(Command::buffer_write_from_usm(self.context(), buffer, offset, size, src))
    }

    /// Records a host task: `task` runs on a host thread at every execution,
    /// after the node's dependencies and before its successors. Host tasks
    /// split the graph into partitions (see [`crate::graph`]).
    pub fn host_task(&mut self, task: impl Fn() + Send + Sync + 'static) -> Result<()> {
        self.set(Pending::Host(Arc::new(task)))
    }

    /// Records a native command (`ext_codeplay_enqueue_native_command` in a
    /// graph, 8.11.2 of the newer revision): a node whose `callback` does
    /// backend-native work. Finalize appends it to its partition's command
    /// buffer ([`CommandBuffer::append_native_command`](cmdbuf_core::CommandBuffer::append_native_command)),
    /// so the callback runs where and when cmdbuf-core runs a command buffer's
    /// native command on the device ([`cmdbuf_core::interop`]: at finalize on
    /// OpenCL and Vulkan, which record into the graph's native command
    /// buffer, [`NativeTarget::Recording`](cmdbuf_core::NativeTarget::Recording);
    /// at each execution on the CPU and on emulated command buffers). Its
    /// work runs after the node's dependencies and before its successors.
    ///
    /// # Safety
    /// The native work is unchecked: everything it touches must stay valid
    /// for as long as executable graphs holding the node may run, and it must
    /// leave the native objects as it found them.
    pub unsafe fn native_command(&mut self, callback: impl Fn(&NativeScope<'_>) + Send + Sync + 'static) -> Result<()> {
        self.set(Pending::Native(Arc::new(callback)))
    }

    /// Records an executable graph as a sub-graph (`handler::ext_oneapi_graph`):
    /// its nodes run as if inlined, after this node's dependencies and before
    /// its successors. The executable graph itself is not changed.
    pub fn subgraph(&mut self, graph: &Graph<Executable>) -> Result<()> {
        let on = super::subgraph::check_subgraph(&self.graph, graph)?;
        ensure!(
            self.device.is_none_or(|d| d == on),
            InvalidDevice,
            "executable graph #{} runs on {}, the node is placed on another device of graph #{}",
            graph.id(),
            graph.device(),
            self.graph.id
        );
        self.device = Some(on);
        self.set(Pending::Subgraph(graph.clone()))
    }

    /// A barrier: always `InvalidOperation` in a command group, as the
    /// specification has it (barriers are only recorded from queues); an
    /// empty node with [`NodeProperties::depends_on_all_leaves`](super::NodeProperties::depends_on_all_leaves)
    /// does the same in the explicit API.
    pub fn barrier(&mut self) -> Result<()> {
        Err(err!(
            InvalidOperation,
            "barriers can only be recorded from a queue; graph #{} is built explicitly: add an empty node \
             that depends on all leaves instead",
            self.graph.id
        ))
    }

    /// Records a graph-owned allocation (`async_malloc`) and returns its
    /// pointer, usable by nodes ordered after this one and before its
    /// `async_free`. Only device allocations are supported (`InvalidValue`
    /// otherwise). Memory freed by an `async_free` that this node is ordered
    /// after is reused (see [`crate::graph`]).
    pub fn async_malloc(&mut self, kind: UsmKind, size: usize) -> Result<UsmPtr> {
        self.malloc(kind, size, false)
    }

    /// Records a graph-owned allocation from `pool` (`async_malloc_from_pool`):
    /// as [`async_malloc`](Self::async_malloc), of the pool's kind (device
    /// only: `InvalidValue` otherwise). The graph allocates from its own
    /// pool (8.4.3); of `pool`'s properties it honours the kind and
    /// `zero_init` (the allocation's memory is zeroed at each finalize, not
    /// before each execution) and ignores the rest, as the specification
    /// says. `InvalidContext` for a pool of another context or device.
    pub fn async_malloc_from_pool(&mut self, size: usize, pool: &MemoryPool) -> Result<UsmPtr> {
        pool.check_for_graph(&self.graph.context)?;
        self.malloc(pool.alloc_kind(), size, pool.properties().zero_init)
    }

    fn malloc(&mut self, kind: UsmKind, size: usize, zero_init: bool) -> Result<UsmPtr> {
        ensure!(
            !self.in_group,
            InvalidValue,
            "a dynamic command group of graph #{} holds kernels or host tasks, not allocations",
            self.graph.id
        );
        if let Some(existing) = &self.pending {
            return Err(err!(
                InvalidOperation,
                "a command group holds one command; this one already has a {} command",
                existing.node_type()
            ));
        }
        ensure!(
            self.device.is_none_or(|d| d == 0),
            UnsupportedFeature,
            "graph-owned allocations of multi-device graph #{} are made on its own device only",
            self.graph.id
        );
        let (alloc, ptr) = self.graph.allocate(kind, size, zero_init, &self.deps)?;
        self.pending = Some(Pending::Malloc { alloc, ptr, size });
        Ok(ptr)
    }

    /// Records the release of a graph-owned allocation (`async_free`): `ptr`
    /// must be the pointer an `async_malloc` node of this graph returned, not
    /// yet freed (`InvalidValue` otherwise). Nodes that use the allocation
    /// must be ordered before this one.
    pub fn async_free(&mut self, ptr: UsmPtr) -> Result<()> {
        ensure!(
            !self.in_group,
            InvalidValue,
            "a dynamic command group of graph #{} holds kernels or host tasks, not allocations",
            self.graph.id
        );
        let alloc = self.graph.find_allocation(ptr)?;
        self.set(Pending::Free { alloc, ptr })
    }

    /// Releases what an abandoned command group took (its allocation).
    pub(crate) fn abandon(self) {
        if let Some(Pending::Malloc { alloc, .. }) = self.pending {
            self.graph.state.lock().pool.abandon(alloc);
        }
    }
}
