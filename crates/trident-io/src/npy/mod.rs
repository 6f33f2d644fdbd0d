//! NPY arrays (<https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>):
//! float32/64, int32/64 and uint32/64, either byte order, C or Fortran order,
//! format versions 1.0 to 3.0; and fixed-width byte strings (`|S3`), which
//! scipy's sparse `.npz` files use for their `format` member.
//!
//! The header (a Python dict literal) is parsed here, without recursion and
//! with every number checked, rather than by a general Python-literal parser:
//! a fuzzed header must give an error, not a stack overflow or an overflowing
//! shape product. The data length is checked against the shape before
//! anything is decoded, so memory never exceeds what the file holds.
//!
//! ```
//! let bytes = trident_io::npy::encode(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
//! let m = trident_io::npy::read_matrix(&bytes).unwrap();
//! assert_eq!((m.rows, m.cols), (2, 3));
//! assert_eq!(m.to_f32(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! ```

use std::io::Write;

mod header;

use header::{Header, header, header_bytes};
pub use samples::{Samples, encode_u8, read_samples, write_u8};

use crate::{At, Error, Result};

/// An element type an NPY file can hold here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `float32`, `<f4`.
    F32,
    /// `float64`, `<f8`.
    F64,
    /// `int32`, `<i4`.
    I32,
    /// `int64`, `<i8`.
    I64,
    /// `uint32`, `<u4`.
    U32,
    /// `uint64`, `<u8`.
    U64,
    /// Byte strings of this many bytes (at least 1), `|S<n>`: numpy's
    /// `bytes` type, zero-padded.
    Bytes(usize),
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
            Dtype::Bytes(n) => n,
        }
    }

    /// numpy's name: `"float32"`, `"uint64"`, ...
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::Bytes(_) => "bytes",
        }
    }

    /// The little-endian `descr` written in headers: `"<f4"`, ..., `"|S3"`.
    pub fn descr(self) -> String {
        match self {
            Dtype::F32 => "<f4".into(),
            Dtype::F64 => "<f8".into(),
            Dtype::I32 => "<i4".into(),
            Dtype::I64 => "<i8".into(),
            Dtype::U32 => "<u4".into(),
            Dtype::U64 => "<u8".into(),
            Dtype::Bytes(n) => format!("|S{n}"),
        }
    }

    /// The dtype and byte order (`true`: big-endian) of a header's `descr`.
    fn parse(descr: &str) -> Option<(Dtype, bool)> {
        let (big, rest) = match descr.as_bytes().first()? {
            b'<' => (false, &descr[1..]),
            b'>' => (true, &descr[1..]),
            b'=' => (cfg!(target_endian = "big"), &descr[1..]),
            _ => (cfg!(target_endian = "big"), descr),
        };
        let t = match rest {
            // Byte order means nothing for bytes; numpy writes `|`.
            _ if descr.starts_with("|S") || descr.starts_with('S') => {
                let n: usize = descr.trim_start_matches('|')[1..].parse().ok()?;
                return (n > 0).then_some((Dtype::Bytes(n), false));
            }
            "f4" => Dtype::F32,
            "f8" => Dtype::F64,
            "i4" => Dtype::I32,
            "i8" => Dtype::I64,
            "u4" => Dtype::U32,
            "u8" => Dtype::U64,
            _ => return None,
        };
        Some((t, big))
    }
}

/// The values of an array, in their own type.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// float32 values.
    F32(Vec<f32>),
    /// float64 values.
    F64(Vec<f64>),
    /// int32 values.
    I32(Vec<i32>),
    /// int64 values.
    I64(Vec<i64>),
    /// uint32 values.
    U32(Vec<u32>),
    /// uint64 values.
    U64(Vec<u64>),
    /// Byte strings of `width` bytes each, one after another.
    Bytes {
        /// Bytes per string (at least 1).
        width: usize,
        /// `len * width` bytes.
        bytes: Vec<u8>,
    },
}

macro_rules! each_data {
    ($d:expr, $v:ident => $e:expr) => {
        match $d {
            Data::F32($v) => $e,
            Data::F64($v) => $e,
            Data::I32($v) => $e,
            Data::I64($v) => $e,
            Data::U32($v) => $e,
            Data::U64($v) => $e,
            Data::Bytes { .. } => unreachable!("byte strings are handled before each_data!"),
        }
    };
}

