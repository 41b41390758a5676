//! With a single worker nothing may block it: kernels with many work-groups
//! inside command-buffer nodes, wide DAGs and cross-queue event waits must all
//! complete. Its own test binary, so the variable applies to this process only.

mod common;

use cmdbuf_core::{AppendOptions, CommandBufferDesc, KernelArg, KernelLaunch, UsmAllocation, UsmKind};
use common::{read_u32, setup};

#[test]
fn one_worker_runs_nested_parallel_work() {
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var(cmdbuf_cpu::THREADS_ENV, "1") };
    let device = cmdbuf_cpu::default_device();
    assert_eq!(device.info().max_compute_units, 1);
    let (context, queue, _, increment) = setup(&device);
    const BRANCHES: usize = 16;
    const PER_BRANCH: usize = 1024;
    const N: usize = BRANCHES * PER_BRANCH;
    let data = UsmAllocation::new(&context, UsmKind::Device, N * 4).unwrap();
    let copy = UsmAllocation::new(&context, UsmKind::Device, N * 4).unwrap();
    let cb = cmdbuf_core::CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
    let args = [KernelArg::Pointer(data.ptr())];
    let root = cb.append_usm_fill(data.ptr(), &[0], N * 4, AppendOptions::new()).unwrap().sync_point;
    let mut ends = Vec::new();
    for b in 0..BRANCHES {
        let offset = [b * PER_BRANCH];
        let launch = KernelLaunch::new(&increment, &[PER_BRANCH], &args).local_size(&[16]).global_offset(&offset);
        // Each branch increments its own slice twice, in a chain of two nodes
        // with 64 work-groups each.
        // SAFETY: the items of branch b touch elements [b*1024, (b+1)*1024) of an N-element allocation.
        let first = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&[root])) }.unwrap();
        // SAFETY: as above.
        let second =
            unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&[first.sync_point])) }.unwrap();
        ends.push(second.sync_point);
    }
    cb.append_usm_memcpy(copy.ptr(), data.ptr(), N * 4, AppendOptions::new().after(&ends)).unwrap();
    cb.finalize().unwrap();

    // A second queue waits on the first queue's submission.
    let other = cmdbuf_core::Queue::new(&context, Default::default()).unwrap();
    let run = queue.enqueue_command_buffer(&cb, &[]).unwrap();
    let again = other.enqueue_command_buffer(&cb, &[&run]).unwrap();
    again.wait().unwrap();
    assert_eq!(read_u32(&queue, copy.ptr(), N), vec![2; N]);
}
