//! `sparse_encode`: OMP codes in scikit-learn's layout.
//!
//! scikit-learn holds the dictionary as `n_atoms x n_features` with the
//! atoms as rows; Trident's `Dictionary` is `n x K` with the atoms as
//! columns, so the dictionary (small beside the signals) is transposed into
//! a new buffer. The signals (`n_samples x n_features`, one per row) are
//! Trident's layout and are used in place.

use numpy::{Element, IntoPyArray, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rayon::prelude::*;
use trident::{Dictionary, MatRef, Scalar, SparseCoder, SparseCodes, StopRule, Trident};

use crate::arrays::{self, Index};
use crate::errors;
use crate::handles::compute;

const CALL: &str = "sparse_encode";

/// Codes every row of `x` over the rows of `dictionary`. `sparsity` and
/// `tol` give the stop rule (at least one of them); the result is a dense
/// `n_samples x n_atoms` array, or with `sparse` CSR's
/// `(indptr, indices, data)` with each row's atoms sorted.
#[pyfunction]
#[pyo3(signature = (x, dictionary, sparsity, tol, sparse, backend))]
pub fn sparse_encode<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    dictionary: &Bound<'py, PyAny>,
    sparsity: Option<usize>,
    tol: Option<f64>,
    sparse: bool,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let rule = match (sparsity, tol) {
        (Some(t), None) => StopRule::Sparsity(t),
        (None, Some(e)) => StopRule::Error(e),
        (Some(t), Some(e)) => StopRule::SparsityOrError {
            sparsity: t,
            error: e,
        },
        (None, None) => {
            return Err(errors::value(
                CALL,
                "a stop rule is needed: sparsity or tol",
            ));
        }
    };
    if let Ok(x) = x.cast::<PyArray2<f32>>() {
        typed::<f32>(py, x, dictionary, rule, sparse, backend)
    } else if let Ok(x) = x.cast::<PyArray2<f64>>() {
        typed::<f64>(py, x, dictionary, rule, sparse, backend)
    } else {
        Err(errors::type_error(
            CALL,
            "argument X must be a 2-D float32 or float64 array",
        ))
    }
}

fn typed<'py, T>(
    py: Python<'py>,
    x: &Bound<'py, PyArray2<T>>,
    dictionary: &Bound<'py, PyAny>,
    rule: StopRule,
    sparse: bool,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyAny>>
where
    T: Scalar + Element,
    Trident: SparseCoder<T>,
{
    let d = dictionary.cast::<PyArray2<T>>().map_err(|_| {
        errors::type_error(
            CALL,
            "argument dictionary must be a 2-D array of the dtype of X",
        )
    })?;
    let (atoms, n) = (d.shape()[0], d.shape()[1]);
    let (signals, xn) = (x.shape()[0], x.shape()[1]);
    if xn != n {
        return Err(errors::value(
            CALL,
            format!(
                "argument X: {xn} features per sample, but the dictionary's atoms have {n} \
                 (dictionary is n_atoms x n_features = {atoms} x {n})"
            ),
        ));
    }
    let d_ro = d.try_readonly()?;
    let d_rows = arrays::contiguous(&d_ro)?;
    let x_ro = x.try_readonly()?;
    let x_mat = arrays::mat(&x_ro)?;
    let codes = compute(py, CALL, backend, |t| {
        let dict = dictionary_of(&d_rows, atoms, n)?;
        let owned;
        let (data, ld) = if x_mat.transposed {
            // A Fortran-ordered X: OMP reads signals by row, so make rows.
            owned = transpose(&x_mat.data, x_mat.mem_rows, x_mat.mem_cols, x_mat.ld)?;
            (&owned[..], n)
        } else {
            (&x_mat.data[..], x_mat.ld)
        };
        let signals_view = MatRef::new(data, signals, n, ld)?;
        SparseCoder::<T>::encode(t, &dict, signals_view, rule)
    })?;
    if sparse {
        Ok(csr_arrays(py, &codes, atoms)?.into_any())
    } else {
        let out = arrays::new_array::<T>(py, [signals, atoms], true)?;
        {
            let mut rw = out.try_readwrite()?;
            let dense = rw
                .as_slice_mut()
                .map_err(|e| errors::TridentError::new_err(format!("{CALL}: output: {e}")))?;
            py.detach(|| scatter(&codes, dense, atoms));
        }
        Ok(out.into_any())
    }
}

