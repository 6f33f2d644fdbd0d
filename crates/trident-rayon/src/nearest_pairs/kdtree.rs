//! A balanced, implicit kd-tree over B with a tight box per node and fixed-size,
//! padded leaf buckets.
//!
//! Why this shape: median splits keep every leaf at `LEAF` points or fewer
//! whatever the distribution (clustered input does not pile up in a few cells
//! the way it does in a uniform grid), the tree needs no pointers (node `p` has
//! children `2p` and `2p + 1`), and the per-node boxes are tight, so empty
//! space between clusters is pruned at once.
//!
//! Exactness: candidates are ordered by the key `(d2, j)` packed into a `u64`
//! (`d2 >= 0` and is never NaN, so its bits order like its value). Every node
//! also knows the smallest index below it, so its box has a lower-bound *key*
//! `(lower bound of d2, min j)`, below the key of every point inside; a box is
//! pruned when that key is not strictly below the current bound. The lower
//! bound of d2 is computed with the same f32 operations, in the same order, as
//! [`trident_core::dist2`] on the nearest face: rounding is monotone, so it
//! never exceeds the computed distance of any point inside.
//!
//! Ties: pruning on keys rather than on distances alone is what keeps many
//! equidistant points (1e5 copies of one point) from making a query visit
//! every leaf: a box at the best distance so far is entered only if it may
//! hold a smaller index, and the child with the smaller key is searched first,
//! so a query walks to the smallest index about as directly as to the nearest
//! point.

use std::sync::atomic::{AtomicU64, Ordering};

use trident_core::Point;

/// Points per leaf bucket (leaves hold at most this many; unused slots are padding).
pub(super) const LEAF: usize = 8;

/// Below this many points a subtree is partitioned on the current thread.
/// Small enough to give 16 cores a hundred subtrees to balance (at 2^14 the
/// build scaled 3x from 1 to 16 threads on the GPU machine).
const PAR_BUILD: usize = 1 << 12;
/// From this many points a node's box is a parallel reduction.
const PAR_BOX: usize = 1 << 15;

/// The key of "nothing found yet": `d2 = +inf`, `j = u32::MAX`. Every real
/// point has `j < u32::MAX` (B has at most `u32::MAX` points), so even a point
/// at infinite f32 distance beats it, while padding slots never do.
pub(super) const NO_KEY: u64 = key(f32::INFINITY, u32::MAX);

/// Packs `(d2, j)` so that `u64` order is `(d2, j)` order for `d2 >= 0`.
#[inline(always)]
pub(super) const fn key(d2: f32, j: u32) -> u64 {
    ((d2.to_bits() as u64) << 32) | j as u64
}

/// The distance part of a key.
#[inline(always)]
pub(super) fn key_d2(k: u64) -> f32 {
    f32::from_bits((k >> 32) as u32)
}

/// The widest bound that still accepts every point at distance `<= d2`
/// (whatever its index): `(d2, u32::MAX)`.
#[inline(always)]
pub(super) fn bound_at(d2: f32) -> u64 {
    key(d2, u32::MAX)
}

/// An axis-aligned box.
#[derive(Clone, Copy, Debug)]
struct Aabb {
    lo: [f32; 3],
    hi: [f32; 3],
}

impl Aabb {
    const EMPTY: Aabb = Aabb {
        lo: [f32::INFINITY; 3],
        hi: [f32::NEG_INFINITY; 3],
    };

    fn add(&mut self, p: &Point) {
        for d in 0..3 {
            self.lo[d] = self.lo[d].min(p[d]);
            self.hi[d] = self.hi[d].max(p[d]);
        }
    }

    fn union(&self, o: &Aabb) -> Aabb {
        let mut r = *self;
        for d in 0..3 {
            r.lo[d] = r.lo[d].min(o.lo[d]);
            r.hi[d] = r.hi[d].max(o.hi[d]);
        }
        r
    }

    /// A lower bound of `dist2(q, p)` for every `p` in the box, computed so that
    /// it is never above the f32 `dist2` of such a `p` (see the module docs).
    #[inline(always)]
    fn lower_bound(&self, q: &Point) -> f32 {
        // For q below lo the gap is fl(lo - q) <= fl(p - q); above hi it is
        // fl(q - hi) <= fl(q - p) = |fl(p - q)|; inside it is 0.
        // Plain comparisons rather than f32::max: no NaN can occur here, and
        // they compile to single max instructions.
        #[inline(always)]
        fn gap(lo: f32, hi: f32, x: f32) -> f32 {
            let a = lo - x;
            let b = x - hi;
            let g = if a > b { a } else { b };
            if g > 0.0 { g } else { 0.0 }
        }
        let gx = gap(self.lo[0], self.hi[0], q[0]);
        let gy = gap(self.lo[1], self.hi[1], q[1]);
        let gz = gap(self.lo[2], self.hi[2], q[2]);
        gx * gx + gy * gy + gz * gz
    }
}

