// Max flow by parallel push-relabel with global relabels, for grids (implicit
// 4- or 6-neighbour arcs) and general networks (a CSR residual graph). The
// contract is docs/semantics.md; the host loop is
// crates/trident-wgpu/src/max_flow.rs, which says why the design is what it is.
//
// Grids: the push kernel is the lock-free push-relabel of Hong ("A lock-free
// multi-threaded algorithm for the maximum flow problem", 2008): one
// invocation per node discharges it with atomic updates of excesses and
// residuals. Only node v lowers its own excess, its own residuals and its
// height, so the values it reads are lower bounds it may act on. The answer
// (flow value and cut) never depends on the schedule: the host stops only
// after an exact breadth-first relabel finds no node with excess that can
// reach the target, and the cut it returns is unique.
//
// Networks also return per-arc flows, which do depend on the schedule under
// Hong's scheme, so their passes are synchronous instead: a push launch in
// which every node pushes only the excess it had when the launch began
// (arrivals go to a separate incoming counter), along admissible arcs
// (h[u] + 1 == h[v]) of heights that no one writes during the launch; then a
// relabel launch that adds the arrivals to the excess and writes each node's
// new height into the other half of the height buffer. An arc pair is
// admissible from one side at most, so each residual is written by one
// invocation per launch, and integer additions commute: every launch's
// result is a function of its input alone.
//
// All capacities, residuals and excesses are i32 (WGSL has no 64-bit
// integers); the host proves every value fits before it uploads a graph.

struct Params {
    n: u32,         // nodes
    width: u32,     // grid: x extent
    plane: u32,     // grid: width * height
    dirs: u32,      // grid: 4 or 6
    depth: u32,     // grid: z extent
    height: u32,    // grid: y extent
    mode: u32,      // grid relax: 0 = distance to the sink over out-arcs, 1 = from the excess nodes over in-arcs
    goal: u32,      // network: t, the node heights count from (NONE for grids)
    other: u32,     // network: s, the node that never moves
    hcur: u32,      // network passes: offset of the heights read (0 or n)
    row: u32,       // invocations per dispatch row (2-D dispatch of 1-D work)
    hnext: u32,     // network passes: offset of the heights written (n or 0)
}

@group(0) @binding(0) var<uniform> P: Params;
// Residual capacities: grid `dir * n + v` (arc v -> v + dir); network CSR slots.
@group(0) @binding(1) var<storage, read_write> rc: array<atomic<i32>>;
// Excess per node; networks: then n incoming counters (arrivals of a push pass).
@group(0) @binding(2) var<storage, read_write> ex: array<atomic<i32>>;
// Heights (push) and distances (relax); INF = cannot reach / not reached.
// Networks: two halves of n, read and written alternately by the passes
// (the relax kernels use the first).
@group(0) @binding(3) var<storage, read_write> hgt: array<atomic<u32>>;
// [0] changed (relax), [1] active nodes, [2] largest finite distance (count).
@group(0) @binding(4) var<storage, read_write> ctr: array<atomic<u32>>;
// Flow partial sums (lo, hi per workgroup) or packed labels.
@group(0) @binding(5) var<storage, read_write> outw: array<u32>;
// Grid: residual of v -> t.
@group(0) @binding(6) var<storage, read_write> sk: array<i32>;
// Grid input terminals: source [n], then sink [n].
@group(0) @binding(7) var<storage, read> gin: array<i32>;
// Network CSR (bindings 6-8 mean these in the network entry points): the
// residual slots of v are first[v] .. first[v + 1], slot a leads to head[a],
// and rev[a] is the slot of its reverse arc.
@group(0) @binding(6) var<storage, read> first: array<u32>;
@group(0) @binding(7) var<storage, read> head: array<u32>;
@group(0) @binding(8) var<storage, read> rev: array<u32>;

const INF: u32 = 0x7fffffffu;
const NONE: u32 = 0xffffffffu;
const NO_DIR: u32 = 0xffu;
// Pushes and relabels one invocation does per pass before it yields.
const OPS: u32 = 8u;

var<workgroup> red_lo: array<u32, 256>;
var<workgroup> red_hi: array<u32, 256>;

fn node_id(gid: vec3<u32>) -> u32 {
    return gid.x + gid.y * P.row;
}

// ------------------------------------------------------------------ grids

