//! Programs given as bytes, as UR gives them (`urProgramCreateWithIL`,
//! `urProgramCreateWithBinary`): the kernels' signatures are read from the
//! code, and launches are checked against what was read. Each device runs
//! the form it builds (kernels::programs): a CPU kernel table of C functions,
//! SPIR-V of OpenCL kernels, SPIR-V compute shaders of the Vulkan kernel
//! ABI, or PTX.

use cmdbuf::{ArgKind, CacheConfig, Kernel, KernelArg, KernelLaunch, Program, ProgramBundle, SourceForm, UsmKind};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::kernels::programs::{self, Params, scale_add_reference};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["programs";
        scale_add_signature_from_the_code,
        local_memory_argument_from_the_code,
        required_work_group_size_from_the_code,
        build_options_binary_and_kernel_info,
        cache_config_hints,
        misuse_is_reported,
        modules_compiled_apart_link,
    ]
}

/// The program holding `kernel` in the device's form, and the kernel.
fn load(env: &Env, kernel: &str, options: &str) -> Result<(Program, Kernel), CaseError> {
    let forms = &env.device().info().source_forms;
    let Some(bundle) = programs::bundle_for(forms, kernel) else {
        let forms: Vec<String> = forms.iter().map(ToString::to_string).collect();
        return Err(CaseError::Skip(format!(
            "no form of `{kernel}` given as bytes is one the device builds ({})",
            forms.join(", ")
        )));
    };
    let program = Program::with_options(env.context(), &bundle?, options)?;
    let kernel = Kernel::new(&program, kernel)?;
    Ok((program, kernel))
}

/// A pointer argument as the code reads it: global, or 8 bytes where the
/// code cannot tell (PTX).
fn is_pointer(kind: ArgKind) -> bool {
    matches!(kind, ArgKind::Global | ArgKind::Value(8))
}

/// Pointers, a float, a structure by value and a 64-bit value, read from
/// the code and passed at launch; an 8-byte value also takes a pointer.
fn scale_add_signature_from_the_code(env: &Env) -> CaseResult {
    let (_program, kernel) = load(env, "scale_add", "")?;
    let args = &kernel.signature().args;
    check_eq!(args.len(), 5, "{args:?}");
    check!(is_pointer(args[0]) && is_pointer(args[1]), "{args:?}");
    check_eq!(&args[2..], &[ArgKind::Value(4), ArgKind::Value(8), ArgKind::Value(8)]);
    check_eq!(kernel.compile_work_group_size(), None);
    scale_add_runs(env, &kernel)
}

/// Launches `scale_add` with its arguments as read from the code, checking
/// the results, then with a pointer for its 8-byte count.
fn scale_add_runs(env: &Env, kernel: &Kernel) -> CaseResult {
    const N: usize = 64;
    let queue = env.queue()?;
    let (dst, src) = (env.usm(UsmKind::Device, N * 4)?, env.usm(UsmKind::Device, N * 4)?);
    let input: Vec<f32> = (0..N).map(|i| i as f32).collect();
    write(&queue, src.ptr(), &input)?;
    write(&queue, dst.ptr(), &[0f32; N])?;
    let (a, p, n) = (2.0f32, Params { scale: 0.5, bias: 3 }, 60u64);
    let launch_args = [
        KernelArg::Pointer(dst.ptr()),
        KernelArg::Pointer(src.ptr()),
        KernelArg::value(&a),
        KernelArg::value(&p),
        KernelArg::value(&n),
    ];
    // SAFETY: 64 work-items over allocations of 64 floats.
    unsafe { queue.launch_kernel(&KernelLaunch::new(kernel, &[N], &launch_args).local_size(&[16]), &[]) }?.wait()?;
    check_eq!(read::<f32>(&queue, dst.ptr(), N)?, scale_add_reference(&input, a, p, 60));

    // A pointer for the 8-byte count: its address, far above 64, lets every item write.
    let mut launch_args = launch_args;
    launch_args[4] = KernelArg::Pointer(dst.ptr());
    // SAFETY: as above.
    unsafe { queue.launch_kernel(&KernelLaunch::new(kernel, &[N], &launch_args).local_size(&[16]), &[]) }?.wait()?;
    check_eq!(read::<f32>(&queue, dst.ptr(), N)?, scale_add_reference(&input, a, p, N));
    Ok(())
}

