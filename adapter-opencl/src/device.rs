//! Devices, the decisions made once per device (which USM mechanism, and
//! whether and through which ABI command buffers are native), and a
//! context's state ([`Shared`], with its helper kernels' definition): what
//! every object of the adapter names. What makes contexts is above them all
//! (`ClContext` in `context.rs`, `DeviceImpl` and the platform in
//! `platform.rs`).
//!
//! The decisions are a pure function ([`setup`]) of what the device reports
//! ([`Reported`]), unit-tested with constructed inputs; discovery only
//! queries the driver and resolves the entry points the setup asks for.

use std::ops::Deref;
use std::sync::{Arc, OnceLock, Weak};

use cl3::types::{cl_bitfield, cl_command_queue, cl_device_id, cl_platform_id, cl_uint};
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{
    CommandBufferCaps, CommandBufferSupport, DeviceInfo, DeviceType, ReplayPath, UpdateCapabilities, UsmKinds,
};
use parking_lot::Mutex;

use crate::clock::DeviceClock;
use crate::conv::ClResultExt;
use crate::ffi::{
    self, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CL_QUEUE_PROFILING_ENABLE, CommandBufferApi, IntelUsmApi, RawEvent,
};
use crate::info;
use crate::one_launch;
use crate::partition::OwnedSubDevice;
use crate::replayer::ReplayThread;
use crate::spir::IlPath;
use crate::version::{self, CommandBufferAbi, ExtVersion};

const CL_DEVICE_SVM_COARSE_GRAIN_BUFFER: cl_bitfield = 1 << 0;
const CL_DEVICE_SVM_FINE_GRAIN_BUFFER: cl_bitfield = 1 << 1;
const CL_DEVICE_SVM_CAPABILITIES: cl_uint = 0x1053;

/// What a device reports that the setup depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// `CL_DEVICE_EXTENSIONS_WITH_VERSION`, parsed (empty before OpenCL 3.0).
    pub extensions: Vec<(String, ExtVersion)>,
    /// `CL_DEVICE_SVM_CAPABILITIES` (0 before OpenCL 2.0).
    pub svm: cl_bitfield,
    /// `CL_DEVICE_QUEUE_ON_HOST_PROPERTIES`.
    pub queue_properties: cl_bitfield,
    /// `CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR`.
    pub command_buffer_capabilities: cl_bitfield,
    /// `CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR`.
    pub command_buffer_required_queue_properties: cl_bitfield,
    /// `CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR` (0.9.6 and later).
    pub command_buffer_supported_queue_properties: Option<cl_bitfield>,
    /// The host, device and single-device shared capabilities of
    /// `cl_intel_unified_shared_memory`.
    pub intel_usm: [cl_bitfield; 3],
    /// `CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR` (0 without
    /// `cl_khr_command_buffer_mutable_dispatch`).
    pub mutable_dispatch_capabilities: cl_bitfield,
}

/// How USM is implemented on a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UsmSetup {
    /// `cl_intel_unified_shared_memory`, with these kinds.
    Intel(UsmKinds),
    /// SVM with fine-grained buffers: host and shared USM are fine-grained
    /// (host-accessible), device USM coarse-grained.
    SvmFine,
    /// Coarse-grained SVM only: device USM. Host and shared USM would need
    /// the host to map and unmap around every access, which USM's host
    /// pointers cannot express, so those kinds are reported absent.
    SvmCoarse,
    /// Neither: no USM.
    None,
}

impl UsmSetup {
    /// The kinds a device with this setup allocates.
    pub fn kinds(self) -> UsmKinds {
        match self {
            UsmSetup::Intel(kinds) => kinds,
            UsmSetup::SvmFine => UsmKinds::all(),
            UsmSetup::SvmCoarse => UsmKinds::DEVICE,
            UsmSetup::None => UsmKinds::empty(),
        }
    }
}

/// How native command buffers are used on a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CommandBufferSetup {
    /// The extension version the device reports.
    pub version: ExtVersion,
    /// The ABI row for it.
    pub abi: CommandBufferAbi,
    /// Create command-buffers with `CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR`,
    /// so that one can be enqueued again while pending.
    pub simultaneous_use_flag: bool,
    /// A pending command-buffer cannot be enqueued again: keep several
    /// recorded instances and use one that is idle.
    pub instance_per_pending_submission: bool,
    /// Record on an out-of-order queue, so that commands without a sync-point
    /// dependency may run concurrently.
    pub out_of_order: bool,
    /// The recording queue needs profiling enabled.
    pub profiling_queue: bool,
    /// From 0.9.8 (no pending state), the queue properties
    /// (`CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR`,
    /// `..._SUPPORTED_...`) of queues a command-buffer may be enqueued on in
    /// place of its recording queue; `None` before.
    pub enqueue_queue_properties: Option<(cl_bitfield, cl_bitfield)>,
    /// The `CL_MUTABLE_DISPATCH_*_KHR` fields that kernel commands of
    /// updatable command-buffers are recorded with, so that updates of them
    /// go through `clUpdateMutableCommandsKHR` (0: updates re-record; see
    /// [`mutable_dispatch_rule`]).
    pub mutable_fields: cl_bitfield,
}

/// Everything decided for one device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeviceSetup {
    /// USM mechanism.
    pub usm: UsmSetup,
    /// Native command buffers, or `Err` with the reason they are emulated.
    pub command_buffer: std::result::Result<CommandBufferSetup, &'static str>,
}

