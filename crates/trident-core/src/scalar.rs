//! The floating-point types the primitives are generic over.

use std::fmt::{Debug, Display};
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`. Sealed: backends are written against exactly these two.
pub trait Scalar:
    sealed::Sealed
    + Copy
    + Send
    + Sync
    + Default
    + Debug
    + Display
    + PartialEq
    + PartialOrd
    + bytemuck::Pod
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + Sum
    + 'static
{
    /// `"f32"` or `"f64"`, for messages, kernel names and reports.
    const NAME: &'static str;
    /// Machine epsilon.
    const EPSILON: Self;
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The largest finite value.
    const MAX: Self;
    /// The least positive value (a subnormal): the absolute rounding error
    /// of a value near 0 is at most half of it.
    const MIN_SUBNORMAL: Self;
    /// Widening (f32) or identity (f64) conversion.
    fn to_f64(self) -> f64;
    /// Rounding (f32) or identity (f64) conversion.
    fn from_f64(v: f64) -> Self;
    /// `true` unless NaN or infinite.
    fn is_finite(self) -> bool;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `self * a + b` with one rounding where the hardware has it.
    fn mul_add(self, a: Self, b: Self) -> Self;
}

macro_rules! impl_scalar {
    ($t:ty) => {
        impl Scalar for $t {
            const NAME: &'static str = stringify!($t);
            const EPSILON: Self = <$t>::EPSILON;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const MAX: Self = <$t>::MAX;
            const MIN_SUBNORMAL: Self = <$t>::from_bits(1);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }
        }
    };
}
impl_scalar!(f32);
impl_scalar!(f64);
