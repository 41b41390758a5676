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
//! runtime that returns each launch's event do. Prints the mean host time
//! per launch, and the wall time to the last one's completion.

use std::time::{Duration, Instant};

use cmdbuf::{Context, Kernel, KernelLaunch, Program, Queue, QueueProperties, UrError};

fn main() -> Result<(), UrError> {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, chains) = (number(1000).max(1), number(100));
    let keep = args.next().is_some_and(|a| a == "keep");
    let loader = cmdbuf::load()?;
    let device = loader.first_device()?;
    let context = Context::new(&device)?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let library = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
    let empty = Kernel::new(&library, "empty")?;
    let launch = KernelLaunch::new(&empty, &[1], &[]);
    let chain = || -> Result<[Duration; 2], UrError> {
        let start = Instant::now();
        let mut events = Vec::with_capacity(if keep { n } else { 1 });
        for _ in 0..n {
            if !keep {
                events.clear();
            }
            // SAFETY: `empty` touches no memory.
            events.push(unsafe { queue.launch_kernel(&launch, &[])? });
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
    println!(
        "{device}: {chains} chains of {n} eager launches of `empty`: host {:.3} µs, wall {:.3} µs per launch",
        host.as_secs_f64() * 1e6 / launches,
        wall.as_secs_f64() * 1e6 / launches
    );
    Ok(())
}
