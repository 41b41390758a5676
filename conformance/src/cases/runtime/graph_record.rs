//! Queue recording ("record & replay"): submissions become nodes, edges
//! come from wait lists and in-order queues, transitive recording,
//! barriers, and every error the specification names for recording mode.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cmdbuf::{
    CommandBufferDesc, Context, KernelArg, KernelLaunch, MigrationFlags, QueueProperties, UsmAdvice, UsmKind,
};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::QueueState;
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, Node, NodeProperties, NodeType};

use super::graph_common::{Diamond, MINUS_ONE, ONE, new_graph, sycl_ooo_queue, sycl_queue};
use crate::harness::{CaseError, CaseResult, Env, read, read_buffer, write};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_record";
        diamond_from_two_queues,
        in_order_queue_records_a_chain,
        out_of_order_queue_records_wait_lists => Requires::OUT_OF_ORDER,
        barriers => Requires::OUT_OF_ORDER,
        barrier_after_many_commands => Requires::OUT_OF_ORDER,
        transitive_recording,
        every_operation_records,
        replay_with_new_inputs,
        recorded_and_explicit_nodes,
        recorded_events_do_not_execute,
        recorded_events_stay_in_their_graph,
        recording_state_errors,
        dropping_the_graph_ends_recording,
        begin_and_end_several_queues,
        capture_and_recording_exclude_each_other,
    ]
}

const N: usize = 128;

fn pred_set(node: &Node) -> HashSet<usize> {
    node.predecessors().iter().map(Node::index).collect()
}

