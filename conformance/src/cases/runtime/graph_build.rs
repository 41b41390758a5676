//! Graphs built with the explicit API: the diamond, empty nodes, edges,
//! node queries, finalize and submission, cycle checks (a 100,000-node
//! graph included), execution orders, profiling, DOT output, threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use cmdbuf::{
    Context, EventStatus, KernelArg, MigrationFlags, QueueProperties, RectLayout, RectOffset, RectRegion, UserEvent,
    UsmAdvice, UsmAllocation,
};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{
    Executable, ExecutionOrder, FinalizeProperties, Graph, GraphProperties, NodeProperties, NodeType,
};

use super::graph_common::{Diamond, SETTLE, kernel_node, new_graph, sycl_ooo_queue, sycl_queue, sycl_queue_with};
use crate::harness::{CaseError, CaseResult, Env, read, read_buffer, write};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_build";
        diamond,
        diamond_with_make_edge,
        empty_node_joins_all_leaves,
        node_queries,
        every_memory_command,
        finalize_again_after_adding,
        submissions_never_overlap,
        back_to_back_submissions_then_another_queue,
        another_queue_waits_for_the_graph_only,
        wait_events_gate_the_graph,
        in_order_queue_orders_around_the_graph,
        cycles_are_refused,
        no_cycle_check_defers_to_finalize,
        nodes_of_another_graph,
        one_command_per_group,
        commands_are_validated,
        cycle_check_scales_to_100k_nodes,
        execution_orders,
        in_order_hint,
        profiling_property => Requires::PROFILING,
        objects_of_another_context,
        print_graph_writes_dot,
        drop_while_executing,
        threads_build_and_submit,
    ]
}

const N: usize = 256;

/// The diamond of the Codeplay proposal, executed three times.
fn diamond(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    let graph = new_graph(env)?;
    let nodes = d.add_to(&graph)?;
    check_eq!(graph.node_count(), 4);
    check_eq!(graph.edge_count(), 4);
    check_eq!(graph.root_nodes(), vec![nodes.top.clone()]);
    check_eq!(graph.leaf_nodes(), vec![nodes.bottom.clone()]);
    for side in [&nodes.left, &nodes.right] {
        check_eq!(side.predecessors(), vec![nodes.top.clone()]);
        check_eq!(side.successors(), vec![nodes.bottom.clone()]);
    }
    let exec = graph.finalize(FinalizeProperties::default())?;
    check_eq!(exec.partitions().len(), 1, "no host task: one command buffer");
    for run in 1..=3 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&queue, run)?;
    }
    Ok(())
}

/// The same diamond with edges made after the nodes, in any order.
fn diamond_with_make_edge(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    let graph = new_graph(env)?;
    // SAFETY: as in `Diamond::add_to`; the edges come afterwards.
    let (bottom, right, left, top) = unsafe {
        let bottom = d.bottom_node(&graph, &[])?;
        let scratch = graph.add_empty(NodeProperties::new())?;
        let right = d.saxpy_node(&graph, d.c(), super::graph_common::MINUS_ONE, &scratch)?;
        let left = d.saxpy_node(&graph, d.b(), super::graph_common::ONE, &scratch)?;
        let top = kernel_node(&graph, &d.increment, &[N], &[KernelArg::Pointer(d.a.ptr())], &[])?;
        graph.make_edge(&top, &scratch)?;
        (bottom, right, left, top)
    };
    graph.make_edge(&left, &bottom)?;
    graph.make_edge(&right, &bottom)?;
    graph.make_edge(&left, &bottom)?; // again: accepted, no second edge
    check_eq!(graph.edge_count(), 5);
    check_eq!(graph.root_nodes(), vec![top]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&exec, &[])?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    d.check(&queue, 2)
}

