//! DenseGemm for [`CudaBackend`]: `kernels/dense_gemm.cu`.
//!
//! Kernel families (see the kernel file's header):
//! - `Precision::Strict` f32: a SIMT kernel (FFMA only, 128x128 blocks, 8x8
//!   accumulators a thread) fed by TMA from a producer warp on compute
//!   capability 9.0, by a multistage `cp.async` ring elsewhere; or the
//!   register-staged 64x64 kernel for products too small to fill the device;
//! - `Precision::Tf32` f32 on compute capability 9.0 (Hopper): warpgroup MMA
//!   (`wgmma`) fed by TMA, operands rounded to TF32 by the tensor maps; an
//!   operand not stored k-major is first packed by `gemm_pack_f32`;
//! - `Precision::Tf32x3` f32 on compute capability 9.0: the same kernel
//!   walking k three times over operands split by `gemm_split_f32` into
//!   TF32 hi and lo parts (`lo_A hi_B + hi_A lo_B + hi_A hi_B`), its
//!   tensor-core sums folded into f32 ones every 128 of k (H200, k = 4096:
//!   3.5e-7 / 6.2e-7 from DGEMM on U[-1,1) / U[0,1) operands against strict
//!   SGEMM's 1.15e-6 / 8.5e-7); the strict kernels serve it elsewhere;
//! - `Precision::Tf32` f32 elsewhere: tensor cores through `mma.sync`
//!   m16n8k8 (operands rounded to TF32, f32 sums), within the contract's Tf32
//!   tolerance;
//! - f64 (either precision: there is no looser f64 arithmetic): DMMA tensor
//!   cores (`mma.sync` m16n8k4 on sm_90, two m8n8k4 before; IEEE f64
//!   multiply-adds), or the plain tiled kernel for small products.
//!
//! [`GemmTile`] names every shape the kernel file provides; the default
//! (`Auto`) picks from the problem size. The host path uploads A and B as
//! stored (with their leading dimensions), keeps C packed (`ld = n`) on the
//! device, uploads it only when `beta != 0`, and writes back only the view's
//! elements, never the caller's gaps between rows.

use cudarc::driver::LaunchConfig;
use trident_core::{
    DenseGemm, DenseGemmDevice, DeviceMat, Error, GemmDims, GemmParams, MatMut, MatRef, Op,
    Precision, Result, Scalar, validate,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, Trace, count_u32, launch_kernel};

/// `kernels/dense_gemm.cu`.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "dense_gemm",
    source: include_str!("../kernels/dense_gemm.cu"),
    per_entry: true,
};

/// Entry points of `kernels/dense_gemm.cu` (the tidy test checks them):
/// every shape of [`SHAPES`] for the transpose cases it provides.
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "gemm_nn_64x64_f32",
    "gemm_nt_64x64_f32",
    "gemm_tn_64x64_f32",
    "gemm_tt_64x64_f32",
    "gemm_nn_f64",
    "gemm_nt_f64",
    "gemm_tn_f64",
    "gemm_tt_f64",
    "gemm_nn_s128x128k16s4_f32",
    "gemm_nt_s128x128k16s4_f32",
    "gemm_tn_s128x128k16s4_f32",
    "gemm_tt_s128x128k16s4_f32",
    "gemm_nn_s128x256k16s3_f32",
    "gemm_nt_s128x256k16s3_f32",
    "gemm_tn_s128x256k16s3_f32",
    "gemm_tt_s128x256k16s3_f32",
    "gemm_nn_s128x256k16s4_f32",
    "gemm_nn_s128x128k16s4w4_f32",
    "gemm_nn_s256x128k16s3_f32",
    "gemm_nn_t128x256k16s4_f32",
    "gemm_nt_t128x256k16s4_f32",
    "gemm_tn_t128x256k16s4_f32",
    "gemm_tt_t128x256k16s4_f32",
    "gemm_nn_t128x128k16s4_f32",
    "gemm_nt_t128x128k16s4_f32",
    "gemm_tn_t128x128k16s4_f32",
    "gemm_tt_t128x128k16s4_f32",
    "gemm_nn_t128x256k16s4z_f32",
    "gemm_nn_t256x128k32s3z_f32",
    "gemm_nn_t128x128k16s4b2_f32",
    "gemm_nn_t128x128k16s4b2z_f32",
    "gemm_nn_d128x128k16s3_f64",
    "gemm_nt_d128x128k16s3_f64",
    "gemm_tn_d128x128k16s3_f64",
    "gemm_tt_d128x128k16s3_f64",
    "gemm_nn_d128x128k32s3_f64",
    "gemm_nn_d64x128k16s4b2_f64",
    "gemm_nt_d64x128k16s4b2_f64",
    "gemm_tn_d64x128k16s4b2_f64",
    "gemm_tt_d64x128k16s4b2_f64",
    "gemm_nn_d128x64k16s3b2_f64",
    "gemm_nt_d128x64k16s3b2_f64",
    "gemm_tn_d128x64k16s3b2_f64",
    "gemm_tt_d128x64k16s3b2_f64",
    "gemm_wt128x256k32s4_f32",
    "gemm_wt128x128k32s6_f32",
    "gemm_wx128x128k32s6_f32",
    "gemm_st128x128k16s6_f32",
    "gemm_st128x256k16s4_f32",
    "gemm_st128x128k16s4b2_f32",
    "gemm_pack_f32",
    "gemm_split_f32",
    "gemm_scale_f32",
    "gemm_scale_f64",
];

