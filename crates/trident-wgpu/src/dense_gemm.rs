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

/// `shaders/dense_gemm.wgsl` with the prefix that makes one variant of it.
macro_rules! variant {
    ($shader:ident, $kernel:ident, $name:literal, $prefix:literal) => {
        static $shader: Shader = Shader {
            name: $name,
            parts: &[$prefix, include_str!("../shaders/dense_gemm.wgsl")],
        };
        static $kernel: Kernel = Kernel {
            shader: &$shader,
            entry: "gemm_f32",
            bindings: BINDS,
        };
    };
}

const BINDS: &[Bind] = &[Bind::Read, Bind::Read, Bind::ReadWrite, Bind::Uniform];

// Kernel variants: op(A), op(B) (n = as stored, t = transposed), k-tile depth
// and workgroup-memory buffers. Modules are built on first use.
variant!(
    S_NN16,
    K_NN16,
    "dense_gemm_nn_k16",
    "const TA = false; const TB = false; const BK = 16u; const NBUF = 2u;\n"
);
variant!(
    S_NT16,
    K_NT16,
    "dense_gemm_nt_k16",
    "const TA = false; const TB = true; const BK = 16u; const NBUF = 2u;\n"
);
variant!(
    S_TN16,
    K_TN16,
    "dense_gemm_tn_k16",
    "const TA = true; const TB = false; const BK = 16u; const NBUF = 2u;\n"
);
variant!(
    S_TT16,
    K_TT16,
    "dense_gemm_tt_k16",
    "const TA = true; const TB = true; const BK = 16u; const NBUF = 2u;\n"
);
variant!(
    S_NN8,
    K_NN8,
    "dense_gemm_nn_k8",
    "const TA = false; const TB = false; const BK = 8u; const NBUF = 2u;\n"
);
variant!(
    S_NT8,
    K_NT8,
    "dense_gemm_nt_k8",
    "const TA = false; const TB = true; const BK = 8u; const NBUF = 2u;\n"
);
variant!(
    S_TN8,
    K_TN8,
    "dense_gemm_tn_k8",
    "const TA = true; const TB = false; const BK = 8u; const NBUF = 2u;\n"
);
variant!(
    S_TT8,
    K_TT8,
    "dense_gemm_tt_k8",
    "const TA = true; const TB = true; const BK = 8u; const NBUF = 2u;\n"
);
variant!(
    S_NN8S,
    K_NN8S,
    "dense_gemm_nn_k8s",
    "const TA = false; const TB = false; const BK = 8u; const NBUF = 1u;\n"
);
variant!(
    S_NT8S,
    K_NT8S,
    "dense_gemm_nt_k8s",
    "const TA = false; const TB = true; const BK = 8u; const NBUF = 1u;\n"
);
variant!(
    S_TN8S,
    K_TN8S,
    "dense_gemm_tn_k8s",
    "const TA = true; const TB = false; const BK = 8u; const NBUF = 1u;\n"
);
variant!(
    S_TT8S,
    K_TT8S,
    "dense_gemm_tt_k8s",
    "const TA = true; const TB = true; const BK = 8u; const NBUF = 1u;\n"
);

/// `gemm_scale_f32` (in any variant's module: it uses none of the constants).
static SCALE: Kernel = Kernel {
    shader: &S_NN8S,
    entry: "gemm_scale_f32",
    bindings: BINDS,
};

/// Kernels every adapter can build (built by `warm_up`; the GEMM variants
/// of the adapter's tile come from [`WgpuBackend::gemm_kernels`]).
pub(crate) const KERNELS: &[&Kernel] = &[&SCALE];

/// Rows and columns of C one workgroup of `gemm_f32` computes.
const TILE: usize = 128;

/// Invocations of one `gemm_f32` workgroup.
const THREADS: u32 = 256;
/// Side of the square workgroup of `gemm_scale_f32` (`C = beta C` alone).
const SCALE_TILE: usize = 16;

/// The k tiling of the wgpu GEMM kernel (every variant computes 128 x 128
/// tiles of C with 256 invocations). Deeper tiles halve the barriers per
/// flop but need more workgroup memory, which the adapter bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GemmTile {
    /// The deepest tiling the adapter's workgroup memory holds.
    #[default]
    Auto,
    /// k tiles of 16, double buffered (33.8 KB of workgroup memory).
    K16,
    /// k tiles of 8, double buffered (16.9 KB).
    K8,
    /// k tiles of 8, one buffer, two barriers per tile (8.4 KB).
    K8Single,
}

