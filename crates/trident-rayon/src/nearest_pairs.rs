//! NearestPairs for [`RayonBackend`]: exact nearest / k-nearest / closest-pairs
//! queries and radius searches through a kd-tree built over B on every call,
//! in f32 or f64 coordinates.
//!
//! Design (see `kdtree` for the index itself):
//! - B goes into a balanced implicit kd-tree (median splits on the widest axis,
//!   tight boxes per node, leaf buckets of 8), which stays balanced on clustered
//!   input where a uniform grid would put thousands of points in one cell.
//! - Queries are processed in Morton-cell order of A for cache locality, in
//!   parallel on the backend's pool, and written back by original index.
//! - Search is depth-first branch and bound on the key `(d2, j)`: exact, with
//!   ties to the smaller `j`, and box pruning that is conservative under the
//!   rounding of the coordinate type. Results never depend on the thread
//!   schedule.
//! - f32 and f64 coordinates run the same code: the tree, the query order and
//!   the searches are generic over the coordinate type (`real::Real`, whose
//!   keys are `u64` for f32, as before, and `u128` for f64). An f64 call is
//!   computed in f64 throughout, never rounded to f32: UTM-like coordinates
//!   (northings of 5.3e6 m, points a metre apart or less) have no f32
//!   representation fine enough to tell their neighbours apart.
//! - `closest_pairs` shares a global bound, the smallest k-th best distance any
//!   worker has seen so far, and searches each query only within it: most
//!   queries of a large A stop after a glance at one leaf. The result is the
//!   unique set of the k smallest `(d2, i)`, so it is the same as computing
//!   every nearest first and selecting.
//! - f32 `closest_pairs` on evenly spread B (the occupancy test of
//!   [`grid::Grid::build`]) indexes B with a uniform grid instead and takes A
//!   in input order: once the bound is below B's spacing a query reads one
//!   cell, and the grid builds in two parallel passes where the kd-tree's
//!   median splits and A's spatial order were most of a 16-core call.
//!   Clustered B keeps the kd-tree, and so do the queries whose search would
//!   reach across much of the grid (far outside B's box). Both give the same
//!   exact answer. The grid is f32-only (its cell arithmetic and rounding
//!   margins are those of f32 distances): f64 pairs always take the kd-tree.
//! - Radius searches (`within`, `self_pairs`) search each query once under the
//!   fixed bound `(r * r, u32::MAX)`, so a point is in exactly when its
//!   computed `d2 <= r * r` (both in the coordinate type, the radius scaled
//!   with the points): the same keys and box bounds as the other searches.
//!   With a bound that does not shrink, a plain descent from the root
//!   ([`kdtree::KdTree::search_all`]) beats the nearest-first climb from the
//!   query's leaf. Queries go in A's Morton order, or for `self_pairs` in
//!   the tree's own leaf order. Each task gathers the sorted rows of its
//!   chunk of queries into buffers of its own; the row lengths give the
//!   offsets, and the rows are copied into place. A count-then-fill design
//!   searches twice and writes rows in scattered order: it measured about
//!   twice as slow.
//!   `max_pairs` is checked as the tasks go (they stop soon after the count
//!   passes it), so a radius too large fails having held little more than
//!   `max_pairs` pairs; the exact count for the error comes from a search
//!   that only counts, taking whole subtrees within the radius at once.
//!   `self_pairs` is one set searched against itself, keeping `j > i`.
//!
//! - Coordinates so large that squared distances would overflow the
//!   coordinate type (beyond about 4.6e18 in f32, 2^510 in f64), or so small
//!   that they would underflow (every coordinate below about 9e-13 in f32,
//!   2^-459 in f64), are scaled by a power of two first
//!   ([`trident_core::range_shift`]): exact, order preserving, and
//!   reported distances are scaled back. Without it every distance is `inf`
//!   (or 0) and the smallest index wins whatever the geometry.
//!
//! With a `tracing` subscriber at debug level, `closest_pairs` emits the
//! index it chose and the time of its two phases (the index, with A's order
//! for the kd-tree, then the search) as an event, and radius searches the
//! time of theirs.
//!
//! What it is not: an index you can keep across calls (each call rebuilds it;
//! building is a small part of a call of any size), or an approximate search.

