//! Valid input that used to panic inside library code.

use trident::{CsrMatrix, Error, SparseGemm};

use crate::backends;

/// `[[3e38]] * [[10]]` and `[[3e38, 3e38]] * [[10], [-10]]` in f32: the
/// products overflow. Like BLAS and SciPy the result holds inf / NaN (or the
/// exact f64 sum, 0, on the reference); it used to panic with "backend
/// produced an invalid CSR matrix: NonFinite".
#[test]
fn spgemm_f32_whose_products_overflow_returns_the_result() {
    let a = CsrMatrix::new(1, 1, vec![0, 1], vec![0], vec![3e38f32]).unwrap();
    let b = CsrMatrix::new(1, 1, vec![0, 1], vec![0], vec![10.0f32]).unwrap();
    let a2 = CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![3e38f32, 3e38]).unwrap();
    let b2 = CsrMatrix::new(2, 1, vec![0, 1, 2], vec![0, 0], vec![10.0f32, -10.0]).unwrap();
    for (name, be) in backends() {
        let c = SparseGemm::<f32>::spgemm(be.as_ref(), &a, &b).unwrap();
        assert_eq!(
            (c.offsets(), c.indices()),
            (&[0, 1][..], &[0][..]),
            "{name}"
        );
        assert_eq!(c.values()[0], f32::INFINITY, "{name}");
        let c2 = SparseGemm::<f32>::spgemm(be.as_ref(), &a2, &b2).unwrap();
        assert_eq!(
            (c2.offsets(), c2.indices()),
            (&[0, 1][..], &[0][..]),
            "{name}"
        );
        let v = c2.values()[0];
        assert!(v.is_nan() || v == 0.0, "{name}: inf - inf gave {v}");
        // A result holding inf is not a valid input: the next product says so.
        match SparseGemm::<f32>::spgemm(be.as_ref(), &c, &b) {
            Err(Error::NonFinite { field, .. }) => assert_eq!(field, "a.values", "{name}"),
            other => panic!("{name}: expected NonFinite, got {other:?}"),
        }
    }
}

/// `rows + 1` overflowed before any check.
#[test]
fn zeros_with_usize_max_rows_is_an_error() {
    for (rows, cols) in [(usize::MAX, 1), (1, usize::MAX), (usize::MAX, usize::MAX)] {
        match CsrMatrix::<f32>::zeros(rows, cols) {
            Err(Error::TooLarge { value, limit, .. }) => {
                assert_eq!(value, usize::MAX as u128);
                assert_eq!(limit, u32::MAX as u128);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert!(CsrMatrix::<f64>::from_triplets(rows, cols, &[]).is_err());
    }
}
