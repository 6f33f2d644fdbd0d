// SparseGemm for the CUDA backend: C = A * B for CSR A (m x k) and B (k x n),
// row offsets u64, column indices u32. Compiled at run time by NVRTC (no
// headers needed).
//
// Two-phase Gustavson, rows binned by work:
//  1. spg_analyze: per row of C, W = the number of products A(i,p) B(p,j)
//     (saturated to u32) and, where W > 128, the column span [lo, hi] of the
//     row (min of the first and max of the last column of the B rows it
//     touches). Each row gets a symbolic bin; the bins are counted.
//  2. spg_scatter: row ids grouped by bin (order inside a bin is irrelevant:
//     rows are computed independently).
//  3. Symbolic pass, per bin: the exact number of distinct columns of each row
//     (an entry exists iff some product exists: explicit zeros and
//     cancellation are kept).
//  4. spg_scan_*: exclusive scan of the row counts into u64 offsets; the host
//     reads the total, allocates C exactly, and the rows are re-binned by
//     their exact nnz (spg_bin_numeric).
//  5. Numeric pass, per bin: values accumulated and each row written with its
//     columns sorted.
//
// Bins (q = an upper bound of the row's nnz in the symbolic pass, min(W,
// span); its exact nnz in the numeric pass):
//   0: W = 0, nothing to do.
//   10:  A's row has <= 8 entries and W <= 32: one thread per row merges the
//        (sorted) B rows in registers, summing equal heads in A's order.
//   1-3: W <= 32, 64, 128: one warp per row gathers all products (t = their
//        index in A-then-B order) and sorts the keys (col, t) with a bitonic
//        network in registers (E = 1, 2, 4 keys per lane).
//   4-7: q <= 256, 512, 1024, 2048 (numeric pass: up to 1024): one warp per
//        row with a hash table in shared memory of 2 * 256 << (bin - 4) slots
//        (load <= 1/2); the numeric pass compacts it and bitonic-sorts it.
//   8:   span <= 64 q: a dense accumulator over a window of columns: a
//        bitmap in shared memory and, numeric, values in global memory
//        (windows sized so that the resident blocks' windows stay in L2); the
//        bitmap scan emits the columns in order. The work items are (row,
//        part) pairs drawn by whole blocks from a queue, a part being a range
//        of columns done window by window. A bin with rows enough to fill
//        the device has one part per row; a bin of few rows has a part per
//        window, so a wide row is spread over as many blocks (one block per
//        row had 16 rows of 100K entries take 98 ms). The symbolic pass adds
//        the parts' counts into the row's; with several parts the numeric
//        pass first counts every part (spg_sym_dense again, per item), and an
//        item writes its columns after those of the row's earlier parts.
//   9:   otherwise: one block per row with a hash table of next_pow2(2 q)
//        slots in shared memory (each row its own size), then a block-wide
//        compaction and bitonic sort. Rows are launched in size classes:
//        small tables at several blocks an SM, larger ones at one; a row
//        whose table no block's shared memory holds is done in column parts
//        sized from a histogram of its products, each part's table fitting.
// Nothing is capped: every table is sized from the row's own bound, and the
// windows of bin 8 loop over any span.
//
// Determinism. Every value is the fused multiply-add chain in p order:
//     acc = 0; for each p of A's row i in order with B(p,j) stored:
//         acc = fma(A(i,p), B(p,j), acc)
// computed the same way by every bin, so the result does not depend on the
// bins, the device or the scheduling. How each bin keeps that order:
//  - Products are walked in chunks of 32 in t order (t = position in the
//    concatenation of B's rows p of A's row i, p in order), one warp per
//    chunk, chunks one after another with __syncwarp in between.
//  - Inside a chunk, a column appears at most once per B row, so lanes that
//    share a column hold products of different p; __match_any_sync groups
//    them and the lowest lane (the smallest t, the earliest p) applies the
//    group's products in lane order. No float atomics anywhere.
//  - A row that a whole block computes in the numeric pass (bins 8, 9) splits
//    its columns into one contiguous range per warp (each B row is cut at the
//    range bounds by binary search: B's columns are sorted), so each column is
//    owned by one warp and its chain stays in order. Bin 8 splits a window
//    evenly; bin 9 places the bounds from a histogram of the row's products. (The symbolic pass only
//    sets bits and keys, so there the warps split A's row instead.)
//  - Bins 1-3 sort the keys (col, t), so equal columns are adjacent in t order
//    and the first of them walks the run sequentially.
//  - Bin 10 is sequential per row: equal heads are summed in list (= p) order.
// Integer atomics only place keys (hash slots, bitmap bits) and count; where
// they race, the winner changes a slot position, never a value or the output
// (which is sorted by column).
//
// Errors the host must see (a table that overflows, a row whose numeric nnz
// differs from its symbolic count: both would be bugs) set bits of a flag
// word the host reads after each phase; loops are bounded, so a bug can't hang.

typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL 0xffffffffu
#define EMPTY 0xffffffffu
#define NBINS 11
#define BIN_DENSE 8
#define BIN_BLOCK 9
#define BIN_MERGE 10
#define MERGE_MAX_A 8     // bin 10: rows of A with at most 8 entries...
#define MERGE_MAX_W 32    // ...and at most 32 products
#define ANALYZE_BLOCK_MIN 4096  // spg_analyze: rows of A walked by the whole block
#define ANALYZE_THREADS 256     // spg_analyze's block (the host's one-row-a-thread launches)

// Layout of the meta buffer (u64 words) shared with sparse_gemm.rs.
#define M_SYM_COUNT 0     // [NBINS] rows per symbolic bin
#define M_NUM_COUNT 16    // [NBINS] rows per numeric bin
#define M_SYM_CURSOR 32   // [NBINS] scatter cursors
#define M_NUM_CURSOR 48   // [NBINS]
#define M_SYM_BLOCK_Q 64  // max q of symbolic bin 9
#define M_SYM_SPAN 65     // max span of symbolic bin 8
#define M_NUM_BLOCK_Q 66  // max nnz of numeric bin 9
#define M_NUM_SPAN 67     // max span of numeric bin 8
#define M_TOTAL 68        // nnz of C
#define M_FLAGS 69        // error bits
#define M_SYM_QUEUE 70    // next (row, part) of symbolic bin 8 (dynamic scheduling)
#define M_NUM_QUEUE 71    // next (row, part) of numeric bin 8
#define M_WIN_QUEUE 72    // next (row, part) of numeric bin 8's part counts
#define M_BLOCK_QUEUE 73  // [6] next row of bin 9's launches, symbolic then numeric
#define META_WORDS 80

#define FLAG_TABLE_FULL 1ull
#define FLAG_NNZ_MISMATCH 2ull

__device__ __forceinline__ u64 umin64(u64 a, u64 b) { return a < b ? a : b; }
__device__ __forceinline__ u64 umax64(u64 a, u64 b) { return a > b ? a : b; }

__device__ __forceinline__ float madd(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double madd(double a, double b, double c) { return __fma_rn(a, b, c); }

__device__ __forceinline__ void raise_flag(u64* meta, u64 bit) { atomicOr(&meta[M_FLAGS], bit); }

// ------------------------------------------------------------------ binning

// Bin of a row from its products W, its nnz bound (or exact nnz) q, its
// column span (valid where W > 128) and the length of A's row. Phase 0
// (symbolic) hashes q up to 2048 in a warp (keys only); phase 1 (numeric,
// keys and values, and a warp sorts them) only up to 1024: longer rows go to
// the block kernels.
__device__ __forceinline__ u32 bin_of(u64 w, u64 q, u64 span, u64 alen, u32 phase) {
    if (w == 0) return 0;
    if (alen <= MERGE_MAX_A && w <= MERGE_MAX_W) return BIN_MERGE;
    if (w <= 32) return 1;
    if (w <= 64) return 2;
    if (w <= 128) return 3;
    if (q <= 256) return 4;
    if (q <= 512) return 5;
    if (q <= 1024) return 6;
    if (q <= 2048 && phase == 0) return 7;
    if (span <= 64ull * q) return BIN_DENSE;
    return BIN_BLOCK;
}

// Adds one to counts[b] for every lane (warp-aggregated: one shared atomic
// per distinct bin in the warp instead of one per lane); returns the lane's
// position among the rows of its bin counted by this block so far.
__device__ __forceinline__ u32 count_bin(u32* counts, u32 b) {
    const int lane = threadIdx.x & 31;
    const u32 peers = __match_any_sync(FULL, b);
    const int leader = __ffs(peers) - 1;
    u32 base = 0;
    if (lane == leader) base = atomicAdd(&counts[b], (u32)__popc(peers));
    base = __shfl_sync(FULL, base, leader);
    return base + __popc(peers & ((1u << lane) - 1u));
}

// Adds to w, l and h the products, the smallest first column and the largest
// last column of the B rows p = a_col[k] for k = k0, k0 + step, ... below k1
// (one lane's or thread's share of a row of A).
__device__ __forceinline__ void span_share(const u32* __restrict__ a_col,
                                           const u64* __restrict__ b_off,
                                           const u32* __restrict__ b_col, u64 k0, u64 k1,
                                           u64 step, u64* w, u32* l, u32* h) {
#pragma unroll 4
    for (u64 k = k0; k < k1; k += step) {
        const u32 p = a_col[k];
        const u64 bs = b_off[p], be = b_off[p + 1];
        *w += be - bs;
        if (bs < be) {
            *l = min(*l, b_col[bs]);
            *h = max(*h, b_col[be - 1]);
        }
    }
}

// The warp's sum of w, min of l and max of h, on every lane.
__device__ __forceinline__ void warp_span(u64* w, u32* l, u32* h) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        *w += __shfl_xor_sync(FULL, *w, o);
        *l = min(*l, __shfl_xor_sync(FULL, *l, o));
        *h = max(*h, __shfl_xor_sync(FULL, *h, o));
    }
}

