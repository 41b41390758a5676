//! Every conversion between C values and cmdbuf-core's Rust values that more
//! than one entry point needs: flags and enumerations both ways, USM
//! pointers, fill patterns, rectangles, work sizes, argument bytes. None of
//! them names a handle object.

use std::ffi::c_void;

use cmdbuf_core::{
    Backend, Command, Context, DeviceType, MemBuffer, MigrationFlags, Partition, PartitionKind, RectLayout, RectOffset,
    RectRegion, UsmAdvice, UsmKinds, ensure, err,
};

use crate::boundary::entry::AbiResult;
use crate::sys::*;

/// The UR backend value this adapter reports for a cmdbuf-core backend.
///
/// libsycl accepts `OPENCL`, `CUDA`, `HIP`, `NATIVE_CPU` and `OFFLOAD` and
/// specialises some paths on them (see `docs/abi.md`); UR has no Vulkan value.
pub(crate) fn ur_backend(backend: Backend) -> ur_backend_t {
    match backend {
        Backend::Cpu => ur_backend_t::UR_BACKEND_NATIVE_CPU,
        Backend::OpenCl => ur_backend_t::UR_BACKEND_OPENCL,
        Backend::Cuda => ur_backend_t::UR_BACKEND_CUDA,
        Backend::Vulkan => ur_backend_t::UR_BACKEND_OFFLOAD,
    }
}

pub(crate) fn ur_device_type(t: DeviceType) -> ur_device_type_t {
    match t {
        DeviceType::Cpu => ur_device_type_t::UR_DEVICE_TYPE_CPU,
        DeviceType::Gpu => ur_device_type_t::UR_DEVICE_TYPE_GPU,
        DeviceType::Accelerator => ur_device_type_t::UR_DEVICE_TYPE_FPGA,
    }
}

/// UR's enumerator of a partition kind.
pub(crate) fn ur_partition_kind(kind: PartitionKind) -> ur_device_partition_t {
    match kind {
        PartitionKind::Equally => ur_device_partition_t::UR_DEVICE_PARTITION_EQUALLY,
        PartitionKind::ByCounts => ur_device_partition_t::UR_DEVICE_PARTITION_BY_COUNTS,
        PartitionKind::ByAffinityDomain => ur_device_partition_t::UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
    }
}

/// The property list `urDevicePartition` took for `partition`
/// (`UR_DEVICE_INFO_PARTITION_TYPE`).
pub(crate) fn ur_partition_properties(partition: &Partition) -> Vec<ur_device_partition_property_t> {
    let property = |value| ur_device_partition_property_t { type_: ur_partition_kind(partition.kind()), value };
    match partition {
        Partition::Equally(n) => vec![property(ur_device_partition_value_t { equally: *n })],
        Partition::ByCounts(counts) => {
            counts.iter().map(|c| property(ur_device_partition_value_t { count: *c })).collect()
        }
        Partition::ByAffinityDomain(domain) => {
            vec![property(ur_device_partition_value_t { affinity_domain: domain.flag().bits() })]
        }
    }
}

/// The USM kinds UR callers get: host and shared allocations only where the
/// host reaches them at the pointer the device uses, as UR's USM requires.
pub(crate) fn ur_usm_kinds(info: &cmdbuf_core::DeviceInfo) -> UsmKinds {
    if info.usm_host_addressable { info.usm } else { info.usm & UsmKinds::DEVICE }
}

