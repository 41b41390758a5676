//! Pitched (2D) USM copies and fills (`urEnqueueUSMMemcpy2D`,
//! `urEnqueueUSMFill2D`), built on the linear USM commands every adapter
//! runs: one command when the rows are contiguous, else one per row, joined
//! by one event. The whole pitched range is checked before anything is
//! submitted, so a call either submits every row or none.

use smallvec::SmallVec;

use super::Queue;
use crate::api::command_build::HostSide;
use crate::command::Command;
use crate::error::{Result, UrError};
use crate::event::Event;
use crate::memory::UsmPtr;
use crate::{ensure, err};

/// Bytes from the first row's start to the last row's end, after checking
/// the geometry: width and height non-zero, the pitch at least the width.
fn extent(width: usize, height: usize, pitch: usize, side: &str) -> Result<usize> {
    ensure!(width != 0 && height != 0, InvalidSize, "2D region of {width} x {height} bytes");
    ensure!(pitch >= width, InvalidSize, "{side} pitch {pitch} < width {width}");
    (height - 1)
        .checked_mul(pitch)
        .and_then(|rows| rows.checked_add(width))
        .ok_or_else(|| err!(InvalidSize, "{side} extent of {height} rows of pitch {pitch} overflows"))
}

impl Queue {
    /// Copies `height` rows of `width` bytes from rows `src_pitch` bytes apart
    /// to rows `dst_pitch` bytes apart (`urEnqueueUSMMemcpy2D`). Each side is
    /// a USM pointer of this context or, lying in no USM allocation, host
    /// memory, as for [`usm_memcpy_host`](Self::usm_memcpy_host); a side in
    /// USM must hold its whole pitched range (`InvalidSize`). Rows that
    /// overlap their own source row are `OverlappingRegions`; overlap between
    /// different rows is not checked (UR leaves it undefined).
    ///
    /// # Safety
    /// A side in no USM allocation must be host memory valid for its pitched
    /// range, as [`usm_memcpy_host`](Self::usm_memcpy_host) requires for its
    /// `size` bytes.
    #[allow(clippy::too_many_arguments)]
    #[tracing::instrument(level = "trace", skip(self, wait))]
    pub unsafe fn usm_memcpy_2d(
        &self,
        dst: *mut u8,
        dst_pitch: usize,
        src: *const u8,
        src_pitch: usize,
        width: usize,
        height: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        let context = &self.inner.context;
        ensure!(!dst.is_null() && !src.is_null(), InvalidNullPointer, "2D copy: a pointer is null");
        let dst_extent = extent(width, height, dst_pitch, "destination")?;
        let src_extent = extent(width, height, src_pitch, "source")?;
        self.check_pitched(dst as u64, dst_extent)?;
        self.check_pitched(src as u64, src_extent)?;
        let src = src.cast_mut();
        let rows = if dst_pitch == width && src_pitch == width {
            let (d, s) = (HostSide::Raw(dst), HostSide::Raw(src));
            vec![Command::usm_memcpy(context, d, s, dst_extent)?]
        } else {
            (0..height)
                .map(|row| {
                    let d = HostSide::Raw(dst.wrapping_add(row * dst_pitch));
                    let s = HostSide::Raw(src.wrapping_add(row * src_pitch));
                    Command::usm_memcpy(context, d, s, width)
                })
                .collect::<Result<Vec<_>>>()?
        };
        self.submit_rows(rows, wait)
    }

    /// Fills `height` rows of `width` bytes, `pitch` bytes apart, with a
    /// pattern repeated over the rows as if they were contiguous
    /// (`urEnqueueUSMFill2D`): its length divides `width * height` and is at
    /// most that, and the pitched range lies in one USM allocation of this
    /// context. A pattern that divides `width` starts every row; a longer one
    /// runs on from one row into the next.
    #[tracing::instrument(level = "trace", skip(self, pattern, wait))]
    pub fn usm_fill_2d(
        &self,
        dst: UsmPtr,
        pitch: usize,
        pattern: &[u8],
        width: usize,
        height: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        let context = &self.inner.context;
        let extent = extent(width, height, pitch, "fill")?;
        let p = pattern.len();
        ensure!(p != 0, InvalidSize, "fill pattern of 0 bytes");
        let area = width.checked_mul(height).ok_or_else(|| err!(InvalidSize, "{width} x {height} bytes overflows"))?;
        ensure!(
            p <= area && area.is_multiple_of(p),
            InvalidSize,
            "a {p}-byte pattern does not divide the {width} x {height} bytes of the fill"
        );
        context.find_usm(dst, extent)?;
        let rows = if pitch == width {
            vec![Command::usm_fill(context, dst, pattern, extent)?]
        } else if width.is_multiple_of(p) {
            (0..height)
                .map(|row| Command::usm_fill(context, dst.byte_add(row * pitch), pattern, width))
                .collect::<Result<Vec<_>>>()?
        } else {
            // Each row is its own `width` bytes of the repetition.
            (0..height)
                .map(|row| {
                    let start = row * width % p;
                    let bytes: Vec<u8> = (0..width).map(|i| pattern[(start + i) % p]).collect();
                    Command::usm_fill(context, dst.byte_add(row * pitch), &bytes, width)
                })
                .collect::<Result<Vec<_>>>()?
        };
        self.submit_rows(rows, wait)
    }

    /// Checks that a side starting in a USM allocation holds its whole
    /// pitched range there: its later rows would otherwise be taken for host
    /// memory.
    fn check_pitched(&self, address: u64, extent: usize) -> Result<()> {
        match self.inner.context.find_usm(UsmPtr::from_addr(address), extent) {
            Ok(_) | Err(UrError::InvalidValue(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Submits validated rows after `wait`; one event for all of them.
    fn submit_rows(&self, mut rows: Vec<Command>, wait: &[&Event]) -> Result<Event> {
        if rows.len() == 1 {
            let only = rows.pop().expect("one row");
            return self.enqueue_built(only, wait);
        }
        let events = rows.into_iter().map(|row| self.enqueue_built(row, wait)).collect::<Result<Vec<_>>>()?;
        let all: SmallVec<[&Event; 16]> = events.iter().collect();
        self.events_wait(&all)
    }
}
