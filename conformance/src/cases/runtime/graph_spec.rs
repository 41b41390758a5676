//! The remaining gaps of both graph specification revisions (issue 14):
//! memory pools and `async_malloc_from_pool` with `zero_init` (8.4.3, and
//! eagerly on the queue), the device aspects `ext_oneapi_graph` /
//! `ext_oneapi_limited_graph` (6), property lists of `begin_recording`
//! (8.4.6), status and profiling queries on recorded events (8.10.1),
//! native commands as graph nodes (8.11.2 of the newer revision), and
//! updates of a local-memory dynamic parameter and of host-task nodes
//! (8.4.2, table 6).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cmdbuf::{Context, KernelArg, KernelLaunch, QueueProperties, UsmAllocation, UsmKind, UsmKinds};
use cmdbuf_runtime::aspect::{Aspect, FULL_GRAPH_UPDATES, device_has};
use cmdbuf_runtime::graph::{
    CommandGroupFn, DynamicCommandGroup, DynamicParameter, Executable, FinalizeProperties, Graph, GraphProperty,
    Handler, Node, NodeProperties, NodeType, RecordingProperties,
};
use cmdbuf_runtime::{MemoryPool, MemoryPoolProperties, Queue, QueueState};

use super::graph_common::{SETTLE, new_graph, sycl_queue, sycl_queue_with};
use super::native_command::{WORDS, native_fill, words};
use crate::harness::{CaseError, CaseResult, Env, read, read_buffer, write};
use crate::kernels::saxpy_local_reference;
use crate::{cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_spec";
        pool_eager_zero_init,
        pool_eager_reuse_and_errors,
        pool_zero_init_in_graph,
        pool_zero_init_recorded,
        pool_zero_init_gets_fresh_memory,
        pool_zero_init_after_the_previous_execution,
        pool_in_graph_errors,
        device_aspects,
        begin_recording_properties,
        recorded_event_queries,
        native_command_node,
        native_command_recorded,
        native_command_errors,
        update_local_memory_parameter,
        update_host_task_nodes,
    ]
}

const N: usize = 64;

fn zero_pool(env: &Env) -> Result<MemoryPool, CaseError> {
    let props = MemoryPoolProperties { zero_init: true, ..MemoryPoolProperties::default() };
    Ok(MemoryPool::new(env.context(), env.device(), UsmKind::Device, props)?)
}

fn run(queue: &Queue, exec: &Graph<Executable>) -> CaseResult {
    queue.enqueue_graph(exec, &[])?.wait()?;
    Ok(())
}

/// Eager `async_malloc_from_pool` of a `zero_init` pool: the memory reads
/// as zero when the returned event completes, also when the pool hands out
/// a block written and freed before.
fn pool_eager_zero_init(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let pool = zero_pool(env)?;
    let (p, ready) = queue.async_malloc_from_pool(N * 4, &pool, &[])?;
    ready.wait()?;
    check_eq!(read::<u32>(&queue, p, N)?, vec![0u32; N]);
    write(&queue, p, &[0xDEAD_BEEFu32; N])?;
    check_eq!((pool.used_size_current(), pool.reserved_size_current()), (N * 4, N * 4));
    let freed = queue.async_free(p, &[])?;
    let (q, ready) = queue.async_malloc_from_pool(N * 4, &pool, &[&freed])?;
    check_eq!(q, p, "the freed block is reused");
    ready.wait()?;
    check_eq!(read::<u32>(&queue, q, N)?, vec![0u32; N], "zeroed again");
    check_eq!(pool.reserved_size_current(), N * 4);
    queue.async_free(q, &[])?.wait()?;
    check_eq!(pool.used_size_current(), 0);
    Ok(())
}

