//! The shape of a buffer and its grid of pages.
//!
//! Ranges follow SYCL: 1 to 3 dimensions, the last one varying fastest in
//! memory. Internally every range is 3D (`[slowest, middle, fastest]`), a
//! 1D range `[n]` being `[1, 1, n]`.

use cmdbuf_core::{Result, ensure, err};

/// A 3D extent or index, the last dimension fastest.
pub type Dims = [usize; 3];

/// Bytes a default page aims at: large enough that tracking costs little
/// per byte, small enough that independent kernels on one buffer rarely
/// share a page.
pub const DEFAULT_PAGE_BYTES: usize = 64 * 1024;

/// A 1- to 3-dimensional range or offset as the user gives it, padded to 3D.
pub(crate) fn to_dims(values: &[usize], what: &str) -> Result<Dims> {
    ensure!(
        (1..=3).contains(&values.len()),
        InvalidWorkDimension,
        "{what} has {} dimensions; buffers have 1 to 3",
        values.len()
    );
    let mut out = [1, 1, 1];
    out[3 - values.len()..].copy_from_slice(values);
    Ok(out)
}

/// Like [`to_dims`], but missing dimensions of an offset are 0.
pub(crate) fn to_offset(values: &[usize], dims: usize) -> Result<Dims> {
    ensure!(
        values.len() == dims,
        InvalidWorkDimension,
        "accessor offset has {} dimensions, the buffer {dims}",
        values.len()
    );
    let mut out = [0, 0, 0];
    out[3 - values.len()..].copy_from_slice(values);
    Ok(out)
}

fn product(d: Dims) -> Option<usize> {
    d[0].checked_mul(d[1])?.checked_mul(d[2])
}

/// A box of pages, `lo` inclusive and `hi` exclusive in every dimension.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PageBox {
    /// The first page in each dimension.
    pub lo: Dims,
    /// One past the last page in each dimension.
    pub hi: Dims,
}

impl PageBox {
    /// Whether both boxes share a page.
    pub fn overlaps(&self, other: &PageBox) -> bool {
        (0..3).all(|d| self.lo[d] < other.hi[d] && other.lo[d] < self.hi[d])
    }

    /// Whether every page of `other` is in this box.
    pub fn contains(&self, other: &PageBox) -> bool {
        (0..3).all(|d| self.lo[d] <= other.lo[d] && other.hi[d] <= self.hi[d])
    }

    /// Number of pages in the box.
    pub fn pages(&self) -> usize {
        (0..3).map(|d| self.hi[d] - self.lo[d]).product()
    }
}

/// The element size, range and page grid of a buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PageGrid {
    elem: usize,
    range: Dims,
    dims: usize,
    page: Dims,
    pages: Dims,
}

impl PageGrid {
    /// A grid over `range` elements of `elem` bytes with pages of `page`
    /// elements (`None`: [`default_page`](Self::default_page)). Zero sizes
    /// are `InvalidBufferSize`, zero page sizes `InvalidValue`.
    pub fn new(elem: usize, range: &[usize], page: Option<&[usize]>) -> Result<PageGrid> {
        let dims = range.len();
        let range3 = to_dims(range, "buffer range")?;
        ensure!(elem != 0, InvalidBufferSize, "element size 0");
        ensure!(range3.iter().all(|&n| n != 0), InvalidBufferSize, "buffer range {range:?} has a zero dimension");
        let bytes = product(range3).and_then(|n| n.checked_mul(elem));
        ensure!(bytes.is_some(), InvalidBufferSize, "buffer of {range:?} elements of {elem} bytes overflows");
        let page3 = match page {
            None => Self::default_page(elem, range3),
            Some(p) => {
                ensure!(p.len() == dims, InvalidValue, "page size {p:?} has not the buffer's {dims} dimensions");
                let p3 = to_dims(p, "page size")?;
                ensure!(p3.iter().all(|&n| n != 0), InvalidValue, "page size {p:?} has a zero dimension");
                // A page larger than the buffer is the buffer.
                [p3[0].min(range3[0]), p3[1].min(range3[1]), p3[2].min(range3[2])]
            }
        };
        let pages = [0, 1, 2].map(|d| range3[d].div_ceil(page3[d]));
        Ok(PageGrid { elem, range: range3, dims, page: page3, pages })
    }

    /// The default page: about [`DEFAULT_PAGE_BYTES`], filled fastest
    /// dimension first, so that a page is a block of whole rows where rows
    /// are short.
    pub fn default_page(elem: usize, range: Dims) -> Dims {
        let mut budget = (DEFAULT_PAGE_BYTES / elem).max(1);
        let mut page = [1, 1, 1];
        for d in (0..3).rev() {
            page[d] = range[d].min(budget).max(1);
            budget = (budget / page[d]).max(1);
        }
        page
    }

    /// Bytes per element.
    pub fn elem_size(&self) -> usize {
        self.elem
    }

    /// The range in elements, padded to 3D.
    pub fn range(&self) -> Dims {
        self.range
    }

