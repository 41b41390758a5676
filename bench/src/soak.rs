//! The soak group (issue 16): a mixed workload submitted many times on one
//! device, printing the resident set, the live Rust heap and the live
//! cmdbuf-core objects every tenth of the run, and at the end whether they
//! stayed flat. A figure, not a test: nothing here asserts.
//!
//! One submission is one enqueue: of an updatable command buffer (four
//! `fill` kernels and two USM copies), with a kernel-argument update before
//! every [`UPDATE_EVERY`]-th one, or, every [`GRAPH_EVERY`]-th, of a SYCL
//! graph holding a kernel, a host task and a sub-graph. Events are kept in
//! flight up to [`IN_FLIGHT`] and then waited together.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, CommandHandle, Event, KernelArg, KernelLaunch, KernelLaunchUpdate,
    LiveObjects, SyncPoint, UpdateCapabilities, UrError, UsmAllocation, UsmKind, UsmPtr,
};

use crate::suites::{Target, resident_bytes};

/// Every this many submissions is the graph's; the others the command buffer's.
const GRAPH_EVERY: u64 = 4;
/// Every this many submissions, the command buffer's first kernel gets a new value first.
const UPDATE_EVERY: u64 = 16;
/// Events in flight before they are all waited for.
const IN_FLIGHT: usize = 64;
/// Elements of each allocation (one `fill` work-item each).
const ELEMENTS: usize = 4;
/// Fixed allowance of the flatness check, besides 5 %.
const SLACK_BYTES: f64 = 1024.0 * 1024.0;

/// One row of the table.
#[derive(Clone, Copy, Debug)]
struct Sample {
    submissions: u64,
    seconds: f64,
    rss: Option<u64>,
    heap: isize,
    live: LiveObjects,
}

impl Sample {
    fn take(submissions: u64, start: Instant) -> Sample {
        Sample {
            submissions,
            seconds: start.elapsed().as_secs_f64(),
            rss: resident_bytes(),
            heap: crate::alloc::live_heap_bytes(),
            live: cmdbuf::live_objects(),
        }
    }

    fn row(&self) -> String {
        let l = &self.live;
        let rss = self.rss.map_or("n/a".to_string(), |b| format!("{:.1}", b as f64 / 1048576.0));
        format!(
            "| {} | {:.1} | {rss} | {} | {} | {}/{}/{}/{}/{}/{}/{} |\n",
            self.submissions,
            self.seconds,
            self.heap,
            l.total(),
            l.contexts,
            l.queues,
            l.events,
            l.usm_allocations,
            l.command_buffers,
            l.programs,
            l.kernels
        )
    }
}

/// The updatable command buffer of the workload and its first kernel's handle.
struct Buffer {
    cb: CommandBuffer,
    first: Option<CommandHandle>,
}

fn record_buffer(t: &Target, data: UsmPtr, copy: UsmPtr, back: UsmPtr, updatable: bool) -> Result<Buffer, UrError> {
    let desc = CommandBufferDesc { updatable, ..Default::default() };
    let cb = CommandBuffer::new(&t.context, &t.device, desc)?;
    let value = 0u32;
    let args = [KernelArg::Pointer(data), KernelArg::value(&value)];
    let mut kernels: Vec<SyncPoint> = Vec::new();
    let mut first = None;
    for i in 0..ELEMENTS {
        let offset = [i];
        let launch = KernelLaunch::new(&t.fill, &[1], &args).global_offset(&offset);
        // SAFETY: each launch writes element i of an ELEMENTS-element allocation.
        let appended = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new())? };
        kernels.push(appended.sync_point);
        if i == 0 {
            first = appended.command;
        }
    }
    let bytes = ELEMENTS * 4;
    let copied = cb.append_usm_memcpy(copy, data, bytes, AppendOptions::new().after(&kernels))?;
    cb.append_usm_memcpy(back, copy, bytes, AppendOptions::new().after(&[copied.sync_point]))?;
    cb.finalize()?;
    Ok(Buffer { cb, first })
}

/// The graph part of the workload (`cmdbuf_runtime::graph`'s explicit API): a kernel
/// filling `data`, then a host task counting its runs in `runs`, then a
/// sub-graph copying `data` into `copy`. Kept in one function so that the
/// graph layer's imports can move in one place.
fn build_graph(
    t: &Target,
    data: UsmPtr,
    copy: UsmPtr,
    runs: &Arc<AtomicU64>,
) -> Result<cmdbuf_runtime::graph::Graph<cmdbuf_runtime::graph::Executable>, UrError> {
    use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties};
    let child = Graph::new(&t.context, &t.device, GraphProperties::default())?;
    child.add(|h| h.memcpy(copy, data, ELEMENTS * 4), NodeProperties::new())?;
    let child = child.finalize(FinalizeProperties::default())?;

    let graph = Graph::new(&t.context, &t.device, GraphProperties::default())?;
    let value = 7u32;
    let args = [KernelArg::Pointer(data), KernelArg::value(&value)];
    let launch = KernelLaunch::new(&t.fill, &[ELEMENTS], &args);
    // SAFETY: ELEMENTS work-items write an ELEMENTS-element allocation that
    // outlives every submission of the graph (the soak waits before freeing).
    let kernel = graph.add(|h| unsafe { h.launch(&launch) }, NodeProperties::new())?;
    let counter = runs.clone();
    let host = graph.add(
        move |h| {
            h.host_task(move || {
                counter.fetch_add(1, Ordering::Relaxed);
            })
        },
        NodeProperties::new().depends_on(&[&kernel]),
    )?;
    graph.add(|h| h.subgraph(&child), NodeProperties::new().depends_on(&[&host]))?;
    graph.finalize(FinalizeProperties::default())
}

