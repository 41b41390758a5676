//! Kernel launches: explicit arguments, ND-ranges, and their validation.
//!
//! Arguments are passed with every launch (the 2026 UR
//! `AppendKernelLaunchWithArgsExp` shape); kernels hold no argument state.

use bytemuck::NoUninit;
use smallvec::SmallVec;

use crate::ensure;
use crate::operands::{Kernel, MemBuffer};
use crate::types::device::DeviceInfo;
use crate::types::error::Result;
use crate::types::memory::UsmPtr;
use crate::types::native::NdRange;

/// One kernel argument as the application passes it.
#[derive(Copy, Clone, Debug)]
pub enum KernelArg<'a> {
    /// The bytes of a value argument.
    Value(&'a [u8]),
    /// A USM pointer (null allowed) for a [`ArgKind::Global`](crate::ArgKind::Global) argument.
    Pointer(UsmPtr),
    /// A memory buffer for a [`ArgKind::Global`](crate::ArgKind::Global) argument.
    MemObj(&'a MemBuffer),
    /// The size in bytes of a [`ArgKind::Local`](crate::ArgKind::Local) argument.
    Local(usize),
}

impl<'a> KernelArg<'a> {
    /// A value argument holding the bytes of `value`.
    ///
    /// ```
    /// use cmdbuf::KernelArg;
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
/// # use cmdbuf::{KernelArg, KernelLaunch, UsmPtr};
/// # fn demo(kernel: &cmdbuf::Kernel, out: UsmPtr) {
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
#[inline]
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
