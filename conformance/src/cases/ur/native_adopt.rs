//! Objects adopted from native handles (`ur*CreateWithNativeHandle`, see
//! `cmdbuf_core::adopt`): a round trip `native_handle()` → `from_native` gives
//! a working object sharing the native one where the backend adopts that
//! kind of object, `UnsupportedFeature` where it does not, and handles that
//! are not of the context or device are errors.
//!
//! What each backend adopts: OpenCL queues, buffers, events, contexts,
//! built programs and kernels; the CPU its buffers (by host address);
//! Vulkan and CUDA their queues (`VkQueue`, `CUstream`) and the device's
//! one context; CUDA its modules and functions.

use cmdbuf::{
    Backend, Context, Event, EventStatus, Kernel, KernelArg, KernelLaunch, MemBuffer, MemFlags, NativeHandle,
    Ownership, Program, Queue, UserEvent,
};

use crate::harness::{CaseResult, Env, read, read_buffer, write};
use crate::kernels::saxpy_reference;
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["native_adopt";
        queue_round_trip,
        buffer_round_trip,
        event_round_trip,
        context_round_trip,
        program_and_kernel_round_trip,
        null_handles,
        foreign_objects,
    ]
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kind {
    Queue,
    Buffer,
    Event,
    Context,
}

/// Whether the backend adopts objects of `kind` (`cmdbuf_core::adopt`).
fn adopts(env: &Env, kind: Kind) -> bool {
    matches!(
        (env.device().backend(), kind),
        (Backend::OpenCl, _)
            | (Backend::Cpu, Kind::Buffer)
            | (Backend::Vulkan | Backend::Cuda, Kind::Context | Kind::Queue)
    )
}

/// A program adopted from the library program's native handle lists its
/// kernels, with signatures derived from the driver: `saxpy`'s argument
/// count (and each kind the driver tells) is the declared one, on OpenCL.
/// Its kernels, made by name or adopted from the library kernel's native
/// kernel with and without the program, compute what the library's does.
/// CUDA's kernels are adopted as plain kernels, whose parameters include
/// the adapter's hidden launch parameter (so they are not launched here);
/// the CPU and Vulkan hand out no native programs.
fn program_and_kernel_round_trip(env: &Env) -> CaseResult {
    let program = env.program()?;
    let native = handle_or_stand_in(program.native_handle());
    // SAFETY: the handle is the program's own (or a stand-in the backend does not use).
    let adopted = unsafe { Program::from_native(env.context(), native, Ownership::Shared) };
    let backend = env.device().backend();
    if matches!(backend, Backend::Cpu | Backend::Vulkan) {
        check_err!(adopted, UnsupportedFeature);
        return Ok(());
    }
    let adopted = match adopted {
        Err(cmdbuf::UrError::UnsupportedFeature(why)) if backend == Backend::Cuda => {
            return Err(crate::CaseError::Skip(format!("the CUDA driver does not adopt modules: {why}")));
        }
        other => other?,
    };
    check!(adopted.is_adopted() && !program.is_adopted());
    check_eq!(adopted.native_handle()?, native, "the adopted program is the same native program");
    for declared in program.signatures() {
        check!(adopted.signatures().iter().any(|s| s.name == declared.name), "kernel `{}` is listed", declared.name);
    }
    let declared = program.signatures().iter().find(|s| s.name == "saxpy").expect("the library declares saxpy");
    let derived = adopted.signatures().iter().find(|s| s.name == "saxpy").expect("checked above");
    if backend == Backend::Cuda {
        check_eq!(derived.args.len(), declared.args.len() + 1, "saxpy's parameters, the hidden one included");
        return Ok(());
    }
    check_eq!(derived.args.len(), declared.args.len(), "saxpy's arguments: {:?}", derived.args);
    for (kind, declared) in derived.args.iter().zip(&declared.args) {
        check!(!kind.is_exact() || kind == declared, "derived {kind:?} for declared {declared:?}");
    }

    const N: usize = 128;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let xs: Vec<u32> = (0..N as u32).map(|i| i * 3 + 1).collect();
    let ys: Vec<u32> = (0..N as u32).map(|i| i ^ 0x33).collect();
    let queue = env.queue()?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let a = 7u32;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&a), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    let run = |kernel: &Kernel| -> CaseResult {
        write(&queue, z.ptr(), &[0u32; N])?;
        // SAFETY: N work-items over N-element X, Y and Z.
        unsafe { queue.launch_kernel(&KernelLaunch::new(kernel, &[N], &args), &[])? }.wait()?;
        check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_reference(a, &xs, &ys), "saxpy through {kernel:?}");
        // The count is still checked.
        // SAFETY: refused before anything runs.
        let short = unsafe { queue.launch_kernel(&KernelLaunch::new(kernel, &[N], &args[..3]), &[]) };
        check_err!(short, InvalidKernelArgumentIndex);
        Ok(())
    };
    run(&Kernel::new(&adopted, "saxpy")?)?;
    let library = env.kernel("saxpy")?;
    let native_kernel = library.native_handle()?;
    // SAFETY: the library kernel's own native kernel, retained by each adoption.
    let with_program = unsafe { Kernel::from_native(env.context(), Some(&adopted), native_kernel, Ownership::Shared)? };
    run(&with_program)?;
    // SAFETY: as above.
    let alone = unsafe { Kernel::from_native(env.context(), None, native_kernel, Ownership::Shared)? };
    check_eq!(alone.program().native_handle()?, native, "the kernel's program is its native program");
    run(&alone)?;
    let other = Context::new(env.device())?;
    // SAFETY: as above; the program of another context is refused first.
    let foreign = unsafe { Kernel::from_native(&other, Some(&adopted), native_kernel, Ownership::Shared) };
    check_err!(foreign, InvalidContext);
    // SAFETY: a live kernel of the backend.
    let foreign_kernel = unsafe { Kernel::from_native(&other, None, native_kernel, Ownership::Shared) };
    // SAFETY: a live program of the backend.
    let foreign_program = unsafe { Program::from_native(&other, native, Ownership::Shared) };
    if other.uses_buffers_of(env.context()) {
        // Both contexts are one `cl_context` (OpenCL's contexts made on one
        // device), whose kernels and programs are each's own; one of its
        // own is refused (adapter-opencl/tests/cross_context.rs).
        check_eq!(foreign_kernel?.native_handle()?, native_kernel);
        check_eq!(foreign_program?.native_handle()?, native);
    } else {
        check_err!(foreign_kernel, InvalidKernel);
        check_err!(foreign_program, InvalidProgram);
    }
    Ok(())
}

