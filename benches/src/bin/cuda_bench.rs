//! Benchmarks of the CUDA backend on the benchmark cases, against the vendor
//! libraries on the same device buffers in the same run (cuBLAS SGEMM for
//! strict f32 GEMM and for Tf32x3, SGEMM in TF32 tensor-op math mode for
//! Tf32, DGEMM for f64; cuSPARSE SpGEMM for SpGEMM).
//!
//! Usage: `cuda_bench [--reps N] [FILTER...]`: runs the cases whose name
//! contains one of the filters (all when none). `cuda_bench --write-mtx DIR`
//! writes the SpGEMM matrices as Matrix Market files for the research codes
//! and stops. Device times come from CUDA
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
use cudarc::cusparse::{result as sparse, sys as sp};
use trident_core::{
    CsrMatrix, DenseGemm, DenseGemmDevice, DeviceMat, DeviceMemory, Error, GemmParams, MatMut,
    MatRef, NearestIndexDevice, NearestPairs, NearestPairsDevice, Neighbor, Precision, Result,
    SparseGemm, SparseGemmDevice, dist2,
};
use trident_cuda::{CudaBackend, CudaBuffer, DEFAULT_CELL_TARGET, GemmTile, Tuning};
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
    fn time(&self, f: impl FnMut() -> Result<()>) -> Result<f64> {
        trident_benches::timing::device(&self.be, self.reps, 2, f)
    }

    /// Median wall time in ms of `f` (which synchronizes itself) over `n` runs
    /// after one warm-up.
    fn wall(&self, n: usize, f: impl FnMut() -> Result<()>) -> Result<f64> {
        trident_benches::timing::wall(n, f)
    }
}

fn blas_err(e: blas::CublasError) -> Error {
    Error::Backend(format!("cuBLAS: {e:?}").into())
}

/// Which GEMM a bench row measures, and against which cuBLAS call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GemmKind {
    /// f32, `Precision::Strict` (FFMA), vs SGEMM in default math (no TF32).
    Strict,
    /// f32, `Precision::Tf32`, vs SGEMM with `CUBLAS_TF32_TENSOR_OP_MATH`.
    Tf32,
    /// f32, `Precision::Tf32x3`, vs SGEMM in default math (the accuracy it
    /// claims), both judged against DGEMM of the same inputs.
    Tf32x3,
    /// f64 vs DGEMM.
    F64,
}

/// cuBLAS's GEMM for one scalar type: row-major `C = A B` of `n x n` device
/// buffers, computed as the column-major `C^T = B^T A^T` (operands swapped).
trait BlasGemm: trident_core::Scalar {
    /// # Safety
    /// `a`, `b` and `c` hold `n * n` elements on the handle's stream.
    unsafe fn blas(h: &CudaBlas, n: i32, a: u64, b: u64, c: u64) -> Result<()>;
}

impl BlasGemm for f32 {
    unsafe fn blas(h: &CudaBlas, n: i32, a: u64, b: u64, c: u64) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = blas_sys::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the caller's contract (n*n elements each, same stream).
        unsafe {
            blas::sgemm(
                *h.handle(),
                op,
                op,
                n,
                n,
                n,
                &alpha,
                b as *const f32,
                n,
                a as *const f32,
                n,
                &beta,
                c as *mut f32,
                n,
            )
        }
        .map_err(blas_err)
    }
}

impl BlasGemm for f64 {
    unsafe fn blas(h: &CudaBlas, n: i32, a: u64, b: u64, c: u64) -> Result<()> {
        let (alpha, beta) = (1.0f64, 0.0f64);
        let op = blas_sys::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the caller's contract (n*n elements each, same stream).
        unsafe {
            blas::dgemm(
                *h.handle(),
                op,
                op,
                n,
                n,
                n,
                &alpha,
                b as *const f64,
                n,
                a as *const f64,
                n,
                &beta,
                c as *mut f64,
                n,
            )
        }
        .map_err(blas_err)
    }
}

fn set_math_mode(h: &CudaBlas, mode: blas_sys::cublasMath_t) -> Result<()> {
    // SAFETY: a live handle; the mode is one of cuBLAS's enumerators.
    let st = unsafe { blas_sys::cublasSetMathMode(*h.handle(), mode) };
    if st == blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Backend(format!("cublasSetMathMode: {st:?}").into()))
    }
}