/// An empty node made with `depends_on_all_leaves` joins independent
/// branches; the command after it sees every branch's result.
fn empty_node_joins_all_leaves(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let parts = env.usm_u32(4 * 64)?;
    let out = env.usm_u32(4 * 64)?;
    let graph = new_graph(env)?;
    let mut fills = Vec::new();
    for i in 0..4u32 {
        let dst = parts.ptr().byte_add(i as usize * 256);
        fills.push(graph.add(|h| h.fill(dst, &(i + 1).to_le_bytes(), 256), NodeProperties::new())?);
    }
    let join = graph.add_empty(NodeProperties::new().depends_on_all_leaves())?;
    check_eq!(join.node_type(), NodeType::Empty);
    check_eq!(join.predecessors(), fills);
    let copy = graph.add(|h| h.memcpy(out.ptr(), parts.ptr(), 1024), NodeProperties::new().depends_on(&[&join]))?;
    check_eq!(graph.leaf_nodes(), vec![copy]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    let got = read::<u32>(&queue, out.ptr(), 256)?;
    let expected: Vec<u32> = (1..=4u32).flat_map(|v| std::iter::repeat_n(v, 64)).collect();
    check_eq!(got, expected);
    Ok(())
}

/// Types, predecessors and successors in edge order, nodes in insertion
/// order, roots, leaves, equality.
fn node_queries(env: &Env) -> CaseResult {
    let mem = env.usm_u32(64)?;
    let other = env.usm_u32(64)?;
    let kernel = env.kernel("increment")?;
    let child = new_graph(env)?.finalize(FinalizeProperties::default())?;
    let graph = new_graph(env)?;
    let empty = graph.add_empty(NodeProperties::new())?;
    // SAFETY: 64 items increment a 64-element allocation.
    let k = unsafe { kernel_node(&graph, &kernel, &[64], &[KernelArg::Pointer(mem.ptr())], &[&empty])? };
    let copy = graph.add(|h| h.memcpy(other.ptr(), mem.ptr(), 256), NodeProperties::new().depends_on(&[&k]))?;
    let set = graph.add(|h| h.memset(mem.ptr(), 3, 256), NodeProperties::new().depends_on(&[&copy]))?;
    let fill = graph.add(|h| h.fill(mem.ptr(), &[1, 2], 256), NodeProperties::new().depends_on(&[&set]))?;
    let prefetch = graph.add(|h| h.prefetch(mem.ptr(), 256, MigrationFlags::HOST_TO_DEVICE), NodeProperties::new())?;
    let advise = graph.add(|h| h.mem_advise(mem.ptr(), 256, UsmAdvice::SET_READ_MOSTLY), NodeProperties::new())?;
    let host = graph.add(|h| h.host_task(|| {}), NodeProperties::new().depends_on(&[&k, &empty]))?;
    let sub = graph.add(|h| h.subgraph(&child), NodeProperties::new())?;
    let types: Vec<NodeType> = graph.nodes().iter().map(|n| n.node_type()).collect();
    check_eq!(
        types,
        vec![
            NodeType::Empty,
            NodeType::Kernel,
            NodeType::Memcpy,
            NodeType::Memset,
            NodeType::Memfill,
            NodeType::Prefetch,
            NodeType::MemAdvise,
            NodeType::HostTask,
            NodeType::Subgraph
        ]
    );
    check_eq!(graph.nodes().iter().map(|n| n.index()).collect::<Vec<_>>(), (0..9).collect::<Vec<_>>());
    check_eq!(k.successors(), vec![copy.clone(), host.clone()]);
    check_eq!(host.predecessors(), vec![k.clone(), empty.clone()]);
    check_eq!(empty.successors(), vec![k.clone(), host.clone()]);
    check_eq!(graph.root_nodes(), vec![empty.clone(), prefetch.clone(), advise.clone(), sub.clone()]);
    check_eq!(graph.leaf_nodes(), vec![fill, prefetch, advise, host.clone(), sub]);
    check!(host == graph.nodes()[7] && host != k);
    check_eq!(host.graph_id(), graph.id());
    check_eq!(graph.edge_count(), 6);
    Ok(())
}

/// Every memory command of the handler, in one graph, run twice.
fn every_memory_command(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let usm = env.usm_u32(64)?;
    let back = env.usm_u32(64)?;
    let a = env.buffer(256)?;
    let b = env.buffer_with(&[0u8; 256])?;
    let rect = env.buffer(256)?;
    let graph = new_graph(env)?;
    let fill_usm = graph.add(|h| h.fill(usm.ptr(), &[1, 2, 3, 4], 256), NodeProperties::new())?;
    let write = graph.add(|h| h.write_buffer(&a, 0, 256, usm.ptr()), NodeProperties::new().depends_on(&[&fill_usm]))?;
    let patch = graph.add(|h| h.fill_buffer(&a, &[9, 9], 16, 32), NodeProperties::new().depends_on(&[&write]))?;
    let copy = graph.add(|h| h.copy_buffer(&a, &b, 0, 0, 256), NodeProperties::new().depends_on(&[&patch]))?;
    let region = RectRegion::new(8, 4, 1);
    let layout = RectLayout { origin: RectOffset::default(), row_pitch: 16, slice_pitch: 64 };
    let copy_rect = graph
        .add(|h| h.copy_buffer_rect(&b, &rect, layout, layout, region), NodeProperties::new().depends_on(&[&copy]))?;
    let read_back =
        graph.add(|h| h.read_buffer(&b, 0, 256, back.ptr()), NodeProperties::new().depends_on(&[&copy_rect]))?;
    graph.add(
        |h| h.prefetch(back.ptr(), 256, MigrationFlags::DEVICE_TO_HOST),
        NodeProperties::new().depends_on(&[&read_back]),
    )?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let mut expected: Vec<u8> = [1u8, 2, 3, 4].iter().copied().cycle().take(256).collect();
    expected[16..48].fill(9);
    for _ in 0..2 {
        queue.write_buffer(&rect, 0, &[0u8; 256], &[])?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(read::<u8>(&queue, back.ptr(), 256)?, expected);
        let got_rect = read_buffer::<u8>(&queue, &rect, 0, 256)?;
        for row in 0..4 {
            check_eq!(got_rect[row * 16..row * 16 + 8], expected[row * 16..row * 16 + 8], "rect row {row}");
            check!(got_rect[row * 16 + 8..row * 16 + 16].iter().all(|b| *b == 0), "rect row {row} overran");
        }
    }
    Ok(())
}

/// A graph can grow after finalize and be finalized again; each
/// executable graph keeps its own topology.
fn finalize_again_after_adding(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(16)?;
    let kernel = env.kernel("increment")?;
    let graph = new_graph(env)?;
    let fill = graph.add(|h| h.fill(mem.ptr(), &[0], 64), NodeProperties::new())?;
    let first = graph.finalize(FinalizeProperties::default())?;
    // SAFETY: 16 items, 16 elements.
    unsafe { kernel_node(&graph, &kernel, &[16], &[KernelArg::Pointer(mem.ptr())], &[&fill])? };
    let second = graph.finalize(FinalizeProperties::default())?;
    check_eq!((first.node_count(), second.node_count()), (1, 2));
    queue.enqueue_graph(&second, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![1; 16]);
    write(&queue, mem.ptr(), &[5u32; 16])?;
    queue.enqueue_graph(&first, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), 16)?, vec![0; 16]);
    Ok(())
}

