//! Native objects as plain values: handles, where a native command's work
//! goes, and who owns an adopted object (see [`crate::interop`] and
//! [`crate::adopt`]).

/// A backend's native object, as the integer value of its handle or pointer
/// (see [`crate::interop`] for what each object's handle is).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct NativeHandle(pub u64);

/// Where a native command's callback puts its work.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NativeTarget {
    /// CPU: no native queue; the callback's own host work is the command.
    Host,
    /// A native queue to enqueue on: `cl_command_queue` (OpenCL), `CUstream` (CUDA).
    Queue(NativeHandle),
    /// A native command buffer in the recording state: a `VkCommandBuffer`
    /// (Vulkan; outside a render pass, and what it binds is not inherited by
    /// later commands), a `cl_command_buffer_khr` (OpenCL; record with
    /// `clCommand*KHR` without sync points: barriers order the commands), or
    /// the `CUgraph` of a native command's child command buffer (CUDA; add
    /// nodes to it).
    Recording(NativeHandle),
}

impl NativeTarget {
    /// The target's native handle, `None` for [`NativeTarget::Host`].
    pub fn handle(self) -> Option<NativeHandle> {
        match self {
            NativeTarget::Host => None,
            NativeTarget::Queue(h) | NativeTarget::Recording(h) => Some(h),
        }
    }
}

/// Who releases the native object once its adopted object is dropped
/// (UR's `isNativeHandleOwned`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ownership {
    /// The caller keeps its reference; the adopted object takes one of its
    /// own (`clRetain*`) where the backend counts references.
    #[default]
    Shared,
    /// The caller's reference is handed over: dropping the adopted object
    /// releases it.
    Transferred,
}

impl Ownership {
    /// From UR's `isNativeHandleOwned`.
    pub fn from_owned(owned: bool) -> Ownership {
        if owned { Ownership::Transferred } else { Ownership::Shared }
    }
}
