//! The one tolerance table of Trident.
//!
//! Every number by which an answer is judged lives here, as a named constant:
//! the checker that compares a backend with the reference
//! (`trident-testkit`) and the reference's own certificates
//! (`trident_reference::certify`) both import them, so a backend cannot pass
//! one and fail the other. `docs/tolerances.md` lists the same constants with
//! the same literal values (a test in this crate fails if the two disagree);
//! `docs/semantics.md` states the contract they come from.
//!
//! Every comparison has one form, [`Tol::bound`]: a value `y` matches the
//! reference value `x` when `|x - y| <= rel * |x| + abs`. For norms (GEMM's
//! Frobenius error, OMP's coefficient error) `x` is the reference's norm; for
//! SpGEMM `x` is `sum_p |A(i,p)| |B(p,j)|`, not the value itself. Max flow is
//! exact and needs no constant.

/// Strict f32 GEMM: `||C - C_ref||_F <= 1e-5 ||C_ref||_F` (the contract's
/// figure, written for inner dimensions `k <= 16384`; the cases stay there).
pub const GEMM_STRICT_F32: f64 = 1e-5;
/// f64 GEMM (Strict): Frobenius relative `1e-12`.
pub const GEMM_F64: f64 = 1e-12;
/// Tf32 GEMM (either scalar): Frobenius relative `5e-3` (TF32 keeps 10
/// mantissa bits, so products are rounded at about `5e-4`).
pub const GEMM_TF32: f64 = 5e-3;
/// Absolute floor of the GEMM Frobenius check, so that an all-zero reference
/// (`alpha == 0` with `beta == 0`, or `k == 0` with `beta == 0`) is matched up
/// to a stray signed or subnormal zero rather than requiring bit-exact zeros;
/// `1e-30` is far below any rounding error of a non-zero product of the
/// generators' values (which are at least `1e-8` in magnitude).
pub const GEMM_ABS: f64 = 1e-30;

/// f32 SpGEMM: each stored value within `1e-5 * sum_p |A(i,p)| |B(p,j)|` of
/// the f64 reference (the contract's figure).
pub const SPGEMM_F32: f64 = 1e-5;
/// f64 SpGEMM: each value within `1e-12 * sum_p |A(i,p)| |B(p,j)|`. The
/// contract's `1e-5` is the f32 figure (the same ratio as GEMM's f32/f64
/// pair); an f64 sum of `p` products is off by at most `p * 1.1e-16 * sum |..|`,
/// so `1e-12` holds for rows of up to ~9,000 products per entry, and a backend
/// that silently accumulated in f32 (error ~`6e-8 * sum |..|`) still fails.
/// Measured (`cargo xtask verify --size small`, seed `0x7121de5eed000001`):
/// the worst error / tolerance over the f32 and f64 SpGEMM cases is 0.018 on
/// rayon, and the reference passes its certificate, under these factors.
pub const SPGEMM_F64: f64 = 1e-12;

/// Nearest pairs, relative part: a returned point's exact squared distance
/// `d` passes when `|d - d_opt| <= 1e-6 * d_opt + 1e-6` (the contract's
/// "1e-6 relative (+1e-6 absolute)"). The same bound compares a reported
/// `d2` with the exact distance of the returned index, and the closest-pairs
/// distances with the reference's sorted distances.
pub const NEAREST_REL: f64 = 1e-6;
/// Nearest pairs, absolute part (added, not a floor: see [`NEAREST_REL`]); it
/// lets coincident and near-coincident points (`d_opt == 0`) differ by f32
/// rounding of a tiny distance.
pub const NEAREST_ABS: f64 = 1e-6;
/// Nearest pairs in f64 coordinates, relative part: an f64 backend's
/// squared distance carries a few ulps of rounding (`dx` is rounded once,
/// then three products and two sums), far inside `1e-12`; no absolute part,
/// so coordinates at any scale are judged at their own resolution.
pub const NEAREST_F64_REL: f64 = 1e-12;