/// A pool without `zero_init` reuses blocks as they are; its maximum size,
/// foreign pointers, double frees, other contexts: typed errors.
fn pool_eager_reuse_and_errors(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let props = MemoryPoolProperties { maximum_size: Some(N * 4), ..MemoryPoolProperties::default() };
    let pool = MemoryPool::new(env.context(), env.device(), UsmKind::Device, props)?;
    let (p, ready) = queue.async_malloc_from_pool(N * 4, &pool, &[])?;
    ready.wait()?;
    write(&queue, p, &[7u32; N])?;
    check_err!(queue.async_malloc_from_pool(4, &pool, &[]), OutOfResources);
    queue.async_free(p, &[])?.wait()?;
    let (q, ready) = queue.async_malloc_from_pool(N * 2, &pool, &[])?;
    ready.wait()?;
    check_eq!(q, p, "the smallest free block that fits");
    check_eq!(read::<u32>(&queue, q, N / 2)?, vec![7u32; N / 2], "no zero_init: the block as it was");
    queue.async_free(q, &[])?.wait()?;
    check_err!(queue.async_free(q, &[]), InvalidOperation);
    let plain = env.usm_u32(4)?;
    check_err!(queue.async_free(plain.ptr(), &[]), InvalidOperation);
    check_err!(queue.async_malloc_from_pool(0, &pool, &[]), InvalidUsmSize);
    let zero_max = MemoryPoolProperties { maximum_size: Some(0), ..MemoryPoolProperties::default() };
    check_err!(MemoryPool::new(env.context(), env.device(), UsmKind::Device, zero_max), InvalidValue);
    let other = Context::new(env.device())?;
    let foreign = MemoryPool::new(&other, env.device(), UsmKind::Device, MemoryPoolProperties::default())?;
    check_err!(queue.async_malloc_from_pool(16, &foreign, &[]), InvalidQueue);
    // A pool dropped with an allocation handed out releases it: freeing it
    // afterwards is a pointer no pool gave.
    let (r, ready) = queue.async_malloc_from_pool(16, &pool, &[])?;
    ready.wait()?;
    drop(pool);
    check_err!(queue.async_free(r, &[]), InvalidOperation);
    Ok(())
}

/// A graph that allocates N words from `pool`, copies them into `out`,
/// fills them with 7 and frees them.
fn copy_then_fill(env: &Env, pool: &MemoryPool, out: &UsmAllocation) -> Result<Graph, CaseError> {
    let graph = new_graph(env)?;
    let mut ptr = None;
    let alloc = graph.add(
        |h| {
            ptr = Some(h.async_malloc_from_pool(N * 4, pool)?);
            Ok(())
        },
        NodeProperties::new(),
    )?;
    let p = ptr.ok_or_else(|| CaseError::Fail("no pointer".into()))?;
    let copy = graph.add(|h| h.memcpy(out.ptr(), p, N * 4), NodeProperties::new().depends_on(&[&alloc]))?;
    let fill = graph.add(|h| h.fill(p, &7u32.to_le_bytes(), N * 4), NodeProperties::new().depends_on(&[&copy]))?;
    graph.add(|h| h.async_free(p), NodeProperties::new().depends_on(&[&fill]))?;
    Ok(graph)
}

/// 8.4.3: a graph's `zero_init` allocation is zeroed at each finalize and
/// not before later executions: the first run reads zeros, the second what
/// the first wrote; a new finalize zeroes it again.
fn pool_zero_init_in_graph(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let pool = zero_pool(env)?;
    let out = env.usm_u32(N)?;
    let graph = copy_then_fill(env, &pool, &out)?;
    check_eq!(graph.nodes()[0].node_type(), NodeType::AsyncMalloc);
    check_eq!(pool.reserved_size_current(), 0, "a graph allocates from its own pool");
    let exec = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![0u32; N], "zeroed at finalize");
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![7u32; N], "not zeroed before the second execution");
    drop(exec);
    let exec = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![0u32; N], "zeroed at the second finalize");
    Ok(())
}

/// The same through queue recording (`async_malloc_from_pool(queue, ...)`).
fn pool_zero_init_recorded(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let pool = zero_pool(env)?;
    let out = env.usm_u32(N)?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let (p, alloc) = queue.async_malloc_from_pool(N * 4, &pool, &[])?;
    check_eq!(Node::from_event(&alloc)?.node_type(), NodeType::AsyncMalloc);
    let copy = queue.usm_memcpy(out.ptr(), p, N * 4, &[&alloc])?;
    let fill = queue.usm_fill(p, &9u32.to_le_bytes(), N * 4, &[&copy])?;
    queue.async_free(p, &[&fill])?;
    graph.end_recording();
    let exec = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![0u32; N]);
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![9u32; N]);
    Ok(())
}

