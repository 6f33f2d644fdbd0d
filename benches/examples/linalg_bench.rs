//! Times the rayon DenseGemm (square f32, `C = A B`) and SparseGemm on the contract's
//! `spgemm-*` cases (`A * A`, built by `trident_testkit::cases::spec_cases()`
//! with the default seed), printing the median of a few repeats.
//!
//! ```text
//! cargo run --release -p trident-benches --example linalg_bench -- [gemm_n] [repeats] [only] [out_dir]
//! ```
//!
//! Defaults: `gemm_n` 2048 (0 skips GEMM), `repeats` 5, `only` `-` (every
//! SpGEMM case; otherwise those whose name contains it). With `out_dir`, each SpGEMM input is
//! also written as a `TRIDENT-CASE` file (`<case>.case`, see
//! `trident_testkit::cases::io`) so that a SciPy peer can time the same matrices.
//! GEMM is reported in GFLOP/s (`2 m n k / time`), SpGEMM in GFLOP/s
//! (`2 x products / time`), as the contract asks.

use std::path::PathBuf;
use std::time::Instant;

use trident_core::{DenseGemm, GemmParams, MatMut, MatRef, SparseGemm};
use trident_rayon::RayonBackend;
use trident_testkit::cases;

/// Median and minimum of `repeats` timed runs of `f`, in seconds (after one
/// warm-up run). The minimum is printed too: on a shared machine it is the
/// steadier of the two.
fn median_secs(repeats: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let mut t: Vec<f64> = (0..repeats.max(1))
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[0])
}

fn main() -> trident_core::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gemm_n: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(2048);
    let repeats: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let only = args
        .get(2)
        .filter(|s| *s != "-")
        .cloned()
        .unwrap_or_default();
    let out_dir = args.get(3).map(PathBuf::from);
    let be = RayonBackend::new()?;
    println!(
        "backend: rayon ({} threads), median of {repeats}",
        be.threads()
    );

    if gemm_n > 0 {
        let n = gemm_n;
        let a = cases::uniform_matrix::<f32>(n, n, 1);
        let b = cases::uniform_matrix::<f32>(n, n, 2);
        let mut c = vec![0.0f32; n * n];
        let p = GemmParams::default();
        let (secs, best) = median_secs(repeats, || {
            DenseGemm::<f32>::gemm(
                &be,
                &p,
                MatRef::dense(&a, n, n).unwrap(),
                MatRef::dense(&b, n, n).unwrap(),
                MatMut::dense(&mut c, n, n).unwrap(),
            )
            .unwrap();
        });
        let flops = 2.0 * (n as f64).powi(3);
        println!(
            "gemm-{n} f32: {:9.2} ms  {:8.1} GFLOP/s  (min {:.2} ms, {:.1} GFLOP/s)",
            secs * 1e3,
            flops / secs / 1e9,
            best * 1e3,
            flops / best / 1e9
        );
    }

    for case in cases::spec_cases()
        .into_iter()
        .filter(|c| c.primitive == "sparse_gemm" && c.name.contains(&only))
    {
        let input = case.input(trident_testkit::DEFAULT_SEED);
        let Some(sc) = input.downcast_ref::<cases::SpgemmCase<f32>>() else {
            continue;
        };
        if let Some(dir) = &out_dir {
            std::fs::create_dir_all(dir)?;
            cases::io::write_spgemm(&dir.join(format!("{}.case", case.name)), sc)?;
        }
        let products = sc.a.products_with(&sc.b);
        let mut nnz = 0;
        let (secs, best) = median_secs(repeats, || {
            nnz = SparseGemm::<f32>::spgemm(&be, &sc.a, &sc.b).unwrap().nnz();
        });
        let gflops = |s: f64| 2.0 * products as f64 / s / 1e9;
        println!(
            "{:24} {:9.2} ms  {:6.3} GFLOP/s  (min {:.2} ms, {:.3} GFLOP/s; nnz A {}, products {products}, nnz C {nnz})",
            case.name,
            secs * 1e3,
            gflops(secs),
            best * 1e3,
            gflops(best),
            sc.a.nnz(),
        );
    }
    Ok(())
}
