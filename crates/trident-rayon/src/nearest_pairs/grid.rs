//! A uniform grid over B for `closest_pairs` on evenly spread input.
//!
//! Why beside the kd-tree: `closest_pairs` shares a global bound (the k-th
//! best distance any worker has seen), which on a large A soon shrinks below
//! the spacing of B. From then on a query only has to look at the points of
//! its own cell: one cell lookup and a few distances, in any query order. The
//! kd-tree pays a descent of ~16 levels per query and needs A sorted into a
//! spatial order to keep that descent in cache; its median-split build also
//! scales poorly (on 16 cores it and the order of A were two thirds of a
//! pairs-1M-400K call). The grid is built by one counting pass and one
//! scatter, both parallel, and A is searched in input order.
//!
//! When not: a grid is only as good as its fullest cells. [`Grid::build`]
//! measures the occupancy a point of B sees (`sum count^2 / |B|`) and declines
//! clustered input, which then takes the kd-tree (it balances any
//! distribution). A query whose ball would reach across much of the grid
//! (far outside B's box, or in a hole of B) is not searched here either:
//! [`Grid::nearest`] declines it and the caller asks a kd-tree, built only
//! if some query needs it, so no query ever walks every cell.
//!
//! Exactness: a query scans its own cell, then (once it has a candidate)
//! every cell that overlaps the ball of its best distance so far. The
//! ball's cell range is computed with the very formula that placed B's
//! points (monotone in the coordinate), its radius enlarged past the
//! rounding of f32 `dist2` (below 4e-7 relative, plus an absolute term for
//! subnormal squares), so every point that could beat the best key
//! `(d2, j)` is in range. A cell in range is skipped only when a lower bound
//! from its nominal geometry (f64, widened by a margin for the rounding of
//! the assignment, then lowered by 1e-5 relative) is no better than the best
//! key with index 0: so a point at an equal distance with a smaller index is
//! never skipped. The result is the exact nearest under the contract's key,
//! whatever the cell sizes.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use trident_core::Point;

use super::order::SendPtr;
use super::real::{key, key_d2};
use crate::prefetch;

/// Mean points of B per cell the grid aims at: small cells keep the scan of
/// a query's own cell short; neighbours are rarely needed once the bound is
/// below the spacing.
const OCCUPANCY: f64 = 2.0;
/// The grid is declined when a point of B sees, on average, more than this
/// many points in its own cell (uniform random input sees `OCCUPANCY + 1`).
const MAX_SEEN: f64 = 6.0 * (OCCUPANCY + 1.0);
/// Most cells along one axis (keeps the cell index in `u32` and the tables
/// bounded for flat or needle-shaped input).
const MAX_DIM: u32 = 1 << 10;
/// Most rings of cells [`Grid::nearest`] searches for a first candidate, and
/// most cells of the box around its best distance: beyond them it hands the
/// query to the kd-tree. Evenly spread queries inside B's box never get near
/// either (a ring or two, a box of a few cells).
const MAX_RING: i64 = 3;
/// See [`MAX_RING`].
const MAX_BOX_CELLS: i64 = 512;
/// Below this many points of B the kd-tree is used: its build is cheap there
/// and the grid's tables would not pay for themselves.
pub(super) const MIN_POINTS: usize = 1 << 14;

/// Where a query's search starts: its cell and that cell's points.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Start {
    cell: [u32; 3],
    s: u32,
    e: u32,
}

/// One point of B in cell order, with its index: 16 bytes, four per line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct GridPoint {
    p: Point,
    id: u32,
}

/// The grid over B.
pub(super) struct Grid {
    /// Low corner of B's bounding box.
    lo: [f64; 3],
    /// Cell width per axis.
    w: [f64; 3],
    /// Cells per unit length per axis (`1 / w`, 0 for a flat axis).
    inv: [f64; 3],
    /// Absolute slack of a cell face: covers the rounding of the assignment.
    margin: [f64; 3],
    dims: [u32; 3],
    /// `starts[c]..starts[c + 1]` are the points of cell `c` in `pts`.
    starts: Vec<u32>,
    pts: Vec<GridPoint>,
    /// The occupancy a point of B saw (for the trace).
    pub(super) seen: f64,
}

