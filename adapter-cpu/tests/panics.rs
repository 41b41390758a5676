//! A kernel that panics makes its event report an error; the process and
//! later submissions carry on.

mod common;

use cmdbuf_core::{
    AppendOptions, CommandBufferDesc, EventStatus, KernelArg, KernelLaunch, UrError, UsmAllocation, UsmKind,
};
use common::{read_u32, setup};

#[test]
fn eager_kernel_panic_is_an_event_error() {
    let device = cmdbuf_cpu::default_device();
    let (context, queue, boom, increment) = setup(&device);
    // SAFETY: `boom` touches no memory.
    let event = unsafe { queue.launch_kernel(&KernelLaunch::new(&boom, &[64], &[]).local_size(&[8]), &[]) }.unwrap();
    let err = event.wait().unwrap_err();
    assert!(matches!(err, UrError::AdapterSpecific(_)), "{err}");
    assert!(err.to_string().contains("kernel `boom` panicked: boom in group 7"), "{err}");
    assert_eq!(event.status(), EventStatus::Error);

    // The queue goes on: an in-order successor still runs.
    let counter = UsmAllocation::new(&context, UsmKind::Device, 4).unwrap();
    queue.write_usm(counter.ptr(), &[0; 4], &[]).unwrap();
    let args = [KernelArg::Pointer(counter.ptr())];
    // SAFETY: one work-item increments the one-element counter.
    let next = unsafe { queue.launch_kernel(&KernelLaunch::new(&increment, &[1], &args), &[&event]) }.unwrap();
    next.wait().unwrap();
    assert_eq!(read_u32(&queue, counter.ptr(), 1), vec![1]);
}

#[test]
fn command_buffer_panic_fails_the_run_and_skips_the_rest() {
    let device = cmdbuf_cpu::default_device();
    let (context, queue, boom, increment) = setup(&device);
    let counter = UsmAllocation::new(&context, UsmKind::Device, 4).unwrap();
    queue.write_usm(counter.ptr(), &[0; 4], &[]).unwrap();
    let args = [KernelArg::Pointer(counter.ptr())];
    let inc = KernelLaunch::new(&increment, &[1], &args);

    let cb =
        cmdbuf_core::CommandBuffer::new(&context, &device, CommandBufferDesc { in_order: true, ..Default::default() })
            .unwrap();
    // SAFETY: `increment` over one item of a one-element counter; `boom` touches nothing.
    unsafe {
        cb.append_kernel_launch(&inc, &[], AppendOptions::new()).unwrap();
        let failing = cb
            .append_kernel_launch(&KernelLaunch::new(&boom, &[4], &[]), &[], AppendOptions::new().signal_event())
            .unwrap();
        let after = cb.append_kernel_launch(&inc, &[], AppendOptions::new().signal_event()).unwrap();
        cb.finalize().unwrap();

        for run in 1..=2 {
            let err = queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap_err();
            assert!(err.to_string().contains("panicked"), "{err}");
            assert_eq!(failing.event.as_ref().unwrap().status(), EventStatus::Error);
            let skipped = after.event.as_ref().unwrap().wait().unwrap_err();
            assert!(skipped.to_string().contains("skipped"), "{skipped}");
            // The command before the panic ran; the one after did not.
            assert_eq!(read_u32(&queue, counter.ptr(), 1), vec![run]);
        }
    }

    // Another command buffer on the same queue runs normally.
    let ok = cmdbuf_core::CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
    // SAFETY: as above.
    unsafe { ok.append_kernel_launch(&inc, &[], AppendOptions::new()).unwrap() };
    ok.finalize().unwrap();
    queue.enqueue_command_buffer(&ok, &[]).unwrap().wait().unwrap();
    assert_eq!(read_u32(&queue, counter.ptr(), 1), vec![3]);
}
