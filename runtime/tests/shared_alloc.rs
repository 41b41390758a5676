//! One buffer allocation for contexts of one device that can share USM
//! (the CPU device and its emulated view, two contexts of the device): one
//! pointer, one location, no transfer between them, work still ordered.

use cmdbuf_core::{Context, Queue, QueueProperties};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, CommandGroup, TransferStats};

fn queue_on(device: &cmdbuf_core::Device) -> Queue {
    Queue::new(&Context::new(device).unwrap(), QueueProperties::default()).unwrap()
}

/// Writes `value` over `[first, first + count)` u32 on `queue` through an accessor.
fn fill(queue: &Queue, buffer: &Buffer, first: usize, count: usize, value: u32) {
    let mut cg = CommandGroup::new(queue);
    let acc = cg.access(buffer, AccessMode::Write, AccessRange::new(&[first], &[count])).unwrap();
    let ptr = acc.ptr().byte_add(first * 4);
    cg.submit(|q, wait| q.usm_fill(ptr, &value.to_le_bytes(), count * 4, wait)).unwrap().wait().unwrap();
}

#[test]
fn the_device_and_its_view_share_one_allocation() {
    let device = cmdbuf_cpu::default_device();
    let (a, b, c) = (queue_on(&device), queue_on(&device.emulated()), queue_on(&device));
    let buffer = Buffer::from_host(&[1u32; 256], &[256]).unwrap();
    fill(&a, &buffer, 0, 128, 2);
    let after_first = buffer.stats();
    assert_eq!((after_first.copies, after_first.pages), (1, 1), "host to the device once");
    fill(&b, &buffer, 64, 128, 3);
    fill(&c, &buffer, 100, 10, 4);
    let ptr = buffer.device_ptr(&a).unwrap();
    assert_eq!(buffer.device_ptr(&b).unwrap(), ptr);
    assert_eq!(buffer.device_ptr(&c).unwrap(), ptr);
    assert_eq!(buffer.stats(), after_first, "nothing moved between the contexts");
    assert!(a.context().shares_usm_with(b.context()) && b.context().shares_usm_with(c.context()));
    let mut expected = vec![1u32; 256];
    expected[..128].fill(2);
    expected[64..192].fill(3);
    expected[100..110].fill(4);
    let host = buffer.host_access(AccessMode::Read, AccessRange::all()).unwrap();
    assert_eq!(host.to_vec::<u32>().unwrap(), expected);
}

#[test]
fn sharing_off_keeps_an_allocation_per_context() {
    let device = cmdbuf_cpu::default_device();
    let (a, b) = (queue_on(&device), queue_on(&device));
    let buffer = Buffer::from_host(&[1u32; 64], &[64]).unwrap();
    buffer.set_share_allocations(false);
    fill(&a, &buffer, 0, 64, 2);
    fill(&b, &buffer, 0, 32, 3);
    assert_ne!(buffer.device_ptr(&a).unwrap(), buffer.device_ptr(&b).unwrap());
    assert!(!a.context().shares_usm_with(b.context()));
    assert_ne!(buffer.stats(), TransferStats::default());
}
