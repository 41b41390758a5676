//! Composed command buffers through the front end, on the CPU adapter's
//! two sub-devices (two devices of one adapter that composes their command
//! buffers): the checks written once in cmdbuf-core, one submission running
//! every part in order, a part updated after composing, and the typed errors.

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, ComposedCommandBuffer, ComposedPart, Context, Device, Partition,
    Queue, QueueProperties, UrError, UsmAllocation, UsmKind,
};

const N: usize = 256;

struct Two {
    devices: Vec<Device>,
    contexts: [Context; 2],
}

fn two() -> Two {
    let devices = cmdbuf_cpu::default_device().partition(&Partition::ByCounts(vec![1, 1])).unwrap();
    let contexts = [Context::new(&devices[0]).unwrap(), Context::new(&devices[1]).unwrap()];
    devices[0].enable_peer_access(&devices[1]).unwrap();
    devices[1].enable_peer_access(&devices[0]).unwrap();
    Two { devices, contexts }
}

fn filled(context: &Context, ptr: cmdbuf_core::UsmPtr, value: u8, size: usize) -> CommandBuffer {
    let cb = CommandBuffer::new(context, context.device(), CommandBufferDesc::default()).unwrap();
    cb.append_usm_fill(ptr, &[value], size, AppendOptions::new()).unwrap();
    cb.finalize().unwrap();
    cb
}

#[test]
fn parts_run_in_order_in_one_submission() -> Result<(), UrError> {
    let t = two();
    let [c0, c1] = &t.contexts;
    assert!(c0.composes_with(c1) && c1.composes_with(c0));
    let (a, b) = (UsmAllocation::new(c0, UsmKind::Host, N)?, UsmAllocation::new(c1, UsmKind::Host, N)?);
    // Fill a on device 0, copy it to b on device 1, then overwrite b's
    // second half there: right only in that order.
    let first = filled(c0, a.ptr(), 3, N);
    let last = filled(c1, b.ptr().byte_add(N / 2), 7, N / 2);
    let parts = [
        ComposedPart::CommandBuffer { buffer: &first, after: &[] },
        ComposedPart::PeerCopy { context: c1, dst: b.ptr(), src: a.ptr(), size: N, after: &[0] },
        ComposedPart::CommandBuffer { buffer: &last, after: &[1] },
    ];
    let composed = ComposedCommandBuffer::new(c0, &parts)?;
    assert_eq!((composed.len(), composed.compositions()), (3, 1));
    let queue = Queue::new(c0, QueueProperties::default())?;
    let q1 = Queue::new(c1, QueueProperties::default())?;
    let mut expected = vec![3u8; N];
    expected[N / 2..].fill(7);
    for _ in 0..3 {
        q1.write_usm(b.ptr(), &[0; N], &[])?;
        queue.enqueue_composed(&composed, &[])?.wait()?;
        let mut out = vec![0u8; N];
        q1.read_usm(b.ptr(), &mut out, &[])?;
        assert_eq!(out, expected);
    }
    // Back to back: each submission after the previous one.
    let events: Vec<_> = (0..4).map(|_| queue.enqueue_composed(&composed, &[])).collect::<Result<_, _>>()?;
    for e in &events {
        e.wait()?;
    }
    // A part rebuilt (filling 5) replaces the old one: composed again.
    let again = filled(c0, a.ptr(), 5, N);
    composed.replace_part(0, &again)?;
    assert_eq!(composed.compositions(), 2);
    queue.enqueue_composed(&composed, &[])?.wait()?;
    let mut out = vec![0u8; N];
    q1.read_usm(b.ptr(), &mut out, &[])?;
    assert_eq!(&out[..N / 2], &[5u8; N / 2][..]);
    assert!(composed.last_submission().is_some());
    // Only the composition's context submits it.
    assert!(matches!(q1.enqueue_composed(&composed, &[]), Err(UrError::InvalidQueue(_))));
    Ok(())
}

