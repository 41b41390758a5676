//! The loader: opens the adapters compiled into the program and applies the
//! device selector.
//!
//! Adapters are compiled in by cargo features of the `cmdbuf` crate (the CPU
//! adapter always); each one opens its driver at run time, so one binary runs
//! on any machine. An adapter that is not compiled in, whose driver is missing,
//! or that the selector excludes is reported absent with the reason.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::adapter::AdapterFactory;
use crate::device::Device;
use crate::error::Result;
use crate::platform::{Backend, Platform, PlatformInner};
use crate::selector::DeviceSelector;

pub mod selector;

/// An adapter the loader may open.
pub enum AdapterEntry<'a> {
    /// Compiled in: opened unless the selector rules its backend out.
    Compiled(&'a dyn AdapterFactory),
    /// Left out of this build; the string says how to include it.
    NotCompiled(Backend, &'static str),
}

/// An adapter that contributed no platform, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbsentAdapter {
    /// Its backend.
    pub backend: Backend,
    /// Why it is absent.
    pub reason: String,
}

/// The result of loading: platforms found, adapters absent, and the selector.
///
/// Applications get one from `cmdbuf::load()` (the compiled-in adapters, with the
/// selector from the environment) or `cmdbuf::load_all()`:
///
/// ```
/// let loader = cmdbuf::load()?;
/// for platform in loader.platforms() {
///     println!("{} platform `{}`: {} device(s)", platform.backend(), platform.name(), platform.devices().len());
/// }
/// for absent in loader.absent() {
///     println!("{} absent: {}", absent.backend, absent.reason);
/// }
/// // The first selected device, or an error carrying each absent adapter's reason.
/// let device = loader.first_device()?;
/// println!("running on {device}: {}", device.info().name);
/// # Ok::<(), cmdbuf::UrError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Loader {
    platforms: Vec<Platform>,
    absent: Vec<AbsentAdapter>,
    selector: DeviceSelector,
}

/// Held while a loader opens drivers. Drivers' first opening is not safe
/// from several threads at once: PoCL 3.1 crashed (`clGetDeviceInfo`) in
/// about two runs of three when two threads each loaded the adapters
/// (`cmdbuf-conformance`'s `sub_devices` test). Loading is rare and slow
/// anyway, so one at a time costs nothing that matters.
static OPENING_DRIVERS: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

impl Loader {
    /// Opens every entry's driver, skipping backends the selector cannot
    /// select. Loaders of several threads open drivers one after the other.
    #[tracing::instrument(level = "info", skip(entries), fields(selector = %selector))]
    pub fn load(entries: &[AdapterEntry<'_>], selector: DeviceSelector) -> Loader {
        let _one_at_a_time = OPENING_DRIVERS.lock();
        let mut platforms = Vec::new();
        let mut absent = Vec::new();
        let mut next_index: HashMap<Backend, usize> = HashMap::new();
        for entry in entries {
            let factory = match entry {
                AdapterEntry::NotCompiled(backend, how) => {
                    absent.push(AbsentAdapter { backend: *backend, reason: format!("not compiled in ({how})") });
                    continue;
                }
                AdapterEntry::Compiled(f) => *f,
            };
            let backend = factory.backend();
            if !selector.may_select_backend(backend) {
                absent.push(AbsentAdapter { backend, reason: format!("excluded by the device selector `{selector}`") });
                continue;
            }
            let loaded = catch_unwind(AssertUnwindSafe(|| factory.load()))
                .unwrap_or_else(|_| Err("the adapter panicked while opening its driver".to_string()));
            match loaded {
                Ok(found) if found.is_empty() => {
                    absent.push(AbsentAdapter { backend, reason: "the driver reports no platform".into() });
                }
                Ok(found) => {
                    for imp in found {
                        let devices = imp
                            .devices()
                            .into_iter()
                            .map(|d| {
                                let index = next_index.entry(backend).or_default();
                                let id = crate::DeviceId { backend, index: *index };
                                *index += 1;
                                Device::new(d, id)
                            })
                            .collect();
                        tracing::info!(%backend, platform = %imp.name(), "adapter present");
                        platforms.push(Platform {
                            inner: Arc::new(PlatformInner {
                                backend,
                                name: imp.name(),
                                version: imp.version(),
                                devices,
                                _imp: imp,
                            }),
                        });
                    }
                }
                Err(reason) => {
                    tracing::info!(%backend, %reason, "adapter absent");
                    absent.push(AbsentAdapter { backend, reason });
                }
            }
        }
        Loader { platforms, absent, selector }
    }

    /// Loads with the selector from `UR_DEVICE_SELECTOR` or `ONEAPI_DEVICE_SELECTOR`;
    /// a malformed value is an `InvalidValue` error naming the valid backends.
    /// The settings of each adapter the selector may open are checked first
    /// ([`AdapterFactory::check_env`]): an invalid one (`UR_CPU_THREADS=0`)
    /// is an `InvalidValue` error naming the variable, not an absent adapter.
    pub fn from_env(entries: &[AdapterEntry<'_>]) -> Result<Loader> {
        let selector = DeviceSelector::from_env()?;
        for entry in entries {
            if let AdapterEntry::Compiled(factory) = entry
                && selector.may_select_backend(factory.backend())
            {
                factory.check_env()?;
            }
        }
        Ok(Self::load(entries, selector))
    }

    /// The first selected device; when none is selected, a `DeviceNotFound`
    /// error with the selector and the reason each absent adapter gave (no
    /// driver, excluded by the selector, not compiled in), so that a program
    /// can pass the reason on with `?`.
    pub fn first_device(&self) -> Result<Device> {
        if let Some(device) = self.devices().into_iter().next() {
            return Ok(device);
        }
        let mut why = String::new();
        for absent in &self.absent {
            why.push_str(&format!("; {}: {}", absent.backend, absent.reason));
        }
        for platform in &self.platforms {
            why.push_str(&format!(
                "; {}: platform `{}` has {} device(s), none matching",
                platform.backend(),
                platform.name(),
                platform.devices().len()
            ));
        }
        Err(crate::err!(DeviceNotFound, "no device is selected by `{}`{why}", self.selector))
    }

    /// The platforms found.
    pub fn platforms(&self) -> &[Platform] {
        &self.platforms
    }

    /// The adapters that contributed no platform, with the reasons.
    pub fn absent(&self) -> &[AbsentAdapter] {
        &self.absent
    }

    /// The selector in force.
    pub fn selector(&self) -> &DeviceSelector {
        &self.selector
    }

    /// The selected devices, by backend then index.
    pub fn devices(&self) -> Vec<Device> {
        self.platforms
            .iter()
            .flat_map(|p| p.devices())
            .filter(|d| self.selector.matches(d.backend(), d.id().index, d.info().device_type))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_device_gives_each_absent_adapters_reason() {
        let entries = [
            AdapterEntry::NotCompiled(Backend::Cuda, "built without `cuda`"),
            AdapterEntry::NotCompiled(Backend::OpenCl, "built without `opencl`"),
        ];
        let loader = Loader::load(&entries, DeviceSelector::parse("cuda:0").unwrap());
        let error = loader.first_device().unwrap_err();
        assert!(matches!(error, crate::UrError::DeviceNotFound(_)), "{error}");
        let text = error.to_string();
        for part in ["cuda:0", "cuda: not compiled in (built without `cuda`)", "opencl: not compiled in"] {
            assert!(text.contains(part), "{part:?} missing from {text}");
        }
    }
}
