//! criterion benches of the NearestPairs benchmark cases: pairs-1M-400K and pairs-clustered,
//! `closest_pairs(A, B, 100)`.
//! Every compiled-in backend that runs here, the reference included; see
//! `common` for what is timed. `cargo bench -p trident-benches --bench nearest_pairs`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn benches(c: &mut Criterion) {
    common::bench_primitive(c, "nearest_pairs");
}

criterion_group!(nearest_pairs, benches);
criterion_main!(nearest_pairs);
