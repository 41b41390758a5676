//! Memory commands synchronised with eager queue work through events (UR's
//! `event_sync.cpp`): each append kind waits on an event of an eager producer
//! and signals an event an eager consumer waits on. Producer, command buffer
//! and consumer run on three queues (or one out-of-order queue), so only the
//! events order them; the producer is held back by a gate of device work, so
//! a command or consumer that ignored its event would run first and leave
//! stale data for the checks to find.
//!
//! The scenario machinery here is shared with `update_events`, which replays
//! every kind with updated events.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::OnceLock;

use cmdbuf::{
    AppendOptions, Appended, CommandBuffer, CommandBufferDesc, CommandHandle, Context, ContextId, Event, EventStatus,
    MemBuffer, MigrationFlags, Queue, QueueProperties, RectLayout, RectOffset, RectRegion, UsmAdvice, UsmAllocation,
    UsmKind,
};
use parking_lot::Mutex;

use crate::harness::{
    CaseError, CaseResult, Env, copy_rect_reference, fill_reference, pattern, read, read_buffer, write,
};
use crate::{Requires, cases, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["event_sync";
        usm_memcpy => Requires::EVENTS,
        usm_fill => Requires::EVENTS,
        usm_fill_large_pattern => Requires::EVENTS,
        buffer_copy => Requires::EVENTS,
        buffer_copy_rect => Requires::EVENTS,
        buffer_read => Requires::EVENTS,
        buffer_read_rect => Requires::EVENTS,
        buffer_write => Requires::EVENTS,
        buffer_write_rect => Requires::EVENTS,
        buffer_fill => Requires::EVENTS,
        buffer_fill_large_pattern => Requires::EVENTS,
        usm_prefetch => Requires::EVENTS,
        usm_advise => Requires::EVENTS,
        out_of_order_queue => Requires::EVENTS.and(Requires::OUT_OF_ORDER),
        multiple_event_commands => Requires::EVENTS,
        multiple_event_commands_between_buffers => Requires::EVENTS,
        signal_complete_before_enqueue => Requires::EVENTS,
        wait_event_of_other_context => Requires::EVENTS,
    ]
}

/// Bytes a gate fills: milliseconds of device work, far longer than it takes
/// the host to submit what follows.
const GATE_BYTES: usize = 32 << 20;

/// The scratch memory gates fill, one per context (allocating it for every
/// gate would cost more host time than the gate buys).
static SCRATCH: OnceLock<Mutex<HashMap<ContextId, UsmAllocation>>> = OnceLock::new();

/// The latest gate of any context.
static LAST_GATE: Mutex<Option<Event>> = Mutex::new(None);

/// An event of `queue` (a queue of `env`'s context, with nothing pending
/// that waits on the host) that completes only after milliseconds of device
/// work. Work that waits on it runs later; work that wrongly ignores an event
/// chained to it runs first.
///
/// One gate runs at a time in the whole process: a gate is submitted only once
/// the previous one has completed. That keeps the scratch memory free of
/// concurrent fills, and keeps workers free for work that would wrongly
/// overtake a gate (two gates could otherwise occupy every worker of a small
/// device until they end, hiding the overtaking).
pub(in crate::cases) fn gate(env: &Env, queue: &Queue) -> Result<Event, CaseError> {
    let mut last = LAST_GATE.lock();
    if let Some(previous) = last.take() {
        // Its own failure is its case's concern.
        let _ = previous.wait();
    }
    let mut scratch = SCRATCH.get_or_init(Mutex::default).lock();
    let memory = match scratch.entry(env.context().id()) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => e.insert(env.usm(UsmKind::Device, GATE_BYTES)?),
    };
    let event = queue.usm_fill(memory.ptr(), &[0x5C], GATE_BYTES, &[])?;
    *last = Some(event.clone());
    Ok(event)
}

/// Turns a missing signal event into a failure.
pub(in crate::cases) fn signal_of(appended: &Appended) -> Result<Event, CaseError> {
    appended.event.clone().ok_or_else(|| CaseError::Fail("an append asked for a signal event got none".into()))
}

