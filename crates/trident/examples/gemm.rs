//! Dense GEMM on the best backend here: a 512 x 256 by 256 x 384 product of
//! smooth "image-like" data, checked against a few naive dot products.
//! `cargo run -p trident-compute --example gemm`

use trident::{DenseGemm, GemmParams, MatMut, MatRef, Trident};

fn main() -> trident::Result<()> {
    let (m, k, n) = (512, 256, 384);
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i % k) as f32 * 0.05).sin() + (i / k) as f32 * 1e-3)
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| ((i / n) as f32 * 0.02).cos() * ((i % n) as f32 * 0.01).sin())
        .collect();
    let mut c = vec![0f32; m * n];
    let t = Trident::new()?;
    t.gemm(
        &GemmParams::default(),
        MatRef::dense(&a, m, k)?,
        MatRef::dense(&b, k, n)?,
        MatMut::dense(&mut c, m, n)?,
    )?;
    for (i, j) in [(0, 0), (m - 1, n - 1), (m / 2, n / 3)] {
        let want: f64 = (0..k)
            .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
            .sum();
        assert!((c[i * n + j] as f64 - want).abs() <= 1e-3 * (1.0 + want.abs()));
    }
    println!(
        "gemm {m}x{k}x{n} on {}: C[0][0] = {:.4}",
        t.served_last(),
        c[0]
    );
    Ok(())
}
