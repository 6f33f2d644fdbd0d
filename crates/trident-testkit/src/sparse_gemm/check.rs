//! The SparseGemm checker: compares a backend's answer with the reference's under
//! `docs/tolerances.md` (see [`crate::check`] for the flow).

use crate::cases::*;
use crate::check::*;
use trident_core::*;

/// Re-validates a backend's CSR output through [`CsrMatrix::new`] (release
/// builds of backends skip that check).
pub fn revalidate_csr<T: Scalar>(m: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
    // A result's structure, not its values: finite inputs may give inf/NaN.
    CsrMatrix::from_result(
        m.rows(),
        m.cols(),
        m.offsets().to_vec(),
        m.indices().to_vec(),
        m.values().to_vec(),
    )
}

/// Checks `C = A B`: valid CSR, identical offsets and indices, each value
/// within `tol.rel * bound(i, j)` of the reference.
pub fn spgemm<T: Scalar>(
    case: &SpgemmCase<T>,
    expected: &CsrMatrix<f64>,
    bound: &CsrMatrix<f64>,
    got: &CsrMatrix<T>,
    tol: Tol,
) -> Verdict {
    let mut v = Verdict::default();
    if let Err(e) = revalidate_csr(got) {
        v.fail(format!("output is not valid CSR: {e}"));
        return v;
    }
    if (got.rows(), got.cols()) != (case.a.rows(), case.b.cols()) {
        v.fail(format!(
            "C is {} x {}, expected {} x {}",
            got.rows(),
            got.cols(),
            case.a.rows(),
            case.b.cols()
        ));
        return v;
    }
    if got.offsets() != expected.offsets() {
        let i = (0..=got.rows())
            .find(|&i| got.offsets()[i] != expected.offsets()[i])
            .unwrap_or(0);
        v.fail(format!(
            "offsets differ first at row {}: row has {} entries, the reference {} (nnz {} vs {})",
            i.saturating_sub(1),
            got.offsets()[i] - got.offsets()[i.saturating_sub(1)],
            expected.offsets()[i] - expected.offsets()[i.saturating_sub(1)],
            got.nnz(),
            expected.nnz()
        ));
        return v;
    }
    if got.indices() != expected.indices() {
        let p = (0..got.nnz())
            .find(|&p| got.indices()[p] != expected.indices()[p])
            .unwrap_or(0);
        let row = got.offsets().partition_point(|&o| o <= p) - 1;
        v.fail(format!(
            "column index {p} (row {row}) is {}, the reference has {}",
            got.indices()[p],
            expected.indices()[p]
        ));
        return v;
    }
    // The ends of the range (docs/semantics.md, SparseGemm): products and
    // sums are arithmetic in T, so an entry whose sum|A||B| exceeds T's
    // largest value may be non-finite where the reference (f64) is exact, and
    // every entry may lose the underflow of its at most `k` products (T's
    // smallest normal number each, so flushing subnormals passes).
    let (max, tiny) = trident_core::tol::range::<T>();
    let slack = tiny * case.a.cols() as f64;
    let mut worst = (0usize, 0.0f64);
    for p in 0..got.nnz() {
        let (x, y, b) = (
            expected.values()[p],
            got.values()[p].to_f64(),
            bound.values()[p],
        );
        if b > max && !y.is_finite() {
            continue;
        }
        let (e, lim) = ((x - y).abs(), tol.rel * b + slack);
        let r = if e == 0.0 {
            0.0
        } else if lim == 0.0 || e.is_nan() {
            f64::INFINITY
        } else {
            e / lim
        };
        if r > worst.1 || (r.is_infinite() && worst.1.is_finite()) {
            worst = (p, r);
        }
    }
    let (p, r) = worst;
    v.ratio(r, || {
        let row = got.offsets().partition_point(|&o| o <= p) - 1;
        format!(
            "C[{row},{}] = {} vs reference {} (error {:.3e}, bound {:.0e} x sum|A||B| = {:.3e})",
            got.indices()[p],
            got.values()[p],
            expected.values()[p],
            (expected.values()[p] - got.values()[p].to_f64()).abs(),
            tol.rel,
            tol.rel * bound.values()[p]
        )
    });
    v
}