/// Turns a missing command handle into a failure.
pub(in crate::cases) fn handle_of(appended: &Appended) -> Result<CommandHandle, CaseError> {
    appended
        .command
        .clone()
        .ok_or_else(|| CaseError::Fail("an append to an updatable buffer returned no command handle".into()))
}

/// Reads `BYTES` of USM on `queue` after `wait`.
fn read_usm_after(queue: &Queue, alloc: &UsmAllocation, wait: &[&Event]) -> Result<Vec<u8>, CaseError> {
    let mut out = vec![0u8; BYTES];
    queue.read_usm(alloc.ptr(), &mut out, wait)?;
    Ok(out)
}

/// Reads a whole buffer on `queue` after `wait`.
fn read_buffer_after(queue: &Queue, buffer: &MemBuffer, wait: &[&Event]) -> Result<Vec<u8>, CaseError> {
    let mut out = vec![0u8; BYTES];
    queue.read_buffer(buffer, 0, &mut out, wait)?;
    Ok(out)
}

/// The append kinds of UR's event-sync tests.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(in crate::cases) enum Kind {
    UsmMemcpy,
    UsmFill,
    UsmFillLargePattern,
    BufferCopy,
    BufferCopyRect,
    BufferRead,
    BufferReadRect,
    BufferWrite,
    BufferWriteRect,
    BufferFill,
    BufferFillLargePattern,
    UsmPrefetch,
    UsmAdvise,
}

impl Kind {
    const ALL: [Kind; 13] = [
        Kind::UsmMemcpy,
        Kind::UsmFill,
        Kind::UsmFillLargePattern,
        Kind::BufferCopy,
        Kind::BufferCopyRect,
        Kind::BufferRead,
        Kind::BufferReadRect,
        Kind::BufferWrite,
        Kind::BufferWriteRect,
        Kind::BufferFill,
        Kind::BufferFillLargePattern,
        Kind::UsmPrefetch,
        Kind::UsmAdvise,
    ];

    /// Whether the producer writes USM (otherwise a buffer).
    fn produces_usm(self) -> bool {
        matches!(
            self,
            Kind::UsmMemcpy | Kind::UsmFill | Kind::UsmFillLargePattern | Kind::UsmPrefetch | Kind::UsmAdvise
        )
    }
}

/// Size of every allocation and buffer of a scenario: 32 rows of 32 bytes
/// for the rect kinds.
const BYTES: usize = 1024;
const ROW: usize = 32;
/// The rect the rect kinds move: 16 bytes by 8 rows.
const REGION: [usize; 3] = [16, 8, 1];
/// Origins of the rect on the two buffer sides.
const ORIGIN_A: [usize; 3] = [8, 2, 0];
const ORIGIN_B: [usize; 3] = [4, 5, 0];
/// What the commands themselves write.
const Y: u32 = 0xA;

/// The producer values of the first and second rounds, and the consumer's.
pub(in crate::cases) const X1: u32 = 42;
pub(in crate::cases) const X2: u32 = 666;
pub(in crate::cases) const Z1: u32 = 0xF00D;
pub(in crate::cases) const Z2: u32 = 0xBEEF;

fn y_large() -> Vec<u8> {
    pattern(64, 0x40)
}

fn region() -> RectRegion {
    RectRegion::new(REGION[0], REGION[1], REGION[2])
}

fn buffer_side(origin: [usize; 3]) -> RectLayout {
    RectLayout::new(RectOffset::new(origin[0], origin[1], origin[2]), ROW, BYTES)
}

/// One append kind wired between a producer, the command buffer and a
/// consumer: the producer writes `x` after a gate, the command waits for the
/// producer's event, and the consumer waits for the command's signal event.
pub(in crate::cases) struct Scenario {
    // Queues first: fields drop in order and a dropped queue waits for its work.
    producer: Queue,
    runner: Queue,
    consumer: Queue,
    kind: Kind,
    usm: [UsmAllocation; 2],
    buffers: [MemBuffer; 2],
    /// What the write kinds write, held in `usm[0]`.
    ydata: Vec<u8>,
}

