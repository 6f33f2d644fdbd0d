// SparseGemm for the wgpu backend: C = A * B, CSR x CSR, f32.
//
// Two phases with exact output sizing, one thread per row of C:
//  1. `spg_products`: products(i) = sum of |B row k| over A's row i; the row
//     gets a hash table of 1.5 * products + 1 slots (capped at 2 * cols), so
//     the load stays <= 2/3. The host scans the sizes into offsets
//     (shaders/scan.wgsl) and allocates the tables.
//  2. `spg_accumulate`: the row's thread walks A's row in stored order and
//     each B row in stored order, inserting (j, a_ik * b_kj) into its table
//     (hash modulo the size, linear probing; key j + 1, 0 = empty) and adding to the value when j is
//     there. Each C(i, j) is therefore summed in A's column order, by one
//     thread: deterministic. Products that cancel stay as explicit entries.
//     The number of distinct j is the row's nnz; the host scans those into
//     C's offsets and allocates C exactly.
//  3. `spg_fill`: the thread gathers its table's entries into C's row and
//     heap-sorts them by column; it also writes the offsets as u64.
// Offsets of A and B are u64 (pairs of u32, little-endian); only the low word
// is read: the host guarantees nnz < 2^32.
// Not done yet (the CUDA backend's kernels/sparse_gemm.cu has them): rows
// binned by work and workgroup-memory tables for short rows.

struct SpgParams {
    rows: u32,
    cap: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<uniform> sp: SpgParams;
@group(0) @binding(1) var<storage, read> a_off: array<u32>;
@group(0) @binding(2) var<storage, read> a_idx: array<u32>;
@group(0) @binding(3) var<storage, read> b_off: array<u32>;
@group(0) @binding(4) var<storage, read_write> hoff: array<u32>;
@group(0) @binding(5) var<storage, read_write> coarse: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read> a_val: array<f32>;
@group(0) @binding(7) var<storage, read> b_idx: array<u32>;
@group(0) @binding(8) var<storage, read> b_val: array<f32>;
@group(0) @binding(9) var<storage, read_write> table: array<vec2<u32>>;
@group(0) @binding(10) var<storage, read_write> cnt: array<u32>;
@group(0) @binding(11) var<storage, read_write> c_idx: array<u32>;
@group(0) @binding(12) var<storage, read_write> c_val: array<f32>;
@group(0) @binding(13) var<storage, read_write> c_off: array<u32>;

fn row_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn hash_of(j: u32, size: u32) -> u32 {
    var h = j * 0x9E3779B1u;
    h = h ^ (h >> 15u);
    return h % size;
}

@compute @workgroup_size(256)
fn spg_products(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = row_index(gid, nwg);
    if (i > sp.rows) {
        return;
    }
    if (i == sp.rows) {
        hoff[i] = 0u;
        return;
    }
    var p = 0u;
    for (var e = a_off[2u * i]; e < a_off[2u * i + 2u]; e = e + 1u) {
        let k = a_idx[e];
        let len = b_off[2u * k + 2u] - b_off[2u * k];
        p = select(p + len, 0xffffffffu, p + len < p);
    }
    var size = 0u;
    if (p > 0u) {
        size = min(select(p + p / 2u + 1u, 0xffffffffu, p > 0xa0000000u), sp.cap);
    }
    hoff[i] = size;
    if (size >= 1024u) {
        atomicAdd(&coarse[0], size >> 10u);
    }
}

@compute @workgroup_size(256)
fn spg_accumulate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = row_index(gid, nwg);
    if (i > sp.rows) {
        return;
    }
    if (i == sp.rows) {
        cnt[i] = 0u;
        return;
    }
    let base = hoff[i];
    let size = hoff[i + 1u] - base;
    var n = 0u;
    for (var e = a_off[2u * i]; e < a_off[2u * i + 2u]; e = e + 1u) {
        let k = a_idx[e];
        let av = a_val[e];
        for (var f = b_off[2u * k]; f < b_off[2u * k + 2u]; f = f + 1u) {
            let j = b_idx[f];
            let v = av * b_val[f];
            var h = hash_of(j, size);
            loop {
                let s = table[base + h];
                if (s.x == 0u) {
                    table[base + h] = vec2<u32>(j + 1u, bitcast<u32>(v));
                    n = n + 1u;
                    break;
                }
                if (s.x == j + 1u) {
                    table[base + h].y = bitcast<u32>(bitcast<f32>(s.y) + v);
                    break;
                }
                h = h + 1u;
                if (h == size) {
                    h = 0u;
                }
            }
        }
    }
    cnt[i] = n;
}

fn sift_down(o: u32, start: u32, end: u32) {
    var root = start;
    loop {
        var child = 2u * root + 1u;
        if (child >= end) {
            break;
        }
        if (child + 1u < end && c_idx[o + child] < c_idx[o + child + 1u]) {
            child = child + 1u;
        }
        if (c_idx[o + root] >= c_idx[o + child]) {
            break;
        }
        let tk = c_idx[o + root];
        c_idx[o + root] = c_idx[o + child];
        c_idx[o + child] = tk;
        let tv = c_val[o + root];
        c_val[o + root] = c_val[o + child];
        c_val[o + child] = tv;
        root = child;
    }
}

@compute @workgroup_size(256)
fn spg_fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = row_index(gid, nwg);
    if (i > sp.rows) {
        return;
    }
    let o = cnt[i];
    c_off[2u * i] = o;
    c_off[2u * i + 1u] = 0u;
    if (i == sp.rows) {
        return;
    }
    let base = hoff[i];
    let size = hoff[i + 1u] - base;
    var w = 0u;
    for (var s = 0u; s < size; s = s + 1u) {
        let t = table[base + s];
        if (t.x != 0u) {
            c_idx[o + w] = t.x - 1u;
            c_val[o + w] = bitcast<f32>(t.y);
            w = w + 1u;
        }
    }
    // Heap sort of the row by column (columns are distinct).
    if (w > 1u) {
        var start = w / 2u;
        while (start > 0u) {
            start = start - 1u;
            sift_down(o, start, w);
        }
        var end = w - 1u;
        while (end > 0u) {
            let tk = c_idx[o];
            c_idx[o] = c_idx[o + end];
            c_idx[o + end] = tk;
            let tv = c_val[o];
            c_val[o] = c_val[o + end];
            c_val[o + end] = tv;
            sift_down(o, 0u, end);
            end = end - 1u;
        }
    }
}
