//! The CPU platform, its one device and the device's sub-devices.
//!
//! A compute unit is a worker of the pool. The device's workers stand for
//! the logical CPUs the process may use (worker `i` for the `i`-th, round
//! robin when there are more workers than CPUs), so that a partition can
//! split them by the machine's topology ([`crate::topology`]). A
//! sub-device has a pool of its own, with one worker per compute unit,
//! every worker kept to the CPUs of the sub-device's units; it is started
//! by the first context made on the sub-device, so that partitions that are
//! only inspected cost no threads.

use std::sync::Arc;

use cmdbuf_core::adapter::SubDeviceImpl;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{
    AffinityDomain, AffinityDomains, AtomicCaps, CacheType, CommandBufferCaps, CommandBufferSupport, DeviceInfo,
    DeviceType, FpCapabilities, FpConfigs, GlobalMemCache, LocalMemType, MemoryHardware, MemoryOrders, MemoryScopes,
    Partition, PartitionKind, PartitionSupport, SubGroups, UpdateCapabilities, UsmKinds, VectorWidths,
    capability_extensions,
};
use parking_lot::Mutex;

use crate::context::CpuContext;
use crate::host;
use crate::memory::DEFAULT_ALIGN;
use crate::pool::{Pool, now_ns};
use crate::topology;
use crate::units::CpuDevice;

/// The variable that sets the number of worker threads.
pub const THREADS_ENV: &str = "UR_CPU_THREADS";

/// Largest work-group, and local size per dimension.
const MAX_WORK_GROUP: usize = 4096;
/// Local memory per work-group (heap memory, so the limit is a convention).
const LOCAL_MEM: u64 = 1 << 20;

pub(crate) struct CpuPlatform {
    device: Arc<CpuDevice>,
}

/// Most workers per logical CPU that `UR_CPU_THREADS` may ask for.
const THREADS_PER_CPU: usize = 4;
/// The most workers `UR_CPU_THREADS` may ask for on a machine with few CPUs.
const THREADS_FLOOR: usize = 64;

/// The largest worker count `UR_CPU_THREADS` accepts on this machine:
/// [`THREADS_PER_CPU`] per logical CPU, at least [`THREADS_FLOOR`]. Beyond it
/// the workers only take turns on the same CPUs, and a count in the
/// thousands exhausts the process's thread and memory limits (the system
/// then refuses threads, or the process aborts while starting them).
pub fn max_threads() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus * THREADS_PER_CPU).max(THREADS_FLOOR)
}

/// The worker count `UR_CPU_THREADS` asks for (default: the available
/// parallelism). A value that is not a whole number from 1 to
/// [`max_threads`] is `InvalidValue` naming the variable and the range.
pub fn threads_from_env() -> Result<usize> {
    let Some(value) = std::env::var_os(THREADS_ENV) else {
        return Ok(std::thread::available_parallelism().map_or(1, |n| n.get()));
    };
    let max = max_threads();
    let text = value.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(err!(
            InvalidValue,
            "{THREADS_ENV}={text:?}: the CPU adapter's worker count must be a whole number from 1 to {max} \
             on this machine ({THREADS_PER_CPU} per logical CPU, at least {THREADS_FLOOR}); unset, it is the \
             available parallelism"
        )),
    }
}

impl CpuPlatform {
    pub(crate) fn new() -> std::result::Result<CpuPlatform, String> {
        let threads = threads_from_env().map_err(|e| e.to_string())?;
        let pool = Arc::new(Pool::new(threads).map_err(|e| format!("{THREADS_ENV}={threads}: {e}"))?);
        tracing::debug!(threads, "CPU worker pool started");
        let allowed = topology::allowed_cpus();
        let cpus = (0..threads).map(|i| allowed[i % allowed.len()]).collect();
        Ok(CpuPlatform { device: Arc::new(CpuDevice { cpus, pinned: false, pool: Mutex::new(Some(pool)) }) })
    }
}

impl PlatformImpl for CpuPlatform {
    fn name(&self) -> String {
        "cmdbuf CPU".into()
    }

    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").into()
    }

    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>> {
        vec![self.device.clone()]
    }
}

