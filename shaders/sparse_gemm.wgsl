// SparseGemm for the wgpu backend: C = A * B, CSR x CSR, f32.
//
// Two phases (symbolic: the exact nnz of each row of C; numeric: values and
// sorted columns written straight into C), rows binned by work, the same
// technique as the CUDA backend's kernels/sparse_gemm.cu cut down to what
// WGSL offers (no warp match, no float atomics, no dynamic shared memory):
//  1. `spg_analyze`, one thread per row: the row goes to the merge bin when
//     A's row has at most MERGE_K entries and at most MERGE_W products, else
//     to the general bin; merge rows of TEAM_MIN + 1 to TEAM_W products are
//     team rows. Both flags are scanned on the device (shaders/scan.wgsl);
//     `spg_scatter` writes the row list: thread-merge rows first, team rows
//     next, general rows last (each in row order: positions from the
//     scans), and `spg_bins` writes the workgroup counts of the merge and
//     team kernels into qmeta, which they are dispatched from (indirect
//     dispatch): no host round trip is needed to bin, and no kernel runs
//     over rows that are not its own (measured on the H100: the team
//     kernels launched over all 4.2M merge rows of poisson2d, none of them
//     theirs, took 2.8-3.0 ms each, twice the whole CUDA product).
//  2. Merge bin (`spg_*_merge`), one thread per row: a k-way merge of the
//     (sorted) B rows of A's row with the heads in registers. Each output
//     column is the minimum head; the lists holding it are summed in A's
//     order. The output comes out sorted: nothing to hash, nothing to sort.
//     Team rows go instead to the team kernels (`spg_*_team`, 32 threads
//     per row: a subgroup sorting the row's products in registers where
//     subgroups are 32 wide, else products compared in workgroup memory).
//  3. General bin (`spg_*_general`), one workgroup per row, rows drawn from a
//     queue (a global atomic counter) by a fixed number of workgroups (on
//     CPU adapters one row per workgroup, `one_row`: Mesa's llvmpipe ends a
//     shader's loops after 65,535 iterations in all, so no workgroup may
//     add up the loops of many rows; a single row of some 10,000 entries of
//     A would still reach the cap there): the
//     row's column span is cut into windows of up to WG * SLICE_MAX columns,
//     each a bitmap in workgroup memory. The workgroup walks A's row and
//     splits each B row among its threads (entry f to thread f mod WG); bits
//     are set with atomicOr. A column is owned by thread (column - window) /
//     slice: per-thread counts, a workgroup scan (symbolic: the nnz). The
//     numeric pass then writes the window's columns into C in order with
//     zero values and walks the products again, adding each into C at its
//     column's rank (from the bitmap), with a barrier between B rows: a B
//     row holds a column once, so the threads of one step never share a
//     column, and each value is accumulated in A's order.
//     Windows skip column ranges with no entry (an atomicMin finds the next
//     entry past the window), so a row costs windows * (its products) steps,
//     windows <= min(span / window width, nnz of the row) + 1. (Before: each
//     thread binary-searched every B row for its slice, 256 searches per
//     B row, far more work than the products on R-MAT.)
//  4. Between the phases the host reads back nnz(C) (and the general bin's
//     row count) once to allocate C exactly; the numeric kernels write C's
//     offsets as u64 and the rows in place.
//
// Determinism: every value is the chain acc = fma(A(i,p), B(p,j), acc) from
// acc = 0 over the p of A's row in stored order (as in the CUDA backend), in
// both bins, computed by one thread: bit-identical from run to run whatever
// the scheduling. Products that cancel stay as explicit entries.
//
// Offsets of A and B are u64 (pairs of u32, little-endian); only the low word
// is read: the host guarantees nnz < 2^32. Column indices are below
// 0xffffffff (the host checks B's column count), which is the merge's
// "no more entries" sentinel.
//
// Built without wgpu's runtime checks (pipeline.rs; measured on the H100,
// they made the team kernels 1.4-1.7x slower): every index stays in range
// for a valid CSR pair, which the host API guarantees (a `DeviceCsr` is made
// by `upload_csr` from a checked `CsrMatrix` or is a product of this
// backend; the CUDA kernels read the same inputs unchecked). Workgroup
// arrays are indexed by lane (< WG), by products of a team row (< TEAM_W
// per team) or by bitmap words (< WORDS * WG), and every element is written
// before it is read. Every loop is bounded by its data: the merge advances
// a list per step, the general bin's queue ends at the row count and its
// windows move strictly right.
// #unchecked

const WG: u32 = 256u;
// Merge bin: A rows of at most MERGE_K entries and at most MERGE_W products.
const MERGE_K: u32 = 8u;
const MERGE_W: u32 = 256u;
// General bin: columns a thread owns in one window (WORDS bitmap words).
const SLICE_MAX: u32 = 256u;
const WORDS: u32 = 8u;
const NONE: u32 = 0xffffffffu;

struct SpgParams {
    rows: u32,
    // 1: a general-bin workgroup takes one row only (CPU adapters: llvmpipe's
    // loop cap counts every iteration of the invocation).
    one_row: u32,
    // The adapter's max_compute_workgroups_per_dimension (spg_bins).
    max_dim: u32,
    // 1: B has at most 2^26 columns, so column * 64 + t fits a u32 (the
    // numeric team sort's keys).
    keyed: u32,
}

