//! What the OMP backends share beyond the contract's types:
//!
//! - [`SignalScale`]: the exact power-of-two scaling that keeps one signal's
//!   arithmetic away from the ends of the number range (an f64 signal of
//!   `1e200` has `||x||^2 = inf`, one of `1e-200` has `||x||^2 = 0`). Every
//!   backend codes `x 2^s` and scales the coefficients and `||r||^2` back
//!   (docs/semantics.md, SparseCoder, "The ends of the number range").
//! - [`plain_omp`]: plain OMP in f64 (least squares afresh each step), the
//!   reference's algorithm. It lives here, not in `trident-reference`, because
//!   the f32-only wgpu backend also runs it on the host for the signals its
//!   shader cannot settle in f32, and backends depend on this crate alone.

use crate::{Dictionary, Scalar, StopRule, omp_zero_correlation};

/// Signals whose largest `|x_i|` lies in `[2^-256, 2^256)` are coded as they
/// are by a backend that computes in f64; others are scaled into `[1, 2)`.
///
/// Inside the window nothing in the loop comes near f64's range: `||x||^2 <=
/// n 2^512`, coefficients of at most `1e16 ||x||` (an atom at the smallest
/// positive pivot, about `1e-32`), and quantities at rounding level
/// (`(eps ||x||)^2 >= 2^-618`) stay far above the subnormals, so the
/// contract's rounding-level decisions come out as they would at scale 1.
/// Every f32 value lies inside (f32 spans `2^-149 .. 2^128`), so f32 inputs
/// coded in f64 are never scaled.
pub const OMP_WINDOW_F64: i32 = 256;

/// The same window for arithmetic in f32 (`[2^-32, 2^32)`): `||x||^2 <= n
/// 2^64` and rounding-level quantities (`2^-48 ||x||^2 >= 2^-112`) stay
/// inside f32's normal range (`2^-126 .. 2^128`).
pub const OMP_WINDOW_F32: i32 = 32;

/// `x * 2^n`, exact wherever the result is a normal number and correctly
/// rounded otherwise (one rounding, into the subnormals or to infinity): the
/// C library's `scalbn`, written out because Rust's standard library has
/// none (`x * 2f64.powi(n)` is not it: `2^n` itself overflows or underflows
/// for `|n| > 1023`).
///
/// ```
/// # use trident_core::omp::scalbn;
/// assert_eq!(scalbn(3.0, -2), 0.75);
/// assert_eq!(scalbn(1.0, -1074), f64::from_bits(1));
/// assert_eq!(scalbn(f64::from_bits(1), 1074 + 1023), 2f64.powi(1023));
/// assert_eq!(scalbn(1e300, 100), f64::INFINITY);
/// ```
pub fn scalbn(x: f64, n: i32) -> f64 {
    if n == 0 {
        return x;
    }
    // 2^1023 and 2^-969 (= 2^-1022 * 2^53: keeps the intermediate normal, so
    // the only rounding is the last multiply's).
    let up = f64::from_bits(0x7fe0_0000_0000_0000);
    let down = f64::from_bits(0x0360_0000_0000_0000);
    let (mut y, mut n) = (x, n);
    if n > 1023 {
        y *= up;
        n -= 1023;
        if n > 1023 {
            y *= up;
            n -= 1023;
            n = n.min(1023);
        }
    } else if n < -1022 {
        y *= down;
        n += 1022 - 53;
        if n < -1022 {
            y *= down;
            n += 1022 - 53;
            n = n.max(-1022);
        }
    }
    y * f64::from_bits(((0x3ff + n) as u64) << 52)
}

/// `floor(log2 |x|)` for a finite non-zero `x`, subnormals included (the C
/// library's `ilogb`).
///
/// ```
/// # use trident_core::omp::ilogb;
/// assert_eq!((ilogb(1.0), ilogb(-3.0), ilogb(0.3)), (0, 1, -2));
/// assert_eq!(ilogb(f64::from_bits(1)), -1074);
/// ```
pub fn ilogb(x: f64) -> i32 {
    let b = x.to_bits() & !(1u64 << 63);
    let e = (b >> 52) as i32;
    if e == 0 {
        (63 - b.leading_zeros() as i32) - 1074
    } else {
        e - 1023
    }
}

