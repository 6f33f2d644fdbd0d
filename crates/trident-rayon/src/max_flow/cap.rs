//! The integer type residual capacities are stored in.
//!
//! Capacities are `i64` at the API. When every residual the solver can ever hold
//! fits `i32`, the solvers store `i32`: half the bytes per node, so more of the
//! graph stays in cache (measured on cut-2048; see the module docs).

use std::fmt::Debug;
use std::ops::{AddAssign, Neg, SubAssign};

/// A residual capacity: `i32` or `i64`.
pub(crate) trait Cap:
    Copy + Ord + Debug + Send + Sync + AddAssign + SubAssign + Neg<Output = Self> + 'static
{
    /// Zero.
    const ZERO: Self;
    /// The largest value.
    const MAX: Self;
    /// Converts a value the caller has checked to be in range.
    fn from_i64(x: i64) -> Self;
    /// Widens to `i64`.
    fn to_i64(self) -> i64;
}

impl Cap for i32 {
    const ZERO: Self = 0;
    const MAX: Self = i32::MAX;
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        debug_assert!(i32::try_from(x).is_ok(), "{x} does not fit i32");
        x as i32
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl Cap for i64 {
    const ZERO: Self = 0;
    const MAX: Self = i64::MAX;
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        x
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self
    }
}
