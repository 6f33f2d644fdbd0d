//! NPZ archives: a zip of `.npy` members, stored uncompressed as
//! `numpy.savez` writes them (`numpy.savez_compressed`'s deflated members are
//! not read: no codec is built in); and sparse matrices in them as
//! `scipy.sparse.save_npz` lays them out ([`encode_csr`], [`read_csr`]).
//!
//! ```
//! use trident_io::{npy, npz};
//! let atoms = npy::encode(&[3], &[2u32, 0, 1]).unwrap();
//! let bytes = npz::encode(&[("atoms".to_string(), atoms)]).unwrap();
//! let members = npz::read(&bytes).unwrap();
//! assert_eq!(members[0].0, "atoms");
//! assert_eq!(members[0].1.data, npy::Data::U32(vec![2, 0, 1]));
//! ```

use std::io::{Cursor, Read, Write};

use trident_core::{CsrMatrix, Scalar};

use crate::npy::{self, Array};
use crate::{At, Error, Result};

/// One member of an archive: its name (without `.npy`) and its `.npy` bytes
/// (see [`npy::encode`]).
pub type Member = (String, Vec<u8>);

/// The members of an `.npz` archive in archive order, each read with
/// [`npy::read_array`], named without their `.npy` suffix (as `numpy.load`
/// names them).
pub fn read(bytes: &[u8]) -> Result<Vec<(String, Array)>> {
    let zip_err = |at: At, e: zip::result::ZipError| Error::format(at, format!("{e}"));
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
        Error::format(
            At::Byte(0),
            format!("not an .npz archive (a zip of .npy files): {e}"),
        )
    })?;
    let mut out = Vec::new();
    for i in 0..zip.len() {
        // The compression first, from the raw entry: opening a deflated
        // member fails with zip's own words, which do not say what to do.
        {
            let raw = zip.by_index_raw(i).map_err(|e| zip_err(At::Header, e))?;
            if raw.compression() != zip::CompressionMethod::Stored {
                // Without the codec compiled in, zip calls deflate "Unsupported(8)".
                #[allow(deprecated)]
                let method = match raw.compression() {
                    zip::CompressionMethod::Unsupported(8) => "deflate".to_string(),
                    m => m.to_string(),
                };
                return Err(Error::format(
                    At::Member {
                        name: raw.name().to_string(),
                        at: Box::new(At::Header),
                    },
                    format!(
                        "compression {method} is not read; expected members stored uncompressed (numpy.savez, not savez_compressed; scipy.sparse.save_npz(..., compressed=False))"
                    ),
                ));
            }
        }
        let mut f = zip.by_index(i).map_err(|e| zip_err(At::Header, e))?;
        let full = f.name().to_string();
        let at = |a: At| At::Member {
            name: full.clone(),
            at: Box::new(a),
        };
        if f.is_dir() {
            continue;
        }
        // Grows with the bytes really there, whatever size the entry declares.
        let mut data = Vec::new();
        let mut chunk = [0u8; 1 << 13];
        loop {
            let n = f.read(&mut chunk).map_err(|e| {
                Error::format(at(At::Byte(data.len() as u64)), format!("cannot read: {e}"))
            })?;
            if n == 0 {
                break;
            }
            data.extend_from_slice(&chunk[..n]);
        }
        let array = npy::read_array(&data).map_err(|e| match e {
            Error::Format { at: a, detail } => Error::format(at(a), detail),
            e => e,
        })?;
        let name = full.strip_suffix(".npy").unwrap_or(&full).to_string();
        out.push((name, array));
    }
    Ok(out)
}

/// Writes an `.npz` archive of `members` (stored uncompressed, as
/// `numpy.savez` does; each name gets `.npy` appended).
pub fn write(w: impl Write, members: &[Member]) -> Result<()> {
    let bytes = encode(members)?;
    let mut w = w;
    w.write_all(&bytes)?;
    w.flush()?;
    Ok(())
}

/// The bytes of an `.npz` archive of `members` (see [`write()`]).
pub fn encode(members: &[Member]) -> Result<Vec<u8>> {
    let zip_err = |e: zip::result::ZipError| match e {
        zip::result::ZipError::Io(e) => Error::Io(e),
        e => Error::Io(std::io::Error::other(e)),
    };
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        // Large members need zip64 records; numpy reads them.
        .large_file(
            members
                .iter()
                .any(|(_, b)| b.len() as u64 >= u32::MAX as u64),
        );
    for (name, bytes) in members {
        zip.start_file(format!("{name}.npy"), opts)
            .map_err(zip_err)?;
        zip.write_all(bytes)?;
    }
    Ok(zip.finish().map_err(zip_err)?.into_inner())
}

