//! A `libcuda.so` that lacks the driver API (a stub, a broken install) must
//! make `CudaBackend::new` answer `BackendUnavailable`, not panic inside
//! cudarc's loader ("Missing symbol cuInit").
//!
//! The dynamic loader reads `LD_LIBRARY_PATH` at process start, so the test
//! builds an empty `libcuda.so` with the system C compiler and runs this same
//! test binary again with that library first on the path. Where there is no C
//! compiler, or not Linux, it says SKIPPED.

use std::path::PathBuf;
use std::process::Command;

use trident_core::Error;
use trident_cuda::CudaBackend;

const CHILD: &str = "TRIDENT_BROKEN_DRIVER_CHILD";

/// Runs in the child process, with the fake library on the path.
#[test]
fn child_new_with_fake_libcuda() {
    if std::env::var_os(CHILD).is_none() {
        return; // only meaningful inside the child
    }
    for _ in 0..2 {
        match CudaBackend::new(0) {
            Err(Error::BackendUnavailable(why)) => {
                assert!(
                    why.contains("cuInit") || why.contains("cuDeviceGetCount"),
                    "{why}"
                );
                println!("CHILD-OK: {why}");
            }
            other => panic!("expected BackendUnavailable, got {other:?}"),
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn broken_libcuda_is_unavailable_not_a_panic() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-libcuda");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("empty.c");
    std::fs::write(&src, "int trident_fake_libcuda_marker = 1;\n").unwrap();
    let lib = dir.join("libcuda.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status();
    if !matches!(built, Ok(s) if s.success()) {
        println!("SKIPPED: no C compiler to build a fake libcuda.so");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_new_with_fake_libcuda", "--nocapture"])
        .env(CHILD, "1")
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("CHILD-OK"), "child did not run:\n{text}");
}
