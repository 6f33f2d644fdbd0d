//! SparseGemm for [`ReferenceBackend`]: sprs's SMMP product (Bank and Douglas)
//! on f64 copies of the operands.
//!
//! SMMP computes the structure symbolically (the union of the B rows each A row
//! touches, sorted) before any arithmetic, so an entry whose products cancel,
//! or whose inputs are explicit zeros, is still stored: exactly SPEC's rule.
//! We call `sprs::smmp::mul_csr_csr` by name rather than `&a * &b` so that this
//! property does not hinge on which product routine the operator dispatches to,
//! and the tests (explicit zeros, cancellation) pin it down.

use sprs::CsMatI;
use trident_core::{CsrMatrix, Error, Result, Scalar, SparseGemm, validate};

use crate::ReferenceBackend;

fn to_sprs<T: Scalar>(m: &CsrMatrix<T>) -> Result<CsMatI<f64, u32, usize>> {
    let values: Vec<f64> = m.values().iter().map(|v| v.to_f64()).collect();
    CsMatI::try_new(
        (m.rows(), m.cols()),
        m.offsets().to_vec(),
        m.indices().to_vec(),
        values,
    )
    // CsrMatrix is valid by construction, so this is a bug of ours, not bad input.
    .map_err(|(_, _, _, e)| Error::backend(e))
}

impl<T: Scalar> SparseGemm<T> for ReferenceBackend {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        validate::spgemm(a, b)?;
        let (m, n) = (a.rows(), b.cols());
        // sprs's workspaces are indexed by column; skip it where there is nothing
        // to multiply (it also keeps the degenerate shapes out of sprs).
        if a.nnz() == 0 || b.nnz() == 0 {
            return CsrMatrix::zeros(m, n);
        }
        let sa = to_sprs(a)?;
        let sb = to_sprs(b)?;
        let c: CsMatI<f64, u32, usize> = sprs::smmp::mul_csr_csr(sa.view(), sb.view());
        let (offsets, indices, values) = c.into_raw_storage();
        let values: Vec<T> = values.into_iter().map(T::from_f64).collect();
        // Full check rather than trusting sprs: this is the backend that defines
        // correct, and O(nnz) is nothing next to the product.
        CsrMatrix::new(m, n, offsets, indices, values)
    }
}