mod grid;
mod kdtree;
mod order;
mod real;
#[cfg(test)]
mod tests;

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use trident_core::{
    Error, NearestPairs, Neighbor, Pair, Point, RadiusNeighbors, Result, range_shift_of,
    scale_coord, scale_points, scaled_for_range, unscale_d2, validate,
};

use crate::RayonBackend;
use grid::Grid;
use kdtree::{BATCH, KdTree, KeyHeap, LEAF, Located, Visitor};
use order::{SendPtr, spatial_order};
use real::{Real, bound_at};

/// Queries per parallel task: large enough to amortise task overhead, small
/// enough to balance uneven (clustered) query costs on a few threads.
const CHUNK: usize = 512;

/// Calls `f(t, q, at)` for each query `q = qs[t]`, in order, with its location
/// in the tree, locating [`BATCH`] queries at a time.
#[inline]
fn for_each_located<T: Real>(
    tree: &KdTree<T>,
    qs: &[Point<T>],
    mut f: impl FnMut(usize, &Point<T>, Located<T>),
) {
    let mut at = [Located::default(); BATCH];
    for (b, batch) in qs.chunks(BATCH).enumerate() {
        tree.locate(batch, &mut at);
        for (t, q) in batch.iter().enumerate() {
            f(b * BATCH + t, q, at[t]);
        }
    }
}

fn neighbor<T: Real>(k: T::Key, shift: i32) -> Neighbor<T> {
    Neighbor {
        index: T::key_index(k),
        d2: unscale_d2(T::key_d2(k), shift),
    }
}

/// `nearest` after validation, A not empty.
fn nearest<T: Real>(a: &[Point<T>], b: &[Point<T>], out: &mut [Neighbor<T>]) {
    let (a, b, shift) = scaled_for_range(a, b);
    let (a, b) = (&a[..], &b[..]);
    let (tree, (qa, order)) = build_and_order(a, b);
    let mut res = vec![Neighbor::default(); a.len()];
    res.par_chunks_mut(CHUNK)
        .zip(qa.par_chunks(CHUNK))
        .for_each(|(res, qs)| {
            for_each_located(&tree, qs, |t, q, at| {
                res[t] = neighbor(tree.nearest(q, at, T::NO_KEY), shift);
            });
        });
    for (r, &i) in res.iter().zip(&order) {
        out[i as usize] = *r;
    }
}

/// `knn` after validation, A not empty and `k > 0`.
fn knn<T: Real>(a: &[Point<T>], b: &[Point<T>], k: usize, out: &mut [Neighbor<T>]) {
    let (a, b, shift) = scaled_for_range(a, b);
    let (a, b) = (&a[..], &b[..]);
    let (tree, (qa, order)) = build_and_order(a, b);
    let mut res = vec![Neighbor::default(); out.len()];
    let rows = (CHUNK / k).max(1);
    res.par_chunks_mut(rows * k)
        .zip(qa.par_chunks(rows))
        .for_each_init(
            || (KeyHeap::default(), vec![T::NO_KEY; k]),
            |(heap, keys), (res, qs)| {
                for_each_located(&tree, qs, |t, q, at| {
                    tree.knn(q, at, heap, keys);
                    for (r, &kk) in res[t * k..(t + 1) * k].iter_mut().zip(keys.iter()) {
                        *r = neighbor(kk, shift);
                    }
                });
            },
        );
    for (row, &i) in res.chunks(k).zip(&order) {
        let i = i as usize;
        out[i * k..(i + 1) * k].copy_from_slice(row);
    }
}

