//! `trident pairs A B -o out.csv|out.npy|out.npz [--k K | --knn K]
//! [--euclidean]`: each point of A's nearest point of B (default), its K
//! nearest (`--knn`), or the K closest pairs over all of A (`--k`), written
//! as `trident_io::neighbors` lays them out for the output's extension.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{NearestPairs, Neighbor};
use trident_io::neighbors::{self, Distance, Format};

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// `trident pairs` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Query points A (.npy N x 3, .ply, .csv, or .xyz/.txt: `x y z` per line,
    /// further columns ignored).
    a: PathBuf,
    /// Data points B.
    b: PathBuf,
    /// The K closest (a, b) pairs, each a with its nearest b: CSV `a,b,d2`;
    /// .npz members `a`, `b`, `d2`; .npy K x 2 (a, b).
    #[arg(long, conflicts_with = "knn")]
    k: Option<usize>,
    /// The K nearest points of B for every point of A: CSV `a,rank,b,d2`;
    /// .npz members `indices` and `d2` (N x K); .npy the indices (N x K).
    #[arg(long)]
    knn: Option<usize>,
    /// Euclidean distances in float64, as scipy's cKDTree.query gives them
    /// (column `distance`, member `distances`), instead of the squared
    /// distances (`d2`).
    #[arg(long)]
    euclidean: bool,
    /// Output: .csv (0-based indices and distances), .npy (the int64 indices
    /// alone) or .npz (indices and distances).
    #[arg(short, long)]
    output: PathBuf,
}

/// What was found, before it is written.
enum Found {
    Nearest(Vec<Neighbor>),
    Knn(usize, Vec<Neighbor>),
    Closest(Vec<trident::Pair>),
}

/// Reads, queries, writes.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    let format = io::output_format(
        "pairs",
        "--output",
        &args.output,
        &[
            ("csv", Format::Csv),
            ("npy", Format::Npy),
            ("npz", Format::Npz),
        ],
    )?;
    let t0 = Instant::now();
    let a = io::read_points(&args.a, &ctx.progress)?;
    let b = io::read_points(&args.b, &ctx.progress)?;
    let read_s = secs(t0);
    let engine = ctx.engine()?;
    let lib = |e| Fail::from_lib("pairs", e);
    let pb = ctx.progress.spinner("pairs");
    let t1 = Instant::now();
    let found = if let Some(k) = args.knn {
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
        Found::Knn(k, out)
    } else if let Some(k) = args.k {
        Found::Closest(engine.closest_pairs(&a, &b, k).map_err(lib)?)
    } else {
        let mut out = vec![Neighbor::default(); a.len()];
        engine.nearest(&a, &b, &mut out).map_err(lib)?;
        Found::Nearest(out)
    };
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    let kind = if args.euclidean {
        Distance::Euclidean
    } else {
        Distance::Squared
    };
    let (mode, rows) = match &found {
        Found::Nearest(n) => ("nearest", n.len()),
        Found::Knn(_, n) => ("knn", n.len()),
        Found::Closest(p) => ("closest_pairs", p.len()),
    };
    io::write_file(&args.output, |w| match kind {
        Distance::Squared => {
            let d2: Vec<f32> = found.triples().map(|(_, _, d2)| d2).collect();
            found.write(w, format, a.len(), &d2, kind)
        }
        Distance::Euclidean => {
            let d: Vec<f64> = found
                .triples()
                .map(|(i, j, _)| euclidean(&a[i as usize], &b[j as usize]))
                .collect();
            found.write(w, format, a.len(), &d, kind)
        }
    })?;
    let write_s = secs(t2);
    Ok(Outcome {
        text: format!(
            "{mode}: |A| = {}, |B| = {}, {rows} rows, {compute_s:.3} s on {} -> {}\n",
            a.len(),
            b.len(),
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "mode": mode,
            "a_points": a.len(), "b_points": b.len(), "rows": rows,
            "distance": kind.column(),
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}

impl Found {
    /// Every (query, neighbour, squared distance), in output order.
    fn triples(&self) -> Box<dyn Iterator<Item = (u32, u32, f32)> + '_> {
        match self {
            Found::Nearest(n) => {
                Box::new(n.iter().enumerate().map(|(i, x)| (i as u32, x.index, x.d2)))
            }
            Found::Knn(k, n) => Box::new(
                n.iter()
                    .enumerate()
                    .map(move |(p, x)| ((p / (*k).max(1)) as u32, x.index, x.d2)),
            ),
            Found::Closest(p) => Box::new(p.iter().map(|x| (x.a, x.b, x.d2))),
        }
    }

    /// Writes the result with `distances` (one per triple) of `kind`.
    fn write<D: neighbors::Value>(
        &self,
        w: &mut dyn std::io::Write,
        format: Format,
        queries: usize,
        distances: &[D],
        kind: Distance,
    ) -> trident_io::Result<()> {
        let b: Vec<u32> = self.triples().map(|(_, j, _)| j).collect();
        match self {
            Found::Nearest(_) => neighbors::write_nearest(w, format, &b, distances, kind),
            Found::Knn(k, _) => neighbors::write_knn(w, format, queries, *k, &b, distances, kind),
            Found::Closest(_) => {
                let a: Vec<u32> = self.triples().map(|(i, _, _)| i).collect();
                neighbors::write_pairs(w, format, &a, &b, distances, kind)
            }
        }
    }
}

/// The Euclidean distance in f64 from the coordinates, as cKDTree computes
/// it: `sqrt(dx*dx + dy*dy + dz*dz)`, summed in that order (f32 coordinates
/// are exact in f64).
fn euclidean<P: Copy + Into<f64>>(p: &[P; 3], q: &[P; 3]) -> f64 {
    let mut s = 0.0f64;
    for d in 0..3 {
        let x = p[d].into() - q[d].into();
        s += x * x;
    }
    s.sqrt()
}
