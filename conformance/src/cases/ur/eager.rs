//! The eager queue operations (the `urEnqueue*` family) on their own, which
//! the software command buffer is built on: UR's `test/conformance/enqueue/`
//! tests `urEnqueueKernelLaunchWithArgsExp.cpp`, `urEnqueueUSMFill.cpp`,
//! `urEnqueueUSMMemcpy.cpp`, `urEnqueueUSMPrefetch.cpp`,
//! `urEnqueueUSMAdvise.cpp`, `urEnqueueMemBuffer{Read,Write,Copy,Fill}.cpp`,
//! `urEnqueueMemBuffer{Read,Write,Copy}Rect.cpp`, `urEnqueueEventsWait.cpp`
//! and `urEnqueueEventsWaitWithBarrier.cpp`, plus event status and
//! profiling (`test/conformance/event/`).

use cmdbuf::{
    Command, Context, Event, EventStatus, KernelArg, KernelLaunch, MapFlags, MigrationFlags, Program, Queue,
    QueueProperties, RectLayout, RectOffset, RectRegion, UserEvent, UsmAdvice, UsmAllocation, UsmKind,
};

use crate::harness::{CaseResult, Env, copy_rect_reference, fill_reference, pattern, read, read_buffer, write};
use crate::kernels::{self, saxpy_local_reference, saxpy_reference};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["eager";
        launch_1d,
        launch_2d_3d_with_offsets,
        launch_local_memory,
        launch_with_buffer_args,
        arguments_from_launch_to_launch,
        usm_fill_patterns,
        usm_memcpy,
        usm_memcpy_host_pointers,
        usm_memcpy_between_host_pointers_in_queue_order,
        usm_prefetch_and_advise,
        write_read_usm,
        buffer_write_read,
        buffer_map_unmap,
        buffer_copy_and_fill,
        buffer_rect_write_read,
        buffer_copy_rect_3d,
        buffer_usm_transfers => Requires::HOST_USM,
        async_raw_pointer_transfers,
        generic_enqueue,
        events_wait_joins => Requires::OUT_OF_ORDER,
        barrier_orders_out_of_order_queue => Requires::OUT_OF_ORDER,
        finish_waits_for_everything => Requires::HOST_USM,
        event_status_after_wait,
        profiling_timestamps => Requires::PROFILING,
        profiling_unavailable_without_profiling_queue,
        wait_list_across_queues,
        event_of_other_context,
        host_route_between_contexts,
        kernel_of_other_context,
        argument_count_mismatch,
        invalid_work_dimension,
        local_size_not_dividing_global,
        empty_global_range,
        implementation_chosen_local_size,
        failed_predecessor_orders_only,
        status_polled_from_another_thread,
        long_chain_waited_midway,
        wait_on_another_queue_only,
        host_copy_after_its_memory_is_written,
        host_task_after_enqueued_work => Requires::HOST_USM,
        flush_starts_work => Requires::HOST_USM,
        user_event_between_enqueued_work,
    ]
}

/// How long a case waits for work that must run without a host wait.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Enqueues `count` launches of `increment` over the first `n` u32s of `mem`
/// on `queue`, after `wait`; returns the last event.
fn increments(
    env: &Env,
    queue: &Queue,
    mem: cmdbuf::UsmPtr,
    n: usize,
    count: usize,
    wait: &[&Event],
) -> Result<Event, crate::CaseError> {
    let kernel = env.kernel("increment")?;
    let args = [KernelArg::Pointer(mem)];
    let mut last = None;
    for i in 0..count {
        let wait = if i == 0 { wait } else { &[] };
        // SAFETY: `n` items increment the first `n` u32s of `mem`, which the
        // caller sized for them.
        last = Some(unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[n], &args), wait)? });
    }
    Ok(last.expect("at least one launch"))
}

/// `n` u32 counters and the fill that zeroes them.
fn counters(env: &Env, queue: &Queue, n: usize) -> Result<(UsmAllocation, Event), crate::CaseError> {
    let mem = env.usm_u32(n)?;
    let zero = queue.usm_fill(mem.ptr(), &[0], n * 4, &[])?;
    Ok((mem, zero))
}

/// `urEventGetInfo(EXECUTION_STATUS)` polled from a thread other than the
/// one that enqueued, with no wait, flush or finish anywhere: the status
/// must reach `Complete` (an adapter that holds eager work back, such as
/// Vulkan's batches, must start it when asked for the status).
fn status_polled_from_another_thread(env: &Env) -> CaseResult {
    const N: usize = 4096;
    let queue = env.queue()?;
    let (mem, zero) = counters(env, &queue, N)?;
    let last = increments(env, &queue, mem.ptr(), N, 16, &[&zero])?;
    let start = std::time::Instant::now();
    let status = std::thread::scope(|s| {
        s.spawn(|| {
            loop {
                let status = last.status();
                if status.is_terminal() || start.elapsed() > PATIENCE {
                    return status;
                }
                std::thread::yield_now();
            }
        })
        .join()
    });
    check_eq!(status.ok(), Some(EventStatus::Complete), "the polled status after {:?}", start.elapsed());
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![16u32; N]);
    Ok(())
}

/// A chain of eager launches long enough to fill several of an adapter's
/// batches (Vulkan's: 16 commands, doubling up to 256, recorded and
/// submitted by another thread once full), waited for partway through
/// from other threads while launches go on, then at its end. Launch `i`
/// makes every value `3 * value + i` (`axpb`), so the result depends on
/// every launch running once, in order, after the one before has written:
/// a batch submitted out of order, a command lost or recorded twice, or a
/// launch overlapping the one before changes it.
fn long_chain_waited_midway(env: &Env) -> CaseResult {
    const N: usize = 1 << 16;
    const LAUNCHES: u32 = 700;
    const WAITED: [u32; 3] = [5, 40, 300];
    let queue = env.queue()?;
    let (mem, zero) = counters(env, &queue, N)?;
    let kernel = env.kernel("axpb")?;
    let mut waited = Vec::new();
    let mut last = None;
    std::thread::scope(|s| -> CaseResult {
        let mut waiters = Vec::new();
        for i in 0..LAUNCHES {
            let wait: &[&Event] = if i == 0 { &[&zero] } else { &[] };
            let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&3u32), KernelArg::value(&i)];
            // SAFETY: `N` items update the `N` u32s of `mem`.
            let event = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), wait)? };
            if WAITED.contains(&i) {
                let e = event.clone();
                waiters.push(s.spawn(move || e.wait().map(|()| e.status())));
                waited.push(event.clone());
            }
            last = Some(event);
        }
        for w in waiters {
            let status = w.join().map_err(|_| cmdbuf::err!(Unknown, "a waiting thread panicked"))??;
            check_eq!(status, EventStatus::Complete, "a launch waited for from another thread");
        }
        Ok(())
    })?;
    last.expect("launches").wait()?;
    let expected = (0..LAUNCHES).fold(0u32, |v, i| v.wrapping_mul(3).wrapping_add(i));
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![expected; N], "values after {LAUNCHES} launches");
    for e in &waited {
        check_eq!(e.status(), EventStatus::Complete);
    }
    Ok(())
}

/// Work of one queue that only another queue's command waits for, and the
/// host waits for that command only: the first queue's work must be
/// started by the wait list alone.
fn wait_on_another_queue_only(env: &Env) -> CaseResult {
    const N: usize = 1024;
    let (q1, q2) = (env.queue()?, env.queue()?);
    let ((a, zero), b) = (counters(env, &q1, N)?, env.usm_u32(N)?);
    let last = increments(env, &q1, a.ptr(), N, 5, &[&zero])?;
    let copy = q2.usm_memcpy(b.ptr(), a.ptr(), N * 4, &[&last])?;
    copy.wait()?;
    check_eq!(read::<u32>(&q2, b.ptr(), N)?, vec![5u32; N]);
    Ok(())
}

