//! What the integration tests of one subcommand share: running the binary,
//! reading its exit code, stderr and `--json`, and the all-or-nothing check of
//! a failed run.
#![allow(dead_code)] // each test file uses its own part

use std::path::Path;
use std::process::{Command, Output};

use npyz::WriterBuilder;

/// Runs `trident` on the rayon backend.
pub fn trident(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trident"))
        .args(args)
        .env_remove("TRIDENT_SEED")
        .env_remove("RUST_LOG")
        .env("TRIDENT_BACKEND", "rayon")
        .output()
        .expect("run trident")
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code (not killed by a signal)")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}; stderr {}",
            stdout(o),
            stderr(o)
        )
    })
}

/// Runs a command that must succeed; its `--json` object.
pub fn ok_json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let o = trident(&a);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    json(&o)
}

/// Runs a command that must fail with `want`, leaving `out` absent and no
/// temporary file beside it; its message must contain every one of `needles`.
pub fn fails(args: &[&str], want: i32, needles: &[&str], out: &Path) {
    let o = trident(args);
    let err = stderr(&o);
    assert_eq!(code(&o), want, "{args:?}: stderr {err}");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    }
    assert!(!out.exists(), "{args:?} left {out:?}");
    if let Some(dir) = out.parent().filter(|d| d.exists()) {
        let left: Vec<_> = std::fs::read_dir(dir)
            .expect("read dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(left.is_empty(), "{args:?} left temporary files {left:?}");
    }
}

/// Writes an `.npy` file with an independent writer (npyz).
pub fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    let mut buf = Vec::new();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut buf)
        .begin_nd()
        .expect("npy writer");
    w.extend(data.iter().copied()).expect("npy data");
    w.finish().expect("npy finish");
    std::fs::write(path, buf).expect("write npy");
}

/// An `.npy` file read with npyz: its shape and values.
pub fn read_npy<T: npyz::Deserialize>(path: &Path) -> (Vec<u64>, Vec<T>) {
    let bytes = std::fs::read(path).expect("read npy");
    let f = npyz::NpyFile::new(&bytes[..]).expect("npy header");
    let shape = f.shape().to_vec();
    (shape, f.into_vec::<T>().expect("npy data"))
}

/// One member of an `.npz` archive, read with npyz.
pub fn npz_member<T: npyz::Deserialize>(path: &Path, name: &str) -> Vec<T> {
    let file = std::fs::File::open(path).expect("npz");
    let mut zip = zip::ZipArchive::new(file).expect("a zip archive");
    let mut f = zip.by_name(&format!("{name}.npy")).expect("member");
    let mut v = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut v).expect("member data");
    npyz::NpyFile::new(&v[..])
        .expect("npy")
        .into_vec()
        .expect("values")
}