/// GEMM kernel shapes the kernel file provides (benchmarks and tests force
/// one through [`Tuning::gemm_tile`](crate::Tuning::gemm_tile)). A shape serves only calls of its
/// class (strict f32, Tf32 f32, f64) and, for the variants marked NN-only,
/// calls without transposes; any other call keeps the automatic choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GemmTile {
    /// Pick from the problem size (the default).
    #[default]
    Auto,
    /// Strict f32, register-staged SIMT, 64 x 64 blocks (small products).
    T64x64,
    /// Strict f32, `cp.async` SIMT, 128 x 128 x 16, 4 stages, 8 x 8 a thread.
    S128x128K16S4,
    /// Strict f32, `cp.async` SIMT, 128 x 256 x 16, 3 stages, 8 x 16 a thread.
    S128x256K16S3,
    /// Strict f32, `cp.async` SIMT, 128 x 256 x 16, 4 stages (NN only).
    S128x256K16S4,
    /// Strict f32, `cp.async` SIMT, 128 x 128 x 16, 4 stages, 32 x 64 warp
    /// tiles (NN only).
    S128x128K16S4W4,
    /// Strict f32, `cp.async` SIMT, 256 x 128 x 16, 3 stages (NN only).
    S256x128K16S3,
    /// Tf32 tensor cores, 128 x 256 x 16, 4 stages, 8 warps of 64 x 64.
    Tc128x256K16S4,
    /// Tf32 tensor cores, 128 x 128 x 16, 4 stages, 4 warps of 64 x 64.
    Tc128x128K16S4,
    /// As `Tc128x256K16S4`, operands truncated to TF32 (NN only).
    Tc128x256K16S4Z,
    /// Tf32, 256 x 128 x 32, 3 stages, truncated operands (NN only).
    Tc256x128K32S3Z,
    /// Tf32, 128 x 128 x 16, 8 warps of 64 x 32, two blocks an SM (NN only).
    Tc128x128K16S4B2,
    /// As `Tc128x128K16S4B2`, truncated operands (NN only).
    Tc128x128K16S4B2Z,
    /// Tf32 warpgroup MMA (`wgmma`, compute capability 9.0 only) fed by TMA:
    /// 128 x 256 x 32, 4 stages, two consumer warpgroups and a producer warp.
    Wt128x256K32S4,
    /// As `Wt128x256K32S4`, 128 x 128 x 32, 6 stages.
    Wt128x128K32S6,
    /// `Precision::Tf32x3` on `wgmma` (compute capability 9.0 only): the
    /// `Wt128x128K32S6` kernel walking k three times over split operands,
    /// its tensor-core sums added into f32 ones every 128 of k.
    Wx128x128K32S6,
    /// Strict f32 SIMT fed by TMA (compute capability 9.0 only): 128 x 128 x
    /// 16, 6 stages, eight compute warps of 64 x 32 and a producer warp.
    St128x128K16S6,
    /// As `St128x128K16S6`, 128 x 256, 4 stages, warps of 64 x 64.
    St128x256K16S4,
    /// As `St128x128K16S6`, 4 stages, two blocks an SM.
    St128x128K16S4B2,
    /// f64, plain tiled SIMT kernel, 64 x 64 blocks.
    F64Simt,
    /// f64 DMMA tensor cores, 128 x 128 x 16, 3 stages, 8 warps of 64 x 32.
    D128x128K16S3,
    /// f64 DMMA, 128 x 128 x 32, 3 stages (NN only).
    D128x128K32S3,
    /// f64 DMMA, 64 x 128 x 16, 4 stages, 8 warps of 32 x 32, two blocks an
    /// SM.
    D64x128K16S4B2,
    /// f64 DMMA, 128 x 64 x 16, 3 stages, 4 warps of 64 x 32, two blocks an
    /// SM (the default for f64, cuBLAS's DGEMM shape on Hopper: the two
    /// blocks' barriers fall at different times, so one block's loads overlap
    /// the other's products, and each thread keeps all its registers).
    D128x64K16S3B2,
}

/// Which calls a shape serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Strict32,
    Tf32,
    /// `Precision::Tf32x3` f32 (served by the strict shapes where the device
    /// has no `wgmma`).
    Tf32x3,
    F64,
}

/// How a shape's shared memory is laid out (for the dynamic size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Smem {
    /// Static shared memory: nothing to pass.
    Static,
    /// `sgemm_async`: STAGES x BK x ((BM + 4) + (BN + 4)) floats.
    Simt,
    /// `tc_gemm`: the operands' stored layouts, padded (see [`tc_smem`]).
    Tensor,
    /// `wgt_gemm`: STAGES x (BM + BN) rows of 128 bytes and two mbarriers
    /// a stage, plus 1024 bytes to align the ring to the swizzle period.
    Tma,
    /// `st_gemm`: STAGES x BK x (BM + BN) floats and two mbarriers a stage,
    /// plus 128 bytes of alignment.
    TmaSimt,
}