// Does v have a neighbour in direction d?
fn has_nb(v: u32, d: u32) -> bool {
    let x = v % P.width;
    let y = (v / P.width) % P.height;
    let z = v / P.plane;
    switch d {
        case 0u: { return x + 1u < P.width; }
        case 1u: { return x > 0u; }
        case 2u: { return y + 1u < P.height; }
        case 3u: { return y > 0u; }
        case 4u: { return z + 1u < P.depth; }
        default: { return z > 0u; }
    }
}

// The neighbour of v in direction d (which must exist).
fn nb(v: u32, d: u32) -> u32 {
    switch d {
        case 0u: { return v + 1u; }
        case 1u: { return v - 1u; }
        case 2u: { return v + P.width; }
        case 3u: { return v - P.width; }
        case 4u: { return v + P.plane; }
        default: { return v - P.plane; }
    }
}

// Residuals from the terminals: what can go straight s -> v -> t is counted
// by the host and cancelled here.
@compute @workgroup_size(256)
fn grid_init(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    let s = gin[v];
    let t = gin[P.n + v];
    let c = min(s, t);
    atomicStore(&ex[v], s - c);
    sk[v] = t - c;
}

// Mode 0: h = 1 next to the sink, INF elsewhere. Mode 1: h = 0 at nodes with
// excess, INF elsewhere.
@compute @workgroup_size(256)
fn grid_relax_init(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    var h = INF;
    if (P.mode == 0u) {
        if (sk[v] > 0) {
            h = 1u;
        }
    } else if (atomicLoad(&ex[v]) > 0) {
        h = 0u;
    }
    atomicStore(&hgt[v], h);
}

// One in-place Bellman-Ford sweep with unit lengths: values only fall, each
// is the length of a real residual path, so once no sweep changes anything
// they are the exact breadth-first distances.
@compute @workgroup_size(256)
fn grid_relax(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    let hv = atomicLoad(&hgt[v]);
    let fixed_at = select(0u, 1u, P.mode == 0u);
    if (hv <= fixed_at) {
        return;
    }
    var best = hv;
    for (var d = 0u; d < P.dirs; d = d + 1u) {
        var open = false;
        var u = 0u;
        if (P.mode == 0u) {
            // v -> u residual: u's distance + 1 bounds v's.
            open = atomicLoad(&rc[d * P.n + v]) > 0;
            if (open) {
                u = nb(v, d);
            }
        } else if (has_nb(v, d)) {
            // u -> v residual: the arc (u, d ^ 1).
            u = nb(v, d);
            open = atomicLoad(&rc[(d ^ 1u) * P.n + u]) > 0;
        }
        if (open) {
            let hu = atomicLoad(&hgt[u]);
            if (hu + 1u < best) {
                best = hu + 1u;
            }
        }
    }
    if (best < hv) {
        atomicStore(&hgt[v], best);
        atomicAdd(&ctr[0], 1u);
    }
}

// The open arcs of v for a relax sweep, as a direction mask: mode 0 the arcs
// v -> u with residual capacity, mode 1 the arcs u -> v.
fn relax_mask(v: u32) -> u32 {
    var mask = 0u;
    for (var d = 0u; d < P.dirs; d = d + 1u) {
        var open = false;
        if (P.mode == 0u) {
            open = atomicLoad(&rc[d * P.n + v]) > 0;
        } else if (has_nb(v, d)) {
            open = atomicLoad(&rc[(d ^ 1u) * P.n + nb(v, d)]) > 0;
        }
        if (open) {
            mask = mask | (1u << d);
        }
    }
    return mask;
}

const TILE: u32 = 16u;
// Jacobi rounds inside a tile per sweep: a distance crosses a whole tile
// in one sweep instead of one node.
const LOCAL: u32 = 16u;
var<workgroup> tile_h: array<u32, 256>;

