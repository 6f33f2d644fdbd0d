//! f64 coordinates: `nearest`, `knn` and `closest_pairs` against brute force
//! in f64 (bit for bit), including coordinates that f32 cannot hold.

use trident_core::{NearestPairs, Neighbor, Point, dist2};

use super::{Rng, backend, brute, wide};
use crate::RayonBackend;

/// nearest, knn for several k, and closest_pairs against brute force.
fn check_all(be: &RayonBackend, a: &[Point<f64>], b: &[Point<f64>]) {
    let mut out = vec![Neighbor::default(); a.len()];
    be.nearest(a, b, &mut out).unwrap();
    for (i, q) in a.iter().enumerate() {
        assert_eq!(out[i], brute::knn(q, b, 1)[0], "nearest of a[{i}]");
    }
    for k in [1, 3, 9, b.len()].map(|k| k.min(b.len())) {
        let mut out = vec![Neighbor::default(); a.len() * k];
        be.knn(a, b, k, &mut out).unwrap();
        for (i, q) in a.iter().enumerate() {
            assert_eq!(
                &out[i * k..(i + 1) * k],
                &brute::knn(q, b, k)[..],
                "knn k={k} a[{i}]"
            );
        }
    }
    for k in [0, 1, 7, a.len() / 2, a.len(), a.len() + 5] {
        assert_eq!(
            be.closest_pairs(a, b, k).unwrap(),
            brute::pairs(a, b, k),
            "pairs k={k}"
        );
    }
}

#[test]
fn uniform_lattice_duplicates_clusters() {
    let be = backend();
    let mut rng = Rng(31);
    for nb in [1, 2, 7, 8, 9, 17, 100, 513] {
        check_all(
            &be,
            &wide(&rng.int_points(100, 1000)),
            &wide(&rng.int_points(nb, 1000)),
        );
    }
    check_all(
        &be,
        &wide(&rng.int_points(200, 4)),
        &wide(&rng.int_points(300, 4)),
    );
    let mut b = rng.int_points(50, 100);
    b.extend(std::iter::repeat_n([7.0f32, 7.0, 7.0], 1000));
    let mut a = rng.int_points(60, 100);
    a.push([7.0, 7.0, 7.0]);
    check_all(&be, &wide(&a), &wide(&b));
    let centers = rng.int_points(5, 1_000_000);
    let mut a = wide(&rng.clustered(300, &centers, 1e3));
    a.extend([[-5e7, 0.0, 0.0], [1e9, 1e9, 1e9]]);
    check_all(&be, &a, &wide(&rng.clustered(700, &centers, 1e3)));
    assert!(be.closest_pairs(&[], &wide(&b), 5).unwrap().is_empty());
}

/// Points `offset + lattice * step + jitter` in UTM-like coordinates (easting
/// about 5e5 m, northing 5.3e6 m, height 200 m), `step` metres apart.
pub(super) fn utm(rng: &mut Rng, n: usize, side: u64, step: f64, jitter: f64) -> Vec<Point<f64>> {
    const OFFSET: [f64; 3] = [500_000.0, 5_300_000.0, 200.0];
    (0..n)
        .map(|_| {
            [0, 1, 2].map(|d| {
                let cell = (rng.next() % side) as f64 * step;
                OFFSET[d] + cell + jitter * (rng.unit() - 0.5)
            })
        })
        .collect()
}

