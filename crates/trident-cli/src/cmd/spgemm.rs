//! `trident spgemm A.mtx B.mtx -o C.mtx|C.npz [--transpose-b] [--f32]`: inputs
//! and output in Matrix Market or scipy's sparse `.npz`, by extension.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{CsrMatrix, Scalar, SparseGemm};
use trident_io::sparse::Format;

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// `trident spgemm` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Left factor: Matrix Market coordinate file (.mtx), or a scipy CSR .npz
    /// (`scipy.sparse.save_npz(..., compressed=False)`).
    a: PathBuf,
    /// Right factor, likewise.
    b: PathBuf,
    /// Output: .mtx (Matrix Market coordinate real general) or .npz (scipy
    /// CSR: `scipy.sparse.load_npz` opens it).
    #[arg(short, long)]
    output: PathBuf,
    /// Multiply by the transpose of B: C = A B^T (B is n x k).
    #[arg(long)]
    transpose_b: bool,
    /// Compute in float32 (default float64; the wgpu backend has only f32).
    #[arg(long)]
    f32: bool,
}

/// Reads, multiplies, writes.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    let format = io::output_format(
        "spgemm",
        "--output",
        &args.output,
        &[("mtx", Format::MatrixMarket), ("npz", Format::Npz)],
    )?;
    if args.f32 {
        go::<f32>(ctx, &args, format)
    } else {
        go::<f64>(ctx, &args, format)
    }
}

fn go<T: Scalar + trident_io::npy::Element + crate::ranks::RankScalar>(
    ctx: &Ctx,
    args: &Args,
    format: Format,
) -> CliResult<Outcome>
where
    trident::Trident: SparseGemm<T>,
{
    let t0 = Instant::now();
    let a: CsrMatrix<T> = io::read_sparse(&args.a, &ctx.progress)?;
    let mut b: CsrMatrix<T> = io::read_sparse(&args.b, &ctx.progress)?;
    if args.transpose_b {
        b = transpose(&b).map_err(|e| Fail::from_lib(&args.b.display().to_string(), e))?;
    }
    if a.cols() != b.rows() {
        return Err(Fail::BadInput(format!(
            "{} is {} x {} but {}{} is {} x {}: the inner dimensions differ",
            args.a.display(),
            a.rows(),
            a.cols(),
            args.b.display(),
            if args.transpose_b { " transposed" } else { "" },
            b.rows(),
            b.cols()
        )));
    }
    let read_s = secs(t0);
    // `cluster` is read only by the `dist` build's sharded path.
    #[cfg_attr(not(feature = "dist"), allow(unused_variables))]
    let (cluster, engine) = crate::ranks::setup(ctx)?;
    let pb = ctx.progress.spinner("spgemm");
    let t1 = Instant::now();
    #[cfg(feature = "dist")]
    if let Some(cluster) = &cluster {
        // A cut by products per row, B replicated; rank 0 writes C.
        let s = trident::dist::Sharded::new(cluster, &engine);
        let c = s
            .spgemm_balanced(&a, &b)
            .and_then(|(_, block)| s.gather_csr(&block))
            .map_err(|e| Fail::from_lib("spgemm", e))?;
        pb.finish_and_clear();
        if cluster.rank() != 0 {
            return Ok(crate::ranks::quiet(cluster));
        }
        io::write_sparse(&args.output, &c, format)?;
        return Ok(Outcome {
            text: format!(
                "{} ranks ({}): C : {} x {}, {} nonzeros, {:.3} s -> {}\n",
                cluster.size(),
                cluster.comm().transport(),
                c.rows(),
                c.cols(),
                c.nnz(),
                secs(t1),
                args.output.display()
            ),
            json: json!({"ok": true, "ranks": cluster.size(), "c": {"rows": c.rows(), "cols": c.cols(), "nnz": c.nnz()}}),
            ok: true,
        });
    }
    let c = engine
        .spgemm(&a, &b)
        .map_err(|e| Fail::from_lib("spgemm", e))?;
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    io::write_sparse(&args.output, &c, format)?;
    let write_s = secs(t2);
    Ok(Outcome {
        text: format!(
            "C = A{} : {} x {}, {} nonzeros, {:.3} s on {} -> {}\n",
            if args.transpose_b { " B^T" } else { " B" },
            c.rows(),
            c.cols(),
            c.nnz(),
            compute_s,
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "precision": T::NAME,
            "a": {"rows": a.rows(), "cols": a.cols(), "nnz": a.nnz()},
            "b": {"rows": b.rows(), "cols": b.cols(), "nnz": b.nnz()},
            "c": {"rows": c.rows(), "cols": c.cols(), "nnz": c.nnz()},
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}

/// CSR transpose by counting sort (columns stay sorted).
pub fn transpose<T: Scalar>(m: &CsrMatrix<T>) -> trident::Result<CsrMatrix<T>> {
    let mut count = vec![0usize; m.cols() + 1];
    for &j in m.indices() {
        count[j as usize + 1] += 1;
    }
    for j in 0..m.cols() {
        count[j + 1] += count[j];
    }
    let offsets = count.clone();
    let mut next = count;
    let mut idx = vec![0u32; m.nnz()];
    let mut val = vec![T::ZERO; m.nnz()];
    for i in 0..m.rows() {
        let (cols, vals) = m.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            let p = next[j as usize];
            idx[p] = i as u32;
            val[p] = v;
            next[j as usize] += 1;
        }
    }
    CsrMatrix::new(m.cols(), m.rows(), offsets, idx, val)
}
