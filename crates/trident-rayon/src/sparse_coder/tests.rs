//! Focused cases for Batch-OMP: exact answers where the arithmetic is exact,
//! agreement with the f64 reference under the contract's checker, thread-count
//! independence, and dependent atoms.

use trident_core::omp::scalbn;
use trident_core::{Dictionary, MatRef, Scalar, SparseCoder, SparseCodes, StopRule};
use trident_reference::ReferenceBackend;
use trident_testkit::cases::{self, Input, OmpCase};
use trident_testkit::check;

use super::kernel::Isa;
use crate::RayonBackend;

fn encode<T: Scalar>(b: &RayonBackend, c: &OmpCase<T>) -> SparseCodes<T>
where
    RayonBackend: SparseCoder<T>,
{
    b.encode(&c.dict, c.signals_ref(), c.rule).unwrap()
}

/// Runs `input` on the rayon backend and checks it against the reference
/// with the contract's tolerances.
fn agrees(input: Input) {
    let b = RayonBackend::with_threads(2).unwrap();
    let exp = check::expected(&ReferenceBackend, &input).unwrap();
    let got = check::produce(&b, &input).unwrap();
    let v = check::compare(&input, &exp, &got);
    eprintln!(
        "{}: worst error / tolerance = {:.3e}",
        input.describe(),
        v.ratio
    );
    assert!(v.passed(), "{}: {}", input.describe(), v.summary());
}

#[test]
fn identity_dictionary_is_exact() {
    // G = I and alpha0 = x exactly: atoms by decreasing |x_j| (ties to the
    // smaller j), coefficients equal to x, residual exactly zero at the end.
    let mut d = vec![0.0f32; 36];
    (0..6).for_each(|i| d[i * 6 + i] = 1.0);
    let dict = Dictionary::new(6, 6, d).unwrap();
    let x = [0.5f32, -2.0, 0.0, 2.0, 0.25, -0.5];
    let b = RayonBackend::with_threads(1).unwrap();
    let c = b
        .encode(
            &dict,
            MatRef::dense(&x, 1, 6).unwrap(),
            StopRule::Error(0.0),
        )
        .unwrap();
    assert_eq!(c.atoms, [1, 3, 0, 5, 4]);
    assert_eq!(c.coefs, [-2.0, 2.0, 0.5, -0.5, 0.25]);
    assert_eq!(c.residual_norm2, [0.0]);
    // Sparsity(2) keeps the two largest and reports the rest as residual.
    let c = b
        .encode(
            &dict,
            MatRef::dense(&x, 1, 6).unwrap(),
            StopRule::Sparsity(2),
        )
        .unwrap();
    assert_eq!(
        (c.atoms.as_slice(), c.coefs.as_slice()),
        (&[1, 3][..], &[-2.0, 2.0][..])
    );
    assert_eq!(c.residual_norm2, [0.25 + 0.0625 + 0.25]);
}

#[test]
fn signal_equal_to_an_atom() {
    let dict = cases::dct_dictionary::<f64>(8, 16);
    let x: Vec<f64> = dict.atom(17).iter().map(|v| -2.0 * v).collect();
    let b = RayonBackend::with_threads(1).unwrap();
    let rule = StopRule::SparsityOrError {
        sparsity: 4,
        error: 1e-20,
    };
    let c = b
        .encode(&dict, MatRef::dense(&x, 1, 64).unwrap(), rule)
        .unwrap();
    assert_eq!(c.atoms, [17]);
    assert!((c.coefs[0] + 2.0).abs() < 1e-14, "{}", c.coefs[0]);
    assert!(c.residual_norm2[0] < 1e-20, "{}", c.residual_norm2[0]);
}

#[test]
fn zero_signals_and_zero_budgets() {
    let dict = cases::dct_dictionary::<f32>(8, 16);
    let x = vec![0.0f32; 128];
    let b = RayonBackend::with_threads(1).unwrap();
    let c = b
        .encode(
            &dict,
            MatRef::dense(&x, 2, 64).unwrap(),
            StopRule::Sparsity(5),
        )
        .unwrap();
    assert_eq!(
        (c.offsets, c.residual_norm2),
        (vec![0, 0, 0], vec![0.0, 0.0])
    );
    let c = cases::omp_dct::<f32>(3, 7);
    let mut c0 = c.clone();
    c0.rule = StopRule::Sparsity(0);
    let got = encode(&b, &c0);
    assert_eq!(got.offsets, [0, 0, 0, 0]);
    for i in 0..3 {
        let xx: f64 = c.signal(i).iter().map(|v| (v.to_f64()).powi(2)).sum();
        assert!((got.residual_norm2[i].to_f64() - xx).abs() <= 1e-6 * xx);
    }
}

