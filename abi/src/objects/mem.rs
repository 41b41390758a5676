//! The memory-object handle and its host memory.

use std::collections::HashMap;
use std::sync::Arc;

use cmdbuf_core::{BufferMapping, MemBuffer};
use parking_lot::Mutex;

use crate::handle::Handle;
use crate::objects::context::ContextRef;

/// A memory buffer, its context, and its mappings by host address.
pub struct Mem {
    pub(crate) buffer: MemBuffer,
    pub(crate) context: ContextRef,
    /// The host memory a `USE_HOST_POINTER` buffer was made over: its maps
    /// land there, as OpenCL's do.
    pub(crate) host: Option<HostMemory>,
    pub(crate) mappings: Mutex<HashMap<usize, BufferMapping>>,
}

/// Host memory the application lent a buffer for its life.
#[derive(Copy, Clone)]
pub(crate) struct HostMemory(pub(crate) *mut u8);

// SAFETY: UR requires a USE_HOST_POINTER buffer's memory to stay valid for
// the buffer's life; the pointer is only used by maps, from any thread.
unsafe impl Send for HostMemory {}

// SAFETY: as for Send: maps on any thread use the pointer, and the memory
// behind it stays valid for the buffer's life (UR's contract).
unsafe impl Sync for HostMemory {}

impl Mem {
    /// A memory handle's value for a root buffer of `context` with no lent
    /// host memory (an adopted one).
    pub(crate) fn from_core(buffer: MemBuffer, context: ContextRef) -> Mem {
        Mem { buffer, context, host: None, mappings: Mutex::default() }
    }

    /// The cmdbuf-core buffer.
    pub(crate) fn core(&self) -> &MemBuffer {
        &self.buffer
    }

    /// The buffer's context handle.
    pub(crate) fn context(&self) -> &ContextRef {
        &self.context
    }
}

/// Keeps a memory handle alive for objects that refer to it.
#[allow(dead_code)]
pub(crate) type MemRef = Arc<Handle<Mem>>;
