//! SparseGemm on the GPU. Every product is checked three ways: against the
//! f64 reference under the contract's tolerance (testkit's checker), bit for bit
//! against a host model of the kernels' arithmetic (each entry is the fma
//! chain over A's columns in order, starting from 0, which every bin must
//! reproduce exactly), and against a second run (determinism). The matrices
//! are chosen to land rows in every bin: short rows (thread merge, warp
//! sort), medium rows (warp hash), long rows with narrow spans (dense windows,
//! also forced to several windows) and long rows spread over many columns
//! (block hash, one table a row or column parts), plus power-law rows, empty
//! rows, explicit zeros, cancellation and column indices near `u32::MAX`.
//! Skipped without CUDA.

mod common;

use std::collections::BTreeMap;

use trident_core::{CsrMatrix, DeviceMemory, Error, Scalar, SparseGemm, SparseGemmDevice};
use trident_cuda::{CudaBackend, Tuning};
use trident_reference::ReferenceBackend;
use trident_testkit::cases::{self, Input, Size, SpgemmCase};
use trident_testkit::check;

use common::{Rng, backend, seed};

/// The kernels' arithmetic on the host: acc = 0, then acc = fma(a, b, acc)
/// over A's row in order.
fn model<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> CsrMatrix<T> {
    let mut offsets = vec![0];
    let (mut idx, mut val) = (Vec::new(), Vec::new());
    let mut acc: BTreeMap<u32, T> = BTreeMap::new();
    for i in 0..a.rows() {
        acc.clear();
        let (ai, av) = a.row(i);
        for (&p, &x) in ai.iter().zip(av) {
            let (bi, bv) = b.row(p as usize);
            for (&j, &y) in bi.iter().zip(bv) {
                let e = acc.entry(j).or_insert(T::ZERO);
                *e = x.mul_add(y, *e);
            }
        }
        for (&j, &v) in &acc {
            idx.push(j);
            val.push(v);
        }
        offsets.push(idx.len());
    }
    CsrMatrix::from_result(a.rows(), b.cols(), offsets, idx, val).expect("model output is valid")
}

fn bits<T: Scalar>(m: &CsrMatrix<T>) -> &[u8] {
    bytemuck::cast_slice(m.values())
}

/// Panics unless `got` is `want` bit for bit, naming the first difference.
fn assert_same<T: Scalar>(got: &CsrMatrix<T>, want: &CsrMatrix<T>, label: &str) {
    assert_eq!(
        (got.rows(), got.cols()),
        (want.rows(), want.cols()),
        "{label}: shape"
    );
    if let Some(i) = (0..=got.rows()).find(|&i| got.offsets()[i] != want.offsets()[i]) {
        panic!(
            "{label}: offsets differ first at {i}: {} vs {} (row {} has {} entries, expected {})",
            got.offsets()[i],
            want.offsets()[i],
            i.saturating_sub(1),
            got.offsets()[i] - got.offsets()[i.saturating_sub(1)],
            want.offsets()[i] - want.offsets()[i.saturating_sub(1)],
        );
    }
    if let Some(p) = (0..got.nnz()).find(|&p| got.indices()[p] != want.indices()[p]) {
        panic!(
            "{label}: column index {p} is {}, expected {}",
            got.indices()[p],
            want.indices()[p]
        );
    }
    if bits(got) != bits(want) {
        let p = (0..got.nnz())
            .find(|&p| got.values()[p].to_f64().to_bits() != want.values()[p].to_f64().to_bits())
            .unwrap_or(0);
        let row = got.offsets().partition_point(|&o| o <= p) - 1;
        panic!(
            "{label}: C[{row},{}] = {:e}, the p-ordered fma chain gives {:e}",
            got.indices()[p],
            got.values()[p].to_f64(),
            want.values()[p].to_f64()
        );
    }
}

/// Runs A*B twice on the GPU; checks the model (bits), the second run
/// (bits) and, with `reference`, the f64 reference under the contract's tolerance.
fn check_product<T: Scalar>(
    be: &CudaBackend,
    a: &CsrMatrix<T>,
    b: &CsrMatrix<T>,
    reference: bool,
    label: &str,
) where
    CudaBackend: SparseGemm<T>,
{
    let got = be
        .spgemm(a, b)
        .unwrap_or_else(|e| panic!("{label}: spgemm failed: {e}"));
    assert_same(&got, &model(a, b), &format!("{label} vs model"));
    let again = be.spgemm(a, b).expect("second run");
    assert_same(&again, &got, &format!("{label}, run 2 vs run 1"));
    if reference {
        let input = if T::NAME == "f32" {
            Input::Spgemm32(SpgemmCase {
                a: cases::convert(a),
                b: cases::convert(b),
            })
        } else {
            Input::Spgemm64(SpgemmCase {
                a: cases::convert(a),
                b: cases::convert(b),
            })
        };
        let exp = check::expected(&ReferenceBackend, &input).expect("reference");
        let produced = check::produce(be, &input).expect("produce");
        let v = check::compare(&input, &exp, &produced);
        assert!(v.passed(), "{label} vs reference: {}", v.summary());
    }
}

