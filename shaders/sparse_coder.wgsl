// Batch-OMP (Rubinstein, Zibulevsky and Elad 2008) in f32, one signal per
// workgroup of 64 invocations. The contract is docs/semantics.md; the host
// side is crates/trident-wgpu/src/sparse_coder.rs, which says why the design
// is what it is. In short:
//
// - `gram` computes G = D^T D once per call (a storage buffer, so that
//   dictionaries far larger than workgroup memory work).
// - `encode` runs a grid-stride loop over the signals of one chunk: workgroup
//   `w` codes signals w, w + slots, ... with its own slot of scratch (alpha0,
//   the packed Cholesky factor L, z = L^-1 alpha0_I, gamma = L^-T z, the chosen
//   atoms and a chosen flag per atom).
// - Per step: every invocation recomputes the correlations of its atoms,
//   alpha_j = alpha0_j - sum_t G[I_t, j] gamma_t (rows of G read in order,
//   so the loads are coalesced), a workgroup argmax picks the atom (ties to
//   the smaller j), and invocation 0 extends L by one row (w = L^-1 G_{I,j}),
//   appends z_k = alpha_j / L_kk and back-substitutes gamma. ||r||^2 is
//   tracked as ||x||^2 - ||z||^2 and, once that has cancelled below
//   TRUST ||x||^2, measured from the explicit residual x - D_I gamma.
// - Every sum runs in a fixed order (per invocation sequentially with fma,
//   across invocations by a fixed tree), so results are bit-identical from
//   run to run whatever the scheduling.
// - What f32 cannot settle goes to the host, which codes the signal in f64
//   (trident_core::omp::plain_omp): the shader writes the count REDO_COUNT
//   for it and raises `redo`. That is a best correlation at f32 rounding
//   level (CORR_TINY), a pick whose pivot (squared distance to
//   the span of the chosen atoms) is below REDO times G_jj
//   (trident_core::tol::OMP_F32_REDO_PIVOT: the contract has no stop for a
//   nearly dependent atom, and f32 has lost the digits there), a signal whose
//   largest entry is below 2^-100 (devices may flush f32 subnormals), and a
//   coefficient or ||r||^2 that cannot be scaled back exactly (below).
// - The ends of the range: a signal whose largest |x_i| lies outside
//   [2^-32, 2^32) is coded as x 2^se, the power of two that brings that entry
//   into [1, 2) (trident_core::omp::SignalScale, OMP_WINDOW_F32), with the
//   error target scaled by 2^(2 se); the coefficients and ||r||^2 are scaled
//   back exactly, or the signal goes to the host where they would leave
//   f32's normal range (the host rounds them as IEEE does: infinity, a
//   subnormal or 0).

