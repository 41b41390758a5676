//! The adapter interface: object-safe traits an adapter crate implements.
//!
//! The front end validates, adapters trust. Every method whose correctness
//! depends on validated input is `unsafe`, and its `# Safety` section lists
//! what the front end guarantees; adapters rely on those guarantees instead
//! of checking again. Objects passed back into an adapter (events, buffers,
//! kernels, queues) always come from the same adapter and context, so
//! downcasting them with [`downcast`] cannot fail for a correct front end.
//!
//! An adapter provides: a factory that opens its driver ([`AdapterFactory`]),
//! platforms and devices, contexts that allocate memory and build programs,
//! queues that execute every [`Command`] eagerly, events, and, when its
//! devices report [`CommandBufferSupport::Native`](crate::CommandBufferSupport),
//! a native command buffer in two phases ([`RecordingCommandBufferImpl`],
//! finalized into an [`ExecutableCommandBufferImpl`]). Devices without native command buffers get
//! cmdbuf-core's software command buffer, built on the queue's eager operations.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::command::Command;
use crate::launch::KernelCommand;
use crate::operands::{Event, Kernel};
use crate::types::backend::Backend;
use crate::types::clock::Timestamps;
use crate::types::collective::{CollectiveOp, DataType};
use crate::types::desc::{CommandBufferDesc, PeerAccess, QueueProperties};
use crate::types::device::{DeviceInfo, Partition, PartitionSupport};
use crate::types::error::Result;
use crate::types::interop::{NativeHandle, NativeTarget, Ownership};
use crate::types::memory::{MemFlags, UsmKind};
use crate::types::program::{KernelSignature, ProgramBundle, SourceForm};

// The traits of the objects that execute nothing sit below the objects
// commands hold; their paths are this module's.
pub use resources::{BufferImpl, EventImpl, KernelImpl, ProgramImpl, UserEventImpl, UsmImpl};

/// A native buffer an adapter adopted, with what it reads about it.
pub struct AdoptedBuffer {
    /// The adapter's buffer over the native memory.
    pub imp: Box<dyn BufferImpl>,
    /// Its size in bytes (non-zero).
    pub size: usize,
    /// Its access mode (exactly one) and host allocation.
    pub flags: MemFlags,
}

/// A built native program an adapter adopted, with the kernels it holds.
pub struct AdoptedProgram {
    /// The adapter's program over the native one.
    pub imp: Box<dyn ProgramImpl>,
    /// Each kernel of the program, its signature derived from what the
    /// driver reports (see [`KernelSignature`]): names unique.
    pub kernels: Vec<KernelSignature>,
    /// The form of its kernels' code, for the launch rules that depend on
    /// it (OpenCL: `SpirvKernel` for a program made from IL, else `OpenClC`;
    /// CUDA: `Ptx`).
    pub form: SourceForm,
}

/// A native kernel an adapter adopted.
pub struct AdoptedKernel {
    /// The native program the kernel belongs to (OpenCL's
    /// `CL_KERNEL_PROGRAM`, CUDA's `cuFuncGetModule`).
    pub program: NativeHandle,
    /// Its signature, derived from what the driver reports.
    pub signature: KernelSignature,
    /// The adapter's kernel over the native one.
    pub imp: Box<dyn KernelImpl>,
}

/// Opens one backend's driver.
pub trait AdapterFactory: Send + Sync {
    /// The backend this factory opens.
    fn backend(&self) -> Backend;

    /// Opens the driver and lists its platforms. `Err` carries the reason the
    /// adapter is absent (no driver library, no device, ...); it must not panic.
    fn load(&self) -> std::result::Result<Vec<Arc<dyn PlatformImpl>>, String>;

    /// Checks the environment variables this adapter reads without opening
    /// the driver: a value outside its range is `InvalidValue` naming the
    /// variable and the valid values. [`crate::Loader::from_env`] calls it, so
    /// that a mistyped setting is an error instead of an absent adapter.
    fn check_env(&self) -> Result<()> {
        Ok(())
    }
}

/// A platform of an adapter.
pub trait PlatformImpl: Send + Sync {
    /// The driver's platform name.
    fn name(&self) -> String;
    /// The driver's version string.
    fn version(&self) -> String;
    /// The platform's devices.
    fn devices(&self) -> Vec<Arc<dyn DeviceImpl>>;

    /// The native object (see [`crate::interop`]); `UnsupportedFeature`
    /// where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this platform has no native handle"))
    }
}

/// A sub-device an adapter made ([`DeviceImpl::partition`]).
pub struct SubDeviceImpl {
    /// The adapter's device; its [`DeviceImpl::info`] gives the sub-device's
    /// own compute units.
    pub imp: Arc<dyn DeviceImpl>,
    /// The partition as the adapter made it: the request, with an affinity
    /// domain of [`AffinityDomain::NextPartitionable`](crate::AffinityDomain)
    /// replaced by the level it split along.
    pub partition: Partition,
}

