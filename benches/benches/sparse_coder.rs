//! criterion benches of the SparseCoder benchmark cases: omp-64x256-k16 (1M signals, Sparsity(16)) and
//! omp-256x1024-k32 (100K signals, Sparsity(32)); the
//! reference runs `omp-64x256-k16/10K` (10K signals) and `omp-256x1024-k32/200`.
//! Every compiled-in backend that runs here, the reference included; see
//! `common` for what is timed. `cargo bench -p trident-benches --bench sparse_coder`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn benches(c: &mut Criterion) {
    common::bench_primitive(c, "sparse_coder");
}

criterion_group!(sparse_coder, benches);
criterion_main!(sparse_coder);
