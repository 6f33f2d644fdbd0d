//! SparseGemm for [`WgpuBackend`]: `shaders/sparse_gemm.wgsl`, f32 only.
//!
//! Two phases with exact output sizing (see the shader's header): per-row
//! hash tables sized from the product counts, accumulation in A's column
//! order by one thread per row, a device scan of the row counts for C's
//! offsets, then gather and sort. The host reads back two small totals (the
//! tables' size, C's nnz) to allocate; everything else stays on the device.

use trident_core::{
    CsrMatrix, DeviceCsr, Error, Result, Scalar, SparseGemm, SparseGemmDevice, validate,
};

use crate::buffer::WgpuBuffer;
use crate::pipeline::{Arg, Bind, Kernel, Shader};
use crate::{WgpuBackend, require_f32};

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
    Bind::Read,      // 3 b_off
    Bind::ReadWrite, // 4 hoff
    Bind::ReadWrite, // 5 coarse
    Bind::Read,      // 6 a_val
    Bind::Read,      // 7 b_idx
    Bind::Read,      // 8 b_val
    Bind::ReadWrite, // 9 table
    Bind::ReadWrite, // 10 cnt
    Bind::ReadWrite, // 11 c_idx
    Bind::ReadWrite, // 12 c_val
    Bind::ReadWrite, // 13 c_off
];

static PRODUCTS: Kernel = Kernel {
    shader: &SHADER,
    entry: "spg_products",
    bindings: BINDS.split_at(6).0,
};

static ACCUMULATE: Kernel = Kernel {
    shader: &SHADER,
    entry: "spg_accumulate",
    bindings: BINDS.split_at(11).0,
};

static FILL: Kernel = Kernel {
    shader: &SHADER,
    entry: "spg_fill",
    bindings: BINDS,
};

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[&PRODUCTS, &ACCUMULATE, &FILL];

