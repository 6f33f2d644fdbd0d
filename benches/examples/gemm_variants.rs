//! The BLAS-shaped GEMM calls users write (transposes, padded leading
//! dimensions, alpha/beta, odd sizes), timed on the rayon backend: the
//! shapes of [`trident_benches::gemm_variant_cases`], in f32 and f64.
//!
//! ```text
//! cargo run --release -p trident-benches --example gemm_variants -- [reps]
//! ```

use trident::{DenseGemm, Scalar};
use trident_benches::timing::wall;
use trident_rayon::RayonBackend;
use trident_testkit::cases::GemmCase;

fn time<T: Scalar>(be: &RayonBackend, name: &str, c: &GemmCase<T>, reps: usize)
where
    RayonBackend: DenseGemm<T>,
{
    let mut out = c.c.clone();
    let ms = wall(reps, || {
        be.gemm(&c.params, c.a_ref(), c.b_ref(), c.c_mut(&mut out)?)
    })
    .expect("gemm");
    let gflops = 2.0 * (c.m * c.n * c.k) as f64 / ms / 1e6;
    println!("{name:<24} {:>4} {ms:9.2} ms {gflops:8.1} GFLOP/s", T::NAME);
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .map_or(5, |s| s.parse().expect("reps"));
    let be = RayonBackend::new().expect("rayon");
    println!("{}", trident::Backend::describe(&be));
    time(
        &be,
        "gemm-1024",
        &trident_testkit::cases::gemm::<f32>(1024, 1),
        reps,
    );
    for (name, c) in trident_benches::gemm_variant_cases::<f32>(1024) {
        time(&be, &name, &c, reps);
    }
    time(
        &be,
        "gemm-1024-f64",
        &trident_testkit::cases::gemm::<f64>(1024, 1),
        reps,
    );
    for (name, c) in trident_benches::gemm_variant_cases::<f64>(1024) {
        time(&be, &name, &c, reps);
    }
}
