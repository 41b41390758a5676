//! Updates of kernel arguments (and the global size riding along), from UR's
//! `update/buffer_fill_kernel_update.cpp`, `update/buffer_saxpy_kernel_update.cpp`,
//! `update/usm_fill_kernel_update.cpp`, `update/usm_saxpy_kernel_update.cpp`
//! and `update/enqueue_update.cpp`.
//!
//! UR reads results through shared USM; these cases use device USM and
//! queue reads, so they need no shared USM.

use cmdbuf::{
    AppendOptions, Appended, CommandBuffer, CommandHandle, Event, KernelArg, KernelLaunch, KernelLaunchUpdate,
    LocalSizeUpdate, Queue, UpdateCapabilities, UsmAllocation, UsmKind,
};

use crate::harness::{CaseError, CaseResult, Env, read, read_buffer, write};
use crate::kernels::saxpy_reference;
use crate::{Requires, cases, check, check_eq};

const ARGS: Requires = Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS);

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["update";
        kernel_args => ARGS,
        buffer_fill_parameters => ARGS,
        buffer_fill_global_size => Requires::UPDATABLE,
        buffer_fill_separate_updates => Requires::UPDATABLE,
        buffer_fill_override_update => ARGS,
        buffer_fill_override_arg_list => ARGS,
        buffer_saxpy_parameters => ARGS,
        usm_fill_parameters => Requires::UPDATABLE,
        usm_fill_update_before_enqueue => ARGS,
        usm_fill_null_pointer => ARGS,
        usm_fill_all_kernels => ARGS,
        usm_saxpy_parameters => ARGS,
        usm_saxpy_multi_parameters => ARGS,
        usm_saxpy_no_new_kernel => ARGS,
        usm_saxpy_without_blocking => ARGS,
        enqueue_serialize_across_queues => ARGS,
        enqueue_serialize_out_of_order => ARGS.and(Requires::OUT_OF_ORDER),
    ]
}

/// Global size of UR's fill and saxpy fixtures.
const N: usize = 32;
/// Their local size.
const LOCAL: usize = 4;
/// Their fill value and saxpy factor.
const VAL: u32 = 42;
/// The value UR's updates switch to.
const NEW_VAL: u32 = 33;

/// The handle an updatable buffer must return for every append.
pub(in crate::cases) fn handle_of(appended: Appended) -> Result<CommandHandle, CaseError> {
    appended.command.ok_or_else(|| CaseError::Fail("an updatable command buffer returned no handle".into()))
}

/// Enqueues and waits for this submission.
fn run(queue: &Queue, cb: &CommandBuffer) -> CaseResult {
    queue.enqueue_command_buffer(cb, &[])?.wait()?;
    Ok(())
}

/// `n` distinct values per `seed`.
fn values(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2654435761).wrapping_add(seed.wrapping_mul(97)) % 1000).collect()
}

/// A device allocation holding `data`.
fn usm_with(env: &Env, queue: &Queue, data: &[u32]) -> Result<UsmAllocation, CaseError> {
    let alloc = env.usm_u32(data.len())?;
    write(queue, alloc.ptr(), data)?;
    Ok(alloc)
}

/// An event that completes after a fill of 32 MiB: holds a submission back
/// long enough that updates made right after it is enqueued happen while it
/// is still waiting.
fn slow_event(env: &Env) -> Result<(Event, UsmAllocation, Queue), CaseError> {
    const BYTES: usize = 32 << 20;
    let queue = env.queue()?;
    let scratch = env.usm(UsmKind::Device, BYTES)?;
    let event = queue.usm_fill(scratch.ptr(), &[0x5A; 4], BYTES, &[])?;
    Ok((event, scratch, queue))
}

