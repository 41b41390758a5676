//! An event that stands for the latest execution of a recorded command.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::adapter::EventImpl;
use crate::error::Result;
use crate::types::event::{EventStatus, ProfilingInfo};

/// A command-buffer command's signal event: the event of the command's
/// latest execution, re-pointed at each enqueue, and complete before the
/// first (waiting on a command that never ran waits for nothing).
///
/// `E` is the event type the executions produce: `dyn EventImpl` for the
/// software command buffer, an adapter's own event type where it resolves
/// signal events to its native events itself.
pub struct ForwardingEvent<E: ?Sized> {
    current: Mutex<Option<Arc<E>>>,
}

impl<E: ?Sized> Default for ForwardingEvent<E> {
    fn default() -> Self {
        ForwardingEvent { current: Mutex::new(None) }
    }
}

impl<E: ?Sized> ForwardingEvent<E> {
    /// Points the event at a new execution.
    pub fn set(&self, event: Arc<E>) {
        *self.current.lock() = Some(event);
    }

    /// The latest execution's event, `None` before the first.
    pub fn current(&self) -> Option<Arc<E>> {
        self.current.lock().clone()
    }
}

impl<E: EventImpl + ?Sized> EventImpl for ForwardingEvent<E> {
    fn status(&self) -> EventStatus {
        self.current().map_or(EventStatus::Complete, |e| e.status())
    }

    fn wait(&self) -> Result<()> {
        self.current().map_or(Ok(()), |e| e.wait())
    }

    fn profiling(&self) -> Option<ProfilingInfo> {
        self.current().and_then(|e| e.profiling())
    }
}
