//! The Batch-OMP loop for one chunk of signals, generic over the working
//! float type `F`: f32 for f32 inputs, f64 for f64 inputs (the precision
//! argument is in the module docs of `sparse_coder`).
//!
//! The hot loops (`alpha0`, `step`, `argmax`) are written so that the
//! compiler vectorizes them; they are compiled three times (AVX-512 + FMA,
//! AVX2 + FMA, baseline) and picked once per call by run-time detection.
//! Their multiply-adds are written as `mul_add`, a single rounding by
//! definition, in f32 as in f64: the SIMD copies use the FMA instructions,
//! and the baseline copy gets the same correctly rounded result from libm's
//! `fma`/`fmaf` where the target has no instruction (slowly, on CPUs older
//! than 2013). Rust never fuses or reorders float operations on its own, so
//! all three copies produce the same bits, and FMA halves the arithmetic of
//! the hot loops. The f32 step fused with the next step's argmax is
//! written in intrinsics for AVX-512 and AVX2 ([`super::avx512`],
//! [`super::avx2`]), with the same operations in the same order.
//!
//! An f32 signal whose coding reaches a question the f32 loop cannot settle
//! (a pivot or a best correlation near rounding level, a norm outside the
//! range where f32 squares are safe) is coded again from scratch by the f64
//! loop, on an f64 copy of the dictionary prepared on first need (see
//! [`Float`]'s constants and [`Wide`]).

use std::ops::Range;
use std::sync::OnceLock;

use trident_core::omp::{OMP_WINDOW_F64, SignalScale};
use trident_core::{
    Dictionary, Error, MatRef, Result, Scalar, StopRule, omp_zero_correlation, tol,
};

use super::aligned::Aligned;

/// The padding unit of K: a multiple of every block width below (twice the
/// argmax lanes included).
pub(super) const W: usize = 32;
/// Signals whose `alpha0 = D^T x` is computed together, so that each row of
/// `D` is loaded once per group rather than once per signal.
pub(super) const GROUP: usize = 4;
/// Signals of a group coded in lockstep (see [`rows_impl`]).
const LANES: usize = 2;

/// The working float type of the OMP loop: what differs between the f32 and
/// the f64 loop. Everything else is written once, generic over it.
pub(super) trait Float: Scalar {
    /// Marks chosen atoms in `cabs` (below any `|alpha|`).
    const NEG_ONE: Self;
    /// Whether this loop settles rounding-level questions itself (f64: it
    /// applies the contract's stops) or hands the signal to the f64 loop
    /// (f32).
    const EXACT: bool;
    /// Below `TRUST * ||x||^2` the tracked `||x||^2 - ||z||^2` has lost too
    /// many of its digits to cancellation; stop decisions then use the
    /// residual formed explicitly (in f64).
    const TRUST: f64;
    /// A pivot `L_kk^2` below `REDO` times `G_jj` sends the signal to the f64
    /// loop (0 for f64, which has nowhere to send it).
    const REDO: Self;
    /// A pivot `L_kk^2` below `ILL` times `G_jj` marks the signal
    /// ill-conditioned: its coefficients are refined against the explicit
    /// residual in f64 (see [`refine`]), [`Float::REFINE_STEPS`] times, then
    /// up to [`Float::REFINE_MORE`] more while the corrections still matter.
    const ILL: Self;
    /// Refinement steps for an ill-conditioned signal.
    const REFINE_STEPS: usize;
    /// Further steps, each taken while the last correction is above `1e-10`
    /// of the coefficients (a hundredth of the f64 coefficient tolerance) and
    /// at most half the one before (still converging, not yet at the noise of
    /// the f64 residual): an atom far closer to the span than [`Float::ILL`]
    /// (the contract's example, 1e-7 rad: a pivot of 1e-14) gains only a
    /// digit or two per step.
    const REFINE_MORE: usize;
    /// `||x||^2` outside `[MIN_XX, MAX_XX]` sends the signal to the f64 loop.
    const MIN_XX: f64;
    const MAX_XX: f64;
    /// The best correlation at or below which this loop does not select: the
    /// contract's zero-correlation stop for f64, the recode to f64 for f32.
    fn floor(n: usize, x_norm: f64) -> f64;
    /// `out[q] = D^T xs[q]` (see [`alpha0_blocks`]), with this type's block.
    fn alpha0(d: &[Self], n: usize, kp: usize, xs: &[Self], out: &mut [Self]);
    /// The largest entry of `c` (length a multiple of twice the lanes, at
    /// least -1) and the smallest index holding it: [`lane_max`] with this
    /// type's lanes, a tree of [`halve`], then [`first_index`].
    fn argmax(c: &[Self]) -> (usize, Self);
    /// One Batch-OMP step's vector work: the new row `u_k = G_{j,:} - sum_t
    /// ws_t u_t` of `U` (see [`code_signal`]), then `alpha -= c u_k` and
    /// `cabs = |alpha|` (entries at -1, the atoms chosen, stay -1).
    ///
    /// In blocks of this type's width ([`step_blocks`]): each block of `u_k`
    /// stays in registers while every row of `U` is subtracted from it, in
    /// order of `t`, then is stored and updates `alpha`. (Whole-row passes
    /// over `u_k`, a few rows of `U` each, spent more on loading and storing
    /// `u_k` than on the multiply-adds.)
    fn step(s: &mut Step<'_, Self>);
    /// [`Float::step`], then [`Float::argmax`] of the new `cabs` (the next step's
    /// atom): the two in turn, or one fused pass where this type has one
    /// for `isa` (f32 on AVX-512 and on AVX2: [`super::avx512`],
    /// [`super::avx2`]).
    #[inline(always)]
    fn step_argmax(isa: Isa, s: &mut Step<'_, Self>) -> (usize, Self) {
        let _ = isa;
        Self::step(s);
        Self::argmax(s.cabs)
    }
}

/// The operands of one Batch-OMP step ([`Float::step`]): the rows of `U` so
/// far (`prev`, `ws.len()` rows of `kp`), the new row `u_k`, row `j` of `G`,
/// the rows' weights `ws`, the multiplier `c`, and the correlations with
/// their magnitudes.
pub(super) struct Step<'a, F> {
    pub(super) prev: &'a [F],
    pub(super) uk: &'a mut [F],
    pub(super) grow: &'a [F],
    pub(super) ws: &'a [F],
    pub(super) c: F,
    pub(super) alpha: &'a mut [F],
    pub(super) cabs: &'a mut [F],
}

