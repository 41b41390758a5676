//! Updates of executable graphs (SYCL graph "Executable Graph Update"):
//! dynamic parameters, dynamic command groups, node range and nd-range
//! updates, whole-graph update from a topologically identical graph, and
//! every error the specification names for them. Updates work on every
//! device: where a command buffer cannot be updated in place, the graph
//! records the partition again, so no case requires update capabilities.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use cmdbuf::{Context, KernelArg, KernelLaunch, UsmAllocation, UsmKind};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{
    CommandGroupFn, DynamicCommandGroup, DynamicParameter, FinalizeProperties, Graph, Handler, Node, NodeProperties,
    NodeType,
};

use super::graph_common::{Diamond, kernel_node, new_graph, sycl_queue};
use crate::harness::{CaseResult, Env, read, write};
use crate::{cases, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["graph_update";
        dynamic_parameter_reaches_every_registered_node,
        dynamic_parameter_errors,
        dynamic_command_group_of_kernels,
        dynamic_command_group_of_host_tasks,
        dynamic_command_group_errors,
        node_range_updates,
        update_errors,
        whole_graph_update,
        whole_graph_update_checks_topology,
    ]
}

const N: usize = 64;

fn updatable() -> FinalizeProperties {
    FinalizeProperties { updatable: true, ..FinalizeProperties::default() }
}

fn run(queue: &Queue, exec: &Graph<cmdbuf_runtime::graph::Executable>) -> CaseResult {
    queue.enqueue_graph(exec, &[])?.wait()?;
    Ok(())
}

fn zero(queue: &Queue, allocs: &[&UsmAllocation]) -> CaseResult {
    for a in allocs {
        write(queue, a.ptr(), &[0u32; N])?;
    }
    Ok(())
}

/// `fill(P, V)` over `global` with both arguments possibly dynamic.
///
/// # Safety
/// `p` and every value `ptr` takes hold `global` elements.
unsafe fn fill_node(
    graph: &Graph,
    fill: &cmdbuf::Kernel,
    p: &UsmAllocation,
    global: usize,
    ptr: Option<&DynamicParameter>,
    value: Option<&DynamicParameter>,
    deps: &[&Node],
) -> cmdbuf::Result<Node> {
    graph.add(
        |h| {
            if let Some(ptr) = ptr {
                h.set_arg(0, ptr)?;
            }
            if let Some(value) = value {
                h.set_arg(1, value)?;
            }
            let args = [KernelArg::Pointer(p.ptr()), KernelArg::value(&0u32)];
            // SAFETY: `p` and every value `ptr` takes hold `global` elements (this function's
            // `# Safety`), all the fill over `global` reaches, as `launch` requires.
            unsafe { h.launch(&KernelLaunch::new(fill, &[global], &args)) }
        },
        NodeProperties::new().depends_on(deps),
    )
}

/// One pointer parameter shared by a fill and an increment node, one value
/// parameter on the fill: after `update` and `update_nodes`, both nodes
/// write the new allocation with the new value; executions before the
/// executable update still use the old ones; a new finalize sees the change
/// without any update.
fn dynamic_parameter_reaches_every_registered_node(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (a, b) = (env.usm_u32(N)?, env.usm_u32(N)?);
    zero(&queue, &[&a, &b])?;
    let (fill, increment) = (env.kernel("fill")?, env.kernel("increment")?);
    let graph = new_graph(env)?;
    let ptr = DynamicParameter::new(&graph, KernelArg::Pointer(a.ptr()))?;
    let value = DynamicParameter::new(&graph, KernelArg::value(&5u32))?;
    // SAFETY: `a` and `b` hold N elements, the fill covers N.
    let first = unsafe { fill_node(&graph, &fill, &a, N, Some(&ptr), Some(&value), &[])? };
    let second = graph.add(
        |h| {
            h.set_arg(0, &ptr)?;
            // SAFETY: as above, N items increment N elements.
            unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(a.ptr())])) }
        },
        NodeProperties::new().depends_on(&[&first]),
    )?;
    let exec = graph.finalize(updatable())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![6; N]);

    // SAFETY: `b` is as large as `a`.
    unsafe { ptr.update(KernelArg::Pointer(b.ptr()))? };
    // SAFETY: a value argument reaches no memory.
    unsafe { value.update(KernelArg::value(&40u32))? };
    zero(&queue, &[&a])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![6; N], "the executable graph is not updated yet");
    check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![0; N]);

    exec.update_nodes(&[&first, &second])?;
    zero(&queue, &[&a])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![0; N]);
    check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![41; N]);

    zero(&queue, &[&b])?;
    let fresh = graph.finalize(FinalizeProperties::default())?;
    run(&queue, &fresh)?;
    check_eq!(read::<u32>(&queue, b.ptr(), N)?, vec![41; N], "a new finalize sees the parameters' values");
    check_eq!(read::<u32>(&queue, a.ptr(), N)?, vec![0; N]);
    Ok(())
}

