//! Max-flow inputs: segmentation grids and general networks.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Normal};
use trident_core::{Dir, FlowArc, FlowNetwork, GridGraph};

use crate::cases::rng;

/// The image model behind [`segmentation_grid`]: foreground and background
/// mean intensities, the noise sigma, and the energy weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentationParams {
    /// Mean intensity of the shapes.
    pub fg_mean: f64,
    /// Mean intensity of the background.
    pub bg_mean: f64,
    /// Standard deviation of the Gaussian noise (also the contrast scale of the
    /// smoothness term).
    pub sigma: f64,
    /// Weight of the smoothness term, in data-term units.
    pub lambda: f64,
    /// Every energy is multiplied by this and rounded to an integer capacity.
    pub scale: f64,
}

impl Default for SegmentationParams {
    /// Shapes at 180 on 70, noise sigma 30, lambda 2, scale 10: the data term
    /// dominates in clean regions and the smoothness term cleans up the noise.
    fn default() -> Self {
        Self {
            fg_mean: 180.0,
            bg_mean: 70.0,
            sigma: 30.0,
            lambda: 2.0,
            scale: 10.0,
        }
    }
}

/// A noisy synthetic `h x w` grey image (row-major): a few discs and rectangles
/// at the foreground mean on the background mean, plus Gaussian noise, rounded
/// and clamped to 0..=255.
pub fn synthetic_image(h: usize, w: usize, p: &SegmentationParams, seed: u64) -> Vec<u8> {
    let mut r = rng(seed);
    let mut clean = vec![p.bg_mean; h * w];
    let side = h.min(w) as f64;
    for shape in 0..5 {
        let cy = r.random_range(0.0..1.0) * h as f64;
        let cx = r.random_range(0.0..1.0) * w as f64;
        let size = side * r.random_range(0.08..0.25);
        for y in 0..h {
            for x in 0..w {
                let (dy, dx) = (y as f64 - cy, x as f64 - cx);
                let inside = if shape % 2 == 0 {
                    dy * dy + dx * dx <= size * size
                } else {
                    dy.abs() <= size && dx.abs() <= size * 0.6
                };
                if inside {
                    clean[y * w + x] = p.fg_mean;
                }
            }
        }
    }
    let noise = Normal::new(0.0, p.sigma).expect("finite sigma");
    clean
        .iter()
        .map(|&c| (c + noise.sample(&mut r)).round().clamp(0.0, 255.0) as u8)
        .collect()
}

/// The 4-connected segmentation graph of an `h x w` image. Source side =
/// foreground. Terminal capacities are the scaled negative log-likelihoods of
/// the Gaussian intensity models: `source[v] = scale * (I - bg)^2 / 2 sigma^2`
/// (paid when v is labelled background) and `sink[v] = scale * (I - fg)^2 / 2
/// sigma^2`; each neighbour arc, both directions, is `scale * lambda *
/// exp(-(Ip - Iq)^2 / 2 sigma^2)`; all rounded to integers.
pub fn segmentation_grid(image: &[u8], h: usize, w: usize, p: &SegmentationParams) -> GridGraph {
    assert_eq!(image.len(), h * w, "image has h * w pixels");
    let nodes = h * w;
    let (source, sink) = data_terms(image, p);
    let mut caps = vec![0i64; 4 * nodes];
    let geometry = GridGraph::new_2d(h, w, vec![0; nodes], vec![0; nodes], vec![0; 4 * nodes])
        .expect("an all-zero grid is valid");
    for v in 0..nodes {
        for dir in [Dir::PosX, Dir::NegX, Dir::PosY, Dir::NegY] {
            if let Some(u) = geometry.neighbor(v, dir) {
                caps[dir as usize * nodes + v] = smoothness(image[v], image[u], p);
            }
        }
    }
    GridGraph::new_2d(h, w, source, sink, caps).expect("segmentation capacities are valid")
}

/// Terminal capacities of every pixel (see [`segmentation_grid`]).
fn data_terms(image: &[u8], p: &SegmentationParams) -> (Vec<i64>, Vec<i64>) {
    let nll = |i: f64, mean: f64| {
        (p.scale * (i - mean).powi(2) / (2.0 * p.sigma * p.sigma)).round() as i64
    };
    let source = image.iter().map(|&i| nll(i as f64, p.bg_mean)).collect();
    let sink = image.iter().map(|&i| nll(i as f64, p.fg_mean)).collect();
    (source, sink)
}

/// The neighbour weight of two intensities (see [`segmentation_grid`]).
fn smoothness(a: u8, b: u8, p: &SegmentationParams) -> i64 {
    let d = a as f64 - b as f64;
    (p.scale * p.lambda * (-d * d / (2.0 * p.sigma * p.sigma)).exp()).round() as i64
}