// One thread per row of C.
extern "C" __global__ void __launch_bounds__(ANALYZE_THREADS) spg_analyze(
    const u64* __restrict__ a_off, const u32* __restrict__ a_col, const u64* __restrict__ b_off,
    const u32* __restrict__ b_col, u32 m, u32* __restrict__ work, u32* __restrict__ lo,
    u32* __restrict__ hi, u64* __restrict__ meta) {
    __shared__ u32 counts[NBINS + 1];
    __shared__ u64 qmax, smax;
    if (threadIdx.x <= NBINS) counts[threadIdx.x] = 0;
    if (threadIdx.x == 0) { qmax = 0; smax = 0; }
    __syncthreads();
    const u32 lane = threadIdx.x & 31;
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u64 s = 0, e = 0;
    if (i < m) {
        s = a_off[i];
        e = a_off[i + 1];
    }
    // Rows of A longer than 32 entries are walked by the whole warp (one
    // thread would hold up its warp for the length of a hub row), longer
    // than ANALYZE_BLOCK_MIN by the whole block (a warp took 2.7 ms over a
    // row of 100K); the others by their own thread. All compute W and the
    // span (when W > 128).
    const bool is_huge = e - s > ANALYZE_BLOCK_MIN;
    const bool is_long = e - s > 32 && !is_huge;
    u64 w = 0;
    u32 l = EMPTY, h = 0;
    if (!is_long && !is_huge) {
        for (u64 k = s; k < e; ++k) {
            const u32 p = a_col[k];
            w += b_off[p + 1] - b_off[p];
        }
        if (w > 128) {
            for (u64 k = s; k < e; ++k) {
                const u32 p = a_col[k];
                const u64 bs = b_off[p], be = b_off[p + 1];
                if (bs < be) {
                    l = min(l, b_col[bs]);
                    h = max(h, b_col[be - 1]);
                }
            }
        }
    }
    for (u32 longs = __ballot_sync(FULL, is_long); longs; longs &= longs - 1) {
        const int src = __ffs(longs) - 1;
        const u64 rs = __shfl_sync(FULL, s, src), re = __shfl_sync(FULL, e, src);
        u64 ww = 0;
        u32 ll = EMPTY, hh = 0;
        span_share(a_col, b_off, b_col, rs + lane, re, 32, &ww, &ll, &hh);
        warp_span(&ww, &ll, &hh);
        if ((int)lane == src) {
            w = ww;
            l = ll;
            h = hh;
        }
    }
    // Huge rows, one after another, each by every thread of the block.
    __shared__ u32 huge[ANALYZE_THREADS];
    __shared__ u32 n_huge, h_lo, h_hi;
    __shared__ unsigned long long h_w;
    if (threadIdx.x == 0) n_huge = 0;
    __syncthreads();
    if (is_huge) huge[atomicAdd(&n_huge, 1u)] = threadIdx.x;
    __syncthreads();
    for (u32 j = 0; j < n_huge; ++j) {
        const u32 owner = huge[j];
        const u32 row = blockIdx.x * blockDim.x + owner;
        if (threadIdx.x == 0) { h_w = 0; h_lo = EMPTY; h_hi = 0; }
        __syncthreads();
        u64 ww = 0;
        u32 ll = EMPTY, hh = 0;
        span_share(a_col, b_off, b_col, a_off[row] + threadIdx.x, a_off[row + 1], blockDim.x, &ww,
                   &ll, &hh);
        warp_span(&ww, &ll, &hh);
        if (lane == 0) {
            atomicAdd(&h_w, (unsigned long long)ww);
            atomicMin(&h_lo, ll);
            atomicMax(&h_hi, hh);
        }
        __syncthreads();
        if (threadIdx.x == owner) {
            w = h_w;
            l = h_lo;
            h = h_hi;
        }
        __syncthreads();
    }
    u32 b = NBINS;  // lanes past the last row count in no bin
    if (i < m) {
        u64 span = 0, q = w;
        if (w > 128) {
            lo[i] = l;
            hi[i] = h;
            span = (u64)h - (u64)l + 1;
            q = umin64(w, span);
        }
        work[i] = (u32)umin64(w, 0xffffffffull);
        b = bin_of(w, q, span, e - s, 0);
        if (b == BIN_BLOCK) atomicMax(&qmax, q);
        if (b == BIN_DENSE) atomicMax(&smax, span);
    }
    count_bin(counts, b);
    __syncthreads();
    if (threadIdx.x < NBINS && counts[threadIdx.x])
        atomicAdd(&meta[M_SYM_COUNT + threadIdx.x], (u64)counts[threadIdx.x]);
    if (threadIdx.x == 0) {
        if (qmax) atomicMax(&meta[M_SYM_BLOCK_Q], qmax);
        if (smax) atomicMax(&meta[M_SYM_SPAN], smax);
    }
}

__device__ __forceinline__ u32 row_bin(u32 phase, u32 i, const u64* a_off, const u32* work,
                                       const u32* lo, const u32* hi, const u32* nnz, u64* span_out,
                                       u64* q_out) {
    const u64 w = work[i];
    u64 span = 0, q = w;
    if (w > 128) {
        span = (u64)hi[i] - (u64)lo[i] + 1;
        q = phase == 0 ? umin64(w, span) : (u64)nnz[i];
    }
    *span_out = span;
    *q_out = q;
    return bin_of(w, q, span, a_off[i + 1] - a_off[i], phase);
}

// Numeric bins from the exact row nnz: counts and the sizing maxima.
extern "C" __global__ void spg_bin_numeric(const u64* __restrict__ a_off,
                                           const u32* __restrict__ work, const u32* __restrict__ lo,
                                           const u32* __restrict__ hi, const u32* __restrict__ nnz,
                                           u32 m, u64* __restrict__ meta) {
    __shared__ u32 counts[NBINS + 1];
    __shared__ u64 qmax, smax;
    if (threadIdx.x <= NBINS) counts[threadIdx.x] = 0;
    if (threadIdx.x == 0) { qmax = 0; smax = 0; }
    __syncthreads();
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 b = NBINS;
    if (i < m) {
        u64 span, q;
        b = row_bin(1, i, a_off, work, lo, hi, nnz, &span, &q);
        if (b == BIN_BLOCK) atomicMax(&qmax, q);
        if (b == BIN_DENSE) atomicMax(&smax, span);
    }
    count_bin(counts, b);
    __syncthreads();
    if (threadIdx.x < NBINS && counts[threadIdx.x])
        atomicAdd(&meta[M_NUM_COUNT + threadIdx.x], (u64)counts[threadIdx.x]);
    if (threadIdx.x == 0) {
        if (qmax) atomicMax(&meta[M_NUM_BLOCK_Q], qmax);
        if (smax) atomicMax(&meta[M_NUM_SPAN], smax);
    }
}

// Row ids grouped by bin (phase 0: symbolic, 1: numeric). Bin b's rows go to
// [start_b, start_b + count_b) with start_b the sum of the counts of bins
// 1..b-1; bin 0 rows are left out. Positions inside a bin come from atomics
// and vary from run to run, which changes only the order rows are computed in.
extern "C" __global__ void spg_scatter(const u64* __restrict__ a_off, const u32* __restrict__ work,
                                       const u32* __restrict__ lo, const u32* __restrict__ hi,
                                       const u32* __restrict__ nnz, u32 m, u32 phase,
                                       u64* __restrict__ meta, u32* __restrict__ rows) {
    __shared__ u32 counts[NBINS + 1];
    __shared__ u64 base[NBINS];
    if (threadIdx.x <= NBINS) counts[threadIdx.x] = 0;
    __syncthreads();
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 b = 0;
    if (i < m) {
        u64 span, q;
        b = row_bin(phase, i, a_off, work, lo, hi, nnz, &span, &q);
    }
    const u32 local = count_bin(counts, b);
    __syncthreads();
    const u32 cnt_at = phase == 0 ? M_SYM_COUNT : M_NUM_COUNT;
    const u32 cur_at = phase == 0 ? M_SYM_CURSOR : M_NUM_CURSOR;
    if (threadIdx.x > 0 && threadIdx.x < NBINS && counts[threadIdx.x]) {
        u64 start = 0;
        for (u32 c = 1; c < threadIdx.x; ++c) start += meta[cnt_at + c];
        const u64 mine = counts[threadIdx.x];
        base[threadIdx.x] = start + atomicAdd(&meta[cur_at + threadIdx.x], mine);
    }
    __syncthreads();
    if (i < m && b != 0) rows[base[b] + local] = i;
}

// --------------------------------------------------------------------- scans

#define SCAN_T 256
#define SCAN_PER 8
#define SCAN_BLOCK (SCAN_T * SCAN_PER)

// Inclusive sum of v over the warp's lanes up to this one (all 32 call).
template <typename U>
__device__ __forceinline__ U warp_incl_scan(U v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const U y = __shfl_up_sync(FULL, v, o);
        if (lane >= o) v += y;
    }
    return v;
}

