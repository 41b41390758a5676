//! Updates that must be refused, from UR's `update/invalid_update.cpp`, plus
//! the argument and geometry errors UR leaves out, and the rule that a
//! refused update list changes nothing.
//!
//! UR's capability cases (`KernelArg`, `GlobalSize`, ...) only run on devices
//! that lack the capability; here each checks whichever branch the device's
//! capabilities select, and a device without any update capability must
//! refuse the updatable buffer itself.

use cmdbuf::{
    AppendOptions, CommandBuffer, CommandBufferDesc, CommandHandle, Kernel, KernelArg, KernelLaunch,
    KernelLaunchUpdate, LocalSizeUpdate, Queue, UpdateCapabilities, UsmAllocation,
};

use crate::harness::{CaseError, CaseResult, Env, read, write};
use crate::{Requires, cases, check, check_eq, check_err};

use super::update_args::handle_of;

const ARGS: Requires = Requires::update(UpdateCapabilities::KERNEL_ARGUMENTS);

pub(in crate::cases) fn cases() -> Vec<crate::Case> {
    cases!["update_invalid";
        not_finalized => ARGS,
        not_updatable => ARGS,
        invalid_dimensions => Requires::UPDATABLE,
        command_buffer_mismatch => ARGS,
        kernel_arg_capability,
        global_size_capability,
        global_offset_capability,
        local_size_capability,
        impl_chosen_local_size_capability,
        kernel_capability,
        empty_update_list => ARGS,
        non_kernel_handle => ARGS,
        arg_index_out_of_range => ARGS,
        wrong_value_size => ARGS,
        wrong_arg_kind => ARGS,
        local_size_not_dividing => Requires::UPDATABLE,
        local_size_above_max => Requires::UPDATABLE,
        atomic_update_list => Requires::UPDATABLE,
    ]
}

/// UR's fixture: `fill` of 32 items, local size 4, value 42.
const N: usize = 32;
const LOCAL: usize = 4;
const VAL: u32 = 42;
/// The allocation is twice the launch, so that updates of the global size
/// or offset stay inside it; the second half shows what a run reached.
const ALLOC: usize = 2 * N;

/// A fill command in a buffer, with its memory and queue.
struct Fill {
    queue: Queue,
    cb: CommandBuffer,
    handle: CommandHandle,
    kernel: Kernel,
    out: UsmAllocation,
}

/// Appends UR's fill (with `local`, or an implementation-chosen local size)
/// to `cb`, finalizing it when asked.
fn fill_in(env: &Env, cb: CommandBuffer, local: Option<&[usize]>, finalize: bool) -> Result<Fill, CaseError> {
    let queue = env.queue()?;
    let out = env.usm_u32(ALLOC)?;
    write(&queue, out.ptr(), &[0u32; ALLOC])?;
    let kernel = env.kernel("fill")?;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&VAL)];
    let mut launch = KernelLaunch::new(&kernel, &[N], &args);
    if let Some(local) = local {
        launch = launch.local_size(local);
    }
    // SAFETY: 32 items write the first half of a 64-u32 allocation.
    let handle = handle_of(unsafe { cb.append_kernel_launch(&launch, &[], AppendOptions::new())? })?;
    if finalize {
        cb.finalize()?;
    }
    Ok(Fill { queue, cb, handle, kernel, out })
}

fn fill(env: &Env) -> Result<Fill, CaseError> {
    fill_in(env, env.updatable_command_buffer()?, Some(&[LOCAL]), true)
}

impl Fill {
    /// Resets the memory, runs, and checks that `value` covers exactly
    /// `range` (zeros elsewhere).
    fn run_and_check(&self, value: u32, range: std::ops::Range<usize>) -> CaseResult {
        write(&self.queue, self.out.ptr(), &[0u32; ALLOC])?;
        self.queue.enqueue_command_buffer(&self.cb, &[])?.wait()?;
        let expected: Vec<u32> = (0..ALLOC).map(|i| if range.contains(&i) { value } else { 0 }).collect();
        check_eq!(read::<u32>(&self.queue, self.out.ptr(), ALLOC)?, expected);
        Ok(())
    }

    /// The original command is still what runs.
    fn unchanged(&self) -> CaseResult {
        self.run_and_check(VAL, 0..N)
    }

