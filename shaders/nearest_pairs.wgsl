// NearestPairs for the wgpu backend: exact nearest / k nearest point of B for
// each point of A, and the k closest such pairs, f32. The technique is the
// CUDA backend's (kernels/nearest_pairs.cu), ported to WGSL.
//
// The host prepends one line, `const KNN_MODE: bool = ...;`, and compiles this
// file twice: `np_query` then keeps one best neighbour in registers (nearest)
// or k of them in the query's output row (knn). WGSL has no generics; a
// constant lets the compiler drop the other branch.
//
// Grid on B, built on the device with no host round trip:
//  1. np_bbox: B's bounding box (atomicMax on order-preserving integer codes,
//     exact and deterministic).
//  2. np_setup + np_coarse_count + np_sumsq: counts of B on a 128^3 coarse
//     grid over the box and S2 = sum of squared counts, the density seen by an
//     average point of B, so clustered data gets fine cells where it is dense.
//  3. np_finalize: cell side h = cbrt(target / density) (in logs: f32 only),
//     at most MAX_AXIS cells per axis so that a cell key fits a u32.
//  4. Occupied cells are hashed (open addressing, linear probing, load <= 1/2,
//     keys inserted with atomicCompareExchangeWeak): np_insert counts points
//     per cell, the host's scan (shaders/scan.wgsl) turns counts into starts,
//     np_scatter writes B grouped by cell as (x, y, z, index) bits, np_pack
//     writes each slot as one vec4 (key + 1, start, count, 0).
// Queries: A is ordered by the Morton code of its coarse cell (count, scan,
// scatter) so that neighbouring invocations visit the same cells. Each query
// searches rings of cells (Chebyshev distance r = 0, 1, 2, ...) around its own
// cell, clipped to the grid; a cell is opened only if its box could hold a
// point within the current bound, and the search stops when the ring's lower
// bound exceeds it. The bounds carry slack for the rounding of cell coordinates
// and of f32 distances, so the answer is the exact minimum of
// d2 = dx*dx + dy*dy + dz*dz as computed here, ties to the smaller index of B.
// Top-k of the pairs (np_hist + np_select, four rounds, then np_compact): a
// radix select on the 64-bit key (d2 bits, index of A), 16 bits a round,
// finds the k-th smallest key exactly; the k pairs at or below it are
// compacted and the host sorts those k.
// Radius search (within, self_pairs) over the same grid, built with cells at
// least r / 2 wide: np_radius_count counts each query's pairs, the host reads
// the total and sizes the output from it, np_radius_fill writes each row
// (rows of at most SHORT pairs sorted in the invocation, longer ones listed),
// np_radius_sort sorts each listed row with one workgroup. The section's
// header says more.
//
// Loop budget (np_query): Mesa's llvmpipe stops every loop of a shader once
// LP_MAX_TGSI_LOOP_ITERATIONS = 65535 iterations have run in total (one
// counter per SIMD vector of invocations), and the code after the loop runs as
// if it had ended: a long walk (far queries, a cell full of duplicates) would
// return a wrong neighbour with no sign. So every loop iteration of a query
// calls `spend()`, which counts it against `pp.rnd` (the host passes
// LANE_BUDGET on CPU adapters, u32::MAX elsewhere); a query that runs out
// stops, writes CUT as its neighbour index (nearest: its entry; knn: the first
// of its row) and counts itself in gw[W_CUT]. The host then recomputes those
// queries exactly (src/nearest_pairs.rs). A vector's loop count is at most the
// sum of its lanes' counts (each iteration it runs is one of an active lane),
// so 16 lanes x LANE_BUDGET stays under the cap and the cap is never reached.

const WG: u32 = 256u;
const QWG: u32 = 128u;
const COARSE: u32 = 128u;
const NCOARSE: u32 = 2097152u; // 128^3
// Cells per axis: MAX_AXIS^3 + 1 < 2^32, so key + 1 fits a u32 and is never 0.
const MAX_AXIS: i32 = 1624;
const NPART: u32 = 256u; // workgroups of np_sumsq
// Grid cells per point of B at most (np_finalize): bounds the empty cells a
// query walks when B is small or sparse.
const MAX_CELLS_PER_POINT: f32 = 8.0;
const NBINS: u32 = 65536u;

// Words of `gw` / `gp`.
const W_BMAX: u32 = 0u; // 3: atomicMax of enc(max)
const W_BMIN: u32 = 3u; // 3: atomicMax of ~enc(min)
const W_CAND: u32 = 6u; // top-k: pairs compacted
const W_SELK: u32 = 8u; // top-k: rank still to find in the current prefix
const W_SELD: u32 = 9u; // top-k: selected bits of d2
const W_SELA: u32 = 10u; // top-k: selected bits of the index of A
const W_CUT: u32 = 11u; // queries that ran out of loop budget
const W_TOT_LO: u32 = 12u; // radius count: pairs found, low word
const W_TOT_HI: u32 = 13u; // radius count: pairs found, high word (carries)
const W_LONG: u32 = 14u; // radius count: rows longer than SHORT
const W_CUT2: u32 = 15u; // radius fill: rows that ran out of loop budget
// Neighbour index of a query that ran out of loop budget (never an index of
// B: the host keeps |B| below it).
const CUT: u32 = 0xfffffffeu;
const W_LO: u32 = 16u; // 3: box low corner (f32 bits)
const W_CINV: u32 = 19u; // 3: 1 / coarse side per axis
const W_H: u32 = 22u;
const W_INVH: u32 = 23u;
const W_EPS: u32 = 24u; // slack for bounds (coordinate magnitude, cell side)
const W_G: u32 = 25u; // 3: grid dims (i32 bits)
const W_TARGET: u32 = 28u; // points per cell aimed at
const W_BAD: u32 = 29u; // radius fill: rows whose pairs differ from their count
const W_LIST: u32 = 30u; // radius fill: rows listed for np_radius_sort
const W_PART: u32 = 256u; // NPART partial sums of np_sumsq

