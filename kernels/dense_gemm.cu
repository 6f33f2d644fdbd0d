// DenseGemm for the CUDA backend: C <- alpha op(A) op(B) + beta C, row-major,
// with leading dimensions. Compiled at run time by NVRTC (no headers needed).
//
// Three families of kernels, all exact on edge tiles, odd leading dimensions
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
//    (mma.sync m8n8k4 DMMA: IEEE f64 multiply-adds, strict). Entries
//    gemm_{ops}_t{BM}x{BN}k{BK}s{STAGES}_f32 and gemm_{ops}_d..._f64. Same
//    cp.async ring; shared memory keeps each operand's stored layout (16-byte
//    copies in every transpose case), padded so that the fragment loads of a
//    warp hit distinct banks.
// 3. The register-staged SIMT f32 kernel (gemm_{ops}_64x64_f32, for small
//    products) and the plain f64 kernel (gemm_{ops}_f64, likewise).
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
        const float* as = As + cur * A_ST + wm0 + tm * 4;
        const float* bs = Bs + cur * B_ST + wn0 + tn * 4;
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
        cur = cur + 1 == STAGES ? 0 : cur + 1;
        nxt = nxt + 1 == STAGES ? 0 : nxt + 1;
    }
    cp_async_wait<0>();

    const bool read_c = beta != 0.f;
    const bool vecC = aligned16(C) && (ldc & 3) == 0;
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

// m8n8k4 f64 (DMMA): IEEE double multiply-adds.
template <>
struct Mma<double> {
    static constexpr int M = 8, N = 8, K = 4, AR = 1, BR = 1, CR = 2;
    static constexpr int PM = 4, PK = 4;
    typedef double Frag;
    template <bool RND>
    __device__ __forceinline__ static Frag frag(double x) { return x; }
    __device__ __forceinline__ static void mma(double* c, const Frag* a, const Frag* b) {
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                     : "+d"(c[0]), "+d"(c[1])
                     : "d"(a[0]), "d"(b[0]));
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

    auto load_stage = [&](int stage, int kt) {
        const int k0 = kt * BK;
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
// f64 (DMMA): warp tiles 64 x 32 (8 x 4 mma tiles, 64 accumulators a thread),
// or 32 x 32 at two blocks an SM ("b2").
TC_ENTRY(gemm_nn_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, false, false)
TC_ENTRY(gemm_nt_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, false, true)
TC_ENTRY(gemm_tn_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, true, false)
TC_ENTRY(gemm_tt_d128x128k16s3_f64, double, 128, 128, 16, 2, 4, 3, 1, true, true, true)
TC_ENTRY(gemm_nn_d128x128k32s3_f64, double, 128, 128, 32, 2, 4, 3, 1, true, false, false)
TC_ENTRY(gemm_nn_d64x128k16s4b2_f64, double, 64, 128, 16, 2, 4, 4, 2, true, false, false)
