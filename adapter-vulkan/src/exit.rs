//! The end of the process: the adapter stops its devices before the Vulkan
//! driver shuts itself down, and calls no Vulkan function after.
//!
//! A driver registers exit handlers of its own (the static destructors of
//! the libraries the loader opens for it) while the instance and the device
//! are created. `exit` runs handlers in the reverse order of registration,
//! so the driver's run before every handler registered earlier: the
//! application's static destructors and its `destructor` functions, from
//! which libsycl and C programs release their queues. NVIDIA's driver (580)
//! crashes the process on a release made then (`abi/harness/c/exit_release.c`).
//!
//! So the adapter registers a handler of its own after the driver has loaded
//! its libraries (again whenever more were loaded since), which runs before
//! the driver's. It submits every open eager batch, waits for every
//! device's work and finishes it (events complete, host work runs), stops the
//! adapter's threads, and marks the driver gone. From then on:
//! - releases free the adapter's host memory only (the process is ending;
//!   the system reclaims the device's);
//! - waits and status queries of finished work answer at once, as before;
//! - anything that would record, submit or create device objects fails with
//!   `DEVICE_LOST`, as calls to CUDA fail with `CUDA_ERROR_DEINITIALIZED`
//!   then.
//!
//! A handler the driver registers later than the adapter's last one, other
//! than by loading a library, still runs first; NVIDIA's do not.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use cmdbuf_core::{Result, err};
use parking_lot::Mutex;

/// Set by the exit handler once every device is stopped.
static DRIVER_GONE: AtomicBool = AtomicBool::new(false);
/// The devices started, for the exit handler to stop.
static DEVICES: Mutex<Vec<Weak<dyn Stop>>> = Mutex::new(Vec::new());
/// The process's count of library loads when the handler was last
/// registered (0: never).
static REGISTERED_AT: AtomicU64 = AtomicU64::new(0);

/// How long the exit handler waits for a device's work to end: a device
/// still busy then (a kernel that never ends) is left running.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Whether the process is exiting and the adapter no longer calls the driver.
pub(crate) fn driver_gone() -> bool {
    DRIVER_GONE.load(Ordering::Acquire)
}

/// `DEVICE_LOST` once the driver is gone: the answer of every operation that
/// would call it.
pub(crate) fn check() -> Result<()> {
    if driver_gone() {
        return Err(err!(DeviceLost, "the process is exiting: the Vulkan driver has been shut down"));
    }
    Ok(())
}

/// What the exit handler stops: a device's shared state, which names the
/// objects above this module (so it is named here only through this trait).
pub(crate) trait Stop: Send + Sync {
    /// Submits the device's open work, waits up to `timeout` for it and
    /// finishes it, and stops the device's threads.
    fn stop_for_exit(&self, timeout: Duration);
}

/// Adds `device` to those the exit handler stops, and registers the handler
/// after the driver's.
pub(crate) fn watch<D: Stop + 'static>(device: &Arc<D>) {
    let mut devices = DEVICES.lock();
    devices.retain(|d| d.strong_count() > 0);
    devices.push(Arc::downgrade(device) as Weak<dyn Stop>);
    drop(devices);
    after_driver_loads();
}

/// Registers the exit handler if libraries were loaded since it last was:
/// called after the calls that make the driver load its libraries (creating
/// the instance, a device, shader modules and pipelines).
pub(crate) fn after_driver_loads() {
    let loads = library_loads();
    if REGISTERED_AT.swap(loads, Ordering::AcqRel) == loads {
        return;
    }
    // SAFETY: `before_driver_exit` is a function of this library that does
    // not unwind. `atexit` from a shared library registers it for this
    // library (glibc's `atexit` passes the library's `__dso_handle`), so it
    // runs at `exit` or when the library is unloaded, whichever is first.
    if unsafe { libc::atexit(before_driver_exit) } != 0 {
        tracing::warn!("cannot register the Vulkan adapter's exit handler");
    }
}

/// The process's count of library loads (`dlpi_adds`), which grows whenever
/// a library is loaded.
fn library_loads() -> u64 {
    /// Reads the count from the first object and stops.
    ///
    /// # Safety
    /// `info` is a valid object description and `out` points to a `u64`,
    /// as `dl_iterate_phdr` and the call below pass them.
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, _: libc::size_t, out: *mut libc::c_void) -> c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid `info`, and `out` is the
        // `u64` the caller below lent.
        unsafe { *out.cast::<u64>() = (*info).dlpi_adds };
        1
    }
    let mut loads = 0u64;
    // SAFETY: the callback writes only through the pointer to `loads`, which
    // lives across the call, and stops at the first object.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut loads).cast()) };
    loads
}

/// The exit handler: stops every device, then marks the driver gone.
extern "C" fn before_driver_exit() {
    if DRIVER_GONE.load(Ordering::Acquire) {
        return;
    }
    let devices: Vec<Arc<dyn Stop>> = DEVICES.lock().iter().filter_map(Weak::upgrade).collect();
    // A panic must not cross into `exit`, which cannot unwind; the driver is
    // marked gone whatever happened.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for device in &devices {
            device.stop_for_exit(EXIT_WAIT);
        }
    }));
    DRIVER_GONE.store(true, Ordering::Release);
    // Dropped after the mark: a device no handle holds any more is released
    // without calling the driver.
    drop(devices);
}
