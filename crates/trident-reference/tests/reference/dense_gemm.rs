use trident_core::{DenseGemm, Error, GemmParams, MatMut, MatRef, Op, Precision, Scalar};
use trident_reference::certify;

use crate::{Rng, backend};

/// One random case: shapes, ops, padding and scalars drawn from `rng`; runs the
/// reference and certifies it, returning the inputs for further checks.
fn random_case<T: Scalar>(rng: &mut Rng, beta_zero_nan: bool) {
    let (m, n, k) = (rng.below(6), rng.below(6), rng.below(6));
    let op_a = if rng.below(2) == 0 { Op::N } else { Op::T };
    let op_b = if rng.below(2) == 0 { Op::N } else { Op::T };
    let (ar, ac) = if op_a == Op::N { (m, k) } else { (k, m) };
    let (br, bc) = if op_b == Op::N { (k, n) } else { (n, k) };
    let (lda, ldb, ldc) = (ac + rng.below(3), bc + rng.below(3), n + rng.below(3));
    let fill = |rng: &mut Rng, rows: usize, ld: usize| -> Vec<T> {
        // A few spare elements past the last row too.
        (0..rows * ld + rng.below(3))
            .map(|_| T::from_f64(rng.unit()))
            .collect()
    };
    let a = fill(rng, ar, lda);
    let b = fill(rng, br, ldb);
    let mut c = fill(rng, m, ldc);
    let beta = if beta_zero_nan {
        // beta == 0: C must not be read; fill the view with NaN.
        for i in 0..m {
            for j in 0..n {
                c[i * ldc + j] = T::from_f64(f64::NAN);
            }
        }
        T::ZERO
    } else {
        T::from_f64(rng.unit())
    };
    // Mark the padding with NaN as well: it must come back bit-identical.
    for i in 0..m {
        for j in n..ldc {
            c[i * ldc + j] = T::from_f64(f64::NAN);
        }
    }
    let p = GemmParams {
        alpha: T::from_f64(rng.unit() * 2.0),
        beta,
        op_a,
        op_b,
        precision: Precision::Strict,
    };
    let before = c.clone();
    let av = MatRef::new(&a, ar, ac, lda).unwrap();
    let bv = MatRef::new(&b, br, bc, ldb).unwrap();
    backend()
        .gemm(&p, av, bv, MatMut::new(&mut c, m, n, ldc).unwrap())
        .unwrap();
    let r = certify::gemm(
        &p,
        av,
        bv,
        MatRef::new(&before, m, n, ldc).unwrap(),
        MatRef::new(&c, m, n, ldc).unwrap(),
    );
    assert!(
        r.is_ok(),
        "{} m={m} n={n} k={k} {op_a:?}{op_b:?}: {r:?}",
        T::NAME
    );
}

#[test]
fn random_shapes_ops_padding_f32_f64() {
    let mut rng = Rng::new(1);
    for i in 0..300 {
        random_case::<f32>(&mut rng, i % 3 == 0);
        random_case::<f64>(&mut rng, i % 3 == 0);
    }
}

#[test]
fn one_by_one_and_exact_values() {
    let mut c = [7.0f64];
    let p = GemmParams {
        alpha: 2.0,
        beta: 0.5,
        ..GemmParams::default()
    };
    backend()
        .gemm(
            &p,
            MatRef::dense(&[3.0], 1, 1).unwrap(),
            MatRef::dense(&[4.0], 1, 1).unwrap(),
            MatMut::dense(&mut c, 1, 1).unwrap(),
        )
        .unwrap();
    assert_eq!(c, [2.0 * 12.0 + 3.5]);

    // Transposes: A^T B^T with A = [[1, 2], [3, 4]], B = I.
    let a = [1.0f32, 2.0, 3.0, 4.0];
    let id = [1.0f32, 0.0, 0.0, 1.0];
    let mut c = [0.0f32; 4];
    let p = GemmParams {
        op_a: Op::T,
        op_b: Op::T,
        ..GemmParams::default()
    };
    backend()
        .gemm(
            &p,
            MatRef::dense(&a, 2, 2).unwrap(),
            MatRef::dense(&id, 2, 2).unwrap(),
            MatMut::dense(&mut c, 2, 2).unwrap(),
        )
        .unwrap();
    assert_eq!(c, [1.0, 3.0, 2.0, 4.0]);
}

