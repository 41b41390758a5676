//! 16 threads on one updatable command buffer: each thread points the
//! buffer's `axpb` launch at its own target with its own weight (one update,
//! so the pair stays together), enqueues it on one of four queues, and
//! waits for the event, drops it, or makes its next enqueue wait on it;
//! handles of the buffer are cloned and dropped meanwhile, and the buffer
//! is released while its last submissions may still run.

use std::sync::Arc;

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Event, Kernel, KernelArg, KernelLaunch, KernelLaunchUpdate, Queue,
    QueueProperties, UsmAllocation,
};

use crate::support::{Failure, Fixture, on_threads, per_fixture, usm_with};
use crate::{ROUNDS, THREADS, check_targets};

const N: usize = 16;

/// What every repetition of one device shares.
struct State {
    targets: Vec<UsmAllocation>,
    weights: Vec<u32>,
    queues: Vec<Queue>,
    kernel: Kernel,
}

fn state(fx: &Arc<Fixture>) -> Result<Arc<State>, Failure> {
    per_fixture(fx, || {
        let targets = (0..THREADS).map(|_| usm_with(fx, &[0; N])).collect::<cmdbuf::Result<Vec<_>>>()?;
        let weights = (1..=THREADS as u32).collect();
        let queues =
            (0..4).map(|_| Queue::new(&fx.context, QueueProperties::default())).collect::<cmdbuf::Result<Vec<_>>>()?;
        let kernel = Kernel::new(&fx.program, "axpb")?;
        Ok(State { targets, weights, queues, kernel })
    })
}

/// One repetition: a new buffer, 16 threads, then the check of every
/// submission so far.
pub fn repetition(fx: &Arc<Fixture>, repetition: usize) -> Result<(), Failure> {
    let s = state(fx)?;
    let cb = CommandBuffer::new(&fx.context, &fx.device, CommandBufferDesc { updatable: true, ..Default::default() })?;
    let one = 1u32;
    let args = [KernelArg::Pointer(s.targets[0].ptr()), KernelArg::value(&one), KernelArg::value(&s.weights[0])];
    // SAFETY: axpb over N items of N-u32 targets; every update names another N-u32 target.
    let handle =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&s.kernel, &[N], &args), &[], AppendOptions::new())? }
            .command
            .ok_or_else(|| Failure::Wrong("an updatable command buffer returned no handle".into()))?;
    cb.finalize()?;
    let result = on_threads(THREADS, |t| {
        // Each thread retains the buffer, and releases it at its end.
        let cb = cb.clone();
        let queue = &s.queues[t % s.queues.len()];
        let mut pending: Option<Event> = None;
        for round in 0..ROUNDS {
            // SAFETY: the target holds N u32s, as the launch covers.
            unsafe {
                cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle)
                    .arg(0, KernelArg::Pointer(s.targets[t].ptr()))
                    .arg(2, KernelArg::value(&s.weights[t]))])?
            };
            let wait: Vec<&Event> = pending.iter().collect();
            let event = queue.enqueue_command_buffer(&cb, &wait)?;
            pending = None;
            match (t + round + repetition) % 4 {
                0 => event.wait()?,
                1 => drop(event),
                2 => pending = Some(event),
                _ => {
                    // A retain and release while it may run.
                    let extra = cb.clone();
                    drop(extra);
                    Event::wait_all(&[&event])?;
                }
            }
        }
        Ok(())
    });
    // Released while its last submissions may still run, as UR allows.
    drop(cb);
    result?;
    for q in &s.queues {
        q.finish()?;
    }
    check_targets(fx, &s.targets, &s.weights, N, (repetition + 1) * THREADS * ROUNDS)
}
