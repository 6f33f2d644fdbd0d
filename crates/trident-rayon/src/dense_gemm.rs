//! DenseGemm for [`RayonBackend`]: the `gemm` crate's packed, cache-blocked
//! SIMD micro-kernels (AVX2/FMA/AVX-512 picked at run time), parallel on this
//! backend's pool by tiles of C: a 2-D grid of ~256 x 256 blocks (over both m
//! and n), each one single-threaded `gemm` call over the whole k. The AVX-512
//! kernels need the crate's `x86-v4` feature, which the workspace enables: on
//! the project's 2-core EPYC they took gemm-2048 from 136 to 103 ms.
//! Against OpenBLAS's own AVX-512 kernels the tiles are at parity
//! there (0.95-0.98x in f32, BENCHMARKS.md), and at the multiply-add ceiling on the
//! GPU machine's 16 threads. They are chosen by CPU feature detection at run
//! time, so a build stays portable (no `target-cpu`).
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
//! Precision: [`Precision::Tf32`](trident_core::Precision) computes strictly
//! (a CPU has no TF32 units; strict meets the looser bound).
//!
//! Determinism: k is never split across threads; every element of C is one
//! chain of multiply-adds in a fixed k order, computed by the tile call that
//! covers it, and the tile grid and `gemm`'s blocking depend only on m, n, k
//! and the element size. The output is therefore
//! bit-identical across runs and across thread counts on a given CPU (the unit
//! tests check 1, 2 and 3 threads). Different CPUs may pick different SIMD
//! kernels (FMA or not), which is outside the contract's "same backend".

use gemm::Parallelism;
use rayon::prelude::*;
use trident_core::{DenseGemm, Error, GemmParams, MatMut, MatRef, Op, Result, Scalar, validate};

use crate::RayonBackend;

/// Below this many multiply-adds (`m n k`) the call runs on the calling thread:
/// handing it to the pool costs more than it saves. It is `gemm`'s own default
/// threading threshold, so our choice and its internal one agree.
const PARALLEL_MIN_WORK: usize = 48 * 48 * 256;

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

/// `(start, len)` of the near-equal pieces, aligned to [`TILE_ALIGN`], that
/// cut `0..len` into pieces of at most about [`TILE`] (or [`TILE_LARGE`]).
/// They depend on `len` alone, never on the thread count.
fn splits(len: usize) -> Vec<(usize, usize)> {
    let tile = if len >= TILE_LARGE_FROM {
        TILE_LARGE
    } else {
        TILE
    };
    let pieces = len.div_ceil(tile).max(1);
    let step = len.div_ceil(pieces).next_multiple_of(TILE_ALIGN);
    (0..len)
        .step_by(step)
        .map(|s| (s, step.min(len - s)))
        .collect()
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

/// Writes `x^T` into `out` as a contiguous row-major matrix (`out.len() ==
/// x.rows() * x.cols()`), in parallel.
fn copy_transposed<T: Scalar>(x: &MatRef<'_, T>, out: &mut [T]) {
    transpose(x.data(), x.rows(), x.ld(), out, x.rows());
}

/// `out[j * out_ld + i] = d[i * ld + j]` for the `r` rows of `d` and as many
/// columns as `out` has rows (`out` holds whole rows of `out_ld` elements but
/// for its last row, which may stop after `r`), in parallel.
fn transpose<T: Scalar>(d: &[T], r: usize, ld: usize, out: &mut [T], out_ld: usize) {
    if size_of::<T>() == 4 {
        transpose_tiles::<T, 8>(d, r, ld, out, out_ld);
    } else {
        transpose_tiles::<T, 4>(d, r, ld, out, out_ld);
    }
}

/// [`transpose`] in parallel over bands of `BAND` rows of `out`.
///
/// Each band is walked in `BAND x BAND` blocks (a block's lines of both sides
/// stay in L2), and each block in `M x M` tiles (`M` elements = 32 bytes)
/// moved through a local array: the loads read `M` contiguous elements of a
/// row of `d`, the stores write `M` contiguous elements of a row of `out`. Writing one
/// element per row of `out` instead (stores `r` elements apart, all in the
/// same L1 set when `r` is a power of two) ran at 5 GB/s on the 2-core box;
/// this runs at 16-30 GB/s (1024 x 1024, f32 and f64).
fn transpose_tiles<T: Scalar, const M: usize>(
    d: &[T],
    r: usize,
    ld: usize,
    out: &mut [T],
    out_ld: usize,
) {
    const BAND: usize = 128;
    if r == 0 {
        return;
    }
    out.par_chunks_mut(out_ld * BAND)
        .enumerate()
        .for_each(|(band, dst)| {
            let j0 = band * BAND;
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
        });
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
        let dims = validate::gemm(p, &a, &b, &c)?;
        let (m, n, k) = (dims.m, dims.n, dims.k);
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
        let work = m.saturating_mul(n).saturating_mul(k);
        let threads = self.threads();
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
            if !a_buf.is_empty() {
                copy_transposed(lhs_x, a_buf);
            }
            if !b_buf.is_empty() {
                copy_transposed(rhs_x, b_buf);
            }
            if swap && read_dst {
                copy_transposed(&MatRef::new(c.data(), m, n, c.ld())?, c_buf);
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
            // SAFETY: validate::gemm and the view constructors guarantee that every
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
        // The tile grid depends on m and n only, never on the thread count, so
        // every element of C is computed by the same call shape whatever the
        // pool: the output stays bit-identical across thread counts.
        let (rows, cols) = (splits(pm), splits(pn));
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
            self.install(|| transpose(t, n, m, &mut c.data_mut()[..end], ld));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
