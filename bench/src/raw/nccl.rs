//! NCCL called directly on streams, the baseline of the `collectives`
//! group: communicators from `ncclCommInitAll` over the devices, a stream
//! per device in its primary context, and per call one `ncclGroupStart`,
//! one `ncclAllReduce` per rank, `ncclGroupEnd`, as nccl-tests drives
//! several GPUs from one thread; the streams synchronized after a batch.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use cudarc::driver::sys;
use cudarc::nccl::sys as nccl;

fn check_cu(status: sys::CUresult, what: &str) -> Result<(), String> {
    if status == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(format!("{what}: {status:?}")) }
}

fn check_nccl(status: nccl::ncclResult_t, what: &str) -> Result<(), String> {
    if status == nccl::ncclResult_t::ncclSuccess { Ok(()) } else { Err(format!("{what}: {status:?}")) }
}

/// Communicators and streams over CUDA devices, by ordinal.
pub struct RawNccl {
    comms: Vec<nccl::ncclComm_t>,
    contexts: Vec<sys::CUcontext>,
    streams: Vec<sys::CUstream>,
    devices: Vec<sys::CUdevice>,
}

impl RawNccl {
    /// Over the devices of `ordinals`, rank `i` on `ordinals[i]`.
    pub fn open(ordinals: &[i32]) -> Result<RawNccl, String> {
        // cudarc panics on a missing symbol; the adapter's NCCL check
        // passed, so this only guards against surprises.
        catch_unwind(AssertUnwindSafe(|| Self::open_unguarded(ordinals)))
            .unwrap_or_else(|_| Err("NCCL or the CUDA driver lacks an entry point the baseline uses".into()))
    }

    fn open_unguarded(ordinals: &[i32]) -> Result<RawNccl, String> {
        // SAFETY: probing the libraries has no precondition.
        if !unsafe { sys::is_culib_present() && nccl::is_culib_present() } {
            return Err("no CUDA driver or no libnccl.so.2".into());
        }
        let mut raw = RawNccl { comms: Vec::new(), contexts: Vec::new(), streams: Vec::new(), devices: Vec::new() };
        // SAFETY: every call gets valid out-pointers and handles made by the
        // calls before it; what was made is released by `drop`.
        unsafe {
            check_cu(sys::cuInit(0), "cuInit")?;
            for &ordinal in ordinals {
                let mut device = 0;
                check_cu(sys::cuDeviceGet(&mut device, ordinal), "cuDeviceGet")?;
                let mut context = ptr::null_mut();
                check_cu(sys::cuDevicePrimaryCtxRetain(&mut context, device), "cuDevicePrimaryCtxRetain")?;
                raw.devices.push(device);
                raw.contexts.push(context);
                check_cu(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
                let mut stream = ptr::null_mut();
                let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
                check_cu(sys::cuStreamCreate(&mut stream, flags), "cuStreamCreate")?;
                raw.streams.push(stream);
            }
            let mut comms = vec![ptr::null_mut(); ordinals.len()];
            check_nccl(
                nccl::ncclCommInitAll(comms.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr()),
                "ncclCommInitAll",
            )?;
            raw.comms = comms;
        }
        Ok(raw)
    }

    /// `iterations` all-reduces (sum of `f32`) of `count` elements, rank
    /// `i` from `buffers[i].0` into `buffers[i].1` (device addresses of its
    /// device), issued back to back; returns once every stream is done.
    pub fn all_reduce_f32(&self, buffers: &[(u64, u64)], count: usize, iterations: usize) -> Result<(), String> {
        // SAFETY: the caller gives device ranges of `count` f32s on each
        // rank's device; streams and communicators are alive.
        unsafe {
            for _ in 0..iterations {
                check_nccl(nccl::ncclGroupStart(), "ncclGroupStart")?;
                for (i, (send, recv)) in buffers.iter().enumerate() {
                    let status = nccl::ncclAllReduce(
                        *send as *const _,
                        *recv as *mut _,
                        count,
                        nccl::ncclDataType_t::ncclFloat32,
                        nccl::ncclRedOp_t::ncclSum,
                        self.comms[i],
                        self.streams[i] as nccl::cudaStream_t,
                    );
                    check_nccl(status, "ncclAllReduce")?;
                }
                check_nccl(nccl::ncclGroupEnd(), "ncclGroupEnd")?;
            }
            for (context, stream) in self.contexts.iter().zip(&self.streams) {
                check_cu(sys::cuCtxSetCurrent(*context), "cuCtxSetCurrent")?;
                check_cu(sys::cuStreamSynchronize(*stream), "cuStreamSynchronize")?;
            }
        }
        Ok(())
    }
}

impl Drop for RawNccl {
    fn drop(&mut self) {
        // SAFETY: each handle was made by `open` and is released once.
        unsafe {
            for comm in &self.comms {
                nccl::ncclCommDestroy(*comm);
            }
            for ((context, stream), device) in self.contexts.iter().zip(&self.streams).zip(&self.devices) {
                sys::cuCtxSetCurrent(*context);
                sys::cuStreamDestroy_v2(*stream);
                sys::cuDevicePrimaryCtxRelease_v2(*device);
            }
        }
    }
}
