//! Host tasks in graphs and the partitions they make: the diamond with a
//! host task, the `make_edge` case of the DPC++ design, branches that run
//! concurrently, failures, recorded host tasks.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use cmdbuf::{KernelArg, UserEvent, UsmKind};
use cmdbuf_runtime::graph::{FinalizeProperties, NodeProperties, NodeType};

use super::graph_common::{
    Diamond, ONE, SETTLE, eventually, host_addr, host_get, host_set, host_u32, kernel_node, new_graph, sycl_queue,
};
use crate::harness::{CaseError, CaseResult, Env, read};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_host_task";
        diamond_with_a_host_task => Requires::HOST_USM,
        host_task_between_kernels => Requires::HOST_USM,
        make_edge_moves_a_host_task_after_its_new_dependency => Requires::HOST_USM,
        independent_branches_run_concurrently => Requires::OUT_OF_ORDER,
        host_tasks_only,
        panicking_host_task_fails_the_event,
        host_task_waits_for_the_submission,
        recorded_host_tasks => Requires::HOST_USM,
    ]
}

const N: usize = 64;

/// The diamond with its right branch (`C -= A`) as a host task: three
/// partitions (top and left, the host task, the bottom).
fn diamond_with_a_host_task(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let d = Diamond::new_in(env, N, UsmKind::Host)?;
    d.init(&queue)?;
    let (a, c) = (host_addr(&d.a)?, host_addr(&d.bc)? + N * 4);
    let graph = new_graph(env)?;
    // SAFETY: N items increment the N elements of A.
    let top = unsafe { kernel_node(&graph, &d.increment, &[N], &[KernelArg::Pointer(d.a.ptr())], &[])? };
    // SAFETY: B holds N elements.
    let left = unsafe { d.saxpy_node(&graph, d.b(), ONE, &top)? };
    let right = graph.add(
        move |h| {
            h.host_task(move || {
                for i in 0..N {
                    // SAFETY: A and C hold N elements; the top node has
                    // finished and nothing else touches A or C now.
                    unsafe { host_set(c, i, host_get(c, i).wrapping_sub(host_get(a, i))) };
                }
            })
        },
        NodeProperties::new().depends_on(&[&top]),
    )?;
    check_eq!(right.node_type(), NodeType::HostTask);
    // SAFETY: the diamond's own allocations.
    unsafe { d.bottom_node(&graph, &[&left, &right])? };
    let exec = graph.finalize(FinalizeProperties::default())?;
    let parts = exec.partitions();
    check_eq!(parts.len(), 3, "{parts:?}");
    check!(!parts[0].host_task && parts[1].host_task && !parts[2].host_task, "{parts:?}");
    check_eq!((parts[0].nodes, parts[2].nodes), (2, 1));
    check_eq!(parts[1].depends_on, vec![0]);
    check_eq!(parts[2].depends_on, vec![0, 1]);
    for run in 1..=3 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&queue, run)?;
    }
    Ok(())
}

/// A host task sees what the kernel before it wrote, and the kernel after
/// it sees what it wrote, at every execution.
fn host_task_between_kernels(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, addr) = host_u32(env, &queue, N)?;
    let kernel = env.kernel("increment")?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let graph = new_graph(env)?;
    let arg = [KernelArg::Pointer(mem.ptr())];
    // SAFETY: N items, N elements.
    let first = unsafe { kernel_node(&graph, &kernel, &[N], &arg, &[])? };
    let log = seen.clone();
    let host = graph.add(
        move |h| {
            h.host_task(move || {
                // SAFETY: N elements; the kernel before has finished and the
                // one after has not started.
                let values: Vec<u32> = (0..N).map(|i| unsafe { host_get(addr, i) }).collect();
                log.lock().unwrap().push(values[0]);
                for (i, v) in values.iter().enumerate() {
                    // SAFETY: as above.
                    unsafe { host_set(addr, i, v * 10) };
                }
            })
        },
        NodeProperties::new().depends_on(&[&first]),
    )?;
    // SAFETY: N items, N elements.
    unsafe { kernel_node(&graph, &kernel, &[N], &arg, &[&host])? };
    let exec = graph.finalize(FinalizeProperties::default())?;
    check_eq!(exec.partitions().len(), 3);
    for _ in 0..3 {
        queue.enqueue_graph(&exec, &[])?;
    }
    queue.finish()?;
    // x -> (x + 1) * 10 + 1: 0 -> 11 -> 121 -> 1221.
    check_eq!(*seen.lock().unwrap(), vec![1, 12, 122]);
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![1221u32; N]);
    Ok(())
}

