//! Programs of native Rust kernels.

use std::collections::HashMap;

use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{KernelSignature, NativeKernelFn, ProgramSource};

pub(crate) struct CpuProgram {
    kernels: HashMap<String, NativeKernelFn>,
    max_work_group_size: usize,
}

impl CpuProgram {
    pub(crate) fn new(bundle: &ProgramBundle, max_work_group_size: usize) -> Result<CpuProgram> {
        let Some(ProgramSource::Native(kernels)) = bundle.source_of(cmdbuf_core::SourceForm::Native) else {
            return Err(err!(
                InvalidBinary,
                "the CPU adapter builds native kernels (Rust functions, C kernel tables) only"
            ));
        };
        let kernels = kernels.iter().map(|k| (k.name.to_string(), k.func)).collect();
        Ok(CpuProgram { kernels, max_work_group_size })
    }
}

impl ProgramImpl for CpuProgram {
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>> {
        let func = self.kernels.get(&*signature.name).ok_or_else(|| {
            err!(InvalidKernelName, "the program's native source has no function for kernel `{}`", signature.name)
        })?;
        Ok(Box::new(CpuKernel { func: *func, max_work_group_size: self.max_work_group_size }))
    }
}

pub(crate) struct CpuKernel {
    pub(crate) func: NativeKernelFn,
    max_work_group_size: usize,
}

impl KernelImpl for CpuKernel {
    fn max_work_group_size(&self) -> usize {
        self.max_work_group_size
    }
}
