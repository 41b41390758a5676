//! Sub-buffers (`urMemBufferPartition`, UR's `urMemBufferPartition.cpp`
//! and OpenCL's sub-buffer rules): the partition's validation, and a
//! sub-buffer used wherever a buffer is — reads, writes, copies, fills, rect
//! transfers, maps, kernel arguments and command-buffer appends — reaching
//! exactly its region of the parent and nothing outside it.

use cmdbuf::{
    AppendOptions, CommandBufferDesc, KernelArg, KernelLaunch, KernelLaunchUpdate, MapFlags, MemBuffer, MemFlags,
    RectLayout, RectOffset, RectRegion, UpdateCapabilities, UsmKind,
};

use crate::harness::{CaseResult, Env, fill_reference, pattern, read, read_buffer};
use crate::kernels::saxpy_reference;
use crate::{Requires, cases, check, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["sub_buffer";
        partition_rules,
        read_write_inside_region,
        copy_and_fill,
        fill_patterns_at_smallest_origin,
        rect_transfers,
        map_unmap,
        kernel_arguments,
        command_buffer_appends,
        kernel_argument_update => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
        outlives_parent_handle,
    ]
}

/// The device's base address alignment in bytes: sub-buffer origins are
/// multiples of it.
fn align(env: &Env) -> usize {
    (env.device().info().mem_base_addr_align_bits as usize / 8).max(1)
}

/// A parent of `regions` regions of `align`-rounded `size` bytes each, filled
/// with a pattern, and the stride between regions.
fn parent(env: &Env, regions: usize, size: usize) -> Result<(MemBuffer, Vec<u8>, usize), crate::harness::CaseError> {
    let stride = size.next_multiple_of(align(env));
    let data = pattern(stride * regions, 41);
    Ok((env.buffer_with(&data)?, data, stride))
}

/// UR's partition tests and OpenCL's flag rules.
fn partition_rules(env: &Env) -> CaseResult {
    let align = align(env);
    let size = 4 * align.max(256);
    let rw = env.buffer(size)?;
    let sub = rw.partition(MemFlags::empty(), align, 2 * align)?;
    check_eq!((sub.size(), sub.offset(), sub.flags()), (2 * align, align, MemFlags::READ_WRITE));
    check!(sub.parent().is_some_and(|p| p.size() == size), "the parent of a sub-buffer");
    check!(rw.parent().is_none() && rw.offset() == 0, "a root buffer has no parent");
    // A native object of its own only where the backend makes one (OpenCL).
    match env.device().backend() {
        cmdbuf::Backend::OpenCl => {
            let (own, root) = (sub.native_handle()?.0, rw.native_handle()?.0);
            check!(own != 0 && own != root, "the sub-buffer's cl_mem {own:#x}, the parent's {root:#x}");
        }
        _ => check_err!(sub.native_handle(), UnsupportedFeature),
    }
    check_eq!(rw.partition(MemFlags::READ_ONLY, 0, 16)?.flags(), MemFlags::READ_ONLY);
    check_eq!(rw.partition(MemFlags::WRITE_ONLY, 0, 16)?.flags(), MemFlags::WRITE_ONLY);
    // Regions may overlap, and may cover the whole parent.
    rw.partition(MemFlags::empty(), 0, size)?;
    check_err!(rw.partition(MemFlags::empty(), 0, 0), InvalidBufferSize);
    check_err!(rw.partition(MemFlags::empty(), 0, size + 1), InvalidBufferSize);
    check_err!(rw.partition(MemFlags::empty(), align, size), InvalidBufferSize);
    check_err!(rw.partition(MemFlags::empty(), usize::MAX - 7, 16), InvalidBufferSize);
    if align > 1 {
        check_err!(rw.partition(MemFlags::empty(), align / 2, 16), MisalignedSubBufferOffset);
        check_err!(rw.partition(MemFlags::empty(), align + 1, 16), MisalignedSubBufferOffset);
    }
    check_err!(sub.partition(MemFlags::empty(), 0, 16), InvalidMemObject);
    check_err!(rw.partition(MemFlags::READ_ONLY | MemFlags::WRITE_ONLY, 0, 16), InvalidValue);
    check_err!(rw.partition(MemFlags::ALLOC_HOST_POINTER, 0, 16), InvalidValue);

    let ro = cmdbuf::MemBuffer::new(env.context(), MemFlags::READ_ONLY, size)?;
    check_eq!(ro.partition(MemFlags::empty(), 0, 16)?.flags(), MemFlags::READ_ONLY, "inherited access");
    check_err!(ro.partition(MemFlags::READ_WRITE, 0, 16), InvalidValue);
    check_err!(ro.partition(MemFlags::WRITE_ONLY, 0, 16), InvalidValue);
    let wo = cmdbuf::MemBuffer::new(env.context(), MemFlags::WRITE_ONLY, size)?;
    check_err!(wo.partition(MemFlags::READ_ONLY, 0, 16), InvalidValue);
    check_eq!(wo.partition(MemFlags::WRITE_ONLY, 0, 16)?.flags(), MemFlags::WRITE_ONLY);
    let host = cmdbuf::MemBuffer::new(env.context(), MemFlags::ALLOC_HOST_POINTER, size)?;
    check_eq!(
        host.partition(MemFlags::empty(), 0, 16)?.flags(),
        MemFlags::READ_WRITE | MemFlags::ALLOC_HOST_POINTER,
        "ALLOC_HOST_POINTER is inherited"
    );
    Ok(())
}

