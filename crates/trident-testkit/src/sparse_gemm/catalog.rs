//! The SparseGemm cases of the catalog ([`crate::cases`]): the random
//! contract-family cases at each size, then the edge cases.

use trident_core::*;

use crate::cases::catalog::{add, pick};
use crate::cases::*;

fn csr<T: Scalar>(rows: usize, cols: usize, t: &[(u32, u32, f64)]) -> CsrMatrix<T> {
    let t: Vec<(u32, u32, T)> = t.iter().map(|&(r, c, v)| (r, c, T::from_f64(v))).collect();
    CsrMatrix::from_triplets(rows, cols, &t).expect("hand-made edge matrix is valid")
}

pub(crate) fn spgemm_cases(size: Size) -> Vec<Case> {
    let p = "sparse_gemm";
    let mut v = Vec::new();
    let grid = pick(size, 16, 512);
    let scale = pick(size, 8u32, 14);
    let rows = pick(size, 1024usize, 1 << 16);
    add(
        &mut v,
        format!("spgemm-poisson2d-{grid}"),
        p,
        false,
        move |_| Input::Spgemm32(SpgemmCase::square(poisson2d(grid))),
    );
    add(
        &mut v,
        format!("spgemm-poisson2d-{grid}-f64"),
        p,
        false,
        move |_| Input::Spgemm64(SpgemmCase::square(poisson2d(grid))),
    );
    add(
        &mut v,
        format!("spgemm-rmat-{scale}-8"),
        p,
        false,
        move |s| Input::Spgemm32(SpgemmCase::square(rmat(scale, 8, s))),
    );
    add(
        &mut v,
        format!("spgemm-rmat-{scale}-8-f64"),
        p,
        false,
        move |s| Input::Spgemm64(SpgemmCase::square(rmat(scale, 8, s))),
    );
    let rname = if rows >= 1024 && rows.is_multiple_of(1024) {
        format!("{}K", rows / 1024)
    } else {
        rows.to_string()
    };
    add(
        &mut v,
        format!("spgemm-uniform-{rname}-8"),
        p,
        false,
        move |s| Input::Spgemm32(SpgemmCase::square(uniform_rows(rows, rows, 8, s))),
    );
    let (m, k, n) = pick(size, (50, 80, 30), (2000, 3000, 1500));
    let dens = pick(size, 0.1, 0.005);
    add(
        &mut v,
        format!("spgemm-rect-{m}x{k}x{n}-f64"),
        p,
        false,
        move |s| {
            Input::Spgemm64(SpgemmCase {
                a: random_csr(m, k, dens, true, s),
                b: random_csr(k, n, dens, true, s ^ 1),
            })
        },
    );
    // Edge cases.
    add(&mut v, "spgemm-edge-empty-a".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase {
            a: CsrMatrix::zeros(0, 5).unwrap(),
            b: random_csr(5, 4, 0.5, false, s),
        })
    });
    add(&mut v, "spgemm-edge-k0".into(), p, true, |_| {
        Input::Spgemm64(SpgemmCase {
            a: CsrMatrix::zeros(3, 0).unwrap(),
            b: CsrMatrix::zeros(0, 4).unwrap(),
        })
    });
    add(&mut v, "spgemm-edge-no-entries".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase {
            a: CsrMatrix::zeros(4, 6).unwrap(),
            b: random_csr(6, 3, 0.5, false, s),
        })
    });
    add(&mut v, "spgemm-edge-1x1".into(), p, true, |_| {
        Input::Spgemm64(SpgemmCase::square(csr(1, 1, &[(0, 0, -3.0)])))
    });
    add(&mut v, "spgemm-edge-empty-rows".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase::square(random_csr(40, 40, 0.03, false, s)))
    });
    add(&mut v, "spgemm-edge-power-law-row".into(), p, true, |s| {
        Input::Spgemm32(SpgemmCase::square(power_law_row(300, 300, 7, s)))
    });
    add(&mut v, "spgemm-edge-explicit-zeros".into(), p, true, |_| {
        // Stored zeros produce stored (zero) products.
        let a = csr(
            3,
            3,
            &[
                (0, 0, 0.0),
                (0, 2, 1.0),
                (1, 1, 0.0),
                (2, 0, 2.0),
                (2, 2, 0.0),
            ],
        );
        Input::Spgemm64(SpgemmCase::square(a))
    });
    add(&mut v, "spgemm-edge-cancellation".into(), p, true, |_| {
        // C(0,0) = 1*1 + 1*(-1) = 0 must still be stored.
        let a = csr(1, 2, &[(0, 0, 1.0), (0, 1, 1.0)]);
        let b = csr(2, 2, &[(0, 0, 1.0), (1, 0, -1.0), (1, 1, 0.5)]);
        Input::Spgemm32(SpgemmCase { a, b })
    });
    add(&mut v, "spgemm-edge-outer-product".into(), p, true, |s| {
        // A column vector times a row vector: C dense from tiny operands.
        Input::Spgemm32(SpgemmCase {
            a: random_csr(60, 1, 1.0, false, s),
            b: random_csr(1, 70, 1.0, false, s ^ 1),
        })
    });
    // The ends of the range: entries of 2^e (e = +-100 in f32, +-600 in f64)
    // whose products overflow, underflow or cancel; the checker's range
    // rule (docs/semantics.md) judges what leaves the type's range.
    add(&mut v, "spgemm-edge-range-f32".into(), p, true, |s| {
        Input::Spgemm32(range_case(100, s))
    });
    add(&mut v, "spgemm-edge-range-f64".into(), p, true, |s| {
        Input::Spgemm64(range_case(600, s))
    });
    // Sums that cancel exactly at the top of the range: 1e30 * 1e30 - 1e30 * 1e30.
    add(
        &mut v,
        "spgemm-edge-overflow-cancels".into(),
        p,
        true,
        |_| {
            let a = csr(1, 2, &[(0, 0, 1e30), (0, 1, 1e30)]);
            let b = csr(2, 1, &[(0, 0, 1e30), (1, 0, -1e30)]);
            Input::Spgemm32(SpgemmCase { a, b })
        },
    );
    v
}

