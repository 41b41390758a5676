//! Command buffers as CUDA graphs, built node by node and instantiated at
//! finalize.
//!
//! Each appended command becomes, in its graph:
//! - one event-wait node per wait event, after the command's sync-point
//!   dependencies;
//! - with a signal event on a profiling buffer, an event-record node for the
//!   start;
//! - its body: a kernel node; a memcpy node (linear, rect, reads and writes,
//!   raw host memory included); memset nodes for fills (one per pattern
//!   element when the pattern is not 1, 2 or 4 aligned bytes, joined by an
//!   empty node), or a host node for fills of pinned host memory; an empty
//!   node for prefetch and advice (see below);
//! - with a signal event, an event-record node after the body.
//!
//! Later commands depend on the body's last node; in-order buffers get the
//! previous command as their only dependency from the front end. A graph
//! wider than the GPU runs at once gets lane edges and loses implied ones
//! (`lanes.rs`): the driver's instantiation grows with the square of a
//! graph's width. A buffer
//! with kernels that may report a status (`program::may_report`: the kernel,
//! or an alternative an update may switch to, names its `ur_launch`) ends
//! with a kernel node that moves the status word its
//! kernels report failures to (see the kernel ABI in `program.rs`) into the
//! submission's slot of the buffer's status ring, and clears it; an enqueue
//! copies finished submissions' statuses out of the ring before their slots
//! are needed again.
//!
//! An enqueue launches the executable graph on a stream of the queue after
//! the wait list and the previous submission of the buffer. Updates change
//! the executable graph in place (`cuGraphExecKernelNodeSetParams_v2` for
//! arguments, sizes, offset and kernel; `cuGraphNodeSetEnabled` for launches
//! that become empty or not; the event-node setters for events), one driver
//! call per changed node. The template graph only matters when an
//! executable graph is made from it (the rare update the driver refuses in
//! place, applied with `cuGraphExecUpdate_v2` or, failing that, a new
//! instantiation; a new instantiation while launches held on the host keep
//! the current one): kernel updates reach the template then, not at each
//! update.
//!
//! Graphs have no prefetch or advice node: prefetch is an ordered no-op
//! inside a graph (eager prefetch migrates), and advice, which CUDA does not
//! order on streams anyway, is applied at each enqueue.

use std::any::Any;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Weak};

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::adapter::{ComposePart, ComposeWork};
use cmdbuf_core::{NativeCommand, UsmAdvice};
use cudarc::driver::sys;
use smallvec::SmallVec;

use crate::device::{CudaContext, DeviceShared, MemoryLaunch, Release, Word};
use crate::driver::{self, cu};
use crate::event::{CudaEvent, RING_SLOTS, RunStatus, StatusRing, graph_wait_event};
use crate::exec;
use crate::graph::{ExecGraph, Node, capture_native};
use crate::lanes::Lanes;
use crate::lower::{CopyPlan, HostJob, host_job_kept};
use crate::lower::{copy_1d, copy_rect, fill_plan};
use crate::memory::{Loc, buffer_loc, buffer_on_device, mem_loc, mem_on_device, usm_loc, usm_on_device};
use crate::params::{LaunchParams, StoredLaunchParams};
use crate::program::CudaKernel;
use crate::queue::{CudaQueue, Launch, Order, QueueCore, Work};

struct KernelNode {
    node: Node,
    params: StoredLaunchParams,
    enabled: bool,
    /// Updated in the executable graph, not yet in the template.
    stale: bool,
}

struct WaitNode {
    node: Node,
    /// Keeps the CUDA event the node waits on alive.
    event: Option<Arc<dyn EventImpl>>,
}

struct SignalNodes {
    record: Node,
    start: Option<Node>,
    event: Arc<CudaEvent>,
}

struct Cmd {
    /// The node later commands depend on.
    exit: Node,
    kernel: Option<KernelNode>,
    waits: Vec<WaitNode>,
    signal: Option<SignalNodes>,
}

/// Pending submissions of a buffer at which an enqueue harvests the
/// finished ones' statuses (see `RunStatusNode::make_room`).
const HARVEST_AT: usize = RING_SLOTS as usize / 2;

/// The status word the kernels of one buffer report failures to, and where
/// the node that collects it at the end of each submission (added at
/// finalize: [`CudaExecutable::collector`]) puts it.
struct RunStatusNode {
    word: Word,
    ring: Arc<StatusRing>,
    /// Submissions enqueued with the current ring.
    submitted: u64,
    /// Submissions whose status may still be only in the ring, oldest first.
    pending: VecDeque<(Arc<RunStatus>, Arc<CudaEvent>)>,
}

impl RunStatusNode {
    /// Copies the status of finished submissions out of the ring. If the
    /// slot the next submission takes belongs to a submission still pending
    /// (`RING_SLOTS` submissions in flight), the collector moves to a new
    /// ring rather than waiting: launches made keep the parameters they were
    /// launched with, so pending submissions still write the old ring, which
    /// their statuses keep alive.
    ///
    /// Returns the new ring the collector must write to, when one is needed.
    fn make_room(&mut self, dev: &Arc<DeviceShared>) -> Result<Option<Arc<StatusRing>>> {
        // A status stays readable in its slot until the slot is needed
        // again, so finished submissions are harvested in batches, not
        // looked up (a driver call each) at every enqueue. Submissions of
        // one buffer finish in order (each waits for the previous one), so
        // the finished ones are a prefix, found in a few queries.
        if self.pending.len() >= HARVEST_AT {
            // A held submission has not run.
            let done = self.pending.partition_point(|(_, event)| event.is_done());
            for (status, _) in self.pending.drain(..done) {
                status.harvest();
            }
        }
        // Submissions of one buffer run in order, so the pending ones are the
        // latest, and the first of the current ring has its oldest slot.
        let slot_taken = self
            .pending
            .iter()
            .find(|(status, _)| Arc::ptr_eq(status.ring(), &self.ring))
            .is_some_and(|(status, _)| status.ordinal() + u64::from(RING_SLOTS) <= self.submitted);
        if slot_taken {
            tracing::debug!(slots = RING_SLOTS, "status ring full of pending submissions: a new ring");
            dev.bind()?;
            return Ok(Some(Arc::new(StatusRing::new(dev)?)));
        }
        Ok(None)
    }
}

