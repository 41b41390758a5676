//! The CPU adapter's raw-pointer paths, one test each, on host memory sized
//! exactly to what each command may touch: a byte read or written past it is
//! an invalid access that `scripts/memcheck.sh` (valgrind memcheck) reports.
//! Run natively they check the results.

use cmdbuf_core::{
    ArgKind, Context, Kernel, KernelArg, KernelLaunch, KernelSignature, MemBuffer, MemFlags, NativeKernel, Program,
    ProgramBundle, ProgramSource, Queue, RectLayout, RectOffset, RectRegion, UsmAllocation, UsmKind, WorkGroup,
};

fn setup() -> (Context, Queue) {
    let device = cmdbuf_cpu::default_device();
    let context = Context::new(&device).unwrap();
    let queue = Queue::new(&context, Default::default()).unwrap();
    (context, queue)
}

/// `out[gid] = scale * in[gid] + base + group's local sum`, through every
/// argument kind: a buffer (at a sub-buffer's offset), a USM pointer, two
/// values of different sizes and a local array.
fn mixed(g: &WorkGroup<'_>) {
    let out = g.ptr::<u32>(0);
    let input = g.ptr::<u32>(1);
    let scale = g.value::<u32>(2);
    let base = g.value::<u64>(3);
    let (local, len) = g.local::<u32>(4);
    assert_eq!(len, g.local_range(0), "local size in u32s");
    for item in g.items() {
        // SAFETY: the local array holds one u32 per work-item of the group.
        unsafe { *local.add(item.local_id(0)) = item.local_id(0) as u32 };
    }
    // SAFETY: as above, written just before.
    let sum: u32 = (0..g.local_range(0)).map(|i| unsafe { *local.add(i) }).sum();
    for item in g.items() {
        let i = item.global_id(0);
        // SAFETY: the test launches one item per element of both arrays.
        unsafe { *out.add(i) = scale * *input.add(i) + base as u32 + sum };
    }
}

fn mixed_kernel(context: &Context) -> Kernel {
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new(
            "mixed",
            [ArgKind::Global, ArgKind::Global, ArgKind::Value(4), ArgKind::Value(8), ArgKind::Local],
        ))
        .source(ProgramSource::Native(vec![NativeKernel::new("mixed", mixed)]));
    Kernel::new(&Program::new(context, &bundle).unwrap(), "mixed").unwrap()
}

/// Kernel argument packing: each argument kind reaches the kernel as the
/// pointer or bytes it should, a buffer argument at its sub-buffer's offset
/// ending at the parent's last byte.
#[test]
fn kernel_arguments_of_every_kind() {
    let (context, queue) = setup();
    let kernel = mixed_kernel(&context);
    const N: usize = 32;
    let parent = MemBuffer::new(&context, MemFlags::READ_WRITE, 64 + N * 4).unwrap();
    let out = parent.partition(MemFlags::READ_WRITE, 64, N * 4).unwrap();
    let input = UsmAllocation::new(&context, UsmKind::Host, N * 4).unwrap();
    let data: Vec<u8> = (0..N as u32).flat_map(u32::to_le_bytes).collect();
    queue.write_usm(input.ptr(), &data, &[]).unwrap();
    let (scale, base) = (3u32, 100u64);
    let args = [
        KernelArg::MemObj(&out),
        KernelArg::Pointer(input.ptr()),
        KernelArg::value(&scale),
        KernelArg::value(&base),
        KernelArg::Local(8 * 4),
    ];
    // SAFETY: one work-item per element of both N-element arrays.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[8]), &[]) }
        .unwrap()
        .wait()
        .unwrap();
    let mut got = vec![0u8; N * 4];
    queue.read_buffer(&out, 0, &mut got, &[]).unwrap();
    let expected: Vec<u8> = (0..N as u32).flat_map(|i| (3 * i + 100 + (0..8).sum::<u32>()).to_le_bytes()).collect();
    assert_eq!(got, expected);
}

/// The host extent of a rect: the last byte of its last row, not whole
/// slices of pitch.
fn extent(layout: &RectLayout, region: &RectRegion) -> usize {
    let o = layout.origin;
    o.x + (o.y + region.height - 1) * layout.row_pitch + (o.z + region.depth - 1) * layout.slice_pitch + region.width
}

