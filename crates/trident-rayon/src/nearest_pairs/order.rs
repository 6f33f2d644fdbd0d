//! A spatially coherent processing order for the queries: A bucketed by Morton
//! cell of a coarse grid over A's bounding box (a counting sort, stable, so the
//! order is a pure function of A). Neighbouring queries then walk the same part
//! of the tree, which keeps it in cache; results are still written by original
//! index.

use rayon::prelude::*;
use trident_core::Point;

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
pub(super) fn spatial_order(a: &[Point]) -> (Vec<Point>, Vec<u32>) {
    let order = morton_order(a);
    // A separate gather pass: its loads are independent and overlap, whereas
    // inside the query loop they would wait behind each query's search.
    let pts = order.par_iter().map(|&i| a[i as usize]).collect();
    (pts, order)
}

/// Indices of `a` in Morton-cell order (a permutation of `0..a.len()`).
fn morton_order(a: &[Point]) -> Vec<u32> {
    let n = a.len();
    // About 8 queries per cell, at most 2^10 cells per axis.
    let bits = ((n / 8).max(1).ilog2() / 3).min(10);
    if bits == 0 {
        return (0..n as u32).collect();
    }
    let side = 1u32 << bits;
    let (lo, hi) = a
        .par_iter()
        .fold(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
            |(mut lo, mut hi), p| {
                for d in 0..3 {
                    lo[d] = lo[d].min(p[d]);
                    hi[d] = hi[d].max(p[d]);
                }
                (lo, hi)
            },
        )
        .reduce(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
            |(l1, h1), (l2, h2)| {
                (
                    [0, 1, 2].map(|d| l1[d].min(l2[d])),
                    [0, 1, 2].map(|d| h1[d].max(h2[d])),
                )
            },
        );
    // In f64 so that extreme extents cannot overflow; cells only steer the
    // order, so rounding here cannot affect any result.
    let scale: [f64; 3] = [0, 1, 2].map(|d| {
        let ext = hi[d] as f64 - lo[d] as f64;
        if ext > 0.0 { side as f64 / ext } else { 0.0 }
    });
    let cell = |p: &Point| -> u32 {
        let c = [0, 1, 2].map(|d| {
            let v = ((p[d] as f64 - lo[d] as f64) * scale[d]) as u32;
            v.min(side - 1)
        });
        spread(c[0]) | (spread(c[1]) << 1) | (spread(c[2]) << 2)
    };
    let cells: Vec<u32> = a.par_iter().map(cell).collect();
    let ncells = 1usize << (3 * bits);
    let mut start = vec![0u32; ncells + 1];
    for &c in &cells {
        start[c as usize + 1] += 1;
    }
    for c in 0..ncells {
        start[c + 1] += start[c];
    }
    let mut order = vec![0u32; n];
    for (i, &c) in cells.iter().enumerate() {
        let s = &mut start[c as usize];
        order[*s as usize] = i as u32;
        *s += 1;
    }
    order
}
