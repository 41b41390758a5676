//! `urDeviceGetInfo`: every `ur_device_info_t` of UR 0.12, answered from
//! cmdbuf-core's [`DeviceInfo`](cmdbuf_core::DeviceInfo) or from what this ABI
//! implements.
//!
//! Three kinds of answers:
//! - the device's, from cmdbuf-core (limits, capabilities, identity);
//! - the ABI's own, where the question is whether an entry point or a
//!   feature of UR exists here at all (images, pipes, virtual
//!   memory ...: `false`, zero limits, empty lists), each with the reason;
//! - `UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION`, only for the queries the
//!   header marks `[optional-query]`, where the device's driver does not tell
//!   (a PCI address, a UUID, free memory ...) or the question is about
//!   hardware none of cmdbuf's backends is (Intel GPU EU counts, Windows
//!   LUIDs, NVML's fan and power readings, composite devices).
//!
//! Values outside the enumeration are `UR_RESULT_ERROR_INVALID_ENUMERATION`.

#![allow(non_snake_case)]

use std::ffi::c_void;

use cmdbuf_core::{
    CacheType, FpCapabilities, LocalMemType, MemoryOrders, MemoryScopes, UpdateCapabilities, UsmKinds, VectorWidths,
    err,
};

use crate::boundary::conv::ur_usm_kinds;
use crate::boundary::conv::{ur_device_type, ur_partition_kind, ur_partition_properties};
use crate::entry::AbiResult;
use crate::handle::Handle;
use crate::info::{InfoOut, query};
use crate::objects::device::Device;
use crate::sys::*;

/// Translates cmdbuf-core flag bits into UR's, bit by named bit.
fn flags(value: u32, table: &[(u32, u32)]) -> u32 {
    table.iter().filter(|(ours, _)| value & ours != 0).fold(0, |bits, (_, theirs)| bits | theirs)
}

fn fp_flags(caps: FpCapabilities) -> ur_device_fp_capability_flags_t {
    use ur_device_fp_capability_flag_t as F;
    flags(
        caps.bits(),
        &[
            (
                FpCapabilities::CORRECTLY_ROUNDED_DIVIDE_SQRT.bits(),
                F::UR_DEVICE_FP_CAPABILITY_FLAG_CORRECTLY_ROUNDED_DIVIDE_SQRT.0,
            ),
            (FpCapabilities::ROUND_TO_NEAREST.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST.0),
            (FpCapabilities::ROUND_TO_ZERO.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_ZERO.0),
            (FpCapabilities::ROUND_TO_INF.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_INF.0),
            (FpCapabilities::INF_NAN.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_INF_NAN.0),
            (FpCapabilities::DENORM.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_DENORM.0),
            (FpCapabilities::FMA.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_FMA.0),
            (FpCapabilities::SOFT_FLOAT.bits(), F::UR_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT.0),
        ],
    )
}

fn order_flags(orders: MemoryOrders) -> ur_memory_order_capability_flags_t {
    use ur_memory_order_capability_flag_t as F;
    flags(
        orders.bits(),
        &[
            (MemoryOrders::RELAXED.bits(), F::UR_MEMORY_ORDER_CAPABILITY_FLAG_RELAXED.0),
            (MemoryOrders::ACQUIRE.bits(), F::UR_MEMORY_ORDER_CAPABILITY_FLAG_ACQUIRE.0),
            (MemoryOrders::RELEASE.bits(), F::UR_MEMORY_ORDER_CAPABILITY_FLAG_RELEASE.0),
            (MemoryOrders::ACQ_REL.bits(), F::UR_MEMORY_ORDER_CAPABILITY_FLAG_ACQ_REL.0),
            (MemoryOrders::SEQ_CST.bits(), F::UR_MEMORY_ORDER_CAPABILITY_FLAG_SEQ_CST.0),
        ],
    )
}

fn scope_flags(scopes: MemoryScopes) -> ur_memory_scope_capability_flags_t {
    use ur_memory_scope_capability_flag_t as F;
    flags(
        scopes.bits(),
        &[
            (MemoryScopes::WORK_ITEM.bits(), F::UR_MEMORY_SCOPE_CAPABILITY_FLAG_WORK_ITEM.0),
            (MemoryScopes::SUB_GROUP.bits(), F::UR_MEMORY_SCOPE_CAPABILITY_FLAG_SUB_GROUP.0),
            (MemoryScopes::WORK_GROUP.bits(), F::UR_MEMORY_SCOPE_CAPABILITY_FLAG_WORK_GROUP.0),
            (MemoryScopes::DEVICE.bits(), F::UR_MEMORY_SCOPE_CAPABILITY_FLAG_DEVICE.0),
            (MemoryScopes::SYSTEM.bits(), F::UR_MEMORY_SCOPE_CAPABILITY_FLAG_SYSTEM.0),
        ],
    )
}

