//! Exact agreement with brute force (same `dist2` in the coordinate type, same
//! tie rules), so every comparison here is bit-for-bit; `reference` compares
//! with the reference backend. This file holds the f32 `nearest`, `knn` and
//! `closest_pairs` tests; `f64` the same calls in f64 coordinates; `radius`
//! `within` and `self_pairs` in both.

mod brute;
mod f64;
mod radius;
mod reference;

use trident_core::{Error, NearestPairs, Neighbor, Pair, Point, dist2};

use crate::RayonBackend;

/// The same points in f64 (exact).
fn wide(p: &[Point]) -> Vec<Point<f64>> {
    p.iter().map(|q| q.map(f64::from)).collect()
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn int_points(&mut self, n: usize, side: u64) -> Vec<Point> {
        (0..n)
            .map(|_| [0; 3].map(|_: i32| (self.next() % side) as f32))
            .collect()
    }
    fn gauss(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    fn clustered(&mut self, n: usize, centers: &[Point], sigma: f64) -> Vec<Point> {
        (0..n)
            .map(|_| {
                let c = centers[(self.next() % centers.len() as u64) as usize];
                c.map(|x| (x as f64 + sigma * self.gauss()).round() as f32)
            })
            .collect()
    }
}

fn backend() -> RayonBackend {
    RayonBackend::with_threads(2).unwrap()
}

fn brute_knn(q: &Point, b: &[Point], k: usize) -> Vec<Neighbor> {
    let mut all: Vec<(u32, u32)> = b
        .iter()
        .enumerate()
        .map(|(j, p)| (dist2(q, p).to_bits(), j as u32))
        .collect();
    all.sort_unstable();
    all[..k]
        .iter()
        .map(|&(d, j)| Neighbor {
            index: j,
            d2: f32::from_bits(d),
        })
        .collect()
}

fn brute_pairs(a: &[Point], b: &[Point], k: usize) -> Vec<Pair> {
    let mut all: Vec<(u32, u32, u32)> = a
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let n = brute_knn(q, b, 1)[0];
            (n.d2.to_bits(), i as u32, n.index)
        })
        .collect();
    all.sort_unstable();
    all.truncate(k);
    all.into_iter()
        .map(|(d, i, j)| Pair {
            a: i,
            b: j,
            d2: f32::from_bits(d),
        })
        .collect()
}

/// Checks nearest, knn for several k, and closest_pairs against brute force.
fn check_all(be: &RayonBackend, a: &[Point], b: &[Point]) {
    let mut out = vec![Neighbor::default(); a.len()];
    be.nearest(a, b, &mut out).unwrap();
    for (i, q) in a.iter().enumerate() {
        assert_eq!(out[i], brute_knn(q, b, 1)[0], "nearest of a[{i}]");
    }
    for k in [1, 3, 9, b.len()].map(|k| k.min(b.len())) {
        let mut out = vec![Neighbor::default(); a.len() * k];
        be.knn(a, b, k, &mut out).unwrap();
        for (i, q) in a.iter().enumerate() {
            assert_eq!(
                &out[i * k..(i + 1) * k],
                &brute_knn(q, b, k)[..],
                "knn k={k} a[{i}]"
            );
        }
    }
    for k in [0, 1, 7, a.len() / 2, a.len(), a.len() + 5] {
        assert_eq!(
            be.closest_pairs(a, b, k).unwrap(),
            brute_pairs(a, b, k),
            "pairs k={k}"
        );
    }
}

#[test]
fn random_uniform_many_sizes() {
    let be = backend();
    let mut rng = Rng(1);
    for nb in [1, 2, 7, 8, 9, 16, 17, 100, 513] {
        let a = rng.int_points(150, 1000);
        let b = rng.int_points(nb, 1000);
        check_all(&be, &a, &b);
    }
}

#[test]
fn lattice_with_many_ties() {
    // Coordinates in 0..4: most distances tie, so the index rules decide.
    let be = backend();
    let mut rng = Rng(2);
    let a = rng.int_points(200, 4);
    let b = rng.int_points(300, 4);
    check_all(&be, &a, &b);
}

