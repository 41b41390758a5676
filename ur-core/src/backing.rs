//! The adapter objects behind the front end's types: what adapter crates,
//! the ABI crate and white-box tests reach through, and applications never
//! need.
//!
//! These accessors are traits rather than inherent methods, and their
//! implementations are hidden from the documentation, so that the public
//! types document only the application's API: a crate sees them after
//! `use ur_core::adapter::{Backing, EventBacking, BufferBacking}`.

use std::sync::Arc;

use crate::Backend;
use crate::adapter::{BufferImpl, ContextImpl, DeviceImpl, EventImpl, KernelImpl, ProgramImpl, QueueImpl, UsmImpl};
use crate::context::Context;
use crate::device::Device;
use crate::error::Result;
use crate::event::Event;
use crate::interop::{NativeCommand, NativeTarget};
use crate::memory::{MemBuffer, UsmRef};
use crate::program::{Kernel, Program};
use crate::queue::Queue;

/// A front-end object's adapter object.
pub trait Backing {
    /// The adapter object's type (a trait object of [`crate::adapter`]).
    type Imp: ?Sized;

    /// The adapter object this front-end object wraps, as the adapter made it.
    fn imp(&self) -> &Self::Imp;
}

/// Implements [`Backing`] by the type's crate-private `imp` accessor.
macro_rules! backing {
    ($($ty:ty => $imp:ty;)*) => {$(
        #[doc(hidden)]
        impl Backing for $ty {
            type Imp = $imp;
            fn imp(&self) -> &$imp {
                <$ty>::imp(self)
            }
        }
    )*};
}

backing! {
    Context => Arc<dyn ContextImpl>;
    Device => Arc<dyn DeviceImpl>;
    Event => Arc<dyn EventImpl>;
    Kernel => dyn KernelImpl;
    MemBuffer => dyn BufferImpl;
    Program => dyn ProgramImpl;
    Queue => dyn QueueImpl;
}

/// A USM position's allocation, as its adapter made it.
#[doc(hidden)]
impl Backing for UsmRef {
    type Imp = dyn UsmImpl;
    fn imp(&self) -> &dyn UsmImpl {
        self.alloc().imp()
    }
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

#[doc(hidden)]
impl EventBacking for Event {
    fn resolve(&self) -> Option<Arc<dyn EventImpl>> {
        Event::resolve(self)
    }
}

/// What adapters need of memory buffers beyond their adapter object.
pub trait BufferBacking {
    /// The adapter's own object for a sub-buffer, where it made one
    /// ([`BufferImpl::sub_buffer`]); `None` for a root buffer.
    fn sub_buffer_imp(&self) -> Option<&dyn BufferImpl>;
}

#[doc(hidden)]
impl BufferBacking for MemBuffer {
    fn sub_buffer_imp(&self) -> Option<&dyn BufferImpl> {
        MemBuffer::sub_buffer_imp(self)
    }
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

#[doc(hidden)]
impl NativeBacking for NativeCommand {
    unsafe fn invoke(&self, backend: Backend, target: NativeTarget) -> Result<()> {
        // SAFETY: the caller keeps the same contract.
        unsafe { NativeCommand::invoke(self, backend, target) }
    }
}
