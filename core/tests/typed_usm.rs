//! Typed USM reads and writes on the CPU adapter: round trips and the
//! front end's typed errors.

use cmdbuf_core::{Context, Queue, QueueProperties, UrError, UsmAllocation, UsmKind};

fn queue() -> Queue {
    let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    Queue::new(&context, QueueProperties::default()).unwrap()
}

#[test]
fn round_trip_whole_and_range() {
    let q = queue();
    let data: Vec<u32> = (0..100).collect();
    let usm = q.clone_htod(&data).unwrap();
    assert_eq!(usm.size(), 400);
    assert_eq!(usm.kind(), UsmKind::Device);
    assert_eq!(q.clone_dtoh::<u32>(&usm, &[]).unwrap(), data);
    assert_eq!(q.clone_dtoh_range::<u32>(usm.ptr().byte_add(8), 3, &[]).unwrap(), [2, 3, 4]);
    q.memcpy_htod(usm.ptr().byte_add(4), &[7u32, 8], &[]).unwrap();
    let mut out = [0u32; 4];
    q.memcpy_dtoh(usm.ptr(), &mut out, &[]).unwrap();
    assert_eq!(out, [0, 7, 8, 3]);
    // The same bytes seen as another element type.
    assert_eq!(q.clone_dtoh::<u16>(&usm, &[]).unwrap()[..4], [0, 0, 7, 0]);
}

#[test]
fn typed_errors() {
    let q = queue();
    let usm = UsmAllocation::new(q.context(), UsmKind::Shared, 10).unwrap();
    assert!(matches!(q.clone_dtoh::<u32>(&usm, &[]), Err(UrError::InvalidSize(_))));
    assert!(matches!(q.memcpy_htod(usm.ptr().byte_add(1), &[1u32], &[]), Err(UrError::UnsupportedAlignment(_))));
    let mut out = [0u64; 1];
    assert!(matches!(q.memcpy_dtoh(usm.ptr().byte_add(4), &mut out, &[]), Err(UrError::UnsupportedAlignment(_))));
    // Past the end: the byte call's bounds check, unchanged.
    assert!(matches!(q.memcpy_htod(usm.ptr().byte_add(8), &[1u32], &[]), Err(UrError::InvalidSize(_))));
    assert!(matches!(q.clone_dtoh_range::<u8>(usm.ptr(), usize::MAX, &[]), Err(UrError::InvalidSize(_))));
    assert!(matches!(q.clone_dtoh_range::<u32>(usm.ptr(), usize::MAX / 2, &[]), Err(UrError::InvalidSize(_))));
    assert!(matches!(q.clone_htod::<u32>(&[]), Err(UrError::InvalidUsmSize(_))));
    assert!(matches!(q.clone_dtoh::<()>(&usm, &[]), Err(UrError::InvalidValue(_))));
    assert!(matches!(q.clone_dtoh_range::<u32>(usm.ptr(), 0, &[]), Err(UrError::InvalidSize(_))));
    assert!(matches!(q.memcpy_htod::<u32>(usm.ptr(), &[], &[]), Err(UrError::InvalidSize(_))));
}
