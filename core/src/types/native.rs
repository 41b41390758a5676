//! The native kernel ABI: kernels as Rust functions, run by the CPU adapter.
//!
//! A native kernel is called once per work-group with a [`WorkGroup`] that
//! describes the group and gives access to the arguments. The kernel loops
//! over the group's work-items itself ([`WorkGroup::items`]); a work-group
//! barrier is simply the end of one loop and the start of the next, and local
//! memory is private to the group for the whole call.
//!
//! Pointer arguments are raw: dereferencing them is the kernel's `unsafe`
//! business, which is why launching a kernel is `unsafe` in the API.

use std::borrow::Cow;
use std::fmt;

use bytemuck::AnyBitPattern;

/// A Rust kernel function.
pub type RustKernelFn = fn(&WorkGroup<'_>);

/// The group description a C kernel receives (`ur_rs_cpu_group_t` of
/// `adapter-cpu/include/ur_rs_cpu.h`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CGroup {
    /// Number of dimensions of the launch (1 to 3).
    pub work_dim: u32,
    /// This group's id per dimension.
    pub group_id: [usize; 3],
    /// Number of groups per dimension.
    pub num_groups: [usize; 3],
    /// Local (work-group) size per dimension.
    pub local_size: [usize; 3],
    /// Global size per dimension.
    pub global_size: [usize; 3],
    /// Global offset per dimension.
    pub global_offset: [usize; 3],
}

/// A C kernel entry point (`ur_rs_cpu_kernel_fn`): called once per
/// work-group with the group and one pointer per argument (to the pointer's
/// value for a global argument, to the bytes of a value, to the group's
/// buffer for local memory). A non-zero return fails the launch.
pub type CKernelFn = unsafe extern "C" fn(group: *const CGroup, args: *const *mut std::ffi::c_void) -> i32;

/// The code of a native kernel: a Rust function or a C entry point.
#[derive(Copy, Clone, Debug)]
pub enum NativeKernelFn {
    /// A Rust function.
    Rust(RustKernelFn),
    /// A C entry point from a kernel table.
    C(CKernelFn),
}

impl NativeKernelFn {
    /// Runs the kernel for one work-group. `Err(code)` when a C kernel
    /// returned a non-zero code; Rust kernels fail by panicking.
    ///
    /// # Safety
    /// A C entry point must be valid to call with this group's arguments, as
    /// its kernel table promised.
    #[inline]
    pub unsafe fn call(&self, group: &WorkGroup<'_>) -> std::result::Result<(), i32> {
        match self {
            NativeKernelFn::Rust(f) => {
                f(group);
                Ok(())
            }
            NativeKernelFn::C(f) => {
                let r = group.range;
                let c = CGroup {
                    work_dim: r.work_dim,
                    group_id: group.group_id,
                    num_groups: r.num_groups(),
                    local_size: r.local_size,
                    global_size: r.global_size,
                    global_offset: r.global_offset,
                };
                // Pointer arguments are passed by address, so they need a home.
                let pointers: smallvec::SmallVec<[*mut u8; 8]> = group
                    .args
                    .iter()
                    .map(|a| if let NativeArg::Pointer(p) = a { *p } else { std::ptr::null_mut() })
                    .collect();
                let args: smallvec::SmallVec<[*mut std::ffi::c_void; 8]> = group
                    .args
                    .iter()
                    .zip(&pointers)
                    .map(|(a, p)| match a {
                        NativeArg::Pointer(_) => std::ptr::from_ref(p).cast_mut().cast(),
                        NativeArg::Value(bytes) => bytes.as_ptr().cast_mut().cast(),
                        NativeArg::Local(p, _) => p.cast(),
                    })
                    .collect();
                // SAFETY: `f` is valid to call with this group's arguments, as its kernel table
                // promised (this function's `# Safety`); `c`, `args` and what they point to live
                // across the call.
                match unsafe { f(&c, args.as_ptr()) } {
                    0 => Ok(()),
                    code => Err(code),
                }
            }
        }
    }
}

/// A kernel function registered under a kernel name.
#[derive(Clone)]
pub struct NativeKernel {
    /// The name a program's signature declares.
    pub name: Cow<'static, str>,
    /// The function, called once per work-group.
    pub func: NativeKernelFn,
}

impl NativeKernel {
    /// Registers the Rust function `func` as kernel `name`.
    pub fn new(name: impl Into<Cow<'static, str>>, func: RustKernelFn) -> NativeKernel {
        NativeKernel { name: name.into(), func: NativeKernelFn::Rust(func) }
    }

    /// Registers the C entry point `func` as kernel `name`.
    pub fn c(name: impl Into<Cow<'static, str>>, func: CKernelFn) -> NativeKernel {
        NativeKernel { name: name.into(), func: NativeKernelFn::C(func) }
    }
}

impl fmt::Debug for NativeKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NativeKernel({})", self.name)
    }
}

/// One argument as a native kernel receives it.
#[derive(Copy, Clone, Debug)]
pub enum NativeArg<'a> {
    /// A global pointer (USM pointer or memory buffer), possibly null.
    Pointer(*mut u8),
    /// The bytes of a value argument.
    Value(&'a [u8]),
    /// This group's local memory for the argument: pointer and size in bytes.
    Local(*mut u8, usize),
}

/// The geometry of a launch, shared by all its work-groups.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NdRange {
    /// Number of dimensions in use (1 to 3); unused dimensions have size 1 and offset 0.
    pub work_dim: u32,
    /// Global size per dimension.
    pub global_size: [usize; 3],
    /// Local (work-group) size per dimension.
    pub local_size: [usize; 3],
    /// Global offset per dimension.
    pub global_offset: [usize; 3],
}