impl Scenario {
    /// Three in-order queues, or `shared` for all three roles.
    pub(in crate::cases) fn new(env: &Env, kind: Kind, shared: Option<&Queue>) -> Result<Scenario, CaseError> {
        let usm = [env.usm(UsmKind::Device, BYTES)?, env.usm(UsmKind::Device, BYTES)?];
        let buffers = [env.buffer(BYTES)?, env.buffer(BYTES)?];
        let (producer, runner, consumer) = match shared {
            Some(q) => (q.clone(), q.clone(), q.clone()),
            None => (env.queue()?, env.queue()?, env.queue()?),
        };
        let scenario = Scenario { producer, runner, consumer, kind, usm, buffers, ydata: pattern(BYTES, 0xA0) };
        scenario.reset()?;
        Ok(scenario)
    }

    /// Zeroes all memory (the write kinds' source excepted), so that nothing
    /// a later round checks was left by an earlier one. Call it only while
    /// nothing runs.
    pub(in crate::cases) fn reset(&self) -> CaseResult {
        let q = &self.consumer;
        let zeros = vec![0u8; BYTES];
        write(q, self.usm[0].ptr(), &zeros)?;
        write(q, self.usm[1].ptr(), &zeros)?;
        for b in &self.buffers {
            q.write_buffer(b, 0, &zeros, &[])?;
        }
        if matches!(self.kind, Kind::BufferWrite | Kind::BufferWriteRect) {
            write(q, self.usm[0].ptr(), &self.ydata)?;
        }
        Ok(())
    }

    /// The queue command buffers are enqueued on.
    pub(in crate::cases) fn runner(&self) -> &Queue {
        &self.runner
    }

    fn producer_pattern(&self, x: u32) -> Vec<u8> {
        match self.kind {
            Kind::UsmFillLargePattern | Kind::BufferFillLargePattern => u64::from(x).to_le_bytes().to_vec(),
            _ => x.to_le_bytes().to_vec(),
        }
    }

    /// Gates the producer queue, then writes `x` behind the gate.
    pub(in crate::cases) fn produce(&self, env: &Env, x: u32) -> Result<Event, CaseError> {
        let gate = gate(env, &self.producer)?;
        let pat = self.producer_pattern(x);
        Ok(if self.kind.produces_usm() {
            self.producer.usm_fill(self.usm[0].ptr(), &pat, BYTES, &[&gate])?
        } else {
            self.producer.fill_buffer(&self.buffers[0], &pat, 0, BYTES, &[&gate])?
        })
    }

