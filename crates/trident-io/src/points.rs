//! Point sets (`N x 3`, f32 or f64: [`read_any`] keeps what f32 would round) as text, CSV (`.csv`) or whitespace-separated
//! columns (`.xyz`, `.txt`), or as an `N x 3` `.npy` matrix; PLY is in
//! [`crate::ply`].
//!
//! Text, as `numpy.loadtxt` and LiDAR tools (CloudCompare, PDAL) read it:
//! - Blank lines are skipped; `#` starts a comment (to the end of the line in
//!   XYZ, a whole line in CSV, where `#` may sit inside a quoted field).
//! - The first row is a header when one of its fields is not a number. A
//!   header naming columns `x`, `y` and `z` (any case, CloudCompare's `//X`
//!   too) picks those columns; otherwise the first three are the coordinates.
//! - Further columns (intensity, colour, normals) are ignored: a row needs
//!   at least three; rows may differ in length.
//! - CSV ([`read_csv`]) is read by the `csv` crate: double-quoted fields,
//!   `""` escapes, spaces around fields trimmed. XYZ ([`read_xyz`]) splits at
//!   runs of spaces and tabs; a `.xyz` / `.txt` whose first row has a comma
//!   is read as CSV ([`read_text`] decides).
//!
//! ```
//! let pts = trident_io::points::read_text("x y z\n0 0 1\n2.5\t-1 0 # kept\n".as_bytes()).unwrap();
//! assert_eq!(pts, [[0.0, 0.0, 1.0], [2.5, -1.0, 0.0]]);
//! let lidar = "//X,Y,Z,Intensity\n1,2,3,40\n4,5,6,41\n";
//! assert_eq!(trident_io::points::read_csv(lidar.as_bytes()).unwrap(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
//! ```

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
    /// `.xyz`, `.txt`: whitespace-separated, or CSV when the first row has
    /// commas; see [`read_text`].
    Text,
    /// `.csv`: see [`read_csv`].
    Csv,
}

impl Format {
    /// The format of a lower-case extension (`"ply"`), `None` if unknown.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext {
            "npy" => Some(Format::Npy),
            "ply" => Some(Format::Ply),
            "csv" => Some(Format::Csv),
            "txt" | "xyz" => Some(Format::Text),
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
        Format::Csv => read_csv(bytes),
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

/// Points as the file holds them: f32, or f64 where f32 would round them.
#[derive(Clone, Debug, PartialEq)]
pub enum Points {
    /// Single precision (a float32 `.npy`, a PLY of `float` coordinates,
    /// text whose every coordinate is exactly an f32).
    F32(Vec<Point>),
    /// Double precision (a float64 `.npy`, a PLY of `double` coordinates,
    /// text with a coordinate that f32 cannot hold exactly).
    F64(Vec<Point<f64>>),
}

impl Points {
    /// Number of points.
    pub fn len(&self) -> usize {
        match self {
            Points::F32(p) => p.len(),
            Points::F64(p) => p.len(),
        }
    }
    /// `true` when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `"f32"` or `"f64"`.
    pub fn dtype(&self) -> &'static str {
        match self {
            Points::F32(_) => "f32",
            Points::F64(_) => "f64",
        }
    }
    /// `p` as f32 when every coordinate converts to f32 exactly (small
    /// integers, halves, values written from f32), else kept in f64: never
    /// rounded. Decimal text such as `0.1` is not an f32, so it stays f64.
    pub fn narrowest(p: Vec<Point<f64>>) -> Points {
        if p.as_flattened().iter().all(|&x| (x as f32) as f64 == x) {
            Points::F32(p.iter().map(|q| q.map(|x| x as f32)).collect())
        } else {
            Points::F64(p)
        }
    }
    /// The points in f64 (exact).
    pub fn to_f64(&self) -> Vec<Point<f64>> {
        match self {
            Points::F32(p) => p.iter().map(|q| q.map(f64::from)).collect(),
            Points::F64(p) => p.clone(),
        }
    }
}

