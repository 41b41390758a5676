//! The logical device and what runs it: lanes (a queue, a timeline semaphore
//! and a completion thread each), the staging arena, the internal fill
//! pipeline.
//!
//! Every submission of the adapter signals the next value of its lane's
//! timeline semaphore. Semaphore signal operations on one queue complete in
//! submission order, so a lane's value `v` having been reached means every
//! submission of that lane up to `v` has completed. Each lane's completion
//! thread waits for its submissions in order and finishes them: it reads
//! their timestamps, runs their host-side copies, completes their events
//! (which may start deferred work) and releases what they held.
//!
//! Work that waits on events of other submissions waits on their timeline
//! values in `vkQueueSubmit`; the adapter never submits a wait whose signal
//! has not been submitted yet (host-side dependencies such as user events
//! hold a submission back on the host instead), so no queue ever blocks on
//! the host.
//!
//! The submodules are the rest of that machinery, which refers to this
//! module's types as they refer to its: `event` (an event's state waits on
//! its lane's timeline and flushes the eager batch its command is in),
//! `batch` (a queue's open eager batch, on the device's state, whose timer
//! flushes batches) and `submit` (what a submission runs and finishes on its
//! lane's completion thread, completing events). As top-level modules they
//! would import each other in a circle.

pub(crate) mod batch;
pub(crate) mod event;
pub(crate) mod submit;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ash::vk;
use cmdbuf_core::Result;
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;

use crate::cmd::Pool;
use crate::conv::VkResultExt;
use crate::device::{Instance, PhysicalInfo};
use crate::gpu::{Gpu, PUSH_CONSTANT_BYTES};
use crate::memory::Arena;
use crate::profiling::Queries;
use crate::program::Pipeline;
use crate::shared::event::{EventCore, Waiter};
use crate::shared::submit::{Completion, Submission, schedule};

/// How long a host thread waiting for an event polls its lane's timeline
/// before it sleeps until the completion thread has finished the event.
const POLL: Duration = Duration::from_millis(1);
/// Queues of the family the adapter uses at most; UR queues are spread over them.
const MAX_HW_QUEUES: u32 = 4;
/// Lanes at least: with one hardware queue, two lanes (two timelines on it)
/// still make waits across timelines the common case, as on larger devices.
const MIN_LANES: usize = 2;

/// A hardware queue; lanes on the same queue share it (and its lock, which
/// `vkQueueSubmit` needs).
struct HwQueue {
    queue: Mutex<vk::Queue>,
}

/// A point on a lane's timeline: the completion of one submission.
#[derive(Clone)]
pub(crate) struct Point {
    pub(crate) lane: Arc<Lane>,
    pub(crate) value: u64,
}

impl Point {
    /// Whether the completion thread has seen the point reached.
    pub(crate) fn reached(&self) -> bool {
        self.lane.reached.load(Ordering::Acquire) >= self.value
    }
}

/// One timeline of submissions, on one hardware queue.
pub(crate) struct Lane {
    index: usize,
    gpu: Arc<Gpu>,
    hw: Arc<HwQueue>,
    timeline: vk::Semaphore,
    /// The last value submitted; changes under the hardware queue's lock.
    submitted: AtomicU64,
    /// The last value the completion thread saw reached.
    reached: AtomicU64,
    fifo: Mutex<Fifo>,
    wake: Condvar,
    /// Held while finishing submissions, so that they finish in value order
    /// whichever thread finishes them.
    finishing: Mutex<()>,
}

#[derive(Default)]
struct Fifo {
    items: VecDeque<InFlight>,
    stop: bool,
}

struct InFlight {
    value: u64,
    completion: Completion,
}

impl Lane {
    /// The `VkQueue` this lane submits to (shared with other lanes where the
    /// family has fewer queues than lanes).
    pub(crate) fn raw_queue(&self) -> vk::Queue {
        *self.hw.queue.lock()
    }
}

