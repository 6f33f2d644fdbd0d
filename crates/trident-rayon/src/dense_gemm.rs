//! DenseGemm for [`RayonBackend`]: the `gemm` crate's packed, cache-blocked
//! SIMD micro-kernels (AVX2/FMA/AVX-512 picked at run time), parallel on this
//! backend's pool by tiles of C: a 2-D grid of ~256 x 256 blocks (over both m
//! and n; 128 x 128 when that leaves threads short of work), each one
//! single-threaded `gemm` call over the whole k. The AVX-512
//! kernels need the crate's `x86-v4` feature, which the workspace enables: on
//! the project's 2-core EPYC they took gemm-2048 from 136 to 103 ms.
//! Against OpenBLAS's own AVX-512 kernels the tiles are at parity
//! there (0.95-0.98x in f32, BENCHMARKS.md), and at the multiply-add ceiling on the
//! GPU machine's 16 threads. They are chosen by CPU feature detection at run
//! time, so a build stays portable (no `target-cpu`).
//!
//! On x86-64 CPUs with AVX2 and FMA but no AVX-512 (most laptops and the
//! Zen 3 servers), calls above [`AVX2_MIN_WORK`] take our own loop nest
//! instead ([`avx2`]):
//! there `gemm`'s AVX2 kernels reached 50 GFLOP/s a core against
//! OpenBLAS's 65, 0.66-1.09x OpenBLAS on 2 cores over the BLAS variants.
//!
//! Why `gemm` (0.19): it is pure Rust, reaches BLAS-class speed on x86 and
//! aarch64, and takes arbitrary row and column strides, so `Op::T` and the
//! leading dimensions become stride swaps with no copy of A, B or C. Linking
//! OpenBLAS or MKL would bring a C toolchain and their own thread pools, which
//! would ignore the pool this backend hands out.
//!
//! Mapping: `gemm` computes `dst = a * dst + b * lhs * rhs`, so our `beta` is its
//! `alpha`, our `alpha` its `beta`, and `read_dst = (beta != 0)`: with
//! `beta == 0` C is never read, so a NaN there is overwritten (BLAS's rule).
//! Only the `cols` elements of each row of C are written, never the padding up
//! to `ld`, because the destination is described by its strides.
//!
//! Layouts: above [`PARALLEL_MIN_WORK`], a transposed operand is first
//! copied (in parallel, in 32-byte tiles) into a contiguous row-major
//! `op(X)`, and `A^T B^T` is computed as `(B A)^T` into a transposed copy of
//! C, so it costs one transpose (of C) instead of two. `gemm`'s packing reads
//! a transposed view with strided loads: `A^T B` ran at 0.06x OpenBLAS on 16
//! threads, and `A B^T` and `A^T B^T` 20-50% slower than the copies on 2
//! cores (1024^3). Padded leading dimensions are taken as they are: the tiles
//! pack their panels anyway, and copying padded operands and C cost 2-8% on
//! 2 cores (1024^3, 8 elements of padding, f32 and f64). The copies are
//! O(mk + kn + mn) against the O(mnk) product.
//!
//! Precision: [`Precision::Tf32`](trident_core::Precision) and `Tf32x3`
//! compute strictly (a CPU has no TF32 units; strict meets both bounds).
//!
//! Determinism: k is never split across threads; every element of C is one
//! chain of multiply-adds in a fixed k order, computed by the tile call that
//! covers it, and `gemm`'s k blocks depend only on k and the element size.
//! The grid may follow the thread count, but only between grids whose tiles
//! all take the same path through `gemm` (`MIN_PIECE`). The output is
//! therefore bit-identical across runs and across thread counts on a given
//! CPU (the unit tests check 1, 2, 3 and 16 threads, on both grids).
//! Different CPUs may pick different SIMD kernels (FMA or not), which is
//! outside the contract's "same backend".

use gemm::Parallelism;
use rayon::prelude::*;
use trident_core::{DenseGemm, Error, GemmParams, MatMut, MatRef, Op, Result, Scalar, validate};

use crate::RayonBackend;

/// Below this many multiply-adds (`m n k`) the call runs on the calling thread:
/// handing it to the pool costs more than it saves. It is `gemm`'s own default
/// threading threshold, so our choice and its internal one agree.
const PARALLEL_MIN_WORK: usize = 48 * 48 * 256;

