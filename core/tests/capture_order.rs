//! The order a capturing queue adds to its captured commands
//! ([`cmdbuf_core::queue::QueueLane`]), past the point where the queue's
//! leaves are pruned (64 candidates): a barrier over an empty wait list comes
//! after exactly the commands no later command of its queue waits for.

use cmdbuf_core::*;

fn out_of_order_queue() -> Result<(Context, Queue, UsmAllocation)> {
    let context = Context::new(&cmdbuf_cpu::default_device())?;
    let queue = Queue::new(&context, QueueProperties { out_of_order: true, ..Default::default() })?;
    let usm = UsmAllocation::new(&context, UsmKind::Device, 4096)?;
    Ok((context, queue, usm))
}

/// The commands captured command `node` runs after, read from the DOT export.
fn preds(graph: &CapturedGraph, node: usize) -> Vec<usize> {
    let suffix = format!(" -> n{node};");
    let mut out: Vec<usize> = graph
        .to_dot(false)
        .lines()
        .filter_map(|l| l.trim().strip_suffix(&suffix)?.strip_prefix('n')?.parse().ok())
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn a_barrier_after_a_long_chain_waits_for_its_end_only() -> Result<()> {
    let (_context, queue, usm) = out_of_order_queue()?;
    queue.begin_capture()?;
    let mut last = queue.usm_fill(usm.ptr(), &[1], 16, &[])?;
    for _ in 0..199 {
        last = queue.usm_fill(usm.ptr(), &[1], 16, &[&last])?;
    }
    queue.barrier(&[])?;
    let graph = queue.end_capture()?;
    assert_eq!(graph.node_count(), 201);
    assert_eq!(preds(&graph, 200), [199]);
    Ok(())
}

#[test]
fn a_barrier_after_a_wide_fork_waits_for_every_branch() -> Result<()> {
    let (_context, queue, usm) = out_of_order_queue()?;
    queue.begin_capture()?;
    let root = queue.usm_fill(usm.ptr(), &[1], 4096, &[])?;
    for i in 0..150 {
        queue.usm_fill(usm.ptr().byte_add(i * 16), &[2], 16, &[&root])?;
    }
    queue.barrier(&[])?;
    let after = queue.usm_fill(usm.ptr(), &[3], 16, &[])?;
    queue.barrier(&[&after])?;
    let graph = queue.end_capture()?;
    // The branches, not the root they all wait for.
    assert_eq!(preds(&graph, 151), (1..=150).collect::<Vec<_>>());
    // After a barrier, an out-of-order queue's commands come after it.
    assert_eq!(preds(&graph, 152), [151]);
    Ok(())
}
