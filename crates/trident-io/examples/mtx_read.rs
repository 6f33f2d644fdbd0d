//! Times `trident_io::mtx::read` on a file: `cargo run --release -p
//! trident-io --example mtx_read -- FILE.mtx [REPEAT]` prints the median
//! wall time of REPEAT reads (default 5), each from the bytes in memory so
//! the disk is not what is timed.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: mtx_read FILE.mtx [REPEAT]")?;
    let repeat: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    let bytes = std::fs::read(&path)?;
    let mut times = Vec::new();
    let mut nnz = 0;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let m: trident_core::CsrMatrix<f64> = trident_io::mtx::read(&bytes[..])?;
        times.push(t.elapsed().as_secs_f64());
        nnz = m.nnz();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{path}: {} MB, {nnz} entries, median {:.3} s of {} reads (min {:.3} s)",
        bytes.len() / 1_000_000,
        times[times.len() / 2],
        times.len(),
        times[0]
    );
    Ok(())
}