/// The second example of the DPC++ partitioning design: a `make_edge` from
/// a node `E` (behind another host task) into host task `HT1` moves `HT1`,
/// and `D` after it, behind `E`'s partition.
///
/// ```text
/// A -> B -> HT1 -> D        m1 = m0;  m4 = m1 + m3;  m5 = m4
/// A -> HT0 -> E             m2 = m0 + 10;  m3 = m2
/// make_edge(E, HT1)
/// ```
fn make_edge_moves_a_host_task_after_its_new_dependency(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, addr) = host_u32(env, &queue, 8)?;
    let m = |i: usize| mem.ptr().byte_add(i * 4);
    let graph = new_graph(env)?;
    let a = graph.add(|h| h.fill(m(0), &1u32.to_le_bytes(), 4), NodeProperties::new())?;
    let b = graph.add(|h| h.memcpy(m(1), m(0), 4), NodeProperties::new().depends_on(&[&a]))?;
    let ht1 = graph.add(
        // SAFETY: element 1 and 3 are written before (B, and E through the
        // edge made below), element 4 read after (D).
        move |h| h.host_task(move || unsafe { host_set(addr, 4, host_get(addr, 1) + host_get(addr, 3)) }),
        NodeProperties::new().depends_on(&[&b]),
    )?;
    let d = graph.add(|h| h.memcpy(m(5), m(4), 4), NodeProperties::new().depends_on(&[&ht1]))?;
    let ht0 = graph.add(
        // SAFETY: element 0 is written before (A), element 2 read after (E).
        move |h| h.host_task(move || unsafe { host_set(addr, 2, host_get(addr, 0) + 10) }),
        NodeProperties::new().depends_on(&[&a]),
    )?;
    let e = graph.add(|h| h.memcpy(m(3), m(2), 4), NodeProperties::new().depends_on(&[&ht0]))?;
    let before = graph.finalize(FinalizeProperties::default())?;
    check_eq!(before.partitions().len(), 5);
    graph.make_edge(&e, &ht1)?;
    check_eq!(ht1.predecessors(), vec![b.clone(), e.clone()]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    let parts = exec.partitions();
    check_eq!(parts.len(), 5, "{parts:?}");
    // In submission order: {A, B}, HT0, {E}, HT1, {D}.
    let kinds: Vec<(bool, usize)> = parts.iter().map(|p| (p.host_task, p.nodes)).collect();
    check_eq!(kinds, vec![(false, 2), (true, 1), (false, 1), (true, 1), (false, 1)]);
    check_eq!(parts[3].depends_on, vec![0, 2], "HT1 waits for A, B and for E");
    check_eq!(parts[4].depends_on, vec![3]);
    check_eq!(d.predecessors(), vec![ht1]);
    for _ in 0..3 {
        queue.usm_fill(mem.ptr(), &[0], 32, &[])?.wait()?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(read::<u32>(&queue, mem.ptr(), 6)?, vec![1, 1, 11, 11, 12, 12]);
    }
    Ok(())
}

/// Two branches with a host task each: the first branch's host task waits
/// for the second's, which only works if neither branch waits for the
/// other (the multi-root case of the DPC++ design).
fn independent_branches_run_concurrently(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(2 * N)?;
    let flag = Arc::new(AtomicBool::new(false));
    let waited = Arc::new(AtomicU32::new(0));
    let graph = new_graph(env)?;
    let fill_a = graph.add(|h| h.fill(mem.ptr(), &[1], N * 4), NodeProperties::new())?;
    let (f, w) = (flag.clone(), waited.clone());
    let host_a = graph.add(
        move |h| {
            h.host_task(move || {
                if eventually(|| f.load(Ordering::SeqCst)) {
                    w.fetch_add(1, Ordering::SeqCst);
                }
                f.store(false, Ordering::SeqCst);
            })
        },
        NodeProperties::new().depends_on(&[&fill_a]),
    )?;
    graph.add(|h| h.fill(mem.ptr(), &[2], N * 4), NodeProperties::new().depends_on(&[&host_a]))?;
    let fill_b = graph.add(|h| h.fill(mem.ptr().byte_add(N * 4), &[3], N * 4), NodeProperties::new())?;
    let f = flag.clone();
    let host_b = graph.add(
        move |h| h.host_task(move || f.store(true, Ordering::SeqCst)),
        NodeProperties::new().depends_on(&[&fill_b]),
    )?;
    graph.add(|h| h.fill(mem.ptr().byte_add(N * 4), &[4], N * 4), NodeProperties::new().depends_on(&[&host_b]))?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let parts = exec.partitions();
    check_eq!(parts.len(), 6, "{parts:?}");
    check_eq!(parts.iter().filter(|p| p.depends_on.is_empty()).count(), 2, "two roots: {parts:?}");
    for run in 1..=2 {
        queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(waited.load(Ordering::SeqCst), run, "branch A's host task never saw branch B's");
    }
    let got = read::<u8>(&queue, mem.ptr(), 2 * N * 4)?;
    check!(got[..N * 4].iter().all(|b| *b == 2) && got[N * 4..].iter().all(|b| *b == 4));
    Ok(())
}

