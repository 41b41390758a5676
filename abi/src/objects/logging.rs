//! The adapter's diagnostics: cmdbuf-core's and this crate's `tracing` events go
//! to the output `UR_LOG_RS_<BACKEND>` names, in the syntax UR's own
//! adapters read from `UR_LOG_<ADAPTER>` (`level:debug;output:stderr`,
//! `level:info;flush:warning;output:file,out.log`), or to stderr when
//! `UR_LOG` holds a `tracing` filter (`UR_LOG=cmdbuf_abi=trace`, the convention
//! of the Rust crates and binaries); and to the logger callback an
//! application set with `urAdapterSetLoggerCallback`, from its level up.
//!
//! The subscriber is this library's own: each adapter library carries its
//! own copy of `tracing`, so installing it touches nothing of the host
//! process.

use std::fmt::Write;
use std::fs::File;
use std::io::IsTerminal;
use std::sync::Mutex;

use cmdbuf_core::{Backend, Result, err};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::sys::ur_logger_level_t;

/// The `tracing` filter variable of the Rust crates, binaries and these libraries.
pub(crate) const LOG_ENV: &str = "UR_LOG";

/// The variable in UR's logger syntax for the library of `backend`: named
/// after the library (`libur_adapter_rs_cpu.so` reads `UR_LOG_RS_CPU`) as
/// UR's `UR_LOG_CUDA` is after `libur_adapter_cuda.so`.
pub(crate) fn ur_log_env(backend: Backend) -> String {
    format!("UR_LOG_RS_{}", backend.name().to_ascii_uppercase())
}

/// Where UR's syntax sends messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    Stdout,
    Stderr,
    File(String),
}

/// A value of `UR_LOG_RS_<BACKEND>`: the lowest level printed and the
/// output. The flush level is checked and needs nothing more: every message
/// is written unbuffered. Without `level`, errors only; without `output`,
/// stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UrLogSpec {
    pub(crate) level: LevelFilter,
    pub(crate) output: Output,
}

/// Reads one UR log level name.
fn level(name: &str) -> Option<LevelFilter> {
    Some(match name {
        "debug" => LevelFilter::DEBUG,
        "info" => LevelFilter::INFO,
        "warning" | "warn" => LevelFilter::WARN,
        "error" => LevelFilter::ERROR,
        "quiet" => LevelFilter::OFF,
        _ => return None,
    })
}

/// Parses UR's logger syntax: `;`-separated `name:value` options, each at
/// most once, of `level`, `flush` and `output` (`stdout`, `stderr` or
/// `file,<path>`). `Err` says what is wrong.
pub(crate) fn parse_ur_log(value: &str) -> std::result::Result<UrLogSpec, String> {
    const LEVELS: &str = "debug, info, warning, error or quiet";
    let mut spec = UrLogSpec { level: LevelFilter::ERROR, output: Output::Stderr };
    let mut seen: Vec<&str> = Vec::new();
    for option in value.split(';').map(str::trim).filter(|o| !o.is_empty()) {
        let Some((name, arg)) = option.split_once(':') else {
            return Err(format!("option `{option}` is not `name:value`"));
        };
        let (name, arg) = (name.trim(), arg.trim());
        if seen.contains(&name) {
            return Err(format!("option `{name}` is given twice"));
        }
        seen.push(name);
        match name {
            "level" => spec.level = level(arg).ok_or_else(|| format!("level `{arg}` is not one of {LEVELS}"))?,
            "flush" => {
                level(arg).ok_or_else(|| format!("flush level `{arg}` is not one of {LEVELS}"))?;
            }
            "output" => {
                spec.output = match arg.split_once(',') {
                    None if arg == "stdout" => Output::Stdout,
                    None if arg == "stderr" => Output::Stderr,
                    Some(("file", path)) if !path.trim().is_empty() => Output::File(path.trim().to_string()),
                    _ => return Err(format!("output `{arg}` is not `stdout`, `stderr` or `file,<path>`")),
                }
            }
            _ => return Err(format!("unknown option `{name}` (options: level, flush, output)")),
        }
    }
    Ok(spec)
}

