// #unchecked
// DenseGemm for the wgpu backend: C <- alpha op(A) op(B) + beta C, f32,
// row-major with leading dimensions (WGSL has no f64).
//
// The host compiles this file once per variant, with a prefix that defines
//   TA, TB: bool   op(A) = A^T, op(B) = B^T,
//   BK: u32        depth of a k tile (8 or 16),
//   NBUF: u32      workgroup-memory buffers (2: double buffered, 1: single),
// so every branch on them is a constant one and each variant is a
// straight-line kernel (WGSL has no templates). The choice of BK and NBUF
// follows the adapter's workgroup-memory limit (dense_gemm.rs).
//
// `// #unchecked` (first line): the host builds this module without wgpu's
// injected bounds checks and loop counters (they kept the inner loop from
// being unrolled and cost 2x on the H100). That is sound because every
// storage index below is guarded against the view's extent (the host checks
// the views fit their buffers and every index fits u32), workgroup arrays are
// indexed in range by construction, and every loop is bounded by uniform
// values. Workgroup memory is written before it is read, so it needs no zero
// fill either.
//
// `gemm_f32`: a workgroup of 256 threads (8 warps of 32) computes a 128 x 128
// tile of C; each thread an 8 x 8 block in registers, made of 4 x 4 pieces
// spaced 32 rows / 16 columns apart inside its warp's 64 x 32 tile, so that a
// warp's workgroup-memory reads are vec4s, 8 distinct for A and 4 for B per
// k (the rest broadcasts). Tiles of op(A) and op(B) are staged k-major
// (as_[k][m], bs_[k][n], rows padded to 132 floats so the transposing stores
// do not collide in banks). With NBUF = 2 the next tile is read from global
// memory into registers while the current one is multiplied and stored into
// the other buffer: one barrier per k tile. Interior tiles load without
// bounds tests; edge tiles load zeros outside the matrix, so they are exact.
// Workgroups walk the tiles in groups of 8 tile rows, so the B panels they
// share stay in L2. Every element of C sums its k terms in increasing k with
// fma, so results are deterministic. beta == 0 never reads C.
//
// `gemm_scale_f32`: C <- beta C (zero when beta == 0, C not read), used when
// alpha == 0 or k == 0 so that A and B are never read.

const BM: u32 = 128u;
const BN: u32 = 128u;
// Row stride of the workgroup tiles in vec4s (128 floats + 4 of padding).
const RS: u32 = 33u;
const NT: u32 = 256u;

