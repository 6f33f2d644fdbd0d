// NearestPairs for the CUDA backend: exact nearest / k-nearest neighbours of
// each point of A among the points of B, and the k closest such pairs.
// Compiled at run time by NVRTC (no headers needed).
//
// Grid on B, built on the device with no host round trip:
//  1. np_bbox: B's bounding box (atomicMax on order-preserving integer codes, so
//     min/max reduce exactly and deterministically).
//  2. np_coarse_count + np_sumsq: counts of B on a 128^3 grid over the box and
//     S2 = sum of squared counts. S2 / (|B| * coarse volume) is the density seen
//     by an average point of B, so clustered data gets fine cells where it is
//     dense (a grid sized by the bounding box would put hundreds of points in a
//     cluster's cells).
//  3. np_finalize: cell side h = cbrt(target / density), grid dims (<= 2^20 per
//     axis), all kept in a Grid struct in device memory that later kernels read.
//  4. Cells are hashed (open addressing, linear probing, load <= 1/2): only
//     occupied cells cost memory however fine the grid. np_insert counts points
//     per cell, np_assign_starts gives each cell a contiguous range (atomic
//     bump: the order of cells is irrelevant, only contiguity), np_scatter_b
//     writes B as float4 (x, y, z, original index) grouped by cell.
// Queries: A is ordered by the Morton code of its coarse cell (count, scan,
// scatter) so that a warp's queries visit the same cells. Each query searches
// rings of cells (Chebyshev distance r = 0, 1, 2, ...) around its own cell,
// clipped to the grid; a cell is opened only if its box could hold a point
// within the current bound, and the search stops when the ring's lower bound
// exceeds it. Bounds are made conservative (slack for the rounding of cell
// coordinates and of f32 distances), so the result is exact: the minimum of
// d2 = dx*dx + dy*dy + dz*dz computed in f32 in that order without contraction
// (the __f*_rn intrinsics), ties to the smaller index of B.
// Top-k of the pairs: a histogram of the high 16 bits of d2 finds the bin that
// holds the k-th smallest; every pair at or below it is compacted and the host
// sorts those few candidates by (d2, i).

#define INFINITY __int_as_float(0x7f800000)

typedef unsigned int u32;
typedef unsigned long long u64;

#define COARSE_BITS 7
#define COARSE (1 << COARSE_BITS)
#define MAX_CELLS_AXIS (1 << 20)

struct Grid {
    u32 cand_count;     // top-k: candidates compacted (word 0: the host reads it)
    u32 total;          // bump allocator of cell ranges
    u32 sel_bin;        // top-k: the selected histogram bin
    u32 pad0;
    u32 bmax_enc[3];    // atomicMax of enc(max)
    u32 bmin_nenc[3];   // atomicMax of ~enc(min)
    u64 s2;             // sum of squared coarse counts
    float lo[3];        // bounding box low corner
    float cinv[3];      // 1 / coarse cell side per axis
    float h, inv_h;     // fine cell side and its inverse
    float eps_base;     // slack for bounds (coordinate magnitude, cell side)
    float target;       // points per cell aimed at
    int g[3];           // fine grid dims
    u32 table_mask;     // hash table size - 1
};

struct Slot {  // 16 bytes: one vector load per probe
    u64 key1;  // cell key + 1 (0 = empty)
    u32 start;
    u32 count;
};

