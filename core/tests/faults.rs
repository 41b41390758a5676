//! The fault-injecting wrapper (`cmdbuf_core::faults`) on the CPU adapter, and
//! regressions the fault sweep (`conformance/tests/faults.rs`) found in
//! cmdbuf-core, each reproduced with an injected fault.
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::sync::Arc;

use cmdbuf_core::faults::{CallKind, Fault, FaultInjector, INJECTED, LiveObjects, live_objects};
use cmdbuf_core::{
    AppendOptions, ArgKind, CommandBuffer, CommandBufferDesc, Context, Device, Kernel, KernelArg, KernelLaunch,
    KernelLaunchUpdate, KernelSignature, MemBuffer, MemFlags, NativeKernel, Program, ProgramBundle, ProgramSource,
    Queue, UrError, UserEvent, UsmAllocation, UsmKind, WorkGroup,
};

/// An injector, the CPU device wrapped by it, a context and a queue.
fn wrapped_cpu() -> (FaultInjector, Device, Context, Queue) {
    let injector = FaultInjector::new();
    let device = injector.wrap_device(&cmdbuf_cpu::default_device());
    let ctx = Context::new(&device).unwrap();
    let queue = Queue::new(&ctx, Default::default()).unwrap();
    (injector, device, ctx, queue)
}

fn injected(e: &UrError, kind: CallKind) -> bool {
    e.detail().message.starts_with(&format!("{INJECTED} {kind}"))
}

#[test]
fn counts_calls_fails_the_nth_and_counts_live_objects() {
    let injector = FaultInjector::new();
    let device = injector.wrap_device(&cmdbuf_cpu::default_device());
    let ctx = Context::new(&device).unwrap();
    assert_eq!(live_objects(&ctx).unwrap(), LiveObjects::default());
    injector.arm(Fault::new(CallKind::UsmAlloc, 2));
    let first = UsmAllocation::new(&ctx, UsmKind::Device, 64).unwrap();
    let e = UsmAllocation::new(&ctx, UsmKind::Device, 64).unwrap_err();
    assert!(matches!(e, UrError::OutOfDeviceMemory(_)) && injected(&e, CallKind::UsmAlloc), "{e}");
    assert_eq!(injector.disarm(), Some(e));
    let third = UsmAllocation::new(&ctx, UsmKind::Device, 32).unwrap();
    assert_eq!(injector.calls(CallKind::UsmAlloc), 3);
    let live = live_objects(&ctx).unwrap();
    assert_eq!((live.usm, live.bytes, live.total()), (2, 96, 2));
    drop((first, third));
    assert_eq!(live_objects(&ctx).unwrap(), LiveObjects::default());
}

/// Regression: a host task whose wait for its dependencies failed (the
/// driver's wait, not a dependency) ran before they had ended, and its
/// event completed; it now fails with the wait's error and does not run.
#[test]
fn a_failed_wait_does_not_start_a_host_task_early() {
    let (injector, _, ctx, queue) = wrapped_cpu();
    let gate = UserEvent::new(&ctx).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    injector.arm(Fault::new(CallKind::EventWait, 1));
    let done = queue.enqueue_host_task(&[gate.event()], move || flag.store(true, Ordering::SeqCst)).unwrap();
    let e = done.wait().unwrap_err();
    assert!(matches!(e, UrError::DeviceLost(_)) && injected(&e, CallKind::EventWait), "{e}");
    assert!(!ran.load(Ordering::SeqCst), "the task ran before its dependency ended");
    assert_eq!(injector.fired_on().as_deref(), Some("ur-host-task"));
    gate.complete().unwrap();
    queue.finish().unwrap();
    assert!(!ran.load(Ordering::SeqCst));
}

/// Regression (fault sweep, buffers moving between devices): an event
/// callback ran as soon as its wait failed, before the event had ended, with
/// a status that was not final. A buffer bridges a dependency on another
/// context's event with a callback, so the copy into the second device ran
/// before the copy out of the first had ended (stale data). The callback
/// now runs once the event has ended, with its final status.
#[test]
fn a_failed_wait_does_not_run_an_event_callback_early() {
    let (injector, _, ctx, queue) = wrapped_cpu();
    let gate = UserEvent::new(&ctx).unwrap();
    // A queue's event: a user event's wait is the host's, never injected.
    let after = queue.events_wait(&[gate.event()]).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    injector.arm(Fault::new(CallKind::EventWait, 1));
    after.on_complete(move |status| tx.send(status).unwrap()).unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "the callback ran before the event ended");
    assert!(injector.disarm().is_some_and(|e| injected(&e, CallKind::EventWait)));
    assert_eq!(injector.fired_on().as_deref(), Some("ur-event-callback"));
    gate.complete().unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), cmdbuf_core::EventStatus::Complete);
}

