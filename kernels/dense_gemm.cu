// DenseGemm for the CUDA backend: C <- alpha op(A) op(B) + beta C, row-major,
// with leading dimensions. Compiled at run time by NVRTC (no headers needed).
//
// Four families of kernels, all exact on edge tiles, odd leading dimensions
// and unaligned operands (zero-filled out-of-range loads), and none reads C
// when beta == 0:
//
// 1. Strict f32, multistage SIMT (`sgemm_async`, entries
//    gemm_{ops}_s{BM}x{BN}k{BK}s{STAGES}_f32): FFMA only, no tensor cores
//    (docs/semantics.md: Strict). Tiles of A and B are copied into a ring of
//    STAGES shared-memory buffers with `cp.async` (16-byte copies where the
//    operand is stored k-major-compatible and 16-byte aligned, 4-byte copies
//    that transpose on the fly otherwise), so global loads of later k-tiles
//    overlap the FFMAs of the current one with no register staging and one
//    barrier per k-tile. Shared memory is k-major (As[k][m], Bs[k][n]) with
//    rows padded by 4 floats: the transposing 4-byte copies of a warp then hit
//    32 distinct banks, and the compute loop reads 16-byte vectors (LDS.128)
//    conflict-free. Each warp owns a WTM x WTN tile, each thread TM x TN
//    accumulators made of 4x4 pieces spaced 32 rows / 16 columns apart.
// 2. Tensor cores (`tc_gemm`): Precision::Tf32 on f32 (mma.sync m16n8k8,
//    operands rounded to TF32 with cvt.rna, f32 accumulation) and f64
//    (mma.sync m16n8k4 DMMA, as two m8n8k4 before sm_90: IEEE f64
//    multiply-adds, strict). Entries
//    gemm_{ops}_t{BM}x{BN}k{BK}s{STAGES}_f32 and gemm_{ops}_d..._f64. Same
//    cp.async ring; shared memory keeps each operand's stored layout (16-byte
//    copies in every transpose case), padded so that the fragment loads of a
//    warp hit distinct banks.
// 3. The register-staged SIMT f32 kernel (gemm_{ops}_64x64_f32, for small
//    products) and the plain f64 kernel (gemm_{ops}_f64, likewise).
// 4. Hopper (sm_90a), fed by TMA from a producer warp: Tf32 on wgmma
//    (`wgt_gemm`, entries gemm_wt128x{BN}k32s{STAGES}_f32), Tf32x3 on the
//    same kernel over split operands (gemm_wx128x128k32s6_f32, operands laid
//    out by `gemm_split_f32`) and strict f32 on family 1's FFMA loop
//    (`st_gemm`, gemm_st..._f32), with `gemm_pack_f32` to lay out an operand
//    first where it is not stored as the kernel reads it.
//
// Kernels with dynamic shared memory check at entry that the launch gave them
// enough (a mismatch with the host's size formula traps instead of corrupting
// memory). First letter of {ops}: op(A), second: op(B); t = transposed.

// ---------------------------------------------------------------------------
// 3. Register-staged SIMT f32 (the first kernel of this backend):
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
// Entry points: gemm_{nn,nt,tn,tt}_64x64_f32 (products too small to fill the
// device with 128-wide tiles; the 128x128 and 128x256 shapes of this kernel
// were replaced by family 1, measured faster on the H100) and
// gemm_{nn,nt,tn,tt}_f64 (first letter: op(A), second: op(B); t = transposed).

#define NT 256

typedef unsigned long long u64;

__device__ __forceinline__ bool aligned16(const void* p) {
    return (((u64)p) & 15ull) == 0;
}

// One BK-deep k-tile of the SIMT kernels: as/bs point at this thread's
// first A and B values of the tile's first k row (rows PA and PB floats
// apart); TM x TN accumulators as 4x4 pieces 32 rows / 16 columns apart.
template <int TM, int TN, int BK, int PA, int PB>
__device__ __forceinline__ void sgemm_ktile(const float* as, const float* bs, float (&acc)[TM][TN]) {
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM / 4; ++i) {
            const float4 v = *reinterpret_cast<const float4*>(as + kk * PA + i * 32);
            a[i * 4 + 0] = v.x; a[i * 4 + 1] = v.y; a[i * 4 + 2] = v.z; a[i * 4 + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
            const float4 v = *reinterpret_cast<const float4*>(bs + kk * PB + j * 16);
            b[j * 4 + 0] = v.x; b[j * 4 + 1] = v.y; b[j * 4 + 2] = v.z; b[j * 4 + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

// C <- alpha acc + beta C for a thread's TM x TN accumulators of the warp
// tile at (wm, wn), guarded on the matrix edge; beta == 0 never reads C.
template <int TM, int TN>
__device__ __forceinline__ void sgemm_store(int M, int N, float alpha, float beta,
                                            float* __restrict__ C, long long ldc, int wm, int wn,
                                            int tm, int tn, const float (&acc)[TM][TN]) {
    const bool read_c = beta != 0.f;
    const bool vecC = aligned16(C) && (ldc & 3) == 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = wm + (i / 4) * 32 + tm * 4 + (i % 4);
        if (row >= M) continue;
        float* crow = C + (long long)row * ldc;
#pragma unroll
        for (int j4 = 0; j4 < TN / 4; ++j4) {
            const int col = wn + j4 * 16 + tn * 4;
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
        sgemm_ktile<TM, TN, BK, PA, PB>(&As[cur][0][wm0 + tm * 4], &Bs[cur][0][wn0 + tn * 4], acc);
        if (more) {
            storeA(cur ^ 1);
            storeB(cur ^ 1);
        }
        __syncthreads();
    }

    sgemm_store<TM, TN>(M, N, alpha, beta, C, ldc, m0 + wm0, n0 + wn0, tm, tn, acc);
}

#define SGEMM_ENTRY(NAME, BM, BN, BK, WM, TA, TB)                                         \
    extern "C" __global__ void __launch_bounds__(NT) NAME(                              \
        int M, int N, int K, float alpha, const float* __restrict__ A, long long lda,     \
        const float* __restrict__ B, long long ldb, float beta, float* __restrict__ C,    \
        long long ldc) {                                                                  \
        sgemm_tile<BM, BN, BK, WM, TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); \
    }

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

// ---------------------------------------------------------------------------
// Shared pieces of families 1 and 2: cp.async, the stage loaders, the epilogue.

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    u64 a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (unsigned)a;
}

// cp.async of BYTES (4, 8 or 16) from global src to shared dst; only
// src_bytes of them are read, the rest zero-filled (0 = all zeros).
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes) {
    if (BYTES == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                     "l"(src), "r"(src_bytes));
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)),
                     "l"(src), "n"(BYTES), "r"(src_bytes));
    }
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ unsigned dynamic_smem_bytes() {
    unsigned r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}

