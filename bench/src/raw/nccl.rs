//! NCCL called directly on streams, the baseline of the `collectives`
//! group: communicators from `ncclCommInitAll` over the devices, a stream
//! per device in its primary context, and per call one `ncclGroupStart`,
//! one `ncclAllReduce` per rank, `ncclGroupEnd`, as nccl-tests drives
//! several GPUs from one thread; the streams synchronized after a batch.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use cmdbuf_cuda::nccl_lib::{self, Nccl};
use cudarc::driver::sys;

fn check_cu(status: sys::CUresult, what: &str) -> Result<(), String> {
    if status == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(format!("{what}: {status:?}")) }
}

fn check_nccl(nccl: &Nccl, status: c_int, what: &str) -> Result<(), String> {
    if status == nccl_lib::SUCCESS { Ok(()) } else { Err(format!("{what}: {}", nccl.error_string(status))) }
}

/// Communicators and streams over CUDA devices, by ordinal.
pub struct RawNccl {
    nccl: &'static Nccl,
    comms: Vec<nccl_lib::Comm>,
    contexts: Vec<sys::CUcontext>,
    streams: Vec<sys::CUstream>,
    devices: Vec<sys::CUdevice>,
}

impl RawNccl {
    /// Over the devices of `ordinals`, rank `i` on `ordinals[i]`.
    pub fn open(ordinals: &[i32]) -> Result<RawNccl, String> {
        // cudarc panics on a missing driver symbol; the adapter found a
        // device, so this only guards against surprises.
        catch_unwind(AssertUnwindSafe(|| Self::open_unguarded(ordinals)))
            .unwrap_or_else(|_| Err("NCCL or the CUDA driver lacks an entry point the baseline uses".into()))
    }

    fn open_unguarded(ordinals: &[i32]) -> Result<RawNccl, String> {
        // SAFETY: probing the library has no precondition.
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver".into());
        }
        let nccl = nccl_lib::nccl()?;
        let mut raw =
            RawNccl { nccl, comms: Vec::new(), contexts: Vec::new(), streams: Vec::new(), devices: Vec::new() };
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
            let status = (nccl.comm_init_all)(comms.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr());
            check_nccl(nccl, status, "ncclCommInitAll")?;
            raw.comms = comms;
        }
        Ok(raw)
    }

    /// `iterations` all-reduces (sum of `f32`) of `count` elements, rank
    /// `i` from `buffers[i].0` into `buffers[i].1` (device addresses of its
    /// device), issued back to back; returns once every stream is done.
    pub fn all_reduce_f32(&self, buffers: &[(u64, u64)], count: usize, iterations: usize) -> Result<(), String> {
        let nccl = self.nccl;
        // SAFETY: the caller gives device ranges of `count` f32s on each
        // rank's device; streams and communicators are alive.
        unsafe {
            for _ in 0..iterations {
                check_nccl(nccl, (nccl.group_start)(), "ncclGroupStart")?;
                for (i, (send, recv)) in buffers.iter().enumerate() {
                    let status = (nccl.all_reduce)(
                        *send as *const _,
                        *recv as *mut _,
                        count,
                        nccl_lib::dtype::FLOAT32,
                        nccl_lib::op::SUM,
                        self.comms[i],
                        self.streams[i] as nccl_lib::Stream,
                    );
                    check_nccl(nccl, status, "ncclAllReduce")?;
                }
                check_nccl(nccl, (nccl.group_end)(), "ncclGroupEnd")?;
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
                (self.nccl.comm_destroy)(*comm);
            }
            for ((context, stream), device) in self.contexts.iter().zip(&self.streams).zip(&self.devices) {
                sys::cuCtxSetCurrent(*context);
                sys::cuStreamDestroy_v2(*stream);
                sys::cuDevicePrimaryCtxRelease_v2(*device);
            }
        }
    }
}