impl Grid {
    /// The grid over `b` (non-empty, at most `u32::MAX` points, finite), on the
    /// current pool; `None` when `b` is too small or too unevenly spread for a
    /// grid to pay (see the module docs).
    pub(super) fn build(b: &[Point]) -> Option<Grid> {
        let n = b.len();
        if n < MIN_POINTS {
            return None;
        }
        let (lo, hi) = bounds(b);
        let ext: [f64; 3] = [0, 1, 2].map(|d| hi[d] - lo[d]);
        let dims = dims_for(ext, n as f64 / OCCUPANCY)?;
        let inv = [0, 1, 2].map(|d| {
            if ext[d] > 0.0 {
                dims[d] as f64 / ext[d]
            } else {
                0.0
            }
        });
        let w = [0, 1, 2].map(|d| ext[d] / dims[d] as f64);
        let margin = [0, 1, 2].map(|d| (lo[d].abs() + hi[d].abs()) * 1e-12);
        let mut grid = Grid {
            lo,
            w,
            inv,
            margin,
            dims,
            starts: Vec::new(),
            pts: Vec::new(),
            seen: 0.0,
        };
        let ncells = dims.iter().map(|&d| d as usize).product::<usize>();
        let cells: Vec<u32> = b.par_iter().map(|p| grid.cell_index(p)).collect();
        let counts: Vec<AtomicU32> = (0..ncells).map(|_| AtomicU32::new(0)).collect();
        cells.par_iter().with_min_len(4096).for_each(|&c| {
            counts[c as usize].fetch_add(1, Ordering::Relaxed);
        });
        let counts: Vec<u32> = counts.into_iter().map(AtomicU32::into_inner).collect();
        grid.seen = counts.par_iter().map(|&c| c as f64 * c as f64).sum::<f64>() / n as f64;
        if grid.seen > MAX_SEEN {
            return None;
        }
        let mut starts = Vec::with_capacity(ncells + 1);
        let mut run = 0u32;
        for &c in &counts {
            starts.push(run);
            run += c;
        }
        starts.push(run);
        // Scatter the indices by cell, then sort each cell's few indices: the
        // scatter's order within a cell depends on the schedule, the sorted
        // layout does not (results never depend on it either: the search
        // takes the minimum key over a cell).
        let cursor: Vec<AtomicU32> = starts[..ncells]
            .iter()
            .map(|&s| AtomicU32::new(s))
            .collect();
        let mut ids: Vec<u32> = Vec::with_capacity(n);
        let out = SendPtr(ids.as_mut_ptr());
        cells
            .par_iter()
            .enumerate()
            .with_min_len(4096)
            .for_each(|(i, &c)| {
                let slot = cursor[c as usize].fetch_add(1, Ordering::Relaxed);
                let out = &out;
                // SAFETY: cell c's cursor runs from starts[c] over exactly
                // counts[c] slots, the cells' ranges tile 0..n, and each
                // fetch_add hands out a slot once: every slot below n is
                // written exactly once and nothing reads `ids` meanwhile.
                unsafe { *out.0.add(slot as usize) = i as u32 };
            });
        // SAFETY: every slot below n was written above; u32 has no drop.
        unsafe { ids.set_len(n) };
        let ptr = SendPtr(ids.as_mut_ptr());
        (0..ncells)
            .into_par_iter()
            .with_min_len(1024)
            .for_each(|c| {
                let (s, e) = (starts[c] as usize, starts[c + 1] as usize);
                let ptr = &ptr;
                // SAFETY: the ranges starts[c]..starts[c + 1] are disjoint
                // and inside ids, and each is touched by this task only.
                let cell = unsafe { std::slice::from_raw_parts_mut(ptr.0.add(s), e - s) };
                cell.sort_unstable();
            });
        grid.pts = ids
            .par_iter()
            .map(|&i| GridPoint {
                p: b[i as usize],
                id: i,
            })
            .collect();
        grid.starts = starts;
        Some(grid)
    }

