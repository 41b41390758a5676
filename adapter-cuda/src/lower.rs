//! Commands turned into the driver's descriptions: copy descriptors
//! (`CUDA_MEMCPY3D`, for eager rect copies and every graph copy), fill plans
//! (memsets, for eager fills and graph memset nodes), and host jobs for what
//! only touches host memory (a copy between two host buffers, a fill of
//! pinned host memory), run by host functions in stream or graph order.

use std::ffi::c_void;
use std::ptr;

use cmdbuf_core::rect::for_each_row;
use cmdbuf_core::{Pattern, RectLayout, RectRegion};
use cudarc::driver::sys;
use smallvec::SmallVec;

use crate::memory::Loc;

/// A copy descriptor for `width` bytes, `height` rows and `depth` slices.
fn memcpy3d(
    dst: Loc,
    dst_pitches: (usize, usize),
    src: Loc,
    src_pitches: (usize, usize),
    region: (usize, usize, usize),
) -> sys::CUDA_MEMCPY3D {
    let (src_type, src_device, src_host) = match src {
        Loc::Device(a) => (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, a, ptr::null()),
        Loc::Host(p) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, 0, p.cast_const().cast()),
    };
    let (dst_type, dst_device, dst_host) = match dst {
        Loc::Device(a) => (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, a, ptr::null_mut()),
        Loc::Host(p) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, 0, p.cast()),
    };
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: ptr::null_mut(),
        reserved0: ptr::null_mut(),
        srcPitch: src_pitches.0,
        srcHeight: src_pitches.1 / src_pitches.0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: ptr::null_mut(),
        reserved1: ptr::null_mut(),
        dstPitch: dst_pitches.0,
        dstHeight: dst_pitches.1 / dst_pitches.0,
        WidthInBytes: region.0,
        Height: region.1,
        Depth: region.2,
    }
}

/// How a copy runs: by the driver, or on the host when both sides are host
/// memory (the driver's copies want a device on one side).
pub(crate) enum CopyPlan {
    Driver(sys::CUDA_MEMCPY3D),
    Host(HostJob),
}

/// A linear copy of `size` bytes.
pub(crate) fn copy_1d(dst: Loc, src: Loc, size: usize) -> CopyPlan {
    match (dst, src) {
        (Loc::Host(d), Loc::Host(s)) => CopyPlan::Host(HostJob::Copy(vec![(d as usize, s as usize, size)])),
        _ => CopyPlan::Driver(memcpy3d(dst, (size, size), src, (size, size), (size, 1, 1))),
    }
}

/// A rect copy; the layouts are resolved (non-zero pitches, slice pitch a
/// multiple of the row pitch), relative to `dst` and `src`.
pub(crate) fn copy_rect(
    dst: Loc,
    dst_layout: &RectLayout,
    src: Loc,
    src_layout: &RectLayout,
    region: &RectRegion,
) -> CopyPlan {
    if let (Loc::Host(d), Loc::Host(s)) = (dst, src) {
        let mut rows = Vec::with_capacity(region.height * region.depth);
        for_each_row(src_layout, dst_layout, region, |so, doff, n| rows.push((d as usize + doff, s as usize + so, n)));
        return CopyPlan::Host(HostJob::Copy(rows));
    }
    CopyPlan::Driver(memcpy3d(
        dst.add(dst_layout.origin_offset()),
        (dst_layout.row_pitch, dst_layout.slice_pitch),
        src.add(src_layout.origin_offset()),
        (src_layout.row_pitch, src_layout.slice_pitch),
        (region.width, region.height, region.depth),
    ))
}

/// Work on host memory run by a host function.
pub(crate) enum HostJob {
    /// Rows to copy: (destination, source, bytes).
    Copy(Vec<(usize, usize, usize)>),
    /// Repeat a pattern over `size` bytes (a multiple of its length).
    Fill { dst: usize, pattern: Pattern, size: usize },
}

// SAFETY: a job is plain addresses and bytes; the command that made it
// guarantees the memory for whichever thread runs it.
unsafe impl Send for HostJob {}

