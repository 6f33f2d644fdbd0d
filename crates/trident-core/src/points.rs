//! 3-D point sets and the [`NearestPairs`] trait.

use crate::Result;

/// A point in 3-D, `[x, y, z]`.
pub type Point = [f32; 3];

/// One neighbour of a query point: the index into B and the squared distance.
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Neighbor {
    /// Index of the neighbour in B.
    pub index: u32,
    /// Squared Euclidean distance as the backend computed it (f32 arithmetic on
    /// f32 backends). Verification recomputes it exactly from `index`.
    pub d2: f32,
}

/// A pair of `closest_pairs`: `a` indexes A, `b` its nearest point in B.
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pair {
    /// Index into A.
    pub a: u32,
    /// Index into B of `a`'s nearest neighbour.
    pub b: u32,
    /// Squared distance between them.
    pub d2: f32,
}

/// The squared Euclidean distance in f32, `dx*dx + dy*dy + dz*dz`, the order of
/// operations every backend uses so that equal inputs give equal bits.
#[inline(always)]
pub fn dist2(p: &Point, q: &Point) -> f32 {
    let dx = p[0] - q[0];
    let dy = p[1] - q[1];
    let dz = p[2] - q[2];
    dx * dx + dy * dy + dz * dz
}

/// The exact squared distance in f64 (each f32 coordinate is exact in f64).
#[inline(always)]
pub fn dist2_f64(p: &Point, q: &Point) -> f64 {
    let dx = p[0] as f64 - q[0] as f64;
    let dy = p[1] as f64 - q[1] as f64;
    let dz = p[2] as f64 - q[2] as f64;
    dx * dx + dy * dy + dz * dz
}

/// The largest coordinate magnitude, `2^62`, for which f32 squared distances
/// cannot overflow: `3 * (2 * 2^62)^2 = 3 * 2^126 < f32::MAX`.
pub const F32_SAFE_COORD: f32 = 4_611_686_018_427_387_904.0;

/// The smallest nonzero coordinate magnitude, `2^-40`, at which f32 squared
/// distances keep their order: two f32 values of at least `2^-40` in
/// magnitude differ by 0 or by at least `2^-63`, whose square `2^-126` is
/// still a normal f32. Below it, two distinct candidates can both have a
/// squared distance that underflows to 0 and tie, and the smaller index would
/// win whatever the geometry.
pub const F32_TINY_COORD: f32 = 9.094_947e-13;

/// The power of two `2^-s` by which A and B are scaled so that f32 squared
/// distances neither overflow nor underflow where the exact ones are in
/// range: 0 (use the points as they are) when every coordinate is 0 or has a
/// magnitude in `[F32_TINY_COORD, F32_SAFE_COORD]`, else the shift that
/// brings the largest magnitude into `(2^61, 2^62]` (`s > 0` for
/// coordinates beyond about 4.6e18, `s < 0` for sets whose coordinates are
/// all small).
///
/// Why scale: coordinates such as `1e30` or `f32::MAX` are finite, but their
/// squared distances overflow f32 to `inf`; coordinates such as `1e-25` have
/// squared distances that underflow to 0. Either way candidates tie and the
/// smallest index wins whatever the geometry. Multiplying by a power of two
/// is exact within the normal range, so the order of all f32 distances is
/// kept; [`unscale_d2`] brings reported distances back (`inf` or 0 where the
/// true one is beyond f32). What scaling cannot do is resolve distances
/// smaller than about `2^-250` times the largest squared coordinate of the
/// same call (after scaling they are below f32's normal range, and GPUs may
/// flush them to zero): such distances compare as equal, a rounding-level tie
/// at the call's scale.
///
/// ```
/// # use trident_core::{f32_range_shift, F32_SAFE_COORD};
/// assert_eq!(f32_range_shift(&[[1e18, 0.0, 1.0]], &[[0.0; 3]]), 0);
/// let s = f32_range_shift(&[[f32::MAX, 0.0, 0.0]], &[[-1e30, 0.0, 0.0]]);
/// assert!(f32::MAX * 2f32.powi(-s) <= F32_SAFE_COORD);
/// assert!(f32_range_shift(&[[1e-25, 0.0, 0.0]], &[[3e-25, 0.0, 0.0]]) < 0);
/// ```
pub fn f32_range_shift(a: &[Point], b: &[Point]) -> i32 {
    let (max, min) =
        a.iter()
            .chain(b)
            .flat_map(|p| p.iter())
            .fold((0.0f32, f32::INFINITY), |(mx, mn), &v| {
                let v = v.abs();
                (mx.max(v), if v > 0.0 { mn.min(v) } else { mn })
            });
    f32_range_shift_of(max, min)
}

