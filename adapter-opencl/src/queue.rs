//! Queues: every command is one OpenCL command on the application's queue.
//!
//! An eager command leaves its queue to be flushed where something needs
//! its work started (`flush.rs`); a command-buffer submission flushes at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cmdbuf_core::adapter::prelude::*;

use crate::conv::ClResultExt;
use crate::device::{DeviceShared, Shared, create_queue};
use crate::event::{ClEvent, WaitList};
use crate::exec;
use crate::ffi::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CL_QUEUE_PROFILING_ENABLE, RawEvent};
use crate::flush::DeferredFlush;

pub(crate) struct ClQueue {
    pub(crate) shared: Arc<Shared>,
    queue: opencl3::command_queue::CommandQueue,
    pub(crate) profiling: bool,
    in_order: bool,
    /// The device other than the context's own that the queue runs on (a
    /// sub-device of it, or another device of a context over several), kept
    /// until the queue is released (a sub-device's `cl_device_id` is
    /// released when dropped).
    sub_device: Option<Arc<DeviceShared>>,
    /// The last timestamp recording this queue asked of the context's
    /// profiling queue: `finish` waits for it too, since the application
    /// enqueued it on this queue (the profiling queue is in order, so the
    /// last one completes after the others).
    last_stamp: parking_lot::Mutex<Option<RawEvent>>,
    /// Whether eager commands were enqueued since the queue was last flushed.
    pub(crate) deferred: Arc<DeferredFlush>,
    /// The ticket of the last submission on this queue handed to the
    /// device's replayer (0: none): [`drain`](Self::drain) waits for it.
    handed: AtomicU64,
}

impl ClQueue {
    pub(crate) fn new(shared: Arc<Shared>, properties: QueueProperties) -> Result<ClQueue> {
        let flags = queue_flags(properties, &shared.device);
        let made_in_order = flags & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE == 0;
        let queue = create_queue(&shared.context, &shared.device, flags)?;
        Ok(ClQueue {
            shared,
            profiling: properties.profiling,
            in_order: made_in_order,
            sub_device: None,
            last_stamp: parking_lot::Mutex::default(),
            deferred: DeferredFlush::new(queue.get(), made_in_order),
            handed: AtomicU64::new(0),
            queue,
        })
    }

    /// A queue of the context on `device`, a sub-device of the context's
    /// device. OpenCL lets a queue name a device of the context only; some
    /// drivers (PoCL) also take a sub-device of one, others (Intel's CPU
    /// runtime) answer `CL_INVALID_DEVICE`, which is `UnsupportedFeature`
    /// here: the context would have to have been made with the sub-device.
    pub(crate) fn on_sub_device(
        shared: Arc<Shared>,
        device: Arc<DeviceShared>,
        properties: QueueProperties,
    ) -> Result<ClQueue> {
        let flags = queue_flags(properties, &device);
        let made_in_order = flags & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE == 0;
        let queue = match create_queue(&shared.context, &device, flags) {
            Err(UrError::InvalidDevice(detail)) => {
                return Err(err!(
                    UnsupportedFeature,
                    "this OpenCL driver takes no queue on a sub-device in a context of its parent \
                     (clCreateCommandQueueWithProperties: {detail}); make a context on the sub-device"
                ));
            }
            other => other?,
        };
        Ok(ClQueue {
            shared,
            profiling: properties.profiling,
            in_order: made_in_order,
            sub_device: Some(device),
            last_stamp: parking_lot::Mutex::default(),
            deferred: DeferredFlush::new(queue.get(), made_in_order),
            handed: AtomicU64::new(0),
            queue,
        })
    }

    /// A queue over an adopted `cl_command_queue` of the context's device,
    /// whose reference it owns.
    pub(crate) fn adopt(
        shared: Arc<Shared>,
        raw: cl3::types::cl_command_queue,
        properties: QueueProperties,
    ) -> ClQueue {
        // Work-item dimensions are only used by opencl3's launch helpers, which
        // this adapter does not call.
        let queue = opencl3::command_queue::CommandQueue::new(raw, 3);
        ClQueue {
            shared,
            queue,
            profiling: properties.profiling,
            in_order: !properties.out_of_order,
            sub_device: None,
            last_stamp: parking_lot::Mutex::default(),
            // The application's properties say what it asked for, not what
            // the driver's queue does: its own events stay in wait lists.
            deferred: DeferredFlush::new(raw, false),
            handed: AtomicU64::new(0),
        }
    }

