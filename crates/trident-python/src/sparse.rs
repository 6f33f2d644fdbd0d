//! `spgemm`: the product of two CSR matrices given as scipy's three arrays.
//!
//! Trident's `CsrMatrix` owns `usize` offsets and `u32` column indices, so
//! scipy's `int32`/`int64` arrays are converted (and checked) on the way in;
//! the values are copied as they are. The product comes back as numpy arrays
//! that take over Trident's buffers where the types agree (values; column
//! indices as int32), with scipy's index dtype rule: int32 while every index
//! and the entry count fit, int64 otherwise.

use numpy::{Element, IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use trident::{CsrMatrix, Scalar, SparseGemm, Trident};

use crate::arrays;
use crate::errors;
use crate::handles::{compute_in, detached};

const CALL: &str = "spgemm";

/// One CSR operand as scipy holds it: `(indptr, indices, data, shape)`.
type Csr<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    (usize, usize),
);

/// `a @ b` for CSR operands with sorted, unique column indices (the Python
/// layer brings any scipy matrix to that form), returned as
/// `(indptr, indices, data)` of the `a.rows x b.cols` product.
#[pyfunction]
#[pyo3(signature = (a, b, backend))]
pub fn spgemm<'py>(
    py: Python<'py>,
    a: Csr<'py>,
    b: Csr<'py>,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    if a.2.cast::<PyArray1<f32>>().is_ok() {
        typed::<f32>(py, a, b, backend)
    } else if a.2.cast::<PyArray1<f64>>().is_ok() {
        typed::<f64>(py, a, b, backend)
    } else {
        Err(errors::type_error(
            CALL,
            "argument a: data must be a float32 or float64 array",
        ))
    }
}

fn typed<'py, T>(
    py: Python<'py>,
    a: Csr<'py>,
    b: Csr<'py>,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>>
where
    T: Scalar + Element,
    Trident: SparseGemm<T>,
{
    // The same Python arrays for both operands (`A @ A`): convert once.
    let same = a.0.is(&b.0) && a.1.is(&b.1) && a.2.is(&b.2) && a.3 == b.3;
    let ma = csr_matrix::<T>(py, "a", &a)?;
    let mb = if same {
        None
    } else {
        Some(csr_matrix::<T>(py, "b", &b)?)
    };
    if a.3.1 != b.3.0 {
        return Err(errors::value(
            CALL,
            format!(
                "argument b: a is {} x {} but b is {} x {}; a's columns must equal b's rows",
                a.3.0, a.3.1, b.3.0, b.3.1
            ),
        ));
    }
    let c = compute_in(py, CALL, backend, None, |t| {
        SparseGemm::<T>::spgemm(t, &ma, mb.as_ref().unwrap_or(&ma))
    })?;
    let (rows, cols, nnz) = (c.rows(), c.cols(), c.nnz());
    let (offsets, indices, values) = c.into_parts();
    let narrow = nnz <= i32::MAX as usize && rows.max(cols) <= i32::MAX as usize;
    let values = values.into_pyarray(py).into_any();
    let (indptr, indices) = if narrow {
        let indices = as_i32(indices);
        let indptr = wide(offsets.len(), offsets.iter().map(|&o| o as i32))?;
        (
            indptr.into_pyarray(py).into_any(),
            indices.into_pyarray(py).into_any(),
        )
    } else {
        let indices = wide(indices.len(), indices.iter().map(|&c| i64::from(c)))?;
        let indptr = wide(offsets.len(), offsets.iter().map(|&o| o as i64))?;
        (
            indptr.into_pyarray(py).into_any(),
            indices.into_pyarray(py).into_any(),
        )
    };
    PyTuple::new(py, [indptr, indices, values])
}

/// The product's index arrays in numpy's type, allocated fallibly.
fn wide<I>(len: usize, it: impl Iterator<Item = I>) -> PyResult<Vec<I>> {
    arrays::try_collect(len, it, || format!("the product's {len} indices"))
        .map_err(|e| errors::to_py(CALL, e))
}

