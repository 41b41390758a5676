//! `urKernel*`: kernels of built programs, their information, and the
//! translation of UR's launch arguments and ND-ranges that the eager launch
//! (`urEnqueueKernelLaunchWithArgsExp`) and the command-buffer appends and
//! updates share.
//!
//! UR 0.12 passes arguments with each launch, as cmdbuf-core does, so a kernel
//! handle holds no argument state.

#![allow(non_snake_case)]

use std::ffi::c_void;
use std::sync::Arc;

use cmdbuf_core::{CacheConfig, ensure, err};

use crate::boundary::conv::work_sizes;
use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::{InfoOut, c_str, query, write_out};
use crate::objects::device::Device;
use crate::objects::kernel::Kernel;
use crate::objects::program::Program;
use crate::objects::queue::Queue;
use crate::sys::*;

/// # Safety
/// UR's contract for `urKernelCreate`.
pub(crate) unsafe extern "C" fn urKernelCreate(
    program: ur_program_handle_t,
    name: *const std::ffi::c_char,
    kernel: *mut ur_kernel_handle_t,
) -> ur_result_t {
    guard("urKernelCreate", || {
        // SAFETY: `program` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let program = unsafe { Handle::<Program>::get(program)? };
        // SAFETY: `name` is null or NUL-terminated (entry_points doc, "Arrays and strings"), all `c_str` needs.
        let name = unsafe { c_str(name, "pKernelName")? };
        let built = program.value.built()?;
        let value = Kernel { kernel: cmdbuf_core::Kernel::new(&built, name)?, program: program.to_arc() };
        // SAFETY: non-null because checks.rs rejected `NULL == phKernel`; writable per the contract ("Out-pointers").
        unsafe { write_out(kernel, Handle::create(value)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urKernelRetain`.
pub(crate) unsafe extern "C" fn urKernelRetain(kernel: ur_kernel_handle_t) -> ur_result_t {
    // SAFETY: `kernel` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urKernelRetain", || unsafe { Handle::<Kernel>::retain(kernel) })
}

/// # Safety
/// UR's contract for `urKernelRelease`.
pub(crate) unsafe extern "C" fn urKernelRelease(kernel: ur_kernel_handle_t) -> ur_result_t {
    // SAFETY: `kernel` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urKernelRelease", || unsafe { Handle::<Kernel>::release(kernel) })
}

/// # Safety
/// UR's contract for `urKernelGetInfo`.
pub(crate) unsafe extern "C" fn urKernelGetInfo(
    kernel: ur_kernel_handle_t,
    name: ur_kernel_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Kernel>, out: InfoOut| {
        let k = &handle.value;
        use ur_kernel_info_t as I;
        match name {
            I::UR_KERNEL_INFO_FUNCTION_NAME => out.string(k.kernel.name()),
            I::UR_KERNEL_INFO_NUM_ARGS => out.value(k.kernel.num_args() as u32),
            I::UR_KERNEL_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            I::UR_KERNEL_INFO_CONTEXT => out.value(k.program.value.context().raw()),
            I::UR_KERNEL_INFO_PROGRAM => out.value(k.program.raw()),
            I::UR_KERNEL_INFO_ATTRIBUTES => out.string(&attributes(&k.kernel)),
            I::UR_KERNEL_INFO_NUM_REGS | I::UR_KERNEL_INFO_SPILL_MEM_SIZE => Err(err!(
                UnsupportedEnumeration,
                "kernel info {} (optional): cmdbuf-core does not report register use",
                name.0
            )),
            other => Err(err!(InvalidEnumeration, "kernel info {}", other.0)),
        }
    };
    // SAFETY: `kernel` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urKernelGetInfo", kernel, (size, value, size_ret), answer) }
}

/// The kernel's attributes as OpenCL C spells them (`CL_KERNEL_ATTRIBUTES`).
fn attributes(kernel: &cmdbuf_core::Kernel) -> String {
    match kernel.compile_work_group_size() {
        Some([x, y, z]) => format!("reqd_work_group_size({x},{y},{z})"),
        None => String::new(),
    }
}

/// Borrows a kernel and checks that `device` is its program's device.
///
/// # Safety
/// `kernel` and `device` are each null or one of this adapter's handles (UR's
/// contract for the `urKernelGet*Info` calls).
unsafe fn kernel_on<'a>(kernel: ur_kernel_handle_t, device: ur_device_handle_t) -> AbiResult<&'a Handle<Kernel>> {
    // SAFETY: `kernel` and `device` are each null or one of this adapter's handles (this function's `# Safety`), all
    // `get` needs.
    let (handle, device) = unsafe { (Handle::<Kernel>::get(kernel)?, Handle::<Device>::get(device)?) };
    let context = handle.value.program.value.context();
    ensure!(context.value.holds(device), InvalidDevice, "the device is not the kernel's");
    Ok(handle)
}

/// # Safety
/// UR's contract for `urKernelGetGroupInfo`.
pub(crate) unsafe extern "C" fn urKernelGetGroupInfo(
    kernel: ur_kernel_handle_t,
    device: ur_device_handle_t,
    name: ur_kernel_group_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urKernelGetGroupInfo", || {
        // SAFETY: `kernel` and `device` are each null or one of this adapter's handles (entry_points doc, "Handles"),
        // all `kernel_on` needs.
        let handle = unsafe { kernel_on(kernel, device)? };
        // SAFETY: `value` is null or writable for `size` bytes, `size_ret` null or writable (entry_points doc, "Info
        // queries"), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        let k = &handle.value.kernel;
        use ur_kernel_group_info_t as I;
        match name {
            I::UR_KERNEL_GROUP_INFO_WORK_GROUP_SIZE => out.value(k.max_work_group_size()),
            I::UR_KERNEL_GROUP_INFO_COMPILE_WORK_GROUP_SIZE => {
                out.array(&k.compile_work_group_size().unwrap_or([0; 3]))
            }
            I::UR_KERNEL_GROUP_INFO_LOCAL_MEM_SIZE => out.value(k.local_mem_size()),
            I::UR_KERNEL_GROUP_INFO_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => {
                out.value(k.preferred_work_group_size_multiple())
            }
            I::UR_KERNEL_GROUP_INFO_PRIVATE_MEM_SIZE => out.value(k.private_mem_size()),
            // A maximum is declared in SPIR-V only (MaxWorkgroupSizeINTEL);
            // zeros say "unspecified", as UR defines them. The 3-D maximum
            // bounds the linear size by its product.
            I::UR_KERNEL_GROUP_INFO_COMPILE_MAX_WORK_GROUP_SIZE => {
                out.array(&k.signature().max_work_group_size.unwrap_or([0; 3]))
            }
            I::UR_KERNEL_GROUP_INFO_COMPILE_MAX_LINEAR_WORK_GROUP_SIZE => {
                out.value(k.signature().max_work_group_size.map_or(0, |m| m.iter().product::<usize>()))
            }
            // An optional query (`[optional-query]` in the header), answered
            // as such: it is defined for custom devices and built-in kernels
            // only, as in OpenCL.
            I::UR_KERNEL_GROUP_INFO_GLOBAL_WORK_SIZE => Err(err!(
                UnsupportedEnumeration,
                "GLOBAL_WORK_SIZE is defined for custom devices and built-in kernels only, as in OpenCL"
            )),
            other => Err(err!(InvalidEnumeration, "kernel group info {}", other.0)),
        }
    })
}

/// # Safety
/// UR's contract for `urKernelGetSubGroupInfo`.
pub(crate) unsafe extern "C" fn urKernelGetSubGroupInfo(
    kernel: ur_kernel_handle_t,
    device: ur_device_handle_t,
    name: ur_kernel_sub_group_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urKernelGetSubGroupInfo", || {
        // SAFETY: `kernel` and `device` are each null or one of this adapter's handles (entry_points doc, "Handles"),
        // all `kernel_on` needs.
        let handle = unsafe { kernel_on(kernel, device)? };
        // SAFETY: `value` is null or writable for `size` bytes, `size_ret` null or writable (entry_points doc, "Info
        // queries"), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        let k = &handle.value.kernel;
        // The kernel's own largest sub-group (OpenCL CPU drivers compile each
        // kernel for one width), as UR's OpenCL adapter answers it.
        let max_sub_group = k.max_sub_group_size();
        use ur_kernel_sub_group_info_t as I;
        match name {
            I::UR_KERNEL_SUB_GROUP_INFO_MAX_SUB_GROUP_SIZE => out.value(max_sub_group),
            I::UR_KERNEL_SUB_GROUP_INFO_MAX_NUM_SUB_GROUPS => {
                out.value(k.max_work_group_size().div_ceil(max_sub_group as usize) as u32)
            }
            // What the kernel's SPIR-V requires (SubgroupsPerWorkgroup,
            // SubgroupSize); 0 where it declares nothing, as UR defines it.
            I::UR_KERNEL_SUB_GROUP_INFO_COMPILE_NUM_SUB_GROUPS => {
                out.value(k.signature().reqd_num_sub_groups.unwrap_or(0))
            }
            I::UR_KERNEL_SUB_GROUP_INFO_SUB_GROUP_SIZE_INTEL => {
                out.value(k.signature().reqd_sub_group_size.unwrap_or(0))
            }
            other => Err(err!(InvalidEnumeration, "kernel sub-group info {}", other.0)),
        }
    })
}

