//! Device partitioning through the front end, on the CPU adapter: the
//! checks written once in cmdbuf-core, and sub-devices that work as devices.

use cmdbuf_core::{
    AffinityDomain, AffinityDomains, Context, Device, Partition, PartitionKind, Queue, QueueProperties, UrError,
    UsmAllocation, UsmKind,
};

fn device() -> Device {
    cmdbuf_cpu::default_device()
}

#[test]
fn the_cpu_device_partitions_equally_and_by_counts() {
    let device = device();
    let units = device.info().max_compute_units;
    let support = device.partition_support();
    assert!(support.offers(PartitionKind::Equally) && support.offers(PartitionKind::ByCounts));
    assert_eq!(support.max_sub_devices, units);
    assert!(device.parent().is_none() && device.partition_type().is_none());

    let subs = device.partition(&Partition::Equally(1)).unwrap();
    assert_eq!(subs.len(), units as usize);
    for (i, sub) in subs.iter().enumerate() {
        assert_eq!(sub.info().max_compute_units, 1);
        assert_eq!(sub.parent(), Some(&device));
        assert_eq!(sub.partition_type(), Some(&Partition::Equally(1)));
        assert_eq!(sub.to_string(), format!("{device}.{i}"));
        assert_eq!(sub.root(), device);
    }
    let all = device.partition(&Partition::ByCounts(vec![units])).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].info().max_compute_units, units);
    // Each call makes new sub-devices.
    assert_ne!(device.partition(&Partition::ByCounts(vec![units])).unwrap()[0], all[0]);
}

#[test]
fn partitions_the_device_cannot_give_are_typed_errors() {
    let device = device();
    let units = device.info().max_compute_units;
    let err = |p: Partition| device.partition(&p).map(|_| ()).unwrap_err();
    assert!(matches!(err(Partition::Equally(0)), UrError::InvalidValue(_)));
    assert!(matches!(err(Partition::Equally(units + 1)), UrError::InvalidDevicePartitionCount(_)));
    assert!(matches!(err(Partition::ByCounts(vec![])), UrError::InvalidValue(_)));
    assert!(matches!(err(Partition::ByCounts(vec![1, 0])), UrError::InvalidDevicePartitionCount(_)));
    assert!(matches!(err(Partition::ByCounts(vec![units, 1])), UrError::InvalidDevicePartitionCount(_)));
    assert!(matches!(err(Partition::ByCounts(vec![1; units as usize + 1])), UrError::InvalidDevicePartitionCount(_)));
    let offered = device.partition_support().affinity_domains;
    for domain in AffinityDomain::LEVELS.into_iter().chain([AffinityDomain::NextPartitionable]) {
        let result = device.partition(&Partition::ByAffinityDomain(domain));
        if offered.contains(domain.flag()) {
            let subs = result.unwrap();
            let total: u32 = subs.iter().map(|s| s.info().max_compute_units).sum();
            assert_eq!(total, units, "{domain:?} hands out every unit once");
            for sub in &subs {
                let Some(Partition::ByAffinityDomain(made)) = sub.partition_type() else { panic!("{domain:?}") };
                // The next partitionable domain is reported as the level it split along.
                assert_ne!(*made, AffinityDomain::NextPartitionable);
                assert!(domain == AffinityDomain::NextPartitionable || *made == domain);
            }
            if domain == AffinityDomain::NextPartitionable {
                assert!(subs.len() > 1);
            }
        } else {
            assert!(matches!(result.map(|_| ()).unwrap_err(), UrError::DevicePartitionFailed(_)), "{domain:?}");
        }
    }
    assert_eq!(offered.is_empty(), !device.partition_support().offers(PartitionKind::ByAffinityDomain));
    assert!(offered.difference(AffinityDomains::all()).is_empty());
}

#[test]
fn a_sub_device_runs_work_like_its_parent_and_partitions_again() {
    let device = device();
    let sub = device.partition(&Partition::Equally(1)).unwrap().remove(0);
    let context = Context::new(&sub).unwrap();
    assert_eq!(context.device(), &sub);
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let usm = UsmAllocation::new(&context, UsmKind::Device, 64).unwrap();
    let filled = queue.usm_fill(usm.ptr(), &[7u8], 64, &[]).unwrap();
    let mut out = [0u8; 64];
    queue.read_usm(usm.ptr(), &mut out, &[&filled]).unwrap();
    assert_eq!(out, [7u8; 64]);
    let again = sub.partition(&Partition::ByCounts(vec![1])).unwrap();
    assert_eq!(again[0].parent(), Some(&sub));
    assert_eq!(again[0].root(), device);
    assert_eq!(again[0].to_string(), format!("{device}.0.0"));
    // Sub-devices of an emulated view are emulated views.
    let emulated = device.emulated().partition(&Partition::Equally(1)).unwrap().remove(0);
    assert!(emulated.is_emulated());
    assert_eq!(emulated.parent(), Some(&device));
}