/// Column indices below `i32::MAX` as the int32 numpy takes, in place.
fn as_i32(indices: Vec<u32>) -> Vec<i32> {
    let mut v = std::mem::ManuallyDrop::new(indices);
    // SAFETY: u32 and i32 have one size and alignment, so the allocation is
    // a valid Vec<i32> of the same length and capacity, freed as such; every
    // index is below `cols <= i32::MAX`, so each keeps its value.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<i32>(), v.len(), v.capacity()) }
}

/// Checks and converts one operand; `name` is its argument name.
fn csr_matrix<'py, T: Scalar + Element>(
    py: Python<'py>,
    name: &str,
    (indptr, indices, data, (rows, cols)): &Csr<'py>,
) -> PyResult<CsrMatrix<T>> {
    let data = data.cast::<PyArray1<T>>().map_err(|_| {
        errors::type_error(
            CALL,
            format!("argument {name}: data must be a 1-D array of the dtype of a's data"),
        )
    })?;
    let data = data.try_readonly()?;
    let data = arrays::vector(&data)?;
    let offsets = index_array(py, name, "indptr", indptr, usize::MAX as u64, |v| {
        v as usize
    })?;
    let indices = index_array(py, name, "indices", indices, u32::MAX as u64, |v| v as u32)?;
    let (rows, cols) = (*rows, *cols);
    detached(py, CALL, move || {
        arrays::owned(data)
            .and_then(|values| CsrMatrix::new(rows, cols, offsets, indices, values))
            .map_err(|e| errors::to_py_in(CALL, Some(name), e))
    })
}

/// An int32 or int64 index array as `Vec<U>`, every entry in `0..=limit`.
fn index_array<'py, U: Send>(
    py: Python<'py>,
    name: &str,
    field: &str,
    arr: &Bound<'py, PyAny>,
    limit: u64,
    conv: impl Fn(u64) -> U + Send + Sync,
) -> PyResult<Vec<U>> {
    if let Ok(a) = arr.cast::<PyArray1<i32>>() {
        let ro = a.try_readonly()?;
        convert(py, name, field, &ro, limit, conv)
    } else if let Ok(a) = arr.cast::<PyArray1<i64>>() {
        let ro = a.try_readonly()?;
        convert(py, name, field, &ro, limit, conv)
    } else {
        Err(errors::type_error(
            CALL,
            format!("argument {name}: {field} must be an int32 or int64 array"),
        ))
    }
}

fn convert<'py, I, U>(
    py: Python<'py>,
    name: &str,
    field: &str,
    arr: &PyReadonlyArray1<'py, I>,
    limit: u64,
    conv: impl Fn(u64) -> U + Send + Sync,
) -> PyResult<Vec<U>>
where
    I: Element + Copy + Into<i64> + Sync,
    U: Send,
{
    let src = arrays::vector(arr)?;
    detached(py, CALL, || {
        let bad = |p: usize, v: i64| {
            errors::value(
                CALL,
                format!("argument {name}: {field}[{p}] = {v} is outside 0..={limit}"),
            )
        };
        // One pass on all cores converts every index and notes a rejected
        // one; only then is the first of them searched for, to name it.
        // (rayon's `position_first` costs tens of ns an element.)
        let ok = |v: I| -> Option<u64> {
            let v: i64 = v.into();
            (v >= 0 && v as u64 <= limit).then_some(v as u64)
        };
        let rejected = AtomicBool::new(false);
        let mut out = trident::mem::with_capacity(src.len(), || {
            format!("the {} entries of argument {name}'s {field}", src.len())
        })
        .map_err(|e| errors::to_py(CALL, e))?;
        // Huge pages where the kernel allows them: a fresh buffer of tens of
        // MB otherwise costs a page fault per 4 KiB as it is first written.
        trident::mem::advise_huge(&mut out);
        src.par_iter()
            .map(|&v| match ok(v) {
                Some(v) => conv(v),
                None => {
                    rejected.store(true, Ordering::Relaxed);
                    conv(0)
                }
            })
            .collect_into_vec(&mut out);
        if rejected.load(Ordering::Relaxed)
            && let Some(p) = src.iter().position(|&v| ok(v).is_none())
        {
            return Err(bad(p, src[p].into()));
        }
        Ok(out)
    })
}