/// Updates a pointer and a value argument between two runs: each run uses the
/// arguments current at its enqueue.
fn kernel_args(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let (src0, src1) = (values(N, 1), values(N, 2));
    let (s0, s1) = (usm_with(env, &queue, &src0)?, usm_with(env, &queue, &src1)?);
    let (d0, d1) = (usm_with(env, &queue, &[0; N])?, usm_with(env, &queue, &[0; N])?);
    let kernel = env.kernel("copy_add")?;
    let k0 = 5u32;
    let args = [KernelArg::Pointer(d0.ptr()), KernelArg::Pointer(s0.ptr()), KernelArg::value(&k0)];
    let cb = env.updatable_command_buffer()?;
    // SAFETY: copy_add over 32 items reads and writes 32-u32 allocations.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[N], &args), &[], AppendOptions::new())?
    })?;
    cb.finalize()?;
    run(&queue, &cb)?;
    let first: Vec<u32> = src0.iter().map(|v| v + k0).collect();
    check_eq!(read::<u32>(&queue, d0.ptr(), N)?, first);

    let k1 = 100u32;
    // SAFETY: the new allocations have 32 u32s, as the launch covers.
    unsafe {
        cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle)
            .arg(0, KernelArg::Pointer(d1.ptr()))
            .arg(1, KernelArg::Pointer(s1.ptr()))
            .arg(2, KernelArg::value(&k1))])?
    };
    run(&queue, &cb)?;
    let second: Vec<u32> = src1.iter().map(|v| v + k1).collect();
    check_eq!(read::<u32>(&queue, d1.ptr(), N)?, second);
    check_eq!(read::<u32>(&queue, d0.ptr(), N)?, first, "the second run wrote the old destination");
    Ok(())
}

/// UR's buffer-fill fixture: `fill` over a memory buffer of 32 u32s, local
/// size 4, value 42, run once and checked.
struct BufferFill {
    queue: Queue,
    cb: CommandBuffer,
    handle: CommandHandle,
    buffer: cmdbuf::MemBuffer,
}

fn buffer_fill(env: &Env) -> Result<BufferFill, CaseError> {
    let queue = env.queue()?;
    let buffer = env.buffer_with(&[0u32; N])?;
    let kernel = env.kernel("fill")?;
    let cb = env.updatable_command_buffer()?;
    let args = [KernelArg::MemObj(&buffer), KernelArg::value(&VAL)];
    // SAFETY: fill writes 32 u32s into a 32-u32 buffer.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    run(&queue, &cb)?;
    check_eq!(read_buffer::<u32>(&queue, &buffer, 0, N)?, vec![VAL; N]);
    Ok(BufferFill { queue, cb, handle, buffer })
}

/// UR's `BufferFillCommandTest.UpdateParameters`: new buffer and new value.
fn buffer_fill_parameters(env: &Env) -> CaseResult {
    let f = buffer_fill(env)?;
    let new_buffer = env.buffer_with(&[0u32; N])?;
    // SAFETY: the new buffer has the 32 u32s the launch writes.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .arg(0, KernelArg::MemObj(&new_buffer))
            .arg(1, KernelArg::value(&NEW_VAL))])?
    };
    run(&f.queue, &f.cb)?;
    check_eq!(read_buffer::<u32>(&f.queue, &new_buffer, 0, N)?, vec![NEW_VAL; N]);
    Ok(())
}

/// UR's `UpdateGlobalSize`: a twice larger buffer and global size.
fn buffer_fill_global_size(env: &Env) -> CaseResult {
    let f = buffer_fill(env)?;
    let new_buffer = env.buffer_with(&[0u32; 2 * N])?;
    // SAFETY: 64 items write a 64-u32 buffer.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .arg(0, KernelArg::MemObj(&new_buffer))
            .global_size(&[2 * N])
            .local_size(LocalSizeUpdate::Set(&[LOCAL]))])?
    };
    run(&f.queue, &f.cb)?;
    check_eq!(read_buffer::<u32>(&f.queue, &new_buffer, 0, 2 * N)?, vec![VAL; 2 * N]);
    Ok(())
}

