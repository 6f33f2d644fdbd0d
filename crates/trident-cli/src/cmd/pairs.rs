//! `trident pairs A B -o out.csv|out.npy|out.npz [--k K | --knn K | --radius
//! R] [--euclidean]`: each point of A's nearest point of B (default), its K
//! nearest (`--knn`), the K closest pairs over all of A (`--k`), or every
//! pair within R (`--radius`; `pairs P --radius R --self` for the pairs of
//! one set), written as `trident_io::neighbors` lays them out for the
//! output's extension.
//!
//! Coordinates keep the precision of their files: a float64 `.npy`, a PLY of
//! doubles, or text with a coordinate f32 cannot hold exactly is computed in
//! f64 from end to end (map coordinates rounded to f32 keep about half a
//! metre); when one input is f64 both are.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{Coord, NearestPairs, Neighbor, Pair, Point, RadiusNeighbors, Trident};
use trident_io::neighbors::{self, Distance, Format, Value};
use trident_io::points::Points;

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// `trident pairs` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Query points A (.npy N x 3 float32/float64, .ply, .csv, or .xyz/.txt:
    /// `x y z` per line, further columns ignored).
    a: PathBuf,
    /// Data points B (not with --self).
    #[arg(required_unless_present = "self_pairs", conflicts_with = "self_pairs")]
    b: Option<PathBuf>,
    /// The K closest (a, b) pairs, each a with its nearest b: CSV `a,b,d2`;
    /// .npz members `a`, `b`, `d2`; .npy K x 2 (a, b).
    #[arg(long, conflicts_with_all = ["knn", "radius"])]
    k: Option<usize>,
    /// The K nearest points of B for every point of A: CSV `a,rank,b,d2`;
    /// .npz members `indices` and `d2` (N x K); .npy the indices (N x K).
    #[arg(long, conflicts_with = "radius")]
    knn: Option<usize>,
    /// Every pair (a, b) with |a - b| <= R (cKDTree's query_ball_point),
    /// rows in (a, d2, b) order: CSV `a,b,d2`; .npz members `offsets`
    /// (|A| + 1, as a CSR indptr), `a`, `b`, `d2`; .npy K x 2 (a, b).
    #[arg(long)]
    radius: Option<f64>,
    /// With --radius and one input P: the pairs i < j of P within R
    /// (cKDTree's query_pairs), in the same layout.
    #[arg(long = "self", requires = "radius")]
    self_pairs: bool,
    /// With --radius: fail (exit 2, no output) when more than N pairs are
    /// found, before they are allocated. Default: no limit but memory.
    #[arg(long, requires = "radius")]
    max_pairs: Option<usize>,
    /// Euclidean distances in float64, as scipy's cKDTree gives them
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
enum Found<T> {
    Nearest(Vec<Neighbor<T>>),
    Knn(usize, Vec<Neighbor<T>>),
    Closest(Vec<Pair<T>>),
    Radius(RadiusNeighbors<T>),
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
    if let Some(r) = args.radius
        && !(r.is_finite() && r >= 0.0)
    {
        return Err(Fail::Usage(format!(
            "--radius {r}: expected a finite number >= 0"
        )));
    }
    let t0 = Instant::now();
    let a = io::read_points_any(&args.a, &ctx.progress)?;
    let b = match &args.b {
        Some(p) => io::read_points_any(p, &ctx.progress)?,
        None => Points::F32(Vec::new()),
    };
    let read_s = secs(t0);
    // `cluster` is read only by the `dist` build's sharded path.
    #[cfg_attr(not(feature = "dist"), allow(unused_variables))]
    let (cluster, engine) = crate::ranks::setup(ctx)?;
    let run = Run {
        ctx,
        args: &args,
        engine: &engine,
        #[cfg(feature = "dist")]
        cluster: cluster.as_ref(),
    };
    let one_set = args.self_pairs;
    match (a, b) {
        (Points::F32(a), Points::F32(b)) => {
            let b = if one_set { None } else { Some(b) };
            run.go(format, a, b, read_s)
        }
        (a, b) => {
            let b = if one_set { None } else { Some(b.to_f64()) };
            run.go(format, a.to_f64(), b, read_s)
        }
    }
}

