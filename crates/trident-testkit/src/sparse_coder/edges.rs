//! Hand-made SparseCoder cases with their exact answers: nearly dependent
//! atoms, and signals at the ends of the number range (docs/semantics.md,
//! SparseCoder: "Nearly dependent atoms", "The ends of the number range").
//! The catalog runs each as a named edge case (judged against the reference
//! by the checker, in `verify` and the conformance suite), and the
//! conformance suite also asserts the exact answer listed here.

use trident_core::{Dictionary, Scalar, SparseCodes, StopRule};

use super::generate::OmpCase;

/// What one signal's code must be.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The atoms, in selection order.
    pub atoms: Vec<u32>,
    /// The coefficients (in the signal's units; `±inf` where the true value
    /// is beyond the scalar's range, which must then be returned exactly).
    pub coefs: Vec<f64>,
    /// Relative tolerance of a finite coefficient, after rounding the wanted
    /// value to the scalar (0: bit for bit).
    pub coef_rel: f64,
    /// `||r||^2` (`inf` where it must be infinite).
    pub residual: f64,
    /// Absolute tolerance of a finite `||r||^2`.
    pub residual_abs: f64,
}

/// One hand-made case with the answer of each signal.
#[derive(Clone, Debug)]
pub struct EdgeCase<T> {
    /// The catalog name (`omp-edge-...`, with `-f64` for f64).
    pub name: String,
    /// The input.
    pub case: OmpCase<T>,
    /// The answer per signal.
    pub answers: Vec<Answer>,
}

impl<T: Scalar> EdgeCase<T> {
    /// Where `got` differs from the answers, or `None`.
    pub fn mismatch(&self, got: &SparseCodes<T>) -> Option<String> {
        if got.len() != self.answers.len() {
            return Some(format!(
                "{} codes for {} signals",
                got.len(),
                self.answers.len()
            ));
        }
        for (i, want) in self.answers.iter().enumerate() {
            let (atoms, coefs) = got.signal(i);
            let r2 = got.residual_norm2[i].to_f64();
            let coef_ok = |c: f64, w: f64| {
                let w = T::from_f64(w).to_f64();
                if w.is_infinite() || want.coef_rel == 0.0 {
                    c.to_bits() == w.to_bits()
                } else {
                    (c - w).abs() <= want.coef_rel * w.abs()
                }
            };
            let res_ok = if want.residual.is_infinite() {
                r2 == want.residual
            } else {
                (r2 - T::from_f64(want.residual).to_f64()).abs() <= want.residual_abs
            };
            if atoms != want.atoms.as_slice()
                || coefs.len() != want.coefs.len()
                || !coefs
                    .iter()
                    .zip(&want.coefs)
                    .all(|(c, &w)| coef_ok(c.to_f64(), w))
                || !res_ok
            {
                return Some(format!(
                    "signal {i}: atoms {atoms:?}, coefficients {coefs:?}, ||r||^2 = {r2:e}; want {:?}, {:?} (relative {:e}), {:e} (within {:e})",
                    want.atoms, want.coefs, want.coef_rel, want.residual, want.residual_abs
                ));
            }
        }
        None
    }
}

/// The 2 x 2 dictionary with atoms `e1` and `normalize(e1 + t e2)`, about `t`
/// rad apart (row-major `[1, 1/m; 0, t/m]`, `m = sqrt(1 + t^2)`).
pub fn tilted_pair<T: Scalar>(t: f64) -> Dictionary<T> {
    let m = (1.0 + t * t).sqrt();
    let data = [1.0, 1.0 / m, 0.0, t / m].map(T::from_f64).to_vec();
    Dictionary::new(2, 2, data).expect("unit columns")
}

/// The 2 x 2 identity dictionary.
pub fn identity2<T: Scalar>() -> Dictionary<T> {
    Dictionary::new(2, 2, [1.0, 0.0, 0.0, 1.0].map(T::from_f64).to_vec()).expect("unit columns")
}

fn edge<T: Scalar>(
    name: &str,
    dict: Dictionary<T>,
    rows: &[[f64; 2]],
    rule: StopRule,
    answers: Vec<Answer>,
) -> EdgeCase<T> {
    let suffix = if T::NAME == "f64" { "-f64" } else { "" };
    EdgeCase {
        name: format!("omp-edge-{name}{suffix}"),
        case: OmpCase {
            dict,
            signals: rows.iter().flatten().map(|&v| T::from_f64(v)).collect(),
            count: rows.len(),
            rule,
        },
        answers,
    }
}

/// An exact answer (coefficients bit for bit, `||r||^2` within `abs`).
fn exact(atoms: &[u32], coefs: &[f64], residual: f64, abs: f64) -> Answer {
    Answer {
        atoms: atoms.to_vec(),
        coefs: coefs.to_vec(),
        coef_rel: 0.0,
        residual,
        residual_abs: abs,
    }
}