/// A device of an adapter.
pub trait DeviceImpl: Any + Send + Sync {
    /// The device's information; called once, at discovery.
    fn info(&self) -> DeviceInfo;
    /// Global memory free now, in bytes; `None` when the driver does not tell.
    fn free_memory(&self) -> Result<Option<u64>>;
    /// A device timestamp on the clock of this device's profiling timestamps
    /// ([`EventImpl::profiling`]), with the host timestamp
    /// ([`host_clock_ns`](crate::clock::host_clock_ns)) of the same moment.
    fn timestamps(&self) -> Result<Timestamps>;
    /// Creates a context on this device.
    fn create_context(self: Arc<Self>) -> Result<Arc<dyn ContextImpl>>;

    /// Creates a context over `devices`, several of this device's family
    /// ([`Context::with_devices`](crate::Context::with_devices)): this root
    /// device and/or sub-devices of it at any depth. The context's memory
    /// and programs serve each of them and their sub-devices;
    /// [`ContextImpl::queue_create`] and
    /// [`command_buffer_create`](ContextImpl::command_buffer_create) are
    /// asked for only when this device is listed, every other device goes
    /// through the `sub_device_*` calls. The default is
    /// [`create_context`](Self::create_context): a context of this device,
    /// which its sub-devices use as they use their parent's (the CPU
    /// adapter). OpenCL makes a `cl_context` of exactly the listed devices,
    /// as drivers that take no queue on a sub-device in its parent's context
    /// need.
    ///
    /// # Safety
    /// This is a root device; `devices` holds at least two distinct devices
    /// of this adapter, each this device or a sub-device of it.
    unsafe fn create_context_over(self: Arc<Self>, devices: &[Arc<dyn DeviceImpl>]) -> Result<Arc<dyn ContextImpl>> {
        let _ = devices;
        self.create_context()
    }

    /// Creates a context over `devices`, this device first, when they are
    /// not one family: several root devices of this adapter, or sub-devices
    /// of several ([`Context::with_devices`](crate::Context::with_devices)).
    /// The context's memory and programs serve each of them;
    /// [`ContextImpl::queue_create`] and
    /// [`command_buffer_create`](ContextImpl::command_buffer_create) run on
    /// this device, every other listed device (and sub-device of one) goes
    /// through the `sub_device_*` calls. `UnsupportedFeature`, the default,
    /// naming why, where the backend has no context spanning devices (OpenCL
    /// makes one `cl_context` of devices of one platform).
    ///
    /// # Safety
    /// `devices` holds at least two distinct devices of this adapter, this
    /// one first, not all of one root device.
    unsafe fn create_context_across(self: Arc<Self>, devices: &[Arc<dyn DeviceImpl>]) -> Result<Arc<dyn ContextImpl>> {
        let _ = devices;
        Err(crate::err!(
            UnsupportedFeature,
            "this backend has no context spanning unrelated devices: a context holds one device and its sub-devices"
        ))
    }

    /// The partitions this device offers; asked once, at discovery (of a
    /// root device) or partition (of a sub-device). The default: none, for
    /// backends that do not partition devices.
    fn partition_support(&self) -> PartitionSupport {
        PartitionSupport::default()
    }

    /// Partitions this device into sub-devices, in the order the partition
    /// lists them (by counts) or the backend's order. Each call makes new
    /// sub-devices, which live as long as the returned objects.
    ///
    /// # Safety
    /// `partition` is of a kind [`partition_support`](Self::partition_support)
    /// offers; `Equally(n)` has `1 <= n <= max_compute_units`; `ByCounts`
    /// has 1 to `max_sub_devices` non-zero counts summing to at most
    /// `max_compute_units`; an affinity domain is one the device offers.
    unsafe fn partition(&self, partition: &Partition) -> Result<Vec<SubDeviceImpl>> {
        Err(crate::err!(DevicePartitionFailed, "this device does not partition ({partition})"))
    }

