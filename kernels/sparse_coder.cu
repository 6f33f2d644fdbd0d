// Batch-OMP (Rubinstein, Zibulevsky and Elad 2008) for the CUDA backend.
//
// Two kernels per element type T (float or double):
//
// - omp_correlate_T: out = X D for row-major X (rows x n, T) and D (n x K, T),
//   in f64. Used twice per call: for the Gram matrix G = D^T D (X = D^T, done
//   once per dictionary and call) and for alpha0 = D^T x of every signal
//   (X = the signals). Each output is one fma chain over p = 0..n-1 in order,
//   whatever tile computes it, so a signal equal to atom j gets
//   alpha0_j == G_jj bit for bit, and its residual after one step is exactly
//   zero, as in exact arithmetic.
// - omp_batch_T: one warp per signal (persistent, grid-stride). Lane l owns the
//   atoms j = l, l + 32, ...; each step recomputes the correlations
//   alpha = alpha0 - G_I gamma from G's rows (coalesced over j, served by
//   L2 / L1: G is shared by every warp, so it is never copied per signal),
//   picks the largest |alpha_j| among unselected atoms (ties: smaller j, by a
//   butterfly reduction that every lane ends with the same answer), extends
//   the Cholesky factor L of G_II by one row (forward substitution, one
//   serial round per chosen atom, lanes over the rows), updates
//   z = L^-1 alpha0_I by one entry (z_k = alpha_j / L_kk) and solves
//   gamma = L^-T z (back substitution, lanes over the entries). The squared
//   residual is tracked as ||x||^2 - ||z||^2.
//
// Per-warp scratch (L packed by rows, z, gamma, a work vector, the chosen
// atoms and a bitmap of them) lives in shared memory when it fits, else in a
// global buffer indexed by the warp's global number; both are reached through
// one generic pointer, so the code is the same.
//
// All arithmetic after reading the inputs is f64, for float inputs too: the
// Gram form squares the dictionary's condition number and a coherent
// dictionary (the overcomplete DCT) would cost float digits the contract's
// tolerances need. The rules match the rayon backend (see
// crates/trident-rayon/src/sparse_coder.rs and docs/semantics.md):
// - stop before a pick when ||r||^2 <= eps (error rules), ||r||^2 <= 0, or
//   the atom budget min(T, n, K) is used;
// - stop when the best |alpha_j| is at most the contract's zero-correlation
//   floor 64 sqrt(n) eps_f64 ||x|| (nothing reachable is left; an exact
//   duplicate of a chosen atom is never picked);
// - stop without the pick when its pivot (squared distance to the span of the
//   chosen atoms) is not positive: the contract's exactly singular case. There
//   is no other stop: a nearly dependent atom (1e-7 rad from the span, a pivot
//   of 1e-14 G_jj) is added, and a pivot below ILL G_jj (OMP_ILL_PIVOT_F64 in
//   trident_core::tol) has the final coefficients refined against the
//   explicit f64 residual (`refine`), as rayon does;
// - below 1e-8 ||x||^2 the tracked residual has lost its digits to
//   cancellation: stop decisions then use the explicit x - D_I gamma;
// - the reported ||r||^2 is recomputed from x and the coefficients rounded
//   to T: the residual of the code returned (+inf where a coefficient
//   rounds to infinity).
//
// The ends of the range: a signal whose largest |x_p| lies outside
// [2^-256, 2^256) (f64 signals only: every float lies inside) is coded as
// x 2^se, the power of two that brings that entry into [1, 2)
// (trident_core::omp::SignalScale); its alpha0 is recomputed here from the
// scaled signal, the error target is scaled by 2^(2 se), and the
// coefficients and ||r||^2 are scaled back before rounding to T.
//
// Determinism: every sum has a fixed order (fma chains in index order, then a
// butterfly over lanes, whose pairwise adds are commutative so every lane
// holds the same bits); no atomics.

