//! The machine's topology, for partitioning the CPU device by affinity
//! domain: which logical CPUs the process may use (`Cpus_allowed_list` of
//! `/proc/self/status`), which NUMA node each belongs to
//! (`/sys/devices/system/cpu/cpuN/nodeM`) and which CPUs share each of its
//! data caches (`/sys/devices/system/cpu/cpuN/cache/indexK`: `level`, `type`,
//! `shared_cpu_list`). Linux only says; elsewhere nothing is known and the
//! device offers no affinity domain.

use std::path::Path;

use cmdbuf_core::AffinityDomain;

/// Where Linux describes the processors.
pub(crate) const SYS_CPU: &str = "/sys/devices/system/cpu";

/// The logical CPUs this process may run on, ascending; `0..n` for the
/// parallelism the standard library sees where the kernel does not say.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).and_then(parse_cpu_list))
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect())
}

/// A CPU list as the kernel writes it (`0-3,8,10-11`), ascending.
pub(crate) fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// The instance of `domain` that logical CPU `cpu` belongs to, as a key that
/// is equal for CPUs of one instance: the NUMA node's number, or the CPUs
/// the cache of that level is shared by. `None` where `sys_cpu` (the
/// directory [`SYS_CPU`] names) does not describe it.
pub(crate) fn domain_instance(sys_cpu: &Path, cpu: usize, domain: AffinityDomain) -> Option<String> {
    let dir = sys_cpu.join(format!("cpu{cpu}"));
    if domain == AffinityDomain::Numa {
        return std::fs::read_dir(&dir).ok()?.flatten().find_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let node = name.strip_prefix("node")?;
            node.parse::<u32>().is_ok().then(|| node.to_string())
        });
    }
    let level = domain.cache_level()?;
    std::fs::read_dir(dir.join("cache")).ok()?.flatten().find_map(|entry| {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("index") {
            return None;
        }
        let field = |name: &str| std::fs::read_to_string(path.join(name)).ok().map(|s| s.trim().to_string());
        // Data or unified caches: an instruction cache holds no data to share.
        if field("level")?.parse::<u32>().ok()? != level || field("type")? == "Instruction" {
            return None;
        }
        field("shared_cpu_list")
    })
}

/// Compute units (indices into `cpus`, the CPU of each unit) grouped by the
/// instance of `domain` their CPUs belong to, groups in the order of their
/// first unit; `None` where the topology does not describe the domain for
/// every unit.
pub(crate) fn group_units(sys_cpu: &Path, cpus: &[usize], domain: AffinityDomain) -> Option<Vec<Vec<usize>>> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (unit, cpu) in cpus.iter().enumerate() {
        let key = domain_instance(sys_cpu, *cpu, domain)?;
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, units)) => units.push(unit),
            None => groups.push((key, vec![unit])),
        }
    }
    (!groups.is_empty()).then(|| groups.into_iter().map(|(_, units)| units).collect())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn cpu_lists_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
    }

    /// A made-up sysfs: 4 CPUs, two NUMA nodes, an L3 per node, an L2 per
    /// pair of hyper-threads (0,2 and 1,3), an L1 per CPU.
    fn fake_sys() -> PathBuf {
        let root = std::env::temp_dir().join(format!("ur-cpu-topology-{}", std::process::id()));
        let l2 = ["0,2", "1,3", "0,2", "1,3"];
        for (cpu, l2) in l2.iter().enumerate() {
            let dir = root.join(format!("cpu{cpu}"));
            std::fs::create_dir_all(dir.join(format!("node{}", cpu / 2))).unwrap();
            let caches = [
                (1, "Data", cpu.to_string()),
                (1, "Instruction", "0-3".to_string()),
                (2, "Unified", l2.to_string()),
                (3, "Unified", if cpu < 2 { "0-1" } else { "2-3" }.to_string()),
            ];
            for (index, (level, kind, shared)) in caches.iter().enumerate() {
                let dir = dir.join(format!("cache/index{index}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("level"), format!("{level}\n")).unwrap();
                std::fs::write(dir.join("type"), format!("{kind}\n")).unwrap();
                std::fs::write(dir.join("shared_cpu_list"), format!("{shared}\n")).unwrap();
            }
        }
        root
    }

    #[test]
    fn units_group_by_the_domain_their_cpus_share() {
        let sys = fake_sys();
        let cpus = [0, 1, 2, 3];
        assert_eq!(group_units(&sys, &cpus, AffinityDomain::Numa), Some(vec![vec![0, 1], vec![2, 3]]));
        assert_eq!(group_units(&sys, &cpus, AffinityDomain::L3Cache), Some(vec![vec![0, 1], vec![2, 3]]));
        assert_eq!(group_units(&sys, &cpus, AffinityDomain::L2Cache), Some(vec![vec![0, 2], vec![1, 3]]));
        // The instruction cache shared by all is not the L1 data cache.
        assert_eq!(group_units(&sys, &cpus, AffinityDomain::L1Cache).map(|g| g.len()), Some(4));
        assert_eq!(group_units(&sys, &cpus, AffinityDomain::L4Cache), None);
        // More units than CPUs: units share the CPU they run on.
        assert_eq!(group_units(&sys, &[0, 1, 0, 1], AffinityDomain::Numa), Some(vec![vec![0, 1, 2, 3]]));
        assert_eq!(group_units(&sys, &[7], AffinityDomain::Numa), None);
        std::fs::remove_dir_all(sys).unwrap();
    }
}