/// OMP near tie in f32: a step whose two best `|<d_j, r>|` are within `1e-4`
/// relative may pick either atom.
pub const OMP_TIE_F32: f64 = 1e-4;
/// OMP near tie in f64: `1e-10` relative.
pub const OMP_TIE_F64: f64 = 1e-10;
/// OMP final residual: `||r||^2` within `1e-3` relative of the reference's
/// (after a near tie the paths may differ; only this is compared then). Also
/// the band around an error target `eps` within which stopping one step
/// earlier or later is a rounding-level call.
pub const OMP_RESIDUAL: f64 = 1e-3;
/// OMP coefficients in f32: `||g - g_ref|| <= 1e-3 ||g_ref||` on the same
/// path. The certificate also asks the residual the coefficients leave to be
/// orthogonal to the selected atoms within this, times `max(||x||, ||g||)`:
/// that is what a `1e-3` coefficient error allows.
pub const OMP_COEF_F32: f64 = 1e-3;
/// OMP coefficients in f64: `1e-8` (and the orthogonality check likewise).
pub const OMP_COEF_F64: f64 = 1e-8;
/// Floor of the f32 residual comparisons, times `||x||^2`: a residual that is
/// zero in exact arithmetic is not judged relatively. Batch-OMP tracks
/// `||r||^2` by subtracting updates of size `||x||^2` in f32 (rounded at
/// `6e-8` each), so after up to 32 steps the reported value may be off by
/// ~`32 * 6e-8 * few ||x||^2`; `1e-5` covers that. (The checker used `1e-6`
/// and the certificate `1e-5`; the certificate's value is kept because it is
/// the one derived from the update's rounding.)
pub const OMP_RESIDUAL_FLOOR_F32: f64 = 1e-5;
/// Floor of the f64 residual comparisons, times `||x||^2`.
pub const OMP_RESIDUAL_FLOOR_F64: f64 = 1e-12;
/// Floor of the f32 correlation comparisons (greedy choice, "nothing left
/// to pick"), times `||x||`: a correlation of an atom with a residual that is
/// zero up to rounding (`sqrt(n) * 6e-8 ||x||` for `n <= 256`) is not a
/// choice; `1e-5` is above that.
pub const OMP_CORR_FLOOR_F32: f64 = 1e-5;
/// Floor of the f64 correlation comparisons, times `||x||`.
pub const OMP_CORR_FLOOR_F64: f64 = 1e-12;

/// OMP, a backend whose loop runs in f32: a pivot (the squared distance of
/// the picked atom `d_j` to the span of the atoms chosen before it, the new
/// diagonal entry of the Cholesky factor squared) below `1e-3 G_jj` sends the
/// signal to an f64 computation. The contract has no stop for such an atom
/// (docs/semantics.md: ill-conditioning costs digits, never adds a stop
/// rule): an atom within about 0.03 rad of the span makes the f32 Gram
/// arithmetic lose the digits the f32 tolerances need (the correlations
/// updated through it carry errors of about `1e-7 / sqrt(pivot)` of
/// `||r||`, 3e-6 here, against the `1e-4` tie window), while f64 has them.
/// Shared by the rayon f32 loop and the wgpu shader.
pub const OMP_F32_REDO_PIVOT: f64 = 1e-3;
/// OMP in f64 arithmetic: a pivot below `1e-8 G_jj` (an atom within about
/// 1e-4 rad of the span of those chosen before it) marks the signal
/// ill-conditioned: the Gram matrix squares the condition number, so its
/// coefficients `L^-T z` lose digits, which are won back by refining them
/// against the residual formed explicitly in f64. Shared by the rayon f64
/// loop and the CUDA kernel. A pivot that is not positive at all is the
/// contract's exactly singular case: the atom is dropped and coding stops.
pub const OMP_ILL_PIVOT_F64: f64 = 1e-8;

/// How far a dictionary column's Euclidean norm may stray from 1 before
/// `Dictionary::new` rejects it (the contract's "unit-norm within 1e-3").
pub const UNIT_NORM_TOL: f64 = 1e-3;

/// A tolerance: `y` matches the reference value `x` when
/// `|x - y| <= rel * |x| + abs` (the contract's "relative, plus absolute").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tol {
    /// Relative part.
    pub rel: f64,
    /// Absolute part, added to the relative one.
    pub abs: f64,
}

impl Tol {
    /// A purely relative tolerance.
    pub const fn rel(rel: f64) -> Self {
        Self { rel, abs: 0.0 }
    }
    /// `rel` relative plus `abs` absolute.
    pub const fn new(rel: f64, abs: f64) -> Self {
        Self { rel, abs }
    }
    /// The nearest-pairs tolerance ([`NEAREST_REL`], [`NEAREST_ABS`]).
    pub const NEAREST: Tol = Tol::new(NEAREST_REL, NEAREST_ABS);
    /// The nearest-pairs tolerance for f64 coordinates ([`NEAREST_F64_REL`],
    /// no absolute part).
    pub const NEAREST_F64: Tol = Tol::new(NEAREST_F64_REL, 0.0);

    /// The nearest-pairs tolerance for coordinates of type `T`.
    pub fn nearest<T: crate::Scalar>() -> Tol {
        if T::NAME == "f32" {
            Tol::NEAREST
        } else {
            Tol::NEAREST_F64
        }
    }

    /// The allowed deviation from the reference value `x`.
    pub fn bound(&self, x: f64) -> f64 {
        self.rel * x.abs() + self.abs
    }
    /// `|x - y| / bound(x)`: `<= 1` passes. 0 for an exact match, infinite for a
    /// mismatch under a zero bound or a NaN.
    pub fn ratio(&self, x: f64, y: f64) -> f64 {
        ratio((x - y).abs(), self.bound(x))
    }
    /// `true` when `y` matches the reference `x`.
    pub fn accepts(&self, x: f64, y: f64) -> bool {
        self.ratio(x, y) <= 1.0
    }
}

/// `err / bound` with the conventions every check shares: 0 when `err == 0`
/// (an exact answer passes a zero bound), infinite for a NaN error or a
/// non-zero error under a zero bound.
pub fn ratio(err: f64, bound: f64) -> f64 {
    if err == 0.0 {
        0.0
    } else if err.is_nan() || bound == 0.0 {
        f64::INFINITY
    } else {
        err / bound
    }
}