/// A `zero_init` allocation ordered after the free of another never shares
/// its memory (a plain one would): what it reads first is the finalize's
/// zeros, not what the freed allocation held.
fn pool_zero_init_gets_fresh_memory(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let pool = zero_pool(env)?;
    let out = env.usm_u32(N)?;
    let graph = new_graph(env)?;
    let mut first = None;
    let a = graph.add(
        |h| {
            first = Some(h.async_malloc(UsmKind::Device, N * 4)?);
            Ok(())
        },
        NodeProperties::new(),
    )?;
    let pa = first.ok_or_else(|| CaseError::Fail("no pointer".into()))?;
    let fill = graph.add(|h| h.fill(pa, &5u32.to_le_bytes(), N * 4), NodeProperties::new().depends_on(&[&a]))?;
    let free = graph.add(|h| h.async_free(pa), NodeProperties::new().depends_on(&[&fill]))?;
    let mut second = None;
    let b = graph.add(
        |h| {
            second = Some(h.async_malloc_from_pool(N * 4, &pool)?);
            Ok(())
        },
        NodeProperties::new().depends_on(&[&free]),
    )?;
    let pb = second.ok_or_else(|| CaseError::Fail("no pointer".into()))?;
    check!(pb != pa, "a zero_init allocation took freed memory");
    graph.add(|h| h.memcpy(out.ptr(), pb, N * 4), NodeProperties::new().depends_on(&[&b]))?;
    check_eq!(graph.memory_stats().required_bytes, 2 * N * 4);
    let exec = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![0u32; N]);
    Ok(())
}

/// Finalizing again zeroes memory a dropped executable graph's pending
/// execution still uses: the zeros wait for that execution (finalize blocks
/// until then), and the new graph's first execution runs after it.
fn pool_zero_init_after_the_previous_execution(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let pool = zero_pool(env)?;
    let out = env.usm_u32(N)?;
    let graph = copy_then_fill(env, &pool, &out)?;
    let exec = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &exec)?;
    let gate = cmdbuf::UserEvent::new(env.context())?;
    let held = queue.enqueue_graph(&exec, &[&cmdbuf_runtime::Event::Core(gate.event().clone())])?;
    drop(exec);
    let again = graph.clone();
    let finalizing = std::thread::spawn(move || again.finalize(FinalizeProperties::default()));
    std::thread::sleep(SETTLE);
    let early = finalizing.is_finished();
    gate.complete()?;
    let exec = finalizing.join().map_err(|_| CaseError::Fail("finalize panicked".into()))??;
    check!(!early, "finalize zeroed memory a pending execution still used");
    held.wait()?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![7u32; N], "the held execution read its own data");
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![0u32; N], "zeroed after it");
    Ok(())
}

/// In a graph only device pools are supported (`InvalidValue`, 8.4.3), and
/// a pool of another context is `InvalidContext`; nothing is added.
fn pool_in_graph_errors(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let graph = new_graph(env)?;
    if env.device().info().usm.contains(UsmKinds::HOST) {
        let host = MemoryPool::new(env.context(), env.device(), UsmKind::Host, MemoryPoolProperties::default())?;
        check_err!(graph.add(|h| h.async_malloc_from_pool(64, &host).map(|_| ()), NodeProperties::new()), InvalidValue);
        graph.begin_recording(&queue)?;
        check_err!(queue.async_malloc_from_pool(64, &host, &[]), InvalidValue);
        graph.end_recording();
    }
    let other = Context::new(env.device())?;
    let foreign = MemoryPool::new(&other, env.device(), UsmKind::Device, MemoryPoolProperties::default())?;
    check_err!(
        graph.add(|h| h.async_malloc_from_pool(64, &foreign).map(|_| ()), NodeProperties::new()),
        InvalidContext
    );
    graph.begin_recording(&queue)?;
    check_err!(queue.async_malloc_from_pool(64, &foreign, &[]), InvalidContext);
    graph.end_recording();
    check_eq!(graph.node_count(), 0);
    check_eq!(graph.memory_stats().allocations, 0);
    Ok(())
}

/// Section 6: every device has `ext_oneapi_limited_graph`; the full aspect
/// needs native command buffers updating arguments and ranges in place; a
/// device with the full aspect has the limited one; emulated views never
/// report the full one.
fn device_aspects(env: &Env) -> CaseResult {
    let device = env.device();
    let caps = device.info().command_buffer;
    check!(device_has(device, Aspect::ExtOneapiLimitedGraph));
    let full = device_has(device, Aspect::ExtOneapiGraph);
    check_eq!(
        full,
        caps.support == cmdbuf::CommandBufferSupport::Native && caps.update.contains(FULL_GRAPH_UPDATES),
        "{device}: {caps:?}"
    );
    let emulated = device.emulated();
    check!(!device_has(&emulated, Aspect::ExtOneapiGraph));
    check!(device_has(&emulated, Aspect::ExtOneapiLimitedGraph));
    check_eq!(Aspect::ExtOneapiGraph.name(), "ext_oneapi_graph");
    Ok(())
}

