//! The `graph` group (issue 15, goal 6): what cmdbuf-runtime's SYCL graph layer
//! costs on top of the command buffers it builds.
//!
//! - **Build and finalize** of graphs of N trivial kernels, a chain and a
//!   fork-join (one root, N - 2 independent nodes, one join), made three
//!   ways: the explicit API with `depends_on` properties (`explicit`), the
//!   explicit API with every node added first and the edges made with
//!   `make_edge` afterwards (`make_edge`), and queue recording (`record`: an
//!   in-order queue for the chain, an out-of-order queue with wait lists for
//!   the fork-join). Build, finalize and their sum, per graph, in ns.
//! - **Replay**: the finalized graph submitted through
//!   [`cmdbuf_runtime::Queue::enqueue_graph`] against the same kernels in one
//!   cmdbuf-core command buffer (created as finalize creates the graph's: in-order
//!   where the graph is a chain) submitted with
//!   [`cmdbuf::Queue::enqueue_command_buffer`] on the same queue. Host time to
//!   return from the submission and wall time to its completion, one
//!   submission at a time; and wall time per submission of a batch of
//!   [`BATCH`] back-to-back submissions. The two are sampled alternately in
//!   one loop, so that drift of a noisy machine falls on both.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use cmdbuf::{CommandBufferDesc, KernelLaunch, QueueProperties, UrError};
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, Modifiable, Node, NodeProperties};

use crate::figures::{Assessment, Lookup, NOISY, cell, ratio};
use crate::stats::{Repeats, measure};
use crate::suites::{Record, Shape, Target};

/// Submissions per batch in the batched replay figure.
pub const BATCH: usize = 10;

/// How a benchmark graph is built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum How {
    Explicit,
    MakeEdge,
    Record,
}

impl How {
    fn name(self) -> &'static str {
        match self {
            How::Explicit => "explicit",
            How::MakeEdge => "make_edge",
            How::Record => "record",
        }
    }
}

/// The sizes of the group.
pub struct Sizes {
    /// Node counts of build and finalize.
    pub build: Vec<usize>,
    /// Kernel counts of replay.
    pub replay: Vec<usize>,
    /// Samples of replay figures.
    pub replay_samples: usize,
}

/// Samples of a build at `n` nodes: fewer as graphs grow.
fn build_repeats(n: usize) -> Repeats {
    match n {
        0..=1000 => Repeats { warmup: 2, samples: 20 },
        1001..=10_000 => Repeats { warmup: 1, samples: 7 },
        _ => Repeats { warmup: 1, samples: 5 },
    }
}

/// Builds an `n`-node graph of `shape` the way `how` says; `None` when the
/// device cannot (recording a fork-join needs an out-of-order queue).
fn build(t: &Target, shape: Shape, n: usize, how: How) -> Result<Option<Graph<Modifiable>>, UrError> {
    let launch = KernelLaunch::new(&t.empty, &[1], &[]);
    let graph = Graph::new(&t.context, &t.device, GraphProperties::default())?;
    match how {
        How::Explicit => {
            let mut nodes: Vec<Node> = Vec::with_capacity(n);
            for i in 0..n {
                let deps: Vec<&Node> = shape.deps(i, n).into_iter().map(|d| &nodes[d]).collect();
                // SAFETY: `empty` touches no memory.
                let node = graph.add(|h| unsafe { h.launch(&launch) }, NodeProperties::new().depends_on(&deps))?;
                nodes.push(node);
            }
        }
        How::MakeEdge => {
            let mut nodes: Vec<Node> = Vec::with_capacity(n);
            for _ in 0..n {
                // SAFETY: `empty` touches no memory.
                nodes.push(graph.add(|h| unsafe { h.launch(&launch) }, NodeProperties::new())?);
            }
            for (i, node) in nodes.iter().enumerate() {
                for d in shape.deps(i, n) {
                    graph.make_edge(&nodes[d], node)?;
                }
            }
        }
        How::Record => {
            let chain = (0..n).all(|i| shape.deps(i, n) == i.checked_sub(1).into_iter().collect::<Vec<_>>());
            let core = match (chain, &t.ooo_queue) {
                (true, _) => cmdbuf::Queue::new(&t.context, QueueProperties::default())?,
                (false, Some(_)) => {
                    cmdbuf::Queue::new(&t.context, QueueProperties { out_of_order: true, profiling: false })?
                }
                (false, None) => return Ok(None),
            };
            let queue = cmdbuf_runtime::Queue::from_core(core);
            graph.begin_recording(&queue)?;
            let mut events: Vec<cmdbuf_runtime::Event> = Vec::with_capacity(n);
            for i in 0..n {
                let deps: Vec<&cmdbuf_runtime::Event> =
                    if chain { Vec::new() } else { shape.deps(i, n).into_iter().map(|d| &events[d]).collect() };
                // SAFETY: `empty` touches no memory.
                events.push(unsafe { queue.launch_kernel(&launch, &deps)? });
            }
            graph.end_recording();
        }
    }
    Ok(Some(graph))
}

