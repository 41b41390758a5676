//! Rectangular (2D and 3D) regions of linear memory, for the `*Rect` commands.
//!
//! A side of a rect command is an origin (`x` in bytes, `y` in rows, `z` in
//! slices) and two pitches. A pitch of 0 means "tightly packed": the row pitch
//! becomes the region's width and the slice pitch the row pitch times the
//! region's height. The front end resolves pitches before adapters see them.

use crate::ensure;
use crate::types::error::Result;

/// The origin of a rect side (`ur_rect_offset_t`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RectOffset {
    /// Bytes into a row.
    pub x: usize,
    /// Rows into a slice.
    pub y: usize,
    /// Slices.
    pub z: usize,
}

impl RectOffset {
    /// An origin from its three coordinates.
    pub const fn new(x: usize, y: usize, z: usize) -> RectOffset {
        RectOffset { x, y, z }
    }
}

/// The size of a rect region (`ur_rect_region_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RectRegion {
    /// Bytes per row.
    pub width: usize,
    /// Rows per slice.
    pub height: usize,
    /// Slices.
    pub depth: usize,
}

impl RectRegion {
    /// A region from its three sizes.
    pub const fn new(width: usize, height: usize, depth: usize) -> RectRegion {
        RectRegion { width, height, depth }
    }

    /// Total bytes in the region.
    pub fn bytes(&self) -> usize {
        self.width * self.height * self.depth
    }
}

/// One side of a rect command: where the region starts and how rows and
/// slices are laid out.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RectLayout {
    /// Where the region starts.
    pub origin: RectOffset,
    /// Bytes from one row to the next (0: the region's width).
    pub row_pitch: usize,
    /// Bytes from one slice to the next (0: row pitch times the region's height).
    pub slice_pitch: usize,
}

impl RectLayout {
    /// A layout from origin and pitches.
    pub const fn new(origin: RectOffset, row_pitch: usize, slice_pitch: usize) -> RectLayout {
        RectLayout { origin, row_pitch, slice_pitch }
    }

    /// A tightly packed layout starting at offset 0.
    pub const fn packed() -> RectLayout {
        RectLayout { origin: RectOffset::new(0, 0, 0), row_pitch: 0, slice_pitch: 0 }
    }

    /// Resolves zero pitches and checks the layout against the region
    /// (UR's rules: pitches at least the row or slice they hold, slice pitch a
    /// multiple of the row pitch). `side` names the side in errors.
    pub fn resolve(&self, region: &RectRegion, side: &str) -> Result<RectLayout> {
        ensure!(
            region.width != 0 && region.height != 0 && region.depth != 0,
            InvalidSize,
            "rect region {region:?} has a zero dimension"
        );
        let row_pitch = if self.row_pitch == 0 { region.width } else { self.row_pitch };
        ensure!(row_pitch >= region.width, InvalidSize, "{side} row pitch {row_pitch} < region width {}", region.width);
        let min_slice = row_pitch.checked_mul(region.height);
        let min_slice = min_slice.ok_or_else(|| crate::err!(InvalidSize, "{side} slice size overflows"))?;
        let slice_pitch = if self.slice_pitch == 0 { min_slice } else { self.slice_pitch };
        ensure!(
            slice_pitch >= min_slice,
            InvalidSize,
            "{side} slice pitch {slice_pitch} < row pitch {row_pitch} x region height {}",
            region.height
        );
        ensure!(
            slice_pitch % row_pitch == 0,
            InvalidSize,
            "{side} slice pitch {slice_pitch} is not a multiple of row pitch {row_pitch}"
        );
        let resolved = RectLayout { origin: self.origin, row_pitch, slice_pitch };
        ensure!(resolved.checked_extent(region).is_some(), InvalidSize, "{side} rect extent overflows");
        Ok(resolved)
    }

    /// Byte offset of the region's first byte.
    pub fn origin_offset(&self) -> usize {
        self.origin.z * self.slice_pitch + self.origin.y * self.row_pitch + self.origin.x
    }

    fn checked_extent(&self, region: &RectRegion) -> Option<usize> {
        let origin = self
            .origin
            .z
            .checked_mul(self.slice_pitch)?
            .checked_add(self.origin.y.checked_mul(self.row_pitch)?)?
            .checked_add(self.origin.x)?;
        let last = (region.depth - 1)
            .checked_mul(self.slice_pitch)?
            .checked_add((region.height - 1).checked_mul(self.row_pitch)?)?
            .checked_add(region.width)?;
        origin.checked_add(last)
    }

    /// One past the last byte the region touches, from offset 0: the size the
    /// memory on this side must have. Only valid on a resolved layout.
    pub fn extent(&self, region: &RectRegion) -> usize {
        self.checked_extent(region).expect("extent of a resolved layout")
    }

    /// Byte offset of the start of row `y` of slice `z` of the region.
    pub fn row_offset(&self, y: usize, z: usize) -> usize {
        self.origin_offset() + z * self.slice_pitch + y * self.row_pitch
    }
}

/// Calls `copy(src_offset, dst_offset, len)` for every row of `region`, so
/// that adapters without a native rect copy implement one the same way.
pub fn for_each_row(
    src: &RectLayout,
    dst: &RectLayout,
    region: &RectRegion,
    mut copy: impl FnMut(usize, usize, usize),
) {
    for z in 0..region.depth {
        for y in 0..region.height {
            copy(src.row_offset(y, z), dst.row_offset(y, z), region.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UrError;

    #[test]
    fn zero_pitches_pack_tightly() {
        let r = RectRegion::new(4, 3, 2);
        let l = RectLayout::packed().resolve(&r, "src").unwrap();
        assert_eq!((l.row_pitch, l.slice_pitch), (4, 12));
        assert_eq!(l.extent(&r), 24);
    }

    #[test]
    fn extent_counts_origin_and_last_row() {
        let r = RectRegion::new(2, 2, 2);
        let l = RectLayout::new(RectOffset::new(1, 1, 1), 8, 32).resolve(&r, "src").unwrap();
        assert_eq!(l.origin_offset(), 32 + 8 + 1);
        assert_eq!(l.extent(&r), 41 + 32 + 8 + 2);
        let mut rows = vec![];
        for_each_row(&l, &RectLayout::packed().resolve(&r, "dst").unwrap(), &r, |s, d, n| rows.push((s, d, n)));
        assert_eq!(rows, vec![(41, 0, 2), (49, 2, 2), (73, 4, 2), (81, 6, 2)]);
    }

    #[test]
    fn bad_pitches_are_invalid_size() {
        let r = RectRegion::new(4, 2, 1);
        for l in [
            RectLayout::new(RectOffset::default(), 3, 0),
            RectLayout::new(RectOffset::default(), 4, 6),
            RectLayout::new(RectOffset::default(), 4, 10),
        ] {
            assert!(matches!(l.resolve(&r, "src"), Err(UrError::InvalidSize(_))), "{l:?}");
        }
        assert!(matches!(RectLayout::packed().resolve(&RectRegion::new(0, 1, 1), "src"), Err(UrError::InvalidSize(_))));
        let huge = RectLayout::new(RectOffset::new(0, 0, usize::MAX / 2), 0, 0);
        assert!(matches!(huge.resolve(&r, "src"), Err(UrError::InvalidSize(_))));
    }
}
