//! The README's suite results add up to the suite's current number of cases
//! (`cases::all()`), or say the number of cases of their older run (`492
//! cases then`): adding a case makes every stale count fail here until the
//! README is updated. docs/conformance.md's total is checked too.

use std::path::Path;

/// The totals of the results in `text`: `X/Y`, `X + Y skipped` and `X passed / Y skipped`.
fn totals(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let words: Vec<&str> = text.split([' ', '(', ')', ',', ';']).filter(|w| !w.is_empty()).collect();
    for (i, word) in words.iter().enumerate() {
        let number = |w: &str| w.parse::<usize>().ok();
        if let Some((a, b)) = word.split_once('/')
            && let (Some(a), Some(b)) = (number(a), number(b))
        {
            out.push((b.max(a), (*word).to_string()));
        }
        let next = |k: usize| words.get(i + k).copied().unwrap_or("");
        if let (Some(a), "+", Some(b), "skipped") = (number(word), next(1), number(next(2)), next(3)) {
            out.push((a + b, format!("{a} + {b} skipped")));
        }
        if let (Some(a), "passed", "/", Some(b), "skipped") = (number(word), next(1), next(2), number(next(3)), next(4))
        {
            out.push((a + b, format!("{a} passed / {b} skipped")));
        }
    }
    out
}

#[test]
fn readme_results_match_the_number_of_cases() {
    let cases = cmdbuf_conformance::cases::all().len();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let table: Vec<&str> = readme.lines().filter(|l| l.starts_with("| ") && l.contains("suite ")).collect();
    assert!(table.len() >= 4, "the backends table has a result per backend");
    let mut checked = 0;
    for row in table {
        for (total, text) in totals(row) {
            checked += 1;
            assert!(
                total == cases || row.contains(&format!("{total} cases then")),
                "README: `{text}` adds up to {total}, but the suite has {cases} cases \
                 (update the result, or say `{total} cases then`): {row}"
            );
        }
    }
    assert!(checked >= 8, "found only {checked} results in the README's table");

    let doc = std::fs::read_to_string(root.join("docs/conformance.md")).unwrap();
    assert!(doc.contains(&format!("{cases} cases in all")), "docs/conformance.md states another total than {cases}");
}
