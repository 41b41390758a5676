//! The device clock of every OpenCL device (`cmdbuf_opencl::check_clock_paths`):
//! timestamps advance on the device and host clocks, and a marker's
//! timestamp (the fallback where `clGetDeviceAndHostTimer` fails) falls
//! between two readings. Needs an OpenCL device (CI has PoCL); without one
//! the test is listed ignored with the reason, and fails when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_DEVICES` names `opencl`.

use cmdbuf_core::{AdapterEntry, DeviceSelector, Loader};
use cmdbuf_opencl::OpenClAdapterFactory;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let name = "device_timestamps_advance_and_markers_agree";
    let loader = Loader::load(&[AdapterEntry::Compiled(&OpenClAdapterFactory)], DeviceSelector::all());
    let required = std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == "opencl"));
    let trial = if loader.devices().is_empty() {
        let absent: Vec<&str> = loader.absent().iter().map(|a| a.reason.as_str()).collect();
        let why = format!("no OpenCL device ({})", absent.join("; "));
        println!("ignored {name}: {why}");
        Trial::test(name, move || Err(Failed::from(format!("cannot run here: {why}")))).with_ignored_flag(!required)
    } else {
        Trial::test(name, || match cmdbuf_opencl::check_clock_paths() {
            Ok(0) => Err("no device was checked".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(e.into()),
        })
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}
