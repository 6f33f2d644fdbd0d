//! Results of nearest-neighbour queries as files Python reads, the format
//! chosen by the extension: CSV (`.csv`, one row per neighbour or pair, a
//! header naming the columns), NPY (`.npy`, the indices alone) or NPZ (`.npz`,
//! indices and distances as named arrays).
//!
//! Indices are 0-based and stored as int64, as `scipy.spatial.cKDTree.query`
//! returns them, so results compare with scipy's without a cast. Distances are
//! written in the caller's type (f32 or f64) under a name that says which
//! distance they are ([`Distance`]): squared (`d2`) or Euclidean (`distance`
//! in CSV, `distances` in NPZ).
//!
//! | result | CSV columns | NPY | NPZ members |
//! | --- | --- | --- | --- |
//! | nearest, `N` queries | `a,b,d2` | `indices` (`N`) | `indices` (`N`), `d2` (`N`) |
//! | `k` nearest | `a,rank,b,d2` | `indices` (`N x k`) | `indices` (`N x k`), `d2` (`N x k`) |
//! | `K` closest pairs | `a,b,d2` | `K x 2` (columns `a`, `b`) | `a` (`K`), `b` (`K`), `d2` (`K`) |
//! | `K` pairs within a radius, `N` rows | `a,b,d2` | `K x 2` (columns `a`, `b`) | `offsets` (`N + 1`), `a` (`K`), `b` (`K`), `d2` (`K`) |
//!
//! ```
//! use trident_io::neighbors::{self, Distance, Format};
//! let mut csv = Vec::new();
//! neighbors::write_knn(&mut csv, Format::Csv, 1, 2, &[4, 0], &[0.5f32, 2.0], Distance::Squared)
//!     .unwrap();
//! assert_eq!(String::from_utf8(csv).unwrap(), "a,rank,b,d2\n0,0,4,0.5\n0,1,0,2\n");
//! ```

use std::fmt::{Display, LowerExp};
use std::io::Write;

use crate::npy::{self, Element};
use crate::text::Num;
use crate::{Result, npz};

/// A file format for neighbour results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.csv`: a header line, then one line per neighbour or pair.
    Csv,
    /// `.npy`: the indices alone, int64.
    Npy,
    /// `.npz`: the indices and the distances, see the module docs.
    Npz,
}

impl Format {
    /// The format of a lower-case extension (`"npz"`), `None` if unknown.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext {
            "csv" => Some(Format::Csv),
            "npy" => Some(Format::Npy),
            "npz" => Some(Format::Npz),
            _ => None,
        }
    }
}

/// Which distance the values are; it names the CSV column and NPZ member, so
/// a file never leaves its reader guessing whether to take a square root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    /// Squared Euclidean distances: column and member `d2`.
    Squared,
    /// Euclidean distances, as `cKDTree.query` gives them: column
    /// `distance`, member `distances`.
    Euclidean,
}

impl Distance {
    /// The CSV column: `d2` or `distance`.
    pub fn column(self) -> &'static str {
        match self {
            Distance::Squared => "d2",
            Distance::Euclidean => "distance",
        }
    }

    /// The NPZ member: `d2` or `distances`.
    pub fn member(self) -> &'static str {
        match self {
            Distance::Squared => "d2",
            Distance::Euclidean => "distances",
        }
    }
}

/// A distance value the writers store: `f32` or `f64`.
pub trait Value: Element + Into<f64> + Display + LowerExp {}
impl Value for f32 {}
impl Value for f64 {}

/// `Err` unless the slices have the lengths the shape needs.
fn check(what: &'static str, want: usize, lens: &[usize]) -> Result<()> {
    if lens.iter().any(|&n| n != want) {
        return Err(trident_core::Error::dim(
            what,
            format!("lengths {lens:?}; expected {want} each"),
        )
        .into());
    }
    Ok(())
}