    /// Appends the kind's command (after any setup command it needs), waiting
    /// on `wait` and with a signal event; returns that command's append.
    pub(in crate::cases) fn record(&self, cb: &CommandBuffer, wait: &[&Event]) -> Result<Appended, CaseError> {
        let opts = || AppendOptions::new().wait_events(wait).signal_event();
        let (u0, u1) = (self.usm[0].ptr(), self.usm[1].ptr());
        let (b0, b1) = (&self.buffers[0], &self.buffers[1]);
        let y = Y.to_le_bytes();
        let appended = match self.kind {
            Kind::UsmMemcpy => {
                let f = cb.append_usm_fill(u1, &y, BYTES, AppendOptions::new())?;
                cb.append_usm_memcpy(u1, u0, BYTES, opts().after(&[f.sync_point]))?
            }
            Kind::UsmFill => cb.append_usm_fill(u0, &y, BYTES, opts())?,
            Kind::UsmFillLargePattern => cb.append_usm_fill(u0, &y_large(), BYTES, opts())?,
            Kind::BufferCopy => {
                let f = cb.append_buffer_fill(b1, &y, 0, BYTES, AppendOptions::new())?;
                cb.append_buffer_copy(b0, b1, 0, 0, BYTES, opts().after(&[f.sync_point]))?
            }
            Kind::BufferCopyRect => {
                let f = cb.append_buffer_fill(b1, &y, 0, BYTES, AppendOptions::new())?;
                cb.append_buffer_copy_rect(
                    b0,
                    b1,
                    buffer_side(ORIGIN_A),
                    buffer_side(ORIGIN_B),
                    region(),
                    opts().after(&[f.sync_point]),
                )?
            }
            Kind::BufferRead => cb.append_buffer_read(b0, 0, BYTES, u0, opts())?,
            Kind::BufferReadRect => {
                cb.append_buffer_read_rect(b0, buffer_side(ORIGIN_A), RectLayout::packed(), region(), u0, opts())?
            }
            Kind::BufferWrite => cb.append_buffer_write(b0, 0, BYTES, u0, opts())?,
            Kind::BufferWriteRect => {
                cb.append_buffer_write_rect(b0, buffer_side(ORIGIN_A), RectLayout::packed(), region(), u0, opts())?
            }
            Kind::BufferFill => cb.append_buffer_fill(b0, &y, 0, BYTES, opts())?,
            Kind::BufferFillLargePattern => cb.append_buffer_fill(b0, &y_large(), 0, BYTES, opts())?,
            Kind::UsmPrefetch | Kind::UsmAdvise => {
                // A hint changes no data: a copy after it shows when it ran.
                let hint = if self.kind == Kind::UsmPrefetch {
                    cb.append_usm_prefetch(u0, BYTES, MigrationFlags::HOST_TO_DEVICE, opts())?
                } else {
                    cb.append_usm_advise(u0, BYTES, UsmAdvice::SET_READ_MOSTLY, opts())?
                };
                cb.append_usm_memcpy(u1, u0, BYTES, AppendOptions::new().after(&[hint.sync_point]))?;
                hint
            }
        };
        Ok(appended)
    }

    /// The consumer's work after `signal`: a read of what the command wrote,
    /// or, for the read kinds, an overwrite with `z` of what the command read
    /// (then a read of it).
    pub(in crate::cases) fn consume(&self, signal: &Event, z: u32) -> Result<Vec<u8>, CaseError> {
        let q = &self.consumer;
        let wait = [signal];
        match self.kind {
            Kind::UsmMemcpy => read_usm_after(q, &self.usm[1], &wait),
            Kind::UsmFill | Kind::UsmFillLargePattern | Kind::UsmPrefetch | Kind::UsmAdvise => {
                read_usm_after(q, &self.usm[0], &wait)
            }
            Kind::BufferCopy | Kind::BufferCopyRect => read_buffer_after(q, &self.buffers[1], &wait),
            Kind::BufferRead | Kind::BufferReadRect => {
                q.fill_buffer(&self.buffers[0], &z.to_le_bytes(), 0, BYTES, &wait)?.wait()?;
                read_buffer_after(q, &self.buffers[0], &[])
            }
            Kind::BufferWrite | Kind::BufferWriteRect | Kind::BufferFill | Kind::BufferFillLargePattern => {
                read_buffer_after(q, &self.buffers[0], &wait)
            }
        }
    }