/// The diamond recorded from two in-order queues: the right branch waits
/// on the top's event from the other queue, the bottom on the right's.
fn diamond_from_two_queues(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_queue(env)?, sycl_queue(env)?);
    let d = Diamond::new(env, N)?;
    d.init(&q1)?;
    let graph = new_graph(env)?;
    graph.begin_recording_all(&[&q1, &q2])?;
    check_eq!((q1.recording_state(), q2.recording_state()), (QueueState::Recording, QueueState::Recording));
    let a = [KernelArg::Pointer(d.a.ptr())];
    // SAFETY: N items over N-element allocations (2N for the bottom).
    let top = unsafe { q1.launch_kernel(&KernelLaunch::new(&d.increment, &[N], &a), &[])? };
    let left_args =
        [KernelArg::Pointer(d.b()), KernelArg::value(&ONE), KernelArg::Pointer(d.a.ptr()), KernelArg::Pointer(d.b())];
    // SAFETY: as above.
    let left = unsafe { q1.launch_kernel(&KernelLaunch::new(&d.saxpy, &[N], &left_args), &[])? };
    let right_args = [
        KernelArg::Pointer(d.c()),
        KernelArg::value(&MINUS_ONE),
        KernelArg::Pointer(d.a.ptr()),
        KernelArg::Pointer(d.c()),
    ];
    // SAFETY: as above.
    let right = unsafe { q2.launch_kernel(&KernelLaunch::new(&d.saxpy, &[N], &right_args), &[&top])? };
    let bottom_args = [KernelArg::Pointer(d.bc.ptr()), KernelArg::value(&ONE), KernelArg::value(&MINUS_ONE)];
    // SAFETY: as above.
    let bottom = unsafe { q1.launch_kernel(&KernelLaunch::new(&d.axpb, &[2 * N], &bottom_args), &[&right])? };
    graph.end_recording();
    check_eq!(q1.recording_state(), QueueState::Executing);
    let nodes: Vec<Node> =
        [&top, &left, &right, &bottom].iter().map(|e| Node::from_event(e)).collect::<Result<_, _>>()?;
    check_eq!(nodes.iter().map(Node::index).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    check_eq!(pred_set(&nodes[1]), HashSet::from([0]));
    check_eq!(pred_set(&nodes[2]), HashSet::from([0]));
    check_eq!(pred_set(&nodes[3]), HashSet::from([1, 2]));
    check_eq!(graph.root_nodes(), vec![nodes[0].clone()]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    for run in 1..=2 {
        q1.enqueue_graph(&exec, &[])?.wait()?;
        d.check(&q1, run)?;
    }
    Ok(())
}

/// Every command of an in-order queue depends on the one before.
fn in_order_queue_records_a_chain(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(N)?;
    let out = env.usm_u32(N)?;
    let graph = Graph::from_queue(&queue, GraphProperties::default())?;
    graph.begin_recording(&queue)?;
    let e0 = queue.usm_fill(mem.ptr(), &3u32.to_le_bytes(), N * 4, &[])?;
    let e1 = queue.usm_fill(mem.ptr(), &4u32.to_le_bytes(), N * 2, &[])?;
    let e2 = queue.events_wait(&[])?;
    let e3 = queue.usm_memcpy(out.ptr(), mem.ptr(), N * 4, &[])?;
    graph.end_recording_queue(&queue)?;
    let nodes: Vec<Node> = [&e0, &e1, &e2, &e3].iter().map(|e| Node::from_event(e)).collect::<Result<_, _>>()?;
    for w in nodes.windows(2) {
        check_eq!(w[1].predecessors(), vec![w[0].clone()]);
    }
    check_eq!(nodes[2].node_type(), NodeType::Empty);
    let exec = graph.finalize(FinalizeProperties::default())?;
    check!(exec.partitions()[0].in_order, "a recorded chain is in order");
    queue.enqueue_graph(&exec, &[])?.wait()?;
    let got = read::<u32>(&queue, out.ptr(), N)?;
    check_eq!(got[..N / 2], vec![4u32; N / 2][..]);
    check_eq!(got[N / 2..], vec![3u32; N / 2][..]);
    Ok(())
}

/// On an out-of-order queue only wait lists make edges.
fn out_of_order_queue_records_wait_lists(env: &Env) -> CaseResult {
    let queue = sycl_ooo_queue(env)?;
    let (a, b, out) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(2 * N)?);
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let fa = queue.usm_fill(a.ptr(), &5u32.to_le_bytes(), N * 4, &[])?;
    let fb = queue.usm_fill(b.ptr(), &6u32.to_le_bytes(), N * 4, &[])?;
    let ca = queue.usm_memcpy(out.ptr(), a.ptr(), N * 4, &[&fa])?;
    let cb = queue.usm_memcpy(out.ptr().byte_add(N * 4), b.ptr(), N * 4, &[&fb, &fa])?;
    graph.end_recording();
    let (na, nb) = (Node::from_event(&fa)?, Node::from_event(&fb)?);
    check!(na.predecessors().is_empty() && nb.predecessors().is_empty());
    check_eq!(Node::from_event(&ca)?.predecessors(), vec![na.clone()]);
    check_eq!(Node::from_event(&cb)?.predecessors(), vec![nb, na]);
    check_eq!(graph.root_nodes().len(), 2);
    let exec = graph.finalize(FinalizeProperties::default())?;
    sycl_queue(env)?.enqueue_graph(&exec, &[])?.wait()?;
    let expected: Vec<u32> = [vec![5u32; N], vec![6u32; N]].concat();
    check_eq!(read::<u32>(&sycl_queue(env)?, out.ptr(), 2 * N)?, expected);
    Ok(())
}

/// A barrier with an empty wait list waits for the leaves recorded from its
/// own queue, and only that queue's later commands wait for it; with a wait
/// list it waits for those events.
fn barriers(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_ooo_queue(env)?, sycl_ooo_queue(env)?);
    let mem = env.usm_u32(8 * 16)?;
    let part = |i: usize| mem.ptr().byte_add(i * 64);
    let graph = new_graph(env)?;
    graph.begin_recording_all(&[&q1, &q2])?;
    let a = q1.usm_fill(part(0), &1u32.to_le_bytes(), 64, &[])?;
    let b = q1.usm_fill(part(1), &2u32.to_le_bytes(), 64, &[])?;
    let c = q2.usm_fill(part(2), &3u32.to_le_bytes(), 64, &[])?;
    let bar = q1.barrier(&[])?;
    let d = q1.usm_memcpy(part(3), part(0), 64, &[])?;
    let e = q2.usm_memcpy(part(4), part(2), 64, &[&c])?;
    let bar2 = q1.barrier(&[&c])?;
    let f = q1.usm_memcpy(part(5), part(2), 64, &[])?;
    graph.end_recording();
    let node = |e: &cmdbuf_runtime::Event| Node::from_event(e);
    let (na, nb, nc, nbar, nd, ne, nbar2, nf) =
        (node(&a)?, node(&b)?, node(&c)?, node(&bar)?, node(&d)?, node(&e)?, node(&bar2)?, node(&f)?);
    check_eq!(nbar.node_type(), NodeType::Barrier);
    check_eq!(pred_set(&nbar), HashSet::from([na.index(), nb.index()]), "the barrier waits for q1's leaves only");
    check_eq!(nd.predecessors(), vec![nbar.clone()]);
    check_eq!(ne.predecessors(), vec![nc.clone()], "q2's commands do not wait for q1's barrier");
    check_eq!(pred_set(&nbar2), HashSet::from([nc.index(), nbar.index()]));
    check_eq!(nf.predecessors(), vec![nbar2]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    let q = sycl_queue(env)?;
    q.enqueue_graph(&exec, &[])?.wait()?;
    let got = read::<u32>(&q, mem.ptr(), 6 * 16)?;
    let expected: Vec<u32> = [1, 2, 3, 1, 3, 3].iter().flat_map(|v| std::iter::repeat_n(*v, 16)).collect();
    check_eq!(got, expected);
    Ok(())
}

