//! SparseCoder for [`CudaBackend`]: Batch-OMP in `kernels/sparse_coder.cu`.
//!
//! Per call: the dictionary `D` and `D^T` are uploaded as stored (in `T`),
//! the Gram matrix `G = D^T D` (f64, `K x K`) is computed once on the device
//! by the same kernel that then computes `alpha0 = D^T x` for the signals,
//! chunk by chunk (at most [`A0_BUDGET`] bytes of `alpha0` at a time), and
//! each chunk is coded by `omp_batch_*`, one warp per signal, into fixed
//! slots of `max_atoms` per signal ([`DeviceCodes`]). The kernel file's
//! header says how a step runs and which stop rules apply; they are the rayon
//! backend's f64 loop's (the zero-correlation floor, a dependent pick only
//! at a pivot that is not positive, the refinement of ill-conditioned
//! coefficients, the power-of-two scaling of f64 signals at the ends of the
//! number range), so the two agree on every decision up to rounding. A
//! scaled signal's `alpha0` is recomputed by its warp from the scaled
//! signal, over its own row of the `alpha0` buffer.
//!
//! Per-warp scratch (the packed Cholesky factor, `z`, `gamma`, the chosen
//! atoms) goes to shared memory when [`WARPS`] of it fit in half the block
//! limit, so that at least two blocks share an SM; otherwise (long codes:
//! `Error` rules on large dictionaries) to a global buffer of at most
//! [`SCRATCH_BUDGET`] bytes, with a persistent grid sized to it.
//!
//! The host call ([`SparseCoder::encode`]) validates with core's
//! `validate::encode`, uploads the signals, runs the device path and packs
//! the slots with [`SparseCoderDevice::download_codes`].

use cudarc::driver::LaunchConfig;
use trident_core::{
    DeviceCodes, DeviceMat, Dictionary, Error, MatRef, Result, Scalar, SparseCoder,
    SparseCoderDevice, SparseCodes, StopRule, validate,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, count_u32, launch_kernel};

/// `kernels/sparse_coder.cu`.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "sparse_coder",
    source: include_str!("../kernels/sparse_coder.cu"),
    per_entry: true,
};

/// Entry points of `kernels/sparse_coder.cu` (the tidy test checks them).
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "omp_correlate_f32",
    "omp_correlate_f64",
    "omp_batch_f32",
    "omp_batch_f64",
];

/// Warps per block of `omp_batch_*` (`OMP_WARPS` in the kernel file).
const WARPS: usize = 4;
/// Output tile of `omp_correlate_*` (`TILE` in the kernel file), per side.
const TILE: usize = 64;
/// Bytes of `alpha0` (f64, `K` per signal) computed ahead of one OMP launch.
const A0_BUDGET: usize = 256 << 20;
/// Most bytes of per-warp scratch in global memory (long codes only).
const SCRATCH_BUDGET: usize = 1 << 30;

/// The dictionary on the device, with its Gram matrix.
struct Prepared<T: Scalar> {
    n: usize,
    k: usize,
    m: usize,
    eps: Option<f64>,
    dt: CudaBuffer<T>,
    d: CudaBuffer<T>,
    g: CudaBuffer<f64>,
}

fn to_i32(field: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::TooLarge {
        field,
        value: v as u128,
        limit: i32::MAX as u128,
    })
}

fn mul(field: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or(Error::TooLarge {
        field,
        value: a as u128 * b as u128,
        limit: usize::MAX as u128,
    })
}

/// Bytes of one warp's scratch: packed `L`, `z`, `gamma`, work (f64), the
/// chosen atoms (i32) and the chosen-atom bitmap, rounded up to 16.
fn scratch_bytes(m: usize, k: usize) -> Result<usize> {
    let tri = mul("max_atoms^2", m, m + 1)? / 2;
    let doubles = tri + 3 * m;
    let words = m + k.div_ceil(32);
    let bytes = mul("OMP scratch", doubles, 8)? + 4 * words;
    Ok(bytes.div_ceil(16) * 16)
}