    /// The cell coordinates of `q`, clamped to the grid (a query outside B's
    /// box gets the nearest cell; the bounds below stay valid for it).
    #[inline(always)]
    fn cell_of(&self, q: &Point) -> [u32; 3] {
        map3([0, 1, 2], |d| self.axis_cell(d, q[d] as f64))
    }

    #[inline(always)]
    fn linear(&self, c: [u32; 3]) -> usize {
        (c[2] as usize * self.dims[1] as usize + c[1] as usize) * self.dims[0] as usize
            + c[0] as usize
    }

    fn cell_index(&self, p: &Point) -> u32 {
        self.linear(self.cell_of(p)) as u32
    }

    /// Lower face of cell `i` on axis `d`, minus the margin.
    #[inline(always)]
    fn face_lo(&self, d: usize, i: i64) -> f64 {
        self.lo[d] + i as f64 * self.w[d] - self.margin[d]
    }

    /// Upper face of cell `i` on axis `d`, plus the margin.
    #[inline(always)]
    fn face_hi(&self, d: usize, i: i64) -> f64 {
        self.lo[d] + (i + 1) as f64 * self.w[d] + self.margin[d]
    }

    /// Offers the points `s..e` (in cell order) to `best`.
    #[inline(always)]
    fn scan(&self, s: u32, e: u32, q: &Point, best: &mut u64) {
        for g in &self.pts[s as usize..e as usize] {
            let dx = q[0] - g.p[0];
            let dy = q[1] - g.p[1];
            let dz = q[2] - g.p[2];
            let d2 = dx * dx + dy * dy + dz * dz;
            *best = (*best).min(key(d2, g.id));
        }
    }

    /// Offers the points of cell `c` to `best`.
    #[inline(always)]
    fn scan_cell(&self, c: usize, q: &Point, best: &mut u64) {
        self.scan(self.starts[c], self.starts[c + 1], q, best);
    }

    /// The start of the search of each query of `qs` (`out` as long).
    ///
    /// Once the bound is small a query costs two dependent cache misses (its
    /// cell's entry in `starts`, then the cell's points) and little else. So
    /// a whole chunk of queries is located in stages: every cell first, with
    /// its `starts` entry prefetched; then every range, with its first points
    /// prefetched; the searches then find their data in cache (on one thread
    /// this took pairs-1M-400K's search from 98 to ~57 ms and less).
    #[inline]
    pub(super) fn locate(&self, qs: &[Point], out: &mut [Start]) {
        debug_assert_eq!(qs.len(), out.len());
        for (o, q) in out.iter_mut().zip(qs) {
            let cell = self.cell_of(q);
            let l = self.linear(cell);
            prefetch(&self.starts[l]);
            *o = Start {
                cell,
                s: l as u32,
                e: 0,
            };
        }
        for o in out.iter_mut() {
            let l = o.s as usize;
            (o.s, o.e) = (self.starts[l], self.starts[l + 1]);
            if let Some(g) = self.pts.get(o.s as usize) {
                prefetch(g);
            }
        }
    }