/// Decides, from what a device reports, how USM and command buffers are done.
pub fn setup(reported: &Reported) -> DeviceSetup {
    let has = |name| version::extension_version(&reported.extensions, name);
    let access = |caps: cl_bitfield| caps & ffi::CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL != 0;
    let usm = if has(version::USM_EXTENSION).is_some() {
        let mut kinds = UsmKinds::empty();
        kinds.set(UsmKinds::HOST, access(reported.intel_usm[0]));
        kinds.set(UsmKinds::DEVICE, access(reported.intel_usm[1]));
        kinds.set(UsmKinds::SHARED, access(reported.intel_usm[2]));
        UsmSetup::Intel(kinds)
    } else if reported.svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER != 0 {
        UsmSetup::SvmFine
    } else if reported.svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0 {
        UsmSetup::SvmCoarse
    } else {
        UsmSetup::None
    };
    DeviceSetup { usm, command_buffer: command_buffer_plan(reported, has(version::COMMAND_BUFFER_EXTENSION)) }
}

fn command_buffer_plan(
    reported: &Reported,
    version: Option<ExtVersion>,
) -> std::result::Result<CommandBufferSetup, &'static str> {
    let version = version.ok_or("the device does not report cl_khr_command_buffer")?;
    let abi = version::select_abi(version)
        .ok_or("the device's cl_khr_command_buffer version is not one this adapter knows")?;
    let ooo_queues = reported.queue_properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0;
    let required = reported.command_buffer_required_queue_properties;
    if required & !(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE) != 0 {
        return Err("command-buffers need queue properties this adapter does not know");
    }
    if required & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0 && !ooo_queues {
        return Err("command-buffers need out-of-order queues, which the device lacks");
    }
    let ooo_recording = if abi.out_of_order_capability_bit {
        reported.command_buffer_capabilities & ffi::CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR != 0
    } else {
        reported.command_buffer_supported_queue_properties.unwrap_or(0) & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0
    };
    let simultaneous =
        reported.command_buffer_capabilities & ffi::CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR != 0;
    Ok(CommandBufferSetup {
        version,
        abi,
        simultaneous_use_flag: abi.pending_state && simultaneous,
        instance_per_pending_submission: abi.pending_state && !simultaneous,
        out_of_order: (ooo_recording && ooo_queues) || required & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0,
        profiling_queue: required & CL_QUEUE_PROFILING_ENABLE != 0,
        enqueue_queue_properties: (!abi.pending_state)
            .then(|| reported.command_buffer_supported_queue_properties.map(|supported| (required, supported)))
            .flatten(),
        mutable_fields: match version::extension_version(&reported.extensions, version::MUTABLE_DISPATCH_EXTENSION) {
            Some(v) if version::mutable_dispatch_known(v) => reported.mutable_dispatch_capabilities & MUTABLE_FIELDS,
            _ => 0,
        },
    })
}

/// The mutable-dispatch fields the adapter updates in place: global
/// offset, global size, local size and arguments (not execution info).
const MUTABLE_FIELDS: cl_bitfield = ffi::CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR
    | ffi::CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR
    | ffi::CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR
    | ffi::CL_MUTABLE_DISPATCH_ARGUMENTS_KHR;

/// The variable that turns mutable dispatch off (`off`), so that updates
/// re-record even where the device offers it.
pub const MUTABLE_DISPATCH_ENV: &str = "UR_OPENCL_MUTABLE_DISPATCH";

/// Whether a device's mutable dispatch is used, and why: the fields its
/// setup found (`fields`), unless `forced` is `off` or the platform is PoCL,
/// whose `clUpdateMutableCommandsKHR` (PoCL 5 to 7, read) rewrites the
/// stored sizes and offset but not the arguments.
pub fn mutable_dispatch_rule(
    platform_version: &str,
    fields: cl_bitfield,
    forced: Option<&str>,
) -> (cl_bitfield, &'static str) {
    if fields == 0 {
        (0, "no usable cl_khr_command_buffer_mutable_dispatch (0.9.2 or later)")
    } else if forced.map(str::trim) == Some("off") {
        (0, "turned off by UR_OPENCL_MUTABLE_DISPATCH=off")
    } else if platform_version.contains("PoCL") {
        (0, "PoCL's clUpdateMutableCommandsKHR does not update arguments")
    } else {
        (fields, "cl_khr_command_buffer_mutable_dispatch")
    }
}

/// The variable that forces a replay path: `driver` (where the device's
/// `cl_khr_command_buffer` is usable) or `planned`.
pub const REPLAY_ENV: &str = "UR_OPENCL_REPLAY";

/// How a device's command buffers replay, and why: the rule of
/// docs/opencl.md, "Replay path".
///
/// - `forced` ([`REPLAY_ENV`]) wins where it can be honoured;
/// - without a usable `cl_khr_command_buffer`, the adapter's pre-planned
///   eager submission;
/// - on CPU devices, the same: a CPU driver has no command processor to
///   hand a recorded buffer to, and both measured create every recorded
///   command anew at each enqueue. PoCL's `clEnqueueCommandBufferKHR` does
///   (the eager launches' cost and more), with a completion command waiting
///   for all of them, and its recording appends to a singly linked list
///   (O(N) per command); Intel's OpenCL CPU runtime 2026.2 replayed a chain
///   of 1,000 kernels at 6.4 µs per kernel through its command buffer
///   against 2.9 µs planned, and 2.5 µs eager;
/// - elsewhere, the driver's command buffer.
pub fn replay_path(cpu: bool, native: bool, forced: Option<&str>) -> (ReplayPath, &'static str) {
    match forced.map(str::trim) {
        Some("driver") if native => return (ReplayPath::Driver, "forced by UR_OPENCL_REPLAY"),
        Some("planned") => return (ReplayPath::Planned, "forced by UR_OPENCL_REPLAY"),
        _ => {}
    }
    if !native {
        (ReplayPath::Planned, "no usable cl_khr_command_buffer")
    } else if cpu {
        (ReplayPath::Planned, "CPU drivers create every recorded command anew at each enqueue")
    } else {
        (ReplayPath::Driver, "the driver's cl_khr_command_buffer")
    }
}

