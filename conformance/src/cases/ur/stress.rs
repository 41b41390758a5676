//! Multi-threaded stress (no UR counterpart): one command buffer submitted
//! from 8 threads through 8 queues, whose submissions must serialise, 8
//! threads each recording and running their own buffers at once, and 8
//! threads launching eagerly into one queue and into a queue each.

use std::thread;

use cmdbuf::{AppendOptions, CommandBufferDesc, EventStatus, KernelArg, KernelLaunch, Queue, QueueProperties};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{Requires, cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["stress";
        shared_buffer_from_eight_queues,
        shared_buffer_from_eight_out_of_order_queues => Requires::OUT_OF_ORDER,
        shared_two_step_counter_from_eight_queues,
        eight_threads_own_buffers,
        eight_threads_record_enqueue_drop,
        eight_threads_launch_on_one_queue,
        eight_threads_launch_on_their_queues,
    ]
}

const THREADS: usize = 8;

/// Runs `body(t)` on `THREADS` threads and returns the first failure.
fn on_threads(body: impl Fn(usize) -> CaseResult + Sync) -> CaseResult {
    let results: Vec<CaseResult> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let body = &body;
                s.spawn(move || body(t))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(CaseError::Fail("a thread panicked".into()))))
            .collect()
    });
    results.into_iter().collect()
}

/// Each submission increments the counter once without synchronising with
/// the others: only the serialisation of one buffer's submissions, across
/// queues, makes the total exact.
fn shared_counter(env: &Env, properties: QueueProperties) -> CaseResult {
    const SUBMISSIONS: usize = 1000;
    let counter = env.usm_u32(1)?;
    write(&env.queue()?, counter.ptr(), &[0u32])?;
    let kernel = env.kernel("increment")?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let args = [KernelArg::Pointer(counter.ptr())];
    // SAFETY: one work-item increments the one-element counter.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[1], &args), &[], AppendOptions::new())? };
    cb.finalize()?;
    on_threads(|_| {
        let queue = env.queue_with(properties)?;
        for _ in 0..SUBMISSIONS {
            queue.enqueue_command_buffer(&cb, &[])?;
        }
        queue.finish()?;
        Ok(())
    })?;
    let queue = env.queue()?;
    check_eq!(read::<u32>(&queue, counter.ptr(), 1)?, vec![(THREADS * SUBMISSIONS) as u32]);
    Ok(())
}

fn shared_buffer_from_eight_queues(env: &Env) -> CaseResult {
    shared_counter(env, QueueProperties::default())
}

fn shared_buffer_from_eight_out_of_order_queues(env: &Env) -> CaseResult {
    shared_counter(env, QueueProperties { out_of_order: true, profiling: false })
}

/// A counter bumped in two dependent commands (`tmp = counter + 1`, then
/// `counter = tmp`): overlapping submissions would lose updates in the wide
/// window between the read and the write.
fn shared_two_step_counter_from_eight_queues(env: &Env) -> CaseResult {
    const SUBMISSIONS: usize = 500;
    let (counter, tmp) = (env.usm_u32(1)?, env.usm_u32(1)?);
    write(&env.queue()?, counter.ptr(), &[0u32])?;
    let kernel = env.kernel("copy_add")?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let one = 1u32;
    let args = [KernelArg::Pointer(tmp.ptr()), KernelArg::Pointer(counter.ptr()), KernelArg::value(&one)];
    // SAFETY: one work-item reads and writes element 0 of one-element allocations.
    let add = unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[1], &args), &[], AppendOptions::new())? };
    cb.append_usm_memcpy(counter.ptr(), tmp.ptr(), 4, AppendOptions::new().after(&[add.sync_point]))?;
    cb.finalize()?;
    on_threads(|_| {
        let queue = env.queue()?;
        for _ in 0..SUBMISSIONS {
            queue.enqueue_command_buffer(&cb, &[])?;
        }
        queue.finish()?;
        Ok(())
    })?;
    check_eq!(read::<u32>(&env.queue()?, counter.ptr(), 1)?, vec![(THREADS * SUBMISSIONS) as u32]);
    Ok(())
}

