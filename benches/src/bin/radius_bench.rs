//! Radius search against its peers, in one run: `within(A, B, r)` (cKDTree's
//! `query_ball_point`) and `self_pairs(B, r)` (cKDTree's `query_pairs`) on
//! every backend compiled in and able to run, and on kiddo (its
//! unsorted radius query per point on rayon, rows then sorted by `(d2, j)` so it
//! returns what `within` does). The Python peers (`radius_peers.py`) time
//! the same points, written here as `.npy`, right after.
//!
//! ```text
//! cargo run --release -p trident-benches --bin radius_bench -- --out /tmp/radius
//! python3 benches/radius_peers.py /tmp/radius
//! ```
//!
//! Cases: `radius-uniform` (A 1M, B 400K points uniform in `[0, 1e6)^3`,
//! `r` for about 8 points of B per query) and `radius-utm-f64` (A 1M, B 400K
//! f64 map coordinates on a jittered metre grid, `r = 1.5` m). Options:
//! `--out DIR` (write the points and `radius.json` there), `--scale S`
//! (multiply point counts by S, e.g. 0.05 on a laptop), `--reps N`.

use std::fmt::Write as _;

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use trident::{Coord, NearestPairs, Point, Primitives, RadiusNeighbors, Result};
use trident_benches::timing::wall;
use trident_testkit::cases;

struct Case<T> {
    name: &'static str,
    a: Vec<Point<T>>,
    b: Vec<Point<T>>,
    r: T,
}

/// kiddo's answer to `within(A, B, r)` with rows sorted as ours.
fn kiddo_within(a: &[Point<f64>], b: &[Point<f64>], r: f64) -> Result<RadiusNeighbors<f64>> {
    use rayon::prelude::*;
    let tree: ImmutableKdTree<f64, 3> = ImmutableKdTree::new_from_slice_parallel(b)
        .map_err(|e| trident::Error::Backend(format!("kiddo: {e}").into()))?;
    let rows: Vec<Vec<(f64, u32)>> = a
        .par_iter()
        .map(|q| {
            let mut row: Vec<(f64, u32)> = tree
                .query(q)
                .within::<SquaredEuclidean<f64>>(r * r)
                .unsorted()
                .execute()
                .into_iter()
                .map(|n| (n.distance, n.item))
                .collect();
            row.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            row
        })
        .collect();
    let mut out = RadiusNeighbors {
        offsets: vec![0],
        ..Default::default()
    };
    for row in rows {
        for (d, j) in row {
            out.indices.push(j);
            out.d2.push(d);
        }
        out.offsets.push(out.indices.len());
    }
    Ok(out)
}

fn up(p: &[Point]) -> Vec<Point<f64>> {
    p.iter().map(|q| q.map(f64::from)).collect()
}

/// Times `within` and `self_pairs` of one case on one backend: a JSON row
/// each, and a printed line.
fn time_backend<T: Coord>(
    name: &str,
    be: &dyn NearestPairs<T>,
    c: &Case<T>,
    reps: usize,
    rows: &mut Vec<String>,
) {
    let mut pairs = 0;
    let tw = wall(reps, || {
        pairs = be.within(&c.a, &c.b, c.r, usize::MAX)?.len();
        Ok(())
    });
    let mut self_n = 0;
    let ts = wall(reps, || {
        self_n = be.self_pairs(&c.b, c.r, usize::MAX)?.len();
        Ok(())
    });
    for (call, t, n) in [("within", tw, pairs), ("self_pairs", ts, self_n)] {
        match t {
            Ok(ms) => {
                println!(
                    "{:<16} {call:<11} {name:<10} {ms:10.2} ms  {n} pairs",
                    c.name
                );
                rows.push(format!(
                    r#"{{"case":"{}","call":"{call}","impl":"{name}","ms":{ms:.4},"pairs":{n}}}"#,
                    c.name
                ));
            }
            Err(e) => println!("{:<16} {call:<11} {name:<10} skipped: {e}", c.name),
        }
    }
}