/// UR's `SeparateUpdateCalls`: buffer, value and global size in three calls
/// accumulate.
fn buffer_fill_separate_updates(env: &Env) -> CaseResult {
    let f = buffer_fill(env)?;
    let new_buffer = env.buffer_with(&[0u32; 2 * N])?;
    // SAFETY: the buffer has 64 u32s, enough for the 64 items set last; the
    // buffer is only run after all three updates.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle).arg(0, KernelArg::MemObj(&new_buffer))])?;
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&NEW_VAL))])?;
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .global_size(&[2 * N])
            .local_size(LocalSizeUpdate::Set(&[LOCAL]))])?;
    }
    run(&f.queue, &f.cb)?;
    check_eq!(read_buffer::<u32>(&f.queue, &new_buffer, 0, 2 * N)?, vec![NEW_VAL; 2 * N]);
    check_eq!(
        read_buffer::<u32>(&f.queue, &f.buffer, 0, N)?,
        vec![VAL; N],
        "the original buffer was written after its replacement"
    );
    Ok(())
}

/// UR's `OverrideUpdate`: the second update of the same argument wins.
fn buffer_fill_override_update(env: &Env) -> CaseResult {
    let f = buffer_fill(env)?;
    let second = (-99i32) as u32;
    // SAFETY: only the fill value changes.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&NEW_VAL))])?;
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&second))])?;
    }
    run(&f.queue, &f.cb)?;
    check_eq!(read_buffer::<u32>(&f.queue, &f.buffer, 0, N)?, vec![second; N]);
    Ok(())
}

/// UR's `OverrideArgList`: an index given twice in one update, last wins.
fn buffer_fill_override_arg_list(env: &Env) -> CaseResult {
    let f = buffer_fill(env)?;
    let second = (-99i32) as u32;
    // SAFETY: only the fill value changes.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .arg(1, KernelArg::value(&NEW_VAL))
            .arg(1, KernelArg::value(&second))])?
    };
    run(&f.queue, &f.cb)?;
    check_eq!(read_buffer::<u32>(&f.queue, &f.buffer, 0, N)?, vec![second; N]);
    Ok(())
}

/// UR's `BufferSaxpyKernelTest.UpdateParameters`: new X and Y buffers and a
/// new factor, output buffer kept.
fn buffer_saxpy_parameters(env: &Env) -> CaseResult {
    let queue = env.queue()?;
    let data: Vec<Vec<u32>> = (0..5).map(|s| values(N, 10 + s)).collect();
    let bufs = data.iter().map(|d| env.buffer_with(d)).collect::<Result<Vec<_>, _>>()?;
    let kernel = env.kernel("saxpy")?;
    let args =
        [KernelArg::MemObj(&bufs[0]), KernelArg::value(&VAL), KernelArg::MemObj(&bufs[1]), KernelArg::MemObj(&bufs[2])];
    let cb = env.updatable_command_buffer()?;
    // SAFETY: saxpy over 32 items on 32-u32 buffers.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    run(&queue, &cb)?;
    check_eq!(read_buffer::<u32>(&queue, &bufs[0], 0, N)?, saxpy_reference(VAL, &data[1], &data[2]));
    // SAFETY: the new X and Y buffers have 32 u32s.
    unsafe {
        cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle)
            .arg(2, KernelArg::MemObj(&bufs[3]))
            .arg(3, KernelArg::MemObj(&bufs[4]))
            .arg(1, KernelArg::value(&NEW_VAL))])?
    };
    run(&queue, &cb)?;
    check_eq!(read_buffer::<u32>(&queue, &bufs[0], 0, N)?, saxpy_reference(NEW_VAL, &data[3], &data[4]));
    Ok(())
}

/// UR's USM fill fixture: `fill` of 32 items, local size 4, value 42, into a
/// 32-u32 allocation. Not run yet.
struct UsmFill {
    queue: Queue,
    cb: CommandBuffer,
    handle: CommandHandle,
    out: UsmAllocation,
}