struct Params {
    n: u32, // points of `src`
    k: u32, // knn: neighbours per query; top-k: pairs; np_radius_sort: rows listed
    tmask: u32, // hash table size - 1
    rnd: u32, // top-k round 0..3; np_setup: target bits; queries: loop budget
    rad: f32, // radius search: r (np_finalize: cells at least r / 2 wide); else 0
    rad2: f32, // r * r, rounded once to f32 by the host
    upper: u32, // self_pairs: 1, keep only j > i
    _pad: u32,
}

struct Neighbor {
    index: u32,
    d2: f32,
}

struct Cand {
    d2: f32,
    a: u32,
    b: u32,
}

@group(0) @binding(0) var<uniform> pp: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> gw: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read> gp: array<u32>;
@group(0) @binding(4) var<storage, read_write> cnt: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> tkey: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> tcnt: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> table: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> pts: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read_write> order: array<u32>;
@group(0) @binding(10) var<storage, read_write> out: array<Neighbor>;
@group(0) @binding(11) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(12) var<storage, read_write> cand: array<Cand>;

var<workgroup> wsum: array<f32, 256>;
var<workgroup> wbox: array<atomic<u32>, 6>;
var<workgroup> wscan: array<u32, 256>;

fn inf() -> f32 {
    return bitcast<f32>(0x7f800000u);
}

fn gidx(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, size: u32) -> u32 {
    return (wid.x + wid.y * nwg.x) * size + lid;
}

fn point(i: u32) -> vec3<f32> {
    return vec3<f32>(src[3u * i], src[3u * i + 1u], src[3u * i + 2u]);
}

fn enc(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}

fn dec(e: u32) -> f32 {
    if ((e & 0x80000000u) != 0u) {
        return bitcast<f32>(e & 0x7fffffffu);
    }
    return bitcast<f32>(~e);
}

fn gpf(w: u32) -> f32 {
    return bitcast<f32>(gp[w]);
}

fn gwf(w: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&gw[w]));
}

fn put(w: u32, v: f32) {
    atomicStore(&gw[w], bitcast<u32>(v));
}

fn hash(k: u32) -> u32 {
    var x = k;
    x = x ^ (x >> 16u);
    x = x * 0x7feb352du;
    x = x ^ (x >> 15u);
    x = x * 0x846ca68bu;
    x = x ^ (x >> 16u);
    return x;
}

fn spread3(v0: u32) -> u32 {
    var v = v0 & 0x7fu;
    v = (v | (v << 8u)) & 0x0300f00fu;
    v = (v | (v << 4u)) & 0x030c30c3u;
    v = (v | (v << 2u)) & 0x09249249u;
    return v;
}

fn coarse_axis(p: f32, a: u32) -> u32 {
    let c = floor((p - gpf(W_LO + a)) * gpf(W_CINV + a));
    return u32(clamp(c, 0.0, f32(COARSE - 1u)));
}

fn coarse_morton(p: vec3<f32>) -> u32 {
    return spread3(coarse_axis(p.x, 0u)) | (spread3(coarse_axis(p.y, 1u)) << 1u)
        | (spread3(coarse_axis(p.z, 2u)) << 2u);
}

// ---------------------------------------------------------------- grid build

@compute @workgroup_size(256)
fn np_bbox(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if (lid < 6u) {
        atomicStore(&wbox[lid], 0u);
    }
    workgroupBarrier();
    let stride = nwg.x * nwg.y * WG;
    var mx = vec3<u32>(0u);
    var mn = vec3<u32>(0u);
    for (var i = gidx(wid, nwg, lid, WG); i < pp.n; i = i + stride) {
        let p = point(i);
        mx = max(mx, vec3<u32>(enc(p.x), enc(p.y), enc(p.z)));
        mn = max(mn, ~vec3<u32>(enc(p.x), enc(p.y), enc(p.z)));
    }
    for (var a = 0u; a < 3u; a = a + 1u) {
        atomicMax(&wbox[a], mx[a]);
        atomicMax(&wbox[3u + a], mn[a]);
    }
    workgroupBarrier();
    if (lid < 6u) {
        atomicMax(&gw[W_BMAX + lid], atomicLoad(&wbox[lid]));
    }
}