    /// The native object (see [`crate::interop`]); `UnsupportedFeature`
    /// where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this device has no native handle"))
    }

    /// Whether queues and kernels of this device can use USM memory allocated
    /// on `peer`, a device of the same adapter (this one included), once
    /// enabled. `UnsupportedFeature`, the default, with the reason, where the
    /// adapter has no peer path; the front end reports it as not supported.
    fn peer_access(&self, peer: &dyn DeviceImpl) -> Result<PeerAccess> {
        let _ = peer;
        Err(crate::err!(UnsupportedFeature, "this adapter has no peer access between devices"))
    }

    /// Enables this device's access to memory of `peer`. Called once per
    /// pair until disabled, only for pairs [`peer_access`](Self::peer_access)
    /// supports, never for the same device.
    fn enable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        let _ = peer;
        Err(crate::err!(UnsupportedFeature, "this adapter has no peer access between devices"))
    }

    /// Disables what [`enable_peer_access`](Self::enable_peer_access)
    /// enabled; only called for an enabled pair.
    fn disable_peer_access(&self, peer: &dyn DeviceImpl) -> Result<()> {
        let _ = peer;
        Err(crate::err!(UnsupportedFeature, "this adapter has no peer access between devices"))
    }

    /// A native implementation of collectives over `devices` (this device
    /// first, then the others, all of this adapter and distinct), one rank
    /// each in that order: the CUDA adapter's NCCL communicator.
    /// `UnsupportedFeature`, the default, with the reason where the adapter
    /// has none; the front end then stages collectives through the host.
    fn collective_group(&self, devices: &[&dyn DeviceImpl]) -> Result<Box<dyn CollectiveImpl>> {
        let _ = devices;
        Err(crate::err!(UnsupportedFeature, "the adapter has no native collectives"))
    }

    /// Adopts a native context of this device (see [`crate::adopt`]):
    /// `InvalidContext` when it is not one of this device's.
    ///
    /// # Safety
    /// `handle` is non-null and, on backends whose checks dereference it,
    /// a live native context of the backend's type.
    unsafe fn context_from_native(
        self: Arc<Self>,
        handle: NativeHandle,
        ownership: Ownership,
    ) -> Result<Arc<dyn ContextImpl>> {
        let _ = (handle, ownership);
        Err(crate::err!(UnsupportedFeature, "this backend does not adopt native contexts"))
    }
}

/// A context of an adapter: allocates memory, builds programs, makes queues
/// and native command buffers.
pub trait ContextImpl: Any + Send + Sync {
    /// Allocates USM. The returned object frees the memory when dropped.
    ///
    /// # Safety
    /// `size` is non-zero and within the device's `max_mem_alloc_size`; `kind`
    /// is one the device reports in `usm`; `align` is 0 (adapter default) or a
    /// power of two.
    unsafe fn usm_alloc(&self, kind: UsmKind, size: usize, align: usize) -> Result<Box<dyn UsmImpl>>;

    /// Creates a memory buffer, zero-filled unless `init` is given.
    ///
    /// # Safety
    /// `size` is non-zero and within the device limit; `flags` holds exactly
    /// one access mode; `init`, when given, has exactly `size` bytes.
    unsafe fn buffer_create(&self, flags: MemFlags, size: usize, init: Option<&[u8]>) -> Result<Box<dyn BufferImpl>>;

    /// Creates a memory buffer over host memory the application lends it
    /// (UR's `USE_HOST_POINTER`, OpenCL's `CL_MEM_USE_HOST_PTR`). Where the
    /// device can use those bytes as the buffer's storage, the returned
    /// buffer's [`BufferImpl::host_memory`] answers `host`: the host sees
    /// what completed commands wrote there, and commands see what the host
    /// wrote before they were submitted. Elsewhere the buffer starts with a
    /// copy of the bytes and keeps its own storage, as OpenCL allows for
    /// host-pointer buffers (maps and reads land on the host memory).
    ///
    /// # Safety
    /// As [`buffer_create`](Self::buffer_create); `host` is valid for reads
    /// and writes of `size` bytes until the buffer is dropped and no
    /// command that uses it can still run.
    unsafe fn buffer_over_host(&self, flags: MemFlags, host: NonNull<u8>, size: usize) -> Result<Box<dyn BufferImpl>>;