/// Offsets are the sub-buffer's; a range inside the parent but outside the
/// region is refused.
fn read_write_inside_region(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let (buffer, data, stride) = parent(env, 3, SIZE)?;
    let sub = buffer.partition(MemFlags::empty(), stride, SIZE)?;
    let queue = env.queue()?;
    check_eq!(read_buffer::<u8>(&queue, &sub, 0, SIZE)?, data[stride..stride + SIZE].to_vec());
    check_eq!(read_buffer::<u8>(&queue, &sub, 100, 50)?, data[stride + 100..stride + 150].to_vec());
    let new = pattern(64, 7);
    queue.write_buffer(&sub, 192, &new, &[])?;
    let mut expected = data.clone();
    expected[stride + 192..stride + 256].copy_from_slice(&new);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected);
    let mut out = vec![0u8; 2];
    check_err!(queue.read_buffer(&sub, SIZE - 1, &mut out, &[]), InvalidSize);
    check_err!(queue.write_buffer(&sub, SIZE, &out, &[]), InvalidSize);
    // Through USM: the host side of a read into device memory.
    let usm = env.usm(UsmKind::Device, SIZE)?;
    queue.read_buffer_to_usm(&sub, 0, SIZE, usm.ptr(), &[])?.wait()?;
    check_eq!(read::<u8>(&queue, usm.ptr(), SIZE)?, expected[stride..stride + SIZE].to_vec());
    Ok(())
}

/// Copies between sub-buffers of one parent, and fills, touch their regions
/// only; overlap is judged in the parent.
fn copy_and_fill(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let (buffer, data, stride) = parent(env, 3, SIZE)?;
    let (a, b) =
        (buffer.partition(MemFlags::empty(), 0, SIZE)?, buffer.partition(MemFlags::empty(), 2 * stride, SIZE)?);
    let queue = env.queue()?;
    queue.copy_buffer(&a, &b, 16, 32, 128, &[])?.wait()?;
    let mut expected = data.clone();
    expected.copy_within(16..144, 2 * stride + 32);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected, "copy between sub-buffers");
    let pat = [0xA1u8, 0xB2, 0xC3, 0xD4];
    queue.fill_buffer(&b, &pat, 64, 128, &[])?.wait()?;
    expected[2 * stride + 64..2 * stride + 192].copy_from_slice(&fill_reference(&pat, 128));
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected, "fill of a sub-buffer");
    // A copy from the parent into its own sub-buffer, and back.
    queue.copy_buffer(&buffer, &a, stride, 0, 64, &[])?.wait()?;
    expected.copy_within(stride..stride + 64, 0);
    check_eq!(read_buffer::<u8>(&queue, &a, 0, SIZE)?, expected[..SIZE].to_vec(), "parent to sub-buffer");
    check_err!(queue.copy_buffer(&buffer, &b, 2 * stride + 8, 0, 16, &[]), OverlappingRegions);
    check_err!(queue.copy_buffer(&a, &a, 0, 8, 16, &[]), OverlappingRegions);
    check_err!(queue.fill_buffer(&a, &pat, SIZE - 4, 8, &[]), InvalidSize);
    Ok(())
}

/// Fills of every pattern length through a sub-buffer at the smallest
/// allowed origin: pattern-aligned in the sub-buffer, not necessarily in the
/// parent, which adapters' fills must not mind.
fn fill_patterns_at_smallest_origin(env: &Env) -> CaseResult {
    const SIZE: usize = 768;
    let align = align(env);
    let data = pattern(align + SIZE, 23);
    let buffer = env.buffer_with(&data)?;
    let sub = buffer.partition(MemFlags::empty(), align, SIZE)?;
    let queue = env.queue()?;
    let mut expected = data.clone();
    for plen in [1usize, 2, 3, 4, 8, 16, 32, 64, 128, 256] {
        let pat = pattern(plen, 0x80 | plen as u8);
        let size = plen * (512 / plen);
        queue.fill_buffer(&sub, &pat, plen, size, &[])?.wait()?;
        expected[align + plen..align + plen + size].copy_from_slice(&fill_reference(&pat, size));
        check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected, "pattern of {plen} bytes");
    }
    Ok(())
}

