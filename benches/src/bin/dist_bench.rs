//! Scaling of the sharded calls (`trident::dist`): the contract's benchmark
//! cases, each rank on its own device, timed as the slowest rank sees them
//! (a barrier, the call, the maximum over ranks). Run the same binary on 1,
//! 2 and 4 ranks; `-n 1` is one device alone (the same calls, no peers), so
//! the ratios of the medians are the speed-ups.
//!
//! ```text
//! mpirun -n 2 dist_bench [--backend cuda|rayon] [--transport auto|mpi|nccl] [--reps N] [--json FILE] [--resident] CASE...
//! dist_bench --local-gpus 2 [...] CASE...     # one process, a thread per GPU
//! ```
//!
//! Cases: `pairs-1M-400K`, `pairs-clustered` (A cut by rows, B replicated:
//! `nearest` and `closest_pairs(100)`; `nearest` also with B cut and passed
//! round the ring), `gemm-4096`, `gemm-8192` (rows of A and C cut, B
//! replicated; B cut by columns, passed round the ring; and A, B and C cut
//! into blocks over the squarest process grid, SUMMA), `spgemm-poisson2d-2048`, `spgemm-rmat-16-8`,
//! `spgemm-uniform-1M-8` (A cut by products per row, B replicated; and B
//! cut by columns, passed round the ring; and sparse SUMMA over a grid),
//! `omp-64x256-k16`, `omp-256x1024-k32` (signals cut), `cut-512`,
//! `cut-2048`, `cut3d-256` (grid layers cut into slabs, region discharge,
//! the exact finisher on every rank). Inputs are host
//! arrays, so every time includes each rank's uploads and downloads.
//!
//! `--resident` (CUDA): the strong-scaling cases at their full sizes, each
//! rank's shard uploaded once and the `*_resident` calls timed, so only the
//! ranks' exchanges travel: `omp-16M` (the omp-64x256-k16 signals, 1M
//! distinct ones repeated), `pairs-100M-40M` (closest 100 pairs, uniform,
//! generated in 1M-point chunks so a rank builds only its own), `gemm-32768`
//! (rows of A and C, B replicated), `gram-200K-4096` (C = A A^T of 200,000
//! embeddings of 4,096 dims: 160 GB of C, more than one GPU holds; one rank
//! alone computes it in four row blocks), `spgemm-uniform-16M-8` and
//! `spgemm-rmat-20-8` (A's rows cut by products, B replicated).
//! `pairs-100M-40M` also times B's index built once and the queries against
//! it (`closest_pairs_indexed`). `cut3d-512`: the 512^3 segmentation volume's
//! planes cut into one slab per GPU (`grid_cut_resident`; rank 0 also
//! times the plain whole-grid `grid_cut_device` alone, T1), checked against
//! the plain solve on every rank.

use std::time::Instant;

use trident::dist::{
    Cluster, ClusterOptions, CommExt, Grid2d, ReduceOp, Sharded, Transport, even_split,
};
use trident::{MatMut, MatRef, Neighbor, Op, Primitives, Result};
use trident_benches::timing::median;
use trident_testkit::cases::{self, Input};
use trident_testkit::dense_gemm::generate::GemmCase;
use trident_testkit::nearest_pairs::generate::PairsCase;
use trident_testkit::sparse_coder::generate::OmpCase;
use trident_testkit::sparse_gemm::generate::SpgemmCase;

struct Args {
    backend: Option<String>,
    transport: Transport,
    reps: usize,
    json: Option<String>,
    resident: bool,
    local_gpus: Option<usize>,
    cases: Vec<String>,
}

fn args() -> std::result::Result<Args, String> {
    let mut a = Args {
        backend: None,
        transport: Transport::Auto,
        reps: 5,
        json: None,
        resident: false,
        local_gpus: None,
        cases: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match x.as_str() {
            "--backend" => a.backend = Some(val("--backend")?),
            "--transport" => {
                a.transport = match val("--transport")?.as_str() {
                    "auto" => Transport::Auto,
                    "mpi" => Transport::Mpi,
                    "nccl" => Transport::Nccl,
                    t => return Err(format!("--transport {t:?}: auto, mpi or nccl")),
                }
            }
            "--reps" => a.reps = val("--reps")?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--json" => a.json = Some(val("--json")?),
            "--resident" => a.resident = true,
            "--local-gpus" => {
                a.local_gpus = Some(
                    val("--local-gpus")?
                        .parse()
                        .map_err(|e| format!("--local-gpus: {e}"))?,
                )
            }
            c if !c.starts_with('-') => a.cases.push(c.to_string()),
            f => return Err(format!("unknown flag {f}")),
        }
    }
    if a.cases.is_empty() {
        return Err("name at least one case".into());
    }
    Ok(a)
}

