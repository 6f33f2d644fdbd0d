//! Images and volumes as `.npy` arrays: every numeric dtype numpy users keep
//! them in (`uint8`, `bool` and `uint16` masks and scans as well as the six of
//! [`Dtype`]), read as f64 samples in C order; and `uint8` arrays written, the
//! dtype of a label or mask volume.
//!
//! ```
//! use trident_io::npy;
//! let bytes = npy::encode_u8(&[2, 1, 3], &[0, 1, 2, 3, 4, 255]).unwrap();
//! let s = npy::read_samples(&bytes).unwrap();
//! assert_eq!((s.shape.as_slice(), s.dtype), (&[2, 1, 3][..], "uint8"));
//! assert_eq!(s.values, [0.0, 1.0, 2.0, 3.0, 4.0, 255.0]);
//! ```

use std::io::Write;

use super::header::{Header, header, header_with_descr};
use super::{Data, Dtype, body, count, fortran_to_c, show_shape};
use crate::{At, Error, Result};

/// An array of numbers read as f64, in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// The dimensions, as in the file (e.g. `Z x Y x X` for a volume).
    pub shape: Vec<usize>,
    /// numpy's name of the file's dtype, e.g. `"uint8"`, `"float32"`.
    pub dtype: &'static str,
    /// `shape.iter().product()` values; exact for every dtype but 64-bit
    /// integers beyond 2^53.
    pub values: Vec<f64>,
}

/// The one-byte and two-byte dtypes, beyond [`Dtype`]: numpy's name, bytes
/// per element, signedness (`None` for bool).
fn small_dtype(descr: &str) -> Option<(&'static str, usize, Option<bool>, bool)> {
    let (big, rest) = match descr.as_bytes().first()? {
        b'<' | b'|' | b'=' => (false, &descr[1..]),
        b'>' => (true, &descr[1..]),
        _ => (false, descr),
    };
    match rest {
        "u1" => Some(("uint8", 1, Some(false), big)),
        "i1" => Some(("int8", 1, Some(true), big)),
        "b1" => Some(("bool", 1, None, big)),
        "u2" => Some(("uint16", 2, Some(false), big)),
        "i2" => Some(("int16", 2, Some(true), big)),
        _ => None,
    }
}

/// The element `k` of a C-order `shape` as `(i, j, ...)`.
fn index(k: usize, shape: &[usize]) -> String {
    let mut idx = vec![0usize; shape.len()];
    let mut rest = k;
    for (a, &d) in shape.iter().enumerate().rev() {
        idx[a] = rest % d.max(1);
        rest /= d.max(1);
    }
    let parts: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// Reads an array of any shape whose dtype is `uint8`, `int8`, `bool`,
/// `uint16`, `int16` or one of [`Dtype`]'s, every value finite, as f64.
pub fn read_samples(bytes: &[u8]) -> Result<Samples> {
    let h = header(bytes)?;
    let shape: Vec<usize> = h
        .shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            Error::format(
                At::Header,
                format!("shape {} is too large", show_shape(&h.shape)),
            )
        })?;
    let (dtype, size, values) = if let Some((t, big)) = Dtype::parse(&h.descr) {
        let data = body(bytes, &h, t, big)?;
        // One cast per dtype (the f64 arm's is the identity).
        #[allow(clippy::unnecessary_cast)]
        let values: Vec<f64> = each_data!(data, v => v.into_iter().map(|x| x as f64).collect());
        (t.name(), t.size(), values)
    } else if let Some((name, size, signed, big)) = small_dtype(&h.descr) {
        (name, size, small_body(bytes, &h, name, size, signed, big)?)
    } else {
        return Err(Error::format(
            At::Header,
            format!(
                "dtype {:?}: expected uint8, int8, bool, uint16, int16, int32, int64, uint32, uint64, float32 or float64",
                h.descr
            ),
        ));
    };
    if let Some(k) = values.iter().position(|x| !x.is_finite()) {
        // `k` is the position in the file's own order.
        let c = if h.fortran { to_c_index(k, &shape) } else { k };
        return Err(Error::format(
            At::Byte((h.data_off + k * size) as u64),
            format!(
                "element {} is {}; expected a finite number",
                index(c, &shape),
                values[k]
            ),
        ));
    }
    let values = if h.fortran {
        fortran_to_c(&values, &h.shape)
    } else {
        values
    };
    Ok(Samples {
        shape,
        dtype,
        values,
    })
}

