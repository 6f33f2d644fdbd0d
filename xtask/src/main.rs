//! Project automation, run as `cargo xtask <command>` (alias in .cargo/config.toml).
//!
//! - `verify [--features LIST] [verify flags]`: builds the `trident` CLI in release
//!   with the given backend features and runs `trident verify` with the remaining
//!   flags (`--backend`, `--primitive`, `--size`, `--seed`). Defaults to the
//!   default backend (rayon) plus the reference.
//! - `device-build`: builds the plain binaries the GPU machine runs (it has no
//!   Rust toolchain) into `.device/`: `trident` with `cuda,wgpu` and the CUDA
//!   bench binary.
//!
//! Few dependencies on purpose: it only spawns `$CARGO`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

fn run(mut c: Command) -> Result<(), String> {
    eprintln!("xtask: {c:?}");
    let st = c.status().map_err(|e| format!("cannot start {c:?}: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("{c:?} failed: {st}"))
    }
}

fn verify(args: &[String]) -> Result<(), String> {
    let mut features = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--features" {
            features = Some(it.next().ok_or("--features needs a value")?.clone());
        } else if let Some(f) = a.strip_prefix("--features=") {
            features = Some(f.to_string());
        } else {
            rest.push(a.clone());
        }
    }
    let mut c = cargo();
    c.current_dir(root())
        .args(["run", "--release", "--quiet", "-p", "trident-cli"]);
    if let Some(f) = features {
        c.args(["--features", &f]);
    }
    c.arg("--").arg("verify").args(rest);
    run(c)
}

fn device_build() -> Result<(), String> {
    let dir = root().join(".device");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut c = cargo();
    c.current_dir(root()).args([
        "build",
        "--release",
        "-p",
        "trident-cli",
        "--features",
        "cuda,wgpu",
    ]);
    run(c)?;
    let mut c = cargo();
    c.current_dir(root()).args([
        "build",
        "--release",
        "-p",
        "trident-cuda",
        "--features",
        "peers",
        "--bins",
    ]);
    run(c)?;
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("target"));
    for entry in std::fs::read_dir(target.join("release")).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().to_string();
        let is_bin = entry.path().is_file()
            && !name.contains('.')
            && (name == "trident" || name.starts_with("cuda_"));
        if is_bin {
            std::fs::copy(entry.path(), dir.join(&name)).map_err(|e| e.to_string())?;
            eprintln!("xtask: copied {name} to .device/");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("verify") => verify(&args[1..]),
        Some("device-build") => device_build(),
        _ => Err("usage: cargo xtask verify [--features cuda,wgpu] [--backend NAME] [--primitive NAME] [--size small|large] [--seed N]\n       cargo xtask device-build".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
