//! Switching a command's kernel, from UR's `update/kernel_handle_update.cpp`:
//! a `saxpy` command with `fill_2d` registered as its alternative.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, CommandHandle, Kernel, KernelArg, KernelLaunch,
    KernelLaunchUpdate, LocalSizeUpdate, Queue, UpdateCapabilities, UsmAllocation,
};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::kernels::saxpy_reference;
use crate::{Requires, cases, check_eq, check_err};

use super::update_args::handle_of;

const HANDLE: Requires = Requires::UPDATABLE.and(Requires::update(UpdateCapabilities::KERNEL_HANDLE));

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["update";
        kernel_handle_switch => HANDLE,
        kernel_handle_update_again => HANDLE,
        kernel_handle_restore_original => HANDLE,
        kernel_handle_multiple_alternatives => HANDLE,
        kernel_handle_not_registered => HANDLE,
        kernel_handle_self_alternative => HANDLE,
        kernel_handle_switch_missing_args => HANDLE,
        kernel_handle_alternatives_not_updatable,
        kernel_handle_dims_without_kernel => Requires::UPDATABLE,
        kernel_handle_only_local_size => HANDLE,
        kernel_handle_no_new_kernel => HANDLE,
    ]
}

/// saxpy: 32 items, local size 4, factor 42.
const N: usize = 32;
const LOCAL: usize = 4;
const A: u32 = 42;
/// fill_2d: 64x64 items, local size 4x4, value 42.
const SIDE: usize = 64;
const FILL_VAL: u32 = 42;

/// The two kernels and their memory, initialised with distinct values.
struct Kernels {
    queue: Queue,
    saxpy: Kernel,
    fill_2d: Kernel,
    z: UsmAllocation,
    x: UsmAllocation,
    y: UsmAllocation,
    xs: Vec<u32>,
    ys: Vec<u32>,
    grid: UsmAllocation,
}

fn kernels(env: &Env) -> Result<Kernels, CaseError> {
    let queue = env.queue()?;
    let xs: Vec<u32> = (0..N as u32).map(|i| i * 3 + 1).collect();
    let ys: Vec<u32> = (0..N as u32).map(|i| 1000 - i).collect();
    let (z, x, y) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    write(&queue, z.ptr(), &[0u32; N])?;
    write(&queue, x.ptr(), &xs)?;
    write(&queue, y.ptr(), &ys)?;
    let grid = env.usm_u32(SIDE * SIDE)?;
    write(&queue, grid.ptr(), &vec![7u32; SIDE * SIDE])?;
    Ok(Kernels { queue, saxpy: env.kernel("saxpy")?, fill_2d: env.kernel("fill_2d")?, z, x, y, xs, ys, grid })
}

