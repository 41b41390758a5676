//! `UR_CPU_THREADS` must be a whole number from 1 to the machine's limit;
//! otherwise loading through the environment is an `InvalidValue` error
//! naming the variable and the range, and a direct load reports the adapter
//! absent with that reason. Its own test binary, so the variable applies to
//! this process only.

use cmdbuf_core::adapter::AdapterFactory;
use cmdbuf_core::{AdapterEntry, Loader, UrError};

fn set(value: &str) {
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var(cmdbuf_cpu::THREADS_ENV, value) };
}

#[test]
fn invalid_thread_counts_are_errors_naming_the_variable_and_range() {
    let max = cmdbuf_cpu::max_threads();
    let too_many = (max + 1).to_string();
    for bad in ["0", "zero", "abc", "-3", "", "1.5", "100000", too_many.as_str()] {
        set(bad);
        let error = cmdbuf_cpu::CpuAdapterFactory.check_env().expect_err(bad);
        assert!(matches!(error, UrError::InvalidValue(_)), "{bad:?}: {error}");
        let text = error.to_string();
        assert!(text.contains("UR_CPU_THREADS") && text.contains(&format!("from 1 to {max}")), "{bad:?}: {text}");

        let loaded = Loader::from_env(&[AdapterEntry::Compiled(&cmdbuf_cpu::CpuAdapterFactory)]);
        assert_eq!(loaded.err(), Some(error.clone()), "{bad:?}: loading through the environment fails");

        let reason = cmdbuf_cpu::CpuAdapterFactory.load().err().expect("an invalid thread count is a load error");
        assert!(reason.contains("UR_CPU_THREADS"), "{bad:?}: {reason}");
    }
    for good in ["3", " 2 ", max.to_string().as_str()] {
        set(good);
        cmdbuf_cpu::CpuAdapterFactory.check_env().unwrap();
    }
    set("3");
    let platforms = cmdbuf_cpu::CpuAdapterFactory.load().unwrap();
    assert_eq!(platforms[0].devices()[0].info().max_compute_units, 3);
}