impl NdRange {
    /// Number of work-groups per dimension.
    pub fn num_groups(&self) -> [usize; 3] {
        let (g, l) = (&self.global_size, &self.local_size);
        [g[0] / l[0], g[1] / l[1], g[2] / l[2]]
    }

    /// Total number of work-groups.
    pub fn total_groups(&self) -> usize {
        let n = self.num_groups();
        n[0] * n[1] * n[2]
    }

    /// The 3D id of the work-group with linear index `linear` (dimension 0 fastest).
    pub fn group_id(&self, linear: usize) -> [usize; 3] {
        let n = self.num_groups();
        [linear % n[0], (linear / n[0]) % n[1], linear / (n[0] * n[1])]
    }
}

/// One work-group of a launch, as the kernel function sees it.
pub struct WorkGroup<'a> {
    range: &'a NdRange,
    group_id: [usize; 3],
    args: &'a [NativeArg<'a>],
}

impl<'a> WorkGroup<'a> {
    /// A work-group of `range` with the given id and arguments. Adapters build
    /// these; a test of a kernel function may too.
    pub fn new(range: &'a NdRange, group_id: [usize; 3], args: &'a [NativeArg<'a>]) -> WorkGroup<'a> {
        WorkGroup { range, group_id, args }
    }

    /// Number of dimensions of the launch.
    pub fn work_dim(&self) -> u32 {
        self.range.work_dim
    }

    /// This group's id in dimension `d`.
    pub fn group_id(&self, d: usize) -> usize {
        self.group_id[d]
    }

    /// Number of groups in dimension `d`.
    pub fn num_groups(&self, d: usize) -> usize {
        self.range.global_size[d] / self.range.local_size[d]
    }

    /// Local size in dimension `d`.
    pub fn local_range(&self, d: usize) -> usize {
        self.range.local_size[d]
    }

    /// Global size in dimension `d`.
    pub fn global_range(&self, d: usize) -> usize {
        self.range.global_size[d]
    }

    /// Global offset in dimension `d`.
    pub fn global_offset(&self, d: usize) -> usize {
        self.range.global_offset[d]
    }

    /// The work-items of this group, dimension 0 fastest.
    pub fn items(&self) -> impl Iterator<Item = WorkItem<'a>> + 'a {
        let l = self.range.local_size;
        let base = [0, 1, 2].map(|d| self.group_id[d] * l[d]);
        let (range, count) = (self.range, l[0] * l[1] * l[2]);
        (0..count).map(move |i| {
            let local = [i % l[0], (i / l[0]) % l[1], i / (l[0] * l[1])];
            WorkItem { local, global: [0, 1, 2].map(|d| base[d] + local[d]), range }
        })
    }

    /// Number of arguments.
    pub fn num_args(&self) -> usize {
        self.args.len()
    }

    /// Argument `index` as passed.
    pub fn arg(&self, index: usize) -> NativeArg<'a> {
        self.args[index]
    }

    /// Pointer argument `index`, typed. Panics (making the launch fail with an
    /// error) when the argument is not a pointer.
    pub fn ptr<T>(&self, index: usize) -> *mut T {
        match self.args[index] {
            NativeArg::Pointer(p) => p.cast(),
            other => panic!("kernel argument {index} is {other:?}, not a pointer"),
        }
    }

    /// Value argument `index`, read as `T`. Panics when the argument is not a
    /// value of `size_of::<T>()` bytes.
    pub fn value<T: AnyBitPattern>(&self, index: usize) -> T {
        match self.args[index] {
            NativeArg::Value(bytes) if bytes.len() == size_of::<T>() => bytemuck::pod_read_unaligned(bytes),
            other => panic!("kernel argument {index} is {other:?}, not a {}-byte value", size_of::<T>()),
        }
    }

    /// Local-memory argument `index`: this group's pointer and its length in
    /// `T`s. Panics when the argument is not local memory.
    pub fn local<T>(&self, index: usize) -> (*mut T, usize) {
        match self.args[index] {
            NativeArg::Local(p, size) => (p.cast(), size / size_of::<T>().max(1)),
            other => panic!("kernel argument {index} is {other:?}, not local memory"),
        }
    }
}

/// One work-item of a work-group.
#[derive(Copy, Clone, Debug)]
pub struct WorkItem<'a> {
    local: [usize; 3],
    global: [usize; 3],
    range: &'a NdRange,
}

impl WorkItem<'_> {
    fn range(&self) -> &NdRange {
        self.range
    }

    /// Global id in dimension `d`, offset included (as OpenCL's `get_global_id`).
    pub fn global_id(&self, d: usize) -> usize {
        self.global[d] + self.range().global_offset[d]
    }

    /// Local id in dimension `d`.
    pub fn local_id(&self, d: usize) -> usize {
        self.local[d]
    }

    /// Linear global id without offset, dimension 0 fastest: the usual index
    /// into a buffer of `global_size` elements.
    pub fn global_linear_id(&self) -> usize {
        let g = self.range().global_size;
        self.global[0] + g[0] * (self.global[1] + g[1] * self.global[2])
    }

    /// Linear local id, dimension 0 fastest.
    pub fn local_linear_id(&self) -> usize {
        let l = self.range().local_size;
        self.local[0] + l[0] * (self.local[1] + l[1] * self.local[2])
    }
}
