//! In-order command buffers (UR's `in-order.cpp`): commands appended without
//! sync points run in append order. Memory starts out holding sentinels, so
//! only the right order produces the checked result, and the buffers run on
//! an out-of-order queue where the device has one, so that the queue does
//! not order the commands for them. Sync points are still validated, and
//! add no reordering.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, KernelArg, KernelLaunch, MigrationFlags, RectLayout, RectRegion,
    UsmAdvice, UsmAllocation,
};

use super::event_sync::unordered_queue;
use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{cases, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["in_order";
        usm_without_hints,
        usm_with_hints,
        buffer_1d,
        buffer_rect,
        foreign_sync_point,
        sync_points_add_no_reordering,
        replay_keeps_order,
    ]
}

/// Elements: enough that a command overtaking its predecessor would find
/// the predecessor's work unfinished.
const N: usize = 16384;
const BYTES: usize = N * 4;
const A: u32 = 42;
const X: u32 = 2;
/// What memory holds before the buffer runs.
const SENTINEL: u32 = 0xDEAD_BEEF;

fn in_order_buffer(env: &Env) -> Result<CommandBuffer, CaseError> {
    env.command_buffer(CommandBufferDesc { in_order: true, ..Default::default() })
}

/// `Y[i] = i`, and what saxpy with `X` everywhere makes of it.
fn y_data() -> Vec<u32> {
    (0..N as u32).collect()
}

fn expected() -> Vec<u32> {
    y_data().iter().map(|y| A * X + y).collect()
}

fn sentinel_usm(env: &Env, queue: &cmdbuf::Queue) -> Result<UsmAllocation, CaseError> {
    let mem = env.usm_u32(N)?;
    write(queue, mem.ptr(), &[SENTINEL; N])?;
    Ok(mem)
}

/// UR's USM test: fill Z, fill X, copy Y in, saxpy, copy Z out, with USM
/// advice and prefetches interleaved when `hints`.
fn usm_chain(env: &Env, hints: bool) -> CaseResult {
    let setup = env.queue()?;
    let z = sentinel_usm(env, &setup)?;
    let x = sentinel_usm(env, &setup)?;
    let y = sentinel_usm(env, &setup)?;
    let out = sentinel_usm(env, &setup)?;
    let y_src = env.usm_u32(N)?;
    write(&setup, y_src.ptr(), &y_data())?;
    let queue = unordered_queue(env)?;
    let cb = in_order_buffer(env)?;
    let kernel = env.kernel("saxpy")?;
    let none = AppendOptions::new;
    cb.append_usm_fill(z.ptr(), &0u32.to_le_bytes(), BYTES, none())?;
    if hints {
        cb.append_usm_advise(x.ptr(), BYTES, UsmAdvice::empty(), none())?;
    }
    cb.append_usm_fill(x.ptr(), &X.to_le_bytes(), BYTES, none())?;
    if hints {
        cb.append_usm_prefetch(z.ptr(), BYTES, MigrationFlags::HOST_TO_DEVICE, none())?;
    }
    cb.append_usm_memcpy(y.ptr(), y_src.ptr(), BYTES, none())?;
    if hints {
        cb.append_usm_advise(z.ptr(), BYTES, UsmAdvice::empty(), none())?;
    }
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&A), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: N work-items over N-element Z, X and Y, alive until the wait below.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], none())? };
    if hints {
        cb.append_usm_prefetch(z.ptr(), BYTES, MigrationFlags::HOST_TO_DEVICE, none())?;
    }
    cb.append_usm_memcpy(out.ptr(), z.ptr(), BYTES, none())?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&setup, out.ptr(), N)?, expected());
    Ok(())
}

/// UR's `WithoutHints`.
fn usm_without_hints(env: &Env) -> CaseResult {
    usm_chain(env, false)
}

/// UR's `WithHints`: advice and prefetches are ordered like any command.
fn usm_with_hints(env: &Env) -> CaseResult {
    usm_chain(env, true)
}