    fn try_update(&self, updates: &[KernelLaunchUpdate<'_>]) -> cmdbuf::Result<()> {
        // SAFETY: the updates of these cases keep every work-item inside the
        // 64-u32 allocation, or are refused.
        unsafe { self.cb.update_kernel_launches(updates) }
    }
}

/// An updatable buffer when the device has any update capability; otherwise
/// checks the device refuses one (`UnsupportedFeature`) and gives `None`.
fn updatable_or_refused(env: &Env) -> Result<Option<CommandBuffer>, CaseError> {
    let desc = CommandBufferDesc { updatable: true, ..Default::default() };
    let result = CommandBuffer::new(env.context(), env.device(), desc);
    if env.device().info().command_buffer.update.is_empty() {
        check_err!(result, UnsupportedFeature);
        return Ok(None);
    }
    Ok(Some(result?))
}

fn caps(env: &Env) -> UpdateCapabilities {
    env.device().info().command_buffer.update
}

/// UR's `NotFinalizedCommandBuffer`.
fn not_finalized(env: &Env) -> CaseResult {
    let f = fill_in(env, env.updatable_command_buffer()?, Some(&[LOCAL]), false)?;
    let v = 33u32;
    check_err!(f.try_update(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v))]), InvalidOperation);
    f.cb.finalize()?;
    f.unchanged()
}

/// UR's `NotUpdatableCommandBuffer`: no handle from the append, and an
/// update of the buffer (here with another buffer's handle) is
/// `InvalidOperation`.
fn not_updatable(env: &Env) -> CaseResult {
    let plain = env.command_buffer(CommandBufferDesc::default())?;
    let out = env.usm_u32(N)?;
    let kernel = env.kernel("fill")?;
    let args = [KernelArg::Pointer(out.ptr()), KernelArg::value(&VAL)];
    // SAFETY: 32 items write a 32-u32 allocation.
    let appended = unsafe {
        plain.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    };
    check!(appended.command.is_none(), "a buffer that is not updatable returned a command handle");
    plain.finalize()?;
    let f = fill(env)?;
    let v = 33u32;
    check_err!(
        // SAFETY: only a value changes (refused anyway).
        unsafe { plain.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v))]) },
        InvalidOperation
    );
    let queue = env.queue()?;
    queue.enqueue_command_buffer(&plain, &[])?.wait()?;
    check_eq!(read::<u32>(&queue, out.ptr(), N)?, vec![VAL; N]);
    f.unchanged()
}

/// UR's `InvalidDimensions`, in this API's terms: the work dimension is the
/// length of the new global size.
fn invalid_dimensions(env: &Env) -> CaseResult {
    let f = fill(env)?;
    let h = &f.handle;
    // Work dimensions 0 and 4.
    check_err!(f.try_update(&[KernelLaunchUpdate::new(h).global_size(&[])]), InvalidWorkDimension);
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h)
            .global_size(&[4, 2, 2, 2])
            .global_offset(&[0, 0, 0, 0])
            .local_size(LocalSizeUpdate::ImplementationChosen)]),
        InvalidWorkDimension
    );
    // A new dimension without a new offset.
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h).global_size(&[8, 8]).local_size(LocalSizeUpdate::Set(&[4, 4]))]),
        InvalidValue
    );
    // A new dimension keeping a user local size of the old dimension.
    check_err!(f.try_update(&[KernelLaunchUpdate::new(h).global_size(&[8, 8]).global_offset(&[0, 0])]), InvalidValue);
    // A new dimension given by an offset or a local size alone, without a
    // new global size (the header: `INVALID_VALUE`, as UR's second half of
    // `InvalidDimensions` checks).
    check_err!(f.try_update(&[KernelLaunchUpdate::new(h).global_offset(&[0, 0])]), InvalidValue);
    check_err!(f.try_update(&[KernelLaunchUpdate::new(h).local_size(LocalSizeUpdate::Set(&[4, 1]))]), InvalidValue);
    // An offset or local size of more than 3 dimensions, or whose length is
    // not that of the new global size.
    check_err!(f.try_update(&[KernelLaunchUpdate::new(h).global_offset(&[0, 0, 0, 0])]), InvalidWorkDimension);
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h)
            .global_size(&[8, 8])
            .global_offset(&[0, 0])
            .local_size(LocalSizeUpdate::Set(&[4]))]),
        InvalidWorkDimension
    );
    f.unchanged()
}

/// UR's `CommandBufferMismatch`: a handle of another buffer.
fn command_buffer_mismatch(env: &Env) -> CaseResult {
    let f = fill(env)?;
    let other = env.updatable_command_buffer()?;
    other.finalize()?;
    let v = 33u32;
    check_err!(
        // SAFETY: only a value changes (refused anyway).
        unsafe { other.update_kernel_launches(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v))]) },
        InvalidCommandHandle
    );
    f.unchanged()
}

