// DenseGemm for the CUDA backend: C <- alpha op(A) op(B) + beta C, row-major,
// with leading dimensions. Compiled at run time by NVRTC (no headers needed).
//
// f32: one templated SIMT kernel. A block of 256 threads (8 warps) computes a
// BM x BN tile of C; each thread an (TM x TN) sub-tile held in registers, made
// of 4x4 pieces spaced 32 rows / 16 columns apart so that a warp's shared-memory
// reads are 16-byte vectors with no bank conflicts (8 distinct A vectors and 4
// distinct B vectors per warp and k; the rest are broadcasts). Tiles of A and B
// (BK deep) are staged in shared memory k-major (As[k][m], Bs[k][n]), double
// buffered: the next tile is fetched from global memory into registers while
// the current one is multiplied, so one barrier per BK step suffices. Global
// loads are 16-byte vectors where the operand is 16-byte aligned with ld % 4 == 0
// and the 4 elements are in range, per element (zero-filled) otherwise, so edge
// tiles and odd leading dimensions are exact. beta == 0 never reads C.
//
// Entry points: gemm_{nn,nt,tn,tt}_{128x128,128x256,128x128k16,64x64}_f32
// (k16: BK = 16, half the barriers per flop; 128x256 at BK = 16 would need
// 50 KB of static shared memory, over the 48 KB limit) and
// gemm_{nn,nt,tn,tt}_f64 (first letter: op(A), second: op(B); t = transposed).

#define NT 256

typedef unsigned long long u64;

__device__ __forceinline__ bool aligned16(const void* p) {
    return (((u64)p) & 15ull) == 0;
}

