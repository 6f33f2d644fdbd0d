#!/usr/bin/env python3
"""Times peer libraries on the exact inputs `bench_table --write-inputs DIR` wrote.

usage: python3 benches/peers.py DIR [--reps N] [--case NAME]... [--peer NAME]... [--omp-signals N] > peers.tsv

Reads every DIR/<case>.case (TRIDENT-CASE 1 format, see
crates/trident-testkit/src/cases/io.rs), times the peer for its kind, and
writes the results file `bench_table --peers` reads (tab-separated, on stdout)
while a markdown table and progress go to stderr. Each peer: one untimed
warm-up call, then the median of --reps timed calls (default 3).

| kind | peer | timed |
| --- | --- | --- |
| gemm | numpy `A @ B` (f32, its BLAS, all cores) | the product |
| spgemm | scipy.sparse csr `A @ B` (single-threaded) | the product |
| spgemm | python-graphblas (SuiteSparse:GraphBLAS, all cores) `A.mxm(B)` | the product (CSR in, CSR out) |
| points | scipy.spatial.cKDTree | tree build on B + `query(A, workers=-1)` + the k smallest pairs |
| points | pykdtree (OpenMP, all cores) | tree build on B + `query(A, k=1)` + the k smallest pairs |
| omp | SPAMS `omp` (spams-bin, C++, all cores) | G = D^T D, D^T X and the coding of all signals (f32) |
| omp | scikit-learn `orthogonal_mp_gram` | G = D^T D, D^T X and the coding, on the first --omp-signals signals, scaled to all |
| grid | PyMaxflow (Boykov-Kolmogorov, one thread) | `maxflow()` only; building the graph is excluded |
| network | python-igraph `Graph.maxflow_value` (C push-relabel, one thread) | the max-flow value; building the graph is excluded |
| network | python-igraph `Graph.maxflow` (the same solver, one thread) | the flow on every arc and a minimum cut, as ours returns; building the graph is excluded |

A kind may have several peers: each gives one line of the results file
(case, peer); a peer whose package is missing is skipped with a note.

Each result carries a check number bench_table compares with its own output,
so a mismatch shows that the two sides did not compute the same thing:
nnz of the product, the k-th pair's squared distance, the flow value.
"""
import argparse
import glob
import os
import statistics
import sys
import time

import numpy as np

TSV_HEADER = "case\tpeer\tmedian_s\treps\tcheck\tnote"
# The format's dtype names are Rust's; numpy spells them differently.
DTYPES = dict(f32="<f4", f64="<f8", u32="<u4", u64="<u8", i64="<i8", u8="u1")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def read_case(path):
    """(kind, meta, arrays) of a TRIDENT-CASE 1 file, as io.rs documents it."""
    with open(path, "rb") as f:
        head = f.readline().decode().split()
        if head[:2] != ["TRIDENT-CASE", "1"]:
            raise ValueError(f"{path}: not a TRIDENT-CASE 1 file")
        kind = head[2]
        meta = dict(kv.split("=", 1) for kv in head[3:])
        arrays = {}
        for spec in meta.pop("arrays").split(","):
            if not spec:
                continue
            name, dtype, count = spec.split(":")
            arrays[name] = np.fromfile(f, dtype=DTYPES[dtype], count=int(count))
    return kind, meta, arrays


def timed(reps, call, setup=None):
    """One untimed warm-up, then `reps` timed calls of `call(setup())` (setup
    untimed). Returns (sorted times in s, the last call's result)."""
    make = setup or (lambda: None)
    out = call(make())
    times = []
    for _ in range(reps):
        state = make()
        t = time.perf_counter()
        out = call(state)
        times.append(time.perf_counter() - t)
    return sorted(times), out


def dist_version(name):
    """The installed version of distribution `name` (some packages, e.g.
    pykdtree and spams, have no `__version__`)."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def blas_name():
    try:
        return np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # older numpy: no dict mode
        return "BLAS"


def blas_info():
    """(threads, kernel architecture) of numpy's BLAS as threadpoolctl reports
    them (OpenBLAS picks its kernels by CPU model at run time, so the note
    says which ones ran), or (None, None) without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info

        blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    except ImportError:
        return None, None
    if not blas:
        return None, None
    return max(p["num_threads"] for p in blas), blas[0].get("architecture")