/// A barrier after a hundred commands (more than the queue's leaf list
/// holds before it is pruned) waits for exactly the commands of its queue
/// that no later command of that queue waits for: a successor recorded from
/// another queue does not count.
fn barrier_after_many_commands(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_ooo_queue(env)?, sycl_ooo_queue(env)?);
    let mem = env.usm_u32(4)?;
    let fill = |q: &Queue, wait: &[&cmdbuf_runtime::Event]| q.usm_fill(mem.ptr(), &[0u8; 4], 16, wait);
    let graph = new_graph(env)?;
    graph.begin_recording_all(&[&q1, &q2])?;
    let mut leaves = HashSet::new();
    for i in 0..100 {
        let a = fill(&q1, &[])?;
        match i % 3 {
            0 => {
                let b = fill(&q1, &[&a])?;
                leaves.insert(Node::from_event(&b)?.index());
            }
            1 => {
                fill(&q2, &[&a])?;
                leaves.insert(Node::from_event(&a)?.index());
            }
            _ => {
                leaves.insert(Node::from_event(&a)?.index());
            }
        }
    }
    let bar = Node::from_event(&q1.barrier(&[])?)?;
    check_eq!(pred_set(&bar), leaves);
    let next = Node::from_event(&q1.barrier(&[])?)?;
    check_eq!(next.predecessors(), vec![bar], "after a barrier it is the only leaf");
    graph.end_recording();
    let q = sycl_queue(env)?;
    q.enqueue_graph(&graph.finalize(FinalizeProperties::default())?, &[])?.wait()?;
    check_eq!(read::<u32>(&q, mem.ptr(), 4)?, vec![0u32; 4]);
    Ok(())
}

/// An executing queue that waits on an event of a recording queue starts
/// recording into the same graph, until `end_recording`.
fn transitive_recording(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_queue(env)?, sycl_queue(env)?);
    let mem = env.usm_u32(N)?;
    let graph = new_graph(env)?;
    graph.begin_recording(&q1)?;
    let e1 = q1.usm_fill(mem.ptr(), &7u32.to_le_bytes(), N * 4, &[])?;
    check_eq!(q2.recording_state(), QueueState::Executing);
    let e2 = q2.usm_fill(mem.ptr(), &8u32.to_le_bytes(), N * 2, &[&e1])?;
    check_eq!(q2.recording_state(), QueueState::Recording);
    check_eq!(q2.recording_graph()?.id(), graph.id());
    check_eq!(Node::from_event(&e2)?.predecessors(), vec![Node::from_event(&e1)?]);
    // q2 keeps recording: its next command is a node too (after e2, in order).
    let e3 = q2.events_wait(&[])?;
    check_eq!(Node::from_event(&e3)?.predecessors(), vec![Node::from_event(&e2)?]);
    graph.end_recording();
    check_eq!(q2.recording_state(), QueueState::Executing);
    check_eq!(graph.node_count(), 3);
    let exec = graph.finalize(FinalizeProperties::default())?;
    q2.enqueue_graph(&exec, &[])?.wait()?;
    let got = read::<u32>(&q2, mem.ptr(), N)?;
    check_eq!(got[..N / 2], vec![8u32; N / 2][..]);
    check_eq!(got[N / 2..], vec![7u32; N / 2][..]);
    Ok(())
}