/// The object's native handle, or a stand-in where it has none (backends
/// that do not adopt an object never look at the value).
fn handle_or_stand_in(handle: cmdbuf::Result<NativeHandle>) -> NativeHandle {
    handle.unwrap_or(NativeHandle(0x1000))
}

const WORDS: usize = 64;

/// A queue adopted from the native queue runs commands in it, alongside
/// the queue it was taken from.
fn queue_round_trip(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let native = handle_or_stand_in(queue.native_handle());
    // SAFETY: the handle is the queue's own (or a stand-in the backend does not use).
    let adopted = unsafe { Queue::from_native(env.context(), Some(env.device()), native, Ownership::Shared) };
    if !adopts(env, Kind::Queue) {
        check_err!(adopted, UnsupportedFeature);
        return Ok(());
    }
    let adopted = adopted?;
    check_eq!(adopted.native_handle()?, native, "the adopted queue is the same native queue");
    // A VkQueue or CUstream carries no properties: in order, no profiling.
    check_eq!(adopted.properties(), queue.properties());
    let buf = env.buffer(WORDS * 4)?;
    queue.fill_buffer(&buf, &1u32.to_le_bytes(), 0, WORDS * 4, &[])?.wait()?;
    adopted.fill_buffer(&buf, &2u32.to_le_bytes(), 0, WORDS * 2, &[])?;
    adopted.finish()?;
    let mut expected = vec![2u32; WORDS / 2];
    expected.extend(vec![1u32; WORDS / 2]);
    check_eq!(read_buffer::<u32>(&adopted, &buf, 0, WORDS)?, expected);
    drop(adopted);
    // The original queue still works after the adopted one released its reference.
    queue.fill_buffer(&buf, &3u32.to_le_bytes(), 0, 4, &[])?.wait()?;
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, 1)?, vec![3u32]);
    Ok(())
}

