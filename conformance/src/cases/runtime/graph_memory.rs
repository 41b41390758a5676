//! Graph-owned memory (the newer revision of SYCL graph: `async_malloc` and
//! `async_free` nodes, `get_required_mem_size`): allocations used by the
//! nodes between their malloc and free, explicit and recorded; liveness-based
//! reuse (two allocations whose lifetimes cannot overlap share memory, and
//! the saving is reported); the restrictions the specification names.

use cmdbuf::{KernelArg, KernelLaunch, UsmKind, UsmPtr};
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, Node, NodeProperties, NodeType};

use super::graph_common::{kernel_node, new_graph, sycl_queue};
use crate::harness::{CaseError, CaseResult, Env, read};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_memory";
        graph_owned_allocation,
        lifetimes_that_do_not_overlap_share_memory,
        recorded_allocations,
        allocation_errors,
    ]
}

const N: usize = 256;
const BYTES: usize = 4 * N;

/// Adds an `async_malloc` node of `bytes` device bytes after `deps`.
fn malloc(graph: &Graph, bytes: usize, deps: &[&Node]) -> cmdbuf::Result<(Node, UsmPtr)> {
    let mut ptr = None;
    let node = graph.add(
        |h| {
            ptr = Some(h.async_malloc(UsmKind::Device, bytes)?);
            Ok(())
        },
        NodeProperties::new().depends_on(deps),
    )?;
    Ok((node, ptr.expect("async_malloc returned a pointer")))
}

/// Adds `fill(ptr, value)` then `copy_add(out, ptr, 0)` after `dep`; gives the last.
///
/// # Safety
/// `ptr` and `out` hold N elements while the nodes run.
unsafe fn fill_then_copy(
    env: &Env,
    graph: &Graph,
    ptr: UsmPtr,
    value: u32,
    out: UsmPtr,
    dep: &Node,
) -> Result<Node, CaseError> {
    let (fill, copy_add) = (env.kernel("fill")?, env.kernel("copy_add")?);
    // SAFETY: `ptr` holds N elements while the nodes run (this function's `# Safety`), and `fill` over
    // N writes only those, as `kernel_node` requires.
    let f = unsafe { kernel_node(graph, &fill, &[N], &[KernelArg::Pointer(ptr), KernelArg::value(&value)], &[dep])? };
    let args = [KernelArg::Pointer(out), KernelArg::Pointer(ptr), KernelArg::value(&0u32)];
    // SAFETY: `ptr` and `out` hold N elements while the nodes run (this function's `# Safety`), and
    // `copy_add` over N reaches only those, as `kernel_node` requires.
    unsafe { kernel_node(graph, &copy_add, &[N], &args, &[&f]) }
}

/// A kernel writes a graph-owned allocation between its malloc and free
/// nodes, another copies it out; the graph needs at least its size.
fn graph_owned_allocation(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let out = env.usm_u32(N)?;
    let graph = new_graph(env)?;
    let (m, ptr) = malloc(&graph, BYTES, &[])?;
    check_eq!(m.node_type(), NodeType::AsyncMalloc);
    // SAFETY: the allocation holds N elements until the free node below.
    let last = unsafe { fill_then_copy(env, &graph, ptr, 7, out.ptr(), &m)? };
    let free = graph.add(|h| h.async_free(ptr), NodeProperties::new().depends_on(&[&last]))?;
    check_eq!(free.node_type(), NodeType::AsyncFree);
    let exec = graph.finalize(FinalizeProperties::default())?;
    check!(exec.required_mem_size() >= BYTES, "{}", exec.required_mem_size());
    check_eq!(exec.memory_stats().allocations, 1);
    check_eq!(exec.memory_stats().requested_bytes, BYTES);
    for _ in 0..2 {
        queue.usm_fill(out.ptr(), &[0], BYTES, &[])?.wait()?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![7; N]);
    }
    Ok(())
}

/// A chain malloc A, use, free A, malloc B, use, free B: B is ordered after
/// A's free, so it reuses A's memory and the pool holds one allocation's
/// bytes; C, on a branch not ordered after any free, gets its own memory.
/// Every execution still computes the right values.
fn lifetimes_that_do_not_overlap_share_memory(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let outs = [env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?];
    let graph = new_graph(env)?;
    let (ma, a) = malloc(&graph, BYTES, &[])?;
    // SAFETY: each allocation holds N elements until its free node.
    let used_a = unsafe { fill_then_copy(env, &graph, a, 3, outs[0].ptr(), &ma)? };
    let free_a = graph.add(|h| h.async_free(a), NodeProperties::new().depends_on(&[&used_a]))?;
    let (mb, b) = malloc(&graph, BYTES, &[&free_a])?;
    check_eq!(b, a, "B's lifetime starts after A's ended: same memory");
    // SAFETY: as above.
    let used_b = unsafe { fill_then_copy(env, &graph, b, 4, outs[1].ptr(), &mb)? };
    let free_b = graph.add(|h| h.async_free(b), NodeProperties::new().depends_on(&[&used_b]))?;
    let stats = graph.memory_stats();
    check_eq!((stats.allocations, stats.requested_bytes), (2, 2 * BYTES));
    check_eq!(stats.saved_bytes(), BYTES, "{stats:?}");
    let (mc, c) = malloc(&graph, BYTES, &[&ma])?;
    check!(c != a, "C may be live while A or B is");
    // SAFETY: as above.
    let used_c = unsafe { fill_then_copy(env, &graph, c, 5, outs[2].ptr(), &mc)? };
    graph.add(|h| h.async_free(c), NodeProperties::new().depends_on(&[&used_c, &free_b]))?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let stats = exec.memory_stats();
    check_eq!((stats.allocations, stats.requested_bytes, stats.saved_bytes()), (3, 3 * BYTES, BYTES));
    check_eq!(exec.required_mem_size(), stats.required_bytes);
    check!(exec.required_mem_size() < 3 * BYTES);
    for _ in 0..3 {
        for out in &outs {
            queue.usm_fill(out.ptr(), &[0], BYTES, &[])?.wait()?;
        }
        queue.enqueue_graph(&exec, &[])?.wait()?;
        for (out, value) in outs.iter().zip([3u32, 4, 5]) {
            check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![value; N]);
        }
    }
    Ok(())
}