/// Registering a parameter where it cannot go, or updating it with a value
/// of another kind, is refused and changes nothing.
fn dynamic_parameter_errors(env: &Env) -> CaseResult {
    let mem = env.usm_u32(N)?;
    let fill = env.kernel("fill")?;
    let graph = new_graph(env)?;
    let other = new_graph(env)?;
    let ptr = DynamicParameter::new(&graph, KernelArg::Pointer(mem.ptr()))?;
    let wide = DynamicParameter::new(&graph, KernelArg::value(&7u64))?;
    let foreign = DynamicParameter::new(&other, KernelArg::Pointer(mem.ptr()))?;
    let on = |index: usize, param: &DynamicParameter| {
        graph.add(
            |h| {
                h.set_arg(index, param)?;
                let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&0u32)];
                // SAFETY: N items fill the N elements of `mem`.
                unsafe { h.launch(&KernelLaunch::new(&fill, &[N], &args)) }
            },
            NodeProperties::new(),
        )
    };
    check_err!(on(2, &ptr), InvalidKernelArgumentIndex);
    check_err!(on(1, &wide), InvalidKernelArgumentSize);
    check_err!(on(1, &ptr), InvalidValue);
    check_err!(on(0, &foreign), InvalidGraph);
    check_err!(
        graph.add(
            |h| {
                h.set_arg(0, &ptr)?;
                h.memcpy(mem.ptr(), mem.ptr().byte_add(4 * N / 2), 4 * N / 2)
            },
            NodeProperties::new(),
        ),
        InvalidValue
    );
    check_eq!(graph.node_count(), 0, "refused command groups add no node");
    on(0, &ptr)?;
    // SAFETY: refused before any node uses it.
    check_err!(unsafe { ptr.update(KernelArg::value(&1u32)) }, InvalidValue);
    // SAFETY: as above.
    check_err!(unsafe { wide.update(KernelArg::value(&1u32)) }, InvalidValue);
    check_err!(DynamicParameter::new(&graph, KernelArg::Local(0)), InvalidKernelArgumentSize);
    Ok(())
}

/// A dynamic command group switching between `fill` over N and `copy_add`
/// over N/2 (another kernel, range and arguments), followed by an
/// increment; a dynamic parameter of the first command group follows its
/// updates too.
fn dynamic_command_group_of_kernels(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, src) = (env.usm_u32(N)?, env.usm_u32(N)?);
    write(&queue, src.ptr(), &(0..N as u32).collect::<Vec<_>>())?;
    zero(&queue, &[&mem])?;
    let (fill, copy_add, increment) = (env.kernel("fill")?, env.kernel("copy_add")?, env.kernel("increment")?);
    let graph = new_graph(env)?;
    let value = DynamicParameter::new(&graph, KernelArg::value(&7u32))?;
    let (fill_args, copy_args) = (
        [KernelArg::Pointer(mem.ptr()), KernelArg::value(&0u32)],
        [KernelArg::Pointer(mem.ptr()), KernelArg::Pointer(src.ptr()), KernelArg::value(&3u32)],
    );
    let cgfs: Vec<CommandGroupFn<'_>> = vec![
        Box::new(|h: &mut Handler| {
            h.set_arg(1, &value)?;
            // SAFETY: N items fill the N elements of `mem`.
            unsafe { h.launch(&KernelLaunch::new(&fill, &[N], &fill_args)) }
        }),
        // SAFETY: N/2 items of N-element allocations.
        Box::new(|h: &mut Handler| unsafe { h.launch(&KernelLaunch::new(&copy_add, &[N / 2], &copy_args)) }),
    ];
    let group = DynamicCommandGroup::new(&graph, cgfs)?;
    check_eq!((group.len(), group.active_index()), (2, 0));
    let node = graph.add_dynamic(&group, NodeProperties::new())?;
    check_eq!(node.node_type(), NodeType::Kernel);
    // SAFETY: N items increment the N elements of `mem`.
    unsafe { kernel_node(&graph, &increment, &[N], &[KernelArg::Pointer(mem.ptr())], &[&node])? };
    let exec = graph.finalize(updatable())?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![8; N]);

    group.set_active_index(1)?;
    check_eq!(group.active_index(), 1);
    zero(&queue, &[&mem])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![8; N], "not updated yet");
    exec.update(&node)?;
    zero(&queue, &[&mem])?;
    run(&queue, &exec)?;
    let model: Vec<u32> = (0..N as u32).map(|i| if (i as usize) < N / 2 { i + 4 } else { 1 }).collect();
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, model);

    // SAFETY: a value argument reaches no memory.
    unsafe { value.update(KernelArg::value(&20u32))? };
    group.set_active_index(0)?;
    exec.update(&node)?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![21; N]);
    Ok(())
}

