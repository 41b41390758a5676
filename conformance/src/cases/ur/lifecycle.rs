//! Creation, finalize, enqueue, retain/release, queries, and the state
//! machine errors UR leaves open (append after finalize, enqueue before
//! finalize, foreign and future sync points).

use cmdbuf::{
    AppendOptions, CommandBufferDesc, CommandBufferSupport, Context, EventStatus, KernelArg, KernelLaunch, MemBuffer,
    MemFlags, MigrationFlags, Queue, QueueProperties, RectLayout, RectRegion, UsmAdvice, UsmAllocation, UsmKind,
};

use crate::harness::{CaseResult, Env, read, write};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["lifecycle";
        empty_buffer_enqueues,
        finalize_twice,
        append_after_finalize,
        enqueue_before_finalize,
        retain_release,
        descriptor_query,
        updatable_creation,
        native_handle,
        queue_of_other_context,
        device_of_other_context,
        foreign_sync_point,
        future_sync_point,
        duplicate_sync_point,
        events_without_support,
        enqueue_twice,
        drop_while_executing,
        memory_outlives_its_handle,
    ]
}

fn empty_buffer_enqueues(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    check!(cb.is_empty());
    cb.finalize()?;
    check!(cb.is_finalized());
    let queue = env.queue()?;
    let event = queue.enqueue_command_buffer(&cb, &[])?;
    event.wait()?;
    check_eq!(event.status(), EventStatus::Complete);
    Ok(())
}

fn finalize_twice(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.finalize()?;
    check_err!(cb.finalize(), InvalidOperation);
    Ok(())
}

fn append_after_finalize(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let usm = env.usm_u32(16)?;
    let other = env.usm_u32(16)?;
    let buffer = env.buffer(64)?;
    let kernel = env.kernel("fill")?;
    cb.finalize()?;
    let none = AppendOptions::new;
    check_err!(cb.append_usm_fill(usm.ptr(), &[1, 2, 3, 4], 64, none()), InvalidOperation);
    check_err!(cb.append_usm_memcpy(usm.ptr(), other.ptr(), 64, none()), InvalidOperation);
    check_err!(cb.append_usm_prefetch(usm.ptr(), 64, MigrationFlags::HOST_TO_DEVICE, none()), InvalidOperation);
    check_err!(cb.append_usm_advise(usm.ptr(), 64, UsmAdvice::SET_READ_MOSTLY, none()), InvalidOperation);
    check_err!(cb.append_buffer_fill(&buffer, &[0], 0, 64, none()), InvalidOperation);
    check_err!(cb.append_buffer_read(&buffer, 0, 64, usm.ptr(), none()), InvalidOperation);
    check_err!(cb.append_buffer_write(&buffer, 0, 64, usm.ptr(), none()), InvalidOperation);
    let region = RectRegion::new(8, 2, 1);
    check_err!(
        cb.append_buffer_copy_rect(
            &buffer,
            &env.buffer(64)?,
            RectLayout::packed(),
            RectLayout::packed(),
            region,
            none()
        ),
        InvalidOperation
    );
    let value = 7u32;
    let args = [KernelArg::Pointer(usm.ptr()), KernelArg::value(&value)];
    // SAFETY: `fill` writes 16 u32s into a 16-u32 allocation.
    let launched = unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[16], &args), &[], none()) };
    check_err!(launched, InvalidOperation);
    check_eq!(cb.len(), 0);
    Ok(())
}

fn enqueue_before_finalize(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let usm = env.usm_u32(4)?;
    cb.append_usm_fill(usm.ptr(), &[1], 16, AppendOptions::new())?;
    check_err!(env.queue()?.enqueue_command_buffer(&cb, &[]), InvalidOperation);
    Ok(())
}

fn retain_release(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let before = cb.reference_count();
    let retained = cb.clone();
    check_eq!(cb.reference_count(), before + 1);
    check_eq!(retained.reference_count(), before + 1);
    drop(retained);
    check_eq!(cb.reference_count(), before);
    Ok(())
}

