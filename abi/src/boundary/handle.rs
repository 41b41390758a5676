//! Handles: the objects behind every `ur_*_handle_t` this adapter returns.
//!
//! A C handle points into a *slot*, not to the object. Slots are never freed:
//! they live in chunks the library keeps for the process and are reused, so
//! whatever handle an application passes, released or released twice, the
//! library reads only its own live memory to tell whether it names an object.
//!
//! - The loader dispatches each call on the handle it is given, reading the
//!   dispatch table from the handle's first word. A slot's first 64 bytes
//!   are eight copies of the pointer to the adapter's complete
//!   `ur_dditable_t`, and the C handle is the slot's address plus 8 × its
//!   *generation* (0 to 7), so the word at every handle a slot ever had is
//!   the table, also after release (the loader still reaches this library,
//!   which answers the error).
//! - The slot's state word holds the kind tag, the generation and whether
//!   the application may still use the handle. Resolving a handle is one
//!   load of that word and one comparison with the value the call expects
//!   (the kind, the handle's generation, live); then the object pointer.
//!   No lock, no shared write: every entry point resolves handles.
//! - When an object goes, its slot's generation advances and the slot joins
//!   the back of a free list (one per shard of threads); a slot is taken
//!   again only when its list holds more than [`QUARANTINE`] others, so an
//!   old handle names its slot's next object only after at least
//!   `QUARANTINE` × 8 reuses of that slot's list: until then it is answered
//!   as released. After that it names whatever object holds the slot now
//!   (as a reused address would with any pointer handle): still never
//!   freed memory.
//!
//! A handle's object lives in an [`Arc`]. UR's reference count (`urXRetain`,
//! `urXRelease`, the `REFERENCE_COUNT` queries) is kept apart from the
//! `Arc`'s: the application's references together own one strong count,
//! dropped when UR's count reaches zero, while objects that refer to a
//! handle internally (an event to its queue, a queue to its context) hold
//! their own `Arc` clones, so that what they return in info queries stays
//! valid however the application releases. The application's last release
//! also ends the handle for the application: every later call naming it,
//! another release included, is `UR_RESULT_ERROR_INVALID_NULL_HANDLE` (it
//! names no object the application holds), whether or not internal
//! references keep the object itself.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use cmdbuf_core::{UrError, err};
use parking_lot::Mutex;

use crate::entry::AbiResult;
use crate::sys::ur_dditable_t;

/// Generations a slot cycles through: the C handles of one slot are its
/// address plus 0, 8, ... 56.
const GENERATIONS: usize = 8;
/// Where the generation sits in a slot's state word.
const GENERATION_SHIFT: u32 = 32;
/// The state bit of a handle the application may use.
const LIVE: u64 = 1 << 40;
/// Slots made at a time.
const CHUNK: usize = 64;
/// Free slots a shard keeps before it reuses the oldest.
const QUARANTINE: usize = 64;
/// Free lists, each used by the threads assigned to it round-robin.
const SHARDS: usize = 16;

/// Where the complete dispatch table lives: its address is fixed before
/// it is filled, so that handles (this layer) can point to it while only the
/// tables above (`crate::tables`, which names every entry point) fill it.
/// The loader reads the table through a handle only after a getter filled
/// it: it has no handle before it called one.
pub struct DispatchTable {
    table: UnsafeCell<MaybeUninit<ur_dditable_t>>,
    filled: Once,
}

// SAFETY: `table` is written once, inside `filled.call_once`, and read only
// after that call returned (`Once` orders the write before every read).
unsafe impl Sync for DispatchTable {}

impl DispatchTable {
    const fn new() -> DispatchTable {
        DispatchTable { table: UnsafeCell::new(MaybeUninit::uninit()), filled: Once::new() }
    }

