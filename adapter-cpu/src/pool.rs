//! The persistent worker pool and the clock of profiling timestamps.

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

/// The timebase of profiling info: the host clock, so that the device's
/// clock and the host's are one (`urDeviceGetGlobalTimestamps`).
pub(crate) fn now_ns() -> u64 {
    ur_core::host_clock_ns()
}
