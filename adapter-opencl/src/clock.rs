//! Device timestamps with the host time of the same moment
//! (`urDeviceGetGlobalTimestamps`).
//!
//! The device time is the clock of profiling timestamps. Drivers of OpenCL
//! 2.1 read it with `clGetDeviceAndHostTimer`; others (PoCL 3.1 answers
//! `CL_INVALID_OPERATION`) give it as the queued time of a marker enqueued on
//! a profiling queue of the adapter's own, which the enqueue call takes.
//! Either reading is paired with the midpoint of host-clock readings around
//! the call that takes it, the narrowest of three
//! ([`cmdbuf_core::clock::bracket_narrowest`]), since the driver's host time is
//! on a clock of its own.

use std::sync::OnceLock;

use cl3::types::cl_device_id;
use cmdbuf_core::clock::bracket_narrowest;
use cmdbuf_core::{Result, Timestamps};

use crate::conv::ClResultExt;
use crate::ffi::CL_QUEUE_PROFILING_ENABLE;

/// Readings per timestamp pair, of which the one taken in the shortest host
/// interval is kept ([`bracket_narrowest`]).
const TRIES: usize = 3;

/// A context with a profiling queue, for marker timestamps.
struct MarkerQueue {
    queue: opencl3::command_queue::CommandQueue,
    /// Kept alive for the queue; released after it.
    _context: opencl3::context::Context,
}

/// The device clock of one device.
pub(crate) struct DeviceClock {
    id: cl_device_id,
    /// Whether `clGetDeviceAndHostTimer` works, once tried.
    driver_timer: OnceLock<bool>,
    markers: OnceLock<MarkerQueue>,
}

// SAFETY: the device id is an opaque handle usable from any thread; OpenCL
// contexts and queues are thread-safe objects.
unsafe impl Send for DeviceClock {}
// SAFETY: as for Send.
unsafe impl Sync for DeviceClock {}

impl DeviceClock {
    pub(crate) fn new(id: cl_device_id) -> DeviceClock {
        DeviceClock { id, driver_timer: OnceLock::new(), markers: OnceLock::new() }
    }

    /// A device timestamp and the host time of it.
    pub(crate) fn timestamps(&self) -> Result<Timestamps> {
        let device = opencl3::device::Device::new(self.id);
        if *self.driver_timer.get_or_init(|| device.get_device_and_host_timer().is_ok()) {
            let ([device, _], host) =
                bracket_narrowest(TRIES, || device.get_device_and_host_timer()).cl("clGetDeviceAndHostTimer")?;
            return Ok(Timestamps { device, host });
        }
        let markers = self.markers()?;
        // The marker's queued time is taken within the enqueue call, so only
        // that call is bracketed, not the wait for the device.
        let (marker, host) = bracket_narrowest(TRIES, || {
            // SAFETY: an empty wait list on a live queue.
            unsafe { markers.queue.enqueue_marker_with_wait_list(&[]) }.cl("clEnqueueMarkerWithWaitList")
        })?;
        marker.wait().cl("clWaitForEvents")?;
        let device = marker.profiling_command_queued().cl("clGetEventProfilingInfo")?;
        Ok(Timestamps { device, host })
    }

    fn markers(&self) -> Result<&MarkerQueue> {
        if let Some(markers) = self.markers.get() {
            return Ok(markers);
        }
        let context =
            opencl3::context::Context::from_device(&opencl3::device::Device::new(self.id)).cl("clCreateContext")?;
        // SAFETY: the device belongs to the context; every OpenCL device
        // offers profiling queues.
        let queue = unsafe {
            opencl3::command_queue::CommandQueue::create_with_properties(
                &context,
                self.id,
                CL_QUEUE_PROFILING_ENABLE,
                0,
            )
        }
        .cl("clCreateCommandQueueWithProperties")?;
        // A racing thread may have made one too; the loser's is released.
        Ok(self.markers.get_or_init(|| MarkerQueue { queue, _context: context }))
    }
}

/// Test hook (`tests/clock.rs`): on every OpenCL device here, timestamps
/// advance on the device and host clocks, and a marker's timestamp (the
/// fallback) falls between two readings of whichever clock the device uses.
/// The number of devices checked (none without a driver), or the first
/// disagreement.
#[doc(hidden)]
pub fn check_clock_paths() -> std::result::Result<usize, String> {
    const CL_DEVICE_TYPE_ALL: cl3::types::cl_device_type = 0xFFFF_FFFF;
    let platforms = opencl3::platform::get_platforms().map_err(|e| format!("no OpenCL platform: {e}"))?;
    let mut checked = 0;
    for platform in platforms {
        for id in platform.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default() {
            let clock = DeviceClock::new(id);
            let first = clock.timestamps().map_err(|e| format!("timestamps: {e}"))?;
            let (end, host) = cmdbuf_core::clock::bracket(|| {
                let markers = clock.markers()?;
                // SAFETY: an empty wait list on a live queue.
                let m = unsafe { markers.queue.enqueue_marker_with_wait_list(&[]) }.cl("marker")?;
                m.wait().cl("wait")?;
                m.profiling_command_end().cl("end")
            })
            .map_err(|e| format!("marker timestamp: {e}"))?;
            let marker = Timestamps { device: end, host };
            let last = clock.timestamps().map_err(|e| format!("timestamps: {e}"))?;
            if !(first.device <= marker.device && marker.device <= last.device) {
                return Err(format!("device times out of order: {first:?} {marker:?} {last:?}"));
            }
            if !(first.host <= marker.host && marker.host <= last.host) {
                return Err(format!("host times out of order: {first:?} {marker:?} {last:?}"));
            }
            checked += 1;
        }
    }
    Ok(checked)
}
