//! Planned OpenCL replays handed to the device's replayer against the same
//! replays made on their caller's thread, sampled in turn in one process
//! (issue 31).
//!
//! Where a device replays its command buffers planned (one OpenCL enqueue
//! per command, docs/opencl.md), `UR_OPENCL_REPLAY_THREAD` may hand the
//! submissions to a thread of the device's, which keeps the caller's time
//! flat in the node count. Whether that costs the submissions' total time
//! is what decides the default, and runs of two processes, one with the
//! replayer and one without, differed by more than that question: rows the
//! replayer never touches moved 0.87x-1.34x between such runs on NVIDIA's
//! OpenCL (docs/performance.md). Here both ways are measured in one
//! process, block by block in rotated order ([`measure_interleaved`]), the
//! adapter's `keep_replays_on_callers` switching between them.
//!
//! Shapes are `replay_flat`'s `axpb` and `memory` (in-order command
//! buffers of N commands, [`crate::flat_shapes`]), each submitted once and
//! waited for (`replay`) and [`AHEAD`](crate::replay_flat::AHEAD) times back
//! to back before the wait (`replay_ahead`), per submission. Which of the
//! handed samples' submissions the replayer took depends on the variable's
//! value (`on`: those that come back to back; `always`: all): the table
//! gives the share it took.

use std::cell::Cell;

use cmdbuf::{Backend, UrError};

use crate::flat_shapes::Operands;
use crate::replay_flat::AHEAD;
use crate::stats::{Repeats, Summary, measure_interleaved};
use crate::suites::{Record, Sample, Target, timed_replay, timed_replays_ahead};

/// The group's name in records and `--only`.
pub const GROUP: &str = "replay_handover";

/// The shapes measured.
const SHAPES: [&str; 2] = ["axpb", "memory"];

/// How a shape is submitted: once and waited for, or back to back.
const SUBMISSIONS: [&str; 2] = ["replay", "replay_ahead"];

/// Fewest samples of one variant at one N (as `replay_flat`'s).
const MIN_SAMPLES: usize = 20;

/// The variant name of `submission` made `handed` or on the caller's thread.
fn variant(submission: &str, handed: bool) -> String {
    format!("{submission}_{}", if handed { "handed" } else { "caller" })
}

/// Measures every shape at each of `sizes` on `t`, handed and on the
/// caller's thread; `row` is called after each N with the records so far.
/// An error where the device has no replayer that takes submissions.
pub fn run(
    t: &Target,
    repeats: Repeats,
    sizes: &[usize],
    out: &mut Vec<Record>,
    row: &mut dyn FnMut(&[Record], usize),
) -> Result<(), String> {
    // The emulated view replays through cmdbuf-core's software command buffer.
    if t.device.backend() != Backend::OpenCl || t.device.is_emulated() {
        return Err("only the OpenCL adapter's own devices have a replayer".into());
    }
    let e = |e: UrError| e.to_string();
    let operands = Operands::new(&t.context, &t.empty, &t.axpb).map_err(e)?;
    // Whatever a sample fails with, later groups get the adapter's rule back.
    let _restore = KeptOnCallers;
    // Whether the replayer takes anything: two submissions back to back.
    let probe = operands.build(&t.context, &t.device, "axpb", 2).map_err(e)?;
    let before = cmdbuf_opencl::replays_handed();
    timed_replays_ahead(t, &probe, 2)?;
    if cmdbuf_opencl::replays_handed() == before {
        return Err(format!(
            "the replayer took no submission: {} is `off` (or unset, on a CPU device), the device replays with \
             its driver's command buffers, or the process may run on one CPU only (docs/opencl.md)",
            cmdbuf_opencl::REPLAY_THREAD_ENV
        ));
    }
    for &n in sizes {
        let buffers = crate::replay_flat::build_each(&operands, t, &SHAPES, n)?;
        // Per (shape, submission) of the handed variants: submissions made, and handed.
        let counts: Vec<(Cell<u64>, Cell<u64>)> =
            (0..SHAPES.len() * SUBMISSIONS.len()).map(|_| Default::default()).collect();
        let mut bodies: Vec<Box<dyn FnMut() -> Sample + '_>> = Vec::new();
        let mut variants: Vec<(&str, String)> = Vec::new();
        for (s, shape) in SHAPES.iter().enumerate() {
            let cb = &buffers[s];
            for (k, submission) in SUBMISSIONS.iter().enumerate() {
                let count = if *submission == "replay" { 1 } else { AHEAD };
                for handed in [true, false] {
                    let counted = &counts[s * SUBMISSIONS.len() + k];
                    bodies.push(Box::new(move || {
                        cmdbuf_opencl::keep_replays_on_callers(!handed);
                        let before = cmdbuf_opencl::replays_handed();
                        let sample = if count == 1 { timed_replay(t, cb) } else { timed_replays_ahead(t, cb, count) };
                        if handed {
                            counted.0.set(counted.0.get() + u64::from(count));
                            counted.1.set(counted.1.get() + cmdbuf_opencl::replays_handed() - before);
                        } else if cmdbuf_opencl::replays_handed() != before {
                            return Err("a submission kept on its caller's thread was handed".into());
                        }
                        sample
                    }));
                    variants.push((shape, variant(submission, handed)));
                }
            }
        }
        let per_work = repeats.per_work(n);
        let r = Repeats { samples: per_work.samples.max(repeats.samples.min(MIN_SAMPLES)), ..per_work };
        let mut bodies: Vec<&mut dyn FnMut() -> Sample> =
            bodies.iter_mut().map(|b| &mut **b as &mut dyn FnMut() -> Sample).collect();
        let summaries = measure_interleaved(r, &mut bodies)?;
        drop(bodies);
        for ((shape, variant), [host, wall]) in variants.into_iter().zip(summaries) {
            out.push(t.record(GROUP, shape, &variant, "host_ns_per_submission", n, host));
            out.push(t.record(GROUP, shape, &variant, "wall_ns_per_submission", n, wall));
        }
        for (s, shape) in SHAPES.iter().enumerate() {
            for (k, submission) in SUBMISSIONS.iter().enumerate() {
                let (made, handed) = &counts[s * SUBMISSIONS.len() + k];
                let share = handed.get() as f64 / made.get().max(1) as f64;
                let summary = Summary { median: share, p10: share, p90: share, samples: made.get() as usize };
                out.push(t.record(GROUP, shape, &variant(submission, true), "share_handed", n, summary));
            }
        }
        row(out, n);
    }
    Ok(())
}

