//! The kernel library of the suite: each test kernel declared once, with its
//! code in the form of every adapter.
//!
//! Conventions every form follows (so that one check fits every backend):
//! - all data is `u32` (wrapping arithmetic) unless stated;
//! - `gid(d)` is the global id in dimension `d` *including* the global offset;
//! - `linear` is the global linear id *without* offset, dimension 0 fastest:
//!   `(gid(0)-off0) + g0 * ((gid(1)-off1) + g1 * (gid(2)-off2))`;
//! - `lid(d)` is the local id, `lrange(d)` the local size.
//!
//! | kernel | arguments | effect per work-item |
//! |---|---|---|
//! | `saxpy` | Z, A: u32, X, Y | `Z[gid0] = A*X[gid0] + Y[gid0]` |
//! | `fill` | P, V: u32 | `P[gid0] = V` |
//! | `fill_2d` | P, V: u32 | `P[linear] = V` |
//! | `increment` | P | `P[gid0] += 1` |
//! | `cpy_and_mult` | DST, SRC | `DST[gid0] = SRC[gid0] * 2` |
//! | `indexers` | P | `P[linear*6 .. +6] = gid0, gid1, gid2, lid0, lid1, lid2` |
//! | `saxpy_local` | LA: local, LB: local, Z, A: u32, X, Y | `LA[lid0] = gid0; LB[2*lid0] = -gid0; LB[2*lid0+1] = lrange0; Z[gid0] = A*X[gid0] + Y[gid0] + LA[lid0] + LB[2*lid0] + LB[2*lid0+1]` (after a work-group barrier) |
//! | `axpb` | P, A: u32, B: u32 | `P[gid0] = P[gid0]*A + B` |
//! | `copy_add` | DST, SRC, K: u32 | `DST[gid0] = SRC[gid0] + K` |
//! | `empty` | — | nothing |

use cmdbuf::{ArgKind, KernelSignature, ProgramBundle, ProgramSource};

mod cuda;
mod native;
mod opencl;
pub mod programs;
pub mod vulkan;

const G: ArgKind = ArgKind::Global;
const U32: ArgKind = ArgKind::Value(4);
const L: ArgKind = ArgKind::Local;

/// The signatures of the library's kernels.
pub fn signatures() -> Vec<KernelSignature> {
    vec![
        KernelSignature::new("saxpy", [G, U32, G, G]),
        KernelSignature::new("fill", [G, U32]),
        KernelSignature::new("fill_2d", [G, U32]),
        KernelSignature::new("increment", [G]),
        KernelSignature::new("cpy_and_mult", [G, G]),
        KernelSignature::new("indexers", [G]),
        KernelSignature::new("saxpy_local", [L, L, G, U32, G, G]),
        KernelSignature::new("axpb", [G, U32, U32]),
        KernelSignature::new("copy_add", [G, G, U32]),
        KernelSignature::new("empty", []),
    ]
}

/// The library as a program bundle, in every form available.
pub fn bundle() -> ProgramBundle {
    bundle_with(signatures())
}

/// The library's code declared with `signatures` (the library's, some
/// declared otherwise).
pub fn bundle_with(signatures: Vec<KernelSignature>) -> ProgramBundle {
    let mut bundle = ProgramBundle::new();
    for signature in signatures {
        bundle = bundle.kernel(signature);
    }
    bundle
        .source(ProgramSource::Native(native::kernels()))
        .source(ProgramSource::OpenClC(opencl::SOURCE.into()))
        .source(ProgramSource::SpirV(vulkan::modules()))
        .source(ProgramSource::CudaC(cuda::SOURCE.into()))
        .source(ProgramSource::Ptx(cuda::PTX.into()))
}

/// The host model of `saxpy`.
pub fn saxpy_reference(a: u32, x: &[u32], y: &[u32]) -> Vec<u32> {
    x.iter().zip(y).map(|(x, y)| a.wrapping_mul(*x).wrapping_add(*y)).collect()
}

/// The host model of `saxpy_local` for a 1D launch with local size `local`.
pub fn saxpy_local_reference(a: u32, x: &[u32], y: &[u32], local: usize) -> Vec<u32> {
    (0..x.len())
        .map(|i| {
            let base = a.wrapping_mul(x[i]).wrapping_add(y[i]);
            base.wrapping_add(i as u32).wrapping_add((i as u32).wrapping_neg()).wrapping_add(local as u32)
        })
        .collect()
}
