//! A command-buffer native command's own `cl_command_buffer_khr`.
//!
//! UR calls the callback of `urCommandBufferAppendNativeCommandExp` once,
//! during the append. The commands it records cannot be copied into another
//! `cl_command_buffer_khr`, so they get one of their own, recorded and
//! finalized at the append and enqueued by every submission (and by every
//! instance recorded anew after an update) as an eager step: ordered by
//! events after the command's dependencies and before its dependents.

use std::cell::RefCell;
use std::sync::Arc;

use cmdbuf_core::NativeCommand;
use cmdbuf_core::adapter::prelude::*;

use crate::conv::ClResultExt;
use crate::device::{NativeCommandBuffers, Shared};
use crate::event::WaitList;
use crate::ffi::{CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, RawEvent, cl_command_buffer_khr};

/// The finalized work of one native command.
pub(crate) struct NativeSegment {
    shared: Arc<Shared>,
    handle: cl_command_buffer_khr,
    /// Its latest enqueue, waited for before the next where the device
    /// cannot enqueue a pending command-buffer again.
    last: RefCell<Option<RawEvent>>,
}

// SAFETY: the handle is only used under the front end's per-buffer lock;
// OpenCL objects may be used from any thread.
unsafe impl Send for NativeSegment {}

impl NativeSegment {
    /// Creates the command-buffer, runs the callback with it as the
    /// recording target (the one call UR makes), and finalizes it.
    pub(crate) fn record(shared: &Arc<Shared>, native: &NativeCommand) -> Result<NativeSegment> {
        let api = &native_buffers(shared).api;
        let flags =
            if native_buffers(shared).setup.simultaneous_use_flag { CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR } else { 0 };
        // SAFETY: the internal queue belongs to the device the table was resolved for.
        let handle = unsafe { api.create(shared.internal_queue(), flags) }.cl("clCreateCommandBufferKHR")?;
        // Owns the handle from here, so that an error below releases it.
        let segment = NativeSegment { shared: shared.clone(), handle, last: RefCell::new(None) };
        // SAFETY: the target is a new command-buffer in the recording state,
        // valid for the call; events order it as a whole at each submission.
        unsafe { native.invoke(Backend::OpenCl, NativeTarget::Recording(NativeHandle(handle as u64)))? };
        // SAFETY: a recording command-buffer of this table.
        unsafe { api.finalize(handle) }.cl("clFinalizeCommandBufferKHR (after the native command's callback)")?;
        Ok(segment)
    }

    /// Enqueues the recorded work after `wait`, on the internal queue.
    ///
    /// # Safety
    /// `wait` holds valid events of the context.
    pub(crate) unsafe fn enqueue(&self, wait: &WaitList) -> Result<RawEvent> {
        let native = native_buffers(&self.shared);
        if native.setup.instance_per_pending_submission
            && let Some(last) = self.last.borrow().as_ref()
            && !last.is_done()
        {
            // The one recording cannot be enqueued while pending, and
            // recording it again would call the callback again.
            last.wait().cl("waiting for the previous submission of a native command")?;
        }
        // SAFETY: a finalized command-buffer of this table; valid events.
        let event = unsafe { native.api.enqueue(self.handle, wait.handles()) }.cl("clEnqueueCommandBufferKHR")?;
        // SAFETY: a new reference from the enqueue.
        let event = unsafe { RawEvent::from_raw(event) };
        *self.last.borrow_mut() = Some(event.retain());
        Ok(event)
    }
}

impl Drop for NativeSegment {
    fn drop(&mut self) {
        // SAFETY: this segment owns the handle; the command buffer holding it
        // is dropped after its last submission (the front end keeps it alive
        // while one is in flight).
        if let Err(code) = unsafe { native_buffers(&self.shared).api.release(self.handle) } {
            tracing::error!(code, "clReleaseCommandBufferKHR failed");
        }
    }
}

fn native_buffers(shared: &Shared) -> &NativeCommandBuffers {
    shared.device.command_buffers.as_ref().expect("native command buffers")
}
