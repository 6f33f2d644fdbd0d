//! One module per subcommand.

pub mod bench;
pub mod gemm;
pub mod maxflow;
pub mod omp;
pub mod pairs;
pub mod peers;
pub mod segment;
pub mod spgemm;
pub mod verify;

use std::time::Instant;

use serde_json::json;

use crate::fail::CliResult;
use crate::{Ctx, Outcome};

/// Seconds since `t`.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// `trident backends`.
pub fn backends(ctx: &Ctx) -> CliResult<Outcome> {
    let compiled = trident::compiled_backends();
    let t = ctx.engine()?;
    let cands: Vec<_> = t
        .candidates()
        .iter()
        .map(|c| match &c.outcome {
            Ok(d) => json!({ "name": c.name, "available": true, "describe": d }),
            Err(e) => json!({ "name": c.name, "available": false, "reason": e }),
        })
        .collect();
    Ok(Outcome {
        text: format!("compiled in: {}\n{}", compiled.join(", "), t.report()),
        json: json!({ "ok": true, "compiled": compiled, "primary": t.primary(), "candidates": cands }),
        ok: true,
    })
}
