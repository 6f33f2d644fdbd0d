//! 3-D point sets and the [`NearestPairs`] trait, in f32 or f64 coordinates.

use std::borrow::Cow;

use crate::{Result, Scalar};

/// A point in 3-D, `[x, y, z]`, in f32 (the default) or f64 coordinates.
pub type Point<T = f32> = [T; 3];

/// One neighbour of a query point: the index into B and the squared distance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Neighbor<T = f32> {
    /// Index of the neighbour in B.
    pub index: u32,
    /// Squared Euclidean distance as the backend computed it (arithmetic in
    /// `T`). Verification recomputes it exactly from `index`.
    pub d2: T,
}

/// A pair of `closest_pairs`: `a` indexes A, `b` its nearest point in B.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Pair<T = f32> {
    /// Index into A.
    pub a: u32,
    /// Index into B of `a`'s nearest neighbour.
    pub b: u32,
    /// Squared distance between them.
    pub d2: T,
}

// SAFETY: `repr(C)` structs of `u32` and `f32` fields, 4-byte aligned, with no
// padding, so every bit pattern is valid (the derive does not take generics).
// `Neighbor<f64>` has 4 bytes of padding and is deliberately not `Pod`.
unsafe impl bytemuck::Zeroable for Neighbor<f32> {}
unsafe impl bytemuck::Pod for Neighbor<f32> {}
unsafe impl bytemuck::Zeroable for Pair<f32> {}
unsafe impl bytemuck::Pod for Pair<f32> {}
// SAFETY: two `u32` then an `f64` at offset 8: 16 bytes, no padding.
unsafe impl bytemuck::Zeroable for Pair<f64> {}
unsafe impl bytemuck::Pod for Pair<f64> {}

/// The coordinate types of [`NearestPairs`]: `f32` and `f64`, each with the
/// magnitudes between which its squared distances neither overflow nor
/// lose their order to underflow (see [`range_shift`]).
pub trait Coord: Scalar {
    /// `log2` of the largest coordinate magnitude whose squared distances
    /// cannot overflow `Self`: 62 for f32, 510 for f64.
    const SAFE_LOG2: i32;
    /// `log2` of the smallest nonzero magnitude at which squared distances
    /// keep their order: -40 for f32, -459 for f64 (two values at least that
    /// large differ by 0 or by at least one ulp there, whose square is still a
    /// normal number).
    const TINY_LOG2: i32;
    /// The squared distance of two points of this type, to f64 precision:
    /// exact then rounded once for f32 inputs, and with a compensated
    /// (double-double) sum for f64 inputs, where `dx * dx` is not exact.
    fn exact_d2(p: &Point<Self>, q: &Point<Self>) -> f64;
}

impl Coord for f32 {
    const SAFE_LOG2: i32 = 62;
    const TINY_LOG2: i32 = -40;
    fn exact_d2(p: &Point<f32>, q: &Point<f32>) -> f64 {
        dist2_f64(p, q)
    }
}

impl Coord for f64 {
    const SAFE_LOG2: i32 = 510;
    const TINY_LOG2: i32 = -459;
    fn exact_d2(p: &Point<f64>, q: &Point<f64>) -> f64 {
        // Each difference as hi + lo (TwoSum), each square as a double-double
        // (FMA TwoProduct, plus the cross and tail terms), summed in
        // double-double: the result is within a few units of 2^-100 of the
        // exact value, rounded once to f64.
        let mut acc = (0.0f64, 0.0f64);
        for d in 0..3 {
            let (hi, lo) = two_sum(p[d], -q[d]);
            let sq = hi * hi;
            let sq_err = hi.mul_add(hi, -sq);
            let tail = sq_err + 2.0 * hi * lo + lo * lo;
            let (s, e) = two_sum(acc.0, sq);
            acc = (s, e + acc.1 + tail);
        }
        acc.0 + acc.1
    }
}

/// `a + b` as `(s, e)` with `s + e` exactly the sum (Knuth's TwoSum).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// The squared Euclidean distance in `T`, `dx*dx + dy*dy + dz*dz`, the order
/// of operations every backend uses so that equal inputs give equal bits.
#[inline(always)]
pub fn dist2<T: Scalar>(p: &Point<T>, q: &Point<T>) -> T {
    let dx = p[0] - q[0];
    let dy = p[1] - q[1];
    let dz = p[2] - q[2];
    dx * dx + dy * dy + dz * dz
}

