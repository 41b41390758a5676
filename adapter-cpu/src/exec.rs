//! Executing one command on a worker.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::event::execution_error;
use cmdbuf_core::rect::for_each_row;
use cmdbuf_core::{NativeArg, NativeKernelFn, WorkGroup};
use smallvec::SmallVec;

use crate::memory::CpuBuffer;
use crate::pool::parallel_for;
use crate::program::CpuKernel;

/// Alignment of each local-memory argument inside a group's scratch memory.
const LOCAL_ALIGN: usize = 64;

/// Runs `command` to completion on the calling worker (kernels spread their
/// work-groups over the pool). A panicking kernel becomes an `AdapterSpecific`
/// error.
///
/// # Safety
/// `command` satisfies the invariants of [`Command`] (the front end validated
/// it) and every command it must follow has completed.
pub(crate) unsafe fn execute(command: &Command) -> Result<()> {
    // SAFETY: `command` is validated and follows what it must (this function's `# Safety`), which is
    // `execute_with`'s contract; with no function given, there is no `kernel_fn` to match.
    unsafe { execute_with(command, None) }
}

/// The function of a kernel command of this adapter, looked up once (when a
/// command buffer is finalized or updated) instead of at every execution.
pub(crate) fn kernel_fn(command: &Command) -> Option<NativeKernelFn> {
    match command {
        Command::KernelLaunch(k) => (k.kernel.imp() as &dyn Any).downcast_ref::<CpuKernel>().map(|k| k.func),
        _ => None,
    }
}

/// Whether `command` runs on one thread anyway (no work-groups to spread
/// over the pool), so that the host thread waiting for it may run it
/// ([`crate::event::CpuEvent::spawn_claimable`]). Native host callbacks
/// stay on the workers: their code may expect not to run on the caller's
/// thread.
pub(crate) fn single_threaded(command: &Command) -> bool {
    match command {
        Command::KernelLaunch(k) => k.range.global_size == k.range.local_size,
        Command::Native(_) => false,
        _ => true,
    }
}

/// The function of a kernel command that runs as one work-group with no
/// local memory: such a launch needs no group loop and no scratch memory,
/// only a call ([`run_direct`]). Most command-buffer nodes are of this kind,
/// so the executor decides it once, at finalize and update.
pub(crate) fn direct_fn(command: &Command) -> Option<NativeKernelFn> {
    match command {
        // An empty launch (a zero global size) runs no group: not a call.
        Command::KernelLaunch(k)
            if k.range.global_size == k.range.local_size
                && !k.range.global_size.contains(&0)
                && !k.args.iter().any(|a| matches!(a, ArgValue::Local(_))) =>
        {
            kernel_fn(command)
        }
        _ => None,
    }
}

/// Runs a launch that [`direct_fn`] accepted, calling `func` once for its
/// only work-group. Errors as for [`execute`].
///
/// # Safety
/// As for [`execute`]; `func` is [`direct_fn`] of `launch`'s command.
#[inline]
pub(crate) unsafe fn run_direct(launch: &KernelCommand, func: NativeKernelFn) -> Result<()> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut args = SmallVec::new();
        // SAFETY: the launch was validated by the front end (this function's `# Safety`, as for
        // `execute`), so its memory objects are this adapter's, as `native_args` requires.
        unsafe { native_args(launch, &mut args) }?;
        // SAFETY: as in `run_kernel`: the kernel table's promise, checked
        // against the launch by the front end.
        Ok(unsafe { func.call(&WorkGroup::new(&launch.range, [0; 3], &args)) })
    }));
    match outcome {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(code))) => Err(kernel_error(launch, code)),
        Ok(Err(error)) => Err(error),
        Err(payload) => Err(panicked(&format!("kernel `{}`", launch.kernel.name()), &*payload)),
    }
}