/// A local-memory argument read from the code (a `Workgroup` pointer, a
/// specialization constant of the Vulkan ABI, a table entry).
fn local_memory_argument_from_the_code(env: &Env) -> CaseResult {
    let (_program, kernel) = load(env, "group_sum", "")?;
    check_eq!(kernel.signature().args[2], ArgKind::Local);
    const N: usize = 64;
    const LOCAL: usize = 16;
    let queue = env.queue()?;
    let (dst, src) = (env.usm_u32(N / LOCAL)?, env.usm_u32(N)?);
    let input: Vec<u32> = (0..N as u32).map(|i| i * 3 + 1).collect();
    write(&queue, src.ptr(), &input)?;
    let args = [KernelArg::Pointer(dst.ptr()), KernelArg::Pointer(src.ptr()), KernelArg::Local(LOCAL * 4)];
    // SAFETY: 64 items reading 64 u32s, 4 groups writing 4.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]), &[]) }?.wait()?;
    let expected: Vec<u32> = input.chunks(LOCAL).map(|c| c.iter().sum()).collect();
    check_eq!(read::<u32>(&queue, dst.ptr(), N / LOCAL)?, expected);
    Ok(())
}

/// A work-group size fixed in the code is reported, chosen when the launch
/// gives none, and the only one a launch may give.
fn required_work_group_size_from_the_code(env: &Env) -> CaseResult {
    let (_program, kernel) = load(env, "fixed_size", "")?;
    check_eq!(kernel.compile_work_group_size(), Some([4, 1, 1]));
    const N: usize = 16;
    let queue = env.queue()?;
    let dst = env.usm_u32(N)?;
    let args = [KernelArg::Pointer(dst.ptr())];
    // SAFETY: 16 items writing 16 u32s.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[]) }?.wait()?;
    let expected: Vec<u32> = (0..N as u32).map(|i| 4000 + i % 4).collect();
    check_eq!(read::<u32>(&queue, dst.ptr(), N)?, expected);
    // SAFETY: rejected before anything runs.
    let wrong = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[8]), &[]) };
    check_err!(wrong, InvalidWorkGroupSize);
    // SAFETY: as above.
    check_err!(unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[6], &args), &[]) }, InvalidWorkGroupSize);
    Ok(())
}

/// Build options are kept, the program has a binary (the driver's or the
/// bytes given), and the kernel's work-group information is coherent.
fn build_options_binary_and_kernel_info(env: &Env) -> CaseResult {
    let options = "-cl-mad-enable";
    let (program, kernel) = load(env, "scale_add", options)?;
    check_eq!(program.build_options(), options);
    let binary = program.binary();
    check!(binary.as_ref().is_some_and(|b| !b.is_empty()), "no binary: {binary:?}");
    let _log = program.build_log();
    // Where the binary is the bytes given (all but OpenCL, whose binary is
    // the driver's), it builds again.
    if program.form() != cmdbuf::SourceForm::SpirvKernel {
        let bytes = binary.expect("checked above");
        // SAFETY: a CPU kernel table's bytes point to statics of this process.
        let again = unsafe { ProgramBundle::from_binary(&bytes) }?;
        let again = Program::new(env.context(), &again)?;
        let rebuilt = Kernel::new(&again, "scale_add")?;
        check_eq!(rebuilt.signature(), kernel.signature());
    }
    let info = env.device().info();
    check!(kernel.local_mem_size() as u64 <= info.local_mem_size, "local memory {}", kernel.local_mem_size());
    let multiple = kernel.preferred_work_group_size_multiple();
    check!(multiple >= 1 && multiple <= info.max_work_group_size, "preferred multiple {multiple}");
    check!(kernel.max_work_group_size() >= 1);
    Ok(())
}

/// Cache-configuration hints (`UR_KERNEL_EXEC_INFO_CACHE_CONFIG`) are taken
/// on every backend: applied where it has a split between local memory and
/// data cache (CUDA), recorded elsewhere; launches run as before.
fn cache_config_hints(env: &Env) -> CaseResult {
    let (_program, kernel) = load(env, "scale_add", "")?;
    check_eq!(kernel.cache_config(), CacheConfig::Default);
    let applied = kernel.set_cache_config(CacheConfig::LargeLocalMemory)?;
    check_eq!(applied, env.device().backend() == cmdbuf::Backend::Cuda, "applied on {}", env.device());
    check_eq!(kernel.cache_config(), CacheConfig::LargeLocalMemory);
    kernel.set_cache_config(CacheConfig::LargeData)?;
    check_eq!(kernel.cache_config(), CacheConfig::LargeData);
    scale_add_runs(env, &kernel)?;
    kernel.set_cache_config(CacheConfig::Default)?;
    check_eq!(kernel.cache_config(), CacheConfig::Default);
    Ok(())
}

