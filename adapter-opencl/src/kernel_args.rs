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

use std::sync::atomic::{AtomicU64, Ordering};

use cl3::types::cl_kernel;
use cmdbuf_core::Result;
use smallvec::SmallVec;

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
}

impl HeldArgs {
    /// Nothing known yet; `shared_natively`: the application holds the
    /// kernel's handle (an adopted kernel).
    pub(crate) fn new(shared_natively: bool) -> HeldArgs {
        HeldArgs { held: SmallVec::new(), releases: MEMORY_RELEASES.load(Ordering::Acquire), shared_natively }
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