/// 8.4.6: `begin_recording` takes the recording properties
/// (`assume_data_outlives_buffer`); any other property is `InvalidValue`
/// and the queue does not record. A queue recording transitively inherits
/// the properties.
fn begin_recording_properties(env: &Env) -> CaseResult {
    let (q1, q2) = (sycl_queue(env)?, sycl_queue(env)?);
    let mem = env.usm_u32(4)?;
    let graph = new_graph(env)?;
    for bad in [
        GraphProperty::NoCycleCheck,
        GraphProperty::AssumeBufferOutlivesGraph,
        GraphProperty::Updatable,
        GraphProperty::EnableProfiling,
        GraphProperty::DependsOnAllLeaves,
    ] {
        check_err!(graph.begin_recording_with(&q1, &[GraphProperty::AssumeDataOutlivesBuffer, bad]), InvalidValue);
        check_eq!(q1.recording_state(), QueueState::Executing, "{bad:?}");
        check_err!(graph.begin_recording_all_with(&[&q1, &q2], &[bad]), InvalidValue);
        check_eq!(q2.recording_state(), QueueState::Executing, "{bad:?}");
    }
    graph.begin_recording_with(&q1, &[GraphProperty::AssumeDataOutlivesBuffer])?;
    let props = RecordingProperties { assume_data_outlives_buffer: true };
    check_eq!(q1.recording_properties(), Some(props));
    let fill = q1.usm_fill(mem.ptr(), &[1], 16, &[])?;
    q2.usm_fill(mem.ptr(), &[2], 16, &[&fill])?;
    check_eq!(q2.recording_state(), QueueState::Recording, "transitive recording");
    check_eq!(q2.recording_properties(), Some(props), "inherited");
    graph.end_recording();
    check_eq!(q1.recording_properties(), None);
    graph.begin_recording(&q1)?;
    check_eq!(q1.recording_properties(), Some(RecordingProperties::default()));
    graph.end_recording();
    check_eq!(graph.node_count(), 2);
    Ok(())
}

/// 8.10.1: `command_execution_status` and `get_profiling_info` on an event
/// a recording queue returned throw `invalid`, also after recording ended
/// and on a profiling queue; executed events answer.
fn recorded_event_queries(env: &Env) -> CaseResult {
    let profiling = QueueProperties { profiling: true, ..QueueProperties::default() };
    let queue = sycl_queue_with(env, profiling)?;
    let mem = env.usm_u32(4)?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let recorded = queue.usm_fill(mem.ptr(), &[1], 16, &[])?;
    check_err!(recorded.status(), InvalidOperation);
    check_err!(recorded.profiling_info(), InvalidOperation);
    graph.end_recording();
    check_err!(recorded.status(), InvalidOperation);
    check_err!(recorded.profiling_info(), InvalidOperation);
    let executed = queue.usm_fill(mem.ptr(), &[1], 16, &[])?;
    executed.wait()?;
    check_eq!(executed.status()?, cmdbuf::EventStatus::Complete);
    let info = executed.profiling_info()?;
    check!(info.end >= info.start);
    Ok(())
}

/// The fill the native-command cases expect: the native work's half, then
/// the fill node's.
fn native_expected() -> Vec<u32> {
    let mut expected = vec![0xA5u32; WORDS / 2];
    expected.extend(vec![0x11u32; WORDS / 2]);
    expected
}

