//! The library in SPIR-V form (the Vulkan adapter): GLSL compute shaders in
//! `vulkan/*.comp`, written to the Vulkan adapter's kernel ABI
//! (`vulkan/ur_abi.glsl`, docs/vulkan.md), compiled ahead of time by
//! `vulkan/regenerate.sh` into the committed `vulkan/*.spv`, so that building
//! needs no shader compiler.

use std::borrow::Cow;

use cmdbuf::SpirvModule;

/// `(kernel, GLSL file, SPIR-V)` of every kernel of the library.
pub const SOURCES: [(&str, &str, &[u8]); 10] = [
    ("saxpy", "saxpy.comp", include_bytes!("vulkan/saxpy.spv")),
    ("fill", "fill.comp", include_bytes!("vulkan/fill.spv")),
    ("fill_2d", "fill_2d.comp", include_bytes!("vulkan/fill_2d.spv")),
    ("increment", "increment.comp", include_bytes!("vulkan/increment.spv")),
    ("cpy_and_mult", "cpy_and_mult.comp", include_bytes!("vulkan/cpy_and_mult.spv")),
    ("indexers", "indexers.comp", include_bytes!("vulkan/indexers.spv")),
    ("saxpy_local", "saxpy_local.comp", include_bytes!("vulkan/saxpy_local.spv")),
    ("axpb", "axpb.comp", include_bytes!("vulkan/axpb.spv")),
    ("copy_add", "copy_add.comp", include_bytes!("vulkan/copy_add.spv")),
    ("empty", "empty.comp", include_bytes!("vulkan/empty.spv")),
];

pub(super) fn modules() -> Vec<SpirvModule> {
    SOURCES
        .iter()
        .map(|(name, _, spv)| SpirvModule {
            kernel: Cow::Borrowed(*name),
            words: Cow::Owned(spv.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every GLSL file is a kernel of [`SOURCES`](super::SOURCES). Whether
    /// the committed SPIR-V is what the GLSL compiles to is checked by
    /// `tests/kernels_current.rs`, where glslangValidator is installed.
    #[test]
    fn every_glsl_file_is_a_kernel_of_sources() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels/vulkan");
        let mut listed: Vec<&str> = super::SOURCES.iter().map(|s| s.1).collect();
        listed.sort_unstable();
        let mut present: Vec<String> = std::fs::read_dir(&dir)
            .expect("the kernel directory")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".comp"))
            .collect();
        present.sort_unstable();
        assert_eq!(listed, present, "every .comp file is a kernel of SOURCES");
    }
}