    /// Builds the bundle's source of `form`, passing `options` to the
    /// driver's compiler where it has one that takes options.
    ///
    /// # Safety
    /// The bundle holds a source of `form`, which is one of the device's
    /// `source_forms`; its kernel names are unique; `options` has no NUL byte.
    unsafe fn program_create(
        &self,
        bundle: &ProgramBundle,
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>>;

    /// Compiles each input's source of `form` apart, with the input's own
    /// options, and links the results with `options` into one program:
    /// separate compilation (OpenCL's `clCompileProgram` and
    /// `clLinkProgram`), with which libsycl adds its device libraries to a
    /// program. Backends that build whole programs only keep this default,
    /// `UnsupportedFeature`.
    ///
    /// # Safety
    /// There are at least two inputs; each bundle holds a source of `form`,
    /// which is one of the device's `source_forms`; kernel names are unique
    /// across the bundles; no options hold a NUL byte.
    unsafe fn program_link(
        &self,
        inputs: &[(&ProgramBundle, &str)],
        form: SourceForm,
        options: &str,
    ) -> Result<Box<dyn ProgramImpl>> {
        let _ = (inputs, options);
        Err(crate::err!(
            UnsupportedFeature,
            "linking programs compiled apart: this backend builds whole {form} programs only"
        ))
    }

    /// Creates a queue.
    ///
    /// # Safety
    /// Out-of-order execution and profiling are only asked for when the device
    /// reports them.
    unsafe fn queue_create(&self, properties: QueueProperties) -> Result<Box<dyn QueueImpl>>;

    /// Creates a queue whose commands run on `device`, a sub-device (at any
    /// depth) of the context's device or, in a context made across devices
    /// ([`DeviceImpl::create_context_across`]), another listed device or a
    /// sub-device of one, using this context's memory and programs.
    /// `UnsupportedFeature` (the default) where the backend cannot run such a
    /// queue, naming why.
    ///
    /// # Safety
    /// `device` is a sub-device of the context's device, or a device the
    /// context was made across or a sub-device of one, of this adapter;
    /// out-of-order execution and profiling are only asked for when it
    /// reports them.
    unsafe fn sub_device_queue_create(
        &self,
        device: &dyn DeviceImpl,
        properties: QueueProperties,
    ) -> Result<Box<dyn QueueImpl>> {
        let _ = (device, properties);
        Err(crate::err!(UnsupportedFeature, "this backend cannot run a sub-device's queue in a context of its parent"))
    }

    /// Creates a native command buffer.
    ///
    /// # Safety
    /// Only called for devices that report native command buffers; an
    /// updatable buffer is only asked for when the device reports update
    /// capabilities.
    unsafe fn command_buffer_create(&self, desc: &CommandBufferDesc) -> Result<Box<dyn RecordingCommandBufferImpl>>;

    /// Creates a native command buffer for `device`, a sub-device (at any
    /// depth) of the context's device or another device the context holds
    /// (as for [`sub_device_queue_create`](Self::sub_device_queue_create)),
    /// recording this context's memory and programs and running on that
    /// device. `UnsupportedFeature` (the default) where the backend cannot,
    /// naming why.
    ///
    /// # Safety
    /// `device` is as for [`sub_device_queue_create`](Self::sub_device_queue_create)
    /// and reports native command buffers; an updatable buffer is only asked
    /// for when it reports update capabilities.
    unsafe fn sub_device_command_buffer_create(
        &self,
        device: &dyn DeviceImpl,
        desc: &CommandBufferDesc,
    ) -> Result<Box<dyn RecordingCommandBufferImpl>> {
        let _ = (device, desc);
        Err(crate::err!(
            UnsupportedFeature,
            "this backend records no native command buffer for a sub-device in a context of its parent"
        ))
    }

    /// Creates an event that the host completes ([`UserEventImpl::complete`]),
    /// usable in every wait list of this context: eager commands, command-buffer
    /// enqueues and command-buffer appends.
    fn user_event_create(&self) -> Result<Arc<dyn UserEventImpl>>;

    /// Whether queues of this context can wait, device-side and without the
    /// host, for events of `other`, another context of the same adapter: the
    /// front end then accepts `other`'s events in this context's queue wait
    /// lists and command-buffer enqueues, and passes them to the adapter as
    /// they are. Asked once per ordered pair of contexts (the front end keeps
    /// the answer), only for events of a context other than the queue's.
    ///
    /// An adapter answering yes must order each such command after the
    /// foreign event's work as it would after its own events, also when that
    /// work is not yet handed to the device when the command is enqueued.
    /// The default is no: the event is `InvalidEventWaitList` (cmdbuf's
    /// graphs then join the contexts through host-side bridges).
    fn waits_on_events_of(&self, other: &dyn ContextImpl) -> bool {
        let _ = other;
        false
    }

    /// Whether commands of this context may use memory buffers of `other`
    /// (another context of this adapter) as they use their own: the buffers'
    /// storage is reached the same way from both contexts (the process's
    /// memory, one logical device, one CUDA context). The front end then
    /// accepts such buffers in this context's commands (UR lets a copy join
    /// buffers of two contexts); asked once per ordered pair of contexts. The
    /// default is no: a buffer of another context is `InvalidMemObject`, as
    /// OpenCL has it (`CL_INVALID_CONTEXT`).
    fn uses_buffers_of(&self, other: &dyn ContextImpl) -> bool {
        let _ = other;
        false
    }

    /// Whether finalized command buffers of this context and of `other`
    /// (another context of this adapter), and peer copies between their
    /// memory, can be composed into one executable that a queue of this
    /// context submits with one call ([`compose_command_buffers`](Self::compose_command_buffers)).
    /// Asked by the front end before composing; the default is no.
    fn composes_with(&self, other: &dyn ContextImpl) -> bool {
        let _ = other;
        false
    }

    /// Composes `parts` into one executable of this context: each part runs
    /// after the parts its `after` names, every execution after the previous
    /// one. Only [`ExecutableCommandBufferImpl::enqueue`] (and
    /// `enqueue_ordered`) and `native_handle` are called on the result; the
    /// front end never updates it, but composes again when a part changed
    /// (an update of its command buffer). The parts' command buffers are
    /// kept alive by the front end for as long as the result lives, and are
    /// not enqueued while a composition reads them. `UnsupportedFeature`,
    /// the default, where the adapter cannot, or cannot for these parts
    /// (with the reason).
    ///
    /// # Safety
    /// Every part's context answered yes to [`composes_with`](Self::composes_with)
    /// from this context, and this context waits for its events
    /// ([`waits_on_events_of`](Self::waits_on_events_of)); each command
    /// buffer is finalized, of that part's context, and appears once; each
    /// peer copy is a `Command::UsmMemcpy` the front end checked as for
    /// [`QueueImpl::usm_copy_peer`] on a queue of its part's context; each
    /// collective is a capture of this adapter, appears once, and every one
    /// of its ranks' contexts passed the checks of a part's context;
    /// `after` names only earlier parts.
    unsafe fn compose_command_buffers(
        &self,
        parts: &mut [ComposePart<'_>],
    ) -> Result<Box<dyn ExecutableCommandBufferImpl>> {
        let _ = parts;
        Err(crate::err!(UnsupportedFeature, "this adapter does not compose command buffers of several contexts"))
    }

    /// The native object (see [`crate::interop`]); `UnsupportedFeature`
    /// where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this context has no native handle"))
    }

    /// Adopts a native queue of this context (see [`crate::adopt`]), with
    /// the properties it was created with: `InvalidQueue` when it is not one
    /// of this context's device and context.
    ///
    /// # Safety
    /// As for [`DeviceImpl::context_from_native`], for a native queue.
    unsafe fn queue_from_native(
        &self,
        handle: NativeHandle,
        ownership: Ownership,
    ) -> Result<(Box<dyn QueueImpl>, QueueProperties)> {
        let _ = (handle, ownership);
        Err(crate::err!(UnsupportedFeature, "this backend does not adopt native queues"))
    }

    /// Adopts a native memory object of this context (see [`crate::adopt`]):
    /// `InvalidMemObject` when it is not one of this context's.
    ///
    /// # Safety
    /// As for [`DeviceImpl::context_from_native`], for a native buffer.
    unsafe fn buffer_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedBuffer> {
        let _ = (handle, ownership);
        Err(crate::err!(UnsupportedFeature, "this backend does not adopt native buffers"))
    }

    /// Adopts a native event of this context (see [`crate::adopt`]):
    /// `InvalidEvent` when it is not one of this context's.
    ///
    /// # Safety
    /// As for [`DeviceImpl::context_from_native`], for a native event.
    unsafe fn event_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<Arc<dyn EventImpl>> {
        let _ = (handle, ownership);
        Err(crate::err!(UnsupportedFeature, "this backend does not adopt native events"))
    }

    /// Adopts a built native program of this context and device (see
    /// [`crate::adopt`]): `InvalidProgram` when it is not one of theirs,
    /// `InvalidProgramExecutable` when it is not built for the device.
    ///
    /// # Safety
    /// As for [`DeviceImpl::context_from_native`], for a native program.
    unsafe fn program_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedProgram> {
        let _ = (handle, ownership);
        Err(crate::err!(UnsupportedFeature, "this backend does not adopt native programs"))
    }

    /// Adopts a native kernel of this context (see [`crate::adopt`]):
    /// `InvalidKernel` when it is not one of this context's.
    ///
    /// # Safety
    /// As for [`DeviceImpl::context_from_native`], for a native kernel.
    unsafe fn kernel_from_native(&self, handle: NativeHandle, ownership: Ownership) -> Result<AdoptedKernel> {
        let _ = (handle, ownership);
        Err(crate::err!(UnsupportedFeature, "this backend does not adopt native kernels"))
    }
}

/// A queue executing commands eagerly.
///
/// Events given in wait lists are events of this adapter and context, or of
/// another of its contexts where [`ContextImpl::waits_on_events_of`] said
/// yes, and stay alive for the call; adapters hold what they need beyond it.
pub trait QueueImpl: Any + Send + Sync {
    /// Executes `command` after every event of `wait` (and, on an in-order
    /// queue, after everything submitted before), returning its event.
    ///
    /// # Safety
    /// `command` was built by the front end for this queue's context, so its
    /// invariants (see [`Command`]) hold; raw host memory in it stays valid
    /// until the returned event completes.
    unsafe fn enqueue(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>>;

    /// An event that completes once every event of `wait` has. With `barrier`,
    /// it also waits for everything submitted before, and everything
    /// submitted after waits for it (`urEnqueueEventsWaitWithBarrier`).
    ///
    /// # Safety
    /// As for [`QueueImpl::enqueue`]: the events belong to this adapter (see the trait).
    unsafe fn enqueue_wait(&self, wait: &[&dyn EventImpl], barrier: bool) -> Result<Arc<dyn EventImpl>>;

    /// Records the device's time (`urEnqueueTimestampRecordingExp`): an
    /// event ordered as a non-barrier [`enqueue_wait`](Self::enqueue_wait)
    /// marker is, whose [`EventImpl::profiling`] answers once it is complete
    /// whether or not the queue profiles: `start` and `end` are the device
    /// time at which it ran, on the clock of [`DeviceImpl::timestamps`];
    /// `queued` and `submit` are at most `start`.
    ///
    /// # Safety
    /// As for [`QueueImpl::enqueue`]: the events belong to this adapter (see the trait).
    unsafe fn enqueue_timestamp(&self, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>>;

    /// Executes a [`Command::UsmMemcpy`] one of whose sides is USM of a
    /// context on another device of this adapter (a peer copy), after the
    /// events of `wait`, like [`enqueue`](Self::enqueue). `UnsupportedFeature`,
    /// the default, where the adapter has no peer path.
    ///
    /// # Safety
    /// As for [`enqueue`](Self::enqueue), except that one side belongs to a
    /// context of a device for which [`DeviceImpl::peer_access`] answered
    /// supported and peer access from this queue's device was enabled, and
    /// that the events of `wait` belong to either of the two contexts.
    unsafe fn usm_copy_peer(&self, command: &Command, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>> {
        let _ = (command, wait);
        Err(crate::err!(UnsupportedFeature, "this adapter has no peer copies"))
    }

    /// Blocks until everything submitted has completed.
    fn finish(&self) -> Result<()>;

    /// Makes sure everything submitted will start without further calls.
    fn flush(&self) -> Result<()>;

    /// Whether the queue's commands complete in the order they were
    /// enqueued even where the queue was made out of order (a driver queue
    /// that runs in order under an out-of-order UR queue). The front end
    /// then reads completion from the last command as on an in-order queue,
    /// and asks no status of the commands before it. `false`, the default,
    /// leaves out-of-order queues to be tracked command by command.
    fn completes_in_order(&self) -> bool {
        false
    }

    /// Whether a native command's callback runs inside [`enqueue`](Self::enqueue)
    /// (its work goes to a native queue or command buffer), rather than later,
    /// as the work itself (the CPU, whose target is the host).
    fn native_commands_at_enqueue(&self) -> bool {
        true
    }

    /// The native object (see [`crate::interop`]); `UnsupportedFeature`
    /// where the backend has none.
    fn native_handle(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this queue has no native handle"))
    }
}

/// One kernel command's new state, for [`ExecutableCommandBufferImpl::update_kernel_launches`].
#[derive(Clone, Copy, Debug)]
pub struct KernelUpdate<'a> {
    /// Index of the command in append order.
    pub command: u32,
    /// The command's complete new launch (kernel, range and every argument).
    pub launch: &'a KernelCommand,
}

/// One part of a composition ([`ContextImpl::compose_command_buffers`]).
pub struct ComposePart<'a> {
    /// What the part runs.
    pub work: ComposeWork<'a>,
    /// The earlier parts it runs after (distinct indices into the parts).
    pub after: &'a [u32],
}

/// What a [`ComposePart`] runs.
pub enum ComposeWork<'a> {
    /// A finalized command buffer of `context`.
    CommandBuffer {
        /// Its context.
        context: &'a dyn ContextImpl,
        /// Its executable phase.
        executable: &'a mut dyn ExecutableCommandBufferImpl,
    },
    /// A peer copy (`Command::UsmMemcpy`) run by the device of `context`.
    PeerCopy {
        /// The context whose device runs the copy.
        context: &'a dyn ContextImpl,
        /// The copy, both sides resolved to their allocations.
        command: &'a Command,
    },
    /// A captured collective ([`CollectiveImpl::capture`] of this adapter),
    /// every rank's part run by its device. The front end keeps the
    /// capture, its communicator and its ranges alive as long as the
    /// composition, and orders the composition's submissions against the
    /// capture's own launches ([`CapturedCollectiveImpl::launch`]), so that
    /// one capture never runs twice at once.
    Collective {
        /// The capture.
        captured: &'a dyn CapturedCollectiveImpl,
    },
}

/// A native command buffer being recorded: the first of its two phases.
///
/// The front end serialises all calls on one buffer, so methods take
/// `&mut self`. Commands are numbered in append order from 0; a sync point is
/// the number of the command that produced it. [`finalize`](Self::finalize)
/// turns it into the second phase, an [`ExecutableCommandBufferImpl`], which
/// alone can be enqueued, updated and asked for its native object.
pub trait RecordingCommandBufferImpl: Any + Send {
    /// Records `command` as number `self.len()`, after the commands in `deps`
    /// and the events in `wait_events`. Returns the command's signal event when
    /// `signal` is set: an event that completes each time the command has run,
    /// reset at each enqueue, and complete before the first one.
    ///
    /// # Safety
    /// `command` was validated for this buffer's context; `deps` are distinct
    /// numbers of commands already recorded (for in-order buffers, exactly the
    /// previous command); `wait_events` are events of this context;
    /// `alternatives` are kernels of this context that
    /// [`ExecutableCommandBufferImpl::update_kernel_launches`] may switch a
    /// kernel command to, and only given for kernel commands of updatable buffers.
    unsafe fn append(
        &mut self,
        command: &Command,
        alternatives: &[Kernel],
        deps: &[u32],
        wait_events: &[Event],
        signal: bool,
    ) -> Result<Option<Arc<dyn EventImpl>>>;