/// One kernel shape of `kernels/dense_gemm.cu`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    tile: GemmTile,
    class: Class,
    /// Entry point between `gemm_{ops}_` and `_f32`/`_f64`; empty for `F64Simt`.
    suffix: &'static str,
    bm: usize,
    bn: usize,
    bk: usize,
    stages: usize,
    threads: u32,
    /// Whether all four transpose cases exist (else NN only).
    all_ops: bool,
    smem: Smem,
}

#[allow(clippy::too_many_arguments)]
const fn shape(
    tile: GemmTile,
    class: Class,
    suffix: &'static str,
    (bm, bn, bk, stages): (usize, usize, usize, usize),
    threads: u32,
    all_ops: bool,
    smem: Smem,
) -> Shape {
    Shape {
        tile,
        class,
        suffix,
        bm,
        bn,
        bk,
        stages,
        threads,
        all_ops,
        smem,
    }
}

use Class::{F64, Strict32, Tf32, Tf32x3};
use GemmTile as G;

/// Every shape, matching the entry macros of the kernel file.
const SHAPES: &[Shape] = &[
    shape(
        G::T64x64,
        Strict32,
        "64x64",
        (64, 64, 16, 2),
        256,
        true,
        Smem::Static,
    ),
    shape(
        G::S128x128K16S4,
        Strict32,
        "s128x128k16s4",
        (128, 128, 16, 4),
        256,
        true,
        Smem::Simt,
    ),
    shape(
        G::S128x256K16S3,
        Strict32,
        "s128x256k16s3",
        (128, 256, 16, 3),
        256,
        true,
        Smem::Simt,
    ),
    shape(
        G::S128x256K16S4,
        Strict32,
        "s128x256k16s4",
        (128, 256, 16, 4),
        256,
        false,
        Smem::Simt,
    ),
    shape(
        G::S128x128K16S4W4,
        Strict32,
        "s128x128k16s4w4",
        (128, 128, 16, 4),
        256,
        false,
        Smem::Simt,
    ),
    shape(
        G::S256x128K16S3,
        Strict32,
        "s256x128k16s3",
        (256, 128, 16, 3),
        256,
        false,
        Smem::Simt,
    ),
    shape(
        G::Tc128x256K16S4,
        Tf32,
        "t128x256k16s4",
        (128, 256, 16, 4),
        256,
        true,
        Smem::Tensor,
    ),
    shape(
        G::Tc128x128K16S4,
        Tf32,
        "t128x128k16s4",
        (128, 128, 16, 4),
        128,
        true,
        Smem::Tensor,
    ),
    shape(
        G::Tc128x256K16S4Z,
        Tf32,
        "t128x256k16s4z",
        (128, 256, 16, 4),
        256,
        false,
        Smem::Tensor,
    ),
    shape(
        G::Tc256x128K32S3Z,
        Tf32,
        "t256x128k32s3z",
        (256, 128, 32, 3),
        256,
        false,
        Smem::Tensor,
    ),
    shape(
        G::Tc128x128K16S4B2,
        Tf32,
        "t128x128k16s4b2",
        (128, 128, 16, 4),
        256,
        false,
        Smem::Tensor,
    ),
    shape(
        G::Tc128x128K16S4B2Z,
        Tf32,
        "t128x128k16s4b2z",
        (128, 128, 16, 4),
        256,
        false,
        Smem::Tensor,
    ),
    shape(
        G::Wt128x256K32S4,
        Tf32,
        "wt128x256k32s4",
        (128, 256, 32, 4),
        288,
        true,
        Smem::Tma,
    ),
    shape(
        G::Wt128x128K32S6,
        Tf32,
        "wt128x128k32s6",
        (128, 128, 32, 6),
        288,
        true,
        Smem::Tma,
    ),
    shape(
        G::Wx128x128K32S6,
        Tf32x3,
        "wx128x128k32s6",
        (128, 128, 32, 6),
        288,
        true,
        Smem::Tma,
    ),
    shape(
        G::St128x128K16S6,
        Strict32,
        "st128x128k16s6",
        (128, 128, 16, 6),
        288,
        true,
        Smem::TmaSimt,
    ),
    shape(
        G::St128x256K16S4,
        Strict32,
        "st128x256k16s4",
        (128, 256, 16, 4),
        288,
        true,
        Smem::TmaSimt,
    ),
    shape(
        G::St128x128K16S4B2,
        Strict32,
        "st128x128k16s4b2",
        (128, 128, 16, 4),
        288,
        true,
        Smem::TmaSimt,
    ),
    shape(G::F64Simt, F64, "", (64, 64, 8, 1), 256, true, Smem::Static),
    shape(
        G::D128x128K16S3,
        F64,
        "d128x128k16s3",
        (128, 128, 16, 3),
        256,
        true,
        Smem::Tensor,
    ),
    shape(
        G::D128x128K32S3,
        F64,
        "d128x128k32s3",
        (128, 128, 32, 3),
        256,
        false,
        Smem::Tensor,
    ),
    shape(
        G::D64x128K16S4B2,
        F64,
        "d64x128k16s4b2",
        (64, 128, 16, 4),
        256,
        true,
        Smem::Tensor,
    ),
    shape(
        G::D128x64K16S3B2,
        F64,
        "d128x64k16s3b2",
        (128, 64, 16, 3),
        128,
        true,
        Smem::Tensor,
    ),
];

