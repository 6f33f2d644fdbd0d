//! The verify runner behind `trident verify` and `cargo xtask verify`.
//!
//! For every selected case (see [`crate::cases`]) it:
//! 1. asks the reference for the answer ([`Input::expected`], f64 inside) and
//!    **certifies** that answer with `trident_reference::certify` (naive loops,
//!    brute force, optimality conditions, flow feasibility;
//!    [`Input::certify`]): the reference is never trusted on its own word;
//! 2. runs each other backend on the same input ([`Input::produce`]) and
//!    compares it with the reference under the contract's tolerances
//!    ([`Input::compare`]).
//!
//! Each of those steps is the input's own [`crate::problem::Problem`]
//! implementation, in its primitive's folder; nothing here knows a primitive.
//!
//! The result is a [`Report`]: one [`Row`] per (primitive, backend) with the
//! cases passed, failed and skipped, the worst error as a multiple of its
//! tolerance, and the time spent in that backend's calls. A backend that cannot
//! run here is listed as unavailable, which is a failure only when it was
//! asked for by name ([`Options::required`]).
//!
//! Certificates are naive on purpose, so on the large nearest-neighbour cases
//! (where brute force over |A| x |B| would take minutes) they check a fixed
//! sample of queries and skip the closest-pairs certificate; the row's note
//! says so ([`CERT_SAMPLE`], [`CERT_FULL_PAIRS`]).

use std::fmt::Write as _;
use std::time::Instant;

use trident_core::Primitives;
use trident_reference::ReferenceBackend;

use crate::cases::{self, Case, Input, Size};
use crate::check::{self, Expected};

pub use crate::registry::{CERT_FULL_PAIRS, CERT_SAMPLE};

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Small (CI) or large cases.
    pub size: Size,
    /// Base seed of the generators.
    pub seed: u64,
    /// Only this primitive (one of [`trident_core::PRIMITIVES`]).
    pub primitive: Option<String>,
    /// Only the case of this name (any size, or a benchmark case).
    pub case: Option<String>,
    /// Backends named by the user: their unavailability is a failure.
    pub required: Vec<String>,
}

/// One backend as the caller found it: constructed, or why not.
pub struct Candidate {
    /// The backend's name (`"rayon"`, `"cuda"`, ...).
    pub name: String,
    /// The backend, or why it cannot run here.
    pub backend: std::result::Result<Box<dyn Primitives>, String>,
}

/// One (primitive, backend) line of the table.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Primitive name.
    pub primitive: String,
    /// Backend name; `"reference"` rows are judged by certificates.
    pub backend: String,
    /// Cases run.
    pub cases: usize,
    /// Cases that passed.
    pub passed: usize,
    /// Cases answered `Unsupported`.
    pub skipped: usize,
    /// Failure messages, one per failed case.
    pub failures: Vec<String>,
    /// Worst error / tolerance over the cases that ran (`<= 1` passes).
    pub worst: f64,
    /// Seconds spent in this backend's calls.
    pub secs: f64,
    /// Remarks (sampled certificates, skip reasons).
    pub notes: Vec<String>,
}

impl Row {
    fn status(&self) -> &'static str {
        if !self.failures.is_empty() {
            "FAIL"
        } else if self.passed == 0 && self.skipped > 0 {
            "skipped"
        } else if self.skipped > 0 {
            "pass (some skipped)"
        } else {
            "pass"
        }
    }
}

/// Everything a verify run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Base seed used.
    pub seed: u64,
    /// Size run.
    pub size: Size,
    /// One row per (primitive, backend), in run order.
    pub rows: Vec<Row>,
    /// Backends that could not run: name, reason, and whether that is a failure.
    pub unavailable: Vec<(String, String, bool)>,
    /// Problems outside any row (an unknown case name, ...).
    pub errors: Vec<String>,
}

impl Report {
    /// `true` when nothing failed: no row failed, no required backend was
    /// unavailable, no run error.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
            && self.rows.iter().all(|r| r.failures.is_empty())
            && self.unavailable.iter().all(|(_, _, required)| !required)
    }

    /// The row of `primitive` on `backend`, if it ran.
    pub fn row(&self, primitive: &str, backend: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.primitive == primitive && r.backend == backend)
    }

    /// The table, then failures and notes: what `trident verify` prints.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "trident verify: size {}, seed {:#x}",
            self.size, self.seed
        );
        let _ = writeln!(
            s,
            "{:<14} {:<10} {:>5} {:>6} {:>6} {:>7} {:>13} {:>9}  status",
            "primitive", "backend", "cases", "passed", "failed", "skipped", "worst err/tol", "time"
        );
        for r in &self.rows {
            let worst = if r.passed + r.failures.len() == 0 {
                "-".to_string()
            } else {
                format!("{:.3}", r.worst)
            };
            let _ = writeln!(
                s,
                "{:<14} {:<10} {:>5} {:>6} {:>6} {:>7} {:>13} {:>8.2}s  {}",
                r.primitive,
                r.backend,
                r.cases,
                r.passed,
                r.failures.len(),
                r.skipped,
                worst,
                r.secs,
                r.status()
            );
        }
        for (name, why, required) in &self.unavailable {
            let what = if *required {
                "FAIL: required but unavailable"
            } else {
                "unavailable"
            };
            let _ = writeln!(s, "{name:<14} {what}: {why}");
        }
        for r in &self.rows {
            for f in &r.failures {
                let _ = writeln!(s, "FAIL {} on {}: {f}", r.primitive, r.backend);
            }
            for n in &r.notes {
                let _ = writeln!(s, "note {} on {}: {n}", r.primitive, r.backend);
            }
        }
        for e in &self.errors {
            let _ = writeln!(s, "ERROR: {e}");
        }
        let _ = writeln!(
            s,
            "{}",
            if self.ok() {
                "verify: PASS"
            } else {
                "verify: FAIL"
            }
        );
        s
    }
}