/// Every submitting queue method records a node of the right type.
fn every_operation_records(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, copy, back) = (env.usm_u32(16)?, env.usm_u32(16)?, env.usm_u32(16)?);
    let buf = env.buffer(64)?;
    let buf2 = env.buffer(64)?;
    let kernel = env.kernel("increment")?;
    let child = new_graph(env)?;
    child.add(|h| h.fill(back.ptr().byte_add(60), &[9], 4), NodeProperties::new())?;
    let child = child.finalize(FinalizeProperties::default())?;
    let ran = Arc::new(AtomicU32::new(0));
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let mut expected_types = Vec::new();
    let mut events = Vec::new();
    events.push(queue.usm_fill(mem.ptr(), &[1], 64, &[])?);
    expected_types.push(NodeType::Memset);
    events.push(queue.usm_fill(mem.ptr(), &[2, 0, 0, 0], 32, &[])?);
    expected_types.push(NodeType::Memfill);
    let args = [KernelArg::Pointer(mem.ptr())];
    // SAFETY: 16 items, 16 elements.
    events.push(unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[16], &args), &[])? });
    expected_types.push(NodeType::Kernel);
    events.push(queue.usm_memcpy(copy.ptr(), mem.ptr(), 64, &[])?);
    expected_types.push(NodeType::Memcpy);
    events.push(queue.usm_prefetch(copy.ptr(), 64, MigrationFlags::HOST_TO_DEVICE, &[])?);
    expected_types.push(NodeType::Prefetch);
    events.push(queue.usm_advise(copy.ptr(), 64, UsmAdvice::SET_READ_MOSTLY)?);
    expected_types.push(NodeType::MemAdvise);
    events.push(queue.write_buffer_from_usm(&buf, 0, 64, copy.ptr(), &[])?);
    expected_types.push(NodeType::Memcpy);
    events.push(queue.fill_buffer(&buf, &[5, 0, 0, 0], 0, 8, &[])?);
    expected_types.push(NodeType::Memfill);
    events.push(queue.copy_buffer(&buf, &buf2, 0, 0, 64, &[])?);
    expected_types.push(NodeType::Memcpy);
    events.push(queue.read_buffer_to_usm(&buf2, 0, 64, back.ptr(), &[])?);
    expected_types.push(NodeType::Memcpy);
    events.push(queue.events_wait(&[])?);
    expected_types.push(NodeType::Empty);
    events.push(queue.barrier(&[])?);
    expected_types.push(NodeType::Barrier);
    let counter = ran.clone();
    events.push(queue.enqueue_host_fn(&[], move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })?);
    expected_types.push(NodeType::HostTask);
    events.push(queue.enqueue_graph(&child, &[])?);
    expected_types.push(NodeType::Subgraph);
    graph.end_recording();
    check_eq!(graph.node_count(), events.len());
    for (e, ty) in events.iter().zip(&expected_types) {
        check_eq!(Node::from_event(e)?.node_type(), *ty);
        check_err!(e.status(), InvalidOperation);
    }
    check_eq!(ran.load(Ordering::SeqCst), 0, "recording runs nothing");
    check_eq!(read::<u32>(&queue, back.ptr(), 16)?, vec![0u32; 16], "recording runs nothing");
    let exec = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    let mut expected = vec![0x0101_0101u32 + 1; 16];
    expected[..8].fill(3);
    expected[0] = 5;
    expected[1] = 5;
    expected[15] = u32::from_le_bytes([9; 4]);
    check_eq!(read::<u32>(&queue, back.ptr(), 16)?, expected);
    check_eq!(ran.load(Ordering::SeqCst), 1);
    check_eq!(read_buffer::<u32>(&queue, &buf2, 0, 2)?, vec![5, 5]);
    Ok(())
}

