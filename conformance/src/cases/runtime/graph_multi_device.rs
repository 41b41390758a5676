//! Multi-device graphs (issue 17): graphs whose nodes run on the first two
//! selected devices, placed by a node property or by the recording queue,
//! with cross-device copy nodes, updates and sub-graphs on the second
//! device, and the typed errors of misplaced nodes and unreachable memory.
//! They run in the cross section of the suite (all selected devices, at
//! least two; the backends may differ).

use cmdbuf::{CommandBufferSupport, Context, Device, Kernel, KernelArg, KernelLaunch, Program, QueueProperties};
use cmdbuf::{UsmAllocation, UsmKind, UsmKinds};
use cmdbuf_runtime::graph::{
    DynamicCommandGroup, DynamicParameter, Executable, FinalizeProperties, Graph, GraphProperties, Node, NodeProperties,
};
use cmdbuf_runtime::{Event, Queue};

pub use super::cross::first_usm_kind;
use super::cross::{CrossCase, peers};
use crate::harness::{CaseError, CaseResult, read, write};
use crate::{check, check_eq, check_err};

const N: usize = 1024;

/// One device of a case: its context, a queue and the kernel library.
struct Side {
    context: Context,
    queue: Queue,
    program: Program,
}

impl Side {
    fn new(device: &Device) -> Result<Side, CaseError> {
        let context = Context::new(device)?;
        let queue = Queue::new(&context, QueueProperties::default())?;
        let program = Program::new(&context, &crate::kernels::bundle())
            .map_err(|e| CaseError::Fail(format!("kernel library did not build on {device}: {e}")))?;
        Ok(Side { context, queue, program })
    }

    fn device(&self) -> &Device {
        self.context.device()
    }

    fn kernel(&self, name: &str) -> Result<Kernel, CaseError> {
        Ok(Kernel::new(&self.program, name)?)
    }

    /// `N` `u32`s of the first USM kind the device has (device, shared, host).
    fn usm(&self) -> Result<UsmAllocation, CaseError> {
        let kind =
            first_usm_kind(self.device()).ok_or_else(|| CaseError::Skip(format!("{} has no USM", self.device())))?;
        Ok(UsmAllocation::new(&self.context, kind, N * 4)?)
    }

    fn read(&self, alloc: &UsmAllocation) -> Result<Vec<u32>, CaseError> {
        read::<u32>(self.queue.core(), alloc.ptr(), N)
    }
}

