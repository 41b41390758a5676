//! The Vulkan baseline: one pre-recorded primary command buffer of
//! dispatches, a compute-to-compute pipeline barrier between dependency
//! levels, submitted with `vkQueueSubmit` and waited for with a fence.

use std::ffi::CStr;

use ash::vk;

use super::{RawGraph, levels};

/// `empty.comp` compiled by glslangValidator (see that file).
const EMPTY_SPV: &[u8] = include_bytes!("empty.spv");

/// An instance and device of their own, the empty kernel's pipeline, and one
/// command buffer re-recorded by each `build`.
pub struct VkGraph {
    // Kept alive: the instance and device functions come from it.
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    queue: vk::Queue,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    pool: vk::CommandPool,
    commands: vk::CommandBuffer,
    /// Primary command buffers of the eager baselines, one per dispatch,
    /// allocated once and recorded again at each eager submission.
    eager_commands: Vec<vk::CommandBuffer>,
    fence: vk::Fence,
    pending: bool,
}

/// A compute-to-compute memory barrier recorded into `cb`: between
/// dependency levels, and before each eager dispatch.
///
/// # Safety
/// `cb` is a command buffer of `d`, recording.
unsafe fn compute_barrier(d: &ash::Device, cb: vk::CommandBuffer) {
    let barrier = [vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::SHADER_WRITE)
        .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
    // SAFETY: per this function's contract; the stages exist on a compute queue.
    unsafe {
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::DependencyFlags::empty(),
            &barrier,
            &[],
            &[],
        )
    };
}

fn check<T>(result: Result<T, vk::Result>, what: &str) -> Result<T, String> {
    result.map_err(|e| format!("{what}: {e}"))
}

impl VkGraph {
    /// Opens the first Vulkan device named `name`.
    pub fn open(name: &str) -> Result<VkGraph, String> {
        // SAFETY: loading the Vulkan loader runs its initialisers, which the
        // Vulkan adapter of this process has already done.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_1);
        // SAFETY: a valid create info without layers or extensions.
        let instance = check(
            unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) },
            "vkCreateInstance",
        )?;
        // SAFETY: from here on every handle passed belongs to `instance` or its device.
        match unsafe { Self::open_device(entry.clone(), instance.clone(), name) } {
            Ok(graph) => Ok(graph),
            Err(e) => {
                // SAFETY: nothing made from the instance survives a failed open.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    /// # Safety
    /// `instance` is a live instance made from `entry`.
    unsafe fn open_device(entry: ash::Entry, instance: ash::Instance, name: &str) -> Result<VkGraph, String> {
        // SAFETY: per this function's contract.
        let physicals = check(unsafe { instance.enumerate_physical_devices() }, "vkEnumeratePhysicalDevices")?;
        let physical = physicals
            .into_iter()
            .find(|&p| {
                // SAFETY: `p` was just enumerated.
                let props = unsafe { instance.get_physical_device_properties(p) };
                props.device_name_as_c_str().map(CStr::to_string_lossy).is_ok_and(|n| n == name)
            })
            .ok_or_else(|| format!("no Vulkan device is named {name}"))?;
        // SAFETY: a device of this instance.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("the device has no compute queue")? as u32;
        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
        // SAFETY: one queue of a family the device has.
        let device = check(
            unsafe {
                instance.create_device(physical, &vk::DeviceCreateInfo::default().queue_create_infos(&queues), None)
            },
            "vkCreateDevice",
        )?;
        let code: Vec<u32> = EMPTY_SPV.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        // SAFETY: handles made just before from `device`; the shader is
        // valid SPIR-V with one compute entry point `main`.
        unsafe {
            let queue = device.get_device_queue(family, 0);
            let module =
                check(device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None), "shader")?;
            let layout =
                check(device.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None), "layout")?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout);
            let pipeline = device
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
                .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
            device.destroy_shader_module(module, None);
            let pool = check(
                device.create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(family)
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                    None,
                ),
                "vkCreateCommandPool",
            )?;
            let commands = check(
                device.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1),
                ),
                "vkAllocateCommandBuffers",
            )?[0];
            let fence = check(device.create_fence(&vk::FenceCreateInfo::default(), None), "vkCreateFence")?;
            Ok(VkGraph {
                _entry: entry,
                instance,
                device,
                queue,
                layout,
                pipeline,
                pool,
                commands,
                eager_commands: Vec::new(),
                fence,
                pending: false,
            })
        }
    }
}

impl RawGraph for VkGraph {
    fn mechanism(&self) -> String {
        "pre-recorded primary command buffer, barrier between levels, vkQueueSubmit + fence".into()
    }

