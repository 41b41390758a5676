//! Events the host completes, and host tasks built on them: eager commands,
//! command-buffer enqueues and command-buffer commands that wait for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use cmdbuf::{AppendOptions, CommandBufferDesc, EventStatus, UserEvent, UsmKind};

use crate::harness::{CaseResult, Env, read, write};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["user_events";
        eager_command_waits,
        enqueue_waits,
        appended_command_waits => Requires::EVENTS,
        complete_twice,
        failure_orders_only,
        dropped_event_fails,
        host_task_in_order => Requires::HOST_USM,
        host_task_out_of_order => Requires::OUT_OF_ORDER.and(Requires::HOST_USM),
        host_task_panic,
    ]
}

/// Long enough for a command that ignored its wait list to have run.
const SETTLE: Duration = Duration::from_millis(30);

fn eager_command_waits(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(16)?;
    write(&queue, mem.ptr(), &[0u32; 16])?;
    let gate = UserEvent::new(env.context())?;
    let fill = queue.usm_fill(mem.ptr(), &7u32.to_le_bytes(), 64, &[gate.event()])?;
    std::thread::sleep(SETTLE);
    check!(!fill.status().is_terminal(), "the fill ran before the user event completed");
    check!(!gate.event().status().is_terminal());
    gate.complete()?;
    fill.wait()?;
    check_eq!(gate.event().status(), EventStatus::Complete);
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![7u32; 16]);
    Ok(())
}

fn enqueue_waits(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(16)?;
    write(&queue, mem.ptr(), &[0u32; 16])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_usm_fill(mem.ptr(), &9u32.to_le_bytes(), 64, AppendOptions::new())?;
    cb.finalize()?;
    let gate = UserEvent::new(env.context())?;
    let run = queue.enqueue_command_buffer(&cb, &[gate.event()])?;
    std::thread::sleep(SETTLE);
    check!(!run.status().is_terminal(), "the command buffer ran before the user event completed");
    gate.complete()?;
    run.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![9u32; 16]);
    Ok(())
}

/// A command waiting on a user event: the first execution waits for it; once
/// complete it stays complete, so the second does not.
fn appended_command_waits(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(16)?;
    write(&queue, mem.ptr(), &[0u32; 16])?;
    let gate = UserEvent::new(env.context())?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let waits = [gate.event()];
    cb.append_usm_fill(mem.ptr(), &5u32.to_le_bytes(), 64, AppendOptions::new().wait_events(&waits))?;
    cb.finalize()?;
    let first = queue.enqueue_command_buffer(&cb, &[])?;
    std::thread::sleep(SETTLE);
    check!(!first.status().is_terminal(), "the command ran before its user event completed");
    gate.complete()?;
    first.wait()?;
    write(&queue, mem.ptr(), &[0u32; 16])?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![5u32; 16]);
    Ok(())
}

fn complete_twice(env: &Env) -> CaseResult {
    let gate = UserEvent::new(env.context())?;
    gate.complete()?;
    check_err!(gate.complete(), InvalidOperation);
    check_err!(gate.fail("late"), InvalidOperation);
    gate.event().wait()?;
    Ok(())
}

/// A failed user event reports its error; commands waiting on it still run.
fn failure_orders_only(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(4)?;
    let gate = UserEvent::new(env.context())?;
    let fill = queue.usm_fill(mem.ptr(), &3u32.to_le_bytes(), 16, &[gate.event()])?;
    gate.fail("the producer gave up")?;
    check_err!(gate.event().wait(), AdapterSpecific);
    check_eq!(gate.event().status(), EventStatus::Error);
    fill.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), 4)?, vec![3u32; 4]);
    Ok(())
}

fn dropped_event_fails(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm_u32(4)?;
    let (event, fill) = {
        let gate = UserEvent::new(env.context())?;
        let fill = queue.usm_fill(mem.ptr(), &[1], 16, &[gate.event()])?;
        (gate.event().clone(), fill)
    };
    check_err!(event.wait(), AdapterSpecific);
    fill.wait()?;
    Ok(())
}

/// On an in-order queue a host task runs after the commands before it, and
/// the commands after it wait for it.
fn host_task_in_order(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Host, 16)?;
    let host = mem.host_ptr().ok_or_else(|| crate::CaseError::Fail("host USM has no host address".into()))? as usize;
    queue.usm_fill(mem.ptr(), &2u32.to_le_bytes(), 16, &[])?;
    let seen = Arc::new(AtomicU32::new(0));
    let seen_in_task = seen.clone();
    let task = queue.enqueue_host_task(&[], move || {
        std::thread::sleep(SETTLE);
        // SAFETY: the allocation has 16 bytes and no command touches it while
        // the task runs (the queue is in order).
        let value = unsafe { (host as *mut u32).read_volatile() };
        seen_in_task.store(value, Ordering::SeqCst);
        // SAFETY: as above.
        unsafe { (host as *mut u32).write_volatile(value * 10) };
    })?;
    let after = queue.usm_memcpy(mem.ptr().byte_add(4), mem.ptr(), 4, &[])?;
    after.wait()?;
    check!(task.status().is_terminal(), "a command after the host task finished first");
    check_eq!(seen.load(Ordering::SeqCst), 2, "the task ran before the fill before it");
    check_eq!(read::<u32>(&queue, mem.ptr(), 4)?, vec![20, 20, 2, 2]);
    Ok(())
}

fn host_task_out_of_order(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let mem = env.usm(UsmKind::Host, 4)?;
    let host = mem.host_ptr().ok_or_else(|| crate::CaseError::Fail("host USM has no host address".into()))? as usize;
    let fill = queue.usm_fill(mem.ptr(), &4u32.to_le_bytes(), 4, &[])?;
    let task = queue.enqueue_host_task(&[&fill], move || {
        // SAFETY: 4 bytes; the fill it waits for has completed and nothing else touches it.
        unsafe { (host as *mut u32).write_volatile((host as *mut u32).read_volatile() + 1) };
    })?;
    let copy_dst = env.usm_u32(1)?;
    queue.usm_memcpy(copy_dst.ptr(), mem.ptr(), 4, &[&task])?.wait()?;
    check_eq!(read::<u32>(&queue, copy_dst.ptr(), 1)?, vec![5]);
    Ok(())
}

fn host_task_panic(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let task = queue.enqueue_host_task(&[], || panic!("host task failure for the test"))?;
    let err = match task.wait() {
        Err(e @ cmdbuf::UrError::AdapterSpecific(_)) => e,
        other => return Err(crate::CaseError::Fail(format!("expected AdapterSpecific, got {other:?}"))),
    };
    check!(err.to_string().contains("host task failure for the test"), "{err}");
    // The queue carries on.
    let mem = env.usm_u32(1)?;
    queue.usm_fill(mem.ptr(), &[6], 4, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 4)?, vec![6u8; 4]);
    Ok(())
}
