//! Descriptors the front end hands to adapters when it creates an object:
//! queue and command-buffer properties, and what a device reports about
//! peer access.

/// Whether a device can use memory of a peer device
/// (`urUsmP2PPeerAccessGetInfoExp`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PeerAccess {
    /// Queues of the device can copy to and from, and its kernels read and
    /// write, USM device memory allocated in a context of the peer, once
    /// enabled (`UR_EXP_PEER_INFO_UR_PEER_ACCESS_SUPPORTED`).
    pub supported: bool,
    /// Atomic operations of its kernels on that memory are atomic
    /// (`UR_EXP_PEER_INFO_UR_PEER_ATOMICS_SUPPORTED`).
    pub atomics: bool,
}

impl PeerAccess {
    /// Neither access nor atomics.
    pub const NONE: PeerAccess = PeerAccess { supported: false, atomics: false };
}

/// Properties of a command buffer (`ur_exp_command_buffer_desc_t`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommandBufferDesc {
    /// Commands can be updated after finalize; appends return command handles.
    pub updatable: bool,
    /// Every command runs after the previous one; sync points still name
    /// commands but add no ordering.
    pub in_order: bool,
    /// Submissions and signal events record profiling timestamps (on profiling queues).
    pub profiling: bool,
    /// A name for diagnostics, shown in the tracing spans of the buffer's
    /// operations (create, append, finalize, enqueue, update); no meaning to
    /// UR. A `&'static str` keeps the descriptor `Copy`.
    pub label: Option<&'static str>,
}

impl CommandBufferDesc {
    /// This descriptor with `label` as its [`label`](Self::label).
    pub fn with_label(self, label: &'static str) -> CommandBufferDesc {
        CommandBufferDesc { label: Some(label), ..self }
    }
}

/// How a queue runs its commands.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueProperties {
    /// Commands may run in any order their wait lists allow (default: in order).
    pub out_of_order: bool,
    /// Events record profiling timestamps.
    pub profiling: bool,
}

/// Identity of a context, for checks that objects belong together.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContextId(pub(crate) u64);
