//! Kernel commands synchronised through events (UR's
//! `kernel_event_sync.cpp`): eager work -> kernel command -> eager work, two
//! command buffers ordered by a signal event across re-runs, and a signal
//! event waited on before any enqueue. Every party runs on its own queue and
//! the first is held back by a gate, so only the events order them.

use cmdbuf::{AppendOptions, CommandBufferDesc, Event, EventStatus, KernelArg, KernelLaunch, Queue, UsmAllocation};

use super::event_sync::{gate, signal_of};
use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::kernels::saxpy_reference;
use crate::{Requires, cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["kernel_event_sync";
        basic => Requires::EVENTS,
        inter_command_buffer => Requires::EVENTS,
        signal_wait_before_enqueue => Requires::EVENTS,
        signal_rearmed_each_enqueue => Requires::EVENTS,
        kernel_chain_across_queues => Requires::EVENTS,
    ]
}

const N: usize = 64;
const A: u32 = 2;
const PATTERN_X: u32 = 42;
const PATTERN_Y: u32 = 0xA;

/// `count` zeroed N-element allocations.
fn zeroed(env: &Env, queue: &Queue, count: usize) -> Result<Vec<UsmAllocation>, CaseError> {
    (0..count)
        .map(|_| {
            let mem = env.usm_u32(N)?;
            write(queue, mem.ptr(), &[0u32; N])?;
            Ok(mem)
        })
        .collect()
}

fn read_after(queue: &Queue, mem: &UsmAllocation, wait: &[&Event]) -> Result<Vec<u32>, CaseError> {
    let mut out = vec![0u32; N];
    queue.read_usm(mem.ptr(), bytemuck::cast_slice_mut(&mut out), wait)?;
    Ok(out)
}

fn saxpy_expected(x: u32, y: u32) -> Vec<u32> {
    saxpy_reference(A, &[x; N], &[y; N])
}

/// UR's `Basic`: an eager fill of X (behind a gate) -> a saxpy command
/// waiting on it and signalling -> an eager read waiting on that signal.
fn basic(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let mem = zeroed(env, &setup, 4)?;
    let (x, y, z, out) = (&mem[0], &mem[1], &mem[2], &mem[3]);
    let (producer, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    let kernel = env.kernel("saxpy")?;
    let held = gate(env, &producer)?;
    let x_ready = producer.usm_fill(x.ptr(), &PATTERN_X.to_le_bytes(), N * 4, &[&held])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let fill_y = cb.append_usm_fill(y.ptr(), &PATTERN_Y.to_le_bytes(), N * 4, AppendOptions::new())?;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&A), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: N work-items over N-element Z, X and Y, which outlive the queues.
    let saxpy = unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args),
            &[],
            AppendOptions::new().after(&[fill_y.sync_point]).wait_events(&[&x_ready]).signal_event(),
        )?
    };
    let signal = signal_of(&saxpy)?;
    cb.append_usm_memcpy(out.ptr(), z.ptr(), N * 4, AppendOptions::new().after(&[saxpy.sync_point]))?;
    cb.finalize()?;
    runner.enqueue_command_buffer(&cb, &[])?;
    let expected = saxpy_expected(PATTERN_X, PATTERN_Y);
    check_eq!(read_after(&consumer, z, &[&signal])?, expected, "eager read after the signal");
    runner.finish()?;
    check_eq!(read::<u32>(&setup, out.ptr(), N)?, expected, "the buffer's own copy");
    Ok(())
}

/// UR's `InterCommandBuffer`: buffer A initialises X and Y and signals; buffer
/// B, submitted to another queue, runs saxpy waiting on that signal. A second
/// pair of submissions with new X data must be ordered the same way.
fn inter_command_buffer(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let mem = zeroed(env, &setup, 5)?;
    let (x_src, x, y, z, out) = (&mem[0], &mem[1], &mem[2], &mem[3], &mem[4]);
    let (gate_queue, first_queue, second_queue) = (env.queue()?, env.queue()?, env.queue()?);
    let kernel = env.kernel("saxpy")?;
    let first = env.command_buffer(CommandBufferDesc::default())?;
    let copy_x = first.append_usm_memcpy(x.ptr(), x_src.ptr(), N * 4, AppendOptions::new())?;
    let fill_y = first.append_usm_fill(
        y.ptr(),
        &PATTERN_Y.to_le_bytes(),
        N * 4,
        AppendOptions::new().after(&[copy_x.sync_point]).signal_event(),
    )?;
    let initialised = signal_of(&fill_y)?;
    first.finalize()?;
    let second = env.command_buffer(CommandBufferDesc::default())?;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&A), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: N work-items over N-element Z, X and Y, which outlive the queues.
    let saxpy = unsafe {
        second.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args),
            &[],
            AppendOptions::new().wait_events(&[&initialised]),
        )?
    };
    second.append_usm_memcpy(out.ptr(), z.ptr(), N * 4, AppendOptions::new().after(&[saxpy.sync_point]))?;
    second.finalize()?;
    for value in [PATTERN_X, 666] {
        write(&setup, x_src.ptr(), &[value; N])?;
        let held = gate(env, &gate_queue)?;
        first_queue.enqueue_command_buffer(&first, &[&held])?;
        second_queue.enqueue_command_buffer(&second, &[])?;
        first_queue.finish()?;
        second_queue.finish()?;
        check_eq!(read::<u32>(&setup, out.ptr(), N)?, saxpy_expected(value, PATTERN_Y), "X = {value}");
    }
    Ok(())
}

