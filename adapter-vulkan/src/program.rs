//! Programs of SPIR-V compute shaders, kernels, the argument ABI and the
//! pipeline cache.
//!
//! # The kernel ABI
//!
//! A kernel is a SPIR-V module with one `GLCompute` entry point. It has no
//! descriptor sets: its push constants are 8 bytes, the device address of its
//! *argument block*, which it reads through `GL_EXT_buffer_reference`:
//!
//! | bytes | field |
//! |---|---|
//! | 0..12 | `uvec3` work-group counts (the `VkDispatchIndirectCommand` of the launch) |
//! | 12..16 | `uint` work dimension |
//! | 16..28 | `uvec3` global size |
//! | 32..44 | `uvec3` global offset |
//! | 48..56 | device address of the launch's status word (`uint`) |
//! | 64.. | the arguments, in signature order |
//!
//! Each argument starts at an offset aligned to 8 bytes (16 for values of
//! more than 8 bytes): a global pointer (USM pointer or memory buffer) is its
//! 8-byte device address, null allowed; a value is its bytes. Local-memory
//! arguments take no bytes in the block: the size in bytes of argument `i` is
//! specialization constant `100 + i`, with which the kernel sizes a `shared`
//! array. The local size is specialization constants 0, 1 and 2
//! (`local_size_x_id = 0` ...). The global id is `gl_GlobalInvocationID`
//! plus the global offset; kernels must take the global size from the block,
//! not from `gl_NumWorkGroups` (large launches are split into several
//! dispatches with base group ids).
//!
//! A kernel fails its launch by setting the status word to a non-zero code
//! (atomically, from any work-item): the launch's event then reports
//! `AdapterSpecific` with the code. Sizes and offsets are 32-bit in the
//! ABI; a launch beyond that is rejected.
//!
//! Each (kernel, local size, local-memory sizes) is one pipeline, created on
//! first use and cached with the module, so kernels of one program share them.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Arc;

use ash::vk;
use cmdbuf_core::adapter::prelude::*;
use cmdbuf_core::{ArgKind, KernelSignature, NdRange, ProgramSource};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::conv::{VkResultExt, vk_error};
use crate::gpu::Gpu;
use crate::memory::mem_buffer;

/// Bytes of the argument block's header.
pub(crate) const HEADER_BYTES: u32 = 64;
/// Offset of the status word's address in the header.
const STATUS_OFFSET: usize = 48;
/// The specialization constant id of local-memory argument 0's size.
pub(crate) const LOCAL_SPEC_BASE: u32 = 100;

/// A pipeline, destroyed when the last command buffer using it is done.
pub(crate) struct Pipeline {
    gpu: Arc<Gpu>,
    raw: vk::Pipeline,
}

impl Pipeline {
    pub(crate) fn raw(&self) -> vk::Pipeline {
        self.raw
    }

    /// A compute pipeline of `module`'s `entry` with specialization
    /// constants `(id, value)`.
    pub(crate) fn new(
        gpu: &Arc<Gpu>,
        module: vk::ShaderModule,
        entry: &std::ffi::CStr,
        constants: &[(u32, u32)],
    ) -> Result<Arc<Pipeline>> {
        crate::exit::check()?;
        let entries: SmallVec<[vk::SpecializationMapEntry; 8]> = constants
            .iter()
            .enumerate()
            .map(|(i, (id, _))| vk::SpecializationMapEntry { constant_id: *id, offset: (i * 4) as u32, size: 4 })
            .collect();
        let data: SmallVec<[u8; 32]> = constants.iter().flat_map(|(_, v)| v.to_le_bytes()).collect();
        let spec = vk::SpecializationInfo::default().map_entries(&entries).data(&data);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(entry)
            .specialization_info(&spec);
        let info = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(gpu.layout)
            .flags(vk::PipelineCreateFlags::DISPATCH_BASE)];
        // SAFETY: the module and layout are valid; the structures live across the call.
        let raw = unsafe { gpu.device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) }
            .map_err(|(_, e)| pipeline_error(e))?[0];
        // Building the first pipelines may load the driver's compiler.
        crate::exit::after_driver_loads();
        Ok(Arc::new(Pipeline { gpu: gpu.clone(), raw }))
    }
}