    /// How many dimensions the user gave.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Page size in elements per dimension.
    pub fn page(&self) -> Dims {
        self.page
    }

    /// Pages per dimension.
    pub fn pages(&self) -> Dims {
        self.pages
    }

    /// Total number of pages.
    pub fn page_count(&self) -> usize {
        self.pages.iter().product()
    }

    /// Total bytes.
    pub fn bytes(&self) -> usize {
        self.range.iter().product::<usize>() * self.elem
    }

    /// Bytes from one row (fastest dimension) to the next.
    pub fn row_pitch(&self) -> usize {
        self.range[2] * self.elem
    }

    /// Bytes from one slice to the next.
    pub fn slice_pitch(&self) -> usize {
        self.range[1] * self.row_pitch()
    }

    /// Every page.
    pub fn all(&self) -> PageBox {
        PageBox { lo: [0, 0, 0], hi: self.pages }
    }

    /// The linear index of a page, the fastest dimension last.
    pub fn linear(&self, p: Dims) -> usize {
        (p[0] * self.pages[1] + p[1]) * self.pages[2] + p[2]
    }

    /// The page range of an element range: every page that the range
    /// touches. Out-of-range offsets and ranges are `InvalidValue`
    /// (`InvalidSize` for a zero range dimension).
    pub fn page_box(&self, offset: Dims, range: Dims) -> Result<PageBox> {
        ensure!(range.iter().all(|&n| n != 0), InvalidSize, "accessor range {range:?} has a zero dimension");
        for d in 0..3 {
            let end = offset[d].checked_add(range[d]);
            ensure!(
                end.is_some_and(|e| e <= self.range[d]),
                InvalidValue,
                "accessor offset {offset:?} + range {range:?} leaves the buffer range {:?}",
                self.range
            );
        }
        Ok(PageBox {
            lo: [0, 1, 2].map(|d| offset[d] / self.page[d]),
            hi: [0, 1, 2].map(|d| (offset[d] + range[d]).div_ceil(self.page[d])),
        })
    }

    /// The page box holding the bytes `[start, end)` of the buffer's memory:
    /// for views whose shape differs from the buffer's (reinterpreted
    /// buffers, host accessors' byte spans). It may be larger than the
    /// bytes need, which the model allows.
    pub fn byte_span_box(&self, start: usize, end: usize) -> PageBox {
        debug_assert!(start < end && end <= self.bytes());
        let at = |byte: usize| {
            let e = byte / self.elem;
            [e / (self.range[1] * self.range[2]), (e / self.range[2]) % self.range[1], e % self.range[2]]
        };
        let (a, b) = (at(start), at(end - 1));
        let pg = |d: usize, e: usize| e / self.page[d];
        let mut lo = [pg(0, a[0]), 0, 0];
        let mut hi = [pg(0, b[0]) + 1, self.pages[1], self.pages[2]];
        if a[0] == b[0] {
            lo[1] = pg(1, a[1]);
            hi[1] = pg(1, b[1]) + 1;
            if a[1] == b[1] {
                lo[2] = pg(2, a[2]);
                hi[2] = pg(2, b[2]) + 1;
            }
        }
        PageBox { lo, hi }
    }

    /// The bytes of a page box as a rect of the buffer's memory.
    pub fn rect(&self, b: &PageBox) -> ByteRect {
        let first = [0, 1, 2].map(|d| b.lo[d] * self.page[d]);
        let end = [0, 1, 2].map(|d| (b.hi[d] * self.page[d]).min(self.range[d]));
        let offset = first[0] * self.slice_pitch() + first[1] * self.row_pitch() + first[2] * self.elem;
        ByteRect {
            offset,
            width: (end[2] - first[2]) * self.elem,
            height: end[1] - first[1],
            depth: end[0] - first[0],
            row_pitch: self.row_pitch(),
            slice_pitch: self.slice_pitch(),
        }
    }
}

/// A rect of a buffer's memory: what one transfer copies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ByteRect {
    /// Byte offset of the first byte.
    pub offset: usize,
    /// Bytes per row.
    pub width: usize,
    /// Rows per slice.
    pub height: usize,
    /// Slices.
    pub depth: usize,
    /// Bytes from row to row.
    pub row_pitch: usize,
    /// Bytes from slice to slice.
    pub slice_pitch: usize,
}

impl ByteRect {
    /// Bytes the rect holds.
    pub fn bytes(&self) -> usize {
        self.width * self.height * self.depth
    }

    /// The rect as contiguous pieces `(offset, rows, bytes)`: one piece when
    /// rows (and slices) follow each other without gaps, else one 2D piece
    /// per slice.
    pub fn pieces(&self) -> Vec<(usize, usize, usize)> {
        let rows_whole = self.width == self.row_pitch;
        if rows_whole && (self.depth == 1 || self.height * self.row_pitch == self.slice_pitch) {
            return vec![(self.offset, 1, self.bytes())];
        }
        if rows_whole {
            let slice = self.height * self.width;
            return (0..self.depth).map(|z| (self.offset + z * self.slice_pitch, 1, slice)).collect();
        }
        (0..self.depth).map(|z| (self.offset + z * self.slice_pitch, self.height, self.width)).collect()
    }
}

