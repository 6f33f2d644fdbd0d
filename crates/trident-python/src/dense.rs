//! `gemm`: `alpha op(a) op(b) + beta c` into a new array, the arguments of
//! `scipy.linalg.blas.sgemm` / `dgemm`.

use numpy::{Element, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use trident::{DenseGemm, GemmParams, MatMut, MatRef, Op, Precision, Scalar, Trident};

use crate::arrays::{self, Mat};
use crate::errors;
use crate::handles::compute;

const CALL: &str = "gemm";

/// `alpha op(a) op(b) + beta c` as a new C-ordered array of the dtype of `a`
/// and `b` (float32 or float64, the same for both, and for `c`); `c` is read
/// only when `beta != 0` and is never written. `precision`: `"strict"`,
/// `"tf32"` or `"tf32x3"` ([`Precision`]).
#[pyfunction]
#[pyo3(signature = (a, b, c, alpha, beta, trans_a, trans_b, backend, precision = "strict"))]
#[allow(clippy::too_many_arguments)]
pub fn gemm<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    c: Option<&Bound<'py, PyAny>>,
    alpha: f64,
    beta: f64,
    trans_a: bool,
    trans_b: bool,
    backend: Option<&str>,
    precision: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let ops = (trans_a, trans_b);
    let precision = match precision {
        "strict" => Precision::Strict,
        "tf32" => Precision::Tf32,
        "tf32x3" => Precision::Tf32x3,
        other => {
            return Err(errors::value(
                CALL,
                format!(
                    "argument precision: {other:?} is not one of \"strict\", \"tf32\", \"tf32x3\""
                ),
            ));
        }
    };
    let opts = (ops, precision);
    if let Ok(a) = a.cast::<PyArray2<f32>>() {
        typed::<f32>(py, a, b, c, alpha, beta, opts, backend)
    } else if let Ok(a) = a.cast::<PyArray2<f64>>() {
        typed::<f64>(py, a, b, c, alpha, beta, opts, backend)
    } else {
        Err(errors::type_error(
            CALL,
            "argument a must be a 2-D float32 or float64 array",
        ))
    }
}

fn view<'a, T: Scalar>(x: &'a Mat<'_, T>) -> trident::Result<MatRef<'a, T>> {
    MatRef::new(&x.data, x.mem_rows, x.mem_cols, x.ld)
}

fn op(transposed: bool) -> Op {
    if transposed { Op::T } else { Op::N }
}

#[allow(clippy::too_many_arguments)]
fn typed<'py, T: Scalar + Element>(
    py: Python<'py>,
    a: &Bound<'py, PyArray2<T>>,
    b: &Bound<'py, PyAny>,
    c: Option<&Bound<'py, PyAny>>,
    alpha: f64,
    beta: f64,
    ((trans_a, trans_b), precision): ((bool, bool), Precision),
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyAny>>
where
    Trident: DenseGemm<T>,
{
    let same = |name: &str| {
        errors::type_error(
            CALL,
            format!("argument {name} must be a 2-D array of the dtype of a"),
        )
    };
    let b = b.cast::<PyArray2<T>>().map_err(|_| same("b"))?;
    let (ar, ac) = (a.shape()[0], a.shape()[1]);
    let (br, bc) = (b.shape()[0], b.shape()[1]);
    let (m, k) = if trans_a { (ac, ar) } else { (ar, ac) };
    let (k2, n) = if trans_b { (bc, br) } else { (br, bc) };
    if k != k2 {
        return Err(errors::value(
            CALL,
            format!(
                "argument b: op(a) is {m} x {k} but op(b) is {k2} x {n}; the inner dimensions must agree"
            ),
        ));
    }
    let out = if beta != 0.0 {
        let Some(c) = c else {
            return Err(errors::value(
                CALL,
                format!("argument c: beta = {beta} needs c (an {m} x {n} array)"),
            ));
        };
        let c = c.cast::<PyArray2<T>>().map_err(|_| same("c"))?;
        if c.shape() != [m, n] {
            return Err(errors::value(
                CALL,
                format!("argument c: shape {:?}, expected ({m}, {n})", c.shape()),
            ));
        }
        // A C-ordered copy (made without the GIL): the caller's c is never
        // written.
        let out = arrays::new_array::<T>(py, [m, n], false)?;
        let c_ro = c.try_readonly()?;
        let view = c_ro.as_array();
        let mut out_rw = out.try_readwrite()?;
        let mut dst = out_rw.as_array_mut();
        py.detach(|| dst.assign(&view));
        drop(out_rw);
        out
    } else {
        if let Some(c) = c {
            let c = c.cast::<PyArray2<T>>().map_err(|_| same("c"))?;
            if c.shape() != [m, n] {
                return Err(errors::value(
                    CALL,
                    format!("argument c: shape {:?}, expected ({m}, {n})", c.shape()),
                ));
            }
        }
        // Uninitialised: with beta == 0 the contract does not read C, and
        // every element of the m x n view is written before the array is
        // returned (on an error it is dropped unread).
        arrays::new_array::<T>(py, [m, n], false)?
    };
    let a_ro = a.try_readonly()?;
    let b_ro = b.try_readonly()?;
    let (a_mat, b_mat) = (arrays::mat(&a_ro)?, arrays::mat(&b_ro)?);
    let mut out_rw = out.try_readwrite()?;
    let c_data = out_rw
        .as_slice_mut()
        .map_err(|e| errors::TridentError::new_err(format!("{CALL}: output: {e}")))?;
    let params = GemmParams {
        alpha: T::from_f64(alpha),
        beta: T::from_f64(beta),
        // A transposed (Fortran-ordered) operand is the row-major memory of
        // its transpose: flip its op instead of copying it.
        op_a: op(trans_a != a_mat.transposed),
        op_b: op(trans_b != b_mat.transposed),
        precision,
    };
    compute(py, CALL, backend, move |t| {
        let c = MatMut::dense(c_data, m, n)?;
        DenseGemm::<T>::gemm(t, &params, view(&a_mat)?, view(&b_mat)?, c)
    })?;
    drop(out_rw);
    Ok(out.into_any())
}
