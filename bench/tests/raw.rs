//! The raw-API baselines of the bench (`src/raw`) run a fork-join on every
//! OpenCL and Vulkan device the bench sees: built, submitted and waited for,
//! twice per build, and each eager baseline submitted and waited for. A backend without a device is listed ignored with the
//! reason, and fails when run anyway (`--include-ignored`) or when
//! `UR_RS_REQUIRE_DEVICES` names it (CI: PoCL and lavapipe).

// The bench's own uses of the module (its CUDA build breakdown) are not this test's.
#[allow(dead_code, unused_imports)]
#[path = "../src/raw/mod.rs"]
mod raw;

use cmdbuf::{Backend, Device};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let loader = cmdbuf::load().ok();
    let devices = loader.as_ref().map(|l| l.devices()).unwrap_or_default();
    let mut trials = Vec::new();
    for backend in [Backend::OpenCl, Backend::Vulkan] {
        let name = format!("fork_join_on_every_{}_device", backend.name());
        let own: Vec<Device> = devices.iter().filter(|d| d.backend() == backend && !d.is_emulated()).cloned().collect();
        if own.is_empty() {
            let required =
                std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == backend.name()));
            let why = format!("no {backend} device is selected here");
            println!("ignored {name}: {why}");
            trials.push(
                Trial::test(name, move || Err(Failed::from(format!("cannot run here: {why}"))))
                    .with_ignored_flag(!required),
            );
            continue;
        }
        trials.push(Trial::test(name, move || own.iter().try_for_each(fork_join).map_err(Failed::from)));
    }
    libtest_mimic::run(&args, trials).exit();
}

fn fork_join(device: &Device) -> Result<(), String> {
    let mut graph = raw::open(device).map_err(|e| format!("{device}: {e}"))?;
    for _ in 0..2 {
        graph.build(&[vec![], vec![0], vec![0], vec![1, 2]])?;
        graph.launch()?;
        graph.wait()?;
        graph.launch()?;
        graph.wait()?;
    }
    // Each eager baseline (kernels with arguments too), twice.
    for variant in 0..graph.eager_variants().len() {
        for _ in 0..2 {
            graph.eager(variant, 3)?;
            graph.wait()?;
        }
    }
    eprintln!("{device}: {}", graph.mechanism());
    Ok(())
}