/// Twenty submissions alternating between two queues: executions of one
/// graph never overlap (two overlapping read-modify-writes of an element
/// would lose increments), so the count is exact.
fn submissions_never_overlap(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_queue(env)?, sycl_queue(env)?);
    let mem = env.usm_u32(1024)?;
    write(&q1, mem.ptr(), &[0u32; 1024])?;
    let kernel = env.kernel("increment")?;
    let graph = new_graph(env)?;
    let mut prev: Vec<cmdbuf_runtime::graph::Node> = Vec::new();
    for _ in 0..4 {
        let deps: Vec<&cmdbuf_runtime::graph::Node> = prev.iter().collect();
        // SAFETY: 1024 items, 1024 elements.
        let node = unsafe { kernel_node(&graph, &kernel, &[1024], &[KernelArg::Pointer(mem.ptr())], &deps)? };
        prev = vec![node];
    }
    let exec = graph.finalize(FinalizeProperties::default())?;
    let mut events = Vec::new();
    for i in 0..20 {
        let q = if i % 2 == 0 { &q1 } else { &q2 };
        events.push(q.enqueue_graph(&exec, &[])?);
    }
    cmdbuf_runtime::Event::wait_all(&events.iter().collect::<Vec<_>>())?;
    check_eq!(read::<u32>(&q1, mem.ptr(), 1024)?, vec![80u32; 1024]);
    Ok(())
}