/// One `pairs` call: alone, or as one rank of several (each its rows of A,
/// B replicated, rank 0 writing).
struct Run<'a> {
    ctx: &'a Ctx,
    args: &'a Args,
    engine: &'a Trident,
    #[cfg(feature = "dist")]
    cluster: Option<&'a trident::dist::Cluster>,
}

impl Run<'_> {
    /// The query on this rank's share, gathered: every rank ends with the
    /// whole answer (as one device gives it).
    #[cfg(feature = "dist")]
    fn sharded<T: trident::dist::ShardCoord + Value>(
        &self,
        cluster: &trident::dist::Cluster,
        a: &[Point<T>],
        bs: &[Point<T>],
        self_set: bool,
    ) -> trident::Result<Found<T>> {
        use trident::dist::{Sharded, even_split};
        let s = Sharded::new(cluster, self.engine);
        let rows = even_split(a.len(), cluster.size(), cluster.rank());
        let mine = &a[rows.clone()];
        Ok(if let Some(r) = self.args.radius {
            let (r, max) = (T::from_f64(r), self.args.max_pairs.unwrap_or(usize::MAX));
            Found::Radius(s.gather_radius(&if self_set {
                s.self_pairs(a, r, max)?.1
            } else {
                s.within(mine, bs, r, max)?
            })?)
        } else if let Some(k) = self.args.knn {
            let mut out = vec![Neighbor::default(); mine.len() * k];
            s.knn(mine, bs, k, &mut out)?;
            Found::Knn(k, s.gather_neighbors(&out)?)
        } else if let Some(k) = self.args.k {
            Found::Closest(s.closest_pairs(mine, bs, k)?)
        } else {
            let mut out = vec![Neighbor::default(); mine.len()];
            s.nearest(mine, bs, &mut out)?;
            Found::Nearest(s.gather_neighbors(&out)?)
        })
    }

    fn go<T: Coord + Value + crate::ranks::RankCoord>(
        &self,
        format: Format,
        a: Vec<Point<T>>,
        b: Option<Vec<Point<T>>>,
        read_s: f64,
    ) -> CliResult<Outcome>
    where
        Trident: NearestPairs<T>,
    {
        #[cfg(feature = "dist")]
        if let Some(cluster) = self.cluster {
            let t1 = Instant::now();
            let bs = b.as_deref().unwrap_or(&a);
            let found = self
                .sharded(cluster, &a, bs, b.is_none())
                .map_err(|e| Fail::from_lib("pairs", e))?;
            let compute_s = secs(t1);
            if cluster.rank() != 0 {
                return Ok(crate::ranks::quiet(cluster));
            }
            let mut out = finish(
                self.args,
                self.engine,
                format,
                &a,
                b.as_deref(),
                found,
                read_s,
                compute_s,
            )?;
            out.text = format!(
                "{} ranks ({}): {}",
                cluster.size(),
                cluster.comm().transport(),
                out.text
            );
            return Ok(out);
        }
        go(self.ctx, self.args, self.engine, format, a, b, read_s)
    }
}

