//! What several adapters need and would otherwise each write: the adapter
//! toolbox. It sits at the adapter interface's layer: it builds on cmdbuf-core's
//! plain types and the adapter traits, never on the front end, so adapters
//! (and the front end's software command buffer) may use it freely.
//!
//! - [`QueueOrder`]: the in-order / barrier bookkeeping of a queue whose
//!   commands are ordered on the host (the CPU and Vulkan adapters);
//! - [`ForwardingEvent`]: an event that stands for the latest execution of a
//!   recorded command, re-pointed at each enqueue (the software command
//!   buffer and the Vulkan adapter's signal events);
//! - [`Recording`]: a command buffer's recorded commands, each with its
//!   dependencies, wait and signal events and leaf flag (the software
//!   command buffer, the OpenCL adapter's two and the Vulkan adapter's);
//! - [`host_cache`]: the host processor's last-level cache, for devices
//!   whose memory the host's caches cache (the CPU adapter, lavapipe);
//! - [`TicketWorker`]: a thread that runs jobs in the order handed, each
//!   with a ticket to wait for (the OpenCL adapter's replayer, the CUDA
//!   adapter's launcher).
//!
//! The repository's check of committed SPIR-V against its GLSL is test
//! tooling, not part of this API: `conformance/tests/support/fresh.rs`.

mod forward;
pub mod host_cache;
mod order;
mod recording;
mod ticket_worker;

pub use forward::ForwardingEvent;
pub use order::{OrderedEvent, QueueOrder};
pub use recording::{RecordedCommand, Recording};
pub use ticket_worker::{CallJobs, JobRunner, MAX_PENDING, TicketWorker, WAIT_SPIN};
