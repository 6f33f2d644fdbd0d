//! The machine's f32 multiply-add ceiling: each of N threads runs fused
//! multiply-adds on 24 independent vector registers (no memory traffic, so
//! nothing but the FMA units and the clock bound it), and the program
//! prints the rate reached in all and per thread.
//!
//! Why: a GEMM's speed is only worth comparing with a peer's once it is
//! known how close either is to what the cores can do at all. On the GPU
//! machine the rate a thread gets falls as more threads run (on 16 threads
//! each gets about half of what one thread alone gets), so the ceiling for
//! 16 threads is measured, not taken from a data sheet. It is a practical
//! ceiling, not a proof: a GEMM, whose loads leave the units idle now and
//! then, may run at a higher clock than this loop and land a little above.
//!
//! ```text
//! fma_peak [THREADS ...]    # default: 1, half the CPUs, all of them
//! ```
//!
//! x86_64 with AVX-512F (16 lanes) or AVX2 + FMA (8 lanes); elsewhere it
//! says so and exits with 2.

use std::process::ExitCode;
use std::time::Instant;

/// Rounds of 24 vector multiply-adds per thread (about 0.2-0.5 s a thread
/// at 2-4 GHz).
const ROUNDS: u64 = 32_000_000;

fn main() -> ExitCode {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.parse::<usize>() {
            Ok(t) if t > 0 => threads.push(t),
            _ => {
                eprintln!(
                    "fma_peak: `{arg}` is not a thread count (usage: fma_peak [THREADS ...])"
                );
                return ExitCode::from(2);
            }
        }
    }
    if threads.is_empty() {
        threads = vec![1, (cpus / 2).max(1), cpus];
        threads.dedup();
    }
    let Some((isa, lanes, kernel)) = kernel() else {
        eprintln!("fma_peak: needs x86_64 with AVX-512F or AVX2 + FMA");
        return ExitCode::from(2);
    };
    println!("fma_peak: {isa} ({lanes} f32 lanes), 24 chains a thread (12 on AVX2), {cpus} CPUs");
    for t in threads {
        let start = Instant::now();
        let handles: Vec<_> = (0..t)
            .map(|_| std::thread::spawn(move || kernel(ROUNDS)))
            .collect();
        // The sums are printed so that the work cannot be dropped as dead.
        let sum: f32 = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(f32::NAN))
            .sum();
        let secs = start.elapsed().as_secs_f64();
        let flops = t as f64 * ROUNDS as f64 * 24.0 * lanes as f64 * 2.0;
        println!(
            "threads {t:>3}: {:8.1} GFLOP/s in all, {:6.1} a thread (checksum {sum:.3})",
            flops / secs / 1e9,
            flops / secs / 1e9 / t as f64
        );
    }
    ExitCode::SUCCESS
}

/// A kernel's name, its f32 lanes and its entry point (rounds -> checksum).
type Kernel = (&'static str, usize, fn(u64) -> f32);

/// The widest kernel this CPU runs.
#[cfg(target_arch = "x86_64")]
fn kernel() -> Option<Kernel> {
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F was detected just above.
        Some(("AVX-512F", 16, |r| unsafe { x86::burn512(r) }))
    } else if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
    {
        // SAFETY: AVX2 and FMA were detected just above.
        Some(("AVX2+FMA", 8, |r| unsafe { x86::burn256(r) }))
    } else {
        None
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn kernel() -> Option<Kernel> {
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `rounds` x 24 dependent-free 16-lane multiply-adds; returns their sum.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn burn512(rounds: u64) -> f32 {
        let mut acc = [_mm512_set1_ps(1.0); 24];
        let (x, y) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
        for _ in 0..rounds {
            for a in acc.iter_mut() {
                *a = _mm512_fmadd_ps(*a, x, y);
            }
        }
        let s = acc
            .iter()
            .fold(_mm512_setzero_ps(), |s, &a| _mm512_add_ps(s, a));
        _mm512_reduce_add_ps(s)
    }

    /// [`burn512`] on 8-lane AVX2 registers: 12 chains (of 16 registers)
    /// for twice the rounds, so the count of multiply-adds is the same.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn burn256(rounds: u64) -> f32 {
        let mut acc = [_mm256_set1_ps(1.0); 12];
        let (x, y) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
        for _ in 0..2 * rounds {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, x, y);
            }
        }
        let s = acc
            .iter()
            .fold(_mm256_setzero_ps(), |s, &a| _mm256_add_ps(s, a));
        let mut out = [0.0f32; 8];
        // SAFETY: `out` holds 8 floats; the store is unaligned.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), s) };
        out.iter().sum()
    }
}
