//! `trident bench [--case NAME...] [--mtx F] [--points A B] ... [--plot
//! out.svg] [--repeat N] [--py-peers benches/peers.py]`: a small benchmark over
//! named verify cases (`trident_testkit::cases`) and the user's own files
//! ([`files`]), every backend here (or `--backend`) and the peers of
//! [`super::peers`] on the same input in the same run, the median of N timed
//! runs after one warm-up. The plot groups the bars of each case, gives every
//! backend and peer one colour whatever the run, writes each bar's ratio to
//! the fastest peer on it, and names the machine ([`plot`]).
//!
//! This is deliberately smaller than `cargo bench -p trident-benches`
//! (criterion, GPU peers such as cuBLAS): that package is a workspace tool
//! not meant for publishing, so the CLI does not depend on it. The table here
//! times the same calls verify checks, on the same generated inputs.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident_testkit::cases;
use trident_testkit::check;
use trident_testkit::timing;

mod files;
mod plot;

use super::peers;
use crate::fail::{CliResult, Fail};
use crate::{Ctx, Outcome};

/// `trident bench` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Verify case names (e.g. from `trident verify` output). At least one
    /// case or file.
    #[arg(long, num_args = 1..)]
    case: Vec<String>,
    #[command(flatten)]
    files: files::FileArgs,
    /// Timed runs per (case, backend); the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Seed of the case generators.
    #[arg(long, default_value_t = trident_testkit::DEFAULT_SEED)]
    seed: u64,
    /// Also draw the times of backends and peers as an SVG bar chart (log scale).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Also time the Python peers of this script (the repository's
    /// `benches/peers.py`: numpy, scipy, scikit-learn, PyMaxflow) on the same
    /// inputs; skipped with a note where python3 or a module is missing.
    #[arg(long, value_name = "PEERS_PY")]
    py_peers: Option<PathBuf>,
    /// Time the backends only, not the in-process Rust peers.
    #[arg(long)]
    no_peers: bool,
}

struct Timing {
    case: String,
    primitive: &'static str,
    /// A backend's name, or a peer's (library and version).
    backend: String,
    /// `"backend"` or `"peer"`.
    kind: &'static str,
    median_s: Option<f64>,
    note: String,
    /// `median_s` over the fastest peer's on the same case.
    ratio: Option<f64>,
}