/// The exact squared distance in f64 of two f32 points (each f32 coordinate
/// and difference is exact in f64).
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

/// The power of two `2^-s` by which A and B are scaled so that squared
/// distances in `T` neither overflow nor underflow where the exact ones are
/// in range: 0 (use the points as they are) when every coordinate is 0 or has
/// a magnitude in `[2^TINY_LOG2, 2^SAFE_LOG2]` ([`Coord`]; for f32 these are
/// [`F32_TINY_COORD`] and [`F32_SAFE_COORD`]), else the shift that brings the
/// largest magnitude into `(2^(SAFE_LOG2 - 1), 2^SAFE_LOG2]` (`s > 0` for
/// coordinates beyond about 4.6e18 in f32, `s < 0` for sets whose
/// coordinates are all small).
///
/// Why scale: coordinates such as `1e30` or `f32::MAX` are finite, but their
/// squared distances overflow f32 to `inf`; coordinates such as `1e-25` have
/// squared distances that underflow to 0. Either way candidates tie and the
/// smallest index wins whatever the geometry. Multiplying by a power of two
/// is exact within the normal range, so the order of all distances is kept;
/// [`unscale_d2`] brings reported distances back (`inf` or 0 where the true
/// one is beyond `T`). What scaling cannot do is resolve distances smaller
/// than about `2^-250` (f32; `2^-2000` in f64) times the largest squared
/// coordinate of the same call (after scaling they are below the normal
/// range, and GPUs may flush them to zero): such distances compare as equal,
/// a rounding-level tie at the call's scale.
///
/// ```
/// # use trident_core::{range_shift, F32_SAFE_COORD};
/// assert_eq!(range_shift(&[[1e18f32, 0.0, 1.0]], &[[0.0; 3]]), 0);
/// let s = range_shift(&[[f32::MAX, 0.0, 0.0]], &[[-1e30, 0.0, 0.0]]);
/// assert!(f32::MAX * 2f32.powi(-s) <= F32_SAFE_COORD);
/// assert!(range_shift(&[[1e-25f32, 0.0, 0.0]], &[[3e-25, 0.0, 0.0]]) < 0);
/// assert!(range_shift(&[[1e300f64, 0.0, 0.0]], &[[0.0; 3]]) > 0);
/// ```
pub fn range_shift<T: Coord>(a: &[Point<T>], b: &[Point<T>]) -> i32 {
    let (mut max, mut min) = (0.0f64, f64::INFINITY);
    for v in [a.as_flattened(), b.as_flattened()] {
        let parts =
            crate::validate::scan_parts(v.len(), v.len() >= RANGE_PAR_MIN, |r| magnitudes(&v[r]));
        for (mx, mn) in parts {
            (max, min) = (max.max(mx), min.min(mn));
        }
    }
    range_shift_of::<T>(max, min)
}

/// From this many coordinates [`range_shift`] splits its pass over threads.
const RANGE_PAR_MIN: usize = 1 << 20;

/// The largest `|v|` and the smallest nonzero one (`inf` if none) of
/// finite values, in independent lanes: one chain of dependent max/min
/// steps took 13 ms over the 4.2M coordinates of pairs-1M-400K on the H200
/// machine, most of a host call whose device part takes 1 ms.
fn magnitudes<T: Coord>(v: &[T]) -> (f64, f64) {
    let s = scan_coords(v);
    (s.max_abs, s.min_nonzero)
}

/// What one pass over coordinates learns: whether all are finite, and the
/// magnitudes [`range_shift_of`] needs. A backend that copies the points
/// anyway (into a staging buffer) can check them on the way with
/// [`scan_coords`] instead of two more passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoordScan {
    /// Every coordinate finite.
    pub finite: bool,
    /// The largest `|v|` (of the finite ones).
    pub max_abs: f64,
    /// The smallest nonzero `|v|`; `inf` when none.
    pub min_nonzero: f64,
}

impl CoordScan {
    /// The scan of no coordinates.
    pub const EMPTY: Self = Self {
        finite: true,
        max_abs: 0.0,
        min_nonzero: f64::INFINITY,
    };

    /// The scan of both parts together.
    pub fn merge(self, o: Self) -> Self {
        Self {
            finite: self.finite && o.finite,
            max_abs: self.max_abs.max(o.max_abs),
            min_nonzero: self.min_nonzero.min(o.min_nonzero),
        }
    }
}

