//! The arguments a `cl_kernel` holds, as this adapter last set them.
//!
//! An OpenCL kernel keeps its arguments from one launch to the next, and
//! the enqueue (or the recording) takes them as they are. Setting an
//! argument is a driver call that validates and copies it: on Intel's
//! OpenCL CPU runtime the three arguments of a small kernel cost more
//! instructions than everything the front end and this adapter do for an
//! eager launch (docs/performance.md). So an argument whose value is the
//! one the kernel already holds is not set again, as an eager chain of one
//! kernel launches it.
//!
//! What the kernel holds is known only while nothing else sets it:
//! - every launch of an application's kernel sets its arguments here, under
//!   the kernel's lock (the adapter's helper kernels are not cached);
//! - a kernel whose native handle an application holds (adopted, or asked
//!   for) may have its arguments set by the application, so nothing is
//!   skipped for it;
//! - a failed set leaves that argument unknown;
//! - a driver may keep, with a buffer or USM argument, a reference to the
//!   memory object it names, and a handle or address can come back for new
//!   memory once the old one is released. Every release of a buffer or a
//!   USM allocation through this adapter therefore makes every kernel's
//!   buffer and pointer arguments unknown ([`memory_released`]), so such an
//!   argument is always set again after memory was released.
//!
//! One kernel may have more than one `cl_kernel` ([`KernelObjects`]):
//! NVIDIA's OpenCL refuses a launch of a `cl_kernel` given a buffer at an
//! argument that was once given a USM (SVM) pointer, and nothing set on that
//! `cl_kernel` clears it (docs/opencl.md). So each `cl_kernel` remembers the
//! arguments ever given a USM pointer, and a launch with a buffer at one of
//! them takes another `cl_kernel` of the same program function, made for it
//! if none fits. Every driver takes this path, though only NVIDIA's needs
//! it: one more `cl_kernel` where a kernel mixes the two at an argument, and
//! the same code tested everywhere.

use std::sync::atomic::{AtomicU64, Ordering};

use cl3::types::cl_kernel;
use cmdbuf_core::Result;
use smallvec::SmallVec;

use crate::conv::ClResultExt;
use crate::device::Usm;
use crate::launch::{self, Ptr};

/// Counts releases of memory a kernel argument can name, process-wide.
static MEMORY_RELEASES: AtomicU64 = AtomicU64::new(0);

/// Records that a buffer or a USM allocation is being released: a kernel
/// argument equal to its handle or address must be set again, even where
/// the same value comes back for new memory.
pub(crate) fn memory_released() {
    MEMORY_RELEASES.fetch_add(1, Ordering::Release);
}

/// One argument as set: an [`Arg`] owning its bytes.
#[derive(PartialEq, Debug)]
enum Held {
    Value(SmallVec<[u8; 16]>),
    Local(usize),
    Ptr(Ptr),
}

impl Held {
    /// Whether it names memory (and so is unknown after a release).
    fn names_memory(&self) -> bool {
        matches!(self, Held::Ptr(Ptr::Mem(_) | Ptr::Usm(_)))
    }
}

/// A value to set as an argument.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Arg<'a> {
    /// A by-value argument's bytes.
    Value(&'a [u8]),
    /// A local-memory argument's size (non-zero).
    Local(usize),
    /// A global pointer.
    Ptr(Ptr),
}

impl Arg<'_> {
    fn held(self) -> Held {
        match self {
            Arg::Value(bytes) => Held::Value(SmallVec::from_slice(bytes)),
            Arg::Local(size) => Held::Local(size),
            Arg::Ptr(ptr) => Held::Ptr(ptr),
        }
    }

    fn is(&self, held: &Held) -> bool {
        match (self, held) {
            (Arg::Value(bytes), Held::Value(v)) => *bytes == v.as_slice(),
            (Arg::Local(size), Held::Local(s)) => size == s,
            (Arg::Ptr(ptr), Held::Ptr(p)) => ptr == p,
            _ => false,
        }
    }
}

/// A kernel's arguments as this adapter last set them, kept under the
/// kernel's lock. `None` at an index: unknown.
#[derive(Debug)]
pub(crate) struct HeldArgs {
    held: SmallVec<[Option<Held>; 8]>,
    /// [`MEMORY_RELEASES`] when `held`'s memory arguments were last known.
    releases: u64,
    /// Whether the application may set the kernel's arguments itself.
    shared_natively: bool,
    /// The arguments ever given a USM pointer, one bit each (NVIDIA's
    /// OpenCL then refuses a buffer there; see the module's documentation).
    usm_at: SmallVec<[u64; 1]>,
}

impl HeldArgs {
    /// Nothing known yet; `shared_natively`: the application holds the
    /// kernel's handle (an adopted kernel).
    pub(crate) fn new(shared_natively: bool) -> HeldArgs {
        HeldArgs {
            held: SmallVec::new(),
            releases: MEMORY_RELEASES.load(Ordering::Acquire),
            shared_natively,
            usm_at: SmallVec::new(),
        }
    }