fn pipeline_error(e: vk::Result) -> cmdbuf_core::UrError {
    match e {
        // A driver that runs out of memory compiling usually hit a limit
        // (shared memory, registers) of the kernel.
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
            cmdbuf_core::UrError::OutOfResources(vk_error(e, "vkCreateComputePipelines").detail().clone())
        }
        _ => cmdbuf_core::UrError::ProgramBuildFailure(vk_error(e, "vkCreateComputePipelines").detail().clone()),
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        // SAFETY: every command buffer recording this pipeline holds an `Arc`
        // of it, so none that is pending uses it.
        unsafe { self.gpu.device.destroy_pipeline(self.raw, None) };
    }
}

/// The `GLCompute` entry point of a SPIR-V module that implements `kernel`:
/// the one of that name (a module read by `ProgramBundle::from_il` may hold
/// several), else the first (the library's modules name theirs `main`).
pub(crate) fn compute_entry(words: &[u32], kernel: &str) -> std::result::Result<String, String> {
    const MAGIC: u32 = 0x0723_0203;
    const OP_ENTRY_POINT: u32 = 15;
    const GL_COMPUTE: u32 = 5;
    if words.len() < 5 || words[0] != MAGIC {
        return Err("not a SPIR-V module (bad magic number)".into());
    }
    let mut first = None;
    let mut at = 5;
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if count == 0 || at + count > words.len() {
            return Err(format!("malformed instruction at word {at}"));
        }
        if opcode == OP_ENTRY_POINT && count >= 4 && words[at + 1] == GL_COMPUTE {
            let bytes: Vec<u8> = words[at + 3..at + count].iter().flat_map(|w| w.to_le_bytes()).collect();
            let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
            let name =
                String::from_utf8(bytes[..end].to_vec()).map_err(|_| "entry point name is not UTF-8".to_string())?;
            if name == kernel {
                return Ok(name);
            }
            first.get_or_insert(name);
        }
        at += count;
    }
    first.ok_or_else(|| "no GLCompute entry point".into())
}

/// Where each argument goes in the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgLayout {
    /// Offset of each argument; `None` for local memory.
    offsets: Vec<Option<u32>>,
    /// Bytes of the whole block, a multiple of 16.
    size: u32,
}

impl ArgLayout {
    pub(crate) fn new(kinds: &[ArgKind]) -> ArgLayout {
        let mut at = HEADER_BYTES;
        let offsets = kinds
            .iter()
            .map(|kind| match kind {
                ArgKind::Global => {
                    at = at.next_multiple_of(8);
                    at += 8;
                    Some(at - 8)
                }
                ArgKind::Value(n) => {
                    let n = *n as u32;
                    at = at.next_multiple_of(if n > 8 { 16 } else { 8 });
                    at += n;
                    Some(at - n)
                }
                // Refused at kernel creation (`exact_kinds`): the block
                // cannot be laid out without each argument's kind.
                ArgKind::Local | ArgKind::AnyValue | ArgKind::Unknown => None,
            })
            .collect();
        ArgLayout { offsets, size: at.next_multiple_of(16) }
    }

    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    /// Writes the argument block of `launch` into `out` (at least `size()`
    /// bytes); `status` is the address of the launch's status word.
    pub(crate) fn write(&self, launch: &KernelCommand, status: u64, out: &mut [u8]) -> Result<()> {
        let header = header(&launch.range)?;
        for (i, v) in header.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        out[STATUS_OFFSET..STATUS_OFFSET + 8].copy_from_slice(&status.to_le_bytes());
        for (arg, offset) in launch.args.iter().zip(&self.offsets) {
            let Some(offset) = offset else { continue };
            let at = *offset as usize;
            match arg {
                ArgValue::Value(bytes) => out[at..at + bytes.len()].copy_from_slice(bytes),
                ArgValue::Pointer(p) => out[at..at + 8].copy_from_slice(&p.addr().to_le_bytes()),
                ArgValue::MemObj(b) => {
                    let address = mem_buffer(b)?.address() + b.offset() as u64;
                    out[at..at + 8].copy_from_slice(&address.to_le_bytes());
                }
                ArgValue::Local(_) => {}
            }
        }
        Ok(())
    }
}

/// The work-group counts of a range (zero when the launch is empty).
pub(crate) fn group_counts(range: &NdRange) -> Result<[u32; 3]> {
    let mut out = [0u32; 3];
    for (d, count) in out.iter_mut().enumerate() {
        let n = range.global_size[d] / range.local_size[d];
        *count = u32::try_from(n).map_err(|_| err!(InvalidWorkGroupSize, "{n} work-groups in dimension {d}"))?;
    }
    Ok(out)
}