#[test]
fn compositions_are_checked_once() -> Result<(), UrError> {
    let t = two();
    let [c0, c1] = &t.contexts;
    let a = UsmAllocation::new(c0, UsmKind::Host, N)?;
    let b = UsmAllocation::new(c1, UsmKind::Host, N)?;
    let cb = filled(c0, a.ptr(), 1, N);
    assert!(matches!(ComposedCommandBuffer::new(c0, &[]), Err(UrError::InvalidValue(_))));
    // A part after itself or a later one: dependencies are acyclic by construction.
    let selfish = [ComposedPart::CommandBuffer { buffer: &cb, after: &[0] }];
    assert!(matches!(ComposedCommandBuffer::new(c0, &selfish), Err(UrError::InvalidValue(_))));
    let twice = [
        ComposedPart::CommandBuffer { buffer: &cb, after: &[] },
        ComposedPart::CommandBuffer { buffer: &cb, after: &[0] },
    ];
    assert!(matches!(ComposedCommandBuffer::new(c0, &twice), Err(UrError::InvalidValue(_))));
    let open = CommandBuffer::new(c1, c1.device(), CommandBufferDesc::default())?;
    let unfinalized = [ComposedPart::CommandBuffer { buffer: &open, after: &[] }];
    assert!(matches!(ComposedCommandBuffer::new(c0, &unfinalized), Err(UrError::InvalidOperation(_))));
    // A peer copy is checked as `usm_copy_peer` is: both sides local here.
    let local = [ComposedPart::PeerCopy { context: c0, dst: a.ptr(), src: a.ptr(), size: N, after: &[] }];
    assert!(matches!(ComposedCommandBuffer::new(c0, &local), Err(UrError::InvalidValue(_))));
    let empty = [ComposedPart::PeerCopy { context: c1, dst: b.ptr(), src: a.ptr(), size: 0, after: &[] }];
    assert!(matches!(ComposedCommandBuffer::new(c0, &empty), Err(UrError::InvalidSize(_))));
    // The emulated view's command buffers are the software ones: the
    // adapter cannot compose them, and says why.
    let view = t.devices[1].emulated();
    let cv = Context::new(&view)?;
    let soft = filled(&cv, UsmAllocation::new(&cv, UsmKind::Host, N)?.ptr(), 1, N);
    let parts = [ComposedPart::CommandBuffer { buffer: &soft, after: &[] }];
    assert!(matches!(ComposedCommandBuffer::new(c0, &parts), Err(UrError::UnsupportedFeature(_))));
    Ok(())
}

/// A recorded collective as a part: checked once in the front end. The
/// CPU adapter's collectives are staged through the host, never captured,
/// so they are refused with the reason; a recording given twice, or
/// replaced into a part that is not a collective, is `InvalidValue`.
#[test]
fn collectives_are_checked_once() -> Result<(), UrError> {
    use cmdbuf_core::collective::{CollectiveOp, Communicator, DataType, ReduceOp};
    let t = two();
    let [c0, c1] = &t.contexts;
    let a = UsmAllocation::new(c0, UsmKind::Device, N)?;
    let b = UsmAllocation::new(c1, UsmKind::Device, N)?;
    let comm = Communicator::new(&[c0, c1])?;
    let op = CollectiveOp::AllReduce { count: N / 4, op: ReduceOp::Sum };
    let recorded = comm.record(op, DataType::I32, &[(a.ptr(), a.ptr()), (b.ptr(), b.ptr())])?;
    assert!(!recorded.is_captured());
    let clone = recorded.clone();
    assert!(clone.same_recording(&recorded));
    let other = comm.record(op, DataType::U32, &[(a.ptr(), a.ptr()), (b.ptr(), b.ptr())])?;
    assert!(!other.same_recording(&recorded));
    let staged = [ComposedPart::Collective { recorded: &recorded, after: &[] }];
    match ComposedCommandBuffer::new(c0, &staged) {
        Err(UrError::UnsupportedFeature(reason)) => assert!(reason.message.contains("not captured"), "{reason}"),
        other => panic!("a staged collective composed: {other:?}"),
    }
    let twice = [
        ComposedPart::Collective { recorded: &recorded, after: &[] },
        ComposedPart::Collective { recorded: &clone, after: &[0] },
    ];
    assert!(matches!(ComposedCommandBuffer::new(c0, &twice), Err(UrError::InvalidValue(_))));
    let selfish = [ComposedPart::Collective { recorded: &recorded, after: &[0] }];
    assert!(matches!(ComposedCommandBuffer::new(c0, &selfish), Err(UrError::InvalidValue(_))));
    let cb = filled(c0, a.ptr(), 1, N);
    let composed = ComposedCommandBuffer::new(c0, &[ComposedPart::CommandBuffer { buffer: &cb, after: &[] }])?;
    assert!(matches!(composed.replace_collective(0, &recorded), Err(UrError::InvalidValue(_))));
    assert!(matches!(composed.replace_collective(1, &recorded), Err(UrError::InvalidValue(_))));
    assert_eq!(composed.compositions(), 1);
    // The recording still launches directly (staged) after all that.
    let (q0, q1) = (Queue::new(c0, QueueProperties::default())?, Queue::new(c1, QueueProperties::default())?);
    q0.write_usm(a.ptr(), &[1u8; N], &[])?;
    q1.write_usm(b.ptr(), &[2u8; N], &[])?;
    for e in recorded.enqueue(&[(&q0, &[]), (&q1, &[])])? {
        e.wait()?;
    }
    let mut out = vec![0u8; N];
    q1.read_usm(b.ptr(), &mut out, &[])?;
    assert_eq!(out, [3u8; N]);
    Ok(())
}
