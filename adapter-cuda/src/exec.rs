//! Issuing one command on a stream: the eager path of every command.

use std::sync::Arc;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{MigrationFlags, UsmAdvice};
use cudarc::driver::sys;

use crate::device::{DEVICE_CPU, DeviceShared};
use crate::driver::cu;
use crate::event::Check;
use crate::lower::{CopyPlan, HostJob, Memset, copy_1d, copy_rect, fill_plan, host_job_once};
use crate::memory::{Loc, buffer_loc, is_managed, mem_loc, usm_loc};
use crate::params::LaunchParams;

/// Issues `command` on `stream`; returns what its event must check once
/// complete (a kernel's status word).
///
/// # Safety
/// The command was validated by the front end (its invariants hold), raw host
/// memory in it stays valid until the command completes, and the caller
/// bound the device's context.
pub(crate) unsafe fn issue(dev: &Arc<DeviceShared>, stream: sys::CUstream, command: &Command) -> Result<Option<Check>> {
    // SAFETY: in every arm, ranges were checked against their allocations,
    // buffers and host slices by the front end, copies do not overlap, and the
    // stream orders the command after its dependencies.
    unsafe {
        match command {
            Command::KernelLaunch(k) => {
                let mut params = LaunchParams::new(dev, k, 0)?;
                if params.empty {
                    return Ok(None);
                }
                // A status word only for a kernel that may store a status
                // (most never name their launch info): the others cost no
                // word from the pool and no check at completion.
                let word = match &params.name {
                    Some(name) => Some((dev.status_word()?, name.clone())),
                    None => None,
                };
                if let Some((word, _)) = &word {
                    params.set_status(word.addr);
                }
                if let Err(e) = params.launch(stream) {
                    if let Some((word, _)) = word {
                        dev.free_word(word);
                    }
                    return Err(e);
                }
                return Ok(word.map(|(word, name)| Check::Kernel(word, name)));
            }
            Command::UsmMemcpy { dst, src, size, .. } => copy(stream, mem_loc(dst)?, mem_loc(src)?, *size)?,
            Command::UsmFill { dst, pattern, size, .. } => fill(stream, usm_loc(dst)?, pattern, *size)?,
            Command::UsmPrefetch { mem, size, flags, .. } => prefetch(dev, stream, mem, *size, *flags)?,
            Command::UsmAdvise { mem, size, advice, .. } => advise(dev, mem, *size, *advice)?,
            Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => {
                copy(stream, buffer_loc(dst, *dst_offset)?, buffer_loc(src, *src_offset)?, *size)?
            }
            Command::BufferCopyRect { src, dst, src_layout, dst_layout, region, .. } => {
                copy_plan(stream, copy_rect(buffer_loc(dst, 0)?, dst_layout, buffer_loc(src, 0)?, src_layout, region))?
            }
            Command::BufferRead { buffer, offset, size, dst, .. } => {
                copy(stream, mem_loc(dst)?, buffer_loc(buffer, *offset)?, *size)?
            }
            Command::BufferWrite { buffer, offset, size, src, .. } => {
                copy(stream, buffer_loc(buffer, *offset)?, mem_loc(src)?, *size)?
            }
            Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst, .. } => {
                copy_plan(stream, copy_rect(mem_loc(dst)?, host_layout, buffer_loc(buffer, 0)?, buffer_layout, region))?
            }
            Command::BufferWriteRect { buffer, buffer_layout, host_layout, region, src, .. } => {
                copy_plan(stream, copy_rect(buffer_loc(buffer, 0)?, buffer_layout, mem_loc(src)?, host_layout, region))?
            }
            Command::BufferFill { buffer, pattern, offset, size, .. } => {
                fill(stream, buffer_loc(buffer, *offset)?, pattern, *size)?
            }
            // Queues issue native commands themselves (`CudaQueue::native_command`),
            // so that the callback runs without the queue's lock.
            Command::Native(_) => {
                return Err(cmdbuf_core::err!(
                    InvalidOperation,
                    "a native command cannot be issued on a locked stream"
                ));
            }
        }
    }
    Ok(None)
}

/// A linear copy: the driver's, through unified addressing (so pinned,
/// managed and pageable memory all work), unless both sides are host memory.
///
/// # Safety
/// Both ranges are valid for `size` bytes until the copy completes.
unsafe fn copy(stream: sys::CUstream, dst: Loc, src: Loc, size: usize) -> Result<()> {
    // SAFETY: both ranges are valid for `size` bytes until the copy completes (this function's
    // `# Safety`), which is what `copy_plan` needs of the plan `copy_1d` builds over them and what
    // `cuMemcpyAsync` needs of its two addresses.
    unsafe {
        match (dst, src) {
            (Loc::Host(_), Loc::Host(_)) => copy_plan(stream, copy_1d(dst, src, size)),
            _ => cu!(cuMemcpyAsync(dst.addr(), src.addr(), size, stream)),
        }
    }
}

/// A copy described by a plan (rect copies).
///
/// # Safety
/// The memory the plan names is valid until the copy completes.
unsafe fn copy_plan(stream: sys::CUstream, plan: CopyPlan) -> Result<()> {
    // SAFETY: the memory the plan names is valid until the copy completes (this function's
    // `# Safety`), as `cuMemcpy3DAsync_v2` and `host_job` need.
    unsafe {
        match plan {
            CopyPlan::Driver(c) => cu!(cuMemcpy3DAsync_v2(&c, stream)),
            CopyPlan::Host(job) => host_job(stream, job),
        }
    }
}

