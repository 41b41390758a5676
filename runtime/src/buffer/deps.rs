//! Dependency tracking of one buffer: the uses (accesses and transfers)
//! still relevant, and which of them a new use conflicts with.
//!
//! The tracker is generic over the token a use carries: eager submission
//! stores events, a graph can store node ids and ask the same question
//! ("which earlier uses does this access conflict with?") to make edges.

use super::geometry::PageBox;
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

/// The uses of one buffer that later uses may have to wait for.
#[derive(Clone, Debug)]
pub struct DepTracker<T> {
    uses: Vec<Use<T>>,
}

impl<T> Default for DepTracker<T> {
    fn default() -> Self {
        DepTracker { uses: Vec::new() }
    }
}

impl<T: Clone> DepTracker<T> {
    /// The earlier uses a use of `kind` on `pages` conflicts with, oldest first.
    pub fn conflicts(&self, pages: &PageBox, kind: UseKind) -> impl Iterator<Item = &Use<T>> {
        let pages = *pages;
        self.uses.iter().filter(move |u| kind.conflicts_with(u.kind) && u.pages.overlaps(&pages))
    }

    /// Records a use. A writing use depends on every overlapping earlier
    /// use, so those it covers completely are forgotten: anything that
    /// would conflict with them conflicts with the writer and waits for it.
    pub fn record(&mut self, pages: PageBox, kind: UseKind, token: T) {
        if kind == UseKind::Write {
            self.uses.retain(|u| !pages.contains(&u.pages));
        }
        self.uses.push(Use { pages, kind, token });
    }

    /// Forgets the uses for which `done` holds (completed work).
    pub fn prune(&mut self, mut done: impl FnMut(&T) -> bool) {
        self.uses.retain(|u| !done(&u.token));
    }

    /// Every recorded use, oldest first.
    pub fn uses(&self) -> &[Use<T>] {
        &self.uses
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
        let mut t = DepTracker::default();
        t.record(b(0, 4), UseKind::Read { loc: 1 }, "r1");
        t.record(b(2, 6), UseKind::Read { loc: 2 }, "r2");
        assert_eq!(t.conflicts(&b(0, 8), UseKind::Read { loc: 3 }).count(), 0, "reads never conflict");
        let w: Vec<_> = t.conflicts(&b(3, 4), UseKind::Write).map(|u| u.token).collect();
        assert_eq!(w, ["r1", "r2"]);
        let w: Vec<_> = t.conflicts(&b(5, 8), UseKind::Write).map(|u| u.token).collect();
        assert_eq!(w, ["r2"]);
        t.record(b(0, 8), UseKind::Write, "w");
        assert_eq!(t.uses().len(), 1, "the covering write replaces what it depends on");
        assert_eq!(t.conflicts(&b(7, 8), UseKind::Read { loc: 1 }).map(|u| u.token).collect::<Vec<_>>(), ["w"]);
        assert_eq!(t.conflicts(&b(8, 9), UseKind::Read { loc: 1 }).count(), 0, "disjoint pages never conflict");
    }

    #[test]
    fn fills_order_readers_of_their_target() {
        let mut t = DepTracker::default();
        t.record(b(0, 4), UseKind::Fill { to: 1 }, "f");
        assert_eq!(t.conflicts(&b(0, 1), UseKind::Read { loc: 1 }).count(), 1);
        assert_eq!(t.conflicts(&b(0, 1), UseKind::Read { loc: 2 }).count(), 0);
        t.prune(|tok| *tok == "f");
        assert!(t.uses().is_empty());
    }
}