/// Hash slots the tables may use in all (8 bytes each; a storage binding
/// holds at most 4 GiB on any adapter, less on most).
const MAX_SLOTS: u64 = 1 << 29;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cap: u32,
    _pad: [u32; 2],
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
        // A row has at most `cols` distinct columns: 2 * cols slots keep load <= 1/2.
        let cap = 2 * b.cols().max(1) as u64;
        let params = self.uniform(&Params {
            rows: rows as u32,
            cap: cap.min(u32::MAX as u64) as u32,
            _pad: [0; 2],
        });
        let (a_off, b_off) = (a.offsets.cast_ref::<u32>()?, b.offsets.cast_ref::<u32>()?);
        let (a_val, b_val) = (a.values.cast_ref::<f32>()?, b.values.cast_ref::<f32>()?);
        let hoff = self.alloc::<u32>(rows + 1, "spgemm table offsets")?;
        let coarse = self.alloc::<u32>(1, "spgemm coarse total")?;
        let groups = self.grid((rows as u64 + 1).div_ceil(256))?;

        // 1. table sizes, scanned into offsets.
        let mut enc = self.encoder("spgemm products");
        let args1 = [
            Arg::raw(&params),
            Arg::buf(&a_off),
            Arg::buf(&a.indices),
            Arg::buf(&b_off),
            Arg::buf(&hoff),
            Arg::buf(&coarse),
        ];
        enc.dispatch(&PRODUCTS, &args1, groups)?;
        self.scan_exclusive_u32(&mut enc, &hoff, rows + 1)?;
        enc.submit();
        let mut total = [0u32];
        self.download_into(&coarse, &mut total)?;
        let coarse_slots = total[0] as u64 * 1024;
        let mut end = [0u32];
        self.download_slice(&hoff, rows, &mut end)?;
        // The u32 scan wraps past 2^32 slots; the coarse sum (in units of 1024,
        // rounded down per row) tells when that could have happened.
        if coarse_slots + 1024 * (rows as u64 + 1) > MAX_SLOTS
            && (coarse_slots > MAX_SLOTS || end[0] as u64 > MAX_SLOTS)
        {
            return Err(Error::TooLarge {
                field: "SpGEMM hash slots on wgpu (8 bytes each, one storage binding)",
                value: coarse_slots.max(end[0] as u64) as u128,
                limit: MAX_SLOTS as u128,
            });
        }
        let slots = end[0] as usize;

        // 2. accumulate, count, scan into C's offsets.
        let table = self.alloc::<[u32; 2]>(slots, "spgemm hash tables")?;
        let cnt = self.alloc::<u32>(rows + 1, "spgemm row counts")?;
        let mut enc = self.encoder("spgemm accumulate");
        let args2 = [
            Arg::raw(&params),
            Arg::buf(&a_off),
            Arg::buf(&a.indices),
            Arg::buf(&b_off),
            Arg::buf(&hoff),
            Arg::buf(&coarse),
            Arg::buf(&a_val),
            Arg::buf(&b.indices),
            Arg::buf(&b_val),
            Arg::buf(&table),
            Arg::buf(&cnt),
        ];
        enc.dispatch(&ACCUMULATE, &args2, groups)?;
        self.scan_exclusive_u32(&mut enc, &cnt, rows + 1)?;
        enc.submit();
        let mut nnz = [0u32];
        self.download_slice(&cnt, rows, &mut nnz)?;
        let nnz = nnz[0] as usize;

        // 3. gather, sort, offsets as u64.
        let c_idx = self.alloc::<u32>(nnz, "spgemm C indices")?;
        let c_val = self.alloc::<f32>(nnz, "spgemm C values")?;
        let c_off = self.alloc::<u64>(rows + 1, "spgemm C offsets")?;
        let c_off32 = c_off.cast_ref::<u32>()?;
        let mut enc = self.encoder("spgemm fill");
        let mut args3 = args2.to_vec();
        args3.extend([Arg::buf(&c_idx), Arg::buf(&c_val), Arg::buf(&c_off32)]);
        enc.dispatch(&FILL, &args3, groups)?;
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

    /// Downloads `host.len()` elements of `buf` starting at element `start`.
    fn download_slice<T: trident_core::Element>(
        &self,
        buf: &WgpuBuffer<T>,
        start: usize,
        host: &mut [T],
    ) -> Result<()> {
        let tmp = self.alloc::<T>(host.len(), "download slice")?;
        let mut enc = self.encoder("download slice");
        enc.copy(buf, start, &tmp, 0, host.len())?;
        enc.submit();
        self.download_into(&tmp, host)
    }
}

impl<T: Scalar> SparseGemmDevice<T> for WgpuBackend {
    fn upload_csr(&self, m: &CsrMatrix<T>) -> Result<DeviceCsr<Self, T>> {
        require_f32::<T>("SparseGemm")?;
        self.scoped("upload_csr", || {
            let offsets: Vec<u64> = m.offsets().iter().map(|&o| o as u64).collect();
            Ok(DeviceCsr::from_parts(
                m.rows(),
                m.cols(),
                m.nnz(),
                self.upload_named(&offsets, "csr offsets")?,
                self.upload_named(m.indices(), "csr indices")?,
                self.upload_named(m.values(), "csr values")?,
            ))
        })
    }

    fn download_csr(&self, m: &DeviceCsr<Self, T>) -> Result<CsrMatrix<T>> {
        check_device_csr(self, "m", m)?;
        self.scoped("download_csr", || {
            let mut offsets = vec![0u64; m.rows() + 1];
            self.download_into(&m.offsets, &mut offsets)?;
            let mut indices = vec![0u32; m.nnz()];
            self.download_into(&m.indices, &mut indices)?;
            let mut values = vec![T::ZERO; m.nnz()];
            self.download_into(&m.values, &mut values)?;
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
        validate::spgemm(a, b)?;
        if a.nnz() == 0 || b.nnz() == 0 {
            return CsrMatrix::zeros(a.rows(), b.cols());
        }
        let da = self.upload_csr(a)?;
        let db = self.upload_csr(b)?;
        check_device_csr(self, "a", &da)?;
        check_device_csr(self, "b", &db)?;
        let dc = self.scoped("spgemm", || self.product(&da, &db))?;
        self.download_csr(&dc)
    }
}
