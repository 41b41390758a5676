//! 16 threads over two contexts of one device, submitting command buffers
//! that launch the same kernel (`increment`, each thread on its own target)
//! and waiting for some submissions. Regression: on PoCL before 7.0 the OpenCL adapter chains the
//! launches of one kernel name process-wide (see `adapter-opencl`'s
//! `one_launch`) and put the other context's last launch in the wait list,
//! so the launch failed with `CL_INVALID_CONTEXT` (found by the fault sweep,
//! whose trials each make a context on the same device).

use std::sync::Arc;

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, Context, Kernel, KernelArg, KernelLaunch, Program, Queue,
    QueueProperties, UsmAllocation,
};

use crate::support::{Failure, Fixture, on_threads, per_fixture, read_u32, usm_with};
use crate::{ROUNDS, THREADS};

const N: usize = 1024;

/// Per context: its queue, the targets of the threads that use it and a
/// command buffer per target.
struct Side {
    queue: Queue,
    targets: Vec<UsmAllocation>,
    buffers: Vec<CommandBuffer>,
    _program: Program,
    _context: Context,
}

fn sides(fx: &Arc<Fixture>) -> Result<Arc<[Side; 2]>, Failure> {
    per_fixture(fx, || {
        let first = side(fx, fx.context.clone(), fx.program.clone())?;
        let context = Context::new(&fx.device)?;
        let program = Program::new(&context, &cmdbuf_conformance::kernels::bundle())?;
        let second = side(fx, context, program)?;
        Ok([first, second])
    })
}

fn side(fx: &Fixture, context: Context, program: Program) -> Result<Side, Failure> {
    let queue = Queue::new(&context, QueueProperties::default())?;
    let setup =
        Fixture { device: fx.device.clone(), context: context.clone(), queue: queue.clone(), program: program.clone() };
    let targets = (0..THREADS / 2).map(|_| usm_with(&setup, &[0; N])).collect::<cmdbuf::Result<Vec<_>>>()?;
    let kernel = Kernel::new(&program, "increment")?;
    let buffers = targets
        .iter()
        .map(|target| -> cmdbuf::Result<CommandBuffer> {
            let cb = CommandBuffer::new(&context, &fx.device, CommandBufferDesc::default())?;
            let arg = [KernelArg::Pointer(target.ptr())];
            // SAFETY: increment over N items of an N-u32 target.
            unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &arg), &[], AppendOptions::new())? };
            cb.finalize()?;
            Ok(cb)
        })
        .collect::<cmdbuf::Result<Vec<_>>>()?;
    Ok(Side { queue, targets, buffers, _program: program, _context: context })
}

/// One repetition: every thread launches `increment` on its target
/// [`ROUNDS`] times in its context, waiting for every other launch.
pub fn repetition(fx: &Arc<Fixture>, repetition: usize) -> Result<(), Failure> {
    let sides = sides(fx)?;
    on_threads(THREADS, |t| {
        let side = &sides[t % 2];
        for round in 0..ROUNDS {
            let event = side.queue.enqueue_command_buffer(&side.buffers[t / 2], &[])?;
            if (t + round) % 2 == 0 {
                event.wait()?;
            }
        }
        Ok(())
    })?;
    for side in sides.iter() {
        side.queue.finish()?;
    }
    let want = vec![((repetition + 1) * ROUNDS) as u32; N];
    for (i, side) in sides.iter().enumerate() {
        for (j, target) in side.targets.iter().enumerate() {
            let got = read_u32(&side.queue, target.ptr(), N)?;
            if got != want {
                return Err(Failure::Wrong(format!("context {i}, target {j}: {:?}, want {}", &got[..4], want[0])));
            }
        }
    }
    Ok(())
}
