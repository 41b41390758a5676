//! Typed USM reads and writes: the byte-slice queue calls over
//! [`bytemuck::Pod`] element types, in the manner of cudarc's `clone_htod` /
//! `clone_dtoh`.
//!
//! Element counts become byte counts here, once, with the checks a byte API
//! leaves to its caller: a zero-sized element type, a byte count that
//! overflows, a USM address not aligned for the element type, and a range
//! that is not a whole number of elements are typed errors, never panics.
//!
//! ```
//! use cmdbuf::{Context, Queue, QueueProperties};
//! # let context = Context::new(&cmdbuf_cpu::default_device()).unwrap();
//! let queue = Queue::new(&context, QueueProperties::default()).unwrap();
//! let data = queue.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
//! queue.memcpy_htod(data.ptr().byte_add(4), &[5.0f32], &[]).unwrap();
//! assert_eq!(queue.clone_dtoh::<f32>(&data, &[]).unwrap(), [1.0, 5.0, 3.0]);
//! assert!(queue.clone_dtoh::<u64>(&data, &[]).is_err()); // 12 bytes are no whole u64s
//! ```

use bytemuck::Pod;

use crate::ensure;
use crate::error::Result;
use crate::event::Event;
use crate::memory::{UsmAllocation, UsmKind, UsmPtr};
use crate::queue::Queue;

/// Bytes of `len` elements of `T`: `InvalidValue` for a zero-sized type,
/// `InvalidSize` when the count overflows.
fn byte_len<T: Pod>(len: usize, what: &str) -> Result<usize> {
    let size = size_of::<T>();
    ensure!(size != 0, InvalidValue, "{what}: the element type {} has no size", std::any::type_name::<T>());
    len.checked_mul(size)
        .ok_or_else(|| crate::err!(InvalidSize, "{what}: {len} elements of {size} bytes overflow the address space"))
}

/// `UnsupportedAlignment` unless `ptr` is aligned for `T`.
fn check_aligned<T: Pod>(ptr: UsmPtr, what: &str) -> Result<()> {
    let align = align_of::<T>();
    ensure!(
        ptr.addr().is_multiple_of(align as u64),
        UnsupportedAlignment,
        "{what}: {ptr:?} is not aligned to the {align} bytes of {}",
        std::any::type_name::<T>()
    );
    Ok(())
}

impl Queue {
    /// Allocates device USM holding a copy of `data`, returning once the
    /// copy is there (`clone_htod`). As [`Queue::clone_htod_kind`] with
    /// [`UsmKind::Device`].
    pub fn clone_htod<T: Pod>(&self, data: &[T]) -> Result<UsmAllocation> {
        self.clone_htod_kind(UsmKind::Device, data)
    }

    /// Allocates `kind` USM of this queue's context holding a copy of
    /// `data`, returning once the copy is there. An empty slice is
    /// `InvalidUsmSize` (USM allocations are never empty); an adapter whose
    /// default alignment is less than `T`'s gives `UnsupportedAlignment`.
    #[tracing::instrument(level = "trace", skip(self, data), fields(len = data.len(), ty = std::any::type_name::<T>()))]
    pub fn clone_htod_kind<T: Pod>(&self, kind: UsmKind, data: &[T]) -> Result<UsmAllocation> {
        let bytes = byte_len::<T>(data.len(), "clone_htod")?;
        let allocation = UsmAllocation::new(self.context(), kind, bytes)?;
        check_aligned::<T>(allocation.ptr(), "clone_htod")?;
        self.write_usm(allocation.ptr(), bytemuck::cast_slice(data), &[])?;
        Ok(allocation)
    }

    /// Reads a whole allocation back as elements of `T`, after `wait`
    /// (`clone_dtoh`). `InvalidSize` unless its size is a whole number of
    /// elements.
    pub fn clone_dtoh<T: Pod>(&self, src: &UsmAllocation, wait: &[&Event]) -> Result<Vec<T>> {
        let size = size_of::<T>();
        ensure!(
            size == 0 || src.size().is_multiple_of(size),
            InvalidSize,
            "clone_dtoh: a {}-byte allocation is no whole number of {size}-byte {}",
            src.size(),
            std::any::type_name::<T>()
        );
        self.clone_dtoh_range(src.ptr(), src.size() / size.max(1), wait)
    }

    /// Reads `len` (> 0) elements of `T` from `src` (USM of this context)
    /// into a new vector, after `wait`.
    pub fn clone_dtoh_range<T: Pod>(&self, src: UsmPtr, len: usize, wait: &[&Event]) -> Result<Vec<T>> {
        let bytes = byte_len::<T>(len, "clone_dtoh")?;
        ensure!(bytes != 0, InvalidSize, "clone_dtoh of 0 elements");
        // The range is checked before the vector is made, so that a wild
        // length is an error rather than a failed host allocation.
        self.context().find_usm(src, bytes)?;
        let mut out = vec![T::zeroed(); len];
        self.memcpy_dtoh(src, &mut out, wait)?;
        Ok(out)
    }

    /// Writes `data` to `dst` (USM of this context, aligned for `T`),
    /// returning once it is there; as [`Queue::write_usm`], an empty slice is
    /// `InvalidSize`.
    #[tracing::instrument(level = "trace", skip(self, data, wait), fields(len = data.len(), ty = std::any::type_name::<T>()))]
    pub fn memcpy_htod<T: Pod>(&self, dst: UsmPtr, data: &[T], wait: &[&Event]) -> Result<()> {
        byte_len::<T>(data.len(), "memcpy_htod")?;
        check_aligned::<T>(dst, "memcpy_htod")?;
        self.write_usm(dst, bytemuck::cast_slice(data), wait)
    }

    /// Reads `out.len()` elements from `src` (USM of this context, aligned
    /// for `T`), returning once they are there; an empty slice is `InvalidSize`.
    #[tracing::instrument(level = "trace", skip(self, out, wait), fields(len = out.len(), ty = std::any::type_name::<T>()))]
    pub fn memcpy_dtoh<T: Pod>(&self, src: UsmPtr, out: &mut [T], wait: &[&Event]) -> Result<()> {
        byte_len::<T>(out.len(), "memcpy_dtoh")?;
        check_aligned::<T>(src, "memcpy_dtoh")?;
        self.read_usm(src, bytemuck::cast_slice_mut(out), wait)
    }
}
