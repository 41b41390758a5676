//! Programs of OpenCL C or SPIR-V kernels, and their kernels.
//!
//! The kernel ABI is OpenCL's: a kernel takes the arguments its signature
//! declares, in order. A kernel may also opt into the adapter's *status ABI*
//! by declaring, after them, `__global uint* ur_status` and one `ulong` per
//! local-memory argument: the adapter passes a status word (zero at launch)
//! and the byte size of each local-memory argument, and a kernel that finds
//! it cannot run as asked (too little local memory) sets the word to a
//! non-zero code and returns. The launch's event then reports the failure:
//! OpenCL C has no way to abort a kernel, nor to know a local argument's size.

use std::ffi::CString;
use std::sync::Arc;

use cl3::types::{cl_kernel, cl_program};
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{ArgKind, KernelSignature};
use parking_lot::Mutex;

use crate::conv::{ClResultExt, cl_error};
use crate::device::Shared;
use crate::kernel_args::KernelObjects;
use crate::spir::{self, IlPath};

const CL_KERNEL_NUM_ARGS: u32 = 0x1191;

/// A built program.
pub(crate) struct ClProgram {
    shared: Arc<Shared>,
    program: ProgramObject,
    log: String,
    /// Kernels the driver knows by another name ([`spir::KernelAliases`]).
    aliases: spir::KernelAliases,
}

/// The `cl_program` of a [`ClProgram`], released with it.
enum ProgramObject {
    /// Built by the adapter.
    Built(opencl3::program::Program),
    /// Adopted (see [`crate::adopt`]) or linked: a reference the adapter holds.
    Held(HeldProgram),
}

impl ProgramObject {
    fn get(&self) -> cl_program {
        match self {
            ProgramObject::Built(p) => p.get(),
            ProgramObject::Held(p) => p.0,
        }
    }
}

/// A reference to a `cl_program` made elsewhere than by `opencl3` (adopted,
/// or linked), released on drop.
pub(crate) struct HeldProgram(pub(crate) cl_program);

// SAFETY: OpenCL objects may be used and released from any thread.
unsafe impl Send for HeldProgram {}
// SAFETY: as for Send.
unsafe impl Sync for HeldProgram {}

impl Drop for HeldProgram {
    fn drop(&mut self) {
        // SAFETY: the reference this value holds, released once.
        if let Err(code) = unsafe { cl3::program::release_program(self.0) } {
            tracing::warn!(code, "clReleaseProgram of a held program failed");
        }
    }
}

impl ClProgram {
    pub(crate) fn build(shared: Arc<Shared>, source: &str, options: &str) -> Result<ClProgram> {
        let program =
            opencl3::program::Program::create_from_source(&shared.context, source).cl("clCreateProgramWithSource")?;
        ClProgram::finish(shared, program, options, "OpenCL C")
    }

    /// Builds a SPIR-V module of OpenCL kernels, natively or through the
    /// translator (see [`crate::spir`]).
    pub(crate) fn build_il(shared: Arc<Shared>, il: &[u8], options: &str) -> Result<ClProgram> {
        match shared.device.il_path.clone() {
            Some(IlPath::Native) => {
                let program =
                    opencl3::program::Program::create_from_il(&shared.context, il).cl("clCreateProgramWithIL")?;
                ClProgram::finish(shared, program, options, "SPIR-V")
            }
            Some(IlPath::Translate(translator)) => {
                let (bitcode, aliases) = translator.to_bitcode(il)?;
                let devices = shared.device_ids();
                let binaries = vec![bitcode.as_slice(); devices.len()];
                // SAFETY: the devices are the context's, one binary each.
                let program =
                    unsafe { opencl3::program::Program::create_from_binary(&shared.context, &devices, &binaries) }
                        .cl("clCreateProgramWithBinary (SPIR)")?;
                let built = ClProgram::finish(
                    shared,
                    program,
                    &format!("-x spir -spir-std=1.2 {options}"),
                    "SPIR-V (as SPIR 1.2)",
                )?;
                Ok(ClProgram { aliases, ..built })
            }
            None => Err(err!(
                InvalidBinary,
                "this OpenCL device reports no SPIR-V IL version, and neither cl_khr_spir with the translator \
                 llvm-spirv of its LLVM version (or {}) to read SPIR-V through SPIR",
                spir::TRANSLATOR_ENV
            )),
        }
    }

