//! `trident segment INPUT -o MASK [--seeds S | --trimap T | --labels L]`:
//! foreground/background segmentation by a minimum cut (Boykov and Jolly's
//! interactive graph cut, ICCV 2001), of PNG/JPEG images (grey or colour) and
//! of `.npy` images and volumes. The energy, its models and its graph are in
//! [`energy`]; [`ENERGY`] is the help text that states them.

mod energy;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use trident::MaxFlow;
use trident_io::img::{Image, ImageFormat, Seed};
use trident_io::npy;

use self::energy::{Family, Field, Graph, Label, Model, Terms};
use super::secs;
use crate::fail::{CliResult, Fail, bad_file};
use crate::io::{self, output::Output};
use crate::{Ctx, Outcome};

/// `trident segment --help`'s closing text: the energy minimised, so results
/// can be reproduced elsewhere (PyMaxflow on the same capacities gives the
/// same flow).
pub const ENERGY: &str = "\
Energy (source side = foreground), minimised exactly by a max-flow/min-cut:
  E(L) = sum_p D_p(L_p) + sum over neighbours p, q with L_p != L_q of w_pq
  w_pq = lambda exp(-|I_p - I_q|^2 / (2 sigma^2)) / dist(p, q)
I_p is the grey level, or the RGB vector of a colour image (|.| the Euclidean
distance over the channels); dist is 1 for axis neighbours, sqrt 2 and sqrt 3
for diagonal ones. --sigma auto sets sigma^2 to the mean |I_p - I_q|^2 over
the neighbour pairs (GrabCut's rule).
D_p(l) = -ln P(I_p | model of l), one model per label fitted to the seeded
pixels (or, without seeds, to the two clusters of a 2-means of the image,
foreground the brighter one; --dark flips that):
  gauss  a Gaussian, full covariance over the channels, its eigenvalues at
         least (range / 127.5)^2 (4 grey levels squared for 8-bit data):
         D = (I - m)^T C^-1 (I - m) / 2 + ln det C / 2
  hist   a joint histogram, --bins per channel over 0..256 (8-bit data) or the
         data's range, each bin counted from 1 (Laplace): D = -ln P(bin)
Seeded pixels are hard constraints: their other label costs K = 1 + the largest
sum of n-link weights at any pixel. Every term is multiplied by 100 and rounded
to the integer capacities of the graph: a grid graph for 4 (2-D) and 6 (3-D)
neighbours, a general network (source and sink the last two nodes) for 8, 18
and 26, whose diagonal arcs the grid type does not have.
Seeds: --seeds, a scribble image: red (R >= 128, G and B < 100) foreground,
blue (B >= 128, R and G < 100) background. --trimap: 0 background, 255
foreground, anything else unknown. --labels: 0 unknown, 1 foreground, 2
background (scikit-image's random_walker convention); any other value is an
error. A trimap or label mask is a PNG for images (lossless: JPEG is refused)
or an .npy of the input's shape (Y x X, or Z x Y x X for a volume).
Volumes: an .npy of shape Z x Y x X (uint8, int8/16/32/64, uint16/32/64, bool,
float32 or float64); their mask is written as .npy (uint8, 1 = foreground).";

/// `--lambda`'s default.
const LAMBDA: f64 = 5.0;
/// `--sigma`'s default for 8-bit inputs, in grey levels.
const SIGMA_8BIT: f64 = 10.0;

/// How the data term's models are chosen.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelArg {
    /// One Gaussian per label.
    Gauss,
    /// One histogram per label.
    Hist,
}

/// `trident segment` flags.
#[derive(clap::Args, Debug)]
#[command(after_long_help = ENERGY)]
pub struct Args {
    /// Input: a PNG or JPEG image (grey or colour), or an .npy array: Y x X
    /// (an image) or Z x Y x X (a volume).
    #[arg(value_name = "INPUT")]
    image: PathBuf,
    /// Output mask: an image (255 foreground, 0 background; PNG unless the
    /// name ends in .jpg), or .npy (uint8, 1 foreground, 0 background; the
    /// only choice for a volume).
    #[arg(short, long)]
    output: PathBuf,
    /// Scribble image of the same size: red pixels are foreground, blue background.
    #[arg(long, group = "seed")]
    seeds: Option<PathBuf>,
    /// Trimap of the same shape (PNG or .npy): 0 background, 255 foreground,
    /// any other value unknown.
    #[arg(long, group = "seed")]
    trimap: Option<PathBuf>,
    /// Label mask of the same shape (PNG or .npy): 0 unknown, 1 foreground,
    /// 2 background.
    #[arg(long, group = "seed")]
    labels: Option<PathBuf>,
    /// Model of each label's pixel values.
    #[arg(long, value_enum, default_value_t = ModelArg::Gauss)]
    model: ModelArg,
    /// Histogram bins per channel (--model hist): 2..=256 for grey, 2..=64 for colour.
    #[arg(long, default_value_t = 16)]
    bins: usize,
    /// Use grey levels of a colour image (colour images use RGB otherwise).
    #[arg(long, visible_alias = "gray")]
    grey: bool,
    /// Neighbours per pixel: 4 or 8 for images, 6, 18 or 26 for volumes
    /// (default 4 or 6).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(["4", "8", "6", "18", "26"]))]
    connectivity: Option<String>,
    /// Weight of the smoothness term.
    #[arg(long, default_value_t = LAMBDA, allow_negative_numbers = true)]
    lambda: f64,
    /// Intensity difference that counts as an edge, in the input's units, or
    /// `auto` (from the data). Default: 10 for 8-bit inputs, auto otherwise.
    #[arg(long, allow_negative_numbers = true)]
    sigma: Option<String>,
    /// Without seeds: the foreground is the darker cluster.
    #[arg(long)]
    dark: bool,
}

/// Where the hard labels came from, for messages and the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SeedKind {
    Scribbles,
    Trimap,
    Labels,
}

