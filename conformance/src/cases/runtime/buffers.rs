//! SYCL buffers (cmdbuf-runtime, AdaptiveCpp's page model): exact data and the
//! exact pages and copies moved, dependencies from accessor conflicts, host
//! accessors, write-back and bad input.
//!
//! Per-device cases use the device through two contexts: the suite's and a
//! second one. Where the device's contexts can share USM
//! (`Context::share_usm_with`: CPU, CUDA, Vulkan) the buffer has one
//! allocation for both, and nothing moves between them
//! (`contexts_of_one_device_share`); elsewhere (OpenCL), and in the cases
//! that turn sharing off to test transfers on one device
//! (`Buffer::set_share_allocations(false)`), it keeps one allocation per
//! context and moves data between them as between devices: as a peer copy
//! where the device is its own peer (`Device::peer_access`), else through
//! its host allocation. [`cross_cases`] do the same across the selected
//! devices, backends mixed; the `multi_device` section goes through every
//! pair.

use std::sync::Arc;
use std::time::Duration;

use cmdbuf::{Device, Event, KernelArg, KernelLaunch, Queue, UserEvent};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties, CommandGroup, TransferStats};
use parking_lot::Mutex;

pub use super::cross::CrossCase;
use super::cross::{PAGE, device_read, fill, host_read, moved, page_props, peers, second};
use crate::harness::{CaseError, CaseResult, Env, read};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["buffers";
        overlap_moves_as_one_copy,
        no_init_moves_nothing,
        reads_run_in_parallel_writes_wait,
        host_accessor_orders_work,
        rect_moves_one_box,
        write_back_on_drop,
        contexts_of_one_device_share,
        device_pointer_is_usm,
        reinterpret_shares_data,
        bad_input,
    ]
}

/// Long enough for a command that ignored its dependencies to have run.
const SETTLE: Duration = Duration::from_millis(30);

/// The example: pages 0-3 written on one allocation, pages 2-5 read
/// on another that holds pages 4-5 already: exactly pages 2-3 move, as one copy.
/// A kernel of the suite's library reads them through the accessor. Two
/// allocations of one device (sharing off), as two devices would have.
fn overlap_moves_as_one_copy(env: &Env) -> CaseResult {
    let (a, b) = (env.queue()?, second(env.device())?);
    let buffer = Buffer::new(4, &[8 * PAGE], &page_props(&[PAGE]))?;
    buffer.set_share_allocations(false);
    fill(&b, &buffer, AccessMode::WriteNoInit, 4 * PAGE, 2 * PAGE, 7)?;
    let kernel = env.kernel("fill")?;
    let mut cg = CommandGroup::new(&a);
    let acc = cg.access(&buffer, AccessMode::Write, AccessRange::new(&[0], &[4 * PAGE]))?;
    let one = 1u32;
    let args = [KernelArg::Pointer(acc.ptr()), KernelArg::value(&one)];
    // SAFETY: 4 pages of work-items write the first 4 pages of the buffer's allocation.
    cg.submit(|q, wait| unsafe { q.launch_kernel(&KernelLaunch::new(&kernel, &[4 * PAGE], &args), wait) })?;
    let before = buffer.stats();
    check_eq!(
        device_read(&b, &buffer, 2 * PAGE, 4 * PAGE)?,
        [vec![1; 2 * PAGE], vec![7; 2 * PAGE]].concat(),
        "pages 2-5 on the second allocation"
    );
    // Two contexts of one device: a peer copy where the device is its own peer.
    let peer = u64::from(a.device().peer_access(b.device())?.supported);
    check_eq!(moved(before, buffer.stats()), (1, 2, 2 * PAGE as u64 * 4, 1 - peer), "copies, pages, bytes, via host");
    check_eq!(buffer.stats().peer - before.peer, peer, "peer copies");
    let before = buffer.stats();
    check_eq!(host_read(&buffer, 0, 6 * PAGE)?, [vec![1; 4 * PAGE], vec![7; 2 * PAGE]].concat());
    if peer == 1 {
        // The peer copy left the host as it was: 0-1 come from the first
        // allocation, 2-5 from the second, which is the first holding them.
        check_eq!(moved(before, buffer.stats()), (2, 6, 6 * PAGE as u64 * 4, 0));
    } else {
        // The host holds pages 2-3 from that copy; 0-1 and 4-5 come from each side.
        check_eq!(moved(before, buffer.stats()), (2, 4, 4 * PAGE as u64 * 4, 0));
    }
    // Everything read is current everywhere it was read: nothing moves again.
    let before = buffer.stats();
    device_read(&b, &buffer, 2 * PAGE, 4 * PAGE)?;
    host_read(&buffer, 0, 6 * PAGE)?;
    check_eq!(moved(before, buffer.stats()), (0, 0, 0, 0));
    Ok(())
}

