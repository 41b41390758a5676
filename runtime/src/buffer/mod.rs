//! SYCL buffers with AdaptiveCpp's page-tracked multi-device model
//! (docs/buffers.md).
//!
//! A [`Buffer`] has a fixed size and one allocation per device it is used
//! on (per context where contexts of one device cannot share USM), made
//! lazily through cmdbuf-core USM. Its range is a 3D grid of pages; for
//! every allocation each page is up to date or outdated ([`pages`]).
//! Accessors declared by a [`CommandGroup`] or taken as a [`HostAccessor`]
//! move only the outdated pages of their range, as few rect copies as
//! possible ([`plan`]), and order themselves after the earlier uses they
//! conflict with ([`deps`]), across devices and adapters.
//!
//! ```
//! use cmdbuf_core::{Context, Queue, QueueProperties};
//! use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, CommandGroup};
//! # let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
//! let queue = Queue::new(&context, QueueProperties::default())?;
//! let buffer = Buffer::from_host(&[1u32, 2, 3, 4], &[4])?;
//! let mut cg = CommandGroup::new(&queue);
//! let acc = cg.access(&buffer, AccessMode::ReadWrite, AccessRange::all())?;
//! // The data is on the device before the work starts; fill it from there.
//! let event = cg.submit(|queue, wait| queue.usm_fill(acc.ptr(), &[0], 16, wait))?;
//! event.wait()?;
//! assert_eq!(buffer.host_access(AccessMode::Read, AccessRange::all())?.to_vec::<u32>()?, [0, 0, 0, 0]);
//! # Ok::<(), cmdbuf_core::UrError>(())
//! ```

pub mod accessor;
mod alloc;
pub mod deps;
mod exec;
pub mod geometry;
pub(crate) mod graph;
pub mod host;
pub mod pages;
pub mod plan;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cmdbuf_core::{Context, Queue, Result, UsmPtr, ensure, err};
use parking_lot::Mutex;

pub use accessor::{AccessMode, AccessRange, Accessor, CommandGroup};
pub use host::HostAccessor;

use alloc::{Dep, DeviceAlloc, DeviceMem, HostMem};
use deps::DepTracker;
use geometry::{PageBox, PageGrid};
use pages::{HOST, Loc, PageMap};

/// What a buffer's transfers moved so far.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Rect copies planned: each moves a box of pages between two allocations.
    pub copies: u64,
    /// Pages those copies moved.
    pub pages: u64,
    /// Bytes those copies moved.
    pub bytes: u64,
    /// Copies between two device allocations that went through the host
    /// allocation (two backend transfers each): the devices are no peers.
    pub via_host: u64,
    /// Copies between two device allocations that went directly, as peer
    /// copies (`Queue::usm_copy_peer`), one device having peer access to the
    /// other (`Device::peer_access`).
    pub peer: u64,
    /// Bytes those peer copies moved.
    pub peer_bytes: u64,
    /// Backend commands issued: a copy of a rect whose rows are not
    /// contiguous is one 2D copy per slice.
    pub commands: u64,
}

/// How a buffer is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BufferProperties {
    /// Page size in elements per dimension (as many as the range has);
    /// `None` for [`PageGrid::default_page`].
    pub page: Option<Vec<usize>>,
}

/// Where the buffer's data goes when it is dropped.
pub type FinalData = Box<dyn FnOnce(&[u8]) + Send>;

/// The state behind every handle of one buffer.
pub(crate) struct State {
    pub(crate) grid: PageGrid,
    pub(crate) map: PageMap,
    pub(crate) host: Option<HostMem>,
    /// `allocs[loc - 1]` is location `loc`.
    pub(crate) allocs: Vec<DeviceAlloc>,
    pub(crate) deps: DepTracker<Dep>,
    pub(crate) stats: TransferStats,
    final_data: Option<FinalData>,
    write_back: bool,
    /// The context of the user's allocation a buffer was built over: the
    /// only one it may be used in (with the contexts that share its USM).
    bound: Option<Context>,
    /// Whether a context of a device already holding an allocation shares
    /// it where it can ([`Buffer::set_share_allocations`]).
    share: bool,
}

impl State {
    fn new(grid: PageGrid) -> State {
        State {
            grid,
            map: PageMap::new(grid),
            host: None,
            allocs: Vec::new(),
            deps: DepTracker::new(grid.pages()),
            stats: TransferStats::default(),
            final_data: None,
            write_back: true,
            bound: None,
            share: true,
        }
    }

