//! The `trident` command.
//!
//! - `trident verify [--backend NAME] [--primitive NAME] [--size small|large] [--seed N]`:
//!   every primitive on every backend compiled in and available here, against the
//!   reference; prints a table and exits non-zero on any mismatch. A plain binary:
//!   this is what the GPU machine (no Rust toolchain) runs.
//! - `trident backends`: which backends are compiled in, which run here, which one
//!   `Trident::new` picks and why.
//! - `trident maxflow FILE`: max flow of a DIMACS max-flow file, with the min cut size.

mod verify;

use std::process::ExitCode;

use trident::{FlowNetwork, MaxFlow, Trident};

const USAGE: &str = "usage:
  trident verify [--backend NAME] [--primitive NAME] [--size small|large] [--seed N]
  trident backends
  trident maxflow FILE.dimacs";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("verify") => verify::main(&args[1..]),
        Some("backends") => backends(),
        Some("maxflow") => maxflow(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(true)
        }
        _ => Err(format!("unknown command\n{USAGE}")),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("trident: {e}");
            ExitCode::from(2)
        }
    }
}

fn backends() -> Result<bool, String> {
    println!("compiled in: {}", trident::compiled_backends().join(", "));
    let t = Trident::new().map_err(|e| e.to_string())?;
    print!("{}", t.report());
    Ok(true)
}

fn maxflow(args: &[String]) -> Result<bool, String> {
    let [path] = args else {
        return Err(format!("maxflow takes one file\n{USAGE}"));
    };
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let g = FlowNetwork::read_dimacs(std::io::BufReader::new(file))
        .map_err(|e| format!("{path}: {e}"))?;
    let t = Trident::new().map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    let r = t.network_flow(&g).map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    let side = r.source_side.iter().filter(|&&b| b).count();
    println!(
        "flow {}  (source side {side} of {} nodes, {:.3} s on {})",
        r.flow,
        g.nodes(),
        secs,
        t.primary()
    );
    Ok(true)
}
