//! Opening the adapter at the first `urAdapterGet`: the logging first
//! (whose callback layer reads the opened adapter's logger), then the
//! driver, the device selector and the platforms with a selected device.

use std::sync::Arc;

use cmdbuf_core::adapter::AdapterFactory;
use cmdbuf_core::{AdapterEntry, DeviceSelector, Loader, err};
use parking_lot::Mutex;

use crate::entry::AbiResult;
use crate::handle::Handle;
use crate::objects::adapter::{ADAPTER, Adapter, FACTORY};
use crate::objects::platform::Platform;

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