/// A copy from host memory moves what a command before it wrote there, not
/// what the memory held when the copy was enqueued: after a read into the
/// memory on another queue (in its wait list) and in the same in-order
/// queue, from and into buffers and USM, small and large. The read waits for
/// a user event, or for nothing: a driver that holds a command back for a
/// user event may not for device work. NVIDIA's OpenCL moved stale bytes
/// through the host between two queues (docs/opencl.md).
fn host_copy_after_its_memory_is_written(env: &Env) -> CaseResult {
    const LARGE: usize = 64 << 20;
    let (ctx, expected) = (env.context(), pattern(LARGE, 61));
    let source = env.buffer_with(&expected)?;
    let (source_usm, target_usm) = (env.usm(UsmKind::Device, LARGE)?, env.usm(UsmKind::Device, LARGE)?);
    let (q1, q2) = (env.queue()?, env.queue()?);
    write(&q1, source_usm.ptr(), &expected)?;
    let mut failures = Vec::new();
    let variants = [
        ("buffer to buffer, other queue", true, false, false),
        ("buffer to buffer, same queue", false, false, false),
        ("buffer to USM, other queue", true, false, true),
        ("USM to USM, other queue", true, true, true),
        ("USM to USM, same queue", false, true, true),
    ];
    let runs = [(128, true), (128, false), (LARGE, true), (LARGE, false)]
        .into_iter()
        .flat_map(|(size, held)| variants.into_iter().map(move |v| (size, held, v)));
    for (size, held, (name, other_queue, from_usm, into_usm)) in runs {
        let how = if held { "held by a user event" } else { "not held" };
        let target = env.buffer_with(&vec![0u8; size])?;
        write(&q1, target_usm.ptr(), &vec![0u8; size])?;
        let copier = if other_queue { &q2 } else { &q1 };
        let mut staging = vec![0u8; size];
        let host = staging.as_mut_ptr();
        let gate = UserEvent::new(ctx)?;
        // `staging` holds `size` bytes and is neither touched by the host
        // nor dropped until both copies have completed: nothing returns
        // between the read's enqueue and its wait, which comes before any
        // `?` on the copy's result.
        // SAFETY: the commands' host memory, as said above.
        let (read_cmd, write_cmd) = unsafe {
            (
                Command::buffer_read_host(ctx, &source, 0, size, host)?,
                Command::buffer_write_host(ctx, &target, 0, size, host)?,
            )
        };
        let gated = [gate.event()];
        let before: &[&Event] = if held { &gated } else { &[] };
        let down = if from_usm {
            // SAFETY: the host side is `staging`, as said above.
            unsafe { q1.usm_memcpy_host(host, source_usm.ptr().addr() as *const u8, size, before)? }
        } else {
            q1.enqueue(read_cmd, before)?
        };
        let after: &[&Event] = if other_queue { &[&down] } else { &[] };
        let up = if into_usm {
            // SAFETY: the host side is `staging`, as said above.
            unsafe { copier.usm_memcpy_host(target_usm.ptr().addr() as *mut u8, host, size, after) }
        } else {
            copier.enqueue(write_cmd, after)
        };
        let (opened, read_done) = (gate.complete(), down.wait());
        let up_done = up.and_then(|up| up.wait());
        opened?;
        read_done?;
        up_done?;
        drop(staging);
        let got = if into_usm { read::<u8>(&q1, target_usm.ptr(), size)? } else { read_buffer(&q1, &target, 0, size)? };
        if got != expected[..size] {
            failures.push(format!(
                "{name}, {size} bytes, {how}: moved {:?}..., expected {:?}...",
                &got[..4],
                &expected[..4]
            ));
        }
    }
    check!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// Host USM of `n` u32s and the launch of `fill` writing `value` into them.
fn host_fill(env: &Env, queue: &Queue, n: usize, value: u32) -> Result<(UsmAllocation, Event), crate::CaseError> {
    let mem = env.usm(UsmKind::Host, n * 4)?;
    let kernel = env.kernel("fill")?;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&value)];
    // SAFETY: `n` items write the `n` u32s of the allocation.
    let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[n], &args), &[])? };
    Ok((mem, launch))
}

/// A host task after device work of its in-order queue sees that work's
/// results; the host waits for the task only.
fn host_task_after_enqueued_work(env: &Env) -> CaseResult {
    const N: usize = 256;
    let queue = env.queue()?;
    let (mem, _) = host_fill(env, &queue, N, 0x5EED)?;
    let addr = mem.host_ptr().expect("host USM has a host address") as usize;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = seen.clone();
    let task = queue.enqueue_host_task(&[], move || {
        // SAFETY: the allocation holds N u32s and outlives the task (the
        // case waits for it); the launch before it in order has completed.
        let got = unsafe { std::slice::from_raw_parts(addr as *const u32, N) };
        *into.lock().expect("not poisoned") = got.to_vec();
    })?;
    task.wait()?;
    check_eq!(*seen.lock().expect("not poisoned"), vec![0x5EED_u32; N]);
    Ok(())
}

/// `urQueueFlush`: the work enqueued before it is started without any wait;
/// the host sees a kernel's writes to host memory by polling it.
fn flush_starts_work(env: &Env) -> CaseResult {
    const N: usize = 256;
    let queue = env.queue()?;
    let (mem, launch) = host_fill(env, &queue, N, 0xF1A5)?;
    queue.flush()?;
    let host = mem.host_ptr().expect("host USM has a host address").cast::<u32>();
    let start = std::time::Instant::now();
    // SAFETY: the allocation holds N u32s; the device may be writing them,
    // hence volatile reads of whole aligned words.
    let all_written = || (0..N).all(|i| unsafe { host.add(i).read_volatile() } == 0xF1A5);
    while !all_written() && start.elapsed() < PATIENCE {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    check!(all_written(), "the kernel's writes not seen {:?} after the flush", start.elapsed());
    launch.wait()?;
    Ok(())
}

/// An in-order queue with a command waiting for a user event between
/// others: the command before it completes on its own, the ones after wait,
/// and once the event completes every command runs, in order.
fn user_event_between_enqueued_work(env: &Env) -> CaseResult {
    const N: usize = 1024;
    let queue = env.queue()?;
    let (mem, zero) = counters(env, &queue, N)?;
    let before = increments(env, &queue, mem.ptr(), N, 3, &[&zero])?;
    let gate = cmdbuf::UserEvent::new(env.context())?;
    let held = increments(env, &queue, mem.ptr(), N, 1, &[gate.event()])?;
    let after = increments(env, &queue, mem.ptr(), N, 4, &[])?;
    before.wait()?;
    check_eq!(read::<u32>(&env.queue()?, mem.ptr(), N)?, vec![3u32; N], "before the gate");
    check!(!held.status().is_terminal(), "a launch ran before the user event it waits on");
    check!(!after.status().is_terminal(), "a launch overtook one held by a user event");
    gate.complete()?;
    after.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![8u32; N]);
    Ok(())
}

/// Bytes of the large fills that keep a worker busy while another command
/// could wrongly overtake it.
const BIG: usize = 4 << 20;

fn saxpy_inputs(n: usize) -> (Vec<u32>, Vec<u32>) {
    let xs = (0..n as u32).map(|i| i * 7 + 3).collect();
    let ys = (0..n as u32).map(|i| i ^ 0x55).collect();
    (xs, ys)
}

/// UR's `urEnqueueKernelLaunchTest.Success`: saxpy with a local size.
fn launch_1d(env: &Env) -> CaseResult {
    const N: usize = 256;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let (xs, ys) = saxpy_inputs(N);
    let queue = env.queue()?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let kernel = env.kernel("saxpy")?;
    let a = 5u32;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&a), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: 256 work-items over 256-element X, Y and Z.
    let event = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[64]), &[])? };
    event.wait()?;
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_reference(a, &xs, &ys));
    Ok(())
}

/// What `indexers` writes for a launch: six values per work-item at its
/// offset-free linear id (dimension 0 fastest).
fn indexers_reference(global: [usize; 3], local: [usize; 3], offset: [usize; 3]) -> Vec<u32> {
    let mut out = vec![0u32; global.iter().product::<usize>() * 6];
    for z in 0..global[2] {
        for y in 0..global[1] {
            for x in 0..global[0] {
                let linear = x + global[0] * (y + global[1] * z);
                let rel = [x, y, z];
                for d in 0..3 {
                    out[linear * 6 + d] = (offset[d] + rel[d]) as u32;
                    out[linear * 6 + 3 + d] = (rel[d] % local[d]) as u32;
                }
            }
        }
    }
    out
}