/// The C-order position of the `k`-th element of a Fortran-order `shape`.
fn to_c_index(k: usize, shape: &[usize]) -> usize {
    let mut rest = k;
    let mut idx = vec![0usize; shape.len()];
    for (a, &d) in shape.iter().enumerate() {
        idx[a] = rest % d.max(1);
        rest /= d.max(1);
    }
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// The values of a one- or two-byte dtype, after checking the file holds them.
fn small_body(
    bytes: &[u8],
    h: &Header,
    name: &str,
    size: usize,
    signed: Option<bool>,
    big: bool,
) -> Result<Vec<f64>> {
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
                "truncated: a {} array of {size}-byte {name} needs {need} bytes of data from byte {}, the file has {have}",
                show_shape(&h.shape),
                h.data_off
            ),
        ));
    }
    let data = &bytes[h.data_off..h.data_off + need];
    let mut v = trident_core::mem::with_capacity(n, || format!("{n} {name} values"))?;
    match (size, signed) {
        (1, None) => {
            for (k, &b) in data.iter().enumerate() {
                if b > 1 {
                    return Err(Error::format(
                        At::Byte((h.data_off + k) as u64),
                        format!("bool element is byte {b}; expected 0 or 1"),
                    ));
                }
                v.push(b as f64);
            }
        }
        (1, Some(false)) => v.extend(data.iter().map(|&b| b as f64)),
        (1, Some(true)) => v.extend(data.iter().map(|&b| b as i8 as f64)),
        _ => v.extend(data.chunks_exact(2).map(|c| {
            let raw = if big {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from_le_bytes([c[0], c[1]])
            };
            if signed == Some(true) {
                raw as i16 as f64
            } else {
                raw as f64
            }
        })),
    }
    Ok(v)
}

/// Writes `data` (C order) as a `uint8` `.npy` array of `shape`.
pub fn write_u8(mut w: impl Write, shape: &[u64], data: &[u8]) -> Result<()> {
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
    w.write_all(&header_with_descr("|u1", shape))?;
    w.write_all(data)?;
    w.flush()?;
    Ok(())
}