    fn build(&mut self, preds: &[Vec<usize>]) -> Result<(), String> {
        self.wait()?;
        let level = levels(preds);
        let mut order: Vec<usize> = (0..preds.len()).collect();
        order.sort_by_key(|&i| level[i]);
        let d = &self.device;
        // SAFETY: the command buffer is not pending (waited above) and its
        // pool allows resets; every handle belongs to this device.
        unsafe {
            check(d.reset_command_buffer(self.commands, vk::CommandBufferResetFlags::empty()), "reset")?;
            check(d.begin_command_buffer(self.commands, &vk::CommandBufferBeginInfo::default()), "begin")?;
            d.cmd_bind_pipeline(self.commands, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            let mut current = 0;
            for i in order {
                if level[i] != current {
                    current = level[i];
                    compute_barrier(d, self.commands);
                }
                d.cmd_dispatch(self.commands, 1, 1, 1);
            }
            check(d.end_command_buffer(self.commands), "end")
        }
    }

    fn launch(&mut self) -> Result<(), String> {
        let buffers = [self.commands];
        let submit = vk::SubmitInfo::default().command_buffers(&buffers);
        // SAFETY: a recorded command buffer, not pending (each launch is
        // waited for before the next), and an unsignalled fence.
        check(unsafe { self.device.queue_submit(self.queue, &[submit], self.fence) }, "vkQueueSubmit")?;
        self.pending = true;
        Ok(())
    }

    fn eager_variants(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "raw_eager",
                "per dispatch: a primary command buffer recorded (barrier, bind, dispatch) and vkQueueSubmit",
            ),
            (
                "raw_eager_batched",
                "every dispatch recorded into one primary command buffer (barrier between), one vkQueueSubmit",
            ),
        ]
    }

    fn eager(&mut self, variant: usize, nodes: usize) -> Result<(), String> {
        let batched = variant == 1;
        let needed = if batched { 1 } else { nodes };
        if self.eager_commands.len() < needed {
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.pool)
                .command_buffer_count((needed - self.eager_commands.len()) as u32);
            // SAFETY: the pool belongs to this device and is used by this thread only.
            let more = check(unsafe { self.device.allocate_command_buffers(&info) }, "vkAllocateCommandBuffers")?;
            self.eager_commands.extend(more);
        }
        // A barrier before each dispatch orders it after everything submitted
        // before it on the queue, as the in-order chain of the cmdbuf side is.
        let d = &self.device;
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        let record = |cb: vk::CommandBuffer, dispatches: usize| -> Result<(), String> {
            // SAFETY: `cb` is of this device's pool, not pending (the previous
            // submission was waited for), and the pool allows resets.
            unsafe {
                check(d.begin_command_buffer(cb, &begin), "vkBeginCommandBuffer")?;
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, self.pipeline);
                for _ in 0..dispatches {
                    compute_barrier(d, cb);
                    d.cmd_dispatch(cb, 1, 1, 1);
                }
                check(d.end_command_buffer(cb), "vkEndCommandBuffer")
            }
        };
        let submit = |cb: vk::CommandBuffer, fence: vk::Fence| {
            let buffers = [cb];
            let info = vk::SubmitInfo::default().command_buffers(&buffers);
            // SAFETY: a recorded command buffer of this device, not pending;
            // the fence (when given) is unsignalled.
            check(unsafe { d.queue_submit(self.queue, &[info], fence) }, "vkQueueSubmit")
        };
        if batched {
            let cb = self.eager_commands[0];
            record(cb, nodes)?;
            submit(cb, self.fence)?;
        } else {
            for (i, &cb) in self.eager_commands[..nodes].iter().enumerate() {
                record(cb, 1)?;
                submit(cb, if i + 1 == nodes { self.fence } else { vk::Fence::null() })?;
            }
        }
        self.pending = true;
        Ok(())
    }

    fn wait(&mut self) -> Result<(), String> {
        if !self.pending {
            return Ok(());
        }
        // SAFETY: the fence belongs to this device and was submitted.
        unsafe {
            check(self.device.wait_for_fences(&[self.fence], true, u64::MAX), "vkWaitForFences")?;
            check(self.device.reset_fences(&[self.fence]), "vkResetFences")?;
        }
        self.pending = false;
        Ok(())
    }
}

impl Drop for VkGraph {
    fn drop(&mut self) {
        let _ = self.wait();
        // SAFETY: nothing is pending; each handle is destroyed once, children first.
        unsafe {
            self.device.destroy_fence(self.fence, None);
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_pipeline(self.pipeline, None);
            self.device.destroy_pipeline_layout(self.layout, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
