//! How every kernel, the application's and the adapter's helpers, is
//! launched: its arguments set on the `cl_kernel`, then enqueued on a queue
//! after a wait list or recorded into a command-buffer after sync points.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use cl3::types::{cl_command_queue, cl_event, cl_kernel, cl_mem};
use cmdbuf_core::{Result, err};
use smallvec::SmallVec;

use crate::conv::ClResultExt;
use crate::device::{Shared, Usm};
use crate::event::WaitList;
use crate::ffi::{CommandBufferApi, RawEvent, cl_command_buffer_khr, cl_mutable_command_khr, cl_sync_point_khr};
use crate::one_launch::{self, RecordedKernels};

/// Where a launch goes.
pub(crate) enum Target<'a> {
    /// Enqueued on a queue after the events of a wait list; `one_launch`
    /// (the queue's context): also after the previous launch of the kernel
    /// (see [`crate::one_launch`]), which an `in_order` queue (an
    /// application's in-order queue) orders itself when it was enqueued there.
    Queue {
        queue: cl_command_queue,
        wait: &'a WaitList<'a>,
        one_launch: Option<cl3::types::cl_context>,
        in_order: bool,
    },
    /// Recorded into a command-buffer after sync points; with `kernels`, also
    /// after the segment's previous command of the kernel; with `updatable`
    /// `CL_MUTABLE_DISPATCH_*_KHR` fields (a mutable command-buffer), as a
    /// mutable dispatch whose handle is returned.
    Record {
        api: &'a CommandBufferApi,
        buffer: cl_command_buffer_khr,
        deps: &'a [cl_sync_point_khr],
        kernels: Option<&'a RefCell<RecordedKernels>>,
        updatable: cl3::types::cl_bitfield,
    },
}

impl<'a> Target<'a> {
    /// Enqueued on `queue` of `shared`'s context after `wait`.
    pub(crate) fn queue(shared: &Shared, queue: cl_command_queue, wait: &'a WaitList<'a>) -> Target<'a> {
        Target::Queue {
            queue,
            wait,
            one_launch: shared.device.one_launch_per_kernel.then(|| shared.context.get()),
            in_order: false,
        }
    }

    /// As [`queue`](Self::queue), on an application's in-order queue when
    /// `in_order` (see [`crate::one_launch::enqueue_exclusive`]).
    pub(crate) fn app_queue(
        shared: &Shared,
        queue: cl_command_queue,
        wait: &'a WaitList<'a>,
        in_order: bool,
    ) -> Target<'a> {
        match Target::queue(shared, queue, wait) {
            Target::Queue { queue, wait, one_launch, .. } => Target::Queue { queue, wait, one_launch, in_order },
            other => other,
        }
    }
}

/// What a launch produced.
pub(crate) enum Launched {
    /// The event of an enqueued command.
    Event(RawEvent),
    /// A recorded command.
    SyncPoint(Recorded),
}

/// What a recorded command needs alive as long as its command-buffer (held,
/// never read: dropping it releases the objects).
#[derive(Default)]
pub(crate) struct Kept {
    /// The kernel object the command was recorded from.
    _kernel: Option<opencl3::kernel::Kernel>,
    /// A buffer the command reads (a fill's long pattern).
    _memory: Option<opencl3::memory::Buffer<u8>>,
}

impl Launched {
    /// The event of an enqueued launch.
    pub(crate) fn into_event(self) -> Result<RawEvent> {
        match self {
            Launched::Event(e) => Ok(e),
            Launched::SyncPoint(..) => Err(err!(Unknown, "an enqueue produced a sync point")),
        }
    }

    /// The sync point and kept objects of a recorded launch.
    pub(crate) fn into_recorded(self) -> Result<Recorded> {
        match self {
            Launched::SyncPoint(recorded) => Ok(recorded),
            Launched::Event(_) => Err(err!(Unknown, "a recording produced an event")),
        }
    }

    /// The same launch, keeping `memory` alive as long as a recorded
    /// command needs it. An enqueued command needs no more than OpenCL
    /// gives: a buffer released while a command uses it is deleted only
    /// once the command has finished.
    pub(crate) fn keeping(self, memory: opencl3::memory::Buffer<u8>) -> Launched {
        match self {
            Launched::SyncPoint(mut recorded) => {
                recorded.kept._memory = Some(memory);
                Launched::SyncPoint(recorded)
            }
            event @ Launched::Event(_) => event,
        }
    }
}

/// A recorded command.
pub(crate) struct Recorded {
    /// Its sync point.
    pub(crate) point: cl_sync_point_khr,
    /// What it needs alive as long as the command-buffer (a launch's kernel
    /// object, a buffer it reads).
    pub(crate) kept: Kept,
    /// A mutable dispatch's handle (NULL otherwise).
    pub(crate) mutable: cl_mutable_command_khr,
}

impl Recorded {
    /// A recorded command that is not a launch.
    pub(crate) fn plain(point: cl_sync_point_khr) -> Recorded {
        Recorded { point, kept: Kept::default(), mutable: ptr::null_mut() }
    }
}