    fn finish(
        shared: Arc<Shared>,
        mut program: opencl3::program::Program,
        options: &str,
        what: &str,
    ) -> Result<ClProgram> {
        let devices = shared.device_ids();
        let built = program.build(&devices, options);
        let log = build_log(&program, &devices);
        if let Err(e) = built {
            return Err(cl_error(e.0, &format!("clBuildProgram ({what}); build log:\n{log}")));
        }
        tracing::debug!(what, options, "OpenCL program built");
        Ok(ClProgram { shared, program: ProgramObject::Built(program), log, aliases: Default::default() })
    }

    /// A program over an adopted reference, with its driver's build log.
    pub(crate) fn adopted(shared: Arc<Shared>, program: HeldProgram) -> ClProgram {
        let log = held_build_log(&program, shared.device.id);
        ClProgram { shared, program: ProgramObject::Held(program), log, aliases: Default::default() }
    }

    /// Compiles SPIR-V modules apart, each with its options, and links them
    /// with `options` (`clCompileProgram`, `clLinkProgram`): a module may be
    /// a library of functions that the others call. Needs the device's own
    /// SPIR-V: a device that reads SPIR-V through SPIR 1.2 translation
    /// (PoCL 3.1) links nothing, `UnsupportedFeature`.
    pub(crate) fn link_il(shared: Arc<Shared>, inputs: &[(&[u8], &str)], options: &str) -> Result<ClProgram> {
        if !matches!(shared.device.il_path, Some(IlPath::Native)) {
            return Err(err!(
                UnsupportedFeature,
                "linking SPIR-V modules compiled apart needs a device that takes SPIR-V itself (cl_khr_il_program); \
                 this one reads it through SPIR 1.2 translation, or not at all"
            ));
        }
        let devices = shared.device_ids();
        let mut compiled = Vec::with_capacity(inputs.len());
        for (il, compile_options) in inputs {
            let mut program =
                opencl3::program::Program::create_from_il(&shared.context, il).cl("clCreateProgramWithIL")?;
            if let Err(e) = program.compile(&devices, compile_options, &[], &[]) {
                let log = build_log(&program, &devices);
                return Err(cl_error(e.0, &format!("clCompileProgram (SPIR-V); build log:\n{log}")));
            }
            compiled.push(program);
        }
        let raw: Vec<cl_program> = compiled.iter().map(|p| p.get()).collect();
        let options = CString::new(options).map_err(|_| err!(InvalidValue, "link options contain a NUL byte"))?;
        // SAFETY: the devices are the context's, and the programs compiled
        // programs of its context, alive across the call.
        let linked = unsafe {
            cl3::program::link_program(shared.context.get(), &devices, &options, &raw, None, std::ptr::null_mut())
        }
        .map_err(|code| {
            let logs: Vec<String> = compiled.iter().map(|p| build_log(p, &devices)).filter(|l| !l.is_empty()).collect();
            UrError::ProgramLinkFailure(cmdbuf_core::Detail::msg(format!(
                "clLinkProgram failed ({code}); compile logs:\n{}",
                logs.join("\n")
            )))
        })?;
        tracing::debug!(inputs = inputs.len(), "OpenCL program linked");
        let program = HeldProgram(linked);
        let log = held_build_log(&program, shared.device.id);
        Ok(ClProgram { shared, program: ProgramObject::Held(program), log, aliases: Default::default() })
    }
}

impl ClProgram {
    /// A new `cl_kernel` of the program named `name`.
    pub(crate) fn raw_kernel(&self, name: &str) -> Result<opencl3::kernel::Kernel> {
        let c_name = CString::new(self.aliases.driver_name(name))
            .map_err(|_| err!(InvalidKernelName, "kernel name {name:?} contains NUL"))?;
        match cl3::kernel::create_kernel(self.program.get(), &c_name) {
            Ok(k) => Ok(opencl3::kernel::Kernel::new(k)),
            Err(-46) => Err(err!(InvalidKernelName, "the program has no kernel `{name}`")),
            Err(code) => Err(cl_error(code, "clCreateKernel")),
        }
    }
}

