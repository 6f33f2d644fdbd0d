//! Times the degenerate inputs that used to hang on the reference and rayon
//! backends (docs/hardening.md records the numbers):
//! `cargo run --release -p trident-compute --features reference --example degenerate_timings`.

use std::time::Instant;

use trident::{
    DenseGemm, GemmParams, MatMut, MatRef, NearestPairs, Neighbor, Point, RayonBackend,
    ReferenceBackend,
};

fn time<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    println!("{what:<58} {:>9.1} ms", t.elapsed().as_secs_f64() * 1e3);
    r
}

fn main() -> trident::Result<()> {
    let same = |n: usize| -> Vec<Point> { vec![[1.5f32, -2.0, 7.25]; n] };
    let (a, b) = (same(100_000), same(100_000));
    let a20k = same(20_000);
    let rayon = RayonBackend::new()?;
    let backends: [(&str, &dyn NearestPairs); 2] =
        [("rayon", &rayon), ("reference", &ReferenceBackend)];
    for (name, be) in backends {
        let mut out = vec![Neighbor::default(); a.len()];
        time(&format!("{name}: nearest, 1e5 identical A and B"), || {
            be.nearest(&a, &b, &mut out)
        })?;
        time(
            &format!("{name}: closest_pairs k=10, 1e5 identical A and B"),
            || be.closest_pairs(&a, &b, 10),
        )?;
        let mut out = vec![Neighbor::default(); a20k.len() * 8];
        time(&format!("{name}: knn k=8, 2e4 x 1e5 identical"), || {
            be.knn(&a20k, &b, 8, &mut out)
        })?;
    }
    let k = 1usize << 40;
    let none: [f32; 0] = [];
    let mut c: [f32; 0] = [];
    for (name, be) in [
        ("rayon", &rayon as &dyn DenseGemm<f32>),
        ("reference", &ReferenceBackend),
    ] {
        time(&format!("{name}: gemm m = n = 0, k = 2^40"), || {
            be.gemm(
                &GemmParams::default(),
                MatRef::new(&none, 0, k, k).unwrap(),
                MatRef::new(&none, k, 0, 0).unwrap(),
                MatMut::new(&mut c, 0, 0, 0).unwrap(),
            )
        })?;
    }
    time("rayon: with_threads(100_000) (an error)", || {
        RayonBackend::with_threads(100_000).err()
    });
    Ok(())
}
