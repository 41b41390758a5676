//! The data state of a buffer: for every allocation (location), which pages
//! are up to date, and which pages hold initialized data at all.
//!
//! A page that was never written (nor given data by a constructor) is up to
//! date everywhere: moving it would move nothing meaningful, which is how a
//! buffer without initialized data never causes transfers.

use super::geometry::{PageBox, PageGrid};

/// An allocation of a buffer, by index: [`HOST`] is the host allocation,
/// the others the device allocations in the order they were made.
pub type Loc = usize;

/// The host allocation's location.
pub const HOST: Loc = 0;

/// A fixed-size set of page indices.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize, value: bool) -> Bits {
        let mut bits = Bits(vec![if value { !0 } else { 0 }; n.div_ceil(64)]);
        if value && !n.is_multiple_of(64) {
            // Bits past the end stay clear so that `any` and equality mean the pages.
            *bits.0.last_mut().expect("n > 0") = (1u64 << (n % 64)) - 1;
        }
        bits
    }

    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets `[start, end)` to `value`, a word at a time.
    fn set_range(&mut self, start: usize, end: usize, value: bool) {
        let mut i = start;
        while i < end {
            let (word, bit) = (i / 64, i % 64);
            let n = (64 - bit).min(end - i);
            let mask = if n == 64 { !0 } else { ((1u64 << n) - 1) << bit };
            if value {
                self.0[word] |= mask;
            } else {
                self.0[word] &= !mask;
            }
            i += n;
        }
    }

    fn any(&self) -> bool {
        self.0.iter().any(|w| *w != 0)
    }
}

/// Per-location page state of one buffer.
#[derive(Clone, Debug)]
pub struct PageMap {
    grid: PageGrid,
    /// Pages holding initialized data somewhere.
    written: Bits,
    /// Per location, the pages that are up to date there.
    current: Vec<Bits>,
}

impl PageMap {
    /// The state of a buffer without initialized data, with only the host
    /// location.
    pub fn new(grid: PageGrid) -> PageMap {
        let n = grid.page_count();
        PageMap { grid, written: Bits::new(n, false), current: vec![Bits::new(n, false)] }
    }

    /// The grid the map tracks.
    pub fn grid(&self) -> &PageGrid {
        &self.grid
    }

    /// Adds a location, every page of which is outdated; returns it.
    pub fn add_location(&mut self) -> Loc {
        self.current.push(Bits::new(self.grid.page_count(), false));
        self.current.len() - 1
    }

    /// Number of locations, the host's included.
    pub fn locations(&self) -> usize {
        self.current.len()
    }

    /// Whether any page holds initialized data.
    pub fn initialized(&self) -> bool {
        self.written.any()
    }

    /// Whether page `i` (linear) holds initialized data.
    pub fn is_written(&self, i: usize) -> bool {
        self.written.get(i)
    }

    /// Whether page `i` (linear) is up to date at `loc`: it is when `loc`
    /// holds its newest data or when it holds no initialized data.
    pub fn is_current(&self, loc: Loc, i: usize) -> bool {
        !self.written.get(i) || self.current[loc].get(i)
    }

    /// Whether `loc` holds the newest data of page `i` (false for unwritten pages).
    pub fn holds(&self, loc: Loc, i: usize) -> bool {
        self.written.get(i) && self.current[loc].get(i)
    }

    /// Calls `f(start, end)` for the linear page runs of `b`, one per row of pages.
    pub fn for_each_run(&self, b: &PageBox, mut f: impl FnMut(usize, usize)) {
        for z in b.lo[0]..b.hi[0] {
            for y in b.lo[1]..b.hi[1] {
                let start = self.grid.linear([z, y, b.lo[2]]);
                f(start, start + b.hi[2] - b.lo[2]);
            }
        }
    }

    /// Marks `b` up to date at `loc` (a transfer landed there).
    pub fn mark_current(&mut self, loc: Loc, b: &PageBox) {
        let mut runs = Vec::new();
        self.for_each_run(b, |s, e| runs.push((s, e)));
        for (s, e) in runs {
            self.current[loc].set_range(s, e, true);
        }
    }

    /// Marks `b` written at `loc`: initialized, up to date at `loc` and
    /// outdated everywhere else (a non-read-only access or a constructor's data).
    pub fn mark_written(&mut self, loc: Loc, b: &PageBox) {
        let mut runs = Vec::new();
        self.for_each_run(b, |s, e| runs.push((s, e)));
        for (s, e) in runs {
            self.written.set_range(s, e, true);
            for (l, bits) in self.current.iter_mut().enumerate() {
                bits.set_range(s, e, l == loc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_ranges() {
        let mut b = Bits::new(200, false);
        b.set_range(3, 130, true);
        assert!(!b.get(2) && b.get(3) && b.get(129) && !b.get(130));
        b.set_range(64, 128, false);
        assert!(b.get(63) && !b.get(64) && !b.get(127) && b.get(128));
        assert_eq!(Bits::new(70, true).0, vec![!0, 0x3f]);
    }

    #[test]
    fn writes_outdate_other_locations() {
        let grid = PageGrid::new(1, &[16], Some(&[2])).unwrap();
        let mut map = PageMap::new(grid);
        let dev = map.add_location();
        assert!(!map.initialized());
        assert!(map.is_current(dev, 0), "unwritten pages are current everywhere");
        map.mark_written(HOST, &grid.all());
        assert!(map.initialized() && !map.is_current(dev, 0) && map.holds(HOST, 7));
        let b = grid.page_box([0, 0, 4], [1, 1, 4]).unwrap();
        map.mark_written(dev, &b);
        assert!(!map.is_current(HOST, 2) && !map.is_current(HOST, 3) && map.is_current(HOST, 4));
        map.mark_current(HOST, &b);
        assert!(map.is_current(HOST, 2) && map.is_current(dev, 3) && !map.is_current(dev, 4));
    }
}