/// [`CoordScan`] of `v`. On the bit patterns first: an IEEE magnitude
/// orders as its bits with the sign cleared, so the pass is integer
/// max / min in independent lanes (2.9x the float pass on one core, which
/// the staged uploads of the GPU backends run on every piece). Only a
/// slice holding a non-finite value, whose magnitudes must leave it out,
/// takes the float pass.
pub fn scan_coords<T: Coord>(v: &[T]) -> CoordScan {
    let quick = if std::mem::size_of::<T>() == 4 {
        scan_bits::<u32>(bytemuck::cast_slice(v))
    } else {
        scan_bits::<u64>(bytemuck::cast_slice(v))
    };
    quick.unwrap_or_else(|| scan_floats(v))
}

/// The bit patterns of `f32` (`u32`) or `f64` (`u64`) coordinates.
trait Bits: Copy + Ord + bytemuck::Pod {
    /// Every bit but the sign.
    const MAGNITUDE: Self;
    /// Infinity's pattern: magnitudes at or above it are not finite.
    const INF: Self;
    const ZERO: Self;
    const MAX: Self;
    fn and(self, o: Self) -> Self;
    /// `self - 1`, wrapping (0 becomes `MAX`, so zeros drop out of a min).
    fn dec(self) -> Self;
    /// `self + 1` for a value known to be below `MAX`.
    fn inc(self) -> Self;
    /// The float of this pattern, widened.
    fn float(self) -> f64;
}

/// `Bits` for the pattern type `$u` of the float `$f`.
macro_rules! bits {
    ($u:ty, $f:ty, $magnitude:expr, $inf:expr) => {
        impl Bits for $u {
            const MAGNITUDE: Self = $magnitude;
            const INF: Self = $inf;
            const ZERO: Self = 0;
            const MAX: Self = <$u>::MAX;
            fn and(self, o: Self) -> Self {
                self & o
            }
            fn dec(self) -> Self {
                self.wrapping_sub(1)
            }
            fn inc(self) -> Self {
                self + 1
            }
            fn float(self) -> f64 {
                f64::from(<$f>::from_bits(self))
            }
        }
    };
}
bits!(u32, f32, 0x7fff_ffff, 0x7f80_0000);
bits!(u64, f64, 0x7fff_ffff_ffff_ffff, 0x7ff0_0000_0000_0000);

/// The scan of coordinates given as bit patterns; `None` when one is not
/// finite.
fn scan_bits<B: Bits>(v: &[B]) -> Option<CoordScan> {
    const LANES: usize = 16;
    let (mut mx, mut mn) = ([B::ZERO; LANES], [B::MAX; LANES]);
    let blocks = v.chunks_exact(LANES);
    let rest = blocks.remainder();
    let step = |mx: &mut B, mn: &mut B, x: B| {
        let a = x.and(B::MAGNITUDE);
        *mx = (*mx).max(a);
        *mn = (*mn).min(a.dec());
    };
    for b in blocks {
        for i in 0..LANES {
            step(&mut mx[i], &mut mn[i], b[i]);
        }
    }
    for (i, &x) in rest.iter().enumerate() {
        step(&mut mx[i], &mut mn[i], x);
    }
    let (mx, mn) = (mx.into_iter().max()?, mn.into_iter().min()?);
    (mx < B::INF).then(|| CoordScan {
        finite: true,
        max_abs: mx.float(),
        // `mn` is MAX (no nonzero value) or a finite magnitude minus one.
        min_nonzero: if mn == B::MAX {
            f64::INFINITY
        } else {
            mn.inc().float()
        },
    })
}

/// [`CoordScan`] of `v` on the floats, in independent lanes.
fn scan_floats<T: Coord>(v: &[T]) -> CoordScan {
    const LANES: usize = 8;
    let (mut mx, mut mn) = ([0.0f64; LANES], [f64::INFINITY; LANES]);
    let mut finite = [true; LANES];
    let blocks = v.chunks_exact(LANES);
    let rest = blocks.remainder();
    let step = |mx: &mut f64, mn: &mut f64, ok: &mut bool, x: T| {
        let x = x.to_f64().abs();
        *ok &= x.is_finite();
        // Non-finite values stay out of the magnitudes (f64::max ignores a
        // NaN; an inf is masked).
        let x = if x.is_finite() { x } else { 0.0 };
        *mx = mx.max(x);
        *mn = mn.min(if x > 0.0 { x } else { f64::INFINITY });
    };
    for b in blocks {
        for i in 0..LANES {
            step(&mut mx[i], &mut mn[i], &mut finite[i], b[i]);
        }
    }
    for (i, &x) in rest.iter().enumerate() {
        step(&mut mx[i], &mut mn[i], &mut finite[i], x);
    }
    CoordScan {
        finite: finite.iter().all(|&f| f),
        max_abs: mx.into_iter().fold(0.0, f64::max),
        min_nonzero: mn.into_iter().fold(f64::INFINITY, f64::min),
    }
}

