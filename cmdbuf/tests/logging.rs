//! `cmdbuf::init_logging`: `UR_LOG` holds a `tracing` filter; one that does not
//! parse is an `InvalidValue` error naming the variable. Its own test
//! binary, so the variable applies to this process only.

#[test]
fn an_invalid_filter_is_an_error_naming_ur_log() {
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var(cmdbuf::LOG_ENV, "cmdbuf_core=loud") };
    let error = cmdbuf::init_logging().unwrap_err();
    assert!(matches!(error, cmdbuf::UrError::InvalidValue(_)), "{error}");
    assert!(error.to_string().contains("UR_LOG=\"cmdbuf_core=loud\""), "{error}");
    // SAFETY: as above.
    unsafe { std::env::set_var(cmdbuf::LOG_ENV, "cmdbuf_core=debug,warn") };
    cmdbuf::init_logging().unwrap();
}
