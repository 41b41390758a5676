//! An out-of-order UR queue over a driver queue that runs in order
//! (`UR_OPENCL_OUT_OF_ORDER_QUEUES=off`, as on Intel's OpenCL CPU runtime by
//! default): the OpenCL queue says its commands complete in order
//! (`QueueImpl::completes_in_order`), and the front end then keeps a launch
//! in place of the one before it where it keeps all that one keeps, as on
//! an in-order queue, without asking whether that one has completed. The
//! kernel and every buffer must stay alive while the launches wait, and be
//! released at the next submission once they have completed; the results
//! must be those of every launch.
//!
//! One test per OpenCL device, listed ignored with the reason where there
//! is none. Its own binary: the variable applies to this process only.

mod per_device;

use cmdbuf_core::faults::{FaultInjector, live_objects};
use cmdbuf_core::{
    ArgKind, Context, Device, Kernel, KernelArg, KernelLaunch, KernelSignature, MemBuffer, MemFlags, Program,
    ProgramBundle, ProgramSource, Queue, QueueProperties, UserEvent,
};

const SOURCE: &str = "__kernel void add(__global uchar *p, uchar v) { p[get_global_id(0)] += v; }";

fn main() {
    // SAFETY: the first thing the process does: no other thread runs, and
    // the adapter reads the variable when `per_device::run` loads it.
    unsafe { std::env::set_var(cmdbuf_opencl::OUT_OF_ORDER_ENV, "off") };
    per_device::run("in_order_driver_queue", &[("launches_keep_until_complete", launches_keep_until_complete)])
}

fn launches_keep_until_complete(device: &Device) -> Result<(), String> {
    let e = |e: cmdbuf_core::UrError| e.to_string();
    let injector = FaultInjector::new();
    let device = injector.wrap_device(device);
    let ctx = Context::new(&device).map_err(e)?;
    let queue = Queue::new(&ctx, QueueProperties { out_of_order: true, profiling: false }).map_err(e)?;
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("add", [ArgKind::Global, ArgKind::Value(1)]))
        .source(ProgramSource::OpenClC(SOURCE.into()));
    let program = Program::new(&ctx, &bundle).map_err(e)?;
    let add = Kernel::new(&program, "add").map_err(e)?;
    let (a, b) = (
        MemBuffer::new(&ctx, MemFlags::READ_WRITE, 64).map_err(e)?,
        MemBuffer::new(&ctx, MemFlags::READ_WRITE, 64).map_err(e)?,
    );
    for buffer in [&a, &b] {
        queue.write_buffer(buffer, 0, &[0u8; 64], &[]).map_err(e)?;
    }
    let gate = UserEvent::new(&ctx).map_err(e)?;
    let one = 1u8;
    // The second launch over `a` takes the first one's place; the one over
    // `b` keeps another buffer, so it takes no place.
    let mut last = None;
    for buffer in [&a, &a, &b] {
        let args = [KernelArg::MemObj(buffer), KernelArg::value(&one)];
        // SAFETY: one work-item per byte of the 64-byte buffer.
        let launch = unsafe { queue.launch_kernel(&KernelLaunch::new(&add, &[64], &args), &[gate.event()]) };
        last = Some(launch.map_err(e)?);
    }
    // Held by the queue alone from here.
    let (a_raw, b_raw) = (a.clone(), b.clone());
    drop((a, b, add, program));
    let live = live_objects(&ctx).ok_or("the device is not wrapped")?;
    if (live.buffers, live.kernels) != (2, 1) {
        return Err(format!("released while the launches wait: {live:?}"));
    }
    gate.complete().map_err(e)?;
    last.ok_or("no launch")?.wait().map_err(e)?;
    let (mut got_a, mut got_b) = ([0u8; 64], [0u8; 64]);
    queue.read_buffer(&a_raw, 0, &mut got_a, &[]).map_err(e)?;
    queue.read_buffer(&b_raw, 0, &mut got_b, &[]).map_err(e)?;
    if got_a != [2u8; 64] || got_b != [1u8; 64] {
        return Err(format!("results: a {:?}, b {:?}", &got_a[..4], &got_b[..4]));
    }
    drop((a_raw, b_raw));
    // The reads were the next submissions: what the launches kept is gone.
    queue.finish().map_err(e)?;
    queue.write_buffer(&MemBuffer::new(&ctx, MemFlags::READ_WRITE, 4).map_err(e)?, 0, &[0; 4], &[]).map_err(e)?;
    let live = live_objects(&ctx).ok_or("the device is not wrapped")?;
    if (live.kernels, live.programs) != (0, 0) {
        return Err(format!("kept after completing: {live:?}"));
    }
    Ok(())
}