/// `closest_pairs`: the contract's checks fused with the range scan, then
/// `search` on the (scaled) sets for `1 <= k <= |A|`.
fn closest_pairs_with<T: Real>(
    a: &[Point<T>],
    b: &[Point<T>],
    k: usize,
    search: impl FnOnce(&[Point<T>], &[Point<T>], usize) -> Vec<Pair<T>>,
) -> Result<Vec<Pair<T>>> {
    // The contract's checks and the overflow scan in one parallel pass
    // (serial, they were a few percent of a 16-core call); any failure
    // is reported by the serial check, so the error is the canonical one.
    let (finite, max, min) = finite_range(a, b);
    let too_many = a.len().max(b.len()) > u32::MAX as usize;
    if !finite || too_many || b.is_empty() {
        validate::closest_pairs(a, b)?;
    }
    let k = k.min(a.len());
    if k == 0 {
        return Ok(Vec::new());
    }
    // The shift from the largest and smallest nonzero coordinate is the
    // shift of the sets.
    let shift = range_shift_of::<T>(max.to_f64(), min.to_f64());
    let mut pairs = match shift {
        0 => search(a, b, k),
        s => search(&scale_points(a, s), &scale_points(b, s), k),
    };
    for p in &mut pairs {
        p.d2 = unscale_d2(p.d2, shift);
    }
    Ok(pairs)
}

impl NearestPairs for RayonBackend {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        validate::nearest(a, b, out)?;
        if a.is_empty() {
            return Ok(());
        }
        self.install(|| nearest(a, b, out));
        Ok(())
    }

    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        validate::knn(a, b, k, out)?;
        if a.is_empty() || k == 0 {
            return Ok(());
        }
        self.install(|| knn(a, b, k, out));
        Ok(())
    }

    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        self.install(|| closest_pairs_with(a, b, k, |a, b, k| closest_pairs(a, b, k, Index::Auto)))
    }

    fn within(
        &self,
        a: &[Point],
        b: &[Point],
        r: f32,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors> {
        validate::within(a, b, r)?;
        self.install(|| within(a, b, r, max_pairs))
    }

    fn self_pairs(&self, p: &[Point], r: f32, max_pairs: usize) -> Result<RadiusNeighbors> {
        validate::self_pairs(p, r)?;
        self.install(|| self_pairs(p, r, max_pairs))
    }
}

/// f64 coordinates: the same kd-tree searches in f64 throughout (the grid of
/// `closest_pairs` is f32-only, so f64 pairs always take the kd-tree).
impl NearestPairs<f64> for RayonBackend {
    fn nearest(&self, a: &[Point<f64>], b: &[Point<f64>], out: &mut [Neighbor<f64>]) -> Result<()> {
        validate::nearest(a, b, out)?;
        if a.is_empty() {
            return Ok(());
        }
        self.install(|| nearest(a, b, out));
        Ok(())
    }

    fn knn(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        k: usize,
        out: &mut [Neighbor<f64>],
    ) -> Result<()> {
        validate::knn(a, b, k, out)?;
        if a.is_empty() || k == 0 {
            return Ok(());
        }
        self.install(|| knn(a, b, k, out));
        Ok(())
    }

    fn closest_pairs(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        k: usize,
    ) -> Result<Vec<Pair<f64>>> {
        self.install(|| closest_pairs_with(a, b, k, tree_pairs))
    }

    fn within(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        r: f64,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::within(a, b, r)?;
        self.install(|| within(a, b, r, max_pairs))
    }

    fn self_pairs(
        &self,
        p: &[Point<f64>],
        r: f64,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::self_pairs(p, r)?;
        self.install(|| self_pairs(p, r, max_pairs))
    }
}

/// Whether every coordinate of `a` and `b` is finite, the largest absolute
/// coordinate and the smallest nonzero one (`inf` if none), in parallel.
fn finite_range<T: Real>(a: &[Point<T>], b: &[Point<T>]) -> (bool, T, T) {
    a.par_iter()
        .chain(b.par_iter())
        .with_min_len(CHUNK)
        .map(|p| {
            p.iter().fold((true, T::ZERO, T::INF), |(f, mx, mn), &v| {
                let m = v.abs();
                (
                    f && v.is_finite(),
                    mx.max(m),
                    if m > T::ZERO { mn.min(m) } else { mn },
                )
            })
        })
        .reduce(
            || (true, T::ZERO, T::INF),
            |x, y| (x.0 && y.0, x.1.max(y.1), x.2.min(y.2)),
        )
}

/// The best `k` pairs one worker has found (a max-heap on `(key(d2, i), j)`),
/// and the bound it searches under.
///
/// `global` holds the bits of the smallest k-th best distance of any worker:
/// at least k queries have d2 <= it, so a query whose nearest is farther
/// cannot be among the answers (ties at equal d2 are kept: they may win on
/// the index). Non-negative floats order like their bits, so `fetch_min` on
/// the bits works.
struct Top<'g, T: Real> {
    k: usize,
    heap: BinaryHeap<(T::Key, u32)>,
    /// This worker's k-th best bits (a copy kept to skip most atomic writes).
    local: u64,
    global: &'g AtomicU64,
}

