//! A balanced, implicit kd-tree over B with a tight box per node and fixed-size,
//! padded leaf buckets.
//!
//! Why this shape: median splits keep every leaf at `LEAF` points or fewer
//! whatever the distribution (clustered input does not pile up in a few cells
//! the way it does in a uniform grid), the tree needs no pointers (node `p` has
//! children `2p` and `2p + 1`), and the per-node boxes are tight, so empty
//! space between clusters is pruned at once.
//!
//! Coordinates: the tree is generic over the coordinate type ([`Real`]: f32
//! or f64); boxes, planes, leaves and distances are all in that type, so an
//! f64 call is never rounded to f32.
//!
//! Exactness: candidates are ordered by the key `(d2, j)` packed into an
//! unsigned integer (`u64` for f32, `u128` for f64; `d2 >= 0` and is never
//! NaN, so its bits order like its value). Every node
//! also knows the smallest index below it, so its box has a lower-bound *key*
//! `(lower bound of d2, min j)`, below the key of every point inside; a box is
//! pruned when that key is not strictly below the current bound. The lower
//! bound of d2 is computed with the same operations in the coordinate type, in
//! the same order, as [`trident_core::dist2`] on the nearest face: rounding is
//! monotone, so it never exceeds the computed distance of any point inside.
//! The same argument on the farthest corner gives an upper bound that is
//! never below the computed distance of any point inside: a radius count
//! takes a whole subtree whose upper bound is within the radius without
//! computing its distances, and the pass that then computes them keeps
//! exactly those points.
//!
//! Ties: pruning on keys rather than on distances alone is what keeps many
//! equidistant points (1e5 copies of one point) from making a query visit
//! every leaf: a box at the best distance so far is entered only if it may
//! hold a smaller index, and the child with the smaller key is searched first,
//! so a query walks to the smallest index about as directly as to the nearest
//! point.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use trident_core::Point;

use super::real::Real;

/// Points per leaf bucket (leaves hold at most this many; unused slots are padding).
pub(super) const LEAF: usize = 8;

/// Below this many points a subtree is partitioned on the current thread.
/// Small enough to give 16 cores a hundred subtrees to balance (at 2^14 the
/// build scaled 3x from 1 to 16 threads on the GPU machine).
const PAR_BUILD: usize = 1 << 12;
/// From this many points a node's box is a parallel reduction.
const PAR_BOX: usize = 1 << 15;

/// An axis-aligned box.
#[derive(Clone, Copy, Debug)]
struct Aabb<T> {
    lo: [T; 3],
    hi: [T; 3],
}

impl<T: Real> Aabb<T> {
    const EMPTY: Aabb<T> = Aabb {
        lo: [T::INF; 3],
        hi: [T::NEG_INF; 3],
    };

    fn add(&mut self, p: &Point<T>) {
        for d in 0..3 {
            self.lo[d] = self.lo[d].min(p[d]);
            self.hi[d] = self.hi[d].max(p[d]);
        }
    }

    fn union(&self, o: &Aabb<T>) -> Aabb<T> {
        let mut r = *self;
        for d in 0..3 {
            r.lo[d] = r.lo[d].min(o.lo[d]);
            r.hi[d] = r.hi[d].max(o.hi[d]);
        }
        r
    }

    /// A lower bound of `dist2(q, p)` for every `p` in the box, computed so that
    /// it is never above the computed `dist2` of such a `p` (see the module docs).
    #[inline(always)]
    fn lower_bound(&self, q: &Point<T>) -> T {
        // For q below lo the gap is fl(lo - q) <= fl(p - q); above hi it is
        // fl(q - hi) <= fl(q - p) = |fl(p - q)|; inside it is 0.
        // Plain comparisons rather than min/max: no NaN can occur here, and
        // they compile to single max instructions.
        #[inline(always)]
        fn gap<T: Real>(lo: T, hi: T, x: T) -> T {
            let a = lo - x;
            let b = x - hi;
            let g = if a > b { a } else { b };
            if g > T::ZERO { g } else { T::ZERO }
        }
        let gx = gap(self.lo[0], self.hi[0], q[0]);
        let gy = gap(self.lo[1], self.hi[1], q[1]);
        let gz = gap(self.lo[2], self.hi[2], q[2]);
        gx * gx + gy * gy + gz * gz
    }

