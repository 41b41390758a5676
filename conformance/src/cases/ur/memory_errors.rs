//! Misuse of memory commands that UR's `exp_command_buffer` tests (and its
//! specification, in places) leave undefined, for which cmdbuf returns typed
//! errors: ranges leaving their allocation or buffer (`InvalidSize`),
//! pointers inside no allocation of the context and pointers of another
//! context (`InvalidValue`), buffers of another context (`InvalidMemObject`
//! on OpenCL; used as their own on the other backends),
//! overlapping copies (`OverlappingRegions`), bad fill patterns, zero sizes
//! and bad rect pitches (`InvalidSize`).
//!
//! Every case checks that a rejected append records nothing (the buffer's
//! length is unchanged) and that valid appends around the rejected ones are
//! numbered, recorded and executed as if the rejected ones never happened.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, MemBuffer, MemFlags, MigrationFlags, Queue,
    QueueProperties, RectLayout, RectOffset, RectRegion, UsmAdvice, UsmAllocation, UsmKind, UsmPtr,
};

use super::read_write::{HostBytes, noise, placed};
use crate::harness::{
    CaseError, CaseResult, Env, copy_rect_reference, fill_reference, pattern, read, read_buffer, write,
};
use crate::{cases, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["memory_errors";
        usm_memcpy_out_of_bounds,
        usm_fill_out_of_bounds,
        prefetch_advise_out_of_bounds,
        buffer_copy_out_of_bounds,
        buffer_read_write_out_of_bounds,
        buffer_fill_out_of_bounds,
        rect_buffer_side_out_of_bounds,
        rect_host_side_out_of_bounds,
        pointer_in_no_allocation,
        pointer_of_other_context,
        buffer_of_other_context,
        overlapping_regions,
        bad_fill_patterns,
        long_fill_patterns,
        zero_sizes,
        bad_rect_pitches,
    ]
}

/// Checks that `$append` fails with `$variant` and leaves `$cb` as it was.
macro_rules! rejects {
    ($cb:expr, $append:expr, $variant:ident) => {{
        let before = $cb.len();
        check_err!($append, $variant);
        check_eq!($cb.len(), before, "a rejected append was recorded: {}", stringify!($append));
    }};
}

/// What memory outside the written range holds before the command runs.
const BASE: u8 = 1;

fn none<'a>() -> AppendOptions<'a> {
    AppendOptions::new()
}

fn layout(origin: [usize; 3], row_pitch: usize, slice_pitch: usize) -> RectLayout {
    RectLayout::new(RectOffset::new(origin[0], origin[1], origin[2]), row_pitch, slice_pitch)
}

/// Finalizes `cb`, executes it once on a new queue and waits: the valid
/// appends around the rejected ones must run.
fn run(env: &Env, cb: &CommandBuffer) -> Result<Queue, CaseError> {
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(cb, &[])?.wait()?;
    Ok(queue)
}

fn usm_memcpy_out_of_bounds(env: &Env) -> CaseResult {
    let (a, b) = (env.usm(UsmKind::Device, 64)?, env.usm(UsmKind::Device, 64)?);
    write(&env.queue()?, b.ptr(), &[BASE; 64])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let first = cb.append_usm_fill(a.ptr(), &[7], 64, none())?;
    rejects!(cb, cb.append_usm_memcpy(b.ptr(), a.ptr(), 65, none()), InvalidSize);
    rejects!(cb, cb.append_usm_memcpy(b.ptr(), a.ptr().byte_add(32), 33, none()), InvalidSize);
    rejects!(cb, cb.append_usm_memcpy(b.ptr().byte_add(63), a.ptr(), 2, none()), InvalidSize);
    rejects!(cb, cb.append_usm_memcpy(b.ptr(), a.ptr(), usize::MAX, none()), InvalidSize);
    // Ending exactly at both allocations' ends is in bounds.
    let last = cb.append_usm_memcpy(
        b.ptr().byte_add(32),
        a.ptr().byte_add(32),
        32,
        AppendOptions::new().after(&[first.sync_point]),
    )?;
    check_eq!(last.sync_point.index(), 1, "rejected appends must not consume sync points");
    let queue = run(env, &cb)?;
    check_eq!(read::<u8>(&queue, b.ptr(), 64)?, [[BASE; 32], [7; 32]].concat());
    Ok(())
}