/// The hand-made cases for scalar `T` (each in f32 and f64, with values that
/// reach the ends of that scalar's range).
pub fn omp_edges<T: Scalar>() -> Vec<EdgeCase<T>> {
    let f32s = T::NAME == "f32";
    // Values as T (f32 signals are given as their f32 values).
    let v = |x: f64| T::from_f64(x).to_f64();
    let t = tol_of::<T>();
    let mut out = Vec::new();

    // Nearly dependent atoms, 1e-7 rad apart (a pivot of 1e-14 G_jj): both
    // are selected (no stop for ill-conditioning), atom 1 first; the two
    // atoms span R^2, so the code is exact up to rounding. The coefficients
    // solve D g = x for the atoms as stored: g1 = x1 / b, g0 = x0 - a g1.
    let d = tilted_pair::<T>(1e-7);
    let (a, b) = (d.data()[1].to_f64(), d.data()[3].to_f64());
    let g1 = 1.0 / b;
    let g0 = 1.0 - a * g1;
    out.push(edge(
        "near-dependent",
        d,
        &[[1.0, 1.0]],
        StopRule::Sparsity(2),
        vec![Answer {
            atoms: vec![1, 0],
            coefs: vec![g1, g0],
            coef_rel: t.coef_rel,
            residual: 0.0,
            residual_abs: t.res_abs * 2.0,
        }],
    ));

    // ||x||^2 beyond the type's largest value: the code is still exact.
    let big = if f32s { [1e20, 3e19] } else { [1e200, 3e199] };
    let (b0, b1) = (v(big[0]), v(big[1]));
    out.push(edge(
        "huge",
        identity2(),
        &[big, [-big[1], big[0]]],
        StopRule::Sparsity(2),
        vec![
            exact(&[0, 1], &[b0, b1], 0.0, 0.0),
            exact(&[1, 0], &[b0, -b1], 0.0, 0.0),
        ],
    ));

    // ||x||^2 below the smallest value (the second signal subnormal).
    let small = if f32s {
        [1e-25, 3e-26]
    } else {
        [1e-200, 3e-201]
    };
    let sub = if f32s {
        [1e-40, 3e-41]
    } else {
        [1e-310, 3e-311]
    };
    out.push(edge(
        "tiny",
        identity2(),
        &[small, sub],
        StopRule::Sparsity(2),
        vec![
            exact(&[0, 1], &[v(small[0]), v(small[1])], 0.0, 0.0),
            exact(&[0, 1], &[v(sub[0]), v(sub[1])], 0.0, 0.0),
        ],
    ));

    // One atom leaves ||r||^2 = x1^2, beyond the type's range: +inf.
    out.push(edge(
        "residual-overflow",
        identity2(),
        &[big],
        StopRule::Sparsity(1),
        vec![exact(&[0], &[b0], f64::INFINITY, 0.0)],
    ));

    // Coefficients beyond the type's range (atoms 2^-10 rad apart, x at
    // 2^126 or 2^1020): +-inf, and then ||r||^2 = +inf.
    let e = if f32s { 126 } else { 1020 };
    let x = 2f64.powi(e);
    out.push(edge(
        "coef-overflow",
        tilted_pair(2f64.powi(-10)),
        &[[x, x]],
        StopRule::Sparsity(2),
        vec![exact(
            &[1, 0],
            &[f64::INFINITY, f64::NEG_INFINITY],
            f64::INFINITY,
            0.0,
        )],
    ));

    // An error target near the type's largest value, met after one atom:
    // ||x||^2 = 1.09 eps, x1^2 = 0.09 eps.
    let (top, eps) = if f32s {
        ([1e19, 3e18], 1e38)
    } else {
        ([1e154, 3e153], 1e308)
    };
    let r = v(top[1]) * v(top[1]);
    out.push(edge(
        "error-near-max",
        identity2(),
        &[top],
        StopRule::Error(eps),
        vec![exact(&[0], &[v(top[0])], r, r * 4.0 * T::EPSILON.to_f64())],
    ));

    // An error target in the subnormals, met after one atom; ||r||^2 rounds
    // into the subnormals too (within one unit of the last place there).
    let (low, eps) = if f32s {
        ([1e-20, 3e-21], 1e-41)
    } else {
        ([1e-160, 3e-161], 1e-320)
    };
    let r = v(low[1]) * v(low[1]);
    out.push(edge(
        "error-subnormal",
        identity2(),
        &[low],
        StopRule::Error(eps),
        vec![exact(&[0], &[v(low[0])], r, T::MIN_SUBNORMAL.to_f64())],
    ));
    out
}

fn tol_of<T: Scalar>() -> trident_core::tol::Omp {
    trident_core::tol::Omp::of::<T>()
}