impl DeviceImpl for CpuDevice {
    fn info(&self) -> DeviceInfo {
        let memory = host::total_memory().unwrap_or(8 << 30);
        let max_alloc = memory.min(isize::MAX as u64);
        let fp = fp_configs();
        let atomics = atomics();
        let cache = cmdbuf_core::adapter::toolbox::host_cache::last_level_cache();
        let vectors = VectorWidths::of_register(host::simd_bytes(), false, true);
        DeviceInfo {
            name: format!("{} ({} workers)", host::cpu_model().unwrap_or_else(|| "host CPU".into()), self.cpus.len()),
            vendor: "cmdbuf".into(),
            driver_version: env!("CARGO_PKG_VERSION").into(),
            device_type: DeviceType::Cpu,
            max_compute_units: self.cpus.len() as u32,
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
            // Kernel tables and native kernels are whole programs.
            linker_available: false,
            command_buffer: CommandBufferCaps {
                support: CommandBufferSupport::Native,
                update: UpdateCapabilities::all(),
                events: true,
                subgraphs: false,
                replay_path: cmdbuf_core::ReplayPath::Driver,
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
            profiling_timer_resolution_ns: cmdbuf_core::clock::host_clock_resolution_ns(),
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
    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<cmdbuf_core::PeerAccess> {
        cmdbuf_core::adapter::downcast::<CpuDevice>(peer as &dyn std::any::Any, "the peer device")?;
        Ok(cmdbuf_core::PeerAccess { supported: true, atomics: true })
    }

    /// Nothing to enable: host memory is shared already.
    fn enable_peer_access(&self, _peer: &dyn DeviceImpl) -> Result<()> {
        Ok(())
    }

    fn disable_peer_access(&self, _peer: &dyn DeviceImpl) -> Result<()> {
        Ok(())
    }

    /// Equally and by counts, into at most one sub-device per unit; by the
    /// affinity domains the machine describes for every unit's CPU (see
    /// [`crate::topology`]), and by the next one that splits the device
    /// where one does.
    fn partition_support(&self) -> PartitionSupport {
        let domains = self.domains();
        let mut flags = domains.iter().fold(AffinityDomains::empty(), |f, (d, _)| f | d.flag());
        if domains.iter().any(|(_, groups)| groups.len() > 1) {
            flags |= AffinityDomains::NEXT_PARTITIONABLE;
        }
        let mut kinds = vec![PartitionKind::Equally, PartitionKind::ByCounts];
        if !flags.is_empty() {
            kinds.push(PartitionKind::ByAffinityDomain);
        }
        PartitionSupport { kinds, affinity_domains: flags, max_sub_devices: self.cpus.len() as u32 }
    }

    /// Units are handed out in order: counts take consecutive runs of units,
    /// an affinity domain takes the units of each of its instances.
    unsafe fn partition(&self, partition: &Partition) -> Result<Vec<SubDeviceImpl>> {
        let units = self.cpus.len() as u32;
        if let Some(counts) = partition.counts(units, units) {
            let mut start = 0;
            return Ok(counts
                .into_iter()
                .map(|n| {
                    let range = start..start + n as usize;
                    start = range.end;
                    self.sub_device(range, partition.clone())
                })
                .collect());
        }
        let Partition::ByAffinityDomain(domain) = partition else {
            return Err(err!(DevicePartitionFailed, "{partition}: not a partition of the CPU device"));
        };
        let mut domains = self.domains();
        let (domain, groups) = match domain {
            AffinityDomain::NextPartitionable => domains
                .into_iter()
                .find(|(_, groups)| groups.len() > 1)
                .ok_or_else(|| err!(DevicePartitionFailed, "no affinity domain splits this CPU device's units"))?,
            wanted => {
                let at = domains.iter().position(|(d, _)| d == wanted).ok_or_else(|| {
                    err!(DevicePartitionFailed, "the machine does not describe {wanted:?} for every unit's CPU")
                })?;
                domains.swap_remove(at)
            }
        };
        Ok(groups.into_iter().map(|g| self.sub_device(g, Partition::ByAffinityDomain(domain))).collect())
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        Ok(Arc::new(CpuContext {
            pool: self.pool()?,
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
