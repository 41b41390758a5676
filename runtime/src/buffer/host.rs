//! Host accessors: the buffer's data on the host, current and unshared.

use std::sync::Arc;

use cmdbuf_core::{Result, ensure, err};

use super::alloc::{Dep, HostRelease};
use super::deps::UseKind;
use super::geometry::PageBox;
use super::pages::HOST;
use super::plan::plan;
use super::{AccessMode, AccessRange, Buffer, Shared};
use super::{exec, graph};

/// The bytes of a buffer from an access's first element to its last, in
/// the host allocation. Taking it waits for the work it conflicts with and
/// moves the outdated pages to the host; while it lives, conflicting work
/// submitted later waits for it to be dropped.
///
/// Its page range covers its whole byte span (for a 2D or 3D range, the
/// rows in between too), so that no transfer can touch bytes it lends out.
pub struct HostAccessor {
    /// Keeps the host allocation the bytes live in.
    _shared: Arc<Shared>,
    release: Arc<HostRelease>,
    ptr: *mut u8,
    len: usize,
    mode: AccessMode,
    pages: PageBox,
}

// SAFETY: the accessor lends bytes of the host allocation that no transfer
// touches while it lives (its page range is in the dependency tracker), and
// the allocation lives as long as `shared`, which it holds.
unsafe impl Send for HostAccessor {}
// SAFETY: shared access only reads through `&self`.
unsafe impl Sync for HostAccessor {}

impl Buffer {
    /// A host accessor of `range` in `mode`. Blocks until the work it
    /// conflicts with is done and its pages are current on the host. A
    /// conflicting host accessor still alive is `InvalidOperation` (waiting
    /// for it would never end on this thread).
    pub fn host_access(&self, mode: AccessMode, range: AccessRange) -> Result<HostAccessor> {
        graph::check_not_recorded(&self.shared)?;
        let mut state = self.shared.state.lock();
        let grid = state.grid;
        let (_, span) = self.page_box(&grid, &range)?;
        let pages = grid.byte_span_box(span.0, span.1);
        let kind = mode.use_kind(HOST);
        state.deps.prune(Dep::is_done);
        for u in state.deps.conflicts(&pages, kind) {
            u.token.wait_host()?;
        }
        let transfers = plan(&state.map, HOST, &pages, mode.no_init());
        let base = state.host_mem()?.ptr();
        exec::enqueue(&mut state, &transfers)?;
        for u in state.deps.conflicts(&pages, UseKind::Read { loc: HOST }) {
            u.token.wait_host()?;
        }
        let release = Arc::new(HostRelease::default());
        state.deps.record(pages, kind, Dep::Host(release.clone()));
        if !mode.read_only() {
            state.map.mark_written(HOST, &pages);
        }
        Ok(HostAccessor {
            _shared: self.shared.clone(),
            release,
            ptr: base.wrapping_add(span.0),
            len: span.1 - span.0,
            mode,
            pages,
        })
    }
}

impl HostAccessor {
    /// The bytes from the first element to the last.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` lies in the host allocation, which
        // `shared` keeps; no transfer writes these pages while the accessor
        // lives (conflicting work waits for its release).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, writable; `InvalidOperation` for a read-only accessor.
    pub fn bytes_mut(&mut self) -> Result<&mut [u8]> {
        ensure!(!self.mode.read_only(), InvalidOperation, "a read-only host accessor cannot write");
        // SAFETY: as in `bytes`; `&mut self` makes this the only reference.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    /// The elements as `T`s; `InvalidValue` when the bytes are not a whole
    /// number of aligned `T`s.
    pub fn as_slice<T: bytemuck::AnyBitPattern>(&self) -> Result<&[T]> {
        bytemuck::try_cast_slice(self.bytes()).map_err(|e| err!(InvalidValue, "host accessor as elements: {e}"))
    }

    /// The elements as mutable `T`s.
    pub fn as_mut_slice<T: bytemuck::AnyBitPattern + bytemuck::NoUninit>(&mut self) -> Result<&mut [T]> {
        bytemuck::try_cast_slice_mut(self.bytes_mut()?)
            .map_err(|e| err!(InvalidValue, "host accessor as elements: {e}"))
    }

    /// A copy of the elements.
    pub fn to_vec<T: bytemuck::AnyBitPattern>(&self) -> Result<Vec<T>> {
        Ok(self.as_slice::<T>()?.to_vec())
    }

    /// The accessor's page range.
    pub fn pages(&self) -> PageBox {
        self.pages
    }
}

impl Drop for HostAccessor {
    fn drop(&mut self) {
        self.release.release();
    }
}
