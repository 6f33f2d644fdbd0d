//! DenseGemm's own path for x86-64 CPUs with AVX2 and FMA but no AVX-512.
//!
//! Why: there the `gemm` crate's AVX2 kernels reached 50 GFLOP/s a core on
//! gemm-4096 against OpenBLAS's 65 (a 2-core Zen 3, peak 78), and the calls
//! with transposed operands paid a layout copy on top. This is the classic
//! BLIS loop nest (Goto's algorithm): for each block of `NC` columns of C and
//! `KC` of k, pack op(B)'s block into `NR`-column panels and op(A)'s into
//! `MR`-row panels (one parallel pass: packing reads any strides, so a
//! transpose or a leading dimension costs nothing extra), then run a 6-row
//! register-blocked micro-kernel over the panels (a second parallel pass, by
//! blocks of `MC` rows and groups of column panels). The micro-kernel keeps a
//! 6 x 16 (f32) or 6 x 8 (f64) block of C in 12 AVX registers, and each step
//! of k is two loads of B, six broadcasts of A and twelve fused multiply-adds.
//!
//! Determinism: each element of C is the sum over the `KC`-blocks of k in
//! order, each block a chain of fused multiply-adds in k order, added to C as
//! `alpha * block + C` (the first as `alpha * block + beta * C`, or
//! `alpha * block` when C is not read). The blocking is fixed and the
//! micro-tiles sit at fixed multiples of `MR` and `NR`, so how the passes are
//! shared among threads changes no bit.

use core::arch::x86_64::*;

use rayon::prelude::*;
use trident_core::Scalar;

/// Does this CPU take this path? AVX2 and FMA without AVX-512 (where the
/// `gemm` crate's AVX-512 kernels are at parity with OpenBLAS).
pub(super) fn wanted() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && !is_x86_feature_detected!("avx512f")
}

/// Can this CPU run the path at all (the tests run it wherever it can)?
#[cfg(test)]
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// A read-only strided view: element `(i, j)` at `ptr + i * rs + j * cs`
/// (the address as a `usize`, so the view crosses threads).
#[derive(Clone, Copy)]
pub(super) struct View {
    pub ptr: usize,
    pub rs: isize,
    pub cs: isize,
}

impl View {
    /// The address of element `(i, j)`.
    fn at<T>(&self, i: usize, j: usize) -> *const T {
        (self.ptr as *const T).wrapping_offset(
            (i as isize)
                .wrapping_mul(self.rs)
                .wrapping_add((j as isize).wrapping_mul(self.cs)),
        )
    }
}

/// How a micro-tile's sum reaches C.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Update {
    /// `C = alpha * acc` (the first block of k, C not read).
    Store,
    /// `C = alpha * acc + beta * C` (the first block of k).
    Scale,
    /// `C = alpha * acc + C` (every later block).
    Add,
}

/// Rows of the micro-kernel's register block.
const MR: usize = 6;
/// Columns of C per packed-B block (a multiple of both `NR`): the packed
/// block (`KC x NC`) stays in L3.
const NC: usize = 4096;

/// The element types of this path and their micro-kernels.
pub(super) trait Kernel: Scalar {
    /// Columns of the register block: two AVX vectors.
    const NR: usize;
    /// Depth of a packed block (the B micro-panel, `KC x NR`, fills half of
    /// a 32 KiB L1).
    const KC: usize;
    /// Rows per block of packed A (`MC x KC` stays in L2): 144 in both types,
    /// so each B panel brought to L1 serves 24 micro-kernel calls (72 rows of
    /// f64 left gemm-4096-f64 5% slower).
    const MC: usize;

    /// `C[i][j] (+)= alpha * sum_p a[p * MR + i] * b[p * NR + j]` for the
    /// `mr x nr` corner of a micro-tile, as `mode` says.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `a` holds `kc * MR` and `b` `kc * NR`
    /// readable elements; `c` addresses `mr <= MR` rows of `nr <= NR`
    /// writable elements, `ldc` apart, that no other thread touches.
    unsafe fn kernel(
        kc: usize,
        a: *const Self,
        b: *const Self,
        c: *mut Self,
        ldc: usize,
        mr: usize,
        nr: usize,
        alpha: Self,
        beta: Self,
        mode: Update,
    );

