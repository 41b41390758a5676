//! The `main` of tests that run once per OpenCL device: without a device,
//! the test is listed ignored with the reason, and fails when run anyway or
//! when `UR_RS_REQUIRE_DEVICES` names `opencl`.

use cmdbuf_core::{AdapterEntry, Device, DeviceSelector, Loader};
use cmdbuf_opencl::OpenClAdapterFactory;
use libtest_mimic::{Arguments, Failed, Trial};

/// A test's body on one device: `Err` with what went wrong.
pub type Body = fn(&Device) -> Result<(), String>;

/// Runs each of `tests` (a name and a body) on every OpenCL device, named
/// `test::device`, and exits with the result.
pub fn run(file: &str, tests: &[(&'static str, Body)]) -> ! {
    let args = Arguments::from_args();
    let loader = Loader::load(&[AdapterEntry::Compiled(&OpenClAdapterFactory)], DeviceSelector::all());
    let mut trials = Vec::new();
    if loader.devices().is_empty() {
        let absent: Vec<&str> = loader.absent().iter().map(|a| a.reason.as_str()).collect();
        let why = format!("no OpenCL device ({})", absent.join("; "));
        let required = std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == "opencl"));
        println!("ignored {file}: {why}");
        trials.push(
            Trial::test(file.to_string(), move || Err(Failed::from(format!("cannot run here: {why}"))))
                .with_ignored_flag(!required),
        );
    }
    for device in loader.devices() {
        for &(name, body) in tests {
            let device = device.clone();
            let trial_name = format!("{name}::{}", device.info().name);
            trials.push(Trial::test(trial_name, move || body(&device).map_err(Failed::from)));
        }
    }
    libtest_mimic::run(&args, trials).exit()
}
