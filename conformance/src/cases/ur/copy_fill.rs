//! Copies and fills in command buffers (UR's `copy.cpp` and `fill.cpp`), one
//! case per parameter set of UR's sweeps, plus fill patterns UR leaves out
//! (2, 64 and 128 bytes, and lengths that are not powers of two) and fills
//! that start inside a buffer or allocation.

use cmdbuf::{AppendOptions, CommandBufferDesc, UsmKind};

use super::read_write::{HostBytes, noise, placed};
use crate::harness::{Case, CaseResult, Env, fill_reference, pattern, read, read_buffer, write};
use crate::{Requires, cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for (size, src, dst, len) in COPY_SETS {
        all.push(
            Case::new(format!("copy::size_{size}_src_{src}_dst_{dst}_len_{len}"), move |env| {
                copy_set(env, size, src, dst, len)
            })
            .requires(Requires::HOST_USM),
        );
    }
    for (size, pattern_size) in FILL_SETS {
        all.push(Case::new(format!("fill::size_{size}_pattern_{pattern_size}"), move |env| {
            fill_set(env, size, pattern_size)
        }));
    }
    all.extend(cases!["fill"; buffer_at_offset, usm_inside_allocation]);
    all
}

/// UR's `{size, offset_src, offset_dst, copy_size}` sets.
const COPY_SETS: [(usize, usize, usize, usize); 7] = [
    (1, 0, 0, 1),
    (256, 0, 0, 256),
    (1024, 0, 0, 1024),
    (256, 127, 127, 128),
    (1024, 256, 256, 256),
    (256, 127, 196, 25),
    (1024, 756, 256, 256),
];

/// UR's `{size, pattern_size}` sets, then pattern lengths UR does not sweep:
/// 2, 64 and 128 bytes, and 3 and 12 bytes (not powers of two) over a
/// multiple that is not a power of two either.
const FILL_SETS: [(usize, usize); 12] = [
    (1, 1),
    (256, 256),
    (1024, 256),
    (256, 4),
    (256, 8),
    (256, 16),
    (256, 32),
    (256, 2),
    (256, 64),
    (256, 128),
    (255, 3),
    (1020, 12),
];

/// What memory outside the written range holds before the command runs.
const BASE: u8 = 1;

/// UR's `urCommandBufferMemcpyCommandsTest` for one set: `Buffer` (write,
/// copy at the offsets, read, chained by sync points) and `USM` (host to
/// device at the offsets, then the whole device allocation back to host).
fn copy_set(env: &Env, size: usize, src: usize, dst: usize, len: usize) -> CaseResult {
    let input = noise(size, (size + src * 7 + dst * 13) as u64);
    let expected = placed(&vec![BASE; size], dst, &input, src, len);

    // Buffer.
    let raw_in = HostBytes::new(&input);
    let raw_out = HostBytes::filled(size, 0);
    let queue = env.queue()?;
    let (staging, target) = (env.buffer(size)?, env.buffer(size)?);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // SAFETY: both host blocks hold `size` bytes and outlive every execution
    // (declared before the queue); the host reads `raw_out` only after waiting.
    unsafe {
        let w = cb.append_buffer_write_host(&staging, 0, size, raw_in.ptr(), AppendOptions::new())?;
        let c = cb.append_buffer_copy(&staging, &target, src, dst, len, AppendOptions::new().after(&[w.sync_point]))?;
        cb.append_buffer_read_host(&target, 0, size, raw_out.ptr(), AppendOptions::new().after(&[c.sync_point]))?;
    }
    cb.finalize()?;
    queue.write_buffer(&target, 0, &vec![BASE; size], &[])?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    // SAFETY: the execution was waited for.
    let seen = unsafe { raw_out.to_vec() };
    check_eq!(seen, expected, "buffer chain");

    // USM.
    let host_in = env.usm(UsmKind::Host, size)?;
    let device = env.usm(UsmKind::Device, size)?;
    let host_out = env.usm(UsmKind::Host, size)?;
    write(&queue, host_in.ptr(), &input)?;
    write(&queue, host_out.ptr(), &vec![0u8; size])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let m = cb.append_usm_memcpy(device.ptr().byte_add(dst), host_in.ptr().byte_add(src), len, AppendOptions::new())?;
    cb.append_usm_memcpy(host_out.ptr(), device.ptr(), size, AppendOptions::new().after(&[m.sync_point]))?;
    cb.finalize()?;
    write(&queue, device.ptr(), &vec![BASE; size])?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, host_out.ptr(), size)?, expected, "USM chain");
    Ok(())
}

