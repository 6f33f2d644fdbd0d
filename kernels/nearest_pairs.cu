// NearestPairs for the CUDA backend: exact nearest / k-nearest neighbours of
// each point of A among the points of B, the k closest such pairs, and every
// pair within a radius. Compiled at run time by NVRTC (no headers needed).
//
// Every kernel exists for R = float and R = double (entry points *_f32 and
// *_f64, one `*_ENTRY` line each, so that a call compiles only the kernels
// it runs, in parallel). Coordinates, grid parameters and distances are all
// in R: an f64 call never rounds a coordinate to f32.
//
// Grid on B, built on the device with no host round trip:
//  1. np_bbox: B's bounding box (atomicMax on order-preserving integer codes, so
//     min/max reduce exactly and deterministically).
//  2. np_coarse_count + np_sumsq: counts of B on a 128^3 grid over the box and
//     S2 = sum of squared counts. S2 / (|B| * coarse volume) is the density seen
//     by an average point of B, so clustered data gets fine cells where it is
//     dense (a grid sized by the bounding box would put hundreds of points in a
//     cluster's cells).
//  3. np_finalize: cell side h = cbrt(target / density), at least min_h (a
//     radius search asks for r / 2, so that a ball spans at most a few cells
//     per axis), at most twice B's extent, and at most 2^20 cells per axis;
//     kept in a Grid struct in device memory that later kernels read.
//  4. Cells are hashed (open addressing, linear probing, load <= 1/2): only
//     occupied cells cost memory however fine the grid. np_insert counts points
//     per cell, np_assign_starts gives each cell a contiguous range (atomic
//     bump: the order of cells is irrelevant, only contiguity), np_scatter_b
//     writes B as (x, y, z, original index) grouped by cell.
// Queries: A is ordered by the Morton code of its coarse cell (count, scan,
// scatter) so that a warp's queries visit the same cells. Each query searches
// rings of cells (Chebyshev distance r = 0, 1, 2, ...) around its own cell,
// clipped to the grid; a cell is opened only if its box could hold a point
// within the current bound, and the search stops when the ring's lower bound
// exceeds it. Bounds are made conservative (slack for the rounding of cell
// coordinates and of distances: EPS_MAG units of a coordinate's magnitude
// plus 1e-4 h on every box, SHRINK on every squared bound; both scaled to the
// type's rounding unit), so the result is exact: the minimum of
// d2 = dx*dx + dy*dy + dz*dz computed in R in that order without contraction
// (the __f*_rn / __d*_rn intrinsics), ties to the smaller index of B.
// Top-k of the pairs: a histogram of the high 16 bits of d2 (as f32, rounded
// down for f64: monotone) finds the bin that holds the k-th smallest; every
// pair at or below it is compacted and the host sorts those few candidates by
// (d2, i).
//
// Radius search (within r; self pairs keep j > i): the grid is built with
// h >= r / 2, and each query visits the cells of its ball's bounding box
// (at most ~6 per axis), each cell first tested against the ball with the
// same conservative box bounds. Which cells the box spans is computed with
// the same rounded operations as a point's own cell, from q -/+ (r + slack),
// so rounding is monotone and every point whose computed d2 <= r2 lies in a
// visited cell. np_radius_count counts each row (a cell entirely inside the
// ball counts whole, so a huge r costs cells, not points) and marks rows
// longer than SHORT_ROW; the host scans the counts into u64 offsets, reads
// the total and checks it against max_pairs before allocating; np_radius_fill
// writes each row, sorted by (d2, j) in registers when it has at most
// SHORT_ROW entries, as found otherwise. Long rows are sorted afterwards in
// TILE-element tiles (a block's bitonic sort in shared memory), then merged
// pairwise (each element's place is its rank in its own run plus its rank in
// the partner run: keys (d2, j) are distinct within a row), all rows' tiles
// in one launch per doubling of the run length.

typedef unsigned int u32;
typedef unsigned long long u64;

#define COARSE_BITS 7
#define COARSE (1 << COARSE_BITS)
#define MAX_CELLS_AXIS (1 << 20)
// Grid cells per point of B at most, over the coarse box's volume (finalize).
#define MAX_CELLS_PER_POINT 8.0
// Rows of a radius search with at most SHORT_ROW pairs are sorted in registers.
#define SHORT_ROW 32
// Longer rows: tiles of TILE pairs, one block of TILE_THREADS each.
#define TILE 2048
#define TILE_THREADS 256

// ------------------------------------------------------- the coordinate type

template <typename R> struct Real;

template <> struct Real<float> {
    typedef u32 Enc;
    // Slack of box bounds per unit of coordinate magnitude (~7 rounding units).
    static constexpr float EPS_MAG = 4e-7f;
    // Squared lower bounds are scaled down by SHRINK, upper bounds up by 1 + SLACK.
    static constexpr float SHRINK = 0.99999f;
    static constexpr float SLACK = 1e-5f;
    // Smallest coarse extent of a flat axis.
    static constexpr float TINY_EXT = 1e-30f;
    static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
    static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
    static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
    static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
    static __device__ __forceinline__ float floor_(float x) { return floorf(x); }
    static __device__ __forceinline__ float min_(float a, float b) { return fminf(a, b); }
    static __device__ __forceinline__ float max_(float a, float b) { return fmaxf(a, b); }
    static __device__ __forceinline__ float abs_(float x) { return fabsf(x); }
    static __device__ __forceinline__ Enc enc(float f) {
        const u32 b = __float_as_uint(f);
        return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    }
    static __device__ __forceinline__ float dec(Enc e) {
        return __uint_as_float((e & 0x80000000u) ? (e & 0x7fffffffu) : ~e);
    }
    // Histogram bin of a distance (>= 0): its high 16 bits.
    static __device__ __forceinline__ u32 bin(float d2) { return __float_as_uint(d2) >> 16; }
};

template <> struct Real<double> {
    typedef u64 Enc;
    static constexpr double EPS_MAG = 2e-15;  // ~18 rounding units
    static constexpr double SHRINK = 1.0 - 1e-12;
    static constexpr double SLACK = 1e-12;
    static constexpr double TINY_EXT = 1e-300;
    static __device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
    static __device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
    static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
    static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
    static __device__ __forceinline__ double floor_(double x) { return floor(x); }
    static __device__ __forceinline__ double min_(double a, double b) { return fmin(a, b); }
    static __device__ __forceinline__ double max_(double a, double b) { return fmax(a, b); }
    static __device__ __forceinline__ double abs_(double x) { return fabs(x); }
    static __device__ __forceinline__ Enc enc(double f) {
        const u64 b = (u64)__double_as_longlong(f);
        return (b >> 63) ? ~b : (b | (1ull << 63));
    }
    static __device__ __forceinline__ double dec(Enc e) {
        return __longlong_as_double((long long)((e >> 63) ? (e & ~(1ull << 63)) : ~e));
    }
    // Rounded down to f32 (monotone), then the f32 bins.
    static __device__ __forceinline__ u32 bin(double d2) {
        return __float_as_uint(__double2float_rd(d2)) >> 16;
    }
};

