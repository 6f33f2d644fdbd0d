//! DenseGemm for [`WgpuBackend`]: `shaders/dense_gemm.wgsl`, f32 only.
//!
//! The host path uploads A and B as stored (with their leading dimensions),
//! keeps C packed (`ld = n`) on the device, uploads it only when `beta != 0`,
//! and writes back only the view's elements, never the caller's gaps between
//! rows. `alpha == 0` (or `k == 0`) runs the scaling kernel, which reads
//! neither A nor B; `beta == 0` never reads C.

use trident_core::{
    DenseGemm, DenseGemmDevice, DeviceMat, Error, GemmDims, GemmParams, MatMut, MatRef, Op, Result,
    Scalar, validate,
};

use crate::buffer::WgpuBuffer;
use crate::pipeline::{Arg, Bind, Kernel, Shader};
use crate::{WgpuBackend, as_f32, as_f32_mut, require_f32};

/// `shaders/dense_gemm.wgsl`.
static SHADER: Shader = Shader {
    name: "dense_gemm",
    parts: &[include_str!("../shaders/dense_gemm.wgsl")],
};

const BINDS: &[Bind] = &[Bind::Read, Bind::Read, Bind::ReadWrite, Bind::Uniform];

static GEMM: Kernel = Kernel {
    shader: &SHADER,
    entry: "gemm_f32",
    bindings: BINDS,
};

static SCALE: Kernel = Kernel {
    shader: &SHADER,
    entry: "gemm_scale_f32",
    bindings: BINDS,
};

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[&GEMM, &SCALE];

/// Rows and columns of C one workgroup of `gemm_f32` computes.
const TILE: usize = 128;

/// The uniform block of the shader (`GemmParams` there).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    flags: u32,
    _pad: u32,
    alpha: f32,
    beta: f32,
    _pad2: [f32; 2],
}

fn to_u32(field: &'static str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::TooLarge {
        field,
        value: v as u128,
        limit: u32::MAX as u128,
    })
}

/// Elements a `rows x cols` view with leading dimension `ld` spans.
fn needed(rows: usize, cols: usize, ld: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        Some(0)
    } else {
        (rows - 1).checked_mul(ld)?.checked_add(cols)
    }
}

impl WgpuBackend {
    /// Records and submits the kernel for checked dims on device buffers.
    #[allow(clippy::too_many_arguments)]
    fn launch_gemm(
        &self,
        alpha: f32,
        beta: f32,
        ops: (Op, Op),
        d: GemmDims,
        a: (&WgpuBuffer<f32>, usize),
        b: (&WgpuBuffer<f32>, usize),
        c: (&WgpuBuffer<f32>, usize),
    ) -> Result<()> {
        if d.m == 0 || d.n == 0 {
            return Ok(());
        }
        // Element indices are u32 in the shader.
        for (field, buf) in [("a", a.0), ("b", b.0), ("c", c.0)] {
            to_u32(field, buf.len())?;
        }
        let scale_only = alpha == 0.0 || d.k == 0;
        let flags = u32::from(ops.0 == Op::T)
            | (u32::from(ops.1 == Op::T) << 1)
            | (u32::from(beta == 0.0) << 2);
        let params = self.uniform(&Params {
            m: to_u32("m", d.m)?,
            n: to_u32("n", d.n)?,
            k: to_u32("k", d.k)?,
            lda: to_u32("lda", a.1)?,
            ldb: to_u32("ldb", b.1)?,
            ldc: to_u32("ldc", c.1)?,
            flags,
            _pad: 0,
            alpha,
            beta,
            _pad2: [0.0; 2],
        });
        let args = [
            Arg::buf(a.0),
            Arg::buf(b.0),
            Arg::buf(c.0),
            Arg::raw(&params),
        ];
        let mut enc = self.encoder("dense_gemm");
        if scale_only {
            let groups = [
                to_u32("n / 16", d.n.div_ceil(16))?,
                to_u32("m / 16", d.m.div_ceil(16))?,
                1,
            ];
            enc.dispatch(&SCALE, &args, groups)?;
        } else {
            let groups = [
                to_u32("n tiles", d.n.div_ceil(TILE))?,
                to_u32("m tiles", d.m.div_ceil(TILE))?,
                1,
            ];
            enc.dispatch(&GEMM, &args, groups)?;
        }
        enc.submit();
        Ok(())
    }
}

impl<T: Scalar> DenseGemm<T> for WgpuBackend {
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        mut c: MatMut<'_, T>,
    ) -> Result<()> {
        require_f32::<T>("DenseGemm")?;
        let d = validate::gemm(p, &a, &b, &c)?;
        if d.m == 0 || d.n == 0 {
            return Ok(());
        }
        let (alpha, beta) = (p.alpha.to_f64() as f32, p.beta.to_f64() as f32);
        self.scoped("dense_gemm", || {
            let reads_ab = alpha != 0.0 && d.k != 0;
            let na = if reads_ab {
                needed(a.rows(), a.cols(), a.ld()).unwrap_or(0)
            } else {
                0
            };
            let nb = if reads_ab {
                needed(b.rows(), b.cols(), b.ld()).unwrap_or(0)
            } else {
                0
            };
            let da = self.upload_named(&as_f32(a.data())?[..na], "gemm A")?;
            let db = self.upload_named(&as_f32(b.data())?[..nb], "gemm B")?;
            let dc = if beta != 0.0 {
                let mut packed = Vec::with_capacity(d.m * d.n);
                for i in 0..d.m {
                    packed.extend_from_slice(as_f32(c.as_ref().row(i))?);
                }
                self.upload_named(&packed, "gemm C")?
            } else {
                self.alloc::<f32>(d.m * d.n, "gemm C")?
            };
            self.launch_gemm(
                alpha,
                beta,
                (p.op_a, p.op_b),
                d,
                (&da, a.ld().max(1)),
                (&db, b.ld().max(1)),
                (&dc, d.n),
            )?;
            let out = self.download_vec(&dc)?;
            for (i, row) in out.chunks_exact(d.n).enumerate() {
                as_f32_mut(c.row_mut(i))?.copy_from_slice(row);
            }
            Ok(())
        })
    }
}

impl<T: Scalar> DenseGemmDevice<T> for WgpuBackend {
    fn gemm_device(
        &self,
        p: &GemmParams<T>,
        a: &DeviceMat<WgpuBuffer<T>>,
        b: &DeviceMat<WgpuBuffer<T>>,
        c: &mut DeviceMat<WgpuBuffer<T>>,
    ) -> Result<()> {
        require_f32::<T>("DenseGemm")?;
        let dims = trident_core::validate::gemm_device(self, p, a, b, c)?;
        self.scoped("dense_gemm", || {
            let (fa, fb, fc) = (
                a.buf.cast_ref::<f32>()?,
                b.buf.cast_ref::<f32>()?,
                c.buf.cast_ref::<f32>()?,
            );
            self.launch_gemm(
                p.alpha.to_f64() as f32,
                p.beta.to_f64() as f32,
                (p.op_a, p.op_b),
                dims,
                (&fa, a.ld.max(1)),
                (&fb, b.ld.max(1)),
                (&fc, c.ld.max(1)),
            )
        })
    }
}