/// Runs the selected cases on `backends` (the reference is always run and
/// certified; a `"reference"` entry in `backends` is ignored), printing one
/// progress line per case to `progress`.
pub fn run(opts: &Options, backends: Vec<Candidate>, progress: &mut dyn std::io::Write) -> Report {
    let mut report = Report {
        seed: opts.seed,
        size: opts.size,
        ..Report::default()
    };
    let mut ready: Vec<(String, Box<dyn Primitives>)> = Vec::new();
    for c in backends {
        if c.name == trident_core::BackendKind::Reference.name() {
            continue;
        }
        match c.backend {
            Ok(b) => ready.push((c.name, b)),
            Err(why) => {
                let required = opts.required.contains(&c.name);
                report.unavailable.push((c.name, why, required));
            }
        }
    }
    let selected = match select(opts) {
        Ok(v) => v,
        Err(e) => {
            report.errors.push(e);
            return report;
        }
    };
    for primitive in trident_core::PRIMITIVES {
        let cases: Vec<&Case> = selected
            .iter()
            .filter(|c| c.primitive == primitive)
            .collect();
        if cases.is_empty() {
            continue;
        }
        let mut rows: Vec<Row> = std::iter::once("reference")
            .chain(ready.iter().map(|(n, _)| n.as_str()))
            .map(|b| Row {
                primitive: primitive.to_string(),
                backend: b.to_string(),
                ..Row::default()
            })
            .collect();
        for case in cases {
            let input = case.input(opts.seed);
            let _ = writeln!(
                progress,
                "verify: {primitive} {} ({})",
                case.name,
                input.describe()
            );
            let t = Instant::now();
            let expected = input.expected(&ReferenceBackend);
            let ref_secs = t.elapsed().as_secs_f64();
            let ref_row = &mut rows[0];
            ref_row.cases += 1;
            ref_row.secs += ref_secs;
            let expected = match expected {
                Ok(e) => e,
                Err(e) if check::is_unsupported(&e) => {
                    ref_row.skipped += 1;
                    ref_row.notes.push(format!("{}: {e}", case.name));
                    continue;
                }
                Err(e) => {
                    ref_row
                        .failures
                        .push(format!("{}: error on valid input: {e}", case.name));
                    continue;
                }
            };
            match input.certify(&expected) {
                Ok((worst, note)) => {
                    ref_row.passed += 1;
                    ref_row.worst = ref_row.worst.max(worst);
                    if let Some(n) = note {
                        ref_row.notes.push(format!("{}: {n}", case.name));
                    }
                }
                Err(why) => ref_row.failures.push(format!(
                    "{}: certificate rejects the reference's answer: {why}",
                    case.name
                )),
            }
            for (row, (_, backend)) in rows[1..].iter_mut().zip(&ready) {
                run_backend(row, backend.as_ref(), case, &input, &expected, opts.seed);
            }
        }
        report.rows.extend(rows);
    }
    report
}

fn run_backend(
    row: &mut Row,
    backend: &dyn Primitives,
    case: &Case,
    input: &Input,
    expected: &Expected,
    seed: u64,
) {
    row.cases += 1;
    let t = Instant::now();
    let got = input.produce(backend);
    row.secs += t.elapsed().as_secs_f64();
    let repro = || {
        format!(
            "repro: trident verify --backend {} --case {} --seed {seed:#x}",
            row.backend, case.name
        )
    };
    match got {
        Err(e) if check::is_unsupported(&e) => {
            row.skipped += 1;
            // One note per distinct reason, not one per case.
            let note = format!("skipped: {e}");
            if !row.notes.contains(&note) {
                row.notes.push(note);
            }
        }
        Err(e) => {
            let msg = format!("{}: error on valid input: {e}; {}", case.name, repro());
            row.failures.push(msg);
        }
        Ok(got) => {
            let v = input.compare(expected, &got);
            row.worst = row.worst.max(v.ratio);
            if v.passed() {
                row.passed += 1;
            } else {
                let msg = format!("{}: {}; {}", case.name, v.summary(), repro());
                row.failures.push(msg);
            }
        }
    }
}