/// The variable that decides whether out-of-order UR queues are out-of-order
/// OpenCL queues: `on` (wherever the device offers them) or `off` (never).
pub const OUT_OF_ORDER_ENV: &str = "UR_OPENCL_OUT_OF_ORDER_QUEUES";

/// Whether the adapter asks the driver for out-of-order queues when a UR
/// queue (or the context's internal queue) may run out of order, and why.
///
/// An in-order OpenCL queue is a valid out-of-order UR queue (out of order
/// permits reordering, it does not require it), so leaving the driver's
/// out-of-order mode out loses concurrency between commands only. It is left
/// out on Intel's OpenCL CPU runtime (2026.2), whose out-of-order command
/// lists deadlock when more threads than cores wait on queues whose commands
/// depend on each other's: each waiting thread must enter the runtime's one
/// TBB arena to launch its queue's executor, and the slots are held by
/// executors waiting for work that the threads outside would launch
/// (docs/opencl.md, "Limits and known gaps"). Its CPU device runs each kernel
/// over every core already.
pub fn driver_out_of_order_rule(
    platform_name: &str,
    cpu: bool,
    offered: bool,
    forced: Option<&str>,
) -> (bool, &'static str) {
    match forced.map(str::trim) {
        _ if !offered => (false, "the device offers no out-of-order queues"),
        Some("on") => (true, "forced by UR_OPENCL_OUT_OF_ORDER_QUEUES=on"),
        Some("off") => (false, "turned off by UR_OPENCL_OUT_OF_ORDER_QUEUES=off"),
        _ if cpu && platform_name.starts_with("Intel(R) OpenCL") => {
            (false, "Intel's OpenCL CPU runtime deadlocks with out-of-order queues waited on from many threads")
        }
        _ => (true, "the device's out-of-order queues"),
    }
}

/// Which planned submissions a device's replayer takes ([`crate::replayer`]),
/// and why: [`REPLAY_THREAD_ENV`](crate::replayer::REPLAY_THREAD_ENV) where
/// set; else those that come back to back (`on`) on a device that is not
/// the host's CPU, and none on a CPU device.
///
/// Handed, a graph's submissions through libsycl cost their caller 1-11 µs
/// at 10 and 100 commands on every OpenCL device here, against 146 µs to
/// 1.2 ms made on the caller's thread. What they cost in all was measured in
/// one process, handed and not in turn (`cmdbuf-bench --only
/// replay_handover`, docs/performance.md), after runs of two processes had
/// differed by more than the question: 16 submissions back to back of 10,
/// 100 and 1,000 commands took 0.84x-1.03x on NVIDIA's OpenCL (H200) in
/// one run and 1.02x-1.12x in another (no direction: the runs' spread), and
/// 0.97x-1.07x on PoCL 5.0 with 16 cores, but 1.04x-1.15x on Intel's OpenCL
/// CPU runtime and PoCL 3.1 with 2: a CPU device's kernels run on the cores
/// the replayer takes, where a GPU's run beside them. `always` (every
/// submission, the thread woken where it sleeps) puts the wake-up on a
/// submission waited for alone: 1.35x at 10 commands on NVIDIA's OpenCL.
pub fn replay_thread_rule(forced: Option<&str>, cpu_device: bool) -> (ReplayThread, &'static str) {
    match forced.map(str::trim) {
        Some("on") => (ReplayThread::Awake, "turned on by UR_OPENCL_REPLAY_THREAD=on"),
        Some("always") => (ReplayThread::Always, "turned on by UR_OPENCL_REPLAY_THREAD=always"),
        Some("off") => (ReplayThread::Off, "turned off by UR_OPENCL_REPLAY_THREAD=off"),
        _ if cpu_device => (
            ReplayThread::Off,
            "a CPU device's kernels run on the cores the replayer would take (1.04-1.15x on 2 cores)",
        ),
        _ => (
            ReplayThread::Awake,
            "back-to-back submissions handed: the caller's time flat, the total within the runs' spread",
        ),
    }
}

/// Checks [`REPLAY_ENV`], [`MUTABLE_DISPATCH_ENV`], [`OUT_OF_ORDER_ENV`] and
/// [`REPLAY_THREAD_ENV`](crate::replayer::REPLAY_THREAD_ENV): each unset, empty, or
/// one of its values; anything else is `InvalidValue` naming the variable and
/// the values it takes.
pub fn check_env() -> cmdbuf_core::Result<()> {
    for (name, valid) in [
        (REPLAY_ENV, &["driver", "planned"][..]),
        (MUTABLE_DISPATCH_ENV, &["off"][..]),
        (OUT_OF_ORDER_ENV, &["on", "off"][..]),
        (crate::replayer::REPLAY_THREAD_ENV, &["on", "off", "always"][..]),
    ] {
        let Some(value) = std::env::var_os(name) else { continue };
        let text = value.to_string_lossy();
        let text = text.trim();
        if !text.is_empty() && !valid.contains(&text) {
            return Err(cmdbuf_core::err!(
                InvalidValue,
                "{name}={text:?}: expected {} (or unset)",
                valid.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" or ")
            ));
        }
    }
    Ok(())
}

/// The USM mechanism of a device, with the entry points it needs.
pub(crate) enum Usm {
    /// Intel's extension.
    Intel(IntelUsmApi),
    /// SVM (which kinds are fine-grained is in the device's [`UsmSetup`]).
    Svm,
    /// No USM.
    None,
}

/// Native command-buffer support of a device.
pub(crate) struct NativeCommandBuffers {
    pub(crate) setup: CommandBufferSetup,
    pub(crate) api: CommandBufferApi,
}

