//! # trident-io
//!
//! Readers and writers of the files Trident's primitives work on, for Rust
//! programs and for the `trident` command alike:
//!
//! | module | format | Trident value |
//! | --- | --- | --- |
//! | [`mtx`] | Matrix Market coordinate (`real`, `integer`, `pattern`; `general`, `symmetric`, `skew-symmetric`) | [`CsrMatrix`](trident_core::CsrMatrix) |
//! | [`npy`] | NPY arrays (float32/64, int32/64, uint32/64; C or Fortran order) | [`npy::Array`], [`npy::Matrix`] |
//! | [`npz`] | NPZ archives of NPY members, stored as `numpy.savez` does; sparse matrices as `scipy.sparse.save_npz` lays them out | named [`npy::Array`]s, [`CsrMatrix`](trident_core::CsrMatrix) |
//! | [`neighbors`] | nearest-neighbour results as CSV, NPY or NPZ (written only) | indices and distances |
//! | [`sparse`] | a sparse matrix as `.mtx` or scipy `.npz`, chosen by extension | [`CsrMatrix`](trident_core::CsrMatrix) |
//! | [`ply`] | PLY point clouds (`ascii`, `binary_little_endian`, `binary_big_endian`) | [`Point`](trident_core::Point)s |
//! | [`points`] | CSV / XYZ text (comma- or whitespace-separated), and NPY `N x 3` | [`Point`](trident_core::Point)s |
//! | [`img`] | PNG / JPEG: grey levels, scribble seeds, binary masks | [`img::Image`] |
//! | [`dimacs`] | DIMACS max-flow (kept in `trident-core`, documented here) | [`FlowNetwork`](trident_core::FlowNetwork) |
//!
//! Readers take bytes or a reader (`impl BufRead` / `&[u8]`), so the caller
//! decides where they come from and shows progress if it wants; writers take
//! any `impl Write`. Text writers print numbers in their shortest form that
//! reads back to the same bits, so every writer's output reads back equal.
//!
//! What it is not: no file system handling (atomic outputs, extensions are the
//! caller's), no progress bars, no computation.
//!
//! ## Bad files
//! A malformed file is an [`Error::Format`] saying where ([`At`]: the line,
//! the byte offset, the header) and what was expected; no reader panics on
//! any input. Sizes a file declares are checked before anything of that size
//! is allocated: buffers grow with the data actually present, or are bounded
//! by [`Limits`], so a header claiming 10^12 entries is an error, not an abort.
//! Every reader is fuzzed (`fuzz/` in the repository) and round-trip tested.
#![warn(missing_docs)]
// Library code returns errors; it never unwraps on data it reads.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod dimacs;
pub mod img;
pub mod mtx;
pub mod neighbors;
pub mod npy;
pub mod npz;
pub mod ply;
pub mod points;
pub mod sparse;
mod text;

use std::fmt;

/// Shorthand for `std::result::Result<T, trident_io::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a valid file of the format: `at` says where, `detail`
    /// what was expected and what was found.
    #[error("{at}: {detail}")]
    Format {
        /// Where in the file.
        at: At,
        /// What is wrong there.
        detail: String,
    },
    /// The reader or writer underneath failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The file is well formed but holds what Trident rejects (duplicates that
    /// sum to infinity), needs more memory than there is, or a value handed to
    /// a writer does not fit its shape.
    #[error(transparent)]
    Core(#[from] trident_core::Error),
}

impl Error {
    /// Builds an [`Error::Format`].
    pub fn format(at: At, detail: impl Into<String>) -> Self {
        Error::Format {
            at,
            detail: detail.into(),
        }
    }
}

/// A place in a file, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum At {
    /// A 1-based line of a text format (or of a PLY header).
    Line(usize),
    /// A byte offset from the start of the file.
    Byte(u64),
    /// The header as a whole: a declared shape, type or size.
    Header,
    /// The encoded data as a whole (an image that does not decode).
    Data,
    /// The end of the file: something it should still hold.
    End,
    /// The `n`-th point (0-based) of a point set.
    Point(usize),
    /// A place inside one member of an archive.
    Member {
        /// The member's name in the archive.
        name: String,
        /// Where in that member.
        at: Box<At>,
    },
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Line(n) => write!(f, "line {n}"),
            At::Byte(n) => write!(f, "byte {n}"),
            At::Header => f.write_str("header"),
            At::Data => f.write_str("data"),
            At::End => f.write_str("end"),
            At::Point(n) => write!(f, "point {n}"),
            At::Member { name, at } => write!(f, "{name}:{at}"),
        }
    }
}

/// Caps on what a file can make a reader allocate before its data proves the
/// sizes it declares: a Matrix Market file's row count (its CSR offsets), an
/// image's width and height (the decoded pixels). Everything else a reader
/// holds grows with the bytes actually read.
///
/// The default is no cap beyond the machine's memory (a request larger than
/// that is an error, see `trident_core::mem`); a fuzzer or a server reading
/// untrusted files sets a smaller one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of one buffer whose size comes from the file's header.
    pub max_alloc: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_alloc: u64::MAX,
        }
    }
}

impl Limits {
    /// `Err` naming `what` when `bytes` exceed [`Limits::max_alloc`].
    pub(crate) fn check(&self, bytes: u128, at: At, what: impl FnOnce() -> String) -> Result<()> {
        if bytes > self.max_alloc as u128 {
            return Err(Error::format(
                at,
                format!(
                    "{} needs {bytes} bytes, over the limit of {} bytes",
                    what(),
                    self.max_alloc
                ),
            ));
        }
        Ok(())
    }
}
