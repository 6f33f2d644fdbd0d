//! Matrix Market, coordinate format: `real`, `integer` or `pattern` values,
//! `general`, `symmetric` or `skew-symmetric` storage
//! (<https://math.nist.gov/MatrixMarket/formats.html>).
//!
//! Read here rather than with `sprs::io::read_matrix_market` because a bad file
//! must be reported by line with what was expected, and because declared sizes
//! must be checked before allocating; the tests check that files written here
//! read back with `sprs`'s reader.
//!
//! ```
//! use trident_core::CsrMatrix;
//! let text = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 1 -2\n";
//! let m: CsrMatrix<f64> = trident_io::mtx::read(text.as_bytes()).unwrap();
//! assert_eq!((m.rows(), m.cols(), m.nnz()), (2, 2, 2));
//! let mut out = Vec::new();
//! trident_io::mtx::write(&mut out, &m).unwrap();
//! assert_eq!(trident_io::mtx::read::<f64>(&out[..]).unwrap(), m);
//! ```

use std::io::{BufRead, Read, Write};

use trident_core::{CsrMatrix, Scalar};

use crate::text::{Lines, Num};
use crate::{At, Error, Limits, Result};

/// Entries reserved up front at most, whatever the size line declares: a file
/// claiming 10^12 entries must not make us allocate before it proves it.
const RESERVE_CAP: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

#[derive(Clone, Copy, PartialEq)]
enum Symmetry {
    General,
    Symmetric,
    Skew,
}

/// Reads a coordinate Matrix Market file into CSR (duplicates are summed, as
/// Matrix Market readers do; symmetric storage is expanded). Values are read
/// in `T`'s own precision: an `f32` matrix gets the `f32` nearest each decimal.
///
/// The entries are parsed in parallel (rayon): the body is read in blocks,
/// each split at line boundaries into pieces parsed on all cores and joined
/// in file order, so errors name the same line a sequential reader would.
pub fn read<T: Scalar>(r: impl BufRead) -> Result<CsrMatrix<T>> {
    read_with(r, &Limits::default())
}

/// [`read`], with a cap on the CSR offsets the declared row count asks for.
pub fn read_with<T: Scalar>(r: impl BufRead, limits: &Limits) -> Result<CsrMatrix<T>> {
    read_in_blocks(r, limits, BLOCK, PIECE)
}

/// Bytes of the body read at a time (then parsed in parallel): large enough
/// to keep every core busy, small enough that a file is not held whole.
const BLOCK: usize = 16 << 20;
/// Smallest piece of a block one task parses.
const PIECE: usize = 64 << 10;

