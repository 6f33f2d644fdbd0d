//! Project automation, run as `cargo xtask <command>` (alias in .cargo/config.toml).
//!
//! - `verify [--features LIST] [verify flags]`: builds the `trident` CLI in release
//!   with the given backend features and runs `trident verify` with the remaining
//!   flags (`--backend`, `--primitive`, `--size`, `--seed`). Defaults to the
//!   default backend (rayon) plus the reference.
//! - `device-build [--features LIST]`: builds the plain binaries the GPU machine
//!   runs (it has no Rust toolchain) into `.device/`: `trident` with the given
//!   backend features (default `cuda,wgpu`), the CUDA bench binaries
//!   (`host_bench`, `radius_bench` and `bench_table` too), and the GPU
//!   crates' test binaries in `.device/tests/`. `benches/gpu/run.sh` runs
//!   them there.
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
        .args(["run", "--release", "--quiet", "-p", "trident-compute-cli"]);
    if let Some(f) = features {
        c.args(["--features", &f]);
    }
    c.arg("--").arg("verify").args(rest);
    run(c)
}

fn device_build(args: &[String]) -> Result<(), String> {
    let features = match args {
        [] => "cuda,wgpu".to_string(),
        [flag, f] if flag == "--features" => f.clone(),
        _ => return Err("device-build takes only --features LIST".into()),
    };
    let dir = root().join(".device");
    let tests = dir.join("tests");
    std::fs::create_dir_all(&tests).map_err(|e| e.to_string())?;
    let mut c = cargo();
    c.current_dir(root()).args([
        "build",
        "--release",
        "-p",
        "trident-compute-cli",
        "--features",
    ]);
    c.arg(&features);
    run(c)?;
    let mut c = cargo();
    c.current_dir(root()).args([
        "build",
        "--release",
        "-p",
        "trident-benches",
        "--features",
        "cuda,wgpu",
        "--bin",
        "cuda_bench",
        "--bin",
        "flow_bench",
        "--bin",
        "cuda_omp_bench",
        "--bin",
        "host_bench",
        "--bin",
        "radius_bench",
        "--bin",
        "bench_table",
        "--bin",
        "wgpu_bench",
    ]);
    run(c)?;
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("target"));
    for name in [
        "trident",
        "cuda_bench",
        "flow_bench",
        "cuda_omp_bench",
        "host_bench",
        "radius_bench",
        "bench_table",
        "wgpu_bench",
    ] {
        std::fs::copy(target.join("release").join(name), dir.join(name))
            .map_err(|e| format!("copying {name}: {e}"))?;
        eprintln!("xtask: copied {name} to .device/");
    }
    // The GPU crates' tests as plain binaries (they skip without a GPU
    // unless TRIDENT_REQUIRE_BACKENDS names the backend).
    let out = cargo()
        .current_dir(root())
        .args([
            "test",
            "--release",
            "-p",
            "trident-cuda",
            "-p",
            "trident-wgpu",
            "--no-run",
            "--message-format=json",
        ])
        .output()
        .map_err(|e| format!("cargo test --no-run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo test --no-run failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // Each compiled test target is one JSON message with "executable":"PATH".
        let Some(rest) = line.split("\"executable\":\"").nth(1) else {
            continue;
        };
        let path = PathBuf::from(rest.split('"').next().unwrap_or_default());
        let Some(stem) = path.file_name().map(|n| n.to_string_lossy().to_string()) else {
            continue;
        };
        // `name-HASH` -> `name`, with the crate in front of the wgpu
        // crate's integration tests (both GPU crates have a `conformance`).
        let name = stem
            .rsplit_once('-')
            .map_or(stem.as_str(), |(n, _)| n)
            .to_string();
        let name = if line.contains("trident-wgpu") && !name.starts_with("trident_wgpu") {
            format!("wgpu_{name}")
        } else {
            name
        };
        std::fs::copy(&path, tests.join(&name)).map_err(|e| format!("copying {stem}: {e}"))?;
        eprintln!("xtask: copied test {name} to .device/tests/");
    }
    strip(&dir)
}

/// Strips the copied binaries (the call that carries them is limited to 64
/// MiB; debug line tables make them ten times larger). Best effort: without a
/// `strip` on PATH they travel as they are.
fn strip(dir: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    for d in [dir.to_path_buf(), dir.join("tests")] {
        for e in std::fs::read_dir(&d).map_err(|e| e.to_string())? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.is_file() {
                files.push(p);
            }
        }
    }
    match Command::new("strip").args(&files).status() {
        Ok(st) if st.success() => Ok(()),
        Ok(st) => Err(format!("strip failed: {st}")),
        Err(e) => {
            eprintln!("xtask: not stripping ({e})");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("verify") => verify(&args[1..]),
        Some("device-build") => device_build(&args[1..]),
        _ => Err("usage: cargo xtask verify [--features cuda,wgpu] [--backend NAME] [--primitive NAME] [--size small|large] [--seed N]\n       cargo xtask device-build [--features LIST]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
