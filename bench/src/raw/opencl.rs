//! The OpenCL baseline: a `cl_khr_command_buffer` of kernel commands where
//! the device has the extension, else one `clEnqueueNDRangeKernel` per node.
//!
//! Only the entry points whose C signature is the same in every 0.9.x
//! version of the extension are used (`clCommandNDRangeKernelKHR` had its
//! properties argument from the start), so one set of function-pointer types
//! serves PoCL 3 (0.9.0), PoCL 5 (0.9.4) and current drivers.

#![allow(non_camel_case_types)]

use std::ffi::{CStr, c_void};
use std::ptr;

use cl3::types::{
    cl_command_queue, cl_context, cl_device_id, cl_event, cl_int, cl_kernel, cl_program, cl_properties, cl_uint,
};

use cl3::device::CL_DEVICE_TYPE_ALL;

use super::{AXPB_ITEMS, RawGraph};

type cl_command_buffer_khr = *mut c_void;
type cl_bitfield = cl3::types::cl_bitfield;

// `cl_khr_command_buffer` 0.9.x's names for what `command_buffer_flags` reads.
const CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR: cl_uint = 0x12A9;
const CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR: cl_bitfield = 1 << 2;
const CL_COMMAND_BUFFER_FLAGS_KHR: cl_properties = 0x1293;
const CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR: cl_bitfield = 1 << 0;
type cl_sync_point_khr = cl_uint;

