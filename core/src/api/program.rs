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

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::adapter::{KernelImpl, ProgramImpl};
use crate::context::Context;
use crate::error::Result;
pub use crate::objects::{Kernel, Program};
use crate::objects::{KernelInner, ProgramInner};
pub use crate::types::program::*;
use crate::{ensure, err};

/// What a built program keeps of its bundles.
struct Built {
    signatures: Vec<KernelSignature>,
    form: SourceForm,
    given: Option<Arc<[u8]>>,
    label: Option<&'static str>,
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
    #[tracing::instrument(level = "debug", skip_all, fields(device = %context.device(), label = bundle.label()))]
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
        let built =
            Built { signatures: bundle.kernels.clone(), form, given: bundle.given.clone(), label: bundle.label() };
        Ok(Program::assemble(context, built, options, imp))
    }

    /// Links programs compiled apart into one, as `urProgramLink` of several
    /// does: each input is a bundle and the options to compile it with, and
    /// `options` are the link's. The program's kernels are every input's;
    /// one name in two inputs is `ProgramLinkFailure`. A single input is
    /// built as by [`with_options`](Self::with_options), with its options
    /// followed by the link's. Only the OpenCL adapter compiles and links
    /// apart (an input may then hold no kernel: a library of functions, as
    /// libsycl's device libraries are); the other backends build whole
    /// programs, and linking several is `UnsupportedFeature` there.
    ///
    /// ```
    /// use cmdbuf::{ArgKind, Context, KernelSignature, NativeKernel, Program, ProgramBundle, ProgramSource, UrError};
    /// let bundle = |name: &'static str| {
    ///     ProgramBundle::new()
    ///         .kernel(KernelSignature::new(name, [ArgKind::Global]))
    ///         .source(ProgramSource::Native(vec![NativeKernel::new(name, |_| {})]))
    /// };
    /// let ctx = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    /// let (a, b) = (bundle("a"), bundle("b"));
    /// let one = Program::link(&ctx, &[(&a, "")], "").unwrap();
    /// assert_eq!(one.signatures().len(), 1);
    /// // The CPU adapter runs whole programs: it links no two.
    /// assert!(matches!(Program::link(&ctx, &[(&a, ""), (&b, "")], ""), Err(UrError::UnsupportedFeature(_))));
    /// ```
    #[tracing::instrument(level = "debug", skip_all, fields(device = %context.device(), inputs = inputs.len()))]
    pub fn link(context: &Context, inputs: &[(&ProgramBundle, &str)], options: &str) -> Result<Program> {
        ensure!(!inputs.is_empty(), InvalidSize, "no program to link");
        ensure!(
            !options.contains('\0') && inputs.iter().all(|(_, o)| !o.contains('\0')),
            InvalidValue,
            "compile or link options contain a NUL byte"
        );
        if let [(bundle, compile)] = inputs {
            return Program::with_options(context, bundle, &Program::link_options(compile, options));
        }
        let mut signatures: Vec<KernelSignature> = Vec::new();
        for kernel in inputs.iter().flat_map(|(bundle, _)| bundle.kernels.iter()) {
            ensure!(
                !signatures.iter().any(|k| k.name == kernel.name),
                ProgramLinkFailure,
                "kernel `{}` is defined by two of the programs linked",
                kernel.name
            );
            signatures.push(kernel.clone());
        }
        let accepted = &context.device().info().source_forms;
        let Some(form) =
            accepted.iter().copied().find(|f| inputs.iter().all(|(bundle, _)| bundle.source_of(*f).is_some()))
        else {
            return Err(err!(
                InvalidBinary,
                "the programs linked share no source form that {} accepts ({})",
                context.device(),
                list(accepted)
            ));
        };
        // SAFETY: two inputs or more, each holding a source of `form`, a form
        // the device accepts; kernel names unique across them; no NUL bytes.
        let imp = unsafe { context.imp().program_link(inputs, form, options)? };
        Ok(Program::assemble(context, Built { signatures, form, given: None, label: None }, options, imp))
    }

    /// The options of a program linked alone: those it was compiled with,
    /// then the link's, space-separated, an empty one left out (what
    /// [`link`](Self::link) builds a single input with).
    ///
    /// ```
    /// use cmdbuf::Program;
    /// assert_eq!(Program::link_options("-cl-fast-relaxed-math", "-O2"), "-cl-fast-relaxed-math -O2");
    /// assert_eq!(Program::link_options("", "-O2"), "-O2");
    /// ```
    pub fn link_options(compile: &str, link: &str) -> String {
        [compile, link].iter().filter(|o| !o.is_empty()).copied().collect::<Vec<_>>().join(" ")
    }

    fn assemble(context: &Context, built: Built, options: &str, imp: Box<dyn ProgramImpl>) -> Program {
        Program {
            inner: Arc::new(ProgramInner {
                context: context.clone(),
                signatures: built.signatures,
                form: built.form,
                options: options.to_string(),
                given: built.given,
                label: built.label,
                adopted: false,
                imp,
                _live: crate::live::Live::new(),
            }),
        }
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

    /// The declared kernels (derived from the driver's answers for an
    /// adopted program, [`Program::from_native`]).
    pub fn signatures(&self) -> &[KernelSignature] {
        &self.inner.signatures
    }

    /// Whether the program was adopted from a native program
    /// ([`Program::from_native`]) rather than built from a bundle.
    pub fn is_adopted(&self) -> bool {
        self.inner.adopted
    }

    /// The native program behind it (OpenCL's `cl_program`, CUDA's
    /// `CUmodule`), owned by cmdbuf; `UnsupportedFeature` where the backend
    /// has none (see [`crate::interop`]).
    pub fn native_handle(&self) -> Result<crate::NativeHandle> {
        self.inner.imp.native_handle()
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
        Ok(Kernel::from_parts(program, signature.clone(), imp))
    }

    /// A kernel of `program` from the adapter's kernel and its signature.
    pub(crate) fn from_parts(program: &Program, signature: KernelSignature, imp: Box<dyn KernelImpl>) -> Kernel {
        let device_max = program.context().device().info().max_work_group_size;
        let max_work_group_size = imp.max_work_group_size().min(device_max).max(1);
        let compile_size = signature.reqd_work_group_size.or_else(|| imp.compile_work_group_size());
        Kernel {
            inner: Arc::new(KernelInner {
                program: Arc::new(program.clone()),
                signature,
                max_work_group_size,
                compile_size,
                imp,
                cache_config: parking_lot::Mutex::new(CacheConfig::Default),
                _live: crate::live::Live::new(),
            }),
        }
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

    /// The native kernel behind it (OpenCL's `cl_kernel`, CUDA's
    /// `CUfunction`), owned by cmdbuf; `UnsupportedFeature` where the backend
    /// has none.
    pub fn native_handle(&self) -> Result<crate::NativeHandle> {
        self.inner.imp.native_handle()
    }

    /// The program it belongs to.
    pub fn program(&self) -> &Program {
        let program: &dyn Any = &*self.inner.program;
        // A kernel's program is a `KernelProgram`, which only `Program` is
        // (`adapter/operands.rs` says why it is not named there).
        program.downcast_ref().expect("a kernel's program is a `Program`")
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
            let sizes = &self.program().context().device().info().sub_groups.sizes;
            sizes.iter().copied().min().unwrap_or(1) as usize
        })
    }

    /// The largest sub-group the kernel runs with: the driver's answer for
    /// this kernel where it compiles each kernel for a sub-group size of its
    /// choosing (OpenCL), else the device's largest sub-group size (1 where
    /// the device reports none). Kernels that size their work by sub-groups
    /// (dpnp's radix sort) need this one, not the device's.
    ///
    /// ```
    /// use cmdbuf::{ArgKind, Context, Kernel, KernelSignature, NativeKernel, Program, ProgramBundle, ProgramSource};
    /// let bundle = ProgramBundle::new()
    ///     .kernel(KernelSignature::new("noop", [ArgKind::Global]))
    ///     .source(ProgramSource::Native(vec![NativeKernel::new("noop", |_| {})]));
    /// let ctx = Context::new(&cmdbuf_cpu::default_device()).unwrap();
    /// let kernel = Kernel::new(&Program::new(&ctx, &bundle).unwrap(), "noop").unwrap();
    /// assert!(kernel.max_sub_group_size() >= 1);
    /// ```
    pub fn max_sub_group_size(&self) -> u32 {
        self.inner.imp.max_sub_group_size().unwrap_or_else(|| {
            let sizes = &self.program().context().device().info().sub_groups.sizes;
            sizes.iter().copied().max().unwrap_or(1)
        })
    }

    /// Takes a cache-configuration hint for the kernel's later launches
    /// (`UR_KERNEL_EXEC_INFO_CACHE_CONFIG`). Backends with a split between
    /// local memory and data cache apply it (CUDA: `cuFuncSetCacheConfig`);
    /// the others have no such split, and only record it
    /// ([`Kernel::cache_config`]). Returns whether the backend applied it.
    pub fn set_cache_config(&self, config: CacheConfig) -> Result<bool> {
        let mut current = self.inner.cache_config.lock();
        let applied = self.inner.imp.apply_cache_config(config)?;
        if !applied {
            tracing::debug!(kernel = self.name(), ?config, "the backend has no cache split: the hint is recorded");
        }
        *current = config;
        Ok(applied)
    }

    /// The last cache-configuration hint given ([`CacheConfig::Default`] if none).
    pub fn cache_config(&self) -> CacheConfig {
        *self.inner.cache_config.lock()
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
