//! DenseGemm for [`CudaBackend`]: `kernels/dense_gemm.cu`.
//!
//! f32 runs a register-blocked SIMT kernel (see the kernel file's header); the
//! tile shape is chosen from the problem size: 128x256 or 128x128 blocks when
//! there are enough tiles to fill the device, 64x64 for small products. f64
//! runs a plain shared-memory tiled kernel. `Precision::Tf32` computes `Strict`
//! (allowed by the contract: it meets the looser bound too).
//!
//! The host path uploads A and B as stored (with their leading dimensions),
//! keeps C packed (`ld = n`) on the device, uploads it only when `beta != 0`,
//! and writes back only the view's elements, never the caller's gaps between rows.

use std::sync::atomic::Ordering;

use cudarc::driver::LaunchConfig;
use trident_core::{
    DenseGemm, DenseGemmDevice, DeviceMat, Error, GemmDims, GemmParams, MatMut, MatRef, Op, Result,
    Scalar, validate,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, count_u32, launch_kernel};

/// `kernels/dense_gemm.cu`.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "dense_gemm",
    source: include_str!("../kernels/dense_gemm.cu"),
};

/// Entry points of `kernels/dense_gemm.cu` (the tidy test checks them).
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "gemm_nn_128x128_f32",
    "gemm_nt_128x128_f32",
    "gemm_tn_128x128_f32",
    "gemm_tt_128x128_f32",
    "gemm_nn_128x256_f32",
    "gemm_nt_128x256_f32",
    "gemm_tn_128x256_f32",
    "gemm_tt_128x256_f32",
    "gemm_nn_128x128k16_f32",
    "gemm_nt_128x128k16_f32",
    "gemm_tn_128x128k16_f32",
    "gemm_tt_128x128k16_f32",
    "gemm_nn_64x64_f32",
    "gemm_nt_64x64_f32",
    "gemm_tn_64x64_f32",
    "gemm_tt_64x64_f32",
    "gemm_nn_f64",
    "gemm_nt_f64",
    "gemm_tn_f64",
    "gemm_tt_f64",
];

/// f32 block-tile shapes the kernel file provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmTile {
    /// Pick from the problem size (the default).
    Auto,
    /// 64 x 64 blocks (small products).
    T64x64,
    /// 128 x 128 blocks, 8 x 8 per thread.
    T128x128,
    /// 128 x 256 blocks, 8 x 16 per thread.
    T128x256,
    /// 128 x 128 blocks, k-tiles 16 deep (half the barriers of `T128x128`).
    T128x128K16,
}

impl GemmTile {
    fn code(self) -> u8 {
        match self {
            GemmTile::Auto => 0,
            GemmTile::T64x64 => 1,
            GemmTile::T128x128 => 2,
            GemmTile::T128x256 => 3,
            GemmTile::T128x128K16 => 4,
        }
    }
    fn from_code(c: u8) -> Self {
        match c {
            1 => GemmTile::T64x64,
            2 => GemmTile::T128x128,
            3 => GemmTile::T128x256,
            4 => GemmTile::T128x128K16,
            _ => GemmTile::Auto,
        }
    }
    fn dims(self) -> (usize, usize) {
        match self {
            GemmTile::T64x64 => (64, 64),
            GemmTile::T128x256 => (128, 256),
            _ => (128, 128),
        }
    }
    fn suffix(self) -> &'static str {
        match self {
            GemmTile::T64x64 => "64x64",
            GemmTile::T128x256 => "128x256",
            GemmTile::T128x128K16 => "128x128k16",
            _ => "128x128",
        }
    }
}

impl CudaBackend {
    /// Forces the f32 GEMM tile shape (benchmarks and tests); `Auto` restores
    /// the size-based choice. Results are identical bit for bit across shapes
    /// only up to rounding order, which is fixed per shape.
    pub fn set_gemm_tile(&self, tile: GemmTile) {
        self.gemm_tile.store(tile.code(), Ordering::Relaxed);
    }

    fn pick_tile(&self, m: usize, n: usize) -> GemmTile {
        match GemmTile::from_code(self.gemm_tile.load(Ordering::Relaxed)) {
            GemmTile::Auto => {}
            t => return t,
        }
        let tiles = |bm: usize, bn: usize| m.div_ceil(bm) * n.div_ceil(bn);
        let sms = self.sm_count() as usize;
        // 128x256 holds one block per SM, 128x128 two: each needs a few waves
        // of blocks before its larger tile pays for the idle tail.
        if tiles(128, 256) >= 3 * sms {
            GemmTile::T128x256
        } else if tiles(128, 128) >= 2 * sms {
            GemmTile::T128x128
        } else {
            GemmTile::T64x64
        }
    }
}