/// `no_init` accessors and a buffer without initialized data never move data.
fn no_init_moves_nothing(env: &Env) -> CaseResult {
    let (a, b) = (env.queue()?, second(env.device())?);
    let fresh = Buffer::new(4, &[4 * PAGE], &page_props(&[PAGE]))?;
    device_read(&a, &fresh, 0, 4 * PAGE)?;
    device_read(&b, &fresh, 0, 4 * PAGE)?;
    check_eq!(fresh.stats(), TransferStats::default(), "a buffer without initialized data");
    let data: Vec<u32> = (0..4 * PAGE as u32).collect();
    let buffer = Buffer::from_host_with(&data, &[4 * PAGE], &page_props(&[PAGE]))?;
    fill(&a, &buffer, AccessMode::WriteNoInit, 0, 4 * PAGE, 9)?;
    check_eq!(buffer.stats(), TransferStats::default(), "a no_init accessor");
    fill(&b, &buffer, AccessMode::ReadWriteNoInit, PAGE, PAGE, 5)?;
    check_eq!(buffer.stats(), TransferStats::default(), "a read_write no_init accessor");
    let expected = [vec![9; PAGE], vec![5; PAGE], vec![9; 2 * PAGE]].concat();
    check_eq!(host_read(&buffer, 0, 4 * PAGE)?, expected);
    Ok(())
}

/// Reads on two allocations do not wait for each other; a write waits for
/// every read of its pages, wherever it ran; a write of other pages does not.
fn reads_run_in_parallel_writes_wait(env: &Env) -> CaseResult {
    let (a, b) = (env.queue()?, second(env.device())?);
    let data = vec![3u32; 4 * PAGE];
    let buffer = Buffer::from_host_with(&data, &[4 * PAGE], &page_props(&[PAGE]))?;
    // Both allocations current first, so no transfer orders anything.
    device_read(&a, &buffer, 0, 4 * PAGE)?;
    device_read(&b, &buffer, 0, 4 * PAGE)?;
    let gate = UserEvent::new(a.context())?;
    let mut cg = CommandGroup::new(&a);
    cg.access(&buffer, AccessMode::Read, AccessRange::new(&[0], &[2 * PAGE]))?;
    let held_read = cg.submit(|q, wait| {
        let mut all: Vec<&Event> = wait.to_vec();
        all.push(gate.event());
        q.events_wait(&all)
    })?;
    let mut cg = CommandGroup::new(&b);
    cg.access(&buffer, AccessMode::Read, AccessRange::new(&[0], &[2 * PAGE]))?;
    let free_read = cg.submit(|q, wait| q.events_wait(wait))?;
    free_read.wait()?;
    let other_pages = fill(&b, &buffer, AccessMode::Write, 2 * PAGE, 2 * PAGE, 4)?;
    other_pages.wait()?;
    let conflicting = fill(&b, &buffer, AccessMode::Write, PAGE, PAGE, 8)?;
    std::thread::sleep(SETTLE);
    check!(!held_read.status().is_terminal());
    check!(!conflicting.status().is_terminal(), "a write ran before a conflicting read on another context ended");
    gate.complete()?;
    conflicting.wait()?;
    check_eq!(host_read(&buffer, 0, 4 * PAGE)?, [vec![3; PAGE], vec![8; PAGE], vec![4; 2 * PAGE]].concat());
    Ok(())
}

