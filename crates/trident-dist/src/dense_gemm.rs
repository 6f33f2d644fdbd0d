//! DenseGemm across ranks, 1-D: the rows of `op(A)` and of C are
//! partitioned (each rank passes its block of rows), B is replicated. Each
//! element of C is the same dot product as on one device; whether its bits
//! are the same depends on the backend keeping its summation order when m
//! changes (docs/semantics.md says which do).

use trident_core::{Error, GemmParams, MatMut, MatRef, Op, Precision, Result};

use crate::comm::CommExt;
use crate::sharded::{ShardScalar, Sharded, bits};

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
    pub fn gemm<T: ShardScalar>(
        &self,
        params: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        c: MatMut<'_, T>,
    ) -> Result<()> {
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
        self.settle(T::gemm(self.backend()).gemm(params, a, b, c))
    }
}

impl<'a> Sharded<'a> {
    /// [`Sharded::gemm`] with B partitioned too, for a B no rank can hold:
    /// each rank passes its block of columns of `op(B)` (`k x n_r`, stored
    /// as `op_b` says) and its rows of C with all `n` columns; the column
    /// blocks travel round the ring of ranks, and each step fills the
    /// matching columns of this rank's rows of C. Every element is still
    /// one dot product over the whole `k`.
    pub fn gemm_ring<T: ShardScalar>(
        &self,
        params: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        let (k, n_mine) = b.op_shape(params.op_b);
        self.agree(&[
            ("b.rows (of op(B))", k as u64),
            ("op_b", op_code(params.op_b)),
            ("op_a", op_code(params.op_a)),
            ("alpha", bits(params.alpha)),
            ("beta", bits(params.beta)),
            ("precision", precision_code(params.precision)),
            ("scalar type", bits(T::ONE)),
        ])?;
        let widths = self.comm().all_gather_u64(n_mine as u64)?;
        let n: usize = widths.iter().map(|&w| w as usize).sum();
        let (m, ka) = a.op_shape(params.op_a);
        let shapes = if c.cols() != n {
            Err(Error::dim(
                "c.cols",
                format!(
                    "{} columns, but the ranks' blocks of op(B) have {n} in all",
                    c.cols()
                ),
            ))
        } else if c.rows() != m || ka != k {
            Err(Error::dim(
                "a",
                format!("op(A) is {m} x {ka}, C has {} rows and op(B) {k}", c.rows()),
            ))
        } else {
            Ok(())
        };
        self.settle(shapes)?;
        // This rank's block as a dense copy (what travels), in B's storage order.
        let mut block: Vec<T> = (0..b.rows())
            .flat_map(|i| b.row(i).iter().copied())
            .collect();
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let mut origin = me;
        let ldc = c.ld();
        for step in 0..p {
            let w = widths[origin] as usize;
            let col0: usize = widths[..origin].iter().map(|&x| x as usize).sum();
            let local = if w == 0 || m == 0 {
                Ok(())
            } else {
                let (rows, cols) = match params.op_b {
                    Op::N => (k, w),
                    _ => (w, k),
                };
                MatRef::dense(&block, rows, cols).and_then(|bb| {
                    let sub = MatMut::new(&mut c.data_mut()[col0..], m, w, ldc)?;
                    T::gemm(self.backend()).gemm(params, a, bb, sub)
                })
            };
            self.settle(local)?;
            if step + 1 < p {
                block = self.comm().ring_shift(&block)?;
                origin = (origin + p - 1) % p;
            }
        }
        Ok(())
    }
}
