//! `urAdapter*`: the one adapter of this library, its platforms, its last
//! error and its logger.
//!
//! The library's backend is fixed by the factory its crate registers
//! ([`register_factory`]). The driver is opened at the first `urAdapterGet`,
//! with the devices that `UR_DEVICE_SELECTOR` selects (the project's own
//! variable: libsycl applies `ONEAPI_DEVICE_SELECTOR` itself, to the backend
//! this adapter reports). `UR_RS_COMMAND_BUFFERS=emulated` gives every
//! device ur-core's software command buffer instead of the native one.

#![allow(non_snake_case)]

use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use ur_core::adapter::AdapterFactory;
use ur_core::{AdapterEntry, Backend, DeviceSelector, Loader, ensure, err};

use crate::entry::{AbiResult, guard, last_error};
use crate::handle::Handle;
use crate::info::{InfoOut, enumerate};
use crate::platform::Platform;
use crate::sys::*;

/// The adapter: its backend and the platforms its driver reported.
pub struct Adapter {
    backend: Backend,
    platforms: Vec<Arc<Handle<Platform>>>,
    logger: Mutex<Option<LoggerCallback>>,
}

/// A callback that receives this adapter's log messages.
#[derive(Clone, Copy)]
struct LoggerCallback {
    callback: unsafe extern "C" fn(ur_logger_level_t, *const c_char, *mut c_void),
    user_data: *mut c_void,
    level: ur_logger_level_t,
}

// SAFETY: the user data is the caller's, handed back to its own callback,
// which UR requires to be callable from any thread.
unsafe impl Send for LoggerCallback {}

static FACTORY: OnceLock<&'static dyn AdapterFactory> = OnceLock::new();
static ADAPTER: OnceLock<Arc<Handle<Adapter>>> = OnceLock::new();

/// Registers the factory of this library's backend; called by the exported
/// table getters, the first registration wins.
pub fn register_factory(factory: &'static dyn AdapterFactory) {
    let _ = FACTORY.set(factory);
}

/// The adapter, if it was opened.
pub(crate) fn installed() -> Option<&'static Arc<Handle<Adapter>>> {
    ADAPTER.get()
}

/// The adapter, opening the driver at the first call.
pub(crate) fn adapter() -> AbiResult<&'static Arc<Handle<Adapter>>> {
    if let Some(adapter) = ADAPTER.get() {
        return Ok(adapter);
    }
    let factory = *FACTORY.get().ok_or_else(|| err!(Uninitialized, "no adapter factory was registered"))?;
    let opened = open(factory)?;
    Ok(ADAPTER.get_or_init(|| opened))
}

fn open(factory: &'static dyn AdapterFactory) -> AbiResult<Arc<Handle<Adapter>>> {
    crate::logging::init();
    let selector = match std::env::var("UR_DEVICE_SELECTOR") {
        Ok(v) if !v.trim().is_empty() => DeviceSelector::parse(&v)?,
        _ => DeviceSelector::all(),
    };
    let emulated = match std::env::var("UR_RS_COMMAND_BUFFERS").as_deref() {
        Ok("emulated") => true,
        Ok("native") | Ok("") | Err(_) => false,
        Ok(other) => {
            return Err(err!(InvalidValue, "UR_RS_COMMAND_BUFFERS={other:?}: expected `native` or `emulated`"));
        }
    };
    let loader = Loader::load(&[AdapterEntry::Compiled(factory)], selector);
    for absent in loader.absent() {
        tracing::info!(backend = %absent.backend, reason = %absent.reason, "no platform");
    }
    let backend = factory.backend();
    let platforms = loader
        .platforms()
        .iter()
        .filter_map(|p| {
            let devices: Vec<_> = p
                .devices()
                .iter()
                .filter(|d| loader.selector().matches(d.backend(), d.id().index, d.info().device_type))
                .map(|d| if emulated { d.emulated() } else { d.clone() })
                .collect();
            (!devices.is_empty()).then(|| Platform::new(p.clone(), devices))
        })
        .collect();
    // The application's references are counted from the first `urAdapterGet`.
    Ok(Handle::new_root(Adapter { backend, platforms, logger: Mutex::new(None) }))
}

impl Adapter {
    /// The platforms with at least one selected device.
    pub(crate) fn platforms(&self) -> &[Arc<Handle<Platform>>] {
        &self.platforms
    }

    /// Sends a message to the application's logger callback, if one is set
    /// and `level` reaches its threshold.
    pub(crate) fn log(&self, level: ur_logger_level_t, message: &str) {
        let Some(logger) = *self.logger.lock() else { return };
        if level.0 < logger.level.0 {
            return;
        }
        let Ok(message) = std::ffi::CString::new(message.replace('\0', " ")) else { return };
        // SAFETY: the application registered this callback and user data for
        // exactly this use.
        unsafe { (logger.callback)(level, message.as_ptr(), logger.user_data) };
    }
}

