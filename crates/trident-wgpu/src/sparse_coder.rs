//! SparseCoder for [`WgpuBackend`]: Batch-OMP in f32 (`shaders/sparse_coder.wgsl`).
//!
//! Design:
//! - The Gram matrix `G = D^T D` is computed on the device once per call and
//!   lives in a storage buffer, as does `D`: nothing is sized by workgroup
//!   memory, so a 256 x 1024 dictionary (4 MiB of `G`) works like a 64 x 256
//!   one.
//! - One signal per workgroup of 64 invocations: every invocation owns the
//!   atoms `j = tid, tid + 64, ...` and recomputes their correlations
//!   `alpha_j = alpha0_j - sum_t G[I_t, j] gamma_t` each step (rows of `G`
//!   read in order, coalesced; `G` stays in L2); a workgroup argmax picks the
//!   atom (ties to the smaller index) and invocation 0 extends the Cholesky
//!   factor of `G_II` by one row and back-substitutes the coefficients. One
//!   signal per invocation was not an option worth measuring: its `K`
//!   correlations would live in scratch memory, not registers.
//! - The workgroups loop over the signals (grid-stride), each with a fixed
//!   slot of scratch memory (alpha0, the packed factor, z, gamma, the chosen
//!   atoms), so scratch is bounded by the number of workgroups, not of signals.
//! - Signals go up in chunks small enough for one storage binding; codes come
//!   back in fixed slots of `max_atoms + 1` per signal and are packed into
//!   [`SparseCodes`] on the host.
//!
//! Precision: f32 throughout (WGSL has no f64), so an f64 call answers
//! [`Error::Unsupported`] and the facade moves on. Where f32 changes the
//! rules, and why:
//! - `||r||^2` is tracked as `||x||^2 - ||z||^2`; below `1e-3 ||x||^2` the
//!   decisions use the explicit residual `x - D_I gamma` instead, and the
//!   reported `||r||^2` is always the explicit residual of the returned code.
//! - "Zero up to rounding" is the f32 resolution: a residual below
//!   `1e-9 ||x||^2`, a best correlation with `c^2 <= 1e-13 ||x||^2`, or an
//!   atom whose distance to the span of the chosen ones has squared norm
//!   below `1e-5` of its own (an exact duplicate lands near `1e-7`) ends the
//!   signal's coding, where the f64 reference would continue on rounding
//!   noise (docs/semantics.md accepts both).
//!
//! Determinism: every sum has a fixed order (fma chains per invocation, a
//! fixed tree across them), so the output is bit-identical between runs.

use trident_core::{
    Dictionary, Error, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule, validate,
};

use crate::pipeline::{Arg, Bind, Kernel, Shader};
use crate::{WgpuBackend, as_f32, require_f32};

static SHADER: Shader = Shader {
    name: "sparse_coder",
    parts: &[include_str!("../shaders/sparse_coder.wgsl")],
};

static GRAM: Kernel = Kernel {
    shader: &SHADER,
    entry: "gram_main",
    bindings: &[Bind::Uniform, Bind::Read, Bind::ReadWrite],
};

static ENCODE: Kernel = Kernel {
    shader: &SHADER,
    entry: "encode_main",
    bindings: &[
        Bind::Uniform,
        Bind::Read,
        Bind::Read,
        Bind::Read,
        Bind::ReadWrite,
        Bind::ReadWrite,
        Bind::ReadWrite,
        Bind::ReadWrite,
    ],
};

/// The kernels of this primitive (for [`WgpuBackend::warm_up`]).
pub(crate) static KERNELS: &[&Kernel] = &[&GRAM, &ENCODE];

/// Most workgroups (and scratch slots) per dispatch: enough to fill a large
/// GPU several times over (an H100 holds about 4,000 such workgroups at once).
const MAX_SLOTS: usize = 16_384;
/// Most signals per chunk, so that the signal and output buffers stay far
/// below every adapter's binding limit.
const MAX_CHUNK: usize = 1 << 18;
/// Most bytes of scratch memory per call.
const MAX_SCRATCH: u64 = 256 << 20;

