//! The harness of the adapter's device tests: each test runs on the first
//! Vulkan device; without one the tests are listed ignored with the reason,
//! and fail when run anyway (`--include-ignored`) or when
//! `UR_RS_REQUIRE_DEVICES` names `vulkan`.

use cmdbuf_vulkan::VulkanAdapterFactory;
use libtest_mimic::{Arguments, Failed, Trial};
use std::borrow::Cow;

use cmdbuf_core::{
    AdapterEntry, ArgKind, Context, Device, DeviceSelector, Kernel, KernelSignature, Loader, Program, ProgramBundle,
    ProgramSource, SpirvModule,
};

/// A device test.
pub type Test = fn(&Device);

/// Runs `tests` (name, test) on the first Vulkan device and exits.
pub fn run(tests: &[(&'static str, Test)]) -> ! {
    let args = Arguments::from_args();
    let loader = Loader::load(&[AdapterEntry::Compiled(&VulkanAdapterFactory)], DeviceSelector::all());
    let device = loader.devices().into_iter().next();
    let required = std::env::var("UR_RS_REQUIRE_DEVICES").is_ok_and(|v| v.split(',').any(|d| d.trim() == "vulkan"));
    let absent: Vec<&str> = loader.absent().iter().map(|a| a.reason.as_str()).collect();
    let reason = format!("no Vulkan device ({})", absent.join("; "));
    if device.is_none() {
        println!("Vulkan device tests ignored: {reason}");
    }
    let trials = tests
        .iter()
        .map(|&(name, test)| match &device {
            Some(device) => {
                let device = device.clone();
                Trial::test(name, move || {
                    test(&device);
                    Ok(())
                })
            }
            // Run anyway, or required here, it fails: it ran nothing.
            None => {
                let reason = reason.clone();
                Trial::test(name, move || Err(Failed::from(format!("cannot run here: {reason}"))))
                    .with_ignored_flag(!required)
            }
        })
        .collect();
    libtest_mimic::run(&args, trials).exit()
}

/// `saxpy_local(LA: local, LB: local, Z, A: u32, X, Y)` of the conformance
/// library, built for `context`: fails through its status word when LA or LB
/// is too small.
#[allow(dead_code)] // Not every test binary launches it.
pub fn saxpy_local(context: &Context) -> Kernel {
    static SPV: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/src/kernels/vulkan/saxpy_local.spv"));
    let words = SPV.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let (l, g) = (ArgKind::Local, ArgKind::Global);
    let bundle =
        ProgramBundle::new().kernel(KernelSignature::new("saxpy_local", [l, l, g, ArgKind::Value(4), g, g])).source(
            ProgramSource::SpirV(vec![SpirvModule { kernel: Cow::Borrowed("saxpy_local"), words: Cow::Owned(words) }]),
        );
    Kernel::new(&Program::new(context, &bundle).unwrap(), "saxpy_local").unwrap()
}
