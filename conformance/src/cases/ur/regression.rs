//! Regressions (UR's `regression/usm_copy.cpp`, from SYCL-Graph's
//! `RecordReplay/usm_copy_in_order`): an in-order command buffer chaining
//! saxpy kernels with device-to-device and device-to-"host" copies, submitted
//! right after an eager saxpy it depends on.

use cmdbuf::{AppendOptions, CommandBuffer, CommandBufferDesc, Event, KernelArg, KernelLaunch, Queue, UsmAllocation};

use super::event_sync::gate;
use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{cases, check_eq};

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["regression";
        usm_copy_in_order,
        usm_copy_in_order_replay,
        usm_copy_in_order_other_queue,
    ]
}

const N: usize = 10;
const A: u32 = 42;

/// Four allocations holding their index everywhere, and one for the result.
struct Memory {
    d: [UsmAllocation; 4],
    out: UsmAllocation,
}

impl Memory {
    fn new(env: &Env) -> Result<Memory, CaseError> {
        let setup = env.queue()?;
        let alloc = |value: u32| -> Result<UsmAllocation, CaseError> {
            let mem = env.usm_u32(N)?;
            write(&setup, mem.ptr(), &[value; N])?;
            Ok(mem)
        };
        Ok(Memory { d: [alloc(0)?, alloc(1)?, alloc(2)?, alloc(3)?], out: alloc(0xDEAD)? })
    }

    /// Launches `D0 = A * D1 + D2` eagerly on `queue` after `wait`.
    fn eager_saxpy(&self, env: &Env, queue: &Queue, wait: &[&Event]) -> Result<Event, CaseError> {
        let kernel = env.kernel("saxpy")?;
        let args = [
            KernelArg::Pointer(self.d[0].ptr()),
            KernelArg::value(&A),
            KernelArg::Pointer(self.d[1].ptr()),
            KernelArg::Pointer(self.d[2].ptr()),
        ];
        // SAFETY: N work-items over N-element allocations, which the cases
        // keep alive until their queues have finished.
        Ok(unsafe { queue.launch_kernel(&KernelLaunch::new(&kernel, &[N], &args), wait)? })
    }

    /// The in-order buffer, passing stale or no sync points as UR's test
    /// does (an in-order buffer orders by append order alone):
    /// `D3 = A*D1 + D0; D1 = D3; D3 = A*D1 + D0; D2 = D3; out = D2`.
    fn record(&self, env: &Env) -> Result<CommandBuffer, CaseError> {
        let cb = env.command_buffer(CommandBufferDesc { in_order: true, ..Default::default() })?;
        let kernel = env.kernel("saxpy")?;
        let args = [
            KernelArg::Pointer(self.d[3].ptr()),
            KernelArg::value(&A),
            KernelArg::Pointer(self.d[1].ptr()),
            KernelArg::Pointer(self.d[0].ptr()),
        ];
        let launch = KernelLaunch::new(&kernel, &[N], &args);
        let bytes = N * 4;
        // SAFETY: N work-items over N-element allocations, which the cases
        // keep alive until their queues have finished.
        let first = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new())? };
        let copy = cb.append_usm_memcpy(self.d[1].ptr(), self.d[3].ptr(), bytes, AppendOptions::new())?;
        // SAFETY: as above.
        let second = unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new().after(&[copy.sync_point]))? };
        let copy = cb.append_usm_memcpy(
            self.d[2].ptr(),
            self.d[3].ptr(),
            bytes,
            AppendOptions::new().after(&[second.sync_point]),
        )?;
        cb.append_usm_memcpy(
            self.out.ptr(),
            self.d[2].ptr(),
            bytes,
            AppendOptions::new().after(&[first.sync_point, copy.sync_point]),
        )?;
        cb.finalize()?;
        Ok(cb)
    }
}

/// The host model of the eager kernel followed by `runs` submissions:
/// returns `out`.
fn model(runs: usize) -> u32 {
    let mut d = [0u32, 1, 2, 3];
    d[0] = A.wrapping_mul(d[1]).wrapping_add(d[2]);
    for _ in 0..runs {
        d[3] = A.wrapping_mul(d[1]).wrapping_add(d[0]);
        d[1] = d[3];
        d[3] = A.wrapping_mul(d[1]).wrapping_add(d[0]);
        d[2] = d[3];
    }
    d[2]
}

/// UR's `Success`: eager saxpy, then the buffer on the same in-order queue.
fn usm_copy_in_order(env: &Env) -> CaseResult {
    let mem = Memory::new(env)?;
    let queue = env.queue()?;
    mem.eager_saxpy(env, &queue, &[])?;
    let cb = mem.record(env)?;
    queue.enqueue_command_buffer(&cb, &[])?;
    queue.finish()?;
    check_eq!(model(1), 3656, "the host model agrees with UR's reference");
    check_eq!(read::<u32>(&queue, mem.out.ptr(), N)?, vec![model(1); N]);
    Ok(())
}

/// The same, replayed: each submission continues from the previous one's
/// D1 and D2.
fn usm_copy_in_order_replay(env: &Env) -> CaseResult {
    let mem = Memory::new(env)?;
    let queue = env.queue()?;
    mem.eager_saxpy(env, &queue, &[])?;
    let cb = mem.record(env)?;
    for _ in 0..3 {
        queue.enqueue_command_buffer(&cb, &[])?;
    }
    queue.finish()?;
    check_eq!(read::<u32>(&queue, mem.out.ptr(), N)?, vec![model(3); N]);
    Ok(())
}

/// The eager saxpy on another queue, held back by a gate: the submission
/// depends on it through its event only.
fn usm_copy_in_order_other_queue(env: &Env) -> CaseResult {
    let mem = Memory::new(env)?;
    let (eager_queue, queue) = (env.queue()?, env.queue()?);
    let held = gate(env, &eager_queue)?;
    let eager = mem.eager_saxpy(env, &eager_queue, &[&held])?;
    let cb = mem.record(env)?;
    queue.enqueue_command_buffer(&cb, &[&eager])?;
    queue.finish()?;
    eager_queue.finish()?;
    check_eq!(read::<u32>(&queue, mem.out.ptr(), N)?, vec![model(1); N]);
    Ok(())
}
