#!/usr/bin/env python3
"""Times the benchmark cases through the Python package `trident_compute`
against the same peers, in the same process, on the same inputs.

usage: python3 benches/python/bench.py [--inputs DIR | --size small|bench]
           [--case NAME]... [--backend NAME]... [--reps N] [--peer-reps N]
           [--peer NAME]... [--skip-peer NAME]... [--no-peers]
           [--json FILE] [--omp-signals N]

Inputs: with `--inputs DIR`, the TRIDENT-CASE files `bench_table
--write-inputs DIR` wrote (the exact bytes the Rust table and
`benches/peers.py` time; `benches/gpu/cpu16.sh inputs` writes them to
/tmp/data). Without it, the cases are generated here with numpy following
docs/semantics.md's definitions (the same distributions and sizes, other
random streams): `--size small` (the default: seconds on 2 cores) or
`--size bench` (the full cases of the 16-core table in BENCHMARKS.md).

Each peer is timed by the same function `benches/peers.py` uses for the
tables (one untimed warm-up call, then the median of `--peer-reps`), and
ours the same way with `--reps`; a peer whose package is not installed is
skipped, and the table says so. What is timed through the package:

| kind | ours | peers (see benches/README.md) |
| --- | --- | --- |
| gemm | `gemm(a, b)` | numpy `a @ b` |
| spgemm | `spgemm(A, B)`, scipy CSR in and out | scipy `A @ B`, python-graphblas |
| points | `NearestIndex(B).closest_pairs(A, k)` | cKDTree, pykdtree (tree build included) |
| omp | `sparse_encode(X, D, n_nonzero_coefs=T, sparse=True)` | SPAMS, scikit-learn (`--omp-signals` of them, scaled) |
| grid | `maxflow.Graph[int]` built as PyMaxflow's, `maxflow()` timed | PyMaxflow `maxflow()` (build excluded on both sides) |
| network | `maximum_flow(csgraph, s, t)`, CSR built untimed | igraph `maxflow_value` / `maxflow`, scipy `maximum_flow` |

The ratio is the peer's median time over ours (above 1: ours is faster),
printed beside the ratio of the 16-core table in BENCHMARKS.md where it has
one, and their quotient (`binding / table`; the issue's target is within
10% of 1 on the 16-core machine, run on the table's inputs with
`--backend rayon`). Progress goes to stderr, the markdown table to stdout,
and every figure to `--json` (default bench-python.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benches/, for peers.py
import peers  # noqa: E402  (the tables' peer functions and case reader)

# Ratios (peer time / ours) of the 16-core table in BENCHMARKS.md (rayon on
# the H100 machine's 16 cores, 2026-11-26), by case and peer function.
TABLE_16 = {
    ("gemm-4096", "peer_gemm"): 0.951,
    ("gemm-8192", "peer_gemm"): 1.11,
    ("gemm-4096-f64", "peer_gemm"): 1.10,
    ("spgemm-poisson2d-2048", "peer_spgemm"): 16.0,
    ("spgemm-poisson2d-2048", "peer_spgemm_graphblas"): 6.04,
    ("spgemm-rmat-16-8", "peer_spgemm"): 25.9,
    ("spgemm-rmat-16-8", "peer_spgemm_graphblas"): 3.80,
    ("spgemm-uniform-1M-8", "peer_spgemm"): 15.5,
    ("spgemm-uniform-1M-8", "peer_spgemm_graphblas"): 2.85,
    ("pairs-1M-400K", "peer_points_pykdtree"): 11.4,
    ("pairs-clustered", "peer_points_pykdtree"): 5.65,
    ("omp-64x256-k16", "peer_omp_spams"): 16.9,  # SPAMS with its default kernels
    ("cut-512", "peer_grid"): 7.16,
    ("cut-2048", "peer_grid"): 5.58,
    ("flow-rmf", "peer_network"): 0.971,
    ("flow-rmf", "peer_network_flows"): 23.5,
}

SIZES = {
    "small": [
        "gemm-512",
        "gemm-512-f64",
        "spgemm-poisson2d-256",
        "spgemm-rmat-12-8",
        "spgemm-uniform-64K-8",
        "pairs-uniform-20K-8K",
        "pairs-clustered-20K-8K",
        "omp-64x256-k16-10K",
        "cut-128",
        "cut-256",
        "flow-rmf-8-16",
    ],
    "bench": [
        "gemm-4096",
        "gemm-8192",
        "gemm-4096-f64",
        "spgemm-poisson2d-2048",
        "spgemm-rmat-16-8",
        "spgemm-uniform-1M-8",
        "pairs-1M-400K",
        "pairs-clustered",
        "omp-64x256-k16",
        "cut-512",
        "cut-2048",
        "flow-rmf",
    ],
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# Generated inputs, in the layout of TRIDENT-CASE files ---------------------


def count(s):
    """'64K' -> 65536, '1M' -> 2^20, '400K' -> 400000 (powers of two where
    the case names use them: 64K and 1M rows; thousands for point counts)."""
    if s.endswith("M"):
        return int(s[:-1]) * 2**20
    if s.endswith("K"):
        return int(s[:-1]) * (1024 if s in ("64K", "16K", "32K") else 1000)
    return int(s)


def gen_gemm(n, dtype, rng):
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    name = "f32" if dtype == np.float32 else "f64"
    meta = dict(
        dtype=name,
        m=n,
        n=n,
        k=n,
        op_a="N",
        op_b="N",
        alpha="1e0",
        beta="0e0",
        a_rows=n,
        a_cols=n,
        lda=n,
        b_rows=n,
        b_cols=n,
        ldb=n,
        c_rows=n,
        c_cols=n,
        ldc=n,
    )
    return "gemm", {k: str(v) for k, v in meta.items()}, dict(a=a.ravel(), b=b.ravel())


def csr_case(a, b):
    meta = dict(dtype="f32", a_rows=a.shape[0], a_cols=a.shape[1], b_rows=b.shape[0], b_cols=b.shape[1])
    arrays = {}
    for p, m in (("a", a), ("b", b)):
        arrays[f"{p}_offsets"] = m.indptr.astype(np.uint64)
        arrays[f"{p}_indices"] = m.indices.astype(np.uint32)
        arrays[f"{p}_values"] = m.data.astype(np.float32)
    return "spgemm", {k: str(v) for k, v in meta.items()}, arrays


def poisson2d(n):
    import scipy.sparse as sp

    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    eye = sp.identity(n)
    return (sp.kron(eye, t) + sp.kron(t, eye)).tocsr().astype(np.float32)


def rmat(scale, factor, rng):
    import scipy.sparse as sp

    n, edges = 2**scale, factor * 2**scale
    r = np.zeros(edges, np.int64)
    c = np.zeros(edges, np.int64)
    for bit in range(scale):
        u = rng.random(edges)
        down = u >= 0.57 + 0.19  # quadrants c or d
        right = ((u >= 0.57) & (u < 0.76)) | (u >= 0.95)  # quadrants b or d
        r |= down.astype(np.int64) << bit
        c |= right.astype(np.int64) << bit
    perm = rng.permutation(n)
    vals = rng.uniform(0.5, 1.5, edges)
    m = sp.coo_matrix((vals, (perm[r], perm[c])), shape=(n, n)).tocsr()
    m.sum_duplicates()
    return m.astype(np.float32)


def uniform_rows(n, per_row, rng):
    import scipy.sparse as sp

    cols = np.sort(rng.integers(0, n, (n, per_row)), axis=1)
    while True:  # redraw the rows with a repeated column
        dup = (np.diff(cols, axis=1) == 0).any(axis=1)
        if not dup.any():
            break
        cols[dup] = np.sort(rng.integers(0, n, (int(dup.sum()), per_row)), axis=1)
    vals = rng.uniform(0.5, 1.5, n * per_row).astype(np.float32)
    indptr = np.arange(0, n * per_row + 1, per_row)
    return sp.csr_matrix((vals, cols.ravel(), indptr), shape=(n, n))


def gen_points(na, nb, clustered, rng):
    if clustered:
        centres = rng.uniform(5e4, 9.5e5, (64, 3))
        sigma = 1e4 * ((na + nb) / 1.4e6) ** (1 / 3)

        def draw(n):
            p = centres[rng.integers(0, 64, n)] + rng.normal(0, sigma, (n, 3))
            return np.clip(np.round(p), 0, 999_999).astype(np.float32)

        a, b = draw(na), draw(nb)
    else:
        a = rng.integers(0, 1_000_000, (na, 3)).astype(np.float32)
        b = rng.integers(0, 1_000_000, (nb, 3)).astype(np.float32)
    return "points", dict(knn_k="8", pairs_k="100"), dict(a=a.ravel(), b=b.ravel())


def dct_dictionary(p, m):
    """docs/semantics.md's overcomplete 2-D DCT dictionary, n x K = p^2 x m^2,
    atoms as columns (Trident's layout)."""
    i = np.arange(p)[:, None]
    k = np.arange(m)[None, :]
    one = np.cos(np.pi * i * k / m)
    one[:, 1:] -= one[:, 1:].mean(axis=0)
    one /= np.linalg.norm(one, axis=0)
    atoms = np.einsum("ia,jb->ijab", one, one).reshape(p * p, m * m)
    return atoms / np.linalg.norm(atoms, axis=0)


def gen_omp(count_signals, rng, p=8, m=16, sparsity=16):
    d = dct_dictionary(p, m)
    n, atoms = d.shape
    x = np.empty((count_signals, n))
    for lo in range(0, count_signals, 8192):  # in blocks: d[:, picks] is n x block x sparsity
        hi = min(count_signals, lo + 8192)
        picks = np.argsort(rng.random((hi - lo, atoms)), axis=1)[:, :sparsity]
        coef = rng.standard_normal((hi - lo, sparsity))
        clean = np.einsum("sk,nsk->sn", coef, d[:, picks])
        noise = rng.standard_normal(clean.shape)
        noise *= 0.01 * np.linalg.norm(clean, axis=1, keepdims=True) / np.linalg.norm(noise, axis=1, keepdims=True)
        x[lo:hi] = clean + noise
    meta = dict(dtype="f32", n=str(n), atoms=str(atoms), count=str(count_signals), rule=f"sparsity:{sparsity}")
    return "omp", meta, dict(dict=d.astype(np.float32).ravel(), signals=x.astype(np.float32).ravel())


def gen_cut(n, rng):
    yy, xx = np.mgrid[0:n, 0:n]
    img = np.full((n, n), 70.0)
    for s in range(5):
        cy, cx = rng.uniform(0, n, 2)
        size = rng.uniform(0.08, 0.25) * n
        if s % 2 == 0:
            img[(yy - cy) ** 2 + (xx - cx) ** 2 <= (size / 2) ** 2] = 180
        else:
            img[(abs(yy - cy) <= size / 2) & (abs(xx - cx) <= size / 2)] = 180
    img = np.clip(np.round(img + rng.normal(0, 30, img.shape)), 0, 255)
    two_s2 = 2 * 30.0**2
    src = np.round(10 * (img - 70) ** 2 / two_s2).astype(np.int64)
    snk = np.round(10 * (img - 180) ** 2 / two_s2).astype(np.int64)
    caps = np.zeros((4, n, n), np.int64)
    w = lambda p, q: np.round(10 * 2 * np.exp(-((p - q) ** 2) / two_s2)).astype(np.int64)  # noqa: E731
    caps[0, :, :-1] = w(img[:, :-1], img[:, 1:])  # +x
    caps[1, :, 1:] = caps[0, :, :-1]  # -x
    caps[2, :-1, :] = w(img[:-1, :], img[1:, :])  # +y
    caps[3, 1:, :] = caps[2, :-1, :]  # -y
    meta = dict(depth="1", height=str(n), width=str(n), three_d="false")
    return "grid", meta, dict(source=src.ravel(), sink=snk.ravel(), caps=caps.ravel())


def gen_rmf(a, b, rng, c1=1, c2=10000):
    frame = a * a
    nodes = frame * b
    v = np.arange(frame).reshape(a, a)
    pairs = [(v[:, :-1], v[:, 1:]), (v[:-1, :], v[1:, :])]
    f_in, t_in = [], []
    for p, q in pairs:
        f_in += [p.ravel(), q.ravel()]
        t_in += [q.ravel(), p.ravel()]
    f_in, t_in = np.concatenate(f_in), np.concatenate(t_in)
    src, dst, cap = [], [], []
    for f in range(b):
        src.append(f_in + f * frame)
        dst.append(t_in + f * frame)
        cap.append(np.full(f_in.size, c2 * a * a))
        if f + 1 < b:
            src.append(np.arange(frame) + f * frame)
            dst.append(rng.permutation(frame) + (f + 1) * frame)
            cap.append(rng.integers(c1, c2 + 1, frame))
    meta = dict(nodes=str(nodes), s="0", t=str(nodes - 1))
    arrays = {
        "from": np.concatenate(src).astype(np.uint32),
        "to": np.concatenate(dst).astype(np.uint32),
        "cap": np.concatenate(cap).astype(np.int64),
    }
    return "network", meta, arrays


def generate(name, rng):
    """(kind, meta, arrays) of the named case, made here."""
    parts = name.split("-")
    if parts[0] == "gemm":
        return gen_gemm(int(parts[1]), np.float64 if name.endswith("-f64") else np.float32, rng)
    if name.startswith("spgemm-poisson2d-"):
        a = poisson2d(int(parts[2]))
        return csr_case(a, a)
    if name.startswith("spgemm-rmat-"):
        a = rmat(int(parts[2]), int(parts[3]), rng)
        return csr_case(a, a)
    if name.startswith("spgemm-uniform-"):
        a = uniform_rows(count(parts[2]), int(parts[3]), rng)
        return csr_case(a, a)
    if name == "pairs-1M-400K":
        return gen_points(1_000_000, 400_000, False, rng)
    if name == "pairs-clustered":
        return gen_points(1_000_000, 400_000, True, rng)
    if name.startswith("pairs-uniform-") or name.startswith("pairs-clustered-"):
        return gen_points(count(parts[2]), count(parts[3]), parts[1] == "clustered", rng)
    if name == "omp-64x256-k16":
        return gen_omp(1_000_000, rng)
    if name.startswith("omp-64x256-k16-"):
        return gen_omp(count(parts[3]), rng)
    if name.startswith("cut-"):
        return gen_cut(int(parts[1]), rng)
    if name == "flow-rmf":
        return gen_rmf(32, 64, rng)
    if name.startswith("flow-rmf-"):
        return gen_rmf(int(parts[2]), int(parts[3]), rng)
    raise SystemExit(f"bench.py: no generator for case {name!r}")


# Ours, through the package ----------------------------------------------------


def ours_gemm(tc, meta, arrays, reps, backend):
    a = peers.dense(arrays["a"], int(meta["a_rows"]), int(meta["a_cols"]), int(meta["lda"]))
    b = peers.dense(arrays["b"], int(meta["b_rows"]), int(meta["b_cols"]), int(meta["ldb"]))
    kw = dict(
        trans_a=meta["op_a"] == "T",
        trans_b=meta["op_b"] == "T",
        alpha=float(meta["alpha"]),
        beta=float(meta["beta"]),
        backend=backend,
    )
    if kw["beta"] != 0.0:
        kw["c"] = peers.dense(arrays["c"], int(meta["c_rows"]), int(meta["c_cols"]), int(meta["ldc"]))
    times, _ = peers.timed(reps, lambda _: tc.gemm(a, b, **kw))
    return dict(times=times, check=None, note=f"gemm(a, b), {a.dtype}")


def ours_spgemm(tc, meta, arrays, reps, backend):
    import scipy.sparse as sp

    def csr(p):
        return sp.csr_matrix(
            (arrays[f"{p}_values"], arrays[f"{p}_indices"], arrays[f"{p}_offsets"]),
            shape=(int(meta[f"{p}_rows"]), int(meta[f"{p}_cols"])),
        )

    a = csr("a")
    same = all(np.array_equal(arrays[f"a_{x}"], arrays[f"b_{x}"]) for x in ("offsets", "indices", "values"))
    b = a if same else csr("b")  # A @ A: one matrix, as the case is defined
    times, c = peers.timed(reps, lambda _: tc.spgemm(a, b, backend=backend))
    return dict(times=times, check=c.nnz, note=f"spgemm(A, {'A' if same else 'B'}), CSR in and out, {a.dtype}")


def ours_points(tc, meta, arrays, reps, backend):
    a, b = arrays["a"].reshape(-1, 3), arrays["b"].reshape(-1, 3)
    k = int(meta["pairs_k"])

    def call(_):
        return tc.NearestIndex(b, backend=backend).closest_pairs(a, k)

    times, (i, j, _) = peers.timed(reps, call)
    check = float(((a[i[-1]].astype(np.float64) - b[j[-1]]) ** 2).sum()) if len(i) else None
    return dict(times=times, check=check, note=f"NearestIndex(B).closest_pairs(A, {k})")


def ours_omp(tc, meta, arrays, reps, backend):
    rule = meta["rule"].split(":")
    if rule[0] != "sparsity":
        return dict(skip=f"stop rule {meta['rule']}: only Sparsity(T) is wired here")
    n, atoms, cnt = int(meta["n"]), int(meta["atoms"]), int(meta["count"])
    d = np.ascontiguousarray(arrays["dict"].reshape(n, atoms).T)  # scikit-learn's layout: atoms as rows
    x = arrays["signals"].reshape(cnt, n)
    call = lambda _: tc.sparse_encode(x, d, n_nonzero_coefs=int(rule[1]), sparse=True, backend=backend)  # noqa: E731
    times, codes = peers.timed(reps, call)
    return dict(
        times=times, check=None, note=f"sparse_encode(X, D, {rule[1]}, sparse=True), {x.dtype}, nnz {codes.nnz}"
    )


def ours_grid(tc, meta, arrays, reps, backend):
    from trident_compute import maxflow

    three_d = meta["three_d"] == "true"
    shape = (int(meta["depth"]),) * three_d + (int(meta["height"]), int(meta["width"]))
    dirs = 6 if three_d else 4
    planes = arrays["caps"].reshape((dirs,) + shape)
    nd = len(shape)

    def one_hot(offset):
        s = np.zeros((3,) * nd, np.int64)
        s[tuple(1 + o for o in offset)] = 1
        return s

    # Plane order +x -x +y -y (+z -z); an axis of the shape is (z, y, x).
    offsets = []
    for axis in range(nd)[::-1]:
        for sign in (1, -1):
            o = [0] * nd
            o[axis] = sign
            offsets.append(o)

    def part(arr, axis, sl):
        return arr[tuple(sl if ax == axis else slice(None) for ax in range(nd))]

    # One arc pair per neighbour pair when the capacities are symmetric (the
    # benchmark cuts are), as peers.py builds PyMaxflow's graph.
    symmetric = all(
        np.array_equal(
            part(planes[2 * q], nd - 1 - q, slice(None, -1)), part(planes[2 * q + 1], nd - 1 - q, slice(1, None))
        )
        for q in range(nd)
    )

    def build():
        g = maxflow.Graph[int]()
        g.set_backend(backend)
        nodes = g.add_grid_nodes(shape)
        if symmetric:
            for q in range(nd):
                g.add_grid_edges(nodes, weights=planes[2 * q], structure=one_hot(offsets[2 * q]), symmetric=True)
        else:
            for q in range(dirs):
                g.add_grid_edges(nodes, weights=planes[q], structure=one_hot(offsets[q]), symmetric=False)
        g.add_grid_tedges(nodes, arrays["source"].reshape(shape), arrays["sink"].reshape(shape))
        return g

    times, flow = peers.timed(reps, lambda g: g.maxflow(), setup=build)
    arcs = "one arc pair per neighbour pair" if symmetric else "two arc pairs per neighbour pair"
    return dict(times=times, check=flow, note=f"maxflow.Graph[int].maxflow() only, build excluded; {arcs}")


def ours_network(tc, meta, arrays, reps, backend):
    import scipy.sparse as sp

    n = int(meta["nodes"])
    g = sp.csr_matrix((arrays["cap"], (arrays["from"].astype(np.int64), arrays["to"].astype(np.int64))), shape=(n, n))
    s, t = int(meta["s"]), int(meta["t"])
    times, r = peers.timed(reps, lambda _: tc.maximum_flow(g, s, t, backend=backend))
    return dict(times=times, check=r.flow_value, note="maximum_flow(csgraph, s, t): flows and the cut")


OURS = dict(gemm=ours_gemm, spgemm=ours_spgemm, points=ours_points, omp=ours_omp, grid=ours_grid, network=ours_network)


def peer_network_scipy(meta, arrays, reps, _args):
    """scipy.sparse.csgraph.maximum_flow (Dinic, one thread), CSR built untimed."""
    import scipy
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow

    cap = arrays["cap"]
    if cap.size and cap.max() > np.iinfo(np.int32).max:
        return dict(skip="capacities beyond int32, which scipy's maximum_flow takes")
    n = int(meta["nodes"])
    g = sp.csr_matrix(
        (cap.astype(np.int32), (arrays["from"].astype(np.int64), arrays["to"].astype(np.int64))), shape=(n, n)
    )
    s, t = int(meta["s"]), int(meta["t"])
    times, r = peers.timed(reps, lambda _: maximum_flow(g, s, t))
    return dict(
        peer=f"scipy {scipy.__version__} maximum_flow",
        times=times,
        check=r.flow_value,
        note="csgraph.maximum_flow(g, s, t) (Dinic, one thread), CSR build excluded",
    )


def peer_list(kind):
    extra = [peer_network_scipy] if kind == "network" else []
    return list(peers.PEERS[kind]) + extra


# The run --------------------------------------------------------------------


def fmt_s(s):
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--inputs", help="a directory of TRIDENT-CASE files (bench_table --write-inputs DIR)")
    p.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="small",
        help="without --inputs: which cases to generate (default small)",
    )
    p.add_argument("--case", action="append", default=[], help="only these cases (repeatable)")
    p.add_argument(
        "--backend",
        action="append",
        default=[],
        help="time ours on this backend (repeatable; 'auto' = Trident's choice, the default)",
    )
    p.add_argument("--reps", type=int, default=5, help="timed calls of ours (median; after one warm-up)")
    p.add_argument("--peer-reps", type=int, default=2, help="timed calls per peer (median; after one warm-up)")
    p.add_argument("--peer", action="append", default=[], help="only peers whose function name contains this")
    p.add_argument(
        "--skip-peer",
        action="append",
        default=[],
        help="leave out peers whose function name contains this (e.g. peer_points for cKDTree)",
    )
    p.add_argument("--no-peers", action="store_true", help="time ours only")
    p.add_argument(
        "--omp-signals", type=int, default=10000, help="signals scikit-learn codes (time scaled to all), as peers.py"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the generated inputs")
    p.add_argument("--json", default="bench-python.json", help="where to write every figure")
    args = p.parse_args()

    import trident_compute as tc

    backends = [None if b == "auto" else b for b in (args.backend or ["auto"])]
    info = tc.backends()
    log(f"trident_compute {tc.__version__}: {info}")

    if args.inputs:
        import glob

        paths = sorted(glob.glob(os.path.join(args.inputs, "*.case")))
        names = [os.path.basename(x)[: -len(".case")] for x in paths]
        if args.case:
            missing = sorted(set(args.case) - set(names))
            if missing:
                sys.exit(f"bench.py: no {missing} in {args.inputs} (have {names})")
            paths = [x for x, n in zip(paths, names) if n in args.case]
        if not paths:
            sys.exit(f"bench.py: no .case files in {args.inputs}")
        cases = [(os.path.basename(x)[: -len(".case")], lambda x=x: peers.read_case(x)) for x in paths]
        source = f"inputs {args.inputs}"
    else:
        names = args.case or SIZES[args.size]
        rng = np.random.default_rng(args.seed)
        cases = [(n, lambda n=n: generate(n, rng)) for n in names]
        source = f"generated here (--size {args.size}, seed {args.seed})"

    rows, results = [], []
    for name, load in cases:
        t0 = time.perf_counter()
        kind, meta, arrays = load()
        log(f"{name}: {kind}, inputs ready in {time.perf_counter() - t0:.1f} s")
        ours = {}
        for be in backends:
            r = OURS[kind](tc, meta, arrays, args.reps, be)
            if "skip" in r:
                log(f"{name}: ours skipped ({r['skip']})")
                continue
            r["served"] = tc.last_backend()
            r["median"] = statistics.median(r["times"])
            ours[be or "auto"] = r
            log(f"{name}: ours [{be or 'auto'}, served by {r['served']}] median {fmt_s(r['median'])}")
            results.append(
                dict(
                    case=name,
                    kind=kind,
                    side="ours",
                    backend=be or "auto",
                    served=r["served"],
                    median_s=r["median"],
                    times_s=r["times"],
                    check=r["check"],
                    note=r["note"],
                    figure=peers.spec_figure(kind, meta, arrays, r["median"]),
                )
            )
        peer_rows = []
        for fn in [] if args.no_peers else peer_list(kind):
            if args.peer and not any(w in fn.__name__ for w in args.peer):
                continue
            if any(w in fn.__name__ for w in args.skip_peer):
                continue
            try:
                r = fn(meta, arrays, args.peer_reps, args)
            except ImportError as e:
                r = dict(skip=f"not installed ({e})")
            if "skip" in r:
                log(f"{name}: {fn.__name__} skipped: {r['skip']}")
                peer_rows.append((fn.__name__, None, r["skip"]))
                results.append(dict(case=name, kind=kind, side="peer", peer=fn.__name__, skipped=r["skip"]))
                continue
            r["median"] = statistics.median(r["times"])
            log(f"{name}: {r['peer']} median {fmt_s(r['median'])}")
            peer_rows.append((fn.__name__, r, None))
            results.append(
                dict(
                    case=name,
                    kind=kind,
                    side="peer",
                    peer=fn.__name__,
                    name=r["peer"],
                    median_s=r["median"],
                    times_s=r["times"],
                    check=r["check"],
                    note=r["note"],
                )
            )
        for be, o in ours.items():
            figure = peers.spec_figure(kind, meta, arrays, o["median"])
            ours_cell = fmt_s(o["median"]) + ("" if figure.endswith(" ms") else f" ({figure})")
            if not peer_rows:
                rows.append([name, f"{be} ({o['served']})", ours_cell, "-", "-", "-", "-", "-", str(o["check"])])
            for fname, r, skip in peer_rows:
                if r is None:
                    rows.append(
                        [name, f"{be} ({o['served']})", ours_cell, f"{fname}: skipped, {skip}", "-", "-", "-", "-", "-"]
                    )
                    continue
                ratio = r["median"] / o["median"]
                table = TABLE_16.get((name, fname))
                quotient = f"{ratio / table:.2f}" if table else "-"
                check = "" if o["check"] is None and r["check"] is None else f"{o['check']} / {r['check']}"
                if (
                    o["check"] is not None
                    and r["check"] is not None
                    and not np.isclose(float(o["check"]), float(r["check"]), rtol=1e-6)
                ):
                    check = f"**{check}**"
                rows.append(
                    [
                        name,
                        f"{be} ({o['served']})",
                        ours_cell,
                        r["peer"],
                        fmt_s(r["median"]),
                        f"{ratio:.3g}",
                        f"{table:.3g}" if table else "-",
                        quotient,
                        check,
                    ]
                )
        del arrays

    header = [
        "case",
        "backend (served)",
        "ours",
        "peer",
        "peer time",
        "ratio",
        "16-core table",
        "binding / table",
        "check ours / peer",
    ]
    print(
        f"Python bench, {source}; ours median of {args.reps}, peers median of {args.peer_reps}; "
        f"ratio = peer time / ours; {platform.node()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}\n"
    )
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" if i in (0, 1, 3) else "--:" for i in range(len(header))) + " |")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    with open(args.json, "w") as f:
        json.dump(
            dict(
                source=source,
                backends=info,
                python=platform.python_version(),
                cpus=os.cpu_count(),
                reps=args.reps,
                peer_reps=args.peer_reps,
                results=results,
            ),
            f,
            indent=1,
            default=str,
        )
    log(f"bench.py: figures written to {args.json}")


if __name__ == "__main__":
    main()
