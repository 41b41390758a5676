//! The front end, cmdbuf-core's layer 2: the validating public API, the
//! software command buffer, graph capture and, for tests, the fault
//! injector. The crate root re-exports each public module under its old
//! path (`cmdbuf_core::queue`, `cmdbuf_core::context`, ...).

pub mod adopt;
mod backing;
pub mod capture;
pub mod collective;
pub mod command_buffer;
pub(crate) mod command_build;
pub(crate) mod composed;
pub mod context;
pub mod device;
pub mod event;
#[cfg(feature = "fault-injection")]
pub mod faults;
pub(crate) mod host_threads;
pub mod interop;
pub(crate) mod launch_resolve;
pub mod memory;
pub mod peer;
pub mod platform;
pub mod program;
pub mod queue;
pub(crate) mod queue_state;
pub(crate) mod recorded;
pub(crate) mod registry;
pub mod shared_usm;
pub(crate) mod software;
mod typed_usm;
