//! Each accumulator path against a naive product that sums in the same order
//! (so equality is bit for bit), power-law rows, kept zeros, empty shapes, and
//! identical output across thread counts and in a caller's pool.

use std::collections::BTreeMap;

use trident_core::{CsrMatrix, Scalar, SparseGemm};
use trident_testkit::cases;

use crate::RayonBackend;

/// Row by row with an ordered map, `C(i, j)` started by its first product in
/// ascending `p`: the summation order the backend promises.
fn naive<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> CsrMatrix<T> {
    let mut offsets = vec![0];
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    for i in 0..a.rows() {
        let mut row: BTreeMap<u32, T> = BTreeMap::new();
        let (ac, av) = a.row(i);
        for (&p, &x) in ac.iter().zip(av) {
            let (bc, bv) = b.row(p as usize);
            for (&j, &y) in bc.iter().zip(bv) {
                row.entry(j).and_modify(|s| *s += x * y).or_insert(x * y);
            }
        }
        for (j, v) in row {
            indices.push(j);
            values.push(v);
        }
        offsets.push(indices.len());
    }
    CsrMatrix::new(a.rows(), b.cols(), offsets, indices, values).unwrap()
}

fn bits<T: Scalar>(m: &CsrMatrix<T>) -> (Vec<usize>, Vec<u32>, Vec<u64>) {
    (
        m.offsets().to_vec(),
        m.indices().to_vec(),
        m.values().iter().map(|v| v.to_f64().to_bits()).collect(),
    )
}

/// Checks `a * b` on 1, 2 and 3 threads against [`naive`], bit for bit, by
/// the fused pass where it applies and by the two-pass product.
fn check<T: Scalar>(label: &str, a: &CsrMatrix<T>, b: &CsrMatrix<T>)
where
    RayonBackend: SparseGemm<T>,
{
    let want = bits(&naive(a, b));
    for t in [1, 2, 3] {
        let be = RayonBackend::with_threads(t).unwrap();
        for _ in 0..2 {
            let got = be.spgemm(a, b).unwrap();
            assert_eq!((got.rows(), got.cols()), (a.rows(), b.cols()), "{label}");
            assert!(
                bits(&got) == want,
                "{label}: {t} threads differ from the naive product"
            );
        }
        // The two-pass product, which the fused pass takes over for every
        // banded input (these small ones all are).
        let got = be.install(|| super::product(a, b, false)).unwrap();
        assert!(
            bits(&got) == want,
            "{label}: {t} threads, two passes, differ from the naive product"
        );
    }
    // The default backend, called from inside a caller's pool of 3 threads.
    let callers = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let be = RayonBackend::new().unwrap();
    let got = callers.install(|| be.spgemm(a, b)).unwrap();
    assert!(bits(&got) == want, "{label}: in the caller's pool");
}

#[test]
fn rmat_mixes_hash_and_dense_rows() {
    // Squared, n = 4096: every row within the dense window, several chunks.
    let a = cases::rmat::<f64>(12, 16, 3);
    check("rmat-12-16 f64", &a, &a);
    let a = cases::rmat::<f32>(12, 16, 4);
    check("rmat-12-16 f32", &a, &a);
    // Times B rows of 8 random columns out of 2^20: low-degree rows hash,
    // rows of degree >= 512 have enough products to go dense, degree-1 rows
    // copy a B row.
    let b = cases::uniform_rows::<f32>(4096, 1 << 20, 8, 5);
    check("rmat-12-16 times wide uniform", &a, &b);
}

#[test]
fn power_law_row() {
    let a = cases::power_law_row::<f32>(3000, 3000, 17, 5);
    check("power-law row squared", &a, &a);
    let b = cases::random_csr::<f32>(3000, 50, 0.05, true, 6);
    check("power-law row times random", &a, &b);
}

#[test]
fn heavy_rows_over_wide_outputs() {
    // One A row of 10,000 entries over B rows of one random column each in
    // 2^20 columns: the dense accumulator with a sparse bitmap to scan.
    let a = cases::uniform_rows::<f64>(2, 10_000, 10_000, 7);
    let b = cases::uniform_rows::<f64>(10_000, 1 << 20, 1, 8);
    check("heavy row, wide output", &a, &b);
}

#[test]
fn light_rows_over_wide_outputs_merge_or_hash_and_banded_rows_go_dense() {
    // 64 products over 2^20 columns: merged runs.
    let a = cases::uniform_rows::<f32>(5000, 5000, 8, 9);
    let b = cases::uniform_rows::<f32>(5000, 1 << 20, 8, 10);
    check("uniform rows, 2^20 columns", &a, &b);
    // Just past the window, up to 256 products (merged, with repeated
    // columns across runs), then 272 (hashed).
    for (k, seed) in [(16, 11), (17, 12)] {
        let a = cases::uniform_rows::<f64>(3000, 3000, k, seed);
        let b = cases::uniform_rows::<f64>(3000, 70_000, 16, seed + 1);
        check(&format!("{k} x 16 products over 70K columns"), &a, &b);
    }
    // Banded: each row's columns lie in a window of 4 x 200, so dense.
    let p = cases::poisson2d::<f64>(200);
    check("poisson2d-200", &p, &p);
}

