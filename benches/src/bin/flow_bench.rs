//! MaxFlow timings of the CUDA backend beside the rayon backend, on the cases
//! cut-512, cut-2048 (the testkit's `cases::cut(n, 1)`), cut3d-256
//! (`cases::cut3d(256, 1)`) and flow-rmf (`genrmf(32, 64, 1, 10000, 1)`),
//! and on request the long-path probes `flow-path-N` (`cases::path_grid(N,
//! 1)`, a `1 x N` grid) and `flow-chain-N` (`cases::path_network(N, 1)`),
//! which the GPU solvers hand to the host finisher.
//!
//! For grids it times the device-resident solve (`grid_cut_device`:
//! capacities already on the GPU, labels left there) for each relabel period
//! asked for, and the host-to-host `grid_cut` (upload, solve, labels back),
//! checks flow and labels against rayon, and can dump cut-N as `.npy`
//! planes (`trident_benches::npy::write_grid`) so that
//! `benches/examples/cut_pymaxflow.py` runs PyMaxflow on the same graph.
//!
//! ```text
//! flow_bench [--reps R] [--periods 8,16] [--net-periods 48,128] [--dump DIR] [--cases cut-512,cut-2048,cut3d-256,flow-rmf]
//! flow_bench --reps 3 --cases flow-path-2000000,flow-chain-2000000
//! ```

use std::time::Instant;

use trident_core::{GridGraph, MaxFlow, MaxFlowDevice, Result};
use trident_cuda::{CudaBackend, Tuning};
use trident_rayon::RayonBackend;
use trident_testkit::cases::{cut, cut3d, genrmf, path_grid, path_network};

/// `(min, median)` in ms of `reps` runs of `f`.
fn time(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        f()?;
        t.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok((t[0], t[t.len() / 2]))
}

fn grid_case(
    name: &str,
    g: &GridGraph,
    cuda: &CudaBackend,
    rayon: &RayonBackend,
    reps: usize,
    periods: &[u32],
) -> Result<()> {
    let rr = if g.is_3d() { 1 } else { reps };
    let mut want = None;
    let (rmin, rmed) = time(rr, || {
        want = Some(rayon.grid_cut(g)?);
        Ok(())
    })?;
    let want = want.ok_or_else(|| trident_core::Error::Backend("no rayon result".into()))?;
    println!(
        "{name}: {} nodes, flow {}; rayon ({} threads) min {rmin:.2} ms median {rmed:.2} ms",
        g.nodes(),
        want.flow,
        rayon.threads()
    );
    let dev = cuda.upload_grid(g)?;
    for &k in periods {
        let tuned = cuda.tuned(Tuning {
            flow_relabel_period: Some(k),
            ..Tuning::default()
        });
        let cuda = &tuned;
        // Warm-up (kernel compile on the first call) and the check.
        let (flow, labels) = cuda.grid_cut_device(&dev)?;
        let side = cuda.download_vec(&labels)?;
        let bad = side
            .iter()
            .zip(&want.source_side)
            .filter(|(a, b)| (**a != 0) != **b)
            .count();
        let ok = flow == want.flow && bad == 0;
        let (dmin, dmed) = time(reps, || cuda.grid_cut_device(&dev).map(|_| ()))?;
        println!(
            "{name}: cuda period {k}: device-resident min {dmin:.2} ms median {dmed:.2} ms; \
             {} (flow {flow}, {bad} labels differ); rayon/cuda {:.2}x",
            if ok { "EXACT" } else { "MISMATCH" },
            rmin / dmin
        );
    }
    let (hmin, hmed) = time(reps, || cuda.grid_cut(g).map(|_| ()))?;
    println!(
        "{name}: cuda default period: host-to-host (upload + solve + labels) min {hmin:.2} ms median {hmed:.2} ms; rayon/cuda {:.2}x",
        rmin / hmin
    );
    Ok(())
}

fn main() -> Result<()> {
    trident_benches::log_from_env();
    let args: Vec<String> = std::env::args().collect();
    let opt = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let reps: usize = opt("--reps").and_then(|s| s.parse().ok()).unwrap_or(5);
    let periods: Vec<u32> = opt("--periods")
        .unwrap_or_else(|| trident_cuda::DEFAULT_RELABEL_PERIOD.to_string())
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let net_periods: Vec<u32> = opt("--net-periods")
        .unwrap_or_else(|| trident_cuda::DEFAULT_NETWORK_RELABEL_PERIOD.to_string())
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let dumpdir = opt("--dump");
    let cases = opt("--cases").unwrap_or_else(|| "cut-512,cut-2048,cut3d-256,flow-rmf".into());
    let cuda = CudaBackend::new(0)?;
    let rayon = RayonBackend::new()?;
    println!("{}", trident_core::Backend::describe(&cuda));
    for case in cases.split(',') {
        let t0 = Instant::now();
        let network = if case == "flow-rmf" {
            Some(genrmf(32, 64, 1, 10_000, 1))
        } else {
            case.strip_prefix("flow-chain-")
                .map(|n| path_network(n.parse().unwrap_or(2_000_000), 1))
        };
        match network {
            Some(g) => {
                let mut want = 0;
                let (rmin, rmed) = time(reps, || {
                    want = rayon.network_flow(&g)?.flow;
                    Ok(())
                })?;
                println!(
                    "{case}: {} nodes {} arcs, flow {want}; rayon min {rmin:.2} ms median {rmed:.2} ms",
                    g.nodes(),
                    g.arcs().len()
                );
                for &k in &net_periods {
                    let tuned = cuda.tuned(Tuning {
                        network_relabel_period: Some(k),
                        ..Tuning::default()
                    });
                    let cuda = &tuned;
                    let got = cuda.network_flow(&g)?;
                    let cert = trident_reference::certify::network_flow(&g, &got);
                    let (cmin, cmed) = time(reps, || cuda.network_flow(&g).map(|_| ()))?;
                    println!(
                        "{case}: cuda period {k}: host-to-host min {cmin:.2} ms median {cmed:.2} ms \
                         ({}, certificate {}); rayon/cuda {:.2}x",
                        if got.flow == want {
                            "EXACT"
                        } else {
                            "MISMATCH"
                        },
                        if cert.is_ok() { "ok" } else { "FAILED" },
                        rmin / cmin
                    );
                }
            }
            None => {
                let c = case;
                let g = if let Some(n) = c.strip_prefix("flow-path-") {
                    path_grid(n.parse().unwrap_or(2_000_000), 1)
                } else if let Some(n) = c.strip_prefix("cut3d-") {
                    cut3d(n.parse().unwrap_or(256), 1)
                } else if let Some(n) = c.strip_prefix("cut-") {
                    cut(n.parse().unwrap_or(512), 1)
                } else {
                    eprintln!("unknown case {c}");
                    continue;
                };
                println!("{c}: generated in {:.1} s", t0.elapsed().as_secs_f64());
                if let Some(d) = &dumpdir
                    && !g.is_3d()
                {
                    trident_benches::npy::write_grid(format!("{d}/{c}"), &g)?;
                }
                grid_case(c, &g, &cuda, &rayon, reps, &periods)?;
            }
        }
    }
    Ok(())
}