/// Rect transfers use the sub-buffer's origin and bounds.
fn rect_transfers(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let (buffer, data, stride) = parent(env, 2, SIZE)?;
    let sub = buffer.partition(MemFlags::empty(), stride, SIZE)?;
    let queue = env.queue()?;
    // 4 rows of 8 bytes at (4, 2) in 16-byte rows of the sub-buffer.
    let region = RectRegion::new(8, 4, 1);
    let layout = RectLayout::new(RectOffset::new(4, 2, 0), 16, 0);
    let src = pattern(32, 3);
    queue.write_buffer_rect(&sub, layout, RectLayout::packed(), region, &src, &[])?;
    let mut expected = data.clone();
    for row in 0..4 {
        let at = stride + (2 + row) * 16 + 4;
        expected[at..at + 8].copy_from_slice(&src[row * 8..row * 8 + 8]);
    }
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected);
    let mut back = vec![0u8; 32];
    queue.read_buffer_rect(&sub, layout, RectLayout::packed(), region, &mut back, &[])?;
    check_eq!(back, src);
    let other = buffer.partition(MemFlags::empty(), 0, SIZE)?;
    queue.copy_buffer_rect(&sub, &other, layout, layout, region, &[])?.wait()?;
    for row in 0..4 {
        let at = (2 + row) * 16 + 4;
        expected[at..at + 8].copy_from_slice(&src[row * 8..row * 8 + 8]);
    }
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected, "rect copy between sub-buffers");
    // 16 rows of 16 bytes fill the sub-buffer exactly; one more row leaves it.
    let tall = RectRegion::new(16, 17, 1);
    let mut big = vec![0u8; 16 * 17];
    check_err!(
        queue.read_buffer_rect(&sub, RectLayout::packed(), RectLayout::packed(), tall, &mut big, &[]),
        InvalidSize
    );
    Ok(())
}

/// A map of a sub-buffer maps its region; the unmap writes it back there.
fn map_unmap(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let (buffer, data, stride) = parent(env, 2, SIZE)?;
    let sub = buffer.partition(MemFlags::empty(), stride, SIZE)?;
    let queue = env.queue()?;
    let (mapped, mapping) = queue.map_buffer(&sub, 32, 64, MapFlags::READ | MapFlags::WRITE, &[])?;
    mapped.wait()?;
    // SAFETY: the map completed; the mapping holds 64 bytes until unmapped.
    let view = unsafe { std::slice::from_raw_parts_mut(mapping.ptr(), mapping.len()) };
    check_eq!(view.to_vec(), data[stride + 32..stride + 96].to_vec());
    view.fill(0x5A);
    queue.unmap_buffer(mapping, &[])?.wait()?;
    let mut expected = data.clone();
    expected[stride + 32..stride + 96].fill(0x5A);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, expected.len())?, expected);
    check_err!(queue.map_buffer(&sub, SIZE - 8, 16, MapFlags::READ, &[]), InvalidSize);
    Ok(())
}

/// Sub-buffers as kernel arguments: the kernel sees the region's first byte
/// as the argument's start.
fn kernel_arguments(env: &Env) -> CaseResult {
    const N: usize = 64;
    let stride = (N * 4).next_multiple_of(align(env));
    let xs: Vec<u32> = (0..N as u32).map(|i| i * 5 + 1).collect();
    let ys: Vec<u32> = (0..N as u32).map(|i| i ^ 0x33).collect();
    let mut init = vec![0u32; stride / 4 * 3];
    init[stride / 4..stride / 4 + N].copy_from_slice(&xs);
    init[2 * stride / 4..2 * stride / 4 + N].copy_from_slice(&ys);
    let buffer = env.buffer_with(&init)?;
    let z = buffer.partition(MemFlags::empty(), 0, N * 4)?;
    let x = buffer.partition(MemFlags::READ_ONLY, stride, N * 4)?;
    let y = buffer.partition(MemFlags::READ_ONLY, 2 * stride, N * 4)?;
    let kernel = env.kernel("saxpy")?;
    let a = 9u32;
    let args = [KernelArg::MemObj(&z), KernelArg::value(&a), KernelArg::MemObj(&x), KernelArg::MemObj(&y)];
    let queue = env.queue()?;
    // SAFETY: 64 work-items over 64-element sub-buffers.
    unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), &[])?.wait()? };
    let expected = saxpy_reference(a, &xs, &ys);
    check_eq!(read_buffer::<u32>(&queue, &z, 0, N)?, expected, "through the sub-buffer");
    check_eq!(read_buffer::<u32>(&queue, &buffer, 0, N)?, expected, "through the parent");
    check_eq!(read_buffer::<u32>(&queue, &buffer, stride, N)?, xs, "inputs untouched");
    Ok(())
}