// The interior case of `load_direct` with the addresses worked out once:
// this thread's chunks sit NTH / CPR rows apart, and a k tile moves every
// source address by the same step (k along the stored columns: k0 elements;
// along the stored rows: k0 rows).
template <typename T, int TR, int TC, int SP, int NTH>
struct TileCopy {
    static constexpr int V = 16 / sizeof(T), CPR = TC / V, RS = NTH / CPR, L = TR * CPR / NTH;
    static_assert(NTH % CPR == 0 && (TR * CPR) % NTH == 0, "chunks must tile the threads");
    const T* src;     // this thread's first chunk for k0 = 0
    long long ld;     // leading dimension of the stored operand
    long long kstep;  // source elements per unit of k0
    int dst;          // shared-memory offset of the first chunk
    __device__ __forceinline__ void init(const T* g, long long ld_, int r0, int c0,
                                         bool k_in_cols) {
        const int r = threadIdx.x / CPR, c = threadIdx.x % CPR * V;
        src = g + (long long)(r0 + r) * ld_ + (c0 + c);
        ld = ld_;
        kstep = k_in_cols ? 1 : ld_;
        dst = r * SP + c;
    }
    __device__ __forceinline__ void copy(T* s, int k0) const {
        const T* p = src + k0 * kstep;
#pragma unroll
        for (int l = 0; l < L; ++l) cp_async<16>(s + dst + l * RS * SP, p + l * RS * ld, 16);
    }
};

// Copies rows [r0, r0+TR) x columns [c0, c0+TC) of a stored row-major matrix
// (rows x cols, leading dimension ld) into shared memory s (TR rows, SP
// elements apart), keeping the orientation. 16-byte copies where `vec` (base
// 16-byte aligned and ld * sizeof(T) a multiple of 16) and the chunk lies wholly
// inside or wholly outside; element copies on the ragged edge and when !vec.
template <typename T, int TR, int TC, int SP, int NTH>
__device__ __forceinline__ void load_direct(T* s, const T* __restrict__ g, long long ld, int rows,
                                            int cols, int r0, int c0, bool vec) {
    constexpr int V = 16 / sizeof(T);
    constexpr int CPR = TC / V;  // chunks per row
    constexpr int CH = TR * CPR;
    static_assert(TC % V == 0 && SP % V == 0, "rows must be whole 16-byte chunks");
    if (vec && r0 + TR <= rows && c0 + TC <= cols) {
        // Interior tile (every block but the edge ones): no per-copy checks.
#pragma unroll
        for (int l = 0; l < (CH + NTH - 1) / NTH; ++l) {
            const int idx = threadIdx.x + l * NTH;
            if (CH % NTH != 0 && idx >= CH) break;
            const int r = idx / CPR, c = (idx % CPR) * V;
            cp_async<16>(s + r * SP + c, g + (long long)(r0 + r) * ld + (c0 + c), 16);
        }
        return;
    }
#pragma unroll
    for (int l = 0; l < (CH + NTH - 1) / NTH; ++l) {
        const int idx = threadIdx.x + l * NTH;
        if (CH % NTH != 0 && idx >= CH) break;
        const int r = idx / CPR, c = (idx % CPR) * V;
        const int gr = r0 + r, gc = c0 + c;
        T* d = s + r * SP + c;
        const T* p = g + (long long)gr * ld + gc;
        if (gr >= rows || gc >= cols) {
            // Nothing is read; the address is still kept 16-byte aligned.
            cp_async<16>(d, reinterpret_cast<const T*>((u64)g & ~15ull), 0);
        } else if (vec && gc + V <= cols) {
            cp_async<16>(d, p, 16);
        } else {
#pragma unroll
            for (int q = 0; q < V; ++q) {
                const bool in = gc + q < cols;
                cp_async<sizeof(T)>(d + q, in ? p + q : g, in ? (int)sizeof(T) : 0);
            }
        }
    }
}

// Copies the X x K block [x0, x0+BX) x [k0, k0+BK) of a stored row-major
// matrix whose rows run along x (rows x cols = X x K) into shared memory
// k-major: s[k * SP + x]. 4-byte copies; a warp covers 4 rows x 8 consecutive
// k (four full 32-byte sectors), and with SP = 4 (mod 32) its 32 stores land
// in 32 distinct banks.
template <int BX, int BK, int SP, int NTH>
__device__ __forceinline__ void load_transposed(float* s, const float* __restrict__ g,
                                                long long ld, int rows, int cols, int x0,
                                                int k0) {
    static_assert(BK % 8 == 0 && (NTH / 32) % (BK / 8) == 0 && (BX * BK) % NTH == 0,
                  "uneven copies");
    // Element e = tid + l NTH: k = lane % 8 + 8 ((e / 32) % (BK / 8)) does not
    // depend on l, and x advances by XS per l, so one pointer walks the rows.
    constexpr int XS = 4 * (NTH / 32) / (BK / 8);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int k = (lane & 7) + 8 * (w % (BK / 8));
    const int x = (lane >> 3) + 4 * (w / (BK / 8));
    const bool kin = k0 + k < cols;
    const int rem = rows - (x0 + x);  // rows left from this thread's first one
    const float* p = g + (long long)(x0 + x) * ld + (k0 + k);
    const long long step = (long long)XS * ld;
    float* d = s + k * SP + x;
    if (x0 + BX <= rows && k0 + BK <= cols) {
        // Interior tile: no per-copy checks.
#pragma unroll
        for (int l = 0; l < BX * BK / NTH; ++l) {
            cp_async<4>(d + l * XS, p, 4);
            p += step;
        }
        return;
    }
#pragma unroll
    for (int l = 0; l < BX * BK / NTH; ++l) {
        const bool in = kin && l * XS < rem;
        cp_async<4>(d + l * XS, in ? p : g, in ? 4 : 0);
        p += step;
    }
}

// Block (bm, bn) of a GROUP-row grouped order: GROUP consecutive block rows
// sweep the columns together, so the B panel they share stays in L2.
__device__ __forceinline__ void block_coords(int M, int N, int BM, int BN, int& m0, int& n0) {
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int GROUP = 8;
    const int bid = blockIdx.x;
    const int group_size = GROUP * tiles_n;
    const int first_m = (bid / group_size) * GROUP;
    const int gm = min(tiles_m - first_m, GROUP);
    m0 = (first_m + (bid % group_size) % gm) * BM;
    n0 = ((bid % group_size) / gm) * BN;
    (void)tiles_m;
}

// C(row, col..col+1) = alpha * (v0, v1) (+ beta * C): guarded pair store.
template <typename T>
__device__ __forceinline__ void store_pair(T* __restrict__ C, long long ldc, int M, int N, int row,
                                           int col, T v0, T v1, T alpha, T beta, bool read_c) {
    if (row >= M) return;
    T* p = C + (long long)row * ldc + col;
    v0 = alpha * v0;
    v1 = alpha * v1;
    if (col + 1 < N) {
        if (read_c) {
            v0 = fma(beta, p[0], v0);
            v1 = fma(beta, p[1], v1);
        }
        p[0] = v0;
        p[1] = v1;
    } else if (col < N) {
        if (read_c) v0 = fma(beta, p[0], v0);
        p[0] = v0;
    }
}