/// UR's `SignalWaitBeforeEnqueue`: the signal event of a kernel command
/// (whose wait event is still pending) is complete before any enqueue, and
/// eager work waiting on it runs without the command having run.
fn signal_wait_before_enqueue(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let mem = zeroed(env, &setup, 3)?;
    let (x, y, z) = (&mem[0], &mem[1], &mem[2]);
    let (producer, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    write(&setup, y.ptr(), &[PATTERN_Y; N])?;
    let kernel = env.kernel("saxpy")?;
    let held = gate(env, &producer)?;
    let x_ready = producer.usm_fill(x.ptr(), &PATTERN_X.to_le_bytes(), N * 4, &[&held])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&A), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: N work-items over N-element Z, X and Y, which outlive the queues.
    let saxpy = unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args),
            &[],
            AppendOptions::new().wait_events(&[&x_ready]).signal_event(),
        )?
    };
    let signal = signal_of(&saxpy)?;
    cb.finalize()?;
    signal.wait()?;
    check_eq!(signal.status(), EventStatus::Complete);
    check_eq!(read_after(&consumer, z, &[&signal])?, vec![0u32; N], "nothing ran yet");
    runner.enqueue_command_buffer(&cb, &[])?;
    check_eq!(read_after(&consumer, z, &[&signal])?, saxpy_expected(PATTERN_X, PATTERN_Y), "after the enqueue");
    runner.finish()?;
    Ok(())
}

/// A signal event is reset by each enqueue and completes with that
/// submission's command: a reader waiting on it sees each run's increment.
fn signal_rearmed_each_enqueue(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let mem = zeroed(env, &setup, 1)?;
    let counter = &mem[0];
    let (gate_queue, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    let kernel = env.kernel("increment")?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let args = [KernelArg::Pointer(counter.ptr())];
    // SAFETY: N work-items over an N-element counter, which outlives the queues.
    let increment = unsafe {
        cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new().signal_event())?
    };
    let signal = signal_of(&increment)?;
    cb.finalize()?;
    for run in 1..=3u32 {
        let held = gate(env, &gate_queue)?;
        runner.enqueue_command_buffer(&cb, &[&held])?;
        check_eq!(read_after(&consumer, counter, &[&signal])?, vec![run; N], "run {run}");
    }
    runner.finish()?;
    Ok(())
}

/// Three non-commuting steps on three queues: an eager kernel, a kernel
/// command waiting on it and signalling, and an eager kernel waiting on that:
/// `((1 * 3 + 1) * 5 + 7) * 2 + 9` (the three maps have different fixed
/// points, so any other order gives another value).
fn kernel_chain_across_queues(env: &Env) -> CaseResult {
    let setup = env.queue()?;
    let mem = zeroed(env, &setup, 1)?;
    let p = &mem[0];
    write(&setup, p.ptr(), &[1u32; N])?;
    let (producer, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    let kernel = env.kernel("axpb")?;
    let values = [(3u32, 1u32), (5, 7), (2, 9)];
    let args: Vec<[KernelArg<'_>; 3]> =
        values.iter().map(|(a, b)| [KernelArg::Pointer(p.ptr()), KernelArg::value(a), KernelArg::value(b)]).collect();
    let held = gate(env, &producer)?;
    // SAFETY: every launch has N work-items over the N-element P, which
    // outlives the queues.
    unsafe {
        let first = producer.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args[0]), &[&held])?;
        let cb = env.command_buffer(CommandBufferDesc::default())?;
        let middle = cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args[1]),
            &[],
            AppendOptions::new().wait_events(&[&first]).signal_event(),
        )?;
        let signal = signal_of(&middle)?;
        cb.finalize()?;
        runner.enqueue_command_buffer(&cb, &[])?;
        consumer.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args[2]), &[&signal])?.wait()?;
    }
    producer.finish()?;
    runner.finish()?;
    check_eq!(read::<u32>(&setup, p.ptr(), N)?, vec![63u32; N]);
    Ok(())
}
