//! The DenseGemm conformance suite and its bad-input group (see
//! [`crate::conformance`] for what every suite runs).

use crate::cases::{self, *};
use crate::check::{self};
use crate::conformance::*;
use proptest::prelude::*;
use trident_core::*;

fn gemm_known<T: Scalar>(b: &dyn Primitives) -> Result<bool>
where
    for<'x> dyn Primitives + 'x: DenseGemm<T>,
{
    let f = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let a = f(&[1.0, 2.0, 3.0, 4.0]);
    let bb = f(&[5.0, 6.0, 7.0, 8.0]);
    let mut c = f(&[1.0, 1.0, 1.0, 1.0]);
    let p = GemmParams {
        alpha: T::from_f64(2.0),
        beta: T::from_f64(-1.0),
        ..GemmParams::default()
    };
    DenseGemm::<T>::gemm(
        b,
        &p,
        MatRef::dense(&a, 2, 2)?,
        MatRef::dense(&bb, 2, 2)?,
        MatMut::dense(&mut c, 2, 2)?,
    )?;
    let ok1 = c == f(&[37.0, 43.0, 85.0, 99.0]);
    let mut c = vec![T::from_f64(f64::NAN); 4];
    let p = GemmParams {
        op_a: Op::T,
        ..GemmParams::default()
    };
    DenseGemm::<T>::gemm(
        b,
        &p,
        MatRef::dense(&a, 2, 2)?,
        MatRef::dense(&bb, 2, 2)?,
        MatMut::dense(&mut c, 2, 2)?,
    )?;
    Ok(ok1 && c == f(&[26.0, 30.0, 38.0, 44.0]))
}

/// The DenseGemm suite (f32 Strict, Tf32 and Tf32x3, f64; see the module docs).
pub fn dense_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("dense_gemm", b);
    known(&mut r, "2x2 alpha=2 beta=-1 (f32)", gemm_known::<f32>(b));
    known(&mut r, "2x2 alpha=2 beta=-1 (f64)", gemm_known::<f64>(b));
    run_catalog(&mut r, b, "dense_gemm");
    run_determinism(&mut r, b, "dense_gemm");
    let strategy = (
        (0usize..10, 0usize..10, 0usize..18),
        (
            any::<bool>(),
            any::<bool>(),
            0usize..4,
            0usize..4,
            0usize..3,
        ),
        (0u8..4, any::<u64>()),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&((m, n, k), (ta, tb, ai, bi, pad), (kind, seed))| {
            let alpha = [1.0, 0.0, -0.5, 2.25][ai];
            let beta = [0.0, 1.0, 0.5, -3.0][bi];
            let op = |t: bool| if t { Op::T } else { Op::N };
            let prec = match kind {
                2 => Precision::Tf32,
                3 => Precision::Tf32x3,
                _ => Precision::Strict,
            };
            if kind == 1 {
                let p = GemmParams {
                    alpha,
                    beta,
                    op_a: op(ta),
                    op_b: op(tb),
                    precision: prec,
                };
                Input::Gemm64(cases::gemm_general(m, n, k, p, pad, seed))
            } else {
                let p = GemmParams {
                    alpha: alpha as f32,
                    beta: beta as f32,
                    op_a: op(ta),
                    op_b: op(tb),
                    precision: prec,
                };
                Input::Gemm32(cases::gemm_general(m, n, k, p, pad, seed))
            }
        },
    );
    r
}

// -------------------------------------------------------------- bad input

/// A GEMM call on bad input must fail with `want` and leave C's buffer bit
/// for bit as it was.
fn gemm_bad<T: Scalar>(
    r: &mut SuiteReport,
    b: &dyn Primitives,
    label: &str,
    p: GemmParams<T>,
    (a, ar, ac): (&[T], usize, usize),
    (bm, br, bc): (&[T], usize, usize),
    (cr, cc): (usize, usize),
    c_init: Option<&[T]>,
    want: (&str, &dyn Fn(&Error) -> bool),
) where
    for<'x> dyn Primitives + 'x: DenseGemm<T>,
{
    let label = format!("gemm {} {label}", T::NAME);
    let mut c: Vec<T> = match c_init {
        Some(v) => v.to_vec(),
        None => (0..cr * cc)
            .map(|i| T::from_f64(1000.0 + i as f64))
            .collect(),
    };
    let before = c.clone();
    let (Ok(av), Ok(bv)) = (MatRef::dense(a, ar, ac), MatRef::dense(bm, br, bc)) else {
        r.fail(format!("{label}: test setup: bad views"));
        return;
    };
    let res = match MatMut::dense(&mut c, cr, cc) {
        Ok(cv) => DenseGemm::<T>::gemm(b, &p, av, bv, cv),
        Err(e) => Err(e),
    };
    let rejected = res.is_err();
    expect_err(r, &label, res, want.0, want.1);
    if rejected && !bits_equal(&c, &before) {
        r.fail(format!("{label}: C was written although the call failed"));
    }
}

