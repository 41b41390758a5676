//! Front-end answers for calls the C ABI forwards (issue 26): events of
//! several contexts waited for together (as UR's conformance suite has it),
//! and USM alignments the device does not give (`ur_api.h`'s codes).

use cmdbuf_core::{Context, Event, Queue, QueueProperties, UrError, UsmAllocation, UsmKind};

#[test]
fn events_of_two_contexts_are_waited_for_together() {
    let device = cmdbuf_cpu::default_device();
    let (c1, c2) = (Context::new(&device).unwrap(), Context::new(&device).unwrap());
    let (q1, q2) =
        (Queue::new(&c1, QueueProperties::default()).unwrap(), Queue::new(&c2, QueueProperties::default()).unwrap());
    let (e1, e2) = (q1.events_wait(&[]).unwrap(), q2.events_wait(&[]).unwrap());
    Event::wait_all(&[&e1, &e2]).unwrap();
    // A failed command of either context is the wait's error, after both ended.
    let failed = cmdbuf_core::UserEvent::new(&c2).unwrap();
    failed.fail("failed on purpose").unwrap();
    let mixed = Event::wait_all(&[failed.event(), &e1]);
    assert!(mixed.is_err(), "{mixed:?}");
    let e3 = q1.events_wait(&[]).unwrap();
    Event::wait_all(&[&e1, &e3]).unwrap();
    Event::wait_all(&[]).unwrap();
}

#[test]
fn usm_alignments_the_device_does_not_give_are_invalid_values() {
    let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    let max = context.device().info().max_mem_alloc_size;
    for align in [3usize, 96] {
        let r = UsmAllocation::with_alignment(&context, UsmKind::Device, 64, align);
        assert!(matches!(r, Err(UrError::InvalidValue(_))), "align {align}: {r:?}");
    }
    let beyond = (max as usize).saturating_add(1).next_power_of_two();
    let r = UsmAllocation::with_alignment(&context, UsmKind::Device, 64, beyond);
    assert!(matches!(r, Err(UrError::InvalidValue(_))), "align {beyond}: {r:?}");
    let ok = UsmAllocation::with_alignment(&context, UsmKind::Device, 64, 4096).unwrap();
    assert_eq!(ok.ptr().addr() % 4096, 0);
}

/// A kernel that requires a sub-group size the device does not run is made
/// and answers its queries, but its launch, eager or recorded, is
/// `UnsupportedFeature`; the size the device runs launches.
#[test]
fn kernels_requiring_another_sub_group_size_do_not_launch() {
    use cmdbuf_core::{
        AppendOptions, ArgKind, CommandBuffer, CommandBufferDesc, Kernel, KernelLaunch, KernelSignature, NativeKernel,
        Program, ProgramBundle, ProgramSource, WorkGroup,
    };
    fn nothing(_: &WorkGroup<'_>) {}
    let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let sizes = context.device().info().sub_groups.sizes.clone();
    let unsupported = (1..=64).find(|s| !sizes.contains(s)).unwrap();
    let kernel_requiring = |size: u32| {
        let mut signature = KernelSignature::new("nothing", [ArgKind::Value(4)]);
        signature.reqd_sub_group_size = Some(size);
        let bundle = ProgramBundle::new()
            .kernel(signature)
            .source(ProgramSource::Native(vec![NativeKernel::new("nothing", nothing)]));
        Kernel::new(&Program::new(&context, &bundle).unwrap(), "nothing").unwrap()
    };
    let args = [cmdbuf_core::KernelArg::value(&0u32)];
    let refused = kernel_requiring(unsupported);
    assert_eq!(refused.signature().reqd_sub_group_size, Some(unsupported));
    // SAFETY: the kernel does nothing.
    let eager = unsafe { queue.launch_kernel(&KernelLaunch::new(&refused, &[4], &args), &[]) };
    assert!(matches!(eager, Err(UrError::UnsupportedFeature(_))), "{eager:?}");
    let cb = CommandBuffer::new(&context, context.device(), CommandBufferDesc::default()).unwrap();
    // SAFETY: as above.
    let recorded =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&refused, &[4], &args), &[], AppendOptions::new()) };
    assert!(matches!(recorded, Err(UrError::UnsupportedFeature(_))), "{recorded:?}");
    let runs = kernel_requiring(sizes[0]);
    // SAFETY: as above.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&runs, &[4], &args), &[]) }.unwrap().wait().unwrap();
}
