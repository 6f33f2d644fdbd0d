//! `trident maxflow G.max [--cut cut.txt]`: DIMACS max-flow in, the flow value
//! (and the source side of the minimum cut) out.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{FlowNetwork, MaxFlow};

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io::output::Output;
use crate::{Ctx, Outcome};

/// `trident maxflow` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// DIMACS max-flow file (`p max N M`, `n ID s|t`, `a U V CAP`).
    file: PathBuf,
    /// Write the source side of the minimum cut to this .txt file: 1-based
    /// node ids, one per line (`numpy.loadtxt` reads it).
    #[arg(long)]
    cut: Option<PathBuf>,
}

/// Reads, solves, reports.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    if let Some(cut) = &args.cut {
        crate::io::output_format("maxflow", "--cut", cut, &[("txt", ())])?;
    }
    let path = &args.file;
    let name = path.display().to_string();
    let t0 = Instant::now();
    let (reader, pb) = crate::io::open(path, &ctx.progress)?;
    let g = FlowNetwork::read_dimacs(reader).map_err(|e| match e {
        trident::Error::Io(io) => Fail::BadInput(format!("{name}: cannot read: {io}")),
        // The reader reports whole-file problems (a missing `p` line, fewer
        // arcs than declared, no source) as line 0; say where they show.
        trident::Error::Parse { line: 0, detail } => {
            Fail::BadInput(format!("{name}: at end of file: {detail}"))
        }
        e => Fail::from_lib(&name, e),
    })?;
    pb.finish_and_clear();
    let read_s = secs(t0);
    probe_memory(&name, g.nodes())?;
    // General networks are not sharded: under a launcher rank 0 solves and
    // writes, the other ranks return at once.
    #[cfg_attr(not(feature = "dist"), allow(unused_variables))]
    let (cluster, engine) = crate::ranks::setup(ctx)?;
    #[cfg(feature = "dist")]
    let ranks = match &cluster {
        Some(c) if c.rank() != 0 => return Ok(crate::ranks::quiet(c)),
        Some(c) => format!("rank 0 of {} (networks are not sharded): ", c.size()),
        None => String::new(),
    };
    #[cfg(not(feature = "dist"))]
    let ranks = "";
    let pb = ctx.progress.spinner("max flow");
    let t1 = Instant::now();
    let r = engine
        .network_flow(&g)
        .map_err(|e| Fail::from_lib(&name, e))?;
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let side = r.source_side.iter().filter(|&&b| b).count();
    if let Some(cut) = &args.cut {
        let mut out = Output::create(cut)?;
        let res = (|| -> std::io::Result<()> {
            let w = out.writer();
            for (v, _) in r.source_side.iter().enumerate().filter(|(_, s)| **s) {
                writeln!(w, "{}", v + 1)?;
            }
            Ok(())
        })();
        res.map_err(|e| out.fail(e))?;
        out.commit()?;
    }
    Ok(Outcome {
        text: format!(
            "{ranks}flow {}  (source side {side} of {} nodes, {:.3} s on {})\n",
            r.flow,
            g.nodes(),
            compute_s,
            engine.served_last()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "flow": r.flow,
            "nodes": g.nodes(), "arcs": g.arcs().len(), "source_side": side,
            "cut": args.cut.as_ref().map(|c| c.display().to_string()),
            "timings": {"read_s": read_s, "compute_s": compute_s},
        }),
        ok: true,
    })
}

/// Bytes per node a max-flow solver needs at least (labels, excess, arc
/// offsets, queues).
const BYTES_PER_NODE: usize = 64;

/// A network declaring more nodes than memory holds (valid by the format:
/// `p max 4294967295 1`) is reported as bad input before any solver tries to
/// allocate for it, whatever the backend does with such a request.
fn probe_memory(name: &str, nodes: usize) -> CliResult<()> {
    let bytes = nodes.saturating_mul(BYTES_PER_NODE);
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| {
        Fail::BadInput(format!(
            "{name}: out of memory: {nodes} nodes need at least {bytes} bytes"
        ))
    })
}
