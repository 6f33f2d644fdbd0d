//! `trident omp --dict D.npy --signals X.npy (--sparsity T | --error E) -o codes.npz`.
//!
//! The archive holds `offsets` (L + 1, uint64), `atoms` (uint32), `coefs` and
//! `residual_norm2` (the inputs' float type): signal `i` has the atoms
//! `atoms[offsets[i]:offsets[i+1]]` in selection order, as
//! `trident::SparseCodes` lays them out.
//!
//! The dictionary is `n x K` with one atom per column (the layout of
//! `trident::Dictionary` and of scikit-learn's `orthogonal_mp`), or, with
//! `--atoms-as-rows`, `K x n` with one atom per row (scikit-learn's
//! `components_` and `sparse_encode(dictionary=...)`). [`STOP_RULES`] is the
//! help text that says where the stop rules differ from scikit-learn's.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{Dictionary, MatRef, Scalar, SparseCoder, StopRule, UNIT_NORM_TOL};
use trident_io::npy;

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// `trident omp --help`'s closing text: the stop rules, and each place where
/// they differ from scikit-learn's OMP, since users port code from it.
pub const STOP_RULES: &str = "\
Stop rules (scikit-learn's names: n_nonzero_coefs = --sparsity, tol = --error):
  --sparsity T   at most T atoms per signal, and never more than min(n, K)
                 (scikit-learn raises an error for T > K instead).
  --error E      stop as soon as ||r||^2 <= E. The rule is checked before every
                 step, so a signal with ||x||^2 <= E gets no atom at all;
                 scikit-learn checks tol only after adding an atom, so it
                 gives such a signal one atom.
  both           whichever comes first; in scikit-learn tol overrides
                 n_nonzero_coefs.
Every signal also stops when its residual is exactly 0, after min(n, K) atoms,
and when the best correlation is zero up to rounding: |<d_j, r>| <=
64 sqrt(n) eps ||x|| with eps of float64. That rule is relative to the signal,
so a signal of 1e-12 is coded like the same signal at scale 1; scikit-learn's
is absolute (<d_j, r>^2 < eps of the dtype: |<d_j, r>| < 1.5e-8 in float64,
3.5e-4 in float32), so it gives near-zero signals no atom (with a
RuntimeWarning). A nearly dependent atom is taken here as long as its Cholesky
pivot is positive in float64; scikit-learn stops once the pivot is at or below
eps of the dtype. Ties go to the smallest atom index.
scikit-learn does not check that atoms have unit norm; here a norm off 1 by
more than 1e-3 is an error, and --normalize scales the atoms first (the
coefficients are then those of the scaled atoms). sparse_encode(algorithm=
'omp') passes n_nonzero_coefs only (its alpha does not reach the coder in
scikit-learn 1.9): the match is --sparsity.";

/// `trident omp` flags.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("rule").required(true).multiple(true).args(["sparsity", "error"]))]
#[command(after_long_help = STOP_RULES)]
pub struct Args {
    /// Dictionary .npy: n x K, one atom per column (unit norm, or use
    /// --normalize); K x n with --atoms-as-rows.
    #[arg(long)]
    dict: PathBuf,
    /// The dictionary holds one atom per row (K x n), as scikit-learn's
    /// `components_` and `sparse_encode(X, dictionary)` do.
    #[arg(long)]
    atoms_as_rows: bool,
    /// Signals, L x n .npy, one signal per row.
    #[arg(long)]
    signals: PathBuf,
    /// Most atoms per signal (scikit-learn's n_nonzero_coefs).
    #[arg(long)]
    sparsity: Option<usize>,
    /// Target squared residual norm ||x - D g||^2 (scikit-learn's tol; see
    /// --help for where the two differ); with --sparsity too, whichever comes
    /// first.
    #[arg(
        long,
        visible_alias = "tol",
        value_name = "E",
        allow_negative_numbers = true
    )]
    error: Option<f64>,
    /// Scale the atoms to unit norm instead of rejecting them.
    #[arg(long)]
    normalize: bool,
    /// Output .npz.
    #[arg(short, long)]
    output: PathBuf,
}

