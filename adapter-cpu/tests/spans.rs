//! Wide fan-outs are scheduled as spans of node lists, split across the
//! workers: every node must run exactly once per replay, after its
//! predecessors, however the spans were split and stolen.

mod common;

use cmdbuf_core::{AppendOptions, CommandBuffer, CommandBufferDesc, KernelArg, KernelLaunch, UsmAllocation, UsmKind};
use common::{read_u32, setup};

#[test]
fn fork_join_and_wide_roots_run_every_node_once_per_replay() {
    let device = cmdbuf_cpu::default_device();
    let (context, queue, _, increment) = setup(&device);
    const WIDTH: usize = 1000;
    const REPLAYS: u32 = 20;
    let data = UsmAllocation::new(&context, UsmKind::Device, WIDTH * 4).unwrap();
    let copy = UsmAllocation::new(&context, UsmKind::Device, WIDTH * 4).unwrap();
    let args = [KernelArg::Pointer(data.ptr())];
    let offsets: Vec<[usize; 1]> = (0..WIDTH).map(|i| [i]).collect();
    let one = |i: usize| KernelLaunch::new(&increment, &[1], &args).global_offset(&offsets[i]);

    // Roots: WIDTH independent increments; then a fork of WIDTH increments
    // after one node, and a join copying the result out.
    let cb = CommandBuffer::new(&context, &device, CommandBufferDesc::default()).unwrap();
    let mut roots = Vec::new();
    for i in 0..WIDTH {
        // SAFETY: work-item i increments element i of a WIDTH-element allocation.
        roots.push(unsafe { cb.append_kernel_launch(&one(i), &[], AppendOptions::new()) }.unwrap().sync_point);
    }
    let fork = cb.append_usm_fill(copy.ptr(), &[0], WIDTH * 4, AppendOptions::new().after(&roots)).unwrap().sync_point;
    let mut branches = Vec::new();
    for i in 0..WIDTH {
        // SAFETY: as above.
        let b = unsafe { cb.append_kernel_launch(&one(i), &[], AppendOptions::new().after(&[fork])) }.unwrap();
        branches.push(b.sync_point);
    }
    cb.append_usm_memcpy(copy.ptr(), data.ptr(), WIDTH * 4, AppendOptions::new().after(&branches)).unwrap();
    cb.finalize().unwrap();

    let mut last = None;
    for _ in 0..REPLAYS {
        last = Some(queue.enqueue_command_buffer(&cb, &[]).unwrap());
    }
    last.unwrap().wait().unwrap();
    assert_eq!(read_u32(&queue, copy.ptr(), WIDTH), vec![2 * REPLAYS; WIDTH]);
}
