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
//! (`d2 >= 0` and is never NaN, so its bits order like its value). A box is
//! pruned only if its lower bound is strictly greater than the current bound,
//! and the lower bound is computed with the same f32 operations, in the same
//! order, as [`trident_core::dist2`] on the nearest face: rounding is monotone,
//! so the bound never exceeds the computed distance of any point inside.

use trident_core::Point;

/// Points per leaf bucket (leaves hold at most this many; unused slots are padding).
pub(super) const LEAF: usize = 8;

/// Below this many points a subtree is partitioned on the current thread.
const PAR_BUILD: usize = 1 << 14;

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
        let gx = (self.lo[0] - q[0]).max(q[0] - self.hi[0]).max(0.0);
        let gy = (self.lo[1] - q[1]).max(q[1] - self.hi[1]).max(0.0);
        let gz = (self.lo[2] - q[2]).max(q[2] - self.hi[2]).max(0.0);
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

/// The kd-tree over B.
pub(super) struct KdTree {
    /// Number of leaves, a power of two; leaf `l` is node `nleaves + l`.
    nleaves: usize,
    /// Node boxes in 1-based heap order (slot 0 unused).
    boxes: Vec<Aabb>,
    leaves: Vec<Leaf>,
}

/// First item of leaf `l` when `n` items are spread over `nleaves` leaves.
#[inline]
fn leaf_start(l: usize, n: usize, nleaves: usize) -> usize {
    ((l as u128 * n as u128) / nleaves as u128) as usize
}

/// Reorders `items` (the items of leaves `l0..l1`) so that each leaf's items are
/// contiguous, splitting at the median of the widest axis.
fn partition(items: &mut [Item], l0: usize, l1: usize, n: usize, nleaves: usize) {
    if l1 - l0 <= 1 {
        return;
    }
    let mut bb = Aabb::EMPTY;
    for it in items.iter() {
        bb.add(&it.p);
    }
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
    let (left, right) = items.split_at_mut(split);
    if left.len() + right.len() >= PAR_BUILD {
        rayon::join(
            || partition(left, l0, lm, n, nleaves),
            || partition(right, lm, l1, n, nleaves),
        );
    } else {
        partition(left, l0, lm, n, nleaves);
        partition(right, lm, l1, n, nleaves);
    }
}

impl KdTree {
    /// Builds the tree over `b` (non-empty, at most `u32::MAX` points), in
    /// parallel on the current rayon pool.
    pub(super) fn build(b: &[Point]) -> KdTree {
        use rayon::prelude::*;
        assert!(!b.is_empty() && b.len() <= u32::MAX as usize);
        let n = b.len();
        let nleaves = n.div_ceil(LEAF).next_power_of_two();
        // Leaves hold >= 1 point each (n >= nleaves), and the search stack holds
        // at most one entry per level: depth = log2(nleaves) <= 29 < STACK.
        debug_assert!(nleaves.trailing_zeros() < STACK as u32);

        let mut items: Vec<Item> = b
            .par_iter()
            .enumerate()
            .map(|(i, p)| Item {
                p: *p,
                id: i as u32,
            })
            .collect();
        partition(&mut items, 0, nleaves, n, nleaves);

        let mut leaves = vec![Leaf::PAD; nleaves];
        let mut boxes = vec![Aabb::EMPTY; 2 * nleaves];
        {
            let (_, leaf_boxes) = boxes.split_at_mut(nleaves);
            leaves
                .par_iter_mut()
                .zip(leaf_boxes.par_iter_mut())
                .enumerate()
                .for_each(|(l, (leaf, bb))| {
                    let s = leaf_start(l, n, nleaves);
                    let e = leaf_start(l + 1, n, nleaves);
                    for (slot, it) in items[s..e].iter().enumerate() {
                        leaf.x[slot] = it.p[0];
                        leaf.y[slot] = it.p[1];
                        leaf.z[slot] = it.p[2];
                        leaf.id[slot] = it.id;
                        bb.add(&it.p);
                    }
                });
        }
        for p in (1..nleaves).rev() {
            boxes[p] = boxes[2 * p].union(&boxes[2 * p + 1]);
        }
        KdTree {
            nleaves,
            boxes,
            leaves,
        }
    }

