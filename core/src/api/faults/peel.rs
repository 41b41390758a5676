//! What a wrapped call hands the adapter it wraps: its arguments with every
//! wrapped object replaced by the adapter's own object behind it, so that
//! the adapter only ever sees its own objects and its downcasts are the
//! plain ones of production builds.
//!
//! Objects the adapter is handed as trait objects (wait lists, the queue of
//! a command-buffer enqueue, a peer device) are replaced by the object the
//! wrapper wraps. Objects inside front-end handles (the buffers, USM
//! positions and kernels of a command, the events of a command-buffer wait
//! list) are replaced by *twins*: the same front-end object, its adapter
//! object the adapter's own. A buffer's, allocation's or kernel's twin is
//! made once and kept by its wrapper ([`Held`](super::Held)), so that the adapter sees
//! one identity per object; an event's twin shares the adapter's event.

use std::any::Any;
use std::sync::{Arc, Weak};

use super::{FaultyBuffer, FaultyDevice, FaultyEvent, FaultyKernel, FaultyQueue, FaultyUserEvent, FaultyUsm};
use crate::adapter::{DeviceImpl, EventImpl, QueueImpl};
use crate::command::Command;
use crate::event::Event;
use crate::interop::NativeCommand;
use crate::launch::{ArgValue, KernelCommand};
use crate::live::Live;
use crate::memory::{MemBuffer, MemLoc, UsmRef};
use crate::objects::{BufferInner, KernelInner, Storage, UsmInner};
use crate::program::Kernel;

/// The adapter's event behind a wrapped one, for wait lists; other events
/// unchanged.
pub(super) fn event_imp(event: &dyn EventImpl) -> &dyn EventImpl {
    let any = event as &dyn Any;
    if let Some(e) = any.downcast_ref::<FaultyEvent>() {
        return &*e.inner;
    }
    if let Some(e) = any.downcast_ref::<FaultyUserEvent>() {
        return &*e.inner;
    }
    event
}

/// A wait list with each wrapped event replaced by the adapter's.
pub(super) fn wait_list<'a>(wait: &[&'a dyn EventImpl]) -> Vec<&'a dyn EventImpl> {
    wait.iter().map(|e| event_imp(*e)).collect()
}

/// The adapter's queue behind a wrapped one; another queue unchanged.
pub(super) fn queue(queue: &dyn QueueImpl) -> &dyn QueueImpl {
    match (queue as &dyn Any).downcast_ref::<FaultyQueue>() {
        Some(q) => &*q.inner,
        None => queue,
    }
}

/// The adapter's device behind a wrapped one; another device unchanged.
pub(super) fn device(device: &dyn DeviceImpl) -> &dyn DeviceImpl {
    match (device as &dyn Any).downcast_ref::<FaultyDevice>() {
        Some(d) => &*d.inner,
        None => device,
    }
}

/// The adapter's event behind a wrapped event object, shared.
fn event_arc(event: &Arc<dyn EventImpl>) -> Option<Arc<dyn EventImpl>> {
    let any = &**event as &dyn Any;
    if let Some(e) = any.downcast_ref::<FaultyEvent>() {
        return Some(e.inner.clone());
    }
    any.downcast_ref::<FaultyUserEvent>().map(|e| e.inner.clone() as Arc<dyn EventImpl>)
}

/// `event`'s twin. An event that forwards to another (a software command
/// buffer's signal event, a graph's span) is resolved now: its twin is the
/// event it means at this call, not at the adapter's later use; one that
/// means nothing yet, or no wrapped event, is handed on as it is.
pub(super) fn event(event: &Event) -> Event {
    let inner = event_arc(&event.imp).or_else(|| event.resolve().as_ref().and_then(event_arc));
    match inner {
        Some(imp) => Event { imp, context: event.context, captured: event.captured, _live: Live::new() },
        None => event.clone(),
    }
}

/// The twins of `events`.
pub(super) fn events(events: &[Event]) -> Vec<Event> {
    events.iter().map(event).collect()
}

/// `buffer`'s twin (a sub-buffer's names its parent's twin).
pub(super) fn buffer(buffer: &MemBuffer) -> MemBuffer {
    match &buffer.inner.storage {
        Storage::Root(imp) => match (&**imp as &dyn Any).downcast_ref::<FaultyBuffer>() {
            Some(wrapped) => wrapped.held.twin(|inner| rebuilt(buffer, Storage::Root(inner))),
            None => buffer.clone(),
        },
        Storage::View { parent: wrapped_parent, offset, native } => {
            let parent = self::buffer(wrapped_parent);
            match native.as_deref().map(|n| (n as &dyn Any).downcast_ref::<FaultyBuffer>()) {
                Some(Some(wrapped)) => wrapped
                    .held
                    .twin(|inner| rebuilt(buffer, Storage::View { parent, offset: *offset, native: Some(inner) })),
                // Without an adapter object of its own, the view is made
                // again each time over its parent's twin.
                None if !Arc::ptr_eq(&parent.inner, &wrapped_parent.inner) => {
                    rebuilt(buffer, Storage::View { parent, offset: *offset, native: None })
                }
                _ => buffer.clone(),
            }
        }
    }
}