/// A buffer adopted from the native memory shares its bytes both ways and
/// has its size and access mode.
fn buffer_round_trip(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let data: Vec<u32> = (0..WORDS as u32).collect();
    let buf = env.buffer_with(&data)?;
    let native = handle_or_stand_in(buf.native_handle());
    // SAFETY: the handle is the buffer's own (or a stand-in the backend does not use).
    let adopted = unsafe { MemBuffer::from_native(env.context(), native, Ownership::Shared) };
    if !adopts(env, Kind::Buffer) {
        check_err!(adopted, UnsupportedFeature);
        return Ok(());
    }
    let adopted = adopted?;
    check_eq!(adopted.size(), WORDS * 4);
    check!(adopted.flags().contains(MemFlags::READ_WRITE), "{:?}", adopted.flags());
    check_eq!(read_buffer::<u32>(&queue, &adopted, 0, WORDS)?, data, "the adopted buffer's bytes");
    queue.fill_buffer(&adopted, &7u32.to_le_bytes(), 0, 16, &[])?.wait()?;
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, 5)?, vec![7, 7, 7, 7, 4], "written through the adopted buffer");
    // Either handle may go first: the memory lives while one does.
    drop(buf);
    check_eq!(read_buffer::<u32>(&queue, &adopted, 16, 2)?, vec![4u32, 5]);
    Ok(())
}

/// An adopted event reports its native event's status and orders the
/// commands that wait for it.
fn event_round_trip(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let gate = UserEvent::new(env.context())?;
    let native = handle_or_stand_in(gate.event().native_handle());
    // SAFETY: the handle is the user event's own (or a stand-in the backend does not use).
    let adopted = unsafe { Event::from_native(env.context(), native, Ownership::Shared) };
    if !adopts(env, Kind::Event) {
        check_err!(adopted, UnsupportedFeature);
        return Ok(());
    }
    let adopted = adopted?;
    let buf = env.buffer(WORDS * 4)?;
    let fill = queue.fill_buffer(&buf, &9u32.to_le_bytes(), 0, WORDS * 4, &[&adopted])?;
    std::thread::sleep(std::time::Duration::from_millis(30));
    check!(fill.status() != cmdbuf::EventStatus::Complete, "a command ran before the adopted event completed");
    check!(adopted.status() != cmdbuf::EventStatus::Complete, "{:?}", adopted.status());
    gate.complete()?;
    fill.wait()?;
    adopted.wait()?;
    check_eq!(adopted.status(), cmdbuf::EventStatus::Complete);
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, vec![9u32; WORDS]);
    // An event of a command, adopted and waited on.
    let done = queue.fill_buffer(&buf, &4u32.to_le_bytes(), 0, 4, &[])?;
    // SAFETY: the command's own event.
    let adopted = unsafe { Event::from_native(env.context(), done.native_handle()?, Ownership::Shared)? };
    adopted.wait()?;
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, 2)?, vec![4u32, 9]);
    Ok(())
}

/// A context adopted from the native context is a new context (its own
/// identity and objects) in which memory, queues and commands work.
fn context_round_trip(env: &Env) -> CaseResult {
    let native = handle_or_stand_in(env.context().native_handle());
    // SAFETY: the handle is the context's own (or a stand-in the backend does not use).
    let adopted = unsafe { Context::from_native(env.device(), native, Ownership::Shared) };
    if !adopts(env, Kind::Context) {
        check_err!(adopted, UnsupportedFeature);
        return Ok(());
    }
    let adopted = adopted?;
    check!(adopted != *env.context(), "an adopted context has its own identity");
    check_eq!(adopted.native_handle()?, native);
    let queue = Queue::new(&adopted, Default::default())?;
    let buf = MemBuffer::new(&adopted, MemFlags::READ_WRITE, WORDS * 4)?;
    queue.fill_buffer(&buf, &5u32.to_le_bytes(), 0, WORDS * 4, &[])?.wait()?;
    check_eq!(read_buffer::<u32>(&queue, &buf, 0, WORDS)?, vec![5u32; WORDS]);
    // Buffers of the two contexts mix only where the adapter uses one's as
    // the other's (Vulkan: the native VkDevice is the same).
    let other = env.buffer(16)?;
    let fill = queue.fill_buffer(&other, &[0], 0, 16, &[]);
    if adopted.uses_buffers_of(env.context()) {
        fill?.wait()?;
    } else {
        check_err!(fill, InvalidMemObject);
    }
    Ok(())
}

