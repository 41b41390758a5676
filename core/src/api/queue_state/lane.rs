//! One queue's place in a graph it records into: the dependencies a queue's
//! order adds to each command recorded from it. UR's graph capture
//! ([`crate::capture`]) and SYCL's queue recording (the `cmdbuf-runtime`
//! crate) share it, so a capturing and a recording queue order their
//! commands by the same rules:
//! - a command recorded from an in-order queue runs after the previous one
//!   recorded from it;
//! - one recorded from an out-of-order queue runs after the last barrier
//!   recorded from it;
//! - a barrier over an empty wait list runs after the queue's *leaves*, the
//!   commands recorded from it that no later command of it depends on.
//!
//! The graph numbers its commands (`u32`) and owns their edges; the lane
//! asks the graph, through a `depended_on` closure, whether a later command
//! of the queue depends on a given one. The leaves are kept as candidates
//! and pruned only when a barrier needs them or they have doubled, since
//! pruning at each command costs O(leaves) per command, O(N²) for a wide
//! fork recorded from an out-of-order queue.

/// One queue recording into a graph, as the graph sees it: which queue
/// ([`key`](Self::key)), its order, and the commands recorded from it so far
/// that the next one may come after.
#[derive(Clone, Debug)]
pub struct QueueLane {
    key: usize,
    in_order: bool,
    /// The newest command recorded from the queue.
    last: Option<u32>,
    /// The newest barrier recorded from the queue.
    barrier: Option<u32>,
    /// The queue's leaves, among other commands of it: every command is
    /// added when recorded; those a later command of the queue depends on
    /// are dropped when pruned.
    leaves: Vec<u32>,
    /// The length of `leaves` after it was last pruned.
    pruned_len: usize,
}

/// Below this many candidates the leaves are not pruned between barriers.
const PRUNE_FLOOR: usize = 32;

impl QueueLane {
    /// The lane of queue `key` (an identity the graph finds it by), which
    /// runs its commands in order or not.
    pub fn new(key: usize, in_order: bool) -> QueueLane {
        QueueLane { key, in_order, last: None, barrier: None, leaves: Vec::new(), pruned_len: 0 }
    }

    /// The identity of its queue.
    pub fn key(&self) -> usize {
        self.key
    }

    /// Adds to `deps` what the queue's order adds to the dependencies of a
    /// command recorded from it next: its leaves for a barrier over an empty
    /// wait list (`barrier_on_leaves`), then its last command (in order) or
    /// its last barrier (out of order). `depended_on(c)` says whether a
    /// later command of the queue depends on its command `c`.
    pub fn order_deps(&mut self, barrier_on_leaves: bool, deps: &mut Vec<u32>, depended_on: impl Fn(u32) -> bool) {
        if barrier_on_leaves {
            self.prune(depended_on);
            deps.extend_from_slice(&self.leaves);
        }
        deps.extend(if self.in_order { self.last } else { self.barrier });
    }

    /// Notes command `index`, just recorded from the queue after what
    /// [`order_deps`](Self::order_deps) added, as its newest: one of its
    /// leaves (the only one after a barrier over its leaves), its last
    /// command, and its last barrier where it is one (`barrier`).
    pub fn push(&mut self, index: u32, barrier_on_leaves: bool, barrier: bool, depended_on: impl Fn(u32) -> bool) {
        if barrier_on_leaves {
            // It depends on every leaf of the queue.
            self.leaves.clear();
            self.pruned_len = 0;
        }
        self.leaves.push(index);
        if self.leaves.len() >= 2 * self.pruned_len.max(PRUNE_FLOOR) {
            // Pruned when it doubles: amortized O(1) per command, and memory
            // in proportion to the true leaves.
            self.prune(depended_on);
        }
        self.last = Some(index);
        if barrier {
            self.barrier = Some(index);
        }
    }

    /// The queue's leaves, in the order they were recorded.
    pub fn leaves(&mut self, depended_on: impl Fn(u32) -> bool) -> &[u32] {
        self.prune(depended_on);
        &self.leaves
    }

    /// Drops the candidates a later command of the queue depends on.
    fn prune(&mut self, depended_on: impl Fn(u32) -> bool) {
        self.leaves.retain(|l| !depended_on(*l));
        self.pruned_len = self.leaves.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records commands `0..` from one lane, each after `deps[i]` and the
    /// lane's order, with edges kept as a graph would; gives each command's
    /// dependencies.
    fn record(lane: &mut QueueLane, commands: &[(&[u32], bool)]) -> Vec<Vec<u32>> {
        let mut preds: Vec<Vec<u32>> = Vec::new();
        for (i, (wait, barrier)) in commands.iter().enumerate() {
            let on_leaves = *barrier && wait.is_empty();
            let mut deps = wait.to_vec();
            let depended_on = |c: u32| preds.iter().any(|p| p.contains(&c));
            lane.order_deps(on_leaves, &mut deps, depended_on);
            deps.sort_unstable();
            deps.dedup();
            preds.push(deps);
            let depended_on = |c: u32| preds.iter().any(|p| p.contains(&c));
            lane.push(i as u32, on_leaves, *barrier, depended_on);
        }
        preds
    }

    #[test]
    fn in_order_chains_and_barriers_join_out_of_order_leaves() {
        let chain = record(&mut QueueLane::new(1, true), &[(&[], false), (&[], false), (&[], true)]);
        assert_eq!(chain, [vec![], vec![0], vec![1]]);

        let mut lane = QueueLane::new(2, false);
        let fork = record(&mut lane, &[(&[], false), (&[], false), (&[0], false), (&[], true), (&[], false)]);
        // 1 and 2 are the leaves (0 is what 2 waits for); 4 comes after the barrier.
        assert_eq!(fork, [vec![], vec![], vec![0], vec![1, 2], vec![3]]);
        assert_eq!(lane.leaves(|c| fork.iter().any(|p| p.contains(&c))), [4]);
    }

    #[test]
    fn wide_forks_keep_only_true_leaves_after_pruning() {
        let mut lane = QueueLane::new(3, false);
        // 0, then 200 commands each waiting for the previous one: one leaf.
        let commands: Vec<(Vec<u32>, bool)> =
            (0..201u32).map(|i| (if i == 0 { vec![] } else { vec![i - 1] }, false)).collect();
        let refs: Vec<(&[u32], bool)> = commands.iter().map(|(w, b)| (&w[..], *b)).collect();
        let preds = record(&mut lane, &refs);
        assert!(lane.leaves.len() < 2 * PRUNE_FLOOR, "pruned as it grew: {}", lane.leaves.len());
        assert_eq!(lane.leaves(|c| preds.iter().any(|p| p.contains(&c))), [200]);
    }
}
