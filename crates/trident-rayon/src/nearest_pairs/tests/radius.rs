//! `within` and `self_pairs` against brute force in the coordinate type (bit
//! for bit: same `dist2`, same `r * r`, rows sorted by `(d2, j)`), for f32 and
//! f64 coordinates.

use proptest::prelude::*;
use trident_core::{Error, NearestPairs, Point, RadiusNeighbors};

use super::super::real::Real;
use super::{Rng, backend, brute, wide};
use crate::RayonBackend;

/// Both calls on `a` (and `b`) against brute force, for each radius.
fn check<T: Real>(be: &RayonBackend, a: &[Point<T>], b: &[Point<T>], radii: &[f64])
where
    RayonBackend: NearestPairs<T>,
{
    for &r in radii {
        let r = T::from_f64(r);
        let got = be.within(a, b, r, usize::MAX).unwrap();
        assert_eq!(got, brute::within(a, b, r, false), "within r={r}");
        let got = be.self_pairs(a, r, usize::MAX).unwrap();
        assert_eq!(got, brute::within(a, a, r, true), "self_pairs r={r}");
    }
}

/// [`check`] in f32 and in f64 on the same (exactly representable) points.
fn check_both(be: &RayonBackend, a: &[Point], b: &[Point], radii: &[f64]) {
    check(be, a, b, radii);
    check(be, &wide(a), &wide(b), radii);
}

#[test]
fn uniform_many_sizes_and_radii() {
    let be = backend();
    let mut rng = Rng(21);
    for nb in [1, 2, 7, 8, 9, 16, 17, 100, 513] {
        let a = rng.int_points(120, 100);
        let b = rng.int_points(nb, 100);
        // 0: only coincident points; 1e4: every pair.
        check_both(&be, &a, &b, &[0.0, 1.0, 7.5, 20.0, 1e4]);
    }
}

#[test]
fn lattice_ties_on_the_radius() {
    // Coordinates in 0..5: many pairs lie exactly at distance 1, sqrt 2, 2,
    // 3 and are in (`<=`), and many tie in d2 so the index decides the order.
    let be = backend();
    let mut rng = Rng(22);
    let a = rng.int_points(200, 5);
    let b = rng.int_points(300, 5);
    check_both(&be, &a, &b, &[0.0, 1.0, 2f64.sqrt(), 2.0, 3.0]);
}

#[test]
fn duplicates_and_clusters() {
    let be = backend();
    let mut rng = Rng(23);
    let mut b = rng.int_points(50, 100);
    b.extend(std::iter::repeat_n([7.0f32, 7.0, 7.0], 300));
    b.extend(rng.int_points(50, 100));
    let mut a = rng.int_points(60, 100);
    a.extend(std::iter::repeat_n([7.0f32, 7.0, 7.0], 20));
    check_both(&be, &a, &b, &[0.0, 0.5, 3.0, 40.0]);
    let centers = rng.int_points(4, 100_000);
    let a = rng.clustered(400, &centers, 300.0);
    let b = rng.clustered(600, &centers, 300.0);
    check_both(&be, &a, &b, &[0.0, 50.0, 400.0, 1e6]);
}

#[test]
fn empty_and_single_point_sets() {
    let be = backend();
    let p = [[1.0f32, 2.0, 3.0], [1.0, 2.0, 4.0]];
    let rows = |n: usize| RadiusNeighbors::<f32> {
        offsets: vec![0; n + 1],
        indices: vec![],
        d2: vec![],
    };
    assert_eq!(be.within(&[], &p, 5.0, usize::MAX).unwrap(), rows(0));
    assert_eq!(be.within(&p, &[], 5.0, usize::MAX).unwrap(), rows(2));
    assert_eq!(be.self_pairs(&[], 5.0, usize::MAX).unwrap(), rows(0));
    assert_eq!(be.self_pairs(&p[..1], 5.0, usize::MAX).unwrap(), rows(1));
    // B empty and max_pairs 0: nothing found, nothing too large.
    assert_eq!(be.within(&p, &[], 5.0, 0).unwrap(), rows(2));
    let found = be.self_pairs(&p, 1.0, usize::MAX).unwrap();
    assert_eq!(found.pairs().collect::<Vec<_>>(), [(0, 1, 1.0)]);
    check_both(&be, &p, &p[..1], &[0.0, 1.0]);
}

/// More pairs than `max_pairs` is `TooLarge` with the exact count, whatever
/// the radius (whole subtrees counted at once included); exactly
/// `max_pairs` is fine.
#[test]
fn max_pairs_is_checked_on_the_exact_count() {
    let be = backend();
    let mut rng = Rng(24);
    let a = rng.int_points(300, 50);
    let b = rng.int_points(500, 50);
    for r in [0.0f32, 3.0, 10.0, 30.0, 1e3] {
        for (upper, want) in [
            (false, brute::within(&a, &b, r, false)),
            (true, brute::within(&a, &a, r, true)),
        ] {
            let call = |max: usize| {
                if upper {
                    be.self_pairs(&a, r, max)
                } else {
                    be.within(&a, &b, r, max)
                }
            };
            let n = want.len();
            assert_eq!(call(n).unwrap(), want, "r={r} upper={upper}");
            if n > 0 {
                match call(n - 1) {
                    Err(Error::TooLarge {
                        field: "pairs within r",
                        value,
                        limit,
                    }) => assert_eq!((value, limit), (n as u128, n as u128 - 1)),
                    other => panic!("r={r} upper={upper}: {other:?}"),
                }
            }
        }
    }
}