fn usm_fill_out_of_bounds(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, 64)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let whole = cb.append_usm_fill(mem.ptr(), &[BASE], 64, none())?;
    rejects!(cb, cb.append_usm_fill(mem.ptr(), &[9], 65, none()), InvalidSize);
    rejects!(cb, cb.append_usm_fill(mem.ptr().byte_add(60), &[1, 2, 3, 4], 8, none()), InvalidSize);
    rejects!(cb, cb.append_usm_fill(mem.ptr().byte_add(1), &[1, 2, 3, 4], 64, none()), InvalidSize);
    let tail =
        cb.append_usm_fill(mem.ptr().byte_add(56), &[1, 2, 3, 4], 8, AppendOptions::new().after(&[whole.sync_point]))?;
    check_eq!(tail.sync_point.index(), 1);
    let queue = run(env, &cb)?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 64)?, [vec![BASE; 56], [1, 2, 3, 4].repeat(2)].concat());
    Ok(())
}

fn prefetch_advise_out_of_bounds(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, 128)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let to_device = MigrationFlags::HOST_TO_DEVICE;
    let advice = UsmAdvice::SET_READ_MOSTLY;
    rejects!(cb, cb.append_usm_prefetch(mem.ptr(), 129, to_device, none()), InvalidSize);
    rejects!(cb, cb.append_usm_prefetch(mem.ptr().byte_add(64), 65, to_device, none()), InvalidSize);
    rejects!(cb, cb.append_usm_advise(mem.ptr(), 129, advice, none()), InvalidSize);
    rejects!(cb, cb.append_usm_advise(mem.ptr().byte_add(127), 2, advice, none()), InvalidSize);
    // Both directions at once is no direction.
    rejects!(cb, cb.append_usm_prefetch(mem.ptr(), 128, MigrationFlags::all(), none()), InvalidEnumeration);
    let p = cb.append_usm_prefetch(mem.ptr().byte_add(64), 64, to_device, none())?;
    let a = cb.append_usm_advise(mem.ptr(), 128, advice, none())?;
    check_eq!((p.sync_point.index(), a.sync_point.index()), (0, 1));
    cb.append_usm_fill(mem.ptr(), &[0x42], 128, AppendOptions::new().after(&[p.sync_point, a.sync_point]))?;
    let queue = run(env, &cb)?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 128)?, vec![0x42u8; 128]);
    Ok(())
}

