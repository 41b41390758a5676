//! What a CUDA device is and can do, read once when it opens: its
//! [`DeviceInfo`] and the [`Limits`] the adapter checks commands against.

use cmdbuf_core::{
    AtomicCaps, BinaryTarget, CacheType, CommandBufferCaps, CommandBufferSupport, DeviceInfo, DeviceType,
    FpCapabilities, FpConfigs, GlobalMemCache, LocalMemType, MemoryHardware, MemoryOrders, MemoryScopes, Result,
    SourceForm, SubGroups, UpdateCapabilities, UsmKinds, VectorWidths, capability_extensions,
};
use cudarc::driver::sys;

use crate::driver::cu;
use crate::nvrtc;

/// Size of the hidden `ur_launch` parameter (the kernel ABI, `program.rs`).
pub(crate) const LAUNCH_INFO_SIZE: usize = 32;

/// Byte offset of the status pointer in `ur_launch`, after its three u64
/// global offsets.
pub(crate) const LAUNCH_STATUS_AT: usize = 24;

/// Limits and features read once from the device.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Limits {
    /// Largest grid per dimension.
    pub(crate) max_grid: [u32; 3],
    /// Dynamic shared memory a block may opt into.
    pub(crate) shared_optin: u32,
    /// Managed (shared USM) allocations.
    pub(crate) managed: bool,
    /// Device and host may access managed memory concurrently (prefetch and
    /// advice apply).
    pub(crate) concurrent_managed: bool,
    /// Compute capability.
    pub(crate) compute_capability: (i32, i32),
}