/// Metre and half-metre spacing around (5e5, 5.3e6, 200): f32 holds 5.3e6
/// only to 0.5 m, so rounding the input to f32 would move points by a
/// sizeable part of their spacing and pick other neighbours. The f64 answers
/// are brute force's, and differ from those of the rounded points.
#[test]
fn utm_coordinates_are_exact() {
    let be = backend();
    let mut rng = Rng(32);
    for (step, jitter) in [(1.0, 0.0), (0.5, 0.0), (1.0, 0.01), (0.5, 0.003)] {
        let a = utm(&mut rng, 300, 20, step, jitter);
        let b = utm(&mut rng, 500, 20, step, jitter);
        check_all(&be, &a, &b);
        if jitter > 0.0 {
            // The test would notice a round trip through f32.
            let round = |p: &[Point<f64>]| -> Vec<Point> {
                p.iter().map(|q| q.map(|v| v as f32)).collect()
            };
            let (a32, b32) = (round(&a), round(&b));
            let moved = a32
                .iter()
                .enumerate()
                .filter(|&(i, q)| {
                    super::brute_knn(q, &b32, 1)[0].index != brute::knn(&a[i], &b, 1)[0].index
                })
                .count();
            assert!(moved > 0, "no answer changes in f32");
        }
    }
    // Neighbours a quarter of a metre apart along the northing.
    let b: Vec<Point<f64>> = (0..100)
        .map(|j| [500_000.0, 5_300_000.0 + 0.25 * j as f64, 200.0])
        .collect();
    let a: Vec<Point<f64>> = (0..100)
        .map(|j| [500_000.0, 5_300_000.0 + 0.25 * j as f64 + 0.1, 200.0])
        .collect();
    let mut out = vec![Neighbor::default(); a.len()];
    be.nearest(&a, &b, &mut out).unwrap();
    for (i, n) in out.iter().enumerate() {
        assert_eq!(n.index, i as u32);
        assert_eq!(n.d2, dist2(&a[i], &b[i]));
    }
}

/// Coordinates whose f64 squared distances overflow or underflow are scaled
/// by a power of two: the nearest points are those of the unscaled set.
#[test]
fn huge_and_tiny_coordinates() {
    let be = backend();
    let mut rng = Rng(33);
    let a = rng.int_points(100, 50);
    let b = rng.int_points(150, 50);
    let mut plain = vec![Neighbor::default(); a.len()];
    be.nearest(&a, &b, &mut plain).unwrap();
    for e in [520, -600] {
        let s = |p: &[Point]| -> Vec<Point<f64>> {
            p.iter()
                .map(|q| q.map(|v| v as f64 * 2f64.powi(e)))
                .collect()
        };
        let mut out = vec![Neighbor::default(); a.len()];
        be.nearest(&s(&a), &s(&b), &mut out).unwrap();
        let idx = |o: &[Neighbor<f64>]| o.iter().map(|n| n.index).collect::<Vec<_>>();
        let plain_idx: Vec<u32> = plain.iter().map(|n| n.index).collect();
        assert_eq!(idx(&out), plain_idx, "2^{e}");
        let pairs = be.closest_pairs(&s(&a), &s(&b), 10).unwrap();
        let want = be.closest_pairs(&a, &b, 10).unwrap();
        assert_eq!(
            pairs.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(),
            want.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(),
            "2^{e}"
        );
    }
}

#[test]
fn thread_count_does_not_change_results() {
    let mut rng = Rng(34);
    let a = utm(&mut rng, 20_000, 100, 0.5, 0.01);
    let b = utm(&mut rng, 30_000, 100, 0.5, 0.01);
    let run = |threads: usize| {
        let be = RayonBackend::with_threads(threads).unwrap();
        let mut near = vec![Neighbor::default(); a.len()];
        be.nearest(&a, &b, &mut near).unwrap();
        let mut knn = vec![Neighbor::default(); a.len() * 4];
        be.knn(&a, &b, 4, &mut knn).unwrap();
        (near, knn, be.closest_pairs(&a, &b, 100).unwrap())
    };
    let one = run(1);
    assert_eq!(one, run(3));
    for i in (0..a.len()).step_by(997) {
        assert_eq!(one.0[i], brute::knn(&a[i], &b, 1)[0]);
        assert_eq!(&one.1[i * 4..i * 4 + 4], &brute::knn(&a[i], &b, 4)[..]);
    }
}
