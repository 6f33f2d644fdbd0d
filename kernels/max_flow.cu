// MaxFlow kernels of the CUDA backend: parallel push-relabel on grid graphs
// (implicit 4- or 6-neighbour arcs) and on CSR residual graphs, with global
// relabel and (grids) the canonical cut by device breadth-first searches.
//
// Counters: every kernel exists for `int` (suffix _i32) and `long long`
// (_i64) residuals and excesses; the host picks _i32 only when the sum of all
// capacities fits, so no residual, excess or flow can wrap.
//
// One push-relabel iteration is two launches over the active list:
//   push:    each active v (excess > 0, height finite) pushes along admissible
//            arcs (h[u] == h[v] - 1 and residual > 0), sink first on grids.
//            The arc pair (v, u) can be admissible from one side only, so the
//            residuals of a pair are written by one thread per launch and
//            need no atomics; excesses of receivers are atomicAdd'ed.
//   relabel: each active v with excess left and no admissible arc takes
//            h = 1 + min h over its residual arcs.
// Receivers that become active, and pushers that stay active, are appended to
// the next list once (a per-node stamp dedups). Heights of MF_INF mean "cannot
// reach the sink" (set by the global relabel, or by a relabel that sees only
// such neighbours); those nodes are never active.
//
// Grids relabel in place and push into the receivers' excess directly: what
// a node reads of a neighbour that changes during the launch (its height, its
// excess) depends on the schedule, but heights only grow, so the labelling
// stays valid, and the grid answer (flow value and canonical cut) is unique,
// so it cannot show.
//
// Networks also return per-arc flows, which would show it, so their
// iterations are schedule-free: push reads the excess a node had at the start
// of the launch (arrivals go to a second counter array, `inc`, in two halves
// used by alternate iterations; the node adds its half at its next push) and
// heights of a buffer no one writes during the launch (two halves again:
// relabel reads the current half and writes the other, for every node of its
// list, and a node it relabels joins the next list so the half it left
// behind is rewritten the iteration after). Integer atomic adds commute, so
// each launch's result is a function of its input.
//
// Global relabel: a level-synchronous BFS from the sink over reversed
// residual arcs (one launch per level, frontier lists on the device), which
// sets exact distances; the host then collects the active nodes. The solve
// ends when a global relabel leaves no active node: every node with excess
// then provably cannot reach the sink, so the preflow is maximum.
//
// Canonical cut of a grid's max preflow: the nodes reachable in the residual
// graph from any node with excess (returning the excess to the source makes
// exactly those nodes reachable from it), by a forward BFS. Networks finish
// on the host (trident_core::flow::finish).
//
// Lists rotate through three slots: launch `step` reads slot step % 3,
// appends to slot (step + 1) % 3 and zeroes the count of slot (step + 2) % 3,
// which nobody reads or writes during that launch.

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#define MF_INF 0xFFFFFFFFu

__device__ __forceinline__ int mf_atomic_add(int* p, int v) { return atomicAdd(p, v); }
__device__ __forceinline__ i64 mf_atomic_add(i64* p, i64 v) {
    return (i64)atomicAdd((u64*)p, (u64)v);
}

template <typename C> __device__ __forceinline__ C mf_min(C a, C b) { return a < b ? a : b; }

// A slot in a list whose length is `*count`: one atomic per group of
// converged threads (the threads of the warp that reach this call together),
// not one per thread, since millions of appends hit the same counter.
__device__ __forceinline__ u32 mf_slot(u32* count) {
    unsigned mask = __activemask();
    unsigned lane = threadIdx.x & 31u;
    int leader = __ffs(mask) - 1;
    u32 base = 0;
    if ((int)lane == leader) base = atomicAdd(count, (u32)__popc(mask));
    base = __shfl_sync(mask, base, leader);
    return base + (u32)__popc(mask & ((1u << lane) - 1u));
}

// Appends v to `list` once per `tag` (the stamp of v remembers the last tag).
__device__ __forceinline__ void mf_append(u32 v, u32* stamp, u32 tag, u32* list, u32* count) {
    if (atomicExch(&stamp[v], tag) != tag) {
        list[mf_slot(count)] = v;
    }
}

// Rotating list slots (see the header).
struct Slots {
    const u32* cur;
    u32 ncur;
    u32* next;
    u32* next_count;
};

