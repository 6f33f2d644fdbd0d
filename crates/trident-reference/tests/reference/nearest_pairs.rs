use trident_core::{Error, NearestPairs, Neighbor, Pair, Point, dist2_f64};
use trident_reference::certify;

use crate::{Rng, backend};

/// Brute force with the contract's tie rule: all of B sorted by (exact d2, j).
fn brute(q: &Point, b: &[Point]) -> Vec<(f64, u32)> {
    let mut d: Vec<(f64, u32)> = b
        .iter()
        .enumerate()
        .map(|(j, p)| (dist2_f64(q, p), j as u32))
        .collect();
    d.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    d
}

/// Runs all three queries and checks them exactly against brute force (same
/// indices, tie rules included) and through the certificates.
fn check_all(a: &[Point], b: &[Point], k: usize) {
    let be = backend();
    let mut out = vec![Neighbor::default(); a.len()];
    be.nearest(a, b, &mut out).unwrap();
    for (i, q) in a.iter().enumerate() {
        let (d, j) = brute(q, b)[0];
        assert_eq!((out[i].index, out[i].d2), (j, d as f32), "nearest a[{i}]");
    }
    assert_eq!(certify::nearest(a, b, &out).map(|r| r <= 1.0), Ok(true));

    let k = k.min(b.len());
    let mut out = vec![Neighbor::default(); a.len() * k];
    be.knn(a, b, k, &mut out).unwrap();
    for (i, q) in a.iter().enumerate() {
        let want: Vec<(u32, f32)> = brute(q, b)[..k]
            .iter()
            .map(|&(d, j)| (j, d as f32))
            .collect();
        let got: Vec<(u32, f32)> = out[i * k..(i + 1) * k]
            .iter()
            .map(|n| (n.index, n.d2))
            .collect();
        assert_eq!(got, want, "knn a[{i}]");
    }
    assert!(certify::knn(a, b, k, &out).is_ok());

    for kk in [0, 1, k, a.len() + 3] {
        let pairs = be.closest_pairs(a, b, kk).unwrap();
        let mut want: Vec<(f64, u32, u32)> = a
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let (d, j) = brute(q, b)[0];
                (d, i as u32, j)
            })
            .collect();
        want.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        want.truncate(kk.min(a.len()));
        let want: Vec<Pair> = want
            .into_iter()
            .map(|(d, i, j)| Pair {
                a: i,
                b: j,
                d2: d as f32,
            })
            .collect();
        assert_eq!(pairs, want, "closest_pairs k={kk}");
        let r = certify::closest_pairs(a, b, kk, &pairs);
        assert!(r.is_ok(), "{r:?}");
    }
}

fn random_points(rng: &mut Rng, n: usize, lattice: bool) -> Vec<Point> {
    (0..n)
        .map(|_| {
            let mut c = || {
                if lattice {
                    rng.below(4) as f32
                } else {
                    (rng.unit() * 100.0) as f32
                }
            };
            [c(), c(), c()]
        })
        .collect()
}

#[test]
fn random_sets_match_brute_force() {
    let mut rng = Rng::new(4);
    for t in 0..40 {
        let lattice = t % 2 == 0; // integer lattice: many exact ties
        let (na, nb) = (rng.below(30), 1 + rng.below(60));
        let a = random_points(&mut rng, na, lattice);
        let b = random_points(&mut rng, nb, lattice);
        check_all(&a, &b, 1 + rng.below(8));
    }
}

#[test]
fn thousand_identical_points() {
    let b = vec![[1.5f32, -2.0, 3.0]; 1000];
    let a = [[1.5f32, -2.0, 3.0], [0.0, 0.0, 0.0], [1e6, 1e6, 1e6]];
    check_all(&a, &b, 7);
    let mut out = vec![Neighbor::default(); 3 * 1000];
    backend().knn(&a, &b, 1000, &mut out).unwrap();
    assert!(
        out[..1000]
            .iter()
            .enumerate()
            .all(|(j, n)| n.index == j as u32 && n.d2 == 0.0)
    );
    // Identical points mixed with others, and all on one line (one axis degenerate).
    let mut b2 = b.clone();
    b2.extend((0..500).map(|i| [1.5f32, i as f32, 3.0]));
    check_all(&a, &b2, 5);
    let line: Vec<Point> = (0..700).map(|i| [0.0, 0.0, (i % 50) as f32]).collect();
    check_all(&random_points(&mut Rng::new(5), 20, true), &line, 30);
}

