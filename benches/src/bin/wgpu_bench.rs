//! Benchmarks of the wgpu backend on the benchmark cases (the same inputs and seed
//! as `cuda_bench`, so the two tables of one GPU run sit side by side).
//!
//! Usage: `wgpu_bench [--reps N] [FILTER...]`: runs the cases whose name
//! contains one of the filters (all when none). Every pipeline is built first
//! (`warm_up`), then each timed call runs untimed for 1 s. Device-resident
//! times are wall-clock times of the call plus `synchronize`, median of N,
//! and beside them, where the adapter has timestamp queries, the GPU clock's
//! time of the call (`gpu`, as the CUDA bench's events; `TRIDENT_WGPU_PROFILE`
//! adds each kernel's GPU time); host-to-host times go through the host
//! traits (upload, compute, download), median of 3, beside their bound: the
//! bytes each way at the rates of the backend's own 256 MiB copies, measured
//! first, plus the device-resident time. Each case prints a result check so
//! a fast wrong shader shows up here.

use std::time::Instant;

use trident_core::{
    Backend, CsrMatrix, DenseGemm, DenseGemmDevice, DeviceMat, DeviceMemory, Error, GemmParams,
    MatMut, MatRef, NearestPairs, NearestPairsDevice, Neighbor, Result, SparseCoder,
    SparseCoderDevice, SparseGemm, SparseGemmDevice, dist2,
};
use trident_testkit::cases;
use trident_wgpu::{GemmTile, Tuning, WgpuBackend};

const SEED: u64 = 0x7121_d3a7;

struct Bench {
    be: WgpuBackend,
    reps: usize,
    /// The backend's own host -> device and device -> host copy rates
    /// (bytes/s) on 256 MiB: the transfer part of each case's bound.
    up_bw: f64,
    down_bw: f64,
}

/// Upload and download rates of 256 MiB through the backend's host copies
/// (staging buffers, all threads), median of 5 after 2 untimed.
fn bandwidth(be: &WgpuBackend) -> Result<(f64, f64)> {
    let n = 256usize << 20;
    let host: Vec<u32> = (0..n as u32 / 4).collect();
    let mut back = vec![0u32; n / 4];
    let buf = be.alloc_uninit::<u32>(n / 4, "bandwidth")?;
    let rate = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let mut t = Vec::new();
        for r in 0..7 {
            let s = Instant::now();
            f()?;
            be.synchronize()?;
            if r >= 2 {
                t.push(s.elapsed().as_secs_f64());
            }
        }
        Ok(n as f64 / median(t))
    };
    let up = rate(&mut || be.upload_into(&host, &buf))?;
    let down = rate(&mut || be.download_into(&buf, &mut back))?;
    if back != host {
        return Err(Error::Backend(
            "bandwidth: the copy came back changed".into(),
        ));
    }
    Ok((up, down))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

impl Bench {
    /// The host-to-host cell: `ms` with its bound (bytes up and down at the
    /// measured rates plus the device-resident time) and the ratio.
    fn h2h(&self, ms: f64, up: usize, down: usize, device_ms: f64) -> String {
        let bound = up as f64 / self.up_bw * 1e3 + down as f64 / self.down_bw * 1e3 + device_ms;
        format!("{ms:.1} (bound {bound:.1}: {:.2}x)", ms / bound)
    }