// One invocation: the coarse grid from the box.
@compute @workgroup_size(1)
fn np_setup() {
    var maxext = 0.0;
    for (var a = 0u; a < 3u; a = a + 1u) {
        let lo = dec(~atomicLoad(&gw[W_BMIN + a]));
        put(W_LO + a, lo);
        maxext = max(maxext, dec(atomicLoad(&gw[W_BMAX + a])) - lo);
    }
    for (var a = 0u; a < 3u; a = a + 1u) {
        let ext = dec(atomicLoad(&gw[W_BMAX + a])) - gwf(W_LO + a);
        // A flat axis still gets a positive side (cells then span it whole).
        let e = max(ext, max(maxext * 1e-3, 1e-30));
        put(W_CINV + a, f32(COARSE) / (e * 1.0001));
    }
    atomicStore(&gw[W_TARGET], pp.rnd);
}

@compute @workgroup_size(256)
fn np_coarse_count(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = gidx(wid, nwg, lid, WG);
    if (i < pp.n) {
        atomicAdd(&cnt[coarse_morton(point(i))], 1u);
    }
}

// NPART workgroups: partial sums of the squared coarse counts, in f32 (only a
// density estimate: its rounding moves the cell size, never the result).
@compute @workgroup_size(256)
fn np_sumsq(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    var s = 0.0;
    for (var i = wid.x * WG + lid; i < NCOARSE; i = i + NPART * WG) {
        let c = f32(atomicLoad(&cnt[i]));
        s = s + c * c;
    }
    wsum[lid] = s;
    workgroupBarrier();
    for (var o = WG / 2u; o > 0u; o = o / 2u) {
        if (lid < o) {
            wsum[lid] = wsum[lid] + wsum[lid + o];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        put(W_PART + wid.x, wsum[0]);
    }
}

// One invocation: the fine grid.
@compute @workgroup_size(1)
fn np_finalize() {
    var s2 = 0.0;
    for (var w = 0u; w < NPART; w = w + 1u) {
        s2 = s2 + gwf(W_PART + w);
    }
    var ext: array<f32, 3>;
    var maxext = 0.0;
    var maxabs = 0.0;
    var lcinv = 0.0;
    for (var a = 0u; a < 3u; a = a + 1u) {
        let lo = gwf(W_LO + a);
        let hi = dec(atomicLoad(&gw[W_BMAX + a]));
        ext[a] = hi - lo;
        maxext = max(maxext, ext[a]);
        maxabs = max(maxabs, max(abs(lo), abs(hi)));
        lcinv = lcinv + log(gwf(W_CINV + a));
    }
    // Density around an average point of B: S2 / (n * coarse cell volume);
    // h = cbrt(target / density), in logs so that no product overflows f32.
    let tgt = gwf(W_TARGET);
    var h = exp((log(tgt) + log(f32(pp.n)) - log(max(s2, 1.0)) - lcinv) / 3.0);
    // S2 counts each point in its own coarse cell, so isolated points (small
    // or sparse B) look like one point per coarse cell: h would stay near two
    // coarse sides whatever n is, e.g. a 64^3 grid for 7 points, and a query
    // would walk ~10^5 empty cells (llvmpipe stops any shader after 65535
    // loop iterations in all, so it even returned no neighbour). Floor: at
    // most MAX_CELLS_PER_POINT cells per point over the coarse box's volume.
    let lvol = 3.0 * log(f32(COARSE)) - lcinv;
    h = max(h, exp((lvol - log(MAX_CELLS_PER_POINT * f32(pp.n))) / 3.0));
    // Radius search: cells of at least r / 2, so a ball meets at most 5 per
    // axis whatever r is (beyond the box's extent, one or two cells do).
    h = max(h, min(pp.rad * 0.5, maxext));
    h = max(h, maxext / f32(MAX_AXIS - 2));
    if (!(h > 0.0) || !(h < 3.0e38) || maxext == 0.0) {
        h = 1.0;
    }
    for (var a = 0u; a < 3u; a = a + 1u) {
        let g = clamp(floor(ext[a] / h) + 1.0, 1.0, f32(MAX_AXIS));
        atomicStore(&gw[W_G + a], bitcast<u32>(i32(g)));
    }
    put(W_H, h);
    put(W_INVH, 1.0 / h);
    // Slack: a point may sit ~1 ulp of its coordinates outside the box of the
    // cell it was hashed to; 1e-4 h covers the rounding of (p - lo) * inv_h.
    put(W_EPS, 4e-7 * maxabs + 1e-4 * h);
}

fn grid_dim(a: u32) -> i32 {
    return bitcast<i32>(gp[W_G + a]);
}

fn cell_key(c: vec3<i32>) -> u32 {
    return u32(c.x) + u32(grid_dim(0u)) * (u32(c.y) + u32(grid_dim(1u)) * u32(c.z));
}

fn b_key1(p: vec3<f32>) -> u32 {
    var c: vec3<i32>;
    for (var a = 0u; a < 3u; a = a + 1u) {
        let f = floor((p[a] - gpf(W_LO + a)) * gpf(W_INVH));
        c[a] = i32(clamp(f, 0.0, f32(grid_dim(a) - 1)));
    }
    return cell_key(c) + 1u;
}

@compute @workgroup_size(256)
fn np_insert(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = gidx(wid, nwg, lid, WG);
    if (i >= pp.n) {
        return;
    }
    let key1 = b_key1(point(i));
    var s = hash(key1) & pp.tmask;
    loop {
        let r = atomicCompareExchangeWeak(&tkey[s], 0u, key1);
        if (r.exchanged || r.old_value == key1) {
            atomicAdd(&tcnt[s], 1u);
            return;
        }
        // A weak exchange may fail spuriously: only a taken slot moves on.
        if (r.old_value != 0u) {
            s = (s + 1u) & pp.tmask;
        }
    }
}

// After the scan, tcnt[s] is the start of slot s; the scatter bumps it to
// the slot's end (the next slot's start).
@compute @workgroup_size(256)
fn np_scatter(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = gidx(wid, nwg, lid, WG);
    if (i >= pp.n) {
        return;
    }
    let p = point(i);
    let key1 = b_key1(p);
    var s = hash(key1) & pp.tmask;
    while (atomicLoad(&tkey[s]) != key1) {
        s = (s + 1u) & pp.tmask;
    }
    let pos = atomicAdd(&tcnt[s], 1u);
    pts[pos] = vec4<u32>(bitcast<u32>(p.x), bitcast<u32>(p.y), bitcast<u32>(p.z), i);
}

@compute @workgroup_size(256)
fn np_pack(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let s = gidx(wid, nwg, lid, WG);
    if (s > pp.tmask) {
        return;
    }
    let key1 = atomicLoad(&tkey[s]);
    var start = 0u;
    if (s > 0u) {
        start = atomicLoad(&tcnt[s - 1u]);
    }
    let end = atomicLoad(&tcnt[s]);
    if (key1 == 0u) {
        table[s] = vec4<u32>(0u);
    } else {
        table[s] = vec4<u32>(key1, start, end - start, 0u);
    }
}

// A's order: cnt holds the scanned coarse counts of A (cursors).
@compute @workgroup_size(256)
fn np_order(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = gidx(wid, nwg, lid, WG);
    if (i < pp.n) {
        order[atomicAdd(&cnt[coarse_morton(point(i))], 1u)] = i;
    }
}

// ------------------------------------------------------------------ queries

// The query (private: one per invocation).
var<private> q: vec3<f32>;
var<private> qc: vec3<i32>; // own cell (may lie outside the grid)
var<private> qmargin: f32; // distance from q to its own cell's faces (0 if clamped)
var<private> qeps: f32; // slack on every distance bound
var<private> glo: vec3<f32>;
var<private> gdim: vec3<i32>;
var<private> gh: f32;

// nearest: the best so far.
var<private> best_d: f32;
var<private> best_j: u32;
// knn: the sorted list lives in out[row .. row + kk]; `have` entries so far,
// (kb_d, kb_j) the last one once the list is full.
var<private> row: u32;
var<private> kk: u32;
var<private> have: u32;
var<private> kb_d: f32;
var<private> kb_j: u32;
// Loop iterations so far, and whether the budget ran out.
var<private> work: u32;
var<private> cut: bool;

// Counts one loop iteration; false (and `cut` set) once the budget is spent:
// the caller's loop must then break.
fn spend() -> bool {
    if (work >= pp.rnd) {
        cut = true;
        return false;
    }
    work = work + 1u;
    return true;
}

fn bound() -> f32 {
    if (KNN_MODE) {
        if (have < kk) {
            return inf();
        }
        return kb_d;
    }
    return best_d;
}

fn key_less(d: f32, j: u32, e_d: f32, e_j: u32) -> bool {
    return d < e_d || (d == e_d && j < e_j);
}

fn offer(d: f32, j: u32) {
    if (!KNN_MODE) {
        if (key_less(d, j, best_d, best_j)) {
            best_d = d;
            best_j = j;
        }
        return;
    }
    if (have == kk && !key_less(d, j, kb_d, kb_j)) {
        return;
    }
    var p = kk - 1u;
    if (have < kk) {
        p = have;
        have = have + 1u;
    }
    loop {
        if (p == 0u || !spend()) {
            break;
        }
        let e = out[row + p - 1u];
        if (!key_less(d, j, e.d2, e.index)) {
            break;
        }
        out[row + p] = e;
        p = p - 1u;
    }
    out[row + p] = Neighbor(j, d);
    if (have == kk) {
        let e = out[row + kk - 1u];
        kb_d = e.d2;
        kb_j = e.index;
    }
}

fn make_query(p: vec3<f32>) {
    q = p;
    glo = vec3<f32>(gpf(W_LO), gpf(W_LO + 1u), gpf(W_LO + 2u));
    gdim = vec3<i32>(grid_dim(0u), grid_dim(1u), grid_dim(2u));
    gh = gpf(W_H);
    let inv_h = gpf(W_INVH);
    var margin = inf();
    var clamped = false;
    for (var a = 0u; a < 3u; a = a + 1u) {
        if (!spend()) {
            break;
        }
        var f = floor((p[a] - glo[a]) * inv_h);
        if (f < -4194304.0) {
            f = -4194304.0;
            clamped = true;
        }
        if (f > 4194304.0) {
            f = 4194304.0;
            clamped = true;
        }
        qc[a] = i32(f);
        let lo = glo[a] + f * gh;
        margin = min(margin, min(p[a] - lo, lo + gh - p[a]));
    }
    let mag = max(abs(p.x), max(abs(p.y), abs(p.z)));
    qeps = gpf(W_EPS) + 4e-7 * mag;
    qmargin = select(max(margin, 0.0), 0.0, clamped);
}

// Whether a point hashed to cell c could beat `bnd` (ties included): a lower
// bound of the squared distance from q to the cell's box, less the slack.
// Written without a loop: it runs once per cell visited, and every loop
// iteration counts against llvmpipe's cap.
fn cell_may_hold(c: vec3<i32>, bnd: f32) -> bool {
    let lo = glo + vec3<f32>(c) * gh;
    let d = max(max(lo - q, q - (lo + vec3<f32>(gh))) - vec3<f32>(qeps), vec3<f32>(0.0));
    return dot(d, d) * 0.99999 <= bnd;
}

// Lower bound of the squared distance to anything in ring r or beyond.
fn ring_bound(r: i32) -> f32 {
    if (r <= 0) {
        return 0.0;
    }
    let d = max(f32(r - 1) * gh + qmargin - qeps, 0.0);
    return d * d * 0.99999;
}

fn visit_cell(c: vec3<i32>) {
    if (!cell_may_hold(c, bound())) {
        return;
    }
    let key1 = cell_key(c) + 1u;
    var s = hash(key1) & pp.tmask;
    loop {
        if (!spend()) {
            return;
        }
        let e = table[s];
        if (e.x == key1) {
            for (var t = e.y; t < e.y + e.z; t = t + 1u) {
                if (!spend()) {
                    return;
                }
                let b = pts[t];
                let dx = q.x - bitcast<f32>(b.x);
                let dy = q.y - bitcast<f32>(b.y);
                let dz = q.z - bitcast<f32>(b.z);
                offer(dx * dx + dy * dy + dz * dz, b.w);
            }
            return;
        }
        if (e.x == 0u) {
            return;
        }
        s = (s + 1u) & pp.tmask;
    }
}

// Every cell at Chebyshev distance exactly r from q's cell, inside the grid.
fn visit_ring(r: i32) {
    let c0 = max(qc - vec3<i32>(r), vec3<i32>(0));
    let c1 = min(qc + vec3<i32>(r), gdim - vec3<i32>(1));
    for (var z = c0.z; z <= c1.z; z = z + 1) {
        if (!spend()) {
            return;
        }
        let zface = z == qc.z - r || z == qc.z + r;
        for (var y = c0.y; y <= c1.y; y = y + 1) {
            if (!spend()) {
                return;
            }
            let face = zface || y == qc.y - r || y == qc.y + r;
            if (face) {
                for (var x = c0.x; x <= c1.x; x = x + 1) {
                    if (!spend()) {
                        return;
                    }
                    visit_cell(vec3<i32>(x, y, z));
                }
            } else {
                // Inside the ring's faces only the two x ends belong to it.
                if (qc.x - r >= c0.x) {
                    visit_cell(vec3<i32>(qc.x - r, y, z));
                }
                if (qc.x + r <= c1.x) {
                    visit_cell(vec3<i32>(qc.x + r, y, z));
                }
            }
        }
    }
}

fn search() {
    // Rings below `r_first` miss the grid; `r_last` reaches its far corner.
    var r_first = 0;
    var r_last = 0;
    for (var a = 0u; a < 3u; a = a + 1u) {
        if (!spend()) {
            return;
        }
        r_first = max(r_first, max(-qc[a], qc[a] - (gdim[a] - 1)));
        r_last = max(r_last, max(qc[a], gdim[a] - 1 - qc[a]));
    }
    for (var r = r_first; r <= r_last; r = r + 1) {
        if (cut || !spend()) {
            return;
        }
        if (ring_bound(r) > bound()) {
            break;
        }
        visit_ring(r);
    }
}

@compute @workgroup_size(128)
fn np_query(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = gidx(wid, nwg, lid, QWG);
    if (t >= pp.n) {
        return;
    }
    let i = order[t];
    work = 0u;
    cut = false;
    make_query(point(i));
    best_d = inf();
    best_j = 0xffffffffu;
    kk = max(pp.k, 1u);
    row = i * kk;
    have = 0u;
    kb_d = inf();
    kb_j = 0xffffffffu;
    search();
    if (cut) {
        // Unfinished: the host recomputes this query.
        atomicAdd(&gw[W_CUT], 1u);
        out[row] = Neighbor(CUT, inf());
        return;
    }
    if (!KNN_MODE) {
        out[i] = Neighbor(best_j, best_d);
    }
}

// ------------------------------------------------------------------- top-k

// Round r looks at 16 bits of the key (d2 bits, index of A), high to low,
// among the pairs whose higher bits equal those selected so far.
fn digit_of(i: u32, rnd: u32) -> u32 {
    let d = bitcast<u32>(out[i].d2);
    let seld = atomicLoad(&gw[W_SELD]);
    let sela = atomicLoad(&gw[W_SELA]);
    switch rnd {
        case 0u: {
            return d >> 16u;
        }
        case 1u: {
            return select(NBINS, d & 0xffffu, (d >> 16u) == seld);
        }
        case 2u: {
            return select(NBINS, i >> 16u, d == seld);
        }
        default: {
            return select(NBINS, i & 0xffffu, d == seld && (i >> 16u) == sela);
        }
    }
}

@compute @workgroup_size(256)
fn np_hist(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = gidx(wid, nwg, lid, WG);
    if (i >= pp.n) {
        return;
    }
    let b = digit_of(i, pp.rnd);
    if (b < NBINS) {
        atomicAdd(&hist[pp.rnd * NBINS + b], 1u);
    }
}

// One workgroup: the bin b of this round's histogram that holds the rank
// still sought (k on round 0), which becomes part of the selected key.
@compute @workgroup_size(256)
fn np_select(@builtin(local_invocation_index) lid: u32) {
    let per = NBINS / WG;
    let base = pp.rnd * NBINS + lid * per;
    var s = 0u;
    for (var b = 0u; b < per; b = b + 1u) {
        s = s + atomicLoad(&hist[base + b]);
    }
    wscan[lid] = s;
    workgroupBarrier();
    for (var o = 1u; o < WG; o = o * 2u) {
        var t = 0u;
        if (lid >= o) {
            t = wscan[lid - o];
        }
        workgroupBarrier();
        wscan[lid] = wscan[lid] + t;
        workgroupBarrier();
    }
    var want = pp.k;
    if (pp.rnd > 0u) {
        want = atomicLoad(&gw[W_SELK]);
    }
    let before_me = wscan[lid] - s;
    storageBarrier();
    workgroupBarrier();
    if (before_me < want && want <= before_me + s) {
        var run = before_me;
        for (var b = 0u; b < per; b = b + 1u) {
            let h = atomicLoad(&hist[base + b]);
            if (run + h >= want) {
                let bin = lid * per + b;
                atomicStore(&gw[W_SELK], want - run);
                switch pp.rnd {
                    case 0u: {
                        atomicStore(&gw[W_SELD], bin);
                    }
                    case 1u: {
                        atomicStore(&gw[W_SELD], (atomicLoad(&gw[W_SELD]) << 16u) | bin);
                    }
                    case 2u: {
                        atomicStore(&gw[W_SELA], bin);
                    }
                    default: {
                        atomicStore(&gw[W_SELA], (atomicLoad(&gw[W_SELA]) << 16u) | bin);
                    }
                }
                break;
            }
            run = run + h;
        }
    }
}

// Every pair whose key is at most the selected one: exactly k of them.
@compute @workgroup_size(256)
fn np_compact(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = gidx(wid, nwg, lid, WG);
    if (i >= pp.n) {
        return;
    }
    let e = out[i];
    let d = bitcast<u32>(e.d2);
    let seld = atomicLoad(&gw[W_SELD]);
    if (d < seld || (d == seld && i <= atomicLoad(&gw[W_SELA]))) {
        let p = atomicAdd(&gw[W_CAND], 1u);
        if (p < pp.k) {
            cand[p] = Cand(e.d2, i, e.index);
        }
    }
}

// ------------------------------------------------------------ radius search
//
// Every pair (i, j) with d2 = dx*dx + dy*dy + dz*dz (the expression of
// visit_cell) at most pp.rad2, j > i as well for self_pairs (pp.upper), rows
// sorted by (d2, j). Bindings as above; `hist` holds one count per row of A
// plus a trailing 0, which the host's scan turns into row offsets (the last
// one the total), and `cand` the rows left to np_radius_sort (in `a`).
//
// Cells: each query visits the cells whose index range meets
// [q - w, q + w] per axis, w = r (1 + 1e-6) + qeps. A point b of the ball
// (d2 <= r2 as computed, so |b - q| <= r (1 + 2e-7) on every axis) lies in
// that box with the slack of qeps to spare, and the cell index
// floor((p - lo) * inv_h) is monotone in p, so b's cell is one of them.
// Cells are at least r / 2 wide (np_finalize): at most 5 per axis, 125 in
// all, and cell_may_hold skips those beyond the ball.
//
// Counting and filling walk the same cells and points and spend the same loop
// budget (radius_walk), so a row cut short in one pass is cut in the other:
// the host recomputes those rows (pp.rnd leaves room under LANE_BUDGET for the
// fill's sort of a short row, which does not spend). A row that is not cut
// must fill exactly its count; one that does not is counted in gw[W_BAD] and
// the host fails the call rather than return it.
//
// Totals: each count is below 2^32 but their sum need not be; the count pass
// adds with carry (a wrapped atomicAdd returned an old value larger than the
// result) into gw[W_TOT_HI]:gw[W_TOT_LO], per workgroup then once globally.
//
// Sorting a long row (np_radius_sort): bitonic sort in the form where every
// comparator puts the smaller key first (each merge starts with a "flip" that
// compares mirrored positions), so positions past the row's end act as +inf
// and never move: the row needs no padding in memory. Blocks of CHUNK are
// sorted in workgroup memory; the merges past CHUNK run their wide steps in
// place in `out` and their narrow steps (distance below CHUNK) in workgroup
// memory again. Any length up to 2^30 (the host's limit).

// Rows of at most this many pairs are sorted by their own invocation.
const SHORT: u32 = 32u;
// Count of a row that ran out of loop budget (counts are at most |B| < CUT).
const RCUT: u32 = 0xffffffffu;
const SORT_WG: u32 = 256u;
const CHUNK: u32 = 1024u;

var<private> rfill: bool; // filling (else counting)
var<private> rfound: u32; // pairs found so far
var<private> rshort: bool; // fill: the row is sorted in rbuf
var<private> rpos: u32; // fill: next slot of a long row in `out`
var<private> rend: u32; // fill: end of the row in `out`
var<private> rbuf: array<vec2<u32>, 32>; // fill: (d2 bits, j) of a short row, sorted

var<workgroup> wtot: array<atomic<u32>, 3>; // count: low, high, long rows
var<workgroup> wseg: vec2<u32>; // sort: start and length of the row
var<workgroup> wkey: array<vec2<u32>, 1024>; // sort: (d2 bits, j)

fn key_gt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}

