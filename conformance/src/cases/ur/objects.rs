//! Creating objects: programs from bundles, kernels by name, USM and buffers,
//! queues, and the errors each creation reports.

use cmdbuf::{
    ArgKind, Context, Kernel, KernelArg, KernelLaunch, KernelSignature, MemBuffer, MemFlags, Program, ProgramBundle,
    ProgramSource, Queue, QueueProperties, SourceForm, UsmAllocation, UsmKind, UsmKinds,
};

use crate::harness::{CaseResult, Env, read, write};
use crate::kernels;
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["objects";
        program_without_accepted_form,
        program_reports_built_form,
        duplicate_kernel_declaration,
        kernel_by_name,
        kinds_left_to_the_driver,
        usm_sizes_and_alignment,
        usm_kinds,
        buffer_sizes_and_flags,
        buffer_initial_contents,
        queue_properties,
        reference_counts,
    ]
}

/// A bundle with no form the device builds fails with `InvalidBinary`, and
/// the message names what was offered and what is accepted.
fn program_without_accepted_form(env: &Env) -> CaseResult {
    let accepted = &env.device().info().source_forms;
    let all = [
        SourceForm::Native,
        SourceForm::OpenClC,
        SourceForm::SpirvKernel,
        SourceForm::SpirV,
        SourceForm::Ptx,
        SourceForm::CudaC,
    ];
    let mut bundle = ProgramBundle::new().kernel(KernelSignature::new("k", []));
    for form in all.iter().filter(|f| !accepted.contains(f)) {
        bundle = bundle.source(match form {
            SourceForm::Native => ProgramSource::Native(Vec::new()),
            SourceForm::OpenClC => ProgramSource::OpenClC("kernel void k() {}".into()),
            SourceForm::SpirvKernel => ProgramSource::Il(Vec::new().into()),
            SourceForm::SpirV => ProgramSource::SpirV(Vec::new()),
            SourceForm::Ptx => ProgramSource::Ptx("// empty".into()),
            SourceForm::CudaC => ProgramSource::CudaC("extern \"C\" __global__ void k() {}".into()),
        });
    }
    let err = match Program::new(env.context(), &bundle) {
        Err(e @ cmdbuf::UrError::InvalidBinary(_)) => e,
        other => return Err(crate::CaseError::Fail(format!("expected InvalidBinary, got {other:?}"))),
    };
    let message = err.to_string();
    for form in accepted {
        check!(message.contains(&form.to_string()), "`{message}` does not name accepted form {form}");
    }
    check_err!(Program::new(env.context(), &ProgramBundle::new()), InvalidBinary);
    Ok(())
}

fn program_reports_built_form(env: &Env) -> CaseResult {
    let program = env.program()?;
    check!(env.device().info().source_forms.contains(&program.form()));
    check_eq!(program.signatures().len(), crate::kernels::signatures().len());
    Ok(())
}

fn duplicate_kernel_declaration(env: &Env) -> CaseResult {
    let bundle = crate::kernels::bundle().kernel(KernelSignature::new("fill", [ArgKind::Global]));
    check_err!(Program::new(env.context(), &bundle), InvalidValue);
    Ok(())
}

/// A bundle may leave argument kinds to the driver, as adopted kernels'
/// derived signatures do (`ArgKind::Unknown`, `ArgKind::AnyValue`): `saxpy`
/// declared so runs with the launch's own kinds, and what can still be
/// checked is (the count; an `AnyValue` takes bytes, not empty ones). The
/// Vulkan kernel ABI lays out each argument by kind and size, so there the
/// kernel is refused (`InvalidValue`).
fn kinds_left_to_the_driver(env: &Env) -> CaseResult {
    let loose = KernelSignature::new("saxpy", [ArgKind::Unknown, ArgKind::AnyValue, ArgKind::Global, ArgKind::Unknown]);
    let signatures = kernels::signatures().into_iter().map(|s| if s.name == "saxpy" { loose.clone() } else { s });
    let kernel = Program::new(env.context(), &kernels::bundle_with(signatures.collect()))
        .and_then(|program| Kernel::new(&program, "saxpy"));
    if env.device().backend() == cmdbuf::Backend::Vulkan {
        check_err!(kernel, InvalidValue);
        return Ok(());
    }
    let kernel = kernel?;
    check!(!kernel.signature().args[0].is_exact() && kernel.signature().args[2].is_exact());
    const N: usize = 64;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let xs: Vec<u32> = (0..N as u32).map(|i| i + 5).collect();
    let ys: Vec<u32> = (0..N as u32).map(|i| i * i).collect();
    let queue = env.queue()?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let a = 9u32;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&a), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: N work-items over N-element X, Y and Z.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])? }.wait()?;
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, kernels::saxpy_reference(a, &xs, &ys));
    // SAFETY: each launch below is refused before anything runs.
    unsafe {
        check_err!(queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args[..3]), &[]), InvalidKernelArgumentIndex);
        let pointer_for_value = [args[0], KernelArg::Pointer(x.ptr()), args[2], args[3]];
        check_err!(queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &pointer_for_value), &[]), InvalidValue);
        let empty = [args[0], KernelArg::Value(&[]), args[2], args[3]];
        check_err!(queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &empty), &[]), InvalidKernelArgumentSize);
    }
    Ok(())
}

