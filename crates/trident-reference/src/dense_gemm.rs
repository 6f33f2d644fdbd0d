//! DenseGemm for [`ReferenceBackend`]: `op(A)` and `op(B)` copied into nalgebra
//! `DMatrix<f64>`, multiplied there, and `alpha P + beta C` formed in f64 with a
//! single rounding back to `T`.
//!
//! [`Precision`](trident_core::Precision) is ignored: the answer is always the
//! f64 product, which meets every tolerance the contract names.

use nalgebra::DMatrix;
use trident_core::{DenseGemm, GemmParams, MatMut, MatRef, Op, Result, Scalar, validate};

use crate::ReferenceBackend;

/// `op(x)` as an f64 matrix.
fn op_to_f64<T: Scalar>(x: &MatRef<'_, T>, op: Op) -> DMatrix<f64> {
    let (r, c) = x.op_shape(op);
    if op.is_transposed() {
        DMatrix::from_fn(r, c, |i, j| x.get(j, i).to_f64())
    } else {
        DMatrix::from_fn(r, c, |i, j| x.get(i, j).to_f64())
    }
}

impl<T: Scalar> DenseGemm<T> for ReferenceBackend {
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        let dims = validate::gemm(p, &a, &b, &c)?;
        if dims.m == 0 || dims.n == 0 {
            return Ok(());
        }
        if p.alpha == T::ZERO || dims.k == 0 {
            // BLAS: A and B are not read; C <- beta C (0 * inf would be NaN).
            c.scale(p.beta);
            return Ok(());
        }
        let prod = op_to_f64(&a, p.op_a) * op_to_f64(&b, p.op_b);
        debug_assert_eq!(prod.shape(), (dims.m, dims.n));
        let alpha = p.alpha.to_f64();
        let beta = p.beta.to_f64();
        for i in 0..dims.m {
            // Only the row's `cols` elements: the padding up to `ld` is the caller's.
            let row = c.row_mut(i);
            for (j, cij) in row.iter_mut().enumerate() {
                let ab = alpha * prod[(i, j)];
                // beta == 0: C is not read, so a NaN there is simply overwritten.
                let v = if p.beta == T::ZERO {
                    ab
                } else {
                    ab + beta * cij.to_f64()
                };
                *cij = T::from_f64(v);
            }
        }
        Ok(())
    }
}
