//! Conversions from and to the Rust ecosystem's matrix types, each behind an
//! optional feature of `trident-core` (all off by default):
//!
//! | feature | what |
//! | --- | --- |
//! | `sprs` | `TryFrom` between [`CsrMatrix`] and `sprs::CsMat` (both ways, checked) |
//! | `ndarray` | [`MatRef`] / [`MatMut`] views of standard-layout `ndarray` matrices (no copy); points from an N x 3 array (no copy) |
//! | `nalgebra` | `nalgebra::DMatrix` (column-major) as the row-major view of its transpose (no copy), or copied to row-major |
//!
//! Not done yet: `faer` views (faer is not yet a dependency of the workspace)
//! and `serde` for the value types.

#[cfg(any(feature = "sprs", feature = "ndarray"))]
use crate::Error;
#[cfg(any(feature = "sprs", feature = "ndarray", feature = "nalgebra"))]
use crate::Result;
#[allow(unused_imports)]
use crate::{CsrMatrix, MatMut, MatRef, Point, Scalar};

#[cfg(feature = "sprs")]
mod with_sprs {
    use super::*;

    impl<T: Scalar> TryFrom<&sprs::CsMat<T>> for CsrMatrix<T> {
        type Error = Error;
        /// Copies a `sprs` matrix (CSR or CSC) into a checked [`CsrMatrix`].
        /// Errors: more than `u32::MAX` columns, or NaN/infinite values.
        fn try_from(m: &sprs::CsMat<T>) -> Result<Self> {
            let csr = m.to_csr();
            let offsets = csr.indptr().to_proper().into_owned();
            let base = offsets.first().copied().unwrap_or(0);
            let offsets: Vec<usize> = offsets.iter().map(|&o| o - base).collect();
            let indices = csr
                .indices()
                .iter()
                .enumerate()
                .map(|(k, &j)| {
                    u32::try_from(j)
                        .map_err(|_| Error::csr("indices", k, format!("column {j} exceeds u32")))
                })
                .collect::<Result<Vec<u32>>>()?;
            let values = csr.data().to_vec();
            CsrMatrix::new(csr.rows(), csr.cols(), offsets, indices, values)
        }
    }

    impl<T: Scalar> TryFrom<&CsrMatrix<T>> for sprs::CsMat<T> {
        type Error = Error;
        /// Copies a [`CsrMatrix`] into `sprs` CSR storage (checked by `sprs`).
        fn try_from(m: &CsrMatrix<T>) -> Result<Self> {
            let indices: Vec<usize> = m.indices().iter().map(|&j| j as usize).collect();
            sprs::CsMat::try_new(
                (m.rows(), m.cols()),
                m.offsets().to_vec(),
                indices,
                m.values().to_vec(),
            )
            .map_err(|(_, _, _, e)| Error::arg("sprs", e.to_string()))
        }
    }
}

/// Views of `ndarray` matrices.
#[cfg(feature = "ndarray")]
pub mod ndarray_views {
    use super::*;

    fn layout(what: &str) -> Error {
        Error::arg(
            "ndarray",
            format!(
                "{what} is not in standard (row-major, contiguous) layout; call .as_standard_layout() first"
            ),
        )
    }

    /// A row-major view of a standard-layout `ndarray` matrix, without a copy.
    pub fn mat_ref<'a, T: Scalar>(a: ndarray::ArrayView2<'a, T>) -> Result<MatRef<'a, T>> {
        let (r, c) = a.dim();
        let data = a.to_slice().ok_or_else(|| layout("the matrix"))?;
        MatRef::dense(data, r, c)
    }

    /// A mutable row-major view (for GEMM's C), without a copy.
    pub fn mat_mut<'a, T: Scalar>(a: ndarray::ArrayViewMut2<'a, T>) -> Result<MatMut<'a, T>> {
        let (r, c) = a.dim();
        let data = a.into_slice().ok_or_else(|| layout("the output matrix"))?;
        MatMut::dense(data, r, c)
    }

    /// The rows of an N x 3 standard-layout `f32` array as points, without a copy.
    pub fn points<'a>(a: ndarray::ArrayView2<'a, f32>) -> Result<&'a [Point]> {
        let (_, c) = a.dim();
        if c != 3 {
            return Err(Error::dim("points", format!("{c} columns, expected N x 3")));
        }
        let data = a.to_slice().ok_or_else(|| layout("the point array"))?;
        Ok(bytemuck::cast_slice(data))
    }
}

/// `nalgebra` matrices (column-major) in Trident's row-major terms.
#[cfg(feature = "nalgebra")]
pub mod nalgebra_views {
    use super::*;

    /// The column-major storage of `m` (rows x cols) read as a row-major
    /// cols x rows matrix: the view of `m^T`, without a copy. Pass it with
    /// `Op::T` to GEMM to compute with `m` itself.
    pub fn transposed_view<T: Scalar + nalgebra::Scalar>(
        m: &nalgebra::DMatrix<T>,
    ) -> Result<MatRef<'_, T>> {
        MatRef::dense(m.as_slice(), m.ncols(), m.nrows())
    }

    /// `m` copied to row-major order: `(data, rows, cols)` for [`MatRef::dense`].
    pub fn to_row_major<T: Scalar + nalgebra::Scalar>(
        m: &nalgebra::DMatrix<T>,
    ) -> (Vec<T>, usize, usize) {
        let (r, c) = m.shape();
        let mut v = Vec::with_capacity(r * c);
        for i in 0..r {
            for j in 0..c {
                v.push(m[(i, j)]);
            }
        }
        (v, r, c)
    }
}

#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use super::*;

    #[cfg(feature = "sprs")]
    #[test]
    fn sprs_round_trip_and_csc() {
        let a =
            CsrMatrix::from_triplets(2, 3, &[(0, 2, 1.0f64), (1, 0, 2.0), (1, 1, 3.0)]).unwrap();
        let s: sprs::CsMat<f64> = (&a).try_into().unwrap();
        assert_eq!(s.nnz(), 3);
        let back = CsrMatrix::try_from(&s).unwrap();
        assert_eq!(back, a);
        let csc = s.to_csc();
        assert_eq!(CsrMatrix::try_from(&csc).unwrap(), a);
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn ndarray_views_do_not_copy() {
        let a =
            ndarray::Array2::from_shape_vec((2, 3), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let v = ndarray_views::mat_ref(a.view()).unwrap();
        assert_eq!((v.rows(), v.cols(), v.get(1, 2)), (2, 3, 6.0));
        assert_eq!(v.data().as_ptr(), a.as_ptr());
        let t = a.t();
        assert!(ndarray_views::mat_ref(t).is_err());
        let p =
            ndarray::Array2::from_shape_vec((2, 3), vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(
            ndarray_views::points(p.view()).unwrap(),
            &[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        );
        assert!(ndarray_views::points(a.view().slice_move(ndarray::s![.., ..2])).is_err());
        let mut c = ndarray::Array2::<f64>::zeros((2, 2));
        let m = ndarray_views::mat_mut(c.view_mut()).unwrap();
        assert_eq!((m.rows(), m.cols()), (2, 2));
    }

    #[cfg(feature = "nalgebra")]
    #[test]
    fn nalgebra_transposed_view_and_copy() {
        let m = nalgebra::DMatrix::from_row_slice(2, 3, &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let t = nalgebra_views::transposed_view(&m).unwrap();
        assert_eq!((t.rows(), t.cols(), t.get(2, 1)), (3, 2, 6.0));
        assert_eq!(
            nalgebra_views::to_row_major(&m),
            (vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3)
        );
    }
}
