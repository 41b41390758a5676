//! `cmdbuf-ls`: every adapter of this build, its platforms and devices, and the
//! adapters that are absent with the reason, like `sycl-ls` and `clinfo`.
//! For each device: its type, command-buffer support (native or cmdbuf-core's
//! software command buffer), replay path, update capabilities, events and
//! the kernel forms it builds. `--json` prints one JSON document.
//!
//! The devices are those `UR_DEVICE_SELECTOR` (else `ONEAPI_DEVICE_SELECTOR`)
//! selects, as for every program; `--all` ignores the selector. Exits with 2
//! when the selector or an adapter setting is invalid, or no device is
//! listed.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use cmdbuf::{Backend, CommandBufferSupport, DeviceType, Loader};
use serde::Serialize;

/// Lists the adapters, platforms and devices of cmdbuf.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// Every device, ignoring UR_DEVICE_SELECTOR and ONEAPI_DEVICE_SELECTOR.
    #[arg(long)]
    all: bool,
    /// More of each device: vendor, driver, memory, compute units.
    #[arg(long, short)]
    verbose: bool,
}

/// The listing, as `--json` prints it.
#[derive(Serialize)]
struct Listing {
    selector: String,
    adapters: Vec<Adapter>,
}

/// One adapter: present with its platforms, or absent with the reason.
#[derive(Serialize)]
struct Adapter {
    backend: &'static str,
    present: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    platforms: Vec<Platform>,
}

#[derive(Serialize)]
struct Platform {
    name: String,
    version: String,
    devices: Vec<DeviceRow>,
}

#[derive(Serialize)]
struct DeviceRow {
    /// `backend:index`, as the selector counts.
    id: String,
    name: String,
    #[serde(rename = "type")]
    device_type: &'static str,
    vendor: String,
    driver_version: String,
    compute_units: u32,
    global_mem_bytes: u64,
    command_buffer: CommandBufferRow,
    kernel_forms: Vec<String>,
}

#[derive(Serialize)]
struct CommandBufferRow {
    /// `native` or `software` (cmdbuf-core's software command buffer).
    support: &'static str,
    /// `driver`, `planned` or `software`.
    replay: &'static str,
    /// The update capabilities, by UR's names without the prefix.
    update: Vec<String>,
    events: bool,
}

fn device_type(t: DeviceType) -> &'static str {
    match t {
        DeviceType::Cpu => "cpu",
        DeviceType::Gpu => "gpu",
        DeviceType::Accelerator => "accelerator",
    }
}

/// The listing of `loader`: adapters in the loader's order, each platform
/// with the devices the selector selects.
fn listing(loader: &Loader) -> Listing {
    let selected = loader.devices();
    let adapters = Backend::ALL
        .into_iter()
        .filter_map(|backend| {
            let absent = loader.absent().iter().find(|a| a.backend == backend);
            let platforms: Vec<Platform> = loader
                .platforms()
                .iter()
                .filter(|p| p.backend() == backend)
                .map(|p| Platform {
                    name: p.name().to_string(),
                    version: p.version().to_string(),
                    devices: p.devices().iter().filter(|d| selected.contains(d)).map(device_row).collect(),
                })
                .collect();
            if platforms.is_empty() && absent.is_none() {
                return None;
            }
            Some(Adapter {
                backend: backend.name(),
                present: absent.is_none(),
                reason: absent.map(|a| a.reason.clone()),
                platforms,
            })
        })
        .collect();
    Listing { selector: loader.selector().to_string(), adapters }
}

fn device_row(device: &cmdbuf::Device) -> DeviceRow {
    let info = device.info();
    let cb = info.command_buffer;
    DeviceRow {
        id: device.to_string(),
        name: info.name.clone(),
        device_type: device_type(info.device_type),
        vendor: info.vendor.clone(),
        driver_version: info.driver_version.clone(),
        compute_units: info.max_compute_units,
        global_mem_bytes: info.global_mem_size,
        command_buffer: CommandBufferRow {
            support: match cb.support {
                CommandBufferSupport::Native => "native",
                CommandBufferSupport::Emulated => "software",
            },
            replay: cb.replay_path.name(),
            update: cb.update.iter_names().map(|(name, _)| name.to_ascii_lowercase()).collect(),
            events: cb.events,
        },
        kernel_forms: info.source_forms.iter().map(ToString::to_string).collect(),
    }
}

fn text(listing: &Listing, verbose: bool) -> String {
    let mut out = String::new();
    for adapter in &listing.adapters {
        match &adapter.reason {
            Some(reason) => {
                let _ = writeln!(out, "{:<7} absent: {reason}", adapter.backend);
            }
            None => {
                let _ = writeln!(out, "{:<7} present", adapter.backend);
            }
        }
        for platform in &adapter.platforms {
            let _ = writeln!(out, "  platform: {} ({})", platform.name, platform.version);
            if platform.devices.is_empty() {
                let _ = writeln!(out, "    no device selected");
            }
            for d in &platform.devices {
                let cb = &d.command_buffer;
                let update = if cb.update.is_empty() { "none".to_string() } else { cb.update.join(", ") };
                let _ = writeln!(out, "    [{}] {} ({})", d.id, d.name, d.device_type);
                let _ = writeln!(
                    out,
                    "        command buffers: {} (replay: {}), events: {}; updates: {update}",
                    cb.support,
                    cb.replay,
                    if cb.events { "yes" } else { "no" },
                );
                let _ = writeln!(out, "        kernels: {}", d.kernel_forms.join(", "));
                if verbose {
                    let _ = writeln!(
                        out,
                        "        vendor: {}; driver: {}; compute units: {}; global memory: {} MiB",
                        d.vendor,
                        d.driver_version,
                        d.compute_units,
                        d.global_mem_bytes >> 20
                    );
                }
            }
        }
    }
    out
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = cmdbuf::init_logging() {
        eprintln!("cmdbuf-ls: {e}");
        return ExitCode::from(2);
    }
    let loader = if cli.all {
        cmdbuf::load_all()
    } else {
        match cmdbuf::load() {
            Ok(loader) => loader,
            Err(e) => {
                eprintln!("cmdbuf-ls: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let listing = listing(&loader);
    let out = if cli.json {
        serde_json::to_string_pretty(&listing).expect("a listing of strings and numbers serializes") + "\n"
    } else {
        text(&listing, cli.verbose)
    };
    // A reader that has gone (`cmdbuf-ls | head`) ends the output, not the program with a panic.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if loader.devices().is_empty() {
        eprintln!("cmdbuf-ls: no device is selected by `{}`", loader.selector());
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
