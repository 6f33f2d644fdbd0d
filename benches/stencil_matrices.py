#!/usr/bin/env python3
"""Writes the stencil-family matrices of the 2-core SpGEMM check (1.5x scipy on every stencil matrix) as Matrix Market
files and times SciPy's `A @ A` (f32, one thread) on them.

usage: python3 benches/stencil_matrices.py DIR [NAME...]

Then time ours on the same files:
    cargo run --release -p trident-benches --example mtx_spgemm -- 5 DIR/*.mtx

Both print the median of 5 calls after a warm-up (BENCHMARKS.md, "The stencil
family on the 2-core box and on 16 cores").
"""
import os
import statistics
import sys
import time

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

# name: (points per side, dimension, all neighbours (9/27-point) or axis neighbours (5/7-point))
CASES = {
    "poisson2d-5pt-512": (512, 2, False),
    "poisson2d-5pt-1024": (1024, 2, False),
    "poisson3d-7pt-64": (64, 3, False),
    "poisson3d-7pt-100": (100, 3, False),
    "stencil2d-9pt-724": (724, 2, True),
    "stencil3d-27pt-40": (40, 3, True),
}


def stencil(n, dim, full):
    e = np.ones(n)
    eye = sp.identity(n)
    if full:
        t = sp.diags([e[:-1], e, e[:-1]], [-1, 0, 1])
        a = (sp.kron(t, t) if dim == 2 else sp.kron(sp.kron(t, t), t)) * -1.0
        a.setdiag(8.0 if dim == 2 else 26.0)
    else:
        d = sp.diags([-e[:-1], -e[:-1]], [-1, 1])
        if dim == 2:
            a = sp.kron(eye, d) + sp.kron(d, eye)
        else:
            a = sp.kron(sp.kron(eye, eye), d) + sp.kron(sp.kron(eye, d), eye) + sp.kron(sp.kron(d, eye), eye)
        a.setdiag(2.0 * dim)
    a = sp.csr_matrix(a, dtype=np.float32)
    a.sort_indices()
    return a


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    os.makedirs(out, exist_ok=True)
    for name in names:
        a = stencil(*CASES[name])
        path = os.path.join(out, name + ".mtx")
        sio.mmwrite(path, a)
        a @ a
        t = []
        for _ in range(5):
            s = time.perf_counter()
            c = a @ a
            t.append(time.perf_counter() - s)
        print(f"{path}\trows {a.shape[0]}\tnnz(A) {a.nnz}\tnnz(A^2) {c.nnz}\tmedian {statistics.median(t) * 1e3:.2f} ms\tmin {min(t) * 1e3:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
