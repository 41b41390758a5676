//! What a submission carries beside its command buffers: host memory
//! staged on either side of the device part, kernels' status words to
//! check, and the objects it keeps alive until it completes.
//!
//! The bottom of the shared state: plain values that name nothing else of
//! it, filled in by lowering and read by a lane's completion thread.

use std::any::Any;
use std::sync::Arc;

use cmdbuf_core::HostPtr;
use cmdbuf_core::adapter::prelude::*;
use parking_lot::Mutex;
use smallvec::SmallVec;

/// Host memory staged through host-visible memory: rows of
/// `(host offset, staging offset, length)`.
#[derive(Clone)]
pub(crate) struct HostCopy {
    pub(crate) host: HostPtr,
    pub(crate) staging: StagingPtr,
    pub(crate) rows: SmallVec<[(usize, usize, usize); 1]>,
}

/// The mapped address of staging memory.
#[derive(Copy, Clone)]
pub(crate) struct StagingPtr(pub(crate) *mut u8);

// SAFETY: an address of mapped memory that the submission holding it keeps
// alive; access is ordered by the submission's dependencies.
unsafe impl Send for StagingPtr {}
// SAFETY: as for Send.
unsafe impl Sync for StagingPtr {}

impl HostCopy {
    /// Copies host memory into staging.
    ///
    /// # Safety
    /// The host rows are readable (the command's contract) and the staging
    /// rows lie in live mapped memory nothing else uses now.
    pub(crate) unsafe fn copy_in(&self) {
        for &(h, s, n) in &self.rows {
            // SAFETY: the host rows are readable and the staging rows live mapped memory nothing else
            // uses (this function's `# Safety`); the two sides are distinct memory.
            unsafe { std::ptr::copy_nonoverlapping(self.host.as_ptr().add(h), self.staging.0.add(s), n) };
        }
    }

    /// Copies staging into host memory.
    ///
    /// # Safety
    /// As for [`copy_in`](Self::copy_in), with the host rows writable.
    pub(crate) unsafe fn copy_out(&self) {
        for &(h, s, n) in &self.rows {
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(self.staging.0.add(s), self.host.as_ptr().add(h), n) };
        }
    }
}

/// Status words of launches, checked once they have completed: a kernel
/// that set its word failed.
pub(crate) struct StatusCheck {
    /// The first of `count` consecutive 4-byte words.
    pub(crate) words: StagingPtr,
    pub(crate) count: usize,
    /// Which launch each word belongs to, for the error message.
    pub(crate) what: Launches,
}

/// The launches of a [`StatusCheck`]'s words.
pub(crate) enum Launches {
    /// One eager launch (one word) of this kernel: named only on failure,
    /// so that a launch makes no message.
    One(cmdbuf_core::Kernel),
    /// Kernel commands of a command buffer: word `k` is command
    /// `commands[k]`. The message is made only on failure, so that a
    /// submission costs nothing per kernel on the host.
    Commands { commands: Arc<[u32]>, names: Arc<KernelNames> },
}

/// The current kernel name of each command of a command buffer (empty for
/// other commands); an update that switches a command's kernel renames it.
pub(crate) type KernelNames = Mutex<Vec<Arc<str>>>;

impl StatusCheck {
    /// The failure of the first launch whose kernel reported one.
    ///
    /// # Safety
    /// The words are live mapped memory the completed launches wrote (if at all).
    pub(super) unsafe fn failure(&self) -> Option<UrError> {
        let words = self.words.0.cast::<u32>();
        let (k, code) = (0..self.count).find_map(|k| {
            // SAFETY: the words are live mapped memory the completed launches wrote (this function's
            // `# Safety`); word `k` lies in the checked range, 4-byte aligned.
            let code = unsafe { words.add(k).read_volatile() };
            (code != 0).then_some((k, code))
        })?;
        let what = match &self.what {
            Launches::One(kernel) => format!("kernel `{}`", kernel.name()),
            Launches::Commands { commands, names } => {
                let i = commands[k];
                let name = names.lock().get(i as usize).cloned().unwrap_or_else(|| "?".into());
                format!("kernel `{name}` (command {i})")
            }
        };
        Some(cmdbuf_core::event::execution_error(
            cmdbuf_core::Backend::Vulkan,
            format!("{what} failed with code {code}"),
        ))
    }
}

/// What a submission keeps alive until it completes: inline for an eager
/// command's few objects (its argument block, its pipeline), so that a
/// command allocates no list for them.
pub(crate) type Keep = SmallVec<[Kept; 4]>;

/// One thing a submission keeps alive (held only to be dropped once it
/// completes). An eager launch's argument block and pipeline are held
/// unboxed: two allocations fewer per launch.
pub(crate) enum Kept {
    /// An arena slice: an argument block, staging.
    Slice(#[expect(dead_code, reason = "held for its drop")] crate::memory::Slice),
    /// A kernel's pipeline.
    Pipeline(#[expect(dead_code, reason = "held for its drop")] Arc<crate::program::Pipeline>),
    /// Anything else.
    Other(#[expect(dead_code, reason = "held for its drop")] Box<dyn Any + Send + Sync>),
}

/// Status words to check once a submission has completed: an eager
/// launch's one inline.
pub(crate) type Checks = SmallVec<[StatusCheck; 1]>;
