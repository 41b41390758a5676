//! ur-core's layers, kept one-way: `ur-core/src` holds `lib.rs` and one
//! folder per layer, listed in [`LAYERS`], and a module may only name
//! (`crate::folder::...`, or a module or item the crate root re-exports from
//! a folder) modules of its own layer or below.
//!
//! The few upward imports that remain are listed, with why, in [`KNOWN`]; the
//! test fails on any other, naming the file, line and code, and on an entry
//! of [`KNOWN`] that no longer occurs, so that the list only shrinks.
//! docs/architecture.md draws the same table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first.
const LAYER_NAMES: [&str; 4] = ["types", "adapter interface", "front end", "loader"];

/// Each folder of `ur-core/src` and its layer (an index into
/// [`LAYER_NAMES`]); every module inside a folder shares its layer.
const LAYERS: &[(&str, usize)] = &[
    // Plain types, errors and readers of kernel code.
    ("types", 0),
    // The traits adapters implement, the commands they are given and the
    // definitions of the objects inside them.
    ("adapter", 1),
    // The validating API, the software command buffer, graph capture and
    // the fault-injecting wrapper adapter.
    ("api", 2),
    // Opening adapters and choosing devices.
    ("loader", 3),
];

/// Upward imports that remain: (importing module, imported module, why).
const KNOWN: &[(&str, &str, &str)] = &[];

/// One `crate::` reference of a module to another.
struct Import {
    from: String,
    to: String,
    file: PathBuf,
    line: usize,
    code: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("ur-core/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file holds (`queue`, `types::device`); `None` for the
/// crate root.
fn module_of(file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src_dir()).expect("a file under src").with_extension("");
    let mut path: Vec<&str> = relative.iter().map(|c| c.to_str().expect("a UTF-8 file name")).collect();
    if path.last() == Some(&"mod") {
        path.pop();
    }
    match path.as_slice() {
        ["lib"] => None,
        _ => Some(path.join("::")),
    }
}

/// The code of a file without comment lines, as (line number, text).
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//")).map(|(i, l)| (i + 1, l)).collect()
}

/// The path of every `crate::` reference in `code`, with the byte offset
/// where the reference starts: `crate::a::B` gives `a::B`,
/// `crate::{a, b::C}` gives `a` and `b::C`.
fn crate_references(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(pos) = code[at..].find("crate::") {
        let start = at + pos;
        at = start + "crate::".len();
        let prev = start.checked_sub(1).map(|i| bytes[i]);
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            continue;
        }
        if bytes.get(at) == Some(&b'{') {
            let mut depth = 0;
            let mut segment_start = at + 1;
            for (i, c) in code[at..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let segment = code[segment_start..at + i].trim();
                        let path = ident_path(segment.split_whitespace().next().unwrap_or(""));
                        if !path.is_empty() && path != "self" {
                            found.push((start, path));
                        }
                        segment_start = at + i + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        } else {
            found.push((start, ident_path(&code[at..])));
        }
    }
    found
}

/// The leading `a::b::C` of `text`, up to the first character that is not
/// part of a path of identifiers.
fn ident_path(text: &str) -> String {
    let path: String = text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':').collect();
    path.trim_end_matches(':').to_string()
}

/// The layer folder a reference names: its first segment when that is a
/// folder of [`LAYERS`], else the folder the crate root's re-exports lead
/// to from it (an item, a module or an exported macro, followed through
/// re-exports of re-exports: `Context` → `context` → `api`).
fn target(path: &str, items: &BTreeMap<String, String>, macros: &BTreeMap<String, String>) -> Option<String> {
    let first = path.split("::").next().unwrap_or("");
    let mut name = macros.get(first).map_or(first, |m| m.split("::").next().unwrap_or(""));
    for _ in 0..=items.len() {
        if LAYERS.iter().any(|(m, _)| *m == name) {
            return Some(name.to_string());
        }
        name = items.get(name)?;
    }
    None
}

/// What the crate root brings into scope, name → the module it comes from:
/// `pub use module::{A, B};`, `use module::A;`, with or without a `#[cfg]`.
fn root_items(lib: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    let code: String = code_lines(lib)
        .iter()
        .filter(|(_, l)| !l.trim_start().starts_with("#["))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(rest) = statement.strip_prefix("pub use ").or_else(|| statement.strip_prefix("use ")) else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else { continue };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split_whitespace().last().unwrap_or("");
            if !name.is_empty() {
                items.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    items
}

/// Exported macros (`crate::err!`) → the module defining them.
fn macros(files: &[(PathBuf, String)]) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for (file, text) in files {
        let Some(module) = module_of(file) else { continue };
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("macro_rules! ") {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                found.insert(name, module.clone());
            }
        }
    }
    found
}

/// The layer of `module`, or of its nearest listed parent.
fn layer(module: &str) -> Option<usize> {
    let mut path = module;
    loop {
        if let Some((_, l)) = LAYERS.iter().find(|(m, _)| *m == path) {
            return Some(*l);
        }
        path = &path[..path.rfind("::")?];
    }
}

