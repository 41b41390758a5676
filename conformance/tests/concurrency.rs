//! The concurrency test (issue 16, part 3): 16 threads mix enqueues,
//! updates, event waits and drops on one updatable command buffer, and on
//! one executable graph (explicit graph API), repeated 200 times, with exact
//! results, on the first device of cpu, OpenCL (PoCL) and Vulkan
//! (lavapipe). Each repetition runs under a timeout, so a deadlock fails the
//! test instead of hanging it. An absent device is listed ignored with the
//! reason, or fails when `UR_RS_REQUIRE_DEVICES` names its backend.
//!
//! Results are exact whatever the interleaving: every submission adds to
//! whichever target the buffer's (or graph's) arguments named at its
//! enqueue, so the per-target sums must add up to the number of submissions.

#[path = "concurrency/command_buffer.rs"]
mod command_buffer;
#[path = "concurrency/contexts.rs"]
mod contexts;
#[path = "concurrency/graph.rs"]
mod graph;
mod support;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cmdbuf::{CommandBufferSupport, Device};
use libtest_mimic::{Arguments, Failed, Trial};

use support::{Failure, Fixture};

/// Threads per repetition.
pub const THREADS: usize = 16;
/// Repetitions per test.
pub const REPETITIONS: usize = 200;
/// Submissions per thread and repetition.
pub const ROUNDS: usize = 2;
/// How long one repetition may take before it counts as a deadlock.
const TIMEOUT: Duration = Duration::from_secs(60);

/// One test: the fixture, then one repetition at a time (its number given).
type Test = fn(&Arc<Fixture>, usize) -> Result<(), Failure>;

/// The tests, by name.
const TESTS: [(&str, Test); 3] = [
    ("command_buffer", command_buffer::repetition),
    ("graph", graph::repetition),
    ("two_contexts", contexts::repetition),
];

fn main() {
    let args = Arguments::from_args();
    cmdbuf_conformance::quiet_adapter_worker_panics();
    let mut trials = Vec::new();
    for (backend, device) in support::devices() {
        for (name, test) in TESTS {
            match &device {
                Ok(device) => {
                    let mut views = vec![device.clone()];
                    if device.info().command_buffer.support == CommandBufferSupport::Native {
                        views.push(device.emulated());
                    }
                    for view in views {
                        let trial = format!("[{view}] concurrency::{name}");
                        trials.push(Trial::test(trial.clone(), move || run(&view, &trial, test)));
                    }
                }
                Err(reason) => {
                    trials.push(support::absent_trial(format!("[{backend}] concurrency::{name}"), backend, reason));
                }
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn run(device: &Device, trial: &str, test: Test) -> Result<(), Failed> {
    let fx = Arc::new(Fixture::new(device).map_err(|e| format!("fixture: {e}"))?);
    let start = Instant::now();
    for repetition in 0..REPETITIONS {
        let (tx, rx) = mpsc::channel();
        let fixture = fx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(test(&fixture, repetition));
        });
        match rx.recv_timeout(TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("repetition {repetition}: {e}").into()),
            // A panic drops the sender.
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(format!("repetition {repetition} panicked").into()),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!("repetition {repetition}: no end after {TIMEOUT:?} (deadlock)").into());
            }
        }
    }
    eprintln!(
        "{trial}: {REPETITIONS} repetitions of {THREADS} threads x {ROUNDS} submissions in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Checks the targets after `submissions` submissions in all: each target's
/// elements are equal, a multiple of its weight, and the multiples add up
/// to `submissions`.
pub fn check_targets(
    fx: &Fixture,
    targets: &[cmdbuf::UsmAllocation],
    weights: &[u32],
    n: usize,
    submissions: usize,
) -> Result<(), Failure> {
    let mut total = 0u64;
    for (t, (target, &w)) in targets.iter().zip(weights).enumerate() {
        let got = support::read_u32(&fx.queue, target.ptr(), n)?;
        if got.iter().any(|&v| v != got[0]) {
            return Err(Failure::Wrong(format!("target {t} has unequal elements: {got:?}")));
        }
        if got[0] % w != 0 {
            return Err(Failure::Wrong(format!("target {t} holds {}, not a multiple of its weight {w}", got[0])));
        }
        total += u64::from(got[0] / w);
    }
    if total != submissions as u64 {
        return Err(Failure::Wrong(format!("the targets count {total} submissions; {submissions} were made")));
    }
    Ok(())
}
