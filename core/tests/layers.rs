//! cmdbuf-core's layers, kept one-way: `core/src` holds `lib.rs` and one
//! folder per layer, listed in [`LAYERS`], and a module may only name
//! (`crate::folder::...`, or a module or item the crate root re-exports from
//! a folder) modules of its own layer or below (the checker is
//! `tests/layering/mod.rs`, shared with cmdbuf-abi and cmdbuf-runtime).
//! docs/architecture.md draws the same table.

use std::collections::BTreeMap;
mod layering;

use layering::{Anchor, Layering, crate_references, resolve_module, root_items, target, use_paths};

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["types", "adapter interface", "front end", "loader"];

/// Each folder of `core/src` and its layer (an index into
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

fn layering() -> Layering {
    // No upward import remains (`known` stays empty), and no circle inside a
    // folder (`circles_left` stays empty).
    Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
}

layering::layer_tests!();

#[test]
fn a_circle_is_found_within_a_layer_and_one_way_imports_pass() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut map: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (from, to) in pairs {
            map.entry(from.to_string()).or_default().insert(to.to_string(), String::new());
        }
        map
    };
    assert_eq!(layering::find_circle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let circle = layering::find_circle(&edges(&[("a", "b"), ("b", "c"), ("c", "b")])).expect("b and c");
    assert_eq!(circle, ["b", "c", "b"]);
}

#[test]
fn the_source_folder_holds_the_crate_root_and_one_folder_per_layer() {
    let mut expected: Vec<String> = LAYERS.iter().map(|(m, _)| m.to_string()).chain(["lib.rs".to_string()]).collect();
    expected.sort();
    assert_eq!(layering().top_level(), expected, "core/src: lib.rs and the folders of LAYERS, nothing else");
}

#[test]
fn references_are_read_from_grouped_and_plain_paths() {
    let code = "use crate::a::B;\nuse crate::{c, d::E, self, i as _};\nlet x = $crate::f::g!();\nmy_crate::h;\n";
    let names: Vec<String> = crate_references(code).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["a::B", "c", "d::E", "i", "f::g"]);
    let none = BTreeMap::new();
    assert_eq!(target("api::command_build::HostSide", LAYERS, &none, &none).as_deref(), Some("api"));
    assert_eq!(target("types::device::DeviceInfo", LAYERS, &none, &none).as_deref(), Some("types"));
    assert_eq!(target("context::Context", LAYERS, &none, &none), None);
    let items = root_items(
        "pub use a::{B, C as D};\npub use d::E;\n// pub use x::Y;\npub mod z;\n#[cfg(x)]\npub use api::{context};\nuse adapter::objects;\npub use context::Context;\n",
    );
    assert_eq!(items.get("D").map(String::as_str), Some("a"));
    assert_eq!(items.get("E").map(String::as_str), Some("d"));
    assert!(!items.contains_key("Y"));
    assert_eq!(target("Context", LAYERS, &items, &none).as_deref(), Some("api"));
    assert_eq!(target("objects::Event", LAYERS, &items, &none).as_deref(), Some("adapter"));
    let macros = BTreeMap::from([("err".to_string(), "types::error".to_string())]);
    assert_eq!(target("err", LAYERS, &none, &macros).as_deref(), Some("types"));
}

#[test]
fn references_inside_folders_resolve_to_the_module_that_defines_them() {
    let uses = BTreeMap::from([
        ("", use_paths("pub use api::{context, queue as q};\nuse std::sync::Arc;\n")),
        ("api", BTreeMap::new()),
        ("api::context", use_paths("pub(crate) use crate::api::queue::Queue;\n")),
        ("api::queue", BTreeMap::new()),
        ("shared", use_paths("pub(crate) use self::state::{Lane, Point as P};\n")),
        ("shared::state", BTreeMap::new()),
        ("shared::batch", BTreeMap::new()),
    ]);
    let resolve = |from, anchor, path| resolve_module(from, anchor, path, &uses);
    assert_eq!(resolve("shared::batch", Anchor::Crate, "shared::state::Lane"), "shared::state");
    assert_eq!(resolve("shared::batch", Anchor::Super, "Lane"), "shared::state");
    assert_eq!(resolve("shared::batch", Anchor::Super, "P"), "shared::state");
    assert_eq!(resolve("shared::batch", Anchor::Super, "super::context::Context"), "api::context");
    assert_eq!(resolve("shared", Anchor::SelfModule, "batch::Batch"), "shared::batch");
    assert_eq!(resolve("shared", Anchor::Crate, "context::Queue"), "api::queue");
    assert_eq!(resolve("shared", Anchor::Crate, "q::Queue"), "api::queue");
    assert_eq!(resolve("shared", Anchor::Crate, "Arc"), "");
    assert_eq!(resolve("shared", Anchor::Crate, "err"), "");
}

#[test]
fn test_modules_and_comments_are_not_read() {
    let code = "use crate::a;\n// use crate::b;\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\nuse crate::d;\n";
    let lines: Vec<usize> = layering::code_lines(code).into_iter().map(|(n, _)| n).collect();
    assert_eq!(lines, [1, 7]);
}

/// The fault injector (`api/faults.rs`, `api/faults/`, feature
/// `fault-injection`) is a test tool off the production path: outside it,
/// no code of cmdbuf-core, its adapters, the runtime, the ABI or the facade
/// names it or its feature, but the two lines that declare and re-export
/// the module, so that tests run the code applications get.
#[test]
fn only_the_fault_injector_names_its_feature() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let gate = [("core/src/lib.rs", "pub use api::faults;"), ("core/src/api/mod.rs", "pub mod faults;")];
    let mut files = Vec::new();
    for dir in ["core", "adapter-cpu", "adapter-opencl", "adapter-vulkan", "adapter-cuda", "runtime", "abi", "cmdbuf"] {
        source_files(&root.join(dir).join("src"), &mut files);
    }
    let mut problems = Vec::new();
    for file in files {
        let name = file.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        if name.starts_with("core/src/api/faults") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = layering::code_lines(&text);
        for (i, &(n, line)) in lines.iter().enumerate() {
            let names_it = ["fault-injection", "fault_injection", "faults::", "mod faults", "api::faults"]
                .iter()
                .any(|needle| line.contains(needle));
            if !names_it {
                continue;
            }
            // A gate line is allowed with the `cfg` line just above it.
            let gated = gate.iter().any(|(f, decl)| *f == name && line.trim() == *decl)
                || gate.iter().any(|(f, decl)| {
                    *f == name
                        && line.trim() == "#[cfg(feature = \"fault-injection\")]"
                        && lines.get(i + 1).is_some_and(|(_, next)| next.trim() == *decl)
                });
            if !gated {
                problems.push(format!("{name}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "code outside the fault injector names it:\n{}", problems.join("\n"));
}

/// Every `.rs` file under `dir`.
fn source_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
