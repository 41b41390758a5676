//! Tables (Markdown, so they paste into docs/performance.md) and the plot.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::figures::{Lookup, NOISY, cell, num, ratio};
use crate::suites::Record;

/// The heading of one device's tables.
pub fn device_heading(device: &str, name: &str) -> String {
    format!("### `{device}` — {name}\n\n")
}

/// The table of one benchmark group of one device (empty if it has no
/// figures), with a note under it when a figure in it is noisy.
pub fn group_table(records: &[Record], device: &str, group: &str) -> String {
    let mut out = tables(records, device, group);
    if out.contains(NOISY) {
        out += &noisy_footnote();
    }
    out
}

fn noisy_footnote() -> String {
    format!(
        "{NOISY} p10–p90 spread over {}x: the median alone may mislead; run again before citing it.\n\n",
        crate::stats::NOISY_SPREAD
    )
}

/// The heading of the submission table, whose rows
/// ([`submission_row`]) print as they are measured.
pub fn submission_header() -> String {
    "Submission of N trivial kernels, ns per node: host time to submit, wall time to completion; median (p10–p90). \
     `raw eager`: the same kernels submitted one by one with the backend's own API; `raw batched`: all of them in \
     one submission (Vulkan); `raw`: the same graph built with the backend's own graph API (see `raw`); `eager axpb`: \
     the chain as launches of `axpb` over 256 work-items with a USM pointer and two values (the C programs' kernel \
     through the loader), `raw eager axpb` the same with the backend's own API (CUDA, OpenCL; Vulkan: one \
     submission per dispatch, the arguments as push constants); `raw eager waits` (OpenCL, fork-join): the raw \
     launches on an out-of-order queue with the same wait lists as the eager launches, where `raw eager` is \
     the serial best case.\n\n\
     | shape | N | eager host | eager wall | eager axpb host | eager axpb wall | raw eager axpb host | raw eager axpb \
     wall | eager axpb / raw (host) | raw eager host | raw eager wall | eager / raw eager (host) | \
     eager / raw eager (wall) | raw eager waits host | raw eager waits wall | eager / raw eager waits (wall) | \
     raw batched host | raw batched wall | eager / raw batched (wall) | replay host | \
     replay wall | raw host | raw wall | eager / replay (wall) | replay / raw (wall) |\n\
     |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        .into()
}

/// One row of the submission table: `shape` at `n` kernels on `device`.
pub fn submission_row(records: &[Record], device: &str, shape: &str, n: usize) -> String {
    let l = Lookup::new(records, device);
    let g = |v, m| l.get("submission", shape, v, m, n);
    let (host, wall) = ("host_ns_per_node", "wall_ns_per_node");
    let pair = |v| [cell(g(v, host), 1.0), cell(g(v, wall), 1.0)];
    let over = |a, b, metric| ratio(g(a, metric), g(b, metric));
    // In the header's order: eager, eager axpb, raw eager axpb and their
    // ratio, raw eager and its ratios to eager, raw eager with wait lists
    // and its ratio, raw batched
    // and its ratio, replay, raw graph, and the replay ratios.
    let mut columns: Vec<String> = [pair("eager"), pair("eager_axpb"), pair("raw_eager_axpb")].concat();
    columns.push(over("eager_axpb", "raw_eager_axpb", host));
    columns.extend(pair("raw_eager"));
    columns.extend([over("eager", "raw_eager", host), over("eager", "raw_eager", wall)]);
    columns.extend(pair("raw_eager_waits"));
    columns.push(over("eager", "raw_eager_waits", wall));
    columns.extend(pair("raw_eager_batched"));
    columns.push(over("eager", "raw_eager_batched", wall));
    columns.extend([pair("replay"), pair("raw")].concat());
    columns.extend([over("eager", "replay", wall), over("replay", "raw", wall)]);
    format!("| {shape} | {n} | {} |\n", columns.join(" | "))
}

/// What goes under a table whose rows were printed as they were measured:
/// the note on noisy figures, if one is.
pub fn noisy_note(records: &[Record], device: &str, group: &str) -> String {
    if tables(records, device, group).contains(NOISY) { format!("\n{}", noisy_footnote()) } else { "\n".into() }
}

/// The notes and the groups left out, under a device's tables.
pub fn device_notes(notes: &[String], skipped: &[(String, String)]) -> String {
    let mut out = String::new();
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    for (what, why) in skipped {
        let _ = writeln!(out, "- `{what}` not measured: {why}");
    }
    if !skipped.is_empty() || !notes.is_empty() {
        out.push('\n');
    }
    out
}