#[test]
fn equidistant_tie_goes_to_smaller_index() {
    let be = backend();
    let b: Vec<Point> = vec![
        [5.0, 0.0, 0.0],
        [0.0, 0.0, -1.0],
        [0.0, 1.0, 0.0],
        [-1.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
    ];
    let a = [[0.0f32, 0.0, 0.0]];
    let mut out = [Neighbor::default()];
    be.nearest(&a, &b, &mut out).unwrap();
    assert_eq!(out[0], Neighbor { index: 1, d2: 1.0 });
    let mut out = [Neighbor::default(); 4];
    be.knn(&a, &b, 4, &mut out).unwrap();
    assert_eq!(out.map(|n| n.index), [1, 2, 3, 4]);
    // Two A points at the same distance: the smaller i comes first.
    let a = [[9.0f32, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]];
    let pairs = be.closest_pairs(&a, &b, 3).unwrap();
    assert_eq!(
        pairs.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(),
        [(1, 2), (2, 1), (0, 0)]
    );
}

#[test]
fn duplicate_points() {
    let be = backend();
    let mut rng = Rng(3);
    let mut b = rng.int_points(50, 100);
    b.extend(std::iter::repeat_n([7.0f32, 7.0, 7.0], 1000));
    b.extend(rng.int_points(50, 100));
    let mut a = rng.int_points(60, 100);
    a.push([7.0, 7.0, 7.0]);
    a.push([7.0, 7.0, 7.5]);
    check_all(&be, &a, &b);
    let mut out = [Neighbor::default()];
    be.nearest(&[[7.0, 7.0, 7.0]], &b, &mut out).unwrap();
    let first = b.iter().position(|p| *p == [7.0, 7.0, 7.0]).unwrap() as u32;
    assert_eq!(
        out[0],
        Neighbor {
            index: first,
            d2: 0.0
        }
    );
}

#[test]
fn single_point_and_empty_a() {
    let be = backend();
    let b = [[1.0f32, 2.0, 3.0]];
    let a = [[0.0f32, 0.0, 0.0], [1.0, 2.0, 3.0]];
    check_all(&be, &a, &b);
    let mut none: [Neighbor; 0] = [];
    be.nearest(&[], &b, &mut none).unwrap();
    be.knn(&[], &b, 1, &mut none).unwrap();
    assert!(be.closest_pairs(&[], &b, 5).unwrap().is_empty());
    // One query, one point.
    assert_eq!(
        be.closest_pairs(&b, &b, 1).unwrap(),
        [Pair {
            a: 0,
            b: 0,
            d2: 0.0
        }]
    );
}

#[test]
fn clustered_and_far_outside() {
    let be = backend();
    let mut rng = Rng(4);
    let centers = rng.int_points(5, 1_000_000);
    let b = rng.clustered(700, &centers, 1e3);
    let mut a = rng.clustered(300, &centers, 1e3);
    // Far outside B's box, along each axis and diagonally.
    a.extend([
        [-5e7, 0.0, 0.0],
        [0.0, 3e8, 0.0],
        [0.0, 0.0, -1e9],
        [1e9, 1e9, 1e9],
        [-1e9, 5e5, 5e5],
    ]);
    check_all(&be, &a, &b);
}

#[test]
fn huge_coordinates_overflow_to_infinity() {
    // Distances overflow f32 to +inf: all tie, so the smallest index wins.
    let be = backend();
    let b: Vec<Point> = (0..20).map(|j| [3e38, j as f32, 0.0]).collect();
    let a = [[-3e38f32, 0.0, 0.0], [3e38, 5.0, 0.0]];
    check_all(&be, &a, &b);
}

#[test]
fn parallel_build_and_thread_count_do_not_change_results() {
    let mut rng = Rng(5);
    let centers = rng.int_points(8, 1_000_000);
    let b = rng.clustered(40_000, &centers, 2e4);
    let a = rng.clustered(20_000, &centers, 2e4);
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
    // Spot-check against brute force.
    for i in (0..a.len()).step_by(997) {
        assert_eq!(one.0[i], brute_knn(&a[i], &b, 1)[0]);
        assert_eq!(&one.1[i * 4..i * 4 + 4], &brute_knn(&a[i], &b, 4)[..]);
    }
    let d2: Vec<f32> = one.0.iter().map(|n| n.d2).collect();
    let mut idx: Vec<u32> = (0..a.len() as u32).collect();
    idx.sort_by_key(|&i| (d2[i as usize].to_bits(), i));
    let want: Vec<Pair> = idx[..100]
        .iter()
        .map(|&i| Pair {
            a: i,
            b: one.0[i as usize].index,
            d2: d2[i as usize],
        })
        .collect();
    assert_eq!(one.2, want);
}

#[test]
fn k_equals_one_is_nearest() {
    let be = backend();
    let mut rng = Rng(6);
    let a = rng.int_points(500, 10_000);
    let b = rng.int_points(800, 10_000);
    let mut near = vec![Neighbor::default(); a.len()];
    let mut knn = vec![Neighbor::default(); a.len()];
    be.nearest(&a, &b, &mut near).unwrap();
    be.knn(&a, &b, 1, &mut knn).unwrap();
    assert_eq!(near, knn);
}

#[test]
fn errors_leave_output_untouched() {
    let be = backend();
    let sentinel = Neighbor {
        index: 42,
        d2: -1.0,
    };
    let a = [[0.0f32; 3]; 2];
    let b = [[1.0f32; 3]; 3];
    let mut out = [sentinel; 2];
    assert!(matches!(
        be.nearest(&a, &[], &mut out),
        Err(Error::InvalidArgument { field: "b", .. })
    ));
    let mut short = [sentinel; 1];
    assert!(matches!(
        be.nearest(&a, &b, &mut short),
        Err(Error::DimensionMismatch { .. })
    ));
    let mut out8 = [sentinel; 8];
    assert!(matches!(
        be.knn(&a, &b, 4, &mut out8),
        Err(Error::InvalidArgument { field: "k", .. })
    ));
    let bad = [[0.0f32, f32::NAN, 0.0]];
    assert!(be.nearest(&bad, &b[..1], &mut short).is_err());
    assert!(be.closest_pairs(&a, &[], 1).is_err());
    assert!(be.closest_pairs(&bad, &b, 1).is_err());
    assert_eq!(out, [sentinel; 2]);
    assert_eq!(short, [sentinel; 1]);
    assert_eq!(out8, [sentinel; 8]);
}

/// The grid path and the kd-tree path of `closest_pairs` give the same
/// pairs (and brute force's on a subset): uniform input, which takes the
/// grid, at several k and thread counts, with integer coordinates full of
/// equal distances.
#[test]
fn grid_and_kdtree_pairs_agree() {
    use super::{Index, closest_pairs};
    let mut rng = Rng(11);
    let b = rng.int_points(40_000, 2_000);
    let a = rng.int_points(60_000, 2_000);
    assert!(
        super::grid::Grid::build(&b).is_some(),
        "uniform B takes the grid"
    );
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for k in [1, 100, 5_000] {
            let (g, t) = pool.install(|| {
                (
                    closest_pairs(&a, &b, k, Index::Auto),
                    closest_pairs(&a, &b, k, Index::KdTree),
                )
            });
            assert_eq!(g, t, "k={k} threads={threads}");
        }
    }
    let (a, b) = (&a[..3_000], &b[..super::grid::MIN_POINTS]);
    assert_eq!(
        closest_pairs(a, b, 300, Index::Auto),
        brute_pairs(a, b, 300)
    );
}

