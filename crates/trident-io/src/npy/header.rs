//! The NPY header: a Python dict literal (`descr`, `fortran_order`,
//! `shape`) after the magic, version and length, parsed without recursion
//! and with every number checked; and the header the writer puts first.

use super::Dtype;
use crate::{At, Error, Result};

/// What the header of a file says.
pub(super) struct Header {
    pub(super) descr: String,
    pub(super) fortran: bool,
    pub(super) shape: Vec<u64>,
    /// Offset of the first data byte.
    pub(super) data_off: usize,
}

const BAD_HEADER: &str =
    "not a valid .npy header (expected the \\x93NUMPY magic, a version and a dict)";

/// The header of the file `bytes`.
pub(super) fn header(bytes: &[u8]) -> Result<Header> {
    let bad =
        |at: usize, m: String| Error::format(At::Byte(at as u64), format!("{BAD_HEADER}: {m}"));
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        let head = &bytes[..bytes.len().min(8)];
        return Err(bad(0, format!("the file starts with {head:?}")));
    }
    let (len, text_off) = match (bytes[6], bytes[7]) {
        (1, 0) => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        (2, 0) | (3, 0) => {
            let Some(&[a, b, c, d]) = bytes.get(8..12) else {
                return Err(bad(8, "truncated before the header length".into()));
            };
            (u32::from_le_bytes([a, b, c, d]) as usize, 12)
        }
        (major, minor) => {
            return Err(bad(
                6,
                format!("version {major}.{minor}; expected 1.0, 2.0 or 3.0"),
            ));
        }
    };
    let end = text_off + len;
    if end > bytes.len() {
        return Err(bad(
            8,
            format!(
                "truncated: the header declares {len} bytes, the file has {} after byte {text_off}",
                bytes.len() - text_off
            ),
        ));
    }
    let text = std::str::from_utf8(&bytes[text_off..end]).map_err(|e| {
        bad(
            text_off + e.valid_up_to(),
            "the dict is not UTF-8 text".into(),
        )
    })?;
    let dict = dict(text).map_err(|(at, m)| bad(text_off + at, m))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (k, v) in dict {
        match (k.as_str(), v) {
            ("descr", Value::Str(s)) => descr = Some(s),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            ("descr" | "fortran_order" | "shape", v) => {
                return Err(Error::format(
                    At::Header,
                    format!(
                        "{BAD_HEADER}: '{k}' is {v:?}; expected a string for 'descr', True/False for 'fortran_order', a tuple of integers for 'shape'"
                    ),
                ));
            }
            _ => {}
        }
    }
    let missing = |k: &str| Error::format(At::Header, format!("{BAD_HEADER}: no '{k}' key"));
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
        data_off: end,
    })
}

