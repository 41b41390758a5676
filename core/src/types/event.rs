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

impl ProfilingInfo {
    /// The times of a timestamp recording (`urEnqueueTimestampRecordingExp`),
    /// as the header gives them: queued and submit are both the device-clock
    /// time of the call, start and end both the time the device recorded.
    /// The call cannot come after the recording, so a call time estimated
    /// from another clock is bounded by it.
    pub fn recording(call: u64, recorded: u64) -> ProfilingInfo {
        let call = call.min(recorded);
        ProfilingInfo { queued: call, submit: call, start: recorded, end: recorded }
    }
}