/// [`read_with`] with the block and piece sizes as arguments, so tests can
/// cut files at every line.
pub(crate) fn read_in_blocks<T: Scalar>(
    mut r: impl BufRead,
    limits: &Limits,
    block: usize,
    piece: usize,
) -> Result<CsrMatrix<T>> {
    let bad = |line: usize, msg: String| Error::format(At::Line(line), msg);
    let mut lines = Lines::new(&mut r);
    let header = match lines.next_line("the header")? {
        Some((_, h)) => h.to_string(),
        None => {
            return Err(bad(
                1,
                "empty file; expected a `%%MatrixMarket matrix coordinate ...` header".into(),
            ));
        }
    };
    let (field, sym) = parse_header(&header).map_err(|m| bad(1, m))?;
    // Comments, then the size line.
    let (size_line, rows, cols, nnz) = loop {
        let Some((no, l)) = lines.next_line("the size line")? else {
            return Err(bad(
                1,
                "no size line `ROWS COLS ENTRIES` after the header".into(),
            ));
        };
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let v: Vec<&str> = t.split_whitespace().collect();
        let nums: Vec<u64> = v.iter().filter_map(|x| x.parse().ok()).collect();
        if v.len() != 3 || nums.len() != 3 {
            return Err(bad(
                no,
                format!("expected `ROWS COLS ENTRIES` (three integers), found {t:?}"),
            ));
        }
        break (no, nums[0], nums[1], nums[2]);
    };
    let limit = u32::MAX as u64;
    if rows > limit || cols > limit {
        return Err(bad(
            size_line,
            format!("{rows} x {cols} exceeds the {limit} rows/columns Trident indexes with u32"),
        ));
    }
    if sym != Symmetry::General && rows != cols {
        return Err(bad(
            size_line,
            format!("a symmetric matrix must be square, found {rows} x {cols}"),
        ));
    }
    if nnz as u128 > rows as u128 * cols as u128 {
        return Err(bad(
            size_line,
            format!("{nnz} entries declared for a {rows} x {cols} matrix"),
        ));
    }
    // The CSR offsets are the one buffer sized by the header alone.
    limits.check(
        (rows as u128 + 1) * size_of::<usize>() as u128,
        At::Line(size_line),
        || format!("the CSR offsets of {rows} rows"),
    )?;
    let mut trip: Vec<(u32, u32, T)> = Vec::new();
    trip.try_reserve((nnz as usize).min(RESERVE_CAP))
        .map_err(|e| bad(size_line, format!("cannot reserve {nnz} entries: {e}")))?;
    let shape = Shape {
        field,
        sym,
        rows,
        cols,
    };
    // The body, block by block; `line` is the number of the last line read.
    let mut body = Body {
        nnz,
        size_line,
        seen: 0,
        line: lines.number(),
    };
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let start = buf.len();
        let eof = std::io::Read::read_to_end(&mut (&mut r).take(block as u64), &mut buf)? == 0;
        // Whole lines only, but for the last block; a line longer than a
        // block makes the next read add to it.
        let end = if eof {
            buf.len()
        } else {
            match buf[start..].iter().rposition(|&b| b == b'\n') {
                Some(k) => start + k + 1,
                None => continue,
            }
        };
        body.take(&buf[..end], &shape, piece, &mut trip)?;
        buf.drain(..end);
        if eof {
            break;
        }
    }
    if body.seen != nnz {
        return Err(bad(
            body.line.max(size_line),
            format!(
                "truncated: the size line (line {size_line}) declares {nnz} entries, the file ends after {}",
                body.seen
            ),
        ));
    }
    Ok(CsrMatrix::from_triplets(
        rows as usize,
        cols as usize,
        &trip,
    )?)
}

/// What the header and size line say about the entries.
struct Shape {
    field: Field,
    sym: Symmetry,
    rows: u64,
    cols: u64,
}

/// The body read so far.
struct Body {
    nnz: u64,
    size_line: usize,
    /// Entry lines read.
    seen: u64,
    /// The number of the last line read.
    line: usize,
}

/// What one piece of the body holds.
struct Piece<T> {
    /// Its triplets (symmetric storage expanded).
    trip: Vec<(u32, u32, T)>,
    /// Its entry lines read without error.
    entries: u64,
    /// Its lines (the last one may lack its newline).
    lines: usize,
    /// The first bad line: its number within the piece (from 1) and why.
    err: Option<(usize, Bad)>,
}

/// Why a line is bad: not text (reported before anything else about it), or
/// not an entry.
enum Bad {
    Utf8(String),
    Entry(String),
}

impl Body {
    /// Parses the whole lines of `bytes` in parallel and appends their
    /// triplets in file order; the first error in file order wins, with the
    /// line a sequential reader would name.
    fn take<T: Scalar>(
        &mut self,
        bytes: &[u8],
        shape: &Shape,
        piece: usize,
        trip: &mut Vec<(u32, u32, T)>,
    ) -> Result<()> {
        use rayon::prelude::*;
        let cuts = cut(
            bytes,
            piece.max(bytes.len() / (4 * rayon::current_num_threads()) + 1),
        );
        let pieces: Vec<Piece<T>> = cuts
            .par_windows(2)
            .map(|w| parse_piece(&bytes[w[0]..w[1]], shape))
            .collect();
        for (k, p) in pieces.into_iter().enumerate() {
            let left = self.nnz - self.seen;
            let more = |line: usize| {
                Error::format(
                    At::Line(line),
                    format!(
                        "more entries than the {} the size line (line {}) declares",
                        self.nnz, self.size_line
                    ),
                )
            };
            if p.entries > left {
                let text = &bytes[cuts[k]..cuts[k + 1]];
                return Err(more(self.line + nth_entry_line(text, left + 1)));
            }
            match p.err {
                Some((at, Bad::Entry(_))) if p.entries == left => {
                    return Err(more(self.line + at));
                }
                Some((at, Bad::Entry(m) | Bad::Utf8(m))) => {
                    return Err(Error::format(At::Line(self.line + at), m));
                }
                None => {}
            }
            trip.try_reserve(p.trip.len()).map_err(|e| {
                Error::format(At::Line(self.line + 1), format!("out of memory: {e}"))
            })?;
            trip.extend_from_slice(&p.trip);
            self.seen += p.entries;
            self.line += p.lines;
        }
        Ok(())
    }
}

