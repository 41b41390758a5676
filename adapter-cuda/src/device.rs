//! The CUDA platform, its devices, and the state each device shares among
//! its contexts: the primary context, an internal stream, the timing base,
//! a pool of host-mapped status words, and the work held back on the host.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::Arc;

use cudarc::driver::sys;
use parking_lot::Mutex;
use ur_core::adapter::{ContextImpl, DeviceImpl, PlatformImpl};
use ur_core::clock::bracket_narrowest;
use ur_core::{
    AtomicCaps, BinaryTarget, CacheType, CommandBufferCaps, CommandBufferSupport, DeviceInfo, DeviceType,
    FpCapabilities, FpConfigs, GlobalMemCache, LocalMemType, MemoryHardware, MemoryOrders, MemoryScopes, Result,
    SourceForm, SubGroups, Timestamps, UpdateCapabilities, UsmKinds, VectorWidths, capability_extensions,
};

use crate::context::CudaContext;
use crate::driver::{Ctx, CuEvent, Stream, cu};
use crate::hold::Held;
use crate::nvrtc;
use crate::queue::Job;

/// `CU_DEVICE_CPU`: the host, as a prefetch or advice target.
pub(crate) const DEVICE_CPU: sys::CUdevice = -1;

/// The host clock ([`ur_core::host_clock_ns`]): the timeline of every
/// profiling timestamp of this adapter, device times included (they are
/// mapped onto it through the device's base event).
pub(crate) fn now_ns() -> u64 {
    ur_core::host_clock_ns()
}

/// The one platform: the CUDA driver with every device it reports.
pub(crate) struct CudaPlatform {
    version: String,
    devices: Vec<Arc<CudaDevice>>,
}

impl CudaPlatform {
    pub(crate) fn open() -> std::result::Result<CudaPlatform, String> {
        crate::driver::open()?;
        let (version, devices) = discover().map_err(|e| format!("the CUDA driver failed to list its devices: {e}"))?;
        if devices.is_empty() {
            return Err("the CUDA driver reports no usable device".into());
        }
        Ok(CudaPlatform { version, devices })
    }
}

fn discover() -> Result<(String, Vec<Arc<CudaDevice>>)> {
    let mut version = 0;
    // SAFETY: writes the driver's version number.
    unsafe { cu!(cuDriverGetVersion(&mut version))? };
    let version = format!("CUDA {}.{} driver", version / 1000, (version % 1000) / 10);
    let mut count = 0;
    // SAFETY: writes the number of devices.
    unsafe { cu!(cuDeviceGetCount(&mut count))? };
    let mut devices = Vec::new();
    for ordinal in 0..count {
        match DeviceShared::open(ordinal, &version) {
            Ok(shared) => devices.push(Arc::new(CudaDevice { shared })),
            // One broken device does not hide the others; the log says why.
            Err(e) => tracing::warn!(ordinal, error = %e, "CUDA device left out"),
        }
    }
    Ok((version, devices))
}

impl PlatformImpl for CudaPlatform {
    fn name(&self) -> String {
        "NVIDIA CUDA".into()
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>> {
        self.devices.iter().map(|d| d.clone() as Arc<dyn DeviceImpl>).collect()
    }
}

/// A CUDA device as the loader sees it.
pub(crate) struct CudaDevice {
    shared: Arc<DeviceShared>,
}

impl DeviceImpl for CudaDevice {
    fn info(&self) -> DeviceInfo {
        self.shared.info.clone()
    }

    /// The `CUdevice` (the device ordinal).
    fn native_handle(&self) -> Result<ur_core::NativeHandle> {
        Ok(ur_core::NativeHandle(self.shared.device as u64))
    }

    fn free_memory(&self) -> Result<Option<u64>> {
        self.shared.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two sizes; the device's context is bound.
        unsafe { cu!(cuMemGetInfo_v2(&mut free, &mut total))? };
        Ok(Some(free as u64))
    }

    fn timestamps(&self) -> Result<Timestamps> {
        self.shared.timestamps()
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        Ok(Arc::new(CudaContext::new(self.shared.clone())))
    }

