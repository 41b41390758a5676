//! What finalize does to a graph's topology, as pure functions over
//! predecessor lists: the execution order, the lowering of empty nodes, and
//! the partitioning at host tasks.
//!
//! **Execution order.** Both orders are topological; they decide the order
//! in which commands are appended to a partition's command buffer (which the
//! software command buffer and in-order devices follow) and the order in which
//! partitions are submitted. [`ExecutionOrder::DepthFirst`] is DPC++'s
//! reversed depth-first sort (each branch is followed to its end before the
//! next starts); [`ExecutionOrder::BreadthFirst`] is Kahn's algorithm, level
//! by level.
//!
//! **Empty nodes** (and barriers, allocation nodes and the entry and exit of
//! an inlined sub-graph) carry no command. One with at most one predecessor
//! or at most one successor is contracted: its successors depend on its
//! predecessors directly, which adds no edge. One with several of each is
//! kept as a *join*, a no-op device command, so that `m` predecessors and `n`
//! successors cost `m + n` edges, not `m * n`.
//!
//! **Partitions.** Each host task is a partition of its own (it runs on a
//! host thread between command buffers). The device nodes are grouped by
//! *level*, the largest number of host tasks on a path from a root, and split
//! into the weakly connected components of the edges inside a level, so that
//! independent branches never wait for each other. Components of one level
//! whose external predecessors and successors are the same partitions are
//! merged back: they would be submitted at the same moment anyway, and one
//! command buffer costs less than several. The partition graph is acyclic:
//! an edge between different partitions of device nodes always goes to a
//! higher level, and every path through a host task ends higher than it
//! started.

use std::collections::HashMap;

/// The order in which finalize linearises a graph (see the module docs).
///
/// The SYCL specification leaves this open (its issue "User Guided
/// Scheduling"); the DPC++ design uses reversed depth-first order.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ExecutionOrder {
    /// Reversed depth-first order, as in the DPC++ design.
    #[default]
    DepthFirst,
    /// Breadth-first order (Kahn's algorithm).
    BreadthFirst,
}

/// Successor lists from predecessor lists.
pub(crate) fn successors(preds: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut succs = vec![Vec::new(); preds.len()];
    for (n, ps) in preds.iter().enumerate() {
        for p in ps {
            succs[*p as usize].push(n as u32);
        }
    }
    succs
}

/// A topological order of the DAG given by `preds`, or `Err(node)` naming
/// a node on a cycle. Roots are taken in insertion order.
pub(crate) fn topological_order(preds: &[Vec<u32>], order: ExecutionOrder) -> Result<Vec<u32>, u32> {
    let n = preds.len();
    let succs = successors(preds);
    let roots = (0..n as u32).filter(|v| preds[*v as usize].is_empty());
    let out = match order {
        ExecutionOrder::BreadthFirst => {
            let mut remaining: Vec<usize> = preds.iter().map(Vec::len).collect();
            let mut queue: std::collections::VecDeque<u32> = roots.collect();
            let mut out = Vec::with_capacity(n);
            while let Some(v) = queue.pop_front() {
                out.push(v);
                for s in &succs[v as usize] {
                    remaining[*s as usize] -= 1;
                    if remaining[*s as usize] == 0 {
                        queue.push_back(*s);
                    }
                }
            }
            out
        }
        ExecutionOrder::DepthFirst => {
            // Reverse postorder, which is topological; roots and successors
            // are visited last-first so that the first root and the first
            // successor come out first.
            const NEW: u8 = 0;
            const OPEN: u8 = 1;
            const DONE: u8 = 2;
            let mut state = vec![NEW; n];
            let mut post = Vec::with_capacity(n);
            let roots: Vec<u32> = roots.collect();
            for &root in roots.iter().rev() {
                let mut stack: Vec<(u32, usize)> = vec![(root, 0)];
                state[root as usize] = OPEN;
                while let Some((v, i)) = stack.last_mut() {
                    let succ = &succs[*v as usize];
                    if *i < succ.len() {
                        let s = succ[succ.len() - 1 - *i];
                        *i += 1;
                        match state[s as usize] {
                            NEW => {
                                state[s as usize] = OPEN;
                                stack.push((s, 0));
                            }
                            OPEN => return Err(s),
                            _ => {}
                        }
                    } else {
                        state[*v as usize] = DONE;
                        post.push(*v);
                        stack.pop();
                    }
                }
            }
            post.reverse();
            post
        }
    };
    if out.len() < n {
        let mut emitted = vec![false; n];
        for v in &out {
            emitted[*v as usize] = true;
        }
        return Err(emitted.iter().position(|e| !e).unwrap_or(0) as u32);
    }
    Ok(out)
}

