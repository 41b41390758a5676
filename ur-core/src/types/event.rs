//! Plain event types: status and profiling timestamps.

/// Execution status of an event's command (`ur_event_status_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventStatus {
    /// Waiting for its dependencies.
    Queued,
    /// Submitted to the device.
    Submitted,
    /// Running.
    Running,
    /// Finished successfully.
    Complete,
    /// Finished with an error ([`Event::wait`](crate::Event::wait) returns it).
    Error,
}

impl EventStatus {
    /// Complete or failed: nothing more will happen.
    pub fn is_terminal(self) -> bool {
        matches!(self, EventStatus::Complete | EventStatus::Error)
    }
}

/// Profiling timestamps of a command, in nanoseconds of one device clock
/// (`UR_PROFILING_INFO_COMMAND_*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProfilingInfo {
    /// When the command was queued.
    pub queued: u64,
    /// When it was submitted to the device.
    pub submit: u64,
    /// When it started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}
