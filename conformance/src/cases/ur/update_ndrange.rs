//! Updates of the ND-range and of local memory, from UR's
//! `update/ndrange_update.cpp` (with the `indexers` kernel) and
//! `update/local_memory_update.cpp` (with `saxpy_local`).
//!
//! UR's ND-range tests always keep the work dimension they were appended
//! with; here an update really changes it when the new global size has fewer
//! or more entries, so 3D->1D and 1D->2D are tested as well.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandHandle, Event, KernelArg, KernelLaunch, KernelLaunchUpdate, LocalSizeUpdate,
    Queue, UpdateCapabilities, UsmAllocation, UsmKind,
};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::kernels::saxpy_local_reference;
use crate::{Requires, cases, check, check_eq};

use super::update_args::handle_of;

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["update";
        ndrange_3d => Requires::UPDATABLE,
        ndrange_2d_same_dim => Requires::UPDATABLE,
        ndrange_1d_same_dim => Requires::UPDATABLE,
        ndrange_3d_to_1d => Requires::UPDATABLE,
        ndrange_1d_to_2d => Requires::UPDATABLE,
        ndrange_impl_to_user_local => Requires::UPDATABLE,
        ndrange_user_to_impl_local => Requires::UPDATABLE,
        ndrange_offset_only => Requires::update(UpdateCapabilities::GLOBAL_WORK_OFFSET),
        ndrange_impl_local_rechosen => Requires::update(
            UpdateCapabilities::GLOBAL_WORK_SIZE.union(UpdateCapabilities::LOCAL_WORK_SIZE)
        ),
        local_mem_same_local_size => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
        local_mem_local_only => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
        local_mem_empty_local_size => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
        local_mem_smaller_local_size => Requires::UPDATABLE,
        local_mem_larger_local_size => Requires::UPDATABLE,
        local_mem_partial_local_size => Requires::UPDATABLE,
        local_mem_multi_parameters => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
        local_mem_multi_without_blocking => Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS),
    ]
}

/// Values `indexers` writes per work-item.
const PER_ITEM: usize = 6;
/// UR's launch: 8x8x8, local 1x2x2, offset 0,4,4.
const GLOBAL: [usize; 3] = [8, 8, 8];
const LOCAL: [usize; 3] = [1, 2, 2];
const OFFSET: [usize; 3] = [0, 4, 4];
/// Room for the largest range of these cases.
const ITEMS: usize = 512;
/// What the output holds where no work-item wrote.
const UNTOUCHED: u32 = 0xDEAD_BEEF;

/// An updatable buffer with one `indexers` launch over an output of
/// `ITEMS` work-items, reset to `UNTOUCHED`.
struct Indexers {
    queue: Queue,
    cb: CommandBuffer,
    handle: CommandHandle,
    out: UsmAllocation,
}

fn indexers(env: &Env, global: &[usize], local: Option<&[usize]>, offset: &[usize]) -> Result<Indexers, CaseError> {
    let queue = env.queue()?;
    let out = env.usm_u32(ITEMS * PER_ITEM)?;
    let kernel = env.kernel("indexers")?;
    let args = [KernelArg::Pointer(out.ptr())];
    let mut launch = KernelLaunch::new(&kernel, global, &args).global_offset(offset);
    if let Some(local) = local {
        launch = launch.local_size(local);
    }
    let cb = env.updatable_command_buffer()?;
    // SAFETY: the launch has at most 512 work-items; the output holds six
    // u32s for each of 512.
    let handle = handle_of(unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new())? })?;
    cb.finalize()?;
    Ok(Indexers { queue, cb, handle, out })
}

impl Indexers {
    /// Resets the output, runs, and checks every work-item of the range.
    fn run_and_check(&self, global: &[usize], offset: &[usize], local: Option<&[usize]>) -> CaseResult {
        write(&self.queue, self.out.ptr(), &vec![UNTOUCHED; ITEMS * PER_ITEM])?;
        self.queue.enqueue_command_buffer(&self.cb, &[])?.wait()?;
        let data = read::<u32>(&self.queue, self.out.ptr(), ITEMS * PER_ITEM)?;
        check_indexers(&data, pad(global, 1), pad(offset, 0), local.map(|l| pad(l, 1)))
    }