__device__ __forceinline__ Slots mf_slots(u32* lists, u32* counts, u64 n, u32 step) {
    u32 c = step % 3, x = (step + 1) % 3, z = (step + 2) % 3;
    if (blockIdx.x == 0 && threadIdx.x == 0) counts[z] = 0;
    Slots s;
    s.cur = lists + (u64)c * n;
    s.ncur = *(volatile u32*)&counts[c];
    s.next = lists + (u64)x * n;
    s.next_count = &counts[x];
    return s;
}

// ---------------------------------------------------------------- grids

// Grid geometry: node v = (z * h + y) * w + x; direction d in 0..dirs is
// +x, -x, +y, -y, +z, -z; the reverse of (v, d) is (v + off(d), d ^ 1).
struct Geo {
    u32 w, h, dp, dirs;
    u64 n;
};

// The neighbour of v in direction d, or MF_INF when it is off the grid.
__device__ __forceinline__ u32 mf_nb(const Geo& g, u32 v, u32 x, u32 y, u32 z, int d) {
    switch (d) {
    case 0: return x + 1 < g.w ? v + 1 : MF_INF;
    case 1: return x > 0 ? v - 1 : MF_INF;
    case 2: return y + 1 < g.h ? v + g.w : MF_INF;
    case 3: return y > 0 ? v - g.w : MF_INF;
    case 4: return z + 1 < g.dp ? v + g.w * g.h : MF_INF;
    default: return z > 0 ? v - g.w * g.h : MF_INF;
    }
}

#define MF_XYZ(g, v)                                                                              \
    u32 x = (v) % (g).w, yz_ = (v) / (g).w, y = yz_ % (g).h, z = yz_ / (g).h;                       \
    (void)x; (void)y; (void)z;

#define MF_GEO Geo g; g.w = w; g.h = h; g.dp = dp; g.dirs = dirs; g.n = (u64)w * h * dp;

// Residuals from the capacities; min(source, sink) of each node goes straight
// through (s -> v -> t), the rest of the source capacity becomes excess.
template <typename C>
__device__ void grid_init(u32 w, u32 h, u32 dp, u32 dirs, const i64* src, const i64* snk,
                          const i64* caps, C* rc, C* rt, C* e) {
    MF_GEO
    for (u64 v = blockIdx.x * (u64)blockDim.x + threadIdx.x; v < g.n;
         v += (u64)gridDim.x * blockDim.x) {
        i64 a = src[v], b = snk[v], m = a < b ? a : b;
        e[v] = (C)(a - m);
        rt[v] = (C)(b - m);
        for (u32 d = 0; d < dirs; ++d) rc[d * g.n + v] = (C)caps[d * g.n + v];
    }
}

// Global relabel, first level: nodes with sink residual are at height 1.
template <typename C>
__device__ void grid_bfs_init(u64 n, const C* rt, u32* hgt, u32* list, u32* count) {
    for (u64 v = blockIdx.x * (u64)blockDim.x + threadIdx.x; v < n;
         v += (u64)gridDim.x * blockDim.x) {
        bool at_sink = rt[v] > 0;
        hgt[v] = at_sink ? 1u : MF_INF;
        if (at_sink) list[mf_slot(count)] = (u32)v;
    }
}

// One BFS level. Backward (global relabel, `forward` == 0): w joins with
// height h[u] + 1 when w -> u has residual and w is unseen (MF_INF). Forward
// (cut): w joins with mark 1 when u -> w has residual and w is unmarked (0).
template <typename C>
__device__ void grid_level(u32 w, u32 h, u32 dp, u32 dirs, const C* rc, u32* hgt, u32* lists,
                           u32* counts, u32 step, u32 forward) {
    MF_GEO
    Slots s = mf_slots(lists, counts, g.n, step);
    u32 unseen = forward ? 0u : MF_INF;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < s.ncur; i += gridDim.x * blockDim.x) {
        u32 u = s.cur[i];
        u32 val = forward ? 1u : hgt[u] + 1;
        MF_XYZ(g, u)
        for (u32 d = 0; d < dirs; ++d) {
            u32 nb = mf_nb(g, u, x, y, z, d);
            if (nb == MF_INF) continue;
            C r = forward ? rc[d * g.n + u] : rc[(d ^ 1) * g.n + nb];
            if (r > 0 && hgt[nb] == unseen && atomicCAS(&hgt[nb], unseen, val) == unseen)
                s.next[mf_slot(s.next_count)] = nb;
        }
    }
}