fn buffer_copy_out_of_bounds(env: &Env) -> CaseResult {
    let input = noise(128, 201);
    let src = env.buffer_with(&input)?;
    let dst = env.buffer_with(&[BASE; 64])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_buffer_copy(&src, &dst, 0, 0, 65, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_copy(&src, &dst, 100, 0, 32, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_copy(&src, &dst, 0, 40, 32, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_copy(&src, &dst, usize::MAX, 0, 1, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_copy(&src, &dst, 0, usize::MAX - 1, 2, none()), InvalidSize);
    // Ending exactly at both buffers' ends is in bounds.
    let c = cb.append_buffer_copy(&src, &dst, 96, 32, 32, none())?;
    check_eq!(c.sync_point.index(), 0);
    let queue = run(env, &cb)?;
    check_eq!(read_buffer::<u8>(&queue, &dst, 0, 64)?, placed(&[BASE; 64], 32, &input, 96, 32));
    Ok(())
}

fn buffer_read_write_out_of_bounds(env: &Env) -> CaseResult {
    let raw = HostBytes::filled(256, BASE);
    let input = noise(128, 211);
    let buffer = env.buffer_with(&input)?;
    let small = env.usm(UsmKind::Device, 32)?;
    let big = env.usm(UsmKind::Device, 256)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // The buffer side.
    rejects!(cb, cb.append_buffer_read(&buffer, 0, 129, big.ptr(), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_read(&buffer, 100, 29, big.ptr(), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_write(&buffer, 64, 65, big.ptr(), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_write(&buffer, usize::MAX, 1, big.ptr(), none()), InvalidSize);
    // SAFETY: `raw` holds 256 bytes, more than either call could touch, and
    // outlives the buffer; both are rejected before recording anyway.
    unsafe {
        rejects!(cb, cb.append_buffer_read_host(&buffer, 120, 16, raw.ptr(), none()), InvalidSize);
        rejects!(cb, cb.append_buffer_write_host(&buffer, 0, 129, raw.ptr(), none()), InvalidSize);
    }
    // The USM side: the buffer range is fine, the allocation too small.
    rejects!(cb, cb.append_buffer_read(&buffer, 0, 64, small.ptr(), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_read(&buffer, 0, 32, small.ptr().byte_add(1), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_write(&buffer, 0, 33, small.ptr(), none()), InvalidSize);
    // Valid: the last 32 bytes into `small`, from there to the front of the
    // buffer, then the whole buffer into raw host memory.
    let r = cb.append_buffer_read(&buffer, 96, 32, small.ptr(), none())?;
    let w = cb.append_buffer_write(&buffer, 0, 32, small.ptr(), AppendOptions::new().after(&[r.sync_point]))?;
    // SAFETY: `raw` holds 256 >= 128 bytes and outlives every execution
    // (declared before the queue `run` makes); read only after waiting.
    unsafe { cb.append_buffer_read_host(&buffer, 0, 128, raw.ptr(), AppendOptions::new().after(&[w.sync_point]))? };
    check_eq!(cb.len(), 3);
    let queue = run(env, &cb)?;
    let moved = placed(&input, 0, &input, 96, 32);
    check_eq!(read::<u8>(&queue, small.ptr(), 32)?, input[96..].to_vec());
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 128)?, moved);
    // SAFETY: the execution was waited for.
    let seen = unsafe { raw.to_vec() };
    check_eq!(seen, [moved, vec![BASE; 128]].concat());
    Ok(())
}

fn buffer_fill_out_of_bounds(env: &Env) -> CaseResult {
    let buffer = env.buffer_with(&[BASE; 64])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_buffer_fill(&buffer, &[1, 2, 3, 4], 60, 8, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &[9], 0, 65, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &[1, 2], 64, 2, none()), InvalidSize);
    // A pattern-aligned offset whose end overflows.
    rejects!(cb, cb.append_buffer_fill(&buffer, &[1, 2, 3, 4], usize::MAX - 3, 4, none()), InvalidSize);
    let f = cb.append_buffer_fill(&buffer, &[1, 2, 3, 4], 56, 8, none())?;
    check_eq!(f.sync_point.index(), 0);
    let queue = run(env, &cb)?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 64)?, [vec![BASE; 56], [1, 2, 3, 4].repeat(2)].concat());
    Ok(())
}

/// Rects that leave their buffer: by origin, by slice, by height, on either
/// side of a buffer-to-buffer copy.
fn rect_buffer_side_out_of_bounds(env: &Env) -> CaseResult {
    let input = noise(64, 221);
    let buffer = env.buffer_with(&input)?;
    let other = env.buffer_with(&[BASE; 64])?;
    let usm = env.usm(UsmKind::Device, 256)?;
    let queue = env.queue()?;
    write(&queue, usm.ptr(), &[BASE; 256])?;
    let region = RectRegion::new(4, 4, 1);
    let packed = RectLayout::packed();
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // Rows 5..9 of an 8x8 image.
    rejects!(
        cb,
        cb.append_buffer_read_rect(&buffer, layout([5, 5, 0], 8, 0), packed, region, usm.ptr(), none()),
        InvalidSize
    );
    // The second slice of a one-slice buffer.
    rejects!(
        cb,
        cb.append_buffer_write_rect(&buffer, layout([0, 0, 1], 8, 64), packed, region, usm.ptr(), none()),
        InvalidSize
    );
    // Nine rows of eight bytes.
    rejects!(
        cb,
        cb.append_buffer_read_rect(&buffer, packed, packed, RectRegion::new(8, 9, 1), usm.ptr(), none()),
        InvalidSize
    );
    rejects!(
        cb,
        cb.append_buffer_copy_rect(&buffer, &other, layout([4, 5, 0], 8, 0), packed, region, none()),
        InvalidSize
    );
    rejects!(
        cb,
        cb.append_buffer_copy_rect(&buffer, &other, packed, layout([0, 4, 0], 16, 0), region, none()),
        InvalidSize
    );
    // The bottom-right 4x4 block ends exactly at the buffer's end.
    let corner = layout([4, 4, 0], 8, 64);
    cb.append_buffer_read_rect(&buffer, corner, packed, region, usm.ptr(), none())?;
    cb.append_buffer_copy_rect(&buffer, &other, corner, layout([0, 0, 0], 8, 0), region, none())?;
    check_eq!(cb.len(), 2);
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected_usm = vec![BASE; 256];
    copy_rect_reference(&input, [4, 4, 0], (8, 64), &mut expected_usm, [0, 0, 0], (4, 16), [4, 4, 1]);
    let mut expected_other = vec![BASE; 64];
    copy_rect_reference(&input, [4, 4, 0], (8, 64), &mut expected_other, [0, 0, 0], (8, 32), [4, 4, 1]);
    check_eq!(read::<u8>(&queue, usm.ptr(), 256)?, expected_usm);
    check_eq!(read_buffer::<u8>(&queue, &other, 0, 64)?, expected_other);
    Ok(())
}

/// Rects whose host-side layout leaves the USM allocation it starts in.
fn rect_host_side_out_of_bounds(env: &Env) -> CaseResult {
    let input = noise(256, 231);
    let buffer = env.buffer_with(&input)?;
    let host = env.usm(UsmKind::Device, 32)?;
    let queue = env.queue()?;
    write(&queue, host.ptr(), &[BASE; 32])?;
    let region = RectRegion::new(4, 4, 1);
    let packed = RectLayout::packed();
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // Row pitch 10: the last row ends at byte 34 of 32.
    rejects!(
        cb,
        cb.append_buffer_read_rect(&buffer, packed, layout([0, 0, 0], 10, 0), region, host.ptr(), none()),
        InvalidSize
    );
    // Origin in the second slice: ends at byte 33.
    rejects!(
        cb,
        cb.append_buffer_write_rect(&buffer, packed, layout([1, 0, 1], 4, 16), region, host.ptr(), none()),
        InvalidSize
    );
    // Packed, but starting 20 bytes in: 16 bytes do not fit in the last 12.
    rejects!(
        cb,
        cb.append_buffer_read_rect(&buffer, packed, packed, region, host.ptr().byte_add(20), none()),
        InvalidSize
    );
    // Row pitch 8 ends at byte 28: in bounds.
    let host_layout = layout([0, 0, 0], 8, 0);
    let r = cb.append_buffer_read_rect(&buffer, layout([2, 3, 0], 16, 0), host_layout, region, host.ptr(), none())?;
    cb.append_buffer_write_rect(
        &buffer,
        layout([8, 8, 0], 16, 0),
        host_layout,
        region,
        host.ptr(),
        AppendOptions::new().after(&[r.sync_point]),
    )?;
    check_eq!(cb.len(), 2);
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected_host = vec![BASE; 32];
    copy_rect_reference(&input, [2, 3, 0], (16, 64), &mut expected_host, [0, 0, 0], (8, 32), [4, 4, 1]);
    let mut expected_buffer = input.clone();
    copy_rect_reference(&expected_host, [0, 0, 0], (8, 32), &mut expected_buffer, [8, 8, 0], (16, 64), [4, 4, 1]);
    check_eq!(read::<u8>(&queue, host.ptr(), 32)?, expected_host);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 256)?, expected_buffer);
    Ok(())
}

/// Addresses inside no USM allocation of the command buffer's context: one
/// past an allocation's end, one before its start, host memory, a freed
/// allocation, null. A private context makes sure no other case's
/// allocation can sit at any of them.
fn pointer_in_no_allocation(env: &Env) -> CaseResult {
    let raw = HostBytes::filled(64, 0);
    let host_vec = [0u8; 64];
    let context = Context::new(env.device())?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let mem = UsmAllocation::new(&context, UsmKind::Device, 64)?;
    let buffer = MemBuffer::new(&context, MemFlags::READ_WRITE, 64)?;
    let freed = UsmAllocation::new(&context, UsmKind::Device, 64)?.ptr();
    let cb = CommandBuffer::new(&context, env.device(), CommandBufferDesc::default())?;
    let strays = [
        ("one past the end", mem.ptr().byte_add(64)),
        ("one before the start", mem.ptr().byte_add(usize::MAX)),
        ("host memory", UsmPtr::from_addr(host_vec.as_ptr() as u64)),
        ("a freed allocation", freed),
        ("null", UsmPtr::NULL),
    ];
    let region = RectRegion::new(4, 4, 1);
    let packed = RectLayout::packed();
    for (what, p) in strays {
        let before = cb.len();
        check_err!(cb.append_usm_memcpy(p, mem.ptr(), 16, none()), InvalidValue);
        check_err!(cb.append_usm_memcpy(mem.ptr(), p, 16, none()), InvalidValue);
        check_err!(cb.append_usm_fill(p, &[1], 16, none()), InvalidValue);
        check_err!(cb.append_usm_prefetch(p, 16, MigrationFlags::HOST_TO_DEVICE, none()), InvalidValue);
        check_err!(cb.append_usm_advise(p, 16, UsmAdvice::SET_READ_MOSTLY, none()), InvalidValue);
        check_err!(cb.append_buffer_read(&buffer, 0, 16, p, none()), InvalidValue);
        check_err!(cb.append_buffer_write(&buffer, 0, 16, p, none()), InvalidValue);
        check_err!(cb.append_buffer_read_rect(&buffer, packed, packed, region, p, none()), InvalidValue);
        check_err!(cb.append_buffer_write_rect(&buffer, packed, packed, region, p, none()), InvalidValue);
        check_eq!(cb.len(), before, "appends with a pointer to {what} were recorded");
    }
    // SAFETY: a null host pointer is rejected before anything is recorded
    // (UR's INVALID_NULL_POINTER); `raw` would be the valid alternative.
    unsafe {
        rejects!(cb, cb.append_buffer_read_host(&buffer, 0, 16, std::ptr::null_mut(), none()), InvalidNullPointer);
        rejects!(cb, cb.append_buffer_write_host(&buffer, 0, 16, std::ptr::null(), none()), InvalidNullPointer);
    }
    let f = cb.append_usm_fill(mem.ptr(), &[0x33], 64, none())?;
    let w = cb.append_buffer_write(&buffer, 0, 64, mem.ptr(), AppendOptions::new().after(&[f.sync_point]))?;
    // SAFETY: `raw` holds 64 bytes and outlives every execution (declared
    // before the queue); read only after waiting.
    unsafe { cb.append_buffer_read_host(&buffer, 0, 64, raw.ptr(), AppendOptions::new().after(&[w.sync_point]))? };
    check_eq!(cb.len(), 3);
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    // SAFETY: the execution was waited for.
    let seen = unsafe { raw.to_vec() };
    check_eq!(seen, vec![0x33u8; 64]);
    Ok(())
}

/// A live allocation of another context is, for this context, inside no
/// allocation.
fn pointer_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let foreign = UsmAllocation::new(&other, UsmKind::Device, 64)?;
    let f = foreign.ptr();
    let mine = env.usm(UsmKind::Device, 64)?;
    let buffer = env.buffer(64)?;
    let region = RectRegion::new(4, 4, 1);
    let packed = RectLayout::packed();
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_usm_memcpy(f, mine.ptr(), 16, none()), InvalidValue);
    rejects!(cb, cb.append_usm_memcpy(mine.ptr(), f, 16, none()), InvalidValue);
    rejects!(cb, cb.append_usm_fill(f, &[1], 16, none()), InvalidValue);
    rejects!(cb, cb.append_usm_prefetch(f, 16, MigrationFlags::HOST_TO_DEVICE, none()), InvalidValue);
    rejects!(cb, cb.append_usm_advise(f, 16, UsmAdvice::SET_READ_MOSTLY, none()), InvalidValue);
    rejects!(cb, cb.append_buffer_read(&buffer, 0, 16, f, none()), InvalidValue);
    rejects!(cb, cb.append_buffer_write(&buffer, 0, 16, f, none()), InvalidValue);
    rejects!(cb, cb.append_buffer_read_rect(&buffer, packed, packed, region, f, none()), InvalidValue);
    rejects!(cb, cb.append_buffer_write_rect(&buffer, packed, packed, region, f, none()), InvalidValue);
    let fill = cb.append_usm_fill(mine.ptr(), &[0x44], 64, none())?;
    cb.append_buffer_write(&buffer, 0, 64, mine.ptr(), AppendOptions::new().after(&[fill.sync_point]))?;
    let queue = run(env, &cb)?;
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 64)?, vec![0x44u8; 64]);
    Ok(())
}

