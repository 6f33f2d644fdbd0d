//! The coordinate types the kd-tree searches in, and their `(d2, j)` keys.
//!
//! Why a trait of our own: the tree, the query order and the searches are
//! written once for f32 and f64 coordinates, and every comparison they make
//! is on a key that packs a squared distance and an index into one unsigned
//! integer (a non-negative float's bits order like its value, so integer
//! order is `(d2, j)` order). f32 keys are `u64`, as before the tree was
//! generic, so the f32 code compiles to what it was; f64 keys are `u128`
//! (the distance's 64 bits above the index). f64 points are never rounded
//! to f32 anywhere: coordinates, boxes, split planes and distances are all
//! in the coordinate type.

use std::cmp::Ordering;
use std::fmt::Debug;

use trident_core::Coord;

/// A coordinate type of the kd-tree: f32 or f64.
pub(super) trait Real: Coord {
    /// `(d2, j)` packed so that integer order is `(d2, j)` order for `d2 >= 0`
    /// (never NaN).
    type Key: Copy + Ord + Send + Sync + Debug + 'static;
    /// `+inf`.
    const INF: Self;
    /// `-inf`.
    const NEG_INF: Self;
    /// The key of "nothing found yet": `d2 = +inf`, `j = u32::MAX`. Every
    /// real point has `j < u32::MAX` (B has at most `u32::MAX` points), so
    /// even a point at infinite distance beats it, while padding slots (at
    /// this key) never do.
    const NO_KEY: Self::Key;
    /// Packs `(d2, j)`.
    fn key(d2: Self, j: u32) -> Self::Key;
    /// The distance part of a key.
    fn key_d2(k: Self::Key) -> Self;
    /// The index part of a key.
    fn key_index(k: Self::Key) -> u32;
    /// The bits of a non-negative value, zero-extended: they order like the
    /// values, so a shared bound can be an `AtomicU64` for either type.
    fn bits(self) -> u64;
    /// The inverse of [`Real::bits`].
    fn from_bits(b: u64) -> Self;
    /// The smaller of two values (neither NaN).
    fn min(self, o: Self) -> Self;
    /// The larger of two values (neither NaN).
    fn max(self, o: Self) -> Self;
    /// IEEE total order.
    fn total_cmp(&self, o: &Self) -> Ordering;
}

/// The widest bound that still accepts every point at distance `<= d2`
/// (whatever its index): `(d2, u32::MAX)`.
#[inline(always)]
pub(super) fn bound_at<T: Real>(d2: T) -> T::Key {
    T::key(d2, u32::MAX)
}

impl Real for f32 {
    type Key = u64;
    const INF: f32 = f32::INFINITY;
    const NEG_INF: f32 = f32::NEG_INFINITY;
    const NO_KEY: u64 = key(f32::INFINITY, u32::MAX);
    #[inline(always)]
    fn key(d2: f32, j: u32) -> u64 {
        key(d2, j)
    }
    #[inline(always)]
    fn key_d2(k: u64) -> f32 {
        key_d2(k)
    }
    #[inline(always)]
    fn key_index(k: u64) -> u32 {
        k as u32
    }
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    #[inline(always)]
    fn from_bits(b: u64) -> f32 {
        f32::from_bits(b as u32)
    }
    #[inline(always)]
    fn min(self, o: f32) -> f32 {
        f32::min(self, o)
    }
    #[inline(always)]
    fn max(self, o: f32) -> f32 {
        f32::max(self, o)
    }
    #[inline(always)]
    fn total_cmp(&self, o: &f32) -> Ordering {
        f32::total_cmp(self, o)
    }
}

impl Real for f64 {
    type Key = u128;
    const INF: f64 = f64::INFINITY;
    const NEG_INF: f64 = f64::NEG_INFINITY;
    const NO_KEY: u128 = ((f64::INFINITY.to_bits() as u128) << 32) | u32::MAX as u128;
    #[inline(always)]
    fn key(d2: f64, j: u32) -> u128 {
        ((d2.to_bits() as u128) << 32) | j as u128
    }
    #[inline(always)]
    fn key_d2(k: u128) -> f64 {
        f64::from_bits((k >> 32) as u64)
    }
    #[inline(always)]
    fn key_index(k: u128) -> u32 {
        k as u32
    }
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits(b: u64) -> f64 {
        f64::from_bits(b)
    }
    #[inline(always)]
    fn min(self, o: f64) -> f64 {
        f64::min(self, o)
    }
    #[inline(always)]
    fn max(self, o: f64) -> f64 {
        f64::max(self, o)
    }
    #[inline(always)]
    fn total_cmp(&self, o: &f64) -> Ordering {
        f64::total_cmp(self, o)
    }
}

/// The f32 key `(d2, j)`, for the f32-only grid.
#[inline(always)]
pub(super) const fn key(d2: f32, j: u32) -> u64 {
    ((d2.to_bits() as u64) << 32) | j as u64
}

/// The distance part of an f32 key.
#[inline(always)]
pub(super) fn key_d2(k: u64) -> f32 {
    f32::from_bits((k >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::Real;

    /// Key order is `(d2, j)` order, for both types, and the parts come back.
    #[test]
    fn keys_order_like_pairs() {
        fn check<T: Real>(vals: &[T]) {
            for &x in vals {
                for &y in vals {
                    for (i, j) in [(0u32, 1u32), (1, 0), (7, 7), (0, u32::MAX - 1)] {
                        let by_pair = x.total_cmp(&y).then(i.cmp(&j));
                        assert_eq!(T::key(x, i).cmp(&T::key(y, j)), by_pair);
                    }
                }
                assert!(T::key(x, u32::MAX - 1) < T::NO_KEY);
                assert_eq!(T::key_d2(T::key(x, 5)).bits(), x.bits());
                assert_eq!(T::key_index(T::key(x, 5)), 5);
                assert_eq!(T::from_bits(x.bits()).bits(), x.bits());
            }
        }
        check::<f32>(&[0.0, f32::from_bits(1), 1e-30, 0.5, 1.0, 3e38, f32::INFINITY]);
        check::<f64>(&[
            0.0,
            f64::from_bits(1),
            1e-300,
            0.5,
            1.0,
            1e308,
            f64::INFINITY,
        ]);
    }
}