/// A host accessor waits for conflicting work, and conflicting work submitted
/// while it lives waits for it; a second conflicting host accessor is an error.
fn host_accessor_orders_work(env: &Env) -> CaseResult {
    let a = env.queue()?;
    let buffer = Buffer::from_host_with(&[1u32; 2 * PAGE], &[2 * PAGE], &page_props(&[PAGE]))?;
    fill(&a, &buffer, AccessMode::Write, 0, 2 * PAGE, 2)?;
    let mut host = buffer.host_access(AccessMode::ReadWrite, AccessRange::new(&[0], &[PAGE]))?;
    check_eq!(host.as_slice::<u32>()?, &[2; PAGE][..], "the device's data, waited for");
    host.as_mut_slice::<u32>()?.fill(6);
    check_err!(buffer.host_access(AccessMode::Read, AccessRange::new(&[PAGE - 1], &[1])), InvalidOperation);
    let after_host = fill(&a, &buffer, AccessMode::ReadWrite, 0, 2 * PAGE, 0);
    // The fill writes the whole buffer in the device allocation; as the
    // host's page 0 was written, it moves there first, after the release.
    let after_host = after_host?;
    std::thread::sleep(SETTLE);
    check!(!after_host.status().is_terminal(), "work ran while a conflicting host accessor was alive");
    drop(host);
    after_host.wait()?;
    check_eq!(host_read(&buffer, 0, 2 * PAGE)?, vec![0; 2 * PAGE]);
    let read_only = buffer.host_access(AccessMode::Read, AccessRange::all())?;
    let mut reader = buffer.host_access(AccessMode::Read, AccessRange::all())?;
    check_err!(reader.bytes_mut(), InvalidOperation);
    drop(read_only);
    Ok(())
}

/// A 2D block of pages moves as one rect copy, the rows it does not cover
/// stay where they were.
fn rect_moves_one_box(env: &Env) -> CaseResult {
    let a = env.queue()?;
    let (rows, cols) = (16, 64);
    let data: Vec<u32> = (0..(rows * cols) as u32).collect();
    let buffer = Buffer::from_host_with(&data, &[rows, cols], &page_props(&[4, 16]))?;
    let mut cg = CommandGroup::new(&a);
    let acc = cg.access(&buffer, AccessMode::Read, AccessRange::new(&[5, 20], &[6, 20]))?;
    check_eq!(acc.pages().pages(), 4, "rows 5-10 and columns 20-39 touch 2 x 2 pages");
    let out = Arc::new(Mutex::new(vec![0u32; rows * cols]));
    let sink = out.clone();
    cg.submit(|q, wait| {
        q.read_usm(acc.ptr(), bytemuck::cast_slice_mut(&mut sink.lock()), wait)?;
        q.events_wait(&[])
    })?
    .wait()?;
    let s = buffer.stats();
    check_eq!((s.copies, s.pages, s.commands), (1, 4, 1), "copies, pages, backend commands");
    check_eq!(s.bytes, (8 * 32 * 4) as u64);
    let out = out.lock();
    for r in 4..12 {
        for c in 16..48 {
            check_eq!(out[r * cols + c], data[r * cols + c], "element ({r}, {c}) on the device");
        }
    }
    Ok(())
}

