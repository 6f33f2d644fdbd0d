//! DenseGemm on the GPU against a naive f64 product on the CPU: all four
//! transpose combinations, edge tiles, leading dimensions, alpha/beta, every
//! tile shape, the device-resident API. Skipped (with a SKIPPED line) where
//! there is no CUDA device.

mod common;

use trident_core::{
    DenseGemm, DenseGemmDevice, DeviceMat, DeviceMemory, Error, GemmParams, MatMut, MatRef, Op,
    Precision, Scalar, tol,
};
use trident_cuda::{CudaBackend, GemmTile, Tuning};

use common::{Rng, backend, seed};

struct Case<T> {
    m: usize,
    n: usize,
    k: usize,
    op_a: Op,
    op_b: Op,
    lda: usize,
    ldb: usize,
    ldc: usize,
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
}

fn stored(op: Op, r: usize, c: usize) -> (usize, usize) {
    if op.is_transposed() { (c, r) } else { (r, c) }
}

fn make<T: Scalar>(
    rng: &mut Rng,
    m: usize,
    n: usize,
    k: usize,
    op_a: Op,
    op_b: Op,
    pad: usize,
) -> Case<T> {
    let (ar, ac) = stored(op_a, m, k);
    let (br, bc) = stored(op_b, k, n);
    let (lda, ldb, ldc) = (ac + pad, bc + pad, n + pad);
    let len = |r: usize, c: usize, ld: usize| {
        if r == 0 || c == 0 {
            0
        } else {
            (r - 1) * ld + c
        }
    };
    let mut fill = |len: usize| {
        (0..len)
            .map(|_| T::from_f64(rng.range(-1.0, 1.0)))
            .collect::<Vec<T>>()
    };
    let a = fill(len(ar, ac, lda) + pad);
    let b = fill(len(br, bc, ldb));
    let c = fill(len(m, n, ldc));
    Case {
        m,
        n,
        k,
        op_a,
        op_b,
        lda,
        ldb,
        ldc,
        a,
        b,
        c,
    }
}

/// alpha op(A) op(B) + beta C in f64, C's gaps untouched; with `abs`, the
/// same with every term's magnitude: |alpha| |op(A)| |op(B)| + |beta| |C|.
fn naive<T: Scalar>(p: &GemmParams<T>, cs: &Case<T>, abs: bool) -> Vec<f64> {
    let f = |v: f64| if abs { v.abs() } else { v };
    let at = |i: usize, l: usize| {
        if cs.op_a.is_transposed() {
            cs.a[l * cs.lda + i]
        } else {
            cs.a[i * cs.lda + l]
        }
    };
    let bt = |l: usize, j: usize| {
        if cs.op_b.is_transposed() {
            cs.b[j * cs.ldb + l]
        } else {
            cs.b[l * cs.ldb + j]
        }
    };
    let mut out: Vec<f64> = cs.c.iter().map(|v| v.to_f64()).collect();
    for i in 0..cs.m {
        for j in 0..cs.n {
            let mut s = 0.0;
            for l in 0..cs.k {
                s += f(at(i, l).to_f64()) * f(bt(l, j).to_f64());
            }
            let old = if p.beta == T::ZERO {
                0.0
            } else {
                f(p.beta.to_f64()) * f(cs.c[i * cs.ldc + j].to_f64())
            };
            out[i * cs.ldc + j] = f(p.alpha.to_f64()) * s + old;
        }
    }
    out
}

