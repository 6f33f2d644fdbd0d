//! The NearestPairs conformance suite and its bad-input group (see
//! [`crate::conformance`] for what every suite runs).

use crate::cases::{self, *};
use crate::conformance::*;
use proptest::prelude::*;
use trident_core::*;

fn random_points(n: usize, mode: u8, seed: u64) -> Vec<Point> {
    let mut rng = cases::rng(seed);
    use rand::Rng;
    match mode {
        // Uniform integer coordinates.
        0 => cases::uniform_points(n, seed),
        // A 4^3 lattice: heavy exact ties.
        1 => (0..n)
            .map(|_| [0, 0, 0].map(|_: i32| rng.random_range(0..4) as f32))
            .collect(),
        // Few distinct points, repeated.
        _ => {
            let base = cases::uniform_points(3, seed);
            (0..n).map(|i| base[i % 3]).collect()
        }
    }
}

/// A and B in f64, scaled by a power of two so that squared distances stay
/// inside f64's range (exact), and the shift.
fn widened<T: Coord>(a: &[Point<T>], b: &[Point<T>]) -> (Vec<[f64; 3]>, Vec<[f64; 3]>, i32) {
    let up = |p: &[Point<T>]| -> Vec<[f64; 3]> { p.iter().map(|q| q.map(T::to_f64)).collect() };
    let (a, b) = (up(a), up(b));
    let s = range_shift::<f64>(&a, &b);
    (scale_points(&a, s), scale_points(&b, s), s)
}

/// Brute force by `(exact d2, j)` on scaled f64 points: the contract's
/// nearest index.
fn brute_nearest(q: &[f64; 3], b: &[[f64; 3]]) -> u32 {
    (0..b.len())
        .min_by(|&x, &y| {
            f64::exact_d2(q, &b[x])
                .total_cmp(&f64::exact_d2(q, &b[y]))
                .then(x.cmp(&y))
        })
        .map_or(0, |j| j as u32)
}

/// Coordinates at the ends of `T`'s range, whose squared distances overflow
/// (around 1e19 and beyond in f32, 1e154 in f64) or underflow (below about
/// 1e-19, 1e-154) in `T`: every candidate used to tie at `inf` or 0 and the
/// smallest index won. Backends scale by a power of two (or answer
/// `Unsupported`, a skip here); none may return a wrong index. Each case
/// has a radius for `within`. (Sets that mix `1e10` with points `1e-30`
/// apart are past what one scale resolves in f32: their smallest distances
/// are rounding-level ties, see docs/semantics.md.)
#[allow(clippy::type_complexity)]
fn range_cases<T: Coord>() -> Vec<(String, Vec<Point<T>>, Vec<Point<T>>, T)> {
    let f = |v: f64| T::from_f64(v);
    let p = |x: f64, y: f64| [f(x), f(y), T::ZERO];
    let m = T::MAX.to_f64();
    // f32: 1e30 is beyond the overflow threshold; f64: 1e300.
    let (big, tiny, sub) = if T::NAME == "f32" {
        (1e30, 1e-23, 1e-45)
    } else {
        (1e300, 1e-170, 1e-323)
    };
    let n = T::NAME;
    vec![
        (
            format!("{n} coordinates near {n}::MAX (squares overflow)"),
            vec![p(m, 0.0), p(-m, 0.0), p(2.0 * big, 0.0)],
            vec![p(-m, 0.0), p(m, 0.0), p(big, 0.0), p(3.0 * big, 1.0)],
            f(1.5 * big),
        ),
        (
            format!("{n} coordinates near {tiny:e} (squares underflow)"),
            vec![p(0.0, 0.0), p(5.0 * tiny, 5.0 * tiny)],
            vec![p(2.0 * tiny, 0.0), p(tiny, 0.0), p(4.0 * tiny, 6.0 * tiny)],
            f(1.5 * tiny),
        ),
        (
            format!("{n} subnormal coordinates"),
            vec![p(0.0, 0.0), p(30.0 * sub, 0.0)],
            vec![p(4.0 * sub, 0.0), p(3.0 * sub, 0.0), p(28.0 * sub, 0.0)],
            f(3.5 * sub),
        ),
    ]
}