/// Command-buffer appends of every buffer command and a kernel on
/// sub-buffers, replayed with new contents.
fn command_buffer_appends(env: &Env) -> CaseResult {
    const N: usize = 64;
    let stride = (N * 4).next_multiple_of(align(env));
    let buffer = env.buffer(stride * 3)?;
    let z = buffer.partition(MemFlags::empty(), 0, N * 4)?;
    let x = buffer.partition(MemFlags::empty(), stride, N * 4)?;
    let y = buffer.partition(MemFlags::empty(), 2 * stride, N * 4)?;
    let src = env.usm(UsmKind::Device, N * 4)?;
    let out = env.usm(UsmKind::Device, N * 4)?;
    let kernel = env.kernel("saxpy")?;
    let a = 3u32;
    let args = [KernelArg::MemObj(&z), KernelArg::value(&a), KernelArg::MemObj(&x), KernelArg::MemObj(&y)];
    let cb = env.command_buffer(CommandBufferDesc { in_order: true, ..CommandBufferDesc::default() })?;
    cb.append_buffer_write(&x, 0, N * 4, src.ptr(), AppendOptions::new())?;
    cb.append_buffer_copy(&x, &y, 0, 0, N * 4, AppendOptions::new())?;
    cb.append_buffer_fill(&y, &7u32.to_le_bytes(), 0, 32 * 4, AppendOptions::new())?;
    // SAFETY: 64 work-items over 64-element sub-buffers, alive with the buffer.
    unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
    cb.append_buffer_read(&z, 0, N * 4, out.ptr(), AppendOptions::new())?;
    cb.finalize()?;
    let queue = env.queue()?;
    for run in 0..2u32 {
        let xs: Vec<u32> = (0..N as u32).map(|i| i * 11 + run).collect();
        crate::harness::write(&queue, src.ptr(), &xs)?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        let mut ys = xs.clone();
        ys[..32].fill(7);
        check_eq!(read::<u32>(&queue, out.ptr(), N)?, saxpy_reference(a, &xs, &ys), "execution {run}");
    }
    Ok(())
}

/// An updated kernel argument may move a launch from one sub-buffer to
/// another of the same parent.
fn kernel_argument_update(env: &Env) -> CaseResult {
    const N: usize = 32;
    const VAL: u32 = 42;
    const NEW_VAL: u32 = 77;
    let stride = (N * 4).next_multiple_of(align(env));
    let buffer = env.buffer_with(&vec![0u32; stride / 4 * 2])?;
    let first = buffer.partition(MemFlags::empty(), 0, N * 4)?;
    let second = buffer.partition(MemFlags::empty(), stride, N * 4)?;
    let kernel = env.kernel("fill")?;
    let cb = env.updatable_command_buffer()?;
    let args = [KernelArg::MemObj(&first), KernelArg::value(&VAL)];
    // SAFETY: fill writes 32 u32s into a 32-u32 sub-buffer.
    let appended = unsafe {
        cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args).local_size(&[4]), &[], AppendOptions::new())?
    };
    let handle = appended.command.ok_or_else(|| crate::CaseError::Fail("no command handle".into()))?;
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    // SAFETY: the new sub-buffer has the 32 u32s the launch writes.
    unsafe {
        cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle)
            .arg(0, KernelArg::MemObj(&second))
            .arg(1, KernelArg::value(&NEW_VAL))])?
    };
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read_buffer::<u32>(&queue, &buffer, 0, N)?, vec![VAL; N], "the first sub-buffer");
    check_eq!(read_buffer::<u32>(&queue, &buffer, stride, N)?, vec![NEW_VAL; N], "the second sub-buffer");
    Ok(())
}

/// A sub-buffer holds its parent's memory alive.
fn outlives_parent_handle(env: &Env) -> CaseResult {
    const SIZE: usize = 128;
    let (buffer, data, stride) = parent(env, 2, SIZE)?;
    let sub = buffer.partition(MemFlags::empty(), stride, SIZE)?;
    drop(buffer);
    let queue = env.queue()?;
    check_eq!(read_buffer::<u8>(&queue, &sub, 0, SIZE)?, data[stride..stride + SIZE].to_vec());
    check!(sub.parent().is_some_and(|p| p.reference_count() >= 1));
    Ok(())
}