impl SeedKind {
    fn name(self) -> &'static str {
        match self {
            SeedKind::Scribbles => "scribbles",
            SeedKind::Trimap => "trimap",
            SeedKind::Labels => "labels",
        }
    }
    /// What a file without one of the labels lacks.
    fn missing(self, fg: bool) -> &'static str {
        match (self, fg) {
            (SeedKind::Scribbles, true) => {
                "no foreground seeds: expected red pixels (R >= 128, G, B < 100)"
            }
            (SeedKind::Scribbles, false) => {
                "no background seeds: expected blue pixels (B >= 128, R, G < 100)"
            }
            (SeedKind::Trimap, true) => "no foreground pixels: a trimap marks them 255",
            (SeedKind::Trimap, false) => "no background pixels: a trimap marks them 0",
            (SeedKind::Labels, true) => "no foreground pixels: a label mask marks them 1",
            (SeedKind::Labels, false) => "no background pixels: a label mask marks them 2",
        }
    }
}

/// The checked numeric flags.
struct Params {
    lambda: f64,
    sigma: Sigma,
    family: Family,
}

/// `--sigma`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sigma {
    /// Not given: 10 for 8-bit inputs, from the data otherwise.
    Default,
    /// `auto`: from the data.
    Auto,
    /// A value in the input's units.
    Value(f64),
}

fn params(args: &Args) -> CliResult<Params> {
    if !(args.lambda.is_finite() && args.lambda >= 0.0) {
        return Err(Fail::Usage(format!(
            "--lambda {}: expected a finite number >= 0",
            args.lambda
        )));
    }
    let sigma = match args.sigma.as_deref() {
        None => Sigma::Default,
        Some("auto") => Sigma::Auto,
        Some(t) => match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Sigma::Value(v),
            _ => {
                return Err(Fail::Usage(format!(
                    "--sigma {t}: expected a finite number > 0 or auto"
                )));
            }
        },
    };
    let family = match args.model {
        ModelArg::Gauss => Family::Gauss,
        ModelArg::Hist => {
            if !(2..=256).contains(&args.bins) {
                return Err(Fail::Usage(format!(
                    "--bins {}: expected 2..=256",
                    args.bins
                )));
            }
            Family::Hist { bins: args.bins }
        }
    };
    Ok(Params {
        lambda: args.lambda,
        sigma,
        family,
    })
}