/// # Safety
/// UR's contract for `urKernelGetSuggestedLocalWorkSize`.
pub(crate) unsafe extern "C" fn urKernelGetSuggestedLocalWorkSize(
    kernel: ur_kernel_handle_t,
    queue: ur_queue_handle_t,
    work_dim: u32,
    _global_offset: *const usize,
    global_size: *const usize,
    suggested: *mut usize,
) -> ur_result_t {
    guard("urKernelGetSuggestedLocalWorkSize", || {
        // SAFETY: `kernel`, `queue`, `global_size` and `suggested` are as `suggest_local_size` requires (entry_points
        // doc, "Handles", "Arrays and strings", "Out-pointers"; checks.rs rejected `NULL == pSuggestedLocalWorkSize`).
        unsafe { suggest_local_size(kernel, queue, work_dim, global_size, suggested) }
    })
}

/// # Safety
/// UR's contract for `urKernelGetSuggestedLocalWorkSizeWithArgs`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn urKernelGetSuggestedLocalWorkSizeWithArgs(
    kernel: ur_kernel_handle_t,
    queue: ur_queue_handle_t,
    work_dim: u32,
    _global_offset: *const usize,
    global_size: *const usize,
    _num_args: u32,
    _args: *const ur_exp_kernel_arg_properties_t,
    suggested: *mut usize,
) -> ur_result_t {
    // The arguments cannot change the choice: cmdbuf sizes work-groups from
    // the kernel's and device's limits, local memory included at launch.
    guard("urKernelGetSuggestedLocalWorkSizeWithArgs", || {
        // SAFETY: `kernel`, `queue`, `global_size` and `suggested` are as `suggest_local_size` requires (entry_points
        // doc, "Handles", "Arrays and strings", "Out-pointers"; checks.rs rejected `NULL == pSuggestedLocalWorkSize`).
        unsafe { suggest_local_size(kernel, queue, work_dim, global_size, suggested) }
    })
}

