//! SpGEMM: the square of the 5-point Laplacian of a 100 x 100 grid (the
//! 13-point biharmonic stencil), as in multigrid setup.
//! `cargo run -p trident-compute --example spgemm`

use trident::{CsrMatrix, SparseGemm, Trident};

fn main() -> trident::Result<()> {
    let g = 100u32;
    let mut trip = Vec::new();
    for y in 0..g {
        for x in 0..g {
            let v = y * g + x;
            trip.push((v, v, 4.0f64));
            if x > 0 {
                trip.push((v, v - 1, -1.0));
            }
            if x + 1 < g {
                trip.push((v, v + 1, -1.0));
            }
            if y > 0 {
                trip.push((v, v - g, -1.0));
            }
            if y + 1 < g {
                trip.push((v, v + g, -1.0));
            }
        }
    }
    let n = (g * g) as usize;
    let l = CsrMatrix::from_triplets(n, n, &trip)?;
    let t = Trident::new()?;
    let l2 = t.spgemm(&l, &l)?;
    // An interior row of L^2 has 13 entries and the centre weight 20.
    let centre = (50 * g + 50) as usize;
    let (cols, vals) = l2.row(centre);
    let diag = cols
        .iter()
        .position(|&c| c as usize == centre)
        .map(|p| vals[p]);
    assert_eq!((cols.len(), diag), (13, Some(20.0)));
    println!(
        "L: {} nnz, L^2: {} nnz on {}",
        l.nnz(),
        l2.nnz(),
        t.served_last()
    );
    Ok(())
}