    /// Makes the buffer ready to enqueue. On failure the recording comes
    /// back unchanged in [`FinalizeFailed`], so that the buffer can still be
    /// released, or finalized again.
    fn finalize(self: Box<Self>) -> std::result::Result<Box<dyn ExecutableCommandBufferImpl>, FinalizeFailed>;

    /// The native object this buffer records into, for the adapter's own
    /// use when this buffer is the child of another buffer's native command
    /// (devices that report `CommandBufferCaps::subgraphs`: CUDA's `CUgraph`).
    /// `UnsupportedFeature`, the default, elsewhere. Not the buffer's native
    /// handle, which only the executable phase has.
    fn recording_target(&self) -> Result<NativeHandle> {
        Err(crate::err!(UnsupportedFeature, "this command buffer does not nest in others"))
    }
}

/// A failed [`RecordingCommandBufferImpl::finalize`]: the error, and the
/// recording, unchanged.
pub struct FinalizeFailed {
    /// Why finalize failed.
    pub error: crate::error::UrError,
    /// The recording, as it was before the call.
    pub recording: Box<dyn RecordingCommandBufferImpl>,
}

impl FinalizeFailed {
    /// A failure of `recording`'s finalize with `error`.
    pub fn new(error: crate::error::UrError, recording: Box<dyn RecordingCommandBufferImpl>) -> FinalizeFailed {
        FinalizeFailed { error, recording }
    }
}

/// A finalized native command buffer: the second phase, returned by
/// [`RecordingCommandBufferImpl::finalize`]. Enqueues, updates and the native
/// handle live here; the front end serialises all calls.
pub trait ExecutableCommandBufferImpl: Any + Send {
    /// Submits one execution after the events of `wait` and after every
    /// earlier submission of this buffer (on any queue), returning the event
    /// of its completion. Updates made after this call never affect it.
    ///
    /// # Safety
    /// `queue` is a queue of this adapter and context; `wait` are events of
    /// this context, or of contexts whose events it waits for
    /// ([`ContextImpl::waits_on_events_of`]).
    unsafe fn enqueue(&mut self, queue: &dyn QueueImpl, wait: &[&dyn EventImpl]) -> Result<Arc<dyn EventImpl>>;

