//! Device selection with the `ONEAPI_DEVICE_SELECTOR` grammar.
//!
//! ```text
//! selector := term (';' term)*
//! term     := ['!'] backend ':' filter (',' filter)*
//! backend  := 'cpu' | 'native_cpu' | 'opencl' | 'vulkan' | 'cuda' | '*'
//! filter   := '*' | 'cpu' | 'gpu' | 'fpga' | index
//! ```
//!
//! A device is selected when some positive term matches it (or there are
//! only negative terms) and no negative term does. Indices count the devices
//! of one backend across its platforms, as `cuda:1` does for DPC++ users.
//!
//! `UR_DEVICE_SELECTOR` is read first; when it is unset, `ONEAPI_DEVICE_SELECTOR`
//! is honoured, and there the names of DPC++ backends this project has no
//! adapter for (`level_zero`, `hip`, `offload`) are accepted and select nothing.
//!
//! ```
//! use cmdbuf::{Backend, DeviceSelector, DeviceType};
//! let s = DeviceSelector::parse("opencl:gpu;cpu:*").unwrap();
//! assert!(s.matches(Backend::Cpu, 0, DeviceType::Cpu));
//! assert!(!s.matches(Backend::OpenCl, 0, DeviceType::Cpu));
//! assert!(DeviceSelector::parse("metal:0").is_err());
//! ```

use std::fmt;

use crate::device::DeviceType;
use crate::error::Result;
use crate::platform::Backend;
use crate::{UrError, err};

/// The variable read first.
pub const UR_DEVICE_SELECTOR: &str = "UR_DEVICE_SELECTOR";
/// The DPC++ variable, honoured when [`UR_DEVICE_SELECTOR`] is unset.
pub const ONEAPI_DEVICE_SELECTOR: &str = "ONEAPI_DEVICE_SELECTOR";

/// Backends that DPC++ knows and this project does not implement: accepted in
/// `ONEAPI_DEVICE_SELECTOR`, where they select nothing.
const FOREIGN_BACKENDS: [&str; 3] = ["level_zero", "hip", "offload"];

#[derive(Clone, Debug, PartialEq, Eq)]
enum BackendPattern {
    Any,
    One(Backend),
    /// A DPC++ backend without an adapter here.
    Foreign(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Filter {
    Any,
    Type(DeviceType),
    /// `fpga`: no adapter here has one, so it matches nothing.
    Fpga,
    Index(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    negative: bool,
    backend: BackendPattern,
    filters: Vec<Filter>,
}

/// A parsed selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSelector {
    terms: Vec<Term>,
    source: String,
}

impl DeviceSelector {
    /// Selects every device.
    pub fn all() -> DeviceSelector {
        DeviceSelector {
            terms: vec![Term { negative: false, backend: BackendPattern::Any, filters: vec![Filter::Any] }],
            source: "*:*".into(),
        }
    }

    /// Parses a `UR_DEVICE_SELECTOR` value; a malformed value is an
    /// `InvalidValue` error naming the valid backends.
    pub fn parse(value: &str) -> Result<DeviceSelector> {
        Self::parse_with(value, false)
    }

    /// Parses an `ONEAPI_DEVICE_SELECTOR` value, which may also name DPC++
    /// backends without an adapter here (`level_zero`, `hip`, `offload`).
    pub fn parse_oneapi(value: &str) -> Result<DeviceSelector> {
        Self::parse_with(value, true)
    }

    fn parse_with(value: &str, accept_foreign: bool) -> Result<DeviceSelector> {
        let mut terms = Vec::new();
        for raw in value.split(';') {
            let raw = raw.trim();
            if raw.is_empty() {
                return Err(malformed(value, "empty term"));
            }
            let (negative, body) = match raw.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, raw),
            };
            let Some((backend, filters)) = body.split_once(':') else {
                return Err(malformed(value, &format!("term `{raw}` has no `:` between backend and devices")));
            };
            let backend = parse_backend(backend.trim(), accept_foreign)
                .ok_or_else(|| malformed(value, &format!("unknown backend `{}`", backend.trim())))?;
            let filters = filters
                .split(',')
                .map(|f| parse_filter(f.trim()).map_err(|why| malformed(value, &why)))
                .collect::<Result<Vec<_>>>()?;
            terms.push(Term { negative, backend, filters });
        }
        Ok(DeviceSelector { terms, source: value.to_string() })
    }

    /// Reads `UR_DEVICE_SELECTOR`, else `ONEAPI_DEVICE_SELECTOR`, else selects
    /// everything. An empty value counts as unset.
    pub fn from_env() -> Result<DeviceSelector> {
        let read = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(v) = read(UR_DEVICE_SELECTOR) {
            return Self::parse(&v).map_err(|e| rename(e, UR_DEVICE_SELECTOR));
        }
        if let Some(v) = read(ONEAPI_DEVICE_SELECTOR) {
            return Self::parse_oneapi(&v).map_err(|e| rename(e, ONEAPI_DEVICE_SELECTOR));
        }
        Ok(Self::all())
    }

    /// Whether the device with this backend, per-backend index and type is selected.
    pub fn matches(&self, backend: Backend, index: usize, device_type: DeviceType) -> bool {
        let hit = |t: &Term| t.backend_matches(backend) && t.filters.iter().any(|f| f.matches(index, device_type));
        let any_positive = self.terms.iter().any(|t| !t.negative);
        let accepted = !any_positive || self.terms.iter().any(|t| !t.negative && hit(t));
        let rejected = self.terms.iter().any(|t| t.negative && hit(t));
        accepted && !rejected
    }

