//! # trident-reference
//!
//! The backend that defines "correct": simple, obviously right, f64 inside, single
//! threaded. Every other backend is verified against it, and it is itself checked
//! against independent certificates (naive loops, dense products, brute force,
//! optimality conditions). It is not fast and is not meant to be.
//!
//! | primitive | how |
//! | --- | --- |
//! | DenseGemm | nalgebra `DMatrix<f64>` product |
//! | SparseGemm | sprs CSR product in f64 |
//! | NearestPairs | kiddo kd-tree in f64, exact, with SPEC tie rules |
//! | SparseCoder | plain OMP, least squares by nalgebra on the selected atoms each step |
//! | MaxFlow | Dinic's algorithm, then residual reachability from s for the cut |
#![warn(missing_docs)]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

use trident_core::{Backend, Result};

/// The reference backend. Always available.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceBackend;

impl ReferenceBackend {
    /// The reference backend (it cannot fail; `Result` for the common constructor shape).
    pub fn new() -> Result<Self> {
        Ok(Self)
    }
}

impl Backend for ReferenceBackend {
    fn name(&self) -> &'static str {
        "reference"
    }
    fn describe(&self) -> String {
        "reference (f64, single thread)".into()
    }
}