/// UR's `urEnqueueKernelLaunchTestWithParam` geometries: 2D and 3D launches
/// with global offsets report the right global and local ids.
fn launch_2d_3d_with_offsets(env: &Env) -> CaseResult {
    let kernel = env.kernel("indexers")?;
    let queue = env.queue()?;
    let launches: [(&[usize], &[usize], &[usize]); 2] =
        [(&[8, 6], &[4, 3], &[3, 11]), (&[4, 3, 6], &[2, 3, 2], &[5, 1, 9])];
    for (global, local, offset) in launches {
        let items: usize = global.iter().product();
        let out = env.usm_u32(items * 6)?;
        write(&queue, out.ptr(), &vec![u32::MAX; items * 6])?;
        let args = [KernelArg::Pointer(out.ptr())];
        // SAFETY: indexers writes six u32s per work-item at its offset-free
        // linear id; `out` has six per item of the global range.
        unsafe {
            queue
                .launch_kernel(&KernelLaunch::new(&kernel, global, &args).local_size(local).global_offset(offset), &[])?
                .wait()?
        };
        let pad = |v: &[usize], fill: usize| {
            let mut p = [fill; 3];
            p[..v.len()].copy_from_slice(v);
            p
        };
        check_eq!(
            read::<u32>(&queue, out.ptr(), items * 6)?,
            indexers_reference(pad(global, 1), pad(local, 1), pad(offset, 0)),
            "global {global:?}, local {local:?}, offset {offset:?}"
        );
    }
    Ok(())
}

/// Two local-memory arguments sized for the work-group (UR's
/// `local_memory_update.cpp` kernel, launched eagerly).
fn launch_local_memory(env: &Env) -> CaseResult {
    const N: usize = 128;
    const LOCAL: usize = 16;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let (xs, ys) = saxpy_inputs(N);
    let queue = env.queue()?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let kernel = env.kernel("saxpy_local")?;
    let a = 3u32;
    let args = [
        KernelArg::Local(LOCAL * 4),
        KernelArg::Local(2 * LOCAL * 4),
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&a),
        KernelArg::Pointer(x.ptr()),
        KernelArg::Pointer(y.ptr()),
    ];
    // SAFETY: 128 work-items over 128-element X, Y and Z; local memory holds
    // one and two u32s per item of a 16-item group.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]), &[])?.wait()? };
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_local_reference(a, &xs, &ys, LOCAL));
    Ok(())
}

/// Memory buffers as pointer arguments (UR's `buffer_saxpy_kernel_update.cpp`
/// kernel, launched eagerly).
fn launch_with_buffer_args(env: &Env) -> CaseResult {
    const N: usize = 64;
    let (xs, ys) = saxpy_inputs(N);
    let (x, y, z) = (env.buffer_with(&xs)?, env.buffer_with(&ys)?, env.buffer(N * 4)?);
    let kernel = env.kernel("saxpy")?;
    let a = 11u32;
    let args = [KernelArg::MemObj(&z), KernelArg::value(&a), KernelArg::MemObj(&x), KernelArg::MemObj(&y)];
    let queue = env.queue()?;
    // SAFETY: 64 work-items over 64-element buffers.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
    check_eq!(read_buffer::<u32>(&queue, &z, 0, N)?, saxpy_reference(a, &xs, &ys));
    Ok(())
}

/// One kernel launched again and again with arguments that change from
/// one launch to the next, or stay, or name memory released since and
/// allocated again (often at the same address or handle): each launch
/// runs with its own arguments. OpenCL kernels hold their arguments
/// between launches, and the OpenCL library sets only those that changed
/// (docs/opencl.md).
fn arguments_from_launch_to_launch(env: &Env) -> CaseResult {
    const N: usize = 64;
    let (xs, ys) = saxpy_inputs(N);
    let (x, y) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let queue = env.queue()?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let kernel = env.kernel("saxpy")?;
    let launch = |kernel: &cmdbuf::Kernel, args: &[KernelArg<'_>], step: &str| -> CaseResult {
        // SAFETY: 64 work-items over 64-element allocations and buffers.
        let done = unsafe { queue.launch_kernel(&KernelLaunch::new(kernel, &[N], args), &[]) };
        done.and_then(|event| event.wait())
            .map_err(|e| crate::CaseError::Fail(format!("{step}: unexpected error {}: {e}", e.ur_name())))
    };
    let z = env.usm_u32(N)?;
    write(&queue, z.ptr(), &xs)?;
    // The value changes, then the output pointer, then nothing.
    for (a, out) in [(5u32, &z), (6, &z), (6, &x), (6, &x)] {
        let args = [
            KernelArg::Pointer(out.ptr()),
            KernelArg::value(&a),
            KernelArg::Pointer(z.ptr()),
            KernelArg::Pointer(y.ptr()),
        ];
        let input = read::<u32>(&queue, z.ptr(), N)?;
        launch(&kernel, &args, &format!("a = {a}"))?;
        check_eq!(read::<u32>(&queue, out.ptr(), N)?, saxpy_reference(a, &input, &ys), "a = {a}");
    }
    // Outputs released after each launch and allocated again.
    for round in 0..4u32 {
        let out = env.usm_u32(N)?;
        let args = [
            KernelArg::Pointer(out.ptr()),
            KernelArg::value(&round),
            KernelArg::Pointer(y.ptr()),
            KernelArg::Pointer(y.ptr()),
        ];
        launch(&kernel, &args, &format!("USM round {round}"))?;
        check_eq!(read::<u32>(&queue, out.ptr(), N)?, saxpy_reference(round, &ys, &ys), "USM round {round}");
    }
    // Buffers where the same kernel was given USM pointers, then both in one
    // launch, then pointers again. NVIDIA's OpenCL refuses a `cl_kernel` a
    // buffer at an argument once given a USM (SVM) pointer; the OpenCL
    // library launches such a kernel on another `cl_kernel` (docs/opencl.md).
    let (bx, by) = (env.buffer_with(&xs)?, env.buffer_with(&ys)?);
    for round in 0..4u32 {
        let out = env.buffer(N * 4)?;
        let args = [KernelArg::MemObj(&out), KernelArg::value(&round), KernelArg::MemObj(&bx), KernelArg::MemObj(&by)];
        launch(&kernel, &args, &format!("buffer round {round}"))?;
        check_eq!(read_buffer::<u32>(&queue, &out, 0, N)?, saxpy_reference(round, &xs, &ys), "buffer round {round}");
        let args = [
            KernelArg::Pointer(z.ptr()),
            KernelArg::value(&round),
            KernelArg::MemObj(&bx),
            KernelArg::Pointer(y.ptr()),
        ];
        launch(&kernel, &args, &format!("mixed round {round}"))?;
        check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_reference(round, &xs, &ys), "mixed round {round}");
        let args = [
            KernelArg::Pointer(x.ptr()),
            KernelArg::value(&round),
            KernelArg::Pointer(z.ptr()),
            KernelArg::Pointer(y.ptr()),
        ];
        let input = read::<u32>(&queue, z.ptr(), N)?;
        launch(&kernel, &args, &format!("USM again, round {round}"))?;
        check_eq!(read::<u32>(&queue, x.ptr(), N)?, saxpy_reference(round, &input, &ys), "USM again, round {round}");
    }
    Ok(())
}

/// UR's `urEnqueueUSMFillTestWithParam`: patterns of many lengths, at an
/// offset, leave the bytes around them alone.
fn usm_fill_patterns(env: &Env) -> CaseResult {
    const SIZE: usize = 1024;
    const AT: usize = 8;
    let mem = env.usm(UsmKind::Device, SIZE)?;
    let queue = env.queue()?;
    for plen in [1usize, 2, 3, 4, 7, 8, 16, 32, 64, 128, 256] {
        let before = pattern(SIZE, plen as u8);
        write(&queue, mem.ptr(), &before)?;
        let pat = pattern(plen, 0x80 | plen as u8);
        let size = plen * (768 / plen);
        queue.usm_fill(mem.ptr().byte_add(AT), &pat, size, &[])?.wait()?;
        let mut expected = before.clone();
        expected[AT..AT + size].copy_from_slice(&fill_reference(&pat, size));
        check_eq!(read::<u8>(&queue, mem.ptr(), SIZE)?, expected, "pattern of {plen} bytes");
    }
    Ok(())
}

/// UR's `urEnqueueUSMMemcpyTest`: copies between and inside allocations;
/// an overlapping copy is refused.
fn usm_memcpy(env: &Env) -> CaseResult {
    const SIZE: usize = 512;
    let (a, b) = (env.usm(UsmKind::Device, SIZE)?, env.usm(UsmKind::Device, SIZE)?);
    let queue = env.queue()?;
    let data = pattern(SIZE, 21);
    write(&queue, a.ptr(), &data)?;
    write(&queue, b.ptr(), &vec![0u8; SIZE])?;
    let e1 = queue.usm_memcpy(b.ptr().byte_add(100), a.ptr().byte_add(3), 200, &[])?;
    // Inside one allocation, disjoint halves.
    let e2 = queue.usm_memcpy(b.ptr(), b.ptr().byte_add(100), 64, &[&e1])?;
    e2.wait()?;
    let mut expected = vec![0u8; SIZE];
    expected[100..300].copy_from_slice(&data[3..203]);
    expected.copy_within(100..164, 0);
    check_eq!(read::<u8>(&queue, b.ptr(), SIZE)?, expected);
    check_err!(queue.usm_memcpy(a.ptr(), a.ptr().byte_add(10), 64, &[]), OverlappingRegions);
    Ok(())
}

