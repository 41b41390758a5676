//! Transfer planning: which outdated pages of an access must move from
//! where, as few rect copies as the page state allows.
//!
//! Pure logic over a [`PageMap`]: nothing here touches a device, so the
//! rules are unit- and property-tested on their own, and a graph can plan
//! the same way.

use std::collections::HashMap;

use super::geometry::{Dims, PageBox};
use super::pages::{HOST, Loc, PageMap};

/// One rect copy of whole pages.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Where the pages are up to date.
    pub src: Loc,
    /// Where they must go.
    pub dst: Loc,
    /// The pages, a box whose bytes are one rect.
    pub pages: PageBox,
}

impl Transfer {
    /// Whether the copy is between two device allocations, which goes
    /// through the host allocation (reading into it and writing from it,
    /// leaving the host up to date too) unless one device has peer access to
    /// the other: execution then makes it one peer copy and marks only the
    /// target current, not applying it with [`apply`].
    pub fn via_host(&self) -> bool {
        self.src != HOST && self.dst != HOST
    }
}

/// The source a page is taken from: the host when it is up to date there (a
/// single hop to any device), else the first device allocation that holds it.
fn source(map: &PageMap, page: usize) -> Loc {
    (0..map.locations()).find(|&l| map.holds(l, page)).expect("a written page is up to date somewhere")
}

/// The transfers an access of `pages` at `target` needs: none for `no_init`
/// accesses or a buffer without initialized data; otherwise every page of
/// the range that is outdated at `target`, grouped by source into maximal
/// runs along rows, runs of equal extent merged across rows and then across
/// slices, so that contiguous pages move as one rect copy.
pub fn plan(map: &PageMap, target: Loc, pages: &PageBox, no_init: bool) -> Vec<Transfer> {
    if no_init || !map.initialized() {
        return Vec::new();
    }
    let grid = *map.grid();
    let mut done: Vec<Transfer> = Vec::new();
    // Boxes that may still grow, keyed by (source, x extent, y extent):
    // by their x extent while a slice is built, then across slices.
    let mut open_slices: HashMap<(Loc, usize, usize, usize, usize), usize> = HashMap::new();
    for z in pages.lo[0]..pages.hi[0] {
        let mut open_rows: HashMap<(Loc, usize, usize), PageBox> = HashMap::new();
        let mut slice: Vec<(Loc, PageBox)> = Vec::new();
        for y in pages.lo[1]..pages.hi[1] {
            let mut x = pages.lo[2];
            let mut grown: HashMap<(Loc, usize, usize), PageBox> = HashMap::new();
            while x < pages.hi[2] {
                let page = grid.linear([z, y, x]);
                if map.is_current(target, page) {
                    x += 1;
                    continue;
                }
                let src = source(map, page);
                let start = x;
                x += 1;
                while x < pages.hi[2] {
                    let p = grid.linear([z, y, x]);
                    if map.is_current(target, p) || source(map, p) != src {
                        break;
                    }
                    x += 1;
                }
                let key = (src, start, x);
                let b = match open_rows.remove(&key) {
                    Some(mut b) => {
                        b.hi[1] = y + 1;
                        b
                    }
                    None => PageBox { lo: [z, y, start], hi: [z + 1, y + 1, x] },
                };
                grown.insert(key, b);
            }
            // Boxes that did not grow in this row are complete for the slice.
            slice.extend(open_rows.drain().map(|((src, _, _), b)| (src, b)));
            open_rows = grown;
        }
        slice.extend(open_rows.drain().map(|((src, _, _), b)| (src, b)));
        let mut next_open = HashMap::new();
        for (src, b) in slice {
            let key = (src, b.lo[1], b.hi[1], b.lo[2], b.hi[2]);
            let at = match open_slices.get(&key) {
                Some(&i) if done[i].pages.hi[0] == z => {
                    done[i].pages.hi[0] = z + 1;
                    i
                }
                _ => {
                    done.push(Transfer { src, dst: target, pages: b });
                    done.len() - 1
                }
            };
            next_open.insert(key, at);
        }
        open_slices = next_open;
    }
    done.sort_by_key(|t| (t.pages.lo, t.src));
    done
}

