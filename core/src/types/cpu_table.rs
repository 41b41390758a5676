//! The CPU adapter's kernel table: C kernels given as a "binary".
//!
//! `urProgramCreateWithBinary` on the CPU adapter takes the bytes of a
//! `ur_rs_cpu_table_t` (adapter-cpu/include/ur_rs_cpu.h): a magic number, a
//! version, and a pointer to an array of kernel descriptions, each with the
//! kernel's name, its C entry point and its arguments' kinds and sizes. The
//! table and everything it points to live in the application's process, so
//! the bytes are only meaningful there.

use std::ffi::{CStr, c_char};

use crate::types::error::Result;
use crate::types::native::{CKernelFn, NativeKernel};
use crate::types::program::{ArgKind, KernelSignature};
use crate::{ensure, err};

/// `UR_RS_CPU_MAGIC`: the table's first four bytes, in native byte order.
pub const MAGIC: u32 = 0x5552_4350;
/// `UR_RS_CPU_VERSION`: the layout described here.
pub const VERSION: u32 = 1;
/// `UR_RS_CPU_ARG_GLOBAL`.
pub const ARG_GLOBAL: u32 = 0;
/// `UR_RS_CPU_ARG_VALUE`.
pub const ARG_VALUE: u32 = 1;
/// `UR_RS_CPU_ARG_LOCAL`.
pub const ARG_LOCAL: u32 = 2;
/// The most kernels, and arguments per kernel, a table may declare: a bound
/// against reading far through a corrupt pointer.
const MAX_ENTRIES: u32 = 1 << 16;

/// `ur_rs_cpu_arg_t`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct CArg {
    /// `ARG_GLOBAL`, `ARG_VALUE` or `ARG_LOCAL`.
    pub kind: u32,
    /// Bytes of a value argument; 0 otherwise.
    pub size: u32,
}

/// `ur_rs_cpu_kernel_t`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct CKernel {
    /// NUL-terminated UTF-8 name.
    pub name: *const c_char,
    /// The entry point.
    pub entry: Option<CKernelFn>,
    /// Number of arguments.
    pub num_args: u32,
    /// Zero.
    pub reserved: u32,
    /// `num_args` argument descriptions (may be null when there are none).
    pub args: *const CArg,
    /// The required work-group size, or zeros for none.
    pub reqd_work_group_size: [usize; 3],
}

/// `ur_rs_cpu_table_t`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct CTable {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`VERSION`].
    pub version: u32,
    /// Number of kernels.
    pub num_kernels: u32,
    /// Zero.
    pub reserved: u32,
    /// `num_kernels` kernel descriptions.
    pub kernels: *const CKernel,
}

/// Whether `bytes` start with the table's magic number.
pub fn is_table(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) == MAGIC
}

/// Reads the table whose bytes are `bytes`: each kernel's signature and entry point.
///
/// # Safety
/// `bytes` are those of a `CTable` whose pointers are valid as its header
/// describes (kernels, names, argument arrays), and whose entry points
/// follow the C kernel ABI for the declared arguments.
pub unsafe fn read(bytes: &[u8]) -> Result<Vec<(KernelSignature, NativeKernel)>> {
    ensure!(
        bytes.len() == size_of::<CTable>(),
        InvalidBinary,
        "a CPU kernel table is {} bytes (ur_rs_cpu_table_t), {} given",
        size_of::<CTable>(),
        bytes.len()
    );
    // SAFETY: the length matches and the read is unaligned; every bit
    // pattern is a valid CTable (integers and a raw pointer).
    let table: CTable = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
    ensure!(table.magic == MAGIC, InvalidBinary, "not a CPU kernel table (magic {:#010x})", table.magic);
    ensure!(
        table.version == VERSION,
        InvalidBinary,
        "CPU kernel table version {} (this adapter reads version {VERSION})",
        table.version
    );
    ensure!(
        table.num_kernels > 0 && table.num_kernels <= MAX_ENTRIES && !table.kernels.is_null(),
        InvalidBinary,
        "the CPU kernel table declares {} kernels at {:?}",
        table.num_kernels,
        table.kernels
    );
    // SAFETY: the caller guarantees `kernels` points to `num_kernels` entries.
    let kernels = unsafe { std::slice::from_raw_parts(table.kernels, table.num_kernels as usize) };
    let mut out: Vec<(KernelSignature, NativeKernel)> = Vec::with_capacity(kernels.len());
    for (i, k) in kernels.iter().enumerate() {
        ensure!(!k.name.is_null(), InvalidBinary, "kernel {i} of the CPU kernel table has no name");
        // SAFETY: the caller guarantees names are NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(k.name) }
            .to_str()
            .map_err(|_| err!(InvalidBinary, "the name of kernel {i} of the CPU kernel table is not UTF-8"))?
            .to_string();
        let entry = k.entry.ok_or_else(|| err!(InvalidBinary, "kernel `{name}` has no entry point"))?;
        ensure!(
            k.num_args <= MAX_ENTRIES && (k.num_args == 0 || !k.args.is_null()),
            InvalidBinary,
            "kernel `{name}` declares {} arguments at {:?}",
            k.num_args,
            k.args
        );
        let descs = if k.num_args == 0 {
            &[][..]
        } else {
            // SAFETY: the caller guarantees `args` points to `num_args` entries.
            unsafe { std::slice::from_raw_parts(k.args, k.num_args as usize) }
        };
        let args = descs
            .iter()
            .enumerate()
            .map(|(a, d)| match (d.kind, d.size) {
                (ARG_GLOBAL, _) => Ok(ArgKind::Global),
                (ARG_LOCAL, _) => Ok(ArgKind::Local),
                (ARG_VALUE, n) if n > 0 => Ok(ArgKind::Value(n as usize)),
                (kind, size) => Err(err!(InvalidBinary, "argument {a} of kernel `{name}`: kind {kind}, size {size}")),
            })
            .collect::<Result<Vec<_>>>()?;
        ensure!(!out.iter().any(|(s, _)| s.name == name), InvalidBinary, "kernel `{name}` is in the table twice");
        let mut signature = KernelSignature::new(name.clone(), args);
        let reqd = k.reqd_work_group_size;
        if reqd != [0; 3] {
            ensure!(!reqd.contains(&0), InvalidBinary, "kernel `{name}` requires work-group size {reqd:?}");
            signature.reqd_work_group_size = Some(reqd);
        }
        out.push((signature, NativeKernel::c(name, entry)));
    }
    Ok(out)
}