// ---------------------------------------------------------------------------
// 1. Strict f32, multistage SIMT.

template <int BM, int BN, int BK, int WARPS_M, int STAGES, bool TA, bool TB>
__device__ __forceinline__ void sgemm_async(int M, int N, int K, float alpha,
                                            const float* __restrict__ A, long long lda,
                                            const float* __restrict__ B, long long ldb,
                                            float beta, float* __restrict__ C, long long ldc) {
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int TM = WTM / 8, TN = WTN / 4;  // 8 x 4 threads per warp
    constexpr int PA = BM + 4, PB = BN + 4;
    constexpr int A_ST = BK * PA, B_ST = BK * PB;
    static_assert(TM % 4 == 0 && TN % 4 == 0 && STAGES >= 2, "bad shape");
    extern __shared__ __align__(16) float smem_f[];
    if (dynamic_smem_bytes() < (unsigned)(STAGES * (A_ST + B_ST) * 4)) __trap();
    float* As = smem_f;
    float* Bs = smem_f + STAGES * A_ST;

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WTM;
    const int wn0 = (warp % WARPS_N) * WTN;
    const int tm = lane >> 2, tn = lane & 3;
    int m0, n0;
    block_coords(M, N, BM, BN, m0, n0);

    const bool vecA = aligned16(A) && (lda & 3) == 0;
    const bool vecB = aligned16(B) && (ldb & 3) == 0;

    auto load_stage = [&](int stage, int kt) {
        const int k0 = kt * BK;
        float* as = As + stage * A_ST;
        float* bs = Bs + stage * B_ST;
        // Stored A is K x M when transposed (rows along k: direct copy), else M x K.
        if (TA) load_direct<float, BK, BM, PA, NT>(as, A, lda, K, M, k0, m0, vecA);
        else    load_transposed<BM, BK, PA, NT>(as, A, lda, M, K, m0, k0);
        if (!TB) load_direct<float, BK, BN, PB, NT>(bs, B, ldb, K, N, k0, n0, vecB);
        else     load_transposed<BN, BK, PB, NT>(bs, B, ldb, N, K, n0, k0);
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, s);
        cp_async_commit();
    }
    int cur = 0;                // stage holding k-tile kt
    int nxt = STAGES - 1;       // stage receiving k-tile kt + STAGES - 1
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        // The stage refilled here was read in iteration kt - 1, which every
        // thread has finished (the barrier above).
        if (kt + STAGES - 1 < ktiles) load_stage(nxt, kt + STAGES - 1);
        cp_async_commit();
        sgemm_ktile<TM, TN, BK, PA, PB>(As + cur * A_ST + wm0 + tm * 4,
                                         Bs + cur * B_ST + wn0 + tn * 4, acc);
        cur = cur + 1 == STAGES ? 0 : cur + 1;
        nxt = nxt + 1 == STAGES ? 0 : nxt + 1;
    }
    cp_async_wait<0>();

    sgemm_store<TM, TN>(M, N, alpha, beta, C, ldc, m0 + wm0, n0 + wn0, tm, tn, acc);
}

#define SASYNC_ENTRY(NAME, BM, BN, BK, WM, ST, MINB, TA, TB)                                   \
    extern "C" __global__ void __launch_bounds__(NT, MINB) NAME(                                \
        int M, int N, int K, float alpha, const float* __restrict__ A, long long lda,           \
        const float* __restrict__ B, long long ldb, float beta, float* __restrict__ C,          \
        long long ldc) {                                                                        \
        sgemm_async<BM, BN, BK, WM, ST, TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); \
    }

// Every transpose case of the default shape; the rest are variants the bench
// compares (no transposes).
SASYNC_ENTRY(gemm_nn_s128x128k16s4_f32, 128, 128, 16, 2, 4, 2, false, false)
SASYNC_ENTRY(gemm_nt_s128x128k16s4_f32, 128, 128, 16, 2, 4, 2, false, true)
SASYNC_ENTRY(gemm_tn_s128x128k16s4_f32, 128, 128, 16, 2, 4, 2, true, false)
SASYNC_ENTRY(gemm_tt_s128x128k16s4_f32, 128, 128, 16, 2, 4, 2, true, true)
SASYNC_ENTRY(gemm_nn_s128x256k16s3_f32, 128, 256, 16, 2, 3, 1, false, false)
SASYNC_ENTRY(gemm_nt_s128x256k16s3_f32, 128, 256, 16, 2, 3, 1, false, true)
SASYNC_ENTRY(gemm_tn_s128x256k16s3_f32, 128, 256, 16, 2, 3, 1, true, false)
SASYNC_ENTRY(gemm_tt_s128x256k16s3_f32, 128, 256, 16, 2, 3, 1, true, true)
SASYNC_ENTRY(gemm_nn_s128x256k16s4_f32, 128, 256, 16, 2, 4, 1, false, false)
SASYNC_ENTRY(gemm_nn_s128x128k16s4w4_f32, 128, 128, 16, 4, 4, 2, false, false)
SASYNC_ENTRY(gemm_nn_s256x128k16s3_f32, 256, 128, 16, 4, 3, 1, false, false)

// ---------------------------------------------------------------------------
// 2. Tensor cores: mma.sync. Fragment layouts (PTX ISA, g = lane / 4,
// t = lane % 4), in the generic form both shapes share:
//   A register r: (row g + 8 (r & 1), col t + 4 (r >> 1))
//   B register r: (row t + 4 r, col g)
//   C register r: (row g + 8 (r >> 1), col 2 t + (r & 1))

template <typename T>
struct Mma;