    /// Whether any device of `backend` could be selected: the loader skips
    /// opening drivers of backends that cannot.
    pub fn may_select_backend(&self, backend: Backend) -> bool {
        let any_positive = self.terms.iter().any(|t| !t.negative);
        let positive = !any_positive || self.terms.iter().any(|t| !t.negative && t.backend_matches(backend));
        let excluded_whole =
            self.terms.iter().any(|t| t.negative && t.backend_matches(backend) && t.filters.contains(&Filter::Any));
        positive && !excluded_whole
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Term {
    fn backend_matches(&self, backend: Backend) -> bool {
        match &self.backend {
            BackendPattern::Any => true,
            BackendPattern::One(b) => *b == backend,
            BackendPattern::Foreign(_) => false,
        }
    }
}

impl Filter {
    fn matches(&self, index: usize, device_type: DeviceType) -> bool {
        match self {
            Filter::Any => true,
            Filter::Type(t) => *t == device_type,
            Filter::Fpga => false,
            Filter::Index(i) => *i == index,
        }
    }
}

fn parse_backend(name: &str, accept_foreign: bool) -> Option<BackendPattern> {
    if name == "*" {
        return Some(BackendPattern::Any);
    }
    if let Some(b) = Backend::from_name(name) {
        return Some(BackendPattern::One(b));
    }
    let lower = name.to_ascii_lowercase();
    (accept_foreign && FOREIGN_BACKENDS.contains(&lower.as_str())).then_some(BackendPattern::Foreign(lower))
}

fn parse_filter(filter: &str) -> std::result::Result<Filter, String> {
    match filter.to_ascii_lowercase().as_str() {
        "*" => Ok(Filter::Any),
        "cpu" => Ok(Filter::Type(DeviceType::Cpu)),
        "gpu" => Ok(Filter::Type(DeviceType::Gpu)),
        "fpga" => Ok(Filter::Fpga),
        "" => Err("empty device filter".into()),
        f if f.contains('.') => Err(format!("sub-device filter `{f}`: sub-devices are not supported")),
        f => f
            .parse::<usize>()
            .map(Filter::Index)
            .map_err(|_| format!("device filter `{f}` is not `*`, `cpu`, `gpu`, `fpga` or an index")),
    }
}

fn malformed(value: &str, why: &str) -> UrError {
    let valid: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
    err!(
        InvalidValue,
        "device selector `{value}`: {why}; valid backends are {}, `native_cpu` (= cpu) and `*`",
        valid.join(", ")
    )
}

fn rename(e: UrError, var: &str) -> UrError {
    match e {
        UrError::InvalidValue(mut d) => {
            d.message = format!("{var}: {}", d.message).into();
            UrError::InvalidValue(d)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeviceType::*;

    #[test]
    fn positive_terms_union() {
        let s = DeviceSelector::parse("cuda:0;opencl:*").unwrap();
        assert!(s.matches(Backend::Cuda, 0, Gpu));
        assert!(!s.matches(Backend::Cuda, 1, Gpu));
        assert!(s.matches(Backend::OpenCl, 3, Cpu));
        assert!(!s.matches(Backend::Cpu, 0, Cpu));
    }

    #[test]
    fn type_filters_and_wildcard_backend() {
        let s = DeviceSelector::parse("*:gpu").unwrap();
        assert!(s.matches(Backend::Vulkan, 0, Gpu));
        assert!(!s.matches(Backend::OpenCl, 0, Cpu));
        let s = DeviceSelector::parse("opencl:cpu,1").unwrap();
        assert!(s.matches(Backend::OpenCl, 0, Cpu));
        assert!(s.matches(Backend::OpenCl, 1, Gpu));
        assert!(!s.matches(Backend::OpenCl, 2, Gpu));
    }

    #[test]
    fn only_negative_terms_accept_the_rest() {
        let s = DeviceSelector::parse("!vulkan:*").unwrap();
        assert!(!s.matches(Backend::Vulkan, 0, Gpu));
        assert!(s.matches(Backend::Cpu, 0, Cpu));
        assert!(!s.may_select_backend(Backend::Vulkan));
        assert!(s.may_select_backend(Backend::Cuda));
        let s = DeviceSelector::parse("*:*;!cuda:1").unwrap();
        assert!(s.matches(Backend::Cuda, 0, Gpu));
        assert!(!s.matches(Backend::Cuda, 1, Gpu));
        assert!(s.may_select_backend(Backend::Cuda));
    }

    #[test]
    fn native_cpu_is_cpu_and_names_are_case_insensitive() {
        let s = DeviceSelector::parse_oneapi("NATIVE_CPU:*").unwrap();
        assert!(s.matches(Backend::Cpu, 0, Cpu));
        assert!(!s.may_select_backend(Backend::OpenCl));
    }

    #[test]
    fn foreign_backends_only_in_oneapi_variable() {
        let s = DeviceSelector::parse_oneapi("level_zero:gpu").unwrap();
        assert!(Backend::ALL.iter().all(|b| !s.matches(*b, 0, Gpu)));
        let e = DeviceSelector::parse("level_zero:gpu").unwrap_err();
        assert!(matches!(e, UrError::InvalidValue(_)));
        assert!(e.to_string().contains("cpu, opencl, vulkan, cuda"), "{e}");
    }

    #[test]
    fn malformed_values_are_errors() {
        for bad in ["", "cuda", "cuda:", "cuda:x", "cuda:0.1", ";cpu:*", "metal:*", "cpu:*;"] {
            let e = DeviceSelector::parse(bad).unwrap_err();
            assert!(matches!(e, UrError::InvalidValue(_)), "{bad}: {e}");
        }
    }
}