#define WARP 32
#define OMP_WARPS 4
#define TRUST 1e-8
// trident_core::tol::OMP_ILL_PIVOT_F64 (a test checks the two agree).
#define ILL 1e-8
// Largest |x_p| with ilogb in [-WINDOW, WINDOW): coded unscaled
// (trident_core::omp::OMP_WINDOW_F64).
#define WINDOW 256
// Refinement: REFINE_STEPS steps, then up to REFINE_MORE more while the last
// correction is above 1e-10 of the coefficients and at most half the one
// before (rayon's `Float::REFINE_STEPS`, `REFINE_MORE` for f64).
#define REFINE_STEPS 3
#define REFINE_MORE 13
#define EPS64 2.220446049250313e-16
#define INF64 __longlong_as_double(0x7ff0000000000000LL)
#define TILE 64
#define PT 16

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_max(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Entry p of the signal in the units it is coded in: x_p 2^se (exact).
template <typename T>
__device__ __forceinline__ double xval(const T* __restrict__ x, int p, int se) {
    const double v = (double)x[p];
    return se ? scalbn(v, se) : v;
}

// out (rows x K, ld ldo, f64) = X (rows x n, ld ldx) * D (n x K, ld ldd).
// Block 16 x 16 threads, 64 x 64 outputs, 4 x 4 per thread.
template <typename T>
__device__ void correlate(int rows, int n, int K, const T* __restrict__ X, long long ldx,
                          const T* __restrict__ D, long long ldd, double* __restrict__ out,
                          long long ldo) {
    __shared__ double xs[PT][TILE + 1];
    __shared__ double ds[PT][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const long long row0 = (long long)blockIdx.y * TILE;
    const int col0 = blockIdx.x * TILE;
    double acc[4][4];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] = 0.0;
    for (int p0 = 0; p0 < n; p0 += PT) {
        const int np = min(PT, n - p0);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int idx = tid + e * 256;  // 0..1023
            const int r = idx / PT, pp = idx % PT;
            const long long row = row0 + r;
            xs[pp][r] = (row < rows && pp < np) ? (double)X[row * ldx + p0 + pp] : 0.0;
            const int pd = idx / TILE, c = idx % TILE;
            ds[pd][c] = (pd < np && col0 + c < K) ? (double)D[(long long)(p0 + pd) * ldd + col0 + c]
                                                  : 0.0;
        }
        __syncthreads();
        for (int pp = 0; pp < np; ++pp) {
            double xv[4], dv[4];
#pragma unroll
            for (int a = 0; a < 4; ++a) xv[a] = xs[pp][ty * 4 + a];
#pragma unroll
            for (int b = 0; b < 4; ++b) dv[b] = ds[pp][tx + 16 * b];
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) acc[a][b] = fma(xv[a], dv[b], acc[a][b]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 4; ++a) {
        const long long row = row0 + ty * 4 + a;
        if (row >= rows) continue;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int c = col0 + tx + 16 * b;
            if (c < K) out[row * ldo + c] = acc[a][b];
        }
    }
}

// Scratch of one warp, carved from `base` (8-byte aligned): packed L
// (m (m + 1) / 2), z, gamma, work (m each, f64), the chosen atoms (m ints)
// and the chosen-atom bitmap (ceil(K / 32) words).
struct Scratch {
    double* l;
    double* z;
    double* gam;
    double* work;
    int* sel;
    unsigned* mask;
};

__device__ __forceinline__ Scratch carve(char* base, int m, int K) {
    Scratch s;
    const long long tri = (long long)m * (m + 1) / 2;
    s.l = (double*)base;
    s.z = s.l + tri;
    s.gam = s.z + m;
    s.work = s.gam + m;
    s.sel = (int*)(s.work + m);
    s.mask = (unsigned*)(s.sel + m);
    return s;
}

__device__ __forceinline__ long long tri_at(int row) { return (long long)row * (row + 1) / 2; }