template <typename U>
__device__ __forceinline__ U block_excl_scan(U v, U* total) {
    __shared__ U warp_sums[32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const U x = warp_incl_scan<U>(v);
    if (lane == 31) warp_sums[w] = x;
    __syncthreads();
    if (w == 0) {
        const int nw = blockDim.x >> 5;
        const U s = warp_incl_scan<U>(lane < nw ? warp_sums[lane] : (U)0);
        if (lane < nw) warp_sums[lane] = s;  // inclusive
    }
    __syncthreads();
    const U before = (w > 0 ? warp_sums[w - 1] : (U)0) + x - v;
    *total = warp_sums[(blockDim.x >> 5) - 1];
    __syncthreads();
    return before;
}

// Exclusive scan of the row counts (u32) into u64 offsets, SCAN_BLOCK per block.
extern "C" __global__ void spg_scan_local(const u32* __restrict__ in, u32 n, u64* __restrict__ out,
                                          u64* __restrict__ block_sums) {
    const u64 base = (u64)blockIdx.x * SCAN_BLOCK + threadIdx.x * SCAN_PER;
    u32 v[SCAN_PER];
    u64 s = 0;
#pragma unroll
    for (int q = 0; q < SCAN_PER; ++q) {
        v[q] = base + q < n ? in[base + q] : 0;
        s += v[q];
    }
    u64 total;
    u64 run = block_excl_scan<u64>(s, &total);
#pragma unroll
    for (int q = 0; q < SCAN_PER; ++q) {
        if (base + q < n) out[base + q] = run;
        run += v[q];
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

// One block of 1024: scans the block sums in place, writes out[n] = total and
// the total to the meta buffer.
extern "C" __global__ void spg_scan_top(u64* __restrict__ sums, u32 nb, u64* __restrict__ out,
                                        u32 n, u64* __restrict__ meta) {
    u64 carry = 0;
    for (u32 base = 0; base < nb; base += blockDim.x) {
        const u32 i = base + threadIdx.x;
        const u64 v = i < nb ? sums[i] : 0;
        u64 total;
        const u64 e = block_excl_scan<u64>(v, &total);
        if (i < nb) sums[i] = carry + e;
        carry += total;
    }
    if (threadIdx.x == 0) {
        out[n] = carry;
        meta[M_TOTAL] = carry;
    }
}

extern "C" __global__ void spg_scan_add(u64* __restrict__ out, u32 n,
                                        const u64* __restrict__ sums) {
    const u64 add = sums[blockIdx.x];
    const u64 base = (u64)blockIdx.x * SCAN_BLOCK;
    for (u32 q = threadIdx.x; q < SCAN_BLOCK; q += blockDim.x)
        if (base + q < n) out[base + q] += add;
}

// ------------------------------------------------------ walking the products

template <typename T>
struct Csr {
    const u64* __restrict__ off;
    const u32* __restrict__ col;
    const T* __restrict__ val;
};

// First index in [lo, hi) whose column is >= c (hi when none).
__device__ __forceinline__ u64 lower_bound(const u32* __restrict__ col, u64 lo, u64 hi, u64 c) {
    while (lo < hi) {
        const u64 mid = lo + ((hi - lo) >> 1);
        if ((u64)col[mid] < c) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// One warp walks the products of 32 (or fewer) B row ranges: lane l holds
// [bs, be) of one B row and the A value av it is scaled by; lanes are in A's
// order. The products are visited in t order (lane, then position in the
// range) in chunks of 32, calling sink(t_base + t, col, a, b, active) with all
// 32 lanes (so sinks may use warp collectives). I is the type of the product
// counts: u32 where they are known to be below 2^32 (the sort bins: half the
// shuffles), else u64. Returns the number of products.
template <typename T, bool VALS, typename I, typename Sink>
__device__ __forceinline__ I chunk_products(const Csr<T>& B, u64 bs, u64 be, T av, u64 t_base,
                                            Sink& sink) {
    const int lane = threadIdx.x & 31;
    const I len = (I)(be - bs);
    const I incl = warp_incl_scan<I>(len);
    const I total = __shfl_sync(FULL, incl, 31);
    const I excl = incl - len;
    for (I r0 = 0; r0 < total; r0 += 32) {
        const I r = r0 + lane;
        const bool act = r < total;
        // Owner: the smallest lane o with incl[o] > r.
        int o = 0;
#pragma unroll
        for (int s = 16; s > 0; s >>= 1) {
            const I v = __shfl_sync(FULL, incl, o + s - 1);
            if (v <= r) o += s;
        }
        const u64 ob = __shfl_sync(FULL, bs, o);
        const I oe = __shfl_sync(FULL, excl, o);
        T a = T(0), b = T(0);
        if (VALS) a = __shfl_sync(FULL, av, o);
        u32 col = EMPTY;
        if (act) {
            const u64 q = ob + (u64)(r - oe);
            col = B.col[q];
            if (VALS) b = B.val[q];
        }
        sink(t_base + r, col, a, b, act);
    }
    return total;
}

// One warp walks the products A(row,p) B(p,j) of a row in t order (p in A's
// order, then B's row in order) with chunk_products. With clip, only columns
// in [c_lo, c_hi) are visited (B's rows are cut by binary search). A's row is
// read in chunks of 32 entries, chunk c0, c0 + stride, ... (the symbolic block
// kernels split a row's A chunks among warps; t is then not meaningful, and
// unused). Returns the number of products visited.
template <typename T, bool VALS, typename I, typename Sink>
__device__ __forceinline__ u64 for_products(const Csr<T>& A, const Csr<T>& B, u32 row, bool clip,
                                            u64 c_lo, u64 c_hi, u32 c0, u32 stride, Sink& sink) {
    const int lane = threadIdx.x & 31;
    const u64 a_beg = A.off[row], a_end = A.off[row + 1];
    u64 t_base = 0;
    for (u64 base = a_beg + (u64)c0 * 32; base < a_end; base += (u64)stride * 32) {
        const u64 k = base + lane;
        u64 bs = 0, be = 0;
        T av = T(0);
        if (k < a_end) {
            const u32 p = A.col[k];
            if (VALS) av = A.val[k];
            bs = B.off[p];
            be = B.off[p + 1];
            if (clip && bs < be) {
                if ((u64)B.col[bs] < c_lo) bs = lower_bound(B.col, bs + 1, be, c_lo);
                if (bs < be && (u64)B.col[be - 1] >= c_hi)
                    be = lower_bound(B.col, bs, be - 1, c_hi);
            }
        }
        t_base += chunk_products<T, VALS, I>(B, bs, be, av, t_base, sink);
    }
    return t_base;
}

__device__ __forceinline__ u32 warp_max(u32 v) {
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(FULL, v);
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(FULL, v, o));
    return v;
#endif
}

// Applies one chunk's products to the accumulator slot `key` (unique per
// column; inactive lanes pass a key no real slot has) in lane order: the
// lowest lane of each group of equal keys reads the slot, chains the group's
// fmas and writes it back. Returns true on the lanes that wrote (the leaders).
template <typename T>
__device__ __forceinline__ bool ordered_apply(T* acc_slot, u32 key, bool act, T a, T b) {
    const int lane = threadIdx.x & 31;
    const u32 peers = __match_any_sync(FULL, key);
    const bool leader = act && (__ffs(peers) - 1) == lane;
    const u32 most = warp_max(act ? (u32)__popc(peers) : 0u);
    if (most <= 1) {
        if (act) *acc_slot = madd(a, b, *acc_slot);
        return act;
    }
    T acc = leader ? *acc_slot : T(0);
    u32 rest = act ? peers : 0u;
    for (u32 r = 0; r < most; ++r) {
        const int src = rest ? __ffs(rest) - 1 : lane;
        const T as = __shfl_sync(FULL, a, src);
        const T bs = __shfl_sync(FULL, b, src);
        if (rest) {
            acc = madd(as, bs, acc);
            rest &= rest - 1;
        }
    }
    if (leader) *acc_slot = acc;
    return leader;
}

// ----------------------------------------------------- bin 10: k-way merge

// One thread per row whose A row has at most MERGE_MAX_A entries: the row is
// the merge of those (sorted) B rows. Each step takes the smallest head
// column and applies the heads holding it in A's order, so the fma chain is
// the canonical one without any sorting or table; all state is in registers
// (the loops over the lists are unrolled).
template <typename T, bool NUM>
struct Merge {
    u64 pos[MERGE_MAX_A], end[MERGE_MAX_A];
    u32 head[MERGE_MAX_A];
    T av[MERGE_MAX_A];

    __device__ __forceinline__ void init(const Csr<T>& A, const Csr<T>& B, u32 row) {
        const u64 a0 = A.off[row], alen = A.off[row + 1] - a0;
#pragma unroll
        for (int l = 0; l < MERGE_MAX_A; ++l) {
            head[l] = EMPTY;
            pos[l] = end[l] = 0;
            av[l] = T(0);
            if (l < alen) {
                const u32 p = A.col[a0 + l];
                if (NUM) av[l] = A.val[a0 + l];
                pos[l] = B.off[p];
                end[l] = B.off[p + 1];
                if (pos[l] < end[l]) head[l] = B.col[pos[l]];
            }
        }
    }

    // The next column and its value; EMPTY when the row is done.
    __device__ __forceinline__ u32 next(const Csr<T>& B, T* value) {
        u32 c = head[0];
#pragma unroll
        for (int l = 1; l < MERGE_MAX_A; ++l) c = min(c, head[l]);
        if (c == EMPTY) return EMPTY;
        T acc = T(0);
#pragma unroll
        for (int l = 0; l < MERGE_MAX_A; ++l) {
            if (head[l] == c) {
                if (NUM) acc = madd(av[l], B.val[pos[l]], acc);
                ++pos[l];
                head[l] = pos[l] < end[l] ? B.col[pos[l]] : EMPTY;
            }
        }
        *value = acc;
        return c;
    }
};

#define MERGE_THREADS 128

template <typename T>
__device__ __forceinline__ void sym_merge(Csr<T> A, Csr<T> B, const u32* __restrict__ rows,
                                          u32 count, u32* __restrict__ nnz) {
    const u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= count) return;
    const u32 row = rows[r];
    Merge<T, false> mg;
    mg.init(A, B, row);
    u32 n = 0;
    T unused;
    // Each step emits one column, and a row has at most MERGE_MAX_W products.
    while (n <= MERGE_MAX_W && mg.next(B, &unused) != EMPTY) ++n;
    nnz[row] = n;
}

// The symbolic kernels read no values: T = float only types the CSR views.
// Every kernel is declared on one `*_ENTRY` line so that a call can compile
// each alone, in parallel (`KernelSource::per_entry`, `CudaBackend::prepare`).
#define SYM_MERGE_ENTRY(NAME, T)                                                                \
    extern "C" __global__ void NAME(const u64* a_off, const u32* a_col, const u64* b_off,       \
                                    const u32* b_col, const u32* rows, u32 count, u32* nnz,     \
                                    u64* meta) {                                                \
        sym_merge<T>(Csr<T>{a_off, a_col, nullptr}, Csr<T>{b_off, b_col, nullptr}, rows, count, \
                     nnz);                                                                      \
    }
SYM_MERGE_ENTRY(spg_sym_merge, float)

// The numeric merge stages each warp's output through shared memory, D
// entries per row at a time, so that a warp writes one row's run with
// consecutive lanes (a thread writing its own row would scatter every store
// over 32 rows). D = 32 for f32, 16 for f64 (static shared memory <= 48 KiB).
template <typename T, int D>
__device__ __forceinline__ void num_merge(Csr<T> A, Csr<T> B, const u32* __restrict__ rows,
                                          u32 count, const u64* __restrict__ c_off,
                                          u32* __restrict__ c_col, T* __restrict__ c_val,
                                          u64* meta) {
    __shared__ u32 s_col[MERGE_THREADS / 32][32][D + 1];
    __shared__ T s_val[MERGE_THREADS / 32][32][D + 1];
    const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x * blockDim.x + wid * 32 >= count) return;  // whole warp past the end
    Merge<T, true> mg;
    u64 out0 = 0, out_n = 0;
    bool done = r >= count;
    if (!done) {
        const u32 row = rows[r];
        mg.init(A, B, row);
        out0 = c_off[row];
        out_n = c_off[row + 1] - out0;
    }
    u64 n = 0;
    while (__any_sync(FULL, !done)) {
        u32 k = 0;  // entries of this tile
        for (int step = 0; step < D; ++step) {
            if (!done) {
                T v;
                const u32 c = mg.next(B, &v);
                if (c == EMPTY || n + k >= out_n) {
                    done = true;
                    if (c != EMPTY) raise_flag(meta, FLAG_NNZ_MISMATCH);
                } else {
                    s_col[wid][lane][k] = c;
                    s_val[wid][lane][k] = v;
                    ++k;
                }
            }
        }
        __syncwarp();
        for (int src = 0; src < 32; ++src) {
            const u32 ks = __shfl_sync(FULL, k, src);
            const u64 base = __shfl_sync(FULL, out0 + n, src);
            for (u32 e = lane; e < ks; e += 32) {
                c_col[base + e] = s_col[wid][src][e];
                c_val[base + e] = s_val[wid][src][e];
            }
        }
        n += k;
        __syncwarp();
    }
    if (r < count && n != out_n) raise_flag(meta, FLAG_NNZ_MISMATCH);
}

#define NUM_MERGE_ENTRY(NAME, T, D)                                                             \
    extern "C" __global__ void __launch_bounds__(MERGE_THREADS)                                \
        NAME(const u64* a_off, const u32* a_col, const T* a_val, const u64* b_off,              \
             const u32* b_col, const T* b_val, const u32* rows, u32 count, const u64* c_off,    \
             u32* c_col, T* c_val, u64* meta) {                                                 \
        num_merge<T, D>(Csr<T>{a_off, a_col, a_val}, Csr<T>{b_off, b_col, b_val}, rows, count,  \
                     c_off, c_col, c_val, meta);                                                \
    }
NUM_MERGE_ENTRY(spg_num_merge_f32, float, 32)
NUM_MERGE_ENTRY(spg_num_merge_f64, double, 16)

// ------------------------------------------------------------- bins 1-3: sort

#define SORT_WARPS 8

template <int E>
struct SortGather {
    u32* col;
    __device__ __forceinline__ void operator()(u64 t, u32 c, float, float, bool act) {
        if (act && t < 32 * E) col[t] = c;  // bins 1-3 have W <= 32 E
    }
};

template <int E, typename T>
struct SortGatherV {
    u32* col;
    T* a;
    T* b;
    __device__ __forceinline__ void operator()(u64 t, u32 c, T av, T bv, bool act) {
        if (act && t < 32 * E) {
            col[t] = c;
            a[t] = av;
            b[t] = bv;
        }
    }
};

// Bitonic sort of 32 E keys, element i = e * 32 + lane held in key[e].
template <int E, typename K>
__device__ __forceinline__ void warp_bitonic(K (&key)[E]) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 2; k <= 32 * E; k <<= 1) {
#pragma unroll
        for (int j = k >> 1; j > 0; j >>= 1) {
            if (j >= 32) {
                const int je = j >> 5;
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    const int pe = e ^ je;
                    if (pe > e) {
                        const bool up = (((e << 5) | lane) & k) == 0;
                        const K x = key[e], y = key[pe];
                        if ((x > y) == up) {
                            key[e] = y;
                            key[pe] = x;
                        }
                    }
                }
            } else {
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    const K other = __shfl_xor_sync(FULL, key[e], j);
                    const bool lower = (lane & j) == 0;
                    const bool up = (((e << 5) | lane) & k) == 0;
                    const K mn = key[e] < other ? key[e] : other;
                    const K mx = key[e] < other ? other : key[e];
                    key[e] = (lower == up) ? mn : mx;
                }
            }
        }
    }
}