impl<F> Step<'_, F> {
    /// `kp` (the length of `u_k`), after checking that it is a multiple of
    /// [`W`] and that every slice holds what the step reads: the intrinsics
    /// kernels index by raw pointers within these bounds.
    pub(super) fn checked_kp(&self) -> usize {
        let kp = self.uk.len();
        assert!(kp.is_multiple_of(W), "rows padded to {W} atoms");
        assert!(self.grow.len() >= kp && self.alpha.len() >= kp && self.cabs.len() >= kp);
        assert!(self.prev.len() >= self.ws.len() * kp);
        kp
    }
}

impl Float for f64 {
    const NEG_ONE: f64 = -1.0;
    const EXACT: bool = true;
    /// The tracked difference carries rounding of a few `eps ||x||^2`
    /// (1e-16); below 1e-8 it has lost half its digits.
    const TRUST: f64 = 1e-8;
    const REDO: f64 = 0.0;
    /// An atom within about 1e-4 rad of the span of those chosen before it:
    /// the Gram matrix squares the condition number, so its coefficients
    /// lose digits that refinement wins back ([`tol::OMP_ILL_PIVOT_F64`],
    /// shared with the CUDA kernel).
    const ILL: f64 = tol::OMP_ILL_PIVOT_F64;
    /// Each step gains about `-log10(cond(G) eps)` digits, two or more at any
    /// angle above 1e-7 rad.
    const REFINE_STEPS: usize = 3;
    const REFINE_MORE: usize = 13;
    const MIN_XX: f64 = 0.0;
    const MAX_XX: f64 = f64::INFINITY;
    /// The contract's [`omp_zero_correlation`]: the signal stops there.
    #[inline(always)]
    fn floor(n: usize, x_norm: f64) -> f64 {
        omp_zero_correlation(n, x_norm)
    }
    /// 32 atoms x [`GROUP`] signals: 128 f64 accumulators (16 AVX-512
    /// registers), the shape of the f32 copy (for f64 no faster than 8).
    #[inline(always)]
    fn alpha0(d: &[f64], n: usize, kp: usize, xs: &[f64], out: &mut [f64]) {
        alpha0_blocks::<f64, 32, 16>(d, n, kp, xs, out)
    }
    /// 64 entries: 8 AVX-512 registers of `u_k`, enough chains for two
    /// multiply-adds a cycle.
    #[inline(always)]
    fn step(s: &mut Step<'_, f64>) {
        step_blocks::<f64, 64, 32, 16>(s)
    }
    /// 8 lanes: one 512-bit vector.
    #[inline(always)]
    fn argmax(c: &[f64]) -> (usize, f64) {
        let m = lane_max::<f64, 8>(c);
        let m = halve::<f64, 1>(&halve::<f64, 2>(&halve::<f64, 4>(&m)));
        (first_index::<f64, 8>(c, m[0]), m[0])
    }
}

impl Float for f32 {
    const NEG_ONE: f32 = -1.0;
    const EXACT: bool = false;
    /// The tracked difference carries rounding of up to a few `1e-6
    /// ||x||^2` (f32 eps, `k` steps of length-`n` sums); below `1e-4
    /// ||x||^2` that is over a percent of what is measured, so it is measured
    /// (the contract's f32 residual floor is `1e-5 ||x||^2`).
    const TRUST: f64 = 1e-4;
    /// An atom within about 0.03 rad of the span: in f32 the correlations
    /// updated through such a pivot carry errors of about `1e-7 / L_kk`
    /// times `||r||` (3e-6 here), and worse below; the f32 tie window is
    /// `1e-4` relative. Such a signal is coded in f64 instead
    /// ([`tol::OMP_F32_REDO_PIVOT`], shared with the wgpu shader).
    const REDO: f32 = tol::OMP_F32_REDO_PIVOT as f32;
    /// Below 0.1 (cond(G_II) of tens to 1e3) the f32 coefficients `L^-T z`
    /// may be off by up to about `cond(G) eps_f32` (1e-4, against the
    /// contract's 1e-3): one f64 refinement step (gaining about four digits
    /// with the f32 factor `L`) puts them at f64-solver level.
    const ILL: f32 = 1e-1;
    const REFINE_STEPS: usize = 1;
    /// The f32 loop refines only above [`Float::REDO`] (conditions up to
    /// 1e3): one step suffices.
    const REFINE_MORE: usize = 0;
    /// Squares of numbers from 1e-15 to 1e15 stay far from f32 underflow
    /// and overflow (1e-38, 3e38) in every product of the loop.
    const MIN_XX: f64 = 1e-30;
    const MAX_XX: f64 = 1e30;
    /// The contract's floor formula with f32's epsilon (`64 sqrt(n)
    /// eps_f32 ||x||`, 6e-5 `||x||` at n = 64): far above the f32 loop's
    /// rounding of a correlation (about `sqrt(n) eps_f32 ||x||` per sum, a
    /// duplicate of a chosen atom lands near 1e-7 `||x||`), so whether such a
    /// correlation is zero is decided by the f64 loop, with the contract's
    /// f64 floor, never by f32 rounding.
    #[inline(always)]
    fn floor(n: usize, x_norm: f64) -> f64 {
        64.0 * (n.max(1) as f64).sqrt() * f32::EPSILON as f64 * x_norm
    }
    /// 64 atoms x [`GROUP`] signals: 256 f32 accumulators (16 AVX-512
    /// registers): 16 chains hide the FMA latency with room for the loop's
    /// own work (8, the bare minimum at two FMAs a cycle, was 12% slower).
    #[inline(always)]
    fn alpha0(d: &[f32], n: usize, kp: usize, xs: &[f32], out: &mut [f32]) {
        alpha0_blocks::<f32, 64, 32>(d, n, kp, xs, out)
    }
    /// 128 entries: 8 AVX-512 registers of `u_k` (see the f64 copy).
    #[inline(always)]
    fn step(s: &mut Step<'_, f32>) {
        step_blocks::<f32, 128, 64, 32>(s)
    }
    /// 16 lanes: one 512-bit vector.
    #[inline(always)]
    fn argmax(c: &[f32]) -> (usize, f32) {
        let m = lane_max::<f32, 16>(c);
        let m = halve::<f32, 1>(&halve::<f32, 2>(&halve::<f32, 4>(&halve::<f32, 8>(&m))));
        (first_index::<f32, 16>(c, m[0]), m[0])
    }
    #[inline(always)]
    fn step_argmax(isa: Isa, s: &mut Step<'_, f32>) -> (usize, f32) {
        #[cfg(target_arch = "x86_64")]
        match isa {
            // SAFETY: `Isa::Avx512` is chosen only where the CPU has
            // AVX-512F and FMA (`Isa::detect`).
            Isa::Avx512 => return unsafe { super::avx512::step_argmax(s) },
            // SAFETY: likewise AVX2 and FMA.
            Isa::Avx2 => return unsafe { super::avx2::step_argmax(s) },
            Isa::Baseline => {}
        }
        let _ = isa;
        Self::step(s);
        Self::argmax(s.cabs)
    }
}