fn radius_take(d: f32, j: u32) {
    rfound = rfound + 1u;
    if (!rfill) {
        return;
    }
    if (rshort) {
        // More than counted: the row is reported as bad, its slots untouched.
        if (rfound > SHORT) {
            return;
        }
        let key = vec2<u32>(bitcast<u32>(d), j);
        var p = rfound - 1u;
        while (p > 0u && key_gt(rbuf[p - 1u], key)) {
            rbuf[p] = rbuf[p - 1u];
            p = p - 1u;
        }
        rbuf[p] = key;
    } else if (rpos < rend) {
        out[rpos] = Neighbor(j, d);
        rpos = rpos + 1u;
    }
}

fn radius_cell(c: vec3<i32>, i: u32) {
    if (!cell_may_hold(c, pp.rad2)) {
        return;
    }
    let key1 = cell_key(c) + 1u;
    var s = hash(key1) & pp.tmask;
    loop {
        if (!spend()) {
            return;
        }
        let e = table[s];
        if (e.x == key1) {
            for (var t = e.y; t < e.y + e.z; t = t + 1u) {
                if (!spend()) {
                    return;
                }
                let b = pts[t];
                let dx = q.x - bitcast<f32>(b.x);
                let dy = q.y - bitcast<f32>(b.y);
                let dz = q.z - bitcast<f32>(b.z);
                let d2 = dx * dx + dy * dy + dz * dz;
                if (d2 <= pp.rad2 && (pp.upper == 0u || b.w > i)) {
                    radius_take(d2, b.w);
                }
            }
            return;
        }
        if (e.x == 0u) {
            return;
        }
        s = (s + 1u) & pp.tmask;
    }
}