fn rel_diff<T: trident_core::Scalar, U: trident_core::Scalar>(x: &[T], y: &[U]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (a, b) in x.iter().zip(y) {
        num += (a.to_f64() - b.to_f64()).powi(2);
        den += b.to_f64().powi(2);
    }
    (num / den.max(1e-300)).sqrt()
}

/// The shapes each kind compares (`Auto` first: the default choice).
fn gemm_tiles(kind: GemmKind) -> &'static [GemmTile] {
    use GemmTile as G;
    match kind {
        GemmKind::Strict => &[
            G::Auto,
            G::S128x128K16S4,
            G::S128x256K16S3,
            G::S128x256K16S4,
            G::S128x128K16S4W4,
            G::S256x128K16S3,
            G::St128x128K16S6,
            G::St128x256K16S4,
            G::St128x128K16S4B2,
        ],
        GemmKind::Tf32 => &[
            G::Auto,
            G::Tc128x256K16S4,
            G::Tc128x128K16S4,
            G::Tc128x256K16S4Z,
            G::Tc256x128K32S3Z,
            G::Tc128x128K16S4B2,
            G::Tc128x128K16S4B2Z,
            G::Wt128x256K32S4,
            G::Wt128x128K32S6,
        ],
        GemmKind::Tf32x3 => &[G::Auto, G::Wx128x128K32S6],
        GemmKind::F64 => &[
            G::Auto,
            G::F64Simt,
            G::D128x128K16S3,
            G::D128x128K32S3,
            G::D64x128K16S4B2,
            G::D128x64K16S3B2,
        ],
    }
}

fn gemm_case(ctx: &Bench, n: usize, kind: GemmKind) -> Result<Vec<Row>> {
    match kind {
        GemmKind::F64 => gemm_rows::<f64>(ctx, n, kind),
        _ => gemm_rows::<f32>(ctx, n, kind),
    }
}