fn run_case<T: Scalar>(be: &CudaBackend, p: &GemmParams<T>, cs: &Case<T>, tol: f64, label: &str) {
    let (ar, ac) = stored(cs.op_a, cs.m, cs.k);
    let (br, bc) = stored(cs.op_b, cs.k, cs.n);
    let want = naive(p, cs, false);
    // Tf32 rounds the operands (about 5e-4 each), so its error scales with
    // the products, not with their sum: on a 1 x 1 x 1 case where
    // alpha a b and beta c cancel, no TF32 product meets 5e-3 of |C|. Those
    // cases are judged against |alpha| |op(A)| |op(B)| + |beta| |C| instead
    // (docs/tolerances.md), which equals |C| wherever nothing cancels.
    // Tf32x3's split operands keep about 22 bits: the same holds at its
    // (strict) tolerance.
    let split = matches!(p.precision, Precision::Tf32 | Precision::Tf32x3);
    let scale = if split && T::NAME == "f32" {
        naive(p, cs, true)
    } else {
        want.clone()
    };
    let mut c = cs.c.clone();
    if p.beta == T::ZERO {
        // C must not be read: poison the view (gaps keep their values).
        for i in 0..cs.m {
            for j in 0..cs.n {
                c[i * cs.ldc + j] = T::from_f64(f64::NAN);
            }
        }
    }
    be.gemm(
        p,
        MatRef::new(&cs.a, ar, ac, cs.lda).unwrap(),
        MatRef::new(&cs.b, br, bc, cs.ldb).unwrap(),
        MatMut::new(&mut c, cs.m, cs.n, cs.ldc).unwrap(),
    )
    .unwrap_or_else(|e| panic!("{label}: {e}"));
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for i in 0..cs.m {
        for j in 0..cs.ldc.min(c.len() - i * cs.ldc) {
            let idx = i * cs.ldc + j;
            if j >= cs.n {
                assert_eq!(
                    c[idx].to_f64().to_bits(),
                    cs.c[idx].to_f64().to_bits(),
                    "{label}: gap ({i},{j}) written"
                );
                continue;
            }
            let got = c[idx].to_f64();
            assert!(got.is_finite(), "{label}: C({i},{j}) = {got}");
            num += (got - want[idx]).powi(2);
            den += scale[idx].powi(2);
        }
    }
    let rel = (num / den.max(1e-300)).sqrt();
    assert!(rel <= tol, "{label}: relative error {rel:e} > {tol:e}");
}

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 5, 7),
    (17, 33, 9),
    (64, 64, 64),
    (129, 257, 33),
    (200, 130, 301),
    (257, 511, 64),
    (5, 300, 2),
    (300, 4, 129),
    // Even leading dimensions: whole blocks take the interior copy, the last
    // (partial) k tile the checked one.
    (256, 384, 100),
];

fn sweep<T: Scalar>(be: &CudaBackend, rng: &mut Rng, precision: Precision, tol: f64) {
    for &(m, n, k) in SHAPES {
        for op_a in [Op::N, Op::T] {
            for op_b in [Op::N, Op::T] {
                for pad in [0, 3] {
                    let cs = make::<T>(rng, m, n, k, op_a, op_b, pad);
                    for (alpha, beta) in [(1.0, 0.0), (-0.75, 0.5)] {
                        let p = GemmParams {
                            alpha: T::from_f64(alpha),
                            beta: T::from_f64(beta),
                            op_a,
                            op_b,
                            precision,
                        };
                        let label = format!(
                            "{} {precision:?} {:?} {m}x{n}x{k} {op_a:?}{op_b:?} pad {pad} alpha {alpha} beta {beta}",
                            T::NAME,
                            be.gemm_tile(),
                        );
                        run_case(be, &p, &cs, tol, &label);
                    }
                }
            }
        }
    }
}

/// [`sweep`] of f32 with each of `tiles` forced in turn.
fn sweep_tiles(
    be: &CudaBackend,
    rng: &mut Rng,
    tiles: &[GemmTile],
    precision: Precision,
    tol: f64,
) {
    for &tile in tiles {
        let be = be.tuned(Tuning {
            gemm_tile: tile,
            ..Tuning::default()
        });
        sweep::<f32>(&be, rng, precision, tol);
    }
}

/// `C = A B` (as `p` says) of a dense `m x k` A and `k x n` B.
fn product(
    be: &CudaBackend,
    p: &GemmParams<f32>,
    a: &[f32],
    b: &[f32],
    m: usize,
    k: usize,
    n: usize,
) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    be.gemm(
        p,
        MatRef::dense(a, m, k).unwrap(),
        MatRef::dense(b, k, n).unwrap(),
        MatMut::dense(&mut c, m, n).unwrap(),
    )
    .unwrap();
    c
}

#[test]
fn f32_matches_naive_f64_for_every_tile_shape() {
    let Some(be) = backend("f32_matches_naive_f64_for_every_tile_shape") else {
        return;
    };
    let mut rng = Rng::new(seed("dense_gemm f32"));
    // NN-only shapes serve the NN cases and leave the rest to the default.
    let tiles = [
        GemmTile::T64x64,
        GemmTile::S128x128K16S4,
        GemmTile::S128x256K16S3,
        GemmTile::S128x256K16S4,
        GemmTile::S128x128K16S4W4,
        GemmTile::S256x128K16S3,
        // The TMA shapes serve only compute capability 9.0.
        GemmTile::St128x128K16S6,
        GemmTile::St128x256K16S4,
        GemmTile::St128x128K16S4B2,
        GemmTile::Auto,
    ];
    sweep_tiles(
        &be,
        &mut rng,
        &tiles,
        Precision::Strict,
        tol::GEMM_STRICT_F32,
    );
}