// The cell of p clamped to the grid, as b_key1 computes it per axis.
fn radius_cell_of(p: vec3<f32>, inv_h: f32) -> vec3<i32> {
    let f = floor((p - glo) * inv_h);
    return vec3<i32>(clamp(f, vec3<f32>(0.0), vec3<f32>(gdim - vec3<i32>(1))));
}

// Offers every point of B within r of a[i] to radius_take; `cut` is set when
// the loop budget ran out.
fn radius_walk(i: u32) {
    work = 0u;
    cut = false;
    rfound = 0u;
    make_query(point(i));
    let w = pp.rad * 1.000001 + qeps;
    let c0 = radius_cell_of(q - vec3<f32>(w), gpf(W_INVH));
    let c1 = radius_cell_of(q + vec3<f32>(w), gpf(W_INVH));
    for (var z = c0.z; z <= c1.z; z = z + 1) {
        for (var y = c0.y; y <= c1.y; y = y + 1) {
            for (var x = c0.x; x <= c1.x; x = x + 1) {
                if (cut || !spend()) {
                    return;
                }
                radius_cell(vec3<i32>(x, y, z), i);
            }
            if (cut || !spend()) {
                return;
            }
        }
        if (cut || !spend()) {
            return;
        }
    }
}

// Per query: its count into hist[i] (RCUT if cut), and the workgroup's sum
// and long rows into gw with carry.
@compute @workgroup_size(128)
fn np_radius_count(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if (lid < 3u) {
        atomicStore(&wtot[lid], 0u);
    }
    workgroupBarrier();
    let t = gidx(wid, nwg, lid, QWG);
    if (t == 0u) {
        atomicStore(&hist[pp.n], 0u);
    }
    var found = 0u;
    if (t < pp.n) {
        let i = order[t];
        rfill = false;
        radius_walk(i);
        if (cut) {
            atomicAdd(&gw[W_CUT], 1u);
            atomicStore(&hist[i], RCUT);
        } else {
            atomicStore(&hist[i], rfound);
            found = rfound;
            if (found > SHORT) {
                atomicAdd(&wtot[2], 1u);
            }
        }
    }
    let old = atomicAdd(&wtot[0], found);
    if (old + found < old) {
        atomicAdd(&wtot[1], 1u);
    }
    workgroupBarrier();
    if (lid == 0u) {
        let lo = atomicLoad(&wtot[0]);
        let g = atomicAdd(&gw[W_TOT_LO], lo);
        atomicAdd(&gw[W_TOT_HI], atomicLoad(&wtot[1]) + select(0u, 1u, g + lo < g));
        atomicAdd(&gw[W_LONG], atomicLoad(&wtot[2]));
    }
}

