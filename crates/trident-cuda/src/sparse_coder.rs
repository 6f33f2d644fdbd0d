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

use std::mem::MaybeUninit;

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

/// How host calls cut their signals for overlap: 16 chunks, at least
/// 16,384 signals each (a few thousand warps per chunk).
const OVERLAP: crate::pipeline::Overlap = crate::pipeline::Overlap {
    chunks: 16,
    min_items: 16_384,
};

/// Most threads one chunk's packing uses, and the fewest entries worth a
/// thread of their own.
const PACK_THREADS: usize = 8;
const PACK_MIN_PER_THREAD: usize = 1 << 16;

fn oom(bytes: usize) -> Error {
    Error::OutOfMemory {
        bytes: bytes as u64,
        detail: "OMP codes on the host".into(),
    }
}

/// Signals per `alpha0` pass for `K` atoms (at most [`A0_BUDGET`] bytes).
fn a0_rows(k: usize) -> usize {
    (A0_BUDGET / (k.max(1) * 8)).clamp(1, 65_535 * TILE)
}

/// Blocks of the persistent grid when scratch is global.
fn global_blocks(block_bytes: usize, sm_count: u32) -> usize {
    (SCRATCH_BUDGET / block_bytes.max(1))
        .max(1)
        .min(sm_count as usize * 8)
}

/// The `omp_batch_*` kernel of one element type with its work buffers.
struct Work {
    f: cudarc::driver::CudaFunction,
    a0: CudaBuffer<f64>,
    /// Signals per `alpha0` pass.
    chunk: usize,
    sbytes: usize,
    block_bytes: usize,
    use_global: bool,
    blocks_cap: usize,
    scratch: CudaBuffer<u8>,
}

/// Device addresses of the four output arrays of a run.
#[derive(Clone, Copy)]
struct Slots {
    counts: u64,
    atoms: u64,
    coefs: u64,
    r2: u64,
}

impl Slots {
    fn of<T: Scalar>(c: &DeviceCodes<CudaBackend, T>) -> Self {
        Self {
            counts: c.counts.ptr(),
            atoms: c.atoms.ptr(),
            coefs: c.coefs.ptr(),
            r2: c.residual_norm2.ptr(),
        }
    }
}

/// Host copies of one chunk's slots, reused chunk after chunk (their pages
/// are touched once).
struct HostSlots<T> {
    m: usize,
    counts: Vec<u32>,
    atoms: Vec<u32>,
    coefs: Vec<T>,
}

impl<T: Scalar> HostSlots<T> {
    fn new(rows: usize, m: usize) -> Self {
        Self {
            m,
            counts: vec![0; rows],
            atoms: vec![0; rows * m],
            coefs: vec![T::ZERO; rows * m],
        }
    }

