//! Adopting native OpenCL objects (`ur*CreateWithNativeHandle`, see
//! `cmdbuf_core::adopt`): the driver is asked which context and device an
//! object belongs to, and anything not of this context and device is
//! refused. Programs and kernels get signatures derived from
//! `CL_KERNEL_NUM_ARGS` and `clGetKernelArgInfo` (`crate::program`). A shared handle is retained, so that the adopted object and
//! the application each release their own reference.

use std::sync::Arc;

use cl3::info_type::InfoType;
use cl3::types::{cl_command_queue, cl_event, cl_int, cl_kernel, cl_mem, cl_program};
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{AdoptedBuffer, Ownership};

use crate::conv::ClResultExt;
use crate::device::Shared;
use crate::event::ClEvent;
use crate::ffi::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CL_QUEUE_PROFILING_ENABLE, RawEvent};
use crate::memory::ClBuffer;
use crate::program::{ClKernel, ClProgram, HeldProgram, KernelOrigin, derived_signature};
use crate::queue::ClQueue;

const CL_QUEUE_ON_DEVICE: u64 = 1 << 2;
const CL_MEM_OBJECT_BUFFER: u32 = 0x10F0;
const CL_MEM_READ_WRITE: u64 = 1 << 0;
const CL_MEM_ALLOC_HOST_PTR: u64 = 1 << 4;

/// A pointer-valued answer of a `clGet*Info` query.
fn ptr(answer: std::result::Result<InfoType, cl_int>, what: &str) -> Result<isize> {
    match answer.cl(what)? {
        InfoType::Ptr(p) => Ok(p),
        other => Err(err!(Unknown, "{what}: unexpected answer {other:?}")),
    }
}

/// Takes a reference of our own unless the caller's is handed over.
pub(crate) fn keep(
    ownership: Ownership,
    retain: impl FnOnce() -> std::result::Result<(), cl_int>,
    what: &str,
) -> Result<()> {
    match ownership {
        Ownership::Shared => retain().cl(what),
        Ownership::Transferred => Ok(()),
    }
}