/// Three buffers holding sentinels, for Z, X and Y.
fn sentinel_buffers(env: &Env) -> Result<[cmdbuf::MemBuffer; 3], CaseError> {
    let data = [SENTINEL; N];
    Ok([env.buffer_with(&data)?, env.buffer_with(&data)?, env.buffer_with(&data)?])
}

/// UR's buffer `1D` test: fill Z, fill X, write Y, saxpy, copy Z to X, read X.
fn buffer_1d(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let [z, x, y] = sentinel_buffers(env)?;
    let out = sentinel_usm(env, &setup)?;
    let y_src = env.usm_u32(N)?;
    write(&setup, y_src.ptr(), &y_data())?;
    let queue = unordered_queue(env)?;
    let cb = in_order_buffer(env)?;
    let kernel = env.kernel("saxpy")?;
    let none = AppendOptions::new;
    cb.append_buffer_fill(&z, &0u32.to_le_bytes(), 0, BYTES, none())?;
    cb.append_buffer_fill(&x, &X.to_le_bytes(), 0, BYTES, none())?;
    cb.append_buffer_write(&y, 0, BYTES, y_src.ptr(), none())?;
    let args = [KernelArg::MemObj(&z), KernelArg::value(&A), KernelArg::MemObj(&x), KernelArg::MemObj(&y)];
    // SAFETY: N work-items over N-element buffers, which the command holds.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], none())? };
    cb.append_buffer_copy(&z, &x, 0, 0, BYTES, none())?;
    cb.append_buffer_read(&x, 0, BYTES, out.ptr(), none())?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&setup, out.ptr(), N)?, expected());
    Ok(())
}

/// UR's buffer `Rect` test: the same chain with rect writes, copies and
/// reads of rows 256 bytes wide.
fn buffer_rect(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let [z, x, y] = sentinel_buffers(env)?;
    let out = sentinel_usm(env, &setup)?;
    let y_src = env.usm_u32(N)?;
    write(&setup, y_src.ptr(), &y_data())?;
    let queue = unordered_queue(env)?;
    let cb = in_order_buffer(env)?;
    let kernel = env.kernel("saxpy")?;
    let none = AppendOptions::new;
    let region = RectRegion::new(256, BYTES / 256, 1);
    let layout = RectLayout::new(Default::default(), 256, BYTES);
    cb.append_buffer_fill(&z, &0u32.to_le_bytes(), 0, BYTES, none())?;
    cb.append_buffer_fill(&x, &X.to_le_bytes(), 0, BYTES, none())?;
    cb.append_buffer_write_rect(&y, layout, layout, region, y_src.ptr(), none())?;
    let args = [KernelArg::MemObj(&z), KernelArg::value(&A), KernelArg::MemObj(&x), KernelArg::MemObj(&y)];
    // SAFETY: N work-items over N-element buffers, which the command holds.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], none())? };
    cb.append_buffer_copy_rect(&z, &x, layout, layout, region, none())?;
    cb.append_buffer_read_rect(&x, layout, layout, region, out.ptr(), none())?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&setup, out.ptr(), N)?, expected());
    Ok(())
}

/// An in-order buffer ignores sync points for ordering but still rejects
/// those of another buffer and those not yet issued.
fn foreign_sync_point(env: &Env) -> CaseResult {
    let a = in_order_buffer(env)?;
    let b = in_order_buffer(env)?;
    let mem = env.usm_u32(N)?;
    let foreign = a.append_usm_fill(mem.ptr(), &[1], BYTES, AppendOptions::new())?.sync_point;
    let own = b.append_usm_fill(mem.ptr(), &[2], BYTES, AppendOptions::new())?.sync_point;
    check_err!(
        b.append_usm_fill(mem.ptr(), &[3], BYTES, AppendOptions::new().after(&[foreign])),
        InvalidSyncPointWaitList
    );
    check_err!(
        b.append_usm_fill(mem.ptr(), &[3], BYTES, AppendOptions::new().after(&[own, foreign])),
        InvalidSyncPointWaitList
    );
    let future = [b.sync_point_from_raw(5)];
    check_err!(
        b.append_usm_fill(mem.ptr(), &[3], BYTES, AppendOptions::new().after(&future)),
        InvalidSyncPointWaitList
    );
    check_eq!(b.len(), 1, "rejected appends record nothing");
    b.append_usm_fill(mem.ptr(), &[4], BYTES, AppendOptions::new().after(&[own]))?;
    check_eq!(b.len(), 2);
    Ok(())
}

