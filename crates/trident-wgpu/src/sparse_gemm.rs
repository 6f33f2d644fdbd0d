//! SparseGemm for [`WgpuBackend`]: `shaders/sparse_gemm.wgsl`, f32 only.
//!
//! Two phases, rows binned by work on the device (the shader's header has
//! the bins and the determinism argument): a merge bin (one thread per short
//! row, a k-way merge of B rows in registers) and a general bin (one
//! workgroup per row, each B row split among its threads, a column-window
//! bitmap in workgroup memory). All buffers of a call come from the
//! backend's buffer pool (`buffer.rs`), so a repeated product creates none.
//! The host waits on the device once per product, to read nnz(C) and the
//! general bin's row count and allocate C exactly; everything else is
//! queued.

use trident_core::{
    CsrMatrix, DeviceCsr, Error, Result, Scalar, SparseGemm, SparseGemmDevice, validate,
};

use crate::buffer::spare_bytes;
use crate::pipeline::{Arg, Bind, Encoder, Kernel, Shader};
use crate::staging::Down;
use crate::{WgpuBackend, require_f32};
use std::mem::MaybeUninit;

/// `shaders/sparse_gemm.wgsl`.
static SHADER: Shader = Shader {
    name: "sparse_gemm",
    parts: &[include_str!("../shaders/sparse_gemm.wgsl")],
};

/// The shader's bindings in order; each kernel binds a prefix.
const BINDS: &[Bind] = &[
    Bind::Uniform,   // 0 sp
    Bind::Read,      // 1 a_off
    Bind::Read,      // 2 a_idx
    Bind::Read,      // 3 a_val
    Bind::Read,      // 4 b_off
    Bind::Read,      // 5 b_idx
    Bind::Read,      // 6 b_val
    Bind::ReadWrite, // 7 mpos
    Bind::ReadWrite, // 8 tpos
    Bind::ReadWrite, // 9 list
    Bind::ReadWrite, // 10 cnt
    Bind::ReadWrite, // 11 meta
    Bind::ReadWrite, // 12 c_idx
    Bind::ReadWrite, // 13 c_val
    Bind::ReadWrite, // 14 c_off
    Bind::ReadWrite, // 15 ind
];

const fn kernel(entry: &'static str, bindings: usize) -> Kernel {
    Kernel {
        shader: &SHADER,
        entry,
        bindings: BINDS.split_at(bindings).0,
    }
}

static ANALYZE: Kernel = kernel("spg_analyze", 9);
static SCATTER: Kernel = kernel("spg_scatter", 10);
static BINS: Kernel = kernel("spg_bins", 16);
static SYM_MERGE: Kernel = kernel("spg_sym_merge", 15);
static SYM_TEAM: Kernel = kernel("spg_sym_team", 15);
static NUM_TEAM: Kernel = kernel("spg_num_team", 15);
static SYM_GENERAL: Kernel = kernel("spg_sym_general", 15);
static OFFSETS: Kernel = kernel("spg_offsets", 15);
static NUM_MERGE: Kernel = kernel("spg_num_merge", 15);
static NUM_GENERAL: Kernel = kernel("spg_num_general", 15);

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[
    &ANALYZE,
    &SCATTER,
    &BINS,
    &SYM_MERGE,
    &SYM_TEAM,
    &SYM_GENERAL,
    &OFFSETS,
    &NUM_MERGE,
    &NUM_TEAM,
    &NUM_GENERAL,
];

/// Where `spg_bins` leaves the indirect dispatch sizes (u32 words of their
/// buffer): of the symbolic merge, the team kernels, the numeric merge.
const MERGE_GROUPS_AT: usize = 0;
const TEAM_GROUPS_AT: usize = 3;
const NUM_MERGE_GROUPS_AT: usize = 6;

/// Most workgroups the general bin runs (rows are drawn from a queue, so
/// this bounds the parallelism, not the rows).
const GENERAL_GROUPS: usize = 1024;

/// Invocations per workgroup of the per-row kernels (`WG` in the shader).
const WG: u64 = 256;

/// Phase timings as debug events, when a `tracing` subscriber wants them
/// (each phase is then submitted and waited for on its own, so traced calls
/// are slower overall; without such a subscriber a lap costs one branch).
struct Trace {
    on: bool,
    t: std::time::Instant,
}