    /// An upper bound of `dist2(q, p)` for every `p` in the box, never below
    /// the computed `dist2` of such a `p`: `fl(q - p)` is monotone in `p`, so
    /// its magnitude is at most that at `lo` or at `hi`, and squares and sums
    /// of larger operands round to larger results.
    #[inline(always)]
    fn upper_bound(&self, q: &Point<T>) -> T {
        #[inline(always)]
        fn far<T: Real>(lo: T, hi: T, x: T) -> T {
            let a = (x - lo).abs();
            let b = (x - hi).abs();
            if a > b { a } else { b }
        }
        let fx = far(self.lo[0], self.hi[0], q[0]);
        let fy = far(self.lo[1], self.hi[1], q[1]);
        let fz = far(self.lo[2], self.hi[2], q[2]);
        fx * fx + fy * fy + fz * fz
    }
}

/// One leaf bucket, structure of arrays so the distance loop vectorises.
/// Padding slots sit at +inf (their distance is +inf) with index `u32::MAX`, so
/// their key is [`Real::NO_KEY`] and never beats any bound.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Leaf<T> {
    x: [T; LEAF],
    y: [T; LEAF],
    z: [T; LEAF],
    id: [u32; LEAF],
}

impl<T: Real> Leaf<T> {
    const PAD: Leaf<T> = Leaf {
        x: [T::INF; LEAF],
        y: [T::INF; LEAF],
        z: [T::INF; LEAF],
        id: [u32::MAX; LEAF],
    };

    /// `dist2(q, p)` for every slot, in the operation order of
    /// [`trident_core::dist2`] (`q - p`: the sign of a difference does not
    /// change its square's bits).
    #[inline(always)]
    fn distances(&self, q: &Point<T>) -> [T; LEAF] {
        let mut d = [T::ZERO; LEAF];
        for s in 0..LEAF {
            let dx = q[0] - self.x[s];
            let dy = q[1] - self.y[s];
            let dz = q[2] - self.z[s];
            d[s] = dx * dx + dy * dy + dz * dz;
        }
        d
    }
}

#[derive(Clone, Copy)]
struct Item<T> {
    p: Point<T>,
    id: u32,
}

/// The splitting plane of an internal node: its left subtree holds points with
/// `p[dim] <= v`, its right subtree points with `p[dim] >= v`.
#[derive(Clone, Copy, Debug, Default)]
struct Split<T> {
    v: T,
    dim: u32,
}

/// Queries located together by [`KdTree::locate`].
pub(super) const BATCH: usize = 8;

/// Where a query's descent ended: its leaf node and `min g^2` over the split
/// planes passed (every point outside the leaf is at least that far).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Located<T> {
    node: usize,
    gmin: T,
}

/// Receives the points of the leaves a search visits and says how far to look.
pub(super) trait Visitor<T: Real> {
    /// Whether [`Visitor::take_whole`] may be offered subtrees (a count, not
    /// a search that needs every distance): a constant, so that searches
    /// without it compile as if the hook did not exist.
    const WHOLE: bool = false;
    /// Keys at or above this cannot be accepted: boxes whose lower-bound key
    /// is not below it are skipped.
    fn bound(&self) -> T::Key;
    /// The distance part of [`Visitor::bound`].
    #[inline(always)]
    fn bound_d2(&self) -> T {
        T::key_d2(self.bound())
    }
    /// Offers every slot of a leaf (padding slots have distance +inf and index
    /// `u32::MAX`, i.e. the key [`Real::NO_KEY`]); `d` are the slots' distances.
    fn visit(&mut self, d: &[T; LEAF], id: &[u32; LEAF]);
    /// Offers a whole subtree of `n` points, the smallest index `minid`, every
    /// one of whose computed distances is at most [`Visitor::bound_d2`]
    /// (only when [`Visitor::WHOLE`]); returns whether it was taken as a
    /// whole, else the search goes into it.
    #[inline(always)]
    fn take_whole(&mut self, _n: usize, _minid: u32) -> bool {
        false
    }
}

