//! Buffers and accessors in SYCL graphs (cmdbuf-runtime): edges from accessor
//! conflicts in explicit `add` and in recording, the data made current at
//! each execution with exact page and copy counts, the specification's
//! errors (`assume_buffer_outlives_graph`, write-back, host accessors while
//! recording), buffer-valued dynamic parameters and executable update, the
//! buffer's lifetime extended by the graph, and bad input. Command groups
//! with accessors on the SYCL queue, eager and recorded.

use cmdbuf::{Device, KernelArg, KernelLaunch, Queue as CoreQueue, UsmAllocation};
use cmdbuf_runtime::graph::{
    DynamicCommandGroup, DynamicParameter, FinalizeProperties, Graph, GraphProperties, Handler, Node, NodeProperties,
};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties, Queue, TransferStats};

use super::cross::{host_read, moved, peers};
use super::graph_common::sycl_ooo_queue;
use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_buffers";
        edges_from_conflicts,
        replay_moves_only_outdated,
        property_and_write_back_errors,
        recording_with_accessors,
        eager_command_groups_on_the_sycl_queue,
        dynamic_buffer_update,
        whole_graph_update_replaces_buffers,
        subgraph_accessors,
        dynamic_group_accessors,
        dynamic_group_gains_accessors,
        lifetime_extended,
        bad_input,
    ]
}

/// Elements (u32) per page.
const PAGE: usize = 16;
/// Elements of the buffers: 4 pages.
const N: usize = 4 * PAGE;

fn buffer_props() -> BufferProperties {
    BufferProperties { page: Some(vec![PAGE]) }
}

/// A graph that may use buffers.
fn buffer_graph(env: &Env) -> Result<Graph, CaseError> {
    let props = GraphProperties { assume_buffer_outlives_graph: true, ..Default::default() };
    Ok(Graph::new(env.context(), env.device(), props)?)
}

/// The predecessors of `node` by index, sorted.
fn preds(node: &Node) -> Vec<usize> {
    let mut p: Vec<usize> = node.predecessors().iter().map(Node::index).collect();
    p.sort_unstable();
    p
}

/// A node filling elements `[first, first + count)` with `value` through an accessor.
fn fill_node(
    graph: &Graph,
    buffer: &Buffer,
    mode: AccessMode,
    first: usize,
    count: usize,
    value: u32,
) -> cmdbuf::Result<Node> {
    graph.add(
        |h| {
            let acc = h.access(buffer, mode, AccessRange::new(&[first], &[count]))?;
            h.fill(acc.ptr().byte_add(first * 4), &value.to_le_bytes(), count * 4)
        },
        NodeProperties::new(),
    )
}

/// A node copying elements `[first, first + count)` of `buffer` to the same place in `out`.
fn read_node(graph: &Graph, buffer: &Buffer, out: &UsmAllocation, first: usize, count: usize) -> cmdbuf::Result<Node> {
    graph.add(
        |h| {
            let acc = h.access(buffer, AccessMode::Read, AccessRange::new(&[first], &[count]))?;
            h.memcpy(out.ptr().byte_add(first * 4), acc.ptr().byte_add(first * 4), count * 4)
        },
        NodeProperties::new(),
    )
}

/// Runs `exec` once on `queue` and waits.
fn run(queue: &CoreQueue, exec: &Graph<cmdbuf_runtime::graph::Executable>) -> CaseResult {
    exec.enqueue_on(queue, &[])?.wait()?;
    Ok(())
}