/// The bytes of a `uint8` `.npy` file (see [`write_u8`]).
pub fn encode_u8(shape: &[u64], data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_u8(&mut out, shape, data)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npyz::WriterBuilder;

    fn npyz_bytes<T: npyz::AutoSerialize + Copy>(
        shape: &[u64],
        data: &[T],
        fortran: bool,
    ) -> Vec<u8> {
        let mut buf = Vec::new();
        let order = if fortran {
            npyz::Order::Fortran
        } else {
            npyz::Order::C
        };
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .order(order)
            .writer(&mut buf)
            .begin_nd()
            .unwrap();
        w.extend(data.iter().copied()).unwrap();
        w.finish().unwrap();
        buf
    }

    #[test]
    fn every_small_dtype_reads_as_numpy_writes_it() {
        let s = read_samples(&npyz_bytes(&[2, 2], &[0u8, 7, 200, 255], false)).unwrap();
        assert_eq!((s.dtype, s.values), ("uint8", vec![0.0, 7.0, 200.0, 255.0]));
        let s = read_samples(&npyz_bytes(&[3], &[-5i8, 0, 127], false)).unwrap();
        assert_eq!((s.dtype, s.values), ("int8", vec![-5.0, 0.0, 127.0]));
        let s = read_samples(&npyz_bytes(&[2], &[65535u16, 3], false)).unwrap();
        assert_eq!((s.dtype, s.values), ("uint16", vec![65535.0, 3.0]));
        let s = read_samples(&npyz_bytes(&[2], &[-1024i16, 3071], false)).unwrap();
        assert_eq!((s.dtype, s.values), ("int16", vec![-1024.0, 3071.0]));
        let s = read_samples(&npyz_bytes(&[2], &[true, false], false)).unwrap();
        assert_eq!((s.dtype, s.values), ("bool", vec![1.0, 0.0]));
        let s = read_samples(&npyz_bytes(&[1, 2], &[0.5f32, -2.0], false)).unwrap();
        assert_eq!((s.dtype, s.values), ("float32", vec![0.5, -2.0]));
    }

    #[test]
    fn fortran_volumes_come_back_in_c_order() {
        // Element (z, y, x) = 100 z + 10 y + x, stored in Fortran order.
        let shape = [2u64, 3, 4];
        let mut f = Vec::new();
        for x in 0..4u16 {
            for y in 0..3u16 {
                for z in 0..2u16 {
                    f.push(100 * z + 10 * y + x);
                }
            }
        }
        let s = read_samples(&npyz_bytes(&shape, &f, true)).unwrap();
        let want: Vec<f64> = (0..2)
            .flat_map(|z| {
                (0..3).flat_map(move |y| (0..4).map(move |x| (100 * z + 10 * y + x) as f64))
            })
            .collect();
        assert_eq!((s.shape, s.values), (vec![2, 3, 4], want));
    }

    #[test]
    fn bad_arrays_say_where() {
        let e =
            read_samples(&npyz_bytes(&[2, 2], &[1.0f64, 2.0, f64::NAN, 0.0], false)).unwrap_err();
        assert!(e.to_string().contains("element (1, 0) is NaN"), "{e}");
        // The same NaN in a Fortran file is still element (1, 0).
        let e =
            read_samples(&npyz_bytes(&[2, 2], &[1.0f64, f64::NAN, 2.0, 0.0], true)).unwrap_err();
        assert!(e.to_string().contains("element (1, 0) is NaN"), "{e}");
        let mut b = npyz_bytes(&[2, 3], &[1u8; 6], false);
        b.truncate(b.len() - 2);
        let e = read_samples(&b).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let mut b = npyz_bytes(&[2], &[true, false], false);
        let last = b.len() - 1;
        b[last] = 7;
        let e = read_samples(&b).unwrap_err();
        assert!(e.to_string().contains("bool element is byte 7"), "{e}");
        let mut b = npyz_bytes(&[2], &[1.0f32, 2.0], false);
        let at = b.windows(3).position(|w| w == b"<f4").unwrap();
        b[at + 1..at + 3].copy_from_slice(b"c8");
        let e = read_samples(&b).unwrap_err();
        assert!(e.to_string().contains("expected uint8"), "{e}");
    }

    #[test]
    fn mutated_files_give_a_value_or_an_error() {
        let files = [
            encode_u8(&[2, 3], &[0, 1, 2, 3, 4, 5]).unwrap(),
            npyz_bytes(&[2, 2], &[-3i16, 0, 1, 2], true),
            npyz_bytes(&[2], &[true, false], false),
            crate::npy::encode(&[1, 2, 1], &[0.5f64, -1.0]).unwrap(),
        ];
        for f in files {
            for cut in 0..f.len() {
                let _ = read_samples(&f[..cut]);
            }
            for at in 0..f.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut m = f.clone();
                    m[at] ^= flip;
                    if let Ok(s) = read_samples(&m) {
                        // What reads also writes, as f64, and reads back equal.
                        let shape: Vec<u64> = s.shape.iter().map(|&d| d as u64).collect();
                        let back = read_samples(&crate::npy::encode(&shape, &s.values).unwrap());
                        assert_eq!(back.unwrap().values, s.values);
                    }
                }
            }
        }
    }

    #[test]
    fn u8_arrays_write_as_numpy_reads_them() {
        let bytes = encode_u8(&[2, 1, 2], &[0, 1, 254, 255]).unwrap();
        let f = npyz::NpyFile::new(&bytes[..]).unwrap();
        assert_eq!(f.shape(), &[2, 1, 2]);
        assert_eq!(f.into_vec::<u8>().unwrap(), [0, 1, 254, 255]);
        assert!(encode_u8(&[3], &[1, 2]).is_err());
    }
}
