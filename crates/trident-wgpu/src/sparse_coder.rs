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
//! Precision: f32 on the device (WGSL has no f64), so an f64 call answers
//! [`Error::Unsupported`] and the facade moves on. Where f32 changes the
//! rules, and why:
//! - `||r||^2` is tracked as `||x||^2 - ||z||^2`; below `1e-3 ||x||^2` the
//!   decisions use the explicit residual `x - D_I gamma` instead, and the
//!   reported `||r||^2` is always the explicit residual of the returned code.
//! - A residual below `1e-9 ||x||^2` is zero at f32 resolution and ends the
//!   signal's coding, where the f64 reference would continue on rounding
//!   noise (docs/semantics.md accepts both).
//! - What f32 cannot settle is coded on the host in f64 by
//!   [`trident_core::omp::plain_omp`] (the reference's algorithm; rounded to
//!   f32 once): a best correlation at f32 rounding level (`c^2 <= 1e-13
//!   ||x||^2`: zero, or genuine but below f32's resolution, as after the
//!   first of two atoms 1e-7 rad apart), a pick whose pivot falls below
//!   [`trident_core::tol::OMP_F32_REDO_PIVOT`] times `G_jj` (a nearly
//!   dependent atom: the contract has no stop for it, and f32 has lost the
//!   digits; an exact duplicate of a chosen atom lands here too when its
//!   rounding-level correlation passes the bound before), a signal whose
//!   largest entry is below `2^-100` (devices may flush f32 subnormals), and
//!   a code whose coefficients or `||r||^2` leave f32's normal range when
//!   scaled back (next item). The shader marks such a signal (count
//!   `u32::MAX`) and raises a flag; the call then reads the flag (4 bytes,
//!   one wait, also on the device path), and only if it is raised the counts,
//!   the marked signals' rows, and writes their codes into the slots.
//! - The ends of the number range: a signal whose largest `|x_i|` lies
//!   outside `[2^-32, 2^32)` is coded as `x 2^s`, the power of two that
//!   brings it into `[1, 2)` ([`trident_core::omp::SignalScale`] with
//!   [`trident_core::omp::OMP_WINDOW_F32`]); the error target is scaled
//!   alike (passed as mantissa and exponent, since `eps` itself may lie
//!   beyond f32), and the coefficients and `||r||^2` are scaled back exactly.
//!
//! Determinism: every sum has a fixed order (fma chains per invocation, a
//! fixed tree across them), so the output is bit-identical between runs.

use trident_core::omp::{OmpDict, ilogb, plain_omp, scalbn};
use trident_core::{
    DeviceCodes, DeviceMat, Dictionary, Error, MatRef, Result, Scalar, SparseCoder,
    SparseCoderDevice, SparseCodes, StopRule, validate,
};

use crate::buffer::WgpuBuffer;
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

/// A uniform, three read-only buffers, four outputs: the binding layout of
/// the encode and unpack kernels (each one's doc says what is bound).
const PARAMS_3_IN_4_OUT: &[Bind] = &[
    Bind::Uniform,
    Bind::Read,
    Bind::Read,
    Bind::Read,
    Bind::ReadWrite,
    Bind::ReadWrite,
    Bind::ReadWrite,
    Bind::ReadWrite,
];

/// [`PARAMS_3_IN_4_OUT`] and the flag the encode kernels raise for signals
/// the host recodes in f64.
const PARAMS_3_IN_5_OUT: &[Bind] = &[
    Bind::Uniform,
    Bind::Read,
    Bind::Read,
    Bind::Read,
    Bind::ReadWrite,
    Bind::ReadWrite,
    Bind::ReadWrite,
    Bind::ReadWrite,
    Bind::ReadWrite,
];

/// Params, D, G, signals, the two scratch buffers, the two slot buffers,
/// the recode flag.
static ENCODE: Kernel = Kernel {
    shader: &SHADER,
    entry: "encode_main",
    bindings: PARAMS_3_IN_5_OUT,
};

/// Params, D, G, signals, then the four outputs (counts, atoms, coefficients,
/// residuals) and the recode flag.
static ENCODE_WG: Kernel = Kernel {
    shader: &SHADER,
    entry: "encode_wg",
    bindings: PARAMS_3_IN_5_OUT,
};