/// Reads, builds the graph, cuts, writes the mask.
pub fn run(ctx: &Ctx, args: Args) -> CliResult<Outcome> {
    // The mask's format by extension, checked before any input is read
    // (`None`: a uint8 .npy array).
    let format = io::output_format(
        "segment",
        "--output",
        &args.output,
        &[
            ("png", Some(ImageFormat::Png)),
            ("jpg", Some(ImageFormat::Jpeg)),
            ("jpeg", Some(ImageFormat::Jpeg)),
            ("npy", None),
        ],
    )?;
    let p = params(&args)?;
    let t0 = Instant::now();
    let (field, colour_image) = read_input(&args.image, args.grey, &ctx.progress)?;
    let (d, h, w) = field.field.shape;
    let three_d = field.shape_is_3d;
    let connectivity: u32 = match args.connectivity.as_deref() {
        None if three_d => 6,
        None => 4,
        Some(c) => c.parse().unwrap_or(0),
    };
    match (three_d, connectivity) {
        (false, 4 | 8) | (true, 6 | 18 | 26) => {}
        (false, c) => {
            return Err(Fail::Usage(format!(
                "--connectivity {c}: {} is an image, which takes 4 or 8",
                args.image.display()
            )));
        }
        (true, c) => {
            return Err(Fail::Usage(format!(
                "--connectivity {c}: {} is a volume, which takes 6, 18 or 26",
                args.image.display()
            )));
        }
    }
    let npy_out = format.is_none();
    if three_d && !npy_out {
        return Err(Fail::Usage(format!(
            "-o {}: the mask of a volume is written as .npy",
            args.output.display()
        )));
    }
    if three_d && args.seeds.is_some() {
        return Err(Fail::Usage(
            "--seeds takes a scribble image; a volume's seeds are --labels or --trimap (.npy)"
                .into(),
        ));
    }
    if let (Family::Hist { bins }, 3) = (p.family, field.field.channels)
        && bins > 64
    {
        return Err(Fail::Usage(format!(
            "--bins {bins}: a colour histogram takes at most 64 bins per channel (64^3 in all)"
        )));
    }
    let seeds = read_seeds(&args, &field, &ctx.progress)?;
    let read_s = secs(t0);
    let f = &field.field;
    let n = f.nodes();
    let (labels, fit_from) = match &seeds {
        Some((kind, labels)) => {
            let (file, kind) = (seed_path(&args), *kind);
            for fg in [true, false] {
                let want = if fg {
                    Label::Foreground
                } else {
                    Label::Background
                };
                if !labels.contains(&want) {
                    return Err(bad_file(file, "data", kind.missing(fg)));
                }
            }
            (labels.clone(), None)
        }
        None => (vec![Label::Unknown; n], Some(energy::two_means(f))),
    };
    let (fg, bg) = match &fit_from {
        None => (
            Model::fit(
                f,
                p.family,
                (0..n).filter(|&v| labels[v] == Label::Foreground),
            ),
            Model::fit(
                f,
                p.family,
                (0..n).filter(|&v| labels[v] == Label::Background),
            ),
        ),
        Some(bright) => {
            let pick = |want: bool| (0..n).filter(move |&v| bright[v] == want);
            let (b, dk) = (
                Model::fit(f, p.family, pick(true)),
                Model::fit(f, p.family, pick(false)),
            );
            if args.dark { (dk, b) } else { (b, dk) }
        }
    };
    let offsets = energy::offsets(connectivity);
    let sigma2 = match (p.sigma, f.eight_bit) {
        (Sigma::Value(v), _) => v * v,
        (Sigma::Default, true) => SIGMA_8BIT * SIGMA_8BIT,
        (Sigma::Default, false) | (Sigma::Auto, _) => energy::auto_sigma2(f, &offsets),
    };
    let terms = Terms {
        labels: &labels,
        fg: &fg,
        bg: &bg,
        lambda: p.lambda,
        sigma2,
        connectivity,
    };
    let what = args.image.display().to_string();
    let (graph, hard) = energy::build(f, &terms).map_err(|e| Fail::from_lib(&what, e))?;
    // `cluster` is read only by the `dist` build's sharded path.
    #[cfg_attr(not(feature = "dist"), allow(unused_variables))]
    let (cluster, engine) = crate::ranks::setup(ctx)?;
    let pb = ctx
        .progress
        .spinner(format!("graph cut {}", field.describe()));
    let t1 = Instant::now();
    // Under a launcher, rank 0 solves (no sharded solver beats one device
    // yet): grids through `Sharded::grid_cut`, which also checks that every
    // rank built the same grid from the same files; general networks have
    // no sharded form. Rank 0 writes.
    let one_device = || match &graph {
        Graph::Grid(g) => engine.grid_cut(g).map(|c| (c.flow, c.source_side)),
        Graph::Network(g) => engine.network_flow(g).map(|c| (c.flow, c.source_side)),
    };
    // What the text output says about the ranks (nothing for one process).
    #[cfg_attr(not(feature = "dist"), allow(unused_mut))]
    let mut ranks = String::new();
    #[cfg(feature = "dist")]
    let cut = match &cluster {
        Some(cluster) => {
            let cut = match &graph {
                Graph::Grid(g) => trident::dist::Sharded::new(cluster, &engine)
                    .grid_cut(g)
                    .map(|c| (c.flow, c.source_side)),
                Graph::Network(_) if cluster.rank() == 0 => one_device(),
                Graph::Network(_) => Ok((0, Vec::new())),
            };
            if cut.is_ok() && cluster.rank() != 0 {
                pb.finish_and_clear();
                return Ok(crate::ranks::quiet(cluster));
            }
            ranks = format!(
                "rank 0 of {} ({}, one device solves): ",
                cluster.size(),
                cluster.comm().transport()
            );
            cut
        }
        None => one_device(),
    };
    #[cfg(not(feature = "dist"))]
    let cut = one_device();
    let (flow, mut side) = cut.map_err(|e| Fail::from_lib("segment", e))?;
    side.truncate(n);
    let compute_s = secs(t1);
    pb.finish_and_clear();
    let t2 = Instant::now();
    if npy_out {
        let shape: Vec<u64> = if three_d {
            vec![d as u64, h as u64, w as u64]
        } else {
            vec![h as u64, w as u64]
        };
        let bytes: Vec<u8> = side.iter().map(|&b| b as u8).collect();
        let data = npy::encode_u8(&shape, &bytes).map_err(|e| io::encode_fail(&args.output, e))?;
        Output::create(&args.output)?.write_all_and_commit(&data)?;
    } else {
        let mask = Image {
            width: w as u32,
            height: h as u32,
            pixels: side.clone(),
        };
        io::write_mask(&args.output, &mask, format.unwrap_or(ImageFormat::Png))?;
    }
    let write_s = secs(t2);
    let fg_pixels = side.iter().filter(|&&b| b).count();
    let features = if f.channels == 3 { "rgb" } else { "grey" };
    let family = match p.family {
        Family::Gauss => "gauss",
        Family::Hist { .. } => "hist",
    };
    let seed_json = match &seeds {
        Some((kind, l)) => json!({
            "kind": kind.name(),
            "foreground": l.iter().filter(|&&x| x == Label::Foreground).count(),
            "background": l.iter().filter(|&&x| x == Label::Background).count(),
        }),
        None => json!({"kind": "2-means", "foreground": 0, "background": 0}),
    };
    Ok(Outcome {
        text: format!(
            "{ranks}segment: {} ({features}, {family}, {connectivity}-connected), {fg_pixels} foreground {} ({:.1}%), cut {flow}, {compute_s:.3} s on {} -> {}\n",
            field.describe(),
            if three_d { "voxels" } else { "pixels" },
            100.0 * fg_pixels as f64 / (n as f64).max(1.0),
            engine.served_last(),
            args.output.display()
        ),
        json: json!({
            "ok": true, "backend": engine.served_last(),
            "width": w, "height": h, "depth": d, "volume": three_d,
            "foreground_pixels": fg_pixels, "cut": flow,
            "connectivity": connectivity,
            "graph": match graph { Graph::Grid(_) => "grid", Graph::Network(_) => "network" },
            "features": features, "colour_image": colour_image,
            "sigma": sigma2.sqrt(), "lambda": p.lambda, "hard_capacity": hard,
            "seeds": seed_json,
            "models": {"kind": family, "foreground": fg.describe(), "background": bg.describe()},
            "output": args.output.display().to_string(),
            "timings": {"read_s": read_s, "compute_s": compute_s, "write_s": write_s},
        }),
        ok: true,
    })
}

