//! Random accessor sequences (devices, modes, ranges) against a host model
//! of the data each allocation holds and of the minimal transfers.
#![allow(clippy::needless_range_loop)] // the model indexes several tables by page

use cmdbuf_runtime::buffer::deps::{DepTracker, UseKind};
use cmdbuf_runtime::buffer::geometry::{Dims, PageBox, PageGrid};
use cmdbuf_runtime::buffer::pages::{HOST, PageMap};
use cmdbuf_runtime::buffer::plan::{apply, plan};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Access {
    loc: usize,
    write: bool,
    no_init: bool,
    offset: Dims,
    range: Dims,
}

const LOCS: usize = 4;

fn access(range: Dims) -> impl Strategy<Value = Access> {
    let dim = move |d: usize| (0..range[d]).prop_flat_map(move |o| (Just(o), 1..=range[d] - o));
    (0..LOCS, any::<bool>(), any::<bool>(), dim(0), dim(1), dim(2)).prop_map(|(loc, write, no_init, z, y, x)| Access {
        loc,
        write: write || no_init,
        no_init,
        offset: [z.0, y.0, x.0],
        range: [z.1, y.1, x.1],
    })
}

fn scenario() -> impl Strategy<Value = (Dims, Dims, Vec<Access>)> {
    (1..4usize, 1..6usize, 1..12usize, 1..3usize, 1..3usize, 1..4usize).prop_flat_map(|(z, y, x, pz, py, px)| {
        let range = [z, y, x];
        (Just(range), Just([pz, py, px]), proptest::collection::vec(access(range), 1..24))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn plans_move_exactly_the_outdated_pages((range, page, accesses) in scenario()) {
        let grid = PageGrid::new(1, &range, Some(&page)).unwrap();
        let mut map = PageMap::new(grid);
        for _ in 1..LOCS {
            map.add_location();
        }
        let n = grid.page_count();
        // The model: the version of every page at every location, the newest
        // version, and whether the page was ever written.
        let mut version = vec![vec![0u32; n]; LOCS];
        let mut newest = vec![0u32; n];
        let mut next = 1u32;
        for a in &accesses {
            let b = grid.page_box(a.offset, a.range).unwrap();
            let mut in_box = Vec::new();
            map.for_each_run(&b, |s, e| in_box.extend(s..e));
            let expected: Vec<usize> = if a.no_init || newest.iter().all(|v| *v == 0) {
                Vec::new()
            } else {
                in_box.iter().copied().filter(|&p| newest[p] != 0 && version[a.loc][p] != newest[p]).collect()
            };
            let transfers = plan(&map, a.loc, &b, a.no_init);
            let mut moved = Vec::new();
            let mut runs = 0;
            for t in &transfers {
                prop_assert_eq!(t.dst, a.loc);
                prop_assert!(b.contains(&t.pages));
                map.for_each_run(&t.pages, |s, e| {
                    moved.extend(s..e);
                    runs += 1;
                });
            }
            moved.sort_unstable();
            let before = moved.len();
            moved.dedup();
            prop_assert_eq!(before, moved.len(), "a page moved twice");
            prop_assert_eq!(&moved, &expected, "pages moved");
            // Copies are never more than the rows of pages they move, and a
            // row of pages from one source is never split.
            prop_assert!(transfers.len() <= runs);
            for t in &transfers {
                let mut src_holds = true;
                map.for_each_run(&t.pages, |s, e| src_holds &= (s..e).all(|p| version[t.src][p] == newest[p]));
                prop_assert!(src_holds, "transfer {:?} from a location without the newest data", t);
                map.for_each_run(&t.pages, |s, e| {
                    for p in s..e {
                        version[t.dst][p] = version[t.src][p];
                        if t.via_host() {
                            version[HOST][p] = version[t.src][p];
                        }
                    }
                });
            }
            if !a.no_init {
                for &p in &in_box {
                    prop_assert_eq!(version[a.loc][p], newest[p], "page {} not current after the access", p);
                }
            }
            apply(&mut map, &transfers, a.loc, &b, a.write);
            if a.write {
                for &p in &in_box {
                    newest[p] = next;
                    version[a.loc][p] = next;
                }
                next += 1;
            }
            for (loc, versions) in version.iter().enumerate() {
                for p in 0..n {
                    let current = newest[p] == 0 || versions[p] == newest[p];
                    prop_assert_eq!(map.is_current(loc, p), current, "state of page {} at {}", p, loc);
                }
            }
        }
    }

    /// On a 1D buffer the copies are exactly the maximal runs of outdated
    /// pages that share a source.
    #[test]
    fn one_dimensional_copies_are_maximal_runs(
        accesses in proptest::collection::vec((0..LOCS, 0..32usize, 1..33usize, any::<bool>()), 1..32)
    ) {
        let grid = PageGrid::new(4, &[32 * 3], Some(&[3])).unwrap();
        let mut map = PageMap::new(grid);
        for _ in 1..LOCS {
            map.add_location();
        }
        for (loc, start, len, write) in accesses {
            let len = len.min(32 - start);
            let b = grid.page_box([0, 0, start * 3], [1, 1, len * 3]).unwrap();
            let transfers = plan(&map, loc, &b, false);
            let source = |p: usize| (0..LOCS).find(|&l| map.holds(l, p));
            let mut runs = 0;
            let mut last: Option<(usize, usize)> = None;
            for p in start..start + len {
                if map.is_current(loc, p) {
                    last = None;
                    continue;
                }
                let s = source(p).unwrap();
                if last.is_none_or(|(lp, ls)| lp + 1 != p || ls != s) {
                    runs += 1;
                }
                last = Some((p, s));
            }
            prop_assert_eq!(transfers.len(), runs);
            apply(&mut map, &transfers, loc, &b, write);
        }
    }

    /// The tracker's bucket index answers what a scan of every live use would.
    #[test]
    fn tracker_index_matches_a_scan((range, page, accesses) in scenario(), wide in 1..3000usize) {
        // A wide fastest dimension spreads boxes over several buckets.
        let range = [range[0], range[1], range[2] * wide];
        let grid = PageGrid::new(1, &range, Some(&page)).unwrap();
        let mut tracker = DepTracker::new(grid.pages());
        let mut scan: Vec<(PageBox, UseKind, usize)> = Vec::new();
        for (id, a) in accesses.iter().enumerate() {
            let offset = [a.offset[0], a.offset[1], a.offset[2] * wide];
            let extent = [a.range[0], a.range[1], a.range[2] * wide];
            let b = grid.page_box(offset, extent).unwrap();
            let kind = if a.write { UseKind::Write } else if a.no_init { UseKind::Fill { to: a.loc } } else { UseKind::Read { loc: a.loc } };
            let got: Vec<usize> = tracker.conflicts(&b, kind).map(|u| u.token).collect();
            let want: Vec<usize> =
                scan.iter().filter(|(p, k, _)| kind.conflicts_with(*k) && p.overlaps(&b)).map(|u| u.2).collect();
            prop_assert_eq!(got, want);
            if kind == UseKind::Write {
                scan.retain(|(p, _, _)| !b.contains(p));
            }
            tracker.record(b, kind, id);
            scan.push((b, kind, id));
            if id % 5 == 4 {
                let oldest = scan.first().map(|u| u.2);
                tracker.prune(|t| Some(*t) == oldest);
                scan.retain(|u| Some(u.2) != oldest);
            }
        }
    }
}
