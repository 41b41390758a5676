//! Handles: the objects behind every `ur_*_handle_t` this adapter returns.
//!
//! The loader dispatches each call on the handle it is given, reading the
//! dispatch table from the handle's first word, so every handle is a
//! `#[repr(C)]` [`Handle`] whose first field points to the adapter's
//! complete `ur_dditable_t`. A kind tag follows, so that a handle of one kind
//! passed where another is expected is an error instead of a misread.
//!
//! A handle lives in an [`Arc`]. UR's reference count (`urXRetain`,
//! `urXRelease`, the `REFERENCE_COUNT` queries) is kept apart from the
//! `Arc`'s: the application's references together own one strong count,
//! dropped when UR's count reaches zero, while objects that refer to a
//! handle internally (an event to its queue, a queue to its context) hold
//! their own `Arc` clones, so that what they return in info queries stays
//! valid however the application releases.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use ur_core::{UrError, err};

use crate::entry::AbiResult;
use crate::sys::ur_dditable_t;
use crate::tables::dispatch_table;

/// The common prefix of every handle, then the object.
#[repr(C)]
pub struct Handle<T> {
    /// The loader reads the dispatch table from here.
    ddi: *const ur_dditable_t,
    /// The handle's kind ([`Object::TAG`]).
    tag: u32,
    /// How UR's reference count governs the object's life.
    lifetime: Lifetime,
    /// UR's reference count: the application's references.
    refs: AtomicU32,
    /// The object.
    pub value: T,
}

// SAFETY: `ddi` points to the immutable, process-lifetime dispatch table;
// everything else is as thread-safe as `T`.
unsafe impl<T: Send> Send for Handle<T> {}
// SAFETY: as for Send.
unsafe impl<T: Sync> Sync for Handle<T> {}

/// How UR's reference count governs a handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Lifetime {
    /// The last application release drops the application's strong count.
    Counted,
    /// Counted, but kept by the adapter for the process (the adapter).
    Root,
    /// Root devices and platforms: retain and release change nothing, as in
    /// UR's adapters (the conformance suite checks the count stays put).
    Fixed,
}

/// An object type that has a UR handle.
pub trait Object: Sized + Send + Sync + 'static {
    /// The C handle type (`ur_context_handle_t`, ...).
    type Raw: Copy;
    /// Distinguishes this kind from the others.
    const TAG: u32;
    /// What UR calls this kind, for messages.
    const NAME: &'static str;
    /// The error for a handle of another kind in this kind's place.
    fn wrong_kind() -> UrError;
    /// The C handle for a handle pointer.
    fn to_raw(handle: *const Handle<Self>) -> Self::Raw;
    /// The handle pointer behind a C handle.
    fn from_raw(raw: Self::Raw) -> *const Handle<Self>;
}

/// Declares the handle kinds: object type, C handle type, tag, name and the
/// error for a handle of the wrong kind.
macro_rules! objects {
    ($($object:ty => $raw:ident, $tag:literal, $name:literal, $wrong:ident;)*) => {
        $(
            impl Object for $object {
                type Raw = crate::sys::$raw;
                const TAG: u32 = $tag;
                const NAME: &'static str = $name;
                fn wrong_kind() -> UrError {
                    err!($wrong, "the handle is not a {}", $name)
                }
                fn to_raw(handle: *const Handle<Self>) -> Self::Raw {
                    handle.cast_mut().cast()
                }
                fn from_raw(raw: Self::Raw) -> *const Handle<Self> {
                    raw.cast_const().cast()
                }
            }
        )*
    };
}