/// [`f32_range_shift`] from the largest coordinate magnitude and the
/// smallest nonzero one (`inf` when every coordinate is 0), for callers that
/// have them from a pass of their own.
pub fn f32_range_shift_of(max_abs: f32, min_nonzero_abs: f32) -> i32 {
    if max_abs == 0.0 || (max_abs <= F32_SAFE_COORD && min_nonzero_abs >= F32_TINY_COORD) {
        return 0;
    }
    // max_abs <= 2^e: scaling by 2^-(e - 62) puts it at or below 2^62.
    (max_abs as f64).log2().ceil() as i32 - 62
}

/// A and B as an f32 distance computation should see them: scaled by
/// `2^-shift` ([`f32_range_shift`]) when their f32 squared distances could
/// overflow or underflow, else borrowed; with the shift, so that reported
/// distances are brought back with [`unscale_d2`]. What every backend that
/// computes distances in f32 on the host's points runs first.
pub fn f32_scaled<'p>(
    a: &'p [Point],
    b: &'p [Point],
) -> (
    std::borrow::Cow<'p, [Point]>,
    std::borrow::Cow<'p, [Point]>,
    i32,
) {
    use std::borrow::Cow;
    match f32_range_shift(a, b) {
        0 => (Cow::Borrowed(a), Cow::Borrowed(b), 0),
        s => (
            Cow::Owned(scale_points(a, s)),
            Cow::Owned(scale_points(b, s)),
            s,
        ),
    }
}

/// `p` with every coordinate multiplied by `2^-shift` (exact: computed in
/// f64, where `2^-shift` is representable for every shift
/// [`f32_range_shift`] returns, and the result is a normal f32 or 0).
pub fn scale_points(p: &[Point], shift: i32) -> Vec<Point> {
    let f = 2f64.powi(-shift);
    p.iter().map(|q| q.map(|v| (v as f64 * f) as f32)).collect()
}

/// A squared distance computed on points scaled by `2^-shift`, brought back to
/// the caller's units, rounded once (`inf` where it exceeds `f32::MAX`, a
/// subnormal or 0 where it is below f32's normal range).
pub fn unscale_d2(d2: f32, shift: i32) -> f32 {
    // Two factors: 2^(2 shift) itself may be beyond f64 for no valid shift,
    // but stay safe; each factor is exact.
    let f = 2f64.powi(shift);
    (d2 as f64 * f * f) as f32
}

/// Nearest-neighbour queries from point set A into point set B.
///
/// Ties in distance go to the smaller index in B (`nearest`, `knn`) and to the
/// smaller index in A (`closest_pairs`). Coordinates must be finite; A and B hold
/// at most `u32::MAX` points.
pub trait NearestPairs: Send + Sync {
    /// For each `a[i]`, its nearest point of B, written to `out[i]`.
    ///
    /// Errors (out untouched): B empty, `out.len() != a.len()`, a non-finite
    /// coordinate, more than `u32::MAX` points.
    ///
    /// ```
    /// use trident_core::{Neighbor, NearestPairs};
    /// # fn demo(backend: &dyn NearestPairs) -> trident_core::Result<()> {
    /// let a = [[0.0f32, 0.0, 0.0], [10.0, 0.0, 0.0]];
    /// let b = [[9.0f32, 0.0, 0.0], [1.0, 0.0, 0.0]];
    /// let mut out = [Neighbor::default(); 2];
    /// backend.nearest(&a, &b, &mut out)?;
    /// assert_eq!((out[0].index, out[1].index), (1, 0));
    /// # Ok(()) }
    /// ```
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()>;

    /// For each `a[i]`, its `k` nearest points of B sorted by `(d2, index)`,
    /// written to `out[i*k .. (i+1)*k]`.
    ///
    /// Errors (out untouched): `k > b.len()`, `out.len() != a.len() * k`, and the
    /// errors of [`NearestPairs::nearest`]. `k == 0` is valid and writes nothing.
    ///
    /// ```
    /// use trident_core::{Neighbor, NearestPairs};
    /// # fn demo(backend: &dyn NearestPairs) -> trident_core::Result<()> {
    /// let a = [[0.0f32, 0.0, 0.0]];
    /// let b = [[3.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]];
    /// let mut out = [Neighbor::default(); 2];
    /// backend.knn(&a, &b, 2, &mut out)?;
    /// assert_eq!((out[0].index, out[1].index), (1, 2));
    /// # Ok(()) }
    /// ```
    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()>;

    /// Pairs every `a[i]` with its nearest point of B, then returns the `k` pairs
    /// with the smallest `(d2, a)`, ascending: `min(k, a.len())` pairs. A point of
    /// B may appear in several pairs.
    ///
    /// ```
    /// use trident_core::NearestPairs;
    /// # fn demo(backend: &dyn NearestPairs) -> trident_core::Result<()> {
    /// let a = [[0.0f32, 0.0, 0.0], [5.0, 5.0, 5.0]];
    /// let b = [[5.0f32, 5.0, 6.0]];
    /// let pairs = backend.closest_pairs(&a, &b, 1)?;
    /// assert_eq!((pairs[0].a, pairs[0].b, pairs[0].d2), (1, 0, 1.0));
    /// # Ok(()) }
    /// ```
    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>>;
}