    /// Median time in ms of `f` followed by a device synchronize, after
    /// untimed calls for at least 1 s (2 at least): an idle H100 sits at
    /// 345 MHz, and the first calls of a case ran up to 5x slower on the GPU
    /// clock than later ones while it ramped up; after 0.3 s of calls the
    /// first case of a process still ran at half speed in some runs
    /// (measured on the H100).
    fn time(&self, n: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
        let warm = Instant::now();
        let mut calls = 0;
        while calls < 2 || warm.elapsed().as_secs_f64() < 1.0 {
            f()?;
            self.be.synchronize()?;
            calls += 1;
        }
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            let s = Instant::now();
            f()?;
            self.be.synchronize()?;
            t.push(s.elapsed().as_secs_f64() * 1e3);
        }
        Ok(median(t))
    }

    /// `ms` with, where the adapter has timestamp queries, the median GPU
    /// time of `f` over `n` calls beside it (stamps around each call, as the
    /// CUDA bench's events): "7.630 (gpu 3.204)". With `TRIDENT_WGPU_PROFILE`
    /// set, also prints each kernel's GPU time per call (3 calls) to stdout.
    fn with_gpu(
        &self,
        what: &str,
        ms: f64,
        n: usize,
        mut f: impl FnMut() -> Result<()>,
    ) -> Result<String> {
        let Some(timer) = self.be.gpu_timer() else {
            return Ok(format!("{ms:.3}"));
        };
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            t.push(timer.time(&self.be, &mut f)?.1);
        }
        if std::env::var_os("TRIDENT_WGPU_PROFILE").is_some() && self.be.set_kernel_profile(true)? {
            for _ in 0..3 {
                f()?;
            }
            let (kernels, dropped) = self.be.take_kernel_profile()?;
            self.be.set_kernel_profile(false)?;
            let total: f64 = kernels.iter().map(|k| k.ms).sum::<f64>() / 3.0;
            println!(
                "  kernel profile of {what} (GPU ms per call, {dropped} untimed dispatches): total {total:.3}"
            );
            for k in &kernels {
                println!(
                    "    {:24} {:8.3} ms  ({} dispatches per call; GPU idle before them {:.3} ms)",
                    k.entry,
                    k.ms / 3.0,
                    k.dispatches / 3,
                    k.idle_ms / 3.0
                );
            }
        }
        Ok(format!("{ms:.3} (gpu {:.3})", median(t)))
    }
}

fn gemm_case(ctx: &Bench, n: usize) -> Result<Vec<String>> {
    let be = &ctx.be;
    let a: Vec<f32> = cases::uniform_matrix(n, n, SEED ^ 1);
    let b: Vec<f32> = cases::uniform_matrix(n, n, SEED ^ 2);
    let mat = |buf| DeviceMat {
        buf,
        rows: n,
        cols: n,
        ld: n,
    };
    let (da, db) = (mat(be.upload(&a)?), mat(be.upload(&b)?));
    let mut dc = mat(be.alloc_zeroed::<f32>(n * n)?);
    let p = GemmParams::<f32>::default();
    let mut rows = Vec::new();
    // The adapter's default tiling first, then every other one it can hold.
    for tile in [
        GemmTile::Auto,
        GemmTile::K16,
        GemmTile::K8,
        GemmTile::K8Single,
    ] {
        let tuned = be.tuned(Tuning {
            gemm_tile: tile,
            ..Tuning::default()
        });
        let be = &tuned;
        let Ok(used) = be.gemm_tile() else {
            continue;
        };
        let ms = ctx.time(ctx.reps, || be.gemm_device(&p, &da, &db, &mut dc))?;
        let dev = ctx.with_gpu(&format!("gemm-{n} {tile:?}"), ms, ctx.reps, || {
            be.gemm_device(&p, &da, &db, &mut dc)
        })?;
        // Back-to-back calls with one synchronize: the GPU time per call
        // without the submit-and-wait latency of each.
        let queued = ctx.time(3, || {
            for _ in 0..10 {
                be.gemm_device(&p, &da, &db, &mut dc)?;
            }
            Ok(())
        })? / 10.0;
        let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
        // Check a few entries against f64 dot products.
        let c = be.download_vec(&dc.buf)?;
        let mut worst = 0.0f64;
        for s in 0..64 {
            let (i, j) = ((s * 7919) % n, (s * 104_729) % n);
            let exact: f64 = (0..n)
                .map(|l| a[i * n + l] as f64 * b[l * n + j] as f64)
                .sum();
            let norm: f64 = (0..n)
                .map(|l| (a[i * n + l] as f64 * b[l * n + j] as f64).abs())
                .sum();
            worst = worst.max((c[i * n + j] as f64 - exact).abs() / norm.max(1e-30));
        }
        let h2h = if tile == GemmTile::Auto {
            let mut ch = vec![0.0f32; n * n];
            let t = ctx.time(3, || {
                be.gemm(
                    &p,
                    MatRef::new(&a, n, n, n)?,
                    MatRef::new(&b, n, n, n)?,
                    MatMut::new(&mut ch, n, n, n)?,
                )
            })?;
            ctx.h2h(t, 8 * n * n, 4 * n * n, ms)
        } else {
            String::new()
        };
        let label = if tile == GemmTile::Auto {
            format!(" [auto = {used:?}]")
        } else {
            format!(" [{used:?}]")
        };
        rows.push(format!(
            "| gemm-{n}{label} | {dev} | {h2h} | {tflops:.2} TFLOP/s; queued x10: {queued:.3} ms/call | max rel err (64 sampled, vs |A||B|) {worst:.1e} |"
        ));
    }
    Ok(rows)
}

