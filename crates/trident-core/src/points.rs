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

/// How far to scale A and B down so that f32 squared distances cannot
/// overflow: the smallest `s >= 0` with every `|coordinate| * 2^-s <=`
/// [`F32_SAFE_COORD`]. Zero (nothing to do) unless some coordinate exceeds
/// about 4.6e18.
///
/// Why scale: coordinates such as `1e30` or `f32::MAX` are finite, but their
/// squared distances overflow f32 to `inf`, every candidate then ties, and
/// the smallest index would win whatever the geometry. Multiplying by a
/// power of two is exact (barring underflow of coordinates some 2^60 times
/// smaller than the largest, which moves distances by less than 1e-30), so the
/// order of all f32 distances is kept; [`unscale_d2`] brings reported
/// distances back (`inf` where the true one exceeds `f32::MAX`).
///
/// ```
/// # use trident_core::{f32_overflow_shift, F32_SAFE_COORD};
/// assert_eq!(f32_overflow_shift(&[[1e18, 0.0, 0.0]], &[[0.0; 3]]), 0);
/// let s = f32_overflow_shift(&[[f32::MAX, 0.0, 0.0]], &[[-1e30, 0.0, 0.0]]);
/// assert!(f32::MAX * 2f32.powi(-s) <= F32_SAFE_COORD);
/// ```
pub fn f32_overflow_shift(a: &[Point], b: &[Point]) -> i32 {
    let max = a
        .iter()
        .chain(b)
        .flat_map(|p| p.iter())
        .fold(0.0f32, |m, &v| m.max(v.abs()));
    let mut s = 0;
    while max * 2f32.powi(-s) > F32_SAFE_COORD {
        s += 1;
    }
    s
}

/// `p` with every coordinate multiplied by `2^-shift` (exact for powers of two).
pub fn scale_points(p: &[Point], shift: i32) -> Vec<Point> {
    let f = 2f32.powi(-shift);
    p.iter().map(|q| q.map(|v| v * f)).collect()
}

/// A squared distance computed on points scaled by `2^-shift`, brought back to
/// the caller's units (`inf` where it exceeds `f32::MAX`).
pub fn unscale_d2(d2: f32, shift: i32) -> f32 {
    // Two steps: 2^(2 shift) itself may not be representable.
    let f = 2f32.powi(shift);
    d2 * f * f
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