/// Record once, replay with new inputs: `Z = 3 X + Y`.
fn replay_with_new_inputs(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let saxpy = env.kernel("saxpy")?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let a = 3u32;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&a), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    // SAFETY: N items over N-element allocations.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&saxpy, &[N], &args), &[])? };
    graph.end_recording();
    let exec = graph.finalize(FinalizeProperties::default())?;
    for round in 0..4u32 {
        let xs: Vec<u32> = (0..N as u32).map(|i| i * (round + 1)).collect();
        let ys: Vec<u32> = (0..N as u32).map(|i| i + round).collect();
        write(&queue, x.ptr(), &xs)?;
        write(&queue, y.ptr(), &ys)?;
        queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(read::<u32>(&queue, z.ptr(), N)?, crate::kernels::saxpy_reference(a, &xs, &ys), "round {round}");
    }
    Ok(())
}

/// Recorded nodes and explicitly added ones mix in one graph.
fn recorded_and_explicit_nodes(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (a, b) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let fill = queue.usm_fill(a.ptr(), &11u32.to_le_bytes(), N * 4, &[])?;
    graph.end_recording();
    let node = Node::from_event(&fill)?;
    let copy = graph.add(|h| h.memcpy(b.ptr(), a.ptr(), N * 4), NodeProperties::new().depends_on(&[&node]))?;
    check_eq!(copy.predecessors(), vec![node]);
    let exec = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![11u32; N]);
    Ok(())
}

/// A recorded event stands for a node: waiting for it, or for a recording
/// queue, is an error; nothing executes.
fn recorded_events_do_not_execute(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(4)?;
    write(&queue, mem.ptr(), &[1u32; 4])?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let event = queue.usm_fill(mem.ptr(), &[0], 16, &[])?;
    check_err!(event.wait(), InvalidOperation);
    check_err!(cmdbuf_runtime::Event::wait_all(&[&event]), InvalidOperation);
    check_err!(event.status(), InvalidOperation);
    check_err!(event.profiling_info(), InvalidOperation);
    check_err!(queue.finish(), InvalidOperation);
    let mut out = [0u8; 16];
    check_err!(queue.read_usm(mem.ptr(), &mut out, &[]), InvalidOperation);
    check_err!(queue.write_usm(mem.ptr(), &out, &[]), InvalidOperation);
    check_err!(queue.enqueue_host_task(&[], || {}), InvalidOperation);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.finalize()?;
    check_err!(queue.enqueue_command_buffer(&cb, &[]), InvalidOperation);
    check_eq!(graph.node_count(), 1, "failed calls record nothing");
    graph.end_recording();
    queue.finish()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), 4)?, vec![1u32; 4]);
    Ok(())
}

/// A recorded event is usable only in its graph's recording: not by an
/// executing queue after the recording ended, not in another graph, not in
/// command buffers; a recording queue waits only for recorded events.
fn recorded_events_stay_in_their_graph(env: &Env) -> CaseResult {
    let (queue, other) = (sycl_queue(env)?, sycl_queue(env)?);
    let mem = env.usm_u32(4)?;
    let eager = other.usm_fill(mem.ptr(), &[3], 16, &[])?;
    eager.wait()?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let recorded = queue.usm_fill(mem.ptr(), &[0], 16, &[])?;
    check_err!(queue.usm_fill(mem.ptr(), &[1], 16, &[&eager]), InvalidEventWaitList);
    // A command buffer cannot wait for it, even while it records.
    check_err!(other.enqueue_command_buffer(&finalized(env)?, &[&recorded]), InvalidEventWaitList);
    // Nor can a command buffer's wait list hold it: a recorded event is no
    // cmdbuf-core event, which the types enforce.
    // Nor a queue recording into another graph.
    let third = sycl_queue(env)?;
    let graph2 = new_graph(env)?;
    graph2.begin_recording(&third)?;
    check_err!(third.usm_fill(mem.ptr(), &[1], 16, &[&recorded]), InvalidEventWaitList);
    graph2.end_recording();
    graph.end_recording();
    // Outside the recording scope.
    check_err!(other.usm_fill(mem.ptr(), &[1], 16, &[&recorded]), InvalidEventWaitList);
    check_eq!(other.recording_state(), QueueState::Executing);
    check_err!(other.events_wait(&[&recorded]), InvalidEventWaitList);
    check_err!(Node::from_event(&eager), InvalidEvent);
    check_eq!(graph.node_count(), 1);
    check_eq!(graph2.node_count(), 0);
    other.finish()?;
    check_eq!(read::<u8>(&other, mem.ptr(), 16)?, vec![3u8; 16]);
    Ok(())
}