// Per query, once hist holds row offsets: its pairs into out[start..end]
// (sorted if at most SHORT), and long rows listed in cand for np_radius_sort
// (pp.k slots; not the rows cut short, which the host writes and sorts).
@compute @workgroup_size(128)
fn np_radius_fill(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = gidx(wid, nwg, lid, QWG);
    if (t >= pp.n) {
        return;
    }
    let i = order[t];
    let start = atomicLoad(&hist[i]);
    let len = atomicLoad(&hist[i + 1u]) - start;
    rfill = true;
    rshort = len <= SHORT;
    rpos = start;
    rend = start + len;
    radius_walk(i);
    if (cut) {
        // The host writes this row.
        atomicAdd(&gw[W_CUT2], 1u);
    } else if (rfound != len) {
        atomicAdd(&gw[W_BAD], 1u);
    } else if (rshort) {
        for (var p = 0u; p < len; p = p + 1u) {
            out[start + p] = Neighbor(rbuf[p].y, bitcast<f32>(rbuf[p].x));
        }
    }
    if (!rshort && !cut) {
        let slot = atomicAdd(&gw[W_LIST], 1u);
        if (slot < pp.k) {
            cand[slot] = Cand(0.0, i, 0u);
        }
    }
}

// Comparator p of a sort step at distance h (log2 lh): a flip pairs mirrored
// positions of each block of 2h, a half-cleaner positions h apart.
fn sort_pair(p: u32, h: u32, lh: u32, flip: bool) -> vec2<u32> {
    let base = (p >> lh) << (lh + 1u);
    let off = p & (h - 1u);
    if (flip) {
        return vec2<u32>(base + off, base + 2u * h - 1u - off);
    }
    return vec2<u32>(base + off, base + off + h);
}