impl Trace {
    fn new() -> Self {
        Self {
            on: tracing::enabled!(tracing::Level::DEBUG),
            t: std::time::Instant::now(),
        }
    }

    /// When tracing: waits for the queue and emits the time since the last
    /// lap (a phase of the host call around the product).
    fn mark(&mut self, be: &WgpuBackend, what: &str) -> Result<()> {
        if self.on {
            be.ctx.wait("spgemm trace")?;
            tracing::debug!(
                call = "spgemm host",
                phase = what,
                ms = self.t.elapsed().as_secs_f64() * 1e3,
                "phase"
            );
            self.t = std::time::Instant::now();
        }
        Ok(())
    }

    /// Returns `enc` untouched, or, when tracing, submits it, waits, emits
    /// the time since the last lap and returns a fresh encoder.
    fn lap<'b>(
        &mut self,
        be: &'b WgpuBackend,
        enc: Encoder<'b>,
        what: std::fmt::Arguments<'_>,
    ) -> Result<Encoder<'b>> {
        if !self.on {
            return Ok(enc);
        }
        enc.submit();
        be.ctx.wait("spgemm trace")?;
        tracing::debug!(
            call = "spgemm",
            phase = %what,
            ms = self.t.elapsed().as_secs_f64() * 1e3,
            "phase"
        );
        self.t = std::time::Instant::now();
        Ok(be.encoder("spgemm trace"))
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    /// 1: each general-bin workgroup computes one row (CPU adapters).
    one_row: u32,
    /// `max_compute_workgroups_per_dimension` (indirect dispatch sizes).
    max_dim: u32,
    /// 1: B has at most 2^26 columns (the numeric team sort's keys are
    /// column * 64 + product).
    keyed: u32,
}

/// Core's buffer-size check ([`trident_core::validate::device_csr`]) plus this
/// backend's own limit: the shaders index with `u32`.
fn check_device_csr<T: Scalar>(
    be: &WgpuBackend,
    field: &'static str,
    m: &DeviceCsr<WgpuBackend, T>,
) -> Result<()> {
    trident_core::validate::device_csr(be, field, m)?;
    if m.nnz() > u32::MAX as usize || m.rows() >= u32::MAX as usize {
        return Err(Error::TooLarge {
            field: "nnz or rows (u32 indices in the wgpu shaders)",
            value: m.nnz().max(m.rows()) as u128,
            limit: u32::MAX as u128 - 1,
        });
    }
    // Column 0xffffffff is the shader's "no entry" sentinel.
    if m.cols() > u32::MAX as usize {
        return Err(Error::TooLarge {
            field: "cols (u32 column indices below 0xffffffff in the wgpu shaders)",
            value: m.cols() as u128,
            limit: u32::MAX as u128,
        });
    }
    Ok(())
}

