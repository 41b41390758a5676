//! USM allocations and memory buffers, and where a command's memory lives.
//!
//! - device USM and buffers: `cuMemAlloc`;
//! - host USM and `ALLOC_HOST_POINTER` buffers: pinned, device-mapped host
//!   memory (`cuMemHostAlloc` with `DEVICEMAP | PORTABLE`); with unified
//!   addressing its device address is its host address;
//! - shared USM: managed memory (`cuMemAllocManaged`, attached globally).
//!
//! Every allocation is zeroed before it is handed out. Alignments beyond what
//! the driver gives (256 bytes for device and managed memory, a page for host
//! memory) are met by over-allocating. Memory is freed through the device's
//! deferred release (see [`DeviceShared::release`]).

use std::any::Any;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use cmdbuf_core::adapter::Backing as _;
use cmdbuf_core::adapter::prelude::*;
use cudarc::driver::sys;

use crate::device::{DeviceShared, Release};
use crate::driver::cu;

/// What the driver aligns allocations to without being asked.
const DEVICE_ALIGN: usize = 256;
const HOST_ALIGN: usize = 4096;

/// The memory behind an allocation.
#[derive(Copy, Clone, Debug)]
enum Backing {
    Device(sys::CUdeviceptr),
    Host(*mut c_void),
    Managed(sys::CUdeviceptr),
    /// Host memory the application lent a buffer, page-locked and mapped for
    /// the device (`cuMemHostRegister`); `true` where this allocation
    /// registered it (and unregisters it), `false` where it already was.
    Lent(*mut c_void, bool),
}

/// An allocation: its backing and the aligned address handed out.
struct Allocation {
    dev: Arc<DeviceShared>,
    backing: Backing,
    /// The (aligned) device address of the first byte.
    addr: u64,
}

// SAFETY: the allocation owns its memory; access is governed by the commands
// that use it, which the API orders.
unsafe impl Send for Allocation {}
// SAFETY: as for Send.
unsafe impl Sync for Allocation {}

impl Allocation {
    fn new(dev: &Arc<DeviceShared>, kind: UsmKind, size: usize, align: usize) -> Result<Allocation> {
        dev.bind()?;
        let natural = if kind == UsmKind::Host { HOST_ALIGN } else { DEVICE_ALIGN };
        let extra = if align > natural { align } else { 0 };
        let bytes = size.checked_add(extra).ok_or_else(|| err!(InvalidUsmSize, "{size} bytes aligned to {align}"))?;
        let (backing, base) = match kind {
            UsmKind::Device => {
                let mut p: sys::CUdeviceptr = 0;
                // SAFETY: writes a new allocation of `bytes` bytes into `p`; the context is bound.
                unsafe { cu!(cuMemAlloc_v2(&mut p, bytes))? };
                (Backing::Device(p), p)
            }
            UsmKind::Host => {
                let mut p: *mut c_void = ptr::null_mut();
                let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
                // SAFETY: writes a new pinned allocation of `bytes` bytes into `p`.
                unsafe { cu!(cuMemHostAlloc(&mut p, bytes, flags))? };
                let mut d: sys::CUdeviceptr = 0;
                // SAFETY: `p` was allocated with DEVICEMAP; writes its device address.
                if let Err(e) = unsafe { cu!(cuMemHostGetDevicePointer_v2(&mut d, p, 0)) } {
                    dev.release(Release::HostMemory(p));
                    return Err(e);
                }
                (Backing::Host(p), d)
            }
            UsmKind::Shared => {
                let mut p: sys::CUdeviceptr = 0;
                let global = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
                // SAFETY: writes a new managed allocation of `bytes` bytes into `p`.
                unsafe { cu!(cuMemAllocManaged(&mut p, bytes, global))? };
                (Backing::Managed(p), p)
            }
        };
        let addr = if extra > 0 { base.next_multiple_of(align as u64) } else { base };
        let allocation = Allocation { dev: dev.clone(), backing, addr };
        allocation.zero(bytes)?;
        Ok(allocation)
    }