/// Buffers of another context of the same device. Every adapter uses them
/// as its own (one memory, one logical device, one primary context, one
/// `cl_context` for OpenCL's contexts made on one device), in command
/// buffers and eagerly, waiting for the other context's events (UR's
/// `urEventWaitTest.WithCrossContextDependencies`). Where an adapter keeps
/// contexts apart (OpenCL's adopted from a `cl_context` of their own, tested
/// in adapter-opencl), each use is refused (`InvalidMemObject`).
fn buffer_of_other_context(env: &Env) -> CaseResult {
    let other = Context::new(env.device())?;
    let foreign = MemBuffer::new(&other, MemFlags::READ_WRITE, 64)?;
    let input = noise(64, 241);
    let mine = env.buffer_with(&input)?;
    let copy = env.buffer(64)?;
    if env.context().uses_buffers_of(&other) {
        return buffers_shared_across_contexts(env, &other, &foreign, &mine, &input);
    }
    let raw = HostBytes::filled(64, 0);
    let usm = env.usm(UsmKind::Device, 64)?;
    let region = RectRegion::new(4, 4, 1);
    let packed = RectLayout::packed();
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_buffer_copy(&foreign, &mine, 0, 0, 16, none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_copy(&mine, &foreign, 0, 0, 16, none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_read(&foreign, 0, 16, usm.ptr(), none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_write(&foreign, 0, 16, usm.ptr(), none()), InvalidMemObject);
    // SAFETY: `raw` holds 64 bytes and outlives the buffer; both appends are
    // rejected before recording anyway.
    unsafe {
        rejects!(cb, cb.append_buffer_read_host(&foreign, 0, 16, raw.ptr(), none()), InvalidMemObject);
        rejects!(cb, cb.append_buffer_write_host(&foreign, 0, 16, raw.ptr(), none()), InvalidMemObject);
    }
    rejects!(cb, cb.append_buffer_fill(&foreign, &[1], 0, 16, none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_read_rect(&foreign, packed, packed, region, usm.ptr(), none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_write_rect(&foreign, packed, packed, region, usm.ptr(), none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_copy_rect(&foreign, &mine, packed, packed, region, none()), InvalidMemObject);
    rejects!(cb, cb.append_buffer_copy_rect(&mine, &foreign, packed, packed, region, none()), InvalidMemObject);
    cb.append_buffer_copy(&mine, &copy, 0, 0, 64, none())?;
    let queue = run(env, &cb)?;
    check_eq!(read_buffer::<u8>(&queue, &copy, 0, 64)?, input);
    check_err!(queue.fill_buffer(&foreign, &[1], 0, 16, &[]), InvalidMemObject);
    Ok(())
}

/// A chain across two contexts of one device, as UR's cross-context case
/// has it: a copy on this context's queue into the other's buffer, a fill of
/// it on the other's queue after the copy's event, a command buffer of this
/// context reading it back after the fill's event.
fn buffers_shared_across_contexts(
    env: &Env,
    other: &Context,
    foreign: &MemBuffer,
    mine: &MemBuffer,
    input: &[u8],
) -> CaseResult {
    let queue = env.queue()?;
    let other_queue = Queue::new(other, QueueProperties::default())?;
    // Each after the other context's event where the queues wait for it
    // device-side (NVIDIA's OpenCL does not: `Context::waits_on_events_of`),
    // else after the host waited for it.
    let after = |queue: &Queue, event: cmdbuf::Event, of: &Context| -> Result<Vec<cmdbuf::Event>, crate::CaseError> {
        if queue.context().waits_on_events_of(of) {
            return Ok(vec![event]);
        }
        check_err!(queue.barrier(&[&event]), InvalidEventWaitList);
        event.wait()?;
        Ok(Vec::new())
    };
    let copied = after(&other_queue, queue.copy_buffer(mine, foreign, 0, 0, 64, &[])?, env.context())?;
    let filled = other_queue.fill_buffer(foreign, &[0xAB], 48, 16, &copied.iter().collect::<Vec<_>>())?;
    let back = env.buffer(64)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_copy(foreign, &back, 0, 0, 64, none())?;
    cb.finalize()?;
    let filled = after(&queue, filled, other)?;
    queue.enqueue_command_buffer(&cb, &filled.iter().collect::<Vec<_>>())?.wait()?;
    let mut expected = input.to_vec();
    expected[48..].fill(0xAB);
    check_eq!(read_buffer::<u8>(&queue, &back, 0, 64)?, expected, "through both contexts");
    check_eq!(read_buffer::<u8>(&other_queue, foreign, 0, 64)?, expected, "in the other context");
    Ok(())
}

/// Copies within one allocation or buffer whose ranges share bytes are
/// rejected; ranges that only touch are not.
fn overlapping_regions(env: &Env) -> CaseResult {
    let usm_data = noise(128, 251);
    let buffer_data = noise(128, 252);
    let queue = env.queue()?;
    let mem = env.usm(UsmKind::Device, 128)?;
    write(&queue, mem.ptr(), &usm_data)?;
    let buffer = env.buffer_with(&buffer_data)?;
    let p = mem.ptr();
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_usm_memcpy(p.byte_add(8), p, 16, none()), OverlappingRegions);
    rejects!(cb, cb.append_usm_memcpy(p, p.byte_add(15), 16, none()), OverlappingRegions);
    rejects!(cb, cb.append_usm_memcpy(p, p, 16, none()), OverlappingRegions);
    rejects!(cb, cb.append_buffer_copy(&buffer, &buffer, 0, 8, 16, none()), OverlappingRegions);
    rejects!(cb, cb.append_buffer_copy(&buffer, &buffer, 31, 16, 16, none()), OverlappingRegions);
    rejects!(cb, cb.append_buffer_copy(&buffer, &buffer, 5, 5, 1, none()), OverlappingRegions);
    // A 4x4 block and the same block shifted by (2, 1): they share bytes.
    rejects!(
        cb,
        cb.append_buffer_copy_rect(
            &buffer,
            &buffer,
            layout([0, 0, 0], 16, 0),
            layout([2, 1, 0], 16, 0),
            RectRegion::new(4, 4, 1),
            none()
        ),
        OverlappingRegions
    );
    // Touching ranges are fine.
    cb.append_usm_memcpy(p.byte_add(16), p, 16, none())?;
    let c = cb.append_buffer_copy(&buffer, &buffer, 0, 16, 16, none())?;
    cb.append_buffer_copy_rect(
        &buffer,
        &buffer,
        layout([0, 0, 0], 16, 0),
        layout([0, 2, 0], 16, 0),
        RectRegion::new(16, 2, 1),
        AppendOptions::new().after(&[c.sync_point]),
    )?;
    check_eq!(cb.len(), 3);
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, p, 128)?, placed(&usm_data, 16, &usm_data, 0, 16));
    let after_copy = placed(&buffer_data, 16, &buffer_data, 0, 16);
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 128)?, placed(&after_copy, 32, &after_copy, 0, 32));
    Ok(())
}