    /// The table, filled by `fill` on the first call.
    pub fn get_or_fill(&'static self, fill: fn() -> ur_dditable_t) -> &'static ur_dditable_t {
        self.filled.call_once(|| {
            // SAFETY: the only write, once, before any read (see the Sync impl).
            unsafe { (*self.table.get()).write(fill()) };
        });
        // SAFETY: `call_once` returned, so the table is written, and never
        // written again.
        unsafe { (*self.table.get()).assume_init_ref() }
    }

    /// The table's address, the first word of every handle.
    fn address(&'static self) -> *const ur_dditable_t {
        self.table.get().cast_const().cast()
    }
}

/// The dispatch table every handle points to; `crate::tables` fills it.
pub static DISPATCH_TABLE: DispatchTable = DispatchTable::new();

/// What a C handle points into.
#[repr(C, align(64))]
struct Slot {
    /// The loader reads the dispatch table from a handle's first word: one
    /// copy per generation's address.
    ddi: [*const ur_dditable_t; GENERATIONS],
    /// Kind tag (low 32 bits), generation, [`LIVE`].
    state: AtomicU64,
    /// The `Handle<T>` of the current object; null while free.
    object: AtomicPtr<()>,
}

// SAFETY: `ddi` points to the process-lifetime dispatch table (written once,
// before the loader can read it) and is never written after the slot is
// made; the rest is atomic.
unsafe impl Sync for Slot {}
// SAFETY: as for Sync: the table pointers are never written after the slot
// is made and the rest is atomic, so any thread may own a slot.
unsafe impl Send for Slot {}

type FreeList = Mutex<VecDeque<&'static Slot>>;

static FREE: [FreeList; SHARDS] = [const { Mutex::new(VecDeque::new()) }; SHARDS];
/// Every chunk made, so that they stay reachable (leak checkers).
static CHUNKS: Mutex<Vec<&'static [Slot]>> = Mutex::new(Vec::new());

/// This thread's free list.
fn free_list() -> &'static FreeList {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    // A thread whose locals are gone (an object dropped in a TLS destructor)
    // uses the first list.
    &FREE[SHARD.try_with(|s| *s).unwrap_or(0)]
}

impl Slot {
    fn new() -> Slot {
        let table = DISPATCH_TABLE.address();
        Slot { ddi: [table; GENERATIONS], state: AtomicU64::new(0), object: AtomicPtr::new(std::ptr::null_mut()) }
    }

    /// A free slot, for the caller alone until it vacates it.
    fn take() -> &'static Slot {
        let mut free = free_list().lock();
        if free.len() > QUARANTINE
            && let Some(slot) = free.pop_front()
        {
            return slot;
        }
        let chunk: &'static [Slot] = Box::leak((0..CHUNK).map(|_| Slot::new()).collect());
        CHUNKS.lock().push(chunk);
        free.extend(&chunk[1..]);
        &chunk[0]
    }

    /// The slot's current generation.
    fn generation(&self) -> u64 {
        (self.state.load(Ordering::Acquire) >> GENERATION_SHIFT) % GENERATIONS as u64
    }

    /// The C handle of generation `generation` (as a byte pointer).
    fn address(&self, generation: u64) -> *const u8 {
        (self as *const Slot).cast::<u8>().wrapping_add(generation as usize * size_of::<*const ur_dditable_t>())
    }

    /// The state of a handle of kind `tag` and `generation` that the
    /// application may use.
    fn live_state(tag: u32, generation: u64) -> u64 {
        u64::from(tag) | generation << GENERATION_SHIFT | LIVE
    }

    /// Makes the slot name `object`, of kind `tag`, for the application.
    fn publish(&self, tag: u32, generation: u64, object: *const ()) {
        self.object.store(object.cast_mut(), Ordering::Relaxed);
        // Release: a call that sees the state sees the object pointer.
        self.state.store(Self::live_state(tag, generation), Ordering::Release);
    }

    /// The application's last reference is gone: no call may use the handle.
    fn end(&self) {
        self.state.fetch_and(!LIVE, Ordering::AcqRel);
    }

    /// The object is gone: the next generation, at the back of a free list.
    fn vacate(&'static self, generation: u64) {
        self.object.store(std::ptr::null_mut(), Ordering::Relaxed);
        let next = (generation + 1) % GENERATIONS as u64;
        self.state.store(next << GENERATION_SHIFT, Ordering::Release);
        free_list().lock().push_back(self);
    }
}