    /// [`enqueue`](Self::enqueue), told whether `queue` runs its commands in
    /// order (each after the previous one has completed), which the front
    /// end knows: an implementation that submits several commands may then
    /// leave out what the queue's order already gives. By default, `enqueue`.
    ///
    /// # Safety
    /// As for [`enqueue`](Self::enqueue); `in_order` is true only for an
    /// in-order queue.
    unsafe fn enqueue_ordered(
        &mut self,
        queue: &dyn QueueImpl,
        wait: &[&dyn EventImpl],
        in_order: bool,
    ) -> Result<Arc<dyn EventImpl>> {
        let _ = in_order;
        // SAFETY: `queue` is a queue of this adapter and context and `wait` events it may wait on
        // (this function's `# Safety`, `enqueue`'s); `in_order` is not used.
        unsafe { self.enqueue(queue, wait) }
    }

    /// Replaces kernel commands' launches for the next enqueues.
    ///
    /// # Safety
    /// The buffer is updatable; each entry names a kernel command, at most
    /// once; each launch is complete and valid, its kernel the command's
    /// original kernel or one of its alternatives; the device reports every
    /// capability the change needs.
    unsafe fn update_kernel_launches(&mut self, updates: &[KernelUpdate<'_>]) -> Result<()>;

    /// Gives `command` a new signal event for the next enqueues.
    ///
    /// # Safety
    /// The buffer is updatable; the command was appended with a signal
    /// event; the device reports the EVENTS capability.
    unsafe fn update_signal_event(&mut self, command: u32) -> Result<Arc<dyn EventImpl>>;

    /// Replaces `command`'s wait events for the next enqueues.
    ///
    /// # Safety
    /// As for `update_signal_event`; `events` has as many events as the
    /// command was appended with, all of this context.
    unsafe fn update_wait_events(&mut self, command: u32, events: &[Event]) -> Result<()>;

    /// The native object that an enqueue submits, the one meaning of
    /// `urCommandBufferGetNativeHandleExp` on every backend: the CPU plan's
    /// address, OpenCL's `cl_command_buffer_khr` (the first one, where a
    /// buffer is recorded as several), Vulkan's `VkCommandBuffer` (the first
    /// secondary), CUDA's `CUgraphExec`. `UnsupportedFeature` where there is
    /// no driver object (software and pre-planned buffers). Before finalize
    /// there is no executable object: the front end answers `InvalidOperation`.
    fn native_handle(&self) -> Result<NativeHandle>;
}

/// One rank's part of a native collective call.
pub struct CollectiveRank<'a> {
    /// The rank's queue, of a context of the rank's device.
    pub queue: &'a dyn QueueImpl,
    /// The device address of what the rank sends (unused for a broadcast's
    /// other ranks than the root, where it is the receive address).
    pub send: u64,
    /// The device address the rank receives into.
    pub recv: u64,
    /// Events the rank's part waits for, of the rank's context.
    pub wait: &'a [&'a dyn EventImpl],
}

/// A group of devices an adapter runs collectives over natively, one rank
/// per device ([`DeviceImpl::collective_group`]).
pub trait CollectiveImpl: Send + Sync {
    /// The implementation's name and version, for diagnostics (`NCCL 2.28.3`).
    fn name(&self) -> String;