fn bits_equal<T: Scalar>(x: &[T], y: &[T]) -> bool {
    x.len() == y.len()
        && x.iter()
            .zip(y)
            .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits())
}

fn bad_gemm_for<T: Scalar>(r: &mut SuiteReport, b: &dyn Primitives)
where
    for<'x> dyn Primitives + 'x: DenseGemm<T>,
{
    let v = |n: usize| {
        (0..n)
            .map(|i| T::from_f64(i as f64 * 0.25 - 1.0))
            .collect::<Vec<T>>()
    };
    let nan = T::from_f64(f64::NAN);
    let inf = T::from_f64(f64::INFINITY);
    let d = GemmParams::<T>::default();
    let (a6, b8) = (v(6), v(8));
    gemm_bad(
        r,
        b,
        "inner dimensions 3 vs 4",
        d,
        (&a6, 2, 3),
        (&b8, 4, 2),
        (2, 2),
        None,
        ("DimensionMismatch{b}", &dim("b")),
    );
    let b6 = v(6);
    gemm_bad(
        r,
        b,
        "C 3x3 for a 2x2 product",
        d,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (3, 3),
        None,
        ("DimensionMismatch{c}", &dim("c")),
    );
    let t = GemmParams { op_a: Op::T, ..d };
    gemm_bad(
        r,
        b,
        "op(A) = A^T mismatched",
        t,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (3, 2),
        None,
        ("DimensionMismatch{b}", &dim("b")),
    );
    let mut an = v(6);
    an[4] = nan;
    gemm_bad(
        r,
        b,
        "NaN in A",
        d,
        (&an, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        None,
        ("NonFinite{a}", &nonfinite("a")),
    );
    let mut bi = v(6);
    bi[1] = inf;
    gemm_bad(
        r,
        b,
        "inf in B",
        d,
        (&a6, 2, 3),
        (&bi, 3, 2),
        (2, 2),
        None,
        ("NonFinite{b}", &nonfinite("b")),
    );
    let pa = GemmParams { alpha: nan, ..d };
    gemm_bad(
        r,
        b,
        "NaN alpha",
        pa,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        None,
        ("NonFinite{alpha}", &nonfinite("alpha")),
    );
    let pb = GemmParams { beta: -inf, ..d };
    gemm_bad(
        r,
        b,
        "-inf beta",
        pb,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        None,
        ("NonFinite{beta}", &nonfinite("beta")),
    );
    let pc = GemmParams { beta: T::ONE, ..d };
    let cn = [T::ONE, T::ONE, nan, T::ONE];
    gemm_bad(
        r,
        b,
        "NaN in C with beta != 0",
        pc,
        (&a6, 2, 3),
        (&b6, 3, 2),
        (2, 2),
        Some(&cn),
        ("NonFinite{c}", &nonfinite("c")),
    );
    // Padding is not data: NaN between A's rows must not be an error.
    let mut ap = v(8);
    ap[3] = nan;
    let mut c = vec![T::ZERO; 4];
    let res = (|| {
        let av = MatRef::new(&ap, 2, 3, 4)?;
        DenseGemm::<T>::gemm(
            b,
            &d,
            av,
            MatRef::dense(&b6, 3, 2)?,
            MatMut::dense(&mut c, 2, 2)?,
        )
    })();
    match res {
        Ok(()) => r.pass(),
        Err(e) if check::is_unsupported(&e) => {
            r.skip(format!("gemm {} NaN in padding: {e}", T::NAME))
        }
        Err(e) => r.fail(format!(
            "gemm {}: NaN in A's padding (not part of the view) was rejected: {e}",
            T::NAME
        )),
    }
    // View constructors.
    expect_err(
        r,
        "MatRef::new short slice",
        MatRef::new(&a6, 2, 3, 4),
        "DimensionMismatch{data}",
        dim("data"),
    );
    expect_err(
        r,
        "MatRef::new ld < cols",
        MatRef::new(&a6, 2, 3, 2),
        "DimensionMismatch{ld}",
        dim("ld"),
    );
}

/// Bad input for DenseGemm (f32 and f64).
pub fn bad_input_dense_gemm(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_dense_gemm", b);
    bad_gemm_for::<f32>(&mut r, b);
    bad_gemm_for::<f64>(&mut r, b);
    r
}
