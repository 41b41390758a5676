//! The Vulkan baseline: one pre-recorded primary command buffer of
//! dispatches, a compute-to-compute pipeline barrier between dependency
//! levels, submitted with `vkQueueSubmit` and waited for with a fence; and
//! the eager baselines, the empty kernel and `axpb` with its arguments as
//! push constants.

use std::ffi::CStr;

use ash::vk;

use super::{RawGraph, levels};

/// `empty.comp` compiled by glslangValidator (see that file).
const EMPTY_SPV: &[u8] = include_bytes!("empty.spv");
/// `axpb.comp` compiled by glslangValidator (see that file).
const AXPB_SPV: &[u8] = include_bytes!("axpb.spv");
/// The push constants of `axpb.comp`: the address of its values, `a`, `b`.
const AXPB_ARGS_BYTES: u32 = 16;
// `axpb.comp` runs one work group of 256 invocations, one per value.
const _: () = assert!(super::AXPB_ITEMS == 256, "axpb.comp's local size is the bench's AXPB_ITEMS");

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
    /// `axpb` and the values it updates, where the device has buffer device
    /// addresses (Vulkan 1.2's `bufferDeviceAddress`, which the adapter
    /// requires too).
    axpb: Option<Axpb>,
}

/// `axpb.comp`'s pipeline and the [`super::AXPB_ITEMS`] u32 values it updates.
struct Axpb {
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// The buffer's device address, pushed with each dispatch.
    address: u64,
}

/// A compute pipeline of `code`'s entry point `main` with `layout`.
///
/// # Safety
/// `layout` is of `d`; `code` is valid SPIR-V whose resources `layout` declares.
unsafe fn compute_pipeline(d: &ash::Device, code: &[u8], layout: vk::PipelineLayout) -> Result<vk::Pipeline, String> {
    let words: Vec<u32> = code.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    // SAFETY: per this function's contract.
    unsafe {
        let module =
            check(d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None), "shader")?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout);
        let made = d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None);
        d.destroy_shader_module(module, None);
        made.map(|p| p[0]).map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))
    }
}