struct Params {
    n: u32,          // signal length (rows of D)
    k: u32,          // atoms (columns of D)
    count: u32,      // signals in this chunk
    max_atoms: u32,  // min(n, K, Sparsity(T))
    slots: u32,      // workgroups dispatched (one scratch slot each)
    has_eps: u32,    // 1 when an error target is set
    eps: f32,        // the error target ||r||^2 <= eps
    stride_f: u32,   // f32 scratch per slot
    stride_u: u32,   // u32 scratch per slot
    gram_row0: u32,  // first row of G this `gram` dispatch computes
    ld: u32,         // signal row stride (elements)
    eps_m: f32,      // the error target as eps_m 2^eps_e, eps_m in [1, 2) or 0
    eps_e: i32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
// D, row-major n x K.
@group(0) @binding(1) var<storage, read> dict: array<f32>;
// G = D^T D, K x K.
@group(0) @binding(2) var<storage, read> gram: array<f32>;
// The chunk's signals, row-major count x n.
@group(0) @binding(3) var<storage, read> sig: array<f32>;
// Per slot: alpha0 [K], L packed by rows [M (M + 1) / 2], z [M], gamma [M].
@group(0) @binding(4) var<storage, read_write> sf: array<f32>;
// Per slot: chosen flag [K], selected atoms [M].
@group(0) @binding(5) var<storage, read_write> su: array<u32>;
// Per signal, stride M + 1: the atom count, then the atoms.
@group(0) @binding(6) var<storage, read_write> out_u: array<u32>;
// Per signal, stride M + 1: ||r||^2, then the coefficients.
@group(0) @binding(7) var<storage, read_write> out_f: array<f32>;
// `gram_main` writes G here: its binding 2 is the buffer `encode_main` reads
// as `gram` (bindings are per entry point).
@group(0) @binding(2) var<storage, read_write> gram_out: array<f32>;
// Raised (set to 1) by `encode_main` and `encode_wg` when a signal of the
// dispatch has the count REDO_COUNT: the host codes it in f64.
@group(0) @binding(8) var<storage, read_write> redo: array<atomic<u32>>;

const WG: u32 = 64u;
// Below TRUST ||x||^2 the tracked ||x||^2 - ||z||^2 has lost most of its f32
// digits to cancellation: the explicit residual decides instead.
const TRUST: f32 = 1e-3;
// A residual below TINY ||x||^2 is zero up to f32 rounding: stop (the
// reference's "exactly zero residual" rule, at f32 resolution).
const TINY: f32 = 1e-9;
// A best correlation with |c|^2 <= CORR_TINY ||x||^2 is at f32 rounding
// level: whether it is zero (the contract's stop) or genuine (an atom nearly
// dependent on the chosen ones leaves the residual a correlation of 1e-7
// ||x||) only f64 can tell, so the host codes the signal. An exactly zero
// best correlation stops.
const CORR_TINY: f32 = 1e-13;
// A pick whose squared distance to the span of the chosen atoms is below
// REDO times its squared norm (an atom within about 0.03 rad of that span)
// sends the signal to the host's f64 OMP: f32 has lost the digits there
// (trident_core::tol::OMP_F32_REDO_PIVOT).
const REDO: f32 = 1e-3;
// The count of a signal the host codes in f64.
const REDO_COUNT: u32 = 0xffffffffu;
// A scale exponent that marks a signal for the host: its largest entry is
// below 2^-100, where devices may have flushed f32 subnormals.
const NO_SCALE: i32 = 1000;

var<workgroup> red_v: array<f32, 64>;
var<workgroup> red_i: array<u32, 64>;
var<workgroup> red_s: array<f32, 64>;
var<workgroup> wg_stop: u32;
var<workgroup> wg_zz: f32;

// G[a, b] = sum_i D[i, a] D[i, b], sequentially in i with fma: the same order
// as alpha0 below, so a signal equal to atom j gets alpha0_j == G_jj bit for bit.
@compute @workgroup_size(8, 8)
fn gram_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = P.k;
    let a = gid.y + P.gram_row0;
    let b = gid.x;
    if (a >= k || b >= k) {
        return;
    }
    var acc = 0.0;
    for (var i = 0u; i < P.n; i = i + 1u) {
        acc = fma(dict[i * k + a], dict[i * k + b], acc);
    }
    gram_out[a * k + b] = acc;
}

// Sum of one value per invocation, in a fixed tree order; the result is
// workgroup-uniform.
fn sum_reduce(tid: u32, v: f32) -> f32 {
    workgroupBarrier();
    red_v[tid] = v;
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (tid < w) {
            red_v[tid] = red_v[tid] + red_v[tid + w];
        }
    }
    return workgroupUniformLoad(&red_v[0]);
}

// Largest |alpha| and its atom (ties to the smaller index) over the
// workgroup; leaves the winner in red_v[0], red_i[0], red_s[0] (signed).
fn argmax_reduce(tid: u32, v: f32, i: u32, s: f32) {
    workgroupBarrier();
    red_v[tid] = v;
    red_i[tid] = i;
    red_s[tid] = s;
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (tid < w) {
            let ov = red_v[tid + w];
            let oi = red_i[tid + w];
            let mv = red_v[tid];
            if (ov > mv || (ov == mv && oi < red_i[tid])) {
                red_v[tid] = ov;
                red_i[tid] = oi;
                red_s[tid] = red_s[tid + w];
            }
        }
    }
    workgroupBarrier();
}

// ||x - D_I gamma||^2 with the residual formed explicitly.
fn explicit_r2(tid: u32, xoff: u32, se: i32, count: u32, ubase: u32, gbase: u32) -> f32 {
    let n = P.n;
    let k = P.k;
    var part = 0.0;
    for (var i = tid; i < n; i = i + WG) {
        var r = xval(xoff, i, se);
        for (var t = 0u; t < count; t = t + 1u) {
            r = fma(-sf[gbase + t], dict[i * k + su[ubase + k + t]], r);
        }
        part = fma(r, r, part);
    }
    return sum_reduce(tid, part);
}