/// Runs the cases, prints the table, draws the plot.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    if let Some(p) = &args.plot {
        crate::io::output_format("bench", "--plot", p, &[("svg", ())])?;
    }
    if args.repeat == 0 {
        return Err(Fail::Usage("--repeat must be at least 1".into()));
    }
    if args.case.is_empty() && args.files.is_empty() {
        return Err(Fail::Usage(
            "give --case NAME or a file (--mtx, --npy, --points, --omp, --dimacs, --image)".into(),
        ));
    }
    // (name, primitive, input) of every case, named ones first.
    let mut picked: Vec<(String, &'static str, trident_testkit::cases::Input)> = Vec::new();
    for name in &args.case {
        let c =
            cases::find_case(name).ok_or_else(|| Fail::Usage(format!("no case named {name:?}")))?;
        picked.push((c.name.clone(), c.primitive, c.input(args.seed)));
    }
    for (name, input) in files::cases(&args.files, &ctx.progress)? {
        picked.push((name, input.primitive(), input));
    }
    let names: Vec<String> = match &ctx.backend {
        Some(b) => vec![b.clone()],
        None => trident::compiled_backends()
            .into_iter()
            .map(String::from)
            .collect(),
    };
    let mut backends = Vec::new();
    let mut unavailable = Vec::new();
    for n in names {
        match trident::backend_by_name(&n) {
            Ok(b) => backends.push((n, b)),
            Err(e) if ctx.backend.is_some() => {
                return Err(Fail::Failed(format!("backend {n}: {e}")));
            }
            Err(e) => unavailable.push(json!({"backend": n, "reason": e.to_string()})),
        }
    }
    let bar = ctx
        .progress
        .bar((picked.len() * backends.len()) as u64, "bench", false);
    let mut rows = Vec::new();
    let mut skipped_peers = Vec::new();
    for (case, primitive, input) in &picked {
        for (bname, b) in &backends {
            bar.set_message(format!("{case} on {bname}"));
            let mut times = Vec::new();
            let mut note = String::new();
            for i in 0..=args.repeat {
                let t = Instant::now();
                let r = check::produce(b.as_ref(), input);
                let s = t.elapsed().as_secs_f64();
                match r {
                    Ok(_) if i > 0 => times.push(s),
                    Ok(_) => {}
                    Err(e) => {
                        note = e.to_string();
                        break;
                    }
                }
            }
            rows.push(Timing {
                case: case.clone(),
                primitive,
                backend: bname.clone(),
                kind: "backend",
                median_s: (!times.is_empty()).then(|| timing::median(times)),
                note,
                ratio: None,
            });
            bar.inc(1);
        }
        let mut peer_rows = Vec::new();
        if !args.no_peers {
            bar.set_message(format!("{case} on its Rust peer"));
            match peers::rust(input, args.repeat) {
                Some(p) => peer_rows.push(p),
                None => skipped_peers.push(json!({"case": case, "peer": "rust",
                    "reason": format!("no in-process peer for {primitive} (the Python peers: --py-peers benches/peers.py)")})),
            }
        }
        if let Some(script) = &args.py_peers {
            bar.set_message(format!("{case} on the Python peers"));
            match peers::python(script, case, input, args.repeat) {
                Ok(found) if found.is_empty() => skipped_peers.push(
                    json!({"case": case, "peer": "python", "reason": "peers.py has no peer for this case"}),
                ),
                Ok(found) => peer_rows.extend(found),
                Err(reason) => {
                    skipped_peers.push(json!({"case": case, "peer": "python", "reason": reason}))
                }
            }
        }
        rows.extend(peer_rows.into_iter().map(|p| Timing {
            case: case.clone(),
            primitive,
            backend: p.peer,
            kind: "peer",
            median_s: p.median_s,
            note: p.note,
            ratio: None,
        }));
    }
    bar.finish_and_clear();
    set_ratios(&mut rows);
    let machine = plot::machine(&backends);
    if let Some(p) = &args.plot {
        plot::draw(p, &rows, &machine)?;
    }
    let mut text = format!(
        "{:<28} {:<14} {:<24} {:>12} {:>10}  note\n",
        "case", "primitive", "backend / peer", "median", "/ peer"
    );
    for r in &rows {
        let t = r
            .median_s
            .map_or("-".to_string(), |s| format!("{:.3} ms", s * 1e3));
        let ratio = r.ratio.map_or("-".to_string(), |x| format!("{x:.2}x"));
        text.push_str(&format!(
            "{:<28} {:<14} {:<24} {:>12} {:>10}  {}\n",
            r.case,
            r.primitive,
            label(r),
            t,
            ratio,
            r.note
        ));
    }
    for s in &skipped_peers {
        let (case, reason) = (s["case"].as_str(), s["reason"].as_str());
        text.push_str(&format!(
            "{}: no {} peer: {}\n",
            case.unwrap_or(""),
            s["peer"].as_str().unwrap_or(""),
            reason.unwrap_or("")
        ));
    }
    let json_rows: Vec<_> = rows
        .iter()
        .map(|r| json!({"case": r.case, "primitive": r.primitive, "backend": r.backend, "kind": r.kind, "median_s": r.median_s, "ratio_to_best_peer": r.ratio, "note": r.note}))
        .collect();
    text.push_str(&format!(
        "/ peer: median over the fastest peer's on the case; {machine}\n"
    ));
    Ok(Outcome {
        text,
        json: json!({"ok": true, "seed": args.seed, "repeat": args.repeat, "machine": machine, "rows": json_rows, "unavailable": unavailable,
            "skipped_peers": skipped_peers, "plot": args.plot.as_ref().map(|p| p.display().to_string())}),
        ok: true,
    })
}

/// A row's name in the table and the plot's legend: peers are marked as such.
fn label(r: &Timing) -> String {
    match r.kind {
        "peer" => format!("{} (peer)", r.backend),
        _ => r.backend.clone(),
    }
}

/// Each timed row's median over the fastest peer's on its case (none where
/// the case has no timed peer).
fn set_ratios(rows: &mut [Timing]) {
    let best = |case: &str, rows: &[Timing]| {
        rows.iter()
            .filter(|r| r.case == case && r.kind == "peer")
            .filter_map(|r| r.median_s)
            .filter(|&t| t > 0.0)
            .min_by(f64::total_cmp)
    };
    for i in 0..rows.len() {
        let b = best(&rows[i].case, rows);
        rows[i].ratio = rows[i].median_s.zip(b).map(|(t, b)| t / b);
    }
}