/// Applies executed transfers and the access itself to the page state:
/// transferred pages become up to date at their target (and at the host for
/// transfers through it); a non-read-only access marks its pages outdated
/// everywhere but `target`.
pub fn apply(map: &mut PageMap, transfers: &[Transfer], target: Loc, pages: &PageBox, writes: bool) {
    for t in transfers {
        if t.via_host() {
            map.mark_current(HOST, &t.pages);
        }
        map.mark_current(t.dst, &t.pages);
    }
    if writes {
        map.mark_written(target, pages);
    }
}

/// Pages and copies of a plan.
pub fn totals(transfers: &[Transfer]) -> (usize, usize) {
    (transfers.iter().map(|t| t.pages.pages()).sum(), transfers.len())
}

/// A page box from page coordinates, for tests and benchmarks.
pub fn page_box(lo: Dims, hi: Dims) -> PageBox {
    PageBox { lo, hi }
}

#[cfg(test)]
mod tests {
    use super::super::geometry::PageGrid;
    use super::*;

    fn grid1(pages: usize) -> PageGrid {
        PageGrid::new(4, &[pages * 8], Some(&[8])).unwrap()
    }

    fn pages1(lo: usize, hi: usize) -> PageBox {
        page_box([0, 0, lo], [1, 1, hi])
    }

    #[test]
    fn write_on_a_read_on_b_moves_the_overlap_as_one_copy() {
        let mut map = PageMap::new(grid1(8));
        let (a, b) = (map.add_location(), map.add_location());
        let w = pages1(0, 4);
        assert!(plan(&map, a, &w, false).is_empty(), "nothing initialized, nothing moves");
        apply(&mut map, &[], a, &w, true);
        let r = pages1(2, 6);
        let t = plan(&map, b, &r, false);
        assert_eq!(t, vec![Transfer { src: a, dst: b, pages: pages1(2, 4) }]);
        assert_eq!(totals(&t), (2, 1));
        apply(&mut map, &t, b, &r, false);
        assert!(plan(&map, b, &r, false).is_empty());
        // The copy went through the host, which holds pages 2-3 now.
        assert_eq!(totals(&plan(&map, HOST, &pages1(0, 8), false)), (2, 1));
    }

    #[test]
    fn no_init_never_moves() {
        let mut map = PageMap::new(grid1(4));
        let a = map.add_location();
        apply(&mut map, &[], HOST, &pages1(0, 4), true);
        assert!(plan(&map, a, &pages1(0, 4), true).is_empty());
        assert_eq!(totals(&plan(&map, a, &pages1(0, 4), false)), (4, 1));
    }

    #[test]
    fn runs_split_by_source_and_by_current_pages() {
        let mut map = PageMap::new(grid1(8));
        let (a, b) = (map.add_location(), map.add_location());
        apply(&mut map, &[], HOST, &pages1(0, 8), true);
        apply(&mut map, &[], a, &pages1(2, 4), true);
        let t = plan(&map, b, &pages1(0, 8), false);
        assert_eq!(
            t,
            vec![
                Transfer { src: HOST, dst: b, pages: pages1(0, 2) },
                Transfer { src: a, dst: b, pages: pages1(2, 4) },
                Transfer { src: HOST, dst: b, pages: pages1(4, 8) },
            ]
        );
        apply(&mut map, &t, b, &pages1(0, 8), false);
        apply(&mut map, &[], a, &pages1(5, 6), true);
        let t = plan(&map, b, &pages1(0, 8), false);
        assert_eq!(t, vec![Transfer { src: a, dst: b, pages: pages1(5, 6) }]);
    }

    #[test]
    fn rows_and_slices_merge_into_one_box() {
        let grid = PageGrid::new(1, &[4, 8, 8], Some(&[1, 2, 2])).unwrap();
        let mut map = PageMap::new(grid);
        let a = map.add_location();
        apply(&mut map, &[], HOST, &grid.all(), true);
        let b = page_box([1, 1, 1], [3, 4, 3]);
        let t = plan(&map, a, &b, false);
        assert_eq!(t, vec![Transfer { src: HOST, dst: a, pages: b }]);
        // A hole in the middle of a slice splits it, the other slice stays whole.
        apply(&mut map, &[], a, &page_box([1, 2, 1], [2, 3, 2]), true);
        let t = plan(&map, a, &b, false);
        assert_eq!(totals(&t), (b.pages() - 1, 4));
    }
}
