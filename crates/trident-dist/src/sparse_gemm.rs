//! SparseGemm across ranks: A's rows are partitioned, B is replicated, and
//! C's row blocks stay where they were computed. [`Sharded::spgemm`] takes
//! the rows each rank already holds; [`Sharded::spgemm_balanced`] takes the
//! whole A and cuts it by work (the products each row needs, not the row
//! count: one power-law row can outweigh thousands). Each row of C is
//! computed as on one device, so the stacked blocks equal its answer.
//! [`Sharded::spgemm_summa`] cuts all three into blocks over a process grid
//! (sparse SUMMA, as CombBLAS does), each entry of C summed panel by panel.

use std::ops::Range;

use bytemuck::Pod;
use trident_core::{CsrMatrix, Error, Result, Scalar, validate};

use crate::comm::{CommExt, Communicator};
use crate::grid::{Grid2d, check_block, panels};
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
    let width = cols.len();
    let (offsets, indices, values) = slice_csr(b, 0..b.rows(), cols);
    let offsets = offsets.into_iter().map(|o| o as usize).collect();
    CsrMatrix::new(b.rows(), width, offsets, indices, values)
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

/// A CSR matrix as the arrays that travel: offsets (as `u64`), column
/// indices, values.
type CsrParts<T> = (Vec<u64>, Vec<u32>, Vec<T>);

/// Rows `rows` and columns `cols` of `x`, column indices shifted to start
/// at 0 (the rows' indices are sorted, so each row's range is found by
/// bisection).
fn slice_csr<T: Scalar>(x: &CsrMatrix<T>, rows: Range<usize>, cols: Range<usize>) -> CsrParts<T> {
    let mut offsets = Vec::with_capacity(rows.len() + 1);
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    offsets.push(0u64);
    for r in rows {
        let (idx, val) = x.row(r);
        let lo = idx.partition_point(|&c| (c as usize) < cols.start);
        let hi = idx.partition_point(|&c| (c as usize) < cols.end);
        indices.extend(idx[lo..hi].iter().map(|&c| c - cols.start as u32));
        values.extend_from_slice(&val[lo..hi]);
        offsets.push(indices.len() as u64);
    }
    (offsets, indices, values)
}

/// `root`'s CSR parts of a `rows`-row matrix on every rank of `comm`:
/// the entry count first, then the three arrays.
fn share_csr<T: Pod>(
    comm: &dyn Communicator,
    root: usize,
    rows: usize,
    mine: Option<CsrParts<T>>,
) -> Result<CsrParts<T>> {
    if comm.size() == 1 {
        return mine.ok_or_else(|| Error::arg("root", "a group of one must be the root"));
    }
    let (mut offsets, mut indices, mut values) =
        mine.unwrap_or_else(|| (vec![0; rows + 1], Vec::new(), Vec::new()));
    let mut nnz = [indices.len() as u64];
    comm.broadcast(root, bytemuck::cast_slice_mut(&mut nnz))?;
    let nnz = usize::try_from(nnz[0]).map_err(|_| Error::TooLarge {
        field: "panel nnz",
        value: u128::from(nnz[0]),
        limit: usize::MAX as u128,
    })?;
    indices.resize(nnz, 0);
    values.resize(nnz, T::zeroed());
    comm.broadcast(root, bytemuck::cast_slice_mut(&mut offsets))?;
    comm.broadcast(root, bytemuck::cast_slice_mut(&mut indices))?;
    comm.broadcast(root, bytemuck::cast_slice_mut(&mut values))?;
    Ok((offsets, indices, values))
}

/// The parts as a matrix (a product's values may be non-finite, as in
/// [`CsrMatrix::from_result`]; the structure is checked).
fn from_parts<T: Scalar>(rows: usize, cols: usize, (o, i, v): CsrParts<T>) -> Result<CsrMatrix<T>> {
    CsrMatrix::from_result(
        rows,
        cols,
        o.into_iter().map(|x| x as usize).collect(),
        i,
        v,
    )
}

/// `x + y` of two matrices of one shape: the union of their structures
/// (an entry stored in either is stored, stored zeros and sums that cancel
/// included, as SpGEMM's symbolic structure asks), row by row in column
/// order.
fn add_csr<T: Scalar>(x: &CsrMatrix<T>, y: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
    let mut offsets = Vec::with_capacity(x.rows() + 1);
    let cap = x.nnz() + y.nnz();
    let (mut indices, mut values) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    offsets.push(0usize);
    for r in 0..x.rows() {
        let ((xi, xv), (yi, yv)) = (x.row(r), y.row(r));
        let (mut p, mut q) = (0, 0);
        while p < xi.len() || q < yi.len() {
            let (c, v) = match (xi.get(p), yi.get(q)) {
                (Some(&a), Some(&b)) if a == b => {
                    p += 1;
                    q += 1;
                    (a, xv[p - 1] + yv[q - 1])
                }
                (Some(&a), Some(&b)) if a < b => {
                    p += 1;
                    (a, xv[p - 1])
                }
                (Some(&a), None) => {
                    p += 1;
                    (a, xv[p - 1])
                }
                (_, Some(&b)) => {
                    q += 1;
                    (b, yv[q - 1])
                }
                (None, None) => break,
            };
            indices.push(c);
            values.push(v);
        }
        offsets.push(indices.len());
    }
    CsrMatrix::from_result(x.rows(), x.cols(), offsets, indices, values)
}