/// The exact power of two `2^exp` by which OMP scales one signal before
/// coding it (see the module docs): `exp = 0` for a signal whose largest
/// `|x_i|` lies inside the working type's window ([`OMP_WINDOW_F64`],
/// [`OMP_WINDOW_F32`]) or is zero, so that such signals are coded bit for
/// bit as if there were no scaling; otherwise the largest scaled entry lies in
/// `[1, 2)`.
///
/// The coefficients come back as `g 2^-exp` and `||r||^2` as `r2 2^-2 exp`,
/// and an error target is compared as `eps 2^2 exp` (where that underflows to
/// 0 it acts as 0: no residual computed for such a signal can be told apart
/// from 0 at that level; where it overflows to infinity the target is met
/// before the first atom, as it is: `||x||^2` is far below `eps`).
///
/// ```
/// # use trident_core::omp::{SignalScale, OMP_WINDOW_F64};
/// let s = SignalScale::of(&[1e200f64, 3e199], OMP_WINDOW_F64);
/// assert!((1.0..2.0).contains(&s.apply(1e200)));
/// assert_eq!(s.undo(s.apply(3e199)), 3e199);
/// assert_eq!(SignalScale::of(&[1e-3f64, 5.0], OMP_WINDOW_F64).exp(), 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignalScale {
    exp: i32,
}

impl SignalScale {
    /// No scaling.
    pub const ONE: SignalScale = SignalScale { exp: 0 };

    /// The scale of a signal whose largest `|x_i|` is `max_abs`, for
    /// arithmetic whose window is `2^-window .. 2^window`.
    pub fn for_max(max_abs: f64, window: i32) -> Self {
        if max_abs == 0.0 || !max_abs.is_finite() {
            return Self::ONE;
        }
        let e = ilogb(max_abs);
        if (-window..window).contains(&e) {
            Self::ONE
        } else {
            Self { exp: -e }
        }
    }

    /// The scale of the signal `x` ([`SignalScale::for_max`] of its largest
    /// `|x_i|`).
    pub fn of<T: Scalar>(x: &[T], window: i32) -> Self {
        let m = x.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
        Self::for_max(m, window)
    }

    /// The exponent: the signal is coded as `x 2^exp`.
    pub fn exp(&self) -> i32 {
        self.exp
    }

    /// `true` for no scaling.
    pub fn is_one(&self) -> bool {
        self.exp == 0
    }

    /// A signal entry (or anything in its units) to the scaled units.
    pub fn apply(&self, v: f64) -> f64 {
        scalbn(v, self.exp)
    }

    /// A squared norm (an error target) to the scaled units.
    pub fn apply2(&self, v: f64) -> f64 {
        scalbn(v, 2 * self.exp)
    }

    /// A coefficient back to the signal's units.
    pub fn undo(&self, v: f64) -> f64 {
        scalbn(v, -self.exp)
    }

    /// A squared norm back to the signal's units.
    pub fn undo2(&self, v: f64) -> f64 {
        scalbn(v, -2 * self.exp)
    }

    /// The coefficient `g` (scaled units) as returned: back in the signal's
    /// units, rounded to `T` once (`inf` beyond `T`'s range, subnormal or 0
    /// below it).
    pub fn coef<T: Scalar>(&self, g: f64) -> T {
        T::from_f64(self.undo(g))
    }