    /// Enqueues `op` over `dtype` elements on every rank's queue, each
    /// rank's part after its wait list and its queue's order; returns each
    /// rank's event, of its queue's context, in rank order.
    ///
    /// # Safety
    /// `ranks` holds one rank per device of the group, in its order, each
    /// queue of a context of that rank's device. The front end checked every
    /// range: each rank's send and receive addresses hold the elements
    /// [`CollectiveOp::counts`] gives, in USM allocations of the rank's
    /// context kept alive until the rank's event completes; ranges of one
    /// rank overlap only in NCCL's in-place layouts; the counts are non-zero
    /// and multiples of the rank count where the operation divides them; a
    /// broadcast's root is a rank. Calls on one group are not concurrent.
    unsafe fn enqueue(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        ranks: &[CollectiveRank<'_>],
    ) -> Result<Vec<Arc<dyn EventImpl>>>;

    /// Captures `op` over `dtype` elements with each rank's `(send, recv)`
    /// device addresses into a form launched at each
    /// [`CapturedCollectiveImpl::launch`] without issuing the collective
    /// again (CUDA: one CUDA graph over the ranks' devices).
    /// `UnsupportedFeature`, the default, where the adapter cannot; the
    /// front end then issues the collective at each launch.
    ///
    /// # Safety
    /// As for [`enqueue`](Self::enqueue), for the ranges of every launch:
    /// the front end keeps the allocations alive as long as the capture.
    unsafe fn capture(
        &self,
        op: &CollectiveOp,
        dtype: DataType,
        buffers: &[(u64, u64)],
    ) -> Result<Box<dyn CapturedCollectiveImpl>> {
        let _ = (op, dtype, buffers);
        Err(crate::err!(UnsupportedFeature, "the adapter cannot capture collectives"))
    }
}

/// A collective captured by [`CollectiveImpl::capture`]; `Any` so that its
/// adapter finds its own type when it is a part of a composition
/// ([`ComposeWork::Collective`]).
pub trait CapturedCollectiveImpl: Any + Send + Sync {
    /// Launches the captured collective, each rank's part after its queue's
    /// order and wait list (the ranks' `send` and `recv` are those of the
    /// capture and not read here); each rank's event, in rank order.
    ///
    /// # Safety
    /// As for [`CollectiveImpl::enqueue`]: launches of one capture, and
    /// calls of its group, are not concurrent.
    unsafe fn launch(&self, ranks: &[CollectiveRank<'_>]) -> Result<Vec<Arc<dyn EventImpl>>>;
}

/// Downcasts an object passed back into its adapter. A mismatch means the
/// front end let objects of two adapters meet: reported as `InvalidValue`
/// rather than a panic.
pub fn downcast<'a, T: Any>(object: &'a dyn Any, what: &str) -> Result<&'a T> {
    object.downcast_ref::<T>().ok_or_else(|| crate::err!(InvalidValue, "{what} belongs to another adapter"))
}

// The accessors of the front end's objects that adapters, the ABI crate
// and white-box tests use; cmdbuf-core implements them (module `backing`).

/// A front-end object's adapter object.
pub trait Backing {
    /// The adapter object's type (a trait object of [`crate::adapter`]).
    type Imp: ?Sized;