/// The final data receives the buffer's bytes when the last handle drops,
/// after its work; `set_write_back(false)` and `set_final_data(None)` turn it off.
fn write_back_on_drop(env: &Env) -> CaseResult {
    let (a, b) = (env.queue()?, second(env.device())?);
    for (case, enabled, keep_sink) in [("on", true, true), ("write_back(false)", false, true), ("None", true, false)] {
        let target = Arc::new(Mutex::new(Vec::new()));
        let buffer = Buffer::from_host_with(&[1u32; 4 * PAGE], &[4 * PAGE], &page_props(&[PAGE]))?;
        let sink = target.clone();
        buffer.set_final_data(Some(Box::new(move |bytes: &[u8]| *sink.lock() = bytes.to_vec())));
        if !keep_sink {
            buffer.set_final_data(None);
        }
        buffer.set_write_back(enabled);
        fill(&a, &buffer, AccessMode::Write, 0, 2 * PAGE, 2)?;
        let last = fill(&b, &buffer, AccessMode::Write, PAGE, 2 * PAGE, 3)?;
        drop(buffer);
        check!(last.status().is_terminal(), "{case}: the buffer dropped before its work ended");
        let got: Vec<u32> =
            target.lock().chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        if enabled && keep_sink {
            check_eq!(got, [vec![2; PAGE], vec![3; 2 * PAGE], vec![1; PAGE]].concat(), "{case}");
        } else {
            check!(got.is_empty(), "{case}: wrote back");
        }
    }
    Ok(())
}

/// Two contexts of one device: where they can share USM
/// (`Context::share_usm_with`) the buffer has one allocation for both (one
/// pointer, and nothing moves between them, only from the host); elsewhere,
/// or with sharing off, two, and the data moves between them.
fn contexts_of_one_device_share(env: &Env) -> CaseResult {
    let (a, b) = (env.queue()?, second(env.device())?);
    let shareable = match env.context().check_can_share_usm_with(b.context()) {
        Ok(()) => true,
        Err(cmdbuf::UrError::UnsupportedFeature(_)) => false,
        Err(e) => return Err(CaseError::Fail(format!("check_can_share_usm_with gave {e:?}"))),
    };
    let page_bytes = PAGE as u64 * 4;
    for share in [true, false] {
        let data: Vec<u32> = (0..4 * PAGE as u32).collect();
        let buffer = Buffer::from_host_with(&data, &[4 * PAGE], &page_props(&[PAGE]))?;
        buffer.set_share_allocations(share);
        let shared = share && shareable;
        // Pages 0-1 from the host to `a`, written there.
        fill(&a, &buffer, AccessMode::Write, 0, 2 * PAGE, 6)?;
        check_eq!(moved(TransferStats::default(), buffer.stats()), (1, 2, 2 * page_bytes, 0), "share {share}");
        let before = buffer.stats();
        let mut expected = [vec![6; 2 * PAGE], data[2 * PAGE..].to_vec()].concat();
        check_eq!(device_read(&b, &buffer, 0, 4 * PAGE)?, expected, "share {share}: data on the second context");
        let (pa, pb) = (buffer.device_ptr(&a)?, buffer.device_ptr(&b)?);
        check_eq!(pa == pb, shared, "share {share}: one pointer exactly where shared");
        if shared {
            // Only pages 2-3 come, from the host; 0-1 are where `a` wrote them.
            check_eq!(moved(before, buffer.stats()), (1, 2, 2 * page_bytes, 0), "share {share}: from the host only");
            check_eq!(buffer.stats().peer, 0, "no peer copy");
            check!(a.context().shares_usm_with(b.context()), "the buffer joined the contexts");
        } else {
            check_eq!(moved(before, buffer.stats()).1, 4, "share {share}: pages 0-1 from `a`, 2-3 from the host");
        }
        // A write on `b`, then one on `a` of the same pages: ordered, last wins.
        fill(&b, &buffer, AccessMode::Write, PAGE, 2 * PAGE, 8)?;
        fill(&a, &buffer, AccessMode::ReadWrite, 2 * PAGE, PAGE, 9)?;
        expected[PAGE..3 * PAGE].fill(8);
        expected[2 * PAGE..3 * PAGE].fill(9);
        let before = buffer.stats();
        check_eq!(device_read(&a, &buffer, 0, 4 * PAGE)?, expected, "share {share}: data on the first context");
        if shared {
            check_eq!(moved(before, buffer.stats()), (0, 0, 0, 0), "share {share}: nothing moves between them");
        }
        check_eq!(host_read(&buffer, 0, 4 * PAGE)?, expected, "share {share}: data on the host");
    }
    Ok(())
}