/// `rows x cols` with `per_row` distinct columns per row drawn from
/// `[base, base + spread)`, values U[-1, 1) with some explicit zeros.
fn spread_rows<T: Scalar>(
    rng: &mut Rng,
    rows: usize,
    cols: usize,
    per_row: impl Fn(usize) -> usize,
    base: u64,
    spread: u64,
) -> CsrMatrix<T> {
    let mut trip = Vec::new();
    for i in 0..rows {
        let want = per_row(i).min(spread as usize);
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < want {
            seen.insert((base + rng.below(spread)) as u32);
        }
        for c in seen {
            let v = if rng.below(10) == 0 {
                0.0
            } else {
                rng.range(-1.0, 1.0)
            };
            trip.push((i as u32, c, T::from_f64(v)));
        }
    }
    CsrMatrix::from_triplets(rows, cols, &trip).expect("valid")
}

#[test]
fn catalog_cases_match_reference_model_and_rerun() {
    let Some(be) = backend("spgemm catalog") else {
        return;
    };
    let s = seed("spgemm catalog");
    for size in [Size::Small, Size::Large] {
        for case in cases::cases("sparse_gemm", size) {
            let label = format!("{} ({size:?})", case.name);
            let input = case.input(s);
            if let Some(c) = input.downcast_ref::<SpgemmCase<f32>>() {
                check_product(&be, &c.a, &c.b, true, &label)
            } else if let Some(c) = input.downcast_ref::<SpgemmCase<f64>>() {
                check_product(&be, &c.a, &c.b, true, &label)
            } else {
                panic!("{label}: not a SpGEMM input: {}", input.describe())
            }
        }
    }
}

#[test]
fn every_bin_matches_model() {
    let Some(be) = backend("spgemm bins") else {
        return;
    };
    let mut rng = Rng::new(seed("spgemm bins"));
    for f64_ in [false, true] {
        let be = &be;
        let ty = if f64_ { "f64" } else { "f32" };
        macro_rules! run {
            ($a:expr, $b:expr, $label:expr) => {
                if f64_ {
                    let (a, b): (CsrMatrix<f64>, CsrMatrix<f64>) =
                        (cases::convert(&$a), cases::convert(&$b));
                    check_product(be, &a, &b, true, &format!("{} {ty}", $label));
                } else {
                    check_product(be, &$a, &$b, true, &format!("{} {ty}", $label));
                }
            };
        }
        // Mixed lengths 0..~300 per row: sort and warp-hash bins, empty rows.
        let a: CsrMatrix<f32> =
            spread_rows(&mut rng, 700, 900, |i| [0, 1, 3, 8, 20, 60][i % 6], 0, 900);
        let b: CsrMatrix<f32> =
            spread_rows(&mut rng, 900, 1200, |i| [0, 2, 5, 11, 40][i % 5], 0, 1200);
        run!(a, b, "mixed rows");
        // Long rows on 3000 columns: nnz > 2048 with a narrow span (dense).
        let a: CsrMatrix<f32> = cases::random_csr(300, 3000, 0.03, true, rng.next_u64());
        let b: CsrMatrix<f32> = cases::random_csr(3000, 3000, 0.03, true, rng.next_u64());
        run!(a, b, "dense rows");
        // A handle with 512-column windows (the macro checks on `be`).
        let windowed = be.tuned(Tuning {
            spgemm_window: Some(512),
            ..Tuning::default()
        });
        let label = format!("dense rows, 512-column windows {ty}");
        if f64_ {
            let (a, b): (CsrMatrix<f64>, CsrMatrix<f64>) = (cases::convert(&a), cases::convert(&b));
            check_product(&windowed, &a, &b, true, &label);
        } else {
            check_product(&windowed, &a, &b, true, &label);
        }
        // Long rows spread over 10M columns: block hash, one table a row.
        let a: CsrMatrix<f32> = spread_rows(
            &mut rng,
            6,
            1000,
            |i| [1000, 700, 3, 0, 400, 999][i],
            0,
            1000,
        );
        let b: CsrMatrix<f32> = cases::uniform_rows(1000, 10_000_000, 5, rng.next_u64());
        run!(a, b, "spread rows (shared table)");
        // 2000 x 6 = 12000 distinct columns: more than a block's shared
        // memory holds, so the numeric pass does the row in column parts.
        let a: CsrMatrix<f32> = spread_rows(&mut rng, 3, 2000, |i| [2000, 1500, 2][i], 0, 2000);
        let b: CsrMatrix<f32> = cases::uniform_rows(2000, 10_000_000, 6, rng.next_u64());
        run!(a, b, "spread rows (column parts)");
        // 40000 products in the first 30000 of 40M columns: one histogram
        // bucket (40M / 2048 columns) holds more than a part may, so parts
        // cut inside it, in the symbolic pass (q = 40001) and the numeric
        // one (about 22000 distinct columns).
        let mut trip = Vec::new();
        for p in 0..8000u32 {
            let mut seen = std::collections::BTreeSet::new();
            while seen.len() < 5 {
                seen.insert(rng.below(30_000) as u32);
            }
            trip.extend(
                seen.into_iter()
                    .map(|c| (p, c, rng.range(-1.0, 1.0) as f32)),
            );
        }
        trip.push((7999, 39_999_999, 0.5));
        let b = CsrMatrix::<f32>::from_triplets(8000, 40_000_000, &trip).expect("valid");
        // Rows 0 and 2 of A are longer than the analysis gives a warp: the
        // block walks them one after the other.
        let a: CsrMatrix<f32> = spread_rows(&mut rng, 3, 8000, |i| [8000, 3, 5000][i], 0, 8000);
        run!(a, b, "one heavy bucket (parts inside it)");
        // Power-law: row 7 of A full.
        let a: CsrMatrix<f32> = cases::power_law_row(2500, 2500, 7, rng.next_u64());
        run!(a, a, "power-law row");
    }
}