    /// Lent host memory, registered with the driver (page-locked and mapped
    /// for the device) so that kernels and copies use it in place.
    ///
    /// # Safety
    /// `[host, host + size)` stays valid until the allocation is dropped.
    unsafe fn lent(dev: &Arc<DeviceShared>, host: *mut c_void, size: usize) -> Result<Allocation> {
        dev.bind()?;
        let flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;
        // SAFETY: the range is valid host memory for the allocation's life
        // (the caller's contract); registration pins its pages.
        let registered = match unsafe { sys::cuMemHostRegister_v2(host, size, flags) } {
            sys::CUresult::CUDA_SUCCESS => true,
            // Registered already (by the application, or another buffer over
            // the same memory): used as it is, and left registered.
            sys::CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => false,
            other => return Err(crate::driver::cu_error(other, "cuMemHostRegister (USE_HOST_POINTER)")),
        };
        // Made before the query so that a failed query unregisters the memory.
        let mut allocation = Allocation { dev: dev.clone(), backing: Backing::Lent(host, registered), addr: 0 };
        // SAFETY: the memory is registered with DEVICEMAP; writes its device address.
        unsafe { cu!(cuMemHostGetDevicePointer_v2(&mut allocation.addr, host, 0))? };
        Ok(allocation)
    }

    /// Zeroes the whole backing (alignment slack included) before first use.
    fn zero(&self, bytes: usize) -> Result<()> {
        match self.backing {
            // SAFETY: the pinned block holds `bytes` bytes and nothing else uses it yet.
            Backing::Host(p) | Backing::Lent(p, _) => unsafe { ptr::write_bytes(p.cast::<u8>(), 0, bytes) },
            Backing::Device(p) | Backing::Managed(p) => {
                let stream = self.dev.internal();
                // SAFETY: the allocation holds `bytes` bytes; the internal stream
                // is synchronised before the memory is handed out.
                unsafe { cu!(cuMemsetD8Async(p, 0, bytes, stream.raw()))? };
                stream.synchronize()?;
            }
        }
        Ok(())
    }

    fn host_ptr(&self) -> Option<*mut u8> {
        match self.backing {
            Backing::Device(_) => None,
            // With unified addressing, host and managed memory have one address for both sides.
            Backing::Host(_) | Backing::Managed(_) | Backing::Lent(..) => Some(self.addr as *mut u8),
        }
    }

    fn loc(&self, offset: usize) -> Loc {
        let addr = self.addr + offset as u64;
        match self.backing {
            Backing::Host(_) | Backing::Lent(..) => Loc::Host(addr as *mut u8),
            Backing::Device(_) | Backing::Managed(_) => Loc::Device(addr),
        }
    }

    /// The address `offset` bytes in where this is plain device memory of
    /// `dev`: what the device's own kernels may read and write without
    /// migration or peer access.
    fn on_device(&self, dev: &DeviceShared, offset: usize) -> Option<u64> {
        let own = ptr::eq(&*self.dev, dev) && matches!(self.backing, Backing::Device(_));
        own.then(|| self.addr + offset as u64)
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.dev.release(match self.backing {
            Backing::Device(p) | Backing::Managed(p) => Release::DeviceMemory(p),
            Backing::Host(p) => Release::HostMemory(p),
            Backing::Lent(p, true) => Release::HostRegistration(p),
            Backing::Lent(_, false) => return,
        });
    }
}

/// A USM allocation.
pub(crate) struct CudaUsm {
    allocation: Allocation,
    kind: UsmKind,
}

impl CudaUsm {
    pub(crate) fn new(dev: &Arc<DeviceShared>, kind: UsmKind, size: usize, align: usize) -> Result<CudaUsm> {
        Ok(CudaUsm { allocation: Allocation::new(dev, kind, size, align)?, kind })
    }
}

impl UsmImpl for CudaUsm {
    fn address(&self) -> u64 {
        self.allocation.addr
    }

    fn host_ptr(&self) -> Option<*mut u8> {
        debug_assert!(self.kind != UsmKind::Device || self.allocation.host_ptr().is_none());
        self.allocation.host_ptr()
    }
}

/// A memory buffer: device memory, or pinned host memory when created with
/// `ALLOC_HOST_POINTER`.
pub(crate) struct CudaBuffer {
    allocation: Allocation,
}

impl CudaBuffer {
    pub(crate) fn new(
        dev: &Arc<DeviceShared>,
        flags: MemFlags,
        size: usize,
        init: Option<&[u8]>,
    ) -> Result<CudaBuffer> {
        let kind = if flags.contains(MemFlags::ALLOC_HOST_POINTER) { UsmKind::Host } else { UsmKind::Device };
        let allocation = Allocation::new(dev, kind, size, 0)?;
        if let Some(init) = init {
            match allocation.backing {
                // SAFETY: the block holds `size` bytes and `init` exactly `size`.
                Backing::Host(p) => unsafe { ptr::copy_nonoverlapping(init.as_ptr(), p.cast::<u8>(), size) },
                _ => {
                    let stream = dev.internal();
                    // SAFETY: `init` is pageable host memory of `size` bytes,
                    // read before the synchronisation below returns.
                    unsafe { cu!(cuMemcpyHtoDAsync_v2(allocation.addr, init.as_ptr().cast(), size, stream.raw()))? };
                    stream.synchronize()?;
                }
            }
        }
        Ok(CudaBuffer { allocation })
    }