/// What the rest of the adapter needs to know about a device.
pub(crate) struct DeviceShared {
    pub(crate) id: cl_device_id,
    pub(crate) usm: Usm,
    pub(crate) command_buffers: Option<NativeCommandBuffers>,
    /// What command buffers replay ([`replay_path`]).
    pub(crate) replay: ReplayPath,
    /// Whether out-of-order queues are made out-of-order in the driver
    /// ([`driver_out_of_order_rule`]); where not, they are in-order there.
    pub(crate) driver_out_of_order: bool,
    /// PoCL's CPU devices before 7.0: see [`crate::one_launch`].
    pub(crate) one_launch_per_kernel: bool,
    /// Intel USM pointers go in the SVM recording commands
    /// (`clCommandSVMMemcpyKHR`, `clCommandSVMMemFillKHR`) rather than the
    /// helper kernels: Intel USM on a platform other than PoCL (Intel's
    /// runtimes take USM pointers wherever they take SVM pointers; PoCL 5.0's
    /// SVM commands are not used with them, untested there).
    pub(crate) usm_in_svm_commands: bool,
    /// Copies between SVM and host memory go through a buffer of their own
    /// ([`crate::exec`]'s `staged_svm_host_copy`): NVIDIA's OpenCL breaks the
    /// order of commands around a small `clEnqueueSVMMemcpy` with host
    /// memory.
    pub(crate) svm_host_copies_staged: bool,
    /// How SPIR-V programs reach the driver, `None` where they cannot.
    pub(crate) il_path: Option<IlPath>,
    pub(crate) info: DeviceInfo,
    /// For a sub-device, its id, released when every context and queue
    /// holding this is gone.
    pub(crate) _sub_device: Option<OwnedSubDevice>,
    /// The `cl_context` of this device alone while a context of this
    /// adapter holds it: every such context is made in it
    /// ([`NativeContext`]).
    pub(crate) own_context: Mutex<Weak<NativeContext>>,
    /// The thread that makes planned replays handed over by their callers
    /// ([`crate::replayer`]); it starts with the first.
    pub(crate) replayer: crate::replayer::Replayer,
}

// SAFETY: the device id is an opaque handle usable from any thread; the
// tables are plain function pointers.
unsafe impl Send for DeviceShared {}
// SAFETY: as for Send: nothing here is mutated after discovery but
// `own_context`, which only its lock gives access to, and the replayer,
// which is `Sync` itself.
unsafe impl Sync for DeviceShared {}

/// A `cl_context`, and the devices it holds, which outlive it.
///
/// Contexts of this adapter made on one device share one: OpenCL lets a
/// command use only buffers and wait only for events of its queue's
/// `cl_context` (`CL_INVALID_CONTEXT`), where UR lets a copy join buffers of
/// two contexts of a device and wait for another context's events (UR's
/// `urEventWaitTest.WithCrossContextDependencies`). UR's CUDA adapter is so
/// by construction: its contexts are the device's primary context. Each of
/// our contexts keeps its own queues, helper kernels and objects.
pub(crate) struct NativeContext {
    context: opencl3::context::Context,
    devices: Vec<Arc<DeviceShared>>,
}

impl NativeContext {
    pub(crate) fn new(context: opencl3::context::Context, devices: Vec<Arc<DeviceShared>>) -> NativeContext {
        NativeContext { context, devices }
    }

    /// The `cl_context` of `device` alone, made on first use and kept while
    /// a context holds it.
    pub(crate) fn of_device(device: &Arc<DeviceShared>) -> Result<Arc<NativeContext>> {
        let mut own = device.own_context.lock();
        if let Some(context) = own.upgrade() {
            return Ok(context);
        }
        let context =
            opencl3::context::Context::from_device(&opencl3::device::Device::new(device.id)).cl("clCreateContext")?;
        let made = Arc::new(NativeContext::new(context, vec![device.clone()]));
        *own = Arc::downgrade(&made);
        Ok(made)
    }
}

impl Deref for NativeContext {
    type Target = opencl3::context::Context;

    fn deref(&self) -> &opencl3::context::Context {
        &self.context
    }
}

impl Drop for NativeContext {
    /// The context's entries of the one-launch chain go before the context
    /// (and, for a sub-device, the device) is released.
    fn drop(&mut self) {
        if self.devices.first().is_some_and(|d| d.one_launch_per_kernel) {
            crate::one_launch::forget_context(self.context.get());
        }
    }
}

/// What every object of a context shares.
pub(crate) struct Shared {
    /// The device the context's own queues run on, USM is allocated for and
    /// kernels are queried on: the context's one device, or for a context
    /// over several ([`ClContext::over`](crate::context::ClContext::over)) the root device where listed, else
    /// the first listed.
    pub(crate) device: Arc<DeviceShared>,
    /// Every device of the `cl_context` that programs are built for,
    /// `device` first. Holding them keeps sub-devices' ids alive as long as
    /// the context.
    pub(crate) devices: Vec<Arc<DeviceShared>>,
    /// Shared with every other context of this adapter on `device` alone.
    pub(crate) context: Arc<NativeContext>,
    /// The queue command-buffers are recorded for and their eager steps run
    /// on; out of order where the device allows, so that independent steps
    /// overlap.
    pub(crate) internal: opencl3::command_queue::CommandQueue,
    pub(crate) helpers: Helpers,
    /// A user event that is always complete: markers on out-of-order queues
    /// wait for it rather than for an empty list, which would mean "every
    /// command enqueued before".
    pub(crate) complete: RawEvent,
    /// An in-order queue that only reads kernel status words, made on first
    /// use: a blocking read there waits for nothing but itself, where on the
    /// internal queue (in order on some devices) it could wait behind steps
    /// gated by a user event that the reading thread has yet to complete.
    pub(crate) status: OnceLock<opencl3::command_queue::CommandQueue>,
    /// An in-order profiling queue for timestamp recordings, made on first
    /// use: the device time at which a command ran is only known from the
    /// profiling of a command on a profiling queue.
    pub(crate) stamps: OnceLock<opencl3::command_queue::CommandQueue>,
    /// Why USM is refused in this context (`UnsupportedFeature`), where the
    /// driver's SVM does not reach kernels on each of its devices
    /// ([`crate::memory::svm_reaches_every_device`]).
    pub(crate) usm_refused: OnceLock<String>,
}

