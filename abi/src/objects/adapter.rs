//! The adapter object: the factory the library was built for, the one adapter
//! handle it opens, and the logger callbacks the application set. Opening it
//! (which starts the logging that reads those callbacks) is `open.rs`'s.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use cmdbuf_core::Backend;
use cmdbuf_core::adapter::AdapterFactory;
use parking_lot::Mutex;

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
