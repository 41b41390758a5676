//! The figures of a run as the report's tables, the goals and the suites'
//! own tables and goals read them: [`Lookup`] of one figure among the
//! records, the `median (p10–p90)` cell and ratio formats with their
//! [`NOISY`] flag, and a goal's [`Assessment`]. Below the report, the goals
//! and the suites that print their own tables (`graph.rs`), which all use
//! them.

use crate::stats::Summary;
use crate::suites::Record;

/// What a goal's assessment says about one device.
pub struct Assessment {
    /// The figures that decide the goal, in words.
    pub now: String,
    /// Whether the figures meet the goal.
    pub met: bool,
}

/// The figures of one device among a run's records.
pub struct Lookup<'a> {
    records: &'a [Record],
    device: &'a str,
}

impl<'a> Lookup<'a> {
    /// The records of `device` among `records`.
    pub fn new(records: &'a [Record], device: &'a str) -> Lookup<'a> {
        Lookup { records, device }
    }

    /// One figure.
    pub fn get(&self, benchmark: &str, shape: &str, variant: &str, metric: &str, n: usize) -> Option<&Summary> {
        self.records
            .iter()
            .find(|r| {
                r.device == self.device
                    && r.benchmark == benchmark
                    && r.shape == shape
                    && r.variant == variant
                    && r.metric == metric
                    && r.n == n
            })
            .map(|r| &r.summary)
    }

    /// The variants measured in `benchmark`, sorted.
    pub fn variants(&self, benchmark: &str) -> Vec<&'a str> {
        let mut v: Vec<&str> = self
            .records
            .iter()
            .filter(|r| r.device == self.device && r.benchmark == benchmark)
            .map(|r| r.variant.as_str())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// One record of the device (its backend and name are on every record).
    pub fn any(&self) -> Option<&'a Record> {
        self.records.iter().find(|r| r.device == self.device)
    }

    /// The sizes measured in `benchmark`, ascending.
    pub fn sizes(&self, benchmark: &str) -> Vec<usize> {
        let mut n: Vec<usize> =
            self.records.iter().filter(|r| r.device == self.device && r.benchmark == benchmark).map(|r| r.n).collect();
        n.sort_unstable();
        n.dedup();
        n
    }
}

/// Marks a figure (or a ratio of figures) whose p10–p90 spread exceeds
/// [`crate::stats::NOISY_SPREAD`]: its median alone may mislead.
pub const NOISY: &str = "†";

/// `median (p10–p90)` of a figure in nanoseconds divided by `scale`, in a
/// precision chosen for the magnitude, flagged when noisy.
pub fn cell(s: Option<&Summary>, scale: f64) -> String {
    match s {
        Some(s) => format!(
            "{} ({}–{}){}",
            num(s.median / scale),
            num(s.p10 / scale),
            num(s.p90 / scale),
            if s.is_noisy() { NOISY } else { "" }
        ),
        None => "—".into(),
    }
}

/// A number with the precision its magnitude needs.
pub fn num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `a / b` of the medians, flagged when either figure is noisy.
pub fn ratio(a: Option<&Summary>, b: Option<&Summary>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.median > 0.0 => {
            let flag = if a.is_noisy() || b.is_noisy() { NOISY } else { "" };
            format!("{:.1}x{flag}", a.median / b.median)
        }
        _ => "—".into(),
    }
}

/// A group's whole table on `device` from a run's records: `header`, then
/// `row(records, device, n)` for each size the group has there; empty
/// where it has none.
pub fn table_by_size(
    records: &[Record],
    device: &str,
    group: &str,
    header: impl FnOnce() -> String,
    row: impl Fn(&[Record], &str, usize) -> String,
) -> String {
    let sizes = Lookup::new(records, device).sizes(group);
    if sizes.is_empty() {
        return String::new();
    }
    let mut out = header();
    for n in sizes {
        out += &row(records, device, n);
    }
    out.push('\n');
    out
}
