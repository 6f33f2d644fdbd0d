//! `trident verify`: the CLI face of `trident_testkit::verify` (which `cargo
//! xtask verify` runs too). A bad name or seed is a usage error (exit 2), a
//! failed verification exit 1.

use std::io::Write;

use serde_json::json;
use trident_testkit::cases::{self, Size};
use trident_testkit::verify::{self, Candidate, Options};

use crate::fail::{CliResult, Fail};
use crate::{Ctx, Outcome};

/// `trident verify` flags (`--backend` is the global one: that backend is
/// required, and its unavailability is a failure).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this primitive: dense_gemm, sparse_gemm, nearest_pairs, sparse_coder, max_flow.
    #[arg(long)]
    primitive: Option<String>,
    /// Only the case of this name (any size).
    #[arg(long)]
    case: Option<String>,
    /// Case sizes: small (CI) or large.
    #[arg(long, default_value = "small")]
    size: String,
    /// Base seed of the generators, decimal or 0x hex (default: $TRIDENT_SEED, else fixed).
    #[arg(long)]
    seed: Option<String>,
    /// Run every case sharded across the ranks this process was launched
    /// with (`mpirun -n 4 trident verify --distributed`; torchrun and srun
    /// too) and check it against one device and the reference. Needs a build
    /// with the `dist` feature and a transport (`mpi`, `nccl`).
    #[arg(long)]
    distributed: bool,
}

/// Checks the arguments, runs verify and reports the table.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    let seed = match &args.seed {
        Some(v) => trident_testkit::parse_seed(v)
            .ok_or_else(|| Fail::Usage(format!("--seed {v:?} is not a u64 (decimal or 0x hex)")))?,
        None => seed_from_env()?,
    };
    let size: Size = args
        .size
        .parse()
        .map_err(|e: trident::Error| Fail::Usage(e.to_string()))?;
    if let Some(p) = &args.primitive
        && !trident::PRIMITIVES.contains(&p.as_str())
    {
        return Err(Fail::Usage(format!(
            "unknown primitive {p:?}; expected one of {:?}",
            trident::PRIMITIVES
        )));
    }
    let total = match &args.case {
        Some(name) => match cases::find_case(name) {
            Some(c) if args.primitive.as_deref().is_none_or(|p| p == c.primitive) => 1,
            Some(_) => 0,
            None => {
                return Err(Fail::Usage(format!(
                    "no case named {name:?} (see the names in `trident verify` output)"
                )));
            }
        },
        None => cases::all_cases(size)
            .iter()
            .filter(|c| args.primitive.as_deref().is_none_or(|p| p == c.primitive))
            .count(),
    };
    let mut opts = Options {
        seed,
        size,
        primitive: args.primitive,
        case: args.case,
        ..Options::default()
    };
    if args.distributed {
        return distributed(ctx, &opts);
    }
    let names: Vec<String> = match &ctx.backend {
        Some(b) => {
            opts.required.push(b.clone());
            vec![b.clone()]
        }
        None => trident::compiled_backends()
            .into_iter()
            .map(String::from)
            .collect(),
    };
    let candidates = names
        .into_iter()
        .map(|name| {
            let backend = trident::backend_by_name(&name).map_err(|e| e.to_string());
            if let Ok(b) = &backend {
                eprintln!("verify: backend {name}: {}", b.describe());
            }
            Candidate { name, backend }
        })
        .collect();
    let bar = ctx.progress.bar(total as u64, "verify", false);
    let mut lines = CaseLines {
        bar: bar.clone(),
        visible: ctx.progress.enabled(),
        pending: Vec::new(),
    };
    let report = verify::run(&opts, candidates, &mut lines);
    bar.finish_and_clear();
    Ok(outcome(&report))
}