fn tables(records: &[Record], device: &str, group: &str) -> String {
    let l = Lookup::new(records, device);
    let mut out = String::new();
    let wants = |g: &str| g == group;

    if wants("graph") {
        out += &crate::graph::table(&l);
    }
    if wants("submission") && !l.sizes("submission").is_empty() {
        out += &submission_header();
        for shape in ["chain", "fork_join"] {
            for n in l.sizes("submission") {
                out += &submission_row(records, device, shape, n);
            }
        }
        out.push('\n');
    }
    if wants(crate::replay_flat::GROUP) {
        out += &crate::replay_flat::table(records, device);
    }
    #[cfg(feature = "opencl")]
    if wants(crate::replay_handover::GROUP) {
        out += &crate::replay_handover::table(records, device);
    }
    if wants("usm_submission") && !l.sizes("usm_submission").is_empty() {
        let _ = writeln!(
            out,
            "A chain of N USM memory commands (256-byte copies and fills in turn), ns per command: host time \
             to submit, wall time to completion; median (p10–p90).\n"
        );
        let _ = writeln!(out, "| N | eager host | eager wall | replay host | replay wall | replay / eager (wall) |");
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        for n in l.sizes("usm_submission") {
            let g = |v, m| l.get("usm_submission", "memory_chain", v, m, n);
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {} |",
                cell(g("eager", "host_ns_per_node"), 1.0),
                cell(g("eager", "wall_ns_per_node"), 1.0),
                cell(g("replay", "host_ns_per_node"), 1.0),
                cell(g("replay", "wall_ns_per_node"), 1.0),
                ratio(g("replay", "wall_ns_per_node"), g("eager", "wall_ns_per_node")),
            );
        }
        out.push('\n');
    }
    if wants("finalize") && !l.sizes("finalize").is_empty() {
        let _ = writeln!(
            out,
            "Building (create, append, finalize) a chain of N kernels, ns per node; memory per command \
             (Rust heap, exact; resident set, which also sees the driver's allocations, in pages).\n"
        );
        let _ = writeln!(out, "| N | build | heap bytes per command | resident bytes per command |");
        let _ = writeln!(out, "|---|---|---|---|");
        for n in l.sizes("finalize") {
            let bytes = |metric| l.get("finalize", "chain", "build", metric, n).map_or("—".into(), |s| num(s.median));
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} |",
                cell(l.get("finalize", "chain", "build", "ns_per_node", n), 1.0),
                bytes("heap_bytes_per_command"),
                bytes("rss_bytes_per_command"),
            );
        }
        out.push('\n');
    }
    if wants("update") && !l.sizes("update").is_empty() {
        let _ = writeln!(
            out,
            "One kernel argument changed in an N-kernel chain: the update call alone right after a replay, \
             a second update right after it, that second update with the replay's clean-up ended (10 ms after it), the replay that follows them, a replay without update, and \
             rebuilding (create, append, finalize); µs.\n"
        );
        let _ = writeln!(
            out,
            "| N | update | update again | update again, settled | replay after update | replay | rebuild | rebuild / update | replay after update / replay |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        for n in l.sizes("update") {
            let g = |v| l.get("update", "chain", v, "ns", n);
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(g("update"), 1e3),
                cell(g("update_again"), 1e3),
                cell(g("update_settled"), 1e3),
                cell(g("replay_after_update"), 1e3),
                cell(g("replay"), 1e3),
                cell(g("rebuild"), 1e3),
                ratio(g("rebuild"), g("update")),
                ratio(g("replay_after_update"), g("replay")),
            );
        }
        out.push('\n');
    }
    if wants("cpu_per_node") && !l.sizes("cpu_per_node").is_empty() {
        let _ = writeln!(out, "Replay overhead per node of trivial kernels (CPU adapter), ns.\n");
        let variants: Vec<String> = {
            let mut v: Vec<String> = records
                .iter()
                .filter(|r| r.device == device && r.benchmark == "cpu_per_node")
                .map(|r| r.variant.clone())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let _ = writeln!(out, "| shape | N | {} |", variants.join(" | "));
        let _ = writeln!(out, "|---|---|{}", "---|".repeat(variants.len()));
        for shape in ["chain", "wide"] {
            for n in l.sizes("cpu_per_node") {
                let cells: Vec<String> =
                    variants.iter().map(|v| cell(l.get("cpu_per_node", shape, v, "ns_per_node", n), 1.0)).collect();
                let _ = writeln!(out, "| {shape} | {n} | {} |", cells.join(" | "));
            }
        }
        out.push('\n');
    }
    if wants("submit_graph") && !l.sizes("submit_graph").is_empty() {
        let _ = writeln!(
            out,
            "SubmitGraph: a chain of k trivial kernels submitted 100 times in a row; µs per submission.\n"
        );
        let _ = writeln!(out, "| kernels | replay host | replay wall | eager host | eager wall |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for k in l.sizes("submit_graph") {
            let g = |v, m| l.get("submit_graph", "chain", v, m, k);
            let _ = writeln!(
                out,
                "| {k} | {} | {} | {} | {} |",
                cell(g("replay", "host_ns_per_submission"), 1e3),
                cell(g("replay", "wall_ns_per_submission"), 1e3),
                cell(g("eager", "host_ns_per_submission"), 1e3),
                cell(g("eager", "wall_ns_per_submission"), 1e3),
            );
        }
        out.push('\n');
    }
    if wants("sin_kernel_graph") && !l.sizes("sin_kernel_graph").is_empty() {
        let _ =
            writeln!(out, "SinKernelGraph: k kernels computing sin over 64K floats in sequence; µs per execution.\n");
        let _ = writeln!(out, "| kernels | graph | eager | speedup |");
        let _ = writeln!(out, "|---|---|---|---|");
        for k in l.sizes("sin_kernel_graph") {
            let g = l.get("sin_kernel_graph", "chain", "replay", "wall_ns", k);
            let e = l.get("sin_kernel_graph", "chain", "eager", "wall_ns", k);
            let _ = writeln!(out, "| {k} | {} | {} | {} |", cell(g, 1e3), cell(e, 1e3), ratio(e, g));
        }
        out.push('\n');
    }
    if wants("perf_scaling") && !l.sizes("perf_scaling").is_empty() {
        let _ = writeln!(out, "Chains of empty kernels (cudaGraphsPerfScaling shape): wall time per node, ns.\n");
        let _ = writeln!(out, "| length | replay | eager | speedup |");
        let _ = writeln!(out, "|---|---|---|---|");
        for n in l.sizes("perf_scaling") {
            let r = l.get("perf_scaling", "chain", "replay", "wall_ns_per_node", n);
            let e = l.get("perf_scaling", "chain", "eager", "wall_ns_per_node", n);
            let _ = writeln!(out, "| {n} | {} | {} | {} |", cell(r, 1.0), cell(e, 1.0), ratio(e, r));
        }
        out.push('\n');
    }
    out
}

