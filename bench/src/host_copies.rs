//! The `host_copies` group (issue 26): what a USM copy between device memory
//! and plain host memory costs, per selected device, against the backend's
//! own copy of the same bytes on the same queue and allocation: OpenCL's
//! `clEnqueueSVMMemcpy` on the queue's `cl_command_queue`, CUDA's
//! `cuMemcpy{HtoD,DtoH}Async` on its stream. On NVIDIA's OpenCL the
//! adapter stages such copies through a buffer of its own (docs/opencl.md,
//! the driver reorders its own SVM copies with host memory): this is the
//! price of that, and elsewhere the price of the front end and the adapter.
//! Each copy is issued and waited for; the raw side is blocking too.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use cmdbuf::{Context, Device, Queue, QueueProperties, UrError, UsmAllocation};

use crate::stats::{Repeats, Summary, measure_interleaved};
use crate::suites::Record;

/// Copy sizes: a small copy's latency, a middle one, and bandwidth.
const SIZES: [usize; 3] = [4 << 10, 1 << 20, 64 << 20];

/// Runs the group over every device; the table.
pub fn run(devices: &[Device], repeats: Repeats, quick: bool, out: &mut Vec<Record>) -> String {
    let mut text = String::from(
        "### `host_copies` (USM copies to and from plain host memory, each waited for)\n\nµs, median \
         (p10-p90); raw: the backend's own copy on the same queue and allocation\n\n| device | bytes | host to \
         device | raw | ratio | device to host | raw | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let sizes = if quick { &SIZES[..2] } else { &SIZES[..] };
    for device in devices {
        if let Err(e) = measure_device(device, repeats, sizes, &mut text, out) {
            let _ = writeln!(text, "| {device} | not measured: {e} | | | | | | |");
        }
    }
    text += "\n";
    text
}

fn measure_device(
    device: &Device,
    repeats: Repeats,
    sizes: &[usize],
    text: &mut String,
    out: &mut Vec<Record>,
) -> Result<(), UrError> {
    let kind = cmdbuf_conformance::cases::graph_multi_device::first_usm_kind(device)
        .ok_or_else(|| cmdbuf::err!(UnsupportedFeature, "no USM"))?;
    let context = Context::new(device)?;
    let queue = Queue::new(&context, QueueProperties::default())?;
    let largest = *sizes.last().expect("sizes");
    let usm = UsmAllocation::new(&context, kind, largest)?;
    let mut host = vec![0x5au8; largest];
    let raw = Raw::of(device, &queue);
    for &bytes in sizes {
        let r = repeats.scaled(bytes / (16 << 10));
        let (dst, src) = (usm.ptr(), host.as_mut_ptr());
        let mut ours = || -> Result<[Duration; 2], UrError> {
            let start = Instant::now();
            queue.write_usm(dst, &host[..bytes], &[])?;
            let written = start.elapsed();
            let start = Instant::now();
            queue.read_usm(dst, &mut host[..bytes], &[])?;
            Ok([written, start.elapsed()])
        };
        let mut theirs = || -> Result<[Duration; 2], UrError> {
            let raw = raw.as_ref().map_err(|e| cmdbuf::err!(UnsupportedFeature, "{e}"))?;
            // SAFETY: `dst` holds `largest` bytes of the queue's device and `src` as many of host
            // memory, both alive through the blocking copies.
            unsafe { raw.copies(dst.addr(), src, bytes) }
        };
        let (a, b) = if raw.is_ok() {
            let both = measure_interleaved(r, &mut [&mut ours, &mut theirs])?;
            (both[0], Some(both[1]))
        } else {
            (measure_interleaved(r, &mut [&mut ours])?[0], None)
        };
        let us = |s: &Summary| format!("{:.1} ({:.1}-{:.1})", s.median / 1e3, s.p10 / 1e3, s.p90 / 1e3);
        let (raw_in, ratio_in, raw_out, ratio_out) = match &b {
            Some([i, o]) => {
                (us(i), format!("{:.2}x", a[0].median / i.median), us(o), format!("{:.2}x", a[1].median / o.median))
            }
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            text,
            "| {device} | {bytes} | {} | {raw_in} | {ratio_in} | {} | {raw_out} | {ratio_out} |",
            us(&a[0]),
            us(&a[1])
        );
        let name = device.info().name.clone();
        let mut push = |variant: &str, s: Summary| {
            out.push(Record {
                device: device.to_string(),
                backend: format!("{:?}", device.backend()).to_lowercase(),
                device_name: name.clone(),
                benchmark: "host_copies".into(),
                shape: "usm_copy".into(),
                variant: variant.into(),
                metric: "ns".into(),
                n: bytes,
                summary: s,
            });
        };
        push("host_to_device", a[0]);
        push("device_to_host", a[1]);
        if let Some([i, o]) = b {
            push("raw_host_to_device", i);
            push("raw_device_to_host", o);
        }
    }
    if let Err(e) = &raw {
        let _ = writeln!(text, "| {device} | raw: {e} | | | | | | |");
    }
    #[cfg(feature = "opencl")]
    if let Ok(Raw::OpenCl(queue)) = raw
        && let Err(e) = staging::breakdown(device, queue, usm.ptr().addr(), repeats, sizes, text, out)
    {
        let _ = writeln!(text, "| {device} | staging breakdown not measured: {e} | | | | | | |");
    }
    Ok(())
}

/// The backend's own copy on the queue's native object.
enum Raw {
    #[cfg(feature = "opencl")]
    OpenCl(cl3::types::cl_command_queue),
    #[cfg(feature = "cuda")]
    Cuda(u64, u64),
}

impl Raw {
    fn of(device: &Device, queue: &Queue) -> Result<Raw, String> {
        let native = queue.native_handle().map_err(|e| e.to_string())?.0;
        match device.backend() {
            #[cfg(feature = "opencl")]
            cmdbuf::Backend::OpenCl => Ok(Raw::OpenCl(native as cl3::types::cl_command_queue)),
            #[cfg(feature = "cuda")]
            cmdbuf::Backend::Cuda => {
                let context = queue.context().native_handle().map_err(|e| e.to_string())?.0;
                Ok(Raw::Cuda(context, native))
            }
            #[allow(unreachable_patterns)]
            other => Err(format!("no raw copy for {} (handle {native:#x})", other.name())),
        }
    }

    /// A blocking copy of `bytes` from `host` into `device`, then back.
    ///
    /// # Safety
    /// `device` and `host` each hold `bytes` bytes, alive until this returns;
    /// the queue's native object is alive.
    unsafe fn copies(&self, device: u64, host: *mut u8, bytes: usize) -> Result<[Duration; 2], UrError> {
        #[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(unused_variables))]
        let (device, host, bytes) = (device, host, bytes);
        match *self {
            #[cfg(feature = "opencl")]
            Raw::OpenCl(queue) => {
                let copy = |dst: *mut std::ffi::c_void, src: *const std::ffi::c_void| {
                    let start = Instant::now();
                    // SAFETY: the caller's contract; blocking, so nothing outlives the call.
                    let event = unsafe {
                        cl3::command_queue::enqueue_svm_mem_cpy(
                            queue,
                            cl3::types::CL_TRUE,
                            dst,
                            src,
                            bytes,
                            0,
                            std::ptr::null(),
                        )
                    }
                    .map_err(|code| cmdbuf::err!(Unknown, "clEnqueueSVMMemcpy: {code}"))?;
                    let took = start.elapsed();
                    // SAFETY: the enqueue returned a new reference.
                    let _ = unsafe { cl3::event::release_event(event) };
                    Ok::<_, UrError>(took)
                };
                let into = copy(device as *mut _, host.cast_const().cast())?;
                let back = copy(host.cast(), device as *const _)?;
                Ok([into, back])
            }
            #[cfg(feature = "cuda")]
            Raw::Cuda(context, stream) => {
                use cudarc::driver::sys;
                let (context, stream) = (context as sys::CUcontext, stream as sys::CUstream);
                let ok = |status: sys::CUresult, what: &str| {
                    if status == sys::CUresult::CUDA_SUCCESS {
                        Ok(())
                    } else {
                        Err(cmdbuf::err!(Unknown, "{what}: {status:?}"))
                    }
                };
                // SAFETY: the caller's contract; each copy is synchronized before the next.
                unsafe {
                    ok(sys::cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
                    let start = Instant::now();
                    ok(
                        sys::cuMemcpyHtoDAsync_v2(device, host.cast_const().cast(), bytes, stream),
                        "cuMemcpyHtoDAsync",
                    )?;
                    ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize")?;
                    let into = start.elapsed();
                    let start = Instant::now();
                    ok(sys::cuMemcpyDtoHAsync_v2(host.cast(), device, bytes, stream), "cuMemcpyDtoHAsync")?;
                    ok(sys::cuStreamSynchronize(stream), "cuStreamSynchronize")?;
                    Ok([into, start.elapsed()])
                }
            }
        }
    }
}

/// What a copy staged through a buffer costs in OpenCL alone, step by step:
/// the adapter's way on NVIDIA (a new buffer per copy) against one buffer
/// reused by every copy, and the plain SVM copy.
#[cfg(feature = "opencl")]
mod staging {
    use std::ffi::c_void;
    use std::fmt::Write as _;
    use std::ptr;
    use std::time::{Duration, Instant};

    use cl3::types::{CL_FALSE, CL_TRUE, cl_command_queue, cl_context, cl_event, cl_mem};
    use cmdbuf::{Device, UrError};

    use crate::stats::{Repeats, Summary, measure_interleaved};
    use crate::suites::Record;

    fn fail(what: &'static str) -> impl Fn(i32) -> UrError {
        move |code| cmdbuf::err!(Unknown, "{what}: {code}")
    }

    /// Waits for and releases `event`.
    fn finish(event: cl_event) -> Result<(), UrError> {
        let waited = cl3::event::wait_for_events(&[event]).map_err(fail("clWaitForEvents"));
        // SAFETY: a new reference from an enqueue, released once.
        let _ = unsafe { cl3::event::release_event(event) };
        waited
    }

    fn new_buffer(context: cl_context, bytes: usize) -> Result<cl_mem, UrError> {
        // SAFETY: a valid context; no host pointer.
        unsafe { cl3::memory::create_buffer(context, cl3::memory::CL_MEM_READ_WRITE, bytes, ptr::null_mut()) }
            .map_err(fail("clCreateBuffer"))
    }

    /// Host to device and back through `staging` (a new buffer per copy
    /// where `None`) and a device copy into or out of `target`.
    ///
    /// # Safety
    /// `host` holds `bytes` bytes; the queue, context and buffers are alive
    /// and hold `bytes` bytes.
    unsafe fn staged(
        queue: cl_command_queue,
        context: cl_context,
        target: cl_mem,
        reused: Option<cl_mem>,
        host: *mut u8,
        bytes: usize,
    ) -> Result<[Duration; 2], UrError> {
        let mut times = [Duration::ZERO; 2];
        for (i, time) in times.iter_mut().enumerate() {
            let start = Instant::now();
            let staging = match reused {
                Some(buffer) => buffer,
                None => new_buffer(context, bytes)?,
            };
            // SAFETY: the caller's contract; every command is waited for
            // before this returns, and a released buffer lives until its
            // commands end.
            let last = unsafe {
                if i == 0 {
                    let written = cl3::command_queue::enqueue_write_buffer(
                        queue,
                        staging,
                        CL_FALSE,
                        0,
                        bytes,
                        host.cast_const().cast::<c_void>(),
                        0,
                        ptr::null(),
                    )
                    .map_err(fail("clEnqueueWriteBuffer"))?;
                    let copied =
                        cl3::command_queue::enqueue_copy_buffer(queue, staging, target, 0, 0, bytes, 1, &written)
                            .map_err(fail("clEnqueueCopyBuffer"));
                    let _ = cl3::event::release_event(written);
                    copied?
                } else {
                    let copied =
                        cl3::command_queue::enqueue_copy_buffer(queue, target, staging, 0, 0, bytes, 0, ptr::null())
                            .map_err(fail("clEnqueueCopyBuffer"))?;
                    let read = cl3::command_queue::enqueue_read_buffer(
                        queue,
                        staging,
                        CL_FALSE,
                        0,
                        bytes,
                        host.cast::<c_void>(),
                        1,
                        &copied,
                    )
                    .map_err(fail("clEnqueueReadBuffer"));
                    let _ = cl3::event::release_event(copied);
                    read?
                }
            };
            if reused.is_none() {
                // SAFETY: this function's buffer, released once; OpenCL keeps it for its commands.
                let _ = unsafe { cl3::memory::release_mem_object(staging) };
            }
            finish(last)?;
            *time = start.elapsed();
        }
        Ok(times)
    }

    /// A plain `clEnqueueSVMMemcpy` each way, waited for.
    ///
    /// # Safety
    /// `svm` and `host` hold `bytes` bytes; the queue is alive.
    unsafe fn plain(queue: cl_command_queue, svm: u64, host: *mut u8, bytes: usize) -> Result<[Duration; 2], UrError> {
        let mut times = [Duration::ZERO; 2];
        for (i, time) in times.iter_mut().enumerate() {
            let (dst, src) = if i == 0 {
                (svm as *mut c_void, host.cast_const().cast::<c_void>())
            } else {
                (host.cast::<c_void>(), svm as *const c_void)
            };
            let start = Instant::now();
            // SAFETY: the caller's contract; blocking.
            let event =
                unsafe { cl3::command_queue::enqueue_svm_mem_cpy(queue, CL_TRUE, dst, src, bytes, 0, ptr::null()) }
                    .map_err(fail("clEnqueueSVMMemcpy"))?;
            finish(event)?;
            *time = start.elapsed();
        }
        Ok(times)
    }

    pub(super) fn breakdown(
        device: &Device,
        queue: cl_command_queue,
        svm: u64,
        repeats: Repeats,
        sizes: &[usize],
        text: &mut String,
        out: &mut Vec<Record>,
    ) -> Result<(), UrError> {
        let context = cl3::command_queue::get_command_queue_info(queue, cl3::command_queue::CL_QUEUE_CONTEXT)
            .map_err(fail("clGetCommandQueueInfo"))?
            .to_ptr() as cl_context;
        let largest = *sizes.last().expect("sizes");
        let target = new_buffer(context, largest)?;
        let reusable = new_buffer(context, largest)?;
        let mut host = vec![0xa5u8; largest];
        let h = host.as_mut_ptr();
        let mut rows = String::new();
        let result = (|| {
            for &bytes in sizes {
                let r = repeats.scaled(bytes / (16 << 10));
                // The allocation, buffers and `host` hold `largest` bytes and outlive the
                // measurement, as `plain` and `staged` ask.
                // SAFETY: as said above.
                let mut svm_copy = || unsafe { plain(queue, svm, h, bytes) };
                // SAFETY: as said above.
                let mut fresh = || unsafe { staged(queue, context, target, None, h, bytes) };
                // SAFETY: as said above.
                let mut kept = || unsafe { staged(queue, context, target, Some(reusable), h, bytes) };
                let all = measure_interleaved(r, &mut [&mut svm_copy, &mut fresh, &mut kept])?;
                let us = |s: &Summary| format!("{:.1}", s.median / 1e3);
                let _ = writeln!(
                    rows,
                    "| {device} | {bytes} | {} / {} | {} / {} | {} / {} |",
                    us(&all[0][0]),
                    us(&all[0][1]),
                    us(&all[1][0]),
                    us(&all[1][1]),
                    us(&all[2][0]),
                    us(&all[2][1])
                );
                for (variant, pair) in
                    [("svm_copy", all[0]), ("staged_new_buffer", all[1]), ("staged_reused_buffer", all[2])]
                {
                    for (direction, s) in ["host_to_device", "device_to_host"].iter().zip(pair) {
                        out.push(Record {
                            device: device.to_string(),
                            backend: "opencl".into(),
                            device_name: device.info().name.clone(),
                            benchmark: "host_copies".into(),
                            shape: format!("raw_{variant}"),
                            variant: (*direction).into(),
                            metric: "ns".into(),
                            n: bytes,
                            summary: s,
                        });
                    }
                }
            }
            Ok::<_, UrError>(())
        })();
        // SAFETY: this function's buffers, released once, their commands waited for.
        unsafe {
            let _ = cl3::memory::release_mem_object(target);
            let _ = cl3::memory::release_mem_object(reusable);
        }
        result?;
        let _ = write!(
            text,
            "\nOpenCL alone on {device}, µs host to device / device to host, median: a plain SVM copy; staged as the \
             adapter does on NVIDIA (a new buffer per copy: write or read it, and a device copy); staged through one \
             buffer kept for every copy\n\n| device | bytes | SVM copy | staged, new buffer | staged, kept buffer \
             |\n|---|---:|---:|---:|---:|\n{rows}\n"
        );
        Ok(())
    }
}