    /// Waits for everything, then checks the consumer's snapshot and the final
    /// contents against what producer-then-command-then-consumer leaves.
    pub(in crate::cases) fn verify(&self, x: u32, z: u32, snapshot: &[u8]) -> CaseResult {
        self.producer.finish()?;
        self.runner.finish()?;
        self.consumer.finish()?;
        let q = &self.consumer;
        let xdata = fill_reference(&self.producer_pattern(x), BYTES);
        let ydata4 = fill_reference(&Y.to_le_bytes(), BYTES);
        let zdata = fill_reference(&z.to_le_bytes(), BYTES);
        let usm = |i: usize| read::<u8>(q, self.usm[i].ptr(), BYTES);
        let buffer = |i: usize| read_buffer::<u8>(q, &self.buffers[i], 0, BYTES);
        let kind = self.kind;
        match kind {
            Kind::UsmMemcpy => {
                check_eq!(snapshot, &xdata[..], "{kind:?}: consumer saw");
                check_eq!(usm(1)?, xdata, "{kind:?}: destination at the end");
            }
            Kind::UsmFill => {
                check_eq!(snapshot, &ydata4[..], "{kind:?}: consumer saw");
                check_eq!(usm(0)?, ydata4, "{kind:?}: memory at the end");
            }
            Kind::UsmFillLargePattern => {
                let expected = fill_reference(&y_large(), BYTES);
                check_eq!(snapshot, &expected[..], "{kind:?}: consumer saw");
                check_eq!(usm(0)?, expected, "{kind:?}: memory at the end");
            }
            Kind::BufferCopy => {
                check_eq!(snapshot, &xdata[..], "{kind:?}: consumer saw");
                check_eq!(buffer(1)?, xdata, "{kind:?}: destination at the end");
            }
            Kind::BufferCopyRect => {
                let mut expected = ydata4.clone();
                copy_rect_reference(&xdata, ORIGIN_A, (ROW, BYTES), &mut expected, ORIGIN_B, (ROW, BYTES), REGION);
                check_eq!(snapshot, &expected[..], "{kind:?}: consumer saw");
                check_eq!(buffer(1)?, expected, "{kind:?}: destination at the end");
            }
            Kind::BufferRead | Kind::BufferReadRect => {
                let mut expected = xdata.clone();
                if kind == Kind::BufferReadRect {
                    expected = vec![0u8; BYTES];
                    let packed = (REGION[0], REGION[0] * REGION[1]);
                    copy_rect_reference(&xdata, ORIGIN_A, (ROW, BYTES), &mut expected, [0, 0, 0], packed, REGION);
                }
                check_eq!(usm(0)?, expected, "{kind:?}: what the command read");
                check_eq!(snapshot, &zdata[..], "{kind:?}: consumer's overwrite");
                check_eq!(buffer(0)?, zdata, "{kind:?}: buffer at the end");
            }
            Kind::BufferWrite => {
                check_eq!(snapshot, &self.ydata[..], "{kind:?}: consumer saw");
                check_eq!(buffer(0)?, self.ydata, "{kind:?}: buffer at the end");
            }
            Kind::BufferWriteRect => {
                let mut expected = xdata.clone();
                let packed = (REGION[0], REGION[0] * REGION[1]);
                copy_rect_reference(&self.ydata, [0, 0, 0], packed, &mut expected, ORIGIN_A, (ROW, BYTES), REGION);
                check_eq!(snapshot, &expected[..], "{kind:?}: consumer saw");
                check_eq!(buffer(0)?, expected, "{kind:?}: buffer at the end");
            }
            Kind::BufferFill => {
                check_eq!(snapshot, &ydata4[..], "{kind:?}: consumer saw");
                check_eq!(buffer(0)?, ydata4, "{kind:?}: buffer at the end");
            }
            Kind::BufferFillLargePattern => {
                let expected = fill_reference(&y_large(), BYTES);
                check_eq!(snapshot, &expected[..], "{kind:?}: consumer saw");
                check_eq!(buffer(0)?, expected, "{kind:?}: buffer at the end");
            }
            Kind::UsmPrefetch | Kind::UsmAdvise => {
                check_eq!(snapshot, &xdata[..], "{kind:?}: consumer saw");
                check_eq!(usm(1)?, xdata, "{kind:?}: copy made after the hint");
            }
        }
        Ok(())
    }

    /// Records into `cb` (empty, not finalized), finalizes, and runs one
    /// round with producer value `x` and consumer value `z`. Returns the
    /// append of the event command.
    pub(in crate::cases) fn first_round(
        &self,
        env: &Env,
        cb: &CommandBuffer,
        x: u32,
        z: u32,
    ) -> Result<Appended, CaseError> {
        let produced = self.produce(env, x)?;
        let appended = self.record(cb, &[&produced])?;
        cb.finalize()?;
        let signal = signal_of(&appended)?;
        self.runner.enqueue_command_buffer(cb, &[])?;
        let snapshot = self.consume(&signal, z)?;
        self.verify(x, z, &snapshot)?;
        Ok(appended)
    }
}

