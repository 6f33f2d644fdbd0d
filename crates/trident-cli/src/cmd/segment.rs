//! `trident segment image.png -o mask.png [--seeds seeds.png] [--lambda L --sigma S]`:
//! foreground/background segmentation by a minimum cut on the 4-connected pixel
//! grid (Boykov and Jolly's interactive graph cut, ICCV 2001).
//!
//! Energy: sum over pixels of a data term plus, for each pair of neighbours
//! p, q with different labels, `lambda * exp(-(Ip - Iq)^2 / (2 sigma^2))`
//! (intensities in 0..=255), so cutting across a strong edge is cheap.
//! The data term is the negative log-likelihood of the pixel's grey level
//! under one Gaussian per label: fitted to the seed pixels when a scribble
//! image is given (red = foreground, blue = background, those pixels are hard
//! constraints), else to the two clusters of a 2-means on the grey levels
//! (foreground = the brighter one; `--dark` flips that). Costs are scaled by
//! [`SCALE`] and rounded to the integer capacities max-flow takes.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use trident::{GridGraph, MaxFlow};
use trident_io::img::{Image, ImageFormat, Seed};

use super::secs;
use crate::fail::{CliResult, Fail};
use crate::io;
use crate::{Ctx, Outcome};

/// Capacity units per unit of energy.
pub const SCALE: f64 = 100.0;
/// Smallest variance of an intensity model (grey levels squared): a flat seed
/// region must not make every other grey level infinitely unlikely.
const MIN_VAR: f64 = 4.0;

/// `trident segment` flags.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input image (PNG or JPEG; colour is converted to grey levels).
    image: PathBuf,
    /// Output mask, .png or .jpg/.jpeg: 255 foreground, 0 background.
    #[arg(short, long)]
    output: PathBuf,
    /// Scribble image of the same size: red pixels are foreground, blue background.
    #[arg(long)]
    seeds: Option<PathBuf>,
    /// Weight of the smoothness term.
    #[arg(long, default_value_t = 5.0)]
    lambda: f64,
    /// Grey-level difference that counts as an edge.
    #[arg(long, default_value_t = 10.0)]
    sigma: f64,
    /// Without seeds: the foreground is the darker cluster.
    #[arg(long)]
    dark: bool,
}

/// A Gaussian intensity model.
#[derive(Clone, Copy, Debug)]
struct Model {
    mean: f64,
    var: f64,
}

impl Model {
    fn fit(values: impl Iterator<Item = f64>) -> Option<Model> {
        let (mut n, mut s, mut s2) = (0f64, 0f64, 0f64);
        for v in values {
            n += 1.0;
            s += v;
            s2 += v * v;
        }
        if n == 0.0 {
            return None;
        }
        let mean = s / n;
        Some(Model {
            mean,
            var: (s2 / n - mean * mean).max(MIN_VAR),
        })
    }
    /// Negative log-likelihood up to a constant.
    fn cost(&self, v: f64) -> f64 {
        (v - self.mean).powi(2) / (2.0 * self.var) + 0.5 * self.var.ln()
    }
}