/// Regression: a software command buffer whose submission failed halfway
/// forgot the part it had submitted: the next submission did not wait for
/// it, and nothing kept the buffer's commands (and the memory they use)
/// alive while it ran, once the caller dropped them (a heap corruption on
/// PoCL).
#[test]
fn a_submission_that_failed_halfway_is_waited_for_and_kept_alive() {
    let injector = FaultInjector::new();
    let device = injector.wrap_device(&cmdbuf_cpu::default_device().emulated());
    let ctx = Context::new(&device).unwrap();
    let (q1, q2) = (Queue::new(&ctx, Default::default()).unwrap(), Queue::new(&ctx, Default::default()).unwrap());
    let (a, b) = (
        UsmAllocation::new(&ctx, UsmKind::Device, 64).unwrap(),
        UsmAllocation::new(&ctx, UsmKind::Device, 64).unwrap(),
    );
    let cb = CommandBuffer::new(&ctx, &device, Default::default()).unwrap();
    let fill = cb.append_usm_fill(a.ptr(), &[1], 64, AppendOptions::new()).unwrap();
    cb.append_usm_memcpy(b.ptr(), a.ptr(), 64, AppendOptions::new().after(&[fill.sync_point])).unwrap();
    cb.finalize().unwrap();
    let gate = UserEvent::new(&ctx).unwrap();
    // The copy's enqueue fails; the fill is submitted, behind the gate.
    injector.arm(Fault::new(CallKind::Enqueue, 2));
    let e = q1.enqueue_command_buffer(&cb, &[gate.event()]).unwrap_err();
    assert!(matches!(e, UrError::OutOfResources(_)) && injected(&e, CallKind::Enqueue), "{e}");
    let next = q2.enqueue_command_buffer(&cb, &[]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!next.status().is_terminal(), "the next submission ran before the failed one's fill");
    drop((cb, a, b));
    assert_eq!(live_objects(&ctx).unwrap().usm, 2, "memory of the submitted fill was released");
    gate.complete().unwrap();
    next.wait().unwrap();
    q1.finish().unwrap();
    q2.finish().unwrap();
    drop(next);
    // The CPU adapter's workers drop the last commands just after the queue drains.
    let start = std::time::Instant::now();
    while live_objects(&ctx).unwrap().usm != 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(live_objects(&ctx).unwrap().usm, 0);
}

/// A failed finalize hands the recording back unchanged: the buffer is not
/// finalized, still takes appends, finalizes on a second try and runs every
/// command, and stays counted as one live command buffer throughout. (The
/// software command buffer of emulated views has no adapter finalize to fail.)
#[test]
fn a_failed_finalize_leaves_the_recording_usable() {
    let (injector, device, ctx, queue) = wrapped_cpu();
    let buf = UsmAllocation::new(&ctx, UsmKind::Shared, 64).unwrap();
    let cb = CommandBuffer::new(&ctx, &device, Default::default()).unwrap();
    let fill = cb.append_usm_fill(buf.ptr(), &[1], 64, AppendOptions::new()).unwrap();
    injector.arm(Fault::new(CallKind::Finalize, 1));
    let e = cb.finalize().unwrap_err();
    assert!(matches!(e, UrError::OutOfResources(_)) && injected(&e, CallKind::Finalize), "{e}");
    assert!(!cb.is_finalized());
    assert!(matches!(cb.native_handle(), Err(UrError::InvalidOperation(_))));
    assert!(matches!(queue.enqueue_command_buffer(&cb, &[]), Err(UrError::InvalidOperation(_))));
    assert_eq!(live_objects(&ctx).unwrap().command_buffers, 1);
    cb.append_usm_fill(buf.ptr(), &[2], 32, AppendOptions::new().after(&[fill.sync_point])).unwrap();
    cb.finalize().unwrap();
    assert!(matches!(cb.finalize(), Err(UrError::InvalidOperation(_))));
    queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
    let mut out = [0u8; 64];
    queue.read_usm(buf.ptr(), &mut out, &[]).unwrap();
    assert_eq!((out[0], out[31], out[32], out[63]), (2, 2, 1, 1));
    assert_eq!(live_objects(&ctx).unwrap().command_buffers, 1);
    drop(cb);
    assert_eq!(live_objects(&ctx).unwrap().command_buffers, 0);
}

