//! SparseCoder for [`ReferenceBackend`]: plain OMP, one signal at a time, in f64.
//!
//! The algorithm is [`trident_core::omp::plain_omp`] (it lives in the core
//! crate because the wgpu backend runs it too, for the signals its f32 shader
//! cannot settle): each step computes every correlation `c_j = <d_j, r>`
//! afresh, picks the unselected atom with the largest `|c_j|` (ties: smaller
//! j), refits all coefficients by least squares on the selected atoms
//! (modified Gram-Schmidt on `[D_S x]`, from scratch each step) and forms
//! `r = x - D_S g` explicitly. No Gram matrix, no Cholesky updates: that is
//! Batch-OMP's business, and this is what it must agree with. Its doc
//! comment lists the stop rules.
//!
//! A signal whose largest entry lies outside `[2^-256, 2^256)` is coded as
//! `x 2^s` for the power of two that brings that entry into `[1, 2)`
//! ([`trident_core::omp::SignalScale`]), so `||x||^2` neither overflows nor
//! underflows; the coefficients and the least-squares `||r||^2` are scaled
//! back and rounded to `T` once (infinite where the true value is beyond
//! `T`'s range; `||r||^2` infinite too where a coefficient is).
//!
//! [`omp_path`] exposes the same computation with, per step, the best and
//! second-best `|c_j|`, so a verifier can tell near-ties apart.

use trident_core::omp::{OmpDict, plain_omp};
use trident_core::{
    Dictionary, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule, validate,
};

pub use trident_core::omp::{OmpPath, OmpStep, OmpStop};

use crate::ReferenceBackend;

/// Plain OMP on one signal `x` (length `dict.n()`), with the per-step trace a
/// verifier needs to judge near-ties. Exactly what [`ReferenceBackend`]'s
/// `encode` computes for that signal (before rounding to `T`; the trace is in
/// the units of the scaled signal, [`OmpPath::scale`], which is 1 for every
/// signal whose largest entry lies in `[2^-256, 2^256)`).
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
    let d = OmpDict::new(dict);
    let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    Ok(plain_omp(&d, &xf, rule))
}

impl<T: Scalar> SparseCoder<T> for ReferenceBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        validate::encode(dict, &signals, &rule)?;
        let d = OmpDict::new(dict);
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
            let p = plain_omp(&d, &x, rule);
            let (coefs, r2) = p.code::<T>();
            codes.atoms.extend(p.steps.iter().map(|s| s.atom));
            codes.coefs.extend(coefs);
            codes.residual_norm2.push(r2);
            codes.offsets.push(codes.atoms.len());
        }
        Ok(codes)
    }
}
