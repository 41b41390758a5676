//! `UR_OPENCL_REPLAY`, `UR_OPENCL_MUTABLE_DISPATCH`,
//! `UR_OPENCL_OUT_OF_ORDER_QUEUES` and `UR_OPENCL_REPLAY_THREAD` take their listed
//! values only: anything else is an `InvalidValue` error naming the variable
//! and the values, before any driver is opened. Its own test binary, so the
//! variables apply to this process only.

use cmdbuf_core::UrError;
use cmdbuf_core::adapter::AdapterFactory;

fn set(name: &str, value: &str) {
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var(name, value) };
}

#[test]
fn opencl_settings_outside_their_values_are_errors() {
    let factory = cmdbuf_opencl::OpenClAdapterFactory;
    for (name, good, bad, expected) in [
        (cmdbuf_opencl::REPLAY_ENV, ["driver", "planned", ""], "drivr", "`driver` or `planned`"),
        (cmdbuf_opencl::MUTABLE_DISPATCH_ENV, ["off", " off ", ""], "0", "`off`"),
        (cmdbuf_opencl::OUT_OF_ORDER_ENV, ["on", "off", ""], "yes", "`on` or `off`"),
        (cmdbuf_opencl::REPLAY_THREAD_ENV, ["on", "always", ""], "0", "`on` or `off` or `always`"),
    ] {
        for value in good {
            set(name, value);
            factory.check_env().unwrap();
        }
        set(name, bad);
        let error = factory.check_env().unwrap_err();
        assert!(matches!(error, UrError::InvalidValue(_)), "{error}");
        let text = error.to_string();
        assert!(text.contains(name) && text.contains(expected), "{text}");
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
    }
}