/// Calls `f` with the parameters of the collector node for a buffer's
/// status word and ring (the driver copies the values during the call).
fn with_collector_params<T>(
    dev: &DeviceShared,
    ctx: sys::CUcontext,
    word: u64,
    ring: u64,
    f: impl FnOnce(&sys::CUDA_KERNEL_NODE_PARAMS) -> T,
) -> T {
    let (mut word, mut ring, mut mask) = (word, ring, RING_SLOTS - 1);
    let mut pointers =
        [(&raw mut word).cast::<c_void>(), (&raw mut ring).cast::<c_void>(), (&raw mut mask).cast::<c_void>()];
    let params = sys::CUDA_KERNEL_NODE_PARAMS {
        func: dev.collector.func,
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 1,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: pointers.as_mut_ptr(),
        extra: ptr::null_mut(),
        kern: ptr::null_mut(),
        ctx,
    };
    f(&params)
}

/// The template graph and each command's nodes in it, in both phases.
struct Template {
    dev: Arc<DeviceShared>,
    desc: CommandBufferDesc,
    graph: sys::CUgraph,
    commands: Vec<Cmd>,
    /// Advice, applied at each enqueue.
    advice: Vec<(UsmRef, usize, UsmAdvice)>,
    /// Host work (fills of pinned host memory, host-to-host copies) run by
    /// host nodes; boxed so that each keeps the address its node was given.
    #[allow(clippy::vec_box)]
    host_jobs: Vec<Box<HostJob>>,
    /// Set by the first kernel command.
    run: Option<RunStatusNode>,
    /// Commands whose kernel parameters changed in the executable graph but
    /// not yet in the template.
    stale_template: Vec<usize>,
    /// Which commands each command's nodes follow, by sync point: the
    /// declared ones while the graph is no wider than the GPU runs at
    /// once, lane edges and no implied edge once it is (`lanes.rs`).
    lanes: Lanes,
}

// SAFETY: graph handles may be used from any thread; the front end
// serialises every call on one buffer. Raw pointers inside (host fills) are
// owned by the buffer.
unsafe impl Send for Template {}

/// A command buffer being recorded: nodes are added to the template graph
/// at each append.
pub(crate) struct CudaCommandBuffer {
    template: Template,
    /// Time spent in `append`, for finalize's debug log.
    append_time: std::time::Duration,
}

/// A finalized command buffer: the template and its executable graph.
struct CudaExecutable {
    /// Shared with held launches, which launch it as it was when enqueued:
    /// a change while they hold it goes to a new instantiation. Declared
    /// before the template, so that it is released before the graph.
    exec: Arc<ExecGraph>,
    template: Template,
    /// The node collecting the status word, where the buffer has kernels.
    collector: Option<Node>,
    previous: Option<Arc<CudaEvent>>,
    /// The queue of the previous submission: on the same in-order queue,
    /// its one stream already orders the next after it. A weak handle, so
    /// that the address cannot belong to another queue while kept.
    previous_queue: Weak<QueueCore>,
    /// Events replaced by updates, kept while the graph may still use them.
    replaced: Vec<Arc<dyn EventImpl>>,
    /// The commands with signal events, and those with wait events: fixed
    /// at finalize, so that an enqueue visits only them (not every command).
    signalling: Vec<usize>,
    waiting: Vec<usize>,
    /// A composition's parts, from which its graph is built (`None` for a
    /// command buffer's own executable).
    composed: Option<Box<Composed>>,
}

/// What a composition keeps to build its graph again: a copy of each command
/// buffer's graph and each peer copy's parameters, in part order.
struct Composed {
    parts: Vec<ComposedNode>,
}

struct ComposedNode {
    /// The earlier parts it depends on.
    after: SmallVec<[u32; 4]>,
    kind: ComposedKind,
}

enum ComposedKind {
    /// A copy of a command buffer's template graph, owned (released on drop).
    Child { dev: Arc<DeviceShared>, graph: sys::CUgraph, run: Option<ComposedRun> },
    /// A peer copy: a memcpy node in the copying device's context.
    Copy { copy: sys::CUDA_MEMCPY3D, ctx: sys::CUcontext },
}

/// A part of a composition whose kernels may report a status: a collector
/// node of the composition, after the part's child graph, moves the part's
/// status word into a ring of the composition's own, whose slots the
/// composition counts. The part's graph copy has no collector of its own:
/// the parts after it wait for its work, not for the collector, which runs
/// beside them (on two H200s, a collector between a pipeline's stages cost
/// its critical path 2-8 µs).
struct ComposedRun {
    word: u64,
    ring: Arc<StatusRing>,
    submitted: u64,
    pending: VecDeque<(Arc<RunStatus>, Arc<CudaEvent>)>,
}

// SAFETY: as for `Template`; the collector is a node handle of its graph.
unsafe impl Send for CudaExecutable {}

impl CudaCommandBuffer {
    pub(crate) fn new(dev: Arc<DeviceShared>, desc: CommandBufferDesc) -> Result<CudaCommandBuffer> {
        let template = Template::new(dev, desc)?;
        Ok(CudaCommandBuffer { template, append_time: std::time::Duration::ZERO })
    }

    /// Adds what ends the graph (a node to launch where it has none, the
    /// status collector where it has kernels), and instantiates it.
    fn finish_graph(&mut self) -> Result<(sys::CUgraphExec, Option<Node>)> {
        let t = &mut self.template;
        t.dev.bind()?;
        if t.commands.is_empty() {
            // A graph to launch needs a node.
            t.add_empty(&[])?;
        }
        let mut collector = None;
        if let Some((word, ring)) = t.run.as_ref().map(|r| (r.word.addr, r.ring.addr)) {
            let leaves: Vec<Node> =
                t.commands.iter().enumerate().filter(|(i, _)| t.lanes.is_leaf(*i)).map(|(_, c)| c.exit).collect();
            let mut node: Node = ptr::null_mut();
            with_collector_params(&t.dev, t.ctx(), word, ring, |params| {
                // SAFETY: the graph is alive, `leaves` are its nodes; the
                // collector takes two u64 and a u32 parameter, given by `params`.
                unsafe { cu!(cuGraphAddKernelNode_v2(&mut node, t.graph, leaves.as_ptr(), leaves.len(), params)) }
            })?;
            collector = Some(node);
        }
        // SAFETY: the template is alive and its context bound above.
        unsafe { crate::graph::write_graph_dot(t.graph, "cmdbuf") };
        Ok((t.instantiate()?, collector))
    }
}

