//! kiddo, the k-d tree Rust users reach for, as the Rust peer of
//! `closest_pairs`: the same answer built from its own parts, timed in the same
//! process as ours.
//!
//! What is timed: kiddo's parallel build of an `ImmutableKdTree` over B (f32,
//! as our points are), one `nearest_one` per point of A through its batch
//! query (multi-threaded on rayon's current pool), and the `k` smallest pairs
//! picked by `select_nth_unstable` and sorted by (distance, index of A) as the
//! contract orders them. Ties inside kiddo may pick another point of B at the
//! same distance; the distances, and so the check number, are the same.

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use trident::{Error, Pair, Point, Result};

/// The name and version the results table shows (the version Cargo.lock pins).
pub const NAME: &str = "kiddo 6.3 (Rust, ImmutableKdTree f32, rayon)";

/// `closest_pairs(a, b, k)` with kiddo: for each point of A its nearest point
/// in B, and the `k` pairs of smallest squared distance.
pub fn closest_pairs(a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
    if a.is_empty() || b.is_empty() || k == 0 {
        return Ok(Vec::new());
    }
    let tree: ImmutableKdTree<f32, 3> = ImmutableKdTree::new_from_slice_parallel(b)
        .map_err(|e| Error::Backend(format!("kiddo tree construction: {e}").into()))?;
    let nearest = tree
        .query_batch(a)
        .nearest_one::<SquaredEuclidean<f32>>()
        .execute();
    let mut pairs: Vec<Pair> = nearest
        .iter()
        .enumerate()
        .map(|(i, n)| Pair {
            a: i as u32,
            b: n.item,
            d2: n.distance,
        })
        .collect();
    let by_distance = |x: &Pair, y: &Pair| x.d2.total_cmp(&y.d2).then(x.a.cmp(&y.a));
    let k = k.min(pairs.len());
    if k < pairs.len() {
        pairs.select_nth_unstable_by(k - 1, by_distance);
        pairs.truncate(k);
    }
    pairs.sort_unstable_by(by_distance);
    Ok(pairs)
}