/// Accessor conflicts become edges (one of two accessors not read-only,
/// overlapping pages, the same buffer); the rest stay independent.
fn edges_from_conflicts(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let a = Buffer::new(4, &[N], &buffer_props())?;
    let b = Buffer::new(4, &[N], &buffer_props())?;
    let out = env.usm_u32(N)?;
    let w01 = fill_node(&graph, &a, AccessMode::WriteNoInit, 0, 2 * PAGE, 1)?;
    let w23 = fill_node(&graph, &a, AccessMode::WriteNoInit, 2 * PAGE, 2 * PAGE, 2)?;
    let other = fill_node(&graph, &b, AccessMode::WriteNoInit, 0, N, 9)?;
    let r12 = read_node(&graph, &a, &out, PAGE, 2 * PAGE)?;
    let r0 = read_node(&graph, &a, &out, 0, 1)?;
    // Element 63 is in page 3 only; element 16 is page 1: no overlap with page 0 reads.
    let r3 = read_node(&graph, &a, &out, N - 1, 1)?;
    check_eq!(preds(&w01), Vec::<usize>::new());
    check_eq!(preds(&w23), Vec::<usize>::new(), "disjoint pages: no edge");
    check_eq!(preds(&other), Vec::<usize>::new(), "another buffer: no edge");
    check_eq!(preds(&r12), vec![w01.index(), w23.index()], "reads pages 1-2");
    check_eq!(preds(&r0), vec![w01.index()], "reads page 0; reads do not conflict with reads");
    check_eq!(preds(&r3), vec![w23.index()]);
    let rewrite = fill_node(&graph, &a, AccessMode::ReadWrite, 0, N, 5)?;
    check_eq!(
        preds(&rewrite),
        vec![w01.index(), w23.index(), r12.index(), r0.index(), r3.index()],
        "a write after every overlapping use"
    );
    check_eq!(graph.edge_count(), 2 + 1 + 1 + 5);
    let exec = graph.finalize(FinalizeProperties::default())?;
    let queue = env.queue()?;
    for round in 0..2 {
        run(&queue, &exec)?;
        let expected: Vec<u32> = (0..N).map(|i| if i < 2 * PAGE { 1 } else { 2 }).collect();
        let got = read::<u32>(&queue, out.ptr(), N)?;
        for i in [0, PAGE, 3 * PAGE - 1, N - 1] {
            check_eq!(got[i], expected[i], "round {round}, element {i}");
        }
        check_eq!(host_read(&a, 0, N)?, vec![5; N], "round {round}: the last write");
    }
    check_eq!(host_read(&b, 0, N)?, vec![9; N]);
    Ok(())
}

/// Each execution moves exactly the outdated pages its accessors need,
/// once; a replay with nothing outdated moves nothing.
fn replay_moves_only_outdated(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let data: Vec<u32> = (0..N as u32).collect();
    let buffer = Buffer::from_host_with(&data, &[N], &buffer_props())?;
    let out = env.usm_u32(N)?;
    let increment = env.kernel("increment")?;
    graph.add(
        |h| {
            let acc = h.access(&buffer, AccessMode::ReadWrite, AccessRange::new(&[0], &[2 * PAGE]))?;
            // SAFETY: 2 pages of work-items increment the first 2 pages of the allocation.
            unsafe { h.launch(&KernelLaunch::new(&increment, &[2 * PAGE], &[KernelArg::Pointer(acc.ptr())])) }
        },
        NodeProperties::new(),
    )?;
    read_node(&graph, &buffer, &out, 0, N)?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let queue = env.queue()?;
    let expect =
        |k: u32| -> Vec<u32> { data.iter().enumerate().map(|(i, v)| if i < 2 * PAGE { v + k } else { *v }).collect() };
    let before = buffer.stats();
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, expect(1), "first execution");
    // Pages 0-1 for the kernel, then 2-3 for the read (0-1 are current by then).
    check_eq!(
        moved(before, buffer.stats()),
        (2, 4, N as u64 * 4, 0),
        "copies, pages, bytes, via host: first execution"
    );
    let before = buffer.stats();
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, expect(2), "replay");
    check_eq!(moved(before, buffer.stats()), (0, 0, 0, 0), "a replay with nothing outdated");
    // The host reads the device's pages 0-1 back, and writes page 3.
    let before = buffer.stats();
    check_eq!(host_read(&buffer, 0, N)?, expect(2));
    check_eq!(moved(before, buffer.stats()), (1, 2, 2 * PAGE as u64 * 4, 0), "pages 0-1 home, one copy");
    {
        let mut host = buffer.host_access(AccessMode::Write, AccessRange::new(&[3 * PAGE], &[PAGE]))?;
        host.as_mut_slice::<u32>()?.fill(77);
    }
    let before = buffer.stats();
    run(&queue, &exec)?;
    check_eq!(moved(before, buffer.stats()), (1, 1, PAGE as u64 * 4, 0), "only page 3, written on the host");
    let mut expected = expect(3);
    expected[3 * PAGE..].fill(77);
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, expected, "third execution");
    Ok(())
}