impl WgpuBackend {
    /// `C = A * B` on checked device matrices (f32 underneath).
    fn product<T: Scalar>(
        &self,
        a: &DeviceCsr<Self, T>,
        b: &DeviceCsr<Self, T>,
    ) -> Result<DeviceCsr<Self, T>> {
        let rows = a.rows();
        // Mesa's llvmpipe ends a shader's loops after 65,535 iterations in
        // all. There the general bin's workgroups draw a row each instead of
        // draining the row queue (the first workgroups to run would take
        // every row), so a workgroup's iterations are those of its own row.
        let cpu = self.ctx.info.device_type == wgpu::DeviceType::Cpu;
        let params = self.uniform(&Params {
            rows: rows as u32,
            one_row: u32::from(cpu),
            max_dim: self.ctx.limits.max_compute_workgroups_per_dimension,
            keyed: u32::from(b.cols() <= 1 << 26),
        });
        let (a_off, b_off) = (a.offsets.cast_ref::<u32>()?, b.offsets.cast_ref::<u32>()?);
        let (a_val, b_val) = (a.values.cast_ref::<f32>()?, b.values.cast_ref::<f32>()?);
        // Pooled buffers (alloc_uninit): the kernels write every element of
        // mpos and list before reading it; cnt and meta are zeroed below.
        let mpos = self.alloc_uninit::<u32>(rows + 1, "spgemm merge positions")?;
        let tpos = self.alloc_uninit::<u32>(rows + 1, "spgemm team positions")?;
        let list = self.alloc_uninit::<u32>(rows.max(1), "spgemm row list")?;
        let cnt = self.alloc_uninit::<u32>(rows + 1, "spgemm row nnz")?;
        let meta = self.alloc_uninit::<u32>(4, "spgemm queues and total")?;
        // Written by spg_bins before any dispatch reads it.
        let ind = self.alloc_uninit::<u32>(9, "spgemm indirect dispatch sizes")?;
        let info = self.alloc_uninit::<u32>(4, "spgemm totals")?;
        let row_groups = self.grid((rows as u64 + 1).div_ceil(WG))?;
        let args = [
            Arg::raw(&params),
            Arg::buf(&a_off),
            Arg::buf(&a.indices),
            Arg::buf(&a_val),
            Arg::buf(&b_off),
            Arg::buf(&b.indices),
            Arg::buf(&b_val),
            Arg::buf(&mpos),
            Arg::buf(&tpos),
            Arg::buf(&list),
            Arg::buf(&cnt),
            Arg::buf(&meta),
        ];

        // The symbolic kernels share functions with the numeric ones, so they
        // bind C too (unused there): small stand-ins.
        let dummy = self.alloc_uninit::<u32>(1, "spgemm symbolic stand-in")?;
        let mut args_sym = args.to_vec();
        args_sym.extend([Arg::buf(&dummy); 3]);
        // Bins, row list, symbolic pass, C's offsets.
        let mut tr = Trace::new();
        let mut enc = self.encoder("spgemm symbolic");
        enc = tr.lap(
            self,
            enc,
            format_args!("start: {rows} rows, nnz(A) {}, nnz(B) {}", a.nnz(), b.nnz()),
        )?;
        enc.zero(&cnt);
        enc.zero(&meta);
        enc.dispatch(&ANALYZE, &args[..9], row_groups)?;
        self.scan_exclusive_u32(&mut enc, &mpos, rows + 1)?;
        self.scan_exclusive_u32(&mut enc, &tpos, rows + 1)?;
        enc.dispatch(&SCATTER, &args[..10], row_groups)?;
        let mut args_bins = args_sym.clone();
        args_bins.push(Arg::buf(&ind));
        enc.dispatch(&BINS, &args_bins, [1, 1, 1])?;
        enc = tr.lap(self, enc, format_args!("analyze, scans, scatter, bins"))?;
        enc.dispatch_indirect(&SYM_MERGE, &args_sym, &ind, MERGE_GROUPS_AT)?;
        enc.dispatch_indirect(&SYM_TEAM, &args_sym, &ind, TEAM_GROUPS_AT)?;
        enc = tr.lap(
            self,
            enc,
            format_args!("symbolic merge bin (thread and team kernels)"),
        )?;
        let sym_groups = if cpu {
            self.grid(rows.max(1) as u64)?
        } else {
            [rows.clamp(1, GENERAL_GROUPS) as u32, 1, 1]
        };
        enc.dispatch(&SYM_GENERAL, &args_sym, sym_groups)?;
        enc = tr.lap(self, enc, format_args!("symbolic general bin"))?;
        self.scan_exclusive_u32(&mut enc, &cnt, rows + 1)?;
        enc.copy(&cnt, rows, &info, 0, 1)?;
        enc.copy(&mpos, rows, &info, 1, 1)?;
        enc.copy(&meta, 2, &info, 2, 2)?;
        enc.submit();
        let mut got = [0u32; 4];
        self.download_into(&info, &mut got)?;
        let total = ((got[3] as u64) << 32) | got[2] as u64;
        // C's indices must fit one storage binding (and the u32 scan).
        let limit = (self.ctx.limits.max_storage_buffer_binding_size / 4).min(u32::MAX as u64);
        if total > limit {
            return Err(Error::TooLarge {
                field: "nnz of C (4-byte indices in one storage binding: adapter limit \
                        max_storage_buffer_binding_size)",
                value: total as u128,
                limit: limit as u128,
            });
        }
        let nnz = total as usize;
        if got[0] as u64 != total {
            return Err(crate::error::failure(
                "spgemm",
                format!("scan total {} differs from the summed nnz {total}", got[0]),
            ));
        }
        let general_rows = rows - got[1] as usize;
        let enc = self.encoder("spgemm trace");
        tr.lap(
            self,
            enc,
            format_args!(
                "scan, read back: nnz(C) {nnz}, merge rows {}, general rows {general_rows}",
                got[1]
            ),
        )?;

        // Numeric pass: rows written sorted into C. C's buffers and the
        // come from the pool: every element of C is written (offsets by
        // spg_offsets, each row by its bin) before it is read.
        let c_idx = self.alloc_uninit::<u32>(nnz, "spgemm C indices")?;
        let c_val = self.alloc_uninit::<f32>(nnz, "spgemm C values")?;
        let c_off = self.alloc_uninit::<u64>(rows + 1, "spgemm C offsets")?;
        let c_off32 = c_off.cast_ref::<u32>()?;
        let num_groups = if cpu {
            general_rows
        } else {
            general_rows.min(GENERAL_GROUPS)
        };
        let mut args_num = args.to_vec();
        args_num.extend([Arg::buf(&c_idx), Arg::buf(&c_val), Arg::buf(&c_off32)]);
        let mut enc = self.encoder("spgemm numeric");
        enc = tr.lap(self, enc, format_args!("allocate C"))?;
        enc.dispatch(&OFFSETS, &args_num, row_groups)?;
        enc.dispatch_indirect(&NUM_MERGE, &args_num, &ind, NUM_MERGE_GROUPS_AT)?;
        enc.dispatch_indirect(&NUM_TEAM, &args_num, &ind, TEAM_GROUPS_AT)?;
        enc = tr.lap(self, enc, format_args!("offsets, numeric merge bin"))?;
        if num_groups > 0 {
            enc.dispatch(&NUM_GENERAL, &args_num, self.grid(num_groups as u64)?)?;
        }
        enc = tr.lap(
            self,
            enc,
            format_args!("numeric general bin ({num_groups} workgroups)"),
        )?;
        enc.submit();
        Ok(DeviceCsr::from_parts(
            rows,
            b.cols(),
            nnz,
            c_off,
            c_idx,
            c_val.cast::<T>()?,
        ))
    }
}