/// Offsets that cut `bytes` into pieces of about `size` bytes at line
/// boundaries, from 0 to `bytes.len()`.
fn cut(bytes: &[u8], size: usize) -> Vec<usize> {
    let mut cuts = vec![0];
    let mut at = 0;
    while at < bytes.len() {
        let next = (at + size.max(1)).min(bytes.len());
        at = match bytes[next - 1..].iter().position(|&b| b == b'\n') {
            Some(k) => next + k,
            None => bytes.len(),
        };
        cuts.push(at);
    }
    cuts
}

/// The lines of `bytes`, without their `\n` / `\r\n`.
fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|&b| b == b'\n')
        .take(if bytes.is_empty() { 0 } else { usize::MAX })
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// Whether a line holds an entry (not blank, not a `%` comment).
fn is_entry(t: &str) -> bool {
    !t.is_empty() && !t.starts_with('%')
}

/// Parses one piece's lines, stopping at the first bad one.
fn parse_piece<T: Scalar>(bytes: &[u8], shape: &Shape) -> Piece<T> {
    let mut p = Piece {
        trip: Vec::new(),
        entries: 0,
        lines: 0,
        err: None,
    };
    for l in split_lines(bytes) {
        p.lines += 1;
        let t = match std::str::from_utf8(l) {
            Ok(t) => t.trim(),
            Err(e) => {
                let m = format!(
                    "cannot read an entry: not UTF-8 text (byte {} of the line)",
                    e.valid_up_to()
                );
                p.err = Some((p.lines, Bad::Utf8(m)));
                return p;
            }
        };
        if !is_entry(t) {
            continue;
        }
        match entry::<T>(t, shape) {
            Ok((i, j, v)) => {
                if p.trip.try_reserve(2).is_err() {
                    p.err = Some((p.lines, Bad::Entry("out of memory".into())));
                    return p;
                }
                p.trip.push((i, j, v));
                if i != j {
                    match shape.sym {
                        Symmetry::Symmetric => p.trip.push((j, i, v)),
                        Symmetry::Skew => p.trip.push((j, i, -v)),
                        Symmetry::General => {}
                    }
                }
                p.entries += 1;
            }
            Err(m) => {
                p.err = Some((p.lines, Bad::Entry(m)));
                return p;
            }
        }
    }
    p
}

/// The number (from 1) of the `n`-th entry line of `bytes`.
fn nth_entry_line(bytes: &[u8], n: u64) -> usize {
    let mut seen = 0;
    for (k, l) in split_lines(bytes).enumerate() {
        if is_entry(std::str::from_utf8(l).map(str::trim).unwrap_or("")) {
            seen += 1;
            if seen == n {
                return k + 1;
            }
        }
    }
    0
}

/// One entry line, checked against the shape and the symmetry.
fn entry<T: Scalar>(t: &str, shape: &Shape) -> std::result::Result<(u32, u32, T), String> {
    let (i, j, v) = parse_entry::<T>(t, shape.field, shape.rows, shape.cols)?;
    match shape.sym {
        Symmetry::General => {}
        _ if i < j => {
            return Err(format!(
                "entry ({}, {}) above the diagonal; symmetric files store the lower triangle (row >= column)",
                i + 1,
                j + 1
            ));
        }
        Symmetry::Skew if i == j => {
            return Err("skew-symmetric files have no diagonal entries".into());
        }
        _ => {}
    }
    Ok((i, j, v))
}

fn parse_header(line: &str) -> std::result::Result<(Field, Symmetry), String> {
    let t: Vec<String> = line
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let expected = "expected `%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric|skew-symmetric`";
    if t.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(format!(
            "not a Matrix Market file: {expected}, found {line:?}"
        ));
    }
    if t.len() != 5 || t[1] != "matrix" {
        return Err(format!("{expected}, found {line:?}"));
    }
    if t[2] != "coordinate" {
        return Err(format!(
            "format {:?} is not read: only sparse `coordinate` files (store dense matrices as .npy)",
            t[2]
        ));
    }
    let field = match t[3].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        other => {
            return Err(format!(
                "field {other:?} is not read; expected real, integer or pattern"
            ));
        }
    };
    let sym = match t[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::Skew,
        other => {
            return Err(format!(
                "symmetry {other:?} is not read; expected general, symmetric or skew-symmetric"
            ));
        }
    };
    Ok((field, sym))
}

