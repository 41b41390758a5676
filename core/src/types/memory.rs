//! Plain memory types: USM kinds and addresses, buffer, migration, advice
//! and mapping flags, raw host addresses.

use std::fmt;

use bitflags::bitflags;

use crate::types::device::UsmKinds;

/// The kind of a USM allocation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UsmKind {
    /// Host memory the device can access.
    Host,
    /// Device memory.
    Device,
    /// Memory accessible from host and device, migrated by the driver.
    Shared,
}

impl UsmKind {
    /// The capability bit a device reports for this kind.
    pub(crate) fn flag(self) -> UsmKinds {
        match self {
            UsmKind::Host => UsmKinds::HOST,
            UsmKind::Device => UsmKinds::DEVICE,
            UsmKind::Shared => UsmKinds::SHARED,
        }
    }
}

/// A USM address as device code sees it: a host pointer on the CPU adapter, a
/// `CUdeviceptr` on CUDA, a buffer device address on Vulkan, an SVM/USM
/// pointer on OpenCL. Kernel pointer arguments are `UsmPtr`s.
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct UsmPtr(pub(crate) u64);

impl UsmPtr {
    /// The null pointer; accepted as a kernel pointer argument.
    pub const NULL: UsmPtr = UsmPtr(0);

    /// A pointer from a raw address.
    pub const fn from_addr(addr: u64) -> UsmPtr {
        UsmPtr(addr)
    }

    /// The raw address.
    pub const fn addr(self) -> u64 {
        self.0
    }

    /// Whether this is the null pointer.
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// The pointer `bytes` further on. Never fails: validity is checked when
    /// the pointer is used.
    pub const fn byte_add(self, bytes: usize) -> UsmPtr {
        UsmPtr(self.0.wrapping_add(bytes as u64))
    }
}

impl fmt::Debug for UsmPtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UsmPtr({:#x})", self.0)
    }
}

bitflags! {
    /// How a memory buffer may be used (`ur_mem_flags_t`, the access part).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MemFlags: u32 {
        /// Kernels read and write it (the default).
        const READ_WRITE = 1 << 0;
        /// Kernels only write it.
        const WRITE_ONLY = 1 << 1;
        /// Kernels only read it.
        const READ_ONLY = 1 << 2;
        /// Allocate it in host-accessible memory.
        const ALLOC_HOST_POINTER = 1 << 4;
    }
}

bitflags! {
    /// Direction of a USM prefetch (`ur_usm_migration_flags_t`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MigrationFlags: u32 {
        /// Towards the device.
        const HOST_TO_DEVICE = 1 << 0;
        /// Towards the host.
        const DEVICE_TO_HOST = 1 << 1;
    }
}

bitflags! {
    /// Advice about a USM range (`ur_usm_advice_flags_t`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct UsmAdvice: u32 {
        /// Mostly read.
        const SET_READ_MOSTLY = 1 << 0;
        /// Undo `SET_READ_MOSTLY`.
        const CLEAR_READ_MOSTLY = 1 << 1;
        /// Prefer the device's memory.
        const SET_PREFERRED_LOCATION = 1 << 2;
        /// Undo `SET_PREFERRED_LOCATION`.
        const CLEAR_PREFERRED_LOCATION = 1 << 3;
        /// Expect non-atomic access from the device.
        const SET_NON_ATOMIC_MOSTLY = 1 << 4;
        /// Undo `SET_NON_ATOMIC_MOSTLY`.
        const CLEAR_NON_ATOMIC_MOSTLY = 1 << 5;
        /// Keep it coarse-grained.
        const BIAS_CACHED = 1 << 6;
        /// Keep it fine-grained.
        const BIAS_UNCACHED = 1 << 7;
        /// Prefer host memory.
        const SET_PREFERRED_LOCATION_HOST = 1 << 10;
        /// Undo `SET_PREFERRED_LOCATION_HOST`.
        const CLEAR_PREFERRED_LOCATION_HOST = 1 << 11;
        /// The device will access the range.
        const SET_ACCESSED_BY_DEVICE = 1 << 12;
        /// Undo `SET_ACCESSED_BY_DEVICE`.
        const CLEAR_ACCESSED_BY_DEVICE = 1 << 13;
        /// The host will access the range.
        const SET_ACCESSED_BY_HOST = 1 << 14;
        /// Undo `SET_ACCESSED_BY_HOST`.
        const CLEAR_ACCESSED_BY_HOST = 1 << 15;
        /// Host and device need not see each other's writes coherently.
        const SET_NON_COHERENT_MEMORY = 1 << 16;
        /// Undo `SET_NON_COHERENT_MEMORY`.
        const CLEAR_NON_COHERENT_MEMORY = 1 << 17;
    }
}

/// A raw host address in a command. Only `unsafe` entry points and blocking
/// calls (which keep the borrow for their whole duration) create one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostPtr(pub(crate) *mut u8);

// SAFETY: a HostPtr is only an address; the entry points that create one make
// the caller guarantee that the memory stays valid and unaliased while the
// command may run, on whichever thread runs it.
unsafe impl Send for HostPtr {}
// SAFETY: as for Send: sharing the address is harmless, access is governed by
// the creating entry point's contract.
unsafe impl Sync for HostPtr {}

impl HostPtr {
    /// The address.
    pub fn as_ptr(self) -> *mut u8 {
        self.0
    }
}

bitflags! {
    /// What a buffer mapping is for (`ur_map_flags_t`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MapFlags: u32 {
        /// The host reads the mapped bytes: they are the buffer's when the map completes.
        const READ = 1 << 0;
        /// The host writes the mapped bytes: unmapping writes them back. Also
        /// brings the buffer's bytes, so that a partial write keeps the rest.
        const WRITE = 1 << 1;
        /// The host overwrites every mapped byte: nothing is read, unmapping
        /// writes them back.
        const WRITE_INVALIDATE_REGION = 1 << 2;
    }
}