// The active nodes after a global relabel, into list slot 0.
template <typename C>
__device__ void grid_collect(u64 n, const C* e, const u32* hgt, u32* list, u32* count) {
    for (u64 v = blockIdx.x * (u64)blockDim.x + threadIdx.x; v < n;
         v += (u64)gridDim.x * blockDim.x) {
        if (e[v] > 0 && hgt[v] != MF_INF) list[mf_slot(count)] = (u32)v;
    }
}

template <typename C>
__device__ void grid_push(u32 w, u32 h, u32 dp, u32 dirs, C* rc, C* rt, C* e, const u32* hgt,
                          u32* lists, u32* counts, u32 step, u32 tag, u32* stamp) {
    MF_GEO
    Slots s = mf_slots(lists, counts, g.n, step);
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < s.ncur; i += gridDim.x * blockDim.x) {
        u32 v = s.cur[i];
        C ex = e[v];
        u32 hv = hgt[v];
        if (ex <= 0 || hv == MF_INF) continue;
        C pushed = 0;
        if (hv == 1) {
            C r = rt[v];
            if (r > 0) {
                C a = mf_min(ex, r);
                rt[v] = r - a;
                ex -= a;
                pushed += a;
            }
        }
        MF_XYZ(g, v)
        for (u32 d = 0; d < dirs && ex > 0; ++d) {
            C r = rc[d * g.n + v];
            if (r <= 0) continue;
            u32 u = mf_nb(g, v, x, y, z, d);
            if (u == MF_INF || hgt[u] + 1 != hv) continue;
            C a = mf_min(ex, r);
            rc[d * g.n + v] = r - a;
            rc[(d ^ 1) * g.n + u] += a;
            ex -= a;
            pushed += a;
            if (mf_atomic_add(&e[u], a) == 0) mf_append(u, stamp, tag, s.next, s.next_count);
        }
        if (pushed > 0) mf_atomic_add(&e[v], -pushed);
    }
}

template <typename C>
__device__ void grid_relabel(u32 w, u32 h, u32 dp, u32 dirs, const C* rc, const C* rt,
                             const C* e, u32* hgt_, u32* lists, u32* counts, u32 step, u32 tag,
                             u32* stamp) {
    MF_GEO
    volatile u32* hgt = hgt_;
    // Same slots as the push launch of this step, without zeroing a count.
    const u32* cur = lists + (u64)(step % 3) * g.n;
    u32 ncur = counts[step % 3];
    u32* next = lists + (u64)((step + 1) % 3) * g.n;
    u32* next_count = &counts[(step + 1) % 3];
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < ncur; i += gridDim.x * blockDim.x) {
        u32 v = cur[i];
        if (e[v] <= 0) continue;
        u32 hv = hgt[v];
        if (hv == MF_INF) continue;
        MF_XYZ(g, v)
        bool adm = hv == 1 && rt[v] > 0;
        u32 hmin = rt[v] > 0 ? 0u : MF_INF;
        for (u32 d = 0; d < dirs && !adm; ++d) {
            if (rc[d * g.n + v] <= 0) continue;
            u32 u = mf_nb(g, v, x, y, z, d);
            if (u == MF_INF) continue;
            u32 hu = hgt[u];
            adm = hu + 1 == hv;
            hmin = hu < hmin ? hu : hmin;
        }
        if (!adm) {
            hv = hmin == MF_INF ? MF_INF : hmin + 1;
            hgt[v] = hv;
        }
        if (hv != MF_INF) mf_append(v, stamp, tag, next, next_count);
    }
}

// Sink capacity left unused, sum of rt[v]: the flow value is the sum of the
// sink capacities minus this (the host keeps that sum).
template <typename C>
__device__ void grid_sink_left(u64 n, const C* rt, i64* out) {
    __shared__ i64 part[32];
    i64 acc = 0;
    for (u64 v = blockIdx.x * (u64)blockDim.x + threadIdx.x; v < n;
         v += (u64)gridDim.x * blockDim.x)
        acc += (i64)rt[v];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (threadIdx.x == 0) atomicAdd((u64*)out, (u64)acc);
    }
}

// Cut BFS start: mark (in the height array) the nodes with excess.
template <typename C>
__device__ void cut_init(u64 n, const C* e, u32* mark, u32* list, u32* count) {
    for (u64 v = blockIdx.x * (u64)blockDim.x + threadIdx.x; v < n;
         v += (u64)gridDim.x * blockDim.x) {
        bool x = e[v] > 0;
        mark[v] = x ? 1u : 0u;
        if (x) list[mf_slot(count)] = (u32)v;
    }
}