#[test]
fn columns_near_u32_max() {
    let Some(be) = backend("spgemm u32 max") else {
        return;
    };
    let mut rng = Rng::new(seed("spgemm u32 max"));
    let n = u32::MAX as usize; // the largest column count: indices up to 2^32 - 2
    let top = u32::MAX as u64 - 1;
    let a: CsrMatrix<f64> = spread_rows(
        &mut rng,
        8,
        400,
        |i| [1, 5, 30, 90, 200, 400, 0, 17][i],
        0,
        400,
    );
    // B's columns in the top 5000 (dense windows reach 2^32 - 1) and over the
    // top 2^31 (block hash), rows of 3 and 12 entries.
    let b_near: CsrMatrix<f64> =
        spread_rows(&mut rng, 400, n, |i| 3 + 9 * (i % 2), top - 4999, 5000);
    let b_far: CsrMatrix<f64> = spread_rows(
        &mut rng,
        400,
        n,
        |i| 3 + 9 * (i % 2),
        top - (1 << 31),
        1 << 31,
    );
    for (b, label) in [(&b_near, "top 5000 columns"), (&b_far, "top 2^31 columns")] {
        let got = be.spgemm(&a, b).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_same(&got, &model(&a, b), label);
    }
    let windowed = be.tuned(Tuning {
        spgemm_window: Some(256),
        ..Tuning::default()
    });
    let got = windowed.spgemm(&a, &b_near).expect("windows");
    assert_same(
        &got,
        &model(&a, &b_near),
        "top 5000 columns, 256-column windows",
    );
}

#[test]
fn explicit_zeros_and_cancellation_are_stored() {
    let Some(be) = backend("spgemm zeros") else {
        return;
    };
    // C(0,0) = 1*1 + 1*(-1) = 0 and C(0,1) = 1*0 (a stored zero of B).
    let a = CsrMatrix::new(1, 2, vec![0, 2], vec![0, 1], vec![1.0f32, 1.0]).unwrap();
    let b = CsrMatrix::new(2, 3, vec![0, 2, 3], vec![0, 1, 0], vec![1.0f32, 0.0, -1.0]).unwrap();
    let c = be.spgemm(&a, &b).unwrap();
    assert_eq!(c.offsets(), &[0, 2]);
    assert_eq!(c.indices(), &[0, 1]);
    assert_eq!(c.values(), &[0.0, 0.0]);
}