#[test]
fn output_is_independent_of_the_thread_count() {
    // 1000 and 700 signals: several chunks, the last one partial.
    let c32 = cases::omp_dct::<f32>(1000, 11);
    let c64 = cases::omp_random::<f64>(32, 64, 700, 6, 0.05, StopRule::Error(0.3), 12);
    let one = RayonBackend::with_threads(1).unwrap();
    let (a32, a64) = (encode(&one, &c32), encode(&one, &c64));
    for t in [2, 3] {
        let b = RayonBackend::with_threads(t).unwrap();
        assert!(encode(&b, &c32) == a32, "f32 codes differ with {t} threads");
        assert!(encode(&b, &c64) == a64, "f64 codes differ with {t} threads");
    }
}

#[test]
fn spec_case_agrees_with_the_reference() {
    agrees(Input::Omp32(cases::omp_dct(1000, 3)));
    agrees(Input::Omp64(cases::omp_dct(300, 4)));
}

#[test]
fn error_rules_agree_with_the_reference() {
    agrees(Input::Omp64(cases::omp_random(
        32,
        64,
        500,
        6,
        0.05,
        StopRule::Error(0.3),
        5,
    )));
    agrees(Input::Omp32(cases::omp_random(
        32,
        64,
        500,
        6,
        0.05,
        StopRule::SparsityOrError {
            sparsity: 4,
            error: 0.3,
        },
        6,
    )));
    // Error(0) on a square random dictionary: every signal takes n atoms or
    // reaches an exactly zero residual.
    agrees(Input::Omp64(cases::omp_random(
        12,
        12,
        50,
        12,
        0.0,
        StopRule::Error(0.0),
        8,
    )));
}

#[test]
fn dependent_atom_ends_the_code_without_nan() {
    // Atom 2 is (d0 + d1) / sqrt(2): once two of the three are chosen the
    // third lies in their span. The residual (0, 0, 1) is out of reach.
    let s = std::f64::consts::FRAC_1_SQRT_2;
    let d = vec![1.0, 0.0, s, 0.0, 1.0, s, 0.0, 0.0, 0.0];
    // Row 2 is all zero, so normalize the 2-D atoms into a 3 x 3 matrix by hand.
    let dict = Dictionary::new(3, 3, d).unwrap();
    let x = [1.0f64, 1.0, 1.0];
    let b = RayonBackend::with_threads(1).unwrap();
    let c = b
        .encode(
            &dict,
            MatRef::dense(&x, 1, 3).unwrap(),
            StopRule::Error(0.0),
        )
        .unwrap();
    assert_eq!(c.atoms[0], 2, "{c:?}");
    assert!(c.atoms.len() <= 2, "{c:?}");
    assert!(c.coefs.iter().all(|g| g.is_finite()), "{c:?}");
    assert!((c.residual_norm2[0] - 1.0).abs() < 1e-12, "{c:?}");
}

#[test]
fn every_simd_copy_gives_the_same_bits() {
    let c32 = cases::omp_dct::<f32>(300, 21);
    let c64 = cases::omp_random::<f64>(
        20,
        50,
        300,
        5,
        0.01,
        StopRule::SparsityOrError {
            sparsity: 8,
            error: 0.05,
        },
        22,
    );
    // Signals that the f32 loop hands to the f64 loop: those copies too.
    let c32r = duplicate_atom_case(60, StopRule::Error(0.0));
    let b = RayonBackend::with_threads(2).unwrap();
    let run32 =
        |isa| super::encode_with(&b, &c32.dict, c32.signals_ref(), c32.rule, isa, true).unwrap();
    let run32r =
        |isa| super::encode_with(&b, &c32r.dict, c32r.signals_ref(), c32r.rule, isa, true).unwrap();
    let run64 =
        |isa| super::encode_with(&b, &c64.dict, c64.signals_ref(), c64.rule, isa, true).unwrap();
    let (e32, e64) = (run32(Some(Isa::Baseline)), run64(Some(Isa::Baseline)));
    let e32r = run32r(Some(Isa::Baseline));
    for isa in Isa::available() {
        assert!(run32(Some(isa)) == e32, "{isa:?} f32 differs from baseline");
        assert!(
            run32r(Some(isa)) == e32r,
            "{isa:?} f32 hand-overs differ from baseline"
        );
        assert!(run64(Some(isa)) == e64, "{isa:?} f64 differs from baseline");
    }
}