/// Adopts a host-side `cl_command_queue` of this context and device.
///
/// # Safety
/// `handle` is a live `cl_command_queue`.
pub(crate) unsafe fn queue(
    shared: &Arc<Shared>,
    handle: NativeHandle,
    ownership: Ownership,
) -> Result<(Box<dyn QueueImpl>, QueueProperties)> {
    let raw = handle.0 as cl_command_queue;
    let info = |name| cl3::command_queue::get_command_queue_info(raw, name);
    let context = ptr(info(cl3::command_queue::CL_QUEUE_CONTEXT), "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)")?;
    let device = ptr(info(cl3::command_queue::CL_QUEUE_DEVICE), "clGetCommandQueueInfo(CL_QUEUE_DEVICE)")?;
    if context != shared.context.get() as isize || device != shared.device.id as isize {
        return Err(err!(InvalidQueue, "the native queue belongs to another context or device"));
    }
    let flags = match info(cl3::command_queue::CL_QUEUE_PROPERTIES).cl("clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)")? {
        InfoType::Ulong(flags) => flags,
        other => return Err(err!(Unknown, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES): unexpected answer {other:?}")),
    };
    if flags & CL_QUEUE_ON_DEVICE != 0 {
        return Err(err!(UnsupportedFeature, "device-side queues are not adopted (UR has none)"));
    }
    let properties = QueueProperties {
        out_of_order: flags & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0,
        profiling: flags & CL_QUEUE_PROFILING_ENABLE != 0,
    };
    // SAFETY: a live queue (the contract).
    keep(ownership, || unsafe { cl3::command_queue::retain_command_queue(raw) }, "clRetainCommandQueue")?;
    Ok((Box::new(ClQueue::adopt(shared.clone(), raw, properties)), properties))
}

/// Adopts a root `cl_mem` buffer of this context that kernels may read and
/// write.
///
/// # Safety
/// `handle` is a live `cl_mem`.
pub(crate) unsafe fn buffer(shared: &Shared, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedBuffer> {
    let raw = handle.0 as cl_mem;
    let info = |name| cl3::memory::get_mem_object_info(raw, name);
    let invalid = |why: &str| -> UrError { err!(InvalidMemObject, "the native memory object {why}") };
    if ptr(info(cl3::memory::CL_MEM_CONTEXT), "clGetMemObjectInfo(CL_MEM_CONTEXT)")? != shared.context.get() as isize {
        return Err(invalid("belongs to another context"));
    }
    if !matches!(
        info(cl3::memory::CL_MEM_TYPE).cl("clGetMemObjectInfo(CL_MEM_TYPE)")?,
        InfoType::Uint(CL_MEM_OBJECT_BUFFER)
    ) {
        return Err(invalid("is not a buffer"));
    }
    if ptr(info(cl3::memory::CL_MEM_ASSOCIATED_MEMOBJECT), "clGetMemObjectInfo(CL_MEM_ASSOCIATED_MEMOBJECT)")? != 0 {
        return Err(err!(
            UnsupportedFeature,
            "a sub-buffer is not adopted: cmdbuf-core sub-buffers are views of adopted roots"
        ));
    }
    let InfoType::Size(size) = info(cl3::memory::CL_MEM_SIZE).cl("clGetMemObjectInfo(CL_MEM_SIZE)")? else {
        return Err(err!(Unknown, "clGetMemObjectInfo(CL_MEM_SIZE): unexpected answer"));
    };
    let InfoType::Ulong(cl_flags) = info(cl3::memory::CL_MEM_FLAGS).cl("clGetMemObjectInfo(CL_MEM_FLAGS)")? else {
        return Err(err!(Unknown, "clGetMemObjectInfo(CL_MEM_FLAGS): unexpected answer"));
    };
    // The adapter's own copy and fill kernels write any buffer, whatever the
    // access the application declared, so a read- or write-only object
    // would be used against its flags.
    if cl_flags & CL_MEM_READ_WRITE == 0 {
        return Err(err!(
            UnsupportedFeature,
            "only CL_MEM_READ_WRITE buffers are adopted: the adapter's copy kernels read and write every buffer"
        ));
    }
    let mut flags = MemFlags::READ_WRITE;
    if cl_flags & CL_MEM_ALLOC_HOST_PTR != 0 {
        flags |= MemFlags::ALLOC_HOST_POINTER;
    }
    // SAFETY: a live memory object (the contract).
    keep(ownership, || unsafe { cl3::memory::retain_mem_object(raw) }, "clRetainMemObject")?;
    let imp: Box<dyn BufferImpl> = Box::new(ClBuffer::adopt(raw));
    Ok(AdoptedBuffer { imp, size, flags })
}

/// Adopts a `cl_event` of this context; it has profiling information when
/// its queue profiles.
///
/// # Safety
/// `handle` is a live `cl_event`.
pub(crate) unsafe fn event(shared: &Shared, handle: NativeHandle, ownership: Ownership) -> Result<Arc<dyn EventImpl>> {
    let raw = handle.0 as cl_event;
    let info = |name| cl3::event::get_event_info(raw, name);
    if ptr(info(cl3::event::CL_EVENT_CONTEXT), "clGetEventInfo(CL_EVENT_CONTEXT)")? != shared.context.get() as isize {
        return Err(err!(InvalidEvent, "the native event belongs to another context"));
    }
    let queue = ptr(info(cl3::event::CL_EVENT_COMMAND_QUEUE), "clGetEventInfo(CL_EVENT_COMMAND_QUEUE)")?;
    let profiling = queue != 0
        && matches!(
            cl3::command_queue::get_command_queue_info(queue as cl_command_queue, cl3::command_queue::CL_QUEUE_PROPERTIES),
            Ok(InfoType::Ulong(flags)) if flags & CL_QUEUE_PROFILING_ENABLE != 0
        );
    // SAFETY: a live event (the contract).
    keep(ownership, || unsafe { cl3::event::retain_event(raw) }, "clRetainEvent")?;
    // SAFETY: a reference this event now owns.
    let raw = unsafe { RawEvent::from_raw(raw) };
    Ok(ClEvent::command(raw, profiling))
}

const CL_PROGRAM_CONTEXT: u32 = 0x1161;
const CL_PROGRAM_DEVICES: u32 = 0x1163;
const CL_PROGRAM_KERNEL_NAMES: u32 = 0x1168;
const CL_PROGRAM_IL: u32 = 0x1169;
const CL_PROGRAM_BUILD_STATUS: u32 = 0x1181;
const CL_PROGRAM_BINARY_TYPE: u32 = 0x1184;
const CL_PROGRAM_BINARY_TYPE_EXECUTABLE: u32 = 0x4;
const CL_BUILD_SUCCESS: i32 = 0;
const CL_KERNEL_FUNCTION_NAME: u32 = 0x1190;
const CL_KERNEL_CONTEXT: u32 = 0x1193;
const CL_KERNEL_PROGRAM: u32 = 0x1194;

/// The text of a string-valued `clGet*Info` answer, without its NUL.
fn text(answer: std::result::Result<InfoType, cl_int>, what: &str) -> Result<String> {
    match answer.cl(what)? {
        InfoType::VecUchar(bytes) => Ok(String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string()),
        other => Err(err!(Unknown, "{what}: unexpected answer {other:?}")),
    }
}

/// Adopts a `cl_program` of this context built for its device: its
/// kernels (`CL_PROGRAM_KERNEL_NAMES`) with signatures derived from the
/// driver's answers.
///
/// # Safety
/// `handle` is a live `cl_program`.
pub(crate) unsafe fn program(
    shared: &Arc<Shared>,
    handle: NativeHandle,
    ownership: Ownership,
) -> Result<cmdbuf_core::adapter::AdoptedProgram> {
    let raw = handle.0 as cl_program;
    let info = |name| cl3::program::get_program_info(raw, name);
    if ptr(info(CL_PROGRAM_CONTEXT), "clGetProgramInfo(CL_PROGRAM_CONTEXT)")? != shared.context.get() as isize {
        return Err(err!(InvalidProgram, "the native program belongs to another context"));
    }
    let device = shared.device.id;
    match info(CL_PROGRAM_DEVICES).cl("clGetProgramInfo(CL_PROGRAM_DEVICES)")? {
        InfoType::VecIntPtr(devices) if devices.contains(&(device as isize)) => {}
        _ => return Err(err!(InvalidProgram, "the native program is not for the device {}", shared.device.info.name)),
    }
    let build = |name| cl3::program::get_program_build_info(raw, device, name);
    let status = build(CL_PROGRAM_BUILD_STATUS).cl("clGetProgramBuildInfo(CL_PROGRAM_BUILD_STATUS)")?;
    let binary_type = build(CL_PROGRAM_BINARY_TYPE).cl("clGetProgramBuildInfo(CL_PROGRAM_BINARY_TYPE)")?;
    if !matches!(
        (&status, &binary_type),
        (&InfoType::Int(CL_BUILD_SUCCESS), &InfoType::Uint(CL_PROGRAM_BINARY_TYPE_EXECUTABLE))
    ) {
        return Err(err!(
            InvalidProgramExecutable,
            "the native program is not built for the device (build status {status:?}, binary type {binary_type:?}): \
             programs are adopted once built (clBuildProgram or clLinkProgram)"
        ));
    }
    // SAFETY: a live program (the contract).
    keep(ownership, || unsafe { cl3::program::retain_program(raw) }, "clRetainProgram")?;
    // From here the reference is ours and released on every path.
    let program = ClProgram::adopted(shared.clone(), HeldProgram(raw));
    let names = text(info(CL_PROGRAM_KERNEL_NAMES), "clGetProgramInfo(CL_PROGRAM_KERNEL_NAMES)")?;
    let kernels = names
        .split(';')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|name| derived_signature(program.raw_kernel(name)?.get(), name))
        .collect::<Result<Vec<_>>>()?;
    // A program made from IL has its IL (OpenCL 2.1): its kernels are SPIR-V's.
    let from_il = matches!(info(CL_PROGRAM_IL), Ok(InfoType::VecUchar(il)) if !il.is_empty());
    let form = if from_il { SourceForm::SpirvKernel } else { SourceForm::OpenClC };
    tracing::debug!(kernels = kernels.len(), %form, "adopted an OpenCL program");
    Ok(cmdbuf_core::adapter::AdoptedProgram { imp: Box::new(program), kernels, form })
}

/// Adopts a `cl_kernel` of this context, with a signature derived from the
/// driver's answers.
///
/// # Safety
/// `handle` is a live `cl_kernel`.
pub(crate) unsafe fn kernel(
    shared: &Arc<Shared>,
    handle: NativeHandle,
    ownership: Ownership,
) -> Result<cmdbuf_core::adapter::AdoptedKernel> {
    let raw = handle.0 as cl_kernel;
    let info = |name| cl3::kernel::get_kernel_info(raw, name);
    if ptr(info(CL_KERNEL_CONTEXT), "clGetKernelInfo(CL_KERNEL_CONTEXT)")? != shared.context.get() as isize {
        return Err(err!(InvalidKernel, "the native kernel belongs to another context"));
    }
    let program = ptr(info(CL_KERNEL_PROGRAM), "clGetKernelInfo(CL_KERNEL_PROGRAM)")?;
    let name = text(info(CL_KERNEL_FUNCTION_NAME), "clGetKernelInfo(CL_KERNEL_FUNCTION_NAME)")?;
    let signature = derived_signature(raw, &name)?;
    // SAFETY: a live kernel (the contract).
    keep(ownership, || unsafe { cl3::kernel::retain_kernel(raw) }, "clRetainKernel")?;
    let imp = ClKernel::boxed(shared, opencl3::kernel::Kernel::new(raw), &name, KernelOrigin::Adopted)?;
    Ok(cmdbuf_core::adapter::AdoptedKernel { program: NativeHandle(program as u64), signature, imp })
}