/// A dynamic command group of host tasks: the active one runs.
fn dynamic_command_group_of_host_tasks(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let counters: Arc<[AtomicU32; 2]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let graph = new_graph(env)?;
    let (c0, c1) = (counters.clone(), counters.clone());
    let cgfs: Vec<CommandGroupFn<'_>> = vec![
        Box::new(move |h: &mut Handler| {
            h.host_task(move || {
                c0[0].fetch_add(1, Ordering::SeqCst);
            })
        }),
        Box::new(move |h: &mut Handler| {
            h.host_task(move || {
                c1[1].fetch_add(1, Ordering::SeqCst);
            })
        }),
    ];
    let group = DynamicCommandGroup::new(&graph, cgfs)?;
    let node = graph.add_dynamic(&group, NodeProperties::new())?;
    check_eq!(node.node_type(), NodeType::HostTask);
    let exec = graph.finalize(updatable())?;
    run(&queue, &exec)?;
    group.set_active_index(1)?;
    exec.update(&node)?;
    run(&queue, &exec)?;
    run(&queue, &exec)?;
    check_eq!((counters[0].load(Ordering::SeqCst), counters[1].load(Ordering::SeqCst)), (1, 2));
    Ok(())
}

/// The errors of dynamic command groups: empty, mixed, other commands,
/// different dependencies (a topology change), index out of range, a group
/// of another graph, an allocation inside, an explicit add while recording.
fn dynamic_command_group_errors(env: &Env) -> CaseResult {
    let mem = env.usm_u32(N)?;
    let increment = env.kernel("increment")?;
    let graph = new_graph(env)?;
    let other = new_graph(env)?;
    let dep = graph.add_empty(NodeProperties::new())?;
    let args = [KernelArg::Pointer(mem.ptr())];
    let kernel = || -> CommandGroupFn<'_> {
        // SAFETY: N items increment the N elements of `mem`.
        Box::new(|h: &mut Handler| unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &args)) })
    };
    check_err!(DynamicCommandGroup::new(&graph, Vec::new()), InvalidValue);
    check_err!(DynamicCommandGroup::new(&graph, vec![kernel(), Box::new(|h| h.host_task(|| {}))]), InvalidValue);
    check_err!(DynamicCommandGroup::new(&graph, vec![Box::new(|h| h.memset(mem.ptr(), 0, 4))]), InvalidValue);
    check_err!(DynamicCommandGroup::new(&graph, vec![Box::new(|_| Ok(()))]), InvalidValue);
    check_err!(
        DynamicCommandGroup::new(&graph, vec![Box::new(|h| h.async_malloc(UsmKind::Device, 64).map(|_| ()))]),
        InvalidValue
    );
    let with_dep: CommandGroupFn<'_> = Box::new(|h: &mut Handler| {
        h.depends_on(&dep)?;
        // SAFETY: as in `kernel`.
        unsafe { h.launch(&KernelLaunch::new(&increment, &[N], &args)) }
    });
    check_err!(DynamicCommandGroup::new(&graph, vec![kernel(), with_dep]), InvalidGraph);
    let group = DynamicCommandGroup::new(&graph, vec![kernel(), kernel()])?;
    check_err!(group.set_active_index(2), InvalidValue);
    check_eq!(group.active_index(), 0);
    check_err!(other.add_dynamic(&group, NodeProperties::new()), InvalidGraph);
    let queue = sycl_queue(env)?;
    graph.begin_recording(&queue)?;
    check_err!(graph.add_dynamic(&group, NodeProperties::new()), InvalidOperation);
    graph.end_recording();
    check_eq!((graph.node_count(), other.node_count()), (1, 0));
    Ok(())
}