    /// `out[p * MR + i] = rows[i][p]` for `p < kc`: a full panel of a
    /// row-major op(A), transposed in registers.
    ///
    /// # Safety
    /// The CPU has AVX2; each row holds `kc` readable elements; `out` has
    /// `kc * MR` elements.
    unsafe fn pack_rows(rows: &[*const Self], kc: usize, out: &mut [Self]);

    /// `out[p * NR + j] = cols[j][p]` for `p < kc`: a full panel of a
    /// transposed op(B), transposed in registers.
    ///
    /// # Safety
    /// The CPU has AVX2; `cols` has `NR` columns of `kc` readable elements;
    /// `out` has `kc * NR` elements.
    unsafe fn pack_cols(cols: &[*const Self], kc: usize, out: &mut [Self]);
}

/// One micro-kernel per element type: the same code over the type's AVX
/// intrinsics (`LANES` elements a vector).
macro_rules! micro_kernel {
    ($t:ty, $lanes:expr, $kc:expr, $mc:expr, $zero:ident, $load:ident, $store:ident,
     $splat:ident, $fma:ident, $mul:ident, $pack_rows:ident, $pack_cols:ident) => {
        impl Kernel for $t {
            unsafe fn pack_rows(rows: &[*const $t], kc: usize, out: &mut [$t]) {
                // SAFETY: the caller's contract.
                unsafe { $pack_rows(rows, kc, out) }
            }

            unsafe fn pack_cols(cols: &[*const $t], kc: usize, out: &mut [$t]) {
                // SAFETY: the caller's contract.
                unsafe { $pack_cols(cols, kc, out) }
            }

            const NR: usize = 2 * $lanes;
            const KC: usize = $kc;
            const MC: usize = $mc;

            unsafe fn kernel(
                kc: usize,
                a: *const $t,
                b: *const $t,
                c: *mut $t,
                ldc: usize,
                mr: usize,
                nr: usize,
                alpha: $t,
                beta: $t,
                mode: Update,
            ) {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn run(
                    kc: usize,
                    mut a: *const $t,
                    mut b: *const $t,
                    c: *mut $t,
                    ldc: usize,
                    mr: usize,
                    nr: usize,
                    alpha: $t,
                    beta: $t,
                    mode: Update,
                ) {
                    const NR: usize = 2 * $lanes;
                    // SAFETY: the caller's contract (see `Kernel::kernel`).
                    unsafe {
                        // C's lines are read only after the k loop: fetch
                        // them now, behind the arithmetic (from memory, each
                        // row a page apart, they cost 20-40% of a 256-deep tile).
                        for i in 0..mr {
                            let row = c.add(i * ldc);
                            _mm_prefetch::<_MM_HINT_T0>(row as *const i8);
                            _mm_prefetch::<_MM_HINT_T0>(row.add(nr - 1) as *const i8);
                        }
                        let mut acc = [[$zero(); 2]; MR];
                        for _ in 0..kc {
                            let b0 = $load(b);
                            let b1 = $load(b.add($lanes));
                            for (i, row) in acc.iter_mut().enumerate() {
                                let ai = $splat(*a.add(i));
                                row[0] = $fma(ai, b0, row[0]);
                                row[1] = $fma(ai, b1, row[1]);
                            }
                            a = a.add(MR);
                            b = b.add(NR);
                        }
                        let va = $splat(alpha);
                        if mr == MR && nr == NR {
                            for (i, row) in acc.iter().enumerate() {
                                for (h, &v) in row.iter().enumerate() {
                                    let p = c.add(i * ldc + h * $lanes);
                                    let out = match mode {
                                        Update::Store => $mul(va, v),
                                        Update::Scale => $fma(va, v, $mul($splat(beta), $load(p))),
                                        Update::Add => $fma(va, v, $load(p)),
                                    };
                                    $store(p, out);
                                }
                            }
                        } else {
                            // A ragged edge: the same arithmetic, one element at a time.
                            let mut tmp = [0.0 as $t; MR * NR];
                            for (i, row) in acc.iter().enumerate() {
                                for (h, &v) in row.iter().enumerate() {
                                    $store(tmp.as_mut_ptr().add(i * NR + h * $lanes), v);
                                }
                            }
                            for i in 0..mr {
                                for j in 0..nr {
                                    let p = c.add(i * ldc + j);
                                    let x = tmp[i * NR + j];
                                    *p = match mode {
                                        Update::Store => alpha * x,
                                        Update::Scale => alpha.mul_add(x, beta * *p),
                                        Update::Add => alpha.mul_add(x, *p),
                                    };
                                }
                            }
                        }
                    }
                }
                // SAFETY: forwarded from the caller, who checked the CPU.
                unsafe { run(kc, a, b, c, ldc, mr, nr, alpha, beta, mode) }
            }
        }
    };
}