/// [`range_shift`] from the largest coordinate magnitude and the smallest
/// nonzero one (`inf` when every coordinate is 0), for callers that have
/// them from a pass of their own.
pub fn range_shift_of<T: Coord>(max_abs: f64, min_nonzero_abs: f64) -> i32 {
    if max_abs == 0.0 || (max_abs <= pow2(T::SAFE_LOG2) && min_nonzero_abs >= pow2(T::TINY_LOG2)) {
        return 0;
    }
    // max_abs <= 2^e: scaling by 2^-(e - SAFE_LOG2) puts it at or below 2^SAFE_LOG2.
    max_abs.log2().ceil() as i32 - T::SAFE_LOG2
}

/// `2^e` for `|e| <= 1023`.
fn pow2(e: i32) -> f64 {
    2f64.powi(e)
}

/// `v * 2^e` in f64, exact wherever the result is a normal number: two
/// factors, each representable, applied so that the intermediate lies
/// between `v` and the result.
fn scale2(v: f64, e: i32) -> f64 {
    let h = e / 2;
    v * pow2(h) * pow2(e - h)
}

/// A and B as a distance computation in `T` should see them: scaled by
/// `2^-shift` ([`range_shift`]) when their squared distances could overflow
/// or underflow, else borrowed; with the shift, so that reported distances
/// are brought back with [`unscale_d2`]. What every backend that computes
/// distances on the host's points runs first.
#[allow(clippy::type_complexity)]
pub fn scaled_for_range<'p, T: Coord>(
    a: &'p [Point<T>],
    b: &'p [Point<T>],
) -> (Cow<'p, [Point<T>]>, Cow<'p, [Point<T>]>, i32) {
    match range_shift(a, b) {
        0 => (Cow::Borrowed(a), Cow::Borrowed(b), 0),
        s => (
            Cow::Owned(scale_points(a, s)),
            Cow::Owned(scale_points(b, s)),
            s,
        ),
    }
}

/// `p` with every coordinate multiplied by `2^-shift` (exact for every shift
/// [`range_shift`] returns wherever the result is a normal number or 0).
pub fn scale_points<T: Coord>(p: &[Point<T>], shift: i32) -> Vec<Point<T>> {
    p.iter().map(|q| q.map(|v| scale_coord(v, shift))).collect()
}

/// One coordinate (or a radius) multiplied by `2^-shift`, as [`scale_points`].
pub fn scale_coord<T: Coord>(v: T, shift: i32) -> T {
    if shift == 0 {
        v
    } else {
        T::from_f64(scale2(v.to_f64(), -shift))
    }
}

/// A squared distance computed on points scaled by `2^-shift`, brought back to
/// the caller's units (`inf` where it exceeds `T::MAX`, a subnormal or 0 where
/// it is below the normal range; rounded once for f32, and for f64 once
/// except in the subnormal range).
pub fn unscale_d2<T: Coord>(d2: T, shift: i32) -> T {
    if shift == 0 {
        return d2;
    }
    T::from_f64(scale2(scale2(d2.to_f64(), shift), shift))
}

/// The pairs of a radius search in CSR form: row `i` (a point of A, or of
/// the one set for [`NearestPairs::self_pairs`]) holds the indices
/// `indices[offsets[i]..offsets[i + 1]]` and their squared distances `d2`
/// at the same places, sorted by `(d2, index)`.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RadiusNeighbors<T = f32> {
    /// `rows + 1` offsets, starting at 0, non-decreasing.
    pub offsets: Vec<usize>,
    /// Indices into B (or into the set, all greater than the row).
    pub indices: Vec<u32>,
    /// Squared distances as the backend computed them, beside `indices`.
    pub d2: Vec<T>,
}

impl<T: Copy> RadiusNeighbors<T> {
    /// Number of rows (points of A).
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// Total number of pairs.
    pub fn len(&self) -> usize {
        self.indices.len()
    }
    /// `true` when no pair was found.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
    /// Row `i`: its indices and squared distances.
    pub fn row(&self, i: usize) -> (&[u32], &[T]) {
        let r = self.offsets[i]..self.offsets[i + 1];
        (&self.indices[r.clone()], &self.d2[r])
    }
    /// Every pair as `(row, index, d2)`, row by row.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32, T)> + '_ {
        (0..self.rows()).flat_map(move |i| {
            let (idx, d2) = self.row(i);
            idx.iter().zip(d2).map(move |(&j, &d)| (i as u32, j, d))
        })
    }
}