/// Buffers need `assume_buffer_outlives_graph`; a buffer that writes back
/// cannot be used in a graph; both `InvalidOperation` (SYCL's `errc::invalid`),
/// in explicit add and in recording, and nothing is added.
fn property_and_write_back_errors(env: &Env) -> CaseResult {
    let buffer = Buffer::new(4, &[N], &buffer_props())?;
    let plain = Graph::new(env.context(), env.device(), GraphProperties::default())?;
    check_err!(fill_node(&plain, &buffer, AccessMode::WriteNoInit, 0, N, 1), InvalidOperation);
    check_eq!(plain.node_count(), 0);
    let queue = sycl_ooo_queue(env)?;
    plain.begin_recording(&queue)?;
    let mut cg = queue.command_group();
    let acc = cg.access(&buffer, AccessMode::WriteNoInit, AccessRange::all())?;
    check_err!(cg.submit(&[], |q, w| q.usm_fill(acc.ptr(), &[1], N * 4, w)), InvalidOperation);
    plain.end_recording();
    check_eq!(plain.node_count(), 0);

    let graph = buffer_graph(env)?;
    let written_back = Buffer::from_host_with(&[3u32; N], &[N], &buffer_props())?;
    written_back.set_final_data(Some(Box::new(|_: &[u8]| {})));
    check_err!(fill_node(&graph, &written_back, AccessMode::Write, 0, N, 1), InvalidOperation);
    graph.begin_recording(&queue)?;
    let mut cg = queue.command_group();
    let acc = cg.access(&written_back, AccessMode::Read, AccessRange::all())?;
    check_err!(
        cg.submit(&[], |q, w| q.usm_prefetch(acc.ptr(), 4, cmdbuf::MigrationFlags::HOST_TO_DEVICE, w)),
        InvalidOperation
    );
    graph.end_recording();
    check_eq!(graph.node_count(), 0);
    written_back.set_write_back(false);
    fill_node(&graph, &written_back, AccessMode::Write, 0, N, 1)?;
    check_eq!(graph.node_count(), 1, "with write-back off the buffer can be used");
    Ok(())
}

