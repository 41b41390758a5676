//! The `cuda_build` group (issue 15, goals 2 and 6, CUDA only): where the
//! time of a CUDA command buffer's build and of a one-kernel replay goes,
//! against the driver alone.
//!
//! - **Build**: graphs of N empty kernels built with raw driver calls
//!   (`cuGraphAddKernelNode_v2` with each node's dependency array, then
//!   `cuGraphInstantiateWithFlags`), in four shapes (chain; fork-join; a
//!   fan-out: one root and N - 1 nodes after it; a fan-in: N - 1
//!   independent nodes and one after them all), with dependencies
//!   as given (`direct`), in at most [`LANES`] lanes (`lanes`: a node
//!   also follows the oldest node without successors once there are that
//!   many), or as the CUDA adapter gives them (`lanes_pruned`: lanes, and
//!   once the graph had a lane edge, no edge that another dependency of the
//!   node implies; `cmdbuf_cuda::lanes`): ms to add the nodes, to
//!   instantiate, and µs of the first and of a later launch. (Dropping
//!   implied edges alone changes none of the four shapes: none has an
//!   edge another implies.) Then the same chain and fork-join as cmdbuf-core
//!   command buffers (create, append, finalize): the adapter logs its own
//!   split at debug level (`UR_LOG=cmdbuf_cuda=debug`: the appends,
//!   then the collector and instantiation).
//! - **Replay host time**: the driver calls one replay makes, each timed
//!   alone, and a one-kernel replay through cmdbuf-core against raw
//!   `cuGraphLaunch` + `cuEventRecord` on the same device, interleaved in
//!   one loop (`measure_interleaved`).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use cmdbuf::{Backend, CommandBufferDesc};

use crate::raw::Deps;
use crate::stats::{Repeats, Summary, measure, measure_interleaved};
use crate::suites::{Record, Shape, Target};

/// The predecessors of node `i` of an `n`-node graph of `shape`.
fn deps(shape: &str, i: usize, n: usize) -> Vec<usize> {
    match shape {
        "fan_out" if i > 0 => vec![0],
        "fan_in" if i == n - 1 => (0..n - 1).collect(),
        "fan_out" | "fan_in" => Vec::new(),
        "chain" => Shape::Chain.deps(i, n),
        _ => Shape::ForkJoin.deps(i, n),
    }
}

/// Branches side by side in the `lanes` builds: the CUDA adapter's.
const LANES: usize = cmdbuf_cuda::lanes::LANES;

/// Samples of a build of `n` nodes.
fn samples(n: usize) -> usize {
    if n <= 1000 { 5 } else { 3 }
}

/// A series (one shape and way, growing N) stops once a build takes longer
/// than this, or would at the next size: the quadratic ones would take
/// minutes.
const SERIES_LIMIT: Duration = Duration::from_secs(3);

/// The builds of a series so far: nodes and time.
#[derive(Default)]
struct Series(Vec<(usize, Duration)>);

impl Series {
    /// Whether a build of `n` nodes would exceed [`SERIES_LIMIT`], grown
    /// from the last build as the last two grew (at least linearly: a
    /// quadratic series is caught before it takes half a minute).
    fn too_slow(&self, n: usize) -> bool {
        let Some(&(m, took)) = self.0.last() else { return false };
        let ratio = n as f64 / m.max(1) as f64;
        let exponent = match self.0.iter().rev().nth(1) {
            Some(&(k, before)) if m > k && !before.is_zero() => {
                (took.as_secs_f64() / before.as_secs_f64()).ln() / (m as f64 / k as f64).ln()
            }
            _ => 1.0,
        };
        took.as_secs_f64() * ratio.powf(exponent.clamp(1.0, 2.0)) > SERIES_LIMIT.as_secs_f64()
    }
}