/// Appends `P = P * a + b` over N elements.
///
/// # Safety
/// `p` must hold N `u32`s for as long as the buffer may run.
unsafe fn append_axpb(
    env: &Env,
    cb: &CommandBuffer,
    p: &UsmAllocation,
    a: u32,
    b: u32,
    opts: AppendOptions<'_>,
) -> Result<cmdbuf::SyncPoint, CaseError> {
    let kernel = env.kernel("axpb")?;
    let args = [KernelArg::Pointer(p.ptr()), KernelArg::value(&a), KernelArg::value(&b)];
    // SAFETY: N work-items over N elements, per this function's contract.
    let appended = unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], opts)? };
    Ok(appended.sync_point)
}

/// Sync points that would let a command run beside its predecessor add no
/// reordering: `(1 * 3 + 1) * 2` needs the two steps in append order.
fn sync_points_add_no_reordering(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let (p, q) = (sentinel_usm(env, &setup)?, sentinel_usm(env, &setup)?);
    let queue = unordered_queue(env)?;
    let cb = in_order_buffer(env)?;
    let first = cb.append_usm_fill(p.ptr(), &1u32.to_le_bytes(), BYTES, AppendOptions::new())?.sync_point;
    // SAFETY: P is an N-element allocation alive until the wait below.
    unsafe {
        append_axpb(env, &cb, &p, 3, 1, AppendOptions::new().after(&[first]))?;
        append_axpb(env, &cb, &p, 2, 0, AppendOptions::new().after(&[first]))?;
    }
    cb.append_usm_memcpy(q.ptr(), p.ptr(), BYTES, AppendOptions::new().after(&[first]))?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&setup, p.ptr(), N)?, vec![8u32; N]);
    check_eq!(read::<u32>(&setup, q.ptr(), N)?, vec![8u32; N]);
    Ok(())
}

/// Several back-to-back submissions of an in-order chain of non-commuting
/// steps: each run must see the previous run's result, and run its own
/// steps in order.
fn replay_keeps_order(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let (p, q) = (env.usm_u32(N)?, sentinel_usm(env, &setup)?);
    write(&setup, p.ptr(), &[1u32; N])?;
    let queue = unordered_queue(env)?;
    let cb = in_order_buffer(env)?;
    let kernel = env.kernel("copy_add")?;
    let k = 5u32;
    let args = [KernelArg::Pointer(q.ptr()), KernelArg::Pointer(p.ptr()), KernelArg::value(&k)];
    // SAFETY: P and Q are N-element allocations alive until the finish below.
    unsafe {
        append_axpb(env, &cb, &p, 3, 1, AppendOptions::new())?;
        append_axpb(env, &cb, &p, 2, 0, AppendOptions::new())?;
        cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())?;
    }
    cb.finalize()?;
    const RUNS: usize = 4;
    for _ in 0..RUNS {
        queue.enqueue_command_buffer(&cb, &[])?;
    }
    queue.finish()?;
    let mut model = 1u32;
    for _ in 0..RUNS {
        model = model.wrapping_mul(3).wrapping_add(1).wrapping_mul(2);
    }
    check_eq!(read::<u32>(&setup, p.ptr(), N)?, vec![model; N]);
    check_eq!(read::<u32>(&setup, q.ptr(), N)?, vec![model.wrapping_add(k); N]);
    Ok(())
}