/// The kd-tree over B.
pub(super) struct KdTree<T> {
    /// Number of points.
    n: usize,
    /// Number of leaves, a power of two; leaf `l` is node `nleaves + l`.
    nleaves: usize,
    /// `log2(nleaves)`.
    depth: u32,
    /// Split planes of the internal nodes `1..nleaves` (slot 0 unused).
    splits: Vec<Split<T>>,
    /// Node boxes in 1-based heap order (slot 0 unused).
    boxes: Vec<Aabb<T>>,
    /// The smallest index of B below each node, same order as `boxes`.
    minid: Vec<u32>,
    leaves: Vec<Leaf<T>>,
}

/// First item of leaf `l` when `n` items are spread over `nleaves` leaves.
#[inline]
fn leaf_start(l: usize, n: usize, nleaves: usize) -> usize {
    ((l as u128 * n as u128) / nleaves as u128) as usize
}

/// Where [`partition`] records the split planes: the value's bits and the
/// axis (atomics only so that the two halves can be built on different
/// threads).
struct SplitSlot {
    bits: AtomicU64,
    dim: AtomicU32,
}

/// Reorders `items` (the items of leaves `l0..l1`) so that each leaf's items are
/// contiguous, splitting at the median of the widest axis, and records the
/// split planes in `splits[node]`.
fn partition<T: Real>(items: &mut [Item<T>], l0: usize, l1: usize, n: usize, splits: &[SplitSlot]) {
    let nleaves = splits.len();
    if l1 - l0 <= 1 {
        return;
    }
    // The top levels see most of B: their box is a parallel reduction (on
    // 16 cores the serial scan of the root's 400K points showed).
    let bb = if items.len() >= PAR_BOX {
        use rayon::prelude::*;
        items
            .par_iter()
            .fold(
                || Aabb::EMPTY,
                |mut bb, it| {
                    bb.add(&it.p);
                    bb
                },
            )
            .reduce(|| Aabb::EMPTY, |x, y| x.union(&y))
    } else {
        let mut bb = Aabb::EMPTY;
        for it in items.iter() {
            bb.add(&it.p);
        }
        bb
    };
    let ext = [0, 1, 2].map(|d| bb.hi[d] - bb.lo[d]);
    let dim = if ext[0] >= ext[1] && ext[0] >= ext[2] {
        0
    } else if ext[1] >= ext[2] {
        1
    } else {
        2
    };
    let lm = (l0 + l1) / 2;
    let split = leaf_start(lm, n, nleaves) - leaf_start(l0, n, nleaves);
    items.select_nth_unstable_by(split, |a, b| a.p[dim].total_cmp(&b.p[dim]));
    // select_nth leaves items[..split] <= pivot <= items[split..] on `dim`.
    let v = items[split].p[dim];
    let node = (nleaves + l0) / (l1 - l0);
    splits[node].bits.store(v.bits(), Ordering::Relaxed);
    splits[node].dim.store(dim as u32, Ordering::Relaxed);
    let (left, right) = items.split_at_mut(split);
    if left.len() + right.len() >= PAR_BUILD {
        rayon::join(
            || partition(left, l0, lm, n, splits),
            || partition(right, lm, l1, n, splits),
        );
    } else {
        partition(left, l0, lm, n, splits);
        partition(right, lm, l1, n, splits);
    }
}

/// Distance from `q` to the far side of a split plane, as a lower bound on the
/// computed distance of every point across it (monotone rounding, as for
/// boxes), and which child `q` falls in.
#[inline(always)]
fn plane<T: Real>(q: &Point<T>, s: Split<T>) -> (T, usize) {
    // |fl(x - v)| = fl(v - x) and fl(x - v) >= 0 iff x >= v, so one difference
    // gives both the gap and the side, without a branch. q goes right iff
    // x >= v; points across the plane are then <= v <= x (or >= v > x).
    let x = match s.dim {
        0 => q[0],
        1 => q[1],
        _ => q[2],
    };
    let g = x - s.v;
    (g * g, (x >= s.v) as usize)
}

