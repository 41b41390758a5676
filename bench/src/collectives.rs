//! The `collectives` group (issue 29): all-reduce (sum of `f32`) over every
//! selected device, from 8 KiB to 256 MiB per rank, as a collective node
//! of a multi-device graph replayed, as eager calls of cmdbuf-core's
//! `Communicator`, and, on CUDA devices, as NCCL called directly on streams
//! (`raw::RawNccl`). Each figure is the time of one all-reduce in a batch
//! issued back to back and waited for at its end (as nccl-tests measures),
//! and its bus bandwidth, nccl-tests' definition: `2 (n - 1) / n * bytes /
//! time`. Results are checked exactly before timing.
//!
//! A second table times a data-parallel step: on each device 4 `increment`
//! kernels over its shard, then an in-place all-reduce (sum) of the
//! shards, as one multi-device graph replayed against the same step
//! submitted eagerly (kernel launches, then the communicator's all-reduce
//! on the same in-order queues: NCCL on streams on CUDA).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use cmdbuf::collective::{Communicator, DataType, Rank, ReduceOp};
use cmdbuf::{Backend, Context, Device, Event, Queue, QueueProperties, UrError, UsmAllocation};
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties};

use crate::stats::{Repeats, Summary, measure};
use crate::suites::Record;

fn record(devices: &str, names: &str, variant: &str, metric: &str, n: usize, summary: Summary) -> Record {
    Record {
        device: devices.into(),
        backend: "multi".into(),
        device_name: names.into(),
        benchmark: "collectives".into(),
        shape: "all_reduce".into(),
        variant: variant.into(),
        metric: metric.into(),
        n,
        summary,
    }
}

/// One rank: context, in-order queue, send and receive allocations.
struct Member {
    context: Context,
    queue: Queue,
    send: UsmAllocation,
    recv: UsmAllocation,
}

/// Runs the group over all of `devices` (at least two); the table, or why nothing ran.
pub fn run(devices: &[Device], repeats: Repeats, quick: bool, out: &mut Vec<Record>) -> String {
    let mut text = String::from("### `collectives` (all-reduce over every selected device)\n\n");
    if devices.len() < 2 {
        text += "not measured: needs two selected devices (UR_DEVICE_SELECTOR)\n\n";
        return text;
    }
    match measure_all(devices, repeats, quick, out) {
        Ok(table) => text += &table,
        Err(e) => {
            let _ = writeln!(text, "not measured: {e}\n");
        }
    }
    text += "#### Data-parallel step (4 kernels per device, then an all-reduce)\n\n";
    match measure_steps(devices, repeats, quick, out) {
        Ok(table) => text += &table,
        Err(e) => {
            let _ = writeln!(text, "not measured: {e}\n");
        }
    }
    text
}

/// Kernels per device in a step.
const STEP_KERNELS: usize = 4;
/// Steps per timed batch.
const STEP_BATCH: usize = 10;