/// The UR backend value this adapter reports for a ur-core backend.
///
/// libsycl accepts `OPENCL`, `CUDA`, `HIP`, `NATIVE_CPU` and `OFFLOAD` and
/// specialises some paths on them (see `docs/abi.md`); UR has no Vulkan value.
pub(crate) fn ur_backend(backend: Backend) -> ur_backend_t {
    match backend {
        Backend::Cpu => ur_backend_t::UR_BACKEND_NATIVE_CPU,
        Backend::OpenCl => ur_backend_t::UR_BACKEND_OPENCL,
        Backend::Cuda => ur_backend_t::UR_BACKEND_CUDA,
        Backend::Vulkan => ur_backend_t::UR_BACKEND_OFFLOAD,
    }
}

/// # Safety
/// UR's contract for `urAdapterGet`.
pub(crate) unsafe extern "C" fn urAdapterGet(
    num_entries: u32,
    adapters: *mut ur_adapter_handle_t,
    num_adapters: *mut u32,
) -> ur_result_t {
    guard("urAdapterGet", || {
        let adapter = adapter()?;
        // SAFETY: forwarded.
        unsafe { enumerate(&[adapter.raw()], num_entries, adapters, num_adapters)? };
        // Every handle given out is one more application reference.
        if !adapters.is_null() {
            adapter.retain_ref();
        }
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urAdapterRetain`.
pub(crate) unsafe extern "C" fn urAdapterRetain(adapter: ur_adapter_handle_t) -> ur_result_t {
    // SAFETY: forwarded.
    guard("urAdapterRetain", || unsafe { Handle::<Adapter>::retain(adapter) })
}

/// # Safety
/// UR's contract for `urAdapterRelease`.
pub(crate) unsafe extern "C" fn urAdapterRelease(adapter: ur_adapter_handle_t) -> ur_result_t {
    // SAFETY: forwarded.
    guard("urAdapterRelease", || unsafe { Handle::<Adapter>::release(adapter) })
}

/// # Safety
/// UR's contract for `urAdapterGetLastError`.
pub(crate) unsafe extern "C" fn urAdapterGetLastError(
    adapter: ur_adapter_handle_t,
    message: *mut *const c_char,
    error: *mut i32,
) -> ur_result_t {
    // Not through `guard`: that would replace the error being asked for.
    // SAFETY: null or a handle of this adapter per the contract.
    if unsafe { Handle::<Adapter>::get(adapter) }.is_err() {
        return ur_result_t::UR_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    if message.is_null() || error.is_null() {
        return ur_result_t::UR_RESULT_ERROR_INVALID_NULL_POINTER;
    }
    let (text, code) = last_error().unwrap_or((c"no error".as_ptr(), 0));
    // SAFETY: both non-null and writable per the contract; the message stays
    // valid until this thread's next failing call.
    unsafe {
        message.write(text);
        error.write(code);
    }
    ur_result_t::UR_RESULT_SUCCESS
}

/// # Safety
/// UR's contract for `urAdapterGetInfo`.
pub(crate) unsafe extern "C" fn urAdapterGetInfo(
    adapter: ur_adapter_handle_t,
    name: ur_adapter_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    guard("urAdapterGetInfo", || {
        // SAFETY: forwarded.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        // SAFETY: forwarded.
        let out = unsafe { InfoOut::new(size, value, size_ret)? };
        match name {
            ur_adapter_info_t::UR_ADAPTER_INFO_BACKEND => out.value(ur_backend(adapter.value.backend)),
            ur_adapter_info_t::UR_ADAPTER_INFO_REFERENCE_COUNT => out.value(adapter.reference_count()),
            ur_adapter_info_t::UR_ADAPTER_INFO_VERSION => out.value(1u32),
            other => Err(err!(InvalidEnumeration, "adapter info {}", other.0)),
        }
    })
}

/// # Safety
/// UR's contract for `urAdapterSetLoggerCallback`.
pub(crate) unsafe extern "C" fn urAdapterSetLoggerCallback(
    adapter: ur_adapter_handle_t,
    callback: ur_logger_callback_t,
    user_data: *mut c_void,
    level: ur_logger_level_t,
) -> ur_result_t {
    guard("urAdapterSetLoggerCallback", || {
        // SAFETY: forwarded.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        let callback = callback.ok_or_else(|| err!(InvalidNullPointer, "null logger callback"))?;
        check_level(level)?;
        *adapter.value.logger.lock() = Some(LoggerCallback { callback, user_data, level });
        Ok(())
    })
}

/// # Safety
/// UR's contract for `urAdapterSetLoggerCallbackLevel`.
pub(crate) unsafe extern "C" fn urAdapterSetLoggerCallbackLevel(
    adapter: ur_adapter_handle_t,
    level: ur_logger_level_t,
) -> ur_result_t {
    guard("urAdapterSetLoggerCallbackLevel", || {
        // SAFETY: forwarded.
        let adapter = unsafe { Handle::<Adapter>::get(adapter)? };
        check_level(level)?;
        let mut logger = adapter.value.logger.lock();
        let logger = logger.as_mut().ok_or_else(|| err!(InvalidOperation, "no logger callback is set"))?;
        logger.level = level;
        Ok(())
    })
}

fn check_level(level: ur_logger_level_t) -> AbiResult {
    ensure!(level.0 <= ur_logger_level_t::UR_LOGGER_LEVEL_QUIET.0, InvalidEnumeration, "logger level {}", level.0);
    Ok(())
}