/// Every reference between two different top-level modules, and the
/// references that name nothing the table knows.
fn imports() -> (Vec<Import>, Vec<String>) {
    let mut paths = Vec::new();
    rust_files(&src_dir(), &mut paths);
    paths.sort();
    let files: Vec<(PathBuf, String)> =
        paths.into_iter().map(|p| (p.clone(), fs::read_to_string(&p).expect("a readable source file"))).collect();
    let lib = &files.iter().find(|(p, _)| module_of(p).is_none()).expect("src/lib.rs").1;
    let items = root_items(lib);
    let macros = macros(&files);
    let mut imports = Vec::new();
    let mut unknown = Vec::new();
    for (file, text) in &files {
        let Some(from) = module_of(file) else { continue };
        if layer(&from).is_none() {
            unknown.push(format!("{}: module `{from}` has no layer in LAYERS", file.display()));
        }
        let lines = code_lines(text);
        let mut code = String::new();
        let mut starts = Vec::new();
        for (number, line) in &lines {
            starts.push((code.len(), *number, *line));
            code.push_str(line);
            code.push('\n');
        }
        for (offset, name) in crate_references(&code) {
            let index = starts.partition_point(|(s, _, _)| *s <= offset) - 1;
            let (_, line, text) = starts[index];
            let to = target(&name, &items, &macros);
            match to {
                Some(to) if to != from => {
                    imports.push(Import { from: from.clone(), to, file: file.clone(), line, code: text.trim().into() })
                }
                Some(_) => {}
                None => unknown.push(format!("{}:{line}: `crate::{name}` names no module of LAYERS", file.display())),
            }
        }
    }
    (imports, unknown)
}

#[test]
fn no_module_imports_a_module_of_a_higher_layer() {
    let (imports, unknown) = imports();
    assert!(unknown.is_empty(), "update LAYERS in ur-core/tests/layers.rs:\n{}", unknown.join("\n"));
    let mut offending = Vec::new();
    let mut seen_known = BTreeSet::new();
    for import in &imports {
        let (Some(from), Some(to)) = (layer(&import.from), layer(&import.to)) else { continue };
        if to <= from {
            continue;
        }
        if KNOWN.iter().any(|(f, t, _)| *f == import.from && *t == import.to) {
            seen_known.insert((import.from.as_str(), import.to.as_str()));
            continue;
        }
        offending.push(format!(
            "{}:{}: `{}` ({}) imports `{}` ({}): {}",
            import.file.display(),
            import.line,
            import.from,
            LAYER_NAMES[from],
            import.to,
            LAYER_NAMES[to],
            import.code
        ));
    }
    assert!(offending.is_empty(), "imports of a higher layer:\n{}", offending.join("\n"));
    let stale: Vec<String> = KNOWN
        .iter()
        .filter(|(f, t, _)| !seen_known.contains(&(*f, *t)))
        .map(|(f, t, why)| format!("`{f}` -> `{t}` ({why})"))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer imported: remove from KNOWN in ur-core/tests/layers.rs:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_types_layer_imports_nothing_above_it() {
    let (imports, _) = imports();
    let upward: Vec<String> = imports
        .iter()
        .filter(|i| layer(&i.from) == Some(0) && layer(&i.to) != Some(0))
        .map(|i| format!("{}:{}: {}", i.file.display(), i.line, i.code))
        .collect();
    assert!(upward.is_empty(), "the types layer imports modules above it:\n{}", upward.join("\n"));
}

#[test]
fn references_are_read_from_grouped_and_plain_paths() {
    let code = "use crate::a::B;\nuse crate::{c, d::E, self, i as _};\nlet x = $crate::f::g!();\nmy_crate::h;\n";
    let names: Vec<String> = crate_references(code).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["a::B", "c", "d::E", "i", "f::g"]);
    let none = BTreeMap::new();
    assert_eq!(target("api::command_build::HostSide", &none, &none).as_deref(), Some("api"));
    assert_eq!(target("types::device::DeviceInfo", &none, &none).as_deref(), Some("types"));
    assert_eq!(target("context::Context", &none, &none), None);
    let items = root_items(
        "pub use a::{B, C as D};\npub use d::E;\n// pub use x::Y;\npub mod z;\n#[cfg(x)]\npub use api::{context};\nuse adapter::objects;\npub use context::Context;\n",
    );
    assert_eq!(items.get("D").map(String::as_str), Some("a"));
    assert_eq!(items.get("E").map(String::as_str), Some("d"));
    assert!(!items.contains_key("Y"));
    assert_eq!(target("Context", &items, &none).as_deref(), Some("api"));
    assert_eq!(target("objects::Event", &items, &none).as_deref(), Some("adapter"));
    let macros = BTreeMap::from([("err".to_string(), "types::error".to_string())]);
    assert_eq!(target("err", &none, &macros).as_deref(), Some("types"));
}

#[test]
fn the_source_folder_holds_the_crate_root_and_one_folder_per_layer() {
    let mut entries: Vec<String> = fs::read_dir(src_dir())
        .expect("ur-core/src is readable")
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    let mut expected: Vec<String> = LAYERS.iter().map(|(m, _)| m.to_string()).chain(["lib.rs".to_string()]).collect();
    expected.sort();
    assert_eq!(entries, expected, "ur-core/src: lib.rs and the folders of LAYERS, nothing else");
}
