//! NPY matrices (through `npyz`) and NPZ archives of them (a zip of `.npy`
//! members, written with `zip`).
//!
//! `npyz` parses the header and decodes the data; checks it does not do are
//! made here first, so a bad file is reported by byte offset: the data length
//! against the shape (truncation), the dtype, and finiteness.

use std::io::Cursor;
use std::path::Path;

use npyz::{DType, TypeChar, WriterBuilder};

use crate::fail::{CliResult, Fail, bad_file};
use crate::io::output::Output;
use crate::progress::Progress;

/// Matrix data in the file's own precision.
#[derive(Clone, Debug, PartialEq)]
pub enum Dense {
    /// `float32` / `<f4`.
    F32(Vec<f32>),
    /// `float64` / `<f8`.
    F64(Vec<f64>),
}

/// A row-major matrix read from a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// Rows (first axis).
    pub rows: usize,
    /// Columns (second axis).
    pub cols: usize,
    /// `rows * cols` values, row-major whatever the file's order.
    pub data: Dense,
}

impl Matrix {
    /// The values widened to f64.
    pub fn to_f64(&self) -> Vec<f64> {
        match &self.data {
            Dense::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Dense::F64(v) => v.clone(),
        }
    }
    /// The values rounded to f32.
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            Dense::F32(v) => v.clone(),
            Dense::F64(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }
    /// `true` for float64 data.
    pub fn is_f64(&self) -> bool {
        matches!(self.data, Dense::F64(_))
    }
}

/// Reads a 2-D float32/float64 `.npy` file; C or Fortran order.
pub fn read_matrix(path: &Path, progress: &Progress) -> CliResult<Matrix> {
    let bytes = super::read_all(path, progress)?;
    let mut cursor: &[u8] = &bytes;
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| {
        bad_file(
            path,
            "byte 0",
            format!(
                "not a valid .npy header (expected the \\x93NUMPY magic, a version and a dict): {e}"
            ),
        )
    })?;
    let data_off = bytes.len() - cursor.len();
    let npy = npyz::NpyFile::with_header(header, cursor);
    let shape = npy.shape().to_vec();
    let [rows, cols] = shape[..] else {
        return Err(bad_file(
            path,
            "header",
            format!("shape {shape:?}: expected a 2-D array"),
        ));
    };
    let size = match npy.dtype() {
        DType::Plain(ts) if ts.type_char() == TypeChar::Float => match ts.num_bytes() {
            Some(4) => 4usize,
            Some(8) => 8,
            _ => 0,
        },
        _ => 0,
    };
    if size == 0 {
        return Err(bad_file(
            path,
            "header",
            format!(
                "dtype {}: expected float32 ('<f4') or float64 ('<f8')",
                npy.dtype().descr()
            ),
        ));
    }
    let n = rows
        .checked_mul(cols)
        .filter(|&n| n <= usize::MAX as u64 / 8)
        .ok_or_else(|| {
            bad_file(
                path,
                "header",
                format!("shape {rows} x {cols} is too large"),
            )
        })?;
    let need = n * size as u64;
    let have = (bytes.len() - data_off) as u64;
    if have < need {
        return Err(bad_file(
            path,
            format!("byte {}", bytes.len()),
            format!(
                "truncated: a {rows} x {cols} array of {size}-byte floats needs {need} bytes of data from byte {data_off}, the file has {have}"
            ),
        ));
    }
    let fortran = npy.order() == npyz::Order::Fortran;
    let (rows, cols) = (rows as usize, cols as usize);
    let decode_err = |e: std::io::Error| {
        bad_file(
            path,
            format!("byte {data_off}"),
            format!("cannot decode the data: {e}"),
        )
    };
    let data = if size == 4 {
        let v: Vec<f32> = npy.into_vec().map_err(decode_err)?;
        check_finite(path, data_off, 4, &v, rows, cols, fortran)?;
        Dense::F32(if fortran {
            transpose(&v, rows, cols)
        } else {
            v
        })
    } else {
        let v: Vec<f64> = npy.into_vec().map_err(decode_err)?;
        check_finite(path, data_off, 8, &v, rows, cols, fortran)?;
        Dense::F64(if fortran {
            transpose(&v, rows, cols)
        } else {
            v
        })
    };
    Ok(Matrix { rows, cols, data })
}

/// A NaN or infinity is bad input: named by its (row, column) and byte offset.
fn check_finite<T: Copy + Into<f64>>(
    path: &Path,
    data_off: usize,
    size: usize,
    v: &[T],
    rows: usize,
    cols: usize,
    fortran: bool,
) -> CliResult<()> {
    if let Some(k) = v.iter().position(|&x| !x.into().is_finite()) {
        let (r, c) = if fortran {
            (k % rows.max(1), k / rows.max(1))
        } else {
            (k / cols.max(1), k % cols.max(1))
        };
        return Err(bad_file(
            path,
            format!("byte {}", data_off + k * size),
            format!(
                "element ({r}, {c}) is {}; expected a finite number",
                v[k].into()
            ),
        ));
    }
    Ok(())
}

/// Column-major `rows x cols` to row-major.
fn transpose<T: Copy>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for i in 0..rows {
        for j in 0..cols {
            out.push(v[j * rows + i]);
        }
    }
    out
}

/// The bytes of a `.npy` file holding `data` with `shape`.
pub fn encode<T: npyz::AutoSerialize + Copy>(
    shape: &[u64],
    data: &[T],
) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut buf)
        .begin_nd()?;
    w.extend(data.iter().copied())?;
    w.finish()?;
    Ok(buf)
}

/// Writes a row-major `rows x cols` matrix as `.npy`.
pub fn write_matrix<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    rows: usize,
    cols: usize,
    data: &[T],
) -> CliResult<()> {
    let out = Output::create(path)?;
    let bytes = encode(&[rows as u64, cols as u64], data).map_err(|e| out.fail(e))?;
    out.write_all_and_commit(&bytes)
}

/// One member of an `.npz` archive: its name (without `.npy`) and file bytes.
pub type Member = (String, Vec<u8>);

/// Writes an `.npz` archive (members stored uncompressed, as `numpy.savez` does).
pub fn write_npz(path: &Path, members: &[Member]) -> CliResult<()> {
    let out = Output::create(path)?;
    let zipped = (|| -> Result<Vec<u8>, zip::result::ZipError> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in members {
            zip.start_file(format!("{name}.npy"), opts)?;
            std::io::Write::write_all(&mut zip, bytes)?;
        }
        Ok(zip.finish()?.into_inner())
    })()
    .map_err(|e| out.fail(e))?;
    out.write_all_and_commit(&zipped)
}

/// An `.npy` encoding failure (not expected for in-memory buffers).
pub fn encode_fail(path: &Path, e: std::io::Error) -> Fail {
    crate::fail::io_error(path, format!("cannot encode: {e}"))
}
