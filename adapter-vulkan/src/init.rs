//! New memory's initial contents: USM zeroed and memory buffers zeroed or
//! filled at creation, on the host where the memory is mapped, else by work
//! run on the device's first lane. Above the device's shared state, whose
//! lanes run that work; the memory's definitions (`memory.rs`) sit below it.

use std::ptr::NonNull;

use ash::vk;
use cmdbuf_core::adapter::prelude::*;

use crate::memory::{Allocation, DEFAULT_USM_ALIGN, MemKind, VkMemBuffer, VkUsm};
use crate::shared::DeviceShared;

impl Allocation {
    /// Zeroes `[offset, offset + len)`: on the host where mapped, else with a
    /// device fill.
    pub(crate) fn zero(&self, rt: &DeviceShared, offset: u64, len: u64) -> Result<()> {
        if let Some(p) = self.mapped() {
            // SAFETY: the range lies in the mapping, which no command uses yet.
            unsafe { std::ptr::write_bytes(p.add(offset as usize), 0, len as usize) };
            return Ok(());
        }
        let buffer = self.buffer();
        // vkCmdFillBuffer works on whole words: round the range out (the
        // buffer has whole words, and the bytes around belong to it).
        let (start, end) = (offset & !3, (offset + len).next_multiple_of(4));
        rt.run_now(|cb| {
            // SAFETY: recording; the range is inside the buffer and 4-aligned.
            unsafe { rt.gpu.device.cmd_fill_buffer(cb, buffer, start, end - start, 0) }
        })
    }

    /// Writes `data` at `offset`: on the host where mapped, else through staging.
    pub(crate) fn upload(&self, rt: &DeviceShared, offset: u64, data: &[u8]) -> Result<()> {
        if let Some(p) = self.mapped() {
            // SAFETY: the range lies in the mapping, which no command uses yet.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.add(offset as usize), data.len()) };
            return Ok(());
        }
        let staging = rt.arena.alloc(data.len() as u64)?;
        // SAFETY: the slice has `data.len()` bytes of mapped memory.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), staging.ptr(), data.len()) };
        let region = [vk::BufferCopy { src_offset: staging.offset(), dst_offset: offset, size: data.len() as u64 }];
        let (src, dst) = (staging.buffer(), self.buffer());
        // SAFETY: recording; both ranges lie in their buffers.
        rt.run_now(|cb| unsafe { rt.gpu.device.cmd_copy_buffer(cb, src, dst, &region) })
    }
}

impl VkUsm {
    /// Allocates `size` bytes of `kind` memory whose address is a multiple of
    /// `align` (a power of two, 0 for the default), zeroed.
    pub(crate) fn new(rt: &DeviceShared, kind: MemKind, size: u64, align: u64) -> Result<VkUsm> {
        let align = align.max(DEFAULT_USM_ALIGN);
        let mut alloc = Allocation::with_fallback(&rt.gpu, size, kind)?;
        if !alloc.address().is_multiple_of(align) {
            // Addresses are usually aligned far beyond this; when not, pad.
            let padded =
                size.checked_add(align).ok_or_else(|| err!(UnsupportedAlignment, "{size} + {align} overflows"))?;
            alloc = Allocation::with_fallback(&rt.gpu, padded, kind)
                .map_err(|e| err!(UnsupportedAlignment, "cannot align {size} bytes to {align}: {e}"))?;
        }
        let offset = alloc.address().next_multiple_of(align) - alloc.address();
        tracing::trace!(
            device = ?rt.gpu.device.handle(),
            address = format_args!("{:#x}", alloc.address() + offset),
            size,
            ?kind,
            "USM allocation"
        );
        alloc.zero(rt, offset, size)?;
        Ok(VkUsm { alloc, offset })
    }
}

impl VkMemBuffer {
    /// A buffer of `size` bytes holding `init`, or zeroes.
    pub(crate) fn new(rt: &DeviceShared, kind: MemKind, size: u64, init: Option<&[u8]>) -> Result<VkMemBuffer> {
        let alloc = Allocation::with_fallback(&rt.gpu, size, kind)?;
        match init {
            Some(data) => alloc.upload(rt, 0, data)?,
            None => alloc.zero(rt, 0, size)?,
        }
        Ok(VkMemBuffer { alloc, start: 0, lent: None })
    }

    /// A buffer over lent host memory: imported and used in place where the
    /// device imports host memory, else a copy in memory of its own.
    ///
    /// # Safety
    /// `[host, host + size)` stays valid for the buffer's life.
    pub(crate) unsafe fn over_host(rt: &DeviceShared, host: NonNull<u8>, size: u64) -> Result<VkMemBuffer> {
        // SAFETY: the range stays valid for the buffer's life, which is the
        // allocation's, as `import_host` requires.
        if let Some((alloc, start)) = unsafe { Allocation::import_host(&rt.gpu, host, size)? } {
            return Ok(VkMemBuffer { alloc, start, lent: Some(host) });
        }
        // SAFETY: the memory holds `size` readable bytes (the caller's contract).
        let init = unsafe { std::slice::from_raw_parts(host.as_ptr(), size as usize) };
        VkMemBuffer::new(rt, MemKind::Device, size, Some(init))
    }
}
