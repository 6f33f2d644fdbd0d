//! Nearest pairs: two noisy scans of the same sphere (as in point-cloud
//! registration); each point of scan A finds its nearest point in scan B.
//! `cargo run -p trident-compute --example pairs`

use trident::{NearestPairs, Neighbor, Point, Trident};

/// `n` points on a unit sphere (Fibonacci lattice), shifted by `jitter`.
fn sphere(n: usize, jitter: f32) -> Vec<Point> {
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    (0..n)
        .map(|i| {
            let y = 1.0 - 2.0 * (i as f32 + 0.5) / n as f32;
            let r = (1.0 - y * y).sqrt();
            let th = golden * i as f32;
            let wobble = jitter * ((i * 7919) % 97) as f32 / 97.0;
            [r * th.cos() + wobble, y - wobble, r * th.sin()]
        })
        .collect()
}

fn main() -> trident::Result<()> {
    let (a, b) = (sphere(20_000, 0.002), sphere(20_000, 0.0));
    let t = Trident::new()?;
    let mut near = vec![Neighbor::default(); a.len()];
    t.nearest(&a, &b, &mut near)?;
    let rms = (near.iter().map(|n| n.d2 as f64).sum::<f64>() / a.len() as f64).sqrt();
    let closest = t.closest_pairs(&a, &b, 5)?;
    assert!(rms < 0.01, "scans should nearly coincide, rms {rms}");
    println!(
        "nearest on {}: rms distance {rms:.5}; closest pair {:?}",
        t.served_last(),
        closest[0]
    );
    Ok(())
}
