//! Scenario (a): an updatable command buffer built, finalized, enqueued,
//! updated (kernel arguments) and enqueued again.

use cmdbuf::{AppendOptions, CommandBuffer, CommandBufferDesc, Kernel, KernelArg, KernelLaunch, KernelLaunchUpdate};

use crate::expect_eq;
use crate::support::{Failure, Fixture, read_u32, usm_with};

const N: usize = 64;

/// `copy_add(D0, SRC, 5)` then a copy of D0 into D1; run, update to
/// `copy_add(D0, SRC2, 7)`, run again.
pub fn scenario(fx: &Fixture) -> Result<(), Failure> {
    let src: Vec<u32> = (0..N as u32).map(|i| i * 3).collect();
    let src2: Vec<u32> = (0..N as u32).map(|i| 1000 - i).collect();
    let (s, s2) = (usm_with(fx, &src)?, usm_with(fx, &src2)?);
    let (d0, d1) = (usm_with(fx, &[0; N])?, usm_with(fx, &[0; N])?);
    let kernel = Kernel::new(&fx.program, "copy_add")?;
    let cb = CommandBuffer::new(&fx.context, &fx.device, CommandBufferDesc { updatable: true, ..Default::default() })?;
    let k = 5u32;
    let args = [KernelArg::Pointer(d0.ptr()), KernelArg::Pointer(s.ptr()), KernelArg::value(&k)];
    // SAFETY: copy_add over N items reads and writes N-u32 allocations.
    let launch =
        unsafe { cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())? };
    let handle =
        launch.command.ok_or_else(|| Failure::Wrong("an updatable command buffer returned no handle".into()))?;
    cb.append_usm_memcpy(d1.ptr(), d0.ptr(), N * 4, AppendOptions::new().after(&[launch.sync_point]))?;
    cb.finalize()?;
    fx.queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let want: Vec<u32> = src.iter().map(|v| v + k).collect();
    expect_eq!(read_u32(&fx.queue, d1.ptr(), N)?, want, "first run");

    let k2 = 7u32;
    // SAFETY: the new source has N u32s, as the launch covers.
    unsafe {
        cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle)
            .arg(1, KernelArg::Pointer(s2.ptr()))
            .arg(2, KernelArg::value(&k2))])?
    };
    fx.queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let want: Vec<u32> = src2.iter().map(|v| v + k2).collect();
    expect_eq!(read_u32(&fx.queue, d1.ptr(), N)?, want, "run after the update");
    Ok(())
}