/// Command groups with accessors on a recording (out-of-order) queue:
/// edges come from the accessors only; a host accessor of a buffer the
/// recording uses is `InvalidOperation` until recording ends; the recorded
/// graph moves the data at execution.
fn recording_with_accessors(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let queue = sycl_ooo_queue(env)?;
    let data: Vec<u32> = (0..N as u32).collect();
    let buffer = Buffer::from_host_with(&data, &[N], &buffer_props())?;
    let unrelated = Buffer::new(4, &[N], &buffer_props())?;
    let out = env.usm_u32(N)?;
    graph.begin_recording(&queue)?;
    let fill = |first: usize, count: usize, value: u32| -> cmdbuf::Result<cmdbuf_runtime::Event> {
        let mut cg = queue.command_group();
        let acc = cg.access(&buffer, AccessMode::Write, AccessRange::new(&[first], &[count]))?;
        cg.submit(&[], |q, w| q.usm_fill(acc.ptr().byte_add(first * 4), &value.to_le_bytes(), count * 4, w))
    };
    let e0 = fill(0, PAGE, 10)?;
    let e3 = fill(3 * PAGE, PAGE, 13)?;
    let mut cg = queue.command_group();
    let acc = cg.access(&buffer, AccessMode::Read, AccessRange::all())?;
    let reader = cg.submit(&[], |q, w| q.usm_memcpy(out.ptr(), acc.ptr(), N * 4, w))?;
    check_eq!(Node::from_event(&e3)?.predecessors().len(), 0, "disjoint pages on an out-of-order queue");
    let mut r = preds(&Node::from_event(&reader)?);
    r.sort_unstable();
    check_eq!(r, vec![Node::from_event(&e0)?.index(), Node::from_event(&e3)?.index()]);
    check_err!(buffer.host_access(AccessMode::Read, AccessRange::all()), InvalidOperation);
    check!(unrelated.host_access(AccessMode::Read, AccessRange::all()).is_ok(), "a buffer the graph does not use");
    // An executing queue waiting on a recorded event records transitively.
    let second = sycl_ooo_queue(env)?;
    let mut cg = second.command_group();
    let acc = cg.access(&unrelated, AccessMode::WriteNoInit, AccessRange::all())?;
    let joined = cg.submit(&[&e0], |q, w| q.usm_fill(acc.ptr(), &[4], N * 4, w))?;
    check_eq!(second.recording_state(), cmdbuf_runtime::QueueState::Recording, "transitive recording");
    check_eq!(preds(&Node::from_event(&joined)?), vec![Node::from_event(&e0)?.index()]);
    graph.end_recording();
    check_eq!(buffer.stats(), TransferStats::default(), "nothing moved while recording");
    check_eq!(host_read(&buffer, 0, N)?, data, "nothing ran while recording");
    let exec = graph.finalize(FinalizeProperties::default())?;
    queue.enqueue_graph(&exec, &[])?.wait()?;
    let mut expected = data.clone();
    expected[..PAGE].fill(10);
    expected[3 * PAGE..].fill(13);
    check_eq!(read::<u32>(queue.core(), out.ptr(), N)?, expected);
    check_eq!(host_read(&buffer, 0, N)?, expected);
    check_eq!(host_read(&unrelated, 0, N)?, vec![0x0404_0404; N], "the transitively recorded node ran");
    Ok(())
}

/// On an executing SYCL queue a command group with accessors runs at once:
/// data moves, conflicting groups wait for each other; a recorded event in
/// its wait list is `InvalidEventWaitList`.
fn eager_command_groups_on_the_sycl_queue(env: &Env) -> CaseResult {
    let queue = sycl_ooo_queue(env)?;
    let buffer = Buffer::from_host_with(&[1u32; N], &[N], &buffer_props())?;
    let increment = env.kernel("increment")?;
    for _ in 0..3 {
        let mut cg = queue.command_group();
        let acc = cg.access(&buffer, AccessMode::ReadWrite, AccessRange::all())?;
        let args = [KernelArg::Pointer(acc.ptr())];
        // SAFETY: N work-items over the N-element allocation.
        cg.submit(&[], |q, w| unsafe { q.launch_kernel(&KernelLaunch::new(&increment, &[N], &args), w) })?;
    }
    let expected = vec![4u32; N];
    check_eq!(host_read(&buffer, 0, N)?, expected, "three conflicting groups in order on an out-of-order queue");
    check_eq!(moved(TransferStats::default(), buffer.stats()).1, 4 + 4, "all pages there once, and home once");
    let graph = buffer_graph(env)?;
    graph.begin_recording(&queue)?;
    let recorded = queue.events_wait(&[])?;
    graph.end_recording();
    let mut cg = queue.command_group();
    cg.access(&buffer, AccessMode::Read, AccessRange::all())?;
    check_err!(cg.submit(&[&recorded], |q, w| q.events_wait(w)), InvalidEventWaitList);
    Ok(())
}

