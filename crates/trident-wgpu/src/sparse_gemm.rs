//! SparseGemm for [`WgpuBackend`]: not implemented yet.

use trident_core::Error;
use trident_core::{CsrMatrix, Result, Scalar, SparseGemm};

use crate::WgpuBackend;
use crate::pipeline::Kernel;

/// Kernels of this primitive (built by `warm_up`).
pub(crate) const KERNELS: &[&Kernel] = &[];

impl<T: Scalar> SparseGemm<T> for WgpuBackend {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        let _ = (a, b);
        crate::require_f32::<T>("SparseGemm")?;
        Err(Error::Unsupported(
            "SparseGemm is not implemented on the wgpu backend yet".into(),
        ))
    }
}