/// Dynamic shared memory of `tc_gemm` in bytes: per stage, A as stored
/// (`[BM][BK + PM]`, transposed `[BK][BM + PK]`) and B as stored (`[BK][BN + PK]`,
/// transposed `[BN][BK + PM]`), with the kernel's paddings `Mma<T>::PM`/`PK`
/// (f32: 4 and 8 elements; f64: 4 and 4).
fn tc_smem(s: &Shape, elem: usize, ta: bool, tb: bool) -> usize {
    let (pm, pk) = if elem == 4 { (4, 8) } else { (4, 4) };
    let a = if ta {
        s.bk * (s.bm + pk)
    } else {
        s.bm * (s.bk + pm)
    };
    let b = if tb {
        s.bn * (s.bk + pm)
    } else {
        s.bk * (s.bn + pk)
    };
    s.stages * (a + b) * elem
}

impl Shape {
    fn smem_bytes(&self, elem: usize, ta: bool, tb: bool) -> usize {
        match self.smem {
            Smem::Static => 0,
            Smem::Simt => self.stages * self.bk * (self.bm + 4 + self.bn + 4) * 4,
            Smem::Tensor => tc_smem(self, elem, ta, tb),
            Smem::TmaSimt => self.stages * ((self.bm + self.bn) * self.bk * 4 + 16) + 128,
            Smem::Tma => self.stages * ((self.bm + self.bn) * 128 + 16) + 1024,
        }
    }
}

fn find(tile: GemmTile) -> Option<&'static Shape> {
    SHAPES.iter().find(|s| s.tile == tile)
}

impl CudaBackend {
    /// The shape this handle's [`Tuning`](crate::Tuning) forces (`Auto`
    /// when none).
    pub fn gemm_tile(&self) -> GemmTile {
        self.tuning.gemm_tile
    }

    fn pick_shape(&self, class: Class, nn: bool, m: usize, n: usize) -> Result<&'static Shape> {
        let wgmma = self.has_wgmma();
        if let Some(s) = find(self.gemm_tile())
            && s.class == class
            && (s.all_ops || nn)
            && (!matches!(s.smem, Smem::Tma | Smem::TmaSimt) || wgmma)
        {
            return Ok(s);
        }
        let tiles = |bm: usize, bn: usize| m.div_ceil(bm) * n.div_ceil(bn);
        let sms = self.sm_count() as usize;
        // A 128x128 SIMT block needs about a wave of blocks before it beats the
        // 64x64 one; the tensor-core shapes are fastest at any size that
        // gives them a block per SM, and the smaller of them otherwise.
        let tile = match class {
            Strict32 if wgmma && tiles(128, 128) >= sms => G::St128x128K16S4B2,
            Strict32 if tiles(128, 128) >= sms => G::S128x128K16S4,
            Strict32 => G::T64x64,
            Tf32 if wgmma && tiles(128, 256) >= sms => G::Wt128x256K32S4,
            Tf32 if wgmma => G::Wt128x128K32S6,
            Tf32x3 => G::Wx128x128K32S6,
            Tf32 if tiles(128, 256) >= sms => G::Tc128x256K16S4,
            Tf32 => G::Tc128x128K16S4,
            F64 if tiles(128, 64) >= sms / 2 => G::D128x64K16S3B2,
            F64 => G::F64Simt,
        };
        find(tile).ok_or_else(|| Error::Backend(format!("no GEMM kernel shape {tile:?}").into()))
    }
}

