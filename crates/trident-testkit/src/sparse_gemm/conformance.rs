//! The SparseGemm conformance suite and its bad-input group (see
//! [`crate::conformance`] for what every suite runs).

use crate::cases::{self, *};
use crate::conformance::*;
use proptest::prelude::*;
use trident_core::*;

/// The SparseGemm suite (f32 and f64).
pub fn sparse_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("sparse_gemm", b);
    let k = || -> Result<bool> {
        let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0f64), (0, 1, 2.0), (1, 1, 3.0)])?;
        let c = SparseGemm::<f64>::spgemm(b, &a, &a)?;
        Ok(c.offsets() == [0, 2, 3] && c.indices() == [0, 1, 1] && c.values() == [1.0, 8.0, 9.0])
    };
    known(&mut r, "[[1,2],[0,3]]^2", k());
    run_catalog(&mut r, b, "sparse_gemm");
    run_determinism(&mut r, b, "sparse_gemm");
    let strategy = (
        (0usize..14, 0usize..14, 0usize..14),
        (0u32..=100, any::<bool>(), any::<bool>(), any::<u64>()),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((m, k, n), (dens, zeros, f64s, seed))| {
            let d = dens as f64 / 100.0;
            if f64s {
                Input::Spgemm64(cases::SpgemmCase {
                    a: cases::random_csr(m, k, d, zeros, seed),
                    b: cases::random_csr(k, n, d, zeros, seed ^ 1),
                })
            } else {
                Input::Spgemm32(cases::SpgemmCase {
                    a: cases::random_csr(m, k, d, zeros, seed),
                    b: cases::random_csr(k, n, d, zeros, seed ^ 1),
                })
            }
        },
    );
    r
}

// -------------------------------------------------------------- bad input

/// Bad input for SparseGemm: mismatched operands, and every invalid-CSR class
/// `CsrMatrix::new` rejects.
pub fn bad_input_sparse_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_sparse_gemm", b);
    let a = CsrMatrix::<f32>::from_triplets(2, 3, &[(0, 0, 1.0), (1, 2, 2.0)]).expect("valid");
    expect_err(
        &mut r,
        "spgemm f32 A 2x3 * B 2x3",
        SparseGemm::<f32>::spgemm(b, &a, &a),
        "DimensionMismatch{b.rows}",
        dim("b.rows"),
    );
    let a64 = cases::convert::<f32, f64>(&a);
    expect_err(
        &mut r,
        "spgemm f64 A 2x3 * B 2x3",
        SparseGemm::<f64>::spgemm(b, &a64, &a64),
        "DimensionMismatch{b.rows}",
        dim("b.rows"),
    );
    let nw = |o: Vec<usize>, i: Vec<u32>, v: Vec<f64>| CsrMatrix::new(2, 3, o, i, v);
    expect_err(
        &mut r,
        "CSR unsorted row",
        nw(vec![0, 2, 2], vec![2, 0], vec![1.0, 1.0]),
        "InvalidCsr{indices}",
        csr("indices"),
    );
    expect_err(
        &mut r,
        "CSR repeated column",
        nw(vec![0, 2, 2], vec![1, 1], vec![1.0, 1.0]),
        "InvalidCsr{indices}",
        csr("indices"),
    );
    expect_err(
        &mut r,
        "CSR column out of range",
        nw(vec![0, 1, 1], vec![3], vec![1.0]),
        "InvalidCsr{indices}",
        csr("indices"),
    );
    expect_err(
        &mut r,
        "CSR offsets not from 0",
        nw(vec![1, 1, 1], vec![], vec![]),
        "InvalidCsr{offsets}",
        csr("offsets"),
    );
    expect_err(
        &mut r,
        "CSR offsets decreasing",
        nw(vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]),
        "InvalidCsr{offsets}",
        csr("offsets"),
    );
    expect_err(
        &mut r,
        "CSR offsets too short",
        nw(vec![0, 0], vec![], vec![]),
        "DimensionMismatch{offsets}",
        dim("offsets"),
    );
    expect_err(
        &mut r,
        "CSR indices length",
        nw(vec![0, 1, 2], vec![0], vec![1.0, 1.0]),
        "DimensionMismatch{indices}",
        dim("indices"),
    );
    expect_err(
        &mut r,
        "CSR values length",
        nw(vec![0, 1, 1], vec![0], vec![]),
        "DimensionMismatch{values}",
        dim("values"),
    );
    expect_err(
        &mut r,
        "CSR NaN value",
        nw(vec![0, 1, 1], vec![0], vec![f64::NAN]),
        "NonFinite{values}",
        nonfinite("values"),
    );
    expect_err(
        &mut r,
        "from_triplets row out of range",
        CsrMatrix::from_triplets(2, 2, &[(2, 0, 1.0f32)]),
        "InvalidCsr{triplets}",
        csr("triplets"),
    );
    r
}
