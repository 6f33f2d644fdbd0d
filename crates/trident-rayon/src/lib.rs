//! # trident-rayon
//!
//! The CPU backend and Trident's default: every primitive parallel over a rayon
//! thread pool, cache-aware and SIMD where it pays. It is what runs on a laptop
//! or a CI box with no GPU.
#![warn(missing_docs)]
// Library code returns errors; it never unwraps (issue 12). The few justified
// exceptions carry an `allow` and a comment saying why they cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

use std::sync::Arc;

use trident_core::{Backend, Error, Result};

/// The most worker threads [`RayonBackend::with_threads`] accepts: far above
/// any core count this backend is tuned for, far below an OS thread limit.
pub const MAX_THREADS: usize = 4096;

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
    ///
    /// More than [`MAX_THREADS`] is [`Error::TooLarge`]: rayon starts every
    /// worker up front and waits for all of them, so a typo such as 100,000
    /// would otherwise hang or exhaust the process's thread limit.
    pub fn with_threads(threads: usize) -> Result<Self> {
        // With 0, rayon reads RAYON_NUM_THREADS itself: hold it to the same limit.
        let (field, asked) = match threads {
            0 => (
                "RAYON_NUM_THREADS",
                std::env::var("RAYON_NUM_THREADS")
                    .ok()
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0),
            ),
            t => ("threads", t),
        };
        if asked > MAX_THREADS {
            return Err(Error::TooLarge {
                field,
                value: asked as u128,
                limit: MAX_THREADS as u128,
            });
        }
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