/// Ten submissions back to back on one in-order queue (which follow each
/// other without waiting on events), then ten on a second queue and five on
/// an out-of-order one: each waits for the previous, so no increment is lost.
fn back_to_back_submissions_then_another_queue(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_queue(env)?, sycl_queue(env)?);
    let q3 = if env.device().info().out_of_order_queues { sycl_ooo_queue(env)? } else { sycl_queue(env)? };
    let mem = env.usm_u32(1024)?;
    write(&q1, mem.ptr(), &[0u32; 1024])?;
    let kernel = env.kernel("increment")?;
    let graph = new_graph(env)?;
    // SAFETY: 1024 items, 1024 elements.
    let first = unsafe { kernel_node(&graph, &kernel, &[1024], &[KernelArg::Pointer(mem.ptr())], &[])? };
    // SAFETY: as above.
    unsafe { kernel_node(&graph, &kernel, &[1024], &[KernelArg::Pointer(mem.ptr())], &[&first])? };
    let exec = graph.finalize(FinalizeProperties::default())?;
    check_eq!(exec.partitions().len(), 1);
    let mut events = Vec::new();
    for q in std::iter::repeat_n(&q1, 10).chain(std::iter::repeat_n(&q2, 10)).chain(std::iter::repeat_n(&q3, 5)) {
        events.push(q.enqueue_graph(&exec, &[])?);
    }
    cmdbuf_runtime::Event::wait_all(&events.iter().collect::<Vec<_>>())?;
    check_eq!(read::<u32>(&q1, mem.ptr(), 1024)?, vec![50u32; 1024]);
    Ok(())
}

/// A finalized graph of one node incrementing the `N` elements of `mem`.
fn increment_graph(env: &Env, mem: &UsmAllocation) -> Result<Graph<Executable>, CaseError> {
    let kernel = env.kernel("increment")?;
    let graph = new_graph(env)?;
    // SAFETY: N items, N elements.
    unsafe { kernel_node(&graph, &kernel, &[N], &[KernelArg::Pointer(mem.ptr())], &[])? };
    Ok(graph.finalize(FinalizeProperties::default())?)
}

/// A submission on another queue waits for the graph's previous submission
/// on an in-order queue (a one-partition graph leaves that to its command
/// buffer, whose submissions run one at a time across queues): held back
/// there behind a gated fill, it holds the other queue's submission too. And
/// it waits for nothing else of that queue: a command submitted there after
/// the graph, held back by a second gate, does not hold it.
fn another_queue_waits_for_the_graph_only(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_queue(env)?, sycl_queue(env)?);
    let mem = env.usm_u32(N)?;
    let other = env.usm_u32(N)?;
    write(&q1, mem.ptr(), &[0u32; N])?;
    let exec = increment_graph(env, &mem)?;
    let gate = UserEvent::new(env.context())?;
    q1.usm_fill(mem.ptr(), &10u32.to_le_bytes(), N * 4, &[&gate.event().clone().into()])?;
    q1.enqueue_graph(&exec, &[])?;
    q1.enqueue_graph(&exec, &[])?;
    let second = q2.enqueue_graph(&exec, &[])?;
    std::thread::sleep(SETTLE);
    let overtook = second.status()?.is_terminal();
    gate.complete()?;
    check!(!overtook, "a submission on another queue overtook the graph's previous one");
    second.wait()?;
    check_eq!(read::<u32>(&q2, mem.ptr(), N)?, vec![13u32; N]);
    q1.enqueue_graph(&exec, &[])?;
    let later = UserEvent::new(env.context())?;
    q1.usm_fill(other.ptr(), &1u32.to_le_bytes(), N * 4, &[&later.event().clone().into()])?;
    let third = q2.enqueue_graph(&exec, &[])?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !third.status()?.is_terminal() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let ended = third.status()?.is_terminal();
    later.complete()?;
    q1.finish()?;
    check!(ended, "the graph's submission waited for a command submitted after its previous one on that queue");
    third.wait()?;
    check_eq!(read::<u32>(&q2, mem.ptr(), N)?, vec![15u32; N]);
    Ok(())
}