    /// `cuDeviceCanAccessPeer` from this device to `peer`, and the native
    /// atomics `cuDeviceGetP2PAttribute` reports for that direction. The
    /// same device always reaches its own memory.
    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<ur_core::PeerAccess> {
        let peer = cuda_device(peer)?;
        if peer.shared.device == self.shared.device {
            return Ok(ur_core::PeerAccess { supported: true, atomics: true });
        }
        let (mut can, mut atomics) = (0, 0);
        // SAFETY: writes one flag for two valid devices.
        unsafe { cu!(cuDeviceCanAccessPeer(&mut can, self.shared.device, peer.shared.device))? };
        if can != 0 {
            let attribute = sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED;
            // SAFETY: writes one attribute for two valid devices.
            unsafe { cu!(cuDeviceGetP2PAttribute(&mut atomics, attribute, self.shared.device, peer.shared.device))? };
        } else {
            tracing::debug!(device = self.shared.device, peer = peer.shared.device, "cuDeviceCanAccessPeer: no");
        }
        Ok(ur_core::PeerAccess { supported: can != 0, atomics: can != 0 && atomics != 0 })
    }

    /// `cuCtxEnablePeerAccess` from this device's primary context to the
    /// peer's (access is per context pair; every context here is the
    /// primary one). Already enabled, by this adapter or another user of
    /// the primary contexts, counts as done.
    fn enable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        let peer = cuda_device(peer)?;
        self.shared.bind()?;
        // SAFETY: the peer's primary context is retained by the peer device;
        // this device's is current.
        let result = unsafe { sys::cuCtxEnablePeerAccess(peer.shared.ctx.0, 0) };
        if result == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            return Ok(());
        }
        crate::conv::check(result, "cuCtxEnablePeerAccess")
    }

    fn disable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        let peer = cuda_device(peer)?;
        self.shared.bind()?;
        // SAFETY: as for `enable_peer_access`.
        unsafe { cu!(cuCtxDisablePeerAccess(peer.shared.ctx.0)) }
    }

    /// Every context of the device is over its primary context, so that is
    /// the only `CUcontext` adopted; the adapter holds its own reference to
    /// it and takes over none (`Ownership::Transferred` is refused).
    unsafe fn context_from_native(
        self: Arc<Self>,
        handle: ur_core::NativeHandle,
        ownership: ur_core::Ownership,
    ) -> Result<Arc<dyn ContextImpl>> {
        if handle.0 != self.shared.ctx.0 as u64 {
            return Err(ur_core::err!(InvalidContext, "{handle:?} is not the device's primary CUDA context"));
        }
        if ownership == ur_core::Ownership::Transferred {
            return Err(ur_core::err!(
                UnsupportedFeature,
                "the primary context is held by the device: its ownership cannot be handed over"
            ));
        }
        Ok(Arc::new(CudaContext::new(self.shared.clone())))
    }
}

/// The CUDA device behind a device object of this adapter.
fn cuda_device(device: &dyn DeviceImpl) -> Result<&CudaDevice> {
    ur_core::adapter::downcast::<CudaDevice>(device as &dyn std::any::Any, "the peer device")
}

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

/// A resource whose release may wait for the device (which only ever waits
/// for work already issued, see `hold`).
pub(crate) enum Release {
    DeviceMemory(sys::CUdeviceptr),
    HostMemory(*mut c_void),
    Module(sys::CUmodule),
    Graph(sys::CUgraph),
    GraphExec(sys::CUgraphExec),
}

// SAFETY: the handles are plain driver handles, usable from any thread.
unsafe impl Send for Release {}

/// The kernel that ends every command buffer with kernels: it moves the
/// buffer's status word into the submission's slot of the buffer's status
/// ring (`ring[1 + ring[0] % slots]`, then counts the submission in
/// `ring[0]`) and clears the word for the next submission. A kernel rather
/// than a host node: a host node makes the graph's completion wait for the
/// driver's callback thread, which cost tens of microseconds per replay; and
/// a ring rather than a word per submission, so that its parameters never
/// change and an enqueue sets none.
const STATUS_COLLECTOR_PTX: &str = r#"
.version 6.0
.target sm_70
.address_size 64