micro_kernel!(
    f32,
    8,
    256,
    144,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_mul_ps,
    pack_rows_f32,
    pack_cols_f32
);
micro_kernel!(
    f64,
    4,
    256,
    144,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_mul_pd,
    pack_rows_f64,
    pack_cols_f64
);

/// `out[p * lines.len() + i] = lines[i][p]` for `from <= p < kc`, one
/// element at a time: the columns a register transpose leaves.
///
/// # Safety
/// Elements `from..kc` of every line are readable.
unsafe fn copy_tail<T: Copy>(lines: &[*const T], from: usize, kc: usize, out: &mut [T]) {
    let width = lines.len();
    for p in from..kc {
        for (i, line) in lines.iter().enumerate() {
            // SAFETY: p < kc.
            out[p * width + i] = unsafe { *line.add(p) };
        }
    }
}

/// The 8 x 8 transpose of eight rows of f32: `out[q][i] = r[i][q]`.
#[target_feature(enable = "avx2")]
fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xee>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xee>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xee>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xee>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// The 4 x 4 transpose of four rows of f64: `out[q][i] = r[i][q]`.
#[target_feature(enable = "avx2")]
fn transpose4(r: [__m256d; 4]) -> [__m256d; 4] {
    let t0 = _mm256_unpacklo_pd(r[0], r[1]);
    let t1 = _mm256_unpackhi_pd(r[0], r[1]);
    let t2 = _mm256_unpacklo_pd(r[2], r[3]);
    let t3 = _mm256_unpackhi_pd(r[2], r[3]);
    [
        _mm256_permute2f128_pd::<0x20>(t0, t2),
        _mm256_permute2f128_pd::<0x20>(t1, t3),
        _mm256_permute2f128_pd::<0x31>(t0, t2),
        _mm256_permute2f128_pd::<0x31>(t1, t3),
    ]
}

/// An `MR x 8` block of f32 rows transposed through [`transpose8`] (rows 6
/// and 7 zero); each column is stored as 8 lanes, the last two overwritten
/// by the next column, so a panel's last 8 columns are copied one by one.
#[target_feature(enable = "avx2")]
fn pack_rows_f32(rows: &[*const f32], kc: usize, out: &mut [f32]) {
    let out = &mut out[..kc * MR];
    let mut p = 0;
    while p + 8 < kc {
        // SAFETY: p + 8 <= kc elements of each row are readable; the stores
        // end at (p + 7) * MR + 8 <= (p + 8) * MR < out.len().
        unsafe {
            let z = _mm256_setzero_ps();
            let r = std::array::from_fn(|i| {
                if i < MR {
                    _mm256_loadu_ps(rows[i].add(p))
                } else {
                    z
                }
            });
            let dst = out.as_mut_ptr().add(p * MR);
            for (q, col) in transpose8(r).into_iter().enumerate() {
                _mm256_storeu_ps(dst.add(q * MR), col);
            }
        }
        p += 8;
    }
    // SAFETY: p..kc are readable in every line.
    unsafe { copy_tail(rows, p, kc, out) };
}