/// Runs one memset of a fill plan on a stream.
///
/// # Safety
/// The memset's rows lie in device-accessible memory.
pub(crate) unsafe fn memset(stream: sys::CUstream, m: &Memset) -> Result<()> {
    // SAFETY: the rows lie in device-accessible memory (this function's `# Safety`); the plan keeps
    // each element aligned to its size, as the `cuMemsetD*` calls need.
    unsafe {
        match (m.elem, m.height) {
            (1, 1) => cu!(cuMemsetD8Async(m.dst, m.value as u8, m.width, stream)),
            (2, 1) => cu!(cuMemsetD16Async(m.dst, m.value as u16, m.width, stream)),
            (4, 1) => cu!(cuMemsetD32Async(m.dst, m.value, m.width, stream)),
            (1, _) => cu!(cuMemsetD2D8Async(m.dst, m.pitch, m.value as u8, m.width, m.height, stream)),
            (2, _) => cu!(cuMemsetD2D16Async(m.dst, m.pitch, m.value as u16, m.width, m.height, stream)),
            _ => cu!(cuMemsetD2D32Async(m.dst, m.pitch, m.value, m.width, m.height, stream)),
        }
    }
}

/// Fills device memory with memsets, and pinned host memory on the host,
/// from a host function in stream order (memsets are for device memory).
///
/// # Safety
/// `[dst, dst + size)` is valid memory until the fill completes.
unsafe fn fill(stream: sys::CUstream, dst: Loc, pattern: &[u8], size: usize) -> Result<()> {
    match dst {
        Loc::Device(addr) => {
            for m in fill_plan(addr, pattern, size) {
                // SAFETY: the plan stays inside the range (forwarded contract).
                unsafe { memset(stream, &m)? };
            }
            Ok(())
        }
        // SAFETY: `[dst, dst + size)` is valid until the fill completes (this function's `# Safety`),
        // so the job names valid memory until it has run, as `host_job` requires.
        Loc::Host(p) => unsafe { host_job(stream, HostJob::Fill { dst: p as usize, pattern: pattern.into(), size }) },
    }
}

/// Runs `job` on the driver's callback thread in stream order.
///
/// # Safety
/// The memory the job names stays valid until the job has run.
unsafe fn host_job(stream: sys::CUstream, job: HostJob) -> Result<()> {
    let data = Box::into_raw(Box::new(job)).cast::<std::ffi::c_void>();
    // SAFETY: the callback takes the box back exactly once.
    if let Err(e) = unsafe { cu!(cuLaunchHostFunc(stream, Some(host_job_once), data)) } {
        // SAFETY: the callback was not enqueued; reclaim the box.
        drop(unsafe { Box::from_raw(data.cast::<HostJob>()) });
        return Err(e);
    }
    Ok(())
}

/// Prefetches managed memory where the device can; elsewhere (device or host
/// USM, or no concurrent managed access) there is nothing to migrate.
fn prefetch(dev: &DeviceShared, stream: sys::CUstream, mem: &UsmRef, size: usize, flags: MigrationFlags) -> Result<()> {
    if !is_managed(mem) || !dev.limits.concurrent_managed {
        return Ok(());
    }
    let target = if flags.contains(MigrationFlags::DEVICE_TO_HOST) { DEVICE_CPU } else { dev.device };
    // SAFETY: the range lies in a managed allocation (checked by the front end).
    unsafe { cu!(cuMemPrefetchAsync(mem.address(), size, target, stream)) }
}

/// Applies advice to managed memory. `cuMemAdvise` is not stream-ordered:
/// advice is a property of the range from now on, as it is in UR's CUDA
/// adapter. Advice without a CUDA counterpart (non-atomic, caching bias,
/// coherence) and
/// advice on memory that is not managed changes nothing.
pub(crate) fn advise(dev: &DeviceShared, mem: &UsmRef, size: usize, advice: UsmAdvice) -> Result<()> {
    use sys::CUmem_advise as A;
    if !is_managed(mem) || !dev.limits.concurrent_managed {
        return Ok(());
    }
    let pairs = [
        (UsmAdvice::SET_READ_MOSTLY, A::CU_MEM_ADVISE_SET_READ_MOSTLY, dev.device),
        (UsmAdvice::CLEAR_READ_MOSTLY, A::CU_MEM_ADVISE_UNSET_READ_MOSTLY, dev.device),
        (UsmAdvice::SET_PREFERRED_LOCATION, A::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev.device),
        (UsmAdvice::CLEAR_PREFERRED_LOCATION, A::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, dev.device),
        (UsmAdvice::SET_PREFERRED_LOCATION_HOST, A::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, DEVICE_CPU),
        (UsmAdvice::CLEAR_PREFERRED_LOCATION_HOST, A::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, DEVICE_CPU),
        (UsmAdvice::SET_ACCESSED_BY_DEVICE, A::CU_MEM_ADVISE_SET_ACCESSED_BY, dev.device),
        (UsmAdvice::CLEAR_ACCESSED_BY_DEVICE, A::CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev.device),
        (UsmAdvice::SET_ACCESSED_BY_HOST, A::CU_MEM_ADVISE_SET_ACCESSED_BY, DEVICE_CPU),
        (UsmAdvice::CLEAR_ACCESSED_BY_HOST, A::CU_MEM_ADVISE_UNSET_ACCESSED_BY, DEVICE_CPU),
    ];
    for (flag, cuda, target) in pairs {
        if advice.contains(flag) {
            // SAFETY: the range lies in a managed allocation (checked by the front end).
            unsafe { cu!(cuMemAdvise(mem.address(), size, cuda, target))? };
        }
    }
    Ok(())
}