    /// The smallest key `(dist2(q, b_j), j)` below `bound`, or `bound` itself if
    /// no point of B has a smaller key.
    pub(super) fn nearest(&self, q: &Point, bound: u64) -> u64 {
        let mut best = bound;
        let mut best_d2 = key_d2(best);
        if self.boxes[1].lower_bound(q) > best_d2 {
            return best;
        }
        let mut stack = [(0u32, 0f32); STACK];
        let mut sp = 0usize;
        let mut node = 1usize;
        loop {
            if node >= self.nleaves {
                let leaf = &self.leaves[node - self.nleaves];
                let d = leaf.distances(q);
                let mut any = false;
                for s in 0..LEAF {
                    any |= d[s] <= best_d2;
                }
                if any {
                    for s in 0..LEAF {
                        let k = key(d[s], leaf.id[s]);
                        best = best.min(k);
                    }
                    best_d2 = key_d2(best);
                }
            } else {
                let (c0, c1) = (2 * node, 2 * node + 1);
                let d0 = self.boxes[c0].lower_bound(q);
                let d1 = self.boxes[c1].lower_bound(q);
                let (near, dn, far, df) = if d1 < d0 {
                    (c1, d1, c0, d0)
                } else {
                    (c0, d0, c1, d1)
                };
                if df <= best_d2 {
                    stack[sp] = (far as u32, df);
                    sp += 1;
                }
                if dn <= best_d2 {
                    node = near;
                    continue;
                }
            }
            loop {
                if sp == 0 {
                    return best;
                }
                sp -= 1;
                let (n, d) = stack[sp];
                if d <= best_d2 {
                    node = n as usize;
                    break;
                }
            }
        }
    }

    /// The `heap.capacity_k` smallest keys `(dist2(q, b_j), j)`, via `heap`
    /// (cleared first), sorted ascending into `out`.
    pub(super) fn knn(&self, q: &Point, heap: &mut KeyHeap, out: &mut [u64]) {
        heap.clear(out.len());
        if out.is_empty() {
            return;
        }
        let mut bound_d2 = key_d2(heap.bound());
        let mut stack = [(0u32, 0f32); STACK];
        let mut sp = 0usize;
        let mut node = 1usize;
        if self.boxes[1].lower_bound(q) <= bound_d2 {
            loop {
                if node >= self.nleaves {
                    let leaf = &self.leaves[node - self.nleaves];
                    let d = leaf.distances(q);
                    let mut any = false;
                    for s in 0..LEAF {
                        any |= d[s] <= bound_d2;
                    }
                    if any {
                        for s in 0..LEAF {
                            heap.offer(key(d[s], leaf.id[s]));
                        }
                        bound_d2 = key_d2(heap.bound());
                    }
                } else {
                    let (c0, c1) = (2 * node, 2 * node + 1);
                    let d0 = self.boxes[c0].lower_bound(q);
                    let d1 = self.boxes[c1].lower_bound(q);
                    let (near, dn, far, df) = if d1 < d0 {
                        (c1, d1, c0, d0)
                    } else {
                        (c0, d0, c1, d1)
                    };
                    if df <= bound_d2 {
                        stack[sp] = (far as u32, df);
                        sp += 1;
                    }
                    if dn <= bound_d2 {
                        node = near;
                        continue;
                    }
                }
                let mut next = None;
                while sp > 0 {
                    sp -= 1;
                    let (n, d) = stack[sp];
                    if d <= bound_d2 {
                        next = Some(n as usize);
                        break;
                    }
                }
                match next {
                    Some(n) => node = n,
                    None => break,
                }
            }
        }
        heap.drain_sorted(out);
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
