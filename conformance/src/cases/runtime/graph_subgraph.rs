//! Sub-graphs (SYCL graph "Sub-Graph" examples): an executable graph added
//! as a node of another graph, explicitly or by submitting it to a
//! recording queue; several times, nested, with host tasks inside; the
//! errors of context mismatch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cmdbuf::{Context, KernelArg, KernelLaunch, QueueProperties, UsmAllocation, UsmKind};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{Executable, FinalizeProperties, Graph, NodeProperties, NodeType};

use super::graph_common::{host_addr, host_get, kernel_node, new_graph, sycl_queue};
use crate::harness::{CaseResult, Env, read, write};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_subgraph";
        subgraph_node,
        subgraph_twice_and_nested,
        recorded_subgraph,
        subgraph_with_a_host_task => Requires::HOST_USM,
        subgraph_errors,
    ]
}

const N: usize = 64;

/// `A = (A + 1) * 2` as an executable graph of two kernel nodes.
fn inc_double(env: &Env, a: &UsmAllocation) -> Result<Graph<Executable>, crate::harness::CaseError> {
    let graph = new_graph(env)?;
    let (increment, axpb) = (env.kernel("increment")?, env.kernel("axpb")?);
    // SAFETY: N items of the N-element allocation.
    let inc = unsafe { kernel_node(&graph, &increment, &[N], &[KernelArg::Pointer(a.ptr())], &[])? };
    let args = [KernelArg::Pointer(a.ptr()), KernelArg::value(&2u32), KernelArg::value(&0u32)];
    // SAFETY: as above.
    unsafe { kernel_node(&graph, &axpb, &[N], &args, &[&inc])? };
    Ok(graph.finalize(FinalizeProperties::default())?)
}

fn run(queue: &Queue, exec: &Graph<Executable>) -> CaseResult {
    queue.enqueue_graph(exec, &[])?.wait()?;
    Ok(())
}

/// The specification's example: a fill, the sub-graph, a copy after it;
/// the sub-graph's nodes run between them at every execution.
fn subgraph_node(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (a, b) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let sub = inc_double(env, &a)?;
    let copy_add = env.kernel("copy_add")?;
    let graph = new_graph(env)?;
    let fill = graph.add(|h| h.fill(a.ptr(), &1u32.to_le_bytes(), 4 * N), NodeProperties::new())?;
    let node = graph.add(|h| h.subgraph(&sub), NodeProperties::new().depends_on(&[&fill]))?;
    check_eq!(node.node_type(), NodeType::Subgraph);
    let args = [KernelArg::Pointer(b.ptr()), KernelArg::Pointer(a.ptr()), KernelArg::value(&10u32)];
    // SAFETY: N items of N-element allocations.
    unsafe { kernel_node(&graph, &copy_add, &[N], &args, &[&node])? };
    check_eq!(graph.node_count(), 3);
    let exec = graph.finalize(FinalizeProperties::default())?;
    check_eq!(exec.partitions().len(), 1, "a sub-graph without host tasks is inlined");
    for _ in 0..2 {
        write(&queue, b.ptr(), &[0u32; N])?;
        run(&queue, &exec)?;
        check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![4; N]);
        check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![14; N]);
    }
    // The sub-graph is unchanged and still runs alone.
    check_eq!(sub.node_count(), 2);
    run(&queue, &sub)?;
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![10; N]);
    Ok(())
}

/// The same sub-graph twice in a chain inside a middle graph, which is a
/// sub-graph of the outer one: four applications of `(A + 1) * 2` per run.
fn subgraph_twice_and_nested(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let a = env.usm_u32(N)?;
    let sub = inc_double(env, &a)?;
    let middle = new_graph(env)?;
    let first = middle.add(|h| h.subgraph(&sub), NodeProperties::new())?;
    middle.add(|h| h.subgraph(&sub), NodeProperties::new().depends_on(&[&first]))?;
    let middle = middle.finalize(FinalizeProperties::default())?;
    let outer = new_graph(env)?;
    let reset = outer.add(|h| h.fill(a.ptr(), &[0], 4 * N), NodeProperties::new())?;
    let m1 = outer.add(|h| h.subgraph(&middle), NodeProperties::new().depends_on(&[&reset]))?;
    outer.add(|h| h.subgraph(&middle), NodeProperties::new().depends_on(&[&m1]))?;
    let exec = outer.finalize(FinalizeProperties::default())?;
    let model = (0..4).fold(0u32, |x, _| (x + 1) * 2);
    for _ in 0..2 {
        run(&queue, &exec)?;
        check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![model; N]);
    }
    Ok(())
}

