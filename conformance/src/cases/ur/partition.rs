//! Sub-devices (`urDevicePartition`): on devices that partition, every
//! partition they offer makes sub-devices with a parent, a partition type
//! and their share of the compute units, on which contexts, programs,
//! queues and command buffers work as on the device itself; on devices that
//! do not (CUDA, Vulkan, drivers that list no partition), every partition
//! is `DevicePartitionFailed`. The front end's checks of counts hold
//! everywhere.

use cmdbuf::{
    AffinityDomain, AppendOptions, CommandBuffer, CommandBufferDesc, Context, Device, KernelArg, KernelLaunch,
    Partition, PartitionKind, Program, Queue, QueueProperties, UsmAllocation, UsmKind,
};

use crate::harness::{CaseResult, Env, read, two_sub_device_partition};
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["partition";
        offered_partitions_make_sub_devices,
        sub_devices_run_kernels_and_command_buffers,
        sub_device_queues_work_in_their_parents_context,
        a_context_over_two_sub_devices_runs_work_on_each => Requires::TWO_SUB_DEVICES,
        counts_are_checked_before_the_adapter,
    ]
}

/// One partition of each kind the device offers, sized to make few
/// sub-devices.
fn partitions_offered(device: &Device) -> Vec<Partition> {
    let support = device.partition_support();
    let units = device.info().max_compute_units;
    let mut partitions = Vec::new();
    if support.offers(PartitionKind::Equally) {
        partitions.push(Partition::Equally((units / 2).max(1)));
    }
    if support.offers(PartitionKind::ByCounts) {
        partitions.push(Partition::ByCounts(if units >= 2 { vec![1, units - 1] } else { vec![1] }));
    }
    if support.offers(PartitionKind::ByAffinityDomain) {
        let domain = AffinityDomain::LEVELS
            .into_iter()
            .chain([AffinityDomain::NextPartitionable])
            .find(|d| support.affinity_domains.contains(d.flag()));
        partitions.extend(domain.map(Partition::ByAffinityDomain));
    }
    partitions
}

fn offered_partitions_make_sub_devices(env: &Env) -> CaseResult {
    let device = env.device();
    let units = device.info().max_compute_units;
    let support = device.partition_support();
    check!(device.parent().is_none() && device.partition_type().is_none(), "a root device has no parent");
    if support.kinds.is_empty() {
        check_eq!(support.max_sub_devices, 0);
        check!(support.affinity_domains.is_empty());
        for partition in [
            Partition::Equally(1),
            Partition::ByCounts(vec![1]),
            Partition::ByAffinityDomain(AffinityDomain::NextPartitionable),
        ] {
            check_err!(device.partition(&partition), DevicePartitionFailed);
        }
        return Ok(());
    }
    check!(support.max_sub_devices >= 1 && support.max_sub_devices <= units.max(1), "{support:?}");
    for partition in partitions_offered(device) {
        let subs = device.partition(&partition)?;
        check!(!subs.is_empty(), "{partition}: no sub-device");
        check!(subs.len() <= support.max_sub_devices as usize, "{partition}: {} sub-devices", subs.len());
        let given: Vec<u32> = subs.iter().map(|s| s.info().max_compute_units).collect();
        match &partition {
            Partition::Equally(n) => check!(given.iter().all(|g| g == n), "{partition}: {given:?}"),
            Partition::ByCounts(counts) => check_eq!(&given, counts, "{partition}"),
            Partition::ByAffinityDomain(_) => {
                check!(given.iter().sum::<u32>() <= units, "{partition}: {given:?} of {units}")
            }
        }
        for (i, sub) in subs.iter().enumerate() {
            check_eq!(sub.parent(), Some(&device.native()), "{partition}");
            check_eq!(sub.root(), device.native(), "{partition}");
            check_eq!(sub.backend(), device.backend());
            check_eq!(sub.is_emulated(), device.is_emulated());
            check!(sub.to_string().starts_with(&format!("{}.{i}", device.id())), "{sub}");
            let Some(made) = sub.partition_type() else {
                return Err(crate::CaseError::Fail(format!("{sub} has no partition type")));
            };
            check_eq!(made.kind(), partition.kind());
            if let (Partition::ByAffinityDomain(asked), Partition::ByAffinityDomain(got)) = (&partition, made) {
                check!(*asked == AffinityDomain::NextPartitionable || got == asked, "{got:?} for {asked:?}");
            }
        }
    }
    Ok(())
}

