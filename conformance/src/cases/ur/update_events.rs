//! Updating command-buffer events (UR's `update/event_sync.cpp` and
//! `update/kernel_event_sync.cpp`): after a first run ordered by its events,
//! each command gets a new wait event (from new eager work, behind a gate)
//! and a new signal event, and the next submission must be ordered by the
//! new events. Plus the errors of event updates: wrong wait-event counts,
//! signal updates of commands without one, updates before finalize, on
//! non-updatable buffers, with handles of other buffers, and with events of
//! other contexts.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, CommandHandle, Context, Event, KernelArg, KernelLaunch, Queue,
    QueueProperties, UpdateCapabilities, UsmAllocation, UsmKind,
};

use super::event_sync::{Kind, Scenario, X1, X2, Z1, Z2, gate, handle_of, signal_of};
use crate::harness::{CaseError, CaseResult, Env, fill_reference, read, write};
use crate::kernels::saxpy_reference;
use crate::{Requires, cases, check_eq, check_err};

/// Event updates, and the events themselves.
const REQ: Requires = Requires::update(UpdateCapabilities::EVENTS).and(Requires::EVENTS);

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["update_events";
        usm_memcpy => REQ,
        usm_fill => REQ,
        usm_fill_large_pattern => REQ,
        buffer_copy => REQ,
        buffer_copy_rect => REQ,
        buffer_read => REQ,
        buffer_read_rect => REQ,
        buffer_write => REQ,
        buffer_write_rect => REQ,
        buffer_fill => REQ,
        buffer_fill_large_pattern => REQ,
        usm_prefetch => REQ,
        usm_advise => REQ,
        multiple_event_commands => REQ,
        kernel_basic => REQ,
        kernel_two_wait_events => REQ,
        invalid_wait_update => REQ,
        invalid_signal_update => REQ,
        not_updatable => REQ,
        before_finalize => REQ,
        handle_of_other_buffer => REQ,
        wait_event_of_other_context => REQ,
    ]
}

/// A first round as in `event_sync`, then a second with a new producer event
/// as the command's wait event and a new signal event for the consumer.
fn two_rounds(env: &Env, kind: Kind) -> CaseResult {
    let scenario = Scenario::new(env, kind, None)?;
    let cb = env.updatable_command_buffer()?;
    let appended = scenario.first_round(env, &cb, X1, Z1)?;
    let handle = handle_of(&appended)?;
    scenario.reset()?;
    let produced = scenario.produce(env, X2)?;
    cb.update_wait_events(&handle, &[&produced])?;
    let signal = cb.update_signal_event(&handle)?;
    scenario.runner().enqueue_command_buffer(&cb, &[])?;
    let snapshot = scenario.consume(&signal, Z2)?;
    scenario.verify(X2, Z2, &snapshot)
}

fn usm_memcpy(env: &Env) -> CaseResult {
    two_rounds(env, Kind::UsmMemcpy)
}

fn usm_fill(env: &Env) -> CaseResult {
    two_rounds(env, Kind::UsmFill)
}

fn usm_fill_large_pattern(env: &Env) -> CaseResult {
    two_rounds(env, Kind::UsmFillLargePattern)
}

fn buffer_copy(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferCopy)
}

fn buffer_copy_rect(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferCopyRect)
}

fn buffer_read(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferRead)
}

fn buffer_read_rect(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferReadRect)
}

fn buffer_write(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferWrite)
}

fn buffer_write_rect(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferWriteRect)
}

fn buffer_fill(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferFill)
}

fn buffer_fill_large_pattern(env: &Env) -> CaseResult {
    two_rounds(env, Kind::BufferFillLargePattern)
}

fn usm_prefetch(env: &Env) -> CaseResult {
    two_rounds(env, Kind::UsmPrefetch)
}

fn usm_advise(env: &Env) -> CaseResult {
    two_rounds(env, Kind::UsmAdvise)
}

const BYTES: usize = 256;

fn read_after(queue: &Queue, mem: &UsmAllocation, wait: &[&Event]) -> Result<Vec<u8>, CaseError> {
    let mut out = vec![0u8; BYTES];
    queue.read_usm(mem.ptr(), &mut out, wait)?;
    Ok(out)
}

