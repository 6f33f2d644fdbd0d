//! `trident gemm A.npy B.npy -o C.npy`: float64 if either input is, else float32.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{DenseGemm, GemmParams, MatMut, MatRef, Precision, Scalar};

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// `trident gemm` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Left factor, m x k .npy (float32 or float64).
    a: PathBuf,
    /// Right factor, k x n .npy.
    b: PathBuf,
    /// Output m x n .npy.
    #[arg(short, long)]
    output: PathBuf,
    /// Arithmetic of a float32 product (float64 is always strict); backends
    /// without tensor cores compute strictly.
    #[arg(long, value_enum, default_value_t = PrecisionArg::Strict)]
    precision: PrecisionArg,
}

/// `--precision`: `trident::Precision` by name.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrecisionArg {
    /// True f32 multiply-adds.
    Strict,
    /// Operands rounded to TF32 on tensor cores (about 3 decimal digits).
    Tf32,
    /// f32 accuracy from TF32 tensor cores (each operand split in two).
    Tf32x3,
}

impl PrecisionArg {
    /// The flag's value, as typed.
    fn name(self) -> &'static str {
        match self {
            PrecisionArg::Strict => "strict",
            PrecisionArg::Tf32 => "tf32",
            PrecisionArg::Tf32x3 => "tf32x3",
        }
    }

    fn get(self) -> Precision {
        match self {
            PrecisionArg::Strict => Precision::Strict,
            PrecisionArg::Tf32 => Precision::Tf32,
            PrecisionArg::Tf32x3 => Precision::Tf32x3,
        }
    }
}

/// Reads, multiplies, writes.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    io::output_format("gemm", "--output", &args.output, &[("npy", ())])?;
    let t0 = Instant::now();
    let a = io::read_npy_matrix(&args.a, &ctx.progress)?;
    let b = io::read_npy_matrix(&args.b, &ctx.progress)?;
    if a.cols != b.rows {
        return Err(Fail::BadInput(format!(
            "{} is {} x {} but {} is {} x {}: the inner dimensions differ",
            args.a.display(),
            a.rows,
            a.cols,
            args.b.display(),
            b.rows,
            b.cols
        )));
    }
    let read_s = secs(t0);
    if a.is_f64() || b.is_f64() {
        go(
            ctx,
            &args,
            a.rows,
            a.cols,
            b.cols,
            &a.to_f64(),
            &b.to_f64(),
            read_s,
        )
    } else {
        go(
            ctx,
            &args,
            a.rows,
            a.cols,
            b.cols,
            &a.to_f32(),
            &b.to_f32(),
            read_s,
        )
    }
}

fn go<T: Scalar + trident_io::npy::Element + crate::ranks::RankScalar>(
    ctx: &Ctx,
    args: &Args,
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    b: &[T],
    read_s: f64,
) -> CliResult<Outcome>
where
    trident::Trident: DenseGemm<T>,
{
    let len = m
        .checked_mul(n)
        .ok_or_else(|| Fail::BadInput(format!("the output {m} x {n} is too large")))?;
    let mut c: Vec<T> = Vec::new();
    c.try_reserve_exact(len).map_err(|e| {
        Fail::BadInput(format!(
            "the output {m} x {n} ({len} values) does not fit in memory: {e}"
        ))
    })?;
    c.resize(len, T::ZERO);
    // `cluster` is read only by the `dist` build's sharded path.
    #[cfg_attr(not(feature = "dist"), allow(unused_variables))]
    let (cluster, engine) = crate::ranks::setup(ctx)?;
    let lib = |e| Fail::from_lib("gemm", e);
    let params = GemmParams {
        precision: args.precision.get(),
        ..GemmParams::default()
    };
    let pb = ctx.progress.spinner(format!("gemm {m}x{k}x{n}"));
    let t1 = Instant::now();
    #[cfg(feature = "dist")]
    if let Some(cluster) = &cluster {
        // Rows of A and C cut evenly, B replicated; rank 0 writes C.
        let s = trident::dist::Sharded::new(cluster, &engine);
        let rows = trident::dist::even_split(m, cluster.size(), cluster.rank());
        let mut mine = vec![T::ZERO; rows.len() * n];
        s.gemm(
            &params,
            MatRef::dense(&a[rows.start * k..rows.end * k], rows.len(), k).map_err(lib)?,
            MatRef::dense(b, k, n).map_err(lib)?,
            MatMut::dense(&mut mine, rows.len(), n).map_err(lib)?,
        )
        .map_err(lib)?;
        c = s.gather_rows(&mine).map_err(lib)?;
        if cluster.rank() != 0 {
            pb.finish_and_clear();
            return Ok(crate::ranks::quiet(cluster));
        }
    }
    #[cfg(feature = "dist")]
    let alone = cluster.is_none();
    #[cfg(not(feature = "dist"))]
    let alone = true;
    if alone {
        engine
            .gemm(
                &params,
                MatRef::dense(a, m, k).map_err(lib)?,
                MatRef::dense(b, k, n).map_err(lib)?,
                MatMut::dense(&mut c, m, n).map_err(lib)?,
            )
            .map_err(lib)?;
    }
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    io::write_npy_matrix(&args.output, m, n, &c)?;
    let write_s = secs(t2);
    let gflops = 2.0 * m as f64 * n as f64 * k as f64 / compute_s.max(1e-9) / 1e9;
    Ok(Outcome {
        text: format!(
            "C = A B: {m} x {n} ({}), k = {k}, {compute_s:.3} s ({gflops:.1} GFLOP/s) on {} -> {}\n",
            T::NAME,
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "precision": T::NAME,
            "mode": args.precision.name(),
            "m": m, "n": n, "k": k, "gflops": gflops,
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}
