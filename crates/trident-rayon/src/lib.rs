//! # trident-rayon
//!
//! The CPU backend and Trident's default: every primitive parallel over a rayon
//! thread pool, cache-aware and SIMD where it pays. It is what runs on a laptop
//! or a CI box with no GPU.
#![warn(missing_docs)]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

use std::sync::Arc;

use trident_core::{Backend, Error, Result};

/// The rayon backend. Work runs on its own thread pool (or the global one), passed
/// explicitly rather than through thread-local switches.
#[derive(Clone, Debug)]
pub struct RayonBackend {
    pool: Arc<rayon::ThreadPool>,
}

impl RayonBackend {
    /// A backend using one thread per logical core (`RAYON_NUM_THREADS` respected).
    pub fn new() -> Result<Self> {
        Self::with_threads(0)
    }

    /// A backend with `threads` worker threads (0: one per logical core).
    pub fn with_threads(threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("trident-rayon-{i}"))
            .build()
            .map_err(|e| Error::BackendUnavailable(format!("rayon thread pool: {e}")))?;
        Ok(Self {
            pool: Arc::new(pool),
        })
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Runs `f` inside this backend's pool.
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}

impl Backend for RayonBackend {
    fn name(&self) -> &'static str {
        "rayon"
    }
    fn describe(&self) -> String {
        format!("rayon ({} threads)", self.threads())
    }
}
