//! The adapter's own kernels, built once per context and launched through
//! [`crate::launch`] like the application's.
//!
//! OpenCL has no command for copies between a buffer and USM, for rect
//! copies to and from USM, for fills whose pattern is not a power of two up
//! to 128 bytes, nor (before `cl_khr_command_buffer` 0.9.4) for recording USM
//! copies and fills. These kernels do them, and since a kernel can be
//! recorded, such commands stay inside native command-buffers.
//!
//! The kernels' definition (`Helper`, `Helpers`) is part of a context's
//! state, in `device.rs`; building and launching them is here.

use cmdbuf_core::Result;
use parking_lot::Mutex;

use crate::conv::ClResultExt;
use crate::device::{Helper, Helpers, Usm};
use crate::launch::{Launched, Ptr, Target, launch, set_ptr, set_value};

/// OpenCL C of the helper kernels. Copies and fills work on bytes, 16 per
/// work-item (`vload16`/`vstore16` need only byte alignment); every kernel
/// checks its bounds, so the global size may be rounded up to the
/// work-group size.
pub(crate) const SOURCE: &str = r#"
typedef struct { uchar b[256]; } ur_pattern;

__kernel void ur_copy(__global uchar* dst, ulong dst_off, __global const uchar* src, ulong src_off, ulong n) {
    ulong i = get_global_id(0) * 16;
    if (i >= n) return;
    __global uchar* d = dst + dst_off + i;
    __global const uchar* s = src + src_off + i;
    if (i + 16 <= n) {
        vstore16(vload16(0, s), 0, d);
    } else {
        for (ulong k = 0; k < n - i; ++k) d[k] = s[k];
    }
}

__kernel void ur_copy_rect(__global uchar* dst, ulong dst_off, ulong dst_row, ulong dst_slice,
                           __global const uchar* src, ulong src_off, ulong src_row, ulong src_slice,
                           ulong width, ulong height, ulong depth) {
    ulong x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    if (x >= width || y >= height || z >= depth) return;
    dst[dst_off + z * dst_slice + y * dst_row + x] = src[src_off + z * src_slice + y * src_row + x];
}

__kernel void ur_fill(__global uchar* dst, ulong off, ulong n, ulong len, ur_pattern pattern) {
    ulong i = get_global_id(0) * 16;
    if (i >= n) return;
    __global uchar* d = dst + off;
    ulong end = min(i + 16, n);
    for (ulong k = i; k < end; ++k) d[k] = pattern.b[k % len];
}

__kernel void ur_fill_from(__global uchar* dst, ulong off, ulong n, ulong len, __global const uchar* pattern) {
    ulong i = get_global_id(0) * 16;
    if (i >= n) return;
    __global uchar* d = dst + off;
    ulong end = min(i + 16, n);
    for (ulong k = i; k < end; ++k) d[k] = pattern[k % len];
}

__kernel void ur_noop(void) {}
"#;

/// The largest pattern `ur_fill` takes by value (its `ur_pattern`); longer
/// ones go through `ur_fill_from`.
const INLINE_PATTERN: usize = 256;

/// Bytes per work-item of `ur_copy` and `ur_fill`.
const BYTES_PER_ITEM: usize = 16;
/// Work-group size of the 1D helpers: one size, so that drivers which
/// specialise kernels per work-group size (PoCL) do it once.
const GROUP: usize = 64;

impl Helper {
    /// The helper `name`, whose first `pointers` pointer arguments may each
    /// be a USM pointer or a buffer, launched on any of `devices`.
    fn new(
        program: &opencl3::program::Program,
        name: &'static str,
        pointers: u32,
        devices: &[cl3::types::cl_device_id],
    ) -> Result<Helper> {
        let kernels = (0..1usize << pointers)
            .map(|_| {
                opencl3::kernel::Kernel::create(program, name).cl("clCreateKernel (adapter helper)").map(Mutex::new)
            })
            .collect::<Result<Vec<_>>>()?;
        let max = crate::program::max_work_group_size(&kernels[0].lock(), devices)?;
        Ok(Helper { kernels, name, group: GROUP.min(max).max(1) })
    }

    /// Which kernel object serves pointer arguments `ptrs`.
    fn variant(ptrs: &[Ptr]) -> usize {
        ptrs.iter().enumerate().filter(|(_, p)| matches!(p, Ptr::Mem(_))).fold(0, |bits, (i, _)| bits | 1 << i)
    }

