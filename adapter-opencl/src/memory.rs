//! USM allocations (Intel USM or SVM) and memory buffers.

use std::ffi::c_void;
use std::sync::Arc;

use cl3::types::{cl_bitfield, cl_mem};
use opencl3::memory::ClMem;
use ur_core::adapter::{BufferImpl, UsmImpl};
use ur_core::{MemFlags, Result, UsmKind, err};

use crate::context::Shared;
use crate::conv::ClResultExt;
use crate::device::Usm;
use crate::event::RawEvent;
use crate::ffi::IntelKind;

const CL_MEM_READ_WRITE: cl_bitfield = 1 << 0;
const CL_MEM_ALLOC_HOST_PTR: cl_bitfield = 1 << 4;
const CL_MEM_COPY_HOST_PTR: cl_bitfield = 1 << 5;
const CL_MEM_SVM_FINE_GRAIN_BUFFER: cl_bitfield = 1 << 10;

/// A USM allocation: Intel USM, or SVM (fine-grained for host and shared
/// memory, coarse-grained for device memory).
pub(crate) struct ClUsm {
    shared: Arc<Shared>,
    ptr: *mut c_void,
    host: bool,
}

// SAFETY: the allocation is an address owned by this value; access to the
// bytes is ordered by the commands and events that use it.
unsafe impl Send for ClUsm {}
// SAFETY: as for Send; the value itself is immutable.
unsafe impl Sync for ClUsm {}

impl ClUsm {
    pub(crate) fn new(shared: Arc<Shared>, kind: UsmKind, size: usize, align: usize) -> Result<ClUsm> {
        let align = u32::try_from(align).map_err(|_| err!(UnsupportedAlignment, "alignment {align} is too large"))?;
        let context = shared.context.get();
        let ptr = match &shared.device.usm {
            Usm::Intel(api) => {
                let kind = match kind {
                    UsmKind::Host => IntelKind::Host,
                    UsmKind::Device => IntelKind::Device,
                    UsmKind::Shared => IntelKind::Shared,
                };
                // SAFETY: the context and device belong together.
                unsafe { api.alloc(context, shared.device.id, kind, size, align) }.cl("USM allocation")?
            }
            Usm::Svm { .. } => {
                let flags = match kind {
                    UsmKind::Device => CL_MEM_READ_WRITE,
                    // The device reports these kinds only with fine-grained buffers.
                    UsmKind::Host | UsmKind::Shared => CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER,
                };
                // SAFETY: a valid context; clSVMAlloc returns NULL on failure.
                unsafe { cl3::memory::svm_alloc(context, flags, size, align) }.map_err(|_| {
                    err!(OutOfDeviceMemory, "clSVMAlloc of {size} bytes aligned to {align} failed")
                })?
            }
            Usm::None => return Err(err!(UnsupportedFeature, "the device has no USM")),
        };
        Ok(ClUsm { shared, ptr, host: kind != UsmKind::Device })
    }
}

impl UsmImpl for ClUsm {
    fn address(&self) -> u64 {
        self.ptr as u64
    }

    fn host_ptr(&self) -> Option<*mut u8> {
        self.host.then_some(self.ptr.cast())
    }
}

impl Drop for ClUsm {
    fn drop(&mut self) {
        let context = self.shared.context.get();
        // SAFETY: allocated in `new` on this context and freed once; the front
        // end drops an allocation only when no command uses it.
        let result = unsafe {
            match &self.shared.device.usm {
                Usm::Intel(api) => api.free(context, self.ptr),
                _ => cl3::memory::svm_free(context, self.ptr),
            }
        };
        if let Err(code) = result {
            tracing::error!(code, "freeing USM failed");
        }
    }
}

/// A memory buffer.
pub(crate) struct ClBuffer {
    buffer: opencl3::memory::Buffer<u8>,
}

impl ClBuffer {
    /// Creates a buffer, copied from `init` or zero-filled. Kernels' access
    /// modes are not passed on: the adapter's own kernels write into buffers
    /// for reads and writes from USM, whatever access the application declared.
    pub(crate) fn new(shared: &Shared, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<ClBuffer> {
        let mut cl_flags = CL_MEM_READ_WRITE;
        if flags.contains(MemFlags::ALLOC_HOST_POINTER) {
            cl_flags |= CL_MEM_ALLOC_HOST_PTR;
        }
        let host_ptr = match init {
            Some(data) => {
                cl_flags |= CL_MEM_COPY_HOST_PTR;
                data.as_ptr().cast_mut().cast()
            }
            None => std::ptr::null_mut(),
        };
        // SAFETY: a valid context; with COPY_HOST_PTR the data has `size`
        // bytes (the trait's contract) and is copied before the call returns.
        let mem = unsafe { cl3::memory::create_buffer(shared.context.get(), cl_flags, size, host_ptr) }
            .cl("clCreateBuffer")?;
        let buffer = opencl3::memory::Buffer::new(mem);
        if init.is_none() {
            let zero = 0u8;
            // SAFETY: a fill of the whole new buffer with a one-byte pattern
            // that outlives the call (OpenCL copies it).
            let event = unsafe {
                cl3::command_queue::enqueue_fill_buffer(
                    shared.internal_queue(),
                    mem,
                    (&raw const zero).cast(),
                    1,
                    0,
                    size,
                    0,
                    std::ptr::null(),
                )
            }
            .cl("clEnqueueFillBuffer (zeroing a new buffer)")?;
            // SAFETY: a new reference from the enqueue.
            let event = unsafe { RawEvent::from_raw(event) };
            cl3::command_queue::flush(shared.internal_queue()).cl("clFlush")?;
            event.wait().cl("zeroing a new buffer")?;
        }
        Ok(ClBuffer { buffer })
    }

    pub(crate) fn mem(&self) -> cl_mem {
        self.buffer.get()
    }
}

impl BufferImpl for ClBuffer {}
