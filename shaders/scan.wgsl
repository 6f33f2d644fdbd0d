// Exclusive prefix sum of u32, in place, for any length (shared helper of the
// wgpu backend: SpGEMM row offsets, compaction offsets).
//
// `scan_blocks`: a workgroup of 256 threads scans a block of 1024 elements
// (4 per thread, sequential within a thread, then a workgroup scan of the
// 256 thread totals) and writes the block's total to `scan_sums[block]`.
// The host scans `scan_sums` the same way (recursively) and `scan_add` adds
// each block's scanned offset back. Sums wrap modulo 2^32: callers check
// totals on the host where they can overflow.
//
// The workgroup scan uses subgroup adds where the device has the `subgroups`
// feature, a Hillis-Steele scan in workgroup memory where it has not.

const SCAN_WG: u32 = 256u;
const SCAN_PER: u32 = 4u;
const SCAN_BLOCK: u32 = 1024u;

struct ScanParams {
    n: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

@group(0) @binding(0) var<storage, read_write> scan_data: array<u32>;
@group(0) @binding(1) var<storage, read_write> scan_sums: array<u32>;
@group(0) @binding(2) var<uniform> scan_p: ScanParams;

var<workgroup> scan_tmp: array<u32, 257>;

fn scan_block_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// #if SUBGROUPS
// Inclusive workgroup scan of `v` and the workgroup total, as (inclusive, total).
// Must be called from uniform control flow by all 256 threads.
fn scan_workgroup(lid: u32, v: u32, sg_id: u32, sg_size: u32) -> vec2<u32> {
    let incl = subgroupInclusiveAdd(v);
    let sg = lid / sg_size;
    let nsg = (SCAN_WG + sg_size - 1u) / sg_size;
    if (sg_id == sg_size - 1u || lid == SCAN_WG - 1u) {
        scan_tmp[sg] = incl;
    }
    workgroupBarrier();
    if (lid == 0u) {
        var run = 0u;
        for (var i = 0u; i < nsg; i = i + 1u) {
            let t = scan_tmp[i];
            scan_tmp[i] = run;
            run = run + t;
        }
        scan_tmp[256u] = run;
    }
    workgroupBarrier();
    let r = vec2<u32>(scan_tmp[sg] + incl, scan_tmp[256u]);
    workgroupBarrier();
    return r;
}
// #else
// Inclusive workgroup scan of `v` and the workgroup total, as (inclusive, total).
// Must be called from uniform control flow by all 256 threads.
fn scan_workgroup(lid: u32, v: u32, sg_id: u32, sg_size: u32) -> vec2<u32> {
    scan_tmp[lid] = v;
    workgroupBarrier();
    for (var off = 1u; off < SCAN_WG; off = off * 2u) {
        var t = 0u;
        if (lid >= off) {
            t = scan_tmp[lid - off];
        }
        workgroupBarrier();
        scan_tmp[lid] = scan_tmp[lid] + t;
        workgroupBarrier();
    }
    let r = vec2<u32>(scan_tmp[lid], scan_tmp[SCAN_WG - 1u]);
    workgroupBarrier();
    return r;
}
// #endif

@compute @workgroup_size(256)
fn scan_blocks(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
// #if SUBGROUPS
    @builtin(subgroup_invocation_id) sg_id: u32,
    @builtin(subgroup_size) sg_size: u32,
// #endif
) {
// #if SUBGROUPS
    let sg = vec2<u32>(sg_id, sg_size);
// #else
    let sg = vec2<u32>(0u, 1u);
// #endif
    let block = scan_block_index(wid, nwg);
    let base = block * SCAN_BLOCK + lid * SCAN_PER;
    let n = scan_p.n;
    var v: array<u32, 4>;
    var sum = 0u;
    for (var i = 0u; i < SCAN_PER; i = i + 1u) {
        var x = 0u;
        if (base + i < n) {
            x = scan_data[base + i];
        }
        v[i] = sum;
        sum = sum + x;
    }
    let r = scan_workgroup(lid, sum, sg.x, sg.y);
    let off = r.x - sum;
    for (var i = 0u; i < SCAN_PER; i = i + 1u) {
        if (base + i < n) {
            scan_data[base + i] = off + v[i];
        }
    }
    if (lid == 0u && block * SCAN_BLOCK < n) {
        scan_sums[block] = r.y;
    }
}

@compute @workgroup_size(256)
fn scan_add(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let block = scan_block_index(wid, nwg);
    let add = scan_sums[block];
    let base = block * SCAN_BLOCK + lid * SCAN_PER;
    for (var i = 0u; i < SCAN_PER; i = i + 1u) {
        if (base + i < scan_p.n) {
            scan_data[base + i] = scan_data[base + i] + add;
        }
    }
}
