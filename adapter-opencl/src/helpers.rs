//! The adapter's own kernels, built once per context, and the way every
//! kernel (the application's and these) is launched: eagerly on a queue or
//! recorded into a command-buffer.
//!
//! OpenCL has no command for copies between a buffer and USM, for rect
//! copies to and from USM, for fills whose pattern is not a power of two up
//! to 128 bytes, nor (before `cl_khr_command_buffer` 0.9.4) for recording USM
//! copies and fills. These kernels do them, and since a kernel can be
//! recorded, such commands stay inside native command-buffers.

use std::ffi::c_void;
use std::ptr;

use std::cell::RefCell;

use cl3::types::{cl_command_queue, cl_event, cl_kernel, cl_mem};
use parking_lot::Mutex;
use smallvec::SmallVec;
use ur_core::Result;

use crate::context::Shared;
use crate::conv::ClResultExt;
use crate::device::Usm;
use crate::event::{RawEvent, WaitList};
use crate::ffi::{CommandBufferApi, cl_command_buffer_khr, cl_sync_point_khr};
use crate::one_launch::{self, RecordedKernels};

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

__kernel void ur_fill(__global uchar* dst, ulong off, ulong n, uint len, ur_pattern pattern) {
    ulong i = get_global_id(0) * 16;
    if (i >= n) return;
    __global uchar* d = dst + off;
    ulong end = min(i + 16, n);
    for (ulong k = i; k < end; ++k) d[k] = pattern.b[k % len];
}

__kernel void ur_noop(void) {}
"#;

/// Bytes per work-item of `ur_copy` and `ur_fill`.
const BYTES_PER_ITEM: usize = 16;
/// Work-group size of the 1D helpers: one size, so that drivers which
/// specialise kernels per work-group size (PoCL) do it once.
const GROUP: usize = 64;

/// One helper kernel, as two kernel objects: one whose pointer arguments are
/// always USM pointers, one whose pointer arguments include buffers. An
/// argument of one object thus never changes from one kind to the other,
/// which NVIDIA's OpenCL does not handle (later launches fail with
/// `CL_INVALID_KERNEL_ARGS`). Each lock covers setting the arguments and
/// launching.
pub(crate) struct Helper {
    usm: Mutex<opencl3::kernel::Kernel>,
    buffers: Mutex<opencl3::kernel::Kernel>,
    name: &'static str,
    group: usize,
}

impl Helper {
    fn new(
        program: &opencl3::program::Program,
        name: &'static str,
        device: cl3::types::cl_device_id,
    ) -> Result<Helper> {
        let create = || opencl3::kernel::Kernel::create(program, name).cl("clCreateKernel (adapter helper)");
        let (usm, buffers) = (create()?, create()?);
        let max = usm.get_work_group_size(device).cl("CL_KERNEL_WORK_GROUP_SIZE")?;
        Ok(Helper { usm: Mutex::new(usm), buffers: Mutex::new(buffers), name, group: GROUP.min(max).max(1) })
    }

    /// The kernel object for a launch whose pointer arguments are `ptrs`.
    fn for_args(&self, ptrs: &[Ptr]) -> parking_lot::MutexGuard<'_, opencl3::kernel::Kernel> {
        if ptrs.iter().any(|p| matches!(p, Ptr::Mem(_))) { self.buffers.lock() } else { self.usm.lock() }
    }
}

/// The helper kernels of one context.
pub(crate) struct Helpers {
    copy: Helper,
    copy_rect: Helper,
    fill: Helper,
    noop: Helper,
    _program: opencl3::program::Program,
}

impl Helpers {
    /// Builds the helpers for `device` in `context`.
    pub(crate) fn build(context: &opencl3::context::Context, device: cl3::types::cl_device_id) -> Result<Helpers> {
        let mut program =
            opencl3::program::Program::create_from_source(context, SOURCE).cl("clCreateProgramWithSource (helpers)")?;
        if let Err(e) = program.build(&[device], "") {
            let log = program.get_build_log(device).unwrap_or_default();
            return Err(crate::conv::cl_error(e.0, &format!("clBuildProgram (adapter helpers): {log}")));
        }
        Ok(Helpers {
            copy: Helper::new(&program, "ur_copy", device)?,
            copy_rect: Helper::new(&program, "ur_copy_rect", device)?,
            fill: Helper::new(&program, "ur_fill", device)?,
            noop: Helper::new(&program, "ur_noop", device)?,
            _program: program,
        })
    }
}

