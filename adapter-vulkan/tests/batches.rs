//! Eager batches across their boundaries: a queue's eager commands go to the
//! device in batches of at most 256 (`shared/batch.rs`), and a batch that
//! follows one submitted earlier to the same `VkQueue` is ordered by a
//! pipeline barrier instead of a semaphore wait. These chains span several
//! batches and check what that must keep: each command sees the one before it, and
//! on a profiling queue starts no earlier than it ended. Needs a Vulkan
//! device (CI has lavapipe); without one the tests are listed ignored with
//! the reason, and fail when run anyway or when `UR_RS_REQUIRE_DEVICES`
//! names `vulkan`.

mod common;

use cmdbuf_core::{Context, Device, Event, Queue, QueueProperties, UsmAllocation, UsmKind};

fn main() {
    common::run(&[
        ("in_order_chain_across_batches", in_order_chain_across_batches),
        ("profiled_chain_across_batches", profiled_chain_across_batches),
    ]);
}

/// Steps of the chains: fill, then copy out, per step; four batches and more.
const STEPS: usize = 600;

/// Fills one word with the step's number and copies it into the step's
/// slot, each after the one before by the queue's order alone: a copy that
/// ran before its fill, or after the next one, leaves a wrong slot.
fn chain(device: &Device, properties: QueueProperties) -> (Queue, Vec<Event>) {
    let context = Context::new(device).unwrap();
    let queue = Queue::new(&context, properties).unwrap();
    let word = UsmAllocation::new(&context, UsmKind::Device, 4).unwrap();
    let slots = UsmAllocation::new(&context, UsmKind::Device, STEPS * 4).unwrap();
    let mut events = Vec::with_capacity(2 * STEPS);
    for step in 0..STEPS {
        events.push(queue.usm_fill(word.ptr(), &(step as u32).to_le_bytes(), 4, &[]).unwrap());
        events.push(queue.usm_memcpy(slots.ptr().byte_add(step * 4), word.ptr(), 4, &[]).unwrap());
    }
    let mut bytes = vec![0u8; STEPS * 4];
    queue.read_usm(slots.ptr(), &mut bytes, &[]).unwrap();
    let got: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let want: Vec<u32> = (0..STEPS as u32).collect();
    assert_eq!(got, want, "a step saw another step's fill");
    (queue, events)
}

fn in_order_chain_across_batches(device: &Device) {
    let (_queue, events) = chain(device, QueueProperties::default());
    for e in &events {
        e.wait().unwrap();
    }
}

/// The timestamps of consecutive commands do not overlap, at batch
/// boundaries as inside a batch.
fn profiled_chain_across_batches(device: &Device) {
    let (_queue, events) = chain(device, QueueProperties { profiling: true, ..QueueProperties::default() });
    let times: Vec<_> = events.iter().map(|e| e.profiling_info().unwrap()).collect();
    for (k, pair) in times.windows(2).enumerate() {
        assert!(pair[0].start <= pair[0].end, "command {k} ends before it starts: {:?}", pair[0]);
        assert!(pair[1].start >= pair[0].end, "command {} starts before command {k} ends: {pair:?}", k + 1);
    }
}
