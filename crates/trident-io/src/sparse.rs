//! Sparse matrix files, the format chosen by the extension: Matrix Market
//! (`.mtx`, see [`crate::mtx`]) or scipy's sparse `.npz` (see
//! [`crate::npz::encode_csr`]).
//!
//! ```
//! use trident_io::sparse::Format;
//! assert_eq!(Format::from_extension("npz"), Some(Format::Npz));
//! assert_eq!(Format::from_extension("tif"), None);
//! ```

use std::io::Write;

use trident_core::{CsrMatrix, Scalar};

use crate::{Result, mtx, npy, npz};

/// A file format holding a sparse matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.mtx`: Matrix Market coordinate text.
    MatrixMarket,
    /// `.npz`: the archive `scipy.sparse.save_npz` writes for a CSR matrix.
    Npz,
}

impl Format {
    /// The extensions read and written, for messages.
    pub const EXTENSIONS: &'static str = ".mtx (Matrix Market) or .npz (scipy.sparse CSR)";

    /// The format of a lower-case extension (`"mtx"`), `None` if unknown.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext {
            "mtx" => Some(Format::MatrixMarket),
            "npz" => Some(Format::Npz),
            _ => None,
        }
    }
}

/// Reads a whole file in `format`.
pub fn read<T: Scalar>(bytes: &[u8], format: Format) -> Result<CsrMatrix<T>> {
    match format {
        Format::MatrixMarket => mtx::read(bytes),
        Format::Npz => npz::read_csr(bytes),
    }
}

/// Writes `m` in `format`.
pub fn write<T: Scalar + npy::Element>(
    w: impl Write,
    m: &CsrMatrix<T>,
    format: Format,
) -> Result<()> {
    match format {
        Format::MatrixMarket => mtx::write(w, m),
        Format::Npz => npz::write_csr(w, m),
    }
}
