//! The fault sweep (issue 16, part 1): each scenario runs once per adapter
//! call it makes, with that call failing as a driver's would (out of device
//! or host memory, out of resources, device lost; see
//! `cmdbuf_core::faults::CallKind::driver_error`), on the first device of cpu, OpenCL
//! (PoCL) and Vulkan (lavapipe), native and emulated views. Each time:
//! the caller gets the injected error (same code, message naming the failed
//! call); no panic; no hang (each run under a timeout); every adapter object
//! the run made is released (the context's live objects are back to what
//! they were); the same context, queue and device then run the scenario
//! correctly. The figures (calls injected, failures surfaced, leaks, hangs)
//! are printed per trial and in total. The buffer scenario runs on two
//! devices at once, each in its own context, with faults injected into the
//! calls of both. An absent device is listed ignored
//! with the reason, or fails when `UR_RS_REQUIRE_DEVICES` names its backend.

#[path = "faults/buffer_devices.rs"]
mod buffer_devices;
#[path = "faults/capture.rs"]
mod capture;
#[path = "faults/command_buffer.rs"]
mod command_buffer;
mod support;
#[path = "faults/sycl_graph.rs"]
mod sycl_graph;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cmdbuf::{CommandBufferSupport, Device, UrError};
use cmdbuf_core::faults::{CallKind, Fault, FaultInjector, LiveObjects, live_objects};
use libtest_mimic::{Arguments, Failed, Trial};
use parking_lot::Mutex;

use support::{Failure, Fixture};

/// A scenario, given one fixture per device of its trial.
type Scenario = fn(&[Fixture]) -> Result<(), Failure>;

/// The scenarios swept on one device, by name.
const SCENARIOS: [(&str, Scenario); 3] = [
    ("command_buffer", |fx| command_buffer::scenario(&fx[0])),
    ("sycl_graph", |fx| sycl_graph::scenario(&fx[0])),
    ("capture", |fx| capture::scenario(&fx[0])),
];

/// The scenario swept on two devices (of two backends) at once.
const BUFFER_DEVICES: (&str, Scenario) = ("buffer_devices", |fx| buffer_devices::scenario(&fx[0], &fx[1]));

/// Set (to anything) to print each injection before its run: what to look
/// at when a run crashes the process.
const TRACE_ENV: &str = "UR_FAULTS_TRACE";
/// How long one run may take before it counts as a hang (2 cores, shared).
const TIMEOUT: Duration = Duration::from_secs(60);
/// How long released objects may take to be dropped by adapter threads.
const SETTLE: Duration = Duration::from_secs(5);

/// The sweep's figures.
#[derive(Copy, Clone, Debug, Default)]
struct Tally {
    /// Runs in which the armed fault was injected.
    injected: u64,
    /// Of those, runs whose caller got the injected error.
    surfaced: u64,
    /// Of those, runs where the failed call could not matter and the
    /// results were exact (see [`absorbable`]).
    absorbed: u64,
    /// Runs that left adapter objects alive.
    leaks: u64,
    /// Runs that did not end within the timeout.
    hangs: u64,
    /// Runs that panicked.
    panics: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.injected += other.injected;
        self.surfaced += other.surfaced;
        self.absorbed += other.absorbed;
        self.leaks += other.leaks;
        self.hangs += other.hangs;
        self.panics += other.panics;
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} calls injected, {} failures surfaced, {} absorbed, {} leaks, {} hangs, {} panics",
            self.injected, self.surfaced, self.absorbed, self.leaks, self.hangs, self.panics
        )
    }
}

static TOTAL: Mutex<Tally> = Mutex::new(Tally { injected: 0, surfaced: 0, absorbed: 0, leaks: 0, hangs: 0, panics: 0 });