/// UR's `MultipleEventCommands` (updating each of the three commands, where
/// UR's test updates the first three times): three fills, each after its own
/// producer and with its own signal event, run twice with every event
/// replaced in between. Each fill must land after its producer's value.
fn multiple_event_commands(env: &Env) -> CaseResult {
    let mem: Vec<UsmAllocation> = (0..3).map(|_| env.usm(UsmKind::Device, BYTES)).collect::<Result<_, _>>()?;
    let (producer, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    let fills = [0xAu32, 0xB, 0xC];
    let produce = |values: [u32; 3]| -> Result<Vec<Event>, CaseError> {
        let held = gate(env, &producer)?;
        mem.iter()
            .zip(values)
            .map(|(m, v)| Ok(producer.usm_fill(m.ptr(), &v.to_le_bytes(), BYTES, &[&held])?))
            .collect()
    };
    let check_round = |signals: &[Event], round: u32| -> CaseResult {
        for (i, (m, s)) in mem.iter().zip(signals).enumerate() {
            check_eq!(
                read_after(&consumer, m, &[s])?,
                fill_reference(&fills[i].to_le_bytes(), BYTES),
                "round {round}: memory {i} after its signal event"
            );
        }
        producer.finish()?;
        runner.finish()?;
        for (i, m) in mem.iter().enumerate() {
            check_eq!(
                read::<u8>(&consumer, m.ptr(), BYTES)?,
                fill_reference(&fills[i].to_le_bytes(), BYTES),
                "round {round}: memory {i} at the end"
            );
        }
        Ok(())
    };
    let cb = env.updatable_command_buffer()?;
    let produced = produce([42, 43, 44])?;
    let mut handles: Vec<CommandHandle> = Vec::new();
    let mut signals: Vec<Event> = Vec::new();
    for ((m, value), wait) in mem.iter().zip(fills).zip(&produced) {
        let appended = cb.append_usm_fill(
            m.ptr(),
            &value.to_le_bytes(),
            BYTES,
            AppendOptions::new().wait_events(&[wait]).signal_event(),
        )?;
        handles.push(handle_of(&appended)?);
        signals.push(signal_of(&appended)?);
    }
    cb.finalize()?;
    runner.enqueue_command_buffer(&cb, &[])?;
    check_round(&signals, 1)?;
    let produced = produce([1, 2, 3])?;
    for (handle, wait) in handles.iter().zip(&produced) {
        cb.update_wait_events(handle, &[wait])?;
    }
    let signals: Vec<Event> = handles.iter().map(|h| cb.update_signal_event(h)).collect::<Result<_, _>>()?;
    runner.enqueue_command_buffer(&cb, &[])?;
    check_round(&signals, 2)
}

const N: usize = 64;
const A: u32 = 2;

/// Saxpy `Z = A*X + Y` over N-element USM.
struct Saxpy {
    x: UsmAllocation,
    y: UsmAllocation,
    z: UsmAllocation,
    out: UsmAllocation,
}

impl Saxpy {
    fn new(env: &Env) -> Result<Saxpy, CaseError> {
        let setup = env.queue()?;
        let alloc = || -> Result<UsmAllocation, CaseError> {
            let mem = env.usm_u32(N)?;
            write(&setup, mem.ptr(), &[0u32; N])?;
            Ok(mem)
        };
        Ok(Saxpy { x: alloc()?, y: alloc()?, z: alloc()?, out: alloc()? })
    }

    /// Appends the saxpy with `opts`.
    fn append(&self, env: &Env, cb: &CommandBuffer, opts: AppendOptions<'_>) -> Result<cmdbuf::Appended, CaseError> {
        let kernel = env.kernel("saxpy")?;
        let args = [
            KernelArg::Pointer(self.z.ptr()),
            KernelArg::value(&A),
            KernelArg::Pointer(self.x.ptr()),
            KernelArg::Pointer(self.y.ptr()),
        ];
        // SAFETY: N work-items over N-element X, Y and Z; every case keeps the
        // `Saxpy` alive until its queues have finished.
        Ok(unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], opts)? })
    }

    /// Reads Z after `signal` and the buffer's copy of it, checks both.
    fn check(&self, consumer: &Queue, runner: &Queue, signal: &Event, x: u32, y: u32, round: u32) -> CaseResult {
        let expected = saxpy_reference(A, &[x; N], &[y; N]);
        let mut seen = vec![0u32; N];
        consumer.read_usm(self.z.ptr(), bytemuck::cast_slice_mut(&mut seen), &[signal])?;
        check_eq!(seen, expected, "round {round}: Z read after the signal event");
        runner.finish()?;
        check_eq!(read::<u32>(consumer, self.out.ptr(), N)?, expected, "round {round}: the buffer's copy of Z");
        Ok(())
    }
}