/// One entry line: 0-based row, column and the value in `T`.
fn parse_entry<T: Scalar>(
    t: &str,
    field: Field,
    rows: u64,
    cols: u64,
) -> std::result::Result<(u32, u32, T), String> {
    let want = if field == Field::Pattern { 2 } else { 3 };
    let shape = if field == Field::Pattern {
        "`ROW COL`"
    } else {
        "`ROW COL VALUE`"
    };
    // ASCII lines (nearly all) split faster; the same tokens either way.
    let (v, found) = if t.is_ascii() {
        first3(t.split_ascii_whitespace())
    } else {
        first3(t.split_whitespace())
    };
    if found != want {
        return Err(format!("expected {shape}, found {t:?}"));
    }
    let index = |s: &str, what: &str, n: u64| -> std::result::Result<u32, String> {
        let x: u64 = s
            .parse()
            .map_err(|_| format!("{what} {s:?} is not a positive integer"))?;
        if x == 0 || x > n {
            return Err(format!("{what} index {x} out of range 1..={n}"));
        }
        Ok((x - 1) as u32)
    };
    let i = index(v[0], "row", rows)?;
    let j = index(v[1], "column", cols)?;
    let value = match field {
        Field::Pattern => T::ONE,
        Field::Integer => {
            let x = v[2]
                .parse::<i64>()
                .map_err(|_| format!("value {:?} is not an integer (field `integer`)", v[2]))?;
            T::from_f64(x as f64)
        }
        Field::Real => parse_real::<T>(v[2])?,
    };
    Ok((i, j, value))
}