/// UR's `InvalidUpdateCommandBufferExpExecutionTest.KernelArg`.
fn kernel_arg_capability(env: &Env) -> CaseResult {
    let Some(cb) = updatable_or_refused(env)? else {
        return Ok(());
    };
    let f = fill_in(env, cb, Some(&[LOCAL]), true)?;
    let v = 33u32;
    let result = f.try_update(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v))]);
    if caps(env).contains(UpdateCapabilities::KERNEL_ARGUMENTS) {
        result?;
        f.run_and_check(v, 0..N)
    } else {
        check_err!(result, UnsupportedFeature);
        f.unchanged()
    }
}

/// UR's `GlobalSize`.
fn global_size_capability(env: &Env) -> CaseResult {
    let Some(cb) = updatable_or_refused(env)? else {
        return Ok(());
    };
    let f = fill_in(env, cb, Some(&[LOCAL]), true)?;
    let result = f.try_update(&[KernelLaunchUpdate::new(&f.handle).global_size(&[2 * N])]);
    if caps(env).contains(UpdateCapabilities::GLOBAL_WORK_SIZE) {
        result?;
        f.run_and_check(VAL, 0..2 * N)
    } else {
        check_err!(result, UnsupportedFeature);
        f.unchanged()
    }
}

/// UR's `GlobalOffset`.
fn global_offset_capability(env: &Env) -> CaseResult {
    let Some(cb) = updatable_or_refused(env)? else {
        return Ok(());
    };
    let f = fill_in(env, cb, Some(&[LOCAL]), true)?;
    let result = f.try_update(&[KernelLaunchUpdate::new(&f.handle).global_offset(&[1])]);
    if caps(env).contains(UpdateCapabilities::GLOBAL_WORK_OFFSET) {
        result?;
        f.run_and_check(VAL, 1..N + 1)
    } else {
        check_err!(result, UnsupportedFeature);
        f.unchanged()
    }
}

/// UR's `LocalSize`; with the capability, `indexers` shows the new local
/// ids.
fn local_size_capability(env: &Env) -> CaseResult {
    let Some(cb) = updatable_or_refused(env)? else {
        return Ok(());
    };
    let queue = env.queue()?;
    let out = env.usm_u32(N * 6)?;
    let kernel = env.kernel("indexers")?;
    let args = [KernelArg::Pointer(out.ptr())];
    // SAFETY: 32 items write six u32s each into 32*6 u32s.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    // SAFETY: the range stays 32 items.
    let result = unsafe {
        cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).local_size(LocalSizeUpdate::Set(&[2]))])
    };
    let local = if caps(env).contains(UpdateCapabilities::LOCAL_WORK_SIZE) {
        result?;
        2
    } else {
        check_err!(result, UnsupportedFeature);
        LOCAL
    };
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let data = read::<u32>(&queue, out.ptr(), N * 6)?;
    let expected: Vec<u32> = (0..N).flat_map(|i| [i as u32, 0, 0, (i % local) as u32, 0, 0]).collect();
    check_eq!(data, expected, "local ids for local size {local}");
    Ok(())
}

/// UR's `ImplChosenLocalSize`: a new global size for a command whose local
/// size the implementation chose makes it choose again, which needs the
/// local-size capability as well as the global-size one.
fn impl_chosen_local_size_capability(env: &Env) -> CaseResult {
    let Some(cb) = updatable_or_refused(env)? else {
        return Ok(());
    };
    let f = fill_in(env, cb, None, true)?;
    let result = f.try_update(&[KernelLaunchUpdate::new(&f.handle).global_size(&[2 * N])]);
    let needed = UpdateCapabilities::GLOBAL_WORK_SIZE | UpdateCapabilities::LOCAL_WORK_SIZE;
    if caps(env).contains(needed) {
        result?;
        f.run_and_check(VAL, 0..2 * N)
    } else {
        check_err!(result, UnsupportedFeature);
        f.unchanged()
    }
}