template <int E>
__device__ __forceinline__ void sym_sort(Csr<float> A, Csr<float> B, const u32* __restrict__ rows,
                                         u32 count, u32* __restrict__ nnz) {
    __shared__ u32 scol[SORT_WARPS][32 * E];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const u32 r = blockIdx.x * SORT_WARPS + wid;
    if (r >= count) return;
    const u32 row = rows[r];
    SortGather<E> g{scol[wid]};
    const u64 w = for_products<float, false, u32>(A, B, row, false, 0, 0, 0, 1, g);
    __syncwarp();
    u32 key[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const u32 i = (e << 5) | lane;
        key[e] = i < w ? scol[wid][i] : EMPTY;
    }
    warp_bitonic<E, u32>(key);
    u32 heads = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const u32 up = __shfl_up_sync(FULL, key[e], 1);
        const u32 wrap = __shfl_sync(FULL, key[e > 0 ? e - 1 : 0], 31);
        const bool first = lane == 0 && e == 0;
        const u32 prev = lane > 0 ? up : wrap;
        const bool head = key[e] != EMPTY && (first || key[e] != prev);
        heads += __popc(__ballot_sync(FULL, head));
    }
    if (lane == 0) nnz[row] = heads;
}

template <int E, typename T>
__device__ __forceinline__ void num_sort(Csr<T> A, Csr<T> B, const u32* __restrict__ rows,
                                         u32 count,
                                         const u64* __restrict__ c_off, u32* __restrict__ c_col,
                                         T* __restrict__ c_val, u64* __restrict__ meta) {
    __shared__ u32 scol[SORT_WARPS][32 * E];
    __shared__ T sa[SORT_WARPS][32 * E];
    __shared__ T sb[SORT_WARPS][32 * E];
    __shared__ u64 skey[SORT_WARPS][32 * E];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const u32 r = blockIdx.x * SORT_WARPS + wid;
    if (r >= count) return;
    const u32 row = rows[r];
    SortGatherV<E, T> g{scol[wid], sa[wid], sb[wid]};
    const u64 w = for_products<T, true, u32>(A, B, row, false, 0, 0, 0, 1, g);
    __syncwarp();
    u64 key[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const u32 i = (e << 5) | lane;
        key[e] = i < w ? (((u64)scol[wid][i] << 32) | i) : ~0ull;
    }
    warp_bitonic<E, u64>(key);
#pragma unroll
    for (int e = 0; e < E; ++e) skey[wid][(e << 5) | lane] = key[e];
    __syncwarp();
    const u64 out0 = c_off[row], out_n = c_off[row + 1] - out0;
    u32 rank = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const u32 i = (e << 5) | lane;
        const u32 c = (u32)(key[e] >> 32);
        const bool head = i < w && (i == 0 || (u32)(skey[wid][i - 1] >> 32) != c);
        const u32 ball = __ballot_sync(FULL, head);
        if (head) {
            const u32 pos = rank + __popc(ball & ((1u << lane) - 1u));
            T acc = T(0);
            for (u32 q = i; q < w && (u32)(skey[wid][q] >> 32) == c; ++q) {
                const u32 t = (u32)skey[wid][q];
                acc = madd(sa[wid][t], sb[wid][t], acc);
            }
            if (pos < out_n) {
                c_col[out0 + pos] = c;
                c_val[out0 + pos] = acc;
            }
        }
        rank += __popc(ball);
    }
    if (lane == 0 && rank != out_n) raise_flag(meta, FLAG_NNZ_MISMATCH);
}

#define SYM_SORT_ENTRY(NAME, E)                                                                 \
    extern "C" __global__ void __launch_bounds__(SORT_WARPS * 32)                              \
        NAME(const u64* a_off, const u32* a_col, const u64* b_off, const u32* b_col,            \
             const u32* rows, u32 count, u32* nnz) {                                            \
        sym_sort<E>(Csr<float>{a_off, a_col, nullptr}, Csr<float>{b_off, b_col, nullptr}, rows, \
                    count, nnz);                                                                \
    }
SYM_SORT_ENTRY(spg_sym_sort1, 1)
SYM_SORT_ENTRY(spg_sym_sort2, 2)
SYM_SORT_ENTRY(spg_sym_sort4, 4)

#define NUM_SORT_ENTRY(NAME, E, T)                                                              \
    extern "C" __global__ void __launch_bounds__(SORT_WARPS * 32)                              \
        NAME(const u64* a_off, const u32* a_col, const T* a_val, const u64* b_off,              \
             const u32* b_col, const T* b_val, const u32* rows, u32 count, const u64* c_off,    \
             u32* c_col, T* c_val, u64* meta) {                                                 \
        num_sort<E, T>(Csr<T>{a_off, a_col, a_val}, Csr<T>{b_off, b_col, b_val}, rows, count,   \
                       c_off, c_col, c_val, meta);                                              \
    }
NUM_SORT_ENTRY(spg_num_sort1_f32, 1, float)
NUM_SORT_ENTRY(spg_num_sort2_f32, 2, float)
NUM_SORT_ENTRY(spg_num_sort4_f32, 4, float)
NUM_SORT_ENTRY(spg_num_sort1_f64, 1, double)
NUM_SORT_ENTRY(spg_num_sort2_f64, 2, double)
NUM_SORT_ENTRY(spg_num_sort4_f64, 4, double)

// ------------------------------------------------------------- hash tables

// Fibonacci hashing: the high bits of col * 2^32 / phi, so columns that
// differ only in high bits still spread.
__device__ __forceinline__ u32 hash_slot(u32 col, u32 shift) {
    return shift >= 32 ? 0u : (col * 2654435761u) >> shift;
}