__device__ __forceinline__ u32 enc(float f) {
    const u32 b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float dec(u32 e) {
    return __uint_as_float((e & 0x80000000u) ? (e & 0x7fffffffu) : ~e);
}

__device__ __forceinline__ float dist2(float ax, float ay, float az, float bx, float by, float bz) {
    const float dx = __fsub_rn(ax, bx), dy = __fsub_rn(ay, by), dz = __fsub_rn(az, bz);
    return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}

__device__ __forceinline__ u64 mix64(u64 x) {
    x ^= x >> 31; x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27; x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

__device__ __forceinline__ u32 spread3(u32 v) {  // 7 bits -> every third bit
    v &= 0x7f;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

__device__ __forceinline__ int coarse_axis(float p, float lo, float cinv) {
    float c = floorf((p - lo) * cinv);
    c = fminf(fmaxf(c, 0.f), (float)(COARSE - 1));
    return (int)c;
}

__device__ __forceinline__ u32 coarse_morton(const Grid* G, float x, float y, float z) {
    const int cx = coarse_axis(x, G->lo[0], G->cinv[0]);
    const int cy = coarse_axis(y, G->lo[1], G->cinv[1]);
    const int cz = coarse_axis(z, G->lo[2], G->cinv[2]);
    return spread3(cx) | (spread3(cy) << 1) | (spread3(cz) << 2);
}

// ---------------------------------------------------------------- grid build

extern "C" __global__ void np_bbox_f32(const float* __restrict__ P, u32 n, Grid* G) {
    float mn[3] = {INFINITY, INFINITY, INFINITY}, mx[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            const float v = P[(u64)i * 3 + a];
            mn[a] = fminf(mn[a], v);
            mx[a] = fmaxf(mx[a], v);
        }
    }
#pragma unroll
    for (int a = 0; a < 3; ++a) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            mn[a] = fminf(mn[a], __shfl_xor_sync(0xffffffffu, mn[a], o));
            mx[a] = fmaxf(mx[a], __shfl_xor_sync(0xffffffffu, mx[a], o));
        }
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            atomicMax(&G->bmax_enc[a], enc(mx[a]));
            atomicMax(&G->bmin_nenc[a], ~enc(mn[a]));
        }
    }
}

// Sets the coarse grid from the box (one thread).
extern "C" __global__ void np_coarse_setup_f32(Grid* G, float target, u32 table_mask) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    float ext[3], maxext = 0.f;
    for (int a = 0; a < 3; ++a) {
        G->lo[a] = dec(~G->bmin_nenc[a]);
        ext[a] = dec(G->bmax_enc[a]) - G->lo[a];
        maxext = fmaxf(maxext, ext[a]);
    }
    for (int a = 0; a < 3; ++a) {
        // A flat axis still gets a positive side (cells then span it whole).
        const float e = fmaxf(ext[a], fmaxf(maxext * 1e-3f, 1e-30f));
        G->cinv[a] = (float)COARSE / (e * 1.0001f);
    }
    G->target = target;
    G->table_mask = table_mask;
}

extern "C" __global__ void np_coarse_count_f32(const float* __restrict__ P, u32 n, const Grid* G,
                                               u32* __restrict__ counts) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 m = coarse_morton(G, P[(u64)i * 3], P[(u64)i * 3 + 1], P[(u64)i * 3 + 2]);
    atomicAdd(&counts[m], 1u);
}

extern "C" __global__ void np_sumsq(const u32* __restrict__ counts, u32 n, Grid* G) {
    u64 s = 0;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const u64 c = counts[i];
        s += c * c;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0 && s) atomicAdd(&G->s2, s);
}

extern "C" __global__ void np_finalize_f32(Grid* G, u32 n) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    float ext[3], maxext = 0.f, maxabs = 0.f;
    for (int a = 0; a < 3; ++a) {
        ext[a] = dec(G->bmax_enc[a]) - G->lo[a];
        maxext = fmaxf(maxext, ext[a]);
        maxabs = fmaxf(maxabs, fmaxf(fabsf(G->lo[a]), fabsf(dec(G->bmax_enc[a]))));
    }
    // Density around an average point of B: S2 / (n * coarse cell volume),
    // the coarse side being 1 / cinv.
    const double vc = (1.0 / G->cinv[0]) * (1.0 / G->cinv[1]) * (1.0 / G->cinv[2]);
    const double dens = (double)G->s2 / ((double)n * vc);
    double h = cbrt((double)G->target / dens);
    // Keep at most 2^20 cells per axis (keys fit 60 bits) and h > 0.
    h = fmax(h, (double)maxext / (double)(MAX_CELLS_AXIS - 2));
    if (!(h > 0.0) || !isfinite(h)) h = 1.0;
    if (maxext == 0.f) h = 1.0;
    float hf = (float)h;
    for (int a = 0; a < 3; ++a) {
        long long ga = (long long)floor((double)ext[a] / (double)hf) + 1;
        if (ga > MAX_CELLS_AXIS) ga = MAX_CELLS_AXIS;
        G->g[a] = (int)ga;
    }
    G->h = hf;
    G->inv_h = 1.0f / hf;
    // Slack: a point may sit ~1 ulp of its coordinates outside the box of the
    // cell it was hashed to; 1e-4 h covers the rounding of (p - lo) * inv_h.
    G->eps_base = 4e-7f * maxabs + 1e-4f * hf;
}