/// A device pointer of a buffer is a USM pointer of its context, the same
/// one every time and the one accessors use.
fn device_pointer_is_usm(env: &Env) -> CaseResult {
    let a = env.queue()?;
    let buffer = Buffer::from_host(&[5u32; 64], &[64])?;
    let ptr = buffer.device_ptr(&a)?;
    check!(env.context().find_usm(ptr, 256).is_ok(), "not a USM allocation of the context");
    let mut cg = CommandGroup::new(&a);
    let acc = cg.access(&buffer, AccessMode::Read, AccessRange::all())?;
    check_eq!(acc.ptr(), ptr);
    cg.submit(|q, wait| q.events_wait(wait))?.wait()?;
    check_eq!(read::<u32>(&a, ptr, 64)?, vec![5; 64], "USM reads see the buffer's data");
    check_eq!(buffer.device_ptr(&a)?, ptr);
    Ok(())
}

/// A reinterpretation is the same storage in another element size.
fn reinterpret_shares_data(env: &Env) -> CaseResult {
    let a = env.queue()?;
    let buffer = Buffer::from_host(&[0x0403_0201u32; 8], &[8])?;
    let bytes = buffer.reinterpret(1, None)?;
    check_eq!(bytes.byte_size(), 32);
    fill(&a, &buffer, AccessMode::Write, 2, 1, 0x0807_0605)?;
    let host = bytes.host_access(AccessMode::Read, AccessRange::new(&[8], &[4]))?;
    check_eq!(host.bytes(), &[5, 6, 7, 8][..]);
    drop(host);
    let square = buffer.reinterpret(4, Some(&[2, 4]))?;
    let host = square.host_access(AccessMode::Read, AccessRange::new(&[0, 2], &[1, 1]))?;
    check_eq!(host.to_vec::<u32>()?, vec![0x0807_0605]);
    Ok(())
}

/// Bad input is a typed error and loses nothing.
fn bad_input(env: &Env) -> CaseResult {
    let (a, b) = (env.queue()?, second(env.device())?);
    let none = BufferProperties::default();
    check_err!(Buffer::new(4, &[0], &none), InvalidBufferSize);
    check_err!(Buffer::new(0, &[4], &none), InvalidBufferSize);
    check_err!(Buffer::new(4, &[4], &page_props(&[0])), InvalidValue);
    check_err!(Buffer::from_host(&[1u32; 3], &[4]), InvalidBufferSize);
    let buffer = Buffer::from_host(&[1u32; 16], &[4, 4])?;
    let mut cg = CommandGroup::new(&a);
    check_err!(cg.access(&buffer, AccessMode::Read, AccessRange::new(&[3, 0], &[2, 1])), InvalidValue);
    check_err!(cg.access(&buffer, AccessMode::Read, AccessRange::new(&[0, usize::MAX], &[1, 2])), InvalidValue);
    check_err!(cg.access(&buffer, AccessMode::Read, AccessRange::new(&[0], &[1])), InvalidWorkDimension);
    check_err!(cg.access(&buffer, AccessMode::Read, AccessRange::new(&[0, 0], &[0, 1])), InvalidSize);
    check_err!(buffer.host_access(AccessMode::Read, AccessRange::new(&[4, 0], &[1, 1])), InvalidValue);
    check_err!(buffer.reinterpret(3, None), InvalidValue);
    check_err!(buffer.reinterpret(4, Some(&[5, 3])), InvalidValue);
    check_eq!(host_read(&buffer.reinterpret(4, None)?, 0, 16)?, vec![1; 16], "the data survived");
    let usm = env.usm_u32(16)?;
    crate::harness::write(&a, usm.ptr(), &[2u32; 16])?;
    check_err!(Buffer::from_usm(env.context(), usm.ptr(), 4, &[17], &none), InvalidSize);
    let over = Buffer::from_usm(env.context(), usm.ptr(), 4, &[16], &none)?;
    // Another context of the device can use the user's allocation only by
    // sharing it; with sharing off, or where it cannot share, it is refused.
    let can_share = env.context().check_can_share_usm_with(b.context()).is_ok();
    over.set_share_allocations(false);
    let mut cg = CommandGroup::new(&b);
    check_err!(cg.access(&over, AccessMode::Read, AccessRange::all()), InvalidDevice);
    check_err!(over.device_ptr(&b), InvalidDevice);
    over.set_share_allocations(true);
    if can_share {
        check_eq!(over.device_ptr(&b)?, usm.ptr(), "the second context shares the user's allocation");
    } else {
        check_err!(over.device_ptr(&b), InvalidDevice);
    }
    check_eq!(over.device_ptr(&a)?, usm.ptr());
    check_eq!(host_read(&over, 0, 16)?, vec![2; 16], "the user's allocation's data");
    Ok(())
}