/// Runs the group on a CUDA device, handing each table row to `emit` as
/// it is measured (a run cut short keeps what it printed).
pub fn run(t: &Target, sizes: &[usize], out: &mut Vec<Record>, emit: &dyn Fn(&str)) -> Result<(), String> {
    if t.device.backend() != Backend::Cuda || t.device.is_emulated() {
        return Err("CUDA native devices only".into());
    }
    let mut raw = crate::raw::CudaGraph::open(&t.device.info().name)?;
    replay_host(t, &mut raw, out, emit)?;
    memory_node_launch(&mut raw, emit)?;
    emit(
        "CUDA graph build, raw driver calls: ms to add nodes / to instantiate, µs of the first / a later launch \
         (median of 3-5 builds)\n\n| shape | built | N | add ms | instantiate ms | first launch µs | launch µs |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for shape in ["fork_join", "fan_out", "fan_in", "chain"] {
        for (name, how) in
            [("direct", Deps::Direct), ("lanes", Deps::Lanes(LANES)), ("lanes_pruned", Deps::LanesPruned(LANES))]
        {
            let mut series = Series::default();
            for &n in sizes {
                if series.too_slow(n) {
                    emit(&format!("| {shape} | {name} | {n} | not measured: over {SERIES_LIMIT:?} expected | | | |\n"));
                    break;
                }
                let preds: Vec<Vec<usize>> = (0..n).map(|i| deps(shape, i, n)).collect();
                let mut costs = Vec::new();
                let mut slow = false;
                for _ in 0..samples(n) {
                    let cost = raw.build_timed(&preds, how)?;
                    slow |= cost.add + cost.instantiate > SERIES_LIMIT;
                    costs.push(cost);
                    if slow {
                        break;
                    }
                }
                let med = |f: &dyn Fn(&crate::raw::BuildCost) -> f64| {
                    Summary::of(costs.iter().map(f).collect()).expect("samples")
                };
                let add = med(&|c| c.add.as_nanos() as f64);
                let inst = med(&|c| c.instantiate.as_nanos() as f64);
                let first = med(&|c| c.first_launch.as_nanos() as f64);
                let launch = med(&|c| c.launch.as_nanos() as f64);
                series.0.push((n, Duration::from_nanos((add.median + inst.median) as u64)));
                emit(&format!(
                    "| {shape} | {name} | {n} | {:.2} | {:.2} | {:.1} | {:.1} |\n",
                    add.median / 1e6,
                    inst.median / 1e6,
                    first.median / 1e3,
                    launch.median / 1e3
                ));
                let variant = format!("raw_{name}");
                out.push(t.record("cuda_build", shape, &variant, "add_ns", n, add));
                out.push(t.record("cuda_build", shape, &variant, "instantiate_ns", n, inst));
                out.push(t.record("cuda_build", shape, &variant, "launch_ns", n, launch));
                if slow {
                    emit(&format!(
                        "| {shape} | {name} | larger N | not measured: a build took over {SERIES_LIMIT:?} | | | |\n"
                    ));
                    break;
                }
            }
        }
    }
    emit(
        "\nur-core command buffer of the same kernels: ms to create, append and finalize\n\n\
         | shape | N | build + finalize ms |\n|---|---|---|\n",
    );
    for shape in [Shape::Chain, Shape::ForkJoin] {
        let mut series = Series::default();
        for &n in sizes {
            if series.too_slow(n) {
                emit(&format!("| {} | {n} | not measured: over {SERIES_LIMIT:?} expected |\n", shape.name()));
                break;
            }
            let mut slow = false;
            let [total] = measure(Repeats { warmup: 0, samples: samples(n) }, || {
                if slow {
                    return Ok([Duration::ZERO]);
                }
                let start = Instant::now();
                let cb = crate::suites::build(t, shape, n, CommandBufferDesc::default())?;
                let elapsed = start.elapsed();
                drop(cb);
                slow = elapsed > SERIES_LIMIT;
                Ok::<_, cmdbuf::UrError>([elapsed])
            })
            .map_err(|e| e.to_string())?;
            series.0.push((n, Duration::from_nanos(total.median as u64)));
            emit(&format!("| {} | {n} | {:.2} |\n", shape.name(), total.median / 1e6));
            out.push(t.record("cuda_build", shape.name(), "ur", "build_finalize_ns", n, total));
            if slow {
                emit(&format!("| {} | larger N | not measured: a build took over {SERIES_LIMIT:?} |\n", shape.name()));
                break;
            }
        }
    }
    emit("\n");
    Ok(())
}

