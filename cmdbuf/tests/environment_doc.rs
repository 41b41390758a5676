//! docs/environment.md lists every environment variable the workspace's
//! code reads: the names are collected from the sources (Rust calls to
//! `env::var`/`var_os` with a literal or a `const … = "NAME"`, C's `getenv`),
//! and each must appear in the document in backticks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// Source files of the workspace, outside build outputs and installed tools.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                sources(&path, out);
            }
        } else if ["rs", "c", "h", "cpp", "hpp"].iter().any(|e| path.extension().is_some_and(|x| x == *e)) {
            out.push(path);
        }
    }
}

/// The quoted upper-case names in `text` right after `prefix` (`var("`).
fn quoted_after(text: &str, prefix: &str, out: &mut BTreeSet<String>) {
    for (at, _) in text.match_indices(prefix) {
        // `set_var("…")` and `remove_var("…")` write, they do not read.
        if text[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        let name: String =
            rest.chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
        if !name.is_empty() && rest[name.len()..].starts_with('"') {
            out.insert(name);
        }
    }
}

/// The variables read in one file.
fn read_in(text: &str, out: &mut BTreeSet<String>) {
    for call in ["var(\"", "var_os(\"", "getenv(\""] {
        quoted_after(text, call, out);
    }
    // `const NAME_ENV: &str = "VALUE"` read through `var(NAME_ENV)`.
    for line in text.lines().map(str::trim) {
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let Some(decl) = line.strip_prefix("const ") else { continue };
        let Some((ident, value)) = decl.split_once(": &str = \"") else { continue };
        let read = ["var(", "var_os("].iter().any(|call| text.contains(&format!("{call}{ident})")));
        if read && let Some(value) = value.strip_suffix("\";") {
            out.insert(value.to_string());
        }
    }
    // A list of names read one by one: `["CUDA_PATH", "CUDA_HOME"].iter().filter_map(std::env::var_os)`.
    for (at, _) in text.match_indices(".filter_map(std::env::var_os)") {
        let before = &text[..at];
        let Some(open) = before.rfind('[') else { continue };
        quoted_after(&before[open..].replace("[\"", "\"").replace(", \"", "\""), "\"", out);
    }
}

#[test]
fn every_variable_the_code_reads_is_documented() {
    let root = root();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut read = BTreeSet::new();
    for file in &files {
        if let Ok(text) = std::fs::read_to_string(file) {
            read_in(&text, &mut read);
        }
    }
    // The scan itself must find what is known to be read, or it checks nothing.
    for known in ["UR_DEVICE_SELECTOR", "UR_CPU_THREADS", "UR_LOG", "UR_CUDA_NVRTC", "CUDA_HOME", "URT_REPO"] {
        assert!(read.contains(known), "the scan missed {known}: {read:?}");
    }
    let doc = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
    let missing: Vec<&String> = read.iter().filter(|name| !doc.contains(&format!("`{name}`"))).collect();
    assert!(missing.is_empty(), "read by the code but not in docs/environment.md: {missing:?}");
}
