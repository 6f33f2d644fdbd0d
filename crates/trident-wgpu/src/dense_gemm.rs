//! DenseGemm for [`WgpuBackend`]: not implemented yet.

use trident_core::Error;
use trident_core::{DenseGemm, GemmParams, MatMut, MatRef, Result, Scalar};

use crate::WgpuBackend;
use crate::pipeline::Kernel;

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[];

impl<T: Scalar> DenseGemm<T> for WgpuBackend {
    fn gemm(
        &self,
        p: &GemmParams<T>,
        a: MatRef<'_, T>,
        b: MatRef<'_, T>,
        c: MatMut<'_, T>,
    ) -> Result<()> {
        let _ = (p, a, b, c);
        crate::require_f32::<T>("DenseGemm")?;
        Err(Error::Unsupported(
            "DenseGemm is not implemented on the wgpu backend yet".into(),
        ))
    }
}