/// The build log of `program` for `devices`: the first device's, and each
/// other device's where it differs (sub-devices of one device log alike).
/// The driver's build log of a held program for `device`; empty if it has none.
fn held_build_log(program: &HeldProgram, device: cl3::types::cl_device_id) -> String {
    match cl3::program::get_program_build_info(program.0, device, CL_PROGRAM_BUILD_LOG) {
        Ok(cl3::info_type::InfoType::VecUchar(bytes)) => {
            String::from_utf8_lossy(&bytes).trim_end_matches('\0').trim().to_string()
        }
        _ => String::new(),
    }
}

fn build_log(program: &opencl3::program::Program, devices: &[cl3::types::cl_device_id]) -> String {
    let mut logs: Vec<String> = Vec::with_capacity(1);
    for device in devices {
        let log = program.get_build_log(*device).unwrap_or_default().trim_end_matches('\0').trim().to_string();
        if !logs.contains(&log) {
            logs.push(log);
        }
    }
    logs.retain(|l| !l.is_empty());
    logs.join("\n")
}

/// The number of arguments of a `cl_kernel` (`CL_KERNEL_NUM_ARGS`).
pub(crate) fn num_args(kernel: cl_kernel) -> Result<usize> {
    match cl3::kernel::get_kernel_info(kernel, CL_KERNEL_NUM_ARGS).cl("clGetKernelInfo(CL_KERNEL_NUM_ARGS)")? {
        cl3::info_type::InfoType::Uint(n) => Ok(n as usize),
        other => Err(err!(Unknown, "clGetKernelInfo(CL_KERNEL_NUM_ARGS): unexpected answer {other:?}")),
    }
}

/// The signature of a kernel the adapter did not build, from what the
/// driver reports (see `cmdbuf_core::adopt`): the argument count, and each
/// argument's kind where `clGetKernelArgInfo` answers (drivers keep that
/// information for programs built with `-cl-kernel-arg-info`, some always).
pub(crate) fn derived_signature(kernel: cl_kernel, name: &str) -> Result<KernelSignature> {
    let args = (0..num_args(kernel)?).map(|i| arg_kind(kernel, i as u32)).collect::<Vec<_>>();
    Ok(KernelSignature::new(name.to_string(), args))
}

const CL_KERNEL_ARG_ADDRESS_QUALIFIER: u32 = 0x1196;
const CL_KERNEL_ARG_TYPE_NAME: u32 = 0x1198;
const CL_KERNEL_ARG_ADDRESS_GLOBAL: u32 = 0x119B;
const CL_KERNEL_ARG_ADDRESS_LOCAL: u32 = 0x119C;
const CL_KERNEL_ARG_ADDRESS_CONSTANT: u32 = 0x119D;
const CL_PROGRAM_BUILD_LOG: u32 = 0x1183;

/// What `clGetKernelArgInfo` tells of argument `index`; `Unknown` where it
/// tells nothing (`CL_KERNEL_ARG_INFO_NOT_AVAILABLE`, or an OpenCL 1.1 driver).
fn arg_kind(kernel: cl_kernel, index: u32) -> ArgKind {
    match cl3::kernel::get_kernel_arg_info(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER) {
        Ok(cl3::info_type::InfoType::Uint(CL_KERNEL_ARG_ADDRESS_GLOBAL | CL_KERNEL_ARG_ADDRESS_CONSTANT)) => {
            ArgKind::Global
        }
        Ok(cl3::info_type::InfoType::Uint(CL_KERNEL_ARG_ADDRESS_LOCAL)) => ArgKind::Local,
        Ok(cl3::info_type::InfoType::Uint(_)) => {
            match cl3::kernel::get_kernel_arg_info(kernel, index, CL_KERNEL_ARG_TYPE_NAME) {
                Ok(cl3::info_type::InfoType::VecUchar(name)) => {
                    let name = String::from_utf8_lossy(&name);
                    value_size(name.trim_end_matches('\0').trim()).map_or(ArgKind::AnyValue, ArgKind::Value)
                }
                _ => ArgKind::AnyValue,
            }
        }
        _ => ArgKind::Unknown,
    }
}

