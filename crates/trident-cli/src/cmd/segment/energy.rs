//! The segmentation energy and its graph: the data term's models (Gaussian or
//! histogram, grey or colour), their fit to seeds or to a 2-means of the
//! image, the contrast-sensitive smoothness term on 4/8 (2-D) or 6/18/26 (3-D)
//! neighbours, and the graph whose minimum cut minimises it (a `GridGraph`
//! where the library's grids have the neighbours, else a `FlowNetwork`).
//!
//! The energy of a labelling L (source side = foreground):
//!
//! `E(L) = sum_p D_p(L_p) + sum_{p,q neighbours, L_p != L_q} w_pq`
//!
//! with `D_p(l) = -ln P(I_p | model of l)` and
//! `w_pq = lambda exp(-|I_p - I_q|^2 / (2 sigma^2)) / dist(p, q)`
//! (Boykov and Jolly, ICCV 2001; |.| the Euclidean norm over the channels).
//! Seeded pixels are hard: their other label costs K (returned by
//! [`build`]), more than all of their n-links. Every cost is scaled by
//! [`SCALE`] and rounded to the integer capacities max-flow takes.

use nalgebra::{DMatrix, DVector};
use trident::{Dir, FlowArc, FlowNetwork, GridGraph};

/// Capacity units per unit of energy.
pub const SCALE: f64 = 100.0;
/// Laplace smoothing of the histograms: every bin starts with this count, so
/// a colour no seed has is unlikely, not impossible.
pub const HIST_PRIOR: f64 = 1.0;

/// The samples of an image or volume: `channels` values per node (1: grey, 3:
/// RGB), nodes in `(z * height + y) * width + x` order.
#[derive(Clone, Debug)]
pub struct Field {
    /// Depth (1 for images), height, width.
    pub shape: (usize, usize, usize),
    /// 1 or 3.
    pub channels: usize,
    /// `nodes * channels` values.
    pub values: Vec<f64>,
    /// Integer samples in 0..=255 (8-bit images, uint8 volumes): the
    /// histogram bins and the variance floor are taken over 0..256 then,
    /// else over the data's own range.
    pub eight_bit: bool,
}

impl Field {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.shape.0 * self.shape.1 * self.shape.2
    }
    fn at(&self, v: usize) -> &[f64] {
        &self.values[v * self.channels..(v + 1) * self.channels]
    }
    /// Lowest and highest value of each channel (0 and 256 for 8-bit data).
    fn range(&self) -> Vec<(f64, f64)> {
        if self.eight_bit {
            return vec![(0.0, 256.0); self.channels];
        }
        let mut r = vec![(f64::INFINITY, f64::NEG_INFINITY); self.channels];
        for px in self.values.chunks_exact(self.channels) {
            for (c, &x) in px.iter().enumerate() {
                r[c] = (r[c].0.min(x), r[c].1.max(x));
            }
        }
        r.into_iter()
            .map(|(lo, hi)| if lo < hi { (lo, hi) } else { (lo, lo + 1.0) })
            .collect()
    }
    /// The smallest variance a Gaussian may have: `(range / 127.5)^2`, 4 grey
    /// levels squared for 8-bit data, so a flat seed region does not make
    /// every other value infinitely unlikely.
    fn var_floor(&self) -> f64 {
        let widest = self
            .range()
            .iter()
            .map(|(lo, hi)| hi - lo)
            .fold(0.0, f64::max);
        let w = if self.eight_bit { 255.0 } else { widest };
        (w / 127.5).powi(2)
    }
}

/// A node's hard label, from scribbles, a trimap or a label mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// No constraint: the data term decides.
    Unknown,
    /// Must be foreground.
    Foreground,
    /// Must be background.
    Background,
}

/// The family of the data term's models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// One Gaussian per label (full covariance over the channels).
    Gauss,
    /// One histogram per label, `bins` per channel (joint over the channels).
    Hist {
        /// Bins per channel.
        bins: usize,
    },
}

