//! Point clouds (N x 3) from `.npy`, `.ply` (ascii or binary_little_endian,
//! the `x y z` properties of the `vertex` element) or `.csv` (`x,y,z` per line,
//! an optional header line, `#` comments).

use std::io::BufRead;
use std::path::Path;

use trident::Point;

use crate::fail::{CliResult, bad_file};
use crate::progress::Progress;

/// Reads the points of `path`, chosen by its extension.
pub fn read(path: &Path, progress: &Progress) -> CliResult<Vec<Point>> {
    match super::extension(path).as_str() {
        "npy" => from_npy(path, progress),
        "ply" => read_ply(path, progress),
        "csv" | "txt" | "xyz" => read_csv(path, progress),
        other => Err(bad_file(
            path,
            "name",
            format!("unknown point format {other:?}; expected .npy (N x 3), .ply or .csv"),
        )),
    }
}

fn from_npy(path: &Path, progress: &Progress) -> CliResult<Vec<Point>> {
    let m = super::npy::read_matrix(path, progress)?;
    if m.cols != 3 {
        return Err(bad_file(
            path,
            "header",
            format!("shape {} x {}: expected N x 3 points", m.rows, m.cols),
        ));
    }
    let v = m.to_f32();
    check_f32(path, &m.to_f64(), "byte")?;
    Ok(v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

/// A float64 coordinate beyond f32's range would become infinite.
fn check_f32(path: &Path, v: &[f64], _unit: &str) -> CliResult<()> {
    if let Some(k) = v.iter().position(|&x| !(x as f32).is_finite()) {
        return Err(bad_file(
            path,
            format!("point {}", k / 3),
            format!("coordinate {} does not fit f32", v[k]),
        ));
    }
    Ok(())
}

/// Parses one coordinate; non-finite values are rejected.
fn coord(s: &str) -> Result<f32, String> {
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

/// `x,y,z` lines. A first line that does not parse as numbers is a header.
pub fn read_csv(path: &Path, progress: &Progress) -> CliResult<Vec<Point>> {
    let (reader, pb) = super::open(path, progress)?;
    let mut pts = Vec::new();
    let mut first = true;
    for (no, line) in reader.lines().enumerate() {
        let no = no + 1;
        let line =
            line.map_err(|e| bad_file(path, format!("line {no}"), format!("cannot read: {e}")))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = t.split(',').collect();
        let was_first = std::mem::replace(&mut first, false);
        if was_first && f.iter().any(|x| x.trim().parse::<f64>().is_err()) {
            continue; // header
        }
        if f.len() != 3 {
            return Err(bad_file(
                path,
                format!("line {no}"),
                format!("expected `x,y,z` (3 fields), found {} in {t:?}", f.len()),
            ));
        }
        let mut p = [0f32; 3];
        for (d, s) in f.iter().enumerate() {
            p[d] = coord(s).map_err(|m| bad_file(path, format!("line {no}"), m))?;
        }
        pts.try_reserve(1)
            .map_err(|e| bad_file(path, format!("line {no}"), format!("out of memory: {e}")))?;
        pts.push(p);
    }
    pb.finish_and_clear();
    Ok(pts)
}

/// Scalar types of PLY properties: (names, bytes).
const PLY_TYPES: [(&str, &str, usize); 8] = [
    ("char", "int8", 1),
    ("uchar", "uint8", 1),
    ("short", "int16", 2),
    ("ushort", "uint16", 2),
    ("int", "int32", 4),
    ("uint", "uint32", 4),
    ("float", "float32", 4),
    ("double", "float64", 8),
];

fn ply_type(name: &str) -> Option<(&'static str, usize)> {
    PLY_TYPES
        .iter()
        .find(|(a, b, _)| *a == name || *b == name)
        .map(|&(a, _, n)| (a, n))
}

struct Element {
    name: String,
    count: u64,
    /// (property name, canonical type, bytes); `None` type for list properties.
    props: Vec<(String, Option<(&'static str, usize)>)>,
}

/// PLY, `ascii` or `binary_little_endian`: the `x`, `y`, `z` of each vertex.
/// Elements before `vertex` are skipped (fixed-size ones only, in binary).
pub fn read_ply(path: &Path, progress: &Progress) -> CliResult<Vec<Point>> {
    let bytes = super::read_all(path, progress)?;
    // The header is text up to and including the `end_header` line.
    let mut pos = 0usize;
    let mut line_no = 0usize;
    let mut next_line = |pos: &mut usize| -> Option<(usize, String)> {
        if *pos >= bytes.len() {
            return None;
        }
        let end = bytes[*pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |e| *pos + e);
        let s = String::from_utf8_lossy(&bytes[*pos..end])
            .trim_end_matches('\r')
            .to_string();
        *pos = (end + 1).min(bytes.len());
        line_no += 1;
        Some((line_no, s))
    };
    let hdr = |no: usize, m: String| bad_file(path, format!("line {no}"), m);
    match next_line(&mut pos) {
        Some((_, l)) if l == "ply" => {}
        _ => {
            return Err(hdr(
                1,
                "not a PLY file: expected the magic line `ply`".into(),
            ));
        }
    }
    let mut format: Option<String> = None;
    let mut elements: Vec<Element> = Vec::new();
    let end_line;
    loop {
        let Some((no, l)) = next_line(&mut pos) else {
            return Err(hdr(
                line_no,
                "truncated header: no `end_header` line".into(),
            ));
        };
        let t: Vec<&str> = l.split_whitespace().collect();
        match t.first().copied() {
            Some("format") => {
                if t.len() != 3 || t[2] != "1.0" {
                    return Err(hdr(
                        no,
                        format!("expected `format ascii|binary_little_endian 1.0`, found {l:?}"),
                    ));
                }
                format = Some(t[1].to_string());
            }
            Some("comment") | Some("obj_info") | None => {}
            Some("element") => {
                let count = t
                    .get(2)
                    .and_then(|c| c.parse::<u64>().ok())
                    .filter(|_| t.len() == 3);
                let Some(count) = count else {
                    return Err(hdr(
                        no,
                        format!("expected `element NAME COUNT`, found {l:?}"),
                    ));
                };
                elements.push(Element {
                    name: t[1].to_string(),
                    count,
                    props: Vec::new(),
                });
            }
            Some("property") => {
                let Some(el) = elements.last_mut() else {
                    return Err(hdr(no, "property before any element".into()));
                };
                if t.get(1) == Some(&"list") {
                    if t.len() != 5 || ply_type(t[2]).is_none() || ply_type(t[3]).is_none() {
                        return Err(hdr(
                            no,
                            format!(
                                "expected `property list COUNT_TYPE ITEM_TYPE NAME`, found {l:?}"
                            ),
                        ));
                    }
                    el.props.push((t[4].to_string(), None));
                } else {
                    let ty = t.get(1).and_then(|x| ply_type(x)).filter(|_| t.len() == 3);
                    let Some(ty) = ty else {
                        return Err(hdr(
                            no,
                            format!(
                                "expected `property TYPE NAME` with TYPE one of char uchar short ushort int uint float double, found {l:?}"
                            ),
                        ));
                    };
                    el.props.push((t[2].to_string(), Some(ty)));
                }
            }
            Some("end_header") => {
                end_line = no;
                break;
            }
            Some(other) => return Err(hdr(no, format!("unknown header keyword {other:?}"))),
        }
    }
    let format = format.ok_or_else(|| hdr(end_line, "no `format` line in the header".into()))?;
    let vi = elements
        .iter()
        .position(|e| e.name == "vertex")
        .ok_or_else(|| hdr(end_line, "no `element vertex` in the header".into()))?;
    let vert = &elements[vi];
    let axis = |n: &str| vert.props.iter().position(|(p, _)| p == n);
    let (Some(xi), Some(yi), Some(zi)) = (axis("x"), axis("y"), axis("z")) else {
        return Err(hdr(
            end_line,
            "the vertex element lacks one of the properties x, y, z".into(),
        ));
    };
    if vert.count > u32::MAX as u64 {
        return Err(hdr(
            end_line,
            format!("{} vertices exceed the limit {}", vert.count, u32::MAX),
        ));
    }
    let body = &bytes[pos..];
    match format.as_str() {
        "ascii" => ply_ascii(path, body, end_line, &elements, vi, [xi, yi, zi]),
        "binary_little_endian" => ply_binary(path, body, pos, &elements, vi, [xi, yi, zi]),
        other => Err(hdr(
            1,
            format!("format {other:?} is not read; expected ascii or binary_little_endian"),
        )),
    }
}

fn ply_ascii(
    path: &Path,
    body: &[u8],
    end_line: usize,
    elements: &[Element],
    vi: usize,
    xyz: [usize; 3],
) -> CliResult<Vec<Point>> {
    let text = String::from_utf8_lossy(body);
    let mut lines = text.lines().enumerate().map(|(i, l)| (end_line + 1 + i, l));
    let skip: u64 = elements[..vi].iter().map(|e| e.count).sum();
    for _ in 0..skip {
        if lines.next().is_none() {
            return Err(bad_file(
                path,
                "end",
                "truncated: elements before `vertex` end early",
            ));
        }
    }
    let vert = &elements[vi];
    let mut pts = Vec::new();
    pts.try_reserve((vert.count as usize).min(super::RESERVE_CAP))
        .map_err(|e| bad_file(path, "header", format!("out of memory: {e}")))?;
    for k in 0..vert.count {
        let Some((no, l)) = lines.next() else {
            return Err(bad_file(
                path,
                format!("line {}", end_line + skip as usize + k as usize + 1),
                format!(
                    "truncated: the header declares {} vertices, the file ends after {k}",
                    vert.count
                ),
            ));
        };
        let f: Vec<&str> = l.split_whitespace().collect();
        if vert.props.iter().any(|(_, t)| t.is_none()) || f.len() != vert.props.len() {
            return Err(bad_file(
                path,
                format!("line {no}"),
                format!(
                    "expected {} values for a vertex, found {}",
                    vert.props.len(),
                    f.len()
                ),
            ));
        }
        let mut p = [0f32; 3];
        for (d, &i) in xyz.iter().enumerate() {
            p[d] = coord(f[i]).map_err(|m| bad_file(path, format!("line {no}"), m))?;
        }
        pts.push(p);
    }
    Ok(pts)
}

fn ply_binary(
    path: &Path,
    body: &[u8],
    body_off: usize,
    elements: &[Element],
    vi: usize,
    xyz: [usize; 3],
) -> CliResult<Vec<Point>> {
    let mut off = 0usize;
    let row_size = |e: &Element| -> CliResult<usize> {
        e.props
            .iter()
            .map(|(n, t)| {
                t.map(|(_, s)| s).ok_or_else(|| {
                    bad_file(path, "header", format!("list property {n:?} of element {:?} is not read in binary PLY before or in `vertex`", e.name))
                })
            })
            .sum()
    };
    for e in &elements[..vi] {
        let size = (row_size(e)? as u64).saturating_mul(e.count);
        off = off.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
    }
    let vert = &elements[vi];
    let stride = row_size(vert)?;
    let need = (vert.count as u128) * stride as u128 + off as u128;
    if (body.len() as u128) < need {
        return Err(bad_file(
            path,
            format!("byte {}", body_off + body.len()),
            format!(
                "truncated: {} vertices of {stride} bytes from byte {} need {need} bytes, the file has {}",
                vert.count,
                body_off + off,
                body.len()
            ),
        ));
    }
    let mut starts = Vec::with_capacity(vert.props.len());
    let mut acc = 0usize;
    for (_, t) in &vert.props {
        starts.push(acc);
        acc += t.map_or(0, |(_, s)| s);
    }
    let mut pts = Vec::with_capacity(vert.count as usize);
    for k in 0..vert.count as usize {
        let row = off + k * stride;
        let mut p = [0f32; 3];
        for (d, &i) in xyz.iter().enumerate() {
            let at = row + starts[i];
            let Some((ty, size)) = vert.props[i].1 else {
                continue;
            };
            let b = &body[at..at + size];
            let v = le_value(ty, b);
            let x = v as f32;
            if !x.is_finite() {
                return Err(bad_file(
                    path,
                    format!("byte {}", body_off + at),
                    format!("vertex {k} coordinate {v} is not a finite f32"),
                ));
            }
            p[d] = x;
        }
        pts.push(p);
    }
    Ok(pts)
}

/// One little-endian scalar of PLY type `ty` as f64.
fn le_value(ty: &str, b: &[u8]) -> f64 {
    let a = |n: usize| -> [u8; 8] {
        let mut x = [0u8; 8];
        x[..n].copy_from_slice(&b[..n]);
        x
    };
    match ty {
        "char" => b[0] as i8 as f64,
        "uchar" => b[0] as f64,
        "short" => i16::from_le_bytes([b[0], b[1]]) as f64,
        "ushort" => u16::from_le_bytes([b[0], b[1]]) as f64,
        "int" => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        "uint" => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        "float" => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        _ => f64::from_le_bytes(a(8)),
    }
}