/// Where a launch goes.
pub(crate) enum Target<'a> {
    /// Enqueued on a queue after the events of a wait list; `one_launch`
    /// (the queue's context): also after the previous launch of the kernel
    /// (see [`crate::one_launch`]).
    Queue { queue: cl_command_queue, wait: &'a WaitList, one_launch: Option<cl3::types::cl_context> },
    /// Recorded into a command-buffer after sync points; with `kernels`, also
    /// after the segment's previous command of the kernel.
    Record {
        api: &'a CommandBufferApi,
        buffer: cl_command_buffer_khr,
        deps: &'a [cl_sync_point_khr],
        kernels: Option<&'a RefCell<RecordedKernels>>,
    },
}

impl<'a> Target<'a> {
    /// Enqueued on `queue` of `shared`'s context after `wait`.
    pub(crate) fn queue(shared: &Shared, queue: cl_command_queue, wait: &'a WaitList) -> Target<'a> {
        Target::Queue { queue, wait, one_launch: shared.device.one_launch_per_kernel.then(|| shared.context.get()) }
    }
}

/// What a launch produced.
pub(crate) enum Launched {
    /// The event of an enqueued command.
    Event(RawEvent),
    /// The sync point of a recorded command, and the kernel object it was
    /// recorded from, which must live as long as the command-buffer.
    SyncPoint(cl_sync_point_khr, Option<opencl3::kernel::Kernel>),
}

/// Launches `kernel` with its arguments as currently set.
///
/// # Safety
/// Every argument of `kernel` is set; the sizes are valid for it (global a
/// multiple of local, no zero size); the target's handles are valid.
pub(crate) unsafe fn launch(
    target: &Target<'_>,
    kernel: cl_kernel,
    name: &str,
    work_dim: u32,
    offset: [usize; 3],
    global: [usize; 3],
    local: [usize; 3],
) -> Result<Launched> {
    match target {
        Target::Queue { queue, wait, one_launch } => {
            let enqueue = |wait: &[cl_event]| {
                let list = if wait.is_empty() { ptr::null() } else { wait.as_ptr() };
                // SAFETY: per the contract; the arrays outlive the call.
                let event = unsafe {
                    cl3::command_queue::enqueue_nd_range_kernel(
                        *queue,
                        kernel,
                        work_dim,
                        offset.as_ptr(),
                        global.as_ptr(),
                        local.as_ptr(),
                        wait.len() as u32,
                        list,
                    )
                }
                .cl("clEnqueueNDRangeKernel")?;
                // SAFETY: a successful enqueue returns a new reference.
                Ok(unsafe { RawEvent::from_raw(event) })
            };
            let event = if let Some(context) = *one_launch {
                one_launch::enqueue_exclusive(context, &[name], wait.handles(), enqueue)?
            } else {
                enqueue(wait.handles())?
            };
            Ok(Launched::Event(event))
        }
        Target::Record { api, buffer, deps, kernels } => {
            // Each recorded launch gets its own copy of the kernel and its
            // arguments: PoCL 3.1 reads a recorded kernel's arguments when the
            // command-buffer runs, not when it was recorded, so a kernel
            // recorded twice with different arguments would run twice with the
            // last ones. Where cloning is not available (before OpenCL 2.1),
            // the kernel itself is recorded, as the extension specifies.
            let clone = cl3::kernel::clone_kernel(kernel).ok().map(opencl3::kernel::Kernel::new);
            let recorded = clone.as_ref().map_or(kernel, |k| k.get());
            let mut all_deps: SmallVec<[cl_sync_point_khr; 8]> = SmallVec::from_slice(deps);
            if let Some(kernels) = kernels {
                all_deps.extend(kernels.borrow().extra_dep(name));
            }
            // SAFETY: per the contract; a clone has the same arguments set.
            let point = unsafe { api.nd_range(*buffer, recorded, work_dim, &offset, &global, &local, &all_deps) }
                .cl("clCommandNDRangeKernelKHR")?;
            if let Some(kernels) = kernels {
                kernels.borrow_mut().recorded(name, point);
            }
            Ok(Launched::SyncPoint(point, clone))
        }
    }
}

/// A global-memory pointer argument.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Ptr {
    /// A buffer (offsets are separate arguments).
    Mem(cl_mem),
    /// A USM address.
    Usm(*mut c_void),
    /// NULL.
    Null,
}

