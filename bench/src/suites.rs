//! The measurements, each run on one device.

use std::time::Instant;

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Device, Event, Kernel, KernelArg, KernelLaunch,
    KernelLaunchUpdate, Program, Queue, QueueProperties, SyncPoint, UpdateCapabilities, UrError, UsmAllocation,
    UsmKind,
};
use serde::{Deserialize, Serialize};

use crate::flat_shapes::AXPB_ITEMS;
use crate::stats::{Repeats, Summary, measure, measure_interleaved, time};

/// One figure of one benchmark on one device.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// `cpu:0`, `cuda:0 emulated`, ...
    pub device: String,
    /// The backend's name.
    pub backend: String,
    /// The device's name.
    pub device_name: String,
    /// Benchmark group: `submission`, `finalize`, `update`, `cpu_per_node`, `submit_graph`, ...
    pub benchmark: String,
    /// Graph shape: `chain`, `fork_join`, `wide`.
    pub shape: String,
    /// What was measured: `eager`, `replay`, `raw`, `update`, `rebuild`, ...
    pub variant: String,
    /// `host_ns_per_node` (time to return from submitting), `wall_ns_per_node`
    /// (to completion), `ns_per_node`, `ns`, `heap_bytes_per_command`, `rss_bytes_per_command`.
    pub metric: String,
    /// Node or kernel count.
    pub n: usize,
    /// The figure.
    #[serde(flatten)]
    pub summary: Summary,
}

/// A device and what every benchmark on it needs.
pub struct Target {
    pub device: Device,
    pub context: Context,
    pub queue: Queue,
    pub ooo_queue: Option<Queue>,
    pub empty: Kernel,
    pub fill: Kernel,
    pub axpb: Kernel,
    pub sin: Result<Kernel, UrError>,
}

impl Target {
    pub fn new(device: &Device) -> Result<Target, UrError> {
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let ooo_queue = device
            .info()
            .out_of_order_queues
            .then(|| Queue::new(&context, QueueProperties { out_of_order: true, profiling: false }))
            .transpose()?;
        let library = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
        let sin = Program::new(&context, &crate::kernels::bundle()).and_then(|p| Kernel::new(&p, "sin_f32"));
        Ok(Target {
            device: device.clone(),
            empty: Kernel::new(&library, "empty")?,
            fill: Kernel::new(&library, "fill")?,
            axpb: Kernel::new(&library, "axpb")?,
            sin,
            context,
            queue,
            ooo_queue,
        })
    }

    pub(crate) fn record(
        &self,
        benchmark: &str,
        shape: &str,
        variant: &str,
        metric: &str,
        n: usize,
        summary: Summary,
    ) -> Record {
        Record {
            device: self.device.to_string(),
            backend: self.device.backend().name().to_string(),
            device_name: self.device.info().name.clone(),
            benchmark: benchmark.into(),
            shape: shape.into(),
            variant: variant.into(),
            metric: metric.into(),
            n,
            summary,
        }
    }
}

/// The shape of a benchmark graph of trivial kernels.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Each node after the previous one.
    Chain,
    /// One root, `n - 2` independent nodes after it, one node after them all.
    ForkJoin,
    /// `n` independent nodes.
    Wide,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Chain => "chain",
            Shape::ForkJoin => "fork_join",
            Shape::Wide => "wide",
        }
    }

    /// The predecessors of node `i` of an `n`-node graph.
    pub(crate) fn deps(self, i: usize, n: usize) -> Vec<usize> {
        match self {
            Shape::Chain => i.checked_sub(1).into_iter().collect(),
            Shape::ForkJoin if n < 3 => i.checked_sub(1).into_iter().collect(),
            Shape::ForkJoin if i == 0 => Vec::new(),
            Shape::ForkJoin if i == n - 1 => (1..n - 1).collect(),
            Shape::ForkJoin => vec![0],
            Shape::Wide => Vec::new(),
        }
    }
}