/// Above this many multiply-adds an AVX2 CPU without AVX-512 takes
/// [`avx2`]'s loop nest; below, the `gemm` tiles. Each block of k costs the
/// loop nest two passes over the pool (pack, then compute), which small
/// calls do not amortize: on the 2-core Zen 3 box (2 threads) `gemm` was
/// faster up to 512^3 in f32 (0.90 against 1.12 ms at 384^3, 2.11 against
/// 2.32 at 512^3) and the loop nest from 768^3 (7.8 against 8.9 ms, f64
/// 19.0 against 22.2); in f64 the two were within 5-20% either way below
/// 512^3.
#[cfg(target_arch = "x86_64")]
const AVX2_MIN_WORK: usize = 512 * 512 * 512;

/// Target side of the square tiles of C that threads take whole: each tile is
/// one single-threaded `gemm` call over the full k, which packs its own panels
/// of A and B (each element of A and B is packed once per tile row or
/// column: `2 / side` of the arithmetic's operand reads) and needs no barrier
/// with other threads. `gemm`'s own
/// parallel mode splits each k block among all threads and meets them at a
/// barrier per block, which left 16 threads at 0.73x OpenBLAS.
/// On the 16 cores, gemm-4096 took 94-101 ms with 256-wide tiles, 102-126
/// with 384, 119-123 with 512 and 143-167 with 1024 (16 cores of the H100 machine): 256 tiles per
/// call even out the threads, and A and B (64 MiB each) are packed from the
/// 300 MiB L3. On the 2-core box 256 costs 1-4% (gemm-2048, gemm-4096).
/// Dimensions of [`TILE_LARGE_FROM`] or more use [`TILE_LARGE`]: there A and
/// B outgrow L3 and packing reads memory, and gemm-8192 took 887 ms with
/// 1024-wide tiles against 1.05 s with 512, and 708-726 ms with 768
/// against 821-913 with 1024 (bands of tile rows claimed in order
/// were no better).
const TILE: usize = 256;
/// See [`TILE`].
const TILE_LARGE: usize = 768;
/// See [`TILE`].
const TILE_LARGE_FROM: usize = 8192;
/// Tiles are cut on multiples of this (a multiple of the micro-kernels' row
/// and column blocks, so no tile has a ragged edge inside the matrix).
const TILE_ALIGN: usize = 64;
/// No piece is shorter than this unless the whole side is: a shorter last
/// piece joins the one before it. `gemm` takes other paths, with other k
/// blocks or kernels, for a call with m and n both at most 64, m n at most
/// 256, or m or n equal to 1. With both sides of C at least [`FINE_FROM`],
/// every tile of either grid is at least 65 x 65, so each takes the blocked
/// path with the same k blocks (they depend on k alone): which grid ran
/// does not change a bit of C.
const MIN_PIECE: usize = 65;
/// The finer grid's tile side, for calls that would give each thread fewer
/// than [`TILES_PER_THREAD`] tiles of [`TILE`]: on the 16-core Xeon,
/// gemm-1024 took 2.09 ms with 128-wide tiles against 2.53 with 256 on 16
/// threads, 3.29 against 4.04 on 8 (f64: 4.23 / 5.24, 6.64 / 9.31), and
/// gemm-2048-f64 31.0 against 34.9 on 16; with 4 or 2 threads, or 2048 on 8,
/// 256 was as fast or faster (2 threads, gemm-1024-f64: 23.6 against 27.1 ms;
/// the 2-core Zen 3 box: 42 against 52 ms): more tiles pack A and B more often.
const TILE_FINE: usize = 128;
/// See [`TILE_FINE`].
const TILES_PER_THREAD: usize = 5;
/// See [`MIN_PIECE`].
const FINE_FROM: usize = 512;

/// `(start, len)` pieces of one side of C.
type Pieces = Vec<(usize, usize)>;