/// An `MR x 4` block of f64 rows: rows 0-3 through [`transpose4`], rows
/// 4-5 through one unpack, each column stored as 4 + 2 lanes.
#[target_feature(enable = "avx2")]
fn pack_rows_f64(rows: &[*const f64], kc: usize, out: &mut [f64]) {
    let out = &mut out[..kc * MR];
    let mut p = 0;
    while p + 4 <= kc {
        // SAFETY: p + 4 <= kc elements of each row are readable; the stores
        // end at (p + 3) * MR + 6 = (p + 4) * MR <= out.len().
        unsafe {
            let r: [__m256d; MR] = std::array::from_fn(|i| _mm256_loadu_pd(rows[i].add(p)));
            let top = transpose4([r[0], r[1], r[2], r[3]]);
            let lo = _mm256_unpacklo_pd(r[4], r[5]);
            let hi = _mm256_unpackhi_pd(r[4], r[5]);
            let bottom = [
                _mm256_castpd256_pd128(lo),
                _mm256_castpd256_pd128(hi),
                _mm256_extractf128_pd::<1>(lo),
                _mm256_extractf128_pd::<1>(hi),
            ];
            let dst = out.as_mut_ptr().add(p * MR);
            for q in 0..4 {
                _mm256_storeu_pd(dst.add(q * MR), top[q]);
                _mm_storeu_pd(dst.add(q * MR + 4), bottom[q]);
            }
        }
        p += 4;
    }
    // SAFETY: p..kc are readable in every line.
    unsafe { copy_tail(rows, p, kc, out) };
}

/// A full panel of a transposed op(B) (`cols[j]` is column j, contiguous
/// over k): `out[p * 16 + j] = cols[j][p]`, by [`transpose8`] blocks.
#[target_feature(enable = "avx2")]
fn pack_cols_f32(cols: &[*const f32], kc: usize, out: &mut [f32]) {
    const NR: usize = 16;
    let out = &mut out[..kc * NR];
    let mut p = 0;
    while p + 8 <= kc {
        for half in 0..2 {
            // SAFETY: p + 8 <= kc elements of each column are readable; the
            // stores end at (p + 7) * NR + 16 <= out.len().
            unsafe {
                let r = std::array::from_fn(|j| _mm256_loadu_ps(cols[half * 8 + j].add(p)));
                let dst = out.as_mut_ptr().add(p * NR + half * 8);
                for (q, row) in transpose8(r).into_iter().enumerate() {
                    _mm256_storeu_ps(dst.add(q * NR), row);
                }
            }
        }
        p += 8;
    }
    // SAFETY: p..kc are readable in every line.
    unsafe { copy_tail(cols, p, kc, out) };
}

/// [`pack_cols_f32`] for f64: `NR = 8`, by [`transpose4`] blocks.
#[target_feature(enable = "avx2")]
fn pack_cols_f64(cols: &[*const f64], kc: usize, out: &mut [f64]) {
    const NR: usize = 8;
    let out = &mut out[..kc * NR];
    let mut p = 0;
    while p + 4 <= kc {
        for half in 0..2 {
            // SAFETY: p + 4 <= kc elements of each column are readable; the
            // stores end at (p + 3) * NR + 8 <= out.len().
            unsafe {
                let r = std::array::from_fn(|j| _mm256_loadu_pd(cols[half * 4 + j].add(p)));
                let dst = out.as_mut_ptr().add(p * NR + half * 4);
                for (q, row) in transpose4(r).into_iter().enumerate() {
                    _mm256_storeu_pd(dst.add(q * NR), row);
                }
            }
        }
        p += 4;
    }
    // SAFETY: p..kc are readable in every line.
    unsafe { copy_tail(cols, p, kc, out) };
}

