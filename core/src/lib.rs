//! # cmdbuf-core
//!
//! A Unified-Runtime-style API in Rust: one "record once, replay many"
//! command-buffer interface over several backends (a CPU thread pool,
//! OpenCL, Vulkan, CUDA), modelled on UR's `urCommandBuffer*Exp` API.
//!
//! Layers, top to bottom (a module imports only modules of its own layer
//! or below: the test `tests/layers.rs` holds the table, and
//! docs/architecture.md draws it):
//! - the **loader** ([`Loader`]) and **selector** ([`selector`]), which open
//!   the compiled-in adapters and pick devices with the
//!   `ONEAPI_DEVICE_SELECTOR` grammar;
//! - the **front end**: the public API ([`Context`], [`Queue`],
//!   [`UsmAllocation`], [`MemBuffer`], [`Program`], [`Kernel`], [`Event`],
//!   [`CommandBuffer`]), safe types that validate every call once, for every
//!   backend, and return [`UrError`] variants named after UR's result codes;
//!   beside it the **software command buffer**, which gives every adapter the
//!   whole command-buffer API over its eager queue operations, UR's **graph
//!   capture** ([`capture`]): a capturing queue appends its enqueues to a
//!   command buffer, which instantiation finalizes, and, with the cargo
//!   feature `fault-injection`, for tests, the **fault injector** (module
//!   `faults`): a wrapper around an adapter that fails chosen calls as a
//!   driver would and counts each context's live adapter objects. The
//!   feature only adds that module, which sits above the adapter interface
//!   and hands adapters their own objects: the rest of the crate compiles
//!   to the same code with or without it;
//! - the **adapter interface** ([`adapter`], [`command`], [`launch`]):
//!   object-safe traits adapter crates implement, whose methods trust what
//!   the front end validated, and the commands they are given (the objects
//!   inside them are defined there too, their behaviour in the front end);
//! - the **types** ([`types`]): plain descriptor and info types, errors and
//!   readers of kernel code.
//!
//! SYCL's `command_graph` (explicit building, queue recording, host tasks,
//! sub-graphs, updates, graph-owned memory) is not here: it lives in the
//! `cmdbuf-runtime` crate, built on this crate's public API.
//!
//! Applications usually depend on the `cmdbuf` crate, which re-exports this one
//! and registers the adapters its features compile in.
#![deny(unsafe_op_in_unsafe_fn)]

// One folder per layer, bottom first; tests/layers.rs keeps them one-way.
pub mod types;

pub mod adapter;
mod api;
pub mod loader;

// Every module keeps its path at the crate root (`cmdbuf_core::error::UrError`,
// `cmdbuf_core::queue::Queue`, `cmdbuf_core::selector::DeviceSelector`, ...).
pub use types::{clock, cpu_table, error, live, native, ptx, rect, spirv};

pub use adapter::{command, launch};
use adapter::{objects, operands};

#[cfg(feature = "fault-injection")]
pub use api::faults;
pub use api::{
    adopt, capture, collective, command_buffer, context, device, event, interop, memory, peer, platform, program,
    queue, shared_usm,
};
use api::{host_threads, registry, software};

pub use loader::selector;

pub use adopt::{AdoptedBuffer, Ownership};
pub use capture::{CapturedGraph, InstantiatedGraph};
pub use clock::{Timestamps, host_clock_ns};
pub use command::{Command, CommandKind, Pattern};
pub use command_buffer::{
    AppendOptions, Appended, CommandBuffer, CommandBufferDesc, CommandHandle, ComposedCommandBuffer, ComposedPart,
    KernelLaunchUpdate, LocalSizeUpdate, NativeHandle, SyncPoint,
};
pub use context::{Context, ContextId};
pub use device::{
    AffinityDomain, AffinityDomains, AtomicCaps, BinaryTarget, CacheType, CommandBufferCaps, CommandBufferSupport,
    Device, DeviceId, DeviceInfo, DeviceType, FpCapabilities, FpConfigs, GlobalMemCache, LocalMemType, MemoryHardware,
    MemoryOrders, MemoryScopes, Partition, PartitionKind, PartitionSupport, ReplayPath, SubGroups, UpdateCapabilities,
    UsmKinds, VectorWidths, capability_extensions,
};
pub use error::{Detail, Result, UrError};
pub use event::{Event, EventStatus, ProfilingInfo, UserEvent};
pub use interop::{NativeCommand, NativeFn, NativeScope, NativeTarget};
pub use launch::{ArgValue, KernelArg, KernelCommand, KernelLaunch, LocalSizeOrigin};
pub use live::{LiveObjects, live_objects};
pub use loader::{AbsentAdapter, AdapterEntry, Loader};
pub use memory::{
    BufferMapping, HostPtr, MapFlags, MemBuffer, MemFlags, MemLoc, MigrationFlags, UsmAdvice, UsmAllocation, UsmKind,
    UsmPtr, UsmRef,
};
pub use native::{
    CGroup, CKernelFn, NativeArg, NativeKernel, NativeKernelFn, NdRange, RustKernelFn, WorkGroup, WorkItem,
};
pub use peer::PeerAccess;
pub use platform::{Backend, Platform};
pub use program::{
    ArgKind, CacheConfig, Kernel, KernelSignature, Program, ProgramBundle, ProgramSource, SourceForm, SpirvModule,
};
pub use queue::{Queue, QueueProperties};
pub use rect::{RectLayout, RectOffset, RectRegion};
pub use selector::DeviceSelector;