    /// The adapter object this front-end object wraps, as the adapter made it.
    fn imp(&self) -> &Self::Imp;
}

/// What adapters need of events beyond their adapter object.
pub trait EventBacking {
    /// The adapter event that waiting on this event means waiting on now, or
    /// `None` when there is nothing to wait for (a command-buffer signal event
    /// before the first enqueue). Adapters call this when they use a wait
    /// event, so that signal events of software command buffers resolve to
    /// their latest execution.
    fn resolve(&self) -> Option<Arc<dyn EventImpl>>;
}

/// What adapters need of memory buffers beyond their adapter object.
pub trait BufferBacking {
    /// The adapter's own object for a sub-buffer, where it made one
    /// ([`BufferImpl::sub_buffer`]); `None` for a root buffer.
    fn sub_buffer_imp(&self) -> Option<&dyn BufferImpl>;
}

/// What adapters do with native commands.
pub trait NativeBacking {
    /// Runs the callback with `target`. Adapters call it where the backend's
    /// native work goes (see [`crate::interop`]); a panic of the callback is
    /// returned as an execution error.
    ///
    /// # Safety
    /// `target` is the backend's documented target, valid for the call, and
    /// ordered after the command's dependencies and before its dependents.
    unsafe fn invoke(&self, backend: Backend, target: NativeTarget) -> Result<()>;
}

pub mod command;
pub mod launch;
pub(crate) mod objects;
pub(crate) mod operands;
pub mod prelude;
mod resources;
pub mod toolbox;
