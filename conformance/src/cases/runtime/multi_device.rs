//! The multi-device section: cases run once over all selected devices
//! together (at least two), printed as a section of its own.
//!
//! - buffers move between every ordered pair of devices with exact data,
//!   pages and copies, as peer copies where one device of the pair has peer
//!   access to the other (`Device::peer_access`) and through the host
//!   otherwise, and the case checks which;
//! - USM peer copies (`Queue::usm_copy_peer`) in both directions for every
//!   pair that supports them, and the typed errors for every pair that does
//!   not (skipped, with the answers, when no pair does);
//! - work on two devices on disjoint halves of one buffer runs at the same time;
//! - contexts of two devices cannot join their USM (`Context::share_usm_with`);
//! - one context over two devices (`Context::with_devices`) where the adapter
//!   spans them (OpenCL devices of one platform), `UnsupportedFeature` elsewhere.

use std::time::{Duration, Instant};

use cmdbuf::{
    Context, Device, MemBuffer, MemFlags, Queue, QueueProperties, UrError, UserEvent, UsmAllocation, UsmKind,
};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, CommandGroup};

use super::cross::{CrossCase, PAGE, device_read, fill, host_read, moved, page_props, peers, second};
use crate::harness::{CaseError, CaseResult, read, read_buffer, write};
use crate::{check, check_eq, check_err};

/// The section's cases, the multi-device graph cases included.
pub fn cases() -> Vec<CrossCase> {
    let mut cases = vec![
        CrossCase { name: "multi_device::buffer_pairs", body: buffer_pairs },
        CrossCase { name: "multi_device::usm_peer_copy", body: usm_peer_copy },
        CrossCase { name: "multi_device::concurrent_halves", body: concurrent_halves },
        CrossCase { name: "multi_device::usm_sharing_needs_one_device", body: usm_sharing_needs_one_device },
        CrossCase { name: "multi_device::one_context_over_two_devices", body: one_context_over_two_devices },
    ];
    cases.extend(super::graph_multi_device::cases());
    cases.extend(super::collectives::cases());
    cases
}

/// Every ordered pair of distinct indices below `n`.
fn ordered_pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
}

/// For each ordered pair: pages 0-1 of a 4-page buffer written on the first
/// device, all 4 read on the second, then on the host. Exactly the pages
/// written elsewhere move, as one copy per source; the device-to-device
/// copy is a peer copy exactly when the pair are peers, and then the host is
/// left outdated (it moves on the host read), else the host was refreshed on
/// the way.
fn buffer_pairs(devices: &[Device]) -> CaseResult {
    let queues: Vec<Queue> = devices.iter().map(second).collect::<Result<_, _>>()?;
    let n = 4 * PAGE;
    let page_bytes = PAGE as u64 * 4;
    for (i, j) in ordered_pairs(devices.len()) {
        let (qa, qb) = (&queues[i], &queues[j]);
        let pair = format!("{} -> {}", devices[i], devices[j]);
        let mut expected: Vec<u32> = (0..n as u32).map(|e| e + 1000 * (i as u32 + 1)).collect();
        let buffer = Buffer::from_host_with(&expected, &[n], &page_props(&[PAGE]))?;
        let s0 = buffer.stats();
        let value = 50 + (i * 10 + j) as u32;
        fill(qa, &buffer, AccessMode::Write, 0, 2 * PAGE, value)?;
        expected[..2 * PAGE].fill(value);
        let s1 = buffer.stats();
        check_eq!(moved(s0, s1), (1, 2, 2 * page_bytes, 0), "{pair}: host to the writer");
        check_eq!(device_read(qb, &buffer, 0, n)?, expected, "{pair}: data on the reader");
        let s2 = buffer.stats();
        let peer = u64::from(peers(&devices[i], &devices[j])?);
        check_eq!(moved(s1, s2), (2, 4, 4 * page_bytes, 1 - peer), "{pair}: copies, pages, bytes, via host");
        check_eq!((s2.peer - s1.peer, s2.peer_bytes - s1.peer_bytes), (peer, peer * 2 * page_bytes), "{pair}: peer");
        check_eq!(host_read(&buffer, 0, n)?, expected, "{pair}: data on the host");
        let s3 = buffer.stats();
        let home = if peer == 1 { (1, 2, 2 * page_bytes, 0) } else { (0, 0, 0, 0) };
        check_eq!(moved(s2, s3), home, "{pair}: pages the host still needed");
    }
    Ok(())
}