fn measure_steps(devices: &[Device], repeats: Repeats, quick: bool, out: &mut Vec<Record>) -> Result<String, UrError> {
    let sizes: &[usize] = if quick { &[1 << 16, 1 << 20] } else { &[1 << 16, 1 << 20, 1 << 24] };
    struct Shard {
        context: Context,
        queue: Queue,
        increment: cmdbuf::Kernel,
    }
    let mut shards = Vec::new();
    for device in devices {
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let program = cmdbuf::Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
        let increment = cmdbuf::Kernel::new(&program, "increment")?;
        shards.push(Shard { context, queue, increment });
    }
    let n = shards.len();
    let contexts: Vec<&Context> = shards.iter().map(|s| &s.context).collect();
    let comm = Communicator::new(&contexts)?;
    let ids = devices.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" + ");
    let names = devices.iter().map(|d| d.info().name.clone()).collect::<Vec<_>>().join(" + ");
    let mut text = String::from(
        "ms per step (batches of 10 steps issued back to back), median (p10-p90)\n\n| elements per device | graph \
         | eager | eager / graph |\n|---:|---:|---:|---:|\n",
    );
    let mut submissions = 0;
    for &count in sizes {
        let kind = |d: &Device| {
            cmdbuf_conformance::cases::graph_multi_device::first_usm_kind(d)
                .ok_or_else(|| cmdbuf::err!(UnsupportedFeature, "{d} has no USM"))
        };
        let data: Vec<UsmAllocation> = shards
            .iter()
            .map(|s| UsmAllocation::new(&s.context, kind(s.context.device())?, count * 4))
            .collect::<Result<_, _>>()?;
        let graph = Graph::new_multi_device(&contexts, GraphProperties::default())?;
        let mut lasts = Vec::new();
        for (s, g) in shards.iter().zip(&data) {
            let (args, global) = ([cmdbuf::KernelArg::Pointer(g.ptr())], [count]);
            let launch = cmdbuf::KernelLaunch::new(&s.increment, &global, &args);
            let mut last: Option<cmdbuf_runtime::graph::Node> = None;
            for _ in 0..STEP_KERNELS {
                let deps: Vec<&cmdbuf_runtime::graph::Node> = last.iter().collect();
                let props = NodeProperties::new().on_device(s.context.device()).depends_on(&deps);
                // SAFETY: the allocation holds `count` u32s; `increment` touches element i for item i.
                last = Some(graph.add(|h| unsafe { h.launch(&launch) }, props)?);
            }
            lasts.push(last.expect("kernels"));
        }
        let buffers: Vec<(cmdbuf::UsmPtr, cmdbuf::UsmPtr)> = data.iter().map(|g| (g.ptr(), g.ptr())).collect();
        let deps: Vec<&cmdbuf_runtime::graph::Node> = lasts.iter().collect();
        graph.add(
            |h| h.all_reduce(&buffers, count, DataType::U32, ReduceOp::Sum),
            NodeProperties::new().depends_on(&deps),
        )?;
        let exec = graph.finalize(FinalizeProperties::default())?;
        submissions = exec.submissions_per_execution();
        let eager_step = || -> Result<Vec<Event>, UrError> {
            for (s, g) in shards.iter().zip(&data) {
                let (args, global) = ([cmdbuf::KernelArg::Pointer(g.ptr())], [count]);
                let launch = cmdbuf::KernelLaunch::new(&s.increment, &global, &args);
                for _ in 0..STEP_KERNELS {
                    // SAFETY: as for the graph's launches.
                    unsafe { s.queue.launch_kernel(&launch, &[])? };
                }
            }
            // In-order queues: each rank's part follows its kernels.
            let ranks: Vec<Rank<'_>> =
                shards.iter().zip(&data).map(|(s, g)| Rank::new(&s.queue, g.ptr(), g.ptr())).collect();
            comm.all_reduce(&ranks, count, DataType::U32, ReduceOp::Sum)
        };
        // One step from rank d holding d + 1: every rank holds the sum of d + 1 + 4.
        let expected = (0..n).map(|d| (d + 1 + STEP_KERNELS) as u32).sum::<u32>();
        for way in ["graph", "eager"] {
            for (d, (s, g)) in shards.iter().zip(&data).enumerate() {
                s.queue.usm_fill(g.ptr(), &(d as u32 + 1).to_ne_bytes(), count * 4, &[])?.wait()?;
            }
            if way == "graph" {
                exec.enqueue_on(&shards[0].queue, &[])?.wait()?;
            } else {
                for e in eager_step()? {
                    e.wait()?;
                }
            }
            for (d, (s, g)) in shards.iter().zip(&data).enumerate() {
                let mut got = vec![0u8; count * 4];
                s.queue.read_usm(g.ptr(), &mut got, &[])?;
                if let Some(i) =
                    got.chunks_exact(4).position(|c| u32::from_ne_bytes(c.try_into().expect("4")) != expected)
                {
                    return Err(cmdbuf::err!(Unknown, "{way} step of {count} elements: rank {d}, element {i} wrong"));
                }
            }
        }
        let r = repeats.scaled(count / 4096);
        let per_step = |d: Duration| [d / STEP_BATCH as u32];
        let [g] = measure(r, || -> Result<_, UrError> {
            let start = Instant::now();
            let mut last = None;
            for _ in 0..STEP_BATCH {
                last = Some(exec.enqueue_on(&shards[0].queue, &[])?);
            }
            last.expect("a batch").wait()?;
            Ok(per_step(start.elapsed()))
        })?;
        let [e] = measure(r, || -> Result<_, UrError> {
            let start = Instant::now();
            let mut last = Vec::new();
            for _ in 0..STEP_BATCH {
                last = eager_step()?;
            }
            for ev in &last {
                ev.wait()?;
            }
            Ok(per_step(start.elapsed()))
        })?;
        let ms = |s: &Summary| format!("{:.3} ({:.3}-{:.3})", s.median / 1e6, s.p10 / 1e6, s.p90 / 1e6);
        let _ = writeln!(text, "| {count} | {} | {} | {:.2}x |", ms(&g), ms(&e), e.median / g.median);
        for (variant, s) in [("step graph", g), ("step eager", e)] {
            let mut rec = record(&ids, &names, variant, "ns", count, s);
            rec.shape = "data_parallel_step".into();
            out.push(rec);
        }
    }
    let _ = writeln!(text, "\n{}", submissions_note(submissions));
    Ok(text)
}

