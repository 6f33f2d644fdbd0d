//! Benchmarks of the CUDA backend on the SPEC cases, against the vendor
//! libraries on the same device buffers in the same run (cuBLAS SGEMM for
//! GEMM; SpGEMM rows add cuSPARSE).
//!
//! Usage: `cuda_bench [--reps N] [FILTER...]`: runs the cases whose name
//! contains one of the filters (all when none). Device times come from CUDA
//! events around each repetition after warm-up (module compilation, handle
//! creation and the memory pool's first growth stay out), median of N;
//! host-to-host times (upload, compute, download through the host traits)
//! from the wall clock, median of a few runs. Inputs come from
//! `trident_testkit::cases` with a fixed seed. Each case also checks its
//! result (against the peer, or by brute force on a sample) and prints the
//! error, so a fast wrong kernel shows up here.
//!
//! Adding a case: write `fn my_case(ctx: &Bench) -> Result<Vec<Row>>` and add
//! it to `CASES`.

use std::sync::Arc;
use std::time::Instant;

use cudarc::cublas::{CudaBlas, result as blas, sys as blas_sys};
use cudarc::driver::sys::CUevent_flags;
use trident_core::{
    DenseGemm, DenseGemmDevice, DeviceMat, DeviceMemory, Error, GemmParams, MatMut, MatRef,
    NearestPairs, NearestPairsDevice, Neighbor, Result, dist2,
};
use trident_cuda::{CudaBackend, GemmTile, driver_error};
use trident_testkit::cases;

const SEED: u64 = 0x7121_d3a7;

/// One line of the table.
struct Row {
    case: String,
    /// Our device-resident time.
    ours_ms: f64,
    /// The peer's time on the same buffers, when there is one.
    peer_ms: Option<f64>,
    /// Rate or other figure to print next to the times ("51.2 TFLOP/s").
    figure: String,
    /// Host-to-host time of the same call through the host trait.
    h2h_ms: Option<f64>,
    /// Result check ("rel err 3e-7", "exact on 500 sampled queries").
    check: String,
}

struct Bench {
    be: CudaBackend,
    reps: usize,
}

impl Bench {
    /// Median device time of `f` in ms over `reps` runs after 2 warm-ups.
    fn time(&self, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
        let ctx = self.be.context();
        let stream = self.be.stream();
        for _ in 0..2 {
            f()?;
        }
        self.be.synchronize()?;
        let mut t = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            let e0 = ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_error("event"))?;
            let e1 = ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_error("event"))?;
            e0.record(stream).map_err(driver_error("event record"))?;
            f()?;
            e1.record(stream).map_err(driver_error("event record"))?;
            t.push(e0.elapsed_ms(&e1).map_err(driver_error("event elapsed"))? as f64);
        }
        Ok(median(t))
    }

    /// Median wall time in ms of `f` (which synchronizes itself) over `n` runs
    /// after one warm-up.
    fn wall(&self, n: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
        f()?;
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            let s = Instant::now();
            f()?;
            t.push(s.elapsed().as_secs_f64() * 1e3);
        }
        Ok(median(t))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn blas_err(e: blas::CublasError) -> Error {
    Error::Backend(format!("cuBLAS: {e:?}").into())
}