#[test]
fn lockstep_signals_give_the_bits_of_one_by_one() {
    // Signals stopping at different steps (error targets), hand-overs to
    // the f64 loop between coded signals, f64 inputs, and a count that
    // leaves a partial group: every compiled copy, in lockstep and not.
    let b = RayonBackend::with_threads(2).unwrap();
    let rule = StopRule::SparsityOrError {
        sparsity: 8,
        error: 0.05,
    };
    let c32 = cases::omp_random::<f32>(20, 50, 301, 5, 0.01, rule, 23);
    let c64 = cases::omp_random::<f64>(20, 50, 301, 5, 0.01, rule, 24);
    let mut mixed = cases::omp_dct::<f32>(203, 25);
    mixed.rule = StopRule::SparsityOrError {
        sparsity: 16,
        error: 1e-3,
    };
    // Every third signal beyond f32 squares: the f64 loop codes it.
    let n = mixed.dict.n();
    for (i, v) in mixed.signals.iter_mut().enumerate() {
        if (i / n) % 3 == 1 {
            *v *= 1e18;
        }
    }
    let dup = duplicate_atom_case(61, StopRule::Error(0.0));
    // f64 signals beyond the f64 window, every third one: scaled per signal.
    let mut c64s = c64.clone();
    let n64 = c64s.dict.n();
    for (i, v) in c64s.signals.iter_mut().enumerate() {
        match (i / n64) % 3 {
            1 => *v *= 1e250,
            2 => *v *= 1e-250,
            _ => {}
        }
    }
    for isa in Isa::available() {
        let same = |a: SparseCodes<f32>, b: SparseCodes<f32>, what: &str| {
            assert!(a == b, "{isa:?} {what}: lockstep differs from one by one");
        };
        let both32 = |c: &OmpCase<f32>| {
            let run = |lock| {
                super::encode_with(&b, &c.dict, c.signals_ref(), c.rule, Some(isa), lock).unwrap()
            };
            (run(true), run(false))
        };
        let (a, o) = both32(&c32);
        same(a, o, "f32");
        let (a, o) = both32(&mixed);
        same(a, o, "f32 with hand-overs");
        let (a, o) = both32(&dup);
        same(a, o, "f32 all handed over");
        let run = |lock| {
            super::encode_with(&b, &c64.dict, c64.signals_ref(), c64.rule, Some(isa), lock).unwrap()
        };
        assert!(run(true) == run(false), "{isa:?} f64: lockstep differs");
        let run = |lock| {
            let c = &c64s;
            super::encode_with(&b, &c.dict, c.signals_ref(), c.rule, Some(isa), lock).unwrap()
        };
        assert!(
            run(true) == run(false),
            "{isa:?} f64 scaled: lockstep differs"
        );
    }
}

#[test]
fn f64_signals_beyond_the_window_are_coded_like_scaled_copies() {
    // x 2^k for k far outside the window [2^-256, 2^256) is coded as the
    // power of two that puts its largest entry in [1, 2): floating point is
    // exact under powers of two (barring under- and overflow), so the code
    // is that of x, atom for atom, with coefficients times 2^k and ||r||^2
    // times 2^2k (one rounding: infinite or subnormal where need be), in
    // every compiled copy.
    let c = cases::omp_random::<f64>(20, 50, 40, 5, 0.01, StopRule::Sparsity(8), 27);
    let b = RayonBackend::with_threads(2).unwrap();
    let plain = encode(&b, &c);
    for k in [300, 900, -600, -1000] {
        let mut s = c.clone();
        s.signals.iter_mut().for_each(|v| *v = scalbn(*v, k));
        for isa in Isa::available() {
            let got =
                super::encode_with(&b, &s.dict, s.signals_ref(), s.rule, Some(isa), true).unwrap();
            assert_eq!(got.atoms, plain.atoms, "2^{k} {isa:?}");
            let want: Vec<f64> = plain.coefs.iter().map(|&g| scalbn(g, k)).collect();
            assert_eq!(got.coefs, want, "2^{k} {isa:?}");
            let want: Vec<f64> = plain
                .residual_norm2
                .iter()
                .map(|&r| scalbn(r, 2 * k))
                .collect();
            assert_eq!(got.residual_norm2, want, "2^{k} {isa:?}");
        }
    }
}

/// The catalog's Medium sizes of the DCT case (20K f32, 5K f64 signals),
/// about 25 s in the test profile, mostly the reference:
/// `cargo test -p trident-rayon --lib -- --ignored medium --nocapture`.
#[test]
#[ignore]
fn medium_spec_case_agrees_with_the_reference() {
    for seed in [1, 2] {
        agrees(Input::Omp32(cases::omp_dct(20_000, seed)));
        agrees(Input::Omp64(cases::omp_dct(5_000, seed)));
    }
}

