//! With the `cuda` feature on a machine whose driver is older than its
//! NVRTC, `Trident::new` passes CUDA over with the reason and serves calls
//! on the next backend; `Trident::only("cuda")` is an error naming it.
//!
//! The machine is faked: the test builds a `libcuda.so` reporting CUDA 12.4
//! and a `libnvrtc.so` reporting 13.0 with the system C compiler (as
//! trident-cuda's `tests/broken_driver.rs` does) and runs this same binary
//! again with them first on `LD_LIBRARY_PATH`. Where there is no C compiler
//! it says SKIPPED.
#![cfg(all(feature = "cuda", feature = "rayon", target_os = "linux"))]

use std::path::PathBuf;
use std::process::Command;

use trident::{DenseGemm, Error, GemmParams, MatMut, MatRef, Trident};

/// Set for the child process only.
const CHILD: &str = "TRIDENT_BROKEN_DRIVER_CHILD";

const WHY: &str = "CUDA driver 12.4 (12040) is older than the 13.0 that NVRTC 13.0 needs";

#[test]
fn child_facade_with_old_driver() {
    if std::env::var_os(CHILD).is_none() {
        return; // only meaningful inside the child
    }
    let t = Trident::new().unwrap();
    assert_ne!(t.primary(), "cuda");
    let cuda = t.candidates().iter().find(|c| c.name == "cuda").unwrap();
    assert!(
        cuda.outcome.as_ref().is_err_and(|why| why.contains(WHY)),
        "{cuda:?}"
    );
    assert!(t.report().contains(WHY), "{}", t.report());
    let a = [1.0f32, 2.0, 3.0, 4.0];
    let mut c = [0.0f32; 4];
    t.gemm(
        &GemmParams::default(),
        MatRef::dense(&a, 2, 2).unwrap(),
        MatRef::dense(&a, 2, 2).unwrap(),
        MatMut::dense(&mut c, 2, 2).unwrap(),
    )
    .unwrap();
    assert_eq!(c, [7.0, 10.0, 15.0, 22.0]);
    assert_ne!(t.served_last(), "cuda");
    match Trident::only("cuda") {
        Err(Error::BackendUnavailable(why)) => assert!(why.contains(WHY), "{why}"),
        Err(e) => panic!("expected BackendUnavailable, got {e}"),
        Ok(_) => panic!("expected BackendUnavailable, got a handle"),
    }
    println!("CHILD-OK: served by {}", t.served_last());
}

#[test]
fn an_old_driver_sends_calls_to_the_next_backend() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("facade-old-driver");
    std::fs::create_dir_all(&dir).unwrap();
    let libs = [
        (
            "cuda",
            "typedef int CUresult;\n\
             CUresult cuInit(unsigned int f) { (void)f; return 0; }\n\
             CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }\n\
             CUresult cuDriverGetVersion(int* v) { *v = 12040; return 0; }\n\
             CUresult cuDeviceGet(int* d, int o) { *d = o; return 0; }\n\
             CUresult cuDeviceGetAttribute(int* v, int a, int d) {\n\
                 (void)d; *v = a == 75 ? 9 : 0; return 0; }\n",
        ),
        (
            "nvrtc",
            "int nvrtcVersion(int* a, int* b) { *a = 13; *b = 0; return 0; }\n",
        ),
    ];
    for (name, source) in libs {
        let src = dir.join(format!("{name}.c"));
        std::fs::write(&src, source).unwrap();
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join(format!("lib{name}.so")))
            .arg(&src)
            .status();
        if !matches!(built, Ok(s) if s.success()) {
            println!("SKIPPED: no C compiler to build a fake lib{name}.so");
            return;
        }
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_facade_with_old_driver", "--nocapture"])
        .env(CHILD, "facade-old-driver")
        .env("LD_LIBRARY_PATH", &dir)
        .env_remove(trident::BACKEND_ENV)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("CHILD-OK"), "child did not run:\n{text}");
}
