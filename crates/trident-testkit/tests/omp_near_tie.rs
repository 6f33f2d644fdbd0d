//! The OMP checker past a near tie (docs/semantics.md#sparsecoder): a backend
//! that takes the other atom of a near tie is judged along its own path, even
//! when that path ends far from the reference's residual; a pick that is no
//! tie, a later wrong pick and wrong coefficients on that path still fail.
#![allow(missing_docs)]

use trident_core::{Dictionary, SparseCoder, SparseCodes, StopRule};
use trident_reference::ReferenceBackend;
use trident_testkit::cases::OmpCase;
use trident_testkit::check;
use trident_testkit::sparse_coder::problem::widen_omp;

/// Atoms `e1`, `e2`, `a = (1, -0.3, 1) / sqrt(2.09)` and the signal
/// `(1, 1 - delta, 0.5)` under `Sparsity(2)`. Step 0 is a near tie between
/// atoms 0 (correlation 1) and 1 (`1 - delta`); atom 2 has 0.83. The
/// reference takes atom 0, then atom 1 (atom 2 has 0.14 with the residual
/// `(0, 1 - delta, 0.5)`), leaving `||r||^2 = 0.25`. Taking atom 1 first
/// leaves `(1, 0, 0.5)`, where atom 2 (1.5 / sqrt(2.09) = 1.038) beats atom 0
/// (1), leaving `||r||^2 = 0.125`: half the reference's.
fn case(delta: f64) -> OmpCase<f32> {
    let s = 1.0 / 2.09f64.sqrt();
    #[rustfmt::skip]
    let d = [
        1.0, 0.0, s,
        0.0, 1.0, -0.3 * s,
        0.0, 0.0, s,
    ];
    OmpCase {
        dict: Dictionary::new(3, 3, d.iter().map(|&v| v as f32).collect()).unwrap(),
        signals: vec![1.0, (1.0 - delta) as f32, 0.5],
        count: 1,
        rule: StopRule::Sparsity(2),
    }
}

/// The least-squares code of `case`'s signal on `atoms` (two of them), in f64
/// by the normal equations, reported as an f32 backend would.
fn code_on(case: &OmpCase<f32>, atoms: [u32; 2]) -> SparseCodes<f32> {
    let w = widen_omp(case).unwrap();
    let x = w.signal(0);
    let col = |j: u32| -> Vec<f64> { (0..3).map(|i| w.dict.data()[i * 3 + j as usize]).collect() };
    let (a, b) = (col(atoms[0]), col(atoms[1]));
    let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(p, q)| p * q).sum::<f64>();
    let (aa, ab, bb) = (dot(&a, &a), dot(&a, &b), dot(&b, &b));
    let (ax, bx) = (dot(&a, x), dot(&b, x));
    let det = aa * bb - ab * ab;
    let g = [(bb * ax - ab * bx) / det, (aa * bx - ab * ax) / det];
    let gf = [g[0] as f32, g[1] as f32];
    let r2: f64 = (0..3)
        .map(|i| x[i] - gf[0] as f64 * a[i] - gf[1] as f64 * b[i])
        .map(|r| r * r)
        .sum();
    SparseCodes {
        offsets: vec![0, 2],
        atoms: atoms.to_vec(),
        coefs: gf.to_vec(),
        residual_norm2: vec![r2 as f32],
    }
}

fn expected(case: &OmpCase<f32>) -> SparseCodes<f64> {
    let w = widen_omp(case).unwrap();
    SparseCoder::<f64>::encode(&ReferenceBackend, &w.dict, w.signals_ref(), w.rule).unwrap()
}

#[test]
fn the_reference_path_is_the_constructed_one() {
    let c = case(1e-6);
    let e = expected(&c);
    assert_eq!(e.atoms, [0, 1]);
    assert!((e.residual_norm2[0] - 0.25).abs() < 1e-5);
    assert!(check::omp(&c, &e, &code_on(&c, [0, 1])).passed());
}

#[test]
fn other_side_of_a_near_tie_is_judged_on_its_own_path() {
    let c = case(1e-6);
    let got = code_on(&c, [1, 2]);
    assert!((got.residual_norm2[0] - 0.125).abs() < 1e-5);
    let v = check::omp(&c, &expected(&c), &got);
    assert!(v.passed(), "{}", v.summary());
}

#[test]
fn other_side_of_no_tie_fails() {
    let c = case(0.1);
    let v = check::omp(&c, &expected(&c), &code_on(&c, [1, 2]));
    assert!(!v.passed());
}

#[test]
fn a_wrong_pick_after_the_near_tie_fails() {
    // After atom 1, atom 2 (1.038) beats atom 0 (1) by far more than a tie.
    let c = case(1e-6);
    let v = check::omp(&c, &expected(&c), &code_on(&c, [1, 0]));
    assert!(!v.passed());
}

#[test]
fn wrong_coefficients_after_the_near_tie_fail() {
    let c = case(1e-6);
    let mut got = code_on(&c, [1, 2]);
    got.coefs[1] *= 1.01;
    // Keep the reported residual honest, so only the coefficients are wrong.
    let w = widen_omp(&c).unwrap();
    let x = w.signal(0);
    let d = w.dict.data();
    let r2: f64 = (0..3)
        .map(|i| x[i] - got.coefs[0] as f64 * d[i * 3 + 1] - got.coefs[1] as f64 * d[i * 3 + 2])
        .map(|r| r * r)
        .sum();
    got.residual_norm2[0] = r2 as f32;
    let v = check::omp(&c, &expected(&c), &got);
    assert!(!v.passed());
}
