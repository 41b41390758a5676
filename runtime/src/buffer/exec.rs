//! Executing planned transfers on cmdbuf-core queues, and the buffer's end.
//!
//! A transfer between the host allocation and a device is one cmdbuf-core copy
//! between USM of a context and host memory. A transfer between two devices
//! is a peer copy ([`Queue::usm_copy_peer`]) where one device has peer access
//! to the other (enabled on first need), on the queue of the device that
//! has it; otherwise a copy into the host allocation on the source's queue
//! and one out of it on the target's, the second waiting for the first
//! through a bridged event.

use cmdbuf_core::{Event, Queue, Result, UrError};

use super::State;
use super::alloc::{Dep, wait_list};
use super::deps::UseKind;
use super::geometry::PageBox;
use super::pages::{HOST, Loc};
use super::plan::{Transfer, apply, plan};

/// Enqueues `transfers` (planned for the buffer's current state), records
/// them as uses and updates the page state.
pub(crate) fn enqueue(state: &mut State, transfers: &[Transfer]) -> Result<()> {
    for t in transfers {
        let bytes = state.grid.rect(&t.pages).bytes() as u64;
        let peer = if t.via_host() { peer_route(state, t.src, t.dst) } else { None };
        if let Some(on) = peer {
            peer_copy(state, on, t.src, t.dst, &t.pages)?;
            state.stats.peer += 1;
            state.stats.peer_bytes += bytes;
            // Straight to the target: the host allocation stays as it was.
            state.map.mark_current(t.dst, &t.pages);
        } else {
            if t.via_host() {
                hop(state, t.src, HOST, &t.pages)?;
                hop(state, HOST, t.dst, &t.pages)?;
                state.stats.via_host += 1;
            } else {
                hop(state, t.src, t.dst, &t.pages)?;
            }
            apply(&mut state.map, std::slice::from_ref(t), t.dst, &t.pages, false);
        }
        state.stats.copies += 1;
        state.stats.pages += t.pages.pages() as u64;
        state.stats.bytes += bytes;
    }
    Ok(())
}

/// The device location whose queue can copy directly between the
/// allocations of `src` and `dst`: the target's device if it has peer access
/// to the source's, else the source's if it has access to the target's;
/// access is enabled here, the first time it is needed. `None` (through the
/// host) where neither has, or enabling failed.
fn peer_route(state: &State, src: Loc, dst: Loc) -> Option<Loc> {
    let device = |loc: Loc| state.allocs[loc - 1].context.device();
    for (on, other) in [(dst, src), (src, dst)] {
        let (command, peer) = (device(on), device(other));
        let supported = match command.peer_access(peer) {
            Ok(access) => access.supported,
            Err(e) => {
                tracing::warn!(%command, %peer, error = %e, "peer query failed; the buffer copies through the host");
                false
            }
        };
        if !supported {
            continue;
        }
        match command.enable_peer_access(peer) {
            Ok(()) => return Some(on),
            Err(e) => tracing::warn!(%command, %peer, error = %e, "peer access not enabled; trying the other way"),
        }
    }
    None
}

/// One peer copy of `pages` from the allocation of `src` to that of `dst`,
/// on the queue of `on` (one of the two), after the uses it conflicts with.
/// A rect whose rows are not contiguous is one copy per row: cmdbuf-core's peer
/// copy is linear.
fn peer_copy(state: &mut State, on: Loc, src: Loc, dst: Loc, pages: &PageBox) -> Result<()> {
    let queue = state.allocs[on - 1].queue()?;
    let wait = conflicting(state, &queue, src, dst, pages)?;
    let wait: Vec<&Event> = wait.iter().collect();
    let (dst_ptr, src_ptr) = (state.device_ptr(dst), state.device_ptr(src));
    let rect = state.grid.rect(pages);
    let mut events = Vec::new();
    let mut failed = None;
    'pieces: for (offset, rows, bytes) in rect.pieces() {
        for row in 0..rows {
            let at = offset + row * rect.row_pitch;
            match queue.usm_copy_peer(dst_ptr.byte_add(at), src_ptr.byte_add(at), bytes, &wait) {
                Ok(event) => events.push(event),
                Err(e) => {
                    failed = Some(e);
                    break 'pieces;
                }
            }
        }
    }
    record_pieces(state, &queue, pages, src, dst, events, failed)
}

