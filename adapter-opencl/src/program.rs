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

use parking_lot::Mutex;
use ur_core::adapter::{KernelImpl, ProgramImpl};
use ur_core::{ArgKind, KernelSignature, Result, err};

use crate::context::Shared;
use crate::conv::{ClResultExt, cl_error};
use crate::spir::{self, IlPath};

const CL_KERNEL_NUM_ARGS: u32 = 0x1191;

/// A built program.
pub(crate) struct ClProgram {
    shared: Arc<Shared>,
    program: opencl3::program::Program,
    log: String,
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
                let bitcode = spir::to_bitcode(&translator, il)?;
                let device = shared.device.id;
                // SAFETY: `device` is the context's device.
                let program =
                    unsafe { opencl3::program::Program::create_from_binary(&shared.context, &[device], &[&bitcode]) }
                        .cl("clCreateProgramWithBinary (SPIR)")?;
                ClProgram::finish(shared, program, &format!("-x spir -spir-std=1.2 {options}"), "SPIR-V (as SPIR 1.2)")
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
        let device = shared.device.id;
        let built = program.build(&[device], options);
        let log = program.get_build_log(device).unwrap_or_default().trim_end_matches('\0').trim().to_string();
        if let Err(e) = built {
            return Err(cl_error(e.0, &format!("clBuildProgram ({what}); build log:\n{log}")));
        }
        tracing::debug!(what, options, "OpenCL program built");
        Ok(ClProgram { shared, program, log })
    }
}

impl ProgramImpl for ClProgram {
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>> {
        let name = &*signature.name;
        let c_name = CString::new(name).map_err(|_| err!(InvalidKernelName, "kernel name {name:?} contains NUL"))?;
        let kernel = match cl3::kernel::create_kernel(self.program.get(), &c_name) {
            Ok(k) => opencl3::kernel::Kernel::new(k),
            Err(-46) => {
                return Err(err!(InvalidKernelName, "the program's OpenCL C source has no kernel `{name}`"));
            }
            Err(code) => return Err(cl_error(code, "clCreateKernel")),
        };
        let args = match cl3::kernel::get_kernel_info(kernel.get(), CL_KERNEL_NUM_ARGS) {
            Ok(cl3::info_type::InfoType::Uint(n)) => n as usize,
            _ => signature.args.len(),
        };
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
        let device = self.shared.device.id;
        let max_work_group_size = kernel.get_work_group_size(device).cl("CL_KERNEL_WORK_GROUP_SIZE")?;
        let compile_size = kernel.get_compile_work_group_size(device).ok().and_then(|s| {
            let size: [usize; 3] = [0, 1, 2].map(|d| s.get(d).copied().unwrap_or(0));
            (size != [0; 3]).then_some(size)
        });
        let work_group_info = WorkGroupInfo {
            compile_size,
            local_mem: kernel.get_local_mem_size(device).map_or(0, |n| n as usize),
            private_mem: kernel.get_private_mem_size(device).map_or(0, |n| n as usize),
            preferred_multiple: kernel.get_work_group_size_multiple(device).ok().filter(|m| *m > 0),
        };
        Ok(Box::new(ClKernel {
            kernel: Mutex::new(kernel),
            max_work_group_size,
            status_abi,
            name: name.into(),
            work_group_info,
        }))
    }

    fn build_log(&self) -> String {
        self.log.clone()
    }

    fn binary(&self) -> Option<Vec<u8>> {
        self.program.get_binaries().ok()?.into_iter().next().filter(|b| !b.is_empty())
    }
}

/// What `clGetKernelWorkGroupInfo` reports beyond the largest work-group.
struct WorkGroupInfo {
    compile_size: Option<[usize; 3]>,
    local_mem: usize,
    private_mem: usize,
    preferred_multiple: Option<usize>,
}

/// A kernel. OpenCL kernels hold their arguments, so the lock is held from
/// setting them until the launch has been enqueued or recorded (both capture
/// the arguments).
pub(crate) struct ClKernel {
    pub(crate) kernel: Mutex<opencl3::kernel::Kernel>,
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
}