impl Shared {
    /// The ids of [`devices`](Shared::devices), `device` first: what
    /// programs are built for.
    pub(crate) fn device_ids(&self) -> Vec<cl_device_id> {
        self.devices.iter().map(|d| d.id).collect()
    }

    pub(crate) fn internal_queue(&self) -> cl_command_queue {
        self.internal.get()
    }

    /// The queue status words are read on.
    pub(crate) fn status_queue(&self) -> Result<cl_command_queue> {
        if let Some(queue) = self.status.get() {
            return Ok(queue.get());
        }
        let queue = create_queue(&self.context, &self.device, 0)?;
        Ok(self.status.get_or_init(|| queue).get())
    }

    /// The queue timestamp recordings are timed on.
    pub(crate) fn stamp_queue(&self) -> Result<cl_command_queue> {
        if let Some(queue) = self.stamps.get() {
            return Ok(queue.get());
        }
        // Every OpenCL device offers profiling queues.
        let queue = create_queue(&self.context, &self.device, CL_QUEUE_PROFILING_ENABLE)?;
        Ok(self.stamps.get_or_init(|| queue).get())
    }
}

/// Creates a queue on the context's device.
pub(crate) fn create_queue(
    context: &opencl3::context::Context,
    device: &DeviceShared,
    properties: cl_bitfield,
) -> Result<opencl3::command_queue::CommandQueue> {
    // SAFETY: the device belongs to the context; the properties are ones the
    // device reports (the callers check).
    unsafe { opencl3::command_queue::CommandQueue::create_with_properties(context, device.id, properties, 0) }
        .cl("clCreateCommandQueueWithProperties")
}

/// One helper kernel, as one kernel object per combination of its pointer
/// arguments' kinds (USM pointer or buffer): an argument of one object thus
/// never changes from one kind to the other, which NVIDIA's OpenCL does not
/// handle (later launches fail with `CL_INVALID_KERNEL_ARGS`; a USM fill
/// with a long pattern, a USM pointer and a pattern buffer, followed by a
/// buffer fill showed it). Each lock covers setting the arguments and
/// launching.
pub(crate) struct Helper {
    /// Indexed by `Helper::variant` (in `helpers.rs`): bit `i` set where pointer argument `i`
    /// is a buffer.
    pub(crate) kernels: Vec<Mutex<opencl3::kernel::Kernel>>,
    pub(crate) name: &'static str,
    pub(crate) group: usize,
}

/// The helper kernels of one context.
pub(crate) struct Helpers {
    pub(crate) copy: Helper,
    pub(crate) copy_rect: Helper,
    pub(crate) fill: Helper,
    pub(crate) fill_from: Helper,
    pub(crate) noop: Helper,
    pub(crate) _program: opencl3::program::Program,
}

/// An OpenCL device, or a sub-device of one.
pub(crate) struct ClDevice {
    pub(crate) shared: Arc<DeviceShared>,
    pub(crate) clock: DeviceClock,
    /// The platform id as an integer (ids are process-wide and never
    /// released), for the sub-devices' own setup.
    pub(crate) platform: usize,
    pub(crate) platform_name: String,
    pub(crate) platform_version: String,
}

fn bitfield(id: cl_device_id, name: cl_uint) -> Option<cl_bitfield> {
    let bytes = cl3::device::get_device_data(id, name).ok()?;
    Some(u64::from_ne_bytes(bytes.get(..8)?.try_into().ok()?))
}

fn reported(id: cl_device_id, device: &opencl3::device::Device) -> Reported {
    let extensions = cl3::device::get_device_data(id, ffi::CL_DEVICE_EXTENSIONS_WITH_VERSION)
        .map(|b| version::parse_extensions_with_version(&b))
        .unwrap_or_default();
    let has = |name| version::extension_version(&extensions, name).is_some();
    let (cb, intel) = (has(version::COMMAND_BUFFER_EXTENSION), has(version::USM_EXTENSION));
    let query = |name| bitfield(id, name).unwrap_or(0);
    Reported {
        svm: bitfield(id, CL_DEVICE_SVM_CAPABILITIES).unwrap_or(0),
        queue_properties: device.queue_on_host_properties().unwrap_or(0),
        command_buffer_capabilities: if cb { query(ffi::CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR) } else { 0 },
        command_buffer_required_queue_properties: if cb {
            query(ffi::CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR)
        } else {
            0
        },
        command_buffer_supported_queue_properties: if cb {
            bitfield(id, ffi::CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR)
        } else {
            None
        },
        intel_usm: if intel {
            [
                query(ffi::CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL),
                query(ffi::CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL),
                query(ffi::CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL),
            ]
        } else {
            [0; 3]
        },
        mutable_dispatch_capabilities: if has(version::MUTABLE_DISPATCH_EXTENSION) {
            query(ffi::CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR)
        } else {
            0
        },
        extensions,
    }
}

/// The USM mechanism `setup` chose, its entry points resolved; SVM (or
/// none) where Intel's USM extension is unusable, `setup` changed to match.
///
/// # Safety
/// `platform` is valid and `setup` was decided from what its device
/// reports.
unsafe fn resolve_usm(platform: cl_platform_id, name: &str, reported: &Reported, setup: &mut DeviceSetup) -> Usm {
    match setup.usm {
        // SAFETY: the platform is valid and this device reports the extension.
        UsmSetup::Intel(_) => match unsafe { IntelUsmApi::resolve(platform) } {
            Ok(api) => Usm::Intel(api),
            Err(reason) => {
                tracing::warn!(device = %name, %reason, "cl_intel_unified_shared_memory unusable; using SVM");
                let svm_only = Reported { extensions: Vec::new(), ..reported.clone() };
                setup.usm = self::setup(&svm_only).usm;
                match setup.usm {
                    UsmSetup::SvmFine => Usm::Svm,
                    UsmSetup::SvmCoarse => Usm::Svm,
                    _ => Usm::None,
                }
            }
        },
        UsmSetup::SvmFine => Usm::Svm,
        UsmSetup::SvmCoarse => Usm::Svm,
        UsmSetup::None => Usm::None,
    }
}