impl Kernels {
    /// Appends the saxpy command with these alternatives and finalizes.
    fn saxpy_buffer(&self, env: &Env, alternatives: &[&Kernel]) -> Result<(CommandBuffer, CommandHandle), CaseError> {
        let cb = env.updatable_command_buffer()?;
        let args = [
            KernelArg::Pointer(self.z.ptr()),
            KernelArg::value(&A),
            KernelArg::Pointer(self.x.ptr()),
            KernelArg::Pointer(self.y.ptr()),
        ];
        // SAFETY: saxpy over 32 items on 32-u32 allocations.
        let handle = handle_of(unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&self.saxpy, &[N], &args).local_size(&[LOCAL]),
                alternatives,
                AppendOptions::new(),
            )?
        })?;
        cb.finalize()?;
        Ok((cb, handle))
    }

    fn run(&self, cb: &CommandBuffer) -> CaseResult {
        self.queue.enqueue_command_buffer(cb, &[])?.wait()?;
        Ok(())
    }

    fn check_saxpy(&self, a: u32) -> CaseResult {
        check_eq!(
            read::<u32>(&self.queue, self.z.ptr(), N)?,
            saxpy_reference(a, &self.xs, &self.ys),
            "saxpy with factor {a}"
        );
        Ok(())
    }

    fn check_grid(&self, value: u32) -> CaseResult {
        check_eq!(
            read::<u32>(&self.queue, self.grid.ptr(), SIDE * SIDE)?,
            vec![value; SIDE * SIDE],
            "fill_2d with value {value}"
        );
        Ok(())
    }

    fn reset(&self) -> CaseResult {
        write(&self.queue, self.z.ptr(), &[0u32; N])?;
        write(&self.queue, self.grid.ptr(), &vec![7u32; SIDE * SIDE])
    }

    /// The update to fill_2d over the whole grid, as UR's fill kernel
    /// describes it.
    fn to_fill<'a>(&'a self, handle: &'a CommandHandle, value: &'a u32) -> KernelLaunchUpdate<'a> {
        KernelLaunchUpdate::new(handle)
            .kernel(&self.fill_2d)
            .arg(0, KernelArg::Pointer(self.grid.ptr()))
            .arg(1, KernelArg::value(value))
            .global_size(&[SIDE, SIDE])
            .global_offset(&[0, 0])
            .local_size(LocalSizeUpdate::Set(&[4, 4]))
    }

    /// The update back to saxpy with every argument, as UR's saxpy kernel
    /// describes it.
    fn to_saxpy<'a>(&'a self, handle: &'a CommandHandle, a: &'a u32) -> KernelLaunchUpdate<'a> {
        KernelLaunchUpdate::new(handle)
            .kernel(&self.saxpy)
            .arg(0, KernelArg::Pointer(self.z.ptr()))
            .arg(1, KernelArg::value(a))
            .arg(2, KernelArg::Pointer(self.x.ptr()))
            .arg(3, KernelArg::Pointer(self.y.ptr()))
            .global_size(&[N])
            .global_offset(&[0])
            .local_size(LocalSizeUpdate::Set(&[LOCAL]))
    }

    fn update(&self, cb: &CommandBuffer, updates: &[KernelLaunchUpdate<'_>]) -> CaseResult {
        // SAFETY: fill_2d covers the 64x64-u32 grid exactly; saxpy covers its
        // 32-u32 allocations exactly.
        unsafe { cb.update_kernel_launches(updates)? };
        Ok(())
    }
}

/// UR's `Success`: saxpy runs, then the command becomes fill_2d (a switch
/// from 1D to 2D); both results are there after the second run.
fn kernel_handle_switch(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[&k.fill_2d])?;
    let first = k.queue.enqueue_command_buffer(&cb, &[])?;
    k.update(&cb, &[k.to_fill(&handle, &FILL_VAL)])?;
    let second = k.queue.enqueue_command_buffer(&cb, &[])?;
    cmdbuf::Event::wait_all(&[&first, &second])?;
    k.check_saxpy(A)?;
    k.check_grid(FILL_VAL)
}

/// UR's `UpdateAgain`: after the switch the command is a fill_2d command;
/// a value-only update applies to fill_2d.
fn kernel_handle_update_again(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[&k.fill_2d])?;
    k.run(&cb)?;
    k.update(&cb, &[k.to_fill(&handle, &FILL_VAL)])?;
    k.run(&cb)?;
    k.check_saxpy(A)?;
    k.check_grid(FILL_VAL)?;
    let again = 78u32;
    k.update(&cb, &[k.to_fill(&handle, &again)])?;
    k.run(&cb)?;
    k.check_grid(again)?;
    let last = 79u32;
    k.update(&cb, &[KernelLaunchUpdate::new(&handle).arg(1, KernelArg::value(&last))])?;
    k.run(&cb)?;
    k.check_grid(last)
}

