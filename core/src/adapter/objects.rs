//! The API objects that hold the adapter objects making queues and
//! command buffers, as adapters are handed them: devices, contexts and
//! programs; and, re-exported from `operands`, the objects inside commands
//! (kernels, events, USM allocations, memory buffers, native commands), so
//! that this module names every object definition.
//!
//! Only their definitions are here, so that the adapter interface can name
//! them without importing the front end. Their behaviour, validating
//! constructors included, is written in the front-end module of each
//! (`device`, `context`, `program`, `event`, `memory`), which re-exports the
//! type.

use std::sync::Arc;

use crate::adapter::resources::ProgramImpl;
use crate::adapter::{ContextImpl, DeviceImpl};
use crate::types::desc::ContextId;
use crate::types::device::{DeviceId, DeviceInfo, Partition, PartitionSupport};
use crate::types::program::{KernelSignature, SourceForm};

pub(crate) use crate::adapter::operands::{
    AllocationTracker, BufferInner, HoldsFreedMemory, KernelInner, KernelProgram, NestedCommandBuffer, Owner, Storage,
};
pub use crate::adapter::operands::{
    Event, Kernel, MemBuffer, MemLoc, NativeCommand, NativeFn, NativeScope, UsmInner, UsmRef,
};

/// A device of a platform. Cheap to clone.
///
/// A device may be viewed as [`emulated`](Device::emulated): contexts made
/// from that view build every command buffer with cmdbuf-core's software command
/// buffer, whatever the adapter offers natively. The conformance suite runs
/// both views so that both paths are tested on every run.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

pub(crate) struct DeviceInner {
    pub(crate) imp: Arc<dyn DeviceImpl>,
    pub(crate) info: DeviceInfo,
    pub(crate) id: DeviceId,
    /// For an emulated view, the native view it was made from.
    pub(crate) native: Option<Arc<DeviceInner>>,
    /// The partitions the adapter offers, asked once.
    pub(crate) partitions: PartitionSupport,
    /// For a sub-device, where it came from.
    pub(crate) sub: Option<SubDeviceOf>,
}

/// A sub-device's parent, the partition that made it, and its place in it.
#[derive(Clone)]
pub(crate) struct SubDeviceOf {
    pub(crate) parent: Device,
    pub(crate) partition: Partition,
    pub(crate) index: usize,
}

/// A context on one device, or over several ([`Context::with_devices`]):
/// a family of devices made on their root, or unrelated devices an adapter
/// spans, made on the first. Clone retains, drop releases.
///
/// Objects of different contexts never mix: passing a buffer, event, kernel
/// or queue of another context is an error naming the object.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) id: ContextId,
    pub(crate) device: Device,
    /// The devices the context was made over when they were several
    /// ([`Context::with_devices`]); `None` for a context of `device`.
    pub(crate) devices: Option<Box<[Device]>>,
    pub(crate) imp: Arc<dyn ContextImpl>,
    pub(crate) tracker: Arc<AllocationTracker>,
    pub(crate) _live: crate::live::Live<{ crate::live::CONTEXT }>,
}

/// A program built for a context. Clone retains, drop releases.
#[derive(Clone)]
pub struct Program {
    pub(crate) inner: Arc<ProgramInner>,
}

pub(crate) struct ProgramInner {
    pub(crate) context: Context,
    pub(crate) signatures: Vec<KernelSignature>,
    pub(crate) form: SourceForm,
    pub(crate) options: String,
    pub(crate) given: Option<Arc<[u8]>>,
    pub(crate) label: Option<&'static str>,
    /// Adopted from a native program: its signatures are derived.
    pub(crate) adopted: bool,
    pub(crate) imp: Box<dyn ProgramImpl>,
    pub(crate) _live: crate::live::Live<{ crate::live::PROGRAM }>,
}

// A kernel holds its program as a `KernelProgram`, which only `Program` is.
impl KernelProgram for Program {}