/// The cases that use one buffer on several devices, backends mixed.
pub fn cross_cases() -> Vec<CrossCase> {
    vec![
        CrossCase { name: "buffers_cross::data_follows", body: data_follows },
        CrossCase { name: "buffers_cross::overlap_moves_as_one_copy", body: cross_overlap },
        CrossCase {
            name: "buffers_cross::graph_and_eager_share_a_buffer",
            body: super::graph_buffers::cross_graph_and_eager,
        },
    ]
}

fn queues(devices: &[Device]) -> Result<Vec<Queue>, CaseError> {
    devices.iter().map(second).collect()
}

/// One buffer written on every device in turn (and twice round): the data
/// follows, and each read moves exactly the pages written elsewhere since
/// the device last held them.
fn data_follows(devices: &[Device]) -> CaseResult {
    let queues = queues(devices)?;
    let n = 4 * PAGE;
    let buffer = Buffer::from_host_with(&[0u32; 4 * PAGE], &[n], &page_props(&[PAGE]))?;
    let mut expected = vec![0u32; n];
    // Per page: the newest version, and the version each device holds.
    let mut newest = [1u32; 4];
    let mut held = vec![[0u32; 4]; queues.len()];
    for round in 0..2 {
        for (i, q) in queues.iter().enumerate() {
            let outdated = (0..4).filter(|&p| held[i][p] != newest[p]).count() as u64;
            let before = buffer.stats();
            check_eq!(device_read(q, &buffer, 0, n)?, expected, "round {round}, device {}", q.device());
            let (copies, pages, _, _) = moved(before, buffer.stats());
            check_eq!(pages, outdated, "round {round}, device {}: pages moved", q.device());
            check!(copies <= pages && (copies > 0) == (pages > 0), "{copies} copies for {pages} pages");
            held[i] = newest;
            let value = (round * 100 + i + 1) as u32;
            let page = (round * queues.len() + i) % 4;
            fill(q, &buffer, AccessMode::Write, page * PAGE, PAGE, value)?;
            check_eq!(moved(before, buffer.stats()).1, outdated, "the write's page was current");
            expected[page * PAGE..(page + 1) * PAGE].fill(value);
            newest[page] += 1;
            held[i][page] = newest[page];
        }
    }
    check_eq!(host_read(&buffer, 0, n)?, expected);
    Ok(())
}

/// The example between the first two devices.
fn cross_overlap(devices: &[Device]) -> CaseResult {
    let queues = queues(devices)?;
    let (a, b) = (&queues[0], &queues[1]);
    let buffer = Buffer::new(4, &[8 * PAGE], &page_props(&[PAGE]))?;
    fill(b, &buffer, AccessMode::WriteNoInit, 4 * PAGE, 2 * PAGE, 7)?;
    fill(a, &buffer, AccessMode::WriteNoInit, 0, 4 * PAGE, 1)?;
    check_eq!(buffer.stats(), TransferStats::default());
    check_eq!(device_read(b, &buffer, 2 * PAGE, 4 * PAGE)?, [vec![1; 2 * PAGE], vec![7; 2 * PAGE]].concat());
    let peer = u64::from(peers(b.device(), a.device())?);
    check_eq!(moved(TransferStats::default(), buffer.stats()), (1, 2, 2 * PAGE as u64 * 4, 1 - peer));
    check_eq!(buffer.stats().peer, peer, "peer copies");
    Ok(())
}
