//! Matrix Market, coordinate format: `real`, `integer` or `pattern` values,
//! `general`, `symmetric` or `skew-symmetric` storage
//! (<https://math.nist.gov/MatrixMarket/formats.html>).
//!
//! Read here rather than with `sprs::io::read_matrix_market` because a bad file
//! must be reported by line with what was expected, and because declared sizes
//! must be checked before allocating; the tests check that files written here
//! read back with `sprs`'s reader.

use std::io::BufRead;
use std::path::Path;

use trident::{CsrMatrix, Scalar};

use crate::fail::{CliResult, Fail, bad_file};
use crate::io::output::Output;
use crate::progress::Progress;

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
/// Matrix Market readers do; symmetric storage is expanded).
pub fn read<T: Scalar>(path: &Path, progress: &Progress) -> CliResult<CsrMatrix<T>> {
    let (reader, pb) = super::open(path, progress)?;
    let bad = |line: usize, msg: String| bad_file(path, format!("line {line}"), msg);
    let mut lines = reader.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut next = |what: &str| -> CliResult<Option<(usize, String)>> {
        match lines.next() {
            None => Ok(None),
            Some((no, Ok(l))) => Ok(Some((no, l))),
            Some((no, Err(e))) => Err(bad(no, format!("cannot read {what}: {e}"))),
        }
    };
    let (_, header) = next("the header")?.ok_or_else(|| {
        bad(
            1,
            "empty file; expected a `%%MatrixMarket matrix coordinate ...` header".into(),
        )
    })?;
    let (field, sym) = parse_header(&header).map_err(|m| bad(1, m))?;
    // Comments, then the size line.
    let (size_line, rows, cols, nnz) = loop {
        let Some((no, l)) = next("the size line")? else {
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
    let mut trip: Vec<(u32, u32, T)> = Vec::new();
    trip.try_reserve((nnz as usize).min(super::RESERVE_CAP))
        .map_err(|e| bad(size_line, format!("cannot reserve {nnz} entries: {e}")))?;
    let mut seen: u64 = 0;
    let mut last = size_line;
    while let Some((no, l)) = next("an entry")? {
        last = no;
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
        let (i, j, v) = parse_entry(t, field, rows, cols).map_err(|m| bad(no, m))?;
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
        let tv = T::from_f64(v);
        if !tv.is_finite() {
            return Err(bad(no, format!("value {v} does not fit {}", T::NAME)));
        }
        trip.try_reserve(2)
            .map_err(|e| bad(no, format!("out of memory: {e}")))?;
        trip.push((i, j, tv));
        if i != j {
            match sym {
                Symmetry::Symmetric => trip.push((j, i, tv)),
                Symmetry::Skew => trip.push((j, i, -tv)),
                Symmetry::General => {}
            }
        }
        seen += 1;
    }
    if seen != nnz {
        return Err(bad(
            last,
            format!(
                "truncated: the size line (line {size_line}) declares {nnz} entries, the file ends after {seen}"
            ),
        ));
    }
    pb.finish_and_clear();
    CsrMatrix::from_triplets(rows as usize, cols as usize, &trip)
        .map_err(|e| Fail::from_lib(&path.display().to_string(), e))
}

fn parse_header(line: &str) -> Result<(Field, Symmetry), String> {
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

/// One entry line: 0-based row, column and the value.
fn parse_entry(t: &str, field: Field, rows: u64, cols: u64) -> Result<(u32, u32, f64), String> {
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
    let index = |s: &str, what: &str, n: u64| -> Result<u32, String> {
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
        Field::Pattern => 1.0,
        Field::Integer => v[2]
            .parse::<i64>()
            .map_err(|_| format!("value {:?} is not an integer (field `integer`)", v[2]))?
            as f64,
        Field::Real => {
            let x: f64 = v[2]
                .parse()
                .map_err(|_| format!("value {:?} is not a number", v[2]))?;
            if !x.is_finite() {
                return Err(format!(
                    "value {} is not finite; expected a finite number",
                    v[2]
                ));
            }
            x
        }
    };
    Ok((i, j, value))
}

/// Writes `m` as `coordinate real general`, one entry per line, values in the
/// shortest form that reads back exactly.
pub fn write<T: Scalar>(path: &Path, m: &CsrMatrix<T>) -> CliResult<()> {
    let mut out = Output::create(path)?;
    let r = (|| -> std::io::Result<()> {
        let w = out.writer();
        writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
        writeln!(w, "% written by trident {}", env!("CARGO_PKG_VERSION"))?;
        writeln!(w, "{} {} {}", m.rows(), m.cols(), m.nnz())?;
        for i in 0..m.rows() {
            let (cols, vals) = m.row(i);
            for (j, v) in cols.iter().zip(vals) {
                writeln!(w, "{} {} {}", i + 1, j + 1, v)?;
            }
        }
        Ok(())
    })();
    r.map_err(|e| out.fail(e))?;
    out.commit()
}
