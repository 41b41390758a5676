//! Every append kind on its own (UR's `commands.cpp` smoke tests), each
//! executed and its result checked.

use cmdbuf::{
    AppendOptions, CommandBufferDesc, KernelArg, KernelLaunch, MigrationFlags, RectLayout, RectOffset, RectRegion,
    UsmAdvice, UsmKind,
};

use crate::harness::{CaseResult, Env, copy_rect_reference, pattern, read, read_buffer, write};
use crate::kernels::saxpy_reference;
use crate::{Requires, cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["commands";
        usm_memcpy,
        usm_fill,
        buffer_copy,
        buffer_copy_rect,
        buffer_read,
        buffer_read_rect,
        buffer_write,
        buffer_write_rect,
        buffer_fill,
        usm_prefetch,
        usm_prefetch_device_to_host => Requires::SHARED_USM,
        usm_advise,
        kernel_launch,
    ]
}

const N: usize = 256;

/// Records with `record`, finalizes, runs once on a new queue, returns the queue.
fn run_once(
    env: &Env,
    record: impl FnOnce(&cmdbuf::CommandBuffer) -> CaseResult,
) -> Result<cmdbuf::Queue, crate::CaseError> {
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    record(&cb)?;
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    Ok(queue)
}

fn usm_memcpy(env: &Env) -> CaseResult {
    let (src, dst) = (env.usm(UsmKind::Device, N)?, env.usm(UsmKind::Device, N)?);
    let data = pattern(N, 3);
    write(&env.queue()?, src.ptr(), &data)?;
    let queue = run_once(env, |cb| {
        cb.append_usm_memcpy(dst.ptr(), src.ptr(), N, AppendOptions::new())?;
        Ok(())
    })?;
    check_eq!(read::<u8>(&queue, dst.ptr(), N)?, data);
    Ok(())
}

fn usm_fill(env: &Env) -> CaseResult {
    let dst = env.usm(UsmKind::Device, N)?;
    let queue = run_once(env, |cb| {
        cb.append_usm_fill(dst.ptr(), &[1, 2, 3, 4], N, AppendOptions::new())?;
        Ok(())
    })?;
    check_eq!(read::<u8>(&queue, dst.ptr(), N)?, [1u8, 2, 3, 4].repeat(N / 4));
    Ok(())
}

fn buffer_copy(env: &Env) -> CaseResult {
    let data = pattern(N, 5);
    let (src, dst) = (env.buffer_with(&data)?, env.buffer(N)?);
    let queue = run_once(env, |cb| {
        cb.append_buffer_copy(&src, &dst, 0, 0, N, AppendOptions::new())?;
        Ok(())
    })?;
    check_eq!(read_buffer::<u8>(&queue, &dst, 0, N)?, data);
    Ok(())
}

fn buffer_copy_rect(env: &Env) -> CaseResult {
    // A 4x4 block out of a 16x16 2D image, into the middle of another.
    let data = pattern(N, 7);
    let (src, dst) = (env.buffer_with(&data)?, env.buffer(N)?);
    let region = RectRegion::new(4, 4, 1);
    let src_layout = RectLayout::new(RectOffset::new(2, 3, 0), 16, 256);
    let dst_layout = RectLayout::new(RectOffset::new(8, 8, 0), 16, 256);
    let queue = run_once(env, |cb| {
        cb.append_buffer_copy_rect(&src, &dst, src_layout, dst_layout, region, AppendOptions::new())?;
        Ok(())
    })?;
    let mut expected = vec![0u8; N];
    copy_rect_reference(&data, [2, 3, 0], (16, 256), &mut expected, [8, 8, 0], (16, 256), [4, 4, 1]);
    check_eq!(read_buffer::<u8>(&queue, &dst, 0, N)?, expected);
    Ok(())
}

fn buffer_read(env: &Env) -> CaseResult {
    let data = pattern(N, 9);
    let buffer = env.buffer_with(&data)?;
    let dst = env.usm(UsmKind::Device, N)?;
    let queue = run_once(env, |cb| {
        cb.append_buffer_read(&buffer, 0, N, dst.ptr(), AppendOptions::new())?;
        Ok(())
    })?;
    check_eq!(read::<u8>(&queue, dst.ptr(), N)?, data);
    Ok(())
}

fn buffer_read_rect(env: &Env) -> CaseResult {
    let data = pattern(N, 11);
    let buffer = env.buffer_with(&data)?;
    let dst = env.usm(UsmKind::Device, 64)?;
    let region = RectRegion::new(8, 8, 1);
    let queue = run_once(env, |cb| {
        let buffer_layout = RectLayout::new(RectOffset::new(4, 4, 0), 16, 0);
        cb.append_buffer_read_rect(
            &buffer,
            buffer_layout,
            RectLayout::packed(),
            region,
            dst.ptr(),
            AppendOptions::new(),
        )?;
        Ok(())
    })?;
    let mut expected = vec![0u8; 64];
    copy_rect_reference(&data, [4, 4, 0], (16, 128), &mut expected, [0, 0, 0], (8, 64), [8, 8, 1]);
    check_eq!(read::<u8>(&queue, dst.ptr(), 64)?, expected);
    Ok(())
}