/// The graph `trident segment PATH` cuts with its defaults (no seeds: the
/// 2-means models; 4- or 6-connected), as a case for `trident bench`.
pub fn default_graph(
    path: &Path,
    progress: &crate::progress::Progress,
) -> CliResult<trident::GridGraph> {
    let (input, _) = read_input(path, false, progress)?;
    let f = &input.field;
    let n = f.nodes();
    let bright = &energy::two_means(f);
    let pick = |want: bool| (0..n).filter(move |&v| bright[v] == want);
    let (fg, bg) = (
        Model::fit(f, Family::Gauss, pick(true)),
        Model::fit(f, Family::Gauss, pick(false)),
    );
    let connectivity = if input.shape_is_3d { 6 } else { 4 };
    let offsets = energy::offsets(connectivity);
    let sigma2 = if f.eight_bit {
        SIGMA_8BIT * SIGMA_8BIT
    } else {
        energy::auto_sigma2(f, &offsets)
    };
    let labels = vec![Label::Unknown; n];
    let terms = Terms {
        labels: &labels,
        fg: &fg,
        bg: &bg,
        lambda: LAMBDA,
        sigma2,
        connectivity,
    };
    match energy::build(f, &terms) {
        Ok((Graph::Grid(g), _)) => Ok(g),
        Ok((Graph::Network(_), _)) => Err(Fail::Failed(format!(
            "{}: a {connectivity}-connected energy is a grid",
            path.display()
        ))),
        Err(e) => Err(Fail::from_lib(&path.display().to_string(), e)),
    }
}