/// Nearest-neighbour queries from point set A into point set B, in f32 (the
/// default, `dyn NearestPairs`) or f64 coordinates (`dyn NearestPairs<f64>`).
///
/// Ties in distance go to the smaller index in B (`nearest`, `knn`, `within`)
/// and to the smaller index in A (`closest_pairs`). Coordinates must be finite;
/// A and B hold at most `u32::MAX` points. Distances are computed and
/// reported in `T`: an f64 call never rounds its coordinates to f32 (a backend
/// without f64 answers [`crate::Error::Unsupported`]).
pub trait NearestPairs<T: Coord = f32>: Send + Sync {
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
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn nearest(&self, a: &[Point<T>], b: &[Point<T>], out: &mut [Neighbor<T>]) -> Result<()>;

    /// For each `a[i]`, its `k` nearest points of B sorted by `(d2, index)`,
    /// written to `out[i*k .. (i+1)*k]`.
    ///
    /// Errors (out untouched): `k > b.len()`, `out.len() != a.len() * k`, and the
    /// errors of [`NearestPairs::nearest`]. `k == 0` is valid and writes nothing.
    ///
    /// ```
    /// use trident_core::{Neighbor, NearestPairs};
    /// # fn demo(backend: &dyn NearestPairs<f64>) -> trident_core::Result<()> {
    /// let a = [[500_000.25f64, 5_300_000.5, 200.0]];
    /// let b = [[500_003.0f64, 5_300_000.5, 200.0], [500_001.0, 5_300_000.5, 200.0],
    ///          [500_002.0, 5_300_000.5, 200.0]];
    /// let mut out = [Neighbor::default(); 2];
    /// backend.knn(&a, &b, 2, &mut out)?;
    /// assert_eq!((out[0].index, out[1].index), (1, 2));
    /// assert_eq!(out[0].d2, 0.5625);
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn knn(&self, a: &[Point<T>], b: &[Point<T>], k: usize, out: &mut [Neighbor<T>]) -> Result<()>;

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
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn closest_pairs(&self, a: &[Point<T>], b: &[Point<T>], k: usize) -> Result<Vec<Pair<T>>>;

    /// Every pair `(a[i], b[j])` within distance `r` (`|a - b| <= r`, decided
    /// on the squared distance computed in `T` against `r * r`), as
    /// [`RadiusNeighbors`] with one row per point of A, each row sorted by
    /// `(d2, j)`. cKDTree's `query_ball_point`, with distances.
    ///
    /// The pairs are counted before the result is allocated: more than
    /// `max_pairs` is [`crate::Error::TooLarge`] (field `"pairs within r"`),
    /// so a radius too large for memory fails at once instead of after
    /// filling it. Pass `usize::MAX` for no limit but memory.
    ///
    /// Errors: `r` negative or not finite, and the point errors of
    /// [`NearestPairs::nearest`] (B may be empty here).
    ///
    /// ```
    /// use trident_core::NearestPairs;
    /// # fn demo(backend: &dyn NearestPairs) -> trident_core::Result<()> {
    /// let a = [[0.0f32, 0.0, 0.0]];
    /// let b = [[3.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]];
    /// let found = backend.within(&a, &b, 2.0, usize::MAX)?;
    /// assert_eq!(found.row(0), (&[1u32, 2][..], &[1.0f32, 4.0][..]));
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn within(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        r: T,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<T>>;

    /// Every pair `i < j` of one set within distance `r`, as
    /// [`RadiusNeighbors`] with one row per point `i` holding the `j > i`,
    /// sorted by `(d2, j)`. cKDTree's `query_pairs`, with distances. Limits
    /// and errors as [`NearestPairs::within`].
    ///
    /// ```
    /// use trident_core::NearestPairs;
    /// # fn demo(backend: &dyn NearestPairs) -> trident_core::Result<()> {
    /// let p = [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [5.0, 0.0, 0.0]];
    /// let found = backend.self_pairs(&p, 1.5, usize::MAX)?;
    /// assert_eq!(found.pairs().collect::<Vec<_>>(), vec![(0, 1, 1.0)]);
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn self_pairs(&self, p: &[Point<T>], r: T, max_pairs: usize) -> Result<RadiusNeighbors<T>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: one pass over every coordinate.
    fn shift_by_definition<T: Coord>(a: &[Point<T>], b: &[Point<T>]) -> i32 {
        let (mut max, mut min) = (0.0f64, f64::INFINITY);
        for &v in a.iter().chain(b).flat_map(|p| p.iter()) {
            let v = v.to_f64().abs();
            max = max.max(v);
            if v > 0.0 {
                min = min.min(v);
            }
        }
        range_shift_of::<T>(max, min)
    }

    /// The scan that rides along a copy: finiteness of every coordinate and
    /// the magnitudes of the finite ones, merged over parts in any split.
    #[test]
    fn coordinate_scan_merges_and_flags_non_finite_values() {
        let v = [0.0f32, -3.0, 2e-30, 7.0, 1.0, 0.5, -8.0, 4.0, 9.0, 0.0];
        let all = scan_coords(&v);
        assert_eq!(
            (all.finite, all.max_abs, all.min_nonzero),
            (true, 9.0, 2e-30f32 as f64)
        );
        for cut in 0..v.len() {
            assert_eq!(scan_coords(&v[..cut]).merge(scan_coords(&v[cut..])), all);
        }
        assert_eq!(scan_coords::<f32>(&[]), CoordScan::EMPTY);
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut w = v;
            w[9] = bad;
            let s = scan_coords(&w);
            assert!(!s.finite && s.max_abs == 9.0, "{bad}: {s:?}");
        }
    }

