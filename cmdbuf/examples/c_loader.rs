//! The C API through Intel's UR loader: this program calls `urLoaderInit`,
//! `urAdapterGet`, `urPlatformGet`, `urDeviceGet` and `urDeviceGetInfo` as a
//! C program does, with the loader forced to load cmdbuf's CPU adapter
//! library (`libur_adapter_rs_cpu.so`). It needs the loader (from Intel's
//! PyPI wheels: `scripts/oneapi-venv.sh` puts it in `.oneapi/`, or set
//! `UR_RS_ONEAPI`) and the library built beside this example; without
//! either it says what is missing and exits successfully, having checked
//! nothing (`UR_RS_REQUIRE_ONEAPI=1` makes that a failure).
//!
//! ```sh
//! cargo build -p cmdbuf-ur-adapter-cpu && cargo run -p cmdbuf --example c_loader
//! ```

use std::ffi::{CStr, c_void};
use std::path::PathBuf;
use std::process::ExitCode;

type Handle = *mut c_void;
type UrResult = u32;

/// `ur_device_type_t::UR_DEVICE_TYPE_ALL`.
const DEVICE_TYPE_ALL: u32 = 2;
/// `ur_platform_info_t::UR_PLATFORM_INFO_NAME`.
const PLATFORM_INFO_NAME: u32 = 1;
/// `ur_device_info_t::UR_DEVICE_INFO_NAME`.
const DEVICE_INFO_NAME: u32 = 66;
/// `ur_device_info_t::UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP`.
const DEVICE_INFO_UPDATE_CAPABILITIES: u32 = 0x1001;

/// The entry points used, as `ur_api.h` declares them.
struct Api {
    loader_init: unsafe extern "C" fn(u32, Handle) -> UrResult,
    adapter_get: unsafe extern "C" fn(u32, *mut Handle, *mut u32) -> UrResult,
    platform_get: unsafe extern "C" fn(Handle, u32, *mut Handle, *mut u32) -> UrResult,
    platform_get_info: unsafe extern "C" fn(Handle, u32, usize, *mut c_void, *mut usize) -> UrResult,
    device_get: unsafe extern "C" fn(Handle, u32, u32, *mut Handle, *mut u32) -> UrResult,
    device_get_info: unsafe extern "C" fn(Handle, u32, usize, *mut c_void, *mut usize) -> UrResult,
    adapter_release: unsafe extern "C" fn(Handle) -> UrResult,
    loader_tear_down: unsafe extern "C" fn() -> UrResult,
    _library: libloading::Library,
}

fn check(what: &str, result: UrResult) -> Result<(), String> {
    if result == 0 { Ok(()) } else { Err(format!("{what} returned ur_result_t {result}")) }
}

/// What this example needs, or why it is not here.
fn find() -> Result<(PathBuf, PathBuf), String> {
    let prefix = std::env::var_os("UR_RS_ONEAPI")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.oneapi"));
    let loader = prefix.join("lib/libur_loader.so.0");
    if !loader.is_file() {
        return Err(format!("no UR loader at {} (run scripts/oneapi-venv.sh, or set UR_RS_ONEAPI)", loader.display()));
    }
    // target/<profile>/examples/c_loader: the adapter library is in target/<profile>.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let library = exe.parent().and_then(|d| d.parent()).map(|d| d.join("libur_adapter_rs_cpu.so"));
    match library {
        Some(library) if library.is_file() => Ok((loader, library)),
        _ => Err("no libur_adapter_rs_cpu.so beside this example (run `cargo build -p cmdbuf-ur-adapter-cpu`)".into()),
    }
}

/// A string-valued info query: the size first, then the bytes.
fn info_string(
    query: unsafe extern "C" fn(Handle, u32, usize, *mut c_void, *mut usize) -> UrResult,
    handle: Handle,
    prop: u32,
) -> Result<String, String> {
    let mut size = 0usize;
    // SAFETY: a size query: no value pointer, `size` is a live usize.
    check("size query", unsafe { query(handle, prop, 0, std::ptr::null_mut(), &mut size) })?;
    let mut bytes = vec![0u8; size.max(1)];
    // SAFETY: `bytes` holds `size` bytes, as the query said it needs.
    check("info query", unsafe { query(handle, prop, size, bytes.as_mut_ptr().cast(), std::ptr::null_mut()) })?;
    let text = CStr::from_bytes_until_nul(&bytes).map_err(|e| e.to_string())?;
    Ok(text.to_string_lossy().into_owned())
}

