//! Without an OpenCL driver the factory reports the adapter absent, with the
//! reason, instead of panicking. Its own test binary: the ICD loader reads
//! its environment once per process, so the environment must point at no
//! driver before anything else loads it.

use cmdbuf_core::Backend;
use cmdbuf_core::adapter::AdapterFactory;
use cmdbuf_opencl::OpenClAdapterFactory;

#[test]
fn no_driver_is_a_reason() {
    // An empty vendor directory: ocl-icd (OCL_ICD_VENDORS) and the Khronos
    // loader (OCL_ICD_FILENAMES naming nothing that exists) find no driver.
    let empty = std::env::temp_dir().join(format!("ur-opencl-no-icd-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("a temporary directory");
    // SAFETY: the only thread of this test binary that touches the
    // environment, before any OpenCL call.
    unsafe {
        std::env::set_var("OCL_ICD_VENDORS", &empty);
        std::env::set_var("OCL_ICD_FILENAMES", empty.join("none.so"));
    }
    let factory = OpenClAdapterFactory;
    assert_eq!(factory.backend(), Backend::OpenCl);
    let reason = match factory.load() {
        Ok(platforms) => panic!("{} platforms without a driver", platforms.len()),
        Err(reason) => reason,
    };
    // With a loader: no platform; on a machine without one: no library.
    assert!(
        reason.contains("found no platform")
            || reason.contains("no OpenCL library")
            || reason.contains("clGetPlatformIDs"),
        "{reason}"
    );
    // Asking again gives the same answer.
    assert_eq!(factory.load().err(), Some(reason));
    let _ = std::fs::remove_dir(&empty);
}
