//! SparseGemm across ranks: A's rows are partitioned, B is replicated, and
//! C's row blocks stay where they were computed. [`Sharded::spgemm`] takes
//! the rows each rank already holds; [`Sharded::spgemm_balanced`] takes the
//! whole A and cuts it by work (the products each row needs, not the row
//! count: one power-law row can outweigh thousands). Each row of C is
//! computed as on one device, so the stacked blocks equal its answer.

use std::ops::Range;

use trident_core::{CsrMatrix, Result, Scalar};

use crate::sharded::{ShardScalar, Sharded, bits, split_by_work};

/// Products each row of `A B` needs: the lengths of B's rows its entries
/// select.
pub fn row_work<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Vec<u64> {
    let bo = b.offsets();
    (0..a.rows())
        .map(|i| {
            let (cols, _) = a.row(i);
            cols.iter()
                .map(|&c| {
                    let c = c as usize;
                    if c + 1 < bo.len() { (bo[c + 1] - bo[c]) as u64 } else { 0 }
                })
                .sum::<u64>()
                // A row with no products still costs its visit.
                + 1
        })
        .collect()
}

/// Rows `rows` of `a` as a matrix of their own.
pub fn row_block<T: Scalar>(a: &CsrMatrix<T>, rows: Range<usize>) -> Result<CsrMatrix<T>> {
    let o = a.offsets();
    let (s, e) = (o[rows.start], o[rows.end]);
    let offsets: Vec<usize> = o[rows.start..=rows.end].iter().map(|&x| x - s).collect();
    CsrMatrix::new(
        rows.len(),
        a.cols(),
        offsets,
        a.indices()[s..e].to_vec(),
        a.values()[s..e].to_vec(),
    )
}

impl<'a> Sharded<'a> {
    /// `C = A B` for this rank's rows of A against the replicated B: this
    /// rank's rows of C.
    pub fn spgemm<T: ShardScalar>(
        &self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
    ) -> Result<CsrMatrix<T>> {
        self.agree(&[
            ("a.cols", a.cols() as u64),
            ("b.rows", b.rows() as u64),
            ("b.cols", b.cols() as u64),
            ("b.nnz", b.nnz() as u64),
            ("scalar type", bits(T::ONE)),
            self.replica("b.indices (contents)", b.indices()),
            self.replica("b.values (contents)", b.values()),
        ])?;
        self.settle(T::spgemm(self.backend()).spgemm(a, b))
    }

    /// `C = A B` with A replicated: the rows are cut by work, this rank
    /// computes the returned range of rows of C.
    pub fn spgemm_balanced<T: ShardScalar>(
        &self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
    ) -> Result<(Range<usize>, CsrMatrix<T>)> {
        self.agree(&[("a.rows", a.rows() as u64), ("a.nnz", a.nnz() as u64)])?;
        let ranges = split_by_work(&row_work(a, b), self.cluster().size());
        let rows = ranges[self.cluster().rank()].clone();
        let block = self.settle(row_block(a, rows.clone()))?;
        Ok((rows, self.spgemm(&block, b)?))
    }

    /// Every rank's rows of C, stacked in rank order, on every rank.
    pub fn gather_csr<T: Scalar>(&self, local: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        let (offsets, indices, values) =
            self.gather_csr_parts(local.offsets(), local.indices(), local.values())?;
        let cols = local.cols();
        // A product may overflow to inf or NaN (the contract keeps them).
        CsrMatrix::from_result(offsets.len() - 1, cols, offsets, indices, values)
    }
}
