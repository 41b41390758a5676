//! How a device builds SPIR-V kernels (UR's IL).
//!
//! A device whose `CL_DEVICE_IL_VERSION` lists SPIR-V takes the module with
//! `clCreateProgramWithIL` (PoCL 5, NVIDIA, Intel). PoCL 3.1 (Debian 12)
//! reports no IL, but reads SPIR 1.2 (LLVM bitcode, `cl_khr_spir`) with the
//! LLVM it was built with. For such a device the adapter translates the
//! module back to LLVM bitcode with the Khronos translator `llvm-spirv -r`
//! of the same LLVM major version (Debian: `llvm-spirv-15` for PoCL's LLVM 15;
//! `UR_RS_LLVM_SPIRV` names another) and builds it with
//! `clCreateProgramWithBinary` and `-x spir`. Without either, the device does
//! not list `SourceForm::SpirvKernel` and such programs are `InvalidBinary`.
//!
//! PoCL 3.1's CPU devices lack built-ins that DPC++'s device code calls: no
//! sub-groups and no work-group collectives (`get_sub_group_size`,
//! `intel_sub_group_shuffle`, `work_group_broadcast`, ..., called by every
//! SYCL group algorithm), no atomics on generic pointers (`atomic_ref`), no
//! floating-point atomic adds. Such a module fails to link (`Cannot find
//! symbol ... in kernel library`). cmdbuf-core reports these devices as
//! running sub-groups of one work-item (`SubGroups`), which is what SYCL and
//! UR's OpenCL adapter define for them; the adapter makes that true in the
//! kernel too. When a module uses groups, generic pointers or floating-point
//! atomics, it is translated with OpenCL C 2.0's names and the missing
//! built-ins (`spir/missing_builtins.cl`, with the local memory of
//! `spir/work_group_scratch.ll`) are linked into it with the driver's own
//! `clang-<N>` (a dependency of PoCL's package; `UR_RS_CLANG` names another).
//! Only for CPU devices without sub-groups: the atomics rely on one memory
//! behind every address space.
//!
//! PoCL 3.1 also aborts the process when a kernel's name is 253 bytes or
//! longer: its kernel cache stores the compiled kernel as `<name>.so`, which
//! the file system refuses ("Final linking of kernel ... failed"), and DPC++
//! names kernels after their template arguments (dpnp's reach 280). Kernels
//! whose names are longer than [`LONGEST_KERNEL_NAME`] are renamed in the
//! module before translation ([`KernelAliases`]); the program creates them by
//! the new name and reports them by their own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use cl3::types::cl_device_id;
use cmdbuf_core::{Result, err};

/// The environment variable naming the translator to use.
pub const TRANSLATOR_ENV: &str = "UR_RS_LLVM_SPIRV";
/// The environment variable naming the clang that links the sub-group
/// built-ins into translated modules.
pub const CLANG_ENV: &str = "UR_RS_CLANG";
/// The built-ins such a device lacks, in OpenCL C.
const MISSING_BUILTINS: &str = include_str!("spir/missing_builtins.cl");
/// Their local memory, in LLVM IR, `ITEMS` words.
const WORK_GROUP_SCRATCH: &str = include_str!("spir/work_group_scratch.ll");
/// `CL_DEVICE_PLATFORM`.
const CL_DEVICE_PLATFORM: u32 = 0x1031;
/// `CL_PLATFORM_VERSION`.
const CL_PLATFORM_VERSION: u32 = 0x0901;

/// How SPIR-V reaches the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IlPath {
    /// `clCreateProgramWithIL`.
    Native,
    /// `llvm-spirv -r`, then SPIR 1.2 bitcode.
    Translate(Translator),
}

/// The longest kernel name a translated module keeps: PoCL 3.1 writes each
/// kernel to a file named after it (`<name>.so`, at most 255 bytes).
pub(crate) const LONGEST_KERNEL_NAME: usize = 200;

/// Kernels renamed in a translated module: their own name, and the one the
/// driver knows them by.
#[derive(Debug, Default)]
pub(crate) struct KernelAliases(std::collections::HashMap<String, String>);

impl KernelAliases {
    /// The name the driver knows kernel `name` by.
    pub(crate) fn driver_name<'a>(&'a self, name: &'a str) -> &'a str {
        self.0.get(name).map_or(name, String::as_str)
    }
}