// Finds or inserts col (linear probing). Returns the slot, or EMPTY when the
// table is full (a sizing bug: flagged). *fresh tells whether it inserted.
__device__ __forceinline__ u32 table_insert(u32* keys, u32 size, u32 shift, u32 col, bool* fresh,
                                            u64* meta) {
    u32 s = hash_slot(col, shift);
    for (u32 probe = 0; probe < size; ++probe) {
        const u32 prev = atomicCAS(&keys[s], EMPTY, col);
        if (prev == EMPTY || prev == col) {
            *fresh = prev == EMPTY;
            return s;
        }
        s = (s + 1) & (size - 1);
    }
    *fresh = false;
    raise_flag(meta, FLAG_TABLE_FULL);
    return EMPTY;
}

struct SymHashSink {
    u32* keys;
    u32 size, shift;
    u64* meta;
    u32 fresh_count;  // per lane
    __device__ __forceinline__ void operator()(u64, u32 col, float, float, bool act) {
        if (act) {
            bool fresh;
            table_insert(keys, size, shift, col, &fresh, meta);
            fresh_count += fresh ? 1u : 0u;
        }
    }
};

template <typename T>
struct NumHashSink {
    u32* keys;
    T* vals;
    u32 size, shift;
    u64* meta;
    __device__ __forceinline__ void operator()(u64, u32 col, T a, T b, bool act) {
        const int lane = threadIdx.x & 31;
        u32 slot = EMPTY;
        if (act) {
            bool fresh;
            slot = table_insert(keys, size, shift, col, &fresh, meta);
            if (slot == EMPTY) act = false;
        }
        // Inactive lanes get keys no slot has (slots are < 2^31).
        const u32 key = act ? slot : (0x80000000u | (u32)lane);
        ordered_apply<T>(act ? &vals[slot] : nullptr, key, act, a, b);
        __syncwarp();
    }
};

__device__ __forceinline__ u32 warp_sum(u32 v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

// Bitonic sort of keys[0, p) (p a power of two) with their values, by `lanes`
// threads numbered `me` that sync with `sync()` between stages.
template <typename T, bool WARP>
__device__ __forceinline__ void table_sort(u32* keys, T* vals, u32 p, u32 me, u32 lanes) {
    for (u32 k = 2; k <= p; k <<= 1) {
        for (u32 j = k >> 1; j > 0; j >>= 1) {
            for (u32 q = me; q < p / 2; q += lanes) {
                const u32 i = ((q & ~(j - 1)) << 1) | (q & (j - 1));
                const u32 l = i | j;
                const bool up = (i & k) == 0;
                const u32 x = keys[i], y = keys[l];
                if ((x > y) == up) {
                    keys[i] = y;
                    keys[l] = x;
                    const T vi = vals[i];
                    vals[i] = vals[l];
                    vals[l] = vi;
                }
            }
            if (WARP) __syncwarp(); else __syncthreads();
        }
    }
}

__device__ __forceinline__ u32 next_pow2(u32 v) {
    return v <= 1 ? 1u : 1u << (32 - __clz(v - 1));
}

// ------------------------------------------------------ bins 4-7: warp hash

// Dynamic shared memory: warps_per_block tables of `size` keys (and values).
__device__ __forceinline__ void sym_warp_hash(Csr<float> A, Csr<float> B,
                                              const u32* __restrict__ rows, u32 count, u32 size,
                                              u32 shift, u32* __restrict__ nnz, u64* meta) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const u32 r = blockIdx.x * (blockDim.x >> 5) + wid;
    if (r >= count) return;
    u32* keys = reinterpret_cast<u32*>(smem) + (u64)wid * size;
    for (u32 s = lane; s < size; s += 32) keys[s] = EMPTY;
    __syncwarp();
    const u32 row = rows[r];
    SymHashSink sink{keys, size, shift, meta, 0};
    for_products<float, false, u64>(A, B, row, false, 0, 0, 0, 1, sink);
    const u32 n = warp_sum(sink.fresh_count);
    if (lane == 0) nnz[row] = n;
}

template <typename T>
__device__ __forceinline__ void num_warp_hash(Csr<T> A, Csr<T> B, const u32* __restrict__ rows,
                                              u32 count, u32 size, u32 shift,
                                              const u64* __restrict__ c_off, u32* __restrict__ c_col,
                                              T* __restrict__ c_val, u64* meta) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const u32 r = blockIdx.x * (blockDim.x >> 5) + wid;
    if (r >= count) return;
    const u32 nw = blockDim.x >> 5;
    T* vals = reinterpret_cast<T*>(smem) + (u64)wid * size;
    u32* keys =
        reinterpret_cast<u32*>(reinterpret_cast<T*>(smem) + (u64)nw * size) + (u64)wid * size;
    for (u32 s = lane; s < size; s += 32) {
        keys[s] = EMPTY;
        vals[s] = T(0);
    }
    __syncwarp();
    const u32 row = rows[r];
    NumHashSink<T> sink{keys, vals, size, shift, meta};
    for_products<T, true, u64>(A, B, row, false, 0, 0, 0, 1, sink);
    __syncwarp();
    // Compact in place: an entry moves to a position <= its slot, and every
    // slot below the current 32 has been read before the writes.
    u32 n = 0;
    for (u32 s0 = 0; s0 < size; s0 += 32) {
        const u32 k = keys[s0 + lane];
        const T v = vals[s0 + lane];
        const bool full = k != EMPTY;
        const u32 ball = __ballot_sync(FULL, full);
        __syncwarp();
        if (full) {
            const u32 pos = n + __popc(ball & ((1u << lane) - 1u));
            keys[pos] = k;
            vals[pos] = v;
        }
        n += __popc(ball);
        __syncwarp();
    }
    const u32 p = next_pow2(n);
    for (u32 s = n + lane; s < p; s += 32) keys[s] = EMPTY;
    __syncwarp();
    table_sort<T, true>(keys, vals, p, lane, 32);
    const u64 out0 = c_off[row], out_n = c_off[row + 1] - out0;
    if (n != out_n) {
        if (lane == 0) raise_flag(meta, FLAG_NNZ_MISMATCH);
        return;
    }
    for (u32 e = lane; e < n; e += 32) {
        c_col[out0 + e] = keys[e];
        c_val[out0 + e] = vals[e];
    }
}

#define SYM_WARP_HASH_ENTRY(NAME, T)                                                            \
    extern "C" __global__ void NAME(const u64* a_off, const u32* a_col, const u64* b_off,       \
                                    const u32* b_col, const u32* rows, u32 count, u32 size,     \
                                    u32 shift, u32* nnz, u64* meta) {                           \
        sym_warp_hash(Csr<T>{a_off, a_col, nullptr}, Csr<T>{b_off, b_col, nullptr}, rows, count, \
                      size, shift, nnz, meta);                                                  \
    }
SYM_WARP_HASH_ENTRY(spg_sym_warp_hash, float)

#define NUM_WARP_HASH_ENTRY(NAME, T)                                                            \
    extern "C" __global__ void __launch_bounds__(256)                                          \
        NAME(const u64* a_off, const u32* a_col, const T* a_val, const u64* b_off,              \
             const u32* b_col, const T* b_val, const u32* rows, u32 count, u32 size, u32 shift, \
             const u64* c_off, u32* c_col, T* c_val, u64* meta) {                               \
        num_warp_hash<T>(Csr<T>{a_off, a_col, a_val}, Csr<T>{b_off, b_col, b_val}, rows, count, \
                         size, shift, c_off, c_col, c_val, meta);                               \
    }
NUM_WARP_HASH_ENTRY(spg_num_warp_hash_f32, float)
NUM_WARP_HASH_ENTRY(spg_num_warp_hash_f64, double)

// ----------------------------------------------------------- bin 8: dense

#define BLOCK_WARPS 8

struct SymDenseSink {
    u32* bits;
    u64 c0;
    __device__ __forceinline__ void operator()(u64, u32 col, float, float, bool act) {
        if (act) {
            const u32 idx = (u32)((u64)col - c0);
            atomicOr(&bits[idx >> 5], 1u << (idx & 31));
        }
    }
};

template <typename T>
struct NumDenseSink {
    u32* bits;
    T* vals;
    u64 c0;
    __device__ __forceinline__ void operator()(u64, u32 col, T a, T b, bool act) {
        const int lane = threadIdx.x & 31;
        const u32 idx = act ? (u32)((u64)col - c0) : 0u;
        // Windows are < 2^31 columns: inactive keys never meet real ones.
        const u32 key = act ? idx : (0x80000000u | (u32)lane);
        if (ordered_apply<T>(act ? &vals[idx] : nullptr, key, act, a, b))
            atomicOr(&bits[idx >> 5], 1u << (idx & 31));
        __syncwarp();
    }
};

// Lower bounds of N targets, each in its own range: out[j] = the first index
// in [bs[j], be[j]) whose column is >= tg[j] (be[j] when none). A target at
// or before the range's first column or past its last needs no search; the
// other searches run in lockstep, so their loads overlap instead of queueing
// one behind the other. ONE_RANGE: all ranges are range 0 (its first and
// last columns are read once).
template <int N, bool ONE_RANGE = false>
__device__ __forceinline__ void lower_bounds(const u32* __restrict__ col, const u64* bs,
                                             const u64* be, const u64* tg, u64* out) {
    u64 hi[N];
    const bool read0 = ONE_RANGE && bs[0] != be[0];
    const u64 first0 = read0 ? col[bs[0]] : 0, last0 = read0 ? col[be[0] - 1] : 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (bs[j] == be[j] || tg[j] <= (ONE_RANGE ? first0 : (u64)col[bs[j]])) {
            out[j] = hi[j] = bs[j];
        } else if (tg[j] > (ONE_RANGE ? last0 : (u64)col[be[j] - 1])) {
            out[j] = hi[j] = be[j];
        } else {  // col[bs] < tg <= col[be - 1]: the answer is in (bs, be - 1]
            out[j] = bs[j] + 1;
            hi[j] = be[j] - 1;
        }
    }
    for (;;) {
        bool more = false;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            if (out[j] < hi[j]) {
                const u64 mid = out[j] + ((hi[j] - out[j]) >> 1);
                if ((u64)col[mid] < tg[j]) out[j] = mid + 1; else hi[j] = mid;
                more = true;
            }
        }
        if (!more) break;
    }
}

