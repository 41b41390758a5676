//! The logging convention of the crates and their binaries: every crate
//! reports through `tracing`, and a program shows the events with
//! [`init_logging`], which reads one variable, `UR_LOG`, holding a
//! `tracing` filter (`UR_LOG=debug`, `UR_LOG=cmdbuf_core=debug,cmdbuf_cpu=trace`).
//! The UR adapter libraries read the same variable, and UR's own
//! `UR_LOG_RS_<BACKEND>` syntax besides (docs/environment.md).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::{Result, err};

/// The variable holding the `tracing` filter.
pub const LOG_ENV: &str = "UR_LOG";

/// Sends `tracing` events to stderr, filtered by `UR_LOG` (unset or empty:
/// errors only), with colour only when stderr is a terminal. A value that is
/// not a filter is an `InvalidValue` error naming the variable. When the
/// program has installed a subscriber already, that one stays.
///
/// ```
/// fn main() -> cmdbuf::Result<()> {
///     cmdbuf::init_logging()?; // UR_LOG=cmdbuf_core=debug shows the loader's choices
///     let device = cmdbuf::load()?.first_device()?;
///     println!("{device}");
///     Ok(())
/// }
/// ```
pub fn init_logging() -> Result<()> {
    let value = std::env::var(LOG_ENV).ok().filter(|v| !v.trim().is_empty());
    let filter = match &value {
        Some(v) => EnvFilter::try_new(v).map_err(|e| {
            err!(
                InvalidValue,
                "{LOG_ENV}={v:?}: not a tracing filter ({e}); e.g. `debug` or `cmdbuf_core=debug,cmdbuf_cpu=trace`"
            )
        })?,
        None => EnvFilter::new("error"),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
    Ok(())
}