/// One label's model of the samples.
#[derive(Clone, Debug)]
pub enum Model {
    /// `cost = (x - mean)^T cov^-1 (x - mean) / 2 + ln det(cov) / 2`.
    Gauss {
        mean: Vec<f64>,
        /// Covariance with its eigenvalues raised to the variance floor.
        cov: DMatrix<f64>,
        inv: DMatrix<f64>,
        log_det: f64,
    },
    /// `cost = -ln((count(bin) + HIST_PRIOR) / (total + HIST_PRIOR bins^c))`.
    Hist {
        bins: usize,
        range: Vec<(f64, f64)>,
        eight_bit: bool,
        /// `-ln P` per joint bin.
        cost: Vec<f64>,
        /// Samples the histogram was fitted to.
        total: usize,
    },
}

impl Model {
    /// Fits a model of `family` to the nodes `pick` of `field`.
    pub fn fit(field: &Field, family: Family, pick: impl Iterator<Item = usize> + Clone) -> Model {
        let c = field.channels;
        match family {
            Family::Gauss => {
                let mut n = 0usize;
                let mut mean = vec![0.0; c];
                for v in pick.clone() {
                    n += 1;
                    for (m, x) in mean.iter_mut().zip(field.at(v)) {
                        *m += x;
                    }
                }
                let nf = n.max(1) as f64;
                mean.iter_mut().for_each(|m| *m /= nf);
                let mut cov = DMatrix::<f64>::zeros(c, c);
                for v in pick {
                    let x = field.at(v);
                    for i in 0..c {
                        for j in 0..c {
                            cov[(i, j)] += (x[i] - mean[i]) * (x[j] - mean[j]);
                        }
                    }
                }
                cov /= nf;
                Self::gauss(mean, cov, field.var_floor())
            }
            Family::Hist { bins } => {
                let range = field.range();
                let size = bins.pow(c as u32);
                let mut count = vec![0usize; size];
                let mut total = 0usize;
                for v in pick {
                    count[bin(field.at(v), bins, &range, field.eight_bit)] += 1;
                    total += 1;
                }
                let denom = total as f64 + HIST_PRIOR * size as f64;
                let cost = count
                    .iter()
                    .map(|&k| -((k as f64 + HIST_PRIOR) / denom).ln())
                    .collect();
                Model::Hist {
                    bins,
                    range,
                    eight_bit: field.eight_bit,
                    cost,
                    total,
                }
            }
        }
    }

    /// A Gaussian of `mean` and `cov`, its eigenvalues raised to `floor`.
    fn gauss(mean: Vec<f64>, cov: DMatrix<f64>, floor: f64) -> Model {
        let eig = cov.symmetric_eigen();
        let vals: Vec<f64> = eig.eigenvalues.iter().map(|&l| l.max(floor)).collect();
        let v = &eig.eigenvectors;
        let cov = v * DMatrix::from_diagonal(&DVector::from_vec(vals.clone())) * v.transpose();
        let inv_vals = DVector::from_iterator(vals.len(), vals.iter().map(|l| 1.0 / l));
        let inv = v * DMatrix::from_diagonal(&inv_vals) * v.transpose();
        let log_det = vals.iter().map(|l| l.ln()).sum();
        Model::Gauss {
            mean,
            cov,
            inv,
            log_det,
        }
    }

    /// The data term of a sample: its negative log-likelihood (up to a
    /// constant shared by both labels).
    pub fn cost(&self, x: &[f64]) -> f64 {
        match self {
            Model::Gauss {
                mean, inv, log_det, ..
            } => {
                let c = mean.len();
                let mut q = 0.0;
                for i in 0..c {
                    for j in 0..c {
                        q += (x[i] - mean[i]) * inv[(i, j)] * (x[j] - mean[j]);
                    }
                }
                0.5 * q + 0.5 * log_det
            }
            Model::Hist {
                bins,
                range,
                eight_bit,
                cost,
                ..
            } => cost[bin(x, *bins, range, *eight_bit)],
        }
    }

    /// The model for the JSON report.
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Model::Gauss { mean, cov, .. } => {
                let rows: Vec<Vec<f64>> = (0..cov.nrows())
                    .map(|i| (0..cov.ncols()).map(|j| cov[(i, j)]).collect())
                    .collect();
                serde_json::json!({"mean": mean, "cov": rows})
            }
            Model::Hist { bins, total, .. } => {
                serde_json::json!({"bins": bins, "samples": total})
            }
        }
    }
}

