//! Command buffers of 10,000 commands (no UR counterpart; UR's tests stay
//! small): a dependency chain, a wide fan-in, a random DAG checked against a
//! host model, and one update of 10,000 kernel commands.

use cmdbuf::{
    AppendOptions, CommandBufferDesc, EventStatus, KernelArg, KernelLaunch, KernelLaunchUpdate, SyncPoint,
    UpdateCapabilities,
};

use super::property::{Op, Program, Step, check_program};
use crate::harness::{CaseResult, Env, read, write};
use crate::{Requires, cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["large";
        chain_10000,
        chain_10000_in_order,
        wide_10000,
        wide_with_events => Requires::EVENTS,
        random_dag_10000,
        update_10000_kernels => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
    ]
}

const COMMANDS: usize = 10_000;

/// 10,000 increments of one counter, each after the previous one, twice.
fn chain_10000(env: &Env) -> CaseResult {
    increment_chain(env, false)
}

/// The same chain with its order coming from an in-order buffer.
fn chain_10000_in_order(env: &Env) -> CaseResult {
    increment_chain(env, true)
}

fn increment_chain(env: &Env, in_order: bool) -> CaseResult {
    let counter = env.usm_u32(1)?;
    let queue = env.queue()?;
    write(&queue, counter.ptr(), &[0u32])?;
    let kernel = env.kernel("increment")?;
    let cb = env.command_buffer(CommandBufferDesc { in_order, ..Default::default() })?;
    let args = [KernelArg::Pointer(counter.ptr())];
    let mut previous: Option<SyncPoint> = None;
    for _ in 0..COMMANDS {
        let after: Vec<SyncPoint> = if in_order { Vec::new() } else { previous.into_iter().collect() };
        // SAFETY: one work-item increments the one-element counter.
        let appended = unsafe {
            cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[1], &args), &[], AppendOptions::new().after(&after))?
        };
        previous = Some(appended.sync_point);
    }
    check_eq!(cb.len(), COMMANDS);
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, counter.ptr(), 1)?, vec![10_000]);
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, counter.ptr(), 1)?, vec![20_000]);
    Ok(())
}

/// The first (index, got, expected) where the two differ.
fn first_difference(got: &[u32], expected: &[u32]) -> Option<(usize, u32, u32)> {
    if got.len() != expected.len() {
        return Some((got.len().min(expected.len()), 0, 0));
    }
    got.iter().zip(expected).enumerate().find(|(_, (g, e))| g != e).map(|(i, (g, e))| (i, *g, *e))
}

fn wide_value(i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761) ^ 0xA5A5_0000
}

/// 10,000 independent single-element fills, each with its own value, and a
/// copy of the whole allocation that depends on all of them.
fn wide_10000(env: &Env) -> CaseResult {
    let (src, dst) = (env.usm_u32(COMMANDS)?, env.usm_u32(COMMANDS)?);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let mut fills = Vec::with_capacity(COMMANDS);
    for i in 0..COMMANDS {
        let value = wide_value(i).to_le_bytes();
        let appended = cb.append_usm_fill(src.ptr().byte_add(i * 4), &value, 4, AppendOptions::new())?;
        fills.push(appended.sync_point);
    }
    cb.append_usm_memcpy(dst.ptr(), src.ptr(), COMMANDS * 4, AppendOptions::new().after(&fills))?;
    cb.finalize()?;
    let expected: Vec<u32> = (0..COMMANDS).map(wide_value).collect();
    let queue = env.queue()?;
    let zeros = vec![0u32; COMMANDS];
    for round in 1..=2 {
        write(&queue, src.ptr(), &zeros)?;
        write(&queue, dst.ptr(), &zeros)?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        let got = read::<u32>(&queue, dst.ptr(), COMMANDS)?;
        check_eq!(
            first_difference(&got, &expected),
            None,
            "enqueue {round}: (index, device, expected) of the first wrong element"
        );
    }
    Ok(())
}