// Boundaries of B row [bs, be) at the columns c0 + width * min(j, g) / g,
// j = 0..BLOCK_WARPS (the warps' column ranges; with ENDS_FIRST read from
// `bound`, worked out once a window: 64-bit divisions are long instruction
// sequences): out[j] = lower_bound - bs for j <= g, all searched at once. With
// ENDS_FIRST (the kernel for few wide rows), a short row (up to SPLIT_SHORT
// entries) is cut at the window's two ends first: in a window that holds few
// of the row's products most such rows have none there, and then the warps'
// bounds need no search (nine searches of every short row made bin 8's long
// rows of A bound by load instructions). The kernel for many rows keeps one
// round: the second one's registers cost rmat-16-8 a fifth of its bin 8.
#define SPLIT_SHORT 64
template <bool ENDS_FIRST>
__device__ __forceinline__ void split_bounds(const u32* __restrict__ col, u64 bs, u64 be, u64 c0,
                                             u64 width, const u64* bound, u32 g, u32* out) {
    u64 lo[BLOCK_WARPS + 1], hi[BLOCK_WARPS + 1], tg[BLOCK_WARPS + 1], r[BLOCK_WARPS + 1];
#pragma unroll
    for (int j = 0; j <= BLOCK_WARPS; ++j) {
        lo[j] = bs;
        hi[j] = be;
        tg[j] = ENDS_FIRST ? bound[j] : c0 + width * (u64)min((u32)j, g) / g;
    }
    if (ENDS_FIRST && be - bs <= SPLIT_SHORT) {
        const u64 t2[2] = {tg[0], tg[BLOCK_WARPS]};
        u64 ends[2];
        lower_bounds<2, true>(col, lo, hi, t2, ends);
#pragma unroll
        for (int j = 0; j <= BLOCK_WARPS; ++j) {
            lo[j] = ends[0];
            hi[j] = ends[1];
        }
    }
    lower_bounds<BLOCK_WARPS + 1, true>(col, lo, hi, tg, r);
#pragma unroll
    for (int j = 0; j <= BLOCK_WARPS; ++j)
        if ((u32)j <= g) out[j] = (u32)(r[j] - bs);
}

// The next (row, part) item of bin 8 for the whole block: item t is part
// t % nparts of the bin's row t / nparts. Returns total when exhausted.
__device__ __forceinline__ u64 next_item(u64* queue, u64 total) {
    __shared__ u64 next;
    __syncthreads();  // everyone is done with the previous item
    if (threadIdx.x == 0) next = umin64(atomicAdd(queue, 1ull), total);
    __syncthreads();
    return next;
}

// Emits (numeric) or counts the columns whose bits are set in the window
// [c0, c0 + nwords * 32), in order, and clears the bits and values. Returns
// the number of columns (the same on every thread).
template <typename T, bool NUM>
__device__ __forceinline__ u64 emit_window(u32* bits, T* vals, u64 c0, u64 nwords, u64 out,
                                           u32* __restrict__ c_col, T* __restrict__ c_val) {
    u64 emitted = 0;
    for (u64 w0 = 0; w0 < nwords; w0 += blockDim.x) {
        const u64 wi = w0 + threadIdx.x;
        const u32 word = wi < nwords ? bits[wi] : 0u;
        u32 total;
        const u32 before = block_excl_scan<u32>((u32)__popc(word), &total);
        if (NUM && word) {
            u64 pos = out + emitted + before;
            u32 rest = word;
            while (rest) {
                const u32 bit = __ffs(rest) - 1;
                rest &= rest - 1;
                const u64 idx = wi * 32 + bit;
                c_col[pos] = (u32)(c0 + idx);
                c_val[pos] = vals[idx];
                vals[idx] = T(0);
                ++pos;
            }
        }
        if (word) bits[wi] = 0u;
        emitted += total;
    }
    __syncthreads();
    return emitted;
}

// Symbolic bin 8's walk of a row's products in [c_lo, c_hi) (clip: B's rows
// are cut there; else they are whole). No order is kept: warp wid of g takes
// A's entries in steps of 32 * ILP, each lane ILP of them whose dependent
// loads (A, B's offsets, the binary searches of the cuts) run in lockstep.
// One entry a lane (for_products) took a chain of about seven loads per 32
// entries, which bounded a row of 100K entries at ~2 ms; rows of A shorter
// than SYM_ILP_MIN keep it (coarser steps left warps idle on rmat-16-8), and
// so does the kernel for many rows (the lockstep registers would cost it
// occupancy).
#define SYM_ILP 4
#define SYM_ILP_MIN 4096
template <typename Sink>
__device__ __forceinline__ void sym_window_products(const Csr<float>& A, const Csr<float>& B,
                                                    u32 row, bool clip, u64 c_lo, u64 c_hi,
                                                    u32 wid, u32 g, Sink& sink) {
    constexpr u32 STEP = 32 * SYM_ILP;
    const u32 lane = threadIdx.x & 31;
    const u64 a_beg = A.off[row], a_end = A.off[row + 1];
    for (u64 base = a_beg + (u64)wid * STEP; base < a_end; base += (u64)g * STEP) {
        u32 p[SYM_ILP];
        u64 bs[2 * SYM_ILP], be[2 * SYM_ILP], tg[2 * SYM_ILP], cut[2 * SYM_ILP];
#pragma unroll
        for (u32 i = 0; i < SYM_ILP; ++i) {
            const u64 k = base + i * 32 + lane;
            p[i] = k < a_end ? A.col[k] : EMPTY;
        }
        // [2i]: the cut of entry i's B row at c_lo, [2i + 1]: at c_hi.
#pragma unroll
        for (u32 i = 0; i < SYM_ILP; ++i) {
            bs[2 * i] = bs[2 * i + 1] = p[i] != EMPTY ? B.off[p[i]] : 0;
            be[2 * i] = be[2 * i + 1] = p[i] != EMPTY ? B.off[p[i] + 1] : 0;
            tg[2 * i] = c_lo;
            tg[2 * i + 1] = c_hi;
        }
        if (clip) {
            lower_bounds<2 * SYM_ILP>(B.col, bs, be, tg, cut);
        } else {
#pragma unroll
            for (u32 j = 0; j < 2 * SYM_ILP; ++j) cut[j] = (j & 1) ? be[j] : bs[j];
        }
#pragma unroll
        for (u32 i = 0; i < SYM_ILP; ++i)
            chunk_products<float, false, u64>(B, cut[2 * i], cut[2 * i + 1], 0.f, 0, sink);
    }
}

// Symbolic bin 8: one block per (row, part) item, a bitmap over a window of
// `win` columns (a multiple of 32) in dynamic shared memory, the part's
// `part` columns (a multiple of win) done window by window; warps split A's
// row (no order is needed to count). With `pcount` null the part's count is
// added to the row's nnz (zero before the pass); else it is stored as
// pcount[item] (0 for parts past the row's span): the numeric pass's part
// offsets, with `queue` its own counter. PARTS: the kernel for few wide rows
// (several parts a row), whose long rows of A take sym_window_products.
template <bool PARTS>
__device__ __forceinline__ void sym_dense_rows(Csr<float> A, Csr<float> B,
                                               const u32* __restrict__ rows, u32 count,
                                               const u32* __restrict__ lo,
                                               const u32* __restrict__ hi, u64 win, u64 part,
                                               u64 nparts, u32* __restrict__ nnz,
                                               u32* __restrict__ pcount, u64* queue) {
    extern __shared__ __align__(16) unsigned char smem[];
    const u32 wid = threadIdx.x >> 5, g = blockDim.x >> 5;
    u32* bits = reinterpret_cast<u32*>(smem);
    for (u32 w = threadIdx.x; w < (win >> 5); w += blockDim.x) bits[w] = 0u;
    const u64 total = (u64)count * nparts;
    for (;;) {
        const u64 t = next_item(queue, total);
        if (t >= total) break;
        const u32 row = rows[t / nparts];
        const u64 first = lo[row], end = (u64)hi[row] + 1;
        const u64 p0 = first + (t % nparts) * part;
        const u64 p1 = p0 < end ? umin64(p0 + part, end) : p0;
        u64 n = 0;
        for (u64 c0 = p0; c0 < p1; c0 += win) {
            const u64 c1 = umin64(c0 + win, p1);
            SymDenseSink sink{bits, c0};
            const bool clip = c1 - c0 < end - first;
            if (PARTS && A.off[row + 1] - A.off[row] >= SYM_ILP_MIN)
                sym_window_products(A, B, row, clip, c0, c1, wid, g, sink);
            else
                for_products<float, false, u64>(A, B, row, clip, c0, c1, wid, g, sink);
            __syncthreads();
            n += emit_window<float, false>(bits, nullptr, c0, (c1 - c0 + 31) >> 5, 0, nullptr,
                                           nullptr);
        }
        if (threadIdx.x == 0) {
            if (pcount) pcount[t] = (u32)n;
            else if (n) atomicAdd(&nnz[row], (u32)n);
        }
    }
}

