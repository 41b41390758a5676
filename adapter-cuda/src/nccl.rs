//! Collectives through NCCL, loaded at run time (`libnccl.so.2`, through
//! cudarc's dynamically loaded bindings): one communicator per group of
//! devices of this process (`ncclCommInitAll`), each call one grouped NCCL
//! call (`ncclGroupStart` / `ncclGroupEnd`) with one rank per device, each
//! rank's part on a stream of its device that waits for the rank's queue.
//!
//! Per rank: a marker on the rank's queue after its wait list (the queue's
//! order too); a pooled stream of the rank's device waits for the marker's
//! event; NCCL enqueues the rank's part on that stream; an event recorded
//! after it, and a final marker on the queue after that event, is the
//! rank's event, so later work of the queue follows the collective.
//!
//! A marker held back on the host (its wait list holds a user event not yet
//! complete) is waited for on the host before the group call: NCCL's ranks
//! must all be enqueued in one group, so no rank can be left for later.

use std::ffi::{CStr, c_int};
use std::sync::Arc;

use cudarc::nccl::sys as nccl;
use ur_core::adapter::{CollectiveImpl, CollectiveRank, EventImpl};
use ur_core::collective::{CollectiveOp, DataType, ReduceOp};
use ur_core::error::Result;
use ur_core::{ensure, err};

use crate::device::DeviceShared;
use crate::driver::stream_wait_event;
use crate::event::CudaEvent;
use crate::queue::CudaQueue;

/// The NCCL entry points this module calls: checked before the first use,
/// since cudarc's bindings panic on a missing symbol.
const SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetErrorString",
    "ncclCommInitAll",
    "ncclCommDestroy",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclAllReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclBroadcast",
];

/// The loaded NCCL's version (`2.28.3`), or `UnsupportedFeature` with the
/// reason where `libnccl.so.2` or one of the symbols this module calls is
/// missing.
pub(crate) fn version() -> Result<String> {
    // SAFETY: only tries to open the library.
    let present = unsafe { nccl::is_culib_present() };
    ensure!(present, UnsupportedFeature, "NCCL is not installed: libnccl.so.2 could not be loaded");
    // SAFETY: the library loads (checked above), so `culib` finds it.
    let lib = unsafe { nccl::culib() };
    for symbol in SYMBOLS {
        // SAFETY: only looks the symbol up; the pointer type is not used.
        let found = unsafe { lib.get::<*const ()>(symbol.as_bytes()) };
        ensure!(found.is_ok(), UnsupportedFeature, "the NCCL library found has no `{symbol}`");
    }
    let mut code: c_int = 0;
    // SAFETY: writes the version code into `code`.
    check(unsafe { nccl::ncclGetVersion(&mut code) }, "ncclGetVersion")?;
    // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    Ok(format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100))
}

/// `Ok` for `ncclSuccess`; otherwise the failure with NCCL's message.
fn check(result: nccl::ncclResult_t, call: &str) -> Result<()> {
    if result == nccl::ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: NCCL returns a static string for any result code.
    let message = unsafe { CStr::from_ptr(nccl::ncclGetErrorString(result)) }.to_string_lossy();
    let error = err!(Unknown, "{call} failed: {result:?}: {message}");
    Err(match result {
        nccl::ncclResult_t::ncclInvalidArgument | nccl::ncclResult_t::ncclInvalidUsage => {
            err!(InvalidValue, "{call} failed: {result:?}: {message}")
        }
        nccl::ncclResult_t::ncclSystemError => err!(OutOfResources, "{call} failed: {result:?}: {message}"),
        _ => error,
    })
}

fn data_type(dtype: DataType) -> nccl::ncclDataType_t {
    use nccl::ncclDataType_t as T;
    match dtype {
        DataType::I8 => T::ncclInt8,
        DataType::U8 => T::ncclUint8,
        DataType::I32 => T::ncclInt32,
        DataType::U32 => T::ncclUint32,
        DataType::I64 => T::ncclInt64,
        DataType::U64 => T::ncclUint64,
        DataType::F16 => T::ncclFloat16,
        DataType::F32 => T::ncclFloat32,
        DataType::F64 => T::ncclFloat64,
        DataType::BF16 => T::ncclBfloat16,
    }
}

fn reduce_op(op: ReduceOp) -> nccl::ncclRedOp_t {
    use nccl::ncclRedOp_t as O;
    match op {
        ReduceOp::Sum => O::ncclSum,
        ReduceOp::Prod => O::ncclProd,
        ReduceOp::Min => O::ncclMin,
        ReduceOp::Max => O::ncclMax,
    }
}

/// An NCCL communicator per device of a group, from `ncclCommInitAll`.
pub(crate) struct NcclGroup {
    comms: Vec<nccl::ncclComm_t>,
    devices: Vec<Arc<DeviceShared>>,
    version: String,
}

// SAFETY: NCCL communicators may be used from any thread; the front end
// makes calls on one group one at a time (`CollectiveImpl::enqueue`'s
// contract), as NCCL requires of one communicator.
unsafe impl Send for NcclGroup {}
// SAFETY: as for `Send`: `&self` methods only pass the handles to NCCL
// calls the front end serializes.
unsafe impl Sync for NcclGroup {}

