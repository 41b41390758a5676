//! Pitched USM copies and fills (`urEnqueueUSMMemcpy2D`,
//! `urEnqueueUSMFill2D`, UR's `urEnqueueUSMMemcpy2D.cpp` and
//! `urEnqueueUSMFill2D.cpp`): rows land at their pitch, padding between
//! rows is untouched, host memory works on either side of a copy, and the
//! whole pitched range is checked before anything runs.

use cmdbuf::{Event, UsmKind};

use crate::harness::{CaseResult, Env, fill_reference, pattern, read, write};
use crate::{cases, check_eq, check_err};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["usm_2d";
        memcpy_between_pitches,
        memcpy_contiguous,
        memcpy_with_host_memory,
        fill_rows,
        fill_pattern_across_rows,
        misuse,
    ]
}

/// `base` with `height` rows of `width` bytes of `src` (rows `src_pitch`
/// apart) placed `dst_pitch` apart.
fn pitched(base: &[u8], dst_pitch: usize, src: &[u8], src_pitch: usize, width: usize, height: usize) -> Vec<u8> {
    let mut out = base.to_vec();
    for row in 0..height {
        out[row * dst_pitch..row * dst_pitch + width].copy_from_slice(&src[row * src_pitch..row * src_pitch + width]);
    }
    out
}

fn memcpy_between_pitches(env: &Env) -> CaseResult {
    const W: usize = 40;
    const H: usize = 8;
    let (src_pitch, dst_pitch) = (64, 48);
    let src = env.usm(UsmKind::Device, src_pitch * H)?;
    let dst = env.usm(UsmKind::Device, dst_pitch * H)?;
    let queue = env.queue()?;
    let data = pattern(src_pitch * H, 5);
    let base = pattern(dst_pitch * H, 200);
    write(&queue, src.ptr(), &data)?;
    write(&queue, dst.ptr(), &base)?;
    let (d, s) = (dst.ptr().addr() as *mut u8, src.ptr().addr() as *const u8);
    // SAFETY: both sides are USM allocations of the context holding their pitched ranges.
    unsafe { queue.usm_memcpy_2d(d, dst_pitch, s, src_pitch, W, H, &[])?.wait()? };
    check_eq!(read::<u8>(&queue, dst.ptr(), dst_pitch * H)?, pitched(&base, dst_pitch, &data, src_pitch, W, H));
    Ok(())
}

fn memcpy_contiguous(env: &Env) -> CaseResult {
    const W: usize = 32;
    const H: usize = 16;
    let src = env.usm(UsmKind::Device, W * H)?;
    let dst = env.usm(UsmKind::Device, W * H)?;
    let queue = env.queue()?;
    let data = pattern(W * H, 9);
    write(&queue, src.ptr(), &data)?;
    let (d, s) = (dst.ptr().addr() as *mut u8, src.ptr().addr() as *const u8);
    // SAFETY: both sides are USM allocations of the context holding their ranges.
    unsafe { queue.usm_memcpy_2d(d, W, s, W, W, H, &[])?.wait()? };
    check_eq!(read::<u8>(&queue, dst.ptr(), W * H)?, data);
    Ok(())
}

/// Host memory to device memory and back, with the host rows at their own pitch.
fn memcpy_with_host_memory(env: &Env) -> CaseResult {
    const W: usize = 24;
    const H: usize = 6;
    let host_pitch = 32;
    let dev_pitch = 40;
    let host_src = pattern(host_pitch * H, 17);
    let mut host_dst = vec![0xEEu8; host_pitch * H];
    let dev = env.usm(UsmKind::Device, dev_pitch * H)?;
    let queue = env.queue()?;
    write(&queue, dev.ptr(), &vec![0u8; dev_pitch * H])?;
    let d = dev.ptr().addr() as *mut u8;
    // SAFETY: the host vectors outlive the waited-for copies and hold their
    // pitched ranges; the device side is an allocation holding its own.
    unsafe {
        queue.usm_memcpy_2d(d, dev_pitch, host_src.as_ptr(), host_pitch, W, H, &[])?.wait()?;
        queue.usm_memcpy_2d(host_dst.as_mut_ptr(), host_pitch, d, dev_pitch, W, H, &[])?.wait()?;
    }
    let expected = pitched(&vec![0xEE; host_pitch * H], host_pitch, &host_src, host_pitch, W, H);
    check_eq!(host_dst, expected);
    Ok(())
}