    /// The kernel object for a launch whose pointer arguments are `ptrs`.
    fn for_args(&self, ptrs: &[Ptr]) -> parking_lot::MutexGuard<'_, opencl3::kernel::Kernel> {
        self.kernels[Self::variant(ptrs) % self.kernels.len()].lock()
    }
}

impl Helpers {
    /// Builds the helpers for `devices` (at least one) in `context`: every
    /// queue of the context, on any of them, launches them.
    pub(crate) fn build(context: &opencl3::context::Context, devices: &[cl3::types::cl_device_id]) -> Result<Helpers> {
        let mut program =
            opencl3::program::Program::create_from_source(context, SOURCE).cl("clCreateProgramWithSource (helpers)")?;
        if let Err(e) = program.build(devices, "") {
            let log = devices.iter().map(|d| program.get_build_log(*d).unwrap_or_default()).collect::<Vec<_>>();
            return Err(crate::conv::cl_error(e.0, &format!("clBuildProgram (adapter helpers): {}", log.join("\n"))));
        }
        Ok(Helpers {
            copy: Helper::new(&program, "ur_copy", 2, devices)?,
            copy_rect: Helper::new(&program, "ur_copy_rect", 2, devices)?,
            fill: Helper::new(&program, "ur_fill", 1, devices)?,
            fill_from: Helper::new(&program, "ur_fill_from", 2, devices)?,
            noop: Helper::new(&program, "ur_noop", 0, devices)?,
            _program: program,
        })
    }
}

/// Launches the fill helper `h` (`ur_fill` or `ur_fill_from`, whose
/// pointer arguments are `ptrs`): its destination, offset, size and pattern
/// length, then its pattern argument (index 4), set by `pattern_arg`.
///
/// # Safety
/// `dst` is valid for `n` bytes, a multiple of `len`; `pattern_arg` sets
/// argument 4 as the kernel declares it.
#[allow(clippy::too_many_arguments)]
unsafe fn launch_fill(
    h: &Helper,
    usm: &Usm,
    target: &Target<'_>,
    ptrs: &[Ptr],
    dst: Side,
    len: usize,
    n: usize,
    pattern_arg: impl FnOnce(cl3::types::cl_kernel) -> Result<()>,
) -> Result<Launched> {
    let kernel = h.for_args(ptrs);
    let k = kernel.get();
    // SAFETY: both kernels take (global uchar*, ulong, ulong, ulong, pattern);
    // the range is valid (contract).
    unsafe {
        set_ptr(usm, k, 0, dst.ptr)?;
        set_value(k, 1, &(dst.offset as u64).to_ne_bytes())?;
        set_value(k, 2, &(n as u64).to_ne_bytes())?;
        set_value(k, 3, &(len as u64).to_ne_bytes())?;
        pattern_arg(k)?;
        let items = rounded(n.div_ceil(BYTES_PER_ITEM), h.group);
        launch(target, k, h.name, 1, [0; 3], [items, 1, 1], [h.group, 1, 1])
    }
}

fn rounded(n: usize, group: usize) -> usize {
    n.div_ceil(group).max(1) * group
}

/// One side of a helper copy: a pointer and a byte offset from it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Side {
    pub(crate) ptr: Ptr,
    pub(crate) offset: usize,
}

impl Helpers {
    /// Copies `n` (> 0) bytes.
    ///
    /// # Safety
    /// Both ranges are valid for `n` bytes and do not overlap; the target is valid.
    pub(crate) unsafe fn copy(
        &self,
        usm: &Usm,
        target: &Target<'_>,
        dst: Side,
        src: Side,
        n: usize,
    ) -> Result<Launched> {
        let h = &self.copy;
        let kernel = h.for_args(&[dst.ptr, src.ptr]);
        let k = kernel.get();
        // SAFETY: the argument kinds match `ur_copy`; the ranges are valid (contract).
        unsafe {
            set_ptr(usm, k, 0, dst.ptr)?;
            set_value(k, 1, &(dst.offset as u64).to_ne_bytes())?;
            set_ptr(usm, k, 2, src.ptr)?;
            set_value(k, 3, &(src.offset as u64).to_ne_bytes())?;
            set_value(k, 4, &(n as u64).to_ne_bytes())?;
            let items = rounded(n.div_ceil(BYTES_PER_ITEM), h.group);
            launch(target, k, h.name, 1, [0; 3], [items, 1, 1], [h.group, 1, 1])
        }
    }

