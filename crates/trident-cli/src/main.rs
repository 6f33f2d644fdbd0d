//! The `trident` command: every primitive on files, the conformance check
//! (`verify`), which backends run here (`backends`) and a small benchmark
//! (`bench`). See `trident --help`; the exit codes are in [`fail`].

mod cmd;
mod fail;
mod io;
mod log;
mod progress;
mod ranks;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::fail::{CliResult, Fail};
use crate::progress::Progress;

const EXIT_CODES: &str = "Exit codes:
  0  success
  1  verification or computation failure (a mismatch, a backend error,
     a backend that cannot run here)
  2  usage error (unknown flag, subcommand, backend, primitive or case;
     a bad TRIDENT_SEED)
  3  bad input file (malformed, truncated, out-of-range index, NaN,
     sizes that do not fit; the message names the file and the line or byte)
  4  I/O or output error (a file that cannot be opened, read or written)
Outputs are written to a temporary file and renamed: a failed run leaves none.

Environment: TRIDENT_BACKEND picks the backend as --backend does;
TRIDENT_SEED is verify's default seed; RUST_LOG is the default of --log.
Every variable Trident reads: docs/configuration.md.";

/// Fast parallel primitives (GEMM, SpGEMM, nearest pairs, OMP, max-flow) on
/// your files, on CUDA, wgpu or all CPU cores.
#[derive(Parser, Debug)]
#[command(name = "trident", version, about, after_help = EXIT_CODES)]
struct Cli {
    /// Run on this backend only (no fallback): cuda, wgpu, rayon or reference.
    /// Default: the best one available here (see `trident backends`).
    #[arg(long, global = true, value_parser = clap::builder::PossibleValuesParser::new(trident::PREFERENCE))]
    backend: Option<String>,
    /// Print the result and timings as one JSON object on stdout (no progress bars).
    #[arg(long, global = true)]
    json: bool,
    /// Diagnostics on stderr: -v the libraries' debug events (phase timings,
    /// which backend served each call and why), -vv everything. Warnings are
    /// always shown.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Which diagnostics to show, as RUST_LOG writes them: a level (`debug`)
    /// or crate=level pairs (`trident_rayon=debug,warn`). Overrides -v.
    #[arg(long, global = true, value_name = "FILTER")]
    log: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Every primitive on every backend here against the certified reference.
    Verify(cmd::verify::Args),
    /// Which backends are compiled in, which run here and which one is picked.
    Backends,
    /// Sparse x sparse: C = A B (or A B^T) on Matrix Market or scipy .npz files.
    Spgemm(cmd::spgemm::Args),
    /// Dense x dense: C = A B on float32/float64 .npy matrices.
    Gemm(cmd::gemm::Args),
    /// Nearest neighbours from point set A into B (.npy N x 3, .ply, .csv or .xyz).
    Pairs(cmd::pairs::Args),
    /// Sparse codes of signals over a dictionary (Batch-OMP), written as .npz.
    Omp(cmd::omp::Args),
    /// Max flow and min cut of a DIMACS max-flow file.
    Maxflow(cmd::maxflow::Args),
    /// Foreground/background segmentation of an image by a graph cut.
    Segment(cmd::segment::Args),
    /// Time named verify cases on each backend; optionally plot them as SVG.
    Bench(cmd::bench::Args),
}

/// What every command gets: the backend choice and how to report.
pub struct Ctx {
    /// `--backend`.
    pub backend: Option<String>,
    /// `--json`.
    pub json: bool,
    /// Progress bars (off with `--json` or without a terminal).
    pub progress: Progress,
}

impl Ctx {
    /// The engine: the named backend only, or the best available here.
    pub fn engine(&self) -> CliResult<trident::Trident> {
        let t = match &self.backend {
            Some(name) => trident::Trident::only(name),
            None => trident::Trident::new(),
        };
        t.map_err(|e| Fail::Failed(format!("backend: {e}")))
    }
}

/// A finished command: text for people, JSON for scripts, and whether it
/// passed (verify can finish and still fail).
pub struct Outcome {
    /// Printed on stdout without `--json`.
    pub text: String,
    /// Printed on stdout with `--json`.
    pub json: serde_json::Value,
    /// `false` makes the exit code 1.
    pub ok: bool,
}

/// Mesa's implicit Vulkan layer `VK_LAYER_MESA_device_select` connects to
/// Wayland while wgpu lists adapters and prints two `error:
/// XDG_RUNTIME_DIR is invalid` lines on machines without a session (servers,
/// CI). The layer only reorders devices, which the backend probe does not
/// need: it is turned off for this process unless the user set it.
fn quiet_vulkan_layer() {
    if std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: called first in `main`, before any other thread exists, so
        // no thread can read the environment while it is written.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

fn main() -> ExitCode {
    quiet_vulkan_layer();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version are "errors" that print to stdout and exit 0.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let chatty = match log::init(cli.verbose, cli.log.as_deref()) {
        Ok(c) => c,
        Err(f) => {
            eprintln!("trident: {}", f.message());
            return ExitCode::from(f.code());
        }
    };
    let ctx = Ctx {
        backend: cli.backend.clone(),
        json: cli.json,
        progress: Progress::new(cli.json || chatty),
    };
    let result = match cli.command {
        Command::Verify(a) => cmd::verify::run(&ctx, a),
        Command::Backends => cmd::backends(&ctx),
        Command::Spgemm(a) => cmd::spgemm::run(&ctx, a),
        Command::Gemm(a) => cmd::gemm::run(&ctx, a),
        Command::Pairs(a) => cmd::pairs::run(&ctx, a),
        Command::Omp(a) => cmd::omp::run(&ctx, a),
        Command::Maxflow(a) => cmd::maxflow::run(&ctx, a),
        Command::Segment(a) => cmd::segment::run(&ctx, a),
        Command::Bench(a) => cmd::bench::run(&ctx, a),
    };
    match result {
        Ok(out) => {
            if ctx.json {
                println!("{}", out.json);
            } else {
                print!("{}", out.text);
            }
            if out.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(f) => {
            eprintln!("trident: {}", f.message());
            if ctx.json {
                let v =
                    serde_json::json!({ "ok": false, "exit_code": f.code(), "error": f.message() });
                println!("{v}");
            }
            ExitCode::from(f.code())
        }
    }
}