/// Queries far outside an evenly spread B (whose balls reach across the
/// whole grid) are handed to the kd-tree: same pairs as the kd-tree path,
/// and no search over every cell per query (this test would take minutes).
#[test]
fn grid_hands_far_queries_to_the_kdtree() {
    use super::{Index, closest_pairs};
    let mut rng = Rng(12);
    let b = rng.int_points(40_000, 2_000);
    let mut a = rng.int_points(100_000, 2_000);
    for (i, p) in a.iter_mut().enumerate() {
        if i % 3 != 0 {
            *p = [p[0] + 1e6, p[1] - 3e5, p[2]];
        }
    }
    assert!(
        super::grid::Grid::build(&b).is_some(),
        "uniform B takes the grid"
    );
    for k in [10, 1000, 100_000] {
        assert_eq!(
            closest_pairs(&a, &b, k, Index::Auto),
            closest_pairs(&a, &b, k, Index::KdTree),
            "k={k}"
        );
    }
    // Every query far away (the bound stays large).
    let far: Vec<Point> = a.iter().map(|p| [p[0] + 5e6, p[1], p[2]]).collect();
    assert_eq!(
        closest_pairs(&far, &b, 100, Index::Auto),
        closest_pairs(&far, &b, 100, Index::KdTree)
    );
}