/// UR's `urCommandBufferFillCommandsTest` for one set: `Buffer` (fill, then
/// read into host memory), `ExecuteTwice` (the same buffer enqueued again,
/// once alone and then twice back to back, with the memory reset in between
/// so that only the new executions can restore it) and `USM` (fill, then copy
/// the allocation out).
fn fill_set(env: &Env, size: usize, pattern_size: usize) -> CaseResult {
    let pat = pattern(pattern_size, pattern_size as u8);
    let expected = fill_reference(&pat, size);

    // Buffer and ExecuteTwice.
    let out = HostBytes::filled(size, BASE);
    let queue = env.queue()?;
    let buffer = env.buffer(size)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let f = cb.append_buffer_fill(&buffer, &pat, 0, size, AppendOptions::new())?;
    // SAFETY: `out` holds `size` bytes and outlives every execution (declared
    // before the queue); the host touches it only between executions.
    unsafe { cb.append_buffer_read_host(&buffer, 0, size, out.ptr(), AppendOptions::new().after(&[f.sync_point]))? };
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    // SAFETY: the execution was waited for.
    let seen = unsafe { out.to_vec() };
    check_eq!(seen, expected, "buffer fill");
    for enqueues in [1, 2] {
        queue.write_buffer(&buffer, 0, &vec![0u8; size], &[])?;
        // SAFETY: nothing runs on the queue (the last execution was waited for).
        unsafe { out.set(&vec![BASE; size]) };
        for _ in 0..enqueues {
            queue.enqueue_command_buffer(&cb, &[])?;
        }
        queue.finish()?;
        // SAFETY: the queue finished.
        let seen = unsafe { out.to_vec() };
        check_eq!(seen, expected, "buffer fill after {enqueues} more enqueue(s)");
    }

    // USM.
    let (device, copy) = (env.usm(UsmKind::Device, size)?, env.usm(UsmKind::Device, size)?);
    write(&queue, copy.ptr(), &vec![BASE; size])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let f = cb.append_usm_fill(device.ptr(), &pat, size, AppendOptions::new())?;
    cb.append_usm_memcpy(copy.ptr(), device.ptr(), size, AppendOptions::new().after(&[f.sync_point]))?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, copy.ptr(), size)?, expected, "USM fill");
    Ok(())
}

/// Buffer fills at offsets that are multiples of their patterns (a 4-byte one
/// and a 3-byte one at an odd offset) leave every other byte as it was.
fn buffer_at_offset(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let initial = noise(SIZE, 81);
    let buffer = env.buffer_with(&initial)?;
    let quad = [0xA1, 0xB2, 0xC3, 0xD4];
    let triple = [0x0F, 0xF0, 0x55];
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_fill(&buffer, &quad, 64, 128, AppendOptions::new())?;
    cb.append_buffer_fill(&buffer, &triple, 201, 30, AppendOptions::new())?;
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected = initial;
    expected[64..192].copy_from_slice(&fill_reference(&quad, 128));
    expected[201..231].copy_from_slice(&fill_reference(&triple, 30));
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, expected);
    Ok(())
}

/// USM fills starting inside an allocation, one at an address that is not a
/// multiple of its pattern's length (USM fills have no offset rule), leave
/// every other byte as it was.
fn usm_inside_allocation(env: &Env) -> CaseResult {
    const SIZE: usize = 256;
    let initial = noise(SIZE, 91);
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Device, SIZE)?;
    write(&queue, mem.ptr(), &initial)?;
    let eight = pattern(8, 3);
    let five = pattern(5, 9);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_usm_fill(mem.ptr().byte_add(8), &eight, 64, AppendOptions::new())?;
    cb.append_usm_fill(mem.ptr().byte_add(101), &five, 155, AppendOptions::new())?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected = initial;
    expected[8..72].copy_from_slice(&fill_reference(&eight, 64));
    expected[101..256].copy_from_slice(&fill_reference(&five, 155));
    check_eq!(read::<u8>(&queue, mem.ptr(), SIZE)?, expected);
    Ok(())
}