    /// Applies one update of the command.
    fn update(&self, update: KernelLaunchUpdate<'_>) -> CaseResult {
        // SAFETY: every range these cases set has at most 512 work-items.
        unsafe { self.cb.update_kernel_launches(&[update])? };
        Ok(())
    }
}

fn pad(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[..values.len()].copy_from_slice(values);
    out
}

/// Checks the output of `indexers` over `global` from `offset`: global ids
/// with offset, local ids as `local` gives them or, when the implementation
/// chose, consistent with one local size that divides the global size.
/// Everything past the range must be untouched.
fn check_indexers(data: &[u32], global: [usize; 3], offset: [usize; 3], local: Option<[usize; 3]>) -> CaseResult {
    let count = global.iter().product::<usize>();
    let local = match local {
        Some(l) => l,
        None => infer_local(data, global)?,
    };
    for z in 0..global[2] {
        for y in 0..global[1] {
            for x in 0..global[0] {
                let linear = x + global[0] * (y + global[1] * z);
                let item = &data[linear * PER_ITEM..(linear + 1) * PER_ITEM];
                let pos = [x, y, z];
                let expected: Vec<u32> = (0..3)
                    .map(|d| (pos[d] + offset[d]) as u32)
                    .chain((0..3).map(|d| (pos[d] % local[d]) as u32))
                    .collect();
                check_eq!(
                    item,
                    &expected[..],
                    "work-item {pos:?} of global {global:?}, offset {offset:?}, local {local:?}"
                );
            }
        }
    }
    check!(
        data[count * PER_ITEM..].iter().all(|v| *v == UNTOUCHED),
        "work-items beyond the {count} of global size {global:?} ran"
    );
    Ok(())
}

/// The local size an implementation-chosen launch used, read back from the
/// local ids: one past the largest local id in each dimension, which must
/// divide the global size.
fn infer_local(data: &[u32], global: [usize; 3]) -> Result<[usize; 3], CaseError> {
    let count = global.iter().product::<usize>();
    let mut local = [1usize; 3];
    for item in data[..count * PER_ITEM].chunks(PER_ITEM) {
        for d in 0..3 {
            local[d] = local[d].max(item[3 + d] as usize + 1);
        }
    }
    for d in 0..3 {
        check!(
            global[d].is_multiple_of(local[d]),
            "implementation-chosen local size {local:?} does not divide global size {global:?}"
        );
    }
    Ok(local)
}

/// UR's `NDRangeUpdateTest.Update3D`: new local size and offset.
fn ndrange_3d(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, Some(&LOCAL), &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    let (local, offset) = ([4, 2, 2], [3, 2, 1]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&GLOBAL)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::Set(&local)),
    )?;
    f.run_and_check(&GLOBAL, &offset, Some(&local))
}

/// UR's `Update2D`: a 6x6x1 range, still three-dimensional.
fn ndrange_2d_same_dim(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, Some(&LOCAL), &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    let (global, local, offset) = ([6, 6, 1], [3, 3, 1], [3, 3, 0]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&global)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::Set(&local)),
    )?;
    f.run_and_check(&global, &offset, Some(&local))
}

/// UR's `Update1D`: a 9x1x1 range, still three-dimensional.
fn ndrange_1d_same_dim(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, Some(&LOCAL), &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    let (global, local, offset) = ([9, 1, 1], [3, 1, 1], [0, 0, 0]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&global)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::Set(&local)),
    )?;
    f.run_and_check(&global, &offset, Some(&local))
}

/// A real change of work dimension: 3D to 1D. The dropped dimensions read
/// as size 1, offset 0, local id 0.
fn ndrange_3d_to_1d(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, Some(&LOCAL), &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    let (global, local, offset) = ([12], [3], [2]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&global)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::Set(&local)),
    )?;
    f.run_and_check(&global, &offset, Some(&local))?;
    // A second run of the same state gives the same result.
    f.run_and_check(&global, &offset, Some(&local))
}