fn op_char(op: Op) -> char {
    if op.is_transposed() { 't' } else { 'n' }
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
        if p.alpha == T::ZERO || d.k == 0 {
            return self.launch_scale(p.beta, d, c, ldc);
        }
        let s = self.gemm_shape(p, d)?;
        self.launch_gemm_as(s, p, d, a, lda, b, ldb, c, ldc)
    }

    /// The kernel shape a product of these dimensions runs with.
    fn gemm_shape<T: Scalar>(&self, p: &GemmParams<T>, d: GemmDims) -> Result<&'static Shape> {
        let (ta, tb) = (p.op_a.is_transposed(), p.op_b.is_transposed());
        let class = match (T::NAME, p.precision) {
            ("f32", Precision::Strict) => Class::Strict32,
            ("f32", Precision::Tf32) => Class::Tf32,
            // Without wgmma the strict kernels serve it: f32 accuracy, which
            // is what the mode promises.
            ("f32", Precision::Tf32x3) if self.has_wgmma() => Class::Tf32x3,
            ("f32", _) => Class::Strict32,
            _ => Class::F64,
        };
        self.pick_shape(class, !ta && !tb, d.m, d.n)
    }

    /// [`CudaBackend::launch_gemm`] of a product (alpha != 0, k > 0) with
    /// shape `s`: a pipelined host call runs every block of rows with the
    /// shape of the whole product, so its rounding is the whole call's.
    #[allow(clippy::too_many_arguments)]
    fn launch_gemm_as<T: Scalar>(
        &self,
        s: &'static Shape,
        p: &GemmParams<T>,
        d: GemmDims,
        a: u64,
        lda: usize,
        b: u64,
        ldb: usize,
        c: u64,
        ldc: usize,
    ) -> Result<()> {
        let (ta, tb) = (p.op_a.is_transposed(), p.op_b.is_transposed());
        if matches!(s.smem, Smem::Tma | Smem::TmaSimt) {
            let (alpha, beta) = (p.alpha.to_f64() as f32, p.beta.to_f64() as f32);
            return self.launch_tma(s, alpha, beta, d, (a, lda, ta), (b, ldb, tb), (c, ldc));
        }
        let (m, n, k) = (to_i32("m", d.m)?, to_i32("n", d.n)?, to_i32("k", d.k)?);
        let (lda, ldb, ldc) = (lda as i64, ldb as i64, ldc as i64);
        let ops = format!("{}{}", op_char(p.op_a), op_char(p.op_b));
        let elem = std::mem::size_of::<T>();
        let name = if s.tile == GemmTile::F64Simt {
            format!("gemm_{ops}_f64")
        } else {
            format!("gemm_{ops}_{}_{}", s.suffix, T::NAME)
        };
        // The plain f64 kernel indexes a 2-D grid; every other one walks a
        // 1-D grid in grouped order.
        let grid = if s.tile == GemmTile::F64Simt {
            (
                count_u32("gemm blocks", d.n.div_ceil(64))?,
                count_u32("gemm blocks", d.m.div_ceil(64))?,
                1,
            )
        } else {
            (
                count_u32("gemm blocks", d.m.div_ceil(s.bm) * d.n.div_ceil(s.bn))?,
                1,
                1,
            )
        };
        let cfg = LaunchConfig {
            grid_dim: grid,
            block_dim: (s.threads, 1, 1),
            shared_mem_bytes: count_u32("gemm shared memory", s.smem_bytes(elem, ta, tb))?,
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

impl CudaBackend {
    /// `C <- beta C` over the `m x n` view (`beta == 0` writes zeros without
    /// reading C): the whole call when alpha is 0 or k is 0. A and B take no
    /// part, so an overflowing `A B` cannot turn C into NaN (`0 * inf`), which
    /// the product kernels would do by scaling their accumulators.
    fn launch_scale<T: Scalar>(&self, beta: T, d: GemmDims, c: u64, ldc: usize) -> Result<()> {
        let (m, n) = (to_i32("m", d.m)?, to_i32("n", d.n)?);
        let ldc = ldc as i64;
        let cfg = LaunchConfig {
            grid_dim: (
                count_u32("gemm blocks", (d.m * d.n).div_ceil(256).min(65_535))?,
                1,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let name = format!("gemm_scale_{}", T::NAME);
        // The arguments match gemm_scale_*'s signature (int x2, scalar, ptr,
        // i64); `c` covers the view's (m-1)*ldc+n elements (checked by the
        // callers).
        if T::NAME == "f32" {
            let beta = beta.to_f64() as f32;
            launch_kernel!(self, &KERNEL, &name, cfg, &m, &n, &beta, &c, &ldc);
        } else {
            let beta = beta.to_f64();
            launch_kernel!(self, &KERNEL, &name, cfg, &m, &n, &beta, &c, &ldc);
        }
        Ok(())
    }
}

/// A `CUtensorMap` passed to a kernel by value (`__grid_constant__`).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct TmaMap([u64; 16]);

// SAFETY: plain bytes, laid out as the kernel's `TmaMap` (128 bytes, 64-byte
// aligned), which is what the driver copies into the parameter space.
unsafe impl cudarc::driver::DeviceRepr for TmaMap {}

impl TmaMap {
    /// The tensor map of a row-major f32 matrix of `(cols, rows)` (cols
    /// contiguous) at device address `ptr` (row stride `ld` elements, a
    /// multiple of 4; `ptr` 16-byte aligned), read in boxes of `(box_cols,
    /// box_rows)`; elements past the matrix read as zero. `tf32` (the
    /// `wgmma` operands): 32-column boxes land in the 128-byte swizzle the
    /// descriptors name, and the elements are TF32, so the copy rounds each
    /// f32 to nearest TF32 (measured: C within 2.6e-4 of strict SGEMM, as
    /// cuBLAS TF32's); else boxes land unswizzled with the bits as stored.
    fn new(
        ptr: u64,
        (cols, rows): (usize, usize),
        ld: usize,
        (box_cols, box_rows): (usize, usize),
        tf32: bool,
    ) -> Result<Self> {
        use cudarc::driver::sys;
        let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
        let dims = [cols.max(1) as u64, rows.max(1) as u64];
        let strides = [ld.max(4) as u64 * 4];
        let boxes = [box_cols as u32, box_rows as u32];
        let elem = [1u32, 1];
        let (dtype, swizzle) = if tf32 {
            (
                sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
                sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            )
        } else {
            (
                sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            )
        };
        // SAFETY: every pointer is to a local array of the rank (2) the call
        // is told, the map is written by the driver, and the global address
        // is a live device allocation the caller checked (16-byte aligned,
        // `rows` rows of `ld` elements).
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                dtype,
                2,
                ptr as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                elem.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        r.result().map_err(|e| {
            Error::Backend(
                format!("cuTensorMapEncodeTiled ({rows} x {cols}, ld {ld}): {e:?}").into(),
            )
        })?;
        // SAFETY: initialised by the successful call above.
        let map = unsafe { map.assume_init() };
        Ok(TmaMap(map.opaque))
    }
}

/// Rows from a split operand's hi rows to its lo rows: `rows` rounded up to
/// whole 256-row boxes, so no box of hi rows reads lo ones.
fn split_rows(rows: usize) -> Result<usize> {
    rows.max(1)
        .checked_next_multiple_of(256)
        .filter(|&r| r <= i32::MAX as usize / 2)
        .ok_or(Error::TooLarge {
            field: "rows of a split Tf32x3 operand",
            value: rows as u128,
            limit: (i32::MAX / 2) as u128,
        })
}

/// Leading dimension of a packed k-major TF32 operand: K rounded up to whole
/// 16-byte chunks (the `wgmma` kernels copy 16 bytes at a time).
fn packed_ld(k: usize) -> usize {
    k.next_multiple_of(4).max(4)
}

impl CudaBackend {
    /// Queues a product fed by TMA. `wgt_gemm` (Tf32) reads both operands
    /// k-major (A as M x K, B as B^T, N x K) through TF32 tensor maps, which
    /// round them as they load; `st_gemm` (strict) reads A^T (K x M) and B
    /// (K x N) through f32 ones. An operand stored as its kernel reads it,
    /// with 16-byte aligned rows, is read in place; otherwise it is first
    /// laid out by `gemm_pack_f32` into a temporary buffer freed in stream
    /// order after the product.
    fn launch_tma(
        &self,
        s: &Shape,
        alpha: f32,
        beta: f32,
        d: GemmDims,
        (a, lda, ta): (u64, usize, bool),
        (b, ldb, tb): (u64, usize, bool),
        (c, ldc): (u64, usize),
    ) -> Result<()> {
        let in_place = |ptr: u64, ld: usize| ptr.is_multiple_of(16) && ld.is_multiple_of(4);
        let tf32 = s.smem == Smem::Tma;
        let split = s.class == Class::Tf32x3;
        // What each kernel reads: rows x cols with cols contiguous, and
        // whether op(X) is stored that way (else it is laid out first).
        let (a_rows, a_cols, a_stored) = if tf32 {
            (d.m, d.k, !ta)
        } else {
            (d.k, d.m, ta)
        };
        let (b_rows, b_cols, b_stored) = if tf32 {
            (d.n, d.k, tb)
        } else {
            (d.k, d.n, !tb)
        };
        // An operand as its kernel reads it: in place, or laid out into a
        // temporary buffer (kept alive until the launch is queued); split
        // into hi and lo rows for Tf32x3, the lo rows `lo` rows below.
        let operand = |x: u64, ld: usize, rows: usize, cols: usize, stored: bool, what: &str| {
            if split {
                let lo = split_rows(rows)?;
                let buf = self.pack_kmajor(rows, cols, (x, ld), !stored, Some(lo), what)?;
                let ptr = buf.ptr();
                return Ok((Some(buf), ptr, packed_ld(cols), lo));
            }
            if stored && in_place(x, ld) {
                return Ok((None, x, ld, 0));
            }
            let buf = self.pack_kmajor(rows, cols, (x, ld), !stored, None, what)?;
            let ptr = buf.ptr();
            Ok::<_, Error>((Some(buf), ptr, packed_ld(cols), 0))
        };
        let (_pa, a, lda, a_lo) =
            operand(a, lda, a_rows, a_cols, a_stored, "gemm A laid out for TMA")?;
        let (_pb, b, ldb, b_lo) =
            operand(b, ldb, b_rows, b_cols, b_stored, "gemm B laid out for TMA")?;
        // A split operand's map spans its hi and lo rows.
        let (a_rows, b_rows) = if split {
            (2 * a_lo, 2 * b_lo)
        } else {
            (a_rows, b_rows)
        };
        let (m, n, k) = (to_i32("m", d.m)?, to_i32("n", d.n)?, to_i32("k", d.k)?);
        let cfg = LaunchConfig {
            grid_dim: (
                count_u32("gemm blocks", d.m.div_ceil(s.bm) * d.n.div_ceil(s.bn))?,
                1,
                1,
            ),
            block_dim: (s.threads, 1, 1),
            shared_mem_bytes: count_u32("gemm shared memory", s.smem_bytes(4, false, true))?,
        };
        let name = format!("gemm_{}_f32", s.suffix);
        let (amap, bmap) = if tf32 {
            (
                TmaMap::new(a, (a_cols, a_rows), lda, (32, s.bm), true)?,
                TmaMap::new(b, (b_cols, b_rows), ldb, (32, s.bn), true)?,
            )
        } else {
            (
                TmaMap::new(a, (a_cols, a_rows), lda, (s.bm, s.bk), false)?,
                TmaMap::new(b, (b_cols, b_rows), ldb, (s.bn, s.bk), false)?,
            )
        };
        let ldc = ldc as i64;
        if split {
            let (a_lo, b_lo) = (to_i32("m", a_lo)?, to_i32("n", b_lo)?);
            // Arguments as the `gemm_wx...` entries: int x3, float, two
            // tensor maps by value, int x2, float, ptr, i64.
            launch_kernel!(
                self, &KERNEL, &name, cfg, &m, &n, &k, &alpha, &amap, &bmap, &a_lo, &b_lo, &beta,
                &c, &ldc
            );
            return Ok(());
        }
        // Arguments as the entries of `wgt_gemm` and `st_gemm`: int x3,
        // float, two tensor maps by value, float, ptr, i64.
        launch_kernel!(
            self, &KERNEL, &name, cfg, &m, &n, &k, &alpha, &amap, &bmap, &beta, &c, &ldc
        );
        Ok(())
    }

    /// A new `rows x packed_ld(k)` buffer holding `op(X)` k-major, zero past
    /// k: X is stored `rows x k` (`trans == false`) or `k x rows`
    /// (`trans == true`) at `x` with leading dimension `ldx`. With
    /// `split == Some(lo)` (Tf32x3) the buffer has `2 lo` rows: each value's
    /// TF32 hi part in rows `[0, rows)`, its lo part `lo` rows below, zeros
    /// between.
    fn pack_kmajor(
        &self,
        rows: usize,
        k: usize,
        (x, ldx): (u64, usize),
        trans: bool,
        split: Option<usize>,
        what: &str,
    ) -> Result<CudaBuffer<f32>> {
        let ldp = packed_ld(k);
        let (written, entry) = match split {
            Some(lo) => (lo, "gemm_split_f32"),
            None => (rows, "gemm_pack_f32"),
        };
        let stored = if split.is_some() { 2 * written } else { rows };
        let len = stored.checked_mul(ldp).ok_or(Error::TooLarge {
            field: "packed TF32 operand",
            value: stored as u128 * ldp as u128,
            limit: usize::MAX as u128,
        })?;
        let out = self.alloc::<f32>(len, what)?;
        let (r, kk, ldp32) = (to_i32("rows", rows)?, to_i32("k", k)?, to_i32("k", ldp)?);
        let rp = to_i32("rows", written)?;
        let (ldx, tr, po) = (ldx.max(1) as i64, i32::from(trans), out.ptr());
        let cfg = LaunchConfig {
            grid_dim: (
                count_u32("pack blocks", ldp.div_ceil(32))?,
                count_u32("pack blocks", written.div_ceil(32).clamp(1, 65535))?,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // Arguments as the `PACK_ENTRY` kernels (int x3, ptr, i64, int x2,
        // ptr); `out` holds `stored` rows of ldp floats.
        launch_kernel!(
            self, &KERNEL, entry, cfg, &r, &kk, &ldp32, &x, &ldx, &tr, &rp, &po
        );
        Ok(out)
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
        let mut tr = Trace::new("gemm");
        let d = validate::gemm_dims(p, &a, &b, &c)?;
        if d.m == 0 || d.n == 0 {
            return Ok(());
        }
        if let Some(rows) = self.gemm_block_rows(p, d, &b, &c)? {
            return self.gemm_pipelined(p, d, a, b, c, rows);
        }
        // alpha == 0 or k == 0: C <- beta C, and A and B (still checked
        // below) are not uploaded.
        let product = p.alpha != T::ZERO && d.k != 0;
        let na = if product {
            needed(a.rows(), a.cols(), a.ld())
        } else {
            0
        };
        let nb = if product {
            needed(b.rows(), b.cols(), b.ld())
        } else {
            0
        };
        // The scan of the values for NaN/inf runs beside the uploads (both
        // are bound by host memory, on different threads when large); its
        // error, if any, is reported first, and nothing has been computed by
        // then.
        let (da, db) = crate::device::check_beside(
            (na + nb) * std::mem::size_of::<T>(),
            || validate::gemm_finite(p, &a, &b, &c.as_ref()),
            || {
                let (da, db) = (
                    self.alloc::<T>(na, "gemm A")?,
                    self.alloc::<T>(nb, "gemm B")?,
                );
                let (ha, hb) = (&a.data()[..na], &b.data()[..nb]);
                // SAFETY: each host slice fills the buffer just allocated for
                // it, which nothing else uses; one staged copy moves both.
                unsafe {
                    self.upload_spans(&[
                        (bytemuck::cast_slice(ha), da.ptr()),
                        (bytemuck::cast_slice(hb), db.ptr()),
                    ])
                }?;
                Ok((da, db))
            },
        )?;
        tr.lap(self, || {
            format!("check values + upload A, B ({} x {} x {})", d.m, d.n, d.k)
        })?;
        let mut dc = self.alloc::<T>(d.m * d.n, "gemm C")?;
        tr.lap(self, || "alloc C".into())?;
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
        tr.lap(self, || "kernel".into())?;
        if packed {
            self.download_into(&dc, &mut c.data_mut()[..d.m * d.n])?;
            return tr.lap(self, || "download C".into());
        }
        let out = self.download_vec(&dc)?;
        for (i, row) in out.chunks_exact(d.n).enumerate() {
            c.row_mut(i).copy_from_slice(row);
        }
        Ok(())
    }
}

/// Host products that run as a pipeline: at least this many bytes of A and
/// C to move (below it the copies are too short to hide much).
const PIPELINE_MIN_BYTES: usize = 32 << 20;
/// How a pipelined product cuts the rows of C for overlap.
const GEMM_OVERLAP: crate::pipeline::Overlap = crate::pipeline::Overlap {
    chunks: 8,
    min_items: 256,
};

impl CudaBackend {
    /// Rows of C per block when a host product runs as a pipeline: the
    /// product is large, `beta == 0` (no C goes up), A is not transposed
    /// (a block of C needs a block of A's rows) and C is packed (a block is
    /// one range of the caller's memory). `None`: the call runs whole.
    fn gemm_block_rows<T: Scalar>(
        &self,
        p: &GemmParams<T>,
        d: GemmDims,
        b: &MatRef<'_, T>,
        c: &MatMut<'_, T>,
    ) -> Result<Option<usize>> {
        let size = std::mem::size_of::<T>();
        let product = p.alpha != T::ZERO && d.k != 0;
        if !product
            || p.beta != T::ZERO
            || p.op_a.is_transposed()
            || c.ld() != d.n
            || (d.m * (d.k + d.n)).saturating_mul(size) < PIPELINE_MIN_BYTES
        {
            return Ok(None);
        }
        let s = self.gemm_shape(p, d)?;
        let fixed = (needed(b.rows(), b.cols(), b.ld()) * size) as u64;
        let per_row = (2 * (d.k + d.n) * size) as u64;
        let rows =
            crate::pipeline::chunk_items(d.m, fixed, per_row, self.memory_budget()?, GEMM_OVERLAP)?;
        // Whole tiles of the kernel's shape per block where the budget
        // allows one (edge tiles give the same values, only less speed).
        let rows = if rows >= s.bm {
            rows / s.bm * s.bm
        } else {
            rows
        };
        Ok((rows < d.m).then_some(rows))
    }

    /// A host product as a pipeline (see [`crate::pipeline`]): B goes up
    /// whole, then blocks of `rows` rows of A go up while the previous block
    /// of C is computed and the one before comes down straight into the
    /// caller's C. Every block runs with the kernel shape of the whole
    /// product, and a row of C is computed from its row of A and all of B
    /// alone, so C is the whole call's, bit for bit. The values of A and B
    /// are scanned beside the first uploads; C is written only after the
    /// scan passed.
    fn gemm_pipelined<T: Scalar>(
        &self,
        p: &GemmParams<T>,
        d: GemmDims,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
        rows: usize,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let s = self.gemm_shape(p, d)?;
        let nb = needed(b.rows(), b.cols(), b.ld());
        let db = self.alloc::<T>(nb, "gemm B")?;
        let block = |what| self.alloc::<T>(rows * d.k, what);
        let da = [block("gemm A block")?, block("gemm A block")?];
        let out = |what| self.alloc::<T>(rows * d.n, what);
        let dc = [out("gemm C block")?, out("gemm C block")?];
        let lanes = self.lanes()?;
        let blocks = d.m.div_ceil(rows);
        let span = |i: usize| (i * rows, rows.min(d.m - i * rows));
        let cp = c.data_mut()[..d.m * d.n].as_mut_ptr();
        let none = MatRef::dense(&[][..], 0, 0)?;
        tracing::debug!(m = d.m, rows, blocks, "gemm host call as a pipeline");
        let upload = |i: usize| -> Result<()> {
            let (r0, len) = span(i);
            if i >= 2 {
                // The set's previous block must be read before it is refilled.
                lanes
                    .up
                    .wait(&lanes.computed[i % 2])
                    .map_err(crate::error::driver_error("ordering a gemm upload"))?;
            }
            self.upload_rows(&lanes.up, &a, (r0, len), da[i % 2].ptr(), None)
        };
        use crate::pipeline::Laps as L;
        let mut laps = L::new();
        // The value scan runs beside the first copies (scanning first, alone,
        // took gemm-4096 from 12.8 to 19.1 ms on the H200 machine); C is
        // written only after it passed.
        std::thread::scope(|sc| -> Result<()> {
            let mut scan = Some(sc.spawn(|| validate::gemm_finite(p, &a, &b, &none)));
            let hb: &[u8] = bytemuck::cast_slice(&b.data()[..nb]);
            L::time(&mut laps.up, || {
                crate::staging::htod_many(&self.staging, &lanes.up, &[(hb, db.ptr())])?;
                upload(0)
            })?;
            // Block `i + 1` goes up and is queued before block `i` comes down,
            // so the device computes one block while the host moves others.
            let launch = |i: usize| -> Result<()> {
                let dims = GemmDims { m: span(i).1, ..d };
                let (ap, cb) = (da[i % 2].ptr(), dc[i % 2].ptr());
                self.launch_gemm_as(s, p, dims, ap, d.k, db.ptr(), b.ld().max(1), cb, d.n)?;
                self.mark_computed(&lanes, i % 2)
            };
            launch(0)?;
            for i in 0..blocks {
                let (r0, len) = span(i);
                let cb = dc[i % 2].ptr();
                if i + 1 < blocks {
                    L::time(&mut laps.up, || upload(i + 1))?;
                    launch(i + 1)?;
                }
                if let Some(h) = scan.take() {
                    // A scan thread cannot panic; if one did, scan again here.
                    L::time(&mut laps.host, || {
                        h.join()
                            .unwrap_or_else(|_| validate::gemm_finite(p, &a, &b, &none))
                    })?;
                }
                lanes
                    .down
                    .wait(&lanes.computed[i % 2])
                    .map_err(crate::error::driver_error("ordering a gemm download"))?;
                let bytes = len * d.n * size;
                // SAFETY: rows r0..r0 + len of the caller's packed C are
                // `bytes` bytes inside `c`, which this call holds exclusively;
                // the block buffer holds that many.
                L::time(&mut laps.down, || unsafe {
                    crate::staging::dtoh_many(
                        &self.staging,
                        &lanes.down,
                        &[(cb, cp.wrapping_add(r0 * d.n).cast::<u8>(), bytes)],
                    )
                })?;
            }
            Ok(())
        })?;
        laps.log("gemm", blocks);
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
