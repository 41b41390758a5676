//! The CPU platform and its one device.

use std::sync::Arc;

use ur_core::adapter::{ContextImpl, DeviceImpl, PlatformImpl};
use ur_core::{
    CommandBufferCaps, CommandBufferSupport, DeviceInfo, DeviceType, Result, SourceForm, UpdateCapabilities, UsmKinds,
};

use crate::context::CpuContext;
use crate::pool::Pool;

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
        let memory = total_memory().unwrap_or(8 << 30);
        DeviceInfo {
            name: format!("{} ({} workers)", cpu_model().unwrap_or_else(|| "host CPU".into()), self.pool.threads()),
            vendor: "ur-rs".into(),
            driver_version: env!("CARGO_PKG_VERSION").into(),
            device_type: DeviceType::Cpu,
            max_compute_units: self.pool.threads() as u32,
            max_work_group_size: MAX_WORK_GROUP,
            max_work_item_sizes: [MAX_WORK_GROUP; 3],
            global_mem_size: memory,
            local_mem_size: LOCAL_MEM,
            max_mem_alloc_size: memory,
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
            },
        }
    }

    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>> {
        Ok(Arc::new(CpuContext { pool: self.pool.clone(), max_work_group_size: MAX_WORK_GROUP }))
    }
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn total_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