impl Template {
    /// An empty template graph of `dev` (bound here).
    fn new(dev: Arc<DeviceShared>, desc: CommandBufferDesc) -> Result<Template> {
        dev.bind()?;
        let mut graph: sys::CUgraph = ptr::null_mut();
        // SAFETY: writes a new, empty graph; flags must be 0.
        unsafe { cu!(cuGraphCreate(&mut graph, 0))? };
        Ok(Template {
            dev,
            desc,
            graph,
            commands: Vec::new(),
            advice: Vec::new(),
            host_jobs: Vec::new(),
            run: None,
            stale_template: Vec::new(),
            lanes: Lanes::default(),
        })
    }

    fn ctx(&self) -> sys::CUcontext {
        self.dev.ctx.0
    }

    fn add_empty(&self, deps: &[Node]) -> Result<Node> {
        let mut node: Node = ptr::null_mut();
        // SAFETY: the graph is alive; `deps` are nodes of it.
        unsafe { cu!(cuGraphAddEmptyNode(&mut node, self.graph, deps.as_ptr(), deps.len()))? };
        Ok(node)
    }

    /// A native command: the callback's work, captured from a stream of its
    /// own into this graph after `deps`, then an empty node after the last
    /// nodes it captured (after `deps` when it captured none): the command's.
    /// With a child command buffer, the callback adds nodes to the child's
    /// graph instead (its target), which then becomes a child-graph node
    /// after `deps` (the driver copies the graph into the node).
    fn add_native(&self, native: &NativeCommand, deps: &[Node]) -> Result<Node> {
        if let Some(child) = native.child_target() {
            // The child is not finalized (front end): it records into its CUgraph.
            let graph = child?.0 as sys::CUgraph;
            // SAFETY: the target is the child's graph, which the node below
            // copies after the callback, ordered after `deps`.
            unsafe { native.invoke(Backend::Cuda, NativeTarget::Recording(NativeHandle(graph as u64)))? };
            let mut node: Node = ptr::null_mut();
            // SAFETY: both graphs are alive; `deps` are nodes of this one.
            unsafe { cu!(cuGraphAddChildGraphNode(&mut node, self.graph, deps.as_ptr(), deps.len(), graph))? };
            return Ok(node);
        }
        capture_native(&self.dev, self.graph, native, deps)
    }

    fn add_event_record(&self, deps: &[Node], event: sys::CUevent) -> Result<Node> {
        let mut node: Node = ptr::null_mut();
        // SAFETY: as for `add_empty`; the event is kept alive by the buffer.
        unsafe { cu!(cuGraphAddEventRecordNode(&mut node, self.graph, deps.as_ptr(), deps.len(), event))? };
        Ok(node)
    }