/// A noisy synthetic `n x n x n` grey volume (z-major): a few balls and boxes
/// at the foreground mean on the background mean, plus Gaussian noise, like
/// [`synthetic_image`] in 3-D.
pub fn synthetic_volume(n: usize, p: &SegmentationParams, seed: u64) -> Vec<u8> {
    let mut r = rng(seed);
    let mut clean = vec![p.bg_mean; n * n * n];
    for shape in 0..5 {
        let c: [f64; 3] = std::array::from_fn(|_| r.random_range(0.0..1.0) * n as f64);
        let size = n as f64 * r.random_range(0.08..0.25);
        for z in 0..n {
            for y in 0..n {
                for x in 0..n {
                    let d = [z as f64 - c[0], y as f64 - c[1], x as f64 - c[2]];
                    let inside = if shape % 2 == 0 {
                        d.iter().map(|t| t * t).sum::<f64>() <= size * size
                    } else {
                        d[0].abs() <= size && d[1].abs() <= size * 0.6 && d[2].abs() <= size
                    };
                    if inside {
                        clean[(z * n + y) * n + x] = p.fg_mean;
                    }
                }
            }
        }
    }
    let noise = Normal::new(0.0, p.sigma).expect("finite sigma");
    clean
        .iter()
        .map(|&c| (c + noise.sample(&mut r)).round().clamp(0.0, 255.0) as u8)
        .collect()
}

/// The `cut3d-N` case: the 6-connected segmentation grid of an `n^3`
/// [`synthetic_volume`], terms as in [`segmentation_grid`] with
/// [`SegmentationParams::default`].
pub fn cut3d(n: usize, seed: u64) -> GridGraph {
    let p = SegmentationParams::default();
    let vol = synthetic_volume(n, &p, seed);
    let nodes = n * n * n;
    let (source, sink) = data_terms(&vol, &p);
    let zeros = |k| vec![0i64; k];
    let geometry = GridGraph::new_3d(n, n, n, zeros(nodes), zeros(nodes), zeros(6 * nodes))
        .expect("an all-zero grid is valid");
    let mut caps = vec![0i64; 6 * nodes];
    for (d, &dir) in geometry.dirs().iter().enumerate() {
        for v in 0..nodes {
            if let Some(u) = geometry.neighbor(v, dir) {
                caps[d * nodes + v] = smoothness(vol[v], vol[u], &p);
            }
        }
    }
    GridGraph::new_3d(n, n, n, source, sink, caps).expect("segmentation capacities are valid")
}

/// The `cut-N` benchmark case: the segmentation grid of an `n x n` synthetic image
/// with [`SegmentationParams::default`].
pub fn cut(n: usize, seed: u64) -> GridGraph {
    let p = SegmentationParams::default();
    let img = synthetic_image(n, n, &p, seed);
    segmentation_grid(&img, n, n, &p)
}

/// A random grid, `depth x h x w` 6-connected when `three_d`, else `h x w`
/// 4-connected (`depth` ignored), with terminal capacities in `0..=max_cap` (about a third zero) and
/// asymmetric neighbour capacities in `0..=max_cap`, zero off the border.
pub fn random_grid(
    depth: usize,
    h: usize,
    w: usize,
    three_d: bool,
    max_cap: i64,
    seed: u64,
) -> GridGraph {
    let mut r = rng(seed);
    let depth = if three_d { depth } else { 1 };
    let nodes = depth * h * w;
    let dirs = if three_d { 6 } else { 4 };
    let term = |r: &mut rand_chacha::ChaCha8Rng| {
        if r.random_bool(0.33) {
            0
        } else {
            r.random_range(0..=max_cap)
        }
    };
    let source: Vec<i64> = (0..nodes).map(|_| term(&mut r)).collect();
    let sink: Vec<i64> = (0..nodes).map(|_| term(&mut r)).collect();
    let mut caps = vec![0i64; dirs * nodes];
    let zeros = |n| vec![0i64; n];
    let geometry = if three_d {
        GridGraph::new_3d(depth, h, w, zeros(nodes), zeros(nodes), zeros(6 * nodes))
    } else {
        GridGraph::new_2d(h, w, zeros(nodes), zeros(nodes), zeros(4 * nodes))
    }
    .expect("an all-zero grid is valid");
    for (d, &dir) in geometry.dirs().iter().enumerate() {
        for v in 0..nodes {
            if geometry.neighbor(v, dir).is_some() {
                caps[d * nodes + v] = r.random_range(0..=max_cap);
            }
        }
    }
    if three_d {
        GridGraph::new_3d(depth, h, w, source, sink, caps)
    } else {
        GridGraph::new_2d(h, w, source, sink, caps)
    }
    .expect("random grid capacities are valid")
}