/// `urEnqueueUSMMemcpy` between USM and plain host memory, both ways: the
/// side in an allocation is checked against it (a range that starts in it
/// and leaves it is `InvalidSize`, a host range is the caller's word).
fn usm_memcpy_host_pointers(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let usm = env.usm(UsmKind::Device, SIZE)?;
    let queue = env.queue()?;
    let src = pattern(SIZE, 47);
    let mut back = vec![0u8; SIZE];
    let at = |p: cmdbuf::UsmPtr| p.addr() as *mut u8;
    // SAFETY: `src` and `back` hold SIZE bytes and are not touched by the
    // host until `down` has completed; failing calls enqueue nothing.
    unsafe {
        let up = queue.usm_memcpy_host(at(usm.ptr()), src.as_ptr(), SIZE, &[])?;
        let down = queue.usm_memcpy_host(back[16..].as_mut_ptr(), at(usm.ptr()), SIZE - 16, &[&up])?;
        down.wait()?;
        check_err!(queue.usm_memcpy_host(back.as_mut_ptr(), at(usm.ptr().byte_add(16)), SIZE, &[]), InvalidSize);
        check_err!(queue.usm_memcpy_host(at(usm.ptr().byte_add(1)), src.as_ptr(), SIZE, &[]), InvalidSize);
    }
    check_eq!(&back[16..], &src[..SIZE - 16]);
    check_eq!(&back[..16], &[0u8; 16][..]);
    Ok(())
}

/// `urEnqueueUSMMemcpy` between two plain host pointers (neither in a USM
/// allocation), as libsycl's `queue.memcpy` of host memory uses it: a host
/// copy in queue order, after the events it waits on and before the next
/// command of the in-order queue, with an event like any command's.
/// Overlapping ranges are `OverlappingRegions`; a command buffer does not
/// record such a copy (`UnsupportedFeature`).
fn usm_memcpy_between_host_pointers_in_queue_order(env: &Env) -> CaseResult {
    const SIZE: usize = 1024;
    let queue = env.queue()?;
    let usm = env.usm(UsmKind::Device, SIZE)?;
    let src = pattern(SIZE, 91);
    let mut mid = vec![0u8; SIZE];
    let mut back = vec![0u8; SIZE];
    let at = |p: cmdbuf::UsmPtr| p.addr() as *mut u8;
    let gate = cmdbuf::UserEvent::new(env.context())?;
    // SAFETY: the three vectors hold SIZE bytes and outlive every copy,
    // which `down.wait()` (in order after all of them) ends; the host reads
    // `mid` only while the copy into it waits for the gate.
    unsafe {
        let host = queue.usm_memcpy_host(mid.as_mut_ptr(), src.as_ptr(), SIZE, &[gate.event()])?;
        // In order: these run after the host copy, so they see its bytes.
        let up = queue.usm_memcpy_host(at(usm.ptr()), mid.as_ptr(), SIZE, &[])?;
        let down = queue.usm_memcpy_host(back.as_mut_ptr(), at(usm.ptr()), SIZE, &[])?;
        std::thread::sleep(std::time::Duration::from_millis(30));
        check!(!host.status().is_terminal(), "the host copy ran before the event it waits on");
        check!(!up.status().is_terminal(), "the next command overtook the host copy");
        check!(mid.iter().all(|b| *b == 0), "the host copy wrote before its event");
        gate.complete()?;
        down.wait()?;
        check_eq!(host.status(), EventStatus::Complete);
        check_eq!(back, src, "the bytes went host, host, USM, host");
        let blocking = queue.usm_memcpy_host(back.as_mut_ptr(), src.as_ptr().add(1), SIZE - 1, &[])?;
        blocking.wait()?;
        check_eq!(&back[..SIZE - 1], &src[1..]);
        check_err!(queue.usm_memcpy_host(back.as_mut_ptr(), back.as_ptr().add(8), 64, &[]), OverlappingRegions);
        check_err!(queue.usm_memcpy_host(back.as_mut_ptr(), src.as_ptr(), 0, &[]), InvalidSize);
        let cb = env.command_buffer(cmdbuf::CommandBufferDesc::default())?;
        let opts = cmdbuf::AppendOptions::default();
        check_err!(cb.append_usm_memcpy_host(mid.as_mut_ptr(), src.as_ptr(), SIZE, opts), UnsupportedFeature);
    }
    Ok(())
}

/// UR's `urEnqueueUSMPrefetchTest` and `urEnqueueUSMAdviseTest`: both
/// complete and order like any command.
fn usm_prefetch_and_advise(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let kind =
        if env.device().info().usm.contains(cmdbuf::UsmKinds::SHARED) { UsmKind::Shared } else { UsmKind::Device };
    let mem = env.usm(kind, SIZE)?;
    let queue = env.queue()?;
    let prefetch = queue.usm_prefetch(mem.ptr(), SIZE, MigrationFlags::HOST_TO_DEVICE, &[])?;
    let advise = queue.usm_advise(mem.ptr(), SIZE, UsmAdvice::SET_READ_MOSTLY)?;
    let fill = queue.usm_fill(mem.ptr(), &[0x6B], SIZE, &[&prefetch, &advise])?;
    let back = queue.usm_prefetch(mem.ptr(), SIZE, MigrationFlags::DEVICE_TO_HOST, &[&fill])?;
    back.wait()?;
    for (name, e) in [("prefetch", &prefetch), ("advise", &advise), ("fill", &fill), ("prefetch back", &back)] {
        check_eq!(e.status(), EventStatus::Complete, "{name}");
    }
    check_eq!(read::<u8>(&queue, mem.ptr(), SIZE)?, vec![0x6Bu8; SIZE]);
    check_err!(queue.usm_prefetch(mem.ptr(), SIZE + 1, MigrationFlags::HOST_TO_DEVICE, &[]), InvalidSize);
    Ok(())
}

/// Blocking host transfers to and from device and host USM, at offsets,
/// after a wait list.
fn write_read_usm(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let queue = env.queue()?;
    for kind in [UsmKind::Device, UsmKind::Host] {
        if kind == UsmKind::Host && !env.device().info().usm.contains(cmdbuf::UsmKinds::HOST) {
            continue;
        }
        let mem = env.usm(kind, SIZE)?;
        let fill = queue.usm_fill(mem.ptr(), &[0xEE], SIZE, &[])?;
        let data = pattern(100, 40);
        queue.write_usm(mem.ptr().byte_add(50), &data, &[&fill])?;
        let mut middle = vec![0u8; 120];
        queue.read_usm(mem.ptr().byte_add(40), &mut middle, &[])?;
        let expected = [vec![0xEEu8; 10], data, vec![0xEE; 10]].concat();
        check_eq!(middle, expected, "{kind:?} USM");
        let mut past_end = vec![0u8; 8];
        check_err!(queue.read_usm(mem.ptr().byte_add(SIZE - 4), &mut past_end, &[]), InvalidSize);
    }
    Ok(())
}

/// UR's `urEnqueueMemBufferWriteTest` / `ReadTest`: a write at an offset of
/// a zero-initialised buffer and reads of parts of it.
fn buffer_write_read(env: &Env) -> CaseResult {
    const SIZE: usize = 1024;
    let buffer = env.buffer(SIZE)?;
    let queue = env.queue()?;
    let data = pattern(300, 50);
    queue.write_buffer(&buffer, 100, &data, &[])?;
    let mut expected = vec![0u8; SIZE];
    expected[100..400].copy_from_slice(&data);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, expected);
    let mut part = vec![0u8; 50];
    queue.read_buffer(&buffer, 380, &mut part, &[])?;
    check_eq!(part, expected[380..430].to_vec());
    check_err!(queue.read_buffer(&buffer, SIZE - 10, &mut part, &[]), InvalidSize);
    Ok(())
}