    fn add_host(&self, deps: &[Node], func: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Result<Node> {
        let mut node: Node = ptr::null_mut();
        let params = sys::CUDA_HOST_NODE_PARAMS { fn_: Some(func), userData: data };
        // SAFETY: as for `add_empty`; `data` lives as long as the buffer.
        unsafe { cu!(cuGraphAddHostNode(&mut node, self.graph, deps.as_ptr(), deps.len(), &params))? };
        Ok(node)
    }

    fn add_host_job(&mut self, deps: &[Node], job: HostJob) -> Result<Node> {
        let job = Box::new(job);
        let data = (&*job as *const HostJob).cast_mut().cast::<c_void>();
        self.host_jobs.push(job);
        self.add_host(deps, host_job_kept, data)
    }

    fn add_memcpy(&mut self, deps: &[Node], plan: CopyPlan) -> Result<Node> {
        let copy = match plan {
            CopyPlan::Driver(copy) => copy,
            CopyPlan::Host(job) => return self.add_host_job(deps, job),
        };
        let mut node: Node = ptr::null_mut();
        // SAFETY: as for `add_empty`; the copy's memory is held by the command's record.
        unsafe { cu!(cuGraphAddMemcpyNode(&mut node, self.graph, deps.as_ptr(), deps.len(), &copy, self.ctx()))? };
        Ok(node)
    }

    /// A copy of `size` bytes: one node of the device's copy kernel where
    /// both sides are its own device memory (`on_device`), else the plan's
    /// memcpy node or host job.
    fn add_copy(
        &mut self,
        deps: &[Node],
        on_device: (Option<u64>, Option<u64>),
        size: usize,
        plan: impl FnOnce() -> Result<CopyPlan>,
    ) -> Result<Node> {
        match on_device {
            (Some(dst), Some(src)) => self.add_memory_kernel(deps, self.dev.memory_kernels.copy(dst, src, size)),
            _ => self.add_memcpy(deps, plan()?),
        }
    }

    /// A fill of `size` bytes with `pattern`: one node of the device's fill
    /// kernel where `dst` is its own device memory (`dst_on_device`) and the
    /// pattern fits the kernel's parameter, else memset nodes or a host job.
    fn add_fill(
        &mut self,
        deps: &[Node],
        dst: Loc,
        dst_on_device: Option<u64>,
        pattern: &[u8],
        size: usize,
    ) -> Result<Node> {
        match dst_on_device.and_then(|addr| self.dev.memory_kernels.fill(addr, pattern, size)) {
            Some(launch) => self.add_memory_kernel(deps, launch),
            None => self.add_driver_fill(deps, dst, pattern, size),
        }
    }

    fn add_memory_kernel(&self, deps: &[Node], mut launch: MemoryLaunch) -> Result<Node> {
        // SAFETY: the graph is alive, `deps` are nodes of it, the kernels were loaded into the
        // device's context, and the command's record holds the memory the launch reaches.
        unsafe { launch.add_node(self.graph, deps, self.ctx()) }
    }

    /// Nodes that fill `size` bytes at `dst` with `pattern` through the
    /// driver's memsets (or on the host); returns the last.
    fn add_driver_fill(&mut self, deps: &[Node], dst: Loc, pattern: &[u8], size: usize) -> Result<Node> {
        match dst {
            Loc::Device(addr) => {
                let mut nodes: SmallVec<[Node; 4]> = SmallVec::new();
                for m in fill_plan(addr, pattern, size) {
                    let mut node: Node = ptr::null_mut();
                    let params = m.node_params();
                    // SAFETY: as for `add_empty`; the memset stays inside the command's range.
                    unsafe {
                        cu!(cuGraphAddMemsetNode(
                            &mut node,
                            self.graph,
                            deps.as_ptr(),
                            deps.len(),
                            &params,
                            self.ctx()
                        ))?
                    };
                    nodes.push(node);
                }
                if nodes.len() == 1 { Ok(nodes[0]) } else { self.add_empty(&nodes) }
            }
            Loc::Host(ptr) => {
                self.add_host_job(deps, HostJob::Fill { dst: ptr as usize, pattern: pattern.into(), size })
            }
        }
    }

    /// The word kernels of this buffer report failures to.
    fn run_word(&mut self) -> Result<u64> {
        if let Some(run) = &self.run {
            return Ok(run.word.addr);
        }
        let ring = Arc::new(StatusRing::new(&self.dev)?);
        let word = self.dev.status_word()?;
        Ok(self.run.insert(RunStatusNode { word, ring, submitted: 0, pending: VecDeque::new() }).word.addr)
    }

    /// The command's own nodes after `deps`; returns the last node and, for
    /// kernels, the kernel node.
    /// The status collector is made only for kernels that may report a
    /// status, or whose `alternatives` (which updates may switch to) may.
    fn add_body(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[Node],
    ) -> Result<(Node, Option<KernelNode>)> {
        let node = match command {
            Command::KernelLaunch(k) => {
                let mut params = LaunchParams::new(&self.dev, k, 0)?;
                let mut reports = params.name.is_some();
                for alternative in alternatives {
                    reports |= CudaKernel::of_reports(alternative)?;
                }
                if reports {
                    params.set_status(self.run_word()?);
                }
                let mut node: Node = ptr::null_mut();
                let (graph, ctx) = (self.graph, self.ctx());
                // SAFETY: as for `add_empty`; the parameters hold one value per
                // kernel parameter, copied by the driver.
                params.with_node_params(ctx, |p| unsafe {
                    cu!(cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), p))
                })?;
                let enabled = !params.empty;
                return Ok((node, Some(KernelNode { node, params: params.into_stored(), enabled, stale: false })));
            }
            Command::UsmMemcpy { dst, src, size, .. } => {
                let on_device = (mem_on_device(dst, &self.dev)?, mem_on_device(src, &self.dev)?);
                self.add_copy(deps, on_device, *size, || Ok(copy_1d(mem_loc(dst)?, mem_loc(src)?, *size)))?
            }
            Command::UsmFill { dst, pattern, size, .. } => {
                self.add_fill(deps, usm_loc(dst)?, usm_on_device(dst, &self.dev)?, pattern, *size)?
            }
            Command::UsmPrefetch { .. } => self.add_empty(deps)?,
            Command::Native(native) => self.add_native(native, deps)?,
            Command::UsmAdvise { mem, size, advice, .. } => {
                self.advice.push((mem.clone(), *size, *advice));
                self.add_empty(deps)?
            }
            Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => {
                let on_device =
                    (buffer_on_device(dst, *dst_offset, &self.dev)?, buffer_on_device(src, *src_offset, &self.dev)?);
                self.add_copy(deps, on_device, *size, || {
                    Ok(copy_1d(buffer_loc(dst, *dst_offset)?, buffer_loc(src, *src_offset)?, *size))
                })?
            }
            Command::BufferCopyRect { src, dst, src_layout, dst_layout, region, .. } => self.add_memcpy(
                deps,
                copy_rect(buffer_loc(dst, 0)?, dst_layout, buffer_loc(src, 0)?, src_layout, region),
            )?,
            Command::BufferRead { buffer, offset, size, dst, .. } => {
                self.add_memcpy(deps, copy_1d(mem_loc(dst)?, buffer_loc(buffer, *offset)?, *size))?
            }
            Command::BufferWrite { buffer, offset, size, src, .. } => {
                self.add_memcpy(deps, copy_1d(buffer_loc(buffer, *offset)?, mem_loc(src)?, *size))?
            }
            Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst, .. } => self.add_memcpy(
                deps,
                copy_rect(mem_loc(dst)?, host_layout, buffer_loc(buffer, 0)?, buffer_layout, region),
            )?,
            Command::BufferWriteRect { buffer, buffer_layout, host_layout, region, src, .. } => self.add_memcpy(
                deps,
                copy_rect(buffer_loc(buffer, 0)?, buffer_layout, mem_loc(src)?, host_layout, region),
            )?,
            Command::BufferFill { buffer, pattern, offset, size, .. } => {
                let on_device = buffer_on_device(buffer, *offset, &self.dev)?;
                self.add_fill(deps, buffer_loc(buffer, *offset)?, on_device, pattern, *size)?
            }
        };
        Ok((node, None))
    }

    /// The CUDA event a wait node waits on for `event`, and what keeps it alive.
    fn wait_target(&self, event: &Event) -> Result<(sys::CUevent, Option<Arc<dyn EventImpl>>)> {
        match event.resolve() {
            Some(imp) => Ok((graph_wait_event(&self.dev, &*imp)?, Some(imp))),
            // Nothing to wait for (yet): an event that is always complete.
            None => Ok((self.dev.complete.raw(), None)),
        }
    }

    /// Gives the template graph the kernel parameters updates gave the
    /// executable graph, before the executable graph is made from it again.
    fn sync_template(&mut self) -> Result<()> {
        let ctx = self.ctx();
        for index in std::mem::take(&mut self.stale_template) {
            let kernel = self.commands[index].kernel.as_mut().expect("only kernel commands are stale");
            kernel.stale = false;
            let node = kernel.node;
            // SAFETY: a kernel node of the template; the parameters hold one
            // value per kernel parameter, copied by the driver.
            kernel.params.with_node_params(ctx, |p| unsafe { cu!(cuGraphKernelNodeSetParams_v2(node, p)) })?;
        }
        Ok(())
    }

    /// A new executable graph of the template, brought up to date first.
    fn instantiate(&mut self) -> Result<sys::CUgraphExec> {
        self.sync_template()?;
        let mut exec: sys::CUgraphExec = ptr::null_mut();
        // SAFETY: the graph is complete; writes a new executable graph.
        unsafe { cu!(cuGraphInstantiateWithFlags(&mut exec, self.graph, 0))? };
        for kernel in self.commands.iter().filter_map(|c| c.kernel.as_ref()).filter(|k| !k.enabled) {
            // SAFETY: the node is a kernel node of the graph `exec` was made from.
            unsafe { cu!(cuGraphNodeSetEnabled(exec, kernel.node, 0))? };
        }
        Ok(exec)
    }
}