fn fill_rows(env: &Env) -> CaseResult {
    const H: usize = 5;
    let pitch = 96;
    let mem = env.usm(UsmKind::Device, pitch * H)?;
    let queue = env.queue()?;
    for plen in [1usize, 2, 4, 8, 16, 3] {
        let width = plen * (64 / plen);
        let base = pattern(pitch * H, plen as u8);
        write(&queue, mem.ptr(), &base)?;
        let pat = pattern(plen, 0x40 | plen as u8);
        queue.usm_fill_2d(mem.ptr(), pitch, &pat, width, H, &[])?.wait()?;
        let rows = fill_reference(&pat, width).repeat(H);
        let expected = pitched(&base, pitch, &rows, width, width, H);
        check_eq!(read::<u8>(&queue, mem.ptr(), pitch * H)?, expected, "pattern of {plen} bytes");
    }
    // Contiguous rows: one fill.
    queue.usm_fill_2d(mem.ptr(), 32, &[7], 32, H, &[])?.wait()?;
    check_eq!(read::<u8>(&queue, mem.ptr(), 32 * H)?, vec![7u8; 32 * H]);
    Ok(())
}

/// Patterns that do not divide the width run on from one row into the
/// next, as if the rows were contiguous (UR's `urEnqueueUSMFill2D` cases
/// with a pattern of `width * height` bytes), up to patterns far above 256
/// bytes.
fn fill_pattern_across_rows(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    // (pitch, width, height, pattern length)
    for (pitch, width, height, plen) in [(96, 32, 4, 64), (96, 48, 4, 64), (320, 256, 8, 1024), (300, 256, 4, 1024)] {
        let mem = env.usm(UsmKind::Device, pitch * height)?;
        let base = pattern(pitch * height, 0x11);
        write(&queue, mem.ptr(), &base)?;
        let pat = pattern(plen, 0x5a);
        queue.usm_fill_2d(mem.ptr(), pitch, &pat, width, height, &[])?.wait()?;
        let rows = fill_reference(&pat, width * height);
        let expected = pitched(&base, pitch, &rows, width, width, height);
        check_eq!(
            read::<u8>(&queue, mem.ptr(), pitch * height)?,
            expected,
            "{plen}-byte pattern over {height} rows of {width} bytes, pitch {pitch}"
        );
    }
    Ok(())
}

/// Geometry and bounds errors, checked before any row runs.
fn misuse(env: &Env) -> CaseResult {
    let a = env.usm(UsmKind::Device, 256)?;
    let b = env.usm(UsmKind::Device, 256)?;
    let queue = env.queue()?;
    write(&queue, a.ptr(), &[0u8; 256])?;
    write(&queue, b.ptr(), &[9u8; 256])?;
    let (pa, pb) = (a.ptr().addr() as *mut u8, b.ptr().addr() as *const u8);
    // SAFETY: every call below is refused before anything runs.
    unsafe {
        check_err!(queue.usm_memcpy_2d(pa, 16, pb, 32, 32, 4, &[]), InvalidSize);
        check_err!(queue.usm_memcpy_2d(pa, 32, pb, 32, 0, 4, &[]), InvalidSize);
        check_err!(queue.usm_memcpy_2d(pa, 32, pb, 32, 32, 0, &[]), InvalidSize);
        // The last of 9 rows of pitch 32 leaves the 256-byte allocation.
        check_err!(queue.usm_memcpy_2d(pa, 32, pb, 16, 16, 9, &[]), InvalidSize);
        check_err!(queue.usm_memcpy_2d(pa, 16, pb, 32, 16, 9, &[]), InvalidSize);
        check_err!(queue.usm_memcpy_2d(std::ptr::null_mut(), 16, pb, 16, 16, 2, &[]), InvalidNullPointer);
    }
    // 30 x 3 bytes are no multiple of 4; a pattern above the whole area.
    check_err!(queue.usm_fill_2d(a.ptr(), 64, &[1, 2, 3, 4], 30, 3, &[]), InvalidSize);
    check_err!(queue.usm_fill_2d(a.ptr(), 64, &[5u8; 128], 32, 2, &[]), InvalidSize);
    check_err!(queue.usm_fill_2d(a.ptr(), 64, &[1], 64, 5, &[]), InvalidSize);
    check_err!(queue.usm_fill_2d(a.ptr(), 8, &[1], 16, 2, &[]), InvalidSize);
    check_err!(queue.usm_fill_2d(a.ptr(), 8, &[], 8, 2, &[]), InvalidSize);
    // Nothing ran: no refused copy or fill left a row behind.
    let done: Event = queue.events_wait(&[])?;
    done.wait()?;
    check_eq!(read::<u8>(&queue, a.ptr(), 256)?, vec![0u8; 256]);
    Ok(())
}
