//! Programs and kernels.
//!
//! A program is created from a [`ProgramBundle`]: the signatures of its
//! kernels, declared once, and the kernels' code in as many source forms as
//! the application wants to support (native Rust functions, OpenCL C, SPIR-V,
//! PTX, CUDA C). Each adapter builds the form it prefers among those present,
//! or fails with `InvalidBinary` naming the forms it accepts.
//!
//! Declaring signatures in the bundle lets the front end check every launch
//! and update (argument count, kinds, value sizes) the same way on every
//! backend, including those whose drivers cannot describe their kernels.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::adapter::{KernelImpl, ProgramImpl};
use crate::context::Context;
use crate::error::Result;
use crate::native::NativeKernel;
use crate::{cpu_table, ptx, spirv};
use crate::{ensure, err};

/// The kind of one kernel argument.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A global-memory pointer: given as a USM pointer or a memory buffer.
    Global,
    /// A value of exactly this many bytes.
    Value(usize),
    /// Work-group local memory, whose size is given at launch.
    Local,
}

/// A kernel's name and argument kinds.
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
}

impl KernelSignature {
    /// A signature from a name and argument kinds.
    pub fn new(name: impl Into<Cow<'static, str>>, args: impl Into<Vec<ArgKind>>) -> KernelSignature {
        KernelSignature { name: name.into(), args: args.into(), reqd_work_group_size: None }
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
/// use ur_core::{ArgKind, KernelSignature, NativeKernel, ProgramBundle, ProgramSource, WorkGroup};
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
    kernels: Vec<KernelSignature>,
    sources: Vec<ProgramSource>,
    given: Option<Arc<[u8]>>,
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
    /// ([`Program::label`]).
    pub fn with_label(mut self, label: &'static str) -> ProgramBundle {
        self.label = Some(label);
        self
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
    /// docs/vulkan.md, one [`SpirvModule`] per entry point). `InvalidBinary`
    /// when it is not SPIR-V or cannot be read, `UnsupportedFeature` when a
    /// kernel takes arguments this project cannot pass (images, samplers).
    pub fn from_il(il: &[u8]) -> Result<ProgramBundle> {
        let entries = spirv::entry_points(il)?;
        let mut bundle = ProgramBundle { given: Some(il.into()), ..ProgramBundle::default() };
        let mut modules = Vec::new();
        let mut opencl = false;
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
            // SAFETY: forwarded from this function's contract.
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

/// A program built for a context. Clone retains, drop releases.
#[derive(Clone)]
pub struct Program {
    inner: Arc<ProgramInner>,
}

struct ProgramInner {
    context: Context,
    signatures: Vec<KernelSignature>,
    form: SourceForm,
    options: String,
    given: Option<Arc<[u8]>>,
    label: Option<&'static str>,
    imp: Box<dyn ProgramImpl>,
    _live: crate::live::Live<{ crate::live::PROGRAM }>,
}

impl Program {
    /// Builds the bundle for the context's device, from the first form in the
    /// device's order of preference that the bundle holds.
    pub fn new(context: &Context, bundle: &ProgramBundle) -> Result<Program> {
        Program::with_options(context, bundle, "")
    }

    /// As [`new`](Self::new), passing `options` to the driver's compiler:
    /// OpenCL build options, PTX JIT where meaningful. Backends without a
    /// compiler taking options ignore them (with a debug trace).
    #[tracing::instrument(level = "debug", skip_all, fields(device = %context.device(), label = bundle.label))]
    pub fn with_options(context: &Context, bundle: &ProgramBundle, options: &str) -> Result<Program> {
        ensure!(!options.contains('\0'), InvalidValue, "build options contain a NUL byte");
        for (i, k) in bundle.kernels.iter().enumerate() {
            ensure!(
                !bundle.kernels[..i].iter().any(|o| o.name == k.name),
                InvalidValue,
                "kernel `{}` is declared twice",
                k.name
            );
        }
        let accepted = &context.device().info().source_forms;
        let Some(form) = accepted.iter().copied().find(|f| bundle.source_of(*f).is_some()) else {
            return Err(err!(
                InvalidBinary,
                "the program offers {}; {} accepts {}",
                list(&bundle.forms()),
                context.device(),
                list(accepted)
            ));
        };
        tracing::debug!(%form, "building program");
        // SAFETY: the bundle holds a source of `form`, a form the device accepts,
        // and its kernel names are unique.
        let imp = unsafe { context.imp().program_create(bundle, form, options)? };
        Ok(Program {
            inner: Arc::new(ProgramInner {
                context: context.clone(),
                signatures: bundle.kernels.clone(),
                form,
                options: options.to_string(),
                given: bundle.given.clone(),
                label: bundle.label,
                imp,
                _live: crate::live::Live::new(),
            }),
        })
    }

    /// The driver's build log; empty when it has none.
    pub fn build_log(&self) -> String {
        self.inner.imp.build_log()
    }

    /// The options the program was built with.
    pub fn build_options(&self) -> &str {
        &self.inner.options
    }

    /// The program's binary, as `urProgramGetInfo(UR_PROGRAM_INFO_BINARIES)`
    /// returns it: the driver's (OpenCL's `CL_PROGRAM_BINARIES`), else the
    /// bytes the bundle was read from; `None` where neither exists (programs
    /// built from source on backends without binaries).
    pub fn binary(&self) -> Option<Vec<u8>> {
        self.inner.imp.binary().or_else(|| self.inner.given.as_deref().map(<[u8]>::to_vec))
    }

    /// The context it was built for.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The source form that was built.
    pub fn form(&self) -> SourceForm {
        self.inner.form
    }

    /// The declared kernels.
    pub fn signatures(&self) -> &[KernelSignature] {
        &self.inner.signatures
    }

    /// The adapter's program.
    pub(crate) fn imp(&self) -> &dyn ProgramImpl {
        &*self.inner.imp
    }

    /// The label of the bundle it was built from ([`ProgramBundle::with_label`]).
    pub fn label(&self) -> Option<&'static str> {
        self.inner.label
    }

    /// Whether both handles name the same program object.
    pub fn same_program(&self, other: &Program) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("form", &self.inner.form)
            .field("kernels", &self.inner.signatures.len())
            .finish()
    }
}

/// Notes, for adapters whose backend compiles without options, that a
/// program's build `options` were ignored, and `why`.
pub fn options_ignored(options: &str, why: &str) {
    if !options.is_empty() {
        tracing::debug!(options, "build options ignored: {why}");
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "no source".into();
    }
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// A kernel of a program. Clone retains, drop releases; clones are the same
/// kernel for alternative-kernel checks.
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<KernelInner>,
}

struct KernelInner {
    program: Program,
    signature: KernelSignature,
    max_work_group_size: usize,
    compile_size: Option<[usize; 3]>,
    imp: Box<dyn KernelImpl>,
    _live: crate::live::Live<{ crate::live::KERNEL }>,
}

impl Kernel {
    /// The kernel `name` of `program`; `InvalidKernelName` if the bundle did
    /// not declare it or its source lacks it.
    #[tracing::instrument(level = "debug", skip(program), fields(label = program.label()))]
    pub fn new(program: &Program, name: &str) -> Result<Kernel> {
        let Some(signature) = program.inner.signatures.iter().find(|s| s.name == name) else {
            return Err(err!(InvalidKernelName, "the program declares no kernel `{name}`"));
        };
        // SAFETY: `signature` is one the program was created with.
        let imp = unsafe { program.imp().create_kernel(signature)? };
        let device_max = program.context().device().info().max_work_group_size;
        let max_work_group_size = imp.max_work_group_size().min(device_max).max(1);
        let compile_size = signature.reqd_work_group_size.or_else(|| imp.compile_work_group_size());
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                program: program.clone(),
                signature: signature.clone(),
                max_work_group_size,
                compile_size,
                imp,
                _live: crate::live::Live::new(),
            }),
        })
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.signature.name
    }

    /// Its number of arguments.
    pub fn num_args(&self) -> usize {
        self.inner.signature.args.len()
    }

    /// Its signature.
    pub fn signature(&self) -> &KernelSignature {
        &self.inner.signature
    }

    /// The program it belongs to.
    pub fn program(&self) -> &Program {
        &self.inner.program
    }

    /// The largest work-group this kernel can run on its device.
    pub fn max_work_group_size(&self) -> usize {
        self.inner.max_work_group_size
    }

    /// The work-group size the kernel requires, from its code or its driver
    /// (`reqd_work_group_size`, SPIR-V `LocalSize`, PTX `.reqntid`).
    pub fn compile_work_group_size(&self) -> Option<[usize; 3]> {
        self.inner.compile_size
    }

    /// Bytes of local memory the kernel uses statically; 0 where the backend
    /// cannot tell.
    pub fn local_mem_size(&self) -> usize {
        self.inner.imp.local_mem_size()
    }

    /// Bytes of private memory per work-item; 0 where the backend cannot tell.
    pub fn private_mem_size(&self) -> usize {
        self.inner.imp.private_mem_size()
    }

    /// The multiple of work-group sizes the driver prefers, else the
    /// device's smallest sub-group size, else 1.
    pub fn preferred_work_group_size_multiple(&self) -> usize {
        self.inner.imp.preferred_work_group_size_multiple().unwrap_or_else(|| {
            let sizes = &self.inner.program.context().device().info().sub_groups.sizes;
            sizes.iter().copied().min().unwrap_or(1) as usize
        })
    }

    /// The adapter's kernel.
    pub(crate) fn imp(&self) -> &dyn KernelImpl {
        &*self.inner.imp
    }

    /// Whether both handles name the same kernel object.
    pub fn same_kernel(&self, other: &Kernel) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({})", self.inner.signature.name)
    }
}