/// The object behind a handle, with the handle's bookkeeping.
pub struct Handle<T> {
    /// The slot its C handle points into.
    slot: &'static Slot,
    /// Its generation there (fixed for the object's life).
    generation: u64,
    /// How UR's reference count governs the object's life.
    lifetime: Lifetime,
    /// UR's reference count: the application's references.
    refs: AtomicU32,
    /// The object.
    pub value: T,
}

impl<T> Drop for Handle<T> {
    fn drop(&mut self) {
        self.slot.vacate(self.generation);
    }
}

/// How UR's reference count governs a handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Lifetime {
    /// The application's references own one strong count from creation; the
    /// last release drops it and ends the handle.
    Counted,
    /// Made without an application reference (an adopted event's queue):
    /// references the application takes own one strong count while there
    /// are any; the handle stays valid as long as the object lives.
    Internal,
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
    /// Distinguishes this kind from the others (never 0, a free slot's).
    const TAG: u32;
    /// What UR calls this kind, for messages.
    const NAME: &'static str;
    /// The error for a handle of another kind in this kind's place.
    fn wrong_kind() -> UrError;
    /// The C handle at a handle address.
    fn to_raw(address: *const u8) -> Self::Raw;
    /// The handle address of a C handle.
    fn from_raw(raw: Self::Raw) -> *const u8;
}

/// Declares the handle kinds: object type, C handle type, tag, name and the
/// error for a handle of the wrong kind.
macro_rules! handle_kinds {
    ($($object:ty => $raw:ident, $tag:literal, $name:literal, $wrong:ident;)*) => {
        $(
            impl crate::boundary::handle::Object for $object {
                type Raw = crate::sys::$raw;
                const TAG: u32 = $tag;
                const NAME: &'static str = $name;
                fn wrong_kind() -> cmdbuf_core::UrError {
                    cmdbuf_core::err!($wrong, "the handle is not a {}", $name)
                }
                fn to_raw(address: *const u8) -> Self::Raw {
                    address.cast_mut().cast()
                }
                fn from_raw(raw: Self::Raw) -> *const u8 {
                    raw.cast_const().cast()
                }
            }
        )*
    };
}

pub(crate) use handle_kinds;

impl<T: Object> Handle<T> {
    /// A new handle with one application reference; returns the C handle.
    pub fn create(value: T) -> T::Raw {
        Self::into_raw(Self::new_arc(value))
    }

    /// The C handle of `handle`, whose strong count the application's
    /// reference owns from now on.
    pub fn into_raw(handle: Arc<Handle<T>>) -> T::Raw {
        let raw = handle.raw();
        // The application's references own this strong count; the last
        // release takes it back (`release_then`).
        let _ = Arc::into_raw(handle);
        raw
    }

    /// A new handle with one application reference, kept by the caller as an
    /// `Arc` too (for objects that are listed as well as returned).
    pub fn new_arc(value: T) -> Arc<Handle<T>> {
        Self::published(Self::with_lifetime(value, Lifetime::Counted, 1))
    }

    /// A handle only the library holds (the application has no reference
    /// to release): an adopted event's queue.
    pub(crate) fn internal(value: T) -> Arc<Handle<T>> {
        Self::published(Self::with_lifetime(value, Lifetime::Internal, 0))
    }

    /// The adapter's handle: counted from zero, kept for the process.
    pub fn new_root(value: T) -> Arc<Handle<T>> {
        Self::published(Self::with_lifetime(value, Lifetime::Root, 0))
    }

    /// A root device: one reference that retain and release leave as it is;
    /// kept for the process.
    pub(crate) fn fixed(value: T) -> Arc<Handle<T>> {
        Self::published(Self::unpublished_fixed(value))
    }

    /// [`Handle::fixed`] for a root built by `Arc::new_cyclic` (a platform
    /// whose devices refer back to it): unusable until [`Handle::publish`].
    pub(crate) fn unpublished_fixed(value: T) -> Handle<T> {
        Self::with_lifetime(value, Lifetime::Fixed, 1)
    }

