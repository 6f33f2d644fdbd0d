//! flow-rmf timing: the rayon MaxFlow against the reference (Dinic) on a
//! Goldfarb-Grigoriadis RMF network from the testkit.
//!
//! ```text
//! cargo run -p trident-benches --release --example flow_bench -- A B [REPS] [C2]
//! ```
//!
//! `genrmf(A, B, 1, C2, seed 1)`: A x A frames, B of them (the benchmark flow-rmf is
//! A = 32, B = 64, C2 = 10000, the default). Prints the best and median solve
//! time of each backend and checks that they agree.

use std::time::Instant;

use trident_core::MaxFlow;
use trident_rayon::RayonBackend;
use trident_reference::ReferenceBackend;
use trident_testkit::{cases, check};

fn main() -> trident_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg =
        |i: usize, default: usize| args.get(i).map_or(default, |s| s.parse().expect("number"));
    let (a, b, reps) = (arg(1, 32), arg(2, 64), arg(3, 3));
    let c2 = arg(4, 10_000) as i64;
    let g = cases::genrmf(a, b, 1, c2, 1);
    println!(
        "genrmf({a}, {b}, 1, {c2}): {} nodes, {} arcs",
        g.nodes(),
        g.arcs().len()
    );
    let rayon = RayonBackend::new()?;
    let reference = ReferenceBackend::new()?;
    let time = |f: &dyn Fn() -> trident_core::Result<trident_core::NetworkFlow>| {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..reps {
            let t0 = Instant::now();
            let r = f();
            times.push(t0.elapsed().as_secs_f64() * 1e3);
            last = Some(r);
        }
        times.sort_by(f64::total_cmp);
        (last.expect("reps >= 1"), times[0], times[times.len() / 2])
    };
    let (got, r_min, r_med) = time(&|| rayon.network_flow(&g));
    let (want, f_min, f_med) = time(&|| reference.network_flow(&g));
    let (got, want) = (got?, want?);
    let v = check::network_flow(&g, &want, &got);
    println!(
        "rayon ({} threads): flow {}, min {r_min:.1} ms median {r_med:.1} ms",
        rayon.threads(),
        got.flow
    );
    println!(
        "reference: flow {}, min {f_min:.1} ms median {f_med:.1} ms",
        want.flow
    );
    println!(
        "check: {}",
        if v.passed() {
            "pass".into()
        } else {
            v.summary()
        }
    );
    Ok(())
}
