//! criterion benches of the NearestPairs benchmark cases: pairs-1M-400K and pairs-clustered,
//! `closest_pairs(A, B, 100)`.
//! Every compiled-in backend that runs here, the reference included, and kiddo
//! (the Rust peer, `trident_benches::kiddo_peer`) as `<case>/kiddo`; see
//! `common` for what is timed. `cargo bench -p trident-benches --bench nearest_pairs`.

mod common;

use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use trident_benches::{Workload, kiddo_peer};
use trident_testkit::cases::PairsCase;

fn benches(c: &mut Criterion) {
    common::bench_primitive(c, "nearest_pairs");
    let seed = trident_testkit::seed_from_env();
    for case in trident_benches::spec_cases_of("nearest_pairs") {
        let w = Workload::new(&case, seed);
        let Some(p) = w.input.downcast_ref::<PairsCase>() else {
            continue;
        };
        let mut g = c.benchmark_group(&w.name);
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5));
        g.bench_function("kiddo", |bencher| {
            bencher.iter_with_large_drop(|| {
                kiddo_peer::closest_pairs(&p.a, &p.b, p.pairs_k)
                    .unwrap_or_else(|e| panic!("{} on kiddo: {e}", w.name))
            })
        });
        g.finish();
    }
}

criterion_group!(nearest_pairs, benches);
criterion_main!(nearest_pairs);