/// UR's `urEnqueueMemBufferMapTest` and `urEnqueueMemUnmapTest`: a region
/// mapped for reading and writing holds the buffer's bytes and writes back
/// at unmap; an invalidating map writes without reading; a read-only map
/// writes nothing back; a map out of bounds or for nothing is refused.
fn buffer_map_unmap(env: &Env) -> CaseResult {
    const SIZE: usize = 1024;
    let data = pattern(SIZE, 90);
    let buffer = env.buffer_with(&data)?;
    let queue = env.queue()?;
    let (mapped, mapping) = queue.map_buffer(&buffer, 100, 200, MapFlags::READ | MapFlags::WRITE, &[])?;
    mapped.wait()?;
    // SAFETY: the map completed; the mapping holds 200 bytes until unmapped.
    let view = unsafe { std::slice::from_raw_parts_mut(mapping.ptr(), mapping.len()) };
    check_eq!(view.to_vec(), data[100..300].to_vec());
    view[..10].fill(0xEE);
    queue.unmap_buffer(mapping, &[])?.wait()?;
    let mut expected = data.clone();
    expected[100..110].fill(0xEE);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, expected);

    let (mapped, mapping) = queue.map_buffer(&buffer, 0, 64, MapFlags::WRITE_INVALIDATE_REGION, &[])?;
    mapped.wait()?;
    // SAFETY: as above, 64 bytes.
    unsafe { std::ptr::write_bytes(mapping.ptr(), 0x11, 64) };
    let unmapped = queue.unmap_buffer(mapping, &[])?;
    expected[..64].fill(0x11);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, expected);
    unmapped.wait()?;

    let (mapped, mapping) = queue.map_buffer(&buffer, 512, 16, MapFlags::READ, &[])?;
    mapped.wait()?;
    // SAFETY: as above, 16 bytes; a read-only mapping's writes never reach the buffer.
    unsafe { std::ptr::write_bytes(mapping.ptr(), 0x77, 16) };
    queue.unmap_buffer(mapping, &[])?.wait()?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, expected);

    check_err!(queue.map_buffer(&buffer, SIZE - 8, 16, MapFlags::READ, &[]), InvalidSize);
    check_err!(queue.map_buffer(&buffer, 0, 16, MapFlags::empty(), &[]), InvalidValue);
    check_err!(queue.map_buffer(&buffer, 0, 16, MapFlags::READ | MapFlags::WRITE_INVALIDATE_REGION, &[]), InvalidValue);
    Ok(())
}

/// UR's `urEnqueueMemBufferFillTest` and `CopyTest`: a fill at an offset,
/// then copies of parts of it to another buffer.
fn buffer_copy_and_fill(env: &Env) -> CaseResult {
    const SIZE: usize = 512;
    let (src, dst) = (env.buffer_with(&pattern(SIZE, 60))?, env.buffer(SIZE)?);
    let queue = env.queue()?;
    let pat = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let fill = queue.fill_buffer(&src, &pat, 64, 128, &[])?;
    let copy = queue.copy_buffer(&src, &dst, 32, 256, 200, &[&fill])?;
    let tail = queue.copy_buffer(&src, &dst, 0, 0, 16, &[&copy])?;
    tail.wait()?;
    let mut model_src = pattern(SIZE, 60);
    model_src[64..192].copy_from_slice(&fill_reference(&pat, 128));
    let mut model_dst = vec![0u8; SIZE];
    model_dst[256..456].copy_from_slice(&model_src[32..232]);
    model_dst[..16].copy_from_slice(&model_src[..16]);
    check_eq!(read_buffer::<u8>(&queue, &src, 0, SIZE)?, model_src);
    check_eq!(read_buffer::<u8>(&queue, &dst, 0, SIZE)?, model_dst);
    check_err!(queue.fill_buffer(&src, &pat, 4, 64, &[]), InvalidSize);
    check_err!(queue.copy_buffer(&src, &dst, 0, SIZE - 8, 16, &[]), InvalidSize);
    Ok(())
}

/// UR's `urEnqueueMemBufferWriteRectTest` and `ReadRectTest`: a 2D block
/// written from a pitched host image, then read back into another layout.
fn buffer_rect_write_read(env: &Env) -> CaseResult {
    // Buffer: 32-byte rows, 16 rows. Host: 20-byte rows, 10 rows.
    let buffer = env.buffer(512)?;
    let queue = env.queue()?;
    let host = pattern(200, 70);
    let region = RectRegion::new(12, 6, 1);
    let buffer_layout = RectLayout::new(RectOffset::new(5, 4, 0), 32, 512);
    let host_layout = RectLayout::new(RectOffset::new(2, 1, 0), 20, 200);
    queue.write_buffer_rect(&buffer, buffer_layout, host_layout, region, &host, &[])?;
    let mut expected = vec![0u8; 512];
    copy_rect_reference(&host, [2, 1, 0], (20, 200), &mut expected, [5, 4, 0], (32, 512), [12, 6, 1]);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 512)?, expected);

    let mut out = vec![0xFFu8; 112];
    queue.read_buffer_rect(
        &buffer,
        buffer_layout,
        RectLayout::new(RectOffset::new(1, 1, 0), 16, 112),
        region,
        &mut out,
        &[],
    )?;
    let mut expected_out = vec![0xFFu8; 112];
    copy_rect_reference(&expected, [5, 4, 0], (32, 512), &mut expected_out, [1, 1, 0], (16, 112), [12, 6, 1]);
    check_eq!(out, expected_out);
    let mut short = vec![0u8; 50];
    check_err!(
        queue.read_buffer_rect(&buffer, buffer_layout, RectLayout::packed(), region, &mut short, &[]),
        InvalidSize
    );
    Ok(())
}

/// UR's `urEnqueueMemBufferCopyRectTest`: a 3D block between buffers of
/// different pitches.
fn buffer_copy_rect_3d(env: &Env) -> CaseResult {
    let data = pattern(1024, 80);
    let (src, dst) = (env.buffer_with(&data)?, env.buffer(1024)?);
    let queue = env.queue()?;
    let region = RectRegion::new(6, 3, 4);
    let src_layout = RectLayout::new(RectOffset::new(1, 2, 1), 16, 128);
    let dst_layout = RectLayout::new(RectOffset::new(3, 0, 2), 8, 64);
    queue.copy_buffer_rect(&src, &dst, src_layout, dst_layout, region, &[])?.wait()?;
    let mut expected = vec![0u8; 1024];
    copy_rect_reference(&data, [1, 2, 1], (16, 128), &mut expected, [3, 0, 2], (8, 64), [6, 3, 4]);
    check_eq!(read_buffer::<u8>(&queue, &dst, 0, 1024)?, expected);
    Ok(())
}

/// Non-blocking transfers between buffers and USM (host USM on the way
/// in, device USM on the way out), chained by wait lists.
fn buffer_usm_transfers(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let data = pattern(SIZE, 90);
    let (staging, out) = (env.usm(UsmKind::Host, SIZE)?, env.usm(UsmKind::Device, SIZE)?);
    let buffer = env.buffer(SIZE * 2)?;
    let queue = ooo_or_default(env)?;
    write(&queue, staging.ptr(), &data)?;
    let up = queue.write_buffer_from_usm(&buffer, SIZE, SIZE, staging.ptr(), &[])?;
    let down = queue.read_buffer_to_usm(&buffer, SIZE + 16, 128, out.ptr(), &[&up])?;
    down.wait()?;
    check_eq!(read::<u8>(&queue, out.ptr(), 128)?, data[16..144].to_vec());
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE * 2)?, [vec![0u8; SIZE], data.clone()].concat());
    check_err!(queue.read_buffer_to_usm(&buffer, 0, SIZE + 1, out.ptr(), &[]), InvalidSize);
    Ok(())
}

/// `urEnqueueMemBufferWrite`/`Read` with `blocking = false`: raw host memory
/// stays in use until the events complete.
fn async_raw_pointer_transfers(env: &Env) -> CaseResult {
    const SIZE: usize = 4096;
    let buffer = env.buffer(SIZE)?;
    let queue = ooo_or_default(env)?;
    let src = pattern(SIZE, 100);
    let mut dst = vec![0u8; SIZE / 2];
    let ctx = queue.context();
    // SAFETY: `src` holds SIZE bytes and `dst` SIZE / 2; neither is touched
    // by the host until `read` (which waits for `write`) has completed below.
    let read = unsafe {
        let write = queue.enqueue(Command::buffer_write_host(ctx, &buffer, 0, SIZE, src.as_ptr())?, &[])?;
        queue.enqueue(Command::buffer_read_host(ctx, &buffer, SIZE / 4, SIZE / 2, dst.as_mut_ptr())?, &[&write])?
    };
    read.wait()?;
    check_eq!(dst, src[SIZE / 4..SIZE / 4 + SIZE / 2].to_vec());
    // SAFETY: a null pointer is refused before anything is enqueued.
    let null = unsafe { Command::buffer_write_host(ctx, &buffer, 0, 4, std::ptr::null()) };
    check_err!(null, InvalidNullPointer);
    Ok(())
}

