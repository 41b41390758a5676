//! The `submission` group's eager chain, for a profiler: on the first
//! device `UR_DEVICE_SELECTOR` selects, `chains` times, launches the `empty`
//! kernel `n` times on an in-order queue, each launch returning its event
//! (dropped at once), and waits for the last. A sampling profiler then sees
//! the launches of the hot path in steady state, and little else:
//!
//! ```text
//! UR_DEVICE_SELECTOR=cuda:0 perf record -g cargo run --release -p cmdbuf-bench --example eager_launches -- 1000 200
//! ```
//!
//! Arguments: the launches per chain (default 1000), the chains (default
//! 100), after 10 unmeasured ones, and `keep` to hold every launch's event
//! until the chain is submitted, as the bench's `submission` group and a
//! runtime that returns each launch's event do, or `fork_join` for the
//! group's other shape: on an out-of-order queue, the first launch, then
//! launches that each wait for it, then one that waits for all of those.
//! Prints the mean host time per launch, and the wall time to the last
//! one's completion.

use std::time::{Duration, Instant};

use cmdbuf::{Context, Event, Kernel, KernelLaunch, Program, Queue, QueueProperties, UrError};

fn main() -> Result<(), UrError> {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, chains) = (number(1000).max(1), number(100));
    let mode = args.next();
    let fork_join = mode.as_deref() == Some("fork_join");
    let keep = fork_join || mode.as_deref() == Some("keep");
    let loader = cmdbuf::load()?;
    let device = loader.first_device()?;
    let context = Context::new(&device)?;
    let queue = Queue::new(&context, QueueProperties { out_of_order: fork_join, ..QueueProperties::default() })?;
    let library = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
    let empty = Kernel::new(&library, "empty")?;
    let launch = KernelLaunch::new(&empty, &[1], &[]);
    let chain = || -> Result<[Duration; 2], UrError> {
        let start = Instant::now();
        let mut events = Vec::with_capacity(if keep { n } else { 1 });
        for i in 0..n {
            if !keep {
                events.clear();
            }
            let waits: Vec<&Event> = match i {
                _ if !fork_join || i == 0 => Vec::new(),
                _ if i == n - 1 => events[1..].iter().collect(),
                _ => vec![&events[0]],
            };
            // SAFETY: `empty` touches no memory.
            let event = unsafe { queue.launch_kernel(&launch, &waits)? };
            events.push(event);
        }
        let last = events.pop().expect("n >= 1");
        drop(events);
        let host = start.elapsed();
        last.wait()?;
        Ok([host, start.elapsed()])
    };
    for _ in 0..10 {
        chain()?;
    }
    let (mut host, mut wall) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..chains {
        let [h, w] = chain()?;
        host += h;
        wall += w;
    }
    let launches = (n * chains).max(1) as f64;
    let shape = if fork_join { "fork-join" } else { "chain" };
    println!(
        "{device}: {chains} {shape}s of {n} eager launches of `empty`: host {:.3} µs, wall {:.3} µs per launch",
        host.as_secs_f64() * 1e6 / launches,
        wall.as_secs_f64() * 1e6 / launches
    );
    Ok(())
}