fn spgemm_case(ctx: &Bench, name: &str) -> Result<Vec<String>> {
    let be = &ctx.be;
    let case = cases::find_case(name)
        .ok_or_else(|| Error::arg("case", format!("{name} is not a catalog case")))?;
    let input = case.input(SEED);
    let Some(c) = input.downcast_ref::<cases::SpgemmCase<f32>>() else {
        return Err(Error::arg(
            "case",
            format!("{name} is not an f32 SpGEMM case"),
        ));
    };
    let (a, b) = (&c.a, &c.b);
    let products = a.products_with(b);
    let (da, db) = (be.upload_csr(a)?, be.upload_csr(b)?);
    let ms = ctx.time(ctx.reps, || be.spgemm_device(&da, &db).map(|_| ()))?;
    let dev = ctx.with_gpu(name, ms, ctx.reps, || {
        be.spgemm_device(&da, &db).map(|_| ())
    })?;
    let gflops = 2.0 * products as f64 / (ms * 1e-3) / 1e9;
    let mine = be.download_csr(&be.spgemm_device(&da, &db)?)?;
    let again = be.download_csr(&be.spgemm_device(&da, &db)?)?;
    let bits = |m: &CsrMatrix<f32>| m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let det = mine == again && bits(&mine) == bits(&again);
    let (rows_checked, bad) = spgemm_sampled_check(a, b, &mine);
    let h2h = ctx.time(3, || be.spgemm(a, b).map(|_| ()))?;
    // Offsets travel as u64, indices as u32, values as f32.
    let csr = |m: &CsrMatrix<f32>| 8 * (m.rows() + 1) + 8 * m.nnz();
    let h2h = ctx.h2h(h2h, csr(a) + csr(b), csr(&mine), ms);
    Ok(vec![format!(
        "| {name} | {dev} | {h2h} | {gflops:.2} GFLOP/s | nnz(C) {}, deterministic {det}, \
         {rows_checked} sampled rows vs f64 host product: {bad} wrong |",
        mine.nnz()
    )])
}

/// Checks about 2000 rows of `C` (all rows of small cases) against an f64
/// host product: same columns, values within `SPGEMM_F32 * sum |a| |b|`
/// (docs/tolerances.md). Returns (rows checked, rows wrong).
fn spgemm_sampled_check(
    a: &CsrMatrix<f32>,
    b: &CsrMatrix<f32>,
    c: &CsrMatrix<f32>,
) -> (usize, usize) {
    let step = (a.rows() / 2000).max(1);
    let (mut checked, mut bad) = (0, 0);
    let mut prods: Vec<(u32, f64, f64)> = Vec::new();
    for i in (0..a.rows()).step_by(step) {
        prods.clear();
        for p in a.offsets()[i]..a.offsets()[i + 1] {
            let (k, av) = (a.indices()[p] as usize, a.values()[p] as f64);
            for q in b.offsets()[k]..b.offsets()[k + 1] {
                let x = av * b.values()[q] as f64;
                prods.push((b.indices()[q], x, x.abs()));
            }
        }
        prods.sort_by_key(|t| t.0);
        let mut want: Vec<(u32, f64, f64)> = Vec::new();
        for &(j, x, m) in &prods {
            match want.last_mut() {
                Some(w) if w.0 == j => {
                    w.1 += x;
                    w.2 += m;
                }
                _ => want.push((j, x, m)),
            }
        }
        let (s, e) = (c.offsets()[i], c.offsets()[i + 1]);
        let ok = e - s == want.len()
            && want.iter().zip(s..e).all(|(&(j, x, m), p)| {
                c.indices()[p] == j
                    && (c.values()[p] as f64 - x).abs() <= trident_core::tol::SPGEMM_F32 * m
            });
        checked += 1;
        bad += usize::from(!ok);
    }
    (checked, bad)
}