/// Gives the adapter its own rule back when dropped.
struct KeptOnCallers;

impl Drop for KeptOnCallers {
    fn drop(&mut self) {
        cmdbuf_opencl::keep_replays_on_callers(false);
    }
}

/// The heading of the table, whose rows ([`table_row`]) print as measured.
pub fn table_header() -> String {
    format!(
        "Planned OpenCL replays handed to the device's replayer against the same replays made by their caller, \
         sampled in turn in one process; µs per submission, median (p10–p90). `alone`: one submission waited for; \
         `ahead`: {AHEAD} back to back before the wait. `handed`: the share of the handed samples' submissions \
         the replayer took (UR_OPENCL_REPLAY_THREAD decides which).\n\n\
         | shape | N | alone host, handed | alone host, caller | alone wall, handed | alone wall, caller | \
         alone wall handed / caller | alone handed | ahead host, handed | ahead host, caller | ahead wall, handed | \
         ahead wall, caller | ahead wall handed / caller | ahead handed |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
}

/// The rows of `n` commands on `device`, one per shape.
pub fn table_row(records: &[Record], device: &str, n: usize) -> String {
    use crate::figures::{Lookup, NOISY, cell};
    let l = Lookup::new(records, device);
    let mut out = String::new();
    for shape in SHAPES {
        let mut columns = vec![shape.to_string(), n.to_string()];
        for submission in SUBMISSIONS {
            let g = |handed, metric| l.get(GROUP, shape, &variant(submission, handed), metric, n);
            let wall = "wall_ns_per_submission";
            columns.push(cell(g(true, "host_ns_per_submission"), 1e3));
            columns.push(cell(g(false, "host_ns_per_submission"), 1e3));
            columns.push(cell(g(true, wall), 1e3));
            columns.push(cell(g(false, wall), 1e3));
            columns.push(match (g(true, wall), g(false, wall)) {
                (Some(a), Some(b)) if b.median > 0.0 => {
                    let flag = if a.is_noisy() || b.is_noisy() { NOISY } else { "" };
                    format!("{:.2}x{flag}", a.median / b.median)
                }
                _ => "—".into(),
            });
            columns.push(g(true, "share_handed").map_or("—".into(), |s| format!("{:.0}%", s.median * 100.0)));
        }
        out += &format!("| {} |\n", columns.join(" | "));
    }
    out
}

/// The whole table of `device` (for a run's records read back).
pub fn table(records: &[Record], device: &str) -> String {
    crate::figures::table_by_size(records, device, GROUP, table_header, table_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(shape: &str, variant: &str, metric: &str, n: usize, median: f64) -> Record {
        Record {
            device: "opencl:0".into(),
            backend: "opencl".into(),
            device_name: "test".into(),
            benchmark: GROUP.into(),
            shape: shape.into(),
            variant: variant.into(),
            metric: metric.into(),
            n,
            summary: Summary { median, p10: median, p90: median, samples: 20 },
        }
    }

    #[test]
    fn a_row_gives_handed_over_caller_and_the_share_taken() {
        let mut records = Vec::new();
        for (variant, host, wall) in
            [("replay_handed", 2e3, 12e3), ("replay_caller", 10e3, 10e3), ("replay_ahead_handed", 1e3, 9e3)]
        {
            records.push(record("axpb", variant, "host_ns_per_submission", 10, host));
            records.push(record("axpb", variant, "wall_ns_per_submission", 10, wall));
        }
        records.push(record("axpb", "replay_handed", "share_handed", 10, 0.0));
        records.push(record("axpb", "replay_ahead_handed", "share_handed", 10, 15.0 / 16.0));
        let row = table_row(&records, "opencl:0", 10);
        let axpb = row.lines().next().expect("an axpb row");
        assert!(axpb.starts_with("| axpb | 10 | 2.00 (2.00–2.00) | 10.0 "), "{axpb}");
        assert!(axpb.contains("| 1.20x | 0% |"), "{axpb}");
        // The ahead caller figures are missing: their ratio is too.
        assert!(axpb.ends_with("| 9.00 (9.00–9.00) | — | — | 94% |"), "{axpb}");
        assert_eq!(row.lines().count(), 2, "one row per shape");
    }
}