/// Reads, builds the grid, cuts, writes the mask.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    let format = io::output_format(
        "segment",
        "--output",
        &args.output,
        &[
            ("png", ImageFormat::Png),
            ("jpg", ImageFormat::Jpeg),
            ("jpeg", ImageFormat::Jpeg),
        ],
    )?;
    for (name, v) in [("--lambda", args.lambda), ("--sigma", args.sigma)] {
        if !(v.is_finite() && v >= 0.0) || (name == "--sigma" && v == 0.0) {
            return Err(Fail::Usage(format!(
                "{name} {v}: expected a finite number > 0"
            )));
        }
    }
    let t0 = Instant::now();
    let Image {
        width: w,
        height: h,
        pixels: gray,
    } = io::read_gray(&args.image, &ctx.progress)?;
    let seeds = match &args.seeds {
        None => None,
        Some(p) => {
            let Image {
                width: sw,
                height: sh,
                pixels: s,
            } = io::read_seeds(p, &ctx.progress)?;
            if (sw, sh) != (w, h) {
                return Err(Fail::BadInput(format!(
                    "{}: the seed image is {sw} x {sh} but {} is {w} x {h}; they must match",
                    p.display(),
                    args.image.display()
                )));
            }
            Some(s)
        }
    };
    let read_s = secs(t0);
    let (fg, bg) = models(&gray, seeds.as_deref(), args.dark).map_err(|m| {
        Fail::BadInput(format!(
            "{}: {m}",
            args.seeds.as_ref().unwrap_or(&args.image).display()
        ))
    })?;
    let g = build(
        w as usize,
        h as usize,
        &gray,
        seeds.as_deref(),
        fg,
        bg,
        args.lambda,
        args.sigma,
    )
    .map_err(|e| Fail::from_lib(&args.image.display().to_string(), e))?;
    let engine = ctx.engine()?;
    let pb = ctx.progress.spinner(format!("graph cut {w} x {h}"));
    let t1 = Instant::now();
    let cut = engine
        .grid_cut(&g)
        .map_err(|e| Fail::from_lib("segment", e))?;
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    let mask = Image {
        width: w,
        height: h,
        pixels: cut.source_side,
    };
    io::write_mask(&args.output, &mask, format)?;
    let write_s = secs(t2);
    let fg_pixels = mask.pixels.iter().filter(|&&b| b).count();
    Ok(Outcome {
        text: format!(
            "segment: {w} x {h}, {fg_pixels} foreground pixels ({:.1}%), cut {}, {compute_s:.3} s on {} -> {}\n",
            100.0 * fg_pixels as f64 / (w as f64 * h as f64).max(1.0),
            cut.flow,
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(), "width": w, "height": h,
            "foreground_pixels": fg_pixels, "cut": cut.flow,
            "models": {"foreground": [fg.mean, fg.var], "background": [bg.mean, bg.var]},
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}

/// The foreground and background intensity models.
fn models(gray: &[u8], seeds: Option<&[Seed]>, dark: bool) -> Result<(Model, Model), String> {
    let val = |i: usize| gray[i] as f64;
    if let Some(s) = seeds {
        let pick = |want: Seed| (0..gray.len()).filter(move |&i| s[i] == want).map(val);
        let fg = Model::fit(pick(Seed::Foreground))
            .ok_or("no foreground seeds: expected red pixels (R >= 128, G, B < 100)")?;
        let bg = Model::fit(pick(Seed::Background))
            .ok_or("no background seeds: expected blue pixels (B >= 128, R, G < 100)")?;
        return Ok((fg, bg));
    }
    // 2-means on grey levels, from the extremes.
    let (mut lo, mut hi) = (255.0f64, 0.0f64);
    for &g in gray {
        lo = lo.min(g as f64);
        hi = hi.max(g as f64);
    }
    for _ in 0..20 {
        let mid = (lo + hi) / 2.0;
        let (a, b) = gray
            .iter()
            .map(|&g| g as f64)
            .partition::<Vec<f64>, _>(|&v| v <= mid);
        let mean = |v: &[f64], d: f64| {
            if v.is_empty() {
                d
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let (nlo, nhi) = (mean(&a, lo), mean(&b, hi));
        if nlo == lo && nhi == hi {
            break;
        }
        (lo, hi) = (nlo, nhi);
    }
    let mid = (lo + hi) / 2.0;
    let dim = Model::fit(gray.iter().map(|&g| g as f64).filter(|&v| v <= mid)).unwrap_or(Model {
        mean: lo,
        var: MIN_VAR,
    });
    let bright = Model::fit(gray.iter().map(|&g| g as f64).filter(|&v| v > mid)).unwrap_or(Model {
        mean: hi,
        var: MIN_VAR,
    });
    Ok(if dark { (dim, bright) } else { (bright, dim) })
}

/// The grid graph of the energy (source side = foreground).
#[allow(clippy::too_many_arguments)]
fn build(
    w: usize,
    h: usize,
    gray: &[u8],
    seeds: Option<&[Seed]>,
    fg: Model,
    bg: Model,
    lambda: f64,
    sigma: f64,
) -> trident::Result<GridGraph> {
    let n = w * h;
    let q = |x: f64| (x * SCALE).round() as i64;
    let weight = |p: usize, r: usize| {
        let d = gray[p] as f64 - gray[r] as f64;
        q(lambda * (-d * d / (2.0 * sigma * sigma)).exp())
    };
    let mut caps = vec![0i64; 4 * n];
    for y in 0..h {
        for x in 0..w {
            let v = y * w + x;
            if x + 1 < w {
                caps[v] = weight(v, v + 1); // PosX
                caps[n + v + 1] = caps[v]; // NegX of the right neighbour
            }
            if y + 1 < h {
                caps[2 * n + v] = weight(v, v + w); // PosY
                caps[3 * n + v + w] = caps[2 * n + v]; // NegY of the one below
            }
        }
    }
    // A hard seed costs more to violate than all of its pixel's n-links.
    let hard = 4 * q(lambda) + 1;
    let mut source = vec![0i64; n];
    let mut sink = vec![0i64; n];
    for v in 0..n {
        let s = seeds.map_or(Seed::None, |s| s[v]);
        match s {
            Seed::Foreground => source[v] = hard,
            Seed::Background => sink[v] = hard,
            Seed::None => {
                let (cf, cb) = (fg.cost(gray[v] as f64), bg.cost(gray[v] as f64));
                let m = cf.min(cb);
                // Cutting s->v labels v background: it costs the background term.
                source[v] = q(cb - m);
                sink[v] = q(cf - m);
            }
        }
    }
    GridGraph::new_2d(h, w, source, sink, caps)
}