/// `Queue::enqueue` of commands from the builders command buffers use: they
/// run as the typed methods' do, and a command of another context is
/// refused before anything runs.
fn generic_enqueue(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let (src, dst) = (env.buffer_with(&pattern(SIZE, 40))?, env.buffer(SIZE)?);
    let usm = env.usm(UsmKind::Device, SIZE)?;
    let queue = env.queue()?;
    let ctx = env.context();
    let fill = queue.enqueue(Command::buffer_fill(ctx, &src, &[9, 8], 16, 32)?, &[])?;
    let copy = queue.enqueue(Command::buffer_copy(ctx, &src, &dst, 0, 64, 128)?, &[&fill])?;
    let usm_fill = queue.enqueue(Command::usm_fill(ctx, usm.ptr(), &[3], SIZE)?, &[])?;
    let down = queue.enqueue(Command::buffer_read_to_usm(ctx, &dst, 64, 64, usm.ptr())?, &[&copy, &usm_fill])?;
    down.wait()?;
    let mut model_src = pattern(SIZE, 40);
    model_src[16..48].copy_from_slice(&fill_reference(&[9, 8], 32));
    let mut model_usm = vec![3u8; SIZE];
    model_usm[..64].copy_from_slice(&model_src[..64]);
    check_eq!(read::<u8>(&queue, usm.ptr(), SIZE)?, model_usm);
    let other = Context::new(env.device())?;
    let foreign = Queue::new(&other, QueueProperties::default())?;
    check_err!(foreign.enqueue(Command::usm_fill(ctx, usm.ptr(), &[1], SIZE)?, &[]), InvalidContext);
    let copy = foreign.enqueue(Command::buffer_copy(ctx, &src, &dst, 0, 0, 8)?, &[]);
    if other.uses_buffers_of(ctx) {
        // Buffers of every context of the device are the other's too (CPU,
        // Vulkan, CUDA): the copy runs there.
        copy?.wait()?;
    } else {
        check_err!(copy, InvalidContext);
    }
    Ok(())
}

/// An out-of-order queue where the device has them, else an in-order one:
/// for cases whose wait lists must order on either.
fn ooo_or_default(env: &Env) -> Result<Queue, crate::CaseError> {
    if env.device().info().out_of_order_queues { env.ooo_queue() } else { env.queue() }
}

/// UR's `urEnqueueEventsWaitTest`: on an out-of-order queue, a command
/// waiting on an events-wait marker sees everything the marker waited on.
fn events_wait_joins(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let (a, b) = (env.usm(UsmKind::Device, BIG)?, env.usm(UsmKind::Device, BIG)?);
    let out = env.usm(UsmKind::Device, 8)?;
    let fa = queue.usm_fill(a.ptr(), &[0x11], BIG, &[])?;
    let fb = queue.usm_fill(b.ptr(), &[0x22], BIG, &[])?;
    let joined = queue.events_wait(&[&fa, &fb])?;
    let ca = queue.usm_memcpy(out.ptr(), a.ptr().byte_add(BIG - 4), 4, &[&joined])?;
    let cb = queue.usm_memcpy(out.ptr().byte_add(4), b.ptr().byte_add(BIG - 4), 4, &[&joined])?;
    Event::wait_all(&[&ca, &cb])?;
    check_eq!(joined.status(), EventStatus::Complete);
    check_eq!(read::<u8>(&queue, out.ptr(), 8)?, [[0x11u8; 4], [0x22; 4]].concat());
    let nothing = queue.events_wait(&[])?;
    nothing.wait()?;
    check_eq!(nothing.status(), EventStatus::Complete);
    Ok(())
}

/// UR's `urEnqueueEventsWaitWithBarrierOrderingTest`: commands after a
/// barrier on an out-of-order queue see the effects of those before it,
/// without wait lists of their own.
fn barrier_orders_out_of_order_queue(env: &Env) -> CaseResult {
    const PAIRS: usize = 4;
    let queue = env.ooo_queue()?;
    let big: Vec<UsmAllocation> = (0..PAIRS).map(|_| env.usm(UsmKind::Device, BIG)).collect::<Result<_, _>>()?;
    let out = env.usm(UsmKind::Device, PAIRS * 4)?;
    for round in 1..=2u8 {
        let fills: Vec<Event> = big
            .iter()
            .enumerate()
            .map(|(i, m)| queue.usm_fill(m.ptr(), &[round * 16 + i as u8], BIG, &[]))
            .collect::<Result<_, _>>()?;
        let barrier = queue.barrier(&[])?;
        for (i, m) in big.iter().enumerate() {
            queue.usm_memcpy(out.ptr().byte_add(i * 4), m.ptr().byte_add(BIG - 4), 4, &[])?;
        }
        queue.finish()?;
        check_eq!(barrier.status(), EventStatus::Complete);
        for f in &fills {
            check_eq!(f.status(), EventStatus::Complete);
        }
        let expected: Vec<u8> = (0..PAIRS).flat_map(|i| [round * 16 + i as u8; 4]).collect();
        check_eq!(read::<u8>(&queue, out.ptr(), PAIRS * 4)?, expected, "round {round}");
    }
    Ok(())
}

/// `urQueueFinish`: after it returns every command submitted before has
/// completed, and host memory holds their results.
fn finish_waits_for_everything(env: &Env) -> CaseResult {
    const N: usize = 1024;
    let queue = ooo_or_default(env)?;
    let mem = env.usm(UsmKind::Host, N * 4)?;
    let kernel = env.kernel("fill")?;
    let mut events = Vec::new();
    let values: Vec<u32> = (0..8).map(|i| 0xF00 + i).collect();
    for (i, v) in values.iter().enumerate() {
        let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(v)];
        let offset = [i * N / 8];
        // SAFETY: items `i*N/8 .. (i+1)*N/8` write their own elements of the
        // N-element allocation.
        events.push(unsafe {
            queue.launch_kernel(&KernelLaunch::new(&kernel, &[N / 8], &args).global_offset(&offset), &[])?
        });
    }
    queue.finish()?;
    for (i, e) in events.iter().enumerate() {
        check_eq!(e.status(), EventStatus::Complete, "launch {i}");
    }
    let host = mem.host_ptr().expect("host USM has a host address");
    // SAFETY: the allocation holds N u32s, host USM is aligned for them, and
    // finish returned, so no command touches it any more.
    let got = unsafe { std::slice::from_raw_parts(host.cast::<u32>().cast_const(), N) };
    let expected: Vec<u32> = (0..N).map(|i| values[i / (N / 8)]).collect();
    check_eq!(got.to_vec(), expected);
    Ok(())
}

/// `urEventGetInfo(EXECUTION_STATUS)`: complete after a wait, for commands,
/// markers and barriers alike.
fn event_status_after_wait(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Device, BIG)?;
    let fill = queue.usm_fill(mem.ptr(), &[1, 2, 3, 4], BIG, &[])?;
    let kernel = env.kernel("increment")?;
    let args = [KernelArg::Pointer(mem.ptr())];
    // SAFETY: 1024 items increment the first 1024 u32s of a 4 MiB allocation.
    let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[1024], &args), &[&fill])? };
    let marker = queue.events_wait(&[&launch])?;
    let barrier = queue.barrier(&[])?;
    barrier.wait()?;
    for (name, e) in [("fill", &fill), ("launch", &launch), ("marker", &marker), ("barrier", &barrier)] {
        check_eq!(e.status(), EventStatus::Complete, "{name}");
        e.wait()?;
    }
    check_eq!(read::<u32>(&queue, mem.ptr(), 2)?, vec![0x0403_0202, 0x0403_0202]);
    Ok(())
}