/// A real change of work dimension: 1D to 2D, with a user local size, then
/// to another 2D range with one the implementation chooses.
fn ndrange_1d_to_2d(env: &Env) -> CaseResult {
    let f = indexers(env, &[16], Some(&[4]), &[0])?;
    f.run_and_check(&[16], &[0], Some(&[4]))?;
    let (global, local, offset) = ([4, 6], [2, 3], [1, 2]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&global)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::Set(&local)),
    )?;
    f.run_and_check(&global, &offset, Some(&local))?;
    let (global, offset) = ([6, 4], [0, 5]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&global)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::ImplementationChosen),
    )?;
    f.run_and_check(&global, &offset, None)
}

/// UR's `ImplToUserDefinedLocalSize`.
fn ndrange_impl_to_user_local(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, None, &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, None)?;
    let (local, offset) = ([4, 2, 2], [3, 2, 1]);
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&GLOBAL)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::Set(&local)),
    )?;
    f.run_and_check(&GLOBAL, &offset, Some(&local))
}

/// UR's `UserToImplDefinedLocalSize`.
fn ndrange_user_to_impl_local(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, Some(&LOCAL), &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    let offset = [3, 2, 1];
    f.update(
        KernelLaunchUpdate::new(&f.handle)
            .global_size(&GLOBAL)
            .global_offset(&offset)
            .local_size(LocalSizeUpdate::ImplementationChosen),
    )?;
    f.run_and_check(&GLOBAL, &offset, None)
}

/// Only the offset changes; the user's local size stays.
fn ndrange_offset_only(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, Some(&LOCAL), &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, Some(&LOCAL))?;
    let offset = [7, 0, 1];
    f.update(KernelLaunchUpdate::new(&f.handle).global_offset(&offset))?;
    f.run_and_check(&GLOBAL, &offset, Some(&LOCAL))
}

/// An implementation-chosen local size is chosen again for a new global
/// size (it need not divide the new size otherwise).
fn ndrange_impl_local_rechosen(env: &Env) -> CaseResult {
    let f = indexers(env, &GLOBAL, None, &OFFSET)?;
    f.run_and_check(&GLOBAL, &OFFSET, None)?;
    let global = [5, 7, 3];
    f.update(KernelLaunchUpdate::new(&f.handle).global_size(&global))?;
    f.run_and_check(&global, &OFFSET, None)
}

/// UR's local-memory fixture: `saxpy_local` over 16 items per node, local
/// size 4, 4 and 8 u32s of local memory; `nodes` commands over consecutive
/// slices (by global offset).
struct LocalMem {
    queue: Queue,
    cb: CommandBuffer,
    handles: Vec<CommandHandle>,
    z: UsmAllocation,
    x: [UsmAllocation; 2],
    y: [UsmAllocation; 2],
    xs: [Vec<u32>; 2],
    ys: [Vec<u32>; 2],
    len: usize,
}

const LM_N: usize = 16;
const LM_LOCAL: usize = 4;
const A: u32 = 42;
const NEW_A: u32 = 33;

/// Local-memory sizes in bytes for a local size.
fn local_bytes(local: usize) -> (usize, usize) {
    (local * 4, local * 8)
}

fn local_mem(env: &Env, nodes: usize) -> Result<LocalMem, CaseError> {
    let len = nodes * LM_N;
    let queue = env.queue()?;
    let make =
        |seed: u32| -> Vec<u32> { (0..len as u32).map(|i| i.wrapping_mul(31).wrapping_add(seed) % 5000).collect() };
    let xs = [make(1), make(2)];
    let ys = [make(3), make(4)];
    let alloc = |data: &[u32]| -> Result<UsmAllocation, CaseError> {
        let a = env.usm_u32(len)?;
        write(&queue, a.ptr(), data)?;
        Ok(a)
    };
    let z = alloc(&vec![0; len])?;
    let x = [alloc(&xs[0])?, alloc(&xs[1])?];
    let y = [alloc(&ys[0])?, alloc(&ys[1])?];
    let kernel = env.kernel("saxpy_local")?;
    let (la, lb) = local_bytes(LM_LOCAL);
    let args = [
        KernelArg::Local(la),
        KernelArg::Local(lb),
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&A),
        KernelArg::Pointer(x[0].ptr()),
        KernelArg::Pointer(y[0].ptr()),
    ];
    let cb = env.updatable_command_buffer()?;
    let mut handles = Vec::new();
    for node in 0..nodes {
        let offset = [node * LM_N];
        // SAFETY: node k covers global ids k*16 .. k*16+16 of allocations of
        // nodes*16 u32s; local memory holds one and two u32s per item.
        handles.push(handle_of(unsafe {
            cb.append_kernel_launch(
                &KernelLaunch::new(&kernel, &[LM_N], &args).local_size(&[LM_LOCAL]).global_offset(&offset),
                &[],
                AppendOptions::new(),
            )?
        })?);
    }
    cb.finalize()?;
    Ok(LocalMem { queue, cb, handles, z, x, y, xs, ys, len })
}