/// [`execute`], with the kernel's function when it was looked up already.
///
/// # Safety
/// As for [`execute`]; `func`, if given, is [`kernel_fn`] of `command`.
pub(crate) unsafe fn execute_with(command: &Command, func: Option<NativeKernelFn>) -> Result<()> {
    match catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `command` is validated and `func`, if given, is its `kernel_fn` (this function's
        // `# Safety`), exactly `execute_inner`'s contract.
        unsafe { execute_inner(command, func) }
    })) {
        Ok(result) => result,
        Err(payload) => {
            let what = match command {
                Command::KernelLaunch(k) => format!("kernel `{}`", k.kernel.name()),
                other => format!("{} command", other.kind()),
            };
            Err(panicked(&what, &*payload))
        }
    }
}

/// The error of a command (`what`) whose code panicked.
#[cold]
fn panicked(what: &str, payload: &(dyn Any + Send)) -> cmdbuf_core::UrError {
    execution_error(Backend::Cpu, format!("{what} panicked: {}", cmdbuf_core::error::panic_message(payload)))
}

/// # Safety
/// As for [`execute_with`].
unsafe fn execute_inner(command: &Command, func: Option<NativeKernelFn>) -> Result<()> {
    // SAFETY: for every copy and fill below, the front end checked each range
    // against its allocation, buffer or host slice, that the two sides of a
    // copy do not overlap (but for a buffer read into or written from its own
    // lent host memory, copied with `ptr::copy`), and that fill sizes are
    // multiples of the pattern;
    // ordering makes the memory not concurrently used by other commands.
    unsafe {
        match command {
            Command::KernelLaunch(k) => run_kernel(k, func)?,
            Command::UsmMemcpy { dst, src, size, .. } => ptr::copy_nonoverlapping(loc_ptr(src)?, loc_ptr(dst)?, *size),
            Command::UsmFill { dst, pattern, size, .. } => fill(usm_ptr(dst)?, pattern, *size),
            // Host memory needs no migration and takes no advice: ordered no-ops.
            Command::UsmPrefetch { .. } | Command::UsmAdvise { .. } => {}
            Command::BufferCopy { src, dst, src_offset, dst_offset, size, .. } => {
                ptr::copy_nonoverlapping(buffer_ptr(src)?.add(*src_offset), buffer_ptr(dst)?.add(*dst_offset), *size)
            }
            Command::BufferCopyRect { src, dst, src_layout, dst_layout, region, .. } => {
                let (s, d) = (buffer_ptr(src)?, buffer_ptr(dst)?);
                for_each_row(src_layout, dst_layout, region, |so, doff, n| {
                    ptr::copy_nonoverlapping(s.add(so), d.add(doff), n)
                });
            }
            // A buffer over lent host memory (`MemBuffer::over_host_memory`)
            // is its host memory: libsycl reads such a buffer back into the
            // very memory it lent, so source and destination may be one
            // range, which `copy` allows and `copy_nonoverlapping` does not.
            Command::BufferRead { buffer, offset, size, dst, .. } => {
                ptr::copy(buffer_ptr(buffer)?.add(*offset), loc_ptr(dst)?, *size)
            }
            Command::BufferWrite { buffer, offset, size, src, .. } => {
                ptr::copy(loc_ptr(src)?, buffer_ptr(buffer)?.add(*offset), *size)
            }
            Command::BufferReadRect { buffer, buffer_layout, host_layout, region, dst, .. } => {
                let (b, h) = (buffer_ptr(buffer)?, loc_ptr(dst)?);
                for_each_row(buffer_layout, host_layout, region, |bo, ho, n| ptr::copy(b.add(bo), h.add(ho), n));
            }
            Command::BufferWriteRect { buffer, buffer_layout, host_layout, region, src, .. } => {
                let (b, h) = (buffer_ptr(buffer)?, loc_ptr(src)?);
                for_each_row(host_layout, buffer_layout, region, |ho, bo, n| ptr::copy(h.add(ho), b.add(bo), n));
            }
            Command::BufferFill { buffer, pattern, offset, size, .. } => {
                fill(buffer_ptr(buffer)?.add(*offset), pattern, *size)
            }
            // The CPU has no native queue: the callback's host work is the
            // command, run here, after its dependencies.
            Command::Native(native) => native.invoke(Backend::Cpu, NativeTarget::Host)?,
        }
    }
    Ok(())
}