/// UR's `Kernel`: switching to another kernel object. Without the
/// capability `UnsupportedFeature`; with it, `InvalidValue` since it was
/// not registered as an alternative.
fn kernel_capability(env: &Env) -> CaseResult {
    let Some(cb) = updatable_or_refused(env)? else {
        return Ok(());
    };
    let f = fill_in(env, cb, Some(&[LOCAL]), true)?;
    let kernel_2 = env.kernel("fill")?;
    check!(!kernel_2.same_kernel(&f.kernel));
    let result = f.try_update(&[KernelLaunchUpdate::new(&f.handle).kernel(&kernel_2)]);
    if caps(env).contains(UpdateCapabilities::KERNEL_HANDLE) {
        check_err!(result, InvalidValue);
    } else {
        check_err!(result, UnsupportedFeature);
    }
    f.unchanged()
}

/// An empty update list is `InvalidSize`.
fn empty_update_list(env: &Env) -> CaseResult {
    let f = fill(env)?;
    check_err!(f.try_update(&[]), InvalidSize);
    f.unchanged()
}

/// The handle of a memory command is `InvalidCommandHandle` for a kernel
/// update.
fn non_kernel_handle(env: &Env) -> CaseResult {
    let cb = env.updatable_command_buffer()?;
    let out = env.usm_u32(N)?;
    let fill_handle = handle_of(cb.append_usm_fill(out.ptr(), &[1, 0, 0, 0], N * 4, AppendOptions::new())?)?;
    let f = fill_in(env, cb, Some(&[LOCAL]), true)?;
    let v = 33u32;
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(&fill_handle).arg(1, KernelArg::value(&v))]),
        InvalidCommandHandle
    );
    // Also when it follows a valid update in the same list.
    check_err!(
        f.try_update(&[
            KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v)),
            KernelLaunchUpdate::new(&fill_handle).arg(1, KernelArg::value(&v)),
        ]),
        InvalidCommandHandle
    );
    f.unchanged()?;
    check_eq!(read::<u32>(&f.queue, out.ptr(), N)?, vec![1u32; N]);
    Ok(())
}

/// An argument index past the kernel's arguments is
/// `InvalidKernelArgumentIndex`.
fn arg_index_out_of_range(env: &Env) -> CaseResult {
    let f = fill(env)?;
    let v = 33u32;
    for index in [2, 3, usize::MAX] {
        check_err!(
            f.try_update(&[KernelLaunchUpdate::new(&f.handle).arg(index, KernelArg::value(&v))]),
            InvalidKernelArgumentIndex
        );
    }
    f.unchanged()
}

/// A value of the wrong size, or local memory of size 0, is
/// `InvalidKernelArgumentSize`.
fn wrong_value_size(env: &Env) -> CaseResult {
    let f = fill(env)?;
    for bytes in [&[1u8, 2, 3][..], &[0; 8][..], &[][..]] {
        check_err!(
            f.try_update(&[KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::Value(bytes))]),
            InvalidKernelArgumentSize
        );
    }
    f.unchanged()?;

    let cb = env.updatable_command_buffer()?;
    let queue = env.queue()?;
    let (z, x, y) = (env.usm_u32(N)?, env.usm_u32(N)?, env.usm_u32(N)?);
    write(&queue, x.ptr(), &[2u32; N])?;
    write(&queue, y.ptr(), &[3u32; N])?;
    let kernel = env.kernel("saxpy_local")?;
    let a = 5u32;
    let args = [
        KernelArg::Local(LOCAL * 4),
        KernelArg::Local(LOCAL * 8),
        KernelArg::Pointer(z.ptr()),
        KernelArg::value(&a),
        KernelArg::Pointer(x.ptr()),
        KernelArg::Pointer(y.ptr()),
    ];
    // SAFETY: 32 items on 32-u32 allocations, local memory for local size 4.
    let handle = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    check_err!(
        // SAFETY: refused; the launch would be unchanged otherwise.
        unsafe { cb.update_kernel_launches(&[KernelLaunchUpdate::new(&handle).arg(1, KernelArg::Local(0))]) },
        InvalidKernelArgumentSize
    );
    queue.enqueue_command_buffer(&cb, &[])?.wait()?;
    let expected = crate::kernels::saxpy_local_reference(a, &[2; N], &[3; N], LOCAL);
    check_eq!(read::<u32>(&queue, z.ptr(), N)?, expected);
    Ok(())
}