fn finalized(env: &Env) -> Result<cmdbuf::CommandBuffer, CaseError> {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.finalize()?;
    Ok(cb)
}

/// The state errors of recording.
fn recording_state_errors(env: &Env) -> CaseResult {
    let (queue, other) = (sycl_queue(env)?, sycl_queue(env)?);
    let graph = new_graph(env)?;
    let graph2 = new_graph(env)?;
    check_err!(queue.recording_graph(), InvalidOperation);
    graph.end_recording_queue(&queue)?; // not recording: nothing happens
    let node = graph.add_empty(NodeProperties::new())?;
    graph.begin_recording(&queue)?;
    check!(graph.is_recording());
    check_err!(graph.begin_recording(&queue), InvalidOperation);
    check_err!(graph2.begin_recording(&queue), InvalidOperation);
    check_err!(graph2.end_recording_queue(&queue), InvalidOperation);
    check_err!(graph.add_empty(NodeProperties::new()), InvalidOperation);
    check_err!(graph.add(|h| h.host_task(|| {}), NodeProperties::new()), InvalidOperation);
    check_err!(graph.make_edge(&node, &node), InvalidOperation);
    check_err!(queue.async_free(cmdbuf::UsmPtr::from_addr(64), &[]), InvalidValue);
    // A queue that does not record allocates eagerly (`async_alloc`), not into the graph.
    let (eager, ready) = other.async_malloc(UsmKind::Device, 64, &[])?;
    ready.wait()?;
    other.async_free(eager, &[])?.wait()?;
    let foreign = Queue::new(&Context::new(env.device())?, QueueProperties::default())?;
    check_err!(graph.begin_recording(&foreign), InvalidQueue);
    check_eq!(graph.node_count(), 1);
    graph.end_recording();
    check!(!graph.is_recording());
    graph.add_empty(NodeProperties::new())?;
    Ok(())
}

/// Recording ends when the last copy of the graph drops; a copy from the
/// queue counts.
fn dropping_the_graph_ends_recording(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let mem = env.usm_u32(4)?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let copy = queue.recording_graph()?;
    check_eq!(copy.id(), graph.id());
    drop(graph);
    check_eq!(queue.recording_state(), QueueState::Recording);
    queue.usm_fill(mem.ptr(), &[4], 16, &[])?;
    check_eq!(copy.node_count(), 1);
    drop(copy);
    check_eq!(queue.recording_state(), QueueState::Executing);
    queue.usm_fill(mem.ptr(), &[5], 16, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 16)?, vec![5u8; 16]);
    Ok(())
}

fn begin_and_end_several_queues(env: &Env) -> CaseResult {
    let (q1, q2, q3) = (sycl_queue(env)?, sycl_queue(env)?, sycl_queue(env)?);
    let graph = new_graph(env)?;
    let other = new_graph(env)?;
    other.begin_recording(&q3)?;
    check_err!(graph.begin_recording_all(&[&q1, &q3]), InvalidOperation);
    check_eq!(q1.recording_state(), QueueState::Executing, "nothing started when one queue was refused");
    graph.begin_recording_all(&[&q1, &q2])?;
    check_err!(graph.end_recording_queues(&[&q1, &q3]), InvalidOperation);
    check_eq!(q1.recording_state(), QueueState::Recording, "nothing ended when one queue was refused");
    graph.end_recording_queues(&[&q1, &q2])?;
    check_eq!((q1.recording_state(), q2.recording_state()), (QueueState::Executing, QueueState::Executing));
    check_eq!(q3.recording_state(), QueueState::Recording);
    other.end_recording();
    Ok(())
}

/// A queue records a SYCL graph or captures, never both.
fn capture_and_recording_exclude_each_other(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    check_err!(queue.begin_capture(), InvalidOperation);
    check_err!(queue.end_capture(), CommandListNotCapturing);
    check!(!queue.is_capturing(), "recording is not capturing");
    graph.end_recording();
    queue.begin_capture()?;
    check_err!(graph.begin_recording(&queue), InvalidOperation);
    let captured = queue.end_capture()?;
    check!(captured.is_empty());
    graph.finalize(FinalizeProperties::default())?;
    Ok(())
}
