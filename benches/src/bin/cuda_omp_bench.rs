//! Batch-OMP benchmark of the CUDA backend on the benchmark cases `omp-64x256-k16`
//! (1M signals) and `omp-256x1024-k32` (100K signals), beside the rayon
//! backend on the same machine's cores.
//!
//! Usage: `cuda_omp_bench [--reps N] [--dump DIR] [FILTER...]`. For each case it
//! prints signals/s for the CUDA device-resident call (signals already in
//! device memory, codes left there: `SparseCoderDevice::encode_device`, timed
//! with CUDA events, Gram matrix included, median of N after a warm-up), the
//! CUDA host-to-host call (`SparseCoder::encode`: upload, code, download and
//! pack; wall clock, median of 3) and the rayon backend (all cores, wall
//! clock, median of 3), and how far the CUDA codes are from rayon's (signals
//! with the same atoms in the same order; worst relative coefficient error on
//! those). With `--dump DIR` it writes each case's inputs as `DIR/<case>_D.npy`
//! (n x K, f32) and `DIR/<case>_X.npy` (L x n, f32), so that the Python peers
//! (`benches/gpu/omp_peers.py`: scikit-learn `orthogonal_mp_gram`, SPAMS
//! `omp`) code identical inputs.

use std::path::PathBuf;
use std::time::Instant;

use trident_benches::timing::{device, wall};
use trident_core::{
    Backend, DeviceMat, DeviceMemory, Error, Result, SparseCoder, SparseCoderDevice, SparseCodes,
};
use trident_cuda::CudaBackend;
use trident_rayon::RayonBackend;
use trident_testkit::cases::{self, OmpCase};

const SEED: u64 = 0x7121_d3a7;

/// Signals whose atoms agree exactly, and the worst relative coefficient
/// error over those (`||g - g_ref|| / ||g_ref||`).
fn agreement(a: &SparseCodes<f32>, b: &SparseCodes<f32>) -> (usize, f64) {
    let mut same = 0;
    let mut worst = 0.0f64;
    for i in 0..a.len().min(b.len()) {
        let (aa, ca) = a.signal(i);
        let (ab, cb) = b.signal(i);
        if aa != ab {
            continue;
        }
        same += 1;
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for (x, y) in ca.iter().zip(cb) {
            num += (f64::from(*x) - f64::from(*y)).powi(2);
            den += f64::from(*y).powi(2);
        }
        if den > 0.0 {
            worst = worst.max((num / den).sqrt());
        }
    }
    (same, worst)
}

fn run_case(
    be: &CudaBackend,
    cpu: &RayonBackend,
    name: &str,
    c: &OmpCase<f32>,
    reps: usize,
    dump: Option<&PathBuf>,
) -> Result<()> {
    let (l, n, k) = (c.count, c.dict.n(), c.dict.atoms());
    if let Some(dir) = dump {
        let io = |e: std::io::Error| Error::Backend(format!("writing {name} inputs: {e}").into());
        std::fs::create_dir_all(dir).map_err(io)?;
        trident_benches::npy::write(dir.join(format!("{name}_D.npy")), &[n, k], c.dict.data())
            .map_err(io)?;
        trident_benches::npy::write(dir.join(format!("{name}_X.npy")), &[l, n], &c.signals)
            .map_err(io)?;
    }
    let x = DeviceMat {
        buf: be.upload(&c.signals)?,
        rows: l,
        cols: n,
        ld: n,
    };
    let dev_ms = device(be, reps, 1, || {
        be.encode_device(&c.dict, &x, c.rule).map(|_| ())
    })?;
    let mut ours = None;
    let h2h_ms = wall(3, || {
        ours = Some(SparseCoder::<f32>::encode(
            be,
            &c.dict,
            c.signals_ref(),
            c.rule,
        )?);
        Ok(())
    })?;
    let mut theirs = None;
    let cpu_ms = wall(3, || {
        theirs = Some(SparseCoder::<f32>::encode(
            cpu,
            &c.dict,
            c.signals_ref(),
            c.rule,
        )?);
        Ok(())
    })?;
    let rate = |ms: f64| l as f64 / (ms * 1e-3);
    let check = match (&ours, &theirs) {
        (Some(a), Some(b)) => {
            let (same, worst) = agreement(a, b);
            format!(
                "same atoms as rayon on {same}/{l} signals, worst coef rel err {worst:.2e}, nnz {} vs {}",
                a.atoms.len(),
                b.atoms.len()
            )
        }
        _ => "no codes".into(),
    };
    println!(
        "{name} ({l} signals, {n}x{k}, {:?}):\n  cuda device-resident {dev_ms:.2} ms = {:.3e} signals/s\n  cuda host-to-host    {h2h_ms:.2} ms = {:.3e} signals/s\n  rayon ({} threads)    {cpu_ms:.2} ms = {:.3e} signals/s\n  ratio device/rayon {:.1}x, host-to-host/rayon {:.1}x\n  check: {check}",
        c.rule,
        rate(dev_ms),
        rate(h2h_ms),
        cpu.threads(),
        rate(cpu_ms),
        cpu_ms / dev_ms,
        cpu_ms / h2h_ms,
    );
    Ok(())
}

fn main() {
    trident_benches::log_from_env();
    let mut reps = 5usize;
    let mut dump = None;
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => {
                reps = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(reps)
                    .max(1)
            }
            "--dump" => dump = args.next().map(PathBuf::from),
            _ => filters.push(a),
        }
    }
    let be = match CudaBackend::new(0) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cuda_omp_bench: {e}");
            std::process::exit(2);
        }
    };
    let cpu = match RayonBackend::new() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cuda_omp_bench: rayon: {e}");
            std::process::exit(2);
        }
    };
    println!("{}  (reps {reps})", be.describe());
    type Make = fn() -> OmpCase<f32>;
    let all: [(&str, Make); 2] = [
        ("omp-64x256-k16", || cases::omp_dct(1_000_000, SEED)),
        ("omp-256x1024-k32", || cases::omp_dct_256(100_000, SEED)),
    ];
    let mut failed = false;
    for (name, make) in all {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let t = Instant::now();
        let c = make();
        eprintln!("{name}: inputs built in {:.1} s", t.elapsed().as_secs_f64());
        if let Err(e) = run_case(&be, &cpu, name, &c, reps, dump.as_ref()) {
            eprintln!("{name}: {e}");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}
