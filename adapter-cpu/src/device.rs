//! The CPU platform and its one device.

use std::sync::Arc;

use ur_core::adapter::{ContextImpl, DeviceImpl, PlatformImpl};
use ur_core::{
    AtomicCaps, CacheType, CommandBufferCaps, CommandBufferSupport, DeviceInfo, DeviceType, FpCapabilities, FpConfigs,
    GlobalMemCache, LocalMemType, MemoryHardware, MemoryOrders, MemoryScopes, Result, SourceForm, SubGroups,
    Timestamps, UpdateCapabilities, UsmKinds, VectorWidths, capability_extensions,
};

use crate::context::CpuContext;
use crate::host;
use crate::memory::DEFAULT_ALIGN;
use crate::pool::{Pool, now_ns};

/// The variable that sets the number of worker threads.
pub const THREADS_ENV: &str = "UR_CPU_THREADS";

/// Largest work-group, and local size per dimension.
const MAX_WORK_GROUP: usize = 4096;
/// Local memory per work-group (heap memory, so the limit is a convention).
const LOCAL_MEM: u64 = 1 << 20;

pub(crate) struct CpuPlatform {
    device: Arc<CpuDevice>,
}

impl CpuPlatform {
    pub(crate) fn new() -> std::result::Result<CpuPlatform, String> {
        let threads = match std::env::var(THREADS_ENV) {
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{THREADS_ENV}={v:?} is not a positive number of threads"))?,
            Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let pool = Arc::new(Pool::new(threads)?);
        tracing::debug!(threads, "CPU worker pool started");
        Ok(CpuPlatform { device: Arc::new(CpuDevice { pool }) })
    }
}

impl PlatformImpl for CpuPlatform {
    fn name(&self) -> String {
        "ur-rs CPU".into()
    }

    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").into()
    }

    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>> {
        vec![self.device.clone()]
    }
}

pub(crate) struct CpuDevice {
    pub(crate) pool: Arc<Pool>,
}

impl DeviceImpl for CpuDevice {
    fn info(&self) -> DeviceInfo {
        let memory = host::total_memory().unwrap_or(8 << 30);
        let max_alloc = memory.min(isize::MAX as u64);
        let fp = fp_configs();
        let atomics = atomics();
        let cache = host::last_level_cache();
        let vectors = VectorWidths::of_register(host::simd_bytes(), false, true);
        DeviceInfo {
            name: format!(
                "{} ({} workers)",
                host::cpu_model().unwrap_or_else(|| "host CPU".into()),
                self.pool.threads()
            ),
            vendor: "ur-rs".into(),
            driver_version: env!("CARGO_PKG_VERSION").into(),
            device_type: DeviceType::Cpu,
            max_compute_units: self.pool.threads() as u32,
            max_work_group_size: MAX_WORK_GROUP,
            max_work_item_sizes: [MAX_WORK_GROUP; 3],
            global_mem_size: memory,
            local_mem_size: LOCAL_MEM,
            max_mem_alloc_size: max_alloc,
            usm: UsmKinds::all(),
            // Every pointer is a host pointer.
            usm_host_addressable: true,
            queue_profiling: true,
            out_of_order_queues: true,
            source_forms: vec![SourceForm::Native],
            command_buffer: CommandBufferCaps {
                support: CommandBufferSupport::Native,
                update: UpdateCapabilities::all(),
                events: true,
                subgraphs: false,
                replay_path: ur_core::ReplayPath::Driver,
            },
            vendor_id: host::cpu_vendor_id().unwrap_or(0),
            device_id: None,
            uuid: None,
            pci_address: None,
            ip_version: None,
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: capability_extensions(&fp, &atomics),
            // Kernels are Rust functions: no IL, and none of UR's binary
            // formats (DPC++'s `native_cpu` images follow another ABI).
            il_version: None,
            binary_targets: Vec::new(),
            integrated_gpu: false,
            host_unified_memory: true,
            max_clock_mhz: host::max_clock_mhz(),
            memory_hardware: MemoryHardware::default(),
            global_mem_cache: GlobalMemCache {
                kind: CacheType::ReadWrite,
                line_size: cache.map(|c| c.line),
                size: cache.map(|c| c.size),
            },
            mem_base_addr_align_bits: DEFAULT_ALIGN as u32 * 8,
            // Arguments and "constant" data are ordinary host memory: no
            // limit but memory itself.
            max_constant_buffer_size: max_alloc,
            max_constant_args: u32::MAX,
            max_parameter_size: max_alloc as usize,
            local_mem_type: LocalMemType::Global,
            error_correction: host::error_correcting_memory(),
            max_work_groups: [usize::MAX; 3],
            max_registers_per_work_group: None,
            fp,
            preferred_vector_widths: vectors,
            native_vector_widths: vectors,
            // A kernel runs a whole work-group in one call, one work-item
            // after another: each work-item is its own sub-group, and none
            // progresses while another of its group runs.
            sub_groups: SubGroups {
                sizes: vec![1],
                max_per_work_group: MAX_WORK_GROUP as u32,
                independent_forward_progress: false,
            },
            atomics,
            profiling_timer_resolution_ns: ur_core::clock::host_clock_resolution_ns(),
            printf_buffer_size: 0,
            native_bfloat16_conversions: false,
        }
    }

    fn free_memory(&self) -> Result<Option<u64>> {
        Ok(host::available_memory())
    }

    fn timestamps(&self) -> Result<Timestamps> {
        // Profiling reads the host clock: device and host time are one clock.
        let now = now_ns();
        Ok(Timestamps { device: now, host: now })
    }

    /// Every CPU device's memory is the process's host memory, which any
    /// of them reads, writes and updates atomically.
    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<ur_core::PeerAccess> {
        ur_core::adapter::downcast::<CpuDevice>(peer as &dyn std::any::Any, "the peer device")?;
        Ok(ur_core::PeerAccess { supported: true, atomics: true })
    }

    /// Nothing to enable: host memory is shared already.
    fn enable_peer_access(&self, _peer: &dyn DeviceImpl) -> Result<()> {
        Ok(())
    }

    fn disable_peer_access(&self, _peer: &dyn DeviceImpl) -> Result<()> {
        Ok(())
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        Ok(Arc::new(CpuContext {
            pool: self.pool.clone(),
            max_work_group_size: MAX_WORK_GROUP,
            buffers: Default::default(),
        }))
    }
}

/// The host's floating point, as Rust code uses it: IEEE 754 `f32` and
/// `f64` with every rounding mode and denormals; no `f16`.
fn fp_configs() -> FpConfigs {
    let mut ieee = FpCapabilities::CORRECTLY_ROUNDED_DIVIDE_SQRT
        | FpCapabilities::ROUND_TO_NEAREST
        | FpCapabilities::ROUND_TO_ZERO
        | FpCapabilities::ROUND_TO_INF
        | FpCapabilities::INF_NAN
        | FpCapabilities::DENORM;
    if host::has_fma() {
        ieee |= FpCapabilities::FMA;
    }
    FpConfigs { half: FpCapabilities::empty(), single: ieee, double: ieee }
}

/// Rust's atomics on coherent host memory: every order at every scope.
fn atomics() -> AtomicCaps {
    AtomicCaps {
        int64: cfg!(target_has_atomic = "64"),
        memory_orders: MemoryOrders::all(),
        memory_scopes: MemoryScopes::all(),
        fence_orders: MemoryOrders::all(),
        fence_scopes: MemoryScopes::all(),
    }
}