/// Submitting an executable graph to a recording queue records a sub-graph
/// node; an in-order queue orders it between its neighbours.
fn recorded_subgraph(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (a, b) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let sub = inc_double(env, &a)?;
    let cpy = env.kernel("cpy_and_mult")?;
    let graph = Graph::from_queue(&queue, Default::default())?;
    graph.begin_recording(&queue)?;
    let fill = queue.usm_fill(a.ptr(), &3u32.to_le_bytes(), 4 * N, &[])?;
    let node_event = queue.enqueue_graph(&sub, &[&fill])?;
    let args = [KernelArg::Pointer(b.ptr()), KernelArg::Pointer(a.ptr())];
    // SAFETY: N items of N-element allocations.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&cpy, &[N], &args), &[])? };
    graph.end_recording();
    let node = cmdbuf_runtime::graph::Node::from_event(&node_event)?;
    check_eq!(node.node_type(), NodeType::Subgraph);
    check_eq!(node.successors().len(), 1);
    let exec = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![8; N]);
    check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![16; N]);
    Ok(())
}

/// A sub-graph holding a host task splits the outer graph into partitions
/// around it; the host task runs once per outer execution, after the
/// kernel before the sub-graph and before the kernel after it.
fn subgraph_with_a_host_task(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let a = env.usm(UsmKind::Host, 4 * N)?;
    let addr = host_addr(&a)?;
    let increment = env.kernel("increment")?;
    let runs = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(AtomicU32::new(0));
    let sub = new_graph(env)?;
    let (r, s) = (runs.clone(), seen.clone());
    sub.add(
        move |h| {
            h.host_task(move || {
                r.fetch_add(1, Ordering::SeqCst);
                // SAFETY: the allocation holds N elements; the kernel before
                // the sub-graph has finished, the one after has not started.
                s.store(unsafe { host_get(addr, 0) }, Ordering::SeqCst);
            })
        },
        NodeProperties::new(),
    )?;
    let sub = sub.finalize(FinalizeProperties::default())?;
    let graph = new_graph(env)?;
    let k = [KernelArg::Pointer(a.ptr())];
    // SAFETY: N items of the N-element allocation.
    let before = unsafe { kernel_node(&graph, &increment, &[N], &k, &[])? };
    let node = graph.add(|h| h.subgraph(&sub), NodeProperties::new().depends_on(&[&before]))?;
    // SAFETY: as above.
    unsafe { kernel_node(&graph, &increment, &[N], &k, &[&node])? };
    let exec = graph.finalize(FinalizeProperties::default())?;
    let parts = exec.partitions();
    check_eq!(parts.len(), 3, "{parts:?}");
    check!(parts[1].host_task, "{parts:?}");
    write(&queue, a.ptr(), &[0u32; N])?;
    for run_no in 1..=3u32 {
        run(&queue, &exec)?;
        check_eq!(runs.load(Ordering::SeqCst), run_no);
        check_eq!(seen.load(Ordering::SeqCst), 2 * run_no - 1, "the host task saw the kernel before it, not after");
    }
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![6; N]);
    Ok(())
}

/// A sub-graph of another context is `InvalidContext`, explicitly and
/// recorded; an executable graph submitted to a queue of another context is
/// `InvalidQueue`.
fn subgraph_errors(env: &Env) -> CaseResult {
    let foreign_ctx = Context::new(env.device())?;
    let foreign = Graph::new(&foreign_ctx, env.device(), Default::default())?;
    foreign.add_empty(NodeProperties::new())?;
    let foreign = foreign.finalize(FinalizeProperties::default())?;
    let graph = new_graph(env)?;
    check_err!(graph.add(|h| h.subgraph(&foreign), NodeProperties::new()), InvalidContext);
    let queue = sycl_queue(env)?;
    check_err!(queue.enqueue_graph(&foreign, &[]), InvalidQueue);
    graph.begin_recording(&queue)?;
    check_err!(queue.enqueue_graph(&foreign, &[]), InvalidQueue);
    graph.end_recording();
    check_eq!(graph.node_count(), 0);
    let foreign_queue = Queue::new(&foreign_ctx, QueueProperties::default())?;
    foreign_queue.enqueue_graph(&foreign, &[])?.wait()?;
    Ok(())
}
