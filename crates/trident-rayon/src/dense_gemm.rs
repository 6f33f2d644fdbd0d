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
//! Layouts: above [`PARALLEL_MIN_WORK`], an operand that is transposed or
//! has a padded leading dimension is first copied (in parallel, blocked for
//! the transpose) into a contiguous row-major `op(X)`, and a padded C is
//! computed in a contiguous buffer and copied back. The copies are O(mk +
//! kn + mn) against the O(mnk) product, and they put every call on the one
//! layout the tiles are tuned for: `gemm`'s packing from strided or padded
//! views ran 3-4x slower on 2 cores (1024^3 with 8 elements of padding
//! per row: 208 ms against 56 ms) and, on 16 threads, as low as 0.06x
//! OpenBLAS for `A^T B`. The arithmetic, and so the result, is unchanged.
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
    /// The layout copies' buffers (op(A), op(B), C), kept by the thread that
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
        const WHAT: [&str; 3] = ["op(A)", "op(B)", "C"];
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

/// `true` when the stored view of `x` already is `op(x)` as a contiguous
/// row-major matrix (`Op::N`, no padding), so no copy is needed.
fn is_contiguous<T: Copy>(x: &MatRef<'_, T>, op: Op) -> bool {
    let (r, c, ld) = (x.rows(), x.cols(), x.ld());
    r == 0 || c == 0 || (!op.is_transposed() && (ld == c || r == 1))
}

/// Writes `op(x)` into `out` as a contiguous row-major matrix (`out.len()
/// == x.rows() * x.cols()`), in parallel.
fn copy_contiguous<T: Scalar>(x: &MatRef<'_, T>, op: Op, out: &mut [T]) {
    let (r, c, ld, d) = (x.rows(), x.cols(), x.ld(), x.data());
    if !op.is_transposed() {
        out.par_chunks_mut(c)
            .enumerate()
            .for_each(|(i, row)| row.copy_from_slice(&d[i * ld..i * ld + c]));
    } else {
        // op(x) is c x r: out[j * r + i] = x[i][j], in bands of BLOCK
        // output rows, each filled block by block so that reads and
        // writes both stay within a few cache lines per row.
        const BLOCK: usize = 32;
        out.par_chunks_mut(r * BLOCK)
            .enumerate()
            .for_each(|(band, dst)| {
                let j0 = band * BLOCK;
                let jn = dst.len() / r;
                for i0 in (0..r).step_by(BLOCK) {
                    for i in i0..(i0 + BLOCK).min(r) {
                        let src = &d[i * ld + j0..i * ld + j0 + jn];
                        for (jj, &v) in src.iter().enumerate() {
                            dst[jj * r + i] = v;
                        }
                    }
                }
            });
    }
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
        // Non-contiguous layouts on one layout, for calls worth the copies,
        // into the calling thread's kept scratch.
        let copies = work >= PARALLEL_MIN_WORK;
        let lens = [
            if copies && !is_contiguous(&a, p.op_a) {
                m * k
            } else {
                0
            },
            if copies && !is_contiguous(&b, p.op_b) {
                k * n
            } else {
                0
            },
            if copies && c.ld() != n && m > 1 {
                m * n
            } else {
                0
            },
        ];
        let mut scratch = Scratch::take();
        let [a_buf, b_buf, c_buf] = self.install(|| -> Result<_> {
            let [a_buf, b_buf, c_buf] = scratch.parts::<T>(lens)?;
            if !a_buf.is_empty() {
                copy_contiguous(&a, p.op_a, a_buf);
            }
            if !b_buf.is_empty() {
                copy_contiguous(&b, p.op_b, b_buf);
            }
            if !c_buf.is_empty() && read_dst {
                let (ld, src) = (c.ld(), c.data());
                c_buf
                    .par_chunks_mut(n)
                    .enumerate()
                    .for_each(|(i, row)| row.copy_from_slice(&src[i * ld..i * ld + n]));
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
            None => (a.data().as_ptr(), op_strides(&a, p.op_a)?),
        };
        let (rhs, (b_rs, b_cs)) = match &b_copy {
            Some(v) => (v.as_ptr(), (n as isize, 1)),
            None => (b.data().as_ptr(), op_strides(&b, p.op_b)?),
        };
        let (dst, (c_rs, c_cs)) = match &mut c_copy {
            Some(v) => (v.as_mut_ptr(), (n as isize, 1)),
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
            // j < cols of op(A), op(B) and C, lies inside the respective slice; a
            // tile addresses a sub-block of those (rows i0.. of op(A) and C,
            // columns j0.. of op(B) and C), so the offsets stay inside too. C's
            // slice is borrowed mutably for the whole call and tiles are disjoint
            // blocks of C, so no two calls write the same element, and only C's
            // view elements (never its padding) are written. Where an operand
            // was copied (`contiguous`, C's copy), the pointer and strides are
            // those of the copy, a dense row-major buffer of exactly the view's
            // shape that lives until the end of this call. T is f32 or f64
            // (Scalar is sealed), both of which `gemm` supports.
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
            tile(0, m, 0, n);
            return Ok(());
        }
        // The tile grid depends on m and n only, never on the thread count, so
        // every element of C is computed by the same call shape whatever the
        // pool: the output stays bit-identical across thread counts.
        let (rows, cols) = (splits(m), splits(n));
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
            // The copy of a padded C goes back row by row, padding untouched.
            let ld = c.ld();
            self.install(|| {
                c.data_mut()
                    .par_chunks_mut(ld)
                    .zip(t.par_chunks(n))
                    .for_each(|(dst, row)| dst[..n].copy_from_slice(row))
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