    /// Whether this kernel takes a buffer at each of `indices`: none of them
    /// was ever given a USM pointer.
    #[inline]
    pub(crate) fn takes_buffers_at(&self, mut indices: impl Iterator<Item = usize>) -> bool {
        self.usm_at.iter().all(|word| *word == 0) || indices.all(|i| !self.had_usm_at(i))
    }

    fn had_usm_at(&self, index: usize) -> bool {
        self.usm_at.get(index / 64).is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    fn mark_usm_at(&mut self, index: usize) {
        let word = index / 64;
        if self.usm_at.len() <= word {
            self.usm_at.resize(word + 1, 0);
        }
        self.usm_at[word] |= 1 << (index % 64);
    }

    /// From now on nothing is skipped: the application may set the
    /// kernel's arguments through its native handle.
    pub(crate) fn share_natively(&mut self) {
        self.shared_natively = true;
        self.held.clear();
    }

    /// Starts a launch's arguments: what memory released since the last
    /// launch makes unknown is forgotten.
    pub(crate) fn begin(&mut self) {
        let releases = MEMORY_RELEASES.load(Ordering::Acquire);
        if releases != self.releases {
            self.releases = releases;
            for slot in &mut self.held {
                if slot.as_ref().is_some_and(Held::names_memory) {
                    *slot = None;
                }
            }
        }
    }

    /// Sets argument `index` of `kernel` to `arg`, unless it holds it
    /// already.
    ///
    /// # Safety
    /// `kernel` is the kernel these arguments are of, locked by the caller
    /// since [`begin`](Self::begin); `index` is an argument of it of `arg`'s
    /// kind (a by-value argument of `bytes.len()` bytes, a local-memory
    /// argument, a global pointer); a USM address belongs to the kernel's
    /// context (through `usm`'s mechanism).
    #[inline]
    pub(crate) unsafe fn set(&mut self, usm: &Usm, kernel: cl_kernel, index: u32, arg: Arg<'_>) -> Result<()> {
        if self.holds(index as usize, arg) {
            return Ok(());
        }
        // SAFETY: as this function's `# Safety`.
        unsafe { self.set_again(usm, kernel, index, arg) }
    }

    /// [`set`](Self::set) of an argument the kernel may not hold: kept out
    /// of line, so that the launch's loop over arguments it holds stays small.
    ///
    /// # Safety
    /// As [`set`](Self::set).
    #[inline(never)]
    unsafe fn set_again(&mut self, usm: &Usm, kernel: cl_kernel, index: u32, arg: Arg<'_>) -> Result<()> {
        let i = index as usize;
        // Unknown until the driver has taken it.
        if let Some(slot) = self.held.get_mut(i) {
            *slot = None;
        }
        // Before the call: whether the driver kept anything of a failed set is unknown.
        if let Arg::Ptr(Ptr::Usm(_)) = arg {
            self.mark_usm_at(i);
        }
        // SAFETY: `index` is an argument of `kernel` of `arg`'s kind, a USM
        // address of its context (this function's `# Safety`).
        unsafe {
            match arg {
                Arg::Value(bytes) => launch::set_value(kernel, index, bytes)?,
                Arg::Local(size) => launch::set_local(kernel, index, size)?,
                Arg::Ptr(ptr) => launch::set_ptr(usm, kernel, index, ptr)?,
            }
        }
        self.record(i, arg);
        Ok(())
    }

    /// Whether argument `index` is known to hold `arg` (never for a kernel
    /// shared natively: nothing is recorded for it).
    #[inline]
    fn holds(&self, index: usize, arg: Arg<'_>) -> bool {
        self.held.get(index).and_then(Option::as_ref).is_some_and(|held| arg.is(held))
    }

    /// Records that the driver took `arg` for argument `index`.
    fn record(&mut self, index: usize, arg: Arg<'_>) {
        if self.shared_natively {
            return;
        }
        if self.held.len() <= index {
            self.held.resize_with(index + 1, || None);
        }
        self.held[index] = Some(arg.held());
    }
}

/// How many `cl_kernel`s one kernel keeps beside the first; one more
/// replaces the last made. Two arguments that each alternate between a
/// buffer and a USM pointer need three.
const MORE_OBJECTS: usize = 3;

/// A kernel's `cl_kernel`s, each with the arguments it holds (see the
/// module's documentation), kept under the kernel's lock.
pub(crate) struct KernelObjects {
    /// The `cl_kernel` created or adopted: the kernel's native handle.
    first: KernelObject,
    /// More of the same program function, for launches `first` refuses.
    more: SmallVec<[KernelObject; 1]>,
}

/// One `cl_kernel` and the arguments it holds.
pub(crate) struct KernelObject {
    pub(crate) kernel: opencl3::kernel::Kernel,
    pub(crate) args: HeldArgs,
}

impl KernelObjects {
    /// `kernel` alone; `shared_natively`: the application holds its handle
    /// (an adopted kernel).
    pub(crate) fn new(kernel: opencl3::kernel::Kernel, shared_natively: bool) -> KernelObjects {
        KernelObjects { first: KernelObject { kernel, args: HeldArgs::new(shared_natively) }, more: SmallVec::new() }
    }