/// The first three tokens (`""` past the end) and how many there are.
fn first3<'a>(mut tok: impl Iterator<Item = &'a str>) -> ([&'a str; 3], usize) {
    let v = [
        tok.next().unwrap_or(""),
        tok.next().unwrap_or(""),
        tok.next().unwrap_or(""),
    ];
    let n = v.iter().filter(|x| !x.is_empty()).count() + tok.count();
    (v, n)
}

/// A finite number in `T`'s precision: an `f32` is parsed as `f32`, not
/// rounded twice through `f64`, so the shortest `f32` decimals the writer
/// prints read back to the same bits.
fn parse_real<T: Scalar>(s: &str) -> std::result::Result<T, String> {
    let not_number = || format!("value {s:?} is not a number");
    let v = if T::NAME == "f32" {
        T::from_f64(s.parse::<f32>().map_err(|_| not_number())? as f64)
    } else {
        T::from_f64(s.parse::<f64>().map_err(|_| not_number())?)
    };
    if !v.is_finite() {
        // The rare path: say whether the decimal itself is infinite.
        let x: f64 = s.parse().map_err(|_| not_number())?;
        if !x.is_finite() {
            return Err(format!("value {s} is not finite; expected a finite number"));
        }
        return Err(format!("value {x} does not fit {}", T::NAME));
    }
    Ok(v)
}

/// Writes `m` as `coordinate real general`, one entry per line, values in the
/// shortest form that reads back to the same bits.
pub fn write<T: Scalar>(mut w: impl Write, m: &CsrMatrix<T>) -> Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
    writeln!(w, "% written by trident-io {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(w, "{} {} {}", m.rows(), m.cols(), m.nnz())?;
    for i in 0..m.rows() {
        let (cols, vals) = m.row(i);
        for (j, v) in cols.iter().zip(vals) {
            // In T's own precision: an f32 prints as its shortest f32 decimal.
            if T::NAME == "f32" {
                writeln!(w, "{} {} {}", i + 1, j + 1, Num(v.to_f64() as f32))?;
            } else {
                writeln!(w, "{} {} {}", i + 1, j + 1, Num(v.to_f64()))?;
            }
        }
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The result of a read as text: the matrix's arrays or the error.
    fn outcome<T: Scalar>(r: Result<CsrMatrix<T>>) -> String {
        match r {
            Ok(m) => format!(
                "{} x {}: {:?} {:?} {:?}",
                m.rows(),
                m.cols(),
                m.offsets(),
                m.indices(),
                m.values().iter().map(|v| v.to_f64()).collect::<Vec<_>>()
            ),
            Err(e) => format!("error: {e}"),
        }
    }

    /// Cut into blocks and pieces of every small size, parsed in parallel,
    /// a file reads exactly as in one piece: the same matrix, or the same
    /// error on the same line.
    #[test]
    fn every_cut_reads_like_one_piece() {
        let h = "%%MatrixMarket matrix coordinate real general\n";
        let sym = "%%MatrixMarket matrix coordinate real symmetric\n";
        let skew = "%%MatrixMarket matrix coordinate real skew-symmetric\n";
        let pat = "%%MatrixMarket matrix coordinate pattern general\n";
        let files: Vec<Vec<u8>> = [
            format!("{h}% c\n3 3 4\n1 1 1\n\n% mid\n2 3 -2.5\r\n3 1 4e-3\n3 3 7"),
            format!("{h}3 3 4\n1 1 1\n2 3 -2.5\n3 1 4e-3\n3 3 7\n"),
            format!("{h}3 3 2\n1 1 1\n2 3 -2.5\n3 1 4e-3\n3 3 7\n"),
            format!("{h}3 3 2\n1 1 1\n2 3 -2.5\n% c\n\n3 1 x\n"),
            format!("{h}3 3 3\n1 1 1\n2 3 -2.5\n3 1 x\n"),
            format!("{h}3 3 5\n1 1 1\n2 3 -2.5\n3 1 4\n"),
            format!("{h}3 3 5\n1 1 1\n2 3 -2.5\n3 1 4\n% trailing\n\n"),
            format!("{h}3 3 0\n% only comments\n"),
            format!("{h}3 3 0\n1 1 1\n"),
            format!("{h}3 3 2\n1 1 1\n4 1 1\n"),
            format!("{h}3 3 2\n1 1 1\n1 1 inf\n"),
            format!("{h}3 3 2\n1 1 1\n1 1\n"),
            format!("{h}3 3 2\n1 1 1\n1 1 1 1\n"),
            format!("{sym}3 3 3\n1 1 1\n2 1 2\n3 2 3\n"),
            format!("{sym}3 3 2\n1 1 1\n1 2 2\n"),
            format!("{skew}3 3 2\n2 1 1\n3 2 2\n"),
            format!("{skew}3 3 2\n2 1 1\n2 2 2\n"),
            format!("{pat}3 3 3\n1 1\n2 2\n3 1\n"),
            format!("{pat}3 3 3\n1 1\n2 2 1\n3 1\n"),
        ]
        .into_iter()
        .map(String::into_bytes)
        .chain([
            format!("{h}3 3 3\n1 1 1\n2 2 \u{ff}\n3 3 3\n").into_bytes(),
            [format!("{h}3 3 2\n1 1 1\n").as_bytes(), b"2 2 \xff\n"].concat(),
            [format!("{h}3 3 1\n1 1 1\n").as_bytes(), b"2 2 \xff\n"].concat(),
            [format!("{h}3 3 1\n1 1 1\n").as_bytes(), b"% \xff\n"].concat(),
        ])
        .collect();
        let limits = Limits::default();
        for f in &files {
            let whole64 = outcome(read_in_blocks::<f64>(&f[..], &limits, BLOCK, BLOCK));
            let whole32 = outcome(read_in_blocks::<f32>(&f[..], &limits, BLOCK, BLOCK));
            for block in [1, 2, 3, 5, 8, 13, 64] {
                for piece in [1, 2, 4, 9, 30] {
                    let text = String::from_utf8_lossy(f);
                    assert_eq!(
                        outcome(read_in_blocks::<f64>(&f[..], &limits, block, piece)),
                        whole64,
                        "block {block}, piece {piece}: {text:?}"
                    );
                    assert_eq!(
                        outcome(read_in_blocks::<f32>(&f[..], &limits, block, piece)),
                        whole32,
                        "block {block}, piece {piece}: {text:?}"
                    );
                }
            }
        }
        // Spot checks of the one-piece answers themselves.
        let one = |f: &str| outcome(read::<f64>(f.as_bytes()));
        assert!(
            one(&format!("{h}3 3 2\n1 1 1\n2 3 -2.5\n3 1 4e-3\n")).contains("line 5: more entries")
        );
        assert!(
            one(&format!("{h}3 3 2\n1 1 1\n2 3 -2.5\n% c\n\n3 1 x\n"))
                .contains("line 7: more entries")
        );
        assert!(
            one(&format!("{h}3 3 3\n1 1 1\n2 3 -2.5\n3 1 x\n")).contains("line 5: value \"x\"")
        );
        assert!(one(&format!("{h}3 3 5\n1 1 1\n% t\n\n")).contains("line 5: truncated"));
    }
}