fn kernel_by_name(env: &Env) -> CaseResult {
    let program = env.program()?;
    for signature in crate::kernels::signatures() {
        let kernel = Kernel::new(program, &signature.name)?;
        check_eq!(kernel.name(), &*signature.name);
        check_eq!(kernel.num_args(), signature.args.len());
        check!(kernel.max_work_group_size() >= 1);
        check!(kernel.max_work_group_size() <= env.device().info().max_work_group_size);
    }
    check_err!(Kernel::new(program, "no_such_kernel"), InvalidKernelName);
    // Declared but absent from the built source.
    let bundle = crate::kernels::bundle().kernel(KernelSignature::new("declared_only", []));
    let program = Program::new(env.context(), &bundle)?;
    check_err!(Kernel::new(&program, "declared_only"), InvalidKernelName);
    Ok(())
}

fn usm_sizes_and_alignment(env: &Env) -> CaseResult {
    let ctx = env.context();
    let info = env.device().info();
    check_err!(UsmAllocation::new(ctx, UsmKind::Device, 0), InvalidUsmSize);
    check_err!(
        UsmAllocation::new(ctx, UsmKind::Device, (info.max_mem_alloc_size as usize).saturating_add(1)),
        InvalidUsmSize
    );
    check_err!(UsmAllocation::with_alignment(ctx, UsmKind::Device, 64, 3), InvalidValue);
    check_err!(UsmAllocation::with_alignment(ctx, UsmKind::Device, 64, 48), InvalidValue);
    for align in [1usize, 8, 64, 256, 4096] {
        let a = UsmAllocation::with_alignment(ctx, UsmKind::Device, 100, align)?;
        check_eq!(a.ptr().addr() % align as u64, 0, "alignment {align}");
        check_eq!(a.size(), 100);
    }
    Ok(())
}

/// Every kind the device reports can be allocated, written and read back;
/// host-accessible kinds expose their bytes.
fn usm_kinds(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let info = env.device().info();
    for (kind, flag) in
        [(UsmKind::Host, UsmKinds::HOST), (UsmKind::Device, UsmKinds::DEVICE), (UsmKind::Shared, UsmKinds::SHARED)]
    {
        let result = UsmAllocation::new(env.context(), kind, 256);
        if !info.usm.contains(flag) {
            check_err!(result, UnsupportedFeature);
            continue;
        }
        let alloc = result?;
        check_eq!(alloc.kind(), kind);
        let data: Vec<u32> = (0..64).map(|i| i * 7 + 1).collect();
        write(&queue, alloc.ptr(), &data)?;
        check_eq!(read::<u32>(&queue, alloc.ptr(), 64)?, data);
        if kind != UsmKind::Device {
            let host = alloc.host_ptr();
            check!(host.is_some(), "{kind:?} USM has no host address");
            // SAFETY: the queue is idle (blocking read above) and the allocation has 256 bytes.
            let first = unsafe { host.unwrap().cast::<u32>().read_unaligned() };
            check_eq!(first, 1);
        }
    }
    Ok(())
}

fn buffer_sizes_and_flags(env: &Env) -> CaseResult {
    let ctx = env.context();
    check_err!(MemBuffer::new(ctx, MemFlags::READ_WRITE, 0), InvalidBufferSize);
    let too_big = (env.device().info().max_mem_alloc_size as usize).saturating_add(1);
    check_err!(MemBuffer::new(ctx, MemFlags::READ_WRITE, too_big), InvalidBufferSize);
    check_err!(MemBuffer::new(ctx, MemFlags::READ_ONLY | MemFlags::WRITE_ONLY, 16), InvalidValue);
    check_eq!(MemBuffer::new(ctx, MemFlags::empty(), 16)?.flags(), MemFlags::READ_WRITE);
    check_eq!(MemBuffer::new(ctx, MemFlags::READ_ONLY, 16)?.flags(), MemFlags::READ_ONLY);
    Ok(())
}

fn buffer_initial_contents(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let zeroed = env.buffer(1024)?;
    check_eq!(crate::harness::read_buffer::<u8>(&queue, &zeroed, 0, 1024)?, vec![0u8; 1024]);
    let data: Vec<u8> = (0..=255).collect();
    let copied = MemBuffer::with_data(env.context(), MemFlags::READ_WRITE, &data)?;
    check_eq!(copied.size(), 256);
    check_eq!(crate::harness::read_buffer::<u8>(&queue, &copied, 0, 256)?, data);
    Ok(())
}

fn queue_properties(env: &Env) -> CaseResult {
    let info = env.device().info();
    for properties in [
        QueueProperties { out_of_order: true, profiling: false },
        QueueProperties { out_of_order: false, profiling: true },
        QueueProperties { out_of_order: true, profiling: true },
    ] {
        let supported =
            (!properties.out_of_order || info.out_of_order_queues) && (!properties.profiling || info.queue_profiling);
        let result = Queue::new(env.context(), properties);
        if supported {
            let queue = result?;
            check_eq!(queue.properties(), properties);
            check!(queue.device() == env.device());
        } else {
            check_err!(result, InvalidQueueProperties);
        }
    }
    Ok(())
}

/// Clones retain and drops release every refcounted handle; objects keep
/// their context alive.
fn reference_counts(env: &Env) -> CaseResult {
    let ctx = Context::new(env.device())?;
    let base = ctx.reference_count();
    let buffer = MemBuffer::new(&ctx, MemFlags::READ_WRITE, 16)?;
    let queue = Queue::new(&ctx, QueueProperties::default())?;
    check_eq!(ctx.reference_count(), base + 1, "the queue holds its context");
    let again = buffer.clone();
    check_eq!(buffer.reference_count(), 2);
    drop(again);
    check_eq!(buffer.reference_count(), 1);
    drop(queue);
    check_eq!(ctx.reference_count(), base);
    Ok(())
}
