//! The one bench routine every `benches/*.rs` file runs for its primitive.
//!
//! Per benchmark case: a criterion group named as the contract names the case
//! (`gemm-4096`) holding one bench per backend that runs it (`gemm-4096/rayon`,
//! `gemm-4096/reference`), and, where the reference would need more than ~30 s
//! per call, a group for its smaller stand-in holding only the reference
//! (`omp-64x256-k16/10K/reference`). A backend that lacks the primitive is
//! skipped with a printed line (found on a tiny input by `cannot_run`, before
//! anything large is generated). Each group's input is generated before the
//! group, since criterion wants the throughput (which needs the input: SpGEMM
//! products) before the first bench; that costs seconds per case even for
//! groups the command-line filter leaves out. The timed region is the
//! primitive call alone, and its output is dropped outside it.
//!
//! Every case here takes from tens of milliseconds to tens of seconds per
//! call, so groups take criterion's minimum of 10 samples in flat mode (one
//! call per sample once calls are slow) with short warm-up and measurement
//! targets. For the big cases criterion then warns that 10 samples need more
//! than the target; that is expected and harmless.
//!
//! Throughput is given in the contract's work units where the contract reports a rate:
//! criterion's `elem/s` are flops/s for GEMM and SpGEMM (SpGEMM: 2 x
//! products) and signals/s for OMP. Pairs and cuts are reported in time.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use trident::Primitives;
use trident_benches::{Unit, Work, Workload, cannot_run, reference_stand_in, runner};
use trident_testkit::cases::Case;

/// Benches every benchmark case of `primitive` on every compiled-in backend that
/// can run here, the reference included.
pub fn bench_primitive(c: &mut Criterion, primitive: &str) {
    let seed = trident_testkit::seed_from_env();
    let backends = trident_benches::available_backends(&trident::compiled_backends());
    for case in trident_benches::spec_cases_of(primitive) {
        let runs: Vec<&dyn Primitives> = backends
            .iter()
            .map(|b| b.as_ref())
            .filter(|b| match cannot_run(*b, &case) {
                Some(why) => {
                    println!("skipping {}/{}: {why}", case.name, b.name());
                    false
                }
                None => true,
            })
            .collect();
        let stand_in = reference_stand_in(&case);
        let (on_stand_in, on_case): (Vec<_>, Vec<_>) = runs
            .into_iter()
            .partition(|b| b.name() == "reference" && stand_in.is_some());
        group(c, &case, &on_case, seed);
        if let Some(s) = &stand_in {
            group(c, s, &on_stand_in, seed);
        }
    }
}

/// One criterion group: `case` on each of `backends`.
fn group(c: &mut Criterion, case: &Case, backends: &[&dyn Primitives], seed: u64) {
    if backends.is_empty() {
        return;
    }
    let w = Workload::new(case, seed);
    let work = Work::of(&w.input);
    let mut g = c.benchmark_group(&w.name);
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    if work.unit != Unit::Ms {
        g.throughput(Throughput::Elements(work.amount as u64));
    }
    for &b in backends {
        let mut run = runner(b, &w.input);
        g.bench_function(b.name(), |bencher| {
            bencher.iter_with_large_drop(|| {
                run().unwrap_or_else(|e| panic!("{} on {}: {e}", w.name, b.name()))
            })
        });
    }
    g.finish();
}