impl<'g, T: Real> Top<'g, T> {
    fn new(k: usize, global: &'g AtomicU64) -> Self {
        Top {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
            local: T::INF.bits(),
            global,
        }
    }

    /// The k-th best distance held, or +inf while fewer than k are held.
    fn kth_d2_bits(&self) -> u64 {
        match self.heap.peek() {
            Some(&(top, _)) if self.heap.len() == self.k => T::key_d2(top).bits(),
            _ => T::INF.bits(),
        }
    }

    /// The key a query's nearest must be below to matter.
    #[inline]
    fn bound(&self) -> T::Key {
        let bits = self.global.load(Ordering::Relaxed).min(self.local);
        bound_at(T::from_bits(bits))
    }

    /// Offers query `i`'s nearest key `best` (as searched under `bound`).
    #[inline]
    fn offer(&mut self, i: u32, best: T::Key, bound: T::Key) {
        if best >= bound {
            return;
        }
        let entry = (T::key(T::key_d2(best), i), T::key_index(best));
        if self.heap.len() < self.k {
            self.heap.push(entry);
        } else if self.heap.peek().is_none_or(|e| entry.0 < e.0) {
            self.heap.pop();
            self.heap.push(entry);
        } else {
            return;
        }
        let kth = self.kth_d2_bits();
        if kth < self.local {
            self.local = kth;
            self.global.fetch_min(kth, Ordering::Relaxed);
        }
    }
}

/// The `k` best pairs over all workers' tops, ascending by `(d2, i)`.
fn merge_tops<T: Real>(tops: Vec<Top<'_, T>>, k: usize) -> Vec<Pair<T>> {
    let mut all: Vec<(T::Key, u32)> = tops.into_iter().flat_map(|t| t.heap.into_vec()).collect();
    all.sort_unstable();
    all.truncate(k);
    all.into_iter()
        .map(|(ki, j)| Pair {
            a: T::key_index(ki),
            b: j,
            d2: T::key_d2(ki),
        })
        .collect()
}

/// Points of A in a spatial order, and their original indices.
type Ordered<T> = (Vec<Point<T>>, Vec<u32>);

/// The tree over B and the query order of A, built side by side: neither
/// scales to 16 cores alone (the build's top levels and the counting sort's
/// passes leave threads idle), so the pool fills its gaps with the other.
fn build_and_order<T: Real>(a: &[Point<T>], b: &[Point<T>]) -> (KdTree<T>, Ordered<T>) {
    rayon::join(|| KdTree::build(b), || spatial_order(a))
}

/// How `closest_pairs` indexes B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Index {
    /// The grid where B is even enough for it, else the kd-tree.
    Auto,
    /// The kd-tree, whatever B looks like (tests compare the two).
    #[cfg(test)]
    KdTree,
}

/// f32 `closest_pairs` for `1 <= k <= |A|`, on the current pool: the grid
/// where B is even enough (see the module docs), else [`tree_pairs`].
fn closest_pairs(a: &[Point], b: &[Point], k: usize, index: Index) -> Vec<Pair> {
    let t0 = std::time::Instant::now();
    let grid = match index {
        Index::Auto => Grid::build(b),
        #[cfg(test)]
        Index::KdTree => None,
    };
    match &grid {
        Some(grid) => grid_pairs(a, b, k, grid, t0),
        None => tree_pairs(a, b, k),
    }
}

/// Whether a subscriber wants the phase events (the gathering they need is
/// skipped otherwise).
fn pairs_trace() -> bool {
    tracing::enabled!(tracing::Level::DEBUG)
}

/// The `closest_pairs` phase event.
fn print_trace(index: &str, t0: std::time::Instant, t_prep: std::time::Duration, kth: f64) {
    tracing::debug!(
        threads = rayon::current_num_threads(),
        index,
        index_ms = t_prep.as_secs_f64() * 1e3,
        search_ms = (t0.elapsed() - t_prep).as_secs_f64() * 1e3,
        kth_d2 = kth,
        "closest_pairs phases"
    );
}