    /// The `||r||^2` to report for a code whose coefficients, as returned,
    /// are `coefs`, with `r2` its squared residual in the scaled units: `inf`
    /// when a coefficient is infinite (beyond `T`'s range: the code cannot be
    /// evaluated in `T`), else `r2` back in the signal's units, rounded to `T`
    /// (`inf` beyond `T`'s range).
    pub fn residual<T: Scalar>(&self, coefs: &[T], r2: f64) -> T {
        if coefs.iter().any(|c| !c.is_finite()) {
            T::from_f64(f64::INFINITY)
        } else {
            T::from_f64(self.undo2(r2))
        }
    }
}

/// A dictionary in f64, column-major (atom `j` contiguous), for the f64
/// OMP of [`plain_omp`] and the certificates.
#[derive(Clone, Debug, PartialEq)]
pub struct OmpDict {
    n: usize,
    atoms: usize,
    cols: Vec<f64>,
}

impl OmpDict {
    /// `dict` widened to f64 (exactly) and transposed.
    pub fn new<T: Scalar>(dict: &Dictionary<T>) -> Self {
        let (n, k) = (dict.n(), dict.atoms());
        let data = dict.data();
        let mut cols = vec![0.0; n * k];
        for i in 0..n {
            for j in 0..k {
                cols[j * n + i] = data[i * k + j].to_f64();
            }
        }
        Self { n, atoms: k, cols }
    }

    /// Signal length.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of atoms.
    pub fn atoms(&self) -> usize {
        self.atoms
    }

    /// Atom `j`.
    pub fn atom(&self, j: usize) -> &[f64] {
        &self.cols[j * self.n..(j + 1) * self.n]
    }

    /// `x - D_S g`.
    pub fn residual(&self, x: &[f64], sel: &[u32], g: &[f64]) -> Vec<f64> {
        let mut r = x.to_vec();
        for (&j, &gj) in sel.iter().zip(g) {
            for (ri, dij) in r.iter_mut().zip(self.atom(j as usize)) {
                *ri -= gj * dij;
            }
        }
        r
    }
}

/// `sum a_i b_i`, sequentially.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Why OMP stopped adding atoms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OmpStop {
    /// `||r||^2 <= eps` under an error target.
    ErrorTarget,
    /// The residual is exactly zero.
    ZeroResidual,
    /// The atom budget is used up: `Sparsity(T)` or `min(n, K)`.
    MaxAtoms,
    /// The best remaining `|<d_j, r>|` is zero up to rounding (at most
    /// [`omp_zero_correlation`]), or no atom is left.
    ZeroCorrelation,
    /// The picked atom made the least-squares system exactly singular; it was
    /// dropped (`OmpPath::dropped` names it).
    Singular,
}

/// One greedy step of [`plain_omp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OmpStep {
    /// The atom picked: the unselected `j` with the largest `|<d_j, r>|`,
    /// ties to the smaller `j`.
    pub atom: u32,
    /// Its `|<d_j, r>|`, with `r` the residual before this step.
    pub best: f64,
    /// The largest `|<d_j, r>|` over the other unselected atoms; `None` when
    /// this atom was the only candidate.
    pub second: Option<f64>,
    /// `||r||^2` before this step.
    pub residual_norm2_before: f64,
}

impl OmpStep {
    /// `true` when the two best correlations are within `rel` of each other
    /// (`best - second <= rel * best`): then the contract accepts either
    /// choice (`rel` is the *OMP near tie* tolerance of the scalar,
    /// [`crate::tol::Omp::tie_rel`]).
    pub fn is_near_tie(&self, rel: f64) -> bool {
        match self.second {
            Some(s) => self.best - s <= rel * self.best,
            None => false,
        }
    }
}

/// The full trace of plain OMP on one signal, all in f64, in the units of
/// the scaled signal `x 2^scale.exp()` ([`SignalScale`]; for every signal
/// inside the f64 window the scale is 1 and these are the signal's own
/// units). [`OmpPath::code`] gives the code in the signal's units.
#[derive(Clone, Debug, PartialEq)]
pub struct OmpPath {
    /// The steps in selection order.
    pub steps: Vec<OmpStep>,
    /// Least-squares coefficients on the selected atoms, parallel to `steps`.
    pub coefs: Vec<f64>,
    /// Final `||x - D_S g||^2`.
    pub residual_norm2: f64,
    /// Why it stopped.
    pub stop: OmpStop,
    /// With [`OmpStop::Singular`], the atom that was picked and then dropped.
    pub dropped: Option<u32>,
    /// The power of two the signal was scaled by.
    pub scale: SignalScale,
}

