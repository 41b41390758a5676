//! `UR_CPU_THREADS` must be a positive number; otherwise the adapter is
//! absent with a reason naming the variable. Its own test binary, so the
//! variable applies to this process only.

use ur_core::adapter::AdapterFactory;

#[test]
fn invalid_thread_counts_make_the_adapter_absent() {
    for bad in ["0", "zero", "-3", ""] {
        // SAFETY: this binary's only test; no other thread reads the environment.
        unsafe { std::env::set_var(ur_adapter_cpu::THREADS_ENV, bad) };
        let reason = ur_adapter_cpu::CpuAdapterFactory.load().err().expect("an invalid thread count is a load error");
        assert!(reason.contains("UR_CPU_THREADS"), "{bad:?}: {reason}");
    }
    // SAFETY: as above.
    unsafe { std::env::set_var(ur_adapter_cpu::THREADS_ENV, "3") };
    let platforms = ur_adapter_cpu::CpuAdapterFactory.load().unwrap();
    assert_eq!(platforms[0].devices()[0].info().max_compute_units, 3);
}