fn descriptor_query(env: &Env) -> CaseResult {
    for desc in [
        CommandBufferDesc::default(),
        CommandBufferDesc { in_order: true, ..Default::default() },
        CommandBufferDesc { profiling: true, in_order: true, ..Default::default() },
    ] {
        check_eq!(env.command_buffer(desc)?.descriptor(), desc);
    }
    let caps = env.device().info().command_buffer;
    if !caps.update.is_empty() {
        let desc = CommandBufferDesc { updatable: true, ..Default::default() };
        check_eq!(env.command_buffer(desc)?.descriptor(), desc);
    }
    Ok(())
}

/// UR's `InvalidCreationTest.Update`: an updatable buffer needs update
/// capabilities; the device decides which half of the case runs.
fn updatable_creation(env: &Env) -> CaseResult {
    let desc = CommandBufferDesc { updatable: true, ..Default::default() };
    let result = cmdbuf::CommandBuffer::new(env.context(), env.device(), desc);
    if env.device().info().command_buffer.update.is_empty() {
        check_err!(result, UnsupportedFeature);
    } else {
        check!(result?.descriptor().updatable);
    }
    Ok(())
}

/// The native object: the executable object an enqueue submits, so none
/// before finalize on every device (`InvalidOperation`), and none at all for
/// software and pre-planned buffers; and the replay path the device reports
/// for it.
fn native_handle(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    check_err!(cb.native_handle(), InvalidOperation);
    let buffer = MemBuffer::new(env.context(), MemFlags::READ_WRITE, 64)?;
    cb.append_buffer_fill(&buffer, &[1], 0, 64, AppendOptions::new())?;
    check_err!(cb.native_handle(), InvalidOperation);
    cb.finalize()?;
    // A pre-planned buffer (OpenCL's planned replay path) has no driver object.
    let planned = env.device().info().command_buffer.replay_path == cmdbuf::ReplayPath::Planned;
    match cb.support() {
        CommandBufferSupport::Native if !planned => check!(cb.native_handle()?.0 != 0),
        _ => check_err!(cb.native_handle(), UnsupportedFeature),
    }
    check_eq!(cb.support(), env.device().info().command_buffer.support);
    // Only the software command buffer reports the software replay path.
    let software = env.device().info().command_buffer.replay_path == cmdbuf::ReplayPath::Software;
    check_eq!(software, cb.support() == CommandBufferSupport::Emulated);
    Ok(())
}

fn queue_of_other_context(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.finalize()?;
    let other = Context::new(env.device())?;
    let queue = Queue::new(&other, QueueProperties::default())?;
    check_err!(queue.enqueue_command_buffer(&cb, &[]), InvalidQueue);
    Ok(())
}

/// The other view of the same device (native or emulated) is another device
/// for a context.
fn device_of_other_context(env: &Env) -> CaseResult {
    let other_view = if env.device().is_emulated() { env.device().native() } else { env.device().emulated() };
    check!(other_view != *env.device());
    check_err!(cmdbuf::CommandBuffer::new(env.context(), &other_view, CommandBufferDesc::default()), InvalidDevice);
    Ok(())
}

fn foreign_sync_point(env: &Env) -> CaseResult {
    let a = env.command_buffer(CommandBufferDesc::default())?;
    let b = env.command_buffer(CommandBufferDesc::default())?;
    let usm = env.usm_u32(4)?;
    let sp = a.append_usm_fill(usm.ptr(), &[1], 16, AppendOptions::new())?.sync_point;
    b.append_usm_fill(usm.ptr(), &[2], 16, AppendOptions::new())?;
    check_err!(b.append_usm_fill(usm.ptr(), &[3], 16, AppendOptions::new().after(&[sp])), InvalidSyncPointWaitList);
    check_eq!(b.len(), 1);
    Ok(())
}

fn future_sync_point(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let usm = env.usm_u32(4)?;
    let appended = cb.append_usm_fill(usm.ptr(), &[1], 16, AppendOptions::new())?;
    check_eq!(cb.sync_point_from_raw(0), appended.sync_point);
    let future = [cb.sync_point_from_raw(1)];
    check_err!(cb.append_usm_fill(usm.ptr(), &[3], 16, AppendOptions::new().after(&future)), InvalidSyncPointWaitList);
    let far = [cb.sync_point_from_raw(u32::MAX)];
    check_err!(cb.append_usm_fill(usm.ptr(), &[3], 16, AppendOptions::new().after(&far)), InvalidSyncPointWaitList);
    Ok(())
}