.visible .entry ur_collect_status(.param .u64 word, .param .u64 ring, .param .u32 mask)
{
    .reg .b64 %rd<6>;
    .reg .b32 %r<5>;
    ld.param.u64 %rd1, [word];
    ld.param.u64 %rd2, [ring];
    ld.param.u32 %r3, [mask];
    ld.volatile.global.u32 %r1, [%rd1];
    ld.volatile.global.u32 %r2, [%rd2];
    and.b32 %r4, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.u64 %rd4, %rd2, 4;
    add.u64 %rd5, %rd4, %rd3;
    st.volatile.global.u32 [%rd5], %r1;
    add.u32 %r2, %r2, 1;
    st.volatile.global.u32 [%rd2], %r2;
    st.volatile.global.u32 [%rd1], 0;
    ret;
}
"#;

/// The loaded status collector (see `STATUS_COLLECTOR_PTX`).
pub(crate) struct StatusCollector {
    module: sys::CUmodule,
    pub(crate) func: sys::CUfunction,
}

impl StatusCollector {
    /// Loads it into the bound context.
    fn load() -> Result<StatusCollector> {
        let ptx = std::ffi::CString::new(STATUS_COLLECTOR_PTX).expect("no NUL in the PTX");
        let mut module: sys::CUmodule = ptr::null_mut();
        // SAFETY: NUL-terminated PTX; the caller bound the context.
        unsafe { cu!(cuModuleLoadDataEx(&mut module, ptx.as_ptr().cast(), 0, ptr::null_mut(), ptr::null_mut()))? };
        let mut func: sys::CUfunction = ptr::null_mut();
        // SAFETY: the module was just loaded and declares this entry.
        let found = unsafe { cu!(cuModuleGetFunction(&mut func, module, c"ur_collect_status".as_ptr())) };
        if let Err(e) = found {
            // SAFETY: loaded above, used by nothing.
            let _ = unsafe { sys::cuModuleUnload(module) };
            return Err(e);
        }
        Ok(StatusCollector { module, func })
    }
}

/// Streams kept for reuse, at most this many.
const POOLED_STREAMS: usize = 64;
/// Streams made when the device opens: enough for eight out-of-order queues.
const PREWARMED_STREAMS: usize = 32;

/// A 32-bit word of host memory mapped for the device.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Word {
    slot: u32,
    host: *mut u32,
    /// The device address of the word.
    pub(crate) addr: u64,
}

// SAFETY: the word is host memory owned by the device's pool; access is
// volatile and ordered by the protocols of its users.
unsafe impl Send for Word {}
// SAFETY: as for Send.
unsafe impl Sync for Word {}

impl Word {
    pub(crate) fn read(&self) -> u32 {
        // SAFETY: the word lies in a live page of the pool; the device writes it
        // concurrently, hence the volatile access.
        unsafe { ptr::read_volatile(self.host) }
    }

