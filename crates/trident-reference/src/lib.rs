//! # trident-reference
//!
//! The backend that defines "correct": simple, obviously right, f64 inside, single
//! threaded. Every other backend is verified against it, and it is itself checked
//! against independent certificates (naive loops, dense products, brute force,
//! optimality conditions). It is not fast and is not meant to be.
//!
//! | primitive | how |
//! | --- | --- |
//! | DenseGemm | nalgebra `DMatrix<f64>` product, `alpha P + beta C` in f64, one rounding; `Precision` ignored |
//! | SparseGemm | row-wise Gustavson in f64: each row's products sorted by column (stably) and merged, so explicit zeros and cancellations stay stored; no `n`-sized workspace |
//! | NearestPairs | kiddo immutable kd-tree in f64 for candidates, then exact [`trident_core::dist2_f64`] and the contract's tie rules on every point within the best (k-th) distance |
//! | SparseCoder | plain OMP per signal, least squares by modified Gram-Schmidt on `[D_S x]` afresh each step; [`omp_path`] gives the per-step trace |
//! | MaxFlow | Dinic's algorithm (iterative DFS), then residual reachability from s for the canonical cut |
//!
//! All arithmetic is f64 (i64 for flows); results are rounded to `T` once.
//! Single threaded and deterministic. [`certify`] holds the independent checks.
#![warn(missing_docs)]
// Library code returns errors; it never unwraps (a panic on user data is a bug; see docs/hardening.md). The few justified
// exceptions carry an `allow` and a comment saying why they cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod certify;
mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

pub use sparse_coder::{OmpPath, OmpStep, OmpStop, omp_path};

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
