//! Dense matrices and the [`DenseGemm`] trait.
//!
//! Storage is row-major with a leading dimension: element `(i, j)` of a view lives
//! at `data[i * ld + j]`, and `ld >= cols`. A view is checked when it is built
//! ([`MatRef::new`]), so a backend never sees a slice shorter than its shape.

use crate::{Error, Result, Scalar};

/// Whether an operand is used as stored or transposed. Non-exhaustive (BLAS
/// also has a conjugate transpose, for complex types): outside this crate,
/// branch on [`Op::is_transposed`] rather than matching.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Op {
    /// `op(X) = X`.
    #[default]
    N,
    /// `op(X) = X^T`.
    T,
}

/// Arithmetic a backend may use for a GEMM. Non-exhaustive: more opt-in
/// modes (other tensor-core formats) may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Precision {
    /// True fp32/fp64 multiply-adds. The default.
    #[default]
    Strict,
    /// Opt-in: operands rounded to TF32 (10-bit mantissa) on tensor cores where the
    /// backend has them; backends without them compute `Strict`, which meets the
    /// looser bound too.
    Tf32,
    /// Opt-in: f32 accuracy from TF32 tensor cores ("3xTF32"). Each f32
    /// operand is split into a TF32 part and a TF32-rounded remainder,
    /// `x = hi + lo`, and the product sums `lo_A hi_B + hi_A lo_B +
    /// hi_A hi_B` in f32: three tensor-core products in place of strict
    /// multiply-adds, judged by the strict bound. It needs scratch space for
    /// both operands' two parts; backends without TF32 tensor cores, and f64,
    /// compute `Strict`.
    Tf32x3,
}

impl Op {
    /// `true` when the operand is used transposed: its stored rows are the
    /// columns of `op(X)`.
    ///
    /// ```
    /// # use trident_core::Op;
    /// assert!(Op::T.is_transposed() && !Op::N.is_transposed());
    /// ```
    pub const fn is_transposed(self) -> bool {
        matches!(self, Op::T)
    }
}

fn needed_len(rows: usize, cols: usize, ld: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (rows - 1).checked_mul(ld)?.checked_add(cols)
}

fn check_view(len: usize, rows: usize, cols: usize, ld: usize) -> Result<()> {
    check_view_fields("ld", "data", len, rows, cols, ld)
}

/// Checks that a `rows x cols` view with leading dimension `ld` fits `len`
/// elements, naming `ld_field` for a short `ld` and `data_field` for a short
/// buffer: shared by host views and device views
/// ([`crate::validate::device_mat`]).
pub(crate) fn check_view_fields(
    ld_field: &'static str,
    data_field: &'static str,
    len: usize,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<()> {
    if ld < cols {
        return Err(Error::dim(
            ld_field,
            format!("leading dimension {ld} is smaller than the row length {cols}"),
        ));
    }
    match needed_len(rows, cols, ld) {
        None => Err(Error::TooLarge {
            field: "rows * ld",
            value: rows as u128 * ld as u128,
            limit: usize::MAX as u128,
        }),
        Some(need) if need > len => Err(Error::dim(
            data_field,
            format!(
                "a {rows} x {cols} view with ld {ld} needs {need} elements, the buffer holds {len}"
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// A read-only row-major matrix view.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    ld: usize,
}

impl<'a, T: Copy> MatRef<'a, T> {
    /// A `rows x cols` view of `data` whose rows start `ld` elements apart.
    ///
    /// ```
    /// # use trident_core::MatRef;
    /// let a = [1.0f32, 2.0, 9.0, 3.0, 4.0, 9.0];
    /// let m = MatRef::new(&a, 2, 2, 3).unwrap(); // skips the 9s
    /// assert_eq!(m.get(1, 0), 3.0);
    /// ```
    pub fn new(data: &'a [T], rows: usize, cols: usize, ld: usize) -> Result<Self> {
        check_view(data.len(), rows, cols, ld)?;
        Ok(Self {
            data,
            rows,
            cols,
            ld,
        })
    }

    /// A contiguous `rows x cols` view (`ld == cols`); `data.len()` must be exactly
    /// `rows * cols`.
    pub fn dense(data: &'a [T], rows: usize, cols: usize) -> Result<Self> {
        crate::validate::exact_len("data", rows, cols, data.len())?;
        Self::new(data, rows, cols, cols)
    }

    /// Number of rows as stored.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns as stored.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Distance between the starts of two rows, in elements.
    pub fn ld(&self) -> usize {
        self.ld
    }
    /// The underlying slice (may be longer than the view).
    pub fn data(&self) -> &'a [T] {
        self.data
    }
    /// Element `(i, j)`. Panics when out of range.
    pub fn get(&self, i: usize, j: usize) -> T {
        assert!(i < self.rows && j < self.cols);
        self.data[i * self.ld + j]
    }
    /// Row `i` (its `cols` elements).
    pub fn row(&self, i: usize) -> &'a [T] {
        assert!(i < self.rows);
        if self.cols == 0 {
            // An empty view may sit on an empty slice whatever its ld.
            return &[];
        }
        &self.data[i * self.ld..i * self.ld + self.cols]
    }
    /// Shape of `op(self)`: `(rows, cols)` for `Op::N`, swapped for `Op::T`.
    pub fn op_shape(&self, op: Op) -> (usize, usize) {
        match op {
            Op::N => (self.rows, self.cols),
            Op::T => (self.cols, self.rows),
        }
    }
}

/// A mutable row-major matrix view.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    data: &'a mut [T],
    rows: usize,
    cols: usize,
    ld: usize,
}

impl<'a, T: Copy> MatMut<'a, T> {
    /// A mutable `rows x cols` view of `data` whose rows start `ld` elements apart.
    pub fn new(data: &'a mut [T], rows: usize, cols: usize, ld: usize) -> Result<Self> {
        check_view(data.len(), rows, cols, ld)?;
        Ok(Self {
            data,
            rows,
            cols,
            ld,
        })
    }
    /// A contiguous mutable view; `data.len()` must be exactly `rows * cols`.
    pub fn dense(data: &'a mut [T], rows: usize, cols: usize) -> Result<Self> {
        crate::validate::exact_len("data", rows, cols, data.len())?;
        Self::new(data, rows, cols, cols)
    }
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Leading dimension.
    pub fn ld(&self) -> usize {
        self.ld
    }
    /// The underlying slice.
    pub fn data(&self) -> &[T] {
        self.data
    }
    /// The underlying slice, mutably. Elements between rows (`cols..ld`) belong to
    /// the caller: backends must not write them.
    pub fn data_mut(&mut self) -> &mut [T] {
        self.data
    }
    /// A read-only view of the same matrix.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef {
            data: self.data,
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
        }
    }
    /// Row `i`, mutably.
    pub fn row_mut(&mut self, i: usize) -> &mut [T] {
        assert!(i < self.rows);
        if self.cols == 0 {
            return &mut [];
        }
        &mut self.data[i * self.ld..i * self.ld + self.cols]
    }
    /// `C <- beta * C` on the view's elements (never the padding), with BLAS's
    /// rule that `beta == 0` does not read C (a NaN there becomes 0). This is
    /// a whole GEMM when `alpha == 0` or `k == 0`: backends call it instead of
    /// multiplying, so that A and B are not read and nothing is computed.
    ///
    /// ```
    /// # use trident_core::MatMut;
    /// let mut c = [f32::NAN, 2.0, 9.0, 4.0];
    /// MatMut::new(&mut c, 1, 2, 2).unwrap().scale(0.0);
    /// assert_eq!(c, [0.0, 0.0, 9.0, 4.0]);
    /// ```
    pub fn scale(&mut self, beta: T)
    where
        T: crate::Scalar,
    {
        if beta == T::ONE {
            return;
        }
        for i in 0..self.rows {
            let row = self.row_mut(i);
            if beta == T::ZERO {
                row.fill(T::ZERO);
            } else {
                row.iter_mut().for_each(|v| *v *= beta);
            }
        }
    }

    /// Reborrows the view for a shorter lifetime.
    pub fn rb(&mut self) -> MatMut<'_, T> {
        MatMut {
            data: self.data,
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
        }
    }
}

