//! Point sets for NearestPairs.

use rand::Rng;
use rand_distr::{Distribution, Normal};
use trident_core::Point;

use crate::cases::rng;

/// Coordinates of the benchmark point cases lie in `[0, COORD_RANGE)`.
pub const COORD_RANGE: u32 = 1_000_000;

/// One NearestPairs case: `nearest(A, B)`, `knn(A, B, knn_k)` and
/// `closest_pairs(A, B, pairs_k)` are all run on it.
#[derive(Clone, Debug, PartialEq)]
pub struct PairsCase {
    /// Query points.
    pub a: Vec<Point>,
    /// Data points.
    pub b: Vec<Point>,
    /// `k` for `knn` (at most `|B|`).
    pub knn_k: usize,
    /// `k` for `closest_pairs` (may exceed `|A|`).
    pub pairs_k: usize,
}

/// `n` points with integer coordinates uniform in `[0, 1e6)^3`, stored as f32
/// (exact: integers below 2^24). The `pairs-1M-400K` benchmark sets.
pub fn uniform_points(n: usize, seed: u64) -> Vec<Point> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| {
            [
                r.random_range(0..COORD_RANGE) as f32,
                r.random_range(0..COORD_RANGE) as f32,
                r.random_range(0..COORD_RANGE) as f32,
            ]
        })
        .collect()
}

/// `count` cluster centres uniform in the middle of the cube (5% margin on
/// each side, so few points of a cluster are clamped at the border).
pub fn cluster_centers(count: usize, seed: u64) -> Vec<Point> {
    let mut r = rng(seed);
    let lo = COORD_RANGE as f64 * 0.05;
    let hi = COORD_RANGE as f64 * 0.95;
    (0..count)
        .map(|_| {
            [
                r.random_range(lo..hi) as f32,
                r.random_range(lo..hi) as f32,
                r.random_range(lo..hi) as f32,
            ]
        })
        .collect()
}

/// `n` points, each from a random one of `centers` plus N(0, sigma^2) per axis,
/// rounded to integers and clamped into `[0, 1e6)`.
pub fn clustered_points(n: usize, centers: &[Point], sigma: f64, seed: u64) -> Vec<Point> {
    assert!(
        !centers.is_empty(),
        "clustered_points needs at least one centre"
    );
    let mut r = rng(seed);
    let normal = Normal::new(0.0, sigma).expect("sigma is finite and >= 0");
    let max = (COORD_RANGE - 1) as f64;
    (0..n)
        .map(|_| {
            let c = centers[r.random_range(0..centers.len())];
            let mut p = [0.0f32; 3];
            for d in 0..3 {
                let v = (c[d] as f64 + normal.sample(&mut r))
                    .round()
                    .clamp(0.0, max);
                p[d] = v as f32;
            }
            p
        })
        .collect()
}

/// The `pairs-1M-400K` benchmark case at any size: A and B uniform (independent
/// streams of `seed`), `knn_k = 8`, `pairs_k = 100`.
pub fn pairs_uniform(na: usize, nb: usize, seed: u64) -> PairsCase {
    PairsCase {
        a: uniform_points(na, seed ^ 0xA),
        b: uniform_points(nb, seed ^ 0xB),
        knn_k: 8.min(nb),
        pairs_k: 100,
    }
}

/// Number of clusters of the `pairs-clustered` benchmark case.
pub const CLUSTERS: usize = 64;
/// Cluster sigma of the `pairs-clustered` benchmark case (at its 1.4M points).
pub const CLUSTER_SIGMA: f64 = 1e4;

/// The `pairs-clustered` benchmark case at any size: A and B from the same 64
/// Gaussian clusters. Sigma is 1e4 at the benchmark size (1.4M points in all) and
/// scales with the cube root of the point count, so that a smaller instance
/// keeps the same points per cluster volume, i.e. the same neighbour
/// structure, just fewer clusters' worth of points.
pub fn pairs_clustered(na: usize, nb: usize, seed: u64) -> PairsCase {
    let sigma = CLUSTER_SIGMA * ((na + nb) as f64 / 1.4e6).cbrt();
    let centers = cluster_centers(CLUSTERS, seed ^ 0xC);
    PairsCase {
        a: clustered_points(na, &centers, sigma, seed ^ 0xA),
        b: clustered_points(nb, &centers, sigma, seed ^ 0xB),
        knn_k: 8.min(nb),
        pairs_k: 100,
    }
}

/// Points on the integer lattice `[0, side)^3` in a shuffled order: every
/// query between lattice points has many exactly equidistant neighbours.
pub fn lattice_points(side: usize, seed: u64) -> Vec<Point> {
    use rand::seq::SliceRandom;
    let mut p = Vec::with_capacity(side * side * side);
    for x in 0..side {
        for y in 0..side {
            for z in 0..side {
                p.push([x as f32, y as f32, z as f32]);
            }
        }
    }
    p.shuffle(&mut rng(seed));
    p
}