fn buffer_ptr(buffer: &MemBuffer) -> Result<*mut u8> {
    Ok(downcast::<CpuBuffer>(buffer.imp() as &dyn Any, "a memory buffer")?.0.ptr())
}

fn usm_ptr(usm: &UsmRef) -> Result<*mut u8> {
    usm.host_ptr().ok_or_else(|| err!(InvalidValue, "USM of another adapter"))
}

fn loc_ptr(loc: &MemLoc) -> Result<*mut u8> {
    match loc {
        MemLoc::Usm(r) => usm_ptr(r),
        MemLoc::Host(h) => Ok(h.as_ptr()),
    }
}

/// Writes `pattern` repeatedly over `size` bytes, doubling the filled prefix
/// with each copy.
///
/// # Safety
/// `dst` is valid for `size` bytes of writes; `size` is a non-zero multiple of
/// the pattern's length.
unsafe fn fill(dst: *mut u8, pattern: &[u8], size: usize) {
    // SAFETY: the first copy writes `pattern.len() <= size` bytes; each later
    // copy duplicates the filled prefix into the unfilled rest, never past
    // `size`, and the two ranges are disjoint.
    unsafe {
        ptr::copy_nonoverlapping(pattern.as_ptr(), dst, pattern.len());
        let mut filled = pattern.len();
        while filled < size {
            let n = filled.min(size - filled);
            ptr::copy_nonoverlapping(dst, dst.add(filled), n);
            filled += n;
        }
    }
}

/// Scratch memory for one worker's work-groups, aligned for any local type.
#[derive(Default)]
struct Scratch(Vec<Aligned>);

#[derive(Copy, Clone, Default)]
#[repr(C, align(64))]
struct Aligned([u128; LOCAL_ALIGN / 16]);

impl Scratch {
    fn bytes(&mut self, len: usize) -> *mut u8 {
        let blocks = len.div_ceil(LOCAL_ALIGN);
        if self.0.len() < blocks {
            self.0.resize(blocks, Aligned::default());
        }
        self.0.as_mut_ptr().cast()
    }
}

/// Arguments shared by all work-groups of a launch.
struct SharedArgs<'a>(SmallVec<[NativeArg<'a>; 8]>);

// SAFETY: the raw pointers are addresses handed to kernel code on every
// worker, which is what a launch is; the arguments themselves are never
// mutated after construction (each group clones them).
unsafe impl Sync for SharedArgs<'_> {}

impl<'a> SharedArgs<'a> {
    fn args(&self) -> &[NativeArg<'a>] {
        &self.0
    }

    /// A copy whose local-memory pointers a group can fill in.
    fn for_group(&self) -> SmallVec<[NativeArg<'a>; 8]> {
        self.0.clone()
    }
}

