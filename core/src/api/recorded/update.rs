//! Updates of a finalized, updatable [`CommandBuffer`]: kernel launches
//! (`urCommandBufferUpdateKernelLaunchExp`), validated whole by
//! [`merge_update`] before any is applied, and signal and wait events.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use smallvec::SmallVec;

use crate::adapter::KernelUpdate;
use crate::api::command_build::expect_kernel;
use crate::api::launch_resolve::resolve_arg;
use crate::command::Command;
use crate::context::Context;
use crate::device::UpdateCapabilities;
use crate::error::Result;
use crate::event::{Event, check_events};
use crate::launch::{ArgValue, KernelCommand, LocalSizeOrigin, check_dims, check_local_memory, resolve_range, to_3d};
use crate::native::NdRange;
use crate::objects::Kernel;
use crate::{ensure, err};

use super::{CommandBuffer, CommandHandle, KernelLaunchUpdate, KernelRecord, LocalSizeUpdate, State};

impl CommandBuffer {
    fn check_updatable(&self, state: &State) -> Result<()> {
        ensure!(self.inner.desc.updatable, InvalidOperation, "the command buffer is not updatable");
        ensure!(state.is_finalized(), InvalidOperation, "update of a command buffer that is not finalized");
        Ok(())
    }

    fn check_handle(&self, handle: &CommandHandle) -> Result<u32> {
        ensure!(handle.buffer == self.inner.id, InvalidCommandHandle, "command handle of another command buffer");
        Ok(handle.index)
    }