/// Which compiled copy of the hot loops to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    /// AVX-512F and FMA (512-bit f64 vectors).
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX2 and FMA (256-bit).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Whatever the build target guarantees (SSE2 on x86-64).
    Baseline,
}

impl Isa {
    /// The widest copy this CPU runs.
    pub(super) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx2;
            }
        }
        Isa::Baseline
    }

    /// Every copy this CPU runs (for tests that compare them).
    #[cfg(test)]
    pub(super) fn available() -> Vec<Self> {
        let mut v = vec![Isa::Baseline];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                v.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("fma")
            {
                v.push(Isa::Avx512);
            }
        }
        v
    }
}

/// Everything about the dictionary and the rule that all signals share.
pub(super) struct Prepared<F> {
    /// Signal length.
    n: usize,
    /// Atoms padded up to a multiple of [`W`] (the padding atoms are zero).
    kp: usize,
    /// `D` row-major `n x kp`, zero-padded: the layout `alpha0` streams.
    d: Aligned<F>,
    /// `D^T`, `k x n`: atom `j` contiguous, for explicit residuals (widened
    /// to f64 there, exactly: `F` holds the input type or wider).
    dt: Aligned<F>,
    /// `G = D^T D`, `k x kp` (rows padded with zeros).
    g: Aligned<F>,
    max_atoms: usize,
    eps: Option<f64>,
    pub(super) isa: Isa,
    /// Whether a group's signals are coded in lockstep (the default) or one
    /// after the other (tests compare the two).
    pub(super) lockstep: bool,
}

impl<F: Float> Prepared<F> {
    /// Converts the dictionary to `F` (exactly: `F` is `T` or wider) and
    /// computes its Gram matrix (in parallel on the current rayon pool when
    /// `parallel`) for the kernel copy `isa` (`None`: detect; a forced copy
    /// must be one that [`Isa::detect`] allows). Errors only when `G` does
    /// not fit in memory.
    pub(super) fn new<T: Scalar>(
        dict: &Dictionary<T>,
        rule: StopRule,
        isa: Option<Isa>,
        parallel: bool,
    ) -> Result<Self> {
        let (n, k) = (dict.n(), dict.atoms());
        let kp = k.div_ceil(W) * W;
        let isa = isa.unwrap_or_else(Isa::detect);
        let mut d = Aligned::new(n * kp, F::ZERO);
        let mut dt = Aligned::new(k * n, F::ZERO);
        for (i, row) in dict.data().chunks_exact(k.max(1)).take(n).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                d[i * kp + j] = F::from_f64(v.to_f64());
                dt[j * n + i] = F::from_f64(v.to_f64());
            }
        }
        let len = k.checked_mul(kp).ok_or(Error::TooLarge {
            field: "atoms^2 (Gram matrix)",
            value: k as u128 * kp as u128,
            limit: usize::MAX as u128,
        })?;
        let g = Aligned::try_new(len, F::ZERO).ok_or_else(|| Error::OutOfMemory {
            bytes: len as u64 * std::mem::size_of::<F>() as u64,
            detail: format!("Gram matrix of {k} atoms for Batch-OMP"),
        })?;
        let mut p = Self {
            n,
            kp,
            d,
            dt,
            g,
            max_atoms: rule.max_atoms(n, k),
            eps: rule.error_target(),
            isa,
            lockstep: true,
        };
        p.gram(parallel);
        Ok(p)
    }

    /// `G = D^T D`, row `j` computed as `alpha0` of the signal `x = d_j` by the
    /// very kernel that computes the signals' `alpha0`: so a signal equal to
    /// an atom gets `alpha0_j == G_jj` bit for bit, and its residual after
    /// one step is zero up to the rounding of `alpha0_j / G_jj`, as in exact
    /// arithmetic.
    fn gram(&mut self, parallel: bool) {
        use rayon::prelude::*;
        let (n, kp) = (self.n, self.kp);
        if kp == 0 {
            return;
        }
        let (d, dt, isa) = (&self.d, &self.dt, self.isa);
        let rows = |(c, rows): (usize, &mut [F])| {
            let m = rows.len() / kp;
            let mut xs = vec![F::ZERO; GROUP * n];
            xs[..m * n].copy_from_slice(&dt[c * GROUP * n..(c * GROUP + m) * n]);
            let mut out = vec![F::ZERO; GROUP * kp];
            alpha0_dispatch(isa, d, n, kp, &xs, &mut out);
            rows.copy_from_slice(&out[..m * kp]);
        };
        if parallel {
            self.g.par_chunks_mut(GROUP * kp).enumerate().for_each(rows);
        } else {
            self.g.chunks_mut(GROUP * kp).enumerate().for_each(rows);
        }
    }

    /// The scale of signal `x` (input type `T`): the f64 loop scales
    /// signals outside [`OMP_WINDOW_F64`] (see [`SignalScale`]); the f32 loop
    /// never does, it hands signals outside its own range to the f64 loop
    /// ([`Float::MIN_XX`], [`Float::MAX_XX`]).
    fn scale_of<T: Scalar>(x: &[T]) -> SignalScale {
        if F::EXACT {
            SignalScale::of(x, OMP_WINDOW_F64)
        } else {
            SignalScale::ONE
        }
    }
}

