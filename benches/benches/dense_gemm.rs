//! criterion benches of the DenseGemm benchmark cases: gemm-4096 and gemm-8192, square f32 `C = A B`. The
//! reference runs gemm-4096 itself and gemm-8192 as `gemm-8192/2048`.
//! Every compiled-in backend that runs here, the reference included; see
//! `common` for what is timed. `cargo bench -p trident-benches --bench dense_gemm`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn benches(c: &mut Criterion) {
    common::bench_primitive(c, "dense_gemm");
}

criterion_group!(dense_gemm, benches);
criterion_main!(dense_gemm);
