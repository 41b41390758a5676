//! Issue 16: host tasks and event callbacks run on host threads that are
//! reused, not on one new thread each. Drivers keep state per thread that
//! called them (a host task completing its event submits the work after it
//! on its thread): NVIDIA's Vulkan driver grew by a few hundred bytes per
//! such thread, for the whole process, and was slow to exit after many.

use std::collections::HashSet;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use cmdbuf_core::{Context, Queue, QueueProperties};

const JOBS: usize = 50;
/// Threads the jobs may use at most: a job enqueued just as the previous one
/// returns finds no idle thread yet and gets a new one, now and then.
const MOST: usize = 10;

fn context() -> Context {
    Context::new(&cmdbuf_cpu::default_device()).unwrap()
}

#[test]
fn host_tasks_reuse_their_threads() {
    let context = context();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let seen = Arc::new(Mutex::new(HashSet::<ThreadId>::new()));
    for _ in 0..JOBS {
        let seen = seen.clone();
        let task = move || {
            seen.lock().unwrap().insert(std::thread::current().id());
        };
        queue.enqueue_host_task(&[], task).unwrap().wait().unwrap();
    }
    let threads = seen.lock().unwrap().len();
    assert!(threads <= MOST, "{JOBS} host tasks, one after the other, ran on {threads} threads");
}

#[test]
fn event_callbacks_reuse_their_threads() {
    let context = context();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let mut seen = HashSet::new();
    for _ in 0..JOBS {
        let (tx, rx) = mpsc::channel();
        let event = queue.barrier(&[]).unwrap();
        event.on_complete(move |_| tx.send(std::thread::current().id()).unwrap()).unwrap();
        seen.insert(rx.recv_timeout(Duration::from_secs(10)).expect("the callback runs"));
    }
    assert!(seen.len() <= MOST, "{JOBS} event callbacks, one after the other, ran on {} threads", seen.len());
}

/// Reused threads never make a job wait for another: a host task blocked
/// until a later one has run still lets that one run.
#[test]
fn a_blocked_host_task_does_not_hold_back_later_ones() {
    let context = context();
    let (first, second) = (
        Queue::new(&context, QueueProperties::default()).unwrap(),
        Queue::new(&context, QueueProperties::default()).unwrap(),
    );
    let (tx, rx) = mpsc::channel::<()>();
    let blocked = first
        .enqueue_host_task(&[], move || {
            rx.recv_timeout(Duration::from_secs(10)).expect("the later task ran");
        })
        .unwrap();
    let later = second.enqueue_host_task(&[], move || tx.send(()).unwrap()).unwrap();
    later.wait().unwrap();
    blocked.wait().unwrap();
}
