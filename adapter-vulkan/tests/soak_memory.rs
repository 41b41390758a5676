//! Issue 16: repeated submissions of a native command buffer must not make
//! the adapter touch fresh memory each time. Each submission takes a slice
//! of the host-visible arena (the stage's status words); once the submission
//! has completed the slice is released, so the arena must hand the same bytes
//! out again instead of walking on through its chunks (which grew resident
//! memory by up to the chunk size times the chunks kept). Needs a Vulkan
//! device (CI has lavapipe); without one the test is listed ignored with the
//! reason, and fails when run anyway or when `UR_RS_REQUIRE_DEVICES` names
//! `vulkan`. Its own binary: the arena's high-water mark is per process.

mod common;

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Device, KernelArg, KernelLaunch, Queue, QueueProperties,
    UsmAllocation, UsmKind,
};

const N: usize = 64;
const LOCAL: usize = 16;
/// Submissions after the warm-up: at 64 bytes of arena each, the old arena
/// walked 256 KiB further.
const SUBMISSIONS: usize = 4000;
/// What the high-water mark may still move after the warm-up: a slice still
/// held by a completion thread that has not yet dropped it makes the next
/// submission take the following bytes, a few times at most.
const SLACK: u64 = 32 << 10;

fn main() {
    common::run(&[("repeated_submissions_reuse_arena_memory", repeated_submissions_reuse_arena_memory)]);
}

fn repeated_submissions_reuse_arena_memory(device: &Device) {
    let context = Context::new(device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let kernel = common::saxpy_local(&context);
    let usm = || UsmAllocation::new(&context, UsmKind::Device, N * 4).unwrap();
    let (z, x, y) = (usm(), usm(), usm());
    let a = 2u32;
    let args = [
        KernelArg::Local(4 * LOCAL),
        KernelArg::Local(8 * LOCAL),
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&a),
        KernelArg::Pointer(x.ptr()),
        KernelArg::Pointer(y.ptr()),
    ];
    let cb = CommandBuffer::new(&context, device, CommandBufferDesc::default()).unwrap();
    let launch = KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]);
    // SAFETY: N items over N-element allocations.
    unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new()) }.unwrap();
    cb.finalize().unwrap();
    for _ in 0..100 {
        queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
    }
    let warm = cmdbuf_vulkan::arena_high_water();
    assert!(warm > 0, "the command buffer's submissions took no arena memory: the test measures nothing");
    for _ in 0..SUBMISSIONS {
        queue.enqueue_command_buffer(&cb, &[]).unwrap().wait().unwrap();
    }
    let last = cmdbuf_vulkan::arena_high_water();
    assert!(
        last - warm <= SLACK,
        "{SUBMISSIONS} submissions moved the arena's high-water mark from {warm} to {last} bytes"
    );
}
