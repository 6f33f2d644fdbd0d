//! Graph-cut segmentation (max-flow on the 4-connected pixel grid): of a
//! synthetic noisy image (a bright disc on a dark background, checked against
//! the disc's area), or of your own image, whose mask is written beside it.
//! The `trident segment image.png -o mask.png` command does the same with more
//! options (seed scribbles, lambda, sigma).
//!
//! `cargo run -p trident-compute --example segment [-- IMAGE [MASK.png]]`

use trident::{GridGraph, MaxFlow, Trident};

/// The cut of a `w x h` grey image: data term the squared distance to the
/// foreground and background intensities over `scale`, smoothness
/// `lambda * exp(-(Ip - Iq)^2 / 2 sigma^2)`, in tenths (integer capacities).
fn segment(
    img: &[f64],
    w: usize,
    h: usize,
    fg: f64,
    bg: f64,
    scale: f64,
) -> trident::Result<(Vec<bool>, i64, &'static str)> {
    let (sigma, lambda) = (10.0f64, 30.0);
    let q = |e: f64| (e * 10.0).round() as i64;
    let n = w * h;
    // Source side = foreground.
    let source: Vec<i64> = img.iter().map(|&i| q((i - bg).powi(2) / scale)).collect();
    let sink: Vec<i64> = img.iter().map(|&i| q((i - fg).powi(2) / scale)).collect();
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
    Ok((cut.source_side, cut.flow, t.served_last()))
}

/// The two intensity models of an image: 2-means on its grey levels.
fn two_means(img: &[f64]) -> (f64, f64) {
    let (mut lo, mut hi) = img
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
    for _ in 0..20 {
        let mid = (lo + hi) / 2.0;
        let mean = |f: &dyn Fn(f64) -> bool| {
            let (s, c) = img
                .iter()
                .filter(|&&v| f(v))
                .fold((0.0, 0.0), |(s, c), &v| (s + v, c + 1.0));
            if c > 0.0 { Some(s / c) } else { None }
        };
        lo = mean(&|v| v < mid).unwrap_or(lo);
        hi = mean(&|v| v >= mid).unwrap_or(hi);
    }
    (hi, lo)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    if let Some(path) = args.next() {
        let grey = image::open(&path)?.to_luma8();
        let (w, h) = (grey.width() as usize, grey.height() as usize);
        let img: Vec<f64> = grey.pixels().map(|p| p.0[0] as f64).collect();
        let (fg, bg) = two_means(&img);
        let spread = ((fg - bg) / 2.0).max(1.0);
        let (side, flow, backend) = segment(&img, w, h, fg, bg, 2.0 * spread * spread)?;
        let mask = image::GrayImage::from_fn(w as u32, h as u32, |x, y| {
            image::Luma([if side[y as usize * w + x as usize] {
                255
            } else {
                0
            }])
        });
        let out = args.next().unwrap_or_else(|| "mask.png".into());
        mask.save(&out)?;
        let area = side.iter().filter(|&&f| f).count();
        println!(
            "segment {path} ({w}x{h}) on {backend}: {area} foreground pixels, cut {flow}, mask in {out}"
        );
        return Ok(());
    }
    let (w, h) = (160usize, 120usize);
    let img: Vec<f64> = (0..w * h)
        .map(|v| {
            let (x, y) = ((v % w) as f64, (v / w) as f64);
            let inside = (x - 80.0).powi(2) + (y - 60.0).powi(2) < 40.0f64.powi(2);
            let noise = ((v * 2654435761) % 61) as f64 - 30.0;
            if inside { 190.0 + noise } else { 60.0 + noise }
        })
        .collect();
    let (side, flow, backend) = segment(&img, w, h, 190.0, 60.0, 1800.0)?;
    let area = side.iter().filter(|&&f| f).count();
    let disc = std::f64::consts::PI * 40.0 * 40.0;
    assert!(
        (area as f64 - disc).abs() < 0.05 * disc,
        "area {area} vs {disc:.0}"
    );
    println!(
        "segment {w}x{h} on {backend}: {area} foreground pixels (disc area {disc:.0}), cut {flow}"
    );
    Ok(())
}