    /// The smallest key `(dist2(q, b_j), j)` below `bound`, or `bound` itself
    /// if no point of B has a smaller key; `at` is `q`'s [`Grid::locate`].
    ///
    /// Own cell first; while nothing is found (a bound of +inf), rings of
    /// cells around it; then every cell that overlaps the ball of the best
    /// distance so far, each unless its box is provably no better. The
    /// ball's index range comes from the same monotone formula that placed
    /// B's points, its radius enlarged past f32 `dist2`'s rounding, so it
    /// holds every point that could beat `best` (see the module docs).
    ///
    /// `None` when the search would visit more than [`MAX_RING`] rings or a
    /// box of more than [`MAX_BOX_CELLS`] cells: a query far outside B's box,
    /// or in a hole of B, whose ball reaches across much of the grid. The
    /// caller then asks the kd-tree, whose node boxes prune such a search.
    pub(super) fn nearest(&self, q: &Point, at: Start, bound: u64) -> Option<u64> {
        let mut best = bound;
        self.scan(at.s, at.e, q, &mut best);
        let ci = map3(at.cell, |v| v as i64);
        let top = map3(self.dims, |v| v as i64 - 1);
        let mut r = 0i64;
        while key_d2(best) == f32::INFINITY {
            r += 1;
            if (0..3).all(|d| ci[d] - r < 0 && ci[d] + r > top[d]) {
                return Some(best);
            }
            if r > MAX_RING {
                return None;
            }
            let lo = map3(ci, |c| c - r);
            let hi = map3(ci, |c| c + r);
            self.visit_box(
                q,
                lo,
                hi,
                |c| (0..3).any(|d| (c[d] - ci[d]).abs() == r),
                &mut best,
            );
        }
        // Squares below f32's normal range round by an absolute 1.4e-45 each.
        let rad = (key_d2(best) as f64 * (1.0 + 2e-5) + 1e-44).sqrt();
        let lo = map3([0, 1, 2], |d| self.axis_cell(d, q[d] as f64 - rad) as i64);
        let hi = map3([0, 1, 2], |d| self.axis_cell(d, q[d] as f64 + rad) as i64);
        let cells: i64 = (0..3).map(|d| hi[d] - lo[d] + 1).product();
        if cells > MAX_BOX_CELLS {
            return None;
        }
        // Cells inside the rings already scanned are skipped.
        self.visit_box(
            q,
            lo,
            hi,
            |c| (0..3).any(|d| (c[d] - ci[d]).abs() > r),
            &mut best,
        );
        Some(best)
    }

    /// The cell index along axis `d` of coordinate `x`, clamped to the grid.
    #[inline(always)]
    fn axis_cell(&self, d: usize, x: f64) -> u32 {
        // `as u32` saturates: below the box (negative) gives 0.
        (((x - self.lo[d]) * self.inv[d]) as u32).min(self.dims[d] - 1)
    }

    /// Scans the cells `c` with `lo <= c <= hi` (clipped to the grid) for which
    /// `take(c)` holds, unless the cell's box is provably no better than `best`.
    #[inline(always)]
    fn visit_box(
        &self,
        q: &Point,
        lo: [i64; 3],
        hi: [i64; 3],
        take: impl Fn([i64; 3]) -> bool,
        best: &mut u64,
    ) {
        let lo = map3([0, 1, 2], |d| lo[d].max(0));
        let hi = map3([0, 1, 2], |d| hi[d].min(self.dims[d] as i64 - 1));
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for x in lo[0]..=hi[0] {
                    let cell = [x, y, z];
                    if !take(cell) {
                        continue;
                    }
                    let mut lb = 0.0f64;
                    for d in 0..3 {
                        let g = (self.face_lo(d, cell[d]) - q[d] as f64)
                            .max(q[d] as f64 - self.face_hi(d, cell[d]))
                            .max(0.0);
                        lb += g * g;
                    }
                    if key(safe_d2(lb), 0) < *best {
                        self.scan_cell(self.linear(map3(cell, |v| v as u32)), q, best);
                    }
                }
            }
        }
    }
}

/// `[f(a[0]), f(a[1]), f(a[2])]`: `array::map` in the per-query paths,
/// written out so that it compiles to three plain expressions whatever the
/// inliner decides about `array::map`'s machinery (after an unrelated change
/// to the crate, it stopped doing so and the query loop ran about 20% more
/// instructions).
#[inline(always)]
fn map3<A: Copy, B>(a: [A; 3], f: impl Fn(A) -> B) -> [B; 3] {
    [f(a[0]), f(a[1]), f(a[2])]
}

/// A squared distance `v` (in f64, from nominal geometry) as an f32 that is
/// never above the computed f32 `dist2` of a point at true distance
/// `sqrt(v)` or more: lowered by 1e-5 relative, and 0 where f32 squares
/// would be subnormal (their rounding is then not relative).
#[inline(always)]
fn safe_d2(v: f64) -> f32 {
    if v < 1e-30 {
        0.0
    } else {
        (v * (1.0 - 1e-5)) as f32
    }
}

/// B's bounding box in f64.
fn bounds(b: &[Point]) -> ([f64; 3], [f64; 3]) {
    let (lo, hi) = super::order::bounds(b);
    (lo.map(f64::from), hi.map(f64::from))
}