/// `closest_pairs` over B's grid (f32 only, built from `t0` on), A in input
/// order.
fn grid_pairs(
    a: &[Point],
    b: &[Point],
    k: usize,
    grid: &Grid,
    t0: std::time::Instant,
) -> Vec<Pair> {
    let global = AtomicU64::new(f32::INFINITY.bits());
    // A in input order: a query touches one cell table entry and a cache
    // line or two of B, no tree descent to keep warm.
    let t_prep = t0.elapsed();
    // Queries whose search would reach across much of the grid (far outside
    // B's box, or in a hole of B) go to a kd-tree, built on the first such
    // query only.
    let tree = std::sync::OnceLock::new();
    let handed = std::sync::atomic::AtomicUsize::new(0);
    let tops: Vec<Top<f32>> = a
        .par_chunks(CHUNK)
        .enumerate()
        .fold(
            || Top::new(k, &global),
            |mut top, (c, qs)| {
                let mut at = [grid::Start::default(); CHUNK];
                let at = &mut at[..qs.len()];
                grid.locate(qs, at);
                for (t, (q, at)) in qs.iter().zip(at.iter()).enumerate() {
                    let bound = top.bound();
                    let best = grid.nearest(q, *at, bound).unwrap_or_else(|| {
                        handed.fetch_add(1, Ordering::Relaxed);
                        let tree: &KdTree<f32> = tree.get_or_init(|| KdTree::build(b));
                        let mut loc = [Located::default(); BATCH];
                        tree.locate(std::slice::from_ref(q), &mut loc);
                        tree.nearest(q, loc[0], bound)
                    });
                    top.offer((c * CHUNK + t) as u32, best, bound);
                }
                top
            },
        )
        .collect();
    if pairs_trace() {
        tracing::debug!(
            seen_per_point = grid.seen,
            handed_to_tree = handed.load(Ordering::Relaxed),
            "closest_pairs grid"
        );
        let kth = <f32 as Real>::from_bits(global.load(Ordering::Relaxed)) as f64;
        print_trace("grid", t0, t_prep, kth);
    }
    merge_tops(tops, k)
}

/// `closest_pairs` over a kd-tree of B, A in spatial order, for
/// `1 <= k <= |A|`, on the current pool.
fn tree_pairs<T: Real>(a: &[Point<T>], b: &[Point<T>], k: usize) -> Vec<Pair<T>> {
    let t0 = std::time::Instant::now();
    let global = AtomicU64::new(T::INF.bits());
    let (tree, (qa, order)) = build_and_order(a, b);
    let t_prep = t0.elapsed();
    let tops: Vec<Top<T>> = qa
        .par_chunks(CHUNK)
        .zip(order.par_chunks(CHUNK))
        .fold(
            || Top::new(k, &global),
            |mut top, (qs, idx)| {
                for_each_located(&tree, qs, |t, q, at| {
                    let bound = top.bound();
                    top.offer(idx[t], tree.nearest(q, at, bound), bound);
                });
                top
            },
        )
        .collect();
    if pairs_trace() {
        let kth = T::from_bits(global.load(Ordering::Relaxed)).to_f64();
        print_trace("kd-tree", t0, t_prep, kth);
    }
    merge_tops(tops, k)
}

/// `within` after validation.
fn within<T: Real>(
    a: &[Point<T>],
    b: &[Point<T>],
    r: T,
    max_pairs: usize,
) -> Result<RadiusNeighbors<T>> {
    if a.is_empty() || b.is_empty() {
        return Ok(no_pairs(a.len()));
    }
    let t0 = std::time::Instant::now();
    let (a, b, shift) = scaled_for_range(a, b);
    let (tree, (qa, order)) = build_and_order(&a, &b);
    radius::<T, false>(&tree, &qa, &order, r, shift, max_pairs, t0)
}

