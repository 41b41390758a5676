//! Enqueueing command buffers (UR's `enqueue.cpp`): submissions of one
//! buffer serialise on one queue and across queues, in-order or not;
//! enqueue wait lists and returned events order a submission against eager
//! work of other queues; submissions on profiling queues carry timestamps.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Event, KernelArg, KernelLaunch, Queue, QueueProperties,
    UserEvent, UsmAllocation, UsmKind,
};

use super::event_sync::gate;
use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["enqueue";
        serialize_across_queues,
        serialize_across_out_of_order_queue => Requires::OUT_OF_ORDER,
        serialize_in_order_queue,
        serialize_out_of_order_queue => Requires::OUT_OF_ORDER,
        many_submissions_pending,
        many_memory_submissions_pending,
        wait_on_other_queue_events,
        eager_work_waits_on_enqueue_event,
        wait_event_of_other_context,
        profiling => Requires::PROFILING,
        profiling_not_available,
    ]
}

/// Elements of the counters.
const COUNT: usize = 1024;
/// Bytes of the copy that lengthens each submission.
const COPY_BYTES: usize = 4 << 20;

/// A buffer whose submissions must not overlap: it increments a counter, and
/// doubles then increments a chain value with a long copy between the two
/// steps. One submission after another leaves `count = n` and
/// `chain = 2^n - 1`; submissions that overlapped interleave the chain steps
/// (or lose increments) and leave something else.
struct Serial {
    counter: UsmAllocation,
    chain: UsmAllocation,
    _copy: [UsmAllocation; 2],
    cb: CommandBuffer,
}

impl Serial {
    fn new(env: &Env) -> Result<Serial, CaseError> {
        let counter = env.usm_u32(COUNT)?;
        let chain = env.usm_u32(COUNT)?;
        let copy = [env.usm(UsmKind::Device, COPY_BYTES)?, env.usm(UsmKind::Device, COPY_BYTES)?];
        let setup = env.queue()?;
        write(&setup, counter.ptr(), &[0u32; COUNT])?;
        write(&setup, chain.ptr(), &[0u32; COUNT])?;
        let cb = Serial::record(env, &counter, &chain, &copy)?;
        Ok(Serial { counter, chain, _copy: copy, cb })
    }

    /// Records the buffer over the given memory.
    fn record(
        env: &Env,
        counter: &UsmAllocation,
        chain: &UsmAllocation,
        copy: &[UsmAllocation; 2],
    ) -> Result<CommandBuffer, CaseError> {
        let cb = env.command_buffer(CommandBufferDesc::default())?;
        let increment = env.kernel("increment")?;
        let axpb = env.kernel("axpb")?;
        let (two, zero, one) = (2u32, 0u32, 1u32);
        let inc_args = [KernelArg::Pointer(counter.ptr())];
        let double = [KernelArg::Pointer(chain.ptr()), KernelArg::value(&two), KernelArg::value(&zero)];
        let plus_one = [KernelArg::Pointer(chain.ptr()), KernelArg::value(&one), KernelArg::value(&one)];
        // SAFETY: each launch has COUNT work-items over a COUNT-element
        // allocation, which the `Serial` holding the buffer keeps alive.
        unsafe {
            cb.append_kernel_launch(&KernelLaunch::new(&increment, &[COUNT], &inc_args), &[], AppendOptions::new())?;
            let first =
                cb.append_kernel_launch(&KernelLaunch::new(&axpb, &[COUNT], &double), &[], AppendOptions::new())?;
            let copy_done = cb.append_usm_memcpy(
                copy[1].ptr(),
                copy[0].ptr(),
                COPY_BYTES,
                AppendOptions::new().after(&[first.sync_point]),
            )?;
            cb.append_kernel_launch(
                &KernelLaunch::new(&axpb, &[COUNT], &plus_one),
                &[],
                AppendOptions::new().after(&[copy_done.sync_point]),
            )?;
        }
        cb.finalize()?;
        Ok(cb)
    }

    /// Checks the state `runs` submissions leave.
    fn check(&self, queue: &Queue, runs: u32) -> CaseResult {
        check_eq!(
            read::<u32>(queue, self.counter.ptr(), COUNT)?,
            vec![runs; COUNT],
            "counter after {runs} submissions"
        );
        check_eq!(
            read::<u32>(queue, self.chain.ptr(), COUNT)?,
            vec![(1u32 << runs) - 1; COUNT],
            "chain after {runs} submissions"
        );
        Ok(())
    }
}

/// Submits `serial.cb` once per queue in `order`, without waiting in between,
/// then finishes every queue and checks the result.
fn submit_all(serial: &Serial, queues: &[Queue], order: &[usize]) -> CaseResult {
    for &q in order {
        queues[q].enqueue_command_buffer(&serial.cb, &[])?;
    }
    for q in queues {
        q.finish()?;
    }
    serial.check(&queues[0], order.len() as u32)
}

