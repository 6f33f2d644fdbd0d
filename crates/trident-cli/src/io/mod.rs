//! File formats of the CLI: Matrix Market ([`mtx`]), NPY/NPZ ([`npy`], through
//! `npyz`), point clouds ([`points`]: NPY, PLY, CSV), images ([`img`], through
//! `image`); DIMACS max-flow lives in `trident-core`.
//!
//! Every reader reports a bad file as [`crate::fail::Fail::BadInput`] naming the
//! file, the line (text formats) or byte offset (binary formats) and what was
//! expected; none panics, and sizes a file declares are checked before
//! anything of that size is allocated. Every writer goes through
//! [`output::Output`], so a failed run leaves no partial output.

pub mod img;
pub mod mtx;
pub mod npy;
pub mod output;
pub mod points;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use indicatif::ProgressBar;

use crate::fail::{CliResult, io_error};
use crate::progress::Progress;

/// Entries reserved up front at most, whatever a header declares: a file
/// claiming 10^12 entries must not make us allocate before it proves it.
pub const RESERVE_CAP: usize = 1 << 20;

/// Opens `path` for reading, with a byte progress bar (finished by the caller).
pub fn open(
    path: &Path,
    progress: &Progress,
) -> CliResult<(indicatif::ProgressBarIter<BufReader<File>>, ProgressBar)> {
    let file = File::open(path).map_err(|e| io_error(path, format!("cannot open: {e}")))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let pb = progress.bar(len, format!("reading {}", path.display()), true);
    Ok((pb.wrap_read(BufReader::new(file)), pb))
}

/// Reads all of `path` into memory, with a byte progress bar.
pub fn read_all(path: &Path, progress: &Progress) -> CliResult<Vec<u8>> {
    use std::io::Read;
    let (mut r, pb) = open(path, progress)?;
    let mut buf = Vec::new();
    r.read_to_end(&mut buf)
        .map_err(|e| io_error(path, format!("cannot read: {e}")))?;
    pb.finish_and_clear();
    Ok(buf)
}

/// The lower-cased extension of `path` (`""` if none).
pub fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}
