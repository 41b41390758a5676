//! What a common program names: loading devices, contexts and queues, USM
//! and buffers, programs and kernels, command buffers, events and errors.
//!
//! ```
//! use cmdbuf::prelude::*;
//!
//! fn main() -> Result<()> {
//!     let device = cmdbuf::load_all().first_device()?;
//!     let context = Context::new(&device)?;
//!     let queue = Queue::new(&context, QueueProperties::default())?;
//!     let data = queue.clone_htod(&[1u32, 2, 3, 4])?;
//!     let command_buffer = CommandBuffer::new(&context, &device, CommandBufferDesc::default())?;
//!     command_buffer.append_usm_fill(data.ptr(), &7u32.to_ne_bytes(), 8, AppendOptions::new())?;
//!     command_buffer.finalize()?;
//!     queue.enqueue_command_buffer(&command_buffer, &[])?.wait()?;
//!     assert_eq!(queue.clone_dtoh::<u32>(&data, &[])?, [7, 7, 3, 4]);
//!     Ok(())
//! }
//! ```

pub use crate::{
    AppendOptions, Backend, CommandBuffer, CommandBufferDesc, CommandHandle, Context, Device, DeviceSelector, Event,
    EventStatus, Kernel, KernelArg, KernelLaunch, KernelLaunchUpdate, KernelSignature, Loader, MemBuffer, MemFlags,
    Program, ProgramBundle, ProgramSource, Queue, QueueProperties, Result, SyncPoint, UrError, UserEvent,
    UsmAllocation, UsmKind, UsmPtr,
};