fn buffer_write(env: &Env) -> CaseResult {
    let data = pattern(N, 13);
    let src = env.usm(UsmKind::Device, N)?;
    write(&env.queue()?, src.ptr(), &data)?;
    let buffer = env.buffer(N)?;
    let queue = run_once(env, |cb| {
        cb.append_buffer_write(&buffer, 0, N, src.ptr(), AppendOptions::new())?;
        Ok(())
    })?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, N)?, data);
    Ok(())
}

fn buffer_write_rect(env: &Env) -> CaseResult {
    let data = pattern(64, 15);
    let src = env.usm(UsmKind::Device, 64)?;
    write(&env.queue()?, src.ptr(), &data)?;
    let buffer = env.buffer(N)?;
    let region = RectRegion::new(8, 8, 1);
    let queue = run_once(env, |cb| {
        let buffer_layout = RectLayout::new(RectOffset::new(8, 0, 0), 16, 0);
        cb.append_buffer_write_rect(
            &buffer,
            buffer_layout,
            RectLayout::packed(),
            region,
            src.ptr(),
            AppendOptions::new(),
        )?;
        Ok(())
    })?;
    let mut expected = vec![0u8; N];
    copy_rect_reference(&data, [0, 0, 0], (8, 64), &mut expected, [8, 0, 0], (16, 128), [8, 8, 1]);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, N)?, expected);
    Ok(())
}

fn buffer_fill(env: &Env) -> CaseResult {
    let buffer = env.buffer(N)?;
    let queue = run_once(env, |cb| {
        cb.append_buffer_fill(&buffer, &[0xC0, 0xFF, 0xEE, 0x00], 0, N, AppendOptions::new())?;
        Ok(())
    })?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, N)?, [0xC0u8, 0xFF, 0xEE, 0x00].repeat(N / 4));
    Ok(())
}

/// A prefetch is ordered like any command: a fill after it still lands.
fn usm_prefetch(env: &Env) -> CaseResult {
    let kind =
        if env.device().info().usm.contains(cmdbuf::UsmKinds::SHARED) { UsmKind::Shared } else { UsmKind::Device };
    let mem = env.usm(kind, N)?;
    let queue = run_once(env, |cb| {
        let p = cb.append_usm_prefetch(mem.ptr(), N, MigrationFlags::HOST_TO_DEVICE, AppendOptions::new())?;
        cb.append_usm_fill(mem.ptr(), &[0x5A], N, AppendOptions::new().after(&[p.sync_point]))?;
        Ok(())
    })?;
    check_eq!(read::<u8>(&queue, mem.ptr(), N)?, vec![0x5Au8; N]);
    Ok(())
}

fn usm_prefetch_device_to_host(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Shared, N)?;
    let queue = run_once(env, |cb| {
        let f = cb.append_usm_fill(mem.ptr(), &[0x3C], N, AppendOptions::new())?;
        cb.append_usm_prefetch(
            mem.ptr(),
            N,
            MigrationFlags::DEVICE_TO_HOST,
            AppendOptions::new().after(&[f.sync_point]),
        )?;
        Ok(())
    })?;
    check_eq!(read::<u8>(&queue, mem.ptr(), N)?, vec![0x3Cu8; N]);
    Ok(())
}

fn usm_advise(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, N)?;
    let queue = run_once(env, |cb| {
        let a = cb.append_usm_advise(mem.ptr(), N, UsmAdvice::SET_READ_MOSTLY, AppendOptions::new())?;
        cb.append_usm_fill(mem.ptr(), &[0x11], N, AppendOptions::new().after(&[a.sync_point]))?;
        Ok(())
    })?;
    check_eq!(read::<u8>(&queue, mem.ptr(), N)?, vec![0x11u8; N]);
    Ok(())
}

/// UR's `urCommandBufferKernelLaunchTest.Basic`: saxpy.
fn kernel_launch(env: &Env) -> CaseResult {
    const E: usize = 64;
    let (x, y, z) = (env.usm_u32(E)?, env.usm_u32(E)?, env.usm_u32(E)?);
    let xs: Vec<u32> = (0..E as u32).collect();
    let ys: Vec<u32> = (0..E as u32).map(|i| i * 3 + 1).collect();
    let setup = env.queue()?;
    write(&setup, x.ptr(), &xs)?;
    write(&setup, y.ptr(), &ys)?;
    let kernel = env.kernel("saxpy")?;
    let a = 42u32;
    let args =
        [KernelArg::Pointer(z.ptr()), KernelArg::value(&a), KernelArg::Pointer(x.ptr()), KernelArg::Pointer(y.ptr())];
    let queue = run_once(env, |cb| {
        // SAFETY: saxpy over 64 items with 64-element X, Y and Z.
        unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&kernel, &[E], &args).local_size(&[16]),
                &[],
                AppendOptions::new(),
            )?
        };
        Ok(())
    })?;
    check_eq!(read::<u32>(&queue, z.ptr(), E)?, saxpy_reference(a, &xs, &ys));
    Ok(())
}
