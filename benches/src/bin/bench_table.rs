//! Times the benchmark cases on the chosen backends and prints a markdown
//! table in the contract's units, optionally next to peer libraries run on the same
//! inputs. A plain binary (no criterion, no cargo needed at run time): copy
//! `target/release/bench_table` to the machine to measure.
//!
//! ```text
//! # 1. write every case's input for the peers (TRIDENT-CASE files, ~2 GB)
//! cargo run --release -p trident-benches --bin bench_table -- --write-inputs bench-data/
//! # 2. time the peers on those files (results as TSV on stdout, table on stderr)
//! python3 benches/peers.py bench-data/ > bench-data/peers.tsv
//! # 3. time ours and print the table with the peers' columns
//! cargo run --release -p trident-benches --bin bench_table -- --peers bench-data/peers.tsv
//! ```
//!
//! Options (lists may be repeated or comma-separated):
//! - `--case NAME`: only these benchmark cases (default: all of them).
//! - `--backend NAME`: `rayon`, `cuda`, `wgpu`, `reference` (default: every
//!   compiled-in backend but the reference, which is slow; with it, the
//!   cases it would need more than ~30 s per call for run as named smaller
//!   stand-ins, e.g. `omp-64x256-k16/10K`, and get no peer columns).
//! - `--reps N`: timed calls per case after one untimed warm-up (default 5);
//!   the table shows their median and range.
//! - `--peers FILE`: the results file of `benches/peers.py` (several peers per
//!   case give one row each, ours repeated).
//! - `--no-kiddo`: skip the in-process Rust peer of the pairs cases (kiddo,
//!   timed like ours and shown as one more peer row; on by default).
//! - `--write-inputs DIR`: write `DIR/<case>.case` for the selected cases and
//!   exit (format in `trident_testkit::cases::io`).
//!
//! Inputs come from `TRIDENT_SEED` (default: testkit's fixed seed), so
//! `--write-inputs` and a later timing run see the same bytes. A backend that
//! answers `Unsupported` for a primitive gets an `unsupported` row; any other
//! error gets an `error` row; neither stops the run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use trident::{Error, Primitives};
use trident_benches::kiddo_peer;
use trident_benches::{
    Work, Workload, available_backends, cannot_run, format_secs, reference_stand_in, runner,
    select_cases, si, sig3,
};
use trident_testkit::cases::{Case, PairsCase, io};
use trident_testkit::peers::{self, PeerResult};

const USAGE: &str = "usage: bench_table [--case NAME]... [--backend NAME]... [--reps N] \
                     [--peers FILE] [--no-kiddo] [--write-inputs DIR]";

struct Args {
    cases: Vec<String>,
    backends: Vec<String>,
    reps: usize,
    peers: Option<PathBuf>,
    write_inputs: Option<PathBuf>,
    kiddo: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        cases: Vec::new(),
        backends: Vec::new(),
        reps: 5,
        peers: None,
        write_inputs: None,
        kiddo: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        if flag == "--no-kiddo" {
            a.kiddo = false;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let list = || value.split(',').filter(|s| !s.is_empty()).map(String::from);
        match flag.as_str() {
            "--case" => a.cases.extend(list()),
            "--backend" => a.backends.extend(list()),
            "--reps" => {
                a.reps = value
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--reps {value:?}: expected a positive integer"))?
            }
            "--peers" => a.peers = Some(value.into()),
            "--write-inputs" => a.write_inputs = Some(value.into()),
            _ => return Err(format!("unknown option {flag:?}")),
        }
    }
    if a.backends.is_empty() {
        a.backends = trident::compiled_backends()
            .into_iter()
            .filter(|&b| b != "reference")
            .map(String::from)
            .collect();
    }
    Ok(a)
}

/// A measured row: sorted call times in seconds and the output's check number.
struct Timed {
    secs: Vec<f64>,
    check: Option<f64>,
}