type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// The layer that prints events: from `UR_LOG_RS_<BACKEND>` if set, else
/// from `UR_LOG`, else none. Colour only on a terminal.
fn output_layer(backend: Backend) -> Result<Option<BoxedLayer>> {
    let name = ur_log_env(backend);
    if let Some(value) = std::env::var_os(&name) {
        let text = value.to_string_lossy();
        let spec = parse_ur_log(&text).map_err(|why| {
            err!(
                InvalidValue,
                "{name}={text:?}: {why}; the syntax is UR's: \
                 `[level:debug|info|warning|error];[flush:<level>];[output:stdout|stderr|file,<path>]`"
            )
        })?;
        let fmt = tracing_subscriber::fmt::layer().with_target(true);
        let layer: BoxedLayer = match spec.output {
            Output::Stdout => Box::new(
                fmt.with_ansi(std::io::stdout().is_terminal()).with_writer(std::io::stdout).with_filter(spec.level),
            ),
            Output::Stderr => Box::new(
                fmt.with_ansi(std::io::stderr().is_terminal()).with_writer(std::io::stderr).with_filter(spec.level),
            ),
            Output::File(path) => {
                let file =
                    File::create(&path).map_err(|e| err!(InvalidValue, "{name}: cannot create `{path}`: {e}"))?;
                Box::new(fmt.with_ansi(false).with_writer(Mutex::new(file)).with_filter(spec.level))
            }
        };
        return Ok(Some(layer));
    }
    let Some(filter) = std::env::var(LOG_ENV).ok().filter(|f| !f.trim().is_empty()) else { return Ok(None) };
    let filter = EnvFilter::try_new(&filter)
        .map_err(|e| err!(InvalidValue, "{LOG_ENV}={filter:?}: not a tracing filter: {e}"))?;
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_filter(filter);
    Ok(Some(Box::new(layer)))
}

/// Installs the library's subscriber for `backend`; later calls do nothing.
/// An invalid `UR_LOG_RS_<BACKEND>` or `UR_LOG` is an `InvalidValue` error
/// naming it, which `urAdapterGet` returns (the first call only: later ones
/// find the adapter open).
pub(crate) fn init(backend: Backend) -> Result<()> {
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if ONCE.get().is_some() {
        return Ok(());
    }
    let output = output_layer(backend)?;
    ONCE.get_or_init(|| {
        // A per-layer filter: the callback sees only events its level admits.
        // Without an output layer no span is made: `ThreadAlive` turns span
        // callsites off for good (a span costs a slot of the registry's
        // thread-indexed slab, which panics on a thread whose locals are
        // gone: libsycl releases queues at exit). No `Option` layer: an
        // absent one would count as interested in everything.
        // `ThreadAlive` outermost, so that it is asked first.
        let installed = match output {
            Some(output) => tracing::subscriber::set_global_default(
                Registry::default()
                    .with(output)
                    .with(CallbackLayer.with_filter(filter_fn(callback_admits)))
                    .with(ThreadAlive { spans: true }),
            ),
            None => tracing::subscriber::set_global_default(
                Registry::default()
                    .with(CallbackLayer.with_filter(filter_fn(callback_admits)))
                    .with(ThreadAlive { spans: false }),
            ),
        };
        if installed.is_err() {
            tracing::debug!("a tracing subscriber was already installed");
        }
    });
    Ok(())
}

/// Turns spans and events off on a thread whose thread-locals are gone: at
/// process exit, libsycl and C destructors call the library after the
/// calling thread's locals have been destroyed, and the registry (a slab
/// indexed by a thread-local id) and the output layer (a thread-local
/// buffer) panic there, which aborts the process inside a C call.
///
/// It also keeps spans off where no layer prints them: the callback takes
/// events only, but a per-layer filter that turns a span away does not stop
/// the registry from making it (a slab slot, thread-local lookups, per
/// `#[instrument]`ed call: a third of the library's own time of an eager
/// launch through the ABI on Intel's OpenCL CPU runtime).
struct ThreadAlive {
    /// Whether spans are made at all: only where an output layer prints
    /// them as events' context.
    spans: bool,
}