// One warp's products of a segment of A's row in bin 8 (entries kl <
// seg_len, the warp's columns of B's row kl being [seg_bs[kl] + cut[kl][w],
// seg_bs[kl] + cut[kl][w + 1])), visited in t order in chunks of 32 across
// the whole segment: in a window that holds few of a row's products most
// entries have none, and a chunk per 32 entries cost a round of dependent
// loads each for a product or two. Lane l sums entries 8 l .. 8 l + 7; `pre`
// (the warp's shared array) gets the inclusive offsets, which each lane
// binary-searches for its product's entry. Totals stay below 2^32: a range
// holds at most a window's columns (<= 2^18).
template <typename T, typename Sink>
__device__ __forceinline__ void segment_products(const Csr<T>& B, u32 seg_len,
                                                 const u32 (*cut)[BLOCK_WARPS + 1],
                                                 const u64* seg_bs, const T* seg_av, u32* pre,
                                                 Sink& sink) {
    constexpr u32 SEG = BLOCK_WARPS * 32, PER_LANE = SEG / 32;
    const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    u32 run = 0, loc[PER_LANE];
#pragma unroll
    for (u32 i = 0; i < PER_LANE; ++i) {
        const u32 kl = lane * PER_LANE + i;
        run += kl < seg_len ? cut[kl][wid + 1] - cut[kl][wid] : 0u;
        loc[i] = run;
    }
    const u32 incl = warp_incl_scan<u32>(run);
    const u32 total = __shfl_sync(FULL, incl, 31), excl = incl - run;
#pragma unroll
    for (u32 i = 0; i < PER_LANE; ++i) pre[lane * PER_LANE + i] = excl + loc[i];
    __syncwarp();
    for (u32 r0 = 0; r0 < total; r0 += 32) {
        const u32 r = r0 + lane;
        const bool act = r < total;
        // Owner: the smallest entry kl with pre[kl] > r.
        u32 kl = 0;
#pragma unroll
        for (u32 s = SEG / 2; s > 0; s >>= 1)
            if (pre[kl + s - 1] <= r) kl += s;
        T a = T(0), b = T(0);
        u32 col = EMPTY;
        if (act) {
            const u64 q = seg_bs[kl] + cut[kl][wid] + (r - (kl ? pre[kl - 1] : 0u));
            col = B.col[q];
            b = B.val[q];
            a = seg_av[kl];
        }
        sink(0, col, a, b, act);
    }
    __syncwarp();
}

// Numeric bin 8: one block of BLOCK_WARPS warps per (row, part) item, the
// part done window by window: values over a window of `win` columns in global
// memory (region_vals + blockIdx.x * win, zero between windows), the bitmap
// in dynamic shared memory. With several parts per row, an item's columns go
// after those of the row's earlier parts (pcount, counted by spg_sym_dense for
// the same items); with one, pcount is null. Warp w owns the columns
// [c0 + width w / g, c0 + width (w + 1) / g) of the window, which keeps every
// column's chain in one warp and in order. A's row goes by segments of
// blockDim entries: first every thread cuts one B row at all the warps'
// bounds (split_bounds, into shared memory), then each warp walks its part of
// the segment's B rows (segment_products).
template <typename T, bool PARTS>
__device__ __forceinline__ void num_dense_rows(Csr<T> A, Csr<T> B, const u32* __restrict__ rows,
                                               u32 count, const u32* __restrict__ lo,
                                               const u32* __restrict__ hi, u64 win, u64 part,
                                               u64 nparts, const u32* __restrict__ pcount,
                                               T* region_vals, const u64* __restrict__ c_off,
                                               u32* __restrict__ c_col, T* __restrict__ c_val,
                                               u64* meta) {
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ u32 cut[BLOCK_WARPS * 32][BLOCK_WARPS + 1];
    __shared__ u64 seg_bs[BLOCK_WARPS * 32];
    __shared__ T seg_av[BLOCK_WARPS * 32];
    __shared__ u32 pre[BLOCK_WARPS][BLOCK_WARPS * 32];
    __shared__ u64 bound[BLOCK_WARPS + 1];
    const u32 wid = threadIdx.x >> 5, g = blockDim.x >> 5;
    u32* bits = reinterpret_cast<u32*>(smem);
    T* vals = region_vals + (u64)blockIdx.x * win;
    for (u32 w = threadIdx.x; w < (win >> 5); w += blockDim.x) bits[w] = 0u;
    // Without PARTS each row is one item (nparts 1, part >= every span): the
    // kernel then needs no more registers than one block per row did.
    if (!PARTS) nparts = 1, pcount = nullptr;
    const u64 total = (u64)count * nparts;
    __shared__ unsigned long long before;
    for (;;) {
        const u64 t = next_item(&meta[M_NUM_QUEUE], total);
        if (t >= total) break;
        const u32 row = rows[PARTS ? t / nparts : t];
        const u64 pi = PARTS ? t % nparts : 0, first = lo[row], end = (u64)hi[row] + 1;
        const u64 p0 = first + pi * part;
        if (p0 >= end) continue;
        const u64 p1 = umin64(p0 + part, end);
        const u64 a_beg = A.off[row], a_end = A.off[row + 1];
        // Columns of the row's earlier parts: a block-wide sum.
        if (threadIdx.x == 0) before = 0;
        __syncthreads();
        u64 sum = 0;
        if (pcount)
            for (u64 j = t - pi + threadIdx.x; j < t; j += blockDim.x) sum += pcount[j];
        if (sum) atomicAdd(&before, (unsigned long long)sum);
        __syncthreads();
        const u64 out0 = c_off[row] + before;
        // The part's column count, known before it is computed (few values
        // live across the window loop: the kernel is at its register limit).
        // At the row's last part the parts' counts must end at the row's end.
        const u64 want = pcount ? (u64)pcount[t] : c_off[row + 1] - out0;
        if (threadIdx.x == 0 && pcount && p1 == end && out0 + want != c_off[row + 1])
            raise_flag(meta, FLAG_NNZ_MISMATCH);
        u64 emitted = 0;
        for (u64 c0 = p0; c0 < p1; c0 += win) {
            const u64 c1 = umin64(c0 + win, p1);
            NumDenseSink<T> sink{bits, vals, c0};
            if (PARTS) {
                if (threadIdx.x <= BLOCK_WARPS)
                    bound[threadIdx.x] = c0 + (c1 - c0) * (u64)min(threadIdx.x, g) / g;
                __syncthreads();
            }
            for (u64 seg = a_beg; seg < a_end; seg += blockDim.x) {
                const u32 seg_len = (u32)umin64(blockDim.x, a_end - seg);
                if (threadIdx.x < seg_len) {
                    const u64 k = seg + threadIdx.x;
                    const u32 p = A.col[k];
                    const u64 bs = B.off[p], be = B.off[p + 1];
                    seg_bs[threadIdx.x] = bs;
                    seg_av[threadIdx.x] = A.val[k];
                    split_bounds<PARTS>(B.col, bs, be, c0, c1 - c0, bound, g, cut[threadIdx.x]);
                }
                __syncthreads();
                segment_products<T>(B, seg_len, cut, seg_bs, seg_av, pre[wid], sink);
                __syncthreads();
            }
            emitted += emit_window<T, true>(bits, vals, c0, (c1 - c0 + 31) >> 5, out0 + emitted,
                                            c_col, c_val);
        }
        if (threadIdx.x == 0 && emitted != want) raise_flag(meta, FLAG_NNZ_MISMATCH);
    }
}

#define SYM_DENSE_ENTRY(NAME, T, PARTS)                                                         \
    extern "C" __global__ void NAME(const u64* a_off, const u32* a_col, const u64* b_off,       \
                                    const u32* b_col, const u32* rows, u32 count, const u32* lo, \
                                    const u32* hi, u64 win, u64 part, u64 nparts, u32* nnz,     \
                                    u32* pcount, u64* meta) {                                   \
        sym_dense_rows<PARTS>(Csr<T>{a_off, a_col, nullptr}, Csr<T>{b_off, b_col, nullptr}, rows, \
                              count, lo, hi, win, part, nparts, nnz, pcount,                    \
                              &meta[pcount ? M_WIN_QUEUE : M_SYM_QUEUE]);                       \
    }
SYM_DENSE_ENTRY(spg_sym_dense, float, false)
SYM_DENSE_ENTRY(spg_sym_dense_parts, float, true)

// Three blocks per SM (the host launches that many): the parts kernel is held
// to it (a few spilled registers, outside the product loop's hot part).
#define NUM_DENSE_ENTRY(NAME, T, PARTS)                                                         \
    extern "C" __global__ void __launch_bounds__(BLOCK_WARPS * 32, 3)                          \
        NAME(const u64* a_off, const u32* a_col, const T* a_val, const u64* b_off,              \
             const u32* b_col, const T* b_val, const u32* rows, u32 count, const u32* lo,       \
             const u32* hi, u64 win, u64 part, u64 nparts, const u32* pcount, T* region_vals,   \
             const u64* c_off, u32* c_col, T* c_val, u64* meta) {                               \
        num_dense_rows<T, PARTS>(Csr<T>{a_off, a_col, a_val}, Csr<T>{b_off, b_col, b_val},     \
                                 rows, count, lo, hi, win, part, nparts, pcount, region_vals,   \
                                 c_off, c_col, c_val, meta);                                    \
    }
NUM_DENSE_ENTRY(spg_num_dense_f32, float, false)
NUM_DENSE_ENTRY(spg_num_dense_f64, double, false)
NUM_DENSE_ENTRY(spg_num_dense_parts_f32, float, true)
NUM_DENSE_ENTRY(spg_num_dense_parts_f64, double, true)

// ------------------------------------------------------ bin 9: block hash

#define CUT_BUCKETS 2048  // histogram buckets over a bin 9 row's span

struct HistSink {
    u32* hist;
    u64 lo, span;
    template <typename U>
    __device__ __forceinline__ void operator()(u64, u32 col, U, U, bool act) {
        if (act) atomicAdd(&hist[(u32)(((u64)col - lo) * CUT_BUCKETS / span)], 1u);
    }
};

// First column of histogram bucket b (b = CUT_BUCKETS: the end of the span).
__device__ __forceinline__ u64 bucket_edge(u64 c_lo, u64 span, u32 b) {
    return c_lo + ((u64)b * span + CUT_BUCKETS - 1) / CUT_BUCKETS;
}

// hist[b] = the row's products in bucket b of its span [c_lo, c_lo + span)
// (warps split A's row). Counts that wrap past 2^32 products would cost
// balance or part sizes, never a result.
template <typename T>
__device__ __forceinline__ void row_histogram(const Csr<T>& A, const Csr<T>& B, u32 row, u64 c_lo,
                                              u64 span, u32 wid, u32 g, u32* hist) {
    for (u32 e = threadIdx.x; e < CUT_BUCKETS; e += blockDim.x) hist[e] = 0;
    __syncthreads();
    HistSink sink{hist, c_lo, span};
    for_products<T, false, u64>(A, B, row, false, 0, 0, wid, g, sink);
    __syncthreads();
}

