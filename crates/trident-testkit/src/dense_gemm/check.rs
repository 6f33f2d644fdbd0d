//! The DenseGemm checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::cases::*;
use crate::check::*;
use trident_core::tol;
use trident_core::*;

/// Checks a GEMM's C buffer: the `m x n` view within [`gemm_tol`] (Frobenius,
/// relative to the reference) and the padding between rows untouched.
///
/// The ends of the range (`docs/semantics.md`, DenseGemm, "Range"): GEMM is
/// arithmetic in `T`, so an entry whose products or partial sums leave `T`'s
/// range may come back non-finite (or, below it, lose what underflowed) where
/// the reference, f64 inside, has the exact value. Such an entry is judged
/// on its own: any non-finite value, or a finite one within the tolerance of
/// the exact value, passes, and it is left out of the Frobenius sums; every
/// entry is allowed the underflow of its `k` products (`|alpha| k` times
/// `T`'s smallest normal number, so flushing subnormals to zero passes).
/// The envelope costs one more product, so it is computed only when the
/// plain comparison fails.
pub fn gemm<T: Scalar>(case: &GemmCase<T>, expected: &[f64], got: &[T]) -> Verdict {
    let plain = gemm_with(case, expected, got, false);
    if plain.passed() {
        plain
    } else {
        gemm_with(case, expected, got, true)
    }
}

/// `sum_k |op(A)[i,k] op(B)[k,j]|` in f64.
fn abs_product<T: Scalar>(case: &GemmCase<T>, i: usize, j: usize) -> f64 {
    let (la, lb) = (case.a_shape.ld, case.b_shape.ld);
    (0..case.k)
        .map(|t| {
            let a = if case.params.op_a.is_transposed() {
                case.a[t * la + i]
            } else {
                case.a[i * la + t]
            };
            let b = if case.params.op_b.is_transposed() {
                case.b[j * lb + t]
            } else {
                case.b[t * lb + j]
            };
            (a.to_f64() * b.to_f64()).abs()
        })
        .sum()
}

fn gemm_with<T: Scalar>(case: &GemmCase<T>, expected: &[f64], got: &[T], range: bool) -> Verdict {
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
    let (max, tiny) = trident_core::tol::range::<T>();
    let alpha = case.params.alpha.to_f64().abs();
    let beta = case.params.beta.to_f64();
    let product = alpha != 0.0 && case.k != 0;
    let slack = if range && product {
        alpha * case.k as f64 * tiny + tiny
    } else {
        0.0
    };
    let (mut errs, mut refs) = (Vec::new(), Vec::new());
    let mut out_of_range_wrong = false;
    let mut worst = (0usize, 0usize, 0.0f64);
    for i in 0..s.rows {
        for j in 0..s.cols {
            let p = i * s.ld + j;
            let (x, y) = (expected[p], got[p].to_f64());
            if range {
                let sum = if product {
                    abs_product(case, i, j)
                } else {
                    0.0
                };
                let c = if beta != 0.0 {
                    (beta * case.c[p].to_f64()).abs()
                } else {
                    0.0
                };
                if sum.max(alpha * sum).max(c) > max {
                    // Out of T's range on the way: non-finite passes, a finite
                    // value must still be right.
                    let ok = !y.is_finite() || tol.accepts(x, y);
                    if !ok {
                        let e = (x - y).abs();
                        worst = (i, j, if e.is_nan() { f64::INFINITY } else { e });
                        out_of_range_wrong = true;
                    }
                    continue;
                }
            }
            let e = ((x - y).abs() - slack).max(0.0);
            let e = if (x - y).is_nan() { f64::INFINITY } else { e };
            if e > worst.2 || (e.is_infinite() && worst.2 == 0.0) {
                worst = (i, j, e);
            }
            errs.push(e);
            refs.push(x);
        }
    }
    // Norms scaled by their largest entry: entries near f64's ends square
    // to inf or 0 otherwise.
    let (err, norm) = (tol::norm2(&errs), tol::norm2(&refs));
    let r = if out_of_range_wrong {
        f64::INFINITY
    } else if err == 0.0 {
        0.0
    } else {
        err / tol.bound(norm)
    };
    let (wi, wj, _) = worst;
    v.ratio(r, || {
        let p = wi * s.ld + wj;
        format!(
            "||C - C_ref||_F = {:.3e} exceeds {:.0e} x ||C_ref||_F = {:.3e} (worst C[{wi},{wj}] = {} vs {})",
            err,
            tol.rel,
            norm,
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