/// USM peer copies for every ordered pair: where the command device has
/// peer access, a copy needs it enabled, pulls the peer's data and pushes
/// data back, with an event of the peer's context in the wait list; where
/// it has not, enabling and copying are typed errors.
fn usm_peer_copy(devices: &[Device]) -> CaseResult {
    const WORDS: usize = 1024;
    let bytes = WORDS * 4;
    let mut ran = Vec::new();
    let mut not_peers = Vec::new();
    for (i, j) in ordered_pairs(devices.len()) {
        let (di, dj) = (&devices[i], &devices[j]);
        let pair = format!("{di} -> {dj}");
        let (ci, cj) = (Context::new(di)?, Context::new(dj)?);
        let (qi, qj) = (Queue::new(&ci, QueueProperties::default())?, Queue::new(&cj, QueueProperties::default())?);
        let (mi, mj) =
            (UsmAllocation::new(&ci, UsmKind::Device, bytes)?, UsmAllocation::new(&cj, UsmKind::Device, bytes)?);
        let access = di.peer_access(dj)?;
        check!(access.supported || !access.atomics, "{pair}: atomics without access");
        if !access.supported {
            check_err!(di.enable_peer_access(dj), UnsupportedFeature);
            let copy = qi.usm_copy_peer(mi.ptr(), mj.ptr(), 64, &[]).map(|_| ());
            if di.backend() == dj.backend() {
                // Device addresses of two devices of one backend may collide
                // (Vulkan): then the pointer itself is ambiguous.
                check!(
                    matches!(copy, Err(UrError::UnsupportedFeature(_) | UrError::InvalidValue(_))),
                    "{pair}: a peer copy without peer access gave {copy:?}"
                );
            } else {
                check!(matches!(copy, Err(UrError::InvalidValue(_))), "{pair}: across backends gave {copy:?}");
            }
            not_peers.push(pair);
            continue;
        }
        if di.peer_access_enabled(dj) {
            di.disable_peer_access(dj)?;
        }
        check_err!(di.disable_peer_access(dj), InvalidOperation);
        check_err!(qi.usm_copy_peer(mi.ptr(), mj.ptr(), 64, &[]), InvalidOperation);
        di.enable_peer_access(dj)?;
        di.enable_peer_access(dj)?;
        let data: Vec<u32> = (0..WORDS as u32).map(|x| x * 3 + i as u32).collect();
        write(&qj, mj.ptr(), &data)?;
        let peer_marker = qj.events_wait(&[])?;
        let pulled = qi.usm_copy_peer(mi.ptr(), mj.ptr(), bytes, &[&peer_marker])?;
        let pushed = qi.usm_copy_peer(mj.ptr().byte_add(bytes / 2), mi.ptr(), bytes / 2, &[&pulled])?;
        pushed.wait()?;
        check_eq!(read::<u32>(&qi, mi.ptr(), WORDS)?, data, "{pair}: pulled");
        let half = &data[..WORDS / 2];
        check_eq!(read::<u32>(&qj, mj.ptr(), WORDS)?, [half, half].concat(), "{pair}: pushed");
        check_err!(qi.usm_copy_peer(mi.ptr(), mj.ptr().byte_add(8), bytes, &[]), InvalidSize);
        check_err!(qi.usm_copy_peer(mi.ptr(), mj.ptr(), 0, &[]), InvalidSize);
        ran.push(pair);
    }
    if ran.is_empty() {
        return Err(CaseError::Skip(format!(
            "no selected device has peer access to another ({})",
            not_peers.join(", ")
        )));
    }
    Ok(())
}

/// Two devices write disjoint halves of one buffer: the second half's work
/// finishes while the first's is held back, so neither waited for the
/// other; then each half comes home from its device as one copy.
fn concurrent_halves(devices: &[Device]) -> CaseResult {
    let queues: Vec<Queue> = devices.iter().map(second).collect::<Result<_, _>>()?;
    let n = 8 * PAGE;
    for (i, j) in ordered_pairs(devices.len()).filter(|(i, j)| i < j) {
        let (qa, qb) = (&queues[i], &queues[j]);
        let pair = format!("{} + {}", devices[i], devices[j]);
        let buffer = Buffer::new(4, &[n], &page_props(&[PAGE]))?;
        let gate = UserEvent::new(qa.context())?;
        let mut cg = CommandGroup::new(qa);
        let acc = cg.access(&buffer, AccessMode::Write, AccessRange::new(&[0], &[n / 2]))?;
        let held = cg.submit(|q, wait| {
            let mut all = wait.to_vec();
            all.push(gate.event());
            q.usm_fill(acc.ptr(), &1u32.to_le_bytes(), n / 2 * 4, &all)
        })?;
        let free = fill(qb, &buffer, AccessMode::Write, n / 2, n / 2, 2)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !free.status().is_terminal() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let free_done = free.status().is_terminal();
        let held_done = held.status().is_terminal();
        gate.complete()?;
        check!(free_done, "{pair}: the second half's work waited for the first's");
        check!(!held_done, "{pair}: held work ran before its gate");
        held.wait()?;
        free.wait()?;
        let before = buffer.stats();
        check_eq!(host_read(&buffer, 0, n)?, [vec![1; n / 2], vec![2; n / 2]].concat(), "{pair}");
        check_eq!(moved(before, buffer.stats()), (2, 8, n as u64 * 4, 0), "{pair}: one copy per half");
    }
    Ok(())
}