/// `il` with every kernel named longer than [`LONGEST_KERNEL_NAME`] renamed
/// `cmdbuf_kernel_<n>` (its entry point and its debug name), and the names
/// given. A module that does not parse is returned as it is, for the
/// translator to refuse.
fn alias_long_kernel_names(il: &[u8]) -> (Vec<u8>, KernelAliases) {
    const OP_NAME: u32 = 5;
    const OP_ENTRY_POINT: u32 = 15;
    let mut aliases = KernelAliases::default();
    if !il.len().is_multiple_of(4) || il.len() < 20 {
        return (il.to_vec(), aliases);
    }
    let words: Vec<u32> = il.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    let mut renamed: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
    let mut out = words[..5].to_vec();
    let mut at = 5;
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        let Some(instruction) = words.get(at..at + count).filter(|_| count > 0) else {
            return (il.to_vec(), KernelAliases::default());
        };
        // The operand before the name: the entry point's function, or the
        // named id.
        let name_at = match opcode {
            OP_ENTRY_POINT => Some(3),
            OP_NAME => Some(2),
            _ => None,
        };
        let rewritten = name_at.and_then(|name_at| {
            let target = *instruction.get(name_at - 1)?;
            let (name, name_words) = literal_string(instruction.get(name_at..)?)?;
            let alias = match opcode {
                OP_ENTRY_POINT if name.len() > LONGEST_KERNEL_NAME => {
                    let alias = format!("cmdbuf_kernel_{}", aliases.0.len());
                    aliases.0.insert(name, alias.clone());
                    renamed.insert(target, alias.clone());
                    alias
                }
                OP_NAME => renamed.get(&target)?.clone(),
                _ => return None,
            };
            let mut operands = instruction[1..name_at].to_vec();
            operands.extend(encode_literal_string(&alias));
            operands.extend(&instruction[name_at + name_words..]);
            Some(operands)
        });
        match rewritten {
            Some(operands) => {
                out.push(((operands.len() as u32 + 1) << 16) | opcode);
                out.extend(operands);
            }
            None => out.extend(instruction),
        }
        at += count;
    }
    (out.iter().flat_map(|w| w.to_le_bytes()).collect(), aliases)
}

/// `il` with every function but the kernels marked to be inlined (SPIR-V's
/// `Inline` function control, which the translator makes `alwaysinline`), so
/// that linking inlines DPC++'s helpers, and the collectives they call, into
/// the kernels: PoCL gives a work-group its own copy of a local variable only
/// where the kernel's own body names it, and the collectives' scratch array is
/// one. A module that does not parse is returned as it is.
fn inline_every_function(il: &[u8]) -> Vec<u8> {
    const OP_ENTRY_POINT: u32 = 15;
    const OP_FUNCTION: u32 = 54;
    const INLINE: u32 = 0x1;
    const DONT_INLINE: u32 = 0x2;
    if !il.len().is_multiple_of(4) || il.len() < 20 {
        return il.to_vec();
    }
    let mut words: Vec<u32> = il.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    let mut kernels = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if count == 0 || at + count > words.len() {
            return il.to_vec();
        }
        match opcode {
            OP_ENTRY_POINT if count > 2 => kernels.push(words[at + 2]),
            // OpFunction result-type result-id control type.
            OP_FUNCTION if count == 5 && !kernels.contains(&words[at + 2]) => {
                words[at + 3] = (words[at + 3] & !DONT_INLINE) | INLINE;
            }
            _ => {}
        }
        at += count;
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A SPIR-V literal string at the start of `words`, and the words it takes.
fn literal_string(words: &[u32]) -> Option<(String, usize)> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0)?;
    Some((String::from_utf8(bytes[..end].to_vec()).ok()?, end / 4 + 1))
}

/// `s` as a SPIR-V literal string: nul-terminated, padded to whole words.
fn encode_literal_string(s: &str) -> Vec<u32> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
}

/// The tools that turn SPIR-V into SPIR 1.2 bitcode for a driver without IL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Translator {
    /// `llvm-spirv` of the driver's LLVM.
    llvm_spirv: PathBuf,
    /// `clang` of the driver's LLVM, when the device's kernel library lacks
    /// built-ins that must be linked in; `None` where the device has them or
    /// no such clang was found.
    builtin_linker: Option<PathBuf>,
    /// The device's largest work-group: the slots of the collectives'
    /// scratch memory.
    max_work_group_size: usize,
}

