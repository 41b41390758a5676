//! A time limit per case: a case still running after
//! `UR_CONFORMANCE_CASE_TIMEOUT` seconds ends the whole run with exit code 3
//! and a line naming the case and device, instead of leaving the process (and
//! a CI job around it) waiting for ever on a hung driver call. A case cannot
//! be stopped on its own: the thread it runs on may be blocked inside a
//! driver, so the process ends. Before it ends, every thread's stack is
//! printed where `gdb` is installed (CI installs it): a rare hang seen once
//! in a CI run is then diagnosable from the log alone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The variable that sets the limit, in whole seconds; `0` turns it off.
pub const CASE_TIMEOUT_ENV: &str = "UR_CONFORMANCE_CASE_TIMEOUT";

/// The limit when the variable is unset. The slowest case on the CPU
/// machine takes a few seconds natively; valgrind runs set `0`.
pub const DEFAULT_CASE_TIMEOUT: Duration = Duration::from_secs(300);

/// The exit code of a run stopped by the limit.
pub const TIMED_OUT_EXIT_CODE: i32 = 3;

/// The limit from the environment: `None` when turned off, an error naming
/// the variable for anything but a whole number of seconds.
pub fn case_timeout() -> Result<Option<Duration>, String> {
    match std::env::var(CASE_TIMEOUT_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(Some(DEFAULT_CASE_TIMEOUT)),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{CASE_TIMEOUT_ENV} is not valid Unicode")),
        Ok(text) => parse_timeout(&text),
    }
}

fn parse_timeout(text: &str) -> Result<Option<Duration>, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(seconds) => Ok(Some(Duration::from_secs(seconds))),
        Err(_) => {
            Err(format!("{CASE_TIMEOUT_ENV}=`{text}`: expected a whole number of seconds (0 turns the limit off)"))
        }
    }
}

struct Running {
    what: String,
    since: Instant,
}

fn running() -> &'static Mutex<HashMap<u64, Running>> {
    static RUNNING: OnceLock<Mutex<HashMap<u64, Running>>> = OnceLock::new();
    RUNNING.get_or_init(Mutex::default)
}

/// Watches one running case until dropped.
pub struct Watch(Option<u64>);

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            running().lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        }
    }
}

/// Starts watching `what` (a case and its device) against the limit the
/// environment sets; `Err` names the variable when its value is invalid.
pub fn watch_case(what: impl Into<String>) -> Result<Watch, String> {
    Ok(watch(what, case_timeout()?))
}

/// Starts watching `what` (a case and its device) against `limit`; the
/// watching thread starts with the first case.
pub fn watch(what: impl Into<String>, limit: Option<Duration>) -> Watch {
    let Some(limit) = limit else { return Watch(None) };
    static WATCHER: OnceLock<()> = OnceLock::new();
    WATCHER.get_or_init(|| {
        std::thread::Builder::new()
            .name("cmdbuf-conformance-watchdog".into())
            .spawn(move || watch_loop(limit))
            .map(|_| ())
            .unwrap_or_else(|e| {
                eprintln!("cmdbuf-conformance: no watchdog thread ({e}); cases run without a time limit")
            })
    });
    register(what.into())
}

fn register(what: String) -> Watch {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    running().lock().unwrap_or_else(|e| e.into_inner()).insert(id, Running { what, since: Instant::now() });
    Watch(Some(id))
}

/// The running cases past `limit`, with how long each has run.
fn overdue(limit: Duration) -> Vec<String> {
    running()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .filter(|r| r.since.elapsed() >= limit)
        .map(|r| format!("{} ({} s)", r.what, r.since.elapsed().as_secs()))
        .collect()
}

fn watch_loop(limit: Duration) {
    loop {
        std::thread::sleep(Duration::from_secs(1).min(limit));
        let overdue = overdue(limit);
        if !overdue.is_empty() {
            eprintln!(
                "cmdbuf-conformance: stopping the run: still running after the {} s limit ({CASE_TIMEOUT_ENV}): {}",
                limit.as_secs(),
                overdue.join(", ")
            );
            print_thread_stacks();
            std::process::exit(TIMED_OUT_EXIT_CODE);
        }
    }
}

/// Prints every thread's stack to stderr with `gdb` attached to this
/// process, or a line saying why not.
fn print_thread_stacks() {
    let pid = std::process::id().to_string();
    let attached = std::process::Command::new("gdb")
        .args(["-p", &pid, "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"])
        .stdin(std::process::Stdio::null())
        .stdout(std::io::stderr())
        .stderr(std::io::stderr())
        .status();
    match attached {
        Ok(status) if status.success() => {}
        Ok(status) => eprintln!("cmdbuf-conformance: gdb could not print the threads' stacks ({status})"),
        Err(e) => eprintln!("cmdbuf-conformance: no threads' stacks: cannot run gdb ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_values() {
        assert_eq!(parse_timeout("0"), Ok(None));
        assert_eq!(parse_timeout(" 42 "), Ok(Some(Duration::from_secs(42))));
        for bad in ["", "-1", "1.5", "abc", "10s"] {
            let err = parse_timeout(bad).unwrap_err();
            assert!(err.contains(CASE_TIMEOUT_ENV) && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn overdue_cases_are_named_until_they_finish() {
        assert!(watch("unlimited", None).0.is_none());
        let watch = register("watchdog_test::slow on test:0".into());
        std::thread::sleep(Duration::from_millis(20));
        let late = overdue(Duration::from_millis(10));
        assert!(late.iter().any(|w| w.starts_with("watchdog_test::slow on test:0 (")), "{late:?}");
        assert!(!overdue(Duration::from_secs(3600)).iter().any(|w| w.contains("watchdog_test")));
        drop(watch);
        assert!(!overdue(Duration::ZERO).iter().any(|w| w.contains("watchdog_test")));
    }
}
