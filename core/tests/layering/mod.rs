//! The layer checker every crate's `tests/layers.rs` shares (cmdbuf-core's
//! own; the ABI's, the runtime's and the adapters' include this file by
//! path, and expand [`layer_tests!`] for the checks they all make): a crate's
//! modules each have a layer, and a module may only name (`crate::module`,
//! or a module or item the crate root brings into scope from it) modules of
//! its own layer or below.
//!
//! Upward imports that remain are listed, with why, in a crate's `known`
//! table; the check fails on any other, naming the file, line and code, and
//! on an entry of `known` that no longer occurs, so that the list only
//! shrinks. Inside a folder module, the submodules (and the folder's own
//! `mod.rs`) must not import each other in a circle either; folders where
//! one remains are listed, with why, in `circles_left`, which only shrinks
//! the same way. Comment lines and `#[cfg(test)]` modules are not read: tests may
//! use any layer.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One crate's layers.
pub struct Layering {
    /// The crate's source folder.
    pub src: PathBuf,
    /// The layers' names, bottom first.
    pub names: &'static [&'static str],
    /// Each top-level module (or folder) and its layer, an index into
    /// `names`; a submodule shares its top-level module's layer.
    pub layers: &'static [(&'static str, usize)],
    /// Upward imports that remain: (importing module, imported module, why).
    pub known: &'static [(&'static str, &'static str, &'static str)],
    /// Files included into a module of another name: (file, module).
    pub included: &'static [(&'static str, &'static str)],
    /// Folder modules (`api`, `graph`) whose submodules still import each
    /// other in a circle: (folder, why).
    pub circles_left: &'static [(&'static str, &'static str)],
}

/// One `crate::` reference of a module to another.
pub struct Import {
    pub from: String,
    pub to: String,
    pub file: PathBuf,
    pub line: usize,
    pub code: String,
}