/// The result of lowering the empty nodes of a graph.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Lowered {
    /// For each node: `None` when contracted, else its new number.
    pub(crate) renumber: Vec<Option<u32>>,
    /// The kept nodes' predecessors, by new number.
    pub(crate) preds: Vec<Vec<u32>>,
    /// The kept nodes' original numbers, by new number.
    pub(crate) original: Vec<u32>,
}

/// Contracts the empty nodes that cost no extra edge (see the module docs);
/// the others stay, to become joins. `order` is a topological order of `preds`.
pub(crate) fn lower_empties(preds: &[Vec<u32>], empty: &[bool], order: &[u32]) -> Lowered {
    let n = preds.len();
    if empty.contains(&true) {
        return lower_some_empties(preds, empty, order);
    }
    // Nothing to contract: every node is kept, renumbered in `order`, with
    // its predecessors as the general case gives them (sorted by original
    // number, then renumbered), at one allocation per node instead of three.
    let mut renumber = vec![None; n];
    for (i, v) in order.iter().enumerate() {
        renumber[*v as usize] = Some(i as u32);
    }
    let preds = order
        .iter()
        .map(|v| {
            let mut ps = preds[*v as usize].clone();
            ps.sort_unstable();
            ps.dedup();
            for p in &mut ps {
                *p = renumber[*p as usize].expect("every node is kept");
            }
            ps
        })
        .collect();
    Lowered { renumber, preds, original: order.to_vec() }
}

/// [`lower_empties`] of a graph with empty nodes.
fn lower_some_empties(preds: &[Vec<u32>], empty: &[bool], order: &[u32]) -> Lowered {
    let n = preds.len();
    let mut succ_count = vec![0usize; n];
    for ps in preds {
        for p in ps {
            succ_count[*p as usize] += 1;
        }
    }
    // The kept nodes a node stands for, for its successors (original numbers).
    let mut stands_for: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut kept = vec![false; n];
    let mut eff_preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &v in order {
        let vu = v as usize;
        let mut ep: Vec<u32> = Vec::with_capacity(preds[vu].len());
        for p in &preds[vu] {
            ep.extend_from_slice(&stands_for[*p as usize]);
        }
        ep.sort_unstable();
        ep.dedup();
        if empty[vu] && (ep.len() <= 1 || succ_count[vu] <= 1) {
            stands_for[vu] = ep;
        } else {
            kept[vu] = true;
            stands_for[vu] = vec![v];
            eff_preds[vu] = ep;
        }
    }
    let mut renumber = vec![None; n];
    let mut original = Vec::new();
    for &v in order {
        if kept[v as usize] {
            renumber[v as usize] = Some(original.len() as u32);
            original.push(v);
        }
    }
    let preds = original
        .iter()
        .map(|v| eff_preds[*v as usize].iter().map(|p| renumber[*p as usize].expect("kept")).collect())
        .collect();
    Lowered { renumber, preds, original }
}

/// One partition: a host task alone, or device nodes for one command buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// Whether this is a host-task partition.
    pub(crate) host: bool,
    /// The device of its nodes (multi-device graphs; else 0).
    pub(crate) device: u16,
    /// The nodes, in execution order.
    pub(crate) members: Vec<u32>,
    /// The partitions it waits for (smaller numbers).
    pub(crate) preds: Vec<u32>,
}

/// Splits a DAG into partitions (see the module docs). `order` is a
/// topological order; partitions are numbered in a topological order of the
/// partition graph and their members listed in `order`.
#[cfg(test)]
pub(crate) fn partition(preds: &[Vec<u32>], host: &[bool], order: &[u32]) -> (Vec<Part>, Vec<u32>) {
    partition_placed(preds, host, &vec![0; preds.len()], order)
}