/// `(start, len)` of the near-equal pieces, aligned to [`TILE_ALIGN`], that
/// cut `0..len` into pieces of at most about `tile`, a short last piece
/// joined to the one before it ([`MIN_PIECE`]).
fn splits(len: usize, tile: usize) -> Pieces {
    let pieces = len.div_ceil(tile).max(1);
    let step = len.div_ceil(pieces).next_multiple_of(TILE_ALIGN);
    let mut out: Pieces = (0..len)
        .step_by(step)
        .map(|s| (s, step.min(len - s)))
        .collect();
    if out.len() > 1 && out[out.len() - 1].1 < MIN_PIECE {
        let (_, last) = out.pop().unwrap_or_default();
        if let Some(prev) = out.last_mut() {
            prev.1 += last;
        }
    }
    out
}

/// The row and column pieces of C's tiles for `threads` threads: [`TILE`]
/// ([`TILE_LARGE`] from [`TILE_LARGE_FROM`]), or the finer grid when both
/// sides are at least [`FINE_FROM`] and the coarse grid leaves threads short
/// of work. The grids give the same bits (see [`MIN_PIECE`]), so the output
/// does not depend on the thread count.
fn grid(pm: usize, pn: usize, threads: usize) -> (Pieces, Pieces) {
    let coarse = |len: usize| {
        if len >= TILE_LARGE_FROM {
            TILE_LARGE
        } else {
            TILE
        }
    };
    let (rows, cols) = (splits(pm, coarse(pm)), splits(pn, coarse(pn)));
    if pm >= FINE_FROM && pn >= FINE_FROM && rows.len() * cols.len() < TILES_PER_THREAD * threads {
        (splits(pm, TILE_FINE), splits(pn, TILE_FINE))
    } else {
        (rows, cols)
    }
}

/// Element strides `(row, col)` of a stored row-major view, as `isize`.
///
/// With at most one row, or no columns, the row stride is never stepped, so it
/// is pinned to a harmless value instead of an `ld` that might not fit `isize`
/// (a view with no elements may have any `ld`); otherwise `ld * (rows - 1)` is
/// inside the slice, so it fits.
fn strides(rows: usize, cols: usize, ld: usize) -> Result<(isize, isize)> {
    let rs = if rows <= 1 || cols == 0 { 1 } else { ld };
    let rs = isize::try_from(rs).map_err(|_| Error::TooLarge {
        field: "ld",
        value: ld as u128,
        limit: isize::MAX as u128,
    })?;
    Ok((rs, 1))
}

/// Bytes of layout-copy scratch a calling thread keeps between calls
/// ([`Scratch`]): enough for the three copies of a 2048 x 2048 f64 call.
/// Larger copies are allocated per call and freed.
const SCRATCH_KEEP: usize = 96 << 20;

thread_local! {
    /// The layout copies' buffers (op(A), op(B), C^T), kept by the thread that
    /// calls `gemm`: a fresh multi-megabyte buffer is a fresh `mmap`, and its
    /// page faults, the serial zero fill and the `munmap`'s TLB shootdowns
    /// cost more than the copy itself.
    static SCRATCH: std::cell::RefCell<[Vec<Line>; 3]> = const {
        std::cell::RefCell::new([Vec::new(), Vec::new(), Vec::new()])
    };
}

/// The calling thread's scratch, taken out for one call (so a nested call
/// finds empty buffers rather than a borrowed cell) and put back by `drop`
/// unless it grew past [`SCRATCH_KEEP`].
struct Scratch([Vec<Line>; 3]);

/// One cache line: the scratch's unit, so that copies start on a line (the
/// micro-kernels' loads from an 8-byte-aligned copy straddle lines: `A^T B`
/// in f32 took twice the time of `A B` on the 2-core box).
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Line([u64; 8]);