impl CudaExecutable {
    /// The executable graph, to change in place: a new instantiation (of the
    /// template, brought up to date first) when held launches still
    /// hold the current one, so that they launch what was enqueued.
    fn writable_exec(&mut self) -> Result<sys::CUgraphExec> {
        // Only this buffer adds holders (under `&mut self`), so a count of
        // one stays one.
        if Arc::strong_count(&self.exec) > 1 {
            tracing::debug!("executable graph held by launches not yet issued: changes go to a new instantiation");
            let fresh = self.template.instantiate()?;
            self.exec = ExecGraph::new(&self.template.dev, fresh);
        }
        Ok(self.exec.raw())
    }

    /// Brings the executable graph up to date with the template when an
    /// update could not be applied in place.
    fn refresh_exec(&mut self) -> Result<()> {
        self.template.sync_template()?;
        let exec = self.exec.raw();
        let mut info = sys::CUgraphExecUpdateResultInfo {
            result: sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
            errorNode: ptr::null_mut(),
            errorFromNode: ptr::null_mut(),
        };
        // SAFETY: `exec` was instantiated from `graph`, whose topology is unchanged.
        if unsafe { sys::cuGraphExecUpdate_v2(exec, self.template.graph, &mut info) } == sys::CUresult::CUDA_SUCCESS {
            tracing::debug!("executable graph updated with cuGraphExecUpdate_v2");
            for kernel in self.template.commands.iter().filter_map(|c| c.kernel.as_ref()) {
                // SAFETY: kernel nodes of the graph `exec` was made from.
                unsafe { cu!(cuGraphNodeSetEnabled(exec, kernel.node, u32::from(kernel.enabled)))? };
            }
            return Ok(());
        }
        tracing::debug!(result = ?info.result, "executable graph re-instantiated");
        let fresh = self.template.instantiate()?;
        // Submissions of the old one still run; the driver frees it after them.
        self.exec = ExecGraph::new(&self.template.dev, fresh);
        Ok(())
    }
}

impl CudaExecutable {
    /// `UnsupportedFeature` where this buffer cannot be a child graph of a
    /// composition, with the reason: what its own submissions do besides
    /// the launch (advice, signal and wait events) would be lost, and
    /// launches made empty by updates are disabled nodes of its executable
    /// graph, which a child graph cannot disable.
    fn check_composable(&self, index: usize) -> Result<()> {
        let t = &self.template;
        let reason = if t.run.is_some() && self.collector.is_none() {
            "its kernels report a status without a collector"
        } else if !t.advice.is_empty() {
            "it has USM advice, applied at each of its own enqueues"
        } else if !self.signalling.is_empty() || !self.waiting.is_empty() {
            "it has signal or wait events"
        } else if t.commands.iter().filter_map(|c| c.kernel.as_ref()).any(|k| !k.enabled) {
            "it has an empty kernel launch (a disabled node)"
        } else {
            return Ok(());
        };
        Err(err!(UnsupportedFeature, "part {index} cannot be composed into one CUDA graph: {reason}"))
    }
}

