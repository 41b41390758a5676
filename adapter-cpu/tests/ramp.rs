//! A command-buffer run whose roots need every worker at once starts them
//! all, even when the workers have parked: the roots reach the pool as one
//! span that its takers split, and its bursts must wake the parked workers
//! (the lookers alone are too few). Its own test binary, so that the thread
//! count applies to this process only.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Kernel, KernelLaunch, KernelSignature, NativeKernel,
    Program, ProgramBundle, ProgramSource, Queue, QueueProperties, WorkGroup,
};

const THREADS: usize = 8;
static ARRIVED: AtomicUsize = AtomicUsize::new(0);
static TIMED_OUT: AtomicBool = AtomicBool::new(false);

/// Waits until `THREADS` launches of this replay have arrived (a barrier
/// that gives up after a while, so that a missing worker fails the test
/// instead of hanging it).
fn rendezvous(_: &WorkGroup<'_>) {
    let me = ARRIVED.fetch_add(1, Ordering::SeqCst) + 1;
    let all = me.div_ceil(THREADS) * THREADS;
    let start = Instant::now();
    while ARRIVED.load(Ordering::SeqCst) < all {
        if start.elapsed() > Duration::from_secs(10) {
            TIMED_OUT.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::yield_now();
    }
}

#[test]
fn the_roots_of_a_replay_wake_every_parked_worker() {
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var(cmdbuf_cpu::THREADS_ENV, THREADS.to_string()) };
    let device = cmdbuf_cpu::default_device();
    assert_eq!(device.info().max_compute_units as usize, THREADS);
    let context = Context::new(&device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("rendezvous", []))
        .source(ProgramSource::Native(vec![NativeKernel::new("rendezvous", rendezvous)]));
    let program = Program::new(&context, &bundle).unwrap();
    let kernel = Kernel::new(&program, "rendezvous").unwrap();
    let launch = KernelLaunch::new(&kernel, &[1], &[]);
    let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
    for _ in 0..THREADS {
        // SAFETY: the kernel touches no memory.
        unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new()) }.unwrap();
    }
    cb.finalize().unwrap();
    for replay in 0..10 {
        // Long enough for every worker to stop looking and park.
        std::thread::sleep(Duration::from_millis(20));
        queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
        assert!(!TIMED_OUT.load(Ordering::SeqCst), "replay {replay}: not every worker ran at once");
    }
    assert_eq!(ARRIVED.load(Ordering::SeqCst), 10 * THREADS);
}
