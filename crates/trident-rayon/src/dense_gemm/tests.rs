//! What the conformance suite covers thinly: every `gemm` code path (tiny,
//! k <= 2, matrix-vector, blocked) with NaN in C under `beta == 0`, padding
//! between C's rows left alone, k = 0, and bit-identical output across thread
//! counts, and the input check of calls large enough to screen their values
//! on the pool.

use trident_core::{DenseGemm, Error, GemmParams, MatMut, MatRef, Op, Scalar, validate};

use super::{grid, transpose};
use crate::RayonBackend;

/// Deterministic values in [-1, 1) (a 64-bit LCG; no dev-dependency needed).
fn values<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            T::from_f64((s >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        })
        .collect()
}

const PAD: f64 = 12345.0;

struct Case<T> {
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
    /// Stored shapes and leading dimensions.
    ar: usize,
    ac: usize,
    lda: usize,
    br: usize,
    bc: usize,
    ldb: usize,
    m: usize,
    n: usize,
    ldc: usize,
}

/// A call with op(A) m x k, op(B) k x n, and every matrix padded by `pad`
/// columns; C's view holds `c0` (NaN allowed), its padding `PAD`.
fn case<T: Scalar>(
    (m, n, k): (usize, usize, usize),
    (op_a, op_b): (Op, Op),
    pad: usize,
    c0: f64,
    seed: u64,
) -> Case<T> {
    let (ar, ac) = if op_a == Op::N { (m, k) } else { (k, m) };
    let (br, bc) = if op_b == Op::N { (k, n) } else { (n, k) };
    let (lda, ldb, ldc) = (ac + pad, bc + pad, n + pad);
    let mut c = vec![T::from_f64(PAD); m * ldc];
    for i in 0..m {
        for j in 0..n {
            c[i * ldc + j] = T::from_f64(c0);
        }
    }
    Case {
        a: values(ar * lda, seed),
        b: values(br * ldb, seed ^ 7),
        c,
        ar,
        ac,
        lda,
        br,
        bc,
        ldb,
        m,
        n,
        ldc,
    }
}

impl<T: Scalar> Case<T> {
    fn run(&mut self, be: &RayonBackend, p: &GemmParams<T>) -> Vec<T>
    where
        RayonBackend: DenseGemm<T>,
    {
        let mut c = self.c.clone();
        be.gemm(
            p,
            MatRef::new(&self.a, self.ar, self.ac, self.lda).unwrap(),
            MatRef::new(&self.b, self.br, self.bc, self.ldb).unwrap(),
            MatMut::new(&mut c, self.m, self.n, self.ldc).unwrap(),
        )
        .unwrap();
        c
    }

    /// `alpha op(A) op(B) + beta C` in f64, element (i, j).
    fn expected(&self, p: &GemmParams<T>, i: usize, j: usize) -> f64 {
        self.sums(p, i, j).0
    }

    /// Element (i, j) of `alpha op(A) op(B) + beta C` and of the same sum of
    /// absolute values (what its rounding error scales with), in f64.
    fn sums(&self, p: &GemmParams<T>, i: usize, j: usize) -> (f64, f64) {
        let k = if p.op_a == Op::N { self.ac } else { self.ar };
        let a = |i: usize, l: usize| {
            if p.op_a.is_transposed() {
                self.a[l * self.lda + i]
            } else {
                self.a[i * self.lda + l]
            }
        };
        let b = |l: usize, j: usize| {
            if p.op_b.is_transposed() {
                self.b[j * self.ldb + l]
            } else {
                self.b[l * self.ldb + j]
            }
        };
        let terms = (0..k).map(|l| a(i, l).to_f64() * b(l, j).to_f64());
        let (dot, abs) = terms.fold((0.0, 0.0), |(d, s), t| (d + t, s + t.abs()));
        let old = if p.beta == T::ZERO {
            0.0
        } else {
            p.beta.to_f64() * self.c[i * self.ldc + j].to_f64()
        };
        let alpha = p.alpha.to_f64();
        (alpha * dot + old, alpha.abs() * abs + old.abs())
    }
}