/// `update_range` and `update_nd_range` (with a global offset) change which
/// elements a fill writes, at the executable graph's next update; a new
/// range of another dimension and a node without a kernel are refused.
fn node_range_updates(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, scratch) = (env.usm_u32(N)?, env.usm_u32(N)?);
    zero(&queue, &[&mem])?;
    let fill = env.kernel("fill")?;
    let graph = new_graph(env)?;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&1u32)];
    // SAFETY: N items of the N-element allocation; the updates below stay
    // within N items (offset included).
    let node = unsafe { kernel_node(&graph, &fill, &[N], &args, &[])? };
    let copy = graph.add(|h| h.memcpy(scratch.ptr(), scratch.ptr().byte_add(4 * N / 2), 4), NodeProperties::new())?;
    let exec = graph.finalize(updatable())?;
    let expect =
        |range: std::ops::Range<usize>| -> Vec<u32> { (0..N).map(|i| u32::from(range.contains(&i))).collect() };

    // SAFETY: N/2 items of N elements.
    unsafe { node.update_range(&[N / 2])? };
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, expect(0..N), "not updated yet");
    exec.update(&node)?;
    zero(&queue, &[&mem])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, expect(0..N / 2));

    // SAFETY: items N/2 .. 3N/4 of N elements.
    unsafe { node.update_nd_range(&[N / 4], &[4], Some(&[N / 2]))? };
    exec.update(&node)?;
    zero(&queue, &[&mem])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, expect(N / 2..3 * N / 4));

    // SAFETY: refused before anything runs.
    check_err!(unsafe { node.update_range(&[N / 8, 2]) }, InvalidWorkDimension);
    // SAFETY: as above.
    check_err!(unsafe { copy.update_range(&[N]) }, InvalidCommandHandle);
    // SAFETY: as above; a local size that does not divide the global size.
    check_err!(unsafe { node.update_nd_range(&[N / 2], &[N / 2 - 1], None) }, InvalidWorkGroupSize);
    exec.update(&node)?;
    zero(&queue, &[&mem])?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, expect(N / 2..3 * N / 4), "refused updates change nothing");
    Ok(())
}

/// Update misuse: a graph not finalized updatable, a node of another graph,
/// one added after finalize, a node that is neither a kernel nor a host task.
fn update_errors(env: &Env) -> CaseResult {
    let mem = env.usm_u32(N)?;
    let fill = env.kernel("fill")?;
    let graph = new_graph(env)?;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&1u32)];
    // SAFETY: N items of the N-element allocation.
    let node = unsafe { kernel_node(&graph, &fill, &[N], &args, &[])? };
    let empty = graph.add_empty(NodeProperties::new().depends_on(&[&node]))?;
    let copy = graph
        .add(|h| h.memcpy(mem.ptr(), mem.ptr().byte_add(4 * N / 2), 4), NodeProperties::new().depends_on(&[&empty]))?;
    let fixed = graph.finalize(FinalizeProperties::default())?;
    check_err!(fixed.update(&node), InvalidOperation);
    check_err!(fixed.update_from(&graph), InvalidOperation);
    let exec = graph.finalize(updatable())?;
    let other = new_graph(env)?;
    // SAFETY: as above.
    let foreign = unsafe { kernel_node(&other, &fill, &[N], &args, &[])? };
    check_err!(exec.update(&foreign), InvalidCommandHandle);
    check_err!(exec.update(&copy), InvalidCommandHandle);
    check_err!(exec.update(&empty), InvalidCommandHandle);
    // SAFETY: as above.
    let late = unsafe { kernel_node(&graph, &fill, &[N], &args, &[&copy])? };
    check_err!(exec.update(&late), InvalidCommandHandle);
    check_err!(exec.update_nodes(&[&node, &late]), InvalidCommandHandle);
    exec.update_nodes(&[&node])?;
    exec.update_nodes(&[])?;
    Ok(())
}