/// Whether an IL version string lists SPIR-V.
pub(crate) fn lists_spirv(il_version: Option<&str>) -> bool {
    il_version.is_some_and(|il| il.split_whitespace().any(|v| v.starts_with("SPIR-V")))
}

/// The LLVM major version a platform version string names (PoCL's
/// "... LLVM 15.0.6, ...").
fn llvm_major(platform_version: &str) -> Option<u32> {
    let at = platform_version.find("LLVM ")?;
    let digits: String = platform_version[at + 5..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn platform_version(device: cl_device_id) -> Option<String> {
    let platform = match cl3::device::get_device_info(device, CL_DEVICE_PLATFORM).ok()? {
        cl3::info_type::InfoType::Ptr(p) => p as cl3::types::cl_platform_id,
        _ => return None,
    };
    let bytes = cl3::platform::get_platform_data(platform, CL_PLATFORM_VERSION).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string())
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// The LLVM tool `tool` for a driver built on LLVM `major`: the path in
/// `env`, else `<tool>-<major>`, else `<tool>` when the LLVM version is
/// unknown.
fn llvm_tool(tool: &str, env: &str, major: Option<u32>) -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os(env) {
        let p = PathBuf::from(explicit);
        return p.is_file().then_some(p);
    }
    match major {
        Some(m) => on_path(&format!("{tool}-{m}")),
        None => on_path(tool),
    }
}

/// Whether the device's kernel library lacks the built-ins of
/// `spir/missing_builtins.cl`: a CPU device (one memory behind every address
/// space) without OpenCL 2.1's sub-groups or Intel's.
fn lacks_builtins(device: cl_device_id, extensions: &[String]) -> bool {
    const CL_DEVICE_TYPE: u32 = 0x1000;
    const CL_DEVICE_TYPE_CPU: u64 = 1 << 1;
    let cpu = matches!(
        cl3::device::get_device_info(device, CL_DEVICE_TYPE),
        Ok(cl3::info_type::InfoType::Ulong(t)) if t & CL_DEVICE_TYPE_CPU != 0
    );
    cpu && !extensions.iter().any(|e| e == "cl_khr_subgroups" || e == "cl_intel_subgroups")
}

/// How `device` builds SPIR-V kernels, if it can.
pub(crate) fn il_path(
    device: cl_device_id,
    il_version: Option<&str>,
    extensions: &[String],
    max_work_group_size: usize,
) -> Option<IlPath> {
    if lists_spirv(il_version) {
        return Some(IlPath::Native);
    }
    if !extensions.iter().any(|e| e == "cl_khr_spir") {
        return None;
    }
    let major = platform_version(device).as_deref().and_then(llvm_major);
    let llvm_spirv = llvm_tool("llvm-spirv", TRANSLATOR_ENV, major)?;
    let builtin_linker = if lacks_builtins(device, extensions) { llvm_tool("clang", CLANG_ENV, major) } else { None };
    tracing::debug!(
        ?major,
        translator = %llvm_spirv.display(),
        builtin_linker = ?builtin_linker,
        "device reads SPIR 1.2; SPIR-V goes through the translator"
    );
    Some(IlPath::Translate(Translator { llvm_spirv, builtin_linker, max_work_group_size }))
}

/// Whether a SPIR-V module may call what `spir/missing_builtins.cl` defines:
/// declares the capability of work-group or sub-group operations, generic
/// pointers or floating-point atomics, or a sub-group built-in variable.
/// DPC++ marks its modules so; a module that is not is translated alone.
fn needs_builtins(il: &[u8]) -> bool {
    const OP_CAPABILITY: u32 = 17;
    const OP_DECORATE: u32 = 71;
    const DECORATION_BUILT_IN: u32 = 11;
    // Groups, GenericPointer, GroupNonUniform and its seven siblings,
    // SubgroupBallotKHR, SubgroupShuffleINTEL, SubgroupBufferBlockIOINTEL,
    // SubgroupImageBlockIOINTEL, AtomicFloat{32,64}MinMaxEXT,
    // AtomicFloat{32,64}AddEXT, AtomicFloat16AddEXT.
    let capability = |c: u32| matches!(c, 18 | 38 | 61..=68 | 4423 | 5568..=5570 | 5612 | 5613 | 6033 | 6034 | 6095);
    // SubgroupSize to SubgroupLocalInvocationId, and the five sub-group masks.
    let built_in = |b: u32| matches!(b, 36..=41 | 4416..=4420);
    let words: Vec<u32> = il.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, opcode) = ((first >> 16) as usize, first & 0xffff);
        let operands = words.get(at + 1..at + count.max(1)).unwrap_or(&[]);
        match (opcode, operands) {
            (OP_CAPABILITY, [c, ..]) if capability(*c) => return true,
            (OP_DECORATE, [_, DECORATION_BUILT_IN, b, ..]) if built_in(*b) => return true,
            // Function bodies start after the annotations: nothing further
            // declares either.
            (54, _) => return false,
            _ => {}
        }
        if count == 0 {
            return false;
        }
        at += count;
    }
    false
}