impl<T: Scalar> SparseGemmDevice<T> for WgpuBackend {
    fn upload_csr(&self, m: &CsrMatrix<T>) -> Result<DeviceCsr<Self, T>> {
        require_f32::<T>("SparseGemm")?;
        self.scoped("upload_csr", || {
            // Offsets are u64 on the device: the host's own where usize is
            // 64 bits, a converted copy elsewhere.
            let wide: Vec<u64>;
            let offsets: &[u64] = match bytemuck::try_cast_slice::<usize, u64>(m.offsets()) {
                Ok(o) => o,
                Err(_) => {
                    wide = m.offsets().iter().map(|&o| o as u64).collect();
                    &wide
                }
            };
            Ok(DeviceCsr::from_parts(
                m.rows(),
                m.cols(),
                m.nnz(),
                self.upload_named(offsets, "csr offsets")?,
                self.upload_named(m.indices(), "csr indices")?,
                self.upload_named(m.values(), "csr values")?,
            ))
        })
    }

    fn download_csr(&self, m: &DeviceCsr<Self, T>) -> Result<CsrMatrix<T>> {
        check_device_csr(self, "m", m)?;
        self.scoped("download_csr", || {
            // The three parts through one pipeline of read-back chunks,
            // each straight into a fresh `Vec` (no zero fill first).
            let (rows, nnz) = (m.rows() + 1, m.nnz());
            let what = || "host copy of a CSR matrix".to_string();
            let mut offsets = trident_core::mem::fresh_vec::<u64>(rows, what)?;
            let mut indices = trident_core::mem::fresh_vec::<u32>(nnz, what)?;
            let mut values = trident_core::mem::fresh_vec::<T>(nnz, what)?;
            fn job<'d>(
                src: &'d wgpu::Buffer,
                bytes: usize,
                dst: &'d mut [MaybeUninit<u8>],
            ) -> Down<'d> {
                Down {
                    src,
                    spans: vec![(0, bytes)],
                    dst,
                }
            }
            self.stage_down(
                vec![
                    job(m.offsets.raw(), 8 * rows, spare_bytes(&mut offsets, rows)),
                    job(m.indices.raw(), 4 * nnz, spare_bytes(&mut indices, nnz)),
                    job(m.values.raw(), 4 * nnz, spare_bytes(&mut values, nnz)),
                ],
                "download_csr",
            )?;
            // SAFETY: the download wrote every byte of the three (it fails
            // otherwise), and any bit pattern is a valid u64, u32 or f32.
            unsafe {
                offsets.set_len(rows);
                indices.set_len(nnz);
                values.set_len(nnz);
            }
            CsrMatrix::from_device_parts(m.rows(), m.cols(), offsets, indices, values)
        })
    }

    fn spgemm_device(
        &self,
        a: &DeviceCsr<Self, T>,
        b: &DeviceCsr<Self, T>,
    ) -> Result<DeviceCsr<Self, T>> {
        require_f32::<T>("SparseGemm")?;
        check_device_csr(self, "a", a)?;
        check_device_csr(self, "b", b)?;
        if a.cols() != b.rows() {
            return Err(Error::dim(
                "b.rows",
                format!(
                    "A is {} x {} but B is {} x {}",
                    a.rows(),
                    a.cols(),
                    b.rows(),
                    b.cols()
                ),
            ));
        }
        self.scoped("spgemm_device", || self.product(a, b))
    }
}