/// Bytes that are no program, unknown kernels, and arguments that disagree
/// with the signature read from the code.
fn misuse_is_reported(env: &Env) -> CaseResult {
    check_err!(ProgramBundle::from_il(b"not SPIR-V at all, just text"), InvalidBinary);
    check_err!(ProgramBundle::from_il(&[]), InvalidBinary);
    // A SPIR-V header whose first instruction runs past the end.
    let truncated: Vec<u8> =
        [0x0723_0203u32, 0x0001_0000, 0, 8, 0, 4 << 16 | 15].iter().flat_map(|w| w.to_le_bytes()).collect();
    check_err!(ProgramBundle::from_il(&truncated), InvalidBinary);
    // SAFETY: the bytes are no kernel table, so nothing is dereferenced.
    check_err!(unsafe { ProgramBundle::from_binary(b"\x7fELF\x02\x01\x01\0 a cubin or a host binary") }, InvalidBinary);

    // A program in none of the device's forms.
    let forms = &env.device().info().source_forms;
    let candidates = [
        ProgramBundle::from_il(programs::OPENCL_SPIRV)?,
        ProgramBundle::from_il(programs::VULKAN[0].2)?,
        // SAFETY: PTX holds no pointers.
        unsafe { ProgramBundle::from_binary(programs::PTX) }?,
    ];
    if let Some(foreign) = candidates.iter().find(|b| b.forms().iter().all(|f| !forms.contains(f))) {
        check_err!(Program::new(env.context(), foreign), InvalidBinary);
    }

    let (program, kernel) = load(env, "scale_add", "")?;
    check_err!(Kernel::new(&program, "no_such_kernel"), InvalidKernelName);
    let queue = env.queue()?;
    let dst = env.usm(UsmKind::Device, 64 * 4)?;
    let (a, p, n) = (1.0f64, Params { scale: 1.0, bias: 0 }, 64u64);
    let wrong_size = [
        KernelArg::Pointer(dst.ptr()),
        KernelArg::Pointer(dst.ptr()),
        KernelArg::value(&a),
        KernelArg::value(&p),
        KernelArg::value(&n),
    ];
    // SAFETY: rejected before anything runs.
    let wrong = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[64], &wrong_size), &[]) };
    check_err!(wrong, InvalidKernelArgumentSize);
    // SAFETY: as above.
    let wrong = unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[64], &wrong_size[..4]), &[]) };
    check_err!(wrong, InvalidKernelArgumentIndex);
    // A local-memory size for a value argument.
    let mut wrong_kind = wrong_size;
    wrong_kind[2] = KernelArg::Local(4);
    // SAFETY: as above.
    check_err!(unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[64], &wrong_kind), &[]) }, InvalidValue);
    Ok(())
}

/// Two SPIR-V modules compiled apart, a kernel and a library of the
/// function it calls (as libsycl links its device libraries), run once
/// linked where the device has a linker (an OpenCL device that takes SPIR-V
/// itself). Elsewhere the link is refused, typed: `UnsupportedFeature` where
/// the device builds SPIR-V of OpenCL kernels but links none (PoCL 3.1,
/// through SPIR translation), `InvalidBinary` where it builds no such form.
/// A module without a kernel is read as such, and the linked program's
/// kernels are its modules'.
fn modules_compiled_apart_link(env: &Env) -> CaseResult {
    let library = ProgramBundle::from_il(programs::LINK_LIBRARY)?;
    check!(library.signatures().is_empty(), "{:?}", library.signatures());
    let kernel_module = ProgramBundle::from_il(programs::LINK_KERNEL)?;
    check_eq!(kernel_module.signatures().len(), 1);
    check_err!(Program::link(env.context(), &[], ""), InvalidSize);
    // One name in two inputs is a link failure, before any backend is asked.
    check_err!(Program::link(env.context(), &[(&kernel_module, ""), (&kernel_module, "")], ""), ProgramLinkFailure);
    let info = env.device().info();
    let linked = Program::link(env.context(), &[(&kernel_module, "-cl-fast-relaxed-math"), (&library, "")], "");
    if !info.linker_available {
        if info.source_forms.contains(&SourceForm::SpirvKernel) {
            check_err!(linked, UnsupportedFeature);
        } else {
            check_err!(linked, InvalidBinary);
        }
        return Ok(());
    }
    let linked = linked?;
    check_eq!(linked.signatures().len(), 1);
    let kernel = Kernel::new(&linked, "link_scale")?;
    const N: usize = 64;
    let queue = env.queue()?;
    let data = env.usm(UsmKind::Device, N * 4)?;
    let input: Vec<i32> = (0..N as i32).collect();
    write(&queue, data.ptr(), &input)?;
    let args = [KernelArg::Pointer(data.ptr()), KernelArg::value(&3i32)];
    // SAFETY: 64 work-items over 64 ints.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[]) }?.wait()?;
    check_eq!(read::<i32>(&queue, data.ptr(), N)?, input.iter().map(|x| x * 3 + 1).collect::<Vec<_>>());
    Ok(())
}