/// `nearest`, `knn` (k = 2), `closest_pairs` and `within(r)` on one of
/// [`range_cases`]: the exact nearest index every time and the exact set
/// within `r` in `(d2, j)` order (or `Unsupported`, which `known` counts as
/// a skip).
fn range_known<T: Coord>(
    b: &dyn NearestPairs<T>,
    a: &[Point<T>],
    bb: &[Point<T>],
    r: T,
) -> Result<bool> {
    let (sa, sb, s) = widened(a, bb);
    let want: Vec<u32> = sa.iter().map(|q| brute_nearest(q, &sb)).collect();
    let mut out = vec![Neighbor::default(); a.len()];
    b.nearest(a, bb, &mut out)?;
    let mut kn = vec![Neighbor::default(); a.len() * 2];
    b.knn(a, bb, 2, &mut kn)?;
    let pairs = b.closest_pairs(a, bb, a.len())?;
    let found = b.within(a, bb, r, usize::MAX)?;
    let r2 = scale_coord(r.to_f64(), s).powi(2);
    let rows_ok = sa.iter().enumerate().all(|(i, q)| {
        let mut w: Vec<(f64, u32)> = sb
            .iter()
            .enumerate()
            .map(|(j, p)| (f64::exact_d2(q, p), j as u32))
            .filter(|&(d, _)| d <= r2)
            .collect();
        w.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        found.row(i).0.iter().copied().eq(w.iter().map(|x| x.1))
    });
    Ok(out.iter().map(|n| n.index).eq(want.iter().copied())
        && kn.chunks(2).map(|r| r[0].index).eq(want.iter().copied())
        && pairs.iter().all(|p| p.b == want[p.a as usize])
        && found.rows() == a.len()
        && rows_ok)
}

/// The NearestPairs suite (nearest, knn, closest_pairs).
pub fn nearest_pairs(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("nearest_pairs", b);
    let k = || -> Result<bool> {
        let a = [[0.0f32, 0.0, 0.0], [10.0, 0.0, 0.0]];
        let bb = [[9.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]];
        let mut out = [Neighbor::default(); 2];
        b.nearest(&a, &bb, &mut out)?;
        let mut kn = [Neighbor::default(); 4];
        b.knn(&a, &bb, 2, &mut kn)?;
        let pairs = b.closest_pairs(&a, &bb, 5)?;
        Ok(out
            == [
                Neighbor { index: 1, d2: 1.0 },
                Neighbor { index: 0, d2: 1.0 },
            ]
            && kn.iter().map(|n| n.index).collect::<Vec<_>>() == [1, 2, 0, 1]
            && pairs.iter().map(|p| (p.a, p.b, p.d2)).collect::<Vec<_>>()
                == [(0, 1, 1.0), (1, 0, 1.0)])
    };
    known(&mut r, "two queries, tie to the smaller index", k());
    for (label, a, bb, rad) in range_cases::<f32>() {
        known(&mut r, &label, range_known::<f32>(b, &a, &bb, rad));
    }
    for (label, a, bb, rad) in range_cases::<f64>() {
        known(&mut r, &label, range_known::<f64>(b, &a, &bb, rad));
    }
    run_catalog(&mut r, b, "nearest_pairs");
    run_determinism(&mut r, b, "nearest_pairs");
    let strategy = (
        0usize..40,
        1usize..40,
        0usize..64,
        0usize..50,
        0u8..3,
        (0u8..2, 0u32..8),
        any::<u64>(),
    );
    run_random(
        &mut r,
        b,
        strategy,
        |&(na, nb, kf, pk, mode, (f64s, rq), seed)| {
            // Radii in quarter steps: on the lattice, 1.0, 1.5, ... meet exact
            // ties at the boundary (d2 == r^2 is in).
            let scale = if mode == 0 { 1e5 } else { 1.0 };
            let c = cases::PairsCase {
                a: random_points(na, mode, seed),
                b: random_points(nb, mode, seed ^ 1),
                knn_k: kf % (nb + 1),
                pairs_k: pk,
                radius: rq as f32 * 0.25 * scale,
            };
            if f64s == 1 {
                Input::new(cases::to_f64_case(&c))
            } else {
                Input::Pairs(c)
            }
        },
    );
    r
}