impl CudaBackend {
    /// Uploads the dictionary and computes `G = D^T D` on the device.
    fn omp_prepare<T: Scalar>(&self, dict: &Dictionary<T>, rule: StopRule) -> Result<Prepared<T>> {
        // Both kernels of this element type compile at once, in parallel,
        // on a cold cache (see `CudaBackend::prepare`).
        let ty = T::NAME;
        let (corr, batch) = (format!("omp_correlate_{ty}"), format!("omp_batch_{ty}"));
        self.prepare(&KERNEL, &[&corr, &batch])?;
        let (n, k) = (dict.n(), dict.atoms());
        let (ni, ki) = (to_i32("n", n)?, to_i32("atoms", k)?);
        let data = dict.data();
        let mut t = vec![T::ZERO; data.len()];
        for i in 0..n {
            for j in 0..k {
                t[j * n + i] = data[i * k + j];
            }
        }
        let d = self.upload_named(data, "OMP dictionary")?;
        let dt = self.upload_named(&t, "OMP dictionary^T")?;
        let g = self.alloc::<f64>(mul("atoms^2 (Gram matrix)", k, k)?, "OMP Gram matrix")?;
        if k > 0 {
            self.launch_correlate::<T>(ki, ni, ki, dt.ptr(), n.max(1), d.ptr(), g.ptr())?;
        }
        Ok(Prepared {
            n,
            k,
            m: rule.max_atoms(n, k),
            eps: rule.error_target(),
            dt,
            d,
            g,
        })
    }