// The part of the grid parameters the untyped kernels use, first in both
// types (word 0: the host reads cand_count).
struct GridHead {
    u32 cand_count;     // top-k: candidates compacted
    u32 total;          // bump allocator of cell ranges
    u32 sel_bin;        // top-k: the selected histogram bin
    u32 pad0;
    u64 s2;             // sum of squared coarse counts
};

template <typename R>
struct Grid : GridHead {
    typename Real<R>::Enc bmax_enc[3];   // atomicMax of enc(max)
    typename Real<R>::Enc bmin_nenc[3];  // atomicMax of ~enc(min)
    R lo[3];            // bounding box low corner
    R cinv[3];          // 1 / coarse cell side per axis
    R h, inv_h;         // fine cell side and its inverse
    R eps_base;         // slack for bounds (coordinate magnitude, cell side)
    float target;       // points per cell aimed at
    int g[3];           // fine grid dims
    u32 table_mask;     // hash table size - 1
};
// The host reserves 256 bytes (GRID_WORDS).
static_assert(sizeof(Grid<double>) <= 256, "Grid exceeds its 256 bytes");

struct Slot {  // 16 bytes: one vector load per probe
    u64 key1;  // cell key + 1 (0 = empty)
    u32 start;
    u32 count;
};

// A point of B grouped by cell: coordinates and its index in B (16 / 32 bytes).
template <typename R> struct Pt;
template <> struct __align__(16) Pt<float> { float x, y, z; u32 j; };
template <> struct __align__(16) Pt<double> { double x, y, z; u32 j; u32 pad; };

__device__ __forceinline__ Pt<float> load_pt(const Pt<float>* p) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    Pt<float> r;
    r.x = v.x; r.y = v.y; r.z = v.z; r.j = __float_as_uint(v.w);
    return r;
}
__device__ __forceinline__ Pt<double> load_pt(const Pt<double>* p) {
    const double2 a = __ldg(reinterpret_cast<const double2*>(p));
    const double2 b = __ldg(reinterpret_cast<const double2*>(p) + 1);
    Pt<double> r;
    r.x = a.x; r.y = a.y; r.z = b.x; r.j = (u32)__double_as_longlong(b.y); r.pad = 0;
    return r;
}

template <typename R>
__device__ __forceinline__ R dist2(R ax, R ay, R az, R bx, R by, R bz) {
    typedef Real<R> T;
    const R dx = T::sub(ax, bx), dy = T::sub(ay, by), dz = T::sub(az, bz);
    return T::add(T::add(T::mul(dx, dx), T::mul(dy, dy)), T::mul(dz, dz));
}

// The order of radius rows and of knn lists: (d2, j).
template <typename R>
__device__ __forceinline__ bool key_less(R da, u32 ja, R db, u32 jb) {
    return da < db || (da == db && ja < jb);
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

template <typename R>
__device__ __forceinline__ int coarse_axis(R p, R lo, R cinv) {
    typedef Real<R> T;
    R c = T::floor_((p - lo) * cinv);
    c = T::min_(T::max_(c, (R)0), (R)(COARSE - 1));
    return (int)c;
}

template <typename R>
__device__ __forceinline__ u32 coarse_morton(const Grid<R>* G, R x, R y, R z) {
    const int cx = coarse_axis(x, G->lo[0], G->cinv[0]);
    const int cy = coarse_axis(y, G->lo[1], G->cinv[1]);
    const int cz = coarse_axis(z, G->lo[2], G->cinv[2]);
    return spread3(cx) | (spread3(cy) << 1) | (spread3(cz) << 2);
}

// ---------------------------------------------------------------- grid build

template <typename R>
__device__ __forceinline__ void bbox(const R* __restrict__ P, u32 n, Grid<R>* G) {
    typedef Real<R> T;
    R mn[3] = {T::inf(), T::inf(), T::inf()}, mx[3] = {-T::inf(), -T::inf(), -T::inf()};
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            const R v = P[(u64)i * 3 + a];
            mn[a] = T::min_(mn[a], v);
            mx[a] = T::max_(mx[a], v);
        }
    }
#pragma unroll
    for (int a = 0; a < 3; ++a) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            mn[a] = T::min_(mn[a], __shfl_xor_sync(0xffffffffu, mn[a], o));
            mx[a] = T::max_(mx[a], __shfl_xor_sync(0xffffffffu, mx[a], o));
        }
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            atomicMax(&G->bmax_enc[a], T::enc(mx[a]));
            atomicMax(&G->bmin_nenc[a], ~T::enc(mn[a]));
        }
    }
}

// Sets the coarse grid from the box (one thread).
template <typename R>
__device__ __forceinline__ void coarse_setup(Grid<R>* G, float target, u32 table_mask) {
    typedef Real<R> T;
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    R ext[3], maxext = 0;
    for (int a = 0; a < 3; ++a) {
        G->lo[a] = T::dec(~G->bmin_nenc[a]);
        ext[a] = T::dec(G->bmax_enc[a]) - G->lo[a];
        maxext = T::max_(maxext, ext[a]);
    }
    for (int a = 0; a < 3; ++a) {
        // A flat axis still gets a positive side (cells then span it whole).
        const R e = T::max_(ext[a], T::max_(maxext * (R)1e-3, T::TINY_EXT));
        G->cinv[a] = (R)COARSE / (e * (R)1.0001);
    }
    G->target = target;
    G->table_mask = table_mask;
}

template <typename R>
__device__ __forceinline__ void coarse_count(const R* __restrict__ P, u32 n, const Grid<R>* G,
                                             u32* __restrict__ counts) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 m = coarse_morton(G, P[(u64)i * 3], P[(u64)i * 3 + 1], P[(u64)i * 3 + 2]);
    atomicAdd(&counts[m], 1u);
}

__device__ __forceinline__ void sumsq(const u32* __restrict__ counts, u32 n, GridHead* G) {
    u64 s = 0;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const u64 c = counts[i];
        s += c * c;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0 && s) atomicAdd(&G->s2, s);
}