/// The 12 words of the block header.
fn header(range: &NdRange) -> Result<[u32; 12]> {
    let groups = group_counts(range)?;
    let word = |v: usize, what: &str| {
        u32::try_from(v).map_err(|_| err!(InvalidValue, "{what} {v} exceeds the 32 bits of the Vulkan kernel ABI"))
    };
    let mut h = [0u32; 12];
    h[..3].copy_from_slice(&groups);
    h[3] = range.work_dim;
    for d in 0..3 {
        h[4 + d] = word(range.global_size[d], "global size")?;
        h[8 + d] = word(range.global_offset[d], "global offset")?;
        word(range.global_size[d] + range.global_offset[d], "global size plus offset")?;
    }
    Ok(h)
}

/// A shader module and the pipelines made from it.
struct Module {
    gpu: Arc<Gpu>,
    raw: vk::ShaderModule,
    entry: CString,
    /// Looked up at every launch: FxHash, as the key is a few small
    /// integers that no one outside chooses to collide (SipHash cost about
    /// 300 instructions per eager launch).
    pipelines: Mutex<FxHashMap<PipelineKey, Arc<Pipeline>>>,
}

/// What specializes a kernel's pipeline.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PipelineKey {
    local: [u32; 3],
    /// `(argument index, bytes)` of each local-memory argument.
    locals: SmallVec<[(u32, u32); 2]>,
}

impl Drop for Module {
    fn drop(&mut self) {
        if crate::exit::driver_gone() {
            return;
        }
        // SAFETY: pipelines no longer need their module once created, and
        // nothing else uses it.
        unsafe { self.gpu.device.destroy_shader_module(self.raw, None) };
    }
}

/// A built program: one shader module per kernel.
pub(crate) struct VkProgram {
    modules: HashMap<String, Arc<Module>>,
    max_group: usize,
}

impl VkProgram {
    pub(crate) fn new(gpu: &Arc<Gpu>, bundle: &ProgramBundle, max_group: usize) -> Result<VkProgram> {
        let Some(ProgramSource::SpirV(sources)) = bundle.source_of(cmdbuf_core::SourceForm::SpirV) else {
            return Err(err!(InvalidBinary, "the Vulkan adapter builds SPIR-V only"));
        };
        crate::exit::check()?;
        let mut modules = HashMap::new();
        for source in sources {
            let entry = compute_entry(&source.words, &source.kernel)
                .map_err(|why| err!(InvalidBinary, "SPIR-V of kernel `{}`: {why}", source.kernel))?;
            let info = vk::ShaderModuleCreateInfo::default().code(&source.words);
            // SAFETY: the words are a SPIR-V module (magic number and
            // instruction stream checked above; the driver validates the rest).
            let raw = unsafe { gpu.device.create_shader_module(&info, None) }.map_err(|e| {
                cmdbuf_core::UrError::ProgramBuildFailure(vk_error(e, "vkCreateShaderModule").detail().clone())
            })?;
            let entry = CString::new(entry).map_err(|_| err!(InvalidBinary, "entry point name with a NUL byte"))?;
            let module = Module { gpu: gpu.clone(), raw, entry, pipelines: Mutex::default() };
            modules.insert(source.kernel.to_string(), Arc::new(module));
        }
        tracing::debug!(kernels = modules.len(), "SPIR-V program built");
        Ok(VkProgram { modules, max_group })
    }
}

impl ProgramImpl for VkProgram {
    unsafe fn create_kernel(&self, signature: &KernelSignature) -> Result<Box<dyn KernelImpl>> {
        let module = self.modules.get(&*signature.name).ok_or_else(|| {
            err!(InvalidKernelName, "the program's SPIR-V has no module for kernel `{}`", signature.name)
        })?;
        if let Some(i) = signature.args.iter().position(|k| !k.is_exact()) {
            return Err(err!(
                InvalidValue,
                "argument {i} of `{}` is declared {:?}: the Vulkan kernel ABI lays out each argument by its kind and size",
                signature.name,
                signature.args[i]
            ));
        }
        Ok(Box::new(VkKernel {
            module: module.clone(),
            layout: ArgLayout::new(&signature.args),
            max_group: self.max_group,
        }))
    }
}

/// A kernel: its module, the layout of its argument block.
pub(crate) struct VkKernel {
    module: Arc<Module>,
    pub(crate) layout: ArgLayout,
    max_group: usize,
}