// m16n8k8, TF32 operands (rounded to nearest, ties away: cvt.rna), f32 sums.
template <>
struct Mma<float> {
    static constexpr int M = 16, N = 8, K = 8, AR = 4, BR = 2, CR = 4;
    static constexpr int PM = 4, PK = 8;  // padding: rows along k / rows along m,n
    typedef unsigned Frag;
    // RND: round to nearest (cvt.rna: two instructions on sm_90, an
    // infinity test and an add); else the raw f32 bits, which the tensor core
    // truncates to TF32 (rounding toward zero).
    template <bool RND>
    __device__ __forceinline__ static Frag frag(float x) {
        if (!RND) return __float_as_uint(x);
        unsigned r;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
        return r;
    }
    __device__ __forceinline__ static void mma(float* c, const Frag* a, const Frag* b) {
        asm volatile(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

// f64 (DMMA): IEEE double multiply-adds on a 16 x 8 x 4 tile. Hopper issues
// it as one m16n8k4 (sm_90: the m8n8k4 shape runs at half its rate there,
// 33 against 66 TFLOP/s on an H200); sm_80 as two m8n8k4 on the two 8-row
// halves, which is the same arithmetic on the same fragments.
template <>
struct Mma<double> {
    static constexpr int M = 16, N = 8, K = 4, AR = 2, BR = 1, CR = 4;
    static constexpr int PM = 4, PK = 4;
    typedef double Frag;
    template <bool RND>
    __device__ __forceinline__ static Frag frag(double x) { return x; }
    __device__ __forceinline__ static void mma(double* c, const Frag* a, const Frag* b) {
#if __CUDA_ARCH__ >= 900
        asm volatile(
            "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
            "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
            : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
            : "d"(a[0]), "d"(a[1]), "d"(b[0]));
#else
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                     : "+d"(c[0]), "+d"(c[1])
                     : "d"(a[0]), "d"(b[0]));
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                     : "+d"(c[2]), "+d"(c[3])
                     : "d"(a[1]), "d"(b[0]));
#endif
    }
};

// Shared memory keeps the stored layouts: A is [BM][BK + PM] (TA: [BK][BM + PK]),
// B is [BK][BN + PK] (TB: [BN][BK + PM]). With f32 PM = 4 and PK = 8 a warp's
// fragment loads (g, t) hit banks 4 g + t or 8 t + g: all distinct; f64 pads 4
// doubles for the same effect per half-warp.
template <typename T, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool RND,
          bool TA, bool TB>
__device__ __forceinline__ void tc_gemm(int M, int N, int K, T alpha, const T* __restrict__ A,
                                        long long lda, const T* __restrict__ B, long long ldb,
                                        T beta, T* __restrict__ C, long long ldc) {
    typedef Mma<T> O;
    typedef typename O::Frag F;
    constexpr int NTH = WARPS_M * WARPS_N * 32;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int MT = WTM / O::M, NT8 = WTN / O::N;
    constexpr int A_ROWS = TA ? BK : BM, A_COLS = TA ? BM : BK;
    constexpr int B_ROWS = TB ? BN : BK, B_COLS = TB ? BK : BN;
    constexpr int A_SP = A_COLS + (TA ? O::PK : O::PM);
    constexpr int B_SP = B_COLS + (TB ? O::PM : O::PK);
    constexpr int A_ST = A_ROWS * A_SP, B_ST = B_ROWS * B_SP;
    static_assert(MT * O::M == WTM && NT8 * O::N == WTN && BK % O::K == 0, "bad shape");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    if (dynamic_smem_bytes() < (unsigned)(STAGES * (A_ST + B_ST) * sizeof(T))) __trap();
    T* As = reinterpret_cast<T*>(smem_raw);
    T* Bs = As + STAGES * A_ST;

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp / WARPS_N) * WTM, wn0 = (warp % WARPS_N) * WTN;
    int m0, n0;
    block_coords(M, N, BM, BN, m0, n0);
    const bool vecA = aligned16(A) && ((lda * (long long)sizeof(T)) & 15) == 0;
    const bool vecB = aligned16(B) && ((ldb * (long long)sizeof(T)) & 15) == 0;

    // Blocks wholly inside M x N with 16-byte-copyable operands take the
    // interior copy for every whole k tile: each thread's chunk addresses are
    // worked out once here, so a k tile's loads cost a few instructions
    // between the barrier and the first mma, where every warp of the block is
    // at once and the tensor pipe waits (2-6% of an f64 product).
    const bool interior = vecA && vecB && m0 + BM <= M && n0 + BN <= N;
    TileCopy<T, A_ROWS, A_COLS, A_SP, NTH> copy_a;
    TileCopy<T, B_ROWS, B_COLS, B_SP, NTH> copy_b;
    copy_a.init(A, lda, TA ? 0 : m0, TA ? m0 : 0, !TA);
    copy_b.init(B, ldb, TB ? n0 : 0, TB ? 0 : n0, TB);
    auto load_stage = [&](int stage, int kt) {
        const int k0 = kt * BK;
        if (interior && k0 + BK <= K) {
            copy_a.copy(As + stage * A_ST, k0);
            copy_b.copy(Bs + stage * B_ST, k0);
            return;
        }
        load_direct<T, A_ROWS, A_COLS, A_SP, NTH>(As + stage * A_ST, A, lda, TA ? K : M,
                                                  TA ? M : K, TA ? k0 : m0, TA ? m0 : k0, vecA);
        load_direct<T, B_ROWS, B_COLS, B_SP, NTH>(Bs + stage * B_ST, B, ldb, TB ? N : K,
                                                  TB ? K : N, TB ? n0 : k0, TB ? k0 : n0, vecB);
    };

    T acc[MT][NT8][O::CR];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT8; ++j)
#pragma unroll
            for (int r = 0; r < O::CR; ++r) acc[i][j][r] = T(0);

    const int ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, s);
        cp_async_commit();
    }
    int cur = 0, nxt = STAGES - 1;
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + STAGES - 1 < ktiles) load_stage(nxt, kt + STAGES - 1);
        cp_async_commit();
        const T* as = As + cur * A_ST;
        const T* bs = Bs + cur * B_ST;
#pragma unroll
        for (int kk = 0; kk < BK; kk += O::K) {
            F af[MT][O::AR], bf[NT8][O::BR];
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int r = 0; r < O::AR; ++r) {
                    const int m = wm0 + i * O::M + g + 8 * (r & 1);
                    const int k = kk + t + 4 * (r >> 1);
                    af[i][r] = O::template frag<RND>(as[TA ? k * A_SP + m : m * A_SP + k]);
                }
#pragma unroll
            for (int j = 0; j < NT8; ++j)
#pragma unroll
                for (int r = 0; r < O::BR; ++r) {
                    const int k = kk + t + 4 * r;
                    const int n = wn0 + j * O::N + g;
                    bf[j][r] = O::template frag<RND>(bs[TB ? n * B_SP + k : k * B_SP + n]);
                }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT8; ++j) O::mma(acc[i][j], af[i], bf[j]);
        }
        cur = cur + 1 == STAGES ? 0 : cur + 1;
        nxt = nxt + 1 == STAGES ? 0 : nxt + 1;
    }
    cp_async_wait<0>();

    const bool read_c = beta != T(0);
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT8; ++j)
#pragma unroll
            for (int h = 0; h < O::CR / 2; ++h) {
                const int row = m0 + wm0 + i * O::M + g + 8 * h;
                const int col = n0 + wn0 + j * O::N + 2 * t;
                store_pair<T>(C, ldc, M, N, row, col, acc[i][j][2 * h], acc[i][j][2 * h + 1], alpha,
                              beta, read_c);
            }
}