    /// `out (rows x K, packed) = X (rows x n, ld ldx) D`, in f64.
    #[allow(clippy::too_many_arguments)]
    fn launch_correlate<T: Scalar>(
        &self,
        rows: i32,
        n: i32,
        k: i32,
        x: u64,
        ldx: usize,
        d: u64,
        out: u64,
    ) -> Result<()> {
        if rows == 0 || k == 0 {
            return Ok(());
        }
        let name = format!("omp_correlate_{}", T::NAME);
        let f = self.function(&KERNEL, &name)?;
        let grid = (
            (k as usize).div_ceil(TILE) as u32,
            (rows as usize).div_ceil(TILE) as u32,
            1,
        );
        let (ldx, ldd, ldo) = (ldx as i64, k as i64, k as i64);
        let cfg = LaunchConfig {
            grid_dim: grid,
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        // Arguments match `omp_correlate_*` (int x3, ptr, i64, ptr, i64, ptr,
        // i64); X covers rows x n with ld ldx, D is n x K packed, out holds
        // rows x K f64 (the callers size them).
        launch_kernel!(
            @fn self, &f, "omp_correlate", cfg,
            &rows, &n, &k, &x, &ldx, &d, &ldd, &out, &ldo
        );
        Ok(())
    }

    /// Codes `l` signals at `x` (row-major, leading dimension `ld`, on the
    /// device) over a prepared dictionary.
    fn omp_run<T: Scalar>(
        &self,
        p: &Prepared<T>,
        x: u64,
        ld: usize,
        l: usize,
    ) -> Result<DeviceCodes<Self, T>> {
        let (n, k, m) = (p.n, p.k, p.m);
        let slots = mul("signals * max_atoms", l, m)?;
        let counts = self.alloc::<u32>(l, "OMP counts")?;
        let atoms = self.alloc::<u32>(slots, "OMP atoms")?;
        let coefs = self.alloc::<T>(slots, "OMP coefficients")?;
        let r2 = self.alloc::<T>(l, "OMP residual norms")?;
        let codes = DeviceCodes {
            signals: l,
            max_atoms: m,
            counts,
            atoms,
            coefs,
            residual_norm2: r2,
        };
        if l == 0 {
            return Ok(codes);
        }
        let (ni, ki, mi) = (
            to_i32("n", n)?,
            to_i32("atoms", k)?,
            to_i32("max_atoms", m)?,
        );
        let sbytes = scratch_bytes(m, k)?;
        let block_bytes = mul("OMP shared scratch", WARPS, sbytes)?;
        let use_global = block_bytes > self.max_shared_per_block() as usize / 2;
        let chunk = (A0_BUDGET / (k.max(1) * 8)).clamp(1, 65_535 * TILE).min(l);
        let a0 = self.alloc::<f64>(mul("OMP alpha0", chunk, k)?, "OMP alpha0")?;
        let name = format!("omp_batch_{}", T::NAME);
        let f = self.function(&KERNEL, &name)?;
        let (blocks_cap, scratch) = if use_global {
            let fit = (SCRATCH_BUDGET / block_bytes).max(1);
            let cap = fit.min(self.sm_count() as usize * 8);
            (cap, self.alloc::<u8>(cap * block_bytes, "OMP scratch")?)
        } else {
            if block_bytes > 48 << 10 {
                self.set_dynamic_smem(&f, block_bytes as u32)?;
            }
            (usize::MAX, self.alloc::<u8>(0, "OMP scratch (unused)")?)
        };
        let size = std::mem::size_of::<T>() as u64;
        let (has_eps, eps) = match p.eps {
            Some(e) => (1i32, e),
            None => (0i32, 0.0f64),
        };
        let (use_g, sb) = (i32::from(use_global), sbytes as i64);
        let (ldx, lda) = (ld as i64, k as i64);
        let (dt, g, a0p, gs) = (p.dt.ptr(), p.g.ptr(), a0.ptr(), scratch.ptr());
        let mut c0 = 0usize;
        while c0 < l {
            let len = chunk.min(l - c0);
            let rows = to_i32("signals per chunk", len)?;
            let xc = x + (c0 * ld) as u64 * size;
            self.launch_correlate::<T>(rows, ni, ki, xc, ld.max(1), p.d.ptr(), a0p)?;
            let blocks = len.div_ceil(WARPS).min(blocks_cap);
            let cfg = LaunchConfig {
                grid_dim: (count_u32("OMP blocks", blocks)?, 1, 1),
                block_dim: ((WARPS * 32) as u32, 1, 1),
                shared_mem_bytes: if use_global { 0 } else { block_bytes as u32 },
            };
            let cnt = codes.counts.ptr() + 4 * c0 as u64;
            let at = codes.atoms.ptr() + 4 * (c0 * m) as u64;
            let co = codes.coefs.ptr() + size * (c0 * m) as u64;
            let ro = codes.residual_norm2.ptr() + size * c0 as u64;
            // Arguments match `omp_batch_*`; the signal pointer covers `len`
            // rows of `n` with leading dimension `ld`, alpha0 holds `len x K`,
            // the outputs hold `len` slots past their offsets, and global
            // scratch holds `blocks * WARPS` warps. The shared memory opt-in
            // was made once, above.
            launch_kernel!(
                @fn self, &f, "omp_batch", cfg,
                &rows, &ni, &ki, &mi, &xc, &ldx, &dt, &g, &a0p, &lda, &eps, &has_eps,
                &cnt, &at, &co, &ro, &use_g, &gs, &sb
            );
            c0 += len;
        }
        Ok(codes)
    }
}

impl<T: Scalar> SparseCoder<T> for CudaBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        validate::encode(dict, &signals, &rule)?;
        let l = signals.rows();
        if l == 0 {
            return Ok(SparseCodes {
                offsets: vec![0],
                atoms: Vec::new(),
                coefs: Vec::new(),
                residual_norm2: Vec::new(),
            });
        }
        let ld = signals.ld().max(1);
        let need = (l - 1) * signals.ld() + signals.cols();
        let x = self.upload_named(&signals.data()[..need], "OMP signals")?;
        let p = self.omp_prepare(dict, rule)?;
        let codes = self.omp_run(&p, x.ptr(), ld, l)?;
        self.download_codes(&codes)
    }
}

impl<T: Scalar> SparseCoderDevice<T> for CudaBackend {
    fn encode_device(
        &self,
        dict: &Dictionary<T>,
        signals: &DeviceMat<CudaBuffer<T>>,
        rule: StopRule,
    ) -> Result<DeviceCodes<Self, T>> {
        validate::encode_shape(dict, signals.cols, &rule)?;
        validate::device_mat(self, "signals", signals)?;
        let p = self.omp_prepare(dict, rule)?;
        self.omp_run(&p, signals.buf.ptr(), signals.ld.max(1), signals.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_text::define;

    /// The block and tile shapes this file repeats from
    /// `kernels/sparse_coder.cu` (its numbers shared with core are checked
    /// by the tidy test).
    #[test]
    fn constants_match_the_kernel() {
        assert_eq!(define(KERNEL.source, "OMP_WARPS"), WARPS as f64);
        assert_eq!(define(KERNEL.source, "TILE"), TILE as f64);
    }
}
