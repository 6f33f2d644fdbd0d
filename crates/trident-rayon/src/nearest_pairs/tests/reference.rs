//! Against the reference backend (f64 inside, exact distances, its own tie
//! rules): on inputs whose distances the coordinate type computes exactly
//! (small integers in f32; integer and half-metre lattices in f64, UTM
//! offsets included) every index and every distance must be equal; with
//! jitter the indices must be equal and the distances within the
//! nearest-neighbour tolerance, away from rounding-level ties.

use trident_core::{Coord, NearestPairs, Neighbor, Point, RadiusNeighbors, tol};
use trident_reference::ReferenceBackend;

use super::super::real::Real;
use super::f64::utm;
use super::{Rng, backend, wide};
use crate::RayonBackend;

/// Whether two distances agree: equal, or (with `rel > 0`) within `rel`.
fn close<T: Real>(x: T, y: T, rel: f64) -> bool {
    let (x, y) = (x.to_f64(), y.to_f64());
    x == y || (x - y).abs() <= rel * x.abs().max(y.abs())
}

fn same_rows<T: Real>(got: &RadiusNeighbors<T>, want: &RadiusNeighbors<T>, rel: f64, what: &str) {
    assert_eq!(got.offsets, want.offsets, "{what}: row lengths");
    assert_eq!(got.indices, want.indices, "{what}: indices");
    for (t, (&x, &y)) in got.d2.iter().zip(&want.d2).enumerate() {
        assert!(close(x, y, rel), "{what}: d2[{t}] {x} vs {y}");
    }
}

/// Every call on this backend and on the reference; `rel` is 0 where the
/// distances are exact in `T`. Radii are chosen away from any pair's
/// distance by more than rounding, or exactly on lattice distances.
fn compare<T: Real>(a: &[Point<T>], b: &[Point<T>], radii: &[f64], rel: f64, what: &str)
where
    RayonBackend: NearestPairs<T>,
    ReferenceBackend: NearestPairs<T>,
{
    let (be, re) = (backend(), ReferenceBackend::new().unwrap());
    if !b.is_empty() {
        let mut got = vec![Neighbor::default(); a.len()];
        let mut want = got.clone();
        be.nearest(a, b, &mut got).unwrap();
        re.nearest(a, b, &mut want).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.index, w.index, "{what}: nearest a[{i}]");
            assert!(close(g.d2, w.d2, rel), "{what}: nearest a[{i}]");
        }
        let k = 5.min(b.len());
        let mut got = vec![Neighbor::default(); a.len() * k];
        let mut want = got.clone();
        be.knn(a, b, k, &mut got).unwrap();
        re.knn(a, b, k, &mut want).unwrap();
        for (t, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.index, w.index, "{what}: knn {t}");
            assert!(close(g.d2, w.d2, rel), "{what}: knn {t}");
        }
        let got = be.closest_pairs(a, b, 50).unwrap();
        let want = re.closest_pairs(a, b, 50).unwrap();
        assert_eq!(got.len(), want.len(), "{what}: pairs");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.a, g.b), (w.a, w.b), "{what}: pairs");
            assert!(close(g.d2, w.d2, rel), "{what}: pairs");
        }
    }
    for &r in radii {
        let r = T::from_f64(r);
        let what = format!("{what} r={r}");
        let got = be.within(a, b, r, usize::MAX).unwrap();
        let want = re.within(a, b, r, usize::MAX).unwrap();
        same_rows(&got, &want, rel, &format!("{what} within"));
        let got = be.self_pairs(a, r, usize::MAX).unwrap();
        let want = re.self_pairs(a, r, usize::MAX).unwrap();
        same_rows(&got, &want, rel, &format!("{what} self_pairs"));
        // Past the limit both fail the same way.
        if !want.is_empty() {
            let max = want.len() - 1;
            let (g, w) = (be.self_pairs(a, r, max), re.self_pairs(a, r, max));
            assert!(
                matches!((&g, &w), (Err(x), Err(y)) if std::mem::discriminant(x) == std::mem::discriminant(y)),
                "{what}: {g:?} vs {w:?}"
            );
        }
    }
}

/// [`compare`] in f32 and f64 on small-integer points (exact in both).
fn compare_both(a: &[Point], b: &[Point], radii: &[f64], what: &str) {
    compare(a, b, radii, 0.0, &format!("f32 {what}"));
    compare(&wide(a), &wide(b), radii, 0.0, &format!("f64 {what}"));
}

#[test]
fn exact_inputs_agree_exactly() {
    let mut rng = Rng(41);
    let a = rng.int_points(300, 1000);
    let b = rng.int_points(400, 1000);
    compare_both(&a, &b, &[0.0, 50.0, 123.5, 1e5], "uniform");
    let a = rng.int_points(150, 5);
    let b = rng.int_points(200, 5);
    compare_both(&a, &b, &[0.0, 1.0, 2.0, 3.0], "lattice");
    let centers = rng.int_points(4, 100_000);
    let a = rng.clustered(300, &centers, 500.0);
    let b = rng.clustered(500, &centers, 500.0);
    compare_both(&a, &b, &[0.0, 30.0, 200.0], "clustered");
    let mut b = rng.int_points(40, 50);
    b.extend(std::iter::repeat_n([9.0f32, 9.0, 9.0], 200));
    let mut a = rng.int_points(40, 50);
    a.extend(std::iter::repeat_n([9.0f32, 9.0, 9.0], 30));
    compare_both(&a, &b, &[0.0, 4.0], "duplicates");
    compare_both(&[], &b, &[1.0], "empty A");
    compare_both(&a, &[], &[1.0], "empty B");
}

/// UTM-like f64 coordinates: exact on metre and half-metre lattices (every
/// difference and square is exact in f64), and within the f64 tolerance with
/// millimetre jitter.
#[test]
fn utm_coordinates_agree() {
    let mut rng = Rng(42);
    for step in [1.0, 0.5] {
        let a = utm(&mut rng, 400, 12, step, 0.0);
        let b = utm(&mut rng, 500, 12, step, 0.0);
        let radii = [0.0, step, step * 2f64.sqrt(), 2.0 * step, 3.0 * step];
        compare(&a, &b, &radii, 0.0, &format!("utm step {step}"));
    }
    let a = utm(&mut rng, 400, 12, 0.5, 0.002);
    let b = utm(&mut rng, 500, 12, 0.5, 0.002);
    // Radii between lattice distances, far from any jittered pair's.
    compare(
        &a,
        &b,
        &[0.25, 0.6, 0.85, 1.1],
        tol::NEAREST_F64_REL,
        "utm jitter",
    );
    // The jittered distances are not rounding-level ties of one another.
    assert!(f64::exact_d2(&a[0], &b[0]) > 0.0);
}