impl<'a> Sharded<'a> {
    /// `C = A B` over a 2-D process grid (sparse SUMMA, as CombBLAS does):
    /// every matrix is cut into `pr x pc` blocks as for
    /// [`Sharded::gemm_summa`] (rows by `pr`, columns by `pc`,
    /// [`Grid2d::block`]), and the rank at `(i, j)` passes block `(i, j)`
    /// of A (`m x k`) and of B (`k x n`), each a CSR matrix of its own
    /// (column indices counted from the block's first column), and gets
    /// block `(i, j)` of C back the same way. `(m, n, k)` is the global
    /// shape, the same on every rank.
    ///
    /// For each k-panel (the common refinement of A's and B's cuts of k),
    /// the owner of its columns of A broadcasts them along its process row,
    /// the owner of its rows of B along its process column, and every rank
    /// multiplies them with the local backend and adds the product to its
    /// block, panels in increasing k. C's structure is one device's (an
    /// entry is stored when any product exists, in any panel); each value
    /// is summed panel by panel, within the SpGEMM tolerance of one device
    /// and the same bits on every run.
    pub fn spgemm_summa<T: ShardScalar>(
        &self,
        grid: &Grid2d,
        (m, n, k): (usize, usize, usize),
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
    ) -> Result<CsrMatrix<T>> {
        let (pr, pc) = grid.shape();
        self.agree(&[
            ("m", m as u64),
            ("n", n as u64),
            ("k", k as u64),
            ("scalar type", bits(T::ONE)),
            ("grid (process rows)", pr as u64),
            ("grid (process columns)", pc as u64),
        ])?;
        let (i, j) = grid.pos();
        let ((rows, kcols), (krows, cols)) = (grid.block(m, k), grid.block(k, n));
        let (mi, nj) = (rows.len(), cols.len());
        let checked = grid
            .check_on(self.comm())
            .and_then(|()| check_block("a", (a.rows(), a.cols()), (mi, kcols.len()), (m, k), grid))
            .and_then(|()| check_block("b", (b.rows(), b.cols()), (krows.len(), nj), (k, n), grid))
            .and_then(|()| validate::spgemm_finite(a, b));
        self.settle(checked)?;
        let spgemm = T::spgemm(self.backend());
        let mut c: Result<Option<CsrMatrix<T>>> = Ok(None);
        for panel in panels(k, pr, pc) {
            let w = panel.k.len();
            // The panel's columns of A along this process row, its rows of
            // B along this process column.
            let mine = (j == panel.a_col).then(|| {
                let c0 = panel.k.start - kcols.start;
                slice_csr(a, 0..mi, c0..c0 + w)
            });
            let ap = share_csr(grid.row_comm(), panel.a_col, mi, mine)?;
            let mine = (i == panel.b_row).then(|| {
                let r0 = panel.k.start - krows.start;
                slice_csr(b, r0..r0 + w, 0..nj)
            });
            let bp = share_csr(grid.col_comm(), panel.b_row, w, mine)?;
            // A rank that failed keeps taking part in the broadcasts; the
            // outcome is settled once, after the last panel.
            if let Ok(sum) = &mut c {
                let product = from_parts(mi, w, ap)
                    .and_then(|ap| spgemm.spgemm(&ap, &from_parts(w, nj, bp)?));
                c = match (product, sum.take()) {
                    (Ok(p), None) => Ok(Some(p)),
                    (Ok(p), Some(s)) => add_csr(&s, &p).map(Some),
                    (Err(e), _) => Err(e),
                };
            }
        }
        match self.settle(c)? {
            Some(c) => Ok(c),
            // k == 0: no products, nothing stored.
            None => CsrMatrix::zeros(mi, nj),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_sums_keep_the_structure() {
        let x = CsrMatrix::<f64>::from_triplets(
            3,
            5,
            &[
                (0, 0, 1.0),
                (0, 3, 2.0),
                (1, 1, 3.0),
                (1, 4, 0.0),
                (2, 2, 5.0),
            ],
        )
        .unwrap();
        let (o, i, v) = slice_csr(&x, 0..3, 1..4);
        assert_eq!(
            (o, i, v),
            (vec![0, 1, 2, 3], vec![2, 0, 1], vec![2.0, 3.0, 5.0])
        );
        let (o, i, v) = slice_csr(&x, 1..2, 0..5);
        assert_eq!((o, i, v), (vec![0, 2], vec![1, 4], vec![3.0, 0.0]));
        let y = CsrMatrix::<f64>::from_triplets(3, 5, &[(0, 3, -2.0), (1, 0, 1.0), (2, 4, 1.0)])
            .unwrap();
        let s = add_csr(&x, &y).unwrap();
        // The cancelled (0, 3) and the stored zero (1, 4) stay stored.
        assert_eq!(s.offsets(), [0, 2, 5, 7]);
        assert_eq!(s.indices(), [0, 3, 0, 1, 4, 2, 4]);
        assert_eq!(s.values(), [1.0, 0.0, 1.0, 3.0, 0.0, 5.0, 1.0]);
    }
}