#[test]
fn explicit_zeros_and_cancellation_are_kept() {
    // [[1, 1]] * [[1, 0], [-1, 0]]: C(0,0) cancels to 0, C(0,1) is 1*0 + 1*0.
    let a = CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![1.0f64, 1.0]).unwrap();
    let b = CsrMatrix::new(
        2,
        2,
        vec![0, 2, 4],
        vec![0, 1, 0, 1],
        vec![1.0, 0.0, -1.0, 0.0],
    )
    .unwrap();
    let c = RayonBackend::new().unwrap().spgemm(&a, &b).unwrap();
    assert_eq!(c.offsets(), &[0, 2]);
    assert_eq!(c.indices(), &[0, 1]);
    assert_eq!(c.values(), &[0.0, 0.0]);
    check("zeros", &a, &b);
    let z = cases::random_csr::<f32>(60, 60, 0.3, true, 11);
    check("random with explicit zeros", &z, &z);
}

#[test]
fn empty_shapes() {
    let be = RayonBackend::new().unwrap();
    for (m, k, n) in [(0, 0, 0), (0, 5, 3), (4, 0, 3), (4, 5, 0), (3, 3, 3)] {
        let a = CsrMatrix::<f32>::zeros(m, k).unwrap();
        let b = cases::random_csr::<f32>(k, n, 0.5, false, 12);
        let c = be.spgemm(&a, &b).unwrap();
        assert_eq!((c.rows(), c.cols(), c.nnz()), (m, n, 0));
        let a = cases::random_csr::<f32>(m, k, 0.5, false, 13);
        let b = CsrMatrix::<f32>::zeros(k, n).unwrap();
        let c = be.spgemm(&a, &b).unwrap();
        assert_eq!((c.rows(), c.cols(), c.nnz()), (m, n, 0));
    }
}

/// The `side^dim`-point grid's stencil of all neighbours (9-point in 2D,
/// 27-point in 3D), values varying so that sums are not all alike.
fn full_stencil(side: usize, dim: u32) -> CsrMatrix<f32> {
    let n = side.pow(dim);
    let coord = |i: usize, d: u32| (i / side.pow(d) % side) as isize;
    let mut trip = Vec::new();
    for i in 0..n {
        for j in i.saturating_sub(side.pow(dim - 1) + side + 1)
            ..(i + side.pow(dim - 1) + side + 2).min(n)
        {
            if (0..dim).all(|d| (coord(i, d) - coord(j, d)).abs() <= 1) {
                let v = if i == j {
                    8.0
                } else {
                    -1.0 - (i + 3 * j) as f32 / n as f32
                };
                trip.push((i as u32, j as u32, v));
            }
        }
    }
    let m = CsrMatrix::from_triplets(n, n, &trip).unwrap();
    let interior = (0..dim).map(|d| side.pow(d)).sum::<usize>();
    assert_eq!(m.row(interior).0.len(), 3usize.pow(dim));
    m
}

#[test]
fn stencils_of_all_neighbours() {
    // 81 products into 25 columns (short rows of a narrow span), then 729
    // into 125 (the window).
    let a = full_stencil(40, 2);
    check("9-point stencil", &a, &a);
    let a = full_stencil(12, 3);
    check("27-point stencil", &a, &a);
}

