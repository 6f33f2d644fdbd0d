// DenseGemm for the wgpu backend: C <- alpha op(A) op(B) + beta C, f32,
// row-major with leading dimensions (WGSL has no f64).
//
// `gemm_f32`: a workgroup of 256 threads computes a 128 x 128 tile of C; each
// thread an 8 x 8 block held in registers, made of four 4 x 4 pieces spaced 64
// rows / 64 columns apart so that the workgroup-memory reads of a k step are
// vec4s. Tiles of op(A) and op(B), 8 deep in k, are staged in workgroup memory
// k-major (as_[k][m], bs_[k][n], as vec4s of 4 consecutive m or n), double
// buffered through registers: the next tile is read from global memory before
// the current one is multiplied, so one barrier pair per k step suffices.
// Out-of-range elements load as zero, so edge tiles are exact; the transposes
// only change which loop index walks memory (a uniform branch per load).
// Every element of C sums its k terms in increasing k with fma, so results are
// deterministic. beta == 0 never reads C.
//
// `gemm_scale_f32`: C <- beta C (zero when beta == 0, C not read), used when
// alpha == 0 or k == 0 so that A and B are never read.

const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 8u;

struct GemmParams {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    // bit 0: op(A) = A^T, bit 1: op(B) = B^T, bit 2: beta == 0 (do not read C)
    flags: u32,
    _pad: u32,
    alpha: f32,
    beta: f32,
    _pad2: vec2<f32>,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: GemmParams;

var<workgroup> as_: array<vec4<f32>, 256>; // [BK][BM / 4]
var<workgroup> bs_: array<vec4<f32>, 256>; // [BK][BN / 4]

// op(A)(row, kk), zero outside.
fn load_a(row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) {
        return 0.0;
    }
    if ((p.flags & 1u) != 0u) {
        return a[kk * p.lda + row];
    }
    return a[row * p.lda + kk];
}

// op(B)(kk, col), zero outside.
fn load_b(kk: u32, col: u32) -> f32 {
    if (kk >= p.k || col >= p.n) {
        return 0.0;
    }
    if ((p.flags & 2u) != 0u) {
        return b[col * p.ldb + kk];
    }
    return b[kk * p.ldb + col];
}

// Thread `lid` fetches 4 elements of each tile. For a k-major operand
// (op(A) = A^T, op(B) = B) a thread takes 4 consecutive m (n) at one k, which
// walk memory; for the other layout 4 consecutive k at one m (n).
fn fetch_a(lid: u32, m0: u32, k0: u32) -> vec4<f32> {
    var r: vec4<f32>;
    if ((p.flags & 1u) != 0u) {
        let kk = lid / 32u;
        let mm = (lid % 32u) * 4u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            r[j] = load_a(m0 + mm + j, k0 + kk);
        }
    } else {
        let mm = lid / 2u;
        let kk = (lid % 2u) * 4u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            r[j] = load_a(m0 + mm, k0 + kk + j);
        }
    }
    return r;
}

fn fetch_b(lid: u32, n0: u32, k0: u32) -> vec4<f32> {
    var r: vec4<f32>;
    if ((p.flags & 2u) != 0u) {
        let nn = lid / 2u;
        let kk = (lid % 2u) * 4u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            r[j] = load_b(k0 + kk + j, n0 + nn);
        }
    } else {
        let kk = lid / 32u;
        let nn = (lid % 32u) * 4u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            r[j] = load_b(k0 + kk, n0 + nn + j);
        }
    }
    return r;
}

fn store_a(lid: u32, r: vec4<f32>) {
    if ((p.flags & 1u) != 0u) {
        as_[(lid / 32u) * (BM / 4u) + lid % 32u] = r;
    } else {
        let mm = lid / 2u;
        let kk = (lid % 2u) * 4u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            as_[(kk + j) * (BM / 4u) + mm / 4u][mm % 4u] = r[j];
        }
    }
}

fn store_b(lid: u32, r: vec4<f32>) {
    if ((p.flags & 2u) != 0u) {
        let nn = lid / 2u;
        let kk = (lid % 2u) * 4u;
        for (var j = 0u; j < 4u; j = j + 1u) {
            bs_[(kk + j) * (BN / 4u) + nn / 4u][nn % 4u] = r[j];
        }
    } else {
        bs_[(lid / 32u) * (BN / 4u) + lid % 32u] = r;
    }
}

