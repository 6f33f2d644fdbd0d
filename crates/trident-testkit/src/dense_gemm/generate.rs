//! Dense GEMM inputs.

use rand::Rng;
use trident_core::{GemmParams, MatMut, MatRef, Precision, Result, Scalar};

use crate::cases::rng;

/// How one operand is stored: `rows x cols` with leading dimension `ld`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rows as stored.
    pub rows: usize,
    /// Columns as stored.
    pub cols: usize,
    /// Distance between row starts, `>= cols`.
    pub ld: usize,
}

impl Shape {
    /// Elements a buffer needs to hold this shape.
    pub fn len(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.ld + self.cols
        }
    }
    /// `true` when the shape holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One GEMM call: `C <- alpha op(A) op(B) + beta C` with its operands.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmCase<T> {
    /// alpha, beta, transposes, precision.
    pub params: GemmParams<T>,
    /// Rows of C.
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// The contracted dimension.
    pub k: usize,
    /// A as stored (`m x k`, or `k x m` when `op_a == T`).
    pub a: Vec<T>,
    /// A's storage shape.
    pub a_shape: Shape,
    /// B as stored (`k x n`, or `n x k` when `op_b == T`).
    pub b: Vec<T>,
    /// B's storage shape.
    pub b_shape: Shape,
    /// The initial C (`m x n`). Elements between rows (padding) hold a marker a
    /// backend must leave alone.
    pub c: Vec<T>,
    /// C's storage shape.
    pub c_shape: Shape,
}

impl<T: Scalar> GemmCase<T> {
    /// A as a view.
    pub fn a_ref(&self) -> MatRef<'_, T> {
        MatRef::new(
            &self.a,
            self.a_shape.rows,
            self.a_shape.cols,
            self.a_shape.ld,
        )
        .expect("generated shapes are consistent")
    }
    /// B as a view.
    pub fn b_ref(&self) -> MatRef<'_, T> {
        MatRef::new(
            &self.b,
            self.b_shape.rows,
            self.b_shape.cols,
            self.b_shape.ld,
        )
        .expect("generated shapes are consistent")
    }
    /// A mutable view of `buf` (a copy of [`GemmCase::c`]) with C's shape.
    pub fn c_mut<'a>(&self, buf: &'a mut [T]) -> Result<MatMut<'a, T>> {
        MatMut::new(buf, self.c_shape.rows, self.c_shape.cols, self.c_shape.ld)
    }
    /// The same call in f64 (every f32 is exact in f64): what the checker hands
    /// the reference.
    pub fn widen(&self) -> GemmCase<f64> {
        let w = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
        GemmCase {
            params: GemmParams {
                alpha: self.params.alpha.to_f64(),
                beta: self.params.beta.to_f64(),
                op_a: self.params.op_a,
                op_b: self.params.op_b,
                precision: Precision::Strict,
            },
            m: self.m,
            n: self.n,
            k: self.k,
            a: w(&self.a),
            a_shape: self.a_shape,
            b: w(&self.b),
            b_shape: self.b_shape,
            c: w(&self.c),
            c_shape: self.c_shape,
        }
    }
}

/// `rows * cols` values uniform in `[-1, 1)`, row-major (the benchmark GEMM operands).
pub fn uniform_matrix<T: Scalar>(rows: usize, cols: usize, seed: u64) -> Vec<T> {
    let mut r = rng(seed);
    (0..rows * cols)
        .map(|_| T::from_f64(r.random_range(-1.0..1.0)))
        .collect()
}

/// The benchmark case `gemm-N`: square `n x n` operands U[-1,1), `C = A B`.
pub fn gemm<T: Scalar>(n: usize, seed: u64) -> GemmCase<T> {
    gemm_general(n, n, n, GemmParams::default(), 0, seed)
}

/// The padding marker written between rows of padded buffers: a backend that
/// writes C's padding (or reads A's as data) is caught by it.
pub const PAD_MARKER: f64 = -7777.0;

/// A general GEMM: `op(A)` m x k, `op(B)` k x n, every buffer padded by `pad`
/// elements per row (leading dimension `cols + pad`), values U[-1,1). When
/// `params.beta == 0` the initial C is NaN (which BLAS semantics must overwrite).
pub fn gemm_general<T: Scalar>(
    m: usize,
    n: usize,
    k: usize,
    params: GemmParams<T>,
    pad: usize,
    seed: u64,
) -> GemmCase<T> {
    let mut r = rng(seed);
    let (ar, ac) = if params.op_a.is_transposed() {
        (k, m)
    } else {
        (m, k)
    };
    let (br, bc) = if params.op_b.is_transposed() {
        (n, k)
    } else {
        (k, n)
    };
    let a_shape = Shape {
        rows: ar,
        cols: ac,
        ld: ac + pad,
    };
    let b_shape = Shape {
        rows: br,
        cols: bc,
        ld: bc + pad,
    };
    let c_shape = Shape {
        rows: m,
        cols: n,
        ld: n + pad,
    };
    let mut fill = |s: Shape, nan: bool| -> Vec<T> {
        let mut v = vec![T::from_f64(PAD_MARKER); s.len()];
        for i in 0..s.rows {
            for j in 0..s.cols {
                v[i * s.ld + j] = if nan {
                    T::from_f64(f64::NAN)
                } else {
                    T::from_f64(r.random_range(-1.0..1.0))
                };
            }
        }
        v
    };
    let a = fill(a_shape, false);
    let b = fill(b_shape, false);
    let c = fill(c_shape, params.beta == T::ZERO);
    GemmCase {
        params,
        m,
        n,
        k,
        a,
        a_shape,
        b,
        b_shape,
        c,
        c_shape,
    }
}
