"""CPU peers of the OMP benchmark: SPAMS `omp` (multithreaded) and scikit-learn
`orthogonal_mp_gram`, on the inputs `cuda_omp_bench --dump DIR` wrote.

Usage: python3 omp_peers.py DIR [THREADS]. For each case found in DIR
(`<case>_D.npy`: n x K float32 dictionary, `<case>_X.npy`: L x n float32
signals) it codes with Sparsity(k) (16 or 32, from the case name) and prints
signals/s. SPAMS codes all L signals in float32 (as the CUDA and rayon runs
do), with THREADS threads (default: all cores), after a warm-up call on 1000
signals; its time includes its own Gram matrix and D^T X. scikit-learn, about
a thousand times slower, codes the first few thousand signals only (in
float64, its Gram path), timed with D^T X and Gram included.
"""

import os
import sys
import time

import numpy as np

CASES = [("omp-64x256-k16", 16, 4000), ("omp-256x1024-k32", 32, 1000)]


def main():
    d = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
    for case, k, sk_count in CASES:
        dp, xp = f"{d}/{case}_D.npy", f"{d}/{case}_X.npy"
        if not (os.path.exists(dp) and os.path.exists(xp)):
            continue
        D = np.load(dp)
        X = np.load(xp)
        L, n = X.shape
        print(f"{case}: D {D.shape}, X {X.shape}", flush=True)
        try:
            import spams

            Df = np.asfortranarray(D)
            Xf = np.asfortranarray(X.T)
            spams.omp(np.asfortranarray(Xf[:, :1000]), Df, L=k, numThreads=threads)
            t = time.perf_counter()
            A = spams.omp(Xf, Df, L=k, numThreads=threads)
            dt = time.perf_counter() - t
            print(
                f"  spams.omp float32 ({threads} threads): {L} signals in {dt * 1e3:.1f} ms"
                f" = {L / dt:.3e} signals/s, nnz {A.nnz}",
                flush=True,
            )
        except Exception as e:  # report and go on to the next peer
            print(f"  spams: failed: {e!r}", flush=True)
        try:
            from sklearn.linear_model import orthogonal_mp_gram

            m = min(L, sk_count)
            D64 = D.astype(np.float64)
            t = time.perf_counter()
            G = D64.T @ D64
            Xy = D64.T @ X[:m].T.astype(np.float64)
            C = orthogonal_mp_gram(G, Xy, n_nonzero_coefs=k)
            dt = time.perf_counter() - t
            print(
                f"  sklearn orthogonal_mp_gram float64: {m} signals in {dt * 1e3:.1f} ms"
                f" = {m / dt:.3e} signals/s, nnz {np.count_nonzero(C)}",
                flush=True,
            )
        except Exception as e:
            print(f"  sklearn: failed: {e!r}", flush=True)


if __name__ == "__main__":
    main()