template <typename R>
__device__ __forceinline__ void finalize(Grid<R>* G, u32 n, R min_h) {
    typedef Real<R> T;
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    R ext[3], maxext = 0, maxabs = 0;
    for (int a = 0; a < 3; ++a) {
        ext[a] = T::dec(G->bmax_enc[a]) - G->lo[a];
        maxext = T::max_(maxext, ext[a]);
        maxabs = T::max_(maxabs, T::max_(T::abs_(G->lo[a]), T::abs_(T::dec(G->bmax_enc[a]))));
    }
    // Density around an average point of B: S2 / (n * coarse cell volume),
    // the coarse side being 1 / cinv, measured in units of the largest
    // extent s (an f64 box near 2^510 has a volume beyond f64's range).
    const double s = maxext > 0 ? (double)maxext : 1.0;
    const double vc = (1.0 / ((double)G->cinv[0] * s)) * (1.0 / ((double)G->cinv[1] * s)) *
                      (1.0 / ((double)G->cinv[2] * s));
    const double dens = (double)G->s2 / ((double)n * vc);
    double h = cbrt((double)G->target / dens) * s;
    // h follows the density where B's points are (two coarse sides for
    // isolated points, however few), so on clustered or sparse B a query
    // far from them walks up to (distance / h)^3 empty cells: 3,000 queries
    // spread over a box holding five tight clusters of 15,000 points kept an
    // H200 busy for minutes. Floor, as in the wgpu shader: at most
    // MAX_CELLS_PER_POINT cells per point over the coarse box's volume (in
    // units of s^3, as vc). Any h keeps the search exact.
    const double box = (double)COARSE * (double)COARSE * (double)COARSE * vc;
    h = fmax(h, cbrt(box / (MAX_CELLS_PER_POINT * (double)n)) * s);
    if (!(h > 0.0) || !isfinite(h)) h = s;
    // A radius search asks for cells of at least r / 2; a cell wider than
    // twice B's extent would only weaken the bounds.
    h = fmax(h, (double)min_h);
    if (maxext > 0) h = fmin(h, 2.0 * (double)maxext);
    // Keep at most 2^20 cells per axis (keys fit 60 bits).
    h = fmax(h, (double)maxext / (double)(MAX_CELLS_AXIS - 2));
    if (maxext == 0) h = 1.0;
    const R hf = (R)h;
    for (int a = 0; a < 3; ++a) {
        long long ga = (long long)floor((double)ext[a] / (double)hf) + 1;
        if (ga > MAX_CELLS_AXIS) ga = MAX_CELLS_AXIS;
        G->g[a] = (int)ga;
    }
    G->h = hf;
    G->inv_h = (R)1 / hf;
    // Slack: a point may sit a few rounding units of its coordinates outside
    // the box of the cell it was hashed to; 1e-4 h covers the rounding of
    // (p - lo) * inv_h.
    G->eps_base = T::EPS_MAG * maxabs + (R)1e-4 * hf;
}

template <typename R>
__device__ __forceinline__ int cell_axis_clamped(R p, R lo, R inv_h, int g) {
    typedef Real<R> T;
    const R c = T::floor_((p - lo) * inv_h);
    return (int)T::min_(T::max_(c, (R)0), (R)(g - 1));
}

template <typename R>
__device__ __forceinline__ u64 cell_key(const Grid<R>* G, int x, int y, int z) {
    return (u64)x + (u64)G->g[0] * ((u64)y + (u64)G->g[1] * (u64)z);
}

template <typename R>
__device__ __forceinline__ u64 b_key(const Grid<R>* G, R x, R y, R z) {
    const int cx = cell_axis_clamped(x, G->lo[0], G->inv_h, G->g[0]);
    const int cy = cell_axis_clamped(y, G->lo[1], G->inv_h, G->g[1]);
    const int cz = cell_axis_clamped(z, G->lo[2], G->inv_h, G->g[2]);
    return cell_key(G, cx, cy, cz);
}

template <typename R>
__device__ __forceinline__ void insert(const R* __restrict__ P, u32 n, const Grid<R>* G,
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

// One atomic per warp rather than per cell (millions of cells would queue on
// one counter): the lanes' counts are scanned with shuffles, the warp's last
// lane claims their sum, and each cell starts at that base plus the counts of
// the lanes below it. Needs whole warps (blocks of a multiple of 32 threads).
__device__ __forceinline__ void assign_starts(Slot* __restrict__ table, u32 size, GridHead* G) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 lane = threadIdx.x & 31u;
    const u32 c = s < size ? table[s].count : 0u;
    u32 incl = c;
    for (u32 d = 1; d < 32u; d <<= 1) {
        const u32 v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += v;
    }
    u32 base = 0;
    if (lane == 31u && incl != 0u) base = atomicAdd(&G->total, incl);
    base = __shfl_sync(0xffffffffu, base, 31);
    if (c == 0u) return;
    table[s].start = base + incl - c;
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

template <typename R>
__device__ __forceinline__ void scatter_b(const R* __restrict__ P, u32 n, const Grid<R>* G,
                                          Slot* __restrict__ table, Pt<R>* __restrict__ sorted) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const R x = P[(u64)i * 3], y = P[(u64)i * 3 + 1], z = P[(u64)i * 3 + 2];
    const u64 key1 = b_key(G, x, y, z) + 1;
    const u32 mask = G->table_mask;
    u32 s = (u32)mix64(key1) & mask;
    while (table[s].key1 != key1) s = (s + 1) & mask;
    const u32 pos = table[s].start + atomicAdd(&table[s].count, 1u);
    Pt<R> p;
    p.x = x; p.y = y; p.z = z; p.j = i;
    sorted[pos] = p;
}

// ------------------------------------------------------- query ordering (A)

template <typename R>
__device__ __forceinline__ void order_a(const R* __restrict__ P, u32 n, const Grid<R>* G,
                                        u32* __restrict__ cursor, u32* __restrict__ order) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 m = coarse_morton(G, P[(u64)i * 3], P[(u64)i * 3 + 1], P[(u64)i * 3 + 2]);
    order[atomicAdd(&cursor[m], 1u)] = i;
}

// Exclusive scan of u32 or u64 (in place), three launches: 2048 elements per block.
#define SCAN_T 256
#define SCAN_PER 8
#define SCAN_BLOCK (SCAN_T * SCAN_PER)

template <typename U>
__device__ __forceinline__ U block_excl_scan(U v, U* total) {
    __shared__ U warp_sums[32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    U x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const U y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[w] = x;
    __syncthreads();
    if (w == 0) {
        const int nw = blockDim.x >> 5;
        U s = lane < nw ? warp_sums[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const U y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += y;
        }
        if (lane < nw) warp_sums[lane] = s;  // inclusive
    }
    __syncthreads();
    const U before = (w > 0 ? warp_sums[w - 1] : 0) + x - v;
    *total = warp_sums[(blockDim.x >> 5) - 1];
    __syncthreads();
    return before;
}

template <typename U>
__device__ __forceinline__ void scan_local(U* __restrict__ data, u64 n, U* __restrict__ block_sums) {
    const u64 base = (u64)blockIdx.x * SCAN_BLOCK + threadIdx.x * SCAN_PER;
    U v[SCAN_PER], s = 0;
#pragma unroll
    for (int q = 0; q < SCAN_PER; ++q) {
        v[q] = base + q < n ? data[base + q] : 0;
        s += v[q];
    }
    U total;
    U run = block_excl_scan(s, &total);
#pragma unroll
    for (int q = 0; q < SCAN_PER; ++q) {
        if (base + q < n) data[base + q] = run;
        run += v[q];
    }
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

template <typename U>
__device__ __forceinline__ void scan_top(U* __restrict__ sums, u32 n) {  // one block of 1024
    U carry = 0;
    for (u32 base = 0; base < n; base += blockDim.x) {
        const u32 i = base + threadIdx.x;
        const U v = i < n ? sums[i] : 0;
        U total;
        const U e = block_excl_scan(v, &total);
        if (i < n) sums[i] = carry + e;
        carry += total;
    }
}

template <typename U>
__device__ __forceinline__ void scan_add(U* __restrict__ data, u64 n, const U* __restrict__ sums) {
    const U add = sums[blockIdx.x];
    const u64 base = (u64)blockIdx.x * SCAN_BLOCK;
    for (u32 q = threadIdx.x; q < SCAN_BLOCK; q += blockDim.x)
        if (base + q < n) data[base + q] += add;
}

// ------------------------------------------------------------------ queries

template <typename R>
struct Query {
    R x, y, z;
    int cx, cy, cz;    // own cell (may lie outside the grid)
    R margin;          // distance from q to its own cell's faces (0 if clamped)
    R eps;             // slack on every distance bound
};

template <typename R>
__device__ __forceinline__ Query<R> make_query(const Grid<R>* G, R x, R y, R z) {
    typedef Real<R> T;
    Query<R> q;
    q.x = x; q.y = y; q.z = z;
    const R p[3] = {x, y, z};
    int c[3];
    R margin = T::inf();
    bool clamped = false;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        R f = T::floor_((p[a] - G->lo[a]) * G->inv_h);
        if (f < (R)-4194304) { f = (R)-4194304; clamped = true; }
        if (f > (R)4194304) { f = (R)4194304; clamped = true; }
        c[a] = (int)f;
        const R lo = G->lo[a] + f * G->h;
        margin = T::min_(margin, T::min_(p[a] - lo, lo + G->h - p[a]));
    }
    q.cx = c[0]; q.cy = c[1]; q.cz = c[2];
    const R mag = T::max_(T::abs_(x), T::max_(T::abs_(y), T::abs_(z)));
    q.eps = G->eps_base + T::EPS_MAG * mag;
    q.margin = clamped ? (R)0 : T::max_(margin, (R)0);
    return q;
}

// Lower bound of the squared distance from q to any point hashed to cell
// (x, y, z), and whether a point there could beat `bound` (ties included).
template <typename R>
__device__ __forceinline__ bool cell_may_hold(const Grid<R>* G, const Query<R>& q, int x, int y, int z,
                                              R bound) {
    typedef Real<R> T;
    const R h = G->h;
    R lb = 0;
    const int c[3] = {x, y, z};
    const R p[3] = {q.x, q.y, q.z};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const R lo = G->lo[a] + (R)c[a] * h;
        R d = T::max_(lo - p[a], p[a] - (lo + h));
        d = T::max_(d - q.eps, (R)0);
        lb += d * d;
    }
    return lb * T::SHRINK <= bound;
}

