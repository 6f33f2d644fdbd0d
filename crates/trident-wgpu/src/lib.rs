//! # trident-wgpu
//!
//! The wgpu backend (placeholder).
#![warn(missing_docs)]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

use trident_core::{Backend, Error, Result};

/// The wgpu backend (placeholder).
#[derive(Debug)]
pub struct WgpuBackend {
    _private: (),
}

impl WgpuBackend {
    /// Opens the best adapter.
    pub fn new() -> Result<Self> {
        Err(Error::BackendUnavailable(
            "wgpu backend not built yet".into(),
        ))
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }
    fn describe(&self) -> String {
        "wgpu".into()
    }
}