/// What completed submissions kept is released at the queue's next
/// submission, all of it: the queue retires completed commands a few at a
/// time (a batch on the stack), and a run longer than one batch must not
/// leave the rest for later submissions.
#[test]
fn every_completed_submission_is_released_at_the_next_submission() {
    let (_, device, ctx, queue) = wrapped_cpu();
    let buf = UsmAllocation::new(&ctx, UsmKind::Shared, 64).unwrap();
    // None completes before the last is submitted.
    let gate = UserEvent::new(&ctx).unwrap();
    let mut events = Vec::new();
    for i in 0..21u8 {
        let cb = CommandBuffer::new(&ctx, &device, Default::default()).unwrap();
        cb.append_usm_fill(buf.ptr(), &[i], 64, AppendOptions::new()).unwrap();
        cb.finalize().unwrap();
        events.push(queue.enqueue_command_buffer(&cb, &[gate.event()]).unwrap());
    }
    gate.complete().unwrap();
    for event in &events {
        event.wait().unwrap();
    }
    drop(events);
    // The queue holds every one: nothing was submitted since they completed.
    assert_eq!(live_objects(&ctx).unwrap().command_buffers, 21);
    queue.usm_fill(buf.ptr(), &[0], 64, &[]).unwrap().wait().unwrap();
    assert_eq!(live_objects(&ctx).unwrap().command_buffers, 0);
}

/// An in-order queue keeps an eager launch in place of the one before it
/// where it keeps all that one keeps (the same kernel over the same
/// buffers; it completes after it), without asking whether that one has
/// completed: the kernel and every buffer stay alive while the launches
/// wait (here the CPU adapter's queued commands hold them too), and what
/// the replaced and the last launches kept is all released at the next
/// submission once they have completed, none of it left behind.
#[test]
fn eager_launches_keep_their_kernel_and_buffers_until_they_complete() {
    let (_, _, ctx, queue) = wrapped_cpu();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("add", [ArgKind::Global, ArgKind::Value(1)]))
        .source(ProgramSource::Native(vec![NativeKernel::new("add", add)]));
    let program = Program::new(&ctx, &bundle).unwrap();
    let add = Kernel::new(&program, "add").unwrap();
    let (a, b) = (
        MemBuffer::new(&ctx, MemFlags::READ_WRITE, 64).unwrap(),
        MemBuffer::new(&ctx, MemFlags::READ_WRITE, 64).unwrap(),
    );
    let gate = UserEvent::new(&ctx).unwrap();
    let one = 1u8;
    // The second launch over `a` takes the first one's place; the one over
    // `b` keeps another buffer, so it takes no place.
    let mut last = None;
    for buffer in [&a, &a, &b] {
        let args = [KernelArg::MemObj(buffer), KernelArg::value(&one)];
        // SAFETY: the kernel adds to one byte per work-item of the 64-byte buffer.
        last = Some(unsafe { queue.launch_kernel(&KernelLaunch::new(&add, &[64], &args), &[gate.event()]) }.unwrap());
    }
    drop((a, b, add, program));
    let live = live_objects(&ctx).unwrap();
    assert_eq!((live.buffers, live.kernels), (2, 1), "released while the launches wait: {live:?}");
    gate.complete().unwrap();
    last.unwrap().wait().unwrap();
    let usm = UsmAllocation::new(&ctx, UsmKind::Shared, 64).unwrap();
    queue.usm_fill(usm.ptr(), &[0], 64, &[]).unwrap().wait().unwrap();
    let live = live_objects(&ctx).unwrap();
    assert_eq!((live.buffers, live.kernels, live.programs), (0, 0, 0), "kept after completing: {live:?}");
}

