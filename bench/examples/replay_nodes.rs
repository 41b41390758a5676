//! One shape of the `replay_flat` group (`src/flat_shapes.rs`) replayed on
//! the first device `UR_DEVICE_SELECTOR` selects, for a profiler: each
//! submission is one `enqueue_command_buffer` followed by a wait, so that
//! `valgrind --tool=callgrind --toggle-collect='*enqueue_command_buffer*'`
//! counts the submitting thread's instructions per submission.
//!
//! ```text
//! UR_DEVICE_SELECTOR=cpu:0 cargo run --release -p cmdbuf-bench --example replay_nodes -- axpb 100 1000
//! ```
//!
//! Arguments: the shape (`empty`, `axpb`, `memory`), the commands in the
//! buffer, the submissions (after 10 unmeasured ones), and a pause in µs
//! after each completed submission (default 0: an idle gap as a long
//! replay leaves the adapter's other threads, e.g. the CPU adapter's
//! workers parked, whatever the node count). Prints the mean host time per
//! submission and the submitting thread's context switches within the
//! submissions, voluntary (it blocked) and not (it was preempted).

#[path = "../src/flat_shapes.rs"]
mod flat_shapes;

use std::time::{Duration, Instant};

use cmdbuf::{Context, Kernel, Program, Queue, QueueProperties, UrError};

fn main() -> Result<(), UrError> {
    let mut args = std::env::args().skip(1);
    let shape = args.next().unwrap_or_else(|| "axpb".into());
    let mut number = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, submissions, pause) = (number(100), number(1000), number(0));
    let loader = cmdbuf::load()?;
    let device = loader.first_device()?;
    let context = Context::new(&device)?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let library = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
    let (empty, axpb) = (Kernel::new(&library, "empty")?, Kernel::new(&library, "axpb")?);
    let operands = flat_shapes::Operands::new(&context, &empty, &axpb)?;
    let cb = operands.build(&context, &device, &shape, n)?;
    for _ in 0..10 {
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    }
    let (mut host, mut blocked, mut preempted) = (Duration::ZERO, 0, 0);
    for _ in 0..submissions {
        let before = thread_usage();
        let start = Instant::now();
        let event = queue.enqueue_command_buffer(&cb, &[])?;
        host += start.elapsed();
        let after = thread_usage();
        blocked += after.voluntary - before.voluntary;
        preempted += after.involuntary - before.involuntary;
        event.wait()?;
        if pause > 0 {
            std::thread::sleep(Duration::from_micros(pause as u64));
        }
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / submissions.max(1) as f64;
    println!(
        "{device}: {submissions} submissions of {n} `{shape}` commands: host {:.2} µs per submission; {blocked} \
         voluntary and {preempted} involuntary context switches within them",
        per(host)
    );
    Ok(())
}

/// The calling thread's context switches so far. (Its CPU time, also in
/// `rusage`, is split from tick samples: too coarse for one submission.)
struct Usage {
    voluntary: i64,
    involuntary: i64,
}

fn thread_usage() -> Usage {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a writable `rusage`; RUSAGE_THREAD asks about the calling thread only.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    Usage { voluntary: usage.ru_nvcsw, involuntary: usage.ru_nivcsw }
}
