//! What graphs need of buffers (docs/buffers.md, "Buffers in graphs"):
//! declaring an access for a node, refusing host accessors while a graph
//! that uses the buffer is recorded, and making an executable graph's
//! accessors current on its device at each submission.
//!
//! A graph runs on one device, so every accessor of it uses the buffer's
//! allocation of the graph's context. At a submission the accessors are
//! taken in a topological order of their nodes: each one's outdated pages
//! move into that allocation and its pages are marked as its mode says, so
//! that a later node reading what an earlier one wrote moves nothing. All
//! those transfers are enqueued before the graph starts (so before any node
//! runs, which is what each node needs: a page a transfer brings in was not
//! written by an earlier node of the graph, or it would be current already).
//! The graph's submission waits for the transfers and for the earlier uses
//! its accessors conflict with, and is recorded as a use of their pages.

use std::sync::Arc;

use cmdbuf_core::{Event, Queue, Result, ensure, err};
use parking_lot::MutexGuard;

use super::alloc::{Dep, wait_list};
use super::geometry::{PageBox, PageGrid};
use super::plan::plan;
use super::{AccessMode, AccessRange, Accessor, Buffer, Shared, State, exec};

/// A graph that recorded commands using a buffer, as the buffer sees it:
/// `recording` says whether a queue still records into it (`None` once the
/// graph is gone).
#[derive(Clone)]
pub(crate) struct Recorder {
    pub(crate) graph: u64,
    pub(crate) recording: Arc<dyn Fn() -> Option<bool> + Send + Sync>,
}

/// One accessor of a graph node.
#[derive(Clone)]
pub(crate) struct GraphAccess {
    /// Holds the buffer alive as long as the graph (lifetime extension).
    pub(crate) buffer: Buffer,
    /// The buffer's page grid (the original shape's).
    pub(crate) grid: PageGrid,
    pub(crate) pages: PageBox,
    pub(crate) mode: AccessMode,
}

/// `InvalidOperation` when a graph that recorded commands using the buffer
/// is being recorded (the host accessor the caller is taking).
pub(crate) fn check_not_recorded(shared: &Shared) -> Result<()> {
    // The probes take graph locks: call them with no buffer lock held.
    let recorders = shared.recorders.lock().clone();
    let mut gone = Vec::new();
    for r in &recorders {
        match (r.recording)() {
            None => gone.push(r.graph),
            Some(false) => {}
            Some(true) => {
                return Err(err!(
                    InvalidOperation,
                    "a host accessor of a buffer used by commands recorded into graph #{}, which is still being \
                     recorded",
                    r.graph
                ));
            }
        }
    }
    shared.recorders.lock().retain(|r| !gone.contains(&r.graph));
    Ok(())
}

/// Notes that graph `recorder.graph` recorded a command using `buffer`
/// (takes only the buffer's recorder list lock).
pub(crate) fn add_recorder(buffer: &Buffer, recorder: Recorder) {
    let mut recorders = buffer.shared.recorders.lock();
    if !recorders.iter().any(|r| r.graph == recorder.graph) {
        recorders.push(recorder);
    }
}

/// Whether dropping `buffer` would write its data back (`set_final_data`
/// with a target and write-back on), which a graph cannot do.
pub(crate) fn check_no_write_back(buffer: &Buffer, graph: u64) -> Result<()> {
    ensure!(
        !buffer.shared.state.lock().writes_back(),
        InvalidOperation,
        "a buffer with a write-back target cannot be used in graph #{graph} (the graph runs after the command \
         group, so the write-back could not follow it): call set_final_data(None) or set_write_back(false)"
    );
    Ok(())
}

/// Declares an access of `buffer` for a node of a graph of `queue`'s
/// context: allocates the buffer there at first use and gives the accessor.
/// No data moves now.
pub(crate) fn declare(
    buffer: &Buffer,
    queue: &Queue,
    mode: AccessMode,
    range: &AccessRange,
) -> Result<(GraphAccess, Accessor)> {
    let mut state = buffer.shared.state.lock();
    let grid = state.grid;
    let (pages, span) = buffer.page_box(&grid, range)?;
    let loc = state.location(queue)?;
    let base = state.device_ptr(loc);
    Ok((GraphAccess { buffer: buffer.clone(), grid, pages, mode }, Accessor::declared(base, span.0, pages, mode)))
}

/// One submission of a graph with `accesses` (in a topological order of
/// their nodes) on `queue`: moves the data, then calls `launch` with `wait`
/// and the events the graph must wait for, and records its event as the use
/// of every accessor. The buffers stay locked while `launch` runs.
pub(crate) fn submit(
    accesses: &[GraphAccess],
    queue: &Queue,
    wait: &[&Event],
    launch: impl FnOnce(&[&Event]) -> Result<Event>,
) -> Result<Event> {
    let mut order: Vec<&GraphAccess> = accesses.iter().collect();
    order.sort_by_key(|a| a.buffer.shared.id);
    order.dedup_by_key(|a| a.buffer.shared.id);
    // Locks in buffer order, as eager command groups take them.
    let mut guards: Vec<(u64, MutexGuard<'_, State>)> =
        order.iter().map(|a| (a.buffer.shared.id, a.buffer.shared.state.lock())).collect();
    let ids: Vec<u64> = guards.iter().map(|(id, _)| *id).collect();
    let index = |id: u64| ids.iter().position(|g| *g == id).expect("every buffer is locked");
    let mut deps: Vec<Dep> = Vec::new();
    let mut locs = Vec::with_capacity(accesses.len());
    for (_, state) in guards.iter_mut() {
        state.deps.prune(Dep::is_done);
    }
    for a in accesses {
        let i = index(a.buffer.shared.id);
        let state = &mut *guards[i].1;
        let loc = state.location(queue)?;
        let transfers = plan(&state.map, loc, &a.pages, a.mode.no_init());
        exec::enqueue(state, &transfers)?;
        deps.extend(state.deps.conflicts(&a.pages, a.mode.use_kind(loc)).map(|u| u.token.clone()));
        if !a.mode.read_only() {
            // Later accessors of the graph read what this node leaves.
            state.map.mark_written(loc, &a.pages);
        }
        locs.push(loc);
    }
    let events = wait_list(queue, &deps)?;
    let mut all: Vec<&Event> = wait.to_vec();
    all.extend(events.iter());
    let event = launch(&all)?;
    for (a, loc) in accesses.iter().zip(locs) {
        let i = index(a.buffer.shared.id);
        guards[i].1.deps.record(a.pages, a.mode.use_kind(loc), Dep::of(queue, event.clone()));
    }
    Ok(event)
}

/// Whether both buffers have the same shape and pages, so that the page
/// ranges of one's accessors are the other's (an update may replace one by
/// the other).
pub(crate) fn same_shape(a: &Buffer, b: &Buffer) -> bool {
    a.view == b.view && a.grid() == b.grid()
}