/// A submission waits for its wait list; its event completes after it.
fn wait_events_gate_the_graph(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    let graph = new_graph(env)?;
    d.add_to(&graph)?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let gate = UserEvent::new(env.context())?;
    let run = queue.enqueue_graph(&exec, &[&gate.event().clone().into()])?;
    std::thread::sleep(SETTLE);
    check!(!run.status()?.is_terminal(), "the graph ran before its wait event completed");
    gate.complete()?;
    run.wait()?;
    check_eq!(run.status()?, EventStatus::Complete);
    d.check(&queue, 1)
}

/// On an in-order queue the graph runs after what came before and before
/// what comes after.
fn in_order_queue_orders_around_the_graph(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(N)?;
    let out = env.usm_u32(N)?;
    let exec = increment_graph(env, &mem)?;
    let gate = UserEvent::new(env.context())?;
    queue.usm_fill(mem.ptr(), &41u32.to_le_bytes(), N * 4, &[&gate.event().clone().into()])?;
    queue.enqueue_graph(&exec, &[])?;
    let copy = queue.usm_memcpy(out.ptr(), mem.ptr(), N * 4, &[])?;
    std::thread::sleep(SETTLE);
    check!(!copy.status()?.is_terminal());
    gate.complete()?;
    copy.wait()?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![42u32; N]);
    Ok(())
}

fn cycles_are_refused(env: &Env) -> CaseResult {
    let graph = new_graph(env)?;
    let nodes: Vec<_> = (0..5).map(|_| graph.add_empty(NodeProperties::new())).collect::<Result<_, _>>()?;
    for w in nodes.windows(2) {
        graph.make_edge(&w[0], &w[1])?;
    }
    check_err!(graph.make_edge(&nodes[2], &nodes[2]), InvalidGraph);
    check_err!(graph.make_edge(&nodes[1], &nodes[0]), InvalidGraph);
    check_err!(graph.make_edge(&nodes[4], &nodes[0]), InvalidGraph);
    let Err(e) = graph.make_edge(&nodes[3], &nodes[1]) else {
        return Err(CaseError::Fail("an edge closing a cycle was accepted".into()));
    };
    check!(e.to_string().contains("node 3") && e.to_string().contains("cycle"), "{e}");
    check_eq!(graph.edge_count(), 4, "a refused edge changes nothing");
    check!(nodes[0].predecessors().is_empty());
    graph.make_edge(&nodes[0], &nodes[4])?;
    graph.finalize(FinalizeProperties::default())?;
    Ok(())
}

fn no_cycle_check_defers_to_finalize(env: &Env) -> CaseResult {
    let graph =
        Graph::new(env.context(), env.device(), GraphProperties { no_cycle_check: true, ..Default::default() })?;
    let a = graph.add_empty(NodeProperties::new())?;
    let b = graph.add_empty(NodeProperties::new().depends_on(&[&a]))?;
    graph.make_edge(&b, &a)?;
    check_eq!(graph.edge_count(), 2);
    check_err!(graph.finalize(FinalizeProperties::default()), InvalidGraph);
    check_err!(graph.make_edge(&a, &a), InvalidGraph);
    Ok(())
}

fn nodes_of_another_graph(env: &Env) -> CaseResult {
    let (g1, g2) = (new_graph(env)?, new_graph(env)?);
    let a = g1.add_empty(NodeProperties::new())?;
    let b = g2.add_empty(NodeProperties::new())?;
    check_err!(g1.make_edge(&a, &b), InvalidGraph);
    check_err!(g2.make_edge(&a, &b), InvalidGraph);
    check_err!(g1.add_empty(NodeProperties::new().depends_on(&[&b])), InvalidGraph);
    check_err!(g1.add(|h| h.depends_on(&b).map(|_| ()), NodeProperties::new()), InvalidGraph);
    check_eq!((g1.node_count(), g2.node_count()), (1, 1));
    Ok(())
}

