//! The command's side of its files: opening them with a byte progress bar,
//! naming the file in every error, and outputs written all-or-nothing
//! ([`output`]). The formats themselves (Matrix Market, NPY/NPZ, PLY, CSV/XYZ,
//! images) are read and written by `trident_io`; DIMACS by `trident-core`.
//!
//! A malformed file is [`Fail::BadInput`] (exit 3) as `PATH:LOCATION: what was
//! expected`, with the location (line, byte, header) from `trident_io`; a
//! file that cannot be opened, read or written is [`Fail::Io`] (exit 4).

pub mod output;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use indicatif::ProgressBar;
use trident::{CsrMatrix, Point, Scalar};
use trident_io::img::{Image, ImageFormat, Seed};
use trident_io::npy::{self, Element};
use trident_io::points::{Format, Points};
use trident_io::sparse;

use crate::fail::{CliResult, Fail, bad_file, io_error};
use crate::io::output::Output;
use crate::progress::Progress;

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

/// The format an output's extension names, checked before any input is
/// read: an extension the command cannot write is a usage error (exit 2),
/// never a file in another format under that name. `formats` pairs each
/// extension (lower case, no dot) with its format; `flag` and `command` name
/// the option and the subcommand in the message.
pub fn output_format<F: Copy>(
    command: &str,
    flag: &str,
    path: &Path,
    formats: &[(&str, F)],
) -> CliResult<F> {
    let ext = extension(path);
    if let Some((_, f)) = formats.iter().find(|(e, _)| *e == ext) {
        return Ok(*f);
    }
    let names: Vec<String> = formats.iter().map(|(e, _)| format!(".{e}")).collect();
    let found = if ext.is_empty() {
        "a name without an extension".to_string()
    } else {
        format!("a .{ext} file")
    };
    Err(Fail::Usage(format!(
        "{flag} {}: {command} cannot write {found}; it writes {}",
        path.display(),
        names.join(", ")
    )))
}

/// An error of `trident_io` while reading `path`, classified for the exit
/// code: malformed is bad input (3), I/O is 4, and what the core rejects as
/// [`Fail::from_lib`] says.
pub fn read_fail(path: &Path, e: trident_io::Error) -> Fail {
    match e {
        trident_io::Error::Format { at, detail } => bad_file(path, at, detail),
        trident_io::Error::Io(e) => io_error(path, format!("cannot read: {e}")),
        trident_io::Error::Core(e) => Fail::from_lib(&path.display().to_string(), e),
        e => Fail::BadInput(format!("{}: {e}", path.display())),
    }
}

/// An error of `trident_io` while writing `out`: an I/O error (4).
fn write_fail(out: &Output, e: trident_io::Error) -> Fail {
    match e {
        trident_io::Error::Io(e) => out.fail(e),
        e => out.fail(e),
    }
}

/// Runs `read` on the bytes of `path` (read with a progress bar).
fn read_bytes<T>(
    path: &Path,
    progress: &Progress,
    read: impl FnOnce(&[u8]) -> trident_io::Result<T>,
) -> CliResult<T> {
    let bytes = read_all(path, progress)?;
    read(&bytes).map_err(|e| read_fail(path, e))
}

/// Writes `path` all-or-nothing with `write`.
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> trident_io::Result<()>,
) -> CliResult<()> {
    let mut out = Output::create(path)?;
    let r = write(out.writer());
    r.map_err(|e| write_fail(&out, e))?;
    out.commit()
}

/// A Matrix Market file as CSR in `T`.
pub fn read_mtx<T: Scalar>(path: &Path, progress: &Progress) -> CliResult<CsrMatrix<T>> {
    let (reader, pb) = open(path, progress)?;
    let m = trident_io::mtx::read(reader).map_err(|e| read_fail(path, e))?;
    pb.finish_and_clear();
    Ok(m)
}

/// A sparse matrix: Matrix Market (read as it streams in) or scipy `.npz`,
/// by extension.
pub fn read_sparse<T: Scalar>(path: &Path, progress: &Progress) -> CliResult<CsrMatrix<T>> {
    match sparse::Format::from_extension(&extension(path)) {
        Some(sparse::Format::Npz) => read_bytes(path, progress, trident_io::npz::read_csr),
        // Anything else is read as Matrix Market, whose header says if it is not.
        _ => read_mtx(path, progress),
    }
}

