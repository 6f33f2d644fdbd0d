//! DenseGemm across ranks, 1-D: the rows of `op(A)` and of C are
//! partitioned (each rank passes its block of rows), B is replicated. Each
//! element of C is the same dot product as on one device; whether its bits
//! are the same depends on the backend keeping its summation order when m
//! changes (docs/semantics.md says which do).

use trident_core::{
    DenseGemm, GemmParams, MatMut, MatRef, Op, Precision, Primitives, Result, Scalar,
};

use crate::sharded::{Sharded, bits};

fn op_code(op: Op) -> u64 {
    match op {
        Op::N => 0,
        Op::T => 1,
        #[allow(unreachable_patterns)]
        _ => 2,
    }
}

fn precision_code(p: Precision) -> u64 {
    match p {
        Precision::Strict => 0,
        Precision::Tf32 => 1,
        #[allow(unreachable_patterns)]
        _ => 2,
    }
}

impl<'a> Sharded<'a> {
    /// `C = alpha op(A) op(B) + beta C` for this rank's rows of `op(A)` and
    /// C, against the replicated B.
    pub fn gemm<T: Scalar>(
        &self,
        params: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        c: MatMut<'_, T>,
    ) -> Result<()>
    where
        dyn Primitives + 'a: DenseGemm<T>,
    {
        let (k, n) = b.op_shape(params.op_b);
        self.agree(&[
            ("b.rows (of op(B))", k as u64),
            ("b.cols (of op(B))", n as u64),
            ("op_b", op_code(params.op_b)),
            ("op_a", op_code(params.op_a)),
            ("alpha", bits(params.alpha)),
            ("beta", bits(params.beta)),
            ("precision", precision_code(params.precision)),
            ("scalar type", bits(T::ONE)),
            self.replica("b (contents)", b.data()),
        ])?;
        self.settle(DenseGemm::<T>::gemm(self.backend(), params, a, b, c))
    }
}