fn pairs_case(ctx: &Bench, name: &str, case: &cases::PairsCase) -> Result<Vec<String>> {
    let be = &ctx.be;
    let (na, k) = (case.a.len(), case.pairs_k);
    let da = be.upload(&case.a)?;
    let db = be.upload(&case.b)?;
    let mut nn = be.alloc_zeroed::<Neighbor>(na)?;
    be.nearest_device(&da, &db, &mut nn)?;
    let all = be.download_vec(&nn)?;
    let step = (na / 200).max(1);
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
        if all[i].index != best.1 {
            bad += 1;
        }
    }
    let reps = ctx.reps.min(5);
    let ms = ctx.time(reps, || be.closest_pairs_device(&da, &db, k).map(|_| ()))?;
    let dev = ctx.with_gpu(name, ms, reps, || {
        be.closest_pairs_device(&da, &db, k).map(|_| ())
    })?;
    let nearest = ctx.time(reps, || be.nearest_device(&da, &db, &mut nn))?;
    let h2h = ctx.time(3, || be.closest_pairs(&case.a, &case.b, k).map(|_| ()))?;
    let h2h = ctx.h2h(h2h, 12 * (na + case.b.len()), 12 * k, ms);
    Ok(vec![format!(
        "| {name} closest_pairs({k}) | {dev} | {h2h} | nearest alone {nearest:.3} ms | nearest: {} of {} sampled exact |",
        na.div_ceil(step) - bad,
        na.div_ceil(step)
    )])
}

/// Batch-OMP on a benchmark case: device-resident (signals already on the
/// device, codes left there) and host-to-host (the `SparseCoder` call).
fn omp_case(ctx: &Bench, name: &str) -> Result<Vec<String>> {
    let be = &ctx.be;
    let case = cases::spec_cases()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| Error::arg("case", format!("{name} is not a benchmark case")))?;
    let input = case.input(SEED);
    let Some(c) = input.downcast_ref::<cases::OmpCase<f32>>() else {
        return Err(Error::arg("case", format!("{name} is not an f32 OMP case")));
    };
    let n = c.dict.n();
    let x = DeviceMat {
        buf: be.upload(&c.signals)?,
        rows: c.count,
        cols: n,
        ld: n,
    };
    let ms = ctx.time(ctx.reps, || {
        be.encode_device(&c.dict, &x, c.rule).map(|_| ())
    })?;
    let dev_ms = ctx.with_gpu(name, ms, ctx.reps, || {
        be.encode_device(&c.dict, &x, c.rule).map(|_| ())
    })?;
    let dev = be.download_codes(&be.encode_device(&c.dict, &x, c.rule)?)?;
    let again = be.download_codes(&be.encode_device(&c.dict, &x, c.rule)?)?;
    let h2h = ctx.time(3, || {
        be.encode(&c.dict, c.signals_ref(), c.rule).map(|_| ())
    })?;
    let host = be.encode(&c.dict, c.signals_ref(), c.rule)?;
    let per_s = |ms: f64| c.count as f64 / (ms * 1e-3) / 1e6;
    // Signals up; atoms and coefficients (4 bytes each), a count and a
    // residual per signal down.
    let cell = ctx.h2h(h2h, 4 * c.count * n, 8 * host.atoms.len() + 8 * c.count, ms);
    Ok(vec![format!(
        "| {name} ({} signals) | {dev_ms} = {:.2}M signals/s | {cell} = {:.2}M signals/s | {} atoms | deterministic {}, host call equal {} |",
        c.count,
        per_s(ms),
        per_s(h2h),
        dev.atoms.len(),
        dev == again,
        dev == host
    )])
}