def openblas_forced():
    """", OPENBLAS_CORETYPE=X" when that variable picks OpenBLAS's kernels for
    this process (numpy's and SPAMS's own copy alike), else "". OpenBLAS
    otherwise picks them by CPU model, and a copy older than the CPU falls
    back to generic ones: SPAMS's 0.3.15 picks Prescott on the GPU
    machine's Xeon and Barcelona on the Zen 5 box, so the bench scripts time
    SPAMS with each core type as well."""
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return f", OPENBLAS_CORETYPE={forced}" if forced else ""


def dense(arr, rows, cols, ld):
    """A row-major matrix with leading dimension ld, as a (strided) view."""
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols), dtype=arr.dtype)
    full = np.zeros(rows * ld, dtype=arr.dtype)
    full[: arr.size] = arr
    return full.reshape(rows, ld)[:, :cols]


def peer_gemm(meta, arrays, reps, _args):
    a = dense(arrays["a"], int(meta["a_rows"]), int(meta["a_cols"]), int(meta["lda"]))
    b = dense(arrays["b"], int(meta["b_rows"]), int(meta["b_cols"]), int(meta["ldb"]))
    alpha, beta = float(meta["alpha"]), float(meta["beta"])
    ta, tb = meta["op_a"] == "T", meta["op_b"] == "T"
    plain = alpha == 1.0 and beta == 0.0 and not ta and not tb
    try:
        from scipy.linalg import blas
    except ImportError:
        blas = None
    if plain or blas is None:
        a = np.ascontiguousarray(a.T if ta else a)
        b = np.ascontiguousarray(b.T if tb else b)
        if plain:
            call, what = (lambda _: a @ b), "A @ B"
        else:
            c = dense(arrays["c"], int(meta["c_rows"]), int(meta["c_cols"]), int(meta["ldc"]))
            call, what = (lambda _: alpha * (a @ b) + beta * c), "alpha * (A @ B) + beta * C"
    else:
        # One BLAS call with the transposes and alpha/beta, as a BLAS user
        # writes it. BLAS is column-major: the row-major C = op(A) op(B) is
        # the column-major C^T = op(B)^T op(A)^T, and a row-major X is the
        # column-major X^T (X.T, no copy). Padded views (a slice of a wider
        # array) are copied by scipy's wrapper, inside the timed call, as a
        # user of scipy would see.
        gemm = blas.sgemm if a.dtype == np.float32 else blas.dgemm
        c = (dense(arrays["c"], int(meta["c_rows"]), int(meta["c_cols"]), int(meta["ldc"]))
             if beta != 0.0 else None)
        ct = None if c is None else c.T
        call = (lambda _: gemm(alpha, b.T, a.T, beta=beta, c=ct, trans_a=tb, trans_b=ta).T)
        what = f"scipy.linalg.blas.{gemm.__name__.split('.')[-1]} (op_a {meta['op_a']}, op_b {meta['op_b']}, alpha {alpha:g}, beta {beta:g})"
    # numpy's `@` and scipy's BLAS functions are two OpenBLAS copies, each
    # with a thread per core; threads that just finished spin for a while,
    # and on 16 cores a call of the other copy then read 28-32 ms instead of
    # 2.5-8. Let them go to sleep first.
    time.sleep(0.5)
    times, _ = timed(reps, call)
    threads, arch = blas_info()
    on = (f", {threads} BLAS threads" if threads else "") + (f", {arch} kernels" if arch else "")
    on += openblas_forced()
    return dict(peer=f"numpy {np.__version__} ({blas_name()})", times=times, check=None,
                note=f"{what}, {a.dtype}{on}")


def peer_spgemm(meta, arrays, reps, _args):
    import scipy
    import scipy.sparse as sp

    def csr(p, rows, cols):
        return sp.csr_matrix((arrays[f"{p}_values"], arrays[f"{p}_indices"], arrays[f"{p}_offsets"]),
                             shape=(int(meta[rows]), int(meta[cols])))

    a, b = csr("a", "a_rows", "a_cols"), csr("b", "b_rows", "b_cols")
    times, c = timed(reps, lambda _: a @ b)
    return dict(peer=f"scipy {scipy.__version__}", times=times, check=c.nnz,
                note=f"csr A @ B, {a.dtype}, one thread")


def graphblas_matrix(gb, prefix, meta, arrays, rows, cols):
    """A GraphBLAS matrix over the case's CSR arrays (u32 indices widened to
    the u64 GraphBLAS takes; that copy is untimed)."""
    return gb.Matrix.ss.import_csr(
        nrows=int(meta[rows]), ncols=int(meta[cols]),
        indptr=arrays[f"{prefix}_offsets"].astype(np.uint64),
        col_indices=arrays[f"{prefix}_indices"].astype(np.uint64),
        values=arrays[f"{prefix}_values"], sorted_cols=True, take_ownership=False)


