//! The queue handle.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::handle::Handle;
use crate::objects::context::ContextRef;
use crate::objects::device::DeviceRef;
use crate::sys::*;

/// A queue of a context.
pub struct Queue {
    pub(crate) queue: cmdbuf_core::Queue,
    pub(crate) context: ContextRef,
    /// The device handle the queue was made for, when it is a sub-device of
    /// the context's device (`UR_QUEUE_INFO_DEVICE` answers it).
    pub(crate) sub_device: Option<DeviceRef>,
    pub(crate) flags: ur_queue_flags_t,
    /// Held while one of the queue's `urEnqueueHostTaskExp` functions runs.
    pub(crate) host_turn: Arc<Mutex<()>>,
}

impl Queue {
    /// A queue handle's value for a cmdbuf-core queue of `context`, with the
    /// flags of its properties (an adopted queue).
    pub(crate) fn from_core(queue: cmdbuf_core::Queue, context: ContextRef) -> Queue {
        let props = queue.properties();
        let mut flags = 0;
        if props.out_of_order {
            flags |= ur_queue_flag_t::UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE.0;
        }
        if props.profiling {
            flags |= ur_queue_flag_t::UR_QUEUE_FLAG_PROFILING_ENABLE.0;
        }
        Queue { queue, context, sub_device: None, flags, host_turn: Arc::default() }
    }

    /// Taken while one of the queue's host functions runs: UR's host tasks
    /// of one queue never run at the same time, out of order included (as
    /// Level Zero's and CUDA's host functions on the driver's callback
    /// thread; UR's multithreaded conformance case counts with a plain
    /// `int` from them). cmdbuf-core's host tasks, which SYCL's are, may.
    pub(crate) fn host_turn(&self) -> Arc<Mutex<()>> {
        self.host_turn.clone()
    }

    /// The cmdbuf-core queue.
    pub(crate) fn core(&self) -> &cmdbuf_core::Queue {
        &self.queue
    }

    /// The queue's context handle.
    pub(crate) fn context(&self) -> &ContextRef {
        &self.context
    }
}

/// Keeps a queue handle alive for objects that refer to it.
pub(crate) type QueueRef = Arc<Handle<Queue>>;
