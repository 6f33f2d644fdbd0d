//! criterion benches of the MaxFlow benchmark cases: cut-512 and cut-2048 (`grid_cut`) and flow-rmf
//! (`network_flow`).
//! Every compiled-in backend that runs here, the reference included; see
//! `common` for what is timed. `cargo bench -p trident-benches --bench max_flow`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};

fn benches(c: &mut Criterion) {
    common::bench_primitive(c, "max_flow");
}

criterion_group!(max_flow, benches);
criterion_main!(max_flow);