impl HostJob {
    /// # Safety
    /// The memory the job names is valid and not used by anything else while it runs.
    unsafe fn run(&self) {
        match self {
            HostJob::Copy(rows) => {
                for (dst, src, n) in rows {
                    // SAFETY: the memory the job names is valid and used by nothing else while it runs
                    // (this function's `# Safety`); `ptr::copy` tolerates overlap, which the front end
                    // rules out anyway.
                    unsafe { ptr::copy(*src as *const u8, *dst as *mut u8, *n) };
                }
            }
            HostJob::Fill { dst, pattern, size } => {
                let n = pattern.len();
                for at in (0..*size).step_by(n) {
                    // SAFETY: `at + n <= size` (size is a multiple of n); forwarded contract.
                    unsafe { ptr::copy_nonoverlapping(pattern.as_ptr(), (*dst + at) as *mut u8, n) };
                }
            }
        }
    }
}

/// Host function of an eager host job: owns the job.
pub(crate) unsafe extern "C" fn host_job_once(data: *mut c_void) {
    // SAFETY: `data` is a `Box<HostJob>` leaked by its submitter, taken back once here.
    let job = unsafe { Box::from_raw(data.cast::<HostJob>()) };
    // SAFETY: the command's memory is valid until the command completes.
    unsafe { job.run() };
}

/// Host function of a graph's host job: the command buffer owns the job.
pub(crate) unsafe extern "C" fn host_job_kept(data: *mut c_void) {
    // SAFETY: `data` points to a `HostJob` the command buffer keeps while its graph may run.
    unsafe { (*data.cast::<HostJob>()).run() };
}

/// One memset: `height` rows of `width` elements of `elem` bytes (1, 2 or 4),
/// rows `pitch` bytes apart, each element set to `value`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Memset {
    pub(crate) dst: u64,
    pub(crate) pitch: usize,
    pub(crate) value: u32,
    pub(crate) elem: u32,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

impl Memset {
    /// The graph node parameters of this memset.
    pub(crate) fn node_params(&self) -> sys::CUDA_MEMSET_NODE_PARAMS {
        sys::CUDA_MEMSET_NODE_PARAMS {
            dst: self.dst,
            pitch: self.pitch,
            value: self.value,
            elementSize: self.elem,
            width: self.width,
            height: self.height,
        }
    }
}

fn element(bytes: &[u8]) -> u32 {
    let mut v = [0u8; 4];
    v[..bytes.len()].copy_from_slice(bytes);
    u32::from_le_bytes(v)
}