/// UR's kernel `Basic`: the saxpy waits on an eager fill of X and signals an
/// eager read; then X is refilled, the wait event replaced by the refill's
/// and the signal event renewed.
fn kernel_basic(env: &Env) -> CaseResult {
    let saxpy = Saxpy::new(env)?;
    let (producer, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    let fill_x = |x: u32| -> Result<Event, CaseError> {
        let held = gate(env, &producer)?;
        Ok(producer.usm_fill(saxpy.x.ptr(), &x.to_le_bytes(), N * 4, &[&held])?)
    };
    let y = 0xAu32;
    let cb = env.updatable_command_buffer()?;
    let fill_y = cb.append_usm_fill(saxpy.y.ptr(), &y.to_le_bytes(), N * 4, AppendOptions::new())?;
    let x_ready = fill_x(42)?;
    let kernel = saxpy.append(
        env,
        &cb,
        AppendOptions::new().after(&[fill_y.sync_point]).wait_events(&[&x_ready]).signal_event(),
    )?;
    let (handle, signal) = (handle_of(&kernel)?, signal_of(&kernel)?);
    cb.append_usm_memcpy(saxpy.out.ptr(), saxpy.z.ptr(), N * 4, AppendOptions::new().after(&[kernel.sync_point]))?;
    cb.finalize()?;
    runner.enqueue_command_buffer(&cb, &[])?;
    saxpy.check(&consumer, &runner, &signal, 42, y, 1)?;
    producer.finish()?;

    let x_ready = fill_x(0xBEEF)?;
    cb.update_wait_events(&handle, &[&x_ready])?;
    let signal = cb.update_signal_event(&handle)?;
    runner.enqueue_command_buffer(&cb, &[])?;
    saxpy.check(&consumer, &runner, &signal, 0xBEEF, y, 2)?;
    producer.finish()?;
    Ok(())
}

/// UR's `TwoWaitEvents`: X and Y both come from eager fills (one on a gated
/// queue, one not); both wait events are replaced at once.
fn kernel_two_wait_events(env: &Env) -> CaseResult {
    let saxpy = Saxpy::new(env)?;
    let (slow, fast, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?, env.queue()?);
    let fill = |x: u32, y: u32| -> Result<[Event; 2], CaseError> {
        let held = gate(env, &slow)?;
        Ok([
            slow.usm_fill(saxpy.x.ptr(), &x.to_le_bytes(), N * 4, &[&held])?,
            fast.usm_fill(saxpy.y.ptr(), &y.to_le_bytes(), N * 4, &[])?,
        ])
    };
    let cb = env.updatable_command_buffer()?;
    let [x_ready, y_ready] = fill(42, 0xA)?;
    let kernel = saxpy.append(env, &cb, AppendOptions::new().wait_events(&[&x_ready, &y_ready]).signal_event())?;
    let (handle, signal) = (handle_of(&kernel)?, signal_of(&kernel)?);
    cb.append_usm_memcpy(saxpy.out.ptr(), saxpy.z.ptr(), N * 4, AppendOptions::new().after(&[kernel.sync_point]))?;
    cb.finalize()?;
    runner.enqueue_command_buffer(&cb, &[])?;
    saxpy.check(&consumer, &runner, &signal, 42, 0xA, 1)?;
    slow.finish()?;
    fast.finish()?;

    let [x_ready, y_ready] = fill(0xBEEF, 0xBAD)?;
    cb.update_wait_events(&handle, &[&x_ready, &y_ready])?;
    let signal = cb.update_signal_event(&handle)?;
    runner.enqueue_command_buffer(&cb, &[])?;
    saxpy.check(&consumer, &runner, &signal, 0xBEEF, 0xBAD, 2)?;
    slow.finish()?;
    fast.finish()?;
    Ok(())
}

/// UR's `InvalidWaitUpdate`: the number of wait events cannot change.
fn invalid_wait_update(env: &Env) -> CaseResult {
    let saxpy = Saxpy::new(env)?;
    let queue = env.queue()?;
    let events: Vec<Event> = [&saxpy.x, &saxpy.y, &saxpy.z]
        .iter()
        .map(|m| queue.usm_fill(m.ptr(), &1u32.to_le_bytes(), N * 4, &[]))
        .collect::<Result<_, _>>()?;
    let cb = env.updatable_command_buffer()?;
    let kernel = saxpy.append(env, &cb, AppendOptions::new().wait_events(&[&events[0]]))?;
    let handle = handle_of(&kernel)?;
    cb.finalize()?;
    check_err!(cb.update_wait_events(&handle, &[&events[1], &events[2]]), InvalidEventWaitList);
    check_err!(cb.update_wait_events(&handle, &[]), InvalidEventWaitList);
    // The count it was appended with is accepted.
    cb.update_wait_events(&handle, &[&events[1]])?;
    queue.finish()?;
    Ok(())
}

/// UR's `InvalidSignalUpdate`: a command appended without a signal event
/// cannot be given one, kernel or not.
fn invalid_signal_update(env: &Env) -> CaseResult {
    let saxpy = Saxpy::new(env)?;
    let cb = env.updatable_command_buffer()?;
    let kernel = saxpy.append(env, &cb, AppendOptions::new())?;
    let fill = cb.append_usm_fill(saxpy.out.ptr(), &[1], N * 4, AppendOptions::new())?;
    cb.finalize()?;
    check_err!(cb.update_signal_event(&handle_of(&kernel)?), InvalidOperation);
    check_err!(cb.update_signal_event(&handle_of(&fill)?), InvalidOperation);
    Ok(())
}

/// An updatable buffer, finalized, holding one fill that waits on `wait` and
/// signals; returns it and the fill's handle.
fn event_fill(
    env: &Env,
    mem: &UsmAllocation,
    wait: &Event,
    finalize: bool,
) -> Result<(CommandBuffer, CommandHandle), CaseError> {
    let cb = env.updatable_command_buffer()?;
    let appended =
        cb.append_usm_fill(mem.ptr(), &[7], BYTES, AppendOptions::new().wait_events(&[wait]).signal_event())?;
    if finalize {
        cb.finalize()?;
    }
    Ok((cb, handle_of(&appended)?))
}

/// Event updates of a buffer created without `updatable` are invalid
/// operations (checked before the handle, which can only come from another
/// buffer since such a buffer hands out none).
fn not_updatable(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, BYTES)?;
    let queue = env.queue()?;
    let ready = queue.usm_fill(mem.ptr(), &[1], BYTES, &[])?;
    let plain = env.command_buffer(CommandBufferDesc::default())?;
    let appended =
        plain.append_usm_fill(mem.ptr(), &[7], BYTES, AppendOptions::new().wait_events(&[&ready]).signal_event())?;
    check_eq!(appended.command, None, "a buffer that is not updatable hands out no handle");
    plain.finalize()?;
    let (_other, handle) = event_fill(env, &mem, &ready, true)?;
    check_err!(plain.update_wait_events(&handle, &[&ready]), InvalidOperation);
    check_err!(plain.update_signal_event(&handle), InvalidOperation);
    queue.finish()?;
    Ok(())
}