/// The query and the output in the coordinate type `T`; `b` is `None` for
/// `--self`.
fn go<T: Coord + Value>(
    ctx: &Ctx,
    args: &Args,
    engine: &Trident,
    format: Format,
    a: Vec<Point<T>>,
    b: Option<Vec<Point<T>>>,
    read_s: f64,
) -> CliResult<Outcome>
where
    Trident: NearestPairs<T>,
{
    let lib = |e| Fail::from_lib("pairs", e);
    let pb = ctx.progress.spinner("pairs");
    let t1 = Instant::now();
    let bs = b.as_deref().unwrap_or(&a);
    let found = if let Some(r) = args.radius {
        let r = T::from_f64(r);
        let max = args.max_pairs.unwrap_or(usize::MAX);
        Found::Radius(if b.is_none() {
            engine.self_pairs(&a, r, max).map_err(lib)?
        } else {
            engine.within(&a, bs, r, max).map_err(lib)?
        })
    } else if let Some(k) = args.knn {
        let len = a.len().checked_mul(k).ok_or_else(|| {
            Fail::BadInput(format!("--knn {k} x {} points is too large", a.len()))
        })?;
        let mut out: Vec<Neighbor<T>> = Vec::new();
        out.try_reserve_exact(len).map_err(|e| {
            Fail::BadInput(format!(
                "--knn {k}: {len} neighbours do not fit in memory: {e}"
            ))
        })?;
        out.resize(len, Neighbor::default());
        engine.knn(&a, bs, k, &mut out).map_err(lib)?;
        Found::Knn(k, out)
    } else if let Some(k) = args.k {
        Found::Closest(engine.closest_pairs(&a, bs, k).map_err(lib)?)
    } else {
        let mut out = vec![Neighbor::default(); a.len()];
        engine.nearest(&a, bs, &mut out).map_err(lib)?;
        Found::Nearest(out)
    };
    let compute_s = secs(t1);
    pb.finish_and_clear();
    finish(
        args,
        engine,
        format,
        &a,
        b.as_deref(),
        found,
        read_s,
        compute_s,
    )
}

/// Writes what was found and says what was done.
#[allow(clippy::too_many_arguments)]
fn finish<T: Coord + Value>(
    args: &Args,
    engine: &Trident,
    format: Format,
    a: &[Point<T>],
    b: Option<&[Point<T>]>,
    found: Found<T>,
    read_s: f64,
    compute_s: f64,
) -> CliResult<Outcome> {
    let bs = b.unwrap_or(a);
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
        Found::Radius(r) if b.is_none() => ("self_pairs", r.len()),
        Found::Radius(r) => ("within", r.len()),
    };
    io::write_file(&args.output, |w| match kind {
        Distance::Squared => {
            let d2: Vec<T> = found.triples().map(|(_, _, d2)| d2).collect();
            found.write(w, format, a.len(), &d2, kind)
        }
        Distance::Euclidean => {
            let d: Vec<f64> = found
                .triples()
                .map(|(i, j, _)| euclidean(&a[i as usize], &bs[j as usize]))
                .collect();
            found.write(w, format, a.len(), &d, kind)
        }
    })?;
    let write_s = secs(t2);
    Ok(Outcome {
        text: format!(
            "{mode}: |A| = {}, |B| = {}, {} coordinates, {rows} rows, {compute_s:.3} s on {} -> {}\n",
            a.len(),
            bs.len(),
            T::NAME,
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "mode": mode,
            "a_points": a.len(), "b_points": bs.len(), "rows": rows,
            "coordinates": T::NAME,
            "distance": kind.column(),
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}

impl<T: Coord + Value> Found<T> {
    /// Every (query, neighbour, squared distance), in output order.
    fn triples(&self) -> Box<dyn Iterator<Item = (u32, u32, T)> + '_> {
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
            Found::Radius(r) => Box::new(r.pairs()),
        }
    }

    /// Writes the result with `distances` (one per triple) of `kind`.
    fn write<D: Value>(
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
            Found::Radius(r) => {
                neighbors::write_radius(w, format, &r.offsets, &r.indices, distances, kind)
            }
        }
    }
}

/// The Euclidean distance in f64 from the coordinates, as cKDTree computes
/// it: `sqrt(dx*dx + dy*dy + dz*dz)`, summed in that order (f32 coordinates
/// are exact in f64).
fn euclidean<P: Coord>(p: &[P; 3], q: &[P; 3]) -> f64 {
    let mut s = 0.0f64;
    for d in 0..3 {
        let x = p[d].to_f64() - q[d].to_f64();
        s += x * x;
    }
    s.sqrt()
}
