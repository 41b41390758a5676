//! The logical device and what runs it: lanes (a queue, a timeline semaphore
//! and a completion thread each), the staging arena, the internal fill
//! pipeline.
//!
//! The submodules are the rest of that machinery, one way, bottom first:
//! - `host_work`: what a submission carries beside its command buffers
//!   (host copies, kernels' status words, what it keeps alive);
//! - `state`: the definitions of lanes and their points, events' state,
//!   completions and eager batches, which hold each other;
//! - `event`: an event's phases and waiters;
//! - `lane`: submitting to a lane's timeline and finishing what it reached;
//! - `batch`: a queue's eager batches and the device's batch thread;
//! - `wait`: waiting for an event, which first starts its batch;
//! - `submit`: a submission held on the host until its dependencies allow.
//!
//! This module, on top, starts the device and its lanes and stops them.

pub(crate) mod batch;
pub(crate) mod event;
pub(crate) mod host_work;
pub(crate) mod lane;
pub(crate) mod state;
pub(crate) mod submit;
pub(crate) mod wait;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use ash::vk;
use cmdbuf_core::Result;
use parking_lot::{Condvar, Mutex};

use crate::cmd::Pool;
use crate::conv::VkResultExt;
use crate::device::{Instance, PhysicalInfo};
use crate::gpu::{Gpu, PUSH_CONSTANT_BYTES};
use crate::memory::Arena;
use crate::profiling::Queries;
use crate::program::Pipeline;
use crate::shared::batch::BatchThread;
use crate::shared::state::{EventCore, HwQueue, Lane};
use crate::shared::submit::{Submission, schedule};

/// Queues of the family the adapter uses at most; UR queues are spread over them.
const MAX_HW_QUEUES: u32 = 4;
/// Lanes at least: with one hardware queue, two lanes (two timelines on it)
/// still make waits across timelines the common case, as on larger devices.
const MIN_LANES: usize = 2;

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
    /// Records and submits queues' full eager batches, and submits those open too long.
    pub(crate) batch_thread: BatchThread,
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
            batch_thread: BatchThread::new(),
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
        self.batch_thread.stop();
        loop {
            self.batch_thread.flush_watched();
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