impl NcclGroup {
    /// Communicators over `devices`, rank `i` on `devices[i]`.
    pub(crate) fn new(devices: Vec<Arc<DeviceShared>>) -> Result<NcclGroup> {
        let version = version()?;
        let ordinals: Vec<c_int> = devices.iter().map(|d| d.device).collect();
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        let n = c_int::try_from(devices.len()).map_err(|_| err!(InvalidValue, "too many ranks for NCCL"))?;
        // SAFETY: `comms` has room for `n` handles and `ordinals` holds `n`
        // distinct device ordinals (the front end checked the devices are
        // distinct; a `CUdevice` is its ordinal).
        check(unsafe { nccl::ncclCommInitAll(comms.as_mut_ptr(), n, ordinals.as_ptr()) }, "ncclCommInitAll")?;
        tracing::debug!(%version, ranks = devices.len(), "NCCL communicators");
        Ok(NcclGroup { comms, devices, version })
    }
}

impl Drop for NcclGroup {
    fn drop(&mut self) {
        for comm in &self.comms {
            // SAFETY: each handle came from `ncclCommInitAll` and is destroyed
            // once; the front end's events of every call hold no reference
            // to it, and NCCL completes enqueued work before freeing.
            if let Err(e) = check(unsafe { nccl::ncclCommDestroy(*comm) }, "ncclCommDestroy") {
                tracing::warn!(error = %e, "destroying an NCCL communicator");
            }
        }
    }
}

impl CollectiveImpl for NcclGroup {
    fn name(&self) -> String {
        format!("NCCL {}", self.version)
    }

    unsafe fn enqueue(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        ranks: &[CollectiveRank<'_>],
    ) -> Result<Vec<Arc<dyn EventImpl>>> {
        ensure!(
            ranks.len() == self.comms.len(),
            InvalidValue,
            "{} ranks for {} communicators",
            ranks.len(),
            self.comms.len()
        );
        let queues: Vec<&CudaQueue> = ranks
            .iter()
            .map(|r| ur_core::adapter::downcast::<CudaQueue>(r.queue as &dyn std::any::Any, "a rank's queue"))
            .collect::<Result<_>>()?;
        // Each rank's queue order and wait list, as a marker whose event
        // the rank's stream waits for.
        let mut markers = Vec::with_capacity(ranks.len());
        for (rank, queue) in ranks.iter().zip(&queues) {
            // SAFETY: a marker touches no memory; the wait events are of the
            // rank's context (the front end resolved them there).
            markers.push(unsafe { queue.marker(rank.wait)? });
        }
        for marker in &markers {
            if let Some(gate) = marker.held_gate() {
                tracing::debug!("a rank of a collective waits on the host for its wait list");
                // The marker's own outcome does not matter: wait lists order.
                let _ = gate.wait();
            }
        }
        let mut streams = Vec::with_capacity(ranks.len());
        for (dev, marker) in self.devices.iter().zip(&markers) {
            let stream = dev.take_stream()?;
            dev.bind()?;
            stream_wait_event(stream.raw(), marker.end().raw())?;
            streams.push(stream);
        }
        let n = ranks.len();
        let issued = (|| {
            // SAFETY: no arguments.
            check(unsafe { nccl::ncclGroupStart() }, "ncclGroupStart")?;
            let mut first_error = Ok(());
            for (i, rank) in ranks.iter().enumerate() {
                let (send, recv) = (rank.send as *const std::ffi::c_void, rank.recv as *mut std::ffi::c_void);
                let (comm, stream) = (self.comms[i], streams[i].raw() as nccl::cudaStream_t);
                let t = data_type(dtype);
                // SAFETY: the front end checked the ranges (the trait's
                // contract): `send` and `recv` hold the elements NCCL reads
                // and writes for this rank, in allocations of the rank's
                // device kept alive until its event completes, overlapping
                // only in NCCL's in-place layouts; the stream is of the
                // rank's device and the communicator is the rank's.
                let result = unsafe {
                    match *op {
                        CollectiveOp::AllReduce { count, op } => {
                            nccl::ncclAllReduce(send, recv, count, t, reduce_op(op), comm, stream)
                        }
                        CollectiveOp::AllGather { count } => {
                            nccl::ncclAllGather(send, recv, count / n, t, comm, stream)
                        }
                        CollectiveOp::ReduceScatter { count, op } => {
                            nccl::ncclReduceScatter(send, recv, count / n, t, reduce_op(op), comm, stream)
                        }
                        CollectiveOp::Broadcast { count, root } => {
                            nccl::ncclBroadcast(send, recv, count, t, root as c_int, comm, stream)
                        }
                    }
                };
                if first_error.is_ok() {
                    first_error = check(result, op.name());
                }
            }
            // Ended whatever happened inside: a group left open would take
            // the next calls of this thread.
            // SAFETY: no arguments; a group is open.
            let ended = check(unsafe { nccl::ncclGroupEnd() }, "ncclGroupEnd");
            first_error.and(ended)
        })();
        // Each rank's event: recorded on its stream after its part, then a
        // marker of its queue after it. The streams go back to their pools
        // (reused once idle) whether the call worked or not.
        let mut events: Vec<Arc<dyn EventImpl>> = Vec::with_capacity(n);
        let mut result = issued;
        for ((dev, stream), queue) in self.devices.iter().zip(streams).zip(&queues) {
            if result.is_ok() {
                let recorded = dev.bind().and_then(|()| {
                    let work = CudaEvent::new(dev, false)?;
                    work.end().record(stream.raw())?;
                    Ok(work)
                });
                match recorded {
                    // SAFETY: a marker touches no memory; the event is of the
                    // rank's device, whose queue this is.
                    Ok(work) => match unsafe { queue.marker(&[&work as &dyn EventImpl]) } {
                        Ok(event) => events.push(event as Arc<dyn EventImpl>),
                        Err(e) => result = Err(e),
                    },
                    Err(e) => result = Err(e),
                }
            }
            dev.return_stream(stream);
        }
        result?;
        Ok(events)
    }
}