/// One untimed warm-up call (its output gives the check number), then `reps`
/// timed calls; outputs are dropped outside the clock. `Err` says why the
/// row has no time (`unsupported: ...` or `error: ...`).
fn measure(backend: &dyn Primitives, w: &Workload, reps: usize) -> Result<Timed, String> {
    let why = |e: Error| match e {
        Error::Unsupported(why) => format!("unsupported: {why}"),
        e => format!("error: {e}"),
    };
    let mut run = runner(backend, &w.input);
    let check = run().map_err(why)?.check();
    let mut secs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        let out = run();
        secs.push(t.elapsed().as_secs_f64());
        out.map_err(why)?;
    }
    secs.sort_by(f64::total_cmp);
    Ok(Timed { secs, check })
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// `=` when both sides' check numbers agree (1e-5 relative: the pairs' `d2`
/// is f32 on our side, f64 in SciPy), both numbers otherwise.
fn compare_checks(ours: Option<f64>, peer: Option<f64>) -> String {
    match (ours, peer) {
        (Some(o), Some(p)) if (o - p).abs() <= 1e-5 * o.abs().max(p.abs()) => {
            format!("{o} = peer")
        }
        (Some(o), Some(p)) => format!("**{o} vs peer {p}**"),
        (Some(o), None) => o.to_string(),
        (None, _) => String::new(),
    }
}

fn write_inputs(cases: &[Case], dir: &PathBuf, seed: u64) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for case in cases {
        let path = dir.join(format!("{}.case", case.name));
        let t = Instant::now();
        let input = case.input(seed);
        io::write_input(&path, &input).map_err(|e| format!("{}: {e}", path.display()))?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "wrote {} ({}B, {}) in {}",
            path.display(),
            si(bytes as f64),
            input.describe(),
            format_secs(t.elapsed().as_secs_f64())
        );
    }
    Ok(())
}

/// Text safe inside a markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "/").replace('\n', " ")
}

/// Times kiddo on a pairs workload like [`measure`] times ours, as a peer
/// result (`None` for other workloads).
fn kiddo_result(w: &Workload, reps: usize) -> Option<PeerResult> {
    let c = w.input.downcast_ref::<PairsCase>()?;
    let run = || kiddo_peer::closest_pairs(&c.a, &c.b, c.pairs_k);
    eprintln!("  {} on {} ...", w.name, kiddo_peer::NAME);
    let check = match run() {
        Ok(p) => p.last().map(|p| p.d2 as f64),
        Err(e) => {
            eprintln!("  kiddo: {e}");
            return None;
        }
    };
    let mut secs: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            let out = run();
            let s = t.elapsed().as_secs_f64();
            drop(out);
            s
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    Some(PeerResult {
        case: w.case().to_string(),
        peer: kiddo_peer::NAME.to_string(),
        median_s: median(&secs),
        reps,
        check,
        note: format!(
            "in process, {} rayon threads; tree build on B (parallel) + batch nearest_one + the k \
             smallest (range {} - {})",
            rayon_threads(),
            format_secs(secs[0]),
            format_secs(secs[secs.len() - 1])
        ),
    })
}

/// Threads of rayon's global pool (the one kiddo and the default rayon
/// backend run in).
fn rayon_threads() -> usize {
    trident::RayonBackend::new().map_or(0, |b| b.threads())
}

/// Times `w` on `backend` and prints its table row, one per peer result of
/// the same (full-size) case, ours repeated on each.
fn row(backend: &dyn Primitives, w: &Workload, reps: usize, peers: &[PeerResult]) {
    eprintln!("  {} on {} ...", w.name, backend.name());
    let Timed { secs, check } = match measure(backend, w, reps) {
        Ok(t) => t,
        Err(why) => {
            eprintln!("  {} on {}: {why}", w.name, backend.name());
            println!(
                "| {} | {} | {} | | | | | | | |",
                w.name,
                backend.name(),
                cell(&why)
            );
            return;
        }
    };
    let work = Work::of(&w.input);
    let med = median(&secs);
    let peers: Vec<Option<&PeerResult>> = match w.is_stand_in() {
        false if !peers.is_empty() => peers.iter().map(Some).collect(),
        _ => vec![None],
    };
    for peer in peers {
        let peer_cols = match peer {
            Some(p) => format!(
                "{} | {} | {} | {}",
                cell(&p.peer),
                format_secs(p.median_s),
                work.format(p.median_s),
                sig3(p.median_s / med)
            ),
            None => " | | | ".into(),
        };
        println!(
            "| {} | {} | {} | {} - {} | {} | {peer_cols} | {} |",
            w.name,
            backend.name(),
            format_secs(med),
            format_secs(secs[0]),
            format_secs(secs[secs.len() - 1]),
            work.format(med),
            compare_checks(check, peer.and_then(|p| p.check))
        );
    }
}