impl Data {
    /// The element type.
    pub fn dtype(&self) -> Dtype {
        match self {
            Data::F32(_) => Dtype::F32,
            Data::F64(_) => Dtype::F64,
            Data::I32(_) => Dtype::I32,
            Data::I64(_) => Dtype::I64,
            Data::U32(_) => Dtype::U32,
            Data::U64(_) => Dtype::U64,
            Data::Bytes { width, .. } => Dtype::Bytes(*width),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::Bytes { width, bytes } => bytes.len() / width.max(&1),
            d => each_data!(d, v => v.len()),
        }
    }

    /// `true` when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An n-dimensional array read from or written to an `.npy` file; the data is
/// in C (row-major) order whatever the file's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The dimensions; `[]` for a 0-d array (one element).
    pub shape: Vec<u64>,
    /// `shape.iter().product()` values.
    pub data: Data,
}

/// A Rust type stored as an NPY element: `f32`, `f64`, `i32`, `i64`, `u32`, `u64`.
pub trait Element: Copy + sealed::Sealed {
    /// Its dtype.
    const DTYPE: Dtype;
}

mod sealed {
    /// Conversions the writer and reader need; not for use outside.
    pub trait Sealed: Sized {
        fn put_le(self, out: &mut Vec<u8>);
        fn get(b: &[u8], big: bool) -> Self;
        fn wrap(v: Vec<Self>) -> super::Data;
    }
}

macro_rules! element {
    ($t:ty, $d:ident, $n:literal) => {
        impl sealed::Sealed for $t {
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8], big: bool) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(&b[..$n]);
                if big {
                    <$t>::from_be_bytes(a)
                } else {
                    <$t>::from_le_bytes(a)
                }
            }
            fn wrap(v: Vec<Self>) -> Data {
                Data::$d(v)
            }
        }
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$d;
        }
    };
}

// After `each_data!`, which it uses.
mod samples;

element!(f32, F32, 4);
element!(f64, F64, 8);
element!(i32, I32, 4);
element!(i64, I64, 8);
element!(u32, U32, 4);
element!(u64, U64, 8);

/// `2 x 3`, `5`, or `()` for a 0-d array.
fn show_shape(shape: &[u64]) -> String {
    if shape.is_empty() {
        return "()".into();
    }
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" x ")
}

/// The number of elements of `shape`, `None` past `usize`.
fn count(shape: &[u64]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
}

/// The data of `h` as `dtype`, in the file's order, after checking that the
/// file holds all of it.
fn body(bytes: &[u8], h: &Header, dtype: Dtype, big: bool) -> Result<Data> {
    let size = dtype.size();
    let n = count(&h.shape)
        .filter(|&n| n.checked_mul(size).is_some())
        .ok_or_else(|| {
            Error::format(
                At::Header,
                format!("shape {} is too large", show_shape(&h.shape)),
            )
        })?;
    let need = n * size;
    let have = bytes.len() - h.data_off;
    if have < need {
        return Err(Error::format(
            At::Byte(bytes.len() as u64),
            format!(
                "truncated: a {} array of {size}-byte {} needs {need} bytes of data from byte {}, the file has {have}",
                show_shape(&h.shape),
                dtype.name(),
                h.data_off
            ),
        ));
    }
    let data = &bytes[h.data_off..h.data_off + need];
    fn decode<T: Element>(data: &[u8], big: bool) -> Result<Data> {
        let size = T::DTYPE.size();
        let mut v = trident_core::mem::with_capacity(data.len() / size, || {
            format!("{} {} values", data.len() / size, T::DTYPE.name())
        })?;
        v.extend(data.chunks_exact(size).map(|c| T::get(c, big)));
        Ok(T::wrap(v))
    }
    match dtype {
        Dtype::Bytes(width) => {
            let mut bytes = trident_core::mem::with_capacity(data.len(), || {
                format!("{} byte strings of {width} bytes", data.len() / width)
            })?;
            bytes.extend_from_slice(data);
            Ok(Data::Bytes { width, bytes })
        }
        Dtype::F32 => decode::<f32>(data, big),
        Dtype::F64 => decode::<f64>(data, big),
        Dtype::I32 => decode::<i32>(data, big),
        Dtype::I64 => decode::<i64>(data, big),
        Dtype::U32 => decode::<u32>(data, big),
        Dtype::U64 => decode::<u64>(data, big),
    }
}