fn int64(v: &[u32]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

/// Writes the nearest neighbour of each of `indices.len()` queries: query `i`
/// has neighbour `indices[i]` at `distances[i]`.
pub fn write_nearest<D: Value>(
    mut w: impl Write,
    format: Format,
    indices: &[u32],
    distances: &[D],
    kind: Distance,
) -> Result<()> {
    let n = indices.len();
    check("distances", n, &[distances.len()])?;
    match format {
        Format::Csv => {
            writeln!(w, "a,b,{}", kind.column())?;
            for (i, (b, d)) in indices.iter().zip(distances).enumerate() {
                writeln!(w, "{i},{b},{}", Num(*d))?;
            }
        }
        Format::Npy => npy::write(&mut w, &[n as u64], &int64(indices))?,
        Format::Npz => npz::write(
            &mut w,
            &[
                ("indices".into(), npy::encode(&[n as u64], &int64(indices))?),
                (kind.member().into(), npy::encode(&[n as u64], distances)?),
            ],
        )?,
    }
    w.flush()?;
    Ok(())
}

/// Writes the `k` nearest neighbours of each of `rows` queries, row-major:
/// query `i`'s rank-`r` neighbour is `indices[i * k + r]`.
pub fn write_knn<D: Value>(
    mut w: impl Write,
    format: Format,
    rows: usize,
    k: usize,
    indices: &[u32],
    distances: &[D],
    kind: Distance,
) -> Result<()> {
    let n = rows.checked_mul(k).ok_or_else(|| {
        trident_core::Error::dim("rows", format!("{rows} x {k} neighbours overflow"))
    })?;
    check("indices, distances", n, &[indices.len(), distances.len()])?;
    let shape = [rows as u64, k as u64];
    match format {
        Format::Csv => {
            writeln!(w, "a,rank,b,{}", kind.column())?;
            for (p, (b, d)) in indices.iter().zip(distances).enumerate() {
                writeln!(w, "{},{},{b},{}", p / k, p % k, Num(*d))?;
            }
        }
        Format::Npy => npy::write(&mut w, &shape, &int64(indices))?,
        Format::Npz => npz::write(
            &mut w,
            &[
                ("indices".into(), npy::encode(&shape, &int64(indices))?),
                (kind.member().into(), npy::encode(&shape, distances)?),
            ],
        )?,
    }
    w.flush()?;
    Ok(())
}

/// Writes closest pairs: pair `p` is query `a[p]` with neighbour `b[p]` at
/// `distances[p]`.
pub fn write_pairs<D: Value>(
    mut w: impl Write,
    format: Format,
    a: &[u32],
    b: &[u32],
    distances: &[D],
    kind: Distance,
) -> Result<()> {
    let n = a.len();
    check("b, distances", n, &[b.len(), distances.len()])?;
    match format {
        Format::Csv => {
            writeln!(w, "a,b,{}", kind.column())?;
            for ((a, b), d) in a.iter().zip(b).zip(distances) {
                writeln!(w, "{a},{b},{}", Num(*d))?;
            }
        }
        Format::Npy => {
            let ab: Vec<i64> = a
                .iter()
                .zip(b)
                .flat_map(|(&a, &b)| [i64::from(a), i64::from(b)])
                .collect();
            npy::write(&mut w, &[n as u64, 2], &ab)?;
        }
        Format::Npz => npz::write(
            &mut w,
            &[
                ("a".into(), npy::encode(&[n as u64], &int64(a))?),
                ("b".into(), npy::encode(&[n as u64], &int64(b))?),
                (kind.member().into(), npy::encode(&[n as u64], distances)?),
            ],
        )?,
    }
    w.flush()?;
    Ok(())
}

/// Writes the pairs of a radius search in CSR form: row `i` (a query, or a
/// point of the one set for self pairs) holds the indices from `offsets[i]`
/// up to `offsets[i + 1]`, with `distances` at the same places. CSV and NPY
/// list the pairs as closest pairs are listed ([`write_pairs`]); NPZ adds
/// `offsets` (int64), scipy's CSR `indptr` for the rows of `b`.
pub fn write_radius<D: Value>(
    mut w: impl Write,
    format: Format,
    offsets: &[usize],
    indices: &[u32],
    distances: &[D],
    kind: Distance,
) -> Result<()> {
    let k = indices.len();
    check("distances", k, &[distances.len()])?;
    if offsets.first() != Some(&0)
        || offsets.last() != Some(&k)
        || offsets.windows(2).any(|p| p[0] > p[1])
    {
        return Err(crate::Error::format(
            crate::At::Header,
            format!("offsets must rise from 0 to the {k} pairs"),
        ));
    }
    let rows = offsets.len() - 1;
    let a: Vec<u32> = (0..rows)
        .flat_map(|i| std::iter::repeat_n(i as u32, offsets[i + 1] - offsets[i]))
        .collect();
    match format {
        Format::Csv | Format::Npy => write_pairs(w, format, &a, indices, distances, kind),
        Format::Npz => {
            let off: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
            npz::write(
                &mut w,
                &[
                    ("offsets".into(), npy::encode(&[off.len() as u64], &off)?),
                    ("a".into(), npy::encode(&[k as u64], &int64(&a))?),
                    ("b".into(), npy::encode(&[k as u64], &int64(indices))?),
                    (kind.member().into(), npy::encode(&[k as u64], distances)?),
                ],
            )?;
            w.flush()?;
            Ok(())
        }
    }
}
