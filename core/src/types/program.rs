//! What a program is made from: kernel signatures and the kernels' code in
//! several source forms ([`ProgramBundle`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::err;
use crate::types::error::Result;
use crate::types::native::NativeKernel;
use crate::types::{cpu_table, ptx, spirv};

/// The kind of one kernel argument.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A global-memory pointer: given as a USM pointer or a memory buffer.
    Global,
    /// A value of exactly this many bytes.
    Value(usize),
    /// Work-group local memory, whose size is given at launch.
    Local,
    /// A by-value argument whose size only the driver knows: an argument of
    /// a kernel adopted from a native object whose driver names its address
    /// space (OpenCL's `clGetKernelArgInfo`: private) but not its type's
    /// size. A launch gives bytes (not empty); the driver checks their size.
    AnyValue,
    /// An argument whose kind only the driver knows: a kernel adopted from a
    /// native object whose driver reports its argument count but not its
    /// arguments (OpenCL without `-cl-kernel-arg-info`). Each launch's own
    /// kind is taken, as UR's launch gives it (`ur_exp_kernel_arg_type_t`),
    /// and the driver checks it when the argument is set.
    Unknown,
}

impl ArgKind {
    /// Whether the front end knows this argument's kind and size exactly
    /// (it was declared or read from the kernel's code).
    pub fn is_exact(self) -> bool {
        !matches!(self, ArgKind::AnyValue | ArgKind::Unknown)
    }
}

/// A kernel's preferred split between local memory and data cache
/// (`urKernelSetExecInfo(UR_KERNEL_EXEC_INFO_CACHE_CONFIG)`): a hint, which
/// backends with such a split apply ([`Kernel::set_cache_config`](crate::Kernel::set_cache_config)).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum CacheConfig {
    /// The driver's default split.
    #[default]
    Default,
    /// More work-group local memory (UR's `LARGE_SLM`).
    LargeLocalMemory,
    /// More data cache (UR's `LARGE_DATA`).
    LargeData,
}

/// A kernel's name and argument kinds.
///
/// A signature is declared (in a [`ProgramBundle`]), read from the kernel's
/// code ([`ProgramBundle::from_il`], [`ProgramBundle::from_binary`]), or,
/// for a kernel adopted from a native object ([`crate::adopt`]), derived
/// from what the driver reports: the argument count always, each kind
/// where the driver tells it, else [`ArgKind::AnyValue`] or
/// [`ArgKind::Unknown`], for which the launch's own kinds stand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelSignature {
    /// The kernel's name, as in its sources.
    pub name: Cow<'static, str>,
    /// Its arguments, in order.
    pub args: Vec<ArgKind>,
    /// The work-group size the kernel requires (OpenCL's
    /// `reqd_work_group_size`, SPIR-V `LocalSize`, PTX `.reqntid`), if any:
    /// launches must use exactly this local size.
    pub reqd_work_group_size: Option<[usize; 3]>,
    /// The largest work-group size the kernel declares it runs
    /// (SPIR-V `MaxWorkgroupSizeINTEL`, DPC++'s `max_work_group_size`), if any.
    pub max_work_group_size: Option<[usize; 3]>,
    /// The sub-group size the kernel requires (SPIR-V `SubgroupSize`,
    /// OpenCL C's `intel_reqd_sub_group_size`), if any.
    pub reqd_sub_group_size: Option<u32>,
    /// The number of sub-groups per work-group the kernel requires (SPIR-V
    /// `SubgroupsPerWorkgroup`), if any.
    pub reqd_num_sub_groups: Option<u32>,
    /// The arguments (by index) that also take a local-memory size: 32-bit
    /// integer parameters of plain CUDA kernels read from PTX, which is how
    /// DPC++ lowers a local accessor (its byte offset into the work-group's
    /// dynamic shared memory, docs/cuda.md "Plain kernels from PTX").
    /// Empty for every other kernel.
    pub local_offset_args: Vec<usize>,
}

impl KernelSignature {
    /// A signature from a name and argument kinds.
    pub fn new(name: impl Into<Cow<'static, str>>, args: impl Into<Vec<ArgKind>>) -> KernelSignature {
        KernelSignature {
            name: name.into(),
            args: args.into(),
            reqd_work_group_size: None,
            max_work_group_size: None,
            reqd_sub_group_size: None,
            reqd_num_sub_groups: None,
            local_offset_args: Vec::new(),
        }
    }

    /// The same signature requiring work-group size `size`.
    pub fn with_reqd_work_group_size(mut self, size: [usize; 3]) -> KernelSignature {
        self.reqd_work_group_size = Some(size);
        self
    }
}