/// Values stored in Fortran (column-major) order of `shape`, to C order.
fn fortran_to_c<T: Copy>(v: &[T], shape: &[u64]) -> Vec<T> {
    let nd = shape.len();
    if nd < 2 || v.is_empty() {
        return v.to_vec();
    }
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    // Fortran strides: the first axis is contiguous.
    let mut stride = vec![1usize; nd];
    for a in 1..nd {
        stride[a] = stride[a - 1] * dims[a - 1];
    }
    let mut out = Vec::with_capacity(v.len());
    let mut idx = vec![0usize; nd];
    let mut at = 0usize;
    for _ in 0..v.len() {
        out.push(v[at]);
        // Odometer over C order: the last axis moves fastest.
        for a in (0..nd).rev() {
            idx[a] += 1;
            at += stride[a];
            if idx[a] < dims[a] {
                break;
            }
            at -= stride[a] * dims[a];
            idx[a] = 0;
        }
    }
    out
}

/// Reads an array of any [`Dtype`] and shape, converted to C order.
pub fn read_array(bytes: &[u8]) -> Result<Array> {
    let h = header(bytes)?;
    let (dtype, big) = Dtype::parse(&h.descr).ok_or_else(|| {
        Error::format(
            At::Header,
            format!(
                "dtype {:?}: expected float32, float64, int32, int64, uint32, uint64 ('<f4', '<f8', '<i4', '<i8', '<u4', '<u8') or byte strings ('|S3')",
                h.descr
            ),
        )
    })?;
    let data = body(bytes, &h, dtype, big)?;
    let data = match data {
        Data::Bytes { width, bytes } if h.fortran => {
            // The strings move whole: permute their indices.
            let order = fortran_to_c(&(0..bytes.len() / width).collect::<Vec<_>>(), &h.shape);
            let mut c = Vec::with_capacity(bytes.len());
            for i in order {
                c.extend_from_slice(&bytes[i * width..(i + 1) * width]);
            }
            Data::Bytes { width, bytes: c }
        }
        data if h.fortran => {
            each_data!(data, v => sealed::Sealed::wrap(fortran_to_c(&v, &h.shape)))
        }
        data => data,
    };
    Ok(Array {
        shape: h.shape,
        data,
    })
}

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

/// Reads a 2-D float32/float64 `.npy` file (C or Fortran order, either byte
/// order) whose values are all finite.
pub fn read_matrix(bytes: &[u8]) -> Result<Matrix> {
    let h = header(bytes)?;
    let [rows, cols] = h.shape[..] else {
        return Err(Error::format(
            At::Header,
            format!("shape {:?}: expected a 2-D array", h.shape),
        ));
    };
    let float = Dtype::parse(&h.descr).filter(|(t, _)| matches!(t, Dtype::F32 | Dtype::F64));
    let Some((dtype, big)) = float else {
        return Err(Error::format(
            At::Header,
            format!(
                "dtype {}: expected float32 ('<f4') or float64 ('<f8')",
                h.descr
            ),
        ));
    };
    let data = body(bytes, &h, dtype, big)?;
    // Both fit usize: `body` checked their product.
    let (rows, cols) = (rows as usize, cols as usize);
    let at = |k: usize| {
        let (r, c) = if h.fortran {
            (k % rows.max(1), k / rows.max(1))
        } else {
            (k / cols.max(1), k % cols.max(1))
        };
        (r, c, At::Byte((h.data_off + k * dtype.size()) as u64))
    };
    let shape = [rows as u64, cols as u64];
    let data = match data {
        Data::F32(v) => {
            if let Some(k) = v.iter().position(|x| !x.is_finite()) {
                let (r, c, at) = at(k);
                return Err(Error::format(
                    at,
                    format!("element ({r}, {c}) is {}; expected a finite number", v[k]),
                ));
            }
            Dense::F32(if h.fortran {
                fortran_to_c(&v, &shape)
            } else {
                v
            })
        }
        Data::F64(v) => {
            if let Some(k) = v.iter().position(|x| !x.is_finite()) {
                let (r, c, at) = at(k);
                return Err(Error::format(
                    at,
                    format!("element ({r}, {c}) is {}; expected a finite number", v[k]),
                ));
            }
            Dense::F64(if h.fortran {
                fortran_to_c(&v, &shape)
            } else {
                v
            })
        }
        // `float` admits only the two float types.
        other => {
            return Err(Error::format(
                At::Header,
                format!(
                    "dtype {}: expected float32 or float64",
                    other.dtype().name()
                ),
            ));
        }
    };
    Ok(Matrix { rows, cols, data })
}