impl Scratch {
    fn take() -> Self {
        Self(SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut())))
    }

    /// The three buffers as `lens[i]` elements of `T` each (empty for a zero
    /// length), grown if needed in parallel, so that their pages are first
    /// touched by the threads that will fill them. Their contents are
    /// whatever an earlier call left: callers overwrite them.
    fn parts<T: Scalar>(&mut self, lens: [usize; 3]) -> Result<[&mut [T]; 3]> {
        const WHAT: [&str; 3] = ["op(A)", "op(B)", "C^T"];
        let mut out: [&mut [T]; 3] = [&mut [], &mut [], &mut []];
        for (i, (v, slot)) in self.0.iter_mut().zip(out.iter_mut()).enumerate() {
            let words = (lens[i] * size_of::<T>()).div_ceil(size_of::<Line>());
            if v.len() < words {
                let extra = words - v.len();
                trident_core::mem::reserve(v, extra, || {
                    format!("a contiguous copy of {} ({} elements)", WHAT[i], lens[i])
                })?;
                v.par_extend(rayon::iter::repeat_n(Line([0; 8]), extra));
            }
            *slot = &mut bytemuck::cast_slice_mut::<Line, T>(&mut v[..words])[..lens[i]];
        }
        Ok(out)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let bytes: usize = self
            .0
            .iter()
            .map(|v| v.capacity() * size_of::<Line>())
            .sum();
        if bytes <= SCRATCH_KEEP {
            let bufs = std::mem::take(&mut self.0);
            SCRATCH.with(|s| *s.borrow_mut() = bufs);
        }
    }
}

/// Most rows of `out` one transpose task writes, and the side of the blocks
/// it walks (a block's lines of both sides stay in L2).
const BAND: usize = 128;

/// Rows of `out` per transpose task: [`BAND`], or fewer when that would leave
/// threads idle (a 1024-row copy is only 8 bands of 128 for 16 threads). A
/// multiple of `m`, the side of the tiles moved through registers. The bands
/// only split a copy, so they may depend on the thread count.
fn band_rows(out_rows: usize, threads: usize, m: usize) -> usize {
    out_rows
        .div_ceil(2 * threads.max(1))
        .next_multiple_of(m)
        .clamp(m, BAND)
}

/// The side of the register tiles of [`transpose_band`]: 32 bytes.
fn tile_side<T>() -> usize {
    if size_of::<T>() == 4 { 8 } else { 4 }
}

/// `out[j * out_ld + i] = d[i * ld + j]` for the `r` rows of `d` and as many
/// columns as `out` has rows (`out` holds whole rows of `out_ld` elements but
/// for its last row, which may stop after `r`), in parallel over bands of
/// rows of `out`.
fn transpose<T: Scalar>(
    d: &[T],
    r: usize,
    ld: usize,
    out: &mut [T],
    out_ld: usize,
    threads: usize,
) {
    if r == 0 {
        return;
    }
    let band = band_rows((out.len() - r) / out_ld + 1, threads, tile_side::<T>());
    out.par_chunks_mut(out_ld * band)
        .enumerate()
        .for_each(|(i, dst)| transpose_band(d, r, ld, i * band, dst, out_ld));
}

/// One band of [`transpose`]: the rows `j0..` of `out` that `dst` holds.
fn transpose_band<T: Scalar>(
    d: &[T],
    r: usize,
    ld: usize,
    j0: usize,
    dst: &mut [T],
    out_ld: usize,
) {
    if size_of::<T>() == 4 {
        transpose_band_tiles::<T, 8>(d, r, ld, j0, dst, out_ld);
    } else {
        transpose_band_tiles::<T, 4>(d, r, ld, j0, dst, out_ld);
    }
}

/// [`transpose_band`] in `BAND x BAND` blocks, each in `M x M` tiles (`M`
/// elements = 32 bytes) moved through a local array: the loads read `M`
/// contiguous elements of a row of `d`, the stores write `M` contiguous
/// elements of a row of `out`. Writing one element per row of `out` instead
/// (stores `r` elements apart, all in the same L1 set when `r` is a power of
/// two) ran at 5 GB/s on the 2-core box; this runs at 16-30 GB/s (1024 x
/// 1024, f32 and f64).
fn transpose_band_tiles<T: Scalar, const M: usize>(
    d: &[T],
    r: usize,
    ld: usize,
    j0: usize,
    dst: &mut [T],
    out_ld: usize,
) {
    let jn = (dst.len() - r) / out_ld + 1;
    for i0 in (0..r).step_by(BAND) {
        let im = BAND.min(r - i0);
        for jb in (0..jn).step_by(M) {
            let jm = M.min(jn - jb);
            for i in (i0..i0 + im).step_by(M) {
                let mut tile = [[T::ZERO; M]; M];
                let tm = M.min(i0 + im - i);
                if tm == M && jm == M {
                    for (a, row) in tile.iter_mut().enumerate() {
                        row.copy_from_slice(&d[(i + a) * ld + j0 + jb..][..M]);
                    }
                    for b in 0..M {
                        let line = &mut dst[(jb + b) * out_ld + i..][..M];
                        for (a, v) in line.iter_mut().enumerate() {
                            *v = tile[a][b];
                        }
                    }
                } else {
                    for a in 0..tm {
                        for b in 0..jm {
                            dst[(jb + b) * out_ld + i + a] = d[(i + a) * ld + j0 + jb + b];
                        }
                    }
                }
            }
        }
    }
}