#[test]
fn empty_shapes() {
    let Some(be) = backend("spgemm empty") else {
        return;
    };
    let shapes = [(0usize, 5usize, 4usize), (3, 0, 4), (4, 6, 0), (0, 0, 0)];
    for (m, k, n) in shapes {
        let a = CsrMatrix::<f32>::zeros(m, k).unwrap();
        let b = CsrMatrix::<f32>::zeros(k, n).unwrap();
        let c = be.spgemm(&a, &b).unwrap();
        assert_eq!((c.rows(), c.cols(), c.nnz()), (m, n, 0), "{m}x{k}x{n}");
        let (da, db) = (be.upload_csr(&a).unwrap(), be.upload_csr(&b).unwrap());
        let dc = be.spgemm_device(&da, &db).unwrap();
        assert_eq!(be.download_csr(&dc).unwrap(), c, "{m}x{k}x{n} device");
    }
    // Entries in A, none in B (and the reverse): all rows of C empty.
    let a: CsrMatrix<f64> = cases::random_csr(30, 20, 0.3, false, 5);
    let z = CsrMatrix::<f64>::zeros(20, 10).unwrap();
    assert_eq!(
        be.spgemm(&a, &z).unwrap(),
        CsrMatrix::zeros(30, 10).unwrap()
    );
    let zt = CsrMatrix::<f64>::zeros(10, 30).unwrap();
    assert_eq!(
        be.spgemm(&zt, &a).unwrap(),
        CsrMatrix::zeros(10, 20).unwrap()
    );
}

#[test]
fn device_chaining_and_errors() {
    let Some(be) = backend("spgemm device") else {
        return;
    };
    let mut rng = Rng::new(seed("spgemm device"));
    let a: CsrMatrix<f32> = cases::rmat(10, 8, rng.next_u64());
    let b: CsrMatrix<f32> = spread_rows(&mut rng, 1024, 1024, |i| i % 13, 0, 1024);
    let (da, db) = (be.upload_csr(&a).unwrap(), be.upload_csr(&b).unwrap());
    assert_eq!(
        be.download_csr(&da).unwrap(),
        a,
        "upload/download round trip"
    );
    // C = A B, E = C B without leaving the device.
    let dc = be.spgemm_device(&da, &db).unwrap();
    let de = be.spgemm_device(&dc, &db).unwrap();
    let c = model(&a, &b);
    assert_same(&be.download_csr(&dc).unwrap(), &c, "C = A B on the device");
    assert_same(
        &be.download_csr(&de).unwrap(),
        &model(&c, &b),
        "E = C B on the device",
    );
    // Shapes are checked.
    let wrong: CsrMatrix<f32> = cases::random_csr(7, 5, 0.5, false, 1);
    let dw = be.upload_csr(&wrong).unwrap();
    assert!(matches!(
        be.spgemm_device(&da, &dw),
        Err(Error::DimensionMismatch {
            field: "b.rows",
            ..
        })
    ));
    assert!(matches!(
        be.spgemm(&a, &wrong),
        Err(Error::DimensionMismatch {
            field: "b.rows",
            ..
        })
    ));
    // A device matrix whose buffers do not match its shape is refused.
    let mut bad = be.upload_csr(&a).unwrap();
    bad.offsets = be.alloc_zeroed::<u64>(3).unwrap();
    assert!(matches!(
        be.spgemm_device(&bad, &db),
        Err(Error::DimensionMismatch { field: "a", .. })
    ));
    be.synchronize().unwrap();
}

/// NaN and inf in inputs large enough to be checked beside the staged upload
/// (on another thread) are reported as the check on its own reports them:
/// the first fault, A before B, with its index, and nothing computed.
#[test]
fn non_finite_values_found_in_staged_uploads() {
    let Some(be) = backend("spgemm non-finite") else {
        return;
    };
    let a: CsrMatrix<f32> = cases::poisson2d(1024);
    let nnz = a.nnz();
    let late_nan = cases::poisoned(&a, &[(nnz - 3, f32::NAN)]);
    let two = cases::poisoned(&a, &[(nnz / 2 + 1, f32::INFINITY), (nnz - 1, f32::NAN)]);
    let cases: [(&CsrMatrix<f32>, &CsrMatrix<f32>, &str, usize); 3] = [
        (&a, &late_nan, "b.values", nnz - 3),
        (&late_nan, &a, "a.values", nnz - 3),
        (&two, &late_nan, "a.values", nnz / 2 + 1),
    ];
    for (x, y, field, index) in cases {
        match be.spgemm(x, y) {
            Err(Error::NonFinite {
                field: f, index: i, ..
            }) => {
                assert_eq!((f, i), (field, index), "{field}[{index}]")
            }
            other => panic!("{field}[{index}]: expected NonFinite, got {other:?}"),
        }
    }
    // The clean product still goes through.
    assert_eq!(be.spgemm(&a, &a).unwrap().nnz(), model(&a, &a).nnz());
}
