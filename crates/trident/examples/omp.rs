//! Batch-OMP: sparse codes of 1-D signals over an overcomplete DCT dictionary
//! (as in denoising by sparse coding): signals made of 3 atoms are coded to
//! within 1% of their energy with at most 8 atoms (the atoms are coherent).
//! `cargo run -p trident-compute --example omp`

use trident::{Dictionary, MatRef, SparseCoder, StopRule, Trident};

fn main() -> trident::Result<()> {
    let (n, atoms, l) = (64usize, 128usize, 500usize);
    let mut d = vec![0f64; n * atoms];
    for j in 0..atoms {
        for i in 0..n {
            d[i * atoms + j] =
                (std::f64::consts::PI * (i as f64 + 0.5) * j as f64 / atoms as f64).cos();
        }
    }
    let dict = Dictionary::normalize(n, atoms, d)?;
    let mut x = vec![0f64; l * n];
    for s in 0..l {
        for (t, &c) in [(s * 7) % atoms, (s * 13 + 5) % atoms, (s * 31 + 11) % atoms]
            .iter()
            .zip(&[1.0, -0.7, 0.4])
        {
            for i in 0..n {
                x[s * n + i] += c * dict.data()[i * atoms + t];
            }
        }
    }
    let t = Trident::new()?;
    let codes = t.encode(
        &dict,
        MatRef::dense(&x, l, n)?,
        StopRule::SparsityOrError {
            sparsity: 8,
            error: 1e-10,
        },
    )?;
    let worst = codes.residual_norm2.iter().cloned().fold(0.0, f64::max);
    let mean = codes.atoms.len() as f64 / l as f64;
    // Each signal has energy about 1 + 0.49 + 0.16.
    assert!(worst < 1e-2 * 1.65, "residual {worst}");
    println!(
        "omp on {}: {l} signals, {mean:.2} atoms each, worst residual {worst:.2e}",
        t.served_last()
    );
    Ok(())
}