/// A graph of host tasks only runs them in order, every time.
fn host_tasks_only(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let order = Arc::new(Mutex::new(Vec::new()));
    let graph = new_graph(env)?;
    let mut prev: Vec<cmdbuf_runtime::graph::Node> = Vec::new();
    for i in 0..3u32 {
        let log = order.clone();
        let deps: Vec<&cmdbuf_runtime::graph::Node> = prev.iter().collect();
        let node = graph.add(
            move |h| {
                h.host_task(move || {
                    std::thread::sleep(std::time::Duration::from_millis(2 * (3 - i as u64)));
                    log.lock().unwrap().push(i);
                })
            },
            NodeProperties::new().depends_on(&deps),
        )?;
        prev = vec![node];
    }
    let exec = graph.finalize(FinalizeProperties::default())?;
    check_eq!(exec.partitions().len(), 3);
    queue.enqueue_graph(&exec, &[])?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(*order.lock().unwrap(), vec![0, 1, 2, 0, 1, 2]);
    Ok(())
}

/// A panicking host task makes the submission's event report the panic;
/// the nodes after it still run (dependencies order, they do not
/// propagate failure), and the next submission runs afresh.
fn panicking_host_task_fails_the_event(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(N)?;
    let graph = new_graph(env)?;
    let fill = graph.add(|h| h.fill(mem.ptr(), &[1], N * 4), NodeProperties::new())?;
    let bomb =
        graph.add(|h| h.host_task(|| panic!("graph host task failure")), NodeProperties::new().depends_on(&[&fill]))?;
    graph.add(|h| h.fill(mem.ptr(), &[2], N * 4), NodeProperties::new().depends_on(&[&bomb]))?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    for _ in 0..2 {
        let event = queue.enqueue_graph(&exec, &[])?;
        let err = match event.wait() {
            Err(e @ cmdbuf::UrError::AdapterSpecific(_)) => e,
            other => return Err(CaseError::Fail(format!("expected AdapterSpecific, got {other:?}"))),
        };
        check!(err.to_string().contains("graph host task failure"), "{err}");
        check_eq!(event.status()?, cmdbuf::EventStatus::Error);
        check_eq!(read::<u8>(&queue, mem.ptr(), N * 4)?, vec![2u8; N * 4]);
    }
    check_err!(queue.enqueue_graph(&exec, &[])?.wait(), AdapterSpecific);
    Ok(())
}

/// Host tasks of a gated submission wait for the gate.
fn host_task_waits_for_the_submission(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let ran = Arc::new(AtomicU32::new(0));
    let graph = new_graph(env)?;
    let counter = ran.clone();
    graph.add(
        move |h| {
            h.host_task(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })
        },
        NodeProperties::new(),
    )?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let gate = UserEvent::new(env.context())?;
    let event = queue.enqueue_graph(&exec, &[&gate.event().clone().into()])?;
    std::thread::sleep(SETTLE);
    check_eq!(ran.load(Ordering::SeqCst), 0, "the host task ran before the submission's wait list completed");
    gate.complete()?;
    event.wait()?;
    check_eq!(ran.load(Ordering::SeqCst), 1);
    Ok(())
}

/// `enqueue_host_fn` on a recording queue records a host task that runs
/// at every replay, between the commands recorded around it.
fn recorded_host_tasks(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, addr) = host_u32(env, &queue, 4)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    queue.usm_fill(mem.ptr(), &6u32.to_le_bytes(), 16, &[])?;
    let log = seen.clone();
    let task = queue.enqueue_host_fn(&[], move || {
        // SAFETY: 4 elements; the fill before has finished, the copy after has not started.
        let v = unsafe { host_get(addr, 0) };
        log.lock().unwrap().push(v);
        // SAFETY: as above.
        unsafe { host_set(addr, 0, v + 1) };
    })?;
    queue.usm_memcpy(mem.ptr().byte_add(4), mem.ptr(), 4, &[])?;
    graph.end_recording();
    check_eq!(cmdbuf_runtime::graph::Node::from_event(&task)?.node_type(), NodeType::HostTask);
    let exec = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&exec, &[])?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(*seen.lock().unwrap(), vec![6, 6]);
    check_eq!(read::<u32>(&queue, mem.ptr(), 2)?, vec![7, 7]);
    Ok(())
}