fn bad_fill_patterns(env: &Env) -> CaseResult {
    let mem = env.usm(UsmKind::Device, 1024)?;
    let buffer = env.buffer_with(&[BASE; 1024])?;
    let longer_than_size = [7u8; 257];
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_usm_fill(mem.ptr(), &[], 64, none()), InvalidSize);
    rejects!(cb, cb.append_usm_fill(mem.ptr(), &longer_than_size, 64, none()), InvalidSize);
    rejects!(cb, cb.append_usm_fill(mem.ptr(), &[1, 2, 3], 64, none()), InvalidSize);
    rejects!(cb, cb.append_usm_fill(mem.ptr(), &[1, 2, 3, 4], 6, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &[], 0, 64, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &longer_than_size, 0, 64, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &[1, 2, 3], 0, 64, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &[1, 2, 3, 4], 2, 8, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&buffer, &[1, 2, 3], 4, 9, none()), InvalidSize);
    // Any length: a 256-byte pattern, and a 3-byte one at an offset that is
    // a multiple of 3 (patterns above 256 bytes: `long_fill_patterns`).
    let longest = pattern(256, 17);
    cb.append_usm_fill(mem.ptr(), &longest, 1024, none())?;
    cb.append_buffer_fill(&buffer, &longest, 256, 512, none())?;
    cb.append_buffer_fill(&buffer, &[1, 2, 3], 771, 9, none())?;
    check_eq!(cb.len(), 3);
    let queue = run(env, &cb)?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 1024)?, fill_reference(&longest, 1024));
    let mut expected = vec![BASE; 1024];
    expected[256..768].copy_from_slice(&fill_reference(&longest, 512));
    expected[771..780].copy_from_slice(&fill_reference(&[1, 2, 3], 9));
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, 1024)?, expected);
    Ok(())
}

