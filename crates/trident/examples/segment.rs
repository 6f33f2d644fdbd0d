//! Graph-cut segmentation (max-flow on the 4-connected pixel grid) of a
//! synthetic noisy image: a bright disc on a dark background. The `trident
//! segment image.png -o mask.png` command does the same on your own images.
//! `cargo run -p trident-compute --example segment`

use trident::{GridGraph, MaxFlow, Trident};

fn main() -> trident::Result<()> {
    let (w, h) = (160usize, 120usize);
    let img: Vec<f64> = (0..w * h)
        .map(|v| {
            let (x, y) = ((v % w) as f64, (v / w) as f64);
            let inside = (x - 80.0).powi(2) + (y - 60.0).powi(2) < 40.0f64.powi(2);
            let noise = ((v * 2654435761) % 61) as f64 - 30.0;
            if inside { 190.0 + noise } else { 60.0 + noise }
        })
        .collect();
    let (fg, bg, sigma, lambda) = (190.0, 60.0, 10.0f64, 30.0);
    let q = |e: f64| (e * 10.0).round() as i64;
    let n = w * h;
    // Data term: squared distance to each model; source side = foreground.
    let source: Vec<i64> = img.iter().map(|&i| q((i - bg).powi(2) / 1800.0)).collect();
    let sink: Vec<i64> = img.iter().map(|&i| q((i - fg).powi(2) / 1800.0)).collect();
    let mut caps = vec![0i64; 4 * n];
    let wgt = |a: f64, b: f64| q(lambda * (-(a - b).powi(2) / (2.0 * sigma * sigma)).exp());
    for v in 0..n {
        let (x, y) = (v % w, v / w);
        if x + 1 < w {
            caps[v] = wgt(img[v], img[v + 1]);
            caps[n + v + 1] = caps[v];
        }
        if y + 1 < h {
            caps[2 * n + v] = wgt(img[v], img[v + w]);
            caps[3 * n + v + w] = caps[2 * n + v];
        }
    }
    let g = GridGraph::new_2d(h, w, source, sink, caps)?;
    let t = Trident::new()?;
    let cut = t.grid_cut(&g)?;
    let area = cut.source_side.iter().filter(|&&f| f).count();
    let disc = std::f64::consts::PI * 40.0 * 40.0;
    assert!(
        (area as f64 - disc).abs() < 0.05 * disc,
        "area {area} vs {disc:.0}"
    );
    println!(
        "segment {w}x{h} on {}: {area} foreground pixels (disc area {disc:.0}), cut {}",
        t.primary(),
        cut.flow
    );
    Ok(())
}