fn stops(r2: f32, xx: f32, count: u32, eps: f32) -> bool {
    return (P.has_eps != 0u && r2 <= eps) || r2 <= TINY * xx || count >= P.max_atoms;
}

// The largest |x_i| of the signal at `xoff`, as f32 bits (the magnitudes of
// finite floats order like their bit patterns; no float arithmetic, so no
// flushing), over the workgroup.
fn max_bits(tid: u32, xoff: u32) -> u32 {
    var mb = 0u;
    for (var i = tid; i < P.n; i = i + WG) {
        mb = max(mb, bitcast<u32>(sig[xoff + i]) & 0x7fffffffu);
    }
    workgroupBarrier();
    red_i[tid] = mb;
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
        workgroupBarrier();
        if (tid < w) {
            red_i[tid] = max(red_i[tid], red_i[tid + w]);
        }
    }
    return workgroupUniformLoad(&red_i[0]);
}

// The signal's scale exponent se from the bits of its largest entry: 0 for
// a zero signal or one inside [2^-32, 2^32) (coded bit for bit as without
// scaling), NO_SCALE below 2^-100, else the se that brings it into [1, 2).
fn scale_exp(mb: u32) -> i32 {
    if (mb == 0u) {
        return 0;
    }
    let e = i32(mb >> 23u) - 127;
    if (e < -100) {
        return NO_SCALE;
    }
    if (e >= -32 && e < 32) {
        return 0;
    }
    return -e;
}

// Entry i of the signal at `xoff`, scaled by 2^se (exact).
fn xval(xoff: u32, i: u32, se: i32) -> f32 {
    let v = sig[xoff + i];
    if (se == 0) {
        return v;
    }
    return ldexp(v, se);
}

// The error target in the units of a signal scaled by 2^se: eps 2^(2 se),
// as large as need be where that overflows (the target is met before the
// first atom: ||x||^2 is far below it) and 0 where it underflows.
fn eps_for(se: i32) -> f32 {
    if (se == 0) {
        return P.eps;
    }
    if (P.eps_m == 0.0) {
        return 0.0;
    }
    let te = P.eps_e + 2 * se;
    if (te > 127) {
        return 3.4e38;
    }
    if (te < -126) {
        return 0.0;
    }
    return ldexp(P.eps_m, te);
}

// Whether v 2^sh is an f32 normal number or 0 (then ldexp is exact).
fn back_ok(v: f32, sh: i32) -> bool {
    if (v == 0.0) {
        return true;
    }
    let be = i32((bitcast<u32>(v) >> 23u) & 0xffu);
    return be != 0 && be + sh >= 1 && be + sh <= 254;
}

// v 2^sh for a v that `back_ok` accepts, in two halves so that every
// exponent handed to ldexp stays within its range (|sh| may reach 254).
fn scale_back(v: f32, sh: i32) -> f32 {
    if (sh == 0) {
        return v;
    }
    let h = sh / 2;
    return ldexp(ldexp(v, h), sh - h);
}

