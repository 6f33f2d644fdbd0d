//! criterion benches of the SparseGemm benchmark cases: spgemm-poisson2d-2048, spgemm-rmat-16-8 and
//! spgemm-uniform-1M-8, `A * A` in f32 (the reference runs all three at full size).
//! Every compiled-in backend that runs here, the reference included; see
//! `common` for what is timed. `cargo bench -p trident-benches --bench sparse_gemm`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn benches(c: &mut Criterion) {
    common::bench_primitive(c, "sparse_gemm");
}

criterion_group!(sparse_gemm, benches);
criterion_main!(sparse_gemm);