/// UR's `SerializeAcrossQueues`: the same buffer enqueued on several
/// in-order queues runs one submission at a time.
fn serialize_across_queues(env: &Env) -> CaseResult {
    let serial = Serial::new(env)?;
    let queues = [env.queue()?, env.queue()?, env.queue()?];
    submit_all(&serial, &queues, &[0, 1, 2, 0, 1, 2])
}

/// Submissions of one buffer made while a user event holds the first back:
/// more are pending at once than a backend keeps per-submission state for
/// (Vulkan's reusable primaries, then its primary for simultaneous use with
/// a status-word copy per submission), and each runs once, in order, its
/// event completing.
fn many_submissions_pending(env: &Env) -> CaseResult {
    const RUNS: u32 = 12;
    let serial = Serial::new(env)?;
    let queue = env.queue()?;
    let gate = UserEvent::new(env.context())?;
    let mut runs = vec![queue.enqueue_command_buffer(&serial.cb, &[gate.event()])?];
    for _ in 1..RUNS {
        runs.push(queue.enqueue_command_buffer(&serial.cb, &[])?);
    }
    gate.complete()?;
    for (i, run) in runs.iter().enumerate() {
        run.wait().map_err(|e| CaseError::Fail(format!("submission {i}: {e}")))?;
    }
    serial.check(&queue, RUNS)
}

/// [`many_submissions_pending`] with a buffer of memory commands only (no
/// kernel, so no status words on Vulkan), each submission between eager
/// commands of the same in-order queue: a fill of its source before it, a
/// copy of its result after it.
fn many_memory_submissions_pending(env: &Env) -> CaseResult {
    const RUNS: usize = 12;
    const WORDS: usize = 256;
    let bytes = WORDS * 4;
    let (source, result) = (env.usm_u32(WORDS)?, env.usm_u32(WORDS)?);
    let kept = env.usm_u32(WORDS * RUNS)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_usm_memcpy(result.ptr(), source.ptr(), bytes, AppendOptions::new())?;
    cb.finalize()?;
    let queue = env.queue()?;
    let gate = UserEvent::new(env.context())?;
    let mut last = queue.barrier(&[gate.event()])?;
    for i in 0..RUNS {
        queue.usm_fill(source.ptr(), &(i as u32 + 1).to_le_bytes(), bytes, &[])?;
        queue.enqueue_command_buffer(&cb, &[])?;
        last = queue.usm_memcpy(kept.ptr().byte_add(i * bytes), result.ptr(), bytes, &[])?;
    }
    gate.complete()?;
    last.wait()?;
    let expected: Vec<u32> = (0..RUNS).flat_map(|i| vec![i as u32 + 1; WORDS]).collect();
    check_eq!(read::<u32>(&queue, kept.ptr(), WORDS * RUNS)?, expected);
    Ok(())
}

/// `SerializeAcrossQueues` with an out-of-order queue as the second queue.
fn serialize_across_out_of_order_queue(env: &Env) -> CaseResult {
    let serial = Serial::new(env)?;
    let queues = [env.queue()?, env.ooo_queue()?];
    submit_all(&serial, &queues, &[0, 1, 0, 1, 1, 0])
}

/// UR's `SerializeInOrOutOfOrderQueue` on an in-order queue.
fn serialize_in_order_queue(env: &Env) -> CaseResult {
    let serial = Serial::new(env)?;
    let queues = [env.queue()?];
    submit_all(&serial, &queues, &[0; 5])
}

/// UR's `SerializeInOrOutOfOrderQueue` on an out-of-order queue, which
/// orders nothing itself.
fn serialize_out_of_order_queue(env: &Env) -> CaseResult {
    let serial = Serial::new(env)?;
    let queues = [env.ooo_queue()?];
    submit_all(&serial, &queues, &[0; 5])
}

const N: usize = 64;

/// A buffer doubling `src` into `dst`.
fn doubling_buffer(env: &Env, dst: &UsmAllocation, src: &UsmAllocation) -> Result<CommandBuffer, CaseError> {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let kernel = env.kernel("cpy_and_mult")?;
    let args = [KernelArg::Pointer(dst.ptr()), KernelArg::Pointer(src.ptr())];
    // SAFETY: N work-items over two N-element allocations, which the callers
    // keep alive until their queues have finished.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
    cb.finalize()?;
    Ok(cb)
}

/// A submission waits for eager work of two other queues, one of them held
/// back by a gate.
fn wait_on_other_queue_events(env: &Env) -> CaseResult {
    let (src, dst) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let (slow, fast, runner) = (env.queue()?, env.queue()?, env.queue()?);
    write(&runner, src.ptr(), &[0u32; N])?;
    write(&runner, dst.ptr(), &[0u32; N])?;
    let cb = doubling_buffer(env, &dst, &src)?;
    let held = gate(env, &slow)?;
    let half = N / 2 * 4;
    let first = slow.usm_fill(src.ptr(), &21u32.to_le_bytes(), half, &[&held])?;
    let second = fast.usm_fill(src.ptr().byte_add(half), &5u32.to_le_bytes(), half, &[])?;
    runner.enqueue_command_buffer(&cb, &[&first, &second])?.wait()?;
    let expected: Vec<u32> = [vec![42u32; N / 2], vec![10u32; N / 2]].concat();
    check_eq!(read::<u32>(&runner, dst.ptr(), N)?, expected);
    slow.finish()?;
    fast.finish()?;
    Ok(())
}

