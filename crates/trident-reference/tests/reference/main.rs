//! Tests of the reference backend and of its certificates, one module per
//! primitive. Inputs are small and hand-made or drawn from a fixed-seed
//! SplitMix64, so every run sees the same cases.
#![allow(missing_docs)]

mod dense_gemm;
mod max_flow;
mod nearest_pairs;
mod sparse_coder;
mod sparse_gemm;

/// SplitMix64: tiny, seedable, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, n)`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `[-1, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    /// Approximately standard normal (sum of 12 uniforms).
    pub fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.unit() * 0.5 + 0.5).sum::<f64>() - 6.0
    }
}

pub use trident_reference::ReferenceBackend;

pub fn backend() -> ReferenceBackend {
    ReferenceBackend::new().unwrap()
}
