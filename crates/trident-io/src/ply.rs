//! PLY point clouds (<http://paulbourke.net/dataformats/ply/>): `ascii`,
//! `binary_little_endian` or `binary_big_endian`; the `x`, `y`, `z`
//! properties of the `vertex` element are read, other properties and
//! elements skipped (elements before `vertex` must have fixed-size rows in
//! binary files).
//!
//! ```
//! let pts = [[0.5f32, -1.0, 2.0], [3.0, 0.0, 1e-3]];
//! let mut bytes = Vec::new();
//! trident_io::ply::write_binary(&mut bytes, &pts).unwrap();
//! assert_eq!(trident_io::ply::read(&bytes).unwrap(), pts);
//! ```

use std::io::Write;

use trident_core::Point;

use crate::points::coord64;
use crate::text::Num;
use crate::{At, Error, Result};

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

/// The points of a PLY file: the `x`, `y`, `z` of each vertex, as f32
/// (a coordinate beyond f32's range is an error; [`read_any`] keeps f64).
pub fn read(bytes: &[u8]) -> Result<Vec<Point>> {
    read_t(bytes, |v| {
        let x = v as f32;
        x.is_finite().then_some(x)
    })
    .map(|(p, _)| p)
}

/// The points of a PLY file in the precision it declares: f64 when one of
/// `x`, `y`, `z` is a `double` (or an `int`/`uint` beyond what f32 holds
/// exactly), else f32.
pub fn read_any(bytes: &[u8]) -> Result<crate::points::Points> {
    use crate::points::Points;
    let (p, types) = read_t(bytes, Some)?;
    Ok(match types {
        t if t.contains(&"double") => Points::F64(p),
        t if t.contains(&"int") || t.contains(&"uint") => Points::narrowest(p),
        _ => Points::F32(p.iter().map(|q| q.map(|x| x as f32)).collect()),
    })
}

