//! Buffers between two contexts of the CPU device, which is its own peer,
//! with allocation sharing off (one allocation per context, as two devices
//! would have): device-to-device transfers are peer copies, one per row of a rect whose
//! rows are not contiguous, and leave the host allocation outdated.

use cmdbuf_core::{Context, Queue, QueueProperties};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties, CommandGroup};

fn queue() -> Queue {
    let device = cmdbuf_cpu::default_device();
    Queue::new(&Context::new(&device).unwrap(), QueueProperties::default()).unwrap()
}

#[test]
fn a_rect_moves_as_one_peer_copy_per_row() {
    let (a, b) = (queue(), queue());
    assert!(a.device().peer_access(b.device()).unwrap().supported);
    let (rows, cols) = (16, 64);
    let props = BufferProperties { page: Some(vec![4, 16]) };
    let buffer = Buffer::new(4, &[rows, cols], &props).unwrap();
    buffer.set_share_allocations(false);
    let mut cg = CommandGroup::new(&a);
    let acc = cg.access(&buffer, AccessMode::WriteNoInit, AccessRange::all()).unwrap();
    let data: Vec<u32> = (0..(rows * cols) as u32).collect();
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    cg.submit(|q, wait| {
        q.write_usm(acc.ptr(), &bytes, wait)?;
        q.events_wait(&[])
    })
    .unwrap()
    .wait()
    .unwrap();
    assert_eq!(buffer.stats(), Default::default());

    // Rows 5-10, columns 20-39 touch 2 x 2 pages: rows 4-11, columns 16-47,
    // 8 rows of 128 bytes 256 bytes apart.
    let mut cg = CommandGroup::new(&b);
    let acc = cg.access(&buffer, AccessMode::Read, AccessRange::new(&[5, 20], &[6, 20])).unwrap();
    let mut out = vec![0u8; rows * cols * 4];
    cg.submit(|q, wait| {
        q.read_usm(acc.ptr(), &mut out, wait)?;
        q.events_wait(&[])
    })
    .unwrap()
    .wait()
    .unwrap();
    let s = buffer.stats();
    assert_eq!((s.copies, s.pages, s.bytes, s.via_host), (1, 4, 8 * 32 * 4, 0));
    assert_eq!((s.peer, s.peer_bytes, s.commands), (1, 8 * 32 * 4, 8), "one peer copy per row");
    for r in 4..12 {
        for c in 16..48 {
            let at = (r * cols + c) * 4;
            assert_eq!(u32::from_le_bytes(out[at..at + 4].try_into().unwrap()), data[r * cols + c], "({r}, {c})");
        }
    }

    // The host was not refreshed on the way: all 16 pages come from `a`.
    let host = buffer.host_access(AccessMode::Read, AccessRange::all()).unwrap();
    assert_eq!(host.to_vec::<u32>().unwrap(), data);
    let s = buffer.stats();
    assert_eq!((s.copies, s.pages, s.peer, s.via_host), (2, 20, 1, 0));
}