/// Maps UR's USM advice bits onto cmdbuf-core's; `DEFAULT` asks for nothing.
/// Bits outside UR's mask never get here: every entry point taking advice
/// is behind a generated check (`checks.rs`) that refuses them.
pub(crate) fn usm_advice(flags: ur_usm_advice_flags_t) -> UsmAdvice {
    use ur_usm_advice_flag_t as F;
    let pairs = [
        (F::UR_USM_ADVICE_FLAG_SET_READ_MOSTLY, UsmAdvice::SET_READ_MOSTLY),
        (F::UR_USM_ADVICE_FLAG_CLEAR_READ_MOSTLY, UsmAdvice::CLEAR_READ_MOSTLY),
        (F::UR_USM_ADVICE_FLAG_SET_PREFERRED_LOCATION, UsmAdvice::SET_PREFERRED_LOCATION),
        (F::UR_USM_ADVICE_FLAG_CLEAR_PREFERRED_LOCATION, UsmAdvice::CLEAR_PREFERRED_LOCATION),
        (F::UR_USM_ADVICE_FLAG_SET_NON_ATOMIC_MOSTLY, UsmAdvice::SET_NON_ATOMIC_MOSTLY),
        (F::UR_USM_ADVICE_FLAG_CLEAR_NON_ATOMIC_MOSTLY, UsmAdvice::CLEAR_NON_ATOMIC_MOSTLY),
        (F::UR_USM_ADVICE_FLAG_BIAS_CACHED, UsmAdvice::BIAS_CACHED),
        (F::UR_USM_ADVICE_FLAG_BIAS_UNCACHED, UsmAdvice::BIAS_UNCACHED),
        (F::UR_USM_ADVICE_FLAG_SET_ACCESSED_BY_DEVICE, UsmAdvice::SET_ACCESSED_BY_DEVICE),
        (F::UR_USM_ADVICE_FLAG_CLEAR_ACCESSED_BY_DEVICE, UsmAdvice::CLEAR_ACCESSED_BY_DEVICE),
        (F::UR_USM_ADVICE_FLAG_SET_ACCESSED_BY_HOST, UsmAdvice::SET_ACCESSED_BY_HOST),
        (F::UR_USM_ADVICE_FLAG_CLEAR_ACCESSED_BY_HOST, UsmAdvice::CLEAR_ACCESSED_BY_HOST),
        (F::UR_USM_ADVICE_FLAG_SET_PREFERRED_LOCATION_HOST, UsmAdvice::SET_PREFERRED_LOCATION_HOST),
        (F::UR_USM_ADVICE_FLAG_CLEAR_PREFERRED_LOCATION_HOST, UsmAdvice::CLEAR_PREFERRED_LOCATION_HOST),
        (F::UR_USM_ADVICE_FLAG_SET_NON_COHERENT_MEMORY, UsmAdvice::SET_NON_COHERENT_MEMORY),
        (F::UR_USM_ADVICE_FLAG_CLEAR_NON_COHERENT_MEMORY, UsmAdvice::CLEAR_NON_COHERENT_MEMORY),
    ];
    pairs.into_iter().filter(|(ur, _)| flags & ur.0 != 0).fold(UsmAdvice::empty(), |all, (_, ours)| all | ours)
}

/// Maps UR's migration flags onto cmdbuf-core's (bits outside UR's mask
/// refused before, as for [`usm_advice`]).
pub(crate) fn migration(flags: ur_usm_migration_flags_t) -> MigrationFlags {
    let mut out = MigrationFlags::empty();
    if flags & ur_usm_migration_flag_t::UR_USM_MIGRATION_FLAG_HOST_TO_DEVICE.0 != 0 {
        out |= MigrationFlags::HOST_TO_DEVICE;
    }
    if flags & ur_usm_migration_flag_t::UR_USM_MIGRATION_FLAG_DEVICE_TO_HOST.0 != 0 {
        out |= MigrationFlags::DEVICE_TO_HOST;
    }
    out
}

/// Borrows a fill pattern: 1 or more bytes (cmdbuf-core checks the upper limit and
/// that the size is a multiple of it).
///
/// # Safety
/// `pattern` is readable for `size` bytes: not null, as every fill entry
/// point's generated check (`checks.rs`) rejects `NULL == pPattern`.
pub(crate) unsafe fn pattern<'a>(pattern: *const c_void, size: usize) -> AbiResult<&'a [u8]> {
    // Not a generated check for every caller: `urCommandBufferAppendMemBufferFillExp`'s
    // `@returns` has no size condition.
    ensure!(size != 0, InvalidSize, "a fill pattern of 0 bytes");
    // SAFETY: `size` bytes long per this function's `# Safety`.
    Ok(unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), size) })
}

/// The 1 to 3 sizes of an ND-range component, or `None` when `sizes` is null.
///
/// # Safety
/// `sizes` is null or holds `work_dim` values.
pub(crate) unsafe fn work_sizes<'a>(work_dim: u32, sizes: *const usize, what: &str) -> AbiResult<Option<&'a [usize]>> {
    ensure!((1..=3).contains(&work_dim), InvalidWorkDimension, "work dimension {work_dim} (for {what})");
    if sizes.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and `work_dim` long per the contract.
    Ok(Some(unsafe { std::slice::from_raw_parts(sizes, work_dim as usize) }))
}

/// The bytes of a value argument.
///
/// # Safety
/// `bytes` is null or readable for `size` bytes.
pub(crate) unsafe fn value_bytes<'a>(bytes: *const c_void, size: usize) -> AbiResult<&'a [u8]> {
    // The size is checked against the parameter's by cmdbuf-core.
    ensure!(!bytes.is_null(), InvalidNullPointer, "a value argument without a value");
    // SAFETY: non-null, readable per the contract.
    Ok(unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), size) })
}

