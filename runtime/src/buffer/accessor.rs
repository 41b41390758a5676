//! Accessors and eager command groups.
//!
//! A [`CommandGroup`] declares the accessors of one piece of work on a
//! queue; [`submit`](CommandGroup::submit) moves the data they need, orders
//! the work after the earlier uses it conflicts with (on any device) and
//! hands the user's launch the wait list. The SYCL-style queue calls it the
//! same way: it takes an `cmdbuf_core::Queue` and returns an `cmdbuf_core::Event`.

use std::sync::Arc;

use cmdbuf_core::{Event, Queue, Result, UsmPtr, ensure};
use parking_lot::MutexGuard;

use super::alloc::{Dep, wait_list};
use super::deps::UseKind;
use super::geometry::{Dims, PageBox, PageGrid, to_dims, to_offset};
use super::pages::Loc;
use super::plan::plan;
use super::{Buffer, Shared, State, exec};

/// How an accessor uses its range.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    /// Reads only: never conflicts with other reads.
    Read,
    /// Writes, and reads what it does not write: the range's data moves first.
    Write,
    /// Reads and writes.
    ReadWrite,
    /// Writes the whole range without reading it (SYCL's `no_init`,
    /// AdaptiveCpp's `discard_write`): never moves data.
    WriteNoInit,
    /// Like [`WriteNoInit`](Self::WriteNoInit), read and written.
    ReadWriteNoInit,
}

impl AccessMode {
    /// Whether the mode only reads.
    pub fn read_only(self) -> bool {
        self == AccessMode::Read
    }

    /// Whether the mode discards the previous contents.
    pub fn no_init(self) -> bool {
        matches!(self, AccessMode::WriteNoInit | AccessMode::ReadWriteNoInit)
    }

    pub(crate) fn use_kind(self, loc: Loc) -> UseKind {
        if self.read_only() { UseKind::Read { loc } } else { UseKind::Write }
    }
}

/// The elements an accessor covers: an offset and a range in the buffer's
/// dimensions, or the whole buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessRange {
    offset: Option<Vec<usize>>,
    range: Option<Vec<usize>>,
}

impl AccessRange {
    /// The whole buffer.
    pub fn all() -> AccessRange {
        AccessRange::default()
    }

    /// `range` elements from `offset`, both with the buffer's number of dimensions.
    pub fn new(offset: &[usize], range: &[usize]) -> AccessRange {
        AccessRange { offset: Some(offset.to_vec()), range: Some(range.to_vec()) }
    }

    /// Offset and range in 3D; out-of-range values are `InvalidValue`, a
    /// zero extent `InvalidSize`, a wrong number of dimensions
    /// `InvalidWorkDimension`.
    pub(crate) fn resolve(&self, view: &PageGrid) -> Result<(Dims, Dims)> {
        let offset = match &self.offset {
            Some(o) => to_offset(o, view.dims())?,
            None => [0, 0, 0],
        };
        let range = match &self.range {
            Some(r) => {
                ensure!(
                    r.len() == view.dims(),
                    InvalidWorkDimension,
                    "accessor range has {} dimensions, the buffer {}",
                    r.len(),
                    view.dims()
                );
                to_dims(r, "accessor range")?
            }
            None => view.range(),
        };
        view.page_box(offset, range)?;
        Ok((offset, range))
    }
}

/// A declared access of a buffer on a device: where the data is during the
/// command group's work.
#[derive(Clone, Debug)]
pub struct Accessor {
    base: UsmPtr,
    first_byte: usize,
    pages: PageBox,
    mode: AccessMode,
}

impl Accessor {
    /// An accessor of a declared access: `base` is the allocation's first
    /// byte, `first_byte` the offset of the range's first element.
    pub(crate) fn declared(base: UsmPtr, first_byte: usize, pages: PageBox, mode: AccessMode) -> Accessor {
        Accessor { base, first_byte, pages, mode }
    }

