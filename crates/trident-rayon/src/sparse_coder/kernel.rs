//! The Batch-OMP loop for one chunk of signals, in f64.
//!
//! The hot loops (`alpha0`, `step`, `argmax`) are written so that the
//! compiler vectorizes them; they are compiled three times (AVX-512 + FMA,
//! AVX2 + FMA, baseline) and picked once per call by run-time detection.
//! Their multiply-adds are written as `mul_add`, a single rounding by
//! definition: the SIMD copies use the FMA instructions, and the baseline
//! copy gets the same correctly rounded result from libm's `fma` where the
//! target has no instruction (slowly, on CPUs older than 2013). Rust never
//! fuses or reorders float operations on its own, so all three copies
//! produce the same bits, and FMA halves the arithmetic of the hot loops.

use std::ops::Range;

use trident_core::{Dictionary, Error, MatRef, Result, Scalar, StopRule, omp_zero_correlation};

/// The padding unit of K: a multiple of every block width below.
pub(super) const W: usize = 32;
/// Lanes of the `argmax` blocks.
const V: usize = 8;
/// Atoms per block of `alpha0`: with [`GROUP`] signals, 64 f64
/// accumulators (8 AVX-512 registers), enough chains to hide add latency.
const A: usize = 16;
/// Signals whose `alpha0 = D^T x` is computed together, so that each row of
/// `D` is loaded once per group rather than once per signal.
pub(super) const GROUP: usize = 4;
/// Below `TRUST * ||x||^2` the tracked `||x||^2 - ||z||^2` has lost most of
/// its digits to cancellation; stop decisions then use the explicit residual.
const TRUST: f64 = 1e-8;

/// A pivot `L_kk^2` below `ILL` times `G_jj` (an atom within about 1e-4 rad
/// of the span of those chosen before it) marks the signal ill-conditioned:
/// the Gram matrix squares the condition number, so its coefficients are
/// then refined against the explicit residual (see [`refine`]).
const ILL: f64 = 1e-8;
/// Refinement steps for an ill-conditioned signal: each gains about
/// `-log10(cond(G) eps)` digits, two or more at any angle above 1e-7 rad.
const REFINE_STEPS: usize = 3;

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
pub(super) struct Prepared {
    /// Signal length.
    n: usize,
    /// Atoms padded up to a multiple of [`W`] (the padding atoms are zero).
    kp: usize,
    /// `D` row-major `n x kp`, zero-padded: the layout `alpha0` streams.
    d: Vec<f64>,
    /// `D^T`, `k x n`: atom `j` contiguous, for explicit residuals.
    dt: Vec<f64>,
    /// `G = D^T D`, `k x kp` (rows padded with zeros).
    g: Vec<f64>,
    max_atoms: usize,
    eps: Option<f64>,
    pub(super) isa: Isa,
}

impl Prepared {
    /// Widens the dictionary and computes its Gram matrix (in parallel, on the
    /// current rayon pool) for the kernel copy `isa` (`None`: detect; a forced
    /// copy must be one that [`Isa::detect`] allows). Errors only when `G`
    /// does not fit in memory.
    pub(super) fn new<T: Scalar>(
        dict: &Dictionary<T>,
        rule: StopRule,
        isa: Option<Isa>,
    ) -> Result<Self> {
        let (n, k) = (dict.n(), dict.atoms());
        let kp = k.div_ceil(W) * W;
        let isa = isa.unwrap_or_else(Isa::detect);
        let mut d = vec![0.0f64; n * kp];
        let mut dt = vec![0.0f64; k * n];
        for (i, row) in dict.data().chunks_exact(k.max(1)).take(n).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                d[i * kp + j] = v.to_f64();
                dt[j * n + i] = v.to_f64();
            }
        }
        let len = k.checked_mul(kp).ok_or(Error::TooLarge {
            field: "atoms^2 (Gram matrix)",
            value: k as u128 * kp as u128,
            limit: usize::MAX as u128,
        })?;
        let mut g: Vec<f64> = Vec::new();
        g.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
            bytes: len as u64 * 8,
            detail: format!("Gram matrix of {k} atoms for Batch-OMP"),
        })?;
        g.resize(len, 0.0);
        let mut p = Self {
            n,
            kp,
            d,
            dt,
            g,
            max_atoms: rule.max_atoms(n, k),
            eps: rule.error_target(),
            isa,
        };
        p.gram();
        Ok(p)
    }

    /// `G = D^T D`, row `j` computed as `alpha0` of the signal `x = d_j` by the
    /// very kernel that computes the signals' `alpha0`: so a signal equal to
    /// an atom gets `alpha0_j == G_jj == ||x||^2` bit for bit, and its
    /// residual after one step is exactly zero, as in exact arithmetic.
    fn gram(&mut self) {
        use rayon::prelude::*;
        let (n, kp) = (self.n, self.kp);
        if kp == 0 {
            return;
        }
        let (d, dt, isa) = (&self.d, &self.dt, self.isa);
        self.g
            .par_chunks_mut(GROUP * kp)
            .enumerate()
            .for_each(|(c, rows)| {
                let m = rows.len() / kp;
                let mut xs = vec![0.0f64; GROUP * n];
                xs[..m * n].copy_from_slice(&dt[c * GROUP * n..(c * GROUP + m) * n]);
                let mut out = vec![0.0f64; GROUP * kp];
                alpha0_dispatch(isa, d, n, kp, &xs, &mut out);
                rows.copy_from_slice(&out[..m * kp]);
            });
    }

    fn stops(&self, r2: f64, count: usize) -> bool {
        self.eps.is_some_and(|e| r2 <= e) || r2 <= 0.0 || count >= self.max_atoms
    }
}