/// The scalars and flags of one GEMM call: `C <- alpha op(A) op(B) + beta C`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GemmParams<T> {
    /// Scales the product.
    pub alpha: T,
    /// Scales the old C; `beta == 0` means C is not read at all (NaN in C is
    /// overwritten), as in BLAS.
    pub beta: T,
    /// `op` applied to A.
    pub op_a: Op,
    /// `op` applied to B.
    pub op_b: Op,
    /// Arithmetic the backend may use.
    pub precision: Precision,
}

impl<T: Scalar> Default for GemmParams<T> {
    /// `C = A B`: alpha 1, beta 0, no transposes, strict precision.
    fn default() -> Self {
        Self {
            alpha: T::ONE,
            beta: T::ZERO,
            op_a: Op::N,
            op_b: Op::N,
            precision: Precision::Strict,
        }
    }
}

/// m, n, k of a checked GEMM: `op(A)` is m x k, `op(B)` k x n, C m x n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GemmDims {
    /// Rows of C.
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// The contracted dimension.
    pub k: usize,
}

/// General dense matrix multiply.
pub trait DenseGemm<T: Scalar>: Send + Sync {
    /// `C <- alpha op(A) op(B) + beta C` on host memory.
    ///
    /// Errors (C untouched): shapes that do not fit, non-finite alpha/beta/A/B,
    /// or non-finite C when `beta != 0`.
    ///
    /// As in BLAS, `alpha == 0` means A and B take no part in the arithmetic
    /// (C becomes `beta * C` even where `A * B` would overflow; they are still
    /// validated), `beta == 0` means C is not read, and `m == 0` or `n == 0`
    /// returns at once whatever `k`.
    ///
    /// ```
    /// use trident_core::{DenseGemm, GemmParams, MatMut, MatRef};
    /// # fn demo(backend: &dyn DenseGemm<f32>) -> trident_core::Result<()> {
    /// let a = [1.0f32, 2.0, 3.0, 4.0];
    /// let b = [1.0f32, 0.0, 0.0, 1.0];
    /// let mut c = [0.0f32; 4];
    /// backend.gemm(
    ///     &GemmParams::default(),
    ///     MatRef::dense(&a, 2, 2)?,
    ///     MatRef::dense(&b, 2, 2)?,
    ///     MatMut::dense(&mut c, 2, 2)?,
    /// )?;
    /// assert_eq!(c, a);
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        c: MatMut<'_, T>,
    ) -> Result<()>;
}