/// The DCT dictionary for 4x4 patches (16 x 64) with atom 3 copied into
/// column 40, and `count` signals of three atoms (no noise, so the residual
/// ends at rounding level), in f32.
fn duplicate_atom_case(count: usize, rule: StopRule) -> OmpCase<f32> {
    let base = cases::dct_dictionary::<f32>(4, 8);
    let (n, k) = (base.n(), base.atoms());
    let mut d = base.data().to_vec();
    for i in 0..n {
        d[i * k + 40] = d[i * k + 3];
    }
    let dict = Dictionary::new(n, k, d).unwrap();
    let signals = (0..count)
        .flat_map(|s| {
            let (a, b) = (3, (7 + 5 * s) % k);
            let (ga, gb) = (1.5 - 0.01 * s as f64, -0.5 - 0.02 * s as f64);
            let dict = &dict;
            (0..n).map(move |i| {
                let v = ga * dict.data()[i * k + a].to_f64() + gb * dict.data()[i * k + b].to_f64();
                v as f32
            })
        })
        .collect();
    OmpCase {
        dict,
        signals,
        count,
        rule,
    }
}

#[test]
fn f32_rounding_level_decisions_are_the_f64_loops() {
    // Under Error(0) every signal is coded down to rounding level (the f32
    // signals are only within f32 rounding of the span of their two atoms,
    // so the codes go on with atoms of 1e-8 correlations, filling the 16
    // dimensions): the f32 loop cannot settle such correlations and pivots
    // and hands every signal to the f64 loop, which applies the contract's
    // stops (the duplicate of atom 3 is never taken).
    let c = duplicate_atom_case(40, StopRule::Error(0.0));
    let b = RayonBackend::with_threads(2).unwrap();
    let got = encode(&b, &c);
    let f64_loop = super::encode_f64_loop(&b, &c.dict, c.signals_ref(), c.rule).unwrap();
    assert!(got == f64_loop, "f32 hand-overs differ from the f64 loop");
    for i in 0..c.count {
        let (atoms, _) = got.signal(i);
        assert!(
            !(atoms.contains(&3) && atoms.contains(&40)),
            "signal {i}: {atoms:?}"
        );
    }
    agrees(Input::Omp32(c));
}

#[test]
fn f32_signals_beyond_f32_squares_use_the_f64_loop() {
    // ||x||^2 of 1e36 or 1e-36 would overflow or underflow the f32 loop's
    // squares: such signals are coded in f64 (and still rounded to f32).
    let c = cases::omp_dct::<f32>(8, 31);
    let b = RayonBackend::with_threads(1).unwrap();
    for scale in [1e18f32, 1e-18] {
        let mut s = c.clone();
        s.signals.iter_mut().for_each(|v| *v *= scale);
        let got = encode(&b, &s);
        let f64_loop = super::encode_f64_loop(&b, &s.dict, s.signals_ref(), s.rule).unwrap();
        assert!(got == f64_loop, "scale {scale}: differs from the f64 loop");
        assert!(got.coefs.iter().all(|g| g.is_finite()), "scale {scale}");
        assert!(
            got.residual_norm2.iter().all(|r| r.is_finite()),
            "scale {scale}"
        );
    }
}

/// Atoms e0, d1 = cos(th) e0 + sin(th) e1, e2, ..., e7 (no e1) and 20
/// signals a e0 + b e1 + 2 e2: each takes e2, e0, then d1, with the pivot
/// sin^2(th) G_jj. Returns the codes of the f32 loop (with its hand-overs) and
/// of the f64 loop, after checking the f32 ones against the reference.
fn near_collinear_pair(th: f64) -> (SparseCodes<f32>, SparseCodes<f32>) {
    let (n, k) = (8, 8);
    let mut d = vec![0.0f32; n * k];
    for j in 0..k {
        if j != 1 {
            d[j * k + j] = 1.0;
        }
    }
    d[k + 1] = th.sin() as f32;
    d[1] = th.cos() as f32;
    let dict = Dictionary::normalize(n, k, d).unwrap();
    let count = 20;
    let signals: Vec<f32> = (0..count)
        .flat_map(|s| {
            let mut x = vec![0.0f32; n];
            x[0] = 0.5 + 0.01 * s as f32;
            x[1] = -0.3 - 0.02 * s as f32;
            x[2] = 2.0;
            x
        })
        .collect();
    let c = OmpCase {
        dict,
        signals,
        count,
        rule: StopRule::Sparsity(3),
    };
    let b = RayonBackend::with_threads(1).unwrap();
    let got = encode(&b, &c);
    let wide = super::encode_f64_loop(&b, &c.dict, c.signals_ref(), c.rule).unwrap();
    assert_eq!(got.atoms, wide.atoms);
    agrees(Input::Omp32(c));
    (got, wide)
}

