//! NearestPairs for [`ReferenceBackend`]: a kiddo kd-tree over B in f64, used
//! only to find candidates; the answer is decided on exact distances.
//!
//! kiddo's tie-breaking among equidistant points is unspecified, and its
//! distances need not be bit-identical to [`dist2_f64`]. So each query asks
//! kiddo for the best (or k-th best) distance `r`, then for *every* point within
//! `r` widened by a relative 1e-9 (inclusive), recomputes those candidates'
//! distances with [`dist2_f64`] and picks by `(d2, j)`. The widening can only
//! add candidates, never lose the true answer, since kiddo computes the same
//! difference-based sum as [`dist2_f64`] to within a few ulps.
//!
//! Duplicates: identical points of B are merged before the tree is built, each
//! distinct point keeping the sorted list of its indices. Otherwise 1e5 copies
//! of one point would all lie within every query's best distance and each
//! query would gather all of them (quadratic: 1e10 candidates). A query now
//! sees each distinct point once and expands it into at most k indices, the
//! smallest, which is exactly what the tie rule `(d2, j)` can select.
//!
//! The returned `d2` is the exact f64 distance rounded once to f32 (`inf`
//! where it exceeds `f32::MAX`: coordinates near `f32::MAX` are compared in
//! f64, so the neighbour is still right).

use std::num::NonZeroUsize;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use trident_core::{Error, NearestPairs, Neighbor, Pair, Point, Result, dist2_f64, validate};

use crate::ReferenceBackend;

/// Relative widening of kiddo's radius before gathering candidates.
const WIDEN: f64 = 1e-9;

/// A kd-tree over the distinct points of B plus, per distinct point, its
/// indices in B, ascending.
struct Tree {
    /// The distinct points.
    uniq: Vec<Point>,
    /// Indices of B per distinct point `u`: `members[start[u]..start[u + 1]]`.
    start: Vec<usize>,
    members: Vec<u32>,
    tree: ImmutableKdTree<f64, 3>,
}

fn to_f64(p: &Point) -> [f64; 3] {
    [p[0] as f64, p[1] as f64, p[2] as f64]
}

/// Bits that are equal exactly when the coordinates are (`-0.0` is `0.0`).
fn coord_key(p: &Point) -> [u32; 3] {
    p.map(|v| (v + 0.0).to_bits())
}

impl Tree {
    /// B must be non-empty and hold at most `u32::MAX` points (validated).
    fn new(b: &[Point]) -> Result<Self> {
        let mut order: Vec<u32> = (0..b.len() as u32).collect();
        // Stable by coordinates, so each group's indices stay ascending.
        order.sort_by_key(|&j| coord_key(&b[j as usize]));
        let mut uniq: Vec<Point> = Vec::new();
        let mut start = Vec::new();
        for (t, &j) in order.iter().enumerate() {
            let p = b[j as usize];
            if uniq.last().is_none_or(|u| coord_key(u) != coord_key(&p)) {
                uniq.push(p);
                start.push(t);
            }
        }
        start.push(order.len());
        let pts: Vec<[f64; 3]> = uniq.iter().map(to_f64).collect();
        // Serial construction: this backend is single threaded (kiddo would
        // otherwise go parallel above 262,144 points).
        let tree = ImmutableKdTree::<f64, 3>::builder()
            .with_serial_construction()
            .build_from_slice(&pts)
            .map_err(|e| Error::Backend(format!("kiddo tree construction: {e}").into()))?;
        Ok(Self {
            uniq,
            start,
            members: order,
            tree,
        })
    }

    /// The indices of B at distinct point `u`, ascending.
    fn group(&self, u: usize) -> &[u32] {
        &self.members[self.start[u]..self.start[u + 1]]
    }

    /// Every point of B whose kiddo distance is within `r` (widened), as
    /// `(exact d2, j)`, unsorted, with at most `k` (the smallest) indices per
    /// distinct point.
    fn gather(&self, q: &Point, r: f64, k: usize) -> Vec<(f64, u32)> {
        let radius = r + r * WIDEN + f64::MIN_POSITIVE;
        let mut out = Vec::new();
        for it in self
            .tree
            .query(&to_f64(q))
            .within::<SquaredEuclidean<f64>>(radius)
            .unsorted()
            .execute()
        {
            let u = it.item as usize;
            let d2 = dist2_f64(q, &self.uniq[u]);
            out.extend(self.group(u).iter().take(k).map(|&j| (d2, j)));
        }
        out
    }

    /// The k nearest points of B to `q` by `(exact d2, j)`; `1 <= k <= |B|`.
    fn knn(&self, q: &Point, k: usize) -> Vec<(f64, u32)> {
        let qf = to_f64(q);
        // The k-th distance over the distinct points bounds the k-th over B
        // (B has at least as many points within it).
        let ku = k.min(self.uniq.len());
        let kth = NonZeroUsize::new(ku).map_or(0.0, |ku| {
            self.tree
                .query(&qf)
                .nearest_n::<SquaredEuclidean<f64>>(ku)
                .execute()
                .iter()
                .map(|it| it.distance)
                .fold(0.0f64, f64::max)
        });
        let mut cand = self.gather(q, kth, k);
        // kiddo found k points within `kth`, and gather() is a superset of them.
        debug_assert!(cand.len() >= k);
        cand.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        cand.truncate(k);
        cand
    }

    /// The nearest point of B to `q`: `(exact d2, j)`, ties to the smaller j.
    fn nearest(&self, q: &Point) -> (f64, u32) {
        let best = self.knn(q, 1);
        // knn(q, 1) holds exactly one candidate: B is not empty (validated).
        best.first().copied().unwrap_or((f64::INFINITY, 0))
    }
}

impl NearestPairs for ReferenceBackend {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        validate::nearest(a, b, out)?;
        if a.is_empty() {
            return Ok(());
        }
        let tree = Tree::new(b)?;
        let res: Vec<Neighbor> = a
            .iter()
            .map(|q| {
                let (d2, j) = tree.nearest(q);
                Neighbor {
                    index: j,
                    d2: d2 as f32,
                }
            })
            .collect();
        out.copy_from_slice(&res);
        Ok(())
    }

    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        validate::knn(a, b, k, out)?;
        if a.is_empty() || k == 0 {
            return Ok(());
        }
        let tree = Tree::new(b)?;
        let mut res = Vec::with_capacity(a.len() * k);
        for q in a {
            res.extend(tree.knn(q, k).into_iter().map(|(d2, j)| Neighbor {
                index: j,
                d2: d2 as f32,
            }));
        }
        out.copy_from_slice(&res);
        Ok(())
    }

    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        validate::closest_pairs(a, b)?;
        if a.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let tree = Tree::new(b)?;
        let mut all: Vec<(f64, u32, u32)> = a
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let (d2, j) = tree.nearest(q);
                (d2, i as u32, j)
            })
            .collect();
        // Order by the exact distance, then by the index in A.
        all.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        all.truncate(k.min(a.len()));
        Ok(all
            .into_iter()
            .map(|(d2, i, j)| Pair {
                a: i,
                b: j,
                d2: d2 as f32,
            })
            .collect())
    }
}