/// `A * B` of 20 x 20 random matrices whose entries are scaled by `2^e`,
/// `1` or `2^-e` by position, so that products span both ends of the range.
fn range_case<T: Scalar>(e: i32, seed: u64) -> SpgemmCase<T> {
    let scale = |m: CsrMatrix<T>, flip: bool| -> CsrMatrix<T> {
        let mut t = Vec::new();
        for r in 0..m.rows() {
            for p in m.offsets()[r]..m.offsets()[r + 1] {
                let c = m.indices()[p] as usize;
                let k = ((r + c) % 3) as i32 - 1;
                let k = if flip { -k } else { k };
                let v = m.values()[p].to_f64() * 2f64.powi(k * e);
                t.push((r as u32, c as u32, T::from_f64(v)));
            }
        }
        CsrMatrix::from_triplets(m.rows(), m.cols(), &t).expect("scaled random matrix is valid")
    };
    SpgemmCase {
        a: scale(random_csr(20, 20, 0.3, false, seed), false),
        b: scale(random_csr(20, 20, 0.3, false, seed ^ 7), true),
    }
}

/// The contract's SparseGemm benchmark cases at full size ([`crate::cases::spec_cases`]).
pub(crate) fn spgemm_spec_cases() -> Vec<Case> {
    let p = "sparse_gemm";
    let mut v = Vec::new();
    add(&mut v, "spgemm-poisson2d-2048".into(), p, false, |_| {
        Input::Spgemm32(SpgemmCase::square(poisson2d(2048)))
    });
    add(&mut v, "spgemm-rmat-16-8".into(), p, false, |s| {
        Input::Spgemm32(SpgemmCase::square(rmat(16, 8, s)))
    });
    add(&mut v, "spgemm-uniform-1M-8".into(), p, false, |s| {
        Input::Spgemm32(SpgemmCase::square(uniform_rows(1 << 20, 1 << 20, 8, s)))
    });
    v
}