/// A dynamic parameter holding a buffer: after `update_buffer` and the
/// executable graph's update, executions use the new buffer (its data moves,
/// the old one is left alone); a buffer of another shape is `InvalidBufferSize`.
fn dynamic_buffer_update(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let first = Buffer::from_host_with(&[10u32; N], &[N], &buffer_props())?;
    let second = Buffer::from_host_with(&[20u32; N], &[N], &buffer_props())?;
    let param = DynamicParameter::with_buffer(&graph, &first)?;
    let increment = env.kernel("increment")?;
    let node = graph.add(
        |h| {
            let acc = h.access_dynamic(&param, AccessMode::ReadWrite, AccessRange::all())?;
            h.set_arg(0, &param)?;
            // SAFETY: N work-items over the N-element allocation.
            unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(acc.ptr())])) }
        },
        NodeProperties::new(),
    )?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    let queue = env.queue()?;
    run(&queue, &exec)?;
    check_err!(param.update_buffer(&Buffer::new(4, &[N + 1], &buffer_props())?), InvalidBufferSize);
    check_err!(
        param.update_buffer(&Buffer::new(4, &[N], &BufferProperties { page: Some(vec![8]) })?),
        InvalidBufferSize
    );
    let pointer = DynamicParameter::new(&graph, KernelArg::Pointer(env.usm_u32(N)?.ptr()))?;
    check_err!(pointer.update_buffer(&second), InvalidValue);
    param.update_buffer(&second)?;
    exec.update(&node)?;
    let before = second.stats();
    run(&queue, &exec)?;
    run(&queue, &exec)?;
    check_eq!(moved(before, second.stats()).1, 4, "the new buffer's pages moved once");
    check_eq!(host_read(&first, 0, N)?, vec![11; N], "the old buffer after one execution");
    check_eq!(host_read(&second, 0, N)?, vec![22; N], "the new buffer after two");
    Ok(())
}

/// Whole-graph update from a graph whose nodes access other buffers of the
/// same shape: later executions use those; a buffer of another shape, or
/// accessors of another mode, are `InvalidGraph` and change nothing.
fn whole_graph_update_replaces_buffers(env: &Env) -> CaseResult {
    let increment = env.kernel("increment")?;
    let build = |buffer: &Buffer, mode: AccessMode| -> Result<Graph, CaseError> {
        let graph = buffer_graph(env)?;
        graph.add(
            |h| {
                let acc = h.access(buffer, mode, AccessRange::all())?;
                // SAFETY: N work-items over the N-element allocation.
                unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(acc.ptr())])) }
            },
            NodeProperties::new(),
        )?;
        Ok(graph)
    };
    let first = Buffer::from_host_with(&[1u32; N], &[N], &buffer_props())?;
    let second = Buffer::from_host_with(&[7u32; N], &[N], &buffer_props())?;
    let graph = build(&first, AccessMode::ReadWrite)?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    let queue = env.queue()?;
    run(&queue, &exec)?;
    let longer = Buffer::from_host_with(&[0u32; 2 * N], &[2 * N], &buffer_props())?;
    check_err!(exec.update_from(&build(&longer, AccessMode::ReadWrite)?), InvalidGraph);
    check_err!(exec.update_from(&build(&second, AccessMode::Read)?), InvalidGraph);
    run(&queue, &exec)?;
    exec.update_from(&build(&second, AccessMode::ReadWrite)?)?;
    run(&queue, &exec)?;
    check_eq!(host_read(&first, 0, N)?, vec![3; N], "the first buffer: two executions before the update");
    check_eq!(host_read(&second, 0, N)?, vec![8; N], "the second buffer: one after");
    Ok(())
}

