//! Times the benchmark case omp-64x256-k16 (overcomplete 2-D DCT dictionary for
//! 8x8 patches, 16-atom signals with 1% noise, `Sparsity(16)`) on the rayon
//! backend and reports signals/s. The benchmark case has 1M signals; the count here
//! is an argument so that a run fits a small machine. Optionally writes the
//! dictionary (64 x 256) and the first signals (L x 64) as float32 `.npy` so
//! that a scikit-learn baseline can time the very same input:
//!
//! ```text
//! cargo run --release -p trident-benches --example omp_bench -- 100000 5 /tmp/omp 10000
//! python3 -c "import numpy as np,time;from sklearn.linear_model import orthogonal_mp_gram as g
//! D=np.load('/tmp/omp/dict.npy').astype(np.float64)
//! X=np.load('/tmp/omp/signals.npy').astype(np.float64)
//! G=D.T@D
//! for r in range(3): t=time.perf_counter();g(G,D.T@X.T,n_nonzero_coefs=16);print(len(X)/(time.perf_counter()-t),'signals/s')"
//! ```
//!
//! Arguments: `[signals] [repeats] [out_dir] [signals_written] [f64]`; no
//! out_dir (or `-`) writes nothing; a fifth argument `f64` times f64 input.

use std::time::Instant;

use trident_core::{Scalar, SparseCoder};
use trident_rayon::RayonBackend;
use trident_testkit::cases::omp_dct;

fn run<T: Scalar>(b: &RayonBackend, count: usize, repeats: usize, out: Option<(&str, usize)>)
where
    RayonBackend: SparseCoder<T>,
{
    let t = Instant::now();
    let case = omp_dct::<T>(count, 1);
    eprintln!(
        "generated {count} {} signals in {:.2} s",
        T::NAME,
        t.elapsed().as_secs_f64()
    );
    if let Some((dir, keep)) = out {
        let f32s = |v: &[T]| -> Vec<f32> { v.iter().map(|x| x.to_f64() as f32).collect() };
        let (n, k) = (case.dict.n(), case.dict.atoms());
        let keep = keep.min(count);
        trident_benches::npy::write(format!("{dir}/dict.npy"), &[n, k], &f32s(case.dict.data()))
            .expect("write dict");
        trident_benches::npy::write(
            format!("{dir}/signals.npy"),
            &[keep, n],
            &f32s(&case.signals[..keep * n]),
        )
        .expect("write signals");
        eprintln!("wrote {dir}/dict.npy ({n} x {k}) and {dir}/signals.npy ({keep} x {n})");
    }
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut atoms = 0;
    for _ in 0..repeats {
        let (t, c) = (Instant::now(), cpu_seconds());
        let codes = b
            .encode(&case.dict, case.signals_ref(), case.rule)
            .expect("encode");
        times.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
        atoms = codes.atoms.len();
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let (med, cpu_med) = (times[times.len() / 2], cpu[cpu.len() / 2]);
    println!(
        "omp-64x256-k16 {} rayon ({} threads): {count} signals, {atoms} atoms, median {:.3} s of {repeats} (min {:.3} s) = {:.0} signals/s; CPU time {:.3} s = {:.0} signals per CPU-second",
        T::NAME,
        b.threads(),
        med,
        times[0],
        count as f64 / med,
        cpu_med,
        count as f64 / cpu_med
    );
}

/// CPU time of the whole process (all threads), in seconds: on a shared
/// machine it says what the work costs when wall time says how busy the
/// others are.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: usize = args
        .first()
        .map_or(100_000, |s| s.parse().expect("signals"));
    let repeats: usize = args.get(1).map_or(5, |s| s.parse().expect("repeats"));
    let dir = args.get(2).filter(|s| s.as_str() != "-");
    let keep: usize = args
        .get(3)
        .map_or(10_000, |s| s.parse().expect("signals_written"));
    let f64s = args.get(4).is_some_and(|s| s == "f64");
    let b = RayonBackend::new().expect("rayon backend");
    let out = dir.map(|d| (d.as_str(), keep));
    if f64s {
        run::<f64>(&b, count, repeats.max(1), out);
    } else {
        run::<f32>(&b, count, repeats.max(1), out);
    }
}