/// Memsets that repeat `pattern` over `size` bytes from `dst` (`size` a
/// multiple of the pattern's length).
///
/// CUDA sets elements of 1, 2 or 4 bytes. A pattern of that length at an
/// aligned address is one linear memset. Any other pattern becomes one
/// strided memset per element of the pattern: element `j` is written at
/// `dst + j * e`, once per repetition, rows `pattern.len()` bytes apart,
/// where `e` is the largest of 4, 2 and 1 dividing both the pattern's length
/// and the address.
pub(crate) fn fill_plan(dst: u64, pattern: &[u8], size: usize) -> SmallVec<[Memset; 4]> {
    let n = pattern.len();
    let count = size / n;
    let mut plan = SmallVec::new();
    if matches!(n, 1 | 2 | 4) && dst.is_multiple_of(n as u64) {
        plan.push(Memset { dst, pitch: size, value: element(pattern), elem: n as u32, width: count, height: 1 });
        return plan;
    }
    let e = [4usize, 2, 1].into_iter().find(|e| n.is_multiple_of(*e) && dst.is_multiple_of(*e as u64)).unwrap_or(1);
    for j in 0..n / e {
        plan.push(Memset {
            dst: dst + (j * e) as u64,
            pitch: n,
            value: element(&pattern[j * e..(j + 1) * e]),
            elem: e as u32,
            width: 1,
            height: count,
        });
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a plan on host memory the way the device would.
    fn apply(plan: &[Memset], base: u64, memory: &mut [u8]) {
        for m in plan {
            let bytes = m.value.to_le_bytes();
            for row in 0..m.height {
                for x in 0..m.width {
                    let at = (m.dst - base) as usize + row * m.pitch + x * m.elem as usize;
                    memory[at..at + m.elem as usize].copy_from_slice(&bytes[..m.elem as usize]);
                }
            }
        }
    }

    #[test]
    fn every_pattern_length_and_alignment_fills_exactly() {
        for n in [1usize, 2, 3, 4, 5, 8, 12, 16, 255, 256] {
            for misalign in [0u64, 1, 2, 3, 4] {
                let pattern: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
                let size = n * 7;
                let base = 0x1000u64;
                let dst = base + 8 + misalign;
                let plan = fill_plan(dst, &pattern, size);
                let mut memory = vec![0xEEu8; size + 32];
                apply(&plan, base, &mut memory);
                let start = 8 + misalign as usize;
                let expected: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
                assert_eq!(&memory[start..start + size], &expected[..], "n={n} misalign={misalign}");
                assert!(memory[..start].iter().all(|b| *b == 0xEE));
                assert!(memory[start + size..].iter().all(|b| *b == 0xEE));
                for m in &plan {
                    assert!(m.dst.is_multiple_of(u64::from(m.elem)) && m.pitch.is_multiple_of(m.elem as usize));
                }
            }
        }
    }

    #[test]
    fn aligned_small_patterns_are_one_memset() {
        assert_eq!(fill_plan(0x100, &[7], 64).len(), 1);
        assert_eq!(fill_plan(0x100, &[1, 2], 64).len(), 1);
        assert_eq!(fill_plan(0x100, &[1, 2, 3, 4], 64)[0].elem, 4);
        assert_eq!(fill_plan(0x100, &[0; 16], 64).len(), 4);
        assert_eq!(fill_plan(0x101, &[1, 2, 3, 4], 64).len(), 4);
    }

    #[test]
    fn rect_descriptors_fold_the_origin_into_the_address() {
        let region = RectRegion::new(4, 2, 2);
        let src = RectLayout::new(cmdbuf_core::RectOffset::new(1, 1, 1), 8, 32).resolve(&region, "s").unwrap();
        let dst = RectLayout::packed().resolve(&region, "d").unwrap();
        let CopyPlan::Driver(c) = copy_rect(Loc::Host(0x2000 as *mut u8), &dst, Loc::Device(0x1000), &src, &region)
        else {
            panic!("a device side makes a driver copy")
        };
        assert_eq!(c.srcDevice, 0x1000 + 32 + 8 + 1);
        assert_eq!((c.srcPitch, c.srcHeight), (8, 4));
        assert_eq!((c.dstPitch, c.dstHeight), (4, 2));
        assert_eq!((c.WidthInBytes, c.Height, c.Depth), (4, 2, 2));
        assert_eq!(c.dstHost as usize, 0x2000);
    }
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn host_to_host_copies_and_fills_run_on_the_host() {
        let src: Vec<u8> = (0..64).collect();
        let mut dst = vec![0u8; 64];
        let region = RectRegion::new(4, 2, 2);
        let layout = RectLayout::new(cmdbuf_core::RectOffset::new(2, 1, 0), 8, 32).resolve(&region, "s").unwrap();
        let packed = RectLayout::packed().resolve(&region, "d").unwrap();
        let plan =
            copy_rect(Loc::Host(dst.as_mut_ptr()), &packed, Loc::Host(src.as_ptr().cast_mut()), &layout, &region);
        let CopyPlan::Host(job) = plan else { panic!("two host sides make a host job") };
        // SAFETY: both vectors outlive the job and hold the bytes it names.
        unsafe { job.run() };
        assert_eq!(&dst[..16], &[10, 11, 12, 13, 18, 19, 20, 21, 42, 43, 44, 45, 50, 51, 52, 53]);
        let fill = HostJob::Fill { dst: dst.as_mut_ptr() as usize, pattern: Pattern::from_slice(&[1, 2, 3]), size: 6 };
        // SAFETY: as above.
        unsafe { fill.run() };
        assert_eq!(&dst[..7], &[1, 2, 3, 1, 2, 3, 20]);
    }
}