#define TC_ENTRY(NAME, T, BM, BN, BK, WM, WN, ST, MINB, RND, TA, TB)                        \
    extern "C" __global__ void __launch_bounds__(WM * WN * 32, MINB) NAME(                      \
        int M, int N, int K, T alpha, const T* __restrict__ A, long long lda,                   \
        const T* __restrict__ B, long long ldb, T beta, T* __restrict__ C, long long ldc) {     \
        tc_gemm<T, BM, BN, BK, WM, WN, ST, RND, TA, TB>(M, N, K, alpha, A, lda, B, ldb, beta, C, \
                                                       ldc);                                    \
    }

// Tf32: warp tiles 64 x 64 (4 x 8 mma tiles, 128 accumulators a thread), or
// 64 x 32 at two blocks an SM (the "b2" shapes); "r": operands rounded to
// nearest (cvt.rna), else truncated by the tensor core.
TC_ENTRY(gemm_nn_t128x256k16s4_f32, float, 128, 256, 16, 2, 4, 4, 1, true, false, false)
TC_ENTRY(gemm_nt_t128x256k16s4_f32, float, 128, 256, 16, 2, 4, 4, 1, true, false, true)
TC_ENTRY(gemm_tn_t128x256k16s4_f32, float, 128, 256, 16, 2, 4, 4, 1, true, true, false)
TC_ENTRY(gemm_tt_t128x256k16s4_f32, float, 128, 256, 16, 2, 4, 4, 1, true, true, true)
TC_ENTRY(gemm_nn_t128x128k16s4_f32, float, 128, 128, 16, 2, 2, 4, 1, true, false, false)
TC_ENTRY(gemm_nt_t128x128k16s4_f32, float, 128, 128, 16, 2, 2, 4, 1, true, false, true)
TC_ENTRY(gemm_tn_t128x128k16s4_f32, float, 128, 128, 16, 2, 2, 4, 1, true, true, false)
TC_ENTRY(gemm_tt_t128x128k16s4_f32, float, 128, 128, 16, 2, 2, 4, 1, true, true, true)
TC_ENTRY(gemm_nn_t128x256k16s4z_f32, float, 128, 256, 16, 2, 4, 4, 1, false, false, false)
TC_ENTRY(gemm_nn_t256x128k32s3z_f32, float, 256, 128, 32, 4, 2, 3, 1, false, false, false)
TC_ENTRY(gemm_nn_t128x128k16s4b2_f32, float, 128, 128, 16, 2, 4, 4, 2, true, false, false)
TC_ENTRY(gemm_nn_t128x128k16s4b2z_f32, float, 128, 128, 16, 2, 4, 4, 2, false, false, false)
// f64 (DMMA): warp tiles 64 x 32 (4 x 4 mma tiles, 64 accumulators a thread)
// in the 128 x 128 and 128 x 64 blocks, 32 x 32 in 64 x 128; "b2": two blocks
// an SM.
TC_ENTRY(gemm_nn_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, false, false)
TC_ENTRY(gemm_nt_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, false, true)
TC_ENTRY(gemm_tn_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, true, false)
TC_ENTRY(gemm_tt_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, true, true)
TC_ENTRY(gemm_nn_d128x128k32s3_f64, double, 128, 128, 32, 2, 4, 3, 1, true, false, false)
TC_ENTRY(gemm_nn_d64x128k16s4b2_f64, double, 64, 128, 16, 2, 4, 4, 2, true, false, false)
TC_ENTRY(gemm_nt_d64x128k16s4b2_f64, double, 64, 128, 16, 2, 4, 4, 2, true, false, true)
TC_ENTRY(gemm_tn_d64x128k16s4b2_f64, double, 64, 128, 16, 2, 4, 4, 2, true, true, false)
TC_ENTRY(gemm_tt_d64x128k16s4b2_f64, double, 64, 128, 16, 2, 4, 4, 2, true, true, true)
TC_ENTRY(gemm_nn_d128x64k16s3b2_f64, double, 128, 64, 16, 2, 2, 3, 2, true, false, false)
TC_ENTRY(gemm_nt_d128x64k16s3b2_f64, double, 128, 64, 16, 2, 2, 3, 2, true, false, true)
TC_ENTRY(gemm_tn_d128x64k16s3b2_f64, double, 128, 64, 16, 2, 2, 3, 2, true, true, false)
TC_ENTRY(gemm_tt_d128x64k16s3b2_f64, double, 128, 64, 16, 2, 2, 3, 2, true, true, true)

// ---------------------------------------------------------------------------
// ---------------------------------------------------------------------------
// 4. Tf32 on Hopper: warpgroup MMA (`wgmma`) fed by the Tensor Memory
// Accelerator (TMA); PTX for the sm_90a target (`wgt_gemm`, entries
// gemm_wt128x{BN}k32s{STAGES}_f32).
//
// A block of two consumer warpgroups and one producer warp (288 threads)
// computes a 128 x BN tile of C, each warpgroup 64 rows, as one m64n{BN}k8
// wgmma per 8-deep k step whose operands both come from shared memory through
// descriptors: no fragment is loaded into registers (family 2's mma.sync
// spends one LDS per MMA input and caps at ~30% of cuBLAS TF32). The producer
// warp issues one TMA copy per operand and k-tile into a ring of STAGES
// stages; full/empty mbarriers per stage hand tiles between it and the
// consumers, which only wait and issue wgmma: no copy addresses, no proxy
// fence, no block-wide barrier in the k loop (a cp.async version of this
// kernel, all threads copying, reached 0.53-0.65x cuBLAS against 0.76-0.92x
// with TMA on H100 and H200 while this kernel was written).
//
// TF32 wgmma reads both operands k-major: A as stored when op(A) = A (rows
// of A along k), and B as B^T (N x K). The host packs an operand not stored
// so (a transpose, or rows not 16-byte aligned) with `gemm_pack_f32`. The
// tensor maps (cuTensorMapEncodeTiled, one per operand, made by the host)
// have TF32 elements, so the TMA unit rounds each operand to TF32 as it
// copies (to nearest: C is 2.6e-4 from strict SGEMM, as cuBLAS TF32's), and
// zero-fills past the matrix. Boxes are 32 (k) x 128 rows for A and
// 32 x BN for B^T, one 128-byte line a row with the hardware's 128-byte
// swizzle (16-byte chunk c of row r at chunk c ^ (r & 7)), the layout the
// descriptors name; stages start on 1024-byte boundaries (one swizzle period).

// A CUtensorMap passed by value (`__grid_constant__`).
struct __align__(64) TmaMap {
    unsigned long long v[16];
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// d += A B (ACC = 0: d = A B) for one m64n256k8 TF32 wgmma of the
// warpgroup, both operands in shared memory (descriptors da, db), f32
// accumulators in d.
template <int ACC = 1>
__device__ __forceinline__ void wgmma_m64n256k8(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, %130, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "n"(ACC));
}

