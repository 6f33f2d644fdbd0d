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
//! The returned `d2` is the exact distance rounded once to `T` (`inf` where
//! it exceeds `T::MAX`: coordinates near `f32::MAX` are compared in f64, so
//! the neighbour is still right). f64 coordinates are compared on their
//! compensated squared distance ([`Coord::exact_d2`]), after scaling by a
//! power of two ([`range_shift`]) where their squares would leave f64's range.
//!
//! Radius search gathers the points within the radius (widened the same way)
//! and keeps those whose exact `d2`, rounded to f64, is at most `r * r`
//! rounded to f64.

use std::num::NonZeroUsize;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use trident_core::{
    Coord, Error, NearestPairs, Neighbor, Pair, Point, RadiusNeighbors, Result, range_shift,
    scale_points, validate,
};

use crate::ReferenceBackend;

/// Relative widening of kiddo's radius before gathering candidates.
const WIDEN: f64 = 1e-9;

/// A kd-tree over the distinct points of B (in f64, scaled by `2^-shift`)
/// plus, per distinct point, its indices in B, ascending.
struct Tree {
    /// The distinct points.
    uniq: Vec<[f64; 3]>,
    /// Indices of B per distinct point `u`: `members[start[u]..start[u + 1]]`.
    start: Vec<usize>,
    members: Vec<u32>,
    tree: ImmutableKdTree<f64, 3>,
}

/// Bits that are equal exactly when the coordinates are (`-0.0` is `0.0`).
fn coord_key(p: &[f64; 3]) -> [u64; 3] {
    p.map(|v| (v + 0.0).to_bits())
}

/// A and B in f64, scaled by `2^-shift` so that their squared distances stay
/// inside f64's range, with the shift.
fn widen<T: Coord>(a: &[Point<T>], b: &[Point<T>]) -> (Vec<[f64; 3]>, Vec<[f64; 3]>, i32) {
    let up = |p: &[Point<T>]| -> Vec<[f64; 3]> { p.iter().map(|q| q.map(T::to_f64)).collect() };
    let (a, b) = (up(a), up(b));
    match range_shift::<f64>(&a, &b) {
        0 => (a, b, 0),
        s => (scale_points(&a, s), scale_points(&b, s), s),
    }
}

/// An exact squared distance of scaled points back in the caller's units,
/// rounded once to `T`.
fn report<T: Coord>(d2: f64, shift: i32) -> T {
    T::from_f64(trident_core::unscale_d2(d2, shift))
}

fn exact(p: &[f64; 3], q: &[f64; 3]) -> f64 {
    f64::exact_d2(p, q)
}

