//! The adapter object: the factory the library was built for, the one adapter
//! handle it opens, and the logger callbacks the application set.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use cmdbuf_core::adapter::AdapterFactory;
use cmdbuf_core::{AdapterEntry, Backend, DeviceSelector, Loader, err};
use parking_lot::Mutex;

use crate::entry::AbiResult;
use crate::handle::Handle;
use crate::objects::platform::Platform;
use crate::sys::*;

/// The adapter: its backend and the platforms its driver reported.
pub struct Adapter {
    pub(crate) backend: Backend,
    pub(crate) platforms: Vec<Arc<Handle<Platform>>>,
    pub(crate) logger: Mutex<Option<LoggerCallback>>,
}

/// A callback that receives this adapter's log messages.
#[derive(Clone, Copy)]
pub(crate) struct LoggerCallback {
    pub(crate) callback: unsafe extern "C" fn(ur_logger_level_t, *const c_char, *mut c_void),
    pub(crate) user_data: *mut c_void,
    pub(crate) level: ur_logger_level_t,
}

// SAFETY: the user data is the caller's, handed back to its own callback,
// which UR requires to be callable from any thread.
unsafe impl Send for LoggerCallback {}

pub(crate) static FACTORY: OnceLock<&'static dyn AdapterFactory> = OnceLock::new();

pub(crate) static ADAPTER: OnceLock<Arc<Handle<Adapter>>> = OnceLock::new();

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

pub(crate) fn open(factory: &'static dyn AdapterFactory) -> AbiResult<Arc<Handle<Adapter>>> {
    crate::objects::logging::init(factory.backend())?;
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
    // A mistyped adapter setting (`UR_CPU_THREADS=0`) fails `urAdapterGet`
    // with the variable named, as `cmdbuf::load` does, instead of hiding the adapter.
    if let Err(e) = factory.check_env() {
        // The result code alone (INVALID_VALUE) would not say which variable.
        tracing::error!(error = %e, "the adapter's settings are invalid");
        return Err(e);
    }
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
    /// Whether a logger callback is set that takes messages of `level`.
    pub(crate) fn logs_at(&self, level: ur_logger_level_t) -> bool {
        self.logger.lock().is_some_and(|logger| level.0 >= logger.level.0)
    }

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