#[test]
fn equidistant_ties_go_to_smaller_indices() {
    let b = [
        [0.0f32, 0.0, 1.0],
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 2.0],
    ];
    let a = [[0.0f32, 0.0, 0.0], [0.0, 0.0, 0.0]];
    let mut out = [Neighbor::default(); 2];
    backend().nearest(&a, &b, &mut out).unwrap();
    assert_eq!((out[0].index, out[1].index), (0, 0));
    let mut out = [Neighbor::default(); 8];
    backend().knn(&a, &b, 4, &mut out).unwrap();
    assert_eq!(
        out[..4].iter().map(|n| n.index).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    // Two A points at the same distance: the smaller i first.
    let pairs = backend().closest_pairs(&a, &b, 2).unwrap();
    assert_eq!(pairs.iter().map(|p| p.a).collect::<Vec<_>>(), [0, 1]);
    check_all(&a, &b, 5);
}

#[test]
fn single_points_and_empty_sets() {
    let be = backend();
    let one = [[3.0f32, 4.0, 0.0]];
    let origin = [[0.0f32, 0.0, 0.0]];
    check_all(&origin, &one, 1);
    let mut out = [Neighbor::default()];
    be.nearest(&origin, &one, &mut out).unwrap();
    assert_eq!(out[0], Neighbor { index: 0, d2: 25.0 });
    // Empty A is fine everywhere.
    be.nearest(&[], &one, &mut []).unwrap();
    be.knn(&[], &one, 1, &mut []).unwrap();
    assert!(be.closest_pairs(&[], &one, 5).unwrap().is_empty());
    // k = 0 writes nothing, even with B empty.
    be.knn(&origin, &[], 0, &mut []).unwrap();
    // Errors, output untouched.
    let mut out = [Neighbor { index: 9, d2: 9.0 }];
    assert!(matches!(
        be.nearest(&origin, &[], &mut out),
        Err(Error::InvalidArgument { field: "b", .. })
    ));
    assert_eq!(out[0].index, 9);
    let mut out2 = [Neighbor::default(); 2];
    assert!(matches!(
        be.knn(&origin, &one, 2, &mut out2),
        Err(Error::InvalidArgument { field: "k", .. })
    ));
    assert!(be.closest_pairs(&origin, &[], 1).is_err());
    let nan = [[f32::NAN, 0.0, 0.0]];
    assert!(be.nearest(&nan, &one, &mut out).is_err());
    assert_eq!(out[0].index, 9);
}

#[test]
fn certificates_reject_wrong_answers() {
    let b = [[0.0f32, 0.0, 0.0], [10.0, 0.0, 0.0], [0.0, 0.0, 0.0]];
    let a = [[1.0f32, 0.0, 0.0]];
    // Tie at the optimum: either index is accepted by the certificate.
    assert!(certify::nearest(&a, &b, &[Neighbor { index: 2, d2: 1.0 }]).is_ok());
    assert!(certify::nearest(&a, &b, &[Neighbor { index: 1, d2: 81.0 }]).is_err());
    assert!(certify::nearest(&a, &b, &[Neighbor { index: 0, d2: 2.0 }]).is_err());
    assert!(certify::nearest(&a, &b, &[Neighbor { index: 7, d2: 1.0 }]).is_err());
    let dup = [
        Neighbor { index: 0, d2: 1.0 },
        Neighbor { index: 0, d2: 1.0 },
    ];
    assert!(certify::knn(&a, &b, 2, &dup).is_err());
    let skip = [
        Neighbor { index: 0, d2: 1.0 },
        Neighbor { index: 1, d2: 81.0 },
    ];
    assert!(certify::knn(&a, &b, 2, &skip).is_err());
    let a2 = [[1.0f32, 0.0, 0.0], [5.0, 0.0, 0.0]];
    let wrong_order = [Pair {
        a: 1,
        b: 0,
        d2: 25.0,
    }];
    assert!(certify::closest_pairs(&a2, &b, 1, &wrong_order).is_err());
    let too_few: [Pair; 0] = [];
    assert!(certify::closest_pairs(&a2, &b, 1, &too_few).is_err());
}
