//! Kernels only the benchmarks use, in every form available; the others
//! (`empty`, `fill`) come from the conformance kernel library.
//!
//! | kernel | arguments | effect per work-item |
//! |---|---|---|
//! | `sin_f32` | P: f32 pointer | `P[gid0] = sin(P[gid0])` (the SinKernelGraph shape of the SYCL-graph benchmarks) |
//!
//! The SPIR-V form (Vulkan) is `kernels/*.comp`, compiled ahead of time by
//! `kernels/regenerate.sh` into the committed `kernels/*.spv`. The CUDA C form
//! follows the CUDA adapter's kernel ABI (a trailing `ur_launch` with the
//! global offset, docs/cuda.md) and is compiled by NVRTC at run time; where
//! NVRTC is missing the group that needs it reports itself not measured.

use std::borrow::Cow;

use cmdbuf::{ArgKind, KernelSignature, NativeKernel, ProgramBundle, ProgramSource, SpirvModule, WorkGroup};

/// `kernels/sin_f32.comp`, compiled.
static SIN_F32_SPV: &[u8] = include_bytes!("kernels/sin_f32.spv");

/// OpenCL C.
const OPENCL_C: &str = "__kernel void sin_f32(__global float* p) { size_t i = get_global_id(0); p[i] = sin(p[i]); }";

/// CUDA C in the CUDA adapter's kernel ABI.
const CUDA_C: &str = r#"
struct ur_launch {
    unsigned long long offset[3];
    unsigned int *status;
};
extern "C" __global__ void sin_f32(float *p, ur_launch l) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x + l.offset[0];
    p[i] = sinf(p[i]);
}
"#;

/// The benchmark-only kernels.
pub fn bundle() -> ProgramBundle {
    let words = SIN_F32_SPV.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    ProgramBundle::new()
        .kernel(KernelSignature::new("sin_f32", [ArgKind::Global]))
        .source(ProgramSource::Native(vec![NativeKernel::new("sin_f32", sin_f32)]))
        .source(ProgramSource::SpirV(vec![SpirvModule { kernel: Cow::Borrowed("sin_f32"), words: Cow::Owned(words) }]))
        .source(ProgramSource::OpenClC(OPENCL_C.into()))
        .source(ProgramSource::CudaC(CUDA_C.into()))
}

fn sin_f32(g: &WorkGroup<'_>) {
    let p = g.ptr::<f32>(0);
    for item in g.items() {
        // SAFETY: the benchmark launches one work-item per element of P.
        unsafe {
            let e = p.add(item.global_id(0));
            *e = (*e).sin();
        }
    }
}