/// Elements per task of the finite screen.
const SCREEN_PART: usize = 1 << 16;

/// One task of the pass before the tiles.
enum Prep<'a, T> {
    /// Are rows `lo..hi` of the view all finite?
    Screen(MatRef<'a, T>, usize, usize),
    /// Rows `j0..` of the view's transpose into `dst`.
    Band(MatRef<'a, T>, usize, &'a mut [T]),
}

/// The pass before the tiles, on the pool as one set of tasks: the input
/// check's screen of `screened` (finite values) and the layout copies
/// (`x^T` into `out`, contiguous). Returns whether every screened value is
/// finite; the caller then asks [`validate::gemm_finite`] for the exact error.
/// The check used to scan A and B on freshly spawned threads before the
/// call: 0.8 of gemm-1024's 2.8 ms on 16 threads, against 1.9 ms for the
/// tiles alone.
fn prepare<'a, T: Scalar>(
    screened: &[MatRef<'a, T>],
    copies: Vec<(MatRef<'a, T>, &'a mut [T])>,
    threads: usize,
) -> bool {
    let mut jobs = Vec::new();
    for (x, out) in copies {
        let out_ld = x.rows();
        let band = band_rows(x.cols(), threads, tile_side::<T>());
        jobs.extend(
            out.chunks_mut(out_ld * band)
                .enumerate()
                .map(|(i, dst)| Prep::Band(x, i * band, dst)),
        );
    }
    for &x in screened {
        if x.rows() == 0 || x.cols() == 0 {
            continue;
        }
        let per = (SCREEN_PART / x.cols()).max(1);
        jobs.extend(
            (0..x.rows())
                .step_by(per)
                .map(|lo| Prep::Screen(x, lo, (lo + per).min(x.rows()))),
        );
    }
    jobs.into_par_iter()
        .with_max_len(1)
        .map(|job| match job {
            Prep::Screen(x, lo, hi) => {
                (lo..hi).all(|i| x.row(i).iter().fold(true, |all, &v| all & v.is_finite()))
            }
            Prep::Band(x, j0, dst) => {
                transpose_band(x.data(), x.rows(), x.ld(), j0, dst, x.rows());
                true
            }
        })
        .reduce(|| true, |a, b| a && b)
}

/// `(row, col)` strides of `op(X)` in elements.
fn op_strides<T: Copy>(x: &MatRef<'_, T>, op: Op) -> Result<(isize, isize)> {
    let (rs, cs) = strides(x.rows(), x.cols(), x.ld())?;
    Ok(if op.is_transposed() {
        (cs, rs)
    } else {
        (rs, cs)
    })
}

