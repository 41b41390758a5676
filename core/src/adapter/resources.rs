//! The traits of the adapter objects that execute nothing: USM
//! allocations, memory buffers, programs, kernels and events.
//!
//! They name no command and no front-end object, so the objects commands
//! hold (`operands`) can hold them while the traits that take commands
//! (`QueueImpl`, the command-buffer traits, in `mod.rs`) sit above those
//! objects. `mod.rs` re-exports each, so that their paths are
//! `cmdbuf_core::adapter::*` as before.

use std::any::Any;
use std::ptr::NonNull;

use crate::types::error::Result;
use crate::types::event::{EventStatus, ProfilingInfo};
use crate::types::interop::NativeHandle;
use crate::types::memory::MemFlags;
use crate::types::program::{CacheConfig, KernelSignature};

/// A USM allocation; dropping it frees the memory.
pub trait UsmImpl: Any + Send + Sync {
    /// The device address of the first byte; non-zero.
    fn address(&self) -> u64;
    /// The host address of the first byte, for memory the host can access.
    fn host_ptr(&self) -> Option<*mut u8>;
}

/// A memory buffer; dropping it frees the memory.
pub trait BufferImpl: Any + Send + Sync {
    /// The adapter's own object for the sub-buffer `[offset, offset + size)`
    /// of this buffer, where its kernels cannot address a sub-buffer as this
    /// buffer's storage plus `offset` (OpenCL: a `cl_mem` from
    /// `clCreateSubBuffer`). `None`, the default, means they can: kernel
    /// arguments of the sub-buffer then get [`Backing::imp`](super::Backing::imp)
    /// and [`MemBuffer::offset`](crate::MemBuffer::offset). Memory commands never
    /// see sub-buffers: the front end gives them the root buffer and absolute offsets.
    ///
    /// # Safety
    /// This is a root buffer (not a sub-buffer); `size` is non-zero; the range
    /// lies inside the buffer; `offset` is a multiple of the device's
    /// `mem_base_addr_align_bits / 8`; `flags` holds exactly one access mode,
    /// one the buffer's own allows.
    unsafe fn sub_buffer(&self, offset: usize, size: usize, flags: MemFlags) -> Result<Option<Box<dyn BufferImpl>>> {
        let _ = (offset, size, flags);
        Ok(None)
    }

    /// The native object (see [`crate::interop`]); `UnsupportedFeature`
    /// where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this buffer has no native handle"))
    }

    /// The host memory the device uses in place as this (root) buffer's
    /// storage: a buffer made by
    /// [`ContextImpl::buffer_over_host`](super::ContextImpl::buffer_over_host)
    /// on a device that reaches host memory. `None`, the default, for a
    /// buffer with storage of its own, which maps and reads copy out of.
    fn host_memory(&self) -> Option<NonNull<u8>> {
        None
    }
}

/// A built program.
pub trait ProgramImpl: Any + Send + Sync {
    /// Creates the kernel of `signature`, or `InvalidKernelName` when the
    /// built source lacks it.
    ///
    /// # Safety
    /// `signature` is one of the bundle the program was built from.
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>>;

    /// The driver's build log; empty when it has none.
    fn build_log(&self) -> String {
        String::new()
    }

    /// The driver's binary of the program, where it has one.
    fn binary(&self) -> Option<Vec<u8>> {
        None
    }

    /// The native object (OpenCL's `cl_program`, CUDA's `CUmodule`);
    /// `UnsupportedFeature` where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this program has no native handle"))
    }
}

/// A kernel of a built program.
pub trait KernelImpl: Any + Send + Sync {
    /// The largest work-group this kernel can run (register or local-memory
    /// limits may make it smaller than the device's).
    fn max_work_group_size(&self) -> usize;

    /// The required work-group size the driver reports, if any.
    fn compile_work_group_size(&self) -> Option<[usize; 3]> {
        None
    }

    /// Bytes of static local memory; 0 where the driver cannot tell.
    fn local_mem_size(&self) -> usize {
        0
    }

    /// Bytes of private memory per work-item; 0 where the driver cannot tell.
    fn private_mem_size(&self) -> usize {
        0
    }

    /// The driver's preferred work-group size multiple, if it has one.
    fn preferred_work_group_size_multiple(&self) -> Option<usize> {
        None
    }

    /// The largest sub-group this kernel runs with, where the driver
    /// compiles kernels for a sub-group size of its own choosing (OpenCL CPU
    /// drivers vectorise each kernel for one width); `None`, the default,
    /// where the device's largest sub-group size is every kernel's.
    fn max_sub_group_size(&self) -> Option<u32> {
        None
    }

    /// The native object (OpenCL's `cl_kernel`, CUDA's `CUfunction`);
    /// `UnsupportedFeature` where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this kernel has no native handle"))
    }

    /// Applies a cache-configuration hint where the backend has such a
    /// split; `Ok(false)` where it has none (the hint is then only recorded).
    fn apply_cache_config(&self, config: CacheConfig) -> Result<bool> {
        let _ = config;
        Ok(false)
    }
}

/// An event of an adapter.
pub trait EventImpl: Any + Send + Sync {
    /// Current status.
    fn status(&self) -> EventStatus;
    /// The status as far as it is known, for the front end's own
    /// bookkeeping (which commands in flight it may retire, asked at every
    /// submission): an adapter that holds eager work back until something
    /// needs it started (Vulkan's batches) answers without starting it, as
    /// a status query by the application must. By default, `status`.
    fn status_quiet(&self) -> EventStatus {
        self.status()
    }
    /// Blocks until the event completes; `Err` when its command failed.
    fn wait(&self) -> Result<()>;
    /// Timestamps, once complete, for events of profiling queues.
    fn profiling(&self) -> Option<ProfilingInfo>;

    /// The native object (see [`crate::interop`]); `UnsupportedFeature`
    /// where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this event has no native handle"))
    }

    /// For an event adopted from a native handle, the native queue its
    /// command was enqueued on, where the backend tells (OpenCL); `None`
    /// otherwise.
    fn adopted_native_queue(&self) -> Option<NativeHandle> {
        None
    }
}

/// An event the host completes, like OpenCL's user events.
pub trait UserEventImpl: EventImpl {
    /// Completes the event: `Ok` makes it `Complete`, `Err` makes it `Error`
    /// with that error. The front end calls it exactly once.
    fn complete(&self, result: Result<()>);
}