@group(0) @binding(0) var<uniform> sp: SpgParams;
@group(0) @binding(1) var<storage, read> a_off: array<u32>;
@group(0) @binding(2) var<storage, read> a_idx: array<u32>;
@group(0) @binding(3) var<storage, read> a_val: array<f32>;
@group(0) @binding(4) var<storage, read> b_off: array<u32>;
@group(0) @binding(5) var<storage, read> b_idx: array<u32>;
@group(0) @binding(6) var<storage, read> b_val: array<f32>;
// rows + 1 merge flags (thread merge or team), scanned in place into merge
// positions; [rows] = M, the merge rows.
@group(0) @binding(7) var<storage, read_write> mpos: array<u32>;
// rows + 1 team flags, scanned likewise; [rows] = T, the team rows.
@group(0) @binding(8) var<storage, read_write> tpos: array<u32>;
// Row list: thread-merge rows at [0, M - T), team rows at [M - T, M),
// general rows at [M, rows).
@group(0) @binding(9) var<storage, read_write> list: array<u32>;
// rows + 1 row nnz, scanned in place into C's offsets; [rows] = nnz(C).
@group(0) @binding(10) var<storage, read_write> cnt: array<u32>;
// [0], [1]: row queues of the symbolic and numeric general kernels;
// [2], [3]: nnz(C) as a 64-bit sum (low, high word): the host checks it
// against the limits before trusting the u32 scan.
@group(0) @binding(11) var<storage, read_write> qmeta: array<atomic<u32>>;
@group(0) @binding(12) var<storage, read_write> c_idx: array<u32>;
@group(0) @binding(13) var<storage, read_write> c_val: array<f32>;
@group(0) @binding(14) var<storage, read_write> c_off: array<u32>;
// Workgroups (x, y, z) of the symbolic merge at [0..3), of the team kernels
// at [3..6), of the numeric merge at [6..9) (spg_bins): the indirect
// dispatch sizes, in a buffer of their own (wgpu forbids a dispatch to read
// its sizes from a buffer it binds).
@group(0) @binding(15) var<storage, read_write> ind: array<u32>;

fn row_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// ------------------------------------------------------------------ binning

@compute @workgroup_size(256)
fn spg_analyze(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = row_index(gid, nwg);
    if (i > sp.rows) {
        return;
    }
    if (i == sp.rows) {
        mpos[i] = 0u;
        tpos[i] = 0u;
        return;
    }
    let s = a_off[2u * i];
    let e = a_off[2u * i + 2u];
    var w = MERGE_W + 1u;
    if (e - s <= MERGE_K) {
        // Each term capped at MERGE_W + 1: at most 8 of them, no wrap.
        w = 0u;
        for (var k = s; k < e; k = k + 1u) {
            let p = a_idx[k];
            w = w + min(b_off[2u * p + 2u] - b_off[2u * p], MERGE_W + 1u);
        }
    }
    let merge = w <= MERGE_W;
    mpos[i] = select(0u, 1u, merge);
    tpos[i] = select(0u, 1u, w > TEAM_MIN && w <= TEAM_W);
}

@compute @workgroup_size(256)
fn spg_scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = row_index(gid, nwg);
    if (i >= sp.rows) {
        return;
    }
    let pos = mpos[i];
    let tp = tpos[i];
    if (tpos[i + 1u] != tp) {
        list[mpos[sp.rows] - tpos[sp.rows] + tp] = i;
    } else if (mpos[i + 1u] != pos) {
        list[pos - tp] = i;
    } else {
        list[mpos[sp.rows] + i - pos] = i;
    }
}

// Workgroups (x, y, 1) for `groups` in a line, spread over y past max_dim
// (as the host's `grid`), at ind[at..at + 3).
fn put_groups(at: u32, groups: u32) {
    let x = max(min(groups, sp.max_dim), 1u);
    let y = (groups + x - 1u) / x;
    ind[at] = select(x, 0u, groups == 0u);
    ind[at + 1u] = select(y, 1u, groups == 0u);
    ind[at + 2u] = 1u;
}

// One thread: the indirect dispatch sizes of the merge and team kernels.
@compute @workgroup_size(1)
fn spg_bins() {
    let m = mpos[sp.rows];
    let t = tpos[sp.rows];
    put_groups(0u, (m - t + WG - 1u) / WG);
    put_groups(3u, (t + TEAMS - 1u) / TEAMS);
    put_groups(6u, (m - t + NM_T - 1u) / NM_T);
}

var<workgroup> g_tot: atomic<u32>;
var<workgroup> g_carry: atomic<u32>;