__device__ __forceinline__ int cell_axis_clamped(float p, float lo, float inv_h, int g) {
    const float c = floorf((p - lo) * inv_h);
    return (int)fminf(fmaxf(c, 0.f), (float)(g - 1));
}

__device__ __forceinline__ u64 cell_key(const Grid* G, int x, int y, int z) {
    return (u64)x + (u64)G->g[0] * ((u64)y + (u64)G->g[1] * (u64)z);
}

__device__ __forceinline__ u64 b_key(const Grid* G, float x, float y, float z) {
    const int cx = cell_axis_clamped(x, G->lo[0], G->inv_h, G->g[0]);
    const int cy = cell_axis_clamped(y, G->lo[1], G->inv_h, G->g[1]);
    const int cz = cell_axis_clamped(z, G->lo[2], G->inv_h, G->g[2]);
    return cell_key(G, cx, cy, cz);
}

extern "C" __global__ void np_insert_f32(const float* __restrict__ P, u32 n, const Grid* G,
                                         Slot* __restrict__ table) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u64 key1 = b_key(G, P[(u64)i * 3], P[(u64)i * 3 + 1], P[(u64)i * 3 + 2]) + 1;
    const u32 mask = G->table_mask;
    u32 s = (u32)mix64(key1) & mask;
    while (true) {
        const u64 prev = atomicCAS(&table[s].key1, 0ull, key1);
        if (prev == 0ull || prev == key1) {
            atomicAdd(&table[s].count, 1u);
            return;
        }
        s = (s + 1) & mask;
    }
}

extern "C" __global__ void np_assign_starts(Slot* __restrict__ table, u32 size, Grid* G) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= size) return;
    const u32 c = table[s].count;
    if (c == 0) return;
    table[s].start = atomicAdd(&G->total, c);
    table[s].count = 0;  // refilled by the scatter
}

__device__ __forceinline__ int find_slot(const Slot* __restrict__ table, u32 mask, u64 key1, uint4* out) {
    u32 s = (u32)mix64(key1) & mask;
    while (true) {
        const uint4 e = __ldg(reinterpret_cast<const uint4*>(table) + s);
        const u64 k = (u64)e.x | ((u64)e.y << 32);
        if (k == key1) { *out = e; return (int)s; }
        if (k == 0ull) return -1;
        s = (s + 1) & mask;
    }
}

extern "C" __global__ void np_scatter_b_f32(const float* __restrict__ P, u32 n, const Grid* G,
                                            Slot* __restrict__ table, float4* __restrict__ sorted) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = P[(u64)i * 3], y = P[(u64)i * 3 + 1], z = P[(u64)i * 3 + 2];
    const u64 key1 = b_key(G, x, y, z) + 1;
    const u32 mask = G->table_mask;
    u32 s = (u32)mix64(key1) & mask;
    while (table[s].key1 != key1) s = (s + 1) & mask;
    const u32 pos = table[s].start + atomicAdd(&table[s].count, 1u);
    sorted[pos] = make_float4(x, y, z, __uint_as_float(i));
}

// ------------------------------------------------------- query ordering (A)

extern "C" __global__ void np_order_a_f32(const float* __restrict__ P, u32 n, const Grid* G,
                                          u32* __restrict__ cursor, u32* __restrict__ order) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 m = coarse_morton(G, P[(u64)i * 3], P[(u64)i * 3 + 1], P[(u64)i * 3 + 2]);
    order[atomicAdd(&cursor[m], 1u)] = i;
}

// Exclusive scan of u32 (in place), three launches: 2048 elements per block.
#define SCAN_T 256
#define SCAN_PER 8
#define SCAN_BLOCK (SCAN_T * SCAN_PER)