impl<T: Scalar> DenseGemm<T> for RayonBackend {
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        let dims = validate::gemm_dims(p, &a, &b, &c)?;
        let (m, n, k) = (dims.m, dims.n, dims.k);
        let work = m.saturating_mul(n).saturating_mul(k);
        if work < PARALLEL_MIN_WORK || p.alpha == T::ZERO {
            // Small calls (and those with no product) check their values
            // here; the others screen them on the pool, beside the copies.
            validate::gemm_finite(p, &a, &b, &c.as_ref())?;
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        if p.alpha == T::ZERO || k == 0 {
            // BLAS: A and B are not read, C <- beta C. `gemm` would form
            // `0 * (A B)`, which is NaN where A B overflows.
            c.scale(p.beta);
            return Ok(());
        }
        let read_dst = p.beta != T::ZERO;
        let threads = self.threads();
        #[cfg(target_arch = "x86_64")]
        if work > AVX2_MIN_WORK && avx2::wanted() {
            return self.gemm_avx2(p, a, b, c, (m, n, k));
        }
        // Transposed operands are copied into row-major `op(X)`, for calls
        // worth the copies, into the calling thread's kept scratch.
        let copies = work >= PARALLEL_MIN_WORK;
        // `alpha A^T B^T + beta C` is `(alpha B A + beta C^T)^T`: the product
        // of the stored operands as they lie, accumulated into a copy of
        // `C^T` and transposed once back into C, instead of transposing both
        // A and B.
        let swap = copies && p.op_a.is_transposed() && p.op_b.is_transposed();
        // The product as computed: `lhs (pm x k) * rhs (k x pn)`.
        let (lhs_x, lhs_op, rhs_x, rhs_op, pm, pn) = if swap {
            (&b, Op::N, &a, Op::N, n, m)
        } else {
            (&a, p.op_a, &b, p.op_b, m, n)
        };
        let copied = |x: &MatRef<'_, T>, op: Op| {
            copies && op.is_transposed() && x.rows() > 0 && x.cols() > 0
        };
        let lens = [
            if copied(lhs_x, lhs_op) { pm * k } else { 0 },
            if copied(rhs_x, rhs_op) { k * pn } else { 0 },
            if swap { m * n } else { 0 },
        ];
        let mut scratch = Scratch::take();
        let [a_buf, b_buf, c_buf] = self.install(|| -> Result<_> {
            let [a_buf, b_buf, c_buf] = scratch.parts::<T>(lens)?;
            if copies {
                let c_view = c.as_ref();
                let mut screened = vec![a, b];
                if read_dst {
                    screened.push(c_view);
                }
                let mut moves = Vec::new();
                if !a_buf.is_empty() {
                    moves.push((*lhs_x, &mut *a_buf));
                }
                if !b_buf.is_empty() {
                    moves.push((*rhs_x, &mut *b_buf));
                }
                if swap && read_dst {
                    moves.push((c_view, &mut *c_buf));
                }
                if !prepare(&screened, moves, threads) {
                    // Some value is not finite: the check names the first.
                    validate::gemm_finite(p, &a, &b, &c_view)?;
                }
            }
            Ok([a_buf, b_buf, c_buf])
        })?;
        let (a_copy, b_copy, mut c_copy) = (
            Some(a_buf).filter(|v| !v.is_empty()),
            Some(b_buf).filter(|v| !v.is_empty()),
            Some(c_buf).filter(|v| !v.is_empty()),
        );
        let (lhs, (a_rs, a_cs)) = match &a_copy {
            Some(v) => (v.as_ptr(), (k as isize, 1)),
            None => (lhs_x.data().as_ptr(), op_strides(lhs_x, lhs_op)?),
        };
        let (rhs, (b_rs, b_cs)) = match &b_copy {
            Some(v) => (v.as_ptr(), (pn as isize, 1)),
            None => (rhs_x.data().as_ptr(), op_strides(rhs_x, rhs_op)?),
        };
        let (dst, (c_rs, c_cs)) = match &mut c_copy {
            Some(v) => (v.as_mut_ptr(), (pn as isize, 1)),
            None => (c.data_mut().as_mut_ptr(), strides(m, n, c.ld())?),
        };
        // Raw pointers are not `Send`; carry them across `install` as addresses.
        let (dst, lhs, rhs) = (dst as usize, lhs as usize, rhs as usize);
        // One `gemm` call on the tile of C at rows `i0..i0 + tm`, columns
        // `j0..j0 + tn`, on the calling thread.
        let tile = move |i0: usize, tm: usize, j0: usize, tn: usize| {
            let off = |rs: isize, cs: isize, r: usize, c: usize| {
                (r as isize)
                    .wrapping_mul(rs)
                    .wrapping_add((c as isize).wrapping_mul(cs))
            };
            // SAFETY: validate::gemm_dims and the view constructors guarantee that every
            // element addressed here, `(i, j) -> i * rs + j * cs` for i < rows and
            // j < cols of the product's lhs (pm x k), rhs (k x pn) and dst (pm x
            // pn), lies inside the respective slice: op(A), op(B) and C, or with
            // `swap` the stored B and A as they lie and C's transposed copy. A
            // tile addresses a sub-block of those (rows i0.. of lhs and dst,
            // columns j0.. of rhs and dst), so the offsets stay inside too. The
            // dst is borrowed mutably for the whole call and tiles are disjoint
            // blocks of it, so no two calls write the same element, and only
            // C's view elements (never its padding) are written. Where an
            // operand was copied, the pointer and strides are those of the copy,
            // a dense row-major buffer of exactly its shape that lives until the
            // end of this call. T is f32 or f64 (Scalar is sealed), both of
            // which `gemm` supports.
            unsafe {
                gemm::gemm::<T>(
                    tm,
                    tn,
                    k,
                    (dst as *mut T).wrapping_offset(off(c_rs, c_cs, i0, j0)),
                    c_cs,
                    c_rs,
                    read_dst,
                    (lhs as *const T).wrapping_offset(off(a_rs, a_cs, i0, 0)),
                    a_cs,
                    a_rs,
                    (rhs as *const T).wrapping_offset(off(b_rs, b_cs, 0, j0)),
                    b_cs,
                    b_rs,
                    p.beta,
                    p.alpha,
                    false,
                    false,
                    false,
                    Parallelism::None,
                )
            }
        };
        if work < PARALLEL_MIN_WORK {
            tile(0, pm, 0, pn);
            return Ok(());
        }
        // The grid may depend on the thread count, its bits do not (`grid`).
        let (rows, cols) = grid(pm, pn, threads);
        let tiles = rows.len() * cols.len();
        if threads <= 1 {
            (0..tiles).for_each(|t| {
                let ((i0, tm), (j0, tn)) = (rows[t / cols.len()], cols[t % cols.len()]);
                tile(i0, tm, j0, tn)
            });
        } else {
            self.install(|| {
                (0..tiles).into_par_iter().with_max_len(1).for_each(|t| {
                    let ((i0, tm), (j0, tn)) = (rows[t / cols.len()], cols[t % cols.len()]);
                    tile(i0, tm, j0, tn)
                })
            });
        }
        if let Some(t) = &c_copy {
            // `C^T` back into C, its padding untouched.
            let ld = c.ld();
            let end = (m - 1) * ld + n;
            self.install(|| transpose(t, n, m, &mut c.data_mut()[..end], ld, threads));
        }
        Ok(())
    }
}