/// The GEMM Frobenius tolerance for scalar `T` at `precision`:
/// [`GEMM_TF32`] for Tf32, else (Strict, Tf32x3) [`GEMM_STRICT_F32`] or [`GEMM_F64`], each
/// with the [`GEMM_ABS`] floor.
pub fn gemm<T: crate::Scalar>(precision: crate::Precision) -> Tol {
    let rel = match precision {
        crate::Precision::Tf32 => GEMM_TF32,
        crate::Precision::Strict | crate::Precision::Tf32x3 if T::NAME == "f32" => GEMM_STRICT_F32,
        crate::Precision::Strict | crate::Precision::Tf32x3 => GEMM_F64,
    };
    Tol::new(rel, GEMM_ABS)
}

/// The ends of `T`'s range as the GEMM and SpGEMM checks use them
/// (`docs/semantics.md`, "The ends of the range"): the largest finite value
/// and the smallest positive normal value, in f64. A result entry whose
/// products or sums pass beyond the first may be non-finite; each product
/// may lose up to the second to underflow (flushed subnormals included).
pub fn range<T: crate::Scalar>() -> (f64, f64) {
    if T::NAME == "f32" {
        (f32::MAX as f64, f32::MIN_POSITIVE as f64)
    } else {
        (f64::MAX, f64::MIN_POSITIVE)
    }
}

/// `sqrt(sum x^2)` without overflow or underflow in the squares (scaled by
/// the largest `|x|`), so Frobenius norms of matrices with entries near
/// either end of f64's range stay finite and exact to rounding.
pub fn norm2(xs: &[f64]) -> f64 {
    let m = xs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if m == 0.0 || !m.is_finite() {
        return if xs.iter().any(|x| x.is_nan()) {
            f64::NAN
        } else {
            m
        };
    }
    m * xs.iter().map(|x| (x / m) * (x / m)).sum::<f64>().sqrt()
}

/// The SpGEMM relative factor on `sum_p |A(i,p)| |B(p,j)|` for scalar `T`.
pub fn spgemm<T: crate::Scalar>() -> f64 {
    if T::NAME == "f32" {
        SPGEMM_F32
    } else {
        SPGEMM_F64
    }
}

/// The OMP tolerances for one scalar, picked from the constants above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Omp {
    /// Near-tie window ([`OMP_TIE_F32`] / [`OMP_TIE_F64`]).
    pub tie_rel: f64,
    /// Correlation floor, times `||x||`.
    pub corr_abs: f64,
    /// Coefficient tolerance ([`OMP_COEF_F32`] / [`OMP_COEF_F64`]).
    pub coef_rel: f64,
    /// Final residual, relative ([`OMP_RESIDUAL`]).
    pub res_rel: f64,
    /// Residual floor, times `||x||^2`.
    pub res_abs: f64,
    /// The scalar's machine epsilon (see [`Omp::rounding`]).
    pub eps: f64,
}

impl Omp {
    /// The preset for scalar `T`.
    pub fn of<T: crate::Scalar>() -> Self {
        if T::NAME == "f32" {
            Self {
                tie_rel: OMP_TIE_F32,
                corr_abs: OMP_CORR_FLOOR_F32,
                coef_rel: OMP_COEF_F32,
                res_rel: OMP_RESIDUAL,
                res_abs: OMP_RESIDUAL_FLOOR_F32,
                eps: f32::EPSILON as f64,
            }
        } else {
            Self {
                tie_rel: OMP_TIE_F64,
                corr_abs: OMP_CORR_FLOOR_F64,
                coef_rel: OMP_COEF_F64,
                res_rel: OMP_RESIDUAL,
                res_abs: OMP_RESIDUAL_FLOOR_F64,
                eps: f64::EPSILON,
            }
        }
    }
    /// The residual tolerance for a signal of squared norm `xx`.
    pub fn residual(&self, xx: f64) -> Tol {
        Tol::new(self.res_rel, self.res_abs * xx)
    }
    /// How far rounding the coefficients to the scalar may move `||r||^2`
    /// away from `r2`, the least-squares value, for coefficients with
    /// `sum_t |g_t| = g_sum`: the contract reports the residual of the code
    /// as returned, so a checker comparing it with a least-squares residual
    /// allows this on top of [`Omp::residual`]. With `e = eps g_sum`, a
    /// bound on `||D_S dg||` (unit atoms, and twice the rounding error, for
    /// the backend's own coefficient error at that level), it is
    /// `(2 sqrt(r2) + e) e`. Next to the residual floor it is negligible
    /// unless the coefficients dwarf `||x||`: nearly dependent atoms (`1e7
    /// ||x||` for atoms 1e-7 rad apart), where no f32 code can leave a
    /// small residual.
    pub fn rounding(&self, r2: f64, g_sum: f64) -> f64 {
        let e = self.eps * g_sum;
        (2.0 * r2.max(0.0).sqrt() + e) * e
    }
}