    /// Copies a rect region (`[width, height, depth]` in bytes, rows, slices);
    /// each side's offset is its origin's byte offset and its pitches are
    /// `[row, slice]`.
    ///
    /// # Safety
    /// Both sides are valid for the region's extent and do not overlap.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn copy_rect(
        &self,
        usm: &Usm,
        target: &Target<'_>,
        dst: Side,
        dst_pitches: [usize; 2],
        src: Side,
        src_pitches: [usize; 2],
        region: [usize; 3],
    ) -> Result<Launched> {
        let h = &self.copy_rect;
        let kernel = h.for_args(&[dst.ptr, src.ptr]);
        let k = kernel.get();
        let u = |v: usize| (v as u64).to_ne_bytes();
        // SAFETY: the argument kinds match `ur_copy_rect`; the ranges are valid (contract).
        unsafe {
            set_ptr(usm, k, 0, dst.ptr)?;
            set_value(k, 1, &u(dst.offset))?;
            set_value(k, 2, &u(dst_pitches[0]))?;
            set_value(k, 3, &u(dst_pitches[1]))?;
            set_ptr(usm, k, 4, src.ptr)?;
            set_value(k, 5, &u(src.offset))?;
            set_value(k, 6, &u(src_pitches[0]))?;
            set_value(k, 7, &u(src_pitches[1]))?;
            set_value(k, 8, &u(region[0]))?;
            set_value(k, 9, &u(region[1]))?;
            set_value(k, 10, &u(region[2]))?;
            let group = h.group.min(16);
            launch(target, k, h.name, 3, [0; 3], [rounded(region[0], group), region[1], region[2]], [group, 1, 1])
        }
    }

    /// Repeats `pattern` over `n` bytes from `dst`. A pattern of up to 256
    /// bytes is passed by value (`ur_fill`); a longer one is copied into a
    /// read-only buffer of `context` that the command reads (`ur_fill_from`;
    /// released after an enqueue, which OpenCL defers until the command has
    /// run; kept with the command-buffer by a recording).
    ///
    /// # Safety
    /// `dst` is valid for `n` bytes, a multiple of the pattern's length.
    pub(crate) unsafe fn fill(
        &self,
        context: &opencl3::context::Context,
        usm: &Usm,
        target: &Target<'_>,
        dst: Side,
        pattern: &[u8],
        n: usize,
    ) -> Result<Launched> {
        if pattern.len() <= INLINE_PATTERN {
            let mut block = [0u8; INLINE_PATTERN];
            block[..pattern.len()].copy_from_slice(pattern);
            // SAFETY: `ur_fill`'s pattern is a 256-byte struct of alignment 1;
            // the rest is forwarded.
            return unsafe {
                launch_fill(&self.fill, usm, target, &[dst.ptr], dst, pattern.len(), n, |k| set_value(k, 4, &block))
            };
        }
        // SAFETY: `CL_MEM_COPY_HOST_PTR` copies `pattern.len()` readable bytes now.
        let source = unsafe {
            opencl3::memory::Buffer::<u8>::create(
                context,
                cl3::memory::CL_MEM_READ_ONLY | cl3::memory::CL_MEM_COPY_HOST_PTR,
                pattern.len(),
                pattern.as_ptr().cast_mut().cast(),
            )
        }
        .cl("clCreateBuffer (fill pattern)")?;
        let from = Ptr::Mem(opencl3::memory::ClMem::get(&source));
        // SAFETY: `ur_fill_from`'s pattern is a global pointer, given a buffer
        // of `pattern.len()` bytes; the rest is forwarded.
        let launched = unsafe {
            launch_fill(&self.fill_from, usm, target, &[dst.ptr, from], dst, pattern.len(), n, |k| {
                set_ptr(usm, k, 4, from)
            })?
        };
        Ok(launched.keeping(source))
    }

    /// A command that does nothing but order: prefetch and advise, empty
    /// launches, and recorded no-ops.
    ///
    /// # Safety
    /// The target is valid.
    pub(crate) unsafe fn noop(&self, target: &Target<'_>) -> Result<Launched> {
        let kernel = self.noop.for_args(&[]);
        // SAFETY: `ur_noop` takes no arguments; one work-item.
        unsafe { launch(target, kernel.get(), self.noop.name, 1, [0; 3], [1, 1, 1], [1, 1, 1]) }
    }
}