impl Tree {
    /// B must hold at most `u32::MAX` points (validated); it may be empty.
    fn new(b: &[[f64; 3]]) -> Result<Self> {
        let mut order: Vec<u32> = (0..b.len() as u32).collect();
        // Stable by coordinates, so each group's indices stay ascending.
        order.sort_by_key(|&j| coord_key(&b[j as usize]));
        let mut uniq: Vec<[f64; 3]> = Vec::new();
        let mut start = Vec::new();
        for (t, &j) in order.iter().enumerate() {
            let p = b[j as usize];
            if uniq.last().is_none_or(|u| coord_key(u) != coord_key(&p)) {
                uniq.push(p);
                start.push(t);
            }
        }
        start.push(order.len());
        // Serial construction: this backend is single threaded (kiddo would
        // otherwise go parallel above 262,144 points).
        let tree = ImmutableKdTree::<f64, 3>::builder()
            .with_serial_construction()
            .build_from_slice(&uniq)
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
    fn gather(&self, q: &[f64; 3], r: f64, k: usize) -> Vec<(f64, u32)> {
        let mut out = Vec::new();
        if self.uniq.is_empty() {
            return out;
        }
        let radius = r + r * WIDEN + f64::MIN_POSITIVE;
        for it in self
            .tree
            .query(q)
            .within::<SquaredEuclidean<f64>>(radius)
            .unsorted()
            .execute()
        {
            let u = it.item as usize;
            let d2 = exact(q, &self.uniq[u]);
            out.extend(self.group(u).iter().take(k).map(|&j| (d2, j)));
        }
        out
    }

    /// The k nearest points of B to `q` by `(exact d2, j)`; `1 <= k <= |B|`.
    fn knn(&self, q: &[f64; 3], k: usize) -> Vec<(f64, u32)> {
        // The k-th distance over the distinct points bounds the k-th over B
        // (B has at least as many points within it).
        let ku = k.min(self.uniq.len());
        let kth = NonZeroUsize::new(ku).map_or(0.0, |ku| {
            self.tree
                .query(q)
                .nearest_n::<SquaredEuclidean<f64>>(ku)
                .execute()
                .iter()
                .map(|it| it.distance)
                .fold(0.0f64, f64::max)
        });
        let mut cand = self.gather(q, kth, k);
        // kiddo found k points within `kth`, and gather() is a superset of them.
        debug_assert!(cand.len() >= k);
        sort_keys(&mut cand);
        cand.truncate(k);
        cand
    }

    /// The nearest point of B to `q`: `(exact d2, j)`, ties to the smaller j.
    fn nearest(&self, q: &[f64; 3]) -> (f64, u32) {
        let best = self.knn(q, 1);
        // knn(q, 1) holds exactly one candidate: B is not empty (validated).
        best.first().copied().unwrap_or((f64::INFINITY, 0))
    }

    /// Every point of B with exact d2 (rounded to f64) at most `r2`, sorted
    /// by `(d2, j)`.
    fn within(&self, q: &[f64; 3], r2: f64) -> Vec<(f64, u32)> {
        let mut cand = self.gather(q, r2, usize::MAX);
        cand.retain(|&(d2, _)| d2 <= r2);
        sort_keys(&mut cand);
        cand
    }
}

fn sort_keys(c: &mut [(f64, u32)]) {
    c.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
}

/// `within` and `self_pairs` on scaled points: rows for `a` over the tree of
/// `b`, keeping only `j > i` when `upper` (one set against itself).
fn radius<T: Coord>(
    a: &[[f64; 3]],
    b: &[[f64; 3]],
    r: T,
    shift: i32,
    upper: bool,
    max_pairs: usize,
) -> Result<RadiusNeighbors<T>> {
    let tree = Tree::new(b)?;
    let r = trident_core::scale_coord(r.to_f64(), shift);
    let r2 = r * r;
    let mut rows = Vec::with_capacity(a.len());
    let mut count = 0u128;
    for (i, q) in a.iter().enumerate() {
        let mut row = tree.within(q, r2);
        if upper {
            row.retain(|&(_, j)| j as usize > i);
        }
        count += row.len() as u128;
        validate::radius_count(count, max_pairs)?;
        rows.push(row);
    }
    let mut out = RadiusNeighbors {
        offsets: Vec::with_capacity(a.len() + 1),
        indices: Vec::with_capacity(count as usize),
        d2: Vec::with_capacity(count as usize),
    };
    out.offsets.push(0);
    for row in rows {
        for (d2, j) in row {
            out.indices.push(j);
            out.d2.push(report(d2, shift));
        }
        out.offsets.push(out.indices.len());
    }
    Ok(out)
}

impl<T: Coord> NearestPairs<T> for ReferenceBackend {
    fn nearest(&self, a: &[Point<T>], b: &[Point<T>], out: &mut [Neighbor<T>]) -> Result<()> {
        validate::nearest(a, b, out)?;
        if a.is_empty() {
            return Ok(());
        }
        let (a, b, s) = widen(a, b);
        let tree = Tree::new(&b)?;
        let res: Vec<Neighbor<T>> = a
            .iter()
            .map(|q| {
                let (d2, j) = tree.nearest(q);
                Neighbor {
                    index: j,
                    d2: report(d2, s),
                }
            })
            .collect();
        out.copy_from_slice(&res);
        Ok(())
    }

    fn knn(&self, a: &[Point<T>], b: &[Point<T>], k: usize, out: &mut [Neighbor<T>]) -> Result<()> {
        validate::knn(a, b, k, out)?;
        if a.is_empty() || k == 0 {
            return Ok(());
        }
        let (a, b, s) = widen(a, b);
        let tree = Tree::new(&b)?;
        let mut res = Vec::with_capacity(a.len() * k);
        for q in &a {
            res.extend(tree.knn(q, k).into_iter().map(|(d2, j)| Neighbor {
                index: j,
                d2: report(d2, s),
            }));
        }
        out.copy_from_slice(&res);
        Ok(())
    }

    fn closest_pairs(&self, a: &[Point<T>], b: &[Point<T>], k: usize) -> Result<Vec<Pair<T>>> {
        validate::closest_pairs(a, b)?;
        if a.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let (a, b, s) = widen(a, b);
        let tree = Tree::new(&b)?;
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
                d2: report(d2, s),
            })
            .collect())
    }

    fn within(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        r: T,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<T>> {
        validate::within(a, b, r)?;
        let (a, b, s) = widen(a, b);
        radius(&a, &b, r, s, false, max_pairs)
    }

    fn self_pairs(&self, p: &[Point<T>], r: T, max_pairs: usize) -> Result<RadiusNeighbors<T>> {
        validate::self_pairs(p, r)?;
        let (p, _, s) = widen(p, &[]);
        radius(&p, &p, r, s, true, max_pairs)
    }
}