/// The information and limits of `device`, whose primary context is bound
/// to the calling thread (the printf FIFO size is a limit of the context);
/// `driver_version` is the platform's. In steps, each its own function: the
/// name and memory size, the unified-addressing requirement, the
/// [`Limits`], the USM kinds, the work-group geometry, then the memory
/// (their fallible reads in that order, the `INTEGRATED` attribute between
/// the last two), put together in one [`DeviceInfo`] literal.
pub(super) fn query(device: sys::CUdevice, driver_version: &str) -> Result<(DeviceInfo, Limits)> {
    use sys::CUdevice_attribute as A;
    let name = device_name(device)?;
    let total = total_memory(device)?;
    let get = |a| attribute(device, a);
    if get(A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)? == 0 {
        return Err(cmdbuf_core::err!(UnsupportedFeature, "{name} has no unified addressing"));
    }
    let limits = read_limits(device)?;
    let usm = usm_kinds(device, &limits)?;
    let cc = limits.compute_capability;
    let groups = work_groups(device, &limits)?;
    let integrated = get(A::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0;
    let mem = memory(device, total)?;
    let fp = fp_configs(cc);
    let atomics = atomic_caps(cc);
    let info = DeviceInfo {
        name,
        vendor: "NVIDIA Corporation".into(),
        driver_version: driver_version.into(),
        device_type: DeviceType::Gpu,
        max_compute_units: groups.max_compute_units,
        max_work_group_size: groups.max_work_group_size,
        max_work_item_sizes: groups.max_work_item_sizes,
        global_mem_size: mem.global_mem_size,
        local_mem_size: mem.local_mem_size,
        max_mem_alloc_size: mem.max_mem_alloc_size,
        usm,
        // Unified virtual addressing: host and managed memory have one address.
        usm_host_addressable: true,
        queue_profiling: true,
        out_of_order_queues: true,
        source_forms: source_forms(),
        // Programs are built whole (PTX or SPIR-V modules are not linked).
        linker_available: false,
        command_buffer: command_buffer_caps(),
        vendor_id: NVIDIA_VENDOR_ID,
        // The driver API has no PCI device id (its PCI_DEVICE_ID
        // attribute is the device number on the bus).
        device_id: None,
        uuid: device_uuid(device),
        pci_address: pci_address(device),
        ip_version: Some((cc.0 * 10 + cc.1) as u32),
        version: format!("{}.{}", cc.0, cc.1),
        extensions: capability_extensions(&fp, &atomics),
        // PTX arrives as an `nvptx64` binary, not as an IL.
        il_version: None,
        binary_targets: vec![BinaryTarget::Nvptx64],
        integrated_gpu: integrated,
        host_unified_memory: integrated,
        max_clock_mhz: optional_attribute(device, A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|khz| khz / 1000),
        memory_hardware: mem.memory_hardware,
        global_mem_cache: mem.global_mem_cache,
        mem_base_addr_align_bits: mem.mem_base_addr_align_bits,
        max_constant_buffer_size: mem.max_constant_buffer_size,
        // Read-only data is passed as ordinary global pointers: no count limit.
        max_constant_args: u32::MAX,
        // Kernel parameters are limited to 4 KiB, of which the adapter's
        // hidden launch parameter takes its share.
        max_parameter_size: 4096 - LAUNCH_INFO_SIZE,
        local_mem_type: LocalMemType::Local,
        error_correction: mem.error_correction,
        max_work_groups: groups.max_work_groups,
        max_registers_per_work_group: groups.max_registers_per_work_group,
        preferred_vector_widths: VectorWidths::scalar(!fp.half.is_empty(), true),
        native_vector_widths: VectorWidths::scalar(!fp.half.is_empty(), true),
        fp,
        sub_groups: groups.sub_groups,
        atomics,
        // cuEventElapsedTime's resolution is about half a microsecond.
        profiling_timer_resolution_ns: 500,
        printf_buffer_size: printf_fifo_size(),
        native_bfloat16_conversions: cc.0 >= 8,
    };
    Ok((info, limits))
}

/// How the device runs work-groups, as [`DeviceInfo`] answers it.
struct WorkGroups {
    max_compute_units: u32,
    max_work_group_size: usize,
    max_work_item_sizes: [usize; 3],
    max_work_groups: [usize; 3],
    max_registers_per_work_group: Option<u32>,
    sub_groups: SubGroups,
}

/// The work-group geometry of `device`, whose grid `limits` holds.
fn work_groups(device: sys::CUdevice, limits: &Limits) -> Result<WorkGroups> {
    use sys::CUdevice_attribute as A;
    let get = |a| attribute(device, a);
    let warp = get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32;
    let max_threads = get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    Ok(WorkGroups {
        max_compute_units: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        max_work_group_size: max_threads as usize,
        max_work_item_sizes: max_block_dims(device)?,
        max_work_groups: limits.max_grid.map(|g| g as usize),
        max_registers_per_work_group: optional_attribute(device, A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
        sub_groups: warp_sub_groups(warp, max_threads),
    })
}

/// The device's memory, as [`DeviceInfo`] answers it.
struct Memory {
    global_mem_size: u64,
    max_mem_alloc_size: u64,
    local_mem_size: u64,
    max_constant_buffer_size: u64,
    memory_hardware: MemoryHardware,
    global_mem_cache: GlobalMemCache,
    mem_base_addr_align_bits: u32,
    error_correction: bool,
}

/// The memory of `device`, `total` bytes of it.
fn memory(device: sys::CUdevice, total: usize) -> Result<Memory> {
    use sys::CUdevice_attribute as A;
    let get = |a| attribute(device, a);
    let optional = |a| optional_attribute(device, a);
    Ok(Memory {
        global_mem_size: total as u64,
        max_mem_alloc_size: total as u64,
        // Shared memory every block gets without opting in; kernels opt
        // into more, which leaves room for the alignment of local arguments.
        local_mem_size: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u64,
        max_constant_buffer_size: get(A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)? as u64,
        memory_hardware: memory_hardware(
            optional(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            optional(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        ),
        global_mem_cache: global_mem_cache(device),
        // cuMemAlloc aligns every allocation to at least 256 bytes.
        mem_base_addr_align_bits: 256 * 8,
        error_correction: get(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED).is_ok_and(|ecc| ecc != 0),
    })
}

/// The device's name.
fn device_name(device: sys::CUdevice) -> Result<String> {
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds 256 bytes; the driver writes a NUL-terminated name.
    unsafe { cu!(cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device))? };
    // SAFETY: NUL-terminated by the driver (the buffer is large enough).
    Ok(unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned())
}

/// The device's memory size in bytes.
fn total_memory(device: sys::CUdevice) -> Result<usize> {
    let mut total = 0usize;
    // SAFETY: writes the device's memory size.
    unsafe { cu!(cuDeviceTotalMem_v2(&mut total, device))? };
    Ok(total)
}

/// The [`Limits`] the adapter checks commands against.
fn read_limits(device: sys::CUdevice) -> Result<Limits> {
    use sys::CUdevice_attribute as A;
    let get = |a| attribute(device, a);
    Ok(Limits {
        max_grid: [
            get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u32,
            get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u32,
            get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u32,
        ],
        shared_optin: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32,
        managed: get(A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0,
        concurrent_managed: get(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? != 0,
        compute_capability: (
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
    })
}

/// Device USM always; host USM where the device maps host memory; shared
/// USM where it has managed memory.
fn usm_kinds(device: sys::CUdevice, limits: &Limits) -> Result<UsmKinds> {
    let mut usm = UsmKinds::DEVICE;
    if attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)? != 0 {
        usm |= UsmKinds::HOST;
    }
    if limits.managed {
        usm |= UsmKinds::SHARED;
    }
    Ok(usm)
}

/// The program source forms, preferred first.
fn source_forms() -> Vec<SourceForm> {
    // CUDA C needs NVRTC; without it PTX comes first, and a CUDA C-only
    // program fails with the reason NVRTC is missing.
    if nvrtc::available() { vec![SourceForm::CudaC, SourceForm::Ptx] } else { vec![SourceForm::Ptx, SourceForm::CudaC] }
}

/// An attribute the device may not report: `None` where the driver fails
/// or answers zero.
fn optional_attribute(device: sys::CUdevice, a: sys::CUdevice_attribute) -> Option<u32> {
    attribute(device, a).ok().filter(|v| *v > 0).map(|v| v as u32)
}

/// The device's UUID, where the driver gives it.
fn device_uuid(device: sys::CUdevice) -> Option<[u8; 16]> {
    let mut uuid = sys::CUuuid_st { bytes: [0; 16] };
    // SAFETY: writes the 16 bytes of the device's UUID.
    unsafe { cu!(cuDeviceGetUuid_v2(&mut uuid, device)) }.ok().map(|()| uuid.bytes.map(|b| b as u8))
}

/// The printf FIFO size of the context bound to the calling thread; 0 where
/// the driver does not say.
fn printf_fifo_size() -> usize {
    let mut printf_fifo = 0usize;
    // SAFETY: writes one limit of the bound context.
    unsafe { cu!(cuCtxGetLimit(&mut printf_fifo, sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE)) }.map_or(0, |()| printf_fifo)
}

/// The largest block per dimension.
fn max_block_dims(device: sys::CUdevice) -> Result<[usize; 3]> {
    use sys::CUdevice_attribute as A;
    let get = |a| attribute(device, a);
    Ok([
        get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as usize,
        get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as usize,
        get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as usize,
    ])
}

/// Native command buffers: CUDA graphs, with every update.
fn command_buffer_caps() -> CommandBufferCaps {
    CommandBufferCaps {
        support: CommandBufferSupport::Native,
        update: UpdateCapabilities::all(),
        events: true,
        // Native commands' child command buffers: child-graph nodes.
        subgraphs: true,
        replay_path: cmdbuf_core::ReplayPath::Driver,
    }
}

/// The memory's clock, bus width and the bandwidth they give.
fn memory_hardware(memory_clock_khz: Option<u32>, bus_width: Option<u32>) -> MemoryHardware {
    MemoryHardware {
        clock_mhz: memory_clock_khz.map(|khz| khz / 1000),
        bus_width,
        // Double data rate: two transfers of the bus width per clock.
        bandwidth: memory_clock_khz.zip(bus_width).map(|(khz, bits)| u64::from(khz) * 1000 * 2 * u64::from(bits) / 8),
    }
}

/// NVIDIA GPUs cache global memory in L1 and L2 in 128-byte lines (CUDA C++
/// Programming Guide, "Global Memory"); the size is the L2's.
fn global_mem_cache(device: sys::CUdevice) -> GlobalMemCache {
    GlobalMemCache {
        kind: CacheType::ReadWrite,
        line_size: Some(128),
        size: optional_attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
    }
}

/// Warps: each makes progress of its own.
fn warp_sub_groups(warp: u32, max_threads: i32) -> SubGroups {
    SubGroups {
        sizes: vec![warp],
        max_per_work_group: (max_threads as u32).div_ceil(warp.max(1)),
        independent_forward_progress: true,
    }
}

fn attribute(device: sys::CUdevice, attribute: sys::CUdevice_attribute) -> Result<i32> {
    let mut value = 0;
    // SAFETY: writes one attribute of a valid device.
    unsafe { cu!(cuDeviceGetAttribute(&mut value, attribute, device))? };
    Ok(value)
}

/// The PCI vendor id of NVIDIA.
const NVIDIA_VENDOR_ID: u32 = 0x10DE;

/// `domain:bus:device.function` from the device's PCI attributes.
fn pci_address(device: sys::CUdevice) -> Option<String> {
    use sys::CUdevice_attribute as A;
    let get = |a| attribute(device, a).ok();
    let domain = get(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
    let bus = get(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
    let slot = get(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
    Some(format!("{domain:04x}:{bus:02x}:{slot:02x}.0"))
}

/// IEEE arithmetic in every rounding mode (PTX's `.rn`, `.rz`, `.rm`, `.rp`)
/// with denormals, and correctly rounded division and square root in 32 and
/// 64 bits; `half` arithmetic from compute capability 5.3.
pub(crate) fn fp_configs(cc: (i32, i32)) -> FpConfigs {
    let ieee = FpCapabilities::ROUND_TO_NEAREST
        | FpCapabilities::ROUND_TO_ZERO
        | FpCapabilities::ROUND_TO_INF
        | FpCapabilities::INF_NAN
        | FpCapabilities::DENORM
        | FpCapabilities::FMA;
    let full = ieee | FpCapabilities::CORRECTLY_ROUNDED_DIVIDE_SQRT;
    FpConfigs { half: if cc >= (5, 3) { ieee } else { FpCapabilities::empty() }, single: full, double: full }
}

/// PTX's memory model (compute capability 7.0): every order, sequential
/// consistency included, at every scope; before it, no sequentially
/// consistent operations.
pub(crate) fn atomic_caps(cc: (i32, i32)) -> AtomicCaps {
    let mut orders = MemoryOrders::RELAXED | MemoryOrders::ACQUIRE | MemoryOrders::RELEASE | MemoryOrders::ACQ_REL;
    orders.set(MemoryOrders::SEQ_CST, cc.0 >= 7);
    let mut scopes = MemoryScopes::all();
    scopes.set(MemoryScopes::SYSTEM, cc.0 >= 6);
    AtomicCaps { int64: true, memory_orders: orders, memory_scopes: scopes, fence_orders: orders, fence_scopes: scopes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_by_compute_capability() {
        let volta = atomic_caps((7, 0));
        assert!(volta.memory_orders.contains(MemoryOrders::SEQ_CST));
        assert_eq!(volta.memory_scopes, MemoryScopes::all());
        let maxwell = atomic_caps((5, 2));
        assert!(!maxwell.memory_orders.contains(MemoryOrders::SEQ_CST));
        assert!(!maxwell.memory_scopes.contains(MemoryScopes::SYSTEM));
        assert!(fp_configs((5, 2)).half.is_empty());
        assert!(!fp_configs((5, 3)).half.is_empty());
        let ampere = fp_configs((8, 6));
        assert!(ampere.single.contains(FpCapabilities::CORRECTLY_ROUNDED_DIVIDE_SQRT));
        assert_eq!(ampere.single, ampere.double);
        assert!(!ampere.half.contains(FpCapabilities::CORRECTLY_ROUNDED_DIVIDE_SQRT));
    }
}