/// A sub-device of one compute unit, by counts or equally; `None` where the
/// device offers neither.
fn one_unit_sub_device(device: &Device) -> Result<Option<Device>, crate::CaseError> {
    let support = device.partition_support();
    let partition = if support.offers(PartitionKind::ByCounts) {
        Partition::ByCounts(vec![1])
    } else if support.offers(PartitionKind::Equally) {
        Partition::Equally(1)
    } else {
        return Ok(None);
    };
    Ok(Some(device.partition(&partition)?.remove(0)))
}

/// A sub-device of one compute unit runs a kernel eagerly and from a
/// command buffer, in a context and program of its own.
fn sub_devices_run_kernels_and_command_buffers(env: &Env) -> CaseResult {
    let device = env.device();
    let Some(sub) = one_unit_sub_device(device)? else {
        // What a device without partitions answers is the case above.
        return Ok(());
    };
    let context = Context::new(&sub)?;
    let program = Program::new(&context, &crate::kernels::bundle())?;
    let kernel = cmdbuf::Kernel::new(&program, "fill")?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    const N: usize = 64;
    let mem = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;
    let (eager, recorded) = (5u32, 6u32);
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&eager)];
    // SAFETY: N work-items over an allocation of N u32s.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![eager; N]);
    let cb = CommandBuffer::new(&context, &sub, CommandBufferDesc::default())?;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&recorded)];
    // SAFETY: as above.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![recorded; N]);
    Ok(())
}

/// A queue on a sub-device in a context of its parent (what libsycl makes
/// for `sycl::queue{sub_device}`): a kernel of the parent's program and a
/// memory command run through it on the context's memory, and a command
/// buffer made for the sub-device. Drivers that take no such queue (Intel's
/// OpenCL CPU runtime) answer `UnsupportedFeature`, as OpenCL's native
/// command buffers do; a device outside the context is `InvalidDevice`.
fn sub_device_queues_work_in_their_parents_context(env: &Env) -> CaseResult {
    let device = env.device();
    let Some(sub) = one_unit_sub_device(device)? else {
        // What a device without partitions answers is the first case.
        return Ok(());
    };
    let context = Context::new(device)?;
    let queue = match Queue::on_device(&context, &sub, QueueProperties::default()) {
        Err(cmdbuf::UrError::UnsupportedFeature(why)) if device.backend() == cmdbuf::Backend::OpenCl => {
            return Err(crate::CaseError::Skip(format!("the driver refuses: {why}")));
        }
        queue => queue?,
    };
    check_eq!(queue.device(), &sub);
    check_eq!(queue.context().device(), device);
    let program = Program::new(&context, &crate::kernels::bundle())?;
    let kernel = cmdbuf::Kernel::new(&program, "fill")?;
    const N: usize = 64;
    let mem = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;
    let value = 9u32;
    let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&value)];
    // SAFETY: N work-items over an allocation of N u32s.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![value; N]);
    queue.usm_fill(mem.ptr().byte_add(N * 2), &3u32.to_ne_bytes(), N * 2, &[])?.wait()?;
    let mut expected = vec![value; N / 2];
    expected.resize(N, 3);
    check_eq!(read::<u32>(&queue, mem.ptr(), N)?, expected);
    // A command buffer for the sub-device in the same context, where the
    // backend records one (OpenCL's native command buffers: not).
    match CommandBuffer::new(&context, &sub, CommandBufferDesc::default()) {
        Err(cmdbuf::UrError::UnsupportedFeature(_)) if device.backend() == cmdbuf::Backend::OpenCl => {}
        cb => {
            let cb = cb?;
            check_eq!(cb.device(), &sub);
            let recorded = 11u32;
            let args = [KernelArg::Pointer(mem.ptr()), KernelArg::value(&recorded)];
            // SAFETY: as above.
            unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
            cb.finalize()?;
            queue.enqueue_command_buffer(&cb, &[])?.wait()?;
            check_eq!(read::<u32>(&queue, mem.ptr(), N)?, vec![recorded; N]);
        }
    }
    // The parent is not in a context of its sub-device.
    let sub_context = Context::new(&sub)?;
    check_err!(Queue::on_device(&sub_context, device, QueueProperties::default()), InvalidDevice);
    Ok(())
}