impl<T: Real> KdTree<T> {
    /// Builds the tree over `b` (non-empty, at most `u32::MAX` points), in
    /// parallel on the current rayon pool.
    pub(super) fn build(b: &[Point<T>]) -> KdTree<T> {
        use rayon::prelude::*;
        assert!(!b.is_empty() && b.len() <= u32::MAX as usize);
        let n = b.len();
        let nleaves = n.div_ceil(LEAF).next_power_of_two();
        let depth = nleaves.trailing_zeros();
        // Leaves hold >= 1 point each (n >= nleaves); depth <= 29 < STACK.
        debug_assert!((depth as usize) < STACK);

        let mut items: Vec<Item<T>> = b
            .par_iter()
            .enumerate()
            .map(|(i, p)| Item {
                p: *p,
                id: i as u32,
            })
            .collect();
        let splits: Vec<SplitSlot> = (0..nleaves)
            .map(|_| SplitSlot {
                bits: AtomicU64::new(0),
                dim: AtomicU32::new(0),
            })
            .collect();
        partition(&mut items, 0, nleaves, n, &splits);
        let splits = splits
            .into_iter()
            .map(|s| Split {
                v: T::from_bits(s.bits.into_inner()),
                dim: s.dim.into_inner(),
            })
            .collect();

        // Each leaf, its box and its smallest id are built by the task that
        // fills the leaf, straight into fresh memory: on 16 cores, filling
        // 11 MB with padding on one thread first cost as much as all the
        // parallel work of this step.
        let (leaves, tops): (Vec<Leaf<T>>, Vec<_>) = (0..nleaves)
            .into_par_iter()
            .map(|l| {
                let (mut leaf, mut bb, mut lo) = (Leaf::PAD, Aabb::<T>::EMPTY, u32::MAX);
                let s = leaf_start(l, n, nleaves);
                let e = leaf_start(l + 1, n, nleaves);
                for (slot, it) in items[s..e].iter().enumerate() {
                    leaf.x[slot] = it.p[0];
                    leaf.y[slot] = it.p[1];
                    leaf.z[slot] = it.p[2];
                    leaf.id[slot] = it.id;
                    bb.add(&it.p);
                    lo = lo.min(it.id);
                }
                (leaf, (bb, lo))
            })
            .unzip();
        // Internal nodes 1..nleaves first, then the leaves (node nleaves + l).
        let mut boxes: Vec<Aabb<T>> = (0..2 * nleaves)
            .into_par_iter()
            .map(|p| match p.checked_sub(nleaves) {
                Some(l) => tops[l].0,
                None => Aabb::EMPTY,
            })
            .collect();
        let mut minid: Vec<u32> = (0..2 * nleaves)
            .into_par_iter()
            .map(|p| p.checked_sub(nleaves).map_or(u32::MAX, |l| tops[l].1))
            .collect();
        for p in (1..nleaves).rev() {
            boxes[p] = boxes[2 * p].union(&boxes[2 * p + 1]);
            minid[p] = minid[2 * p].min(minid[2 * p + 1]);
        }
        KdTree {
            n,
            nleaves,
            depth,
            splits,
            boxes,
            minid,
            leaves,
        }
    }

    /// B's points in the order of the leaves, with their indices: a query
    /// order in which neighbouring queries share most of their search, for
    /// searches of B against itself.
    pub(super) fn points_in_order(&self) -> (Vec<Point<T>>, Vec<u32>) {
        use rayon::prelude::*;
        self.leaves
            .par_iter()
            .flat_map_iter(|leaf| {
                (0..LEAF)
                    .filter(|&s| leaf.id[s] != u32::MAX)
                    .map(|s| ([leaf.x[s], leaf.y[s], leaf.z[s]], leaf.id[s]))
            })
            .unzip()
    }

    /// Offers `v` every point of B that can lie within its bound, by a
    /// descent from the root into every node whose lower-bound key is below
    /// it, in no particular order: for searches whose bound does not shrink
    /// (a radius), where [`KdTree::finish`]'s nearest-first order buys
    /// nothing and its climb from `q`'s leaf tests planes and boxes of
    /// siblings the descent from the root skips at once. With
    /// [`Visitor::WHOLE`], a subtree whose upper bound is within the bound is
    /// offered whole.
    pub(super) fn search_all<V: Visitor<T>>(&self, q: &Point<T>, v: &mut V) {
        let mut stack = [0u32; STACK];
        let mut sp = 0usize;
        let mut node = 1usize;
        loop {
            if self.box_key(node, q) < v.bound() {
                if node >= self.nleaves {
                    self.scan(node, q, v);
                } else if !(V::WHOLE
                    && self.boxes[node].upper_bound(q) <= v.bound_d2()
                    && v.take_whole(self.size(node), self.minid[node]))
                {
                    // Entries sit at strictly increasing depths (< STACK).
                    stack[sp] = (2 * node + 1) as u32;
                    sp += 1;
                    node *= 2;
                    continue;
                }
            }
            if sp == 0 {
                return;
            }
            sp -= 1;
            node = stack[sp] as usize;
        }
    }