/// [`partition`] of nodes placed on devices: an edge between device nodes of
/// two devices separates levels as a host task does, and partitions hold the
/// nodes of one device.
pub(crate) fn partition_placed(
    preds: &[Vec<u32>],
    host: &[bool],
    device: &[u16],
    order: &[u32],
) -> (Vec<Part>, Vec<u32>) {
    let level = levels(preds, host, device, order);
    let component = level_components(preds, host, device, &level);
    let groups = Groups::new(preds, host, device, order, &level, &component);
    let merged = groups.merge_same_neighbours();
    number_partitions(&groups, &merged, order)
}

/// Each node's level: the largest number of steps (host tasks, device
/// changes between device nodes) on a path from a root to it.
fn levels(preds: &[Vec<u32>], host: &[bool], device: &[u16], order: &[u32]) -> Vec<u32> {
    let mut level = vec![0u32; preds.len()];
    for &v in order {
        let vu = v as usize;
        let step = |p: usize| host[p] || (!host[vu] && device[p] != device[vu]);
        level[vu] = preds[vu].iter().map(|p| level[*p as usize] + step(*p as usize) as u32).max().unwrap_or(0);
    }
    level
}

/// For each node, the representative of its weakly connected component
/// among the edges between device nodes of one level and one device (a
/// host task is its own).
fn level_components(preds: &[Vec<u32>], host: &[bool], device: &[u16], level: &[u32]) -> Vec<u32> {
    let n = preds.len();
    // Union-find; the smaller node becomes the root.
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            parent[x as usize] = parent[parent[x as usize] as usize];
            x = parent[x as usize];
        }
        x
    }
    for v in 0..n {
        if host[v] {
            continue;
        }
        for &p in &preds[v] {
            if !host[p as usize] && level[p as usize] == level[v] && device[p as usize] == device[v] {
                let (a, b) = (find(&mut parent, p), find(&mut parent, v as u32));
                if a != b {
                    parent[a.max(b) as usize] = a.min(b);
                }
            }
        }
    }
    (0..n as u32).map(|v| find(&mut parent, v)).collect()
}

/// The candidate partitions: one per host task, one per component, and the
/// edges between them.
struct Groups {
    /// Each node's group.
    of: Vec<u32>,
    /// Groups, numbered by first appearance in the execution order.
    count: u32,
    /// Each group's predecessor and successor groups, sorted.
    preds: Vec<Vec<u32>>,
    succs: Vec<Vec<u32>>,
    level: Vec<u32>,
    host: Vec<bool>,
    device: Vec<u16>,
}

impl Groups {
    fn new(
        preds: &[Vec<u32>],
        host: &[bool],
        device: &[u16],
        order: &[u32],
        level: &[u32],
        component: &[u32],
    ) -> Groups {
        let n = preds.len();
        let mut of = vec![0u32; n];
        let mut group_of_root: HashMap<u32, u32> = HashMap::new();
        let mut count = 0u32;
        for &v in order {
            let next = count;
            let g = if host[v as usize] {
                count += 1;
                next
            } else {
                *group_of_root.entry(component[v as usize]).or_insert_with(|| {
                    count += 1;
                    next
                })
            };
            of[v as usize] = g;
        }
        let mut group_preds: Vec<Vec<u32>> = vec![Vec::new(); count as usize];
        let mut group_succs: Vec<Vec<u32>> = vec![Vec::new(); count as usize];
        for v in 0..n {
            for &p in &preds[v] {
                let (gp, gv) = (of[p as usize], of[v]);
                if gp != gv {
                    group_preds[gv as usize].push(gp);
                    group_succs[gp as usize].push(gv);
                }
            }
        }
        for list in group_preds.iter_mut().chain(group_succs.iter_mut()) {
            list.sort_unstable();
            list.dedup();
        }
        let mut group_level = vec![0u32; count as usize];
        let mut group_host = vec![false; count as usize];
        let mut group_device = vec![0u16; count as usize];
        for v in 0..n {
            let g = of[v] as usize;
            group_level[g] = level[v];
            group_host[g] = host[v];
            group_device[g] = device[v];
        }
        Groups {
            of,
            count,
            preds: group_preds,
            succs: group_succs,
            level: group_level,
            host: group_host,
            device: group_device,
        }
    }

