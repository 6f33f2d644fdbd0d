//! The user's own files as bench cases, one per file (or pair of files), read
//! with the same readers and errors as the primitive's own subcommand:
//!
//! | flag | primitive | the call timed |
//! | --- | --- | --- |
//! | `--mtx A.mtx` | sparse_gemm | `A A` if A is square, else `A A^T` |
//! | `--npy A.npy` | dense_gemm | `A A` if A is square, else `A A^T` (f32 or f64 as stored) |
//! | `--points A[,B]` | nearest_pairs | nearest, 8 nearest and the 100 closest pairs from A into B (B = A if absent) |
//! | `--omp D.npy,X.npy` | sparse_coder | the signals X (L x n) over the dictionary D (n x K), `--omp-sparsity` atoms |
//! | `--dimacs G.max` | max_flow | the network's flow, cut and arc flows |
//! | `--image I` | max_flow | the grid `trident segment I` cuts (no seeds, 4- or 6-connected) |

use std::path::{Path, PathBuf};

use trident::{CsrMatrix, Dictionary, FlowNetwork, GemmParams, Op, Scalar, StopRule};
use trident_testkit::cases::{GemmCase, Input, OmpCase, PairsCase, Shape, SpgemmCase};

use crate::fail::{CliResult, Fail};
use crate::io;
use crate::progress::Progress;

/// What a max-flow solve needs per node at least (labels, excess, the
/// residual graph's offsets): a declared size beyond memory is refused first.
const DIMACS_BYTES_PER_NODE: usize = 64;

/// The file flags of `trident bench`.
#[derive(clap::Args, Debug, Default)]
pub struct FileArgs {
    /// A Matrix Market file: times C = A A (A A^T if A is not square).
    #[arg(long, value_name = "FILE")]
    pub mtx: Vec<PathBuf>,
    /// A float32/float64 .npy matrix: times C = A A (A A^T if A is not square).
    #[arg(long, value_name = "FILE")]
    pub npy: Vec<PathBuf>,
    /// Point sets (.npy N x 3, .ply, .csv, .xyz) as `A,B`: times nearest
    /// pairs from A into B (into A itself if given alone).
    #[arg(long, value_name = "A[,B]", value_parser = paths::<1, 2>)]
    pub points: Vec<Vec<PathBuf>>,
    /// A dictionary (n x K .npy, unit-norm columns) and signals (L x n .npy)
    /// as `DICT,SIGNALS`: times Batch-OMP.
    #[arg(long, value_name = "DICT,SIGNALS", value_parser = paths::<2, 2>)]
    pub omp: Vec<Vec<PathBuf>>,
    /// Atoms per signal of the --omp cases.
    #[arg(long, default_value_t = 8)]
    pub omp_sparsity: usize,
    /// A DIMACS max-flow file: times the network's max flow.
    #[arg(long, value_name = "FILE")]
    pub dimacs: Vec<PathBuf>,
    /// An image (PNG, JPEG) or an .npy image or volume: times the graph cut of
    /// `trident segment` with its defaults.
    #[arg(long, value_name = "FILE")]
    pub image: Vec<PathBuf>,
}

/// `A,B`: from `MIN` to `MAX` comma-separated paths.
fn paths<const MIN: usize, const MAX: usize>(s: &str) -> Result<Vec<PathBuf>, String> {
    let v: Vec<PathBuf> = s.split(',').map(PathBuf::from).collect();
    if v.len() < MIN || v.len() > MAX || v.iter().any(|p| p.as_os_str().is_empty()) {
        return Err(if MIN == MAX {
            format!("expected {MIN} comma-separated files")
        } else {
            format!("expected {MIN} to {MAX} comma-separated files")
        });
    }
    Ok(v)
}

impl FileArgs {
    /// `true` when no file was given.
    pub fn is_empty(&self) -> bool {
        self.mtx.is_empty()
            && self.npy.is_empty()
            && self.points.is_empty()
            && self.omp.is_empty()
            && self.dimacs.is_empty()
            && self.image.is_empty()
    }
}

/// A case's name: `FLAG:FILE NAME` (the file name without its folder).
fn name(flag: &str, paths: &[&Path]) -> String {
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    format!("{flag}:{}", names.join("+"))
}

