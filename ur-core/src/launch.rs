//! Kernel launches: explicit arguments, ND-ranges, and their validation.
//!
//! Arguments are passed with every launch (the 2026 UR
//! `AppendKernelLaunchWithArgsExp` shape); kernels hold no argument state.

use bytemuck::NoUninit;
use smallvec::SmallVec;

use crate::context::Context;
use crate::device::DeviceInfo;
use crate::error::Result;
use crate::memory::{MemBuffer, UsmPtr};
use crate::native::NdRange;
use crate::program::{ArgKind, Kernel, SourceForm};
use crate::{ensure, err};

/// One kernel argument as the application passes it.
#[derive(Copy, Clone, Debug)]
pub enum KernelArg<'a> {
    /// The bytes of a value argument.
    Value(&'a [u8]),
    /// A USM pointer (null allowed) for a [`ArgKind::Global`] argument.
    Pointer(UsmPtr),
    /// A memory buffer for a [`ArgKind::Global`] argument.
    MemObj(&'a MemBuffer),
    /// The size in bytes of a [`ArgKind::Local`] argument.
    Local(usize),
}

impl<'a> KernelArg<'a> {
    /// A value argument holding the bytes of `value`.
    ///
    /// ```
    /// use ur_core::KernelArg;
    /// let a = 2.0f32;
    /// assert!(matches!(KernelArg::value(&a), KernelArg::Value(b) if b.len() == 4));
    /// ```
    pub fn value<T: NoUninit>(value: &'a T) -> KernelArg<'a> {
        KernelArg::Value(bytemuck::bytes_of(value))
    }
}

/// One kernel argument as adapters receive it: validated against the
/// kernel's signature, owning what it refers to.
#[derive(Clone, Debug)]
pub enum ArgValue {
    /// Exactly the declared number of bytes.
    Value(SmallVec<[u8; 16]>),
    /// A USM pointer, possibly null.
    Pointer(UsmPtr),
    /// A memory buffer of the launch's context.
    MemObj(MemBuffer),
    /// Local memory of this many bytes (non-zero).
    Local(usize),
}

/// A kernel launch as the application describes it.
///
/// ```
/// # use ur_core::{KernelArg, KernelLaunch, UsmPtr};
/// # fn demo(kernel: &ur_core::Kernel, out: UsmPtr) {
/// let n = 1024u32;
/// let args = [KernelArg::Pointer(out), KernelArg::value(&n)];
/// let launch = KernelLaunch::new(kernel, &[1024], &args).local_size(&[64]);
/// # let _ = launch;
/// # }
/// ```
#[derive(Copy, Clone, Debug)]
pub struct KernelLaunch<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Global size; its length (1 to 3) is the work dimension.
    pub global_size: &'a [usize],
    /// Local size, or `None` for one chosen by the implementation.
    pub local_size: Option<&'a [usize]>,
    /// Global offset, or `None` for zeros.
    pub global_offset: Option<&'a [usize]>,
    /// One argument per declared argument, in order.
    pub args: &'a [KernelArg<'a>],
}

impl<'a> KernelLaunch<'a> {
    /// A launch of `kernel` over `global_size` with `args`.
    pub fn new(kernel: &'a Kernel, global_size: &'a [usize], args: &'a [KernelArg<'a>]) -> KernelLaunch<'a> {
        KernelLaunch { kernel, global_size, local_size: None, global_offset: None, args }
    }

    /// Sets the local size.
    pub fn local_size(mut self, local_size: &'a [usize]) -> KernelLaunch<'a> {
        self.local_size = Some(local_size);
        self
    }

    /// Sets the global offset.
    pub fn global_offset(mut self, global_offset: &'a [usize]) -> KernelLaunch<'a> {
        self.global_offset = Some(global_offset);
        self
    }
}

/// A validated kernel launch, as adapters execute it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct KernelCommand {
    /// The kernel (of the command's context).
    pub kernel: Kernel,
    /// Geometry: every global size divisible by its local size, the local
    /// sizes within the device's and kernel's limits. A global size of zero
    /// in any dimension makes the launch empty.
    pub range: NdRange,
    /// Exactly one argument per declared argument, each of its declared kind.
    pub args: Vec<ArgValue>,
}