// As wgmma_m64n256k8, m64n128k8.
template <int ACC = 1>
__device__ __forceinline__ void wgmma_m64n128k8(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, %66, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "n"(ACC));
}

// Shared-memory matrix descriptor of a k-major tile with the 128-byte
// swizzle: start address, stride 1024 bytes between 8-row groups.
__device__ __forceinline__ u64 wg_desc(unsigned saddr) {
    return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(1024 >> 4) << 32) |
           ((u64)1 << 62);
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across the
// asynchronous MMAs (ptxas would otherwise have to serialize them).
template <int R>
__device__ __forceinline__ void wg_fence_regs(float* d) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// 2-D TMA copy of the box at (c0 = k, c1 = row) into shared dst, completing
// on mbarrier bar.
__device__ __forceinline__ void tma_load(unsigned dst, const TmaMap* map, int c0, int c1,
                                         unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(map), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

// The stage ring of the TMA-fed kernels: STAGES stages of `st_bytes` from
// `base` (A's box, `a_bytes`, then B's), then a full and an empty mbarrier a
// stage. Warp 8 produces; the eight warps before it consume.
template <int STAGES>
struct TmaRing {
    unsigned base, bars;
    __device__ __forceinline__ unsigned full(int s) const { return bars + 8 * s; }
    __device__ __forceinline__ unsigned empty(int s) const { return bars + 8 * (STAGES + s); }
    // Block-wide: a full barrier takes the producer's one arrival (and the
    // copies' bytes), an empty one an arrival from each consumer warp.
    __device__ __forceinline__ void init() const {
        if (threadIdx.x == 0) {
            for (int s = 0; s < STAGES; ++s) {
                mbar_init(full(s), 1);
                mbar_init(empty(s), 8);
            }
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
        __syncthreads();
    }
    // The producer (one thread): k-tile kt goes to stage kt % STAGES once the
    // consumers released that stage's previous tile; boxes at (k, row) when
    // K_INNER (k-major operands), else at (row, k).
    // PASSES == 3 (split operands, k-major only): the k range is walked three
    // times, reading A_lo B_hi, A_hi B_lo, then A_hi B_hi, where an operand's
    // lo rows lie `a_lo` / `b_lo` rows below its hi rows in one map.
    template <bool K_INNER, int PASSES = 1>
    __device__ __forceinline__ void produce(int ktiles, int bk, unsigned st_bytes,
                                            unsigned a_bytes, const TmaMap* amap, int a0,
                                            const TmaMap* bmap, int b0, int a_lo = 0,
                                            int b_lo = 0) const {
        static_assert(PASSES == 1 || (PASSES == 3 && K_INNER), "split passes are k-major");
        for (int kt = 0; kt < PASSES * ktiles; ++kt) {
            const int s = kt % STAGES;
            if (kt >= STAGES) mbar_wait(empty(s), ((kt / STAGES) - 1) & 1);
            mbar_expect_tx(full(s), st_bytes);
            const unsigned dst = base + s * st_bytes;
            const int pass = kt / ktiles, k = (kt - pass * ktiles) * bk;
            const int ar = a0 + (PASSES == 3 && pass == 0 ? a_lo : 0);
            const int br = b0 + (PASSES == 3 && pass == 1 ? b_lo : 0);
            tma_load(dst, amap, K_INNER ? k : ar, K_INNER ? ar : k, full(s));
            tma_load(dst + a_bytes, bmap, K_INNER ? k : br, K_INNER ? br : k, full(s));
        }
    }
};

// One k-tile of `wgt_gemm`'s warpgroup (BK = 32): four wgmma steps into d
// from the stage at `st`, committed as one group; FRESH: the first step
// overwrites d instead of adding to it.
template <int BN, bool FRESH = false>
__device__ __forceinline__ void wgt_ktile(float* d, unsigned st, unsigned a_bytes, int wg) {
    constexpr int R = BN / 2;
    wg_fence_regs<R>(d);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        const u64 da = wg_desc(st + wg * 64 * 128 + kk * 32);
        const u64 db = wg_desc(st + a_bytes + kk * 32);
        static_assert(BN == 256 || BN == 128, "no such wgmma shape here");
        constexpr int ACC = FRESH ? 0 : 1;
        if (BN == 256) {
            if (FRESH && kk == 0) {
                wgmma_m64n256k8<ACC>(d, da, db);
            } else {
                wgmma_m64n256k8(d, da, db);
            }
        } else {
            if (FRESH && kk == 0) {
                wgmma_m64n128k8<ACC>(d, da, db);
            } else {
                wgmma_m64n128k8(d, da, db);
            }
        }
    }
    wg_commit();
    wg_fence_regs<R>(d);
}

// One k-tile of the consumers' loop: wait for stage kt % STAGES, queue its
// MMAs into d, and release the previous k-tile's stage once its MMAs are done.
template <int BN, int STAGES, bool FRESH = false>
__device__ __forceinline__ void wgt_step(const TmaRing<STAGES>& ring, unsigned base,
                                         unsigned st_bytes, unsigned a_bytes, int kt, int wg,
                                         int lane, float* d) {
    const int s = kt % STAGES;
    mbar_wait(ring.full(s), (kt / STAGES) & 1);
    wgt_ktile<BN, FRESH>(d, base + s * st_bytes, a_bytes, wg);
    wg_wait<1>();
    if (kt > 0 && lane == 0) mbar_arrive(ring.empty((kt - 1) % STAGES));
}

// The consumers' k loop of the 3xTF32 product over `tiles` k-tiles: the
// tensor cores' f32 sums drop the low bits of their addends (measured: a
// bias growing with k, 1.9e-5 relative at k = 8192 against strict SGEMM's
// 1.6e-6), so the MMAs sum PROMOTE k-tiles at a time into `part` (the first
// MMA of each run overwriting it), which is then added into `acc` with f32
// adds, rounded to nearest. Measured on the H200 at k = 4096, U[-1,1) and
// U[0,1) operands: relative error 2.4e-7 and 2.8e-7 / 3.5e-7 and 6.2e-7 /
// 6.4e-7 and 1.4e-6 at PROMOTE 2 / 4 / 8 (strict SGEMM: 1.15e-6 and
// 8.5e-7), the product 1-2% slower at 4 than at 8, 5-8% at 2. WGX_PROMOTE is
// the one used: the least frequent fold within strict SGEMM's error on both.
constexpr int WGX_PROMOTE = 4;
template <int BN, int STAGES, int PROMOTE>
__device__ __forceinline__ void wgx_consume(const TmaRing<STAGES>& ring, unsigned base,
                                            unsigned st_bytes, unsigned a_bytes, int tiles,
                                            float* acc) {
    constexpr int R = BN / 2;
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31;
    float part[R];
#pragma unroll
    for (int i = 0; i < R; ++i) part[i] = 0.0f;
    for (int k0 = 0; k0 < tiles; k0 += PROMOTE) {
        wgt_step<BN, STAGES, true>(ring, base, st_bytes, a_bytes, k0, wg, lane, part);
        if (k0 + PROMOTE <= tiles) {
#pragma unroll
            for (int j = 1; j < PROMOTE; ++j)
                wgt_step<BN, STAGES>(ring, base, st_bytes, a_bytes, k0 + j, wg, lane, part);
        } else {
            for (int kt = k0 + 1; kt < tiles; ++kt)
                wgt_step<BN, STAGES>(ring, base, st_bytes, a_bytes, kt, wg, lane, part);
        }
        wg_wait<0>();
        wg_fence_regs<R>(part);
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i] += part[i];
    }
}