/// Adds the value argument to the byte of the buffer argument at each work-item.
fn add(group: &WorkGroup<'_>) {
    let (bytes, value) = (group.ptr::<u8>(0), group.value::<u8>(1));
    for item in group.items() {
        // SAFETY: each launch's buffer has a byte per work-item.
        unsafe { *bytes.add(item.global_id(0)) += value };
    }
}

/// Sets the byte of the buffer argument at each work-item to the value argument.
fn set(group: &WorkGroup<'_>) {
    let (bytes, value) = (group.ptr::<u8>(0), group.value::<u8>(1));
    for item in group.items() {
        // SAFETY: as for `add`.
        unsafe { *bytes.add(item.global_id(0)) = value };
    }
}

/// The wrapper hands the CPU adapter its own objects wherever the front end
/// passes objects back: buffers and sub-buffers in commands and kernel
/// arguments, kernels, alternative kernels and updated launches, append and
/// updated wait events (the CPU adapter downcasts each, and refuses another
/// adapter's). A command buffer holding those objects keeps them counted
/// after their handles are dropped, until it is dropped too.
#[test]
fn the_wrapped_adapter_is_handed_its_own_objects() {
    let (_, device, ctx, queue) = wrapped_cpu();
    let signature = |name| KernelSignature::new(name, [ArgKind::Global, ArgKind::Value(1)]);
    let bundle = ProgramBundle::new()
        .kernel(signature("add"))
        .kernel(signature("set"))
        .source(ProgramSource::Native(vec![NativeKernel::new("add", add), NativeKernel::new("set", set)]));
    let program = Program::new(&ctx, &bundle).unwrap();
    let (add, set) = (Kernel::new(&program, "add").unwrap(), Kernel::new(&program, "set").unwrap());
    let buffer = MemBuffer::new(&ctx, MemFlags::READ_WRITE, 4096).unwrap();
    let part = buffer.partition(MemFlags::empty(), 1024, 512).unwrap();
    queue.write_buffer(&buffer, 0, &[1; 4096], &[]).unwrap();

    let one = 1u8;
    let args = [KernelArg::MemObj(&part), KernelArg::value(&one)];
    // SAFETY: the kernel writes one byte per work-item of the 512-byte sub-buffer.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&add, &[512], &args), &[]) }.unwrap().wait().unwrap();

    let cb = CommandBuffer::new(&ctx, &device, CommandBufferDesc { updatable: true, ..Default::default() }).unwrap();
    let (first, second) = (UserEvent::new(&ctx).unwrap(), UserEvent::new(&ctx).unwrap());
    let waits = [first.event()];
    // SAFETY: as above.
    let appended = unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&add, &[512], &args),
            &[&set],
            AppendOptions::new().wait_events(&waits),
        )
    }
    .unwrap();
    cb.finalize().unwrap();
    let command = appended.command.expect("an updatable buffer's command handle");
    let seven = 7u8;
    let update = KernelLaunchUpdate::new(&command)
        .kernel(&set)
        .arg(0, KernelArg::MemObj(&part))
        .arg(1, KernelArg::value(&seven));
    // SAFETY: as above.
    unsafe { cb.update_kernel_launches(&[update]) }.unwrap();
    cb.update_wait_events(&command, &[second.event()]).unwrap();
    first.complete().unwrap();
    let run = queue.enqueue_command_buffer(&cb, &[]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(!run.status().is_terminal(), "the run waits for the updated wait event");
    second.complete().unwrap();
    run.wait().unwrap();
    let mut out = vec![0u8; 4096];
    queue.read_buffer(&buffer, 0, &mut out, &[]).unwrap();
    assert_eq!((out[1023], out[1024], out[1535], out[1536]), (1, 7, 7, 1));

    drop((run, part, buffer, add, set, program, first, second));
    queue.finish().unwrap();
    let live = live_objects(&ctx).unwrap();
    assert!(live.kernels >= 1 && live.buffers >= 1, "the command buffer's kernel and buffer stay counted: {live:?}");
    drop(cb);
    let start = std::time::Instant::now();
    while live_objects(&ctx).unwrap().total() != 1 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(live_objects(&ctx).unwrap(), LiveObjects { queues: 1, ..LiveObjects::default() });
}
