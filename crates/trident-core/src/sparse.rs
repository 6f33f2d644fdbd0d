//! Compressed sparse row matrices and the [`SparseGemm`] trait.
//!
//! A [`CsrMatrix`] is valid by construction: [`CsrMatrix::new`] checks every
//! invariant docs/semantics.md names, so backends can rely on them without re-checking.

use crate::validate::check_finite;
use crate::{Error, Result, Scalar, mem};

/// The largest column count (and row count) a CSR matrix may have: column
/// indices are `u32`.
pub const MAX_DIM: usize = u32::MAX as usize;

/// A valid CSR matrix: `offsets` has `rows + 1` entries starting at 0 and
/// non-decreasing; the column indices of each row are `< cols`, strictly
/// increasing (sorted, no duplicates); every value is finite.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(
        try_from = "crate::serde_impls::CsrParts<T>",
        bound(deserialize = "T: Scalar + serde::Deserialize<'de>")
    )
)]
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
        check_structure(rows, cols, &offsets, &indices, values.len())?;
        check_finite("values", &values)?;
        Ok(Self {
            rows,
            cols,
            offsets,
            indices,
            values,
        })
    }

    /// Checks and wraps the arrays of a *result* (what a backend computed from
    /// valid inputs): the structure is checked as in [`CsrMatrix::new`], the
    /// values are not required to be finite.
    ///
    /// Finite inputs can still produce `inf` or `NaN` (`3e38 * 10` in f32), and
    /// like BLAS and SciPy Trident returns such a product rather than failing
    /// or panicking. Inputs are held to the finite rule by the primitives' own
    /// validation ([`crate::validate::spgemm`]), so a non-finite result cannot
    /// be fed back in unnoticed.
    ///
    /// ```
    /// # use trident_core::CsrMatrix;
    /// let c = CsrMatrix::from_result(1, 1, vec![0, 1], vec![0], vec![f32::INFINITY]).unwrap();
    /// assert!(c.values()[0].is_infinite());
    /// assert!(CsrMatrix::new(1, 1, vec![0, 1], vec![0], vec![f32::INFINITY]).is_err());
    /// ```
    pub fn from_result(
        rows: usize,
        cols: usize,
        offsets: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        check_structure(rows, cols, &offsets, &indices, values.len())?;
        Ok(Self {
            rows,
            cols,
            offsets,
            indices,
            values,
        })
    }

    /// A matrix read back from a device, where offsets are `u64`: converts them
    /// (an offset past `usize` is [`Error::TooLarge`]) and checks the structure
    /// as [`CsrMatrix::from_result`] does, since device CSR buffers are either
    /// validated uploads or a backend's results (which may hold Inf/NaN).
    pub fn from_device_parts(
        rows: usize,
        cols: usize,
        offsets: Vec<u64>,
        indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self> {
        let offsets = offsets
            .into_iter()
            .map(|o| {
                usize::try_from(o).map_err(|_| Error::TooLarge {
                    field: "offsets",
                    value: o as u128,
                    limit: usize::MAX as u128,
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        Self::from_result(rows, cols, offsets, indices, values)
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
        let mut counts = mem::try_vec(rows + 1, 0usize, || {
            format!("row counts of a {rows} x {cols} matrix")
        })?;
        for &(r, _, _) in triplets {
            counts[r as usize + 1] += 1;
        }
        for i in 0..rows {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        // (column, value, position in `triplets`): the position names the
        // culprits if duplicates sum to a non-finite value.
        let mut tmp: Vec<(u32, T, usize)> = vec![(0, T::ZERO, 0); triplets.len()];
        for (p, &(r, c, v)) in triplets.iter().enumerate() {
            tmp[next[r as usize]] = (c, v, p);
            next[r as usize] += 1;
        }
        let mut offsets = mem::with_capacity(rows + 1, || format!("CSR offsets of {rows} rows"))?;
        let mut indices = Vec::with_capacity(triplets.len());
        let mut values: Vec<T> = Vec::with_capacity(triplets.len());
        offsets.push(0);
        for i in 0..rows {
            let row = &mut tmp[counts[i]..counts[i + 1]];
            // Stable: duplicates are summed in the order the caller gave them.
            row.sort_by_key(|&(c, _, _)| c);
            let row_start = indices.len();
            for &(c, v, _) in row.iter() {
                match (indices.last(), values.last_mut()) {
                    (Some(&last), Some(acc)) if indices.len() > row_start && last == c => *acc += v,
                    _ => {
                        indices.push(c);
                        values.push(v);
                    }
                }
            }
            if let Some(q) = values[row_start..].iter().position(|v| !v.is_finite()) {
                let c = indices[row_start + q];
                let culprits: Vec<usize> = row
                    .iter()
                    .filter(|&&(cc, _, _)| cc == c)
                    .map(|&(_, _, p)| p)
                    .collect();
                return Err(Error::csr(
                    "triplets",
                    culprits[0],
                    format!(
                        "the {} triplets at positions {culprits:?} for entry ({i}, {c}) sum to {}, \
                         which is not finite",
                        culprits.len(),
                        values[row_start + q]
                    ),
                ));
            }
            offsets.push(indices.len());
        }
        Self::new(rows, cols, offsets, indices, values)
    }

    /// Wraps arrays a backend produced and knows to be valid, skipping the O(nnz)
    /// check (debug builds still run the structure check; values may be
    /// non-finite, as in [`CsrMatrix::from_result`]). `cargo xtask verify` re-checks every
    /// backend output through [`CsrMatrix::new`], so a lie here is caught there.
    #[doc(hidden)]
    pub fn from_parts_unchecked(
        rows: usize,
        cols: usize,
        offsets: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        if cfg!(debug_assertions)
            && let Err(e) = check_structure(rows, cols, &offsets, &indices, values.len())
        {
            // A broken structure here is a bug in the backend, not bad input.
            panic!("backend produced an invalid CSR matrix: {e}");
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
    ///
    /// The offsets array (`rows + 1` entries) is the only storage; a row count
    /// beyond [`MAX_DIM`] is [`Error::TooLarge`] and one whose offsets do not
    /// fit in memory is [`Error::OutOfMemory`], never an abort.
    pub fn zeros(rows: usize, cols: usize) -> Result<Self> {
        check_dim("rows", rows)?;
        check_dim("cols", cols)?;
        let offsets = mem::try_vec(rows + 1, 0usize, || {
            format!("the CSR offsets of an empty {rows} x {cols} matrix")
        })?;
        Ok(Self {
            rows,
            cols,
            offsets,
            indices: Vec::new(),
            values: Vec::new(),
        })
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
    /// A lower bound on the nnz of `self * b` that costs `O(nnz(self))`: per
    /// row, the longest row of `b` it touches (one row of `b` alone has that
    /// many distinct columns). Backends check it against memory before the
    /// product, so an outer product with billions of entries is an
    /// [`Error::OutOfMemory`] at once rather than an abort after the
    /// symbolic pass. `b.rows()` must equal `self.cols()`.
    ///
    /// ```
    /// # use trident_core::CsrMatrix;
    /// let col = CsrMatrix::from_triplets(3, 1, &[(0, 0, 1.0f32), (1, 0, 1.0), (2, 0, 1.0)]).unwrap();
    /// let row = CsrMatrix::from_triplets(1, 4, &[(0, 0, 1.0f32), (0, 3, 1.0)]).unwrap();
    /// assert_eq!(col.product_nnz_lower_bound(&row), 6);
    /// ```
    pub fn product_nnz_lower_bound(&self, b: &CsrMatrix<T>) -> u128 {
        (0..self.rows)
            .map(|i| {
                self.row(i)
                    .0
                    .iter()
                    .map(|&p| b.row(p as usize).0.len() as u128)
                    .max()
                    .unwrap_or(0)
            })
            .sum()
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

/// Every CSR invariant but finiteness: dimensions within [`MAX_DIM`], `rows + 1`
/// offsets starting at 0 and non-decreasing, `indices` and `values` of length
/// `offsets[rows]`, column indices in range, sorted and unique within a row.
fn check_structure(
    rows: usize,
    cols: usize,
    offsets: &[usize],
    indices: &[u32],
    nvalues: usize,
) -> Result<()> {
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
    // Screens first (branch-free, and over threads for a large matrix); the
    // loops below, which name the first fault, run only when one fails.
    if offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1])) {
        // Monotone: every row's range lies inside `0..offsets[rows]`.
    } else {
        check_offsets(offsets)?;
    }
    let nnz = offsets[rows];
    if indices.len() != nnz {
        return Err(Error::dim(
            "indices",
            format!("length {} but offsets[{rows}] = {nnz}", indices.len()),
        ));
    }
    if nvalues != nnz {
        return Err(Error::dim(
            "values",
            format!("length {nvalues} but offsets[{rows}] = {nnz}"),
        ));
    }
    if rows_sorted_in_range(offsets, indices, cols) {
        return Ok(());
    }
    check_rows(rows, cols, offsets, indices)
}

/// The first offset smaller than the one before it, as an error.
fn check_offsets(offsets: &[usize]) -> Result<()> {
    for i in 0..offsets.len() - 1 {
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
    Ok(())
}

/// From this many stored entries the row screen runs on several threads.
const PAR_ROWS_MIN_NNZ: usize = 1 << 22;

/// Whether every row's columns are strictly increasing and below `cols`
/// (`offsets` monotone, `offsets[rows] == indices.len()`): a strictly
/// increasing row is in range iff its last column is.
fn rows_sorted_in_range(offsets: &[usize], indices: &[u32], cols: usize) -> bool {
    let rows = offsets.len() - 1;
    let ok = |r: std::ops::Range<usize>| {
        r.into_iter().all(|i| {
            let row = &indices[offsets[i]..offsets[i + 1]];
            row.last().is_none_or(|&l| (l as usize) < cols)
                && row.windows(2).fold(true, |ok, w| ok & (w[0] < w[1]))
        })
    };
    crate::validate::scan_parts(rows, indices.len() >= PAR_ROWS_MIN_NNZ, ok)
        .into_iter()
        .all(|good| good)
}

/// The first out-of-range or unsorted column, as an error.
fn check_rows(rows: usize, cols: usize, offsets: &[usize], indices: &[u32]) -> Result<()> {
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
    Ok(())
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
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `rows x rows` matrix with columns `i, i+1, i+2` (clipped) per row.
    fn banded(rows: usize) -> (Vec<usize>, Vec<u32>) {
        let mut offsets = vec![0];
        let mut indices = Vec::new();
        for i in 0..rows {
            indices.extend((i..(i + 3).min(rows)).map(|c| c as u32));
            offsets.push(indices.len());
        }
        (offsets, indices)
    }

    /// The screens (serial, and split over threads above 4M entries) pass a
    /// valid matrix, and a fault anywhere is still reported where it is,
    /// with the first fault named when there are two.
    #[test]
    fn structure_faults_are_found_in_small_and_large_matrices() {
        for rows in [1usize, 7, 1000, (PAR_ROWS_MIN_NNZ / 3) + 77] {
            let (offsets, mut indices) = banded(rows);
            let n = indices.len();
            assert!(
                check_structure(rows, rows, &offsets, &indices, n).is_ok(),
                "{rows}"
            );
            if rows < 7 {
                continue;
            }
            // Out of range near the end, then unsorted earlier too.
            let late = offsets[rows - 3];
            indices[late] = rows as u32;
            match check_structure(rows, rows, &offsets, &indices, n) {
                Err(Error::InvalidCsr {
                    field: "indices",
                    index,
                    ..
                }) => {
                    assert!(
                        index == late || index == late + 1,
                        "{rows}: {index} vs {late}"
                    )
                }
                other => panic!("{rows}: {other:?}"),
            }
            let early = offsets[rows / 2] + 1;
            indices[early] = indices[early - 1];
            match check_structure(rows, rows, &offsets, &indices, n) {
                Err(Error::InvalidCsr {
                    field: "indices",
                    index,
                    detail,
                }) => {
                    assert_eq!(index, early, "{rows}");
                    assert!(detail.contains("repeats"), "{detail}");
                }
                other => panic!("{rows}: {other:?}"),
            }
            // A decreasing offset is named by position.
            let mut bad = offsets.clone();
            bad[rows / 3] = bad[rows / 3 + 1] + 1;
            match check_structure(rows, rows, &bad, &indices, n) {
                Err(Error::InvalidCsr {
                    field: "offsets",
                    index,
                    ..
                }) => {
                    assert_eq!(index, rows / 3 + 1)
                }
                other => panic!("{rows}: {other:?}"),
            }
        }
    }
}
