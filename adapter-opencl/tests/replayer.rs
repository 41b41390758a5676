//! Planned command-buffer submissions handed to the device's replayer
//! (`UR_OPENCL_REPLAY_THREAD=always`: every submission that may be handed
//! is): the queue's order with eager commands between them, another
//! queue's command waiting on a submission not made yet, updates after
//! submissions not made yet, and a queue and buffer released while their
//! submissions wait. Each submission waits on a user event first where the
//! order is checked, so that a command run out of order gives another
//! result, not a lucky one.
//!
//! One test per OpenCL device whose command buffers replay planned (the CPU
//! drivers by default), listed ignored with the reason where there is none.
//! Its own binary: the variable applies to this process only.

mod per_device;

use cmdbuf_core::{
    AppendOptions, ArgKind, CommandBuffer, CommandBufferDesc, Context, Device, Event, EventStatus, Kernel, KernelArg,
    KernelLaunch, KernelLaunchUpdate, KernelSignature, MemBuffer, MemFlags, Program, ProgramBundle, ProgramSource,
    Queue, QueueProperties, ReplayPath, UserEvent,
};

const SOURCE: &str = "__kernel void add(__global uchar *p, uchar v) { p[get_global_id(0)] += v; }
__kernel void twice(__global uchar *p) { p[get_global_id(0)] *= 2; }";

const N: usize = 64;

fn main() {
    // SAFETY: the first thing the process does: no other thread runs, and
    // the adapter reads the variable when `per_device::run` loads it.
    unsafe { std::env::set_var(cmdbuf_opencl::REPLAY_THREAD_ENV, "always") };
    per_device::run(
        "replayer",
        &[
            ("submissions_keep_the_queue_order", submissions_keep_the_queue_order),
            ("another_queue_waits_for_a_pending_submission", another_queue_waits_for_a_pending_submission),
            ("updates_wait_for_pending_submissions", updates_wait_for_pending_submissions),
            ("released_while_submissions_wait", released_while_submissions_wait),
        ],
    )
}

fn e(e: cmdbuf_core::UrError) -> String {
    e.to_string()
}

struct Setup {
    ctx: Context,
    add: Kernel,
    twice: Kernel,
    mem: MemBuffer,
}

/// A context with the two kernels and a zeroed buffer of `N` bytes; `None`
/// where the device's command buffers are the driver's (nothing is handed).
fn setup(device: &Device) -> Result<Option<Setup>, String> {
    if device.info().command_buffer.replay_path != ReplayPath::Planned {
        return Ok(None);
    }
    let ctx = Context::new(device).map_err(e)?;
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("add", [ArgKind::Global, ArgKind::Value(1)]))
        .kernel(KernelSignature::new("twice", [ArgKind::Global]))
        .source(ProgramSource::OpenClC(SOURCE.into()));
    let program = Program::new(&ctx, &bundle).map_err(e)?;
    let add = Kernel::new(&program, "add").map_err(e)?;
    let twice = Kernel::new(&program, "twice").map_err(e)?;
    let mem = MemBuffer::new(&ctx, MemFlags::READ_WRITE, N).map_err(e)?;
    let queue = Queue::new(&ctx, QueueProperties::default()).map_err(e)?;
    queue.write_buffer(&mem, 0, &[0u8; N], &[]).map_err(e)?;
    queue.finish().map_err(e)?;
    Ok(Some(Setup { ctx, add, twice, mem }))
}

/// A buffer of two launches adding `value` each to every byte.
fn two_adds(s: &Setup, value: u8, updatable: bool) -> Result<(CommandBuffer, Vec<cmdbuf_core::CommandHandle>), String> {
    let desc = CommandBufferDesc { updatable, ..CommandBufferDesc::default() };
    let cb = CommandBuffer::new(&s.ctx, s.ctx.device(), desc).map_err(e)?;
    let mut handles = Vec::new();
    for _ in 0..2 {
        let args = [KernelArg::MemObj(&s.mem), KernelArg::value(&value)];
        // SAFETY: one work-item per byte of the buffer.
        let appended =
            unsafe { cb.append_kernel_launch(&KernelLaunch::new(&s.add, &[N], &args), &[], AppendOptions::new()) };
        handles.extend(appended.map_err(e)?.command);
    }
    cb.finalize().map_err(e)?;
    Ok((cb, handles))
}

fn read(queue: &Queue, mem: &MemBuffer) -> Result<[u8; N], String> {
    let mut got = [0u8; N];
    queue.read_buffer(mem, 0, &mut got, &[]).map_err(e)?;
    Ok(got)
}

fn expect(got: [u8; N], want: u8, what: &str) -> Result<(), String> {
    match got.iter().position(|&b| b != want) {
        None => Ok(()),
        Some(i) => Err(format!("{what}: byte {i} is {}, expected {want}", got[i])),
    }
}