def peer_spgemm_graphblas(meta, arrays, reps, _args):
    import graphblas as gb

    gb.init("suitesparse", blocking=True)
    a = graphblas_matrix(gb, "a", meta, arrays, "a_rows", "a_cols")
    b = graphblas_matrix(gb, "b", meta, arrays, "b_rows", "b_cols")
    plus_times = gb.semiring.plus_times[a.dtype]
    # `.new()` computes the product; `wait()` finishes GraphBLAS's lazy work
    # (pending sorts), so the timed result is a complete CSR matrix.
    def call(_):
        c = a.mxm(b, plus_times).new()
        c.wait()
        return c

    times, c = timed(reps, call)
    threads = gb.ss.config["nthreads"]
    version = gb.ss.about["library_version"]
    return dict(peer=f"python-graphblas {dist_version('python-graphblas')} (SuiteSparse:GraphBLAS "
                     f"{'.'.join(map(str, version))})",
                times=times, check=c.nvals,
                note=f"A.mxm(B, plus_times), {a.dtype}, {threads} threads, CSR in and out")


def peer_points(meta, arrays, reps, _args):
    import scipy
    from scipy.spatial import cKDTree

    a, b = arrays["a"].reshape(-1, 3), arrays["b"].reshape(-1, 3)
    k = min(int(meta["pairs_k"]), len(a))

    def call(_):
        d, j = cKDTree(b).query(a, k=1, workers=-1)
        top = np.argpartition(d, k - 1)[:k] if k < len(d) else np.arange(len(d))
        top = top[np.lexsort((top, d[top]))]  # by (distance, index of a)
        return top, j[top]

    times, (ia, jb) = timed(reps, call)
    check = None
    if k > 0:  # exact d2 of the k-th pair (coordinates are exact in f64)
        check = float(((a[ia[-1]].astype(np.float64) - b[jb[-1]]) ** 2).sum())
    return dict(peer=f"scipy {scipy.__version__} cKDTree", times=times, check=check,
                note=f"tree build on B included; query(A, k=1, workers=-1) in f64, then the {k} "
                     f"smallest by argpartition")


def peer_points_pykdtree(meta, arrays, reps, _args):
    from pykdtree.kdtree import KDTree

    a, b = arrays["a"].reshape(-1, 3), arrays["b"].reshape(-1, 3)
    k = min(int(meta["pairs_k"]), len(a))

    def call(_):
        # f32 in, f32 squared distances out (sqr_dists skips the square root).
        d, j = KDTree(b).query(a, k=1, sqr_dists=True)
        top = np.argpartition(d, k - 1)[:k] if k < len(d) else np.arange(len(d))
        top = top[np.lexsort((top, d[top]))]  # by (distance, index of a)
        return top, j[top]

    times, (ia, jb) = timed(reps, call)
    check = None
    if k > 0:
        check = float(((a[ia[-1]].astype(np.float64) - b[jb[-1]]) ** 2).sum())
    threads = os.environ.get("OMP_NUM_THREADS", f"{os.cpu_count()} (all)")
    return dict(peer=f"pykdtree {dist_version('pykdtree')}", times=times, check=check,
                note=f"tree build on B included; query(A, k=1) in f32 on {threads} OpenMP threads, "
                     f"then the {k} smallest by argpartition")


def peer_omp_spams(meta, arrays, reps, _args):
    import spams

    rule = meta["rule"].split(":")
    if rule[0] != "sparsity":
        return dict(skip=f"stop rule {meta['rule']}: only Sparsity(T) is wired to SPAMS")
    n, atoms, count = int(meta["n"]), int(meta["atoms"]), int(meta["count"])
    d = np.asfortranarray(arrays["dict"].reshape(n, atoms))
    # Signals as columns (n x count, Fortran order): the layout SPAMS codes.
    x = np.asfortranarray(arrays["signals"].reshape(count, n).T)
    threads = os.cpu_count()
    nnz = []

    def call(_):
        code = spams.omp(x, d, L=int(rule[1]), numThreads=threads)
        nnz.append(code.nnz)
        return code

    times, out = timed(reps, call)
    if min(nnz) == 0 and np.any(x):
        # Seen with spams-bin 2.6.14 on the 2-core Zen 5 box (Python 3.11),
        # on some calls only: an empty code in no time. Every call is
        # checked, as one empty call among the timed ones would halve a
        # median of two. A timing of no work is no peer.
        return dict(skip=f"SPAMS {dist_version('spams-bin')} returned an empty code (nnz 0) "
                         f"for nonzero signals in {nnz.count(0)} of {len(nnz)} calls; its time would "
                         "measure nothing")
    return dict(peer=f"SPAMS {dist_version('spams-bin')} (spams-bin{openblas_forced()})", times=times, check=None,
                note=f"spams.omp({d.dtype}, L={rule[1]}, numThreads={threads}), all {count} signals, "
                     f"its Gram and D^T X included; nnz {out.nnz}")


