//! Online cycle detection: a topological order of a modifiable graph kept
//! up to date as edges are added, so that every `make_edge` is checked for a
//! cycle without a search of the whole graph.
//!
//! Every node has a label; labels increase along every edge. An edge `u -> v`
//! with `label(u) < label(v)` (always the case for a new node and its
//! dependencies) is accepted in O(1). Otherwise the order must change, and a
//! cycle exists exactly when `v` reaches `u`. Two searches run in lockstep,
//! forward from `v` over labels below `label(u)` and backward from `u` over
//! labels above `label(v)` (every node of a path `v ->* u` lies between them);
//! a search that meets the other end or the other search has found a cycle,
//! and the first search
//! to run out of nodes without meeting it proves there is none. That search's
//! nodes are then moved just past `u` (forward set) or just before `v`
//! (backward set), keeping their relative order: every other edge keeps its
//! direction. The cost of an edge is twice the smaller of the two searched
//! regions plus logarithmic label bookkeeping, so chains built back to front,
//! the worst case of one-sided searches (Pearce-Kelly), stay O(n log n).

use std::collections::BTreeMap;

/// The distance between consecutive labels after a relabel: room for about
/// twenty insertions between two neighbours before the next relabel.
const GAP: u64 = 1 << 20;

/// Adjacency of the graph whose order is maintained.
pub(crate) trait Adjacency {
    /// The direct successors of `node`.
    fn succs(&self, node: u32) -> &[u32];
    /// The direct predecessors of `node`.
    fn preds(&self, node: u32) -> &[u32];
}

impl Adjacency for (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    fn succs(&self, node: u32) -> &[u32] {
        &self.0[node as usize]
    }

    fn preds(&self, node: u32) -> &[u32] {
        &self.1[node as usize]
    }
}

/// The edge would close a cycle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cycle;

/// A topological order of a growing DAG.
#[derive(Default)]
pub(crate) struct TopoOrder {
    label: Vec<u64>,
    by_label: BTreeMap<u64, u32>,
    /// Visit marks of the two searches, compared with `epoch`.
    forward_mark: Vec<u32>,
    backward_mark: Vec<u32>,
    epoch: u32,
}

impl TopoOrder {
    /// Adds a node after every existing one and returns its number.
    pub(crate) fn push(&mut self) -> u32 {
        let node = self.label.len() as u32;
        let label = self.by_label.last_key_value().map_or(GAP, |(l, _)| l + GAP);
        self.label.push(label);
        self.by_label.insert(label, node);
        self.forward_mark.push(0);
        self.backward_mark.push(0);
        node
    }

    /// Whether `a` comes before `b` in the current order.
    pub(crate) fn precedes(&self, a: u32, b: u32) -> bool {
        self.label[a as usize] < self.label[b as usize]
    }

