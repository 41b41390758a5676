//! The persistent worker pool and the clock of profiling timestamps.

use std::sync::OnceLock;
use std::time::Instant;

/// Workers that run commands, command-buffer nodes and work-groups.
pub(crate) struct Pool {
    workers: rayon::ThreadPool,
}

impl Pool {
    pub(crate) fn new(threads: usize) -> Result<Pool, String> {
        let workers = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ur-cpu-{i}"))
            // Tasks catch kernel panics themselves; anything else reaching here
            // is a bug in this crate, logged rather than aborting the process.
            .panic_handler(|_| tracing::error!("a CPU adapter task panicked outside kernel code"))
            .build()
            .map_err(|e| format!("cannot start the worker pool: {e}"))?;
        Ok(Pool { workers })
    }

    pub(crate) fn threads(&self) -> usize {
        self.workers.current_num_threads()
    }

    /// Runs `task` on a worker, without waiting for it.
    pub(crate) fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        self.workers.spawn(task);
    }
}

/// Nanoseconds since the adapter's clock started: the timebase of profiling info.
pub(crate) fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}
