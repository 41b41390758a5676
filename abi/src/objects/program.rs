//! The program handle and its build state.

use std::sync::Arc;

use cmdbuf_core::{ProgramBundle, UrError, ensure, err};
use parking_lot::Mutex;

use crate::entry::AbiResult;
use crate::handle::Handle;
use crate::objects::context::ContextRef;
use crate::sys::*;

/// A program: its code, and what building it made.
pub struct Program {
    pub(crate) context: ContextRef,
    pub(crate) input: Input,
    pub(crate) bundle: ProgramBundle,
    pub(crate) state: Mutex<BuildState>,
}

/// The bytes the program was created from, for `urProgramGetInfo`.
pub(crate) enum Input {
    Il(Vec<u8>),
    Binary(Vec<u8>),
    /// Adopted from a built native program (`urProgramCreateWithNativeHandle`).
    Native,
    /// Linked from several programs (`urProgramLink`): built, with no code
    /// of its own.
    Linked,
}

/// Where the program stands, as `urProgramGetBuildInfo` reports it.
pub(crate) struct BuildState {
    pub(crate) status: ur_program_build_status_t,
    pub(crate) binary_type: ur_program_binary_type_t,
    pub(crate) options: String,
    pub(crate) log: String,
    pub(crate) built: Option<cmdbuf_core::Program>,
}

impl Program {
    pub(crate) fn new(context: ContextRef, input: Input, bundle: ProgramBundle) -> Program {
        let binary_type = match input {
            Input::Il(_) => ur_program_binary_type_t::UR_PROGRAM_BINARY_TYPE_NONE,
            Input::Binary(_) | Input::Native | Input::Linked => {
                ur_program_binary_type_t::UR_PROGRAM_BINARY_TYPE_EXECUTABLE
            }
        };
        let state = BuildState {
            status: ur_program_build_status_t::UR_PROGRAM_BUILD_STATUS_NONE,
            binary_type,
            options: String::new(),
            log: String::new(),
            built: None,
        };
        Program { context, input, bundle, state: Mutex::new(state) }
    }

    /// A program over an adopted native one, built already: its kernels
    /// are the native program's.
    pub(crate) fn adopted(context: ContextRef, program: cmdbuf_core::Program) -> Program {
        Program::over_built(context, Input::Native, program)
    }

    /// A program of no code of its own (`input` is `Native` or `Linked`)
    /// over a built one, whose kernels it has.
    fn over_built(context: ContextRef, input: Input, program: cmdbuf_core::Program) -> Program {
        let over = Program::new(context, input, ProgramBundle::new());
        {
            let mut state = over.state.lock();
            state.log = program.build_log();
            state.status = ur_program_build_status_t::UR_PROGRAM_BUILD_STATUS_SUCCESS;
            state.built = Some(program);
        }
        over
    }

    /// The kernels' signatures: the bundle's, or the built program's where
    /// the program has no code of its own.
    pub(crate) fn signatures(&self) -> Vec<cmdbuf_core::KernelSignature> {
        match (&self.input, &self.state.lock().built) {
            (Input::Native | Input::Linked, Some(built)) => built.signatures().to_vec(),
            _ => self.bundle.signatures().to_vec(),
        }
    }

    /// `INVALID_OPERATION` for a program built already with no code of its
    /// own (adopted: its own API built it; linked from several): cmdbuf
    /// has nothing to build again.
    pub(crate) fn check_not_adopted(&self, what: &str) -> AbiResult {
        ensure!(
            !matches!(self.input, Input::Native),
            InvalidOperation,
            "{what} of a program adopted from a native handle, which is built already (its driver's API rebuilds it)"
        );
        ensure!(
            !matches!(self.input, Input::Linked),
            InvalidOperation,
            "{what} of a program linked from several, which is built already and has no code of its own"
        );
        Ok(())
    }

    /// The built program; `INVALID_PROGRAM_EXECUTABLE` before a successful build.
    pub(crate) fn built(&self) -> AbiResult<cmdbuf_core::Program> {
        self.state.lock().built.clone().ok_or_else(|| {
            err!(InvalidProgramExecutable, "the program has not been built (urProgramBuild or urProgramLink)")
        })
    }

    /// The program's context handle.
    pub(crate) fn context(&self) -> &ContextRef {
        &self.context
    }

