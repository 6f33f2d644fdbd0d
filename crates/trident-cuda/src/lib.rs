//! # trident-cuda
//!
//! The CUDA backend: kernels from `kernels/*.cu`, compiled at run time by NVRTC.
#![warn(missing_docs)]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

use trident_core::{Backend, Error, Result};

/// The CUDA backend (placeholder until the device layer lands).
#[derive(Debug)]
pub struct CudaBackend {
    _private: (),
}

impl CudaBackend {
    /// Opens device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self> {
        let _ = ordinal;
        Err(Error::BackendUnavailable(
            "CUDA backend not built yet".into(),
        ))
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn describe(&self) -> String {
        "cuda".into()
    }
}