/// The native command buffers the device's setup chose, their entry
/// points resolved, with the in-place updates the platform's version allows
/// (or the environment forces); `None` where they are emulated.
///
/// # Safety
/// `platform` is valid and `command_buffer` was decided from what its
/// device reports.
unsafe fn resolve_command_buffers(
    platform: cl_platform_id,
    platform_version: &str,
    name: &str,
    mut command_buffer: std::result::Result<CommandBufferSetup, &'static str>,
) -> Option<NativeCommandBuffers> {
    if let Ok(cb) = &mut command_buffer {
        let forced = std::env::var(MUTABLE_DISPATCH_ENV).ok();
        let (fields, why) = mutable_dispatch_rule(platform_version, cb.mutable_fields, forced.as_deref());
        tracing::info!(device = %name, fields, reason = why, "OpenCL command-buffer updates in place");
        cb.mutable_fields = fields;
    }
    match command_buffer {
        // SAFETY: the platform is valid and `abi` was selected for the
        // version its device reports; mutable dispatch is asked for only
        // where its version has the array form.
        Ok(cb) => match unsafe { CommandBufferApi::resolve(platform, cb.abi, cb.mutable_fields != 0) } {
            Ok(api) => Some(NativeCommandBuffers { setup: cb, api }),
            Err(reason) => {
                tracing::info!(device = %name, %reason, "command buffers emulated");
                None
            }
        },
        Err(reason) => {
            tracing::info!(device = %name, reason, "command buffers emulated");
            None
        }
    }
}

impl ClDevice {
    /// Opens device `id`, or the sub-device `sub_device` owns.
    pub(crate) fn open(
        platform: cl_platform_id,
        id: cl_device_id,
        platform_name: &str,
        platform_version: &str,
        sub_device: Option<OwnedSubDevice>,
    ) -> std::result::Result<ClDevice, String> {
        let device = opencl3::device::Device::new(id);
        let name = device.name().map_err(|e| format!("CL_DEVICE_NAME: {}", e.0))?;
        let reported = reported(id, &device);
        let mut setup = setup(&reported);
        // SAFETY: the platform is valid and `setup` was decided from what
        // this device reports.
        let usm = unsafe { resolve_usm(platform, &name, &reported, &mut setup) };
        // SAFETY: the platform is valid and the command-buffer setup was
        // decided from what this device reports.
        let command_buffers =
            unsafe { resolve_command_buffers(platform, platform_version, &name, setup.command_buffer) };
        if let Some(cb) = &command_buffers {
            tracing::debug!(device = %name, version = %cb.setup.version, setup = ?cb.setup, "native command buffers");
        }
        let out_of_order = reported.queue_properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0;
        let cpu = device.dev_type().is_ok_and(|t| t & cl3::device::CL_DEVICE_TYPE_CPU != 0);
        let forced = std::env::var(OUT_OF_ORDER_ENV).ok();
        let (driver_out_of_order, why) = driver_out_of_order_rule(platform_name, cpu, out_of_order, forced.as_deref());
        tracing::info!(device = %name, driver_out_of_order, reason = why, "OpenCL out-of-order queues");
        let forced = std::env::var(crate::replayer::REPLAY_THREAD_ENV).ok();
        let (replay_thread, why) = replay_thread_rule(forced.as_deref(), cpu);
        tracing::info!(device = %name, ?replay_thread, reason = why, "OpenCL planned replays' thread");
        let forced = std::env::var(REPLAY_ENV).ok();
        let (replay, why) = replay_path(cpu, command_buffers.is_some(), forced.as_deref());
        tracing::info!(device = %name, replay = replay.name(), reason = why, "OpenCL command-buffer replay path");
        let decided =
            info::Decided { usm: setup.usm.kinds(), out_of_order, command_buffer: command_buffer_caps(replay) };
        let (info, il_path) = info::device_info(&device, name, decided)?;
        let one_launch_per_kernel = one_launch::affected(platform_version, info.device_type == DeviceType::Cpu);
        if one_launch_per_kernel {
            tracing::debug!(device = %info.name, "PoCL before 7.0: one launch per kernel at a time");
        }
        let svm_host_copies_staged = matches!(usm, Usm::Svm) && platform_name.starts_with("NVIDIA");
        Ok(ClDevice {
            shared: Arc::new(DeviceShared {
                id,
                usm,
                command_buffers,
                replay,
                driver_out_of_order,
                one_launch_per_kernel,
                usm_in_svm_commands: matches!(setup.usm, UsmSetup::Intel(_)) && !platform_version.contains("PoCL"),
                svm_host_copies_staged,
                il_path,
                info,
                _sub_device: sub_device,
                own_context: Mutex::new(Weak::new()),
                replayer: crate::replayer::Replayer::new(replay_thread, cpu),
            }),
            clock: DeviceClock::new(id),
            platform: platform as usize,
            platform_name: platform_name.to_string(),
            platform_version: platform_version.to_string(),
        })
    }
}

/// The command-buffer capabilities of a device replaying through `replay`.
/// Both of this adapter's paths offer every update and per-command events:
/// the driver path re-records on update and splits the buffer into segments
/// at events (see command_buffer.rs); the planned path enqueues from its
/// record (see planned.rs).
fn command_buffer_caps(replay: ReplayPath) -> CommandBufferCaps {
    match replay {
        ReplayPath::Driver | ReplayPath::Planned => CommandBufferCaps {
            support: CommandBufferSupport::Native,
            update: UpdateCapabilities::all(),
            events: true,
            subgraphs: false,
            replay_path: replay,
        },
        ReplayPath::Software => CommandBufferCaps::EMULATED,
    }
}

