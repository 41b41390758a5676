//! Long-lived host threads for the front end's host-side work: host tasks
//! (`Queue::enqueue_host_task`) and event callbacks (`Event::on_complete`).
//!
//! A thread is reused for the next job once its job has returned, instead of
//! one new thread per job. Drivers keep state per thread that has called
//! them: NVIDIA's Vulkan driver kept a few hundred bytes for every thread
//! that ever submitted work (a host task completing its event submits the
//! work after it, on that thread), until the process exited, and then took
//! tens of seconds to exit (issue 16: +65 MiB over a million submissions of
//! the soak, one host-task thread per graph submission). A job may block
//! for as long as it likes: a job finding no idle thread gets a new one, so
//! jobs never wait for each other. An idle thread ends after [`KEEP_ALIVE`].

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::Result;

/// How long an idle thread waits for a job before it ends.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(30);

type Job = Box<dyn FnOnce() + Send>;

/// Threads of one name and the jobs waiting for one of them.
pub(crate) struct HostThreads {
    name: &'static str,
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
}

/// Host tasks' threads (named `ur-host-task`).
pub(crate) static HOST_TASKS: HostThreads = HostThreads::new("ur-host-task");
/// Event callbacks' threads (named `ur-event-callback`).
pub(crate) static CALLBACKS: HostThreads = HostThreads::new("ur-event-callback");

impl HostThreads {
    const fn new(name: &'static str) -> HostThreads {
        HostThreads { name, state: Mutex::new(State { jobs: VecDeque::new(), idle: 0 }), wake: Condvar::new() }
    }

    /// Runs `job` on an idle thread, or on a new one when none is idle.
    /// `OutOfResources` when a thread is needed and cannot be started.
    pub(crate) fn run(&'static self, job: impl FnOnce() + Send + 'static) -> Result<()> {
        let mut state = self.state.lock();
        // Each queued job has a waiting thread of its own, which it wakes:
        // jobs never wait for each other (one may block until another ran).
        let waiting_for_it = state.idle > state.jobs.len();
        state.jobs.push_back(Box::new(job));
        if waiting_for_it {
            self.wake.notify_one();
            return Ok(());
        }
        drop(state);
        let started = std::thread::Builder::new().name(self.name.into()).spawn(move || self.work());
        match started {
            Ok(_) => Ok(()),
            Err(e) => {
                // No thread was waiting for the job: take it back.
                self.state.lock().jobs.pop_back();
                Err(crate::err!(OutOfResources, "cannot start a {} thread: {e}", self.name))
            }
        }
    }

    /// A thread's loop: jobs until none comes for [`KEEP_ALIVE`].
    fn work(&self) {
        let mut state = self.state.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                drop(state);
                // A job's panic ends the job, not the thread (a host task
                // catches its own; a user's event callback may not).
                if let Err(payload) = catch_unwind(AssertUnwindSafe(job)) {
                    let panic = crate::error::panic_message(&*payload);
                    tracing::error!(thread = self.name, %panic, "a host job panicked");
                }
                state = self.state.lock();
                continue;
            }
            state.idle += 1;
            let timed_out = self.wake.wait_for(&mut state, KEEP_ALIVE).timed_out();
            state.idle -= 1;
            if timed_out && state.jobs.is_empty() {
                return;
            }
        }
    }
}