/// One leaf bucket, structure of arrays so the distance loop vectorises.
/// Padding slots sit at +inf (their distance is +inf) with index `u32::MAX`, so
/// their key is [`NO_KEY`] and never beats any bound.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Leaf {
    x: [f32; LEAF],
    y: [f32; LEAF],
    z: [f32; LEAF],
    id: [u32; LEAF],
}

impl Leaf {
    const PAD: Leaf = Leaf {
        x: [f32::INFINITY; LEAF],
        y: [f32::INFINITY; LEAF],
        z: [f32::INFINITY; LEAF],
        id: [u32::MAX; LEAF],
    };

    /// `dist2(q, p)` for every slot, in the operation order of
    /// [`trident_core::dist2`] (`q - p`: the sign of a difference does not
    /// change its square's bits).
    #[inline(always)]
    fn distances(&self, q: &Point) -> [f32; LEAF] {
        let mut d = [0.0f32; LEAF];
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
struct Item {
    p: Point,
    id: u32,
}

/// The splitting plane of an internal node: its left subtree holds points with
/// `p[dim] <= v`, its right subtree points with `p[dim] >= v`.
#[derive(Clone, Copy, Debug, Default)]
struct Split {
    v: f32,
    dim: u32,
}

/// Queries located together by [`KdTree::locate`].
pub(super) const BATCH: usize = 8;

/// Where a query's descent ended: its leaf node and `min g^2` over the split
/// planes passed (every point outside the leaf is at least that far).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Located {
    node: usize,
    gmin: f32,
}

/// Receives the points of the leaves a search visits and says how far to look.
pub(super) trait Visitor {
    /// Keys at or above this cannot be accepted: boxes whose lower-bound key
    /// is not below it are skipped.
    fn bound(&self) -> u64;
    /// The distance part of [`Visitor::bound`].
    #[inline(always)]
    fn bound_d2(&self) -> f32 {
        key_d2(self.bound())
    }
    /// Offers every slot of a leaf (padding slots have distance +inf and index
    /// `u32::MAX`, i.e. the key [`NO_KEY`]); `d` are the slots' distances.
    fn visit(&mut self, d: &[f32; LEAF], id: &[u32; LEAF]);
}

/// The kd-tree over B.
pub(super) struct KdTree {
    /// Number of leaves, a power of two; leaf `l` is node `nleaves + l`.
    nleaves: usize,
    /// `log2(nleaves)`.
    depth: u32,
    /// Split planes of the internal nodes `1..nleaves` (slot 0 unused).
    splits: Vec<Split>,
    /// Node boxes in 1-based heap order (slot 0 unused).
    boxes: Vec<Aabb>,
    /// The smallest index of B below each node, same order as `boxes`.
    minid: Vec<u32>,
    leaves: Vec<Leaf>,
}

/// First item of leaf `l` when `n` items are spread over `nleaves` leaves.
#[inline]
fn leaf_start(l: usize, n: usize, nleaves: usize) -> usize {
    ((l as u128 * n as u128) / nleaves as u128) as usize
}

/// Reorders `items` (the items of leaves `l0..l1`) so that each leaf's items are
/// contiguous, splitting at the median of the widest axis, and records the
/// split planes (`splits[node] = dim << 32 | bits`; atomics only so that the
/// two halves can be built on different threads).
fn partition(items: &mut [Item], l0: usize, l1: usize, n: usize, splits: &[AtomicU64]) {
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
    splits[node].store(((dim as u64) << 32) | v.to_bits() as u64, Ordering::Relaxed);
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
/// f32 distance of every point across it (monotone rounding, as for boxes), and
/// which child `q` falls in.
#[inline(always)]
fn plane(q: &Point, s: Split) -> (f32, usize) {
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

impl KdTree {
    /// Builds the tree over `b` (non-empty, at most `u32::MAX` points), in
    /// parallel on the current rayon pool.
    pub(super) fn build(b: &[Point]) -> KdTree {
        use rayon::prelude::*;
        assert!(!b.is_empty() && b.len() <= u32::MAX as usize);
        let n = b.len();
        let nleaves = n.div_ceil(LEAF).next_power_of_two();
        let depth = nleaves.trailing_zeros();
        // Leaves hold >= 1 point each (n >= nleaves); depth <= 29 < STACK.
        debug_assert!((depth as usize) < STACK);

        let mut items: Vec<Item> = b
            .par_iter()
            .enumerate()
            .map(|(i, p)| Item {
                p: *p,
                id: i as u32,
            })
            .collect();
        let splits: Vec<AtomicU64> = (0..nleaves).map(|_| AtomicU64::new(0)).collect();
        partition(&mut items, 0, nleaves, n, &splits);
        let splits = splits
            .into_iter()
            .map(|s| {
                let s = s.into_inner();
                Split {
                    v: f32::from_bits(s as u32),
                    dim: (s >> 32) as u32,
                }
            })
            .collect();

        // Each leaf, its box and its smallest id are built by the task that
        // fills the leaf, straight into fresh memory: on 16 cores, filling
        // 11 MB with padding on one thread first cost as much as all the
        // parallel work of this step.
        let (leaves, tops): (Vec<Leaf>, Vec<(Aabb, u32)>) = (0..nleaves)
            .into_par_iter()
            .map(|l| {
                let (mut leaf, mut bb, mut lo) = (Leaf::PAD, Aabb::EMPTY, u32::MAX);
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
        let mut boxes: Vec<Aabb> = (0..2 * nleaves)
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
            nleaves,
            depth,
            splits,
            boxes,
            minid,
            leaves,
        }
    }

    #[inline(always)]
    fn scan<V: Visitor>(&self, node: usize, q: &Point, v: &mut V) {
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
    fn box_key(&self, node: usize, q: &Point) -> u64 {
        key(self.boxes[node].lower_bound(q), self.minid[node])
    }

    /// Depth-first branch and bound below `node`, the child with the smaller
    /// lower-bound key first.
    fn descend<V: Visitor>(&self, node: usize, q: &Point, v: &mut V) {
        let mut stack = [(0u32, 0u64); STACK];
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
    pub(super) fn locate(&self, qs: &[Point], out: &mut [Located; BATCH]) {
        debug_assert!(qs.len() <= BATCH);
        let n = qs.len();
        let mut node = [1usize; BATCH];
        let mut gmin = [f32::INFINITY; BATCH];
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
    pub(super) fn finish<V: Visitor>(&self, q: &Point, at: Located, v: &mut V) {
        let mut node = at.node;
        self.scan(node, q, v);
        // Every point outside q's leaf lies across one of the planes.
        if key(at.gmin, 0) >= v.bound() {
            return;
        }
        while node > 1 {
            let sib = node ^ 1;
            let (g, _) = plane(q, self.splits[node >> 1]);
            if key(g, self.minid[sib]) < v.bound() && self.box_key(sib, q) < v.bound() {
                self.descend(sib, q, v);
            }
            node >>= 1;
        }
    }

    /// The smallest key `(dist2(q, b_j), j)` below `bound`, or `bound` itself if
    /// no point of B has a smaller key; `at` is `q`'s [`KdTree::locate`] result.
    pub(super) fn nearest(&self, q: &Point, at: Located, bound: u64) -> u64 {
        let mut v = Best {
            key: bound,
            d2: key_d2(bound),
        };
        self.finish(q, at, &mut v);
        v.key
    }

    /// The `out.len()` smallest keys `(dist2(q, b_j), j)`, ascending, using
    /// `heap` as scratch; `at` is `q`'s [`KdTree::locate`] result. `out.len()`
    /// must not exceed |B|.
    pub(super) fn knn(&self, q: &Point, at: Located, heap: &mut KeyHeap, out: &mut [u64]) {
        heap.clear(out.len());
        if !out.is_empty() {
            self.finish(q, at, heap);
        }
        heap.drain_sorted(out);
    }
}

/// Visitor of [`KdTree::nearest`]: the single best key.
struct Best {
    key: u64,
    d2: f32,
}

impl Visitor for Best {
    #[inline(always)]
    fn bound(&self) -> u64 {
        self.key
    }
    #[inline(always)]
    fn bound_d2(&self) -> f32 {
        self.d2
    }
    #[inline(always)]
    fn visit(&mut self, d: &[f32; LEAF], id: &[u32; LEAF]) {
        for s in 0..LEAF {
            self.key = self.key.min(key(d[s], id[s]));
        }
        self.d2 = key_d2(self.key);
    }
}

impl Visitor for KeyHeap {
    #[inline(always)]
    fn bound(&self) -> u64 {
        KeyHeap::bound(self)
    }
    fn visit(&mut self, d: &[f32; LEAF], id: &[u32; LEAF]) {
        for s in 0..LEAF {
            self.offer(key(d[s], id[s]));
        }
    }
}

/// Depth-first search stack size: entries sit at strictly increasing depths, and
/// the depth is at most 29 (`u32::MAX` points in leaves of 8).
const STACK: usize = 32;

/// A bounded max-heap of keys holding the k smallest offered so far.
#[derive(Default)]
pub(super) struct KeyHeap {
    k: usize,
    h: Vec<u64>,
}

impl KeyHeap {
    fn clear(&mut self, k: usize) {
        self.k = k;
        self.h.clear();
        self.h.reserve(k);
    }

    /// Keys at or above this cannot enter.
    #[inline]
    fn bound(&self) -> u64 {
        if self.h.len() < self.k {
            NO_KEY
        } else {
            self.h[0]
        }
    }

    #[inline]
    fn offer(&mut self, key: u64) {
        if self.h.len() < self.k {
            if key >= NO_KEY {
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
    fn drain_sorted(&mut self, out: &mut [u64]) {
        debug_assert_eq!(self.h.len(), out.len());
        self.h.sort_unstable();
        out.copy_from_slice(&self.h);
    }
}
