//! The dependencies between a command buffer's commands, gathered while
//! commands are appended and given to the driver in one call at finalize.
//!
//! Adding a node with its dependency array adds one out-edge to each of its
//! predecessors, and the driver's cost for that grows with the edges the
//! predecessor already has: a fork (one command that N later commands
//! depend on) built node by node costs O(N²) in the driver. One
//! `cuGraphAddDependencies` call with every edge as arrays costs O(edges).
//! Edges only matter from instantiation on, so nodes are made without their
//! predecessors in other commands and linked at finalize.

/// Edges `from[i] -> to[i]` not yet given to the driver, as the two arrays
/// `cuGraphAddDependencies` takes.
#[derive(Debug)]
pub(crate) struct PendingEdges<N> {
    from: Vec<N>,
    to: Vec<N>,
}

impl<N: Copy> PendingEdges<N> {
    pub(crate) fn new() -> PendingEdges<N> {
        PendingEdges { from: Vec::new(), to: Vec::new() }
    }

    /// Makes `node` depend on every node of `preds` (each listed once: the
    /// front end removes duplicate sync points, and the driver refuses a
    /// duplicate edge).
    pub(crate) fn link(&mut self, preds: &[N], node: N) {
        self.from.extend_from_slice(preds);
        self.to.extend(std::iter::repeat_n(node, preds.len()));
    }

    /// The edges, as the sources and destinations arrays (equal lengths).
    pub(crate) fn arrays(&self) -> (&[N], &[N]) {
        (&self.from, &self.to)
    }

    /// Forgets the edges, once the driver has them.
    pub(crate) fn clear(&mut self) {
        self.from = Vec::new();
        self.to = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_join_gives_one_edge_per_dependency_in_order() {
        // Root 0, middles 1..=3 after it, join 4 after the middles.
        let mut edges = PendingEdges::new();
        for middle in 1..=3 {
            edges.link(&[0], middle);
        }
        edges.link(&[1, 2, 3], 4);
        edges.link(&[], 5);
        let (from, to) = edges.arrays();
        assert_eq!(from, [0, 0, 0, 1, 2, 3]);
        assert_eq!(to, [1, 2, 3, 4, 4, 4]);
        edges.clear();
        let (from, to) = edges.arrays();
        assert!(from.is_empty() && to.is_empty(), "clear leaves nothing pending");
    }

    #[test]
    fn several_entry_nodes_each_get_every_predecessor() {
        // Two wait nodes 7 and 8 of one command, after commands 1 and 2.
        let mut edges = PendingEdges::new();
        edges.link(&[1, 2], 7);
        edges.link(&[1, 2], 8);
        let (from, to) = edges.arrays();
        assert_eq!(from.len(), to.len());
        let pairs: Vec<(i32, i32)> = from.iter().copied().zip(to.iter().copied()).collect();
        assert_eq!(pairs, [(1, 7), (2, 7), (1, 8), (2, 8)]);
    }
}
