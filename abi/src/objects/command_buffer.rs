//! The command-buffer handles (a buffer and its commands' handles) and the
//! tail every `urCommandBufferAppend*Exp` shares: sync points, wait events,
//! out-parameters.

use std::sync::{Arc, Weak};

use cmdbuf_core::{AppendOptions, Appended, CommandHandle, SyncPoint, ensure, err};
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::entry::AbiResult;
use crate::handle::Handle;
use crate::info::{slice, write_opt};
use crate::objects::context::ContextRef;
use crate::objects::event::{emit_unqueued, wait_list};
use crate::sys::*;

/// A command buffer, its context and the handles of its commands.
pub struct CommandBuffer {
    pub(crate) buffer: cmdbuf_core::CommandBuffer,
    pub(crate) context: ContextRef,
    pub(crate) commands: Mutex<Vec<Arc<Handle<Command>>>>,
}

/// A command of an updatable command buffer.
pub struct Command {
    pub(crate) buffer: Weak<Handle<CommandBuffer>>,
    pub(crate) handle: CommandHandle,
}

impl CommandBuffer {
    /// The cmdbuf-core command buffer.
    pub(crate) fn core(&self) -> &cmdbuf_core::CommandBuffer {
        &self.buffer
    }
}

impl Command {
    /// The command's buffer, alive while the application holds it (UR's contract).
    pub(crate) fn buffer(&self) -> AbiResult<Arc<Handle<CommandBuffer>>> {
        self.buffer.upgrade().ok_or_else(|| err!(InvalidCommandBuffer, "the command's command buffer was released"))
    }
}

/// The out-parameters an append hands back.
pub(crate) struct AppendOut {
    pub(crate) sync_point: *mut ur_exp_command_buffer_sync_point_t,
    pub(crate) event: *mut ur_event_handle_t,
    pub(crate) command: *mut ur_exp_command_buffer_command_handle_t,
}

/// What every `urCommandBufferAppend*Exp` shares: resolves the buffer, its
/// sync points and wait events, appends with `append`, and hands out the
/// sync point, signal event and command handle that were asked for.
///
/// # Safety
/// As UR's contract for every `urCommandBufferAppend*Exp` gives them:
/// `buffer` is null or one of this adapter's handles; `sync_points` is null
/// or holds `num_sync_points` sync points; `events` is null or holds
/// `num_events` handles, each null or one of this adapter's; each of `out`'s
/// pointers is null or writable.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn append(
    buffer: ur_exp_command_buffer_handle_t,
    num_sync_points: u32,
    sync_points: *const ur_exp_command_buffer_sync_point_t,
    num_events: u32,
    events: *const ur_event_handle_t,
    out: AppendOut,
    command_type: ur_command_t,
    append: impl FnOnce(&cmdbuf_core::CommandBuffer, AppendOptions<'_>) -> cmdbuf_core::Result<Appended>,
) -> AbiResult {
    // SAFETY: `buffer` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
    let handle = unsafe { Handle::<CommandBuffer>::get(buffer)? };
    let cb = &handle.value;
    // SAFETY: `sync_points` is null or holds `num_sync_points` sync points (this function's `# Safety`), all `slice`
    // needs; null with a count is refused.
    let raw_points = unsafe {
        slice(sync_points, num_sync_points as usize, || {
            err!(InvalidSyncPointWaitList, "the sync-point list and its count disagree")
        })?
    };
    // Sync points order nothing in an in-order buffer; UR ignores them there.
    let points: SmallVec<[SyncPoint; 8]> = if cb.buffer.descriptor().in_order {
        SmallVec::new()
    } else {
        raw_points.iter().map(|p| cb.buffer.sync_point_from_raw(*p)).collect()
    };
    // SAFETY: `events` is null or points to `num_events` event handles (this function's `# Safety`), all `wait_list`
    // needs.
    let wait = unsafe { wait_list(events, num_events)? };
    ensure!(
        out.command.is_null() || cb.buffer.descriptor().updatable,
        InvalidOperation,
        "a command handle was asked of a command buffer that is not updatable"
    );
    let mut opts = AppendOptions::new().after(&points).wait_events(&wait);
    if !out.event.is_null() {
        opts = opts.signal_event();
    }
    let appended = append(&cb.buffer, opts)?;
    // SAFETY: null or writable per the contract.
    unsafe { write_opt(out.sync_point, appended.sync_point.index()) };
    if let Some(event) = appended.event {
        // SAFETY: `out.event` is null or writable (this function's `# Safety`), all `emit_unqueued` needs.
        unsafe { emit_unqueued(out.event, event, &cb.context, command_type) };
    }
    if let (Some(command), false) = (appended.command, out.command.is_null()) {
        let command = Handle::new_arc(Command { buffer: Arc::downgrade(&handle.to_arc()), handle: command });
        // SAFETY: non-null and writable per the contract.
        unsafe { out.command.write(command.raw()) };
        cb.commands.lock().push(command);
    }
    Ok(())
}