/// An argument of the wrong kind is `InvalidValue`.
fn wrong_arg_kind(env: &Env) -> CaseResult {
    let f = fill(env)?;
    let buffer = env.buffer(N * 4)?;
    let v = 33u32;
    let wrong: [(usize, KernelArg<'_>); 5] = [
        (0, KernelArg::value(&v)),
        (0, KernelArg::Local(16)),
        (1, KernelArg::Pointer(f.out.ptr())),
        (1, KernelArg::MemObj(&buffer)),
        (1, KernelArg::Local(4)),
    ];
    for (index, arg) in wrong {
        check_err!(f.try_update(&[KernelLaunchUpdate::new(&f.handle).arg(index, arg)]), InvalidValue);
    }
    f.unchanged()
}

/// A local size that does not divide the global size is
/// `InvalidWorkGroupSize`, whether the local or the global size changes.
fn local_size_not_dividing(env: &Env) -> CaseResult {
    let f = fill(env)?;
    let h = &f.handle;
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h).local_size(LocalSizeUpdate::Set(&[5]))]),
        InvalidWorkGroupSize
    );
    // The user's local size 4 is kept and does not divide 30.
    check_err!(f.try_update(&[KernelLaunchUpdate::new(h).global_size(&[30])]), InvalidWorkGroupSize);
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h).global_size(&[40]).local_size(LocalSizeUpdate::Set(&[16]))]),
        InvalidWorkGroupSize
    );
    f.unchanged()?;
    // A divisor is fine.
    f.try_update(&[KernelLaunchUpdate::new(h).global_size(&[30]).local_size(LocalSizeUpdate::Set(&[5]))])?;
    f.run_and_check(VAL, 0..30)
}

/// A local size of 0 or past the kernel's maximum work-group is
/// `InvalidWorkGroupSize`.
fn local_size_above_max(env: &Env) -> CaseResult {
    let f = fill(env)?;
    let h = &f.handle;
    let info = env.device().info();
    let max = f.kernel.max_work_group_size();
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h).local_size(LocalSizeUpdate::Set(&[0]))]),
        InvalidWorkGroupSize
    );
    let over = [max + 1];
    check_err!(
        f.try_update(&[KernelLaunchUpdate::new(h).global_size(&over).local_size(LocalSizeUpdate::Set(&over))]),
        InvalidWorkGroupSize
    );
    // Within the per-dimension limits, but the product is too large.
    let a = max.min(info.max_work_item_sizes[0]);
    let b = max / a + 1;
    if b <= info.max_work_item_sizes[1] {
        let two_d = [a, b];
        check_err!(
            f.try_update(&[KernelLaunchUpdate::new(h)
                .global_size(&two_d)
                .global_offset(&[0, 0])
                .local_size(LocalSizeUpdate::Set(&two_d))]),
            InvalidWorkGroupSize
        );
    }
    f.unchanged()
}

/// A list whose last update is invalid changes nothing, neither the other
/// commands nor earlier updates of the same command.
fn atomic_update_list(env: &Env) -> CaseResult {
    let cb = env.updatable_command_buffer()?;
    let second = env.usm_u32(N)?;
    let f = fill_in(env, cb.clone(), Some(&[LOCAL]), false)?;
    let kernel = env.kernel("fill")?;
    let w = 7u32;
    let args = [KernelArg::Pointer(second.ptr()), KernelArg::value(&w)];
    // SAFETY: 32 items write a 32-u32 allocation.
    let other = handle_of(unsafe {
        cb.append_kernel_launch(
            &KernelLaunch::new(&kernel, &[N], &args).local_size(&[LOCAL]),
            &[],
            AppendOptions::new(),
        )?
    })?;
    cb.finalize()?;
    let v = 33u32;
    let bad_index = 9;
    check_err!(
        f.try_update(&[
            KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v)).global_size(&[16]),
            KernelLaunchUpdate::new(&other).arg(bad_index, KernelArg::value(&v)),
        ]),
        InvalidKernelArgumentIndex
    );
    check_err!(
        f.try_update(&[
            KernelLaunchUpdate::new(&other).arg(1, KernelArg::value(&v)),
            KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v)),
            KernelLaunchUpdate::new(&f.handle).local_size(LocalSizeUpdate::Set(&[5])),
        ]),
        InvalidWorkGroupSize
    );
    write(&f.queue, second.ptr(), &[0u32; N])?;
    f.unchanged()?;
    check_eq!(read::<u32>(&f.queue, second.ptr(), N)?, vec![w; N]);
    // The same lists without their invalid entries apply.
    f.try_update(&[
        KernelLaunchUpdate::new(&f.handle).arg(1, KernelArg::value(&v)).global_size(&[16]),
        KernelLaunchUpdate::new(&other).arg(1, KernelArg::value(&v)),
    ])?;
    f.run_and_check(v, 0..16)?;
    check_eq!(read::<u32>(&f.queue, second.ptr(), N)?, vec![v; N]);
    Ok(())
}
