//! Writing generated inputs to files, so that the Python peer scripts
//! (`benches/peers.py`) run on exactly the inputs the Rust benches use.
//!
//! # Format (`TRIDENT-CASE 1`)
//! One ASCII header line, then raw little-endian arrays back to back:
//!
//! ```text
//! TRIDENT-CASE 1 <kind> key=value key=value ... arrays=name:dtype:count,name:dtype:count\n
//! <count * sizeof(dtype) bytes of array 1><array 2>...
//! ```
//!
//! `dtype` is one of `f32 f64 u32 u64 i64 u8`; `count` is in elements. Keys and
//! values contain no spaces. Kinds and their keys:
//!
//! | kind | keys | arrays |
//! | --- | --- | --- |
//! | `gemm` | `m n k op_a op_b alpha beta precision a_rows a_cols lda b_rows b_cols ldb c_rows c_cols ldc` (`op` is `N`/`T`, `precision` `Strict`/`Tf32`/`Tf32x3`) | `a b c` (row-major with leading dimension) |
//! | `spgemm` | `a_rows a_cols b_rows b_cols` | `a_offsets:u64 a_indices:u32 a_values b_offsets b_indices b_values` (CSR) |
//! | `points` | `knn_k pairs_k` | `a:f32:3*|A| b:f32:3*|B|` (xyz per point) |
//! | `omp` | `n atoms count rule` (`sparsity:T`, `error:EPS` or `both:T:EPS`) | `dict` (row-major n x atoms; columns are atoms), `signals` (row-major count x n) |
//! | `grid` | `depth height width three_d` | `source:i64 sink:i64 caps:i64` (planes `+x -x +y -y [+z -z]`, node `(z*h+y)*w+x`) |
//! | `network` | `nodes s t` (0-based) | `from:u32 to:u32 cap:i64` |
//!
//! Reading it in Python (numpy):
//!
//! ```text
//! with open(path, "rb") as f:
//!     head = f.readline().decode().split()
//!     meta = dict(kv.split("=", 1) for kv in head[3:])
//!     arrays = {}
//!     for spec in meta.pop("arrays").split(","):
//!         if not spec: continue
//!         name, dtype, count = spec.split(":")
//!         np_type = {"f32": "<f4", "f64": "<f8", "u32": "<u4", "u64": "<u8", "i64": "<i8", "u8": "u1"}[dtype]
//!         arrays[name] = np.fromfile(f, dtype=np_type, count=int(count))
//! ```
//!
//! Networks can also be written as DIMACS text ([`write_dimacs`]).
//!
//! # Why not `.npy` / `.mtx` / `.max`
//! A case is more than its arrays: a GEMM case carries `op_a op_b alpha beta
//! precision` and the leading dimensions of padded storage, an OMP case its
//! stopping rule, a points case both `k`s, a grid its source/sink terminal
//! capacities beside the plane-ordered edge capacities. Plain array or graph
//! formats would drop that (or need a side file per case), and the peers must
//! run on exactly the problem the Rust bench timed. So cases keep this one
//! self-describing file; the CLI reads and writes the standard formats for
//! users' own data.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use trident_core::{CsrMatrix, Error, FlowNetwork, GridGraph, Result, Scalar, StopRule};

use super::{GemmCase, Input, OmpCase, PairsCase, SpgemmCase};

/// The first word of every case file.
pub const MAGIC: &str = "TRIDENT-CASE";
/// The format version this module writes.
pub const VERSION: u32 = 1;

/// One array of a case file, as raw little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct RawArray {
    /// Array name, e.g. `"a_offsets"`.
    pub name: String,
    /// `f32`, `f64`, `u32`, `u64`, `i64` or `u8`.
    pub dtype: String,
    /// Number of elements.
    pub count: usize,
    /// `count * size_of(dtype)` bytes.
    pub bytes: Vec<u8>,
}

/// A case file read back: its kind, header keys and arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseFile {
    /// `gemm`, `spgemm`, `points`, `omp`, `grid` or `network`.
    pub kind: String,
    /// Header keys (without `arrays`).
    pub meta: BTreeMap<String, String>,
    /// Arrays in file order.
    pub arrays: Vec<RawArray>,
}

impl CaseFile {
    /// The array called `name`.
    pub fn array(&self, name: &str) -> Option<&RawArray> {
        self.arrays.iter().find(|a| a.name == name)
    }
}

