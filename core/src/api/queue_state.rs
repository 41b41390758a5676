//! The definitions a queue and UR's graph capture hold of each other: a
//! queue's state holds its capture slot, whose graph holds the capture in
//! progress, which holds the capturing queues weakly; a captured command
//! may be an executable graph, which holds captured commands again. Their
//! behaviour is above: `capture` (what a capturing queue does with a
//! command, and the graphs' public types) and `queue` (which hands a
//! capturing queue's commands to `capture`), so that those two name each
//! other one way only, as cmdbuf-runtime's `graph/state.rs` does for its
//! graphs. Beside them, the two parts of a queue that any graph recording
//! takes over (UR's capture here, SYCL's recording in `cmdbuf-runtime`):
//! its slot (`slot.rs`) and its lane (`lane.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::adapter::{EventImpl, QueueImpl};
use crate::api::recorded::{CommandBuffer, SyncPoint};
use crate::command::Command;
use crate::context::Context;
use crate::device::Device;
use crate::launch::{ArgValue, KernelCommand, LocalSizeOrigin};
use crate::memory::MappedMemory;
use crate::objects::UsmInner;
use crate::types::desc::QueueProperties;

mod lane;
mod slot;

pub use lane::QueueLane;
pub use slot::{QueueSlot, QueueSlotGuard};

// A queue (behaviour: `queue.rs`, with `QueueInner`'s drop).