impl OmpPath {
    /// The selected atoms in order.
    pub fn atoms(&self) -> Vec<u32> {
        self.steps.iter().map(|s| s.atom).collect()
    }

    /// The code in the signal's units, rounded to `T` once: the coefficients
    /// and the `||r||^2` to report ([`SignalScale::coef`],
    /// [`SignalScale::residual`]).
    pub fn code<T: Scalar>(&self) -> (Vec<T>, T) {
        let coefs: Vec<T> = self.coefs.iter().map(|&g| self.scale.coef(g)).collect();
        let r2 = self.scale.residual(&coefs, self.residual_norm2);
        (coefs, r2)
    }

    /// [`OmpPath::code`] with `||r||^2` measured for the coefficients as
    /// rounded to `T` (the contract's "residual of the code returned"; the
    /// reference reports the least-squares one), `x` being the signal this
    /// path coded, in its own units.
    pub fn rounded_code<T: Scalar>(&self, d: &OmpDict, x: &[f64]) -> (Vec<T>, T) {
        let coefs: Vec<T> = self.coefs.iter().map(|&g| self.scale.coef(g)).collect();
        if coefs.iter().any(|c| !c.is_finite()) {
            return (coefs, T::from_f64(f64::INFINITY));
        }
        let xs: Vec<f64> = x.iter().map(|&v| self.scale.apply(v)).collect();
        let g: Vec<f64> = coefs.iter().map(|c| self.scale.apply(c.to_f64())).collect();
        let r = d.residual(&xs, &self.atoms(), &g);
        let r2 = self.scale.residual(&coefs, dot(&r, &r));
        (coefs, r2)
    }
}

/// Least squares `min ||D_S g - x||` by modified Gram-Schmidt on the
/// augmented matrix `[D_S x]`: backward stable for least squares (Bjorck 1967,
/// numerically equivalent to Householder QR), and exact where the atoms are
/// orthonormal coordinate vectors, so an identity dictionary recovers
/// coefficients bit for bit (Householder reflections would not). `None` when
/// an atom's remainder after orthogonalisation is exactly zero.
fn least_squares(d: &OmpDict, sel: &[u32], x: &[f64]) -> Option<Vec<f64>> {
    let (n, s) = (d.n, sel.len());
    let mut q: Vec<Vec<f64>> = sel.iter().map(|&j| d.atom(j as usize).to_vec()).collect();
    let mut z = x.to_vec();
    // R row by row (upper triangle, row-major s x s) and Q^T x.
    let mut r = vec![0.0f64; s * s];
    let mut qtx = vec![0.0f64; s];
    for k in 0..s {
        let rkk = dot(&q[k], &q[k]).sqrt();
        if rkk == 0.0 {
            return None;
        }
        r[k * s + k] = rkk;
        q[k].iter_mut().for_each(|v| *v /= rkk);
        let (done, rest) = q.split_at_mut(k + 1);
        let qk = &done[k];
        for (jj, qj) in rest.iter_mut().enumerate() {
            let rkj = dot(qk, qj);
            r[k * s + k + 1 + jj] = rkj;
            for i in 0..n {
                qj[i] -= rkj * qk[i];
            }
        }
        let c = dot(qk, &z);
        qtx[k] = c;
        for i in 0..n {
            z[i] -= c * qk[i];
        }
    }
    // Back substitution R g = Q^T x.
    let mut g = vec![0.0f64; s];
    for k in (0..s).rev() {
        let tail: f64 = (k + 1..s).map(|j| r[k * s + j] * g[j]).sum();
        g[k] = (qtx[k] - tail) / r[k * s + k];
    }
    Some(g)
}