/// Our kernel shapes of one kind against cuBLAS on the same `n x n` device
/// buffers. Strict and f64 rows check `|C - C_cublas| / |C_cublas|`; Tf32 rows
/// check both TF32 results against strict SGEMM, in units of the contract's
/// Tf32 tolerance; Tf32x3 rows check ours and cuBLAS SGEMM against DGEMM of
/// the same inputs.
fn gemm_rows<T: BlasGemm>(ctx: &Bench, n: usize, kind: GemmKind) -> Result<Vec<Row>>
where
    CudaBackend: DenseGemm<T> + DenseGemmDevice<T>,
{
    let be = &ctx.be;
    let a: Vec<T> = cases::uniform_matrix(n, n, SEED ^ 1);
    let b: Vec<T> = cases::uniform_matrix(n, n, SEED ^ 2);
    let mat = |buf| DeviceMat {
        buf,
        rows: n,
        cols: n,
        ld: n,
    };
    let da = mat(be.upload(&a)?);
    let db = mat(be.upload(&b)?);
    let mut dc = mat(be.alloc::<T>(n * n, "C")?);
    let pc = be.alloc::<T>(n * n, "C (cuBLAS)")?;
    let p = GemmParams::<T> {
        precision: match kind {
            GemmKind::Tf32 => Precision::Tf32,
            GemmKind::Tf32x3 => Precision::Tf32x3,
            _ => Precision::Strict,
        },
        ..Default::default()
    };
    let flops = 2.0 * (n as f64).powi(3);
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let ni = n as i32;
    let handle = CudaBlas::new(Arc::clone(be.stream())).map_err(blas_err)?;
    // SAFETY (both calls): three n*n buffers of T on the backend's stream.
    let mut cublas = || unsafe { T::blas(&handle, ni, da.buf.ptr(), db.buf.ptr(), pc.ptr()) };
    // Strict result first: the reference of the Tf32 rows.
    cublas()?;
    let strict_out = be.download_vec(&pc)?;
    let (peer, peer_out, what) = if kind == GemmKind::Tf32 {
        set_math_mode(&handle, blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH)?;
        let t = ctx.time(&mut cublas);
        set_math_mode(&handle, blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH)?;
        let t = t?;
        set_math_mode(&handle, blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH)?;
        let r = cublas();
        set_math_mode(&handle, blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH)?;
        r?;
        (t, be.download_vec(&pc)?, "cuBLAS TF32")
    } else {
        let t = ctx.time(&mut cublas)?;
        (
            t,
            strict_out.clone(),
            if kind == GemmKind::F64 {
                "cuBLAS DGEMM"
            } else {
                "cuBLAS SGEMM"
            },
        )
    };
    // Tf32x3: the f64 product of the same (f32) inputs, the yardstick of
    // both f32 results.
    let dgemm = |a: &[T], b: &[T]| -> Result<Vec<f64>> {
        let up = |x: &[T]| be.upload(&x.iter().map(|v| v.to_f64()).collect::<Vec<f64>>());
        let (a64, b64) = (up(a)?, up(b)?);
        let c64 = be.alloc::<f64>(n * n, "C (DGEMM)")?;
        // SAFETY: three n*n f64 buffers on the backend's stream.
        unsafe { f64::blas(&handle, ni, a64.ptr(), b64.ptr(), c64.ptr()) }?;
        be.download_vec(&c64)
    };
    let exact: Vec<f64> = if kind == GemmKind::Tf32x3 {
        dgemm(&a, &b)?
    } else {
        Vec::new()
    };
    // Tf32x3 on U[0,1) operands too (|A|, |B|): every sum grows one way, the
    // worst case for rounding that is not to nearest.
    let positive = if kind == GemmKind::Tf32x3 {
        let abs = |x: &[T]| {
            x.iter()
                .map(|v| T::from_f64(v.to_f64().abs()))
                .collect::<Vec<T>>()
        };
        let (pa, pb) = (abs(&a), abs(&b));
        let exact = dgemm(&pa, &pb)?;
        let (da, db) = (mat(be.upload(&pa)?), mat(be.upload(&pb)?));
        be.gemm_device(&p, &da, &db, &mut dc)?;
        let ours = be.download_vec(&dc.buf)?;
        // SAFETY: three n*n buffers of T on the backend's stream.
        unsafe { T::blas(&handle, ni, da.buf.ptr(), db.buf.ptr(), pc.ptr()) }?;
        let sgemm = be.download_vec(&pc)?;
        format!(
            "; on |A| |B|: ours {:.2e}, cuBLAS SGEMM {:.2e}",
            rel_diff(&ours, &exact),
            rel_diff(&sgemm, &exact)
        )
    } else {
        String::new()
    };
    let tol = trident_core::tol::GEMM_TF32;
    let label = match kind {
        GemmKind::Strict => "",
        GemmKind::Tf32 => " tf32",
        GemmKind::Tf32x3 => " tf32x3",
        GemmKind::F64 => " f64",
    };

    let mut rows = Vec::new();
    for &tile in gemm_tiles(kind) {
        let tuned = be.tuned(Tuning {
            gemm_tile: tile,
            ..Tuning::default()
        });
        let be = &tuned;
        let ours = ctx.time(|| be.gemm_device(&p, &da, &db, &mut dc))?;
        let out = be.download_vec(&dc.buf)?;
        let check = if kind == GemmKind::Tf32x3 {
            format!(
                "|C-C_f64|/|C_f64|: ours {:.2e}, cuBLAS SGEMM {:.2e}{positive}",
                rel_diff(&out, &exact),
                rel_diff(&peer_out, &exact)
            )
        } else if kind == GemmKind::Tf32 {
            format!(
                "vs strict SGEMM: ours {:.1e}, cuBLAS TF32 {:.1e} (Tf32 tolerance {tol:e})",
                rel_diff(&out, &strict_out),
                rel_diff(&peer_out, &strict_out)
            )
        } else {
            format!(
                "|C-C_cublas|/|C_cublas| = {:.1e}",
                rel_diff(&out, &peer_out)
            )
        };
        let h2h = if tile == GemmTile::Auto {
            let mut c = vec![T::ZERO; n * n];
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
        let shape = if tile == GemmTile::Auto {
            String::new()
        } else {
            format!(" [{tile:?}]")
        };
        rows.push(Row {
            case: format!("gemm{label}-{n}{shape}"),
            ours_ms: ours,
            peer_ms: Some(peer),
            figure: format!(
                "{:.1} vs {:.1} TFLOP/s ({what})",
                tflops(ours),
                tflops(peer)
            ),
            h2h_ms: h2h,
            check,
        });
    }
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
    for target in [DEFAULT_CELL_TARGET, 2.0, 4.0, 16.0] {
        let tuned = be.tuned(Tuning {
            cell_target: Some(target),
            ..Tuning::default()
        });
        let be = &tuned;
        let ours = ctx.time(|| be.closest_pairs_device(&da, &db, k).map(|_| ()))?;
        let nearest = ctx.time(|| be.nearest_device(&da, &db, &mut nn))?;
        let h2h = if target == DEFAULT_CELL_TARGET {
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
            check: if target == DEFAULT_CELL_TARGET {
                check.clone()
            } else {
                String::new()
            },
        });
    }
    // How the call splits: B's grid built alone, then the queries against
    // it kept (`NearestIndexDevice`).
    let build = ctx.time(|| be.index_points(&db).map(drop))?;
    let index = be.index_points(&db)?;
    let queries = ctx.time(|| be.closest_pairs_indexed(&da, &index, k).map(drop))?;
    rows.push(Row {
        case: format!("{name} closest_pairs_indexed({k})"),
        ours_ms: queries,
        peer_ms: None,
        figure: format!("index_points alone {build:.3} ms"),
        h2h_ms: None,
        check: String::new(),
    });
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

fn sparse_err(what: &'static str) -> impl Fn(sparse::CusparseError) -> Error {
    move |e| Error::Backend(format!("cuSPARSE {what}: {e:?}").into())
}

/// A cuSPARSE handle on the backend's stream, destroyed on drop.
struct Cusparse(sp::cusparseHandle_t);

impl Cusparse {
    fn new(be: &CudaBackend) -> Result<Self> {
        let h = Cusparse(sparse::create().map_err(sparse_err("create"))?);
        // SAFETY: a live handle and the backend's live stream (same driver
        // object under both crates' type names).
        unsafe { sp::cusparseSetStream(h.0, be.stream().cu_stream() as _) }
            .result()
            .map_err(sparse_err("set stream"))?;
        Ok(h)
    }
}

impl Drop for Cusparse {
    fn drop(&mut self) {
        // SAFETY: created by `Cusparse::new`, destroyed once.
        let _ = unsafe { sparse::destroy(self.0) };
    }
}

/// A cuSPARSE CSR descriptor (i32 offsets and indices, f32 values) over
/// device buffers that outlive it.
struct SpMat(sp::cusparseSpMatDescr_t);

impl SpMat {
    fn csr(rows: usize, cols: usize, nnz: usize, off: u64, col: u64, val: u64) -> Result<Self> {
        let mut d = std::ptr::null_mut();
        // SAFETY: the pointers are device buffers of rows + 1, nnz and nnz
        // elements (or null with nnz = 0 for an output to be filled later).
        unsafe {
            sp::cusparseCreateCsr(
                &mut d,
                rows as i64,
                cols as i64,
                nnz as i64,
                off as *mut _,
                col as *mut _,
                val as *mut _,
                sp::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                sp::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                sp::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                sp::cudaDataType::CUDA_R_32F,
            )
        }
        .result()
        .map_err(sparse_err("create CSR descriptor"))?;
        Ok(SpMat(d))
    }
}

impl Drop for SpMat {
    fn drop(&mut self) {
        // SAFETY: created by `SpMat::csr`, destroyed once.
        let _ = unsafe { sp::cusparseDestroySpMat(self.0) };
    }
}

/// cuSPARSE's C = A B: offsets, indices, values in device memory.
struct PeerCsr {
    off: CudaBuffer<i32>,
    col: CudaBuffer<i32>,
    val: CudaBuffer<f32>,
}

/// One full cuSPARSE SpGEMM (work estimation, compute, size query, output
/// allocation, copy) with the default algorithm, as a user would call it.
fn cusparse_spgemm(
    be: &CudaBackend,
    h: &Cusparse,
    a: &SpMat,
    b: &SpMat,
    (m, n): (usize, usize),
) -> Result<PeerCsr> {
    use sp::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE as NT;
    let alg = sp::cusparseSpGEMMAlg_t::CUSPARSE_SPGEMM_DEFAULT;
    let ty = sp::cudaDataType::CUDA_R_32F;
    let (alpha, beta) = (1.0f32, 0.0f32);
    let (pa, pb) = ((&alpha as *const f32).cast(), (&beta as *const f32).cast());
    let c = SpMat::csr(m, n, 0, 0, 0, 0)?;
    let mut descr = std::ptr::null_mut();
    // SAFETY: cuSPARSE calls on live descriptors; every buffer handed over is
    // a device allocation of at least the size cuSPARSE asked for, queued on
    // the handle's stream, and outlives the calls (frees are stream-ordered).
    unsafe {
        sp::cusparseSpGEMM_createDescr(&mut descr)
            .result()
            .map_err(sparse_err("SpGEMM descriptor"))?;
        let run = || -> Result<PeerCsr> {
            let mut size1 = 0usize;
            sp::cusparseSpGEMM_workEstimation(
                h.0,
                NT,
                NT,
                pa,
                a.0,
                b.0,
                pb,
                c.0,
                ty,
                alg,
                descr,
                &mut size1,
                std::ptr::null_mut(),
            )
            .result()
            .map_err(sparse_err("workEstimation (size)"))?;
            let buf1 = be.alloc::<u8>(size1, "cuSPARSE buffer 1")?;
            sp::cusparseSpGEMM_workEstimation(
                h.0,
                NT,
                NT,
                pa,
                a.0,
                b.0,
                pb,
                c.0,
                ty,
                alg,
                descr,
                &mut size1,
                buf1.ptr() as *mut _,
            )
            .result()
            .map_err(sparse_err("workEstimation"))?;
            let mut size2 = 0usize;
            sp::cusparseSpGEMM_compute(
                h.0,
                NT,
                NT,
                pa,
                a.0,
                b.0,
                pb,
                c.0,
                ty,
                alg,
                descr,
                &mut size2,
                std::ptr::null_mut(),
            )
            .result()
            .map_err(sparse_err("compute (size)"))?;
            let buf2 = be.alloc::<u8>(size2, "cuSPARSE buffer 2")?;
            sp::cusparseSpGEMM_compute(
                h.0,
                NT,
                NT,
                pa,
                a.0,
                b.0,
                pb,
                c.0,
                ty,
                alg,
                descr,
                &mut size2,
                buf2.ptr() as *mut _,
            )
            .result()
            .map_err(sparse_err("compute"))?;
            let (mut rows, mut cols, mut nnz) = (0i64, 0i64, 0i64);
            sp::cusparseSpMatGetSize(c.0, &mut rows, &mut cols, &mut nnz)
                .result()
                .map_err(sparse_err("SpMatGetSize"))?;
            let out = PeerCsr {
                off: be.alloc::<i32>(m + 1, "cuSPARSE C offsets")?,
                col: be.alloc::<i32>(nnz as usize, "cuSPARSE C indices")?,
                val: be.alloc::<f32>(nnz as usize, "cuSPARSE C values")?,
            };
            sp::cusparseCsrSetPointers(
                c.0,
                out.off.ptr() as *mut _,
                out.col.ptr() as *mut _,
                out.val.ptr() as *mut _,
            )
            .result()
            .map_err(sparse_err("CsrSetPointers"))?;
            sp::cusparseSpGEMM_copy(h.0, NT, NT, pa, a.0, b.0, pb, c.0, ty, alg, descr)
                .result()
                .map_err(sparse_err("copy"))?;
            drop((buf1, buf2));
            Ok(out)
        };
        let out = run();
        let _ = sp::cusparseSpGEMM_destroyDescr(descr);
        out
    }
}

/// The `A * B` of SpGEMM case `name`: a benchmark case or one of the
/// [`trident_benches::SPGEMM_SHAPES`].
fn spgemm_input(name: &str) -> Result<cases::SpgemmCase<f32>> {
    let case = cases::spec_cases()
        .into_iter()
        .chain(trident_benches::extra_cases())
        .find(|c| c.name == name)
        .ok_or_else(|| Error::arg("case", format!("{name} is not a benchmark case")))?;
    let input = case.input(SEED);
    input
        .downcast_ref::<cases::SpgemmCase<f32>>()
        .cloned()
        .ok_or_else(|| Error::arg("case", format!("{name} is not an f32 SpGEMM case")))
}

/// Every SpGEMM case this bench times: the three benchmark matrices, then the
/// shapes the research codes are compared on.
const SPGEMM_CASES: [&str; 6] = [
    "spgemm-poisson2d-2048",
    "spgemm-rmat-16-8",
    "spgemm-uniform-1M-8",
    trident_benches::SPGEMM_SHAPES[0],
    trident_benches::SPGEMM_SHAPES[1],
    trident_benches::SPGEMM_SHAPES[2],
];

/// Writes `A` of every SpGEMM case (each is `A * A`) as `DIR/<case>.mtx`
/// (Matrix Market, `coordinate real general`, 1-based), the files the
/// research codes read (`benches/spgemm_peers/`).
fn write_mtx(dir: &std::path::Path) -> std::result::Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for name in SPGEMM_CASES {
        let c = spgemm_input(name).map_err(|e| e.to_string())?;
        if c.a != c.b {
            return Err(format!("{name} is not A * A"));
        }
        let path = dir.join(format!("{}.mtx", name.trim_start_matches("spgemm-")));
        let f = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        trident_io::mtx::write(std::io::BufWriter::new(f), &c.a)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!(
            "wrote {} ({} rows, {} entries)",
            path.display(),
            c.a.rows(),
            c.a.nnz()
        );
    }
    Ok(())
}