fn gemm_case(ctx: &Bench, n: usize) -> Result<Vec<Row>> {
    let be = &ctx.be;
    let a: Vec<f32> = cases::uniform_matrix(n, n, SEED ^ 1);
    let b: Vec<f32> = cases::uniform_matrix(n, n, SEED ^ 2);
    let da = DeviceMat {
        buf: be.upload(&a)?,
        rows: n,
        cols: n,
        ld: n,
    };
    let db = DeviceMat {
        buf: be.upload(&b)?,
        rows: n,
        cols: n,
        ld: n,
    };
    let mut dc = DeviceMat {
        buf: be.alloc::<f32>(n * n, "C")?,
        rows: n,
        cols: n,
        ld: n,
    };
    let mut pc = be.alloc::<f32>(n * n, "C (cuBLAS)")?;
    let p = GemmParams::<f32>::default();
    let flops = 2.0 * (n as f64).powi(3);
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;

    let handle = CudaBlas::new(Arc::clone(be.stream())).map_err(blas_err)?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let ni = n as i32;
    let mut cublas = || -> Result<()> {
        // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
        // SAFETY: all three buffers hold n*n f32 on this backend's stream.
        unsafe {
            blas::sgemm(
                *handle.handle(),
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                ni,
                ni,
                ni,
                &alpha,
                db.buf.ptr() as *const f32,
                ni,
                da.buf.ptr() as *const f32,
                ni,
                &beta,
                pc.ptr() as *mut f32,
                ni,
            )
        }
        .map_err(blas_err)
    };
    let peer = ctx.time(&mut cublas)?;
    let peer_out = be.download_vec(&pc)?;
    let peer_norm = peer_out
        .iter()
        .map(|&v| (v as f64).powi(2))
        .sum::<f64>()
        .sqrt();

    let mut rows = Vec::new();
    for (tile, label) in [
        (GemmTile::Auto, String::new()),
        (GemmTile::T128x128, " [tile 128x128]".to_string()),
        (GemmTile::T128x256, " [tile 128x256]".to_string()),
        (GemmTile::T128x128K16, " [tile 128x128k16]".to_string()),
    ] {
        be.set_gemm_tile(tile);
        let ours = ctx.time(|| be.gemm_device(&p, &da, &db, &mut dc))?;
        let out = be.download_vec(&dc.buf)?;
        let diff = out
            .iter()
            .zip(&peer_out)
            .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        let h2h = if tile == GemmTile::Auto {
            let mut c = vec![0.0f32; n * n];
            Some(ctx.wall(3, || {
                be.gemm(
                    &p,
                    MatRef::dense(&a, n, n)?,
                    MatRef::dense(&b, n, n)?,
                    MatMut::dense(&mut c, n, n)?,
                )
            })?)
        } else {
            None
        };
        rows.push(Row {
            case: format!("gemm-{n}{label}"),
            ours_ms: ours,
            peer_ms: Some(peer),
            figure: format!("{:.1} vs {:.1} TFLOP/s", tflops(ours), tflops(peer)),
            h2h_ms: h2h,
            check: format!("|C-C_cublas|/|C_cublas| = {:.1e}", diff / peer_norm),
        });
    }
    be.set_gemm_tile(GemmTile::Auto);
    Ok(rows)
}

fn pairs_rows(ctx: &Bench, name: &str, case: &cases::PairsCase) -> Result<Vec<Row>> {
    let be = &ctx.be;
    let (na, k) = (case.a.len(), case.pairs_k);
    let da = be.upload(&case.a)?;
    let db = be.upload(&case.b)?;
    let mut nn = be.alloc::<Neighbor>(na, "nearest out")?;

    // Correctness: nearest of sampled queries by brute force, and the pairs
    // against a host top-k of the device's nearest output.
    be.nearest_device(&da, &db, &mut nn)?;
    let all = be.download_vec(&nn)?;
    let step = (na / 400).max(1);
    let mut bad = 0;
    for i in (0..na).step_by(step) {
        let q = &case.a[i];
        let mut best = (f32::INFINITY, u32::MAX);
        for (j, p) in case.b.iter().enumerate() {
            let d = dist2(q, p);
            if d < best.0 || (d == best.0 && (j as u32) < best.1) {
                best = (d, j as u32);
            }
        }
        if (all[i].d2, all[i].index) != best {
            bad += 1;
        }
    }
    let pairs = be.closest_pairs_device(&da, &db, k)?;
    let mut host: Vec<(u32, u32)> = all
        .iter()
        .enumerate()
        .map(|(i, n)| (n.d2.to_bits(), i as u32))
        .collect();
    host.sort_unstable();
    let pairs_ok = pairs.len() == k.min(na)
        && pairs
            .iter()
            .zip(&host)
            .all(|(p, h)| (p.d2.to_bits(), p.a) == *h && all[p.a as usize].index == p.b);
    let check = format!(
        "nearest: {} of {} sampled exact; pairs {}",
        na.div_ceil(step) - bad,
        na.div_ceil(step),
        if pairs_ok { "ok" } else { "MISMATCH" }
    );

    let mut rows = Vec::new();
    for target in [2.0f32, 1.0, 4.0, 8.0] {
        be.set_cell_target(target);
        let ours = ctx.time(|| be.closest_pairs_device(&da, &db, k).map(|_| ()))?;
        let nearest = ctx.time(|| be.nearest_device(&da, &db, &mut nn))?;
        let h2h = if target == 2.0 {
            Some(ctx.wall(5, || be.closest_pairs(&case.a, &case.b, k).map(|_| ()))?)
        } else {
            None
        };
        rows.push(Row {
            case: format!("{name} closest_pairs({k}) [cell target {target}]"),
            ours_ms: ours,
            peer_ms: None,
            figure: format!("nearest alone {nearest:.3} ms"),
            h2h_ms: h2h,
            check: if target == 2.0 {
                check.clone()
            } else {
                String::new()
            },
        });
    }
    be.set_cell_target(2.0);
    let mut knn = be.alloc::<Neighbor>(na * case.knn_k, "knn out")?;
    let knn_ms = ctx.time(|| be.knn_device(&da, &db, case.knn_k, &mut knn))?;
    rows.push(Row {
        case: format!("{name} knn(k={})", case.knn_k),
        ours_ms: knn_ms,
        peer_ms: None,
        figure: String::new(),
        h2h_ms: None,
        check: String::new(),
    });
    Ok(rows)
}

