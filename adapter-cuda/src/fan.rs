//! Bounded in- and out-degrees in command-buffer graphs.
//!
//! The CUDA driver's graph build is quadratic in the degree of a node: a
//! fork of N commands after one command, or a join of N commands, took
//! seconds at N = 10,000 (docs/performance.md, goal 6), while chains are
//! linear. So no node of a buffer's graph gets more than about
//! [`MAX_DEGREE`] edges from the commands' dependencies:
//! - a command's successors attach to its exit node until it has
//!   `MAX_DEGREE - 1` of them, then to a *relay* (an empty node after the
//!   previous hub) that takes the next ones, and so on ([`FanOut`]);
//! - a node with more than `MAX_DEGREE` predecessors gets them through a
//!   tree of empty *join* nodes of at most `MAX_DEGREE` predecessors each
//!   ([`fan_in`]).
//!
//! Relays form a chain, so the last successors of a wide fork start after
//! N / 63 empty nodes; empty nodes cost the device no kernel, and the chain
//! runs ahead of the successors' work. Orders are unchanged: a successor
//! still runs after the command, through the relays.

use smallvec::SmallVec;

/// The most edges from dependencies a node gets (give or take the few of a
/// command with several first nodes, which each follow its predecessors).
pub(crate) const MAX_DEGREE: usize = 64;

/// Where the successors of one command attach.
#[derive(Debug)]
pub(crate) struct FanOut<N> {
    /// The exit node or the newest relay.
    hub: N,
    /// Successors attached to `hub`.
    used: usize,
}

impl<N: Copy> FanOut<N> {
    /// A command whose successors follow `exit`.
    pub(crate) fn new(exit: N) -> FanOut<N> {
        FanOut { hub: exit, used: 0 }
    }

    /// The node a new successor depends on; `relay(hub)` makes an empty
    /// node after `hub` when the hub has no room left but for it.
    pub(crate) fn source<E>(&mut self, relay: impl FnOnce(N) -> Result<N, E>) -> Result<N, E> {
        if self.used + 1 >= MAX_DEGREE {
            self.hub = relay(self.hub)?;
            self.used = 0;
        }
        self.used += 1;
        Ok(self.hub)
    }
}

/// `deps` reduced to at most [`MAX_DEGREE`] nodes that follow all of them:
/// groups of `MAX_DEGREE` become one empty node made by `join`, level by
/// level.
pub(crate) fn fan_in<N: Copy, E>(
    mut deps: SmallVec<[N; 8]>,
    mut join: impl FnMut(&[N]) -> Result<N, E>,
) -> Result<SmallVec<[N; 8]>, E> {
    while deps.len() > MAX_DEGREE {
        deps =
            deps.chunks(MAX_DEGREE).map(|c| if c.len() == 1 { Ok(c[0]) } else { join(c) }).collect::<Result<_, E>>()?;
    }
    Ok(deps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of numbered nodes with predecessor lists.
    #[derive(Default)]
    struct Graph {
        preds: Vec<Vec<usize>>,
    }

    impl Graph {
        fn add(&mut self, deps: &[usize]) -> usize {
            self.preds.push(deps.to_vec());
            self.preds.len() - 1
        }

        fn reaches(&self, from: usize, to: usize) -> bool {
            to == from || self.preds[to].iter().any(|&p| self.reaches(from, p))
        }

        fn out_degree(&self, n: usize) -> usize {
            self.preds.iter().filter(|p| p.contains(&n)).count()
        }
    }

    #[test]
    fn a_wide_fork_keeps_every_order_with_bounded_out_degrees() {
        let mut g = Graph::default();
        let root = g.add(&[]);
        let mut fan = FanOut::new(root);
        let mut succ = Vec::new();
        for _ in 0..1000 {
            let src = fan.source(|hub| Ok::<_, ()>(g.add(&[hub]))).unwrap();
            succ.push(g.add(&[src]));
        }
        assert!(succ.iter().all(|&s| g.reaches(root, s)));
        assert!((0..g.preds.len()).all(|n| g.out_degree(n) <= MAX_DEGREE));
        // 1000 successors over hubs of 63 each: 15 relays.
        assert_eq!(g.preds.len(), 1 + 1000 + 1000 / (MAX_DEGREE - 1));
    }

    #[test]
    fn a_wide_join_follows_every_predecessor_with_bounded_in_degrees() {
        let mut g = Graph::default();
        let leaves: SmallVec<[usize; 8]> = (0..5000).map(|_| g.add(&[])).collect();
        let deps = fan_in(leaves.clone(), |c| Ok::<_, ()>(g.add(c))).unwrap();
        assert!(deps.len() <= MAX_DEGREE);
        let join = g.add(&deps);
        assert!(leaves.iter().all(|&l| g.reaches(l, join)));
        assert!(g.preds.iter().all(|p| p.len() <= MAX_DEGREE));
    }

    #[test]
    fn small_degrees_are_left_alone() {
        let deps: SmallVec<[u32; 8]> = (0..MAX_DEGREE as u32).collect();
        let same = fan_in(deps.clone(), |_| Err("no join needed")).unwrap();
        assert_eq!(same, deps);
        let mut fan = FanOut::new(7u32);
        for _ in 0..MAX_DEGREE - 1 {
            assert_eq!(fan.source(|_| Err("no relay needed")), Ok(7));
        }
        assert_eq!(fan.source(|hub| Ok::<_, &str>(hub + 1)), Ok(8));
    }
}