/// The local size a launch without one gets (cmdbuf-core's own choice).
///
/// # Safety
/// As UR's contract for `urKernelGetSuggestedLocalWorkSize` gives them:
/// `kernel` and `queue` are each null or one of this adapter's handles;
/// `global_size` is null or holds `work_dim` sizes; `suggested` is writable
/// for `work_dim` sizes (not null: both callers' generated checks reject
/// `NULL == pSuggestedLocalWorkSize`).
unsafe fn suggest_local_size(
    kernel: ur_kernel_handle_t,
    queue: ur_queue_handle_t,
    work_dim: u32,
    global_size: *const usize,
    suggested: *mut usize,
) -> AbiResult {
    // SAFETY: `kernel` and `queue` are each null or one of this adapter's handles (this function's `# Safety`), all
    // `get` needs.
    let (kernel, queue) = unsafe { (Handle::<Kernel>::get(kernel)?, Handle::<Queue>::get(queue)?) };
    ensure!(
        Arc::ptr_eq(queue.value.context(), kernel.value.program.value.context()),
        InvalidQueue,
        "the queue belongs to another context than the kernel"
    );
    // SAFETY: `global_size` is null or holds `work_dim` sizes (this function's `# Safety`), all `work_sizes` needs.
    let global = unsafe { work_sizes(work_dim, global_size, "pGlobalWorkSize")? }
        .ok_or_else(|| err!(InvalidNullPointer, "pGlobalWorkSize is null"))?;
    let mut padded = [1usize; 3];
    padded[..global.len()].copy_from_slice(global);
    let info = kernel.value.program.value.context().value.core().device().info();
    let k = &kernel.value.kernel;
    let local = match k.compile_work_group_size() {
        Some(required) => required,
        None => {
            cmdbuf_core::launch::choose_local_size(padded, work_dim, k.max_work_group_size(), info.max_work_item_sizes)
        }
    };
    // SAFETY: `suggested` is writable for `work_dim` sizes (this function's `# Safety`).
    unsafe { std::ptr::copy_nonoverlapping(local.as_ptr(), suggested, work_dim as usize) };
    Ok(())
}