/// The report as text and JSON, and whether it passed.
fn outcome(report: &verify::Report) -> Outcome {
    let rows: Vec<_> = report
        .rows
        .iter()
        .map(|r| {
            json!({
                "primitive": r.primitive, "backend": r.backend, "cases": r.cases,
                "passed": r.passed, "failed": r.failures.len(), "skipped": r.skipped,
                "worst_err_over_tol": r.worst, "seconds": r.secs,
                "failures": r.failures, "notes": r.notes,
            })
        })
        .collect();
    let unavailable: Vec<_> = report
        .unavailable
        .iter()
        .map(|(n, why, req)| json!({ "backend": n, "reason": why, "required": req }))
        .collect();
    Outcome {
        text: report.table(),
        json: json!({
            "ok": report.ok(), "seed": report.seed, "size": report.size.to_string(),
            "rows": rows, "unavailable": unavailable, "errors": report.errors,
        }),
        ok: report.ok(),
    }
}

/// `--distributed`: every case sharded across the launched ranks, judged
/// on rank 0 (the others report only their own errors).
#[cfg(feature = "dist")]
fn distributed(ctx: &Ctx, opts: &Options) -> CliResult<Outcome> {
    use trident::dist::{Cluster, Sharded};
    let cluster = Cluster::from_env().map_err(|e| Fail::Failed(format!("cluster: {e}")))?;
    let device = cluster.gpu().unwrap_or(cluster.local_rank());
    let backend: Box<dyn trident::Primitives> = match &ctx.backend {
        Some(name) => {
            let kind = trident::BackendKind::from_name(name)
                .ok_or_else(|| Fail::Usage(format!("unknown backend {name:?}")))?;
            cluster
                .require(trident::backend_on(kind, device))
                .map_err(|e| Fail::Failed(format!("backend {name}: {e}")))?
        }
        None => Box::new(trident::Trident::on_device(device)),
    };
    let name = format!("{} x{}", backend.name(), cluster.size());
    if cluster.rank() == 0 {
        eprintln!(
            "verify: distributed, {}; backend {}",
            cluster.describe(),
            backend.describe()
        );
    }
    let sharded = Sharded::new(&cluster, backend.as_ref()).check_replicas(true);
    let mut lines = CaseLines {
        bar: indicatif::ProgressBar::hidden(),
        visible: false,
        pending: Vec::new(),
    };
    let report = verify::run_distributed(opts, &sharded, &name, &mut lines);
    let mut out = outcome(&report);
    if cluster.rank() != 0 {
        out.text = format!(
            "verify: rank {} of {} done\n",
            cluster.rank(),
            cluster.size()
        );
    }
    Ok(out)
}

#[cfg(not(feature = "dist"))]
fn distributed(_ctx: &Ctx, _opts: &Options) -> CliResult<Outcome> {
    Err(Fail::Usage(
        "--distributed needs a build with the `dist` feature and a transport: \
         cargo build -p trident-cli --features mpi (or nccl)"
            .into(),
    ))
}

/// `TRIDENT_SEED`, checked: a value that is not a u64 is a usage error, not a panic.
fn seed_from_env() -> CliResult<u64> {
    let name = trident_testkit::SEED_ENV;
    match std::env::var_os(name) {
        None => Ok(trident_testkit::DEFAULT_SEED),
        Some(v) => v
            .to_str()
            .and_then(trident_testkit::parse_seed)
            .ok_or_else(|| Fail::Usage(format!("{name}={v:?} is not a u64 (decimal or 0x hex)"))),
    }
}

/// The runner's one-line-per-case progress: a bar step per case on a
/// terminal, the lines themselves on stderr otherwise (CI logs keep them).
struct CaseLines {
    bar: indicatif::ProgressBar,
    visible: bool,
    pending: Vec<u8>,
}

impl Write for CaseLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=i).collect();
            let line = String::from_utf8_lossy(&line).trim_end().to_string();
            if self.visible {
                self.bar.set_message(line);
                self.bar.inc(1);
            } else {
                eprintln!("{line}");
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