/// An executable graph with accessors as a sub-graph, added explicitly and
/// recorded: its accessors give the sub-graph node its edges and move data
/// at the parent's executions.
fn subgraph_accessors(env: &Env) -> CaseResult {
    let data: Vec<u32> = (0..N as u32).collect();
    let buffer = Buffer::from_host_with(&data, &[N], &buffer_props())?;
    let child = buffer_graph(env)?;
    fill_node(&child, &buffer, AccessMode::Write, 0, 2 * PAGE, 3)?;
    let child = child.finalize(FinalizeProperties::default())?;
    let mut expected = data.clone();
    expected[..2 * PAGE].fill(3);
    let queue = sycl_ooo_queue(env)?;

    let parent = buffer_graph(env)?;
    let (out, side) = (env.usm_u32(N)?, env.usm_u32(N)?);
    let sub = parent.add(|h| h.subgraph(&child), NodeProperties::new())?;
    let other_pages = read_node(&parent, &buffer, &side, 2 * PAGE, 2 * PAGE)?;
    let all = read_node(&parent, &buffer, &out, 0, N)?;
    check_eq!(preds(&other_pages), Vec::<usize>::new(), "pages the sub-graph does not write");
    check_eq!(preds(&all), vec![sub.index()], "after the sub-graph's write");
    let exec = parent.finalize(FinalizeProperties::default())?;
    let before = buffer.stats();
    queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(moved(before, buffer.stats()), (2, 4, N as u64 * 4, 0), "pages 0-1 for the sub-graph, 2-3 for the read");
    check_eq!(read::<u32>(queue.core(), out.ptr(), N)?, expected);
    let before = buffer.stats();
    queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(moved(before, buffer.stats()), (0, 0, 0, 0), "replay");

    let recorded = buffer_graph(env)?;
    recorded.begin_recording(&queue)?;
    let sub = queue.enqueue_graph(&child, &[])?;
    let mut cg = queue.command_group();
    let acc = cg.access(&buffer, AccessMode::Read, AccessRange::all())?;
    let reader = cg.submit(&[], |q, w| q.usm_memcpy(side.ptr(), acc.ptr(), N * 4, w))?;
    check_err!(buffer.host_access(AccessMode::Read, AccessRange::all()), InvalidOperation);
    recorded.end_recording();
    check_eq!(preds(&Node::from_event(&reader)?), vec![Node::from_event(&sub)?.index()]);
    queue.enqueue_graph(&recorded.finalize(FinalizeProperties::default())?, &[])?.wait()?;
    check_eq!(read::<u32>(queue.core(), side.ptr(), N)?, expected);
    Ok(())
}

/// The graph keeps the buffers it uses alive: the application's handles
/// and the modifiable graph may go before the executable graph runs.
fn lifetime_extended(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let out = env.usm_u32(N)?;
    {
        let buffer = Buffer::from_host_with(&[6u32; N], &[N], &buffer_props())?;
        read_node(&graph, &buffer, &out, 0, N)?;
    }
    let exec = graph.finalize(FinalizeProperties::default())?;
    drop(graph);
    let queue = env.queue()?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![6; N]);
    Ok(())
}

/// A command group of `increment` over `target`, also declaring `extra`
/// accessors (read-only), for a dynamic command group.
fn increment_group<'a>(
    kernel: &'a cmdbuf::Kernel,
    target: &'a Buffer,
    extra: &'a [&'a Buffer],
) -> cmdbuf_runtime::graph::CommandGroupFn<'a> {
    Box::new(move |h: &mut Handler| {
        for b in extra {
            h.access(b, AccessMode::Read, AccessRange::all())?;
        }
        let acc = h.access(target, AccessMode::ReadWrite, AccessRange::all())?;
        // SAFETY: N work-items over the N-element allocation.
        unsafe { h.launch(&KernelLaunch::new(kernel, &[N], &[KernelArg::Pointer(acc.ptr())])) }
    })
}

