//! USM allocations (Intel USM or SVM) and memory buffers.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cl3::types::{cl_bitfield, cl_mem};
use cmdbuf_core::adapter::prelude::*;
use opencl3::memory::ClMem;

use crate::conv::ClResultExt;
use crate::device::{Shared, Usm};
use crate::event::WaitList;
use crate::ffi::{IntelKind, RawEvent};
use crate::helpers::Side;
use crate::kernel_args;
use crate::launch::{Launched, Ptr, Target};

const CL_MEM_READ_WRITE: cl_bitfield = 1 << 0;
const CL_MEM_ALLOC_HOST_PTR: cl_bitfield = 1 << 4;
const CL_MEM_USE_HOST_PTR: cl_bitfield = 1 << 3;
const CL_MEM_COPY_HOST_PTR: cl_bitfield = 1 << 5;
const CL_MEM_SVM_FINE_GRAIN_BUFFER: cl_bitfield = 1 << 10;

/// The largest alignment passed to the driver. OpenCL lets `clSVMAlloc`
/// reject alignments above the size of the largest data type (`long16`, 128
/// bytes) and PoCL does; a larger alignment is obtained by allocating that
/// much more and handing out an aligned address inside the allocation (an
/// address inside an SVM or USM allocation is valid wherever one is).
const MAX_DRIVER_ALIGN: usize = 128;

/// The size to allocate and the alignment to ask the driver for, so that an
/// address aligned to `align` with `size` bytes after it lies inside.
fn driver_request(size: usize, align: usize) -> Option<(usize, usize)> {
    if align <= MAX_DRIVER_ALIGN { Some((size, align)) } else { Some((size.checked_add(align - 1)?, 0)) }
}

/// A USM allocation: Intel USM, or SVM (fine-grained for host and shared
/// memory, coarse-grained for device memory).
pub(crate) struct ClUsm {
    shared: Arc<Shared>,
    /// What the driver returned, to free.
    base: *mut c_void,
    /// The address handed out: `base` rounded up to the alignment asked for.
    ptr: *mut c_void,
    /// Bytes allocated from `base`.
    alloc_size: usize,
    host: bool,
    /// An SVM allocation as a buffer over the same memory, made on first
    /// use (see [`ClUsm::as_buffer`]).
    buffer: OnceLock<opencl3::memory::Buffer<u8>>,
}

// SAFETY: the allocation is an address owned by this value; access to the
// bytes is ordered by the commands and events that use it.
unsafe impl Send for ClUsm {}
// SAFETY: as for Send; the value itself is immutable.
unsafe impl Sync for ClUsm {}

impl ClUsm {
    pub(crate) fn new(shared: Arc<Shared>, kind: UsmKind, size: usize, align: usize) -> Result<ClUsm> {
        let (alloc_size, driver_align) = driver_request(size, align)
            .ok_or_else(|| err!(InvalidUsmSize, "{size} bytes aligned to {align} overflow the address space"))?;
        // Below MAX_DRIVER_ALIGN, so it fits.
        let driver_align = driver_align as u32;
        let context = shared.context.get();
        let base = match &shared.device.usm {
            Usm::Intel(api) => {
                let kind = match kind {
                    UsmKind::Host => IntelKind::Host,
                    UsmKind::Device => IntelKind::Device,
                    UsmKind::Shared => IntelKind::Shared,
                };
                // SAFETY: the context and device belong together.
                unsafe { api.alloc(context, shared.device.id, kind, alloc_size, driver_align) }.cl("USM allocation")?
            }
            Usm::Svm => {
                let flags = match kind {
                    UsmKind::Device => CL_MEM_READ_WRITE,
                    // The device reports these kinds only with fine-grained buffers.
                    UsmKind::Host | UsmKind::Shared => CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER,
                };
                // SAFETY: a valid context; clSVMAlloc returns NULL on failure.
                unsafe { cl3::memory::svm_alloc(context, flags, alloc_size, driver_align) }.map_err(|_| {
                    err!(OutOfDeviceMemory, "clSVMAlloc of {alloc_size} bytes aligned to {driver_align} failed")
                })?
            }
            Usm::None => return Err(err!(UnsupportedFeature, "the device has no USM")),
        };
        let skip = if align > MAX_DRIVER_ALIGN { (base as usize).next_multiple_of(align) - base as usize } else { 0 };
        // SAFETY: `skip < align`, and `align - 1` extra bytes were allocated.
        let ptr = unsafe { base.cast::<u8>().add(skip) }.cast();
        let usm = ClUsm { shared, base, ptr, alloc_size, host: kind != UsmKind::Device, buffer: OnceLock::new() };
        usm.zero(size)?;
        Ok(usm)
    }