/// Rect reads, writes and copies row by row, with host slices that end at
/// the region's last byte and buffer regions that end at the buffer's.
#[test]
fn rect_copies_stay_inside_both_sides() {
    let (context, queue) = setup();
    let region = RectRegion::new(5, 3, 2);
    let buffer_layout = RectLayout::new(RectOffset::new(3, 1, 1), 8, 32);
    let host_layout = RectLayout::new(RectOffset::new(1, 2, 0), 7, 35);
    let size = extent(&buffer_layout, &region);
    let buffer = MemBuffer::new(&context, MemFlags::READ_WRITE, size).unwrap();
    queue.fill_buffer(&buffer, &[0xEE], 0, size, &[]).unwrap().wait().unwrap();

    let host: Vec<u8> = (0..extent(&host_layout, &region)).map(|i| i as u8).collect();
    queue.write_buffer_rect(&buffer, buffer_layout, host_layout, region, &host, &[]).unwrap();
    let mut back = vec![0u8; extent(&host_layout, &region)];
    queue.read_buffer_rect(&buffer, buffer_layout, host_layout, region, &mut back, &[]).unwrap();
    for z in 0..region.depth {
        for y in 0..region.height {
            let at = host_layout.origin.x + (host_layout.origin.y + y) * 7 + (host_layout.origin.z + z) * 35;
            assert_eq!(back[at..at + region.width], host[at..at + region.width], "row {y} of slice {z}");
        }
    }

    // Buffer to buffer: a second buffer laid out otherwise, ending where the region does.
    let dst_layout = RectLayout::new(RectOffset::new(0, 0, 0), 6, 18);
    let dst = MemBuffer::new(&context, MemFlags::READ_WRITE, extent(&dst_layout, &region)).unwrap();
    queue.copy_buffer_rect(&buffer, &dst, buffer_layout, dst_layout, region, &[]).unwrap().wait().unwrap();
    let mut packed = vec![0u8; region.bytes()];
    queue.read_buffer_rect(&dst, dst_layout, RectLayout::packed(), region, &mut packed, &[]).unwrap();
    let mut expected = Vec::new();
    for z in 0..region.depth {
        for y in 0..region.height {
            let at = host_layout.origin.x + (host_layout.origin.y + y) * 7 + (host_layout.origin.z + z) * 35;
            expected.extend_from_slice(&host[at..at + region.width]);
        }
    }
    assert_eq!(packed, expected);
}

/// Fills double the pattern in place up to the end: sizes that are not a
/// power of two of the pattern end exactly at the buffer's last byte.
#[test]
fn fills_end_at_the_last_byte() {
    let (context, queue) = setup();
    let pattern = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let size = 8 * 37;
    let buffer = MemBuffer::new(&context, MemFlags::READ_WRITE, size + 8).unwrap();
    queue.fill_buffer(&buffer, &pattern, 8, size, &[]).unwrap().wait().unwrap();
    let usm = UsmAllocation::new(&context, UsmKind::Shared, 4 * 13).unwrap();
    queue.usm_fill(usm.ptr(), &[9, 9, 9, 9], 4 * 13, &[]).unwrap().wait().unwrap();
    let mut got = vec![0u8; size];
    queue.read_buffer(&buffer, 8, &mut got, &[]).unwrap();
    assert_eq!(got, pattern.repeat(37));
    let mut got = vec![0u8; 4 * 13];
    queue.read_usm(usm.ptr(), &mut got, &[]).unwrap();
    assert_eq!(got, vec![9; 4 * 13]);
}

/// USM and buffer copies between exactly sized allocations and host slices.
#[test]
fn linear_copies_between_exact_allocations() {
    let (context, queue) = setup();
    let a = UsmAllocation::new(&context, UsmKind::Device, 29).unwrap();
    let b = UsmAllocation::new(&context, UsmKind::Host, 29).unwrap();
    let data: Vec<u8> = (0..29).collect();
    queue.write_usm(a.ptr(), &data, &[]).unwrap();
    queue.usm_memcpy(b.ptr(), a.ptr(), 29, &[]).unwrap().wait().unwrap();
    let src = MemBuffer::with_data(&context, MemFlags::READ_WRITE, &data).unwrap();
    let dst = MemBuffer::new(&context, MemFlags::READ_WRITE, 13).unwrap();
    queue.copy_buffer(&src, &dst, 16, 0, 13, &[]).unwrap().wait().unwrap();
    let mut got = vec![0u8; 29];
    queue.read_usm(b.ptr(), &mut got, &[]).unwrap();
    assert_eq!(got, data);
    let mut got = vec![0u8; 13];
    queue.read_buffer(&dst, 0, &mut got, &[]).unwrap();
    assert_eq!(got, data[16..]);
}
