//! The DenseGemm checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::cases::*;
use crate::check::*;
use trident_core::*;

/// Checks a GEMM's C buffer: the `m x n` view within [`gemm_tol`] (Frobenius,
/// relative to the reference) and the padding between rows untouched.
pub fn gemm<T: Scalar>(case: &GemmCase<T>, expected: &[f64], got: &[T]) -> Verdict {
    let mut v = Verdict::default();
    let s = case.c_shape;
    if got.len() != case.c.len() || expected.len() != case.c.len() {
        v.fail(format!(
            "C buffer has {} elements, expected {}",
            got.len(),
            case.c.len()
        ));
        return v;
    }
    let tol = gemm_tol::<T>(case.params.precision);
    let (mut err2, mut ref2) = (0.0f64, 0.0f64);
    let mut worst = (0usize, 0usize, 0.0f64);
    for i in 0..s.rows {
        for j in 0..s.cols {
            let p = i * s.ld + j;
            let (x, y) = (expected[p], got[p].to_f64());
            let e = (x - y).abs();
            let e = if e.is_nan() { f64::INFINITY } else { e };
            if e > worst.2 || (e.is_infinite() && worst.2 == 0.0) {
                worst = (i, j, e);
            }
            err2 += e * e;
            ref2 += x * x;
        }
    }
    let r = if err2 == 0.0 {
        0.0
    } else {
        err2.sqrt() / tol.bound(ref2.sqrt())
    };
    let (wi, wj, _) = worst;
    v.ratio(r, || {
        let p = wi * s.ld + wj;
        format!(
            "||C - C_ref||_F = {:.3e} exceeds {:.0e} x ||C_ref||_F = {:.3e} (worst C[{wi},{wj}] = {} vs {})",
            err2.sqrt(),
            tol.rel,
            ref2.sqrt(),
            got[p],
            expected[p]
        )
    });
    // Padding: every element outside the view must keep its bits.
    for p in 0..got.len() {
        if s.ld > 0
            && p % s.ld >= s.cols
            && got[p].to_f64().to_bits() != case.c[p].to_f64().to_bits()
        {
            v.fail(format!(
                "C padding element {p} (row {}, column {}) was written",
                p / s.ld,
                p % s.ld
            ));
            break;
        }
    }
    v
}