/// Params, `encode_main`'s two slot buffers, an unused binding, then the four
/// outputs.
static UNPACK: Kernel = Kernel {
    shader: &SHADER,
    entry: "unpack_main",
    bindings: PARAMS_3_IN_4_OUT,
};

/// The kernels of this primitive (for [`WgpuBackend::warm_up`]).
pub(crate) static KERNELS: &[&Kernel] = &[&GRAM, &ENCODE, &ENCODE_WG, &UNPACK];

/// Most workgroups (and scratch slots) per dispatch: enough to fill a large
/// GPU several times over (an H100 holds about 4,000 such workgroups at once).
const MAX_SLOTS: usize = 16_384;
/// Most signals per chunk of the global-scratch path, so that its slot
/// buffers stay far below every adapter's binding limit.
const MAX_CHUNK: usize = 1 << 18;
/// Most bytes of scratch memory per call.
const MAX_SCRATCH: u64 = 256 << 20;
/// The workgroup-memory kernel's capacity (`WK`, `WM` in the shader).
const WG_ATOMS: usize = 1024;
const WG_CODE: usize = 32;
/// Side of the square workgroup of `gram_main`.
const GRAM_SIDE: usize = 8;
/// Invocations per workgroup of `unpack_main` (`WG` in the shader).
const UNPACK_WG: usize = 64;
/// Chunks start at multiples of this many signals, so that every binding
/// offset (signals, counts, slots) is a multiple of 256 bytes.
const ALIGN: usize = 64;
/// Most bytes of signals per upload of the host path.
const HOST_CHUNK_BYTES: usize = 1 << 30;
/// The count the shader writes for a signal the host codes in f64
/// (`REDO_COUNT` in the shader).
const REDO_COUNT: u32 = u32::MAX;

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
    ld: u32,
    eps_m: f32,
    eps_e: i32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
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
        self.scoped("sparse_coder", || encode_host(self, dict, &signals, rule))
    }
}

impl<T: Scalar> SparseCoderDevice<T> for WgpuBackend {
    fn encode_device(
        &self,
        dict: &Dictionary<T>,
        signals: &DeviceMat<WgpuBuffer<T>>,
        rule: StopRule,
    ) -> Result<DeviceCodes<Self, T>> {
        validate::encode_shape(dict, signals.cols, &rule)?;
        validate::device_mat(self, "signals", signals)?;
        require_f32::<T>("SparseCoder")?;
        self.scoped("sparse_coder", || {
            let p = prepare(self, dict, rule)?;
            let x = signals.buf.cast_ref::<f32>()?;
            let ld = signals.ld.max(1);
            let (c, redo) = run(self, &p, &x, ld, signals.rows)?;
            if redo {
                recode(self, dict, rule, &c, |rows| {
                    let starts: Vec<usize> = rows.iter().map(|&s| s * ld).collect();
                    let v = self.download_ranges(&x, &starts, p.n)?;
                    Ok(v.into_iter().map(f64::from).collect())
                })?;
            }
            Ok(DeviceCodes {
                signals: c.signals,
                max_atoms: c.max_atoms,
                counts: c.counts,
                atoms: c.atoms,
                coefs: c.coefs.cast()?,
                residual_norm2: c.residual_norm2.cast()?,
            })
        })
    }
}