/// Contexts of two different devices never join their USM
/// (`Context::share_usm_with` is `InvalidDevice`, peers or not), and a
/// buffer keeps an allocation per device.
fn usm_sharing_needs_one_device(devices: &[Device]) -> CaseResult {
    for (i, j) in ordered_pairs(devices.len()) {
        let pair = format!("{} -> {}", devices[i], devices[j]);
        let (a, b) = (Context::new(&devices[i])?, Context::new(&devices[j])?);
        check_err!(a.check_can_share_usm_with(&b), InvalidDevice);
        check_err!(a.share_usm_with(&b), InvalidDevice);
        check!(!a.shares_usm_with(&b), "{pair}: joined after a refusal");
        let (qa, qb) = (Queue::new(&a, QueueProperties::default())?, Queue::new(&b, QueueProperties::default())?);
        let buffer = Buffer::new(4, &[PAGE], &page_props(&[PAGE]))?;
        // Each context's pointer is its own allocation's.
        check!(a.find_usm(buffer.device_ptr(&qa)?, PAGE * 4).is_ok(), "{pair}: the first device's allocation");
        check!(b.find_usm(buffer.device_ptr(&qb)?, PAGE * 4).is_ok(), "{pair}: the second device's allocation");
    }
    Ok(())
}

/// For each pair, one context over both (`urContextCreate` with two root
/// devices): where the adapter spans them (OpenCL devices of one platform,
/// which share vendor and driver version) a queue on each runs a kernel of
/// the context's program on the context's memory (USM, or buffers where the
/// adapter refuses USM in such a context with `UnsupportedFeature`) and one
/// copies what the other wrote; every other pair (other backends, two backends, two OpenCL
/// platforms) is `UnsupportedFeature`.
fn one_context_over_two_devices(devices: &[Device]) -> CaseResult {
    const N: usize = 64;
    for (i, j) in ordered_pairs(devices.len()) {
        let (a, b) = (&devices[i], &devices[j]);
        let pair = format!("{a} + {b}");
        let one_platform = a.backend() == cmdbuf::Backend::OpenCl
            && b.backend() == a.backend()
            && a.info().vendor == b.info().vendor
            && a.info().driver_version == b.info().driver_version;
        let context = match Context::with_devices(&[a.clone(), b.clone()]) {
            Err(UrError::UnsupportedFeature(why)) => {
                check!(!one_platform, "{pair}: refused though of one OpenCL platform: {why}");
                continue;
            }
            context => context?,
        };
        check!(one_platform, "{pair}: one context over devices the adapter does not span");
        check_eq!(context.devices(), &[a.clone(), b.clone()][..], "{pair}");
        check_eq!(context.device(), a, "{pair}");
        let qa = Queue::on_device(&context, a, QueueProperties::default())?;
        let qb = Queue::on_device(&context, b, QueueProperties::default())?;
        check_eq!((qa.device(), qb.device()), (a, b), "{pair}");
        let program = cmdbuf::Program::new(&context, &crate::kernels::bundle())?;
        let kernel = cmdbuf::Kernel::new(&program, "fill")?;
        let mut expected = vec![3u32; N / 2];
        expected.resize(N, 4);
        match UsmAllocation::new(&context, UsmKind::Device, N * 4) {
            Ok(x) => {
                let y = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;
                for (queue, mem, value) in [(&qa, &x, 3u32), (&qb, &y, 4u32)] {
                    let args = [cmdbuf::KernelArg::Pointer(mem.ptr()), cmdbuf::KernelArg::value(&value)];
                    // SAFETY: N work-items over an allocation of N u32s.
                    unsafe { queue.launch_kernel(&cmdbuf::KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
                }
                qb.usm_memcpy(y.ptr(), x.ptr(), N * 2, &[])?.wait()?;
                check_eq!(read::<u32>(&qa, y.ptr(), N)?, expected, "{pair}");
            }
            // A driver whose SVM does not reach kernels on every device of
            // one context (NVIDIA's OpenCL) refuses USM there, named; the
            // same work then runs on buffers, which it serves.
            Err(UrError::UnsupportedFeature(why)) => {
                let (x, y) = (
                    MemBuffer::new(&context, MemFlags::READ_WRITE, N * 4)?,
                    MemBuffer::new(&context, MemFlags::READ_WRITE, N * 4)?,
                );
                for (queue, mem, value) in [(&qa, &x, 3u32), (&qb, &y, 4u32)] {
                    let args = [cmdbuf::KernelArg::MemObj(mem), cmdbuf::KernelArg::value(&value)];
                    // SAFETY: N work-items over a buffer of N u32s.
                    unsafe { queue.launch_kernel(&cmdbuf::KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
                }
                qb.copy_buffer(&x, &y, 0, 0, N * 2, &[])?.wait()?;
                check_eq!(read_buffer::<u32>(&qa, &y, 0, N)?, expected, "{pair} (buffers; USM refused: {why})");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