@compute @workgroup_size(64)
fn encode_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let n = P.n;
    let k = P.k;
    let m = P.max_atoms;
    let slot = wid.x;
    let fbase = slot * P.stride_f;
    let lbase = fbase + k;
    let zbase = lbase + m * (m + 1u) / 2u;
    let gbase = zbase + m;
    let ubase = slot * P.stride_u;
    for (var s = slot; s < P.count; s = s + P.slots) {
        let xoff = s * P.ld;
        let se0 = scale_exp(max_bits(tid, xoff));
        var flag = se0 == NO_SCALE;
        let se = select(se0, 0, flag);
        let eps = eps_for(se);
        for (var j = tid; j < k; j = j + WG) {
            var acc = 0.0;
            if (se == 0) {
                for (var i = 0u; i < n; i = i + 1u) {
                    acc = fma(dict[i * k + j], sig[xoff + i], acc);
                }
            } else {
                for (var i = 0u; i < n; i = i + 1u) {
                    acc = fma(dict[i * k + j], ldexp(sig[xoff + i], se), acc);
                }
            }
            sf[fbase + j] = acc;
            su[ubase + j] = 0u;
        }
        var part = 0.0;
        for (var i = tid; i < n; i = i + WG) {
            let x = xval(xoff, i, se);
            part = fma(x, x, part);
        }
        let xx = sum_reduce(tid, part);
        if (tid == 0u) {
            wg_zz = 0.0;
        }
        var count = 0u;
        var r2 = xx;
        loop {
            if (flag || stops(r2, xx, count, eps)) {
                break;
            }
            // This invocation's best unselected atom, ascending j with a strict
            // `>`, so the smaller j wins exact ties.
            var bv = -1.0;
            var bi = 0xffffffffu;
            var bs = 0.0;
            for (var j = tid; j < k; j = j + WG) {
                if (su[ubase + j] != 0u) {
                    continue;
                }
                var a = sf[fbase + j];
                for (var t = 0u; t < count; t = t + 1u) {
                    a = fma(-gram[su[ubase + k + t] * k + j], sf[gbase + t], a);
                }
                let c = abs(a);
                if (c > bv) {
                    bv = c;
                    bi = j;
                    bs = a;
                }
            }
            argmax_reduce(tid, bv, bi, bs);
            if (tid == 0u) {
                let best = red_v[0];
                let j = red_i[0];
                var st = 0u;
                if (!(best > 0.0)) {
                    st = 1u;
                } else if (best * best <= CORR_TINY * xx) {
                    st = 2u;
                } else {
                    // Row `count` of L: w = L^-1 G_{I, j}.
                    let row = lbase + count * (count + 1u) / 2u;
                    var ww = 0.0;
                    for (var t = 0u; t < count; t = t + 1u) {
                        let rt = lbase + t * (t + 1u) / 2u;
                        var v = gram[su[ubase + k + t] * k + j];
                        for (var q = 0u; q < t; q = q + 1u) {
                            v = fma(-sf[rt + q], sf[row + q], v);
                        }
                        v = v / sf[rt + t];
                        sf[row + t] = v;
                        ww = fma(v, v, ww);
                    }
                    let gjj = gram[j * k + j];
                    let d2 = gjj - ww;
                    if (!(d2 > 0.0) || d2 < REDO * gjj) {
                        st = 2u;
                    } else {
                        let lkk = sqrt(d2);
                        sf[row + count] = lkk;
                        let zk = red_s[0] / lkk;
                        sf[zbase + count] = zk;
                        su[ubase + k + count] = j;
                        su[ubase + j] = 1u;
                        wg_zz = fma(zk, zk, wg_zz);
                        // gamma = L^-T z by back substitution, column by column.
                        let mm = count + 1u;
                        for (var u = 0u; u < mm; u = u + 1u) {
                            sf[gbase + u] = sf[zbase + u];
                        }
                        for (var u = mm; u > 0u; u = u - 1u) {
                            let uu = u - 1u;
                            let ru = lbase + uu * (uu + 1u) / 2u;
                            let g = sf[gbase + uu] / sf[ru + uu];
                            sf[gbase + uu] = g;
                            for (var q = 0u; q < uu; q = q + 1u) {
                                sf[gbase + q] = fma(-sf[ru + q], g, sf[gbase + q]);
                            }
                        }
                    }
                }
                wg_stop = st;
            }
            storageBarrier();
            let st = workgroupUniformLoad(&wg_stop);
            if (st != 0u) {
                flag = st == 2u;
                break;
            }
            count = count + 1u;
            let zz = workgroupUniformLoad(&wg_zz);
            r2 = xx - zz;
            if (r2 <= TRUST * xx) {
                r2 = explicit_r2(tid, xoff, se, count, ubase, gbase);
            }
        }
        // The residual of the code as returned.
        let rf = explicit_r2(tid, xoff, se, count, ubase, gbase);
        if (!flag && se != 0) {
            if (tid == 0u) {
                var bad = !back_ok(rf, -2 * se);
                for (var t = 0u; t < count; t = t + 1u) {
                    bad = bad || !back_ok(sf[gbase + t], -se);
                }
                wg_stop = select(0u, 1u, bad);
            }
            flag = workgroupUniformLoad(&wg_stop) != 0u;
        }
        let ob = s * (m + 1u);
        if (flag) {
            if (tid == 0u) {
                out_u[ob] = REDO_COUNT;
                atomicStore(&redo[0], 1u);
            }
        } else {
            if (tid == 0u) {
                out_u[ob] = count;
                out_f[ob] = scale_back(rf, -2 * se);
            }
            for (var t = tid; t < count; t = t + WG) {
                out_u[ob + 1u + t] = su[ubase + k + t];
                out_f[ob + 1u + t] = scale_back(sf[gbase + t], -se);
            }
        }
        storageBarrier();
    }
}