/// A rect side from UR's origin and pitches.
fn rect_layout(origin: ur_rect_offset_t, row_pitch: usize, slice_pitch: usize) -> AbiResult<RectLayout> {
    let coord = |v: u64| usize::try_from(v).map_err(|_| err!(InvalidSize, "rect origin {v} overflows"));
    Ok(RectLayout::new(RectOffset::new(coord(origin.x)?, coord(origin.y)?, coord(origin.z)?), row_pitch, slice_pitch))
}

/// A rect region from UR's.
fn rect_region(region: ur_rect_region_t) -> AbiResult<RectRegion> {
    let size = |v: u64| usize::try_from(v).map_err(|_| err!(InvalidSize, "rect size {v} overflows"));
    Ok(RectRegion::new(size(region.width)?, size(region.height)?, size(region.depth)?))
}

/// The arguments of a rect command in cmdbuf-core's terms: its two sides
/// (buffer and host memory, or source and destination) and the region.
pub(crate) struct Rect {
    /// The side UR names first (`buffer*`, `src*`).
    pub(crate) first: RectLayout,
    /// The side UR names second (`host*`, `dst*`).
    pub(crate) second: RectLayout,
    /// The region both sides cover.
    pub(crate) region: RectRegion,
}

/// Converts the rect arguments every `*Rect` entry point takes, in UR's
/// order: both origins, the region, then each side's row and slice pitch.
pub(crate) fn rect(
    first_origin: ur_rect_offset_t,
    second_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    first_pitches: (usize, usize),
    second_pitches: (usize, usize),
) -> AbiResult<Rect> {
    Ok(Rect {
        first: rect_layout(first_origin, first_pitches.0, first_pitches.1)?,
        second: rect_layout(second_origin, second_pitches.0, second_pitches.1)?,
        region: rect_region(region)?,
    })
}

/// Which way a transfer between a buffer and host memory goes, with the
/// host memory it writes or reads.
#[derive(Clone, Copy)]
pub(crate) enum Direction {
    /// Buffer to host (`urEnqueueMemBufferRead*`, `urCommandBufferAppendMemBufferRead*Exp`).
    Read(*mut u8),
    /// Host to buffer (the `Write` forms).
    Write(*const u8),
}

/// What part of the buffer a transfer covers, and how the host memory lies.
pub(crate) enum Extent {
    /// `size` bytes from `offset`, into or from contiguous host memory.
    Linear {
        /// Where in the buffer.
        offset: usize,
        /// How many bytes.
        size: usize,
    },
    /// A rect: the buffer's side first, the host memory's second.
    Rect(Rect),
}

/// A transfer between a buffer and host memory, as the read and write entry
/// points (eager and appended, linear and rect) give it.
pub(crate) struct HostTransfer {
    /// Where in the buffer, and the host memory's layout.
    pub(crate) extent: Extent,
    /// Which way, and the host memory.
    pub(crate) direction: Direction,
}

impl HostTransfer {
    /// UR's command type of the transfer, which its event reports.
    pub(crate) fn command_type(&self) -> ur_command_t {
        match (&self.extent, self.direction) {
            (Extent::Linear { .. }, Direction::Read(_)) => ur_command_t::UR_COMMAND_MEM_BUFFER_READ,
            (Extent::Linear { .. }, Direction::Write(_)) => ur_command_t::UR_COMMAND_MEM_BUFFER_WRITE,
            (Extent::Rect(_), Direction::Read(_)) => ur_command_t::UR_COMMAND_MEM_BUFFER_READ_RECT,
            (Extent::Rect(_), Direction::Write(_)) => ur_command_t::UR_COMMAND_MEM_BUFFER_WRITE_RECT,
        }
    }

    /// The transfer as a cmdbuf-core command on `buffer` in `context`.
    ///
    /// # Safety
    /// The host memory stays valid for what the extent covers until the
    /// command completes, or at every execution of a command buffer it is
    /// appended to (what cmdbuf-core's `*_host` commands require).
    pub(crate) unsafe fn command(&self, context: &Context, buffer: &MemBuffer) -> cmdbuf_core::Result<Command> {
        // SAFETY: the host memory outlives the command (this function's `# Safety`), all the `*_host` commands need.
        unsafe {
            match (&self.extent, self.direction) {
                (&Extent::Linear { offset, size }, Direction::Read(dst)) => {
                    Command::buffer_read_host(context, buffer, offset, size, dst)
                }
                (&Extent::Linear { offset, size }, Direction::Write(src)) => {
                    Command::buffer_write_host(context, buffer, offset, size, src)
                }
                (Extent::Rect(r), Direction::Read(dst)) => {
                    Command::buffer_read_rect_host(context, buffer, r.first, r.second, r.region, dst)
                }
                (Extent::Rect(r), Direction::Write(src)) => {
                    Command::buffer_write_rect_host(context, buffer, r.first, r.second, r.region, src)
                }
            }
        }
    }
}