// ||x 2^se - D_I g||^2 with g = g[0..count), lanes over the signal's entries.
template <typename T>
__device__ double residual2(const T* __restrict__ x, int se, const T* __restrict__ DT, int n,
                            int count, const int* sel, const double* g, int lane) {
    double s = 0.0;
    for (int p = lane; p < n; p += WARP) {
        double r = xval(x, p, se);
        for (int t = 0; t < count; ++t) r = fma(-g[t], (double)DT[(long long)sel[t] * n + p], r);
        s = fma(r, r, s);
    }
    return warp_sum(s);
}

// out = L^-T b for the first `count` entries: one serial round per entry,
// lanes over the entries still open. Uses `work` as the running right side,
// so `out` may be `b`.
__device__ void back_solve(const Scratch& s, const double* b, double* out, int count, int lane) {
    for (int t = lane; t < count; t += WARP) s.work[t] = b[t];
    __syncwarp();
    for (int u = count - 1; u >= 0; --u) {
        const double* row = s.l + tri_at(u);
        const double gu = s.work[u] / row[u];
        if (lane == 0) out[u] = gu;
        for (int t = lane; t < u; t += WARP) s.work[t] = fma(-row[t], gu, s.work[t]);
        __syncwarp();
    }
}

// gamma = L^-T z.
__device__ __forceinline__ void back_substitute(const Scratch& s, int count, int lane) {
    back_solve(s, s.z, s.gam, count, lane);
}

// One step of iterative refinement of gamma (f64, the explicit residual):
// c = D_I^T (x 2^se - D_I gamma), L y = c, L^T d = y, gamma += d; returns
// max |d| (in every lane) and sets *gmax to max |gamma| after the step. For
// ill-conditioned signals only, after the selection is final: z is free
// then and holds c, y and d in turn.
template <typename T>
__device__ double refine(const Scratch& s, const T* __restrict__ x, int se,
                         const T* __restrict__ DT, int n, int count, int lane, double* gmax) {
    for (int t = 0; t < count; ++t) {
        const T* dt = DT + (long long)s.sel[t] * n;
        double acc = 0.0;
        for (int p = lane; p < n; p += WARP) {
            double r = xval(x, p, se);
            for (int u = 0; u < count; ++u)
                r = fma(-s.gam[u], (double)DT[(long long)s.sel[u] * n + p], r);
            acc = fma((double)dt[p], r, acc);
        }
        acc = warp_sum(acc);
        if (lane == 0) s.z[t] = acc;
    }
    __syncwarp();
    for (int q = 0; q < count; ++q) {
        const double yq = s.z[q] / s.l[tri_at(q) + q];
        __syncwarp();
        if (lane == 0) s.z[q] = yq;
        for (int t = q + 1 + lane; t < count; t += WARP)
            s.z[t] = fma(-s.l[tri_at(t) + q], yq, s.z[t]);
        __syncwarp();
    }
    back_solve(s, s.z, s.z, count, lane);
    double dn = 0.0, gm = 0.0;
    for (int t = lane; t < count; t += WARP) {
        const double g = s.gam[t] + s.z[t];
        s.gam[t] = g;
        dn = fmax(dn, fabs(s.z[t]));
        gm = fmax(gm, fabs(g));
    }
    __syncwarp();
    *gmax = warp_max(gm);
    return warp_max(dn);
}