// ---------------------------------------------------------------------------
// `encode_wg`: the same algorithm, arithmetic and output bits as
// `encode_main`, with every per-signal scratch in workgroup memory rather
// than a global slot: alpha0, the chosen flags (a bitmap), the packed factor
// L, z, gamma and the chosen atoms. Invocation 0's serial Cholesky update and
// back substitution (about 2/3 k^3 dependent steps per signal) then run at
// workgroup-memory latency instead of through L1/L2 with storage barriers,
// which is where `encode_main` spent its time. For K <= WK atoms and codes of
// at most WM atoms (omp-64x256-k16, omp-256x1024-k32); longer codes or larger
// dictionaries take `encode_main`. It writes the device-resident layout
// directly: counts, atoms and coefficients in slots of max_atoms, ||r||^2.

const WK: u32 = 1024u;
const WM: u32 = 32u;

var<workgroup> w_a0: array<f32, 1024>;
var<workgroup> w_chosen: array<u32, 32>;
var<workgroup> w_l: array<f32, 528>;
var<workgroup> w_z: array<f32, 32>;
var<workgroup> w_g: array<f32, 32>;
var<workgroup> w_i: array<u32, 32>;

@group(0) @binding(4) var<storage, read_write> o_counts: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_atoms: array<u32>;
@group(0) @binding(6) var<storage, read_write> o_coefs: array<f32>;
@group(0) @binding(7) var<storage, read_write> o_res: array<f32>;

// explicit_r2 with the chosen atoms and gamma in workgroup memory.
fn explicit_r2_wg(tid: u32, xoff: u32, se: i32, count: u32) -> f32 {
    let n = P.n;
    let k = P.k;
    var part = 0.0;
    for (var i = tid; i < n; i = i + WG) {
        var r = xval(xoff, i, se);
        for (var t = 0u; t < count; t = t + 1u) {
            r = fma(-w_g[t], dict[i * k + w_i[t]], r);
        }
        part = fma(r, r, part);
    }
    return sum_reduce(tid, part);
}