/// The composition of `parts` into one CUDA graph launched from a stream of
/// `dev` ([`ContextImpl::compose_command_buffers`](cmdbuf_core::adapter::ContextImpl::compose_command_buffers)):
/// each command buffer a child-graph node (of a copy of its template graph,
/// whose kernel, memcpy and memset nodes carry their own device's context),
/// each captured collective a child-graph node of a copy of its NCCL
/// capture (one graph over the ranks' devices),
/// each peer copy a memcpy node in the copying device's context (unified
/// addressing; peer access enabled, checked by the front end), the parts'
/// dependencies its edges. Instantiated once; each enqueue is one
/// `cuGraphLaunch`, the nodes of each device running on that device.
pub(crate) fn compose(
    dev: &Arc<DeviceShared>,
    parts: &mut [ComposePart<'_>],
) -> Result<Box<dyn ExecutableCommandBufferImpl>> {
    // Owns the copies made so far: released on every return below.
    let mut composed = Composed { parts: Vec::with_capacity(parts.len()) };
    for (index, part) in parts.iter_mut().enumerate() {
        let kind = match &mut part.work {
            ComposeWork::CommandBuffer { executable, .. } => {
                let executable = (&mut **executable as &mut dyn Any)
                    .downcast_mut::<CudaExecutable>()
                    .ok_or_else(|| err!(UnsupportedFeature, "part {index}: not a CUDA graph of this adapter"))?;
                executable.check_composable(index)?;
                // The template gets the kernel parameters updates gave only
                // the part's executable graph: the copy is of the template.
                executable.template.dev.bind()?;
                executable.template.sync_template()?;
                composed_child(executable)?
            }
            ComposeWork::PeerCopy { context, command } => {
                let on = downcast::<CudaContext>(*context as &dyn Any, "the peer copy's context")?;
                let Command::UsmMemcpy { dst, src, size, .. } = command else {
                    return Err(err!(InvalidValue, "part {index}: a peer copy that is not a USM copy"));
                };
                let CopyPlan::Driver(copy) = copy_1d(mem_loc(dst)?, mem_loc(src)?, *size) else {
                    return Err(err!(UnsupportedFeature, "part {index}: a peer copy between host memory"));
                };
                ComposedKind::Copy { copy, ctx: on.dev().ctx.0 }
            }
            ComposeWork::Collective { captured } => {
                let capture = (*captured as &dyn Any)
                    .downcast_ref::<crate::nccl::NcclCapture>()
                    .ok_or_else(|| err!(UnsupportedFeature, "part {index}: not an NCCL capture of this adapter"))?;
                // The capture is one graph over every rank's device (its
                // nodes carry their devices' contexts), joined back to rank
                // 0's stream before it ended: as a child graph, the parts
                // after it follow every rank's part.
                let graph = capture.copy_graph()?;
                ComposedKind::Child { dev: capture.device().clone(), graph, run: None }
            }
        };
        composed.parts.push(ComposedNode { after: part.after.iter().copied().collect(), kind });
    }
    let mut template = composed.build(dev)?;
    let exec = template.instantiate()?;
    tracing::debug!(parts = parts.len(), "CUDA command buffers composed into one graph");
    Ok(Box::new(CudaExecutable {
        exec: ExecGraph::new(dev, exec),
        template,
        collector: None,
        previous: None,
        previous_queue: Weak::new(),
        replaced: Vec::new(),
        signalling: Vec::new(),
        waiting: Vec::new(),
        composed: Some(Box::new(composed)),
    }))
}

impl Composed {
    /// A new graph of `dev` with a node per part.
    fn build(&self, dev: &Arc<DeviceShared>) -> Result<Template> {
        let template = Template::new(dev.clone(), CommandBufferDesc::default())?;
        let mut exits: Vec<Node> = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            // The front end gives each earlier part once (deduplicated).
            let entry: SmallVec<[Node; 4]> = part.after.iter().map(|a| exits[*a as usize]).collect();
            let mut node: Node = ptr::null_mut();
            // SAFETY: the graphs are alive; `entry` are nodes of the new one;
            // the driver copies a child graph into its node; a copy's memory
            // is held by the front end's composition, and the copying device
            // has access to both sides.
            unsafe {
                match &part.kind {
                    ComposedKind::Child { graph, .. } => {
                        cu!(cuGraphAddChildGraphNode(&mut node, template.graph, entry.as_ptr(), entry.len(), *graph))?
                    }
                    ComposedKind::Copy { copy, ctx } => {
                        cu!(cuGraphAddMemcpyNode(&mut node, template.graph, entry.as_ptr(), entry.len(), copy, *ctx))?
                    }
                }
            };
            if let ComposedKind::Child { dev, run: Some(run), .. } = &part.kind {
                let mut collector: Node = ptr::null_mut();
                with_collector_params(dev, dev.ctx.0, run.word, run.ring.addr, |params| {
                    // SAFETY: the graph is alive, `node` is its node; the
                    // collector takes two u64 and a u32 parameter, given by `params`.
                    unsafe { cu!(cuGraphAddKernelNode_v2(&mut collector, template.graph, &node, 1, params)) }
                })?;
            }
            exits.push(node);
        }
        if self.parts.is_empty() {
            // A graph to launch needs a node (the front end gives at least one part).
            template.add_empty(&[])?;
        }
        Ok(template)
    }

    /// Records a submission `event` with the slots `statuses`
    /// ([`CudaExecutable::composed_statuses`]).
    fn submitted(&mut self, statuses: SmallVec<[Arc<RunStatus>; 8]>, event: &Arc<CudaEvent>) {
        for ((_, run), status) in self.runs().zip(statuses) {
            run.submitted += 1;
            run.pending.push_back((status, event.clone()));
        }
    }

    /// The parts whose kernels may report, in part order.
    fn runs(&mut self) -> impl Iterator<Item = (&Arc<DeviceShared>, &mut ComposedRun)> {
        self.parts.iter_mut().filter_map(|p| match &mut p.kind {
            ComposedKind::Child { dev, run: Some(run), .. } => Some((&*dev, run)),
            _ => None,
        })
    }
}

impl Drop for ComposedKind {
    fn drop(&mut self) {
        if let ComposedKind::Child { dev, graph, .. } = self {
            // Only built graphs use it, which copied it.
            dev.release(Release::Graph(*graph));
        }
    }
}

impl CudaExecutable {
    /// This submission's slot in the ring of each composed part whose
    /// kernels may report. Where the slot still belongs to a pending
    /// submission (`RING_SLOTS` executions in flight, held ones included),
    /// that part's collector moves to a new ring and the composition's graph
    /// is built and instantiated again (rare enough that one way of changing
    /// the graph serves); submissions made keep the graph and ring they were
    /// launched with.
    fn composed_statuses(&mut self) -> Result<Vec<Arc<RunStatus>>> {
        let Some(composed) = self.composed.as_mut() else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        let mut moved = false;
        for (dev, run) in composed.runs() {
            if run.pending.len() >= HARVEST_AT {
                let done = run.pending.partition_point(|(_, event)| event.is_done());
                for (status, _) in run.pending.drain(..done) {
                    status.harvest();
                }
            }
            let slot_taken = run
                .pending
                .iter()
                .find(|(status, _)| Arc::ptr_eq(status.ring(), &run.ring))
                .is_some_and(|(status, _)| status.ordinal() + u64::from(RING_SLOTS) <= run.submitted);
            if slot_taken {
                dev.bind()?;
                // The next build's collector writes the new ring.
                run.ring = Arc::new(StatusRing::new(dev)?);
                run.submitted = 0;
                moved = true;
            }
            out.push(Arc::new(RunStatus::new(run.ring.clone(), run.submitted)));
        }
        if moved {
            tracing::debug!(slots = RING_SLOTS, "a composition's status ring is full: its graph is built again");
            let dev = self.template.dev.clone();
            let mut template = composed.build(&dev)?;
            let exec = template.instantiate()?;
            // Launches made hold the old executable graph; the old template
            // is not needed by it.
            self.exec = ExecGraph::new(&dev, exec);
            self.template = template;
        }
        Ok(out)
    }
}

/// A copy of `executable`'s template graph for a composition; where its
/// kernels may report a status, the copy's collector is taken out, and the
/// composition's own collector after the copy ([`ComposedRun`]) writes to a
/// new ring of the composition, so that the part's own submissions keep
/// their ring.
fn composed_child(executable: &CudaExecutable) -> Result<ComposedKind> {
    let t = &executable.template;
    let mut graph: sys::CUgraph = ptr::null_mut();
    // SAFETY: the template is alive and complete; writes a new graph.
    unsafe { cu!(cuGraphClone(&mut graph, t.graph))? };
    // Owns the copy from here.
    let mut kind = ComposedKind::Child { dev: t.dev.clone(), graph, run: None };
    let (Some(run), Some(collector)) = (t.run.as_ref(), executable.collector) else {
        return Ok(kind);
    };
    let ring = Arc::new(StatusRing::new(&t.dev)?);
    let mut node: Node = ptr::null_mut();
    // SAFETY: `collector` is a node of the template, `graph` its clone; the
    // collector is a leaf (added last, after the buffer's leaves), so
    // destroying its copy takes no other node's dependency away.
    unsafe {
        cu!(cuGraphNodeFindInClone(&mut node, collector, graph))?;
        cu!(cuGraphDestroyNode(node))?;
    }
    if let ComposedKind::Child { run: slot, .. } = &mut kind {
        *slot = Some(ComposedRun { word: run.word.addr, ring, submitted: 0, pending: VecDeque::new() });
    }
    Ok(kind)
}

