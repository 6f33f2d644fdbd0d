//! Brute force in the coordinate type itself: the same `dist2` and the same
//! tie rules as the backend, so comparisons with it are bit for bit.

use trident_core::{Neighbor, Pair, Point, RadiusNeighbors, dist2};

use super::super::real::Real;

/// The `k` smallest `(dist2(q, b_j), j)`.
pub(super) fn knn<T: Real>(q: &Point<T>, b: &[Point<T>], k: usize) -> Vec<Neighbor<T>> {
    let mut all: Vec<T::Key> = b
        .iter()
        .enumerate()
        .map(|(j, p)| T::key(dist2(q, p), j as u32))
        .collect();
    all.sort_unstable();
    all[..k]
        .iter()
        .map(|&kk| Neighbor {
            index: T::key_index(kk),
            d2: T::key_d2(kk),
        })
        .collect()
}

/// Every query's nearest, then the `k` smallest `(d2, i)`.
pub(super) fn pairs<T: Real>(a: &[Point<T>], b: &[Point<T>], k: usize) -> Vec<Pair<T>> {
    let mut all: Vec<(T::Key, u32)> = a
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let n = knn(q, b, 1)[0];
            (T::key(n.d2, i as u32), n.index)
        })
        .collect();
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

/// The rows of `within(a, b, r)` (with `upper`, of `self_pairs(a, r)`): every
/// `j` with `dist2 <= r * r` computed in `T`, sorted by `(d2, j)`.
pub(super) fn within<T: Real>(
    a: &[Point<T>],
    b: &[Point<T>],
    r: T,
    upper: bool,
) -> RadiusNeighbors<T> {
    let r2 = r * r;
    let mut out = RadiusNeighbors {
        offsets: vec![0],
        indices: Vec::new(),
        d2: Vec::new(),
    };
    for (i, q) in a.iter().enumerate() {
        let mut row: Vec<T::Key> = b
            .iter()
            .enumerate()
            .filter(|&(j, _)| !upper || j > i)
            .map(|(j, p)| T::key(dist2(q, p), j as u32))
            .filter(|&k| T::key_d2(k) <= r2)
            .collect();
        row.sort_unstable();
        out.indices.extend(row.iter().map(|&k| T::key_index(k)));
        out.d2.extend(row.iter().map(|&k| T::key_d2(k)));
        out.offsets.push(out.indices.len());
    }
    out
}
