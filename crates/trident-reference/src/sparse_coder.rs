//! SparseCoder for [`ReferenceBackend`]: plain OMP, one signal at a time, in f64.
//!
//! Each step computes every correlation `c_j = <d_j, r>` afresh, picks the
//! unselected atom with the largest `|c_j|` (ties: smaller j), refits all
//! coefficients by least squares on the selected atoms (modified Gram-Schmidt
//! on `[D_S x]`, from scratch each step) and forms `r = x - D_S g` explicitly. No
//! Gram matrix, no Cholesky updates: that is Batch-OMP's business, and this is
//! what it must agree with.
//!
//! Stop rules, checked before each pick, in this order:
//! 1. `||r||^2 <= eps` under `Error` / `SparsityOrError` (so `||x||^2 <= eps`
//!    gives zero atoms);
//! 2. `||r||^2 == 0` exactly;
//! 3. the atom budget [`StopRule::max_atoms`] (`Sparsity(T)` and `min(n, K)`);
//! 4. after computing correlations: the best `|c_j|` is zero up to rounding,
//!    at most [`trident_core::omp_zero_correlation`] (nothing left that the
//!    dictionary can reach; an exact duplicate of a selected atom, whose
//!    correlation rounding leaves at a few `eps ||x||`, is never picked, so
//!    its coefficients cannot blow up to 1e15; also the case K = 0);
//! 5. after the pick: if the least-squares system is exactly singular (the
//!    pick lies in the span of the previous atoms, possible only through
//!    rounding), the pick is undone and coding stops.
//!
//! [`omp_path`] exposes the same computation with, per step, the best and
//! second-best `|c_j|`, so a verifier can tell near-ties apart.

use nalgebra::DMatrix;
use trident_core::{
    Dictionary, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule, omp_zero_correlation,
    validate,
};

use crate::ReferenceBackend;

/// The dictionary in f64, column-major: atom `j` is `cols[j*n..(j+1)*n]`.
pub(crate) struct DictF64 {
    pub(crate) n: usize,
    pub(crate) atoms: usize,
    pub(crate) cols: Vec<f64>,
}

impl DictF64 {
    pub(crate) fn new<T: Scalar>(d: &Dictionary<T>) -> Self {
        let (n, k) = (d.n(), d.atoms());
        let data = d.data();
        let mut cols = vec![0.0; n * k];
        for i in 0..n {
            for j in 0..k {
                cols[j * n + i] = data[i * k + j].to_f64();
            }
        }
        Self { n, atoms: k, cols }
    }

    pub(crate) fn atom(&self, j: usize) -> &[f64] {
        &self.cols[j * self.n..(j + 1) * self.n]
    }

    /// `D_S` as an `n x |S|` matrix.
    pub(crate) fn sub(&self, sel: &[u32]) -> DMatrix<f64> {
        DMatrix::from_fn(self.n, sel.len(), |i, t| self.atom(sel[t] as usize)[i])
    }

    /// `x - D_S g`.
    pub(crate) fn residual(&self, x: &[f64], sel: &[u32], g: &[f64]) -> Vec<f64> {
        let mut r = x.to_vec();
        for (&j, &gj) in sel.iter().zip(g) {
            for (ri, dij) in r.iter_mut().zip(self.atom(j as usize)) {
                *ri -= gj * dij;
            }
        }
        r
    }
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
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
    /// [`trident_core::omp_zero_correlation`]), or no atom is left.
    ZeroCorrelation,
    /// The picked atom made the least-squares system exactly singular; it was
    /// dropped (`OmpPath::dropped` names it).
    Singular,
}

/// One greedy step of [`omp_path`].
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
    /// (`best - second <= rel * best`): then the contract accepts either choice. The contract's
    /// `rel` is [`crate::certify::omp_tie_rel`] (1e-4 for f32, 1e-10 for f64).
    pub fn is_near_tie(&self, rel: f64) -> bool {
        match self.second {
            Some(s) => self.best - s <= rel * self.best,
            None => false,
        }
    }
}

/// The full trace of plain OMP on one signal, all in f64.
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
}

impl OmpPath {
    /// The selected atoms in order.
    pub fn atoms(&self) -> Vec<u32> {
        self.steps.iter().map(|s| s.atom).collect()
    }
}

/// Least squares `min ||D_S g - x||` by modified Gram-Schmidt on the
/// augmented matrix `[D_S x]`: backward stable for least squares (Bjorck 1967,
/// numerically equivalent to Householder QR), and exact where the atoms are
/// orthonormal coordinate vectors, so an identity dictionary recovers
/// coefficients bit for bit (Householder reflections would not). `None` when
/// an atom's remainder after orthogonalisation is exactly zero.
fn least_squares(d: &DictF64, sel: &[u32], x: &[f64]) -> Option<Vec<f64>> {
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

fn omp_f64(d: &DictF64, x: &[f64], rule: StopRule) -> OmpPath {
    let max_atoms = rule.max_atoms(d.n, d.atoms);
    let eps = rule.error_target();
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
    }
}

/// Plain OMP on one signal `x` (length `dict.n()`), with the per-step trace a
/// verifier needs to judge near-ties. Exactly what [`ReferenceBackend`]'s
/// `encode` computes for that signal (before rounding to `T`).
///
/// Errors: as [`SparseCoder::encode`] (wrong length, non-finite `x`, bad rule).
///
/// ```
/// use trident_core::{Dictionary, StopRule};
/// use trident_reference::omp_path;
/// let d = Dictionary::new(2, 2, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap();
/// let p = omp_path(&d, &[0.5, 3.0], StopRule::Sparsity(1)).unwrap();
/// assert_eq!((p.steps[0].atom, p.steps[0].best, p.steps[0].second), (1, 3.0, Some(0.5)));
/// assert_eq!(p.residual_norm2, 0.25);
/// ```
pub fn omp_path<T: Scalar>(dict: &Dictionary<T>, x: &[T], rule: StopRule) -> Result<OmpPath> {
    validate::encode(dict, &MatRef::dense(x, 1, x.len())?, &rule)?;
    let d = DictF64::new(dict);
    let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    Ok(omp_f64(&d, &xf, rule))
}

impl<T: Scalar> SparseCoder<T> for ReferenceBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        validate::encode(dict, &signals, &rule)?;
        let d = DictF64::new(dict);
        let l = signals.rows();
        let mut codes = SparseCodes {
            offsets: Vec::with_capacity(l + 1),
            atoms: Vec::new(),
            coefs: Vec::new(),
            residual_norm2: Vec::with_capacity(l),
        };
        codes.offsets.push(0);
        for i in 0..l {
            let x: Vec<f64> = signals.row(i).iter().map(|v| v.to_f64()).collect();
            let p = omp_f64(&d, &x, rule);
            codes.atoms.extend(p.steps.iter().map(|s| s.atom));
            codes.coefs.extend(p.coefs.iter().map(|&g| T::from_f64(g)));
            codes.residual_norm2.push(T::from_f64(p.residual_norm2));
            codes.offsets.push(codes.atoms.len());
        }
        Ok(codes)
    }
}