template <int BM, int BN, int BK, int WARPS_M, bool TA, bool TB>
__device__ __forceinline__ void sgemm_tile(int M, int N, int K, float alpha,
                                           const float* __restrict__ A, long long lda,
                                           const float* __restrict__ B, long long ldb,
                                           float beta, float* __restrict__ C, long long ldc) {
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int WTM = BM / WARPS_M;  // warp tile
    constexpr int WTN = BN / WARPS_N;
    constexpr int TM = WTM / 8;  // thread tile: 8 x 4 threads per warp
    constexpr int TN = WTN / 4;
    constexpr int PA = BM + 4;  // padding breaks bank conflicts of transposed stores
    constexpr int PB = BN + 4;
    constexpr int A_LD = BM * BK / 4 / NT;  // float4 loads per thread per tile
    constexpr int B_LD = BN * BK / 4 / NT;
    static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tile must be 4x4 pieces");
    static_assert(A_LD >= 1 && B_LD >= 1, "tile too small for 256 threads");
    static_assert(A_LD * NT * 4 == BM * BK && B_LD * NT * 4 == BN * BK, "uneven loads");

    __shared__ __align__(16) float As[2][BK][PA];
    __shared__ __align__(16) float Bs[2][BK][PB];

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WTM;
    const int wn0 = (warp % WARPS_N) * WTN;
    const int tm = lane >> 2, tn = lane & 3;

    // Grouped block order: GROUP consecutive block rows sweep the columns
    // together, so the B panel they share stays in L2.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int GROUP = 8;
    const int bid = blockIdx.x;
    const int group_size = GROUP * tiles_n;
    const int first_m = (bid / group_size) * GROUP;
    const int gm = min(tiles_m - first_m, GROUP);
    const int bm = first_m + (bid % group_size) % gm;
    const int bn = (bid % group_size) / gm;
    const int m0 = bm * BM, n0 = bn * BN;

    const bool vecA = aligned16(A) && (lda & 3) == 0;
    const bool vecB = aligned16(B) && (ldb & 3) == 0;
    const bool vecC = aligned16(C) && (ldc & 3) == 0;

    float4 ra[A_LD], rb[B_LD];

    // op(A)(m, k) = TA ? A[k*lda + m] : A[m*lda + k]
    auto loadA = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LD; ++l) {
            const int idx = tid + l * NT;
            int r, c;  // r, c index the stored matrix; c runs along the float4
            if (!TA) { r = m0 + idx / (BK / 4); c = k0 + (idx % (BK / 4)) * 4; }
            else     { r = k0 + idx / (BM / 4); c = m0 + (idx % (BM / 4)) * 4; }
            const int rows = TA ? K : M, cols = TA ? M : K;
            const float* p = A + (long long)r * lda + c;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (r < rows) {
                if (vecA && c + 3 < cols) {
                    v = *reinterpret_cast<const float4*>(p);
                } else {
                    if (c + 0 < cols) v.x = p[0];
                    if (c + 1 < cols) v.y = p[1];
                    if (c + 2 < cols) v.z = p[2];
                    if (c + 3 < cols) v.w = p[3];
                }
            }
            ra[l] = v;
        }
    };
    // op(B)(k, n) = TB ? B[n*ldb + k] : B[k*ldb + n]
    auto loadB = [&](int k0) {
#pragma unroll
        for (int l = 0; l < B_LD; ++l) {
            const int idx = tid + l * NT;
            int r, c;
            if (!TB) { r = k0 + idx / (BN / 4); c = n0 + (idx % (BN / 4)) * 4; }
            else     { r = n0 + idx / (BK / 4); c = k0 + (idx % (BK / 4)) * 4; }
            const int rows = TB ? N : K, cols = TB ? K : N;
            const float* p = B + (long long)r * ldb + c;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (r < rows) {
                if (vecB && c + 3 < cols) {
                    v = *reinterpret_cast<const float4*>(p);
                } else {
                    if (c + 0 < cols) v.x = p[0];
                    if (c + 1 < cols) v.y = p[1];
                    if (c + 2 < cols) v.z = p[2];
                    if (c + 3 < cols) v.w = p[3];
                }
            }
            rb[l] = v;
        }
    };
    auto storeA = [&](int buf) {
#pragma unroll
        for (int l = 0; l < A_LD; ++l) {
            const int idx = tid + l * NT;
            if (!TA) {
                const int m = idx / (BK / 4), k = (idx % (BK / 4)) * 4;
                As[buf][k + 0][m] = ra[l].x;
                As[buf][k + 1][m] = ra[l].y;
                As[buf][k + 2][m] = ra[l].z;
                As[buf][k + 3][m] = ra[l].w;
            } else {
                const int k = idx / (BM / 4), m = (idx % (BM / 4)) * 4;
                *reinterpret_cast<float4*>(&As[buf][k][m]) = ra[l];
            }
        }
    };
    auto storeB = [&](int buf) {
#pragma unroll
        for (int l = 0; l < B_LD; ++l) {
            const int idx = tid + l * NT;
            if (!TB) {
                const int k = idx / (BN / 4), n = (idx % (BN / 4)) * 4;
                *reinterpret_cast<float4*>(&Bs[buf][k][n]) = rb[l];
            } else {
                const int n = idx / (BK / 4), k = (idx % (BK / 4)) * 4;
                Bs[buf][k + 0][n] = rb[l].x;
                Bs[buf][k + 1][n] = rb[l].y;
                Bs[buf][k + 2][n] = rb[l].z;
                Bs[buf][k + 3][n] = rb[l].w;
            }
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int ktiles = (K + BK - 1) / BK;
    if (ktiles > 0) {
        loadA(0);
        loadB(0);
        storeA(0);
        storeB(0);
        __syncthreads();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        const int cur = kt & 1;
        const bool more = kt + 1 < ktiles;
        if (more) {
            loadA((kt + 1) * BK);
            loadB((kt + 1) * BK);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM / 4; ++i) {
                const float4 v = *reinterpret_cast<const float4*>(&As[cur][kk][wm0 + i * 32 + tm * 4]);
                a[i * 4 + 0] = v.x; a[i * 4 + 1] = v.y; a[i * 4 + 2] = v.z; a[i * 4 + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN / 4; ++j) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][kk][wn0 + j * 16 + tn * 4]);
                b[j * 4 + 0] = v.x; b[j * 4 + 1] = v.y; b[j * 4 + 2] = v.z; b[j * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) {
            storeA(cur ^ 1);
            storeB(cur ^ 1);
        }
        __syncthreads();
    }

    // Epilogue: C = alpha * acc (+ beta * C when beta != 0; C is not read otherwise).
    const bool read_c = beta != 0.f;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + wm0 + (i / 4) * 32 + tm * 4 + (i % 4);
        if (row >= M) continue;
        float* crow = C + (long long)row * ldc;
#pragma unroll
        for (int j4 = 0; j4 < TN / 4; ++j4) {
            const int col = n0 + wn0 + j4 * 16 + tn * 4;
            float r[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) r[q] = alpha * acc[i][j4 * 4 + q];
            if (vecC && col + 3 < N) {
                float4* p = reinterpret_cast<float4*>(crow + col);
                if (read_c) {
                    const float4 o = *p;
                    r[0] = fmaf(beta, o.x, r[0]);
                    r[1] = fmaf(beta, o.y, r[1]);
                    r[2] = fmaf(beta, o.z, r[2]);
                    r[3] = fmaf(beta, o.w, r[3]);
                }
                *p = make_float4(r[0], r[1], r[2], r[3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    if (col + q < N) {
                        float v = r[q];
                        if (read_c) v = fmaf(beta, crow[col + q], v);
                        crow[col + q] = v;
                    }
                }
            }
        }
    }
}