// Adds `n` to the 64-bit total of C's nnz (qmeta[2] low word, qmeta[3] high
// word): a workgroup sum with its carries first, then one global add.
// Called from uniform control flow by all WG threads.
fn add_total(lid: u32, n: u32) {
    if (lid == 0u) {
        atomicStore(&g_tot, 0u);
        atomicStore(&g_carry, 0u);
    }
    workgroupBarrier();
    // Only threads with something to add (the team kernels' lanes other
    // than a team's first have nothing): atomics on one workgroup address
    // are serialized.
    if (n != 0u) {
        let old = atomicAdd(&g_tot, n);
        if (old + n < old) {
            atomicAdd(&g_carry, 1u);
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        add_total_global(atomicLoad(&g_tot), atomicLoad(&g_carry));
    }
}

fn add_total_global(n: u32, carry: u32) {
    let old = atomicAdd(&qmeta[2], n);
    let c = carry + select(0u, 1u, old + n < old);
    if (c != 0u) {
        atomicAdd(&qmeta[3], c);
    }
}

// ---------------------------------------------------------------- merge bin

// One list of the merge: head column (NONE when done), position and end in
// B, A's value.
struct Lst {
    h: u32,
    p: u32,
    e: u32,
    a: f32,
}

// List `q` of A's row starting at `s` with `n` entries (empty past n).
fn lst_open(s: u32, n: u32, q: u32, numeric: bool) -> Lst {
    var l = Lst(NONE, 0u, 0u, 0.0);
    if (q < n) {
        let p = a_idx[s + q];
        l.p = b_off[2u * p];
        l.e = b_off[2u * p + 2u];
        if (l.p < l.e) {
            l.h = b_idx[l.p];
        }
        if (numeric) {
            l.a = a_val[s + q];
        }
    }
    return l;
}

// When the list's head is `m`: adds its product to `acc` and advances it.
fn lst_step(l: ptr<function, Lst>, m: u32, acc: ptr<function, f32>, numeric: bool) {
    if ((*l).h == m) {
        let f = (*l).p;
        if (numeric) {
            *acc = fma((*l).a, b_val[f], *acc);
        }
        let g = f + 1u;
        (*l).p = g;
        var h = NONE;
        if (g < (*l).e) {
            h = b_idx[g];
        }
        (*l).h = h;
    }
}

// The smallest head of eight lists (NONE when all are done).
fn min_head(l0: Lst, l1: Lst, l2: Lst, l3: Lst, l4: Lst, l5: Lst, l6: Lst, l7: Lst) -> u32 {
    return min(min(min(l0.h, l1.h), min(l2.h, l3.h)), min(min(l4.h, l5.h), min(l6.h, l7.h)));
}

// Merges the B rows of A's row `row` and returns the row's nnz (symbolic).
// The MERGE_K = 8 lists are eight named variables, not an array: an array
// indexed in a loop lands in local memory on GPUs, and every step of the
// merge would wait on it. (Naga cannot pass a pointer into a struct that
// was itself passed by pointer, so the lists stay loose variables here and
// in spg_num_merge.)
fn merge_count(row: u32) -> u32 {
    let s = a_off[2u * row];
    let n = a_off[2u * row + 2u] - s;
    var l0 = lst_open(s, n, 0u, false);
    var l1 = lst_open(s, n, 1u, false);
    var l2 = lst_open(s, n, 2u, false);
    var l3 = lst_open(s, n, 3u, false);
    var l4 = lst_open(s, n, 4u, false);
    var l5 = lst_open(s, n, 5u, false);
    var l6 = lst_open(s, n, 6u, false);
    var l7 = lst_open(s, n, 7u, false);
    var w = 0u;
    var acc = 0.0;
    // At most MERGE_W iterations (one per output entry).
    loop {
        let m = min_head(l0, l1, l2, l3, l4, l5, l6, l7);
        if (m == NONE) {
            break;
        }
        lst_step(&l0, m, &acc, false);
        lst_step(&l1, m, &acc, false);
        lst_step(&l2, m, &acc, false);
        lst_step(&l3, m, &acc, false);
        lst_step(&l4, m, &acc, false);
        lst_step(&l5, m, &acc, false);
        lst_step(&l6, m, &acc, false);
        lst_step(&l7, m, &acc, false);
        w = w + 1u;
    }
    return w;
}

@compute @workgroup_size(256)
fn spg_sym_merge(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = row_index(gid, nwg);
    var n = 0u;
    if (k < mpos[sp.rows] - tpos[sp.rows]) {
        let row = list[k];
        n = merge_count(row);
        cnt[row] = n;
    }
    add_total(lid, n);
}

// The numeric merge stages its output in workgroup memory, NM_D entries
// of each row per round, and the workgroup then writes each row's run with
// neighbouring threads: a thread writing its own row would scatter every
// store over NM_T rows (measured on the H100 for poisson2d: 1.55 ms for
// this kernel against 0.16 ms for the symbolic merge, which stores
// nothing; the CUDA kernel stages the same way).
const NM_T: u32 = 128u;
const NM_D: u32 = 16u;
var<workgroup> m_col: array<u32, 2176>; // NM_T * (NM_D + 1): odd stride, no bank conflicts
var<workgroup> m_val: array<f32, 2176>;
var<workgroup> m_out: array<u32, 128>;
var<workgroup> m_n: array<u32, 128>;
var<workgroup> m_more: atomic<u32>;

@compute @workgroup_size(128)
fn spg_num_merge(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let k = (wid.x + wid.y * nwg.x) * NM_T + lid;
    var live = k < mpos[sp.rows] - tpos[sp.rows];
    // The row's lists (all empty past the end of the list of rows).
    var row = 0u;
    var s = 0u;
    var na = 0u;
    var out = 0u;
    if (live) {
        row = list[k];
        s = a_off[2u * row];
        na = a_off[2u * row + 2u] - s;
        out = cnt[row];
    }
    var l0 = lst_open(s, na, 0u, true);
    var l1 = lst_open(s, na, 1u, true);
    var l2 = lst_open(s, na, 2u, true);
    var l3 = lst_open(s, na, 3u, true);
    var l4 = lst_open(s, na, 4u, true);
    var l5 = lst_open(s, na, 5u, true);
    var l6 = lst_open(s, na, 6u, true);
    var l7 = lst_open(s, na, 7u, true);
    if (lid == 0u) {
        atomicStore(&m_more, 0u);
    }
    // One round per NM_D entries of the longest row (<= MERGE_W / NM_D + 1).
    loop {
        // The reset of m_more and the last round's reads are done.
        workgroupBarrier();
        var n = 0u;
        for (var d = 0u; d < NM_D; d = d + 1u) {
            if (!live) {
                break;
            }
            let m = min_head(l0, l1, l2, l3, l4, l5, l6, l7);
            if (m == NONE) {
                live = false;
            } else {
                // Lists in A's order: the chain of fma in p order.
                var acc = 0.0;
                lst_step(&l0, m, &acc, true);
                lst_step(&l1, m, &acc, true);
                lst_step(&l2, m, &acc, true);
                lst_step(&l3, m, &acc, true);
                lst_step(&l4, m, &acc, true);
                lst_step(&l5, m, &acc, true);
                lst_step(&l6, m, &acc, true);
                lst_step(&l7, m, &acc, true);
                m_col[lid * (NM_D + 1u) + n] = m;
                m_val[lid * (NM_D + 1u) + n] = acc;
                n = n + 1u;
            }
        }
        m_n[lid] = n;
        m_out[lid] = out;
        out = out + n;
        if (live) {
            atomicStore(&m_more, 1u);
        }
        workgroupBarrier();
        // Round it: rows it * NM_T / NM_D + lid / NM_D, entry lid % NM_D.
        for (var it = 0u; it < NM_D; it = it + 1u) {
            let j = it * (NM_T / NM_D) + lid / NM_D;
            let t = lid % NM_D;
            if (t < m_n[j]) {
                c_idx[m_out[j] + t] = m_col[j * (NM_D + 1u) + t];
                c_val[m_out[j] + t] = m_val[j * (NM_D + 1u) + t];
            }
        }
        let more = workgroupUniformLoad(&m_more);
        // Every thread has read m_more before it is reset.
        workgroupBarrier();
        if (more == 0u) {
            break;
        }
        if (lid == 0u) {
            atomicStore(&m_more, 0u);
        }
    }
}

// ----------------------------------------------------------------- team bin

// Merge-bin rows of TEAM_MIN + 1 to TEAM_W products (uniform's 64): a
// team of TEAM_T threads per row, TEAMS rows per workgroup. Lane l holds
// products t = l and l + TEAM_T (t: position in the concatenation of the B
// rows of A's row, p in order); a walk over A's row finds their places in B
// and the loads follow it, all in flight at once (loads inside the walk
// took 1.04 + 1.78 ms against 0.92 + 1.33 ms on uniform's two passes).
// Two ways on from there:
//  - Subgroups of 32 (`team_sort`, NVIDIA): the team is a subgroup and
//    sorts its 64 keys in registers with shuffles. Measured on the H100 for
//    uniform's two passes: 0.92 + 1.33 ms.
//  - Otherwise (`team`, any adapter, and the numeric pass when B has over
//    2^26 columns): the products go to workgroup memory and each is
//    compared with all of the row's: it is its column's first product iff
//    no earlier one has the column, and (numeric) the first one sums the
//    column's products in t order, i.e. the fma chain in A's order.
//    Symbolic: the row's nnz is its number of first products. Numeric: a
//    first product's place in the row is the number of distinct smaller
//    columns, counted in the same loop. Four barriers a row; 1.44 + 2.13
//    ms on the H100 (with the loads inside the walk).
// Both give the same bits (a test compares them on the GPU machine).
// Tried on the H100 for uniform's two passes, against 1.5 + 2.9 ms with
// the comparison loops: binary searches in the row's sorted B rows with a
// scan of the first flags for the places, 2.1 + 5.9 ms; a hash table of
// the row's columns in workgroup memory (compare-exchange), 3.4 + 4.7 ms;
// a bitonic sort of the row's (column, t) keys in workgroup memory (21
// stages, a barrier each), 3.2 + 3.6 ms; the same comparisons by teams of
// 16 lanes with 4 products each, 2.7 + 4.1 ms, and of 64 lanes with one
// product each, 2.3 + 2.9 ms (against 1.5 + 2.4 ms for 32 lanes of 2).
const TEAM_T: u32 = 32u;
const TEAMS: u32 = 8u;
const TEAM_W: u32 = 64u;
// Rows of at most TEAM_MIN products stay with the thread merge, as in the
// CUDA backend (its merge bin takes W <= 32): measured on the H100, the
// merge was faster on poisson2d (25 products per row, B rows of neighbouring
// rows adjacent in memory: 0.3 + 1.7 ms for the two passes against 5.1 +
// 7.5 ms in teams), the teams on uniform random rows of 64 products (whole
// product 8.5 ms against 29.9 ms with the merge).
const TEAM_MIN: u32 = 32u;
// Columns, four to a word (the comparison loop reads a word per step).
var<workgroup> t_col: array<vec4<u32>, 128>;
var<workgroup> t_a: array<f32, 512>;
var<workgroup> t_b: array<f32, 512>;
var<workgroup> t_first: array<u32, 512>;
var<workgroup> t_cnt: array<atomic<u32>, 8>;
// Each team's A row: its B rows' starts and lengths, A's values (bits).
var<workgroup> t_lbs: array<u32, 64>;
var<workgroup> t_llen: array<u32, 64>;
var<workgroup> t_lav: array<u32, 64>;

// Where product t is: (its place in B, A's value) when t falls in the B row
// of `len` entries from `bs` that starts at product `pre`, else `cur`. The
// walk over A's row only finds the places; the loads come after it
// (`team_load`), one per product, all in flight together.
fn team_at(cur: vec2<u32>, t: u32, pre: u32, len: u32, bs: u32, av: u32) -> vec2<u32> {
    return select(cur, vec2<u32>(bs + t - pre, av), t >= pre && t - pre < len);
}

// Product at `at` (from team_at) as (column, A value, B value), NONE past
// the row.
fn team_load(at: vec2<u32>, numeric: bool) -> vec3<u32> {
    var r = vec3<u32>(NONE, 0u, 0u);
    if (at.x != NONE) {
        r.x = b_idx[at.x];
        if (numeric) {
            r.y = at.y;
            r.z = bitcast<u32>(b_val[at.x]);
        }
    }
    return r;
}

// How many of the four are true.
fn count4(m: vec4<bool>) -> u32 {
    let u = select(vec4<u32>(0u), vec4<u32>(1u), m);
    return u.x + u.y + u.z + u.w;
}

// Team row k of the binned list: (row of A, offset of its entries, their
// count), or (NONE, 0, 0) past the last team row.
fn team_row(k: u32) -> vec3<u32> {
    if (k >= tpos[sp.rows]) {
        return vec3<u32>(NONE, 0u, 0u);
    }
    let row = list[mpos[sp.rows] - tpos[sp.rows] + k];
    let s = a_off[2u * row];
    return vec3<u32>(row, s, a_off[2u * row + 2u] - s);
}

// The team kernels; `k` runs over the team rows, TEAMS rows per workgroup.
// Returns (in the symbolic pass) the nnz this thread adds to the total.
fn team(lid: u32, wflat: u32, numeric: bool) -> u32 {
    let tm = lid / TEAM_T;
    let lane = lid % TEAM_T;
    let k = wflat * TEAMS + tm;
    let base = tm * TEAM_W;
    let tr = team_row(k);
    let row = tr.x;
    let s = tr.y;
    let n = tr.z;
    // A's row (n <= MERGE_K entries) and its B rows' bounds, one entry per
    // lane, into workgroup memory: one chain of dependent loads per row
    // instead of one per entry in the walk below (numeric team kernel on
    // uniform: 2.9 -> 2.6 ms on the H100).
    let lb = tm * MERGE_K;
    if (lane < n) {
        let p = a_idx[s + lane];
        let bs = b_off[2u * p];
        t_lbs[lb + lane] = bs;
        t_llen[lb + lane] = b_off[2u * p + 2u] - bs;
        if (numeric) {
            t_lav[lb + lane] = bitcast<u32>(a_val[s + lane]);
        }
    }
    workgroupBarrier();
    // Each lane's two products, and the row's product count, in one walk
    // of A's row.
    var w = 0u;
    var at0 = vec2<u32>(NONE, 0u);
    var at1 = vec2<u32>(NONE, 0u);
    for (var q = 0u; q < n; q = q + 1u) {
        let bs = t_lbs[lb + q];
        let len = t_llen[lb + q];
        var av = 0u;
        if (numeric) {
            av = t_lav[lb + q];
        }
        at0 = team_at(at0, lane, w, len, bs, av);
        at1 = team_at(at1, lane + TEAM_T, w, len, bs, av);
        w = w + len;
    }
    var k0 = team_load(at0, numeric);
    var k1 = team_load(at1, numeric);
    let mine = w > TEAM_MIN && w <= TEAM_W && row != NONE;
    if (!mine) {
        k0.x = NONE;
        k1.x = NONE;
    }
    t_col[(base + lane) / 4u][lane % 4u] = k0.x;
    t_col[(base + lane + TEAM_T) / 4u][lane % 4u] = k1.x;
    t_a[base + lane] = bitcast<f32>(k0.y);
    t_a[base + lane + TEAM_T] = bitcast<f32>(k1.y);
    t_b[base + lane] = bitcast<f32>(k0.z);
    t_b[base + lane + TEAM_T] = bitcast<f32>(k1.z);
    workgroupBarrier();
    var f0 = 0u;
    var f1 = 0u;
    var v0 = 0.0;
    var v1 = 0.0;
    // Products of smaller column than each of this lane's two (numeric), and
    // of the same column (1: its own only, the usual case).
    var r0 = 0u;
    var r1 = 0u;
    var e0 = 0u;
    var e1 = 0u;
    if (mine) {
        f0 = select(0u, 1u, lane < w);
        f1 = select(0u, 1u, lane + TEAM_T < w);
        // Four columns per load, branch-free: the loop's cost is issued
        // instructions (32 lanes read the same word), so it carries only
        // compares and adds. Slots past w hold NONE, which is neither equal
        // to nor smaller than a column.
        let q0 = vec4<u32>(k0.x);
        let q1 = vec4<u32>(k1.x);
        let b4 = base / 4u;
        for (var i = 0u; i < (w + 3u) / 4u; i = i + 1u) {
            let c = t_col[b4 + i];
            e0 = e0 + count4(c == q0);
            e1 = e1 + count4(c == q1);
            if (numeric) {
                r0 = r0 + count4(c < q0);
                r1 = r1 + count4(c < q1);
            }
        }
        if (numeric) {
            // fma from 0, as the chain below starts (a -0 product gives +0).
            v0 = fma(bitcast<f32>(k0.y), bitcast<f32>(k0.z), 0.0);
            v1 = fma(bitcast<f32>(k1.y), bitcast<f32>(k1.z), 0.0);
        }
        // A repeated column (in two of the row's B rows): its first product
        // sums them all in t order, the others are not first.
        if (e0 > 1u && f0 != 0u) {
            v0 = 0.0;
            for (var i = 0u; i < w; i = i + 1u) {
                if (t_col[b4 + i / 4u][i % 4u] == k0.x) {
                    if (i < lane) {
                        f0 = 0u;
                    }
                    if (numeric) {
                        v0 = fma(t_a[base + i], t_b[base + i], v0);
                    }
                }
            }
        }
        if (e1 > 1u && f1 != 0u) {
            v1 = 0.0;
            for (var i = 0u; i < w; i = i + 1u) {
                if (t_col[b4 + i / 4u][i % 4u] == k1.x) {
                    if (i < lane + TEAM_T) {
                        f1 = 0u;
                    }
                    if (numeric) {
                        v1 = fma(t_a[base + i], t_b[base + i], v1);
                    }
                }
            }
        }
    }
    // Repeats (products whose column an earlier product has) are few: a
    // column in two of the row's B rows. Each team counts them and lists
    // their columns (in t_first), with atomics by those lanes only. The
    // row's nnz is its products less its repeats; a first product's place is
    // the number of distinct smaller columns: its smaller products less the
    // listed columns below its own.
    if (lane == 0u) {
        atomicStore(&t_cnt[tm], 0u);
    }
    workgroupBarrier();
    if (lane < w && f0 == 0u && mine) {
        t_first[base + atomicAdd(&t_cnt[tm], 1u)] = k0.x;
    }
    if (lane + TEAM_T < w && f1 == 0u && mine) {
        t_first[base + atomicAdd(&t_cnt[tm], 1u)] = k1.x;
    }
    workgroupBarrier();
    var total = 0u;
    if (!numeric && mine && lane == 0u) {
        total = w - atomicLoad(&t_cnt[tm]);
        cnt[row] = total;
    }
    if (numeric && f0 + f1 != 0u) {
        let reps = atomicLoad(&t_cnt[tm]);
        for (var j = 0u; j < reps; j = j + 1u) {
            let d = t_first[base + j];
            r0 = r0 - select(0u, 1u, d < k0.x);
            r1 = r1 - select(0u, 1u, d < k1.x);
        }
        let out = cnt[row];
        if (f0 != 0u) {
            c_idx[out + r0] = k0.x;
            c_val[out + r0] = v0;
        }
        if (f1 != 0u) {
            c_idx[out + r1] = k1.x;
            c_val[out + r1] = v1;
        }
    }
    return total;
}

// #if SUBGROUP32
// Team rows where every subgroup is 32 wide (NVIDIA): a team is a subgroup
// and sorts its row's products in registers, as the CUDA backend's bins 1-3
// do: a bitonic network over 64 keys, two per lane, whose exchanges between
// lanes are shuffles. No workgroup memory and no barrier per row (the
// comparison loops above need four, and their 64 steps a product). Keys are
// the columns (symbolic) or column * 64 + t (numeric, where B has at most
// 2^26 columns: sp.keyed), so equal columns end up adjacent and in t order.
var<workgroup> t_next: atomic<u32>;

// Sorts 64 keys ascending, held two per lane at positions 2 * lane and
// 2 * lane + 1. Called by all 32 lanes of the subgroup.
fn sort64(lane: u32, x: vec2<u32>) -> vec2<u32> {
    var v = x;
    for (var k = 2u; k <= 64u; k = k << 1u) {
        let up = ((2u * lane) & k) == 0u;
        for (var j = k >> 1u; j > 0u; j = j >> 1u) {
            if (j == 1u) {
                let lo = min(v.x, v.y);
                let hi = max(v.x, v.y);
                v = select(vec2<u32>(hi, lo), vec2<u32>(lo, hi), up);
            } else {
                let o = vec2<u32>(subgroupShuffleXor(v.x, j >> 1u), subgroupShuffleXor(v.y, j >> 1u));
                let keep_lo = (((2u * lane) & j) == 0u) == up;
                v = select(max(v, o), min(v, o), keep_lo);
            }
        }
    }
    return v;
}

// The team kernels' row with subgroup operations; returns (symbolic) the
// nnz this lane adds to the total.
fn team_sort(lid: u32, lane: u32, wflat: u32, numeric: bool) -> u32 {
    // Each subgroup takes one of the workgroup's TEAMS slots (whatever the
    // driver's mapping of invocations to subgroups).
    if (lid == 0u) {
        atomicStore(&t_next, 0u);
    }
    workgroupBarrier();
    var slot = 0u;
    if (lane == 0u) {
        slot = atomicAdd(&t_next, 1u);
    }
    let k = wflat * TEAMS + subgroupBroadcast(slot, 0u);
    let tr = team_row(k);
    let row = tr.x;
    let s = tr.y;
    let n = tr.z;
    // Numeric: the row's offset in C, loaded early (it is used last).
    var out = 0u;
    if (numeric && row != NONE) {
        out = cnt[row];
    }
    // Lane q < n holds A's entry q: its B row's start and length, A's value.
    var bs = 0u;
    var len = 0u;
    var av = 0u;
    if (lane < n) {
        let p = a_idx[s + lane];
        bs = b_off[2u * p];
        len = b_off[2u * p + 2u] - bs;
        if (numeric) {
            av = bitcast<u32>(a_val[s + lane]);
        }
    }
    let pre = subgroupExclusiveAdd(len);
    let w = subgroupAdd(len);
    if (!(w > TEAM_MIN && w <= TEAM_W && row != NONE)) {
        return 0u;
    }
    // This lane's products t = lane and lane + 32.
    var at0 = vec2<u32>(NONE, 0u);
    var at1 = vec2<u32>(NONE, 0u);
    for (var q = 0u; q < n; q = q + 1u) {
        let pq = subgroupShuffle(pre, q);
        let lq = subgroupShuffle(len, q);
        let bq = subgroupShuffle(bs, q);
        let aq = subgroupShuffle(av, q);
        at0 = team_at(at0, lane, pq, lq, bq, aq);
        at1 = team_at(at1, lane + TEAM_T, pq, lq, bq, aq);
    }
    let k0 = team_load(at0, numeric);
    let k1 = team_load(at1, numeric);
    let p0 = 2u * lane;
    if (!numeric) {
        // Sorted columns (NONE past w, last); the row's nnz is the number
        // of positions below w whose column differs from the one before.
        let v = sort64(lane, vec2<u32>(k0.x, k1.x));
        let before = subgroupShuffleUp(v.y, 1u);
        let h0 = p0 < w && (lane == 0u || v.x != before);
        let h1 = p0 + 1u < w && v.y != v.x;
        let c = subgroupAdd(u32(h0) + u32(h1));
        if (lane == 0u) {
            cnt[row] = c;
            return c;
        }
        return 0u;
    }
    let x0 = select(NONE, (k0.x << 6u) | lane, lane < w);
    let x1 = select(NONE, (k1.x << 6u) | (lane + TEAM_T), lane + TEAM_T < w);
    let v = sort64(lane, vec2<u32>(x0, x1));
    let c = v >> vec2<u32>(6u);
    let before = subgroupShuffleUp(c.y, 1u);
    let after = subgroupShuffleDown(c.x, 1u);
    // A column's first position (in t order) writes it.
    let h0 = p0 < w && (lane == 0u || c.x != before);
    let h1 = p0 + 1u < w && c.y != c.x;
    // The usual column has one product: fma from 0, as the chain starts.
    let prod0 = fma(bitcast<f32>(k0.y), bitcast<f32>(k0.z), 0.0);
    let prod1 = fma(bitcast<f32>(k1.y), bitcast<f32>(k1.z), 0.0);
    let t0 = v.x & 63u;
    let t1 = v.y & 63u;
    let g0 = vec2<f32>(subgroupShuffle(prod0, t0 & 31u), subgroupShuffle(prod1, t0 & 31u));
    let g1 = vec2<f32>(subgroupShuffle(prod0, t1 & 31u), subgroupShuffle(prod1, t1 & 31u));
    var v0 = select(g0.x, g0.y, t0 >= TEAM_T);
    var v1 = select(g1.x, g1.y, t1 >= TEAM_T);
    // A column in several B rows (the next position has it too): its chain
    // over all the row's products in t order, when the subgroup has one.
    let run0 = h0 && p0 + 1u < w && c.y == c.x;
    let run1 = h1 && p0 + 2u < w && after == c.y;
    if (subgroupAny(run0 || run1)) {
        var acc0 = 0.0;
        var acc1 = 0.0;
        for (var h = 0u; h < 2u; h = h + 1u) {
            let kk = select(k0, k1, h == 1u);
            for (var src = 0u; src < TEAM_T; src = src + 1u) {
                if (h * TEAM_T + src >= w) {
                    break;
                }
                let ct = subgroupShuffle(kk.x, src);
                let at = bitcast<f32>(subgroupShuffle(kk.y, src));
                let bt = bitcast<f32>(subgroupShuffle(kk.z, src));
                if (ct == c.x) {
                    acc0 = fma(at, bt, acc0);
                }
                if (ct == c.y) {
                    acc1 = fma(at, bt, acc1);
                }
            }
        }
        if (run0) {
            v0 = acc0;
        }
        if (run1) {
            v1 = acc1;
        }
    }
    // Places: the number of first positions before.
    let place = subgroupExclusiveAdd(u32(h0) + u32(h1));
    if (h0) {
        c_idx[out + place] = c.x;
        c_val[out + place] = v0;
    }
    if (h1) {
        let q = out + place + u32(h0);
        c_idx[q] = c.y;
        c_val[q] = v1;
    }
    return 0u;
}
// #endif

@compute @workgroup_size(256)
fn spg_sym_team(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
// #if SUBGROUP32
    @builtin(subgroup_invocation_id) sg_id: u32,
// #endif
) {
    let wflat = wid.x + wid.y * nwg.x;
// #if SUBGROUP32
    let n = team_sort(lid, sg_id, wflat, false);
// #else
    let n = team(lid, wflat, false);
// #endif
    add_total(lid, n);
}

@compute @workgroup_size(256)
fn spg_num_team(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
// #if SUBGROUP32
    @builtin(subgroup_invocation_id) sg_id: u32,
// #endif
) {
    let wflat = wid.x + wid.y * nwg.x;
// #if SUBGROUP32
    if (sp.keyed != 0u) {
        team_sort(lid, sg_id, wflat, true);
        return;
    }
// #endif
    team(lid, wflat, true);
}

// Writes C's offsets as u64 from the scanned counts (rows + 1 threads).
@compute @workgroup_size(256)
fn spg_offsets(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = row_index(gid, nwg);
    if (i > sp.rows) {
        return;
    }
    c_off[2u * i] = cnt[i];
    c_off[2u * i + 1u] = 0u;
}

// -------------------------------------------------------------- general bin

// Thread t's bitmap word k is g_bits[k * WG + t] (no bank conflicts).
var<workgroup> g_bits: array<atomic<u32>, 2048>;
// One batch of A's row: B row bounds and A's values.
var<workgroup> g_bs: array<u32, 256>;
var<workgroup> g_be: array<u32, 256>;
var<workgroup> g_av: array<f32, 256>;
var<workgroup> g_scan: array<u32, 256>;
// Numeric: rank in the window of each bitmap word's first column.
var<workgroup> g_wpre: array<u32, 2048>;
// Row broadcast: (row, A start, A end, unused).
var<workgroup> g_row: vec4<u32>;
var<workgroup> g_lo: atomic<u32>;
var<workgroup> g_hi: atomic<u32>;
var<workgroup> g_span: vec2<u32>;
var<workgroup> g_next: u32;
var<workgroup> g_nx: atomic<u32>;

// Exclusive workgroup scan of `v` and the total, as (exclusive, total).
// Called from uniform control flow by all WG threads.
fn wg_scan(lid: u32, v: u32) -> vec2<u32> {
    g_scan[lid] = v;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off * 2u) {
        var t = 0u;
        if (lid >= off) {
            t = g_scan[lid - off];
        }
        workgroupBarrier();
        g_scan[lid] = g_scan[lid] + t;
        workgroupBarrier();
    }
    let r = vec2<u32>(g_scan[lid] - v, g_scan[WG - 1u]);
    workgroupBarrier();
    return r;
}