/// Sets a pointer argument.
///
/// # Safety
/// `index` is a global-pointer argument of `kernel`; a USM address belongs to
/// the kernel's context (through `usm`'s mechanism).
pub(crate) unsafe fn set_ptr(usm: &Usm, kernel: cl_kernel, index: u32, value: Ptr) -> Result<()> {
    // SAFETY: for each call, the argument is a global pointer (contract); a
    // cl_mem is passed by address with its size, NULL as a null cl_mem.
    unsafe {
        match value {
            Ptr::Mem(mem) => cl3::kernel::set_kernel_arg(kernel, index, size_of::<cl_mem>(), (&raw const mem).cast())
                .cl("clSetKernelArg (buffer)"),
            Ptr::Null => cl3::kernel::set_kernel_arg(kernel, index, size_of::<cl_mem>(), ptr::null())
                .cl("clSetKernelArg (null pointer)"),
            Ptr::Usm(p) => match usm {
                Usm::Intel(api) => api.set_arg(kernel, index, p).cl("clSetKernelArgMemPointerINTEL"),
                Usm::Svm => cl3::kernel::set_kernel_arg_svm_pointer(kernel, index, p.cast_const())
                    .cl("clSetKernelArgSVMPointer"),
                Usm::None => Err(ur_core::err!(UnsupportedFeature, "the device has no USM")),
            },
        }
    }
}

/// Sets a by-value argument.
///
/// # Safety
/// `index` is a by-value argument of `kernel` of `bytes.len()` bytes.
pub(crate) unsafe fn set_value(kernel: cl_kernel, index: u32, bytes: &[u8]) -> Result<()> {
    // SAFETY: per the contract; OpenCL copies the value.
    unsafe { cl3::kernel::set_kernel_arg(kernel, index, bytes.len(), bytes.as_ptr().cast()) }
        .cl("clSetKernelArg (value)")
}

/// Sets a local-memory argument.
///
/// # Safety
/// `index` is a local-memory argument of `kernel`; `size` is non-zero.
pub(crate) unsafe fn set_local(kernel: cl_kernel, index: u32, size: usize) -> Result<()> {
    // SAFETY: per the contract; local arguments take a size and NULL.
    unsafe { cl3::kernel::set_kernel_arg(kernel, index, size, ptr::null()) }.cl("clSetKernelArg (local)")
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

    /// Repeats `pattern` (1 to 256 bytes) over `n` bytes from `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `n` bytes, a multiple of the pattern's length.
    pub(crate) unsafe fn fill(
        &self,
        usm: &Usm,
        target: &Target<'_>,
        dst: Side,
        pattern: &[u8],
        n: usize,
    ) -> Result<Launched> {
        let h = &self.fill;
        let kernel = h.for_args(&[dst.ptr]);
        let k = kernel.get();
        let mut block = [0u8; 256];
        block[..pattern.len()].copy_from_slice(pattern);
        // SAFETY: the argument kinds match `ur_fill` (the pattern struct is
        // 256 bytes, alignment 1); the range is valid (contract).
        unsafe {
            set_ptr(usm, k, 0, dst.ptr)?;
            set_value(k, 1, &(dst.offset as u64).to_ne_bytes())?;
            set_value(k, 2, &(n as u64).to_ne_bytes())?;
            set_value(k, 3, &(pattern.len() as u32).to_ne_bytes())?;
            set_value(k, 4, &block)?;
            let items = rounded(n.div_ceil(BYTES_PER_ITEM), h.group);
            launch(target, k, h.name, 1, [0; 3], [items, 1, 1], [h.group, 1, 1])
        }
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