/// `self_pairs` after validation.
fn self_pairs<T: Real>(p: &[Point<T>], r: T, max_pairs: usize) -> Result<RadiusNeighbors<T>> {
    if p.len() < 2 {
        return Ok(no_pairs(p.len()));
    }
    let t0 = std::time::Instant::now();
    let (p, _, shift) = scaled_for_range(p, &[]);
    // The queries in the tree's own leaf order: as coherent as A's Morton
    // order, with no sort of their own (a few percent of the call).
    let tree = KdTree::build(&p);
    let (qp, order) = tree.points_in_order();
    radius::<T, true>(&tree, &qp, &order, r, shift, max_pairs, t0)
}

/// The result of a radius search that finds nothing: `rows` empty rows.
fn no_pairs<T>(rows: usize) -> RadiusNeighbors<T> {
    RadiusNeighbors {
        offsets: vec![0; rows + 1],
        indices: Vec::new(),
        d2: Vec::new(),
    }
}

/// Counts a query's points within the radius: those whose key is below
/// `bound` (computed `d2 <= r * r`), and with `UPPER` only those of index
/// above the query's own `i`.
struct Count<T: Real, const UPPER: bool> {
    bound: T::Key,
    i: u32,
    n: u64,
}

impl<T: Real, const UPPER: bool> Visitor<T> for Count<T, UPPER> {
    const WHOLE: bool = true;
    #[inline(always)]
    fn bound(&self) -> T::Key {
        self.bound
    }
    #[inline(always)]
    fn visit(&mut self, d: &[T; LEAF], id: &[u32; LEAF]) {
        for s in 0..LEAF {
            let inside = T::key(d[s], id[s]) < self.bound;
            self.n += (inside && (!UPPER || id[s] > self.i)) as u64;
        }
    }
    #[inline(always)]
    fn take_whole(&mut self, n: usize, minid: u32) -> bool {
        // With UPPER a subtree counts whole only when all of it is above i.
        let all = !UPPER || minid > self.i;
        if all {
            self.n += n as u64;
        }
        all
    }
}

/// Gathers the keys [`Count`] counts.
struct Collect<'k, T: Real, const UPPER: bool> {
    bound: T::Key,
    i: u32,
    keys: &'k mut Vec<T::Key>,
}

impl<T: Real, const UPPER: bool> Visitor<T> for Collect<'_, T, UPPER> {
    #[inline(always)]
    fn bound(&self) -> T::Key {
        self.bound
    }
    #[inline(always)]
    fn visit(&mut self, d: &[T; LEAF], id: &[u32; LEAF]) {
        for s in 0..LEAF {
            let k = T::key(d[s], id[s]);
            if k < self.bound && (!UPPER || id[s] > self.i) {
                self.keys.push(k);
            }
        }
    }
}

/// Pairs a task finds before it adds them to the shared count and checks that
/// against `max_pairs`: what a search past the limit can hold beyond it, per
/// thread, before it stops.
const FLUSH: u64 = 1 << 14;

/// The rows one task found for its chunk of queries, in query order.
struct Rows<T> {
    /// Length of each row.
    lens: Vec<u32>,
    /// The rows' indices, one after the other.
    idx: Vec<u32>,
    /// Their distances, unscaled.
    d2: Vec<T>,
    /// A reservation failed: the rows are incomplete.
    oom: bool,
}

