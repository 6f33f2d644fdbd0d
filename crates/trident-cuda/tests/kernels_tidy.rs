//! Tidy checks that run everywhere (no GPU needed): every kernel file of this
//! crate is embedded verbatim, and each entry point the Rust side launches is
//! defined `extern "C"` in it (directly or through an entry macro of the file).
//!
//! The entry-point checks read the embedded sources ([`trident_cuda::KERNELS`]),
//! so they run wherever the test binary runs. The comparison with
//! `kernels/*.cu` on disk needs the source tree: on a machine that has only
//! the binary (the GPU machine) it is skipped with a printed reason.

use std::path::PathBuf;

fn kernels_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../kernels")
}

#[test]
fn every_kernel_of_ours_is_embedded_with_its_entry_points() {
    for (src, entries) in trident_cuda::KERNELS {
        let path = kernels_dir().join(format!("{}.cu", src.name));
        if kernels_dir().is_dir() {
            let on_disk = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{} is not readable: {e}", path.display()));
            assert_eq!(
                on_disk,
                src.source,
                "{} differs from the embedded copy",
                path.display()
            );
        } else {
            eprintln!(
                "skipped: comparing {}.cu with the source tree ({} is absent on this machine)",
                src.name,
                kernels_dir().display()
            );
        }
        assert!(!entries.is_empty(), "{} lists no entry points", src.name);
        for e in *entries {
            // `extern "C" __global__ void [__launch_bounds__(..)] NAME(` on one line.
            let direct = src.source.lines().any(|l| {
                l.starts_with("extern \"C\" __global__ void ") && l.contains(&format!(" {e}("))
            });
            let via_macro = src.source.contains(&format!("_ENTRY({e},"))
                || src.source.contains(&format!("_ENTRY({e})"));
            assert!(
                direct || via_macro,
                "entry point {e} is not defined in kernels/{}.cu",
                src.name
            );
            assert!(
                e.ends_with("_f32")
                    || e.ends_with("_f64")
                    || e.ends_with("_u32")
                    || !e.contains("gemm"),
                "entry point {e} lacks a type suffix"
            );
        }
    }
    for name in [
        "dense_gemm",
        "max_flow",
        "nearest_pairs",
        "sparse_coder",
        "sparse_gemm",
    ] {
        assert!(
            trident_cuda::KERNELS.iter().any(|(s, _)| s.name == name),
            "kernels/{name}.cu is not embedded"
        );
    }
}

/// The Batch-OMP kernel's copies of the numbers it shares with the rest of
/// the workspace: the ill-conditioning pivot (`trident_core::tol`, shared
/// with rayon) and the window of signals coded unscaled
/// (`trident_core::omp`).
#[test]
fn sparse_coder_constants_match_core() {
    let src = trident_cuda::KERNELS
        .iter()
        .find(|(s, _)| s.name == "sparse_coder")
        .expect("sparse_coder.cu is embedded")
        .0
        .source;
    let define = |name: &str| -> f64 {
        let prefix = format!("#define {name} ");
        let line = src
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in sparse_coder.cu"));
        line[prefix.len()..]
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    assert_eq!(define("ILL"), trident_core::tol::OMP_ILL_PIVOT_F64);
    assert_eq!(define("WINDOW"), trident_core::omp::OMP_WINDOW_F64 as f64);
}

/// Every kernel launch goes through `launch_kernel!` (in `src/device.rs`),
/// so that each names its kernel in errors and opts into shared memory the
/// same way: no other file of the crate builds a launch itself.
#[test]
fn every_launch_goes_through_the_macro() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let Ok(dir) = std::fs::read_dir(&src) else {
        eprintln!("skipped: {} is absent on this machine", src.display());
        return;
    };
    for entry in dir {
        let path = entry.expect("src/ entry").path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("device.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        for needle in ["launch_builder", ".launch("] {
            assert!(
                !text.contains(needle),
                "{} launches a kernel without launch_kernel! (`{needle}`)",
                path.display()
            );
        }
    }
}