/// Packs `width`-row panels of `x` (as many as `dst` holds) from row `i0`,
/// rows at or past `len` as zeros, over columns `p0..p0 + kc`: element
/// `(i0 + r * width + i, p0 + p)` at `dst[r * width * kc + p * width + i]`.
/// op(A) is packed as it is (`width = MR`), op(B) as its transpose
/// (`width = NR`, see [`pack_b`]). `full` transposes a full panel of
/// contiguous rows in registers. The loops run along the stored rows,
/// whichever side they are: read across them, a 1024-wide operand took 5 ns
/// an element, a cache miss per line.
///
/// # Safety
/// Every element `(i, j)` of `x` with `i < len` and `p0 <= j < p0 + kc` is
/// readable; `width <= 16`.
unsafe fn pack<T: Scalar>(
    x: View,
    len: usize,
    i0: usize,
    p0: usize,
    kc: usize,
    width: usize,
    dst: &mut [T],
    full: impl Fn(&[*const T], usize, &mut [T]),
) {
    let panels = dst.len() / (width * kc);
    let live = |r: usize| width.min(len.saturating_sub(i0 + r * width));
    for r in 0..panels {
        if live(r) < width {
            dst[r * width * kc..][..width * kc].fill(T::ZERO);
        }
    }
    if x.rs == 1 && x.cs != 1 {
        // Stored transposed: a step of k is a contiguous run of rows.
        for p in 0..kc {
            let src = x.at::<T>(i0, p0 + p);
            for r in 0..panels {
                let rows = live(r);
                let out = &mut dst[r * width * kc + p * width..][..width];
                // SAFETY: rows i0 + r * width .. + rows <= len, column p0 + p
                // (a panel wholly past `len` reads nothing).
                let run = unsafe { std::slice::from_raw_parts(src.wrapping_add(r * width), rows) };
                out[..rows].copy_from_slice(run);
            }
        }
        return;
    }
    for r in 0..panels {
        let panel = &mut dst[r * width * kc..][..width * kc];
        let rows: [*const T; 16] = std::array::from_fn(|i| x.at::<T>(i0 + r * width + i, p0));
        if live(r) == width && x.cs == 1 {
            full(&rows[..width], kc, panel);
            continue;
        }
        for (i, row) in rows.iter().enumerate().take(live(r)) {
            for p in 0..kc {
                // SAFETY: row i0 + r * width + i < len, column p0 + p.
                panel[p * width + i] =
                    unsafe { *row.wrapping_offset((p as isize).wrapping_mul(x.cs)) };
            }
        }
    }
}

/// Packs op(A)'s rows `i0..` and columns `p0..p0 + kc` into `MR`-row panels
/// ([`pack`]).
///
/// # Safety
/// As [`pack`] with `len = m`; the CPU has AVX2.
unsafe fn pack_a<T: Kernel>(x: View, m: usize, i0: usize, p0: usize, kc: usize, dst: &mut [T]) {
    // SAFETY: forwarded; full panels have MR rows of kc contiguous elements.
    let full = |rows: &[*const T], kc, out: &mut [T]| unsafe { T::pack_rows(rows, kc, out) };
    // SAFETY: the caller's contract.
    unsafe { pack(x, m, i0, p0, kc, MR, dst, full) }
}

/// Packs op(B)'s rows `p0..p0 + kc` and columns `j0..` into `NR`-column
/// panels, element `(p0 + p, j0 + r * NR + j)` at `dst[r * NR * kc + p * NR
/// + j]`: [`pack`] of its transpose.
///
/// # Safety
/// Every element `(i, j)` of `x` with `p0 <= i < p0 + kc` and `j < n` is
/// readable; the CPU has AVX2.
unsafe fn pack_b<T: Kernel>(x: View, n: usize, j0: usize, p0: usize, kc: usize, dst: &mut [T]) {
    let t = View {
        ptr: x.ptr,
        rs: x.cs,
        cs: x.rs,
    };
    // SAFETY: forwarded; full panels have NR columns of kc contiguous elements.
    let full = |cols: &[*const T], kc, out: &mut [T]| unsafe { T::pack_cols(cols, kc, out) };
    // SAFETY: the caller's contract, transposed.
    unsafe { pack(t, n, j0, p0, kc, T::NR, dst, full) }
}