/// One copy between the host allocation and a device allocation, after the
/// uses it conflicts with: writers of the pages, and copies into the source
/// or the target.
fn hop(state: &mut State, src: Loc, dst: Loc, pages: &PageBox) -> Result<()> {
    let device = if src == HOST { dst } else { src };
    let queue = state.allocs[device - 1].queue()?;
    let wait = conflicting(state, &queue, src, dst, pages)?;
    let wait: Vec<&Event> = wait.iter().collect();
    let host = state.host_mem()?.ptr();
    let dev = state.device_ptr(device).addr() as *mut u8;
    let (dst_ptr, src_ptr) = if src == HOST { (dev, host) } else { (host, dev) };
    let rect = state.grid.rect(pages);
    let mut events = Vec::new();
    let mut failed = None;
    for (offset, rows, bytes) in rect.pieces() {
        let (d, s) = (dst_ptr.wrapping_add(offset), src_ptr.wrapping_add(offset).cast_const());
        // SAFETY: the host side is the buffer's host allocation, which has
        // the buffer's size and is freed only after `finish` waited for
        // every copy; the rect lies inside the buffer (it comes from its
        // page grid). The device side is resolved and checked by cmdbuf-core.
        let event = unsafe {
            if rows == 1 {
                queue.usm_memcpy_host(d, s, bytes, &wait)
            } else {
                queue.usm_memcpy_2d(d, rect.row_pitch, s, rect.row_pitch, bytes, rows, &wait)
            }
        };
        match event {
            Ok(event) => events.push(event),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    record_pieces(state, &queue, pages, src, dst, events, failed)
}

/// What a transfer of `pages` from `src` to `dst` on `queue` waits for:
/// the uses it conflicts with (writers of the pages, and copies into the
/// source or the target), as events `queue` can wait on.
fn conflicting(state: &State, queue: &Queue, src: Loc, dst: Loc, pages: &PageBox) -> Result<Vec<Event>> {
    let deps: Vec<Dep> = state
        .deps
        .conflicts(pages, UseKind::Read { loc: src })
        .chain(state.deps.conflicts(pages, UseKind::Fill { to: dst }))
        .map(|u| u.token.clone())
        .collect();
    wait_list(queue, &deps)
}

/// Records the pieces of one transfer of `pages` from `src` to `dst` as
/// uses: joined into one event when every piece was enqueued; when a piece
/// (`failed`) or the join failed, each enqueued piece, which may still run,
/// so that later uses and the buffer's end wait for it.
fn record_pieces(
    state: &mut State,
    queue: &Queue,
    pages: &PageBox,
    src: Loc,
    dst: Loc,
    events: Vec<Event>,
    failed: Option<UrError>,
) -> Result<()> {
    state.stats.commands += events.len() as u64;
    let joined = match failed {
        None if events.len() == 1 => Ok(events[0].clone()),
        None => queue.events_wait(&events.iter().collect::<Vec<_>>()),
        Some(e) => Err(e),
    };
    let (tokens, result) = match joined {
        Ok(event) => (vec![event], Ok(())),
        Err(e) => (events, Err(e)),
    };
    for event in tokens {
        state.deps.record(*pages, UseKind::Read { loc: src }, Dep::of(queue, event.clone()));
        state.deps.record(*pages, UseKind::Fill { to: dst }, Dep::of(queue, event));
    }
    result
}

/// Waits for every use of the buffer and, when the buffer has final data to
/// write back, makes the host allocation current.
pub(crate) fn finish(state: &mut State) -> Result<()> {
    let mut first_error = wait_ended(state).err();
    if state.final_data.is_some() && state.write_back && state.map.initialized() {
        let written = state.host_mem().map(drop).and_then(|()| {
            let all = state.grid.all();
            let transfers = plan(&state.map, HOST, &all, false);
            enqueue(state, &transfers)
        });
        // What of the write-back was enqueued is waited for, also when a
        // part of it failed.
        let waited = wait_ended(state);
        if let Err(e) = written.and(waited) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Waits until every use of the buffer has ended, and forgets them; the
/// first failed wait's error. The buffer's memory may be freed after this:
/// a wait that fails does not end it before the work that uses the memory
/// has ([`Dep::wait_ended`]).
fn wait_ended(state: &mut State) -> Result<()> {
    // What has ended needs no wait (nor a wait that could fail).
    state.deps.prune(Dep::is_done);
    let mut first_error = None;
    for u in state.deps.uses() {
        if let Err(e) = u.token.wait_ended() {
            first_error.get_or_insert(e);
        }
    }
    state.deps.prune(|_| true);
    first_error.map_or(Ok(()), Err)
}