fn one_command_per_group(env: &Env) -> CaseResult {
    let mem = env.usm_u32(4)?;
    let graph = new_graph(env)?;
    check_err!(
        graph.add(
            |h| {
                h.memset(mem.ptr(), 1, 16)?;
                h.memset(mem.ptr(), 2, 16)
            },
            NodeProperties::new()
        ),
        InvalidOperation
    );
    check_err!(
        graph.add(
            |h| {
                h.host_task(|| {})?;
                h.memset(mem.ptr(), 2, 16)
            },
            NodeProperties::new()
        ),
        InvalidOperation
    );
    check_err!(graph.add(|h| h.barrier(), NodeProperties::new()), InvalidOperation);
    check_eq!(graph.node_count(), 0);
    // An error of the closure itself also adds nothing.
    check_err!(
        graph.add(|_| Err(cmdbuf::UrError::InvalidValue(cmdbuf::Detail::msg("mine"))), NodeProperties::new()),
        InvalidValue
    );
    check_eq!(graph.node_count(), 0);
    Ok(())
}

/// Memory commands and launches are checked as for command buffers.
fn commands_are_validated(env: &Env) -> CaseResult {
    let mem = env.usm_u32(16)?;
    let other = env.usm_u32(16)?;
    let kernel = env.kernel("fill")?;
    let graph = new_graph(env)?;
    let props = NodeProperties::new;
    check_err!(graph.add(|h| h.memcpy(other.ptr(), mem.ptr(), 65), props()), InvalidSize);
    check_err!(graph.add(|h| h.memcpy(other.ptr(), mem.ptr(), 0), props()), InvalidSize);
    check_err!(graph.add(|h| h.memcpy(mem.ptr().byte_add(4), mem.ptr(), 8), props()), OverlappingRegions);
    check_err!(graph.add(|h| h.fill(cmdbuf::UsmPtr::from_addr(8), &[1], 4), props()), InvalidValue);
    check_err!(graph.add(|h| h.fill(mem.ptr(), &[1, 2, 3], 64), props()), InvalidSize);
    let args = [KernelArg::Pointer(mem.ptr())];
    let launch = cmdbuf::KernelLaunch::new(&kernel, &[16], &args);
    // SAFETY: refused before anything runs: `fill` takes two arguments.
    check_err!(graph.add(|h| unsafe { h.launch(&launch) }, props()), InvalidKernelArgumentIndex);
    let value = 1u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&value)];
    let launch = cmdbuf::KernelLaunch::new(&kernel, &[16], &args).local_size(&[5]);
    // SAFETY: refused: 16 is not a multiple of 5.
    check_err!(graph.add(|h| unsafe { h.launch(&launch) }, props()), InvalidWorkGroupSize);
    check_eq!(graph.node_count(), 0);
    Ok(())
}

/// 100,000 nodes whose edges are made back to front (the worst case of a
/// one-sided cycle search), cycles refused, then finalized and run.
fn cycle_check_scales_to_100k_nodes(env: &Env) -> CaseResult {
    const NODES: usize = 100_000;
    let graph = new_graph(env)?;
    let nodes: Vec<_> = (0..NODES).map(|_| graph.add_empty(NodeProperties::new())).collect::<Result<_, _>>()?;
    for i in (0..NODES - 1).rev() {
        graph.make_edge(&nodes[i + 1], &nodes[i])?;
    }
    // Forward edges along the chain's direction, spread over it.
    let mut x = 12345u64;
    for _ in 0..NODES {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let a = (x >> 33) as usize % NODES;
        let b = (x >> 13) as usize % NODES;
        if a > b {
            graph.make_edge(&nodes[a], &nodes[b])?;
        }
    }
    check_err!(graph.make_edge(&nodes[0], &nodes[NODES - 1]), InvalidGraph);
    check_err!(graph.make_edge(&nodes[NODES / 2], &nodes[NODES / 2 + 7]), InvalidGraph);
    check_eq!(graph.root_nodes(), vec![nodes[NODES - 1].clone()]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    sycl_queue(env)?.enqueue_graph(&exec, &[])?.wait()?;
    Ok(())
}

/// Depth-first and breadth-first orders give the same results and partitions.
fn execution_orders(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let d = Diamond::new(env, N)?;
    let graph = new_graph(env)?;
    d.add_to(&graph)?;
    for order in [ExecutionOrder::DepthFirst, ExecutionOrder::BreadthFirst] {
        d.init(&queue)?;
        let exec = graph.finalize(FinalizeProperties { order, ..Default::default() })?;
        check_eq!(exec.properties().order, order);
        check_eq!(exec.partitions().len(), 1);
        queue.enqueue_graph(&exec, &[])?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&queue, 2)?;
    }
    Ok(())
}