impl RecordingCommandBufferImpl for CudaCommandBuffer {
    unsafe fn append(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let started = std::time::Instant::now();
        // SAFETY: this is `RecordingCommandBufferImpl::append`, whose contract (a validated command,
        // recorded `deps`, this context's events and alternatives) is the one `append_untimed` states.
        let appended = unsafe { self.append_untimed(command, alternatives, deps, wait_events, signal) };
        self.append_time += started.elapsed();
        appended
    }

    fn finalize(mut self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed> {
        let started = std::time::Instant::now();
        let (exec, collector) = match self.finish_graph() {
            Ok(done) => done,
            Err(error) => return Err(FinalizeFailed::new(error, self)),
        };
        let template = self.template;
        let exec = ExecGraph::new(&template.dev, exec);
        // Where a slow build went: appends, then the collector and the
        // driver's instantiation (a wide graph's, docs/performance.md goal 6).
        let lanes = template.lanes.stats();
        tracing::debug!(
            commands = template.commands.len(),
            kernels = template.run.is_some(),
            lane_edges = lanes.lane_edges,
            dropped_edges = lanes.dropped_edges,
            append_us = self.append_time.as_micros() as u64,
            finish_us = started.elapsed().as_micros() as u64,
            "CUDA graph instantiated"
        );
        let which = |has: fn(&Cmd) -> bool| -> Vec<usize> {
            template.commands.iter().enumerate().filter(|(_, c)| has(c)).map(|(i, _)| i).collect()
        };
        let signalling = which(|c| c.signal.is_some());
        let waiting = which(|c| !c.waits.is_empty());
        Ok(Box::new(CudaExecutable {
            exec,
            template,
            collector,
            previous: None,
            previous_queue: Weak::new(),
            replaced: Vec::new(),
            signalling,
            waiting,
            composed: None,
        }))
    }

    fn recording_target(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.template.graph as u64))
    }
}