def peer_omp(meta, arrays, reps, args):
    import sklearn
    from sklearn.linear_model import orthogonal_mp_gram

    rule = meta["rule"].split(":")
    if rule[0] != "sparsity":
        return dict(skip=f"stop rule {meta['rule']}: only Sparsity(T) is wired to scikit-learn")
    n, atoms, count = int(meta["n"]), int(meta["atoms"]), int(meta["count"])
    d = arrays["dict"].reshape(n, atoms)
    sub = min(count, args.omp_signals)
    x = arrays["signals"].reshape(count, n)[:sub]

    def call(_):
        return orthogonal_mp_gram(d.T @ d, d.T @ x.T, n_nonzero_coefs=int(rule[1]))

    times, _ = timed(reps, call)
    scale = count / sub if sub else 1.0
    note = "G = D^T D and D^T X included"
    if sub < count:
        note += f"; timed {sub} of {count} signals, time scaled x{scale:g}"
    return dict(peer=f"scikit-learn {sklearn.__version__}", times=[t * scale for t in times],
                check=None, note=f"orthogonal_mp_gram({d.dtype}), {note}")


def peer_grid(meta, arrays, reps, _args):
    import maxflow

    if meta["three_d"] == "true":
        return dict(skip="3-D grids are not wired to PyMaxflow")
    h, w = int(meta["height"]), int(meta["width"])
    nn = h * w
    planes = arrays["caps"].reshape(4, h, w)  # +x -x +y -y
    px, mx, py, my = planes
    src, snk = arrays["source"].reshape(h, w), arrays["sink"].reshape(h, w)
    right = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0]])
    left = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0]])
    down = np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]])
    up = np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    # One arc pair per neighbour pair, as in cut_pymaxflow.py, when the
    # capacities are symmetric (the benchmark cuts are); two otherwise, which is
    # still exact but gives PyMaxflow twice the arcs.
    symmetric = np.array_equal(px[:, :-1], mx[:, 1:]) and np.array_equal(py[:-1, :], my[1:, :])

    def build():
        g = maxflow.Graph[int](nn, 2 * nn)
        nodes = g.add_grid_nodes((h, w))
        if symmetric:
            g.add_grid_edges(nodes, weights=px, structure=right, symmetric=True)
            g.add_grid_edges(nodes, weights=py, structure=down, symmetric=True)
        else:
            for weights, s in ((px, right), (mx, left), (py, down), (my, up)):
                g.add_grid_edges(nodes, weights=weights, structure=s, symmetric=False)
        g.add_grid_tedges(nodes, src, snk)
        return g

    times, flow = timed(reps, lambda g: g.maxflow(), setup=build)
    arcs = "one arc pair per neighbour pair" if symmetric else "asymmetric: two arc pairs per neighbour pair"
    return dict(peer=f"PyMaxflow {maxflow.__version__}", times=times, check=flow,
                note=f"maxflow() only, graph build excluded; {arcs}")


def igraph_peer(meta, arrays, reps, solve, value, what, note):
    """Times `solve(graph, s, t)` on the case as an igraph graph (building it
    untimed); `value` takes the flow value from its result."""
    import igraph

    nodes, s, t = int(meta["nodes"]), int(meta["s"]), int(meta["t"])
    edges = np.stack([arrays["from"], arrays["to"]], axis=1).astype(np.int64)
    cap = arrays["cap"].astype(np.float64)  # igraph's capacities are doubles
    if cap.size and cap.max() >= 2.0**53:
        return dict(skip="capacities beyond 2^53 are not exact in igraph's doubles")
    g = igraph.Graph(n=nodes, edges=edges.tolist(), directed=True)
    g.es["capacity"] = cap.tolist()
    times, out = timed(reps, lambda _: solve(g, s, t))
    return dict(peer=f"python-igraph {igraph.__version__} {what}", times=times,
                check=int(round(value(out))), note=f"{note} (one thread), graph build excluded")