/// `async_malloc` and `async_free` on a recording in-order queue: the second
/// allocation follows the first one's free and reuses its memory.
fn recorded_allocations(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let out = env.usm_u32(2 * N)?;
    let fill = env.kernel("fill")?;
    let graph = Graph::from_queue(&queue, Default::default())?;
    graph.begin_recording(&queue)?;
    let mut ptrs = Vec::new();
    for (i, value) in [11u32, 12].into_iter().enumerate() {
        let (ptr, event) = queue.async_malloc(UsmKind::Device, BYTES, &[])?;
        check_eq!(cmdbuf_runtime::graph::Node::from_event(&event)?.node_type(), NodeType::AsyncMalloc);
        let args = [KernelArg::Pointer(ptr), KernelArg::value(&value)];
        // SAFETY: N items of the N-element allocation, before its free.
        unsafe { queue.launch_kernel(&KernelLaunch::new(&fill, &[N], &args), &[])? };
        queue.usm_memcpy(out.ptr().byte_add(i * BYTES), ptr, BYTES, &[])?;
        queue.async_free(ptr, &[])?;
        ptrs.push(ptr);
    }
    graph.end_recording();
    check_eq!(ptrs[0], ptrs[1]);
    check_eq!(graph.node_count(), 8);
    let exec = graph.finalize(FinalizeProperties::default())?;
    check_eq!(exec.memory_stats().saved_bytes(), BYTES);
    queue.enqueue_graph(&exec, &[])?.wait()?;
    let got = read::<u32>(&queue, out.ptr(), 2 * N)?;
    check_eq!((&got[..N], &got[N..]), (&vec![11; N][..], &vec![12; N][..]));
    Ok(())
}

/// The restrictions: device memory only, no size 0, frees only of the
/// graph's own allocations and only once, one
/// executable graph at a time, no use as a sub-graph, no whole-graph update.
fn allocation_errors(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let foreign = env.usm_u32(N)?;
    let graph = new_graph(env)?;
    for kind in [UsmKind::Host, UsmKind::Shared] {
        check_err!(graph.add(|h| h.async_malloc(kind, BYTES).map(|_| ()), NodeProperties::new()), InvalidValue);
    }
    check_err!(graph.add(|h| h.async_malloc(UsmKind::Device, 0).map(|_| ()), NodeProperties::new()), InvalidUsmSize);
    check_err!(graph.add(|h| h.async_free(foreign.ptr()), NodeProperties::new()), InvalidValue);
    // Not recording: an eager allocation from the default pool, not a node
    // (`async_alloc::default_pool_eager`).
    let (eager, ready) = queue.async_malloc(UsmKind::Device, BYTES, &[])?;
    ready.wait()?;
    queue.async_free(eager, &[])?.wait()?;
    check_eq!(graph.node_count(), 0, "an eager allocation added a node");
    check_err!(queue.async_free(foreign.ptr(), &[]), InvalidOperation);
    // A command group that fails after its allocation gives the memory back.
    check_err!(
        graph.add(
            |h| {
                let p = h.async_malloc(UsmKind::Device, BYTES)?;
                h.memset(p, 0, BYTES)
            },
            NodeProperties::new(),
        ),
        InvalidOperation
    );
    check_eq!(graph.node_count(), 0);
    let (m, ptr) = malloc(&graph, BYTES, &[])?;
    let free = graph.add(|h| h.async_free(ptr), NodeProperties::new().depends_on(&[&m]))?;
    check_err!(graph.add(|h| h.async_free(ptr), NodeProperties::new().depends_on(&[&free])), InvalidValue);
    check_eq!(graph.memory_stats().required_bytes, BYTES, "the abandoned allocation's memory was reused");

    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    check_err!(graph.finalize(FinalizeProperties::default()), InvalidOperation);
    check_err!(exec.update_from(&graph), InvalidOperation);
    let parent = new_graph(env)?;
    check_err!(parent.add(|h| h.subgraph(&exec), NodeProperties::new()), InvalidOperation);
    parent.begin_recording(&queue)?;
    check_err!(queue.enqueue_graph(&exec, &[]), InvalidOperation);
    parent.end_recording();
    check_eq!(parent.node_count(), 0);
    queue.enqueue_graph(&exec, &[])?.wait()?;
    drop(exec);
    let again = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&again, &[])?.wait()?;
    Ok(())
}
