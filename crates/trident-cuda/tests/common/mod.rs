//! Shared helpers of the GPU tests: the backend (or a SKIPPED line) and a
//! seeded generator with a printed repro line.
#![allow(dead_code)]

use trident_core::Error;
use trident_cuda::CudaBackend;

/// The device-0 backend, or `None` after printing why the test is skipped.
pub fn backend(test: &str) -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(Error::BackendUnavailable(why)) => {
            println!("SKIPPED: no CUDA ({test}: {why})");
            None
        }
        Err(e) => panic!("CudaBackend::new failed with an unexpected error: {e}"),
    }
}

/// Seed from TRIDENT_SEED (printed so a failure can be replayed).
pub fn seed(test: &str) -> u64 {
    let s = std::env::var("TRIDENT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_cafe);
    println!("{test}: TRIDENT_SEED={s}");
    s
}

/// SplitMix64: small, seedable, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}