fn spgemm_case(ctx: &Bench, name: &str) -> Result<Vec<Row>> {
    let be = &ctx.be;
    let c = spgemm_input(name)?;
    let (a, b) = (&c.a, &c.b);
    let products = a.products_with(b);
    let gflops = |ms: f64| 2.0 * products as f64 / (ms * 1e-3) / 1e9;
    let (da, db) = (be.upload_csr(a)?, be.upload_csr(b)?);

    let ours = ctx.time(|| be.spgemm_device(&da, &db).map(|_| ()))?;
    let mine = be.download_csr(&be.spgemm_device(&da, &db)?)?;
    let again = be.download_csr(&be.spgemm_device(&da, &db)?)?;
    let bits = |m: &CsrMatrix<f32>| m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let deterministic = mine == again && bits(&mine) == bits(&again);
    let h2h = ctx.wall(3, || be.spgemm(a, b).map(|_| ()))?;

    // cuSPARSE wants i32 offsets: uploaded as a separate copy (outside the
    // timing). Indices are shared (u32 below 2^31 reads the same as i32),
    // values too.
    let to_i32 = |m: &CsrMatrix<f32>| -> Result<Vec<i32>> {
        m.offsets()
            .iter()
            .map(|&o| {
                i32::try_from(o).map_err(|_| Error::TooLarge {
                    field: "cuSPARSE offsets",
                    value: o as u128,
                    limit: i32::MAX as u128,
                })
            })
            .collect()
    };
    let (oa, ob) = (be.upload(&to_i32(a)?)?, be.upload(&to_i32(b)?)?);
    let h = Cusparse::new(be)?;
    let sa = SpMat::csr(
        a.rows(),
        a.cols(),
        a.nnz(),
        oa.ptr(),
        da.indices.ptr(),
        da.values.ptr(),
    )?;
    let sb = SpMat::csr(
        b.rows(),
        b.cols(),
        b.nnz(),
        ob.ptr(),
        db.indices.ptr(),
        db.values.ptr(),
    )?;
    let dims = (a.rows(), b.cols());
    let (peer, check) = match ctx.time(|| cusparse_spgemm(be, &h, &sa, &sb, dims).map(|_| ())) {
        Ok(t) => {
            let p = cusparse_spgemm(be, &h, &sa, &sb, dims)?;
            let (off, col, val) = (
                be.download_vec(&p.off)?,
                be.download_vec(&p.col)?,
                be.download_vec(&p.val)?,
            );
            let same_structure = off
                .iter()
                .zip(mine.offsets())
                .all(|(&x, &y)| x as usize == y)
                && col.len() == mine.nnz()
                && col.iter().zip(mine.indices()).all(|(&x, &y)| x as u32 == y);
            let worst = val
                .iter()
                .zip(mine.values())
                .map(|(&x, &y)| ((x - y).abs() / x.abs().max(1e-30)) as f64)
                .fold(0.0f64, f64::max);
            (
                Some(t),
                format!(
                    "{}, max rel diff to cuSPARSE {worst:.1e}, {}",
                    if same_structure {
                        "structure = cuSPARSE's"
                    } else {
                        "STRUCTURE DIFFERS from cuSPARSE"
                    },
                    if deterministic {
                        "bit-identical reruns"
                    } else {
                        "NOT DETERMINISTIC"
                    }
                ),
            )
        }
        Err(e) => (None, format!("cuSPARSE failed: {e}")),
    };
    let figure = match peer {
        Some(p) => format!(
            "{:.1} vs {:.1} GFLOP/s, nnz(C) {}",
            gflops(ours),
            gflops(p),
            mine.nnz()
        ),
        None => format!("{:.1} GFLOP/s, nnz(C) {}", gflops(ours), mine.nnz()),
    };
    Ok(vec![Row {
        case: name.to_string(),
        ours_ms: ours,
        peer_ms: peer,
        figure,
        h2h_ms: Some(h2h),
        check,
    }])
}