/// An `n`-node command buffer of `empty` kernels in `shape`.
pub fn build(t: &Target, shape: Shape, n: usize, desc: CommandBufferDesc) -> Result<CommandBuffer, UrError> {
    let cb = CommandBuffer::new(&t.context, &t.device, desc)?;
    let mut points: Vec<SyncPoint> = Vec::with_capacity(n);
    let launch = KernelLaunch::new(&t.empty, &[1], &[]);
    for i in 0..n {
        let deps: Vec<SyncPoint> = shape.deps(i, n).into_iter().map(|d| points[d]).collect();
        // SAFETY: `empty` touches no memory.
        let appended = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&deps))? };
        points.push(appended.sync_point);
    }
    cb.finalize()?;
    Ok(cb)
}

/// Every variant the submission group samples on some backend, which
/// `--submission-variants` may name.
pub const SUBMISSION_VARIANTS: [&str; 8] =
    ["eager", "replay", "eager_axpb", "raw", "raw_eager", "raw_eager_axpb", "raw_eager_waits", "raw_eager_batched"];

/// Submits the same `n` kernels eagerly; returns the event of the last one.
///
/// A launch's event is kept only while a later launch's wait list names
/// it: on an in-order queue each goes as the next launch is made, as the
/// raw baselines release theirs after each enqueue. Keeping every event of
/// a chain until the last launch cost Intel's OpenCL CPU runtime 1.2-1.5 µs
/// per launch (docs/performance.md, "Events kept by the caller").
fn submit_eager(t: &Target, shape: Shape, n: usize) -> Result<Event, UrError> {
    let launch = KernelLaunch::new(&t.empty, &[1], &[]);
    // Independent nodes need an out-of-order queue to be independent.
    let queue = match (shape, &t.ooo_queue) {
        (Shape::Chain, _) | (_, None) => &t.queue,
        (_, Some(q)) => q,
    };
    let waits_name_events = queue.properties().out_of_order && !matches!(shape, Shape::Wide);
    let mut events: Vec<Event> = Vec::with_capacity(if waits_name_events { n } else { 1 });
    for i in 0..n {
        if !waits_name_events {
            events.clear();
        }
        let deps: Vec<&Event> =
            if waits_name_events { shape.deps(i, n).into_iter().map(|d| &events[d]).collect() } else { Vec::new() };
        // SAFETY: `empty` touches no memory.
        events.push(unsafe { queue.launch_kernel(&launch, &deps)? });
    }
    match shape {
        Shape::Wide if queue.properties().out_of_order => queue.barrier(&[]),
        _ => Ok(events.pop().expect("n >= 1")),
    }
}

/// Launches `axpb` `n` times eagerly on the in-order queue, each over
/// [`AXPB_ITEMS`] work-items with a USM pointer and two values and returning
/// its event, as `abi/harness/bench/kernel_submit.c` launches it through the
/// loader: the Rust side of the ABI's cost with arguments. Returns the
/// event of the last.
fn submit_eager_axpb(t: &Target, data: &UsmAllocation, n: usize) -> Result<Event, UrError> {
    let (a, b) = (1u32, 1u32);
    let args = [KernelArg::Pointer(data.ptr()), KernelArg::value(&a), KernelArg::value(&b)];
    let launch = KernelLaunch::new(&t.axpb, &[AXPB_ITEMS], &args);
    let mut last = None;
    for _ in 0..n {
        // SAFETY: one work-item per u32 of the AXPB_ITEMS-element allocation,
        // which outlives the launches (the caller waits for the last).
        last = Some(unsafe { t.queue.launch_kernel(&launch, &[])? });
    }
    last.ok_or_else(|| cmdbuf::err!(InvalidValue, "no launch: n is 0"))
}

/// One sample of a timed variant: host time to submit and wall time to completion.
pub(crate) type Sample = Result<[std::time::Duration; 2], String>;

