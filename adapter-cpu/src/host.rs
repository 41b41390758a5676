//! What the host tells about itself: processor model and vendor, clock,
//! SIMD width, memory (its caches: cmdbuf-core's `toolbox::host_cache`). Linux files (`/proc/cpuinfo`,
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
    fn this_host() {
        // Whatever the host, the SIMD width is a power of two of at least 8
        // bytes, and memory figures are consistent where present.
        assert!(simd_bytes().is_power_of_two() && simd_bytes() >= 8);
        if let (Some(total), Some(available)) = (total_memory(), available_memory()) {
            assert!(available <= total);
        }
    }
}