// Loads B's row bounds (and, numeric, A's values) of A's entries
// base..min(base + WG, e) into g_bs, g_be, g_av. Uniform control flow.
fn load_batch(lid: u32, base: u32, e: u32, numeric: bool) {
    workgroupBarrier();
    if (base + lid < e) {
        let p = a_idx[base + lid];
        g_bs[lid] = b_off[2u * p];
        g_be[lid] = b_off[2u * p + 2u];
        if (numeric) {
            g_av[lid] = a_val[base + lid];
        }
    }
    workgroupBarrier();
}

// `win + off`, saturated at NONE (columns are below NONE).
fn sat_add(win: u32, off: u32) -> u32 {
    return select(NONE, win + off, off < NONE - win);
}

// The general bin: workgroups draw rows from queue `qi` until the list ends.
// Symbolic: writes each row's nnz; numeric: writes the row into C.
fn general(lid: u32, numeric: bool) {
    let qi = select(0u, 1u, numeric);
    var taken = 0u;
    loop {
        if (lid == 0u) {
            let m = mpos[sp.rows];
            var r = vec4<u32>(NONE, 0u, 0u, 0u);
            var k = NONE;
            if (sp.one_row == 0u || taken == 0u) {
                k = atomicAdd(&qmeta[qi], 1u);
            }
            taken = taken + 1u;
            if (k < sp.rows - m) {
                let row = list[m + k];
                r = vec4<u32>(row, a_off[2u * row], a_off[2u * row + 2u], 0u);
            }
            g_row = r;
            atomicStore(&g_lo, NONE);
            atomicStore(&g_hi, 0u);
        }
        let ri = workgroupUniformLoad(&g_row);
        if (ri.x == NONE) {
            break;
        }
        let row = ri.x;
        let s = ri.y;
        let e = ri.z;
        // Column span of the row.
        for (var k = s + lid; k < e; k = k + WG) {
            let p = a_idx[k];
            let bs = b_off[2u * p];
            let be = b_off[2u * p + 2u];
            if (bs < be) {
                atomicMin(&g_lo, b_idx[bs]);
                atomicMax(&g_hi, b_idx[be - 1u]);
            }
        }
        workgroupBarrier();
        if (lid == 0u) {
            g_span = vec2<u32>(atomicLoad(&g_lo), atomicLoad(&g_hi));
        }
        let span = workgroupUniformLoad(&g_span);
        var total = 0u;
        var out0 = 0u;
        if (numeric) {
            out0 = cnt[row];
        }
        if (span.x <= span.y) {
            // Slice width: the span over WG threads, at most SLICE_MAX.
            let width = span.y - span.x;
            let slice = min(width / WG + 1u, SLICE_MAX);
            var win = span.x;
            loop {
                let my_lo = sat_add(win, lid * slice);
                for (var k = 0u; k < WORDS; k = k + 1u) {
                    atomicStore(&g_bits[k * WG + lid], 0u);
                }
                if (lid == 0u) {
                    atomicStore(&g_nx, NONE);
                }
                // Window [win, whi): column c = j - win is owned (for the
                // emission) by thread c / slice, at bit c % slice of its slice.
                let whi = sat_add(win, WG * slice);
                // Pass 1: the window's columns. The workgroup splits each B
                // row among its threads; bits are set with atomicOr, so the
                // order does not matter and no barrier is needed per B row.
                for (var base = s; base < e; base = base + WG) {
                    load_batch(lid, base, e, false);
                    let n = min(WG, e - base);
                    for (var q = 0u; q < n; q = q + 1u) {
                        let fe = g_be[q];
                        for (var f = g_bs[q] + lid; f < fe; f = f + WG) {
                            let j = b_idx[f];
                            if (j < win) {
                                continue;
                            }
                            if (j >= whi) {
                                // Columns ascend: the rest of this thread's
                                // share of the row lies past the window too.
                                atomicMin(&g_nx, j);
                                break;
                            }
                            let c = j - win;
                            let owner = c / slice;
                            let b = c - owner * slice;
                            atomicOr(&g_bits[(b >> 5u) * WG + owner], 1u << (b & 31u));
                        }
                    }
                }
                workgroupBarrier();
                var mine = 0u;
                for (var k = 0u; k < WORDS; k = k + 1u) {
                    mine = mine + countOneBits(atomicLoad(&g_bits[k * WG + lid]));
                }
                let sc = wg_scan(lid, mine);
                if (numeric) {
                    // The window's columns into C in order with zero values,
                    // and each bitmap word's first rank in g_wpre.
                    let o0 = out0 + total;
                    var o = o0 + sc.x;
                    for (var k = 0u; k < WORDS; k = k + 1u) {
                        var x = atomicLoad(&g_bits[k * WG + lid]);
                        g_wpre[k * WG + lid] = o - o0;
                        while (x != 0u) {
                            let b = k * 32u + firstTrailingBit(x);
                            x = x & (x - 1u);
                            c_idx[o] = my_lo + b;
                            c_val[o] = 0.0;
                            o = o + 1u;
                        }
                    }
                    storageBarrier();
                    // Pass 2: values, summed in place in C (the row's own
                    // segment, small and cached) at the column's rank. B row
                    // q + 1 starts after every product of row q is in (the
                    // barriers), so each chain runs in A's order; within a
                    // B row the columns are distinct.
                    for (var base = s; base < e; base = base + WG) {
                        load_batch(lid, base, e, true);
                        let n = min(WG, e - base);
                        for (var q = 0u; q < n; q = q + 1u) {
                            let fe = g_be[q];
                            let a = g_av[q];
                            for (var f = g_bs[q] + lid; f < fe; f = f + WG) {
                                let j = b_idx[f];
                                if (j < win) {
                                    continue;
                                }
                                if (j >= whi) {
                                    break;
                                }
                                let c = j - win;
                                let owner = c / slice;
                                let b = c - owner * slice;
                                let wi = (b >> 5u) * WG + owner;
                                let below = atomicLoad(&g_bits[wi]) & ((1u << (b & 31u)) - 1u);
                                let at = o0 + g_wpre[wi] + countOneBits(below);
                                c_val[at] = fma(a, b_val[f], c_val[at]);
                            }
                            storageBarrier();
                        }
                    }
                }
                total = total + sc.y;
                // The first column after the window (wg_scan's barriers made
                // every thread's atomicMin visible).
                if (lid == 0u) {
                    g_next = atomicLoad(&g_nx);
                }
                let nw = workgroupUniformLoad(&g_next);
                if (nw == NONE || nw > span.y) {
                    break;
                }
                win = nw;
            }
        }
        if (!numeric && lid == 0u) {
            cnt[row] = total;
            add_total_global(total, 0u);
        }
    }
}

@compute @workgroup_size(256)
fn spg_sym_general(@builtin(local_invocation_index) lid: u32) {
    general(lid, false);
}

@compute @workgroup_size(256)
fn spg_num_general(@builtin(local_invocation_index) lid: u32) {
    general(lid, true);
}
