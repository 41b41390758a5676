//! `cmdbuf_core::live_objects` follows creation and release of every counted
//! kind. One test in its own process: the counters are global.

use cmdbuf_core::{
    AppendOptions, ArgKind, CommandBuffer, CommandBufferDesc, Context, Kernel, KernelArg, KernelLaunch,
    KernelSignature, LiveObjects, NativeKernel, Program, ProgramBundle, ProgramSource, Queue, QueueProperties,
    UsmAllocation, UsmKind, WorkGroup, live_objects,
};

fn touch(g: &WorkGroup<'_>) {
    let p = g.ptr::<u32>(0);
    for item in g.items() {
        // SAFETY: the test launches over an allocation of one u32 per work-item.
        unsafe { *p.add(item.global_id(0)) += 1 };
    }
}

#[test]
fn counts_follow_objects() {
    let before = live_objects();
    assert_eq!(before, LiveObjects::default(), "nothing is live before the test creates anything");

    let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("touch", [ArgKind::Global]))
        .source(ProgramSource::Native(vec![NativeKernel::new("touch", touch)]));
    let program = Program::new(&context, &bundle).unwrap();
    let kernel = Kernel::new(&program, "touch").unwrap();
    let usm = UsmAllocation::new(&context, UsmKind::Shared, 16).unwrap();
    let cb = CommandBuffer::new(&context, context.device(), CommandBufferDesc::default()).unwrap();
    let args = [KernelArg::Pointer(usm.ptr())];
    // SAFETY: four work-items over a four-u32 allocation.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[4], &args), &[], AppendOptions::new()).unwrap() };
    cb.finalize().unwrap();
    let event = queue.enqueue_command_buffer(&cb, &[]).unwrap();
    let copy = event.clone();

    let now = live_objects();
    assert_eq!((now.contexts, now.queues, now.programs, now.kernels), (1, 1, 1, 1), "{now:?}");
    assert_eq!((now.usm_allocations, now.command_buffers), (1, 1), "{now:?}");
    // The two handles of the enqueue's event, plus any the queue holds itself.
    assert!(now.events >= 2, "{now:?}");
    let handles = live_objects().events;
    drop(copy);
    assert_eq!(live_objects().events, handles - 1, "dropping a clone releases one event handle");

    // Handles of one object count it once.
    let second = context.clone();
    assert_eq!(live_objects().contexts, 1);
    drop(second);

    event.wait().unwrap();
    queue.finish().unwrap();
    drop(event);
    drop((cb, kernel, program, usm, queue, context));
    assert_eq!(live_objects(), LiveObjects::default(), "everything is released at the end");
    assert_eq!(live_objects().total(), 0);
}
