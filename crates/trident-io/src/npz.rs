//! NPZ archives: a zip of `.npy` members, stored uncompressed as
//! `numpy.savez` writes them (`numpy.savez_compressed`'s deflated members are
//! not read: no codec is built in).
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
        let mut f = zip.by_index(i).map_err(|e| zip_err(At::Header, e))?;
        let full = f.name().to_string();
        let at = |a: At| At::Member {
            name: full.clone(),
            at: Box::new(a),
        };
        if f.is_dir() {
            continue;
        }
        if f.compression() != zip::CompressionMethod::Stored {
            return Err(Error::format(
                at(At::Header),
                format!(
                    "compression {} is not read; expected members stored uncompressed (numpy.savez, not savez_compressed)",
                    f.compression()
                ),
            ));
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
