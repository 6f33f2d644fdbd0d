//! The DenseGemm cases of the catalog ([`crate::cases`]): the random
//! contract-family cases at each size, then the edge cases.

use trident_core::*;

use crate::cases::catalog::{add, pick};
use crate::cases::*;

fn params<T: Scalar>(
    op_a: Op,
    op_b: Op,
    alpha: f64,
    beta: f64,
    precision: Precision,
) -> GemmParams<T> {
    GemmParams {
        alpha: T::from_f64(alpha),
        beta: T::from_f64(beta),
        op_a,
        op_b,
        precision,
    }
}

pub(crate) fn gemm_cases(size: Size) -> Vec<Case> {
    let p = "dense_gemm";
    let mut v = Vec::new();
    let n32 = pick(size, 64, 1024);
    let n64 = pick(size, 48, 512);
    add(&mut v, format!("gemm-f32-{n32}"), p, false, move |s| {
        Input::Gemm32(gemm(n32, s))
    });
    add(&mut v, format!("gemm-f64-{n64}"), p, false, move |s| {
        Input::Gemm64(gemm(n64, s))
    });
    add(&mut v, format!("gemm-tf32-{n32}"), p, false, move |s| {
        let prm = params(Op::N, Op::N, 1.0, 0.0, Precision::Tf32);
        Input::Gemm32(gemm_general(n32, n32, n32, prm, 0, s))
    });
    // 3xTF32, transposed B and padded storage: the split operands are laid
    // out from any stored form.
    add(&mut v, format!("gemm-tf32x3-{n32}"), p, false, move |s| {
        let prm = params(Op::N, Op::T, 1.0, -0.5, Precision::Tf32x3);
        Input::Gemm32(gemm_general(n32, n32, n32, prm, 1, s))
    });
    let (m, n, k) = pick(size, (37, 29, 41), (517, 389, 611));
    for (oa, ob, tag) in [
        (Op::T, Op::N, "tn"),
        (Op::N, Op::T, "nt"),
        (Op::T, Op::T, "tt"),
    ] {
        add(
            &mut v,
            format!("gemm-f32-{tag}-{m}x{n}x{k}"),
            p,
            false,
            move |s| {
                Input::Gemm32(gemm_general(
                    m,
                    n,
                    k,
                    params(oa, ob, -1.5, 0.75, Precision::Strict),
                    3,
                    s,
                ))
            },
        );
        add(
            &mut v,
            format!("gemm-f64-{tag}-{m}x{n}x{k}"),
            p,
            false,
            move |s| {
                Input::Gemm64(gemm_general(
                    m,
                    n,
                    k,
                    params(oa, ob, 0.5, -2.0, Precision::Strict),
                    2,
                    s,
                ))
            },
        );
    }
    // Both transposed with beta = 0 over a NaN-filled padded C, large enough
    // for the CPU backend's path that computes it as (B A)^T.
    let (m, n, k) = pick(size, (90, 70, 100), (517, 389, 611));
    add(
        &mut v,
        format!("gemm-f32-tt-beta0-{m}x{n}x{k}"),
        p,
        false,
        move |s| {
            Input::Gemm32(gemm_general(
                m,
                n,
                k,
                params(Op::T, Op::T, 1.25, 0.0, Precision::Strict),
                3,
                s,
            ))
        },
    );
    add(
        &mut v,
        format!("gemm-f64-tt-beta0-{m}x{n}x{k}"),
        p,
        false,
        move |s| {
            Input::Gemm64(gemm_general(
                m,
                n,
                k,
                params(Op::T, Op::T, -0.5, 0.0, Precision::Strict),
                2,
                s,
            ))
        },
    );
    // Edge cases: empty dimensions, k = 0 with and without beta, 1 x 1, dot and
    // outer products, alpha = 0, and beta = 0 over a NaN-filled padded C.
    let edges: [(&str, usize, usize, usize, f64, f64, usize); 9] = [
        ("m0", 0, 5, 4, 1.0, 0.0, 0),
        ("n0", 5, 0, 4, 1.0, 0.5, 0),
        ("k0-beta0", 4, 5, 0, 1.0, 0.0, 0),
        ("k0-beta", 4, 5, 0, 2.0, 0.5, 1),
        ("1x1", 1, 1, 1, 1.0, 0.0, 0),
        ("dot", 1, 1, 300, 1.0, 1.0, 0),
        ("outer", 40, 30, 1, -1.0, 0.0, 0),
        ("alpha0", 6, 7, 8, 0.0, 1.0, 2),
        ("beta0-nan-c", 9, 11, 13, 1.0, 0.0, 4),
    ];
    for (tag, m, n, k, alpha, beta, pad) in edges {
        add(&mut v, format!("gemm-edge-{tag}-f32"), p, true, move |s| {
            Input::Gemm32(gemm_general(
                m,
                n,
                k,
                params(Op::N, Op::N, alpha, beta, Precision::Strict),
                pad,
                s,
            ))
        });
        add(&mut v, format!("gemm-edge-{tag}-f64"), p, true, move |s| {
            Input::Gemm64(gemm_general(
                m,
                n,
                k,
                params(Op::T, Op::N, alpha, beta, Precision::Strict),
                pad,
                s,
            ))
        });
    }
    // alpha = 0 over an A B that overflows: C = beta C, never 0 * inf = NaN.
    add(
        &mut v,
        "gemm-edge-alpha0-overflow-f32".into(),
        p,
        true,
        |s| {
            let g = gemm_general(
                5,
                6,
                7,
                params(Op::N, Op::N, 0.0, 1.5, Precision::Strict),
                1,
                s,
            );
            Input::Gemm32(scaled(g, |_, _| 3e38, |_, _| 3e38))
        },
    );
    add(
        &mut v,
        "gemm-edge-alpha0-overflow-f64".into(),
        p,
        true,
        |s| {
            let g = gemm_general(
                5,
                6,
                7,
                params(Op::T, Op::N, 0.0, -2.0, Precision::Strict),
                2,
                s,
            );
            Input::Gemm64(scaled(g, |_, _| 1e300, |_, _| 1e300))
        },
    );
    // The ends of the range: entries scaled by 2^e, 1 or 2^-e by position
    // (e = 100 in f32, 600 in f64), so that products overflow, underflow or
    // cancel; the checker's range rule (docs/semantics.md) judges what leaves
    // the type's range.
    let side = |e: i32| move |i: usize, j: usize| 2f64.powi((((i + j) % 3) as i32 - 1) * e);
    add(&mut v, "gemm-edge-range-f32".into(), p, true, move |s| {
        let g = gemm_general(
            9,
            8,
            7,
            params(Op::N, Op::T, 1.0, 0.5, Precision::Strict),
            1,
            s,
        );
        Input::Gemm32(scaled(g, side(100), side(-100)))
    });
    add(
        &mut v,
        "gemm-edge-range-tf32x3-f32".into(),
        p,
        true,
        move |s| {
            let g = gemm_general(
                9,
                8,
                7,
                params(Op::T, Op::N, 1.0, 0.5, Precision::Tf32x3),
                1,
                s,
            );
            Input::Gemm32(scaled(g, side(100), side(-100)))
        },
    );
    // 3xTF32 on entries of magnitude f32::MAX, which round to inf as TF32:
    // the split must keep them finite (hi rounded toward zero instead).
    add(
        &mut v,
        "gemm-edge-max-tf32x3-f32".into(),
        p,
        true,
        move |s| {
            let mut g: GemmCase<f32> = gemm_general(
                6,
                5,
                7,
                params(Op::N, Op::N, 1.0, 0.0, Precision::Tf32x3),
                0,
                s,
            );
            for x in &mut g.a {
                *x = f32::MAX.copysign(*x);
            }
            Input::Gemm32(scaled(g, |_, _| 1.0, |_, _| 2f64.powi(-20)))
        },
    );
    add(&mut v, "gemm-edge-range-f64".into(), p, true, move |s| {
        let g = gemm_general(
            9,
            8,
            7,
            params(Op::T, Op::N, -1.0, 0.0, Precision::Strict),
            0,
            s,
        );
        Input::Gemm64(scaled(g, side(600), side(-600)))
    });
    v
}

/// `g` with A's stored element (i, j) multiplied by `fa(i, j)` and B's by
/// `fb(i, j)` (padding untouched).
fn scaled<T: Scalar>(
    mut g: GemmCase<T>,
    fa: impl Fn(usize, usize) -> f64,
    fb: impl Fn(usize, usize) -> f64,
) -> GemmCase<T> {
    for (buf, sh, f) in [
        (&mut g.a, g.a_shape, &fa as &dyn Fn(usize, usize) -> f64),
        (&mut g.b, g.b_shape, &fb),
    ] {
        for i in 0..sh.rows {
            for j in 0..sh.cols {
                let x = &mut buf[i * sh.ld + j];
                *x = T::from_f64(x.to_f64() * f(i, j));
            }
        }
    }
    g
}

/// The contract's DenseGemm benchmark cases at full size ([`crate::cases::spec_cases`]).
pub(crate) fn gemm_spec_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for n in [4096usize, 8192] {
        add(&mut v, format!("gemm-{n}"), "dense_gemm", false, move |s| {
            Input::Gemm32(gemm(n, s))
        });
    }
    v
}
