//! Caller-runs: a host thread that waits for a single-threaded command no
//! worker has taken yet runs it itself. With the only worker held by a
//! kernel that spins until released, a kernel on another queue can only
//! complete if the waiting thread runs it. Its own test binary, so the
//! worker count applies to this process only.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Kernel, KernelLaunch, KernelSignature, NativeKernel,
    Program, ProgramBundle, ProgramSource, Queue, QueueProperties, WorkGroup,
};

static STARTED: AtomicBool = AtomicBool::new(false);
static RELEASE: AtomicBool = AtomicBool::new(false);
/// Where `record` last ran: 1 on a worker of the pool, 2 on another thread.
static RAN_ON: AtomicU8 = AtomicU8::new(0);

fn hold(_: &WorkGroup<'_>) {
    STARTED.store(true, Ordering::SeqCst);
    while !RELEASE.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
}

fn record(_: &WorkGroup<'_>) {
    let worker = std::thread::current().name().is_some_and(|n| n.starts_with("ur-cpu-"));
    RAN_ON.store(if worker { 1 } else { 2 }, Ordering::SeqCst);
}

#[test]
fn a_waiting_host_thread_runs_what_no_worker_took() {
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var(cmdbuf_cpu::THREADS_ENV, "1") };
    let device = cmdbuf_cpu::default_device();
    let context = Context::new(&device).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("hold", []))
        .kernel(KernelSignature::new("record", []))
        .source(ProgramSource::Native(vec![NativeKernel::new("hold", hold), NativeKernel::new("record", record)]));
    let program = Program::new(&context, &bundle).unwrap();
    let (hold, record) = (Kernel::new(&program, "hold").unwrap(), Kernel::new(&program, "record").unwrap());
    let busy = Queue::new(&context, QueueProperties::default()).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
    let one = KernelLaunch::new(&record, &[1], &[]);
    // SAFETY: `record` touches no memory.
    unsafe { cb.append_kernel_launch(&one, &[], AppendOptions::new()) }.unwrap();
    cb.finalize().unwrap();

    // SAFETY: `hold` touches no memory.
    let held = unsafe { busy.launch_kernel(&KernelLaunch::new(&hold, &[1], &[]), &[]) }.unwrap();
    while !STARTED.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    // Without caller-runs the waits below would last until this releases
    // the worker, and `record` would then have run on it.
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let _ = finished.recv_timeout(Duration::from_secs(10));
        RELEASE.store(true, Ordering::SeqCst);
    });

    // SAFETY: as above.
    unsafe { queue.launch_kernel(&one, &[]) }.unwrap().wait().unwrap();
    assert_eq!(RAN_ON.swap(0, Ordering::SeqCst), 2, "an eager kernel: run by the waiting thread");
    queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
    assert_eq!(RAN_ON.swap(0, Ordering::SeqCst), 2, "a one-node command buffer: run by the waiting thread");

    drop(done);
    held.wait().unwrap();
    watchdog.join().unwrap();
}