/// Converts sizes given as a slice of 1 to 3 entries into the 3D form,
/// padding with `fill`.
pub fn to_3d(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[..values.len()].copy_from_slice(values);
    out
}

/// Checks a work dimension (1 to 3, else `InvalidWorkDimension`) and that
/// each named size list has that many entries; gives the dimension.
pub fn check_dims(work_dim: usize, lists: &[(&str, Option<&[usize]>)]) -> Result<u32> {
    ensure!((1..=3).contains(&work_dim), InvalidWorkDimension, "work dimension {work_dim} is not 1, 2 or 3");
    for (name, list) in lists {
        if let Some(list) = list {
            ensure!(
                list.len() == work_dim,
                InvalidWorkDimension,
                "{name} has {} entries for a {work_dim}-dimensional launch",
                list.len()
            );
        }
    }
    Ok(work_dim as u32)
}

/// Resolves and validates an application's arguments against `kernel`'s signature.
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

/// Checks the local-memory arguments together fit the device's local memory
/// (`OutOfResources` otherwise).
pub fn check_local_memory(info: &DeviceInfo, kernel: &Kernel, args: &[ArgValue]) -> Result<()> {
    let total: usize = args.iter().map(|a| if let ArgValue::Local(n) = a { *n } else { 0 }).sum();
    ensure!(
        total as u64 <= info.local_mem_size,
        OutOfResources,
        "`{}` asks for {total} bytes of local memory; the device has {}",
        kernel.name(),
        info.local_mem_size
    );
    Ok(())
}

/// Resolves one argument at `index` of `kernel`.
pub(crate) fn resolve_arg(
    context: &Context,
    kernel: &Kernel,
    index: usize,
    kind: ArgKind,
    arg: &KernelArg<'_>,
) -> Result<ArgValue> {
    let name = kernel.name();
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
        (kind, arg) => {
            return Err(err!(InvalidValue, "argument {index} of `{name}` is declared {kind:?}, given {arg:?}"));
        }
    })
}

/// How the local size of a launch was decided: command-buffer updates that
/// change the global size choose the local size again only where the
/// implementation chose it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LocalSizeOrigin {
    /// The launch gave its local size.
    User,
    /// The implementation chose it.
    Implementation,
}

impl KernelLaunch<'_> {
    /// Validates the launch for `context` (kernel of that context, work
    /// dimensions, arguments against the kernel's signature, sizes against
    /// the device's and kernel's limits) and gives the command queues and
    /// command buffers run, with how its local size was decided.
    pub fn resolve(&self, context: &Context) -> Result<(KernelCommand, LocalSizeOrigin)> {
        let kernel = self.kernel;
        check_kernel_context(context, kernel)?;
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
        let args = resolve_args(context, kernel, args)?;
        let (range, origin) = resolve_range(context.device().info(), kernel, work_dim, global, offset, local)?;
        Ok((KernelCommand { kernel: kernel.clone(), range, args }, origin))
    }
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

impl ArgValue {
    /// The argument as an application gives it.
    pub fn as_arg(&self) -> KernelArg<'_> {
        match self {
            ArgValue::Value(bytes) => KernelArg::Value(bytes),
            ArgValue::Pointer(p) => KernelArg::Pointer(*p),
            ArgValue::MemObj(b) => KernelArg::MemObj(b),
            ArgValue::Local(n) => KernelArg::Local(*n),
        }
    }
}