/// # Safety
/// As for [`execute_with`]: the launch's geometry and arguments were validated.
unsafe fn run_kernel(launch: &KernelCommand, func: Option<NativeKernelFn>) -> Result<()> {
    let func = match func {
        Some(func) => func,
        None => downcast::<CpuKernel>(launch.kernel.imp() as &dyn Any, "a kernel")?.func,
    };
    let range = &launch.range;
    if range.global_size.contains(&0) {
        return Ok(());
    }
    let mut template = SmallVec::new();
    // SAFETY: the launch's geometry and arguments were validated (this function's `# Safety`), so its
    // memory objects are this adapter's, as `native_args` requires.
    unsafe { native_args(launch, &mut template) }?;
    // Offsets of local-memory arguments in a group's scratch, and its size.
    let mut local_offsets: SmallVec<[usize; 8]> = SmallVec::new();
    let mut scratch_len = 0;
    for arg in &template {
        if let NativeArg::Local(_, size) = arg {
            local_offsets.push(scratch_len);
            scratch_len += size.next_multiple_of(LOCAL_ALIGN);
        }
    }
    // The first non-zero code a C kernel returned; later groups still run,
    // as they would on a device.
    let status = AtomicI32::new(0);
    let call = |group: &WorkGroup<'_>| {
        // SAFETY: the kernel table promised its entry points follow the C
        // kernel ABI for the arguments it declares, which the front end
        // checked the launch against.
        if let Err(code) = unsafe { func.call(group) } {
            let _ = status.compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
        }
    };
    // One group exactly when the global size is the local size: no
    // divisions on the path of the smallest launches.
    let groups = if range.global_size == range.local_size { 1 } else { range.total_groups() };
    if scratch_len == 0 {
        // No local memory: every group sees the same arguments.
        if groups == 1 {
            call(&WorkGroup::new(range, [0; 3], &template));
        } else {
            let shared = SharedArgs(template);
            parallel_for(groups, &|chunk| {
                for g in chunk {
                    call(&WorkGroup::new(range, range.group_id(g), shared.args()));
                }
            });
        }
        return kernel_status(launch, &status);
    }
    let shared = SharedArgs(template);
    let run_group = |group: usize, scratch: &mut Scratch| {
        let mut args = shared.for_group();
        let base = scratch.bytes(scratch_len);
        let mut next = local_offsets.iter();
        for arg in args.iter_mut() {
            if let NativeArg::Local(p, _) = arg {
                let offset = *next.next().expect("one offset per local argument");
                // SAFETY: the scratch holds `scratch_len` bytes and each
                // argument's range was laid out inside it above.
                *p = unsafe { base.add(offset) };
            }
        }
        call(&WorkGroup::new(range, range.group_id(group), &args));
    };
    if groups == 1 {
        run_group(0, &mut Scratch::default());
    } else {
        parallel_for(groups, &|chunk| {
            let mut scratch = Scratch::default();
            for g in chunk {
                run_group(g, &mut scratch);
            }
        });
    }
    kernel_status(launch, &status)
}

/// The arguments of a launch as its kernel sees them; local-memory
/// arguments are null here, for each group to point into its scratch.
///
/// # Safety
/// The launch was validated (its memory objects are this adapter's).
#[inline]
unsafe fn native_args<'a>(launch: &'a KernelCommand, out: &mut SmallVec<[NativeArg<'a>; 8]>) -> Result<()> {
    // A plain loop: collecting through `Result` moves the whole small
    // vector several times, which costs more than an empty kernel's call.
    for arg in &launch.args {
        out.push(match arg {
            ArgValue::Value(bytes) => NativeArg::Value(bytes),
            ArgValue::Pointer(p) => NativeArg::Pointer(p.addr() as *mut u8),
            // SAFETY: a sub-buffer's offset lies inside its root buffer.
            ArgValue::MemObj(b) => NativeArg::Pointer(unsafe { buffer_ptr(b)?.add(b.offset()) }),
            ArgValue::Local(size) => NativeArg::Local(ptr::null_mut(), *size),
        });
    }
    Ok(())
}

/// The launch's result from the code its C kernel returned.
fn kernel_status(launch: &KernelCommand, status: &AtomicI32) -> Result<()> {
    match status.load(Ordering::Relaxed) {
        0 => Ok(()),
        code => Err(kernel_error(launch, code)),
    }
}

/// The error of a launch whose C kernel returned `code` (non-zero).
#[cold]
fn kernel_error(launch: &KernelCommand, code: i32) -> cmdbuf_core::UrError {
    cmdbuf_core::UrError::AdapterSpecific(cmdbuf_core::Detail::native(
        Backend::Cpu,
        code.into(),
        format!("kernel `{}` returned {code}", launch.kernel.name()),
    ))
}