/// One thread's buffers, reused for every signal it codes.
pub(super) struct Scratch {
    /// `GROUP x n` signals widened to f64.
    xs: Vec<f64>,
    /// `GROUP x kp` correlations `D^T x`.
    a0: Vec<f64>,
    work: Work,
}

/// Per-signal buffers of the OMP loop.
struct Work {
    /// The correlations `alpha = D^T r`, updated in place.
    alpha: Vec<f64>,
    /// `|alpha|` per atom, `-1` for atoms already chosen.
    cabs: Vec<f64>,
    /// `U = G_{:,I} L^-T diag(L)`, one row of `kp` per chosen atom; grown on
    /// demand.
    u: Vec<f64>,
    /// `1 / L_tt`.
    inv_l: Vec<f64>,
    /// The weights of the rows of `U` in the next row: `L_kt / L_tt`.
    ws: Vec<f64>,
    /// `L` packed by rows (row `t` holds `t + 1` entries); grown on demand, so
    /// it is only as large as the longest code so far needs.
    l: Vec<f64>,
    /// `L^-1 alpha0_I`.
    z: Vec<f64>,
    /// The coefficients `L^-T z`.
    gamma: Vec<f64>,
    /// The new row of `L`.
    w: Vec<f64>,
    /// The chosen atoms, in order.
    sel: Vec<usize>,
    /// An explicit residual.
    r: Vec<f64>,
}