fn one_round(env: &Env, kind: Kind) -> CaseResult {
    let scenario = Scenario::new(env, kind, None)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    scenario.first_round(env, &cb, X1, Z1)?;
    Ok(())
}

fn usm_memcpy(env: &Env) -> CaseResult {
    one_round(env, Kind::UsmMemcpy)
}

fn usm_fill(env: &Env) -> CaseResult {
    one_round(env, Kind::UsmFill)
}

fn usm_fill_large_pattern(env: &Env) -> CaseResult {
    one_round(env, Kind::UsmFillLargePattern)
}

fn buffer_copy(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferCopy)
}

fn buffer_copy_rect(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferCopyRect)
}

fn buffer_read(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferRead)
}

fn buffer_read_rect(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferReadRect)
}

fn buffer_write(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferWrite)
}

fn buffer_write_rect(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferWriteRect)
}

fn buffer_fill(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferFill)
}

fn buffer_fill_large_pattern(env: &Env) -> CaseResult {
    one_round(env, Kind::BufferFillLargePattern)
}

fn usm_prefetch(env: &Env) -> CaseResult {
    one_round(env, Kind::UsmPrefetch)
}

fn usm_advise(env: &Env) -> CaseResult {
    one_round(env, Kind::UsmAdvise)
}

/// Every kind with producer, command buffer and consumer on one out-of-order
/// queue, which orders nothing by itself.
fn out_of_order_queue(env: &Env) -> CaseResult {
    for kind in Kind::ALL {
        let queue = env.ooo_queue()?;
        let scenario = Scenario::new(env, kind, Some(&queue))?;
        let cb = env.command_buffer(CommandBufferDesc::default())?;
        scenario.first_round(env, &cb, X1, Z1)?;
    }
    Ok(())
}

/// An out-of-order queue where the device has them: a command buffer
/// replayed through an in-order queue would run its commands in append order
/// whatever their events say, which hides a dropped dependency.
pub(in crate::cases) fn unordered_queue(env: &Env) -> Result<Queue, CaseError> {
    if env.device().info().out_of_order_queues { env.ooo_queue() } else { env.queue() }
}

const A: u32 = 0xA;
const B: u32 = 0xB;
const C: u32 = 0xC;

/// UR's `MultipleEventCommands`, with copies instead of independent fills so
/// that the data also shows the commands ordered by each other's signal
/// events (they share no sync point).
fn multiple_event_commands(env: &Env) -> CaseResult {
    let mem = [env.usm(UsmKind::Device, BYTES)?, env.usm(UsmKind::Device, BYTES)?, env.usm(UsmKind::Device, BYTES)?];
    let (gate_queue, runner, consumer) = (env.queue()?, unordered_queue(env)?, env.queue()?);
    for m in &mem {
        write(&consumer, m.ptr(), &vec![0u8; BYTES])?;
    }
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let first = cb.append_usm_fill(mem[0].ptr(), &A.to_le_bytes(), BYTES, AppendOptions::new().signal_event())?;
    let s0 = signal_of(&first)?;
    let second = cb.append_usm_memcpy(
        mem[1].ptr(),
        mem[0].ptr(),
        BYTES,
        AppendOptions::new().wait_events(&[&s0]).signal_event(),
    )?;
    let s1 = signal_of(&second)?;
    let third = cb.append_usm_memcpy(
        mem[2].ptr(),
        mem[1].ptr(),
        BYTES,
        AppendOptions::new().wait_events(&[&s1]).signal_event(),
    )?;
    let s2 = signal_of(&third)?;
    cb.finalize()?;
    let gate = gate(env, &gate_queue)?;
    runner.enqueue_command_buffer(&cb, &[&gate])?;
    let expected = fill_reference(&A.to_le_bytes(), BYTES);
    for (i, (m, s)) in mem.iter().zip([&s0, &s1, &s2]).enumerate() {
        check_eq!(read_usm_after(&consumer, m, &[s])?, expected, "memory {i} after its signal event");
    }
    runner.finish()?;
    for (i, m) in mem.iter().enumerate() {
        check_eq!(read::<u8>(&consumer, m.ptr(), BYTES)?, expected, "memory {i} at the end");
    }
    Ok(())
}

