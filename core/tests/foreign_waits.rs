//! The wait-list rule for events of another context: accepted, and waited
//! for device-side, where the adapter says its queues can
//! (`ContextImpl::waits_on_events_of`: the CPU adapter for any two of its
//! contexts), refused (`InvalidEventWaitList`) where it does not (here a
//! device wrapped for fault injection, whose contexts keep the default: no),
//! and always refused in command-buffer append wait lists.

use std::time::Duration;

use cmdbuf_core::faults::FaultInjector;
use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Event, Queue, QueueProperties, UrError, UserEvent,
    UsmAllocation, UsmKind,
};

fn read(queue: &Queue, alloc: &UsmAllocation, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    queue.read_usm(alloc.ptr(), &mut out, &[]).unwrap();
    out
}

/// `work` must not have ended while `gate` (of another context) is open.
fn gated(gate: &UserEvent, work: &Event) {
    std::thread::sleep(Duration::from_millis(20));
    assert!(!work.status().is_terminal(), "ran before the other context's event completed");
    gate.complete().unwrap();
    work.wait().unwrap();
}

#[test]
fn cpu_contexts_wait_for_each_others_events() {
    let device = cmdbuf_cpu::default_device();
    let (a, b) = (Context::new(&device).unwrap(), Context::new(&device.emulated()).unwrap());
    assert!(a.waits_on_events_of(&b) && b.waits_on_events_of(&a) && a.waits_on_events_of(&a));
    let queue = Queue::new(&a, QueueProperties::default()).unwrap();
    let mem = UsmAllocation::new(&a, UsmKind::Device, 64).unwrap();

    // An eager command after an event of the other context.
    let gate = UserEvent::new(&b).unwrap();
    let fill = queue.usm_fill(mem.ptr(), &[3], 64, &[gate.event()]).unwrap();
    gated(&gate, &fill);
    assert_eq!(read(&queue, &mem, 64), vec![3; 64]);

    // A command-buffer enqueue after one.
    let cb = CommandBuffer::new(&a, &device, CommandBufferDesc::default()).unwrap();
    cb.append_usm_fill(mem.ptr(), &[4], 64, AppendOptions::new()).unwrap();
    cb.finalize().unwrap();
    let gate = UserEvent::new(&b).unwrap();
    let run = queue.enqueue_command_buffer(&cb, &[gate.event()]).unwrap();
    gated(&gate, &run);
    assert_eq!(read(&queue, &mem, 64), vec![4; 64]);

    // An append wait list still takes only the buffer's own context's events.
    let cb = CommandBuffer::new(&a, &device, CommandBufferDesc::default()).unwrap();
    let other = UserEvent::new(&b).unwrap();
    let waits = [other.event()];
    let r = cb.append_usm_fill(mem.ptr(), &[5], 64, AppendOptions::new().wait_events(&waits));
    assert!(matches!(r, Err(UrError::InvalidEventWaitList(_))), "{r:?}");
    other.complete().unwrap();

    // A span's parts may be of the other context.
    let there = Queue::new(&b, QueueProperties::default()).unwrap().events_wait(&[]).unwrap();
    let here = queue.events_wait(&[&there]).unwrap();
    Event::span(&here, &here, &[there], false).unwrap().wait().unwrap();
}

#[test]
fn an_adapter_that_does_not_wait_across_contexts_refuses_their_events() {
    let injector = FaultInjector::new();
    let wrapped = injector.wrap_device(&cmdbuf_cpu::default_device());
    let (a, b) = (Context::new(&wrapped).unwrap(), Context::new(&wrapped).unwrap());
    let plain = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    assert!(!a.waits_on_events_of(&b) && !a.waits_on_events_of(&plain) && !plain.waits_on_events_of(&a));
    assert!(a.waits_on_events_of(&a));
    let queue = Queue::new(&a, QueueProperties::default()).unwrap();
    let mem = UsmAllocation::new(&a, UsmKind::Device, 64).unwrap();
    let cb = CommandBuffer::new(&a, &wrapped, CommandBufferDesc::default()).unwrap();
    cb.append_usm_fill(mem.ptr(), &[1], 64, AppendOptions::new()).unwrap();
    cb.finalize().unwrap();
    for other in [&b, &plain] {
        let foreign = Queue::new(other, QueueProperties::default()).unwrap().events_wait(&[]).unwrap();
        foreign.wait().unwrap();
        let e = |r: cmdbuf_core::Result<Event>| r.map(|_| ()).unwrap_err();
        assert!(matches!(e(queue.usm_fill(mem.ptr(), &[2], 64, &[&foreign])), UrError::InvalidEventWaitList(_)));
        assert!(matches!(e(queue.events_wait(&[&foreign])), UrError::InvalidEventWaitList(_)));
        assert!(matches!(e(queue.enqueue_command_buffer(&cb, &[&foreign])), UrError::InvalidEventWaitList(_)));
        let own = queue.events_wait(&[]).unwrap();
        assert!(matches!(e(Event::span(&own, &own, &[foreign], false)), UrError::InvalidEvent(_)));
    }
    // Nothing above ran.
    assert_eq!(read(&queue, &mem, 64), vec![0; 64]);
}

/// A peer copy takes events of its two contexts, and of contexts whose
/// events its queue waits for; others are refused.
#[test]
fn a_peer_copy_refuses_events_of_a_context_it_cannot_wait_for() {
    let device = cmdbuf_cpu::default_device();
    let (a, b) = (Context::new(&device).unwrap(), Context::new(&device).unwrap());
    let queue = Queue::new(&a, QueueProperties::default()).unwrap();
    let (local, remote) =
        (UsmAllocation::new(&a, UsmKind::Device, 64).unwrap(), UsmAllocation::new(&b, UsmKind::Device, 64).unwrap());
    let injector = FaultInjector::new();
    let wrapped = Context::new(&injector.wrap_device(&device)).unwrap();
    let foreign = Queue::new(&wrapped, QueueProperties::default()).unwrap().events_wait(&[]).unwrap();
    let r = queue.usm_copy_peer(remote.ptr(), local.ptr(), 8, &[&foreign]);
    assert!(matches!(r, Err(UrError::InvalidEventWaitList(_))), "{r:?}");
    let c = Context::new(&device).unwrap();
    let third = Queue::new(&c, QueueProperties::default()).unwrap().events_wait(&[]).unwrap();
    queue.usm_copy_peer(remote.ptr(), local.ptr(), 8, &[&third]).unwrap().wait().unwrap();
}