impl<T: Scalar> SparseGemm<T> for WgpuBackend {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        require_f32::<T>("SparseGemm")?;
        let mut tr = Trace::new();
        validate::spgemm_dims(a, b)?;
        if a.nnz() == 0 || b.nnz() == 0 {
            validate::spgemm_finite(a, b)?;
            return CsrMatrix::zeros(a.rows(), b.cols());
        }
        // The value scan runs beside the copies (a large one on its own
        // thread); its error comes first, before anything is computed.
        let bytes: usize = [a, b]
            .iter()
            .map(|m| 8 * (m.rows() + 1) + 8 * m.nnz())
            .sum();
        let (da, db) = validate::check_beside(
            bytes >= 1 << 20,
            || validate::spgemm_finite(a, b),
            || Ok((self.upload_csr(a)?, self.upload_csr(b)?)),
        )?;
        check_device_csr(self, "a", &da)?;
        check_device_csr(self, "b", &db)?;
        tr.mark(self, "check + upload A, B")?;
        let dc = self.scoped("spgemm", || self.product(&da, &db))?;
        tr.mark(self, "product")?;
        let c = self.download_csr(&dc);
        tr.mark(self, "download C")?;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use trident_testkit::sparse_gemm::generate::random_csr;

    /// `A B` on the host in f64, with each entry's bound `sum |a| |b|`.
    fn host_product(a: &CsrMatrix<f32>, b: &CsrMatrix<f32>) -> Vec<BTreeMap<u32, (f64, f64)>> {
        (0..a.rows())
            .map(|i| {
                let mut row = BTreeMap::new();
                for p in a.offsets()[i]..a.offsets()[i + 1] {
                    let (k, av) = (a.indices()[p] as usize, a.values()[p] as f64);
                    for q in b.offsets()[k]..b.offsets()[k + 1] {
                        let bv = b.values()[q] as f64;
                        let e = row.entry(b.indices()[q]).or_insert((0.0, 0.0));
                        e.0 += av * bv;
                        e.1 += (av * bv).abs();
                    }
                }
                row
            })
            .collect()
    }