    /// The location of `queue`'s context, allocating it at first use.
    pub(crate) fn location(&mut self, queue: &Queue) -> Result<Loc> {
        let context = queue.context();
        if let Some(i) = self.allocs.iter().position(|a| a.serves(context)) {
            if self.allocs[i].queue.is_none() {
                self.allocs[i].queue = Some(queue.clone());
            }
            return Ok(i + 1);
        }
        // Another context of a device that holds an allocation: one
        // location, where the two contexts can share USM.
        if self.share
            && let Some(i) = self.allocs.iter_mut().position(|a| a.try_share(context))
        {
            return Ok(i + 1);
        }
        if let Some(bound) = &self.bound {
            return Err(err!(
                InvalidDevice,
                "the buffer is built over a USM allocation of device {}; it cannot be used on device {}",
                bound.device(),
                context.device()
            ));
        }
        self.allocs.push(DeviceAlloc::allocate(queue, self.grid.bytes())?);
        Ok(self.map.add_location())
    }

    pub(crate) fn host_mem(&mut self) -> Result<&mut HostMem> {
        if self.host.is_none() {
            self.host = Some(HostMem::new(self.grid.bytes())?);
        }
        Ok(self.host.as_mut().expect("allocated above"))
    }

    pub(crate) fn device_ptr(&self, loc: Loc) -> UsmPtr {
        self.allocs[loc - 1].ptr()
    }

    /// Whether dropping the buffer would write its data back to final data.
    pub(crate) fn writes_back(&self) -> bool {
        self.final_data.is_some() && self.write_back
    }
}

pub(crate) struct Shared {
    pub(crate) id: u64,
    pub(crate) state: Mutex<State>,
    /// The graphs that recorded commands using the buffer: a host accessor
    /// is refused while one of them is still being recorded. A lock of its
    /// own, so that a graph can note itself while holding its own lock.
    pub(crate) recorders: Mutex<Vec<graph::Recorder>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let state = self.state.get_mut();
        if let Err(e) = exec::finish(state) {
            tracing::error!(error = %e, "buffer: waiting for its work or writing back failed");
        }
        if let (Some(sink), true) = (state.final_data.take(), state.write_back)
            && let Some(host) = &mut state.host
        {
            let len = host.len();
            // SAFETY: all work on the buffer has completed (`finish`), so
            // nothing writes the host memory any more.
            sink(unsafe { std::slice::from_raw_parts(host.ptr(), len) });
        }
    }
}

