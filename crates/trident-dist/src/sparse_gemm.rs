//! SparseGemm across ranks: A's rows are partitioned, B is replicated, and
//! C's row blocks stay where they were computed. [`Sharded::spgemm`] takes
//! the rows each rank already holds; [`Sharded::spgemm_balanced`] takes the
//! whole A and cuts it by work (the products each row needs, not the row
//! count: one power-law row can outweigh thousands). Each row of C is
//! computed as on one device, so the stacked blocks equal its answer.

use std::ops::Range;

use trident_core::{CsrMatrix, Result, Scalar};

use crate::comm::CommExt;
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

/// Columns `cols` of `b` as a matrix of their own (indices shifted to
/// start at 0): one rank's part of a B cut by columns.
pub fn column_block<T: Scalar>(b: &CsrMatrix<T>, cols: Range<usize>) -> Result<CsrMatrix<T>> {
    let mut offsets = Vec::with_capacity(b.rows() + 1);
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    offsets.push(0);
    for i in 0..b.rows() {
        let (idx, val) = b.row(i);
        for (&j, &v) in idx.iter().zip(val) {
            if cols.contains(&(j as usize)) {
                indices.push(j - cols.start as u32);
                values.push(v);
            }
        }
        offsets.push(indices.len());
    }
    CsrMatrix::new(b.rows(), cols.len(), offsets, indices, values)
}

impl<'a> Sharded<'a> {
    /// `C = A B` with B cut by columns too, for a B no rank holds: each
    /// rank passes its rows of A and its block of B's columns (all of B's
    /// rows; blocks in rank order make B), the blocks travel round the ring
    /// of ranks, and this rank gets its rows of C with all columns. Each
    /// entry of C is summed over A's row as with the whole B.
    pub fn spgemm_ring<T: ShardScalar>(
        &self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
    ) -> Result<CsrMatrix<T>> {
        self.agree(&[
            ("a.cols", a.cols() as u64),
            ("b.rows", b.rows() as u64),
            ("scalar type", bits(T::ONE)),
        ])?;
        let widths = self.comm().all_gather_u64(b.cols() as u64)?;
        let n: usize = widths.iter().map(|&w| w as usize).sum();
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let mut blocks: Vec<Option<CsrMatrix<T>>> = vec![None; p];
        let (mut offs, mut idx, mut val): (Vec<u64>, Vec<u32>, Vec<T>) = (
            b.offsets().iter().map(|&o| o as u64).collect(),
            b.indices().to_vec(),
            b.values().to_vec(),
        );
        let mut origin = me;
        for step in 0..p {
            let w = widths[origin] as usize;
            let part = CsrMatrix::new(
                b.rows(),
                w,
                offs.iter().map(|&o| o as usize).collect(),
                idx.clone(),
                val.clone(),
            )
            .and_then(|bb| T::spgemm(self.backend()).spgemm(a, &bb));
            blocks[origin] = Some(self.settle(part)?);
            if step + 1 < p {
                offs = self.comm().ring_shift(&offs)?;
                idx = self.comm().ring_shift(&idx)?;
                val = self.comm().ring_shift(&val)?;
                origin = (origin + p - 1) % p;
            }
        }
        // Row by row, the column blocks in order.
        let mut offsets = Vec::with_capacity(a.rows() + 1);
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        offsets.push(0);
        for i in 0..a.rows() {
            let mut col0 = 0u32;
            for (r, block) in blocks.iter().enumerate() {
                if let Some(c) = block {
                    let (ci, cv) = c.row(i);
                    indices.extend(ci.iter().map(|&j| j + col0));
                    values.extend_from_slice(cv);
                }
                col0 += widths[r] as u32;
            }
            offsets.push(indices.len());
        }
        // A product may overflow to inf or NaN (the contract keeps them).
        CsrMatrix::from_result(a.rows(), n, offsets, indices, values)
    }
}