/// Reads, codes, writes.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    io::output_format("omp", "--output", &args.output, &[("npz", ())])?;
    if let Some(e) = args.error
        && !(e >= 0.0 && e.is_finite())
    {
        return Err(Fail::Usage(format!(
            "--error (--tol) {e}: expected a finite number >= 0"
        )));
    }
    let rule = match (args.sparsity, args.error) {
        (Some(t), Some(e)) => StopRule::SparsityOrError {
            sparsity: t,
            error: e,
        },
        (Some(t), None) => StopRule::Sparsity(t),
        (None, Some(e)) => StopRule::Error(e),
        (None, None) => return Err(Fail::Usage("give --sparsity or --error".into())),
    };
    let t0 = Instant::now();
    let d = io::read_npy_matrix(&args.dict, &ctx.progress)?;
    let x = io::read_npy_matrix(&args.signals, &ctx.progress)?;
    // The signal length n, in either layout.
    let n = if args.atoms_as_rows { d.cols } else { d.rows };
    if x.cols != n {
        return Err(Fail::BadInput(length_mismatch(
            &args, x.cols, d.rows, d.cols,
        )));
    }
    let read_s = secs(t0);
    if d.is_f64() || x.is_f64() {
        let dict = dictionary(&args, d.rows, d.cols, d.to_f64())?;
        go(ctx, &args, rule, dict, (x.rows, x.to_f64()), read_s)
    } else {
        let dict = dictionary(&args, d.rows, d.cols, d.to_f32())?;
        go(ctx, &args, rule, dict, (x.rows, x.to_f32()), read_s)
    }
}

/// The message for signals whose length is not the dictionary's `n`, with a
/// hint when the other layout would fit (the usual slip when coming from
/// scikit-learn, whose dictionaries hold one atom per row).
fn length_mismatch(args: &Args, len: usize, rows: usize, cols: usize) -> String {
    let (dict, sig) = (args.dict.display(), args.signals.display());
    let (n, axis, layout) = if args.atoms_as_rows {
        (cols, "columns", "K x n, one atom per row (--atoms-as-rows)")
    } else {
        (rows, "rows", "n x K, one atom per column")
    };
    let mut m = format!(
        "{sig} has signals of length {len} but the dictionary {dict} ({rows} x {cols}, read as {layout}) has n = {n} {axis}"
    );
    if args.atoms_as_rows && rows == len {
        m.push_str(&format!(
            "; its atoms look like columns (n = {rows}): drop --atoms-as-rows"
        ));
    } else if !args.atoms_as_rows && cols == len {
        m.push_str(&format!(
            "; its transpose would fit: if it holds one atom per row (scikit-learn's components_, {rows} atoms of length {cols}), pass --atoms-as-rows"
        ));
    }
    m
}

/// The dictionary as `n x K` with unit-norm columns: transposed from rows if
/// asked, its atoms' norms checked here so the message can name the atom as
/// the file lays it out (a row or a column).
fn dictionary<T: Scalar>(
    args: &Args,
    rows: usize,
    cols: usize,
    data: Vec<T>,
) -> CliResult<Dictionary<T>> {
    let (n, k, data) = if args.atoms_as_rows {
        let mut t = Vec::with_capacity(data.len());
        for i in 0..cols {
            t.extend((0..rows).map(|j| data[j * cols + i]));
        }
        (cols, rows, t)
    } else {
        (rows, cols, data)
    };
    let axis = if args.atoms_as_rows { "row" } else { "column" };
    let dname = args.dict.display();
    let mut norms = vec![0f64; k];
    for i in 0..n {
        for (j, s) in norms.iter_mut().enumerate() {
            let v = data[i * k + j].to_f64();
            *s += v * v;
        }
    }
    for (j, s) in norms.iter().enumerate() {
        let norm = s.sqrt();
        if args.normalize && norm == 0.0 {
            return Err(Fail::BadInput(format!(
                "{dname}: atom {j} ({axis} {j}) is zero and cannot be normalized"
            )));
        }
        if !args.normalize && (norm - 1.0).abs() > UNIT_NORM_TOL {
            return Err(Fail::BadInput(format!(
                "{dname}: atom {j} ({axis} {j}) has norm {norm:.6}, expected 1 within {UNIT_NORM_TOL} (--normalize scales the atoms)"
            )));
        }
    }
    if args.normalize {
        Dictionary::normalize(n, k, data)
    } else {
        Dictionary::new(n, k, data)
    }
    .map_err(|e| Fail::from_lib(&dname.to_string(), e))
}

