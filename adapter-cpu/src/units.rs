//! The CPU device's definition: the compute units of the device or of a
//! sub-device, the logical CPU each stands for, and the workers that run
//! them, which the device's contexts share. Its behaviour as a device
//! (`DeviceImpl`: info, partitions, contexts) is in `device.rs`, above the
//! context, which reaches a sub-device's workers through this definition
//! (docs/architecture.md, "The adapters' imports and layers").

use std::path::Path;
use std::sync::Arc;

use cmdbuf_core::adapter::SubDeviceImpl;
use cmdbuf_core::{AffinityDomain, Partition, Result, err};
use parking_lot::Mutex;

use crate::pool::Pool;
use crate::topology;

/// The CPU device, or one of its sub-devices.
pub(crate) struct CpuDevice {
    /// The logical CPU each compute unit (worker) stands for.
    pub(crate) cpus: Vec<usize>,
    /// Whether the workers are kept to `cpus` (sub-devices), or run where
    /// the system puts them (the device).
    pub(crate) pinned: bool,
    /// The workers; a sub-device's start with its first context.
    pub(crate) pool: Mutex<Option<Arc<Pool>>>,
}

impl CpuDevice {
    /// The device's workers, started if they are not yet.
    pub(crate) fn pool(&self) -> Result<Arc<Pool>> {
        let mut pool = self.pool.lock();
        if let Some(pool) = &*pool {
            return Ok(pool.clone());
        }
        let mut cpus = self.cpus.clone();
        cpus.sort_unstable();
        cpus.dedup();
        let started = Pool::pinned(self.cpus.len(), self.pinned.then_some(cpus))
            .map_err(|e| err!(OutOfResources, "CPU sub-device: {e}"))?;
        tracing::debug!(cpus = ?self.cpus, "CPU sub-device's workers started");
        Ok(pool.insert(Arc::new(started)).clone())
    }

    /// A sub-device of the compute units `units` of this device.
    pub(crate) fn sub_device(&self, units: impl IntoIterator<Item = usize>, partition: Partition) -> SubDeviceImpl {
        let cpus = units.into_iter().map(|u| self.cpus[u]).collect();
        SubDeviceImpl { imp: Arc::new(CpuDevice { cpus, pinned: true, pool: Mutex::new(None) }), partition }
    }

    /// The affinity domains of this device's units that the machine
    /// describes, each with its groups of units.
    pub(crate) fn domains(&self) -> Vec<(AffinityDomain, Vec<Vec<usize>>)> {
        AffinityDomain::LEVELS
            .into_iter()
            .filter_map(|d| Some((d, topology::group_units(Path::new(topology::SYS_CPU), &self.cpus, d)?)))
            .collect()
    }
}