__device__ __forceinline__ u32 block_excl_scan(u32 v, u32* total) {
    __shared__ u32 warp_sums[32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    u32 x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[w] = x;
    __syncthreads();
    if (w == 0) {
        const int nw = blockDim.x >> 5;
        u32 s = lane < nw ? warp_sums[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u32 y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += y;
        }
        if (lane < nw) warp_sums[lane] = s;  // inclusive
    }
    __syncthreads();
    const u32 before = (w > 0 ? warp_sums[w - 1] : 0) + x - v;
    *total = warp_sums[(blockDim.x >> 5) - 1];
    __syncthreads();
    return before;
}

extern "C" __global__ void scan_local_u32(u32* __restrict__ data, u32 n, u32* __restrict__ block_sums) {
    const u32 base = blockIdx.x * SCAN_BLOCK + threadIdx.x * SCAN_PER;
    u32 v[SCAN_PER], s = 0;
#pragma unroll
    for (int q = 0; q < SCAN_PER; ++q) {
        v[q] = base + q < n ? data[base + q] : 0;
        s += v[q];
    }
    u32 total;
    u32 run = block_excl_scan(s, &total);
#pragma unroll
    for (int q = 0; q < SCAN_PER; ++q) {
        if (base + q < n) data[base + q] = run;
        run += v[q];
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(1024) scan_top_u32(u32* __restrict__ sums, u32 n) {  // one block of 1024
    u32 carry = 0;
    for (u32 base = 0; base < n; base += blockDim.x) {
        const u32 i = base + threadIdx.x;
        const u32 v = i < n ? sums[i] : 0;
        u32 total;
        const u32 e = block_excl_scan(v, &total);
        if (i < n) sums[i] = carry + e;
        carry += total;
    }
}

extern "C" __global__ void scan_add_u32(u32* __restrict__ data, u32 n, const u32* __restrict__ sums) {
    const u32 add = sums[blockIdx.x];
    const u32 base = blockIdx.x * SCAN_BLOCK;
    for (u32 q = threadIdx.x; q < SCAN_BLOCK; q += blockDim.x)
        if (base + q < n) data[base + q] += add;
}

// ------------------------------------------------------------------ queries

struct Query {
    float x, y, z;
    int cx, cy, cz;    // own cell (may lie outside the grid)
    float margin;      // distance from q to its own cell's faces (0 if clamped)
    float eps;         // slack on every distance bound
};

__device__ __forceinline__ Query make_query(const Grid* G, float x, float y, float z) {
    Query q;
    q.x = x; q.y = y; q.z = z;
    const float p[3] = {x, y, z};
    int c[3];
    float margin = INFINITY;
    bool clamped = false;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        float f = floorf((p[a] - G->lo[a]) * G->inv_h);
        if (f < -4194304.f) { f = -4194304.f; clamped = true; }
        if (f > 4194304.f) { f = 4194304.f; clamped = true; }
        c[a] = (int)f;
        const float lo = G->lo[a] + f * G->h;
        margin = fminf(margin, fminf(p[a] - lo, lo + G->h - p[a]));
    }
    q.cx = c[0]; q.cy = c[1]; q.cz = c[2];
    const float mag = fmaxf(fabsf(x), fmaxf(fabsf(y), fabsf(z)));
    q.eps = G->eps_base + 4e-7f * mag;
    q.margin = clamped ? 0.f : fmaxf(margin, 0.f);
    return q;
}

// Lower bound of the squared distance from q to any point hashed to cell
// (x, y, z), and whether a point there could beat `bound` (ties included).
__device__ __forceinline__ bool cell_may_hold(const Grid* G, const Query& q, int x, int y, int z,
                                              float bound) {
    const float h = G->h;
    float lb = 0.f;
    const int c[3] = {x, y, z};
    const float p[3] = {q.x, q.y, q.z};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const float lo = G->lo[a] + (float)c[a] * h;
        float d = fmaxf(lo - p[a], p[a] - (lo + h));
        d = fmaxf(d - q.eps, 0.f);
        lb += d * d;
    }
    return lb * 0.99999f <= bound;
}

// Lower bound of the squared distance to anything in ring r or beyond.
__device__ __forceinline__ float ring_bound(const Grid* G, const Query& q, int r) {
    if (r <= 0) return 0.f;
    const float d = fmaxf((float)(r - 1) * G->h + q.margin - q.eps, 0.f);
    return d * d * 0.99999f;
}

// Visits every cell at Chebyshev distance exactly r from q's cell, inside the
// grid, that may beat the current bound; V is the visitor (points of a cell).
template <class V>
__device__ __forceinline__ void visit_ring(const Grid* G, const Slot* __restrict__ table,
                                           const float4* __restrict__ pts, const Query& q, int r,
                                           V& vis) {
    const int z0 = max(q.cz - r, 0), z1 = min(q.cz + r, G->g[2] - 1);
    const int y0 = max(q.cy - r, 0), y1 = min(q.cy + r, G->g[1] - 1);
    const int x0 = max(q.cx - r, 0), x1 = min(q.cx + r, G->g[0] - 1);
    const u32 mask = G->table_mask;
    for (int z = z0; z <= z1; ++z) {
        const bool zface = (z == q.cz - r) || (z == q.cz + r);
        for (int y = y0; y <= y1; ++y) {
            const bool face = zface || (y == q.cy - r) || (y == q.cy + r);
            const int step = (face || r == 0) ? 1 : 2 * r;
            int x = face ? x0 : q.cx - r;
            for (; x <= x1; x += step) {
                if (x < x0) continue;
                if (!cell_may_hold(G, q, x, y, z, vis.bound())) continue;
                uint4 e;
                if (find_slot(table, mask, cell_key(G, x, y, z) + 1, &e) < 0) continue;
                const u32 start = e.z, cnt = e.w;
                for (u32 t = 0; t < cnt; ++t) {
                    const float4 b = __ldg(pts + start + t);
                    vis.offer(dist2(q.x, q.y, q.z, b.x, b.y, b.z), __float_as_uint(b.w));
                }
            }
        }
    }
}

// Ring distance from q's cell to the grid box: rings below it are empty.
__device__ __forceinline__ int first_ring(const Grid* G, const Query& q) {
    int r = 0;
    const int c[3] = {q.cx, q.cy, q.cz};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (c[a] < 0) r = max(r, -c[a]);
        if (c[a] >= G->g[a]) r = max(r, c[a] - (G->g[a] - 1));
    }
    return r;
}