    /// From now on nothing is skipped on the first `cl_kernel`, whose handle
    /// the application holds; the others are the adapter's alone.
    pub(crate) fn share_natively(&mut self) {
        self.first.args.share_natively();
    }

    /// A `cl_kernel` that takes a buffer at each of `buffers_at()`: the
    /// first that does, else a new one of the same program function.
    pub(crate) fn for_buffers_at<I: Iterator<Item = usize>>(
        &mut self,
        buffers_at: impl Fn() -> I,
    ) -> Result<&mut KernelObject> {
        if self.first.args.takes_buffers_at(buffers_at()) {
            return Ok(&mut self.first);
        }
        if let Some(i) = self.more.iter().position(|object| object.args.takes_buffers_at(buffers_at())) {
            return Ok(&mut self.more[i]);
        }
        let kernel = self.first.kernel.get();
        let program = self.first.kernel.program().cl("clGetKernelInfo(CL_KERNEL_PROGRAM)")?;
        let name = self.first.kernel.function_name().cl("clGetKernelInfo(CL_KERNEL_FUNCTION_NAME)")?;
        let name = std::ffi::CString::new(name).map_err(|_| cmdbuf_core::err!(Unknown, "a kernel name with a NUL"))?;
        let made = opencl3::kernel::Kernel::new(cl3::kernel::create_kernel(program, &name).cl("clCreateKernel")?);
        tracing::debug!(
            kernel = ?kernel,
            more = self.more.len() + 1,
            "a buffer where each cl_kernel of the kernel was given a USM pointer: another cl_kernel",
        );
        if self.more.len() == MORE_OBJECTS {
            self.more.pop();
        }
        self.more.push(KernelObject { kernel: made, args: HeldArgs::new(false) });
        let last = self.more.len() - 1;
        Ok(&mut self.more[last])
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;

    use cl3::types::cl_mem;

    use super::*;

    #[test]
    fn values_are_held_until_they_change() {
        let mut args = HeldArgs::new(false);
        args.begin();
        args.record(0, Arg::Value(&7u32.to_ne_bytes()));
        args.record(2, Arg::Local(64));
        assert!(args.holds(0, Arg::Value(&7u32.to_ne_bytes())));
        assert!(!args.holds(0, Arg::Value(&8u32.to_ne_bytes())));
        assert!(!args.holds(0, Arg::Value(&7u64.to_ne_bytes())), "another size is another value");
        assert!(!args.holds(1, Arg::Ptr(Ptr::Null)), "never set");
        assert!(args.holds(2, Arg::Local(64)));
        assert!(!args.holds(2, Arg::Value(&64usize.to_ne_bytes())), "another kind");
    }

    #[test]
    fn memory_arguments_are_forgotten_when_memory_is_released() {
        let mut args = HeldArgs::new(false);
        args.begin();
        let usm = Arg::Ptr(Ptr::Usm(0x1000 as *mut c_void));
        let mem = Arg::Ptr(Ptr::Mem(0x2000 as cl_mem));
        args.record(0, usm);
        args.record(1, mem);
        args.record(2, Arg::Value(&[1, 2, 3]));
        args.begin();
        assert!(args.holds(0, usm) && args.holds(1, mem), "nothing was released");
        memory_released();
        args.begin();
        assert!(!args.holds(0, usm) && !args.holds(1, mem));
        assert!(args.holds(2, Arg::Value(&[1, 2, 3])), "a value names no memory");
    }

    #[test]
    fn buffers_are_taken_where_no_usm_pointer_ever_was() {
        let mut args = HeldArgs::new(false);
        args.begin();
        assert!(args.takes_buffers_at([0, 1, 70].into_iter()), "nothing set yet");
        args.mark_usm_at(1);
        args.mark_usm_at(70);
        args.record(1, Arg::Ptr(Ptr::Mem(0x2000 as cl_mem)));
        assert!(args.takes_buffers_at([0, 2, 69, 71].into_iter()));
        assert!(!args.takes_buffers_at([0, 1].into_iter()), "a buffer set after the pointer does not clear it");
        assert!(!args.takes_buffers_at([70].into_iter()));
        memory_released();
        args.begin();
        args.share_natively();
        assert!(!args.takes_buffers_at([1].into_iter()), "the driver's, not the record's");
    }

    #[test]
    fn nothing_is_held_for_a_kernel_shared_natively() {
        let mut args = HeldArgs::new(false);
        args.begin();
        args.record(0, Arg::Local(16));
        args.share_natively();
        assert!(!args.holds(0, Arg::Local(16)));
        args.record(0, Arg::Local(16));
        assert!(!args.holds(0, Arg::Local(16)), "nor is anything recorded after");
        let mut adopted = HeldArgs::new(true);
        adopted.record(0, Arg::Local(16));
        assert!(!adopted.holds(0, Arg::Local(16)));
    }
}