/// Waits for every event in flight.
fn drain(in_flight: &mut VecDeque<Event>) -> Result<(), UrError> {
    let events: Vec<&Event> = in_flight.iter().collect();
    Event::wait_all(&events)?;
    in_flight.clear();
    Ok(())
}

/// Whether `last` stays within 5 % + 1 MiB of `base`.
fn within(base: f64, last: f64) -> bool {
    last <= base * 1.05 + SLACK_BYTES
}

/// The verdict on the run: the last sample against the first after warm-up.
fn verdict(warm: &Sample, last: &Sample) -> String {
    let rss_ok = match (warm.rss, last.rss) {
        (Some(a), Some(b)) => within(a as f64, b as f64),
        _ => true,
    };
    let heap_ok = within(warm.heap as f64, last.heap as f64);
    let live_ok = warm.live == last.live;
    let flat = rss_ok && heap_ok && live_ok;
    let rss = match (warm.rss, last.rss) {
        (Some(a), Some(b)) => format!("{:+.2} MiB", (b as f64 - a as f64) / 1048576.0),
        _ => "n/a".to_string(),
    };
    format!(
        "soak verdict: {} (from {} to {} submissions: RSS {rss}{}, heap {:+} B{}, live objects {} -> {}{})\n",
        if flat { "FLAT" } else { "NOT FLAT" },
        warm.submissions,
        last.submissions,
        if rss_ok { "" } else { " beyond 5% + 1 MiB" },
        last.heap - warm.heap,
        if heap_ok { "" } else { " beyond 5% + 1 MiB" },
        warm.live.total(),
        last.live.total(),
        if live_ok { "" } else { ", not equal" },
    )
}

/// Runs the soak on `t` for `submissions` submissions, printing its table
/// to stdout row by row as the samples are taken (a long run shows progress).
pub fn run(t: &Target, submissions: u64) -> Result<(), String> {
    let e = |e: UrError| e.to_string();
    let say = |line: &str| {
        print!("{line}");
        let _ = std::io::stdout().flush();
    };
    say(&format!("### soak on `{}`\n\n", t.device));
    let can_update = t.device.info().command_buffer.update.contains(UpdateCapabilities::KERNEL_ARGUMENTS);
    if !can_update {
        say("updates left out: the device cannot update kernel arguments\n\n");
    }
    let alloc = || UsmAllocation::new(&t.context, UsmKind::Device, ELEMENTS * 4);
    let (data, copy, back) = (alloc().map_err(e)?, alloc().map_err(e)?, alloc().map_err(e)?);
    let (gdata, gcopy) = (alloc().map_err(e)?, alloc().map_err(e)?);
    let buffer = record_buffer(t, data.ptr(), copy.ptr(), back.ptr(), can_update).map_err(e)?;
    let runs = Arc::new(AtomicU64::new(0));
    let graph = build_graph(t, gdata.ptr(), gcopy.ptr(), &runs).map_err(e)?;

    say("| submissions | elapsed s | RSS MiB | heap bytes | live objects | ctx/queue/event/usm/cb/program/kernel |\n");
    say("|---|---|---|---|---|---|\n");
    let start = Instant::now();
    say(&Sample::take(0, start).row());
    let every = (submissions / 10).max(1);
    let mut in_flight: VecDeque<Event> = VecDeque::with_capacity(IN_FLIGHT);
    let mut samples: Vec<Sample> = Vec::new();
    let (mut graph_runs, mut value) = (0u64, 0u32);
    for i in 1..=submissions {
        let event = if i % GRAPH_EVERY == 0 {
            graph_runs += 1;
            graph.enqueue_on(&t.queue, &[]).map_err(e)?
        } else {
            if let (true, Some(first)) = (i % UPDATE_EVERY == 1, &buffer.first) {
                // The previous submissions may still read the arguments: an
                // update applies to later enqueues only.
                value = value.wrapping_add(1);
                let v = value;
                let change = KernelLaunchUpdate::new(first).arg(1, KernelArg::value(&v));
                // SAFETY: only the value argument changes; the pointer stays in bounds.
                unsafe { buffer.cb.update_kernel_launches(&[change]) }.map_err(e)?;
            }
            t.queue.enqueue_command_buffer(&buffer.cb, &[]).map_err(e)?
        };
        in_flight.push_back(event);
        if in_flight.len() >= IN_FLIGHT {
            drain(&mut in_flight).map_err(e)?;
        }
        if i % every == 0 || i == submissions {
            drain(&mut in_flight).map_err(e)?;
            let sample = Sample::take(i, start);
            say(&sample.row());
            samples.push(sample);
        }
    }
    drain(&mut in_flight).map_err(e)?;
    let seconds = start.elapsed().as_secs_f64();

    // The work really ran: the host task once per graph submission, and the
    // command buffer's copies carry the last updated value.
    let first = t.queue.clone_dtoh_range::<u32>(back.ptr(), 1, &[]).map_err(e)?[0];
    let ran = runs.load(Ordering::Relaxed);
    say(&format!(
        "\n{submissions} submissions in {seconds:.1} s ({:.0}/s): {graph_runs} graph submissions, {ran} host-task runs; \
             first element after the last command-buffer run {first} (last value set {value})\n",
        submissions as f64 / seconds
    ));
    if ran != graph_runs || (can_update && submissions >= 2 && first != value) {
        return Err(format!(
            "the workload did not run as submitted: {ran} host-task runs for {graph_runs} graph submissions, element {first} for value {value}"
        ));
    }
    // The first tenth is warm-up (pools, caches, lazily built native objects).
    match (samples.first(), samples.last()) {
        (Some(warm), Some(last)) => say(&verdict(warm, last)),
        _ => say("soak verdict: no samples\n"),
    }
    say("\n");
    Ok(())
}
