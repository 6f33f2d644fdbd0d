//! cut-512 / cut-2048 timing for the rayon MaxFlow, comparable with PyMaxflow.
//!
//! The graph is the `cut-N` benchmark case from the testkit (`cases::cut(n, seed)`:
//! the 4-connected segmentation grid of a noisy synthetic image, data terms
//! from intensity, smoothness `lambda * exp(-(Ip - Iq)^2 / 2 sigma^2)`, the
//! same weight both ways). Optionally writes it as `.npy` planes
//! (`trident_benches::npy::write_grid`) so that `cut_pymaxflow.py` can load
//! the same graph into PyMaxflow.
//!
//! ```text
//! cargo run -p trident-benches --release --example cut_bench -- 2048 5 /tmp/cut2048
//! python3 benches/examples/cut_pymaxflow.py /tmp/cut2048 5
//! ```
//!
//! Arguments: N (512), REPS (3), DIR (no dump), SEED (1).

use std::time::Instant;

use trident_core::MaxFlow;
use trident_rayon::RayonBackend;

fn main() -> trident_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(512, |s| s.parse().expect("size"));
    let reps: usize = args.get(2).map_or(3, |s| s.parse().expect("reps"));
    let seed: u64 = args.get(4).map_or(1, |s| s.parse().expect("seed"));
    let g = trident_testkit::cases::cut(n, seed);
    if let Some(dir) = args.get(3).filter(|d| !d.is_empty() && *d != "-") {
        trident_benches::npy::write_grid(dir, &g)?;
    }
    let backend = RayonBackend::new()?;
    let mut times = Vec::new();
    let mut flow = 0;
    let mut side = 0;
    for _ in 0..reps {
        let t1 = Instant::now();
        let cut = backend.grid_cut(&g)?;
        let t2 = Instant::now();
        assert_eq!(g.cut_capacity(&cut.source_side), cut.flow);
        flow = cut.flow;
        side = cut.source_side.iter().filter(|&&b| b).count();
        times.push((t2 - t1).as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "cut-{n} (seed {seed}) rayon ({} threads): flow {flow}, source side {side} nodes; grid_cut min {:.1} ms median {:.1} ms",
        backend.threads(),
        times[0],
        times[times.len() / 2]
    );
    Ok(())
}