/// A thread-local with a destructor: reading it fails once the thread's
/// locals are being destroyed.
struct AliveMarker;

impl Drop for AliveMarker {
    fn drop(&mut self) {}
}

thread_local! {
    static ALIVE: AliveMarker = const { AliveMarker };
}

impl<S: Subscriber> Layer<S> for ThreadAlive {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.is_span() && !self.spans {
            return Interest::never();
        }
        // Asked at every use, not once per callsite: the answer depends on
        // the thread.
        Interest::sometimes()
    }

    fn enabled(&self, _: &Metadata<'_>, _: Context<'_, S>) -> bool {
        ALIVE.try_with(|_| ()).is_ok()
    }
}

/// Forwards warnings and errors (and below, if the callback asks) to the
/// application's logger callback.
struct CallbackLayer;

/// UR's logger level of a `tracing` level.
fn ur_level(level: &Level) -> ur_logger_level_t {
    match *level {
        Level::ERROR => ur_logger_level_t::UR_LOGGER_LEVEL_ERROR,
        Level::WARN => ur_logger_level_t::UR_LOGGER_LEVEL_WARN,
        Level::INFO => ur_logger_level_t::UR_LOGGER_LEVEL_INFO,
        _ => ur_logger_level_t::UR_LOGGER_LEVEL_DEBUG,
    }
}

/// Whether the application's logger callback takes `meta`: an event of a
/// level it takes (never a span).
fn callback_admits(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_event()
        && crate::objects::adapter::installed().is_some_and(|adapter| adapter.value.logs_at(ur_level(meta.level())))
}

impl<S: Subscriber> Layer<S> for CallbackLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Some(adapter) = crate::objects::adapter::installed() else { return };
        let level = ur_level(event.metadata().level());
        let mut message = Message(String::new());
        event.record(&mut message);
        adapter.value.log(level, &format!("<cmdbuf> {}: {}", event.metadata().target(), message.0.trim_start()));
    }
}

/// An event's fields as one line: the message, then `name=value` pairs.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ur_logger_syntax() {
        let spec = parse_ur_log("level:debug;output:stderr").unwrap();
        assert_eq!(spec, UrLogSpec { level: LevelFilter::DEBUG, output: Output::Stderr });
        let spec = parse_ur_log("level:info;flush:warning;output:file,out.log").unwrap();
        assert_eq!(spec, UrLogSpec { level: LevelFilter::INFO, output: Output::File("out.log".into()) });
        assert_eq!(
            parse_ur_log("output:stdout").unwrap(),
            UrLogSpec { level: LevelFilter::ERROR, output: Output::Stdout }
        );
        assert_eq!(parse_ur_log("").unwrap().level, LevelFilter::ERROR);
        for (bad, why) in [
            ("level:verbose", "level `verbose`"),
            ("debug", "not `name:value`"),
            ("level:info;level:debug", "twice"),
            ("output:file", "`file,<path>`"),
            ("output:file,", "`file,<path>`"),
            ("color:on", "unknown option `color`"),
            ("flush:sometimes", "flush level"),
        ] {
            let error = parse_ur_log(bad).unwrap_err();
            assert!(error.contains(why), "{bad:?}: {error}");
        }
    }

    #[test]
    fn the_variable_is_named_after_the_library() {
        assert_eq!(ur_log_env(Backend::Cpu), "UR_LOG_RS_CPU");
        assert_eq!(ur_log_env(Backend::OpenCl), "UR_LOG_RS_OPENCL");
        assert_eq!(ur_log_env(Backend::Cuda), "UR_LOG_RS_CUDA");
        assert_eq!(ur_log_env(Backend::Vulkan), "UR_LOG_RS_VULKAN");
    }
}
