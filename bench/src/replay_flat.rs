//! Host time per submission of in-order command buffers of N commands of
//! the kinds applications record (issue 31: a graph's submission host time
//! flat in its node count). The `submission` group replays empty kernels
//! without arguments; what SYCL graphs and the C programs through the
//! loader hold are kernels with arguments and memory commands, whose
//! replays may do per-command work the empty kernels do not show.
//!
//! Shapes, each an in-order command buffer (`CommandBufferDesc::in_order`,
//! as `urt_command_buffer` and libsycl's in-order graphs make them) of N:
//! - `empty`: launches of the `empty` kernel on one work-item (what the
//!   `submission` group replays);
//! - `axpb`: launches of `axpb` over 256 work-items with a USM pointer and
//!   two values (`abi/harness/bench/kernel_submit.c`'s command buffer);
//! - `memory`: 256-byte USM copies and fills in turn;
//! - `raw`: where the backend has a graph API, the `submission` group's raw
//!   chain of empty kernels submitted with it (`crate::raw`): whether the
//!   driver's own submission grows with N.
//!
//! Each sample submits once and waits. `axpb` and `memory` are also
//! submitted [`AHEAD`] times back to back before the wait (variant
//! `replay_ahead`, per submission), as a runtime submits a graph in a loop:
//! the host then runs ahead of the device, and a backend that keeps state
//! per submission in flight runs out of it.
//!
//! The shapes of one N are sampled in one loop in rotated blocks
//! ([`measure_interleaved`]); a row prints as each N finishes.

use cmdbuf::{CommandBuffer, UrError};

use crate::figures::Assessment;
use crate::flat_shapes::{AXPB_ITEMS, MEMORY_BYTES, Operands};
use crate::stats::{Repeats, measure_interleaved};
use crate::suites::{Record, Sample, Target, timed_raw_launch, timed_replay, timed_replays_ahead};

/// The group's name in records and `--only`.
pub const GROUP: &str = "replay_flat";

/// The shapes built with cmdbuf, in column order.
const SHAPES: [&str; 3] = ["empty", "axpb", "memory"];

/// The shapes also submitted back to back, and how many times per sample.
const AHEAD_SHAPES: [&str; 2] = ["axpb", "memory"];
/// Submissions per sample of the `replay_ahead` variant: more than a
/// backend's state per submission in flight (4 reusable primaries per
/// stage on Vulkan).
pub const AHEAD: u32 = 16;

/// Each measured `(shape, variant)`, in column order.
const MEASURED: [(&str, &str); 5] = [
    ("empty", "replay"),
    ("axpb", "replay"),
    ("memory", "replay"),
    ("axpb", "replay_ahead"),
    ("memory", "replay_ahead"),
];

/// Fewest samples of one shape at one N: the largest N would otherwise get
/// five ([`Repeats::per_work`]), too few for a median of host time, which
/// is what this group compares across N.
const MIN_SAMPLES: usize = 20;