    /// The bit-pattern pass and the float pass agree on every kind of
    /// value: zeros of both signs, subnormals, the largest finite values,
    /// and in both widths.
    #[test]
    fn the_bit_pass_equals_the_float_pass() {
        let f32s = [
            0.0f32,
            -0.0,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(7),
            f32::MAX,
            -f32::MAX,
            1.5,
            -2.25e-20,
            3e30,
        ];
        for len in 0..=f32s.len() {
            for start in 0..len {
                let v = &f32s[start..len];
                assert_eq!(
                    scan_bits::<u32>(bytemuck::cast_slice(v)),
                    Some(scan_floats(v))
                );
            }
        }
        let f64s = [
            0.0f64,
            -0.0,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            -1e-300,
            7.0,
            -2e200,
        ];
        for len in 0..=f64s.len() {
            for start in 0..len {
                let v = &f64s[start..len];
                assert_eq!(
                    scan_bits::<u64>(bytemuck::cast_slice(v)),
                    Some(scan_floats(v))
                );
            }
        }
        // Long enough for every lane, all zero: no nonzero magnitude.
        let zeros = vec![-0.0f32; 100];
        assert_eq!(scan_coords(&zeros), CoordScan::EMPTY);
        assert_eq!(
            scan_bits::<u32>(bytemuck::cast_slice(&[1.0f32, f32::NAN])),
            None
        );
        assert_eq!(
            scan_bits::<u64>(bytemuck::cast_slice(&[f64::NEG_INFINITY])),
            None
        );
    }

    #[test]
    fn the_lane_and_thread_split_pass_equals_the_definition() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Lengths around the lane width and past the threaded threshold;
        // exponents across the whole f32 range, zeros and one extreme value
        // placed at a different spot each time.
        for (len, at) in [
            (0, 0),
            (1, 0),
            (7, 3),
            (9, 8),
            (1000, 999),
            (RANGE_PAR_MIN, 12_345),
        ] {
            let mut pts: Vec<Point<f32>> = (0..len)
                .map(|_| {
                    let mut c = [0.0f32; 3];
                    for v in &mut c {
                        let r = next();
                        let e = (r % 200) as i32 - 100;
                        *v = if r % 11 == 0 { 0.0 } else { (e as f32).exp2() };
                    }
                    c
                })
                .collect();
            for (big, tiny) in [(1e30f32, 1.0f32), (1.0, 1e-30)] {
                if let Some(p) = pts.get_mut(at) {
                    p[1] = big;
                    p[2] = tiny;
                }
                let (a, b) = pts.split_at(len / 3);
                assert_eq!(range_shift(a, b), shift_by_definition(a, b), "len {len}");
                let wide: Vec<Point<f64>> = pts.iter().map(|p| p.map(f64::from)).collect();
                assert_eq!(range_shift(&wide, &[]), shift_by_definition(&wide, &[]));
            }
        }
    }
}