/// [`encode`] of arrays: each member encoded with [`npy::encode_array`].
pub fn encode_arrays(members: &[(String, Array)]) -> Result<Vec<u8>> {
    let encoded = members
        .iter()
        .map(|(n, a)| Ok((n.clone(), npy::encode_array(a)?)))
        .collect::<Result<Vec<Member>>>()?;
    encode(&encoded)
}

/// The members of a scipy sparse `.npz`, in the order `scipy.sparse.save_npz`
/// writes them.
const CSR_MEMBERS: [&str; 5] = ["indices", "indptr", "format", "shape", "data"];

/// The bytes of `m` as the `.npz` that `scipy.sparse.save_npz` writes for a
/// CSR matrix (with `compressed=False`), so `scipy.sparse.load_npz` opens it:
/// `format` (`b'csr'`, a 0-d `|S3` array), `shape` (int64, 2), `indptr`,
/// `indices` (int32 when the dimensions and the entry count fit, else int64,
/// the rule scipy itself follows) and `data` (float32 or float64, as `T`).
///
/// ```
/// use trident_core::CsrMatrix;
/// let m = CsrMatrix::new(2, 3, vec![0, 1, 2], vec![2, 0], vec![1.5f64, -2.0]).unwrap();
/// let bytes = trident_io::npz::encode_csr(&m).unwrap();
/// assert_eq!(trident_io::npz::read_csr::<f64>(&bytes).unwrap(), m);
/// ```
pub fn encode_csr<T: Scalar + npy::Element>(m: &CsrMatrix<T>) -> Result<Vec<u8>> {
    let small = [m.rows(), m.cols(), m.nnz()]
        .iter()
        .all(|&n| n <= i32::MAX as usize);
    let (indptr, indices) = if small {
        let p: Vec<i32> = m.offsets().iter().map(|&o| o as i32).collect();
        let i: Vec<i32> = m.indices().iter().map(|&j| j as i32).collect();
        (
            npy::encode(&[p.len() as u64], &p)?,
            npy::encode(&[i.len() as u64], &i)?,
        )
    } else {
        let p: Vec<i64> = m.offsets().iter().map(|&o| o as i64).collect();
        let i: Vec<i64> = m.indices().iter().map(|&j| j as i64).collect();
        (
            npy::encode(&[p.len() as u64], &p)?,
            npy::encode(&[i.len() as u64], &i)?,
        )
    };
    let mut format = Vec::new();
    npy::write_bytes(&mut format, &[], 3, b"csr")?;
    let shape = npy::encode(&[2], &[m.rows() as i64, m.cols() as i64])?;
    let data = npy::encode(&[m.nnz() as u64], m.values())?;
    let members = [indices, indptr, format, shape, data];
    let named: Vec<Member> = CSR_MEMBERS
        .iter()
        .map(|n| n.to_string())
        .zip(members)
        .collect();
    encode(&named)
}

/// Writes `m` as a scipy CSR `.npz` (see [`encode_csr`]).
pub fn write_csr<T: Scalar + npy::Element>(mut w: impl Write, m: &CsrMatrix<T>) -> Result<()> {
    w.write_all(&encode_csr(m)?)?;
    w.flush()?;
    Ok(())
}