fn usm_fill(env: &Env) -> Result<UsmFill, CaseError> {
    let queue = env.queue()?;
    let out = usm_with(env, &queue, &[0; N])?;
    let kernel = env.kernel("fill")?;
    let cb = env.updatable_command_buffer()?;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&VAL)];
    // SAFETY: fill writes 32 u32s into a 32-u32 allocation.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    Ok(UsmFill { queue, cb, handle, out })
}

/// UR's `USMFillCommandTest.UpdateParameters`: new pointer, value and a
/// twice larger global size.
fn usm_fill_parameters(env: &Env) -> CaseResult {
    let f = usm_fill(env)?;
    run(&f.queue, &f.cb)?;
    check_eq!(read::<u32>(&f.queue, f.out.ptr(), N)?, vec![VAL; N]);
    let new_out = usm_with(env, &f.queue, &[0; 2 * N])?;
    // SAFETY: 64 items write a 64-u32 allocation.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .arg(0, KernelArg::Pointer(new_out.ptr()))
            .arg(1, KernelArg::value(&NEW_VAL))
            .global_size(&[2 * N])
            .local_size(LocalSizeUpdate::Set(&[LOCAL]))])?
    };
    run(&f.queue, &f.cb)?;
    check_eq!(read::<u32>(&f.queue, new_out.ptr(), 2 * N)?, vec![NEW_VAL; 2 * N]);
    check_eq!(read::<u32>(&f.queue, f.out.ptr(), N)?, vec![VAL; N]);
    Ok(())
}

/// UR's `UpdateBeforeEnqueue`: the first run already uses the update.
fn usm_fill_update_before_enqueue(env: &Env) -> CaseResult {
    let f = usm_fill(env)?;
    let new_out = usm_with(env, &f.queue, &[0; N])?;
    // SAFETY: the new allocation has the 32 u32s the launch writes.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .arg(0, KernelArg::Pointer(new_out.ptr()))
            .arg(1, KernelArg::value(&NEW_VAL))])?
    };
    run(&f.queue, &f.cb)?;
    check_eq!(read::<u32>(&f.queue, new_out.ptr(), N)?, vec![NEW_VAL; N]);
    check_eq!(read::<u32>(&f.queue, f.out.ptr(), N)?, vec![0; N], "the original pointer was written");
    Ok(())
}

/// UR's `UpdateNull`: a null pointer argument is accepted. The buffer is not
/// run with it (the kernel would dereference it); a later update to a real
/// allocation must then take effect.
fn usm_fill_null_pointer(env: &Env) -> CaseResult {
    let f = usm_fill(env)?;
    run(&f.queue, &f.cb)?;
    check_eq!(read::<u32>(&f.queue, f.out.ptr(), N)?, vec![VAL; N]);
    // SAFETY: the buffer is not enqueued while the pointer is null.
    unsafe {
        f.cb.update_kernel_launches(&[
            KernelLaunchUpdate::new(&f.handle).arg(0, KernelArg::Pointer(cmdbuf::UsmPtr::NULL))
        ])?
    };
    let new_out = usm_with(env, &f.queue, &[0; N])?;
    let v = 7u32;
    // SAFETY: the new allocation has the 32 u32s the launch writes.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle)
            .arg(0, KernelArg::Pointer(new_out.ptr()))
            .arg(1, KernelArg::value(&v))])?
    };
    run(&f.queue, &f.cb)?;
    check_eq!(read::<u32>(&f.queue, new_out.ptr(), N)?, vec![v; N]);
    Ok(())
}