fn go<T: Scalar + npy::Element + crate::ranks::RankScalar>(
    ctx: &Ctx,
    args: &Args,
    rule: StopRule,
    dict: Dictionary<T>,
    (l, signals): (usize, Vec<T>),
    read_s: f64,
) -> CliResult<Outcome>
where
    trident::Trident: SparseCoder<T>,
{
    let (n, atoms) = (dict.n(), dict.atoms());
    let x = MatRef::dense(&signals, l, n)
        .map_err(|e| Fail::from_lib(&args.signals.display().to_string(), e))?;
    // `cluster` is read only by the `dist` build's sharded path.
    #[cfg_attr(not(feature = "dist"), allow(unused_variables))]
    let (cluster, engine) = crate::ranks::setup(ctx)?;
    let pb = ctx.progress.spinner("omp");
    let t1 = Instant::now();
    #[cfg(feature = "dist")]
    let codes = match &cluster {
        // Signals cut evenly by rows, the dictionary replicated; every rank
        // gathers the codes, rank 0 writes them.
        Some(cluster) => {
            let s = trident::dist::Sharded::new(cluster, &engine);
            let rows = trident::dist::even_split(l, cluster.size(), cluster.rank());
            let mine = MatRef::dense(&signals[rows.start * n..rows.end * n], rows.len(), n)
                .map_err(|e| Fail::from_lib("omp", e))?;
            let codes = s
                .encode(&dict, mine, rule)
                .and_then(|c| s.gather_codes(&c))
                .map_err(|e| Fail::from_lib("omp", e))?;
            if cluster.rank() != 0 {
                pb.finish_and_clear();
                return Ok(crate::ranks::quiet(cluster));
            }
            let _ = x;
            codes
        }
        None => engine
            .encode(&dict, x, rule)
            .map_err(|e| Fail::from_lib("omp", e))?,
    };
    #[cfg(not(feature = "dist"))]
    let codes = engine
        .encode(&dict, x, rule)
        .map_err(|e| Fail::from_lib("omp", e))?;
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    let fail = |e| io::encode_fail(&args.output, e);
    let offsets: Vec<u64> = codes.offsets.iter().map(|&o| o as u64).collect();
    let members = vec![
        (
            "offsets".to_string(),
            npy::encode(&[offsets.len() as u64], &offsets).map_err(fail)?,
        ),
        (
            "atoms".to_string(),
            npy::encode(&[codes.atoms.len() as u64], &codes.atoms).map_err(fail)?,
        ),
        (
            "coefs".to_string(),
            npy::encode(&[codes.coefs.len() as u64], &codes.coefs).map_err(fail)?,
        ),
        (
            "residual_norm2".to_string(),
            npy::encode(&[codes.residual_norm2.len() as u64], &codes.residual_norm2)
                .map_err(fail)?,
        ),
    ];
    io::write_npz(&args.output, &members)?;
    let write_s = secs(t2);
    let mean_atoms = codes.atoms.len() as f64 / l.max(1) as f64;
    Ok(Outcome {
        text: format!(
            "omp: {l} signals of length {n} over {atoms} atoms ({}), {mean_atoms:.2} atoms per signal, {compute_s:.3} s on {} -> {}\n",
            T::NAME,
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "precision": T::NAME,
            "signals": l, "n": n, "atoms": atoms, "mean_atoms": mean_atoms,
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}