    /// Builds for the context's device with `options`, recording status,
    /// options and log. A failed build reports `PROGRAM_BUILD_FAILURE` (UR's
    /// code for it) and keeps the driver's message as the build log.
    pub(crate) fn build(&self, options: &str, binary_type: ur_program_binary_type_t) -> AbiResult {
        self.check_not_adopted("building")?;
        let mut state = self.state.lock();
        state.options = options.to_owned();
        match cmdbuf_core::Program::with_options(self.context.value.core(), &self.bundle, options) {
            Ok(program) => {
                state.log = program.build_log();
                state.status = ur_program_build_status_t::UR_PROGRAM_BUILD_STATUS_SUCCESS;
                state.binary_type = binary_type;
                state.built = Some(program);
                Ok(())
            }
            Err(error) => {
                state.log = error.to_string();
                state.status = ur_program_build_status_t::UR_PROGRAM_BUILD_STATUS_ERROR;
                state.built = None;
                Err(match error {
                    UrError::ProgramBuildFailure(_) | UrError::UnsupportedFeature(_) | UrError::OutOfHostMemory(_) => {
                        error
                    }
                    other => UrError::ProgramBuildFailure(cmdbuf_core::Detail::msg(other.to_string())),
                })
            }
        }
    }

    /// A program made by linking this one alone: the same code, built with
    /// the compile options followed by the link options. The program comes
    /// back even when the build fails, with its log, and the failure is then
    /// `PROGRAM_LINK_FAILURE` (the header's code for `urProgramLink`: the
    /// build happens at the link, `urProgramCompile` only records options). A program adopted
    /// from a native handle has no code to link again: `INVALID_OPERATION`,
    /// and no program.
    pub(crate) fn link_alone(&self, options: &str) -> AbiResult<(Program, AbiResult)> {
        self.check_not_adopted("linking")?;
        let input = match &self.input {
            Input::Il(bytes) => Input::Il(bytes.clone()),
            Input::Binary(bytes) => Input::Binary(bytes.clone()),
            Input::Native | Input::Linked => return Err(err!(InvalidOperation, "linking a program with no code")),
        };
        let linked = Program::new(self.context.clone(), input, self.bundle.clone());
        let compile_options = self.state.lock().options.clone();
        let built = linked.build(
            &cmdbuf_core::Program::link_options(&compile_options, options),
            ur_program_binary_type_t::UR_PROGRAM_BINARY_TYPE_EXECUTABLE,
        );
        let result = built.map_err(|e| match e {
            UrError::ProgramBuildFailure(detail) => UrError::ProgramLinkFailure(detail),
            other => other,
        });
        Ok((linked, result))
    }

    /// A program linked from several (`urProgramLink` of more than one):
    /// each compiled with the options its `urProgramCompile` recorded, and
    /// linked with `options` (`cmdbuf_core::Program::link`; the OpenCL
    /// library only). A failed link still gives its program, with the
    /// failure as its log, as [`link_alone`](Self::link_alone) does; any
    /// other error gives none.
    pub(crate) fn link_several(
        context: ContextRef,
        programs: &[&Program],
        options: &str,
    ) -> AbiResult<(Program, AbiResult)> {
        for program in programs {
            program.check_not_adopted("linking")?;
        }
        let compile_options: Vec<String> = programs.iter().map(|p| p.state.lock().options.clone()).collect();
        let inputs: Vec<(&ProgramBundle, &str)> =
            programs.iter().zip(&compile_options).map(|(p, o)| (&p.bundle, o.as_str())).collect();
        let detail = match cmdbuf_core::Program::link(context.value.core(), &inputs, options) {
            Ok(built) => return Ok((Program::over_built(context, Input::Linked, built), Ok(()))),
            Err(UrError::ProgramBuildFailure(detail) | UrError::ProgramLinkFailure(detail)) => detail,
            Err(other) => return Err(other),
        };
        let failed = Program::new(context, Input::Linked, ProgramBundle::new());
        {
            let mut state = failed.state.lock();
            state.log = detail.to_string();
            state.status = ur_program_build_status_t::UR_PROGRAM_BUILD_STATUS_ERROR;
        }
        Ok((failed, Err(UrError::ProgramLinkFailure(detail))))
    }
}

/// Keeps a program handle alive for the kernels made from it.
pub(crate) type ProgramRef = Arc<Handle<Program>>;
