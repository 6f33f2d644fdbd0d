//! Benchmarks of the CUDA backend against cuBLAS / cuSPARSE (placeholder).
fn main() {}
