//! Rect reads and writes in command buffers (UR's `rect_read.cpp` and
//! `rect_write.cpp`, every parameter set), checked against the host model
//! `copy_rect_reference`; buffer-to-buffer rect copies in 2D and 3D; and rect
//! commands replayed with new data.

use cmdbuf::{AppendOptions, CommandBufferDesc, RectLayout, RectOffset, RectRegion, UsmKind};

use super::read_write::noise;
use crate::harness::{Case, CaseResult, Env, copy_rect_reference, read, read_buffer, write};
use crate::{Requires, cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    for set in READ_SETS {
        all.push(Case::new(format!("rect::read_{}", set.name), move |env| read_set(env, &set)));
    }
    for set in &READ_SETS[..WRITE_SET_COUNT] {
        let set = *set;
        all.push(Case::new(format!("rect::write_{}", set.name), move |env| write_set(env, &set)));
    }
    all.extend(cases!["rect";
        copy_2d,
        copy_3d_chain,
        read_write_twice => Requires::HOST_USM,
    ]);
    all
}

/// One of UR's rect parameter sets. UR names the two sides `src` and `dst`
/// in both files but binds `src` to the host side and `dst` to the buffer in
/// both, so that is how they are stored here.
#[derive(Copy, Clone, Debug)]
struct RectSet {
    name: &'static str,
    host_size: usize,
    buffer_size: usize,
    host_origin: [usize; 3],
    buffer_origin: [usize; 3],
    region: [usize; 3],
    host_pitches: (usize, usize),
    buffer_pitches: (usize, usize),
}

const fn set(
    name: &'static str,
    sizes: (usize, usize),
    origins: ([usize; 3], [usize; 3]),
    region: [usize; 3],
    host_pitches: (usize, usize),
    buffer_pitches: (usize, usize),
) -> RectSet {
    RectSet {
        name,
        host_size: sizes.0,
        buffer_size: sizes.1,
        host_origin: origins.0,
        buffer_origin: origins.1,
        region,
        host_pitches,
        buffer_pitches,
    }
}

/// `rect_read.cpp` runs all eight; `rect_write.cpp` the first seven.
const READ_SETS: [RectSet; 8] = [
    set("whole_buffer_2d", (256, 256), ([0, 0, 0], [0, 0, 0]), [16, 16, 1], (16, 256), (16, 256)),
    set("non_zero_offsets_2d", (16, 32), ([2, 2, 0], [4, 2, 0]), [2, 2, 1], (4, 16), (8, 32)),
    set("different_buffer_sizes_2d", (256, 512), ([0, 0, 0], [4, 0, 0]), [4, 4, 1], (4, 16), (8, 32)),
    set("column_2d", (256, 512), ([0, 0, 0], [1, 0, 0]), [1, 256, 1], (1, 256), (2, 512)),
    set("row_2d", (256, 512), ([0, 0, 0], [0, 1, 0]), [256, 1, 1], (256, 256), (256, 512)),
    set("whole_3d", (512, 512), ([0, 0, 0], [0, 0, 0]), [8, 8, 8], (8, 64), (8, 64)),
    set("3d_with_offsets", (512, 512), ([1, 2, 3], [4, 1, 3]), [4, 3, 2], (8, 64), (8, 64)),
    set("2d_into_3d", (256, 1024), ([1, 2, 0], [4, 1, 3]), [4, 16, 1], (8, 256), (8, 256)),
];

const WRITE_SET_COUNT: usize = 7;

/// What memory outside the region holds before the command runs.
const BASE: u8 = 0x5A;

fn layout(origin: [usize; 3], pitches: (usize, usize)) -> RectLayout {
    RectLayout::new(RectOffset::new(origin[0], origin[1], origin[2]), pitches.0, pitches.1)
}

fn region(r: [usize; 3]) -> RectRegion {
    RectRegion::new(r[0], r[1], r[2])
}

/// UR's `urCommandBufferAppendMemBufferReadRectTestWithParam.Success`, the
/// host side in device USM (always present; host USM is covered by
/// `read_write_twice`).
fn read_set(env: &Env, s: &RectSet) -> CaseResult {
    let input = noise(s.buffer_size, s.buffer_size as u64 + 3);
    let buffer = env.buffer_with(&input)?;
    let queue = env.queue()?;
    let host = env.usm(UsmKind::Device, s.host_size)?;
    write(&queue, host.ptr(), &vec![BASE; s.host_size])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_read_rect(
        &buffer,
        layout(s.buffer_origin, s.buffer_pitches),
        layout(s.host_origin, s.host_pitches),
        region(s.region),
        host.ptr(),
        AppendOptions::new(),
    )?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected = vec![BASE; s.host_size];
    copy_rect_reference(
        &input,
        s.buffer_origin,
        s.buffer_pitches,
        &mut expected,
        s.host_origin,
        s.host_pitches,
        s.region,
    );
    check_eq!(read::<u8>(&queue, host.ptr(), s.host_size)?, expected);
    Ok(())
}