fn run(loader: PathBuf, library: PathBuf) -> Result<(), String> {
    // SAFETY: nothing else runs yet in this process: no thread reads the
    // environment while it changes. The loader reads it in urLoaderInit.
    unsafe { std::env::set_var("UR_ADAPTERS_FORCE_LOAD", &library) };
    // SAFETY: the UR loader is a plain C library; its initialisers only set
    // up its own state.
    let lib = unsafe { libloading::Library::new(&loader) }.map_err(|e| e.to_string())?;
    // SAFETY: each symbol has the signature `ur_api.h` (UR 0.12) declares
    // for it, handles being pointers and enums 32-bit integers.
    let api = unsafe {
        Api {
            loader_init: *lib.get(b"urLoaderInit\0").map_err(|e| e.to_string())?,
            adapter_get: *lib.get(b"urAdapterGet\0").map_err(|e| e.to_string())?,
            platform_get: *lib.get(b"urPlatformGet\0").map_err(|e| e.to_string())?,
            platform_get_info: *lib.get(b"urPlatformGetInfo\0").map_err(|e| e.to_string())?,
            device_get: *lib.get(b"urDeviceGet\0").map_err(|e| e.to_string())?,
            device_get_info: *lib.get(b"urDeviceGetInfo\0").map_err(|e| e.to_string())?,
            adapter_release: *lib.get(b"urAdapterRelease\0").map_err(|e| e.to_string())?,
            loader_tear_down: *lib.get(b"urLoaderTearDown\0").map_err(|e| e.to_string())?,
            _library: lib,
        }
    };
    // SAFETY: each call below passes what its contract asks: counts and
    // arrays of the sizes given, handles the loader returned.
    unsafe {
        check("urLoaderInit", (api.loader_init)(0, std::ptr::null_mut()))?;
        let mut count = 0u32;
        check("urAdapterGet", (api.adapter_get)(0, std::ptr::null_mut(), &mut count))?;
        if count == 0 {
            return Err("the loader found no adapter".into());
        }
        let mut adapters = vec![std::ptr::null_mut(); count as usize];
        check("urAdapterGet", (api.adapter_get)(count, adapters.as_mut_ptr(), std::ptr::null_mut()))?;
        let mut devices_seen = 0;
        for &adapter in &adapters {
            let mut n = 0u32;
            check("urPlatformGet", (api.platform_get)(adapter, 0, std::ptr::null_mut(), &mut n))?;
            let mut platforms = vec![std::ptr::null_mut(); n as usize];
            if n > 0 {
                check("urPlatformGet", (api.platform_get)(adapter, n, platforms.as_mut_ptr(), std::ptr::null_mut()))?;
            }
            for &platform in &platforms {
                println!("platform: {}", info_string(api.platform_get_info, platform, PLATFORM_INFO_NAME)?);
                let mut d = 0u32;
                check("urDeviceGet", (api.device_get)(platform, DEVICE_TYPE_ALL, 0, std::ptr::null_mut(), &mut d))?;
                let mut devices = vec![std::ptr::null_mut(); d as usize];
                if d > 0 {
                    check(
                        "urDeviceGet",
                        (api.device_get)(platform, DEVICE_TYPE_ALL, d, devices.as_mut_ptr(), std::ptr::null_mut()),
                    )?;
                }
                for &device in &devices {
                    let mut caps = 0u32;
                    check(
                        "urDeviceGetInfo",
                        (api.device_get_info)(
                            device,
                            DEVICE_INFO_UPDATE_CAPABILITIES,
                            4,
                            (&raw mut caps).cast(),
                            std::ptr::null_mut(),
                        ),
                    )?;
                    let name = info_string(api.device_get_info, device, DEVICE_INFO_NAME)?;
                    println!("  device: {name} (command-buffer update capabilities {caps:#x})");
                    devices_seen += 1;
                }
            }
        }
        for adapter in adapters {
            check("urAdapterRelease", (api.adapter_release)(adapter))?;
        }
        check("urLoaderTearDown", (api.loader_tear_down)())?;
        if devices_seen == 0 {
            return Err("the CPU library reported no device".into());
        }
    }
    println!("ok: cmdbuf's CPU adapter through Intel's UR loader");
    Ok(())
}

fn main() -> ExitCode {
    let (loader, library) = match find() {
        Ok(found) => found,
        Err(why) if std::env::var_os("UR_RS_REQUIRE_ONEAPI").is_none() => {
            println!("skipped: {why}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("c_loader: {why} (UR_RS_REQUIRE_ONEAPI is set)");
            return ExitCode::FAILURE;
        }
    };
    match run(loader, library) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("c_loader: {why}");
            ExitCode::FAILURE
        }
    }
}