    /// Makes a handle built in place usable through its C handle.
    pub(crate) fn publish(self: &Arc<Self>) {
        self.slot.publish(T::TAG, self.generation, Arc::as_ptr(self).cast());
    }

    fn published(handle: Handle<T>) -> Arc<Handle<T>> {
        let handle = Arc::new(handle);
        handle.publish();
        handle
    }

    fn with_lifetime(value: T, lifetime: Lifetime, refs: u32) -> Handle<T> {
        let slot = Slot::take();
        Handle { slot, generation: slot.generation(), lifetime, refs: AtomicU32::new(refs), value }
    }

    /// A counted reference to a handle borrowed in a call, for objects that keep it.
    pub fn to_arc(&self) -> Arc<Handle<T>> {
        // SAFETY: every handle is made inside an `Arc` (`published`, or
        // `Arc::new_cyclic` for a platform), and the borrow proves a strong
        // count is held.
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
        self.raw_of()
    }

    /// The C handle of a handle borrowed in a call.
    pub fn raw_of(&self) -> T::Raw {
        T::to_raw(self.slot.address(self.generation))
    }

    /// Whether the application may still use the handle (its last release
    /// has not happened).
    pub fn is_live(&self) -> bool {
        self.slot.state.load(Ordering::Acquire) & LIVE != 0
    }

    /// UR's reference count.
    pub fn reference_count(&self) -> u32 {
        self.refs.load(Ordering::Acquire)
    }

    /// The handle behind `raw`, borrowed for the call:
    /// `INVALID_NULL_HANDLE` for null and for a handle the application
    /// released, the kind's error for a live handle of another kind.
    ///
    /// # Safety
    /// `raw` is null or a handle this adapter returned (live or released);
    /// a handle the caller holds a reference to stays valid for the call
    /// unless another thread releases its last reference meanwhile.
    #[inline]
    pub unsafe fn get<'a>(raw: T::Raw) -> AbiResult<&'a Handle<T>> {
        let address = T::from_raw(raw);
        if address.is_null() {
            return Err(err!(InvalidNullHandle, "null {} handle", T::NAME));
        }
        let offset = address.addr() % align_of::<Slot>();
        if !offset.is_multiple_of(size_of::<*const ur_dditable_t>()) {
            return Err(err!(InvalidNullHandle, "the {} handle is no handle of this library", T::NAME));
        }
        let generation = (offset / size_of::<*const ur_dditable_t>()) as u64;
        // SAFETY: by the contract a handle of this adapter, so inside a slot,
        // which is never freed; `offset` leads back to its start.
        let slot = unsafe { &*address.wrapping_sub(offset).cast::<Slot>() };
        let state = slot.state.load(Ordering::Acquire);
        if state != Slot::live_state(T::TAG, generation) {
            return Err(Self::unusable(state, generation));
        }
        let object = slot.object.load(Ordering::Acquire).cast_const().cast::<Handle<T>>();
        // SAFETY: the state says the slot holds a live `Handle<T>` of this
        // generation, which the application's references keep alive.
        Ok(unsafe { &*object })
    }

    /// Why a slot in `state` is not a live handle of this kind and generation.
    #[cold]
    fn unusable(state: u64, generation: u64) -> UrError {
        let same_handle = (state >> GENERATION_SHIFT) % GENERATIONS as u64 == generation;
        let tag = state as u32;
        if same_handle && state & LIVE != 0 && tag != 0 {
            return T::wrong_kind();
        }
        err!(InvalidNullHandle, "the {} handle was released: it names no object any more", T::NAME)
    }

    /// A counted reference to the handle behind `raw`, for objects that keep it.
    ///
    /// # Safety
    /// As for [`Handle::get`].
    pub unsafe fn arc(raw: T::Raw) -> AbiResult<Arc<Handle<T>>> {
        // SAFETY: `raw` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        Ok(unsafe { Self::get(raw)? }.to_arc())
    }