/// A partition that is one chain gets an in-order command buffer, unless
/// profiling is on; a diamond does not.
fn in_order_hint(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(N)?;
    write(&queue, mem.ptr(), &vec![0u32; N])?;
    let kernel = env.kernel("increment")?;
    let graph = new_graph(env)?;
    let mut prev: Vec<cmdbuf_runtime::graph::Node> = Vec::new();
    for _ in 0..5 {
        // SAFETY: N items, N elements.
        let node = unsafe {
            kernel_node(&graph, &kernel, &[N], &[KernelArg::Pointer(mem.ptr())], &prev.iter().collect::<Vec<_>>())?
        };
        prev = vec![node];
    }
    let exec = graph.finalize(FinalizeProperties::default())?;
    check!(exec.partitions()[0].in_order, "{:?}", exec.partitions());
    queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![5u32; N]);
    let profiled = graph.finalize(FinalizeProperties { enable_profiling: true, ..Default::default() })?;
    check!(!profiled.partitions()[0].in_order);
    let d = Diamond::new(env, N)?;
    let diamond = new_graph(env)?;
    d.add_to(&diamond)?;
    check!(!diamond.finalize(FinalizeProperties::default())?.partitions()[0].in_order);
    Ok(())
}

/// Submission events have timestamps only with `enable_profiling`.
fn profiling_property(env: &Env) -> CaseResult {
    let queue = sycl_queue_with(env, QueueProperties { out_of_order: false, profiling: true })?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    let graph = new_graph(env)?;
    d.add_to(&graph)?;
    let host = env.usm_u32(1)?;
    graph.add(|h| h.host_task(|| {}), NodeProperties::new().depends_on_all_leaves())?;
    graph.add(|h| h.memset(host.ptr(), 0, 4), NodeProperties::new().depends_on_all_leaves())?;
    let plain = graph.finalize(FinalizeProperties::default())?;
    let profiled = graph.finalize(FinalizeProperties { enable_profiling: true, ..Default::default() })?;
    check_eq!(profiled.partitions().len(), 3);
    let event = queue.enqueue_graph(&plain, &[])?;
    event.wait()?;
    check_err!(event.profiling_info(), ProfilingInfoNotAvailable);
    let event = queue.enqueue_graph(&profiled, &[])?;
    event.wait()?;
    let info = event.profiling_info()?;
    check!(info.submit <= info.start && info.start <= info.end, "{info:?}");
    // A single-partition graph as well.
    let single = new_graph(env)?;
    d.add_to(&single)?;
    let exec = single.finalize(FinalizeProperties { enable_profiling: true, ..Default::default() })?;
    let event = queue.enqueue_graph(&exec, &[])?;
    event.wait()?;
    let info = event.profiling_info()?;
    check!(info.start <= info.end, "{info:?}");
    let exec = single.finalize(FinalizeProperties::default())?;
    let event = queue.enqueue_graph(&exec, &[])?;
    event.wait()?;
    check_err!(event.profiling_info(), ProfilingInfoNotAvailable);
    Ok(())
}

/// Graphs are tied to their context and device.
fn objects_of_another_context(env: &Env) -> CaseResult {
    let other_view = if env.device().is_emulated() { env.device().native() } else { env.device().emulated() };
    check_err!(Graph::new(env.context(), &other_view, GraphProperties::default()), InvalidDevice);
    let graph = new_graph(env)?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let other = Context::new(env.device())?;
    let queue = Queue::new(&other, QueueProperties::default())?;
    check_err!(queue.enqueue_graph(&exec, &[]), InvalidQueue);
    let foreign =
        Graph::new(&other, env.device(), GraphProperties::default())?.finalize(FinalizeProperties::default())?;
    check_err!(graph.add(|h| h.subgraph(&foreign), NodeProperties::new()), InvalidContext);
    let from_queue = Graph::from_queue(&sycl_queue(env)?, GraphProperties::default())?;
    check!(from_queue.context() == env.context() && from_queue.device() == env.device());
    Ok(())
}