impl Scratch {
    pub(super) fn new(p: &Prepared) -> Self {
        let m = p.max_atoms;
        Self {
            xs: vec![0.0; GROUP * p.n],
            a0: vec![0.0; GROUP * p.kp],
            work: Work {
                alpha: vec![0.0; p.kp],
                cabs: vec![0.0; p.kp],
                u: Vec::new(),
                l: Vec::new(),
                z: vec![0.0; m],
                gamma: vec![0.0; m],
                w: vec![0.0; m],
                inv_l: vec![0.0; m],
                ws: vec![0.0; m],
                sel: vec![0; m],
                r: vec![0.0; p.n],
            },
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

/// Codes the signals `rows` of `signals`.
pub(super) fn encode_rows<T: Scalar>(
    p: &Prepared,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch,
) -> Chunk<T> {
    match p.isa {
        // SAFETY: `Isa::detect` found the feature on this CPU.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { rows_avx512(p, signals, rows, s) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { rows_avx2(p, signals, rows, s) },
        Isa::Baseline => rows_impl(p, signals, rows, s),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn rows_avx512<T: Scalar>(
    p: &Prepared,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch,
) -> Chunk<T> {
    rows_impl(p, signals, rows, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2<T: Scalar>(
    p: &Prepared,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch,
) -> Chunk<T> {
    rows_impl(p, signals, rows, s)
}

fn alpha0_dispatch(isa: Isa, d: &[f64], n: usize, kp: usize, xs: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn avx512(d: &[f64], n: usize, kp: usize, xs: &[f64], out: &mut [f64]) {
        alpha0(d, n, kp, xs, out)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(d: &[f64], n: usize, kp: usize, xs: &[f64], out: &mut [f64]) {
        alpha0(d, n, kp, xs, out)
    }
    match isa {
        // SAFETY: `Isa::detect` found the feature on this CPU.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { avx512(d, n, kp, xs, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { avx2(d, n, kp, xs, out) },
        Isa::Baseline => alpha0(d, n, kp, xs, out),
    }
}

#[inline(always)]
fn rows_impl<T: Scalar>(
    p: &Prepared,
    signals: &MatRef<'_, T>,
    rows: Range<usize>,
    s: &mut Scratch,
) -> Chunk<T> {
    let (n, kp) = (p.n, p.kp);
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
        for q in 0..GROUP {
            let x = &mut s.xs[q * n..(q + 1) * n];
            if q < m {
                for (xv, &v) in x.iter_mut().zip(signals.row(i + q)) {
                    *xv = v.to_f64();
                }
            } else {
                x.fill(0.0);
            }
        }
        alpha0(&p.d, n, kp, &s.xs, &mut s.a0);
        for q in 0..m {
            code_signal(
                p,
                &s.xs[q * n..(q + 1) * n],
                &s.a0[q * kp..(q + 1) * kp],
                &mut s.work,
                &mut out,
            );
        }
        i += m;
    }
    out
}

/// `out[q] = D^T xs[q]` for the [`GROUP`] signals `xs` (`GROUP x n`): each
/// entry a sequential sum over `i` from 0.0, the same order [`sumsq`] uses.
#[inline(always)]
fn alpha0(d: &[f64], n: usize, kp: usize, xs: &[f64], out: &mut [f64]) {
    for c in (0..kp).step_by(A) {
        let mut acc = [[0.0f64; A]; GROUP];
        for i in 0..n {
            // The slice has exactly A elements, so the conversion cannot fail.
            #[allow(clippy::unwrap_used)]
            let drow: &[f64; A] = d[i * kp + c..i * kp + c + A].try_into().unwrap();
            for q in 0..GROUP {
                let xv = xs[q * n + i];
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

#[inline(always)]
fn sumsq(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for &v in x {
        s = v.mul_add(v, s);
    }
    s
}

/// `||x - sum_t coef(t) d_{sel[t]}||^2`, with the residual formed in `r`.
#[inline(always)]
fn residual2(
    p: &Prepared,
    x: &[f64],
    sel: &[usize],
    coef: impl Fn(usize) -> f64,
    r: &mut [f64],
) -> f64 {
    let n = p.n;
    r.copy_from_slice(x);
    for (t, &j) in sel.iter().enumerate() {
        let g = coef(t);
        for (ri, &dij) in r.iter_mut().zip(&p.dt[j * n..(j + 1) * n]) {
            *ri = (-g).mul_add(dij, *ri);
        }
    }
    sumsq(r)
}

/// The largest entry of `c` (length a multiple of [`V`]) and the smallest
/// index holding it: per lane the first block that reaches the lane's
/// maximum (strict `>`), then the smallest index over the lanes that hold the
/// overall maximum.
#[inline(always)]
fn argmax(c: &[f64]) -> (usize, f64) {
    let mut m = [-1.0f64; V];
    let mut at = [0.0f64; V];
    for (b, ch) in c.chunks_exact(V).enumerate() {
        let bf = b as f64;
        for l in 0..V {
            let gt = ch[l] > m[l];
            m[l] = if gt { ch[l] } else { m[l] };
            at[l] = if gt { bf } else { at[l] };
        }
    }
    let best = m.iter().fold(-1.0f64, |a, &b| if b > a { b } else { a });
    let mut j = usize::MAX;
    for l in 0..V {
        if m[l] == best {
            j = j.min(at[l] as usize * V + l);
        }
    }
    (j, best)
}

/// One Batch-OMP step's vector work: the new row `u_k = G_{j,:} - sum_t
/// ws_t u_t` of `U` (see [`code_signal`]), then `alpha -= c u_k` and
/// `cabs = |alpha|`.
///
/// Written as whole-row passes over `uk` (in L1), up to four rows of `U` per
/// pass with the subtractions in order of `t`; the first pass reads `G`'s row
/// and the last one also updates `alpha`, so a step touches `uk` as few times
/// as possible. The loop vectorizer handles this form reliably in all three
/// compiled copies, where register-blocked accumulator arrays spilled.
#[inline(always)]
fn step(
    prev: &[f64],
    uk: &mut [f64],
    grow: &[f64],
    ws: &[f64],
    c: f64,
    alpha: &mut [f64],
    cabs: &mut [f64],
) {
    let kp = uk.len();
    let row = |t: usize| &prev[t * kp..(t + 1) * kp];
    let m = ws.len();
    if m == 0 {
        return pass::<0, true, true>(uk, grow, [], [], c, alpha, cabs);
    }
    let mut t = 0;
    while t < m {
        let r = (m - t).min(4);
        let (first, last) = (t == 0, t + r == m);
        macro_rules! go {
            ($r:literal) => {{
                let rows: [&[f64]; $r] = std::array::from_fn(|i| row(t + i));
                let w: [f64; $r] = std::array::from_fn(|i| ws[t + i]);
                match (first, last) {
                    (true, true) => pass::<$r, true, true>(uk, grow, rows, w, c, alpha, cabs),
                    (true, false) => pass::<$r, true, false>(uk, grow, rows, w, c, alpha, cabs),
                    (false, true) => pass::<$r, false, true>(uk, grow, rows, w, c, alpha, cabs),
                    (false, false) => pass::<$r, false, false>(uk, grow, rows, w, c, alpha, cabs),
                }
            }};
        }
        match r {
            1 => go!(1),
            2 => go!(2),
            3 => go!(3),
            _ => go!(4),
        }
        t += r;
    }
}

/// One pass of [`step`] over `R` rows of `U`.
#[inline(always)]
fn pass<const R: usize, const FIRST: bool, const LAST: bool>(
    uk: &mut [f64],
    grow: &[f64],
    rows: [&[f64]; R],
    ws: [f64; R],
    c: f64,
    alpha: &mut [f64],
    cabs: &mut [f64],
) {
    let n = uk.len();
    let (grow, alpha, cabs) = (&grow[..n], &mut alpha[..n], &mut cabs[..n]);
    let rows = rows.map(|r| &r[..n]);
    for l in 0..n {
        let mut v = if FIRST { grow[l] } else { uk[l] };
        for i in 0..R {
            v = (-ws[i]).mul_add(rows[i][l], v);
        }
        uk[l] = v;
        if LAST {
            let a = (-c).mul_add(v, alpha[l]);
            alpha[l] = a;
            cabs[l] = a.abs();
        }
    }
}

/// `gamma = L^-T z` by back substitution, column by column so that each step
/// reads a contiguous row of the packed `L`.
#[inline(always)]
fn back_substitute(l: &[f64], z: &[f64], gamma: &mut [f64]) {
    let m = z.len();
    gamma[..m].copy_from_slice(z);
    for u in (0..m).rev() {
        let row = &l[u * (u + 1) / 2..][..u + 1];
        let g = gamma[u] / row[u];
        gamma[u] = g;
        for (a, &lut) in gamma[..u].iter_mut().zip(&row[..u]) {
            *a -= lut * g;
        }
    }
}

/// One step of iterative refinement of `gamma` (the first `count`
/// coefficients): `gamma += (L L^T)^-1 D_I^T (x - D_I gamma)`, with the
/// residual formed explicitly. Used only for ill-conditioned signals, where
/// `gamma = L^-T z` from the Gram matrix has lost digits (the selection is
/// not affected: it is final by then).
fn refine(p: &Prepared, x: &[f64], w: &mut Work, count: usize) {
    let n = p.n;
    let gamma = &w.gamma;
    residual2(p, x, &w.sel[..count], |t| gamma[t], &mut w.r);
    // c = D_I^T r, then L y = c (forward), then L^T delta = y (back).
    for t in 0..count {
        let j = w.sel[t];
        let mut c = 0.0f64;
        for (&dij, &ri) in p.dt[j * n..(j + 1) * n].iter().zip(&w.r) {
            c = dij.mul_add(ri, c);
        }
        w.w[t] = c;
    }
    for u in 0..count {
        let row = &w.l[u * (u + 1) / 2..][..u + 1];
        let mut v = w.w[u];
        for t in 0..u {
            v = (-row[t]).mul_add(w.w[t], v);
        }
        w.w[u] = v / row[u];
    }
    back_substitute(&w.l, &w.w[..count], &mut w.ws);
    for t in 0..count {
        w.gamma[t] += w.ws[t];
    }
}

/// Batch-OMP on one signal `x` with `a0 = D^T x`; appends its code to `out`.
///
/// With `L L^T = G_II`, `z = L^-1 alpha0_I` and `V = G_{:,I} L^-T`, the
/// correlations are `alpha = alpha0 - V z`, the new row of `L` for atom `j`
/// is row `j` of `V`, `z_k = alpha_j / L_kk` and `||r||^2 = ||x||^2 - ||z||^2`.
/// So a step costs one new row of `V` (`K x k`) and no triangular solve;
/// `gamma = L^-T z` is solved once at the end. `V` is kept unscaled, as
/// `U = V diag(L)` (row `t` of `U` is `L_tt` times row `t` of `V`), so that the
/// divisions by `L_tt` fall on scalars, not on whole rows.
#[inline(always)]
fn code_signal<T: Scalar>(p: &Prepared, x: &[f64], a0: &[f64], w: &mut Work, out: &mut Chunk<T>) {
    let kp = p.kp;
    let xx = sumsq(x);
    let floor = omp_zero_correlation(p.n, xx.sqrt());
    let mut count = 0usize;
    let mut ill = false;
    if !p.stops(xx, 0) {
        w.alpha.copy_from_slice(a0);
        for (c, a) in w.cabs.iter_mut().zip(a0) {
            *c = a.abs();
        }
        let mut zz = 0.0f64;
        loop {
            let (j, best) = argmax(&w.cabs);
            if best <= floor {
                // Zero up to rounding: nothing left that the dictionary can
                // reach, or a duplicate of a chosen atom (reference rule 4).
                break;
            }
            // Row `count` of L is L^-1 G_{I,j}: entry j of the rows of V, U[t][j] / L_tt.
            let mut ww = 0.0f64;
            for t in 0..count {
                let v = w.u[t * kp + j] * w.inv_l[t];
                w.w[t] = v;
                w.ws[t] = v * w.inv_l[t];
                ww += v * v;
            }
            let gjj = p.g[j * kp + j];
            let d2 = gjj - ww;
            if d2.is_nan() || d2 <= 0.0 {
                // `d_j` in the span of the chosen atoms up to rounding: the
                // Cholesky update has no real square root. The reference's
                // rule 5 (an exactly singular least-squares system).
                break;
            }
            ill |= d2 < ILL * gjj;
            let lkk = d2.sqrt();
            let base = count * (count + 1) / 2;
            if w.l.len() < base + count + 1 {
                w.l.resize(base + count + 1, 0.0);
            }
            w.l[base..base + count].copy_from_slice(&w.w[..count]);
            w.l[base + count] = lkk;
            let inv_lkk = 1.0 / lkk;
            w.inv_l[count] = inv_lkk;
            let zk = w.alpha[j] / lkk;
            w.z[count] = zk;
            w.sel[count] = j;
            count += 1;
            zz += zk * zk;
            let mut r2 = xx - zz;
            if r2 <= TRUST * xx {
                back_substitute(&w.l, &w.z[..count], &mut w.gamma);
                let gamma = &w.gamma;
                r2 = residual2(p, x, &w.sel[..count], |t| gamma[t], &mut w.r);
            }
            if p.stops(r2, count) {
                break;
            }
            if w.u.len() < count * kp {
                w.u.resize(count * kp, 0.0);
            }
            let (prev, uk) = w.u[..count * kp].split_at_mut((count - 1) * kp);
            step(
                prev,
                uk,
                &p.g[j * kp..(j + 1) * kp],
                &w.ws[..count - 1],
                zk * inv_lkk,
                &mut w.alpha,
                &mut w.cabs,
            );
            for &s in &w.sel[..count] {
                w.cabs[s] = -1.0;
            }
        }
    }
    back_substitute(&w.l, &w.z[..count], &mut w.gamma);
    if ill {
        for _ in 0..REFINE_STEPS {
            refine(p, x, w, count);
        }
    }
    let coefs: &[f64] = &w.gamma[..count];
    out.atoms.extend(w.sel[..count].iter().map(|&j| j as u32));
    out.coefs.extend(coefs.iter().map(|&g| T::from_f64(g)));
    out.counts.push(count as u32);
    // The residual of the code as returned: coefficients rounded to T.
    let r2 = residual2(
        p,
        x,
        &w.sel[..count],
        |t| T::from_f64(coefs[t]).to_f64(),
        &mut w.r,
    );
    out.residual_norm2.push(T::from_f64(r2));
}