/// Every file case, in flag order, read and checked.
pub fn cases(args: &FileArgs, progress: &Progress) -> CliResult<Vec<(String, Input)>> {
    let mut out = Vec::new();
    for p in &args.mtx {
        let a = io::read_mtx::<f64>(p, progress)?;
        let b = if a.rows() == a.cols() {
            a.clone()
        } else {
            transpose(&a).map_err(|e| Fail::from_lib(&p.display().to_string(), e))?
        };
        out.push((name("mtx", &[p]), Input::new(SpgemmCase { a, b })));
    }
    for p in &args.npy {
        let m = io::read_npy_matrix(p, progress)?;
        let input = if m.is_f64() {
            Input::new(gemm_case(m.rows, m.cols, m.to_f64()))
        } else {
            Input::new(gemm_case(m.rows, m.cols, m.to_f32()))
        };
        out.push((name("npy", &[p]), input));
    }
    for set in &args.points {
        let a = io::read_points(&set[0], progress)?;
        let b = match set.get(1) {
            Some(p) => io::read_points(p, progress)?,
            None => a.clone(),
        };
        let refs: Vec<&Path> = set.iter().map(PathBuf::as_path).collect();
        let knn_k = 8.min(b.len());
        out.push((
            name("points", &refs),
            Input::new(PairsCase::new(a, b, knn_k, 100)),
        ));
    }
    for pair in &args.omp {
        let (dp, xp) = (&pair[0], &pair[1]);
        let d = io::read_npy_matrix(dp, progress)?;
        let x = io::read_npy_matrix(xp, progress)?;
        if x.cols != d.rows {
            return Err(Fail::BadInput(format!(
                "{} has signals of length {} but the dictionary {} has n = {} rows",
                xp.display(),
                x.cols,
                dp.display(),
                d.rows
            )));
        }
        let rule = StopRule::Sparsity(args.omp_sparsity);
        let what = dp.display().to_string();
        let lib = |e| Fail::from_lib(&what, e);
        let input = if d.is_f64() || x.is_f64() {
            Input::new(OmpCase {
                dict: Dictionary::new(d.rows, d.cols, d.to_f64()).map_err(lib)?,
                signals: x.to_f64(),
                count: x.rows,
                rule,
            })
        } else {
            Input::new(OmpCase {
                dict: Dictionary::new(d.rows, d.cols, d.to_f32()).map_err(lib)?,
                signals: x.to_f32(),
                count: x.rows,
                rule,
            })
        };
        out.push((name("omp", &[dp, xp]), input));
    }
    for p in &args.dimacs {
        let what = p.display().to_string();
        let (reader, pb) = io::open(p, progress)?;
        let g = FlowNetwork::read_dimacs(reader).map_err(|e| match e {
            // Whole-file problems (no `p` line, arcs missing) come as line 0.
            trident::Error::Parse { line: 0, detail } => {
                Fail::BadInput(format!("{what}: at end of file: {detail}"))
            }
            e => Fail::from_lib(&what, e),
        })?;
        pb.finish_and_clear();
        // A declared node count the machine cannot hold is the file's fault,
        // as `trident maxflow` says, not a note on every backend's row.
        let bytes = g.nodes().saturating_mul(DIMACS_BYTES_PER_NODE);
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes).map_err(|_| {
            Fail::BadInput(format!(
                "{what}: out of memory: {} nodes need at least {bytes} bytes",
                g.nodes()
            ))
        })?;
        out.push((name("dimacs", &[p]), Input::new(g)));
    }
    for p in &args.image {
        let g = super::super::segment::default_graph(p, progress)?;
        out.push((name("image", &[p]), Input::new(g)));
    }
    Ok(out)
}

/// `A^T` as CSR.
fn transpose<T: Scalar>(a: &CsrMatrix<T>) -> trident::Result<CsrMatrix<T>> {
    let mut t = Vec::with_capacity(a.nnz());
    for i in 0..a.rows() {
        let (cols, vals) = a.row(i);
        t.extend(cols.iter().zip(vals).map(|(&j, &v)| (j, i as u32, v)));
    }
    CsrMatrix::from_triplets(a.cols(), a.rows(), &t)
}

/// `C = A A` (square) or `A A^T`, C zeroed (beta = 0).
fn gemm_case<T: Scalar>(rows: usize, cols: usize, a: Vec<T>) -> GemmCase<T> {
    let square = rows == cols;
    let shape = Shape {
        rows,
        cols,
        ld: cols,
    };
    let params = GemmParams {
        op_b: if square { Op::N } else { Op::T },
        ..GemmParams::default()
    };
    GemmCase {
        params,
        m: rows,
        n: rows,
        k: cols,
        b: a.clone(),
        a,
        a_shape: shape,
        b_shape: shape,
        c: vec![T::ZERO; rows * rows],
        c_shape: Shape {
            rows,
            cols: rows,
            ld: rows,
        },
    }
}
