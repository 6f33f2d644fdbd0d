//! SparseGemm for [`ReferenceBackend`]: row-by-row Gustavson product in f64,
//! each row's products gathered, sorted by column (stably) and merged.
//!
//! Why this form: the structure falls out of the products themselves, so an
//! entry whose products cancel, or whose inputs are explicit zeros, is still
//! stored (the contract's rule); each value is summed in ascending `p`, as every other
//! backend sums it; and the only workspace is one row's products, so an
//! output `u32::MAX` columns wide needs no `n`-sized array (the SMMP workspace
//! of sprs, used here before, aborted on such a product).
//!
//! Limits: before any output is allocated, a lower bound on the output's nnz
//! (per row, the longest `B` row it touches) is checked against the machine's
//! memory, so an outer product with billions of entries is
//! [`trident_core::Error::OutOfMemory`] at once, not an abort or an hour of
//! work; the output then grows through [`trident_core::mem`], which turns any
//! refused allocation into the same error.

use trident_core::{CsrMatrix, Result, Scalar, SparseGemm, mem, validate};

use crate::ReferenceBackend;

/// Bytes per stored output entry: a `u32` column and a value.
fn entry_bytes<T>() -> u128 {
    4 + size_of::<T>() as u128
}

impl<T: Scalar> SparseGemm<T> for ReferenceBackend {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        validate::spgemm(a, b)?;
        let (m, n) = (a.rows(), b.cols());
        if a.nnz() == 0 || b.nnz() == 0 {
            return CsrMatrix::zeros(m, n);
        }
        let at_least = a.product_nnz_lower_bound(b);
        mem::check_bytes(at_least * entry_bytes::<T>(), || {
            format!("the {m} x {n} product, which has at least {at_least} entries,")
        })?;
        let mut offsets = mem::with_capacity(m + 1, || format!("the offsets of {m} rows"))?;
        let mut indices: Vec<u32> = Vec::new();
        let mut values: Vec<T> = Vec::new();
        let mut row: Vec<(u32, f64)> = Vec::new();
        offsets.push(0);
        for i in 0..m {
            row.clear();
            let (acols, avals) = a.row(i);
            for (&p, &av) in acols.iter().zip(avals) {
                let (bcols, bvals) = b.row(p as usize);
                mem::reserve(&mut row, bcols.len(), || {
                    format!("the products of row {i} of the product")
                })?;
                row.extend(
                    bcols
                        .iter()
                        .zip(bvals)
                        .map(|(&j, &bv)| (j, av.to_f64() * bv.to_f64())),
                );
            }
            // Stable: equal columns stay in ascending p, the summation order.
            row.sort_by_key(|&(j, _)| j);
            let distinct = row.len() - row.windows(2).filter(|w| w[0].0 == w[1].0).count();
            let what = || format!("the entries of the product up to row {i}");
            mem::reserve(&mut indices, distinct, what)?;
            mem::reserve(&mut values, distinct, what)?;
            let mut t = 0;
            while t < row.len() {
                let j = row[t].0;
                let mut sum = row[t].1;
                t += 1;
                while t < row.len() && row[t].0 == j {
                    sum += row[t].1;
                    t += 1;
                }
                indices.push(j);
                values.push(T::from_f64(sum));
            }
            offsets.push(indices.len());
        }
        // Full structure check rather than trusting the loop: this is the
        // backend that defines correct, and O(nnz) is nothing next to the
        // product. Values may overflow T (3e38 * 10 in f32): a result, as in
        // BLAS and SciPy, not an error.
        CsrMatrix::from_result(m, n, offsets, indices, values)
    }
}