/// Measures every shape at each of `sizes` on `t`, host and wall time per
/// submission; `row` is called after each N with the records so far.
pub fn run(
    t: &Target,
    repeats: Repeats,
    sizes: &[usize],
    mut raw: Option<&mut (dyn crate::raw::RawGraph + 'static)>,
    out: &mut Vec<Record>,
    row: &mut dyn FnMut(&[Record], usize),
) -> Result<(), String> {
    let e = |e: UrError| e.to_string();
    let operands = Operands::new(&t.context, &t.empty, &t.axpb).map_err(e)?;
    for &n in sizes {
        let buffers = build_each(&operands, t, &SHAPES, n)?;
        let mut replays: Vec<Box<dyn FnMut() -> Sample + '_>> =
            buffers.iter().map(|cb| Box::new(move || timed_replay(t, cb)) as Box<dyn FnMut() -> _>).collect();
        let mut variants: Vec<(&str, &str)> = SHAPES.iter().map(|s| (*s, "replay")).collect();
        for shape in AHEAD_SHAPES {
            let cb = &buffers[SHAPES.iter().position(|s| *s == shape).expect("a built shape")];
            replays.push(Box::new(move || timed_replays_ahead(t, cb, AHEAD)));
            variants.push((shape, "replay_ahead"));
        }
        if let Some(raw) = raw.as_deref_mut() {
            let chain: Vec<Vec<usize>> = (0..n).map(|i| i.checked_sub(1).into_iter().collect()).collect();
            raw.build(&chain)?;
            variants.push(("raw", "replay"));
            replays.push(Box::new(move || timed_raw_launch(raw)));
        }
        let per_work = repeats.per_work(n);
        let r = Repeats { samples: per_work.samples.max(repeats.samples.min(MIN_SAMPLES)), ..per_work };
        let mut bodies: Vec<&mut dyn FnMut() -> Sample> =
            replays.iter_mut().map(|b| &mut **b as &mut dyn FnMut() -> Sample).collect();
        let summaries = measure_interleaved(r, &mut bodies)?;
        for ((shape, variant), [host, wall]) in variants.into_iter().zip(summaries) {
            out.push(t.record(GROUP, shape, variant, "host_ns_per_submission", n, host));
            out.push(t.record(GROUP, shape, variant, "wall_ns_per_submission", n, wall));
        }
        row(out, n);
    }
    Ok(())
}

/// One command buffer of `n` commands per shape of `shapes`, built on `t`.
pub(crate) fn build_each(
    operands: &Operands<'_>,
    t: &Target,
    shapes: &[&str],
    n: usize,
) -> Result<Vec<CommandBuffer>, String> {
    shapes.iter().map(|shape| operands.build(&t.context, &t.device, shape, n).map_err(|e| e.to_string())).collect()
}

/// Host time per submission at N = 100 over N = 1, at most this for a
/// shape to count as flat (issue 31).
const FLAT: f64 = 1.5;

/// Issue 31's goal on one device: every shape's host time per submission
/// at N = 100 within [`FLAT`] of its N = 1 figure, submitted alone and back
/// to back (N = 1000 reported too).
pub fn goal(l: &crate::figures::Lookup<'_>) -> Option<Assessment> {
    let host = |shape, variant, n| l.get(GROUP, shape, variant, "host_ns_per_submission", n).map(|s| s.median);
    let mut parts = Vec::new();
    let mut met = true;
    for (shape, variant) in MEASURED {
        let (Some(one), Some(hundred)) = (host(shape, variant, 1), host(shape, variant, 100)) else { continue };
        let growth = hundred / one.max(1e-9);
        met &= growth <= FLAT;
        let name = if variant == "replay" { shape.to_string() } else { format!("{shape} ahead") };
        let mut part = format!("{name} {:.2} → {:.2} µs ({growth:.2}x)", one / 1e3, hundred / 1e3);
        if let Some(thousand) = host(shape, variant, 1000) {
            part += &format!(", {:.2} µs at 1000", thousand / 1e3);
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return None;
    }
    Some(Assessment { now: format!("N = 1 → 100: {}", parts.join("; ")), met })
}

/// The heading of the table, whose rows ([`table_row`]) print as measured.
pub fn table_header() -> String {
    format!(
        "Replay of an in-order command buffer of N commands, host time per submission (µs) and its ratio to N = 1, \
         and wall time per submission (µs); median (p10–p90). `empty`: empty kernels without arguments; `axpb`: \
         kernels over {AXPB_ITEMS} work-items with a USM pointer and two values; `memory`: {MEMORY_BYTES}-byte USM \
         copies and fills in turn; `raw`: a chain of empty kernels submitted with the backend's own graph API; \
         `ahead`: {AHEAD} submissions back to back before the wait, per submission.\n\n\
         | N | empty host | ×N=1 | axpb host | ×N=1 | memory host | ×N=1 | raw host | ×N=1 | axpb ahead host | ×N=1 | \
         memory ahead host | ×N=1 | empty wall | axpb wall | memory wall | raw wall |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
}

/// The row of `n` commands on `device`.
pub fn table_row(records: &[Record], device: &str, n: usize) -> String {
    use crate::figures::{Lookup, cell, ratio};
    let l = Lookup::new(records, device);
    let g = |shape, variant, metric, n| l.get(GROUP, shape, variant, metric, n);
    let host = "host_ns_per_submission";
    let mut columns = Vec::new();
    let host_columns = [("empty", "replay"), ("axpb", "replay"), ("memory", "replay"), ("raw", "replay")]
        .into_iter()
        .chain(AHEAD_SHAPES.map(|s| (s, "replay_ahead")));
    for (shape, variant) in host_columns {
        columns.push(cell(g(shape, variant, host, n), 1e3));
        columns.push(ratio(g(shape, variant, host, n), g(shape, variant, host, 1)));
    }
    for shape in ["empty", "axpb", "memory", "raw"] {
        columns.push(cell(g(shape, "replay", "wall_ns_per_submission", n), 1e3));
    }
    format!("| {n} | {} |\n", columns.join(" | "))
}

/// The whole table of `device` (for a run's records read back).
pub fn table(records: &[Record], device: &str) -> String {
    crate::figures::table_by_size(records, device, GROUP, table_header, table_row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Lookup;
    use crate::stats::Summary;

    fn host(shape: &str, n: usize, median: f64) -> Record {
        host_of(shape, "replay", n, median)
    }

    fn host_of(shape: &str, variant: &str, n: usize, median: f64) -> Record {
        Record {
            device: "cpu:0".into(),
            backend: "cpu".into(),
            device_name: "test".into(),
            benchmark: GROUP.into(),
            shape: shape.into(),
            variant: variant.into(),
            metric: "host_ns_per_submission".into(),
            n,
            summary: Summary { median, p10: median, p90: median, samples: 1 },
        }
    }

    #[test]
    fn every_shape_within_the_bound_from_1_to_100_is_flat() {
        let flat: Vec<Record> =
            SHAPES.iter().flat_map(|s| [host(s, 1, 400.0), host(s, 100, 590.0), host(s, 1000, 5000.0)]).collect();
        let a = goal(&Lookup::new(&flat, "cpu:0")).unwrap();
        assert!(a.met, "{}", a.now);
        assert!(a.now.contains("axpb 0.40 → 0.59 µs (1.48x), 5.00 µs at 1000"), "{}", a.now);
        let mut one_grows = flat.clone();
        one_grows.push(host("memory", 1, 300.0));
        one_grows.retain(|r| !(r.shape == "memory" && r.n == 1 && r.summary.median == 400.0));
        assert!(!goal(&Lookup::new(&one_grows, "cpu:0")).unwrap().met);
        assert!(goal(&Lookup::new(&flat[..1], "cpu:0")).is_none(), "N = 100 not measured");
    }

    #[test]
    fn submissions_back_to_back_count_too() {
        let mut records: Vec<Record> = SHAPES.iter().flat_map(|s| [host(s, 1, 400.0), host(s, 100, 410.0)]).collect();
        records.extend([host_of("memory", "replay_ahead", 1, 400.0), host_of("memory", "replay_ahead", 100, 410.0)]);
        let a = goal(&Lookup::new(&records, "cpu:0")).unwrap();
        assert!(a.met && a.now.contains("memory ahead 0.40 → 0.41 µs"), "{}", a.now);
        records.push(host_of("axpb", "replay_ahead", 1, 400.0));
        records.push(host_of("axpb", "replay_ahead", 100, 800.0));
        let a = goal(&Lookup::new(&records, "cpu:0")).unwrap();
        assert!(!a.met && a.now.contains("axpb ahead 0.40 → 0.80 µs (2.00x)"), "{}", a.now);
    }
}