/// The size of a by-value argument of OpenCL C's builtin scalar or vector
/// type `name` (`float4`, `uint`, `unsigned int`); `None` for any other
/// type (structs, typedefs, `size_t`, whose size the front end leaves to
/// the driver).
pub fn value_size(name: &str) -> Option<usize> {
    let name = name.strip_prefix("unsigned ").map_or(name, |rest| rest);
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let base = &name[..name.len() - digits.len()];
    let scalar = match base {
        "char" | "uchar" => 1,
        "short" | "ushort" | "half" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "double" => 8,
        _ => return None,
    };
    let lanes = match digits {
        "" => 1,
        "2" => 2,
        // A 3-component vector takes the room of four.
        "3" | "4" => 4,
        "8" => 8,
        "16" => 16,
        _ => return None,
    };
    Some(scalar * lanes)
}

impl ProgramImpl for ClProgram {
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>> {
        let name = &*signature.name;
        let kernel = self.raw_kernel(name)?;
        let args = num_args(kernel.get()).unwrap_or(signature.args.len());
        let declared = signature.args.len();
        let locals = signature.args.iter().filter(|a| matches!(a, ArgKind::Local)).count();
        let status_abi = args == declared + 1 + locals;
        if args != declared && !status_abi {
            return Err(err!(
                InvalidKernel,
                "kernel `{name}` takes {args} arguments in its OpenCL C source; its signature declares {declared} \
                 (or {} with the status word and local sizes)",
                declared + 1 + locals
            ));
        }
        ClKernel::boxed(&self.shared, kernel, name, KernelOrigin::Created { status_abi })
    }

    fn build_log(&self) -> String {
        self.log.clone()
    }

    fn binary(&self) -> Option<Vec<u8>> {
        let binaries = match cl3::program::get_program_info(self.program.get(), CL_PROGRAM_BINARIES).ok()? {
            cl3::info_type::InfoType::VecVecUchar(binaries) => binaries,
            _ => return None,
        };
        binaries.into_iter().next().filter(|b| !b.is_empty())
    }

    /// The `cl_program`.
    fn native_handle(&self) -> Result<NativeHandle> {
        Ok(NativeHandle(self.program.get() as u64))
    }
}

const CL_PROGRAM_BINARIES: u32 = 0x1166;

/// Where a kernel comes from.
#[derive(Copy, Clone, Debug)]
pub(crate) enum KernelOrigin {
    /// Created from a program; `status_abi` when it takes the status word
    /// and local sizes after its arguments.
    Created { status_abi: bool },
    /// An application's `cl_kernel`, which it may also set arguments on.
    Adopted,
}

impl ClKernel {
    /// The adapter's kernel over `kernel` (a reference it owns) of a
    /// program of `shared`'s context.
    pub(crate) fn boxed(
        shared: &Shared,
        kernel: opencl3::kernel::Kernel,
        name: &str,
        origin: KernelOrigin,
    ) -> Result<Box<dyn KernelImpl>> {
        let (status_abi, adopted) = match origin {
            KernelOrigin::Created { status_abi } => (status_abi, false),
            KernelOrigin::Adopted => (false, true),
        };
        let device = shared.device.id;
        let max_work_group_size = max_work_group_size(&kernel, &shared.device_ids())?;
        let compile_size = kernel.get_compile_work_group_size(device).ok().and_then(|s| {
            let size: [usize; 3] = [0, 1, 2].map(|d| s.get(d).copied().unwrap_or(0));
            (size != [0; 3]).then_some(size)
        });
        let work_group_info = WorkGroupInfo {
            compile_size,
            local_mem: kernel.get_local_mem_size(device).map_or(0, |n| n as usize),
            private_mem: kernel.get_private_mem_size(device).map_or(0, |n| n as usize),
            preferred_multiple: kernel.get_work_group_size_multiple(device).ok().filter(|m| *m > 0),
            max_sub_group_size: max_sub_group_size(&kernel, device, max_work_group_size),
        };
        let native = kernel.get();
        Ok(Box::new(ClKernel {
            kernel: Mutex::new(KernelObjects::new(kernel, adopted)),
            native,
            max_work_group_size,
            status_abi,
            name: name.into(),
            work_group_info,
        }))
    }
}