// The same sweep on a 16 x 16 tile of one z slice (workgroup (x, y, z) =
// tile (x, y) of slice z), iterated LOCAL times in workgroup memory; arcs
// leaving the tile read the global heights. Values still only fall and stay
// lengths of real paths, so the stopping rule is unchanged.
@compute @workgroup_size(16, 16)
fn grid_relax_tile(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let x = wid.x * TILE + lid.x;
    let y = wid.y * TILE + lid.y;
    let l = lid.y * TILE + lid.x;
    let inside = x < P.width && y < P.height;
    let v = wid.z * P.plane + y * P.width + x;
    var h = INF;
    var mask = 0u;
    let fixed_at = select(0u, 1u, P.mode == 0u);
    if (inside) {
        h = atomicLoad(&hgt[v]);
        if (h > fixed_at) {
            mask = relax_mask(v);
        }
    }
    let h0 = h;
    tile_h[l] = h;
    for (var it = 0u; it < LOCAL; it = it + 1u) {
        workgroupBarrier();
        var best = h;
        for (var d = 0u; d < P.dirs; d = d + 1u) {
            if ((mask & (1u << d)) == 0u) {
                continue;
            }
            var hu = INF;
            if (d == 0u && lid.x + 1u < TILE) {
                hu = tile_h[l + 1u];
            } else if (d == 1u && lid.x > 0u) {
                hu = tile_h[l - 1u];
            } else if (d == 2u && lid.y + 1u < TILE) {
                hu = tile_h[l + TILE];
            } else if (d == 3u && lid.y > 0u) {
                hu = tile_h[l - TILE];
            } else {
                hu = atomicLoad(&hgt[nb(v, d)]);
            }
            if (hu + 1u < best) {
                best = hu + 1u;
            }
        }
        workgroupBarrier();
        h = best;
        tile_h[l] = h;
    }
    if (h < h0) {
        atomicStore(&hgt[v], h);
        atomicAdd(&ctr[0], 1u);
    }
}

// Counts the nodes with excess that can still reach the sink, and finds the
// largest finite distance (the depth of the breadth-first search).
@compute @workgroup_size(256)
fn grid_count(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    let h = atomicLoad(&hgt[v]);
    if (h < INF) {
        atomicMax(&ctr[2], h);
        if (atomicLoad(&ex[v]) > 0) {
            atomicAdd(&ctr[1], 1u);
        }
    }
}

// Discharges v: push to the sink, else to the lowest residual neighbour if v
// is higher, else relabel to one above it.
@compute @workgroup_size(256)
fn grid_push(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    var e = atomicLoad(&ex[v]);
    var hv = atomicLoad(&hgt[v]);
    if (e <= 0 || hv >= INF) {
        return;
    }
    for (var op = 0u; op < OPS; op = op + 1u) {
        let s = sk[v];
        if (s > 0) {
            let d = min(e, s);
            sk[v] = s - d;
            atomicSub(&ex[v], d);
            e = e - d;
            if (e == 0) {
                break;
            }
            continue;
        }
        var hmin = INF;
        var dmin = NO_DIR;
        var umin = 0u;
        for (var d = 0u; d < P.dirs; d = d + 1u) {
            if (atomicLoad(&rc[d * P.n + v]) > 0) {
                let u = nb(v, d);
                let hu = atomicLoad(&hgt[u]);
                if (hu < hmin) {
                    hmin = hu;
                    dmin = d;
                    umin = u;
                }
            }
        }
        if (dmin == NO_DIR || hmin >= INF) {
            atomicStore(&hgt[v], INF);
            break;
        }
        if (hv > hmin) {
            let r = atomicLoad(&rc[dmin * P.n + v]);
            let d = min(e, r);
            atomicSub(&rc[dmin * P.n + v], d);
            atomicAdd(&rc[(dmin ^ 1u) * P.n + umin], d);
            atomicSub(&ex[v], d);
            atomicAdd(&ex[umin], d);
            e = e - d;
            if (e == 0) {
                break;
            }
        } else {
            hv = hmin + 1u;
            atomicStore(&hgt[v], hv);
        }
    }
}

// Flow into the sink, sink capacity minus its residual per node, summed per
// workgroup as a 64-bit (lo, hi) pair.
@compute @workgroup_size(256)
fn grid_flow(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let v = node_id(gid);
    var lo = 0u;
    if (v < P.n) {
        lo = u32(gin[P.n + v] - sk[v]);
    }
    red_lo[tid] = lo;
    red_hi[tid] = 0u;
    for (var w = 128u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (tid < w) {
            let a = red_lo[tid];
            let b = red_lo[tid + w];
            let s = a + b;
            red_lo[tid] = s;
            red_hi[tid] = red_hi[tid] + red_hi[tid + w] + select(0u, 1u, s < a);
        }
    }
    if (tid == 0u) {
        let g = wid.x + wid.y * nwg.x;
        outw[2u * g] = red_lo[0];
        outw[2u * g + 1u] = red_hi[0];
    }
}

