//! Compressed sparse row matrices and the [`SparseGemm`] trait.
//!
//! A [`CsrMatrix`] is valid by construction: [`CsrMatrix::new`] checks every
//! invariant SPEC.md names, so backends can rely on them without re-checking.

use crate::validate::check_finite;
use crate::{Error, Result, Scalar};

/// The largest column count (and row count) a CSR matrix may have: column
/// indices are `u32`.
pub const MAX_DIM: usize = u32::MAX as usize;

/// A valid CSR matrix: `offsets` has `rows + 1` entries starting at 0 and
/// non-decreasing; the column indices of each row are `< cols`, strictly
/// increasing (sorted, no duplicates); every value is finite.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix<T> {
    rows: usize,
    cols: usize,
    offsets: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> CsrMatrix<T> {
    /// Checks and wraps CSR arrays.
    ///
    /// ```
    /// # use trident_core::CsrMatrix;
    /// // [[1, 0, 2],
    /// //  [0, 0, 0],
    /// //  [0, 3, 0]]
    /// let m = CsrMatrix::new(3, 3, vec![0, 2, 2, 3], vec![0, 2, 1], vec![1.0f32, 2.0, 3.0]).unwrap();
    /// assert_eq!(m.row(0), (&[0u32, 2][..], &[1.0f32, 2.0][..]));
    /// assert!(CsrMatrix::new(1, 2, vec![0, 2], vec![1, 0], vec![1.0f32, 1.0]).is_err()); // unsorted
    /// ```
    pub fn new(
        rows: usize,
        cols: usize,
        offsets: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        check_dim("rows", rows)?;
        check_dim("cols", cols)?;
        if offsets.len() != rows + 1 {
            return Err(Error::dim(
                "offsets",
                format!(
                    "length {} for {rows} rows, expected {}",
                    offsets.len(),
                    rows + 1
                ),
            ));
        }
        if offsets[0] != 0 {
            return Err(Error::csr(
                "offsets",
                0,
                format!("= {}, must be 0", offsets[0]),
            ));
        }
        for i in 0..rows {
            if offsets[i + 1] < offsets[i] {
                return Err(Error::csr(
                    "offsets",
                    i + 1,
                    format!(
                        "= {} is smaller than offsets[{i}] = {}",
                        offsets[i + 1],
                        offsets[i]
                    ),
                ));
            }
        }
        let nnz = offsets[rows];
        if indices.len() != nnz {
            return Err(Error::dim(
                "indices",
                format!("length {} but offsets[{rows}] = {nnz}", indices.len()),
            ));
        }
        if values.len() != nnz {
            return Err(Error::dim(
                "values",
                format!("length {} but offsets[{rows}] = {nnz}", values.len()),
            ));
        }
        for i in 0..rows {
            let (s, e) = (offsets[i], offsets[i + 1]);
            for p in s..e {
                let c = indices[p];
                if c as usize >= cols {
                    return Err(Error::csr(
                        "indices",
                        p,
                        format!("= {c} is out of range for {cols} columns (row {i})"),
                    ));
                }
                if p > s && indices[p - 1] >= c {
                    let what = if indices[p - 1] == c {
                        "repeats"
                    } else {
                        "is smaller than"
                    };
                    return Err(Error::csr(
                        "indices",
                        p,
                        format!(
                            "= {c} {what} indices[{}] = {} in row {i}; columns must be sorted and unique",
                            p - 1,
                            indices[p - 1]
                        ),
                    ));
                }
            }
        }
        check_finite("values", &values)?;
        Ok(Self {
            rows,
            cols,
            offsets,
            indices,
            values,
        })
    }

    /// Builds a matrix from `(row, col, value)` triplets in any order, summing
    /// duplicates (an entry whose duplicates sum to zero is kept as an explicit 0).
    ///
    /// ```
    /// # use trident_core::CsrMatrix;
    /// let m = CsrMatrix::from_triplets(2, 2, &[(1, 0, 1.0f64), (0, 1, 2.0), (1, 0, 0.5)]).unwrap();
    /// assert_eq!(m.offsets(), &[0, 1, 2]);
    /// assert_eq!(m.values(), &[2.0, 1.5]);
    /// ```
    pub fn from_triplets(rows: usize, cols: usize, triplets: &[(u32, u32, T)]) -> Result<Self> {
        check_dim("rows", rows)?;
        check_dim("cols", cols)?;
        for (p, &(r, c, v)) in triplets.iter().enumerate() {
            if r as usize >= rows {
                return Err(Error::csr(
                    "triplets",
                    p,
                    format!("row {r} is out of range for {rows} rows"),
                ));
            }
            if c as usize >= cols {
                return Err(Error::csr(
                    "triplets",
                    p,
                    format!("column {c} is out of range for {cols} columns"),
                ));
            }
            if !v.is_finite() {
                return Err(Error::NonFinite {
                    field: "triplets",
                    index: p,
                    value: v.to_f64(),
                });
            }
        }
        // Counting sort by row, then sort each row by column and merge duplicates.
        let mut counts = vec![0usize; rows + 1];
        for &(r, _, _) in triplets {
            counts[r as usize + 1] += 1;
        }
        for i in 0..rows {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        let mut tmp: Vec<(u32, T)> = vec![(0, T::ZERO); triplets.len()];
        for &(r, c, v) in triplets {
            tmp[next[r as usize]] = (c, v);
            next[r as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(rows + 1);
        let mut indices = Vec::with_capacity(triplets.len());
        let mut values = Vec::with_capacity(triplets.len());
        offsets.push(0);
        for i in 0..rows {
            let row = &mut tmp[counts[i]..counts[i + 1]];
            row.sort_by_key(|&(c, _)| c);
            for &(c, v) in row.iter() {
                if indices.len() > *offsets.last().unwrap() && *indices.last().unwrap() == c {
                    *values.last_mut().unwrap() += v;
                } else {
                    indices.push(c);
                    values.push(v);
                }
            }
            offsets.push(indices.len());
        }
        Self::new(rows, cols, offsets, indices, values)
    }

    /// Wraps arrays a backend produced and knows to be valid, skipping the O(nnz)
    /// check (debug builds still run it). `cargo xtask verify` re-checks every
    /// backend output through [`CsrMatrix::new`], so a lie here is caught there.
    #[doc(hidden)]
    pub fn from_parts_unchecked(
        rows: usize,
        cols: usize,
        offsets: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        if cfg!(debug_assertions) {
            return Self::new(rows, cols, offsets, indices, values)
                .expect("backend produced an invalid CSR matrix");
        }
        Self {
            rows,
            cols,
            offsets,
            indices,
            values,
        }
    }

    /// An empty `rows x cols` matrix (no stored entries).
    pub fn zeros(rows: usize, cols: usize) -> Result<Self> {
        Self::new(rows, cols, vec![0; rows + 1], Vec::new(), Vec::new())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
    /// Row offsets (`rows + 1` entries).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
    /// Column indices, row by row.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }
    /// Values, parallel to `indices`.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Column indices and values of row `i`.
    pub fn row(&self, i: usize) -> (&[u32], &[T]) {
        let (s, e) = (self.offsets[i], self.offsets[i + 1]);
        (&self.indices[s..e], &self.values[s..e])
    }
    /// Gives the arrays back: `(offsets, indices, values)`.
    pub fn into_parts(self) -> (Vec<usize>, Vec<u32>, Vec<T>) {
        (self.offsets, self.indices, self.values)
    }
    /// The dense row-major equivalent (for tests and small matrices).
    pub fn to_dense(&self) -> Vec<T> {
        let mut d = vec![T::ZERO; self.rows * self.cols];
        for i in 0..self.rows {
            let (idx, val) = self.row(i);
            for (&c, &v) in idx.iter().zip(val) {
                d[i * self.cols + c as usize] = v;
            }
        }
        d
    }
    /// Number of scalar products `A(i,p) * B(p,j)` of `self * b` (half the flops),
    /// the work measure SpGEMM is reported in.
    pub fn products_with(&self, b: &CsrMatrix<T>) -> u64 {
        self.indices
            .iter()
            .map(|&p| (b.offsets[p as usize + 1] - b.offsets[p as usize]) as u64)
            .sum()
    }
}

fn check_dim(field: &'static str, v: usize) -> Result<()> {
    if v > MAX_DIM {
        return Err(Error::TooLarge {
            field,
            value: v as u128,
            limit: MAX_DIM as u128,
        });
    }
    Ok(())
}

/// Sparse times sparse: `C = A * B`.
pub trait SparseGemm<T: Scalar>: Send + Sync {
    /// `C = A * B` for CSR `A` (m x k) and `B` (k x n). The output is valid CSR with
    /// sorted, unique columns; entry `(i, j)` is stored iff some product
    /// `A(i,p) * B(p,j)` exists, even if the products cancel to zero.
    ///
    /// Errors: `a.cols() != b.rows()` ([`Error::DimensionMismatch`]); an output
    /// whose nnz does not fit the device ([`Error::OutOfMemory`]).
    ///
    /// ```
    /// use trident_core::{CsrMatrix, SparseGemm};
    /// # fn demo(backend: &dyn SparseGemm<f64>) -> trident_core::Result<()> {
    /// let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 1.0), (0, 1, 2.0), (1, 1, 3.0)])?;
    /// let c = backend.spgemm(&a, &a)?; // [[1, 8], [0, 9]]
    /// assert_eq!(c.values(), &[1.0, 8.0, 9.0]);
    /// # Ok(()) }
    /// ```
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>>;
}