/// Validates geometry and builds the ND-range, choosing the local size when
/// none is given.
pub(crate) fn resolve_range(
    info: &DeviceInfo,
    kernel: &Kernel,
    work_dim: u32,
    global: [usize; 3],
    offset: [usize; 3],
    local: Option<[usize; 3]>,
) -> Result<(NdRange, LocalSizeOrigin)> {
    for d in 0..3 {
        ensure!(
            global[d].checked_add(offset[d]).is_some(),
            InvalidValue,
            "global size {} plus offset {} overflows in dimension {d}",
            global[d],
            offset[d]
        );
    }
    let (local, origin) = match local {
        Some(local) => {
            let max = kernel.max_work_group_size();
            for d in 0..work_dim as usize {
                ensure!(local[d] != 0, InvalidWorkGroupSize, "local size is 0 in dimension {d}");
                ensure!(
                    local[d] <= info.max_work_item_sizes[d],
                    InvalidWorkGroupSize,
                    "local size {} exceeds the device's {} in dimension {d}",
                    local[d],
                    info.max_work_item_sizes[d]
                );
                ensure!(
                    global[d].is_multiple_of(local[d]),
                    InvalidWorkGroupSize,
                    "global size {} is not a multiple of local size {} in dimension {d}",
                    global[d],
                    local[d]
                );
            }
            let product: usize = local.iter().product();
            ensure!(
                product <= max,
                InvalidWorkGroupSize,
                "work-group of {product} items exceeds the {max} that `{}` can run",
                kernel.name()
            );
            (local, LocalSizeOrigin::User)
        }
        None => (
            choose_local_size(global, work_dim, kernel.max_work_group_size(), info.max_work_item_sizes),
            LocalSizeOrigin::Implementation,
        ),
    };
    if let Some(required) = kernel.compile_work_group_size() {
        return resolve_required(kernel, work_dim, global, offset, local, origin, required);
    }
    Ok((NdRange { work_dim, global_size: global, local_size: local, global_offset: offset }, origin))
}

/// The geometry of a launch of a kernel that requires work-group size
/// `required`: the application's local size must be it, and the
/// implementation picks it.
fn resolve_required(
    kernel: &Kernel,
    work_dim: u32,
    global: [usize; 3],
    offset: [usize; 3],
    local: [usize; 3],
    origin: LocalSizeOrigin,
    required: [usize; 3],
) -> Result<(NdRange, LocalSizeOrigin)> {
    let name = kernel.name();
    if origin == LocalSizeOrigin::User {
        ensure!(
            local == required,
            InvalidWorkGroupSize,
            "`{name}` requires work-group size {required:?}; the launch gives {local:?}"
        );
    }
    let product = required.iter().try_fold(1usize, |p, r| p.checked_mul(*r)).unwrap_or(usize::MAX);
    ensure!(
        product != 0 && product <= kernel.max_work_group_size(),
        InvalidWorkGroupSize,
        "`{name}` requires work-group size {required:?}, more than the {} work-items it can run",
        kernel.max_work_group_size()
    );
    for d in 0..3 {
        ensure!(
            d < work_dim as usize || required[d] == 1,
            InvalidWorkGroupSize,
            "`{name}` requires work-group size {required:?}, more than the launch's {work_dim} dimensions"
        );
        ensure!(
            global[d].is_multiple_of(required[d]),
            InvalidWorkGroupSize,
            "global size {} is not a multiple of the required work-group size {} of `{name}` in dimension {d}",
            global[d],
            required[d]
        );
    }
    Ok((NdRange { work_dim, global_size: global, local_size: required, global_offset: offset }, origin))
}

/// The local size the implementation picks when the application gives none:
/// in each dimension, from the first, the largest divisor of the global size
/// that keeps the work-group within the limits. Empty dimensions get 1.
pub fn choose_local_size(global: [usize; 3], work_dim: u32, max_group: usize, max_items: [usize; 3]) -> [usize; 3] {
    let mut local = [1; 3];
    let mut budget = max_group.max(1);
    for d in 0..work_dim as usize {
        let cap = budget.min(max_items[d]).min(global[d]).max(1);
        let best = (1..=cap).rev().find(|l| global[d].is_multiple_of(*l)).unwrap_or(1);
        local[d] = best;
        budget /= best;
    }
    local
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_local_size_divides_and_fits() {
        assert_eq!(choose_local_size([1024, 1, 1], 1, 256, [256; 3]), [256, 1, 1]);
        assert_eq!(choose_local_size([1000, 1, 1], 1, 256, [256; 3]), [250, 1, 1]);
        assert_eq!(choose_local_size([8, 8, 8], 3, 64, [64; 3]), [8, 8, 1]);
        assert_eq!(choose_local_size([7, 0, 1], 2, 64, [64; 3]), [7, 1, 1]);
        assert_eq!(choose_local_size([13, 1, 1], 1, 4, [4; 3]), [1, 1, 1]);
    }

    #[test]
    fn to_3d_pads() {
        assert_eq!(to_3d(&[5], 1), [5, 1, 1]);
        assert_eq!(to_3d(&[5, 6, 7], 0), [5, 6, 7]);
    }
}
