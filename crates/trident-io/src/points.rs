//! Point sets (`N x 3`, f32) as text, `x,y,z` or `x y z` per line (CSV,
//! XYZ), or as an `N x 3` `.npy` matrix; PLY is in [`crate::ply`].
//!
//! Text: a line is split at commas when it has one (CSV, double-quoted fields
//! allowed), else at runs of spaces and tabs (XYZ); blank lines and `#`
//! comments are skipped, and a first line that is not all numbers is a header.
//!
//! ```
//! let pts = trident_io::points::read_text("x y z\n0 0 1\n2.5\t-1 0\n".as_bytes()).unwrap();
//! assert_eq!(pts, [[0.0, 0.0, 1.0], [2.5, -1.0, 0.0]]);
//! ```

use std::borrow::Cow;
use std::io::{BufRead, Write};

use trident_core::Point;

use crate::npy;
use crate::text::{Lines, Num};
use crate::{At, Error, Result};

/// A file format holding points, chosen by a file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.npy`, an `N x 3` float32/float64 matrix.
    Npy,
    /// `.ply`, see [`crate::ply`].
    Ply,
    /// `.csv`, `.xyz`, `.txt`: see [`read_text`].
    Text,
}

impl Format {
    /// The format of a lower-case extension (`"ply"`), `None` if unknown.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext {
            "npy" => Some(Format::Npy),
            "ply" => Some(Format::Ply),
            "csv" | "txt" | "xyz" => Some(Format::Text),
            _ => None,
        }
    }
}

/// Reads the points of a whole file in `format`.
pub fn read(bytes: &[u8], format: Format) -> Result<Vec<Point>> {
    match format {
        Format::Npy => read_npy(bytes),
        Format::Ply => crate::ply::read(bytes),
        Format::Text => read_text(bytes),
    }
}

/// Points from an `N x 3` float32/float64 `.npy` matrix; float64 coordinates
/// must fit f32.
pub fn read_npy(bytes: &[u8]) -> Result<Vec<Point>> {
    let m = npy::read_matrix(bytes)?;
    if m.cols != 3 {
        return Err(Error::format(
            At::Header,
            format!("shape {} x {}: expected N x 3 points", m.rows, m.cols),
        ));
    }
    if let npy::Dense::F64(v) = &m.data
        && let Some(k) = v.iter().position(|&x| !(x as f32).is_finite())
    {
        return Err(Error::format(
            At::Point(k / 3),
            format!("coordinate {} does not fit f32", v[k]),
        ));
    }
    Ok(m.to_f32()
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect())
}

/// Writes points as an `N x 3` float32 `.npy` matrix.
pub fn write_npy(w: impl Write, pts: &[Point]) -> Result<()> {
    npy::write(w, &[pts.len() as u64, 3], pts.as_flattened())
}

/// Parses one coordinate; non-finite values are rejected.
pub(crate) fn coord(s: &str) -> std::result::Result<f32, String> {
    let x: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("{:?} is not a number", s.trim()))?;
    if !x.is_finite() {
        return Err(format!(
            "coordinate {} is not finite; expected a finite f32",
            s.trim()
        ));
    }
    Ok(x)
}

/// The fields of a CSV line: split at commas outside double quotes, quotes
/// removed (`""` inside quotes is one `"`).
fn csv_fields(line: &str) -> std::result::Result<Vec<Cow<'_, str>>, String> {
    if !line.contains('"') {
        return Ok(line.split(',').map(Cow::Borrowed).collect());
    }
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(Cow::Owned(std::mem::take(&mut field))),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated double quote".into());
    }
    out.push(Cow::Owned(field));
    Ok(out)
}

/// Points from text: `x,y,z` (CSV) or `x y z` (XYZ, spaces or tabs) per line.
/// A first line that does not parse as numbers is a header; blank lines and
/// lines starting with `#` are skipped.
pub fn read_text(r: impl BufRead) -> Result<Vec<Point>> {
    let mut lines = Lines::new(r);
    let mut pts: Vec<Point> = Vec::new();
    let mut first = true;
    while let Some((no, line)) = lines.next_line("a point")? {
        let bad = |m: String| Error::format(At::Line(no), m);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let comma = t.contains(',');
        let f: Vec<Cow<str>> = if comma {
            csv_fields(t).map_err(bad)?
        } else {
            t.split_whitespace().map(Cow::Borrowed).collect()
        };
        let was_first = std::mem::replace(&mut first, false);
        if was_first && f.iter().any(|x| x.trim().parse::<f64>().is_err()) {
            continue; // header
        }
        if f.len() != 3 {
            let shape = if comma { "`x,y,z`" } else { "`x y z`" };
            return Err(bad(format!(
                "expected {shape} (3 fields), found {} in {t:?}",
                f.len()
            )));
        }
        let mut p = [0f32; 3];
        for (d, s) in f.iter().enumerate() {
            p[d] = coord(s).map_err(bad)?;
        }
        pts.try_reserve(1)
            .map_err(|e| bad(format!("out of memory: {e}")))?;
        pts.push(p);
    }
    Ok(pts)
}

/// Writes points as CSV with an `x,y,z` header line, coordinates in their
/// shortest form that reads back to the same bits.
pub fn write_csv(w: impl Write, pts: &[Point]) -> Result<()> {
    write_text(w, pts, Some("x,y,z"), ',')
}

/// Writes points as XYZ: `x y z` per line, no header.
pub fn write_xyz(w: impl Write, pts: &[Point]) -> Result<()> {
    write_text(w, pts, None, ' ')
}

fn write_text(mut w: impl Write, pts: &[Point], header: Option<&str>, sep: char) -> Result<()> {
    if let Some(h) = header {
        writeln!(w, "{h}")?;
    }
    for [x, y, z] in pts {
        writeln!(w, "{}{sep}{}{sep}{}", Num(*x), Num(*y), Num(*z))?;
    }
    w.flush()?;
    Ok(())
}