/// Patterns above 256 bytes, powers of two or not, up to the whole fill
/// (UR's `urEnqueueUSMFill` and `urEnqueueUSMFill2D` cases go to 64 KiB),
/// eager and recorded, on USM and buffers.
fn long_fill_patterns(env: &Env) -> CaseResult {
    const SIZE: usize = 6144;
    let mem = env.usm(UsmKind::Device, SIZE)?;
    let buffer = env.buffer_with(&[BASE; SIZE])?;
    let queue = env.queue()?;
    for plen in [384usize, 1024, 2048, 6144] {
        let pat = pattern(plen, plen as u8);
        queue.usm_fill(mem.ptr(), &pat, SIZE, &[])?.wait()?;
        check_eq!(read::<u8>(&queue, mem.ptr(), SIZE)?, fill_reference(&pat, SIZE), "eager USM, {plen} bytes");
        queue.fill_buffer(&buffer, &pat, 0, SIZE, &[])?.wait()?;
        check_eq!(
            read_buffer::<u8>(&queue, &buffer, 0, SIZE)?,
            fill_reference(&pat, SIZE),
            "eager buffer, {plen} bytes"
        );
    }
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let (usm_pattern, buffer_pattern) = (pattern(768, 3), pattern(1024, 9));
    cb.append_usm_fill(mem.ptr(), &usm_pattern, SIZE, none())?;
    cb.append_buffer_fill(&buffer, &buffer_pattern, 1024, 4096, none())?;
    let queue = run(env, &cb)?;
    check_eq!(read::<u8>(&queue, mem.ptr(), SIZE)?, fill_reference(&usm_pattern, SIZE), "recorded USM");
    let mut expected = fill_reference(&pattern(6144, 6144usize as u8), SIZE);
    expected[1024..5120].copy_from_slice(&fill_reference(&buffer_pattern, 4096));
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, SIZE)?, expected, "recorded buffer");
    // A second replay of the recorded fills still reads their patterns.
    queue.usm_fill(mem.ptr(), &[0], SIZE, &[])?.wait()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), SIZE)?, fill_reference(&usm_pattern, SIZE), "replayed USM");
    Ok(())
}

