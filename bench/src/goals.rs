//! The summary table `goal | now | device` printed at the end of a run: one
//! row per goal and device where the run measured what the goal needs. A
//! goal is named by what it measures.
//!
//! A goal is a name, its target in words and a function that reads the
//! records of one device; adding a goal is adding an entry to [`GOALS`].

use std::fmt::Write as _;

use crate::figures::{Assessment, Lookup, NOISY, ratio};
use crate::suites::Record;

/// One goal of the summary table.
pub struct Goal {
    /// Short name saying what it measures, e.g. `update cost`.
    pub name: &'static str,
    /// The target, in words.
    pub target: &'static str,
    /// Reads one device's records; `None` when the run did not measure what
    /// the goal needs on that device.
    pub assess: fn(&Lookup<'_>) -> Option<Assessment>,
}

/// The goals.
pub const GOALS: &[Goal] = &[
    Goal {
        name: "update cost",
        target: "update call O(changed): flat (within 2x) from N = 10 to 10,000; ≥ 100x cheaper than a rebuild at N = 1000",
        assess: update_goal,
    },
    Goal {
        name: "CUDA replay against raw cuGraphLaunch",
        target: "wall time within 1.1x of raw `cuGraphLaunch` at N = 1 and within 1.05x from N = 4; host time per submission within 1 µs of raw",
        assess: cuda_replay_goal,
    },
    Goal {
        name: "Vulkan replay against a raw command buffer",
        target: "within 1.15x of the raw pre-recorded command buffer at every N and shape on a GPU, 1.3x on lavapipe",
        assess: vulkan_replay_goal,
    },
    Goal {
        name: "OpenCL replay against eager",
        target: "replay never slower than eager submission (wall time), at every N and shape; within 2% is a tie",
        assess: opencl_replay_goal,
    },
    Goal {
        name: "CPU executor overhead",
        target: "≤ 10 ns/node on a 1024-chain with 1 worker, ≤ 100 ns/node on a 1024-wide DAG with all workers, ≤ 3 µs from enqueue to completion of one kernel",
        assess: cpu_executor_goal,
    },
    Goal {
        name: "replay host time flat in the node count",
        target: "host time per submission of an in-order command buffer of N kernels with arguments, of N empty \
                 kernels and of N memory commands, each submitted alone, and of the first and last submitted 16 times \
                 back to back: at N = 100 within 1.5x of N = 1 (issue 31)",
        assess: crate::replay_flat::goal,
    },
    Goal {
        name: "graph layer build and replay",
        target: "build + finalize of a 100,000-node graph ≤ 1 s; replay within 5% of the same command buffer enqueued directly",
        assess: crate::graph::goal,
    },
    Goal {
        name: "eager against raw eager",
        target: "eager submission against the backend's own one-by-one submission of the same kernels: wall never \
                 slower (within 2% a tie) on OpenCL; CUDA host per kernel ≤ raw + 0.5 µs and chain wall ≤ 1.1x; \
                 Vulkan one kernel's wall ≤ 1.1x raw one-dispatch-per-submit and host per kernel ≤ 3 µs",
        assess: eager_goal,
    },
    Goal {
        name: "all-reduce in a graph against direct NCCL",
        target: "bus bandwidth ≥ 90% of NCCL called directly on streams at 256 MiB per rank; lower latency than \
                 direct NCCL at 8 KiB (each all-reduce of a graph holding the batch's 20, against 20 direct calls \
                 issued back to back)",
        assess: collectives_goal,
    },
    Goal {
        name: "data-parallel step as a graph",
        target: "a step (kernels per device, then an all-reduce) replayed as one graph faster than the same step \
                 submitted eagerly, at every size",
        assess: step_goal,
    },
];

/// Graph bus bandwidth over direct NCCL's at 256 MiB, at least this.
const GRAPH_BUSBW_SHARE: f64 = 0.9;

/// Where the `collectives` group measured direct NCCL (CUDA devices only).
fn collectives_goal(l: &Lookup<'_>) -> Option<Assessment> {
    let get = |variant, metric, n| l.get("collectives", "all_reduce", variant, metric, n).map(|s| s.median);
    let (large, small) = (256usize << 20, 8usize << 10);
    let share = get("graph", "busbw_GBps", large)? / get("direct_nccl", "busbw_GBps", large)?.max(1e-9);
    let (chain_ns, direct_ns) = (get("graph_chain", "ns", small)?, get("direct_nccl", "ns", small)?);
    let mut now = format!(
        "busbw at 256 MiB {:.0}% of direct; 8 KiB {:.1} µs per all-reduce in a graph of 20 against {:.1} µs direct",
        share * 100.0,
        chain_ns / 1e3,
        direct_ns / 1e3
    );
    // What a graph holding one all-reduce costs, so that a reader sees both.
    if let Some(one) = get("graph", "ns", small) {
        now += &format!(" ({:.1} µs as a graph per all-reduce)", one / 1e3);
    }
    Some(Assessment { now, met: share >= GRAPH_BUSBW_SHARE && chain_ns < direct_ns })
}

/// Where the `collectives` group measured the step and direct NCCL (CUDA).
fn step_goal(l: &Lookup<'_>) -> Option<Assessment> {
    l.get("collectives", "all_reduce", "direct_nccl", "ns", 8 << 10)?;
    let mut worst: Option<(f64, usize)> = None;
    for n in [1usize << 16, 1 << 20, 1 << 24] {
        let get = |variant| l.get("collectives", "data_parallel_step", variant, "ns", n).map(|s| s.median);
        let (Some(graph), Some(eager)) = (get("step graph"), get("step eager")) else { continue };
        let speedup = eager / graph.max(1e-9);
        if worst.is_none_or(|(w, _)| speedup < w) {
            worst = Some((speedup, n));
        }
    }
    let (speedup, n) = worst?;
    Some(Assessment {
        now: format!("eager / graph: worst {speedup:.2}x ({n} elements per device)"),
        met: speedup > 1.0,
    })
}

/// Eager against raw eager: OpenCL's tie, CUDA's host allowance (ns) and
/// chain wall bound, Vulkan's one-kernel wall bound and host per kernel (ns).
const EAGER_TIE: f64 = 1.02;
const CUDA_EAGER_HOST_OVER_NS: f64 = 500.0;
const CUDA_EAGER_WALL: f64 = 1.1;
const VULKAN_EAGER_WALL_AT_1: f64 = 1.1;
const VULKAN_EAGER_HOST_NS: f64 = 3000.0;

fn eager_goal(l: &Lookup<'_>) -> Option<Assessment> {
    let first = l.any()?;
    if first.device.ends_with("emulated") {
        return None;
    }
    let get = |shape, variant, metric, n| l.get("submission", shape, variant, metric, n).map(|s| s.median);
    let mut worst_wall = (0.0f64, "", 0usize);
    let mut host_over = f64::MIN;
    let mut host_max = 0.0f64;
    for shape in ["chain", "fork_join"] {
        for n in l.sizes("submission") {
            let (Some(ew), Some(rw), Some(eh), Some(rh)) = (
                get(shape, "eager", "wall_ns_per_node", n),
                get(shape, "raw_eager", "wall_ns_per_node", n),
                get(shape, "eager", "host_ns_per_node", n),
                get(shape, "raw_eager", "host_ns_per_node", n),
            ) else {
                continue;
            };
            let ratio = ew / rw.max(1e-9);
            // CUDA's wall bound is the chain's; Vulkan's the one kernel's.
            let counts = match first.backend.as_str() {
                "cuda" => shape == "chain",
                "vulkan" => n == 1,
                _ => true,
            };
            if counts && ratio > worst_wall.0 {
                worst_wall = (ratio, shape, n);
            }
            host_over = host_over.max(eh - rh);
            host_max = host_max.max(eh);
        }
    }
    if worst_wall.2 == 0 {
        return None;
    }
    let (ratio, shape, n) = worst_wall;
    let mut now = format!("eager / raw eager wall: worst {ratio:.2}x ({shape}, N = {n})");
    let met = match first.backend.as_str() {
        "cuda" => {
            let _ = write!(now, "; host over raw: at most {:+.2} µs per kernel", host_over / 1e3);
            ratio <= CUDA_EAGER_WALL && host_over <= CUDA_EAGER_HOST_OVER_NS
        }
        "vulkan" => {
            let _ = write!(now, "; host per kernel at most {:.2} µs", host_max / 1e3);
            ratio <= VULKAN_EAGER_WALL_AT_1 && host_max <= VULKAN_EAGER_HOST_NS
        }
        _ => ratio <= EAGER_TIE,
    };
    Some(Assessment { now, met })
}

/// Highest update time over lowest across the sizes measured, at most this
/// for the update to count as flat.
const FLAT: f64 = 2.0;
/// Rebuild over update at N = 1000, at least this.
const REBUILD_OVER_UPDATE: f64 = 100.0;

fn update_goal(l: &Lookup<'_>) -> Option<Assessment> {
    let sizes = l.sizes("update");
    let (first, last) = (*sizes.first()?, *sizes.last()?);
    // The call's own cost: the second update of a pair made once the
    // preceding replay has settled where measured, else the second update
    // right after the replay, else the first (each earlier one also carries
    // more of the replay's aftermath: cold caches, clean-up threads).
    let variant = ["update_settled", "update_again", "update"]
        .into_iter()
        .find(|v| l.get("update", "chain", v, "ns", first).is_some())?;
    let update = |n| l.get("update", "chain", variant, "ns", n);
    let (lo, hi) = (update(first)?, update(last)?);
    let spread = hi.median / lo.median.max(1e-9);
    let mut now = format!(
        "{variant} {:.2} µs at N = {first}, {:.2} µs at N = {last} ({spread:.1}x)",
        lo.median / 1e3,
        hi.median / 1e3
    );
    for (other, what) in [("update_again", "right after a replay"), ("update", "first after a replay")] {
        if let (Some(a), Some(b)) =
            (l.get("update", "chain", other, "ns", first), l.get("update", "chain", other, "ns", last))
            && variant != other
        {
            let _ = write!(now, " ({other}, {what}: {:.2} to {:.2} µs)", a.median / 1e3, b.median / 1e3);
        }
    }
    let mut met = spread <= FLAT && last >= 10_000 && first <= 10;
    match (update(1000), l.get("update", "chain", "rebuild", "ns", 1000)) {
        (Some(u), Some(r)) => {
            let _ = write!(now, "; rebuild / update at N = 1000: {}", ratio(Some(r), Some(u)));
            met &= r.median >= REBUILD_OVER_UPDATE * u.median;
            let after = l.get("update", "chain", "replay_after_update", "ns", 1000);
            let plain = l.get("update", "chain", "replay", "ns", 1000);
            let _ = write!(now, "; replay after update / replay: {}", ratio(after, plain));
        }
        _ => {
            now += "; N = 1000 not measured";
            met = false;
        }
    }
    Some(Assessment { now, met })
}

/// One cell of the submission table: replay against another variant.
struct Cell {
    shape: &'static str,
    n: usize,
    /// Replay wall time over the other variant's.
    wall: f64,
    /// Replay host time minus the other's, per submission, ns.
    host_over: f64,
    /// Either figure's spread is wide.
    noisy: bool,
}

/// Replay against `other` (`raw`, `eager`) at every measured size and shape
/// of the native view of a device of `backend`; `None` where not measured.
fn replay_cells(l: &Lookup<'_>, backend: &str, other: &str) -> Option<Vec<Cell>> {
    let first = l.any()?;
    if first.backend != backend || first.device.ends_with("emulated") {
        return None;
    }
    let mut cells = Vec::new();
    for shape in ["chain", "fork_join"] {
        for n in l.sizes("submission") {
            let get = |variant, metric| l.get("submission", shape, variant, metric, n);
            let (Some(rw), Some(ow), Some(rh), Some(oh)) = (
                get("replay", "wall_ns_per_node"),
                get(other, "wall_ns_per_node"),
                get("replay", "host_ns_per_node"),
                get(other, "host_ns_per_node"),
            ) else {
                continue;
            };
            cells.push(Cell {
                shape,
                n,
                wall: rw.median / ow.median.max(1e-9),
                host_over: (rh.median - oh.median) * n as f64,
                noisy: rw.is_noisy() || ow.is_noisy(),
            });
        }
    }
    (!cells.is_empty()).then_some(cells)
}

/// The cell with the highest wall ratio, in words.
fn worst_wall(cells: &[&Cell]) -> String {
    match cells.iter().max_by(|a, b| a.wall.total_cmp(&b.wall)) {
        Some(c) => {
            let flag = if c.noisy { NOISY } else { "" };
            format!("{:.3}x{flag} ({}, N = {})", c.wall, c.shape, c.n)
        }
        None => "not measured".into(),
    }
}

/// Goal 2 bounds: replay over raw wall time at N = 1 and from N = 4, and
/// host time over raw per submission, ns.
const CUDA_WALL_AT_1: f64 = 1.1;
const CUDA_WALL_FROM_4: f64 = 1.05;
const CUDA_HOST_OVER_NS: f64 = 1000.0;

fn cuda_replay_goal(l: &Lookup<'_>) -> Option<Assessment> {
    let cells = replay_cells(l, "cuda", "raw")?;
    let at_1: Vec<&Cell> = cells.iter().filter(|c| c.n == 1).collect();
    let from_4: Vec<&Cell> = cells.iter().filter(|c| c.n >= 4).collect();
    let host = cells.iter().map(|c| c.host_over).fold(f64::MIN, f64::max);
    let met = at_1.iter().all(|c| c.wall <= CUDA_WALL_AT_1)
        && from_4.iter().all(|c| c.wall <= CUDA_WALL_FROM_4)
        && host <= CUDA_HOST_OVER_NS
        && !at_1.is_empty();
    let now = format!(
        "replay / raw wall: worst at N = 1 {}, from N = 4 {}; host over raw: at most {:+.2} µs per submission",
        worst_wall(&at_1),
        worst_wall(&from_4),
        host / 1e3
    );
    Some(Assessment { now, met })
}

/// Goal 3 bounds: replay over the raw command buffer, on a GPU and on lavapipe.
const VULKAN_WALL: f64 = 1.15;
const LAVAPIPE_WALL: f64 = 1.3;

fn vulkan_replay_goal(l: &Lookup<'_>) -> Option<Assessment> {
    let cells = replay_cells(l, "vulkan", "raw")?;
    let lavapipe = l.any().is_some_and(|r| r.device_name.contains("llvmpipe"));
    let bound = if lavapipe { LAVAPIPE_WALL } else { VULKAN_WALL };
    let all: Vec<&Cell> = cells.iter().collect();
    let met = all.iter().all(|c| c.wall <= bound);
    let now = format!("replay / raw wall: worst {} (bound {bound}x)", worst_wall(&all));
    Some(Assessment { now, met })
}

/// Goal 4: replay over eager wall time up to which the two count as a tie.
/// Where both make the same driver calls (a one-command buffer, PoCL's
/// native replay) their medians differ by a percent either way between runs,
/// while the p10-p90 spread of either is 10-30%.
const OPENCL_TIE: f64 = 1.02;

fn opencl_replay_goal(l: &Lookup<'_>) -> Option<Assessment> {
    let cells = replay_cells(l, "opencl", "eager")?;
    let all: Vec<&Cell> = cells.iter().collect();
    let met = all.iter().all(|c| c.wall <= OPENCL_TIE);
    let now = format!("replay / eager wall: worst {}", worst_wall(&all));
    Some(Assessment { now, met })
}

/// Goal 5 thresholds: chain and wide ns per node, one kernel in ns.
const CHAIN_NS: f64 = 10.0;
const WIDE_NS: f64 = 100.0;
const ONE_KERNEL_NS: f64 = 3000.0;

fn cpu_executor_goal(l: &Lookup<'_>) -> Option<Assessment> {
    // The one-worker figures come from the native view's child process only.
    let n = *l.sizes("cpu_per_node").last()?;
    let per_node = |shape, variant| l.get("cpu_per_node", shape, variant, "ns_per_node", n);
    let chain = per_node("chain", "1 worker")?;
    let all = l.variants("cpu_per_node").into_iter().find(|v| v.ends_with(" workers"))?;
    let wide = per_node("wide", all);
    let mut now = format!("chain {:.1} ns/node (1 worker, N = {n})", chain.median);
    let mut met = n >= 1024 && chain.median <= CHAIN_NS;
    if let Some(w) = per_node("chain", "1 worker, workers run") {
        let _ = write!(now, " ({:.1} when a worker runs it)", w.median);
    }
    match wide {
        Some(w) => {
            let _ = write!(now, "; wide {:.1} ns/node ({all})", w.median);
            met &= w.median <= WIDE_NS;
        }
        None => met = false,
    }
    match l.get("submission", "chain", "replay", "wall_ns_per_node", 1) {
        Some(one) => {
            let _ = write!(now, "; one-node buffer {:.2} µs", one.median / 1e3);
            met &= one.median <= ONE_KERNEL_NS;
        }
        None => {
            now += "; one kernel not measured (--only submission)";
            met = false;
        }
    }
    if let Some(eager) = l.get("submission", "chain", "eager", "wall_ns_per_node", 1) {
        let _ = write!(now, ", eager kernel {:.2} µs", eager.median / 1e3);
        met &= eager.median <= ONE_KERNEL_NS;
    }
    Some(Assessment { now, met })
}

/// The summary table over every device of `records`, in the order they were measured.
pub fn summary(records: &[Record]) -> String {
    let mut devices: Vec<&str> = Vec::new();
    for r in records {
        if !devices.contains(&r.device.as_str()) {
            devices.push(&r.device);
        }
    }
    let mut out = String::from("## Summary: goals\n\n| goal | now | device |\n|---|---|---|\n");
    for goal in GOALS {
        for device in &devices {
            let Some(a) = (goal.assess)(&Lookup::new(records, device)) else { continue };
            let verdict = if a.met { "met" } else { "not met" };
            let _ = writeln!(out, "| {} ({}) | {verdict}: {} | `{device}` |", goal.name, goal.target, a.now);
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    fn rec(variant: &str, n: usize, median: f64) -> Record {
        Record {
            device: "cpu:0".into(),
            backend: "cpu".into(),
            device_name: "test".into(),
            benchmark: "update".into(),
            shape: "chain".into(),
            variant: variant.into(),
            metric: "ns".into(),
            n,
            summary: Summary { median, p10: median, p90: median, samples: 1 },
        }
    }

    fn records(update_at_10k: f64, rebuild_at_1k: f64) -> Vec<Record> {
        vec![
            rec("update", 10, 1000.0),
            rec("update", 1000, 1000.0),
            rec("update", 10_000, update_at_10k),
            rec("update_again", 10, 1000.0),
            rec("update_again", 1000, 1000.0),
            rec("update_again", 10_000, update_at_10k),
            rec("rebuild", 1000, rebuild_at_1k),
            rec("replay", 1000, 5000.0),
            rec("replay_after_update", 1000, 5000.0),
        ]
    }

    #[test]
    fn flat_and_cheap_updates_meet_goal_1() {
        let all = records(1500.0, 200_000.0);
        let a = update_goal(&Lookup::new(&all, "cpu:0")).unwrap();
        assert!(a.met, "{}", a.now);
        assert!(summary(&all).contains("| update cost ("));
    }

    fn cpu(benchmark: &str, shape: &str, variant: &str, metric: &str, n: usize, median: f64) -> Record {
        Record { benchmark: benchmark.into(), shape: shape.into(), metric: metric.into(), ..rec(variant, n, median) }
    }

    fn cpu_records(chain: f64, one_kernel: f64) -> Vec<Record> {
        vec![
            cpu("cpu_per_node", "chain", "1 worker", "ns_per_node", 1024, chain),
            cpu("cpu_per_node", "wide", "16 workers", "ns_per_node", 1024, 30.0),
            cpu("submission", "chain", "replay", "wall_ns_per_node", 1, one_kernel),
            cpu("submission", "chain", "eager", "wall_ns_per_node", 1, one_kernel),
        ]
    }

    /// A native `backend` device's submission table: replay at `replay_wall`
    /// times the other variant's wall time in every cell, host 500 ns over.
    fn submission_records(backend: &str, name: &str, other: &str, replay_wall: f64) -> Vec<Record> {
        let mut out = Vec::new();
        for shape in ["chain", "fork_join"] {
            for n in [1, 4, 1000] {
                let fig = |variant: &str, metric: &str, median: f64| Record {
                    device: format!("{backend}:0"),
                    backend: backend.into(),
                    device_name: name.into(),
                    benchmark: "submission".into(),
                    shape: shape.into(),
                    metric: metric.into(),
                    ..rec(variant, n, median)
                };
                out.push(fig("replay", "wall_ns_per_node", 1000.0 * replay_wall));
                out.push(fig(other, "wall_ns_per_node", 1000.0));
                out.push(fig("replay", "host_ns_per_node", 1000.0 + 500.0 / n as f64));
                out.push(fig(other, "host_ns_per_node", 1000.0));
            }
        }
        out
    }

    #[test]
    fn replay_goals_read_their_backend_and_bound() {
        let assess = |goal: fn(&Lookup<'_>) -> Option<Assessment>, records: &[Record], device: &str| {
            goal(&Lookup::new(records, device)).map(|a| a.met)
        };
        let cuda = submission_records("cuda", "H100", "raw", 1.04);
        assert_eq!(assess(cuda_replay_goal, &cuda, "cuda:0"), Some(true));
        assert_eq!(assess(vulkan_replay_goal, &cuda, "cuda:0"), None, "the Vulkan replay goal is Vulkan's");
        let slow = submission_records("cuda", "H100", "raw", 1.07);
        assert_eq!(assess(cuda_replay_goal, &slow, "cuda:0"), Some(false), "1.07x from N = 4");
        let gpu = submission_records("vulkan", "H100", "raw", 1.2);
        assert_eq!(assess(vulkan_replay_goal, &gpu, "vulkan:0"), Some(false));
        let lavapipe = submission_records("vulkan", "llvmpipe (LLVM 15.0.6, 256 bits)", "raw", 1.2);
        assert_eq!(assess(vulkan_replay_goal, &lavapipe, "vulkan:0"), Some(true), "lavapipe's bound is 1.3x");
        let losing = submission_records("opencl", "PoCL", "eager", 1.05);
        assert_eq!(assess(opencl_replay_goal, &losing, "opencl:0"), Some(false));
        let tie = submission_records("opencl", "PoCL", "eager", 1.01);
        assert_eq!(assess(opencl_replay_goal, &tie, "opencl:0"), Some(true));
        let winning = submission_records("opencl", "PoCL", "eager", 0.5);
        assert_eq!(assess(opencl_replay_goal, &winning, "opencl:0"), Some(true));
    }

    #[test]
    fn cpu_executor_goal_needs_every_figure_under_its_bound() {
        let fast = cpu_records(8.0, 1000.0);
        let a = cpu_executor_goal(&Lookup::new(&fast, "cpu:0")).unwrap();
        assert!(a.met, "{}", a.now);
        let slow_chain = cpu_records(12.0, 1000.0);
        assert!(!cpu_executor_goal(&Lookup::new(&slow_chain, "cpu:0")).unwrap().met);
        let slow_kernel = cpu_records(8.0, 3500.0);
        assert!(!cpu_executor_goal(&Lookup::new(&slow_kernel, "cpu:0")).unwrap().met);
        let no_submission: Vec<Record> = fast.into_iter().filter(|r| r.benchmark == "cpu_per_node").collect();
        assert!(!cpu_executor_goal(&Lookup::new(&no_submission, "cpu:0")).unwrap().met);
        assert!(cpu_executor_goal(&Lookup::new(&no_submission, "vulkan:0")).is_none());
    }

    #[test]
    fn growing_or_expensive_updates_do_not() {
        let growing = records(5000.0, 200_000.0);
        assert!(!update_goal(&Lookup::new(&growing, "cpu:0")).unwrap().met);
        let expensive = records(1500.0, 50_000.0);
        assert!(!update_goal(&Lookup::new(&expensive, "cpu:0")).unwrap().met);
        assert!(update_goal(&Lookup::new(&expensive, "vulkan:0")).is_none());
    }

    #[test]
    fn the_settled_update_decides_where_measured() {
        let mut all = records(5000.0, 200_000.0);
        all.extend([rec("update_settled", 10, 1000.0), rec("update_settled", 1000, 1000.0)]);
        all.push(rec("update_settled", 10_000, 1200.0));
        let a = update_goal(&Lookup::new(&all, "cpu:0")).unwrap();
        assert!(a.met, "{}", a.now);
        assert!(a.now.starts_with("update_settled") && a.now.contains("update_again"), "{}", a.now);
    }

    fn coll(shape: &str, variant: &str, metric: &str, n: usize, median: f64) -> Record {
        Record {
            device: "cuda:0 + cuda:1".into(),
            benchmark: "collectives".into(),
            shape: shape.into(),
            metric: metric.into(),
            ..rec(variant, n, median)
        }
    }

    #[test]
    fn collectives_goals_read_the_graph_against_direct_nccl() {
        let (large, small) = (256 << 20, 8 << 10);
        let mut all = vec![
            coll("all_reduce", "graph", "busbw_GBps", large, 280.0),
            coll("all_reduce", "direct_nccl", "busbw_GBps", large, 300.0),
            coll("all_reduce", "graph", "ns", small, 25_000.0),
            coll("all_reduce", "graph_chain", "ns", small, 15_000.0),
            coll("all_reduce", "direct_nccl", "ns", small, 20_000.0),
            coll("data_parallel_step", "step graph", "ns", 1 << 20, 100_000.0),
            coll("data_parallel_step", "step eager", "ns", 1 << 20, 150_000.0),
        ];
        let device = Lookup::new(&all, "cuda:0 + cuda:1");
        assert!(collectives_goal(&device).unwrap().met);
        assert!(step_goal(&device).unwrap().met);
        all[0].summary.median = 250.0;
        all.push(coll("data_parallel_step", "step graph", "ns", 1 << 24, 2_000_000.0));
        all.push(coll("data_parallel_step", "step eager", "ns", 1 << 24, 1_900_000.0));
        let device = Lookup::new(&all, "cuda:0 + cuda:1");
        let a = collectives_goal(&device).unwrap();
        assert!(!a.met && a.now.contains("83%"), "{}", a.now);
        assert!(a.now.contains("15.0 µs per all-reduce in a graph of 20") && a.now.contains("25.0 µs as a graph"));
        all[0].summary.median = 280.0;
        all[3].summary.median = 21_000.0;
        let device = Lookup::new(&all, "cuda:0 + cuda:1");
        assert!(!collectives_goal(&device).unwrap().met, "a chain slower than direct calls");
        assert!(!step_goal(&device).unwrap().met);
        // Without direct NCCL (host staging): no row.
        let staged: Vec<Record> = all.into_iter().filter(|r| r.variant != "direct_nccl").collect();
        assert!(collectives_goal(&Lookup::new(&staged, "cuda:0 + cuda:1")).is_none());
        assert!(step_goal(&Lookup::new(&staged, "cuda:0 + cuda:1")).is_none());
    }
}