/// scikit-learn's `n_atoms x n` rows as Trident's `n x n_atoms` dictionary,
/// with scikit-learn's words in the unit-norm error.
fn dictionary_of<T: Scalar>(rows: &[T], atoms: usize, n: usize) -> trident::Result<Dictionary<T>> {
    for j in 0..atoms {
        // The sum in the order `Dictionary::new` takes it, so both agree.
        let norm = rows[j * n..(j + 1) * n]
            .iter()
            .map(|v| v.to_f64() * v.to_f64())
            .sum::<f64>()
            .sqrt();
        if (norm - 1.0).abs() > trident::UNIT_NORM_TOL {
            return Err(trident::Error::arg(
                "dictionary",
                format!(
                    "row {j} (atom {j}) has norm {norm:.6}; atoms must have unit norm within {}",
                    trident::UNIT_NORM_TOL
                ),
            ));
        }
    }
    Dictionary::new(n, atoms, transpose(rows, atoms, n, n)?)
}

/// The transpose of a row-major `rows x cols` matrix with leading dimension
/// `ld`, as a dense row-major `cols x rows` buffer.
fn transpose<T: Copy>(data: &[T], rows: usize, cols: usize, ld: usize) -> trident::Result<Vec<T>> {
    let mut out = trident::mem::with_capacity(rows * cols, || {
        format!("a transposed copy of a {rows} x {cols} matrix")
    })?;
    for j in 0..cols {
        out.extend((0..rows).map(|i| data[i * ld + j]));
    }
    Ok(out)
}

/// Codes as CSR arrays, each row's atoms sorted as CSR requires (Trident
/// keeps them in selection order). Rows go to threads in blocks, each
/// block's entries one contiguous range of the output.
type Csr<I, T> = (Vec<I>, Vec<I>, Vec<T>);

fn csr_of<T: Scalar, I: Index>(codes: &SparseCodes<T>) -> trident::Result<Csr<I, T>> {
    let rows = codes.len();
    let offsets = &codes.offsets;
    let nnz = codes.atoms.len();
    let what = || format!("the CSR arrays of {nnz} coefficients");
    let mut indptr = trident::mem::with_capacity(offsets.len(), what)?;
    offsets
        .par_iter()
        .map(|&o| I::of(o))
        .collect_into_vec(&mut indptr);
    let mut indices = trident::mem::try_vec(nnz, I::of(0), what)?;
    let mut data = trident::mem::try_vec(nnz, T::ZERO, what)?;
    let per = rows.div_ceil(rayon::current_num_threads() * 8).max(1);
    let mut blocks = Vec::new();
    let (mut idx_rest, mut val_rest) = (&mut indices[..], &mut data[..]);
    let mut r0 = 0;
    while r0 < rows {
        let r1 = (r0 + per).min(rows);
        let len = offsets[r1] - offsets[r0];
        let (idx, rest) = std::mem::take(&mut idx_rest).split_at_mut(len);
        idx_rest = rest;
        let (val, rest) = std::mem::take(&mut val_rest).split_at_mut(len);
        val_rest = rest;
        blocks.push((r0, r1, idx, val));
        r0 = r1;
    }
    blocks.into_par_iter().for_each(|(r0, r1, idx, val)| {
        let mut order = Vec::new();
        for i in r0..r1 {
            let (atoms, coefs) = codes.signal(i);
            let start = offsets[i] - offsets[r0];
            order.clear();
            order.extend(0..atoms.len());
            order.sort_unstable_by_key(|&p| atoms[p]);
            for (q, &p) in order.iter().enumerate() {
                idx[start + q] = I::of(atoms[p] as usize);
                val[start + q] = coefs[p];
            }
        }
    });
    Ok((indptr, indices, data))
}

/// The codes as `(indptr, indices, data)` numpy arrays.
fn csr_arrays<'py, T: Scalar + Element>(
    py: Python<'py>,
    codes: &SparseCodes<T>,
    atoms: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    fn tuple<'py, T: Element, I: Index>(
        py: Python<'py>,
        (indptr, indices, data): (Vec<I>, Vec<I>, Vec<T>),
    ) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                indptr.into_pyarray(py).into_any(),
                indices.into_pyarray(py).into_any(),
                data.into_pyarray(py).into_any(),
            ],
        )
    }
    let narrow = codes.atoms.len() <= i32::MAX as usize && atoms <= i32::MAX as usize;
    if narrow {
        let parts = py.detach(|| csr_of::<T, i32>(codes));
        tuple(py, parts.map_err(|e| errors::to_py(CALL, e))?)
    } else {
        let parts = py.detach(|| csr_of::<T, i64>(codes));
        tuple(py, parts.map_err(|e| errors::to_py(CALL, e))?)
    }
}

/// Writes each signal's coefficients into its row of the zeroed dense
/// `signals x atoms` output, rows in parallel.
fn scatter<T: Scalar>(codes: &SparseCodes<T>, dense: &mut [T], atoms: usize) {
    if atoms == 0 {
        return;
    }
    dense
        .par_chunks_mut(atoms)
        .enumerate()
        .for_each(|(i, row)| {
            let (ids, coefs) = codes.signal(i);
            for (&j, &c) in ids.iter().zip(coefs) {
                row[j as usize] = c;
            }
        });
}