    /// Zeroes a new allocation, as buffers are: drivers hand out reused
    /// memory, and a program that reads before writing then sees the same
    /// bytes on every adapter. Host-accessible memory is zeroed by the host;
    /// device memory by the `ur_fill` kernel on the internal queue.
    fn zero(&self, size: usize) -> Result<()> {
        if self.host {
            // SAFETY: a new host-accessible allocation of at least `size`
            // bytes from `ptr`, used by nothing else yet.
            unsafe { std::ptr::write_bytes(self.ptr.cast::<u8>(), 0, size) };
            return Ok(());
        }
        let wait = WaitList::default();
        let target = Target::queue(&self.shared, self.shared.internal_queue(), &wait);
        let dst = Side { ptr: Ptr::Usm(self.ptr), offset: 0 };
        // SAFETY: `size` bytes from `ptr` belong to this new allocation.
        let launched = unsafe {
            self.shared.helpers.fill(&self.shared.context, &self.shared.device.usm, &target, dst, &[0], size)?
        };
        let Launched::Event(event) = launched else { return Err(err!(Unknown, "a zero fill produced a sync point")) };
        cl3::command_queue::flush(self.shared.internal_queue()).cl("clFlush")?;
        event.wait().cl("zeroing new USM")
    }

    /// The allocation as a buffer over the same memory (`CL_MEM_USE_HOST_PTR`
    /// on an SVM pointer shares it, OpenCL 2.0 §5.2.1), and the byte offset
    /// of the address handed out inside that buffer.
    ///
    /// NVIDIA's OpenCL rejects launches that mix buffer and SVM pointer
    /// arguments (`CL_INVALID_KERNEL_ARGS`), so the adapter's kernels that
    /// move data between a buffer and SVM take both sides as buffers.
    pub(crate) fn as_buffer(&self) -> Result<(cl_mem, usize)> {
        if !matches!(self.shared.device.usm, Usm::Svm) {
            return Err(err!(Unknown, "only SVM allocations are seen as buffers"));
        }
        let offset = self.ptr as usize - self.base as usize;
        if let Some(buffer) = self.buffer.get() {
            return Ok((buffer.get(), offset));
        }
        // SAFETY: `base` is an SVM allocation of `alloc_size` bytes of this
        // context, which outlives the buffer (released first in `drop`).
        let mem = unsafe {
            cl3::memory::create_buffer(
                self.shared.context.get(),
                CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                self.alloc_size,
                self.base,
            )
        }
        .cl("clCreateBuffer (USE_HOST_PTR over SVM)")?;
        let buffer = self.buffer.get_or_init(|| opencl3::memory::Buffer::new(mem));
        if buffer.get() != mem {
            // Another thread made one first; this one is released unused.
            drop(opencl3::memory::Buffer::<u8>::new(mem));
        }
        tracing::debug!(bytes = self.alloc_size, "SVM allocation wrapped as a buffer");
        Ok((buffer.get(), offset))
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
        kernel_args::memory_released();
        // The buffer over the allocation goes first.
        drop(self.buffer.take());
        let context = self.shared.context.get();
        // SAFETY: allocated in `new` on this context and freed once; the front
        // end drops an allocation only when no command uses it.
        let result = unsafe {
            match &self.shared.device.usm {
                Usm::Intel(api) => api.free(context, self.base),
                _ => cl3::memory::svm_free(context, self.base),
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

    /// A buffer over host memory the application lends it
    /// (`CL_MEM_USE_HOST_PTR`): the driver uses those bytes as the storage or
    /// caches them, as OpenCL allows, and reads into them are defined once
    /// the buffer's commands are done, which is how maps reach them.
    pub(crate) fn over_host(shared: &Shared, size: usize, host: std::ptr::NonNull<u8>) -> Result<ClBuffer> {
        // SAFETY: a valid context; the memory holds `size` bytes and stays
        // valid for the buffer's life (`buffer_over_host`'s contract).
        let mem = unsafe {
            cl3::memory::create_buffer(
                shared.context.get(),
                CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                size,
                host.as_ptr().cast(),
            )
        }
        .cl("clCreateBuffer (USE_HOST_PTR)")?;
        Ok(ClBuffer { buffer: opencl3::memory::Buffer::new(mem) })
    }

    /// A buffer over an adopted `cl_mem`, whose reference it owns.
    pub(crate) fn adopt(mem: cl_mem) -> ClBuffer {
        ClBuffer { buffer: opencl3::memory::Buffer::new(mem) }
    }

    pub(crate) fn mem(&self) -> cl_mem {
        self.buffer.get()
    }
}

impl Drop for ClBuffer {
    /// Before the `cl_mem` is released.
    fn drop(&mut self) {
        kernel_args::memory_released();
    }
}

impl BufferImpl for ClBuffer {
    /// A kernel argument must be a `cl_mem`, so a sub-buffer is a
    /// `clCreateSubBuffer` object (its access inherited from the root
    /// buffer, which is always read-write: see [`ClBuffer::new`]).
    unsafe fn sub_buffer(&self, offset: usize, size: usize, _flags: MemFlags) -> Result<Option<Box<dyn BufferImpl>>> {
        // SAFETY: a valid root buffer; the region lies inside it and its
        // origin is a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN (the trait's
        // contract, from the device's reported alignment).
        let buffer = unsafe { self.buffer.create_sub_buffer(0, offset, size) }.cl("clCreateSubBuffer")?;
        Ok(Some(Box::new(ClBuffer { buffer })))
    }

    /// The `cl_mem`.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(self.mem() as u64))
    }
}

/// Whether device USM of `shared`'s context, a context of several devices
/// whose USM is SVM, is written by kernels on each of them: `Err` with what
/// went wrong where not. NVIDIA's OpenCL (H200, driver 580) allocates SVM in
/// such a context but refuses kernels using it on the first device
/// (`CL_INVALID_KERNEL_ARGS`) and runs them on the second without the
/// writes reaching the allocation, while buffers work on both: no property
/// tells it, so a word per device is filled by the adapter's fill kernel on
/// a queue of that device and read back.
pub(crate) fn svm_reaches_every_device(shared: &Arc<Shared>) -> std::result::Result<(), String> {
    const WORD: usize = 4;
    let n = shared.devices.len();
    let usm = ClUsm::new(shared.clone(), UsmKind::Device, WORD * n, WORD)
        .map_err(|e| format!("a new allocation could not be zeroed: {e}"))?;
    for (index, device) in shared.devices.iter().enumerate() {
        let queue = crate::device::create_queue(&shared.context, device, 0)
            .map_err(|e| format!("no queue on {}: {e}", device.info.name))?;
        let wait = WaitList::default();
        let target = Target::queue(shared, queue.get(), &wait);
        let dst = Side { ptr: Ptr::Usm(usm.ptr), offset: WORD * index };
        let pattern = (index as u32 + 1).to_ne_bytes();
        // SAFETY: the word at `offset` lies inside the allocation of `WORD *
        // n` bytes, which outlives the wait below.
        let launched =
            unsafe { shared.helpers.fill(&shared.context, &shared.device.usm, &target, dst, &pattern, WORD) }
                .map_err(|e| format!("a kernel on {} could not write it: {e}", device.info.name))?;
        let Launched::Event(event) = launched else { return Err("a fill on a queue produced a sync point".into()) };
        cl3::command_queue::flush(queue.get()).map_err(|code| format!("clFlush: {code}"))?;
        event.wait().map_err(|code| format!("a kernel on {} failed ({code})", device.info.name))?;
    }
    let mut words = vec![0u32; n];
    // SAFETY: a blocking copy of `WORD * n` bytes from the allocation into
    // `words`, which holds as many; no command is pending on either.
    let read = unsafe {
        cl3::command_queue::enqueue_svm_mem_cpy(
            shared.internal_queue(),
            cl3::types::CL_TRUE,
            words.as_mut_ptr().cast(),
            usm.ptr,
            WORD * n,
            0,
            std::ptr::null(),
        )
    };
    let event = read.map_err(|code| format!("clEnqueueSVMMemcpy: {code}"))?;
    // SAFETY: a new reference from clEnqueueSVMMemcpy, released on drop.
    drop(unsafe { RawEvent::from_raw(event) });
    let expected: Vec<u32> = (1..=n as u32).collect();
    if words != expected {
        return Err(format!("kernels on the {n} devices wrote {words:?} where {expected:?} was written"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_alignments_over_allocate() {
        assert_eq!(driver_request(100, 0), Some((100, 0)));
        assert_eq!(driver_request(100, 128), Some((100, 128)));
        assert_eq!(driver_request(100, 256), Some((355, 0)));
        assert_eq!(driver_request(100, 4096), Some((4195, 0)));
        assert_eq!(driver_request(usize::MAX, 4096), None);
    }
}