/// UR's `USMMultipleFillCommandTest.UpdateAllKernels`: eight fills into
/// consecutive slices of one allocation, each moved to the same slice of a
/// new allocation with a new value, one update call per command.
fn usm_fill_all_kernels(env: &Env) -> CaseResult {
    const KERNELS: usize = 8;
    const TOTAL: usize = 64;
    const PER: usize = TOTAL / KERNELS;
    let queue = env.queue()?;
    let out = usm_with(env, &queue, &[0; TOTAL])?;
    let kernel = env.kernel("fill")?;
    let cb = env.updatable_command_buffer()?;
    let mut handles = Vec::new();
    for k in 0..KERNELS {
        let v = VAL + k as u32;
        let args = [KernelArg::Pointer(out.ptr().byte_add(k * PER * 4)), KernelArg::value(&v)];
        // SAFETY: 8 items write slice k (8 u32s) of the 64-u32 allocation.
        handles.push(handle_of(unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&kernel, &[PER], &args).local_size(&[LOCAL]),
                &[],
                AppendOptions::new(),
            )?
        })?);
    }
    cb.finalize()?;
    run(&queue, &cb)?;
    let expected = |base: u32| -> Vec<u32> { (0..TOTAL).map(|i| base + (i / PER) as u32).collect() };
    check_eq!(read::<u32>(&queue, out.ptr(), TOTAL)?, expected(VAL));
    let new_out = usm_with(env, &queue, &[0; TOTAL])?;
    for (k, handle) in handles.iter().enumerate() {
        let v = NEW_VAL + k as u32;
        // SAFETY: slice k of the new 64-u32 allocation holds the 8 items.
        unsafe {
            cb.update_kernel_launches(&[KernelLaunchUpdate::new(handle)
                .arg(0, KernelArg::Pointer(new_out.ptr().byte_add(k * PER * 4)))
                .arg(1, KernelArg::value(&v))])?
        };
    }
    run(&queue, &cb)?;
    check_eq!(read::<u32>(&queue, new_out.ptr(), TOTAL)?, expected(NEW_VAL));
    check_eq!(read::<u32>(&queue, out.ptr(), TOTAL)?, expected(VAL));
    Ok(())
}

/// UR's USM saxpy fixture: Z, X, Y and the replacements X', Y', with `nodes`
/// saxpy commands over consecutive 32-item slices (by global offset).
struct UsmSaxpy {
    queue: Queue,
    cb: CommandBuffer,
    handles: Vec<CommandHandle>,
    kernel: cmdbuf::Kernel,
    z: UsmAllocation,
    x: [UsmAllocation; 2],
    y: [UsmAllocation; 2],
    xs: [Vec<u32>; 2],
    ys: [Vec<u32>; 2],
    len: usize,
}

fn usm_saxpy(env: &Env, nodes: usize) -> Result<UsmSaxpy, CaseError> {
    let len = nodes * N;
    let queue = env.queue()?;
    let xs = [values(len, 21), values(len, 22)];
    let ys = [values(len, 23), values(len, 24)];
    let z = usm_with(env, &queue, &vec![0; len])?;
    let x = [usm_with(env, &queue, &xs[0])?, usm_with(env, &queue, &xs[1])?];
    let y = [usm_with(env, &queue, &ys[0])?, usm_with(env, &queue, &ys[1])?];
    let kernel = env.kernel("saxpy")?;
    let args = [
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&VAL),
        KernelArg::Pointer(x[0].ptr()),
        KernelArg::Pointer(y[0].ptr()),
    ];
    let cb = env.updatable_command_buffer()?;
    let mut handles = Vec::new();
    for node in 0..nodes {
        let offset = [node * N];
        // SAFETY: node k covers global ids k*32 .. k*32+32 of allocations of
        // nodes*32 u32s.
        handles.push(handle_of(unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]).global_offset(&offset),
                &[],
                AppendOptions::new(),
            )?
        })?);
    }
    cb.finalize()?;
    Ok(UsmSaxpy { queue, cb, handles, kernel, z, x, y, xs, ys, len })
}

