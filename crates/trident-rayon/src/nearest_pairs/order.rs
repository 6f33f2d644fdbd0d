//! A spatially coherent processing order for the queries: A bucketed by Morton
//! cell of a coarse grid over A's bounding box (a counting sort, stable, so the
//! order is a pure function of A). Neighbouring queries then walk the same part
//! of the tree, which keeps it in cache; results are still written by original
//! index.

use rayon::prelude::*;
use trident_core::Point;

use super::real::Real;

/// Spreads the low 10 bits of `v` to every third bit.
fn spread(v: u32) -> u32 {
    let mut x = v & 0x3ff;
    x = (x | (x << 16)) & 0x0300_00ff;
    x = (x | (x << 8)) & 0x0300_f00f;
    x = (x | (x << 4)) & 0x030c_30c3;
    x = (x | (x << 2)) & 0x0924_9249;
    x
}

/// The points of `a` in Morton-cell order, and their original indices.
pub(super) fn spatial_order<T: Real>(a: &[Point<T>]) -> (Vec<Point<T>>, Vec<u32>) {
    let order = morton_order(a);
    // A separate gather pass: its loads are independent and overlap, whereas
    // inside the query loop they would wait behind each query's search.
    let pts = order.par_iter().map(|&i| a[i as usize]).collect();
    (pts, order)
}

/// Indices of `a` in Morton-cell order (a permutation of `0..a.len()`).
fn morton_order<T: Real>(a: &[Point<T>]) -> Vec<u32> {
    let n = a.len();
    // About 8 queries per cell, at most 2^10 cells per axis.
    let bits = ((n / 8).max(1).ilog2() / 3).min(10);
    if bits == 0 {
        return (0..n as u32).collect();
    }
    let side = 1u32 << bits;
    let (lo, hi) = bounds(a);
    // In f64 so that extreme extents cannot overflow; cells only steer the
    // order, so rounding here cannot affect any result.
    let scale: [f64; 3] = [0, 1, 2].map(|d| {
        let ext = hi[d].to_f64() - lo[d].to_f64();
        if ext > 0.0 { side as f64 / ext } else { 0.0 }
    });
    let cell = |p: &Point<T>| -> u32 {
        let c = [0, 1, 2].map(|d| {
            let v = ((p[d].to_f64() - lo[d].to_f64()) * scale[d]) as u32;
            v.min(side - 1)
        });
        spread(c[0]) | (spread(c[1]) << 1) | (spread(c[2]) << 2)
    };
    let cells: Vec<u32> = a.par_iter().map(cell).collect();
    counting_sort(&cells, 1usize << (3 * bits))
}

/// The bounding box `(lo, hi)` of `pts` (non-empty), in parallel.
pub(super) fn bounds<T: Real>(pts: &[Point<T>]) -> ([T; 3], [T; 3]) {
    pts.par_iter()
        .with_min_len(4096)
        .fold(
            || ([T::INF; 3], [T::NEG_INF; 3]),
            |(mut lo, mut hi), p| {
                for d in 0..3 {
                    lo[d] = lo[d].min(p[d]);
                    hi[d] = hi[d].max(p[d]);
                }
                (lo, hi)
            },
        )
        .reduce(
            || ([T::INF; 3], [T::NEG_INF; 3]),
            |(l1, h1), (l2, h2)| {
                (
                    [0, 1, 2].map(|d| l1[d].min(l2[d])),
                    [0, 1, 2].map(|d| h1[d].max(h2[d])),
                )
            },
        )
}

/// Most pieces the counting sort cuts `cells` into: each holds a histogram of
/// every cell, and the prefix pass walks all of them.
const MAX_PIECES: usize = 32;
/// Fewest cells per piece: below this, a piece's histogram costs more than
/// its share of the counting.
const MIN_PIECE: usize = 1 << 14;

/// The stable order of `0..cells.len()` by cell (`cells[i] < ncells`): a
/// counting sort whose counting and scattering run on the pool, one piece of
/// `cells` per task. A stable sort has one answer, so the result does not
/// depend on the pieces (on 16 cores the serial version of this was a
/// sizeable part of a `closest_pairs` call).
fn counting_sort(cells: &[u32], ncells: usize) -> Vec<u32> {
    let n = cells.len();
    let pieces = (n / MIN_PIECE).clamp(1, MAX_PIECES.min(rayon::current_num_threads().max(1)));
    let len = n.div_ceil(pieces).max(1);
    let mut hist: Vec<Vec<u32>> = cells
        .par_chunks(len)
        .map(|cs| {
            let mut h = vec![0u32; ncells];
            for &c in cs {
                h[c as usize] += 1;
            }
            h
        })
        .collect();
    // Exclusive prefix in (cell, piece) order: where piece p's first point of
    // cell c goes.
    let mut run = 0u32;
    for c in 0..ncells {
        for h in hist.iter_mut() {
            let t = h[c];
            h[c] = run;
            run += t;
        }
    }
    // Not zeroed first: the scatter writes every slot, and its tasks fault
    // the pages in in parallel (a serial zero fill was a few ms on 16 cores).
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let out = SendPtr(order.as_mut_ptr());
    cells
        .par_chunks(len)
        .zip(hist.par_iter_mut())
        .enumerate()
        .for_each(|(p, (cs, h))| {
            let out = &out;
            for (t, &c) in cs.iter().enumerate() {
                let slot = &mut h[c as usize];
                // SAFETY: the prefix gives every (cell, piece) pair its own
                // range of `order`, of exactly the length this piece counted
                // for that cell, and the ranges tile `0..n`; each piece bumps
                // only its own cursors, so every index below `n` is written
                // once, by one task, and no other task reads `order` meanwhile.
                unsafe { *out.0.add(*slot as usize) = (p * len + t) as u32 };
                *slot += 1;
            }
        });
    // SAFETY: the scatter above wrote every index below `n` exactly once
    // (see its SAFETY note), and `u32` has no drop.
    unsafe { order.set_len(n) };
    order
}

/// A buffer shared by scatter tasks that each write their own slots.
pub(super) struct SendPtr<X>(pub(super) *mut X);
// SAFETY: every user (`counting_sort`, the grid's scatter, the radius
// search's row counts and rows) has its tasks write disjoint elements, and
// reads none of them until the tasks are joined.
unsafe impl<X: Send> Sync for SendPtr<X> {}

#[cfg(test)]
mod tests {
    /// The parallel counting sort is the stable sort by cell, whatever the
    /// number of pieces.
    #[test]
    fn counting_sort_is_the_stable_sort() {
        let mut x = 0x9e37_79b9_u32;
        let n = 200_003;
        let ncells = 4096;
        let cells: Vec<u32> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                // Skewed: a quarter of the points in cell 7.
                if x.is_multiple_of(4) { 7 } else { x % ncells }
            })
            .collect();
        let mut want: Vec<u32> = (0..n).collect();
        want.sort_by_key(|&i| cells[i as usize]);
        for threads in [1, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| super::counting_sort(&cells, ncells as usize));
            assert_eq!(got, want, "{threads} threads");
        }
        assert!(super::counting_sort(&[], 8).is_empty());
    }
}