/// The host call: signals go up in chunks of at most [`HOST_CHUNK_BYTES`]
/// (dense rows as they are, others packed), each chunk runs the device path
/// and its codes come back packed ([`SparseCoderDevice::download_codes`]).
fn encode_host<T: Scalar>(
    be: &WgpuBackend,
    dict: &Dictionary<T>,
    signals: &MatRef<'_, T>,
    rule: StopRule,
) -> Result<SparseCodes<T>> {
    let (n, l) = (dict.n(), signals.rows());
    let mut codes = SparseCodes {
        offsets: vec![0],
        atoms: Vec::new(),
        coefs: Vec::new(),
        residual_norm2: Vec::with_capacity(l),
    };
    if l == 0 {
        return Ok(codes);
    }
    let p = prepare(be, dict, rule)?;
    let chunk = (HOST_CHUNK_BYTES / (4 * n).max(1)).max(1).min(l);
    let mut start = 0;
    while start < l {
        let count = chunk.min(l - start);
        let x = if signals.ld() == n {
            let data = as_f32(signals.data())?;
            be.upload_named(
                &data[start * n..(start + count) * n],
                "sparse_coder signals",
            )?
        } else {
            be.upload_filled(count * n, "sparse_coder signals", |first, out| {
                for (e, o) in (first..).zip(out.iter_mut()) {
                    *o = signals.row(start + e / n)[e % n].to_f64() as f32;
                }
                Ok(())
            })?
        };
        let (c, redo) = run(be, &p, &x, n.max(1), count)?;
        if redo {
            recode(be, dict, rule, &c, |rows| {
                Ok(rows
                    .iter()
                    .flat_map(|&s| signals.row(start + s).iter().map(|v| v.to_f64()))
                    .collect())
            })?;
        }
        let part = be.download_codes(&c)?;
        if count == l {
            // One chunk (the usual case: chunks hold 1 GiB of signals): its
            // codes are the answer, converted in place (T is f32 here).
            let wide = |v: Vec<f32>| v.into_iter().map(|x| T::from_f64(x as f64)).collect();
            return Ok(SparseCodes {
                offsets: part.offsets,
                atoms: part.atoms,
                coefs: wide(part.coefs),
                residual_norm2: wide(part.residual_norm2),
            });
        }
        let base = codes.atoms.len();
        codes
            .offsets
            .extend(part.offsets[1..].iter().map(|&o| o + base));
        codes.atoms.extend_from_slice(&part.atoms);
        codes
            .coefs
            .extend(part.coefs.iter().map(|&v| T::from_f64(v as f64)));
        codes
            .residual_norm2
            .extend(part.residual_norm2.iter().map(|&v| T::from_f64(v as f64)));
        start += count;
    }
    Ok(codes)
}

/// The dictionary and its Gram matrix on the device, with the call's sizes.
struct Prepared {
    n: usize,
    k: usize,
    m: usize,
    eps: Option<f64>,
    d: WgpuBuffer<f32>,
    g: WgpuBuffer<f32>,
}

fn prepare<T: Scalar>(be: &WgpuBackend, dict: &Dictionary<T>, rule: StopRule) -> Result<Prepared> {
    let (n, k) = (dict.n(), dict.atoms());
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
    let d = be.upload_named(as_f32(dict.data())?, "sparse_coder dictionary")?;
    let g = be.alloc::<f32>(k * k, "sparse_coder Gram matrix")?;
    let p = Prepared {
        n,
        k,
        m,
        eps: rule.error_target(),
        d,
        g,
    };
    let gp = be.uniform(&p.params(0, 0, 0));
    let mut enc = be.encoder("sparse_coder gram");
    let side = k.div_ceil(GRAM_SIDE) as u32;
    enc.dispatch(
        &GRAM,
        &[Arg::raw(&gp), Arg::buf(&p.d), Arg::buf(&p.g)],
        [side, side, 1],
    )?;
    enc.submit();
    Ok(p)
}

