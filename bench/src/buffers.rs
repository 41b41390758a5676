//! The `buffers` group: what cmdbuf-runtime's buffer model costs on the host per
//! command-group submission (dependency analysis and page tracking, no
//! device work), and how many bytes its page-granular transfers move against
//! the element-exact minimum. Runs once, not per device: none is involved.

use std::fmt::Write as _;
use std::time::Instant;

use cmdbuf_runtime::buffer::deps::{DepTracker, UseKind};
use cmdbuf_runtime::buffer::geometry::{Dims, PageGrid};
use cmdbuf_runtime::buffer::pages::{HOST, PageMap};
use cmdbuf_runtime::buffer::plan::{Transfer, apply, plan};

use crate::stats::{Repeats, Summary};
use crate::suites::Record;

/// Device allocations besides the host's.
const DEVICES: usize = 2;

/// A small deterministic generator (xorshift64*): the same accesses every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Copy, Clone)]
struct Access {
    loc: usize,
    write: bool,
    no_init: bool,
    offset: Dims,
    range: Dims,
}

/// `count` accesses of 1 to `max` elements per dimension at random places,
/// on random allocations, a third of them writes.
fn accesses(grid: &PageGrid, count: usize, max: usize, seed: u64) -> Vec<Access> {
    let mut rng = Rng(seed);
    let r = grid.range();
    (0..count)
        .map(|_| {
            let range = [0, 1, 2].map(|d| 1 + rng.below(max.min(r[d])));
            let offset = [0, 1, 2].map(|d| rng.below(r[d] - range[d] + 1));
            let kind = rng.below(6);
            Access { loc: rng.below(DEVICES + 1), write: kind < 2, no_init: kind == 0, offset, range }
        })
        .collect()
}

/// One submission's host work: prune finished uses, find the conflicts,
/// plan the transfers, record them and the access, update the page state.
fn submit(map: &mut PageMap, deps: &mut DepTracker<usize>, a: &Access, id: usize, in_flight: usize) -> usize {
    let b = map.grid().page_box(a.offset, a.range).expect("accesses are in range");
    deps.prune(|&t| t + in_flight < id);
    let transfers = plan(map, a.loc, &b, a.no_init);
    for t in &transfers {
        deps.record(t.pages, UseKind::Fill { to: t.dst }, id);
    }
    let kind = if a.write { UseKind::Write } else { UseKind::Read { loc: a.loc } };
    let conflicts = deps.conflicts(&b, kind).count();
    apply(map, &transfers, a.loc, &b, a.write);
    deps.record(b, kind, id);
    conflicts
}

fn new_map(grid: PageGrid) -> PageMap {
    let mut map = PageMap::new(grid);
    for _ in 0..DEVICES {
        map.add_location();
    }
    // Initialized on the host, as a buffer made from host data is.
    map.mark_written(HOST, &grid.all());
    map
}

/// Host nanoseconds per submission for a 1M-page buffer (1D and 3D) and
/// 10,000 accessors of a few pages each, with every use still in flight
/// (the tracker keeps them all) and with 64 in flight (finished work is pruned).
fn tracking_cost(repeats: Repeats, submissions: usize, out: &mut Vec<Record>) -> String {
    let shapes: [(&str, PageGrid, usize); 2] = [
        ("1d", PageGrid::new(4, &[1 << 26], Some(&[64])).expect("1M pages"), 8 * 64),
        ("3d", PageGrid::new(4, &[400, 400, 400], Some(&[4, 4, 4])).expect("1M pages"), 12),
    ];
    let mut text = String::from(
        "| shape | pages | accessors | in flight | ns per submission (median) | p10 | p90 | conflicts found |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (shape, grid, max) in shapes {
        let list = accesses(&grid, submissions, max, 7);
        for (variant, in_flight) in [("all in flight", usize::MAX / 2), ("64 in flight", 64)] {
            let mut samples = Vec::new();
            let mut conflicts = 0;
            for run in 0..repeats.warmup + repeats.samples {
                let mut map = new_map(grid);
                let mut deps = DepTracker::new(grid.pages());
                let start = Instant::now();
                conflicts = list.iter().enumerate().map(|(i, a)| submit(&mut map, &mut deps, a, i, in_flight)).sum();
                let ns = start.elapsed().as_nanos() as f64 / submissions as f64;
                if run >= repeats.warmup {
                    samples.push(ns);
                }
            }
            let summary = Summary::of(samples).expect("samples");
            let _ = writeln!(
                text,
                "| {shape} | {} | {submissions} | {variant} | {:.0} | {:.0} | {:.0} | {conflicts} |",
                grid.page_count(),
                summary.median,
                summary.p10,
                summary.p90
            );
            out.push(record(shape, variant, "ns_per_submission", submissions, summary));
        }
    }
    text
}