/// UR's `urEventGetProfilingInfoTest`: on a profiling queue every command,
/// barriers included, records queued <= submit <= start <= end, and an
/// in-order successor starts after its predecessor ends.
fn profiling_timestamps(env: &Env) -> CaseResult {
    let queue = env.queue_with(QueueProperties { out_of_order: false, profiling: true })?;
    let mem = env.usm(UsmKind::Device, BIG)?;
    let kernel = env.kernel("increment")?;
    let args = [KernelArg::Pointer(mem.ptr())];
    let fill = queue.usm_fill(mem.ptr(), &[0], BIG, &[])?;
    // SAFETY: 4096 items increment the first 4096 u32s of a 4 MiB allocation.
    let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[4096], &args), &[])? };
    let copy = queue.usm_memcpy(mem.ptr().byte_add(BIG / 2), mem.ptr(), 4096 * 4, &[])?;
    // UR's `urEventGetProfilingInfoForWaitWithBarrier`: a barrier has
    // timestamps too (NVIDIA's OpenCL gives its barriers none of their own).
    let barrier = queue.barrier(&[&copy])?;
    barrier.wait()?;
    let mut previous_end = 0;
    for (name, e) in [("fill", &fill), ("launch", &launch), ("copy", &copy), ("barrier", &barrier)] {
        let p = e.profiling_info()?;
        check!(
            p.queued <= p.submit && p.submit <= p.start && p.start <= p.end,
            "{name}: timestamps out of order: {p:?}"
        );
        check!(
            p.start >= previous_end,
            "{name} started at {} before its in-order predecessor ended at {previous_end}",
            p.start
        );
        previous_end = p.end;
    }
    check_eq!(read::<u32>(&queue, mem.ptr().byte_add(BIG / 2), 4096)?, vec![1u32; 4096]);
    Ok(())
}

/// `urEventGetProfilingInfo` on a queue without profiling: a command has no
/// timestamps, even once complete.
fn profiling_unavailable_without_profiling_queue(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Device, 64)?;
    let fill = queue.usm_fill(mem.ptr(), &[7], 64, &[])?;
    fill.wait()?;
    check_err!(fill.profiling_info(), ProfilingInfoNotAvailable);
    let marker = queue.events_wait(&[&fill])?;
    marker.wait()?;
    check_err!(marker.profiling_info(), ProfilingInfoNotAvailable);
    Ok(())
}

/// UR's `urEnqueueEventsWaitMultiDevice` idea on one device: events of one
/// queue in the wait list of another order the two queues.
fn wait_list_across_queues(env: &Env) -> CaseResult {
    let (q1, q2) = (env.queue()?, env.queue()?);
    let a = env.usm(UsmKind::Device, BIG)?;
    let (b, c) = (env.usm(UsmKind::Device, 4)?, env.usm(UsmKind::Device, 4)?);
    for round in 1..=3u8 {
        let fill = q1.usm_fill(a.ptr(), &[round], BIG, &[])?;
        let copy = q2.usm_memcpy(b.ptr(), a.ptr().byte_add(BIG - 4), 4, &[&fill])?;
        // And back: q1 waits for q2.
        let back = q1.usm_memcpy(c.ptr(), b.ptr(), 4, &[&copy])?;
        back.wait()?;
        check_eq!(read::<u8>(&q2, b.ptr(), 4)?, vec![round; 4], "round {round}");
        check_eq!(read::<u8>(&q1, c.ptr(), 4)?, vec![round; 4], "round {round}");
    }
    Ok(())
}

/// An event of another context in any wait list is `InvalidEventWaitList`,
/// except where the adapter waits for that context's events device-side
/// (`Context::waits_on_events_of`: the CPU adapter, CUDA): there it is
/// accepted, and what waits for it runs after it.
fn event_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let other_queue = Queue::new(&other, QueueProperties::default())?;
    let other_mem = UsmAllocation::new(&other, UsmKind::Device, 16)?;
    let foreign = other_queue.usm_fill(other_mem.ptr(), &[1], 16, &[])?;
    foreign.wait()?;
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Device, 64)?;
    let buffer = env.buffer(64)?;
    let kernel = env.kernel("fill")?;
    let v = 5u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&v)];
    let local = queue.usm_fill(mem.ptr(), &[0], 64, &[])?;
    let wait = [&local, &foreign];
    if env.context().waits_on_events_of(&other) {
        queue.events_wait(&wait)?.wait()?;
        let gate = UserEvent::new(&other)?;
        let filled = queue.usm_fill(mem.ptr(), &[2], 64, &[&local, gate.event()])?;
        std::thread::sleep(std::time::Duration::from_millis(20));
        check!(!filled.status().is_terminal(), "a fill ran before the other context's event completed");
        gate.complete()?;
        filled.wait()?;
        check_eq!(read::<u8>(&queue, mem.ptr(), 64)?, vec![2u8; 64]);
        return Ok(());
    }
    check_err!(queue.usm_fill(mem.ptr(), &[2], 64, &wait), InvalidEventWaitList);
    check_err!(queue.usm_memcpy(mem.ptr(), mem.ptr().byte_add(32), 32, &wait), InvalidEventWaitList);
    // SAFETY: refused before launch; it would write 16 u32s of a 16-u32 allocation.
    let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[16], &args), &wait) };
    check_err!(launch, InvalidEventWaitList);
    check_err!(queue.events_wait(&wait), InvalidEventWaitList);
    check_err!(queue.barrier(&wait), InvalidEventWaitList);
    check_err!(queue.write_usm(mem.ptr(), &[0u8; 8], &wait), InvalidEventWaitList);
    check_err!(queue.fill_buffer(&buffer, &[1], 0, 64, &wait), InvalidEventWaitList);
    // Nothing above ran: the allocation still holds the first fill.
    check_eq!(read::<u8>(&queue, mem.ptr(), 64)?, vec![0u8; 64]);
    Ok(())
}

/// Where a context's queues wait for another context's events
/// (`waits_on_events_of`), data moved through the host from one context's
/// USM into the other's, each copy on its own context's queue and the
/// second waiting for the first, arrives as written: by a fill and by a
/// kernel, held back by a user event or by their size so that each copy is
/// enqueued before the work it waits for has run. Elsewhere the wait list is refused
/// (`event_of_other_context`).
fn host_route_between_contexts(env: &Env) -> CaseResult {
    const N: usize = 16 << 20;
    let other = Context::new(env.device())?;
    if !other.waits_on_events_of(env.context()) {
        return Err(crate::CaseError::Skip("this backend's contexts do not wait for each other's events".into()));
    }
    let (qa, qb) = (env.queue()?, Queue::new(&other, QueueProperties::default())?);
    let (a, b) = (env.usm_u32(N)?, UsmAllocation::new(&other, UsmKind::Device, N * 4)?);
    let kernel = env.kernel("fill")?;
    let mut failures = Vec::new();
    let ways = [("a fill", false, true), ("a kernel", true, true), ("a fill", false, false), ("a kernel", true, false)];
    for (name, by_kernel, held) in ways {
        let value = if by_kernel { 0x0B0B_0B0B_u32 } else { 0x0A0A_0A0A };
        write(&qa, a.ptr(), &vec![0u32; N])?;
        write(&qb, b.ptr(), &vec![0u32; N])?;
        let mut staging = vec![0u32; N];
        let host = staging.as_mut_ptr().cast::<u8>();
        let gate = UserEvent::new(env.context())?;
        let args = [KernelArg::Pointer(a.ptr()), KernelArg::value(&value)];
        let gated = [gate.event()];
        let before: &[&Event] = if held { &gated } else { &[] };
        let written = if by_kernel {
            // SAFETY: N items write the N u32s of `a`.
            unsafe { qa.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), before)? }
        } else {
            qa.usm_fill(a.ptr(), &value.to_ne_bytes(), N * 4, before)?
        };
        // SAFETY: `staging` holds N u32s and is neither touched nor dropped
        // before both copies have been waited for, which happens before any
        // `?` on their results.
        let down = unsafe { qa.usm_memcpy_host(host, a.ptr().addr() as *const u8, N * 4, &[&written]) };
        let up = match &down {
            // SAFETY: as for `down`.
            Ok(down) => unsafe { qb.usm_memcpy_host(b.ptr().addr() as *mut u8, host, N * 4, &[down]) },
            Err(e) => Err(e.clone()),
        };
        let opened = gate.complete();
        let (down_done, up_done) = (down.and_then(|e| e.wait()), up.and_then(|e| e.wait()));
        opened?;
        down_done?;
        up_done?;
        drop(staging);
        let got = read::<u32>(&qb, b.ptr(), N)?;
        if got != vec![value; N] {
            let how = if held { "held by a user event" } else { "held by its size" };
            failures.push(format!("written by {name}, {how}: {:#x?}..., expected {value:#x}", &got[..2]));
        }
    }
    check!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// A kernel of a program of another context is `InvalidKernel`.
