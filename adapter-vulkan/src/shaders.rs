//! The adapter's internal shaders (GLSL and SPIR-V in `shaders/`), and how
//! fills use them.
//!
//! `vkCmdFillBuffer` writes a 4-byte word over a 4-byte aligned range; every
//! other fill (patterns of 3, 5, 8 bytes or more, unaligned ranges) runs
//! `fill.comp`, whose parameters are built here.

use std::sync::Arc;

use cmdbuf_core::Result;

use crate::gpu::Gpu;
use crate::program::{Pipeline, internal_module};

/// `shaders/fill.comp`, compiled by `shaders/regenerate.sh`.
pub(crate) static FILL_SPV: &[u8] = include_bytes!("../shaders/fill.spv");

/// Work-items per work-group of the fill shader where the device allows
/// (specialization constant 0; the Vulkan minimum of the limits is 128).
const FILL_GROUP: u32 = 256;
/// Bytes of the fill parameters before the expanded pattern.
const FILL_HEADER: usize = 32;

/// SPIR-V bytes as words.
pub(crate) fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The work-group size of the fill shader on a device whose limits are
/// `maxComputeWorkGroupSize[0]` and `maxComputeWorkGroupInvocations`.
pub(crate) fn fill_group(max_size_x: u32, max_invocations: u32) -> u32 {
    FILL_GROUP.min(max_size_x).min(max_invocations).max(1)
}

/// The fill pipeline, with work-groups of `group` items.
pub(crate) fn fill_pipeline(gpu: &Arc<Gpu>, group: u32) -> Result<Arc<Pipeline>> {
    let module = internal_module(gpu, &words(FILL_SPV))?;
    let pipeline = Pipeline::new(gpu, module, c"main", &[(0, group)]);
    // SAFETY: the module is only needed to create the pipeline.
    unsafe { gpu.device.destroy_shader_module(module, None) };
    pipeline
}

/// How one fill runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FillPlan {
    /// `vkCmdFillBuffer` with this word (the pattern repeated to 4 bytes).
    Word(u32),
    /// The fill shader with these parameters and this many work-groups.
    Shader { params: Vec<u8>, groups: u32 },
}

/// Plans a fill of `size` bytes with `pattern` starting at buffer offset
/// `offset`, whose device address is `address`, for work-groups of `group`
/// items and at most `max_groups` of them.
pub(crate) fn plan_fill(address: u64, offset: u64, pattern: &[u8], size: u64, group: u32, max_groups: u32) -> FillPlan {
    let p = pattern.len();
    if 4 % p == 0 && offset.is_multiple_of(4) && size.is_multiple_of(4) {
        let word: Vec<u8> = pattern.iter().copied().cycle().take(4).collect();
        return FillPlan::Word(u32::from_le_bytes([word[0], word[1], word[2], word[3]]));
    }
    let base = address & !3;
    let head = address - base;
    let end = head + size;
    let nwords = end.div_ceil(4);
    // The pattern repeats every lcm(p, 4) bytes from `base`.
    let period_bytes = match p % 4 {
        0 => p,
        2 => 2 * p,
        _ => 4 * p,
    };
    let mut params = Vec::with_capacity(FILL_HEADER + period_bytes);
    params.extend_from_slice(&base.to_le_bytes());
    params.extend_from_slice(&end.to_le_bytes());
    params.extend_from_slice(&(head as u32).to_le_bytes());
    params.extend_from_slice(&((period_bytes / 4) as u32).to_le_bytes());
    params.extend_from_slice(&0u64.to_le_bytes());
    // Byte j from `base` is byte (j - head) of the fill.
    let head = head as usize;
    params.extend((0..period_bytes).map(|j| pattern[(j + 4 * p - head) % p]));
    let groups = nwords.div_ceil(u64::from(group.max(1))).clamp(1, u64::from(max_groups.max(1))) as u32;
    FillPlan::Shader { params, groups }
}