fn main() -> Result<()> {
    trident_benches::log_from_env();
    let args: Vec<String> = std::env::args().collect();
    let opt = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
    };
    let out = opt("--out").cloned();
    let scale: f64 = opt("--scale").map_or(Ok(1.0), |s| s.parse()).unwrap_or(1.0);
    let reps: usize = opt("--reps").map_or(Ok(5), |s| s.parse()).unwrap_or(5);
    let n = |x: usize| ((x as f64 * scale) as usize).max(10);

    let uni = cases::pairs_uniform(n(1_000_000), n(400_000), 7);
    let uniform = Case {
        name: "radius-uniform",
        r: uni.radius,
        a: uni.a,
        b: uni.b,
    };
    let utm = Case {
        name: "radius-utm-f64",
        a: cases::utm_points(n(1_000_000), 0xA),
        b: cases::utm_points(n(400_000), 0xB),
        r: 1.5,
    };
    if let Some(dir) = &out {
        std::fs::create_dir_all(dir)?;
        let flat32 = |p: &[Point]| p.iter().flatten().copied().collect::<Vec<f32>>();
        let flat64 = |p: &[Point<f64>]| p.iter().flatten().copied().collect::<Vec<f64>>();
        let npy = trident_benches::npy::write::<f32>;
        npy(
            format!("{dir}/uniform_a.npy"),
            &[uniform.a.len(), 3],
            &flat32(&uniform.a),
        )?;
        npy(
            format!("{dir}/uniform_b.npy"),
            &[uniform.b.len(), 3],
            &flat32(&uniform.b),
        )?;
        let npy = trident_benches::npy::write::<f64>;
        npy(
            format!("{dir}/utm_a.npy"),
            &[utm.a.len(), 3],
            &flat64(&utm.a),
        )?;
        npy(
            format!("{dir}/utm_b.npy"),
            &[utm.b.len(), 3],
            &flat64(&utm.b),
        )?;
        let mut meta = String::new();
        let _ = write!(
            meta,
            r#"{{"radius-uniform":{{"r":{},"a":"uniform_a.npy","b":"uniform_b.npy"}},"radius-utm-f64":{{"r":{},"a":"utm_a.npy","b":"utm_b.npy"}}}}"#,
            uniform.r, utm.r
        );
        std::fs::write(format!("{dir}/cases.json"), meta)?;
    }

    let mut rows = Vec::new();
    for name in trident::compiled_backends() {
        if name == "reference" {
            continue;
        }
        let be: Box<dyn Primitives> = match trident::backend_by_name(name) {
            Ok(b) => b,
            Err(e) => {
                println!("{name}: not run here: {e}");
                continue;
            }
        };
        time_backend::<f32>(name, be.as_ref(), &uniform, reps, &mut rows);
        time_backend::<f64>(name, be.as_ref(), &utm, reps, &mut rows);
    }
    // kiddo on the same inputs (in f64: its f32 sums differ from ours at the
    // boundary; the pair counts printed show how close they come).
    let (ua, ub) = (up(&uniform.a), up(&uniform.b));
    for (c, a, b, r) in [
        (uniform.name, &ua, &ub, uniform.r as f64),
        (utm.name, &utm.a, &utm.b, utm.r),
    ] {
        let mut pairs = 0;
        let ms = wall(reps, || {
            pairs = kiddo_within(a, b, r)?.len();
            Ok(())
        })?;
        println!("{c:<16} within      kiddo      {ms:10.2} ms  {pairs} pairs");
        rows.push(format!(
            r#"{{"case":"{c}","call":"within","impl":"kiddo","ms":{ms:.4},"pairs":{pairs}}}"#
        ));
    }
    if let Some(dir) = &out {
        std::fs::write(
            format!("{dir}/radius.json"),
            format!("[{}]\n", rows.join(",\n")),
        )?;
    }
    Ok(())
}