#[test]
fn a_sub_device_queue_runs_in_a_context_of_an_ancestor() {
    let device = device();
    let units = device.info().max_compute_units;
    let sub = device.partition(&Partition::ByCounts(vec![units])).unwrap().remove(0);
    let grandchild = sub.partition(&Partition::ByCounts(vec![1])).unwrap().remove(0);
    let context = Context::new(&device).unwrap();
    assert!(context.holds_device(&device) && context.holds_device(&sub) && context.holds_device(&grandchild));
    let queue = Queue::on_device(&context, &grandchild, QueueProperties::default()).unwrap();
    assert_eq!(queue.device(), &grandchild);
    assert_eq!(queue.context().device(), &device);
    let usm = UsmAllocation::new(&context, UsmKind::Device, 64).unwrap();
    let filled = queue.usm_fill(usm.ptr(), &[9u8], 64, &[]).unwrap();
    let mut out = [0u8; 64];
    queue.read_usm(usm.ptr(), &mut out, &[&filled]).unwrap();
    assert_eq!(out, [9u8; 64]);
    // The context's own device takes the ordinary path.
    assert_eq!(Queue::on_device(&context, &device, QueueProperties::default()).unwrap().device(), &device);

    // Neither an ancestor, a sibling's sub-device nor another view is held.
    let sub_context = Context::new(&sub).unwrap();
    assert!(!sub_context.holds_device(&device));
    let other = device.partition(&Partition::ByCounts(vec![1])).unwrap().remove(0);
    let emulated = Context::new(&device.emulated()).unwrap();
    for (context, device) in [(&sub_context, &device), (&sub_context, &other), (&emulated, &sub)] {
        let refused = Queue::on_device(context, device, QueueProperties::default());
        assert!(matches!(refused, Err(UrError::InvalidDevice(_))), "{device} in {context:?}");
    }
    // An emulated view's sub-device is held by a context of that view.
    let emulated_sub = device.emulated().partition(&Partition::Equally(1)).unwrap().remove(0);
    assert!(emulated.holds_device(&emulated_sub));
}

#[test]
fn a_context_over_a_device_family_runs_work_on_each_listed_device() {
    let device = device();
    let units = device.info().max_compute_units;
    let counts = if units >= 2 { vec![1, units - 1] } else { vec![1] };
    let subs = device.partition(&Partition::ByCounts(counts)).unwrap();
    let (d1, d2) = (&subs[0], subs.last().unwrap());
    let grandchild = d2.partition(&Partition::ByCounts(vec![1])).unwrap().remove(0);

    // Two sub-devices (a device listed twice counts once): made on the root,
    // which it does not hold.
    let context = Context::with_devices(&[d1.clone(), d2.clone(), d1.clone()]).unwrap();
    let listed: Vec<Device> = if d1 == d2 { vec![d1.clone()] } else { vec![d1.clone(), d2.clone()] };
    assert_eq!(context.devices(), listed.as_slice());
    assert!(context.holds_device(d1) && context.holds_device(d2) && context.holds_device(&grandchild));
    assert!(!context.holds_device(&device));
    if d1 != d2 {
        assert_eq!(context.device(), &device);
    }
    let refused = Queue::on_device(&context, &device, QueueProperties::default());
    assert!(matches!(refused, Err(UrError::InvalidDevice(_))), "{refused:?}");
    // A queue with no device named runs on the first listed one.
    assert_eq!(Queue::new(&context, QueueProperties::default()).unwrap().device(), d1);

    // Shared memory filled on d1, copied to device memory on d2, read back.
    let q1 = Queue::on_device(&context, d1, QueueProperties::default()).unwrap();
    let q2 = Queue::on_device(&context, d2, QueueProperties::default()).unwrap();
    assert_eq!((q1.device(), q2.device()), (d1, d2));
    let shared = UsmAllocation::new(&context, UsmKind::Shared, 64).unwrap();
    let on_device = UsmAllocation::new(&context, UsmKind::Device, 64).unwrap();
    q1.usm_fill(shared.ptr(), &[7u8], 64, &[]).unwrap();
    q1.finish().unwrap();
    let copied = q2.usm_memcpy(on_device.ptr(), shared.ptr(), 64, &[]).unwrap();
    let mut out = [0u8; 64];
    q2.read_usm(on_device.ptr(), &mut out, &[&copied]).unwrap();
    assert_eq!(out, [7u8; 64]);

    // A graph captured from d1's queue (its command buffer is for the first
    // listed device: the root is not held) replays on d2's.
    q1.begin_capture().unwrap();
    q1.usm_fill(on_device.ptr(), &[9u8], 64, &[]).unwrap();
    let graph = q1.end_capture().unwrap().instantiate().unwrap();
    let replayed = q2.enqueue_graph(&graph, &[]).unwrap();
    q2.read_usm(on_device.ptr(), &mut out, &[&replayed]).unwrap();
    assert_eq!(out, [9u8; 64]);

    // The root with its sub-devices: the root is held and is the first device.
    let with_root = Context::with_devices(&[device.clone(), d1.clone(), grandchild.clone()]).unwrap();
    assert_eq!(with_root.devices().len(), 3);
    assert_eq!(Queue::new(&with_root, QueueProperties::default()).unwrap().device(), &device);

    // One device is a context of it, as Context::new.
    assert_eq!(Context::with_devices(std::slice::from_ref(d2)).unwrap().device(), d2);
    assert!(matches!(Context::with_devices(&[]), Err(UrError::InvalidSize(_))));
    // Devices of different views are not one family.
    let mixed = Context::with_devices(&[device.clone(), device.emulated()]);
    assert!(matches!(mixed, Err(UrError::UnsupportedFeature(_))), "{mixed:?}");
}