#[test]
fn f32_ill_conditioned_codes_are_refined_in_f64() {
    // Pivot sin^2(0.04) = 1.6e-3 G_jj: below the f32 loop's ILL, above its
    // REDO (cond(G_II) about 2500). The f32 Cholesky coefficients carry
    // errors of about cond(G) eps_f32 (8.5e-6 relative measured without the
    // refinement); one f64 refinement step takes them to the f64 loop's.
    let (got, wide) = near_collinear_pair(0.04);
    for i in 0..wide.offsets.len() - 1 {
        let (g, w) = (got.signal(i).1, wide.signal(i).1);
        let err: f64 = g.iter().zip(w).map(|(a, b)| (a - b).to_f64().powi(2)).sum();
        let nrm: f64 = w.iter().map(|a| a.to_f64().powi(2)).sum();
        assert!(
            err.sqrt() <= 1e-6 * nrm.sqrt(),
            "signal {i}: {g:?} vs {w:?}"
        );
    }
    // Pivot sin^2(0.01) = 1e-4 G_jj, below REDO: the f64 loop codes them.
    let (got, wide) = near_collinear_pair(0.01);
    assert!(got == wide, "pivots below REDO are not handed over");
}

/// The fused steps (`avx512::step_argmax`, `avx2::step_argmax`) against the
/// generic step then argmax, on the same inputs: every entry of `u_k`,
/// `alpha` and `cabs` the same bits, and the same best atom. Small-integer values make ties
/// common (within a vector, across the two chains, across lanes), some
/// atoms are chosen (-1) and some `alpha` NaN; `kp` covers the 128-entry
/// blocks and the 32-entry tail.
#[test]
fn fused_step_matches_step_then_argmax() {
    use super::kernel::{Float, Step};
    let fused: Vec<Isa> = Isa::available()
        .into_iter()
        .filter(|&i| i != Isa::Baseline)
        .collect();
    if fused.is_empty() {
        eprintln!("no AVX2 or AVX-512 on this CPU: nothing to compare");
        return;
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |m: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    let mut cases = 0;
    for (isa, kp) in fused
        .iter()
        .flat_map(|&i| [32, 64, 96, 128, 160, 256, 288].map(|k| (i, k)))
    {
        for rows in [0, 1, 5] {
            for _ in 0..40 {
                let small = |v: u64| v as f32 - 4.0;
                let prev: Vec<f32> = (0..rows * kp).map(|_| small(next(9)) * 0.5).collect();
                let grow: Vec<f32> = (0..kp).map(|_| small(next(9))).collect();
                let ws: Vec<f32> = (0..rows).map(|_| small(next(9)) * 0.25).collect();
                let c = small(next(9)) * 0.5;
                let mut alpha: Vec<f32> = (0..kp).map(|_| small(next(9))).collect();
                let mut cabs: Vec<f32> = alpha.iter().map(|a| a.abs()).collect();
                for _ in 0..next(4) {
                    alpha[next(kp as u64) as usize] = f32::NAN;
                }
                let chosen = next(kp as u64 + 1) as usize;
                for _ in 0..chosen {
                    cabs[next(kp as u64) as usize] = -1.0;
                }
                let (mut uk1, mut a1, mut c1) = (vec![0.0; kp], alpha.clone(), cabs.clone());
                let (mut uk2, mut a2, mut c2) = (vec![0.0; kp], alpha, cabs);
                let step = |uk, alpha, cabs| Step {
                    prev: &prev,
                    uk,
                    grow: &grow,
                    ws: &ws,
                    c,
                    alpha,
                    cabs,
                };
                let got = f32::step_argmax(isa, &mut step(&mut uk1, &mut a1, &mut c1));
                f32::step(&mut step(&mut uk2, &mut a2, &mut c2));
                let plain = f32::argmax(&c2);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&uk1), bits(&uk2), "{isa:?} u_k, kp {kp}");
                assert_eq!(bits(&a1), bits(&a2), "{isa:?} alpha, kp {kp}");
                assert_eq!(bits(&c1), bits(&c2), "{isa:?} cabs, kp {kp}");
                assert_eq!(got.1.to_bits(), plain.1.to_bits(), "{isa:?} best, kp {kp}");
                if plain.1 > -1.0 {
                    assert_eq!(got.0, plain.0, "{isa:?} index of {}, kp {kp}", plain.1);
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, fused.len() * 7 * 3 * 40);
}
