//! The kernel handle and the launch arguments of a kernel (`NdRangeArgs`,
//! `launch_args`): read from the C call and checked against its kernel.

use std::sync::Arc;

use cmdbuf_core::{KernelArg, KernelLaunch, UsmPtr, ensure, err};
use smallvec::SmallVec;

use crate::boundary::conv::{value_bytes, work_sizes};
use crate::entry::AbiResult;
use crate::handle::Handle;
use crate::info::optional_list;
use crate::objects::mem::Mem;
use crate::objects::program::ProgramRef;
use crate::sys::*;

/// A kernel and the program handle it came from.
pub struct Kernel {
    pub(crate) kernel: cmdbuf_core::Kernel,
    pub(crate) program: ProgramRef,
}

impl Kernel {
    /// A kernel adopted from a native handle, of `program`.
    pub(crate) fn adopted(kernel: cmdbuf_core::Kernel, program: ProgramRef) -> Kernel {
        Kernel { kernel, program }
    }

    /// The cmdbuf-core kernel.
    pub(crate) fn core(&self) -> &cmdbuf_core::Kernel {
        &self.kernel
    }
}

/// Keeps a kernel handle alive for objects that refer to it.
#[allow(dead_code)]
pub(crate) type KernelRef = Arc<Handle<Kernel>>;

/// An ND-range as a launch call gives it.
pub(crate) struct NdRangeArgs<'a> {
    pub(crate) global: &'a [usize],
    pub(crate) offset: Option<&'a [usize]>,
    pub(crate) local: Option<&'a [usize]>,
}

impl<'a> NdRangeArgs<'a> {
    /// The global size (required), offset and local size (optional).
    ///
    /// # Safety
    /// Each pointer is null or holds `work_dim` sizes.
    pub(crate) unsafe fn new(
        work_dim: u32,
        offset: *const usize,
        global: *const usize,
        local: *const usize,
    ) -> AbiResult<NdRangeArgs<'a>> {
        // SAFETY: each pointer is null or holds `work_dim` sizes (this function's `# Safety`), all `work_sizes` needs.
        let (global, offset, local) = unsafe {
            (
                work_sizes(work_dim, global, "pGlobalWorkSize")?,
                work_sizes(work_dim, offset, "pGlobalWorkOffset")?,
                work_sizes(work_dim, local, "pLocalWorkSize")?,
            )
        };
        let global = global.ok_or_else(|| err!(InvalidNullPointer, "pGlobalWorkSize is null"))?;
        Ok(NdRangeArgs { global, offset, local })
    }

    /// The cmdbuf-core launch of `kernel` over this range with `args`.
    pub(crate) fn launch<'k>(&self, kernel: &'k cmdbuf_core::Kernel, args: &'k [KernelArg<'k>]) -> KernelLaunch<'k>
    where
        'a: 'k,
    {
        let mut launch = KernelLaunch::new(kernel, self.global, args);
        if let Some(offset) = self.offset {
            launch = launch.global_offset(offset);
        }
        if let Some(local) = self.local {
            launch = launch.local_size(local);
        }
        launch
    }
}