    /// The device the queue runs on: the context's, or the sub-device or
    /// other device of the context it was made on.
    pub(crate) fn device_id(&self) -> cl3::types::cl_device_id {
        self.sub_device.as_ref().map_or(self.shared.device.id, |d| d.id)
    }

    pub(crate) fn raw(&self) -> cl3::types::cl_command_queue {
        self.queue.get()
    }

    /// Whether commands run in enqueue order.
    pub(crate) fn in_order(&self) -> bool {
        self.in_order
    }

    /// Whether the queue was made here without out-of-order execution (not
    /// adopted, whose properties the application states): its launches run
    /// in the order they are enqueued, which
    /// [`crate::one_launch::enqueue_exclusive`] may rely on.
    pub(crate) fn ordered_launches(&self) -> bool {
        self.deferred.in_order
    }

    /// Waits until the replayer has enqueued every submission handed to it
    /// for this queue: a command enqueued here from another thread must come
    /// after them in the driver's queue (`replayer.rs`).
    pub(crate) fn drain(&self) {
        let handed = self.handed.load(Ordering::Acquire);
        if handed != 0 {
            self.shared.device.replayer.worker.wait_made(handed);
        }
    }

    /// Whether submissions handed to the replayer for this queue are not all
    /// made: the next one must go to the replayer too, or wait for them.
    pub(crate) fn replays_pending(&self) -> bool {
        let handed = self.handed.load(Ordering::Acquire);
        handed != 0 && !self.shared.device.replayer.worker.made(handed)
    }

    /// Records that the submission with `ticket` was handed to the replayer
    /// (the highest ticket stays, where threads submit to the queue at once).
    pub(crate) fn handed_replay(&self, ticket: u64) {
        self.handed.fetch_max(ticket, Ordering::AcqRel);
    }

    /// Submits what was just enqueued.
    pub(crate) fn flush_raw(&self) -> Result<()> {
        cl3::command_queue::flush(self.raw()).cl("clFlush")
    }
}