fn update_flags(caps: UpdateCapabilities) -> ur_device_command_buffer_update_capability_flags_t {
    use ur_device_command_buffer_update_capability_flag_t as F;
    flags(
        caps.bits(),
        &[
            (
                UpdateCapabilities::KERNEL_ARGUMENTS.bits(),
                F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_KERNEL_ARGUMENTS.0,
            ),
            (
                UpdateCapabilities::LOCAL_WORK_SIZE.bits(),
                F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_LOCAL_WORK_SIZE.0,
            ),
            (
                UpdateCapabilities::GLOBAL_WORK_SIZE.bits(),
                F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_GLOBAL_WORK_SIZE.0,
            ),
            (
                UpdateCapabilities::GLOBAL_WORK_OFFSET.bits(),
                F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_GLOBAL_WORK_OFFSET.0,
            ),
            (
                UpdateCapabilities::KERNEL_HANDLE.bits(),
                F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_KERNEL_HANDLE.0,
            ),
            (UpdateCapabilities::EVENTS.bits(), F::UR_DEVICE_COMMAND_BUFFER_UPDATE_CAPABILITY_FLAG_EVENTS.0),
        ],
    )
}

fn usm_access(supported: bool) -> ur_device_usm_access_capability_flags_t {
    use ur_device_usm_access_capability_flag_t as F;
    if supported {
        F::UR_DEVICE_USM_ACCESS_CAPABILITY_FLAG_ACCESS.0 | F::UR_DEVICE_USM_ACCESS_CAPABILITY_FLAG_CONCURRENT_ACCESS.0
    } else {
        0
    }
}

fn cache_type(kind: CacheType) -> ur_device_mem_cache_type_t {
    match kind {
        CacheType::None => ur_device_mem_cache_type_t::UR_DEVICE_MEM_CACHE_TYPE_NONE,
        CacheType::ReadOnly => ur_device_mem_cache_type_t::UR_DEVICE_MEM_CACHE_TYPE_READ_ONLY_CACHE,
        CacheType::ReadWrite => ur_device_mem_cache_type_t::UR_DEVICE_MEM_CACHE_TYPE_READ_WRITE_CACHE,
    }
}

fn local_mem_type(kind: LocalMemType) -> ur_device_local_mem_type_t {
    match kind {
        LocalMemType::Local => ur_device_local_mem_type_t::UR_DEVICE_LOCAL_MEM_TYPE_LOCAL,
        LocalMemType::Global => ur_device_local_mem_type_t::UR_DEVICE_LOCAL_MEM_TYPE_GLOBAL,
        LocalMemType::None => ur_device_local_mem_type_t::UR_DEVICE_LOCAL_MEM_TYPE_NONE,
    }
}

/// An optional query the device cannot answer.
fn refused(name: ur_device_info_t, why: &str) -> AbiResult {
    tracing::debug!(query = name.0, why, "optional device info refused");
    Err(err!(UnsupportedEnumeration, "device info {:#x} is not answered: {why}", name.0))
}

/// Answers an optional query from a value the device may not know.
fn optional<T: Copy>(out: InfoOut, name: ur_device_info_t, value: Option<T>, why: &str) -> AbiResult {
    match value {
        Some(v) => out.value(v),
        None => refused(name, why),
    }
}

/// # Safety
/// UR's contract for `urDeviceGetInfo`.
pub(crate) unsafe extern "C" fn urDeviceGetInfo(
    device: ur_device_handle_t,
    name: ur_device_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Device>, out: InfoOut| answer(handle, name, out);
    // SAFETY: `device` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urDeviceGetInfo", device, (size, value, size_ret), answer) }
}

fn vector_width(w: &VectorWidths, name: ur_device_info_t) -> u32 {
    use ur_device_info_t as I;
    match name {
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_CHAR | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR => w.char,
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_SHORT | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT => w.short,
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_INT | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT => w.int,
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_FLOAT | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT => w.float,
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_DOUBLE | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE => w.double,
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_HALF | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF => w.half,
        // `long` and `long long` are both 64 bits.
        _ => w.long,
    }
}