/// UR's `urCommandBufferAppendMemBufferWriteRectTestWithParam.Success`, the
/// host side in device USM, the buffer first filled with a marker.
fn write_set(env: &Env, s: &RectSet) -> CaseResult {
    let input = noise(s.host_size, s.host_size as u64 + 5);
    let queue = env.queue()?;
    let host = env.usm(UsmKind::Device, s.host_size)?;
    write(&queue, host.ptr(), &input)?;
    let buffer = env.buffer(s.buffer_size)?;
    queue.fill_buffer(&buffer, &[BASE], 0, s.buffer_size, &[])?.wait()?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_write_rect(
        &buffer,
        layout(s.buffer_origin, s.buffer_pitches),
        layout(s.host_origin, s.host_pitches),
        region(s.region),
        host.ptr(),
        AppendOptions::new(),
    )?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected = vec![BASE; s.buffer_size];
    copy_rect_reference(
        &input,
        s.host_origin,
        s.host_pitches,
        &mut expected,
        s.buffer_origin,
        s.buffer_pitches,
        s.region,
    );
    check_eq!(read_buffer::<u8>(&queue, &buffer, 0, s.buffer_size)?, expected);
    Ok(())
}

/// A 2D rect copy between buffers with different explicit row pitches and
/// non-zero origins on both sides, then (after it, by sync point) a copy
/// inside the source buffer between two disjoint rects, one of which
/// overlaps the rect the first copy read.
fn copy_2d(env: &Env) -> CaseResult {
    const SRC: usize = 16 * 24;
    const DST: usize = 20 * 32;
    let input = noise(SRC, 101);
    let src = env.buffer_with(&input)?;
    let dst = env.buffer_with(&vec![BASE; DST])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    // Source slice pitch 0: tightly packed (24 x 7), irrelevant for one slice.
    let first = cb.append_buffer_copy_rect(
        &src,
        &dst,
        layout([3, 5, 0], (24, 0)),
        layout([17, 2, 0], (32, DST)),
        RectRegion::new(10, 7, 1),
        AppendOptions::new(),
    )?;
    cb.append_buffer_copy_rect(
        &src,
        &src,
        layout([0, 0, 0], (24, 0)),
        layout([12, 8, 0], (24, 0)),
        RectRegion::new(4, 4, 1),
        AppendOptions::new().after(&[first.sync_point]),
    )?;
    cb.finalize()?;
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let mut expected_dst = vec![BASE; DST];
    copy_rect_reference(&input, [3, 5, 0], (24, 24 * 7), &mut expected_dst, [17, 2, 0], (32, DST), [10, 7, 1]);
    let mut expected_src = input.clone();
    copy_rect_reference(&input, [0, 0, 0], (24, 96), &mut expected_src, [12, 8, 0], (24, 96), [4, 4, 1]);
    check_eq!(read_buffer::<u8>(&queue, &dst, 0, DST)?, expected_dst, "destination buffer");
    check_eq!(read_buffer::<u8>(&queue, &src, 0, SRC)?, expected_src, "source buffer after the copy inside it");
    Ok(())
}