/// The rows of a radius search of the (scaled) queries `qs`, whose original
/// indices are `order` (a permutation of the rows), over `tree`; with
/// `UPPER` the tree holds the queries themselves and row `i` keeps `j > i`.
///
/// One pass over the tree: each task searches its chunk of queries (in the
/// spatial order that keeps the tree in cache) from the root and gathers
/// their rows, sorted by `(d2, j)`, into buffers of its own; the row lengths then give the offsets,
/// and the rows are copied to their places. Counting in a first pass and
/// filling in a second searches the tree twice and writes the rows in
/// scattered order, and measured about twice as slow (1M x 1M, ~10 pairs a
/// row, one thread: 2.6 s against 1.35 s of CPU). The tasks add what they
/// found to a shared count as they go and stop once it passes `max_pairs`,
/// so a radius too large fails after holding little more than `max_pairs`
/// pairs; the exact count for the error is then taken by a search that only
/// counts (whole subtrees within the radius at once).
fn radius<T: Real, const UPPER: bool>(
    tree: &KdTree<T>,
    qs: &[Point<T>],
    order: &[u32],
    r: T,
    shift: i32,
    max_pairs: usize,
    t0: std::time::Instant,
) -> Result<RadiusNeighbors<T>> {
    let mut laps = vec![("index and order", t0.elapsed())];
    let rows = qs.len();
    // Inclusion is decided on the computed d2 against r * r computed in T,
    // both in the scaled units (scaling by a power of two is exact).
    let r = scale_coord(r, shift);
    let bound = bound_at(r * r);
    let max = max_pairs as u64;
    let found = AtomicU64::new(0);
    let chunks: Vec<Rows<T>> = qs
        .par_chunks(CHUNK)
        .zip(order.par_chunks(CHUNK))
        .map_init(Vec::new, |keys, (qs, ids)| {
            let mut out = Rows {
                lens: Vec::with_capacity(qs.len()),
                idx: Vec::new(),
                d2: Vec::new(),
                oom: false,
            };
            let mut pending = 0u64;
            // Past the limit already (another task found that many): skip.
            let skip = found.load(Ordering::Relaxed) > max;
            for (q, &i) in qs.iter().zip(ids).take(if skip { 0 } else { qs.len() }) {
                keys.clear();
                let mut v = Collect::<T, UPPER> { bound, i, keys };
                tree.search_all(q, &mut v);
                keys.sort_unstable();
                if out.idx.try_reserve(keys.len()).is_err()
                    || out.d2.try_reserve(keys.len()).is_err()
                {
                    out.oom = true;
                    break;
                }
                // A row holds at most |B| <= u32::MAX points.
                out.lens.push(keys.len() as u32);
                out.idx.extend(keys.iter().map(|&k| T::key_index(k)));
                out.d2
                    .extend(keys.iter().map(|&k| unscale_d2(T::key_d2(k), shift)));
                pending += keys.len() as u64;
                if pending >= FLUSH {
                    let total = found.fetch_add(pending, Ordering::Relaxed) + pending;
                    pending = 0;
                    if total > max {
                        break;
                    }
                }
            }
            found.fetch_add(pending, Ordering::Relaxed);
            out
        })
        .collect();
    laps.push(("search", t0.elapsed()));
    let found = found.into_inner();
    if found > max {
        drop(chunks);
        let n = count_pairs::<T, UPPER>(tree, qs, order, bound).max(found as u128);
        validate::radius_count(n, max_pairs)?;
        // n >= found > max_pairs, so the check above has failed.
        return Err(Error::TooLarge {
            field: "pairs within r",
            value: n,
            limit: max_pairs as u128,
        });
    }
    if chunks.iter().any(|c| c.oom) {
        return Err(Error::OutOfMemory {
            bytes: (found as u128 * (4 + size_of::<T>()) as u128).min(u64::MAX as u128) as u64,
            detail: format!("the rows of a radius search ({found} pairs found so far)"),
        });
    }

    // Offsets by original index.
    let mut offsets: Vec<usize> = vec![0; rows + 1];
    {
        let lens = SendPtr(offsets[1..].as_mut_ptr());
        let lens = &lens;
        chunks
            .par_iter()
            .zip(order.par_chunks(CHUNK))
            .for_each(|(c, ids)| {
                // Every chunk searched all its queries (none stopped: the
                // count is within max_pairs and nothing failed to reserve).
                assert_eq!(c.lens.len(), ids.len(), "radius search: a chunk stopped");
                for (&i, &len) in ids.iter().zip(&c.lens) {
                    // SAFETY: `order` is a permutation of `0..rows`, so each
                    // task writes its own slots of `offsets[1..]`, once, and
                    // nothing reads them until the tasks are joined.
                    unsafe { *lens.0.add(i as usize) = len as usize };
                }
            });
    }
    let total = prefix_sum(&mut offsets[1..]);
    validate::radius_count(total, max_pairs)?;
    // total <= max_pairs <= usize::MAX.
    let total = total as usize;
    let mut indices: Vec<u32> = output(total, "indices")?;
    let mut d2: Vec<T> = output(total, "d2")?;
    laps.push(("offsets", t0.elapsed()));

    // Each row to its place.
    {
        let (idx, dd) = (SendPtr(indices.as_mut_ptr()), SendPtr(d2.as_mut_ptr()));
        let (idx, dd, offsets) = (&idx, &dd, &offsets);
        chunks
            .par_iter()
            .zip(order.par_chunks(CHUNK))
            .for_each(|(c, ids)| {
                let mut src = 0usize;
                for (&i, &len) in ids.iter().zip(&c.lens) {
                    let (dst, len) = (offsets[i as usize], len as usize);
                    assert_eq!(offsets[i as usize + 1] - dst, len);
                    // SAFETY: the source is row `i`'s place in this task's
                    // buffers (`src + len <= c.idx.len() == c.d2.len()`:
                    // the lengths are those of the rows pushed); the
                    // destination `dst..dst + len` is row `i`'s range of the
                    // output (asserted), inside its capacity `total`, and
                    // `order` is a permutation, so no other task writes it.
                    unsafe {
                        std::ptr::copy_nonoverlapping(c.idx.as_ptr().add(src), idx.0.add(dst), len);
                        std::ptr::copy_nonoverlapping(c.d2.as_ptr().add(src), dd.0.add(dst), len);
                    }
                    src += len;
                }
            });
    }
    // SAFETY: every row's range was written above, and the ranges of all rows
    // tile `0..total` (`offsets` are the prefix sums of the row lengths).
    unsafe {
        indices.set_len(total);
        d2.set_len(total);
    }
    if pairs_trace() {
        laps.push(("copy", t0.elapsed()));
        let mut prev = std::time::Duration::ZERO;
        let laps: Vec<String> = laps
            .into_iter()
            .map(|(what, t)| {
                let ms = (t - prev).as_secs_f64() * 1e3;
                prev = t;
                format!("{what} {ms:.1} ms")
            })
            .collect();
        tracing::debug!(
            threads = rayon::current_num_threads(),
            rows,
            pairs = total,
            phases = laps.join(", "),
            "radius search phases"
        );
    }
    Ok(RadiusNeighbors {
        offsets,
        indices,
        d2,
    })
}