/// `buffer` with `storage` in place of its own.
fn rebuilt(buffer: &MemBuffer, storage: Storage) -> MemBuffer {
    let b = &buffer.inner;
    MemBuffer {
        inner: Arc::new(BufferInner {
            id: b.id,
            storage,
            size: b.size,
            flags: b.flags,
            context: b.context,
            align: b.align,
        }),
    }
}

/// `usm`'s twin, at the same offset.
pub(super) fn usm(usm: &UsmRef) -> UsmRef {
    let a = &*usm.alloc;
    match (&*a.imp as &dyn Any).downcast_ref::<FaultyUsm>() {
        Some(wrapped) => {
            let alloc = wrapped.held.twin(|imp| {
                Arc::new(UsmInner {
                    imp,
                    address: a.address,
                    size: a.size,
                    kind: a.kind,
                    // The wrapped allocation is the one the context finds
                    // by address: the twin is in no tracker.
                    tracker: Weak::new(),
                    _live: Live::new(),
                })
            });
            UsmRef { alloc, offset: usm.offset }
        }
        None => usm.clone(),
    }
}

fn mem_loc(loc: &MemLoc) -> MemLoc {
    match loc {
        MemLoc::Usm(r) => MemLoc::Usm(usm(r)),
        MemLoc::Host(p) => MemLoc::Host(*p),
    }
}

/// `kernel`'s twin.
pub(super) fn kernel(kernel: &Kernel) -> Kernel {
    let k = &*kernel.inner;
    match (&*k.imp as &dyn Any).downcast_ref::<FaultyKernel>() {
        Some(wrapped) => wrapped.held.twin(|imp| Kernel {
            inner: Arc::new(KernelInner {
                program: k.program.clone(),
                signature: k.signature.clone(),
                max_work_group_size: k.max_work_group_size,
                compile_size: k.compile_size,
                imp,
                cache_config: parking_lot::Mutex::new(*k.cache_config.lock()),
                _live: Live::new(),
            }),
        }),
        None => kernel.clone(),
    }
}

/// The twins of `kernels`.
pub(super) fn kernels(kernels: &[Kernel]) -> Vec<Kernel> {
    kernels.iter().map(kernel).collect()
}

/// `launch` with the twins of its kernel and buffers.
pub(super) fn kernel_command(launch: &KernelCommand) -> KernelCommand {
    let args = launch
        .args
        .iter()
        .map(|a| match a {
            ArgValue::MemObj(b) => ArgValue::MemObj(buffer(b)),
            other => other.clone(),
        })
        .collect();
    KernelCommand { kernel: kernel(&launch.kernel), range: launch.range, args }
}

fn native(command: &NativeCommand) -> NativeCommand {
    NativeCommand {
        callback: command.callback.clone(),
        mems: command.mems.iter().map(buffer).collect(),
        owner: command.owner,
        // The child is a front-end command buffer, which the adapter only
        // asks for its recording target (a native handle).
        child: command.child.clone(),
    }
}

/// `command` with the twins of the objects it holds.
pub(super) fn command(command: &Command) -> Command {
    match command {
        Command::KernelLaunch(k) => Command::KernelLaunch(kernel_command(k)),
        Command::UsmMemcpy { dst, src, size } => {
            Command::UsmMemcpy { dst: mem_loc(dst), src: mem_loc(src), size: *size }
        }
        Command::UsmFill { dst, pattern, size } => {
            Command::UsmFill { dst: usm(dst), pattern: pattern.clone(), size: *size }
        }
        Command::UsmPrefetch { mem, size, flags } => Command::UsmPrefetch { mem: usm(mem), size: *size, flags: *flags },
        Command::UsmAdvise { mem, size, advice } => Command::UsmAdvise { mem: usm(mem), size: *size, advice: *advice },
        Command::BufferCopy { src, dst, src_offset, dst_offset, size } => Command::BufferCopy {
            src: buffer(src),
            dst: buffer(dst),
            src_offset: *src_offset,
            dst_offset: *dst_offset,
            size: *size,
        },
        Command::BufferCopyRect { src, dst, src_layout, dst_layout, region } => Command::BufferCopyRect {
            src: buffer(src),
            dst: buffer(dst),
            src_layout: *src_layout,
            dst_layout: *dst_layout,
            region: *region,
        },
        Command::BufferRead { buffer: b, offset, size, dst } => {
            Command::BufferRead { buffer: buffer(b), offset: *offset, size: *size, dst: mem_loc(dst) }
        }
        Command::BufferWrite { buffer: b, offset, size, src } => {
            Command::BufferWrite { buffer: buffer(b), offset: *offset, size: *size, src: mem_loc(src) }
        }
        Command::BufferReadRect { buffer: b, buffer_layout, host_layout, region, dst } => Command::BufferReadRect {
            buffer: buffer(b),
            buffer_layout: *buffer_layout,
            host_layout: *host_layout,
            region: *region,
            dst: mem_loc(dst),
        },
        Command::BufferWriteRect { buffer: b, buffer_layout, host_layout, region, src } => Command::BufferWriteRect {
            buffer: buffer(b),
            buffer_layout: *buffer_layout,
            host_layout: *host_layout,
            region: *region,
            src: mem_loc(src),
        },
        Command::BufferFill { buffer: b, pattern, offset, size } => {
            Command::BufferFill { buffer: buffer(b), pattern: pattern.clone(), offset: *offset, size: *size }
        }
        Command::Native(n) => Command::Native(native(n)),
    }
}
