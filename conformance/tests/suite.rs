//! `cargo test -p cmdbuf-conformance`: one libtest trial per case and device,
//! named like `[cpu:0] update::kernel_args`. Cases whose requirements the
//! device does not meet are listed as ignored (the `cmdbuf-conformance`
//! binary prints the missing capability). A case that ran nothing never
//! passes: run anyway (`--include-ignored`), or skipping only at run time
//! (`CaseError::Skip`), it fails with the reason.

use cmdbuf_conformance::{
    Outcome, REQUIRE_DEVICES_ENV, cases, devices_under_test, run_case, unmet_device_requirements,
};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    cmdbuf_conformance::quiet_adapter_worker_panics();
    let loader = match cmdbuf::load() {
        Ok(loader) => loader,
        Err(e) => {
            eprintln!("cannot load adapters: {e}");
            std::process::exit(2);
        }
    };
    for absent in loader.absent() {
        eprintln!("adapter {} absent: {}", absent.backend, absent.reason);
    }
    let devices = devices_under_test(&loader).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let mut trials = Vec::new();
    // CI names the devices that must be here (`UR_RS_REQUIRE_DEVICES`): one
    // trial that fails when any is missing.
    if let Ok(required) = std::env::var(REQUIRE_DEVICES_ENV) {
        let unmet = unmet_device_requirements(&loader, &required);
        trials.push(Trial::test(format!("[require] {REQUIRE_DEVICES_ENV}={required}"), move || {
            if unmet.is_empty() { Ok(()) } else { Err(Failed::from(unmet.join("\n"))) }
        }));
    }
    for device in devices {
        for case in cases::all() {
            let name = format!("[{device}] {}", case.name);
            let skip = case.requires.missing(&device).is_some();
            let device = device.clone();
            let trial = Trial::test(name, move || match run_case(&case, &device) {
                Outcome::Pass => Ok(()),
                // Ran nothing: a requirement the device misses (an ignored
                // case run with `--include-ignored`), or a skip found only
                // at run time, which its `requires` should have declared.
                Outcome::Skip(reason) => Err(Failed::from(format!("ran nothing: {reason}"))),
                Outcome::Fail(message) => Err(Failed::from(message)),
            });
            trials.push(trial.with_ignored_flag(skip));
        }
    }
    // Sections over every selected device at once, when there are several:
    // `[cross]` (one buffer on all) and `[multi_device]` (every pair).
    let selected = loader.devices();
    if selected.len() > 1 {
        // USM peer copies need a pair with peer access (CUDA GPUs); ignored
        // where none is selected, as a case whose requirement is missing.
        let any_peer = selected
            .iter()
            .any(|a| selected.iter().any(|b| a != b && a.peer_access(b).is_ok_and(|access| access.supported)));
        let sections = [("cross", cases::buffers::cross_cases()), ("multi_device", cases::multi_device::cases())];
        for (section, section_cases) in sections {
            for case in section_cases {
                let devices = selected.clone();
                let ignored = case.name == "multi_device::usm_peer_copy" && !any_peer;
                let trial = Trial::test(format!("[{section}] {}", case.name), move || match case.run(&devices) {
                    Outcome::Pass => Ok(()),
                    Outcome::Skip(reason) => Err(Failed::from(format!("ran nothing: {reason}"))),
                    Outcome::Fail(message) => Err(Failed::from(message)),
                });
                trials.push(trial.with_ignored_flag(ignored));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