/// A SYCL buffer: fixed-size storage usable on any number of devices, whose
/// data follows the accessors that use it. Cheap to clone (handles share
/// the storage); the storage is freed when the last handle is dropped, after
/// its work has completed and its data has been written back.
#[derive(Clone)]
pub struct Buffer {
    pub(crate) shared: Arc<Shared>,
    /// The shape accessors of this handle use (a reinterpretation's own).
    pub(crate) view: PageGrid,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Buffer {
    fn with_state(state: State) -> Buffer {
        let view = state.grid;
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(state),
            recorders: Mutex::new(Vec::new()),
        });
        Buffer { shared, view }
    }

    /// An uninitialized buffer of `range` (1 to 3 dimensions) elements of
    /// `elem_size` bytes. Zero sizes are `InvalidBufferSize`, zero page sizes
    /// `InvalidValue`.
    pub fn new(elem_size: usize, range: &[usize], properties: &BufferProperties) -> Result<Buffer> {
        let grid = PageGrid::new(elem_size, range, properties.page.as_deref())?;
        Ok(Buffer::with_state(State::new(grid)))
    }

    /// A buffer holding a copy of `data`, made in the constructor into its
    /// host allocation. `data` has as many elements as `range` holds.
    pub fn from_host<T: bytemuck::NoUninit>(data: &[T], range: &[usize]) -> Result<Buffer> {
        Self::from_host_with(data, range, &BufferProperties::default())
    }

    /// [`from_host`](Self::from_host) with properties.
    pub fn from_host_with<T: bytemuck::NoUninit>(
        data: &[T],
        range: &[usize],
        properties: &BufferProperties,
    ) -> Result<Buffer> {
        let grid = PageGrid::new(size_of::<T>(), range, properties.page.as_deref())?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        ensure!(
            bytes.len() == grid.bytes(),
            InvalidBufferSize,
            "{} elements of data for a buffer of {} elements",
            data.len(),
            geometry::elements(grid.range())?
        );
        let mut state = State::new(grid);
        let host = state.host_mem()?;
        // SAFETY: the host allocation has `grid.bytes()` bytes, as `bytes` has.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), host.ptr(), bytes.len()) };
        state.map.mark_written(HOST, &grid.all());
        Ok(Buffer::with_state(state))
    }

    /// A buffer over the user's USM allocation at `ptr` of `context`, which
    /// must hold the whole buffer: the buffer treats it as its allocation of
    /// that context, holding initialized data, and can be used only there
    /// (elsewhere `InvalidDevice`). The allocation is kept alive while the
    /// buffer is.
    pub fn from_usm(
        context: &Context,
        ptr: UsmPtr,
        elem_size: usize,
        range: &[usize],
        properties: &BufferProperties,
    ) -> Result<Buffer> {
        let grid = PageGrid::new(elem_size, range, properties.page.as_deref())?;
        let usm = context.find_usm(ptr, grid.bytes())?;
        let mut state = State::new(grid);
        let alloc =
            DeviceAlloc { context: context.clone(), mem: DeviceMem::User(usm), queue: None, sharers: Vec::new() };
        state.allocs.push(alloc);
        let loc = state.map.add_location();
        state.map.mark_written(loc, &grid.all());
        state.bound = Some(context.clone());
        Ok(Buffer::with_state(state))
    }

    /// Where the data goes when the last handle is dropped: `sink` receives
    /// the whole buffer's bytes, made current on the host. `None` turns the
    /// write-back off (SYCL's `set_final_data(nullptr)`).
    pub fn set_final_data(&self, sink: Option<FinalData>) {
        self.shared.state.lock().final_data = sink;
    }

    /// Turns the write-back to the final data on or off.
    pub fn set_write_back(&self, enabled: bool) {
        self.shared.state.lock().write_back = enabled;
    }

    /// Whether a context first using the buffer on a device that already
    /// holds an allocation of it (through another context) shares that
    /// allocation, where the two contexts can share USM
    /// ([`Context::share_usm_with`], which the buffer calls): on by default.
    /// Off, every context gets an allocation of its own and data moves
    /// between them as between devices. Affects later first uses only.
    pub fn set_share_allocations(&self, enabled: bool) {
        self.shared.state.lock().share = enabled;
    }

    /// The same storage seen as `range` elements of `elem_size` bytes
    /// (`None`: 1D, as many as fit). Sizes that do not divide the buffer's
    /// bytes, or ranges of another total size, are `InvalidValue`. Accessors
    /// of a view whose shape differs from the buffer's use a page range that
    /// covers their bytes, which may be larger than the bytes need.
    pub fn reinterpret(&self, elem_size: usize, range: Option<&[usize]>) -> Result<Buffer> {
        let bytes = self.view.bytes();
        let count = geometry::divide(bytes, elem_size)?;
        let view = match range {
            None => PageGrid::new(elem_size, &[count], None)?,
            Some(r) => {
                let grid = PageGrid::new(elem_size, r, None)?;
                ensure!(
                    grid.bytes() == bytes,
                    InvalidValue,
                    "a range of {r:?} elements of {elem_size} bytes is not the buffer's {bytes} bytes"
                );
                grid
            }
        };
        Ok(Buffer { shared: self.shared.clone(), view })
    }

    /// The element size of this view.
    pub fn elem_size(&self) -> usize {
        self.view.elem_size()
    }

    /// Bytes of the buffer.
    pub fn byte_size(&self) -> usize {
        self.view.bytes()
    }

    /// The buffer's page grid (of the original shape, which reinterpretations share).
    pub fn grid(&self) -> PageGrid {
        self.shared.state.lock().grid
    }

    /// What the buffer's transfers moved so far.
    pub fn stats(&self) -> TransferStats {
        self.shared.state.lock().stats
    }

    /// The buffer's allocation on `queue`'s device (made now if it is the
    /// first use there), usable as a USM pointer for the buffer's life. No
    /// data moves and nothing is ordered: the user synchronizes USM work on
    /// it with the buffer's other work.
    pub fn device_ptr(&self, queue: &Queue) -> Result<UsmPtr> {
        let mut state = self.shared.state.lock();
        let loc = state.location(queue)?;
        Ok(state.device_ptr(loc))
    }

    /// Whether both handles are the same storage.
    pub fn same_buffer(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// The page box of an access of this view.
    pub(crate) fn page_box(&self, grid: &PageGrid, range: &AccessRange) -> Result<(PageBox, (usize, usize))> {
        let (offset, extent) = range.resolve(&self.view)?;
        let vbox = self.view.page_box(offset, extent)?;
        let span = byte_span(&self.view, offset, extent);
        if self.view == *grid {
            return Ok((vbox, span));
        }
        Ok((grid.byte_span_box(span.0, span.1), span))
    }
}

/// The bytes `[first, end)` from an access's first element to its last.
pub(crate) fn byte_span(view: &PageGrid, offset: geometry::Dims, extent: geometry::Dims) -> (usize, usize) {
    let r = view.range();
    let lin = |e: geometry::Dims| (e[0] * r[1] + e[1]) * r[2] + e[2];
    let last = [0, 1, 2].map(|d| offset[d] + extent[d] - 1);
    (lin(offset) * view.elem_size(), (lin(last) + 1) * view.elem_size())
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer").field("id", &self.shared.id).field("view", &self.view).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Buffer>();
        send_sync::<Accessor>();
        send_sync::<HostAccessor>();
        fn send<T: Send>() {}
        send::<CommandGroup>();
    }
}