/// The shader's `Params` (16-byte multiple, as uniforms need).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    k: u32,
    count: u32,
    max_atoms: u32,
    slots: u32,
    has_eps: u32,
    eps: f32,
    stride_f: u32,
    stride_u: u32,
    gram_row0: u32,
    _pad0: u32,
    _pad1: u32,
}

fn too_large(field: &'static str, value: u128) -> Error {
    Error::TooLarge {
        field,
        value,
        limit: u32::MAX as u128,
    }
}

impl<T: Scalar> SparseCoder<T> for WgpuBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        validate::encode(dict, &signals, &rule)?;
        require_f32::<T>("SparseCoder")?;
        self.scoped("sparse_coder", || encode_f32(self, dict, &signals, rule))
    }
}

fn encode_f32<T: Scalar>(
    be: &WgpuBackend,
    dict: &Dictionary<T>,
    signals: &MatRef<'_, T>,
    rule: StopRule,
) -> Result<SparseCodes<T>> {
    let (n, k, l) = (dict.n(), dict.atoms(), signals.rows());
    let m = rule.max_atoms(n, k);
    // Shader indices are u32: D, G and every per-slot offset must fit.
    let nk = n as u128 * k as u128;
    if nk > u32::MAX as u128 {
        return Err(too_large("dictionary entries (u32 indices in WGSL)", nk));
    }
    let kk = k as u128 * k as u128;
    if kk > u32::MAX as u128 {
        return Err(too_large(
            "Gram matrix entries, atoms^2 (u32 indices in WGSL)",
            kk,
        ));
    }
    let stride_f = k + m * (m + 1) / 2 + 2 * m;
    let stride_u = k + m;
    let mut codes = SparseCodes {
        offsets: Vec::with_capacity(l + 1),
        atoms: Vec::new(),
        coefs: Vec::new(),
        residual_norm2: Vec::with_capacity(l),
    };
    codes.offsets.push(0);
    if l == 0 {
        return Ok(codes);
    }
    let lim = be.limits().max_storage_buffer_binding_size as usize;
    let per_signal = 4 * n.max(m + 1);
    let chunk = l.min(MAX_CHUNK).min((lim / per_signal.max(1)).max(1));
    let slot_bytes = 4 * stride_f.max(stride_u).max(1) as u64;
    let slots_by_mem = (MAX_SCRATCH.min(lim as u64) / slot_bytes).max(1) as usize;
    let slots = chunk.min(MAX_SLOTS).min(slots_by_mem);
    let span = (slots * stride_f.max(stride_u)) as u128 + (chunk * n.max(m + 1)) as u128;
    if span > u32::MAX as u128 {
        return Err(too_large(
            "scratch or signal elements per chunk (u32 indices in WGSL)",
            span,
        ));
    }

    let d = be.upload_named(as_f32(dict.data())?, "sparse_coder dictionary")?;
    let g = be.alloc::<f32>(k * k, "sparse_coder Gram matrix")?;
    let sig = be.alloc::<f32>(chunk * n, "sparse_coder signals")?;
    let sf = be.alloc::<f32>(slots * stride_f, "sparse_coder scratch")?;
    let su = be.alloc::<u32>(slots * stride_u, "sparse_coder scratch (atoms)")?;
    let out_u = be.alloc::<u32>(chunk * (m + 1), "sparse_coder atoms")?;
    let out_f = be.alloc::<f32>(chunk * (m + 1), "sparse_coder coefficients")?;
    let eps = rule.error_target();
    let params = |count: usize| Params {
        n: n as u32,
        k: k as u32,
        count: count as u32,
        max_atoms: m as u32,
        slots: slots.min(count) as u32,
        has_eps: eps.is_some() as u32,
        eps: eps.unwrap_or(0.0) as f32,
        stride_f: stride_f as u32,
        stride_u: stride_u as u32,
        gram_row0: 0,
        _pad0: 0,
        _pad1: 0,
    };

    let gp = be.uniform(&params(0));
    let mut enc = be.encoder("sparse_coder gram");
    let side = k.div_ceil(8) as u32;
    enc.dispatch(
        &GRAM,
        &[Arg::raw(&gp), Arg::buf(&d), Arg::buf(&g)],
        [side, side, 1],
    )?;
    enc.submit();

    let mut host_u = vec![0u32; chunk * (m + 1)];
    let mut host_f = vec![0f32; chunk * (m + 1)];
    let mut rows = vec![0f32; if signals.ld() == n { 0 } else { chunk * n }];
    let mut start = 0;
    while start < l {
        let count = chunk.min(l - start);
        // Rows of a dense view go up as they are; others are packed first.
        let src: &[f32] = if signals.ld() == n {
            &as_f32(signals.data())?[start * n..(start + count) * n]
        } else {
            for i in 0..count {
                rows[i * n..(i + 1) * n].copy_from_slice(as_f32(signals.row(start + i))?);
            }
            &rows[..count * n]
        };
        be.upload_into(src, &sig)?;
        let p = be.uniform(&params(count));
        let mut enc = be.encoder("sparse_coder encode");
        enc.dispatch(
            &ENCODE,
            &[
                Arg::raw(&p),
                Arg::buf(&d),
                Arg::buf(&g),
                Arg::buf(&sig),
                Arg::buf(&sf),
                Arg::buf(&su),
                Arg::buf(&out_u),
                Arg::buf(&out_f),
            ],
            [slots.min(count) as u32, 1, 1],
        )?;
        enc.submit();
        let w = count * (m + 1);
        be.download_into(&out_u, &mut host_u[..w])?;
        be.download_into(&out_f, &mut host_f[..w])?;
        for s in 0..count {
            let o = s * (m + 1);
            let c = host_u[o] as usize;
            if c > m {
                return Err(crate::context::failure(
                    "sparse_coder",
                    format!(
                        "signal {}: the shader reported {c} atoms, at most {m} allowed",
                        start + s
                    ),
                ));
            }
            codes.atoms.extend_from_slice(&host_u[o + 1..o + 1 + c]);
            codes.coefs.extend(
                host_f[o + 1..o + 1 + c]
                    .iter()
                    .map(|&v| T::from_f64(v as f64)),
            );
            codes.residual_norm2.push(T::from_f64(host_f[o] as f64));
            codes.offsets.push(codes.atoms.len());
        }
        start += count;
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use trident_core::{Dictionary, Error, MatRef, SparseCoder, StopRule};
    use trident_reference::ReferenceBackend;
    use trident_testkit::cases::{Input, OmpCase, dct_dictionary, sparse_signals};
    use trident_testkit::check;

    use crate::WgpuBackend;

    fn backend() -> Option<WgpuBackend> {
        WgpuBackend::new()
            .map_err(|e| println!("SKIPPED: {e}"))
            .ok()
    }

    /// A 256 x 1024 dictionary: G (4 MiB) is far beyond workgroup memory, and
    /// up to 40 atoms per signal under both rules at once must agree with the
    /// reference.
    #[test]
    fn large_dictionary_matches_reference() {
        let Some(b) = backend() else { return };
        let dict = dct_dictionary::<f32>(16, 32);
        let input = Input::Omp32(OmpCase {
            signals: sparse_signals(&dict, 4, 32, 0.01, 7),
            dict,
            count: 4,
            rule: StopRule::SparsityOrError {
                sparsity: 40,
                error: 1e-3,
            },
        });
        let exp = check::expected(&ReferenceBackend, &input).unwrap();
        let got = check::produce(&b, &input).unwrap();
        let v = check::compare(&input, &exp, &got);
        assert!(v.passed(), "{}", v.summary());
    }

    /// f64 is not WGSL: Unsupported, after the input checks every backend runs.
    #[test]
    fn f64_is_unsupported_after_validation() {
        let Some(b) = backend() else { return };
        let d = Dictionary::new(2, 2, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap();
        let x = [1.0f64, 2.0];
        let ok = SparseCoder::<f64>::encode(
            &b,
            &d,
            MatRef::dense(&x, 1, 2).unwrap(),
            StopRule::Sparsity(1),
        );
        assert!(matches!(ok, Err(Error::Unsupported(_))));
        let bad = SparseCoder::<f64>::encode(
            &b,
            &d,
            MatRef::dense(&x, 2, 1).unwrap(),
            StopRule::Sparsity(1),
        );
        assert!(matches!(bad, Err(Error::DimensionMismatch { .. })));
    }
}
