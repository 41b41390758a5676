//! Both ways the adapter reads the device clock agree on every Vulkan
//! device (`cmdbuf_vulkan::check_clock_paths`): a timestamp written by a
//! submission falls between two global timestamps (calibrated where the
//! device calibrates its clock), whose host times lie within the host clock
//! around them. Needs a Vulkan device (CI has lavapipe); without one the
//! test is listed ignored with the reason, and fails when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_DEVICES` names `vulkan`.

mod common;

use cmdbuf_core::Device;

fn main() {
    common::run(&[("calibrated_and_submitted_timestamps_agree", calibrated_and_submitted_timestamps_agree)]);
}

fn calibrated_and_submitted_timestamps_agree(_: &Device) {
    let checked = cmdbuf_vulkan::check_clock_paths().unwrap_or_else(|e| panic!("{e}"));
    assert!(checked > 0, "no device was checked");
}
