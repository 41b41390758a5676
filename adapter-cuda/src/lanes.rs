//! Lanes: the dependencies a command buffer's graph is given once it is
//! wider than the GPU runs at once.
//!
//! The driver's `cuGraphInstantiate` grows with the square of a graph's
//! width (a raw 100,000-node fan-out: 31 s against 0.33 s for a chain of as
//! many; docs/performance.md, goal 6). An H100 runs at most 128 kernels at
//! once, so more than 128 branches side by side gain nothing on the device.
//! A [`Lanes`] planner gives each new node of a graph its dependencies:
//!
//! - **as declared** while the graph has at most [`LANES`] leaves (nodes no
//!   later node depends on yet): a graph whose width never exceeds
//!   [`LANES`] is built exactly as declared;
//! - once [`LANES`] leaves would stay leaves beside the new node (the new
//!   node would make the graph wider than [`LANES`]), the node also depends
//!   on the oldest of them (a *lane edge*), so that the leaves stay at most
//!   [`LANES`]. A lane edge only adds order: results stay exact;
//! - once a graph has had a lane edge, the edges each new node gets skip
//!   those already implied: a dependency `p` is dropped when another
//!   dependency `q` of the node is known to come after `p` (`p` was a
//!   declared or lane dependency of `q`). That keeps the same order (`p`
//!   before `q` before the node) and leaves a join over the branches of a
//!   wide fork with about [`LANES`] incoming edges: a wide fork-join becomes
//!   [`LANES`] chains, which the driver instantiates in a chain's time.
//!
//! The planner knows nodes by their index (the command's sync point) and
//! makes no driver call: [`Lanes::plan`] says what the next node depends
//! on, [`Lanes::commit`] records it once the node was made, so a node that
//! could not be made leaves the planner as it was.

use std::collections::VecDeque;

/// The most branches side by side before lane edges order them: what an
/// H100 (compute capability 9.0) runs at once, 128 resident grids per
/// device (the CUDA programming guide's limit of concurrent kernels).
pub const LANES: usize = 128;

/// Each node's order and the graph's leaves, for [`Lanes::plan`].
#[derive(Debug)]
pub struct Lanes {
    lanes: usize,
    has_successor: Vec<bool>,
    /// Every node in the order made; those that gained a successor since
    /// are dropped from the front lazily.
    leaves: VecDeque<u32>,
    /// Nodes without a successor.
    live: usize,
    /// Nodes known to come before each node (its declared and lane
    /// dependencies): node `i`'s are `before[before_start[i]..before_start[i + 1]]`.
    before: Vec<u32>,
    before_start: Vec<usize>,
    /// Scratch marks of [`Lanes::plan`], by node: `stamp` for a dependency
    /// of the node planned, `stamp + 1` for one found implied, `stamp + 2`
    /// once given as an edge.
    mark: Vec<u32>,
    stamp: u32,
    /// Whether a lane edge was ever added; from then on implied edges are
    /// dropped.
    wide: bool,
    /// Whether lane edges may no longer be added ([`Lanes::stop_lanes`]).
    stopped: bool,
    lane_edges: usize,
    dropped_edges: usize,
}

/// The dependencies of the next node, from [`Lanes::plan`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The oldest leaf the node must also follow, if the graph would
    /// otherwise be wider than the lanes.
    pub lane: Option<u32>,
    /// The graph edges to give the node: the declared dependencies (as
    /// given while the graph was never wider than the lanes) and the lane,
    /// less those implied by others once it was.
    pub edges: Vec<u32>,
    /// Dependencies not given as edges, being implied by others.
    pub dropped: usize,
}

/// What the planner changed, for the finalize log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LaneStats {
    /// Lane edges added.
    pub lane_edges: usize,
    /// Declared (or lane) dependencies not given as edges, being implied.
    pub dropped_edges: usize,
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes::new(LANES)
    }
}