type Case = (&'static str, fn(&Bench) -> Result<Vec<String>>);

const CASES: &[Case] = &[
    ("gemm-1024", |c| gemm_case(c, 1024)),
    ("gemm-4096", |c| gemm_case(c, 4096)),
    ("gemm-8192", |c| gemm_case(c, 8192)),
    ("spgemm-poisson2d-2048", |c| {
        spgemm_case(c, "spgemm-poisson2d-2048")
    }),
    ("spgemm-rmat-16-8", |c| spgemm_case(c, "spgemm-rmat-16-8")),
    ("spgemm-uniform-1M-8", |c| {
        spgemm_case(c, "spgemm-uniform-1M-8")
    }),
    // Small catalog cases (llvmpipe checks).
    ("small-spgemm-rmat-8-8", |c| {
        spgemm_case(c, "spgemm-rmat-8-8")
    }),
    ("small-spgemm-poisson2d-16", |c| {
        spgemm_case(c, "spgemm-poisson2d-16")
    }),
    ("small-spgemm-power-law-row", |c| {
        spgemm_case(c, "spgemm-edge-power-law-row")
    }),
    ("small-spgemm-outer-product", |c| {
        spgemm_case(c, "spgemm-edge-outer-product")
    }),
    ("omp-64x256-k16", |c| omp_case(c, "omp-64x256-k16")),
    ("omp-256x1024-k32", |c| omp_case(c, "omp-256x1024-k32")),
    ("pairs-20K-8K", |c| {
        pairs_case(
            c,
            "pairs-20K-8K",
            &cases::pairs_uniform(20_000, 8_000, SEED),
        )
    }),
    ("pairs-1M-400K", |c| {
        pairs_case(
            c,
            "pairs-1M-400K",
            &cases::pairs_uniform(1_000_000, 400_000, SEED),
        )
    }),
    ("pairs-clustered", |c| {
        pairs_case(
            c,
            "pairs-clustered",
            &cases::pairs_clustered(1_000_000, 400_000, SEED),
        )
    }),
];

fn main() {
    trident_benches::log_from_env();
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
    let be = match WgpuBackend::new() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("wgpu_bench: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{}  (reps {reps}, median; wall clock + synchronize, and the GPU clock (timestamps) where shown)",
        be.describe()
    );
    let t = Instant::now();
    if let Err(e) = be.warm_up() {
        eprintln!("wgpu_bench: warm_up: {e}");
        std::process::exit(1);
    }
    println!(
        "warm_up (all pipelines): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let (up_bw, down_bw) = match bandwidth(&be) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("wgpu_bench: bandwidth: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "host copies through the backend (256 MiB): up {:.1} GB/s, down {:.1} GB/s; \
         bound = bytes up and down at these rates + device-resident time",
        up_bw / 1e9,
        down_bw / 1e9
    );
    let ctx = Bench {
        be,
        reps,
        up_bw,
        down_bw,
    };
    println!("| case | device-resident (ms) | host-to-host (ms; bound, ratio) | figure | check |");
    println!("| --- | --- | --- | --- | --- |");
    let mut failed = false;
    for (name, f) in CASES {
        if !filters.is_empty() && !filters.iter().any(|x| name.contains(x.as_str())) {
            continue;
        }
        let t = Instant::now();
        match f(&ctx) {
            Ok(rows) => rows.iter().for_each(|r| println!("{r}")),
            Err(e) => {
                println!("| {name} | FAILED: {e} | | | |");
                failed = true;
            }
        }
        eprintln!("  ({name} took {:.1} s)", t.elapsed().as_secs_f64());
    }
    if failed {
        std::process::exit(1);
    }
}
