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

/// Brute force in f64 by `(exact d2, j)`: the contract's nearest index.
fn brute_nearest(q: &Point, b: &[Point]) -> u32 {
    (0..b.len())
        .min_by(|&x, &y| {
            dist2_f64(q, &b[x])
                .total_cmp(&dist2_f64(q, &b[y]))
                .then(x.cmp(&y))
        })
        .map_or(0, |j| j as u32)
}

/// Coordinates at the ends of f32's range, whose squared distances overflow
/// (around 1e19 and beyond) or underflow (below about 1e-19) in f32: every
/// candidate used to tie at `inf` or 0 and the smallest index won. Backends
/// that compute in f32 scale by a power of two (or answer `Unsupported`, a
/// skip here); none may return a wrong index. (Sets that mix `1e10` with
/// points `1e-30` apart are past what one scale resolves: their smallest
/// distances are rounding-level ties, see docs/semantics.md.)
fn range_cases() -> Vec<(&'static str, Vec<Point>, Vec<Point>)> {
    let m = f32::MAX;
    vec![
        (
            "coordinates near f32::MAX (squares overflow)",
            vec![[m, 0.0, 0.0], [-m, 0.0, 0.0], [2e30, 0.0, 0.0]],
            vec![
                [-m, 0.0, 0.0],
                [m, 0.0, 0.0],
                [1e30, 0.0, 0.0],
                [3e30, 1.0, 0.0],
            ],
        ),
        (
            "coordinates near 1e-23 (squares underflow)",
            vec![[0.0, 0.0, 0.0], [5e-23, 5e-23, 0.0]],
            vec![[2e-23, 0.0, 0.0], [1e-23, 0.0, 0.0], [4e-23, 6e-23, 0.0]],
        ),
        (
            "subnormal coordinates",
            vec![[0.0, 0.0, 0.0], [3e-44, 0.0, 0.0]],
            vec![[4e-45, 0.0, 0.0], [3e-45, 0.0, 0.0], [2.8e-44, 0.0, 0.0]],
        ),
    ]
}

/// `nearest`, `knn` (k = 2) and `closest_pairs` on one of [`range_cases`]:
/// the exact nearest index every time (or `Unsupported`, which `known`
/// counts as a skip).
fn range_known(b: &dyn Primitives, a: &[Point], bb: &[Point]) -> Result<bool> {
    let want: Vec<u32> = a.iter().map(|q| brute_nearest(q, bb)).collect();
    let mut out = vec![Neighbor::default(); a.len()];
    b.nearest(a, bb, &mut out)?;
    let mut kn = vec![Neighbor::default(); a.len() * 2];
    b.knn(a, bb, 2, &mut kn)?;
    let pairs = b.closest_pairs(a, bb, a.len())?;
    Ok(out.iter().map(|n| n.index).eq(want.iter().copied())
        && kn.chunks(2).map(|r| r[0].index).eq(want.iter().copied())
        && pairs.iter().all(|p| p.b == want[p.a as usize]))
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
    for (label, a, bb) in range_cases() {
        known(&mut r, label, range_known(b, &a, &bb));
    }
    run_catalog(&mut r, b, "nearest_pairs");
    run_determinism(&mut r, b, "nearest_pairs");
    let strategy = (
        0usize..40,
        1usize..40,
        0usize..64,
        0usize..50,
        0u8..3,
        any::<u64>(),
    );
    run_random(&mut r, b, strategy, |&(na, nb, kf, pk, mode, seed)| {
        Input::Pairs(cases::PairsCase {
            a: random_points(na, mode, seed),
            b: random_points(nb, mode, seed ^ 1),
            knn_k: kf % (nb + 1),
            pairs_k: pk,
        })
    });
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
    r
}
