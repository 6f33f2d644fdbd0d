//! `trident omp --dict D.npy --signals X.npy (--sparsity T | --error E) -o codes.npz`.
//!
//! The archive holds `offsets` (L + 1, uint64), `atoms` (uint32), `coefs` and
//! `residual_norm2` (the inputs' float type): signal `i` has the atoms
//! `atoms[offsets[i]:offsets[i+1]]` in selection order, as
//! `trident::SparseCodes` lays them out.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{Dictionary, MatRef, Scalar, SparseCoder, StopRule};
use trident_io::npy;

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// `trident omp` flags.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("rule").required(true).multiple(true).args(["sparsity", "error"]))]
pub struct Args {
    /// Dictionary, n x K .npy, one atom per column (unit norm, or use --normalize).
    #[arg(long)]
    dict: PathBuf,
    /// Signals, L x n .npy, one signal per row.
    #[arg(long)]
    signals: PathBuf,
    /// Most atoms per signal.
    #[arg(long)]
    sparsity: Option<usize>,
    /// Target squared residual norm; with --sparsity too, whichever comes first.
    #[arg(long)]
    error: Option<f64>,
    /// Scale the dictionary's columns to unit norm instead of rejecting them.
    #[arg(long)]
    normalize: bool,
    /// Output .npz.
    #[arg(short, long)]
    output: PathBuf,
}

/// Reads, codes, writes.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    io::output_format("omp", "--output", &args.output, &[("npz", ())])?;
    let t0 = Instant::now();
    let d = io::read_npy_matrix(&args.dict, &ctx.progress)?;
    let x = io::read_npy_matrix(&args.signals, &ctx.progress)?;
    if x.cols != d.rows {
        return Err(Fail::BadInput(format!(
            "{} has signals of length {} but the dictionary {} has n = {} rows",
            args.signals.display(),
            x.cols,
            args.dict.display(),
            d.rows
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
    if let Some(e) = args.error
        && !(e >= 0.0 && e.is_finite())
    {
        return Err(Fail::Usage(format!(
            "--error {e}: expected a finite number >= 0"
        )));
    }
    let read_s = secs(t0);
    if d.is_f64() || x.is_f64() {
        go(
            ctx,
            &args,
            rule,
            (d.rows, d.cols, d.to_f64()),
            (x.rows, x.to_f64()),
            read_s,
        )
    } else {
        go(
            ctx,
            &args,
            rule,
            (d.rows, d.cols, d.to_f32()),
            (x.rows, x.to_f32()),
            read_s,
        )
    }
}

fn go<T: Scalar + npy::Element>(
    ctx: &Ctx,
    args: &Args,
    rule: StopRule,
    (n, atoms, dict): (usize, usize, Vec<T>),
    (l, signals): (usize, Vec<T>),
    read_s: f64,
) -> CliResult<Outcome>
where
    trident::Trident: SparseCoder<T>,
{
    let dname = args.dict.display().to_string();
    let dict = if args.normalize {
        Dictionary::normalize(n, atoms, dict)
    } else {
        Dictionary::new(n, atoms, dict)
    }
    .map_err(|e| match Fail::from_lib(&dname, e) {
        Fail::BadInput(m) if !args.normalize => {
            Fail::BadInput(format!("{m} (--normalize scales the columns)"))
        }
        f => f,
    })?;
    let x = MatRef::dense(&signals, l, n)
        .map_err(|e| Fail::from_lib(&args.signals.display().to_string(), e))?;
    let engine = ctx.engine()?;
    let pb = ctx.progress.spinner("omp");
    let t1 = Instant::now();
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