impl Axpb {
    /// The pipeline, and device memory for the values with its address.
    ///
    /// # Safety
    /// `d` is a device of `physical`, made with `bufferDeviceAddress` enabled.
    unsafe fn new(instance: &ash::Instance, physical: vk::PhysicalDevice, d: &ash::Device) -> Result<Axpb, String> {
        let bytes = (super::AXPB_ITEMS * 4) as u64;
        // SAFETY: per this function's contract; every handle made here is of `d`.
        unsafe {
            let range =
                [vk::PushConstantRange::default().stage_flags(vk::ShaderStageFlags::COMPUTE).size(AXPB_ARGS_BYTES)];
            let layout = check(
                d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&range), None),
                "layout",
            )?;
            let pipeline = compute_pipeline(d, AXPB_SPV, layout)?;
            let buffer = check(
                d.create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(bytes)
                        .usage(vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS),
                    None,
                ),
                "vkCreateBuffer",
            )?;
            let needs = d.get_buffer_memory_requirements(buffer);
            let types = instance.get_physical_device_memory_properties(physical);
            let fits = |i: u32, flags: vk::MemoryPropertyFlags| {
                needs.memory_type_bits & (1 << i) != 0 && types.memory_types[i as usize].property_flags.contains(flags)
            };
            let index = (0..types.memory_type_count)
                .find(|&i| fits(i, vk::MemoryPropertyFlags::DEVICE_LOCAL))
                .or_else(|| (0..types.memory_type_count).find(|&i| fits(i, vk::MemoryPropertyFlags::empty())))
                .ok_or("no memory type for the axpb values")?;
            let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
            let memory = check(
                d.allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(needs.size)
                        .memory_type_index(index)
                        .push_next(&mut flags),
                    None,
                ),
                "vkAllocateMemory",
            )?;
            check(d.bind_buffer_memory(buffer, memory, 0), "vkBindBufferMemory")?;
            let address = d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buffer));
            Ok(Axpb { layout, pipeline, buffer, memory, address })
        }
    }

    /// The push constants of one launch: the values' address, `a` and `b` (1 each).
    fn args(&self) -> [u8; AXPB_ARGS_BYTES as usize] {
        let mut args = [0u8; AXPB_ARGS_BYTES as usize];
        args[..8].copy_from_slice(&self.address.to_le_bytes());
        args[8..12].copy_from_slice(&1u32.to_le_bytes());
        args[12..].copy_from_slice(&1u32.to_le_bytes());
        args
    }

    /// # Safety
    /// Nothing of `d` uses the pipeline or the buffer any more.
    unsafe fn destroy(&self, d: &ash::Device) {
        // SAFETY: per this function's contract; each handle is destroyed once.
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_buffer(self.buffer, None);
            d.free_memory(self.memory, None);
        }
    }
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
        // 1.2: buffer device addresses for `axpb`'s arguments, on devices
        // that have them (the adapter requires them).
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
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
        let mut has = vk::PhysicalDeviceVulkan12Features::default();
        // SAFETY: a device of this instance, whose API version (1.2) has the structure.
        unsafe {
            instance.get_physical_device_features2(
                physical,
                &mut vk::PhysicalDeviceFeatures2::default().push_next(&mut has),
            )
        };
        let addresses = has.buffer_device_address == vk::TRUE;
        let mut enable = vk::PhysicalDeviceVulkan12Features::default().buffer_device_address(addresses);
        // SAFETY: one queue of a family the device has, and a feature it has.
        let device = check(
            unsafe {
                instance.create_device(
                    physical,
                    &vk::DeviceCreateInfo::default().queue_create_infos(&queues).push_next(&mut enable),
                    None,
                )
            },
            "vkCreateDevice",
        )?;
        // SAFETY: the device was made with buffer device addresses.
        let axpb = if addresses { Some(unsafe { Axpb::new(&instance, physical, &device) }?) } else { None };
        // SAFETY: handles made just before from `device`; the shader is
        // valid SPIR-V with one compute entry point `main` and no resources.
        unsafe {
            let queue = device.get_device_queue(family, 0);
            let layout =
                check(device.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None), "layout")?;
            let pipeline = compute_pipeline(&device, EMPTY_SPV, layout)?;
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
                axpb,
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
        [
            (
                "raw_eager",
                "per dispatch: a primary command buffer recorded (barrier, bind, dispatch) and vkQueueSubmit",
            ),
            (
                "raw_eager_batched",
                "every dispatch recorded into one primary command buffer (barrier between), one vkQueueSubmit",
            ),
        ]
        .into_iter()
        .chain(self.axpb.as_ref().map(|_| {
            (
                "raw_eager_axpb",
                "the same per dispatch with axpb over 256 invocations, its buffer device address and two values as push constants",
            )
        }))
        .collect()
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
        // Variant 2, `axpb`: its pipeline and the push constants of each dispatch.
        let axpb = match (variant, &self.axpb) {
            (2, Some(axpb)) => Some((axpb, axpb.args())),
            (2, None) => return Err("no axpb baseline: the device has no buffer device addresses".into()),
            _ => None,
        };
        let record = |cb: vk::CommandBuffer, dispatches: usize| -> Result<(), String> {
            // SAFETY: `cb` is of this device's pool, not pending (the previous
            // submission was waited for), and the pool allows resets; axpb's
            // pipeline takes the 16 bytes of push constants pushed, and its
            // 256 invocations stay within its buffer.
            unsafe {
                check(d.begin_command_buffer(cb, &begin), "vkBeginCommandBuffer")?;
                let pipeline = axpb.map_or(self.pipeline, |(a, _)| a.pipeline);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
                for _ in 0..dispatches {
                    compute_barrier(d, cb);
                    if let Some((a, args)) = &axpb {
                        d.cmd_push_constants(cb, a.layout, vk::ShaderStageFlags::COMPUTE, 0, args);
                    }
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
            if let Some(axpb) = &self.axpb {
                axpb.destroy(&self.device);
            }
            self.device.destroy_fence(self.fence, None);
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_pipeline(self.pipeline, None);
            self.device.destroy_pipeline_layout(self.layout, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