/// Fifty submissions of a buffer of two adds of 1, behind a user event,
/// with an eager add of 3 after every tenth and an eager doubling at the
/// end: only the queue's order gives (100 + 15) * 2.
fn submissions_keep_the_queue_order(device: &Device) -> Result<(), String> {
    let Some(s) = setup(device)? else { return Ok(()) };
    let queue = Queue::new(&s.ctx, QueueProperties::default()).map_err(e)?;
    let (cb, _) = two_adds(&s, 1, false)?;
    let gate = UserEvent::new(&s.ctx).map_err(e)?;
    let handed = cmdbuf_opencl::replays_handed();
    let three = 3u8;
    let mut events: Vec<Event> = Vec::new();
    for i in 0..50 {
        let wait: Vec<&Event> = if i == 0 { vec![gate.event()] } else { Vec::new() };
        events.push(queue.enqueue_command_buffer(&cb, &wait).map_err(e)?);
        if i % 10 == 9 {
            let args = [KernelArg::MemObj(&s.mem), KernelArg::value(&three)];
            // SAFETY: one work-item per byte of the buffer.
            unsafe { queue.launch_kernel(&KernelLaunch::new(&s.add, &[N], &args), &[]).map_err(e)? };
        }
    }
    // SAFETY: one work-item per byte of the buffer.
    let doubled = unsafe { queue.launch_kernel(&KernelLaunch::new(&s.twice, &[N], &[KernelArg::MemObj(&s.mem)]), &[]) };
    let doubled = doubled.map_err(e)?;
    if events[0].status() == EventStatus::Complete {
        return Err("the first submission completed before its user event".into());
    }
    gate.complete().map_err(e)?;
    doubled.wait().map_err(e)?;
    for event in &events {
        event.wait().map_err(e)?;
        if event.status() != EventStatus::Complete {
            return Err(format!("a submission waited for is {:?}", event.status()));
        }
    }
    expect(read(&queue, &s.mem)?, 230, "after 50 submissions, 5 eager adds and a doubling")?;
    let taken = cmdbuf_opencl::replays_handed() - handed;
    if taken < 50 {
        return Err(format!("{taken} of 50 submissions went to the replayer"));
    }
    Ok(())
}

/// A submission on one queue, behind a user event; a doubling on another
/// queue that waits on the submission's event. Run before the submission,
/// the doubling would leave 2, after it 4.
fn another_queue_waits_for_a_pending_submission(device: &Device) -> Result<(), String> {
    let Some(s) = setup(device)? else { return Ok(()) };
    let (first, second) = (
        Queue::new(&s.ctx, QueueProperties::default()).map_err(e)?,
        Queue::new(&s.ctx, QueueProperties::default()).map_err(e)?,
    );
    let (cb, _) = two_adds(&s, 1, false)?;
    let gate = UserEvent::new(&s.ctx).map_err(e)?;
    let submitted = first.enqueue_command_buffer(&cb, &[gate.event()]).map_err(e)?;
    // SAFETY: one work-item per byte of the buffer.
    let doubled = unsafe {
        second.launch_kernel(&KernelLaunch::new(&s.twice, &[N], &[KernelArg::MemObj(&s.mem)]), &[&submitted])
    }
    .map_err(e)?;
    // A submission of the same buffer on the other queue comes after it too.
    let again = second.enqueue_command_buffer(&cb, &[]).map_err(e)?;
    gate.complete().map_err(e)?;
    again.wait().map_err(e)?;
    doubled.wait().map_err(e)?;
    expect(read(&second, &s.mem)?, 6, "adds, doubling on the other queue, adds there")
}

/// Three submissions of an updatable buffer adding 1 twice, behind a user
/// event, then an update to 10 and a fourth: the update must not reach the
/// three (3 * 2 + 2 * 10).
fn updates_wait_for_pending_submissions(device: &Device) -> Result<(), String> {
    let Some(s) = setup(device)? else { return Ok(()) };
    let queue = Queue::new(&s.ctx, QueueProperties::default()).map_err(e)?;
    let (cb, handles) = two_adds(&s, 1, true)?;
    let gate = UserEvent::new(&s.ctx).map_err(e)?;
    queue.enqueue_command_buffer(&cb, &[gate.event()]).map_err(e)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(e)?;
    queue.enqueue_command_buffer(&cb, &[]).map_err(e)?;
    let ten = 10u8;
    let updates: Vec<KernelLaunchUpdate<'_>> =
        handles.iter().map(|h| KernelLaunchUpdate::new(h).arg(1, KernelArg::value(&ten))).collect();
    // SAFETY: the same launches with another value.
    unsafe { cb.update_kernel_launches(&updates).map_err(e)? };
    let last = queue.enqueue_command_buffer(&cb, &[]).map_err(e)?;
    gate.complete().map_err(e)?;
    last.wait().map_err(e)?;
    expect(read(&queue, &s.mem)?, 26, "three submissions before the update and one after")
}

/// A buffer dropped while its submissions wait on a user event, then their
/// queue dropped while another thread completes the event (a queue's drop
/// waits for its work): the submissions still run, and their events still
/// answer.
fn released_while_submissions_wait(device: &Device) -> Result<(), String> {
    let Some(s) = setup(device)? else { return Ok(()) };
    let gate = UserEvent::new(&s.ctx).map_err(e)?;
    let queue = Queue::new(&s.ctx, QueueProperties::default()).map_err(e)?;
    let last = {
        let (cb, _) = two_adds(&s, 1, false)?;
        queue.enqueue_command_buffer(&cb, &[gate.event()]).map_err(e)?;
        queue.enqueue_command_buffer(&cb, &[]).map_err(e)?
    };
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            gate.complete()
        });
        drop(queue);
    });
    last.wait().map_err(e)?;
    let queue = Queue::new(&s.ctx, QueueProperties::default()).map_err(e)?;
    expect(read(&queue, &s.mem)?, 4, "two submissions of a released buffer on a released queue")
}