/// Event updates before finalize are invalid operations; after it they work
/// and take effect.
fn before_finalize(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, BYTES)?;
    let queue = env.queue()?;
    let ready = queue.usm_fill(mem.ptr(), &[1], BYTES, &[])?;
    let (cb, handle) = event_fill(env, &mem, &ready, false)?;
    check_err!(cb.update_wait_events(&handle, &[&ready]), InvalidOperation);
    check_err!(cb.update_signal_event(&handle), InvalidOperation);
    cb.finalize()?;
    let again = queue.usm_fill(mem.ptr(), &[2], BYTES, &[])?;
    cb.update_wait_events(&handle, &[&again])?;
    let signal = cb.update_signal_event(&handle)?;
    queue.enqueue_command_buffer(&cb, &[])?;
    check_eq!(read_after(&queue, &mem, &[&signal])?, vec![7u8; BYTES]);
    Ok(())
}

/// A handle of another buffer is an invalid command handle for event updates.
fn handle_of_other_buffer(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, BYTES)?;
    let queue = env.queue()?;
    let ready = queue.usm_fill(mem.ptr(), &[1], BYTES, &[])?;
    let (a, _) = event_fill(env, &mem, &ready, true)?;
    let (_b, foreign) = event_fill(env, &mem, &ready, true)?;
    check_err!(a.update_wait_events(&foreign, &[&ready]), InvalidCommandHandle);
    check_err!(a.update_signal_event(&foreign), InvalidCommandHandle);
    queue.finish()?;
    Ok(())
}

/// A replacement wait event of another context is an invalid wait list, and
/// leaves the command's wait event as it was.
fn wait_event_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let other_mem = UsmAllocation::new(&other, UsmKind::Device, BYTES)?;
    let other_queue = Queue::new(&other, QueueProperties::default())?;
    let foreign = other_queue.usm_fill(other_mem.ptr(), &[1], BYTES, &[])?;
    let mem = env.usm(UsmKind::Device, BYTES)?;
    let queue = env.queue()?;
    let ready = queue.usm_fill(mem.ptr(), &[1], BYTES, &[])?;
    let (cb, handle) = event_fill(env, &mem, &ready, true)?;
    check_err!(cb.update_wait_events(&handle, &[&foreign]), InvalidEventWaitList);
    queue.enqueue_command_buffer(&cb, &[])?;
    queue.finish()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), BYTES)?, vec![7u8; BYTES]);
    other_queue.finish()?;
    Ok(())
}