objects! {
    crate::adapter::Adapter => ur_adapter_handle_t, 0x5552_0001, "adapter", InvalidArgument;
    crate::platform::Platform => ur_platform_handle_t, 0x5552_0002, "platform", InvalidPlatform;
    crate::device::Device => ur_device_handle_t, 0x5552_0003, "device", InvalidDevice;
    crate::context::Context => ur_context_handle_t, 0x5552_0004, "context", InvalidContext;
    crate::queue::Queue => ur_queue_handle_t, 0x5552_0005, "queue", InvalidQueue;
    crate::event::Event => ur_event_handle_t, 0x5552_0006, "event", InvalidEvent;
    crate::mem::Mem => ur_mem_handle_t, 0x5552_0007, "memory object", InvalidMemObject;
    crate::command_buffer::CommandBuffer => ur_exp_command_buffer_handle_t, 0x5552_000a, "command buffer", InvalidCommandBuffer;
    crate::command_buffer::Command => ur_exp_command_buffer_command_handle_t, 0x5552_000b, "command handle", InvalidCommandHandle;
    crate::program::Program => ur_program_handle_t, 0x5552_0008, "program", InvalidProgram;
    crate::kernel::Kernel => ur_kernel_handle_t, 0x5552_0009, "kernel", InvalidKernel;
    crate::capture::Graph => ur_exp_graph_handle_t, 0x5552_0010, "graph", InvalidGraph;
    crate::capture::ExecGraph => ur_exp_executable_graph_handle_t, 0x5552_0011, "executable graph", InvalidGraph;
}

impl<T: Object> Handle<T> {
    /// A new handle with one application reference; returns the C handle.
    pub fn create(value: T) -> T::Raw {
        T::to_raw(Arc::into_raw(Self::new_arc(value)))
    }

    /// A new handle with one application reference, kept by the caller as an
    /// `Arc` too (for objects that are listed as well as returned).
    pub fn new_arc(value: T) -> Arc<Handle<T>> {
        Arc::new(Self::with_lifetime(value, Lifetime::Counted, 1))
    }

    /// A handle only the library holds (the application has no reference
    /// to release): an adopted event's queue.
    pub(crate) fn internal(value: T) -> Arc<Handle<T>> {
        Arc::new(Self::with_lifetime(value, Lifetime::Counted, 0))
    }

    /// The adapter's handle: counted from zero, kept for the process.
    pub fn new_root(value: T) -> Arc<Handle<T>> {
        Arc::new(Self::with_lifetime(value, Lifetime::Root, 0))
    }

    /// A root device or platform: one reference that retain and release
    /// leave as it is; kept for the process. Only ever placed in an `Arc`
    /// (directly, or by `Arc::new_cyclic` for roots that refer to their
    /// children and back).
    pub(crate) fn fixed(value: T) -> Handle<T> {
        Self::with_lifetime(value, Lifetime::Fixed, 1)
    }

    fn with_lifetime(value: T, lifetime: Lifetime, refs: u32) -> Handle<T> {
        Handle { ddi: dispatch_table(), tag: T::TAG, lifetime, refs: AtomicU32::new(refs), value }
    }

    /// A counted reference to a handle borrowed in a call, for objects that keep it.
    pub fn to_arc(&self) -> Arc<Handle<T>> {
        // SAFETY: every handle is made inside an `Arc` (`new_arc`, `new_root`,
        // `fixed`), and the borrow proves a strong count is held.
        unsafe {
            Arc::increment_strong_count(self);
            Arc::from_raw(self)
        }
    }

    /// One more application reference to a handle the adapter holds (a
    /// root handle given out again, as `urAdapterGet` does).
    pub fn retain_ref(&self) {
        self.refs.fetch_add(1, Ordering::AcqRel);
    }

    /// The C handle of a handle the caller holds, without a new reference.
    pub fn raw(self: &Arc<Self>) -> T::Raw {
        T::to_raw(Arc::as_ptr(self))
    }

    /// The C handle of a handle borrowed in a call.
    pub fn raw_of(&self) -> T::Raw {
        T::to_raw(self)
    }

    /// UR's reference count.
    pub fn reference_count(&self) -> u32 {
        self.refs.load(Ordering::Acquire)
    }

