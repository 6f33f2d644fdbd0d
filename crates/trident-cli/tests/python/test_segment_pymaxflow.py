"""`trident segment` against PyMaxflow (Boykov-Kolmogorov) on the same
energy, rebuilt here from `trident segment --help`'s statement of it: the
same flow value, and trident's mask is a minimum cut of PyMaxflow's graph
(PyMaxflow's own cut is compared too; the two may differ only where several
minimum cuts exist, trident returning the one with the smallest source side)."""

import itertools

import maxflow
import numpy as np
import pytest

from conftest import write_png

SCALE = 100.0


def q(x):
    # Rust's f64::round (half away from zero); every term here is >= 0.
    return np.floor(np.asarray(x) * SCALE + 0.5).astype(np.int64)


def offsets(connectivity):
    o = [(0, 0, 1), (0, 1, 0)]
    if connectivity == 8:
        o += [(0, 1, 1), (0, 1, -1)]
    if connectivity in (6, 18, 26):
        o += [(1, 0, 0)]
    if connectivity in (18, 26):
        o += [(0, 1, 1), (0, 1, -1), (1, 0, 1), (1, 0, -1), (1, 1, 0), (1, -1, 0)]
    if connectivity == 26:
        o += [(1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1)]
    return o


def pairs(shape, off):
    """Node pairs (v, u = v + off) inside a (d, h, w) grid."""
    d, h, w = shape
    z, y, x = np.meshgrid(np.arange(d), np.arange(h), np.arange(w), indexing="ij")
    nz, ny, nx = z + off[0], y + off[1], x + off[2]
    ok = (nz >= 0) & (nz < d) & (ny >= 0) & (ny < h) & (nx >= 0) & (nx < w)
    v = ((z * h + y) * w + x)[ok]
    u = ((nz * h + ny) * w + nx)[ok]
    return v, u


class Gauss:
    def __init__(self, x, floor):
        self.mean = x.mean(axis=0)
        c = (x - self.mean).T @ (x - self.mean) / len(x)
        vals, vecs = np.linalg.eigh(np.atleast_2d(c))
        vals = np.maximum(vals, floor)
        self.inv = vecs @ np.diag(1 / vals) @ vecs.T
        self.log_det = np.log(vals).sum()

    def cost(self, x):
        d = x - self.mean
        return 0.5 * np.einsum("ni,ij,nj->n", d, self.inv, d) + 0.5 * self.log_det


class Hist:
    def __init__(self, x, bins):
        self.bins = bins
        count = np.bincount(self.index(x), minlength=bins ** x.shape[1])
        self.cost_of = -np.log((count + 1.0) / (len(x) + bins ** x.shape[1]))

    def index(self, x):
        b = (x.astype(np.int64) * self.bins) // 256
        idx = np.zeros(len(x), dtype=np.int64)
        for c in range(x.shape[1]):
            idx = idx * self.bins + b[:, c]
        return idx

    def cost(self, x):
        return self.cost_of[self.index(x)]


def energy(values, shape, labels, model="gauss", bins=16, lam=5.0, sigma=10.0,
           connectivity=4, floor=4.0):
    """The capacities trident's --help states: source, sink, the n-links
    [(v, u, w)] and the hard constraints' K."""
    x = values.reshape(int(np.prod(shape)), -1).astype(float)
    fg_x, bg_x = x[labels == 1], x[labels == 2]
    fit = (lambda s: Gauss(s, floor)) if model == "gauss" else (lambda s: Hist(s, bins))
    fg, bg = fit(fg_x), fit(bg_x)
    cf, cb = fg.cost(x), bg.cost(x)
    m = np.minimum(cf, cb)
    links = []
    around = np.zeros(len(x), dtype=np.int64)
    for off in offsets(connectivity):
        v, u = pairs(shape, off)
        d2 = ((x[v] - x[u]) ** 2).sum(axis=1)
        w = q(lam * np.exp(-d2 / (2 * sigma * sigma)) / np.sqrt(sum(t * t for t in off)))
        np.add.at(around, v, w)
        np.add.at(around, u, w)
        links.append((v, u, w))
    hard = around.max() + 1
    source, sink = q(cb - m), q(cf - m)
    source[labels == 1], sink[labels == 1] = hard, 0
    source[labels == 2], sink[labels == 2] = 0, hard
    return source, sink, links, hard


def pymaxflow(source, sink, links):
    g = maxflow.Graph[int]()
    nodes = g.add_nodes(len(source))
    for v in range(len(source)):
        g.add_tedge(nodes[v], int(source[v]), int(sink[v]))
    for v, u, w in links:
        for a, b, c in zip(v, u, w):
            if c:
                g.add_edge(int(a), int(b), int(c), int(c))
    flow = g.maxflow()
    side = np.array([g.get_segment(v) == 0 for v in range(len(source))])
    return flow, side


def cut_capacity(source, sink, links, side):
    c = source[~side].sum() + sink[side].sum()
    for v, u, w in links:
        c += w[side[v] & ~side[u]].sum() + w[side[u] & ~side[v]].sum()
    return int(c)