/// Replay against eager submission and, given `raw`, against the same graph
/// built with the backend's own API and against the same kernels submitted
/// eagerly with it (see [`crate::raw`]): host time to submit and wall time
/// to completion, per node. The chain is also launched as `eager_axpb`
/// ([`submit_eager_axpb`]: a kernel with arguments, the ABI comparison's
/// Rust side). The variants of one shape and size are sampled
/// in one loop, one sample each per round in rotated order
/// ([`measure_interleaved`]), so their ratios do not carry the machine's
/// drift between two phases. `only` names the variants to sample
/// ([`SUBMISSION_VARIANTS`]; all where `None`). `row` is called with the
/// records so far after each shape and size, so that its row prints as it
/// finishes.
pub fn submission(
    t: &Target,
    repeats: Repeats,
    sizes: &[usize],
    only: Option<&[String]>,
    raw: Option<&mut (dyn crate::raw::RawGraph + 'static)>,
    out: &mut Vec<Record>,
    row: &mut dyn FnMut(&[Record], Shape, usize),
) -> Result<(), String> {
    let e = |e: UrError| e.to_string();
    let eager_variants: Vec<&'static str> =
        raw.as_deref().map(|r| r.eager_variants().into_iter().map(|(v, _)| v).collect()).unwrap_or_default();
    let raw = raw.map(std::cell::RefCell::new);
    let axpb_data = UsmAllocation::new(&t.context, UsmKind::Device, AXPB_ITEMS * 4).map_err(e)?;
    for shape in [Shape::Chain, Shape::ForkJoin] {
        for &n in sizes {
            let cb = build(t, shape, n, CommandBufferDesc::default()).map_err(e)?;
            let mut eager = || timed_submission(|| submit_eager(t, shape, n));
            let mut replay = || timed_replay(t, &cb);
            let mut variants = vec!["eager", "replay"];
            let mut bodies: Vec<Box<dyn FnMut() -> Sample + '_>> = vec![Box::new(&mut eager), Box::new(&mut replay)];
            if matches!(shape, Shape::Chain) {
                variants.push("eager_axpb");
                bodies.push(Box::new(|| timed_submission(|| submit_eager_axpb(t, &axpb_data, n))));
            }
            if let Some(raw) = &raw {
                let preds: Vec<Vec<usize>> = (0..n).map(|i| shape.deps(i, n)).collect();
                raw.borrow_mut().build(&preds)?;
                variants.push("raw");
                bodies.push(Box::new(|| timed_raw_launch(&mut **raw.borrow_mut())));
                for (index, variant) in eager_variants.iter().enumerate() {
                    // Kernels with arguments: the chain's, as `eager_axpb`;
                    // wait lists: the shapes cmdbuf submits with them.
                    let chain = matches!(shape, Shape::Chain);
                    if (variant.ends_with("_axpb") && !chain) || (variant.ends_with("_waits") && chain) {
                        continue;
                    }
                    variants.push(variant);
                    bodies.push(Box::new(move || timed_raw_eager(&mut **raw.borrow_mut(), index, n)));
                }
            }
            if let Some(only) = only {
                (variants, bodies) =
                    variants.into_iter().zip(bodies).filter(|(v, _)| only.iter().any(|o| o == v)).unzip();
                if variants.is_empty() {
                    continue;
                }
            }
            let mut refs: Vec<&mut dyn FnMut() -> Sample> =
                bodies.iter_mut().map(|b| &mut **b as &mut dyn FnMut() -> Sample).collect();
            let summaries = measure_interleaved(repeats.per_work(n), &mut refs)?;
            for (variant, [host, wall]) in variants.into_iter().zip(summaries) {
                out.push(t.record("submission", shape.name(), variant, "host_ns_per_node", n, host.per(n)));
                out.push(t.record("submission", shape.name(), variant, "wall_ns_per_node", n, wall.per(n)));
            }
            row(out, shape, n);
        }
    }
    Ok(())
}

/// Issue item 3 — finalize cost per node (create, append, finalize) and memory per command.
pub fn finalize(t: &Target, repeats: Repeats, sizes: &[usize], out: &mut Vec<Record>) -> Result<(), UrError> {
    for &n in sizes {
        let [cost] = measure(repeats.scaled(n), || {
            let (_cb, d) = time(|| build(t, Shape::Chain, n, CommandBufferDesc::default()))?;
            Ok::<_, UrError>([d])
        })?;
        out.push(t.record("finalize", "chain", "build", "ns_per_node", n, cost.per(n)));
    }
    // Memory per command of the largest buffer: the Rust heap exactly (cmdbuf-core
    // and the adapter), and the resident set, which also sees the driver's
    // own allocations but moves in pages and reuses freed ones.
    let n = *sizes.iter().max().unwrap_or(&1000);
    let one = |bytes: f64| Summary { median: bytes, p10: bytes, p90: bytes, samples: 1 };
    let (heap_before, rss_before) = (crate::alloc::live_heap_bytes(), resident_bytes());
    let cb = build(t, Shape::Chain, n, CommandBufferDesc::default())?;
    let heap = (crate::alloc::live_heap_bytes() - heap_before) as f64 / n as f64;
    out.push(t.record("finalize", "chain", "build", "heap_bytes_per_command", n, one(heap)));
    if let (Some(before), Some(after)) = (rss_before, resident_bytes()) {
        let rss = after.saturating_sub(before) as f64 / n as f64;
        out.push(t.record("finalize", "chain", "build", "rss_bytes_per_command", n, one(rss)));
    }
    drop(cb);
    Ok(())
}

/// Resident memory of this process (Linux), for memory per command.
pub(crate) fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// How long `update_settled` waits after a replay: long enough for the
/// clean-up of a 10,000-command replay on other threads (milliseconds at
/// most), short enough to keep the suite quick.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(10);

/// Issue item 4 (issue 15, goal 1) — one kernel argument changed in an
/// `n`-kernel executable buffer. Four figures, each timed on its own:
/// - `update`: the update call alone, right after the replay before it;
/// - `update_again`: a second update call right after the first: the call's
///   own work, without the clean-up the replay before left running on other
///   threads (on a machine with few cores the first update shares the cores
///   and the allocator with it, which costs up to 10 µs after a
///   10,000-command replay whatever the backend does);
/// - `update_settled`: the same second call, in a pair made [`SETTLE`] after
///   a replay (a loop of its own): the call without the replay's clean-up
///   running beside it;
/// - `replay_after_update`: the enqueue and completion that follow it, which
///   is where a backend that defers work (re-recording, copying a snapshot
///   still held by a finished run) pays for it;
/// - `replay`: enqueue and completion of the same buffer without an update;
/// - `rebuild`: create, append and finalize of the same commands in a new
///   (not updatable) buffer, which is what an application without updates does.
pub fn update(t: &Target, repeats: Repeats, sizes: &[usize], out: &mut Vec<Record>) -> Result<(), String> {
    if !t.device.info().command_buffer.update.contains(UpdateCapabilities::KERNEL_ARGUMENTS) {
        return Err("the device cannot update kernel arguments".into());
    }
    let e = |e: UrError| e.to_string();
    for &n in sizes {
        let data = UsmAllocation::new(&t.context, UsmKind::Device, n * 4).map_err(e)?;
        let record =
            |desc: CommandBufferDesc, value: u32| -> Result<(CommandBuffer, Vec<cmdbuf::CommandHandle>), UrError> {
                let cb = CommandBuffer::new(&t.context, &t.device, desc)?;
                let mut handles = Vec::new();
                let args = [KernelArg::Pointer(data.ptr()), KernelArg::value(&value)];
                let mut last: Option<SyncPoint> = None;
                for i in 0..n {
                    let offset = [i];
                    let launch = KernelLaunch::new(&t.fill, &[1], &args).global_offset(&offset);
                    let deps: Vec<SyncPoint> = last.into_iter().collect();
                    // SAFETY: each node writes element i of an n-element allocation.
                    let a = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&deps))? };
                    last = Some(a.sync_point);
                    handles.extend(a.command);
                }
                cb.finalize()?;
                Ok((cb, handles))
            };
        let updatable = CommandBufferDesc { updatable: true, ..Default::default() };
        let (cb, handles) = record(updatable, 0).map_err(e)?;
        let replay = || t.queue.enqueue_command_buffer(&cb, &[])?.wait();
        let mut value = 0u32;
        let r = repeats.scaled(n);
        // The update itself is cheap however large n is: keep enough samples
        // for its percentiles even where the replays between them are long.
        let ru = Repeats { warmup: r.warmup.max(2), samples: r.samples.max(20).min(repeats.samples.max(5)) };
        let mut update = || {
            value += 1;
            let v = value;
            let change = KernelLaunchUpdate::new(&handles[n / 2]).arg(1, KernelArg::value(&v));
            // SAFETY: only the value argument changes; the pointer stays in bounds.
            time(|| unsafe { cb.update_kernel_launches(&[change]) }).map(|((), d)| d)
        };
        let [updated, again, after] = measure(ru, || {
            let first = update()?;
            let second = update()?;
            let ((), replay) = time(replay)?;
            Ok::<_, UrError>([first, second, replay])
        })
        .map_err(e)?;
        // The second call again, once the replay's clean-up (ours and the
        // driver's, on other threads) has had time to end: where
        // `update_again` grows with n and this does not, the growth is that
        // concurrent work, not the update call. A loop of its own, so that
        // the sleep leaves the figures above as they were.
        let [settled] = measure(ru, || {
            replay()?;
            std::thread::sleep(SETTLE);
            update()?;
            Ok::<_, UrError>([update()?])
        })
        .map_err(e)?;
        let [replayed] = measure(r, || Ok::<_, UrError>([time(replay)?.1])).map_err(e)?;
        let [rebuilt] = measure(r, || {
            value += 1;
            let (_cb, d) = time(|| record(CommandBufferDesc::default(), value))?;
            Ok::<_, UrError>([d])
        })
        .map_err(e)?;
        out.push(t.record("update", "chain", "update", "ns", n, updated));
        out.push(t.record("update", "chain", "update_again", "ns", n, again));
        out.push(t.record("update", "chain", "update_settled", "ns", n, settled));
        out.push(t.record("update", "chain", "replay_after_update", "ns", n, after));
        out.push(t.record("update", "chain", "replay", "ns", n, replayed));
        out.push(t.record("update", "chain", "rebuild", "ns", n, rebuilt));
    }
    Ok(())
}