#[test]
fn k_zero_scales_c_and_empty_c_is_fine() {
    // k = 0: C <- beta C.
    let mut c = [1.0f64, 2.0];
    let p = GemmParams {
        alpha: 5.0,
        beta: 3.0,
        ..GemmParams::default()
    };
    backend()
        .gemm(
            &p,
            MatRef::dense(&[], 1, 0).unwrap(),
            MatRef::dense(&[], 0, 2).unwrap(),
            MatMut::dense(&mut c, 1, 2).unwrap(),
        )
        .unwrap();
    assert_eq!(c, [3.0, 6.0]);
    // m = n = 0 with k > 0.
    let mut c: [f32; 0] = [];
    backend()
        .gemm(
            &GemmParams::default(),
            MatRef::dense(&[], 0, 3).unwrap(),
            MatRef::dense(&[], 3, 0).unwrap(),
            MatMut::dense(&mut c, 0, 0).unwrap(),
        )
        .unwrap();
}

#[test]
fn errors_leave_c_untouched() {
    let a = [1.0f32; 6];
    let mut c = [9.0f32; 4];
    // op(A) 2 x 3 against B 2 x 2: mismatch.
    let e = backend().gemm(
        &GemmParams::default(),
        MatRef::dense(&a, 2, 3).unwrap(),
        MatRef::dense(&a[..4], 2, 2).unwrap(),
        MatMut::dense(&mut c, 2, 2).unwrap(),
    );
    assert!(matches!(e, Err(Error::DimensionMismatch { .. })), "{e:?}");
    assert_eq!(c, [9.0; 4]);
    // NaN in A.
    let mut bad = [1.0f32; 4];
    bad[3] = f32::NAN;
    let e = backend().gemm(
        &GemmParams::default(),
        MatRef::dense(&bad, 2, 2).unwrap(),
        MatRef::dense(&a[..4], 2, 2).unwrap(),
        MatMut::dense(&mut c, 2, 2).unwrap(),
    );
    assert!(
        matches!(
            e,
            Err(Error::NonFinite {
                field: "a",
                index: 3,
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(c, [9.0; 4]);
    // NaN in C with beta != 0 is an error too.
    let mut cn = [f32::NAN; 4];
    let p = GemmParams {
        beta: 1.0,
        ..GemmParams::default()
    };
    let e = backend().gemm(
        &p,
        MatRef::dense(&a[..4], 2, 2).unwrap(),
        MatRef::dense(&a[..4], 2, 2).unwrap(),
        MatMut::dense(&mut cn, 2, 2).unwrap(),
    );
    assert!(
        matches!(e, Err(Error::NonFinite { field: "c", .. })),
        "{e:?}"
    );
}

#[test]
fn certificate_rejects_wrong_answers() {
    let a = [1.0f64, 2.0, 3.0, 4.0];
    let b = [5.0f64, 6.0, 7.0, 8.0];
    let before = [0.0f64, 0.0, -1.0, 0.0, 0.0, -1.0];
    let good = [19.0f64, 22.0, -1.0, 43.0, 50.0, -1.0];
    let p = GemmParams::default();
    fn view(d: &[f64]) -> MatRef<'_, f64> {
        MatRef::new(d, 2, 2, 3).unwrap()
    }
    let (av, bv) = (
        MatRef::dense(&a, 2, 2).unwrap(),
        MatRef::dense(&b, 2, 2).unwrap(),
    );
    assert_eq!(
        certify::gemm(&p, av, bv, view(&before), view(&good)),
        Ok(0.0)
    );
    let mut wrong = good;
    wrong[4] += 1e-6;
    assert!(certify::gemm(&p, av, bv, view(&before), view(&wrong)).is_err());
    // f64 tolerance is 1e-12 relative: a last-bits difference passes.
    wrong[4] = 50.0 * (1.0 + 1e-15);
    assert!(certify::gemm(&p, av, bv, view(&before), view(&wrong)).is_ok());
    let mut padded = good;
    padded[2] = 0.0;
    let e = certify::gemm(&p, av, bv, view(&before), view(&padded)).unwrap_err();
    assert!(e.contains("outside"), "{e}");
}
