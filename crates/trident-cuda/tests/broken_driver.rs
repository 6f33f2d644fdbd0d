//! Fake CUDA libraries make `CudaBackend::new` answer `BackendUnavailable`
//! with the right reason, never panic and never fail later, at a call:
//!
//! - a `libcuda.so` that lacks the driver API (a stub, a broken install):
//!   the reason names the missing symbol (cudarc's loader panics with
//!   "Missing symbol cuInit", which construction catches);
//! - a driver that reports CUDA 12.4 beside an NVRTC 13.0: the reason names
//!   both versions and the driver to install;
//! - a device of compute capability 7.5: the reason names it and the 8.0
//!   the kernels need;
//! - versions exactly at the minimum pass the checks and construction goes
//!   on to open the device (which the fake library then cannot do).
//!
//! The dynamic loader reads `LD_LIBRARY_PATH` at process start, so each case
//! builds its fake `libcuda.so` (and `libnvrtc.so`, a few functions returning
//! fixed numbers) with the system C compiler and runs this same test binary
//! again with that directory first on the path. Where there is no C compiler,
//! or not Linux, it says SKIPPED. A real GPU on the machine does not matter:
//! the child loads the fakes.

use std::path::{Path, PathBuf};
use std::process::Command;

use trident_core::Error;
use trident_cuda::CudaBackend;

/// Set (to the case's name) for the child process only.
const CHILD: &str = "TRIDENT_BROKEN_DRIVER_CHILD";

/// The reason `CudaBackend::new(0)` gives, asserting it is
/// `BackendUnavailable` and the same on a second try.
fn unavailable_reason() -> String {
    let mut first = None;
    for _ in 0..2 {
        match CudaBackend::new(0) {
            Err(Error::BackendUnavailable(why)) => {
                first.get_or_insert(why);
            }
            other => panic!("expected BackendUnavailable, got {other:?}"),
        }
    }
    first.unwrap()
}

/// Runs in the child process, with the fake library on the path.
#[test]
fn child_new_with_fake_libcuda() {
    let Some(case) = std::env::var_os(CHILD) else {
        return; // only meaningful inside the child
    };
    let why = unavailable_reason();
    let expect: &[&str] = match case.to_str().unwrap() {
        "empty" => &["Missing symbol cuInit"],
        "old-driver" => &[
            "CUDA device 0: CUDA driver 12.4 (12040) is older than the 13.0 that NVRTC 13.0 needs",
            "580 or newer",
        ],
        "old-gpu" => &["compute capability 7.5", "need 8.0 or newer"],
        // Past the checks: opening the device is the first thing the fake lacks.
        "at-minimum" => &["Missing symbol cuDevicePrimaryCtxRetain"],
        other => panic!("unknown case {other}"),
    };
    for e in expect {
        assert!(why.contains(e), "expected {e:?} in: {why}");
    }
    if matches!(case.to_str(), Some("old-driver" | "at-minimum")) {
        assert!(!why.contains("compute capability"), "{why}");
    }
    println!("CHILD-OK: {why}");
}

/// A fake driver: the calls construction makes before it opens a context,
/// answering a driver version and a compute capability fixed at build time.
const FAKE_CUDA: &str = r#"
typedef int CUresult;
CUresult cuInit(unsigned int flags) { (void)flags; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDriverGetVersion(int* v) { *v = DRIVER; return 0; }
CUresult cuDeviceGet(int* d, int ordinal) { *d = ordinal; return 0; }
/* 75, 76: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, _MINOR */
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
    (void)dev;
    *v = attr == 75 ? CC_MAJOR : attr == 76 ? CC_MINOR : 0;
    return 0;
}
"#;

const FAKE_NVRTC: &str = r#"
int nvrtcVersion(int* major, int* minor) { *major = 13; *minor = 0; return 0; }
"#;

/// Builds `lib<name>.so` in `dir` from `source` with `-D` `defines`; `false`
/// when there is no working C compiler.
fn build_library(dir: &Path, name: &str, source: &str, defines: &[String]) -> bool {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC"])
        .args(defines)
        .arg("-o")
        .arg(dir.join(format!("lib{name}.so")))
        .arg(&src)
        .status();
    matches!(built, Ok(s) if s.success())
}

/// Runs the child half for `case` with `dir` first on the library path.
fn run_child(case: &str, dir: &Path) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_new_with_fake_libcuda", "--nocapture"])
        .env(CHILD, case)
        .env("LD_LIBRARY_PATH", dir)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child ({case}) failed:\n{text}");
    assert!(
        text.contains("CHILD-OK"),
        "child ({case}) did not run:\n{text}"
    );
}

fn case_dir(case: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-libcuda-{case}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(target_os = "linux")]
#[test]
fn broken_libcuda_is_unavailable_not_a_panic() {
    let dir = case_dir("empty");
    let marker = "int trident_fake_libcuda_marker = 1;\n";
    if !build_library(&dir, "cuda", marker, &[]) {
        println!("SKIPPED: no C compiler to build a fake libcuda.so");
        return;
    }
    run_child("empty", &dir);
}

/// Driver, NVRTC and device versions below what the kernels need are
/// `BackendUnavailable` naming them; exactly the minimum passes the checks.
#[cfg(target_os = "linux")]
#[test]
fn old_drivers_and_gpus_are_unavailable_with_the_reason() {
    for (case, driver, cc) in [
        ("old-driver", 12040, (9, 0)),
        ("old-gpu", 13000, (7, 5)),
        ("at-minimum", 13000, (8, 0)),
    ] {
        let dir = case_dir(case);
        let defines = [
            format!("-DDRIVER={driver}"),
            format!("-DCC_MAJOR={}", cc.0),
            format!("-DCC_MINOR={}", cc.1),
        ];
        if !build_library(&dir, "cuda", FAKE_CUDA, &defines)
            || !build_library(&dir, "nvrtc", FAKE_NVRTC, &[])
        {
            println!("SKIPPED: no C compiler to build a fake libcuda.so");
            return;
        }
        run_child(case, &dir);
    }
}