fn kernel_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let program = Program::new(&other, &kernels::bundle())?;
    let foreign = cmdbuf::Kernel::new(&program, "fill")?;
    let queue = env.queue()?;
    let mem = env.usm_u32(16)?;
    write(&queue, mem.ptr(), &[0u32; 16])?;
    let v = 9u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&v)];
    // SAFETY: refused before launch; it would write 16 u32s of a 16-u32 allocation.
    let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&foreign, &[16], &args), &[]) };
    check_err!(launch, InvalidKernel);
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![0u32; 16]);
    Ok(())
}

/// Fewer or more arguments than the kernel declares is
/// `InvalidKernelArgumentIndex`.
fn argument_count_mismatch(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(16)?;
    let (fill, empty) = (env.kernel("fill")?, env.kernel("empty")?);
    let v = 1u32;
    let too_few = [KernelArg::Pointer(mem.ptr())];
    let too_many = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&v), KernelArg::value(&v)];
    for args in [&too_few[..], &too_many[..], &[]] {
        // SAFETY: refused before launch; a fill of 16 items fits the allocation.
        let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&fill, &[16], args), &[]) };
        check_err!(launch, InvalidKernelArgumentIndex);
    }
    // SAFETY: refused before launch; `empty` touches no memory.
    let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&empty, &[4], &too_few), &[]) };
    check_err!(launch, InvalidKernelArgumentIndex);
    // SAFETY: `empty` touches no memory.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&empty, &[4], &[]), &[])? }.wait()?;
    Ok(())
}

/// UR's `urEnqueueKernelLaunchTest.InvalidWorkDimension`: work dimensions
/// 0 and 4, and local sizes or offsets of another length than the global size.
fn invalid_work_dimension(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(64)?;
    let kernel = env.kernel("fill_2d")?;
    let v = 1u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&v)];
    let launches = [
        KernelLaunch::new(&kernel, &[], &args),
        KernelLaunch::new(&kernel, &[2, 2, 2, 2], &args),
        KernelLaunch::new(&kernel, &[8, 8], &args).local_size(&[4]),
        KernelLaunch::new(&kernel, &[8, 8], &args).local_size(&[4, 4, 1]),
        KernelLaunch::new(&kernel, &[8, 8], &args).global_offset(&[1]),
        KernelLaunch::new(&kernel, &[64], &args).global_offset(&[0, 0]),
    ];
    for (i, launch) in launches.iter().enumerate() {
        // SAFETY: refused before launch; none has more than 64 items.
        let result = unsafe { queue.launch_kernel(launch, &[]) };
        if !matches!(result, Err(cmdbuf::UrError::InvalidWorkDimension(_))) {
            return Err(crate::CaseError::Fail(format!(
                "launch {i} ({:?}, local {:?}, offset {:?}) gave {result:?}, expected InvalidWorkDimension",
                launch.global_size, launch.local_size, launch.global_offset
            )));
        }
    }
    Ok(())
}

/// UR's `urEnqueueKernelLaunchKernelWgSizeTest.NonMatchingLocalSize`: a
/// local size that does not divide the global size, or is zero, is
/// `InvalidWorkGroupSize`.
fn local_size_not_dividing_global(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(64)?;
    let (fill, fill_2d) = (env.kernel("fill")?, env.kernel("fill_2d")?);
    let v = 1u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&v)];
    let launches = [
        KernelLaunch::new(&fill, &[10], &args).local_size(&[4]),
        KernelLaunch::new(&fill, &[64], &args).local_size(&[0]),
        KernelLaunch::new(&fill_2d, &[8, 6], &args).local_size(&[4, 4]),
        KernelLaunch::new(&fill_2d, &[8, 8], &args).local_size(&[3, 8]),
    ];
    for (i, launch) in launches.iter().enumerate() {
        // SAFETY: refused before launch; none has more than 64 items.
        let result = unsafe { queue.launch_kernel(launch, &[]) };
        if !matches!(result, Err(cmdbuf::UrError::InvalidWorkGroupSize(_))) {
            return Err(crate::CaseError::Fail(format!(
                "launch {i} ({:?}, local {:?}) gave {result:?}, expected InvalidWorkGroupSize",
                launch.global_size, launch.local_size
            )));
        }
    }
    Ok(())
}

/// A global range with a zero dimension runs no work-item and completes.
fn empty_global_range(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(64)?;
    write(&queue, mem.ptr(), &[0xAAAA_AAAAu32; 64])?;
    let (fill, fill_2d) = (env.kernel("fill")?, env.kernel("fill_2d")?);
    let v = 1u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&v)];
    let launches = [
        KernelLaunch::new(&fill, &[0], &args),
        KernelLaunch::new(&fill_2d, &[8, 0], &args),
        KernelLaunch::new(&fill_2d, &[0, 8, 1], &args).global_offset(&[1, 1, 1]),
    ];
    for (i, launch) in launches.iter().enumerate() {
        // SAFETY: the launches have no work-items at all.
        let event = unsafe { queue.launch_kernel(launch, &[])? };
        event.wait()?;
        check_eq!(event.status(), EventStatus::Complete, "launch {i}");
    }
    check_eq!(read::<u32>(&queue, mem.ptr(), 64)?, vec![0xAAAA_AAAAu32; 64]);
    Ok(())
}

/// UR's `urEnqueueKernelLaunchKernelWgSizeTest.Success`, local size left to
/// the implementation: a prime 1D size gives correct results, and a 3D
/// launch's local ids follow one local size that divides the global size.
fn implementation_chosen_local_size(env: &Env) -> CaseResult {
    const N: usize = 97;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let (xs, ys) = saxpy_inputs(N);
    let queue = env.queue()?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let saxpy = env.kernel("saxpy")?;
    let a = 2u32;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&a), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: 97 work-items over 97-element X, Y and Z.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&saxpy, &[N], &args), &[])?.wait()? };
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_reference(a, &xs, &ys));

    let global = [7usize, 5, 3];
    let items: usize = global.iter().product();
    let out = env.usm_u32(items * 6)?;
    let indexers = env.kernel("indexers")?;
    let args = [KernelArg::Pointer(out.ptr())];
    // SAFETY: six u32s per work-item of a 105-item launch, in a 630-u32 allocation.
    unsafe {
        queue.launch_kernel(&KernelLaunch::new(&indexers, &global, &args).global_offset(&[2, 0, 1]), &[])?.wait()?
    };
    let got = read::<u32>(&queue, out.ptr(), items * 6)?;
    // The local size per dimension, inferred from the largest local id.
    let local: Vec<usize> =
        (0..3).map(|d| (0..items).map(|i| got[i * 6 + 3 + d]).max().unwrap_or(0) as usize + 1).collect();
    for d in 0..3 {
        check!(global[d].is_multiple_of(local[d]), "local size {local:?} does not divide global size {global:?}");
    }
    check_eq!(got, indexers_reference(global, [local[0], local[1], local[2]], [2, 0, 1]));
    Ok(())
}

/// Eager wait lists order without propagating failure: a command after a
/// kernel that fails (too little local memory makes `saxpy_local` panic)
/// still runs. (On the CPU adapter the kernel's panic message, and a
/// backtrace when `RUST_BACKTRACE` is set, appear on stderr: expected.)
fn failed_predecessor_orders_only(env: &Env) -> CaseResult {
    const N: usize = 64;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let queue = env.queue()?;
    write(&queue, z.ptr(), &[0u32; N])?;
    let kernel = env.kernel("saxpy_local")?;
    let a = 1u32;
    let args = [
        KernelArg::Local(4),
        KernelArg::Local(4),
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&a),
        KernelArg::Pointer(x.ptr()),
        KernelArg::Pointer(y.ptr()),
    ];
    // SAFETY: 64 work-items over 64-element X, Y and Z; the kernel checks its
    // local-memory bounds and fails (panics) before writing past them.
    let failing = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[16]), &[])? };
    let after = queue.usm_fill(z.ptr(), &[0x42], N * 4, &[&failing])?;
    check_err!(failing.wait(), AdapterSpecific);
    check_eq!(failing.status(), EventStatus::Error);
    after.wait()?;
    check_eq!(after.status(), EventStatus::Complete);
    check_eq!(read::<u8>(&queue, z.ptr(), N * 4)?, vec![0x42u8; N * 4]);
    Ok(())
}