#[test]
fn tf32_matches_naive_f64_within_the_tf32_tolerance() {
    let Some(be) = backend("tf32_matches_naive_f64_within_the_tf32_tolerance") else {
        return;
    };
    let mut rng = Rng::new(seed("dense_gemm tf32"));
    let tiles = [
        GemmTile::Tc128x256K16S4,
        GemmTile::Tc128x128K16S4,
        GemmTile::Tc128x256K16S4Z,
        GemmTile::Tc256x128K32S3Z,
        GemmTile::Tc128x128K16S4B2,
        GemmTile::Tc128x128K16S4B2Z,
        // The wgmma shapes serve only Hopper (compute capability 9.0); on
        // another device forcing one keeps the automatic choice.
        GemmTile::Wt128x256K32S4,
        GemmTile::Wt128x128K32S6,
        GemmTile::Auto,
    ];
    sweep_tiles(&be, &mut rng, &tiles, Precision::Tf32, tol::GEMM_TF32);
    sweep::<f64>(&be, &mut rng, Precision::Tf32, tol::GEMM_F64);
}

#[test]
fn tf32x3_matches_naive_f64_within_the_strict_tolerance() {
    let Some(be) = backend("tf32x3_matches_naive_f64_within_the_strict_tolerance") else {
        return;
    };
    let mut rng = Rng::new(seed("dense_gemm tf32x3"));
    // The wgmma shapes serve only Hopper; elsewhere the strict kernels do.
    let tiles = [GemmTile::Wx128x128K32S6, GemmTile::Auto];
    sweep_tiles(
        &be,
        &mut rng,
        &tiles,
        Precision::Tf32x3,
        tol::GEMM_STRICT_F32,
    );
    sweep::<f64>(&be, &mut rng, Precision::Tf32x3, tol::GEMM_F64);
}

#[test]
fn tf32x3_keeps_the_bits_tf32_drops() {
    // x = 1 + 2^-12 + 2^-23: TF32 rounds it to 1; split, hi = 1 and lo =
    // 2^-12 + 2^-23, which the lo part's TF32 rounding (11 bits) takes to
    // 2^-12 or 2^-12 + 2^-22. So x * 1 is 1 in Tf32, x in Strict, and within
    // 2^-22 of x but not x from the three tensor-core products.
    let Some(be) = backend("tf32x3_keeps_the_bits_tf32_drops") else {
        return;
    };
    if !be.has_wgmma() {
        eprintln!("skipped: Tf32x3 runs the strict kernels without wgmma");
        return;
    }
    let x = 1.0f32 + f32::powi(2.0, -12) + f32::powi(2.0, -23);
    let p = GemmParams {
        precision: Precision::Tf32x3,
        ..Default::default()
    };
    let c = product(&be, &p, &[x; 64], &[1.0; 64], 64, 1, 64);
    let near = |v: f32| v != x && v != 1.0 && (v - x).abs() <= f32::powi(2.0, -22);
    assert!(c.iter().all(|&v| near(v)), "{} against x = {x}", c[0]);
    // Entries of magnitude f32::MAX round to inf as TF32: the split keeps
    // them (hi rounded toward zero), so the product is finite and close.
    let c = product(
        &be,
        &p,
        &[f32::MAX; 64 * 8],
        &[f32::powi(2.0, -20); 8 * 64],
        64,
        8,
        64,
    );
    let want = f32::MAX as f64 * 8.0 * 2f64.powi(-20);
    assert!(
        c.iter().all(|&v| ((v as f64 - want) / want).abs() <= 1e-6),
        "{} against {want}",
        c[0]
    );
}