/// One plotted line: device, variant and (nodes, ns per node) points.
type Series<'a> = (String, &'a str, Vec<(f64, f64)>);

/// Wall time per node against chain length, replay (thick) and eager (thin)
/// for every device, log-log.
pub fn plot_scaling(records: &[Record], path: &Path) -> Result<(), String> {
    let series: Vec<Series<'_>> = {
        let mut devices: Vec<&str> = records.iter().map(|r| r.device.as_str()).collect();
        devices.dedup();
        let mut s = Vec::new();
        for d in devices {
            for variant in ["replay", "eager"] {
                let points: Vec<(f64, f64)> = records
                    .iter()
                    .filter(|r| r.device == d && r.benchmark == "perf_scaling" && r.variant == variant)
                    .map(|r| (r.n as f64, r.summary.median))
                    .collect();
                if !points.is_empty() {
                    s.push((d.to_string(), variant, points));
                }
            }
        }
        s
    };
    if series.is_empty() {
        return Ok(());
    }
    let all = series.iter().flat_map(|(_, _, p)| p.iter());
    let (mut x_max, mut y_min, mut y_max) = (2.0f64, f64::MAX, 0.0f64);
    for (x, y) in all {
        x_max = x_max.max(*x);
        y_min = y_min.min(*y);
        y_max = y_max.max(*y);
    }
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Chains of empty kernels: wall time per node", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1f64..x_max * 1.2).log_scale(), ((y_min * 0.8).max(1.0)..y_max * 1.25).log_scale())
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("nodes in the chain").y_desc("ns per node").draw().map_err(|x| e(&x))?;
    for (i, (device, variant, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i / 2).to_rgba();
        let style = if *variant == "replay" { color.stroke_width(2) } else { color.stroke_width(1) };
        let label = format!("{device} {variant}");
        chart
            .draw_series(LineSeries::new(points.clone(), style))
            .map_err(|x| e(&x))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled()))).map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