/// Writes `m` in `format`.
pub fn write_sparse<T: Scalar + Element>(
    path: &Path,
    m: &CsrMatrix<T>,
    format: sparse::Format,
) -> CliResult<()> {
    write_file(path, |w| sparse::write(w, m, format))
}

/// A 2-D float32/float64 `.npy` matrix.
pub fn read_npy_matrix(path: &Path, progress: &Progress) -> CliResult<npy::Matrix> {
    read_bytes(path, progress, npy::read_matrix)
}

/// Writes a row-major `rows x cols` matrix as `.npy`.
pub fn write_npy_matrix<T: Element>(
    path: &Path,
    rows: usize,
    cols: usize,
    data: &[T],
) -> CliResult<()> {
    write_file(path, |w| npy::write(w, &[rows as u64, cols as u64], data))
}

/// Writes an `.npz` archive of 1-D arrays, one per `(name, .npy bytes)`.
pub fn write_npz(path: &Path, members: &[trident_io::npz::Member]) -> CliResult<()> {
    write_file(path, |w| trident_io::npz::write(w, members))
}

/// An encoding failure of an `.npz` member bound for `path`.
pub fn encode_fail(path: &Path, e: trident_io::Error) -> Fail {
    io_error(path, format!("cannot encode: {e}"))
}

/// The points of `path`, in the format its extension names.
/// Points of `.npy`, `.ply`, `.csv`, `.xyz` or `.txt` in the precision the
/// file holds them (`trident_io::points::read_any`): float64 stays f64.
pub fn read_points_any(path: &Path, progress: &Progress) -> CliResult<Points> {
    let ext = extension(path);
    match Format::from_extension(&ext) {
        Some(format @ (Format::Text | Format::Csv)) => {
            let (mut reader, pb) = open(path, progress)?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut bytes)
                .map_err(|e| read_fail(path, trident_io::Error::Io(e)))?;
            let pts =
                trident_io::points::read_any(&bytes, format).map_err(|e| read_fail(path, e))?;
            pb.finish_and_clear();
            Ok(pts)
        }
        Some(format) => read_bytes(path, progress, |b| trident_io::points::read_any(b, format)),
        None => Err(bad_file(
            path,
            "name",
            format!(
                "unknown point format {ext:?}; expected .npy (N x 3), .ply, .csv, .xyz or .txt"
            ),
        )),
    }
}

pub fn read_points(path: &Path, progress: &Progress) -> CliResult<Vec<Point>> {
    let ext = extension(path);
    match Format::from_extension(&ext) {
        Some(format @ (Format::Text | Format::Csv)) => {
            let (reader, pb) = open(path, progress)?;
            let pts = match format {
                Format::Csv => trident_io::points::read_csv(reader),
                _ => trident_io::points::read_text(reader),
            }
            .map_err(|e| read_fail(path, e))?;
            pb.finish_and_clear();
            Ok(pts)
        }
        Some(format) => read_bytes(path, progress, |b| trident_io::points::read(b, format)),
        None => Err(bad_file(
            path,
            "name",
            format!(
                "unknown point format {ext:?}; expected .npy (N x 3), .ply, .csv, .xyz or .txt"
            ),
        )),
    }
}

/// Grey levels of a PNG or JPEG image.
pub fn read_gray(path: &Path, progress: &Progress) -> CliResult<Image<u8>> {
    read_bytes(path, progress, trident_io::img::read_gray)
}

/// Seeds of a scribble image (see `trident_io::img::read_seeds`).
pub fn read_seeds(path: &Path, progress: &Progress) -> CliResult<Image<Seed>> {
    read_bytes(path, progress, trident_io::img::read_seeds)
}

/// Writes a binary mask in `format` (see [`output_format`]).
pub fn write_mask(path: &Path, mask: &Image<bool>, format: ImageFormat) -> CliResult<()> {
    write_file(path, |w| trident_io::img::write_mask(w, mask, format))
}