/// Bytes moved by the page-granular plans (a copy through the host counted
/// twice) against the element-exact minimum (each outdated element in an
/// accessor's range moved once), for several page sizes.
fn bytes_moved(count: usize, out: &mut Vec<Record>) -> String {
    let elements = 1 << 18;
    let mut text = String::from(
        "| page (elements) | pages | copies | backend transfers | bytes moved | minimum bytes | moved / minimum |\n|---|---|---|---|---|---|---|\n",
    );
    for page in [1usize, 16, 256, 4096] {
        let grid = PageGrid::new(4, &[elements], Some(&[page])).expect("grid");
        let list = accesses(&grid, count, 2048, 11);
        let mut map = new_map(grid);
        // Element-exact model: the version each location holds, the newest.
        // Version 1 is the constructor's data, on the host only.
        let mut held = vec![vec![0u32; elements]; DEVICES + 1];
        held[HOST].fill(1);
        let mut newest = vec![1u32; elements];
        let (mut moved, mut minimum, mut copies, mut hops) = (0u64, 0u64, 0u64, 0u64);
        for (i, a) in list.iter().enumerate() {
            let b = grid.page_box(a.offset, a.range).expect("in range");
            let transfers: Vec<Transfer> = plan(&map, a.loc, &b, a.no_init);
            for t in &transfers {
                let n = if t.via_host() { 2 } else { 1 };
                moved += n * grid.rect(&t.pages).bytes() as u64;
                hops += n;
            }
            copies += transfers.len() as u64;
            let span = a.offset[2]..a.offset[2] + a.range[2];
            if !a.no_init {
                minimum += 4 * span.clone().filter(|&e| held[a.loc][e] != newest[e]).count() as u64;
            }
            // Page-granular transfers leave whole pages current.
            for t in &transfers {
                let r = grid.rect(&t.pages);
                for e in r.offset / 4..(r.offset + r.width) / 4 {
                    held[t.dst][e] = newest[e];
                    if t.via_host() {
                        held[HOST][e] = newest[e];
                    }
                }
            }
            apply(&mut map, &transfers, a.loc, &b, a.write);
            if a.write {
                for e in span {
                    newest[e] = i as u32 + 2;
                    held[a.loc][e] = i as u32 + 2;
                }
            }
        }
        let ratio = moved as f64 / minimum.max(1) as f64;
        let _ =
            writeln!(text, "| {page} | {} | {copies} | {hops} | {moved} | {minimum} | {ratio:.2} |", grid.page_count());
        let one = |v: f64| Summary { median: v, p10: v, p90: v, samples: 1 };
        let shape = format!("page {page}");
        out.push(record(&shape, "page granular", "bytes_moved", count, one(moved as f64)));
        out.push(record(&shape, "element exact", "bytes_moved", count, one(minimum as f64)));
    }
    text
}

fn record(shape: &str, variant: &str, metric: &str, n: usize, summary: Summary) -> Record {
    Record {
        device: "host".into(),
        backend: "none".into(),
        device_name: "cmdbuf-runtime page tracking (no device work)".into(),
        benchmark: "buffers".into(),
        shape: shape.into(),
        variant: variant.into(),
        metric: metric.into(),
        n,
        summary,
    }
}

/// The group's tables.
pub fn run(repeats: Repeats, quick: bool, out: &mut Vec<Record>) -> String {
    let submissions = if quick { 1000 } else { 10_000 };
    let mut text = String::from("### `buffers` (host work of cmdbuf-runtime's buffer model)\n\n");
    text += "Dependency analysis and page tracking per command-group submission (prune, conflicts, plan, state update):\n\n";
    text += &tracking_cost(repeats, submissions, out);
    text += "\nBytes moved by 1D page-granular transfers against the element-exact minimum (1 MiB buffer, accessors of up to 2,048 elements):\n\n";
    text += &bytes_moved(if quick { 200 } else { 2000 }, out);
    text.push('\n');
    text
}