__device__ __forceinline__ int last_ring(const Grid* G, const Query& q) {
    int r = 0;
    const int c[3] = {q.cx, q.cy, q.cz};
#pragma unroll
    for (int a = 0; a < 3; ++a) r = max(r, max(c[a], G->g[a] - 1 - c[a]));
    return r;
}

template <class V>
__device__ __forceinline__ void search(const Grid* G, const Slot* __restrict__ table,
                                       const float4* __restrict__ pts, const Query& q, V& vis) {
    const int r_end = last_ring(G, q);
    for (int r = first_ring(G, q); r <= r_end; ++r) {
        if (ring_bound(G, q, r) > vis.bound()) break;
        visit_ring(G, table, pts, q, r, vis);
    }
}

struct Best1 {
    float d2;
    u32 j;
    __device__ float bound() const { return d2; }
    __device__ void offer(float d, u32 idx) {
        if (d < d2 || (d == d2 && idx < j)) { d2 = d; j = idx; }
    }
};

struct Neighbor { u32 index; float d2; };

extern "C" __global__ void np_nearest_f32(const float* __restrict__ A, u32 n, const u32* __restrict__ order,
                                          const Grid* __restrict__ G, const Slot* __restrict__ table,
                                          const float4* __restrict__ pts, Neighbor* __restrict__ out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = order[t];
    const Query q = make_query(G, A[(u64)i * 3], A[(u64)i * 3 + 1], A[(u64)i * 3 + 2]);
    Best1 b;
    b.d2 = INFINITY;
    b.j = 0xffffffffu;
    search(G, table, pts, q, b);
    Neighbor r;
    r.index = b.j;
    r.d2 = b.d2;
    out[i] = r;
}