    /// For each group, the group it merges into: device groups of one level
    /// and one device with the same neighbours merge into the first of them.
    fn merge_same_neighbours(&self) -> Vec<u32> {
        let mut merged: Vec<u32> = (0..self.count).collect();
        // (level, device, predecessors, successors) of a group.
        type GroupKey<'a> = (u32, u16, &'a [u32], &'a [u32]);
        let mut by_key: HashMap<GroupKey<'_>, u32> = HashMap::new();
        for (g, into) in merged.iter_mut().enumerate() {
            if self.host[g] {
                continue;
            }
            let key = (self.level[g], self.device[g], &self.preds[g][..], &self.succs[g][..]);
            *into = *by_key.entry(key).or_insert(g as u32);
        }
        merged
    }
}

/// The partitions of merged groups, numbered in a topological order of the
/// partition graph that follows the first appearance of each partition in
/// `order` (Kahn's algorithm, smallest first appearance first), with their
/// members; and each node's partition.
fn number_partitions(groups: &Groups, merged: &[u32], order: &[u32]) -> (Vec<Part>, Vec<u32>) {
    let mut first_seen: Vec<u32> = Vec::new();
    let mut seen = vec![false; groups.count as usize];
    for &v in order {
        let m = merged[groups.of[v as usize] as usize];
        if !std::mem::replace(&mut seen[m as usize], true) {
            first_seen.push(m);
        }
    }
    let mut part_preds: HashMap<u32, Vec<u32>> = HashMap::new();
    for g in 0..groups.count as usize {
        let m = merged[g];
        for p in &groups.preds[g] {
            let mp = merged[*p as usize];
            if mp != m {
                part_preds.entry(m).or_default().push(mp);
            }
        }
    }
    let rank: HashMap<u32, usize> = first_seen.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let k = first_seen.len();
    let mut pp: Vec<Vec<u32>> = vec![Vec::new(); k];
    for (m, ps) in &part_preds {
        let r = rank[m];
        pp[r] = ps.iter().map(|p| rank[p] as u32).collect();
        pp[r].sort_unstable();
        pp[r].dedup();
    }
    let mut remaining: Vec<usize> = pp.iter().map(Vec::len).collect();
    let ps = successors(&pp);
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> =
        (0..k as u32).filter(|r| remaining[*r as usize] == 0).map(std::cmp::Reverse).collect();
    let mut number = vec![0u32; k];
    let mut next = 0u32;
    while let Some(std::cmp::Reverse(r)) = ready.pop() {
        number[r as usize] = next;
        next += 1;
        for s in &ps[r as usize] {
            remaining[*s as usize] -= 1;
            if remaining[*s as usize] == 0 {
                ready.push(std::cmp::Reverse(*s));
            }
        }
    }
    let mut parts: Vec<Part> = vec![Part { host: false, device: 0, members: Vec::new(), preds: Vec::new() }; k];
    for (r, ps) in pp.iter().enumerate() {
        let part = &mut parts[number[r] as usize];
        part.host = groups.host[first_seen[r] as usize];
        part.device = groups.device[first_seen[r] as usize];
        part.preds = ps.iter().map(|p| number[*p as usize]).collect();
        part.preds.sort_unstable();
    }
    let mut part_of = vec![0u32; groups.of.len()];
    for &v in order {
        let p = number[rank[&merged[groups.of[v as usize] as usize]]];
        part_of[v as usize] = p;
        parts[p as usize].members.push(v);
    }
    (parts, part_of)
}