    /// The handle behind `raw`, borrowed for the call.
    ///
    /// # Safety
    /// `raw` is null or a handle this adapter returned that the caller still
    /// holds a reference to (the UR contract of every entry point).
    pub unsafe fn get<'a>(raw: T::Raw) -> AbiResult<&'a Handle<T>> {
        let ptr = T::from_raw(raw);
        if ptr.is_null() {
            return Err(err!(InvalidNullHandle, "null {} handle", T::NAME));
        }
        // SAFETY: non-null, and by the contract a live handle of this adapter;
        // every handle starts with the same prefix, so reading the tag is
        // sound whatever its kind.
        let tag = unsafe { (*ptr.cast::<Handle<()>>()).tag };
        if tag != T::TAG {
            return Err(T::wrong_kind());
        }
        // SAFETY: the tag says it is a `Handle<T>`, alive per the contract.
        Ok(unsafe { &*ptr })
    }

    /// A counted reference to the handle behind `raw`, for objects that keep it.
    ///
    /// # Safety
    /// As for [`Handle::get`].
    pub unsafe fn arc(raw: T::Raw) -> AbiResult<Arc<Handle<T>>> {
        // SAFETY: forwarded.
        Ok(unsafe { Self::get(raw)? }.to_arc())
    }

    /// `urXRetain`: one more application reference.
    ///
    /// # Safety
    /// As for [`Handle::get`].
    pub unsafe fn retain(raw: T::Raw) -> AbiResult {
        // SAFETY: forwarded.
        let handle = unsafe { Self::get(raw)? };
        if handle.lifetime != Lifetime::Fixed {
            handle.refs.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// `urXRelease`: one application reference less; the last one drops the
    /// application's strong count (internal references may keep the object).
    ///
    /// # Safety
    /// As for [`Handle::get`]; after the last release the caller no longer
    /// uses `raw`.
    pub unsafe fn release(raw: T::Raw) -> AbiResult {
        // SAFETY: forwarded.
        unsafe { Self::release_then(raw, |_| ()) }
    }

    /// [`Handle::release`] that runs `last` on the value when the
    /// application's last reference goes, before the object is dropped
    /// (which internal references may delay).
    ///
    /// # Safety
    /// As for [`Handle::release`].
    pub unsafe fn release_then(raw: T::Raw, last: impl FnOnce(&T)) -> AbiResult {
        // SAFETY: forwarded.
        let handle = unsafe { Self::get(raw)? };
        if handle.lifetime == Lifetime::Fixed {
            return Ok(());
        }
        let previous = handle
            .refs
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .map_err(|_| err!(InvalidValue, "the {} was already released", T::NAME))?;
        if previous == 1 {
            last(&handle.value);
        }
        if previous == 1 && handle.lifetime == Lifetime::Counted {
            // SAFETY: the application's references together held one strong
            // count since `create`; this was the last of them.
            drop(unsafe { Arc::from_raw(handle as *const Handle<T>) });
        }
        Ok(())
    }
}

/// The handles of a C array, borrowed for the call: `count` and `list`
/// must agree (null with zero).
///
/// # Safety
/// `list` is null or points to `count` handles, each as for [`Handle::get`].
pub unsafe fn get_list<'a, T: Object>(
    list: *const T::Raw,
    count: u32,
    mismatch: fn() -> UrError,
) -> AbiResult<Vec<&'a Handle<T>>> {
    match (list.is_null(), count) {
        (true, 0) => Ok(Vec::new()),
        (true, _) | (false, 0) => Err(mismatch()),
        (false, n) => {
            // SAFETY: non-null and, by the contract, `n` handles long.
            let raws = unsafe { std::slice::from_raw_parts(list, n as usize) };
            // SAFETY: each element is a handle as for `get`.
            raws.iter().map(|r| unsafe { Handle::get(*r) }).collect()
        }
    }
}
