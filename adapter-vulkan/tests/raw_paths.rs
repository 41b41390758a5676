//! The Vulkan adapter's raw-pointer paths, one test each: the host-mapped
//! status words of kernel launches (eager, and a command buffer's copied out
//! per stage), and the staging copies of linear and rect transfers, with host
//! slices sized exactly to what each command may touch. `scripts/memcheck.sh`
//! runs them under valgrind memcheck, where a byte past them is an invalid
//! access; run natively they check the results. Needs a Vulkan device (CI has
//! lavapipe); without one they are listed ignored with the reason, and fail
//! when run anyway or when `UR_RS_REQUIRE_DEVICES` names `vulkan`.

mod common;

use cmdbuf_core::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Device, Kernel, KernelArg, KernelLaunch, MemBuffer,
    MemFlags, Queue, QueueProperties, RectLayout, RectOffset, RectRegion, UsmAllocation, UsmKind,
};

fn main() {
    common::run(&[
        ("eager_status_words", eager_status_words),
        ("command_buffer_status_words", command_buffer_status_words),
        ("staging_copies_stay_inside_host_slices", staging_copies_stay_inside_host_slices),
    ]);
}

const N: usize = 64;
const LOCAL: usize = 16;

struct Fixture {
    context: Context,
    queue: Queue,
    kernel: Kernel,
    z: UsmAllocation,
    x: UsmAllocation,
    y: UsmAllocation,
}

fn fixture(device: &Device) -> Fixture {
    let context = Context::new(device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let kernel = common::saxpy_local(&context);
    let usm = |values: &[u32]| {
        let a = UsmAllocation::new(&context, UsmKind::Device, N * 4).unwrap();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        queue.write_usm(a.ptr(), &bytes, &[]).unwrap();
        a
    };
    let (z, x, y) = (usm(&[0; N]), usm(&(0..N as u32).collect::<Vec<_>>()), usm(&[5; N]));
    Fixture { context, queue, kernel, z, x, y }
}

impl Fixture {
    /// The arguments of a launch with multiplier `a` and `la` bytes of LA.
    fn args<'a>(&'a self, a: &'a u32, la: usize) -> [KernelArg<'a>; 6] {
        [
            KernelArg::Local(la),
            KernelArg::Local(8 * LOCAL),
            KernelArg::Pointer(self.z.ptr()),
            KernelArg::value(a),
            KernelArg::Pointer(self.x.ptr()),
            KernelArg::Pointer(self.y.ptr()),
        ]
    }

    fn z(&self) -> Vec<u32> {
        let mut bytes = vec![0u8; N * 4];
        self.queue.read_usm(self.z.ptr(), &mut bytes, &[]).unwrap();
        bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
}

/// A launch of `kernel` over N items in groups of LOCAL.
fn launch<'a>(kernel: &'a Kernel, args: &'a [KernelArg<'a>]) -> KernelLaunch<'a> {
    KernelLaunch::new(kernel, &[N], args).local_size(&[LOCAL])
}

/// `Z` of a successful launch with multiplier `a`.
fn expected(a: u32) -> Vec<u32> {
    // LA + LB[2l] + LB[2l+1] = gid - gid + LOCAL.
    (0..N as u32).map(|i| a * i + 5 + LOCAL as u32).collect()
}

/// An eager launch's status word: read once the launch has completed, a
/// failure is the event's error, and a later launch starts from zero.
fn eager_status_words(device: &Device) {
    let f = fixture(device);
    let a = 2u32;
    let (short, enough) = (f.args(&a, 4), f.args(&a, 4 * LOCAL));
    // SAFETY: N items over N-element allocations.
    let failed = unsafe { f.queue.launch_kernel(&launch(&f.kernel, &short), &[]) }.unwrap();
    assert!(failed.wait().is_err(), "too little local memory reported no failure");
    // SAFETY: as above.
    unsafe { f.queue.launch_kernel(&launch(&f.kernel, &enough), &[]) }.unwrap().wait().unwrap();
    assert_eq!(f.z(), expected(2));
}