    pub(crate) fn write(&self, value: u32) {
        // SAFETY: as for `read`.
        unsafe { ptr::write_volatile(self.host, value) };
        // Make the write visible to the device before anything the caller does next.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Pages of host-mapped words, never freed before the device.
#[derive(Default)]
struct WordPool {
    pages: Vec<(*mut u32, u64)>,
    free: Vec<u32>,
}

const WORDS_PER_PAGE: u32 = 1024;

/// PTX by CUDA C source and compute capability.
pub(crate) type PtxCache = HashMap<(String, (i32, i32)), Arc<CString>>;

/// What every context of a device shares.
pub(crate) struct DeviceShared {
    pub(crate) device: sys::CUdevice,
    pub(crate) ctx: Ctx,
    pub(crate) info: DeviceInfo,
    pub(crate) limits: Limits,
    /// For allocation-time zeroing and initial copies; it never waits on anything.
    internal: Stream,
    /// The origin of device timestamps, recorded at `base_ns` on the host clock.
    base: CuEvent,
    base_ns: u64,
    /// Never recorded, so always complete: stands for "nothing to wait for"
    /// where a graph node needs an event.
    pub(crate) complete: CuEvent,
    /// Work held back on the host until the events it waits for allow.
    pub(crate) held: Held<Job>,
    /// Idle streams for reuse, each with an event recorded when it was
    /// returned: it is idle once that event has completed.
    stream_pool: Mutex<Vec<(Stream, CuEvent)>>,
    status_words: Mutex<WordPool>,
    /// Status words whose kernel may still run, with the event that says when not.
    retiring: Mutex<Vec<(Word, Arc<CuEvent>)>>,
    /// Events without timing for reuse: every submission records one, and
    /// creating and destroying one costs more than recording it again.
    event_pool: Mutex<Vec<CuEvent>>,
    /// PTX compiled from CUDA C, by source and architecture.
    pub(crate) ptx_cache: Mutex<PtxCache>,
    /// Ends command buffers with kernels.
    pub(crate) collector: StatusCollector,
    /// Declared last: released after every other field is gone.
    _primary: PrimaryContext,
}

// SAFETY: the raw pointers inside (word pages) are host memory owned by the
// device and accessed under its mutexes or volatilely; driver handles may be
// used from any thread.
unsafe impl Send for DeviceShared {}
// SAFETY: as for Send.
unsafe impl Sync for DeviceShared {}

struct PrimaryContext(sys::CUdevice);

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: the primary context was retained once in `DeviceShared::open`.
        let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.0) };
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