/// Reads a CSR matrix from a scipy sparse `.npz` (`scipy.sparse.save_npz`
/// with `compressed=False`, or [`encode_csr`]): `format` must be `csr`,
/// indices any integer type, values float32 or float64 (an f64 value that
/// does not fit `T` is an error). Rows with unsorted or repeated columns, which
/// scipy allows, are sorted and their duplicates summed.
pub fn read_csr<T: Scalar>(bytes: &[u8]) -> Result<CsrMatrix<T>> {
    let mut members = read(bytes)?;
    let mut take = |name: &str| -> Result<Array> {
        let k = members.iter().position(|(n, _)| n == name).ok_or_else(|| {
            Error::format(
                At::Header,
                format!(
                    "no member {name:?}: a scipy sparse .npz holds {}",
                    CSR_MEMBERS.join(", ")
                ),
            )
        })?;
        Ok(members.swap_remove(k).1)
    };
    let at = |name: &str, a: At| At::Member {
        name: format!("{name}.npy"),
        at: Box::new(a),
    };
    let format = take("format")?;
    match &format.data {
        // numpy pads byte strings with NULs.
        npy::Data::Bytes { bytes, .. }
            if bytes.trim_ascii_end() == b"csr"
                || bytes.split(|&b| b == 0).next() == Some(b"csr") => {}
        npy::Data::Bytes { bytes, .. } => {
            return Err(Error::format(
                at("format", At::Header),
                format!(
                    "format {:?}: only csr matrices are read (convert with .tocsr())",
                    String::from_utf8_lossy(bytes).trim_end_matches('\0')
                ),
            ));
        }
        d => {
            return Err(Error::format(
                at("format", At::Header),
                format!(
                    "dtype {}: expected a byte string such as b'csr'",
                    d.dtype().name()
                ),
            ));
        }
    }
    let ints = |name: &str, a: Array| -> Result<Vec<i64>> {
        let bad = |d: String| Error::format(at(name, At::Header), d);
        if a.shape.len() != 1 {
            return Err(bad(format!("shape {:?}: expected a 1-D array", a.shape)));
        }
        Ok(match a.data {
            npy::Data::I32(v) => v.into_iter().map(i64::from).collect(),
            npy::Data::I64(v) => v,
            npy::Data::U32(v) => v.into_iter().map(i64::from).collect(),
            npy::Data::U64(v) => v
                .into_iter()
                .map(|x| i64::try_from(x).unwrap_or(i64::MAX))
                .collect(),
            d => {
                return Err(bad(format!(
                    "dtype {}: expected integers",
                    d.dtype().name()
                )));
            }
        })
    };
    let shape = ints("shape", take("shape")?)?;
    let [rows, cols] = shape[..] else {
        return Err(Error::format(
            at("shape", At::Header),
            format!("{} values: expected 2 (rows, cols)", shape.len()),
        ));
    };
    let limit = u32::MAX as i64;
    if !(0..=limit).contains(&rows) || !(0..=limit).contains(&cols) {
        return Err(Error::format(
            at("shape", At::Data),
            format!("{rows} x {cols}: expected 0 to {limit} rows and columns"),
        ));
    }
    let (rows, cols) = (rows as usize, cols as usize);
    let indptr = ints("indptr", take("indptr")?)?;
    let indices = ints("indices", take("indices")?)?;
    let data = take("data")?;
    let values: Vec<T> = match data.data {
        npy::Data::F64(v) => v.into_iter().map(T::from_f64).collect(),
        npy::Data::F32(v) => v.into_iter().map(|x| T::from_f64(x as f64)).collect(),
        d => {
            return Err(Error::format(
                at("data", At::Header),
                format!("dtype {}: expected float32 or float64", d.dtype().name()),
            ));
        }
    };
    let nnz = indices.len();
    if indptr.len() != rows + 1 || values.len() != nnz {
        return Err(Error::format(
            At::Header,
            format!(
                "a {rows} x {cols} matrix needs {} indptr values and as many data values as indices; found {}, {} and {nnz}",
                rows + 1,
                indptr.len(),
                values.len()
            ),
        ));
    }
    let bad_ptr =
        |k: usize, d: String| Error::format(at("indptr", At::Data), format!("element {k}: {d}"));
    if indptr[0] != 0 {
        return Err(bad_ptr(0, format!("{}; expected 0", indptr[0])));
    }
    for k in 1..=rows {
        if indptr[k] < indptr[k - 1] || indptr[k] > nnz as i64 {
            return Err(bad_ptr(
                k,
                format!(
                    "{} after {}; expected a non-decreasing offset up to {nnz}",
                    indptr[k],
                    indptr[k - 1]
                ),
            ));
        }
    }
    if indptr[rows] != nnz as i64 {
        return Err(bad_ptr(
            rows,
            format!("{}; expected the entry count {nnz}", indptr[rows]),
        ));
    }
    if let Some(k) = indices.iter().position(|&j| !(0..cols as i64).contains(&j)) {
        return Err(Error::format(
            at("indices", At::Data),
            format!("element {k}: column {} out of range 0..{cols}", indices[k]),
        ));
    }
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::format(
            at("data", At::Data),
            format!("element {k}: not a finite number in {}", T::NAME),
        ));
    }
    let offsets: Vec<usize> = indptr.iter().map(|&o| o as usize).collect();
    let indices: Vec<u32> = indices.iter().map(|&j| j as u32).collect();
    let sorted = (0..rows).all(|i| indices[offsets[i]..offsets[i + 1]].is_sorted_by(|a, b| a < b));
    if sorted {
        return Ok(CsrMatrix::new(rows, cols, offsets, indices, values)?);
    }
    let mut trip = Vec::with_capacity(nnz);
    for i in 0..rows {
        for p in offsets[i]..offsets[i + 1] {
            trip.push((i as u32, indices[p], values[p]));
        }
    }
    Ok(CsrMatrix::from_triplets(rows, cols, &trip)?)
}
