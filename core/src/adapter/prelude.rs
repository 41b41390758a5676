//! What every adapter crate imports from cmdbuf-core, in one glob:
//! `use cmdbuf_core::adapter::prelude::*;`.
//!
//! The four adapters (CPU, OpenCL, Vulkan, CUDA) each implement the same
//! traits over the same objects, so their modules repeated the same import
//! lists: the `*Impl` traits and what they pass ([`Command`],
//! [`KernelCommand`], the objects inside commands), the error type and its
//! macro, and the plain types of their signatures. This module holds that
//! common set, and only items of the adapter interface and below (cmdbuf-core's
//! layers): what only one adapter or one file uses (a device's info types,
//! the toolbox's helpers, `event::execution_error` of the front end) is
//! imported by name where it is used.

pub use super::command::Command;
pub use super::launch::{ArgValue, KernelCommand};
pub use super::operands::{Event, Kernel, MemBuffer, MemLoc, UsmRef};
pub use super::{
    AdapterFactory, Backing, BufferImpl, ContextImpl, DeviceImpl, EventBacking, EventImpl, ExecutableCommandBufferImpl,
    FinalizeFailed, KernelImpl, KernelUpdate, NativeBacking, PlatformImpl, ProgramImpl, QueueImpl,
    RecordingCommandBufferImpl, UserEventImpl, UsmImpl, downcast,
};
pub use crate::err;
pub use crate::types::backend::Backend;
pub use crate::types::clock::Timestamps;
pub use crate::types::desc::{CommandBufferDesc, QueueProperties};
pub use crate::types::error::{Result, UrError};
pub use crate::types::event::{EventStatus, ProfilingInfo};
pub use crate::types::interop::{NativeHandle, NativeTarget};
pub use crate::types::memory::{MemFlags, UsmKind};
pub use crate::types::program::{ProgramBundle, SourceForm};