/// Adds a launch of `kernel` over `N` items.
fn add_launch(g: &Graph, kernel: &Kernel, args: &[KernelArg<'_>], props: NodeProperties<'_>) -> cmdbuf::Result<Node> {
    let launch = KernelLaunch::new(kernel, &[N], args);
    // SAFETY: every allocation of these cases holds N u32s, and the library's
    // kernels touch element i of their pointers for item i < N (a range update
    // only shrinks it).
    g.add(|h| unsafe { h.launch(&launch) }, props)
}

/// Records a launch of `kernel` over `N` items.
fn record_launch(q: &Queue, kernel: &Kernel, args: &[KernelArg<'_>], wait: &[&Event]) -> cmdbuf::Result<Event> {
    // SAFETY: as for `add_launch`.
    unsafe { q.launch_kernel(&KernelLaunch::new(kernel, &[N], args), wait) }
}

fn two(devices: &[Device]) -> Result<(Side, Side), CaseError> {
    match devices {
        [a, b, ..] => Ok((Side::new(a)?, Side::new(b)?)),
        _ => Err(CaseError::Skip("needs two selected devices".into())),
    }
}

/// The device of `a` and `b` that cannot stage a copy between them: none
/// where they are peers, else one with neither host nor shared USM.
fn cannot_stage<'d>(a: &'d Device, b: &'d Device) -> Result<Option<&'d Device>, CaseError> {
    if peers(a, b)? {
        return Ok(None);
    }
    let host_visible = UsmKinds::HOST | UsmKinds::SHARED;
    Ok([a, b].into_iter().find(|d| !d.info().usm.intersects(host_visible)))
}

/// [`two`], for cases that copy between the devices: skipped where a copy
/// cannot be staged (`errors` checks that such a copy is refused).
fn two_copying(devices: &[Device]) -> Result<(Side, Side), CaseError> {
    if let [a, b, ..] = devices
        && let Some(lacking) = cannot_stage(a, b)?
    {
        return Err(CaseError::Skip(format!(
            "{lacking} has neither host nor shared USM to stage copies between devices that are not peers"
        )));
    }
    two(devices)
}

fn graph(a: &Side, b: &Side) -> Result<Graph, CaseError> {
    Ok(Graph::new_multi_device(&[&a.context, &b.context], GraphProperties::default())?)
}

/// The cases, for the multi-device section.
pub fn cases() -> Vec<CrossCase> {
    vec![
        CrossCase { name: "graph_multi_device::explicit_add_on_device", body: explicit_add_on_device },
        CrossCase { name: "graph_multi_device::recording_two_queues", body: recording_two_queues },
        CrossCase { name: "graph_multi_device::cross_device_copies", body: cross_device_copies },
        CrossCase { name: "graph_multi_device::update_on_second_device", body: update_on_second_device },
        CrossCase { name: "graph_multi_device::subgraph_on_second_device", body: subgraph_on_second_device },
        CrossCase { name: "graph_multi_device::errors", body: errors },
        CrossCase { name: "graph_multi_device::device_side_ordering", body: device_side_ordering },
        CrossCase { name: "graph_multi_device::one_submission", body: one_submission },
    ]
}

/// The cases also run over the two views of each selected device (native
/// and emulated: two contexts of one device, which the CPU adapter joins
/// device-side), in the `views` section.
pub fn view_cases() -> Vec<CrossCase> {
    vec![
        CrossCase { name: "graph_multi_device::device_side_ordering", body: device_side_ordering },
        CrossCase { name: "graph_multi_device::one_submission", body: one_submission },
    ]
}

/// Why [`view_cases`] skip on `device`'s two views: they copy between the
/// views, which needs the device to be its own peer or to have host or shared
/// USM for staging (NVIDIA's OpenCL has neither); `None` where they run.
pub fn views_cannot_copy(device: &Device) -> Option<String> {
    match cannot_stage(device, &device.emulated()) {
        Ok(None) => None,
        Ok(Some(lacking)) => Some(format!("{lacking} is not its own peer and has neither host nor shared USM")),
        Err(e) => Some(format!("peer query failed: {e:?}")),
    }
}

/// Rounds of [`device_side_ordering`]: each a step on each device.
const ROUNDS: u32 = 8;
/// Increments per step of [`device_side_ordering`].
const STEP: u32 = 4;

/// A chain alternating between the devices, each step waiting for the
/// other device's: `STEP` increments of `x` on the first device, `x` copied
/// to `y` on the second, `STEP` increments of `y` there, `y` copied back to
/// `x`, `ROUNDS` times. Every copy overwrites its destination, so a step
/// that started before the other device's step had ended leaves a smaller
/// number; exact results over replays prove the ordering, device-side
/// (no host bridge) exactly where both contexts wait for each other's events
/// ([`Context::waits_on_events_of`]: the CPU adapter's contexts, CUDA GPUs),
/// through host bridges elsewhere. The front end's rule is checked eagerly
/// too: a queue of one context takes the other's event in a wait list
/// exactly where its adapter says it can wait for it.
fn device_side_ordering(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let (direct_ab, direct_ba) = (a.context.waits_on_events_of(&b.context), b.context.waits_on_events_of(&a.context));
    if a.device().backend() != b.device().backend() {
        check!(!direct_ab && !direct_ba, "contexts of two backends wait for each other's events");
    }
    // Eagerly: the second device's queue after an event of the first's.
    let inc_a = a.kernel("increment")?;
    let inc_b = b.kernel("increment")?;
    let (x, y) = (a.usm()?, b.usm()?);
    write(a.queue.core(), x.ptr(), &[5u32; N])?;
    let ea = record_launch(&a.queue, &inc_a, &[KernelArg::Pointer(x.ptr())], &[])?;
    let after = b.queue.events_wait(&[&ea]);
    if direct_ba {
        after?.wait()?;
    } else {
        check_err!(after, InvalidEventWaitList);
    }
    ea.wait()?;
    check_eq!(a.read(&x)?, vec![6; N]);

    let g = graph(&a, &b)?;
    let on_b = NodeProperties::new().on_device(b.device());
    let fill = a.kernel("fill")?;
    let mut last =
        add_launch(&g, &fill, &[KernelArg::Pointer(x.ptr()), KernelArg::value(&0u32)], NodeProperties::new())?;
    for _ in 0..ROUNDS {
        for _ in 0..STEP {
            let deps = [&last];
            last = add_launch(&g, &inc_a, &[KernelArg::Pointer(x.ptr())], NodeProperties::new().depends_on(&deps))?;
        }
        let deps = [&last];
        last = g.add(|h| h.memcpy_across(b.device(), y.ptr(), a.device(), x.ptr(), N * 4), on_b.depends_on(&deps))?;
        for _ in 0..STEP {
            let deps = [&last];
            last = add_launch(&g, &inc_b, &[KernelArg::Pointer(y.ptr())], on_b.depends_on(&deps))?;
        }
        let deps = [&last];
        last = g.add(
            |h| h.memcpy_across(a.device(), x.ptr(), b.device(), y.ptr(), N * 4),
            NodeProperties::new().depends_on(&deps),
        )?;
    }
    let exec = g.finalize(FinalizeProperties::default())?;
    check_submissions(&exec, composable(&a, &b)?)?;
    let bridges = exec.host_bridges();
    if direct_ab && direct_ba {
        check_eq!(bridges, 0, "devices that wait for each other's events need no host bridge");
    } else {
        check!(bridges > 0, "devices that cannot wait for each other's events without a host bridge: {bridges}");
    }
    let expected = 2 * ROUNDS * STEP;
    // The first element that is not `expected`, as a failure naming it.
    let all_expected = |values: Vec<u32>, what: &str| -> CaseResult {
        match values.iter().position(|v| *v != expected) {
            None => Ok(()),
            Some(i) => Err(CaseError::Fail(format!(
                "{what}[{i}] = {}, expected {expected} ({} of {N} elements wrong): a step ran before the other \
                 device's step it waits for had ended",
                values[i],
                values.iter().filter(|v| **v != expected).count()
            ))),
        }
    };
    for round in 0..4 {
        a.queue.enqueue_graph(&exec, &[])?.wait()?;
        all_expected(a.read(&x)?, &format!("replay {round}: x"))?;
        all_expected(b.read(&y)?, &format!("replay {round}: y"))?;
    }
    // Replays back to back, waited for once: each after the previous one.
    let mut events = Vec::new();
    for _ in 0..3 {
        events.push(a.queue.enqueue_graph(&exec, &[])?);
    }
    for e in &events {
        e.wait()?;
    }
    all_expected(a.read(&x)?, "back-to-back replays: x")?;
    Ok(())
}

/// Whether a multi-device graph over `a` and `b` whose partitions are
/// command buffers and peer copies is composed into one submission: the
/// adapter composes the two contexts ([`Context::composes_with`]), both
/// devices have native command buffers and are peers.
fn composable(a: &Side, b: &Side) -> Result<bool, CaseError> {
    let native = |d: &Device| d.info().command_buffer.support == CommandBufferSupport::Native;
    Ok(a.context.composes_with(&b.context)
        && b.context.composes_with(&a.context)
        && native(a.device())
        && native(b.device())
        && peers(a.device(), b.device())?)
}

/// One submission per execution where the partitions are composed, else
/// one per partition and the two markers.
fn check_submissions(exec: &Graph<Executable>, composed: bool) -> CaseResult {
    let expected = if composed { 1 } else { exec.partitions().len() + 2 };
    check_eq!(
        exec.submissions_per_execution(),
        expected,
        "submissions per execution ({} partitions, composable: {composed})",
        exec.partitions().len()
    );
    Ok(())
}

/// A pipeline over the two devices (a fill and an increment on the first,
/// a copy to the second, an increment there, a copy back, an increment):
/// where the adapter composes the devices' command buffers
/// ([`composable`]: CUDA GPUs, CPU sub-devices) one submission per
/// execution, elsewhere one per partition; exact over replays, back to
/// back, and after updates of kernels on both devices (a value and a range),
/// after which it is still one submission.
fn one_submission(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let composed = composable(&a, &b)?;
    let (fill_a, inc_a, inc_b) = (a.kernel("fill")?, a.kernel("increment")?, b.kernel("increment")?);
    let (xa, za, yb) = (a.usm()?, a.usm()?, b.usm()?);
    let g = graph(&a, &b)?;
    let on_b = NodeProperties::new().on_device(b.device());
    let value = DynamicParameter::new(&g, KernelArg::value(&3u32))?;
    let fill = g.add(
        |h| {
            h.set_arg(1, &value)?;
            // SAFETY: N items over N elements.
            unsafe {
                h.launch(&KernelLaunch::new(&fill_a, &[N], &[KernelArg::Pointer(xa.ptr()), KernelArg::value(&0u32)]))
            }
        },
        NodeProperties::new(),
    )?;
    let deps = [&fill];
    let first = add_launch(&g, &inc_a, &[KernelArg::Pointer(xa.ptr())], NodeProperties::new().depends_on(&deps))?;
    let deps = [&first];
    let there =
        g.add(|h| h.memcpy_across(b.device(), yb.ptr(), a.device(), xa.ptr(), N * 4), on_b.depends_on(&deps))?;
    let deps = [&there];
    let second = add_launch(&g, &inc_b, &[KernelArg::Pointer(yb.ptr())], on_b.depends_on(&deps))?;
    let deps = [&second];
    let back = g.add(
        |h| h.memcpy_across(a.device(), za.ptr(), b.device(), yb.ptr(), N * 4),
        NodeProperties::new().depends_on(&deps),
    )?;
    let deps = [&back];
    add_launch(&g, &inc_a, &[KernelArg::Pointer(za.ptr())], NodeProperties::new().depends_on(&deps))?;
    let exec = g.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    check_submissions(&exec, composed)?;
    let run = |expected: &[u32], what: &str| -> CaseResult {
        write(a.queue.core(), za.ptr(), &[0u32; N])?;
        a.queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(a.read(&za)?, expected, "{what}");
        Ok(())
    };
    for round in 0..3 {
        run(&[6; N], &format!("replay {round}"))?;
    }
    let events = (0..3).map(|_| a.queue.enqueue_graph(&exec, &[])).collect::<cmdbuf::Result<Vec<_>>>()?;
    for e in &events {
        e.wait()?;
    }
    check_eq!(a.read(&za)?, vec![6; N], "back-to-back replays");
    // SAFETY: a value argument: the kernel reaches the same memory.
    unsafe { value.update(KernelArg::value(&10u32))? };
    exec.update(&fill)?;
    run(&[13; N], "after updating the first device's fill")?;
    // SAFETY: N / 2 items stay inside the allocation.
    unsafe { second.update_range(&[N / 2])? };
    exec.update(&second)?;
    let mut expected = vec![12u32; N];
    expected[..N / 2].fill(13);
    for round in 0..2 {
        run(&expected, &format!("replay {round} after updating the second device's increment"))?;
    }
    check_submissions(&exec, composed)?;
    Ok(())
}

/// fill on each device, increment on the second, the second's data copied
/// to the first and incremented there: one partition per device (and the
/// staging host task), exact results at every replay.
fn explicit_add_on_device(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let (fill_a, fill_b, inc_a, inc_b) =
        (a.kernel("fill")?, b.kernel("fill")?, a.kernel("increment")?, b.kernel("increment")?);
    let (xa, ya, xb) = (a.usm()?, a.usm()?, b.usm()?);
    let g = graph(&a, &b)?;
    let on_b = NodeProperties::new().on_device(b.device());
    let f0 = add_launch(&g, &fill_a, &[KernelArg::Pointer(xa.ptr()), KernelArg::value(&4u32)], NodeProperties::new())?;
    let f1 = add_launch(&g, &fill_b, &[KernelArg::Pointer(xb.ptr()), KernelArg::value(&10u32)], on_b)?;
    let deps = [&f1];
    let i1 = add_launch(&g, &inc_b, &[KernelArg::Pointer(xb.ptr())], on_b.depends_on(&deps))?;
    let deps = [&i1];
    let copy = g.add(
        |h| h.memcpy_across(a.device(), ya.ptr(), b.device(), xb.ptr(), N * 4),
        NodeProperties::new().depends_on(&deps),
    )?;
    let deps = [&copy, &f0];
    add_launch(&g, &inc_a, &[KernelArg::Pointer(ya.ptr())], NodeProperties::new().depends_on(&deps))?;
    check_eq!(f0.device(), a.device().clone());
    check_eq!(i1.device(), b.device().clone());
    check_eq!(copy.device(), a.device().clone(), "a cross-device copy is on its destination's device");
    check_eq!(g.devices(), vec![a.device().clone(), b.device().clone()]);
    let exec = g.finalize(FinalizeProperties::default())?;
    let parts = exec.partitions();
    check!(
        parts.iter().any(|p| p.device == 0 && !p.host_task) && parts.iter().any(|p| p.device == 1 && !p.host_task),
        "{parts:?}"
    );
    let traffic = exec.cross_device_traffic();
    check_eq!(traffic.peer_bytes + traffic.staged_bytes, (N * 4) as u64);
    if traffic.peer_bytes > 0 {
        check!(parts.iter().any(|p| p.peer_copy), "a peer copy is a partition of its own: {parts:?}");
    } else {
        check!(parts.iter().any(|p| p.host_task), "the staging copy is a host task: {parts:?}");
    }
    for round in 0..3 {
        write(a.queue.core(), ya.ptr(), &[0u32; N])?;
        a.queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(a.read(&xa)?, vec![4; N], "round {round}");
        check_eq!(b.read(&xb)?, vec![11; N], "round {round}");
        check_eq!(a.read(&ya)?, vec![12; N], "round {round}");
    }
    Ok(())
}

/// A queue of each device records into one graph; the first device's work
/// waits for the second's through a recorded event.
fn recording_two_queues(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let (fill_a, fill_b) = (a.kernel("fill")?, b.kernel("fill")?);
    let inc_b = b.kernel("increment")?;
    let (xa, xb, ya) = (a.usm()?, b.usm()?, a.usm()?);
    let g = graph(&a, &b)?;
    let (qa, qb) =
        (Queue::new(&a.context, QueueProperties::default())?, Queue::new(&b.context, QueueProperties::default())?);
    g.begin_recording_all(&[&qa, &qb])?;
    let eb = record_launch(&qb, &fill_b, &[KernelArg::Pointer(xb.ptr()), KernelArg::value(&7u32)], &[])?;
    let eb = record_launch(&qb, &inc_b, &[KernelArg::Pointer(xb.ptr())], &[&eb])?;
    let ea = record_launch(&qa, &fill_a, &[KernelArg::Pointer(xa.ptr()), KernelArg::value(&3u32)], &[&eb])?;
    g.end_recording();
    let (na, nb) = (Node::from_event(&ea)?, Node::from_event(&eb)?);
    check_eq!(na.device(), a.device().clone());
    check_eq!(nb.device(), b.device().clone());
    check_eq!(na.predecessors(), vec![nb.clone()]);
    let deps = [&na, &nb];
    g.add(
        |h| h.memcpy_across(a.device(), ya.ptr(), b.device(), xb.ptr(), N * 4),
        NodeProperties::new().depends_on(&deps),
    )?;
    let exec = g.finalize(FinalizeProperties::default())?;
    for _ in 0..2 {
        a.queue.enqueue_graph(&exec, &[])?.wait()?;
        check_eq!(a.read(&xa)?, vec![3; N]);
        check_eq!(b.read(&xb)?, vec![8; N]);
        check_eq!(a.read(&ya)?, vec![8; N]);
    }
    Ok(())
}

/// Copies in both directions, of part of an allocation, chained.
fn cross_device_copies(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let (xa, xb, ya) = (a.usm()?, b.usm()?, a.usm()?);
    let data: Vec<u32> = (0..N as u32).map(|i| i * 3 + 1).collect();
    write(a.queue.core(), xa.ptr(), &data)?;
    write(b.queue.core(), xb.ptr(), &[0u32; N])?;
    write(a.queue.core(), ya.ptr(), &[0u32; N])?;
    let g = graph(&a, &b)?;
    let half = N / 2 * 4;
    let there = g.add(|h| h.memcpy_across(b.device(), xb.ptr(), a.device(), xa.ptr(), N * 4), NodeProperties::new())?;
    let deps = [&there];
    let back = g.add(
        |h| h.memcpy_across(a.device(), ya.ptr().byte_add(half), b.device(), xb.ptr(), half),
        NodeProperties::new().depends_on(&deps),
    )?;
    check_eq!(there.node_type(), cmdbuf_runtime::graph::NodeType::Memcpy);
    check_eq!(there.device(), b.device().clone());
    check_eq!(back.device(), a.device().clone());
    let exec = g.finalize(FinalizeProperties::default())?;
    let traffic = exec.cross_device_traffic();
    check_eq!(traffic.peer_bytes + traffic.staged_bytes, (N * 4 + half) as u64);
    let peer = a.device().peer_access(b.device())?.supported || b.device().peer_access(a.device())?.supported;
    check_eq!(traffic.peer_bytes > 0, peer, "peer copies exactly where the devices are peers");
    a.queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(b.read(&xb)?, data);
    let mut expected = vec![0u32; N];
    expected[N / 2..].copy_from_slice(&data[..N / 2]);
    check_eq!(a.read(&ya)?, expected);
    Ok(())
}

/// A kernel on the second device with a dynamic value and a range update:
/// the executable graph follows both.
fn update_on_second_device(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let fill_b = b.kernel("fill")?;
    let inc_a = a.kernel("increment")?;
    let (xb, ya) = (b.usm()?, a.usm()?);
    let g = graph(&a, &b)?;
    let value = DynamicParameter::new(&g, KernelArg::value(&5u32))?;
    let fill = g.add(
        |h| {
            h.set_arg(1, &value)?;
            // SAFETY: N items over N elements (later N / 2).
            unsafe {
                h.launch(&KernelLaunch::new(&fill_b, &[N], &[KernelArg::Pointer(xb.ptr()), KernelArg::value(&0u32)]))
            }
        },
        NodeProperties::new().on_device(b.device()),
    )?;
    let deps = [&fill];
    let copy = g.add(
        |h| h.memcpy_across(a.device(), ya.ptr(), b.device(), xb.ptr(), N * 4),
        NodeProperties::new().depends_on(&deps),
    )?;
    let deps = [&copy];
    add_launch(&g, &inc_a, &[KernelArg::Pointer(ya.ptr())], NodeProperties::new().depends_on(&deps))?;
    let exec = g.finalize(FinalizeProperties { updatable: true, ..Default::default() })?;
    write(b.queue.core(), xb.ptr(), &[0u32; N])?;
    a.queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(a.read(&ya)?, vec![6; N]);
    // SAFETY: a value argument: the kernel reaches the same memory.
    unsafe { value.update(KernelArg::value(&20u32))? };
    // SAFETY: N / 2 items stay inside the allocation.
    unsafe { fill.update_range(&[N / 2])? };
    exec.update(&fill)?;
    write(b.queue.core(), xb.ptr(), &[0u32; N])?;
    a.queue.enqueue_graph(&exec, &[])?.wait()?;
    let mut expected = vec![1u32; N];
    expected[..N / 2].fill(21);
    check_eq!(a.read(&ya)?, expected);
    Ok(())
}

/// A single-device executable graph of the second device as a sub-graph:
/// placed there, inlined, replayed.
fn subgraph_on_second_device(devices: &[Device]) -> CaseResult {
    let (a, b) = two_copying(devices)?;
    let inc_b = b.kernel("increment")?;
    let (xb, ya) = (b.usm()?, a.usm()?);
    let sub = Graph::new(&b.context, b.device(), GraphProperties::default())?;
    let first = add_launch(&sub, &inc_b, &[KernelArg::Pointer(xb.ptr())], NodeProperties::new())?;
    let deps = [&first];
    add_launch(&sub, &inc_b, &[KernelArg::Pointer(xb.ptr())], NodeProperties::new().depends_on(&deps))?;
    let sub = sub.finalize(FinalizeProperties::default())?;
    let g = graph(&a, &b)?;
    let node = g.add(|h| h.subgraph(&sub), NodeProperties::new())?;
    check_eq!(node.device(), b.device().clone());
    check_err!(g.add(|h| h.subgraph(&sub), NodeProperties::new().on_device(a.device())), InvalidDevice);
    let deps = [&node];
    g.add(
        |h| h.memcpy_across(a.device(), ya.ptr(), b.device(), xb.ptr(), N * 4),
        NodeProperties::new().depends_on(&deps),
    )?;
    let exec = g.finalize(FinalizeProperties::default())?;
    write(b.queue.core(), xb.ptr(), &[1u32; N])?;
    a.queue.enqueue_graph(&exec, &[])?.wait()?;
    a.queue.enqueue_graph(&exec, &[])?.wait()?;
    check_eq!(a.read(&ya)?, vec![5; N]);
    Ok(())
}

/// Misplaced nodes, unreachable memory, and what multi-device graphs refuse.
fn errors(devices: &[Device]) -> CaseResult {
    let (a, b) = two(devices)?;
    let inc_b = b.kernel("increment")?;
    let xa = a.usm()?;
    // A node on a device the graph was not made for.
    let only_a = Graph::new(&a.context, a.device(), GraphProperties::default())?;
    check_err!(only_a.add_empty(NodeProperties::new().on_device(b.device())), InvalidDevice);
    // A queue of another device cannot record into a single-device graph.
    check_err!(only_a.begin_recording(&b.queue), InvalidQueue);
    // The same device twice.
    check_err!(
        Graph::new_multi_device(&[&a.context, &Context::new(a.device())?], GraphProperties::default()),
        InvalidDevice
    );
    let g = graph(&a, &b)?;
    // A kernel on the second device given USM of the first.
    let on_b = NodeProperties::new().on_device(b.device());
    let unreachable = add_launch(&g, &inc_b, &[KernelArg::Pointer(xa.ptr())], on_b);
    if b.device().peer_access_enabled(a.device()) {
        // Peer access (enabled by earlier peer copies) lets the kernel reach it.
        check!(unreachable.is_ok(), "{unreachable:?}");
    } else {
        check_err!(unreachable, InvalidContext);
        check_eq!(g.node_count(), 0, "a refused node is not added");
    }
    // Graph-owned memory lives on the graph's own device only.
    check_err!(g.add(|h| h.async_malloc(UsmKind::Device, 64).map(drop), on_b), UnsupportedFeature);
    // Dynamic command groups too.
    let inc_a = a.kernel("increment")?;
    let (global, args) = ([N], [KernelArg::Pointer(xa.ptr())]);
    let launch = KernelLaunch::new(&inc_a, &global, &args);
    // SAFETY: N items over N elements of `xa` (never run: refused at add).
    let group = DynamicCommandGroup::new(&g, vec![Box::new(|h| unsafe { h.launch(&launch) })])?;
    check_err!(g.add_dynamic(&group, on_b), UnsupportedFeature);
    // A multi-device executable graph is no sub-graph.
    let exec = g.finalize(FinalizeProperties::default())?;
    let other = graph(&a, &b)?;
    check_err!(other.add(|h| h.subgraph(&exec), NodeProperties::new()), UnsupportedFeature);
    // Submission on a queue of the second device: the graph's own device submits.
    check_err!(b.queue.enqueue_graph(&exec, &[]), InvalidQueue);
    // A copy between devices that can neither reach each other nor stage it.
    if cannot_stage(a.device(), b.device())?.is_some() {
        let xb = b.usm()?;
        let g = graph(&a, &b)?;
        let copy = g
            .add(|h| h.memcpy_across(a.device(), xa.ptr(), b.device(), xb.ptr(), N * 4), NodeProperties::new())
            .and_then(|_| g.finalize(FinalizeProperties::default()).map(drop));
        check_err!(copy, UnsupportedFeature);
    }
    Ok(())
}