// One step over the whole row in `out`; the positions from `len` on are +inf.
fn sort_global_step(s: u32, len: u32, half: u32, h: u32, flip: bool, lid: u32) {
    let lh = firstTrailingBit(h);
    for (var p = lid; p < half; p = p + SORT_WG) {
        let pr = sort_pair(p, h, lh, flip);
        if (pr.y < len) {
            let x = out[s + pr.x];
            let y = out[s + pr.y];
            if (key_less(y.d2, y.index, x.d2, x.index)) {
                out[s + pr.x] = y;
                out[s + pr.y] = x;
            }
        }
    }
    storageBarrier();
}

fn sort_chunk_step(size: u32, h: u32, flip: bool, lid: u32) {
    let lh = firstTrailingBit(h);
    for (var p = lid; p < size / 2u; p = p + SORT_WG) {
        let pr = sort_pair(p, h, lh, flip);
        let x = wkey[pr.x];
        let y = wkey[pr.y];
        if (key_gt(x, y)) {
            wkey[pr.x] = y;
            wkey[pr.y] = x;
        }
    }
    workgroupBarrier();
}

// The `size` positions of the row from `base` on, through workgroup memory:
// sorted whole (`full`), or only the steps of distance below `size` of a
// merge.
fn sort_chunk(s: u32, len: u32, base: u32, size: u32, full: bool, lid: u32) {
    for (var v = lid; v < size; v = v + SORT_WG) {
        var key = vec2<u32>(0xffffffffu);
        if (base + v < len) {
            let e = out[s + base + v];
            key = vec2<u32>(bitcast<u32>(e.d2), e.index);
        }
        wkey[v] = key;
    }
    workgroupBarrier();
    if (full) {
        for (var k = 2u; k <= size; k = k * 2u) {
            sort_chunk_step(size, k / 2u, true, lid);
            for (var h = k / 4u; h > 0u; h = h / 2u) {
                sort_chunk_step(size, h, false, lid);
            }
        }
    } else {
        for (var h = size / 2u; h > 0u; h = h / 2u) {
            sort_chunk_step(size, h, false, lid);
        }
    }
    for (var v = lid; v < size; v = v + SORT_WG) {
        if (base + v < len) {
            out[s + base + v] = Neighbor(wkey[v].y, bitcast<f32>(wkey[v].x));
        }
    }
    storageBarrier();
}