def scene(h, w, seed, colour):
    """A noisy disc on a background, grey or colour, and a label mask with a
    few seeds of each label (1 foreground, 2 background)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[:h, :w]
    inside = (y - h / 2) ** 2 + (x - w / 2.2) ** 2 < (min(h, w) / 3) ** 2
    if colour:
        img = np.where(inside[..., None], [200, 60, 50], [40, 90, 160]) + rng.normal(0, 25, (h, w, 3))
    else:
        img = np.where(inside, 170.0, 80.0) + rng.normal(0, 30, (h, w))
    img = np.clip(np.round(img), 0, 255).astype(np.uint8)
    labels = np.zeros((h, w), dtype=np.uint8)
    labels[h // 2 - 1:h // 2 + 1, w // 2 - 2:w // 2] = 1
    labels[0:2, 0:3] = 2
    labels[-1, -4:] = 2
    return img, labels


def check(trident, tmp_path, img, labels, shape, extra, **kw):
    inp = tmp_path / ("in.npy" if len(shape) == 3 and shape[0] > 1 else "in.png")
    if inp.suffix == ".npy":
        np.save(inp, img)
    else:
        write_png(inp, img)
    np.save(tmp_path / "labels.npy", labels)
    out = tmp_path / "mask.npy"
    v = trident("segment", inp, "--labels", tmp_path / "labels.npy", "-o", out, *extra)
    mask = np.load(out).reshape(-1).astype(bool)
    source, sink, links, hard = energy(img, shape, labels.reshape(-1), **kw)
    flow, side = pymaxflow(source, sink, links)
    assert v["cut"] == flow
    assert v["hard_capacity"] == hard
    assert cut_capacity(source, sink, links, mask) == flow
    # trident's cut is the smallest minimum source side: inside PyMaxflow's.
    assert not (mask & ~side).any()
    print(f"{shape} {extra}: flow {flow} (both), {mask.sum()} foreground here, "
          f"{side.sum()} in PyMaxflow's cut")
    return v, mask, side


@pytest.mark.parametrize("connectivity", [4, 8])
def test_grey_image(trident, tmp_path, connectivity):
    img, labels = scene(24, 31, 1, colour=False)
    v, mask, side = check(trident, tmp_path, img, labels, (1, 24, 31),
                          ["--connectivity", connectivity], connectivity=connectivity)
    assert v["graph"] == ("grid" if connectivity == 4 else "network")
    assert 100 < mask.sum() < 24 * 31 - 100


@pytest.mark.parametrize("model", ["gauss", "hist"])
def test_colour_image(trident, tmp_path, model):
    img, labels = scene(20, 26, 2, colour=True)
    v, mask, _ = check(trident, tmp_path, img, labels, (1, 20, 26),
                       ["--connectivity", 8, "--model", model, "--bins", 8, "--lambda", 3],
                       model=model, bins=8, lam=3.0, connectivity=8)
    assert v["features"] == "rgb"


@pytest.mark.parametrize("connectivity", [6, 26])
def test_volume(trident, tmp_path, connectivity):
    rng = np.random.default_rng(4)
    d, h, w = 7, 9, 11
    z, y, x = np.mgrid[:d, :h, :w]
    inside = (z - 3) ** 2 + (y - 4) ** 2 + (x - 5) ** 2 < 10
    vol = np.clip(np.where(inside, 160, 70) + rng.normal(0, 30, inside.shape), 0, 255).astype(np.uint8)
    labels = np.zeros(vol.shape, dtype=np.uint8)
    labels[3, 4, 5] = 1
    labels[0, 0, :] = 2
    v, mask, _ = check(trident, tmp_path, vol, labels, (d, h, w),
                       ["--connectivity", connectivity], connectivity=connectivity)
    assert v["volume"] and v["depth"] == d
    assert mask.reshape(vol.shape)[3, 4, 5] and not mask.reshape(vol.shape)[0, 0, 0]


def test_float_volume_with_auto_sigma(trident, tmp_path):
    rng = np.random.default_rng(5)
    vol = rng.normal(0.0, 0.2, (5, 8, 8))
    vol[1:4, 2:6, 2:6] += 1.0
    labels = np.zeros(vol.shape, dtype=np.int64)
    labels[2, 3:5, 3:5] = 1
    labels[:, 0, 0] = 2
    # sigma auto: sigma^2 = mean squared difference over the 6-neighbour pairs;
    # the variance floor is (range / 127.5)^2.
    x = vol.reshape(-1, 1)
    d2 = [((x[v] - x[u]) ** 2).sum(axis=1) for v, u in (pairs(vol.shape, o) for o in offsets(6))]
    sigma = np.sqrt(np.concatenate(d2).mean())
    floor = ((vol.max() - vol.min()) / 127.5) ** 2
    v, _, _ = check(trident, tmp_path, vol, labels, vol.shape, [], sigma=sigma, floor=floor,
                    connectivity=6)
    assert abs(v["sigma"] - sigma) < 1e-12