/// A null native handle is `InvalidNullHandle` for every kind but events,
/// on every backend; a null native event is an event already complete, that
/// wait lists take; a device other than the context's is `InvalidDevice`.
fn null_handles(env: &Env) -> CaseResult {
    let null = NativeHandle(0);
    // SAFETY: null handles, refused (or, for the event, never passed) before
    // any adapter sees them.
    let done = unsafe {
        check_err!(Queue::from_native(env.context(), None, null, Ownership::Shared), InvalidNullHandle);
        check_err!(MemBuffer::from_native(env.context(), null, Ownership::Transferred), InvalidNullHandle);
        check_err!(Context::from_native(env.device(), null, Ownership::Shared), InvalidNullHandle);
        Event::from_native(env.context(), null, Ownership::Shared)?
    };
    check_eq!(done.status(), EventStatus::Complete);
    done.wait()?;
    let buf = env.buffer(16)?;
    env.queue()?.fill_buffer(&buf, &[3], 0, 16, &[&done])?.wait()?;
    let other_view = if env.device().is_emulated() { env.device().native() } else { env.device().emulated() };
    let queue = env.queue()?;
    let native = handle_or_stand_in(queue.native_handle());
    // SAFETY: the queue's own handle, refused for the device before any adapter sees it.
    let adopted = unsafe { Queue::from_native(env.context(), Some(&other_view), native, Ownership::Shared) };
    check_err!(adopted, InvalidDevice);
    Ok(())
}

/// Native objects of another context are refused with the kind's error,
/// except where both contexts are one native context (OpenCL's contexts made
/// on one device share a `cl_context`); on the CPU, addresses of no live
/// buffer of the context are refused too.
fn foreign_objects(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let other_queue = Queue::new(&other, Default::default())?;
    let other_buf = MemBuffer::new(&other, MemFlags::READ_WRITE, 64)?;
    let other_event = other_queue.fill_buffer(&other_buf, &[1], 0, 64, &[])?;
    other_event.wait()?;
    // Vulkan and CUDA contexts of a device share its VkDevice or primary
    // context, and OpenCL contexts made on one device its `cl_context`, so
    // there a queue of another context is one of this context's; on OpenCL
    // its buffers and events too. A context in a `cl_context` of its own
    // refuses them (adapter-opencl/tests/cross_context.rs).
    let one_cl_context = env.device().backend() == Backend::OpenCl && env.context().uses_buffers_of(&other);
    if env.device().backend() == Backend::OpenCl {
        // SAFETY: a live queue of the backend.
        let adopted =
            unsafe { Queue::from_native(env.context(), None, other_queue.native_handle()?, Ownership::Shared) };
        if one_cl_context {
            check_eq!(adopted?.native_handle()?, other_queue.native_handle()?);
        } else {
            check_err!(adopted, InvalidQueue);
        }
    }
    if adopts(env, Kind::Buffer) {
        // SAFETY: a live buffer of the backend.
        let adopted = unsafe { MemBuffer::from_native(env.context(), other_buf.native_handle()?, Ownership::Shared) };
        if one_cl_context {
            check_eq!(adopted?.native_handle()?, other_buf.native_handle()?);
        } else {
            check_err!(adopted, InvalidMemObject);
        }
    }
    if adopts(env, Kind::Event) {
        // SAFETY: a live event of the backend.
        let adopted = unsafe { Event::from_native(env.context(), other_event.native_handle()?, Ownership::Shared) };
        if one_cl_context {
            adopted?.wait()?;
        } else {
            check_err!(adopted, InvalidEvent);
        }
    }
    if env.device().backend() == Backend::Cpu {
        let gone = {
            let buf = env.buffer(64)?;
            buf.native_handle()?
        };
        // SAFETY: the CPU adapter compares the value with its live buffers.
        unsafe {
            check_err!(MemBuffer::from_native(env.context(), gone, Ownership::Shared), InvalidMemObject);
            check_err!(
                MemBuffer::from_native(env.context(), NativeHandle(0x1000), Ownership::Shared),
                InvalidMemObject
            );
        }
    }
    if matches!(env.device().backend(), Backend::Cuda | Backend::Vulkan) {
        // SAFETY: compared with the device's VkDevice or primary context, never used.
        let adopted = unsafe { Context::from_native(env.device(), NativeHandle(0x1000), Ownership::Shared) };
        check_err!(adopted, InvalidContext);
        // SAFETY: the context's own, whose ownership stays with the adapter.
        let adopted =
            unsafe { Context::from_native(env.device(), env.context().native_handle()?, Ownership::Transferred) };
        check_err!(adopted, UnsupportedFeature);
    }
    if env.device().backend() == Backend::Vulkan {
        // SAFETY: compared with the device's VkQueues, never used.
        let adopted = unsafe { Queue::from_native(env.context(), None, NativeHandle(0x1000), Ownership::Shared) };
        check_err!(adopted, InvalidQueue);
    }
    Ok(())
}