type CreateCommandBuffer = unsafe extern "system" fn(
    cl_uint,
    *const cl_command_queue,
    *const cl_properties,
    *mut cl_int,
) -> cl_command_buffer_khr;
type CommandBufferOp = unsafe extern "system" fn(cl_command_buffer_khr) -> cl_int;
type EnqueueCommandBuffer = unsafe extern "system" fn(
    cl_uint,
    *mut cl_command_queue,
    cl_command_buffer_khr,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;
type CommandNdRange = unsafe extern "system" fn(
    command_buffer: cl_command_buffer_khr,
    queue: cl_command_queue,
    properties: *const cl_properties,
    kernel: cl_kernel,
    work_dim: cl_uint,
    offset: *const usize,
    global: *const usize,
    local: *const usize,
    num_sync_points: cl_uint,
    sync_point_wait_list: *const cl_sync_point_khr,
    sync_point: *mut cl_sync_point_khr,
    mutable_handle: *mut *mut c_void,
) -> cl_int;

/// `cl_intel_unified_shared_memory`'s entry points that the `axpb` baseline
/// uses: `clDeviceMemAllocINTEL`, `clMemFreeINTEL`,
/// `clSetKernelArgMemPointerINTEL`.
type DeviceMemAlloc = unsafe extern "system" fn(
    cl_context,
    cl_device_id,
    *const cl_properties,
    usize,
    cl_uint,
    *mut cl_int,
) -> *mut c_void;
type MemFree = unsafe extern "system" fn(cl_context, *mut c_void) -> cl_int;
type SetKernelArgMemPointer = unsafe extern "system" fn(cl_kernel, cl_uint, *const c_void) -> cl_int;

/// Whether `device` lists extension `name` in `CL_DEVICE_EXTENSIONS`.
fn lists_extension(device: cl_device_id, name: &str) -> bool {
    cl3::device::get_device_info(device, cl3::device::CL_DEVICE_EXTENSIONS)
        .is_ok_and(|e| String::from(e).split_whitespace().any(|x| x == name))
}

/// Looks up extension entry point `name` on `platform`.
fn extension_function(platform: *mut c_void, name: &CStr) -> Option<*mut c_void> {
    let library = cl3::load_library().as_ref().ok()?;
    let address = library.clGetExtensionFunctionAddressForPlatform(platform.cast(), name.as_ptr())?;
    (!address.is_null()).then_some(address)
}

/// The extension's entry points on one platform.
struct CommandBufferApi {
    create: CreateCommandBuffer,
    finalize: CommandBufferOp,
    release: CommandBufferOp,
    enqueue: EnqueueCommandBuffer,
    nd_range: CommandNdRange,
}

impl CommandBufferApi {
    /// Resolves the entry points on `platform`; `None` if one is missing.
    fn resolve(platform: *mut c_void) -> Option<CommandBufferApi> {
        let find = |name: &CStr| extension_function(platform, name);
        // SAFETY: each address is the named entry point, whose C signature
        // is the function-pointer type it is given (see the module doc).
        unsafe {
            Some(CommandBufferApi {
                create: std::mem::transmute::<*mut c_void, CreateCommandBuffer>(find(c"clCreateCommandBufferKHR")?),
                finalize: std::mem::transmute::<*mut c_void, CommandBufferOp>(find(c"clFinalizeCommandBufferKHR")?),
                release: std::mem::transmute::<*mut c_void, CommandBufferOp>(find(c"clReleaseCommandBufferKHR")?),
                enqueue: std::mem::transmute::<*mut c_void, EnqueueCommandBuffer>(find(c"clEnqueueCommandBufferKHR")?),
                nd_range: std::mem::transmute::<*mut c_void, CommandNdRange>(find(c"clCommandNDRangeKernelKHR")?),
            })
        }
    }
}

/// The baseline's kernels: `empty`, and `axpb` as the bench's (`p[i] = a *
/// p[i] + b`) over a buffer.
const PROGRAM: &str = "__kernel void empty(void) {}\n\
    __kernel void axpb(__global uint *p, uint a, uint b) { size_t i = get_global_id(0); p[i] = a * p[i] + b; }";

/// One `clEnqueueNDRangeKernel` of `kernel` over `global` (one dimension)
/// on `queue` after `waits`, returning its event.
///
/// # Safety
/// `queue`, `kernel` and the events of `waits` are live objects of one
/// context, the kernel's arguments are set, and the memory they name holds
/// `global[0]` work-items' data.
unsafe fn launch(
    queue: cl_command_queue,
    kernel: cl_kernel,
    global: &[usize; 1],
    waits: &[cl_event],
) -> Result<cl_event, String> {
    // SAFETY: the caller's contract; null offset and local size, and a null
    // wait list where it is empty.
    check(
        unsafe {
            cl3::command_queue::enqueue_nd_range_kernel(
                queue,
                kernel,
                1,
                ptr::null(),
                global.as_ptr(),
                ptr::null(),
                waits.len() as cl_uint,
                if waits.is_empty() { ptr::null() } else { waits.as_ptr() },
            )
        },
        "clEnqueueNDRangeKernel",
    )
}

fn check<T>(result: Result<T, cl_int>, what: &str) -> Result<T, String> {
    result.map_err(|code| format!("{what}: OpenCL error {code}"))
}

fn status(code: cl_int, what: &str) -> Result<(), String> {
    check(if code == 0 { Ok(()) } else { Err(code) }, what)
}

/// The memory axpb updates, of the kind the OpenCL library's USM is on the
/// device: an Intel USM device allocation where the device has
/// `cl_intel_unified_shared_memory` (Intel's runtimes), else an SVM
/// allocation where it has coarse-grained SVM (NVIDIA's OpenCL, PoCL),
/// else a buffer. Intel's CPU runtime does more per launch for a USM
/// pointer than for SVM (docs/performance.md, "Events kept by the caller").
enum AxpbData {
    None,
    IntelUsm(*mut c_void, MemFree),
    Svm(*mut c_void),
    Buffer(cl3::types::cl_mem),
}

/// The USM entry points of `platform`, where `device` lists the extension
/// and all three resolve.
fn intel_usm(platform: *mut c_void, device: cl_device_id) -> Option<(DeviceMemAlloc, MemFree, SetKernelArgMemPointer)> {
    if !lists_extension(device, cmdbuf_opencl::version::USM_EXTENSION) {
        return None;
    }
    let alloc = extension_function(platform, c"clDeviceMemAllocINTEL")?;
    let free = extension_function(platform, c"clMemFreeINTEL")?;
    let set = extension_function(platform, c"clSetKernelArgMemPointerINTEL")?;
    // SAFETY: each address is the named entry point of the extension, whose C
    // signature is the function-pointer type it is given.
    unsafe {
        Some((
            std::mem::transmute::<*mut c_void, DeviceMemAlloc>(alloc),
            std::mem::transmute::<*mut c_void, MemFree>(free),
            std::mem::transmute::<*mut c_void, SetKernelArgMemPointer>(set),
        ))
    }
}

/// A context, an in-order queue and the empty kernel on one device, and
/// the last graph built: a command buffer, or the node count to launch eagerly.
pub struct ClGraph {
    context: cl_context,
    queue: cl_command_queue,
    /// Out of order where the device offers it (else in order): the queue
    /// of `raw_eager_waits`, as cmdbuf's fork-join eager launches are on an
    /// out-of-order queue with wait lists.
    ooo_queue: cl_command_queue,
    /// The last graph built's predecessors, which `raw_eager_waits` waits for.
    preds: Vec<Vec<usize>>,
    program: cl_program,
    kernel: cl_kernel,
    /// `axpb` over `AXPB_ITEMS` u32 values, its arguments set once (they
    /// never change).
    axpb: cl_kernel,
    axpb_data: AxpbData,
    api: Option<CommandBufferApi>,
    /// `CL_COMMAND_BUFFER_FLAGS_KHR` of the buffers built.
    buffer_flags: cl_bitfield,
    buffer: cl_command_buffer_khr,
    eager_nodes: usize,
}

impl ClGraph {
    /// Opens the first OpenCL device named `name`.
    pub fn open(name: &str) -> Result<ClGraph, String> {
        for platform in check(cl3::platform::get_platform_ids(), "clGetPlatformIDs")? {
            let devices = cl3::device::get_device_ids(platform, CL_DEVICE_TYPE_ALL).unwrap_or_default();
            for device in devices {
                let named: String =
                    check(cl3::device::get_device_info(device, cl3::device::CL_DEVICE_NAME), "name")?.into();
                if named.trim_end_matches('\0') == name {
                    return Self::open_device(platform.cast(), device, Self::command_buffer_flags(device));
                }
            }
        }
        Err(format!("no OpenCL device is named {name}"))
    }

    /// Whether the device has `cl_khr_command_buffer`, and the flags its
    /// command buffers are created with: a version with a pending state
    /// (before 0.9.8) refuses to enqueue a buffer still pending, and PoCL 3.1
    /// can report a buffer pending for a moment after `clFinish` returned
    /// (`CL_INVALID_OPERATION` at the next enqueue), so there the buffer is
    /// made for simultaneous use where the device offers it, as the OpenCL
    /// library's own command buffers are.
    fn command_buffer_flags(device: cl_device_id) -> Option<cl_bitfield> {
        use cmdbuf_opencl::version;
        if !lists_extension(device, version::COMMAND_BUFFER_EXTENSION) {
            return None;
        }
        let bytes =
            cl3::device::get_device_data(device, cl3::device::CL_DEVICE_EXTENSIONS_WITH_VERSION).unwrap_or_default();
        let extensions = version::parse_extensions_with_version(&bytes);
        let pending_state = version::extension_version(&extensions, version::COMMAND_BUFFER_EXTENSION)
            .and_then(version::select_abi)
            .is_none_or(|abi| abi.pending_state);
        let capabilities: cl_bitfield = cl3::device::get_device_info(device, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR)
            .map(Into::into)
            .unwrap_or(0);
        let simultaneous = pending_state && capabilities & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR != 0;
        Some(if simultaneous { CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR } else { 0 })
    }

    fn open_device(platform: *mut c_void, device: cl_device_id, flags: Option<cl_bitfield>) -> Result<ClGraph, String> {
        let context =
            check(cl3::context::create_context(&[device], ptr::null(), None, ptr::null_mut()), "clCreateContext")?;
        let mut graph = ClGraph {
            context,
            queue: ptr::null_mut(),
            ooo_queue: ptr::null_mut(),
            preds: Vec::new(),
            program: ptr::null_mut(),
            kernel: ptr::null_mut(),
            axpb: ptr::null_mut(),
            axpb_data: AxpbData::None,
            api: flags.and_then(|_| CommandBufferApi::resolve(platform)),
            buffer_flags: flags.unwrap_or(0),
            buffer: ptr::null_mut(),
            eager_nodes: 0,
        };
        // SAFETY: `device` belongs to `context`; default (in-order) properties.
        graph.queue = check(
            unsafe { cl3::command_queue::create_command_queue_with_properties(context, device, ptr::null()) },
            "clCreateCommandQueueWithProperties",
        )?;
        let offered: cl3::types::cl_ulong = check(
            cl3::device::get_device_info(device, cl3::device::CL_DEVICE_QUEUE_ON_HOST_PROPERTIES),
            "queue properties",
        )?
        .into();
        let ooo = offered & cl3::command_queue::CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
        let properties: [cl3::types::cl_queue_properties; 3] = [cl3::command_queue::CL_QUEUE_PROPERTIES.into(), ooo, 0];
        // SAFETY: `device` belongs to `context`; a property list ending in 0
        // with what the device offers.
        graph.ooo_queue = check(
            unsafe { cl3::command_queue::create_command_queue_with_properties(context, device, properties.as_ptr()) },
            "clCreateCommandQueueWithProperties",
        )?;
        graph.program =
            check(cl3::program::create_program_with_source(context, &[PROGRAM]), "clCreateProgramWithSource")?;
        check(cl3::program::build_program(graph.program, &[device], c"", None, ptr::null_mut()), "clBuildProgram")?;
        graph.kernel = check(cl3::kernel::create_kernel(graph.program, c"empty"), "clCreateKernel")?;
        graph.axpb = check(cl3::kernel::create_kernel(graph.program, c"axpb"), "clCreateKernel")?;
        let svm = cl3::device::get_device_info(device, cl3::device::CL_DEVICE_SVM_CAPABILITIES)
            .map(|c| cl3::types::cl_ulong::from(c) & cl3::device::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0)
            .unwrap_or(false);
        let (a, b) = (1u32, 1u32);
        // SAFETY: axpb's arguments: a USM or SVM allocation or a buffer of
        // this context (no host pointer, a non-zero size), then two uints.
        unsafe {
            if let Some((alloc, free, set_pointer)) = intel_usm(platform, device) {
                let mut code = 0;
                let p = alloc(context, device, ptr::null(), AXPB_ITEMS * 4, 0, &mut code);
                status(code, "clDeviceMemAllocINTEL")?;
                if p.is_null() {
                    return Err("clDeviceMemAllocINTEL: a null allocation".to_string());
                }
                graph.axpb_data = AxpbData::IntelUsm(p, free);
                status(set_pointer(graph.axpb, 0, p), "clSetKernelArgMemPointerINTEL")?;
            } else if svm {
                let p = check(
                    cl3::memory::svm_alloc(context, cl3::memory::CL_MEM_READ_WRITE, AXPB_ITEMS * 4, 0),
                    "clSVMAlloc",
                )?;
                graph.axpb_data = AxpbData::Svm(p);
                check(cl3::kernel::set_kernel_arg_svm_pointer(graph.axpb, 0, p), "clSetKernelArgSVMPointer")?;
            } else {
                let mem = check(
                    cl3::memory::create_buffer(
                        context,
                        cl3::memory::CL_MEM_READ_WRITE,
                        AXPB_ITEMS * 4,
                        ptr::null_mut(),
                    ),
                    "clCreateBuffer",
                )?;
                graph.axpb_data = AxpbData::Buffer(mem);
                check(
                    cl3::kernel::set_kernel_arg(graph.axpb, 0, size_of_val(&mem), (&raw const mem).cast()),
                    "clSetKernelArg",
                )?;
            }
            check(cl3::kernel::set_kernel_arg(graph.axpb, 1, 4, (&raw const a).cast()), "clSetKernelArg")?;
            check(cl3::kernel::set_kernel_arg(graph.axpb, 2, 4, (&raw const b).cast()), "clSetKernelArg")?;
        }
        Ok(graph)
    }

    /// `clEnqueueNDRangeKernel` `nodes` times, each returning its event
    /// (released at once), as the cmdbuf eager call does: of the empty
    /// kernel on one work-item, or with `axpb` of axpb over `AXPB_ITEMS`.
    fn enqueue_each(&self, nodes: usize, axpb: bool) -> Result<(), String> {
        let (kernel, global) = if axpb { (self.axpb, [AXPB_ITEMS]) } else { (self.kernel, [1usize]) };
        for _ in 0..nodes {
            // SAFETY: a kernel of this context whose arguments are set (none
            // for `empty`), over its work-items (axpb's buffer holds one
            // value per work-item); no wait list.
            let event = unsafe { launch(self.queue, kernel, &global, &[])? };
            // SAFETY: the event was returned to us and is not used again.
            let _ = unsafe { cl3::event::release_event(event) };
        }
        Ok(())
    }

    /// `clEnqueueNDRangeKernel` of the empty kernel per node of the last
    /// graph built, on the out-of-order queue, each waiting for its
    /// predecessors' events, every event kept until the last enqueue and
    /// then released: what cmdbuf's eager fork-join asks of the driver (the
    /// bench keeps every launch's event until the last launch).
    fn enqueue_with_waits(&self, nodes: usize) -> Result<(), String> {
        let global = [1usize];
        let mut events: Vec<cl_event> = Vec::with_capacity(nodes);
        let mut result = Ok(());
        for i in 0..nodes {
            let waits: Vec<cl_event> =
                self.preds.get(i).map(|p| p.iter().map(|&d| events[d]).collect()).unwrap_or_default();
            // SAFETY: the empty kernel of this context over one work-item;
            // the wait list holds live events returned by earlier enqueues.
            let enqueued = unsafe { launch(self.ooo_queue, self.kernel, &global, &waits) };
            match enqueued {
                Ok(event) => events.push(event),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        for event in events {
            // SAFETY: returned to us above and not used again.
            let _ = unsafe { cl3::event::release_event(event) };
        }
        result
    }

    fn release_buffer(&mut self) {
        if let (Some(api), false) = (&self.api, self.buffer.is_null()) {
            // SAFETY: the buffer was made by `build` and `wait` ran since.
            unsafe { (api.release)(self.buffer) };
            self.buffer = ptr::null_mut();
        }
    }
}

impl RawGraph for ClGraph {
    fn mechanism(&self) -> String {
        match self.api {
            Some(_) => "cl_khr_command_buffer of kernel commands, clEnqueueCommandBufferKHR".into(),
            None => "no command-buffer extension: clEnqueueNDRangeKernel per node, in-order queue".into(),
        }
    }

    fn build(&mut self, preds: &[Vec<usize>]) -> Result<(), String> {
        self.wait()?;
        self.release_buffer();
        self.preds = preds.to_vec();
        let Some(api) = &self.api else {
            self.eager_nodes = preds.len();
            return Ok(());
        };
        let global = [1usize];
        let mut code = 0;
        let properties: [cl_properties; 3] = [CL_COMMAND_BUFFER_FLAGS_KHR, self.buffer_flags, 0];
        // SAFETY: one live queue; the properties list ends with 0; the wait
        // lists hold sync points returned earlier by this buffer (`preds` is
        // topological).
        unsafe {
            let buffer = (api.create)(1, &self.queue, properties.as_ptr(), &mut code);
            status(code, "clCreateCommandBufferKHR")?;
            self.buffer = buffer;
            let mut points: Vec<cl_sync_point_khr> = Vec::with_capacity(preds.len());
            for p in preds {
                let waits: Vec<cl_sync_point_khr> = p.iter().map(|&d| points[d]).collect();
                let mut point = 0;
                let code = (api.nd_range)(
                    buffer,
                    ptr::null_mut(),
                    ptr::null(),
                    self.kernel,
                    1,
                    ptr::null(),
                    global.as_ptr(),
                    ptr::null(),
                    waits.len() as cl_uint,
                    if waits.is_empty() { ptr::null() } else { waits.as_ptr() },
                    &mut point,
                    ptr::null_mut(),
                );
                status(code, "clCommandNDRangeKernelKHR")?;
                points.push(point);
            }
            status((api.finalize)(buffer), "clFinalizeCommandBufferKHR")
        }
    }

    fn launch(&mut self) -> Result<(), String> {
        match &self.api {
            // SAFETY: a finalized buffer recorded for this queue.
            Some(api) => status(
                unsafe { (api.enqueue)(1, &mut self.queue, self.buffer, 0, ptr::null(), ptr::null_mut()) },
                "clEnqueueCommandBufferKHR",
            ),
            None => self.enqueue_each(self.eager_nodes, false),
        }
    }

    fn eager_variants(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("raw_eager", "clEnqueueNDRangeKernel per node with an event, in-order queue"),
            (
                "raw_eager_axpb",
                "the same with axpb over 256 work-items on Intel USM where the device has it, else SVM, else a buffer, \
                 its arguments set once before",
            ),
            (
                "raw_eager_waits",
                "clEnqueueNDRangeKernel per node on an out-of-order queue (in order where the device has none), \
                 each waiting for its predecessors' events, the events released after the last enqueue",
            ),
        ]
    }

    fn eager(&mut self, variant: usize, nodes: usize) -> Result<(), String> {
        match variant {
            2 => self.enqueue_with_waits(nodes),
            _ => self.enqueue_each(nodes, variant == 1),
        }
    }

    fn wait(&mut self) -> Result<(), String> {
        if !self.ooo_queue.is_null() {
            check(cl3::command_queue::finish(self.ooo_queue), "clFinish")?;
        }
        check(cl3::command_queue::finish(self.queue), "clFinish")
    }
}

impl Drop for ClGraph {
    fn drop(&mut self) {
        let _ = self.wait();
        self.release_buffer();
        // SAFETY: handles made in `open_device`, unused from now on; null
        // ones (a failed open) are skipped.
        unsafe {
            if !self.kernel.is_null() {
                let _ = cl3::kernel::release_kernel(self.kernel);
            }
            if !self.axpb.is_null() {
                let _ = cl3::kernel::release_kernel(self.axpb);
            }
            match self.axpb_data {
                AxpbData::Buffer(mem) => {
                    let _ = cl3::memory::release_mem_object(mem);
                }
                AxpbData::IntelUsm(p, free) => {
                    let _ = free(self.context, p);
                }
                AxpbData::Svm(p) => {
                    let _ = cl3::memory::svm_free(self.context, p);
                }
                AxpbData::None => {}
            }
            if !self.program.is_null() {
                let _ = cl3::program::release_program(self.program);
            }
            if !self.queue.is_null() {
                let _ = cl3::command_queue::release_command_queue(self.queue);
            }
            if !self.ooo_queue.is_null() {
                let _ = cl3::command_queue::release_command_queue(self.ooo_queue);
            }
            let _ = cl3::context::release_context(self.context);
        }
    }
}