/// The samples read from the input, with how they are laid out.
struct Input {
    field: Field,
    shape_is_3d: bool,
}

impl Input {
    /// `W x H` or `X x Y x Z` (as `trident segment` prints it).
    fn describe(&self) -> String {
        let (d, h, w) = self.field.shape;
        if self.shape_is_3d {
            format!("{w} x {h} x {d}")
        } else {
            format!("{w} x {h}")
        }
    }
    /// The file's own dimensions: `[h, w]` or `[d, h, w]`.
    fn dims(&self) -> Vec<usize> {
        let (d, h, w) = self.field.shape;
        if self.shape_is_3d {
            vec![d, h, w]
        } else {
            vec![h, w]
        }
    }
}

/// The input as samples, and whether it is a colour image.
fn read_input(
    path: &Path,
    grey: bool,
    progress: &crate::progress::Progress,
) -> CliResult<(Input, bool)> {
    if io::extension(path) == "npy" {
        let s = read_samples(path, progress)?;
        let (shape, three_d) = match s.shape[..] {
            [h, w] => ((1, h, w), false),
            [d, h, w] => ((d, h, w), true),
            _ => {
                return Err(bad_file(
                    path,
                    "header",
                    format!(
                        "shape {:?}: expected Y x X (an image) or Z x Y x X (a volume)",
                        s.shape
                    ),
                ));
            }
        };
        if s.values.is_empty() {
            return Err(bad_file(
                path,
                "header",
                format!("shape {:?} has no elements", s.shape),
            ));
        }
        if shape.0 * shape.1 * shape.2 > trident_io::img::MAX_PIXELS as usize {
            return Err(bad_file(
                path,
                "header",
                format!(
                    "{} elements exceed {} (the grid's node ids are 32-bit)",
                    s.values.len(),
                    trident_io::img::MAX_PIXELS
                ),
            ));
        }
        let field = Field {
            shape,
            channels: 1,
            values: s.values,
            eight_bit: s.dtype == "uint8",
        };
        return Ok((
            Input {
                field,
                shape_is_3d: three_d,
            },
            false,
        ));
    }
    let bytes = io::read_all(path, progress)?;
    let rgb = trident_io::img::read_rgb(&bytes).map_err(|e| io::read_fail(path, e))?;
    let colour = rgb.pixels.iter().any(|p| p[0] != p[1] || p[1] != p[2]);
    let (w, h) = (rgb.width as usize, rgb.height as usize);
    let (channels, values) = if colour && !grey {
        (3, rgb.pixels.iter().flatten().map(|&c| c as f64).collect())
    } else if colour {
        // The grey levels `image` makes of colour (Rec. 709 luma).
        let g = trident_io::img::read_gray(&bytes).map_err(|e| io::read_fail(path, e))?;
        (1, g.pixels.iter().map(|&c| c as f64).collect())
    } else {
        (1, rgb.pixels.iter().map(|p| p[0] as f64).collect())
    };
    let field = Field {
        shape: (1, h, w),
        channels,
        values,
        eight_bit: true,
    };
    Ok((
        Input {
            field,
            shape_is_3d: false,
        },
        colour,
    ))
}