    /// Appends the first `len` signals' codes to `out`, on several threads
    /// when the chunk is large: each writes the codes of its own signals at
    /// their packed offsets, so the first touch of the output's fresh pages
    /// (on one thread, 3-4 ms of each 62,500-signal chunk on the H200
    /// machine, more than the chunk's kernels) is shared as well.
    fn pack(&self, len: usize, out: &mut SparseCodes<T>) -> Result<()> {
        let m = self.m;
        let done = out.offsets.len() - 1;
        let base = out.atoms.len();
        let counts = &self.counts[..len];
        let mut ends = Vec::with_capacity(len);
        let mut nnz = 0usize;
        for (i, &c) in counts.iter().enumerate() {
            if c as usize > m {
                return Err(Error::Backend(
                    format!("signal {} reports {c} atoms, its slot holds {m}", done + i).into(),
                ));
            }
            nnz += c as usize;
            ends.push(base + nnz);
        }
        out.atoms.try_reserve(nnz).map_err(|_| oom(nnz * 4))?;
        out.coefs
            .try_reserve(nnz)
            .map_err(|_| oom(nnz * std::mem::size_of::<T>()))?;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(PACK_THREADS)
            .min(nnz / PACK_MIN_PER_THREAD)
            .max(1);
        let per = len.div_ceil(threads).max(1);
        let atoms = &mut out.atoms.spare_capacity_mut()[..nnz];
        let coefs = &mut out.coefs.spare_capacity_mut()[..nnz];
        // Signal ranges and the disjoint output ranges they fill.
        let mut jobs = Vec::with_capacity(threads);
        let (mut a_rest, mut c_rest) = (atoms, coefs);
        let mut lo = 0;
        while lo < len {
            let hi = (lo + per).min(len);
            let take = ends[hi - 1] - if lo == 0 { base } else { ends[lo - 1] };
            let (a, ar) = std::mem::take(&mut a_rest).split_at_mut(take);
            let (c, cr) = std::mem::take(&mut c_rest).split_at_mut(take);
            (a_rest, c_rest) = (ar, cr);
            jobs.push((lo..hi, a, c));
            lo = hi;
        }
        let copy = |(r, a, c): (
            std::ops::Range<usize>,
            &mut [MaybeUninit<u32>],
            &mut [MaybeUninit<T>],
        )| {
            let mut o = 0;
            for i in r {
                let k = counts[i] as usize;
                for j in 0..k {
                    a[o + j].write(self.atoms[i * m + j]);
                    c[o + j].write(self.coefs[i * m + j]);
                }
                o += k;
            }
        };
        if jobs.len() == 1 {
            jobs.into_iter().for_each(copy);
        } else {
            std::thread::scope(|s| {
                for job in jobs {
                    s.spawn(move || copy(job));
                }
            });
        }
        // SAFETY: the jobs wrote every one of the `nnz` new entries (their
        // ranges tile them: each holds its signals' counts, in order).
        unsafe {
            out.atoms.set_len(base + nnz);
            out.coefs.set_len(base + nnz);
        }
        out.offsets.extend_from_slice(&ends);
        Ok(())
    }
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
        let codes = self.alloc_codes(p, l)?;
        if l == 0 {
            return Ok(codes);
        }
        let wk = self.omp_work(p, l)?;
        self.omp_queue(p, &wk, x, ld, l, Slots::of(&codes))?;
        Ok(codes)
    }

    /// Bytes of global OMP scratch a run takes (0 when it fits shared memory).
    fn omp_scratch_bytes<T: Scalar>(&self, p: &Prepared<T>) -> Result<u64> {
        let block_bytes = mul("OMP shared scratch", WARPS, scratch_bytes(p.m, p.k)?)?;
        if block_bytes > self.max_shared_per_block() as usize / 2 {
            Ok((global_blocks(block_bytes, self.sm_count()) * block_bytes) as u64)
        } else {
            Ok(0)
        }
    }

    /// Downloads the first `len` signals of `codes` on `stream`: counts,
    /// atoms and coefficients into `host`, residual norms straight into
    /// `r2`; waits for them.
    fn download_slots<T: Scalar>(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        codes: &DeviceCodes<Self, T>,
        len: usize,
        host: &mut HostSlots<T>,
        r2: &mut [std::mem::MaybeUninit<T>],
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let m = host.m;
        let parts = [
            (
                codes.counts.ptr(),
                host.counts.as_mut_ptr().cast::<u8>(),
                4 * len,
            ),
            (
                codes.atoms.ptr(),
                host.atoms.as_mut_ptr().cast::<u8>(),
                4 * len * m,
            ),
            (
                codes.coefs.ptr(),
                host.coefs.as_mut_ptr().cast::<u8>(),
                size * len * m,
            ),
            (
                codes.residual_norm2.ptr(),
                r2.as_mut_ptr().cast::<u8>(),
                size * r2.len(),
            ),
        ];
        debug_assert!(r2.len() == len && host.counts.len() >= len);
        // SAFETY: each device array holds at least `len` signals' slots;
        // each host range is as long as its copy (the host slots hold a
        // whole chunk, `r2` is `len` elements), ours alone, and disjoint.
        unsafe { crate::staging::dtoh_many(&self.staging, stream, &parts) }
    }

    /// Slots for `l` signals.
    fn alloc_codes<T: Scalar>(&self, p: &Prepared<T>, l: usize) -> Result<DeviceCodes<Self, T>> {
        let slots = mul("signals * max_atoms", l, p.m)?;
        Ok(DeviceCodes {
            signals: l,
            max_atoms: p.m,
            counts: self.alloc::<u32>(l, "OMP counts")?,
            atoms: self.alloc::<u32>(slots, "OMP atoms")?,
            coefs: self.alloc::<T>(slots, "OMP coefficients")?,
            residual_norm2: self.alloc::<T>(l, "OMP residual norms")?,
        })
    }

    /// The kernel and work buffers for runs of up to `rows` signals.
    fn omp_work<T: Scalar>(&self, p: &Prepared<T>, rows: usize) -> Result<Work> {
        let (k, m) = (p.k, p.m);
        let sbytes = scratch_bytes(m, k)?;
        let block_bytes = mul("OMP shared scratch", WARPS, sbytes)?;
        let use_global = block_bytes > self.max_shared_per_block() as usize / 2;
        let chunk = a0_rows(k).min(rows.max(1));
        let a0 = self.alloc::<f64>(mul("OMP alpha0", chunk, k)?, "OMP alpha0")?;
        let f = self.function(&KERNEL, &format!("omp_batch_{}", T::NAME))?;
        let (blocks_cap, scratch) = if use_global {
            let cap = global_blocks(block_bytes, self.sm_count());
            (cap, self.alloc::<u8>(cap * block_bytes, "OMP scratch")?)
        } else {
            if block_bytes > 48 << 10 {
                self.set_dynamic_smem(&f, block_bytes as u32)?;
            }
            (usize::MAX, self.alloc::<u8>(0, "OMP scratch (unused)")?)
        };
        Ok(Work {
            f,
            a0,
            chunk,
            sbytes,
            block_bytes,
            use_global,
            blocks_cap,
            scratch,
        })
    }

    /// Queues the coding of `l` signals at `x` (leading dimension `ld`) into
    /// `out`, `wk.chunk` signals per `alpha0` pass.
    fn omp_queue<T: Scalar>(
        &self,
        p: &Prepared<T>,
        wk: &Work,
        x: u64,
        ld: usize,
        l: usize,
        out: Slots,
    ) -> Result<()> {
        let (n, k, m) = (p.n, p.k, p.m);
        let (ni, ki, mi) = (
            to_i32("n", n)?,
            to_i32("atoms", k)?,
            to_i32("max_atoms", m)?,
        );
        let size = std::mem::size_of::<T>() as u64;
        let (has_eps, eps) = match p.eps {
            Some(e) => (1i32, e),
            None => (0i32, 0.0f64),
        };
        let (use_g, sb) = (i32::from(wk.use_global), wk.sbytes as i64);
        let (ldx, lda) = (ld as i64, k as i64);
        let (dt, g, a0p, gs) = (p.dt.ptr(), p.g.ptr(), wk.a0.ptr(), wk.scratch.ptr());
        let mut c0 = 0usize;
        while c0 < l {
            let len = wk.chunk.min(l - c0);
            let rows = to_i32("signals per chunk", len)?;
            let xc = x + (c0 * ld) as u64 * size;
            self.launch_correlate::<T>(rows, ni, ki, xc, ld.max(1), p.d.ptr(), a0p)?;
            let blocks = len.div_ceil(WARPS).min(wk.blocks_cap);
            let cfg = LaunchConfig {
                grid_dim: (count_u32("OMP blocks", blocks)?, 1, 1),
                block_dim: ((WARPS * 32) as u32, 1, 1),
                shared_mem_bytes: if wk.use_global {
                    0
                } else {
                    wk.block_bytes as u32
                },
            };
            let cnt = out.counts + 4 * c0 as u64;
            let at = out.atoms + 4 * (c0 * m) as u64;
            let co = out.coefs + size * (c0 * m) as u64;
            let ro = out.r2 + size * c0 as u64;
            // Arguments match `omp_batch_*`; the signal pointer covers `len`
            // rows of `n` with leading dimension `ld`, alpha0 holds `len x K`,
            // the outputs hold `len` slots past their offsets, and global
            // scratch holds `blocks * WARPS` warps. The shared memory opt-in
            // was made in `omp_work`.
            launch_kernel!(
                @fn self, &wk.f, "omp_batch", cfg,
                &rows, &ni, &ki, &mi, &xc, &ldx, &dt, &g, &a0p, &lda, &eps, &has_eps,
                &cnt, &at, &co, &ro, &use_g, &gs, &sb
            );
            c0 += len;
        }
        Ok(())
    }

    /// [`SparseCoder::encode`] as a pipeline (see [`crate::pipeline`]):
    /// chunks of signals go up into one of two buffer sets while the other
    /// set's chunk is coded, and each coded chunk comes down into reused
    /// host buffers and is packed into the answer while the next computes.
    /// The chunk size also keeps the call within the memory budget. Each
    /// signal is coded by its own warp from its own `alpha0` row, so the
    /// codes do not depend on the chunking.
    fn omp_encode_host<T: Scalar>(
        &self,
        p: &Prepared<T>,
        signals: &MatRef<'_, T>,
    ) -> Result<SparseCodes<T>> {
        let (l, n, k, m) = (signals.rows(), p.n, p.k, p.m);
        let size = std::mem::size_of::<T>();
        // Two sets of signals and slots, one `alpha0` row each.
        let per_signal = (2 * (n * size + m * (4 + size) + 4 + size) + k * 8) as u64;
        let fixed = (2 * n * k * size + k * k * 8) as u64 + self.omp_scratch_bytes(p)?;
        let cl =
            crate::pipeline::chunk_items(l, fixed, per_signal, self.memory_budget()?, OVERLAP)?;
        if cl >= l {
            // One chunk: nothing to overlap. The values are checked as they
            // go up, packed.
            let x = self.alloc::<T>(mul("OMP signals", l, n)?, "OMP signals")?;
            self.upload_rows(&self.stream, signals, (0, l), x.ptr(), Some("signals"))?;
            let codes = self.omp_run(p, x.ptr(), n.max(1), l)?;
            return self.download_codes(&codes);
        }
        tracing::debug!(signals = l, per_chunk = cl, "OMP host call as a pipeline");
        let wk = self.omp_work(p, cl)?;
        let xs = [
            self.alloc::<T>(mul("OMP signal chunk", cl, n)?, "OMP signal chunk")?,
            self.alloc::<T>(mul("OMP signal chunk", cl, n)?, "OMP signal chunk")?,
        ];
        let sets = [self.alloc_codes(p, cl)?, self.alloc_codes(p, cl)?];
        let lanes = self.lanes()?;
        use crate::pipeline::Laps as L;
        let mut laps = L::new();
        let mut host = HostSlots::<T>::new(cl, m);
        // Room for every slot when the host grants it (untouched pages cost
        // nothing), on huge pages where it can: the codes are written once,
        // never moved by a regrowth.
        let slots = mul("signals * max_atoms", l, m)?;
        let mut out = SparseCodes {
            offsets: crate::device::fresh_vec(l + 1)?,
            atoms: crate::device::fresh_vec(slots).unwrap_or_default(),
            coefs: crate::device::fresh_vec(slots).unwrap_or_default(),
            residual_norm2: crate::device::fresh_vec::<T>(l)?,
        };
        out.offsets.push(0);
        let chunks = l.div_ceil(cl);
        let span = |c: usize| (c * cl, cl.min(l - c * cl));
        let upload = |c: usize| -> Result<()> {
            let (c0, len) = span(c);
            let dst = &xs[c % 2];
            if c >= 2 {
                // The set's previous chunk must be read before it is refilled.
                lanes
                    .up
                    .wait(&lanes.computed[c % 2])
                    .map_err(crate::error::driver_error("ordering an OMP upload"))?;
            }
            // The values are checked as they go up (see `encode`).
            self.upload_rows(&lanes.up, signals, (c0, len), dst.ptr(), Some("signals"))
        };
        // Chunk `c + 1` goes up and is queued before chunk `c` comes down,
        // so the device codes one chunk while the host moves the others.
        let queue = |c: usize| -> Result<()> {
            let len = span(c).1;
            let (x, out) = (xs[c % 2].ptr(), Slots::of(&sets[c % 2]));
            self.omp_queue(p, &wk, x, n.max(1), len, out)?;
            self.mark_computed(&lanes, c % 2)
        };
        L::time(&mut laps.up, || upload(0))?;
        queue(0)?;
        for c in 0..chunks {
            let (c0, len) = span(c);
            if c + 1 < chunks {
                L::time(&mut laps.up, || upload(c + 1))?;
                queue(c + 1)?;
            }
            lanes
                .down
                .wait(&lanes.computed[c % 2])
                .map_err(crate::error::driver_error("ordering an OMP download"))?;
            let r2 = &mut out.residual_norm2.spare_capacity_mut()[c0..c0 + len];
            L::time(&mut laps.down, || {
                self.download_slots(&lanes.down, &sets[c % 2], len, &mut host, r2)
            })?;
            L::time(&mut laps.host, || host.pack(len, &mut out))?;
        }
        laps.log("encode", chunks);
        // SAFETY: every chunk's residual norms were written above.
        unsafe { out.residual_norm2.set_len(l) };
        if out.atoms.capacity() > 2 * out.atoms.len() {
            out.atoms.shrink_to_fit();
            out.coefs.shrink_to_fit();
        }
        Ok(out)
    }
}

impl<T: Scalar> SparseCoder<T> for CudaBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        // The signals' values are checked here for calls that run in one
        // piece, and chunk by chunk as they go up for pipelined ones (the
        // same first bad index; nothing is returned before every chunk
        // passed).
        validate::encode_shape(dict, signals.cols(), &rule)?;
        let l = signals.rows();
        if l == 0 {
            return Ok(SparseCodes {
                offsets: vec![0],
                atoms: Vec::new(),
                coefs: Vec::new(),
                residual_norm2: Vec::new(),
            });
        }
        let p = self.omp_prepare(dict, rule)?;
        self.omp_encode_host(&p, &signals)
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