#[test]
fn short_rows_merge_duplicates_keep_empty_rows_and_cancellations() {
    // Stencil rows (25 products, 13 columns) at both precisions and on a
    // grid whose width is a power of two.
    let p = cases::poisson2d::<f32>(64);
    check("poisson2d-64 f32", &p, &p);
    let p = cases::poisson2d::<f64>(33);
    check("poisson2d-33 f64", &p, &p);
    // Short rows with many duplicates: every B row names columns 0..4, so
    // each product column repeats once per A entry; row 1 of A is empty,
    // row 2 names an empty B row only; row 3's sums cancel to zero.
    let a = CsrMatrix::new(
        4,
        4,
        vec![0, 3, 3, 4, 6],
        vec![0, 1, 2, 3, 0, 1],
        vec![1.0f64, 2.0, -1.0, 5.0, 1.0, -1.0],
    )
    .unwrap();
    let b = CsrMatrix::new(
        4,
        6,
        vec![0, 4, 8, 12, 12],
        vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3],
        vec![1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0, 0.5, -1.0, 0.0, 2.0],
    )
    .unwrap();
    let c = RayonBackend::new().unwrap().spgemm(&a, &b).unwrap();
    assert_eq!(c.offsets(), &[0, 4, 4, 4, 8]);
    assert_eq!(c.indices(), &[0, 1, 2, 3, 0, 1, 2, 3]);
    assert_eq!(
        c.values(),
        &[2.5, 7.0, 9.0, 10.0, 0.0, 0.0, 0.0, 0.0],
        "duplicates summed in ascending p, cancellations kept as zeros"
    );
    check("short rows with duplicates", &a, &b);
    // Short rows whose columns arrive out of order (B rows met in
    // descending column order) and sit at the window's far edge.
    let far = (1u32 << 16) + 7;
    let b = CsrMatrix::new(
        3,
        far as usize + 1,
        vec![0, 2, 4, 6],
        vec![far - 1, far, 5, 9, 0, 3],
        vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0],
    )
    .unwrap();
    let a = CsrMatrix::new(
        2,
        3,
        vec![0, 3, 5],
        vec![0, 1, 2, 1, 2],
        vec![1.0f32, -1.0, 0.5, 2.0, 2.0],
    )
    .unwrap();
    check("short rows, unsorted arrival, wide span", &a, &b);
    // Columns a window apart share a slot of the short accumulator when a
    // row's span is not checked first (the fused pass): such rows go
    // elsewhere, and the rows after them still start from clean sums.
    let b = CsrMatrix::new(
        2,
        (1 << 16) + 2,
        vec![0, 1, 3],
        vec![1, 0, (1 << 16) + 1],
        vec![2.0f32, 3.0, 5.0],
    )
    .unwrap();
    let a = CsrMatrix::new(
        3,
        2,
        vec![0, 2, 4, 6],
        vec![0, 1, 0, 1, 0, 1],
        vec![1.0f32, 1.0, -1.0, 0.5, 4.0, 1.0],
    )
    .unwrap();
    check("short rows whose columns share a slot", &a, &b);
}

/// The fused pass's row plans: a tridiagonal-plus matrix whose rows repeat
/// one pattern, broken by rows with a column moved (same entries, another
/// relative column midway through the row), a missing entry (another B-row
/// length), an empty row, and a run of 300 rows that repeat nothing (more
/// misses than the plan retries, then one plan per 64 rows); values vary
/// row to row and some products cancel.
#[test]
fn rows_that_repeat_a_pattern_and_rows_that_break_it() {
    let n = 4000usize;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |k: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % k
    };
    let mut trip = Vec::new();
    for i in 0..n {
        let cols: Vec<isize> = match i {
            _ if i % 211 == 7 => vec![],
            _ if i % 97 == 5 => vec![-2, -1, 0, 3],
            _ if i % 89 == 3 => vec![-2, 0, 1],
            1500..1800 => {
                let mut c: Vec<isize> = (0..2 + rand(4)).map(|_| rand(40) as isize - 20).collect();
                c.sort_unstable();
                c.dedup();
                c
            }
            _ => vec![-2, -1, 0, 1, 2],
        };
        for d in cols {
            let j = i as isize + d;
            if (0..n as isize).contains(&j) {
                let v = if d == 0 {
                    4.0
                } else {
                    (rand(7) as f32 - 3.0) * 0.5
                };
                trip.push((i as u32, j as u32, v));
            }
        }
    }
    let a = CsrMatrix::<f32>::from_triplets(n, n, &trip).unwrap();
    check("patterned rows", &a, &a);
    let a64 = CsrMatrix::<f64>::from_triplets(
        n,
        n,
        &trip
            .iter()
            .map(|&(i, j, v)| (i, j, v as f64))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    check("patterned rows, f64", &a64, &a64);
}

/// Non-finite values reach the fused pass only through unchecked
/// construction; the pass checks A's values as it reads them (B's too for
/// a square), the two-pass path scans first, and both report what
/// `validate::spgemm` reports: the first fault, A before B.
#[test]
fn non_finite_values_are_reported_as_validation_reports_them() {
    let a: CsrMatrix<f32> = cases::poisson2d(48);
    let nnz = a.nnz();
    let late = cases::poisoned(&a, &[(nnz - 2, f32::NAN)]);
    let two = cases::poisoned(&a, &[(nnz / 3, f32::INFINITY), (nnz - 1, f32::NAN)]);
    let cases: [(&CsrMatrix<f32>, &CsrMatrix<f32>); 5] = [
        (&late, &late),
        (&two, &two),
        (&a, &late),
        (&late, &a),
        (&two, &late),
    ];
    for (x, y) in cases {
        let want = trident_core::validate::spgemm(x, y).unwrap_err();
        for t in [1, 2, 3] {
            let be = RayonBackend::with_threads(t).unwrap();
            let got = be.spgemm(x, y).unwrap_err();
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{t} threads");
            let got = be.install(|| super::product(x, y, false)).unwrap_err();
            assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "{t} threads, two passes"
            );
        }
    }
}