/// A 3D region through every rect command, chained by sync points: written
/// from USM into buffer A, copied from A into buffer B (whose slice pitch has
/// padding rows), read from B into packed USM. Each side has its own origin
/// and pitches.
fn copy_3d_chain(env: &Env) -> CaseResult {
    const R: [usize; 3] = [6, 5, 3];
    const HOST: usize = 144;
    const A: usize = 512;
    const B: usize = 300;
    let (host_origin, host_pitches) = ([1, 1, 0], (8, 48));
    let (a_origin, a_pitches) = ([2, 1, 1], (16, 128));
    let (b_origin, b_pitches) = ([4, 0, 2], (10, 60));
    let input = noise(HOST, 111);
    let queue = env.queue()?;
    let src = env.usm(UsmKind::Device, HOST)?;
    let out = env.usm(UsmKind::Device, R[0] * R[1] * R[2])?;
    write(&queue, src.ptr(), &input)?;
    write(&queue, out.ptr(), &vec![0u8; R[0] * R[1] * R[2]])?;
    let a = env.buffer_with(&vec![BASE; A])?;
    let b = env.buffer_with(&vec![BASE; B])?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let w = cb.append_buffer_write_rect(
        &a,
        layout(a_origin, a_pitches),
        layout(host_origin, host_pitches),
        region(R),
        src.ptr(),
        AppendOptions::new(),
    )?;
    let c = cb.append_buffer_copy_rect(
        &a,
        &b,
        layout(a_origin, a_pitches),
        layout(b_origin, b_pitches),
        region(R),
        AppendOptions::new().after(&[w.sync_point]),
    )?;
    cb.append_buffer_read_rect(
        &b,
        layout(b_origin, b_pitches),
        RectLayout::packed(),
        region(R),
        out.ptr(),
        AppendOptions::new().after(&[c.sync_point]),
    )?;
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;

    let mut expected_a = vec![BASE; A];
    copy_rect_reference(&input, host_origin, host_pitches, &mut expected_a, a_origin, a_pitches, R);
    let mut expected_b = vec![BASE; B];
    copy_rect_reference(&expected_a, a_origin, a_pitches, &mut expected_b, b_origin, b_pitches, R);
    let mut expected_out = vec![0u8; R[0] * R[1] * R[2]];
    copy_rect_reference(&input, host_origin, host_pitches, &mut expected_out, [0, 0, 0], (R[0], R[0] * R[1]), R);
    check_eq!(read_buffer::<u8>(&queue, &a, 0, A)?, expected_a, "buffer A");
    check_eq!(read_buffer::<u8>(&queue, &b, 0, B)?, expected_b, "buffer B");
    check_eq!(read::<u8>(&queue, out.ptr(), R[0] * R[1] * R[2])?, expected_out, "packed read-back");
    Ok(())
}

/// A rect read and a rect write with host USM on the host side, recorded once
/// and executed twice; between executions both sources change, and each
/// execution must move the data of its own time.
fn read_write_twice(env: &Env) -> CaseResult {
    // UR's `3d_with_offsets` geometry for the read, `2d_into_3d` for the write.
    let r = READ_SETS[6];
    let w = READ_SETS[7];
    let queue = env.queue()?;
    let read_src = env.buffer(r.buffer_size)?;
    let read_dst = env.usm(UsmKind::Host, r.host_size)?;
    let write_src = env.usm(UsmKind::Host, w.host_size)?;
    let write_dst = env.buffer(w.buffer_size)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    cb.append_buffer_read_rect(
        &read_src,
        layout(r.buffer_origin, r.buffer_pitches),
        layout(r.host_origin, r.host_pitches),
        region(r.region),
        read_dst.ptr(),
        AppendOptions::new(),
    )?;
    cb.append_buffer_write_rect(
        &write_dst,
        layout(w.buffer_origin, w.buffer_pitches),
        layout(w.host_origin, w.host_pitches),
        region(w.region),
        write_src.ptr(),
        AppendOptions::new(),
    )?;
    cb.finalize()?;
    for run in 1..=2u64 {
        let buffer_data = noise(r.buffer_size, 120 + run);
        let host_data = noise(w.host_size, 130 + run);
        queue.write_buffer(&read_src, 0, &buffer_data, &[])?;
        write(&queue, read_dst.ptr(), &vec![BASE; r.host_size])?;
        write(&queue, write_src.ptr(), &host_data)?;
        queue.write_buffer(&write_dst, 0, &vec![BASE; w.buffer_size], &[])?;
        queue.enqueue_command_buffer(&cb, &[])?.wait()?;
        let mut expected_read = vec![BASE; r.host_size];
        copy_rect_reference(
            &buffer_data,
            r.buffer_origin,
            r.buffer_pitches,
            &mut expected_read,
            r.host_origin,
            r.host_pitches,
            r.region,
        );
        let mut expected_write = vec![BASE; w.buffer_size];
        copy_rect_reference(
            &host_data,
            w.host_origin,
            w.host_pitches,
            &mut expected_write,
            w.buffer_origin,
            w.buffer_pitches,
            w.region,
        );
        check_eq!(read::<u8>(&queue, read_dst.ptr(), r.host_size)?, expected_read, "rect read, execution {run}");
        check_eq!(
            read_buffer::<u8>(&queue, &write_dst, 0, w.buffer_size)?,
            expected_write,
            "rect write, execution {run}"
        );
    }
    Ok(())
}
