// NearestPairs for the wgpu backend: exact nearest / k nearest point of B for
// each point of A, f32.
//
// An exhaustive search, tiled: a workgroup of 128 threads holds 128 queries
// (one per thread) and streams B through workgroup memory 128 points at a
// time, so each point of B is read from global memory once per workgroup.
// Distances are dx*dx + dy*dy + dz*dz in f32 in that order; B is visited in
// increasing index and a candidate replaces the current best only when it is
// strictly closer, so ties go to the smaller index of B. This is exact but
// O(|A| |B|): the uniform grid of the CUDA backend (kernels/nearest_pairs.cu)
// is not ported yet.
//
// `knn_f32` keeps each query's k best (k <= KMAX) in a private list sorted by
// (d2, index), inserting with a strict comparison so equal distances keep
// the smaller index first.

const WG: u32 = 128u;
const KMAX: u32 = 64u;

struct PairsParams {
    na: u32,
    nb: u32,
    k: u32,
    _pad: u32,
}

struct Neighbor {
    index: u32,
    d2: f32,
}

@group(0) @binding(0) var<storage, read> pa: array<f32>;
@group(0) @binding(1) var<storage, read> pb: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<Neighbor>;
@group(0) @binding(3) var<uniform> pp: PairsParams;

var<workgroup> tile: array<vec4<f32>, 128>;

fn query_index(lid: u32, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.x + wid.y * nwg.x) * WG + lid;
}

fn load_tile(lid: u32, t0: u32) {
    let j = t0 + lid;
    if (j < pp.nb) {
        tile[lid] = vec4<f32>(pb[3u * j], pb[3u * j + 1u], pb[3u * j + 2u], 0.0);
    }
}

fn d2_of(q: vec3<f32>, p: vec4<f32>) -> f32 {
    let dx = q.x - p.x;
    let dy = q.y - p.y;
    let dz = q.z - p.z;
    return dx * dx + dy * dy + dz * dz;
}

fn load_query(i: u32) -> vec3<f32> {
    if (i < pp.na) {
        return vec3<f32>(pa[3u * i], pa[3u * i + 1u], pa[3u * i + 2u]);
    }
    return vec3<f32>(0.0);
}

@compute @workgroup_size(128)
fn nearest_f32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = query_index(lid, wid, nwg);
    let q = load_query(i);
    var best = bitcast<f32>(0x7f800000u);
    var best_j = 0xffffffffu;
    for (var t0 = 0u; t0 < pp.nb; t0 = t0 + WG) {
        workgroupBarrier();
        load_tile(lid, t0);
        workgroupBarrier();
        let cnt = min(WG, pp.nb - t0);
        for (var t = 0u; t < cnt; t = t + 1u) {
            let d = d2_of(q, tile[t]);
            if (d < best || best_j == 0xffffffffu) {
                best = d;
                best_j = t0 + t;
            }
        }
    }
    if (i < pp.na) {
        out[i] = Neighbor(best_j, best);
    }
}

@compute @workgroup_size(128)
fn knn_f32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = query_index(lid, wid, nwg);
    let q = load_query(i);
    let k = pp.k;
    var ld: array<f32, 64>;
    var lj: array<u32, 64>;
    var have = 0u;
    for (var t0 = 0u; t0 < pp.nb; t0 = t0 + WG) {
        workgroupBarrier();
        load_tile(lid, t0);
        workgroupBarrier();
        let cnt = min(WG, pp.nb - t0);
        for (var t = 0u; t < cnt; t = t + 1u) {
            let d = d2_of(q, tile[t]);
            if (have < k || d < ld[k - 1u]) {
                var pos = min(have, k - 1u);
                if (have < k) {
                    have = have + 1u;
                }
                while (pos > 0u && ld[pos - 1u] > d) {
                    ld[pos] = ld[pos - 1u];
                    lj[pos] = lj[pos - 1u];
                    pos = pos - 1u;
                }
                ld[pos] = d;
                lj[pos] = t0 + t;
            }
        }
    }
    if (i < pp.na) {
        for (var s = 0u; s < k; s = s + 1u) {
            out[i * k + s] = Neighbor(lj[s], ld[s]);
        }
    }
}
