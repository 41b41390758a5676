//! Updating a recorded kernel launch without recording again: the argument
//! and the global size of a `scale` kernel change between replays. The
//! kernel is given as a Rust function (CPU), OpenCL C and CUDA C; the
//! example runs on the first selected device that builds one of them and
//! can update arguments and the global size.
//!
//! ```sh
//! cargo run -p cmdbuf --example update
//! UR_DEVICE_SELECTOR='opencl:0' cargo run -p cmdbuf --example update
//! ```

use cmdbuf::prelude::*;
use cmdbuf::{ArgKind, NativeKernel, UpdateCapabilities, WorkGroup};

const N: usize = 1024;

/// `data[i] *= factor` for every work-item.
fn scale(g: &WorkGroup<'_>) {
    let data = g.ptr::<u32>(0);
    let factor: u32 = g.value(1);
    for item in g.items() {
        // SAFETY: the launches below pass an allocation of N u32s and at most N items.
        unsafe { *data.add(item.global_linear_id()) *= factor };
    }
}

const OPENCL_C: &str = "__kernel void scale(__global uint *data, uint factor) { data[get_global_id(0)] *= factor; }";
/// CUDA C kernels from source take the CUDA adapter's launch block last
/// (the global offset CUDA lacks, and a status word: docs/cuda.md).
const CUDA_C: &str = "struct ur_launch { unsigned long long offset[3]; unsigned int *status; };\n\
    extern \"C\" __global__ void scale(unsigned *data, unsigned factor, struct ur_launch launch) {\n\
    data[launch.offset[0] + blockIdx.x * blockDim.x + threadIdx.x] *= factor; }";

fn main() -> Result<()> {
    cmdbuf::init_logging()?;
    let bundle = ProgramBundle::new()
        .kernel(KernelSignature::new("scale", [ArgKind::Global, ArgKind::Value(4)]))
        .source(ProgramSource::Native(vec![NativeKernel::new("scale", scale)]))
        .source(ProgramSource::OpenClC(OPENCL_C.into()))
        .source(ProgramSource::CudaC(CUDA_C.into()));
    let needed = UpdateCapabilities::KERNEL_ARGUMENTS | UpdateCapabilities::GLOBAL_WORK_SIZE;
    let loader = cmdbuf::load()?;
    let mut skipped = Vec::new();
    for device in loader.devices() {
        if !device.info().command_buffer.update.contains(needed) {
            skipped.push(format!("{device}: no argument and global-size updates"));
            continue;
        }
        let context = Context::new(&device)?;
        match Program::new(&context, &bundle) {
            Ok(program) => return run(&device, &context, &program),
            Err(e) => skipped.push(format!("{device}: {e}")),
        }
    }
    let why = format!("no selected device runs this example: {}", skipped.join("; "));
    Err(UrError::DeviceNotFound(cmdbuf::Detail::msg(why)))
}

fn run(device: &Device, context: &Context, program: &Program) -> Result<()> {
    println!("device {device}: {}", device.info().name);
    let kernel = Kernel::new(program, "scale")?;
    let queue = Queue::new(context, QueueProperties::default())?;
    let data = queue.clone_htod(&[1u32; N])?;
    let desc = CommandBufferDesc { updatable: true, ..CommandBufferDesc::default() };
    let cb = CommandBuffer::new(context, device, desc)?;
    let factor = 2u32;
    let args = [KernelArg::Pointer(data.ptr()), KernelArg::value(&factor)];
    // SAFETY: `data` holds N u32s and outlives every replay below.
    let launch =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
    cb.finalize()?;
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    assert_eq!(queue.clone_dtoh::<u32>(&data, &[])?, [2; N]);

    // The same command, now tripling only the first half.
    let command = launch.command.expect("an updatable buffer returns command handles");
    let factor = 3u32;
    let update = KernelLaunchUpdate::new(&command).arg(1, KernelArg::value(&factor)).global_size(&[N / 2]);
    // SAFETY: as above; N/2 items stay inside `data`.
    unsafe { cb.update_kernel_launches(&[update])? };
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let out = queue.clone_dtoh::<u32>(&data, &[])?;
    assert_eq!((out[0], out[N / 2 - 1], out[N / 2], out[N - 1]), (6, 6, 2, 2));
    println!("ok: argument and global size updated in place, replays checked");
    Ok(())
}