impl UsmSaxpy {
    fn check(&self, a: u32, which: usize) -> CaseResult {
        check_eq!(
            read::<u32>(&self.queue, self.z.ptr(), self.len)?,
            saxpy_reference(a, &self.xs[which], &self.ys[which])
        );
        Ok(())
    }

    /// New X, Y and factor for every command, in one call.
    fn update_inputs(&self, a: &u32) -> CaseResult {
        let updates: Vec<_> = self
            .handles
            .iter()
            .map(|h| {
                KernelLaunchUpdate::new(h)
                    .arg(2, KernelArg::Pointer(self.x[1].ptr()))
                    .arg(3, KernelArg::Pointer(self.y[1].ptr()))
                    .arg(1, KernelArg::value(a))
            })
            .collect();
        // SAFETY: X' and Y' have the same size as X and Y.
        unsafe { self.cb.update_kernel_launches(&updates)? };
        Ok(())
    }
}

/// UR's `USMSaxpyKernelTest.UpdateParameters`, naming the command's own
/// kernel in the update (not a switch).
fn usm_saxpy_parameters(env: &Env) -> CaseResult {
    let f = usm_saxpy(env, 1)?;
    run(&f.queue, &f.cb)?;
    f.check(VAL, 0)?;
    // SAFETY: X' and Y' have 32 u32s.
    unsafe {
        f.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handles[0])
            .kernel(&f.kernel)
            .arg(2, KernelArg::Pointer(f.x[1].ptr()))
            .arg(3, KernelArg::Pointer(f.y[1].ptr()))
            .arg(1, KernelArg::value(&NEW_VAL))])?
    };
    run(&f.queue, &f.cb)?;
    f.check(NEW_VAL, 1)
}

/// UR's `USMMultiSaxpyKernelTest.UpdateParameters`: many commands updated
/// in one call.
fn usm_saxpy_multi_parameters(env: &Env) -> CaseResult {
    let f = usm_saxpy(env, 64)?;
    run(&f.queue, &f.cb)?;
    f.check(VAL, 0)?;
    f.update_inputs(&NEW_VAL)?;
    run(&f.queue, &f.cb)?;
    f.check(NEW_VAL, 1)
}

/// UR's `UpdateNullptrKernel`: updates without a new kernel keep the kernel.
fn usm_saxpy_no_new_kernel(env: &Env) -> CaseResult {
    let f = usm_saxpy(env, 64)?;
    run(&f.queue, &f.cb)?;
    f.check(VAL, 0)?;
    let updates: Vec<_> =
        f.handles.iter().map(|h| KernelLaunchUpdate::new(h).arg(1, KernelArg::value(&NEW_VAL))).collect();
    check!(updates.iter().all(|u| u.new_kernel.is_none()));
    // SAFETY: only the factor changes.
    unsafe { f.cb.update_kernel_launches(&updates)? };
    run(&f.queue, &f.cb)?;
    f.check(NEW_VAL, 0)
}

/// UR's `UpdateWithoutBlocking`: an update made while a submission waits
/// does not reach it; the next submission gets it. The output moves too, so
/// both submissions' results stay visible.
fn usm_saxpy_without_blocking(env: &Env) -> CaseResult {
    let f = usm_saxpy(env, 16)?;
    let z1 = usm_with(env, &f.queue, &vec![0; f.len])?;
    let (slow, _scratch, _slow_queue) = slow_event(env)?;
    let first = f.queue.enqueue_command_buffer(&f.cb, &[&slow])?;
    let updates: Vec<_> = f
        .handles
        .iter()
        .map(|h| {
            KernelLaunchUpdate::new(h)
                .arg(0, KernelArg::Pointer(z1.ptr()))
                .arg(2, KernelArg::Pointer(f.x[1].ptr()))
                .arg(3, KernelArg::Pointer(f.y[1].ptr()))
                .arg(1, KernelArg::value(&NEW_VAL))
        })
        .collect();
    // SAFETY: Z', X' and Y' have the size of Z, X and Y.
    unsafe { f.cb.update_kernel_launches(&updates)? };
    let second = f.queue.enqueue_command_buffer(&f.cb, &[])?;
    Event::wait_all(&[&first, &second])?;
    f.check(VAL, 0)?;
    check_eq!(read::<u32>(&f.queue, z1.ptr(), f.len)?, saxpy_reference(NEW_VAL, &f.xs[1], &f.ys[1]));
    Ok(())
}

