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
//! Arguments: the launches per chain (default 1000) and the chains (default
//! 100), after 10 unmeasured ones. Prints the mean host time per launch.

use std::time::{Duration, Instant};

use cmdbuf::{Context, Kernel, KernelLaunch, Program, Queue, QueueProperties, UrError};

fn main() -> Result<(), UrError> {
    let mut args = std::env::args().skip(1);
    let mut number = |default: usize| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n, chains) = (number(1000).max(1), number(100));
    let loader = cmdbuf::load()?;
    let device = loader.first_device()?;
    let context = Context::new(&device)?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let library = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
    let empty = Kernel::new(&library, "empty")?;
    let launch = KernelLaunch::new(&empty, &[1], &[]);
    let chain = || -> Result<Duration, UrError> {
        let start = Instant::now();
        let mut last = None;
        for _ in 0..n {
            // SAFETY: `empty` touches no memory.
            last = Some(unsafe { queue.launch_kernel(&launch, &[])? });
        }
        let host = start.elapsed();
        last.expect("n >= 1").wait()?;
        Ok(host)
    };
    for _ in 0..10 {
        chain()?;
    }
    let mut host = Duration::ZERO;
    for _ in 0..chains {
        host += chain()?;
    }
    let launches = (n * chains).max(1) as f64;
    println!(
        "{device}: {chains} chains of {n} eager launches of `empty`: host {:.3} µs per launch",
        host.as_secs_f64() * 1e6 / launches
    );
    Ok(())
}