/// A radius that takes every pair of 20K x 20K points (4e8 pairs, 3 GB of
/// result) with a small `max_pairs` fails at once with the exact count: the
/// search stops soon after passing the limit and the count takes whole
/// subtrees without visiting their points.
#[test]
fn huge_result_fails_fast() {
    let be = backend();
    let mut rng = Rng(25);
    let p = rng.int_points(20_000, 1000);
    let t = std::time::Instant::now();
    let n = p.len() as u128;
    match be.within(&p, &p, 1e5, 1000) {
        Err(Error::TooLarge { value, .. }) => assert_eq!(value, n * n),
        other => panic!("{:?}", other.map(|r| r.len())),
    }
    match be.self_pairs(&p, 1e5, 1000) {
        Err(Error::TooLarge { value, .. }) => assert_eq!(value, n * (n - 1) / 2),
        other => panic!("{:?}", other.map(|r| r.len())),
    }
    assert!(t.elapsed().as_secs_f64() < 20.0, "{:?}", t.elapsed());
}

#[test]
fn thread_count_does_not_change_rows() {
    let mut rng = Rng(26);
    let centers = rng.int_points(8, 1_000_000);
    let a = rng.clustered(20_000, &centers, 2e4);
    let b = rng.clustered(30_000, &centers, 2e4);
    let r = 6000.0f32;
    let run = |threads: usize| {
        let be = RayonBackend::with_threads(threads).unwrap();
        let w = be.within(&a, &b, r, usize::MAX).unwrap();
        let s = be.self_pairs(&b, r, usize::MAX).unwrap();
        let wd = be
            .within(&wide(&a), &wide(&b), r as f64, usize::MAX)
            .unwrap();
        (w, s, wd)
    };
    let one = run(1);
    assert!(one.0.len() > 3 * a.len() && one.1.len() > 3 * b.len());
    assert_eq!(one, run(3));
    // The first rows against brute force (a row depends on its query alone).
    let n = 150;
    let want = brute::within(&a[..n], &b, r, false);
    let want_self = brute::within(&b[..n], &b, r, true);
    let want_wide = brute::within(&wide(&a[..n]), &wide(&b), r as f64, false);
    for i in 0..n {
        assert_eq!(one.0.row(i), want.row(i), "within row {i}");
        assert_eq!(one.1.row(i), want_self.row(i), "self_pairs row {i}");
        assert_eq!(one.2.row(i), want_wide.row(i), "f64 within row {i}");
    }
}

/// Coordinates whose squared distances overflow (or underflow) the type are
/// scaled by a power of two, and so is the radius: the pairs are those of the
/// unscaled lattice, the distances scaled back.
#[test]
fn range_scaling_keeps_the_pairs() {
    let be = backend();
    let mut rng = Rng(27);
    let a = rng.int_points(150, 8);
    let b = rng.int_points(200, 8);
    let r = 1.5;
    fn scaled<T: Real>(p: &[Point], e: i32) -> Vec<Point<T>> {
        p.iter()
            .map(|q| q.map(|v| T::from_f64(v as f64 * 2f64.powi(e))))
            .collect()
    }
    fn same<T: Real>(be: &RayonBackend, a: &[Point], b: &[Point], r: f64, e: i32)
    where
        RayonBackend: NearestPairs<T>,
    {
        let (sa, sb) = (scaled::<T>(a, e), scaled::<T>(b, e));
        let sr = T::from_f64(r * 2f64.powi(e));
        let plain = brute::within(a, b, r as f32, false);
        let got = be.within(&sa, &sb, sr, usize::MAX).unwrap();
        assert_eq!(got.offsets, plain.offsets, "2^{e}");
        assert_eq!(got.indices, plain.indices, "2^{e}");
        for (&d, &p) in got.d2.iter().zip(&plain.d2) {
            // Small integers times 2^(2e): exact where representable.
            assert_eq!(d, T::from_f64(p as f64 * 2f64.powi(2 * e)), "2^{e}");
        }
        let plain = brute::within(a, a, r as f32, true);
        let got = be.self_pairs(&sa, sr, usize::MAX).unwrap();
        assert_eq!(got.indices, plain.indices, "2^{e}");
        assert_eq!(got.offsets, plain.offsets, "2^{e}");
    }
    // f32: beyond 2^62 squares overflow, below 2^-40 they lose their order.
    same::<f32>(&be, &a, &b, r, 62);
    same::<f32>(&be, &a, &b, r, -80);
    // f64: beyond 2^510 and below 2^-459.
    same::<f64>(&be, &a, &b, r, 508);
    same::<f64>(&be, &a, &b, r, -600);
}

#[test]
fn bad_radius_and_points_are_errors() {
    let be = backend();
    let p = [[0.0f32; 3], [1.0, 0.0, 0.0]];
    for r in [-1.0f32, f32::NAN, f32::INFINITY] {
        assert!(matches!(
            be.within(&p, &p, r, usize::MAX),
            Err(Error::InvalidArgument { field: "r", .. })
        ));
        assert!(matches!(
            be.self_pairs(&p, r, usize::MAX),
            Err(Error::InvalidArgument { field: "r", .. })
        ));
    }
    let bad = [[0.0f64, f64::NAN, 0.0]];
    assert!(be.within(&bad, &wide(&p), 1.0, usize::MAX).is_err());
    assert!(be.within(&wide(&p), &bad, 1.0, usize::MAX).is_err());
    assert!(be.self_pairs(&bad, 1.0, usize::MAX).is_err());
}

/// Small integer coordinates (full of ties) and any radius: f32 and f64 rows
/// equal brute force's.
fn small_set() -> impl Strategy<Value = Vec<Point>> {
    prop::collection::vec(
        prop::array::uniform3(0i8..6).prop_map(|p| p.map(f32::from)),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn radius_search_is_brute_force(a in small_set(), b in small_set(), r in 0.0f64..6.0) {
        check_both(&backend(), &a, &b, &[r, r.round()]);
    }
}