impl CudaCommandBuffer {
    /// [`RecordingCommandBufferImpl::append`], timed by the caller.
    ///
    /// # Safety
    /// As for [`RecordingCommandBufferImpl::append`].
    unsafe fn append_untimed(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>> {
        let this = &mut self.template;
        this.dev.bind()?;
        if !wait_events.is_empty() {
            this.lanes.stop_lanes();
        }
        let plan = this.lanes.plan(deps);
        let mut entry: SmallVec<[Node; 8]> = plan.edges.iter().map(|d| this.commands[*d as usize].exit).collect();
        let mut waits = Vec::with_capacity(wait_events.len());
        for event in wait_events {
            let (target, keep) = this.wait_target(event)?;
            let mut node: Node = ptr::null_mut();
            // SAFETY: the graph is alive, `entry` holds nodes of it, and the
            // event is kept alive by `keep` (or is the device's own).
            unsafe { cu!(cuGraphAddEventWaitNode(&mut node, this.graph, entry.as_ptr(), entry.len(), target))? };
            waits.push(WaitNode { node, event: keep });
        }
        if !waits.is_empty() {
            entry = waits.iter().map(|w| w.node).collect();
        }
        let signal_event =
            if signal { Some(Arc::new(CudaEvent::signal(&this.dev, this.desc.profiling)?)) } else { None };
        let start = match signal_event.as_ref().and_then(|e| e.start()) {
            Some(start) => {
                let node = this.add_event_record(&entry, start.raw())?;
                entry = SmallVec::from_slice(&[node]);
                Some(node)
            }
            None => None,
        };
        let (exit, kernel) = this.add_body(command, alternatives, &entry)?;
        let signal = match signal_event {
            Some(event) => {
                Some(SignalNodes { record: this.add_event_record(&[exit], event.end().raw())?, start, event })
            }
            None => None,
        };
        this.lanes.commit(deps, &plan);
        let event = signal.as_ref().map(|s| s.event.clone() as Arc<dyn EventImpl>);
        this.commands.push(Cmd { exit, kernel, waits, signal });
        Ok(event)
    }
}

impl ExecutableCommandBufferImpl for CudaExecutable {
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let queue = downcast::<CudaQueue>(queue as &dyn Any, "the queue")?.core();
        // The context is bound where this call makes driver objects or gives
        // advice; the submission binds it before the launch (one query of
        // the current context less per replay).
        if !self.template.advice.is_empty() {
            self.template.dev.bind()?;
        }
        for (mem, size, advice) in &self.template.advice {
            exec::advise(&self.template.dev, mem, *size, *advice)?;
        }
        // This submission's slot in the status ring, in a new ring when the
        // current one is full of pending submissions.
        let new_ring = match (self.template.run.as_mut(), self.collector) {
            (Some(run), Some(node)) => run.make_room(&self.template.dev)?.map(|ring| (ring, node)),
            _ => None,
        };
        if let Some((ring, node)) = new_ring {
            let exec = self.writable_exec()?;
            let ctx = self.template.ctx();
            let t = &mut self.template;
            // A new ring comes only from the run above.
            let Some(run) = t.run.as_mut() else { return Err(err!(Unknown, "a status ring without a run")) };
            with_collector_params(&t.dev, ctx, run.word.addr, ring.addr, |params| {
                // SAFETY: the executable graph and its template are alive and
                // have this kernel node; the parameters match the collector.
                unsafe {
                    cu!(cuGraphExecKernelNodeSetParams_v2(exec, node, params))?;
                    cu!(cuGraphKernelNodeSetParams_v2(node, params))
                }
            })?;
            run.ring = ring;
            run.submitted = 0;
        }
        let status = self.template.run.as_ref().map(|run| Arc::new(RunStatus::new(run.ring.clone(), run.submitted)));
        let parts_status = if self.composed.is_none() { Vec::new() } else { self.composed_statuses()? };
        let mut signals = Vec::new();
        let commands = &self.template.commands;
        for signal in self.signalling.iter().filter_map(|&i| commands[i].signal.as_ref()) {
            signal.event.arm(queue.profiling);
            signals.push(signal.event.clone());
        }
        // CUDA orders launches of one executable graph, but an update may
        // have replaced it, and another queue's stream is not ordered with
        // this one: order on the previous submission explicitly, unless it
        // went to this same in-order queue, whose one stream (and, for held
        // work, the queue's tail) already orders this one after it.
        let same_stream = queue.in_order() && ptr::eq(self.previous_queue.as_ptr(), Arc::as_ptr(queue));
        let previous = if same_stream { None } else { self.previous.clone() };
        let mut waits: SmallVec<[&dyn EventImpl; 8]> = SmallVec::from_slice(wait);
        if let Some(previous) = &previous {
            waits.push(&**previous);
        }
        // The events the graph's wait nodes wait on: the launch is held on
        // the host while any of them is (a user event, or held work).
        let node_waits: SmallVec<[&dyn EventImpl; 8]> =
            self.waiting.iter().flat_map(|&i| &commands[i].waits).filter_map(|w| w.event.as_deref()).collect();
        let exec = self.exec.clone();
        // The pending list keeps the slots too: clones kept on the stack.
        let kept: SmallVec<[Arc<RunStatus>; 8]> = parts_status.iter().cloned().collect();
        let launch = Launch { exec, status: status.clone(), signals, parts_status };
        // SAFETY: the graph's memory is held by the commands' records, kept
        // alive by the front end until the submission completes.
        let event = unsafe { queue.submit(&waits, &node_waits, Order::Normal, queue.profiling, Work::Launch(launch))? };
        if let (Some(run), Some(status)) = (self.template.run.as_mut(), status) {
            run.submitted += 1;
            run.pending.push_back((status, event.clone()));
        }
        if let Some(composed) = self.composed.as_mut() {
            composed.submitted(kept, &event);
        }
        self.previous = Some(event.clone());
        if !ptr::eq(self.previous_queue.as_ptr(), Arc::as_ptr(queue)) {
            self.previous_queue = Arc::downgrade(queue);
        }
        Ok(event)
    }

    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()> {
        self.template.dev.bind()?;
        // Kernels that may report (or may become one that does) made the
        // word at append; the others never read it.
        let status = self.template.run.as_ref().map_or(0, |run| run.word.addr);
        // Everything that can fail for reasons of the launch itself fails
        // before anything changes.
        let mut prepared = Vec::with_capacity(updates.len());
        for u in updates {
            prepared.push((u.command as usize, LaunchParams::new(&self.template.dev, u.launch, status)?));
        }
        let (exec, ctx) = (self.writable_exec()?, self.template.ctx());
        let mut in_place = true;
        for (index, mut params) in prepared {
            let kernel = self.template.commands[index].kernel.as_mut().expect("the front end names kernel commands");
            let node = kernel.node;
            // SAFETY: the node is a kernel node of the graph `exec` was made
            // from; the parameters hold one value per kernel parameter; only
            // later launches see the change (driver contract).
            let result =
                params.with_node_params(ctx, |p| unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, p) });
            if result != sys::CUresult::CUDA_SUCCESS {
                tracing::debug!(error = %driver::error_name(result), "kernel node not updatable in place");
                in_place = false;
            }
            let enabled = !params.empty;
            if enabled != kernel.enabled && in_place {
                // SAFETY: a kernel node of the graph `exec` was made from.
                unsafe { cu!(cuGraphNodeSetEnabled(exec, kernel.node, u32::from(enabled)))? };
            }
            kernel.params = params.into_stored();
            kernel.enabled = enabled;
            if !kernel.stale {
                kernel.stale = true;
                self.template.stale_template.push(index);
            }
        }
        if !in_place {
            self.refresh_exec()?;
        }
        Ok(())
    }

    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>> {
        self.template.dev.bind()?;
        let exec = self.writable_exec()?;
        let event = Arc::new(CudaEvent::signal(&self.template.dev, self.template.desc.profiling)?);
        let signal =
            self.template.commands[command as usize].signal.as_mut().expect("the front end checked the signal event");
        let mut pairs = vec![(signal.record, event.end().raw())];
        if let (Some(node), Some(start)) = (signal.start, event.start()) {
            pairs.push((node, start.raw()));
        }
        for (node, raw) in pairs {
            // SAFETY: the node is an event-record node of the template and of
            // `exec`; the new event is kept alive by the buffer.
            unsafe {
                cu!(cuGraphEventRecordNodeSetEvent(node, raw))?;
                cu!(cuGraphExecEventRecordNodeSetEvent(exec, node, raw))?;
            }
        }
        let old = std::mem::replace(&mut signal.event, event.clone());
        self.replaced.push(old);
        Ok(event)
    }

    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()> {
        self.template.dev.bind()?;
        let exec = self.writable_exec()?;
        let targets = events.iter().map(|e| self.template.wait_target(e)).collect::<Result<Vec<_>>>()?;
        let cmd = &mut self.template.commands[command as usize];
        for (wait, (target, keep)) in cmd.waits.iter_mut().zip(targets) {
            // SAFETY: the node is an event-wait node of the template and of
            // `exec`; the event is kept alive by `keep`.
            unsafe {
                cu!(cuGraphEventWaitNodeSetEvent(wait.node, target))?;
                cu!(cuGraphExecEventWaitNodeSetEvent(exec, wait.node, target))?;
            }
            if let Some(old) = std::mem::replace(&mut wait.event, keep) {
                self.replaced.push(old);
            }
        }
        Ok(())
    }

    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.exec.raw() as u64))
    }
}

impl Drop for Template {
    fn drop(&mut self) {
        // The front end drops a buffer only once its submissions completed, so
        // nothing runs the host nodes or writes the status words any more; an
        // executable graph was released before (see `CudaExecutable::exec`).
        self.dev.release(Release::Graph(self.graph));
        if let Some(run) = self.run.take() {
            self.dev.free_word(run.word);
        }
    }
}