/// Reads the points of a whole file in `format`, in the precision it holds
/// them ([`Points`]): a float64 `.npy` or a PLY of `double` coordinates
/// stays f64, a float32 one f32; text is f64 unless every coordinate is
/// exactly an f32 ([`Points::narrowest`]).
///
/// ```
/// use trident_io::points::{Points, read_any, Format};
/// let utm = "500000.25 5300000.1 200\n500001 5300001 200.5\n";
/// assert!(matches!(read_any(utm.as_bytes(), Format::Text).unwrap(), Points::F64(_)));
/// let grid = "0 0 1\n2.5 -1 0\n";
/// assert_eq!(read_any(grid.as_bytes(), Format::Text).unwrap(),
///            Points::F32(vec![[0.0, 0.0, 1.0], [2.5, -1.0, 0.0]]));
/// ```
pub fn read_any(bytes: &[u8], format: Format) -> Result<Points> {
    match format {
        Format::Npy => {
            let m = npy::read_matrix(bytes)?;
            if m.cols != 3 {
                return Err(Error::format(
                    At::Header,
                    format!("shape {} x {}: expected N x 3 points", m.rows, m.cols),
                ));
            }
            Ok(match &m.data {
                npy::Dense::F32(v) => {
                    Points::F32(v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
                }
                npy::Dense::F64(v) => {
                    Points::F64(v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
                }
            })
        }
        Format::Ply => crate::ply::read_any(bytes),
        Format::Text => read_text_t(bytes, coord64).map(Points::narrowest),
        Format::Csv => read_csv_t(bytes, coord64).map(Points::narrowest),
    }
}

/// Parses one coordinate in f64; non-finite values are rejected.
pub(crate) fn coord64(s: &str) -> std::result::Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{:?} is not a number", s.trim()))?;
    if !x.is_finite() {
        return Err(format!("coordinate {} is not finite", s.trim()));
    }
    Ok(x)
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

/// Which columns hold x, y and z: named by a header, else the first three.
fn columns(header: Option<&[&str]>) -> [usize; 3] {
    let Some(h) = header else {
        return [0, 1, 2];
    };
    let name = |f: &str| {
        f.trim()
            .trim_start_matches("//")
            .trim()
            .to_ascii_lowercase()
    };
    let find = |want: &str| h.iter().position(|f| name(f) == want);
    match (find("x"), find("y"), find("z")) {
        (Some(x), Some(y), Some(z)) => [x, y, z],
        _ => [0, 1, 2],
    }
}

/// A coordinate parser: [`coord`] (f32) or [`coord64`].
type Parse<T> = fn(&str) -> std::result::Result<T, String>;

/// The point in `fields` at `cols`, or why not (`shape` names the layout).
fn point<T: Copy + Default>(
    fields: &[&str],
    cols: [usize; 3],
    shape: &str,
    parse: Parse<T>,
) -> std::result::Result<[T; 3], String> {
    let need = cols.iter().max().map_or(3, |&c| c + 1);
    if fields.len() < need {
        return Err(format!(
            "expected {shape} (at least {need} fields), found {} in {:?}",
            fields.len(),
            fields.join(if shape.contains(',') { "," } else { " " })
        ));
    }
    let mut p = [T::default(); 3];
    for (d, &c) in cols.iter().enumerate() {
        p[d] = parse(fields[c])?;
    }
    Ok(p)
}

/// Whether a first row is a header: one of its first three fields is not a
/// number (later columns may hold labels in data rows too).
fn is_header(fields: &[&str]) -> bool {
    fields
        .iter()
        .take(3)
        .any(|x| x.trim().parse::<f64>().is_err())
}

/// Points from CSV (see the module docs). Errors name the line.
pub fn read_csv(r: impl BufRead) -> Result<Vec<Point>> {
    read_csv_t(r, coord)
}

fn read_csv_t<T: Copy + Default>(r: impl BufRead, parse: Parse<T>) -> Result<Vec<[T; 3]>> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(r);
    let mut pts: Vec<[T; 3]> = Vec::new();
    let mut cols = None;
    let mut rec = csv::ByteRecord::new();
    loop {
        let more = rd.read_byte_record(&mut rec).map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            match e.into_kind() {
                csv::ErrorKind::Io(e) => Error::Io(e),
                k => Error::format(At::Line(line), format!("not CSV: {k:?}")),
            }
        })?;
        if !more {
            break;
        }
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let bad = |m: String| Error::format(At::Line(line), m);
        let fields: Vec<&str> = rec
            .iter()
            .map(std::str::from_utf8)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| bad(format!("not UTF-8 text: {e}")))?;
        // A line of only spaces is a record of one empty field.
        if fields.iter().all(|f| f.is_empty()) {
            continue;
        }
        let c = match cols {
            Some(c) => c,
            None if is_header(&fields) => {
                cols = Some(columns(Some(&fields)));
                continue;
            }
            None => *cols.insert(columns(None)),
        };
        let p = point(&fields, c, "`x,y,z`", parse).map_err(bad)?;
        pts.try_reserve(1)
            .map_err(|e| bad(format!("out of memory: {e}")))?;
        pts.push(p);
    }
    Ok(pts)
}

/// Points from whitespace-separated columns (`.xyz`, `.txt`; see the module
/// docs). Errors name the line.
pub fn read_xyz(r: impl BufRead) -> Result<Vec<Point>> {
    read_xyz_t(r, coord)
}

fn read_xyz_t<T: Copy + Default>(r: impl BufRead, parse: Parse<T>) -> Result<Vec<[T; 3]>> {
    let mut lines = Lines::new(r);
    let mut pts: Vec<[T; 3]> = Vec::new();
    let mut cols = None;
    while let Some((no, line)) = lines.next_line("a point")? {
        let bad = |m: String| Error::format(At::Line(no), m);
        let t = line.split('#').next().unwrap_or("");
        let fields: Vec<&str> = t.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let c = match cols {
            Some(c) => c,
            None if is_header(&fields) => {
                cols = Some(columns(Some(&fields)));
                continue;
            }
            None => *cols.insert(columns(None)),
        };
        let p = point(&fields, c, "`x y z`", parse).map_err(bad)?;
        pts.try_reserve(1)
            .map_err(|e| bad(format!("out of memory: {e}")))?;
        pts.push(p);
    }
    Ok(pts)
}

/// Points from text, CSV or whitespace-separated: CSV when the first line
/// that is not blank or a comment has a comma (see the module docs).
pub fn read_text(r: impl BufRead) -> Result<Vec<Point>> {
    read_text_t(r, coord)
}

fn read_text_t<T: Copy + Default>(mut r: impl BufRead, parse: Parse<T>) -> Result<Vec<[T; 3]>> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes)?;
    let first = bytes
        .split(|&b| b == b'\n')
        .map(|l| l.split(|&b| b == b'#').next().unwrap_or(&[]))
        .find(|l| !l.trim_ascii().is_empty())
        .unwrap_or(&[]);
    if first.contains(&b',') {
        read_csv_t(&bytes[..], parse)
    } else {
        read_xyz_t(&bytes[..], parse)
    }
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
