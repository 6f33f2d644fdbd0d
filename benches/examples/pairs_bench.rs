//! Times the benchmark cases pairs-1M-400K and pairs-clustered on the rayon backend
//! (closest_pairs k = 100, and nearest for all of A), and writes the points as
//! float32 `.npy` (n x 3) so that a SciPy baseline can time the very same
//! input:
//!
//! ```text
//! cargo run --release -p trident-benches --example pairs_bench -- /tmp/pairs
//! python3 -c "import numpy as np,time;from scipy.spatial import cKDTree as K
//! for c in ['uniform','clustered']:
//!  A=np.load(f'/tmp/pairs/{c}_a.npy');B=np.load(f'/tmp/pairs/{c}_b.npy')
//!  for r in range(3): t=time.perf_counter();K(B).query(A,workers=-1);print(c,(time.perf_counter()-t)*1e3,'ms')"
//! ```
//!
//! Arguments: `[out_dir] [repeats]`; no out_dir (or `-`) writes nothing.

use std::time::Instant;

use trident_core::{NearestPairs, Neighbor, Point};
use trident_rayon::RayonBackend;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn gauss(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

fn uniform(rng: &mut Rng, n: usize) -> Vec<Point> {
    (0..n)
        .map(|_| [0; 3].map(|_: u8| (rng.next() % 1_000_000) as f32))
        .collect()
}

/// 64 Gaussian clusters (sigma 1e4) with centres uniform in [0, 1e6)^3, rounded
/// to integers like the uniform case.
fn clustered(rng: &mut Rng, centers: &[Point], n: usize) -> Vec<Point> {
    (0..n)
        .map(|_| {
            let c = centers[(rng.next() % centers.len() as u64) as usize];
            c.map(|x| (x as f64 + 1e4 * rng.gauss()).round() as f32)
        })
        .collect()
}

fn write(dir: &str, name: &str, p: &[Point]) {
    let flat: Vec<f32> = p.iter().flatten().copied().collect();
    trident_benches::npy::write(format!("{dir}/{name}.npy"), &[p.len(), 3], &flat)
        .expect("write points");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).filter(|d| *d != "-").cloned();
    let repeats: usize = args.get(2).map_or(3, |r| r.parse().expect("repeats"));
    let be = RayonBackend::new().expect("rayon backend");
    println!("{}", trident_core::Backend::describe(&be));

    let mut rng = Rng(2024);
    let ua = uniform(&mut rng, 1_000_000);
    let ub = uniform(&mut rng, 400_000);
    let centers = uniform(&mut rng, 64);
    let ca = clustered(&mut rng, &centers, 1_000_000);
    let cb = clustered(&mut rng, &centers, 400_000);
    if let Some(dir) = &dir {
        std::fs::create_dir_all(dir).expect("create out dir");
        write(dir, "uniform_a", &ua);
        write(dir, "uniform_b", &ub);
        write(dir, "clustered_a", &ca);
        write(dir, "clustered_b", &cb);
    }

    for (name, a, b) in [("pairs-1M-400K", &ua, &ub), ("pairs-clustered", &ca, &cb)] {
        let mut out = vec![Neighbor::default(); a.len()];
        for _ in 0..repeats {
            let t = Instant::now();
            let pairs = be.closest_pairs(a, b, 100).expect("closest_pairs");
            let tp = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            be.nearest(a, b, &mut out).expect("nearest");
            let tn = t.elapsed().as_secs_f64() * 1e3;
            println!(
                "{name}: closest_pairs(k=100) {tp:8.1} ms   nearest(all A) {tn:8.1} ms   \
                 (best d2 {}, 100th d2 {})",
                pairs[0].d2, pairs[99].d2
            );
        }
    }
}