/// Translates UR's launch arguments (any order, each naming its index; a
/// repeated index takes the last) into one argument per parameter of
/// `kernel`, in order. A parameter left without an argument is
/// `INVALID_KERNEL_ARGUMENT_INDEX`; cmdbuf-core then checks kinds and sizes.
///
/// # Safety
/// `args` is null or holds `count` properties whose values are valid for
/// their type (UR's contract for the launch calls).
pub(crate) unsafe fn launch_args<'a>(
    kernel: &cmdbuf_core::Kernel,
    count: u32,
    args: *const ur_exp_kernel_arg_properties_t,
) -> AbiResult<LaunchArgs<'a>> {
    // SAFETY: `args` is null or holds `count` properties (this function's `# Safety`), all `optional_list` needs.
    let list = unsafe { optional_list(args, count, "pArgs")? };
    // The common form, each argument once in index order, goes straight
    // into the list without the slot per index, in a plain loop: collecting
    // an iterator of results cost twice as many instructions.
    if list.len() == kernel.num_args() && list.iter().enumerate().all(|(i, prop)| prop.index as usize == i) {
        let mut out = LaunchArgs::new();
        for prop in list {
            check_stype(prop)?;
            // SAFETY: `prop` is one of the `count` properties whose values are valid for their type (this
            // function's `# Safety`), so the member of `prop.value` that `prop.type_` names is valid, as
            // `one_arg` requires.
            out.push(unsafe { one_arg(prop.type_, prop.size, &prop.value)? });
        }
        return Ok(out);
    }
    let mut by_index: SmallVec<[Option<KernelArg<'a>>; INLINE_ARGS]> = smallvec::smallvec![None; kernel.num_args()];
    for prop in list {
        check_stype(prop)?;
        let index = prop.index as usize;
        ensure!(
            index < by_index.len(),
            InvalidKernelArgumentIndex,
            "argument {index} of kernel `{}`, which takes {}",
            kernel.name(),
            by_index.len()
        );
        // SAFETY: as above, `prop` is one of the `count` properties valid for their type (this function's
        // `# Safety`), all `one_arg` needs.
        by_index[index] = Some(unsafe { one_arg(prop.type_, prop.size, &prop.value)? });
    }
    by_index
        .into_iter()
        .enumerate()
        .map(|(i, arg)| {
            arg.ok_or_else(|| {
                err!(InvalidKernelArgumentIndex, "argument {i} of kernel `{}` is not given", kernel.name())
            })
        })
        .collect()
}

/// `InvalidValue` for launch-argument properties of another structure type.
fn check_stype(prop: &ur_exp_kernel_arg_properties_t) -> AbiResult {
    ensure!(
        prop.stype == ur_structure_type_t::UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES,
        InvalidValue,
        "kernel argument properties with stype {}",
        prop.stype.0
    );
    Ok(())
}

/// Kernels with up to this many arguments are launched through the ABI
/// without a heap allocation for them (two per launch before, on the eager
/// path `launch_args` serves).
const INLINE_ARGS: usize = 8;

/// A launch's arguments in index order.
pub(crate) type LaunchArgs<'a> = SmallVec<[KernelArg<'a>; INLINE_ARGS]>;

/// One argument from its type, size and value.
///
/// # Safety
/// The member of `value` that `kind` names is valid: bytes readable for
/// `size` (values), a USM pointer (pointers), a memory handle or null.
pub(crate) unsafe fn one_arg<'a>(
    kind: ur_exp_kernel_arg_type_t,
    size: usize,
    value: &ur_exp_kernel_arg_value_t,
) -> AbiResult<KernelArg<'a>> {
    use ur_exp_kernel_arg_type_t as T;
    Ok(match kind {
        T::UR_EXP_KERNEL_ARG_TYPE_VALUE => {
            // SAFETY: `value` is the member the type names.
            let bytes = unsafe { value.value };
            // SAFETY: for a value argument `value.value` is the valid member, readable for `size` bytes (this
            // function's `# Safety`), all `value_bytes` needs.
            KernelArg::Value(unsafe { value_bytes(bytes, size)? })
        }
        // SAFETY: `pointer` is the member the type names.
        T::UR_EXP_KERNEL_ARG_TYPE_POINTER => KernelArg::Pointer(UsmPtr::from_addr(unsafe { value.pointer } as u64)),
        T::UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ => {
            // SAFETY: `memObjTuple` is the member the type names.
            let mem = unsafe { value.memObjTuple.hMem };
            if mem.is_null() {
                // OpenCL lets a null buffer stand for a null global pointer.
                KernelArg::Pointer(UsmPtr::from_addr(0))
            } else {
                // SAFETY: a memory handle the caller holds, per the contract.
                let mem: &'a Handle<Mem> = unsafe { Handle::<Mem>::get(mem)? };
                KernelArg::MemObj(mem.value.core())
            }
        }
        T::UR_EXP_KERNEL_ARG_TYPE_LOCAL => KernelArg::Local(size),
        T::UR_EXP_KERNEL_ARG_TYPE_SAMPLER => {
            return Err(err!(UnsupportedFeature, "sampler arguments: cmdbuf has no images (IMAGE_SUPPORT is false)"));
        }
        other => return Err(err!(InvalidEnumeration, "kernel argument type {}", other.0)),
    })
}
