//! The process's exit with work still in an eager batch. The adapter's exit
//! handler (`exit.rs`) runs before the driver's, and before every handler
//! registered earlier: it submits the batch, finishes the work, stops the
//! adapter's threads and marks the driver gone. The handler this test
//! registers before the adapter is loaded then runs after it, as C
//! programs' destructors and libsycl's static destructors do, and finds
//! every event complete with its work done, new work refused with
//! `DEVICE_LOST`, and the objects released without calling the driver
//! (NVIDIA's driver crashes the process on such a call once its own exit
//! handlers have run; `abi/harness/c/exit_release.c`). The work writes
//! host memory the test lent to a buffer: the driver's own exit unmaps the
//! memory it allocated, USM included, before the test's handler runs
//! (on NVIDIA's driver, reading host USM there crashes). Needs a Vulkan device
//! (CI has lavapipe); without one the test is listed ignored with the
//! reason, and fails when run anyway or when `UR_RS_REQUIRE_DEVICES` names
//! `vulkan`.

mod common;

use std::sync::Mutex;

use cmdbuf_core::{Context, Device, Event, EventStatus, MemBuffer, MemFlags, Queue, QueueProperties, UrError};

/// Words filled by the work left at exit, one command each.
const WORDS: usize = 64;

/// What the test leaves for the process's exit.
struct Left {
    queue: Queue,
    /// The lent memory, never freed: the process is ending.
    host: &'static mut [u32; WORDS],
    buffer: MemBuffer,
    events: Vec<Event>,
    _context: Context,
}

static LEFT: Mutex<Option<Left>> = Mutex::new(None);

fn main() {
    // SAFETY: `after_the_adapter` does not unwind (it aborts on a panic, as
    // any `extern "C"` function does, which fails the test).
    unsafe { libc::atexit(after_the_adapter) };
    common::run(&[("work_left_at_exit_is_finished_then_refused", leave_work)]);
}

/// Enqueues fills without waiting for them: they sit in the queue's open
/// batch (or were just submitted by the batch timer) when the process exits.
fn leave_work(device: &Device) {
    let context = Context::new(device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let host: &'static mut [u32; WORDS] = Box::leak(Box::new([0; WORDS]));
    // SAFETY: the memory is leaked, so valid for the whole process, and the
    // host reads it only once the work is complete.
    let buffer =
        unsafe { MemBuffer::over_host_memory(&context, MemFlags::READ_WRITE, host.as_mut_ptr().cast(), WORDS * 4) }
            .unwrap();
    assert_eq!(buffer.host_memory(), Some(host.as_mut_ptr().cast()), "the buffer is not over the lent memory");
    let events =
        (0..WORDS).map(|i| queue.fill_buffer(&buffer, &(i as u32 + 1).to_le_bytes(), i * 4, 4, &[]).unwrap()).collect();
    *LEFT.lock().unwrap() = Some(Left { queue, host, buffer, events, _context: context });
}

/// Runs at exit after the adapter's handler: checks what `Left` holds, then
/// releases it; exits 1 with the reason on stderr if a check fails.
extern "C" fn after_the_adapter() {
    let Some(left) = LEFT.lock().ok().and_then(|mut slot| slot.take()) else { return };
    let failure = check(&left);
    drop(left);
    if let Some(why) = failure {
        let line = format!("exit test failed: {why}\n");
        // SAFETY: writes `line`'s bytes to stderr, then ends the process;
        // `eprintln!` may need thread-locals that exit has destroyed.
        unsafe {
            libc::write(2, line.as_ptr().cast(), line.len());
            libc::_exit(1);
        }
    }
}

fn check(left: &Left) -> Option<String> {
    for (i, event) in left.events.iter().enumerate() {
        if event.status() != EventStatus::Complete {
            return Some(format!("the fill of word {i} is {:?}", event.status()));
        }
    }
    for (i, &word) in left.host.iter().enumerate() {
        if word != i as u32 + 1 {
            return Some(format!("word {i} holds {word}, not {}", i + 1));
        }
    }
    match left.queue.fill_buffer(&left.buffer, &[0; 4], 0, 4, &[]) {
        Err(UrError::DeviceLost(_)) => None,
        other => Some(format!("new work at exit answered {other:?}, not DEVICE_LOST")),
    }
}