@compute @workgroup_size(256)
fn gemm_f32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let tx = lid % 16u;
    let ty = lid / 16u;
    // 16 named accumulators, not an array: a dynamically indexed private
    // array would live in local memory instead of registers.
    var c00 = vec4<f32>(0.0);
    var c01 = vec4<f32>(0.0);
    var c10 = vec4<f32>(0.0);
    var c11 = vec4<f32>(0.0);
    var c20 = vec4<f32>(0.0);
    var c21 = vec4<f32>(0.0);
    var c30 = vec4<f32>(0.0);
    var c31 = vec4<f32>(0.0);
    var c40 = vec4<f32>(0.0);
    var c41 = vec4<f32>(0.0);
    var c50 = vec4<f32>(0.0);
    var c51 = vec4<f32>(0.0);
    var c60 = vec4<f32>(0.0);
    var c61 = vec4<f32>(0.0);
    var c70 = vec4<f32>(0.0);
    var c71 = vec4<f32>(0.0);
    var ra = fetch_a(lid, m0, 0u);
    var rb = fetch_b(lid, n0, 0u);
    for (var k0 = 0u; k0 < p.k; k0 = k0 + BK) {
        workgroupBarrier();
        store_a(lid, ra);
        store_b(lid, rb);
        workgroupBarrier();
        if (k0 + BK < p.k) {
            ra = fetch_a(lid, m0, k0 + BK);
            rb = fetch_b(lid, n0, k0 + BK);
        }
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a0 = as_[kk * (BM / 4u) + ty];
            let a1 = as_[kk * (BM / 4u) + 16u + ty];
            let b0 = bs_[kk * (BN / 4u) + tx];
            let b1 = bs_[kk * (BN / 4u) + 16u + tx];
            c00 = fma(vec4<f32>(a0.x), b0, c00);
            c01 = fma(vec4<f32>(a0.x), b1, c01);
            c40 = fma(vec4<f32>(a1.x), b0, c40);
            c41 = fma(vec4<f32>(a1.x), b1, c41);
            c10 = fma(vec4<f32>(a0.y), b0, c10);
            c11 = fma(vec4<f32>(a0.y), b1, c11);
            c50 = fma(vec4<f32>(a1.y), b0, c50);
            c51 = fma(vec4<f32>(a1.y), b1, c51);
            c20 = fma(vec4<f32>(a0.z), b0, c20);
            c21 = fma(vec4<f32>(a0.z), b1, c21);
            c60 = fma(vec4<f32>(a1.z), b0, c60);
            c61 = fma(vec4<f32>(a1.z), b1, c61);
            c30 = fma(vec4<f32>(a0.w), b0, c30);
            c31 = fma(vec4<f32>(a0.w), b1, c31);
            c70 = fma(vec4<f32>(a1.w), b0, c70);
            c71 = fma(vec4<f32>(a1.w), b1, c71);
        }
    }
    store_row(m0 + ty * 4u + 0u, n0 + tx * 4u, c00);
    store_row(m0 + ty * 4u + 0u, n0 + 64u + tx * 4u, c01);
    store_row(m0 + ty * 4u + 1u, n0 + tx * 4u, c10);
    store_row(m0 + ty * 4u + 1u, n0 + 64u + tx * 4u, c11);
    store_row(m0 + ty * 4u + 2u, n0 + tx * 4u, c20);
    store_row(m0 + ty * 4u + 2u, n0 + 64u + tx * 4u, c21);
    store_row(m0 + ty * 4u + 3u, n0 + tx * 4u, c30);
    store_row(m0 + ty * 4u + 3u, n0 + 64u + tx * 4u, c31);
    store_row(m0 + 64u + ty * 4u + 0u, n0 + tx * 4u, c40);
    store_row(m0 + 64u + ty * 4u + 0u, n0 + 64u + tx * 4u, c41);
    store_row(m0 + 64u + ty * 4u + 1u, n0 + tx * 4u, c50);
    store_row(m0 + 64u + ty * 4u + 1u, n0 + 64u + tx * 4u, c51);
    store_row(m0 + 64u + ty * 4u + 2u, n0 + tx * 4u, c60);
    store_row(m0 + 64u + ty * 4u + 2u, n0 + 64u + tx * 4u, c61);
    store_row(m0 + 64u + ty * 4u + 3u, n0 + tx * 4u, c70);
    store_row(m0 + 64u + ty * 4u + 3u, n0 + 64u + tx * 4u, c71);
}

// Writes 4 consecutive elements of C's row `row` from column `col0`.
fn store_row(row: u32, col0: u32, v: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let read_c = (p.flags & 4u) == 0u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        let col = col0 + j;
        if (col < p.n) {
            let idx = row * p.ldc + col;
            var out = p.alpha * v[j];
            if (read_c) {
                out = fma(p.beta, c[idx], out);
            }
            c[idx] = out;
        }
    }
}

@compute @workgroup_size(16, 16)
fn gemm_scale_f32(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.y;
    let col = gid.x;
    if (row >= p.m || col >= p.n) {
        return;
    }
    let idx = row * p.ldc + col;
    if ((p.flags & 4u) != 0u) {
        c[idx] = 0.0;
    } else {
        c[idx] = p.beta * c[idx];
    }
}