/// The joint histogram bin of a sample: per channel `floor(x bins / 256)` for
/// 8-bit data, else `floor((x - lo) / (hi - lo) bins)` clamped to the last bin;
/// channel 0 varies slowest.
fn bin(x: &[f64], bins: usize, range: &[(f64, f64)], eight_bit: bool) -> usize {
    let mut idx = 0usize;
    for (c, &v) in x.iter().enumerate() {
        let b = if eight_bit {
            (v as usize * bins) / 256
        } else {
            let (lo, hi) = range[c];
            (((v - lo) / (hi - lo) * bins as f64).floor().max(0.0) as usize).min(bins - 1)
        };
        idx = idx * bins + b.min(bins - 1);
    }
    idx
}

/// Two clusters of the samples by Lloyd's 2-means, started from the darkest
/// and the brightest sample (by the sum of channels); a sample equally near
/// both goes to the dark one. Returns `true` for the bright cluster's nodes.
pub fn two_means(field: &Field) -> Vec<bool> {
    let c = field.channels;
    let n = field.nodes();
    let sum = |v: usize| field.at(v).iter().sum::<f64>();
    let (mut lo_v, mut hi_v) = (0usize, 0usize);
    for v in 0..n {
        if sum(v) < sum(lo_v) {
            lo_v = v;
        }
        if sum(v) > sum(hi_v) {
            hi_v = v;
        }
    }
    let (mut lo, mut hi) = if n == 0 {
        (vec![0.0; c], vec![0.0; c])
    } else {
        (field.at(lo_v).to_vec(), field.at(hi_v).to_vec())
    };
    let d2 = |x: &[f64], m: &[f64]| x.iter().zip(m).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
    let assign = |lo: &[f64], hi: &[f64]| -> Vec<bool> {
        (0..n)
            .map(|v| d2(field.at(v), hi) < d2(field.at(v), lo))
            .collect()
    };
    for _ in 0..20 {
        let bright = assign(&lo, &hi);
        let mean = |want: bool, old: &[f64]| {
            let mut m = vec![0.0; c];
            let mut k = 0usize;
            for v in (0..n).filter(|&v| bright[v] == want) {
                k += 1;
                for (a, x) in m.iter_mut().zip(field.at(v)) {
                    *a += x;
                }
            }
            if k == 0 {
                return old.to_vec();
            }
            m.iter_mut().for_each(|a| *a /= k as f64);
            m
        };
        let (nlo, nhi) = (mean(false, &lo), mean(true, &hi));
        if nlo == lo && nhi == hi {
            break;
        }
        (lo, hi) = (nlo, nhi);
    }
    assign(&lo, &hi)
}

/// Neighbour offsets `(dz, dy, dx)`, one per pair (the reverse arc is added
/// with it), for a connectivity: 4 or 8 in 2-D, 6, 18 or 26 in 3-D.
pub fn offsets(connectivity: u32) -> Vec<(isize, isize, isize)> {
    let mut o = vec![(0, 0, 1), (0, 1, 0)];
    if connectivity == 8 {
        o.extend([(0, 1, 1), (0, 1, -1)]);
    }
    if connectivity >= 6 && connectivity != 8 {
        o.push((1, 0, 0));
    }
    if connectivity >= 18 {
        o.extend([
            (0, 1, 1),
            (0, 1, -1),
            (1, 0, 1),
            (1, 0, -1),
            (1, 1, 0),
            (1, -1, 0),
        ]);
    }
    if connectivity == 26 {
        o.extend([(1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1)]);
    }
    o
}

/// The neighbour of `v` at `off`, if it is inside the shape.
fn step(v: usize, (d, h, w): (usize, usize, usize), off: (isize, isize, isize)) -> Option<usize> {
    let (x, y, z) = (v % w, (v / w) % h, v / (w * h));
    let nx = x.checked_add_signed(off.2).filter(|&t| t < w)?;
    let ny = y.checked_add_signed(off.1).filter(|&t| t < h)?;
    let nz = z.checked_add_signed(off.0).filter(|&t| t < d)?;
    Some((nz * h + ny) * w + nx)
}