impl Prepared {
    fn params(&self, count: usize, slots: usize, ld: usize) -> Params {
        let (stride_f, stride_u) = self.strides();
        // The error target as eps_m 2^eps_e with eps_m in [1, 2), for the
        // signals the shader scales (eps itself may lie beyond f32).
        let (eps_m, eps_e) = match self.eps {
            Some(e) if e > 0.0 => {
                let x = ilogb(e);
                let m = scalbn(e, -x) as f32;
                if m >= 2.0 { (1.0, x + 1) } else { (m, x) }
            }
            _ => (0.0, 0),
        };
        Params {
            n: self.n as u32,
            k: self.k as u32,
            count: count as u32,
            max_atoms: self.m as u32,
            slots: slots as u32,
            has_eps: self.eps.is_some() as u32,
            eps: self.eps.unwrap_or(0.0) as f32,
            stride_f: stride_f as u32,
            stride_u: stride_u as u32,
            gram_row0: 0,
            ld: ld as u32,
            eps_m,
            eps_e,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }
    /// Per-slot scratch of `encode_main` (f32 and u32 elements).
    fn strides(&self) -> (usize, usize) {
        let m = self.m;
        (self.k + m * (m + 1) / 2 + 2 * m, self.k + m)
    }
    /// Whether `encode_wg` holds this call's scratch in workgroup memory.
    fn fits_workgroup(&self) -> bool {
        self.k <= WG_ATOMS && self.m <= WG_CODE
    }
}

/// Codes the `l` signals of `x` (rows `ld` apart) into new device slots;
/// `true` when the shader marked signals for [`recode`].
fn run(
    be: &WgpuBackend,
    p: &Prepared,
    x: &WgpuBuffer<f32>,
    ld: usize,
    l: usize,
) -> Result<(DeviceCodes<WgpuBackend, f32>, bool)> {
    let (n, m) = (p.n, p.m);
    let slots_total = l as u128 * m as u128;
    if slots_total > u32::MAX as u128 || l > u32::MAX as usize {
        return Err(too_large(
            "signals times max_atoms (u32 indices in WGSL)",
            slots_total.max(l as u128),
        ));
    }
    let codes = DeviceCodes {
        signals: l,
        max_atoms: m,
        counts: be.alloc::<u32>(l, "sparse_coder counts")?,
        atoms: be.alloc::<u32>(l * m, "sparse_coder atoms")?,
        coefs: be.alloc::<f32>(l * m, "sparse_coder coefficients")?,
        residual_norm2: be.alloc::<f32>(l, "sparse_coder residuals")?,
    };
    if l == 0 {
        return Ok((codes, false));
    }
    let redo = be.alloc::<u32>(1, "sparse_coder recode flag")?;
    // Chunks bounded by the binding limit (signals and slots), starting at
    // multiples of ALIGN signals.
    let lim = be.limits().max_storage_buffer_binding_size as usize;
    let fast = p.fits_workgroup();
    let per_signal = 4 * ld.max(m + 1).max(1);
    let mut chunk = (lim / per_signal).min(u32::MAX as usize / ld.max(m + 1));
    if !fast {
        chunk = chunk.min(MAX_CHUNK);
    }
    let chunk = if chunk >= l {
        l
    } else {
        (chunk / ALIGN * ALIGN).max(ALIGN)
    };
    let (stride_f, stride_u) = p.strides();
    let slot_bytes = 4 * stride_f.max(stride_u).max(1) as u64;
    let slots_by_mem = (MAX_SCRATCH.min(lim as u64) / slot_bytes).max(1) as usize;
    let slots = chunk
        .min(MAX_SLOTS)
        .min(if fast { usize::MAX } else { slots_by_mem });
    // The global-scratch path's buffers, only where it runs.
    let scratch = if fast {
        None
    } else {
        let span = (slots * stride_f.max(stride_u)) as u128 + (chunk * (m + 1)) as u128;
        if span > u32::MAX as u128 {
            return Err(too_large(
                "scratch or slot elements per chunk (u32 indices in WGSL)",
                span,
            ));
        }
        Some((
            be.alloc::<f32>(slots * stride_f, "sparse_coder scratch")?,
            be.alloc::<u32>(slots * stride_u, "sparse_coder scratch (atoms)")?,
            be.alloc::<u32>(chunk * (m + 1), "sparse_coder slots")?,
            be.alloc::<f32>(chunk * (m + 1), "sparse_coder slot values")?,
        ))
    };
    let mut start = 0;
    while start < l {
        let count = chunk.min(l - start);
        let rows = (count - 1) * ld + n;
        let sig = Arg::range(x, start * ld, rows);
        let outs = [
            Arg::range(&codes.counts, start, count),
            Arg::range(&codes.atoms, start * m, count * m),
            Arg::range(&codes.coefs, start * m, count * m),
            Arg::range(&codes.residual_norm2, start, count),
        ];
        let wgs = slots.min(count);
        let pu = be.uniform(&p.params(count, wgs, ld));
        let mut enc = be.encoder("sparse_coder encode");
        match &scratch {
            None => enc.dispatch(
                &ENCODE_WG,
                &[
                    Arg::raw(&pu),
                    Arg::buf(&p.d),
                    Arg::buf(&p.g),
                    sig,
                    outs[0],
                    outs[1],
                    outs[2],
                    outs[3],
                    Arg::buf(&redo),
                ],
                [wgs as u32, 1, 1],
            )?,
            Some((sf, su, out_u, out_f)) => {
                enc.dispatch(
                    &ENCODE,
                    &[
                        Arg::raw(&pu),
                        Arg::buf(&p.d),
                        Arg::buf(&p.g),
                        sig,
                        Arg::buf(sf),
                        Arg::buf(su),
                        Arg::buf(out_u),
                        Arg::buf(out_f),
                        Arg::buf(&redo),
                    ],
                    [wgs as u32, 1, 1],
                )?;
                enc.dispatch(
                    &UNPACK,
                    &[
                        Arg::raw(&pu),
                        Arg::buf(out_u),
                        Arg::buf(out_f),
                        Arg::buf(out_u),
                        outs[0],
                        outs[1],
                        outs[2],
                        outs[3],
                    ],
                    [count.div_ceil(UNPACK_WG) as u32, 1, 1],
                )?;
            }
        }
        enc.submit();
        start += count;
    }
    let redo = be.download_vec(&redo)?[0] != 0;
    Ok((codes, redo))
}

/// Codes the signals the shader marked (count [`REDO_COUNT`]) on the host,
/// in f64 by [`plain_omp`], and writes their codes into the slots of
/// `codes`; `rows(list)` gives those signals' entries (widened to f64),
/// row after row.
fn recode<T: Scalar>(
    be: &WgpuBackend,
    dict: &Dictionary<T>,
    rule: StopRule,
    codes: &DeviceCodes<WgpuBackend, f32>,
    rows: impl FnOnce(&[usize]) -> Result<Vec<f64>>,
) -> Result<()> {
    let counts = be.download_vec(&codes.counts)?;
    let marked: Vec<usize> = (0..counts.len())
        .filter(|&s| counts[s] == REDO_COUNT)
        .collect();
    if marked.is_empty() {
        return Ok(());
    }
    let (d, m) = (OmpDict::new(dict), codes.max_atoms);
    let x = rows(&marked)?;
    let n = d.n();
    let coded = code_on_host(&d, &x, n, rule)?;
    for (&s, (atoms, coefs, r2)) in marked.iter().zip(coded) {
        if atoms.len() > m {
            return Err(Error::Backend(
                format!(
                    "host recode of signal {s}: {} atoms for slots of {m}",
                    atoms.len()
                )
                .into(),
            ));
        }
        be.upload_at(&[atoms.len() as u32], &codes.counts, s)?;
        be.upload_at(&atoms, &codes.atoms, s * m)?;
        be.upload_at(&coefs, &codes.coefs, s * m)?;
        be.upload_at(&[r2], &codes.residual_norm2, s)?;
    }
    Ok(())
}

/// One signal's code from the host: atoms, coefficients, `||r||^2`.
type HostCode = (Vec<u32>, Vec<f32>, f32);

/// [`plain_omp`] on each signal of `x` (rows of `n`), rounded to f32, on
/// the host's threads (each signal independently: the same answer for any
/// thread count).
fn code_on_host(d: &OmpDict, x: &[f64], n: usize, rule: StopRule) -> Result<Vec<HostCode>> {
    let one = |row: &[f64]| {
        let p = plain_omp(d, row, rule);
        let (coefs, r2) = p.rounded_code::<f32>(d, row);
        (p.atoms(), coefs, r2)
    };
    let rows: Vec<&[f64]> = x.chunks_exact(n.max(1)).collect();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        let parts: Vec<_> = rows
            .chunks(per)
            .map(|part| sc.spawn(move || part.iter().map(|r| one(r)).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for h in parts {
            let part = h
                .join()
                .map_err(|_| Error::Backend("the host's f64 recode of a signal panicked".into()))?;
            out.extend(part);
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use trident_core::{
        DeviceMat, DeviceMemory, Dictionary, Error, MatRef, SparseCoder, SparseCoderDevice,
        StopRule,
    };
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

    /// The device-resident path on signals with padded rows (`ld > n`) gives
    /// the host call's codes bit for bit, under both kernels: 16 atoms a
    /// signal (workgroup memory) and 40 (global scratch).
    #[test]
    fn device_codes_with_padded_rows_equal_the_host_call() {
        let Some(b) = backend() else { return };
        let dict = dct_dictionary::<f32>(8, 16);
        let (n, count, ld) = (dict.n(), 9, dict.n() + 5);
        let signals = sparse_signals(&dict, count, 6, 0.01, 11);
        let mut padded = vec![0.0f32; (count - 1) * ld + n];
        for (r, row) in signals.chunks_exact(n).enumerate() {
            padded[r * ld..r * ld + n].copy_from_slice(row);
        }
        for rule in [
            StopRule::Sparsity(16),
            StopRule::SparsityOrError {
                sparsity: 40,
                error: 1e-4,
            },
        ] {
            let x = DeviceMat {
                buf: b.upload(&padded).unwrap(),
                rows: count,
                cols: n,
                ld,
            };
            let dev = b.download_codes(&b.encode_device(&dict, &x, rule).unwrap());
            let host = b.encode(&dict, MatRef::dense(&signals, count, n).unwrap(), rule);
            assert_eq!(dev.unwrap(), host.unwrap(), "{rule:?}");
        }
    }

    /// Signals the shader scales (1e20, 1e-25) or hands to the host's f64
    /// OMP (nearly dependent atoms, a subnormal signal, a residual beyond
    /// f32) among ordinary ones: the device path writes the host's codes
    /// into its slots and gives the host call's codes bit for bit; both
    /// pass the checker against the reference. Over 2 atoms (the
    /// workgroup-memory kernel) and over 40 with codes of up to 40 atoms
    /// (the global-scratch kernel, `encode_main`).
    #[test]
    fn recoded_and_scaled_signals_on_the_device_path() {
        let Some(b) = backend() else { return };
        let rows: [[f32; 2]; 6] = [
            [1.0, 1.0],
            [0.5, -2.0],
            [1e20, 3e19],
            [1e-25, -3e-26],
            [1e-40, 3e-41],
            [3e38, 0.0],
        ];
        for n in [2usize, 40] {
            // The identity but for atom 1, normalize(e0 + 1e-7 e1).
            let mut d = vec![0.0f32; n * n];
            (0..n).for_each(|i| d[i * n + i] = 1.0);
            d[1] = 1.0;
            d[n + 1] = 1e-7;
            let dict = Dictionary::new(n, n, d).unwrap();
            // Each row's two entries lead a signal; the rest of it small.
            let signals: Vec<f32> = rows
                .iter()
                .flat_map(|r| {
                    (0..n).map(move |i| if i < 2 { r[i] } else { r[0] * 0.01 * i as f32 })
                })
                .collect();
            let (count, ld) = (rows.len(), n + 3);
            let mut padded = vec![0.0f32; (count - 1) * ld + n];
            for (r, row) in signals.chunks_exact(n).enumerate() {
                padded[r * ld..r * ld + n].copy_from_slice(row);
            }
            let x = MatRef::dense(&signals, count, n).unwrap();
            for rule in [
                StopRule::Sparsity(2),
                StopRule::Sparsity(1),
                StopRule::SparsityOrError {
                    sparsity: 40,
                    error: 1e-30,
                },
            ] {
                let dev = DeviceMat {
                    buf: b.upload(&padded).unwrap(),
                    rows: count,
                    cols: n,
                    ld,
                };
                let dev = b.download_codes(&b.encode_device(&dict, &dev, rule).unwrap());
                let host = b.encode(&dict, x, rule).unwrap();
                assert_eq!(dev.unwrap(), host, "n = {n}, {rule:?}");
                let input = Input::Omp32(OmpCase {
                    dict: dict.clone(),
                    signals: signals.clone(),
                    count,
                    rule,
                });
                let exp = check::expected(&ReferenceBackend, &input).unwrap();
                let got = check::produce(&b, &input).unwrap();
                let v = check::compare(&input, &exp, &got);
                assert!(v.passed(), "n = {n}, {rule:?}: {}", v.summary());
            }
        }
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

#[cfg(test)]
mod shader_constants {
    use super::*;
    use crate::shader_text::{constant, struct_size, workgroup_size};

    /// The capacities, workgroup shapes, marker and uniform-block layout
    /// this file repeats from `shaders/sparse_coder.wgsl`.
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../shaders/sparse_coder.wgsl");
        assert_eq!(constant(src, "WK"), WG_ATOMS as f64);
        assert_eq!(constant(src, "WM"), WG_CODE as f64);
        assert_eq!(constant(src, "REDO_COUNT"), REDO_COUNT as f64);
        assert_eq!(constant(src, "WG"), UNPACK_WG as f64);
        assert_eq!(workgroup_size(src, "unpack_main"), [UNPACK_WG as u32, 1, 1]);
        let side = GRAM_SIDE as u32;
        assert_eq!(workgroup_size(src, "gram_main"), [side, side, 1]);
        assert_eq!(struct_size(src, "Params"), std::mem::size_of::<Params>());
    }
}