/// The number of pairs a radius search finds, without gathering them.
fn count_pairs<T: Real, const UPPER: bool>(
    tree: &KdTree<T>,
    qs: &[Point<T>],
    order: &[u32],
    bound: T::Key,
) -> u128 {
    qs.par_chunks(CHUNK)
        .zip(order.par_chunks(CHUNK))
        .map(|(qs, ids)| {
            let mut n = 0u128;
            for (q, &i) in qs.iter().zip(ids) {
                let mut v = Count::<T, UPPER> { bound, i, n: 0 };
                tree.search_all(q, &mut v);
                n += v.n as u128;
            }
            n
        })
        .sum()
}

/// Turns row counts into their inclusive prefix sums (blocks in parallel,
/// then each block shifted by the blocks before it) and returns the total.
/// The sums are at most `rows * u32::MAX`, which fits `usize` on 64-bit
/// targets; a sum past `usize` saturates and its total, exact in `u128`,
/// fails the size check.
fn prefix_sum(counts: &mut [usize]) -> u128 {
    const BLOCK: usize = 1 << 14;
    let sums: Vec<usize> = counts
        .par_chunks_mut(BLOCK)
        .map(|blk| {
            let mut run = 0usize;
            for c in blk.iter_mut() {
                run = run.saturating_add(*c);
                *c = run;
            }
            run
        })
        .collect();
    let mut bases = Vec::with_capacity(sums.len());
    let mut total = 0u128;
    for s in sums {
        bases.push(total.min(usize::MAX as u128) as usize);
        total += s as u128;
    }
    counts
        .par_chunks_mut(BLOCK)
        .zip(bases)
        .for_each(|(blk, base)| {
            if base != 0 {
                blk.iter_mut().for_each(|c| *c = c.saturating_add(base));
            }
        });
    total
}

/// An empty vector with room for exactly `len` elements of a radius search's
/// result, or [`Error::OutOfMemory`] naming the buffer.
fn output<X>(len: usize, what: &str) -> Result<Vec<X>> {
    let mut v = trident_core::mem::with_capacity(len, || {
        format!("the {what} of a radius search's {len} pairs")
    })?;
    // Fresh memory is faulted in as it is written; huge pages make that cheap.
    trident_core::mem::advise_huge(&mut v);
    Ok(v)
}