/// Two sub-devices of one compute unit each, by counts or equally (an even
/// split of a device of two units); `Skip` naming why where the device
/// cannot make two.
fn two_sub_devices(device: &Device) -> Result<(Device, Device), crate::CaseError> {
    let Some(partition) = two_sub_device_partition(device) else {
        return Err(crate::CaseError::Fail(format!("{device} makes no two sub-devices, but the case requires it")));
    };
    let mut subs = device.partition(&partition)?.into_iter();
    match (subs.next(), subs.next()) {
        (Some(d1), Some(d2)) => Ok((d1, d2)),
        _ => Err(crate::CaseError::Fail(format!("{partition} made fewer than two sub-devices"))),
    }
}

/// A context over two sub-devices (`sycl::context{d1, d2}`, dpctl's
/// `test_context_multi_device`): a queue on each runs a kernel of the
/// context's program on the context's memory, one copies what the other
/// wrote, a command buffer records for the first and a graph captured on
/// the first's queue replays on the second's; the root, not
/// listed, takes no queue. A context of the root and a sub-device runs work
/// on both. OpenCL makes the `cl_context` of exactly these devices, which
/// Intel's CPU runtime needs (it takes no queue on a sub-device in its
/// parent's context).
fn a_context_over_two_sub_devices_runs_work_on_each(env: &Env) -> CaseResult {
    let device = env.device();
    let (d1, d2) = two_sub_devices(device)?;
    let context = Context::with_devices(&[d1.clone(), d2.clone()])?;
    check_eq!(context.devices(), &[d1.clone(), d2.clone()][..]);
    check!(!context.holds_device(device), "the root is not listed");
    check_err!(Queue::on_device(&context, device, QueueProperties::default()), InvalidDevice);
    let q1 = Queue::on_device(&context, &d1, QueueProperties::default())?;
    let q2 = Queue::on_device(&context, &d2, QueueProperties::default())?;
    check_eq!(q1.device(), &d1);
    check_eq!(q2.device(), &d2);
    let program = Program::new(&context, &crate::kernels::bundle())?;
    let kernel = cmdbuf::Kernel::new(&program, "fill")?;
    const N: usize = 64;
    let a = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;
    let b = UsmAllocation::new(&context, UsmKind::Device, N * 4)?;
    let (on_first, on_second) = (5u32, 6u32);
    let args = [KernelArg::Pointer(a.ptr()), KernelArg::value(&on_first)];
    // SAFETY: N work-items over an allocation of N u32s.
    let filled = unsafe { q1.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])? };
    let args = [KernelArg::Pointer(b.ptr()), KernelArg::value(&on_second)];
    // SAFETY: as above.
    let second = unsafe { q2.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])? };
    // The second device copies half of what the first wrote over its own.
    q2.usm_memcpy(b.ptr(), a.ptr(), N * 2, &[&filled, &second])?.wait()?;
    let mut expected = vec![on_first; N / 2];
    expected.resize(N, on_second);
    check_eq!(read::<u32>(&q1, b.ptr(), N)?, expected);
    check_eq!(read::<u32>(&q2, a.ptr(), N)?, vec![on_first; N]);
    // A command buffer for the first device; OpenCL's native ones record
    // for that device only, so the second may answer `UnsupportedFeature`.
    for (queue, sub, value) in [(&q1, &d1, 7u32), (&q2, &d2, 8u32)] {
        let cb = match CommandBuffer::new(&context, sub, CommandBufferDesc::default()) {
            Err(cmdbuf::UrError::UnsupportedFeature(_))
                if device.backend() == cmdbuf::Backend::OpenCl && sub == &d2 =>
            {
                continue;
            }
            cb => cb?,
        };
        check_eq!(cb.device(), sub);
        let args = [KernelArg::Pointer(a.ptr()), KernelArg::value(&value)];
        // SAFETY: as above.
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
        cb.finalize()?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        check_eq!(read::<u32>(queue, a.ptr(), N)?, vec![value; N]);
    }
    // A graph captured from the first device's queue replays on the second's.
    q1.begin_capture()?;
    q1.usm_fill(b.ptr(), &12u32.to_ne_bytes(), N * 4, &[])?;
    let graph = q1.end_capture()?.instantiate()?;
    q2.enqueue_graph(&graph, &[])?.wait()?;
    check_eq!(read::<u32>(&q2, b.ptr(), N)?, vec![12u32; N]);
    // The root listed with a sub-device: a queue on each.
    let with_root = Context::with_devices(&[device.clone(), d1.clone()])?;
    let program = Program::new(&with_root, &crate::kernels::bundle())?;
    let kernel = cmdbuf::Kernel::new(&program, "fill")?;
    let c = UsmAllocation::new(&with_root, UsmKind::Device, N * 4)?;
    for (on, value) in [(device, 9u32), (&d1, 10u32)] {
        let queue = Queue::on_device(&with_root, on, QueueProperties::default())?;
        check_eq!(queue.device(), on);
        let args = [KernelArg::Pointer(c.ptr()), KernelArg::value(&value)];
        // SAFETY: as above.
        unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
        check_eq!(read::<u32>(&queue, c.ptr(), N)?, vec![value; N]);
    }
    // The root's command buffer submitted through the sub-device's queue
    // (OpenCL: not on that queue itself, whose device it was not recorded
    // for, but in its order).
    let queue = Queue::on_device(&with_root, &d1, QueueProperties::default())?;
    let cb = CommandBuffer::new(&with_root, device, CommandBufferDesc::default())?;
    let recorded = 11u32;
    let args = [KernelArg::Pointer(c.ptr()), KernelArg::value(&recorded)];
    // SAFETY: as above.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, c.ptr(), N)?, vec![recorded; N]);
    Ok(())
}