impl Layering {
    /// The layers of the crate at `manifest_dir` (its `src/`), with no
    /// known upward import and no included file.
    pub fn new(manifest_dir: &str, names: &'static [&'static str], layers: &'static [(&'static str, usize)]) -> Self {
        Layering {
            src: Path::new(manifest_dir).join("src"),
            names,
            layers,
            known: &[],
            included: &[],
            circles_left: &[],
        }
    }

    /// The file names and folders directly in the source folder, sorted.
    pub fn top_level(&self) -> Vec<String> {
        let mut entries: Vec<String> = fs::read_dir(&self.src)
            .expect("the source folder is readable")
            .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        entries
    }

    /// The module a file holds (`queue`, `types::device`); `None` for the
    /// crate root.
    fn module_of(&self, file: &Path) -> Option<String> {
        let relative = file.strip_prefix(&self.src).expect("a file under src").with_extension("");
        let mut path: Vec<&str> = relative.iter().map(|c| c.to_str().expect("a UTF-8 file name")).collect();
        if path.last() == Some(&"mod") {
            path.pop();
        }
        match path.as_slice() {
            ["lib"] => None,
            [one] => Some(self.included.iter().find(|(f, _)| f == one).map_or(*one, |(_, m)| *m).to_string()),
            _ => Some(path.join("::")),
        }
    }

    /// The layer of `module`: that of its top-level module.
    pub fn layer(&self, module: &str) -> Option<usize> {
        let top = module.split("::").next().unwrap_or("");
        self.layers.iter().find(|(m, _)| *m == top).map(|(_, l)| *l)
    }

    /// Every reference between two different modules, and the references
    /// and modules the table does not know.
    pub fn imports(&self) -> (Vec<Import>, Vec<String>) {
        let mut paths = Vec::new();
        rust_files(&self.src, &mut paths);
        paths.sort();
        let files: Vec<(PathBuf, String)> =
            paths.into_iter().map(|p| (p.clone(), fs::read_to_string(&p).expect("a readable source file"))).collect();
        let lib = &files.iter().find(|(p, _)| self.module_of(p).is_none()).expect("src/lib.rs").1;
        let items = root_items(lib);
        let mut macros = BTreeMap::new();
        for (file, text) in &files {
            if let Some(module) = self.module_of(file) {
                macros.extend(macro_names(text).into_iter().map(|m| (m, module.clone())));
            }
        }
        let mut imports = Vec::new();
        let mut unknown = Vec::new();
        for (file, text) in &files {
            let Some(from) = self.module_of(file) else { continue };
            if self.layer(&from).is_none() {
                unknown.push(format!("{}: module `{from}` has no layer", file.display()));
            }
            let code = Code::new(text);
            for (offset, name) in crate_references(&code.text) {
                let (line, text) = code.line_at(offset);
                match target(&name, self.layers, &items, &macros) {
                    Some(to) if to != from.split("::").next().unwrap_or("") => imports.push(Import {
                        from: from.clone(),
                        to,
                        file: file.clone(),
                        line,
                        code: text.trim().into(),
                    }),
                    Some(_) => {}
                    None => {
                        unknown.push(format!("{}:{line}: `crate::{name}` names no module of the table", file.display()))
                    }
                }
            }
        }
        (imports, unknown)
    }

    /// Fails on a module or reference the table does not know, on an import
    /// of a higher layer not in `known`, and on an entry of `known` that no
    /// longer occurs.
    pub fn assert_one_way(&self) {
        let (imports, unknown) = self.imports();
        assert!(unknown.is_empty(), "update the layer table:\n{}", unknown.join("\n"));
        let mut offending = Vec::new();
        let mut seen_known = BTreeSet::new();
        for import in &imports {
            let (Some(from), Some(to)) = (self.layer(&import.from), self.layer(&import.to)) else { continue };
            if to <= from {
                continue;
            }
            if self.known.iter().any(|(f, t, _)| *f == import.from && *t == import.to) {
                seen_known.insert((import.from.as_str(), import.to.as_str()));
                continue;
            }
            offending.push(format!(
                "{}:{}: `{}` ({}) imports `{}` ({}): {}",
                import.file.display(),
                import.line,
                import.from,
                self.names[from],
                import.to,
                self.names[to],
                import.code
            ));
        }
        assert!(offending.is_empty(), "imports of a higher layer:\n{}", offending.join("\n"));
        let stale: Vec<String> = self
            .known
            .iter()
            .filter(|(f, t, _)| !seen_known.contains(&(*f, *t)))
            .map(|(f, t, why)| format!("`{f}` -> `{t}` ({why})"))
            .collect();
        assert!(stale.is_empty(), "no longer imported: remove from the known list:\n{}", stale.join("\n"));
    }

    /// Fails when top-level modules import each other in a circle, naming
    /// the circle and one import of each of its steps. The layer check
    /// alone lets the modules of one layer name each other; this one does
    /// not, so a crate's layers may group independent modules.
    pub fn assert_no_circle(&self) {
        let (imports, _) = self.imports();
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for import in &imports {
            let from = import.from.split("::").next().unwrap_or("").to_string();
            edges
                .entry(from)
                .or_default()
                .entry(import.to.clone())
                .or_insert_with(|| format!("{}:{}: {}", import.file.display(), import.line, import.code));
        }
        if let Some(circle) = find_circle(&edges) {
            let steps: Vec<String> =
                circle.windows(2).map(|w| format!("{} -> {}: {}", w[0], w[1], edges[&w[0]][&w[1]])).collect();
            panic!("modules import each other in a circle: {}\n{}", circle.join(" -> "), steps.join("\n"));
        }
    }

    /// Every reference between two different modules at any depth
    /// (`shared::batch` -> `shared::state`), through `crate::`, `super::`
    /// and `self::` paths, with the items a module re-exports followed to
    /// the module that defines them (`crate::Context` -> `api::context`).
    pub fn module_imports(&self) -> Vec<Import> {
        let mut paths = Vec::new();
        rust_files(&self.src, &mut paths);
        paths.sort();
        let mut files = BTreeMap::new();
        for path in paths {
            let module = self.module_of(&path).unwrap_or_default();
            let text = fs::read_to_string(&path).expect("a readable source file");
            files.entry(module).or_insert_with(Vec::new).push((path, text));
        }
        let uses: BTreeMap<&str, BTreeMap<String, String>> = files
            .iter()
            .map(|(module, texts)| (module.as_str(), texts.iter().flat_map(|(_, text)| use_paths(text)).collect()))
            .collect();
        let mut imports = Vec::new();
        for (from, texts) in &files {
            if from.is_empty() {
                continue;
            }
            for (file, text) in texts {
                for (line, code, kind, path) in references_by_line(text) {
                    let to = resolve_module(from, kind, &path, &uses);
                    if to != *from && !to.is_empty() {
                        imports.push(Import { from: from.clone(), to, file: file.clone(), line, code });
                    }
                }
            }
        }
        imports
    }

    /// Fails when the submodules of a folder module (with the folder's own
    /// `mod.rs` among them) import each other in a circle, at any depth,
    /// naming the folder, the circle and one import of each step; and on an
    /// entry of `circles_left` whose folder has none any more.
    pub fn assert_no_circle_inside_folders(&self) {
        let imports = self.module_imports();
        let mut folders: BTreeSet<&str> = BTreeSet::new();
        for import in &imports {
            for module in [&import.from, &import.to] {
                let mut at = 0;
                while let Some(pos) = module[at..].find("::") {
                    folders.insert(&module[..at + pos]);
                    at += pos + 2;
                }
            }
        }
        let mut circles = Vec::new();
        let mut left_seen = BTreeSet::new();
        for folder in folders {
            let child = |module: &str| -> Option<String> {
                if module == folder {
                    return Some(module.to_string());
                }
                let rest = module.strip_prefix(folder)?.strip_prefix("::")?;
                Some(format!("{folder}::{}", rest.split("::").next().unwrap_or("")))
            };
            let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for import in &imports {
                let (Some(from), Some(to)) = (child(&import.from), child(&import.to)) else { continue };
                if from != to {
                    edges
                        .entry(from)
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| format!("{}:{}: {}", import.file.display(), import.line, import.code));
                }
            }
            let Some(circle) = find_circle(&edges) else { continue };
            if self.circles_left.iter().any(|(f, _)| *f == folder) {
                left_seen.insert(folder.to_string());
                continue;
            }
            let steps: Vec<String> =
                circle.windows(2).map(|w| format!("{} -> {}: {}", w[0], w[1], edges[&w[0]][&w[1]])).collect();
            circles.push(format!("in `{folder}`: {}\n{}", circle.join(" -> "), steps.join("\n")));
        }
        assert!(circles.is_empty(), "modules inside a folder import each other in a circle:\n{}", circles.join("\n"));
        let stale: Vec<String> = self
            .circles_left
            .iter()
            .filter(|(f, _)| !left_seen.contains(*f))
            .map(|(f, why)| format!("`{f}` ({why})"))
            .collect();
        assert!(stale.is_empty(), "no circle left inside: remove from circles_left:\n{}", stale.join("\n"));
    }

    /// Fails when a module of the bottom layer names any module above it.
    pub fn assert_bottom_imports_nothing_above(&self) {
        let (imports, _) = self.imports();
        let upward: Vec<String> = imports
            .iter()
            .filter(|i| self.layer(&i.from) == Some(0) && self.layer(&i.to) != Some(0))
            .map(|i| format!("{}:{}: {}", i.file.display(), i.line, i.code))
            .collect();
        assert!(upward.is_empty(), "the bottom layer imports modules above it:\n{}", upward.join("\n"));
    }

    /// Fails unless the source folder holds exactly the crate root, each
    /// module of the layers (as a file or a folder, whichever it is) and the
    /// `others` (folders of included sources, which are no modules).
    /// cmdbuf-core's and the ABI's tests spell out stricter listings (one
    /// folder per layer; files included under another module's name).
    #[allow(dead_code)]
    pub fn assert_every_module_has_a_layer(&self, others: &[&str]) {
        let mut expected: Vec<String> = self
            .layers
            .iter()
            .map(|(m, _)| if self.src.join(format!("{m}.rs")).is_file() { format!("{m}.rs") } else { m.to_string() })
            .chain(others.iter().map(|o| o.to_string()))
            .chain(["lib.rs".to_string()])
            .collect();
        expected.sort();
        assert_eq!(
            self.top_level(),
            expected,
            "{}: lib.rs, {others:?} and the modules of the layers",
            self.src.display()
        );
    }
}