/// Raw `cuGraphLaunch` host time of chains of kernel nodes and of memory
/// nodes (memsets and copies, as a SYCL graph of USM `fill`s and
/// `memcpy`s), per chain length: whether the driver's launch grows with the
/// count of memory nodes, which a replay of such a graph through the CUDA
/// adapter pays too (compare `--only usm_submission`).
fn memory_node_launch(raw: &mut crate::raw::CudaGraph, emit: &dyn Fn(&str)) -> Result<(), String> {
    let mut text = String::from(
        "Raw cuGraphLaunch host time by node kind (median ns of 2,000 launches, waited for one by one)\n\n\
         | nodes | kernel nodes | memory nodes (memset, memcpy in turn) |\n|---|---|---|\n",
    );
    for n in [1, 10, 100] {
        let [kernels, memory] = raw.launch_costs(n, 2000)?;
        let _ = writeln!(text, "| {n} | {kernels:.0} | {memory:.0} |");
    }
    text.push('\n');
    emit(&text);
    Ok(())
}

/// The driver calls of a replay timed alone, and a one-kernel replay
/// through cmdbuf-core against raw `cuGraphLaunch` + `cuEventRecord`.
fn replay_host(
    t: &Target,
    raw: &mut crate::raw::CudaGraph,
    out: &mut Vec<Record>,
    emit: &dyn Fn(&str),
) -> Result<(), String> {
    let mut text =
        String::from("Replay host time: driver calls alone (median ns of 20,000)\n\n| call | ns |\n|---|---|\n");
    for (call, ns) in raw.call_costs(20_000)? {
        let _ = writeln!(text, "| {call} | {ns:.0} |");
    }
    // One kernel, submitted and waited for one at a time, as the submission
    // group does, replay and raw interleaved in one loop
    // (`measure_interleaved`), so that the machine's drift falls on both.
    let cb = crate::suites::build(t, Shape::Chain, 1, CommandBufferDesc::default()).map_err(|e| e.to_string())?;
    use crate::raw::RawGraph as _;
    raw.build(&[vec![]])?;
    let repeats = Repeats { warmup: 1000, samples: 20_000 };
    let mut replay = || crate::suites::timed_replay(t, &cb);
    let mut raw_launch = || crate::suites::timed_raw_launch(raw);
    let summaries = measure_interleaved(repeats, &mut [&mut replay, &mut raw_launch])?;
    let [[host, wall], [raw_host, raw_wall]] = summaries[..] else { return Err("two variants measured".into()) };
    let _ = write!(
        text,
        "\nOne-kernel replay, 20,000 submissions interleaved with as many raw launches: host {:.2} µs \
         (p10-p90 {:.2}-{:.2}), wall {:.2} µs ({:.2}-{:.2}); raw host {:.2} µs ({:.2}-{:.2}), wall {:.2} µs \
         ({:.2}-{:.2}); replay / raw wall {:.2}x\n\n",
        host.median / 1e3,
        host.p10 / 1e3,
        host.p90 / 1e3,
        wall.median / 1e3,
        wall.p10 / 1e3,
        wall.p90 / 1e3,
        raw_host.median / 1e3,
        raw_host.p10 / 1e3,
        raw_host.p90 / 1e3,
        raw_wall.median / 1e3,
        raw_wall.p10 / 1e3,
        raw_wall.p90 / 1e3,
        wall.median / raw_wall.median
    );
    emit(&text);
    out.push(t.record("cuda_build", "chain", "replay", "host_ns", 1, host));
    out.push(t.record("cuda_build", "chain", "replay", "wall_ns", 1, wall));
    out.push(t.record("cuda_build", "chain", "raw", "host_ns", 1, raw_host));
    out.push(t.record("cuda_build", "chain", "raw", "wall_ns", 1, raw_wall));
    Ok(())
}
