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

use ur::{ArgKind, KernelSignature, NativeKernel, ProgramBundle, ProgramSource, SpirvModule, WorkGroup};

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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    /// The committed SPIR-V is what `kernels/regenerate.sh` makes of the GLSL,
    /// when the glslangValidator that made it is installed; otherwise the
    /// test says why it checked nothing.
    #[test]
    fn spirv_is_current() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels");
        let version = match Command::new("glslangValidator").arg("--version").output() {
            Ok(out) if out.status.success() => {
                String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string()
            }
            _ => return eprintln!("skipped: glslangValidator is not installed (Debian: glslang-tools)"),
        };
        let recorded = std::fs::read_to_string(dir.join("glslang-version.txt")).expect("glslang-version.txt");
        if version.trim() != recorded.trim() {
            return eprintln!(
                "skipped: glslangValidator here is `{}`, the SPIR-V was made by `{}`",
                version.trim(),
                recorded.trim()
            );
        }
        let out = std::env::temp_dir().join(format!("ur-bench-{}-sin_f32.spv", std::process::id()));
        let status = Command::new("glslangValidator")
            .args(["-V", "--target-env", "vulkan1.2"])
            .arg(format!("-I{}", dir.join("../../../conformance/src/kernels/vulkan").display()))
            .arg(dir.join("sin_f32.comp"))
            .arg("-o")
            .arg(&out)
            .output()
            .expect("glslangValidator runs");
        assert!(status.status.success(), "sin_f32.comp does not compile: {}", String::from_utf8_lossy(&status.stdout));
        let fresh = std::fs::read(&out).expect("the compiled SPIR-V");
        let _ = std::fs::remove_file(&out);
        assert!(fresh == super::SIN_F32_SPV, "sin_f32.spv is stale: run src/kernels/regenerate.sh");
    }
}