/// Launches `kernel` with its arguments as currently set.
///
/// # Safety
/// Every argument of `kernel` is set; the sizes are valid for it (global a
/// multiple of local, no zero size); the target's handles are valid.
pub(crate) unsafe fn launch(
    target: &Target<'_>,
    kernel: cl_kernel,
    name: &str,
    work_dim: u32,
    offset: [usize; 3],
    global: [usize; 3],
    local: [usize; 3],
) -> Result<Launched> {
    match target {
        Target::Queue { queue, wait, one_launch, in_order } => {
            let enqueue = |wait: &[cl_event]| {
                let list = if wait.is_empty() { ptr::null() } else { wait.as_ptr() };
                // SAFETY: per the contract; the arrays outlive the call.
                let event = unsafe {
                    cl3::command_queue::enqueue_nd_range_kernel(
                        *queue,
                        kernel,
                        work_dim,
                        offset.as_ptr(),
                        global.as_ptr(),
                        local.as_ptr(),
                        wait.len() as u32,
                        list,
                    )
                }
                .cl("clEnqueueNDRangeKernel")?;
                // SAFETY: a successful enqueue returns a new reference.
                Ok(unsafe { RawEvent::from_raw(event) })
            };
            let event = if let Some(context) = *one_launch {
                let ordered = in_order.then_some(*queue);
                one_launch::enqueue_exclusive(context, ordered, &[name], wait.handles(), enqueue)?
            } else {
                enqueue(wait.handles())?
            };
            Ok(Launched::Event(event))
        }
        Target::Record { api, buffer, deps, kernels, updatable } => {
            // Each recorded launch gets its own copy of the kernel and its
            // arguments: PoCL 3.1 reads a recorded kernel's arguments when the
            // command-buffer runs, not when it was recorded, so a kernel
            // recorded twice with different arguments would run twice with the
            // last ones. Where cloning is not available (before OpenCL 2.1),
            // the kernel itself is recorded, as the extension specifies.
            let clone = cl3::kernel::clone_kernel(kernel).ok().map(opencl3::kernel::Kernel::new);
            let recorded = clone.as_ref().map_or(kernel, |k| k.get());
            let mut all_deps: SmallVec<[cl_sync_point_khr; 8]> = SmallVec::from_slice(deps);
            if let Some(kernels) = kernels {
                all_deps.extend(kernels.borrow().extra_dep(name));
            }
            // SAFETY: per the contract; a clone has the same arguments set;
            // updatable fields are given only for mutable command-buffers.
            let (point, mutable) =
                unsafe { api.nd_range(*buffer, recorded, work_dim, &offset, &global, &local, &all_deps, *updatable) }
                    .cl("clCommandNDRangeKernelKHR")?;
            if let Some(kernels) = kernels {
                kernels.borrow_mut().recorded(name, point);
            }
            Ok(Launched::SyncPoint(Recorded { point, kept: Kept { _kernel: clone, _memory: None }, mutable }))
        }
    }
}

/// A global-memory pointer argument.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Ptr {
    /// A buffer (offsets are separate arguments).
    Mem(cl_mem),
    /// A USM address.
    Usm(*mut c_void),
    /// NULL.
    Null,
}

/// Sets a pointer argument.
///
/// # Safety
/// `index` is a global-pointer argument of `kernel`; a USM address belongs to
/// the kernel's context (through `usm`'s mechanism).
pub(crate) unsafe fn set_ptr(usm: &Usm, kernel: cl_kernel, index: u32, value: Ptr) -> Result<()> {
    // SAFETY: for each call, the argument is a global pointer (contract); a
    // cl_mem is passed by address with its size, NULL as a null cl_mem.
    unsafe {
        match value {
            Ptr::Mem(mem) => cl3::kernel::set_kernel_arg(kernel, index, size_of::<cl_mem>(), (&raw const mem).cast())
                .cl("clSetKernelArg (buffer)"),
            Ptr::Null => cl3::kernel::set_kernel_arg(kernel, index, size_of::<cl_mem>(), ptr::null())
                .cl("clSetKernelArg (null pointer)"),
            Ptr::Usm(p) => match usm {
                Usm::Intel(api) => api.set_arg(kernel, index, p).cl("clSetKernelArgMemPointerINTEL"),
                Usm::Svm => cl3::kernel::set_kernel_arg_svm_pointer(kernel, index, p.cast_const())
                    .cl("clSetKernelArgSVMPointer"),
                Usm::None => Err(cmdbuf_core::err!(UnsupportedFeature, "the device has no USM")),
            },
        }
    }
}

/// Sets a by-value argument.
///
/// # Safety
/// `index` is a by-value argument of `kernel` of `bytes.len()` bytes.
pub(crate) unsafe fn set_value(kernel: cl_kernel, index: u32, bytes: &[u8]) -> Result<()> {
    // SAFETY: per the contract; OpenCL copies the value.
    unsafe { cl3::kernel::set_kernel_arg(kernel, index, bytes.len(), bytes.as_ptr().cast()) }
        .cl("clSetKernelArg (value)")
}

/// Sets a local-memory argument.
///
/// # Safety
/// `index` is a local-memory argument of `kernel`; `size` is non-zero.
pub(crate) unsafe fn set_local(kernel: cl_kernel, index: u32, size: usize) -> Result<()> {
    // SAFETY: per the contract; local arguments take a size and NULL.
    unsafe { cl3::kernel::set_kernel_arg(kernel, index, size, ptr::null()) }.cl("clSetKernelArg (local)")
}
