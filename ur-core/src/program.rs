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
}

impl KernelSignature {
    /// A signature from a name and argument kinds.
    pub fn new(name: impl Into<Cow<'static, str>>, args: impl Into<Vec<ArgKind>>) -> KernelSignature {
        KernelSignature { name: name.into(), args: args.into() }
    }
}

/// A source form a program can be given in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceForm {
    /// Rust functions (the CPU adapter).
    Native,
    /// OpenCL C source.
    OpenClC,
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
    imp: Box<dyn ProgramImpl>,
}

impl Program {
    /// Builds the bundle for the context's device, from the first form in the
    /// device's order of preference that the bundle holds.
    #[tracing::instrument(level = "debug", skip_all, fields(device = %context.device()))]
    pub fn new(context: &Context, bundle: &ProgramBundle) -> Result<Program> {
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
        let imp = unsafe { context.imp().program_create(bundle, form)? };
        Ok(Program {
            inner: Arc::new(ProgramInner { context: context.clone(), signatures: bundle.kernels.clone(), form, imp }),
        })
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
    pub fn imp(&self) -> &dyn ProgramImpl {
        &*self.inner.imp
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
    imp: Box<dyn KernelImpl>,
}

impl Kernel {
    /// The kernel `name` of `program`; `InvalidKernelName` if the bundle did
    /// not declare it or its source lacks it.
    #[tracing::instrument(level = "debug", skip(program))]
    pub fn new(program: &Program, name: &str) -> Result<Kernel> {
        let Some(signature) = program.inner.signatures.iter().find(|s| s.name == name) else {
            return Err(err!(InvalidKernelName, "the program declares no kernel `{name}`"));
        };
        // SAFETY: `signature` is one the program was created with.
        let imp = unsafe { program.imp().create_kernel(signature)? };
        let device_max = program.context().device().info().max_work_group_size;
        let max_work_group_size = imp.max_work_group_size().min(device_max).max(1);
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                program: program.clone(),
                signature: signature.clone(),
                max_work_group_size,
                imp,
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

    /// The adapter's kernel.
    pub fn imp(&self) -> &dyn KernelImpl {
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
