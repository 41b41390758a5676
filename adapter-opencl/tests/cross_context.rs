//! Contexts of one OpenCL device share one `cl_context` (`NativeContext` in
//! `src/device.rs`), so that a command of one uses the other's buffers and
//! waits for its events, as UR's `urEventWaitTest.WithCrossContextDependencies`
//! asks and as the CPU, Vulkan and CUDA libraries do. A context adopted from
//! a `cl_context` of its own stays apart: its commands refuse the others'
//! buffers and events.
//!
//! One test per OpenCL device; without one it is listed ignored with the
//! reason, and fails when run anyway or when `UR_RS_REQUIRE_DEVICES` names
//! `opencl`.

mod per_device;

use cmdbuf_core::{
    Context, Device, Event, EventStatus, MemBuffer, MemFlags, NativeHandle, Ownership, Queue, QueueProperties, UrError,
    UserEvent,
};

const SIZE: usize = 4096;

fn main() {
    per_device::run(
        "cross_context",
        &[("chain_across_contexts", chain_across_contexts), ("own_cl_context_stays_apart", own_cl_context_stays_apart)],
    )
}

fn text(e: UrError) -> String {
    e.to_string()
}

/// A fill in context A behind A's user event, a copy from A's buffer into
/// B's on B's queue after the fill, a read in B: the copy waits for the
/// event of the other context on the device, and moves the filled bytes.
fn chain_across_contexts(device: &Device) -> Result<(), String> {
    let (a, b) = (Context::new(device).map_err(text)?, Context::new(device).map_err(text)?);
    if !b.uses_buffers_of(&a) {
        return Err("two contexts of one OpenCL device do not take each other's buffers".into());
    }
    if !b.waits_on_events_of(&a) {
        return Err("two contexts of one OpenCL device do not wait for each other's events".into());
    }
    let (queue_a, queue_b) = (
        Queue::new(&a, QueueProperties::default()).map_err(text)?,
        Queue::new(&b, QueueProperties::default()).map_err(text)?,
    );
    let src = MemBuffer::new(&a, MemFlags::READ_WRITE, SIZE).map_err(text)?;
    let dst = MemBuffer::with_data(&b, MemFlags::READ_WRITE, &[0; SIZE]).map_err(text)?;
    let gate = UserEvent::new(&a).map_err(text)?;
    let filled = queue_a.fill_buffer(&src, &[7, 9], 0, SIZE, &[gate.event()]).map_err(text)?;
    let copied = queue_b.copy_buffer(&src, &dst, 0, 0, SIZE, &[&filled]).map_err(text)?;
    if copied.status() == EventStatus::Complete {
        return Err("the copy completed before the other context's fill it waits for could run".into());
    }
    gate.complete().map_err(text)?;
    let mut out = vec![0u8; SIZE];
    queue_b.read_buffer(&dst, 0, &mut out, &[&copied]).map_err(text)?;
    let expected: Vec<u8> = [7u8, 9].iter().copied().cycle().take(SIZE).collect();
    if out != expected {
        return Err(format!("copied across contexts: {:?}..., expected {:?}...", &out[..8], &expected[..8]));
    }
    Ok(())
}

/// A context adopted from a `cl_context` made for it alone takes neither
/// the buffers nor the events of the device's other contexts, as OpenCL has
/// it (`CL_INVALID_CONTEXT`), and says so before anything is enqueued.
fn own_cl_context_stays_apart(device: &Device) -> Result<(), String> {
    let a = Context::new(device).map_err(text)?;
    let id = device.native_handle().map_err(text)?.0 as cl3::types::cl_device_id;
    let own = opencl3::context::Context::from_device(&opencl3::device::Device::new(id))
        .map_err(|e| format!("clCreateContext: {e}"))?;
    let raw = own.get();
    // SAFETY: `raw` is a live cl_context of this device, held by `own` until
    // after `apart` is dropped below; `Shared` ownership retains it.
    let apart = unsafe { Context::from_native(device, NativeHandle(raw as u64), Ownership::Shared) }.map_err(text)?;
    if apart.uses_buffers_of(&a) || apart.waits_on_events_of(&a) {
        return Err("a context in a cl_context of its own takes another cl_context's buffers or events".into());
    }
    let queue = Queue::new(&apart, QueueProperties::default()).map_err(text)?;
    let (foreign, own_buffer) = (
        MemBuffer::new(&a, MemFlags::READ_WRITE, SIZE).map_err(text)?,
        MemBuffer::new(&apart, MemFlags::READ_WRITE, SIZE).map_err(text)?,
    );
    match queue.copy_buffer(&foreign, &own_buffer, 0, 0, SIZE, &[]) {
        Err(UrError::InvalidMemObject(_)) => {}
        other => return Err(format!("a copy from another cl_context's buffer: {other:?}, expected InvalidMemObject")),
    }
    let gate = UserEvent::new(&a).map_err(text)?;
    match queue.fill_buffer(&own_buffer, &[1], 0, SIZE, &[gate.event()]) {
        Err(UrError::InvalidEventWaitList(_)) => {}
        other => {
            return Err(format!("a wait for another cl_context's event: {other:?}, expected InvalidEventWaitList"));
        }
    }
    gate.complete().map_err(text)?;
    // Adopting another `cl_context`'s objects is refused by kind.
    let queue_a = Queue::new(&a, QueueProperties::default()).map_err(text)?;
    let event_a = queue_a.fill_buffer(&foreign, &[2], 0, SIZE, &[]).map_err(text)?;
    event_a.wait().map_err(text)?;
    // SAFETY: a live queue of the backend, of another cl_context; an
    // adoption that succeeded (none should) would retain it.
    let adopted_queue =
        unsafe { Queue::from_native(&apart, None, queue_a.native_handle().map_err(text)?, Ownership::Shared) };
    // SAFETY: as above, a live buffer.
    let adopted_buffer =
        unsafe { MemBuffer::from_native(&apart, foreign.native_handle().map_err(text)?, Ownership::Shared) };
    // SAFETY: as above, a live event.
    let adopted_event =
        unsafe { Event::from_native(&apart, event_a.native_handle().map_err(text)?, Ownership::Shared) };
    if !matches!(adopted_queue, Err(UrError::InvalidQueue(_)))
        || !matches!(adopted_buffer, Err(UrError::InvalidMemObject(_)))
        || !matches!(adopted_event, Err(UrError::InvalidEvent(_)))
    {
        return Err(format!(
            "adopting another cl_context's queue, buffer and event: {:?}, {:?}, {:?}; expected InvalidQueue, \
             InvalidMemObject, InvalidEvent",
            adopted_queue.map(|_| ()),
            adopted_buffer.map(|_| ()),
            adopted_event.map(|_| ())
        ));
    }
    drop((queue, own_buffer, apart));
    drop(own);
    Ok(())
}
