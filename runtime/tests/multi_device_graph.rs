//! Multi-device graphs on the CPU adapter: its native device and its
//! emulated view are two devices (two contexts) that are peers, so a
//! cross-device copy is a peer copy.

use cmdbuf_core::{Context, QueueProperties, UrError, UsmAllocation, UsmKind};
use cmdbuf_runtime::Queue;
use cmdbuf_runtime::graph::{FinalizeProperties, Graph, GraphProperties, NodeProperties};

const N: usize = 4096;

#[test]
fn peer_copies_between_the_cpu_views() -> Result<(), UrError> {
    let native = cmdbuf_cpu::default_device();
    let emulated = native.emulated();
    let (c0, c1) = (Context::new(&native)?, Context::new(&emulated)?);
    let (q0, q1) = (Queue::new(&c0, QueueProperties::default())?, Queue::new(&c1, QueueProperties::default())?);
    let (a, b, back) = (
        UsmAllocation::new(&c0, UsmKind::Host, N)?,
        UsmAllocation::new(&c1, UsmKind::Host, N)?,
        UsmAllocation::new(&c0, UsmKind::Host, N)?,
    );
    let graph = Graph::new_multi_device(&[&c0, &c1], GraphProperties::default())?;
    let fill = graph.add(|h| h.fill(a.ptr(), &[1, 2, 3, 4], N), NodeProperties::new())?;
    let there = graph.add(|h| h.memcpy(b.ptr(), a.ptr(), N), NodeProperties::new().depends_on(&[&fill]))?;
    // A fill on the second device over the second half, then everything back.
    let on_1 = NodeProperties::new().on_device(&emulated);
    let deps = [&there];
    let half = graph.add(|h| h.memset(b.ptr().byte_add(N / 2), 9, N / 2), on_1.depends_on(&deps))?;
    let deps = [&half];
    let home = graph.add(|h| h.memcpy(back.ptr(), b.ptr(), N), NodeProperties::new().depends_on(&deps))?;
    assert_eq!((there.device(), half.device(), home.device()), (emulated.clone(), emulated.clone(), native.clone()));
    let exec = graph.finalize(FinalizeProperties::default())?;
    let traffic = exec.cross_device_traffic();
    assert_eq!((traffic.peer_bytes, traffic.staged_bytes), (2 * N as u64, 0));
    let parts = exec.partitions();
    assert_eq!(parts.iter().filter(|p| p.peer_copy).count(), 2, "{parts:?}");
    assert!(parts.iter().any(|p| p.device == 1 && p.support.is_some()), "{parts:?}");
    assert!(!parts.iter().any(|p| p.host_task), "no staging between peers: {parts:?}");
    // The CPU adapter's contexts wait for each other's events: no host bridges.
    assert!(c0.waits_on_events_of(&c1) && c1.waits_on_events_of(&c0));
    assert_eq!(exec.host_bridges(), 0);
    // The emulated view's command buffers are the software ones, which the
    // adapter does not compose: one submission per partition and two markers.
    assert_eq!(exec.submissions_per_execution(), parts.len() + 2);
    let mut expected: Vec<u8> = [1, 2, 3, 4].iter().copied().cycle().take(N).collect();
    expected[N / 2..].fill(9);
    for _ in 0..3 {
        q0.write_usm(back.ptr(), &[0; N], &[])?;
        q0.enqueue_graph(&exec, &[])?.wait()?;
        let mut out = vec![0u8; N];
        q0.read_usm(back.ptr(), &mut out, &[])?;
        assert_eq!(out, expected);
    }
    // Submitting on the second device's queue is refused: the graph's own device submits.
    assert!(matches!(q1.enqueue_graph(&exec, &[]), Err(UrError::InvalidQueue(_))));
    Ok(())
}

#[test]
fn single_device_graphs_are_unchanged() -> Result<(), UrError> {
    let device = cmdbuf_cpu::default_device();
    let ctx = Context::new(&device)?;
    let graph = Graph::new(&ctx, &device, GraphProperties::default())?;
    assert_eq!(graph.devices(), vec![device.clone()]);
    let a = UsmAllocation::new(&ctx, UsmKind::Host, 64)?;
    let node = graph.add(|h| h.memset(a.ptr(), 1, 64), NodeProperties::new().on_device(&device))?;
    assert_eq!(node.device(), device);
    let exec = graph.finalize(FinalizeProperties::default())?;
    assert_eq!(exec.cross_device_traffic(), Default::default());
    assert_eq!(exec.partitions().len(), 1);
    assert_eq!(exec.host_bridges(), 0);
    assert_eq!(exec.submissions_per_execution(), 1);
    assert!(matches!(
        graph.add_empty(NodeProperties::new().on_device(&device.emulated())),
        Err(UrError::InvalidDevice(_))
    ));
    Ok(())
}