fn op_char(op: Op) -> char {
    match op {
        Op::N => 'n',
        Op::T => 't',
    }
}

fn to_i32(field: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::TooLarge {
        field,
        value: v as u128,
        limit: i32::MAX as u128,
    })
}

fn needed(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

impl CudaBackend {
    /// Queues the kernel for checked dims on raw device pointers.
    #[allow(clippy::too_many_arguments)]
    fn launch_gemm<T: Scalar>(
        &self,
        p: &GemmParams<T>,
        d: GemmDims,
        a: u64,
        lda: usize,
        b: u64,
        ldb: usize,
        c: u64,
        ldc: usize,
    ) -> Result<()> {
        if d.m == 0 || d.n == 0 {
            return Ok(());
        }
        let (m, n, k) = (to_i32("m", d.m)?, to_i32("n", d.n)?, to_i32("k", d.k)?);
        let (lda, ldb, ldc) = (lda as i64, ldb as i64, ldc as i64);
        let ops = format!("{}{}", op_char(p.op_a), op_char(p.op_b));
        let (name, tiles) = if T::NAME == "f32" {
            let tile = self.pick_tile(d.m, d.n);
            let (bm, bn) = tile.dims();
            (
                format!("gemm_{ops}_{}_f32", tile.suffix()),
                (d.m.div_ceil(bm) * d.n.div_ceil(bn), 1),
            )
        } else {
            (
                format!("gemm_{ops}_f64"),
                (d.n.div_ceil(64), d.m.div_ceil(64)),
            )
        };
        let grid = (count_u32("gemm blocks", tiles.0)?, tiles.1 as u32, 1);
        let cfg = LaunchConfig {
            grid_dim: grid,
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // The argument lists match the kernels' signatures (int x3, scalar,
        // ptr, i64, ptr, i64, scalar, ptr, i64); every pointer covers the
        // (rows-1)*ld+cols elements its view needs, checked by the callers.
        if T::NAME == "f32" {
            let (alpha, beta) = (p.alpha.to_f64() as f32, p.beta.to_f64() as f32);
            launch_kernel!(
                self, &KERNEL, &name, cfg, &m, &n, &k, &alpha, &a, &lda, &b, &ldb, &beta, &c, &ldc
            );
        } else {
            let (alpha, beta) = (p.alpha.to_f64(), p.beta.to_f64());
            launch_kernel!(
                self, &KERNEL, &name, cfg, &m, &n, &k, &alpha, &a, &lda, &b, &ldb, &beta, &c, &ldc
            );
        }
        Ok(())
    }
}

impl<T: Scalar> DenseGemm<T> for CudaBackend {
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        let d = validate::gemm(p, &a, &b, &c)?;
        if d.m == 0 || d.n == 0 {
            return Ok(());
        }
        let na = needed(a.rows(), a.cols(), a.ld());
        let nb = needed(b.rows(), b.cols(), b.ld());
        let da = self.upload_named(&a.data()[..na], "gemm A")?;
        let db = self.upload_named(&b.data()[..nb], "gemm B")?;
        let mut dc = self.alloc::<T>(d.m * d.n, "gemm C")?;
        // A packed C (ld = n) moves as one staged copy each way, straight
        // from and into the caller's memory; otherwise row by row.
        let packed = c.ld() == d.n;
        if p.beta != T::ZERO {
            if packed {
                self.upload_into(&c.data()[..d.m * d.n], &mut dc)?;
            } else {
                let rows: Vec<T> = (0..d.m).flat_map(|i| c.as_ref().row(i).to_vec()).collect();
                self.upload_into(&rows, &mut dc)?;
            }
        }
        self.launch_gemm(
            p,
            d,
            da.ptr(),
            a.ld().max(1),
            db.ptr(),
            b.ld().max(1),
            dc.ptr(),
            d.n,
        )?;
        if packed {
            return self.download_into(&dc, &mut c.data_mut()[..d.m * d.n]);
        }
        let out = self.download_vec(&dc)?;
        for (i, row) in out.chunks_exact(d.n).enumerate() {
            c.row_mut(i).copy_from_slice(row);
        }
        Ok(())
    }
}

impl<T: Scalar> DenseGemmDevice<T> for CudaBackend {
    fn gemm_device(
        &self,
        p: &GemmParams<T>,
        a: &DeviceMat<CudaBuffer<T>>,
        b: &DeviceMat<CudaBuffer<T>>,
        c: &mut DeviceMat<CudaBuffer<T>>,
    ) -> Result<()> {
        let dims = trident_core::validate::gemm_device(self, p, a, b, c)?;
        self.launch_gemm(
            p,
            dims,
            a.buf.ptr(),
            a.ld.max(1),
            b.buf.ptr(),
            b.ld.max(1),
            c.buf.ptr(),
            c.ld.max(1),
        )
    }
}