/// An `.npy` file as samples.
fn read_samples(path: &Path, progress: &crate::progress::Progress) -> CliResult<npy::Samples> {
    let bytes = io::read_all(path, progress)?;
    npy::read_samples(&bytes).map_err(|e| io::read_fail(path, e))
}

/// The seed file given, if any.
fn seed_path(args: &Args) -> &Path {
    args.seeds
        .as_deref()
        .or(args.trimap.as_deref())
        .or(args.labels.as_deref())
        .unwrap_or(&args.image)
}

/// `(y, x)` or `(z, y, x)` of node `v`.
fn position(v: usize, input: &Input) -> String {
    let (_, h, w) = input.field.shape;
    let (x, y, z) = (v % w, (v / w) % h, v / (w * h));
    if input.shape_is_3d {
        format!("({z}, {y}, {x})")
    } else {
        format!("({y}, {x})")
    }
}

/// The hard labels of `--seeds`, `--trimap` or `--labels`, checked against
/// the input's shape and the file's value convention.
fn read_seeds(
    args: &Args,
    input: &Input,
    progress: &crate::progress::Progress,
) -> CliResult<Option<(SeedKind, Vec<Label>)>> {
    let dims = input.dims();
    let show = |d: &[usize]| {
        d.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" x ")
    };
    let mismatch = |path: &Path, got: &[usize]| {
        Fail::BadInput(format!(
            "{}: the seeds are {} but {} is {}; they must match",
            path.display(),
            show(got),
            args.image.display(),
            show(&dims)
        ))
    };
    if let Some(p) = &args.seeds {
        let Image {
            width,
            height,
            pixels,
        } = io::read_seeds(p, progress)?;
        let got = [height as usize, width as usize];
        if got[..] != dims[..] {
            // Said as width x height, as image tools do.
            return Err(Fail::BadInput(format!(
                "{}: the seed image is {width} x {height} but {} is {} x {}; they must match",
                p.display(),
                args.image.display(),
                dims[1],
                dims[0]
            )));
        }
        let labels = pixels
            .iter()
            .map(|s| match s {
                Seed::None => Label::Unknown,
                Seed::Foreground => Label::Foreground,
                Seed::Background => Label::Background,
            })
            .collect();
        return Ok(Some((SeedKind::Scribbles, labels)));
    }
    let (path, kind) = match (&args.trimap, &args.labels) {
        (Some(p), _) => (p, SeedKind::Trimap),
        (None, Some(p)) => (p, SeedKind::Labels),
        (None, None) => return Ok(None),
    };
    let (got, values): (Vec<usize>, Vec<f64>) = match io::extension(path).as_str() {
        "npy" => {
            let s = read_samples(path, progress)?;
            (s.shape, s.values)
        }
        "jpg" | "jpeg" => {
            return Err(bad_file(
                path,
                "name",
                format!(
                    "a {} must be lossless (PNG or .npy): JPEG changes its values",
                    kind.name()
                ),
            ));
        }
        _ => {
            let g = io::read_gray(path, progress)?;
            (
                vec![g.height as usize, g.width as usize],
                g.pixels.iter().map(|&v| v as f64).collect(),
            )
        }
    };
    if got != dims {
        return Err(mismatch(path, &got));
    }
    let mut labels = Vec::with_capacity(values.len());
    for (v, &x) in values.iter().enumerate() {
        let l = match (kind, x) {
            (SeedKind::Trimap, 0.0) => Label::Background,
            (SeedKind::Trimap, 255.0) => Label::Foreground,
            (SeedKind::Trimap, _) => Label::Unknown,
            (_, 0.0) => Label::Unknown,
            (_, 1.0) => Label::Foreground,
            (_, 2.0) => Label::Background,
            (_, x) => {
                return Err(bad_file(
                    path,
                    "data",
                    format!(
                        "element {} is {x}; a label mask holds 0 (unknown), 1 (foreground) or 2 (background)",
                        position(v, input)
                    ),
                ));
            }
        };
        labels.push(l);
    }
    Ok(Some((kind, labels)))
}