fn print_graph_writes_dot(env: &Env) -> CaseResult {
    let d = Diamond::new(env, N)?;
    let graph = new_graph(env)?;
    d.add_to(&graph)?;
    graph.add(|h| h.host_task(|| {}), NodeProperties::new().depends_on_all_leaves())?;
    let dir = std::env::temp_dir();
    let path = dir.join(format!("cmdbuf-conformance-graph-{}-{}.dot", std::process::id(), graph.id()));
    graph.print_graph(&path, false)?;
    let text = std::fs::read_to_string(&path).map_err(|e| CaseError::Fail(e.to_string()))?;
    let _ = std::fs::remove_file(&path);
    check!(text.starts_with("digraph"), "{text}");
    check!(text.contains("0: kernel") && text.contains("`increment`") && text.contains("n0 -> n1;"), "{text}");
    check!(text.contains("4: host_task"), "{text}");
    check!(!text.contains("arg 0"), "terse output has no arguments");
    let verbose = graph.to_dot(true);
    check!(verbose.contains(&format!("arg 0: pointer {:#x}", d.a.ptr().addr())), "{verbose}");
    check!(verbose.contains("global [256]"), "{verbose}");
    check_err!(graph.print_graph(dir.join("graph.svg"), false), InvalidValue);
    check_err!(graph.print_graph(dir.join("no-such-dir-for-ur-graphs").join("g.dot"), false), InvalidValue);
    let exec = graph.finalize(FinalizeProperties::default())?;
    let exec_dot = exec.to_dot(true);
    check!(exec_dot.contains("cluster_p0") && exec_dot.contains("partition 1: host task"), "{exec_dot}");
    Ok(())
}

/// Dropping every handle while an execution runs is safe.
fn drop_while_executing(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let d = Diamond::new(env, N)?;
    d.init(&queue)?;
    let gate = UserEvent::new(env.context())?;
    let run = {
        let graph = new_graph(env)?;
        d.add_to(&graph)?;
        let exec = graph.finalize(FinalizeProperties::default())?;
        queue.enqueue_graph(&exec, &[&gate.event().clone().into()])?
    };
    gate.complete()?;
    run.wait()?;
    d.check(&queue, 1)
}

/// Eight threads add nodes to one graph at once, then four submit its
/// executable graph at once: every node is there and every execution ran.
fn threads_build_and_submit(env: &Env) -> CaseResult {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 50;
    let queue = sycl_queue(env)?;
    let counters = env.usm_u32(THREADS)?;
    write(&queue, counters.ptr(), &[0u32; THREADS])?;
    let kernel = env.kernel("increment")?;
    let graph = new_graph(env)?;
    let failures = AtomicU32::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (graph, kernel, failures) = (&graph, &kernel, &failures);
            let ptr = counters.ptr().byte_add(t * 4);
            s.spawn(move || {
                let mut prev: Option<cmdbuf_runtime::graph::Node> = None;
                for _ in 0..PER_THREAD {
                    let deps: Vec<&cmdbuf_runtime::graph::Node> = prev.iter().collect();
                    // SAFETY: one item increments this thread's own counter.
                    match unsafe { kernel_node(graph, kernel, &[1], &[KernelArg::Pointer(ptr)], &deps) } {
                        Ok(n) => prev = Some(n),
                        Err(_) => {
                            failures.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    check_eq!(failures.load(Ordering::SeqCst), 0);
    check_eq!(graph.node_count(), THREADS * PER_THREAD);
    check_eq!(graph.root_nodes().len(), THREADS);
    let exec = Arc::new(graph.finalize(FinalizeProperties::default())?);
    let events = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (exec, events, env) = (&exec, &events, &env);
            s.spawn(move || {
                let q = sycl_queue(env).ok();
                for _ in 0..5 {
                    if let Some(e) = q.as_ref().and_then(|q| q.enqueue_graph(&**exec, &[]).ok()) {
                        events.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    let events = events.into_inner().unwrap();
    check_eq!(events.len(), 20);
    cmdbuf_runtime::Event::wait_all(&events.iter().collect::<Vec<_>>())?;
    check_eq!(read::<u32>(&queue, counters.ptr(), THREADS)?, vec![(20 * PER_THREAD) as u32; THREADS]);
    Ok(())
}