impl Lane {
    /// The timeline semaphore.
    pub(crate) fn semaphore(&self) -> vk::Semaphore {
        self.timeline
    }

    /// Whether `other` submits to the same `VkQueue`.
    pub(crate) fn same_queue(&self, other: &Lane) -> bool {
        Arc::ptr_eq(&self.hw, &other.hw)
    }

    /// Which lane this is, for diagnostics.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Submits `cmds` after the timeline points `waits`, signalling the
    /// lane's next value, and hands `completion` to the completion thread.
    /// Returns the waiters of the completion's event that the submission
    /// resolved; the caller runs them once it holds no lock.
    pub(crate) fn submit(
        self: &Arc<Self>,
        waits: &[(vk::Semaphore, u64)],
        cmds: &[vk::CommandBuffer],
        completion: Completion,
    ) -> Result<Vec<Waiter>> {
        self.submit_many(waits, cmds, || std::iter::once(completion))
    }

    /// [`submit`](Self::submit) for the commands of an eager batch: one
    /// submission, one timeline value, and one completion per command,
    /// finished in order once the value is reached. `completions` is called
    /// only once the work is submitted: on failure the caller still holds
    /// them.
    pub(crate) fn submit_many<I: IntoIterator<Item = Completion>>(
        self: &Arc<Self>,
        waits: &[(vk::Semaphore, u64)],
        cmds: &[vk::CommandBuffer],
        completions: impl FnOnce() -> I,
    ) -> Result<Vec<Waiter>> {
        crate::exit::check()?;
        let sems: SmallVec<[vk::Semaphore; 4]> = waits.iter().map(|w| w.0).collect();
        let values: SmallVec<[u64; 4]> = waits.iter().map(|w| w.1).collect();
        let stages: SmallVec<[vk::PipelineStageFlags; 4]> =
            waits.iter().map(|_| vk::PipelineStageFlags::ALL_COMMANDS).collect();
        let queue = self.hw.queue.lock();
        let value = self.submitted.load(Ordering::Relaxed) + 1;
        let signal = [self.timeline];
        let signal_values = [value];
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&values)
            .signal_semaphore_values(&signal_values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&sems)
            .wait_dst_stage_mask(&stages)
            .command_buffers(cmds)
            .signal_semaphores(&signal)
            .push_next(&mut timeline);
        // SAFETY: the queue is externally synchronised by its lock; the
        // command buffers are recorded and kept alive by `completion` until
        // the completion thread has seen them finish; every waited value has
        // a submitted signal (the scheduler only waits on submitted points);
        // the signalled value is greater than any earlier one of the lane.
        unsafe { self.gpu.device.queue_submit(*queue, &[submit], vk::Fence::null()) }.vk("vkQueueSubmit")?;
        self.submitted.store(value, Ordering::Relaxed);
        let mut waiters = Vec::new();
        // Pushed while the queue lock is held, so the queue of in-flight
        // work stays in value order.
        let mut fifo = self.fifo.lock();
        for completion in completions() {
            waiters
                .extend(completion.out.mark_submitted(Point { lane: self.clone(), value }, completion.has_host_work()));
            fifo.items.push_back(InFlight { value, completion });
        }
        drop(fifo);
        self.wake.notify_one();
        drop(queue);
        Ok(waiters)
    }

    /// Waits up to `timeout` for the timeline to reach `value`; whether it did.
    fn reaches_within(&self, value: u64, timeout: Duration) -> bool {
        let sems = [self.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: the semaphore lives as long as the lane.
        unsafe { self.gpu.device.wait_semaphores(&info, nanos) }.is_ok()
    }

    fn wait_value(&self, value: u64) -> Result<()> {
        let sems = [self.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        loop {
            // SAFETY: the semaphore lives as long as the lane.
            match unsafe { self.gpu.device.wait_semaphores(&info, 1_000_000_000) } {
                Ok(()) => return Ok(()),
                Err(vk::Result::TIMEOUT) => continue,
                Err(e) => return Err(crate::conv::vk_error(e, "vkWaitSemaphores")),
            }
        }
    }

    /// Polls the timeline for up to [`POLL`]; once it has reached `value`,
    /// finishes every submission of the lane up to it that no other thread
    /// has finished. A host thread waiting for an event does this first, as
    /// a driver's fence wait spins before it sleeps, so that a short
    /// submission costs no wake-up of the completion thread and then of the
    /// waiter. It polls (`vkGetSemaphoreCounterValue`) rather than blocking
    /// in `vkWaitSemaphores` beside the completion thread: with two threads
    /// blocked on one semaphore, NVIDIA's driver (580) woke one of them
    /// about 10 ms late, often. A CPU device is not polled (see
    /// [`Gpu::host_polls`]): there the waiting thread sleeps in
    /// `vkWaitSemaphores` until the value is reached, which takes no core
    /// from the device's work and spares the two wake-ups (the completion
    /// thread's, then the waiter's) of leaving the finish to the completion
    /// thread: a raw fence wait has one (issue 15, goal 3 on lavapipe).
    /// Returns whether it finished `value`; if not, the completion thread
    /// will.
    pub(crate) fn finish_if_reached_soon(&self, value: u64) -> bool {
        if crate::exit::driver_gone() {
            return false;
        }
        if !self.gpu.host_polls {
            // A failed wait is the completion thread's to report.
            if self.wait_value(value).is_err() {
                return false;
            }
            self.reached.fetch_max(value, Ordering::AcqRel);
            self.finish_reached(value, Ok(()));
            return true;
        }
        let start = Instant::now();
        let mut polls = 0u32;
        loop {
            // SAFETY: the semaphore lives as long as the lane.
            match unsafe { self.gpu.device.get_semaphore_counter_value(self.timeline) } {
                Ok(reached) if reached >= value => break,
                Ok(_) => {}
                // The completion thread's wait reports the failure.
                Err(_) => return false,
            }
            if start.elapsed() >= POLL {
                return false;
            }
            polls += 1;
            // Let other threads have the core now and then.
            if polls.is_multiple_of(16) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        self.reached.fetch_max(value, Ordering::AcqRel);
        self.finish_reached(value, Ok(()));
        true
    }

    /// Finishes the submissions up to `value` if the device has reached it
    /// now, without waiting: what a status query sees is then the device's
    /// progress, not the completion thread's. Returns whether it had.
    pub(crate) fn finish_if_reached(&self, value: u64) -> bool {
        if crate::exit::driver_gone() {
            return false;
        }
        // SAFETY: the semaphore lives as long as the lane.
        match unsafe { self.gpu.device.get_semaphore_counter_value(self.timeline) } {
            Ok(reached) if reached >= value => {
                self.reached.fetch_max(value, Ordering::AcqRel);
                self.finish_reached(value, Ok(()));
                true
            }
            // Not yet, or a failure the completion thread's wait reports.
            _ => false,
        }
    }

    /// Finishes the submissions up to `value`, oldest first, with `result`.
    fn finish_reached(&self, value: u64, result: Result<()>) {
        let _order = self.finishing.lock();
        loop {
            let item = {
                let mut fifo = self.fifo.lock();
                match fifo.items.front() {
                    Some(item) if item.value <= value => fifo.items.pop_front().expect("a front item"),
                    _ => return,
                }
            };
            item.completion.finish(result.clone());
        }
    }

    /// The completion thread: finishes submissions in value order (those a
    /// waiting host thread has not finished first).
    fn reap(self: Arc<Self>) {
        loop {
            let value = {
                let mut fifo = self.fifo.lock();
                loop {
                    if let Some(item) = fifo.items.front() {
                        break item.value;
                    }
                    if fifo.stop {
                        return;
                    }
                    self.wake.wait(&mut fifo);
                }
            };
            let result = self.wait_value(value);
            if result.is_ok() {
                self.reached.fetch_max(value, Ordering::AcqRel);
            } else {
                tracing::error!(lane = self.index, value, "waiting for a submission failed");
            }
            self.finish_reached(value, result);
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        // SAFETY: the lane is dropped once nothing refers to its points any
        // more, and its completion thread has finished every submission.
        unsafe { self.gpu.device.destroy_semaphore(self.timeline, None) };
    }
}

/// What every context of a started device shares (the name the CUDA and
/// OpenCL adapters give the same state): the logical device, its lanes and
/// shared resources.
pub(crate) struct DeviceShared {
    pub(crate) gpu: Arc<Gpu>,
    lanes: Vec<Arc<Lane>>,
    next_lane: AtomicUsize,
    reapers: Mutex<Vec<JoinHandle<()>>>,
    /// Host-visible memory for eager commands' argument blocks and staging.
    pub(crate) arena: Arena,
    /// The internal fill shader.
    pub(crate) fill: Arc<Pipeline>,
    /// Work-items per work-group of the fill shader.
    pub(crate) fill_group: u32,
    /// Command pool for the adapter's own synchronous work.
    util: Arc<Pool>,
    /// Timestamp queries of device-clock readings without calibration.
    pub(crate) clock_queries: Arc<Queries>,
    /// One device-clock reading with its host time, taken on first need,
    /// from which the device time of a call is estimated where the device
    /// does not calibrate ([`crate::clock::device_now`]).
    pub(crate) clock_pair: std::sync::OnceLock<cmdbuf_core::Timestamps>,
    /// Submits queues' eager batches that have been open too long.
    pub(crate) batch_timer: crate::shared::batch::BatchTimer,
}

/// The logical device over `hw_count` queues of the physical device's
/// family, with the features kernels may use beyond the required ones, as
/// the device reports them (`DeviceInfo` says which).
fn create_device(instance: &Instance, info: &PhysicalInfo, hw_count: u32) -> Result<ash::Device> {
    let priorities = vec![1.0f32; hw_count as usize];
    let queue_info =
        [vk::DeviceQueueCreateInfo::default().queue_family_index(info.family).queue_priorities(&priorities)];
    let optional = info.optional;
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
        .buffer_device_address(true)
        .timeline_semaphore(true)
        .storage_buffer8_bit_access(true)
        .shader_float16(optional.float16)
        .shader_buffer_int64_atomics(optional.int64_atomics)
        .shader_shared_int64_atomics(optional.int64_atomics)
        .vulkan_memory_model(optional.memory_model)
        .vulkan_memory_model_device_scope(optional.memory_model_device_scope);
    let core = vk::PhysicalDeviceFeatures::default().shader_int64(true).shader_float64(optional.float64);
    let mut features = vk::PhysicalDeviceFeatures2::default().features(core).push_next(&mut f12);
    let extensions: Vec<*const std::ffi::c_char> = [
        (optional.calibrated_timestamps, vk::EXT_CALIBRATED_TIMESTAMPS_NAME),
        (optional.host_import_align.is_some(), vk::EXT_EXTERNAL_MEMORY_HOST_NAME),
    ]
    .into_iter()
    .filter_map(|(wanted, name)| wanted.then_some(name.as_ptr()))
    .collect();
    let create = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queue_info)
        .enabled_extension_names(&extensions)
        .push_next(&mut features);
    // SAFETY: the features and the extension were checked present by
    // `inspect`; the structures live across the call.
    let device = unsafe { instance.raw.create_device(info.physical, &create, None) }.vk("vkCreateDevice")?;
    Ok(device)
}

/// The pipeline layout of every kernel: push constants only. The device is
/// destroyed where it cannot be made (nothing else was made from it yet).
fn pipeline_layout(device: &ash::Device) -> Result<vk::PipelineLayout> {
    let range = [vk::PushConstantRange::default()
        .stage_flags(vk::ShaderStageFlags::COMPUTE)
        .offset(0)
        .size(PUSH_CONSTANT_BYTES)];
    let layout_info = vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&range);
    // SAFETY: a valid device and create info.
    match unsafe { device.create_pipeline_layout(&layout_info, None) } {
        Ok(l) => Ok(l),
        Err(e) => {
            // SAFETY: nothing else was created from the device yet.
            unsafe { device.destroy_device(None) };
            Err(crate::conv::vk_error(e, "vkCreatePipelineLayout"))
        }
    }
}

/// The lanes of a device and their completion threads.
type LanesAndThreads = (Vec<Arc<Lane>>, Vec<JoinHandle<()>>);

/// One lane per hardware queue (at least [`MIN_LANES`], sharing queues
/// round robin), each with its timeline semaphore and completion thread.
fn start_lanes(gpu: &Arc<Gpu>, hw_count: u32) -> Result<LanesAndThreads> {
    let hw: Vec<Arc<HwQueue>> = (0..hw_count)
        .map(|i| {
            // SAFETY: `i` is below the number of queues created for the family.
            let queue = unsafe { gpu.device.get_device_queue(gpu.family, i) };
            Arc::new(HwQueue { queue: Mutex::new(queue) })
        })
        .collect();
    let lane_count = (hw_count as usize).max(MIN_LANES);
    let mut lanes = Vec::with_capacity(lane_count);
    for index in 0..lane_count {
        let mut kind = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
        let sem_info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
        // SAFETY: a valid device; timeline semaphores are enabled.
        let timeline = unsafe { gpu.device.create_semaphore(&sem_info, None) }.vk("vkCreateSemaphore")?;
        lanes.push(Arc::new(Lane {
            index,
            gpu: gpu.clone(),
            hw: hw[index % hw.len()].clone(),
            timeline,
            submitted: AtomicU64::new(0),
            reached: AtomicU64::new(0),
            fifo: Mutex::default(),
            wake: Condvar::new(),
            finishing: Mutex::new(()),
        }));
    }
    let mut reapers = Vec::with_capacity(lanes.len());
    for lane in &lanes {
        let lane = lane.clone();
        let handle = std::thread::Builder::new()
            .name(format!("ur-vulkan-lane-{}", lane.index))
            .spawn(move || lane.reap())
            .map_err(|e| cmdbuf_core::err!(OutOfResources, "cannot start a Vulkan completion thread: {e}"))?;
        reapers.push(handle);
    }
    Ok((lanes, reapers))
}

impl DeviceShared {
    /// Creates the logical device (`create_device`), the pipeline layout
    /// every kernel shares (`pipeline_layout`), its lanes and their threads
    /// (`start_lanes`) and the internal fill shader.
    pub(crate) fn new(instance: Arc<Instance>, info: &PhysicalInfo) -> Result<Arc<DeviceShared>> {
        crate::exit::check()?;
        let hw_count = info.family_queues.clamp(1, MAX_HW_QUEUES);
        let optional = info.optional;
        let device = create_device(&instance, info, hw_count)?;
        let layout = pipeline_layout(&device)?;
        let calibrated = optional
            .calibrated_timestamps
            .then(|| ash::ext::calibrated_timestamps::Device::new(&instance.raw, &device));
        let host_import = optional
            .host_import_align
            .map(|align| (ash::ext::external_memory_host::Device::new(&instance.raw, &device), align));
        let gpu = Arc::new(Gpu {
            _instance: instance,
            device,
            family: info.family,
            layout,
            memory: info.memory,
            max_groups: info.limits.max_compute_work_group_count,
            timestamp_period: f64::from(info.limits.timestamp_period),
            timestamp_mask: if info.timestamp_bits >= 64 { u64::MAX } else { (1u64 << info.timestamp_bits) - 1 },
            calibrated,
            host_import,
            host_polls: info.device_type != vk::PhysicalDeviceType::CPU,
        });

        let (lanes, reapers) = start_lanes(&gpu, hw_count)?;
        let fill_group = crate::shaders::fill_group(
            info.limits.max_compute_work_group_size[0],
            info.limits.max_compute_work_group_invocations,
        );
        let fill = crate::shaders::fill_pipeline(&gpu, fill_group)?;
        let util = Pool::new(gpu.clone())?;
        let clock_queries = Queries::new(gpu.clone());
        tracing::debug!(
            device = %info.name,
            hw_queues = hw_count,
            lanes = lanes.len(),
            family = info.family,
            "Vulkan device started"
        );
        let shared = Arc::new(DeviceShared {
            arena: Arena::new(gpu.clone()),
            gpu,
            lanes,
            next_lane: AtomicUsize::new(0),
            reapers: Mutex::new(reapers),
            fill,
            fill_group,
            util,
            clock_queries,
            clock_pair: std::sync::OnceLock::new(),
            batch_timer: crate::shared::batch::BatchTimer::new(),
        });
        crate::exit::watch(&shared);
        Ok(shared)
    }

    /// Stops the lanes' completion threads and joins them.
    fn stop_lanes(&self) {
        for lane in &self.lanes {
            lane.fifo.lock().stop = true;
            lane.wake.notify_all();
        }
        let current = std::thread::current().id();
        for handle in self.reapers.lock().drain(..) {
            // The last handle may be dropped by a completion thread itself.
            if handle.thread().id() != current {
                let _ = handle.join();
            }
        }
    }

    /// The first lane submitting to the `VkQueue` whose raw handle is `raw`.
    pub(crate) fn lane_of(&self, raw: u64) -> Option<Arc<Lane>> {
        self.lanes.iter().find(|l| vk::Handle::as_raw(l.raw_queue()) == raw).cloned()
    }

    /// The lane for a new queue: round robin over the lanes.
    pub(crate) fn next_lane(&self) -> Arc<Lane> {
        let i = self.next_lane.fetch_add(1, Ordering::Relaxed);
        self.lanes[i % self.lanes.len()].clone()
    }

    /// Records `record` into a command buffer, runs it and waits for it: for
    /// the adapter's own setup work (initial contents of new memory).
    pub(crate) fn run_now(&self, record: impl FnOnce(vk::CommandBuffer)) -> Result<()> {
        let cmd = self.util.record(|cb| {
            record(cb);
            crate::cmd::host_barrier(&self.gpu, cb);
            Ok(())
        })?;
        let out = EventCore::new();
        schedule(Submission::new(self.lanes[0].clone(), out.clone()).with_cmd(cmd));
        out.wait()
    }
}

impl crate::exit::Stop for DeviceShared {
    /// Stops the device before the process's exit shuts the driver down
    /// ([`crate::exit`]): submits the open eager batches, waits up to
    /// `timeout` for each lane's work and finishes it, until finishing
    /// starts no more (work held back for an event is submitted when the
    /// event completes), then stops the adapter's threads. A lane still busy
    /// after `timeout` is left running.
    fn stop_for_exit(&self, timeout: Duration) {
        self.batch_timer.stop();
        loop {
            self.batch_timer.flush_watched();
            let mut finished_any = false;
            for lane in &self.lanes {
                if lane.fifo.lock().items.is_empty() {
                    continue;
                }
                let value = lane.submitted.load(Ordering::Acquire);
                if !lane.reaches_within(value, timeout) {
                    tracing::warn!(lane = lane.index, value, "a Vulkan device is still busy at exit");
                    return;
                }
                lane.reached.fetch_max(value, Ordering::AcqRel);
                lane.finish_reached(value, Ok(()));
                finished_any = true;
            }
            if !finished_any {
                break;
            }
        }
        self.stop_lanes();
    }
}

impl Drop for DeviceShared {
    fn drop(&mut self) {
        let start = std::time::Instant::now();
        self.stop_lanes();
        tracing::debug!(joined = ?start.elapsed(), "Vulkan completion threads stopped");
    }
}
