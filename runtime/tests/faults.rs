//! Regressions the fault sweep (`conformance/tests/faults.rs`, scenario
//! `buffer_devices`) found in the buffers, each reproduced with a fault
//! injected into one adapter call (`cmdbuf_core::faults`).

use std::sync::mpsc;
use std::time::Duration;

use cmdbuf_core::faults::{CallKind, Fault, FaultInjector};
use cmdbuf_core::{Context, Queue, UserEvent};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties, CommandGroup};

/// Regression: a buffer dropped while its work ran freed its memory as soon
/// as a wait for that work failed (the driver's wait, not the work), under
/// the work still using it. The drop now returns only once the work has
/// ended, whatever its wait returned.
#[test]
fn a_failed_wait_does_not_free_a_buffer_under_its_work() {
    let injector = FaultInjector::new();
    let device = injector.wrap_device(&cmdbuf_cpu::default_device());
    let context = Context::new(&device).unwrap();
    let queue = Queue::new(&context, Default::default()).unwrap();
    let gate = UserEvent::new(&context).unwrap();
    let buffer = Buffer::from_host(&[1u32; 64], &[64]).unwrap();
    let mut cg = CommandGroup::new(&queue);
    cg.access(&buffer, AccessMode::ReadWrite, AccessRange::all()).unwrap();
    // The work: waits for the gate, so it is still running at the drop.
    let work = cg
        .submit(|q, wait| {
            let mut wait = wait.to_vec();
            wait.push(gate.event());
            q.events_wait(&wait)
        })
        .unwrap();
    injector.arm(Fault::new(CallKind::EventWait, 1));
    let (tx, rx) = mpsc::channel();
    let dropper = std::thread::spawn(move || {
        drop(buffer);
        tx.send(()).unwrap();
    });
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "the buffer was freed while its work ran");
    assert!(injector.disarm().is_some(), "the drop's wait was not failed");
    gate.complete().unwrap();
    rx.recv_timeout(Duration::from_secs(10)).expect("the drop ends once the work has");
    dropper.join().unwrap();
    work.wait().unwrap();
}

/// Regression (issue 16): a transfer of several pieces whose third piece
/// failed to enqueue forgot the two it had enqueued. Later conflicting work
/// did not wait for them, so they landed after it and overwrote its data.
/// Now the enqueued pieces are recorded as uses: the page state stays
/// consistent (the failed transfer's pages stay outdated on the target, a
/// retry moves them), later writes wait for the pieces, and nothing is lost.
#[test]
fn a_transfer_failing_halfway_keeps_its_pieces_and_the_page_state() {
    const SLICE: usize = 4 * 16;
    let injector = FaultInjector::new();
    let device = injector.wrap_device(&cmdbuf_cpu::default_device());
    let context = Context::new(&device).unwrap();
    // An in-order queue: the transfer's pieces queue behind `blocker`, which
    // the buffer does not know about, so they stay pending as long as we like.
    let queue = Queue::new(&context, Default::default()).unwrap();
    let other = Queue::new(&context, Default::default()).unwrap();
    let host: Vec<u32> = (0..4 * SLICE as u32).collect();
    // 4 slices of 4 rows of 16; a page is 2 rows of one slice.
    let props = BufferProperties { page: Some(vec![1, 2, 16]) };
    let buffer = Buffer::from_host_with(&host, &[4, 4, 16], &props).unwrap();
    let ptr = buffer.device_ptr(&queue).unwrap();
    let gate = UserEvent::new(&context).unwrap();
    let blocker = queue.events_wait(&[gate.event()]).unwrap();

    // Rows 0-1 of every slice: one box of 4 pages, moved as 4 pieces (one
    // per slice); the third fails to enqueue.
    let rows_0_1 = AccessRange::new(&[0, 0, 0], &[4, 2, 16]);
    injector.arm(Fault::new(CallKind::Enqueue, 3));
    let mut cg = CommandGroup::new(&queue);
    cg.access(&buffer, AccessMode::Read, rows_0_1.clone()).unwrap();
    let failed = cg.submit(|q, wait| q.events_wait(wait));
    assert!(failed.is_err(), "the transfer's failure reaches the caller");
    assert!(injector.disarm().is_some(), "the third piece was not failed");
    assert_eq!(buffer.stats().copies, 0, "a failed transfer is not counted");

    // A write on the device over the pages of the two enqueued pieces, on
    // another queue: it waits for them, else they would land after it.
    let mut cg = CommandGroup::new(&other);
    cg.access(&buffer, AccessMode::WriteNoInit, AccessRange::new(&[0, 0, 0], &[2, 2, 16])).unwrap();
    let write = cg
        .submit(|q, wait| {
            let first = q.usm_fill(ptr, &9u32.to_le_bytes(), 2 * 16 * 4, wait)?;
            q.usm_fill(ptr.byte_add(SLICE * 4), &9u32.to_le_bytes(), 2 * 16 * 4, &[&first])
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!write.status().is_terminal(), "the write ran before the failed transfer's enqueued pieces");
    gate.complete().unwrap();
    write.wait().unwrap();
    blocker.wait().unwrap();

    // The retry moves exactly the pages the failed transfer left outdated:
    // rows 0-1 of slices 2-3.
    let before = buffer.stats();
    let mut cg = CommandGroup::new(&queue);
    cg.access(&buffer, AccessMode::Read, rows_0_1).unwrap();
    cg.submit(|q, wait| q.events_wait(wait)).unwrap().wait().unwrap();
    let after = buffer.stats();
    assert_eq!((after.copies - before.copies, after.pages - before.pages), (1, 2));
    let mut expected = host.clone();
    for slice in 0..2 {
        expected[slice * SLICE..slice * SLICE + 32].fill(9);
    }
    let all = buffer.host_access(AccessMode::Read, AccessRange::all()).unwrap();
    assert_eq!(all.to_vec::<u32>().unwrap(), expected, "no data lost");
}