/// Writes `data` (C order) as an `.npy` array of `shape`; the element count
/// must match the shape.
pub fn write<T: Element>(mut w: impl Write, shape: &[u64], data: &[T]) -> Result<()> {
    if count(shape) != Some(data.len()) {
        return Err(trident_core::Error::dim(
            "data",
            format!(
                "{} values for an array of shape {}",
                data.len(),
                show_shape(shape)
            ),
        )
        .into());
    }
    w.write_all(&header_bytes(T::DTYPE, shape))?;
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in data.chunks((1 << 16) / T::DTYPE.size()) {
        buf.clear();
        for &x in chunk {
            x.put_le(&mut buf);
        }
        w.write_all(&buf)?;
    }
    w.flush()?;
    Ok(())
}

/// The bytes of an `.npy` file holding `data` with `shape` (see [`write()`]).
pub fn encode<T: Element>(shape: &[u64], data: &[T]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write(&mut out, shape, data)?;
    Ok(out)
}

/// Writes an [`Array`] (see [`write()`]).
pub fn write_array(w: impl Write, a: &Array) -> Result<()> {
    match &a.data {
        Data::Bytes { width, bytes } => write_bytes(w, &a.shape, *width, bytes),
        d => each_data!(d, v => write(w, &a.shape, v)),
    }
}

/// Writes byte strings of `width` bytes each (`bytes` holds them one after
/// another, C order) as an `|S<width>` array of `shape`; `&[]` is a 0-d
/// array, which is how numpy stores a `bytes` scalar such as `b'csr'`.
pub fn write_bytes(mut w: impl Write, shape: &[u64], width: usize, bytes: &[u8]) -> Result<()> {
    let ok =
        width > 0 && bytes.len().is_multiple_of(width) && count(shape) == Some(bytes.len() / width);
    if !ok {
        return Err(trident_core::Error::dim(
            "data",
            format!(
                "{} bytes for an array of shape {} of {width}-byte strings",
                bytes.len(),
                show_shape(shape)
            ),
        )
        .into());
    }
    w.write_all(&header_bytes(Dtype::Bytes(width), shape))?;
    w.write_all(bytes)?;
    w.flush()?;
    Ok(())
}

/// The bytes of an `.npy` file holding `a`.
pub fn encode_array(a: &Array) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_array(&mut out, a)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_order_3d_matches_numpy() {
        // numpy: np.arange(24).reshape(2, 3, 4) in Fortran order is
        // a.flatten(order='F'); element (i, j, k) sits at i + 2 j + 6 k.
        let shape = [2u64, 3, 4];
        let f: Vec<u32> = (0..24)
            .map(|p| {
                let (i, j, k) = (p % 2, (p / 2) % 3, p / 6);
                (i * 12 + j * 4 + k) as u32
            })
            .collect();
        assert_eq!(fortran_to_c(&f, &shape), (0..24).collect::<Vec<u32>>());
    }

    #[test]
    fn header_is_aligned_and_parses_back() {
        for shape in [&[][..], &[5], &[2, 3], &[1, 2, 3, 4]] {
            let h = header_bytes(Dtype::U64, shape);
            assert_eq!(h.len() % 64, 0);
            let parsed = header(&h).unwrap();
            assert_eq!(parsed.shape, shape);
            assert_eq!(parsed.descr, "<u8");
            assert!(!parsed.fortran);
        }
    }
}
