//! Point sets for NearestPairs.

use rand::Rng;
use rand_distr::{Distribution, Normal};
use trident_core::{Coord, Point};

use crate::cases::rng;

/// Coordinates of the benchmark point cases lie in `[0, COORD_RANGE)`.
pub const COORD_RANGE: u32 = 1_000_000;

/// One NearestPairs case, in f32 (the default) or f64 coordinates:
/// `nearest(A, B)`, `knn(A, B, knn_k)`, `closest_pairs(A, B, pairs_k)`,
/// `within(A, B, radius)` and `self_pairs(B, radius)` are all run on it.
#[derive(Clone, Debug, PartialEq)]
pub struct PairsCase<T = f32> {
    /// Query points.
    pub a: Vec<Point<T>>,
    /// Data points.
    pub b: Vec<Point<T>>,
    /// `k` for `knn` (at most `|B|`).
    pub knn_k: usize,
    /// `k` for `closest_pairs` (may exceed `|A|`).
    pub pairs_k: usize,
    /// `r` for `within` and `self_pairs`.
    pub radius: T,
}

/// Points of B expected within [`PairsCase::new`]'s radius of a query.
pub const RADIUS_NEIGHBOURS: f64 = 8.0;

impl<T: Coord> PairsCase<T> {
    /// A case with the radius at which a query has about
    /// [`RADIUS_NEIGHBOURS`] points of B around it, were B spread evenly
    /// over its bounding box (flat boxes count their longest side / 100 as
    /// their thickness; a B of one point gets radius 1), rounded to two
    /// significant digits so the case prints readably.
    pub fn new(a: Vec<Point<T>>, b: Vec<Point<T>>, knn_k: usize, pairs_k: usize) -> Self {
        let radius = T::from_f64(auto_radius(&b));
        Self {
            a,
            b,
            knn_k,
            pairs_k,
            radius,
        }
    }
}

fn auto_radius<T: Coord>(b: &[Point<T>]) -> f64 {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in b {
        for d in 0..3 {
            lo[d] = lo[d].min(p[d].to_f64());
            hi[d] = hi[d].max(p[d].to_f64());
        }
    }
    let ext: Vec<f64> = (0..3).map(|d| (hi[d] - lo[d]).max(0.0)).collect();
    let longest = ext.iter().copied().fold(0.0, f64::max);
    if b.len() < 2 || longest == 0.0 || !longest.is_finite() {
        return 1.0;
    }
    let volume: f64 = ext.iter().map(|&e| e.max(longest / 100.0)).product();
    let r =
        (RADIUS_NEIGHBOURS * volume * 3.0 / (4.0 * std::f64::consts::PI * b.len() as f64)).cbrt();
    let scale = 10f64.powi(r.log10().floor() as i32 - 1);
    (r / scale).round() * scale
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
    PairsCase::new(
        uniform_points(na, seed ^ 0xA),
        uniform_points(nb, seed ^ 0xB),
        8.min(nb),
        100,
    )
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
    PairsCase::new(
        clustered_points(na, &centers, sigma, seed ^ 0xA),
        clustered_points(nb, &centers, sigma, seed ^ 0xB),
        8.min(nb),
        100,
    )
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

/// The origin of [`utm_points`]: map coordinates in metres (easting,
/// northing, height) of the size UTM zones use.
pub const UTM_ORIGIN: [f64; 3] = [500_000.0, 5_300_000.0, 200.0];

/// `n` points of a LiDAR-like cloud in map coordinates, f64: [`UTM_ORIGIN`]
/// plus a jittered grid of about 1 m spacing over a square of side
/// `sqrt(n)` metres, heights within a few metres. Rounded to f32 the
/// coordinates keep about 0.5 m (northing) of resolution: nearest answers
/// computed in f32 are then wrong for most points, the case f64 support is for.
pub fn utm_points(n: usize, seed: u64) -> Vec<Point<f64>> {
    let mut r = rng(seed);
    let side = (n as f64).sqrt().ceil().max(1.0) as usize;
    (0..n)
        .map(|i| {
            let (x, y) = ((i % side) as f64, (i / side) as f64);
            [
                UTM_ORIGIN[0] + x + r.random_range(-0.3..0.3),
                UTM_ORIGIN[1] + y + r.random_range(-0.3..0.3),
                UTM_ORIGIN[2] + r.random_range(0.0..3.0),
            ]
        })
        .collect()
}

/// A UTM-like f64 case: A and B from [`utm_points`] (independent jitter,
/// each on its own square from the same origin), knn 8, 100 pairs.
pub fn pairs_utm(na: usize, nb: usize, seed: u64) -> PairsCase<f64> {
    PairsCase::new(
        utm_points(na, seed ^ 0xA),
        utm_points(nb, seed ^ 0xB),
        8.min(nb),
        100,
    )
}

/// A case's points converted to f64 (exactly), to run an f32 case in f64.
pub fn to_f64_case(c: &PairsCase) -> PairsCase<f64> {
    let up = |p: &[Point]| p.iter().map(|q| q.map(f64::from)).collect();
    PairsCase {
        a: up(&c.a),
        b: up(&c.b),
        knn_k: c.knn_k,
        pairs_k: c.pairs_k,
        radius: c.radius as f64,
    }
}