/// Issue item 5 — host overhead per node of replaying a chain and a wide DAG
/// of trivial kernels (the CPU adapter's figure; run with 1 and all workers).
/// Measured twice: enqueue then `wait` (the waiting thread may run the
/// replay itself, as the CPU adapter's caller-runs does), and enqueue then
/// polling the status until it is complete, which leaves the replay to the
/// workers (variant `<variant>, workers run`).
pub fn per_node(t: &Target, repeats: Repeats, n: usize, variant: &str, out: &mut Vec<Record>) -> Result<(), UrError> {
    for shape in [Shape::Chain, Shape::Wide] {
        let cb = build(t, shape, n, CommandBufferDesc::default())?;
        let [wall] = measure(repeats, || {
            let (_, d) = time(|| t.queue.enqueue_command_buffer(&cb, &[])?.wait())?;
            Ok::<_, UrError>([d])
        })?;
        out.push(t.record("cpu_per_node", shape.name(), variant, "ns_per_node", n, wall.per(n)));
        let [wall] = measure(repeats, || {
            let (_, d) = time(|| {
                let event = t.queue.enqueue_command_buffer(&cb, &[])?;
                while !event.status().is_terminal() {
                    std::thread::yield_now();
                }
                event.wait()
            })?;
            Ok::<_, UrError>([d])
        })?;
        let workers = format!("{variant}, workers run");
        out.push(t.record("cpu_per_node", shape.name(), &workers, "ns_per_node", n, wall.per(n)));
    }
    Ok(())
}