/// Shapes that reach each path of `gemm`: tiny (horizontal kernel), k <= 2
/// (outer products), n = 1 and m = 1 (matrix-vector), and the blocked kernel.
const SHAPES: [(usize, usize, usize); 9] = [
    (1, 1, 1),
    (3, 5, 2),
    (7, 9, 1),
    (17, 1, 33),
    (1, 19, 40),
    (4, 4, 300),
    (65, 70, 129),
    (130, 3, 17),
    (200, 210, 260),
];

/// Every combination of transposes.
const OPS: [(Op, Op); 4] = [
    (Op::N, Op::N),
    (Op::T, Op::N),
    (Op::N, Op::T),
    (Op::T, Op::T),
];

fn check_paths<T: Scalar>(tol: f64)
where
    RayonBackend: DenseGemm<T>,
{
    let be = RayonBackend::with_threads(2).unwrap();
    for (s, &shape) in SHAPES.iter().enumerate() {
        for (o, &ops) in OPS.iter().enumerate() {
            for (alpha, beta, c0) in [(1.0, 0.0, f64::NAN), (-0.5, 2.0, 0.25), (0.0, 1.5, -1.0)] {
                let mut cs = case::<T>(shape, ops, 3, c0, (s * 4 + o) as u64);
                let p = GemmParams {
                    alpha: T::from_f64(alpha),
                    beta: T::from_f64(beta),
                    op_a: ops.0,
                    op_b: ops.1,
                    ..GemmParams::default()
                };
                let got = cs.run(&be, &p);
                let (m, n, ldc) = (cs.m, cs.n, cs.ldc);
                for i in 0..m {
                    for j in 0..ldc {
                        let g = got[i * ldc + j].to_f64();
                        if j >= n {
                            assert_eq!(g, PAD, "padding C[{i}][{j}] written, {shape:?} {ops:?}");
                            continue;
                        }
                        let e = cs.expected(&p, i, j);
                        assert!(
                            (g - e).abs() <= tol * (1.0 + e.abs()),
                            "C[{i}][{j}] = {g}, expected {e}: {shape:?} {ops:?} alpha {alpha} beta {beta}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_path_f32() {
    check_paths::<f32>(1e-4);
}

#[test]
fn every_path_f64() {
    check_paths::<f64>(1e-12);
}

#[test]
fn k_zero_scales_c() {
    let be = RayonBackend::with_threads(2).unwrap();
    let (a, b) = ([0.0f64; 0], [0.0f64; 0]);
    for (beta, c0, want) in [(0.0, f64::NAN, 0.0), (2.0, 1.5, 3.0), (1.0, -4.0, -4.0)] {
        let mut c = vec![c0, c0, PAD, c0, c0, PAD];
        let p = GemmParams {
            alpha: 3.0,
            beta,
            ..GemmParams::default()
        };
        be.gemm(
            &p,
            MatRef::new(&a, 2, 0, 0).unwrap(),
            MatRef::new(&b, 0, 2, 2).unwrap(),
            MatMut::new(&mut c, 2, 2, 3).unwrap(),
        )
        .unwrap();
        assert_eq!(c, vec![want, want, PAD, want, want, PAD], "beta {beta}");
    }
}

#[test]
fn empty_m_or_n_writes_nothing() {
    let be = RayonBackend::new().unwrap();
    let a = values::<f32>(6, 1);
    let mut c = [PAD as f32; 4];
    // op(A) is 0 x 3 (A^T of a 3 x 0 view), C is 0 x 4.
    be.gemm(
        &GemmParams {
            op_a: Op::T,
            ..GemmParams::default()
        },
        MatRef::new(&a[..0], 3, 0, 0).unwrap(),
        MatRef::new(&a, 3, 2, 2).unwrap(),
        MatMut::new(&mut c[..0], 0, 2, 2).unwrap(),
    )
    .unwrap();
    assert!(c.iter().all(|&v| v == PAD as f32));
}

fn same_across_threads<T: Scalar>()
where
    RayonBackend: DenseGemm<T>,
{
    // 16 threads take the finer grid on the last four shapes (both sides of
    // C from 512, few coarse tiles), with short last pieces to join (1025)
    // and to keep (1023: 127).
    let backends: Vec<RayonBackend> = [1, 2, 3, 16]
        .iter()
        .map(|&t| RayonBackend::with_threads(t).unwrap())
        .collect();
    for (shape, ops) in [
        ((300, 257, 513), (Op::N, Op::N)),
        ((129, 400, 1100), (Op::T, Op::T)),
        ((530, 1025, 300), (Op::N, Op::N)),
        ((700, 515, 1030), (Op::T, Op::N)),
        ((1200, 640, 77), (Op::N, Op::T)),
        ((1023, 600, 200), (Op::N, Op::N)),
    ] {
        let mut cs = case::<T>(shape, ops, 1, 0.5, 99);
        let p = GemmParams {
            alpha: T::from_f64(1.25),
            beta: T::from_f64(-0.75),
            op_a: ops.0,
            op_b: ops.1,
            ..GemmParams::default()
        };
        let first = cs.run(&backends[0], &p);
        for be in &backends {
            for _ in 0..2 {
                let again = cs.run(be, &p);
                let same = first
                    .iter()
                    .zip(&again)
                    .all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits());
                assert!(same, "{} threads differ from 1 on {shape:?}", be.threads());
            }
        }
    }
}

#[test]
fn bit_identical_across_thread_counts_f32() {
    same_across_threads::<f32>();
}

#[test]
fn bit_identical_across_thread_counts_f64() {
    same_across_threads::<f64>();
}

/// The layout copies reuse the calling thread's scratch: a smaller call of
/// the other scalar type after a larger one finds stale contents there and
/// must still be exact (and a padded C with beta reads its own values).
#[test]
fn scratch_reused_across_shapes_and_types() {
    let be = RayonBackend::with_threads(2).unwrap();
    let check = |shape, ops: (Op, Op), beta: f64, tol: f64, is_f64: bool| {
        let p64 = GemmParams::<f64> {
            alpha: 1.25,
            beta,
            op_a: ops.0,
            op_b: ops.1,
            ..GemmParams::default()
        };
        if is_f64 {
            let mut cs = case::<f64>(shape, ops, 5, 0.5, 11);
            let got = cs.run(&be, &p64);
            for i in 0..cs.m {
                for j in 0..cs.n {
                    let e = cs.expected(&p64, i, j);
                    assert!((got[i * cs.ldc + j] - e).abs() <= tol * (1.0 + e.abs()));
                }
            }
        } else {
            let p32 = GemmParams::<f32> {
                alpha: 1.25,
                beta: beta as f32,
                op_a: ops.0,
                op_b: ops.1,
                ..GemmParams::default()
            };
            let mut cs = case::<f32>(shape, ops, 5, 0.5, 12);
            let got = cs.run(&be, &p32);
            for i in 0..cs.m {
                for j in 0..cs.n {
                    let e = cs.expected(&p32, i, j);
                    assert!((got[i * cs.ldc + j] as f64 - e).abs() <= tol * (1.0 + e.abs()));
                }
            }
        }
    };
    check((300, 280, 310), (Op::T, Op::T), 0.0, 1e-12, true);
    check((150, 170, 160), (Op::T, Op::N), -0.5, 1e-4, false);
    check((310, 300, 290), (Op::N, Op::T), 2.0, 1e-12, true);
    check((120, 130, 140), (Op::N, Op::N), 0.0, 1e-4, false);
}

/// The tiled transpose against the definition, with sides that end inside a
/// band and inside a tile, and padding on both sides (left untouched in
/// `out`).
#[test]
fn transpose_matches_definition() {
    fn check<T: Scalar>() {
        let be = RayonBackend::with_threads(3).unwrap();
        for (r, c, ld, out_ld) in [
            (300, 259, 263, 305),
            (1, 7, 7, 1),
            (129, 1, 2, 130),
            (8, 8, 8, 8),
        ] {
            let d: Vec<T> = values(r * ld, (r + c) as u64);
            let mut out = vec![T::from_f64(PAD); (c - 1) * out_ld + r];
            be.install(|| transpose(&d, r, ld, &mut out, out_ld, 3));
            for j in 0..c {
                for i in 0..out_ld {
                    let Some(&got) = out.get(j * out_ld + i) else {
                        continue;
                    };
                    let want = if i < r {
                        d[i * ld + j]
                    } else {
                        T::from_f64(PAD)
                    };
                    assert!(
                        got == want,
                        "out[{j}][{i}] of {r} x {c}, ld {ld}, out_ld {out_ld}"
                    );
                }
            }
        }
    }
    check::<f32>();
    check::<f64>();
}

/// Calls large enough to screen their values on the pool, beside the layout
/// copies, report the error the serial check reports (field and index of the
/// first bad value), leave C as it was, and take NaN in padding and in an
/// unread C (`beta == 0`) as no error.
#[test]
fn large_calls_report_the_first_non_finite_value() {
    fn views<T: Scalar>(x: &Case<T>) -> (MatRef<'_, T>, MatRef<'_, T>) {
        (
            MatRef::new(&x.a, x.ar, x.ac, x.lda).unwrap(),
            MatRef::new(&x.b, x.br, x.bc, x.ldb).unwrap(),
        )
    }
    fn check<T: Scalar>()
    where
        RayonBackend: DenseGemm<T>,
    {
        let be = RayonBackend::with_threads(3).unwrap();
        for (o, &(op_a, op_b)) in OPS.iter().enumerate() {
            let mut base = case::<T>((96, 104, 112), (op_a, op_b), 3, 0.5, o as u64);
            let beta = T::from_f64(0.25);
            let p = GemmParams {
                op_a,
                op_b,
                beta,
                ..GemmParams::default()
            };
            // Padding is not data.
            let (nan, inf) = (T::from_f64(f64::NAN), T::from_f64(f64::INFINITY));
            base.a[base.lda - 1] = nan;
            base.b[2 * base.ldb - 2] = inf;
            base.c[base.ldc - 1] = nan;
            base.run(&be, &p);
            for (which, row, col) in [
                ("a", 0, 5),
                ("a", 7, 90),
                ("b", 30, 1),
                ("c", 9, 4),
                ("c", 0, 5),
            ] {
                let mut x = Case {
                    a: base.a.clone(),
                    b: base.b.clone(),
                    c: base.c.clone(),
                    ..base
                };
                let (v, at) = match which {
                    "a" => (&mut x.a, row * x.lda + col),
                    "b" => (&mut x.b, row * x.ldb + col),
                    _ => (&mut x.c, row * x.ldc + col),
                };
                v[at] = if col % 2 == 1 { nan } else { -inf };
                let mut c = x.c.clone();
                let want = {
                    let (a, b) = views(&x);
                    validate::gemm(&p, &a, &b, &MatMut::new(&mut c, x.m, x.n, x.ldc).unwrap())
                        .unwrap_err()
                };
                assert!(matches!(want, Error::NonFinite { .. }), "{want:?}");
                let (a, b) = views(&x);
                let got = be
                    .gemm(&p, a, b, MatMut::new(&mut c, x.m, x.n, x.ldc).unwrap())
                    .unwrap_err();
                assert_eq!(
                    format!("{got:?}"),
                    format!("{want:?}"),
                    "{which}[{at}], op {o}"
                );
                assert!(
                    c.iter()
                        .zip(&x.c)
                        .all(|(g, w)| g.to_f64().to_bits() == w.to_f64().to_bits()),
                    "C written on error: {which}[{at}], op {o}"
                );
                if which == "c" {
                    // Not read with beta == 0: overwritten, no error.
                    let p0 = GemmParams { beta: T::ZERO, ..p };
                    let out = x.run(&be, &p0);
                    assert!(out[at].is_finite(), "{which}[{at}], op {o}");
                }
            }
        }
    }
    check::<f32>();
    check::<f64>();
}

/// The grids: pieces cover each side once, in order, none shorter than 65
/// unless the side is; the finer grid only from both sides of 512 and when
/// the coarse one gives the threads few tiles.
#[test]
fn grids_cover_c_and_switch_only_where_bits_allow() {
    for pm in [
        1, 64, 127, 129, 300, 511, 512, 530, 1025, 1200, 2048, 8191, 8192, 9000,
    ] {
        for pn in [1, 200, 512, 1025, 4096] {
            for threads in [1, 2, 8, 16, 64] {
                let (rows, cols) = grid(pm, pn, threads);
                for (side, len) in [(&rows, pm), (&cols, pn)] {
                    let mut at = 0;
                    for &(s, l) in side.iter() {
                        assert_eq!(s, at, "{pm} x {pn}, {threads} threads");
                        assert!(l >= 65.min(len), "{pm} x {pn}: piece {l}");
                        at += l;
                    }
                    assert_eq!(at, len);
                }
                let coarse = grid(pm, pn, 1);
                if pm < 512 || pn < 512 {
                    assert_eq!((&rows, &cols), (&coarse.0, &coarse.1), "{pm} x {pn}");
                }
            }
        }
    }
    // gemm-1024 on 16 threads: 64 tiles of 128, not 16 of 256; on 2, 16.
    assert_eq!(grid(1024, 1024, 16).0.len(), 8);
    assert_eq!(grid(1024, 1024, 2).0.len(), 4);
    // gemm-1024-odd: 1023 = 7 x 128 + 127, its short piece kept.
    assert_eq!(grid(1023, 1027, 16).0.len(), 8);
}

/// The AVX2 path on its own (wherever the CPU can run it, AVX-512 or not):
/// micro-tiles with ragged edges, m over several row blocks, k over several
/// depth blocks, n over two column blocks, every op with padded leading
/// dimensions, and each way C is updated (NaN in C under `beta == 0`),
/// against f64 sums; C's padding untouched; the same bits on 1, 2 and 3
/// threads.
#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_path_every_layout() {
    fn check<T: Scalar>()
    where
        RayonBackend: DenseGemm<T>,
    {
        let backends: Vec<RayonBackend> = [1, 2, 3]
            .iter()
            .map(|&t| RayonBackend::with_threads(t).unwrap())
            .collect();
        let shapes = [
            (6, 16, 1),
            (1, 1, 3),
            (7, 17, 257),
            (13, 33, 600),
            (150, 40, 513),
            (5, 4100, 20),
        ];
        for (s, &shape) in shapes.iter().enumerate() {
            for (o, &ops) in OPS.iter().enumerate() {
                for (alpha, beta, c0) in [(1.0, 0.0, f64::NAN), (-0.5, 2.0, 0.25), (1.5, 1.0, -1.0)]
                {
                    let mut cs = case::<T>(shape, ops, 3, c0, (s * 4 + o) as u64);
                    let p = GemmParams {
                        alpha: T::from_f64(alpha),
                        beta: T::from_f64(beta),
                        op_a: ops.0,
                        op_b: ops.1,
                        ..GemmParams::default()
                    };
                    let (m, n, ldc) = (cs.m, cs.n, cs.ldc);
                    let run = |cs: &mut Case<T>, be: &RayonBackend| {
                        let mut c = cs.c.clone();
                        be.gemm_avx2(
                            &p,
                            MatRef::new(&cs.a, cs.ar, cs.ac, cs.lda).unwrap(),
                            MatRef::new(&cs.b, cs.br, cs.bc, cs.ldb).unwrap(),
                            MatMut::new(&mut c, m, n, ldc).unwrap(),
                            (m, n, shape.2),
                        )
                        .unwrap();
                        c
                    };
                    let got = run(&mut cs, &backends[0]);
                    for i in 0..m {
                        for j in 0..ldc {
                            let g = got[i * ldc + j].to_f64();
                            if j >= n {
                                assert_eq!(g, PAD, "padding C[{i}][{j}] written, {shape:?}");
                                continue;
                            }
                            // Each of the k + 2 operations rounds once.
                            let (e, mag) = cs.sums(&p, i, j);
                            let bound = T::EPSILON.to_f64() * (shape.2 + 2) as f64 * mag;
                            assert!(
                                (g - e).abs() <= bound,
                                "C[{i}][{j}] = {g}, expected {e}: {shape:?} {ops:?} alpha {alpha} beta {beta}"
                            );
                        }
                    }
                    for be in &backends[1..] {
                        let again = run(&mut cs, be);
                        let same = got
                            .iter()
                            .zip(&again)
                            .all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits());
                        assert!(
                            same,
                            "{} threads differ from 1 on {shape:?} {ops:?}",
                            be.threads()
                        );
                    }
                }
            }
        }
    }
    if !super::avx2::available() {
        eprintln!("no AVX2 and FMA on this CPU: the path is never taken here");
        return;
    }
    check::<f32>();
    check::<f64>();
}
