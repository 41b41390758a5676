//! `ur-abi-run`: the ABI test programs on a machine without the compilers or
//! the wheels' headers (the GPU machine).
//!
//! ```sh
//! ur-abi-run bundle DIR            # here: builds every program into DIR, with a manifest
//! ur-abi-run run DIR LIBRARY [NAME=VALUE]...   # there: runs them on LIBRARY
//! ```
//!
//! `run` runs each program as the ABI tests do (the library forced, the full
//! validation layer on, and a second time without layers where the tests do
//! so), prints one line per run with its verdict, and exits non-zero when any
//! failed. The loader and libsycl are found through `LD_LIBRARY_PATH` there.

use std::path::{Path, PathBuf};

use cmdbuf_abi_harness::{Bench, Layers, Oneapi, Verdict, build, programs, run, verdict};

const MANIFEST: &str = "manifest.tsv";

fn bundle(dir: &Path) -> Result<(), String> {
    let oneapi = Oneapi::find()?;
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ur-abi-programs");
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut manifest = String::new();
    for program in programs() {
        let exe = build(&oneapi, &program, &cache)?;
        let file = program.name.replace("::", "-");
        std::fs::copy(&exe, dir.join(&file)).map_err(|e| format!("{}: {e}", exe.display()))?;
        manifest.push_str(&format!("{file}\t{}\t{}\n", program.name, u8::from(program.also_without_layers)));
    }
    std::fs::write(dir.join(MANIFEST), manifest).map_err(|e| e.to_string())?;
    // The timing programs of `ur-abi-compare`, outside the manifest (they are no tests).
    for bench in Bench::ALL {
        let exe = build(&oneapi, &bench.program(), &cache)?;
        std::fs::copy(&exe, dir.join(bench.file())).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn run_all(dir: &Path, library: &Path, env: &[(&str, &str)]) -> Result<bool, String> {
    let manifest = std::fs::read_to_string(dir.join(MANIFEST)).map_err(|e| format!("{MANIFEST}: {e}"))?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for line in manifest.lines() {
        let [file, name, without] = line.split('\t').collect::<Vec<_>>()[..] else { continue };
        let mut modes = vec![Layers::FullValidation];
        if without == "1" {
            modes.push(Layers::None);
        }
        for layers in modes {
            let label = if layers == Layers::None { format!("{name} (no layers)") } else { name.to_string() };
            match run(&dir.join(file), Some(library), layers, &[], env).map(|r| verdict(&r)) {
                Ok(Verdict::Pass) => {
                    passed += 1;
                    println!("pass {label}");
                }
                Ok(Verdict::Skip(why)) => {
                    skipped += 1;
                    println!("skip {label}: {why}");
                }
                Ok(Verdict::Fail(why)) => {
                    failed += 1;
                    println!("FAIL {label}:\n{why}");
                }
                Err(e) => {
                    failed += 1;
                    println!("FAIL {label}: {e}");
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped on {}", library.display());
    Ok(failed == 0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["bundle", dir] => bundle(Path::new(dir)).map(|()| true),
        ["run", dir, library, env @ ..] => {
            let env: Vec<(&str, &str)> = env.iter().filter_map(|kv| kv.split_once('=')).collect();
            run_all(Path::new(dir), &PathBuf::from(library), &env)
        }
        _ => Err("usage: ur-abi-run bundle DIR | ur-abi-run run DIR LIBRARY [NAME=VALUE]...".into()),
    };
    match outcome {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("ur-abi-run: {e}");
            std::process::exit(2);
        }
    }
}
