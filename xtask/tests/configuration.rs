//! Tidy check: the environment variables `docs/configuration.md` lists are
//! exactly those the code reads. A variable read but not listed is a setting
//! users cannot discover; one listed but no longer read is a setting that
//! silently does nothing.
//!
//! "Read by the code" means: a string literal naming a `TRIDENT_` variable
//! (in double or single quotes) in a `.rs` or `.py` file under `crates/`,
//! `xtask/` or `benches/`. Every read in the tree goes through such a literal
//! (or a constant holding one), so the scan finds them all. "Listed" means:
//! the first cell of a table row of the page.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const PREFIX: &str = "TRIDENT_";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

/// `.rs` and `.py` files under `dir`, skipping hidden folders, build output
/// and Python's caches and virtual environments.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let skip = name.starts_with('.')
                || matches!(
                    name.as_str(),
                    "target" | "__pycache__" | "venv" | "node_modules"
                );
            if !skip {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".py") {
            out.push(path);
        }
    }
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'
}

/// The variable names in quote-delimited literals of `text`: a quote, the
/// prefix, at least one name character more, and the same quote.
fn literals(text: &str) -> BTreeSet<String> {
    let b = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(PREFIX) {
        let start = from + at;
        from = start + PREFIX.len();
        let Some(&open) = start.checked_sub(1).and_then(|i| b.get(i)) else {
            continue;
        };
        if open != b'"' && open != b'\'' {
            continue;
        }
        let mut end = from;
        while end < b.len() && is_name_char(b[end]) {
            end += 1;
        }
        if end > from && b.get(end) == Some(&open) {
            found.insert(text[start..end].to_owned());
        }
    }
    found
}

/// Variable names (with the prefix) in the first cell of each table row.
fn documented(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|l| l.strip_prefix('|'))
        .filter_map(|l| l.split('|').next())
        .flat_map(|cell| {
            cell.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.len() > PREFIX.len() && w.starts_with(PREFIX))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_variable_read_is_documented_and_every_documented_one_is_read() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "benches"] {
        sources(&root.join(dir), &mut files);
    }
    let this = Path::new(file!()).file_name().expect("file name");
    let mut read = BTreeSet::new();
    let mut where_read: Vec<(String, PathBuf)> = Vec::new();
    for f in &files {
        if f.file_name() == Some(this) && f.parent().is_some_and(|p| p.ends_with("xtask/tests")) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for v in literals(&text) {
            where_read.push((v.clone(), f.strip_prefix(&root).unwrap_or(f).to_path_buf()));
            read.insert(v);
        }
    }
    let page_path = root.join("docs/configuration.md");
    let page = std::fs::read_to_string(&page_path)
        .unwrap_or_else(|e| panic!("{}: {e}", page_path.display()));
    let listed = documented(&page);
    assert!(
        read.len() >= 10,
        "the scan found only {read:?}: is it looking in the right place ({})?",
        root.display()
    );
    let unlisted: Vec<String> = read
        .difference(&listed)
        .map(|v| {
            let at: Vec<String> = where_read
                .iter()
                .filter(|(w, _)| w == v)
                .map(|(_, p)| p.display().to_string())
                .collect();
            format!("{v} (read in {})", at.join(", "))
        })
        .collect();
    let stale: Vec<&String> = listed.difference(&read).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "docs/configuration.md is out of date.\n  read but not listed: {unlisted:?}\n  \
         listed but read nowhere: {stale:?}"
    );
}

#[test]
fn the_scan_finds_quoted_names_only() {
    let p = PREFIX;
    let text = format!(
        "let a = env::var(\"{p}ONE\"); x = os.environ['{p}TWO_2']; // {p}THREE \
         \"{p}\" \"{p}four\" \"{p}FIVE'"
    );
    let got: Vec<String> = literals(&text).into_iter().collect();
    assert_eq!(got, [format!("{p}ONE"), format!("{p}TWO_2")]);
    let page = format!("| `{p}A`, `{p}B` | x `{p}NOT` |\ntext `{p}NOR`\n");
    let got: Vec<String> = documented(&page).into_iter().collect();
    assert_eq!(got, [format!("{p}A"), format!("{p}B")]);
}