/// A Goldfarb-Grigoriadis RMF network (the DIMACS `genrmf` family): `b` frames,
/// each an `a x a` grid whose neighbouring nodes are joined both ways with
/// capacity `c2 * a * a`; node `i` of frame `f` has an arc to node `perm_f(i)`
/// of frame `f + 1` (a fresh random permutation per frame) with capacity
/// uniform in `[c1, c2]`. Source: the first node of the first frame; sink: the
/// last node of the last frame. Node `f * a * a + y * a + x`; `a * a * b`
/// nodes, `4 a (a - 1) b + a * a * (b - 1)` arcs.
pub fn genrmf(a: usize, b: usize, c1: i64, c2: i64, seed: u64) -> FlowNetwork {
    assert!(
        a >= 1 && b >= 1 && a * a * b >= 2,
        "genrmf needs at least two nodes"
    );
    assert!(0 <= c1 && c1 <= c2, "genrmf needs 0 <= c1 <= c2");
    let mut r = rng(seed);
    let frame = a * a;
    let nodes = frame * b;
    let inner = c2 * (a * a) as i64;
    let mut arcs = Vec::with_capacity(4 * a * a * b + frame * b);
    for f in 0..b {
        let base = f * frame;
        for y in 0..a {
            for x in 0..a {
                let v = base + y * a + x;
                let mut link = |u: usize| {
                    arcs.push(FlowArc {
                        from: v as u32,
                        to: u as u32,
                        cap: inner,
                    });
                };
                if x + 1 < a {
                    link(v + 1);
                }
                if x > 0 {
                    link(v - 1);
                }
                if y + 1 < a {
                    link(v + a);
                }
                if y > 0 {
                    link(v - a);
                }
            }
        }
        if f + 1 < b {
            let mut perm: Vec<usize> = (0..frame).collect();
            perm.shuffle(&mut r);
            for (i, &p) in perm.iter().enumerate() {
                arcs.push(FlowArc {
                    from: (base + i) as u32,
                    to: (base + frame + p) as u32,
                    cap: r.random_range(c1..=c2),
                });
            }
        }
    }
    FlowNetwork::new(nodes, 0, (nodes - 1) as u32, arcs).expect("genrmf networks are valid")
}

/// A random network: `arcs` arcs between random nodes (parallel arcs and
/// self-loops possible) with capacities in `0..=max_cap`, s = 0, t = nodes - 1.
pub fn random_network(nodes: usize, arcs: usize, max_cap: i64, seed: u64) -> FlowNetwork {
    assert!(nodes >= 2, "a network needs s != t");
    let mut r = rng(seed);
    let arcs = (0..arcs)
        .map(|_| FlowArc {
            from: r.random_range(0..nodes) as u32,
            to: r.random_range(0..nodes) as u32,
            cap: r.random_range(0..=max_cap),
        })
        .collect();
    FlowNetwork::new(nodes, 0, (nodes - 1) as u32, arcs).expect("random network is valid")
}

/// A `1 x len` grid whose flow must travel the whole row: source capacity at
/// `x = 0` only, sink capacity at the last node only, `+x` capacities uniform
/// in `3..=9` and `-x` capacities in `0..=9`. Parallel push-relabel's worst
/// case: each global relabel is a breadth-first search `len` levels deep,
/// and excess moves about one node per push launch. The source and sink
/// capacities (9) exceed the path's bottleneck, so excess is left stranded
/// along the row.
pub fn path_grid(len: usize, seed: u64) -> GridGraph {
    assert!(len >= 1, "a path grid needs a node");
    let mut r = rng(seed);
    let mut caps = vec![0i64; 4 * len];
    for x in 0..len - 1 {
        caps[Dir::PosX as usize * len + x] = r.random_range(3..=9);
        caps[Dir::NegX as usize * len + x + 1] = r.random_range(0..=9);
    }
    let mut source = vec![0i64; len];
    let mut sink = vec![0i64; len];
    source[0] = 9;
    sink[len - 1] += 9;
    GridGraph::new_2d(1, len, source, sink, caps).expect("path capacities are valid")
}

/// The network version of [`path_grid`]: a chain `0 -> 1 -> ... -> len - 1`
/// (s = 0, t = len - 1) with forward capacities uniform in `3..=1000` and a
/// backward arc of capacity `0..=9` beside each, so that excess strands
/// behind every bottleneck.
pub fn path_network(len: usize, seed: u64) -> FlowNetwork {
    assert!(len >= 2, "a network needs s != t");
    let mut r = rng(seed);
    let mut arcs = Vec::with_capacity(2 * (len - 1));
    for v in 0..len as u32 - 1 {
        arcs.push(FlowArc {
            from: v,
            to: v + 1,
            cap: r.random_range(3..=1000),
        });
        arcs.push(FlowArc {
            from: v + 1,
            to: v,
            cap: r.random_range(0..=9),
        });
    }
    FlowNetwork::new(len, 0, (len - 1) as u32, arcs).expect("path network is valid")
}