// Whether every point hashed to cell (x, y, z) has a computed squared
// distance to q of at most r2: an upper bound over the cell's box widened by
// q.eps, with SLACK for the rounding of both.
template <typename R>
__device__ __forceinline__ bool cell_inside(const Grid<R>* G, const Query<R>& q, int x, int y, int z,
                                            R r2) {
    typedef Real<R> T;
    const R h = G->h;
    R ub = 0;
    const int c[3] = {x, y, z};
    const R p[3] = {q.x, q.y, q.z};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const R lo = G->lo[a] + (R)c[a] * h;
        const R d = T::max_(T::abs_(p[a] - lo), T::abs_(p[a] - (lo + h))) + q.eps;
        ub += d * d;
    }
    return ub * ((R)1 + T::SLACK) <= r2;
}

// Lower bound of the squared distance to anything in ring r or beyond.
template <typename R>
__device__ __forceinline__ R ring_bound(const Grid<R>* G, const Query<R>& q, int r) {
    typedef Real<R> T;
    if (r <= 0) return 0;
    const R d = T::max_((R)(r - 1) * G->h + q.margin - q.eps, (R)0);
    return d * d * T::SHRINK;
}

// Visits every cell at Chebyshev distance exactly r from q's cell, inside the
// grid, that may beat the current bound; V is the visitor (points of a cell).
template <typename R, class V>
__device__ __forceinline__ void visit_ring(const Grid<R>* G, const Slot* __restrict__ table,
                                           const Pt<R>* __restrict__ pts, const Query<R>& q, int r,
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
                    const Pt<R> b = load_pt(pts + start + t);
                    vis.offer(dist2(q.x, q.y, q.z, b.x, b.y, b.z), b.j);
                }
            }
        }
    }
}

// Ring distance from q's cell to the grid box: rings below it are empty.
template <typename R>
__device__ __forceinline__ int first_ring(const Grid<R>* G, const Query<R>& q) {
    int r = 0;
    const int c[3] = {q.cx, q.cy, q.cz};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (c[a] < 0) r = max(r, -c[a]);
        if (c[a] >= G->g[a]) r = max(r, c[a] - (G->g[a] - 1));
    }
    return r;
}

template <typename R>
__device__ __forceinline__ int last_ring(const Grid<R>* G, const Query<R>& q) {
    int r = 0;
    const int c[3] = {q.cx, q.cy, q.cz};
#pragma unroll
    for (int a = 0; a < 3; ++a) r = max(r, max(c[a], G->g[a] - 1 - c[a]));
    return r;
}

template <typename R, class V>
__device__ __forceinline__ void search(const Grid<R>* G, const Slot* __restrict__ table,
                                       const Pt<R>* __restrict__ pts, const Query<R>& q, V& vis) {
    const int r_end = last_ring(G, q);
    for (int r = first_ring(G, q); r <= r_end; ++r) {
        if (ring_bound(G, q, r) > vis.bound()) break;
        visit_ring(G, table, pts, q, r, vis);
    }
}

template <typename R>
struct Best1 {
    R d2;
    u32 j;
    __device__ R bound() const { return d2; }
    __device__ void offer(R d, u32 idx) {
        if (key_less(d, idx, d2, j)) { d2 = d; j = idx; }
    }
};

// A neighbour as the host reads it: trident_core::Neighbor<R> (repr(C): the
// index, then d2 at offset 4 for f32 and 8 for f64).
template <typename R>
struct Neighbor { u32 index; R d2; };

template <typename R>
__device__ __forceinline__ void nearest(const R* __restrict__ A, u32 n, const u32* __restrict__ order,
                                        const Grid<R>* __restrict__ G, const Slot* __restrict__ table,
                                        const Pt<R>* __restrict__ pts, Neighbor<R>* __restrict__ out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = order[t];
    const Query<R> q = make_query(G, A[(u64)i * 3], A[(u64)i * 3 + 1], A[(u64)i * 3 + 2]);
    Best1<R> b;
    b.d2 = Real<R>::inf();
    b.j = 0xffffffffu;
    search(G, table, pts, q, b);
    Neighbor<R> r;
    r.index = b.j;
    r.d2 = b.d2;
    out[i] = r;
}

// k nearest: a sorted list of (d2, j), in local memory for k <= KMAX, else in
// the output rows themselves (global memory; slower, same result).
template <typename R, int KMAX>
struct BestK {
    R d[KMAX];
    u32 j[KMAX];
    int k, n;
    __device__ R bound() const { return n < k ? Real<R>::inf() : d[k - 1]; }
    __device__ void offer(R dd, u32 idx) {
        if (n == k && !key_less(dd, idx, d[k - 1], j[k - 1])) return;
        int p = n < k ? n++ : k - 1;
        while (p > 0 && key_less(dd, idx, d[p - 1], j[p - 1])) {
            d[p] = d[p - 1];
            j[p] = j[p - 1];
            --p;
        }
        d[p] = dd;
        j[p] = idx;
    }
};