impl LocalMem {
    fn run(&self) -> CaseResult {
        self.queue.enqueue_command_buffer(&self.cb, &[])?.wait()?;
        Ok(())
    }

    fn check(&self, a: u32, which: usize, local: usize) -> CaseResult {
        check_eq!(
            read::<u32>(&self.queue, self.z.ptr(), self.len)?,
            saxpy_local_reference(a, &self.xs[which], &self.ys[which], local),
            "factor {a}, inputs {which}, local size {local}"
        );
        Ok(())
    }

    /// Runs once and checks the original state.
    fn run_original(&self) -> CaseResult {
        self.run()?;
        self.check(A, 0, LM_LOCAL)
    }

    /// The update of UR's `UpdateParameters`: both local sizes, the factor,
    /// X' and Y'.
    fn parameters<'a>(&'a self, handle: &'a CommandHandle, a: &'a u32) -> KernelLaunchUpdate<'a> {
        let (la, lb) = local_bytes(LM_LOCAL);
        KernelLaunchUpdate::new(handle)
            .arg(0, KernelArg::Local(la))
            .arg(1, KernelArg::Local(lb))
            .arg(3, KernelArg::value(a))
            .arg(4, KernelArg::Pointer(self.x[1].ptr()))
            .arg(5, KernelArg::Pointer(self.y[1].ptr()))
    }

    fn update(&self, updates: &[KernelLaunchUpdate<'_>]) -> CaseResult {
        // SAFETY: X' and Y' have the size of X and Y; every local size these
        // cases set comes with local memory for it.
        unsafe { self.cb.update_kernel_launches(updates)? };
        Ok(())
    }
}

/// UR's `LocalMemoryUpdateTest.UpdateParametersSameLocalSize`.
fn local_mem_same_local_size(env: &Env) -> CaseResult {
    let f = local_mem(env, 1)?;
    f.run_original()?;
    f.update(&[f.parameters(&f.handles[0], &NEW_A)])?;
    f.run()?;
    f.check(NEW_A, 1, LM_LOCAL)
}

/// UR's `UpdateLocalOnly`: only the local-memory arguments, same sizes.
fn local_mem_local_only(env: &Env) -> CaseResult {
    let f = local_mem(env, 1)?;
    f.run_original()?;
    write(&f.queue, f.z.ptr(), &vec![0u32; f.len])?;
    let (la, lb) = local_bytes(LM_LOCAL);
    f.update(&[KernelLaunchUpdate::new(&f.handles[0]).arg(0, KernelArg::Local(la)).arg(1, KernelArg::Local(lb))])?;
    f.run()?;
    f.check(A, 0, LM_LOCAL)
}

/// UR's `UpdateParametersEmptyLocalSize`: the local-memory arguments are
/// left out of the update and keep their sizes.
fn local_mem_empty_local_size(env: &Env) -> CaseResult {
    let f = local_mem(env, 1)?;
    f.run_original()?;
    f.update(&[KernelLaunchUpdate::new(&f.handles[0])
        .arg(3, KernelArg::value(&NEW_A))
        .arg(4, KernelArg::Pointer(f.x[1].ptr()))
        .arg(5, KernelArg::Pointer(f.y[1].ptr()))])?;
    f.run()?;
    f.check(NEW_A, 1, LM_LOCAL)
}