/// Counts the device cannot give are refused by the front end with UR's
/// codes, the same on every backend that offers the kind.
fn counts_are_checked_before_the_adapter(env: &Env) -> CaseResult {
    let device = env.device();
    let support = device.partition_support();
    let units = device.info().max_compute_units;
    if support.offers(PartitionKind::Equally) {
        check_err!(device.partition(&Partition::Equally(0)), InvalidValue);
        check_err!(device.partition(&Partition::Equally(units + 1)), InvalidDevicePartitionCount);
    } else {
        check_err!(device.partition(&Partition::Equally(1)), DevicePartitionFailed);
    }
    if support.offers(PartitionKind::ByCounts) {
        check_err!(device.partition(&Partition::ByCounts(vec![])), InvalidValue);
        check_err!(device.partition(&Partition::ByCounts(vec![1, 0])), InvalidDevicePartitionCount);
        check_err!(device.partition(&Partition::ByCounts(vec![units, 1])), InvalidDevicePartitionCount);
    } else {
        check_err!(device.partition(&Partition::ByCounts(vec![1])), DevicePartitionFailed);
    }
    for domain in AffinityDomain::LEVELS.into_iter().chain([AffinityDomain::NextPartitionable]) {
        if !support.affinity_domains.contains(domain.flag()) {
            check_err!(device.partition(&Partition::ByAffinityDomain(domain)), DevicePartitionFailed);
        }
    }
    Ok(())
}