/// The reader, converting each coordinate read as f64 with `conv` (`None`:
/// not representable, an error at its place); with the declared types of
/// `x`, `y`, `z`.
fn read_t<T: Copy + Default>(
    bytes: &[u8],
    conv: fn(f64) -> Option<T>,
) -> Result<(Vec<[T; 3]>, [&'static str; 3])> {
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
    let hdr = |no: usize, m: String| Error::format(At::Line(no), m);
    match next_line(&mut pos) {
        Some((_, l)) if l == "ply" => {}
        _ => {
            return Err(hdr(
                1,
                "not a PLY file: expected the magic line `ply`".into(),
            ));
        }
    }
    let mut format: Option<(String, usize)> = None;
    let mut elements: Vec<Element> = Vec::new();
    let mut last = 1;
    let end_line = loop {
        let Some((no, l)) = next_line(&mut pos) else {
            return Err(hdr(last, "truncated header: no `end_header` line".into()));
        };
        last = no;
        let t: Vec<&str> = l.split_whitespace().collect();
        match t.first().copied() {
            Some("format") => {
                if t.len() != 3 || t[2] != "1.0" {
                    return Err(hdr(
                        no,
                        format!(
                            "expected `format ascii|binary_little_endian|binary_big_endian 1.0`, found {l:?}"
                        ),
                    ));
                }
                format = Some((t[1].to_string(), no));
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
            Some("end_header") => break no,
            Some(other) => return Err(hdr(no, format!("unknown header keyword {other:?}"))),
        }
    };
    let (format, format_line) =
        format.ok_or_else(|| hdr(end_line, "no `format` line in the header".into()))?;
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
    let types = [xi, yi, zi].map(|i| vert.props[i].1.map_or("list", |(t, _)| t));
    let body = &bytes[pos..];
    let pts = match format.as_str() {
        "ascii" => ascii(body, end_line, &elements, vi, [xi, yi, zi], conv),
        "binary_little_endian" => binary(body, pos, &elements, vi, [xi, yi, zi], false, conv),
        "binary_big_endian" => binary(body, pos, &elements, vi, [xi, yi, zi], true, conv),
        other => Err(hdr(
            format_line,
            format!(
                "format {other:?} is not read; expected ascii, binary_little_endian or binary_big_endian"
            ),
        )),
    }?;
    Ok((pts, types))
}

fn ascii<T: Copy + Default>(
    body: &[u8],
    end_line: usize,
    elements: &[Element],
    vi: usize,
    xyz: [usize; 3],
    conv: fn(f64) -> Option<T>,
) -> Result<Vec<[T; 3]>> {
    let text = String::from_utf8_lossy(body);
    let mut lines = text.lines().enumerate().map(|(i, l)| (end_line + 1 + i, l));
    let skip = elements[..vi]
        .iter()
        .fold(0u64, |s, e| s.saturating_add(e.count));
    for _ in 0..skip {
        if lines.next().is_none() {
            return Err(Error::format(
                At::End,
                "truncated: elements before `vertex` end early",
            ));
        }
    }
    let vert = &elements[vi];
    if vert.props.iter().any(|(_, t)| t.is_none()) {
        return Err(Error::format(
            At::Line(end_line),
            "list properties in `element vertex` are not read",
        ));
    }
    let mut pts = Vec::new();
    for k in 0..vert.count {
        let Some((no, l)) = lines.next() else {
            return Err(Error::format(
                At::Line(end_line + skip as usize + k as usize + 1),
                format!(
                    "truncated: the header declares {} vertices, the file ends after {k}",
                    vert.count
                ),
            ));
        };
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != vert.props.len() {
            return Err(Error::format(
                At::Line(no),
                format!(
                    "expected {} values for a vertex, found {}",
                    vert.props.len(),
                    f.len()
                ),
            ));
        }
        let mut p = [T::default(); 3];
        for (d, &i) in xyz.iter().enumerate() {
            let v = coord64(f[i]).map_err(|m| Error::format(At::Line(no), m))?;
            p[d] = conv(v).ok_or_else(|| {
                Error::format(At::Line(no), format!("coordinate {v} is not finite in f32"))
            })?;
        }
        pts.try_reserve(1)
            .map_err(|e| Error::format(At::Line(no), format!("out of memory: {e}")))?;
        pts.push(p);
    }
    Ok(pts)
}

fn binary<T: Copy + Default>(
    body: &[u8],
    body_off: usize,
    elements: &[Element],
    vi: usize,
    xyz: [usize; 3],
    big: bool,
    conv: fn(f64) -> Option<T>,
) -> Result<Vec<[T; 3]>> {
    let row_size = |e: &Element| -> Result<usize> {
        e.props
            .iter()
            .map(|(n, t)| {
                t.map(|(_, s)| s).ok_or_else(|| {
                    Error::format(
                        At::Header,
                        format!(
                            "list property {n:?} of element {:?} is not read in binary PLY before or in `vertex`",
                            e.name
                        ),
                    )
                })
            })
            .sum()
    };
    let mut off = 0u128;
    for e in &elements[..vi] {
        off = off.saturating_add((row_size(e)? as u128).saturating_mul(e.count as u128));
    }
    let vert = &elements[vi];
    let stride = row_size(vert)?;
    let need = (vert.count as u128 * stride as u128).saturating_add(off);
    if (body.len() as u128) < need {
        return Err(Error::format(
            At::Byte((body_off + body.len()) as u64),
            format!(
                "truncated: {} vertices of {stride} bytes from byte {} need {need} bytes, the file has {}",
                vert.count,
                body_off as u128 + off,
                body.len()
            ),
        ));
    }
    // `need` fits in the body, so every offset below does too.
    let off = off as usize;
    let mut starts = Vec::with_capacity(vert.props.len());
    let mut acc = 0usize;
    for (_, t) in &vert.props {
        starts.push(acc);
        acc += t.map_or(0, |(_, s)| s);
    }
    let mut pts = Vec::with_capacity(vert.count as usize);
    for k in 0..vert.count as usize {
        let row = off + k * stride;
        let mut p = [T::default(); 3];
        for (d, &i) in xyz.iter().enumerate() {
            let Some((ty, size)) = vert.props[i].1 else {
                continue;
            };
            let at = row + starts[i];
            let v = value(ty, &body[at..at + size], big);
            let x = conv(v).filter(|_| v.is_finite());
            let Some(x) = x else {
                let why = if v.is_finite() {
                    "beyond f32"
                } else {
                    "not finite"
                };
                return Err(Error::format(
                    At::Byte((body_off + at) as u64),
                    format!("vertex {k} coordinate {v} is {why}"),
                ));
            };
            p[d] = x;
        }
        pts.push(p);
    }
    Ok(pts)
}

/// One scalar of PLY type `ty` (`b` holds exactly its bytes) as f64.
fn value(ty: &str, b: &[u8], big: bool) -> f64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    macro_rules! num {
        ($t:ty, $n:literal) => {{
            let mut x = [0u8; $n];
            x.copy_from_slice(&a[..$n]);
            (if big {
                <$t>::from_be_bytes(x)
            } else {
                <$t>::from_le_bytes(x)
            }) as f64
        }};
    }
    match ty {
        "char" => num!(i8, 1),
        "uchar" => num!(u8, 1),
        "short" => num!(i16, 2),
        "ushort" => num!(u16, 2),
        "int" => num!(i32, 4),
        "uint" => num!(u32, 4),
        "float" => num!(f32, 4),
        _ => num!(f64, 8),
    }
}

fn header(w: &mut impl Write, format: &str, n: usize) -> std::io::Result<()> {
    write!(
        w,
        "ply\nformat {format} 1.0\ncomment written by trident-io\nelement vertex {n}\n\
         property float x\nproperty float y\nproperty float z\nend_header\n"
    )
}

/// Writes points as an `ascii` PLY (float `x y z` per vertex, shortest
/// decimals that read back to the same bits).
pub fn write_ascii(mut w: impl Write, pts: &[Point]) -> Result<()> {
    header(&mut w, "ascii", pts.len())?;
    for [x, y, z] in pts {
        writeln!(w, "{} {} {}", Num(*x), Num(*y), Num(*z))?;
    }
    w.flush()?;
    Ok(())
}

/// Writes points as a `binary_little_endian` PLY (float `x y z`).
pub fn write_binary(mut w: impl Write, pts: &[Point]) -> Result<()> {
    header(&mut w, "binary_little_endian", pts.len())?;
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in pts.chunks(4096) {
        buf.clear();
        for p in chunk {
            for c in p {
                buf.extend_from_slice(&c.to_le_bytes());
            }
        }
        w.write_all(&buf)?;
    }
    w.flush()?;
    Ok(())
}
