//! docs/architecture.md's tables match the tree: every crate, folder and
//! file a row names exists, and every workspace member, layer folder,
//! module and adapter source file has a row. A file added, moved or removed
//! without its row fails here, naming it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn doc() -> String {
    fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md")
}

/// The rows of the table whose header line is `header`, as cells.
fn table(doc: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = doc.lines().skip_while(|l| l.trim() != header);
    assert!(lines.next().is_some(), "docs/architecture.md has no table `{header}`");
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim().trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect()
}

/// The `code` spans of a cell.
fn spans(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// The identifiers in a span (`types::{a, b}` gives `types`, `a`, `b`;
/// `queue/slot.rs` gives `queue`, `slot`).
fn names(span: &str) -> Vec<String> {
    span.trim_end_matches(".rs")
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .map(|n| n.trim_end_matches(".rs").to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The entries of a folder: file names and folder names.
fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// Every `.rs` file under `dir`, relative to it.
fn rust_files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for name in entries(dir) {
        let path = dir.join(&name);
        if path.is_dir() {
            rust_files(&path, &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".rs") {
            out.push(format!("{prefix}{name}"));
        }
    }
}

/// The workspace members of the root Cargo.toml.
fn members() -> Vec<String> {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest.lines().find(|l| l.starts_with("members")).expect("a members line");
    line.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_crates_table_names_every_member_and_only_folders_that_exist() {
    let rows = table(&doc(), "| crate | folder | role |");
    let mut folders = Vec::new();
    for row in &rows {
        let folder = spans(&row[1]).into_iter().next().expect("a folder");
        folders.push(folder.trim_end_matches('/').to_string());
    }
    let mut problems = Vec::new();
    for folder in &folders {
        let pattern = folder.replace("<backend>", "cpu");
        if !root().join(&pattern).is_dir() {
            problems.push(format!("row `{folder}/`: no such folder"));
        }
    }
    for member in members() {
        let covered = folders.iter().any(|f| match f.split_once("<backend>") {
            Some((before, after)) => member.starts_with(before) && member.ends_with(after),
            None => *f == member,
        });
        if !covered {
            problems.push(format!("workspace member `{member}` has no row"));
        }
    }
    assert!(problems.is_empty(), "docs/architecture.md, table of crates:\n{}", problems.join("\n"));
}

/// Checks a layer table of `src`: each row's folder or file (column
/// `place`) exists, every entry of `src` but `lib.rs` has a row, and the
/// modules a row lists (column `modules`, when given) are the entries of its
/// folder.
fn check_layer_table(header: &str, src: &Path, place: usize, modules: Option<usize>) {
    let rows = table(&doc(), header);
    let mut named = BTreeSet::new();
    let mut problems = Vec::new();
    for row in &rows {
        for span in spans(&row[place]) {
            let entry = span.trim_end_matches('/').to_string();
            if !src.join(&entry).exists() {
                problems.push(format!("row `{span}`: no such entry of {}", src.display()));
            }
            if span.ends_with('/')
                && let Some(column) = modules
            {
                check_modules(&src.join(&entry), &row[column], &mut problems);
            }
            named.insert(entry);
        }
    }
    for entry in entries(src) {
        if entry != "lib.rs" && !named.contains(&entry) {
            problems.push(format!("{}: `{entry}` has no row", src.display()));
        }
    }
    assert!(problems.is_empty(), "docs/architecture.md, `{header}`:\n{}", problems.join("\n"));
}

/// Every file and folder of `folder` is named in `cell`, and every module
/// named there is in `folder` (a file, a folder, or a file of a subfolder).
fn check_modules(folder: &Path, cell: &str, problems: &mut Vec<String>) {
    let mut files = Vec::new();
    rust_files(folder, "", &mut files);
    let stems: BTreeSet<String> = files
        .iter()
        .flat_map(|f| f.trim_end_matches(".rs").split('/').map(str::to_string).collect::<Vec<_>>())
        .chain(folder.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let listed: BTreeSet<String> = spans(cell).iter().flat_map(|s| names(s)).collect();
    for name in &listed {
        if !stems.contains(name) {
            problems.push(format!("{}: `{name}` is listed but no such module", folder.display()));
        }
    }
    for entry in entries(folder) {
        let stem = entry.trim_end_matches(".rs");
        if stem != "mod" && !listed.contains(stem) {
            problems.push(format!("{}: `{entry}` is not listed", folder.display()));
        }
    }
}

#[test]
fn the_layer_table_of_ur_core_matches_its_folders() {
    check_layer_table("| layer | folder | modules | holds |", &root().join("core/src"), 1, Some(2));
}

#[test]
fn the_layer_table_of_the_abi_matches_its_folders() {
    check_layer_table("| layer | folder or file | modules | holds |", &root().join("abi/src"), 1, Some(2));
}

#[test]
fn the_layer_table_of_the_runtime_matches_its_modules() {
    check_layer_table("| layer | runtime module | holds |", &root().join("runtime/src"), 1, None);
}

#[test]
fn the_adapter_skeleton_names_every_source_file_of_every_adapter() {
    let header = "| concern | adapter-cpu | adapter-opencl | adapter-vulkan | adapter-cuda |";
    let rows = table(&doc(), header);
    let mut problems = Vec::new();
    for (column, adapter) in ["adapter-cpu", "adapter-opencl", "adapter-vulkan", "adapter-cuda"].iter().enumerate() {
        let src = root().join(adapter).join("src");
        let named: BTreeSet<String> =
            rows.iter().flat_map(|row| spans(&row[column + 1])).filter(|span| span.ends_with(".rs")).collect();
        for file in &named {
            if !src.join(file).is_file() {
                problems.push(format!("{adapter}: `{file}` is named but not in src/"));
            }
        }
        let mut files = Vec::new();
        rust_files(&src, "", &mut files);
        for file in files {
            if !named.contains(&file) {
                problems.push(format!("{adapter}: src/{file} has no row"));
            }
        }
    }
    assert!(problems.is_empty(), "docs/architecture.md, the adapters' skeleton:\n{}", problems.join("\n"));
}