/// The f64 loop's dictionary for the signals that the f32 loop hands over,
/// prepared by the first one that needs it (most calls never do) and shared
/// by all threads.
pub(super) struct Wide<'a, T> {
    dict: &'a Dictionary<T>,
    rule: StopRule,
    isa: Isa,
    prep: OnceLock<Option<Prepared<f64>>>,
}

impl<'a, T: Scalar> Wide<'a, T> {
    pub(super) fn new(dict: &'a Dictionary<T>, rule: StopRule, isa: Isa) -> Self {
        Self {
            dict,
            rule,
            isa,
            prep: OnceLock::new(),
        }
    }

    /// The f64 [`Prepared`]. Its Gram matrix is computed sequentially: this
    /// runs inside a rayon task, and a parallel loop here could steal another
    /// chunk's task, which would wait on this very `OnceLock`.
    fn get(&self) -> Result<&Prepared<f64>> {
        self.prep
            .get_or_init(|| Prepared::new(self.dict, self.rule, Some(self.isa), false).ok())
            .as_ref()
            .ok_or_else(|| {
                let k = self.dict.atoms();
                Error::OutOfMemory {
                    bytes: (k as u64) * (k.div_ceil(W) * W) as u64 * 8,
                    detail: format!("f64 Gram matrix of {k} atoms for Batch-OMP"),
                }
            })
    }
}

/// One thread's buffers, reused for every signal it codes.
pub(super) struct Scratch<F> {
    /// `GROUP x n` signals converted to `F`.
    xs: Aligned<F>,
    /// `GROUP x kp` correlations `D^T x`.
    a0: Aligned<F>,
    /// One per signal of a group (see [`rows_impl`]).
    work: Vec<Work<F>>,
    /// The f64 loop's buffers, made on first need (f32 only).
    wide: Option<Box<Scratch<f64>>>,
}

/// Per-signal buffers of the OMP loop.
struct Work<F> {
    /// The correlations `alpha = D^T r`, updated in place.
    alpha: Aligned<F>,
    /// `|alpha|` per atom, `-1` for atoms already chosen.
    cabs: Aligned<F>,
    /// `U = G_{:,I} L^-T diag(L)`, one row of `kp` per chosen atom; grown on
    /// demand.
    u: Aligned<F>,
    /// `1 / L_tt`.
    inv_l: Vec<F>,
    /// The weights of the rows of `U` in the next row: `L_kt / L_tt`.
    ws: Vec<F>,
    /// `L` packed by rows (row `t` holds `t + 1` entries); grown on demand, so
    /// it is only as large as the longest code so far needs.
    l: Vec<F>,
    /// `L^-1 alpha0_I`.
    z: Vec<F>,
    /// The coefficients `L^-T z`.
    gamma: Vec<F>,
    /// The chosen atoms, in order.
    sel: Vec<usize>,
    /// An explicit residual (f64).
    r: Vec<f64>,
    /// The coefficients in f64, refined in place.
    g64: Vec<f64>,
    /// [`refine`]'s right-hand side and correction.
    c64: Vec<f64>,
    d64: Vec<f64>,
    /// The signal's scale and its error target in the scaled units.
    scale: SignalScale,
    eps: Option<f64>,
    /// The loop's state between [`select`] and [`update`]: atoms chosen so
    /// far, whether a pivot was small enough to refine, `||x||^2` (f64 and
    /// `F`), the selection floor, `||z||^2`, the atom just chosen and its
    /// step's multiplier `z_k / L_kk`.
    count: usize,
    ill: bool,
    xx: f64,
    xxf: F,
    floor: f64,
    zz: F,
    j: usize,
    c: F,
    /// The best atom of the current `cabs` and its `|alpha|`, found by
    /// [`begin`] or by the previous [`update`].
    next: (usize, F),
}

impl<F: Float> Work<F> {
    fn new(p: &Prepared<F>) -> Self {
        let m = p.max_atoms;
        Self {
            alpha: Aligned::new(p.kp, F::ZERO),
            cabs: Aligned::new(p.kp, F::ZERO),
            u: Aligned::new(0, F::ZERO),
            l: Vec::new(),
            z: vec![F::ZERO; m],
            gamma: vec![F::ZERO; m],
            inv_l: vec![F::ZERO; m],
            ws: vec![F::ZERO; m],
            sel: vec![0; m],
            r: vec![0.0; p.n],
            g64: vec![0.0; m],
            c64: vec![0.0; m],
            d64: vec![0.0; m],
            scale: SignalScale::ONE,
            eps: None,
            count: 0,
            ill: false,
            xx: 0.0,
            xxf: F::ZERO,
            floor: 0.0,
            zz: F::ZERO,
            j: 0,
            c: F::ZERO,
            next: (0, F::ZERO),
        }
    }
}

impl<F: Float> Work<F> {
    /// The stop rules checked between steps: the error target (scaled), a
    /// zero residual, the atom budget.
    fn stops(&self, p: &Prepared<F>, r2: f64, count: usize) -> bool {
        self.eps.is_some_and(|e| r2 <= e) || r2 <= 0.0 || count >= p.max_atoms
    }
}

impl<F: Float> Scratch<F> {
    pub(super) fn new(p: &Prepared<F>) -> Self {
        Self {
            xs: Aligned::new(GROUP * p.n, F::ZERO),
            a0: Aligned::new(GROUP * p.kp, F::ZERO),
            work: (0..GROUP).map(|_| Work::new(p)).collect(),
            wide: None,
        }
    }
}

/// The codes of one chunk of consecutive signals.
pub(super) struct Chunk<T> {
    /// Atoms per signal.
    pub(super) counts: Vec<u32>,
    pub(super) atoms: Vec<u32>,
    pub(super) coefs: Vec<T>,
    pub(super) residual_norm2: Vec<T>,
}