/// The largest sub-group `kernel` runs with in a work-group of the largest
/// size (`CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE`, asked as UR's OpenCL
/// adapter asks it); `None` where the driver has no sub-group queries.
fn max_sub_group_size(
    kernel: &opencl3::kernel::Kernel,
    device: cl3::types::cl_device_id,
    max_work_group_size: usize,
) -> Option<u32> {
    let local = [max_work_group_size, 1, 1];
    cl3::kernel::get_kernel_sub_group_info(
        kernel.get(),
        device,
        cl3::kernel::CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
        std::mem::size_of_val(&local),
        local.as_ptr().cast(),
    )
    .ok()
    .map(usize::from)
    .filter(|n| *n > 0)
    .and_then(|n| u32::try_from(n).ok())
}

/// The largest work-group `kernel` takes on every one of `devices`: a
/// context over several devices launches it on any of them.
pub(crate) fn max_work_group_size(
    kernel: &opencl3::kernel::Kernel,
    devices: &[cl3::types::cl_device_id],
) -> Result<usize> {
    let mut max = usize::MAX;
    for device in devices {
        max = max.min(kernel.get_work_group_size(*device).cl("CL_KERNEL_WORK_GROUP_SIZE")?);
    }
    Ok(max)
}

/// What `clGetKernelWorkGroupInfo` reports beyond the largest work-group.
struct WorkGroupInfo {
    compile_size: Option<[usize; 3]>,
    local_mem: usize,
    private_mem: usize,
    preferred_multiple: Option<usize>,
    max_sub_group_size: Option<u32>,
}

/// A kernel. OpenCL kernels hold their arguments, so the lock is held from
/// setting them until the launch has been enqueued or recorded (both capture
/// the arguments).
pub(crate) struct ClKernel {
    pub(crate) kernel: Mutex<KernelObjects>,
    /// The first `cl_kernel` the lock holds, for its native handle (which
    /// needs no lock: the handle never changes).
    native: cl_kernel,
    max_work_group_size: usize,
    /// The kernel declares the status word and local sizes after its arguments.
    pub(crate) status_abi: bool,
    /// The kernel's name, for error messages.
    pub(crate) name: Arc<str>,
    work_group_info: WorkGroupInfo,
}

impl KernelImpl for ClKernel {
    fn max_work_group_size(&self) -> usize {
        self.max_work_group_size
    }

    fn compile_work_group_size(&self) -> Option<[usize; 3]> {
        self.work_group_info.compile_size
    }

    fn local_mem_size(&self) -> usize {
        self.work_group_info.local_mem
    }

    fn private_mem_size(&self) -> usize {
        self.work_group_info.private_mem
    }

    fn preferred_work_group_size_multiple(&self) -> Option<usize> {
        self.work_group_info.preferred_multiple
    }

    fn max_sub_group_size(&self) -> Option<u32> {
        self.work_group_info.max_sub_group_size
    }

    /// The `cl_kernel`. Launches set its arguments under the kernel's lock,
    /// so an application that sets arguments on it itself must not launch
    /// through cmdbuf at the same time. From now on every launch sets all
    /// of its arguments (see `kernel_args.rs`).
    fn native_handle(&self) -> Result<NativeHandle> {
        self.kernel.lock().share_natively();
        Ok(NativeHandle(self.native as u64))
    }
}

// SAFETY: the raw `cl_kernel` copy is only read as a handle value; the
// object it names is owned (and released) by the `opencl3` kernel beside it.
// The `cl_mem` handles and USM addresses its held arguments record are only
// compared, never used, and only under the kernel's lock.
unsafe impl Send for ClKernel {}
// SAFETY: as for Send.
unsafe impl Sync for ClKernel {}

#[cfg(test)]
mod tests {
    use super::value_size;

    #[test]
    fn builtin_value_types_have_their_sizes() {
        assert_eq!(value_size("int"), Some(4));
        assert_eq!(value_size("unsigned int"), Some(4));
        assert_eq!(value_size("float4"), Some(16));
        assert_eq!(value_size("double3"), Some(32));
        assert_eq!(value_size("uchar16"), Some(16));
        assert_eq!(value_size("ulong"), Some(8));
        assert_eq!(value_size("half2"), Some(4));
        assert_eq!(value_size("size_t"), None);
        assert_eq!(value_size("struct pair"), None);
        assert_eq!(value_size("int5"), None);
        assert_eq!(value_size("float*"), None);
    }
}