type CaseFn = fn(&Bench) -> Result<Vec<Row>>;

const CASES: &[(&str, CaseFn)] = &[
    ("gemm-4096", |c| gemm_case(c, 4096, GemmKind::Strict)),
    ("gemm-8192", |c| gemm_case(c, 8192, GemmKind::Strict)),
    ("gemm-tf32-4096", |c| gemm_case(c, 4096, GemmKind::Tf32)),
    ("gemm-tf32-8192", |c| gemm_case(c, 8192, GemmKind::Tf32)),
    ("gemm-tf32x3-4096", |c| gemm_case(c, 4096, GemmKind::Tf32x3)),
    ("gemm-tf32x3-8192", |c| gemm_case(c, 8192, GemmKind::Tf32x3)),
    ("gemm-f64-4096", |c| gemm_case(c, 4096, GemmKind::F64)),
    ("gemm-f64-8192", |c| gemm_case(c, 8192, GemmKind::F64)),
    ("spgemm-poisson2d-2048", |c| {
        spgemm_case(c, "spgemm-poisson2d-2048")
    }),
    ("spgemm-rmat-16-8", |c| spgemm_case(c, "spgemm-rmat-16-8")),
    ("spgemm-uniform-1M-8", |c| {
        spgemm_case(c, "spgemm-uniform-1M-8")
    }),
    ("spgemm-fem-hex27-80", |c| spgemm_case(c, SPGEMM_CASES[3])),
    ("spgemm-web-1M", |c| spgemm_case(c, SPGEMM_CASES[4])),
    ("spgemm-longrows-1M", |c| spgemm_case(c, SPGEMM_CASES[5])),
    ("pairs-1M-400K", pairs_uniform),
    ("pairs-clustered", pairs_clustered),
];

fn main() {
    trident_benches::log_from_env();
    let mut reps = 10usize;
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--write-mtx" {
            let Some(dir) = args.next() else {
                eprintln!("cuda_bench: --write-mtx needs a directory");
                std::process::exit(2);
            };
            if let Err(e) = write_mtx(std::path::Path::new(&dir)) {
                eprintln!("cuda_bench: --write-mtx: {e}");
                std::process::exit(1);
            }
            return;
        } else if a == "--reps" {
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
    for (which, set) in [
        ("benchmark", &SPGEMM_CASES[..3]),
        ("all", &SPGEMM_CASES[..]),
    ] {
        let sp: Vec<f64> = rows
            .iter()
            .filter(|r| set.contains(&r.case.as_str()))
            .filter_map(|r| r.peer_ms.map(|p| p / r.ours_ms))
            .collect();
        if !sp.is_empty() {
            let geo = (sp.iter().map(|x| x.ln()).sum::<f64>() / sp.len() as f64).exp();
            println!(
                "SpGEMM ({which}): geometric mean of cuSPARSE/ours over {} cases = {geo:.2} \
                 (cuSPARSE timed from workEstimation to copy, its i32 offset copies excluded)",
                sp.len()
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
}
