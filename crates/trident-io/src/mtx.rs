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

use std::io::{BufRead, Write};

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
pub fn read<T: Scalar>(r: impl BufRead) -> Result<CsrMatrix<T>> {
    read_with(r, &Limits::default())
}

/// [`read`], with a cap on the CSR offsets the declared row count asks for.
pub fn read_with<T: Scalar>(r: impl BufRead, limits: &Limits) -> Result<CsrMatrix<T>> {
    let bad = |line: usize, msg: String| Error::format(At::Line(line), msg);
    let mut lines = Lines::new(r);
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
    let mut seen: u64 = 0;
    while let Some((no, l)) = lines.next_line("an entry")? {
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        if seen == nnz {
            return Err(bad(
                no,
                format!("more entries than the {nnz} the size line (line {size_line}) declares"),
            ));
        }
        let (i, j, v) = parse_entry::<T>(t, field, rows, cols).map_err(|m| bad(no, m))?;
        match sym {
            Symmetry::General => {}
            _ if i < j => {
                return Err(bad(
                    no,
                    format!(
                        "entry ({}, {}) above the diagonal; symmetric files store the lower triangle (row >= column)",
                        i + 1,
                        j + 1
                    ),
                ));
            }
            Symmetry::Skew if i == j => {
                return Err(bad(
                    no,
                    "skew-symmetric files have no diagonal entries".into(),
                ));
            }
            _ => {}
        }
        trip.try_reserve(2)
            .map_err(|e| bad(no, format!("out of memory: {e}")))?;
        trip.push((i, j, v));
        if i != j {
            match sym {
                Symmetry::Symmetric => trip.push((j, i, v)),
                Symmetry::Skew => trip.push((j, i, -v)),
                Symmetry::General => {}
            }
        }
        seen += 1;
    }
    if seen != nnz {
        return Err(bad(
            lines.number().max(size_line),
            format!(
                "truncated: the size line (line {size_line}) declares {nnz} entries, the file ends after {seen}"
            ),
        ));
    }
    Ok(CsrMatrix::from_triplets(
        rows as usize,
        cols as usize,
        &trip,
    )?)
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
    let v: Vec<&str> = t.split_whitespace().collect();
    let want = if field == Field::Pattern { 2 } else { 3 };
    let shape = if field == Field::Pattern {
        "`ROW COL`"
    } else {
        "`ROW COL VALUE`"
    };
    if v.len() != want {
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

/// A finite number in `T`'s precision: an `f32` is parsed as `f32`, not
/// rounded twice through `f64`, so the shortest `f32` decimals the writer
/// prints read back to the same bits.
fn parse_real<T: Scalar>(s: &str) -> std::result::Result<T, String> {
    let x: f64 = s
        .parse()
        .map_err(|_| format!("value {s:?} is not a number"))?;
    if !x.is_finite() {
        return Err(format!("value {s} is not finite; expected a finite number"));
    }
    let v = if T::NAME == "f32" {
        let y: f32 = s
            .parse()
            .map_err(|_| format!("value {s:?} is not a number"))?;
        T::from_f64(y as f64)
    } else {
        T::from_f64(x)
    };
    if !v.is_finite() {
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