/// Every thread records, finalizes and runs a buffer of its own (a fill, an
/// increment and a copy-add, chained) 100 times, all at once.
fn eight_threads_own_buffers(env: &Env) -> CaseResult {
    const N: usize = 256;
    const RUNS: u32 = 100;
    on_threads(|t| {
        let (counts, out, marks) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
        let queue = env.queue()?;
        write(&queue, counts.ptr(), &[0u32; N])?;
        let (increment, copy_add) = (env.kernel("increment")?, env.kernel("copy_add")?);
        let cb = env.command_buffer(CommandBufferDesc::default())?;
        let k = 1000 * t as u32;
        let inc_args = [KernelArg::Pointer(counts.ptr())];
        let add_args = [KernelArg::Pointer(out.ptr()), KernelArg::Pointer(counts.ptr()), KernelArg::value(&k)];
        let mark = (t as u32 + 1).to_le_bytes();
        let fill = cb.append_usm_fill(marks.ptr(), &mark, N * 4, AppendOptions::new())?;
        // SAFETY: N work-items increment the N elements of `counts`.
        let inc = unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&increment, &[N], &inc_args).local_size(&[32]),
                &[],
                AppendOptions::new().after(&[fill.sync_point]),
            )?
        };
        // SAFETY: N work-items read `counts` and write `out`, N elements each.
        unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&copy_add, &[N], &add_args),
                &[],
                AppendOptions::new().after(&[inc.sync_point]),
            )?
        };
        cb.finalize()?;
        for _ in 0..RUNS {
            queue.enqueue_command_buffer(&cb, &[])?;
        }
        queue.finish()?;
        check_eq!(read::<u32>(&queue, counts.ptr(), N)?, vec![RUNS; N], "thread {t}");
        check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![RUNS + k; N], "thread {t}");
        check_eq!(read::<u32>(&queue, marks.ptr(), N)?, vec![t as u32 + 1; N], "thread {t}");
        Ok(())
    })
}

/// Threads create, record, finalize and enqueue short-lived buffers and drop
/// them before their submissions complete.
fn eight_threads_record_enqueue_drop(env: &Env) -> CaseResult {
    const ITERATIONS: u32 = 50;
    const N: usize = 64;
    on_threads(|t| {
        let queue = env.queue()?;
        let (a, b) = (env.usm_u32(N)?, env.usm_u32(N)?);
        for i in 0..ITERATIONS {
            let value = (t as u32) << 16 | i;
            let event = {
                let cb = env.command_buffer(CommandBufferDesc::default())?;
                let fill = cb.append_usm_fill(a.ptr(), &value.to_le_bytes(), N * 4, AppendOptions::new())?;
                cb.append_usm_memcpy(b.ptr(), a.ptr(), N * 4, AppendOptions::new().after(&[fill.sync_point]))?;
                cb.finalize()?;
                queue.enqueue_command_buffer(&cb, &[])?
            };
            event.wait()?;
            check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![value; N], "thread {t}, iteration {i}");
        }
        Ok(())
    })
}

/// Eager launches from 8 threads at once, each thread's into its own part of
/// one allocation on the in-order queue `queue_of(t)` gives it: launch `i`
/// of a thread makes each of its values `3 * value + i` (`axpb`), and every
/// 50th is waited for by the launching thread while the others go on. The
/// queue orders each thread's launches after one another, so each part
/// ends at the fold of its launches: a lost, repeated or reordered launch,
/// or two of one thread overlapping, changes it (Vulkan: several threads
/// filling, sealing and flushing one queue's batches while the batch
/// thread submits them, or the batch thread serving 8 queues).
fn eight_threads_launch(env: &Env, queue_of: impl Fn(usize) -> Result<Queue, CaseError> + Sync) -> CaseResult {
    const N: usize = 4096;
    const LAUNCHES: u32 = 300;
    let mem = env.usm_u32(N * THREADS)?;
    write(&env.queue()?, mem.ptr(), &vec![0u32; N * THREADS])?;
    let kernel = env.kernel("axpb")?;
    on_threads(|t| {
        let queue = queue_of(t)?;
        let part = mem.ptr().byte_add(t * N * 4);
        let mut last = None;
        for i in 0..LAUNCHES {
            let args = [KernelArg::Pointer(part), KernelArg::value(&3u32), KernelArg::value(&i)];
            // SAFETY: `N` items update this thread's `N` u32s of `mem`.
            let event = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])? };
            if i % 50 == 49 {
                event.wait()?;
                check_eq!(event.status(), EventStatus::Complete);
            }
            last = Some(event);
        }
        last.expect("launches").wait()?;
        Ok(())
    })?;
    let expected = (0..LAUNCHES).fold(0u32, |v, i| v.wrapping_mul(3).wrapping_add(i));
    check_eq!(read::<u32>(&env.queue()?, mem.ptr(), N * THREADS)?, vec![expected; N * THREADS]);
    Ok(())
}

fn eight_threads_launch_on_one_queue(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    eight_threads_launch(env, |_| Ok(queue.clone()))
}

fn eight_threads_launch_on_their_queues(env: &Env) -> CaseResult {
    eight_threads_launch(env, |_| env.queue())
}