// ---------------------------------------------------------------- CSR networks

// Residual arcs grouped by tail: those of v are start[v]..start[v + 1];
// head[a] is the head of a and rev[a] the position of its partner.

template <typename C>
__device__ void net_bfs_init(u32 n, u32 t, u32* hgt, u32* list, u32* count) {
    for (u32 v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x)
        hgt[v] = v == t ? 0u : MF_INF;
    if (blockIdx.x == 0 && threadIdx.x == 0) list[mf_slot(count)] = t;
}

// One BFS level, as grid_level. The source never joins the backward search
// (its height stays MF_INF, so no flow is ever pushed back into it).
template <typename C>
__device__ void net_level(u32 n, u32 s, const u32* start, const u32* head, const u32* rev,
                          const C* res, u32* hgt, u32* lists, u32* counts, u32 step,
                          u32 forward) {
    Slots sl = mf_slots(lists, counts, n, step);
    u32 unseen = forward ? 0u : MF_INF;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < sl.ncur; i += gridDim.x * blockDim.x) {
        u32 u = sl.cur[i];
        u32 val = forward ? 1u : hgt[u] + 1;
        for (u32 a = start[u]; a < start[u + 1]; ++a) {
            u32 wv = head[a];
            C r = forward ? res[a] : res[rev[a]];
            if (r > 0 && (forward || wv != s) && hgt[wv] == unseen &&
                atomicCAS(&hgt[wv], unseen, val) == unseen)
                sl.next[mf_slot(sl.next_count)] = wv;
        }
    }
}

// The active nodes after a global relabel, into list slot 0. Also ends the
// iterations of the last round: adds both halves of the arrivals to the
// excess, and copies the fresh heights into the second half.
template <typename C>
__device__ void net_collect(u32 n, u32 s, u32 t, C* e, C* inc, u32* hgt, u32* list,
                            u32* count) {
    for (u32 v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        C in = inc[v] + inc[(u64)n + v];
        if (in != 0) {
            inc[v] = 0;
            inc[(u64)n + v] = 0;
            e[v] += in;
        }
        hgt[(u64)n + v] = hgt[v];
        if (v != s && v != t && e[v] > 0 && hgt[v] != MF_INF) list[mf_slot(count)] = v;
    }
}

// `inc_r` holds the arrivals of the previous iteration (every receiver was
// appended to this list), `inc_w` takes this iteration's; `hgt` is the
// current half of the heights. Only the sink's excess is added to directly
// (it never pushes).
template <typename C>
__device__ void net_push(u32 n, u32 s, u32 t, const u32* start, const u32* head, const u32* rev,
                         C* res, C* e, C* inc_r, C* inc_w, const u32* hgt, u32* lists,
                         u32* counts, u32 step, u32 tag, u32* stamp) {
    Slots sl = mf_slots(lists, counts, n, step);
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < sl.ncur; i += gridDim.x * blockDim.x) {
        u32 v = sl.cur[i];
        C ex = e[v];
        C in = inc_r[v];
        if (in != 0) {
            inc_r[v] = 0;
            ex += in;
        }
        u32 hv = hgt[v];
        if (ex > 0 && hv != MF_INF) {
            for (u32 a = start[v]; a < start[v + 1] && ex > 0; ++a) {
                C r = res[a];
                if (r <= 0) continue;
                u32 u = head[a];
                if (hgt[u] + 1 != hv) continue;
                C amt = mf_min(ex, r);
                res[a] = r - amt;
                res[rev[a]] += amt;
                ex -= amt;
                if (u == t)
                    mf_atomic_add(&e[t], amt);
                else if (mf_atomic_add(&inc_w[u], amt) == 0)
                    mf_append(u, stamp, tag, sl.next, sl.next_count);
            }
        }
        e[v] = ex;
    }
}