/// The cases `opts` selects.
fn select(opts: &Options) -> std::result::Result<Vec<Case>, String> {
    if let Some(p) = &opts.primitive
        && trident_core::Primitive::from_name(p).is_none()
    {
        return Err(format!(
            "unknown primitive {p:?}; expected one of {:?}",
            trident_core::PRIMITIVES
        ));
    }
    let mut v = match &opts.case {
        Some(name) => {
            vec![cases::find_case(name).ok_or_else(|| format!("no case named {name:?}"))?]
        }
        None => cases::all_cases(opts.size),
    };
    if let Some(p) = &opts.primitive {
        v.retain(|c| c.primitive == p);
    }
    Ok(v)
}

/// Certifies the reference's answer on `input` with the independent checks of
/// `trident_reference::certify`, run in f64 on the widened input (the answer
/// was computed there). `Ok((worst ratio, note))`. The same as
/// [`Input::certify`].
pub fn certify_expected(
    input: &Input,
    expected: &Expected,
) -> std::result::Result<(f64, Option<String>), String> {
    input.certify(expected)
}

/// Runs the selected cases sharded across the ranks of `sharded`'s cluster
/// ([`Input::produce_sharded`]), on every rank, in the same order. Rank 0
/// judges: the gathered answer against the reference under the contract's
/// tolerances, and, where the contract asks it ([`Input::sharded_exact`]),
/// against `backend` alone on one device bit for bit. The other ranks
/// return a report without rows. `name` labels the rows (`"cuda x2"`).
#[cfg(feature = "dist")]
pub fn run_distributed(
    opts: &Options,
    sharded: &trident_dist::Sharded<'_>,
    name: &str,
    progress: &mut dyn std::io::Write,
) -> Report {
    let judge = sharded.cluster().rank() == 0;
    let mut report = Report {
        seed: opts.seed,
        size: opts.size,
        ..Report::default()
    };
    let selected = match select(opts) {
        Ok(v) => v,
        Err(e) => {
            report.errors.push(e);
            return report;
        }
    };
    for primitive in trident_core::PRIMITIVES {
        let cases: Vec<&Case> = selected
            .iter()
            .filter(|c| c.primitive == primitive)
            .collect();
        if cases.is_empty() {
            continue;
        }
        let mut row = Row {
            primitive: primitive.to_string(),
            backend: name.to_string(),
            ..Row::default()
        };
        for case in cases {
            let input = case.input(opts.seed);
            if judge {
                let _ = writeln!(
                    progress,
                    "verify: {primitive} {} ({})",
                    case.name,
                    input.describe()
                );
            }
            row.cases += 1;
            let t = Instant::now();
            let got = input.produce_sharded(sharded);
            row.secs += t.elapsed().as_secs_f64();
            let got = match got {
                None => {
                    row.skipped += 1;
                    let note = format!(
                        "skipped: no sharded form for this {primitive} input (one device only)"
                    );
                    if !row.notes.contains(&note) {
                        row.notes.push(note);
                    }
                    continue;
                }
                Some(Err(e)) if check::is_unsupported(&e) => {
                    row.skipped += 1;
                    let note = format!("skipped: {e}");
                    if !row.notes.contains(&note) {
                        row.notes.push(note);
                    }
                    continue;
                }
                Some(Err(e)) => {
                    row.failures
                        .push(format!("{}: error on valid input: {e}", case.name));
                    continue;
                }
                Some(Ok(got)) => got,
            };
            if !judge {
                row.passed += 1;
                continue;
            }
            let verdict = input
                .expected(&ReferenceBackend)
                .map(|e| input.compare(&e, &got));
            let alone = input.produce(sharded.backend());
            match (verdict, alone) {
                (Err(e), _) => row
                    .failures
                    .push(format!("{}: the reference failed: {e}", case.name)),
                (_, Err(e)) => row
                    .failures
                    .push(format!("{}: one device failed: {e}", case.name)),
                (Ok(v), Ok(alone)) => {
                    row.worst = row.worst.max(v.ratio);
                    if !v.passed() {
                        row.failures.push(format!("{}: {}", case.name, v.summary()));
                    } else if input.sharded_exact() && !identical(&alone, &got) {
                        row.failures.push(format!(
                            "{}: within tolerance but not bit-identical to one device, as the contract asks for row partitions",
                            case.name
                        ));
                    } else {
                        row.passed += 1;
                        if !input.sharded_exact() && !identical(&alone, &got) {
                            let note = "within tolerance of one device, not bit-identical (allowed: another blocking per row block)".to_string();
                            if !row.notes.contains(&note) {
                                row.notes.push(note);
                            }
                        }
                    }
                }
            }
        }
        report.rows.push(row);
    }
    report
}

/// Equal answers, NaN included: `==` first, then the printed forms (Rust
/// prints every float in its shortest round-trip form, so equal text is equal
/// values, and a NaN equals a NaN).
#[cfg(feature = "dist")]
fn identical(a: &crate::problem::Produced, b: &crate::problem::Produced) -> bool {
    a == b || format!("{a:?}") == format!("{b:?}")
}