/// UR's `MultipleEventCommandsBetweenCommandBuffers`: a second buffer, on
/// another queue, copies out what the first one's commands wrote, each copy
/// waiting on one signal event of the first buffer.
fn multiple_event_commands_between_buffers(env: &Env) -> CaseResult {
    let mem: Vec<UsmAllocation> = (0..6).map(|_| env.usm(UsmKind::Device, BYTES)).collect::<Result<_, _>>()?;
    let (gate_queue, runner, consumer) = (env.queue()?, env.queue()?, env.queue()?);
    for m in &mem {
        write(&consumer, m.ptr(), &vec![0u8; BYTES])?;
    }
    let first = env.command_buffer(CommandBufferDesc::default())?;
    let mut signals: Vec<Event> = Vec::new();
    for (i, value) in [A, B, C].into_iter().enumerate() {
        let wait: Vec<&Event> = signals.last().into_iter().collect();
        let appended = first.append_usm_fill(
            mem[i].ptr(),
            &value.to_le_bytes(),
            BYTES,
            AppendOptions::new().wait_events(&wait).signal_event(),
        )?;
        signals.push(signal_of(&appended)?);
    }
    first.finalize()?;
    let second = env.command_buffer(CommandBufferDesc::default())?;
    for (i, signal) in signals.iter().enumerate() {
        second.append_usm_memcpy(mem[3 + i].ptr(), mem[i].ptr(), BYTES, AppendOptions::new().wait_events(&[signal]))?;
    }
    second.finalize()?;
    let gate = gate(env, &gate_queue)?;
    runner.enqueue_command_buffer(&first, &[&gate])?;
    consumer.enqueue_command_buffer(&second, &[])?;
    runner.finish()?;
    consumer.finish()?;
    for (i, value) in [A, B, C].into_iter().enumerate() {
        check_eq!(
            read::<u8>(&consumer, mem[3 + i].ptr(), BYTES)?,
            fill_reference(&value.to_le_bytes(), BYTES),
            "copy {i} made by the second buffer"
        );
    }
    Ok(())
}

/// A signal event is complete from its append until the first enqueue: an
/// eager command waiting on it runs although the command never ran.
fn signal_complete_before_enqueue(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, BYTES)?;
    let queue = env.queue()?;
    write(&queue, mem.ptr(), &vec![0u8; BYTES])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let appended = cb.append_usm_fill(mem.ptr(), &[7], BYTES, AppendOptions::new().signal_event())?;
    let signal = signal_of(&appended)?;
    check_eq!(signal.status(), EventStatus::Complete, "before finalize");
    signal.wait()?;
    cb.finalize()?;
    check_eq!(signal.status(), EventStatus::Complete, "after finalize");
    signal.wait()?;
    check_eq!(read_usm_after(&queue, &mem, &[&signal])?, vec![0u8; BYTES], "the fill has not run before any enqueue");
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    signal.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), BYTES)?, vec![7u8; BYTES]);
    Ok(())
}

fn wait_event_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let other_mem = UsmAllocation::new(&other, UsmKind::Device, 64)?;
    let other_queue = Queue::new(&other, QueueProperties::default())?;
    let foreign = other_queue.usm_fill(other_mem.ptr(), &[1], 64, &[])?;
    let mem = env.usm(UsmKind::Device, 64)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    check_err!(
        cb.append_usm_fill(mem.ptr(), &[2], 64, AppendOptions::new().wait_events(&[&foreign])),
        InvalidEventWaitList
    );
    check_err!(
        cb.append_usm_fill(mem.ptr(), &[2], 64, AppendOptions::new().wait_events(&[&foreign]).signal_event()),
        InvalidEventWaitList
    );
    check_eq!(cb.len(), 0, "rejected appends record nothing");
    other_queue.finish()?;
    Ok(())
}