/// Build and finalize at each size, every shape and way.
fn build_and_finalize(t: &Target, sizes: &[usize], out: &mut Vec<Record>) -> Result<(), UrError> {
    for shape in [Shape::Chain, Shape::ForkJoin] {
        for how in [How::Explicit, How::MakeEdge, How::Record] {
            for &n in sizes {
                let mut unsupported = false;
                let figures = measure(build_repeats(n), || {
                    let start = Instant::now();
                    let Some(graph) = build(t, shape, n, how)? else {
                        unsupported = true;
                        return Ok([Duration::ZERO; 3]);
                    };
                    let built = start.elapsed();
                    let exec = graph.finalize(FinalizeProperties::default())?;
                    let total = start.elapsed();
                    // Dropping 100,000 nodes is not what is measured.
                    drop((exec, graph));
                    Ok::<_, UrError>([built, total - built, total])
                })?;
                if unsupported {
                    break;
                }
                let [built, finalized, total] = figures;
                out.push(t.record("graph", shape.name(), how.name(), "build_ns", n, built));
                out.push(t.record("graph", shape.name(), how.name(), "finalize_ns", n, finalized));
                out.push(t.record("graph", shape.name(), how.name(), "total_ns", n, total));
            }
        }
    }
    Ok(())
}

/// Replay of a finalized graph against the same command buffer enqueued directly.
fn replay(t: &Target, sizes: &[usize], samples: usize, out: &mut Vec<Record>) -> Result<(), UrError> {
    let queue = cmdbuf_runtime::Queue::from_core(t.queue.clone());
    for shape in [Shape::Chain, Shape::ForkJoin] {
        for &n in sizes {
            let graph = build(t, shape, n, How::Explicit)?.expect("the explicit API builds every shape");
            let exec = graph.finalize(FinalizeProperties::default())?;
            let parts = exec.partitions();
            let in_order = parts.len() == 1 && parts[0].in_order;
            let cb = crate::suites::build(t, shape, n, CommandBufferDesc { in_order, ..Default::default() })?;
            let mut graph_first = false;
            let repeats = Repeats { warmup: 10, samples };
            let figures = measure(repeats, || {
                graph_first = !graph_first;
                let mut g = [Duration::ZERO; 3];
                let mut d = [Duration::ZERO; 3];
                for turn in 0..2 {
                    if (turn == 0) == graph_first {
                        g = timed(|| queue.enqueue_graph(&exec, &[]), |e| e.wait())?;
                    } else {
                        d = timed(|| t.queue.enqueue_command_buffer(&cb, &[]), |e| e.wait())?;
                    }
                }
                Ok::<_, UrError>([g[0], g[1], g[2], d[0], d[1], d[2]])
            })?;
            let [gh, gw, gb, dh, dw, db] = figures;
            for (variant, host, wall, batch) in [("graph", gh, gw, gb), ("direct", dh, dw, db)] {
                out.push(t.record("graph", shape.name(), variant, "host_ns", n, host));
                out.push(t.record("graph", shape.name(), variant, "wall_ns", n, wall));
                out.push(t.record("graph", shape.name(), variant, "batch_wall_ns", n, batch));
            }
        }
    }
    Ok(())
}

/// One submission (host time, wall time), then [`BATCH`] back to back (wall
/// time per submission).
fn timed<E>(
    mut submit: impl FnMut() -> Result<E, UrError>,
    wait: impl Fn(&E) -> Result<(), UrError>,
) -> Result<[Duration; 3], UrError> {
    let start = Instant::now();
    let event = submit()?;
    let host = start.elapsed();
    wait(&event)?;
    let wall = start.elapsed();
    let start = Instant::now();
    let mut last = None;
    for _ in 0..BATCH {
        last = Some(submit()?);
    }
    wait(&last.expect("BATCH > 0"))?;
    Ok([host, wall, start.elapsed() / BATCH as u32])
}

/// The group on one device.
pub fn run(t: &Target, sizes: &Sizes, out: &mut Vec<Record>) -> Result<(), UrError> {
    build_and_finalize(t, &sizes.build, out)?;
    replay(t, &sizes.replay, sizes.replay_samples, out)
}