struct GemmParams {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    // bit 2: beta == 0 (do not read C); bits 0, 1 are TA, TB (the variant)
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

var<workgroup> as_: array<vec4<f32>, NBUF * BK * RS>;
var<workgroup> bs_: array<vec4<f32>, NBUF * BK * RS>;

// The thread's accumulators: acc_<row><piece>, row 0..7 of its 8 x 8 block
// (rows 4..7 are 32 rows below 0..3), piece 0/1 the two vec4s of columns 16
// apart. Named module-scope variables, not an array: an indexed array would
// be placed in memory instead of registers.
var<private> c00: vec4<f32>;
var<private> c01: vec4<f32>;
var<private> c10: vec4<f32>;
var<private> c11: vec4<f32>;
var<private> c20: vec4<f32>;
var<private> c21: vec4<f32>;
var<private> c30: vec4<f32>;
var<private> c31: vec4<f32>;
var<private> c40: vec4<f32>;
var<private> c41: vec4<f32>;
var<private> c50: vec4<f32>;
var<private> c51: vec4<f32>;
var<private> c60: vec4<f32>;
var<private> c61: vec4<f32>;
var<private> c70: vec4<f32>;
var<private> c71: vec4<f32>;

// The next tiles in registers: a thread loads BK / 8 groups of 4 elements of
// each operand (ra1, rb1 only when BK = 16).
var<private> ra0: vec4<f32>;
var<private> ra1: vec4<f32>;
var<private> rb0: vec4<f32>;
var<private> rb1: vec4<f32>;

// 4 consecutive elements a[r * lda + col .. + 3] of the stored matrix, which
// has `rows` rows and `cols` columns; zero outside unless `full` (the caller
// knows the whole group is inside).
fn load4_a(r: u32, col: u32, rows: u32, cols: u32, full: bool) -> vec4<f32> {
    let i = r * p.lda + col;
    if (full) {
        return vec4<f32>(a[i], a[i + 1u], a[i + 2u], a[i + 3u]);
    }
    var v = vec4<f32>(0.0);
    if (r < rows) {
        if (col < cols) {
            v.x = a[i];
        }
        if (col + 1u < cols) {
            v.y = a[i + 1u];
        }
        if (col + 2u < cols) {
            v.z = a[i + 2u];
        }
        if (col + 3u < cols) {
            v.w = a[i + 3u];
        }
    }
    return v;
}

fn load4_b(r: u32, col: u32, rows: u32, cols: u32, full: bool) -> vec4<f32> {
    let i = r * p.ldb + col;
    if (full) {
        return vec4<f32>(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
    }
    var v = vec4<f32>(0.0);
    if (r < rows) {
        if (col < cols) {
            v.x = b[i];
        }
        if (col + 1u < cols) {
            v.y = b[i + 1u];
        }
        if (col + 2u < cols) {
            v.z = b[i + 2u];
        }
        if (col + 3u < cols) {
            v.w = b[i + 3u];
        }
    }
    return v;
}

// Group `idx` (0 .. BM * BK / 4) of the op(A) tile at (m0, k0): 4 consecutive
// k at one m when A is stored m-major, 4 consecutive m at one k otherwise;
// either way 4 consecutive elements of the stored matrix.
fn fetch_a(idx: u32, m0: u32, k0: u32, full: bool) -> vec4<f32> {
    if (TA) {
        return load4_a(k0 + idx / (BM / 4u), m0 + (idx % (BM / 4u)) * 4u, p.k, p.m, full);
    }
    return load4_a(m0 + idx / (BK / 4u), k0 + (idx % (BK / 4u)) * 4u, p.m, p.k, full);
}

fn fetch_b(idx: u32, n0: u32, k0: u32, full: bool) -> vec4<f32> {
    if (TB) {
        return load4_b(n0 + idx / (BK / 4u), k0 + (idx % (BK / 4u)) * 4u, p.n, p.k, full);
    }
    return load4_b(k0 + idx / (BN / 4u), n0 + (idx % (BN / 4u)) * 4u, p.k, p.n, full);
}

// Stores group `idx` into buffer `buf` of the k-major tiles.
fn store_a(idx: u32, buf: u32, v: vec4<f32>) {
    let base = buf * BK * RS;
    if (TA) {
        as_[base + (idx / (BM / 4u)) * RS + idx % (BM / 4u)] = v;
    } else {
        let m = idx / (BK / 4u);
        let k = (idx % (BK / 4u)) * 4u;
        let at = base + k * RS + m / 4u;
        let q = m % 4u;
        as_[at][q] = v.x;
        as_[at + RS][q] = v.y;
        as_[at + 2u * RS][q] = v.z;
        as_[at + 3u * RS][q] = v.w;
    }
}

fn store_b(idx: u32, buf: u32, v: vec4<f32>) {
    let base = buf * BK * RS;
    if (TB) {
        let n = idx / (BK / 4u);
        let k = (idx % (BK / 4u)) * 4u;
        let at = base + k * RS + n / 4u;
        let q = n % 4u;
        bs_[at][q] = v.x;
        bs_[at + RS][q] = v.y;
        bs_[at + 2u * RS][q] = v.z;
        bs_[at + 3u * RS][q] = v.w;
    } else {
        bs_[base + (idx / (BN / 4u)) * RS + idx % (BN / 4u)] = v;
    }
}

// Reads the k tile at k0 into ra*, rb*.
fn fetch(lid: u32, m0: u32, n0: u32, k0: u32, m_full: bool, n_full: bool) {
    let k_full = k0 + BK <= p.k;
    ra0 = fetch_a(lid, m0, k0, m_full && k_full);
    rb0 = fetch_b(lid, n0, k0, n_full && k_full);
    if (BK == 16u) {
        ra1 = fetch_a(lid + NT, m0, k0, m_full && k_full);
        rb1 = fetch_b(lid + NT, n0, k0, n_full && k_full);
    }
}

fn store(lid: u32, buf: u32) {
    store_a(lid, buf, ra0);
    store_b(lid, buf, rb0);
    if (BK == 16u) {
        store_a(lid + NT, buf, ra1);
        store_b(lid + NT, buf, rb1);
    }
}

// One k step: `ia`, `ib` are the vec4 indices of the thread's first A and B
// pieces in row k of the tiles.
fn mac(ia: u32, ib: u32) {
    let a0 = as_[ia];
    let a1 = as_[ia + 8u];
    let b0 = bs_[ib];
    let b1 = bs_[ib + 4u];
    c00 = fma(vec4<f32>(a0.x), b0, c00);
    c01 = fma(vec4<f32>(a0.x), b1, c01);
    c10 = fma(vec4<f32>(a0.y), b0, c10);
    c11 = fma(vec4<f32>(a0.y), b1, c11);
    c20 = fma(vec4<f32>(a0.z), b0, c20);
    c21 = fma(vec4<f32>(a0.z), b1, c21);
    c30 = fma(vec4<f32>(a0.w), b0, c30);
    c31 = fma(vec4<f32>(a0.w), b1, c31);
    c40 = fma(vec4<f32>(a1.x), b0, c40);
    c41 = fma(vec4<f32>(a1.x), b1, c41);
    c50 = fma(vec4<f32>(a1.y), b0, c50);
    c51 = fma(vec4<f32>(a1.y), b1, c51);
    c60 = fma(vec4<f32>(a1.z), b0, c60);
    c61 = fma(vec4<f32>(a1.z), b1, c61);
    c70 = fma(vec4<f32>(a1.w), b0, c70);
    c71 = fma(vec4<f32>(a1.w), b1, c71);
}

// Eight k steps, unrolled by hand (a WGSL loop is not reliably unrolled).
fn mac8(ia: u32, ib: u32) {
    mac(ia, ib);
    mac(ia + RS, ib + RS);
    mac(ia + 2u * RS, ib + 2u * RS);
    mac(ia + 3u * RS, ib + 3u * RS);
    mac(ia + 4u * RS, ib + 4u * RS);
    mac(ia + 5u * RS, ib + 5u * RS);
    mac(ia + 6u * RS, ib + 6u * RS);
    mac(ia + 7u * RS, ib + 7u * RS);
}

// The whole k tile in buffer `buf`.
fn mac_tile(buf: u32, ia: u32, ib: u32) {
    let base = buf * BK * RS;
    mac8(base + ia, base + ib);
    if (BK == 16u) {
        mac8(base + 8u * RS + ia, base + 8u * RS + ib);
    }
}

// Writes 4 consecutive elements of C's row `row` from column `col0`.
fn store_c(row: u32, col0: u32, v: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let read_c = (p.flags & 4u) == 0u;
    let base = row * p.ldc + col0;
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (col0 + j < p.n) {
            var out = p.alpha * v[j];
            if (read_c) {
                out = fma(p.beta, c[base + j], out);
            }
            c[base + j] = out;
        }
    }
}

@compute @workgroup_size(256)
fn gemm_f32(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    // Grouped tile order: 8 consecutive tile rows sweep the tile columns
    // together.
    let tiles_m = (p.m + BM - 1u) / BM;
    let tiles_n = (p.n + BN - 1u) / BN;
    let bid = wid.x + wid.y * nwg.x;
    if (bid >= tiles_m * tiles_n) {
        return;
    }
    let group = 8u * tiles_n;
    let first_m = (bid / group) * 8u;
    let gm = min(tiles_m - first_m, 8u);
    let m0 = (first_m + (bid % group) % gm) * BM;
    let n0 = ((bid % group) / gm) * BN;
    let m_full = m0 + BM <= p.m;
    let n_full = n0 + BN <= p.n;

    // Warp w covers rows (w / 4) * 64 and columns (w % 4) * 32 of the tile;
    // lane l rows tm * 4 (+ 32) and columns tn * 4 (+ 16) of the warp's.
    let warp = lid / 32u;
    let lane = lid % 32u;
    let tm = lane / 4u;
    let tn = lane % 4u;
    let ia = (warp / 4u) * 16u + tm;
    let ib = (warp % 4u) * 8u + tn;

    c00 = vec4<f32>(0.0);
    c01 = vec4<f32>(0.0);
    c10 = vec4<f32>(0.0);
    c11 = vec4<f32>(0.0);
    c20 = vec4<f32>(0.0);
    c21 = vec4<f32>(0.0);
    c30 = vec4<f32>(0.0);
    c31 = vec4<f32>(0.0);
    c40 = vec4<f32>(0.0);
    c41 = vec4<f32>(0.0);
    c50 = vec4<f32>(0.0);
    c51 = vec4<f32>(0.0);
    c60 = vec4<f32>(0.0);
    c61 = vec4<f32>(0.0);
    c70 = vec4<f32>(0.0);
    c71 = vec4<f32>(0.0);

    let ktiles = (p.k + BK - 1u) / BK;
    fetch(lid, m0, n0, 0u, m_full, n_full);
    store(lid, 0u);
    workgroupBarrier();
    for (var kt = 0u; kt < ktiles; kt = kt + 1u) {
        let more = kt + 1u < ktiles;
        if (more) {
            fetch(lid, m0, n0, (kt + 1u) * BK, m_full, n_full);
        }
        if (NBUF == 2u) {
            let cur = kt % 2u;
            mac_tile(cur, ia, ib);
            if (more) {
                store(lid, 1u - cur);
            }
            workgroupBarrier();
        } else {
            mac_tile(0u, ia, ib);
            workgroupBarrier();
            if (more) {
                store(lid, 0u);
            }
            workgroupBarrier();
        }
    }

    let r0 = m0 + (warp / 4u) * 64u + tm * 4u;
    let q0 = n0 + (warp % 4u) * 32u + tn * 4u;
    store_c(r0, q0, c00);
    store_c(r0, q0 + 16u, c01);
    store_c(r0 + 1u, q0, c10);
    store_c(r0 + 1u, q0 + 16u, c11);
    store_c(r0 + 2u, q0, c20);
    store_c(r0 + 2u, q0 + 16u, c21);
    store_c(r0 + 3u, q0, c30);
    store_c(r0 + 3u, q0 + 16u, c31);
    store_c(r0 + 32u, q0, c40);
    store_c(r0 + 32u, q0 + 16u, c41);
    store_c(r0 + 33u, q0, c50);
    store_c(r0 + 33u, q0 + 16u, c51);
    store_c(r0 + 34u, q0, c60);
    store_c(r0 + 34u, q0 + 16u, c61);
    store_c(r0 + 35u, q0, c70);
    store_c(r0 + 35u, q0 + 16u, c71);
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