/// Accessors in a dynamic command group: every command group's accessors
/// make the node's edges (identical ones, else `InvalidGraph`), and only the
/// active command group's move data, also after `set_active_index` and an
/// update of the executable graph.
fn dynamic_group_accessors(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let a = Buffer::from_host_with(&[1u32; N], &[N], &buffer_props())?;
    let b = Buffer::from_host_with(&[10u32; N], &[N], &buffer_props())?;
    let increment = env.kernel("increment")?;
    let write_a = fill_node(&graph, &a, AccessMode::WriteNoInit, 0, N, 5)?;
    // Command group 1 increments `b` but reads `a` too: the same edge from `write_a`.
    let group = DynamicCommandGroup::new(
        &graph,
        vec![increment_group(&increment, &a, &[]), increment_group(&increment, &b, &[&a])],
    )?;
    let node = graph.add_dynamic(&group, NodeProperties::new())?;
    check_eq!(preds(&node), vec![write_a.index()], "edges from the accessors");
    // Every command group's accessors make edges for later nodes.
    let out = UsmAllocation::new(env.context(), cmdbuf::UsmKind::Device, N * 4)?;
    let reads_b = read_node(&graph, &b, &out, 0, N)?;
    check_eq!(preds(&reads_b), vec![node.index()], "command group 1 writes b");
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    let queue = env.queue()?;
    run(&queue, &exec)?;
    check_eq!(host_read(&a, 0, N)?, vec![6; N], "command group 0 incremented a");
    check_eq!(host_read(&b, 0, N)?, vec![10; N]);
    group.set_active_index(1)?;
    exec.update(&node)?;
    run(&queue, &exec)?;
    check_eq!(host_read(&b, 0, N)?, vec![11; N], "command group 1 incremented b");
    check_eq!(host_read(&a, 0, N)?, vec![5; N], "a only written by the first node");
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![11; N]);
    group.set_active_index(0)?;
    exec.update(&node)?;
    run(&queue, &exec)?;
    check_eq!(host_read(&a, 0, N)?, vec![6; N]);
    check_eq!(host_read(&b, 0, N)?, vec![11; N], "b untouched again");
    // Command groups whose accessors would make different edges.
    let unequal = DynamicCommandGroup::new(
        &graph,
        vec![
            increment_group(&increment, &a, &[]),
            increment_group(&increment, &Buffer::new(4, &[N], &buffer_props())?, &[]),
        ],
    )?;
    let count = graph.node_count();
    check_err!(graph.add_dynamic(&unequal, NodeProperties::new()), InvalidGraph);
    check_eq!(graph.node_count(), count, "nothing added");
    Ok(())
}

/// A graph whose only accessor belongs to an inactive command group has
/// none at finalize, and its submissions skip the accessor list; once an
/// update makes that group active, each submission makes the buffer's data
/// current and records its use again.
fn dynamic_group_gains_accessors(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let b = Buffer::from_host_with(&[10u32; N], &[N], &buffer_props())?;
    let usm = env.usm_u32(N)?;
    let queue = env.queue()?;
    write(&queue, usm.ptr(), &[0u32; N])?;
    let increment = env.kernel("increment")?;
    let plain: cmdbuf_runtime::graph::CommandGroupFn<'_> = Box::new(|h: &mut Handler| {
        // SAFETY: N work-items over the N-element allocation.
        unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(usm.ptr())])) }
    });
    let group = DynamicCommandGroup::new(&graph, vec![plain, increment_group(&increment, &b, &[])])?;
    let node = graph.add_dynamic(&group, NodeProperties::new())?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, usm.ptr(), N)?, vec![1u32; N]);
    group.set_active_index(1)?;
    exec.update(&node)?;
    run(&queue, &exec)?;
    check_eq!(host_read(&b, 0, N)?, vec![11; N], "the command group with the accessor incremented b");
    run(&queue, &exec)?;
    check_eq!(host_read(&b, 0, N)?, vec![12; N], "the host's data moved back for the next submission");
    check_eq!(read::<u32>(&queue, usm.ptr(), N)?, vec![1u32; N], "the first group ran once");
    Ok(())
}