/// 8.11.2: a native-command node added explicitly: its native work runs
/// between its dependency and its successor, at every execution.
fn native_command_node(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    let graph = new_graph(env)?;
    let fill = graph.add(|h| h.fill_buffer(&buf, &0x11u32.to_le_bytes(), 0, WORDS * 4), NodeProperties::new())?;
    let b = buf.clone();
    // SAFETY: the callback fills the first half of the buffer it keeps alive.
    let native = graph.add(
        |h| unsafe { h.native_command(move |s| native_fill(s, &b, 0, WORDS / 2, 0xA5)) },
        NodeProperties::new().depends_on(&[&fill]),
    )?;
    check_eq!(native.node_type(), NodeType::NativeCommand);
    graph.add(|h| h.copy_buffer(&buf, &out, 0, 0, WORDS * 4), NodeProperties::new().depends_on(&[&native]))?;
    for props in
        [FinalizeProperties::default(), FinalizeProperties { updatable: true, ..FinalizeProperties::default() }]
    {
        let exec = graph.finalize(props)?;
        for replay in 0..2 {
            queue.fill_buffer(&buf, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?.wait()?;
            queue.fill_buffer(&out, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?.wait()?;
            run(&queue, &exec)?;
            check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, native_expected(), "{props:?}, replay {replay}");
        }
    }
    Ok(())
}

/// The same node recorded from a queue (`enqueue_native_command` while
/// recording), ordered by the recorded events.
fn native_command_recorded(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (buf, out) = (words(env, 0)?, words(env, 0)?);
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    let fill = queue.fill_buffer(&buf, &0x11u32.to_le_bytes(), 0, WORDS * 4, &[])?;
    let b = buf.clone();
    // SAFETY: the callback fills the first half of the buffer it keeps alive.
    let native =
        unsafe { queue.enqueue_native_command(&[], &[&fill], move |s| native_fill(s, &b, 0, WORDS / 2, 0xA5))? };
    check_eq!(Node::from_event(&native)?.node_type(), NodeType::NativeCommand);
    queue.copy_buffer(&buf, &out, 0, 0, WORDS * 4, &[&native])?;
    graph.end_recording();
    check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, vec![0u32; WORDS], "recording runs nothing");
    let exec = graph.finalize(FinalizeProperties::default())?;
    for replay in 0..2 {
        queue.fill_buffer(&out, &0u32.to_le_bytes(), 0, WORDS * 4, &[])?.wait()?;
        run(&queue, &exec)?;
        check_eq!(read_buffer::<u32>(&queue, &out, 0, WORDS)?, native_expected(), "replay {replay}");
    }
    Ok(())
}

/// Native commands where they cannot be: with memory buffers while
/// recording (`UnsupportedFeature`), in a dynamic command group
/// (`InvalidValue`), beside another command (`InvalidOperation`); updates
/// of a native node (`InvalidCommandHandle`) or of a graph holding one
/// (`InvalidOperation`).
fn native_command_errors(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let buf = words(env, 0)?;
    let mem = env.usm_u32(4)?;
    let graph = new_graph(env)?;
    graph.begin_recording(&queue)?;
    // SAFETY: the callback does nothing.
    check_err!(unsafe { queue.enqueue_native_command(&[&buf], &[], |_| {}) }, UnsupportedFeature);
    graph.end_recording();
    check_eq!(graph.node_count(), 0);
    // SAFETY: the callbacks do nothing.
    let in_group: Vec<CommandGroupFn<'_>> = vec![Box::new(|h: &mut Handler| unsafe { h.native_command(|_| {}) })];
    check_err!(DynamicCommandGroup::new(&graph, in_group), InvalidValue);
    check_err!(
        graph.add(
            |h| {
                h.memset(mem.ptr(), 0, 16)?;
                // SAFETY: the callback does nothing.
                unsafe { h.native_command(|_| {}) }
            },
            NodeProperties::new()
        ),
        InvalidOperation
    );
    // SAFETY: the callback does nothing.
    let native = graph.add(|h| unsafe { h.native_command(|_| {}) }, NodeProperties::new())?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..FinalizeProperties::default() })?;
    check_err!(exec.update(&native), InvalidCommandHandle);
    check_err!(exec.update_from(&graph), InvalidOperation);
    run(&queue, &exec)?;
    Ok(())
}