    /// Updates kernel commands for the next enqueues
    /// (`urCommandBufferUpdateKernelLaunchExp`). All updates are validated
    /// before any is applied: on error nothing changes. Submissions already
    /// enqueued are not affected.
    ///
    /// # Safety
    /// As for [`append_kernel_launch`](Self::append_kernel_launch): the updated
    /// kernels may touch any memory their new arguments let them reach.
    #[tracing::instrument(level = "debug", skip_all, fields(updates = updates.len(), label = self.label()))]
    pub unsafe fn update_kernel_launches(&self, updates: &[KernelLaunchUpdate<'_>]) -> Result<()> {
        ensure!(!updates.is_empty(), InvalidSize, "empty list of kernel updates");
        let ctx = &self.inner.context;
        let caps = ctx.device().info().command_buffer.update;
        let mut state = self.inner.state.lock();
        self.check_updatable(&state)?;
        // New state per touched command, in first-touch order, kept off the
        // heap for the usual one-command update: where other threads free
        // into the allocator at the same time (a replay's clean-up, ours or
        // the driver's), each allocation is what the call pays most for
        // (docs/performance.md, goal 1).
        let mut pending: SmallVec<[(u32, KernelCommand, LocalSizeOrigin); 1]> = SmallVec::new();
        let mut slots = Slots::default();
        for update in updates {
            let index = self.check_handle(update.command)?;
            let record = &state.records[index as usize];
            let recorded = expect_kernel(&record.command)?;
            let kernel_record = record.kernel.as_ref().expect("kernel commands have a kernel record");
            match slots.find(&pending, index) {
                Some(slot) => {
                    let (_, current, origin) = &pending[slot];
                    let merged = merge_update(ctx, caps, kernel_record, current, *origin, update)?;
                    (pending[slot].1, pending[slot].2) = merged;
                }
                None => {
                    let (launch, origin) =
                        merge_update(ctx, caps, kernel_record, recorded, kernel_record.local_origin, update)?;
                    pending.push((index, launch, origin));
                    slots.pushed(&pending);
                }
            }
        }
        let adapter_updates: SmallVec<[KernelUpdate<'_>; 1]> =
            pending.iter().map(|(index, launch, _)| KernelUpdate { command: *index, launch }).collect();
        // SAFETY: finalized and updatable (checked), each command appears once
        // and is a kernel command, each launch was validated against its kernel
        // (the original or a registered alternative) and the device's
        // capabilities were checked for every change.
        unsafe { state.executable("update of")?.update_kernel_launches(&adapter_updates)? };
        self.inner.updates.fetch_add(1, Ordering::Release);
        // The views borrow `pending`, whose entries move into the records.
        drop(adapter_updates);
        for (index, launch, origin) in pending {
            let record = &mut state.records[index as usize];
            record.command = Command::KernelLaunch(launch);
            if let Some(k) = record.kernel.as_mut() {
                k.local_origin = origin;
            }
        }
        Ok(())
    }

    fn check_event_update(&self, state: &State, handle: &CommandHandle) -> Result<u32> {
        let device = self.inner.context.device();
        ensure!(
            device.info().command_buffer.update.contains(UpdateCapabilities::EVENTS),
            UnsupportedFeature,
            "{device} cannot update command-buffer events"
        );
        self.check_updatable(state)?;
        self.check_handle(handle)
    }

    /// Gives a command a new signal event for the next enqueues
    /// (`urCommandBufferUpdateSignalEventExp`); the command must have been
    /// appended with one.
    #[tracing::instrument(level = "debug", skip_all, fields(command = handle.index, label = self.label()))]
    pub fn update_signal_event(&self, handle: &CommandHandle) -> Result<Event> {
        let mut state = self.inner.state.lock();
        let index = self.check_event_update(&state, handle)?;
        ensure!(
            state.records[index as usize].signal,
            InvalidOperation,
            "command {index} was appended without a signal event"
        );
        // SAFETY: finalized, updatable, the command has a signal event and the
        // device reports the EVENTS capability.
        let event = unsafe { state.executable("update of")?.update_signal_event(index)? };
        self.inner.updates.fetch_add(1, Ordering::Release);
        Ok(Event::from_imp(event, &self.inner.context))
    }

    /// Replaces a command's wait events for the next enqueues
    /// (`urCommandBufferUpdateWaitEventsExp`); the count must match the append's.
    #[tracing::instrument(level = "debug", skip_all, fields(command = handle.index, label = self.label()))]
    pub fn update_wait_events(&self, handle: &CommandHandle, events: &[&Event]) -> Result<()> {
        let mut state = self.inner.state.lock();
        let index = self.check_event_update(&state, handle)?;
        let expected = state.records[index as usize].wait_events;
        ensure!(
            events.len() == expected,
            InvalidEventWaitList,
            "command {index} was appended with {expected} wait events, {} given",
            events.len()
        );
        let events = check_events(self.inner.context.id(), events, "wait-event update")?;
        // SAFETY: as for update_signal_event; the count matches and the events
        // are of this context.
        unsafe { state.executable("update of")?.update_wait_events(index, &events)? };
        self.inner.updates.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

/// Finds the pending entry of a command during one update call: a scan
/// while few commands are touched (no allocation), a map once many are, so
/// that an update of every command stays linear.
#[derive(Default)]
struct Slots {
    map: Option<HashMap<u32, usize>>,
}

impl Slots {
    /// Commands scanned before the map is built.
    const SCAN: usize = 8;

    fn find<T>(&self, pending: &[(u32, T, LocalSizeOrigin)], index: u32) -> Option<usize> {
        match &self.map {
            Some(map) => map.get(&index).copied(),
            None => pending.iter().position(|(i, ..)| *i == index),
        }
    }

    /// Records the entry just pushed at the end of `pending`.
    fn pushed<T>(&mut self, pending: &[(u32, T, LocalSizeOrigin)]) {
        let last = pending.len() - 1;
        match &mut self.map {
            Some(map) => {
                map.insert(pending[last].0, last);
            }
            None if pending.len() > Self::SCAN => {
                self.map = Some(pending.iter().enumerate().map(|(slot, (i, ..))| (*i, slot)).collect());
            }
            None => {}
        }
    }
}

/// Applies one update to a kernel command's current state, in three steps:
/// the kernel (and the capabilities the update needs), the geometry, the
/// arguments.
fn merge_update(
    ctx: &Context,
    caps: UpdateCapabilities,
    record: &KernelRecord,
    current: &KernelCommand,
    origin: LocalSizeOrigin,
    update: &KernelLaunchUpdate<'_>,
) -> Result<(KernelCommand, LocalSizeOrigin)> {
    let need = |cap: UpdateCapabilities, what: &str| -> Result<()> {
        ensure!(caps.contains(cap), UnsupportedFeature, "{} cannot update {what} in command buffers", ctx.device());
        Ok(())
    };
    let kernel = updated_kernel(&need, record, current, update)?;
    let switched = !kernel.same_kernel(&current.kernel);
    let (range, origin) = updated_range(ctx, &need, current, origin, update, &kernel, switched)?;
    let args = updated_args(ctx, current, update, &kernel, switched)?;
    check_local_memory(ctx.device().info(), &kernel, &args)?;
    Ok((KernelCommand { kernel, range, args }, origin))
}

/// Refuses an update of `what` that the device cannot make.
type Need<'a> = dyn Fn(UpdateCapabilities, &str) -> Result<()> + 'a;

/// The kernel after `update` (one registered for the command), once every
/// part the update changes is one the device can update.
fn updated_kernel(
    need: &Need<'_>,
    record: &KernelRecord,
    current: &KernelCommand,
    update: &KernelLaunchUpdate<'_>,
) -> Result<Kernel> {
    let kernel = match update.new_kernel {
        Some(k) if !k.same_kernel(&current.kernel) => {
            need(UpdateCapabilities::KERNEL_HANDLE, "the kernel")?;
            ensure!(
                k.same_kernel(&record.original) || record.alternatives.iter().any(|a| a.same_kernel(k)),
                InvalidValue,
                "kernel `{}` was not registered as an alternative of this command",
                k.name()
            );
            k.clone()
        }
        _ => current.kernel.clone(),
    };
    if !update.args.is_empty() {
        need(UpdateCapabilities::KERNEL_ARGUMENTS, "kernel arguments")?;
    }
    if update.global_size.is_some() {
        need(UpdateCapabilities::GLOBAL_WORK_SIZE, "the global size")?;
    }
    if update.global_offset.is_some() {
        need(UpdateCapabilities::GLOBAL_WORK_OFFSET, "the global offset")?;
    }
    if update.local_size != LocalSizeUpdate::Keep {
        need(UpdateCapabilities::LOCAL_WORK_SIZE, "the local size")?;
    }
    Ok(kernel)
}

/// The geometry after `update`: the work dimension changes only with a new
/// global size and offset; a local size the implementation chose is chosen
/// again where the sizes or the kernel change.
fn updated_range(
    ctx: &Context,
    need: &Need<'_>,
    current: &KernelCommand,
    origin: LocalSizeOrigin,
    update: &KernelLaunchUpdate<'_>,
    kernel: &Kernel,
    switched: bool,
) -> Result<(NdRange, LocalSizeOrigin)> {
    let old = current.range;
    let local_given = match update.local_size {
        LocalSizeUpdate::Set(l) => Some(l),
        _ => None,
    };
    let work_dim = match update.global_size {
        Some(global) => global.len(),
        None => {
            // An offset or local size of another (valid) dimension changes the
            // work dimension without a new global size: UR's `INVALID_VALUE`,
            // as for a change without a new offset below.
            for (name, list) in [("global offset", update.global_offset), ("local size", local_given)] {
                let changes = list.is_some_and(|l| (1..=3).contains(&l.len()) && l.len() != old.work_dim as usize);
                ensure!(
                    !changes,
                    InvalidValue,
                    "the new {name} changes the work dimension from {} without a new global size",
                    old.work_dim
                );
            }
            old.work_dim as usize
        }
    };
    let work_dim = check_dims(work_dim, &[("global offset", update.global_offset), ("local size", local_given)])?;
    let dims_changed = work_dim != old.work_dim;
    ensure!(
        !dims_changed || update.global_offset.is_some(),
        InvalidValue,
        "the work dimension changes from {} to {work_dim} without a new global offset",
        old.work_dim
    );
    let global = update.global_size.map_or(old.global_size, |g| to_3d(g, 1));
    let offset = update.global_offset.map_or(old.global_offset, |o| to_3d(o, 0));
    let local = match (update.local_size, origin) {
        (LocalSizeUpdate::Set(l), _) => Some(to_3d(l, 1)),
        (LocalSizeUpdate::ImplementationChosen, _) => None,
        (LocalSizeUpdate::Keep, LocalSizeOrigin::Implementation) => {
            if update.global_size.is_some() || switched {
                // The implementation chooses again for the new sizes: that changes
                // the local size.
                need(UpdateCapabilities::LOCAL_WORK_SIZE, "the implementation-chosen local size")?;
            }
            None
        }
        (LocalSizeUpdate::Keep, LocalSizeOrigin::User) => {
            ensure!(
                !dims_changed,
                InvalidValue,
                "the work dimension changes from {} to {work_dim}: give a local size or let the implementation choose",
                old.work_dim
            );
            Some(old.local_size)
        }
    };
    resolve_range(ctx.device().info(), kernel, work_dim, global, offset, local)
}

/// The arguments after `update`: all of them given anew for a switched
/// kernel, else the current ones with the changed ones replaced.
fn updated_args(
    ctx: &Context,
    current: &KernelCommand,
    update: &KernelLaunchUpdate<'_>,
    kernel: &Kernel,
    switched: bool,
) -> Result<Vec<ArgValue>> {
    let kinds = &kernel.signature().args;
    let resolve = |index: usize, arg| {
        ensure!(
            index < kinds.len(),
            InvalidKernelArgumentIndex,
            "argument index {index} of `{}`, which takes {}",
            kernel.name(),
            kinds.len()
        );
        resolve_arg(ctx, kernel, index, kinds[index], arg)
    };
    if switched {
        let mut args: Vec<Option<ArgValue>> = vec![None; kinds.len()];
        for (index, arg) in &update.args {
            args[*index] = Some(resolve(*index, arg)?);
        }
        args.into_iter()
            .enumerate()
            .map(|(i, a)| {
                a.ok_or_else(|| {
                    err!(InvalidKernelArgumentIndex, "switching to `{}` leaves its argument {i} unset", kernel.name())
                })
            })
            .collect::<Result<Vec<_>>>()
    } else {
        // Same kernel: the current arguments (one per declared argument)
        // with the changed ones replaced, in one allocation.
        let mut args = current.args.clone();
        for (index, arg) in &update.args {
            args[*index] = resolve(*index, arg)?;
        }
        Ok(args)
    }
}
