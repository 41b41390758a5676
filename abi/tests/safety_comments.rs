//! Every `unsafe` block's `SAFETY` comment says why the call is sound, not
//! only that the caller's contract was passed on ("forwarded"). In the ABI,
//! where most unsafe calls forward a C pointer, the reasons live in the
//! module doc of `entry_points` ("Handles", "Wait lists", ...) and each
//! comment names the parameter and the part it relies on; this test keeps the
//! one-word comments from coming back there, and anywhere in the workspace.

use std::path::{Path, PathBuf};

/// The fewest words an ABI `SAFETY` comment has: "checked non-null, writable
/// per the contract" (6) is a reason, "forwarded from the caller" (4) is not.
const MIN_ABI_WORDS: usize = 5;

/// Comments that name no reason, whatever follows them.
const NON_REASONS: &[&str] =
    &["forwarded", "the caller's contract", "per the contract", "per contract", "trivially safe"];

/// One `SAFETY` comment: where it starts and its text, continuation lines
/// joined.
#[derive(Debug)]
struct Comment {
    file: PathBuf,
    line: usize,
    text: String,
}

/// The `SAFETY` comments of one source text.
fn comments_in(file: &Path, source: &str) -> Vec<Comment> {
    let marker = concat!("SAFETY", ":");
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(first) = comment_body(lines[i]).and_then(|b| b.strip_prefix(marker)) else {
            i += 1;
            continue;
        };
        let mut text = first.trim().to_string();
        let mut next = i + 1;
        while let Some(more) = lines.get(next).and_then(|l| comment_body(l)) {
            if more.starts_with(marker) {
                break;
            }
            text.push(' ');
            text.push_str(more);
            next += 1;
        }
        found.push(Comment { file: file.to_path_buf(), line: i + 1, text });
        i = next;
    }
    found
}

/// The text of a plain `//` comment line (not a doc comment), trimmed.
fn comment_body(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("//")?;
    if rest.starts_with('/') || rest.starts_with('!') {
        return None;
    }
    Some(rest.trim())
}

/// Why `comment` gives no reason, if it gives none; `min_words` where the
/// crate asks for a sentence.
fn no_reason(comment: &Comment, min_words: usize) -> Option<String> {
    let lower = comment.text.to_lowercase();
    let bare = lower.trim_end_matches(['.', ';', ':']);
    for non_reason in NON_REASONS {
        if bare == *non_reason || (*non_reason == "forwarded" && bare.starts_with(non_reason)) {
            return Some(format!("\"{}\" is no reason", comment.text));
        }
    }
    let words = comment.text.split_whitespace().count();
    (words < min_words).then(|| format!("\"{}\" has {words} words, fewer than {min_words}", comment.text))
}

/// The `.rs` files under `dir`, build output and hidden folders left out.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The comments under `dir` that give no reason, one line each.
fn offenders(dir: &Path, min_words: usize) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        for comment in comments_in(&file, &source) {
            if let Some(why) = no_reason(&comment, min_words) {
                found.push(format!("{}:{}: {why}", comment.file.display(), comment.line));
            }
        }
    }
    found
}

fn abi_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_abi_safety_comment_gives_a_reason() {
    let found = offenders(&abi_src(), MIN_ABI_WORDS);
    assert!(found.is_empty(), "SAFETY comments without a reason (see entry_points' module doc):\n{}", found.join("\n"));
}

#[test]
fn no_safety_comment_in_the_workspace_only_forwards() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("abi is inside the workspace");
    let found = offenders(workspace, 0);
    assert!(found.is_empty(), "SAFETY comments that only forward the contract:\n{}", found.join("\n"));
}

#[test]
fn the_abi_holds_safety_comments_to_check() {
    let mut files = Vec::new();
    rust_files(&abi_src(), &mut files);
    let count: usize =
        files.iter().map(|f| comments_in(f, &std::fs::read_to_string(f).unwrap_or_default()).len()).sum();
    assert!(count > 500, "only {count} SAFETY comments found in abi/src: is the scan reading the sources?");
}

#[test]
fn the_check_refuses_forwarding_and_fragments_and_takes_reasons() {
    let marker = concat!("SAFETY", ":");
    let source = format!(
        "    // {marker} forwarded.\n    unsafe {{ a() }};\n    // {marker} forwarded from the caller.\n\
         // {marker} too short.\n    // {marker} `queue` is null or one of this adapter's handles\n    \
         // (entry_points doc, \"Handles\"), all `get` needs.\n    /// {marker} a doc line is no comment.\n"
    );
    let comments = comments_in(Path::new("x.rs"), &source);
    let verdicts: Vec<bool> = comments.iter().map(|c| no_reason(c, MIN_ABI_WORDS).is_some()).collect();
    assert_eq!(verdicts, [true, true, true, false], "{comments:?}");
    assert!(comments[3].text.ends_with("all `get` needs."), "continuation lines are joined: {:?}", comments[3]);
}