/// 8.4.2: a local-memory dynamic parameter updated with the node's
/// nd-range: `saxpy_local` with work-groups of 16, then of 32 with both
/// local arguments grown; bad values change nothing.
fn update_local_memory_parameter(env: &Env) -> CaseResult {
    const SMALL: usize = 16;
    const BIG: usize = 32;
    let queue = sycl_queue(env)?;
    let (x, y, z) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    let xs: Vec<u32> = (0..N as u32).collect();
    let ys: Vec<u32> = (0..N as u32).map(|i| 1000 + 3 * i).collect();
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let kernel = env.kernel("saxpy_local")?;
    let graph = new_graph(env)?;
    let la = DynamicParameter::new(&graph, KernelArg::Local(SMALL * 4))?;
    let lb = DynamicParameter::new(&graph, KernelArg::Local(2 * SMALL * 4))?;
    let a = 3u32;
    let args = [
        KernelArg::Local(SMALL * 4),
        KernelArg::Local(2 * SMALL * 4),
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&a),
        KernelArg::Pointer(x.ptr()),
        KernelArg::Pointer(y.ptr()),
    ];
    let node = graph.add(
        |h| {
            h.set_arg(0, &la)?;
            h.set_arg(1, &lb)?;
            // SAFETY: N items over N-element X, Y and Z; local memory holds
            // one and two u32s per item of a group.
            unsafe { h.launch(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[SMALL])) }
        },
        NodeProperties::new(),
    )?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..FinalizeProperties::default() })?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_local_reference(a, &xs, &ys, SMALL));
    // SAFETY: groups of BIG items with local memory for BIG items.
    unsafe {
        la.update(KernelArg::Local(BIG * 4))?;
        lb.update(KernelArg::Local(2 * BIG * 4))?;
        node.update_nd_range(&[N], &[BIG], None)?;
    }
    exec.update(&node)?;
    write(&queue, z.ptr(), &[0u32; N])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_local_reference(a, &xs, &ys, BIG), "after the update");
    // SAFETY: every update below is refused.
    unsafe {
        check_err!(la.update(KernelArg::Local(0)), InvalidKernelArgumentSize);
        check_err!(la.update(KernelArg::Pointer(z.ptr())), InvalidValue);
        let too_much = env.device().info().local_mem_size as usize + 1;
        check_err!(la.update(KernelArg::Local(too_much)), OutOfResources);
    }
    exec.update(&node)?;
    write(&queue, z.ptr(), &[0u32; N])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, saxpy_local_reference(a, &xs, &ys, BIG), "refused updates");
    Ok(())
}

/// Table 6: a host-task node's function is updated by whole-graph update
/// (and, through a dynamic command group, by node update: see
/// `graph_update`); a plain host-task node given to node update keeps its
/// function; its range and dynamic parameters cannot be updated.
fn update_host_task_nodes(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let counters: Arc<[AtomicU32; 3]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
    let counts = || [0, 1, 2].map(|i| counters[i].load(Ordering::SeqCst));
    let mem = env.usm_u32(4)?;
    let build = |slot: usize| -> Result<(Graph, Node), CaseError> {
        let graph = new_graph(env)?;
        let before = graph.add_empty(NodeProperties::new())?;
        let c = counters.clone();
        let host = graph.add(
            move |h| {
                h.host_task(move || {
                    c[slot].fetch_add(1, Ordering::SeqCst);
                })
            },
            NodeProperties::new().depends_on(&[&before]),
        )?;
        Ok((graph, host))
    };
    let (graph, host) = build(0)?;
    let exec = graph.finalize(FinalizeProperties { updatable: true, ..FinalizeProperties::default() })?;
    run(&queue, &exec)?;
    check_eq!(counts(), [1, 0, 0]);
    exec.update(&host)?;
    run(&queue, &exec)?;
    check_eq!(counts(), [2, 0, 0], "node update of a plain host task keeps its function");
    let (source, _) = build(1)?;
    exec.update_from(&source)?;
    run(&queue, &exec)?;
    run(&queue, &exec)?;
    check_eq!(counts(), [2, 2, 0], "whole-graph update replaced the host task's function");
    let (source, _) = build(2)?;
    exec.update_from(&source)?;
    run(&queue, &exec)?;
    check_eq!(counts(), [2, 2, 1]);
    // SAFETY: refused: a host task has no range.
    check_err!(unsafe { host.update_range(&[N]) }, InvalidCommandHandle);
    let param = DynamicParameter::new(&graph, KernelArg::Pointer(mem.ptr()))?;
    check_err!(
        graph.add(
            |h| {
                h.set_arg(0, &param)?;
                h.host_task(|| {})
            },
            NodeProperties::new()
        ),
        InvalidValue
    );
    let fixed = graph.finalize(FinalizeProperties::default())?;
    check_err!(fixed.update(&host), InvalidOperation);
    Ok(())
}