/// Bytes each USM memory command of [`usm_submission`] moves.
const USM_BYTES: usize = 256;

/// Submission of N USM memory commands in a chain (copies and fills of
/// 256 bytes in turn, as a SYCL graph of `memcpy` and `fill` nodes has):
/// replayed from a command buffer against submitted eagerly on the in-order
/// queue, sampled interleaved; ns per command, host and wall.
pub fn usm_submission(t: &Target, repeats: Repeats, sizes: &[usize], out: &mut Vec<Record>) -> Result<(), String> {
    let e = |e: UrError| e.to_string();
    let a = UsmAllocation::new(&t.context, UsmKind::Device, USM_BYTES).map_err(e)?;
    let b = UsmAllocation::new(&t.context, UsmKind::Device, USM_BYTES).map_err(e)?;
    for &n in sizes {
        let cb = CommandBuffer::new(&t.context, &t.device, CommandBufferDesc::default()).map_err(e)?;
        let mut last: Option<SyncPoint> = None;
        for i in 0..n {
            let opts = AppendOptions::new().after(last.as_slice());
            let appended = if i % 2 == 0 {
                cb.append_usm_memcpy(b.ptr(), a.ptr(), USM_BYTES, opts)
            } else {
                cb.append_usm_fill(a.ptr(), &[i as u8], USM_BYTES, opts)
            };
            last = Some(appended.map_err(e)?.sync_point);
        }
        cb.finalize().map_err(e)?;
        let mut eager = || {
            timed_submission(|| {
                let mut event = None;
                for i in 0..n {
                    event = Some(if i % 2 == 0 {
                        t.queue.usm_memcpy(b.ptr(), a.ptr(), USM_BYTES, &[])
                    } else {
                        t.queue.usm_fill(a.ptr(), &[i as u8], USM_BYTES, &[])
                    });
                }
                event.expect("n >= 1")
            })
        };
        let mut replay = || timed_replay(t, &cb);
        let summaries = measure_interleaved(repeats.per_work(n), &mut [&mut eager, &mut replay])?;
        for (variant, [host, wall]) in ["eager", "replay"].into_iter().zip(summaries) {
            out.push(t.record("usm_submission", "memory_chain", variant, "host_ns_per_node", n, host.per(n)));
            out.push(t.record("usm_submission", "memory_chain", variant, "wall_ns_per_node", n, wall.per(n)));
        }
    }
    Ok(())
}

