//! The test kit's shared parts never name a primitive folder: the folders use
//! the shared parts, and only the registry (`src/registry.rs`) reads the
//! folders. `ARCHITECTURE.md` states the rule; this keeps it.

use std::fs;
use std::path::{Path, PathBuf};

/// The shared parts: every file directly under `src/` but the crate root
/// (which declares the modules) and the registry, and everything in `cases/`.
fn shared_files(src: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in [src.to_path_buf(), src.join("cases")] {
        for e in fs::read_dir(&dir).expect("a source folder") {
            let p = e.expect("dir entry").path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let top = dir == src;
            if p.extension().is_some_and(|x| x == "rs")
                && !(top && (name == "lib.rs" || name == "registry.rs"))
            {
                v.push(p);
            }
        }
    }
    assert!(
        v.iter().any(|p| p.ends_with("verify.rs")) && v.iter().any(|p| p.ends_with("catalog.rs")),
        "the shared files were not found under {}",
        src.display()
    );
    v
}

/// The primitive folders: every folder under `src/` with a `mod.rs`, except
/// the shared `cases/`.
fn primitive_folders(src: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in fs::read_dir(src).expect("src") {
        let p = e.expect("dir entry").path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.join("mod.rs").is_file() && name != "cases" {
            v.push(name);
        }
    }
    v
}

/// The places in `text` that name `folder` as a path (`crate::folder`,
/// `super::folder`, or inside a `crate::{...}` group).
fn mentions(text: &str, folder: &str) -> Vec<usize> {
    let mut hits = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let named = |prefix: &str| {
            line.match_indices(&format!("{prefix}{folder}"))
                .any(|(at, m)| {
                    let after = line[at + m.len()..].chars().next();
                    !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                })
        };
        let grouped = line.match_indices("crate::{").any(|(at, _)| {
            let rest = &line[at..];
            let group = &rest[..rest.find('}').unwrap_or(rest.len())];
            group
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == folder)
        });
        if named("crate::") || named("super::") || grouped {
            hits.push(i + 1);
        }
    }
    hits
}

#[test]
fn shared_parts_never_name_a_primitive_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let folders = primitive_folders(&src);
    assert!(
        folders.len() >= 5,
        "found only {folders:?} as primitive folders under {}",
        src.display()
    );
    let mut bad = Vec::new();
    for file in shared_files(&src) {
        let text = fs::read_to_string(&file).expect("read a shared file");
        for f in &folders {
            for line in mentions(&text, f) {
                bad.push(format!("{}:{line} names `{f}`", file.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the test kit's shared parts must not name a primitive folder (read it \
         through src/registry.rs instead):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scan_sees_a_mention() {
    assert_eq!(mentions("use crate::max_flow::generate;", "max_flow"), [1]);
    assert_eq!(mentions("x\n$crate::max_flow::SUITE", "max_flow"), [2]);
    assert_eq!(mentions("use super::max_flow;", "max_flow"), [1]);
    assert_eq!(mentions("use crate::{cases, max_flow};", "max_flow"), [1]);
    assert!(mentions("use crate::max_flows::x; // max_flow", "max_flow").is_empty());
}
