//! Work in flight and what may not overtake it: memory freed or released
//! while commands that use it are still to run (UR's
//! `urUSMFreeDuringExecutionTest`: `urUSMFree` waits for previously enqueued
//! commands that may access the memory), and `finish` with host tasks
//! (UR's `urEnqueueHostTaskTest`, its multithreaded case included, with
//! atomic counts: cmdbuf-core's host tasks of one out-of-order queue may run at
//! the same time; the ABI's `urEnqueueHostTaskExp` takes turns per queue). Run
//! under valgrind by `scripts/memcheck.sh`, where a kernel writing freed
//! memory is an invalid write.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cmdbuf::{KernelArg, KernelLaunch, Queue, UserEvent, UsmAllocation, UsmKind, UsmKinds};

use crate::harness::{CaseResult, Env, read};
use crate::{Requires, cases, check, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["in_flight";
        usm_freed_under_kernel,
        usm_freed_under_kernel_out_of_order => Requires::OUT_OF_ORDER,
        usm_freed_under_kernel_of_each_kind,
        buffer_released_under_kernel,
        finish_waits_for_host_tasks,
        finish_waits_for_host_tasks_out_of_order => Requires::OUT_OF_ORDER,
        host_tasks_from_many_threads => Requires::OUT_OF_ORDER,
        host_task_holding_its_queue => Requires::OUT_OF_ORDER,
        host_task_holding_its_in_order_queue,
        host_task_dropping_its_queue_after_a_free => Requires::OUT_OF_ORDER,
    ]
}

const N: usize = 4096;

/// Long enough for a command that ignored what it waits for to have run.
const SETTLE: Duration = Duration::from_millis(30);

/// Launches `fill(p, 9)` over `mem` after `gate`, then drops (frees) `mem`
/// while the kernel waits: the memory must stay allocated until it has run.
fn free_under_kernel(env: &Env, queue: &Queue, mem: UsmAllocation) -> CaseResult {
    let kernel = env.kernel("fill")?;
    let gate = UserEvent::new(env.context())?;
    let value = 9u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&value)];
    // SAFETY: N work-items over N u32s, which stay allocated until the
    // kernel has run (what this case checks).
    let launched = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[gate.event()])? };
    let ptr = mem.ptr();
    drop(mem);
    std::thread::sleep(SETTLE);
    check!(!launched.status().is_terminal(), "the kernel ran before its user event completed");
    // Freed by the application, but not under the waiting kernel.
    check!(env.context().find_usm(ptr, N * 4).is_ok(), "the allocation was freed while a kernel waits to write it");
    gate.complete()?;
    queue.finish()?;
    check!(launched.status().is_terminal());
    Ok(())
}

fn usm_freed_under_kernel(env: &Env) -> CaseResult {
    free_under_kernel(env, &env.queue()?, env.usm_u32(N)?)
}

fn usm_freed_under_kernel_out_of_order(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    // Other work in flight: the freed allocation waits for all of it.
    let other = env.usm_u32(N)?;
    let busy = queue.usm_fill(other.ptr(), &[1], N * 4, &[])?;
    free_under_kernel(env, &queue, env.usm_u32(N)?)?;
    busy.wait()?;
    Ok(())
}

fn usm_freed_under_kernel_of_each_kind(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let offered = env.device().info().usm;
    for (kind, flag) in
        [(UsmKind::Host, UsmKinds::HOST), (UsmKind::Device, UsmKinds::DEVICE), (UsmKind::Shared, UsmKinds::SHARED)]
    {
        if offered.contains(flag) {
            free_under_kernel(env, &queue, env.usm(kind, N * 4)?)?;
        }
    }
    Ok(())
}

/// A buffer released while a kernel waits to write it: the launch holds it.
fn buffer_released_under_kernel(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let kernel = env.kernel("fill")?;
    let gate = UserEvent::new(env.context())?;
    let buffer = env.buffer(N * 4)?;
    let value = 5u32;
    let args = [KernelArg::MemObj(&buffer), KernelArg::value(&value)];
    // SAFETY: N work-items over an N-u32 buffer, which the launch holds.
    let launched = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[gate.event()])? };
    drop(buffer);
    gate.complete()?;
    launched.wait()?;
    queue.finish()?;
    Ok(())
}

/// Host tasks that each add one to `counter` after a nap.
fn enqueue_counting(queue: &Queue, counter: &Arc<AtomicU32>, tasks: usize) -> CaseResult {
    for _ in 0..tasks {
        let counter = counter.clone();
        queue.enqueue_host_task(&[], move || {
            std::thread::sleep(Duration::from_micros(300));
            counter.fetch_add(1, Ordering::SeqCst);
        })?;
    }
    Ok(())
}

fn finish_counts(queue: &Queue) -> CaseResult {
    let counter = Arc::new(AtomicU32::new(0));
    enqueue_counting(queue, &counter, 20)?;
    queue.finish()?;
    check_eq!(counter.load(Ordering::SeqCst), 20, "host tasks done when finish returned");
    Ok(())
}