/// Issue item 6a — the SubmitGraph shape of the SYCL-graph benchmarks: a graph of `k`
/// trivial kernels submitted repeatedly; host time per submission.
pub fn submit_graph(t: &Target, repeats: Repeats, kernels: &[usize], out: &mut Vec<Record>) -> Result<(), UrError> {
    const BATCH: usize = 100;
    for &k in kernels {
        let cb = build(t, Shape::Chain, k, CommandBufferDesc::default())?;
        let [host, wall] = measure(repeats.scaled(k * 10), || {
            let start = Instant::now();
            let mut last = None;
            for _ in 0..BATCH {
                last = Some(t.queue.enqueue_command_buffer(&cb, &[])?);
            }
            let host = start.elapsed() / BATCH as u32;
            last.expect("BATCH > 0").wait()?;
            Ok::<_, UrError>([host, start.elapsed() / BATCH as u32])
        })?;
        out.push(t.record("submit_graph", "chain", "replay", "host_ns_per_submission", k, host));
        out.push(t.record("submit_graph", "chain", "replay", "wall_ns_per_submission", k, wall));
        let [host, wall] = measure(repeats.scaled(k * 10), || {
            let start = Instant::now();
            let mut last = None;
            for _ in 0..BATCH {
                last = Some(submit_eager(t, Shape::Chain, k)?);
            }
            let host = start.elapsed() / BATCH as u32;
            last.expect("BATCH > 0").wait()?;
            Ok::<_, UrError>([host, start.elapsed() / BATCH as u32])
        })?;
        out.push(t.record("submit_graph", "chain", "eager", "host_ns_per_submission", k, host));
        out.push(t.record("submit_graph", "chain", "eager", "wall_ns_per_submission", k, wall));
    }
    Ok(())
}

/// Issue item 6b — the SinKernelGraph shape: `k` kernels computing `sin` over 64K floats
/// one after another, as a graph and eagerly; wall time per execution.
pub fn sin_kernel_graph(t: &Target, repeats: Repeats, kernels: &[usize], out: &mut Vec<Record>) -> Result<(), String> {
    const ELEMENTS: usize = 65536;
    let sin = t.sin.as_ref().map_err(|e| format!("no sin_f32 kernel for this device: {e}"))?;
    let e = |e: UrError| e.to_string();
    let data = UsmAllocation::new(&t.context, UsmKind::Device, ELEMENTS * 4).map_err(e)?;
    let ones = vec![1.0f32; ELEMENTS];
    let bytes: Vec<u8> = ones.iter().flat_map(|f| f.to_le_bytes()).collect();
    t.queue.write_usm(data.ptr(), &bytes, &[]).map_err(e)?;
    let args = [KernelArg::Pointer(data.ptr())];
    let launch = KernelLaunch::new(sin, &[ELEMENTS], &args);
    for &k in kernels {
        let cb = CommandBuffer::new(&t.context, &t.device, CommandBufferDesc { in_order: true, ..Default::default() })
            .map_err(e)?;
        for _ in 0..k {
            // SAFETY: one work-item per element of the 64K-float allocation.
            unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new()) }.map_err(e)?;
        }
        cb.finalize().map_err(e)?;
        let r = repeats.scaled(k * 10);
        let [graph] = measure(r, || {
            let (_, d) = time(|| t.queue.enqueue_command_buffer(&cb, &[])?.wait())?;
            Ok::<_, UrError>([d])
        })
        .map_err(e)?;
        let [eager] = measure(r, || {
            let (_, d) = time(|| {
                let mut last = None;
                for _ in 0..k {
                    // SAFETY: as above.
                    last = Some(unsafe { t.queue.launch_kernel(&launch, &[])? });
                }
                last.expect("k > 0").wait()
            })?;
            Ok::<_, UrError>([d])
        })
        .map_err(e)?;
        out.push(t.record("sin_kernel_graph", "chain", "replay", "wall_ns", k, graph));
        out.push(t.record("sin_kernel_graph", "chain", "eager", "wall_ns", k, eager));
    }
    Ok(())
}