/// UR's `RestoreOriginalKernel`: back from fill_2d to saxpy, with a new factor.
fn kernel_handle_restore_original(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[&k.fill_2d])?;
    k.run(&cb)?;
    k.update(&cb, &[k.to_fill(&handle, &FILL_VAL)])?;
    k.run(&cb)?;
    k.check_saxpy(A)?;
    k.check_grid(FILL_VAL)?;
    k.reset()?;
    let a = 20u32;
    k.update(&cb, &[k.to_saxpy(&handle, &a)])?;
    k.run(&cb)?;
    k.check_saxpy(a)?;
    k.check_grid(7)
}

/// Two alternatives: saxpy -> fill -> fill_2d -> saxpy.
fn kernel_handle_multiple_alternatives(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let fill = env.kernel("fill")?;
    let (cb, handle) = k.saxpy_buffer(env, &[&fill, &k.fill_2d])?;
    let v = 5u32;
    k.update(
        &cb,
        &[KernelLaunchUpdate::new(&handle)
            .kernel(&fill)
            .arg(0, KernelArg::Pointer(k.z.ptr()))
            .arg(1, KernelArg::value(&v))],
    )?;
    k.run(&cb)?;
    check_eq!(read::<u32>(&k.queue, k.z.ptr(), N)?, vec![v; N]);
    k.update(&cb, &[k.to_fill(&handle, &FILL_VAL)])?;
    k.run(&cb)?;
    k.check_grid(FILL_VAL)?;
    check_eq!(read::<u32>(&k.queue, k.z.ptr(), N)?, vec![v; N]);
    k.update(&cb, &[k.to_saxpy(&handle, &A)])?;
    k.run(&cb)?;
    k.check_saxpy(A)
}

/// UR's `KernelAlternativeNotRegistered`: `InvalidValue`, and the command
/// stays saxpy.
fn kernel_handle_not_registered(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[])?;
    k.run(&cb)?;
    k.check_saxpy(A)?;
    k.reset()?;
    check_err!(
        // SAFETY: fill_2d would cover the 64x64 grid exactly (it is refused).
        unsafe { cb.update_kernel_launches(&[k.to_fill(&handle, &FILL_VAL)]) },
        InvalidValue
    );
    // Another kernel object of the registered name is not registered either.
    let other_saxpy = env.kernel("saxpy")?;
    let mut again = k.to_saxpy(&handle, &A);
    again.new_kernel = Some(&other_saxpy);
    // SAFETY: saxpy would cover its 32-u32 allocations (it is refused).
    check_err!(unsafe { cb.update_kernel_launches(&[again]) }, InvalidValue);
    k.run(&cb)?;
    k.check_saxpy(A)?;
    k.check_grid(7)
}

/// UR's `RegisterInvalidKernelAlternative`: the launched kernel among its own
/// alternatives is `InvalidValue` and appends nothing.
fn kernel_handle_self_alternative(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let cb = env.updatable_command_buffer()?;
    let args = [
        KernelArg::Pointer(k.z.ptr()),
        KernelArg::value(&A),
        KernelArg::Pointer(k.x.ptr()),
        KernelArg::Pointer(k.y.ptr()),
    ];
    let launch = KernelLaunch::new(&k.saxpy, &[N], &args).local_size(&[LOCAL]);
    check_err!(
        // SAFETY: saxpy over 32 items on 32-u32 allocations (refused anyway).
        unsafe { cb.append_kernel_launch(&launch, &[&k.saxpy], AppendOptions::new()) },
        InvalidValue
    );
    check_err!(
        // SAFETY: as above.
        unsafe { cb.append_kernel_launch(&launch, &[&k.fill_2d, &k.saxpy], AppendOptions::new()) },
        InvalidValue
    );
    check_eq!(cb.len(), 0);
    Ok(())
}