/// Eager work of another queue waits for the event a (held back) submission
/// returned.
fn eager_work_waits_on_enqueue_event(env: &Env) -> CaseResult {
    let (src, dst, out) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let (slow, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    let input: Vec<u32> = (0..N as u32).collect();
    write(&consumer, src.ptr(), &input)?;
    write(&consumer, dst.ptr(), &[0u32; N])?;
    write(&consumer, out.ptr(), &[0u32; N])?;
    let cb = doubling_buffer(env, &dst, &src)?;
    let held = gate(env, &slow)?;
    let submitted = runner.enqueue_command_buffer(&cb, &[&held])?;
    let kernel = env.kernel("copy_add")?;
    let k = 1u32;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::Pointer(dst.ptr()), KernelArg::value(&k)];
    // SAFETY: N work-items over two N-element allocations that outlive the
    // wait below.
    let added = unsafe { consumer.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[&submitted])? };
    added.wait()?;
    let expected: Vec<u32> = input.iter().map(|v| v * 2 + 1).collect();
    check_eq!(read::<u32>(&consumer, out.ptr(), N)?, expected);
    runner.finish()?;
    Ok(())
}

/// An event of another context in a command-buffer enqueue's wait list:
/// `InvalidEventWaitList`, except where the adapter waits for that context's
/// events (`Context::waits_on_events_of`).
fn wait_event_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let other_mem = UsmAllocation::new(&other, UsmKind::Device, 64)?;
    let other_queue = Queue::new(&other, QueueProperties::default())?;
    let foreign = other_queue.usm_fill(other_mem.ptr(), &[1], 64, &[])?;
    let mem = env.usm(UsmKind::Device, 64)?;
    let queue = env.queue()?;
    write(&queue, mem.ptr(), &[0u8; 64])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_usm_fill(mem.ptr(), &[2], 64, AppendOptions::new())?;
    cb.finalize()?;
    if env.context().waits_on_events_of(&other) {
        // The adapter waits for the other context's events (CPU, CUDA): the
        // enqueue is accepted and runs after the event.
        queue.enqueue_command_buffer(&cb, &[&foreign])?.wait()?;
        check!(foreign.status().is_terminal(), "the enqueue completed before the event it waited for");
        check_eq!(read::<u8>(&queue, mem.ptr(), 64)?, vec![2u8; 64]);
        return Ok(());
    }
    check_err!(queue.enqueue_command_buffer(&cb, &[&foreign]), InvalidEventWaitList);
    queue.finish()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 64)?, vec![0u8; 64], "a rejected enqueue runs nothing");
    other_queue.finish()?;
    Ok(())
}

fn check_ordered(what: &str, event: &Event) -> Result<cmdbuf::ProfilingInfo, CaseError> {
    let info = event.profiling_info()?;
    check!(
        info.queued <= info.submit && info.submit <= info.start && info.start <= info.end,
        "{what}: timestamps out of order: {info:?}"
    );
    check!(info.end > 0, "{what}: no end timestamp: {info:?}");
    Ok(info)
}

/// Submissions on a profiling queue: each event's timestamps are ordered, and
/// the second submission starts no earlier than the first ended.
fn profiling(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, COPY_BYTES)?;
    let queue = env.queue_with(QueueProperties { out_of_order: false, profiling: true })?;
    let cb = env.command_buffer(CommandBufferDesc { profiling: true, ..Default::default() })?;
    cb.append_usm_fill(mem.ptr(), &[1, 2, 3, 4], COPY_BYTES, AppendOptions::new())?;
    cb.finalize()?;
    let first = queue.enqueue_command_buffer(&cb, &[])?;
    let second = queue.enqueue_command_buffer(&cb, &[])?;
    second.wait()?;
    first.wait()?;
    let a = check_ordered("first submission", &first)?;
    let b = check_ordered("second submission", &second)?;
    check!(b.start >= a.end, "the second submission started at {} before the first ended at {}", b.start, a.end);
    Ok(())
}

/// Events of a queue created without profiling have no timestamps.
fn profiling_not_available(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, 64)?;
    let queue = env.queue()?;
    let cb = env.command_buffer(CommandBufferDesc { profiling: true, ..Default::default() })?;
    cb.append_usm_fill(mem.ptr(), &[1], 64, AppendOptions::new())?;
    cb.finalize()?;
    let submitted = queue.enqueue_command_buffer(&cb, &[])?;
    submitted.wait()?;
    check_err!(submitted.profiling_info(), ProfilingInfoNotAvailable);
    let eager = queue.usm_fill(mem.ptr(), &[2], 64, &[])?;
    eager.wait()?;
    check_err!(eager.profiling_info(), ProfilingInfoNotAvailable);
    Ok(())
}