impl GemmTile {
    /// Bytes of workgroup memory: two 128-wide tiles (rows padded to 132
    /// floats), BK rows each, per buffer.
    fn workgroup_bytes(self) -> u32 {
        let (bk, nbuf) = match self {
            GemmTile::Auto | GemmTile::K16 => (16, 2),
            GemmTile::K8 => (8, 2),
            GemmTile::K8Single => (8, 1),
        };
        2 * nbuf * bk * 132 * 4
    }
    /// The kernels for (op(A) transposed, op(B) transposed).
    fn kernel(self, ta: bool, tb: bool) -> &'static Kernel {
        match (self, ta, tb) {
            (GemmTile::Auto | GemmTile::K16, false, false) => &K_NN16,
            (GemmTile::Auto | GemmTile::K16, false, true) => &K_NT16,
            (GemmTile::Auto | GemmTile::K16, true, false) => &K_TN16,
            (GemmTile::Auto | GemmTile::K16, true, true) => &K_TT16,
            (GemmTile::K8, false, false) => &K_NN8,
            (GemmTile::K8, false, true) => &K_NT8,
            (GemmTile::K8, true, false) => &K_TN8,
            (GemmTile::K8, true, true) => &K_TT8,
            (GemmTile::K8Single, false, false) => &K_NN8S,
            (GemmTile::K8Single, false, true) => &K_NT8S,
            (GemmTile::K8Single, true, false) => &K_TN8S,
            (GemmTile::K8Single, true, true) => &K_TT8S,
        }
    }
}

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
    /// The k tiling GEMM calls use on this adapter, or why none fits (fewer
    /// than 256 invocations per workgroup, or under 8.4 KB of workgroup
    /// memory).
    pub fn gemm_tile(&self) -> Result<GemmTile> {
        let lim = &self.ctx.limits;
        if lim.max_compute_invocations_per_workgroup < THREADS
            || lim.max_compute_workgroup_size_x < THREADS
        {
            return Err(Error::Unsupported(format!(
                "wgpu DenseGemm needs workgroups of {THREADS} invocations; the adapter allows {} \
                 (max_compute_invocations_per_workgroup) and {} in x",
                lim.max_compute_invocations_per_workgroup, lim.max_compute_workgroup_size_x
            )));
        }
        let fits = |t: GemmTile| t.workgroup_bytes() <= lim.max_compute_workgroup_storage_size;
        let tile = match self.tuning.gemm_tile {
            GemmTile::Auto => [GemmTile::K16, GemmTile::K8, GemmTile::K8Single]
                .into_iter()
                .find(|&t| fits(t)),
            t => Some(t).filter(|&t| fits(t)),
        };
        tile.ok_or_else(|| {
            Error::Unsupported(format!(
                "wgpu DenseGemm tiles need {} bytes of workgroup memory; the adapter offers {} \
                 (max_compute_workgroup_storage_size)",
                self.tuning
                    .gemm_tile
                    .workgroup_bytes()
                    .min(GemmTile::K8Single.workgroup_bytes()),
                lim.max_compute_workgroup_storage_size
            ))
        })
    }

    /// The GEMM kernels of this adapter's tiling (none when none fits), for
    /// `warm_up`.
    pub(crate) fn gemm_kernels(&self) -> Vec<&'static Kernel> {
        match self.gemm_tile() {
            Ok(t) => vec![
                t.kernel(false, false),
                t.kernel(false, true),
                t.kernel(true, false),
                t.kernel(true, true),
            ],
            Err(_) => Vec::new(),
        }
    }

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
        let tile = if scale_only {
            GemmTile::Auto
        } else {
            self.gemm_tile()?
        };
        let flags = u32::from(ops.0.is_transposed())
            | (u32::from(ops.1.is_transposed()) << 1)
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
                to_u32("n / 16", d.n.div_ceil(SCALE_TILE))?,
                to_u32("m / 16", d.m.div_ceil(SCALE_TILE))?,
                1,
            ];
            enc.dispatch(&SCALE, &args, groups)?;
        } else {
            // One workgroup per tile in a line (the shader orders them).
            let tiles = (d.m.div_ceil(TILE) as u64) * (d.n.div_ceil(TILE) as u64);
            to_u32("tiles of C", tiles as usize)?;
            let groups = self.grid(tiles)?;
            enc.dispatch(
                tile.kernel(ops.0.is_transposed(), ops.1.is_transposed()),
                &args,
                groups,
            )?;
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
                // With beta = 0 the kernels write every element of C without
                // reading it (a NaN left there included): a pooled buffer.
                self.alloc_uninit::<f32>(d.m * d.n, "gemm C")?
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
            // A packed C takes the product straight; rows with a gap
            // between them go through a packed copy.
            if c.ld() == d.n {
                let whole = as_f32_mut(c.data_mut())?;
                return self.download_into(&dc, &mut whole[..d.m * d.n]);
            }
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

#[cfg(test)]
mod shader_constants {
    use super::*;
    use crate::shader_text::{constant, struct_size, workgroup_size};

    /// The tile, workgroup and uniform-block layout this file repeats from
    /// `shaders/dense_gemm.wgsl`.
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../shaders/dense_gemm.wgsl");
        assert_eq!(constant(src, "BM"), TILE as f64);
        assert_eq!(constant(src, "BN"), TILE as f64);
        assert_eq!(constant(src, "NT"), THREADS as f64);
        assert_eq!(workgroup_size(src, "gemm_f32"), [THREADS, 1, 1]);
        let side = SCALE_TILE as u32;
        assert_eq!(workgroup_size(src, "gemm_scale_f32"), [side, side, 1]);
        assert_eq!(
            struct_size(src, "GemmParams"),
            std::mem::size_of::<Params>()
        );
    }
}