/// Bytes of parameters a fill needs (0 for `vkCmdFillBuffer`).
pub(crate) fn fill_block_bytes(address: u64, offset: u64, pattern: &[u8], size: u64) -> usize {
    match plan_fill(address, offset, pattern, size, 1, 1) {
        FillPlan::Word(_) => 0,
        FillPlan::Shader { params, .. } => params.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the shader's algorithm on the host.
    fn emulate(plan: &FillPlan, address: u64, memory: &mut [u8]) {
        let FillPlan::Shader { params, .. } = plan else { panic!("expected a shader fill") };
        let u32_at = |o: usize| u32::from_le_bytes(params[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(params[o..o + 8].try_into().unwrap());
        let (base, end, head, period) = (u64_at(0), u64_at(8), u64::from(u32_at(16)), u64::from(u32_at(20)));
        for i in 0..end.div_ceil(4) {
            let value = u32_at(FILL_HEADER + 4 * (i % period) as usize);
            for k in 0..4u64 {
                let at = i * 4 + k;
                if at >= head && at < end {
                    memory[(base + at - address) as usize + 8] = (value >> (8 * k)) as u8;
                }
            }
        }
    }

    #[test]
    fn every_pattern_and_alignment_fills_exactly_its_range() {
        for p in [1usize, 2, 3, 4, 5, 6, 7, 8, 12, 13, 64, 255, 256] {
            let pattern: Vec<u8> = (0..p).map(|i| (i * 7 + 3) as u8).collect();
            for misalign in 0..4u64 {
                let size = (p * 5) as u64;
                let address = 0x1000 + misalign;
                let plan = plan_fill(address, misalign, &pattern, size, 256, 65535);
                let mut memory = vec![0xEEu8; size as usize + 16];
                match &plan {
                    FillPlan::Word(w) => {
                        assert!(4 % p == 0 && misalign == 0);
                        for c in memory[8..8 + size as usize].chunks_mut(4) {
                            c.copy_from_slice(&w.to_le_bytes());
                        }
                    }
                    shader => emulate(shader, address, &mut memory),
                }
                let expected: Vec<u8> = pattern.iter().copied().cycle().take(size as usize).collect();
                assert_eq!(&memory[8..8 + size as usize], &expected[..], "pattern {p}, misalignment {misalign}");
                assert!(memory[..8].iter().chain(&memory[8 + size as usize..]).all(|b| *b == 0xEE));
            }
        }
    }

    #[test]
    fn word_fills_need_alignment() {
        assert_eq!(plan_fill(0, 0, &[1, 2], 8, 256, 1), FillPlan::Word(0x0201_0201));
        assert!(matches!(plan_fill(2, 2, &[1, 2], 8, 256, 1), FillPlan::Shader { .. }));
        assert!(matches!(plan_fill(0, 0, &[1, 2], 6, 256, 1), FillPlan::Shader { .. }));
        assert_eq!(fill_block_bytes(0, 0, &[1; 4], 8), 0);
        assert_eq!(fill_block_bytes(0, 0, &[1; 3], 9), FILL_HEADER + 12);
    }

    #[test]
    fn fills_beyond_32_bit_word_counts_keep_their_end() {
        // 20 GiB of a 3-byte pattern: more words than a u32 counts.
        let size = 20u64 << 30;
        let FillPlan::Shader { params, groups } = plan_fill(0x1001, 1, &[1, 2, 3], size, 256, 65535) else {
            panic!("a 3-byte pattern needs the shader")
        };
        assert_eq!(u64::from_le_bytes(params[8..16].try_into().unwrap()), size + 1);
        assert_eq!(groups, 65535);
    }

    #[test]
    fn fill_groups_respect_device_limits() {
        assert_eq!(fill_group(1024, 1024), 256);
        assert_eq!(fill_group(128, 1024), 128);
        assert_eq!(fill_group(1024, 128), 128);
        assert_eq!(fill_group(0, 0), 1);
    }
}