    /// Checks that the edge `u -> v` (not yet in `adj`) closes no cycle and
    /// reorders so that `u` precedes `v`. On `Err` nothing changes.
    pub(crate) fn add_edge(&mut self, adj: &(impl Adjacency + ?Sized), u: u32, v: u32) -> Result<(), Cycle> {
        if u == v {
            return Err(Cycle);
        }
        let (lu, lv) = (self.label[u as usize], self.label[v as usize]);
        if lu < lv {
            return Ok(());
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.forward_mark.fill(0);
            self.backward_mark.fill(0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        let (mut f_stack, mut f_seen) = (vec![v], vec![v]);
        let (mut b_stack, mut b_seen) = (vec![u], vec![u]);
        self.forward_mark[v as usize] = epoch;
        self.backward_mark[u as usize] = epoch;
        loop {
            let Some(x) = f_stack.pop() else {
                self.move_after(u, f_seen);
                return Ok(());
            };
            for &y in adj.succs(x) {
                // Reached `u`, or a node the backward search reached from it.
                if y == u || self.backward_mark[y as usize] == epoch {
                    return Err(Cycle);
                }
                if self.label[y as usize] < lu && self.forward_mark[y as usize] != epoch {
                    self.forward_mark[y as usize] = epoch;
                    f_stack.push(y);
                    f_seen.push(y);
                }
            }
            let Some(x) = b_stack.pop() else {
                self.move_before(v, b_seen);
                return Ok(());
            };
            for &y in adj.preds(x) {
                if y == v || self.forward_mark[y as usize] == epoch {
                    return Err(Cycle);
                }
                if self.label[y as usize] > lv && self.backward_mark[y as usize] != epoch {
                    self.backward_mark[y as usize] = epoch;
                    b_stack.push(y);
                    b_seen.push(y);
                }
            }
        }
    }

    /// Moves `nodes` (all before `anchor`) to just after it, in their order.
    fn move_after(&mut self, anchor: u32, mut nodes: Vec<u32>) {
        nodes.sort_unstable_by_key(|n| self.label[*n as usize]);
        for n in &nodes {
            self.by_label.remove(&self.label[*n as usize]);
        }
        let k = nodes.len() as u64;
        loop {
            let low = self.label[anchor as usize];
            let high = self.by_label.range(low + 1..).next().map_or(low + GAP * (k + 1), |(l, _)| *l);
            if high - low > k {
                self.assign(&nodes, low, high);
                return;
            }
            self.relabel();
        }
    }

    /// Moves `nodes` (all after `anchor`) to just before it, in their order.
    fn move_before(&mut self, anchor: u32, mut nodes: Vec<u32>) {
        nodes.sort_unstable_by_key(|n| self.label[*n as usize]);
        for n in &nodes {
            self.by_label.remove(&self.label[*n as usize]);
        }
        let k = nodes.len() as u64;
        loop {
            let high = self.label[anchor as usize];
            let low = self.by_label.range(..high).next_back().map_or(0, |(l, _)| *l);
            if high - low > k {
                self.assign(&nodes, low, high);
                return;
            }
            self.relabel();
        }
    }

    /// Gives `nodes` evenly spaced labels strictly between `low` and `high`.
    fn assign(&mut self, nodes: &[u32], low: u64, high: u64) {
        let k = nodes.len() as u64;
        let step = (high - low) / (k + 1);
        for (j, n) in nodes.iter().enumerate() {
            let label = low + step * (j as u64 + 1);
            self.label[*n as usize] = label;
            self.by_label.insert(label, *n);
        }
    }

    /// Spreads the labels of the nodes in the map `GAP` apart, keeping their
    /// order. Nodes being moved (absent from the map) keep stale labels until
    /// they are assigned.
    fn relabel(&mut self) {
        let order: Vec<u32> = self.by_label.values().copied().collect();
        self.by_label.clear();
        for (i, n) in order.into_iter().enumerate() {
            let label = GAP * (i as u64 + 1);
            self.label[n as usize] = label;
            self.by_label.insert(label, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph with its order, adding edges only when the order accepts them.
    struct Dag {
        adj: (Vec<Vec<u32>>, Vec<Vec<u32>>),
        order: TopoOrder,
    }

    impl Dag {
        fn new(n: usize) -> Dag {
            let mut order = TopoOrder::default();
            for _ in 0..n {
                order.push();
            }
            Dag { adj: (vec![Vec::new(); n], vec![Vec::new(); n]), order }
        }

        fn edge(&mut self, u: u32, v: u32) -> Result<(), Cycle> {
            self.order.add_edge(&self.adj, u, v)?;
            self.adj.0[u as usize].push(v);
            self.adj.1[v as usize].push(u);
            Ok(())
        }

        fn check_order(&self) {
            for (u, succs) in self.adj.0.iter().enumerate() {
                for v in succs {
                    assert!(self.order.precedes(u as u32, *v), "{u} -> {v} against the order");
                }
            }
        }

        /// Whether `to` is reachable from `from`, by plain search.
        fn reaches(&self, from: u32, to: u32) -> bool {
            let mut seen = vec![false; self.adj.0.len()];
            let mut stack = vec![from];
            while let Some(x) = stack.pop() {
                if x == to {
                    return true;
                }
                for &y in &self.adj.0[x as usize] {
                    if !std::mem::replace(&mut seen[y as usize], true) {
                        stack.push(y);
                    }
                }
            }
            false
        }
    }

    #[test]
    fn self_edge_and_two_cycle() {
        let mut g = Dag::new(3);
        assert_eq!(g.edge(1, 1), Err(Cycle));
        g.edge(0, 1).unwrap();
        assert_eq!(g.edge(1, 0), Err(Cycle));
        g.edge(2, 0).unwrap();
        assert_eq!(g.edge(1, 2), Err(Cycle));
        g.check_order();
    }

    #[test]
    fn chain_built_back_to_front_stays_ordered() {
        let n = 100_000;
        let mut g = Dag::new(n);
        for i in (0..n as u32 - 1).rev() {
            g.edge(i + 1, i).unwrap();
        }
        g.check_order();
        // The two searches meet in the middle of the chain.
        assert_eq!(g.edge(0, n as u32 - 1), Err(Cycle));
        assert_eq!(g.edge(0, 50_000), Err(Cycle));
        g.edge(n as u32 - 1, 0).unwrap();
    }

    #[test]
    fn chain_built_in_the_middle_forces_relabels() {
        // Alternate edges that insert nodes between the same two neighbours.
        let n = 2_000;
        let mut g = Dag::new(n);
        for i in 2..n as u32 {
            g.edge(0, i).unwrap();
            g.edge(i, 1).unwrap();
        }
        g.check_order();
        assert_eq!(g.edge(1, 0), Err(Cycle));
    }

    proptest::proptest! {
        /// Random edges: accepted exactly when no path leads back, and the
        /// order stays topological.
        #[test]
        fn matches_brute_force(edges in proptest::collection::vec((0u32..24, 0u32..24), 0..120)) {
            let mut g = Dag::new(24);
            for (u, v) in edges {
                let cycle = u == v || g.reaches(v, u);
                let result = g.edge(u, v);
                proptest::prop_assert_eq!(result.is_err(), cycle, "edge {} -> {}", u, v);
                g.check_order();
            }
        }
    }
}