/// Whether `members` (in execution order) form a single chain: each depends
/// on the previous one, the first on nothing inside, and nothing else inside.
pub(crate) fn is_chain(members: &[u32], preds: &[Vec<u32>], part_of: &[u32]) -> bool {
    let Some(first) = members.first() else { return true };
    let part = part_of[*first as usize];
    let inside = |v: u32| preds[v as usize].iter().filter(|p| part_of[**p as usize] == part).copied();
    if inside(*first).next().is_some() {
        return false;
    }
    members.windows(2).all(|w| {
        let mut it = inside(w[1]);
        it.next() == Some(w[0]) && it.next().is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dag(edges: &[(u32, u32)], n: usize) -> Vec<Vec<u32>> {
        let mut preds = vec![Vec::new(); n];
        for (a, b) in edges {
            preds[*b as usize].push(*a);
        }
        preds
    }

    #[test]
    fn depth_first_and_breadth_first() {
        // 0 -> 1 -> 2, 0 -> 3, 2 -> 4, 3 -> 4
        let preds = dag(&[(0, 1), (1, 2), (0, 3), (2, 4), (3, 4)], 5);
        assert_eq!(topological_order(&preds, ExecutionOrder::DepthFirst), Ok(vec![0, 1, 2, 3, 4]));
        assert_eq!(topological_order(&preds, ExecutionOrder::BreadthFirst), Ok(vec![0, 1, 3, 2, 4]));
        // Two roots: the first root's branch first.
        let preds = dag(&[(0, 2), (1, 3)], 4);
        assert_eq!(topological_order(&preds, ExecutionOrder::DepthFirst), Ok(vec![0, 2, 1, 3]));
        assert_eq!(topological_order(&preds, ExecutionOrder::BreadthFirst), Ok(vec![0, 1, 2, 3]));
    }

    #[test]
    fn orders_report_cycles() {
        let preds = dag(&[(0, 1), (1, 2), (2, 1)], 3);
        assert!(topological_order(&preds, ExecutionOrder::DepthFirst).is_err());
        assert!(topological_order(&preds, ExecutionOrder::BreadthFirst).is_err());
        // A cycle reachable from no root.
        let preds = dag(&[(1, 2), (2, 1)], 3);
        assert!(topological_order(&preds, ExecutionOrder::DepthFirst).is_err());
    }

    #[test]
    fn long_chain_depth_first_is_iterative() {
        let n = 200_000;
        let preds: Vec<Vec<u32>> = (0..n).map(|i| if i == 0 { vec![] } else { vec![i as u32 - 1] }).collect();
        let order = topological_order(&preds, ExecutionOrder::DepthFirst).unwrap();
        assert!(order.iter().enumerate().all(|(i, v)| *v as usize == i));
    }

    #[test]
    fn empties_contract_unless_they_save_edges() {
        // 0,1,2 -> E(3) -> 4,5,6 : kept (3 x 3 would be 9 edges).
        let mut edges = vec![(0, 3), (1, 3), (2, 3), (3, 4), (3, 5), (3, 6)];
        // 4 -> F(7) -> 8 : contracted.
        edges.extend([(4, 7), (7, 8)]);
        let preds = dag(&edges, 9);
        let mut empty = vec![false; 9];
        empty[3] = true;
        empty[7] = true;
        let order = topological_order(&preds, ExecutionOrder::BreadthFirst).unwrap();
        let low = lower_empties(&preds, &empty, &order);
        assert_eq!(low.renumber[7], None);
        let e = low.renumber[3].unwrap();
        let n8 = low.renumber[8].unwrap() as usize;
        assert_eq!(low.preds[n8], vec![low.renumber[4].unwrap()]);
        assert_eq!(low.preds[e as usize].len(), 3);
        assert_eq!(low.original.len(), 8);
    }

    #[test]
    fn without_empties_the_fast_path_matches_the_general_one() {
        // 0 -> 2, 1 -> 2, 0 -> 3, 2 -> 3, with duplicate and unsorted lists.
        let preds = vec![vec![], vec![], vec![1, 0, 1], vec![2, 0]];
        let empty = [false; 4];
        for order in [ExecutionOrder::DepthFirst, ExecutionOrder::BreadthFirst] {
            let order = topological_order(&preds, order).unwrap();
            assert_eq!(lower_empties(&preds, &empty, &order), lower_some_empties(&preds, &empty, &order));
        }
    }

    #[test]
    fn chains_of_empties_pass_dependencies_through() {
        // 0 -> E1 -> E2 -> 3, and an isolated empty node 4.
        let preds = dag(&[(0, 1), (1, 2), (2, 3)], 5);
        let empty = [false, true, true, false, true];
        let order = topological_order(&preds, ExecutionOrder::DepthFirst).unwrap();
        let low = lower_empties(&preds, &empty, &order);
        assert_eq!(low.original, vec![0, 3]);
        assert_eq!(low.preds, vec![vec![], vec![0]]);
    }

    fn parts_of(edges: &[(u32, u32)], host: &[bool]) -> (Vec<Part>, Vec<u32>) {
        let preds = dag(edges, host.len());
        let order = topological_order(&preds, ExecutionOrder::DepthFirst).unwrap();
        partition(&preds, host, &order)
    }

    #[test]
    fn no_host_task_is_one_partition() {
        // Two independent components still make one command buffer.
        let (parts, _) = parts_of(&[(0, 1), (2, 3)], &[false; 4]);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].members.len(), 4);
        assert!(!parts[0].host);
    }

    #[test]
    fn host_task_splits_before_and_after() {
        // 0 -> 1 -> H2 -> 3 -> 4
        let (parts, part_of) = parts_of(&[(0, 1), (1, 2), (2, 3), (3, 4)], &[false, false, true, false, false]);
        assert_eq!(parts.len(), 3);
        assert_eq!(part_of, vec![0, 0, 1, 2, 2]);
        assert_eq!(parts[1].preds, vec![0]);
        assert_eq!(parts[2].preds, vec![1]);
        assert!(parts[1].host);
    }

    #[test]
    fn multi_root_branches_do_not_wait_for_each_other() {
        // 0 -> H1 -> 2 ; 3 -> H4 -> 5
        let host = [false, true, false, false, true, false];
        let (parts, part_of) = parts_of(&[(0, 1), (1, 2), (3, 4), (4, 5)], &host);
        assert_eq!(parts.len(), 6);
        let p = |v: usize| part_of[v];
        assert_eq!(parts[p(1) as usize].preds, vec![p(0)]);
        assert_eq!(parts[p(2) as usize].preds, vec![p(1)]);
        assert_eq!(parts[p(4) as usize].preds, vec![p(3)]);
        assert_eq!(parts[p(5) as usize].preds, vec![p(4)]);
        assert!(parts[p(0) as usize].preds.is_empty() && parts[p(3) as usize].preds.is_empty());
    }

    #[test]
    fn make_edge_into_a_host_task_moves_groups() {
        // After the design document's second example: A -> B -> HT1 -> D and
        // A -> HT0 -> E. E and D are independent (same level, different host
        // tasks before them); make_edge(E, HT1) moves HT1, and D with it, after
        // E's group.
        let (a, b, ht1, d, ht0, e) = (0, 1, 2, 3, 4, 5);
        let host = [false, false, true, false, true, false];
        let edges = [(a, b), (b, ht1), (ht1, d), (a, ht0), (ht0, e), (e, ht1)];
        let (parts, part_of) = parts_of(&edges[..5], &host);
        assert_eq!(parts.len(), 5);
        assert_eq!(part_of[a as usize], part_of[b as usize]);
        assert!(!parts[part_of[d as usize] as usize].preds.contains(&part_of[e as usize]));
        let (parts, part_of) = parts_of(&edges, &host);
        assert_eq!(parts.len(), 5);
        let p = |v: u32| part_of[v as usize];
        assert_eq!(p(a), p(b));
        assert!(p(ht0) < p(e) && p(e) < p(ht1) && p(ht1) < p(d), "{part_of:?}");
        assert_eq!(parts[p(ht1) as usize].preds, {
            let mut v = vec![p(a), p(e)];
            v.sort_unstable();
            v
        });
        assert_eq!(parts[p(d) as usize].preds, vec![p(ht1)]);
    }

    #[test]
    fn components_with_the_same_neighbours_merge() {
        // H0 -> 1, H0 -> 2 (independent), both -> H3: one device partition.
        let host = [true, false, false, true];
        let (parts, _) = parts_of(&[(0, 1), (0, 2), (1, 3), (2, 3)], &host);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].members.len(), 2);
    }

    #[test]
    fn partition_numbers_are_topological() {
        // Device node 4 depends on H3, which depends on 2; 0 -> 4 too.
        let host = [false, false, false, true, false];
        let (parts, part_of) = parts_of(&[(0, 4), (1, 2), (2, 3), (3, 4)], &host);
        for (i, part) in parts.iter().enumerate() {
            assert!(part.preds.iter().all(|p| (*p as usize) < i), "{parts:?}");
        }
        assert!(part_of[4] > part_of[3]);
    }

    #[test]
    fn chains_are_recognised() {
        let preds = dag(&[(0, 1), (1, 2)], 3);
        assert!(is_chain(&[0, 1, 2], &preds, &[0, 0, 0]));
        let preds = dag(&[(0, 1), (0, 2)], 3);
        assert!(!is_chain(&[0, 1, 2], &preds, &[0, 0, 0]));
        // Dependencies from other partitions do not count.
        let preds = dag(&[(0, 1), (1, 2), (3, 2)], 4);
        assert!(is_chain(&[0, 1, 2], &preds, &[0, 0, 0, 1]));
    }
}