// PASSES == 3 is the 3xTF32 product (`gemm_wx...` entries): each operand
// arrives split by `gemm_split_f32` into TF32 hi and lo parts (x = hi + lo,
// lo exact in f32, then rounded to TF32 by the map), stacked in one map, and
// C = A_lo B_hi + A_hi B_lo + A_hi B_hi, the small terms summed first: about
// 22 bits of each operand instead of 11, at three tensor-core passes, the
// MMAs' sums folded into f32 ones every WGX_PROMOTE k-tiles (`wgx_consume`).
template <int BN, int STAGES, int PASSES = 1>
__device__ __forceinline__ void wgt_gemm(int M, int N, int K, float alpha, const TmaMap* amap,
                                         const TmaMap* bmap, float beta, float* __restrict__ C,
                                         long long ldc, int a_lo = 0, int b_lo = 0) {
    constexpr int BM = 128, BK = 32, R = BN / 2;
    constexpr unsigned A_BYTES = BM * 128, ST_BYTES = A_BYTES + BN * 128;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    if (dynamic_smem_bytes() < STAGES * ST_BYTES + 1024 + 16 * STAGES) __trap();
    unsigned base = smem_addr(smem_raw);
    base = (base + 1023) & ~1023u;
    const TmaRing<STAGES> ring{base, base + STAGES * ST_BYTES};

    int m0, n0;
    block_coords(M, N, BM, BN, m0, n0);
    const int ktiles = (K + BK - 1) / BK;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    ring.init();
    if (warp == 8) {
        if (lane == 0)
            ring.template produce<true, PASSES>(ktiles, BK, ST_BYTES, A_BYTES, amap, m0, bmap, n0,
                                                a_lo, b_lo);
        return;
    }

    const int wg = threadIdx.x >> 7;
    float d[R];
#pragma unroll
    for (int i = 0; i < R; ++i) d[i] = 0.0f;
    if constexpr (PASSES == 3) {
        wgx_consume<BN, STAGES, WGX_PROMOTE>(ring, base, ST_BYTES, A_BYTES, PASSES * ktiles, d);
    } else {
        for (int kt = 0; kt < ktiles; ++kt)
            wgt_step<BN, STAGES>(ring, base, ST_BYTES, A_BYTES, kt, wg, lane, d);
        wg_wait<0>();
        wg_fence_regs<R>(d);
    }

    const int w4 = warp & 3;
    const int g = lane >> 2, t = lane & 3;
    const bool read_c = beta != 0.0f;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wg * 64 + w4 * 16 + g + 8 * h;
            const int col = n0 + 8 * j + 2 * t;
            store_pair<float>(C, ldc, M, N, row, col, d[4 * j + 2 * h], d[4 * j + 2 * h + 1],
                              alpha, beta, read_c);
        }
}
#define WGT_BODY(BN, ST) wgt_gemm<BN, ST>(M, N, K, alpha, &amap, &bmap, beta, C, ldc);
#define WGX_BODY(BN, ST) \
    wgt_gemm<BN, ST, 3>(M, N, K, alpha, &amap, &bmap, beta, C, ldc, a_lo, b_lo);

// Strict f32 SIMT product fed by TMA (`st_gemm`, entries
// gemm_st{BM}x{BN}k{BK}s{STAGES}_f32): family 1's FFMA loop and layout
// (As[k][m], Bs[k][n], this time unpadded) with its copies moved to a
// producer warp, as `wgt_gemm` does, so the eight compute warps issue only
// LDS.128 and FFMA. TMA keeps a box's layout, so A arrives as A^T (K x M) and
// B as B (K x N): the host packs A^T for op(A) = A and B for op(B) = B^T.
template <int BM, int BN, int BK, int WARPS_M, int STAGES>
__device__ __forceinline__ void st_gemm(int M, int N, int K, float alpha, const TmaMap* amap,
                                        const TmaMap* bmap, float beta, float* __restrict__ C,
                                        long long ldc) {
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    constexpr int TM = WTM / 8, TN = WTN / 4;  // 8 x 4 threads per warp
    constexpr unsigned A_BYTES = BM * BK * 4, ST_BYTES = (BM + BN) * BK * 4;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    if (dynamic_smem_bytes() < STAGES * (ST_BYTES + 16) + 128) __trap();
    const unsigned raw = smem_addr(smem_raw);
    const unsigned base = (raw + 127) & ~127u;
    const float* fbase = reinterpret_cast<const float*>(smem_raw + (base - raw));
    const TmaRing<STAGES> ring{base, base + STAGES * ST_BYTES};

    int m0, n0;
    block_coords(M, N, BM, BN, m0, n0);
    const int ktiles = (K + BK - 1) / BK;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    ring.init();
    if (warp == 8) {
        if (lane == 0) ring.template produce<false>(ktiles, BK, ST_BYTES, A_BYTES, amap, m0, bmap, n0);
        return;
    }
    const int wm0 = (warp / WARPS_N) * WTM, wn0 = (warp % WARPS_N) * WTN;
    const int tm = lane >> 2, tn = lane & 3;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(ring.full(s), (kt / STAGES) & 1);
        const float* st = fbase + s * (ST_BYTES / 4);
        sgemm_ktile<TM, TN, BK, BM, BN>(st + wm0 + tm * 4, st + A_BYTES / 4 + wn0 + tn * 4, acc);
        __syncwarp();
        if (lane == 0) mbar_arrive(ring.empty(s));
    }
    sgemm_store<TM, TN>(M, N, alpha, beta, C, ldc, m0 + wm0, n0 + wn0, tm, tn, acc);
}
#define ST_BODY(BM, BN, BK, WM, ST) \
    st_gemm<BM, BN, BK, WM, ST>(M, N, K, alpha, &amap, &bmap, beta, C, ldc);
#else
// Built for a target without wgmma and TMA: the host never launches these there.
#define WGT_BODY(BN, ST) __trap();
#define WGX_BODY(BN, ST) __trap();
#define ST_BODY(BM, BN, BK, WM, ST) __trap();
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