/// Bad input inside graphs: typed errors, nothing added.
fn bad_input(env: &Env) -> CaseResult {
    let graph = buffer_graph(env)?;
    let buffer = Buffer::new(4, &[N], &buffer_props())?;
    check_err!(fill_node(&graph, &buffer, AccessMode::Write, N - 1, 2, 0), InvalidValue);
    check_err!(fill_node(&graph, &buffer, AccessMode::Write, N, 1, 0), InvalidValue);
    check_err!(
        graph.add(
            |h| h.access(&buffer, AccessMode::Read, AccessRange::new(&[0, 0], &[1, 1])).map(|_| ()),
            NodeProperties::new()
        ),
        InvalidWorkDimension
    );
    check_eq!(graph.node_count(), 0);
    let other = Graph::new(env.context(), env.device(), GraphProperties::default())?;
    let param = DynamicParameter::with_buffer(&graph, &buffer)?;
    check_err!(
        other
            .add(|h| h.access_dynamic(&param, AccessMode::Read, AccessRange::all()).map(|_| ()), NodeProperties::new()),
        InvalidGraph
    );
    fill_node(&graph, &buffer, AccessMode::WriteNoInit, 0, N, 1)?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    let plain = Graph::new(env.context(), env.device(), GraphProperties::default())?;
    check_err!(plain.add(|h| h.subgraph(&exec), NodeProperties::new()), InvalidOperation);
    run(&env.queue()?, &exec)?;
    check_eq!(host_read(&buffer, 0, N)?, vec![1; N], "the graph still works");
    Ok(())
}

/// `[cross]`: a graph on the first device and eager work on the second
/// share a buffer: each replay moves exactly the pages written elsewhere
/// since, and the eager work sees what the graph wrote.
pub(in crate::cases) fn cross_graph_and_eager(devices: &[Device]) -> CaseResult {
    let context = cmdbuf::Context::new(&devices[0])?;
    let graph_queue = CoreQueue::new(&context, cmdbuf::QueueProperties::default())?;
    let other = Queue::new(&cmdbuf::Context::new(&devices[1])?, cmdbuf::QueueProperties::default())?;
    let buffer = Buffer::from_host_with(&[0u32; N], &[N], &buffer_props())?;
    let props = GraphProperties { assume_buffer_outlives_graph: true, ..Default::default() };
    let graph = Graph::new(&context, &devices[0], props)?;
    // The graph adds 1 to page 0 through a fill of page 0 read back: fill
    // page 0 with 5 (read_write: the page must be current first).
    fill_node(&graph, &buffer, AccessMode::ReadWrite, 0, PAGE, 5)?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    let peers = peers(&devices[0], &devices[1])?;
    let before = buffer.stats();
    exec.enqueue_on(&graph_queue, &[])?.wait()?;
    check_eq!(moved(before, buffer.stats()).1, 1, "page 0 from the host");
    for round in 0..2u32 {
        // Eager work on the other device writes pages 0-1 and reads page 0.
        let mut cg = other.command_group();
        let acc = cg.access(&buffer, AccessMode::ReadWrite, AccessRange::new(&[0], &[2 * PAGE]))?;
        cg.submit(&[], |q, w| q.usm_fill(acc.ptr(), &(100 + round).to_le_bytes(), 2 * PAGE * 4, w))?.wait()?;
        let before = buffer.stats();
        exec.enqueue_on(&graph_queue, &[])?.wait()?;
        let (copies, pages, _, via_host) = moved(before, buffer.stats());
        let peer = u64::from(peers);
        check_eq!(
            (copies, pages, via_host, buffer.stats().peer - before.peer),
            (1, 1, 1 - peer, peer),
            "round {round}: page 0, device to device (peer copy where the devices are peers, else through the host)"
        );
        let expected = [vec![5; PAGE], vec![100 + round; PAGE], vec![0; 2 * PAGE]].concat();
        check_eq!(host_read(&buffer, 0, N)?, expected, "round {round}");
    }
    Ok(())
}