/// # Safety
/// UR's contract for `urKernelSetExecInfo`.
pub(crate) unsafe extern "C" fn urKernelSetExecInfo(
    kernel: ur_kernel_handle_t,
    name: ur_kernel_exec_info_t,
    size: usize,
    _properties: *const ur_kernel_exec_info_properties_t,
    value: *const c_void,
) -> ur_result_t {
    guard("urKernelSetExecInfo", || {
        // SAFETY: `kernel` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let kernel = unsafe { Handle::<Kernel>::get(kernel)? };
        use ur_kernel_exec_info_t as I;
        match name {
            // Every kernel of cmdbuf may reach any USM allocation of its
            // context, through any pointer: what these hints ask for holds
            // already, so accepting them is truthful.
            I::UR_KERNEL_EXEC_INFO_USM_INDIRECT_ACCESS | I::UR_KERNEL_EXEC_INFO_USM_PTRS => Ok(()),
            I::UR_KERNEL_EXEC_INFO_CACHE_CONFIG => {
                ensure!(size == size_of::<ur_kernel_cache_config_t>(), InvalidSize, "propSize {size}");
                // SAFETY: non-null because checks.rs rejected `NULL == pPropValue`; its size checked above, readable
                // per the contract.
                let config = unsafe { value.cast::<ur_kernel_cache_config_t>().read_unaligned() };
                use ur_kernel_cache_config_t as C;
                let config = match config {
                    C::UR_KERNEL_CACHE_CONFIG_DEFAULT => CacheConfig::Default,
                    C::UR_KERNEL_CACHE_CONFIG_LARGE_SLM => CacheConfig::LargeLocalMemory,
                    C::UR_KERNEL_CACHE_CONFIG_LARGE_DATA => CacheConfig::LargeData,
                    other => return Err(err!(InvalidEnumeration, "cache configuration {}", other.0)),
                };
                // A hint: applied where the backend has a cache split, recorded elsewhere.
                kernel.value.core().set_cache_config(config)?;
                Ok(())
            }
            other => Err(err!(InvalidEnumeration, "kernel exec info {}", other.0)),
        }
    })
}