/// Median over `reps` calls (after one warm-up) of the slowest rank's time.
fn time(s: &Sharded<'_>, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let comm = s.cluster().comm();
    let mut v = Vec::with_capacity(reps);
    for rep in 0..=reps {
        comm.barrier()?;
        let t = Instant::now();
        f()?;
        let mut secs = [t.elapsed().as_secs_f64()];
        comm.all_reduce_f64(&mut secs, ReduceOp::Max)?;
        if rep > 0 {
            v.push(secs[0]);
        }
    }
    Ok(median(v))
}

/// The timed calls of one case: `(label, seconds)`.
fn run_case(s: &Sharded<'_>, input: &Input, reps: usize) -> Result<Vec<(String, f64)>> {
    let (rank, size) = (s.cluster().rank(), s.cluster().size());
    let mut out = Vec::new();
    if let Some(c) = input.downcast_ref::<PairsCase<f32>>() {
        let rows = even_split(c.a.len(), size, rank);
        let a = &c.a[rows.clone()];
        let mut nn = vec![Neighbor::default(); a.len()];
        out.push((
            "nearest".into(),
            time(s, reps, || s.nearest(a, &c.b, &mut nn))?,
        ));
        let b_part = &c.b[even_split(c.b.len(), size, rank)];
        out.push((
            "nearest, B ring".into(),
            time(s, reps, || s.nearest_ring(a, b_part, &mut nn))?,
        ));
        out.push((
            "closest_pairs 100".into(),
            time(s, reps, || s.closest_pairs(a, &c.b, 100).map(drop))?,
        ));
    } else if let Some(c) = input.downcast_ref::<GemmCase<f32>>() {
        let rows = even_split(c.m, size, rank);
        let (lda, ldc) = (c.a_shape.ld, c.c_shape.ld);
        let a = MatRef::new(&c.a[rows.start * lda..], rows.len(), c.k, lda)?;
        let mut block = c.c[rows.start * ldc..(rows.end * ldc).min(c.c.len())].to_vec();
        out.push((
            "gemm f32".into(),
            time(s, reps, || {
                s.gemm(
                    &c.params,
                    a,
                    c.b_ref(),
                    MatMut::new(&mut block, rows.len(), c.n, ldc)?,
                )
            })?,
        ));
        // B cut by columns too and passed round the ring (op(B) = B here).
        let cols = even_split(c.n, size, rank);
        let ldb = c.b_shape.ld;
        let b_cols: Vec<f32> = (0..c.k)
            .flat_map(|r| c.b[r * ldb + cols.start..r * ldb + cols.end].to_vec())
            .collect();
        let b_part = MatRef::dense(&b_cols, c.k, cols.len())?;
        out.push((
            "gemm f32, B ring".into(),
            time(s, reps, || {
                s.gemm_ring(
                    &c.params,
                    a,
                    b_part,
                    MatMut::new(&mut block, rows.len(), c.n, ldc)?,
                )
            })?,
        ));
        // SUMMA: A, B and C cut into blocks over the squarest grid (it
        // takes the matrices as stored).
        if (c.params.op_a, c.params.op_b) == (Op::N, Op::N) {
            let grid = Grid2d::square(s.cluster().comm())?;
            let ((rows, kc), (kr, cols)) = (grid.block(c.m, c.k), grid.block(c.k, c.n));
            let cut = |x: &[f32],
                       ld: usize,
                       rows: std::ops::Range<usize>,
                       cols: &std::ops::Range<usize>| {
                rows.flat_map(|r| x[r * ld + cols.start..r * ld + cols.end].to_vec())
                    .collect::<Vec<f32>>()
            };
            let a_blk = cut(&c.a, lda, rows.clone(), &kc);
            let b_blk = cut(&c.b, ldb, kr.clone(), &cols);
            let mut c_blk = cut(&c.c, ldc, rows.clone(), &cols);
            let a_ref = MatRef::dense(&a_blk, rows.len(), kc.len())?;
            let b_ref = MatRef::dense(&b_blk, kr.len(), cols.len())?;
            let (pr, pc) = grid.shape();
            out.push((
                format!("gemm f32, SUMMA {pr}x{pc}"),
                time(s, reps, || {
                    s.gemm_summa(
                        &grid,
                        &c.params,
                        (c.m, c.n, c.k),
                        a_ref,
                        b_ref,
                        MatMut::dense(&mut c_blk, rows.len(), cols.len())?,
                    )
                })?,
            ));
        }
    } else if let Some(c) = input.downcast_ref::<SpgemmCase<f32>>() {
        out.push((
            "spgemm f32".into(),
            time(s, reps, || s.spgemm_balanced(&c.a, &c.b).map(drop))?,
        ));
        // B cut by columns too and passed round the ring; A's rows even.
        let a_rows = trident::dist::row_block(&c.a, even_split(c.a.rows(), size, rank))?;
        let b_cols = trident::dist::column_block(&c.b, even_split(c.b.cols(), size, rank))?;
        out.push((
            "spgemm f32, B ring".into(),
            time(s, reps, || s.spgemm_ring(&a_rows, &b_cols).map(drop))?,
        ));
        // Sparse SUMMA: A and B cut into blocks over the squarest grid.
        let grid = Grid2d::square(s.cluster().comm())?;
        let (m, k, n) = (c.a.rows(), c.a.cols(), c.b.cols());
        let ((rows, kc), (kr, cols)) = (grid.block(m, k), grid.block(k, n));
        let block = |x: &trident::CsrMatrix<f32>, r, cl| {
            trident::dist::row_block(x, r).and_then(|x| trident::dist::column_block(&x, cl))
        };
        let (a_blk, b_blk) = (block(&c.a, rows, kc)?, block(&c.b, kr, cols)?);
        let (pr, pc) = grid.shape();
        out.push((
            format!("spgemm f32, SUMMA {pr}x{pc}"),
            time(s, reps, || {
                s.spgemm_summa(&grid, (m, n, k), &a_blk, &b_blk).map(drop)
            })?,
        ));
    } else if let Some(c) = input.downcast_ref::<OmpCase<f32>>() {
        let n = c.dict.n();
        let rows = even_split(c.count, size, rank);
        let x = MatRef::dense(&c.signals[rows.start * n..rows.end * n], rows.len(), n)?;
        out.push((
            "encode f32".into(),
            time(s, reps, || s.encode(&c.dict, x, c.rule).map(drop))?,
        ));
    } else if let Some(g) = input.downcast_ref::<trident::GridGraph>() {
        out.push((
            "grid_cut (rank 0, broadcast)".into(),
            time(s, reps, || s.grid_cut(g).map(drop))?,
        ));
        out.push((
            "grid_cut_slabs".into(),
            time(s, reps, || s.grid_cut_slabs(g, None).map(drop))?,
        ));
    } else {
        return Err(trident::Error::Unsupported(format!(
            "{}: no sharded timing for this case",
            input.describe()
        )));
    }
    Ok(out)
}