#define WGT_ENTRY(NAME, BN, ST)                                                            \
    extern "C" __global__ void __launch_bounds__(288, 1)                                   \
        NAME(int M, int N, int K, float alpha, const __grid_constant__ TmaMap amap,        \
             const __grid_constant__ TmaMap bmap, float beta, float* __restrict__ C,       \
             long long ldc) {                                                              \
        WGT_BODY(BN, ST)                                                                   \
    }

WGT_ENTRY(gemm_wt128x256k32s4_f32, 256, 4)
WGT_ENTRY(gemm_wt128x128k32s6_f32, 128, 6)

// Entry gemm_wx128x128k32s6_f32 (3xTF32): as gemm_wt..., each map holding its
// operand's hi rows and, `a_lo` / `b_lo` rows below, its lo rows. There is no
// 128 x 256 one: its 128 accumulators a thread and as many partial sums do
// not fit the registers (ptxas spilled and serialized the wgmma).
#define WGX_ENTRY(NAME, BN, ST)                                                            \
    extern "C" __global__ void __launch_bounds__(288, 1)                                   \
        NAME(int M, int N, int K, float alpha, const __grid_constant__ TmaMap amap,        \
             const __grid_constant__ TmaMap bmap, int a_lo, int b_lo, float beta,          \
             float* __restrict__ C, long long ldc) {                                       \
        WGX_BODY(BN, ST)                                                                   \
    }

WGX_ENTRY(gemm_wx128x128k32s6_f32, 128, 6)

// Entries gemm_st{BM}x{BN}k{BK}s{STAGES}_f32: eight compute warps and one
// producer warp; tensor maps of A^T (K x M) and B (K x N).
#define ST_ENTRY(NAME, BM, BN, BK, WM, ST, MINB)                                           \
    extern "C" __global__ void __launch_bounds__(288, MINB)                                \
        NAME(int M, int N, int K, float alpha, const __grid_constant__ TmaMap amap,        \
             const __grid_constant__ TmaMap bmap, float beta, float* __restrict__ C,       \
             long long ldc) {                                                              \
        ST_BODY(BM, BN, BK, WM, ST)                                                        \
    }

ST_ENTRY(gemm_st128x128k16s6_f32, 128, 128, 16, 2, 6, 1)
ST_ENTRY(gemm_st128x256k16s4_f32, 128, 256, 16, 2, 4, 1)
ST_ENTRY(gemm_st128x128k16s4b2_f32, 128, 128, 16, 2, 4, 2)


// x = hi + lo for the 3xTF32 product: hi is x rounded to nearest TF32 (10
// mantissa bits; rounded toward zero where nearest would overflow to inf), lo
// the exact f32 remainder, which the TF32 tensor map then rounds to its own
// 11 significant bits.
__device__ __forceinline__ void split_tf32(float x, float& hi, float& lo) {
    unsigned h;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(h) : "f"(x));
    hi = __uint_as_float(h);
    if (isinf(hi) && !isinf(x)) hi = __uint_as_float(__float_as_uint(x) & 0xFFFFE000u);
    lo = x - hi;
}

// P (R x ldp, row r along k) <- op(X), zero past K: trans == 0: X stored
// R x K (ld ldx); trans != 0: X stored K x R. Blocks of 32 x 8 threads move
// 32 x 32 tiles, transposed through shared memory. The bits are copied as
// stored: the TF32 tensor maps round them as they do operands read in place,
// so a packed and an in-place operand give the same product. SPLIT (3xTF32):
// P holds 2 * rp rows (rp >= R): hi parts in rows [0, R), lo parts in rows
// [rp, rp + R), zeros in the rows between.
template <typename T, bool SPLIT>
__device__ __forceinline__ void pack_kmajor(int R, int K, int ldp, const T* __restrict__ X,
                                            long long ldx, int trans, int rp,
                                            T* __restrict__ P) {
    __shared__ T tile[32][33];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const int k0 = blockIdx.x * 32;
    const int rows = SPLIT ? rp : R;  // rows written
    auto put = [&](int r, int k, T v) {
        if (SPLIT) {
            float hi, lo;
            split_tf32(v, hi, lo);
            P[(long long)r * ldp + k] = hi;
            P[(long long)(rp + r) * ldp + k] = lo;
        } else {
            P[(long long)r * ldp + k] = v;
        }
    };
    for (int r0 = blockIdx.y * 32; r0 < rows; r0 += gridDim.y * 32) {
        if (trans) {
#pragma unroll
            for (int i = ty; i < 32; i += 8) {
                const int k = k0 + i, r = r0 + tx;
                tile[i][tx] = (k < K && r < R) ? X[(long long)k * ldx + r] : T(0);
            }
            __syncthreads();
#pragma unroll
            for (int i = ty; i < 32; i += 8) {
                const int r = r0 + i, k = k0 + tx;
                if (r < rows && k < ldp) put(r, k, tile[tx][i]);
            }
            __syncthreads();
        } else {
#pragma unroll
            for (int i = ty; i < 32; i += 8) {
                const int r = r0 + i, k = k0 + tx;
                if (r < rows && k < ldp) put(r, k, (k < K && r < R) ? X[(long long)r * ldx + k] : T(0));
            }
        }
    }
}

// Entries gemm_pack_f32 (as stored) and gemm_split_f32 (hi and lo parts);
// the packed operand's R rows take rp = R.
#define PACK_ENTRY(NAME, T, SPLIT)                                                            \
    extern "C" __global__ void __launch_bounds__(256)                                         \
        NAME(int R, int K, int ldp, const T* __restrict__ X, long long ldx, int trans, int rp, \
             T* __restrict__ P) {                                                             \
        pack_kmajor<T, SPLIT>(R, K, ldp, X, ldx, trans, rp, P);                               \
    }

PACK_ENTRY(gemm_pack_f32, float, false)
PACK_ENTRY(gemm_split_f32, float, true)

// C <- beta C over the M x N view: the whole call when alpha == 0 or K == 0
// (A and B take no part, so an overflowing A B cannot leave 0 * inf = NaN in
// C). beta == 0 writes zeros without reading C, so a NaN there is
// overwritten (BLAS's rule). Grid-stride over the view's elements.
template <typename T>
__device__ __forceinline__ void scale_c(int M, int N, T beta, T* __restrict__ C, long long ldc) {
    const long long total = (long long)M * N;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        T* p = C + (i / N) * ldc + i % N;
        *p = beta == T(0) ? T(0) : beta * *p;
    }
}

#define SCALE_ENTRY(NAME, T)                                                                  \
    extern "C" __global__ void __launch_bounds__(256)                                         \
        NAME(int M, int N, T beta, T* __restrict__ C, long long ldc) {                        \
        scale_c<T>(M, N, beta, C, ldc);                                                       \
    }

SCALE_ENTRY(gemm_scale_f32, float)
SCALE_ENTRY(gemm_scale_f64, double)