impl Translator {
    /// Translates a SPIR-V module to SPIR 1.2 bitcode, with long kernel
    /// names aliased and the missing built-ins linked in where the device
    /// lacks them and the module may call them.
    pub(crate) fn to_bitcode(&self, il: &[u8]) -> Result<(Vec<u8>, KernelAliases)> {
        let (il, aliases) = alias_long_kernel_names(il);
        let il = &il[..];
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let stem = format!("ur-rs-spirv-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let dir = std::env::temp_dir();
        let file = |ext: &str| dir.join(format!("{stem}.{ext}"));
        let (input, translated, linked) = (file("spv"), file("bc"), file("linked.bc"));
        let (builtins, scratch_ir, scratch) = (file("cl"), file("ll"), file("scratch.bc"));
        let linker = self.builtin_linker.as_deref().filter(|_| needs_builtins(il));
        let inlined;
        let il = if linker.is_some() {
            inlined = inline_every_function(il);
            &inlined[..]
        } else {
            il
        };
        let result = (|| {
            write(&input, il)?;
            let mut translate = Command::new(&self.llvm_spirv);
            translate.arg("-r").arg(&input).arg("-o").arg(&translated);
            if linker.is_some() {
                // OpenCL C 2.0's names keep a sub-group barrier one
                // (`sub_group_barrier`, a no-op for one work-item; 1.2's make
                // it a work-group `barrier`, which DPC++'s sub-group loads
                // reach in divergent code) and name the generic atomics the
                // built-ins define.
                translate.arg("--spirv-target-env=CL2.0");
            }
            run(&mut translate, InvalidTranslation)?;
            let Some(clang) = linker else { return read(&translated) };
            write(&builtins, MISSING_BUILTINS.as_bytes())?;
            write(
                &scratch_ir,
                WORK_GROUP_SCRATCH.replace("ITEMS", &self.max_work_group_size.max(1).to_string()).as_bytes(),
            )?;
            let target = "--target=spir64-unknown-unknown";
            run(
                Command::new(clang)
                    .args([target, "-c", "-emit-llvm", "-x", "ir"])
                    .arg(&scratch_ir)
                    .arg("-o")
                    .arg(&scratch),
                LinkFailure,
            )?;
            // The built-ins are compiled for the translator's target and
            // pointer form (typed), and the translated module and the scratch
            // memory linked into them whole (`-mlink-bitcode-file` keeps the
            // kernels external); -O0 without `optnone` inlines what is marked
            // so and leaves the rest of the optimising to the driver, whose
            // kernel compiler does not take every form an optimised module
            // has ("Could not find a dominating alternative variable").
            run(
                Command::new(clang)
                    .args([target, "-x", "cl", "-cl-std=CL2.0", "-O0", "-emit-llvm", "-c"])
                    .args(["-Xclang", "-finclude-default-header", "-Xclang", "-disable-O0-optnone"])
                    .args(["-Xclang", "-no-opaque-pointers"])
                    .arg(&builtins)
                    .args(["-Xclang", "-mlink-bitcode-file", "-Xclang"])
                    .arg(&translated)
                    .args(["-Xclang", "-mlink-bitcode-file", "-Xclang"])
                    .arg(&scratch)
                    .arg("-o")
                    .arg(&linked),
                LinkFailure,
            )?;
            read(&linked)
        })();
        for f in [&input, &translated, &linked, &builtins, &scratch_ir, &scratch] {
            let _ = std::fs::remove_file(f);
        }
        result.map(|bitcode| (bitcode, aliases))
    }
}

/// What a failed tool run means.
#[derive(Clone, Copy)]
enum Failure {
    /// The translator refused the module: it is not SPIR-V it reads.
    InvalidTranslation,
    /// Linking the missing built-ins failed.
    LinkFailure,
}
use Failure::*;

fn run(command: &mut Command, failure: Failure) -> Result<()> {
    let tool = command.get_program().to_string_lossy().into_owned();
    let out = command.output().map_err(|e| err!(ProgramBuildFailure, "running {tool}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(match failure {
        InvalidTranslation => err!(InvalidBinary, "{tool} could not translate the SPIR-V: {}", stderr.trim()),
        LinkFailure => {
            err!(ProgramBuildFailure, "{tool} could not link the missing built-ins into the module: {}", stderr.trim())
        }
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| err!(OutOfHostMemory, "writing {}: {e}", path.display()))
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| err!(ProgramBuildFailure, "reading {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_llvm_version_of_pocl() {
        let v = "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG";
        assert_eq!(llvm_major(v), Some(15));
        assert_eq!(llvm_major("OpenCL 3.0 CUDA 12.8"), None);
        assert!(lists_spirv(Some("SPIR-V_1.0 SPIR-V_1.2")));
        assert!(!lists_spirv(Some("")));
        assert!(!lists_spirv(None));
    }

    fn module(instructions: &[&[u32]]) -> Vec<u8> {
        let mut words = vec![0x0723_0203, 0x0001_0000, 0, 100, 0];
        for i in instructions {
            words.push(((i.len() as u32) << 16) | i[0]);
            words.extend(&i[1..]);
        }
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn long_kernel_names_are_aliased_in_entry_points_and_names() {
        let long = "k".repeat(LONGEST_KERNEL_NAME + 1);
        let entry = |id: u32, name: &str| [&[15, 6, id][..], &encode_literal_string(name)[..]].concat();
        let named = |id: u32, name: &str| [&[5, id][..], &encode_literal_string(name)[..]].concat();
        let il =
            module(&[&entry(7, &long), &entry(8, "short"), &named(7, &long), &named(8, "short"), &[54, 1, 7, 0, 3]]);
        let (out, aliases) = alias_long_kernel_names(&il);
        assert_eq!(aliases.driver_name(&long), "cmdbuf_kernel_0");
        assert_eq!(aliases.driver_name("short"), "short");
        let expected = module(&[
            &entry(7, "cmdbuf_kernel_0"),
            &entry(8, "short"),
            &named(7, "cmdbuf_kernel_0"),
            &named(8, "short"),
            &[54, 1, 7, 0, 3],
        ]);
        assert_eq!(out, expected);
        // Nothing long: unchanged; not SPIR-V: unchanged, for the translator
        // to refuse.
        let short = module(&[&entry(8, "short")]);
        assert_eq!(alias_long_kernel_names(&short).0, short);
        assert_eq!(alias_long_kernel_names(&[1, 2, 3]).0, vec![1, 2, 3]);
    }

    #[test]
    fn every_function_but_the_kernels_is_inlined() {
        let entry = [&[15, 6, 7][..], &encode_literal_string("k")[..]].concat();
        // A kernel (%7), a helper that asked not to be inlined (%8), one
        // without control (%9).
        let il = module(&[&entry, &[54, 1, 7, 0, 3], &[56], &[54, 1, 8, 2, 3], &[56], &[54, 1, 9, 0, 3], &[56]]);
        let expected = module(&[&entry, &[54, 1, 7, 0, 3], &[56], &[54, 1, 8, 1, 3], &[56], &[54, 1, 9, 1, 3], &[56]]);
        assert_eq!(inline_every_function(&il), expected);
        assert_eq!(inline_every_function(&[1, 2, 3]), vec![1, 2, 3]);
    }

    #[test]
    fn finds_sub_groups_in_capabilities_and_built_ins_only() {
        // OpCapability Kernel, Addresses; OpDecorate %5 BuiltIn
        // GlobalInvocationId; OpFunction.
        let plain: &[&[u32]] = &[&[17, 6], &[17, 4], &[71, 5, 11, 28], &[54, 1, 2, 0, 3]];
        assert!(!needs_builtins(&module(plain)));
        assert!(needs_builtins(&module(&[&[17, 6], &[17, 5568]])), "SubgroupShuffleINTEL");
        assert!(needs_builtins(&module(&[&[17, 6], &[17, 61]])), "GroupNonUniform");
        assert!(needs_builtins(&module(&[&[17, 6], &[71, 5, 11, 36]])), "BuiltIn SubgroupSize");
        // Past the first function nothing declares either.
        assert!(!needs_builtins(&module(&[&[54, 1, 2, 0, 3], &[17, 18]])));
        assert!(!needs_builtins(&[1, 2, 3]));
    }
}