// Reads heights from `hgt` (the current half) and writes every listed node's
// height, new or not, to `hgt_next`.
template <typename C>
__device__ void net_relabel(u32 n, const u32* start, const u32* head, const C* res, const C* e,
                            const u32* hgt, u32* hgt_next, u32* lists, u32* counts, u32 step,
                            u32 tag, u32* stamp) {
    const u32* cur = lists + (u64)(step % 3) * n;
    u32 ncur = counts[step % 3];
    u32* next = lists + (u64)((step + 1) % 3) * n;
    u32* next_count = &counts[(step + 1) % 3];
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < ncur; i += gridDim.x * blockDim.x) {
        u32 v = cur[i];
        u32 hv = hgt[v];
        bool active = e[v] > 0 && hv != MF_INF;
        bool moved = false;
        if (active) {
            bool adm = false;
            u32 hmin = MF_INF;
            for (u32 a = start[v]; a < start[v + 1] && !adm; ++a) {
                if (res[a] <= 0) continue;
                u32 hu = hgt[head[a]];
                adm = hu + 1 == hv;
                hmin = hu < hmin ? hu : hmin;
            }
            if (!adm) {
                hv = hmin == MF_INF ? MF_INF : hmin + 1;
                moved = true;
            }
        }
        hgt_next[v] = hv;
        if (moved || active) mf_append(v, stamp, tag, next, next_count);
    }
}

// Labels as bytes: 1 where the mark (height array) is non-zero.
extern "C" __global__ void mf_labels(u64 n, const u32* mark, unsigned char* out) {
    for (u64 v = blockIdx.x * (u64)blockDim.x + threadIdx.x; v < n;
         v += (u64)gridDim.x * blockDim.x)
        out[v] = mark[v] != 0 ? 1 : 0;
}

// A grid state moving between GPUs travels as 16-bit values when every
// counter fits (the host checks the per-node bound): `i32` counters to and
// from `u16`, grid-stride over `n` values.
extern "C" __global__ void mf_pack16(u64 n, const int* src, unsigned short* dst) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x)
        dst[i] = (unsigned short)src[i];
}

extern "C" __global__ void mf_unpack16(u64 n, const unsigned short* src, int* dst) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x)
        dst[i] = (int)src[i];
}

// A host grid's 16-bit start: each node's excess and sink residual side by
// side (excess in the low half), into the two counter arrays.
extern "C" __global__ void mf_unpack_terminals16(u64 n, const unsigned int* pairs, int* e,
                                                 int* rt) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        unsigned int p = pairs[i];
        e[i] = (int)(p & 0xffffu);
        rt[i] = (int)(p >> 16);
    }
}

// ---------------------------------------------------------------- entry points

// One macro per kernel (`NAME_ENTRY(entry, C)`), instantiated for both
// counter types below.
#define GRID_INIT_ENTRY(name, C)                                                                   \
    extern "C" __global__ void name(u32 w, u32 h, u32 dp, u32 dirs, const i64* src,              \
                                    const i64* snk, const i64* caps, C* rc, C* rt, C* e) {         \
        grid_init<C>(w, h, dp, dirs, src, snk, caps, rc, rt, e);                                    \
    }
#define GRID_BFS_INIT_ENTRY(name, C)                                                               \
    extern "C" __global__ void name(u64 n, const C* rt, u32* hgt, u32* list, u32* count) {       \
        grid_bfs_init<C>(n, rt, hgt, list, count);                                                  \
    }
#define GRID_LEVEL_ENTRY(name, C)                                                                  \
    extern "C" __global__ void name(u32 w, u32 h, u32 dp, u32 dirs, const C* rc, u32* hgt,       \
                                    u32* lists, u32* counts, u32 step, u32 forward) {             \
        grid_level<C>(w, h, dp, dirs, rc, hgt, lists, counts, step, forward);                       \
    }
#define GRID_COLLECT_ENTRY(name, C)                                                                \
    extern "C" __global__ void name(u64 n, const C* e, const u32* hgt, u32* list, u32* count) {  \
        grid_collect<C>(n, e, hgt, list, count);                                                    \
    }
#define GRID_PUSH_ENTRY(name, C)                                                                   \
    extern "C" __global__ void name(u32 w, u32 h, u32 dp, u32 dirs, C* rc, C* rt, C* e,          \
                                    const u32* hgt, u32* lists, u32* counts, u32 step, u32 tag,   \
                                    u32* stamp) {                                                  \
        grid_push<C>(w, h, dp, dirs, rc, rt, e, hgt, lists, counts, step, tag, stamp);              \
    }
#define GRID_RELABEL_ENTRY(name, C)                                                                \
    extern "C" __global__ void name(u32 w, u32 h, u32 dp, u32 dirs, const C* rc, const C* rt,    \
                                    const C* e, u32* hgt, u32* lists, u32* counts, u32 step,      \
                                    u32 tag, u32* stamp) {                                         \
        grid_relabel<C>(w, h, dp, dirs, rc, rt, e, hgt, lists, counts, step, tag, stamp);           \
    }