template <typename T>
__device__ void omp_batch(int rows, int n, int K, int m, const T* __restrict__ X, long long ldx,
                          const T* __restrict__ DT, const double* __restrict__ G,
                          double* __restrict__ A0, long long lda, double eps0, int has_eps,
                          unsigned* __restrict__ counts, unsigned* __restrict__ atoms,
                          T* __restrict__ coefs, T* __restrict__ r2out, int use_global,
                          char* gscratch, long long sbytes) {
    extern __shared__ __align__(16) char smem[];
    const int lane = threadIdx.x & (WARP - 1);
    const int warp = threadIdx.x / WARP;
    const long long gw = (long long)blockIdx.x * OMP_WARPS + warp;
    char* base = use_global ? gscratch + gw * sbytes : smem + (long long)warp * sbytes;
    const Scratch s = carve(base, m, K);
    const int words = (K + WARP - 1) / WARP;
    for (long long i = gw; i < rows; i += (long long)gridDim.x * OMP_WARPS) {
        const T* x = X + i * ldx;
        double* a0 = A0 + i * lda;
        for (int w = lane; w < words; w += WARP) s.mask[w] = 0u;
        // The signal's scale: 2^se brings its largest entry into [1, 2) when
        // that entry lies outside the window; 0 otherwise (bit for bit the
        // unscaled computation).
        double mx = 0.0;
        for (int p = lane; p < n; p += WARP) mx = fmax(mx, fabs((double)x[p]));
        mx = warp_max(mx);
        int se = 0;
        if (mx > 0.0) {
            const int e = ilogb(mx);
            if (e < -WINDOW || e >= WINDOW) se = -e;
        }
        if (se) {
            // alpha0 of the scaled signal, in omp_correlate's order (one fma
            // chain over p), over this signal's own row of A0.
            for (int j = lane; j < K; j += WARP) {
                const T* dt = DT + (long long)j * n;
                double acc = 0.0;
                for (int p = 0; p < n; ++p) acc = fma(xval(x, p, se), (double)dt[p], acc);
                a0[j] = acc;
            }
        }
        const double eps = se ? scalbn(eps0, 2 * se) : eps0;
        double xx = 0.0;
        for (int p = lane; p < n; p += WARP) {
            const double v = xval(x, p, se);
            xx = fma(v, v, xx);
        }
        xx = warp_sum(xx);
        __syncwarp();
        // The contract's zero-correlation floor (trident_core::omp_zero_correlation).
        const double floor = 64.0 * sqrt((double)max(n, 1)) * EPS64 * sqrt(xx);
        int count = 0;      // atoms chosen
        int solved = 0;     // gamma holds L^-T z for this many atoms
        bool ill = false;   // a pivot below ILL G_jj: refine the coefficients
        double zz = 0.0;
        bool go = !((has_eps && xx <= eps) || xx <= 0.0 || m <= 0);
        while (go) {
            // Correlations of the unselected atoms; the lane's best, ascending j
            // with a strict '>', so the smaller j wins ties.
            double best = -1.0, besta = 0.0;
            int bj = 0x7fffffff;
            for (int j0 = lane; j0 < K; j0 += 4 * WARP) {
                double a[4];
                bool live[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const int j = j0 + u * WARP;
                    live[u] = j < K && !((s.mask[j >> 5] >> (j & 31)) & 1u);
                    a[u] = live[u] ? a0[j] : 0.0;
                }
                for (int t = 0; t < count; ++t) {
                    const double* grow = G + (long long)s.sel[t] * K;
                    const double gt = s.gam[t];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int j = j0 + u * WARP;
                        if (live[u]) a[u] = fma(-grow[j], gt, a[u]);
                    }
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const double v = fabs(a[u]);
                    if (live[u] && v > best) {
                        best = v;
                        besta = a[u];
                        bj = j0 + u * WARP;
                    }
                }
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const double ob = __shfl_xor_sync(0xffffffffu, best, o);
                const double oa = __shfl_xor_sync(0xffffffffu, besta, o);
                const int oj = __shfl_xor_sync(0xffffffffu, bj, o);
                if (ob > best || (ob == best && oj < bj)) {
                    best = ob;
                    besta = oa;
                    bj = oj;
                }
            }
            if (!(best > floor)) break;  // nothing the dictionary can reach
            const int j = bj;
            // Row `count` of L: w = L^-1 G_{I,j}, one round per chosen atom.
            double* lrow = s.l + tri_at(count);
            for (int t = lane; t < count; t += WARP) s.work[t] = G[(long long)s.sel[t] * K + j];
            __syncwarp();
            double ww = 0.0;
            for (int q = 0; q < count; ++q) {
                const double* rq = s.l + tri_at(q);
                const double wq = s.work[q] / rq[q];
                if (lane == 0) lrow[q] = wq;
                ww = fma(wq, wq, ww);  // same order on every lane
                for (int t = q + 1 + lane; t < count; t += WARP)
                    s.work[t] = fma(-s.l[tri_at(t) + q], wq, s.work[t]);
                __syncwarp();
            }
            const double gjj = G[(long long)j * K + j];
            const double d2 = gjj - ww;
            if (!(d2 > 0.0)) break;  // in the span of the chosen atoms (or NaN)
            ill |= d2 < ILL * gjj;
            const double lkk = sqrt(d2);
            const double zk = besta / lkk;
            if (lane == 0) {
                lrow[count] = lkk;
                s.z[count] = zk;
                s.sel[count] = j;
                s.mask[j >> 5] |= 1u << (j & 31);
            }
            __syncwarp();
            ++count;
            zz = fma(zk, zk, zz);
            double r2 = xx - zz;
            if (r2 <= TRUST * xx) {
                back_substitute(s, count, lane);
                solved = count;
                r2 = residual2(x, se, DT, n, count, s.sel, s.gam, lane);
            }
            if ((has_eps && r2 <= eps) || r2 <= 0.0 || count >= m) break;
            if (solved != count) {
                back_substitute(s, count, lane);
                solved = count;
            }
        }
        if (solved != count) back_substitute(s, count, lane);
        if (ill) {
            double last = INF64;
            for (int step = 1; step <= REFINE_STEPS + REFINE_MORE; ++step) {
                double gm;
                const double dn = refine(s, x, se, DT, n, count, lane, &gm);
                const bool more = dn > 1e-10 * gm && dn <= 0.5 * last;
                if (step >= REFINE_STEPS && !more) break;
                last = dn;
            }
        }
        // Round to T (in the signal's units), then measure the residual of
        // the code as returned (scaled units), +inf if a coefficient
        // overflowed T.
        bool inf = false;
        for (int t = lane; t < count; t += WARP) {
            const T c = (T)(se ? scalbn(s.gam[t], -se) : s.gam[t]);
            s.work[t] = se ? scalbn((double)c, se) : (double)c;
            inf |= isinf((double)c);
            atoms[i * m + t] = (unsigned)s.sel[t];
            coefs[i * m + t] = c;
        }
        inf = __any_sync(0xffffffffu, inf);
        __syncwarp();
        double r2 = inf ? INF64 : residual2(x, se, DT, n, count, s.sel, s.work, lane);
        if (se) r2 = scalbn(r2, -2 * se);
        if (lane == 0) {
            counts[i] = (unsigned)count;
            r2out[i] = (T)r2;
        }
        __syncwarp();
    }
}