/// UR's `urUpdatableEnqueueCommandBufferExpTest` fixture: `cpy_and_mult`
/// (DST = SRC * 2) from X into Y; the update makes it Y into Z.
struct CopyMult {
    cb: CommandBuffer,
    handle: CommandHandle,
    x: UsmAllocation,
    y: UsmAllocation,
    z: UsmAllocation,
}

const CM_N: usize = 4096;

fn copy_mult(env: &Env, queue: &Queue) -> Result<CopyMult, CaseError> {
    let xs: Vec<u32> = (0..CM_N as u32).collect();
    let x = usm_with(env, queue, &xs)?;
    let y = usm_with(env, queue, &[0; CM_N])?;
    let z = usm_with(env, queue, &[0; CM_N])?;
    let kernel = env.kernel("cpy_and_mult")?;
    let args = [KernelArg::Pointer(y.ptr()), KernelArg::Pointer(x.ptr())];
    let cb = env.updatable_command_buffer()?;
    // SAFETY: 4096 items on 4096-u32 allocations.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(&KernelLaunch::new(&kernel, &[CM_N], &args), &[], AppendOptions::new())?
    })?;
    cb.finalize()?;
    Ok(CopyMult { cb, handle, x, y, z })
}

impl CopyMult {
    fn update(&self) -> CaseResult {
        // SAFETY: Y and Z have the 4096 u32s of X.
        unsafe {
            self.cb.update_kernel_launches(&[KernelLaunchUpdate::new(&self.handle)
                .arg(0, KernelArg::Pointer(self.z.ptr()))
                .arg(1, KernelArg::Pointer(self.y.ptr()))])?
        };
        Ok(())
    }

    /// The second submission read what the first wrote.
    fn check(&self, queue: &Queue) -> CaseResult {
        let xs = read::<u32>(queue, self.x.ptr(), CM_N)?;
        let ys: Vec<u32> = xs.iter().map(|v| v * 2).collect();
        let zs: Vec<u32> = xs.iter().map(|v| v * 4).collect();
        check_eq!(read::<u32>(queue, self.y.ptr(), CM_N)?, ys);
        check_eq!(read::<u32>(queue, self.z.ptr(), CM_N)?, zs, "the second submission did not run after the first");
        Ok(())
    }
}

/// UR's `SerializeAcrossQueues`: the second submission, on another in-order
/// queue and with new arguments, runs after the first, which is held back.
fn enqueue_serialize_across_queues(env: &Env) -> CaseResult {
    let (q1, q2) = (env.queue()?, env.queue()?);
    let f = copy_mult(env, &q1)?;
    let (slow, _scratch, _slow_queue) = slow_event(env)?;
    q1.enqueue_command_buffer(&f.cb, &[&slow])?;
    f.update()?;
    q2.enqueue_command_buffer(&f.cb, &[])?;
    q1.flush()?;
    q2.finish()?;
    q1.finish()?;
    f.check(&q2)
}

/// UR's `SerializeOutofOrderQueue`: both submissions on one out-of-order
/// queue still run in submission order.
fn enqueue_serialize_out_of_order(env: &Env) -> CaseResult {
    let queue = env.ooo_queue()?;
    let f = copy_mult(env, &queue)?;
    let (slow, _scratch, _slow_queue) = slow_event(env)?;
    queue.enqueue_command_buffer(&f.cb, &[&slow])?;
    f.update()?;
    queue.enqueue_command_buffer(&f.cb, &[])?;
    queue.finish()?;
    f.check(&queue)
}