// -------------------------------------------------------------- bad input

/// Bad input for NearestPairs: empty B, wrong output length, k > |B|,
/// non-finite coordinates, on each method; outputs untouched.
pub fn bad_input_nearest_pairs(b: &dyn Primitives) -> SuiteReport {
    let mut r = SuiteReport::new("bad_input_nearest_pairs", b);
    let a: Vec<Point> = vec![[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [5.0, 5.0, 5.0]];
    let bb: Vec<Point> = vec![[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]];
    let mut an = a.clone();
    an[1][2] = f32::NAN;
    let mut bi = bb.clone();
    bi[0][0] = f32::INFINITY;
    let poison = Neighbor {
        index: 0xDEAD,
        d2: -1.0,
    };
    let nearest_case = |r: &mut SuiteReport,
                        label: &str,
                        qa: &[Point],
                        qb: &[Point],
                        out_len: usize,
                        want: &str,
                        ok: &dyn Fn(&Error) -> bool| {
        let mut out = vec![poison; out_len];
        let res = b.nearest(qa, qb, &mut out);
        let rejected = res.is_err();
        expect_err(r, &format!("nearest {label}"), res, want, ok);
        if rejected && out.iter().any(|n| *n != poison) {
            r.fail(format!(
                "nearest {label}: out was written although the call failed"
            ));
        }
    };
    nearest_case(
        &mut r,
        "B empty",
        &a,
        &[],
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    nearest_case(
        &mut r,
        "out too short",
        &a,
        &bb,
        2,
        "DimensionMismatch{out}",
        &dim("out"),
    );
    nearest_case(
        &mut r,
        "NaN in A",
        &an,
        &bb,
        3,
        "InvalidArgument{a}",
        &arg("a"),
    );
    nearest_case(
        &mut r,
        "inf in B",
        &a,
        &bi,
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    let knn_case = |r: &mut SuiteReport,
                    label: &str,
                    qa: &[Point],
                    qb: &[Point],
                    k: usize,
                    out_len: usize,
                    want: &str,
                    ok: &dyn Fn(&Error) -> bool| {
        let mut out = vec![poison; out_len];
        let res = b.knn(qa, qb, k, &mut out);
        let rejected = res.is_err();
        expect_err(r, &format!("knn {label}"), res, want, ok);
        if rejected && out.iter().any(|n| *n != poison) {
            r.fail(format!(
                "knn {label}: out was written although the call failed"
            ));
        }
    };
    knn_case(
        &mut r,
        "k > |B|",
        &a,
        &bb,
        3,
        9,
        "InvalidArgument{k}",
        &arg("k"),
    );
    knn_case(
        &mut r,
        "B empty",
        &a,
        &[],
        1,
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    knn_case(
        &mut r,
        "out length",
        &a,
        &bb,
        2,
        5,
        "DimensionMismatch{out}",
        &dim("out"),
    );
    knn_case(
        &mut r,
        "NaN in A",
        &an,
        &bb,
        1,
        3,
        "InvalidArgument{a}",
        &arg("a"),
    );
    knn_case(
        &mut r,
        "inf in B",
        &a,
        &bi,
        1,
        3,
        "InvalidArgument{b}",
        &arg("b"),
    );
    expect_err(
        &mut r,
        "closest_pairs B empty",
        b.closest_pairs(&a, &[], 2),
        "InvalidArgument{b}",
        arg("b"),
    );
    expect_err(
        &mut r,
        "closest_pairs NaN in A",
        b.closest_pairs(&an, &bb, 2),
        "InvalidArgument{a}",
        arg("a"),
    );
    expect_err(
        &mut r,
        "closest_pairs inf in B",
        b.closest_pairs(&a, &bi, 2),
        "InvalidArgument{b}",
        arg("b"),
    );
    radius_bad_inputs::<f32>(&mut r, b, &a, &bb, &an);
    let up = |p: &[Point]| -> Vec<Point<f64>> { p.iter().map(|q| q.map(f64::from)).collect() };
    radius_bad_inputs::<f64>(&mut r, b, &up(&a), &up(&bb), &up(&an));
    expect_err(
        &mut r,
        "nearest f64 NaN in A",
        b.nearest(&up(&an), &up(&bb), &mut [Neighbor::<f64>::default(); 3]),
        "InvalidArgument{a}",
        arg("a"),
    );
    r
}

fn too_large(field: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::TooLarge { field: f, .. } if *f == field)
}

/// `within` and `self_pairs` refuse a negative or non-finite radius,
/// non-finite points, and more pairs than `max_pairs` (counted before the
/// result is allocated).
fn radius_bad_inputs<T: Coord>(
    r: &mut SuiteReport,
    b: &dyn NearestPairs<T>,
    a: &[Point<T>],
    bb: &[Point<T>],
    an: &[Point<T>],
) {
    let n = T::NAME;
    let one = T::ONE;
    let big = T::from_f64(100.0);
    expect_err(
        r,
        &format!("within {n} r < 0"),
        b.within(a, bb, -one, usize::MAX),
        "InvalidArgument{r}",
        arg("r"),
    );
    expect_err(
        r,
        &format!("within {n} r NaN"),
        b.within(a, bb, T::from_f64(f64::NAN), usize::MAX),
        "InvalidArgument{r}",
        arg("r"),
    );
    expect_err(
        r,
        &format!("within {n} r inf"),
        b.within(a, bb, T::from_f64(f64::INFINITY), usize::MAX),
        "InvalidArgument{r}",
        arg("r"),
    );
    expect_err(
        r,
        &format!("within {n} NaN in A"),
        b.within(an, bb, one, usize::MAX),
        "InvalidArgument{a}",
        arg("a"),
    );
    // Every one of the |A| x |B| = 6 pairs is within 100: a limit of 5 fails.
    expect_err(
        r,
        &format!("within {n} more pairs than max_pairs"),
        b.within(a, bb, big, 5),
        "TooLarge{pairs within r}",
        too_large("pairs within r"),
    );
    expect_err(
        r,
        &format!("self_pairs {n} r < 0"),
        b.self_pairs(a, -one, usize::MAX),
        "InvalidArgument{r}",
        arg("r"),
    );
    expect_err(
        r,
        &format!("self_pairs {n} NaN in P"),
        b.self_pairs(an, one, usize::MAX),
        "InvalidArgument{p}",
        arg("p"),
    );
    // The 3 pairs i < j of A are within 100: a limit of 2 fails.
    expect_err(
        r,
        &format!("self_pairs {n} more pairs than max_pairs"),
        b.self_pairs(a, big, 2),
        "TooLarge{pairs within r}",
        too_large("pairs within r"),
    );
    // At the limit exactly, the call succeeds.
    match b.self_pairs(a, big, 3) {
        Ok(found) if found.len() == 3 => r.pass(),
        Ok(found) => r.fail(format!(
            "self_pairs {n} at max_pairs: {} pairs, expected 3",
            found.len()
        )),
        Err(e) if crate::check::is_unsupported(&e) => r.skip(format!("self_pairs {n}: {e}")),
        Err(e) => r.fail(format!("self_pairs {n} at max_pairs: {e}")),
    }
}
