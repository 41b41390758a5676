//! The peer API's front-end checks, on the CPU adapter (whose devices share
//! host memory, so two contexts of its device are peers).

use cmdbuf_core::{Context, PeerAccess, Queue, QueueProperties, UrError, UsmAllocation, UsmKind};

fn setup() -> (cmdbuf_core::Device, Context, Context, Queue) {
    let device = cmdbuf_cpu::default_device();
    let a = Context::new(&device).unwrap();
    let b = Context::new(&device).unwrap();
    let queue = Queue::new(&a, QueueProperties::default()).unwrap();
    (device, a, b, queue)
}

#[test]
fn the_same_device_is_its_own_peer() {
    let device = cmdbuf_cpu::default_device();
    assert_eq!(device.peer_access(&device).unwrap(), PeerAccess { supported: true, atomics: true });
    assert_eq!(device.peer_access(&device.emulated()).unwrap(), PeerAccess { supported: true, atomics: true });
    device.enable_peer_access(&device).unwrap();
    device.enable_peer_access(&device).unwrap();
    assert!(device.peer_access_enabled(&device));
    device.disable_peer_access(&device).unwrap();
}

#[test]
fn a_peer_copy_moves_data_between_contexts_in_both_directions() {
    let (_, a, b, queue) = setup();
    let local = UsmAllocation::new(&a, UsmKind::Device, 256).unwrap();
    let remote = UsmAllocation::new(&b, UsmKind::Device, 256).unwrap();
    let data: Vec<u8> = (0..=255).collect();
    queue.write_usm(local.ptr(), &data, &[]).unwrap();
    let to_remote = queue.usm_copy_peer(remote.ptr().byte_add(16), local.ptr(), 128, &[]).unwrap();
    // An event of the other context is accepted in the wait list.
    let other_queue = Queue::new(&b, QueueProperties::default()).unwrap();
    let marker = other_queue.events_wait(&[]).unwrap();
    let back = queue.usm_copy_peer(local.ptr().byte_add(128), remote.ptr().byte_add(16), 64, &[&to_remote, &marker]);
    back.unwrap().wait().unwrap();
    let mut out = vec![0u8; 256];
    queue.read_usm(local.ptr(), &mut out, &[]).unwrap();
    let mut expected = data.clone();
    expected[128..192].copy_from_slice(&data[..64]);
    assert_eq!(out, expected);
}

#[test]
fn bad_peer_copies_are_typed_errors() {
    let (_, a, b, queue) = setup();
    let local = UsmAllocation::new(&a, UsmKind::Device, 64).unwrap();
    let local2 = UsmAllocation::new(&a, UsmKind::Device, 64).unwrap();
    let remote = UsmAllocation::new(&b, UsmKind::Device, 64).unwrap();
    let e = |r: cmdbuf_core::Result<cmdbuf_core::Event>| r.map(|_| ()).unwrap_err();
    assert!(matches!(e(queue.usm_copy_peer(remote.ptr(), local.ptr(), 0, &[])), UrError::InvalidSize(_)));
    assert!(matches!(e(queue.usm_copy_peer(remote.ptr(), local.ptr(), 65, &[])), UrError::InvalidSize(_)));
    assert!(matches!(e(queue.usm_copy_peer(remote.ptr().byte_add(8), local.ptr(), 64, &[])), UrError::InvalidSize(_)));
    assert!(matches!(e(queue.usm_copy_peer(local2.ptr(), local.ptr(), 64, &[])), UrError::InvalidValue(_)));
    let nowhere = cmdbuf_core::UsmPtr::from_addr(8);
    assert!(matches!(e(queue.usm_copy_peer(nowhere, local.ptr(), 8, &[])), UrError::InvalidValue(_)));
    assert!(matches!(e(queue.usm_copy_peer(nowhere, remote.ptr(), 8, &[])), UrError::InvalidValue(_)));
    // An event of a third context.
    let c = Context::new(a.device()).unwrap();
    let third = Queue::new(&c, QueueProperties::default()).unwrap().events_wait(&[]).unwrap();
    let r = queue.usm_copy_peer(remote.ptr(), local.ptr(), 8, &[&third]);
    assert!(matches!(e(r), UrError::InvalidEventWaitList(_)));
}
