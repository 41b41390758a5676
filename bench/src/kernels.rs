//! Kernels only the benchmarks use, in every form available; the others
//! (`empty`, `fill`) come from the conformance kernel library.
//!
//! | kernel | arguments | effect per work-item |
//! |---|---|---|
//! | `sin_f32` | P: f32 pointer | `P[gid0] = sin(P[gid0])` (the SinKernelGraph shape of the SYCL-graph benchmarks) |

use ur::{ArgKind, KernelSignature, NativeKernel, ProgramBundle, ProgramSource, WorkGroup};

/// The benchmark-only kernels.
pub fn bundle() -> ProgramBundle {
    ProgramBundle::new()
        .kernel(KernelSignature::new("sin_f32", [ArgKind::Global]))
        .source(ProgramSource::Native(vec![NativeKernel::new("sin_f32", sin_f32)]))
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