fn pairs_uniform(ctx: &Bench) -> Result<Vec<Row>> {
    pairs_rows(
        ctx,
        "pairs-1M-400K",
        &cases::pairs_uniform(1_000_000, 400_000, SEED),
    )
}

fn pairs_clustered(ctx: &Bench) -> Result<Vec<Row>> {
    pairs_rows(
        ctx,
        "pairs-clustered",
        &cases::pairs_clustered(1_000_000, 400_000, SEED),
    )
}

type CaseFn = fn(&Bench) -> Result<Vec<Row>>;

const CASES: &[(&str, CaseFn)] = &[
    ("gemm-4096", |c| gemm_case(c, 4096)),
    ("gemm-8192", |c| gemm_case(c, 8192)),
    ("pairs-1M-400K", pairs_uniform),
    ("pairs-clustered", pairs_clustered),
];

fn main() {
    let mut reps = 10usize;
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--reps" {
            reps = args
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(reps)
                .max(1);
        } else {
            filters.push(a);
        }
    }
    let be = match CudaBackend::new(0) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cuda_bench: {e}");
            std::process::exit(2);
        }
    };
    use trident_core::Backend;
    println!(
        "{}  (reps {reps}, median; device times from CUDA events)",
        be.describe()
    );
    let ctx = Bench { be, reps };
    let mut rows = Vec::new();
    let mut failed = false;
    for (name, f) in CASES {
        if !filters.is_empty() && !filters.iter().any(|x| name.contains(x.as_str())) {
            continue;
        }
        let t = Instant::now();
        match f(&ctx) {
            Ok(r) => {
                for row in &r {
                    println!(
                        "  {} : {:.3} ms  {}  {}",
                        row.case, row.ours_ms, row.figure, row.check
                    );
                }
                rows.extend(r);
            }
            Err(e) => {
                println!("  {name}: FAILED: {e}");
                failed = true;
            }
        }
        eprintln!("  ({name} took {:.1} s)", t.elapsed().as_secs_f64());
    }
    println!();
    println!("| case | ours (ms) | peer (ms) | peer/ours | host-to-host (ms) | figure | check |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let peer = r.peer_ms.map_or("-".into(), |p| format!("{p:.3}"));
        let ratio = r
            .peer_ms
            .map_or("-".into(), |p| format!("{:.2}", p / r.ours_ms));
        let h2h = r.h2h_ms.map_or("-".into(), |h| format!("{h:.2}"));
        println!(
            "| {} | {:.3} | {peer} | {ratio} | {h2h} | {} | {} |",
            r.case, r.ours_ms, r.figure, r.check
        );
    }
    if failed {
        std::process::exit(1);
    }
}
