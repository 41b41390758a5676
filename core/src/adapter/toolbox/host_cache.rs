//! The host processor's last-level data cache, as Linux describes it in
//! `/sys/devices/system/cpu/cpu0/cache`: for the devices whose global
//! memory is host memory cached by the host's caches (the CPU adapter, and
//! CPU implementations of other APIs such as lavapipe). `None` wherever
//! the host does not say.

use std::path::Path;

/// A cache: size and line size in bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostCache {
    /// Size in bytes.
    pub size: u64,
    /// Line size in bytes (`coherency_line_size`).
    pub line: u32,
}

/// The data or unified cache of the highest level the first processor lists.
pub fn last_level_cache() -> Option<HostCache> {
    let dir = Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, HostCache)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("index")) {
            continue;
        }
        let field = |name: &str| std::fs::read_to_string(path.join(name)).ok().map(|s| s.trim().to_string());
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
            best = Some((level, HostCache { size, line }));
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

#[cfg(test)]
mod tests {
    use super::*;

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
        if let Some(cache) = last_level_cache() {
            assert!(cache.size > 0 && cache.line.is_power_of_two());
        }
    }
}