/// 1000 independent single-element writes, a tenth of them with a signal
/// event and the middle one a copy that waits on an eager fill of another
/// queue, then a copy of the whole allocation after all of them; run twice.
/// Wider than a GPU runs at once: the CUDA adapter orders such a graph's
/// branches in lanes (docs/cuda.md), which must keep every result and event.
fn wide_with_events(env: &Env) -> CaseResult {
    const WIDE: usize = 1000;
    let (src, dst, staged) = (env.usm_u32(WIDE)?, env.usm_u32(WIDE)?, env.usm_u32(1)?);
    let (queue, other) = (env.queue()?, env.queue()?);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let mut writes = Vec::with_capacity(WIDE);
    let mut signals = Vec::new();
    let mut staging = None;
    for i in 0..WIDE {
        let (at, value) = (src.ptr().byte_add(i * 4), wide_value(i).to_le_bytes());
        let appended = if i == WIDE / 2 {
            let staged_event = &*staging.insert(other.usm_fill(staged.ptr(), &value, 4, &[])?);
            cb.append_usm_memcpy(at, staged.ptr(), 4, AppendOptions::new().wait_events(&[staged_event]))?
        } else if i % 10 == 7 {
            let appended = cb.append_usm_fill(at, &value, 4, AppendOptions::new().signal_event())?;
            signals.push((i, super::event_sync::signal_of(&appended)?));
            appended
        } else {
            cb.append_usm_fill(at, &value, 4, AppendOptions::new())?
        };
        writes.push(appended.sync_point);
    }
    cb.append_usm_memcpy(dst.ptr(), src.ptr(), WIDE * 4, AppendOptions::new().after(&writes))?;
    cb.finalize()?;
    let expected: Vec<u32> = (0..WIDE).map(wide_value).collect();
    let zeros = vec![0u32; WIDE];
    for round in 1..=2 {
        write(&queue, src.ptr(), &zeros)?;
        write(&queue, dst.ptr(), &zeros)?;
        let done = queue.enqueue_command_buffer(&cb, &[])?;
        for (i, signal) in &signals {
            let mut got = [0u8; 4];
            other.read_usm(src.ptr().byte_add(i * 4), &mut got, &[signal])?;
            check_eq!(u32::from_le_bytes(got), expected[*i], "enqueue {round}: element {i} after its signal event");
        }
        done.wait()?;
        for (i, signal) in &signals {
            check_eq!(signal.status(), EventStatus::Complete, "enqueue {round}: signal event of write {i}");
        }
        let got = read::<u32>(&queue, dst.ptr(), WIDE)?;
        check_eq!(
            first_difference(&got, &expected),
            None,
            "enqueue {round}: (index, device, expected) of the first wrong element"
        );
    }
    Ok(())
}

/// SplitMix64: a small deterministic generator for the large DAG.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// 10,000 fills and copies over sub-ranges of 8 allocations, dependencies
/// derived from program order plus random extra edges, run twice and checked
/// element by element against the host model.
fn random_dag_10000(env: &Env) -> CaseResult {
    const ALLOCS: usize = 8;
    const ELEMS: usize = 512;
    const MAX_LEN: usize = 48;
    let mut rng = SplitMix(0x1A56_E000_0000_0001);
    let mut steps = Vec::with_capacity(COMMANDS);
    for _ in 0..COMMANDS {
        let len = 1 + rng.below(MAX_LEN);
        let op = if rng.below(2) == 0 {
            let plen = [1, 2, 4, 8][rng.below(4)];
            let plen = if (len * 4).is_multiple_of(plen) { plen } else { 4 };
            Op::Fill {
                dst: rng.below(ALLOCS),
                start: rng.below(ELEMS - len + 1),
                len,
                pattern: (0..plen).map(|_| rng.next() as u8).collect(),
            }
        } else {
            let src = rng.below(ALLOCS);
            Op::Memcpy {
                dst: (src + 1 + rng.below(ALLOCS - 1)) % ALLOCS,
                dst_start: rng.below(ELEMS - len + 1),
                src,
                src_start: rng.below(ELEMS - len + 1),
                len,
            }
        };
        // Extra edges mostly reach a little way back, sometimes far.
        let extra_dep = match rng.below(10) {
            0..=1 => Some(rng.below(16)),
            2 => Some(rng.below(COMMANDS)),
            _ => None,
        };
        steps.push(Step { op, extra_dep });
    }
    let program = Program { in_order: false, init_seed: 0xD1A6, steps };
    check_program(env, &program, ALLOCS, ELEMS, false)
}

/// 10,000 single-item `fill` kernels in an updatable buffer, all given new
/// values in one update call.
fn update_10000_kernels(env: &Env) -> CaseResult {
    let out = env.usm_u32(COMMANDS)?;
    let kernel = env.kernel("fill")?;
    let cb = env.updatable_command_buffer()?;
    let first: Vec<u32> = (0..COMMANDS as u32).map(|i| i * 3 + 1).collect();
    let second: Vec<u32> = (0..COMMANDS as u32).map(|i| !i).collect();
    let offsets: Vec<[usize; 1]> = (0..COMMANDS).map(|i| [i]).collect();
    let mut handles = Vec::with_capacity(COMMANDS);
    for i in 0..COMMANDS {
        let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&first[i])];
        // SAFETY: the one work-item has global id i < 10,000 and writes
        // element i of the 10,000-element allocation.
        let appended = unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&kernel, &[1], &args).global_offset(&offsets[i]),
                &[],
                AppendOptions::new(),
            )?
        };
        handles.push(appended.command.expect("updatable buffers return handles"));
    }
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let got = read::<u32>(&queue, out.ptr(), COMMANDS)?;
    check_eq!(first_difference(&got, &first), None, "before the update");
    let updates: Vec<KernelLaunchUpdate<'_>> =
        handles.iter().zip(&second).map(|(h, v)| KernelLaunchUpdate::new(h).arg(1, KernelArg::value(v))).collect();
    // SAFETY: only the value argument changes; each command still writes its
    // own element of `out`.
    unsafe { cb.update_kernel_launches(&updates)? };
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let got = read::<u32>(&queue, out.ptr(), COMMANDS)?;
    check_eq!(first_difference(&got, &second), None, "after the update");
    Ok(())
}
