//! Validating a launch for a context: the front end's half of `launch`,
//! kept apart so that the adapter interface, which hands [`KernelCommand`]s
//! to adapters, imports nothing of the front end.

use smallvec::SmallVec;

use crate::context::Context;
use crate::launch::{
    ArgValue, KernelArg, KernelCommand, KernelLaunch, LocalSizeOrigin, check_dims, check_local_memory,
};
use crate::launch::{resolve_range, to_3d};
use crate::objects::Kernel;
use crate::types::device::DeviceInfo;
use crate::types::error::Result;
use crate::types::program::{ArgKind, SourceForm};
use crate::{ensure, err};

/// Resolves and validates an application's arguments against `kernel`'s signature.
#[inline]
pub(crate) fn resolve_args(context: &Context, kernel: &Kernel, args: &[KernelArg<'_>]) -> Result<Vec<ArgValue>> {
    let kinds = &kernel.signature().args;
    ensure!(
        args.len() == kinds.len(),
        InvalidKernelArgumentIndex,
        "kernel `{}` takes {} arguments, {} given",
        kernel.name(),
        kinds.len(),
        args.len()
    );
    let mut out = Vec::with_capacity(args.len());
    for (index, (kind, arg)) in kinds.iter().zip(args).enumerate() {
        out.push(resolve_arg(context, kernel, index, *kind, arg)?);
    }
    check_local_memory(context.device().info(), kernel, &out)?;
    Ok(out)
}

/// Resolves one argument at `index` of `kernel`: the common forms (a
/// pointer where a global pointer is declared, a value of the declared
/// size) inline, the rest by [`resolve_other_arg`]. Called for every
/// argument of every launch, where a general match of both kinds was about
/// 60 instructions per argument.
#[inline]
pub(crate) fn resolve_arg(
    context: &Context,
    kernel: &Kernel,
    index: usize,
    kind: ArgKind,
    arg: &KernelArg<'_>,
) -> Result<ArgValue> {
    match (kind, arg) {
        (ArgKind::Global | ArgKind::Unknown, KernelArg::Pointer(p)) => Ok(ArgValue::Pointer(*p)),
        (ArgKind::Value(size), KernelArg::Value(bytes)) if bytes.len() == size => {
            Ok(ArgValue::Value(SmallVec::from_slice(bytes)))
        }
        _ => resolve_other_arg(context, kernel, index, kind, arg),
    }
}

/// [`resolve_arg`] of every form, with the errors.
#[inline(never)]
fn resolve_other_arg(
    context: &Context,
    kernel: &Kernel,
    index: usize,
    kind: ArgKind,
    arg: &KernelArg<'_>,
) -> Result<ArgValue> {
    let name = kernel.name();
    // A kind the driver did not tell is the launch's own: its value's size
    // or its memory kind; the driver checks it when the argument is set.
    let kind = match (kind, arg) {
        (ArgKind::Unknown, KernelArg::Pointer(_) | KernelArg::MemObj(_)) => ArgKind::Global,
        (ArgKind::Unknown, KernelArg::Local(_)) => ArgKind::Local,
        (ArgKind::Unknown | ArgKind::AnyValue, KernelArg::Value(bytes)) => {
            ensure!(!bytes.is_empty(), InvalidKernelArgumentSize, "argument {index} of `{name}` is an empty value");
            ArgKind::Value(bytes.len())
        }
        (kind, _) => kind,
    };
    Ok(match (kind, arg) {
        (ArgKind::Global, KernelArg::Pointer(p)) => ArgValue::Pointer(*p),
        (ArgKind::Global, KernelArg::MemObj(b)) => {
            b.check_context(context)?;
            ArgValue::MemObj((*b).clone())
        }
        (ArgKind::Value(size), KernelArg::Value(bytes)) => {
            ensure!(
                bytes.len() == size,
                InvalidKernelArgumentSize,
                "argument {index} of `{name}` is a {size}-byte value, {} bytes given",
                bytes.len()
            );
            ArgValue::Value(SmallVec::from_slice(bytes))
        }
        // Code read from PTX or from a Vulkan argument block often cannot
        // say whether 8 bytes are a pointer or an integer.
        (ArgKind::Value(8), KernelArg::Pointer(p)) => ArgValue::Value(SmallVec::from_slice(&p.addr().to_le_bytes())),
        // For the same reason a buffer there passes its device address, in
        // the forms whose pointers are plain 64-bit addresses (OpenCL's
        // buffers are objects, never an integer's bits).
        (ArgKind::Value(8), KernelArg::MemObj(b))
            if matches!(kernel.program().form(), SourceForm::Ptx | SourceForm::CudaC | SourceForm::SpirV) =>
        {
            b.check_context(context)?;
            ArgValue::MemObj((*b).clone())
        }
        (ArgKind::Local, KernelArg::Local(size)) => {
            ensure!(*size != 0, InvalidKernelArgumentSize, "local-memory argument {index} of `{name}` has size 0");
            ArgValue::Local(*size)
        }
        // A plain CUDA kernel in DPC++'s form takes a local accessor as its
        // byte offset into the block's dynamic shared memory, a 32-bit
        // integer parameter in its PTX (docs/cuda.md, "Plain kernels from
        // PTX"); a float or a wider value is no offset.
        (ArgKind::Value(4), KernelArg::Local(size)) if kernel.signature().local_offset_args.contains(&index) => {
            ensure!(*size != 0, InvalidKernelArgumentSize, "local-memory argument {index} of `{name}` has size 0");
            ArgValue::Local(*size)
        }
        (kind, arg) => {
            return Err(err!(InvalidValue, "argument {index} of `{name}` is declared {kind:?}, given {arg:?}"));
        }
    })
}

impl KernelLaunch<'_> {
    /// Validates the launch for `context` (kernel of that context, work
    /// dimensions, arguments against the kernel's signature, sizes against
    /// the device's and kernel's limits) and gives the command queues and
    /// command buffers run, with how its local size was decided.
    pub fn resolve(&self, context: &Context) -> Result<(KernelCommand, LocalSizeOrigin)> {
        let kernel = self.kernel;
        check_kernel_context(context, kernel)?;
        check_sub_group_size(context.device().info(), kernel)?;
        let work_dim = check_dims(
            self.global_size.len(),
            &[("local size", self.local_size), ("global offset", self.global_offset)],
        )?;
        let args = resolve_args(context, kernel, self.args)?;
        let global = to_3d(self.global_size, 1);
        let offset = self.global_offset.map_or([0; 3], |o| to_3d(o, 0));
        let local = self.local_size.map(|l| to_3d(l, 1));
        let (range, origin) = resolve_range(context.device().info(), kernel, work_dim, global, offset, local)?;
        Ok((KernelCommand { kernel: kernel.clone(), range, args }, origin))
    }
}