impl Lanes {
    /// A planner for a graph of at most `lanes` branches side by side
    /// (at least one).
    pub fn new(lanes: usize) -> Lanes {
        Lanes {
            lanes: lanes.max(1),
            has_successor: Vec::new(),
            leaves: VecDeque::new(),
            live: 0,
            before: Vec::new(),
            before_start: vec![0],
            mark: Vec::new(),
            stamp: 0,
            wide: false,
            stopped: false,
            lane_edges: 0,
            dropped_edges: 0,
        }
    }

    /// Nodes planned and committed so far.
    pub fn len(&self) -> usize {
        self.has_successor.len()
    }

    /// Whether no node was committed.
    pub fn is_empty(&self) -> bool {
        self.has_successor.is_empty()
    }

    /// Whether no later node depends on node `node` (by a declared, lane or
    /// implied dependency): the graph's ends.
    pub fn is_leaf(&self, node: usize) -> bool {
        !self.has_successor[node]
    }

    /// Whether the graph has had a lane edge (it became wider than the lanes).
    pub fn is_wide(&self) -> bool {
        self.wide
    }

    /// Lane edges added and edges dropped so far.
    pub fn stats(&self) -> LaneStats {
        LaneStats { lane_edges: self.lane_edges, dropped_edges: self.dropped_edges }
    }

    /// Adds no lane edge from now on (implied edges are still dropped once
    /// the graph had one). For a graph whose later nodes wait on events: a
    /// lane edge made the node after a leaf that may wait, perhaps for an
    /// event only a later node signals, and could make the wait a cycle;
    /// edges made before are safe, as no node before waits on an event.
    pub fn stop_lanes(&mut self) {
        if !self.stopped && self.wide {
            tracing::debug!(node = self.len(), "a node waits on events: no more lane edges");
        }
        self.stopped = true;
    }