#define GRID_SINK_LEFT_ENTRY(name, C)                                                              \
    extern "C" __global__ void name(u64 n, const C* rt, i64* out) {                              \
        grid_sink_left<C>(n, rt, out);                                                              \
    }
#define CUT_INIT_ENTRY(name, C)                                                                    \
    extern "C" __global__ void name(u64 n, const C* e, u32* mark, u32* list, u32* count) {       \
        cut_init<C>(n, e, mark, list, count);                                                       \
    }
#define NET_BFS_INIT_ENTRY(name, C)                                                                \
    extern "C" __global__ void name(u32 n, u32 t, u32* hgt, u32* list, u32* count) {             \
        net_bfs_init<C>(n, t, hgt, list, count);                                                    \
    }
#define NET_LEVEL_ENTRY(name, C)                                                                   \
    extern "C" __global__ void name(u32 n, u32 s, const u32* start, const u32* head,             \
                                    const u32* rev, const C* res, u32* hgt, u32* lists,           \
                                    u32* counts, u32 step, u32 forward) {                          \
        net_level<C>(n, s, start, head, rev, res, hgt, lists, counts, step, forward);               \
    }
#define NET_COLLECT_ENTRY(name, C)                                                                 \
    extern "C" __global__ void name(u32 n, u32 s, u32 t, C* e, C* inc, u32* hgt, u32* list,      \
                                    u32* count) {                                                  \
        net_collect<C>(n, s, t, e, inc, hgt, list, count);                                          \
    }
#define NET_PUSH_ENTRY(name, C)                                                                    \
    extern "C" __global__ void name(u32 n, u32 s, u32 t, const u32* start, const u32* head,      \
                                    const u32* rev, C* res, C* e, C* inc_r, C* inc_w,             \
                                    const u32* hgt, u32* lists, u32* counts, u32 step, u32 tag,   \
                                    u32* stamp) {                                                  \
        net_push<C>(n, s, t, start, head, rev, res, e, inc_r, inc_w, hgt, lists, counts, step,      \
                    tag, stamp);                                                                   \
    }
#define NET_RELABEL_ENTRY(name, C)                                                                 \
    extern "C" __global__ void name(u32 n, const u32* start, const u32* head, const C* res,      \
                                    const C* e, const u32* hgt, u32* hgt_next, u32* lists,        \
                                    u32* counts, u32 step, u32 tag, u32* stamp) {                  \
        net_relabel<C>(n, start, head, res, e, hgt, hgt_next, lists, counts, step, tag, stamp);     \
    }

GRID_INIT_ENTRY(mf_grid_init_i32, int)
GRID_BFS_INIT_ENTRY(mf_grid_bfs_init_i32, int)
GRID_LEVEL_ENTRY(mf_grid_level_i32, int)
GRID_COLLECT_ENTRY(mf_grid_collect_i32, int)
GRID_PUSH_ENTRY(mf_grid_push_i32, int)
GRID_RELABEL_ENTRY(mf_grid_relabel_i32, int)
GRID_SINK_LEFT_ENTRY(mf_grid_sink_left_i32, int)
CUT_INIT_ENTRY(mf_cut_init_i32, int)
NET_BFS_INIT_ENTRY(mf_net_bfs_init_i32, int)
NET_LEVEL_ENTRY(mf_net_level_i32, int)
NET_COLLECT_ENTRY(mf_net_collect_i32, int)
NET_PUSH_ENTRY(mf_net_push_i32, int)
NET_RELABEL_ENTRY(mf_net_relabel_i32, int)
GRID_INIT_ENTRY(mf_grid_init_i64, i64)
GRID_BFS_INIT_ENTRY(mf_grid_bfs_init_i64, i64)
GRID_LEVEL_ENTRY(mf_grid_level_i64, i64)
GRID_COLLECT_ENTRY(mf_grid_collect_i64, i64)
GRID_PUSH_ENTRY(mf_grid_push_i64, i64)
GRID_RELABEL_ENTRY(mf_grid_relabel_i64, i64)
GRID_SINK_LEFT_ENTRY(mf_grid_sink_left_i64, i64)
CUT_INIT_ENTRY(mf_cut_init_i64, i64)
NET_BFS_INIT_ENTRY(mf_net_bfs_init_i64, i64)
NET_LEVEL_ENTRY(mf_net_level_i64, i64)
NET_COLLECT_ENTRY(mf_net_collect_i64, i64)
NET_PUSH_ENTRY(mf_net_push_i64, i64)
NET_RELABEL_ENTRY(mf_net_relabel_i64, i64)