#[test]
fn tf32_rounds_operands_on_tensor_cores() {
    // 1 + 2^-12 is not a TF32 number (10 mantissa bits): a tensor-core product
    // of it with 1 gives 1 exactly, a strict one does not. Proves the Tf32
    // request really reached the tensor-core kernel (and Strict did not).
    let Some(be) = backend("tf32_rounds_operands_on_tensor_cores") else {
        return;
    };
    let x = 1.0f32 + f32::powi(2.0, -12);
    for (precision, want) in [(Precision::Tf32, 1.0f32), (Precision::Strict, x)] {
        let p = GemmParams {
            precision,
            ..Default::default()
        };
        let c = product(&be, &p, &[x; 64], &[1.0; 64], 64, 1, 64);
        assert!(
            c.iter().all(|&v| v == want),
            "{precision:?}: {} != {want}",
            c[0]
        );
    }
}

#[test]
fn f64_matches_naive_f64() {
    let Some(be) = backend("f64_matches_naive_f64") else {
        return;
    };
    let mut rng = Rng::new(seed("dense_gemm f64"));
    for tile in [
        GemmTile::F64Simt,
        GemmTile::D128x128K16S3,
        GemmTile::D128x128K32S3,
        GemmTile::D64x128K16S4B2,
        GemmTile::D128x64K16S3B2,
        GemmTile::Auto,
    ] {
        let be = be.tuned(Tuning {
            gemm_tile: tile,
            ..Tuning::default()
        });
        sweep::<f64>(&be, &mut rng, Precision::Strict, tol::GEMM_F64);
    }
}

#[test]
fn empty_k_scales_c_and_empty_mn_is_a_no_op() {
    let Some(be) = backend("empty_k") else { return };
    let a: Vec<f32> = vec![];
    let b: Vec<f32> = vec![];
    let mut c = vec![2.0f32; 6];
    let p = GemmParams {
        alpha: 1.0,
        beta: 0.5,
        ..Default::default()
    };
    be.gemm(
        &p,
        MatRef::new(&a, 2, 0, 0).unwrap(),
        MatRef::new(&b, 0, 3, 3).unwrap(),
        MatMut::dense(&mut c, 2, 3).unwrap(),
    )
    .unwrap();
    assert_eq!(c, vec![1.0; 6]);
    let mut e: Vec<f32> = vec![];
    be.gemm(
        &p,
        MatRef::new(&a, 0, 0, 0).unwrap(),
        MatRef::new(&b, 0, 0, 0).unwrap(),
        MatMut::dense(&mut e, 0, 0).unwrap(),
    )
    .unwrap();
}