fn finish_waits_for_host_tasks(env: &Env) -> CaseResult {
    finish_counts(&env.queue()?)
}

/// UR's out-of-order case: 0 of 20 had run at `finish` before the fix.
fn finish_waits_for_host_tasks_out_of_order(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    finish_counts(&queue)?;
    // And with device work that waits for a task, and memory it fills.
    let mem = env.usm_u32(16)?;
    let gate = UserEvent::new(env.context())?;
    let gate_event = gate.event().clone();
    let task = queue.enqueue_host_task(&[], move || {
        std::thread::sleep(SETTLE);
        let _ = gate.complete();
    })?;
    queue.usm_fill(mem.ptr(), &3u32.to_le_bytes(), 64, &[&gate_event])?;
    queue.finish()?;
    check!(task.status().is_terminal(), "finish returned before the host task ended");
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![3u32; 16]);
    Ok(())
}

/// UR's `urEnqueueHostTaskTest.Multithreaded`: threads with a queue each,
/// and all of them on one shared queue as well.
fn host_tasks_from_many_threads(env: &Env) -> CaseResult {
    const THREADS: usize = 6;
    let shared = env.ooo_queue()?;
    let shared_count = Arc::new(AtomicU32::new(0));
    let results: Vec<CaseResult> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (shared, shared_count) = (&shared, &shared_count);
                scope.spawn(move || -> CaseResult {
                    let own = env.ooo_queue()?;
                    let count = Arc::new(AtomicU32::new(0));
                    for round in 1..=5u32 {
                        enqueue_counting(&own, &count, 10)?;
                        enqueue_counting(shared, shared_count, 10)?;
                        own.finish()?;
                        check_eq!(count.load(Ordering::SeqCst), round * 10, "own queue after finish");
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err(crate::CaseError::Fail("panicked".into()))))
            .collect()
    });
    for result in results {
        result?;
    }
    shared.finish()?;
    check_eq!(shared_count.load(Ordering::SeqCst), (THREADS * 50) as u32, "shared queue after finish");
    Ok(())
}

/// A host task whose closure holds the last handle of its own queue: the
/// queue's drop, inside the task, must not wait for the task (nor for what
/// waits for it); a `finish` there is refused. `before_drop` runs in the
/// task just before it drops the queue.
fn task_drops_its_queue(queue: Queue, before_drop: impl FnOnce() + Send + 'static) -> CaseResult {
    let held = queue.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let task = queue.enqueue_host_task(&[], move || {
        std::thread::sleep(SETTLE);
        let _ = tx.send(held.finish().is_err());
        before_drop();
        drop(held);
    })?;
    drop(queue);
    let refused = rx.recv_timeout(Duration::from_secs(20)).map_err(|e| crate::CaseError::Fail(format!("{e}")))?;
    check!(refused, "finish inside the queue's own host task was not refused");
    // Bounded: a drop that waits for its own task never lets the task end.
    match wait_bounded(task, Duration::from_secs(20)) {
        None => Err(crate::CaseError::Fail("the host task dropping its own queue did not end in 20 s".into())),
        Some(Some(error)) => Err(error.into()),
        Some(None) => Ok(()),
    }
}

/// Waits for `event` on another thread for at most `limit`: `None` if it
/// did not end by then, else the error of the wait, if any.
fn wait_bounded(event: cmdbuf::Event, limit: Duration) -> Option<Option<cmdbuf::UrError>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(event.wait().err());
    });
    rx.recv_timeout(limit).ok()
}

fn host_task_holding_its_queue(env: &Env) -> CaseResult {
    task_drops_its_queue(env.ooo_queue()?, || {})
}

/// In order, a marker after the task orders later commands after it: the
/// queue's drop inside the task cannot wait for that marker either.
fn host_task_holding_its_in_order_queue(env: &Env) -> CaseResult {
    task_drops_its_queue(env.queue()?, || {})
}

/// USM freed while the task runs makes the queue keep the allocation until
/// what is in flight has ended (`urUSMFree` waits for what may use it):
/// out of order, with more than one command in flight, a marker after them
/// all, the task included. The queue's drop inside the task must not wait
/// for that marker. In the suite this came from another case freeing memory
/// of the shared context at the wrong moment: a rare hang of the case above.
fn host_task_dropping_its_queue_after_a_free(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let mem = env.usm_u32(16)?;
    // A second command in flight until after the free: a host task that
    // waits for the first one (not a gated device command, which a driver
    // running out-of-order queues in order would put before the task).
    let (release, released) = std::sync::mpsc::channel::<()>();
    let waiting = queue.enqueue_host_task(&[], move || {
        let _ = released.recv_timeout(Duration::from_secs(20));
    })?;
    task_drops_its_queue(queue, move || {
        drop(mem);
        let _ = release.send(());
    })?;
    waiting.wait()?;
    Ok(())
}