/// Checks that `elem` divides `bytes`, for reinterpretation.
pub(crate) fn divide(bytes: usize, elem: usize) -> Result<usize> {
    ensure!(elem != 0, InvalidValue, "reinterpretation to elements of 0 bytes");
    ensure!(
        bytes.is_multiple_of(elem),
        InvalidValue,
        "buffer of {bytes} bytes does not divide into elements of {elem} bytes"
    );
    Ok(bytes / elem)
}

/// The product of a range, as a typed error when it overflows.
pub(crate) fn elements(range: Dims) -> Result<usize> {
    product(range).ok_or_else(|| err!(InvalidValue, "range {range:?} overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_boxes_and_rects() {
        let g = PageGrid::new(4, &[10, 100], Some(&[2, 16])).unwrap();
        assert_eq!(g.pages(), [1, 5, 7]);
        let b = g.page_box([0, 3, 20], [1, 4, 20]).unwrap();
        assert_eq!(b, PageBox { lo: [0, 1, 1], hi: [1, 4, 3] });
        let r = g.rect(&b);
        assert_eq!((r.offset, r.width, r.height, r.depth), (2 * 400 + 16 * 4, 32 * 4, 6, 1));
        // The last page of a row is cut at the buffer's end.
        let last = g.rect(&PageBox { lo: [0, 0, 6], hi: [1, 1, 7] });
        assert_eq!(last.width, 4 * 4);
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        assert!(matches!(PageGrid::new(0, &[4], None), Err(cmdbuf_core::UrError::InvalidBufferSize(_))));
        assert!(matches!(PageGrid::new(4, &[0, 4], None), Err(cmdbuf_core::UrError::InvalidBufferSize(_))));
        assert!(matches!(PageGrid::new(4, &[4], Some(&[0])), Err(cmdbuf_core::UrError::InvalidValue(_))));
        assert!(matches!(PageGrid::new(4, &[1, 1, 1, 1], None), Err(cmdbuf_core::UrError::InvalidWorkDimension(_))));
        assert!(matches!(PageGrid::new(usize::MAX, &[4], None), Err(cmdbuf_core::UrError::InvalidBufferSize(_))));
        let g = PageGrid::new(4, &[8], Some(&[2])).unwrap();
        assert!(matches!(g.page_box([0, 0, 7], [1, 1, 2]), Err(cmdbuf_core::UrError::InvalidValue(_))));
        assert!(matches!(g.page_box([0, 0, usize::MAX], [1, 1, 2]), Err(cmdbuf_core::UrError::InvalidValue(_))));
        assert!(matches!(g.page_box([0, 0, 0], [1, 1, 0]), Err(cmdbuf_core::UrError::InvalidSize(_))));
        assert!(matches!(divide(12, 8), Err(cmdbuf_core::UrError::InvalidValue(_))));
    }

    #[test]
    fn default_page_fills_fastest_dimension_first() {
        assert_eq!(PageGrid::default_page(4, [1, 1, 1 << 20]), [1, 1, 16384]);
        assert_eq!(PageGrid::default_page(4, [1, 1024, 1024]), [1, 16, 1024]);
        assert_eq!(PageGrid::default_page(4, [1, 1, 10]), [1, 1, 10]);
    }

    #[test]
    fn byte_spans_cover_their_bytes() {
        let g = PageGrid::new(1, &[4, 4, 4], Some(&[2, 2, 2])).unwrap();
        assert_eq!(g.byte_span_box(0, 2), PageBox { lo: [0, 0, 0], hi: [1, 1, 1] });
        assert_eq!(g.byte_span_box(0, 8), PageBox { lo: [0, 0, 0], hi: [1, 1, 2] });
        assert_eq!(g.byte_span_box(6, 9), PageBox { lo: [0, 0, 0], hi: [1, 2, 2] });
        assert_eq!(g.byte_span_box(0, 17), PageBox { lo: [0, 0, 0], hi: [1, 2, 2] });
        assert_eq!(g.byte_span_box(0, 33), g.all());
    }

    #[test]
    fn pieces_merge_whole_rows() {
        let g = PageGrid::new(1, &[4, 4, 4], Some(&[2, 2, 4])).unwrap();
        assert_eq!(g.rect(&PageBox { lo: [0, 0, 0], hi: [2, 2, 1] }).pieces(), vec![(0, 1, 64)]);
        let slices = g.rect(&PageBox { lo: [0, 0, 0], hi: [2, 1, 1] }).pieces();
        assert_eq!(slices, vec![(0, 1, 8), (16, 1, 8), (32, 1, 8), (48, 1, 8)]);
        let g = PageGrid::new(1, &[4, 4, 4], Some(&[2, 2, 2])).unwrap();
        assert_eq!(g.rect(&PageBox { lo: [0, 0, 0], hi: [1, 1, 1] }).pieces(), vec![(0, 2, 2), (16, 2, 2)]);
    }
}
