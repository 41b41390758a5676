//! The `extern "C"` entry points, one module per UR table (or per group of
//! one table's entry points: `device_info`, `usm_2d`, ...), above the
//! boundary and the handle objects; only the dispatch tables name them, and
//! only behind the generated checks (`checks.rs`): a C caller reaches an
//! entry point here only after its header's mechanical `@returns`
//! conditions (null handles and pointers, enumerations, flag masks,
//! count/pointer pairs, sizes) held. Those are not tested again here; what
//! the header states in prose, or what needs state, is.
//!
//! # Why the unsafe calls here are sound
//!
//! Every entry point is an `unsafe extern "C" fn` whose `# Safety` is UR's
//! contract for that call (the spec's parameter descriptions). The helpers
//! they call (`Handle::get`, `wait_list`, `emit`, `InfoOut::new`, ...) are
//! `unsafe` only because they read or write what a C pointer names, which
//! no Rust check can prove; everything else (null, counts that disagree,
//! released handles, handles of the wrong kind) they check and refuse.
//! The parts of UR's contract they rely on, named by the `SAFETY` comments
//! (`entry_points doc, "Handles"` and so on):
//!
//! - **Handles.** A handle parameter (`hQueue`, `hContext`, `phEventWaitList`
//!   entries, a descriptor's `hNewKernel`, ...) is null or a handle this
//!   adapter returned: the loader dispatches on the table at a handle's
//!   first word, and the spec leaves another adapter's handle undefined.
//!   The application may have released it. That is all `Handle::get` (and
//!   `arc`, `retain`, `release`, which call it) requires: a handle address
//!   leads into a slot that is never freed, so null, released and
//!   wrong-kind handles are told apart and refused.
//! - **Wait lists.** `phEventWaitList` is null or points to
//!   `numEventsInWaitList` event handles, each as under Handles (UR's
//!   contract for every `urEnqueue*` and `urCommandBufferAppend*Exp`; the
//!   same for a command buffer's `pSyncPointWaitList`). A null list with a
//!   non-zero count, or a list with a zero count, is refused by `get_list`
//!   before anything is read.
//! - **Out-pointers.** An output parameter (`phEvent`, `phQueue`,
//!   `pSyncPoint`, `phNativeX`, `pCount`, ...) is null or writable for one
//!   value of its type, or for `NumEntries` values where UR passes a count.
//!   Where UR makes it optional the helper writes only when it is non-null;
//!   where UR requires it the generated check has refused null, which the
//!   `SAFETY` comment names (`checks.rs rejected NULL == phX`).
//! - **Info queries.** `pPropValue` is null or writable for `propSize`
//!   bytes and `pPropSizeRet` is null or writable (UR's contract for every
//!   `urXGetInfo`), which is what `InfoOut::new` requires; it refuses the
//!   two both null, and checks every answer's size against `propSize`.
//! - **Arrays and strings.** A pointer the spec gives with a count or size
//!   (`phDevices`/`numDevices`, `pGlobalWorkSize`/`workDim`,
//!   `pPattern`/`patternSize`, `pArgs`/`numArgs`) is null or readable for
//!   that many elements; a `const char *` is null or NUL-terminated; a
//!   properties pointer (`pProperties`) is null or one readable struct of
//!   its type. Where UR requires the pointer, null was refused by the
//!   generated check, or, for pointers inside arrays and descriptors that
//!   the header has no condition for, by the helper.
//! - **Host memory.** Host memory a command reads or writes (`pDst`,
//!   `pSrc` of a host copy) stays valid until the command completes, or at
//!   every execution of the command buffer it was appended to.

pub(crate) mod adapter;
pub(crate) mod adopt;
pub(crate) mod capture;
pub(crate) mod command_buffer;
pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod device_info;
pub(crate) mod enqueue;
pub(crate) mod event;
pub(crate) mod kernel;
pub(crate) mod mem;
pub(crate) mod native;
pub(crate) mod platform;
pub(crate) mod program;
pub(crate) mod queue;
pub(crate) mod timestamp;
pub(crate) mod usm;
pub(crate) mod usm_2d;
pub(crate) mod usm_p2p;
