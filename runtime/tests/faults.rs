//! Regressions the fault sweep (`conformance/tests/faults.rs`, scenario
//! `buffer_devices`) found in the buffers, each reproduced with a fault
//! injected into one adapter call (`ur_core::faults`).

use std::sync::mpsc;
use std::time::Duration;

use ur_core::faults::{CallKind, Fault, FaultInjector};
use ur_core::{Context, Queue, UserEvent};
use ur_runtime::{AccessMode, AccessRange, Buffer, CommandGroup};

/// Regression: a buffer dropped while its work ran freed its memory as soon
/// as a wait for that work failed (the driver's wait, not the work), under
/// the work still using it. The drop now returns only once the work has
/// ended, whatever its wait returned.
#[test]
fn a_failed_wait_does_not_free_a_buffer_under_its_work() {
    let injector = FaultInjector::new();
    let device = injector.wrap_device(&ur_adapter_cpu::default_device());
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
