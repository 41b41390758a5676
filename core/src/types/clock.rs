//! The host clock, and device/host timestamp pairs
//! (`urDeviceGetGlobalTimestamps`).
//!
//! Every adapter reports host time on one clock, [`host_clock_ns`]: the
//! host's monotonic clock (`CLOCK_MONOTONIC` on Unix, what C++'s
//! `steady_clock` reads), in nanoseconds. Device time is the clock of the
//! device's profiling timestamps ([`ProfilingInfo`](crate::ProfilingInfo)),
//! so that a caller can place a command's profiled start and end against a
//! device time it read itself, as SYCL does for `command_submit`.

/// A device timestamp and the host timestamp taken with it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Timestamps {
    /// Nanoseconds on the device's profiling clock.
    pub device: u64,
    /// Nanoseconds on [`host_clock_ns`]'s clock, at the same moment as far
    /// as the adapter can tell (see each adapter's documentation for how
    /// close that is).
    pub host: u64,
}

/// Nanoseconds of the host's monotonic clock: never zero, never decreasing.
pub fn host_clock_ns() -> u64 {
    imp::now_ns().max(1)
}

/// Runs `read` (which takes a device time) between two readings of the host
/// clock, and returns its result with their midpoint: the host time of the
/// device reading is then known to within half the call's duration. For
/// adapters whose driver has no calibrated pair.
pub fn bracket<T, E>(read: impl FnOnce() -> Result<T, E>) -> Result<(T, u64), E> {
    let before = host_clock_ns();
    let value = read()?;
    let after = host_clock_ns();
    Ok((value, before + (after - before) / 2))
}

/// [`bracket`] `tries` times (at least once), keeping the result whose host
/// readings were closest together: a call during which the thread was
/// preempted, or the driver waited on a lock, pairs its device time with a
/// host time up to half that delay away.
pub fn bracket_narrowest<T, E>(tries: usize, mut read: impl FnMut() -> Result<T, E>) -> Result<(T, u64), E> {
    let mut best: Option<(u64, T, u64)> = None;
    for _ in 0..tries.max(1) {
        let before = host_clock_ns();
        let value = read()?;
        let after = host_clock_ns();
        let width = after - before;
        if best.as_ref().is_none_or(|(w, _, _)| width < *w) {
            best = Some((width, value, before + width / 2));
        }
    }
    let (_, value, host) = best.expect("at least one try");
    Ok((value, host))
}

/// The resolution of [`host_clock_ns`] in nanoseconds (at least 1).
pub fn host_clock_resolution_ns() -> u64 {
    imp::resolution_ns().max(1)
}

#[cfg(unix)]
mod imp {
    fn read(f: unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int) -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists
        // on every Unix the crate builds for, so the call cannot fail.
        let rc = unsafe { f(libc::CLOCK_MONOTONIC, &mut ts) };
        debug_assert_eq!(rc, 0);
        (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
    }

    pub(super) fn now_ns() -> u64 {
        read(libc::clock_gettime)
    }

    pub(super) fn resolution_ns() -> u64 {
        read(libc::clock_getres)
    }
}

#[cfg(not(unix))]
mod imp {
    use std::sync::OnceLock;
    use std::time::Instant;

    // Without a raw monotonic clock, time since the first reading.
    fn epoch() -> Instant {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }

    pub(super) fn now_ns() -> u64 {
        epoch().elapsed().as_nanos() as u64 + 1
    }

    pub(super) fn resolution_ns() -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_clock_advances() {
        let a = host_clock_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = host_clock_ns();
        assert!(a > 0);
        assert!(b >= a + 1_000_000, "{a} -> {b}");
        assert!(host_clock_resolution_ns() >= 1);
    }

    #[test]
    fn a_bracket_pairs_the_device_reading_with_the_midpoint() {
        let before = host_clock_ns();
        let (value, host) = bracket::<_, ()>(|| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            Ok(42)
        })
        .unwrap();
        let after = host_clock_ns();
        assert_eq!(value, 42);
        // Strictly inside the call: it took at least 2 ms, so the midpoint
        // is at least 1 ms from either end.
        assert!(host >= before + 1_000_000 && host + 1_000_000 <= after, "{before} {host} {after}");
        assert_eq!(bracket::<u64, &str>(|| Err("no device")), Err("no device"));
    }

    #[test]
    fn the_narrowest_bracket_is_kept() {
        // The second reading is slow: its pair is not the one kept.
        let mut calls = 0;
        let (value, _) = bracket_narrowest::<_, ()>(3, || {
            calls += 1;
            if calls == 2 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Ok(calls)
        })
        .unwrap();
        assert_eq!(calls, 3);
        assert_ne!(value, 2);
        assert_eq!(bracket_narrowest::<u64, &str>(0, || Err("no device")), Err("no device"));
    }
}
