//! Queues: an in-order queue is one stream; an out-of-order queue spreads its
//! commands over several streams, each command waiting only for its wait
//! list and the last barrier. A stream whose last command waits (perhaps
//! through other commands) for a user event the host has not completed is
//! *held*: an out-of-order queue puts independent work on another stream,
//! adding streams when all are held, so that work never queues behind a
//! host task or user event it does not depend on.
//!
//! Every submission records an event after its work (and, on profiling
//! queues, one before it). Wait lists become `cuStreamWaitEvent` for CUDA
//! events and `cuStreamWaitValue32` for user events.

use std::sync::Arc;

use cudarc::driver::sys;
use parking_lot::Mutex;
use ur_core::adapter::{EventImpl, QueueImpl};
use ur_core::{Backend, Command, NativeCommand, NativeHandle, NativeTarget, Ownership, QueueProperties, Result};

use crate::device::{DeviceShared, now_ns};
use crate::driver::{CuEvent, Query, Stream};
use crate::event::{Check, CudaEvent, is_held, stream_wait};
use crate::exec;

/// Streams an out-of-order queue starts with.
const OUT_OF_ORDER_STREAMS: usize = 4;
/// Streams an out-of-order queue may grow to while its streams are held.
const MAX_OUT_OF_ORDER_STREAMS: usize = 16;

pub(crate) struct CudaQueue {
    pub(crate) dev: Arc<DeviceShared>,
    out_of_order: bool,
    pub(crate) profiling: bool,
    state: Mutex<QueueState>,
    /// For a queue adopted from a `CUstream`, who destroys the stream.
    adopted: Option<Ownership>,
}

#[derive(Default)]
struct QueueState {
    streams: Vec<Stream>,
    /// Round-robin position among the streams.
    next: usize,
    /// The last event recorded on each stream.
    last: Vec<Option<Arc<CudaEvent>>>,
    /// The last barrier of an out-of-order queue.
    barrier: Option<Arc<CudaEvent>>,
}

/// What a submission waits for before its work.
pub(crate) enum Order {
    /// Its wait list (and the queue's own ordering).
    Normal,
    /// Also everything submitted before; everything after waits for it.
    Barrier,
}

impl CudaQueue {
    pub(crate) fn new(dev: Arc<DeviceShared>, properties: QueueProperties) -> Result<CudaQueue> {
        dev.bind()?;
        let count = if properties.out_of_order { OUT_OF_ORDER_STREAMS } else { 1 };
        let streams = (0..count).map(|_| dev.take_stream()).collect::<Result<Vec<_>>>()?;
        let state = QueueState { streams, last: vec![None; count], ..QueueState::default() };
        Ok(CudaQueue {
            dev,
            out_of_order: properties.out_of_order,
            profiling: properties.profiling,
            state: Mutex::new(state),
            adopted: None,
        })
    }

    /// An in-order queue without profiling over an adopted stream of the
    /// device's primary context (checked by the caller).
    pub(crate) fn adopt(dev: Arc<DeviceShared>, stream: Stream, ownership: Ownership) -> CudaQueue {
        let state = QueueState { streams: vec![stream], last: vec![None], ..QueueState::default() };
        CudaQueue { dev, out_of_order: false, profiling: false, state: Mutex::new(state), adopted: Some(ownership) }
    }

    /// Submits work: picks a stream, makes it wait for `wait` (and the
    /// queue's ordering), runs `work` on it and records the returned event.
    /// `work` returns what the event checks on completion.
    pub(crate) fn submit(
        &self,
        wait: &[&dyn EventImpl],
        order: Order,
        work: impl FnOnce(sys::CUstream) -> Result<Option<Check>>,
    ) -> Result<Arc<CudaEvent>> {
        self.submit_timed(wait, order, self.profiling, work)
    }

    /// [`submit`](Self::submit), with timing events when `profiling`
    /// (timestamp recordings time on any queue).
    fn submit_timed(
        &self,
        wait: &[&dyn EventImpl],
        order: Order,
        profiling: bool,
        work: impl FnOnce(sys::CUstream) -> Result<Option<Check>>,
    ) -> Result<Arc<CudaEvent>> {
        self.dev.bind()?;
        let mut state = self.state.lock();
        let index = self.pick_stream(&mut state);
        let stream = state.streams[index].raw();
        let mut held = state.last[index].as_ref().is_some_and(|e| e.is_held());
        for event in wait {
            held |= is_held(*event);
            stream_wait(stream, *event)?;
        }
        match order {
            Order::Barrier => {
                for (i, last) in state.last.iter().enumerate() {
                    if let (true, Some(last)) = (i != index, last) {
                        held |= last.is_held();
                        crate::driver::stream_wait_event(stream, last.end().raw())?;
                    }
                }
            }
            Order::Normal => {
                if let Some(barrier) = &state.barrier {
                    held |= barrier.is_held();
                    crate::driver::stream_wait_event(stream, barrier.end().raw())?;
                }
            }
        }
        let queued = now_ns();
        let start = if profiling {
            let start = CuEvent::new(true)?;
            start.record(stream)?;
            Some(start)
        } else {
            None
        };
        let check = work(stream)?;
        let end = if profiling { CuEvent::new(true)? } else { self.dev.plain_event()? };
        end.record(stream)?;
        let times = profiling.then_some((queued, queued));
        let event = Arc::new(CudaEvent::new(self.dev.clone(), end, start, times, check).held_by_host(held));
        state.last[index] = Some(event.clone());
        if matches!(order, Order::Barrier) && state.streams.len() > 1 {
            state.barrier = Some(event.clone());
        }
        Ok(event)
    }