template <typename R>
struct BestKGlobal {
    Neighbor<R>* row;
    int k, n;
    __device__ R bound() const { return n < k ? Real<R>::inf() : row[k - 1].d2; }
    __device__ void offer(R dd, u32 idx) {
        if (n == k && !key_less(dd, idx, row[k - 1].d2, row[k - 1].index)) return;
        int p = n < k ? n++ : k - 1;
        while (p > 0 && key_less(dd, idx, row[p - 1].d2, row[p - 1].index)) {
            row[p] = row[p - 1];
            --p;
        }
        Neighbor<R> e;
        e.index = idx;
        e.d2 = dd;
        row[p] = e;
    }
};

#define KNN_LOCAL 32

template <typename R>
__device__ __forceinline__ void knn(const R* __restrict__ A, u32 n, const u32* __restrict__ order,
                                    const Grid<R>* __restrict__ G, const Slot* __restrict__ table,
                                    const Pt<R>* __restrict__ pts, u32 k, Neighbor<R>* __restrict__ out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = order[t];
    const Query<R> q = make_query(G, A[(u64)i * 3], A[(u64)i * 3 + 1], A[(u64)i * 3 + 2]);
    Neighbor<R>* row = out + (u64)i * k;
    if (k <= KNN_LOCAL) {
        BestK<R, KNN_LOCAL> b;
        b.k = (int)k;
        b.n = 0;
        search(G, table, pts, q, b);
        for (int p = 0; p < b.n; ++p) {
            Neighbor<R> e;
            e.index = b.j[p];
            e.d2 = b.d[p];
            row[p] = e;
        }
    } else {
        BestKGlobal<R> b;
        b.row = row;
        b.k = (int)k;
        b.n = 0;
        search(G, table, pts, q, b);
    }
}

// ------------------------------------------------------------------- top-k

template <typename R>
__device__ __forceinline__ void hist(const Neighbor<R>* __restrict__ nb, u32 n, u32* __restrict__ counts) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&counts[Real<R>::bin(nb[i].d2)], 1u);
}

// One block of 1024 threads over 65536 bins: the smallest bin b with
// count(bins <= b) >= k (the last bin if there is none).
__device__ __forceinline__ void select(const u32* __restrict__ counts, u32 k, GridHead* G) {
    const int per = 65536 / 1024;
    const u32 base = threadIdx.x * per;
    u32 s = 0;
    for (int q = 0; q < per; ++q) s += counts[base + q];
    u32 total;
    const u32 before = block_excl_scan(s, &total);
    if (threadIdx.x == 0 && total < k) G->sel_bin = 65535u;
    if (before < k && before + s >= k) {
        u32 run = before;
        for (int q = 0; q < per; ++q) {
            run += counts[base + q];
            if (run >= k) { G->sel_bin = base + q; break; }
        }
    }
}

// A candidate pair as the host reads it: { d2, a, b } (12 / 16 bytes).
template <typename R>
struct Cand { R d2; u32 a; u32 b; };

template <typename R>
__device__ __forceinline__ void compact(const Neighbor<R>* __restrict__ nb, u32 n, Grid<R>* G,
                                        Cand<R>* __restrict__ cand) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Neighbor<R> e = nb[i];
    if (Real<R>::bin(e.d2) <= G->sel_bin) {
        const u32 p = atomicAdd(&G->cand_count, 1u);
        Cand<R> c;
        c.d2 = e.d2;
        c.a = i;
        c.b = e.index;
        cand[p] = c;
    }
}

// ------------------------------------------------------------ radius search

// Both passes of a radius search (count, fill) must take the same decision
// for every cell and point, so every bound here is computed with explicitly
// rounded operations: the compiler cannot fuse them differently in the two
// kernels. The slack is that of cell_may_hold, whose argument they share.

// A radius query: the point and the slack of its box bounds.
template <typename R>
struct Ball {
    R x, y, z;
    R eps;
};

template <typename R>
__device__ __forceinline__ Ball<R> make_ball(const Grid<R>* G, R x, R y, R z) {
    typedef Real<R> T;
    Ball<R> q;
    q.x = x; q.y = y; q.z = z;
    const R mag = T::max_(T::abs_(x), T::max_(T::abs_(y), T::abs_(z)));
    q.eps = T::add(G->eps_base, T::mul(T::EPS_MAG, mag));
    return q;
}

// Where cell (x, y, z) stands against the ball of r2: 0 outside (no point
// hashed there can have d2 <= r2), 2 inside (every point there has), 1 in
// between. Lower and upper bounds of the squared distance over the cell's
// box widened by q.eps, scaled by SHRINK and 1 + SLACK for the rounding of
// the bounds and of d2.
template <typename R>
__device__ __forceinline__ int cell_vs_ball(const Grid<R>* G, const Ball<R>& q, int x, int y, int z,
                                            R r2) {
    typedef Real<R> T;
    const R h = G->h;
    const int c[3] = {x, y, z};
    const R p[3] = {q.x, q.y, q.z};
    R lb = 0, ub = 0;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const R lo = T::add(G->lo[a], T::mul((R)c[a], h));
        const R below = T::sub(lo, p[a]), above = T::sub(p[a], T::add(lo, h));
        const R nearest = T::max_(T::sub(T::max_(below, above), q.eps), (R)0);
        const R farthest = T::add(T::max_(T::abs_(below), T::abs_(above)), q.eps);
        lb = T::add(lb, T::mul(nearest, nearest));
        ub = T::add(ub, T::mul(farthest, farthest));
    }
    if (!(T::mul(lb, T::SHRINK) <= r2)) return 0;
    return T::mul(ub, T::add((R)1, T::SLACK)) <= r2 ? 2 : 1;
}

// Visits every cell of the bounding box of q's ball of radius r (widened by
// the slack) that the ball may reach, with its standing (cell_vs_ball). The
// box's cells are computed as a point's own cell is (b_key: (p - lo) * inv_h,
// floor, clamp), from q -/+ reach with reach >= r (1 + 4 u) + u |q| (u the
// rounding unit): each step is monotone, so a point whose computed
// d2 <= r2 (hence |b - q| <= r (1 + 3.1 u) per axis) lies in a visited cell.
template <typename R, class V>
__device__ __forceinline__ void ball_search(const Grid<R>* G, const Slot* __restrict__ table,
                                            const Pt<R>* __restrict__ pts, const Ball<R>& q, R r,
                                            R r2, V& vis) {
    typedef Real<R> T;
    const R p[3] = {q.x, q.y, q.z};
    const R reach = T::add(r, T::add(q.eps, T::mul(r, T::SLACK)));
    int c0[3], c1[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const R top = (R)(G->g[a] - 1);
        const R f0 = T::floor_(T::mul(T::sub(T::sub(p[a], reach), G->lo[a]), G->inv_h));
        const R f1 = T::floor_(T::mul(T::sub(T::add(p[a], reach), G->lo[a]), G->inv_h));
        c0[a] = (int)T::min_(T::max_(f0, (R)0), top);
        c1[a] = (int)T::min_(T::max_(f1, (R)0), top);
    }
    const u32 mask = G->table_mask;
    for (int z = c0[2]; z <= c1[2]; ++z) {
        for (int y = c0[1]; y <= c1[1]; ++y) {
            for (int x = c0[0]; x <= c1[0]; ++x) {
                const int where = cell_vs_ball(G, q, x, y, z, r2);
                if (where == 0) continue;
                uint4 e;
                if (find_slot(table, mask, cell_key(G, x, y, z) + 1, &e) < 0) continue;
                vis.cell(q, pts + e.z, e.w, r2, where == 2);
            }
        }
    }
}