@compute @workgroup_size(64)
fn encode_wg(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let n = P.n;
    let k = P.k;
    let m = P.max_atoms;
    for (var s = wid.x; s < P.count; s = s + P.slots) {
        let xoff = s * P.ld;
        let se0 = scale_exp(max_bits(tid, xoff));
        var flag = se0 == NO_SCALE;
        let se = select(se0, 0, flag);
        let eps = eps_for(se);
        for (var j = tid; j < k; j = j + WG) {
            var acc = 0.0;
            if (se == 0) {
                for (var i = 0u; i < n; i = i + 1u) {
                    acc = fma(dict[i * k + j], sig[xoff + i], acc);
                }
            } else {
                for (var i = 0u; i < n; i = i + 1u) {
                    acc = fma(dict[i * k + j], ldexp(sig[xoff + i], se), acc);
                }
            }
            w_a0[j] = acc;
        }
        if (tid < WK / 32u) {
            w_chosen[tid] = 0u;
        }
        var part = 0.0;
        for (var i = tid; i < n; i = i + WG) {
            let x = xval(xoff, i, se);
            part = fma(x, x, part);
        }
        let xx = sum_reduce(tid, part);
        if (tid == 0u) {
            wg_zz = 0.0;
        }
        var count = 0u;
        var r2 = xx;
        loop {
            if (flag || stops(r2, xx, count, eps)) {
                break;
            }
            var bv = -1.0;
            var bi = 0xffffffffu;
            var bs = 0.0;
            for (var j = tid; j < k; j = j + WG) {
                if (((w_chosen[j >> 5u] >> (j & 31u)) & 1u) != 0u) {
                    continue;
                }
                var a = w_a0[j];
                for (var t = 0u; t < count; t = t + 1u) {
                    a = fma(-gram[w_i[t] * k + j], w_g[t], a);
                }
                let c = abs(a);
                if (c > bv) {
                    bv = c;
                    bi = j;
                    bs = a;
                }
            }
            argmax_reduce(tid, bv, bi, bs);
            if (tid == 0u) {
                let best = red_v[0];
                let j = red_i[0];
                var st = 0u;
                if (!(best > 0.0)) {
                    st = 1u;
                } else if (best * best <= CORR_TINY * xx) {
                    st = 2u;
                } else {
                    let row = count * (count + 1u) / 2u;
                    var ww = 0.0;
                    for (var t = 0u; t < count; t = t + 1u) {
                        let rt = t * (t + 1u) / 2u;
                        var v = gram[w_i[t] * k + j];
                        for (var q = 0u; q < t; q = q + 1u) {
                            v = fma(-w_l[rt + q], w_l[row + q], v);
                        }
                        v = v / w_l[rt + t];
                        w_l[row + t] = v;
                        ww = fma(v, v, ww);
                    }
                    let gjj = gram[j * k + j];
                    let d2 = gjj - ww;
                    if (!(d2 > 0.0) || d2 < REDO * gjj) {
                        st = 2u;
                    } else {
                        let lkk = sqrt(d2);
                        w_l[row + count] = lkk;
                        let zk = red_s[0] / lkk;
                        w_z[count] = zk;
                        w_i[count] = j;
                        w_chosen[j >> 5u] = w_chosen[j >> 5u] | (1u << (j & 31u));
                        wg_zz = fma(zk, zk, wg_zz);
                        let mm = count + 1u;
                        for (var u = 0u; u < mm; u = u + 1u) {
                            w_g[u] = w_z[u];
                        }
                        for (var u = mm; u > 0u; u = u - 1u) {
                            let uu = u - 1u;
                            let ru = uu * (uu + 1u) / 2u;
                            let g = w_g[uu] / w_l[ru + uu];
                            w_g[uu] = g;
                            for (var q = 0u; q < uu; q = q + 1u) {
                                w_g[q] = fma(-w_l[ru + q], g, w_g[q]);
                            }
                        }
                    }
                }
                wg_stop = st;
            }
            let st = workgroupUniformLoad(&wg_stop);
            if (st != 0u) {
                flag = st == 2u;
                break;
            }
            count = count + 1u;
            let zz = workgroupUniformLoad(&wg_zz);
            r2 = xx - zz;
            if (r2 <= TRUST * xx) {
                r2 = explicit_r2_wg(tid, xoff, se, count);
            }
        }
        let rf = explicit_r2_wg(tid, xoff, se, count);
        if (!flag && se != 0) {
            if (tid == 0u) {
                var bad = !back_ok(rf, -2 * se);
                for (var t = 0u; t < count; t = t + 1u) {
                    bad = bad || !back_ok(w_g[t], -se);
                }
                wg_stop = select(0u, 1u, bad);
            }
            flag = workgroupUniformLoad(&wg_stop) != 0u;
        }
        let ob = s * m;
        if (flag) {
            if (tid == 0u) {
                o_counts[s] = REDO_COUNT;
                atomicStore(&redo[0], 1u);
            }
        } else {
            if (tid == 0u) {
                o_counts[s] = count;
                o_res[s] = scale_back(rf, -2 * se);
            }
            for (var t = tid; t < count; t = t + WG) {
                o_atoms[ob + t] = w_i[t];
                o_coefs[ob + t] = scale_back(w_g[t], -se);
            }
        }
        workgroupBarrier();
    }
}

// `encode_main`'s slots (stride max_atoms + 1: count, then atoms; ||r||^2,
// then coefficients) to the device-resident layout, one signal per
// invocation.
@group(0) @binding(1) var<storage, read> up_u: array<u32>;
@group(0) @binding(2) var<storage, read> up_f: array<f32>;

@compute @workgroup_size(64)
fn unpack_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    if (s >= P.count) {
        return;
    }
    let m = P.max_atoms;
    let ib = s * (m + 1u);
    // A count above m (REDO_COUNT: the host recodes the signal) is never
    // written past the slot.
    let c = up_u[ib];
    o_counts[s] = c;
    o_res[s] = up_f[ib];
    for (var t = 0u; t < min(c, m); t = t + 1u) {
        o_atoms[s * m + t] = up_u[ib + 1u + t];
        o_coefs[s * m + t] = up_f[ib + 1u + t];
    }
}