    /// The number of points below `node`.
    #[inline]
    fn size(&self, node: usize) -> usize {
        let level = node.ilog2();
        let span = self.nleaves >> level;
        let l0 = (node - (1 << level)) * span;
        leaf_start(l0 + span, self.n, self.nleaves) - leaf_start(l0, self.n, self.nleaves)
    }

    #[inline(always)]
    fn scan<V: Visitor<T>>(&self, node: usize, q: &Point<T>, v: &mut V) {
        let leaf = &self.leaves[node - self.nleaves];
        let d = leaf.distances(q);
        let bound = v.bound_d2();
        let mut any = false;
        for s in 0..LEAF {
            any |= d[s] <= bound;
        }
        if any {
            v.visit(&d, &leaf.id);
        }
    }

    /// The lower-bound key of every point below `node`: `(box distance, min j)`.
    #[inline(always)]
    fn box_key(&self, node: usize, q: &Point<T>) -> T::Key {
        T::key(self.boxes[node].lower_bound(q), self.minid[node])
    }

    /// Depth-first branch and bound below `node`, the child with the smaller
    /// lower-bound key first.
    fn descend<V: Visitor<T>>(&self, node: usize, q: &Point<T>, v: &mut V) {
        let mut stack = [(0u32, T::NO_KEY); STACK];
        let mut sp = 0usize;
        let mut node = node;
        loop {
            if node >= self.nleaves {
                self.scan(node, q, v);
            } else {
                let (c0, c1) = (2 * node, 2 * node + 1);
                let k0 = self.box_key(c0, q);
                let k1 = self.box_key(c1, q);
                let (near, kn, far, kf) = if k1 < k0 {
                    (c1, k1, c0, k0)
                } else {
                    (c0, k0, c1, k1)
                };
                let bound = v.bound();
                if kf < bound {
                    stack[sp] = (far as u32, kf);
                    sp += 1;
                }
                if kn < bound {
                    node = near;
                    continue;
                }
            }
            loop {
                if sp == 0 {
                    return;
                }
                sp -= 1;
                let (n, k) = stack[sp];
                if k < v.bound() {
                    node = n as usize;
                    break;
                }
            }
        }
    }

    /// For each query of `qs` (at most [`BATCH`]), its leaf node and the
    /// smallest plane gap crossed on the way down (see [`KdTree::finish`]).
    ///
    /// The queries descend in lockstep: one query's descent is a chain of
    /// dependent loads, a batch's chains are independent and overlap.
    #[inline]
    pub(super) fn locate(&self, qs: &[Point<T>], out: &mut [Located<T>; BATCH]) {
        debug_assert!(qs.len() <= BATCH);
        let n = qs.len();
        let mut node = [1usize; BATCH];
        let mut gmin = [T::INF; BATCH];
        for _ in 0..self.depth {
            for t in 0..n {
                let (g, side) = plane(&qs[t], self.splits[node[t]]);
                gmin[t] = if g < gmin[t] { g } else { gmin[t] };
                node[t] = 2 * node[t] + side;
            }
        }
        for t in 0..n {
            out[t] = Located {
                node: node[t],
                gmin: gmin[t],
            };
        }
    }

    /// Offers `v` every point of B that can lie within its bound, given `q`'s
    /// leaf from [`KdTree::locate`]: scans the leaf, then backtracks bottom-up
    /// through the siblings whose plane and box are within the bound.
    #[inline]
    pub(super) fn finish<V: Visitor<T>>(&self, q: &Point<T>, at: Located<T>, v: &mut V) {
        let mut node = at.node;
        self.scan(node, q, v);
        // Every point outside q's leaf lies across one of the planes.
        if T::key(at.gmin, 0) >= v.bound() {
            return;
        }
        while node > 1 {
            let sib = node ^ 1;
            let (g, _) = plane(q, self.splits[node >> 1]);
            if T::key(g, self.minid[sib]) < v.bound() && self.box_key(sib, q) < v.bound() {
                self.descend(sib, q, v);
            }
            node >>= 1;
        }
    }