const SHAPES: [&str; 2] = ["chain", "fork_join"];
const WAYS: [&str; 3] = ["explicit", "make_edge", "record"];

/// The group's tables for one device (empty when it has no figures).
pub fn table(l: &Lookup<'_>) -> String {
    let mut out = String::new();
    let build_sizes: Vec<usize> = l
        .sizes("graph")
        .into_iter()
        .filter(|n| SHAPES.iter().any(|s| WAYS.iter().any(|w| l.get("graph", s, w, "total_ns", *n).is_some())))
        .collect();
    if !build_sizes.is_empty() {
        let _ = writeln!(
            out,
            "Graph layer: building a graph of N trivial kernels (explicit `depends_on`, `make_edge` after adding \
             every node, queue recording) and finalizing it; ms, median (p10–p90).\n"
        );
        let _ = writeln!(out, "| shape | built by | N | build | finalize | build + finalize |");
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for shape in SHAPES {
            for way in WAYS {
                for &n in &build_sizes {
                    let g = |m| l.get("graph", shape, way, m, n);
                    if g("total_ns").is_none() {
                        continue;
                    }
                    let _ = writeln!(
                        out,
                        "| {shape} | {way} | {n} | {} | {} | {} |",
                        cell(g("build_ns"), 1e6),
                        cell(g("finalize_ns"), 1e6),
                        cell(g("total_ns"), 1e6),
                    );
                }
            }
        }
        out.push('\n');
    }
    let replay_sizes: Vec<usize> =
        l.sizes("graph").into_iter().filter(|n| l.get("graph", "chain", "graph", "wall_ns", *n).is_some()).collect();
    if !replay_sizes.is_empty() {
        let _ = writeln!(
            out,
            "Graph layer: replay of a finalized graph of N kernels (`enqueue_graph`) against the same command \
             buffer enqueued directly; µs per submission: host time, wall time to completion, wall time in a \
             batch of {BATCH}; median (p10–p90).\n"
        );
        let _ = writeln!(
            out,
            "| shape | N | graph host | direct host | graph wall | direct wall | graph / direct (wall) | graph batch | direct batch | graph / direct (batch) |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
        for shape in SHAPES {
            for &n in &replay_sizes {
                let g = |v, m| l.get("graph", shape, v, m, n);
                let _ = writeln!(
                    out,
                    "| {shape} | {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    cell(g("graph", "host_ns"), 1e3),
                    cell(g("direct", "host_ns"), 1e3),
                    cell(g("graph", "wall_ns"), 1e3),
                    cell(g("direct", "wall_ns"), 1e3),
                    ratio3(g("graph", "wall_ns"), g("direct", "wall_ns")),
                    cell(g("graph", "batch_wall_ns"), 1e3),
                    cell(g("direct", "batch_wall_ns"), 1e3),
                    ratio3(g("graph", "batch_wall_ns"), g("direct", "batch_wall_ns")),
                );
            }
        }
        out.push('\n');
    }
    out
}

/// A ratio with the precision a 5 % goal needs.
fn ratio3(a: Option<&crate::stats::Summary>, b: Option<&crate::stats::Summary>) -> String {
    match (a, b) {
        (Some(x), Some(y)) if y.median > 0.0 => {
            let flag = ratio(a, b);
            let noisy = if flag.ends_with(NOISY) { NOISY } else { "" };
            format!("{:.3}{noisy}", x.median / y.median)
        }
        _ => "—".into(),
    }
}

/// Goal 6 budget for build + finalize of a 100,000-node graph, ns.
const BUILD_BUDGET_NS: f64 = 1e9;
/// Goal 6 bound of replay over direct enqueue (wall).
const REPLAY_OVER_DIRECT: f64 = 1.05;
/// The size the build budget is for.
const GOAL_NODES: usize = 100_000;

/// Goal 6: build + finalize of a 100,000-node graph ≤ 1 s (the slowest shape
/// and way); replay within 5 % of the direct enqueue (wall, the worst N and
/// shape, batched submissions, where the host work shows most).
pub fn goal(l: &Lookup<'_>) -> Option<Assessment> {
    let mut now = String::new();
    let mut met = true;
    let worst_build = SHAPES
        .iter()
        .flat_map(|s| WAYS.iter().map(move |w| (*s, *w)))
        .filter_map(|(s, w)| l.get("graph", s, w, "total_ns", GOAL_NODES).map(|x| (s, w, x.median)))
        .max_by(|a, b| a.2.total_cmp(&b.2));
    match worst_build {
        Some((s, w, ns)) => {
            let _ = write!(now, "build + finalize at N = {GOAL_NODES}: worst {:.0} ms ({s}, {w})", ns / 1e6);
            met &= ns <= BUILD_BUDGET_NS;
        }
        None => {
            now += "N = 100,000 not measured";
            met = false;
        }
    }
    // A ratio built from a figure whose p10-p90 spread exceeds 2x is shown
    // but does not decide: on a CPU device with many workers one submission
    // is either run by the waiting thread or handed to a worker, and such
    // medians move 10-15% either way between runs of one binary.
    let mut worst: Option<(f64, &str, usize, &str)> = None;
    let mut worst_noisy: Option<(f64, &str, usize, &str)> = None;
    for shape in SHAPES {
        for n in l.sizes("graph") {
            for metric in ["wall_ns", "batch_wall_ns"] {
                let (Some(g), Some(d)) =
                    (l.get("graph", shape, "graph", metric, n), l.get("graph", shape, "direct", metric, n))
                else {
                    continue;
                };
                let r = g.median / d.median.max(1e-9);
                let slot = if g.is_noisy() || d.is_noisy() { &mut worst_noisy } else { &mut worst };
                if slot.is_none_or(|w| r > w.0) {
                    *slot = Some((r, shape, n, metric));
                }
            }
        }
    }
    let what = |metric: &str| if metric == "wall_ns" { "single" } else { "batched" };
    match worst {
        Some((r, shape, n, metric)) => {
            let _ = write!(now, "; replay / direct: worst {r:.3} ({shape}, N = {n}, {})", what(metric));
            met &= r <= REPLAY_OVER_DIRECT;
        }
        None if worst_noisy.is_some() => {
            now += "; replay / direct: every figure noisy";
            met = false;
        }
        None => {
            // Nothing of the group on this device.
            worst_build?;
            now += "; replay not measured";
            met = false;
        }
    }
    if let Some((r, shape, n, metric)) = worst_noisy {
        let _ = write!(now, " (noisy, not counted: {r:.3}{NOISY} at {shape}, N = {n}, {})", what(metric));
    }
    Some(Assessment { now, met })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    fn rec(shape: &str, variant: &str, metric: &str, n: usize, median: f64) -> Record {
        Record {
            device: "cpu:0".into(),
            backend: "cpu".into(),
            device_name: "test".into(),
            benchmark: "graph".into(),
            shape: shape.into(),
            variant: variant.into(),
            metric: metric.into(),
            n,
            summary: Summary { median, p10: median, p90: median, samples: 1 },
        }
    }

    fn records(build_ms: f64, graph_wall: f64) -> Vec<Record> {
        vec![
            rec("chain", "explicit", "total_ns", GOAL_NODES, 300e6),
            rec("fork_join", "record", "total_ns", GOAL_NODES, build_ms * 1e6),
            rec("chain", "graph", "wall_ns", 10, graph_wall),
            rec("chain", "direct", "wall_ns", 10, 10_000.0),
            rec("fork_join", "graph", "batch_wall_ns", 10, 10_100.0),
            rec("fork_join", "direct", "batch_wall_ns", 10, 10_000.0),
        ]
    }

    #[test]
    fn fast_build_and_close_replay_meet_goal_6() {
        let all = records(900.0, 10_200.0);
        let a = goal(&Lookup::new(&all, "cpu:0")).unwrap();
        assert!(a.met, "{}", a.now);
        assert!(a.now.contains("fork_join, record"), "{}", a.now);
    }

    #[test]
    fn slow_build_or_replay_do_not() {
        let slow = records(1500.0, 10_200.0);
        assert!(!goal(&Lookup::new(&slow, "cpu:0")).unwrap().met);
        let replay = records(900.0, 11_000.0);
        let a = goal(&Lookup::new(&replay, "cpu:0")).unwrap();
        assert!(!a.met && a.now.contains("1.100"), "{}", a.now);
        assert!(goal(&Lookup::new(&replay, "vulkan:0")).is_none());
    }

    #[test]
    fn a_noisy_ratio_is_shown_but_does_not_decide() {
        let mut all = records(900.0, 10_200.0);
        let noisy = Summary { median: 11_500.0, p10: 5_000.0, p90: 20_000.0, samples: 200 };
        all.push(Record { summary: noisy, ..rec("chain", "graph", "wall_ns", 1, 0.0) });
        all.push(rec("chain", "direct", "wall_ns", 1, 10_000.0));
        let a = goal(&Lookup::new(&all, "cpu:0")).unwrap();
        assert!(a.met, "{}", a.now);
        assert!(a.now.contains("not counted: 1.150"), "{}", a.now);
    }
}
