//! 16 threads on one executable graph (explicit graph API): a kernel node
//! whose target is a dynamic parameter, then a host task. Each thread
//! points the parameter at its own target and updates the executable graph
//! (two steps: another thread may come between them, so a submission adds
//! to whichever target was current), enqueues it, and waits, drops or
//! chains the event. Its own file, so the graph layer's imports can move
//! with it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cmdbuf::{Event, Kernel, KernelArg, KernelLaunch, Queue, QueueProperties, UsmAllocation};
use cmdbuf_runtime::graph::{DynamicParameter, FinalizeProperties, Graph, GraphProperties, NodeProperties};

use crate::support::{Failure, Fixture, on_threads, per_fixture, usm_with};
use crate::{ROUNDS, THREADS, check_targets};

const N: usize = 16;

struct State {
    targets: Vec<UsmAllocation>,
    queues: Vec<Queue>,
    kernel: Kernel,
    host_runs: Arc<AtomicUsize>,
}

fn state(fx: &Arc<Fixture>) -> Result<Arc<State>, Failure> {
    per_fixture(fx, || {
        let targets = (0..THREADS).map(|_| usm_with(fx, &[0; N])).collect::<cmdbuf::Result<Vec<_>>>()?;
        let queues =
            (0..4).map(|_| Queue::new(&fx.context, QueueProperties::default())).collect::<cmdbuf::Result<Vec<_>>>()?;
        let kernel = Kernel::new(&fx.program, "increment")?;
        Ok(State { targets, queues, kernel, host_runs: Arc::default() })
    })
}

/// One repetition: a new graph, 16 threads, then the check of every
/// submission so far.
pub fn repetition(fx: &Arc<Fixture>, repetition: usize) -> Result<(), Failure> {
    let s = state(fx)?;
    let graph = Graph::new(&fx.context, &fx.device, GraphProperties::default())?;
    let target = DynamicParameter::new(&graph, KernelArg::Pointer(s.targets[0].ptr()))?;
    let arg = [KernelArg::Pointer(s.targets[0].ptr())];
    let node = graph.add(
        |h| {
            h.set_arg(0, &target)?;
            // SAFETY: increment over N items; every target holds N u32s.
            unsafe { h.launch(&KernelLaunch::new(&s.kernel, &[N], &arg)) }
        },
        NodeProperties::new(),
    )?;
    let runs = s.host_runs.clone();
    graph.add(
        move |h| {
            h.host_task(move || {
                runs.fetch_add(1, Ordering::SeqCst);
            })
        },
        NodeProperties::new().depends_on(&[&node]),
    )?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    let result = on_threads(THREADS, |t| {
        let queue = &s.queues[t % s.queues.len()];
        let mut pending: Option<Event> = None;
        for round in 0..ROUNDS {
            // SAFETY: every target holds N u32s.
            unsafe { target.update(KernelArg::Pointer(s.targets[t].ptr()))? };
            exec.update(&node)?;
            let wait: Vec<&Event> = pending.iter().collect();
            let event = exec.enqueue_on(queue, &wait)?;
            pending = None;
            match (t + round + repetition) % 3 {
                0 => event.wait()?,
                1 => drop(event),
                _ => pending = Some(event),
            }
        }
        Ok(())
    });
    // Released while its last submissions may still run.
    drop(exec);
    result?;
    for q in &s.queues {
        q.finish()?;
    }
    let submissions = (repetition + 1) * THREADS * ROUNDS;
    let weights = vec![1u32; THREADS];
    check_targets(fx, &s.targets, &weights, N, submissions)?;
    let host = s.host_runs.load(Ordering::SeqCst);
    if host != submissions {
        return Err(Failure::Wrong(format!("the host task ran {host} times; {submissions} submissions were made")));
    }
    Ok(())
}