/// A switch must give every argument of the new kernel:
/// `InvalidKernelArgumentIndex`, including when switching back to the
/// original; the command is unchanged.
fn kernel_handle_switch_missing_args(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[&k.fill_2d])?;
    let mut partial = k.to_fill(&handle, &FILL_VAL);
    partial.args.truncate(1);
    check_err!(
        // SAFETY: fill_2d would cover the 64x64 grid (it is refused).
        unsafe { cb.update_kernel_launches(&[partial]) },
        InvalidKernelArgumentIndex
    );
    k.run(&cb)?;
    k.check_saxpy(A)?;
    k.check_grid(7)?;
    k.update(&cb, &[k.to_fill(&handle, &FILL_VAL)])?;
    let mut back = k.to_saxpy(&handle, &A);
    back.args.retain(|(i, _)| *i != 2);
    check_err!(
        // SAFETY: saxpy would cover its allocations (it is refused).
        unsafe { cb.update_kernel_launches(&[back]) },
        InvalidKernelArgumentIndex
    );
    k.run(&cb)?;
    k.check_grid(FILL_VAL)
}

/// Alternatives need an updatable buffer: `InvalidOperation` otherwise.
fn kernel_handle_alternatives_not_updatable(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let cb = env.command_buffer(CommandBufferDesc::default())?;
    let args = [
        KernelArg::Pointer(k.z.ptr()),
        KernelArg::value(&A),
        KernelArg::Pointer(k.x.ptr()),
        KernelArg::Pointer(k.y.ptr()),
    ];
    check_err!(
        // SAFETY: saxpy over 32 items on 32-u32 allocations (refused anyway).
        unsafe {
            cb.append_kernel_launch(&KernelLaunch::new(&k.saxpy, &[N], &args), &[&k.fill_2d], AppendOptions::new())
        },
        InvalidOperation
    );
    check_eq!(cb.len(), 0);
    Ok(())
}

/// UR's `UpdateDimensionsWithoutUpdatingKernel`: fill_2d goes from 64x64 to
/// 4096 in 1D and still fills the grid, with a new value.
fn kernel_handle_dims_without_kernel(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let cb = env.updatable_command_buffer()?;
    let args = [KernelArg::Pointer(k.grid.ptr()), KernelArg::value(&FILL_VAL)];
    // SAFETY: 64x64 items write the 64x64-u32 grid.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&k.fill_2d, &[SIDE, SIDE], &args).local_size(&[4, 4]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    k.run(&cb)?;
    k.check_grid(FILL_VAL)?;
    k.reset()?;
    let v = 9u32;
    k.update(
        &cb,
        &[KernelLaunchUpdate::new(&handle)
            .arg(0, KernelArg::Pointer(k.grid.ptr()))
            .arg(1, KernelArg::value(&v))
            .global_size(&[SIDE * SIDE])
            .global_offset(&[0])
            .local_size(LocalSizeUpdate::Set(&[4]))],
    )?;
    k.run(&cb)?;
    k.check_grid(v)
}

/// UR's `UpdateOnlyLocalWorkSize`: same kernel, local size 16.
fn kernel_handle_only_local_size(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[&k.fill_2d])?;
    k.run(&cb)?;
    k.check_saxpy(A)?;
    k.reset()?;
    let a = 11u32;
    k.update(
        &cb,
        &[KernelLaunchUpdate::new(&handle)
            .kernel(&k.saxpy)
            .arg(1, KernelArg::value(&a))
            .local_size(LocalSizeUpdate::Set(&[LOCAL * 4]))],
    )?;
    k.run(&cb)?;
    k.check_saxpy(a)
}

/// UR's `SuccessNullptrHandle`: a command with alternatives updated without
/// naming a kernel stays saxpy.
fn kernel_handle_no_new_kernel(env: &Env) -> CaseResult {
    let k = kernels(env)?;
    let (cb, handle) = k.saxpy_buffer(env, &[&k.fill_2d])?;
    let a = 17u32;
    let mut update = k.to_saxpy(&handle, &a);
    update.new_kernel = None;
    k.update(&cb, &[update])?;
    k.run(&cb)?;
    k.check_saxpy(a)?;
    k.check_grid(7)
}