impl QueueImpl for ClQueue {
    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        self.drain();
        let wait = WaitList::new(wait, &self.deferred)?;
        // SAFETY: the front end validated the command for this context and
        // keeps raw host memory valid until the event completes.
        let (raw, status) =
            unsafe { exec::enqueue(&self.shared, self.raw(), command, &wait, self.ordered_launches())? };
        self.deferred.enqueued();
        Ok(ClEvent::eager(raw, self.profiling, status, &self.deferred))
    }

    /// A queue made without the driver's out-of-order mode (Intel's CPU
    /// runtime's, `UR_OPENCL_OUT_OF_ORDER_QUEUES=off`) runs in order, so
    /// the front end asks no status of each command before the last: on
    /// Intel's runtime that query was 7.5% of an eager launch's time, and
    /// events let go while their commands still ran are destroyed by the
    /// runtime's own thread, not by the caller's (12%).
    fn completes_in_order(&self) -> bool {
        self.ordered_launches()
    }

    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>> {
        self.drain();
        let wait = WaitList::new(wait, &self.deferred)?;
        let raw = if barrier && !(self.in_order || wait.is_empty()) {
            // On an out-of-order queue a barrier with a wait list waits for
            // that list only: mark the list, then put a full barrier after it.
            // SAFETY: a valid queue and wait list.
            let _listed = unsafe { exec::marker(&self.shared, self.raw(), &wait)? };
            // SAFETY: a valid queue; the empty list means every earlier command.
            let event = unsafe { cl3::command_queue::enqueue_barrier_with_wait_list(self.raw(), 0, std::ptr::null()) }
                .cl("clEnqueueBarrierWithWaitList")?;
            // SAFETY: a new reference from the enqueue.
            unsafe { RawEvent::from_raw(event) }
        } else if barrier {
            // SAFETY: a valid queue and wait list (an empty one means every earlier command).
            let event = unsafe {
                cl3::command_queue::enqueue_barrier_with_wait_list(self.raw(), wait.len() as u32, wait.as_ptr())
            }
            .cl("clEnqueueBarrierWithWaitList")?;
            // SAFETY: a new reference from the enqueue.
            unsafe { RawEvent::from_raw(event) }
        } else {
            // SAFETY: a valid queue and wait list.
            unsafe { exec::marker(&self.shared, self.raw(), &wait)? }
        };
        let raw = if barrier && self.profiling {
            // NVIDIA's OpenCL leaves a barrier's queued, submit and start
            // times 0 (UR's `urEventGetProfilingInfoForWaitWithBarrier`): the
            // barrier's event is a marker after it, which has all four
            // (`exec::marker` on a profiling queue) and completes with it.
            let mut after = WaitList::default();
            after.push(raw);
            // SAFETY: a valid queue, and the barrier's event of this context.
            unsafe { exec::marker(&self.shared, self.raw(), &after)? }
        } else {
            raw
        };
        self.deferred.enqueued();
        Ok(ClEvent::eager(raw, self.profiling, None, &self.deferred))
    }

    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        self.drain();
        let wait = WaitList::new(wait, &self.deferred)?;
        // A marker orders the recording on this queue; a command after it on
        // the context's profiling queue takes the time, whether or not this
        // queue profiles.
        // SAFETY: a valid queue and wait list.
        let ordered = unsafe { exec::marker(&self.shared, self.raw(), &wait)? };
        self.flush_raw()?;
        let stamps = self.shared.stamp_queue()?;
        let mut after = WaitList::default();
        after.push(ordered);
        // SAFETY: a valid queue and wait list, events of this context.
        let stamp = unsafe { exec::marker(&self.shared, stamps, &after)? };
        cl3::command_queue::flush(stamps).cl("clFlush")?;
        *self.last_stamp.lock() = Some(stamp.retain());
        Ok(ClEvent::recording(stamp))
    }

    /// `clFinish`, and the wait for this queue's last timestamp recording,
    /// which runs on the context's profiling queue.
    fn finish(&self) -> Result<()> {
        self.deferred.host_waits();
        self.drain();
        cl3::command_queue::finish(self.raw()).cl("clFinish")?;
        let stamp = self.last_stamp.lock().take();
        match stamp {
            Some(stamp) => stamp.wait().cl("waiting for a timestamp recording"),
            None => Ok(()),
        }
    }

    fn flush(&self) -> Result<()> {
        // The replayer flushes each submission it makes; the application
        // asks that everything given so far be on its way to the device.
        self.drain();
        // Cleared first: a command enqueued meanwhile marks the queue again.
        self.deferred.forget();
        self.flush_raw()
    }

    /// The `cl_command_queue`, flushed: the application may wait on its
    /// commands' events from queues of its own.
    fn native_handle(&self) -> Result<NativeHandle> {
        self.drain();
        self.deferred.flush();
        Ok(NativeHandle(self.raw() as u64))
    }
}

impl Drop for ClQueue {
    fn drop(&mut self) {
        // The replayer enqueues on this queue until then.
        self.drain();
        self.deferred.forget();
        // Only a sub-device's queue can leave launches in its context's
        // one-launch chain that outlive its device (see `one_launch`).
        if self.sub_device.is_some() && self.shared.device.one_launch_per_kernel {
            crate::one_launch::forget_queue(self.queue.get());
        }
        // Its launches must not pass for a later queue's at the same address.
        if self.ordered_launches() && self.shared.device.one_launch_per_kernel {
            crate::one_launch::forget_in_order_queue(self.queue.get());
        }
    }
}

/// The OpenCL queue properties for `properties`.
fn queue_flags(properties: QueueProperties, device: &DeviceShared) -> cl3::types::cl_bitfield {
    let mut flags = 0;
    if properties.out_of_order && device.driver_out_of_order {
        flags |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
    }
    if properties.profiling {
        flags |= CL_QUEUE_PROFILING_ENABLE;
    }
    flags
}
