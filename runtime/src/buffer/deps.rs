//! Dependency tracking of one buffer: the uses (accesses and transfers)
//! still relevant, and which of them a new use conflicts with.
//!
//! The tracker is generic over the token a use carries: eager submission
//! stores events, a graph can store node ids and ask the same question
//! ("which earlier uses does this access conflict with?") to make edges.

use std::collections::{BTreeMap, HashMap};

use super::geometry::{Dims, PageBox};
use super::pages::Loc;

/// What a use does to its pages.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UseKind {
    /// A read-only access at `loc`, or a transfer reading from `loc`.
    Read {
        /// Where the data is read.
        loc: Loc,
    },
    /// An access that may write (write, read_write, no_init).
    Write,
    /// A transfer into `to`: later uses reading there must wait for it.
    Fill {
        /// Where the data lands.
        to: Loc,
    },
}

impl UseKind {
    /// Whether a use of kind `self` must wait for an earlier use of kind
    /// `earlier` on overlapping pages. Accessors conflict when one of them
    /// is not read-only; transfers add the hazard of reading a location
    /// before the data landed there.
    pub fn conflicts_with(self, earlier: UseKind) -> bool {
        match (self, earlier) {
            (UseKind::Write, _) | (_, UseKind::Write) => true,
            (UseKind::Read { loc }, UseKind::Fill { to }) => loc == to,
            (UseKind::Fill { to }, UseKind::Fill { to: other }) => to == other,
            (UseKind::Read { .. }, UseKind::Read { .. }) => false,
            (UseKind::Fill { to }, UseKind::Read { loc }) => loc == to,
        }
    }
}

/// One use of a buffer.
#[derive(Clone, Debug)]
pub struct Use<T> {
    /// The pages it touches.
    pub pages: PageBox,
    /// What it does.
    pub kind: UseKind,
    /// What a dependent waits for.
    pub token: T,
}

/// Pages per bucket of the index, about.
const BUCKET: usize = 1024;

/// The uses of one buffer that later uses may have to wait for, indexed by
/// the blocks of pages they touch (blocks of about [`BUCKET`] pages, as
/// square as the grid allows), so that a query looks only at uses near
/// its pages (a buffer of a million pages with thousands of small accesses
/// in flight costs microseconds per query, not a scan of them all).
#[derive(Clone, Debug)]
pub struct DepTracker<T> {
    /// Pages per block in each dimension.
    block: Dims,
    /// Blocks per dimension.
    blocks: Dims,
    /// Live uses by age.
    uses: BTreeMap<u64, Use<T>>,
    /// Block → uses that touch it (forgotten uses are
    /// dropped from a bucket when it grows).
    buckets: HashMap<usize, Vec<u64>>,
    next: u64,
}

impl<T: Clone> DepTracker<T> {
    /// An empty tracker for a grid of `pages` pages per dimension.
    pub fn new(pages: Dims) -> DepTracker<T> {
        let spread = pages.iter().filter(|&&n| n > 1).count().max(1) as f64;
        let edge = (BUCKET as f64).powf(1.0 / spread).round() as usize;
        let block = pages.map(|n| n.clamp(1, edge));
        let blocks = [0, 1, 2].map(|d| pages[d].div_ceil(block[d]).max(1));
        DepTracker { block, blocks, uses: BTreeMap::new(), buckets: HashMap::new(), next: 0 }
    }

    fn buckets_of(&self, b: &PageBox) -> impl Iterator<Item = usize> + use<T> {
        let (block, blocks) = (self.block, self.blocks);
        let lo = [0, 1, 2].map(|d| b.lo[d] / block[d]);
        let hi = [0, 1, 2].map(|d| (b.hi[d] - 1) / block[d]);
        (lo[0]..=hi[0]).flat_map(move |z| {
            (lo[1]..=hi[1]).flat_map(move |y| (lo[2]..=hi[2]).map(move |x| (z * blocks[1] + y) * blocks[2] + x))
        })
    }

