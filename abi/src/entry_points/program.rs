//! `urProgram*`: programs from IL (SPIR-V) or a device binary, built on
//! request.
//!
//! UR separates creating a program from building it; cmdbuf-core builds when it
//! creates. A program handle therefore holds the kernels' code, read and
//! checked at creation (`ProgramBundle::from_il` / `from_binary`, so that
//! bad input fails there with `INVALID_BINARY` as UR says), and the cmdbuf-core
//! program once `urProgramBuild` (or compile + link) has made it. Each
//! context has one device, so a program has one device too.

#![allow(non_snake_case)]

use std::ffi::{c_char, c_void};

use cmdbuf_core::{ProgramBundle, ensure, err};

use crate::entry::{AbiResult, guard};
use crate::handle::Handle;
use crate::info::{InfoOut, c_str, query, slice, write_out};
use crate::objects::context::Context;
use crate::objects::device::Device;
use crate::objects::program::{Input, Program};
use crate::sys::*;

/// The build options a caller passed, empty when null.
///
/// # Safety
/// `options` is null or a NUL-terminated string.
unsafe fn options_of<'a>(options: *const c_char) -> AbiResult<&'a str> {
    if options.is_null() {
        return Ok("");
    }
    // SAFETY: `options` is null or NUL-terminated (this function's `# Safety`), all `c_str` needs.
    unsafe { c_str(options, "pOptions") }
}

/// Checks that the devices a `*Exp` call names are exactly the context's one.
///
/// # Safety
/// `devices` is null or holds `count` handles, each null or one of this
/// adapter's.
unsafe fn check_devices(context: &Context, count: u32, devices: *mut ur_device_handle_t) -> AbiResult {
    // SAFETY: `devices` is null or holds `count` handles (this function's `# Safety`), all `slice` needs.
    let devices =
        unsafe { slice(devices.cast_const(), count as usize, || err!(InvalidNullPointer, "phDevices is null"))? };
    ensure!(!devices.is_empty(), InvalidSize, "numDevices is 0");
    for &device in devices {
        // SAFETY: each entry of `devices` is null or one of this adapter's handles (this function's `# Safety`), all
        // `get` needs.
        let device = unsafe { Handle::<Device>::get(device)? };
        ensure!(
            context.holds(device),
            InvalidDevice,
            "the device is neither the context's nor a sub-device of it: a context of this adapter holds one device"
        );
    }
    Ok(())
}

/// Borrows the program of a call that also names its context.
///
/// # Safety
/// `context` and `program` are each null or one of this adapter's handles
/// (UR's contract for `urProgramBuild` and `urProgramCompile`).
unsafe fn program_of<'a>(context: ur_context_handle_t, program: ur_program_handle_t) -> AbiResult<&'a Handle<Program>> {
    // SAFETY: `context` and `program` are each null or one of this adapter's handles (this function's `# Safety`), all
    // `get` needs.
    let (context, program) = unsafe { (Handle::<Context>::get(context)?, Handle::<Program>::get(program)?) };
    ensure!(std::ptr::eq(context, &*program.value.context), InvalidContext, "the program belongs to another context");
    Ok(program)
}