fn zero_sizes(env: &Env) -> CaseResult {
    let raw = HostBytes::filled(64, 0);
    let (a, b) = (env.usm(UsmKind::Device, 64)?, env.usm(UsmKind::Device, 64)?);
    let (x, y) = (env.buffer(64)?, env.buffer(64)?);
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    rejects!(cb, cb.append_usm_memcpy(b.ptr(), a.ptr(), 0, none()), InvalidSize);
    rejects!(cb, cb.append_usm_fill(a.ptr(), &[1], 0, none()), InvalidSize);
    rejects!(cb, cb.append_usm_prefetch(a.ptr(), 0, MigrationFlags::HOST_TO_DEVICE, none()), InvalidSize);
    rejects!(cb, cb.append_usm_advise(a.ptr(), 0, UsmAdvice::SET_READ_MOSTLY, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_copy(&x, &y, 0, 0, 0, none()), InvalidSize);
    rejects!(cb, cb.append_buffer_read(&x, 0, 0, a.ptr(), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_write(&x, 0, 0, a.ptr(), none()), InvalidSize);
    rejects!(cb, cb.append_buffer_fill(&x, &[1], 0, 0, none()), InvalidSize);
    // SAFETY: `raw` holds 64 bytes and outlives the buffer; nothing is recorded.
    unsafe {
        rejects!(cb, cb.append_buffer_read_host(&x, 0, 0, raw.ptr(), none()), InvalidSize);
        rejects!(cb, cb.append_buffer_write_host(&x, 0, 0, raw.ptr(), none()), InvalidSize);
    }
    // One byte is enough.
    let f = cb.append_usm_fill(a.ptr(), &[0x77], 1, none())?;
    cb.append_usm_memcpy(b.ptr(), a.ptr(), 1, AppendOptions::new().after(&[f.sync_point]))?;
    let queue = run(env, &cb)?;
    check_eq!(read::<u8>(&queue, b.ptr(), 1)?, vec![0x77u8]);
    Ok(())
}

/// Pitches that break UR's layout rules, on every side of every rect
/// command, and regions with a zero dimension.
fn bad_rect_pitches(env: &Env) -> CaseResult {
    let input = noise(256, 261);
    let buffer = env.buffer_with(&input)?;
    let other = env.buffer(256)?;
    let usm = env.usm(UsmKind::Device, 256)?;
    let region = RectRegion::new(4, 4, 1);
    let packed = RectLayout::packed();
    let bad = [
        ("row pitch below the width", layout([0, 0, 0], 3, 0)),
        ("slice pitch not a multiple of the row pitch", layout([0, 0, 0], 8, 36)),
        ("slice pitch below row pitch x height", layout([0, 0, 0], 8, 24)),
    ];
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    for (what, l) in bad {
        let before = cb.len();
        check_err!(cb.append_buffer_read_rect(&buffer, l, packed, region, usm.ptr(), none()), InvalidSize);
        check_err!(cb.append_buffer_read_rect(&buffer, packed, l, region, usm.ptr(), none()), InvalidSize);
        check_err!(cb.append_buffer_write_rect(&buffer, l, packed, region, usm.ptr(), none()), InvalidSize);
        check_err!(cb.append_buffer_write_rect(&buffer, packed, l, region, usm.ptr(), none()), InvalidSize);
        check_err!(cb.append_buffer_copy_rect(&buffer, &other, l, packed, region, none()), InvalidSize);
        check_err!(cb.append_buffer_copy_rect(&buffer, &other, packed, l, region, none()), InvalidSize);
        check_eq!(cb.len(), before, "appends with a {what} were recorded");
    }
    for r in [RectRegion::new(0, 4, 1), RectRegion::new(4, 0, 1), RectRegion::new(4, 4, 0)] {
        rejects!(cb, cb.append_buffer_read_rect(&buffer, packed, packed, r, usm.ptr(), none()), InvalidSize);
        rejects!(cb, cb.append_buffer_write_rect(&buffer, packed, packed, r, usm.ptr(), none()), InvalidSize);
        rejects!(cb, cb.append_buffer_copy_rect(&buffer, &other, packed, packed, r, none()), InvalidSize);
    }
    // Explicit pitches that follow the rules: a slice pitch with padding rows.
    let padded = layout([1, 1, 0], 8, 40);
    cb.append_buffer_read_rect(&buffer, padded, packed, region, usm.ptr(), none())?;
    cb.append_buffer_copy_rect(&buffer, &other, padded, padded, region, none())?;
    check_eq!(cb.len(), 2);
    let queue = run(env, &cb)?;
    let mut expected_usm = vec![0u8; 16];
    copy_rect_reference(&input, [1, 1, 0], (8, 40), &mut expected_usm, [0, 0, 0], (4, 16), [4, 4, 1]);
    let mut expected_other = vec![0u8; 256];
    copy_rect_reference(&input, [1, 1, 0], (8, 40), &mut expected_other, [1, 1, 0], (8, 40), [4, 4, 1]);
    check_eq!(read::<u8>(&queue, usm.ptr(), 16)?, expected_usm);
    check_eq!(read_buffer::<u8>(&queue, &other, 0, 256)?, expected_other);
    Ok(())
}