// Entry points, one per element type, each declared on one `*_ENTRY` line so
// that a call compiles only its own type's two kernels, in parallel
// (`KernelSource::per_entry`, `CudaBackend::prepare`).
#define OMP_CORRELATE_ENTRY(NAME, T) \
    extern "C" __global__ void __launch_bounds__(256) NAME(int rows, int n, int K, const T* X, long long ldx, const T* D, long long ldd, double* out, long long ldo) { \
        correlate<T>(rows, n, K, X, ldx, D, ldd, out, ldo); \
    }
#define OMP_BATCH_ENTRY(NAME, T) \
    extern "C" __global__ void __launch_bounds__(OMP_WARPS * WARP) NAME(int rows, int n, int K, int m, const T* X, long long ldx, const T* DT, const double* G, double* A0, long long lda, double eps, int has_eps, unsigned* counts, unsigned* atoms, T* coefs, T* r2out, int use_global, char* gscratch, long long sbytes) { \
        omp_batch<T>(rows, n, K, m, X, ldx, DT, G, A0, lda, eps, has_eps, counts, atoms, coefs, r2out, use_global, gscratch, sbytes); \
    }
OMP_CORRELATE_ENTRY(omp_correlate_f32, float)
OMP_CORRELATE_ENTRY(omp_correlate_f64, double)
OMP_BATCH_ENTRY(omp_batch_f32, float)
OMP_BATCH_ENTRY(omp_batch_f64, double)