    /// Checks `be`'s product against an f64 host product, and against
    /// `plain`'s (the same adapter without subgroups) bit for bit.
    fn check(
        be: &WgpuBackend,
        plain: &WgpuBackend,
        a: &CsrMatrix<f32>,
        b: &CsrMatrix<f32>,
        what: &str,
    ) {
        let c = be.spgemm(a, b).unwrap();
        let again = be.spgemm(a, b).unwrap();
        assert_eq!(c, again, "{what}: not deterministic");
        let bits = |m: &CsrMatrix<f32>| m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&c), bits(&again), "{what}: not bit-identical");
        // The paths without subgroups (team rows by comparison loops) give
        // the same bits as those with (on NVIDIA: team rows sorted).
        let c_plain = plain.spgemm(a, b).unwrap();
        assert_eq!(c, c_plain, "{what}: with and without subgroups");
        assert_eq!(
            bits(&c),
            bits(&c_plain),
            "{what}: bits with and without subgroups"
        );
        let want = host_product(a, b);
        assert_eq!((c.rows(), c.cols()), (a.rows(), b.cols()), "{what}");
        for (i, row) in want.iter().enumerate() {
            let (s, e) = (c.offsets()[i], c.offsets()[i + 1]);
            let cols: Vec<u32> = row.keys().copied().collect();
            assert_eq!(&c.indices()[s..e], &cols[..], "{what}: row {i} columns");
            for (p, (v, bound)) in (s..e).zip(row.values()) {
                let err = (c.values()[p] as f64 - v).abs();
                assert!(
                    err <= 1e-5 * bound,
                    "{what}: row {i} value {} vs {v}",
                    c.values()[p]
                );
            }
        }
    }

    fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> CsrMatrix<f32> {
        CsrMatrix::from_triplets(rows, cols, t).unwrap()
    }

    /// The team kernels' subgroup path (`SUBGROUP32`: a team is a 32-wide
    /// subgroup, as on NVIDIA) compiles wherever subgroups exist, also on
    /// adapters that run the other path (llvmpipe's subgroups are 8 wide);
    /// the GPU machine's verify runs it.
    #[test]
    fn subgroup32_team_path_compiles() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        if !be.has_subgroups() {
            println!("SKIPPED: no subgroups on this adapter");
            return;
        }
        be.build_module(&SHADER, &["SUBGROUPS", "SUBGROUP32"])
            .unwrap();
    }

    /// Both bins (short rows merged by one thread, long or wide rows by a
    /// workgroup), windows past 2^16 columns, empty column ranges skipped up
    /// to the largest column index, bit-identical reruns.
    #[test]
    fn spgemm_bins_and_windows() {
        let Ok(be) = WgpuBackend::new() else {
            println!("SKIPPED: no wgpu adapter");
            return;
        };
        let plain = WgpuBackend::with_options(&crate::WgpuOptions {
            subgroups: false,
            ..Default::default()
        })
        .unwrap();
        // Mixed: most rows merge, some (more than 8 entries) go general.
        for (n, d) in [(300, 0.01), (300, 0.05), (70, 0.3)] {
            let a = random_csr::<f32>(n, n, d, true, n as u64);
            check(&be, &plain, &a, &a, &format!("random {n} {d}"));
        }
        // Short A rows over B rows of ~30 entries: products from a few to
        // a few hundred, so the team kernels (<= 64 products), the thread
        // merge (<= 256) and the general bin all get rows.
        for (n, d) in [(100, 0.01), (100, 0.02), (100, 0.04)] {
            let a = random_csr::<f32>(n, 200, d, true, 7 + n as u64);
            let b = random_csr::<f32>(200, 500, 0.06, true, 11);
            check(&be, &plain, &a, &b, &format!("short rows {d}"));
        }
        // Thousands of general-bin rows: on llvmpipe, whose loop cap counts
        // all iterations of an invocation, a workgroup that drained the row
        // queue would be cut off; there each workgroup takes one row.
        let a = random_csr::<f32>(3000, 3000, 0.005, true, 5);
        check(&be, &plain, &a, &a, "many general rows");
        // One B row longer than the merge bin takes, A rows of one entry.
        let long: Vec<(u32, u32, f32)> = (0..1000).map(|j| (0, 3 * j, 0.5 + j as f32)).collect();
        let b = csr(2, 3000, &long);
        let a = csr(3, 2, &[(0, 0, 1.0), (1, 1, 2.0), (2, 0, -1.0), (2, 1, 1.0)]);
        check(&be, &plain, &a, &b, "long B row");
        // Wide rows: columns over several windows with gaps between them,
        // up to the last possible column index.
        for cols in [300_000usize, u32::MAX as usize] {
            let last = cols as u32 - 1;
            let mut t = Vec::new();
            for r in 0..12u32 {
                for c in [0, r, 65_535 + r, 65_536 * 2 + 7 * r, 200_001 + r, last - r] {
                    t.push((r, c, 1.0 + r as f32 + c as f32 * 1e-7));
                }
            }
            let b = csr(12, cols, &t);
            let ta: Vec<(u32, u32, f32)> = (0..12)
                .flat_map(|r| {
                    (0..12).map(move |k| (r, k, if (r + k) % 3 == 0 { -1.0 } else { 0.25 }))
                })
                .chain([(12, 3, 1.0), (12, 5, 2.0)])
                .collect();
            let a = csr(13, 12, &ta);
            check(&be, &plain, &a, &b, &format!("wide {cols}"));
        }
    }
}

#[cfg(test)]
mod shader_constants {
    use super::*;
    use crate::shader_text::{constant, struct_size};

    /// The workgroup size and uniform-block layout this file repeats from
    /// `shaders/sparse_gemm.wgsl`.
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../shaders/sparse_gemm.wgsl");
        assert_eq!(constant(src, "WG"), WG as f64);
        assert_eq!(struct_size(src, "SpgParams"), std::mem::size_of::<Params>());
    }
}
