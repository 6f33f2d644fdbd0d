//! `trident pairs A B -o out.csv [--k K | --knn K]`: each point of A's nearest
//! point of B (default), its K nearest (`--knn`), or the K closest pairs over
//! all of A (`--k`).

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{NearestPairs, Neighbor};

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io::output::Output;
use crate::{Ctx, Outcome};

/// `trident pairs` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Query points A (.npy N x 3, .ply, .csv or .xyz: `x,y,z` or `x y z` per line).
    a: PathBuf,
    /// Data points B.
    b: PathBuf,
    /// The K closest (a, b) pairs, each a with its nearest b: CSV `a,b,d2`.
    #[arg(long, conflicts_with = "knn")]
    k: Option<usize>,
    /// The K nearest points of B for every point of A: CSV `a,rank,b,d2`.
    #[arg(long)]
    knn: Option<usize>,
    /// Output CSV (0-based indices, squared distances).
    #[arg(short, long)]
    output: PathBuf,
}

/// Reads, queries, writes.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    let t0 = Instant::now();
    let a = crate::io::read_points(&args.a, &ctx.progress)?;
    let b = crate::io::read_points(&args.b, &ctx.progress)?;
    let read_s = secs(t0);
    let engine = ctx.engine()?;
    let lib = |e| Fail::from_lib("pairs", e);
    let pb = ctx.progress.spinner("pairs");
    let t1 = Instant::now();
    let (mode, rows): (&str, Vec<String>) = if let Some(k) = args.knn {
        let len = a.len().checked_mul(k).ok_or_else(|| {
            Fail::BadInput(format!("--knn {k} x {} points is too large", a.len()))
        })?;
        let mut out: Vec<Neighbor> = Vec::new();
        out.try_reserve_exact(len).map_err(|e| {
            Fail::BadInput(format!(
                "--knn {k}: {len} neighbours do not fit in memory: {e}"
            ))
        })?;
        out.resize(len, Neighbor::default());
        engine.knn(&a, &b, k, &mut out).map_err(lib)?;
        let rows = out
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{},{},{},{}", i / k.max(1), i % k.max(1), n.index, n.d2))
            .collect();
        ("knn", rows)
    } else if let Some(k) = args.k {
        let pairs = engine.closest_pairs(&a, &b, k).map_err(lib)?;
        (
            "closest_pairs",
            pairs
                .iter()
                .map(|p| format!("{},{},{}", p.a, p.b, p.d2))
                .collect(),
        )
    } else {
        let mut out = vec![Neighbor::default(); a.len()];
        engine.nearest(&a, &b, &mut out).map_err(lib)?;
        let rows = out
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{i},{},{}", n.index, n.d2))
            .collect();
        ("nearest", rows)
    };
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    let header = if mode == "knn" {
        "a,rank,b,d2"
    } else {
        "a,b,d2"
    };
    let mut out = Output::create(&args.output)?;
    let r = (|| -> std::io::Result<()> {
        let w = out.writer();
        writeln!(w, "{header}")?;
        for r in &rows {
            writeln!(w, "{r}")?;
        }
        Ok(())
    })();
    r.map_err(|e| out.fail(e))?;
    out.commit()?;
    let write_s = secs(t2);
    Ok(Outcome {
        text: format!(
            "{mode}: |A| = {}, |B| = {}, {} rows, {compute_s:.3} s on {} -> {}\n",
            a.len(),
            b.len(),
            rows.len(),
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "mode": mode,
            "a_points": a.len(), "b_points": b.len(), "rows": rows.len(),
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}
