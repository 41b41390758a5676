//! Replay and launch latency of the CPU adapter, measured without the
//! benchmark harness: a quick check while tuning the executor
//! (`cargo run --release -p cmdbuf-cpu --example latency`).
//! `cmdbuf-bench --only cpu_per_node --only submission` gives the figures that
//! docs/performance.md reports.

use std::time::{Duration, Instant};

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, KernelLaunch, KernelSignature, NativeKernel, Program,
    ProgramBundle, ProgramSource, Queue, QueueProperties, WorkGroup,
};

fn empty(_: &WorkGroup<'_>) {}

/// The median of `samples` runs of `f`, after a few unmeasured ones.
fn median(samples: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..samples / 10 + 1 {
        f();
    }
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[samples / 2]
}

fn main() {
    let device = cmdbuf_cpu::default_device();
    let context = Context::new(&device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("empty", []))
        .source(ProgramSource::Native(vec![NativeKernel::new("empty", empty)]));
    let program = Program::new(&context, &bundle).unwrap();
    let kernel = cmdbuf_core::Kernel::new(&program, "empty").unwrap();
    let launch = KernelLaunch::new(&kernel, &[1], &[]);
    println!("{}", device.info().name);
    // An optional argument scales the number of samples (for profiling).
    let scale: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);

    // SAFETY: `empty` touches no memory.
    let one = median(2000 * scale, || unsafe { queue.launch_kernel(&launch, &[]) }.unwrap().wait().unwrap());
    println!("one kernel, enqueue to completion: {one:?}");
    // The submitting thread's share: the enqueue call alone.
    let mut host: Vec<Duration> = (0..2000 * scale)
        .map(|_| {
            let start = Instant::now();
            // SAFETY: as above.
            let event = unsafe { queue.launch_kernel(&launch, &[]) }.unwrap();
            let host = start.elapsed();
            event.wait().unwrap();
            host
        })
        .collect();
    host.sort();
    println!("one kernel, the enqueue call alone: {:?}", host[host.len() / 2]);
    // Eager submission: the host's share of each kernel of an in-order
    // stream of 1000, which the workers run while the host enqueues.
    let mut host: Vec<Duration> = (0..20 * scale)
        .map(|_| {
            let start = Instant::now();
            let mut last = None;
            for _ in 0..1000 {
                // SAFETY: as above.
                last = Some(unsafe { queue.launch_kernel(&launch, &[]) }.unwrap());
            }
            let host = start.elapsed() / 1000;
            last.expect("1000 launches").wait().unwrap();
            host
        })
        .collect();
    host.sort();
    println!("eager chain of 1000, host time per kernel: {:?}", host[host.len() / 2]);
    let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
    // SAFETY: as above.
    unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new()) }.unwrap();
    cb.finalize().unwrap();
    let one = median(2000 * scale, || queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap());
    println!("one-node command buffer, enqueue to completion: {one:?}");
    let one = median(2000 * scale, || {
        let event = queue.enqueue_command_buffer(&cb, &[]).unwrap();
        while !event.status().is_terminal() {
            std::thread::yield_now();
        }
    });
    println!("one-node command buffer, run by a worker: {one:?}");

    const N: u32 = 1024;
    for (shape, chain) in [("chain", true), ("wide", false)] {
        let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
        let mut last = None;
        for _ in 0..N {
            let deps: Vec<_> = if chain { last.into_iter().collect() } else { Vec::new() };
            // SAFETY: as above.
            let a = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&deps)) }.unwrap();
            last = Some(a.sync_point);
        }
        cb.finalize().unwrap();
        let t = median(500 * scale, || queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap());
        println!("{N}-node {shape}: {:.1} ns/node", t.as_nanos() as f64 / f64::from(N));
        // Polling the status instead of waiting leaves the replay to the workers.
        let t = median(500 * scale, || {
            let event = queue.enqueue_command_buffer(&cb, &[]).unwrap();
            while !event.status().is_terminal() {
                std::thread::yield_now();
            }
        });
        println!("{N}-node {shape}, run by the workers: {:.1} ns/node", t.as_nanos() as f64 / f64::from(N));
    }
}