/// New local size with local memory sized for it, in one update.
fn local_size_change(env: &Env, local: usize) -> CaseResult {
    let f = local_mem(env, 1)?;
    f.run_original()?;
    let (la, lb) = local_bytes(local);
    let sizes = [local];
    f.update(&[KernelLaunchUpdate::new(&f.handles[0])
        .arg(0, KernelArg::Local(la))
        .arg(1, KernelArg::Local(lb))
        .arg(3, KernelArg::value(&NEW_A))
        .arg(4, KernelArg::Pointer(f.x[1].ptr()))
        .arg(5, KernelArg::Pointer(f.y[1].ptr()))
        .local_size(LocalSizeUpdate::Set(&sizes))])?;
    f.run()?;
    f.check(NEW_A, 1, local)
}

/// UR's `UpdateParametersSmallerLocalSize`: local size 2.
fn local_mem_smaller_local_size(env: &Env) -> CaseResult {
    local_size_change(env, 2)
}

/// UR's `UpdateParametersLargerLocalSize`: local size 16.
fn local_mem_larger_local_size(env: &Env) -> CaseResult {
    local_size_change(env, LM_LOCAL * 4)
}

/// UR's `UpdateParametersPartialLocalSize`: the local size and the first
/// local-memory argument in one update, the second argument in another.
fn local_mem_partial_local_size(env: &Env) -> CaseResult {
    let f = local_mem(env, 1)?;
    f.run_original()?;
    let local = LM_LOCAL * 4;
    let (la, lb) = local_bytes(local);
    let sizes = [local];
    f.update(&[KernelLaunchUpdate::new(&f.handles[0])
        .arg(0, KernelArg::Local(la))
        .arg(3, KernelArg::value(&NEW_A))
        .arg(4, KernelArg::Pointer(f.x[1].ptr()))
        .arg(5, KernelArg::Pointer(f.y[1].ptr()))
        .local_size(LocalSizeUpdate::Set(&sizes))])?;
    f.update(&[KernelLaunchUpdate::new(&f.handles[0]).arg(1, KernelArg::Local(lb))])?;
    f.run()?;
    f.check(NEW_A, 1, local)
}

/// UR's `LocalMemoryMultiUpdateTest.UpdateParameters`: every command in one
/// call.
fn local_mem_multi_parameters(env: &Env) -> CaseResult {
    let f = local_mem(env, 64)?;
    f.run_original()?;
    let updates: Vec<_> = f.handles.iter().map(|h| f.parameters(h, &NEW_A)).collect();
    f.update(&updates)?;
    f.run()?;
    f.check(NEW_A, 1, LM_LOCAL)
}

/// UR's `LocalMemoryMultiUpdateTest.UpdateWithoutBlocking`: the update is
/// made while the first submission is held back by a slow fill; the first
/// submission keeps the old arguments (its output is moved so it stays
/// visible), the second gets the new ones.
fn local_mem_multi_without_blocking(env: &Env) -> CaseResult {
    const SLOW: usize = 32 << 20;
    let f = local_mem(env, 16)?;
    let z1 = env.usm_u32(f.len)?;
    write(&f.queue, z1.ptr(), &vec![0u32; f.len])?;
    let slow_queue = env.queue()?;
    let scratch = env.usm(UsmKind::Device, SLOW)?;
    let slow = slow_queue.usm_fill(scratch.ptr(), &[1, 2, 3, 4], SLOW, &[])?;
    let first = f.queue.enqueue_command_buffer(&f.cb, &[&slow])?;
    let updates: Vec<_> =
        f.handles.iter().map(|h| f.parameters(h, &NEW_A).arg(2, KernelArg::Pointer(z1.ptr()))).collect();
    f.update(&updates)?;
    let second = f.queue.enqueue_command_buffer(&f.cb, &[])?;
    Event::wait_all(&[&first, &second])?;
    f.check(A, 0, LM_LOCAL)?;
    check_eq!(read::<u32>(&f.queue, z1.ptr(), f.len)?, saxpy_local_reference(NEW_A, &f.xs[1], &f.ys[1], LM_LOCAL));
    Ok(())
}