// One workgroup per listed row (pp.k rows): sorts it by (d2, j).
@compute @workgroup_size(256)
fn np_radius_sort(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let w = wid.x + wid.y * nwg.x;
    if (w >= pp.k) {
        return;
    }
    if (lid == 0u) {
        let i = cand[w].a;
        let s = atomicLoad(&hist[i]);
        wseg = vec2<u32>(s, atomicLoad(&hist[i + 1u]) - s);
    }
    let seg = workgroupUniformLoad(&wseg);
    let s = seg.x;
    let len = seg.y;
    if (len < 2u) {
        return;
    }
    // The row's length rounded up to a power of two (len <= 2^30).
    let n2 = 1u << (32u - countLeadingZeros(len - 1u));
    let size = min(n2, CHUNK);
    for (var base = 0u; base < len; base = base + size) {
        sort_chunk(s, len, base, size, true, lid);
    }
    for (var k = 2u * size; k <= n2; k = k * 2u) {
        sort_global_step(s, len, n2 / 2u, k / 2u, true, lid);
        for (var h = k / 4u; h >= size; h = h / 2u) {
            sort_global_step(s, len, n2 / 2u, h, false, lid);
        }
        for (var base = 0u; base < len; base = base + size) {
            sort_chunk(s, len, base, size, false, lid);
        }
    }
}