#[cfg(not(feature = "cuda"))]
fn resident_case(_: &Sharded<'_>, _: usize, _: &str, _: usize) -> Result<Vec<(String, f64)>> {
    Err(trident::Error::Unsupported(
        "--resident needs a build with the `cuda` feature".into(),
    ))
}

/// `--resident`: the case `name` with each rank's shard in its GPU's memory.
#[cfg(feature = "cuda")]
fn resident_case(
    s: &Sharded<'_>,
    device: usize,
    name: &str,
    reps: usize,
) -> Result<Vec<(String, f64)>> {
    use rayon::prelude::*;
    use trident_core::{DeviceMat, DeviceMemory, GemmParams, NearestIndexDevice, SparseGemmDevice};
    use trident_testkit::nearest_pairs::generate::uniform_points;
    let dev = trident_cuda::CudaBackend::new(device)?;
    let (rank, size) = (s.cluster().rank(), s.cluster().size());
    let seed = trident_testkit::DEFAULT_SEED;
    // Values in [-1, 1) from a hash of the index: the same matrix on any
    // number of ranks, filled in parallel.
    let fill = |start: usize, len: usize, salt: u64| -> Vec<f32> {
        (start..start + len)
            .into_par_iter()
            .map(|i| {
                let mut x = (i as u64 ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                x ^= x >> 31;
                x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                x ^= x >> 29;
                (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    };
    // Each timed call ends with the device idle (the calls queue their work
    // on the backend's stream).
    let mut out = Vec::new();
    match name {
        "omp-16M" => {
            const DISTINCT: usize = 1 << 20;
            let base = trident_testkit::sparse_coder::generate::omp_dct::<f32>(DISTINCT, seed);
            let n = base.dict.n();
            let rows = even_split(16 << 20, size, rank);
            let mut x = Vec::with_capacity(rows.len() * n);
            for i in rows.clone() {
                x.extend_from_slice(base.signal(i % DISTINCT));
            }
            let signals = DeviceMat {
                buf: dev.upload(&x)?,
                rows: rows.len(),
                cols: n,
                ld: n,
            };
            drop(x);
            out.push((
                "encode_resident f32".into(),
                time(s, reps, || {
                    s.encode_resident(&dev, &base.dict, &signals, base.rule)?;
                    dev.synchronize()
                })?,
            ));
        }
        "pairs-100M-40M" => {
            const CHUNK: usize = 1 << 20;
            let chunks = |range: std::ops::Range<usize>, salt: u64| -> Vec<trident::Point> {
                range
                    .into_par_iter()
                    .flat_map_iter(|c| uniform_points(CHUNK, seed ^ salt ^ (c as u64) << 8))
                    .collect()
            };
            let a = dev.upload(&chunks(even_split(100, size, rank), 0xA))?;
            let b = dev.upload(&chunks(0..40, 0xB))?;
            out.push((
                "closest_pairs_resident 100".into(),
                time(s, reps, || {
                    s.closest_pairs_resident(&dev, &a, &b, 100).map(drop)
                })?,
            ));
            // B's index built once and kept: the build alone, then the
            // queries against it.
            out.push((
                "index_points (B)".into(),
                time(s, reps, || {
                    drop(dev.index_points(&b)?);
                    dev.synchronize()
                })?,
            ));
            let index = dev.index_points(&b)?;
            out.push((
                "closest_pairs_indexed 100".into(),
                time(s, reps, || {
                    s.closest_pairs_indexed(&dev, &a, &index, 100).map(drop)
                })?,
            ));
        }
        "gemm-32768" => {
            const N: usize = 32768;
            let rows = even_split(N, size, rank);
            let mat = |host: Vec<f32>, rows: usize| -> Result<DeviceMat<_>> {
                Ok(DeviceMat {
                    buf: dev.upload(&host)?,
                    rows,
                    cols: N,
                    ld: N,
                })
            };
            let a = mat(fill(rows.start * N, rows.len() * N, 1), rows.len())?;
            let b = mat(fill(0, N * N, 2), N)?;
            let mut c = DeviceMat {
                buf: dev.alloc_zeroed::<f32>(rows.len() * N)?,
                rows: rows.len(),
                cols: N,
                ld: N,
            };
            let p = GemmParams::<f32>::default();
            out.push((
                "gemm_resident f32".into(),
                time(s, reps, || {
                    s.gemm_resident(&dev, &p, &a, &b, &mut c)?;
                    dev.synchronize()
                })?,
            ));
        }
        "gram-200K-4096" => {
            // C = A A^T for 200,000 embeddings of 4,096 dims: C alone is
            // 160 GB in f32, more than one GPU holds. Each rank keeps its rows
            // of A and C and all of A as B (op(B) = A^T); one rank alone
            // computes its C in four row blocks, one after another, each
            // overwriting the last.
            const M: usize = 200_000;
            const K: usize = 4_096;
            let rows = even_split(M, size, rank);
            let pieces = if size == 1 { 4 } else { 1 };
            let block = rows.len().div_ceil(pieces);
            let full = fill(0, M * K, 3);
            let b = DeviceMat {
                buf: dev.upload(&full)?,
                rows: M,
                cols: K,
                ld: K,
            };
            let a: Vec<DeviceMat<_>> = (0..pieces)
                .map(|p| {
                    let r = rows.start + p * block..(rows.start + (p + 1) * block).min(rows.end);
                    Ok(DeviceMat {
                        buf: dev.upload(&full[r.start * K..r.end * K])?,
                        rows: r.len(),
                        cols: K,
                        ld: K,
                    })
                })
                .collect::<Result<_>>()?;
            let mut c = DeviceMat {
                buf: dev.alloc_zeroed::<f32>(block * M)?,
                rows: block,
                cols: M,
                ld: M,
            };
            let p = GemmParams::<f32> {
                op_b: trident::Op::T,
                ..GemmParams::default()
            };
            out.push((
                format!(
                    "gemm_resident f32 (C {} GB in all)",
                    M * M * 4 / 1_000_000_000
                ),
                time(s, reps, || {
                    for a in &a {
                        c.rows = a.rows;
                        s.gemm_resident(&dev, &p, a, &b, &mut c)?;
                    }
                    dev.synchronize()
                })?,
            ));
            // The last block's first row against f64 dot products, within
            // the worst-case bound of any summation order, k eps sum |a b|.
            let last = a.last().expect("one block at least");
            let r0 = rows.start + (pieces - 1) * block;
            let mut row = vec![0f32; M];
            dev.download_into(&c.buf, &mut row)?;
            let x = &full[r0 * K..(r0 + 1) * K];
            let eps = f64::from(f32::EPSILON) / 2.0;
            let bad = (0..M)
                .into_par_iter()
                .filter(|&j| {
                    let y = &full[j * K..(j + 1) * K];
                    let (dot, mag) = x.iter().zip(y).fold((0f64, 0f64), |(d, m), (&u, &v)| {
                        let t = f64::from(u) * f64::from(v);
                        (d + t, m + t.abs())
                    });
                    (f64::from(row[j]) - dot).abs() > K as f64 * eps * mag * 1.01
                })
                .count();
            if bad > 0 || last.rows == 0 {
                return Err(trident::Error::Backend(
                    format!("gram: {bad} of row {r0}'s {M} entries outside the bound").into(),
                ));
            }
        }
        "spgemm-uniform-16M-8" | "spgemm-rmat-20-8" => {
            use trident_testkit::sparse_gemm::generate::{rmat, uniform_rows};
            let m = if name == "spgemm-rmat-20-8" {
                rmat::<f32>(20, 8, seed)
            } else {
                uniform_rows::<f32>(16 << 20, 16 << 20, 8, seed)
            };
            let cuts = trident::dist::split_by_work(&trident::dist::row_work(&m, &m), size);
            let mine = trident::dist::row_block(&m, cuts[rank].clone())?;
            let (da, db) = (dev.upload_csr(&mine)?, dev.upload_csr(&m)?);
            drop((mine, m));
            out.push((
                "spgemm_resident f32".into(),
                time(s, reps, || {
                    s.spgemm_resident(&dev, &da, &db)?;
                    dev.synchronize()
                })?,
            ));
        }
        "cut3d-512" => {
            // The segmentation volume's layers cut into one slab per GPU; every
            // rank also solves the whole grid on its own GPU once (untimed) and
            // checks the flow and its slab's labels against it.
            use trident_core::MaxFlowDevice;
            const N: usize = 512;
            let t0 = Instant::now();
            let g = trident_testkit::cases::cut3d(N, 1);
            eprintln!(
                "dist_bench: cut3d-512 generated in {:.1} s on rank {rank}",
                t0.elapsed().as_secs_f64()
            );
            let layers = even_split(N, size, rank);
            let slab = dev.upload_grid_layers(&g, layers.clone())?;
            let whole = dev.upload_grid(&g)?;
            let layer = N * N;
            drop(g);
            let (want_flow, want) = dev.grid_cut_device(&whole)?;
            let mut want_labels = vec![0u8; layers.len() * layer];
            let mut all = dev.download_vec(&want)?;
            want_labels.copy_from_slice(&all[layers.start * layer..layers.end * layer]);
            drop((want, std::mem::take(&mut all)));
            // T1 in the same run: rank 0 alone solves the whole grid.
            out.push((
                "grid_cut_device (whole grid, rank 0's GPU alone)".into(),
                time(s, reps, || {
                    if rank == 0 {
                        dev.grid_cut_device(&whole)?;
                    }
                    dev.synchronize()
                })?,
            ));
            drop(whole);
            let (flow, labels) = s.grid_cut_resident(&dev, &slab)?;
            let got = dev.download_vec(&labels)?;
            if flow != want_flow || got != want_labels {
                let wrong = got.iter().zip(&want_labels).filter(|(a, b)| a != b).count();
                return Err(trident::Error::Backend(
                    format!(
                        "cut3d-512: flow {flow} against one GPU's {want_flow}, {wrong} of \
                         rank {rank}'s labels differ"
                    )
                    .into(),
                ));
            }
            out.push((
                "grid_cut_resident (slabs, then rank 0)".into(),
                time(s, reps, || {
                    s.grid_cut_resident(&dev, &slab)?;
                    dev.synchronize()
                })?,
            ));
        }
        _ => {
            return Err(trident::Error::Unsupported(format!(
                "{name}: no resident case (omp-16M, pairs-100M-40M, gemm-32768, gram-200K-4096, spgemm-uniform-16M-8, spgemm-rmat-20-8, cut3d-512)"
            )));
        }
    }
    dev.synchronize()?;
    Ok(out)
}

fn main() {
    trident_benches::log_from_env();
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("dist_bench: {e}");
            std::process::exit(2);
        }
    };
    if let Some(n) = args.local_gpus {
        // One process, a thread per GPU (ncclCommInitAll).
        match local_gpus(n, &args) {
            Ok(failed) => std::process::exit(i32::from(failed)),
            Err(e) => {
                eprintln!("dist_bench: --local-gpus: {e}");
                std::process::exit(1);
            }
        }
    }
    let cluster = match Cluster::new(ClusterOptions {
        transport: args.transport,
        ..ClusterOptions::default()
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dist_bench: cluster: {e}");
            std::process::exit(1);
        }
    };
    let failed = rank_main(&cluster, &args);
    // Keep every rank alive until all are done (MPI finalises collectively).
    let _ = cluster.comm().all_gather_u64(u64::from(failed));
    drop(cluster);
    std::process::exit(i32::from(failed));
}

#[cfg(feature = "nccl")]
fn local_gpus(n: usize, args: &Args) -> Result<bool> {
    let failed = Cluster::run_local(Some(n), std::time::Duration::from_secs(300), |c| {
        rank_main(c, args)
    })?;
    Ok(failed.into_iter().any(|f| f))
}

#[cfg(not(feature = "nccl"))]
fn local_gpus(_: usize, _: &Args) -> Result<bool> {
    Err(trident::Error::Unsupported(
        "--local-gpus needs a build with the `nccl` feature".into(),
    ))
}

/// One rank's cases; `true` if any failed. Rank 0 prints and writes the JSON.
fn rank_main(cluster: &Cluster, args: &Args) -> bool {
    let device = cluster.gpu().unwrap_or(cluster.local_rank());
    let backend: Box<dyn Primitives> = match &args.backend {
        Some(name) => {
            match trident::BackendKind::from_name(name)
                .map(|k| cluster.require(trident::backend_on(k, device)))
            {
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    eprintln!("dist_bench: backend {name}: {e}");
                    return true;
                }
                None => {
                    eprintln!("dist_bench: unknown backend {name:?}");
                    return true;
                }
            }
        }
        None => Box::new(trident::Trident::on_device(device)),
    };
    let lead = cluster.rank() == 0;
    if lead {
        println!(
            "dist_bench: {}; backend {} ({})",
            cluster.describe(),
            backend.name(),
            backend.describe()
        );
    }
    let sharded = Sharded::new(cluster, backend.as_ref());
    let mut json = Vec::new();
    let mut failed = false;
    for name in &args.cases {
        let result = if args.resident {
            resident_case(&sharded, device, name, args.reps)
        } else {
            let Some(case) = cases::find_case(name) else {
                eprintln!("dist_bench: no case {name:?}");
                return true;
            };
            let input = case.input(trident_testkit::DEFAULT_SEED);
            run_case(&sharded, &input, args.reps)
        };
        match result {
            Ok(rows) => {
                for (label, secs) in rows {
                    if lead {
                        println!(
                            "{name:<24} {label:<18} ranks {}  {:>10.3} ms",
                            cluster.size(),
                            secs * 1e3
                        );
                    }
                    json.push(format!(
                        "{{\"case\":\"{name}\",\"call\":\"{label}\",\"ranks\":{},\"transport\":\"{}\",\"backend\":\"{}\",\"ms\":{}}}",
                        cluster.size(),
                        cluster.comm().transport(),
                        backend.name(),
                        secs * 1e3
                    ));
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("dist_bench: rank {}: {name}: {e}", cluster.rank());
            }
        }
    }
    if let (true, Some(path)) = (lead, &args.json) {
        let text = json.join("\n") + "\n";
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("dist_bench: writing {path}: {e}");
            failed = true;
        }
    }
    failed
}