fn main() -> ExitCode {
    trident_benches::log_from_env();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("bench_table: {e}\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let cases = match select_cases(&args.cases) {
        Ok(c) => c,
        Err(unknown) => {
            let known: Vec<String> = select_cases(&[])
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.name)
                .collect();
            eprintln!(
                "bench_table: unknown case(s) {unknown:?}; the benchmark cases are {known:?}"
            );
            return ExitCode::FAILURE;
        }
    };
    let seed = trident_testkit::seed_from_env();
    if let Some(dir) = &args.write_inputs {
        return match write_inputs(&cases, dir, seed) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench_table: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut peer_results: BTreeMap<String, Vec<PeerResult>> = match &args.peers {
        None => BTreeMap::new(),
        Some(path) => match peers::read(path) {
            Ok(f) => {
                for s in &f.skipped {
                    eprintln!("bench_table: no peer on {}: {}", s.case, s.note);
                }
                f.results.into_iter().fold(BTreeMap::new(), |mut m, r| {
                    m.entry(r.case.clone()).or_insert_with(Vec::new).push(r);
                    m
                })
            }
            Err(e) => {
                eprintln!("bench_table: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let names: Vec<&str> = args.backends.iter().map(String::as_str).collect();
    let backends = available_backends(&names);

    println!(
        "Median of {} timed calls after one warm-up; seed {seed:#x}. \
         `peer / ours` = peer median time / our median time: > 1 means ours is faster.",
        args.reps
    );
    for b in &backends {
        println!("- {}: {}", b.name(), b.describe());
    }
    println!();
    println!(
        "| case | backend | median | min - max | report unit | peer | peer median | peer report unit | peer / ours | check |"
    );
    println!("| --- | --- | --: | --: | --: | --- | --: | --: | --: | --- |");
    for case in &cases {
        let stand_in = reference_stand_in(case);
        // Which backends run which input: the reference runs the stand-in
        // where there is one. A backend that cannot run the primitive at all
        // gets its row now, before any large input is generated.
        let mut on_case = Vec::new();
        let mut on_stand_in = Vec::new();
        for b in &backends {
            if let Some(why) = cannot_run(b.as_ref(), case) {
                eprintln!("  {} on {}: {why}", case.name, b.name());
                let name = match &stand_in {
                    Some(s) if b.name() == "reference" => &s.name,
                    _ => &case.name,
                };
                println!("| {name} | {} | {} | | | | | | | |", b.name(), cell(&why));
            } else if b.name() == "reference" && stand_in.is_some() {
                on_stand_in.push(b.as_ref());
            } else {
                on_case.push(b.as_ref());
            }
        }
        let mut groups = vec![(case.clone(), on_case)];
        groups.extend(stand_in.map(|s| (s, on_stand_in)));
        for (c, runs) in groups.iter().filter(|(_, r)| !r.is_empty()) {
            let t = Instant::now();
            let w = Workload::new(c, seed);
            eprintln!(
                "{}: {} (generated in {})",
                w.name,
                w.input.describe(),
                format_secs(t.elapsed().as_secs_f64())
            );
            if args.kiddo
                && !w.is_stand_in()
                && let Some(k) = kiddo_result(&w, args.reps)
            {
                peer_results.entry(k.case.clone()).or_default().push(k);
            }
            let case_peers = peer_results.get(w.case()).map_or(&[][..], Vec::as_slice);
            for b in runs {
                row(*b, &w, args.reps, case_peers);
            }
        }
    }
    let used: Vec<&PeerResult> = cases
        .iter()
        .filter_map(|c| peer_results.get(&c.name))
        .flatten()
        .collect();
    if !used.is_empty() {
        println!();
        match &args.peers {
            Some(path) => println!("Peers (from {}, and kiddo in process):", path.display()),
            None => println!("Peers (in process):"),
        }
        for p in used {
            println!("- {}: {}, median of {}; {}", p.case, p.peer, p.reps, p.note);
        }
    }
    ExitCode::SUCCESS
}
