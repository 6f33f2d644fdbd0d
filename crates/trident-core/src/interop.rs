//! Conversions from and to the Rust ecosystem's matrix types, each behind an
//! optional feature of `trident-core` (all off by default):
//!
//! | feature | what |
//! | --- | --- |
//! | `sprs` | `TryFrom` between [`CsrMatrix`] and `sprs::CsMat` (both ways, checked) |
//! | `ndarray` | [`MatRef`] / [`MatMut`] views of standard-layout `ndarray` matrices (no copy); points from an N x 3 array (no copy) |
//! | `nalgebra` | `nalgebra::DMatrix` (column-major) as the row-major view of its transpose (no copy), or copied to row-major |
//! | `faer` | `faer::MatRef` / `MatMut` as [`MatRef`] / [`MatMut`] when contiguous row-major (no copy); contiguous column-major as the view of the transpose (no copy); any layout copied to row-major; Trident views as `faer::MatRef` (no copy) |
//!
//! `serde` (the feature of the same name) is not here: it derives
//! `Serialize`/`Deserialize` on the value types themselves.

#[cfg(any(feature = "sprs", feature = "ndarray", feature = "faer"))]
use crate::Error;
#[cfg(any(
    feature = "sprs",
    feature = "ndarray",
    feature = "nalgebra",
    feature = "faer"
))]
use crate::Result;
#[allow(unused_imports)]
use crate::{CsrMatrix, MatMut, MatRef, Point, Scalar};

#[cfg(feature = "sprs")]
mod with_sprs {
    use super::*;

    #[cfg_attr(docsrs, doc(cfg(feature = "sprs")))]
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

    #[cfg_attr(docsrs, doc(cfg(feature = "sprs")))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "nalgebra")))]
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

/// `faer` matrices in Trident's row-major terms.
///
/// faer stores column-major with a column stride that is often padded for
/// alignment (`Mat::zeros(3, 3)` of `f32` has a column stride of 16 or so),
/// so a no-copy view exists only where the elements are exactly contiguous:
/// [`mat_ref`](faer_views::mat_ref) for a contiguous row-major view (e.g.
/// `MatRef::from_row_major_slice`, or the `.transpose()` of a contiguous
/// column-major one), [`transposed_view`](faer_views::transposed_view) for a
/// contiguous column-major one. Anything else is an error naming the strides,
/// or [`to_row_major`](faer_views::to_row_major) copies it. The padding of a
/// strided view is never read: it may be uninitialized, or belong to another
/// view of the same matrix.
#[cfg(feature = "faer")]
#[cfg_attr(docsrs, doc(cfg(feature = "faer")))]
pub mod faer_views {
    use super::*;

    fn layout(what: &str, m: (usize, usize, isize, isize), want: &str) -> Error {
        let (r, c, rs, cs) = m;
        Error::arg(
            "faer",
            format!(
                "{what} ({r} x {c}, row stride {rs}, column stride {cs}) is not contiguous {want}; \
                 copy it with faer_views::to_row_major"
            ),
        )
    }

    /// Whether element `(i, j)` of an `r x c` view with strides `(rs, cs)`
    /// sits at `i * c + j`, i.e. the view is a packed row-major block.
    fn packed_row_major(r: usize, c: usize, rs: isize, cs: isize) -> bool {
        (c <= 1 || cs == 1) && (r <= 1 || rs == c as isize)
    }

