//! cut-512 / cut-2048 timing for the rayon MaxFlow, comparable with PyMaxflow.
//!
//! Builds the segmentation grid of a noisy synthetic image (disks and a
//! rectangle, intensities 0..255 plus Gaussian noise sigma 30), data terms
//! `round(10 (I - mu)^2 / (2 * 30^2))` for mu = 70 (background, source arc)
//! and mu = 170 (object, sink arc), smoothness `round(50 exp(-(Ip-Iq)^2 / (2 * 10^2)))`
//! in both directions. Optionally dumps the graph as raw little-endian i32 so
//! `cut_pymaxflow.py` can load the same graph into PyMaxflow.
//!
//! ```text
//! cargo run -p trident-rayon --release --example cut_bench -- 2048 5 /tmp/cut2048
//! python3 crates/trident-rayon/examples/cut_pymaxflow.py /tmp/cut2048 5
//! ```
//!
//! The generator is this example's own until the shared testkit cases land.

use std::io::Write;
use std::time::Instant;

use trident_core::{GridGraph, MaxFlow};
use trident_rayon::RayonBackend;

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn gauss(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The image: background 70, two disks and a rectangle of 150..200, noise.
fn image(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix(seed);
    let nf = n as f64;
    let mut img = vec![0.0; n * n];
    for y in 0..n {
        for x in 0..n {
            let (fx, fy) = (x as f64 / nf, y as f64 / nf);
            let disk = |cx: f64, cy: f64, r: f64| (fx - cx).powi(2) + (fy - cy).powi(2) <= r * r;
            let base = if disk(0.3, 0.3, 0.17) {
                170.0
            } else if disk(0.68, 0.62, 0.22) && !disk(0.68, 0.62, 0.08) {
                200.0
            } else if (0.1..0.45).contains(&fx) && (0.62..0.9).contains(&fy) {
                150.0
            } else {
                70.0
            };
            img[y * n + x] = (base + 30.0 * rng.gauss()).round().clamp(0.0, 255.0);
        }
    }
    img
}

/// source, sink, PosX weights, PosY weights (row-major n x n each).
fn graph(n: usize, img: &[f64]) -> [Vec<i64>; 4] {
    let data = |i: f64, mu: f64| (10.0 * (i - mu).powi(2) / (2.0 * 30.0 * 30.0)).round() as i64;
    let smooth =
        |a: f64, b: f64| (50.0 * (-(a - b).powi(2) / (2.0 * 10.0 * 10.0)).exp()).round() as i64;
    let source = img.iter().map(|&i| data(i, 70.0)).collect();
    let sink = img.iter().map(|&i| data(i, 170.0)).collect();
    let mut right = vec![0; n * n];
    let mut down = vec![0; n * n];
    for y in 0..n {
        for x in 0..n {
            let v = y * n + x;
            if x + 1 < n {
                right[v] = smooth(img[v], img[v + 1]);
            }
            if y + 1 < n {
                down[v] = smooth(img[v], img[v + n]);
            }
        }
    }
    [source, sink, right, down]
}

fn dump(dir: &str, n: usize, arrays: &[Vec<i64>; 4]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(format!("{dir}/shape.txt"), format!("{n} {n}\n"))?;
    for (name, a) in ["source", "sink", "right", "down"].iter().zip(arrays) {
        let mut f = std::io::BufWriter::new(std::fs::File::create(format!("{dir}/{name}.i32"))?);
        for &x in a {
            f.write_all(&i32::try_from(x).expect("fits i32").to_le_bytes())?;
        }
    }
    Ok(())
}

fn main() -> trident_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(512, |s| s.parse().expect("size"));
    let reps: usize = args.get(2).map_or(3, |s| s.parse().expect("reps"));
    let img = image(n, 42);
    let arrays = graph(n, &img);
    if let Some(dir) = args.get(3) {
        dump(dir, n, &arrays)?;
    }
    let [source, sink, right, down] = arrays;
    let backend = RayonBackend::new()?;
    let mut times = Vec::new();
    let mut build_times = Vec::new();
    let mut flow = 0;
    let mut side = 0;
    for _ in 0..reps {
        let t0 = Instant::now();
        let mut caps = vec![0i64; 4 * n * n];
        let nn = n * n;
        caps[..nn].copy_from_slice(&right);
        caps[2 * nn..3 * nn].copy_from_slice(&down);
        for v in 0..nn {
            if v % n > 0 {
                caps[nn + v] = right[v - 1];
            }
            if v >= n {
                caps[3 * nn + v] = down[v - n];
            }
        }
        let g = GridGraph::new_2d(n, n, source.clone(), sink.clone(), caps)?;
        let t1 = Instant::now();
        let cut = backend.grid_cut(&g)?;
        let t2 = Instant::now();
        assert_eq!(g.cut_capacity(&cut.source_side), cut.flow);
        flow = cut.flow;
        side = cut.source_side.iter().filter(|&&b| b).count();
        times.push((t2 - t1).as_secs_f64() * 1e3);
        build_times.push((t2 - t0).as_secs_f64() * 1e3);
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "cut-{n} rayon ({} threads): flow {flow}, source side {side} nodes; grid_cut min {:.1} ms median {:.1} ms; with GridGraph build min {:.1} ms",
        backend.threads(),
        min(&times),
        med(&mut times),
        min(&build_times)
    );
    Ok(())
}