    /// The stream for the next submission: the only one of an in-order
    /// queue. On an out-of-order queue, an idle stream if there is one, else
    /// one that is not held, else a pooled stream added to the queue (up to
    /// [`MAX_OUT_OF_ORDER_STREAMS`]), else the next in turn.
    fn pick_stream(&self, state: &mut QueueState) -> usize {
        if !self.out_of_order {
            return 0;
        }
        let n = state.streams.len();
        let order = |k: usize| (state.next + k) % n;
        let idle = (0..n)
            .map(order)
            .find(|i| state.last[*i].as_ref().is_none_or(|e| matches!(e.end().query(), Ok(Query::Ready))));
        let free = || (0..n).map(order).find(|i| state.last[*i].as_ref().is_none_or(|e| !e.is_held()));
        // A new stream only from the pool: creating one may wait for the
        // device, which a held stream keeps busy.
        let grown = || (n < MAX_OUT_OF_ORDER_STREAMS).then(|| self.dev.take_pooled_stream()).flatten();
        let index = match idle.or_else(free) {
            Some(index) => index,
            None => match grown() {
                Some(stream) => {
                    tracing::debug!(streams = n + 1, "every stream of the out-of-order queue is held: one more");
                    state.streams.push(stream);
                    state.last.push(None);
                    n
                }
                None => state.next % n,
            },
        };
        state.next = (index + 1) % state.streams.len();
        index
    }
}

impl CudaQueue {
    /// A native command: a marker after `wait` and the queue's order, a
    /// stream of its own waiting for the marker on which the callback
    /// enqueues its work, and a final submission after that stream, whose
    /// event is the command's. The callback runs without the queue's lock,
    /// so it may call the queue's methods.
    ///
    /// # Safety
    /// As for [`QueueImpl::enqueue`].
    unsafe fn native_command(&self, native: &NativeCommand, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let marker = self.submit(wait, Order::Normal, |_| Ok(None))?;
        let stream = self.dev.take_stream()?;
        let raw = stream.raw();
        stream_wait(raw, &*marker)?;
        // SAFETY: the stream waits for the command's dependencies, and the
        // final submission below waits for the stream.
        let result = unsafe { native.invoke(Backend::Cuda, NativeTarget::Queue(NativeHandle(raw as u64))) };
        self.dev.bind()?;
        let end = self.dev.plain_event()?;
        end.record(raw)?;
        let work = CudaEvent::new(self.dev.clone(), end, None, None, None);
        self.dev.return_stream(stream);
        result?;
        Ok(self.submit(&[&work], Order::Normal, |_| Ok(None))?)
    }
}

impl QueueImpl for CudaQueue {
    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        if let Command::Native(native) = command {
            // SAFETY: forwarded from this function's contract.
            return unsafe { self.native_command(native, wait) };
        }
        let dev = self.dev.clone();
        // SAFETY: the command was validated for this queue's context, its raw
        // host memory stays valid until its event completes (the trait's
        // contract), and `submit` bound the context.
        let event = self.submit(wait, Order::Normal, |stream| unsafe { exec::issue(&dev, stream, command) })?;
        Ok(event)
    }

    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>> {
        let order = if barrier { Order::Barrier } else { Order::Normal };
        Ok(self.submit(wait, order, |_| Ok(None))?)
    }

    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        // Two timing events with nothing between them: the device time at
        // which the stream reached this point.
        Ok(self.submit_timed(wait, Order::Normal, true, |_| Ok(None))?)
    }

    fn finish(&self) -> Result<()> {
        // The last event of each stream, taken under the lock and waited for
        // outside it, so that other threads can go on submitting.
        let lasts: Vec<Arc<CudaEvent>> = self.state.lock().last.iter().flatten().cloned().collect();
        for last in lasts {
            last.end().synchronize()?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        // Work is handed to the device as it is submitted.
        Ok(())
    }

    /// The `CUstream` of the queue's first stream (an out-of-order queue
    /// has several; native commands get a stream of their own, the target).
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.state.lock().streams[0].raw() as u64))
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        for stream in self.state.get_mut().streams.drain(..) {
            match self.adopted {
                None => self.dev.return_stream(stream),
                // The application's stream: not destroyed here.
                Some(Ownership::Shared) => std::mem::forget(stream),
                Some(Ownership::Transferred) => drop(stream),
            }
        }
    }
}
