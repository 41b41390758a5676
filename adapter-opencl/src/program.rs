//! Programs of OpenCL C and their kernels.
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

const CL_KERNEL_NUM_ARGS: u32 = 0x1191;

/// A built program.
pub(crate) struct ClProgram {
    shared: Arc<Shared>,
    program: opencl3::program::Program,
}

impl ClProgram {
    pub(crate) fn build(shared: Arc<Shared>, source: &str, options: &str) -> Result<ClProgram> {
        let mut program =
            opencl3::program::Program::create_from_source(&shared.context, source).cl("clCreateProgramWithSource")?;
        let device = shared.device.id;
        if let Err(e) = program.build(&[device], options) {
            let log = program.get_build_log(device).unwrap_or_default();
            return Err(cl_error(e.0, &format!("clBuildProgram; build log:\n{}", log.trim())));
        }
        tracing::debug!("OpenCL C program built");
        Ok(ClProgram { shared, program })
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
        let max_work_group_size = kernel.get_work_group_size(self.shared.device.id).cl("CL_KERNEL_WORK_GROUP_SIZE")?;
        Ok(Box::new(ClKernel { kernel: Mutex::new(kernel), max_work_group_size, status_abi, name: name.into() }))
    }
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
}

impl KernelImpl for ClKernel {
    fn max_work_group_size(&self) -> usize {
        self.max_work_group_size
    }
}