/// The checks every crate's layering makes, as tests, for the crate's
/// `layering()` function: no upward import, no import circle, nothing above
/// the bottom layer named by it.
macro_rules! layer_tests {
    // With the check that every top-level module of `src/` has a layer,
    // `others` naming the modules that stand outside the layers on purpose.
    (every_module_has_a_layer $(, except $($other:literal),+)?) => {
        $crate::layering::layer_tests!();

        #[test]
        fn every_module_has_a_layer() {
            layering().assert_every_module_has_a_layer(&[$($($other),+)?]);
        }
    };
    () => {
        #[test]
        fn no_module_imports_a_module_of_a_higher_layer() {
            layering().assert_one_way();
        }

        #[test]
        fn no_modules_import_each_other_in_a_circle() {
            layering().assert_no_circle();
        }

        #[test]
        fn no_modules_inside_a_folder_import_each_other_in_a_circle() {
            layering().assert_no_circle_inside_folders();
        }

        #[test]
        fn the_bottom_layer_imports_nothing_above_it() {
            layering().assert_bottom_imports_nothing_above();
        }
    };
}
pub(crate) use layer_tests;

/// A circle of `edges` (module -> imported module -> an example), as the
/// modules along it with the first one repeated at the end; `None` when the
/// imports run one way.
pub fn find_circle(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        edges: &BTreeMap<String, BTreeMap<String, String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut circle = path[start..].to_vec();
            circle.push(module.to_string());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in edges.get(module).into_iter().flat_map(|e| e.keys()) {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("a readable source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comment lines and `#[cfg(test)]` modules (a
/// `#[cfg(test)]` at the start of a line up to the next `}` there), as
/// (line number, text).
pub fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut in_test = false;
    for (i, line) in text.lines().enumerate() {
        if in_test {
            in_test = !line.starts_with('}');
            continue;
        }
        if line.starts_with("#[cfg(test)]") {
            in_test = true;
            continue;
        }
        if !line.trim_start().starts_with("//") {
            out.push((i + 1, line));
        }
    }
    out
}

/// The path of every `crate::` reference in `code`, with the byte offset
/// where the reference starts: `crate::a::B` gives `a::B`,
/// `crate::{a, b::C}` gives `a` and `b::C`.
pub fn crate_references(code: &str) -> Vec<(usize, String)> {
    references(code, "crate::")
}

/// The path of every reference in `code` that starts with `prefix`
/// (`crate::`, `super::`, `self::`), without the prefix, with the byte
/// offset where the reference starts.
fn references(code: &str, prefix: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(pos) = code[at..].find(prefix) {
        let start = at + pos;
        at = start + prefix.len();
        let prev = start.checked_sub(1).map(|i| bytes[i]);
        // `super::super::a` is one reference, read from its first `super`.
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
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

/// The top-level module a reference names: its first segment when the
/// table lists it, else the module the crate root's `use`s lead to from it
/// (an item, a module or an exported macro, followed through re-exports of
/// re-exports: `Context` → `context` → `api`).
pub fn target(
    path: &str,
    layers: &[(&str, usize)],
    items: &BTreeMap<String, String>,
    macros: &BTreeMap<String, String>,
) -> Option<String> {
    let first = path.split("::").next().unwrap_or("");
    let mut name = macros.get(first).map_or(first, |m| m.split("::").next().unwrap_or(""));
    for _ in 0..=items.len() {
        if layers.iter().any(|(m, _)| *m == name) {
            return Some(name.to_string());
        }
        name = items.get(name)?;
    }
    None
}

/// What the crate root brings into scope, name → the module it comes from:
/// `pub use module::{A, B};`, `use module::A;`, with or without a `#[cfg]`.
pub fn root_items(lib: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    let code: String = code_lines(lib)
        .iter()
        .filter(|(_, l)| !l.trim_start().starts_with("#[") && !l.trim_start().starts_with("#!["))
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

/// The macros a file defines with `macro_rules!`.
fn macro_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("macro_rules! "))
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
        .collect()
}

/// A file's code lines ([`code_lines`]) joined into one text, so that a
/// path split over lines reads as one, with where each line starts.
struct Code<'a> {
    text: String,
    /// (offset in `text`, line number, the line).
    starts: Vec<(usize, usize, &'a str)>,
}

impl<'a> Code<'a> {
    fn new(file: &'a str) -> Self {
        let mut text = String::new();
        let mut starts = Vec::new();
        for (number, line) in code_lines(file) {
            starts.push((text.len(), number, line));
            text.push_str(line);
            text.push('\n');
        }
        Code { text, starts }
    }

    /// The line number and line of an offset in `text`.
    fn line_at(&self, offset: usize) -> (usize, &'a str) {
        let (_, number, line) = self.starts[self.starts.partition_point(|(s, _, _)| *s <= offset) - 1];
        (number, line)
    }
}

/// How a path starts: at the crate root, or relative to the module that
/// names it.
#[derive(Clone, Copy)]
pub enum Anchor {
    Crate,
    SelfModule,
    Super,
}

/// Every `crate::`, `super::` and `self::` reference of a file's code, as
/// (line, line's code, anchor, path after the anchor).
fn references_by_line(text: &str) -> Vec<(usize, String, Anchor, String)> {
    let code = Code::new(text);
    let mut found = Vec::new();
    for (prefix, anchor) in [("crate::", Anchor::Crate), ("self::", Anchor::SelfModule), ("super::", Anchor::Super)] {
        for (offset, path) in references(&code.text, prefix) {
            let (line, text) = code.line_at(offset);
            found.push((line, text.trim().to_string(), anchor, path));
        }
    }
    found.sort_by_key(|(line, ..)| *line);
    found
}

/// The module `path` (named from `from` with `anchor`) ends in: its
/// longest prefix that is a module of `uses`, after following the `use`s of
/// the modules on the way (a name a module brings into scope stands for the
/// path it was brought from). `""` is the crate root.
pub fn resolve_module(
    from: &str,
    anchor: Anchor,
    path: &str,
    uses: &BTreeMap<&str, BTreeMap<String, String>>,
) -> String {
    let segments =
        |module: &str| -> Vec<String> { module.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect() };
    let mut base = match anchor {
        Anchor::Crate => Vec::new(),
        Anchor::SelfModule => segments(from),
        Anchor::Super => {
            let mut base = segments(from);
            base.pop();
            base
        }
    };
    let mut rest: Vec<String> = segments(path);
    // Each round follows one `use`; a chain of re-exports is shorter than
    // the number of modules.
    for _ in 0..=uses.len() {
        while rest.first().is_some_and(|s| s == "super") {
            rest.remove(0);
            base.pop();
        }
        let mut module = base.join("::");
        let mut taken = 0;
        for segment in &rest {
            let next = if module.is_empty() { segment.clone() } else { format!("{module}::{segment}") };
            if !uses.contains_key(next.as_str()) {
                break;
            }
            module = next;
            taken += 1;
        }
        let Some(name) = rest.get(taken) else { return module };
        let Some(used) = uses.get(module.as_str()).and_then(|u| u.get(name)) else { return module };
        let mut used = segments(used);
        let anchor = used.first().cloned().unwrap_or_default();
        base = match anchor.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => segments(&module),
            // A path of the 2018 edition: a module beside the one that names
            // it, or else another crate (whose items are not followed).
            _ => {
                let beside = if module.is_empty() { anchor.clone() } else { format!("{module}::{anchor}") };
                if !uses.contains_key(beside.as_str()) {
                    return module;
                }
                segments(&module)
            }
        };
        if anchor == "crate" || anchor == "self" {
            used.remove(0);
        }
        used.extend(rest.drain(taken + 1..));
        rest = used;
    }
    base.join("::")
}

/// What a file's `use` declarations bring into scope: name -> the path it
/// comes from (`pub use api::{context};` gives `context` -> `api::context`,
/// `use x::Y as Z;` gives `Z` -> `x::Y`, `use a::b::{self}` gives `b` ->
/// `a::b`). Glob imports name nothing.
pub fn use_paths(text: &str) -> BTreeMap<String, String> {
    let code: String = code_lines(text)
        .iter()
        .filter(|(_, l)| !l.trim_start().starts_with("#[") && !l.trim_start().starts_with("#!["))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let mut out = BTreeMap::new();
    for statement in code.split(';') {
        // A statement starts after the code before it (`fn f() {`, `}`):
        // the `use` is what follows the start of its line.
        let rest = statement.lines().enumerate().find_map(|(i, line)| {
            let line = line.trim_start();
            ["pub use ", "pub(crate) use ", "pub(super) use ", "use "].iter().find_map(|p| {
                line.strip_prefix(p).map(|first| {
                    let more: Vec<&str> = statement.lines().skip(i + 1).collect();
                    format!("{first}\n{}", more.join("\n"))
                })
            })
        });
        if let Some(rest) = rest {
            flatten_use("", &rest, &mut out);
        }
    }
    out
}

/// Adds the names of a `use` tree (`a::{b, c::D as E}`) under `prefix`.
fn flatten_use(prefix: &str, tree: &str, out: &mut BTreeMap<String, String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    flatten_use(&head, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        flatten_use(&head, &inner[start..], out);
        return;
    }
    let words: Vec<&str> = tree.split_whitespace().collect();
    let Some(path) = words.first().map(|p| format!("{prefix}{p}")) else { return };
    let (path, name) = match words.as_slice() {
        [_, "as", alias] => (path, alias.to_string()),
        _ => match path.strip_suffix("::self") {
            Some(module) => (module.to_string(), module.rsplit("::").next().unwrap_or("").to_string()),
            None => (path.clone(), path.rsplit("::").next().unwrap_or("").to_string()),
        },
    };
    if !name.is_empty() && name != "*" && name != "_" && name != "self" {
        out.insert(name, path);
    }
}
