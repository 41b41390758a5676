//! Device timestamps with the host time of the same moment
//! (`urDeviceGetGlobalTimestamps`).
//!
//! The device time is the clock of profiling timestamps: ticks of the
//! device's timestamp counter, masked to its valid bits, times
//! `timestampPeriod`. With `VK_EXT_calibrated_timestamps` and the
//! `CLOCK_MONOTONIC` time domain (the host clock of cmdbuf-core), one
//! `vkGetCalibratedTimestampsEXT` call samples both clocks together.
//! Without it, the device writes a timestamp in a submission of its own and
//! the host time is the midpoint of host-clock readings around the
//! submission and its wait, the narrowest of three
//! ([`cmdbuf_core::clock::bracket_narrowest`]), which is as close as the wait's
//! latency.

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::clock::bracket_narrowest;

use crate::conv::VkResultExt;
use crate::device::HOST_DOMAIN;
use crate::shared::DeviceShared;

/// A device timestamp and the host time of it.
pub(crate) fn timestamps(rt: &DeviceShared) -> Result<Timestamps> {
    match (&rt.gpu.calibrated, HOST_DOMAIN) {
        (Some(calibrated), Some(host)) => calibrated_pair(rt, calibrated, host),
        _ => submitted_timestamp(rt),
    }
}

fn device_ns(rt: &DeviceShared, ticks: u64) -> u64 {
    ((ticks & rt.gpu.timestamp_mask) as f64 * rt.gpu.timestamp_period) as u64
}

fn calibrated_pair(
    rt: &DeviceShared,
    calibrated: &ash::ext::calibrated_timestamps::Device,
    host: vk::TimeDomainEXT,
) -> Result<Timestamps> {
    let infos = [
        vk::CalibratedTimestampInfoEXT::default().time_domain(vk::TimeDomainEXT::DEVICE),
        vk::CalibratedTimestampInfoEXT::default().time_domain(host),
    ];
    // SAFETY: the extension is enabled on the device; both domains are
    // calibrateable (checked at discovery).
    let (values, _max_deviation) =
        unsafe { calibrated.get_calibrated_timestamps(&infos) }.vk("vkGetCalibratedTimestampsEXT")?;
    Ok(Timestamps { device: device_ns(rt, values[0]), host: values[1] })
}

/// The device-clock time now, for the call time of a timestamp recording:
/// one calibrated sample where the device calibrates against the host clock
/// (`VK_EXT_calibrated_timestamps`), else the host clock moved by the offset
/// between the clocks, measured once per device with a submitted timestamp
/// (exact to the latency of that measurement and the clocks' drift since;
/// [`ProfilingInfo::recording`](cmdbuf_core::ProfilingInfo::recording) bounds
/// the estimate by the recorded time).
pub(crate) fn device_now(rt: &DeviceShared) -> Result<u64> {
    if let (Some(calibrated), Some(host)) = (&rt.gpu.calibrated, HOST_DOMAIN) {
        return Ok(calibrated_pair(rt, calibrated, host)?.device);
    }
    let pair = match rt.clock_pair.get() {
        Some(pair) => *pair,
        None => {
            let measured = submitted_timestamp(rt)?;
            *rt.clock_pair.get_or_init(|| measured)
        }
    };
    let now = i128::from(cmdbuf_core::host_clock_ns()) - i128::from(pair.host) + i128::from(pair.device);
    Ok(now.clamp(0, i128::from(u64::MAX)) as u64)
}

/// The device time of a timestamp written by a submission of its own.
pub(crate) fn submitted_timestamp(rt: &DeviceShared) -> Result<Timestamps> {
    if rt.gpu.timestamp_mask == 0 {
        return Err(err!(UnsupportedFeature, "the device's queue family has no timestamps"));
    }
    let span = rt.clock_queries.span()?;
    let (device, host) = bracket_narrowest(3, || {
        rt.run_now(|cb| {
            span.begin(cb);
            span.end(cb);
        })?;
        let times = span.read().ok_or_else(|| err!(AdapterSpecific, "the timestamp query has no result"))?;
        Ok::<u64, cmdbuf_core::UrError>(times.end)
    })?;
    Ok(Timestamps { device, host })
}