/// What a command in flight needs alive: the command (which owns its memory
/// objects) or the command buffer being executed.
pub(crate) enum KeepAlive {
    Command(#[allow(dead_code)] Command),
    CommandBuffer(#[allow(dead_code)] CommandBuffer),
    /// A composed command buffer's state (`crate::api::composed` sits
    /// above queues).
    Composed(#[allow(dead_code)] Arc<dyn std::any::Any + Send + Sync>),
    /// An unmapped buffer mapping's host memory, until its write-back is done.
    Mapping(#[allow(dead_code)] MappedMemory, #[allow(dead_code)] Command),
    /// A host task: nothing to keep, but `finish` waits for it.
    HostTask,
    /// A USM allocation the application freed while commands submitted
    /// before might still use it (kernels name memory by address, so
    /// nothing else holds it): freed once they have completed.
    Freed(#[allow(dead_code)] Arc<UsmInner>),
    /// What a native collective uses until it completes: the allocations
    /// it reaches by address, its communicator, its captured graph.
    Collective(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>),
}

impl KeepAlive {
    /// Whether keeping `self` keeps everything `older` keeps: a kernel
    /// launch of the same kernel with the same buffer at each of `older`'s
    /// buffer arguments (values, pointers and local sizes keep nothing), or
    /// a submission of the same command buffer (one object: what it holds
    /// is the same for both, updates included).
    pub(crate) fn covers(&self, older: &KeepAlive) -> bool {
        match (self, older) {
            (KeepAlive::Command(new), _) => kernel_keeps(new, older, false),
            (KeepAlive::CommandBuffer(new), KeepAlive::CommandBuffer(old)) => new.id() == old.id(),
            _ => false,
        }
    }
}

/// Whether keeping `new` keeps the very objects `older` keeps: each
/// covers the other (the same kernel, the same buffer at the same arguments).
pub(crate) fn keeps_same(new: &Command, older: &KeepAlive) -> bool {
    kernel_keeps(new, older, true)
}

/// [`KeepAlive::covers`] for a command, and with `both_ways` also the
/// converse, in one pass over the arguments.
fn kernel_keeps(new: &Command, older: &KeepAlive, both_ways: bool) -> bool {
    let (Command::KernelLaunch(new), KeepAlive::Command(Command::KernelLaunch(old))) = (new, older) else {
        return false;
    };
    Arc::ptr_eq(&new.kernel.inner, &old.kernel.inner)
        && new.args.len() == old.args.len()
        && new.args.iter().zip(&old.args).all(|pair| match pair {
            (ArgValue::MemObj(n), ArgValue::MemObj(o)) => n.same_buffer(o),
            (_, ArgValue::MemObj(_)) => false,
            (ArgValue::MemObj(_), _) => !both_ways,
            _ => true,
        })
}

/// What every handle to a queue shares (and the captures it takes part in
/// hold weakly).
pub(crate) struct QueueInner {
    pub(crate) context: Context,
    /// The sub-device of the context's device the queue runs on, if it is
    /// not the context's device itself.
    pub(crate) sub_device: Option<Device>,
    pub(crate) properties: QueueProperties,
    /// Commands complete in enqueue order: the queue is in order, or its
    /// adapter queue runs in order ([`QueueImpl::completes_in_order`]).
    pub(crate) completes_in_order: bool,
    /// Shared only by the queue's own end when one of its host tasks drops
    /// it (`QueueInner`'s drop, which hands it to a host thread).
    pub(crate) imp: Arc<dyn QueueImpl>,
    pub(crate) in_flight: Mutex<VecDeque<(Arc<dyn EventImpl>, KeepAlive)>>,
    /// The UR graph this queue captures into, if any.
    pub(crate) capture: CaptureSlot,
    pub(crate) _live: crate::live::Live<{ crate::live::QUEUE }>,
}

impl QueueInner {
    /// The queue's identity while it lives (captures key their queues by it).
    pub(crate) fn key(&self) -> usize {
        self as *const QueueInner as usize
    }
}

// UR's graph capture (behaviour: `capture.rs`).

/// The sync points a captured command stands for.
pub(crate) type Syncs = SmallVec<[SyncPoint; 2]>;

/// The graph a queue captures into, if any: the queue's one hook for capture.
pub(crate) type CaptureSlot = QueueSlot<GraphInner>;

/// What every handle to a captured graph, and every queue capturing into
/// it, shares.
pub(crate) struct GraphInner {
    pub(crate) id: u64,
    pub(crate) context: Context,
    pub(crate) state: Mutex<GraphState>,
}

#[derive(Default)]
pub(crate) struct GraphState {
    pub(crate) nodes: Vec<Node>,
    /// The command buffer captured into and each node's sync points, until
    /// the first instantiation takes it.
    pub(crate) lowered: Option<(CommandBuffer, Vec<Syncs>)>,
    pub(crate) session: Option<Session>,
}

/// A capture in progress.
pub(crate) struct Session {
    /// The identity of the queue that began it.
    pub(crate) origin: usize,
    /// What invalidated it, once something did.
    pub(crate) invalidated: Option<String>,
    /// The origin and the queues that joined.
    pub(crate) queues: Vec<QueueCapture>,
}

/// A queue capturing, as its capture sees it.
pub(crate) struct QueueCapture {
    /// The queue, not kept alive by the capture.
    pub(crate) queue: Weak<QueueInner>,
    /// Its identity and the order it adds to its captured commands.
    pub(crate) lane: QueueLane,
}

/// What a queue can capture.
#[derive(Clone)]
pub(crate) enum Op {
    /// A memory or native command.
    Command(Command),
    /// A kernel launch, with how its local size was chosen.
    Kernel(KernelCommand, LocalSizeOrigin),
    /// A barrier or an event wait: appends nothing.
    Wait { barrier: bool },
    /// An executable graph: its commands, appended again.
    Graph(InstantiatedGraph),
}

/// A captured command and the captured commands it runs after.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) op: Op,
    pub(crate) preds: Vec<u32>,
    /// The identity of the queue it was captured from.
    pub(crate) queue: usize,
    /// Whether a later command captured from the same queue runs after it
    /// (then it is none of that queue's leaves, see [`QueueLane`]).
    pub(crate) depended_on: bool,
}

/// An instantiated capture (`ur_exp_executable_graph_handle_t`): a finalized
/// command buffer that [`Queue::enqueue_graph`](crate::queue::Queue::enqueue_graph)
/// submits. Clones share it.
#[derive(Clone)]
pub struct InstantiatedGraph {
    pub(crate) inner: Arc<ExecInner>,
}

pub(crate) struct ExecInner {
    /// The identity of the graph it was instantiated from.
    pub(crate) graph: u64,
    pub(crate) context: Context,
    pub(crate) buffer: CommandBuffer,
    /// What was captured, appended again where the graph is itself captured.
    pub(crate) nodes: Arc<[Node]>,
}