    /// Live uses whose pages overlap `pages`, oldest first.
    fn near(&self, pages: &PageBox) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .buckets_of(pages)
            .filter_map(|k| self.buckets.get(&k))
            .flatten()
            .copied()
            .filter(|id| self.uses.get(id).is_some_and(|u| u.pages.overlaps(pages)))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The earlier uses a use of `kind` on `pages` conflicts with, oldest first.
    pub fn conflicts(&self, pages: &PageBox, kind: UseKind) -> std::vec::IntoIter<&Use<T>> {
        let found: Vec<&Use<T>> =
            self.near(pages).into_iter().map(|id| &self.uses[&id]).filter(|u| kind.conflicts_with(u.kind)).collect();
        found.into_iter()
    }

    /// Records a use. A writing use depends on every overlapping earlier
    /// use, so those it covers completely are forgotten: anything that
    /// would conflict with them conflicts with the writer and waits for it.
    pub fn record(&mut self, pages: PageBox, kind: UseKind, token: T) {
        if kind == UseKind::Write {
            for id in self.near(&pages) {
                if pages.contains(&self.uses[&id].pages) {
                    self.uses.remove(&id);
                }
            }
        }
        let id = self.next;
        self.next += 1;
        for k in self.buckets_of(&pages) {
            let bucket = self.buckets.entry(k).or_default();
            if bucket.len() >= 16 && bucket.len().is_power_of_two() {
                bucket.retain(|id| self.uses.contains_key(id));
            }
            bucket.push(id);
        }
        self.uses.insert(id, Use { pages, kind, token });
    }

    /// Forgets the oldest uses for which `done` holds (completed work),
    /// stopping at the first that is not: work mostly completes in
    /// submission order, and a finished use left behind costs only a
    /// completed event in a later wait list.
    pub fn prune(&mut self, mut done: impl FnMut(&T) -> bool) {
        while let Some(entry) = self.uses.first_entry() {
            if !done(&entry.get().token) {
                break;
            }
            entry.remove();
        }
        if self.uses.is_empty() {
            self.buckets.clear();
        }
    }

    /// Every recorded use, oldest first.
    pub fn uses(&self) -> impl Iterator<Item = &Use<T>> {
        self.uses.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::plan::page_box;

    fn b(lo: usize, hi: usize) -> PageBox {
        page_box([0, 0, lo], [1, 1, hi])
    }

    #[test]
    fn accessor_conflict_rule() {
        let mut t = DepTracker::new([1, 1, 4096]);
        t.record(b(0, 4), UseKind::Read { loc: 1 }, "r1");
        t.record(b(2, 6), UseKind::Read { loc: 2 }, "r2");
        assert_eq!(t.conflicts(&b(0, 8), UseKind::Read { loc: 3 }).count(), 0, "reads never conflict");
        let w: Vec<_> = t.conflicts(&b(3, 4), UseKind::Write).map(|u| u.token).collect();
        assert_eq!(w, ["r1", "r2"]);
        let w: Vec<_> = t.conflicts(&b(5, 8), UseKind::Write).map(|u| u.token).collect();
        assert_eq!(w, ["r2"]);
        t.record(b(0, 8), UseKind::Write, "w");
        assert_eq!(t.uses().count(), 1, "the covering write replaces what it depends on");
        assert_eq!(t.conflicts(&b(7, 8), UseKind::Read { loc: 1 }).map(|u| u.token).collect::<Vec<_>>(), ["w"]);
        assert_eq!(t.conflicts(&b(8, 9), UseKind::Read { loc: 1 }).count(), 0, "disjoint pages never conflict");
    }

    #[test]
    fn fills_order_readers_of_their_target() {
        let mut t = DepTracker::new([1, 1, 4096]);
        t.record(b(0, 4), UseKind::Fill { to: 1 }, "f");
        assert_eq!(t.conflicts(&b(0, 1), UseKind::Read { loc: 1 }).count(), 1);
        assert_eq!(t.conflicts(&b(0, 1), UseKind::Read { loc: 2 }).count(), 0);
        t.prune(|tok| *tok == "f");
        assert_eq!(t.uses().count(), 0);
    }
}
