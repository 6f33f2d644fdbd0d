//! # trident-rayon
//!
//! The CPU backend and Trident's default: every primitive parallel over a rayon
//! thread pool, cache-aware and SIMD where it pays. It is what runs on a laptop
//! or a CI box with no GPU.
#![warn(missing_docs)]
// Library code returns errors; it never unwraps (a panic on user data is a bug; see docs/hardening.md). The few justified
// exceptions carry an `allow` and a comment saying why they cannot fail.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

/// Splits `s` into consecutive pieces of the given lengths (so that parallel
/// tasks can each fill their own part of one output).
pub(crate) fn split_by<X>(mut s: &mut [X], lens: impl Iterator<Item = usize>) -> Vec<&mut [X]> {
    let mut parts = Vec::new();
    for len in lens {
        let (head, tail) = s.split_at_mut(len);
        parts.push(head);
        s = tail;
    }
    parts
}

/// Hints the CPU to pull the cache line holding `x` into L1: for loops whose
/// loads are random and each too short for the CPU to overlap on its own.
#[inline(always)]
pub(crate) fn prefetch<X>(x: &X) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it cannot fault or change memory, and
    // SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((x as *const X).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

use std::sync::Arc;

use trident_core::{Backend, Error, Result};

/// The most worker threads [`RayonBackend::with_threads`] accepts: far above
/// any core count this backend is tuned for, far below an OS thread limit.
pub const MAX_THREADS: usize = 4096;

/// The rayon backend. By default its work runs in the rayon pool of the
/// calling thread (the global pool, or the pool a caller's `install` put it
/// in), so a library inside an application that already uses rayon shares that
/// application's threads instead of starting its own; [`with_threads`] and
/// [`with_pool`] give it a pool of its own. The pool is passed explicitly
/// rather than through thread-local switches.
///
/// [`with_threads`]: RayonBackend::with_threads
/// [`with_pool`]: RayonBackend::with_pool
#[derive(Clone, Debug)]
pub struct RayonBackend {
    /// `None`: the current pool at each call.
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl RayonBackend {
    /// A backend that runs in the caller's current rayon pool: the global pool
    /// (one thread per logical core, `RAYON_NUM_THREADS` respected), or the
    /// pool the call is made from.
    ///
    /// A `RAYON_NUM_THREADS` above [`MAX_THREADS`] is [`Error::TooLarge`]: the
    /// global pool would otherwise start that many threads on first use.
    pub fn new() -> Result<Self> {
        check_threads("RAYON_NUM_THREADS", env_threads())?;
        Ok(Self { pool: None })
    }

    /// A backend with its own pool of `threads` worker threads (0: one per
    /// logical core, `RAYON_NUM_THREADS` respected).
    ///
    /// More than [`MAX_THREADS`] is [`Error::TooLarge`]: rayon starts every
    /// worker up front and waits for all of them, so a typo such as 100,000
    /// would otherwise hang or exhaust the process's thread limit.
    pub fn with_threads(threads: usize) -> Result<Self> {
        // With 0, rayon reads RAYON_NUM_THREADS itself: hold it to the same limit.
        match threads {
            0 => check_threads("RAYON_NUM_THREADS", env_threads())?,
            t => check_threads("threads", t)?,
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("trident-rayon-{i}"))
            .build()
            .map_err(|e| Error::BackendUnavailable(format!("rayon thread pool: {e}")))?;
        Ok(Self::with_pool(Arc::new(pool)))
    }

    /// A backend whose work runs in `pool` (shared with the caller, who may
    /// keep using it), whatever pool the call is made from.
    pub fn with_pool(pool: Arc<rayon::ThreadPool>) -> Self {
        Self { pool: Some(pool) }
    }

    /// Number of worker threads the next call would run on: its own pool's,
    /// or the current pool's as seen from the calling thread.
    pub fn threads(&self) -> usize {
        match &self.pool {
            Some(p) => p.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }

    /// Runs `f` inside this backend's pool (with none of its own: on the
    /// calling thread, whose parallel iterators use the current pool).
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}

/// `RAYON_NUM_THREADS` as rayon would read it (0 when unset or not a number).
fn env_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

/// [`Error::TooLarge`] when `asked` exceeds [`MAX_THREADS`].
fn check_threads(field: &'static str, asked: usize) -> Result<()> {
    if asked > MAX_THREADS {
        return Err(Error::TooLarge {
            field,
            value: asked as u128,
            limit: MAX_THREADS as u128,
        });
    }
    Ok(())
}

impl Backend for RayonBackend {
    fn name(&self) -> &'static str {
        "rayon"
    }
    fn describe(&self) -> String {
        format!("rayon ({} threads)", self.threads())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::RayonBackend;

    fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
        Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap(),
        )
    }

    /// What the backend's work sees: the pool size, and whether it runs on a
    /// worker of that pool.
    fn seen(be: &RayonBackend) -> (usize, usize, bool) {
        be.install(|| {
            (
                be.threads(),
                rayon::current_num_threads(),
                rayon::current_thread_index().is_some(),
            )
        })
    }

    #[test]
    fn new_runs_in_the_callers_pool() {
        let be = RayonBackend::new().unwrap();
        let three = pool(3);
        assert_eq!(three.install(|| seen(&be)), (3, 3, true));
        let five = pool(5);
        assert_eq!(five.install(|| seen(&be)), (5, 5, true));
        // Outside any pool: the global one, entered by the parallel iterators.
        assert_eq!(seen(&be).0, rayon::current_num_threads());
    }

    #[test]
    fn with_pool_runs_in_that_pool_wherever_it_is_called() {
        let three = pool(3);
        let be = RayonBackend::with_pool(three.clone());
        assert_eq!(be.threads(), 3);
        assert_eq!(seen(&be), (3, 3, true));
        assert_eq!(pool(2).install(|| seen(&be)), (3, 3, true));
        // The caller keeps its pool.
        assert_eq!(three.install(rayon::current_num_threads), 3);
    }

    #[test]
    fn with_threads_builds_its_own_pool() {
        let be = RayonBackend::with_threads(2).unwrap();
        assert_eq!(pool(3).install(|| seen(&be)), (2, 2, true));
    }
}