// The pair (i, b) belongs to the row: within r2 (every point of a cell
// inside the ball is), and j > i for self pairs. The one rule of both passes.
__device__ __forceinline__ bool takes(bool inside, bool within, bool upper, u32 i, u32 j) {
    return (inside || within) && (!upper || j > i);
}

// Counts a row.
template <typename R>
struct CountRow {
    u32 i;
    bool upper;
    u64 n;
    __device__ void cell(const Ball<R>& q, const Pt<R>* __restrict__ c, u32 cnt, R r2, bool inside) {
        if (inside) {
            // Whole cells count without a distance: a huge r costs cells, not points.
            if (!upper) n += cnt;
            else
                for (u32 t = 0; t < cnt; ++t) n += takes(true, true, true, i, __ldg(&c[t].j));
            return;
        }
        for (u32 t = 0; t < cnt; ++t) {
            const Pt<R> b = load_pt(c + t);
            n += takes(false, dist2(q.x, q.y, q.z, b.x, b.y, b.z) <= r2, upper, i, b.j);
        }
    }
};

// Collects a short row, sorted by (d2, j) as it grows.
template <typename R>
struct FillLocal {
    R d[SHORT_ROW];
    u32 j[SHORT_ROW];
    int n, cap;
    u32 i;
    bool upper;
    __device__ void cell(const Ball<R>& q, const Pt<R>* __restrict__ c, u32 cnt, R r2, bool inside) {
        for (u32 t = 0; t < cnt; ++t) {
            const Pt<R> b = load_pt(c + t);
            const R dd = dist2(q.x, q.y, q.z, b.x, b.y, b.z);
            if (!takes(inside, dd <= r2, upper, i, b.j)) continue;
            if (n >= cap) { ++n; continue; }  // a miscount, reported by the caller
            int p = n++;
            while (p > 0 && key_less(dd, b.j, d[p - 1], j[p - 1])) {
                d[p] = d[p - 1];
                j[p] = j[p - 1];
                --p;
            }
            d[p] = dd;
            j[p] = b.j;
        }
    }
};

// Writes a long row as found (sorted afterwards).
template <typename R>
struct FillGlobal {
    u32* idx;
    R* d2;
    u64 n, cap;
    u32 i;
    bool upper;
    __device__ void cell(const Ball<R>& q, const Pt<R>* __restrict__ c, u32 cnt, R r2, bool inside) {
        for (u32 t = 0; t < cnt; ++t) {
            const Pt<R> b = load_pt(c + t);
            const R dd = dist2(q.x, q.y, q.z, b.x, b.y, b.z);
            if (!takes(inside, dd <= r2, upper, i, b.j)) continue;
            if (n < cap) {
                idx[n] = b.j;
                d2[n] = dd;
            }
            ++n;
        }
    }
};

// Pass 1: counts[i] = pairs of row i; tiles[i] = its sort tiles if it is
// longer than SHORT_ROW (0 otherwise); meta[2] = the longest such row.
template <typename R>
__device__ __forceinline__ void radius_count(const R* __restrict__ A, u32 n, const u32* __restrict__ order,
                                             const Grid<R>* __restrict__ G, const Slot* __restrict__ table,
                                             const Pt<R>* __restrict__ pts, R r, R r2, u32 upper,
                                             u64* __restrict__ counts, u64* __restrict__ tiles,
                                             u64* __restrict__ meta) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = order[t];
    const Ball<R> q = make_ball(G, A[(u64)i * 3], A[(u64)i * 3 + 1], A[(u64)i * 3 + 2]);
    CountRow<R> v;
    v.i = i;
    v.upper = upper != 0;
    v.n = 0;
    ball_search(G, table, pts, q, r, r2, v);
    counts[i] = v.n;
    const bool long_row = v.n > SHORT_ROW;
    tiles[i] = long_row ? (v.n + TILE - 1) / TILE : 0;
    if (long_row) atomicMax(&meta[2], v.n);
}

// The totals after the scans: meta[0] = pairs, meta[1] = sort tiles.
__device__ __forceinline__ void radius_totals(const u64* __restrict__ offsets,
                                              const u64* __restrict__ tile_start, u32 n,
                                              u64* __restrict__ meta) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    meta[0] = offsets[n];
    meta[1] = tile_start[n];
}

// Pass 2: row i into idx / d2 at offsets[i], sorted when short. A row that
// does not find as many pairs as pass 1 counted (a bug: both passes take the
// same decisions) sets meta[3], which the host reports.
template <typename R>
__device__ __forceinline__ void radius_fill(const R* __restrict__ A, u32 n, const u32* __restrict__ order,
                                            const Grid<R>* __restrict__ G, const Slot* __restrict__ table,
                                            const Pt<R>* __restrict__ pts, R r, R r2, u32 upper,
                                            const u64* __restrict__ offsets, u32* __restrict__ idx,
                                            R* __restrict__ d2, u64* __restrict__ meta) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = order[t];
    const u64 start = offsets[i], len = offsets[i + 1] - start;
    if (len == 0) return;
    const Ball<R> q = make_ball(G, A[(u64)i * 3], A[(u64)i * 3 + 1], A[(u64)i * 3 + 2]);
    u64 found;
    if (len <= SHORT_ROW) {
        FillLocal<R> v;
        v.n = 0;
        v.cap = (int)len;
        v.i = i;
        v.upper = upper != 0;
        ball_search(G, table, pts, q, r, r2, v);
        for (int p = 0; p < v.n && p < v.cap; ++p) {
            idx[start + p] = v.j[p];
            d2[start + p] = v.d[p];
        }
        found = (u64)v.n;
    } else {
        FillGlobal<R> v;
        v.idx = idx + start;
        v.d2 = d2 + start;
        v.n = 0;
        v.cap = len;
        v.i = i;
        v.upper = upper != 0;
        ball_search(G, table, pts, q, r, r2, v);
        found = v.n;
    }
    if (found != len) atomicOr(&meta[3], 1ull);
}