    /// The buffer's first byte on the device (kernels index the whole
    /// buffer: an accessor's range says what is up to date, not where the
    /// data starts). Valid as a USM pointer while the buffer lives.
    pub fn ptr(&self) -> UsmPtr {
        self.base
    }

    /// The pointer to the accessor's first element.
    pub fn offset_ptr(&self) -> UsmPtr {
        self.base.byte_add(self.first_byte)
    }

    /// The accessor's page range.
    pub fn pages(&self) -> PageBox {
        self.pages
    }

    /// Its mode.
    pub fn mode(&self) -> AccessMode {
        self.mode
    }
}

struct Declared {
    shared: Arc<Shared>,
    loc: Loc,
    pages: PageBox,
    mode: AccessMode,
}

/// One command group: accessors on buffers, then one piece of work on a queue.
pub struct CommandGroup {
    queue: Queue,
    declared: Vec<Declared>,
}

impl CommandGroup {
    /// A command group for `queue`.
    pub fn new(queue: &Queue) -> CommandGroup {
        CommandGroup { queue: queue.clone(), declared: Vec::new() }
    }

    /// Declares an access of `buffer`: allocates the buffer on the queue's
    /// device at its first use there and returns where the data will be.
    /// Data moves at [`submit`](Self::submit).
    pub fn access(&mut self, buffer: &Buffer, mode: AccessMode, range: AccessRange) -> Result<Accessor> {
        let mut state = buffer.shared.state.lock();
        let grid = state.grid;
        let (pages, span) = buffer.page_box(&grid, &range)?;
        let loc = state.location(&self.queue)?;
        let base = state.device_ptr(loc);
        self.declared.push(Declared { shared: buffer.shared.clone(), loc, pages, mode });
        Ok(Accessor { base, first_byte: span.0, pages, mode })
    }

    /// Moves the data the accessors need, then calls `launch` with the queue
    /// and the events the work must wait for (transfers into its device and
    /// the earlier uses its accessors conflict with, wherever they ran), and
    /// records the event it returns as the command group's. The buffers stay
    /// locked while `launch` runs: it must enqueue its work, not use buffers.
    pub fn submit(self, launch: impl FnOnce(&Queue, &[&Event]) -> Result<Event>) -> Result<Event> {
        let mut order: Vec<usize> = (0..self.declared.len()).collect();
        order.sort_by_key(|&i| self.declared[i].shared.id);
        order.dedup_by_key(|i| self.declared[*i].shared.id);
        // Locks are taken in buffer order so that command groups on several
        // buffers never wait for each other in a cycle.
        let mut guards: Vec<(u64, MutexGuard<'_, State>)> =
            order.iter().map(|&i| (self.declared[i].shared.id, self.declared[i].shared.state.lock())).collect();
        let state_of = |guards: &mut Vec<(u64, MutexGuard<'_, State>)>, id: u64| -> usize {
            guards.iter().position(|(g, _)| *g == id).expect("every declared buffer is locked")
        };
        let mut deps: Vec<Dep> = Vec::new();
        for d in &self.declared {
            let i = state_of(&mut guards, d.shared.id);
            let state = &mut *guards[i].1;
            state.deps.prune(Dep::is_done);
            let transfers = plan(&state.map, d.loc, &d.pages, d.mode.no_init());
            exec::enqueue(state, &transfers)?;
            deps.extend(state.deps.conflicts(&d.pages, d.mode.use_kind(d.loc)).map(|u| u.token.clone()));
        }
        let wait = wait_list(&self.queue, &deps)?;
        let wait: Vec<&Event> = wait.iter().collect();
        let event = launch(&self.queue, &wait)?;
        for d in &self.declared {
            let i = state_of(&mut guards, d.shared.id);
            let state = &mut *guards[i].1;
            state.deps.record(d.pages, d.mode.use_kind(d.loc), Dep::of(&self.queue, event.clone()));
            if !d.mode.read_only() {
                state.map.mark_written(d.loc, &d.pages);
            }
        }
        Ok(event)
    }
}
