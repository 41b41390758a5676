//! What the cases over several devices (and the buffer cases, which move
//! data between two contexts of one device as between devices) share: the
//! case type of the `cross` and `multi_device` sections, the buffers'
//! page helpers and whether two devices are peers. Below every case module
//! that uses it, so that the buffer, multi-device, graph and collective
//! cases name no module of each other's for a helper.

use std::sync::Arc;

use cmdbuf::{Context, Device, Event, Queue, QueueProperties, UsmKind, UsmKinds};
use cmdbuf_runtime::{AccessMode, AccessRange, Buffer, BufferProperties, CommandGroup, TransferStats};
use parking_lot::Mutex;

use crate::harness::{CaseError, CaseResult};

/// A case run on all selected devices at once.
pub struct CrossCase {
    /// `buffers_cross::name`.
    pub name: &'static str,
    /// The body, given every selected device (at least two).
    pub body: fn(&[Device]) -> CaseResult,
}

impl CrossCase {
    /// Runs the case on `devices`, a panic being a failure.
    pub fn run(&self, devices: &[Device]) -> crate::Outcome {
        let _watch = match crate::watchdog::watch_case(format!("{} on every selected device", self.name)) {
            Ok(watch) => watch,
            Err(message) => return crate::Outcome::Fail(message),
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.body)(devices))) {
            Ok(Ok(())) => crate::Outcome::Pass,
            Ok(Err(CaseError::Skip(reason))) => crate::Outcome::Skip(reason),
            Ok(Err(CaseError::Fail(message))) => crate::Outcome::Fail(message),
            Err(_) => crate::Outcome::Fail("panicked".into()),
        }
    }
}

/// Elements per page in the 1D cases.
pub(in crate::cases) const PAGE: usize = 16;

pub(in crate::cases) fn page_props(page: &[usize]) -> BufferProperties {
    BufferProperties { page: Some(page.to_vec()) }
}

/// A second context of the case's device, with a queue.
pub(in crate::cases) fn second(device: &Device) -> Result<Queue, CaseError> {
    Ok(Queue::new(&Context::new(device)?, QueueProperties::default())?)
}

/// Copies, pages, bytes and copies through the host moved between two snapshots.
pub(in crate::cases) fn moved(before: TransferStats, after: TransferStats) -> (u64, u64, u64, u64) {
    (
        after.copies - before.copies,
        after.pages - before.pages,
        after.bytes - before.bytes,
        after.via_host - before.via_host,
    )
}

/// Fills elements `[first, first + count)` of a u32 buffer with `value` on `queue`.
pub(in crate::cases) fn fill(
    queue: &Queue,
    buffer: &Buffer,
    mode: AccessMode,
    first: usize,
    count: usize,
    value: u32,
) -> Result<Event, CaseError> {
    let mut cg = CommandGroup::new(queue);
    let acc = cg.access(buffer, mode, AccessRange::new(&[first], &[count]))?;
    Ok(cg.submit(|q, wait| q.usm_fill(acc.ptr().byte_add(first * 4), &value.to_le_bytes(), count * 4, wait))?)
}

/// The elements `[first, first + count)` as the host sees them.
pub(in crate::cases) fn host_read(buffer: &Buffer, first: usize, count: usize) -> Result<Vec<u32>, CaseError> {
    Ok(buffer.host_access(AccessMode::Read, AccessRange::new(&[first], &[count]))?.to_vec::<u32>()?)
}

/// UR-surface reads of the buffer on `queue`'s device: what a kernel there sees.
pub(in crate::cases) fn device_read(
    queue: &Queue,
    buffer: &Buffer,
    first: usize,
    count: usize,
) -> Result<Vec<u32>, CaseError> {
    let mut cg = CommandGroup::new(queue);
    let acc = cg.access(buffer, AccessMode::Read, AccessRange::new(&[first], &[count]))?;
    let out = Arc::new(Mutex::new(vec![0u32; count]));
    let sink = out.clone();
    let event = cg.submit(|q, wait| {
        let mut data = sink.lock();
        q.read_usm(acc.ptr().byte_add(first * 4), bytemuck::cast_slice_mut(&mut data), wait)?;
        q.events_wait(&[])
    })?;
    event.wait()?;
    Ok(out.lock().clone())
}

/// Whether a buffer moves data between allocations of `a` and `b` as a
/// peer copy: one of them has peer access to the other.
pub(in crate::cases) fn peers(a: &Device, b: &Device) -> Result<bool, CaseError> {
    Ok(a.peer_access(b)?.supported || b.peer_access(a)?.supported)
}

/// The first USM kind `device` offers, of device, shared and host: what
/// the multi-device graph cases and the pipeline benchmark allocate.
pub fn first_usm_kind(device: &Device) -> Option<UsmKind> {
    let usm = device.info().usm;
    [(UsmKinds::DEVICE, UsmKind::Device), (UsmKinds::SHARED, UsmKind::Shared), (UsmKinds::HOST, UsmKind::Host)]
        .into_iter()
        .find(|(flag, _)| usm.contains(*flag))
        .map(|(_, kind)| kind)
}
