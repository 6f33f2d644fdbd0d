use trident_core::{CsrMatrix, Error, Scalar, SparseGemm};
use trident_reference::certify;

use crate::{Rng, backend};

/// Random CSR with about `density` of the entries stored; some stored values
/// are explicit zeros, and row 0 (when there is one) may be dense (power law).
fn random_csr<T: Scalar>(rng: &mut Rng, rows: usize, cols: usize, density: f64) -> CsrMatrix<T> {
    let mut t = Vec::new();
    for i in 0..rows {
        let dense_row = i == 0 && rng.below(3) == 0;
        for j in 0..cols {
            if dense_row || (rng.unit() * 0.5 + 0.5) < density {
                let v = if rng.below(8) == 0 { 0.0 } else { rng.unit() };
                t.push((i as u32, j as u32, T::from_f64(v)));
            }
        }
    }
    CsrMatrix::from_triplets(rows, cols, &t).unwrap()
}

fn check<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> CsrMatrix<T> {
    let c = backend().spgemm(a, b).unwrap();
    let r = certify::spgemm(a, b, &c);
    assert!(r.is_ok(), "{}: {r:?}", T::NAME);
    c
}

#[test]
fn random_products_f32_f64() {
    let mut rng = Rng::new(2);
    for _ in 0..200 {
        let (m, k, n) = (rng.below(7), rng.below(7), rng.below(7));
        let d = rng.unit() * 0.5 + 0.5;
        check::<f32>(
            &random_csr(&mut rng, m, k, d),
            &random_csr(&mut rng, k, n, d),
        );
        check::<f64>(
            &random_csr(&mut rng, m, k, d),
            &random_csr(&mut rng, k, n, d),
        );
    }
}

#[test]
fn explicit_zeros_and_cancellation_are_stored() {
    // A = [[0 (stored), 0 (absent)]], B = [[5, 0], [0, 0]] (B(0,0) stored).
    let a = CsrMatrix::new(1, 2, vec![0, 1], vec![0], vec![0.0f64]).unwrap();
    let b = CsrMatrix::new(2, 2, vec![0, 1, 1], vec![0], vec![5.0]).unwrap();
    let c = check(&a, &b);
    assert_eq!(
        (c.offsets(), c.indices(), c.values()),
        (&[0, 1][..], &[0u32][..], &[0.0][..])
    );

    // [1, 1] * [[1], [-1]] = [0], stored.
    let a = CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![1.0f32, 1.0]).unwrap();
    let b = CsrMatrix::new(2, 1, vec![0, 1, 2], vec![0, 0], vec![1.0, -1.0]).unwrap();
    let c = check(&a, &b);
    assert_eq!((c.indices(), c.values()), (&[0u32][..], &[0.0f32][..]));
    assert_eq!(c.nnz(), 1);
}

#[test]
fn empty_rows_and_degenerate_shapes() {
    // Row 1 of A empty, row 0 of B empty.
    let a = CsrMatrix::from_triplets(3, 3, &[(0, 0, 1.0f64), (0, 2, 2.0), (2, 1, 3.0)]).unwrap();
    let b = CsrMatrix::from_triplets(3, 2, &[(1, 1, 4.0f64), (2, 0, 5.0), (2, 1, 6.0)]).unwrap();
    let c = check(&a, &b);
    assert_eq!(c.offsets(), &[0, 2, 2, 3]);
    assert_eq!(c.indices(), &[0, 1, 1]);
    assert_eq!(c.values(), &[10.0, 12.0, 12.0]);
    for (m, k, n) in [(0, 0, 0), (0, 3, 2), (2, 0, 3), (2, 3, 0), (1, 1, 1)] {
        let a = CsrMatrix::<f32>::zeros(m, k).unwrap();
        let b = CsrMatrix::<f32>::zeros(k, n).unwrap();
        let c = check(&a, &b);
        assert_eq!((c.rows(), c.cols(), c.nnz()), (m, n, 0));
    }
    let one = CsrMatrix::from_triplets(1, 1, &[(0, 0, 3.0f32)]).unwrap();
    assert_eq!(check(&one, &one).values(), &[9.0]);
}

#[test]
fn power_law_row() {
    // Row 0 touches every row of B; B's rows are 1..=k entries long.
    let k = 40;
    let mut rng = Rng::new(3);
    let mut a_t: Vec<(u32, u32, f64)> = (0..k).map(|p| (0, p as u32, rng.unit())).collect();
    a_t.extend((1..k).map(|i| (i as u32, (i * 7 % k) as u32, rng.unit())));
    let a = CsrMatrix::from_triplets(k, k, &a_t).unwrap();
    let b_t: Vec<(u32, u32, f64)> = (0..k)
        .flat_map(|p| (0..=p).map(move |j| (p as u32, ((j * 13) % k) as u32, 1.0)))
        .collect();
    let b = CsrMatrix::from_triplets(k, k, &b_t).unwrap();
    let c = check(&a, &b);
    assert_eq!(c.row(0).0.len(), k);
}

#[test]
fn dimension_mismatch_is_an_error() {
    let a = CsrMatrix::<f64>::zeros(2, 3).unwrap();
    let b = CsrMatrix::<f64>::zeros(2, 3).unwrap();
    assert!(matches!(
        backend().spgemm(&a, &b),
        Err(Error::DimensionMismatch {
            field: "b.rows",
            ..
        })
    ));
}

#[test]
fn certificate_rejects_wrong_answers() {
    let a = CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![1.0f64, 1.0]).unwrap();
    let b = CsrMatrix::new(2, 2, vec![0, 1, 2], vec![0, 0], vec![1.0, -1.0]).unwrap();
    // Cancelled entry dropped: structure differs.
    let dropped = CsrMatrix::<f64>::zeros(1, 2).unwrap();
    assert!(
        certify::spgemm(&a, &b, &dropped)
            .unwrap_err()
            .contains("structure")
    );
    // Extra entry.
    let extra = CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![0.0, 0.0]).unwrap();
    assert!(certify::spgemm(&a, &b, &extra).is_err());
    // Wrong value where the products' magnitudes sum to 2: the f64 tolerance
    // is tol::SPGEMM_F64 * 2 = 2e-12.
    let off = CsrMatrix::new(1, 2, vec![0, 1], vec![0], vec![1e-10]).unwrap();
    assert!(certify::spgemm(&a, &b, &off).is_err());
    let close = CsrMatrix::new(1, 2, vec![0, 1], vec![0], vec![1e-12]).unwrap();
    assert!(certify::spgemm(&a, &b, &close).is_ok());
    // In f32 the factor is tol::SPGEMM_F32: 2e-5.
    let (a32, b32) = (
        CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![1.0f32, 1.0]).unwrap(),
        CsrMatrix::new(2, 2, vec![0, 1, 2], vec![0, 0], vec![1.0f32, -1.0]).unwrap(),
    );
    let off = CsrMatrix::new(1, 2, vec![0, 1], vec![0], vec![1e-4f32]).unwrap();
    assert!(certify::spgemm(&a32, &b32, &off).is_err());
    let close = CsrMatrix::new(1, 2, vec![0, 1], vec![0], vec![1e-5f32]).unwrap();
    assert!(certify::spgemm(&a32, &b32, &close).is_ok());
}
