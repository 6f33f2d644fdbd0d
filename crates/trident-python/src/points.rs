//! Nearest points: `NearestIndex.query` and `.closest_pairs` in the shapes
//! `scipy.spatial.cKDTree` returns.
//!
//! Points are `float32` or `float64` triples (`trident_core::Point<T>`; the
//! Python layer picks float32 only where it holds the coordinates exactly,
//! so nothing is rounded); a C-contiguous `(n, 3)` array is used in place. Distances come back Euclidean in
//! float64, recomputed from the returned index on the exact (f64) values of
//! the coordinates in cKDTree's order of operations, so they are the
//! distances cKDTree reports for the same pair, not the backend's f32
//! squared distance.

use std::borrow::Cow;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use rayon::prelude::*;
use trident::{Coord, NearestPairs, Neighbor, Point, Trident};

use crate::arrays;
use crate::errors;
use crate::handles::compute;

/// An `(n, 3)` array as points, in place when C-contiguous.
fn points<'a, T: Coord + numpy::Element>(
    call: &str,
    name: &str,
    a: &'a PyReadonlyArray2<'_, T>,
) -> PyResult<Cow<'a, [Point<T>]>> {
    if a.shape()[1] != 3 {
        return Err(errors::value(
            call,
            format!(
                "argument {name}: shape {:?}, expected (n, 3): points are 3-D",
                a.shape()
            ),
        ));
    }
    if let Ok(s) = a.as_slice()
        && s.len() % 3 == 0
        && let Some(p) = Some(s.as_chunks::<3>().0)
    {
        return Ok(Cow::Borrowed(p));
    }
    let v = a.as_array();
    let n = v.nrows();
    arrays::try_collect(n, v.rows().into_iter().map(|r| [r[0], r[1], r[2]]), || {
        format!("a copy of {n} points")
    })
    .map(Cow::Owned)
    .map_err(|e| errors::to_py(call, e))
}

/// The Euclidean distance as cKDTree computes it, in f64 from the
/// coordinates (exact for f32 ones): `sqrt(dx*dx + dy*dy + dz*dz)`.
fn distance<T: Coord>(p: &Point<T>, q: &Point<T>) -> f64 {
    let mut s = 0.0f64;
    for d in 0..3 {
        let x = p[d].to_f64() - q[d].to_f64();
        s += x * x;
    }
    s.sqrt()
}

type Answer<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<i64>>);

/// The `k` nearest points of `data` to each row of `x`, as `(dist, idx)`,
/// both `(len(x), k)`, ascending by distance, ties to the smaller index.
/// `1 <= k <= len(data)` (the Python layer pads beyond, as cKDTree does).
#[pyfunction]
#[pyo3(signature = (data, x, k, backend))]
pub fn knn<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f32>,
    x: PyReadonlyArray2<'py, f32>,
    k: usize,
    backend: Option<&str>,
) -> PyResult<Answer<'py>> {
    knn_t(py, data, x, k, backend)
}

/// [`knn`] in float64 coordinates.
#[pyfunction]
#[pyo3(signature = (data, x, k, backend))]
pub fn knn_f64<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    k: usize,
    backend: Option<&str>,
) -> PyResult<Answer<'py>> {
    knn_t(py, data, x, k, backend)
}

fn knn_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, T>,
    x: PyReadonlyArray2<'py, T>,
    k: usize,
    backend: Option<&str>,
) -> PyResult<Answer<'py>>
where
    Trident: NearestPairs<T>,
{
    const CALL: &str = "NearestIndex.query";
    let b = points(CALL, "points", &data)?;
    let a = points(CALL, "x", &x)?;
    let n = a.len();
    let (dist, idx) = compute(py, CALL, backend, |t| {
        let len = n.checked_mul(k).ok_or(trident::Error::TooLarge {
            field: "len(x) * k",
            value: n as u128 * k as u128,
            limit: usize::MAX as u128,
        })?;
        let mut out = trident::mem::try_vec(len, Neighbor::<T>::default(), || {
            format!("the {n} x {k} neighbours")
        })?;
        if k == 1 {
            t.nearest(&a, &b, &mut out)?;
        } else {
            t.knn(&a, &b, k, &mut out)?;
        }
        let what = || format!("the {n} x {k} distances and indices");
        let mut dist = trident::mem::with_capacity(len, what)?;
        let mut idx = trident::mem::with_capacity(len, what)?;
        out.par_iter()
            .enumerate()
            .map(|(p, nb)| distance(&a[p / k], &b[nb.index as usize]))
            .collect_into_vec(&mut dist);
        out.par_iter()
            .map(|nb| nb.index as i64)
            .collect_into_vec(&mut idx);
        Ok((dist, idx))
    })?;
    Ok((shaped(py, dist, n, k)?, shaped(py, idx, n, k)?))
}

fn shaped<T: numpy::Element>(
    py: Python<'_>,
    v: Vec<T>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    Array2::from_shape_vec((rows, cols), v)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| errors::TridentError::new_err(format!("internal shape error: {e}")))
}

type Pairs<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Each row of `x` paired with its nearest point of `data`; the `k` pairs of
/// smallest distance (ties: smaller row of `x`), ascending, as
/// `(i, j, dist)`: `x[i]`'s nearest point is `data[j]`.
#[pyfunction]
#[pyo3(signature = (data, x, k, backend))]
pub fn closest_pairs<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f32>,
    x: PyReadonlyArray2<'py, f32>,
    k: usize,
    backend: Option<&str>,
) -> PyResult<Pairs<'py>> {
    closest_pairs_t(py, data, x, k, backend)
}

/// [`closest_pairs`] in float64 coordinates.
#[pyfunction]
#[pyo3(signature = (data, x, k, backend))]
pub fn closest_pairs_f64<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f64>,
    x: PyReadonlyArray2<'py, f64>,
    k: usize,
    backend: Option<&str>,
) -> PyResult<Pairs<'py>> {
    closest_pairs_t(py, data, x, k, backend)
}

fn closest_pairs_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, T>,
    x: PyReadonlyArray2<'py, T>,
    k: usize,
    backend: Option<&str>,
) -> PyResult<Pairs<'py>>
where
    Trident: NearestPairs<T>,
{
    const CALL: &str = "NearestIndex.closest_pairs";
    let b = points(CALL, "points", &data)?;
    let a = points(CALL, "x", &x)?;
    let (i, j, d) = compute(py, CALL, backend, |t| {
        let pairs = t.closest_pairs(&a, &b, k)?;
        let i = pairs.iter().map(|p| p.a as i64).collect::<Vec<_>>();
        let j = pairs.iter().map(|p| p.b as i64).collect::<Vec<_>>();
        let d = pairs
            .iter()
            .map(|p| distance(&a[p.a as usize], &b[p.b as usize]))
            .collect::<Vec<_>>();
        Ok((i, j, d))
    })?;
    Ok((i.into_pyarray(py), j.into_pyarray(py), d.into_pyarray(py)))
}