/// Issue item 6c — the cudaGraphsPerfScaling shape: chains of empty kernels of growing
/// length, replayed; wall time per node (the plotted series).
pub fn perf_scaling(t: &Target, repeats: Repeats, lengths: &[usize], out: &mut Vec<Record>) -> Result<(), UrError> {
    for &n in lengths {
        let cb = build(t, Shape::Chain, n, CommandBufferDesc::default())?;
        let r = repeats.scaled(n);
        let [replay] = measure(r, || {
            let (_, d) = time(|| t.queue.enqueue_command_buffer(&cb, &[])?.wait())?;
            Ok::<_, UrError>([d])
        })?;
        let [eager] = measure(r, || {
            let (_, d) = time(|| submit_eager(t, Shape::Chain, n)?.wait())?;
            Ok::<_, UrError>([d])
        })?;
        out.push(t.record("perf_scaling", "chain", "replay", "wall_ns_per_node", n, replay.per(n)));
        out.push(t.record("perf_scaling", "chain", "eager", "wall_ns_per_node", n, eager.per(n)));
    }
    Ok(())
}

/// One replay of `cb` on the target's queue: host time to return from the
/// enqueue and wall time to completion.
pub(crate) fn timed_replay(t: &Target, cb: &CommandBuffer) -> Result<[std::time::Duration; 2], String> {
    timed_submission(|| t.queue.enqueue_command_buffer(cb, &[]))
}

/// Host time of `submit` (which returns the event of the last thing it
/// submitted) and wall time to that event's completion.
fn timed_submission(submit: impl FnOnce() -> Result<Event, UrError>) -> Sample {
    let e = |e: UrError| e.to_string();
    let start = Instant::now();
    let last = submit().map_err(e)?;
    let host = start.elapsed();
    last.wait().map_err(e)?;
    Ok([host, start.elapsed()])
}

/// `count` submissions of `cb` back to back, the events dropped as a
/// runtime that submits a graph in a loop drops them, then a wait for the
/// last: host time per submission to return from them, and wall time per
/// submission to the last one's completion.
pub(crate) fn timed_replays_ahead(
    t: &Target,
    cb: &CommandBuffer,
    count: u32,
) -> Result<[std::time::Duration; 2], String> {
    let [host, wall] = timed_submission(|| {
        let mut last = t.queue.enqueue_command_buffer(cb, &[])?;
        for _ in 1..count {
            last = t.queue.enqueue_command_buffer(cb, &[])?;
        }
        Ok(last)
    })?;
    Ok([host / count, wall / count])
}

/// One raw eager submission of `nodes` kernels with eager baseline
/// `variant`: host time to return from it and wall time to completion.
pub(crate) fn timed_raw_eager(
    raw: &mut dyn crate::raw::RawGraph,
    variant: usize,
    nodes: usize,
) -> Result<[std::time::Duration; 2], String> {
    let start = Instant::now();
    raw.eager(variant, nodes)?;
    let host = start.elapsed();
    raw.wait()?;
    Ok([host, start.elapsed()])
}

/// One raw launch: host time to return from it and wall time to completion.
pub(crate) fn timed_raw_launch(raw: &mut dyn crate::raw::RawGraph) -> Result<[std::time::Duration; 2], String> {
    let start = Instant::now();
    raw.launch()?;
    let host = start.elapsed();
    raw.wait()?;
    Ok([host, start.elapsed()])
}