/// What a graph's submissions per execution say about its path.
fn submissions_note(submissions: usize) -> String {
    let how = if submissions == 1 {
        "composed into one executable (on CUDA one `cuGraphLaunch`, the captured NCCL graph a child-graph node)"
    } else {
        "submitted partition by partition (a start marker, each partition, an end marker)"
    };
    format!("Graph adapter submissions per execution: {submissions}, {how}.\n")
}

fn err(e: impl std::fmt::Display) -> UrError {
    cmdbuf::err!(Unknown, "{e}")
}

fn measure_all(devices: &[Device], repeats: Repeats, quick: bool, out: &mut Vec<Record>) -> Result<String, UrError> {
    let sizes: Vec<usize> = if quick {
        vec![8 << 10, 1 << 20]
    } else {
        vec![8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20, 128 << 20, 256 << 20]
    };
    let max = *sizes.last().expect("sizes");
    let mut members = Vec::new();
    for device in devices {
        let kind = cmdbuf_conformance::cases::graph_multi_device::first_usm_kind(device)
            .ok_or_else(|| cmdbuf::err!(UnsupportedFeature, "{device} has no USM"))?;
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let send = UsmAllocation::new(&context, kind, max)?;
        let recv = UsmAllocation::new(&context, kind, max)?;
        members.push(Member { context, queue, send, recv });
    }
    let n = members.len();
    let contexts: Vec<&Context> = members.iter().map(|m| &m.context).collect();
    let comm = Communicator::new(&contexts)?;
    let how = comm.native_name().unwrap_or_else(|| "staged through the host".into());
    let raw = raw_baseline(devices, &members);
    // One all-reduce issued and waited for at a time: the latency a caller
    // sees, where the batches below measure back-to-back throughput.
    let mut single = String::from(
        "\nOne all-reduce at a time, issued and waited for (µs, median (p10-p90)): the latency of one call, \
         where the table above times batches issued back to back\n\n| bytes per rank | graph | eager | direct \
         NCCL | graph / direct |\n|---:|---:|---:|---:|---:|\n",
    );
    let names = devices.iter().map(|d| d.info().name.clone()).collect::<Vec<_>>().join(" + ");
    let ids = devices.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" + ");
    let mut text = format!(
        "Devices: {ids} ({names}); implementation: {how}; direct NCCL baseline: {}\n\nµs per all-reduce, median \
         (p10-p90), and bus bandwidth in GB/s; graph nodes: {}; graph: each all-reduce a graph execution; chain: \
         the batch as one graph of chained all-reduce nodes, per all-reduce\n\n| bytes per rank | graph | busbw | \
         chain | busbw | eager | busbw | direct NCCL | busbw | graph / direct busbw | chain / direct time \
         |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        match &raw {
            Ok(_) => "yes".to_string(),
            Err(e) => format!("none ({e})"),
        },
        if comm.native_name().is_none() {
            "issued at each execution"
        } else if capture_enabled() {
            "NCCL captured into a CUDA graph (a failed capture is logged at warn level and issued instead)"
        } else {
            "NCCL issued at each execution (UR_RS_NCCL_CAPTURE=0)"
        }
    );
    let mut submissions = 0;
    for &bytes in &sizes {
        let count = bytes / 4;
        // Rank r sends r + 1 everywhere: every rank receives n (n + 1) / 2.
        for (r, m) in members.iter().enumerate() {
            let data: Vec<u8> = std::iter::repeat_n((r as f32 + 1.0).to_ne_bytes(), count).flatten().collect();
            m.queue.write_usm(m.send.ptr(), &data, &[])?;
        }
        let buffers: Vec<(cmdbuf::UsmPtr, cmdbuf::UsmPtr)> =
            members.iter().map(|m| (m.send.ptr(), m.recv.ptr())).collect();
        let graph = Graph::new_multi_device(&contexts, GraphProperties::default())?;
        graph.add(|h| h.all_reduce(&buffers, count, DataType::F32, ReduceOp::Sum), NodeProperties::new())?;
        let exec = graph.finalize(FinalizeProperties::default())?;
        submissions = exec.submissions_per_execution();
        let batch = if bytes <= 4 << 20 { 20 } else { 5 };
        // The whole batch as one graph: `batch` all-reduce nodes in a chain,
        // as a framework captures a step's collectives.
        let chain = Graph::new_multi_device(&contexts, GraphProperties::default())?;
        let mut previous: Option<cmdbuf_runtime::graph::Node> = None;
        for _ in 0..batch {
            let deps: Vec<&cmdbuf_runtime::graph::Node> = previous.iter().collect();
            let node = chain.add(
                |h| h.all_reduce(&buffers, count, DataType::F32, ReduceOp::Sum),
                NodeProperties::new().depends_on(&deps),
            )?;
            previous = Some(node);
        }
        let chained = chain.finalize(FinalizeProperties::default())?;
        let expected = (n * (n + 1) / 2) as f32;
        let verify = |what: &str| -> Result<(), UrError> {
            for m in &members {
                m.queue.usm_fill(m.recv.ptr(), &0f32.to_ne_bytes(), bytes, &[])?.wait()?;
            }
            match what {
                "graph" => exec.enqueue_on(&members[0].queue, &[])?.wait()?,
                "chained graph" => chained.enqueue_on(&members[0].queue, &[])?.wait()?,
                _ => eager(&comm, &members, count, 1)?,
            }
            for (r, m) in members.iter().enumerate() {
                let mut got = vec![0u8; bytes];
                m.queue.read_usm(m.recv.ptr(), &mut got, &[])?;
                if let Some(i) =
                    got.chunks_exact(4).position(|c| f32::from_ne_bytes(c.try_into().expect("4")) != expected)
                {
                    return Err(cmdbuf::err!(
                        Unknown,
                        "{what} all-reduce of {bytes} bytes: rank {r}, element {i} wrong"
                    ));
                }
            }
            Ok(())
        };
        verify("graph")?;
        verify("chained graph")?;
        verify("eager")?;
        let r = repeats.scaled(bytes / (64 << 10));
        let per_call = |d: Duration| [d / batch as u32];
        let [g] = measure(r, || -> Result<_, UrError> {
            let start = Instant::now();
            let mut last = None;
            for _ in 0..batch {
                last = Some(exec.enqueue_on(&members[0].queue, &[])?);
            }
            last.expect("a batch").wait()?;
            Ok(per_call(start.elapsed()))
        })?;
        let [c] = measure(r, || -> Result<_, UrError> {
            let start = Instant::now();
            chained.enqueue_on(&members[0].queue, &[])?.wait()?;
            Ok(per_call(start.elapsed()))
        })?;
        let [e] = measure(r, || -> Result<_, UrError> {
            let start = Instant::now();
            eager(&comm, &members, count, batch)?;
            Ok(per_call(start.elapsed()))
        })?;
        let d = match &raw {
            Ok(raw) => {
                let addrs: Vec<(u64, u64)> = buffers.iter().map(|(s, r)| (s.addr(), r.addr())).collect();
                let [d] = measure(r, || -> Result<_, UrError> {
                    let start = Instant::now();
                    raw.all_reduce(&addrs, count, batch).map_err(err)?;
                    Ok(per_call(start.elapsed()))
                })?;
                Some(d)
            }
            Err(_) => None,
        };
        if bytes <= 512 << 10 {
            let [g1] = measure(r, || -> Result<_, UrError> {
                let start = Instant::now();
                exec.enqueue_on(&members[0].queue, &[])?.wait()?;
                Ok([start.elapsed()])
            })?;
            let [e1] = measure(r, || -> Result<_, UrError> {
                let start = Instant::now();
                eager(&comm, &members, count, 1)?;
                Ok([start.elapsed()])
            })?;
            let d1 = match &raw {
                Ok(raw) => {
                    let addrs: Vec<(u64, u64)> = buffers.iter().map(|(s, r)| (s.addr(), r.addr())).collect();
                    let [d1] = measure(r, || -> Result<_, UrError> {
                        let start = Instant::now();
                        raw.all_reduce(&addrs, count, 1).map_err(err)?;
                        Ok([start.elapsed()])
                    })?;
                    Some(d1)
                }
                Err(_) => None,
            };
            let us1 = |s: &Summary| format!("{:.1} ({:.1}-{:.1})", s.median / 1e3, s.p10 / 1e3, s.p90 / 1e3);
            let (dt, ratio) = match &d1 {
                Some(d) => (us1(d), format!("{:.2}x", g1.median / d.median)),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(single, "| {bytes} | {} | {} | {dt} | {ratio} |", us1(&g1), us1(&e1));
            for (variant, s) in [("graph_single", Some(g1)), ("eager_single", Some(e1)), ("direct_nccl_single", d1)] {
                if let Some(s) = s {
                    out.push(record(&ids, &names, variant, "ns", bytes, s));
                }
            }
        }
        let busbw = |s: &Summary| 2.0 * (n as f64 - 1.0) / n as f64 * bytes as f64 / s.median; // bytes per ns = GB/s
        let us = |s: &Summary| format!("{:.1} ({:.1}-{:.1})", s.median / 1e3, s.p10 / 1e3, s.p90 / 1e3);
        let (dt, dbw, ratio) = match &d {
            Some(d) => (us(d), format!("{:.1}", busbw(d)), format!("{:.0}%", 100.0 * busbw(&g) / busbw(d))),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let chained_ratio = match &d {
            Some(d) => format!("{:.2}x", c.median / d.median),
            None => "-".into(),
        };
        let _ = writeln!(
            text,
            "| {bytes} | {} | {:.1} | {} | {:.1} | {} | {:.1} | {dt} | {dbw} | {ratio} | {chained_ratio} |",
            us(&g),
            busbw(&g),
            us(&c),
            busbw(&c),
            us(&e),
            busbw(&e)
        );
        let bw = |s: &Summary| Summary { median: busbw(s), p10: busbw(s), p90: busbw(s), samples: s.samples };
        for (variant, s) in [("graph", Some(g)), ("graph_chain", Some(c)), ("eager", Some(e)), ("direct_nccl", d)] {
            if let Some(s) = s {
                out.push(record(&ids, &names, variant, "ns", bytes, s));
                out.push(record(&ids, &names, variant, "busbw_GBps", bytes, bw(&s)));
            }
        }
    }
    text += "\nEach all-reduce is out of place; a batch of 20 (5 above 4 MiB) is issued back to back and waited for \
             at its end. On the CPU machine the collective is staged through the host: the figures measure the \
             staging, not a link.\n";
    text += &single;
    text += "\n";
    text += &submissions_note(submissions);
    text += "\n";
    Ok(text)
}

/// Whether NCCL calls of graphs are captured (`UR_RS_NCCL_CAPTURE` is not `0`).
fn capture_enabled() -> bool {
    std::env::var_os("UR_RS_NCCL_CAPTURE").is_none_or(|v| v != "0")
}

/// `times` eager all-reduces back to back; waits for the last.
fn eager(comm: &Communicator, members: &[Member], count: usize, times: usize) -> Result<(), UrError> {
    let mut last: Vec<Event> = Vec::new();
    for _ in 0..times {
        let ranks: Vec<Rank<'_>> = members.iter().map(|m| Rank::new(&m.queue, m.send.ptr(), m.recv.ptr())).collect();
        last = comm.all_reduce(&ranks, count, DataType::F32, ReduceOp::Sum)?;
    }
    for e in &last {
        e.wait()?;
    }
    Ok(())
}

/// NCCL called directly, where every device is a CUDA device.
trait RawAllReduce {
    fn all_reduce(&self, addrs: &[(u64, u64)], count: usize, times: usize) -> Result<(), String>;
}

#[cfg(feature = "cuda")]
impl RawAllReduce for crate::raw::RawNccl {
    fn all_reduce(&self, addrs: &[(u64, u64)], count: usize, times: usize) -> Result<(), String> {
        self.all_reduce_f32(addrs, count, times)
    }
}

fn raw_baseline(devices: &[Device], members: &[Member]) -> Result<Box<dyn RawAllReduce>, String> {
    let _ = members;
    if !devices.iter().all(|d| d.backend() == Backend::Cuda) {
        return Err("not every device is a CUDA device".into());
    }
    #[cfg(feature = "cuda")]
    {
        let ordinals: Vec<i32> = devices
            .iter()
            .map(|d| d.native_handle().map(|h| h.0 as i32))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        Ok(Box::new(crate::raw::RawNccl::open(&ordinals)?))
    }
    #[cfg(not(feature = "cuda"))]
    Err("built without the `cuda` feature".into())
}
