//! What the host tells about itself: processor model and vendor, clock,
//! caches, SIMD width, memory. Linux files (`/proc/cpuinfo`,
//! `/proc/meminfo`, `/sys/devices/system/cpu`) and the instruction-set
//! features the standard library detects; `None` wherever the host does not
//! say.

use std::path::Path;

/// The processor's model name.
pub(crate) fn cpu_model() -> Option<String> {
    cpuinfo_field(&read("/proc/cpuinfo")?, "model name")
}

/// The PCI vendor id of the processor's maker.
pub(crate) fn cpu_vendor_id() -> Option<u32> {
    vendor_id_of(&cpuinfo_field(&read("/proc/cpuinfo")?, "vendor_id")?)
}

fn vendor_id_of(vendor: &str) -> Option<u32> {
    match vendor {
        "GenuineIntel" => Some(0x8086),
        "AuthenticAMD" => Some(0x1022),
        _ => None,
    }
}

/// The highest clock of the first processor in MHz: cpufreq's maximum, else
/// the clock `/proc/cpuinfo` shows now.
pub(crate) fn max_clock_mhz() -> Option<u32> {
    if let Some(khz) =
        read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").and_then(|s| s.trim().parse::<u64>().ok())
    {
        return u32::try_from(khz / 1000).ok();
    }
    let mhz: f64 = cpuinfo_field(&read("/proc/cpuinfo")?, "cpu MHz")?.parse().ok()?;
    Some(mhz.round() as u32)
}

/// Total memory in bytes.
pub(crate) fn total_memory() -> Option<u64> {
    meminfo_kib(&read("/proc/meminfo")?, "MemTotal").map(|kib| kib * 1024)
}

/// Memory available for new allocations without swapping, in bytes.
pub(crate) fn available_memory() -> Option<u64> {
    meminfo_kib(&read("/proc/meminfo")?, "MemAvailable").map(|kib| kib * 1024)
}

/// Whether an error-correcting memory controller is registered (EDAC).
pub(crate) fn error_correcting_memory() -> bool {
    Path::new("/sys/devices/system/edac/mc/mc0").exists()
}

/// The last-level cache of the first processor: size and line size in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cache {
    pub(crate) size: u64,
    pub(crate) line: u32,
}

/// The data or unified cache of the highest level the first processor lists.
pub(crate) fn last_level_cache() -> Option<Cache> {
    let dir = Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, Cache)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("index")) {
            continue;
        }
        let field = |name: &str| read(path.join(name)).map(|s| s.trim().to_string());
        if field("type").as_deref() == Some("Instruction") {
            continue;
        }
        let (Some(level), Some(size), Some(line)) = (
            field("level").and_then(|l| l.parse::<u32>().ok()),
            field("size").and_then(|s| parse_cache_size(&s)),
            field("coherency_line_size").and_then(|l| l.parse::<u32>().ok()),
        ) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, Cache { size, line }));
        }
    }
    best.map(|(_, cache)| cache)
}

/// `32768K`, `1M`, `512` (bytes) as sysfs writes cache sizes.
fn parse_cache_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// The width in bytes of the widest SIMD registers the processor has.
pub(crate) fn simd_bytes() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            64
        } else if std::arch::is_x86_feature_detected!("avx") {
            32
        } else {
            16
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        16
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        8
    }
}

/// Whether the processor has fused multiply-add instructions.
pub(crate) fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(target_arch = "aarch64")]
    {
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The value of the first `name : value` line.
fn cpuinfo_field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_string())
    })
}

fn meminfo_kib(info: &str, name: &str) -> Option<u64> {
    info.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key == name).then(|| value.split_whitespace().next()?.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_cpuinfo_and_meminfo() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\ncpu MHz\t\t: 2449.998\n";
        assert_eq!(cpuinfo_field(cpuinfo, "model name").as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpuinfo_field(cpuinfo, "cpu MHz").as_deref(), Some("2449.998"));
        assert_eq!(cpuinfo_field(cpuinfo, "flags"), None);
        assert_eq!(vendor_id_of("AuthenticAMD"), Some(0x1022));
        assert_eq!(vendor_id_of("GenuineIntel"), Some(0x8086));
        assert_eq!(vendor_id_of("HygonGenuine"), None);
        let meminfo = "MemTotal:       16318412 kB\nMemFree:         1000 kB\nMemAvailable:   12000000 kB\n";
        assert_eq!(meminfo_kib(meminfo, "MemTotal"), Some(16318412));
        assert_eq!(meminfo_kib(meminfo, "MemAvailable"), Some(12000000));
        assert_eq!(meminfo_kib(meminfo, "Mem"), None);
    }

    #[test]
    fn cache_sizes_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("12Q"), None);
        assert_eq!(parse_cache_size(""), None);
    }

    #[test]
    fn this_host() {
        // Whatever the host, the SIMD width is a power of two of at least 8
        // bytes, and memory figures are consistent where present.
        assert!(simd_bytes().is_power_of_two() && simd_bytes() >= 8);
        if let (Some(total), Some(available)) = (total_memory(), available_memory()) {
            assert!(available <= total);
        }
        if let Some(cache) = last_level_cache() {
            assert!(cache.size > 0 && cache.line.is_power_of_two());
        }
    }
}