    /// A fresh stamp for one plan's marks (three values).
    fn next_stamp(&mut self) -> u32 {
        if self.stamp > u32::MAX - 6 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.stamp = 0;
        }
        self.stamp += 3;
        self.stamp
    }

    /// The dependencies of the next node, whose declared dependencies are
    /// `declared` (indices of nodes already committed). Changes nothing
    /// but scratch marks: [`Lanes::commit`] records the node.
    pub fn plan(&mut self, declared: &[u32]) -> Plan {
        let stamp = self.next_stamp();
        // Leaves that stay leaves once this node follows its declared ones.
        let mut staying = self.live;
        for &d in declared {
            let d = d as usize;
            if self.mark[d] != stamp {
                self.mark[d] = stamp;
                staying -= usize::from(!self.has_successor[d]);
            }
        }
        let lane = if staying >= self.lanes && !self.stopped { self.oldest_leaf_but(stamp) } else { None };
        if !self.wide && lane.is_none() {
            return Plan { lane: None, edges: declared.to_vec(), dropped: 0 };
        }
        if let Some(l) = lane {
            self.mark[l as usize] = stamp;
        }
        // Drop what another dependency is known to follow. The scan is
        // bounded so that a node whose dependencies have long lists of
        // their own costs linear time (an edge kept is never wrong).
        let all = || declared.iter().copied().chain(lane);
        let mut budget = 4 * (declared.len() + 1) + 2 * self.lanes;
        let mut dropped = 0;
        for q in all() {
            let q = q as usize;
            let known = &self.before[self.before_start[q]..self.before_start[q + 1]];
            if known.len() > budget {
                continue;
            }
            budget -= known.len();
            for &p in known {
                if self.mark[p as usize] == stamp {
                    self.mark[p as usize] = stamp + 1;
                    dropped += 1;
                }
            }
        }
        let mut edges = Vec::with_capacity(declared.len() + 1);
        for p in all() {
            if self.mark[p as usize] == stamp {
                self.mark[p as usize] = stamp + 2;
                edges.push(p);
            }
        }
        Plan { lane, edges, dropped }
    }

    /// The oldest leaf not marked `stamp` (not a declared dependency of the
    /// node planned); drops nodes that gained a successor from the front.
    fn oldest_leaf_but(&mut self, stamp: u32) -> Option<u32> {
        while self.leaves.front().is_some_and(|&n| self.has_successor[n as usize]) {
            self.leaves.pop_front();
        }
        self.leaves.iter().copied().find(|&n| !self.has_successor[n as usize] && self.mark[n as usize] != stamp)
    }

    /// Records the node planned by `plan` for `declared` (the same
    /// arguments), made in the graph with `plan.edges`; returns its index.
    pub fn commit(&mut self, declared: &[u32], plan: &Plan) -> u32 {
        let node = self.has_successor.len() as u32;
        for &d in declared.iter().chain(plan.lane.as_ref()) {
            if !std::mem::replace(&mut self.has_successor[d as usize], true) {
                self.live -= 1;
            }
        }
        if let Some(lane) = plan.lane {
            if !self.wide {
                tracing::debug!(
                    lanes = self.lanes,
                    node,
                    "graph wider than the lanes: later nodes also follow the oldest leaf, implied edges dropped"
                );
            }
            self.wide = true;
            self.lane_edges += 1;
            self.before.push(lane);
        }
        self.dropped_edges += plan.dropped;
        self.before.extend_from_slice(declared);
        self.before_start.push(self.before.len());
        self.has_successor.push(false);
        self.mark.push(0);
        self.leaves.push_back(node);
        self.live += 1;
        node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a graph of `preds` through a planner of `lanes`; returns each
    /// node's edges, checking at each step that the leaves stay within the
    /// lanes.
    fn build(preds: &[Vec<u32>], lanes: usize) -> (Lanes, Vec<Plan>) {
        let mut planner = Lanes::new(lanes);
        let mut plans = Vec::new();
        for p in preds {
            let plan = planner.plan(p);
            assert_eq!(planner.commit(p, &plan) as usize, plans.len());
            assert!(planner.live <= lanes, "{} leaves with {lanes} lanes", planner.live);
            plans.push(plan);
        }
        (planner, plans)
    }

    /// Whether `from` reaches `to` over the planned edges.
    fn reaches(plans: &[Plan], from: u32, to: u32) -> bool {
        let mut stack = vec![to];
        let mut seen = vec![false; plans.len()];
        while let Some(n) = stack.pop() {
            if n == from {
                return true;
            }
            for &p in &plans[n as usize].edges {
                if p >= from && !std::mem::replace(&mut seen[p as usize], true) {
                    stack.push(p);
                }
            }
        }
        false
    }

    fn fork_join(n: u32) -> Vec<Vec<u32>> {
        (0..n)
            .map(|i| {
                if i == 0 {
                    vec![]
                } else if i < n - 1 {
                    vec![0]
                } else {
                    (1..n - 1).collect()
                }
            })
            .collect()
    }

    /// A pseudo-random DAG: each node follows up to `k` earlier ones.
    fn random_dag(n: u32, k: u32, seed: u64) -> Vec<Vec<u32>> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        (0..n)
            .map(|i| {
                let count = if i == 0 { 0 } else { next() % (k + 1) };
                (0..count).map(|_| next() % i).collect()
            })
            .collect()
    }

    #[test]
    fn a_graph_within_the_lanes_is_built_as_declared() {
        let preds = fork_join(100);
        let (planner, plans) = build(&preds, LANES);
        assert!(!planner.is_wide());
        for (plan, declared) in plans.iter().zip(&preds) {
            assert_eq!(plan, &Plan { lane: None, edges: declared.clone(), dropped: 0 });
        }
        // Duplicates and implied edges stay too: the graph is the declared one.
        let preds = vec![vec![], vec![0], vec![0, 1, 1]];
        let (_, plans) = build(&preds, LANES);
        assert_eq!(plans[2].edges, vec![0, 1, 1]);
    }

    #[test]
    fn a_wide_fork_join_becomes_lanes_chains() {
        let n = 10_000;
        let preds = fork_join(n);
        let (planner, plans) = build(&preds, LANES);
        assert!(planner.is_wide());
        // The first LANES branches follow the root; the later ones only
        // their lane's previous node (the root's edge is implied).
        assert_eq!(plans[1].edges, vec![0]);
        assert_eq!(plans[LANES + 1].lane, Some(1));
        // The first lane edge makes the graph wide: the root's edge, which
        // node 1 follows, is implied from then on.
        assert_eq!(plans[LANES + 1].edges, vec![1]);
        assert_eq!(plans[2 * LANES + 1].edges, vec![LANES as u32 + 1]);
        // The join: the last branch of each lane.
        let join = plans.last().unwrap();
        assert_eq!(join.edges.len(), LANES);
        assert!(join.edges.iter().all(|&e| e >= n - 1 - LANES as u32));
        let edges: usize = plans.iter().map(|p| p.edges.len()).sum();
        assert!(edges < 2 * n as usize, "{edges} edges");
        assert_eq!(planner.stats().lane_edges, n as usize - 2 - LANES);
        // Only the join is a leaf.
        assert!((0..n as usize - 1).all(|i| !planner.is_leaf(i)));
        assert!(planner.is_leaf(n as usize - 1));
    }

    #[test]
    fn every_declared_order_is_kept() {
        for (seed, lanes) in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 3)] {
            let preds = random_dag(400, 3, seed);
            let (_, plans) = build(&preds, lanes);
            for (node, declared) in preds.iter().enumerate() {
                for &p in declared {
                    assert!(reaches(&plans, p, node as u32), "seed {seed}: {p} -> {node} lost");
                }
                if let Some(lane) = plans[node].lane {
                    assert!(reaches(&plans, lane, node as u32), "seed {seed}: lane {lane} -> {node} lost");
                }
            }
        }
        // Fans, both ways, in few lanes.
        let fan_out: Vec<Vec<u32>> = (0..300).map(|i| if i == 0 { vec![] } else { vec![0] }).collect();
        let fan_in: Vec<Vec<u32>> = (0..300).map(|i| if i < 299 { vec![] } else { (0..299).collect() }).collect();
        for preds in [fan_out, fan_in] {
            let (_, plans) = build(&preds, 4);
            for (node, declared) in preds.iter().enumerate() {
                assert!(declared.iter().all(|&p| reaches(&plans, p, node as u32)));
            }
            assert!(plans.iter().all(|p| p.edges.len() <= 4));
        }
    }

    #[test]
    fn implied_edges_are_dropped_only_once_wide() {
        // 0 -> 1 -> 2, and 3 follows 0, 1 and 2: in a graph never wider
        // than the lanes the edges stay; in a wide one 3 gets only 2.
        let preds = vec![vec![], vec![0], vec![1], vec![0, 1, 2]];
        let (_, plans) = build(&preds, 4);
        assert_eq!(plans[3].edges, vec![0, 1, 2]);
        let mut wide = vec![vec![]; 3];
        wide.extend([vec![], vec![3], vec![4], vec![3, 4, 5]]);
        let (planner, plans) = build(&wide, 2);
        assert!(planner.is_wide());
        // 5 follows 4 and the lane edge to the oldest leaf.
        assert_eq!(plans[6].edges.iter().filter(|&&e| e >= 3).copied().collect::<Vec<_>>(), vec![5]);
        assert_eq!(planner.stats().dropped_edges, 2);
    }

    #[test]
    fn stopped_lanes_add_no_lane_edge() {
        let mut planner = Lanes::new(2);
        for _ in 0..3 {
            let plan = planner.plan(&[]);
            planner.commit(&[], &plan);
        }
        assert_eq!(planner.stats().lane_edges, 1);
        planner.stop_lanes();
        for _ in 0..10 {
            let plan = planner.plan(&[]);
            assert_eq!(plan.lane, None);
            planner.commit(&[], &plan);
        }
        assert_eq!(planner.stats().lane_edges, 1);
        // Still wide: implied edges are dropped.
        let plan = planner.plan(&[0, 2]);
        assert_eq!(plan.edges, vec![2]);
    }
}