/// A command buffer's status words, one per kernel command, copied out of
/// the stage for the completion check: the failing command fails each
/// submission (named, with its kernel, in the error), the good one's
/// results arrive.
fn command_buffer_status_words(device: &Device) {
    let f = fixture(device);
    let (a, b) = (3u32, 4u32);
    let (good_args, bad_ok, bad_short) = (f.args(&a, 4 * LOCAL), f.args(&b, 4 * LOCAL), f.args(&b, 4));
    let new = || CommandBuffer::new(&f.context, device, CommandBufferDesc::default()).unwrap();
    let good = new();
    // SAFETY: as in `eager_status_words`.
    unsafe { good.append_kernel_launch(&launch(&f.kernel, &good_args), &[], AppendOptions::new()) }.unwrap();
    good.finalize().unwrap();
    let bad = new();
    // SAFETY: as above.
    unsafe { bad.append_kernel_launch(&launch(&f.kernel, &bad_ok), &[], AppendOptions::new()) }.unwrap();
    // SAFETY: as above.
    unsafe { bad.append_kernel_launch(&launch(&f.kernel, &bad_short), &[], AppendOptions::new()) }.unwrap();
    bad.finalize().unwrap();
    // More rounds than a stage keeps reusable primaries: each round reuses
    // one, and the words the failing round set are clear for the next.
    for _ in 0..6 {
        let error = f.queue.enqueue_command_buffer(&bad, &[]).unwrap().wait().expect_err("the failing command");
        let message = error.to_string();
        assert!(message.contains("kernel `saxpy_local` (command 1)"), "{message}");
        f.queue.enqueue_command_buffer(&good, &[]).unwrap().wait().unwrap();
        assert_eq!(f.z(), expected(3));
    }
    // More submissions in flight at once than reusable primaries: the rest
    // record one-time primaries, and every one reports the failure.
    let burst: Vec<_> = (0..6).map(|_| f.queue.enqueue_command_buffer(&bad, &[]).unwrap()).collect();
    for event in burst {
        assert!(event.wait().is_err(), "a submission of the burst");
    }
    f.queue.enqueue_command_buffer(&good, &[]).unwrap().wait().unwrap();
    assert_eq!(f.z(), expected(3));
}

/// The host extent of a rect: the last byte of its last row.
fn extent(layout: &RectLayout, region: &RectRegion) -> usize {
    let o = layout.origin;
    o.x + (o.y + region.height - 1) * layout.row_pitch + (o.z + region.depth - 1) * layout.slice_pitch + region.width
}

/// Linear and rect transfers through staging memory, row by row, between
/// host slices that end at the last byte the command touches.
fn staging_copies_stay_inside_host_slices(device: &Device) {
    let context = Context::new(device).unwrap();
    let queue = Queue::new(&context, QueueProperties::default()).unwrap();
    let region = RectRegion::new(5, 3, 2);
    let buffer_layout = RectLayout::new(RectOffset::new(3, 1, 1), 8, 32);
    let host_layout = RectLayout::new(RectOffset::new(1, 2, 0), 7, 35);
    let size = extent(&buffer_layout, &region);
    let buffer = MemBuffer::new(&context, MemFlags::READ_WRITE, size).unwrap();
    let zeros = vec![0u8; size];
    queue.write_buffer(&buffer, 0, &zeros, &[]).unwrap();
    let host: Vec<u8> = (0..extent(&host_layout, &region)).map(|i| i as u8).collect();
    queue.write_buffer_rect(&buffer, buffer_layout, host_layout, region, &host, &[]).unwrap();
    let mut back = vec![0u8; extent(&host_layout, &region)];
    queue.read_buffer_rect(&buffer, buffer_layout, host_layout, region, &mut back, &[]).unwrap();
    let mut linear = vec![0u8; size - 1];
    queue.read_buffer(&buffer, 1, &mut linear, &[]).unwrap();
    for z in 0..region.depth {
        for y in 0..region.height {
            let h = host_layout.origin.x + (host_layout.origin.y + y) * 7 + (host_layout.origin.z + z) * 35;
            assert_eq!(back[h..h + region.width], host[h..h + region.width], "row {y} of slice {z}");
            let b = buffer_layout.origin.x + (buffer_layout.origin.y + y) * 8 + (buffer_layout.origin.z + z) * 32;
            assert_eq!(linear[b - 1..b - 1 + region.width], host[h..h + region.width], "buffer row {y} of slice {z}");
        }
    }
}
