//! What the conformance suite cannot reach: the device the factory reports,
//! the choice of SPIR-V among a bundle's forms, and how malformed or
//! incomplete SPIR-V fails. Needs a Vulkan device (CI has lavapipe); without
//! one the tests are listed ignored with the reason, and fail when run anyway
//! (`--include-ignored`) or when `UR_RS_REQUIRE_DEVICES` names `vulkan`.

mod common;

use std::borrow::Cow;

use cmdbuf_core::{
    ArgKind, CommandBufferSupport, Context, Device, Kernel, KernelArg, KernelLaunch, KernelSignature, NativeKernel,
    Program, ProgramBundle, ProgramSource, Queue, QueueProperties, SourceForm, SpirvModule, UrError, UsmAllocation,
    UsmKind, WorkGroup,
};

/// `increment(P)`: `P[gid0] += 1`, the conformance library's SPIR-V.
static INCREMENT_SPV: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/src/kernels/vulkan/increment.spv"));

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn main() {
    common::run(&[
        ("devices_report_what_the_adapter_implements", devices_report_what_the_adapter_implements),
        ("spirv_is_chosen_from_a_bundle_of_several_forms", spirv_is_chosen_from_a_bundle_of_several_forms),
        ("a_bundle_without_spirv_is_an_invalid_binary", a_bundle_without_spirv_is_an_invalid_binary),
        (
            "malformed_spirv_is_an_invalid_binary_naming_the_kernel",
            malformed_spirv_is_an_invalid_binary_naming_the_kernel,
        ),
        (
            "a_declared_kernel_without_a_module_is_an_invalid_kernel_name",
            a_declared_kernel_without_a_module_is_an_invalid_kernel_name,
        ),
    ]);
}

fn spirv(kernel: &'static str, words: Vec<u32>) -> ProgramSource {
    ProgramSource::SpirV(vec![SpirvModule { kernel: Cow::Borrowed(kernel), words: Cow::Owned(words) }])
}

/// A native `increment` that would give a different result, to tell which
/// form ran.
fn add_ten(g: &WorkGroup<'_>) {
    let p = g.ptr::<u32>(0);
    for item in g.items() {
        // SAFETY: launched with one u32 per work-item.
        unsafe { *p.add(item.global_id(0)) += 10 };
    }
}

fn devices_report_what_the_adapter_implements(device: &Device) {
    let info = device.info();
    assert_eq!(info.source_forms, vec![SourceForm::SpirV]);
    assert_eq!(info.command_buffer.support, CommandBufferSupport::Native);
    // The minimums Vulkan guarantees for every device.
    assert!(info.max_work_group_size >= 128, "{info:?}");
    assert!(info.local_mem_size >= 16384, "{info:?}");
    assert!(info.max_work_item_sizes.iter().all(|s| *s >= 64), "{info:?}");
    assert!(info.max_mem_alloc_size > 0, "{info:?}");
    assert!(info.driver_version.contains("Vulkan"), "{}", info.driver_version);
}

fn spirv_is_chosen_from_a_bundle_of_several_forms(device: &Device) {
    let context = Context::new(device).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("increment", [ArgKind::Global]))
        .source(ProgramSource::Native(vec![NativeKernel::new("increment", add_ten)]))
        .source(spirv("increment", words(INCREMENT_SPV)));
    let program = Program::new(&context, &bundle).unwrap();
    assert_eq!(program.form(), SourceForm::SpirV);
    let kernel = Kernel::new(&program, "increment").unwrap();

    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let data = UsmAllocation::new(&context, UsmKind::Device, 64 * 4).unwrap();
    let init: Vec<u8> = (0..64u32).flat_map(u32::to_le_bytes).collect();
    queue.write_usm(data.ptr(), &init, &[]).unwrap();
    let args = [KernelArg::Pointer(data.ptr())];
    // SAFETY: 64 work-items over a 64-element allocation.
    let done = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[64], &args), &[]) }.unwrap();
    let mut out = vec![0u8; 64 * 4];
    queue.read_usm(data.ptr(), &mut out, &[&done]).unwrap();
    let got: Vec<u32> = out.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, (1..=64u32).collect::<Vec<_>>(), "the SPIR-V form ran");
}

fn a_bundle_without_spirv_is_an_invalid_binary(device: &Device) {
    let context = Context::new(device).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("increment", [ArgKind::Global]))
        .source(ProgramSource::Native(vec![NativeKernel::new("increment", add_ten)]));
    let err = Program::new(&context, &bundle).unwrap_err();
    assert!(matches!(err, UrError::InvalidBinary(_)), "{err}");
}

fn malformed_spirv_is_an_invalid_binary_naming_the_kernel(device: &Device) {
    let context = Context::new(device).unwrap();
    let declared = || ProgramBundle::new().kernel(KernelSignature::new("increment", [ArgKind::Global]));

    let err = Program::new(&context, &declared().source(spirv("increment", vec![1, 2, 3, 4, 5]))).unwrap_err();
    assert!(matches!(err, UrError::InvalidBinary(_)), "{err}");
    assert!(err.to_string().contains("`increment`") && err.to_string().contains("magic"), "{err}");

    // A well-formed header with no compute entry point.
    let no_entry = vec![0x0723_0203, 0x0001_0500, 0, 1, 0];
    let err = Program::new(&context, &declared().source(spirv("increment", no_entry))).unwrap_err();
    assert!(matches!(err, UrError::InvalidBinary(_)), "{err}");
    assert!(err.to_string().contains("GLCompute"), "{err}");

    // Truncated mid-instruction.
    let mut truncated = words(INCREMENT_SPV);
    truncated.truncate(7);
    let err = Program::new(&context, &declared().source(spirv("increment", truncated))).unwrap_err();
    assert!(matches!(err, UrError::InvalidBinary(_)), "{err}");
}

fn a_declared_kernel_without_a_module_is_an_invalid_kernel_name(device: &Device) {
    let context = Context::new(device).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("increment", [ArgKind::Global]))
        .kernel(KernelSignature::new("missing", [ArgKind::Global]))
        .source(spirv("increment", words(INCREMENT_SPV)));
    let program = Program::new(&context, &bundle).unwrap();
    Kernel::new(&program, "increment").unwrap();
    let err = Kernel::new(&program, "missing").unwrap_err();
    assert!(matches!(err, UrError::InvalidKernelName(_)), "{err}");
    assert!(err.to_string().contains("`missing`"), "{err}");
}
