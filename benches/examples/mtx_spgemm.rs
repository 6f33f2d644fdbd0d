//! Times the rayon SparseGemm `A * A` (f32) on Matrix Market files, warm:
//! the median of several calls in one process after a warm-up, as
//! `bench_table` times the named cases. For matrices outside the benchmark
//! catalog (the stencil family the 2-core SpGEMM target names), beside a SciPy
//! script that times `A @ A` on the same files.
//!
//! ```text
//! cargo run --release -p trident-benches --example mtx_spgemm -- [repeats] FILE.mtx...
//! ```
//!
//! Prints one line per file: rows, nnz(A), nnz(A^2), median and minimum ms.
//! Reads `coordinate real general` files (what `scipy.io.mmwrite` writes for
//! a sparse float matrix); anything else is refused with its line.

use std::time::Instant;

use trident_core::{CsrMatrix, SparseGemm};
use trident_rayon::RayonBackend;

/// The matrix of a `coordinate real general` Matrix Market file.
fn read_mtx(path: &str) -> Result<CsrMatrix<f32>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut lines = text.lines().enumerate();
    let header = lines
        .next()
        .map(|(_, l)| l.to_lowercase())
        .unwrap_or_default();
    if !header.starts_with("%%matrixmarket matrix coordinate real general") {
        return Err(format!(
            "{path}: line 1: expected a coordinate real general header, got {header:?}"
        ));
    }
    let mut size = None;
    let mut triplets = Vec::new();
    for (no, line) in lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('%') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("{path}: line {}: cannot read {line:?}", no + 1);
        match size {
            None => {
                let n: Vec<usize> = f
                    .iter()
                    .map(|v| v.parse().map_err(|_| bad()))
                    .collect::<Result<_, _>>()?;
                if n.len() != 3 {
                    return Err(bad());
                }
                size = Some((n[0], n[1]));
                triplets.reserve(n[2]);
            }
            Some(_) => {
                if f.len() != 3 {
                    return Err(bad());
                }
                let r: u32 = f[0].parse().map_err(|_| bad())?;
                let c: u32 = f[1].parse().map_err(|_| bad())?;
                let v: f32 = f[2].parse().map_err(|_| bad())?;
                if r == 0 || c == 0 {
                    return Err(bad());
                }
                triplets.push((r - 1, c - 1, v));
            }
        }
    }
    let (rows, cols) = size.ok_or_else(|| format!("{path}: no size line"))?;
    CsrMatrix::from_triplets(rows, cols, &triplets).map_err(|e| format!("{path}: {e}"))
}

fn main() -> Result<(), String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let repeats = match args.first().and_then(|a| a.parse::<usize>().ok()) {
        Some(r) => {
            args.remove(0);
            r.max(1)
        }
        None => 5,
    };
    let be = RayonBackend::new().map_err(|e| e.to_string())?;
    for path in &args {
        let a = read_mtx(path)?;
        let run = || SparseGemm::<f32>::spgemm(&be, &a, &a).map_err(|e| e.to_string());
        let nnz = run()?.nnz();
        let mut t = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let s = Instant::now();
            let c = run()?;
            t.push(s.elapsed().as_secs_f64() * 1e3);
            drop(c);
        }
        t.sort_by(f64::total_cmp);
        println!(
            "{path}\trows {}\tnnz(A) {}\tnnz(A^2) {nnz}\tmedian {:.2} ms\tmin {:.2} ms",
            a.rows(),
            a.nnz(),
            t[t.len() / 2],
            t[0]
        );
    }
    Ok(())
}
