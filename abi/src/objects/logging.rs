//! The adapter's diagnostics: ur-core's and this crate's `tracing` events go
//! to stderr when `UR_LOG_RS` holds a filter (`UR_LOG_RS=debug`,
//! `UR_LOG_RS=ur_abi=trace`), and to the logger callback an application set
//! with `urAdapterSetLoggerCallback`, from its level up.
//!
//! The subscriber is this library's own: each adapter library carries its
//! own copy of `tracing`, so installing it touches nothing of the host
//! process.

use std::fmt::Write;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::sys::ur_logger_level_t;

/// Installs the library's subscriber; later calls do nothing.
pub(crate) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let stderr = std::env::var("UR_LOG_RS").ok().filter(|f| !f.trim().is_empty()).map(|filter| {
            tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(EnvFilter::new(filter))
        });
        let subscriber = Registry::default().with(stderr).with(CallbackLayer);
        if tracing::subscriber::set_global_default(subscriber).is_err() {
            tracing::debug!("a tracing subscriber was already installed");
        }
    });
}

/// Forwards warnings and errors (and below, if the callback asks) to the
/// application's logger callback.
struct CallbackLayer;

impl<S: Subscriber> Layer<S> for CallbackLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Some(adapter) = crate::objects::adapter::installed() else { return };
        let level = match *event.metadata().level() {
            Level::ERROR => ur_logger_level_t::UR_LOGGER_LEVEL_ERROR,
            Level::WARN => ur_logger_level_t::UR_LOGGER_LEVEL_WARN,
            Level::INFO => ur_logger_level_t::UR_LOGGER_LEVEL_INFO,
            _ => ur_logger_level_t::UR_LOGGER_LEVEL_DEBUG,
        };
        let mut message = Message(String::new());
        event.record(&mut message);
        adapter.value.log(level, &format!("<ur-rs> {}: {}", event.metadata().target(), message.0.trim_start()));
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
