//! Kernel-command updates in place, through
//! `cl_khr_command_buffer_mutable_dispatch`.
//!
//! An update that only changes what the device's mutable dispatch can
//! change (arguments, global size, global offset, local size, as its
//! `CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR` allows) becomes one
//! `cl_mutable_dispatch_config_khr` of the recorded command; anything else
//! (another kernel, another work dimension, a launch that is or becomes
//! empty) is `None` here, and the command's step is recorded again.

use std::any::Any;
use std::ffi::c_void;
use std::ptr;

use cl3::types::{cl_bitfield, cl_mem};
use cmdbuf_core::adapter::prelude::*;

use crate::device::Usm;
use crate::exec;
use crate::ffi::{
    CL_MUTABLE_DISPATCH_ARGUMENTS_KHR, CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR, CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR,
    CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR, DispatchUpdate, MutableArg, cl_mutable_command_khr,
};
use crate::program::ClKernel;

/// A configuration and the values its argument lists point to.
pub(crate) struct OwnedUpdate {
    /// The configuration; its `arg_value`s point into the boxes below.
    pub(crate) update: DispatchUpdate,
    /// The bytes of value arguments and of buffers' `cl_mem` handles (as
    /// `clSetKernelArg` takes them: a pointer to the handle).
    _values: Vec<Box<[u8]>>,
}

// SAFETY: the configuration's pointers are into the boxes it owns (moving
// the struct does not move their contents) or are device addresses; OpenCL
// handles may be used from any thread.
unsafe impl Send for OwnedUpdate {}

/// Whether two arguments set the same value.
fn same_arg(a: &ArgValue, b: &ArgValue) -> Result<bool> {
    Ok(match (a, b) {
        (ArgValue::Value(x), ArgValue::Value(y)) => x == y,
        (ArgValue::Pointer(x), ArgValue::Pointer(y)) => x.addr() == y.addr(),
        (ArgValue::MemObj(x), ArgValue::MemObj(y)) => exec::kernel_mem(x)? == exec::kernel_mem(y)?,
        (ArgValue::Local(x), ArgValue::Local(y)) => x == y,
        _ => false,
    })
}

/// How a recorded kernel command becomes an updated one.
pub(crate) enum InPlace {
    /// Nothing it sets changed.
    Unchanged,
    /// This configuration of its mutable dispatch.
    Update(Box<OwnedUpdate>),
    /// Mutable dispatch cannot express the change: record it again.
    Rerecord,
}

/// How the mutable dispatch `handle` (NULL where the command is not one),
/// recorded from `old` with `fields` updatable, comes to run as `new`.
pub(crate) fn dispatch_update(
    usm: &Usm,
    handle: cl_mutable_command_khr,
    old: &KernelCommand,
    new: &KernelCommand,
    fields: cl_bitfield,
) -> Result<InPlace> {
    let (o, n) = (&old.range, &new.range);
    let empty = |k: &KernelCommand| k.range.global_size.contains(&0);
    let status_word = downcast::<ClKernel>(new.kernel.imp() as &dyn Any, "a kernel")?.status_abi;
    if handle.is_null()
        || !old.kernel.same_kernel(&new.kernel)
        || o.work_dim != n.work_dim
        || empty(old)
        || empty(new)
        || status_word
        || old.args.len() != new.args.len()
    {
        return Ok(InPlace::Rerecord);
    }
    let mut update = DispatchUpdate { command: handle, work_dim: n.work_dim, ..DispatchUpdate::default() };
    let mut wants: cl_bitfield = 0;
    if o.global_size != n.global_size {
        wants |= CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR;
        update.global_size = Some(n.global_size);
    }
    if o.global_offset != n.global_offset {
        wants |= CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR;
        update.global_offset = Some(n.global_offset);
    }
    if o.local_size != n.local_size {
        wants |= CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR;
        update.local_size = Some(n.local_size);
    }
    let mut values: Vec<Box<[u8]>> = Vec::new();
    for (i, (a, b)) in old.args.iter().zip(&new.args).enumerate() {
        if same_arg(a, b)? {
            continue;
        }
        wants |= CL_MUTABLE_DISPATCH_ARGUMENTS_KHR;
        push_arg(usm, &mut update, &mut values, i as u32, b)?;
    }
    Ok(if wants == 0 {
        InPlace::Unchanged
    } else if wants & !fields != 0 {
        InPlace::Rerecord
    } else {
        InPlace::Update(Box::new(OwnedUpdate { update, _values: values }))
    })
}

/// Adds the new value of argument `arg_index` to `update`: bytes (kept in
/// `values` until the update is applied), a null pointer, a USM pointer in
/// the SVM list, a buffer, or a local-memory size.
fn push_arg(
    usm: &Usm,
    update: &mut DispatchUpdate,
    values: &mut Vec<Box<[u8]>>,
    arg_index: u32,
    b: &ArgValue,
) -> Result<()> {
    match b {
        ArgValue::Value(bytes) => {
            let owned: Box<[u8]> = bytes.as_slice().into();
            update.args.push(MutableArg { arg_index, arg_size: owned.len(), arg_value: owned.as_ptr().cast() });
            values.push(owned);
        }
        ArgValue::Pointer(p) if p.is_null() => {
            update.args.push(MutableArg { arg_index, arg_size: size_of::<cl_mem>(), arg_value: ptr::null() });
        }
        // Intel USM pointers go in the SVM list too: Intel's runtimes
        // take them wherever they take SVM pointers (what
        // `clSetKernelArgMemPointerINTEL` sets is the same argument).
        ArgValue::Pointer(p) => match usm {
            Usm::Svm | Usm::Intel(_) => {
                let arg_value = p.addr() as *const c_void;
                update.svm_args.push(MutableArg { arg_index, arg_size: 0, arg_value });
            }
            Usm::None => return Err(err!(UnsupportedFeature, "the device has no USM")),
        },
        ArgValue::MemObj(buffer) => {
            let mem: Box<[u8]> = (exec::kernel_mem(buffer)? as usize).to_ne_bytes().into();
            update.args.push(MutableArg { arg_index, arg_size: size_of::<cl_mem>(), arg_value: mem.as_ptr().cast() });
            values.push(mem);
        }
        ArgValue::Local(size) => {
            update.args.push(MutableArg { arg_index, arg_size: *size, arg_value: ptr::null() });
        }
    }
    Ok(())
}
