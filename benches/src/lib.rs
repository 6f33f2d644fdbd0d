//! Benchmark support