/// The Codeplay diamond finalized from one graph, then updated from a
/// second graph of the same shape over other allocations: later executions
/// change only the second diamond's memory.
fn whole_graph_update(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (d1, d2) = (Diamond::new(env, N)?, Diamond::new(env, N)?);
    d1.init(&queue)?;
    d2.init(&queue)?;
    let (g1, g2) = (new_graph(env)?, new_graph(env)?);
    d1.add_to(&g1)?;
    d2.add_to(&g2)?;
    let exec = g1.finalize(updatable())?;
    run(&queue, &exec)?;
    exec.update_from(&g2)?;
    run(&queue, &exec)?;
    run(&queue, &exec)?;
    d1.check(&queue, 1)?;
    d2.check(&queue, 2)?;
    Ok(())
}

/// Whole-graph update from a graph that is not topologically identical is
/// `InvalidGraph` (the specification leaves it undefined), with other node
/// types `InvalidOperation`, from another context `InvalidContext`; a
/// refused update leaves the executable graph as it was.
fn whole_graph_update_checks_topology(env: &Env) -> CaseResult {
    let queue = sycl_queue(env)?;
    let (mem, other_mem) = (env.usm_u32(N)?, env.usm_u32(N)?);
    zero(&queue, &[&mem, &other_mem])?;
    let (fill, increment) = (env.kernel("fill")?, env.kernel("increment")?);
    // A fill, then an increment and an empty node after it.
    let build =
        |ctx: &Context, target: &UsmAllocation, kernels: [&cmdbuf::Kernel; 2], chain: bool| -> cmdbuf::Result<Graph> {
            let graph = Graph::new(ctx, env.device(), cmdbuf_runtime::graph::GraphProperties::default())?;
            let args = [KernelArg::Pointer(target.ptr()), KernelArg::value(&2u32)];
            let launch = |k: &cmdbuf::Kernel, a: &[KernelArg<'_>], deps: &[&Node]| {
                let launch = KernelLaunch::new(k, &[N], a);
                // SAFETY: N items of N-element allocations.
                graph.add(|h| unsafe { h.launch(&launch) }, NodeProperties::new().depends_on(deps))
            };
            let first = launch(kernels[0], &args[..kernels[0].signature().args.len()], &[])?;
            let second = launch(kernels[1], &args[..kernels[1].signature().args.len()], &[&first])?;
            let dep = [if chain { &second } else { &first }];
            graph.add_empty(NodeProperties::new().depends_on(&dep))?;
            Ok(graph)
        };
    let ctx = env.context();
    let source = build(ctx, &mem, [&fill, &increment], true)?;
    let exec = source.finalize(updatable())?;

    let extra = build(ctx, &other_mem, [&fill, &increment], true)?;
    extra.add_empty(NodeProperties::new())?;
    check_err!(exec.update_from(&extra), InvalidGraph);
    check_err!(exec.update_from(&build(ctx, &other_mem, [&fill, &increment], false)?), InvalidGraph);
    check_err!(exec.update_from(&build(ctx, &other_mem, [&increment, &increment], true)?), InvalidGraph);
    let swapped = Graph::new(ctx, env.device(), cmdbuf_runtime::graph::GraphProperties::default())?;
    let host = swapped.add(|h| h.host_task(|| {}), NodeProperties::new())?;
    let k = [KernelArg::Pointer(other_mem.ptr())];
    // SAFETY: N items of the N-element allocation.
    let inc = unsafe { kernel_node(&swapped, &increment, &[N], &k, &[&host])? };
    swapped.add_empty(NodeProperties::new().depends_on(&[&inc]))?;
    check_err!(exec.update_from(&swapped), InvalidGraph);
    let foreign_ctx = Context::new(env.device())?;
    check_err!(exec.update_from(&Graph::new(&foreign_ctx, env.device(), Default::default())?), InvalidContext);

    let copies = new_graph(env)?;
    copies.add(|h| h.memcpy(mem.ptr(), mem.ptr().byte_add(4 * N / 2), 4), NodeProperties::new())?;
    let copies_exec = copies.finalize(updatable())?;
    check_err!(copies_exec.update_from(&copies), InvalidOperation);

    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![3; N]);
    check_eq!(read::<u32>(&queue, other_mem.ptr(), N)?, vec![0; N], "refused updates change nothing");
    exec.update_from(&build(ctx, &other_mem, [&fill, &increment], true)?)?;
    run(&queue, &exec)?;
    check_eq!(read::<u32>(&queue, other_mem.ptr(), N)?, vec![3; N]);
    Ok(())
}
