//! `trident bench --case NAME... [--plot out.svg] [--repeat N] [--py-peers
//! benches/peers.py]`: a small benchmark over named verify cases
//! (`trident_testkit::cases`), every backend here (or `--backend`) and the
//! peers of [`super::peers`] on the same input in the same run, the median
//! of N timed runs after one warm-up.
//!
//! This is deliberately smaller than `cargo bench -p trident-benches`
//! (criterion, GPU peers such as cuBLAS): that package is a workspace tool
//! not meant for publishing, so the CLI does not depend on it. The table here
//! times the same calls verify checks, on the same generated inputs.

use std::path::PathBuf;
use std::time::Instant;

use plotters::prelude::*;
use serde_json::json;
use trident_testkit::cases;
use trident_testkit::check;

use super::peers;
use crate::fail::{CliResult, Fail};
use crate::io::output::Output;
use crate::{Ctx, Outcome};

/// `trident bench` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Verify case names (e.g. from `trident verify` output); at least one.
    #[arg(long, required = true, num_args = 1..)]
    case: Vec<String>,
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
}

/// Runs the cases, prints the table, draws the plot.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    if let Some(p) = &args.plot {
        crate::io::output_format("bench", "--plot", p, &[("svg", ())])?;
    }
    if args.repeat == 0 {
        return Err(Fail::Usage("--repeat must be at least 1".into()));
    }
    let mut picked = Vec::new();
    for name in &args.case {
        let c =
            cases::find_case(name).ok_or_else(|| Fail::Usage(format!("no case named {name:?}")))?;
        picked.push(c);
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
    for c in &picked {
        let input = c.input(args.seed);
        for (bname, b) in &backends {
            bar.set_message(format!("{} on {bname}", c.name));
            let mut times = Vec::new();
            let mut note = String::new();
            for i in 0..=args.repeat {
                let t = Instant::now();
                let r = check::produce(b.as_ref(), &input);
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
            times.sort_by(f64::total_cmp);
            rows.push(Timing {
                case: c.name.clone(),
                primitive: c.primitive,
                backend: bname.clone(),
                kind: "backend",
                median_s: times.get(times.len() / 2).copied(),
                note,
            });
            bar.inc(1);
        }
        let mut peer_rows = Vec::new();
        if !args.no_peers {
            bar.set_message(format!("{} on its Rust peer", c.name));
            match peers::rust(&input, args.repeat) {
                Some(p) => peer_rows.push(p),
                None => skipped_peers.push(json!({"case": c.name, "peer": "rust",
                    "reason": format!("no in-process peer for {} (the Python peers: --py-peers benches/peers.py)", c.primitive)})),
            }
        }
        if let Some(script) = &args.py_peers {
            bar.set_message(format!("{} on the Python peers", c.name));
            match peers::python(script, &c.name, &input, args.repeat) {
                Ok(found) if found.is_empty() => skipped_peers.push(
                    json!({"case": c.name, "peer": "python", "reason": "peers.py has no peer for this case"}),
                ),
                Ok(found) => peer_rows.extend(found),
                Err(reason) => {
                    skipped_peers.push(json!({"case": c.name, "peer": "python", "reason": reason}))
                }
            }
        }
        rows.extend(peer_rows.into_iter().map(|p| Timing {
            case: c.name.clone(),
            primitive: c.primitive,
            backend: p.peer,
            kind: "peer",
            median_s: p.median_s,
            note: p.note,
        }));
    }
    bar.finish_and_clear();
    if let Some(p) = &args.plot {
        plot(p, &rows)?;
    }
    let mut text = format!(
        "{:<28} {:<14} {:<24} {:>12}  note\n",
        "case", "primitive", "backend / peer", "median"
    );
    for r in &rows {
        let t = r
            .median_s
            .map_or("-".to_string(), |s| format!("{:.3} ms", s * 1e3));
        text.push_str(&format!(
            "{:<28} {:<14} {:<24} {:>12}  {}\n",
            r.case,
            r.primitive,
            label(r),
            t,
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
        .map(|r| json!({"case": r.case, "primitive": r.primitive, "backend": r.backend, "kind": r.kind, "median_s": r.median_s, "note": r.note}))
        .collect();
    Ok(Outcome {
        text,
        json: json!({"ok": true, "seed": args.seed, "repeat": args.repeat, "rows": json_rows, "unavailable": unavailable,
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

/// One bar per (case, backend or peer), coloured by backend or peer,
/// log-scale milliseconds.
fn plot(path: &std::path::Path, rows: &[Timing]) -> CliResult<()> {
    let mut svg = String::new();
    let draw = |svg: &mut String| -> Result<(), Box<dyn std::error::Error>> {
        let timed: Vec<&Timing> = rows.iter().filter(|r| r.median_s.is_some()).collect();
        let ms: Vec<f64> = timed
            .iter()
            .filter_map(|r| r.median_s)
            .map(|s| (s * 1e3).max(1e-4))
            .collect();
        let (lo, hi) = ms
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        let (lo, hi) = if ms.is_empty() {
            (1e-3, 1.0)
        } else {
            (lo / 2.0, hi * 2.0)
        };
        let root = SVGBackend::with_string(svg, (960, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "trident bench: backends and peers, median time per call",
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..timed.len().max(1) as f64, (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("ms (log)")
            .draw()?;
        let labels: Vec<String> = timed.iter().map(|r| label(r)).collect();
        let mut backends: Vec<&str> = labels.iter().map(String::as_str).collect();
        backends.sort();
        backends.dedup();
        for (bi, b) in backends.iter().enumerate() {
            let color = Palette99::pick(bi).to_rgba();
            let bars: Vec<(usize, f64)> = labels
                .iter()
                .zip(&ms)
                .enumerate()
                .filter(|(_, (l, _))| l.as_str() == *b)
                .map(|(i, (_, &v))| (i, v))
                .collect();
            chart
                .draw_series(bars.iter().map(|&(i, v)| {
                    Rectangle::new([(i as f64 + 0.1, lo), (i as f64 + 0.9, v)], color.filled())
                }))?
                .label(*b)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        for (i, r) in timed.iter().enumerate() {
            chart.draw_series(std::iter::once(Text::new(
                r.case.clone(),
                (i as f64 + 0.15, lo * 1.05),
                ("sans-serif", 11)
                    .into_font()
                    .transform(FontTransform::Rotate270),
            )))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw(&mut svg)
        .map_err(|e| Fail::Failed(format!("{}: cannot draw the plot: {e}", path.display())))?;
    Output::create(path)?.write_all_and_commit(svg.as_bytes())
}
