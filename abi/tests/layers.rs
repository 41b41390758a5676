//! cmdbuf-abi's layers, kept one-way: the C boundary (guard, handles, info
//! protocol, conversions) below the handle objects, below the entry points,
//! below the dispatch tables, which nothing imports. `abi/src` holds one
//! folder per hand-written layer beside `lib.rs`, the generated `bindings.rs`
//! (`sys`) and `checks.rs` (`tables::checks`), and `tables.rs`. The checker is cmdbuf-core's
//! (`core/tests/layering/mod.rs`); docs/architecture.md draws the table.

#[path = "../../core/tests/layering/mod.rs"]
mod layering;

use layering::Layering;

/// The layers, bottom first.
const LAYER_NAMES: &[&str] = &["C types", "boundary", "objects", "entry points", "dispatch tables"];

/// Each top-level module of `abi/src` and its layer.
const LAYERS: &[(&str, usize)] = &[
    // The C types of the headers, generated (`bindings.rs`).
    ("sys", 0),
    // The guard, the tagged handles, the info protocol and every C <-> Rust
    // conversion; no handle object, entry point or table.
    ("boundary", 1),
    // One struct per handle kind and what several entry points share
    // about it.
    ("objects", 2),
    // The `extern "C"` functions, one module per UR table.
    ("entry_points", 3),
    // The tables the loader gets, with the generated checks in front of
    // every slot (its submodule `checks`, which names the tables'
    // implementations).
    ("tables", 4),
];

fn layering() -> Layering {
    // No upward import remains (`known` stays empty).
    Layering {
        included: &[("bindings", "sys"), ("checks", "tables")],
        ..Layering::new(env!("CARGO_MANIFEST_DIR"), LAYER_NAMES, LAYERS)
    }
}

layering::layer_tests!();

#[test]
fn the_dispatch_tables_are_imported_by_no_module() {
    let (imports, _) = layering().imports();
    let into_tables: Vec<String> = imports
        .iter()
        .filter(|i| i.to == "tables")
        .map(|i| format!("{}:{}: {}", i.file.display(), i.line, i.code))
        .collect();
    assert!(
        into_tables.is_empty(),
        "no module names the tables (their checks are a module of theirs):\n{}",
        into_tables.join("\n")
    );
}

#[test]
fn the_source_folder_holds_the_layers() {
    let expected =
        ["bindings.rs", "boundary", "checks.rs", "entry_points", "lib.rs", "objects", "tables.rs"].map(String::from);
    assert_eq!(layering().top_level(), expected, "abi/src: the layer folders and files of LAYERS, nothing else");
}