/// Codes the signals `rows` of `signals`; errors only when a signal needs
/// the f64 loop and its Gram matrix does not fit in memory.
pub(super) fn encode_rows<T: Scalar, F: Float>(
    p: &Prepared<F>,
    wide: &Wide<'_, T>,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch<F>,
) -> Result<Chunk<T>> {
    match p.isa {
        // SAFETY: `Isa::detect` found the feature on this CPU.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { rows_avx512(p, wide, signals, rows, s) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { rows_avx2(p, wide, signals, rows, s) },
        Isa::Baseline => rows_impl(p, wide, signals, rows, s),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn rows_avx512<T: Scalar, F: Float>(
    p: &Prepared<F>,
    wide: &Wide<'_, T>,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch<F>,
) -> Result<Chunk<T>> {
    rows_impl(p, wide, signals, rows, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2<T: Scalar, F: Float>(
    p: &Prepared<F>,
    wide: &Wide<'_, T>,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch<F>,
) -> Result<Chunk<T>> {
    rows_impl(p, wide, signals, rows, s)
}

fn alpha0_dispatch<F: Float>(isa: Isa, d: &[F], n: usize, kp: usize, xs: &[F], out: &mut [F]) {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn avx512<F: Float>(d: &[F], n: usize, kp: usize, xs: &[F], out: &mut [F]) {
        F::alpha0(d, n, kp, xs, out)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2<F: Float>(d: &[F], n: usize, kp: usize, xs: &[F], out: &mut [F]) {
        F::alpha0(d, n, kp, xs, out)
    }
    match isa {
        // SAFETY: `Isa::detect` found the feature on this CPU.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { avx512(d, n, kp, xs, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { avx2(d, n, kp, xs, out) },
        Isa::Baseline => F::alpha0(d, n, kp, xs, out),
    }
}

#[inline(always)]
fn rows_impl<T: Scalar, F: Float>(
    p: &Prepared<F>,
    wide: &Wide<'_, T>,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch<F>,
) -> Result<Chunk<T>> {
    let (n, kp, lockstep) = (p.n, p.kp, p.lockstep);
    let count = rows.len();
    let mut out = Chunk {
        counts: Vec::with_capacity(count),
        atoms: Vec::with_capacity(count * p.max_atoms.min(64)),
        coefs: Vec::with_capacity(count * p.max_atoms.min(64)),
        residual_norm2: Vec::with_capacity(count),
    };
    let mut i = rows.start;
    while i < rows.end {
        let m = GROUP.min(rows.end - i);
        let mut scale = [SignalScale::ONE; GROUP];
        for q in 0..GROUP {
            let x = &mut s.xs[q * n..(q + 1) * n];
            if q < m {
                let row = signals.row(i + q);
                scale[q] = Prepared::<F>::scale_of(row);
                for (xv, &v) in x.iter_mut().zip(row) {
                    *xv = F::from_f64(scale[q].apply(v.to_f64()));
                }
            } else {
                x.fill(F::ZERO);
            }
        }
        F::alpha0(&p.d, n, kp, &s.xs, &mut s.a0);
        let (xs, a0) = (&s.xs, &s.a0);
        let x = |q: usize| &xs[q * n..(q + 1) * n];
        let mut state = [State::Done; GROUP];
        for (q, w) in s.work[..m].iter_mut().enumerate() {
            state[q] = begin(p, &a0[q * kp..(q + 1) * kp], sumsq(x(q)), scale[q], w);
        }
        // The group's signals step `lanes` at a time in lockstep: their
        // steps are independent chains of dependent scalar work (argmax,
        // pivot, divisions) that the core overlaps when they sit side by
        // side. Two measured faster than one and than four (whose rows of
        // `U` no longer fit in L1 together).
        let lanes = if lockstep { LANES } else { 1 };
        for g0 in (0..m).step_by(lanes) {
            let g1 = (g0 + lanes).min(m);
            while state[g0..g1].contains(&State::Go) {
                for (q, w) in s.work[g0..g1].iter_mut().enumerate() {
                    let q = g0 + q;
                    if state[q] == State::Go {
                        state[q] = select(p, x(q), w);
                    }
                }
                for (q, w) in s.work[g0..g1].iter_mut().enumerate() {
                    let q = g0 + q;
                    if state[q] == State::Go {
                        update(p, w);
                    }
                }
            }
        }
        for (q, w) in s.work[..m].iter_mut().enumerate() {
            if state[q] == State::Done {
                finish(p, x(q), w, &mut out);
            } else {
                recode(wide, signals.row(i + q), &mut s.wide, &mut out)?;
            }
        }
        i += m;
    }
    Ok(out)
}

/// Codes the signal `x` with the f64 loop (for a signal the f32 loop handed
/// over): exactly what the f64 kernel computes for `x` widened to f64.
#[inline(always)]
fn recode<T: Scalar>(
    wide: &Wide<'_, T>,
    x: &[T],
    s: &mut Option<Box<Scratch<f64>>>,
    out: &mut Chunk<T>,
) -> Result<()> {
    let p = wide.get()?;
    let s = s.get_or_insert_with(|| Box::new(Scratch::new(p)));
    let (n, kp) = (p.n, p.kp);
    // Slots 1.. of the group stay zero: only slot 0 is ever written.
    let scale = Prepared::<f64>::scale_of(x);
    for (xv, &v) in s.xs[..n].iter_mut().zip(x) {
        *xv = scale.apply(v.to_f64());
    }
    f64::alpha0(&p.d, n, kp, &s.xs, &mut s.a0);
    let xx = sumsq(&s.xs[..n]);
    let done = code_signal(p, &s.xs[..n], &s.a0[..kp], xx, scale, &mut s.work[0], out);
    debug_assert!(done, "the f64 loop codes every signal");
    Ok(())
}

/// `out[q] = D^T xs[q]` for the [`GROUP`] signals `xs` (`GROUP x n`), in
/// blocks of `A` atoms (the last ones, when `kp` is not a multiple of `A`,
/// in blocks of `A / 2`): each entry a sequential sum over `i` from 0, so
/// that the result does not depend on the block size.
#[inline(always)]
fn alpha0_blocks<F: Float, const A: usize, const H: usize>(
    d: &[F],
    n: usize,
    kp: usize,
    xs: &[F],
    out: &mut [F],
) {
    const { assert!(2 * H == A) };
    let whole = kp / A * A;
    alpha0_cols::<F, A>(d, n, kp, 0..whole, xs, out);
    alpha0_cols::<F, H>(d, n, kp, whole..kp, xs, out);
}

/// [`alpha0_blocks`] for the atoms `cols` (a multiple of `A` long), in
/// blocks of `A`.
#[inline(always)]
fn alpha0_cols<F: Float, const A: usize>(
    d: &[F],
    n: usize,
    kp: usize,
    cols: Range<usize>,
    xs: &[F],
    out: &mut [F],
) {
    let xq: [&[F]; GROUP] = std::array::from_fn(|q| &xs[q * n..(q + 1) * n]);
    for c in cols.step_by(A) {
        let mut acc = [[F::ZERO; A]; GROUP];
        for i in 0..n {
            // The slice has exactly A elements, so the conversion cannot fail.
            #[allow(clippy::unwrap_used)]
            let drow: &[F; A] = d[i * kp + c..i * kp + c + A].try_into().unwrap();
            for q in 0..GROUP {
                let xv = xq[q][i];
                for l in 0..A {
                    acc[q][l] = xv.mul_add(drow[l], acc[q][l]);
                }
            }
        }
        for q in 0..GROUP {
            out[q * kp + c..q * kp + c + A].copy_from_slice(&acc[q]);
        }
    }
}

/// `||x||^2` in f64: entry `i` goes to partial sum `i % 8`, each a
/// sequential sum, and the eight are added in a fixed tree. Eight
/// independent chains instead of one (a 64-entry signal was 256 cycles of
/// FMA latency, twice per signal); the order is fixed, so every compiled
/// copy gives the same bits.
#[inline(always)]
fn sumsq<F: Float>(x: &[F]) -> f64 {
    let mut s = [0.0f64; 8];
    let mut chunks = x.chunks_exact(8);
    for ch in &mut chunks {
        for l in 0..8 {
            let v = ch[l].to_f64();
            s[l] = v.mul_add(v, s[l]);
        }
    }
    for (l, &v) in chunks.remainder().iter().enumerate() {
        let v = v.to_f64();
        s[l] = v.mul_add(v, s[l]);
    }
    ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}

/// `||x - sum_t coef(t) d_{sel[t]}||^2` in f64, with the residual formed in
/// `r`.
#[inline(always)]
fn residual2<F: Float>(
    p: &Prepared<F>,
    x: &[F],
    sel: &[usize],
    coef: impl Fn(usize) -> f64,
    r: &mut [f64],
) -> f64 {
    let n = p.n;
    for (ri, &xi) in r.iter_mut().zip(x) {
        *ri = xi.to_f64();
    }
    for (t, &j) in sel.iter().enumerate() {
        let g = coef(t);
        for (ri, &dij) in r.iter_mut().zip(&p.dt[j * n..(j + 1) * n]) {
            *ri = (-g).mul_add(dij.to_f64(), *ri);
        }
    }
    sumsq(r)
}

/// Per lane of `V`, the largest entry of `c` (length a multiple of `2 V`),
/// never below -1: two sets of lanes take the even and the odd blocks (two
/// independent chains), then the larger of the two per lane. Comparisons
/// are exact and NaN is never taken, so the order does not matter.
#[inline(always)]
fn lane_max<F: Float, const V: usize>(c: &[F]) -> [F; V] {
    let mut m0 = [F::NEG_ONE; V];
    let mut m1 = [F::NEG_ONE; V];
    for ch in c.chunks_exact(2 * V) {
        for l in 0..V {
            m0[l] = if ch[l] > m0[l] { ch[l] } else { m0[l] };
            m1[l] = if ch[V + l] > m1[l] { ch[V + l] } else { m1[l] };
        }
    }
    std::array::from_fn(|l| if m1[l] > m0[l] { m1[l] } else { m0[l] })
}

/// One level of the tree over the lanes: the larger of lanes `l` and `l + H`.
#[inline(always)]
fn halve<F: Float, const H: usize>(m: &[F]) -> [F; H] {
    std::array::from_fn(|l| if m[l + H] > m[l] { m[l + H] } else { m[l] })
}

/// The smallest index of `c` (length a multiple of `2 V`) holding `best`
/// (`u32::MAX as usize` if none does), without branches: per lane, the
/// blocks are visited last to first and a hit overwrites the lane's index,
/// so each lane ends with its first hit; the even and the odd blocks in two
/// sets of lanes (two chains of half the length, as in [`lane_max`]); then
/// the least over all lanes. (A scan that stops at the first block with a
/// hit mispredicts its exit once per step and its bit mask compiled to
/// scalar code.)
#[inline(always)]
fn first_index<F: Float, const V: usize>(c: &[F], best: F) -> usize {
    let mut i0 = [u32::MAX; V];
    let mut i1 = [u32::MAX; V];
    for (b, ch) in c.chunks_exact(2 * V).enumerate().rev() {
        for l in 0..V {
            let base = (2 * b * V + l) as u32;
            i0[l] = if ch[l] == best { base } else { i0[l] };
            i1[l] = if ch[V + l] == best {
                base + V as u32
            } else {
                i1[l]
            };
        }
    }
    i0.into_iter().chain(i1).fold(u32::MAX, u32::min) as usize
}

/// [`Float::step`] in blocks of `B` entries, then (when `kp` is not a multiple of
/// `B`) of `B / 2` and `B / 4`, which covers any multiple of [`W`].
#[inline(always)]
fn step_blocks<F: Float, const B: usize, const B2: usize, const B4: usize>(s: &mut Step<'_, F>) {
    const { assert!(B == 2 * B2 && B2 == 2 * B4 && B2.is_multiple_of(W) && W.is_multiple_of(B4)) };
    let kp = s.uk.len();
    let (a, b) = (kp / B * B, kp / B2 * B2);
    step_cols::<F, B>(s, 0..a);
    step_cols::<F, B2>(s, a..b);
    step_cols::<F, B4>(s, b..kp);
}

/// [`Float::step`] for the entries `cols` (a multiple of `B` long), in blocks of
/// `B`: per entry the same operations in the same order whatever `B`.
#[inline(always)]
fn step_cols<F: Float, const B: usize>(s: &mut Step<'_, F>, cols: Range<usize>) {
    let (kp, c) = (s.uk.len(), s.c);
    for b in cols.step_by(B) {
        // Each slice has exactly B elements, so the conversions cannot fail.
        #[allow(clippy::unwrap_used)]
        let mut acc: [F; B] = s.grow[b..b + B].try_into().unwrap();
        for (t, &w) in s.ws.iter().enumerate() {
            #[allow(clippy::unwrap_used)]
            let row: &[F; B] = s.prev[t * kp + b..t * kp + b + B].try_into().unwrap();
            let w = -w;
            for l in 0..B {
                acc[l] = w.mul_add(row[l], acc[l]);
            }
        }
        s.uk[b..b + B].copy_from_slice(&acc);
        #[allow(clippy::unwrap_used)]
        let (alpha, cabs): (&mut [F; B], &mut [F; B]) = (
            (&mut s.alpha[b..b + B]).try_into().unwrap(),
            (&mut s.cabs[b..b + B]).try_into().unwrap(),
        );
        for l in 0..B {
            let a = (-c).mul_add(acc[l], alpha[l]);
            alpha[l] = a;
            cabs[l] = if cabs[l] == F::NEG_ONE {
                F::NEG_ONE
            } else {
                a.abs()
            };
        }
    }
}

/// `gamma = L^-T z` by back substitution, column by column so that each step
/// reads a contiguous row of the packed `L` (a factor in `F`, the vectors in
/// `G`: the loop's type, or f64 for [`refine`]).
#[inline(always)]
fn back_substitute<F: Float, G: Float>(l: &[F], z: &[G], gamma: &mut [G]) {
    let m = z.len();
    gamma[..m].copy_from_slice(z);
    for u in (0..m).rev() {
        let row = &l[u * (u + 1) / 2..][..u + 1];
        let g = gamma[u] / G::from_f64(row[u].to_f64());
        gamma[u] = g;
        for (a, &lut) in gamma[..u].iter_mut().zip(&row[..u]) {
            *a -= G::from_f64(lut.to_f64()) * g;
        }
    }
}

/// One step of iterative refinement, in f64, of the coefficients `g64` (the
/// first `count`): `g += (L L^T)^-1 D_I^T (x - D_I g)`, with the residual
/// formed explicitly. Used only for ill-conditioned signals, where
/// `gamma = L^-T z` from the Gram matrix has lost digits (the selection is
/// not affected: it is final by then). With an f32 factor `L` each step
/// still gains about `-log10(cond(G) eps_f32)` digits.
fn refine<F: Float>(p: &Prepared<F>, x: &[F], w: &mut Work<F>, count: usize) {
    let n = p.n;
    let g = &w.g64;
    residual2(p, x, &w.sel[..count], |t| g[t], &mut w.r);
    // c = D_I^T r, then L y = c (forward), then L^T delta = y (back).
    for t in 0..count {
        let j = w.sel[t];
        let mut c = 0.0f64;
        for (&dij, &ri) in p.dt[j * n..(j + 1) * n].iter().zip(&w.r) {
            c = dij.to_f64().mul_add(ri, c);
        }
        w.c64[t] = c;
    }
    for u in 0..count {
        let row = &w.l[u * (u + 1) / 2..][..u + 1];
        let mut v = w.c64[u];
        for t in 0..u {
            v = (-row[t].to_f64()).mul_add(w.c64[t], v);
        }
        w.c64[u] = v / row[u].to_f64();
    }
    back_substitute(&w.l, &w.c64[..count], &mut w.d64);
    for t in 0..count {
        w.g64[t] += w.d64[t];
    }
}

/// Batch-OMP on one signal `x` (already scaled by `scale`) with `a0 = D^T x`
/// and `xx = ||x||^2`;
/// appends its code to `out` and returns `true`, or returns `false`
/// (appending nothing) when the f32 loop hands the signal to the f64 loop.
///
/// With `L L^T = G_II`, `z = L^-1 alpha0_I` and `V = G_{:,I} L^-T`, the
/// correlations are `alpha = alpha0 - V z`, the new row of `L` for atom `j`
/// is row `j` of `V`, `z_k = alpha_j / L_kk` and `||r||^2 = ||x||^2 - ||z||^2`.
/// So a step costs one new row of `V` (`K x k`) and no triangular solve;
/// `gamma = L^-T z` is solved once at the end. `V` is kept unscaled, as
/// `U = V diag(L)` (row `t` of `U` is `L_tt` times row `t` of `V`), so that the
/// divisions by `L_tt` fall on scalars, not on whole rows.
///
/// The loop is [`begin`], then [`select`] and [`update`] in turn, then
/// [`finish`]; [`rows_impl`] runs the same calls for a group of signals in
/// lockstep, which changes no signal's arithmetic.
#[inline(always)]
fn code_signal<T: Scalar, F: Float>(
    p: &Prepared<F>,
    x: &[F],
    a0: &[F],
    xx: f64,
    scale: SignalScale,
    w: &mut Work<F>,
    out: &mut Chunk<T>,
) -> bool {
    let mut state = begin(p, a0, xx, scale, w);
    while state == State::Go {
        state = select(p, x, w);
        if state == State::Go {
            update(p, w);
        }
    }
    if state == State::Wide {
        return false;
    }
    finish(p, x, w, out);
    true
}

/// Where a signal's loop stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Select another atom ([`select`]; after a select: [`update`] first).
    Go,
    /// The code is complete: [`finish`] it.
    Done,
    /// The f32 loop hands the signal to the f64 loop.
    Wide,
}

/// Starts a signal's loop: the stop and range checks on `||x||^2`, and
/// `alpha = |cabs| = a0` (all of the signal scaled by `scale`, with the error
/// target scaled alike).
#[inline(always)]
fn begin<F: Float>(
    p: &Prepared<F>,
    a0: &[F],
    xx: f64,
    scale: SignalScale,
    w: &mut Work<F>,
) -> State {
    w.count = 0;
    w.ill = false;
    w.xx = xx;
    w.scale = scale;
    w.eps = p.eps.map(|e| scale.apply2(e));
    w.floor = F::floor(p.n, xx.sqrt());
    if w.stops(p, xx, 0) {
        return State::Done;
    }
    if !(F::MIN_XX..=F::MAX_XX).contains(&xx) {
        return State::Wide;
    }
    w.xxf = F::from_f64(xx);
    w.zz = F::ZERO;
    w.alpha.copy_from_slice(a0);
    for (c, &a) in w.cabs.iter_mut().zip(a0) {
        *c = a.abs();
    }
    w.next = F::argmax(&w.cabs);
    State::Go
}

/// One step's scalar part: the best atom, its row of `L` and pivot, `z_k`,
/// and the stop rule. [`State::Go`] leaves the vector part to [`update`].
#[inline(always)]
fn select<F: Float>(p: &Prepared<F>, x: &[F], w: &mut Work<F>) -> State {
    let kp = p.kp;
    let count = w.count;
    let (j, best) = w.next;
    if best.to_f64() <= w.floor {
        // f64: zero up to rounding, nothing left that the dictionary can
        // reach, or a duplicate of a chosen atom (reference rule 4).
        return if F::EXACT { State::Done } else { State::Wide };
    }
    // Row `count` of L is L^-1 G_{I,j}: entry j of the rows of V, U[t][j] / L_tt,
    // written straight into the packed L (grown first if need be).
    let base = count * (count + 1) / 2;
    if w.l.len() < base + count + 1 {
        w.l.resize(base + count + 1, F::ZERO);
    }
    let (lrow, ws, inv_l) = (
        &mut w.l[base..base + count + 1],
        &mut w.ws[..count],
        &w.inv_l[..count],
    );
    let mut ww = F::ZERO;
    for (((lt, wt), &il), urow) in lrow.iter_mut().zip(ws).zip(inv_l).zip(w.u.chunks_exact(kp)) {
        let v = urow[j] * il;
        *lt = v;
        *wt = v * il;
        ww += v * v;
    }
    let gjj = p.g[j * kp + j];
    let d2 = gjj - ww;
    if d2.to_f64().is_nan() || d2 <= F::ZERO || d2 < F::REDO * gjj {
        // f64: `d_j` in the span of the chosen atoms up to rounding: the
        // Cholesky update has no real square root. The reference's rule 5
        // (an exactly singular least-squares system).
        return if F::EXACT { State::Done } else { State::Wide };
    }
    w.ill |= d2 < F::ILL * gjj;
    let lkk = d2.sqrt();
    lrow[count] = lkk;
    let inv_lkk = F::from_f64(1.0) / lkk;
    w.inv_l[count] = inv_lkk;
    let zk = w.alpha[j] / lkk;
    w.z[count] = zk;
    w.sel[count] = j;
    w.cabs[j] = F::NEG_ONE;
    let count = count + 1;
    w.count = count;
    w.zz += zk * zk;
    if count >= p.max_atoms {
        return State::Done;
    }
    let mut r2 = (w.xxf - w.zz).to_f64();
    if r2 <= F::TRUST * w.xx {
        back_substitute(&w.l, &w.z[..count], &mut w.gamma);
        let gamma = &w.gamma;
        r2 = residual2(p, x, &w.sel[..count], |t| gamma[t].to_f64(), &mut w.r);
    }
    if w.stops(p, r2, count) {
        return State::Done;
    }
    w.j = j;
    w.c = zk * inv_lkk;
    State::Go
}

/// One step's vector part, after a [`select`] that chose atom `w.j`: the new
/// row of `U`, `alpha` and `cabs` (chosen atoms marked).
#[inline(always)]
fn update<F: Float>(p: &Prepared<F>, w: &mut Work<F>) {
    let (kp, count, j) = (p.kp, w.count, w.j);
    if w.u.len() < count * kp {
        w.u.resize(count * kp, F::ZERO);
    }
    let (prev, uk) = w.u[..count * kp].split_at_mut((count - 1) * kp);
    let mut s = Step {
        prev,
        uk,
        grow: &p.g[j * kp..(j + 1) * kp],
        ws: &w.ws[..count - 1],
        c: w.c,
        alpha: &mut w.alpha,
        cabs: &mut w.cabs,
    };
    w.next = F::step_argmax(p.isa, &mut s);
}

/// Ends a signal whose loop is [`State::Done`]: `gamma = L^-T z`, refined if
/// ill-conditioned, and its code and residual appended to `out`, scaled back
/// to the signal's units ([`SignalScale::coef`], [`SignalScale::residual`]:
/// an infinite coefficient makes `||r||^2` infinite).
#[inline(always)]
fn finish<T: Scalar, F: Float>(p: &Prepared<F>, x: &[F], w: &mut Work<F>, out: &mut Chunk<T>) {
    let count = w.count;
    back_substitute(&w.l, &w.z[..count], &mut w.gamma);
    for (g, &v) in w.g64[..count].iter_mut().zip(&w.gamma[..count]) {
        *g = v.to_f64();
    }
    if w.ill {
        let max_abs = |v: &[f64]| v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        let mut last = f64::INFINITY;
        for step in 1..=F::REFINE_STEPS + F::REFINE_MORE {
            refine(p, x, w, count);
            let dn = max_abs(&w.d64[..count]);
            let more = dn > 1e-10 * max_abs(&w.g64[..count]) && dn <= 0.5 * last;
            if step >= F::REFINE_STEPS && !more {
                break;
            }
            last = dn;
        }
    }
    let scale = w.scale;
    out.atoms.extend(w.sel[..count].iter().map(|&j| j as u32));
    let first = out.coefs.len();
    out.coefs
        .extend(w.g64[..count].iter().map(|&g| scale.coef::<T>(g)));
    out.counts.push(count as u32);
    // The residual of the code as returned: coefficients rounded to T.
    let coefs = &out.coefs[first..];
    let r2 = if coefs.iter().all(|c| c.is_finite()) {
        residual2(
            p,
            x,
            &w.sel[..count],
            |t| scale.apply(coefs[t].to_f64()),
            &mut w.r,
        )
    } else {
        f64::INFINITY
    };
    out.residual_norm2.push(scale.residual(coefs, r2));
}
