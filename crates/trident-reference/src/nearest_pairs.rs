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
//! Duplicates: kiddo's immutable tree is built balanced from the whole slice, so
//! many identical points (the case that overflows buckets in mutable trees)
//! are fine; the tests cover 1000 identical B points.
//!
//! The returned `d2` is the exact f64 distance rounded once to f32.

use std::num::NonZeroUsize;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use trident_core::{Error, NearestPairs, Neighbor, Pair, Point, Result, dist2_f64, validate};

use crate::ReferenceBackend;

/// Relative widening of kiddo's radius before gathering candidates.
const WIDEN: f64 = 1e-9;

/// A kd-tree over B plus the exact point data.
struct Tree<'b> {
    b: &'b [Point],
    tree: ImmutableKdTree<f64, 3>,
}

fn to_f64(p: &Point) -> [f64; 3] {
    [p[0] as f64, p[1] as f64, p[2] as f64]
}

impl<'b> Tree<'b> {
    /// B must be non-empty and hold at most `u32::MAX` points (validated).
    fn new(b: &'b [Point]) -> Result<Self> {
        let pts: Vec<[f64; 3]> = b.iter().map(to_f64).collect();
        // Serial construction: this backend is single threaded (kiddo would
        // otherwise go parallel above 262,144 points).
        let tree = ImmutableKdTree::<f64, 3>::builder()
            .with_serial_construction()
            .build_from_slice(&pts)
            .map_err(|e| Error::Backend(format!("kiddo tree construction: {e}").into()))?;
        Ok(Self { b, tree })
    }

    /// Every point of B whose kiddo distance is within `r` (widened), as
    /// `(exact d2, j)`, unsorted.
    fn gather(&self, q: &Point, r: f64) -> Vec<(f64, u32)> {
        let radius = r + r * WIDEN + f64::MIN_POSITIVE;
        self.tree
            .query(&to_f64(q))
            .within::<SquaredEuclidean<f64>>(radius)
            .unsorted()
            .execute()
            .into_iter()
            .map(|it| (dist2_f64(q, &self.b[it.item as usize]), it.item))
            .collect()
    }

    /// The k nearest points of B to `q` by `(exact d2, j)`; `1 <= k <= |B|`.
    fn knn(&self, q: &Point, k: usize) -> Vec<(f64, u32)> {
        let qf = to_f64(q);
        let kth = self
            .tree
            .query(&qf)
            .nearest_n::<SquaredEuclidean<f64>>(NonZeroUsize::new(k).expect("k >= 1"))
            .execute()
            .iter()
            .map(|it| it.distance)
            .fold(0.0f64, f64::max);
        let mut cand = self.gather(q, kth);
        // kiddo found k points within `kth`, and gather() is a superset of them.
        debug_assert!(cand.len() >= k);
        cand.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        cand.truncate(k);
        cand
    }

    /// The nearest point of B to `q`: `(exact d2, j)`, ties to the smaller j.
    fn nearest(&self, q: &Point) -> (f64, u32) {
        self.knn(q, 1)[0]
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