#[test]
fn bad_input_is_an_error_and_c_is_untouched() {
    let Some(be) = backend("bad_input") else {
        return;
    };
    let a = vec![1.0f32, f32::NAN, 3.0, 4.0];
    let b = vec![1.0f32; 4];
    let mut c = vec![7.0f32; 4];
    let r = be.gemm(
        &GemmParams::default(),
        MatRef::dense(&a, 2, 2).unwrap(),
        MatRef::dense(&b, 2, 2).unwrap(),
        MatMut::dense(&mut c, 2, 2).unwrap(),
    );
    assert!(
        matches!(
            r,
            Err(Error::NonFinite {
                field: "a",
                index: 1,
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(c, vec![7.0; 4]);
}

#[test]
fn device_resident_gemm_matches_host_and_is_deterministic() {
    let Some(be) = backend("device_resident_gemm") else {
        return;
    };
    let mut rng = Rng::new(seed("dense_gemm device"));
    let (m, n, k) = (300, 260, 190);
    let cs = make::<f32>(&mut rng, m, n, k, Op::N, Op::T, 5);
    let p = GemmParams {
        alpha: 1.5f32,
        beta: -1.0,
        op_a: Op::N,
        op_b: Op::T,
        precision: Precision::Strict,
    };
    let mut host_c = cs.c.clone();
    be.gemm(
        &p,
        MatRef::new(&cs.a, m, k, cs.lda).unwrap(),
        MatRef::new(&cs.b, n, k, cs.ldb).unwrap(),
        MatMut::new(&mut host_c, m, n, cs.ldc).unwrap(),
    )
    .unwrap();
    let da = DeviceMat {
        buf: be.upload(&cs.a).unwrap(),
        rows: m,
        cols: k,
        ld: cs.lda,
    };
    let db = DeviceMat {
        buf: be.upload(&cs.b).unwrap(),
        rows: n,
        cols: k,
        ld: cs.ldb,
    };
    let mut outs = vec![];
    for _ in 0..2 {
        let mut dc = DeviceMat {
            buf: be.upload(&cs.c).unwrap(),
            rows: m,
            cols: n,
            ld: cs.ldc,
        };
        be.gemm_device(&p, &da, &db, &mut dc).unwrap();
        let mut back = vec![0.0f32; cs.c.len()];
        be.download(&dc.buf, &mut back).unwrap();
        outs.push(back);
    }
    assert_eq!(outs[0], outs[1], "not deterministic");
    assert_eq!(outs[0], host_c, "device and host paths differ");
    // Shapes that do not fit are errors.
    let mut small = DeviceMat {
        buf: be.alloc_zeroed::<f32>(10).unwrap(),
        rows: m,
        cols: n,
        ld: n,
    };
    assert!(matches!(
        be.gemm_device(&p, &da, &db, &mut small),
        Err(Error::DimensionMismatch { .. })
    ));
}

/// Large host products with `beta == 0` and a packed C run as a pipeline of
/// row blocks (several block sizes through the memory budget, a padded A, a
/// transposed B); each gives the device-resident product bit for bit, and a
/// non-finite value far into A is an error that leaves C untouched.
#[test]
fn pipelined_host_gemm_matches_the_device_product() {
    let Some(be) = backend("pipelined_host_gemm") else {
        return;
    };
    fn check<T: Scalar>(be: &CudaBackend, rng: &mut Rng, precision: Precision, op_b: Op) {
        // m (k + n) * 4 bytes above the 32 MiB from which products pipeline.
        let (m, n, k) = (2100, 2050, 2000);
        let cs = make::<T>(rng, m, n, k, Op::N, op_b, 3);
        let (br, bc) = stored(op_b, k, n);
        let p = GemmParams {
            alpha: T::from_f64(0.75),
            beta: T::ZERO,
            op_a: Op::N,
            op_b,
            precision,
        };
        let a = MatRef::new(&cs.a, m, k, cs.lda).unwrap();
        let b = MatRef::new(&cs.b, br, bc, cs.ldb).unwrap();
        let da = DeviceMat {
            buf: be.upload(&cs.a).unwrap(),
            rows: m,
            cols: k,
            ld: cs.lda,
        };
        let db = DeviceMat {
            buf: be.upload(&cs.b).unwrap(),
            rows: br,
            cols: bc,
            ld: cs.ldb,
        };
        let mut dc = DeviceMat {
            buf: be.upload(&vec![T::ZERO; m * n]).unwrap(),
            rows: m,
            cols: n,
            ld: n,
        };
        be.gemm_device(&p, &da, &db, &mut dc).unwrap();
        let mut want = vec![T::ZERO; m * n];
        be.download(&dc.buf, &mut want).unwrap();
        let bytes = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        // Automatic (8 blocks of whole tiles), then blocks of a few hundred
        // and of one tile row, the last block short each time.
        let b_bytes = cs.b.len() * std::mem::size_of::<T>();
        let row = 2 * (k + n) * std::mem::size_of::<T>();
        for budget in [None, Some(b_bytes + 300 * row), Some(b_bytes + 140 * row)] {
            let t = be.tuned(Tuning {
                memory_budget: budget.map(|b| b as u64),
                ..Tuning::default()
            });
            let mut c = vec![T::from_f64(7.0); m * n];
            t.gemm(&p, a, b, MatMut::dense(&mut c, m, n).unwrap())
                .unwrap();
            assert!(
                bytes(&c) == bytes(&want),
                "{} {precision:?} op_b {op_b:?} budget {budget:?}: differs from the device product",
                T::NAME
            );
        }
        let mut bad = cs.a.clone();
        bad[(m - 5) * cs.lda + 17] = T::from_f64(f64::INFINITY);
        let mut c = vec![T::from_f64(7.0); m * n];
        let r = be.gemm(
            &p,
            MatRef::new(&bad, m, k, cs.lda).unwrap(),
            b,
            MatMut::dense(&mut c, m, n).unwrap(),
        );
        assert!(
            matches!(r, Err(Error::NonFinite { field: "a", .. })),
            "{r:?}"
        );
        assert!(c.iter().all(|&x| x == T::from_f64(7.0)), "C was written");
    }
    let mut rng = Rng::new(seed("pipelined_host_gemm"));
    check::<f32>(&be, &mut rng, Precision::Strict, Op::N);
    check::<f32>(&be, &mut rng, Precision::Tf32, Op::T);
    check::<f32>(&be, &mut rng, Precision::Tf32x3, Op::T);
    check::<f64>(&be, &mut rng, Precision::Strict, Op::N);
}