/// A source form a program can be given in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceForm {
    /// Rust functions or C entry points (the CPU adapter).
    Native,
    /// OpenCL C source.
    OpenClC,
    /// A SPIR-V module of OpenCL kernels (execution model `Kernel`).
    SpirvKernel,
    /// SPIR-V compute shaders with this project's Vulkan kernel ABI.
    SpirV,
    /// PTX assembly.
    Ptx,
    /// CUDA C source, compiled with NVRTC.
    CudaC,
}

impl fmt::Display for SourceForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SourceForm::Native => "native Rust",
            SourceForm::OpenClC => "OpenCL C",
            SourceForm::SpirvKernel => "SPIR-V kernels",
            SourceForm::SpirV => "SPIR-V",
            SourceForm::Ptx => "PTX",
            SourceForm::CudaC => "CUDA C",
        })
    }
}

/// One SPIR-V module implementing one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpirvModule {
    /// The kernel it implements.
    pub kernel: Cow<'static, str>,
    /// The module's words.
    pub words: Cow<'static, [u32]>,
}

/// The code of a program's kernels in one form.
#[derive(Clone, Debug)]
pub enum ProgramSource {
    /// Rust functions, one per kernel.
    Native(Vec<NativeKernel>),
    /// OpenCL C source holding every kernel.
    OpenClC(Cow<'static, str>),
    /// A SPIR-V module of OpenCL kernels holding every kernel, as bytes.
    Il(Cow<'static, [u8]>),
    /// SPIR-V modules, one per kernel.
    SpirV(Vec<SpirvModule>),
    /// PTX holding every kernel.
    Ptx(Cow<'static, str>),
    /// CUDA C holding every kernel (`extern "C" __global__`).
    CudaC(Cow<'static, str>),
}

impl ProgramSource {
    /// The form of this source.
    pub fn form(&self) -> SourceForm {
        match self {
            ProgramSource::Native(_) => SourceForm::Native,
            ProgramSource::OpenClC(_) => SourceForm::OpenClC,
            ProgramSource::Il(_) => SourceForm::SpirvKernel,
            ProgramSource::SpirV(_) => SourceForm::SpirV,
            ProgramSource::Ptx(_) => SourceForm::Ptx,
            ProgramSource::CudaC(_) => SourceForm::CudaC,
        }
    }
}

/// The kernels of a program: signatures plus code in one or more forms.
///
/// ```
/// use cmdbuf::{ArgKind, KernelSignature, NativeKernel, ProgramBundle, ProgramSource, WorkGroup};
/// fn zero(g: &WorkGroup<'_>) {
///     let out = g.ptr::<u32>(0);
///     for item in g.items() {
///         // SAFETY: the launch passes an allocation of global_size u32s.
///         unsafe { *out.add(item.global_linear_id()) = 0 };
///     }
/// }
/// let bundle = ProgramBundle::new()
///     .kernel(KernelSignature::new("zero", [ArgKind::Global]))
///     .source(ProgramSource::Native(vec![NativeKernel::new("zero", zero)]));
/// assert!(bundle.signature("zero").is_some());
/// ```
#[derive(Clone, Debug, Default)]
pub struct ProgramBundle {
    pub(crate) kernels: Vec<KernelSignature>,
    sources: Vec<ProgramSource>,
    pub(crate) given: Option<Arc<[u8]>>,
    plain_abi: bool,
    label: Option<&'static str>,
}

impl ProgramBundle {
    /// An empty bundle.
    pub fn new() -> ProgramBundle {
        ProgramBundle::default()
    }

    /// Declares a kernel.
    pub fn kernel(mut self, signature: KernelSignature) -> ProgramBundle {
        self.kernels.push(signature);
        self
    }

    /// Adds the kernels' code in one form.
    pub fn source(mut self, source: ProgramSource) -> ProgramBundle {
        self.sources.push(source);
        self
    }

    /// Names the programs built from this bundle, for diagnostics: the label
    /// is shown in the tracing spans of their build and kernel creation
    /// (`Program::label`).
    pub fn with_label(mut self, label: &'static str) -> ProgramBundle {
        self.label = Some(label);
        self
    }

    /// The label given by [`with_label`](Self::with_label).
    pub fn label(&self) -> Option<&'static str> {
        self.label
    }

    /// The declared kernels.
    pub fn signatures(&self) -> &[KernelSignature] {
        &self.kernels
    }

    /// The signature of kernel `name`.
    pub fn signature(&self, name: &str) -> Option<&KernelSignature> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The source of the given form, when present.
    pub fn source_of(&self, form: SourceForm) -> Option<&ProgramSource> {
        self.sources.iter().find(|s| s.form() == form)
    }

    /// The forms present.
    pub fn forms(&self) -> Vec<SourceForm> {
        self.sources.iter().map(ProgramSource::form).collect()
    }

    /// The bytes the bundle was read from ([`from_il`](Self::from_il),
    /// [`from_binary`](Self::from_binary)), if it was.
    pub fn given_bytes(&self) -> Option<&[u8]> {
        self.given.as_deref()
    }

    /// Whether the kernels are the backend's plain kernels, with exactly the
    /// parameters read from their code: PTX given as a binary has no hidden
    /// launch parameter of this project's CUDA kernel ABI.
    pub fn plain_abi(&self) -> bool {
        self.plain_abi
    }

    /// A SPIR-V module (UR's IL). Reads its entry points and their
    /// parameters: execution model `Kernel` (OpenCL flavour, built by OpenCL
    /// adapters) or `GLCompute` (this project's Vulkan kernel ABI,
    /// docs/vulkan.md, one [`SpirvModule`] per entry point), or none in a
    /// module of the OpenCL memory model (a library to link). `InvalidBinary`
    /// when it is not SPIR-V or cannot be read, `UnsupportedFeature` when a
    /// kernel takes arguments this project cannot pass (images, samplers).
    pub fn from_il(il: &[u8]) -> Result<ProgramBundle> {
        let entries = spirv::entry_points(il)?;
        let mut bundle = ProgramBundle { given: Some(il.into()), ..ProgramBundle::default() };
        let mut modules = Vec::new();
        // No entry point: an OpenCL library, to compile and link with others.
        let mut opencl = entries.is_empty();
        for entry in entries {
            match entry.model {
                spirv::ExecutionModel::Kernel => opencl = true,
                spirv::ExecutionModel::GlCompute => {
                    let words = spirv::words(il)?;
                    modules.push(SpirvModule { kernel: entry.signature.name.clone(), words: words.into() });
                }
            }
            bundle.kernels.push(entry.signature);
        }
        if opencl {
            bundle.sources.push(ProgramSource::Il(Cow::Owned(il.to_vec())));
        }
        if !modules.is_empty() {
            bundle.sources.push(ProgramSource::SpirV(modules));
        }
        Ok(bundle)
    }

    /// A device binary whose format is detected: this project's CPU kernel
    /// table (adapter-cpu/include/ur_rs_cpu.h), PTX text, or SPIR-V (as
    /// [`from_il`](Self::from_il)). `InvalidBinary` for anything else.
    ///
    /// # Safety
    /// A CPU kernel table holds pointers (names, argument lists, entry
    /// points) that must be valid for the life of every program built from
    /// the bundle, and entry points that follow the C kernel ABI for the
    /// arguments the table declares.
    pub unsafe fn from_binary(bytes: &[u8]) -> Result<ProgramBundle> {
        if cpu_table::is_table(bytes) {
            // SAFETY: the bytes are a CPU kernel table whose pointers and entry points are valid as
            // its header describes (this function's `# Safety`), what `cpu_table::read` requires.
            let kernels = unsafe { cpu_table::read(bytes)? };
            let (signatures, code): (Vec<_>, Vec<_>) = kernels.into_iter().unzip();
            return Ok(ProgramBundle {
                kernels: signatures,
                sources: vec![ProgramSource::Native(code)],
                given: Some(bytes.into()),
                plain_abi: true,
                label: None,
            });
        }
        if spirv::is_spirv(bytes) {
            return ProgramBundle::from_il(bytes);
        }
        if ptx::is_ptx(bytes) {
            let kernels = ptx::entry_points(bytes)?;
            let text = std::str::from_utf8(bytes.strip_suffix(&[0]).unwrap_or(bytes))
                .map_err(|_| err!(InvalidBinary, "the PTX is not UTF-8 text"))?;
            return Ok(ProgramBundle {
                kernels,
                sources: vec![ProgramSource::Ptx(Cow::Owned(text.to_string()))],
                given: Some(bytes.into()),
                plain_abi: true,
                label: None,
            });
        }
        let head: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
        Err(err!(
            InvalidBinary,
            "the binary ({} bytes, starting {}) is neither a CPU kernel table, PTX nor SPIR-V",
            bytes.len(),
            head.join(" ")
        ))
    }
}