/// `sigma^2` from the data (GrabCut's rule): the mean of `|I_p - I_q|^2` over
/// the neighbour pairs, 1 where that is 0 (a flat image).
pub fn auto_sigma2(field: &Field, offs: &[(isize, isize, isize)]) -> f64 {
    let (mut s, mut k) = (0.0, 0usize);
    for &off in offs {
        for v in 0..field.nodes() {
            if let Some(u) = step(v, field.shape, off) {
                s += dist2(field.at(v), field.at(u));
                k += 1;
            }
        }
    }
    if k == 0 || s == 0.0 {
        1.0
    } else {
        s / k as f64
    }
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// An energy rounded to a capacity.
fn q(x: f64) -> i64 {
    (x * SCALE).round() as i64
}

/// Everything the cut needs besides the samples.
pub struct Terms<'a> {
    /// Hard labels per node (all `Unknown` without seeds).
    pub labels: &'a [Label],
    pub fg: &'a Model,
    pub bg: &'a Model,
    pub lambda: f64,
    pub sigma2: f64,
    /// 4 or 8 (2-D), 6, 18 or 26 (3-D).
    pub connectivity: u32,
}

/// The graph of the energy, ready for max-flow.
pub enum Graph {
    /// 4- and 6-connected: the library's grid, which every backend cuts.
    Grid(GridGraph),
    /// 8-, 18- and 26-connected: the grids have no diagonal arcs, so a general
    /// network with the source and sink as the last two nodes.
    Network(FlowNetwork),
}