    /// `urXRetain`: one more application reference.
    ///
    /// # Safety
    /// As for [`Handle::get`].
    pub unsafe fn retain(raw: T::Raw) -> AbiResult {
        // SAFETY: `raw` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        let handle = unsafe { Self::get(raw)? };
        match handle.lifetime {
            Lifetime::Fixed => {}
            Lifetime::Internal => {
                if handle.refs.fetch_add(1, Ordering::AcqRel) == 0 {
                    // The application's first reference owns a strong count.
                    // SAFETY: the handle lives in an `Arc`, alive for the call.
                    unsafe { Arc::increment_strong_count(handle) };
                }
            }
            Lifetime::Counted | Lifetime::Root => {
                handle.refs.fetch_add(1, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    /// `urXRelease`: one application reference less; the last one ends the
    /// handle and drops the application's strong count (internal references
    /// may keep the object).
    ///
    /// # Safety
    /// As for [`Handle::get`].
    pub unsafe fn release(raw: T::Raw) -> AbiResult {
        // SAFETY: `raw` is null or one of this adapter's handles (this function's `# Safety`), all `release_then`
        // needs.
        unsafe { Self::release_then(raw, |_| ()) }
    }

    /// [`Handle::release`] that runs `last` on the value when the
    /// application's last reference goes, before the object is dropped
    /// (which internal references may delay).
    ///
    /// # Safety
    /// As for [`Handle::release`].
    pub unsafe fn release_then(raw: T::Raw, last: impl FnOnce(&T)) -> AbiResult {
        // SAFETY: `raw` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        let handle = unsafe { Self::get(raw)? };
        if handle.lifetime == Lifetime::Fixed {
            return Ok(());
        }
        // Only a handle that outlives its references gets here at zero: the
        // adapter, or one the library made for itself.
        let previous = handle
            .refs
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .map_err(|_| err!(InvalidValue, "the {} has no reference left to release", T::NAME))?;
        if previous != 1 {
            return Ok(());
        }
        if handle.lifetime == Lifetime::Counted {
            // Before anything else: from here on every call naming the
            // handle is refused without reading the object.
            handle.slot.end();
        }
        last(&handle.value);
        if matches!(handle.lifetime, Lifetime::Counted | Lifetime::Internal) {
            // SAFETY: the application's references together held one strong
            // count (since `create`, or since `retain` took the first of an
            // internal handle's); this was the last of them.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::event::Event;
    use crate::tables::dispatch_table;

    #[test]
    fn a_slot_is_reused_only_after_the_quarantine() {
        // Fresh slots of this thread's list; none of them repeats until
        // more than QUARANTINE have been freed after it.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..QUARANTINE {
            let slot = Slot::take();
            assert!(seen.insert(slot as *const Slot as usize));
            slot.vacate(slot.generation());
        }
    }

    #[test]
    fn a_handle_address_holds_the_dispatch_table_in_every_generation() {
        let slot = Slot::take();
        for generation in 0..GENERATIONS as u64 {
            // SAFETY: inside the slot's first 64 bytes, a table pointer each.
            let word = unsafe { *slot.address(generation).cast::<*const ur_dditable_t>() };
            assert!(std::ptr::eq(word, dispatch_table()));
        }
        slot.vacate(slot.generation());
    }

    #[test]
    fn a_released_slot_is_refused_without_its_object() {
        let slot = Slot::take();
        let generation = slot.generation();
        slot.publish(Event::TAG, generation, std::ptr::null());
        let raw = Event::to_raw(slot.address(generation));
        slot.end();
        // SAFETY: a handle of this library, released (its object pointer is
        // null: reading it would crash).
        let got = unsafe { Handle::<Event>::get(raw) };
        assert!(matches!(got, Err(UrError::InvalidNullHandle(_))), "{:?}", got.err());
        slot.vacate(generation);
        // SAFETY: as above, its slot now free.
        let got = unsafe { Handle::<Event>::get(raw) };
        assert!(matches!(got, Err(UrError::InvalidNullHandle(_))), "{:?}", got.err());
    }
}