// Column bounds cuts[0..g] of the g warps of a bin 9 row in the numeric pass,
// placed from the row's histogram so that each warp gets about as many
// products. An even split of the span left one warp most of a web-like row's
// products (its links cluster near the row's own id). Each column still
// belongs to one warp, which keeps its chain in order.
__device__ __forceinline__ void product_cuts(const u32* hist, u64 c_lo, u64 span, u32 g,
                                             u64* cuts) {
    if (threadIdx.x <= g) cuts[threadIdx.x] = threadIdx.x == g ? c_lo + span : c_lo;
    __syncthreads();
    // Thread t scans buckets [t per, (t + 1) per); boundary k (0 < k < g) goes
    // to the first bucket edge whose prefix reaches k / g of the products.
    const u32 per = (CUT_BUCKETS + blockDim.x - 1) / blockDim.x;
    const u32 e0 = min(threadIdx.x * per, (u32)CUT_BUCKETS);
    const u32 e1 = min(e0 + per, (u32)CUT_BUCKETS);
    u32 mine = 0;
    for (u32 e = e0; e < e1; ++e) mine += hist[e];
    u32 total;
    u64 prefix = block_excl_scan<u32>(mine, &total);
    for (u32 e = e0; e < e1; ++e) {
        const u64 before = prefix;
        prefix += hist[e];
        for (u32 k = 1; k < g; ++k) {
            const u64 target = ((u64)total * k + g - 1) / g;
            if (target > 0 && before < target && prefix >= target)
                cuts[k] = bucket_edge(c_lo, span, e + 1);
        }
    }
    __syncthreads();
}

// The end of the column part that starts at c0 of a row whose table would
// not fit the launch's, and in *bound a bound of its distinct columns, at
// most `half`: whole buckets while the sum of min(products, columns) over
// them stays within `half`, else `half` columns of one heavy bucket (a range
// of w columns holds at most w of them). Always past c0.
__device__ __forceinline__ u64 next_part(const u32* hist, u64 c_lo, u64 span, u64 c0, u64 half,
                                         u64* bound) {
    u64 sum = 0, c = c0;
    while (c < c_lo + span) {
        const u32 b = (u32)((c - c_lo) * CUT_BUCKETS / span);
        const u64 edge = bucket_edge(c_lo, span, b + 1);  // > c
        const u64 add = umin64(hist[b], edge - c);
        if (sum + add <= half) {
            sum += add;
            c = edge;
            continue;
        }
        if (sum == 0) {  // add > half, so edge - c > half: stays in the bucket
            c += half;
            sum = half;
        }
        break;
    }
    *bound = sum;
    return c;
}

// One block per row, rows drawn from `queue` (dynamic: a bin 9 row's work
// ranges over orders of magnitude). Each row's table has its own size,
// next_pow2(2 q) slots for q its exact nnz (numeric) or min(W, span)
// (symbolic), so clearing, compacting and sorting cost what the row needs. A
// launch takes the rows whose size is in (size_lo, size_hi], with tables of
// up to size_hi slots in dynamic shared memory; with `parts`, also every
// larger row, done in column parts (next_part) whose tables fit: nothing
// goes to global memory, whatever a row's size. Parts are disjoint column
// ranges in order, so their counts add up and their sorted outputs follow
// one another.
template <typename T, bool NUM>
__device__ __forceinline__ void block_hash_rows(Csr<T> A, Csr<T> B, const u32* __restrict__ rows,
                                                u32 count, const u32* __restrict__ lo,
                                                const u32* __restrict__ hi,
                                                const u32* __restrict__ work, u32 size_lo,
                                                u32 size_hi, u32 parts, u32* __restrict__ nnz,
                                                const u64* __restrict__ c_off,
                                                u32* __restrict__ c_col, T* __restrict__ c_val,
                                                u64* queue, u64* meta) {
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ u32 hist[CUT_BUCKETS];
    __shared__ u64 cuts[BLOCK_WARPS + 1];
    __shared__ u64 part_end, part_bound;
    __shared__ u32 fresh_total;
    const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5, g = blockDim.x >> 5;
    for (;;) {
        const u64 r = next_item(queue, count);
        if (r >= count) break;
        const u32 row = rows[r];
        const u64 q = NUM ? c_off[row + 1] - c_off[row]
                          : umin64(work[row], (u64)hi[row] - (u64)lo[row] + 1);
        const bool split = 2 * q > size_hi;  // next_pow2(2 q) > size_hi
        const u32 size = split ? size_hi : next_pow2((u32)umax64(2 * q, 2));
        if (size <= size_lo || (split && !parts)) continue;
        const u64 c_lo = lo[row], span = (u64)hi[row] + 1 - c_lo;
        if (NUM || split) row_histogram<T>(A, B, row, c_lo, span, wid, g, hist);
        if (NUM && !split) product_cuts(hist, c_lo, span, g, cuts);
        if (threadIdx.x == 0) fresh_total = 0;
        const u64 out0 = NUM ? c_off[row] : 0, out_n = q;
        u64 written = 0;
        for (u64 c0 = c_lo; c0 < c_lo + span;) {
            u64 c1 = c_lo + span;
            u32 psize = size;
            if (split) {
                if (threadIdx.x == 0) {
                    u64 bound;
                    part_end = next_part(hist, c_lo, span, c0, size_hi / 2, &bound);
                    part_bound = bound;
                }
                __syncthreads();
                c1 = part_end;
                psize = next_pow2((u32)umax64(2 * part_bound, 2));
            }
            const u32 shift = 32 - (__ffs(psize) - 1);
            // Values first: their alignment is the stricter one.
            T* vals = NUM ? reinterpret_cast<T*>(smem) : nullptr;
            u32* keys = NUM ? reinterpret_cast<u32*>(vals + psize) : reinterpret_cast<u32*>(smem);
            for (u32 s = threadIdx.x; s < psize; s += blockDim.x) {
                keys[s] = EMPTY;
                if (NUM) vals[s] = T(0);
            }
            __syncthreads();
            if (NUM) {
                u64 s_lo = split ? c0 + (c1 - c0) * wid / g : cuts[wid];
                u64 s_hi = split ? c0 + (c1 - c0) * (wid + 1) / g : cuts[wid + 1];
                NumHashSink<T> sink{keys, vals, psize, shift, meta};
                if (s_lo < s_hi)
                    for_products<T, true, u64>(A, B, row, true, s_lo, s_hi, 0, 1, sink);
            } else {
                SymHashSink sink{keys, psize, shift, meta, 0};
                for_products<T, false, u64>(A, B, row, split, c0, c1, wid, g, sink);
                const u32 n = warp_sum(sink.fresh_count);
                if (lane == 0 && n) atomicAdd(&fresh_total, n);
            }
            __syncthreads();
            if (NUM) {
                // Compact in place, blockDim slots at a time (see num_warp_hash).
                u32 n = 0;
                for (u32 s0 = 0; s0 < psize; s0 += blockDim.x) {
                    const u32 s = s0 + threadIdx.x;
                    const u32 k = s < psize ? keys[s] : EMPTY;
                    const T v = s < psize ? vals[s] : T(0);
                    u32 total;
                    const u32 before = block_excl_scan<u32>(k != EMPTY ? 1u : 0u, &total);
                    if (k != EMPTY) {
                        keys[n + before] = k;
                        vals[n + before] = v;
                    }
                    n += total;
                    __syncthreads();
                }
                const u32 p = next_pow2(n);
                for (u32 s = n + threadIdx.x; s < p; s += blockDim.x) keys[s] = EMPTY;
                __syncthreads();
                table_sort<T, false>(keys, vals, p, threadIdx.x, blockDim.x);
                if (written + n <= out_n) {
                    for (u32 e = threadIdx.x; e < n; e += blockDim.x) {
                        c_col[out0 + written + e] = keys[e];
                        c_val[out0 + written + e] = vals[e];
                    }
                }
                written += n;  // past out_n: flagged below, nothing written
                __syncthreads();
            }
            c0 = c1;
        }
        if (threadIdx.x == 0) {
            if (!NUM) nnz[row] = fresh_total;
            else if (written != out_n) raise_flag(meta, FLAG_NNZ_MISMATCH);
        }
        // next_item syncs before the shared state is reused
    }
}

#define SYM_BLOCK_HASH_ENTRY(NAME, T)                                                           \
    extern "C" __global__ void NAME(const u64* a_off, const u32* a_col, const u64* b_off,       \
                                    const u32* b_col, const u32* rows, u32 count, const u32* lo, \
                                    const u32* hi, const u32* work, u32 size_lo, u32 size_hi,   \
                                    u32 parts, u32* nnz, u32 queue, u64* meta) {                \
        block_hash_rows<T, false>(Csr<T>{a_off, a_col, nullptr}, Csr<T>{b_off, b_col, nullptr}, \
                                  rows, count, lo, hi, work, size_lo, size_hi, parts, nnz,      \
                                  nullptr, nullptr, nullptr, &meta[queue], meta);               \
    }
SYM_BLOCK_HASH_ENTRY(spg_sym_block_hash, float)

#define NUM_BLOCK_HASH_ENTRY(NAME, T)                                                           \
    extern "C" __global__ void __launch_bounds__(BLOCK_WARPS * 32)                             \
        NAME(const u64* a_off, const u32* a_col, const T* a_val, const u64* b_off,              \
             const u32* b_col, const T* b_val, const u32* rows, u32 count, const u32* lo,       \
             const u32* hi, u32 size_lo, u32 size_hi, u32 parts, const u64* c_off, u32* c_col,  \
             T* c_val, u32 queue, u64* meta) {                                                  \
        block_hash_rows<T, true>(Csr<T>{a_off, a_col, a_val}, Csr<T>{b_off, b_col, b_val}, rows, \
                                 count, lo, hi, nullptr, size_lo, size_hi, parts, nullptr,      \
                                 c_off, c_col, c_val, &meta[queue], meta);                      \
    }
NUM_BLOCK_HASH_ENTRY(spg_num_block_hash_f32, float)
NUM_BLOCK_HASH_ENTRY(spg_num_block_hash_f64, double)
