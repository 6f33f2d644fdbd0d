//! numpy arrays as Trident's slices and views: borrowed where the layout
//! allows it, copied otherwise (never an error for a layout).
//!
//! A 2-D array is used in place when its rows (or, for a transposed view,
//! its columns) are unit-stride and evenly spaced: `MatRef`'s leading
//! dimension covers sliced views such as `a[:, :5]`, and a Fortran-ordered
//! array is the transpose of a row-major one, which GEMM absorbs by flipping
//! `op`. Anything else (negative or zero strides, unaligned data, steps
//! inside a row) is copied into a row-major buffer first.
//!
//! The slices are made from the array's data pointer while a rust-numpy
//! read-only borrow is held, and they cover exactly the elements from the
//! first to the last of the view, all inside the array's buffer. As with any
//! numpy extension that releases the GIL, another Python thread writing into
//! the same buffer during the call races with it; numpy's own routines have
//! the same rule.

use std::borrow::Cow;

use rayon::prelude::*;

use numpy::{
    Element, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::errors;

/// A 2-D array as row-major memory: `mem_rows x mem_cols` with leading
/// dimension `ld`; `transposed` says the array is the transpose of that
/// memory (a Fortran-ordered array).
pub struct Mat<'a, T: Clone> {
    pub data: Cow<'a, [T]>,
    pub mem_rows: usize,
    pub mem_cols: usize,
    pub ld: usize,
    pub transposed: bool,
}

/// The array's elements in place where its layout allows (see the module
/// docs), else a row-major copy.
pub fn mat<'a, T: Element + Copy>(a: &'a PyReadonlyArray2<'_, T>) -> PyResult<Mat<'a, T>> {
    let (rows, cols) = (a.shape()[0], a.shape()[1]);
    let size = std::mem::size_of::<T>() as isize;
    let (s0, s1) = (a.strides()[0], a.strides()[1]);
    let ptr = a.data();
    let aligned = (ptr as usize).is_multiple_of(std::mem::align_of::<T>());
    // `s / size` as an element count when `s` is a positive whole number of
    // elements spanning at least `min` elements.
    let spacing = |s: isize, min: usize| -> Option<usize> {
        (s > 0 && s % size == 0)
            .then(|| (s / size) as usize)
            .filter(|&ld| ld >= min)
    };
    if rows > 0 && cols > 0 && aligned {
        if s1 == size {
            let ld = if rows == 1 {
                Some(cols)
            } else {
                spacing(s0, cols)
            };
            if let Some(ld) = ld {
                // SAFETY: see the module docs; `(rows - 1) * ld + cols`
                // elements from the first element reach exactly the last.
                let data = unsafe { std::slice::from_raw_parts(ptr, (rows - 1) * ld + cols) };
                return Ok(Mat {
                    data: Cow::Borrowed(data),
                    mem_rows: rows,
                    mem_cols: cols,
                    ld,
                    transposed: false,
                });
            }
        }
        if s0 == size {
            let ld = if cols == 1 {
                Some(rows)
            } else {
                spacing(s1, rows)
            };
            if let Some(ld) = ld {
                // SAFETY: as above, for the transposed memory (cols x rows).
                let data = unsafe { std::slice::from_raw_parts(ptr, (cols - 1) * ld + rows) };
                return Ok(Mat {
                    data: Cow::Borrowed(data),
                    mem_rows: cols,
                    mem_cols: rows,
                    ld,
                    transposed: true,
                });
            }
        }
    }
    Ok(Mat {
        data: Cow::Owned(copy(a.as_array().iter().copied(), a.len())?),
        mem_rows: rows,
        mem_cols: cols,
        ld: cols,
        transposed: false,
    })
}

/// A 2-D array as one contiguous row-major slice, copied unless it is
/// C-contiguous already.
pub fn contiguous<'a, T: Element + Copy>(a: &'a PyReadonlyArray2<'_, T>) -> PyResult<Cow<'a, [T]>> {
    Ok(match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(copy(a.as_array().iter().copied(), a.len())?),
    })
}

/// A 1-D array as a slice, copied unless it is contiguous.
pub fn vector<'a, T: Element + Copy>(a: &'a PyReadonlyArray1<'_, T>) -> PyResult<Cow<'a, [T]>> {
    Ok(match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(copy(a.as_array().iter().copied(), a.len())?),
    })
}

/// A copy of an array's elements in logical order, allocated fallibly.
fn copy<T>(it: impl Iterator<Item = T>, len: usize) -> PyResult<Vec<T>> {
    try_collect(len, it, || format!("a copy of an array of {len} elements"))
        .map_err(|e| errors::to_py("trident_compute", e))
}

/// `len` elements of `it` in a `Vec` allocated fallibly: a failed
/// allocation is an error (a `MemoryError` in Python), where Rust's own
/// allocation failure would abort the interpreter.
pub fn try_collect<T>(
    len: usize,
    it: impl IntoIterator<Item = T>,
    what: impl Fn() -> String,
) -> trident::Result<Vec<T>> {
    let mut v = trident::mem::with_capacity(len, what)?;
    v.extend(it);
    Ok(v)
}

/// A new C-ordered numpy array of `T` made by numpy itself (`numpy.empty`
/// or `numpy.zeros`), so that a failed allocation is numpy's `MemoryError`:
/// rust-numpy's own constructors panic when numpy returns no array.
pub fn new_array<'py, T: Element>(
    py: Python<'py>,
    shape: [usize; 2],
    zeroed: bool,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    let how = if zeroed { "zeros" } else { "empty" };
    let a = py
        .import("numpy")?
        .call_method1(how, ((shape[0], shape[1]), numpy::dtype::<T>(py)))?;
    Ok(a.cast_into::<PyArray2<T>>()?)
}

/// From this many elements [`owned`] copies on all cores: one thread does not
/// saturate the memory bandwidth a large copy could use.
const PAR_COPY_MIN: usize = 1 << 20;

/// The elements as an owned `Vec` (Trident's owned types need one), copied
/// on all cores when large; an owned input is moved, not copied.
pub fn owned<T: Copy + Send + Sync>(data: Cow<'_, [T]>) -> trident::Result<Vec<T>> {
    Ok(match data {
        Cow::Owned(v) => v,
        Cow::Borrowed(s) => {
            let mut v =
                trident::mem::with_capacity(s.len(), || format!("a copy of {} values", s.len()))?;
            // Huge pages where the kernel allows them (see `sparse::convert`).
            trident::mem::advise_huge(&mut v);
            if s.len() >= PAR_COPY_MIN {
                s.par_iter().copied().collect_into_vec(&mut v);
            } else {
                v.extend_from_slice(s);
            }
            v
        }
    })
}

/// The index dtype of CSR arrays handed to scipy: int32 while the entries
/// fit, int64 beyond (scipy itself would copy int64 arrays down to int32
/// when they fit, so giving it int32 saves a pass).
pub trait Index: numpy::Element + Copy + Send + Sync {
    /// `v`, which the caller knows to fit.
    fn of(v: usize) -> Self;
}

impl Index for i32 {
    fn of(v: usize) -> Self {
        v as i32
    }
}

impl Index for i64 {
    fn of(v: usize) -> Self {
        v as i64
    }
}
