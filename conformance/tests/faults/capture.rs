//! Scenario (c): UR graph capture of a queue's commands, instantiated and
//! enqueued twice.

use cmdbuf::{Kernel, KernelArg, KernelLaunch};

use crate::expect_eq;
use crate::support::{Failure, Fixture, read_u32, usm_with};

const N: usize = 64;

/// Captures a fill, a copy and a kernel on the fixture's queue, then
/// instantiates the graph and enqueues it twice with new inputs.
pub fn scenario(fx: &Fixture) -> Result<(), Failure> {
    let (src, dst) = (usm_with(fx, &[0; N])?, usm_with(fx, &[0; N])?);
    let increment = Kernel::new(&fx.program, "increment")?;
    let q = &fx.queue;
    q.begin_capture()?;
    let captured = (|| -> cmdbuf::Result<()> {
        q.usm_fill(dst.ptr(), &9u32.to_le_bytes(), N * 2, &[])?;
        q.usm_memcpy(dst.ptr().byte_add(N * 2), src.ptr(), N * 2, &[])?;
        // SAFETY: increment over N items of the N-u32 allocation `dst`.
        unsafe { q.launch_kernel(&KernelLaunch::new(&increment, &[N], &[KernelArg::Pointer(dst.ptr())]), &[])? };
        Ok(())
    })();
    // A capture is ended whatever happened in it, as a program must: a
    // queue left capturing could not be used again.
    let graph = q.end_capture();
    captured?;
    let exec = graph?.instantiate()?;
    for run in 0..2u32 {
        let input: Vec<u32> = (0..N as u32).map(|i| i * 5 + run).collect();
        q.write_usm(src.ptr(), bytemuck::cast_slice(&input), &[])?;
        q.enqueue_graph(&exec, &[])?.wait()?;
        let mut want = vec![10u32; N / 2];
        want.extend(input[..N / 2].iter().map(|x| x + 1));
        expect_eq!(read_u32(q, dst.ptr(), N)?, want, "run {run}");
    }
    Ok(())
}
