//! The adapter objects behind the front end's types: what adapter crates,
//! the ABI crate and white-box tests reach through, and applications never
//! need.
//!
//! The accessors are traits of [`crate::adapter`] rather than inherent
//! methods, and their implementations here are hidden from the
//! documentation, so that the public types document only the application's
//! API: a crate sees them after `use cmdbuf_core::adapter::{Backing, ...}`.

use std::sync::Arc;

use crate::Backend;
use crate::adapter::{
    Backing, BufferBacking, BufferImpl, ContextImpl, DeviceImpl, EventImpl, KernelImpl, ProgramImpl, QueueImpl, UsmImpl,
};
use crate::adapter::{EventBacking, NativeBacking};
use crate::context::Context;
use crate::device::Device;
use crate::error::Result;
use crate::event::Event;
use crate::interop::{NativeCommand, NativeTarget};
use crate::memory::{MemBuffer, UsmRef};
use crate::program::{Kernel, Program};
use crate::queue::Queue;

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

#[doc(hidden)]
impl EventBacking for Event {
    fn resolve(&self) -> Option<Arc<dyn EventImpl>> {
        Event::resolve(self)
    }
}

#[doc(hidden)]
impl BufferBacking for MemBuffer {
    fn sub_buffer_imp(&self) -> Option<&dyn BufferImpl> {
        MemBuffer::sub_buffer_imp(self)
    }
}

#[doc(hidden)]
impl NativeBacking for NativeCommand {
    unsafe fn invoke(&self, backend: Backend, target: NativeTarget) -> Result<()> {
        // SAFETY: the caller keeps the same contract.
        unsafe { NativeCommand::invoke(self, backend, target) }
    }
}