/// Answers one `urDeviceGetInfo` query, in named steps by topic: each step
/// answers the queries of its topic and hands `out` back for the others.
fn answer(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> AbiResult {
    let steps: [Step; 9] =
        [identity, compute, numerics, memory, queues_and_usm, extensions, programs, sub_devices, not_described];
    let mut out = out;
    for step in steps {
        match step(handle, name, out) {
            Ok(answered) => return answered,
            Err(back) => out = back,
        }
    }
    Err(err!(InvalidEnumeration, "{:#x} is not a ur_device_info_t", name.0))
}

/// One topic of [`answer`]: `Ok` with the answer for a query of its topic,
/// `Err(out)` for any other.
type Step = fn(&Handle<Device>, ur_device_info_t, InfoOut) -> Result<AbiResult, InfoOut>;

/// What the device is: type, vendor, names, versions, platform and references.
fn identity(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    let info = core.info();
    Ok(match name {
        // Identity.
        I::UR_DEVICE_INFO_TYPE => out.value(ur_device_type(info.device_type)),
        I::UR_DEVICE_INFO_VENDOR_ID => out.value(info.vendor_id),
        I::UR_DEVICE_INFO_DEVICE_ID => optional(out, name, info.device_id, "the driver has no device id"),
        I::UR_DEVICE_INFO_PLATFORM => out.value(d.platform_raw()),
        I::UR_DEVICE_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
        I::UR_DEVICE_INFO_NAME => out.string(&info.name),
        I::UR_DEVICE_INFO_VENDOR => out.string(&info.vendor),
        I::UR_DEVICE_INFO_DRIVER_VERSION => out.string(&info.driver_version),
        I::UR_DEVICE_INFO_VERSION => out.string(&info.version),
        I::UR_DEVICE_INFO_BACKEND_RUNTIME_VERSION => out.string(&info.driver_version),
        I::UR_DEVICE_INFO_PROFILE => out.string("FULL_PROFILE"),
        I::UR_DEVICE_INFO_EXTENSIONS => out.string(&info.extensions.join(" ")),
        I::UR_DEVICE_INFO_IL_VERSION => match &info.il_version {
            Some(il) => out.string(il),
            None => refused(name, "the device takes no intermediate language"),
        },
        I::UR_DEVICE_INFO_UUID => match &info.uuid {
            Some(uuid) => out.array(uuid),
            None => refused(name, "the driver reports no UUID"),
        },
        I::UR_DEVICE_INFO_PCI_ADDRESS => match &info.pci_address {
            Some(address) => out.string(address),
            None => refused(name, "the driver reports no PCI address"),
        },
        I::UR_DEVICE_INFO_IP_VERSION => optional(out, name, info.ip_version, "the driver reports no IP version"),
        I::UR_DEVICE_INFO_AVAILABLE => out.bool(true),
        I::UR_DEVICE_INFO_IS_INTEGRATED_GPU => out.bool(info.integrated_gpu),
        _ => return Err(out),
    })
}

/// Compute units, work-group and work-item limits, clocks and launch properties.
fn compute(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    let info = core.info();
    Ok(match name {
        // Compute.
        I::UR_DEVICE_INFO_MAX_COMPUTE_UNITS | I::UR_DEVICE_INFO_NUM_COMPUTE_UNITS => out.value(info.max_compute_units),
        I::UR_DEVICE_INFO_MAX_WORK_ITEM_DIMENSIONS => out.value(3u32),
        I::UR_DEVICE_INFO_MAX_WORK_ITEM_SIZES => out.array(&info.max_work_item_sizes),
        I::UR_DEVICE_INFO_MAX_WORK_GROUP_SIZE => out.value(info.max_work_group_size),
        I::UR_DEVICE_INFO_MAX_WORK_GROUPS_3D => out.array(&info.max_work_groups),
        I::UR_DEVICE_INFO_MAX_WORK_GROUPS => {
            out.value(info.max_work_groups.iter().fold(1usize, |total, n| total.saturating_mul(*n)))
        }
        I::UR_DEVICE_INFO_MAX_CLOCK_FREQUENCY => out.value(info.max_clock_mhz.unwrap_or(0)),
        I::UR_DEVICE_INFO_MAX_REGISTERS_PER_WORK_GROUP => {
            optional(out, name, info.max_registers_per_work_group, "the driver reports no register count")
        }
        // UR's queue indices (`ur_queue_index_properties_t`) are not offered.
        I::UR_DEVICE_INFO_MAX_COMPUTE_QUEUE_INDICES => out.value(1u32),
        I::UR_DEVICE_INFO_EXECUTION_CAPABILITIES => out.value::<ur_device_exec_capability_flags_t>(
            ur_device_exec_capability_flag_t::UR_DEVICE_EXEC_CAPABILITY_FLAG_KERNEL.0,
        ),
        // Cooperative and cluster launches are not offered.
        I::UR_DEVICE_INFO_KERNEL_LAUNCH_CAPABILITIES => out.value::<ur_kernel_launch_properties_flags_t>(0),
        I::UR_DEVICE_INFO_PRINTF_BUFFER_SIZE => out.value(info.printf_buffer_size),
        I::UR_DEVICE_INFO_MAX_PARAMETER_SIZE => out.value(info.max_parameter_size),
        I::UR_DEVICE_INFO_MAX_CONSTANT_ARGS => out.value(info.max_constant_args),
        I::UR_DEVICE_INFO_ADDRESS_BITS => out.value(u64::BITS),
        I::UR_DEVICE_INFO_ENDIAN_LITTLE => out.bool(cfg!(target_endian = "little")),
        I::UR_DEVICE_INFO_PROFILING_TIMER_RESOLUTION => {
            out.value(usize::try_from(info.profiling_timer_resolution_ns).unwrap_or(usize::MAX))
        }
        _ => return Err(out),
    })
}

/// Floating point, vectors, sub-groups and atomics.
fn numerics(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    let info = core.info();
    Ok(match name {
        // Floating point, vectors, sub-groups, atomics.
        I::UR_DEVICE_INFO_SINGLE_FP_CONFIG => out.value(fp_flags(info.fp.single)),
        I::UR_DEVICE_INFO_HALF_FP_CONFIG => out.value(fp_flags(info.fp.half)),
        I::UR_DEVICE_INFO_DOUBLE_FP_CONFIG => out.value(fp_flags(info.fp.double)),
        I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_CHAR
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_SHORT
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_INT
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_LONG
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_LONG_LONG
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_FLOAT
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_DOUBLE
        | I::UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_HALF => out.value(vector_width(&info.preferred_vector_widths, name)),
        I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG_LONG
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE
        | I::UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF => out.value(vector_width(&info.native_vector_widths, name)),
        I::UR_DEVICE_INFO_MAX_NUM_SUB_GROUPS => out.value(info.sub_groups.max_per_work_group),
        I::UR_DEVICE_INFO_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS => {
            out.bool(info.sub_groups.independent_forward_progress)
        }
        I::UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL => out.array(&info.sub_groups.sizes),
        I::UR_DEVICE_INFO_ATOMIC_64 => out.bool(info.atomics.int64),
        I::UR_DEVICE_INFO_ATOMIC_MEMORY_ORDER_CAPABILITIES => out.value(order_flags(info.atomics.memory_orders)),
        I::UR_DEVICE_INFO_ATOMIC_MEMORY_SCOPE_CAPABILITIES => out.value(scope_flags(info.atomics.memory_scopes)),
        I::UR_DEVICE_INFO_ATOMIC_FENCE_ORDER_CAPABILITIES => out.value(order_flags(info.atomics.fence_orders)),
        I::UR_DEVICE_INFO_ATOMIC_FENCE_SCOPE_CAPABILITIES => out.value(scope_flags(info.atomics.fence_scopes)),
        I::UR_DEVICE_INFO_BFLOAT16 | I::UR_DEVICE_INFO_BFLOAT16_CONVERSIONS_NATIVE => {
            out.bool(info.native_bfloat16_conversions)
        }
        _ => return Err(out),
    })
}

/// Memory sizes, caches, alignment and allocation limits.
fn memory(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    let info = core.info();
    Ok(match name {
        // Memory.
        I::UR_DEVICE_INFO_GLOBAL_MEM_SIZE => out.value(info.global_mem_size),
        I::UR_DEVICE_INFO_GLOBAL_MEM_FREE => match core.free_memory() {
            Ok(Some(free)) => out.value(free),
            Ok(None) => refused(name, "the driver does not report free memory"),
            Err(e) => Err(e),
        },
        I::UR_DEVICE_INFO_LOCAL_MEM_SIZE => out.value(info.local_mem_size),
        I::UR_DEVICE_INFO_LOCAL_MEM_TYPE => out.value(local_mem_type(info.local_mem_type)),
        I::UR_DEVICE_INFO_MAX_MEM_ALLOC_SIZE => out.value(info.max_mem_alloc_size),
        I::UR_DEVICE_INFO_MAX_CONSTANT_BUFFER_SIZE => out.value(info.max_constant_buffer_size),
        I::UR_DEVICE_INFO_MEM_BASE_ADDR_ALIGN => out.value(info.mem_base_addr_align_bits),
        I::UR_DEVICE_INFO_GLOBAL_MEM_CACHE_TYPE => out.value(cache_type(info.global_mem_cache.kind)),
        // 0: the driver does not tell.
        I::UR_DEVICE_INFO_GLOBAL_MEM_CACHELINE_SIZE => out.value(info.global_mem_cache.line_size.unwrap_or(0)),
        I::UR_DEVICE_INFO_GLOBAL_MEM_CACHE_SIZE => out.value(info.global_mem_cache.size.unwrap_or(0)),
        I::UR_DEVICE_INFO_ERROR_CORRECTION_SUPPORT => out.bool(info.error_correction),
        I::UR_DEVICE_INFO_HOST_UNIFIED_MEMORY => out.bool(info.host_unified_memory),
        I::UR_DEVICE_INFO_MEMORY_CLOCK_RATE => {
            optional(out, name, info.memory_hardware.clock_mhz, "the driver reports no memory clock")
        }
        I::UR_DEVICE_INFO_MEMORY_BUS_WIDTH => {
            optional(out, name, info.memory_hardware.bus_width, "the driver reports no memory bus width")
        }
        I::UR_DEVICE_INFO_MAX_MEMORY_BANDWIDTH => {
            optional(out, name, info.memory_hardware.bandwidth, "the driver reports no memory bandwidth")
        }
        _ => return Err(out),
    })
}

/// Queue properties and the USM kinds the device offers.
fn queues_and_usm(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    let info = core.info();
    Ok(match name {
        // Queues and USM.
        I::UR_DEVICE_INFO_QUEUE_PROPERTIES | I::UR_DEVICE_INFO_QUEUE_ON_HOST_PROPERTIES => {
            let mut flags = 0;
            if info.out_of_order_queues {
                flags |= ur_queue_flag_t::UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE.0;
            }
            if info.queue_profiling {
                flags |= ur_queue_flag_t::UR_QUEUE_FLAG_PROFILING_ENABLE.0;
            }
            out.value::<ur_queue_flags_t>(flags)
        }
        // No device-side enqueue.
        I::UR_DEVICE_INFO_QUEUE_ON_DEVICE_PROPERTIES => out.value::<ur_queue_flags_t>(0),
        I::UR_DEVICE_INFO_USM_HOST_SUPPORT => out.value(usm_access(ur_usm_kinds(info).contains(UsmKinds::HOST))),
        I::UR_DEVICE_INFO_USM_DEVICE_SUPPORT => out.value(usm_access(ur_usm_kinds(info).contains(UsmKinds::DEVICE))),
        I::UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT => {
            out.value(usm_access(ur_usm_kinds(info).contains(UsmKinds::SHARED)))
        }
        // Shared USM belongs to one device; system allocations are not USM.
        I::UR_DEVICE_INFO_USM_CROSS_SHARED_SUPPORT | I::UR_DEVICE_INFO_USM_SYSTEM_SHARED_SUPPORT => {
            out.value::<ur_device_usm_access_capability_flags_t>(0)
        }
        // urUSMPool* are not offered.
        I::UR_DEVICE_INFO_USM_POOL_SUPPORT => out.bool(false),
        _ => return Err(out),
    })
}

/// Command buffers and the entry points of experimental features.
fn extensions(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    let info = core.info();
    Ok(match name {
        // Command buffers and the entry points of experimental features.
        I::UR_DEVICE_INFO_COMMAND_BUFFER_SUPPORT_EXP => out.bool(true),
        I::UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP => out.value(update_flags(info.command_buffer.update)),
        I::UR_DEVICE_INFO_COMMAND_BUFFER_EVENT_SUPPORT_EXP => out.bool(info.command_buffer.events),
        I::UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP => out.bool(info.command_buffer.subgraphs),
        // urEnqueueHostTaskExp and urEnqueueNativeCommandExp are offered.
        I::UR_DEVICE_INFO_ENQUEUE_HOST_TASK_SUPPORT_EXP | I::UR_DEVICE_INFO_ENQUEUE_NATIVE_COMMAND_SUPPORT_EXP => {
            out.bool(true)
        }
        // Graph capture (urQueueBeginGraphCaptureExp and its family) is
        // cmdbuf-core's, so every device has it.
        I::UR_DEVICE_INFO_GRAPH_RECORD_AND_REPLAY_SUPPORT_EXP => out.bool(true),
        // Every backend records timestamps (`Queue::enqueue_timestamp`).
        I::UR_DEVICE_INFO_TIMESTAMP_RECORDING_SUPPORT_EXP => out.bool(true),
        // The urUsmP2P*Exp entry points answer for every device; which
        // pairs are peers is their answer (cmdbuf-core's `Device::peer_access`).
        I::UR_DEVICE_INFO_USM_P2P_SUPPORT_EXP => out.bool(true),
        // Not offered: urEventCreateExp, urEnqueueUSM*AllocExp,
        // urUSMHostAllocRegisterExp, per-event profiling,
        // urProgramBuildExp for several devices, urDeviceWaitExp,
        // urProgramDynamicLinkExp, urUSMContextMemcpyExp,
        // urMemoryExportAllocExportableMemoryExp, the IPC handles, low-power
        // events, the clock extensions of device code.
        I::UR_DEVICE_INFO_REUSABLE_EVENTS_SUPPORT_EXP
        | I::UR_DEVICE_INFO_ASYNC_USM_ALLOCATIONS_SUPPORT_EXP
        | I::UR_DEVICE_INFO_USM_HOST_ALLOC_REGISTER_SUPPORT_EXP
        | I::UR_DEVICE_INFO_PER_EVENT_PROFILING_SUPPORT_EXP
        | I::UR_DEVICE_INFO_MULTI_DEVICE_COMPILE_SUPPORT_EXP
        | I::UR_DEVICE_INFO_DEVICE_WAIT_SUPPORT_EXP
        | I::UR_DEVICE_INFO_DYNAMIC_LINK_SUPPORT_EXP
        | I::UR_DEVICE_INFO_USM_CONTEXT_MEMCPY_SUPPORT_EXP
        | I::UR_DEVICE_INFO_MEMORY_EXPORT_EXPORTABLE_DEVICE_MEM_EXP
        | I::UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP
        | I::UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP
        | I::UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP
        | I::UR_DEVICE_INFO_LOW_POWER_EVENTS_SUPPORT_EXP
        | I::UR_DEVICE_INFO_CLOCK_SUB_GROUP_SUPPORT_EXP
        | I::UR_DEVICE_INFO_CLOCK_WORK_GROUP_SUPPORT_EXP
        | I::UR_DEVICE_INFO_CLOCK_DEVICE_SUPPORT_EXP => out.bool(false),
        // Intel GPU 2D block loads and stores.
        I::UR_DEVICE_INFO_2D_BLOCK_ARRAY_CAPABILITIES_EXP => {
            out.value::<ur_exp_device_2d_block_array_capability_flags_t>(0)
        }
        _ => return Err(out),
    })
}

/// Programs and kernels, and interop with graphics APIs.
fn programs(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    Ok(match name {
        // Programs: built by the backend's compiler from source or IL, and
        // linked where the device links (OpenCL with SPIR-V); no
        // specialization constants, device globals, pipes or built-in
        // kernels in cmdbuf-core.
        I::UR_DEVICE_INFO_COMPILER_AVAILABLE => out.bool(true),
        I::UR_DEVICE_INFO_LINKER_AVAILABLE => out.bool(handle.value.core().info().linker_available),
        I::UR_DEVICE_INFO_KERNEL_SET_SPECIALIZATION_CONSTANTS
        | I::UR_DEVICE_INFO_PROGRAM_SET_SPECIALIZATION_CONSTANTS
        | I::UR_DEVICE_INFO_GLOBAL_VARIABLE_SUPPORT
        | I::UR_DEVICE_INFO_HOST_PIPE_READ_WRITE_SUPPORT
        | I::UR_DEVICE_INFO_USE_NATIVE_ASSERT
        | I::UR_DEVICE_INFO_ESIMD_SUPPORT
        | I::UR_DEVICE_INFO_ASYNC_BARRIER
        | I::UR_DEVICE_INFO_MEM_CHANNEL_SUPPORT
        | I::UR_DEVICE_INFO_VIRTUAL_MEMORY_SUPPORT => out.bool(false),
        I::UR_DEVICE_INFO_BUILT_IN_KERNELS => out.string(""),
        // Interop with graphics APIs is not offered; users synchronise.
        I::UR_DEVICE_INFO_PREFERRED_INTEROP_USER_SYNC => out.bool(true),
        _ => return Err(out),
    })
}

/// Sub-devices: partitions, affinity domains and the parent.
fn sub_devices(handle: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    let d = &handle.value;
    let core = d.core();
    Ok(match name {
        // Sub-devices (`urDevicePartition`): what cmdbuf-core's device offers,
        // none on backends that do not partition.
        I::UR_DEVICE_INFO_PARENT_DEVICE => {
            out.value::<ur_device_handle_t>(d.parent().map_or(std::ptr::null_mut(), |p| p.raw()))
        }
        I::UR_DEVICE_INFO_SUPPORTED_PARTITIONS => {
            let kinds: Vec<_> = core.partition_support().kinds.iter().map(|k| ur_partition_kind(*k)).collect();
            out.array(&kinds)
        }
        // Empty for a root device, as UR's adapters answer.
        I::UR_DEVICE_INFO_PARTITION_TYPE => {
            out.array(&core.partition_type().map(ur_partition_properties).unwrap_or_default())
        }
        I::UR_DEVICE_INFO_PARTITION_MAX_SUB_DEVICES => out.value(core.partition_support().max_sub_devices),
        I::UR_DEVICE_INFO_PARTITION_AFFINITY_DOMAIN => {
            out.value::<ur_device_affinity_domain_flags_t>(core.partition_support().affinity_domains.bits())
        }
        // A context holds one device, so a sub-device's programs are built
        // for the sub-device itself.
        I::UR_DEVICE_INFO_BUILD_ON_SUBDEVICE => out.bool(true),
        I::UR_DEVICE_INFO_COMPONENT_DEVICES | I::UR_DEVICE_INFO_COMPOSITE_DEVICE => {
            refused(name, "composite devices are Level Zero's")
        }
        _ => return Err(out),
    })
}

/// Images, and hardware none of cmdbuf's backends describes.
fn not_described(_: &Handle<Device>, name: ur_device_info_t, out: InfoOut) -> Result<AbiResult, InfoOut> {
    use ur_device_info_t as I;
    Ok(match name {
        // Images (and bindless images, samplers, mipmaps): not offered.
        I::UR_DEVICE_INFO_IMAGE_SUPPORT | I::UR_DEVICE_INFO_IMAGE_SRGB => out.bool(false),
        I::UR_DEVICE_INFO_MAX_READ_IMAGE_ARGS
        | I::UR_DEVICE_INFO_MAX_WRITE_IMAGE_ARGS
        | I::UR_DEVICE_INFO_MAX_READ_WRITE_IMAGE_ARGS
        | I::UR_DEVICE_INFO_MAX_SAMPLERS
        | I::UR_DEVICE_INFO_IMAGE_PITCH_ALIGN_EXP
        | I::UR_DEVICE_INFO_MIPMAP_MAX_ANISOTROPY_EXP => out.value(0u32),
        I::UR_DEVICE_INFO_IMAGE2D_MAX_WIDTH
        | I::UR_DEVICE_INFO_IMAGE2D_MAX_HEIGHT
        | I::UR_DEVICE_INFO_IMAGE3D_MAX_WIDTH
        | I::UR_DEVICE_INFO_IMAGE3D_MAX_HEIGHT
        | I::UR_DEVICE_INFO_IMAGE3D_MAX_DEPTH
        | I::UR_DEVICE_INFO_IMAGE_MAX_BUFFER_SIZE
        | I::UR_DEVICE_INFO_IMAGE_MAX_ARRAY_SIZE
        | I::UR_DEVICE_INFO_MAX_IMAGE_LINEAR_WIDTH_EXP
        | I::UR_DEVICE_INFO_MAX_IMAGE_LINEAR_HEIGHT_EXP
        | I::UR_DEVICE_INFO_MAX_IMAGE_LINEAR_PITCH_EXP => out.value(0usize),
        I::UR_DEVICE_INFO_BINDLESS_IMAGES_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_IMAGES_SHARED_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_IMAGES_1D_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_IMAGES_2D_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_MIPMAP_SUPPORT_EXP
        | I::UR_DEVICE_INFO_MIPMAP_ANISOTROPY_SUPPORT_EXP
        | I::UR_DEVICE_INFO_MIPMAP_LEVEL_REFERENCE_SUPPORT_EXP
        | I::UR_DEVICE_INFO_EXTERNAL_MEMORY_IMPORT_SUPPORT_EXP
        | I::UR_DEVICE_INFO_EXTERNAL_SEMAPHORE_IMPORT_SUPPORT_EXP
        | I::UR_DEVICE_INFO_CUBEMAP_SUPPORT_EXP
        | I::UR_DEVICE_INFO_CUBEMAP_SEAMLESS_FILTERING_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_1D_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_1D_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_2D_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_2D_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_3D_SUPPORT_EXP
        | I::UR_DEVICE_INFO_IMAGE_ARRAY_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_UNIQUE_ADDRESSING_PER_DIM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLE_1D_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_SAMPLE_2D_USM_SUPPORT_EXP
        | I::UR_DEVICE_INFO_BINDLESS_IMAGES_GATHER_SUPPORT_EXP => out.bool(false),

        // Hardware none of cmdbuf's backends describes.
        I::UR_DEVICE_INFO_GPU_EU_COUNT
        | I::UR_DEVICE_INFO_GPU_EU_SIMD_WIDTH
        | I::UR_DEVICE_INFO_GPU_EU_SLICES
        | I::UR_DEVICE_INFO_GPU_EU_COUNT_PER_SUBSLICE
        | I::UR_DEVICE_INFO_GPU_SUBSLICES_PER_SLICE
        | I::UR_DEVICE_INFO_GPU_HW_THREADS_PER_EU
        | I::UR_DEVICE_INFO_XE_STACK_COUNT
        | I::UR_DEVICE_INFO_XE_REGIONS_PER_STACK
        | I::UR_DEVICE_INFO_XE_CLUSTERS_PER_REGION
        | I::UR_DEVICE_INFO_XE_CORES_PER_CLUSTER
        | I::UR_DEVICE_INFO_EUS_PER_XE_CORE
        | I::UR_DEVICE_INFO_MAX_LANES_PER_HW_THREAD => refused(name, "an Intel GPU query"),
        I::UR_DEVICE_INFO_CURRENT_CLOCK_THROTTLE_REASONS
        | I::UR_DEVICE_INFO_FAN_SPEED
        | I::UR_DEVICE_INFO_MIN_POWER_LIMIT
        | I::UR_DEVICE_INFO_MAX_POWER_LIMIT => refused(name, "a management-library reading (NVML, Level Zero Sysman)"),
        I::UR_DEVICE_INFO_LUID | I::UR_DEVICE_INFO_NODE_MASK => refused(name, "a Windows (DXGI) identity"),
        _ => return Err(out),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    //! What the CPU device answers through the entry points. Every
    //! enumerator of the wheel's `ur_api.h` is asked in
    //! `tests/device_info.rs`, where the wheel is installed.

    use super::*;
    use crate::device::{urDeviceGet, urDeviceGetGlobalTimestamps};

    /// The CPU adapter's device, through the entry points.
    pub(crate) fn cpu_device() -> ur_device_handle_t {
        crate::register_factory(&cmdbuf_cpu::CpuAdapterFactory);
        let mut adapter: ur_adapter_handle_t = std::ptr::null_mut();
        let mut platform: ur_platform_handle_t = std::ptr::null_mut();
        let mut device: ur_device_handle_t = std::ptr::null_mut();
        // SAFETY: each out-parameter is one writable handle.
        unsafe {
            assert_eq!(
                crate::adapter::urAdapterGet(1, &mut adapter, std::ptr::null_mut()),
                ur_result_t::UR_RESULT_SUCCESS
            );
            assert_eq!(
                crate::platform::urPlatformGet(adapter, 1, &mut platform, std::ptr::null_mut()),
                ur_result_t::UR_RESULT_SUCCESS
            );
            assert_eq!(
                urDeviceGet(platform, ur_device_type_t::UR_DEVICE_TYPE_ALL, 1, &mut device, std::ptr::null_mut()),
                ur_result_t::UR_RESULT_SUCCESS
            );
        }
        device
    }

    fn get_info(device: ur_device_handle_t, name: u32, buffer: Option<&mut [u8]>) -> (ur_result_t, usize) {
        let mut size = usize::MAX;
        let result = match buffer {
            // SAFETY: the buffer holds `b.len()` writable bytes.
            Some(b) => unsafe {
                urDeviceGetInfo(device, ur_device_info_t(name), b.len(), b.as_mut_ptr().cast(), &mut size)
            },
            // SAFETY: only the size is written.
            None => unsafe { urDeviceGetInfo(device, ur_device_info_t(name), 0, std::ptr::null_mut(), &mut size) },
        };
        (result, size)
    }

    #[test]
    fn values_the_cpu_device_reports() {
        let device = cpu_device();
        let read_u32 = |name: ur_device_info_t| {
            let mut v = [0u8; 4];
            assert_eq!(get_info(device, name.0, Some(&mut v)).0, ur_result_t::UR_RESULT_SUCCESS);
            u32::from_ne_bytes(v)
        };
        use ur_device_info_t as I;
        // IEEE floats in both precisions, no half; 64-bit atomics; sub-groups of one.
        let fp = ur_device_fp_capability_flag_t::UR_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST.0
            | ur_device_fp_capability_flag_t::UR_DEVICE_FP_CAPABILITY_FLAG_INF_NAN.0;
        assert_eq!(read_u32(I::UR_DEVICE_INFO_SINGLE_FP_CONFIG) & fp, fp);
        assert_eq!(read_u32(I::UR_DEVICE_INFO_DOUBLE_FP_CONFIG) & fp, fp);
        assert_eq!(read_u32(I::UR_DEVICE_INFO_HALF_FP_CONFIG), 0);
        assert_eq!(read_u32(I::UR_DEVICE_INFO_ATOMIC_MEMORY_SCOPE_CAPABILITIES), 0b11111);
        assert_eq!(read_u32(I::UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL), 1);
        assert_eq!(read_u32(I::UR_DEVICE_INFO_MEM_BASE_ADDR_ALIGN), 512);
        let mut extensions = [0u8; 256];
        let (result, size) = get_info(device, I::UR_DEVICE_INFO_EXTENSIONS.0, Some(&mut extensions));
        assert_eq!(result, ur_result_t::UR_RESULT_SUCCESS);
        let extensions = std::str::from_utf8(&extensions[..size - 1]).unwrap();
        assert!(extensions.split(' ').any(|e| e == "cl_khr_fp64"), "{extensions}");
        assert!(!extensions.split(' ').any(|e| e == "cl_khr_fp16"), "{extensions}");
    }

    #[test]
    fn global_timestamps_on_the_cpu_device_are_one_clock() {
        let device = cpu_device();
        let (mut dev, mut host, mut host_only) = (0u64, 0u64, 0u64);
        // SAFETY: `device` is a live handle of this adapter and each
        // out-parameter a writable local or null.
        unsafe {
            assert_eq!(urDeviceGetGlobalTimestamps(device, &mut dev, &mut host), ur_result_t::UR_RESULT_SUCCESS);
            assert_eq!(
                urDeviceGetGlobalTimestamps(device, std::ptr::null_mut(), &mut host_only),
                ur_result_t::UR_RESULT_SUCCESS
            );
            assert_eq!(
                urDeviceGetGlobalTimestamps(device, std::ptr::null_mut(), std::ptr::null_mut()),
                ur_result_t::UR_RESULT_SUCCESS
            );
            assert_eq!(
                urDeviceGetGlobalTimestamps(std::ptr::null_mut(), &mut dev, &mut host),
                ur_result_t::UR_RESULT_ERROR_INVALID_NULL_HANDLE
            );
        }
        assert!(dev > 0 && dev == host, "{dev} {host}");
        assert!(host_only >= host);
    }

    #[test]
    fn select_binary_on_the_cpu_device() {
        let device = cpu_device();
        let targets = [c"spir64", c"nvptx64", c"native_cpu"];
        let binaries: Vec<ur_device_binary_t> = targets
            .iter()
            .map(|t| ur_device_binary_t {
                stype: ur_structure_type_t::UR_STRUCTURE_TYPE_DEVICE_BINARY,
                pNext: std::ptr::null(),
                pDeviceTargetSpec: t.as_ptr(),
            })
            .collect();
        let mut selected = u32::MAX;
        // Through the dispatch table, as C calls it: the null and empty
        // cases are the generated checks' (checks.rs).
        let select = crate::tables::dispatch_table().Device.pfnSelectBinary.expect("urDeviceSelectBinary");
        // SAFETY: the binaries and out-parameter are valid for the calls, or null where the call is refused.
        unsafe {
            // Rust kernels only: none of UR's formats runs on it.
            assert_eq!(
                select(device, binaries.as_ptr(), 3, &mut selected),
                ur_result_t::UR_RESULT_ERROR_INVALID_BINARY
            );
            assert_eq!(select(device, binaries.as_ptr(), 0, &mut selected), ur_result_t::UR_RESULT_ERROR_INVALID_SIZE);
            assert_eq!(
                select(device, std::ptr::null(), 3, &mut selected),
                ur_result_t::UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
            assert_eq!(
                select(device, binaries.as_ptr(), 3, std::ptr::null_mut()),
                ur_result_t::UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
            assert_eq!(
                select(std::ptr::null_mut(), binaries.as_ptr(), 3, &mut selected),
                ur_result_t::UR_RESULT_ERROR_INVALID_NULL_HANDLE
            );
        }
        assert_eq!(selected, u32::MAX, "nothing was selected");
    }
}