def peer_network(meta, arrays, reps, _args):
    return igraph_peer(meta, arrays, reps, lambda g, s, t: g.maxflow_value(s, t, capacity="capacity"),
                       lambda v: v, "(igraph C push-relabel)", "Graph.maxflow_value(s, t, capacity)")


def peer_network_flows(meta, arrays, reps, _args):
    """igraph's `maxflow`: the flow on every arc and a minimum cut, which is
    what our call returns (`maxflow_value` above returns the value only)."""
    return igraph_peer(meta, arrays, reps, lambda g, s, t: g.maxflow(s, t, capacity="capacity"),
                       lambda f: f.value, "maxflow (flows and cut)",
                       "Graph.maxflow(s, t, capacity): the flow on every arc and a minimum cut, as ours returns")


# Each kind's peers, in the order their lines are written.
PEERS = dict(gemm=[peer_gemm], spgemm=[peer_spgemm, peer_spgemm_graphblas],
             points=[peer_points, peer_points_pykdtree], omp=[peer_omp_spams, peer_omp],
             grid=[peer_grid], network=[peer_network, peer_network_flows])


def spec_figure(kind, meta, arrays, secs):
    """The contract's unit for the whole case taking `secs`."""
    if kind == "gemm":
        m, n, k = (int(meta[x]) for x in "mnk")
        return f"{2 * m * n * k / secs / 1e12:.3g} TFLOP/s"
    if kind == "spgemm":
        products = int(np.diff(arrays["b_offsets"].astype(np.int64))[arrays["a_indices"]].sum())
        return f"{2 * products / secs / 1e9:.3g} GFLOP/s"
    if kind == "omp":
        return f"{int(meta['count']) / secs:.3g} signals/s"
    return f"{secs * 1e3:.1f} ms"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--reps", type=int, default=3, help="timed calls per peer (after one warm-up)")
    p.add_argument("--case", action="append", default=[], help="only these cases (repeatable)")
    p.add_argument("--peer", action="append", default=[],
                   help="only peers whose function name contains this (e.g. graphblas, spams; repeatable)")
    p.add_argument("--omp-signals", type=int, default=10000,
                   help="signals scikit-learn codes (its Python loop per signal is slow); time scaled to all")
    args = p.parse_args()

    paths = sorted(glob.glob(os.path.join(args.dir, "*.case")))
    names = [os.path.basename(x)[: -len(".case")] for x in paths]
    if args.case:
        missing = sorted(set(args.case) - set(names))
        if missing:
            sys.exit(f"peers.py: no {missing} in {args.dir} (have {names})")
        paths = [x for x, n in zip(paths, names) if n in args.case]
    if not paths:
        sys.exit(f"peers.py: no .case files in {args.dir}; run bench_table --write-inputs {args.dir} first")

    print(TSV_HEADER, flush=True)
    rows = []
    for path in paths:
        case = os.path.basename(path)[: -len(".case")]
        kind, meta, arrays = read_case(path)
        log(f"{case}: {kind} ...")
        for peer in PEERS[kind]:
            if args.peer and not any(w in peer.__name__ for w in args.peer):
                continue
            try:
                r = peer(meta, arrays, args.reps, args)
            except ImportError as e:  # a peer not installed is skipped, not fatal
                r = dict(skip=f"{peer.__name__}: {e}")
            if "skip" in r:
                log(f"{case}: skipped ({r['skip']})")
                rows.append((case, "-", "skipped", "", "", r["skip"]))
                continue
            med = statistics.median(r["times"])
            check = "" if r["check"] is None else str(r["check"])
            note = r["note"].replace("\t", " ")
            print(f"{case}\t{r['peer']}\t{med:.6g}\t{args.reps}\t{check}\t{note}", flush=True)
            span = f"{min(r['times']):.4g} - {max(r['times']):.4g} s"
            rows.append((case, r["peer"], f"{med:.4g} s ({span})", spec_figure(kind, meta, arrays, med),
                         check, note))
            log(f"{case}: {r['peer']} median {med:.4g} s")

    log("")
    log(f"| case | peer | median of {args.reps} (range) | report unit | check | note |")
    log("| --- | --- | --: | --: | --: | --- |")
    for row in rows:
        log("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
