//! Executing planned transfers on ur-core queues, and the buffer's end.
//!
//! Every transfer has the host allocation on one side: a device side is the
//! buffer's USM allocation of one context, and ur-core copies between USM of
//! a context and host memory. A transfer between two devices is therefore a
//! copy into the host allocation on the source's queue and one out of it on
//! the target's, the second waiting for the first through a bridged event.

use ur_core::{Event, Result};

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
        if t.via_host() {
            hop(state, t.src, HOST, &t.pages)?;
            hop(state, HOST, t.dst, &t.pages)?;
            state.stats.via_host += 1;
        } else {
            hop(state, t.src, t.dst, &t.pages)?;
        }
        state.stats.copies += 1;
        state.stats.pages += t.pages.pages() as u64;
        state.stats.bytes += state.grid.rect(&t.pages).bytes() as u64;
        apply(&mut state.map, std::slice::from_ref(t), t.dst, &t.pages, false);
    }
    Ok(())
}

/// One copy between the host allocation and a device allocation, after the
/// uses it conflicts with: writers of the pages, and copies into the source
/// or the target.
fn hop(state: &mut State, src: Loc, dst: Loc, pages: &PageBox) -> Result<()> {
    let device = if src == HOST { dst } else { src };
    let queue = state.allocs[device - 1].queue()?;
    let deps: Vec<Dep> = state
        .deps
        .conflicts(pages, UseKind::Read { loc: src })
        .chain(state.deps.conflicts(pages, UseKind::Fill { to: dst }))
        .map(|u| u.token.clone())
        .collect();
    let wait = wait_list(&queue, &deps)?;
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
        // page grid). The device side is resolved and checked by ur-core.
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
    state.stats.commands += events.len() as u64;
    let joined = match failed {
        None if events.len() == 1 => Ok(events[0].clone()),
        None => queue.events_wait(&events.iter().collect::<Vec<_>>()),
        Some(e) => Err(e),
    };
    // When a piece or the join failed, the pieces already enqueued may still
    // run: later uses, and the buffer's end, wait for each of them.
    let (tokens, result) = match joined {
        Ok(event) => (vec![event], Ok(())),
        Err(e) => (events, Err(e)),
    };
    for event in tokens {
        state.deps.record(*pages, UseKind::Read { loc: src }, Dep::of(&queue, event.clone()));
        state.deps.record(*pages, UseKind::Fill { to: dst }, Dep::of(&queue, event));
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