// Bit b of word i: node 32 i + b has a finite distance (the cut's source side).
@compute @workgroup_size(256)
fn pack_labels(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = node_id(gid);
    let base = i * 32u;
    if (base >= P.n) {
        return;
    }
    var word = 0u;
    for (var b = 0u; b < 32u; b = b + 1u) {
        if (base + b < P.n && atomicLoad(&hgt[base + b]) < INF) {
            word = word | (1u << b);
        }
    }
    outw[i] = word;
}

// --------------------------------------------------------------- networks

// 0 at the target, INF elsewhere.
@compute @workgroup_size(256)
fn net_relax_init(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    atomicStore(&hgt[v], select(INF, 0u, v == P.goal));
}

// One in-place Bellman-Ford sweep towards the target over residual arcs
// (the source never gets a distance: nothing is pushed back into it).
@compute @workgroup_size(256)
fn net_relax(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n || v == P.other) {
        return;
    }
    let hv = atomicLoad(&hgt[v]);
    if (hv == 0u) {
        return;
    }
    var best = hv;
    let end = first[v + 1u];
    for (var a = first[v]; a < end; a = a + 1u) {
        if (atomicLoad(&rc[a]) > 0) {
            let hu = atomicLoad(&hgt[head[a]]);
            if (hu + 1u < best) {
                best = hu + 1u;
            }
        }
    }
    if (best < hv) {
        atomicStore(&hgt[v], best);
        atomicAdd(&ctr[0], 1u);
    }
}

@compute @workgroup_size(256)
fn net_count(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n || v == P.other) {
        return;
    }
    let h = atomicLoad(&hgt[v]);
    if (h < INF) {
        atomicMax(&ctr[2], h);
        if (v != P.goal && atomicLoad(&ex[v]) > 0) {
            atomicAdd(&ctr[1], 1u);
        }
    }
}

// Push launch of a synchronous pass: v pushes the excess it has now along
// admissible arcs, in slot order; arrivals go to the incoming counters.
@compute @workgroup_size(256)
fn net_push(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n || v == P.goal || v == P.other) {
        return;
    }
    var e = atomicLoad(&ex[v]);
    let hv = atomicLoad(&hgt[P.hcur + v]);
    if (e <= 0 || hv >= INF) {
        return;
    }
    let end = first[v + 1u];
    for (var a = first[v]; a < end && e > 0; a = a + 1u) {
        let r = atomicLoad(&rc[a]);
        if (r <= 0) {
            continue;
        }
        let u = head[a];
        if (atomicLoad(&hgt[P.hcur + u]) + 1u != hv) {
            continue;
        }
        let d = min(e, r);
        atomicStore(&rc[a], r - d);
        atomicAdd(&rc[rev[a]], d);
        // The target's excess is not kept: it may exceed i32 (the host reads
        // the flow value off the arcs).
        if (u != P.goal) {
            atomicAdd(&ex[P.n + u], d);
        }
        e = e - d;
    }
    atomicStore(&ex[v], e);
}

// Relabel launch of a synchronous pass: arrivals join the excess, and a node
// with excess but no admissible arc goes one above its lowest residual
// neighbour (INF when it has none). Every node writes its height into the
// other half, so that half is whole for the next pass.
@compute @workgroup_size(256)
fn net_relabel(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v = node_id(gid);
    if (v >= P.n) {
        return;
    }
    var hv = atomicLoad(&hgt[P.hcur + v]);
    if (v != P.goal && v != P.other) {
        let e = atomicLoad(&ex[v]) + atomicLoad(&ex[P.n + v]);
        atomicStore(&ex[P.n + v], 0);
        atomicStore(&ex[v], e);
        if (e > 0 && hv < INF) {
            var low = INF;
            let end = first[v + 1u];
            for (var a = first[v]; a < end; a = a + 1u) {
                if (atomicLoad(&rc[a]) > 0) {
                    let hu = atomicLoad(&hgt[P.hcur + head[a]]);
                    if (hu + 1u == hv) {
                        low = hv - 1u;
                        break;
                    }
                    low = min(low, hu);
                }
            }
            hv = select(low + 1u, INF, low >= INF - 1u);
        }
    }
    atomicStore(&hgt[P.hnext + v], hv);
}