impl KernelImpl for VkKernel {
    fn max_work_group_size(&self) -> usize {
        self.max_group
    }
}

impl VkKernel {
    /// The pipeline for `launch`'s local size and local-memory sizes.
    pub(crate) fn pipeline(&self, launch: &KernelCommand) -> Result<Arc<Pipeline>> {
        let local = launch.range.local_size.map(|l| l as u32);
        let locals = launch
            .args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| match a {
                ArgValue::Local(n) => Some((i as u32, u32::try_from(*n).unwrap_or(u32::MAX))),
                _ => None,
            })
            .collect();
        let key = PipelineKey { local, locals };
        let m = &self.module;
        if let Some(p) = m.pipelines.lock().get(&key) {
            return Ok(p.clone());
        }
        let mut constants: SmallVec<[(u32, u32); 8]> = (0..3).map(|d| (d, key.local[d as usize])).collect();
        constants.extend(key.locals.iter().map(|(i, n)| (LOCAL_SPEC_BASE + i, *n)));
        let pipeline = Pipeline::new(&m.gpu, m.raw, &m.entry, &constants)?;
        tracing::debug!(local = ?key.local, locals = ?key.locals, "kernel pipeline created");
        Ok(m.pipelines.lock().entry(key).or_insert(pipeline).clone())
    }

    /// The length of the kernel's argument blocks.
    pub(crate) fn block_len(&self) -> usize {
        self.layout.size() as usize
    }

    /// The argument block of `launch`, whose status word is at `status`.
    pub(crate) fn block(&self, launch: &KernelCommand, status: u64) -> Result<ArgBlock> {
        let mut out = SmallVec::from_elem(0u8, self.layout.size() as usize);
        self.layout.write(launch, status, &mut out)?;
        Ok(out)
    }
}

/// A kernel launch's argument block ([`VkKernel::block`]).
pub(crate) type ArgBlock = SmallVec<[u8; 128]>;

/// Creates a shader module for internal shaders.
pub(crate) fn internal_module(gpu: &Arc<Gpu>, words: &[u32]) -> Result<vk::ShaderModule> {
    let info = vk::ShaderModuleCreateInfo::default().code(words);
    // SAFETY: the words are the adapter's own validated SPIR-V.
    unsafe { gpu.device.create_shader_module(&info, None) }.vk("vkCreateShaderModule")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_header_aligned() {
        let g = ArgKind::Global;
        let l = ArgLayout::new(&[g, ArgKind::Value(4), g, g]);
        assert_eq!(l.offsets, vec![Some(64), Some(72), Some(80), Some(88)]);
        assert_eq!(l.size(), 96);
        let l = ArgLayout::new(&[ArgKind::Local, ArgKind::Local, g, ArgKind::Value(4)]);
        assert_eq!(l.offsets, vec![None, None, Some(64), Some(72)]);
        assert_eq!(l.size(), 80);
        let l = ArgLayout::new(&[ArgKind::Value(1), ArgKind::Value(12), ArgKind::Value(2)]);
        assert_eq!(l.offsets, vec![Some(64), Some(80), Some(96)]);
        assert_eq!(l.size(), 112);
        assert_eq!(ArgLayout::new(&[]).size(), 64);
    }

    #[test]
    fn entry_points_are_found() {
        let fill = crate::shaders::words(crate::shaders::FILL_SPV);
        assert_eq!(compute_entry(&fill, "fill").as_deref(), Ok("main"));
        assert!(compute_entry(&[1, 2, 3, 4, 5], "k").is_err());
        assert!(compute_entry(&[0x0723_0203, 0, 0, 0, 0, 0x0004_000f], "k").is_err());
        let named =
            cmdbuf_core::spirv::words(include_bytes!("../../conformance/src/kernels/programs/scale_add.spv")).unwrap();
        assert_eq!(compute_entry(&named, "scale_add").as_deref(), Ok("scale_add"));
    }

    #[test]
    fn header_rejects_what_32_bits_cannot_hold() {
        let range = NdRange { work_dim: 1, global_size: [8, 1, 1], local_size: [4, 1, 1], global_offset: [2, 0, 0] };
        let h = header(&range).unwrap();
        assert_eq!(h, [2, 1, 1, 1, 8, 1, 1, 0, 2, 0, 0, 0]);
        let big = NdRange { global_offset: [u32::MAX as usize, 0, 0], ..range };
        assert!(header(&big).is_err());
    }
}