/// One task of the packing pass.
enum Pack<'a, T> {
    /// A block of op(A)'s rows, from this row.
    A(usize, &'a mut [T]),
    /// A group of op(B)'s column panels, from this column of the `NC` block.
    B(usize, &'a mut [T]),
}

/// `C <- alpha op(A) op(B) + beta C` (C not read when `!read_dst`), where
/// `a` is op(A) (`m x k`), `b` op(B) (`k x n`) and C is row-major at `c`
/// with leading dimension `ldc`; on the current rayon pool, with `packed_a`
/// and `packed_b` as scratch (at least [`packed_lens`] elements).
///
/// # Safety
/// The CPU has AVX2 and FMA; every element of the three
/// views is addressable as described, C's elements are writable and no other
/// thread touches them during the call; `m, n, k > 0`.
pub(super) unsafe fn gemm<T: Kernel>(
    (m, n, k): (usize, usize, usize),
    alpha: T,
    beta: T,
    read_dst: bool,
    a: View,
    b: View,
    (c, ldc): (usize, usize),
    packed_a: &mut [T],
    packed_b: &mut [T],
    threads: usize,
) {
    let (nr, kc_max) = (T::NR, T::KC);
    // Row blocks of at most `MC`, as many as a multiple of the threads and of
    // near-equal height: 1024 rows in blocks of 144 left one of two threads
    // four blocks and the other three and a sliver. Any height that is a
    // multiple of `MR` gives the same bits.
    let threads = threads.max(1);
    let blocks_m = m.div_ceil(T::MC).next_multiple_of(threads);
    let mc = m.div_ceil(blocks_m).next_multiple_of(MR);
    let blocks_m = m.div_ceil(mc);
    for jc in (0..n).step_by(NC) {
        let nc = NC.min(n - jc);
        let panels_n = nc.div_ceil(nr);
        // Column panels per compute task: enough tasks for every thread.
        let groups_n = (2 * threads).div_ceil(blocks_m).clamp(1, panels_n);
        let group = panels_n.div_ceil(groups_n);
        for pc in (0..k).step_by(kc_max) {
            let kc = kc_max.min(k - pc);
            let mode = match (pc, read_dst) {
                (0, true) => Update::Scale,
                (0, false) => Update::Store,
                _ => Update::Add,
            };
            let a_len = m.next_multiple_of(MR) * kc;
            let b_len = panels_n * nr * kc;
            let mut jobs: Vec<Pack<'_, T>> = packed_a[..a_len]
                .chunks_mut(mc * kc)
                .enumerate()
                .map(|(i, d)| Pack::A(i * mc, d))
                .collect();
            let b_group = 8 * nr * kc;
            jobs.extend(
                packed_b[..b_len]
                    .chunks_mut(b_group)
                    .enumerate()
                    .map(|(i, d)| Pack::B(i * 8 * nr, d)),
            );
            jobs.into_par_iter()
                .with_max_len(1)
                .for_each(|job| match job {
                    // SAFETY: rows < m and columns pc..pc + kc < k of op(A),
                    // rows pc..pc + kc and columns < n of op(B): inside the views.
                    Pack::A(i0, d) => unsafe { pack_a(a, m, i0, pc, kc, d) },
                    Pack::B(j0, d) => unsafe { pack_b(b, n, jc + j0, pc, kc, d) },
                });
            let (pa, pb) = (&packed_a[..a_len], &packed_b[..b_len]);
            (0..blocks_m * groups_n)
                .into_par_iter()
                .with_max_len(1)
                .for_each(|t| {
                    let (bi, gi) = (t / groups_n, t % groups_n);
                    let rows = (bi * mc)..(m.min((bi + 1) * mc));
                    let cols = (gi * group)..(panels_n.min((gi + 1) * group));
                    let calls = rows.len().div_ceil(MR);
                    for jp in cols.clone() {
                        let j = jc + jp * nr;
                        let b_panel = &pb[jp * nr * kc..][..nr * kc];
                        let next = pb.get((jp + 1) * nr * kc..).filter(|_| jp + 1 < cols.end);
                        for (call, i) in rows.clone().step_by(MR).enumerate() {
                            if let Some(next) = next {
                                prefetch_part(&next[..nr * kc], call, calls);
                            }
                            let a_panel = &pa[i * kc..][..MR * kc];
                            // SAFETY: the panels hold kc * MR and kc * NR
                            // elements; C's rows i.. (at most MR, < m) and
                            // columns j.. (at most NR, < n) belong to this
                            // task alone (tasks are disjoint row blocks x
                            // column groups), and the CPU was checked.
                            unsafe {
                                T::kernel(
                                    kc,
                                    a_panel.as_ptr(),
                                    b_panel.as_ptr(),
                                    (c as *mut T).add(i * ldc + j),
                                    ldc,
                                    MR.min(m - i),
                                    nr.min(n - j),
                                    alpha,
                                    beta,
                                    mode,
                                )
                            }
                        }
                    }
                });
        }
    }
}

/// Brings part `part` of `parts` of `panel` into L2: the next B panel, a
/// share per micro-kernel call, so that a new panel is not waited for from L3
/// (streaming panels from an 8 MiB block instead of one cost the f64 kernel
/// 13-20% on a Zen 3; a gemm-4096-f64 ran 8% faster with this).
fn prefetch_part<T>(panel: &[T], part: usize, parts: usize) {
    let lines = std::mem::size_of_val(panel) / 64;
    let base = panel.as_ptr().cast::<i8>();
    for line in part * lines / parts..(part + 1) * lines / parts {
        // SAFETY: a prefetch reads nothing the program sees and cannot
        // fault; SSE is part of x86-64.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(base.wrapping_add(line * 64)) };
    }
}

/// Scratch lengths (elements) of packed A and packed B for an `m x n x k` call.
pub(super) fn packed_lens(m: usize, n: usize, k: usize) -> (usize, usize) {
    // Both element types block k by 256 and columns by 16 or fewer.
    let kc = 256.min(k);
    (
        m.next_multiple_of(MR) * kc,
        NC.min(n).next_multiple_of(16) * kc,
    )
}

/// [`gemm()`] for any [`Scalar`] (f32 or f64: the trait is sealed), so the
/// backend's generic call can take this path.
///
/// # Safety
/// As [`gemm()`].
pub(super) unsafe fn gemm_scalar<T: Scalar>(
    dims: (usize, usize, usize),
    alpha: T,
    beta: T,
    read_dst: bool,
    a: View,
    b: View,
    c: (usize, usize),
    packed_a: &mut [T],
    packed_b: &mut [T],
    threads: usize,
) {
    use std::any::TypeId;
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        let (alpha, beta) = (
            bytemuck::cast::<T, f32>(alpha),
            bytemuck::cast::<T, f32>(beta),
        );
        let (pa, pb) = (
            bytemuck::cast_slice_mut(packed_a),
            bytemuck::cast_slice_mut(packed_b),
        );
        // SAFETY: forwarded.
        unsafe { gemm::<f32>(dims, alpha, beta, read_dst, a, b, c, pa, pb, threads) }
    } else {
        let (alpha, beta) = (
            bytemuck::cast::<T, f64>(alpha),
            bytemuck::cast::<T, f64>(beta),
        );
        let (pa, pb) = (
            bytemuck::cast_slice_mut(packed_a),
            bytemuck::cast_slice_mut(packed_b),
        );
        // SAFETY: forwarded.
        unsafe { gemm::<f64>(dims, alpha, beta, read_dst, a, b, c, pa, pb, threads) }
    }
}