impl KernelCommand {
    /// A launch of `kernel` with `args` and a geometry in 3D form (`work_dim`
    /// used dimensions; `local` `None` lets the implementation choose),
    /// validated for `context` as [`KernelLaunch::resolve`] validates: for
    /// launches kept in resolved form ([`ArgValue::as_arg`] gives their
    /// arguments back) and launched again with other arguments or another range.
    pub fn new(
        context: &Context,
        kernel: &Kernel,
        work_dim: u32,
        global: [usize; 3],
        offset: [usize; 3],
        local: Option<[usize; 3]>,
        args: &[KernelArg<'_>],
    ) -> Result<(KernelCommand, LocalSizeOrigin)> {
        check_kernel_context(context, kernel)?;
        check_sub_group_size(context.device().info(), kernel)?;
        let args = resolve_args(context, kernel, args)?;
        let (range, origin) = resolve_range(context.device().info(), kernel, work_dim, global, offset, local)?;
        Ok((KernelCommand { kernel: kernel.clone(), range, args }, origin))
    }
}

/// `UnsupportedFeature` for a kernel that requires a sub-group size the
/// device does not run: the size is a condition of the kernel's code (SYCL's
/// `kernel_not_supported`), not a hint. Creating and querying such a kernel
/// stays allowed.
#[inline]
fn check_sub_group_size(device: &DeviceInfo, kernel: &Kernel) -> Result<()> {
    if let Some(size) = kernel.signature().reqd_sub_group_size {
        ensure!(
            device.sub_groups.sizes.contains(&size),
            UnsupportedFeature,
            "kernel `{}` requires sub-groups of {size} work-items; the device runs sizes {:?}",
            kernel.name(),
            device.sub_groups.sizes
        );
    }
    Ok(())
}

/// `InvalidKernel` for a kernel of another context.
fn check_kernel_context(context: &Context, kernel: &Kernel) -> Result<()> {
    ensure!(
        kernel.program().context() == context,
        InvalidKernel,
        "kernel `{}` belongs to another context",
        kernel.name()
    );
    Ok(())
}