#define SGEMM_ENTRY(NAME, BM, BN, BK, WM, TA, TB)                                         \
    extern "C" __global__ void __launch_bounds__(NT) NAME(                              \
        int M, int N, int K, float alpha, const float* __restrict__ A, long long lda,     \
        const float* __restrict__ B, long long ldb, float beta, float* __restrict__ C,    \
        long long ldc) {                                                                  \
        sgemm_tile<BM, BN, BK, WM, TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); \
    }

SGEMM_ENTRY(gemm_nn_128x128_f32, 128, 128, 8, 2, false, false)
SGEMM_ENTRY(gemm_nt_128x128_f32, 128, 128, 8, 2, false, true)
SGEMM_ENTRY(gemm_tn_128x128_f32, 128, 128, 8, 2, true, false)
SGEMM_ENTRY(gemm_tt_128x128_f32, 128, 128, 8, 2, true, true)
SGEMM_ENTRY(gemm_nn_128x256_f32, 128, 256, 8, 2, false, false)
SGEMM_ENTRY(gemm_nt_128x256_f32, 128, 256, 8, 2, false, true)
SGEMM_ENTRY(gemm_tn_128x256_f32, 128, 256, 8, 2, true, false)
SGEMM_ENTRY(gemm_tt_128x256_f32, 128, 256, 8, 2, true, true)
SGEMM_ENTRY(gemm_nn_128x128k16_f32, 128, 128, 16, 2, false, false)
SGEMM_ENTRY(gemm_nt_128x128k16_f32, 128, 128, 16, 2, false, true)
SGEMM_ENTRY(gemm_tn_128x128k16_f32, 128, 128, 16, 2, true, false)
SGEMM_ENTRY(gemm_tt_128x128k16_f32, 128, 128, 16, 2, true, true)
SGEMM_ENTRY(gemm_nn_64x64_f32, 64, 64, 16, 2, false, false)
SGEMM_ENTRY(gemm_nt_64x64_f32, 64, 64, 16, 2, false, true)
SGEMM_ENTRY(gemm_tn_64x64_f32, 64, 64, 16, 2, true, false)
SGEMM_ENTRY(gemm_tt_64x64_f32, 64, 64, 16, 2, true, true)

// ---------------------------------------------------------------------------
// f64: a plain shared-memory tiled kernel. 64x64 tile, 256 threads, 4x4 per
// thread spaced 16 apart (conflict-free reads), BK = 8, per-element guarded
// loads. FP64 runs at half the FP32 rate on Hopper; this is the simple path.

template <bool TA, bool TB>
__device__ __forceinline__ void dgemm_tile(int M, int N, int K, double alpha,
                                           const double* __restrict__ A, long long lda,
                                           const double* __restrict__ B, long long ldb,
                                           double beta, double* __restrict__ C, long long ldc) {
    constexpr int BM = 64, BN = 64, BK = 8;
    __shared__ double As[BK][BM + 1];
    __shared__ double Bs[BK][BN + 1];
    const int tid = threadIdx.x;
    const int tm = tid / 16, tn = tid % 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    double acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < 2; ++l) {
            const int idx = tid + l * 256;
            // A tile: element (m, k) of op(A)
            int m, k;
            if (!TA) { m = idx / BK; k = idx % BK; } else { k = idx / BM; m = idx % BM; }
            const int gm = m0 + m, gk = k0 + k;
            double v = 0.0;
            if (gm < M && gk < K) v = TA ? A[(long long)gk * lda + gm] : A[(long long)gm * lda + gk];
            As[k][m] = v;
            int n;
            if (!TB) { k = idx / BN; n = idx % BN; } else { n = idx / BK; k = idx % BK; }
            const int gn = n0 + n;
            const int gk2 = k0 + k;
            double w = 0.0;
            if (gn < N && gk2 < K) w = TB ? B[(long long)gn * ldb + gk2] : B[(long long)gk2 * ldb + gn];
            Bs[k][n] = w;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            double a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[kk][tm + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tn + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    const bool read_c = beta != 0.0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = m0 + tm + 16 * i;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int col = n0 + tn + 16 * j;
            if (col >= N) continue;
            double v = alpha * acc[i][j];
            double* p = C + (long long)row * ldc + col;
            if (read_c) v = fma(beta, *p, v);
            *p = v;
        }
    }
}

#define DGEMM_ENTRY(NAME, TA, TB)                                                       \
    extern "C" __global__ void __launch_bounds__(256) NAME(                           \
        int M, int N, int K, double alpha, const double* __restrict__ A, long long lda, \
        const double* __restrict__ B, long long ldb, double beta,                       \
        double* __restrict__ C, long long ldc) {                                        \
        dgemm_tile<TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);               \
    }

DGEMM_ENTRY(gemm_nn_f64, false, false)
DGEMM_ENTRY(gemm_nt_f64, false, true)
DGEMM_ENTRY(gemm_tn_f64, true, false)
DGEMM_ENTRY(gemm_tt_f64, true, true)