/// A `urProgramCreateWith*` call: resolves the context, lets `read` take
/// the code given (its checks, the input kept and the bundle read from it),
/// and returns the program.
///
/// # Safety
/// `context` is null or one of this adapter's handles; `out` is writable
/// (not null: both calls' generated checks reject `NULL == phProgram`).
unsafe fn create(
    entry_point: &'static str,
    context: ur_context_handle_t,
    out: *mut ur_program_handle_t,
    read: impl FnOnce(&Handle<Context>) -> AbiResult<(Input, ProgramBundle)>,
) -> ur_result_t {
    guard(entry_point, || {
        // SAFETY: `context` is null or one of this adapter's handles (this function's `# Safety`), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        let (input, bundle) = read(context)?;
        let value = Program::new(context.to_arc(), input, bundle);
        // SAFETY: `out` is writable (this function's `# Safety`).
        unsafe { write_out(out, Handle::create(value)) };
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urProgramCreateWithIL`.
pub(crate) unsafe extern "C" fn urProgramCreateWithIL(
    context: ur_context_handle_t,
    il: *const c_void,
    length: usize,
    _properties: *const ur_program_properties_t,
    program: *mut ur_program_handle_t,
) -> ur_result_t {
    let read = |_: &Handle<Context>| {
        // SAFETY: non-null because checks.rs rejected `NULL == pIL` (and `length == 0`); UR requires `il` to hold
        // `length` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(il.cast::<u8>(), length) }.to_vec();
        let bundle = ProgramBundle::from_il(&bytes)?;
        Ok((Input::Il(bytes), bundle))
    };
    // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"); `program` is writable
    // ("Out-pointers"; not null: checks.rs rejected `NULL == phProgram`), all `create` needs.
    unsafe { create("urProgramCreateWithIL", context, program, read) }
}

/// # Safety
/// UR's contract for `urProgramCreateWithBinary`.
pub(crate) unsafe extern "C" fn urProgramCreateWithBinary(
    context: ur_context_handle_t,
    num_devices: u32,
    devices: *mut ur_device_handle_t,
    lengths: *mut usize,
    binaries: *mut *const u8,
    _properties: *const ur_program_properties_t,
    program: *mut ur_program_handle_t,
) -> ur_result_t {
    let read = |context: &Handle<Context>| {
        ensure!(num_devices == 1, InvalidValue, "{num_devices} devices: a context of this adapter holds one device");
        // SAFETY: `devices` is non-null because checks.rs rejected `NULL == phDevices`, and holds `num_devices` (1)
        // handles, each null or one of this adapter's (entry_points doc, "Arrays and strings", "Handles"): the read
        // and `get` need no more.
        let device = unsafe { Handle::<Device>::get(*devices)? };
        ensure!(context.value.holds(device), InvalidDevice, "the device is not the context's or a sub-device of it");
        // SAFETY: both arrays are non-null because checks.rs rejected `NULL == pLengths` and `NULL == ppBinaries`,
        // and hold `num_devices` (1) entries per the contract.
        let (length, binary) = unsafe { (*lengths, *binaries) };
        ensure!(!binary.is_null(), InvalidNullPointer, "ppBinaries[0] is null");
        ensure!(length != 0, InvalidSize, "pLengths[0] is 0");
        // SAFETY: UR requires the binary to hold `length` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(binary, length) }.to_vec();
        // SAFETY: a CPU kernel table names entry points of the caller's
        // process; UR's contract for native CPU binaries keeps them loaded
        // for as long as programs made from them exist.
        let bundle = unsafe { ProgramBundle::from_binary(&bytes)? };
        Ok((Input::Binary(bytes), bundle))
    };
    // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"); `program` is writable
    // ("Out-pointers"; not null: checks.rs rejected `NULL == phProgram`), all `create` needs.
    unsafe { create("urProgramCreateWithBinary", context, program, read) }
}

/// # Safety
/// UR's contract for `urProgramBuild`.
pub(crate) unsafe extern "C" fn urProgramBuild(
    context: ur_context_handle_t,
    program: ur_program_handle_t,
    options: *const c_char,
) -> ur_result_t {
    guard("urProgramBuild", || {
        // SAFETY: `context` and `program` are each null or one of this adapter's handles (entry_points doc, "Handles"),
        // all `program_of` needs.
        let program = unsafe { program_of(context, program)? };
        // SAFETY: `options` is null or NUL-terminated (entry_points doc, "Arrays and strings"), all `options_of` needs.
        let options = unsafe { options_of(options)? };
        program.value.build(options, ur_program_binary_type_t::UR_PROGRAM_BINARY_TYPE_EXECUTABLE)
    })
}

/// # Safety
/// UR's contract for `urProgramBuildExp`.
pub(crate) unsafe extern "C" fn urProgramBuildExp(
    program: ur_program_handle_t,
    num_devices: u32,
    devices: *mut ur_device_handle_t,
    _flags: ur_exp_program_flags_t,
    options: *const c_char,
) -> ur_result_t {
    guard("urProgramBuildExp", || {
        // SAFETY: `program` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let program = unsafe { Handle::<Program>::get(program)? };
        // SAFETY: `devices` is null or points to `num_devices` device handles (entry_points doc, "Arrays and strings",
        // "Handles"), all `check_devices` needs.
        unsafe { check_devices(&program.value.context.value, num_devices, devices)? };
        // SAFETY: `options` is null or NUL-terminated (entry_points doc, "Arrays and strings"), all `options_of` needs.
        let options = unsafe { options_of(options)? };
        program.value.build(options, ur_program_binary_type_t::UR_PROGRAM_BINARY_TYPE_EXECUTABLE)
    })
}

/// Compiling checks the code and keeps the options for the link, which
/// builds: the backends take whole programs, so there is nothing to
/// compile separately.
fn compile(program: &Program, options: &str) -> AbiResult {
    program.check_not_adopted("compiling")?;
    let mut state = program.state.lock();
    state.options = options.to_owned();
    state.status = ur_program_build_status_t::UR_PROGRAM_BUILD_STATUS_SUCCESS;
    state.binary_type = ur_program_binary_type_t::UR_PROGRAM_BINARY_TYPE_COMPILED_OBJECT;
    Ok(())
}

/// # Safety
/// UR's contract for `urProgramCompile`.
pub(crate) unsafe extern "C" fn urProgramCompile(
    context: ur_context_handle_t,
    program: ur_program_handle_t,
    options: *const c_char,
) -> ur_result_t {
    guard("urProgramCompile", || {
        // SAFETY: `context` and `program` are each null or one of this adapter's handles (entry_points doc, "Handles"),
        // all `program_of` needs.
        let program = unsafe { program_of(context, program)? };
        // SAFETY: `options` is null or NUL-terminated (entry_points doc, "Arrays and strings"), all `options_of` needs.
        compile(&program.value, unsafe { options_of(options)? })
    })
}

/// # Safety
/// UR's contract for `urProgramCompileExp`.
pub(crate) unsafe extern "C" fn urProgramCompileExp(
    program: ur_program_handle_t,
    num_devices: u32,
    devices: *mut ur_device_handle_t,
    _flags: ur_exp_program_flags_t,
    options: *const c_char,
) -> ur_result_t {
    guard("urProgramCompileExp", || {
        // SAFETY: `program` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let program = unsafe { Handle::<Program>::get(program)? };
        // SAFETY: `devices` is null or points to `num_devices` device handles (entry_points doc, "Arrays and strings",
        // "Handles"), all `check_devices` needs.
        unsafe { check_devices(&program.value.context.value, num_devices, devices)? };
        // SAFETY: `options` is null or NUL-terminated (entry_points doc, "Arrays and strings"), all `options_of` needs.
        compile(&program.value, unsafe { options_of(options)? })
    })
}

/// Links `count` programs of `context`: one program links to itself (built
/// with its compile and the link options); several are compiled apart and
/// linked by the driver where the backend can (OpenCL, SPIR-V), and are
/// `UNSUPPORTED_FEATURE` elsewhere.
///
/// # Safety
/// As UR's contract for `urProgramLink` gives them: `programs` is null or
/// holds `count` handles, each null or one of this adapter's; `options` is
/// null or NUL-terminated; `out` is writable (both callers' generated
/// checks reject `NULL == phProgram`, `NULL == phPrograms` and `count == 0`).
unsafe fn link(
    context: &Handle<Context>,
    count: u32,
    programs: *const ur_program_handle_t,
    options: *const c_char,
    out: *mut ur_program_handle_t,
) -> AbiResult {
    // Whatever fails below leaves no stale handle in the caller's variable
    // (UR's conformance suites check that `phProgram` is written on errors).
    // SAFETY: `out` is writable (this function's `# Safety`).
    unsafe { out.write(std::ptr::null_mut()) };
    // SAFETY: `programs` is non-null (checks.rs rejected `NULL == phPrograms`) and holds `count` handles (this
    // function's `# Safety`).
    let programs = unsafe { std::slice::from_raw_parts(programs, count as usize) };
    let mut handles = Vec::with_capacity(programs.len());
    for &raw in programs {
        // SAFETY: each entry of `programs` is null or one of this adapter's handles (this function's `# Safety`), all
        // `get` needs.
        let program = unsafe { Handle::<Program>::get(raw)? };
        ensure!(std::ptr::eq(context, &*program.value.context), InvalidContext, "a program belongs to another context");
        handles.push(program);
    }
    // SAFETY: `options` is null or NUL-terminated (this function's `# Safety`), all `options_of` needs.
    let options = unsafe { options_of(options)? };
    let (linked, result) = match &handles[..] {
        [program] => program.value.link_alone(options)?,
        several => {
            let programs: Vec<&Program> = several.iter().map(|p| &p.value).collect();
            Program::link_several(handles[0].value.context.clone(), &programs, options)?
        }
    };
    // A failed link still gives its program, for `urProgramGetBuildInfo`'s
    // log, as the header allows; the caller releases it.
    // SAFETY: `out` is writable (this function's `# Safety`).
    unsafe { write_out(out, Handle::create(linked)) };
    result
}

/// # Safety
/// UR's contract for `urProgramLink`.
pub(crate) unsafe extern "C" fn urProgramLink(
    context: ur_context_handle_t,
    count: u32,
    programs: *const ur_program_handle_t,
    options: *const c_char,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    guard("urProgramLink", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        // SAFETY: `programs`, `options` and `out` are as `link` requires (entry_points doc, "Handles", "Arrays and
        // strings", "Out-pointers"; checks.rs rejected `NULL == phProgram`, `NULL == phPrograms` and `count == 0`).
        unsafe { link(context, count, programs, options, out) }
    })
}

/// # Safety
/// UR's contract for `urProgramLinkExp`.
pub(crate) unsafe extern "C" fn urProgramLinkExp(
    context: ur_context_handle_t,
    num_devices: u32,
    devices: *mut ur_device_handle_t,
    _flags: ur_exp_program_flags_t,
    count: u32,
    programs: *const ur_program_handle_t,
    options: *const c_char,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    guard("urProgramLinkExp", || {
        // SAFETY: `context` is null or one of this adapter's handles (entry_points doc, "Handles"), all `get` needs.
        let context = unsafe { Handle::<Context>::get(context)? };
        // SAFETY: `devices` is null or points to `num_devices` device handles (entry_points doc, "Arrays and strings",
        // "Handles"), all `check_devices` needs.
        unsafe { check_devices(&context.value, num_devices, devices)? };
        // SAFETY: `programs`, `options` and `out` are as `link` requires (entry_points doc, "Handles", "Arrays and
        // strings", "Out-pointers"; checks.rs rejected `NULL == phProgram`, `NULL == phPrograms` and `count == 0`).
        unsafe { link(context, count, programs, options, out) }
    })
}

/// # Safety
/// UR's contract for `urProgramRetain`.
pub(crate) unsafe extern "C" fn urProgramRetain(program: ur_program_handle_t) -> ur_result_t {
    // SAFETY: `program` is null or one of this adapter's handles (entry_points doc, "Handles"), all `retain` needs.
    guard("urProgramRetain", || unsafe { Handle::<Program>::retain(program) })
}

/// # Safety
/// UR's contract for `urProgramRelease`.
pub(crate) unsafe extern "C" fn urProgramRelease(program: ur_program_handle_t) -> ur_result_t {
    // SAFETY: `program` is null or one of this adapter's handles (entry_points doc, "Handles"), all `release` needs.
    guard("urProgramRelease", || unsafe { Handle::<Program>::release(program) })
}

/// # Safety
/// UR's contract for `urProgramGetInfo`.
pub(crate) unsafe extern "C" fn urProgramGetInfo(
    program: ur_program_handle_t,
    name: ur_program_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    let answer = |handle: &Handle<Program>, out: InfoOut| {
        let p = &handle.value;
        use ur_program_info_t as I;
        match name {
            I::UR_PROGRAM_INFO_REFERENCE_COUNT => out.value(handle.reference_count()),
            I::UR_PROGRAM_INFO_CONTEXT => out.value(p.context.raw()),
            // Programs are built for every device of their context.
            I::UR_PROGRAM_INFO_NUM_DEVICES => out.value(p.context.value.devices().len() as u32),
            I::UR_PROGRAM_INFO_DEVICES => {
                out.array(&p.context.value.devices().iter().map(|d| d.raw()).collect::<Vec<_>>())
            }
            I::UR_PROGRAM_INFO_IL => match &p.input {
                Input::Il(bytes) => out.bytes(bytes),
                Input::Binary(_) | Input::Native | Input::Linked => out.bytes(&[]),
            },
            I::UR_PROGRAM_INFO_BINARY_SIZES => out.array(&[binary_of(p)?.len()]),
            I::UR_PROGRAM_INFO_BINARIES => {
                let binary = binary_of(p)?;
                // The caller passes an array of one pointer to a buffer of
                // BINARY_SIZES bytes; the answer is written through it.
                if value.is_null() {
                    return out.array(&[std::ptr::null::<u8>()]);
                }
                ensure!(size >= size_of::<*mut u8>(), InvalidSize, "propSize {size} holds no pointer");
                // SAFETY: `value` holds one pointer per device (UR's contract).
                let target = unsafe { *value.cast::<*mut u8>() };
                ensure!(!target.is_null(), InvalidNullPointer, "the binary's buffer pointer is null");
                // SAFETY: the caller sized the buffer from BINARY_SIZES.
                unsafe { std::ptr::copy_nonoverlapping(binary.as_ptr(), target, binary.len()) };
                if !size_ret.is_null() {
                    // SAFETY: non-null, writable per the contract.
                    unsafe { size_ret.write(size_of::<*mut u8>()) };
                }
                Ok(())
            }
            I::UR_PROGRAM_INFO_NUM_KERNELS => out.value(p.signatures().len()),
            I::UR_PROGRAM_INFO_KERNEL_NAMES => {
                let signatures = p.signatures();
                let names: Vec<&str> = signatures.iter().map(|s| s.name.as_ref()).collect();
                out.string(&names.join(";"))
            }
            other => Err(err!(InvalidEnumeration, "program info {}", other.0)),
        }
    };
    // SAFETY: `program` is null or one of this adapter's handles, `value` null or writable for `size` bytes and
    // `size_ret` null or writable (entry_points doc, "Handles", "Info queries"), all `query` needs.
    unsafe { query("urProgramGetInfo", program, (size, value, size_ret), answer) }
}

/// The binary `urProgramGetInfo(BINARIES)` returns: one that
/// `urProgramCreateWithBinary` takes back. That is the driver's binary where
/// it is a form cmdbuf-core reads kernel signatures from (a CPU kernel table,
/// PTX, SPIR-V), else the code the program was made from: a driver's own
/// format (an OpenCL driver's binary) describes no signatures, so it could
/// not be loaded again.
fn binary_of(program: &Program) -> AbiResult<Vec<u8>> {
    let built = program.state.lock().built.clone();
    if let Some(binary) = built.as_ref().and_then(cmdbuf_core::Program::binary).filter(|b| reloads(b)) {
        return Ok(binary);
    }
    match &program.input {
        Input::Binary(bytes) => Ok(bytes.clone()),
        Input::Il(bytes) if built.is_some() => Ok(bytes.clone()),
        Input::Il(_) => Err(err!(InvalidProgramExecutable, "the program has no binary before it is built")),
        Input::Native => Err(err!(UnsupportedFeature, "the adopted program's driver returns no binary")),
        Input::Linked => Err(err!(
            UnsupportedFeature,
            "a program linked from several has no binary that urProgramCreateWithBinary would take back"
        )),
    }
}

/// Whether `urProgramCreateWithBinary` reads `bytes` (`ProgramBundle::from_binary`'s forms).
fn reloads(bytes: &[u8]) -> bool {
    cmdbuf_core::cpu_table::is_table(bytes) || cmdbuf_core::ptx::is_ptx(bytes) || cmdbuf_core::spirv::is_spirv(bytes)
}

/// # Safety
/// UR's contract for `urProgramGetBuildInfo`.
pub(crate) unsafe extern "C" fn urProgramGetBuildInfo(
    program: ur_program_handle_t,
    device: ur_device_handle_t,
    name: ur_program_build_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urProgramGetBuildInfo", || {
        // SAFETY: `program` and `device` are each null or one of this adapter's handles (entry_points doc, "Handles"),
        // all `get` needs.
        let (handle, device) = unsafe { (Handle::<Program>::get(program)?, Handle::<Device>::get(device)?) };
        ensure!(handle.value.context.value.holds(device), InvalidDevice, "the device is not the program's");
        // SAFETY: `value` is null or writable for `size` bytes, `size_ret` null or writable (entry_points doc, "Info
        // queries"), all `InfoOut::new` needs.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        let state = handle.value.state.lock();
        use ur_program_build_info_t as I;
        match name {
            I::UR_PROGRAM_BUILD_INFO_STATUS => out.value(state.status),
            I::UR_PROGRAM_BUILD_INFO_OPTIONS => out.string(&state.options),
            I::UR_PROGRAM_BUILD_INFO_LOG => out.string(&state.log),
            I::UR_PROGRAM_BUILD_INFO_BINARY_TYPE => out.value(state.binary_type),
            other => Err(err!(InvalidEnumeration, "program build info {}", other.0)),
        }
    })
}