    /// A row-major view of a contiguous row-major `faer` matrix, without a copy.
    pub fn mat_ref<'a, T: Scalar>(m: faer::MatRef<'a, T>) -> Result<MatRef<'a, T>> {
        let (r, c, rs, cs) = (m.nrows(), m.ncols(), m.row_stride(), m.col_stride());
        if !packed_row_major(r, c, rs, cs) {
            return Err(layout("the matrix", (r, c, rs, cs), "row-major"));
        }
        let len = r * c;
        let data: &'a [T] = if len == 0 {
            &[]
        } else {
            // SAFETY: the view is packed row-major (checked above), so its
            // r * c elements are exactly the consecutive elements starting at
            // `as_ptr()`, all initialized and borrowed shared for 'a by `m`.
            unsafe { std::slice::from_raw_parts(m.as_ptr(), len) }
        };
        MatRef::dense(data, r, c)
    }

    /// A mutable row-major view (for GEMM's C) of a contiguous row-major
    /// `faer` matrix, without a copy.
    pub fn mat_mut<'a, T: Scalar>(m: faer::MatMut<'a, T>) -> Result<MatMut<'a, T>> {
        let (r, c, rs, cs) = (m.nrows(), m.ncols(), m.row_stride(), m.col_stride());
        if !packed_row_major(r, c, rs, cs) {
            return Err(layout("the output matrix", (r, c, rs, cs), "row-major"));
        }
        let len = r * c;
        let data: &'a mut [T] = if len == 0 {
            &mut []
        } else {
            // SAFETY: as in `mat_ref`; `m` is consumed, so this slice is the
            // only access to those elements for 'a.
            unsafe { std::slice::from_raw_parts_mut(m.as_ptr_mut(), len) }
        };
        MatMut::dense(data, r, c)
    }

    /// The storage of a contiguous column-major `m` (rows x cols) read as a
    /// row-major cols x rows matrix: the view of `m^T`, without a copy. Pass
    /// it with `Op::T` to GEMM to compute with `m` itself.
    pub fn transposed_view<'a, T: Scalar>(m: faer::MatRef<'a, T>) -> Result<MatRef<'a, T>> {
        let (r, c, rs, cs) = (m.nrows(), m.ncols(), m.row_stride(), m.col_stride());
        if !packed_row_major(c, r, cs, rs) {
            return Err(layout("the matrix", (r, c, rs, cs), "column-major"));
        }
        mat_ref(m.transpose())
    }

    /// `m` copied to row-major order, any strides: `(data, rows, cols)` for
    /// [`MatRef::dense`].
    pub fn to_row_major<T: Scalar>(m: faer::MatRef<'_, T>) -> (Vec<T>, usize, usize) {
        let (r, c) = (m.nrows(), m.ncols());
        let mut v = Vec::with_capacity(r * c);
        for i in 0..r {
            for j in 0..c {
                v.push(m[(i, j)]);
            }
        }
        (v, r, c)
    }

    /// A Trident view (row-major, leading dimension `ld`) as a `faer` view,
    /// without a copy: for handing Trident's inputs or GEMM results to faer's
    /// solvers.
    pub fn as_faer<'a, T: Scalar>(m: MatRef<'a, T>) -> faer::MatRef<'a, T> {
        let (r, c, ld) = (m.rows(), m.cols(), m.ld());
        if r == 0 || c == 0 {
            return faer::MatRef::from_row_major_slice(&[], r, c);
        }
        // MatRef guarantees data.len() >= (r - 1) * ld + c, what faer checks.
        faer::MatRef::from_row_major_slice_with_stride(m.data(), r, c, ld)
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

    #[cfg(feature = "faer")]
    #[test]
    fn faer_views_copy_only_when_strided() {
        let data = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        // Row-major faer view over a slice: no copy.
        let f = faer::MatRef::from_row_major_slice(&data, 2, 3);
        let v = faer_views::mat_ref(f).unwrap();
        assert_eq!((v.rows(), v.cols(), v.get(1, 2)), (2, 3, 6.0));
        assert_eq!(v.data().as_ptr(), data.as_ptr());
        // Column-major over the same slice: 3 x 2, read as its 2 x 3 transpose.
        let f = faer::MatRef::from_column_major_slice(&data, 3, 2);
        assert!(faer_views::mat_ref(f).is_err());
        let t = faer_views::transposed_view(f).unwrap();
        assert_eq!((t.rows(), t.cols(), t.get(1, 0)), (2, 3, 4.0));
        assert_eq!(t.data().as_ptr(), data.as_ptr());
        // A strided sub-view (every other column of a 2 x 3): an error, or a copy.
        let f = faer::MatRef::from_row_major_slice(&data, 2, 3);
        let sub = f.subcols(1, 2);
        let e = faer_views::mat_ref(sub).unwrap_err().to_string();
        assert!(
            e.contains("row stride 3") && e.contains("to_row_major"),
            "{e}"
        );
        assert_eq!(
            faer_views::to_row_major(sub),
            (vec![2.0, 3.0, 5.0, 6.0], 2, 2)
        );
        // An owned faer Mat (column-major, possibly padded) always copies right.
        let m = faer::Mat::<f32>::from_fn(3, 2, |i, j| (i * 2 + j) as f32);
        assert_eq!(
            faer_views::to_row_major(m.as_ref()),
            (vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 3, 2)
        );
        // Mutable view for GEMM's C, and back to faer without a copy.
        let mut out = [0.0f32; 4];
        {
            let f = faer::MatMut::from_row_major_slice_mut(&mut out, 2, 2);
            let mut c = faer_views::mat_mut(f).unwrap();
            c.row_mut(1)[0] = 7.0;
        }
        assert_eq!(out, [0.0, 0.0, 7.0, 0.0]);
        let padded = [1.0f32, 2.0, -1.0, 3.0, 4.0];
        let view = MatRef::new(&padded, 2, 2, 3).unwrap();
        let back = faer_views::as_faer(view);
        assert_eq!((back[(0, 1)], back[(1, 0)], back[(1, 1)]), (2.0, 3.0, 4.0));
        let empty = faer::MatRef::<f64>::from_row_major_slice(&[], 0, 4);
        assert_eq!(faer_views::mat_ref(empty).unwrap().rows(), 0);
    }
}