    /// The smallest key `(dist2(q, b_j), j)` below `bound`, or `bound` itself if
    /// no point of B has a smaller key; `at` is `q`'s [`KdTree::locate`] result.
    pub(super) fn nearest(&self, q: &Point<T>, at: Located<T>, bound: T::Key) -> T::Key {
        let mut v = Best {
            key: bound,
            d2: T::key_d2(bound),
        };
        self.finish(q, at, &mut v);
        v.key
    }

    /// The `out.len()` smallest keys `(dist2(q, b_j), j)`, ascending, using
    /// `heap` as scratch; `at` is `q`'s [`KdTree::locate`] result. `out.len()`
    /// must not exceed |B|.
    pub(super) fn knn(
        &self,
        q: &Point<T>,
        at: Located<T>,
        heap: &mut KeyHeap<T>,
        out: &mut [T::Key],
    ) {
        heap.clear(out.len());
        if !out.is_empty() {
            self.finish(q, at, heap);
        }
        heap.drain_sorted(out);
    }
}

/// Visitor of [`KdTree::nearest`]: the single best key.
struct Best<T: Real> {
    key: T::Key,
    d2: T,
}

impl<T: Real> Visitor<T> for Best<T> {
    #[inline(always)]
    fn bound(&self) -> T::Key {
        self.key
    }
    #[inline(always)]
    fn bound_d2(&self) -> T {
        self.d2
    }
    #[inline(always)]
    fn visit(&mut self, d: &[T; LEAF], id: &[u32; LEAF]) {
        for s in 0..LEAF {
            self.key = self.key.min(T::key(d[s], id[s]));
        }
        self.d2 = T::key_d2(self.key);
    }
}

impl<T: Real> Visitor<T> for KeyHeap<T> {
    #[inline(always)]
    fn bound(&self) -> T::Key {
        KeyHeap::bound(self)
    }
    fn visit(&mut self, d: &[T; LEAF], id: &[u32; LEAF]) {
        for s in 0..LEAF {
            self.offer(T::key(d[s], id[s]));
        }
    }
}

/// Depth-first search stack size: entries sit at strictly increasing depths, and
/// the depth is at most 29 (`u32::MAX` points in leaves of 8).
const STACK: usize = 32;

/// A bounded max-heap of keys holding the k smallest offered so far.
pub(super) struct KeyHeap<T: Real> {
    k: usize,
    h: Vec<T::Key>,
}

impl<T: Real> Default for KeyHeap<T> {
    fn default() -> Self {
        KeyHeap {
            k: 0,
            h: Vec::new(),
        }
    }
}

impl<T: Real> KeyHeap<T> {
    fn clear(&mut self, k: usize) {
        self.k = k;
        self.h.clear();
        self.h.reserve(k);
    }

    /// Keys at or above this cannot enter.
    #[inline]
    fn bound(&self) -> T::Key {
        if self.h.len() < self.k {
            T::NO_KEY
        } else {
            self.h[0]
        }
    }

    #[inline]
    fn offer(&mut self, key: T::Key) {
        if self.h.len() < self.k {
            if key >= T::NO_KEY {
                return;
            }
            // Sift up.
            let mut i = self.h.len();
            self.h.push(key);
            while i > 0 {
                let p = (i - 1) / 2;
                if self.h[p] >= key {
                    break;
                }
                self.h[i] = self.h[p];
                i = p;
            }
            self.h[i] = key;
        } else if key < self.h[0] {
            // Replace the top and sift down.
            let n = self.h.len();
            let mut i = 0;
            loop {
                let l = 2 * i + 1;
                if l >= n {
                    break;
                }
                let r = l + 1;
                let c = if r < n && self.h[r] > self.h[l] { r } else { l };
                if self.h[c] <= key {
                    break;
                }
                self.h[i] = self.h[c];
                i = c;
            }
            self.h[i] = key;
        }
    }

    /// Writes the held keys ascending into `out` (which has room for exactly k).
    fn drain_sorted(&mut self, out: &mut [T::Key]) {
        debug_assert_eq!(self.h.len(), out.len());
        self.h.sort_unstable();
        out.copy_from_slice(&self.h);
    }
}