// The row a sort tile belongs to: the largest i < n with tile_start[i] <= b
// (rows without tiles have tile_start[i] == tile_start[i + 1]).
__device__ __forceinline__ u32 tile_row(const u64* __restrict__ tile_start, u32 n, u64 b) {
    u32 lo = 0, hi = n - 1;
    while (lo < hi) {
        const u32 mid = lo + (hi - lo + 1) / 2;
        if (tile_start[mid] <= b) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// Where a tile's row lives: its pairs in the output (at offsets[row]) and in
// the scratch (at tile_start[row] * TILE), its length and the tile's first
// element.
struct TileAt {
    u64 out, scratch, len, first;
};

__device__ __forceinline__ TileAt tile_at(const u64* __restrict__ offsets,
                                          const u64* __restrict__ tile_start, u32 n) {
    __shared__ u32 s_row;
    if (threadIdx.x == 0) s_row = tile_row(tile_start, n, blockIdx.x);
    __syncthreads();
    const u32 row = s_row;
    TileAt t;
    t.out = offsets[row];
    t.len = offsets[row + 1] - t.out;
    t.scratch = tile_start[row] * TILE;
    t.first = (blockIdx.x - tile_start[row]) * TILE;
    return t;
}

// Sorts each tile of the long rows by (d2, j): a bitonic sort of the tile
// (padded to a power of two with keys after every real one) in shared
// memory, written to the scratch, or back in place when every long row
// fits one tile.
template <typename R>
__device__ __forceinline__ void tile_sort(const u64* __restrict__ offsets,
                                          const u64* __restrict__ tile_start, u32 n, u32* idx, R* d2,
                                          u32* sidx, R* sd2, u32 to_scratch) {
    __shared__ R sk[TILE];
    __shared__ u32 sj[TILE];
    const TileAt at = tile_at(offsets, tile_start, n);
    const u32 m = (u32)min((u64)TILE, at.len - at.first);
    u32 pw = 2;
    while (pw < m) pw <<= 1;
    const u64 src = at.out + at.first;
    for (u32 k = threadIdx.x; k < pw; k += blockDim.x) {
        if (k < m) {
            sk[k] = d2[src + k];
            sj[k] = idx[src + k];
        } else {
            sk[k] = Real<R>::inf();
            sj[k] = 0xffffffffu;
        }
    }
    __syncthreads();
    for (u32 size = 2; size <= pw; size <<= 1) {
        for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
            for (u32 k = threadIdx.x; k < pw; k += blockDim.x) {
                const u32 o = k ^ stride;
                if (o > k) {
                    const bool up = (k & size) == 0;
                    const bool swap = up ? key_less(sk[o], sj[o], sk[k], sj[k])
                                         : key_less(sk[k], sj[k], sk[o], sj[o]);
                    if (swap) {
                        const R td = sk[k]; sk[k] = sk[o]; sk[o] = td;
                        const u32 tj = sj[k]; sj[k] = sj[o]; sj[o] = tj;
                    }
                }
            }
            __syncthreads();
        }
    }
    const u64 dst = (to_scratch ? at.scratch : at.out) + at.first;
    u32* di = to_scratch ? sidx : idx;
    R* dd = to_scratch ? sd2 : d2;
    for (u32 k = threadIdx.x; k < m; k += blockDim.x) {
        di[dst + k] = sj[k];
        dd[dst + k] = sk[k];
    }
}

// One merge pass over every long row: sorted runs of w elements are merged
// pairwise, from the scratch into the output (from_scratch) or back. An
// element's place is its offset in its own run plus the number of elements
// of the partner run before it. A run without a partner is copied, so a
// pass with w >= every row's length copies.
template <typename R>
__device__ __forceinline__ void merge(const u64* __restrict__ offsets, const u64* __restrict__ tile_start,
                                      u32 n, u64 w, u32 from_scratch, u32* idx, R* d2, u32* sidx,
                                      R* sd2) {
    const TileAt at = tile_at(offsets, tile_start, n);
    const u64 m = min((u64)TILE, at.len - at.first);
    const u32* si = from_scratch ? sidx + at.scratch : idx + at.out;
    const R* sd = from_scratch ? sd2 + at.scratch : d2 + at.out;
    u32* di = from_scratch ? idx + at.out : sidx + at.scratch;
    R* dd = from_scratch ? d2 + at.out : sd2 + at.scratch;
    for (u64 k = threadIdx.x; k < m; k += blockDim.x) {
        const u64 p = at.first + k;
        const R key = sd[p];
        const u32 kj = si[p];
        const u64 run = p / w, own = run * w, other = (run ^ 1) * w;
        u64 to = p;
        if (other < at.len) {
            u64 lo = other, hi = min(at.len, other + w);
            while (lo < hi) {
                const u64 mid = lo + (hi - lo) / 2;
                if (key_less(sd[mid], si[mid], key, kj)) lo = mid + 1; else hi = mid;
            }
            to = min(own, other) + (p - own) + (lo - other);
        }
        di[to] = kj;
        dd[to] = key;
    }
}

// ------------------------------------------------------------- entry points
// One `*_ENTRY` line per kernel and type, so that a call compiles each alone,
// in parallel (`KernelSource::per_entry`, `CudaBackend::prepare`).

#define NP_BBOX_ENTRY(NAME, R) \
    extern "C" __global__ void NAME(const R* __restrict__ P, u32 n, Grid<R>* G) { bbox<R>(P, n, G); }
NP_BBOX_ENTRY(np_bbox_f32, float)
NP_BBOX_ENTRY(np_bbox_f64, double)

#define NP_COARSE_SETUP_ENTRY(NAME, R) \
    extern "C" __global__ void NAME(Grid<R>* G, float target, u32 table_mask) { coarse_setup<R>(G, target, table_mask); }
NP_COARSE_SETUP_ENTRY(np_coarse_setup_f32, float)
NP_COARSE_SETUP_ENTRY(np_coarse_setup_f64, double)

#define NP_COARSE_COUNT_ENTRY(NAME, R)                                                               \
    extern "C" __global__ void NAME(const R* __restrict__ P, u32 n, const Grid<R>* G, u32* __restrict__ counts) { \
        coarse_count<R>(P, n, G, counts);                                                            \
    }
NP_COARSE_COUNT_ENTRY(np_coarse_count_f32, float)
NP_COARSE_COUNT_ENTRY(np_coarse_count_f64, double)

#define NP_SUMSQ_ENTRY(NAME) \
    extern "C" __global__ void NAME(const u32* __restrict__ counts, u32 n, GridHead* G) { sumsq(counts, n, G); }
NP_SUMSQ_ENTRY(np_sumsq)

#define NP_FINALIZE_ENTRY(NAME, R) \
    extern "C" __global__ void NAME(Grid<R>* G, u32 n, R min_h) { finalize<R>(G, n, min_h); }
NP_FINALIZE_ENTRY(np_finalize_f32, float)
NP_FINALIZE_ENTRY(np_finalize_f64, double)

#define NP_INSERT_ENTRY(NAME, R)                                                                     \
    extern "C" __global__ void NAME(const R* __restrict__ P, u32 n, const Grid<R>* G, Slot* __restrict__ table) { \
        insert<R>(P, n, G, table);                                                                   \
    }
NP_INSERT_ENTRY(np_insert_f32, float)
NP_INSERT_ENTRY(np_insert_f64, double)

#define NP_ASSIGN_STARTS_ENTRY(NAME) \
    extern "C" __global__ void NAME(Slot* __restrict__ table, u32 size, GridHead* G) { assign_starts(table, size, G); }
NP_ASSIGN_STARTS_ENTRY(np_assign_starts)

#define NP_SCATTER_B_ENTRY(NAME, R)                                                                  \
    extern "C" __global__ void NAME(const R* __restrict__ P, u32 n, const Grid<R>* G,                \
                                    Slot* __restrict__ table, Pt<R>* __restrict__ sorted) {          \
        scatter_b<R>(P, n, G, table, sorted);                                                        \
    }
NP_SCATTER_B_ENTRY(np_scatter_b_f32, float)
NP_SCATTER_B_ENTRY(np_scatter_b_f64, double)

#define NP_ORDER_A_ENTRY(NAME, R)                                                                    \
    extern "C" __global__ void NAME(const R* __restrict__ P, u32 n, const Grid<R>* G,                \
                                    u32* __restrict__ cursor, u32* __restrict__ order) {             \
        order_a<R>(P, n, G, cursor, order);                                                          \
    }
NP_ORDER_A_ENTRY(np_order_a_f32, float)
NP_ORDER_A_ENTRY(np_order_a_f64, double)

#define SCAN_LOCAL_ENTRY(NAME, U) \
    extern "C" __global__ void NAME(U* __restrict__ data, u64 n, U* __restrict__ block_sums) { scan_local<U>(data, n, block_sums); }
SCAN_LOCAL_ENTRY(scan_local_u32, u32)
SCAN_LOCAL_ENTRY(scan_local_u64, u64)

#define SCAN_TOP_ENTRY(NAME, U) \
    extern "C" __global__ void __launch_bounds__(1024) NAME(U* __restrict__ sums, u32 n) { scan_top<U>(sums, n); }
SCAN_TOP_ENTRY(scan_top_u32, u32)
SCAN_TOP_ENTRY(scan_top_u64, u64)

#define SCAN_ADD_ENTRY(NAME, U) \
    extern "C" __global__ void NAME(U* __restrict__ data, u64 n, const U* __restrict__ sums) { scan_add<U>(data, n, sums); }
SCAN_ADD_ENTRY(scan_add_u32, u32)
SCAN_ADD_ENTRY(scan_add_u64, u64)

#define NP_NEAREST_ENTRY(NAME, R)                                                                    \
    extern "C" __global__ void NAME(const R* __restrict__ A, u32 n, const u32* __restrict__ order,   \
                                    const Grid<R>* __restrict__ G, const Slot* __restrict__ table,   \
                                    const Pt<R>* __restrict__ pts, Neighbor<R>* __restrict__ out) {  \
        nearest<R>(A, n, order, G, table, pts, out);                                                 \
    }
NP_NEAREST_ENTRY(np_nearest_f32, float)
NP_NEAREST_ENTRY(np_nearest_f64, double)

#define NP_KNN_ENTRY(NAME, R)                                                                        \
    extern "C" __global__ void NAME(const R* __restrict__ A, u32 n, const u32* __restrict__ order,   \
                                    const Grid<R>* __restrict__ G, const Slot* __restrict__ table,   \
                                    const Pt<R>* __restrict__ pts, u32 k,                            \
                                    Neighbor<R>* __restrict__ out) {                                 \
        knn<R>(A, n, order, G, table, pts, k, out);                                                  \
    }
NP_KNN_ENTRY(np_knn_f32, float)
NP_KNN_ENTRY(np_knn_f64, double)

#define NP_HIST_ENTRY(NAME, R)                                                                       \
    extern "C" __global__ void NAME(const Neighbor<R>* __restrict__ nb, u32 n, u32* __restrict__ counts) { \
        hist<R>(nb, n, counts);                                                                      \
    }
NP_HIST_ENTRY(np_hist_f32, float)
NP_HIST_ENTRY(np_hist_f64, double)

#define NP_SELECT_ENTRY(NAME) \
    extern "C" __global__ void __launch_bounds__(1024) NAME(const u32* __restrict__ counts, u32 k, GridHead* G) { select(counts, k, G); }
NP_SELECT_ENTRY(np_select)

#define NP_COMPACT_ENTRY(NAME, R)                                                                    \
    extern "C" __global__ void NAME(const Neighbor<R>* __restrict__ nb, u32 n, Grid<R>* G,           \
                                    Cand<R>* __restrict__ cand) {                                    \
        compact<R>(nb, n, G, cand);                                                                  \
    }
NP_COMPACT_ENTRY(np_compact_f32, float)
NP_COMPACT_ENTRY(np_compact_f64, double)

#define NP_RADIUS_COUNT_ENTRY(NAME, R)                                                               \
    extern "C" __global__ void NAME(const R* __restrict__ A, u32 n, const u32* __restrict__ order,   \
                                    const Grid<R>* __restrict__ G, const Slot* __restrict__ table,   \
                                    const Pt<R>* __restrict__ pts, R r, R r2, u32 upper,             \
                                    u64* __restrict__ counts, u64* __restrict__ tiles,               \
                                    u64* __restrict__ meta) {                                        \
        radius_count<R>(A, n, order, G, table, pts, r, r2, upper, counts, tiles, meta);              \
    }
NP_RADIUS_COUNT_ENTRY(np_radius_count_f32, float)
NP_RADIUS_COUNT_ENTRY(np_radius_count_f64, double)

#define NP_RADIUS_TOTALS_ENTRY(NAME)                                                                 \
    extern "C" __global__ void NAME(const u64* __restrict__ offsets, const u64* __restrict__ tile_start, \
                                    u32 n, u64* __restrict__ meta) {                                 \
        radius_totals(offsets, tile_start, n, meta);                                                 \
    }
NP_RADIUS_TOTALS_ENTRY(np_radius_totals)

#define NP_RADIUS_FILL_ENTRY(NAME, R)                                                                \
    extern "C" __global__ void NAME(const R* __restrict__ A, u32 n, const u32* __restrict__ order,   \
                                    const Grid<R>* __restrict__ G, const Slot* __restrict__ table,   \
                                    const Pt<R>* __restrict__ pts, R r, R r2, u32 upper,             \
                                    const u64* __restrict__ offsets, u32* __restrict__ idx,          \
                                    R* __restrict__ d2, u64* __restrict__ meta) {                    \
        radius_fill<R>(A, n, order, G, table, pts, r, r2, upper, offsets, idx, d2, meta);            \
    }
NP_RADIUS_FILL_ENTRY(np_radius_fill_f32, float)
NP_RADIUS_FILL_ENTRY(np_radius_fill_f64, double)

#define NP_TILE_SORT_ENTRY(NAME, R)                                                                  \
    extern "C" __global__ void __launch_bounds__(TILE_THREADS) NAME(                                 \
        const u64* __restrict__ offsets, const u64* __restrict__ tile_start, u32 n, u32* idx, R* d2, \
        u32* sidx, R* sd2, u32 to_scratch) {                                                         \
        tile_sort<R>(offsets, tile_start, n, idx, d2, sidx, sd2, to_scratch);                        \
    }
NP_TILE_SORT_ENTRY(np_tile_sort_f32, float)
NP_TILE_SORT_ENTRY(np_tile_sort_f64, double)

#define NP_MERGE_ENTRY(NAME, R)                                                                      \
    extern "C" __global__ void __launch_bounds__(TILE_THREADS) NAME(                                 \
        const u64* __restrict__ offsets, const u64* __restrict__ tile_start, u32 n, u64 w,           \
        u32 from_scratch, u32* idx, R* d2, u32* sidx, R* sd2) {                                      \
        merge<R>(offsets, tile_start, n, w, from_scratch, idx, d2, sidx, sd2);                       \
    }
NP_MERGE_ENTRY(np_merge_f32, float)
NP_MERGE_ENTRY(np_merge_f64, double)