// k nearest: a sorted list of (d2, j), in local memory for k <= KMAX, else in
// the output rows themselves (global memory; slower, same result).
template <int KMAX>
struct BestK {
    float d[KMAX];
    u32 j[KMAX];
    int k, n;
    __device__ float bound() const { return n < k ? INFINITY : d[k - 1]; }
    __device__ void offer(float dd, u32 idx) {
        if (n == k && !(dd < d[k - 1] || (dd == d[k - 1] && idx < j[k - 1]))) return;
        int p = n < k ? n++ : k - 1;
        while (p > 0 && (dd < d[p - 1] || (dd == d[p - 1] && idx < j[p - 1]))) {
            d[p] = d[p - 1];
            j[p] = j[p - 1];
            --p;
        }
        d[p] = dd;
        j[p] = idx;
    }
};

struct BestKGlobal {
    Neighbor* row;
    int k, n;
    __device__ float bound() const { return n < k ? INFINITY : row[k - 1].d2; }
    __device__ void offer(float dd, u32 idx) {
        if (n == k && !(dd < row[k - 1].d2 || (dd == row[k - 1].d2 && idx < row[k - 1].index))) return;
        int p = n < k ? n++ : k - 1;
        while (p > 0 && (dd < row[p - 1].d2 || (dd == row[p - 1].d2 && idx < row[p - 1].index))) {
            row[p] = row[p - 1];
            --p;
        }
        Neighbor e;
        e.index = idx;
        e.d2 = dd;
        row[p] = e;
    }
};

#define KNN_LOCAL 32

extern "C" __global__ void np_knn_f32(const float* __restrict__ A, u32 n, const u32* __restrict__ order,
                                      const Grid* __restrict__ G, const Slot* __restrict__ table,
                                      const float4* __restrict__ pts, u32 k, Neighbor* __restrict__ out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = order[t];
    const Query q = make_query(G, A[(u64)i * 3], A[(u64)i * 3 + 1], A[(u64)i * 3 + 2]);
    Neighbor* row = out + (u64)i * k;
    if (k <= KNN_LOCAL) {
        BestK<KNN_LOCAL> b;
        b.k = (int)k;
        b.n = 0;
        search(G, table, pts, q, b);
        for (int p = 0; p < b.n; ++p) {
            Neighbor e;
            e.index = b.j[p];
            e.d2 = b.d[p];
            row[p] = e;
        }
    } else {
        BestKGlobal b;
        b.row = row;
        b.k = (int)k;
        b.n = 0;
        search(G, table, pts, q, b);
    }
}

// ------------------------------------------------------------------- top-k

extern "C" __global__ void np_hist_f32(const Neighbor* __restrict__ nb, u32 n, u32* __restrict__ hist) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&hist[__float_as_uint(nb[i].d2) >> 16], 1u);
}

// One block of 1024 threads over 65536 bins: the smallest bin b with
// count(bins <= b) >= k (the last bin if there is none).
extern "C" __global__ void __launch_bounds__(1024) np_select(const u32* __restrict__ hist, u32 k, Grid* G) {
    const int per = 65536 / 1024;
    const u32 base = threadIdx.x * per;
    u32 s = 0;
    for (int q = 0; q < per; ++q) s += hist[base + q];
    u32 total;
    const u32 before = block_excl_scan(s, &total);
    if (threadIdx.x == 0 && total < k) G->sel_bin = 65535u;
    if (before < k && before + s >= k) {
        u32 run = before;
        for (int q = 0; q < per; ++q) {
            run += hist[base + q];
            if (run >= k) { G->sel_bin = base + q; break; }
        }
    }
}

struct Cand { float d2; u32 a; u32 b; };

extern "C" __global__ void np_compact_f32(const Neighbor* __restrict__ nb, u32 n, Grid* G,
                                          Cand* __restrict__ cand) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Neighbor e = nb[i];
    if ((__float_as_uint(e.d2) >> 16) <= G->sel_bin) {
        const u32 p = atomicAdd(&G->cand_count, 1u);
        Cand c;
        c.d2 = e.d2;
        c.a = i;
        c.b = e.index;
        cand[p] = c;
    }
}