/// The graph of the energy and the hard constraint's capacity `K`.
pub fn build(field: &Field, t: &Terms) -> trident::Result<(Graph, i64)> {
    let n = field.nodes();
    let offs = offsets(t.connectivity);
    // n-links, one capacity per (offset, node) with a neighbour there.
    let weight = |v: usize, u: usize, len: f64| {
        q(t.lambda * (-dist2(field.at(v), field.at(u)) / (2.0 * t.sigma2)).exp() / len)
    };
    let mut links: Vec<Vec<i64>> = Vec::with_capacity(offs.len());
    let mut around = vec![0i64; n];
    for &off in &offs {
        let len = ((off.0 * off.0 + off.1 * off.1 + off.2 * off.2) as f64).sqrt();
        let mut plane = trident::mem::with_capacity(n, || format!("{n} n-link capacities"))?;
        for v in 0..n {
            let w = step(v, field.shape, off).map_or(0, |u| {
                let w = weight(v, u, len);
                around[u] = around[u].saturating_add(w);
                w
            });
            around[v] = around[v].saturating_add(w);
            plane.push(w);
        }
        links.push(plane);
    }
    // Boykov and Jolly's K: more than any node's n-links can ever cost.
    let hard = around.iter().copied().max().unwrap_or(0).saturating_add(1);
    let mut source = vec![0i64; n];
    let mut sink = vec![0i64; n];
    for v in 0..n {
        match t.labels[v] {
            Label::Foreground => source[v] = hard,
            Label::Background => sink[v] = hard,
            Label::Unknown => {
                let x = field.at(v);
                let (cf, cb) = (t.fg.cost(x), t.bg.cost(x));
                let m = cf.min(cb);
                // Cutting s -> v labels v background: it costs the background term.
                source[v] = q(cb - m);
                sink[v] = q(cf - m);
            }
        }
    }
    let (d, h, w) = field.shape;
    let graph = if matches!(t.connectivity, 4 | 6) {
        let three_d = t.connectivity == 6;
        let planes = if three_d { 6 } else { 4 };
        let mut caps =
            trident::mem::with_capacity(planes * n, || format!("{} grid capacities", planes * n))?;
        caps.resize(planes * n, 0);
        // offsets() lists +x, +y (and +z): the forward directions.
        let dirs = [
            (Dir::PosX, Dir::NegX),
            (Dir::PosY, Dir::NegY),
            (Dir::PosZ, Dir::NegZ),
        ];
        for (k, &off) in offs.iter().enumerate() {
            let (fwd, back) = dirs[k];
            for v in 0..n {
                if let Some(u) = step(v, field.shape, off) {
                    caps[fwd as usize * n + v] = links[k][v];
                    caps[back as usize * n + u] = links[k][v];
                }
            }
        }
        if three_d {
            Graph::Grid(GridGraph::new_3d(d, h, w, source, sink, caps)?)
        } else {
            Graph::Grid(GridGraph::new_2d(h, w, source, sink, caps)?)
        }
    } else {
        let (s, tt) = (n as u32, n as u32 + 1);
        // At most two terminal arcs and two per neighbour pair a node: asked
        // for up front, so a volume too large for memory is an error, not an abort.
        let most = n.saturating_mul(2 + 2 * offs.len());
        let mut arcs = trident::mem::with_capacity(most, || format!("{most} arcs"))?;
        for v in 0..n {
            if source[v] > 0 {
                arcs.push(FlowArc {
                    from: s,
                    to: v as u32,
                    cap: source[v],
                });
            }
            if sink[v] > 0 {
                arcs.push(FlowArc {
                    from: v as u32,
                    to: tt,
                    cap: sink[v],
                });
            }
        }
        for (k, &off) in offs.iter().enumerate() {
            for v in 0..n {
                let cap = links[k][v];
                if cap == 0 {
                    continue;
                }
                if let Some(u) = step(v, field.shape, off) {
                    let (v, u) = (v as u32, u as u32);
                    arcs.push(FlowArc {
                        from: v,
                        to: u,
                        cap,
                    });
                    arcs.push(FlowArc {
                        from: u,
                        to: v,
                        cap,
                    });
                }
            }
        }
        // Inputs hold at most 2^28 nodes (checked when read), so ids fit u32.
        let nodes = n.saturating_add(2);
        Graph::Network(FlowNetwork::new(nodes, s, tt, arcs)?)
    };
    Ok((graph, hard))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trident::MaxFlow;

    fn field(shape: (usize, usize, usize), channels: usize, values: Vec<f64>) -> Field {
        Field {
            shape,
            channels,
            values,
            eight_bit: true,
        }
    }

    #[test]
    fn offsets_count_each_pair_once() {
        for (c, k) in [(4, 2), (8, 4), (6, 3), (18, 9), (26, 13)] {
            let o = offsets(c);
            assert_eq!(o.len(), k, "{c}");
            let mut all: Vec<_> = o
                .iter()
                .flat_map(|&(a, b, d)| [(a, b, d), (-a, -b, -d)])
                .collect();
            all.sort();
            all.dedup();
            assert_eq!(all.len(), c as usize, "{c}-connectivity has {c} neighbours");
        }
    }

    #[test]
    fn a_grey_gaussian_is_the_one_dimensional_formula() {
        let f = field((1, 1, 4), 1, vec![10.0, 12.0, 14.0, 16.0]);
        let m = Model::fit(&f, Family::Gauss, 0..4);
        // mean 13, variance 5: (x - 13)^2 / 10 + ln(5) / 2.
        assert!((m.cost(&[20.0]) - (4.9 + 0.5 * 5f64.ln())).abs() < 1e-12);
        // A flat region gets the floor, 4 grey levels squared.
        let m = Model::fit(&f, Family::Gauss, 0..1);
        assert!((m.cost(&[14.0]) - (16.0 / 8.0 + 0.5 * 4f64.ln())).abs() < 1e-12);
    }

    #[test]
    fn a_colour_gaussian_uses_the_full_covariance() {
        // Samples along the red = green diagonal: a colour off the diagonal
        // costs more than one as far along it.
        let vals = [0.0, 0.0, 50.0, 100.0, 100.0, 50.0, 200.0, 200.0, 50.0];
        let f = field((1, 1, 3), 3, vals.to_vec());
        let m = Model::fit(&f, Family::Gauss, 0..3);
        let along = m.cost(&[150.0, 150.0, 50.0]);
        let across = m.cost(&[100.0 + 35.4, 100.0 - 35.4, 50.0]);
        assert!(across > along + 100.0, "{along} {across}");
    }

    #[test]
    fn histograms_are_laplace_smoothed() {
        let f = field((1, 1, 3), 1, vec![0.0, 10.0, 250.0]);
        let m = Model::fit(&f, Family::Hist { bins: 4 }, 0..3);
        // Bins of 64 grey levels: counts 2, 0, 0, 1 plus one each, over 3 + 4.
        assert!((m.cost(&[20.0]) + (3f64 / 7.0).ln()).abs() < 1e-12);
        assert!((m.cost(&[100.0]) + (1f64 / 7.0).ln()).abs() < 1e-12);
        assert!((m.cost(&[255.0]) + (2f64 / 7.0).ln()).abs() < 1e-12);
    }

    #[test]
    fn two_means_splits_dark_from_bright() {
        let f = field((1, 1, 6), 1, vec![10.0, 200.0, 12.0, 190.0, 11.0, 100.0]);
        assert_eq!(two_means(&f), [false, true, false, true, false, false]);
        // Red, dark blue, red: the blue starts the dark cluster.
        let rgb = field(
            (1, 1, 3),
            3,
            vec![200.0, 10.0, 10.0, 10.0, 10.0, 100.0, 190.0, 20.0, 10.0],
        );
        assert_eq!(two_means(&rgb), [true, false, true]);
    }

    /// A 4-connected energy cut as the grid and as a network: the same flow
    /// and the same canonical cut.
    #[test]
    fn the_network_of_a_four_connected_energy_cuts_like_the_grid() {
        let (h, w) = (7, 9);
        let vals: Vec<f64> = (0..h * w)
            .map(|i| if (i % w) > 3 && (i / w) > 2 { 180.0 } else { 60.0 } + ((i * 37) % 23) as f64)
            .collect();
        let f = field((1, h, w), 1, vals);
        let bright = two_means(&f);
        let fg = Model::fit(&f, Family::Gauss, (0..h * w).filter(|&v| bright[v]));
        let bg = Model::fit(&f, Family::Gauss, (0..h * w).filter(|&v| !bright[v]));
        let mut labels = vec![Label::Unknown; h * w];
        labels[0] = Label::Foreground; // against the data, to exercise K
        let t = Terms {
            labels: &labels,
            fg: &fg,
            bg: &bg,
            lambda: 5.0,
            sigma2: 100.0,
            connectivity: 4,
        };
        let (Graph::Grid(g), _) = build(&f, &t).unwrap() else {
            panic!("4-connected is a grid")
        };
        let rayon = trident::RayonBackend::new().unwrap();
        let grid = rayon.grid_cut(&g).unwrap();
        assert!(grid.source_side[0]);
        // The same arcs as a network.
        let n = h * w;
        let (s, t_) = (n as u32, n as u32 + 1);
        let mut arcs = Vec::new();
        for v in 0..n {
            arcs.push(FlowArc {
                from: s,
                to: v as u32,
                cap: g.source()[v],
            });
            arcs.push(FlowArc {
                from: v as u32,
                to: t_,
                cap: g.sink()[v],
            });
            for &dir in g.dirs() {
                if let Some(u) = g.neighbor(v, dir) {
                    arcs.push(FlowArc {
                        from: v as u32,
                        to: u as u32,
                        cap: g.plane(dir)[v],
                    });
                }
            }
        }
        let net = rayon
            .network_flow(&FlowNetwork::new(n + 2, s, t_, arcs).unwrap())
            .unwrap();
        assert_eq!(net.flow, grid.flow);
        assert_eq!(net.source_side[..n], grid.source_side[..]);
        // And the 8-connected energy is a network whose cut is at most the
        // grid's plus its diagonal arcs across that cut.
        let t8 = Terms {
            connectivity: 8,
            ..t
        };
        let (Graph::Network(g8), _) = build(&f, &t8).unwrap() else {
            panic!("8-connected is a network")
        };
        let cut8 = rayon.network_flow(&g8).unwrap();
        let mut side = grid.source_side.clone();
        side.extend([true, false]);
        assert!(cut8.flow <= g8.cut_capacity(&side));
        assert_eq!(g8.cut_capacity(&cut8.source_side), cut8.flow);
    }
}