#[cfg(target_arch = "x86_64")]
impl RayonBackend {
    /// The large calls on AVX2 CPUs without AVX-512 (see [`avx2`]): the
    /// operands' strides go to the packing as they are, no layout copies.
    /// `m, n, k > 0` and `alpha != 0`; the values are not yet checked.
    fn gemm_avx2<T: Scalar>(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
        (m, n, k): (usize, usize, usize),
    ) -> Result<()> {
        let threads = self.threads();
        let read_dst = p.beta != T::ZERO;
        let view = |x: &MatRef<'_, T>, op: Op| -> Result<avx2::View> {
            let (rs, cs) = op_strides(x, op)?;
            Ok(avx2::View {
                ptr: x.data().as_ptr() as usize,
                rs,
                cs,
            })
        };
        let (av, bv) = (view(&a, p.op_a)?, view(&b, p.op_b)?);
        strides(m, n, c.ld())?;
        let (la, lb) = avx2::packed_lens(m, n, k);
        let mut scratch = Scratch::take();
        self.install(|| -> Result<()> {
            let [pa, pb, _] = scratch.parts::<T>([la, lb, 0])?;
            let mut screened = vec![a, b];
            if read_dst {
                screened.push(c.as_ref());
            }
            if !prepare(&screened, Vec::new(), threads) {
                // Some value is not finite: the check names the first.
                validate::gemm_finite(p, &a, &b, &c.as_ref())?;
            }
            let ldc = c.ld();
            let dst = c.data_mut().as_mut_ptr() as usize;
            // SAFETY: `wanted` checked the CPU; validate::gemm_dims and the
            // view constructors guarantee that op(A) (m x k), op(B) (k x n)
            // and C (m x n, row-major, ldc) address only elements of their
            // slices through these strides; C is borrowed mutably for the
            // call and only its view elements are written.
            unsafe {
                avx2::gemm_scalar(
                    (m, n, k),
                    p.alpha,
                    p.beta,
                    read_dst,
                    av,
                    bv,
                    (dst, ldc),
                    pa,
                    pb,
                    threads,
                )
            };
            Ok(())
        })
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(test)]
mod tests;
