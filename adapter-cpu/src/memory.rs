//! USM allocations and buffers: aligned, zeroed host memory.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;
use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;

/// Alignment of every allocation unless a larger one is asked for: a cache
/// line, so that work-groups writing neighbouring ranges do not share lines
/// across allocations.
pub(crate) const DEFAULT_ALIGN: usize = 64;

/// A block of host memory, freed on drop unless lent. Device, host and
/// shared USM and memory buffers are all host memory on this adapter.
pub(crate) struct HostBlock {
    ptr: NonNull<u8>,
    /// How the block was allocated; `None` for memory the application lent
    /// a buffer (`USE_HOST_POINTER`), which stays the application's.
    layout: Option<Layout>,
}

// SAFETY: HostBlock owns its memory exclusively, or borrows it for the
// buffer's life under `ContextImpl::buffer_over_host`'s contract; access to
// the bytes is governed by the commands that use it, whose ordering the API
// defines.
unsafe impl Send for HostBlock {}
// SAFETY: as for Send; the block itself holds no interior state.
unsafe impl Sync for HostBlock {}

impl HostBlock {
    pub(crate) fn new(size: usize, align: usize) -> Result<HostBlock> {
        let layout = Layout::from_size_align(size, align.max(DEFAULT_ALIGN))
            .map_err(|e| err!(UnsupportedAlignment, "{size} bytes aligned to {align}: {e}"))?;
        // SAFETY: the layout has a non-zero size (the front end rejects 0).
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or_else(|| err!(OutOfHostMemory, "cannot allocate {size} bytes"))?;
        Ok(HostBlock { ptr, layout: Some(layout) })
    }

    /// A block over host memory the application lends for the block's life.
    pub(crate) fn lent(ptr: NonNull<u8>) -> HostBlock {
        HostBlock { ptr, layout: None }
    }

    /// Whether the memory is the application's (a `USE_HOST_POINTER` buffer).
    pub(crate) fn is_lent(&self) -> bool {
        self.layout.is_none()
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

/// A USM allocation of any kind.
pub(crate) struct CpuUsm(pub(crate) HostBlock);

impl UsmImpl for CpuUsm {
    fn address(&self) -> u64 {
        self.0.ptr() as u64
    }

    fn host_ptr(&self) -> Option<*mut u8> {
        Some(self.0.ptr())
    }
}

/// A memory buffer.
/// Its memory is shared with the buffers adopted from its native handle.
pub(crate) struct CpuBuffer(pub(crate) Arc<HostBlock>);

impl BufferImpl for CpuBuffer {
    /// The host address of the buffer's first byte: what native host work
    /// reads and writes.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(self.0.ptr() as u64))
    }

    /// Lent memory is the buffer's storage, as every buffer's is host
    /// memory here; only lent memory is answered, so that maps of the
    /// adapter's own buffers keep OpenCL's copy-out semantics.
    fn host_memory(&self) -> Option<NonNull<u8>> {
        self.0.is_lent().then_some(self.0.ptr)
    }
}