impl ClDevice {
    /// What the device's contexts and queues share.
    pub(crate) fn shared(&self) -> &Arc<DeviceShared> {
        &self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_extensions(list: &[(&str, ExtVersion)]) -> Reported {
        Reported {
            extensions: list.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            queue_properties: CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE,
            ..Reported::default()
        }
    }

    const CB: &str = version::COMMAND_BUFFER_EXTENSION;
    const SIMULTANEOUS: cl_bitfield = ffi::CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR;
    const OOO_CAP: cl_bitfield = ffi::CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR;

    /// Debian bookworm's PoCL 3.1: 0.9.0, simultaneous use and out of order,
    /// fine-grained SVM, no USM extension.
    #[test]
    fn pocl_3_1() {
        let mut r = with_extensions(&[(CB, ExtVersion::new(0, 9, 0))]);
        r.svm = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_BUFFER;
        r.command_buffer_capabilities = 1 | SIMULTANEOUS | OOO_CAP;
        let p = setup(&r);
        assert_eq!(p.usm, UsmSetup::SvmFine);
        assert_eq!(p.usm.kinds(), UsmKinds::all());
        let cb = p.command_buffer.unwrap();
        assert_eq!(cb.abi.shape, version::RecordShape::Legacy);
        assert!(!cb.abi.svm_commands);
        assert!(cb.simultaneous_use_flag && !cb.instance_per_pending_submission);
        assert!(cb.out_of_order && !cb.profiling_queue);
    }

    /// PoCL 5.0: 0.9.4 and Intel USM.
    #[test]
    fn pocl_5_0() {
        let mut r =
            with_extensions(&[(CB, ExtVersion::new(0, 9, 4)), (version::USM_EXTENSION, ExtVersion::new(1, 0, 0))]);
        r.svm = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_BUFFER;
        r.intel_usm = [1, 1, 1];
        r.command_buffer_capabilities = SIMULTANEOUS | OOO_CAP;
        let p = setup(&r);
        assert_eq!(p.usm, UsmSetup::Intel(UsmKinds::all()));
        let cb = p.command_buffer.unwrap();
        assert_eq!(cb.abi.shape, version::RecordShape::Legacy);
        assert!(cb.abi.svm_commands);
    }

    /// NVIDIA's OpenCL: no command-buffer extension, coarse-grained SVM only.
    #[test]
    fn nvidia_opencl() {
        let mut r = with_extensions(&[("cl_khr_fp64", ExtVersion::new(1, 0, 0))]);
        r.svm = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER;
        let p = setup(&r);
        assert_eq!(p.usm, UsmSetup::SvmCoarse);
        assert_eq!(p.usm.kinds(), UsmKinds::DEVICE);
        assert!(p.command_buffer.is_err());
        let (replay, _) = replay_path(false, p.command_buffer.is_ok(), None);
        assert_eq!(replay, ReplayPath::Planned);
        // Forcing the driver path is not honoured without the extension.
        let (replay, _) = replay_path(false, false, Some("driver"));
        assert_eq!(replay, ReplayPath::Planned);
        let caps = command_buffer_caps(replay);
        assert_eq!(caps.support, CommandBufferSupport::Native);
        assert_eq!(caps.replay_path, ReplayPath::Planned);
    }

    #[test]
    fn cpu_devices_replay_planned_others_their_driver() {
        assert_eq!(replay_path(true, true, None).0, ReplayPath::Planned);
        assert_eq!(replay_path(false, true, None).0, ReplayPath::Driver);
        assert_eq!(replay_path(true, true, Some("driver")).0, ReplayPath::Driver);
        assert_eq!(replay_path(false, true, Some("planned")).0, ReplayPath::Planned);
        assert_eq!(replay_path(true, false, None).0, ReplayPath::Planned);
        // An unknown value is ignored.
        assert_eq!(replay_path(true, true, Some("fast")).0, ReplayPath::Planned);
        assert_eq!(replay_path(false, true, Some("fast")).0, ReplayPath::Driver);
    }

    #[test]
    fn out_of_order_queues_in_the_driver_except_on_intels_cpu_runtime() {
        let intel = "Intel(R) OpenCL";
        assert!(!driver_out_of_order_rule(intel, true, true, None).0);
        assert!(driver_out_of_order_rule(intel, true, true, Some("on")).0);
        assert!(driver_out_of_order_rule(intel, false, true, None).0, "only the CPU runtime was seen to deadlock");
        assert!(driver_out_of_order_rule("Portable Computing Language", true, true, None).0);
        assert!(!driver_out_of_order_rule("Portable Computing Language", true, true, Some("off")).0);
        assert!(!driver_out_of_order_rule("NVIDIA CUDA", false, false, Some("on")).0, "not offered");
        // An unknown value is refused earlier (check_env); here it counts as unset.
        assert!(!driver_out_of_order_rule(intel, true, true, Some("yes")).0);
    }

    #[test]
    fn a_replay_thread_for_back_to_back_submissions_unless_the_device_is_the_cpu() {
        for cpu in [false, true] {
            assert_eq!(replay_thread_rule(Some("off"), cpu).0, ReplayThread::Off);
            assert_eq!(replay_thread_rule(Some(" on "), cpu).0, ReplayThread::Awake);
            assert_eq!(replay_thread_rule(Some("always"), cpu).0, ReplayThread::Always);
        }
        assert_eq!(replay_thread_rule(None, false).0, ReplayThread::Awake);
        assert_eq!(replay_thread_rule(Some(""), false).0, ReplayThread::Awake);
        assert_eq!(replay_thread_rule(None, true).0, ReplayThread::Off);
        // An unknown value is refused earlier (check_env); here it counts as unset.
        assert_eq!(replay_thread_rule(Some("yes"), false).0, ReplayThread::Awake);
        assert_eq!(replay_thread_rule(Some("yes"), true).0, ReplayThread::Off);
    }

    #[test]
    fn both_paths_report_every_update_and_events() {
        for replay in [ReplayPath::Driver, ReplayPath::Planned] {
            let caps = command_buffer_caps(replay);
            assert_eq!(caps.support, CommandBufferSupport::Native);
            assert_eq!(caps.update, UpdateCapabilities::all());
            assert!(caps.events);
            assert_eq!(caps.replay_path, replay);
        }
        assert_eq!(command_buffer_caps(ReplayPath::Software), CommandBufferCaps::EMULATED);
    }

    #[test]
    fn intel_kinds_follow_access_bits() {
        let mut r = with_extensions(&[(version::USM_EXTENSION, ExtVersion::new(1, 1, 0))]);
        r.intel_usm = [0, 1, 0b10];
        assert_eq!(setup(&r).usm, UsmSetup::Intel(UsmKinds::DEVICE));
        assert_eq!(setup(&Reported::default()).usm, UsmSetup::None);
    }

    #[test]
    fn newest_versions() {
        // 0.9.6 and 0.9.7: out-of-order recording from the supported-properties query.
        let mut r = with_extensions(&[(CB, ExtVersion::new(0, 9, 7))]);
        r.command_buffer_capabilities = SIMULTANEOUS;
        r.command_buffer_supported_queue_properties = Some(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
        let cb = setup(&r).command_buffer.unwrap();
        assert_eq!(cb.abi.shape, version::RecordShape::Properties);
        assert!(cb.out_of_order && cb.simultaneous_use_flag);
        r.command_buffer_supported_queue_properties = Some(0);
        assert!(!setup(&r).command_buffer.unwrap().out_of_order);
        // 0.9.8: no pending state, so neither the flag nor extra instances.
        let mut r = with_extensions(&[(CB, ExtVersion::new(0, 9, 8))]);
        r.command_buffer_capabilities = 0;
        let cb = setup(&r).command_buffer.unwrap();
        assert!(!cb.simultaneous_use_flag && !cb.instance_per_pending_submission);
    }

    /// Intel's OpenCL CPU runtime 2026.2 (PyPI `intel-opencl-rt`): the
    /// ratified 1.0.0 with mutable dispatch 0.9.3, Intel USM.
    #[test]
    fn intel_cpu_runtime() {
        let mut r = with_extensions(&[
            (CB, ExtVersion::new(1, 0, 0)),
            (version::MUTABLE_DISPATCH_EXTENSION, ExtVersion::new(0, 9, 3)),
            (version::USM_EXTENSION, ExtVersion::new(1, 0, 0)),
        ]);
        r.intel_usm = [1, 1, 1];
        r.mutable_dispatch_capabilities = MUTABLE_FIELDS | (1 << 4);
        let cb = setup(&r).command_buffer.unwrap();
        assert_eq!(cb.abi.shape, version::RecordShape::Properties);
        assert!(!cb.abi.pending_state && !cb.simultaneous_use_flag && !cb.instance_per_pending_submission);
        assert_eq!(cb.mutable_fields, MUTABLE_FIELDS, "execution info is never updated");
        assert_eq!(cb.enqueue_queue_properties, None, "no supported-properties report: not substituted");
        r.command_buffer_supported_queue_properties = Some(0xf);
        assert_eq!(setup(&r).command_buffer.unwrap().enqueue_queue_properties, Some((0, 0xf)));
        let intel = "OpenCL 3.1 LINUX";
        assert_eq!(mutable_dispatch_rule(intel, cb.mutable_fields, None).0, MUTABLE_FIELDS);
        assert_eq!(mutable_dispatch_rule(intel, cb.mutable_fields, Some("off")).0, 0);
        assert_eq!(mutable_dispatch_rule("OpenCL 3.0 PoCL 5.0", cb.mutable_fields, None).0, 0);
        // A CPU device: planned unless the driver's path is asked for.
        assert_eq!(replay_path(true, true, None).0, ReplayPath::Planned);
        assert_eq!(replay_path(true, true, Some("driver")).0, ReplayPath::Driver);
        // Before 0.9.2 the configurations were a linked list: not used.
        r.extensions[1].1 = ExtVersion::new(0, 9, 1);
        assert_eq!(setup(&r).command_buffer.unwrap().mutable_fields, 0);
        r.extensions.remove(1);
        assert_eq!(setup(&r).command_buffer.unwrap().mutable_fields, 0);
    }

    #[test]
    fn without_simultaneous_use_instances_multiply() {
        let mut r = with_extensions(&[(CB, ExtVersion::new(0, 9, 2))]);
        r.command_buffer_capabilities = OOO_CAP;
        let cb = setup(&r).command_buffer.unwrap();
        assert!(!cb.simultaneous_use_flag && cb.instance_per_pending_submission);
    }

    #[test]
    fn emulated_when_unknown_or_unsatisfiable() {
        assert!(setup(&with_extensions(&[(CB, ExtVersion::new(2, 0, 0))])).command_buffer.is_err());
        let mut r = with_extensions(&[(CB, ExtVersion::new(0, 9, 0))]);
        r.command_buffer_required_queue_properties = 1 << 7;
        assert!(setup(&r).command_buffer.is_err());
        r.command_buffer_required_queue_properties = CL_QUEUE_PROFILING_ENABLE;
        assert!(setup(&r).command_buffer.unwrap().profiling_queue);
        r.command_buffer_required_queue_properties = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
        r.queue_properties = 0;
        assert!(setup(&r).command_buffer.is_err());
    }
}