/// A value of the header dict.
#[derive(Debug)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// The header dict: `{'key': value, ...}` with string, boolean or integer
/// tuple values; errors carry the byte offset in `text`.
fn dict(text: &str) -> std::result::Result<Vec<(String, Value)>, (usize, String)> {
    let s = text.as_bytes();
    let mut i = 0usize;
    let ws = |i: &mut usize| {
        while *i < s.len() && s[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let expect = |i: &mut usize, c: u8| {
        ws(i);
        if s.get(*i) == Some(&c) {
            *i += 1;
            Ok(())
        } else {
            Err((
                *i,
                format!("expected {:?}, found {}", c as char, found(s, *i)),
            ))
        }
    };
    expect(&mut i, b'{')?;
    let mut out = Vec::new();
    loop {
        ws(&mut i);
        if s.get(i) == Some(&b'}') {
            i += 1;
            break;
        }
        let key = string(s, &mut i)?;
        expect(&mut i, b':')?;
        ws(&mut i);
        let v = match s.get(i) {
            Some(b'\'' | b'"') => Value::Str(string(s, &mut i)?),
            Some(b'T') if s[i..].starts_with(b"True") => {
                i += 4;
                Value::Bool(true)
            }
            Some(b'F') if s[i..].starts_with(b"False") => {
                i += 5;
                Value::Bool(false)
            }
            Some(&open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                i += 1;
                let mut dims = Vec::new();
                loop {
                    ws(&mut i);
                    if s.get(i) == Some(&close) {
                        i += 1;
                        break;
                    }
                    if let Some(b'(' | b'[' | b'\'' | b'"') = s.get(i) {
                        return Err((
                            i,
                            "a list of fields, not dimensions: record dtypes are not read"
                                .to_string(),
                        ));
                    }
                    dims.push(int(s, &mut i)?);
                    ws(&mut i);
                    if s.get(i) == Some(&b',') {
                        i += 1;
                        continue;
                    }
                    expect(&mut i, close)?;
                    break;
                }
                Value::Tuple(dims)
            }
            _ => {
                return Err((
                    i,
                    format!(
                        "expected a string, True, False or a tuple of integers, found {} (record dtypes are not read)",
                        found(s, i)
                    ),
                ));
            }
        };
        out.push((key, v));
        ws(&mut i);
        if s.get(i) == Some(&b',') {
            i += 1;
            continue;
        }
        expect(&mut i, b'}')?;
        break;
    }
    ws(&mut i);
    if i < s.len() {
        return Err((i, format!("{} after the dict", found(s, i))));
    }
    Ok(out)
}

/// A quoted string starting at `s[*i]`; a backslash takes the next byte as is.
fn string(s: &[u8], i: &mut usize) -> std::result::Result<String, (usize, String)> {
    let start = *i;
    let q = match s.get(*i) {
        Some(&q @ (b'\'' | b'"')) => q,
        _ => {
            return Err((
                *i,
                format!("expected a quoted string, found {}", found(s, *i)),
            ));
        }
    };
    *i += 1;
    let mut out = Vec::new();
    loop {
        match s.get(*i) {
            None => return Err((start, "unterminated string".into())),
            Some(&c) if c == q => {
                *i += 1;
                break;
            }
            Some(b'\\') if *i + 1 < s.len() => {
                out.push(s[*i + 1]);
                *i += 2;
            }
            Some(&c) => {
                out.push(c);
                *i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A non-negative integer (Python 2's `L` suffix allowed) that fits `u64`.
fn int(s: &[u8], i: &mut usize) -> std::result::Result<u64, (usize, String)> {
    let start = *i;
    let mut v: u64 = 0;
    while let Some(&c) = s.get(*i).filter(|c| c.is_ascii_digit()) {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as u64))
            .ok_or((start, "a dimension larger than 2^64 - 1".to_string()))?;
        *i += 1;
    }
    if *i == start {
        return Err((
            start,
            format!(
                "expected a dimension (an integer >= 0), found {}",
                found(s, start)
            ),
        ));
    }
    if matches!(s.get(*i), Some(b'L' | b'l')) {
        *i += 1;
    }
    Ok(v)
}

/// The text at `i`, for messages.
fn found(s: &[u8], i: usize) -> String {
    match s.get(i..) {
        Some(rest) if !rest.is_empty() => {
            format!("{:?}", String::from_utf8_lossy(&rest[..rest.len().min(16)]))
        }
        _ => "the end of the header".into(),
    }
}

/// The header bytes of a C-order array of `dtype` and `shape` (version 1.0
/// where the dict fits 64 KiB, else 2.0), padded so the data starts at a
/// multiple of 64 bytes as numpy writes it.
pub(super) fn header_bytes(dtype: Dtype, shape: &[u64]) -> Vec<u8> {
    header_with_descr(&dtype.descr(), shape)
}

/// [`header_bytes`] for any `descr`, e.g. `'|u1'`, which [`Dtype`] lacks.
pub(super) fn header_with_descr(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let padded = |pre: usize| dict.len() + 1 + (64 - (pre + dict.len() + 1) % 64) % 64;
    let v1 = padded(10) <= u16::MAX as usize;
    let pre = if v1 { 10 } else { 12 };
    let len = padded(pre);
    let pad = len - dict.len() - 1;
    let mut out = Vec::with_capacity(pre + len);
    out.extend_from_slice(b"\x93NUMPY");
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + pad, b' ');
    out.push(b'\n');
    out
}