/// UR's `DuplicateSyncPoint`: the same sync point twice in one list is fine.
fn duplicate_sync_point(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let usm = env.usm_u32(4)?;
    let sp = cb.append_usm_fill(usm.ptr(), &[1], 16, AppendOptions::new())?.sync_point;
    cb.append_usm_fill(usm.ptr(), &[9], 8, AppendOptions::new().after(&[sp, sp]))?;
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, usm.ptr(), 16)?, [vec![9u8; 8], vec![1u8; 8]].concat());
    Ok(())
}

fn events_without_support(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let usm = env.usm_u32(4)?;
    let result = cb.append_usm_fill(usm.ptr(), &[1], 16, AppendOptions::new().signal_event());
    if env.device().info().command_buffer.events {
        check!(result?.event.is_some());
    } else {
        check_err!(result, UnsupportedFeature);
    }
    Ok(())
}

fn enqueue_twice(env: &Env) -> CaseResult {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let counter = env.usm_u32(1)?;
    let queue = env.queue()?;
    write(&queue, counter.ptr(), &[0u32])?;
    let kernel = env.kernel("increment")?;
    let args = [KernelArg::Pointer(counter.ptr())];
    // SAFETY: one work-item increments the one-element counter.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[1], &args), &[], AppendOptions::new())? };
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?;
    queue.enqueue_command_buffer(&cb, &[])?;
    queue.finish()?;
    check_eq!(read::<u32>(&queue, counter.ptr(), 1)?, vec![2]);
    Ok(())
}

/// UR's `EnqueueAndRelease`: dropping every handle while the buffer runs.
fn drop_while_executing(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let counter = env.usm_u32(1024)?;
    write(&queue, counter.ptr(), &[0u32; 1024])?;
    let kernel = env.kernel("increment")?;
    let event = {
        let cb = env.command_buffer(CommandBufferDesc { in_order: true, ..Default::default() })?;
        let args = [KernelArg::Pointer(counter.ptr())];
        for _ in 0..64 {
            // SAFETY: 1024 work-items increment a 1024-element allocation.
            unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[1024], &args), &[], AppendOptions::new())? };
        }
        cb.finalize()?;
        queue.enqueue_command_buffer(&cb, &[])?
    };
    event.wait()?;
    check_eq!(read::<u32>(&queue, counter.ptr(), 1024)?, vec![64u32; 1024]);
    Ok(())
}

/// Memory recorded in a command buffer stays alive after its handle drops.
fn memory_outlives_its_handle(env: &Env) -> CaseResult {
    let context = Context::new(env.device())?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let cb = cmdbuf::CommandBuffer::new(&context, env.device(), CommandBufferDesc::default())?;
    let result = UsmAllocation::new(&context, UsmKind::Device, 64)?;
    {
        let scratch = UsmAllocation::new(&context, UsmKind::Device, 64)?;
        let buffer = MemBuffer::new(&context, MemFlags::READ_WRITE, 64)?;
        let fill = cb.append_usm_fill(scratch.ptr(), &[0xAB], 64, AppendOptions::new())?;
        let write =
            cb.append_buffer_write(&buffer, 0, 64, scratch.ptr(), AppendOptions::new().after(&[fill.sync_point]))?;
        cb.append_buffer_read(&buffer, 0, 64, result.ptr(), AppendOptions::new().after(&[write.sync_point]))?;
    }
    check_eq!(context.live_usm_allocations(), 2, "the command buffer keeps the scratch allocation");
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, result.ptr(), 64)?, vec![0xABu8; 64]);
    drop(cb);
    queue.finish()?;
    // A worker may drop its last reference to the finished submission just
    // after signalling it: the allocation is freed soon, not at that instant.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while context.live_usm_allocations() > 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    check_eq!(context.live_usm_allocations(), 1, "dropping the command buffer frees the scratch allocation");
    Ok(())
}