/// Cells per axis for about `target` cells of equal width over the extents
/// `ext` (flat axes get one cell); `None` when every axis is flat (all of B at
/// one point: the kd-tree's index pruning handles that).
fn dims_for(ext: [f64; 3], target: f64) -> Option<[u32; 3]> {
    let flat = ext.map(|e| e <= 0.0);
    let live = flat.iter().filter(|f| !**f).count();
    if live == 0 {
        return None;
    }
    let vol: f64 = (0..3).filter(|&d| !flat[d]).map(|d| ext[d]).product();
    let w = (vol / target.max(1.0)).powf(1.0 / live as f64);
    Some([0, 1, 2].map(|d| {
        if flat[d] {
            1
        } else {
            (ext[d] / w).ceil().clamp(1.0, MAX_DIM as f64) as u32
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::super::real::Real;
    use super::*;
    use trident_core::dist2;

    fn brute(q: &Point, b: &[Point]) -> u64 {
        b.iter()
            .enumerate()
            .map(|(j, p)| key(dist2(q, p), j as u32))
            .min()
            .unwrap()
    }

    fn lcg(s: &mut u64) -> f32 {
        *s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*s >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Exact nearest keys against brute force: queries inside and outside
    /// the box, on a lattice full of equal distances, on a flat set, and at
    /// subnormal squared distances; queries inside the box are always
    /// answered, some outside it are handed over.
    #[test]
    fn nearest_is_exact() {
        let mut s = 7u64;
        let lattice: Vec<Point> = (0..MIN_POINTS)
            .map(|i| [(i % 32) as f32, (i / 32 % 32) as f32, (i / 1024) as f32])
            .collect();
        let random: Vec<Point> = (0..MIN_POINTS * 2)
            .map(|_| [lcg(&mut s), lcg(&mut s), lcg(&mut s) * 1e-3])
            .collect();
        let flat: Vec<Point> = (0..MIN_POINTS)
            .map(|_| [lcg(&mut s) * 1e6, 5.0, lcg(&mut s)])
            .collect();
        // Squared distances in f32's subnormal range, where rounding is absolute.
        let tiny: Vec<Point> = random.iter().map(|p| p.map(|v| v * 1e-20)).collect();
        let mut handed = 0;
        for b in [&lattice, &random, &flat, &tiny] {
            let g = Grid::build(b).expect("even input takes the grid");
            let (lo, hi) = bounds(b);
            for t in 0..400 {
                let f = [0, 1, 2].map(|_| lcg(&mut s) as f64 * 1.6 - 0.3);
                let q: Point = [0, 1, 2].map(|d| (lo[d] + f[d] * (hi[d] - lo[d])) as f32);
                let inside = t % 50 == 0 || f.iter().all(|v| (0.0..=1.0).contains(v));
                let q = if t % 50 == 0 { b[t] } else { q };
                let mut at = [Start::default()];
                g.locate(&[q], &mut at);
                match g.nearest(&q, at[0], <f32 as Real>::NO_KEY) {
                    Some(k) => assert_eq!(k, brute(&q, b), "query {q:?}"),
                    // Only queries outside B's box may be handed to the kd-tree.
                    None => {
                        assert!(!inside, "query {q:?} inside the box was handed over");
                        handed += 1;
                    }
                }
            }
        }
        assert!(handed > 0, "the far queries exercise the hand-over");
    }

    /// Clustered input and a single repeated point are declined.
    #[test]
    fn uneven_input_is_declined() {
        let mut s = 3u64;
        let mut b: Vec<Point> = (0..MIN_POINTS)
            .map(|_| [lcg(&mut s) * 1e-4, lcg(&mut s) * 1e-4, lcg(&mut s) * 1e-4])
            .collect();
        b.push([1.0, 1.0, 1.0]);
        assert!(Grid::build(&b).is_none());
        assert!(Grid::build(&vec![[2.0f32; 3]; MIN_POINTS]).is_none());
        assert!(Grid::build(&b[..100]).is_none());
    }
}