impl DeviceShared {
    fn open(ordinal: i32, driver_version: &str) -> Result<Arc<DeviceShared>> {
        use sys::CUdevice_attribute as A;
        let mut device: sys::CUdevice = 0;
        // SAFETY: `ordinal` is below the device count.
        unsafe { cu!(cuDeviceGet(&mut device, ordinal))? };
        let mut raw_ctx: sys::CUcontext = ptr::null_mut();
        // SAFETY: retains the device's primary context, released by `PrimaryContext`.
        unsafe { cu!(cuDevicePrimaryCtxRetain(&mut raw_ctx, device))? };
        let primary = PrimaryContext(device);
        let ctx = Ctx(raw_ctx);
        ctx.bind()?;

        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 bytes; the driver writes a NUL-terminated name.
        unsafe { cu!(cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device))? };
        // SAFETY: NUL-terminated by the driver (the buffer is large enough).
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut total = 0usize;
        // SAFETY: writes the device's memory size.
        unsafe { cu!(cuDeviceTotalMem_v2(&mut total, device))? };
        let get = |a| attribute(device, a);
        if get(A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)? == 0 {
            return Err(ur_core::err!(UnsupportedFeature, "{name} has no unified addressing"));
        }
        let limits = Limits {
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
        };
        let mut usm = UsmKinds::DEVICE;
        if get(A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)? != 0 {
            usm |= UsmKinds::HOST;
        }
        if limits.managed {
            usm |= UsmKinds::SHARED;
        }
        // CUDA C needs NVRTC; without it PTX comes first, and a CUDA C-only
        // program fails with the reason NVRTC is missing.
        let source_forms = if nvrtc::available() {
            vec![SourceForm::CudaC, SourceForm::Ptx]
        } else {
            vec![SourceForm::Ptx, SourceForm::CudaC]
        };
        let cc = limits.compute_capability;
        let warp = get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32;
        let max_threads = get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        let optional = |a| get(a).ok().filter(|v| *v > 0).map(|v| v as u32);
        let memory_clock_khz = optional(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
        let bus_width = optional(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
        let fp = fp_configs(cc);
        let atomics = atomic_caps(cc);
        let integrated = get(A::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0;
        let mut uuid = sys::CUuuid_st { bytes: [0; 16] };
        // SAFETY: writes the 16 bytes of the device's UUID.
        let uuid = unsafe { cu!(cuDeviceGetUuid_v2(&mut uuid, device)) }.ok().map(|()| uuid.bytes.map(|b| b as u8));
        let mut printf_fifo = 0usize;
        // SAFETY: writes one limit of the bound context.
        let printf_fifo = unsafe { cu!(cuCtxGetLimit(&mut printf_fifo, sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE)) }
            .map_or(0, |()| printf_fifo);
        let info = DeviceInfo {
            name,
            vendor: "NVIDIA Corporation".into(),
            driver_version: driver_version.into(),
            device_type: DeviceType::Gpu,
            max_compute_units: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            max_work_group_size: max_threads as usize,
            max_work_item_sizes: [
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as usize,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as usize,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as usize,
            ],
            global_mem_size: total as u64,
            // Shared memory every block gets without opting in; kernels opt
            // into more, which leaves room for the alignment of local arguments.
            local_mem_size: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u64,
            max_mem_alloc_size: total as u64,
            usm,
            // Unified virtual addressing: host and managed memory have one address.
            usm_host_addressable: true,
            queue_profiling: true,
            out_of_order_queues: true,
            source_forms,
            command_buffer: CommandBufferCaps {
                support: CommandBufferSupport::Native,
                update: UpdateCapabilities::all(),
                events: true,
                // Native commands' child command buffers: child-graph nodes.
                subgraphs: true,
                replay_path: ur_core::ReplayPath::Driver,
            },
            vendor_id: NVIDIA_VENDOR_ID,
            // The driver API has no PCI device id (its PCI_DEVICE_ID
            // attribute is the device number on the bus).
            device_id: None,
            uuid,
            pci_address: pci_address(device),
            ip_version: Some((cc.0 * 10 + cc.1) as u32),
            version: format!("{}.{}", cc.0, cc.1),
            extensions: capability_extensions(&fp, &atomics),
            // PTX arrives as an `nvptx64` binary, not as an IL.
            il_version: None,
            binary_targets: vec![BinaryTarget::Nvptx64],
            integrated_gpu: integrated,
            host_unified_memory: integrated,
            max_clock_mhz: optional(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|khz| khz / 1000),
            memory_hardware: MemoryHardware {
                clock_mhz: memory_clock_khz.map(|khz| khz / 1000),
                bus_width,
                // Double data rate: two transfers of the bus width per clock.
                bandwidth: memory_clock_khz
                    .zip(bus_width)
                    .map(|(khz, bits)| u64::from(khz) * 1000 * 2 * u64::from(bits) / 8),
            },
            // NVIDIA GPUs cache global memory in L1 and L2 in 128-byte lines
            // (CUDA C++ Programming Guide, "Global Memory").
            global_mem_cache: GlobalMemCache {
                kind: CacheType::ReadWrite,
                line_size: Some(128),
                size: optional(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
            },
            // cuMemAlloc aligns every allocation to at least 256 bytes.
            mem_base_addr_align_bits: 256 * 8,
            max_constant_buffer_size: get(A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)? as u64,
            // Read-only data is passed as ordinary global pointers: no count limit.
            max_constant_args: u32::MAX,
            // Kernel parameters are limited to 4 KiB, of which the adapter's
            // hidden launch parameter takes its share.
            max_parameter_size: 4096 - crate::program::LAUNCH_INFO_SIZE,
            local_mem_type: LocalMemType::Local,
            error_correction: get(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED).is_ok_and(|ecc| ecc != 0),
            max_work_groups: limits.max_grid.map(|g| g as usize),
            max_registers_per_work_group: optional(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
            preferred_vector_widths: VectorWidths::scalar(!fp.half.is_empty(), true),
            native_vector_widths: VectorWidths::scalar(!fp.half.is_empty(), true),
            fp,
            // Warps: each makes progress of its own.
            sub_groups: SubGroups {
                sizes: vec![warp],
                max_per_work_group: (max_threads as u32).div_ceil(warp.max(1)),
                independent_forward_progress: true,
            },
            atomics,
            // cuEventElapsedTime's resolution is about half a microsecond.
            profiling_timer_resolution_ns: 500,
            printf_buffer_size: printf_fifo,
            native_bfloat16_conversions: cc.0 >= 8,
        };

        let internal = Stream::new()?;
        let base = CuEvent::new(true)?;
        base.record(internal.raw())?;
        internal.synchronize()?;
        let base_ns = now_ns();
        let complete = CuEvent::new(false)?;
        // Streams made now: creating one may wait for the device.
        let mut stream_pool = Vec::with_capacity(PREWARMED_STREAMS);
        for _ in 0..PREWARMED_STREAMS {
            stream_pool.push((Stream::new()?, CuEvent::new(false)?));
        }
        let collector = StatusCollector::load()?;
        tracing::debug!(ordinal, name = %info.name, ?limits, "CUDA device opened");
        Ok(Arc::new(DeviceShared {
            device,
            ctx,
            info,
            limits,
            internal,
            base,
            base_ns,
            complete,
            held: Held::default(),
            stream_pool: Mutex::new(stream_pool),
            status_words: Mutex::default(),
            retiring: Mutex::default(),
            event_pool: Mutex::default(),
            ptx_cache: Mutex::default(),
            collector,
            _primary: primary,
        }))
    }

    /// Binds the device's context to the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx.bind()
    }

    /// The internal stream, for work that must be complete before a call returns.
    pub(crate) fn internal(&self) -> &Stream {
        &self.internal
    }

    /// The host-clock time of a complete timing event.
    pub(crate) fn timestamp_ns(&self, event: &CuEvent) -> Result<u64> {
        let ms = self.base.elapsed_ms(event)?;
        Ok(self.base_ns + (f64::from(ms.max(0.0)) * 1e6) as u64)
    }

    /// A device timestamp on the profiling timeline: the time of an event
    /// recorded on the internal stream, paired with the midpoint of the host
    /// clock around its record and synchronisation (the narrowest of three).
    pub(crate) fn timestamps(&self) -> Result<Timestamps> {
        self.bind()?;
        let event = CuEvent::new(true)?;
        let (device, host) = bracket_narrowest(3, || {
            event.record(self.internal.raw())?;
            event.synchronize()?;
            self.timestamp_ns(&event)
        })?;
        Ok(Timestamps { device, host })
    }

    /// Releases `resource`. Freeing memory or unloading a module may wait
    /// for the device, which never waits for the host (see `hold`).
    pub(crate) fn release(&self, resource: Release) {
        if let Err(e) = self.bind() {
            tracing::warn!(error = %e, "cannot bind the CUDA context to release a resource");
            return;
        }
        // SAFETY: each resource was created by this device's context, is no
        // longer used by any command (the front end holds objects until their
        // commands complete) and is released exactly once.
        let result = unsafe {
            match resource {
                Release::DeviceMemory(p) => cu!(cuMemFree_v2(p)),
                Release::HostMemory(p) => cu!(cuMemFreeHost(p)),
                Release::Module(m) => cu!(cuModuleUnload(m)),
                Release::Graph(g) => cu!(cuGraphDestroy(g)),
                Release::GraphExec(g) => cu!(cuGraphExecDestroy(g)),
            }
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "CUDA release failed");
        }
    }

    /// A stream of this device: an idle one from the pool, or a new one.
    /// Creating streams may also wait for the device, so streams are reused.
    pub(crate) fn take_stream(&self) -> Result<Stream> {
        if let Some(stream) = self.take_pooled_stream() {
            return Ok(stream);
        }
        self.bind()?;
        Stream::new()
    }

    /// An idle stream from the pool, if there is one: never creates one, so
    /// never waits for the device.
    pub(crate) fn take_pooled_stream(&self) -> Option<Stream> {
        let mut pool = self.stream_pool.lock();
        let i = pool.iter().position(|(_, idle)| matches!(idle.query(), Ok(crate::driver::Query::Ready)))?;
        Some(pool.swap_remove(i).0)
    }

    /// Gives a stream back for reuse once the work submitted to it so far is done.
    pub(crate) fn return_stream(&self, stream: Stream) {
        let idle = match self.bind().and_then(|()| CuEvent::new(false)) {
            Ok(idle) => idle,
            Err(_) => return,
        };
        if idle.record(stream.raw()).is_err() {
            return;
        }
        let mut pool = self.stream_pool.lock();
        if pool.len() < POOLED_STREAMS {
            pool.push((stream, idle));
        }
    }

    /// `words` zeroed 32-bit words of pinned, device-mapped host memory: the
    /// host address and the device address. Freed with `cuMemFreeHost`
    /// ([`Release::HostMemory`]).
    pub(crate) fn pinned_mapped(&self, words: usize) -> Result<(*mut u32, u64)> {
        self.bind()?;
        let bytes = words * 4;
        let mut host: *mut c_void = ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: allocates `bytes` of pinned, device-mapped host memory into `host`.
        unsafe { cu!(cuMemHostAlloc(&mut host, bytes, flags))? };
        // SAFETY: `host` holds `bytes` bytes just allocated.
        unsafe { ptr::write_bytes(host.cast::<u8>(), 0, bytes) };
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP; writes its device address.
        if let Err(e) = unsafe { cu!(cuMemHostGetDevicePointer_v2(&mut dev, host, 0)) } {
            self.release(Release::HostMemory(host));
            return Err(e);
        }
        Ok((host.cast(), dev))
    }

    /// A kernel status word, zeroed.
    pub(crate) fn status_word(&self) -> Result<Word> {
        self.sweep_retiring();
        let mut pool = self.status_words.lock();
        if pool.free.is_empty() {
            let (host, dev) = self.pinned_mapped(WORDS_PER_PAGE as usize)?;
            let page = pool.pages.len() as u32;
            pool.pages.push((host, dev));
            pool.free.extend((0..WORDS_PER_PAGE).rev().map(|i| page * WORDS_PER_PAGE + i));
        }
        let slot = pool.free.pop().expect("a page was just added");
        let (page, index) = (slot / WORDS_PER_PAGE, slot % WORDS_PER_PAGE);
        let (host, dev) = pool.pages[page as usize];
        // SAFETY: `index` is within the page's WORDS_PER_PAGE words.
        let word = Word { slot, host: unsafe { host.add(index as usize) }, addr: dev + u64::from(index) * 4 };
        word.write(0);
        Ok(word)
    }

    /// Returns a status word to its pool; the device no longer touches it.
    pub(crate) fn free_word(&self, word: Word) {
        self.status_words.lock().free.push(word.slot);
    }

    /// Returns a status word once `event` (after the kernel that may write
    /// it) has completed.
    pub(crate) fn retire_status_word(&self, word: Word, event: Arc<CuEvent>) {
        match event.query() {
            Ok(crate::driver::Query::Pending) => self.retiring.lock().push((word, event)),
            _ => {
                self.free_word(word);
                self.recycle_event(event);
            }
        }
    }

    /// An event without timing of the bound context: a pooled one or a new one.
    pub(crate) fn plain_event(&self) -> Result<CuEvent> {
        match self.event_pool.lock().pop() {
            Some(event) => Ok(event),
            None => CuEvent::new(false),
        }
    }

    /// Keeps an event for reuse once nothing will wait on it again: waits
    /// already issued keep what its last record was, and recording it again
    /// only affects later waits. One that held work will still wait on is
    /// left to them (and destroyed by the last).
    pub(crate) fn recycle_event(&self, event: Arc<CuEvent>) {
        const KEPT: usize = 256;
        let Ok(event) = Arc::try_unwrap(event) else { return };
        let mut pool = self.event_pool.lock();
        if !event.is_timing() && pool.len() < KEPT {
            pool.push(event);
        }
    }

    fn sweep_retiring(&self) {
        let done: Vec<(Word, Arc<CuEvent>)> = {
            let mut retiring = self.retiring.lock();
            if retiring.is_empty() {
                return;
            }
            let (done, pending): (Vec<_>, Vec<_>) =
                retiring.drain(..).partition(|(_, e)| !matches!(e.query(), Ok(crate::driver::Query::Pending)));
            *retiring = pending;
            done
        };
        for (w, event) in done {
            self.free_word(w);
            self.recycle_event(event);
        }
    }
}

impl Drop for DeviceShared {
    fn drop(&mut self) {
        let _ = self.bind();
        // SAFETY: loaded in `open`; no graph that uses it runs any more.
        let _ = unsafe { sys::cuModuleUnload(self.collector.module) };
        for (host, _) in self.status_words.get_mut().pages.drain(..) {
            // SAFETY: allocated by cuMemHostAlloc in `status_word`, freed once;
            // the device is going away, so no kernel writes these words any more.
            let _ = unsafe { sys::cuMemFreeHost(host.cast()) };
        }
    }
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