fn main() {
    let args = Arguments::from_args();
    cmdbuf_conformance::quiet_adapter_worker_panics();
    let mut trials = Vec::new();
    let devices = support::devices();
    for (backend, device) in devices.iter().cloned() {
        match device {
            Ok(device) => {
                let mut views = vec![device.clone()];
                if device.info().command_buffer.support == CommandBufferSupport::Native {
                    views.push(device.emulated());
                }
                for view in views {
                    for (name, scenario) in SCENARIOS {
                        let view = view.clone();
                        trials.push(Trial::test(format!("[{view}] faults::{name}"), move || {
                            sweep(&[view], name, scenario)
                        }));
                    }
                }
            }
            Err(reason) => {
                for (name, _) in SCENARIOS {
                    trials.push(support::absent_trial(format!("[{backend}] faults::{name}"), backend, &reason));
                }
            }
        }
    }
    // Each backend's device with the next one's, in a ring: every device
    // is once the first (written first) and once the second.
    for (i, (backend, first)) in devices.iter().enumerate() {
        let (peer, second) = &devices[(i + 1) % devices.len()];
        let (name, scenario) = BUFFER_DEVICES;
        let title = format!("[{backend} -> {peer}] faults::{name}");
        match (first, second) {
            (Ok(first), Ok(second)) => {
                let pair = [first.clone(), second.clone()];
                trials.push(Trial::test(title, move || sweep(&pair, name, scenario)));
            }
            (Err(reason), _) => trials.push(support::absent_trial(title, *backend, reason)),
            (_, Err(reason)) => trials.push(support::absent_trial(title, *peer, reason)),
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    eprintln!("fault sweep, all trials run: {}", TOTAL.lock());
    conclusion.exit();
}

/// How a run ended.
enum Run {
    Done(Result<(), Failure>),
    Panicked(String),
    Hung,
}

/// Runs `scenario` on a thread of its own, under [`TIMEOUT`].
fn run_timed(fx: &Arc<Vec<Fixture>>, scenario: Scenario) -> Run {
    let (tx, rx) = mpsc::channel();
    let fixture = fx.clone();
    std::thread::spawn(move || {
        let result = catch_unwind(AssertUnwindSafe(|| scenario(&fixture)));
        let _ = tx.send(result.map_err(|p| cmdbuf::error::panic_message(&*p)));
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok(Ok(result)) => Run::Done(result),
        Ok(Err(message)) => Run::Panicked(message),
        Err(_) => Run::Hung,
    }
}

/// The live objects of the fixtures' contexts once they are `want`, or
/// what they are after [`SETTLE`] (adapter threads may drop their last
/// handles a little after the queue finishes).
fn settle(fx: &[Fixture], want: &[LiveObjects]) -> Vec<LiveObjects> {
    let start = Instant::now();
    loop {
        let now: Vec<_> =
            fx.iter().map(|f| live_objects(&f.context).expect("the fixture's device is wrapped")).collect();
        if now == want || start.elapsed() > SETTLE {
            return now;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a failure of `kind`, on the thread named `thread`, may leave the
/// caller's run unaffected, its results exact: a host task's wait for its
/// dependencies (on its `ur-host-task` thread) that failed after they had
/// ended, so the order held; an event callback's wait (on its
/// `ur-event-callback` thread: a buffer's dependency on another context's
/// event), which reports the event's status, not the wait's error, and
/// runs the callback only once the event has ended; or a queue's `finish` at its release (an
/// executable graph's worker queue), which a drop cannot return (cmdbuf-core logs
/// it). Every other failure must reach the caller.
fn absorbable(kind: CallKind, thread: Option<&str>) -> bool {
    match kind {
        CallKind::EventWait => matches!(thread, Some("ur-host-task" | "ur-event-callback")),
        CallKind::Finish => true,
        _ => false,
    }
}

/// Whether `got` is the injected error `fired`: same code, same message
/// (the front end may put the step before it).
fn is_injected(got: &UrError, fired: &UrError) -> bool {
    got.ur_code() == fired.ur_code() && got.detail().message.contains(&*fired.detail().message)
}

/// Sweeps `scenario` over the adapter calls it makes on `devices` (one
/// fixture each, all wrapped by one injector, so that call `n` of a kind is
/// counted across them).
fn sweep(devices: &[Device], name: &str, scenario: Scenario) -> Result<(), Failed> {
    let injector = FaultInjector::new();
    let fx = devices
        .iter()
        .map(|d| Fixture::new(&injector.wrap_device(d)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("fixture: {e}"))?;
    let fx = Arc::new(fx);
    let device = fx.iter().map(|f| f.device.to_string()).collect::<Vec<_>>().join(" -> ");
    let before = injector.all_calls();
    match run_timed(&fx, scenario) {
        Run::Done(Ok(())) => {}
        Run::Done(Err(e)) => return Err(format!("the scenario fails without faults: {e}").into()),
        Run::Panicked(m) => return Err(format!("the scenario panics without faults: {m}").into()),
        Run::Hung => return Err("the scenario hangs without faults".into()),
    }
    let made: Vec<_> = before.iter().zip(injector.all_calls()).map(|(&(kind, b), (_, a))| (kind, a - b)).collect();
    for f in fx.iter() {
        f.queue.finish().map_err(|e| format!("finish: {e}"))?;
    }
    let baseline = settle(&fx, &vec![LiveObjects::default(); fx.len()]);

    let mut tally = Tally::default();
    let mut problems = Vec::new();
    // Calls of a clean run armed as faults that were then never
    // made: the count of a kind can vary between runs (waits on events that
    // had already ended are not always made).
    let mut not_reached = 0u64;
    for &(kind, calls) in &made {
        for nth in 1..=calls {
            let at = format!("{kind} call {nth}");
            if std::env::var_os(TRACE_ENV).is_some() {
                eprintln!("[{device}] injecting: {at}");
            }
            injector.arm(Fault::new(kind, nth));
            let run = run_timed(&fx, scenario);
            let fired = injector.disarm();
            let result = match run {
                Run::Done(result) => result,
                Run::Panicked(m) => {
                    tally.panics += 1;
                    problems.push(format!("{at}: panicked: {m}"));
                    continue;
                }
                Run::Hung => {
                    // The hung run still holds the fixture: nothing after
                    // it would be meaningful.
                    tally.hangs += 1;
                    problems.push(format!("{at}: no end after {TIMEOUT:?}"));
                    break;
                }
            };
            match (&fired, result) {
                (None, Ok(())) => not_reached += 1,
                (None, Err(e)) => problems.push(format!("{at}: not reached, yet the run failed: {e}")),
                (Some(_), Ok(())) if absorbable(kind, injector.fired_on().as_deref()) => {
                    tally.injected += 1;
                    tally.absorbed += 1;
                }
                (Some(fired), Ok(())) => {
                    tally.injected += 1;
                    problems.push(format!("{at}: the injected {} was swallowed", fired.ur_name()));
                }
                (Some(fired), Err(Failure::Ur(e))) if is_injected(&e, fired) => {
                    tally.injected += 1;
                    tally.surfaced += 1;
                }
                (Some(fired), Err(e)) => {
                    tally.injected += 1;
                    problems.push(format!("{at}: injected {fired}; the caller got {e}"));
                }
            }
            for f in fx.iter() {
                if let Err(e) = f.queue.finish() {
                    problems.push(format!("{at}: the queue of {} does not finish afterwards: {e}", f.device));
                }
            }
            let live = settle(&fx, &baseline);
            if live != baseline {
                tally.leaks += 1;
                problems.push(format!("{at}: live objects {live:?}, {baseline:?} before"));
            }
            match run_timed(&fx, scenario) {
                Run::Done(Ok(())) => {}
                Run::Done(Err(e)) => problems.push(format!("{at}: the next run without faults fails: {e}")),
                Run::Panicked(m) => problems.push(format!("{at}: the next run without faults panics: {m}")),
                Run::Hung => {
                    tally.hangs += 1;
                    problems.push(format!("{at}: the next run without faults hangs"));
                    break;
                }
            }
        }
    }
    let calls: u64 = made.iter().map(|(_, n)| n).sum();
    eprintln!(
        "[{device}] faults::{name}: {calls} adapter calls in a clean run, {not_reached} not reached again; {tally}"
    );
    TOTAL.lock().add(&tally);
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
}