/// Plain OMP on one signal `x` (length `d.n()`, finite) under `rule`, in
/// f64: each step computes every correlation `c_j = <d_j, r>` afresh, picks
/// the unselected atom with the largest `|c_j|` (ties: smaller j), refits all
/// coefficients by least squares on the selected atoms (modified
/// Gram-Schmidt on `[D_S x]`, from scratch each step) and forms
/// `r = x - D_S g` explicitly. The signal is first scaled by
/// [`SignalScale::of`] with [`OMP_WINDOW_F64`] (so a signal of `1e200` or
/// `1e-200` is coded like one of 1) and the error target with it.
///
/// Stop rules, checked before each pick, in this order:
/// 1. `||r||^2 <= eps` under `Error` / `SparsityOrError` (so `||x||^2 <= eps`
///    gives zero atoms);
/// 2. `||r||^2 == 0` exactly;
/// 3. the atom budget [`StopRule::max_atoms`] (`Sparsity(T)` and `min(n, K)`);
/// 4. after computing correlations: the best `|c_j|` is zero up to rounding,
///    at most [`omp_zero_correlation`] (nothing left that the dictionary can
///    reach; an exact duplicate of a selected atom, whose correlation
///    rounding leaves at a few `eps ||x||`, is never picked, so its
///    coefficients cannot blow up to 1e15; also the case K = 0);
/// 5. after the pick: if the least-squares system is exactly singular (the
///    pick lies in the span of the previous atoms, possible only through
///    rounding), the pick is undone and coding stops.
///
/// ```
/// use trident_core::{Dictionary, StopRule};
/// use trident_core::omp::{OmpDict, plain_omp};
/// let d = OmpDict::new(&Dictionary::new(2, 2, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap());
/// let p = plain_omp(&d, &[1e200, 3e199], StopRule::Sparsity(2));
/// assert_eq!(p.atoms(), [0, 1]);
/// assert_eq!(p.code::<f64>(), (vec![1e200, 3e199], 0.0));
/// ```
pub fn plain_omp(d: &OmpDict, x: &[f64], rule: StopRule) -> OmpPath {
    let scale = SignalScale::of(x, OMP_WINDOW_F64);
    let scaled: Vec<f64>;
    let x = if scale.is_one() {
        x
    } else {
        scaled = x.iter().map(|&v| scale.apply(v)).collect();
        &scaled
    };
    let max_atoms = rule.max_atoms(d.n, d.atoms);
    let eps = rule.error_target().map(|e| scale.apply2(e));
    let mut sel: Vec<u32> = Vec::new();
    let mut chosen = vec![false; d.atoms];
    let mut steps: Vec<OmpStep> = Vec::new();
    let mut coefs: Vec<f64> = Vec::new();
    let mut r = x.to_vec();
    let mut r2 = dot(&r, &r);
    let floor = omp_zero_correlation(d.n, r2.sqrt());
    let mut dropped = None;
    let stop = loop {
        if eps.is_some_and(|e| r2 <= e) {
            break OmpStop::ErrorTarget;
        }
        if r2 == 0.0 {
            break OmpStop::ZeroResidual;
        }
        if sel.len() >= max_atoms {
            break OmpStop::MaxAtoms;
        }
        // Scan ascending j with a strict `>`, so the smaller j wins exact ties.
        let mut best: Option<(usize, f64)> = None;
        let mut second: Option<f64> = None;
        for j in (0..d.atoms).filter(|&j| !chosen[j]) {
            let c = dot(d.atom(j), &r).abs();
            match best {
                Some((_, b)) if c <= b => second = Some(second.map_or(c, |s| s.max(c))),
                _ => {
                    if let Some((_, b)) = best {
                        second = Some(second.map_or(b, |s| s.max(b)));
                    }
                    best = Some((j, c));
                }
            }
        }
        let Some((j, c)) = best.filter(|&(_, c)| c > floor) else {
            break OmpStop::ZeroCorrelation;
        };
        sel.push(j as u32);
        let Some(g) = least_squares(d, &sel, x) else {
            sel.pop();
            dropped = Some(j as u32);
            break OmpStop::Singular;
        };
        chosen[j] = true;
        steps.push(OmpStep {
            atom: j as u32,
            best: c,
            second,
            residual_norm2_before: r2,
        });
        r = d.residual(x, &sel, &g);
        r2 = dot(&r, &r);
        coefs = g;
    };
    OmpPath {
        steps,
        coefs,
        residual_norm2: r2,
        stop,
        dropped,
        scale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalbn_is_exact_and_rounds_once() {
        for &(x, n) in &[(1.5f64, 10), (1.5, -10), (-3.0, 1000), (1e-300, 700)] {
            assert_eq!(scalbn(x, n), x * 2f64.powi(n));
        }
        // Into the subnormals with one rounding: 1.5 * 2^-1074 is a tie,
        // rounded to even (2^-1073).
        assert_eq!(scalbn(1.5, -1074), f64::from_bits(2));
        assert_eq!(
            scalbn(f64::MAX, -2046),
            scalbn(scalbn(f64::MAX, -1023), -1023)
        );
        assert_eq!(scalbn(f64::MIN_POSITIVE, 2000), 2f64.powi(978));
        assert_eq!(scalbn(-1.0, 5000), f64::NEG_INFINITY);
        assert_eq!(scalbn(1.0, -5000), 0.0);
    }

    #[test]
    fn scale_puts_the_largest_entry_in_one_to_two() {
        for &m in &[1e300f64, 1e-300, f64::MAX, f64::from_bits(1), 3e-310] {
            let s = SignalScale::for_max(m, OMP_WINDOW_F64);
            assert!((1.0..2.0).contains(&s.apply(m)), "{m:e}");
            assert_eq!(s.undo(s.apply(m)), m);
        }
        for &m in &[0.0f64, 1.0, 2f64.powi(255), 2f64.powi(-256)] {
            assert!(SignalScale::for_max(m, OMP_WINDOW_F64).is_one(), "{m:e}");
        }
        assert!(!SignalScale::for_max(2f64.powi(256), OMP_WINDOW_F64).is_one());
        assert!(!SignalScale::for_max(2f64.powi(-257), OMP_WINDOW_F64).is_one());
    }

    /// A signal beyond the window is coded like the copy of it inside: the
    /// same atoms, coefficients and ||r||^2 up to the power of two.
    #[test]
    fn plain_omp_is_exact_under_the_scaling() {
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let dict = Dictionary::new(2, 3, vec![1.0f64, 0.0, s, 0.0, 1.0, s]).unwrap();
        let d = OmpDict::new(&dict);
        let x = [0.3f64, -1.7];
        let plain = plain_omp(&d, &x, StopRule::Sparsity(1));
        for k in [400, -500, 1000, -1070] {
            let xs: Vec<f64> = x.iter().map(|&v| scalbn(v, k)).collect();
            let p = plain_omp(&d, &xs, StopRule::Sparsity(1));
            assert!(!p.scale.is_one());
            assert_eq!(p.atoms(), plain.atoms());
            let (c, r2) = p.code::<f64>();
            assert_eq!(c, vec![scalbn(plain.coefs[0], k)]);
            assert_eq!(r2, scalbn(plain.residual_norm2, 2 * k));
        }
    }

    #[test]
    fn residual_is_infinite_when_a_coefficient_overflows() {
        let s = SignalScale::for_max(1e38, OMP_WINDOW_F32);
        assert_eq!(s.residual::<f32>(&[f32::INFINITY, 1.0], 0.0), f32::INFINITY);
        assert_eq!(s.residual::<f32>(&[1.0], 0.25), (s.undo2(0.25)) as f32);
    }
}
