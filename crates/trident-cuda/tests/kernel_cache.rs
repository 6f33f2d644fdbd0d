//! The on-disk kernel cache with the real compiler: a first GEMM
//! call stores the cubin of the one entry point it needs (not the whole
//! module) under `TRIDENT_CACHE_DIR`; a second backend, whose in-memory
//! module cache is empty, loads that entry from disk without rewriting it,
//! and a corrupt entry is recompiled and replaced. A first f32 SpGEMM call
//! stores one file per module it may need (its entry points one by one,
//! compiled in parallel, plus the shared `base` module) and none of the f64
//! ones. The probe kernel every construction loads (`kernels/probe.cu`) is
//! stored too, beside the files counted here. The cache's logic alone is
//! unit-tested with a fake compiler in `src/kcache.rs`. One test in its own
//! binary: the cache directory is read from the environment once per process.
//! Skipped (with a SKIPPED line) where there is no CUDA device.

mod common;

use trident_core::{CsrMatrix, DenseGemm, GemmParams, MatMut, MatRef, SparseGemm};
use trident_cuda::CudaBackend;

fn gemm_ok(be: &CudaBackend) {
    let a = vec![1.0f32; 64 * 64];
    let mut c = vec![0.0f32; 64 * 64];
    be.gemm(
        &GemmParams::default(),
        MatRef::dense(&a, 64, 64).unwrap(),
        MatRef::dense(&a, 64, 64).unwrap(),
        MatMut::dense(&mut c, 64, 64).unwrap(),
    )
    .unwrap();
    assert!(c.iter().all(|&v| v == 64.0));
}

/// The cache's files, but the construction probe's.
fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = all_entries(dir)
        .into_iter()
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("probe-")
        })
        .collect();
    v.sort();
    v
}

fn all_entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn gemm_entry_points_are_cached_on_disk_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    // SAFETY: set before any thread of this binary reads the environment
    // (this binary has one test).
    unsafe { std::env::set_var(trident_cuda::kcache::CACHE_ENV, &dir) };
    let Some(be) = common::backend("gemm_entry_points_are_cached_on_disk_one_by_one") else {
        return;
    };
    // Construction compiled and stored the probe kernel.
    let probe: Vec<_> = all_entries(&dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("probe-sm_")
        })
        .collect();
    assert_eq!(probe.len(), 1, "{probe:?}");
    gemm_ok(&be);
    let files = entries(&dir);
    assert_eq!(files.len(), 1, "one entry point, one file: {files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("dense_gemm.gemm_nn_64x64_f32-sm_"),
        "{name}"
    );
    let stored = std::fs::read(&files[0]).unwrap();
    let mtime = std::fs::metadata(&files[0]).unwrap().modified().unwrap();
    // A fresh backend (empty module cache) hits the disk entry.
    let again = CudaBackend::new(0).unwrap();
    gemm_ok(&again);
    assert_eq!(entries(&dir), files);
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().modified().unwrap(),
        mtime
    );
    // A corrupt entry is recompiled and replaced by a good one.
    std::fs::write(&files[0], b"not a cubin").unwrap();
    let third = CudaBackend::new(0).unwrap();
    gemm_ok(&third);
    let redone = std::fs::read(&files[0]).unwrap();
    assert!(redone.starts_with(b"TRIDENT-KERNEL-CACHE"));
    assert_eq!(redone.len(), stored.len());

    // SpGEMM: a 2 x 2 product, every bin's kernel stored for f32 only.
    let a = CsrMatrix::new(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![1.0f32, 2.0, 3.0]).unwrap();
    let c = be.spgemm(&a, &a).unwrap();
    assert_eq!(c.offsets(), &[0, 2, 3]);
    assert_eq!(c.values(), &[1.0, 8.0, 9.0]);
    let spgemm: Vec<String> = entries(&dir)
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sparse_gemm."))
        .collect();
    assert!(
        spgemm.iter().any(|n| n.starts_with("sparse_gemm.base-sm_")),
        "{spgemm:?}"
    );
    assert!(
        spgemm
            .iter()
            .any(|n| n.starts_with("sparse_gemm.spg_num_dense_f32-")),
        "{spgemm:?}"
    );
    assert!(spgemm.iter().all(|n| !n.contains("_f64")), "{spgemm:?}");
    assert!(spgemm.len() >= 10, "{spgemm:?}");
}