    /// A buffer over lent host memory, registered with the driver and used
    /// in place (as UR's CUDA adapter does for `USE_HOST_POINTER`): kernels
    /// reach it over the bus.
    ///
    /// # Safety
    /// `[host, host + size)` stays valid for the buffer's life.
    pub(crate) unsafe fn over_host(dev: &Arc<DeviceShared>, host: ptr::NonNull<u8>, size: usize) -> Result<CudaBuffer> {
        // SAFETY: the range stays valid for the buffer's life, which is the
        // allocation's, as `lent` requires.
        Ok(CudaBuffer { allocation: unsafe { Allocation::lent(dev, host.as_ptr().cast(), size)? } })
    }

    /// The device address of the buffer's first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.allocation.addr
    }
}

impl BufferImpl for CudaBuffer {
    /// The `CUdeviceptr` of the first byte.
    fn native_handle(&self) -> Result<cmdbuf_core::NativeHandle> {
        Ok(cmdbuf_core::NativeHandle(self.addr()))
    }

    fn host_memory(&self) -> Option<ptr::NonNull<u8>> {
        match self.allocation.backing {
            Backing::Lent(p, _) => ptr::NonNull::new(p.cast()),
            _ => None,
        }
    }
}

/// Where one side of a copy lives, as the driver's copy descriptors want it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Loc {
    /// Device memory (device and managed allocations, device buffers).
    Device(u64),
    /// Host memory: pinned (host USM, host buffers) or pageable (raw host pointers).
    Host(*mut u8),
}

impl Loc {
    /// The address as unified addressing sees it.
    pub(crate) fn addr(self) -> u64 {
        match self {
            Loc::Device(a) => a,
            Loc::Host(p) => p as u64,
        }
    }

    /// The same memory `offset` bytes further.
    pub(crate) fn add(self, offset: usize) -> Loc {
        match self {
            Loc::Device(a) => Loc::Device(a + offset as u64),
            // Address arithmetic only; the front end checked the bounds.
            Loc::Host(p) => Loc::Host(p.wrapping_add(offset)),
        }
    }
}

/// The adapter's buffer behind a front-end buffer.
pub(crate) fn cuda_buffer(buffer: &MemBuffer) -> Result<&CudaBuffer> {
    downcast::<CudaBuffer>(buffer.imp() as &dyn Any, "a memory buffer")
}

/// Where `offset` bytes into `buffer` lives.
pub(crate) fn buffer_loc(buffer: &MemBuffer, offset: usize) -> Result<Loc> {
    Ok(cuda_buffer(buffer)?.allocation.loc(offset))
}

/// The address of `offset` bytes into `buffer` where that is plain device
/// memory of `dev` (see `Allocation::on_device`).
pub(crate) fn buffer_on_device(buffer: &MemBuffer, offset: usize, dev: &DeviceShared) -> Result<Option<u64>> {
    Ok(cuda_buffer(buffer)?.allocation.on_device(dev, offset))
}

/// The allocation behind a USM position.
fn cuda_usm(usm: &UsmRef) -> Result<&CudaUsm> {
    downcast::<CudaUsm>(usm.imp() as &dyn Any, "a USM allocation")
}

/// The address of a USM position where it is plain device memory of `dev`.
pub(crate) fn usm_on_device(usm: &UsmRef, dev: &DeviceShared) -> Result<Option<u64>> {
    Ok(cuda_usm(usm)?.allocation.on_device(dev, usm.offset()))
}

/// The address of a USM position or host location where it is plain device
/// memory of `dev`.
pub(crate) fn mem_on_device(loc: &MemLoc, dev: &DeviceShared) -> Result<Option<u64>> {
    match loc {
        MemLoc::Usm(r) => usm_on_device(r, dev),
        MemLoc::Host(_) => Ok(None),
    }
}

/// Where a USM position lives.
pub(crate) fn usm_loc(usm: &UsmRef) -> Result<Loc> {
    Ok(cuda_usm(usm)?.allocation.loc(usm.offset()))
}

/// Where a host-side location lives.
pub(crate) fn mem_loc(loc: &MemLoc) -> Result<Loc> {
    match loc {
        MemLoc::Usm(r) => usm_loc(r),
        MemLoc::Host(h) => Ok(Loc::Host(h.as_ptr())),
    }
}

/// Whether a USM position is managed memory (prefetch and advice apply).
pub(crate) fn is_managed(usm: &UsmRef) -> bool {
    usm.kind() == UsmKind::Shared
}