trait Le: Copy {
    const DTYPE: &'static str;
    fn put(self, out: &mut Vec<u8>);
}
macro_rules! le {
    ($t:ty, $n:literal) => {
        impl Le for $t {
            const DTYPE: &'static str = $n;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
le!(f32, "f32");
le!(f64, "f64");
le!(u32, "u32");
le!(u64, "u64");
le!(i64, "i64");
le!(u8, "u8");

fn raw<T: Le>(name: &str, v: &[T]) -> RawArray {
    let mut bytes = Vec::with_capacity(std::mem::size_of_val(v));
    v.iter().for_each(|x| x.put(&mut bytes));
    RawArray {
        name: name.into(),
        dtype: T::DTYPE.into(),
        count: v.len(),
        bytes,
    }
}

fn raw_scalar<T: Scalar>(name: &str, v: &[T]) -> RawArray {
    if T::NAME == "f32" {
        raw(
            name,
            &v.iter().map(|x| x.to_f64() as f32).collect::<Vec<f32>>(),
        )
    } else {
        raw(name, &v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>())
    }
}

/// Writes a case file: header line with `kind` and `meta`, then `arrays`.
pub fn write_raw(
    path: &Path,
    kind: &str,
    meta: &[(&str, String)],
    arrays: &[RawArray],
) -> Result<()> {
    let mut f = BufWriter::new(File::create(path)?);
    write!(f, "{MAGIC} {VERSION} {kind}")?;
    for (k, v) in meta {
        if k.contains([' ', '=']) || v.contains([' ', '\n']) {
            return Err(Error::arg(
                "meta",
                format!("key {k:?} or value {v:?} has a space"),
            ));
        }
        write!(f, " {k}={v}")?;
    }
    let specs: Vec<String> = arrays
        .iter()
        .map(|a| format!("{}:{}:{}", a.name, a.dtype, a.count))
        .collect();
    writeln!(f, " arrays={}", specs.join(","))?;
    for a in arrays {
        f.write_all(&a.bytes)?;
    }
    f.flush()?;
    Ok(())
}

fn dtype_size(d: &str) -> Option<usize> {
    Some(match d {
        "u8" => 1,
        "f32" | "u32" => 4,
        "f64" | "u64" | "i64" => 8,
        _ => return None,
    })
}

/// Reads any case file back (for tests and Rust-side tools).
pub fn read_file(path: &Path) -> Result<CaseFile> {
    let mut r = BufReader::new(File::open(path)?);
    let mut head = String::new();
    r.read_line(&mut head)?;
    let perr = |d: String| Error::Parse { line: 1, detail: d };
    let mut words = head.split_whitespace();
    if words.next() != Some(MAGIC) {
        return Err(perr(format!("not a {MAGIC} file")));
    }
    if words.next() != Some("1") {
        return Err(perr("unsupported version".into()));
    }
    let kind = words
        .next()
        .ok_or_else(|| perr("missing kind".into()))?
        .to_string();
    let mut meta = BTreeMap::new();
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| perr(format!("bad key {w:?}")))?;
        meta.insert(k.to_string(), v.to_string());
    }
    let specs = meta
        .remove("arrays")
        .ok_or_else(|| perr("missing arrays=".into()))?;
    let mut arrays = Vec::new();
    for spec in specs.split(',').filter(|s| !s.is_empty()) {
        let parts: Vec<&str> = spec.split(':').collect();
        let [name, dtype, count] = parts[..] else {
            return Err(perr(format!("bad array spec {spec:?}")));
        };
        let size = dtype_size(dtype).ok_or_else(|| perr(format!("bad dtype {dtype:?}")))?;
        let count: usize = count
            .parse()
            .map_err(|_| perr(format!("bad count in {spec:?}")))?;
        let mut bytes = vec![0u8; count * size];
        r.read_exact(&mut bytes)?;
        arrays.push(RawArray {
            name: name.into(),
            dtype: dtype.into(),
            count,
            bytes,
        });
    }
    Ok(CaseFile { kind, meta, arrays })
}

/// Writes a GEMM case (kind `gemm`).
pub fn write_gemm<T: Scalar>(path: &Path, c: &GemmCase<T>) -> Result<()> {
    let p = &c.params;
    let meta = vec![
        ("dtype", T::NAME.to_string()),
        ("m", c.m.to_string()),
        ("n", c.n.to_string()),
        ("k", c.k.to_string()),
        ("op_a", format!("{:?}", p.op_a)),
        ("op_b", format!("{:?}", p.op_b)),
        ("alpha", format!("{:e}", p.alpha.to_f64())),
        ("beta", format!("{:e}", p.beta.to_f64())),
        ("precision", format!("{:?}", p.precision)),
        ("a_rows", c.a_shape.rows.to_string()),
        ("a_cols", c.a_shape.cols.to_string()),
        ("lda", c.a_shape.ld.to_string()),
        ("b_rows", c.b_shape.rows.to_string()),
        ("b_cols", c.b_shape.cols.to_string()),
        ("ldb", c.b_shape.ld.to_string()),
        ("c_rows", c.c_shape.rows.to_string()),
        ("c_cols", c.c_shape.cols.to_string()),
        ("ldc", c.c_shape.ld.to_string()),
    ];
    write_raw(
        path,
        "gemm",
        &meta,
        &[
            raw_scalar("a", &c.a),
            raw_scalar("b", &c.b),
            raw_scalar("c", &c.c),
        ],
    )
}

fn csr_arrays<T: Scalar>(prefix: &str, m: &CsrMatrix<T>) -> [RawArray; 3] {
    let off: Vec<u64> = m.offsets().iter().map(|&o| o as u64).collect();
    [
        raw(&format!("{prefix}_offsets"), &off),
        raw(&format!("{prefix}_indices"), m.indices()),
        raw_scalar(&format!("{prefix}_values"), m.values()),
    ]
}

/// Writes a SpGEMM case (kind `spgemm`).
pub fn write_spgemm<T: Scalar>(path: &Path, c: &SpgemmCase<T>) -> Result<()> {
    let meta = vec![
        ("dtype", T::NAME.to_string()),
        ("a_rows", c.a.rows().to_string()),
        ("a_cols", c.a.cols().to_string()),
        ("b_rows", c.b.rows().to_string()),
        ("b_cols", c.b.cols().to_string()),
    ];
    let mut arrays = csr_arrays("a", &c.a).to_vec();
    arrays.extend(csr_arrays("b", &c.b));
    write_raw(path, "spgemm", &meta, &arrays)
}

/// Writes a NearestPairs case (kind `points`).
pub fn write_points<T: trident_core::Coord>(path: &Path, c: &PairsCase<T>) -> Result<()> {
    let meta = vec![
        ("dtype", T::NAME.to_string()),
        ("knn_k", c.knn_k.to_string()),
        ("pairs_k", c.pairs_k.to_string()),
        ("radius", format!("{:e}", c.radius.to_f64())),
    ];
    let flat = |p: &[trident_core::Point<T>]| p.iter().flatten().copied().collect::<Vec<T>>();
    write_raw(
        path,
        "points",
        &meta,
        &[raw_scalar("a", &flat(&c.a)), raw_scalar("b", &flat(&c.b))],
    )
}

/// Writes an OMP case (kind `omp`).
pub fn write_omp<T: Scalar>(path: &Path, c: &OmpCase<T>) -> Result<()> {
    let rule = match c.rule {
        StopRule::Sparsity(t) => format!("sparsity:{t}"),
        StopRule::Error(e) => format!("error:{e:e}"),
        StopRule::SparsityOrError { sparsity, error } => format!("both:{sparsity}:{error:e}"),
        other => {
            return Err(Error::Unsupported(format!(
                "the case file format has no stop rule {other:?}"
            )));
        }
    };
    let meta = vec![
        ("dtype", T::NAME.to_string()),
        ("n", c.dict.n().to_string()),
        ("atoms", c.dict.atoms().to_string()),
        ("count", c.count.to_string()),
        ("rule", rule),
    ];
    write_raw(
        path,
        "omp",
        &meta,
        &[
            raw_scalar("dict", c.dict.data()),
            raw_scalar("signals", &c.signals),
        ],
    )
}

/// Writes a grid cut (kind `grid`).
pub fn write_grid(path: &Path, g: &GridGraph) -> Result<()> {
    let (d, h, w) = g.shape();
    let meta = vec![
        ("depth", d.to_string()),
        ("height", h.to_string()),
        ("width", w.to_string()),
        ("three_d", g.is_3d().to_string()),
    ];
    write_raw(
        path,
        "grid",
        &meta,
        &[
            raw("source", g.source()),
            raw("sink", g.sink()),
            raw("caps", g.caps()),
        ],
    )
}

/// Writes a general network (kind `network`).
pub fn write_network(path: &Path, g: &FlowNetwork) -> Result<()> {
    let meta = vec![
        ("nodes", g.nodes().to_string()),
        ("s", g.source().to_string()),
        ("t", g.sink().to_string()),
    ];
    let from: Vec<u32> = g.arcs().iter().map(|a| a.from).collect();
    let to: Vec<u32> = g.arcs().iter().map(|a| a.to).collect();
    let cap: Vec<i64> = g.arcs().iter().map(|a| a.cap).collect();
    write_raw(
        path,
        "network",
        &meta,
        &[raw("from", &from), raw("to", &to), raw("cap", &cap)],
    )
}

/// Writes a network as a DIMACS max-flow text file (1-based ids), which
/// PyMaxflow-style and DIMACS tools read directly.
pub fn write_dimacs(path: &Path, g: &FlowNetwork) -> Result<()> {
    let mut f = BufWriter::new(File::create(path)?);
    g.write_dimacs(&mut f)?;
    f.flush()?;
    Ok(())
}

/// Writes any generated input in the format of its kind ([`Input::write`]).
pub fn write_input(path: &Path, input: &Input) -> Result<()> {
    input.write(path)
}
