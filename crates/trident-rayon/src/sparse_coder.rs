//! SparseCoder for [`RayonBackend`]: Batch-OMP (Rubinstein, Zibulevsky and
//! Elad 2008), parallel over signals.
//!
//! Design:
//! - Once per call: the dictionary in the working type (f32 for f32 inputs,
//!   f64 for f64 inputs), padded to a multiple of [`kernel::W`] atoms with
//!   zero columns, and its Gram matrix `G = D^T D`.
//! - Signals are cut into chunks of [`CHUNK`] (a fixed size, so that which
//!   signals share a chunk never depends on the thread count); chunks run in
//!   parallel on the backend's pool, each with its thread's scratch, and their
//!   codes are concatenated in signal order.
//! - Within a chunk, `alpha0 = D^T x` is computed for [`kernel::GROUP`] signals
//!   at a time (each row of `D` loaded once per group), then each signal runs
//!   the Batch-OMP loop (two signals in lockstep, so that the core overlaps
//!   their chains of dependent scalar work; each signal's arithmetic is its
//!   own) on the Gram matrix, never forming a residual: with
//!   `G_II = L L^T` (one row of `L` per step), `z = L^-1 alpha0_I` (one entry
//!   per step) and `V = G_{:,I} L^-T` (one row per step), the correlations
//!   are `alpha = alpha0 - V z`, updated by one row per step; the new row of
//!   `L` is read from `V`, so no triangular solve runs inside the loop;
//!   `||r||^2 = ||x||^2 - ||z||^2`; `gamma = L^-T z` is solved once at the
//!   end. This is the same computation as the paper's `alpha0 - G_I gamma`
//!   with the per-step solves folded into `V` (details in `kernel`).
//! - A step's row update also finds the next step's atom (the largest
//!   `|alpha|` and its first index, tracked per lane as `alpha` is written):
//!   f32 on AVX-512 and AVX2, in intrinsics (`avx512`, `avx2`); elsewhere
//!   the update and then a separate argmax, with the same results.
//!
//! Precision: f64 inputs run everything in f64. f32 inputs run the hot loops
//! (`alpha0`, the row updates, the argmax) and the Cholesky factor in f32:
//! the loops are BLAS-2-like (one load per multiply-add), so f32 doubles the
//! SIMD lanes and halves the bytes. The inputs convert to f32 exactly, and
//! the contract's f32 tolerances (docs/tolerances.md: near tie `1e-4`
//! relative, coefficients `1e-3`, residual floor `1e-5 ||x||^2`) sit far above
//! what the f32 loop's rounding costs (correlations off by about
//! `sqrt(n) eps_f32 ||x||`, 1e-6 `||x||`), as the all-f32 wgpu backend shows.
//! What stays in f64, because it is cheap and decides accuracy:
//! - `||x||^2`, every explicit residual, and the reported `||r||^2`
//!   (recomputed from `x` and the coefficients as returned);
//! - the refinement of the coefficients of a signal whose pivots fall below
//!   0.1 `G_jj` (one step against the explicit residual, see
//!   `kernel::refine`): the f32 Cholesky coefficients are off by about
//!   `cond(G_II) eps_f32`, 8.5e-6 relative for a pair of atoms 0.04 rad
//!   apart, f64-loop level after the step. On the overcomplete DCT no
//!   benchmark signal needs it: the worst coefficient error of 20K signals
//!   is 1.7e-3 of the `1e-3` tolerance;
//! - every decision at rounding level: where the f32 loop would have to tell
//!   a correlation or a pivot from rounding (a best correlation below
//!   `64 sqrt(n) eps_f32 ||x||`, a pivot below `1e-3 G_jj`, i.e. an atom
//!   within 0.03 rad of the span), or where f32 squares could overflow or
//!   underflow, the signal is coded again from scratch by the f64 loop, so
//!   the contract's stops below are applied exactly as for f64 inputs. On the
//!   benchmark's DCT signals no signal takes that path; with an error target
//!   at rounding level most do.
//!
//! Where this differs from textbook Batch-OMP, and why:
//! - `||r||^2` is tracked as `||x||^2 - ||z||^2`, which cancels once the
//!   residual is tiny. Below `1e-8 ||x||^2` the stop decisions use the
//!   residual `x - D_I gamma` formed explicitly instead: a residual at
//!   rounding level is measured rather than read off a difference of two
//!   large numbers (a signal equal to an atom stops after that atom under an
//!   error target down to about 1e-30 `||x||^2`), and an exactly zero one is
//!   seen as the reference sees it (an identity dictionary).
//!   (That is f64's threshold; the f32 loop's is `1e-4 ||x||^2`, see
//!   `kernel::Float::TRUST`.)
//! - The reported `||r||^2` is always recomputed in f64 from `x` and the
//!   coefficients as rounded to `T`: it is the residual of the code returned,
//!   not an estimate.
//! - Selection follows the reference's rules exactly: an atom whose
//!   correlation is zero up to rounding
//!   ([`trident_core::omp_zero_correlation`], e.g. a duplicate of a chosen
//!   atom) ends the signal; an atom whose Cholesky update has no positive
//!   pivot (in the span of the chosen atoms up to rounding) is dropped and
//!   ends it, the Gram version of the reference's exactly singular system.
//!   There is no other stop: a nearly collinear atom (angle 1e-7 to the span)
//!   is added, and the Gram matrix, which squares the condition number, then
//!   costs digits of its coefficients, never the selection. A pivot below
//!   `1e-8 G_jj` ([`trident_core::tol::OMP_ILL_PIVOT_F64`], shared with the
//!   CUDA kernel) has the coefficients refined against the explicit f64
//!   residual: three steps, then more while the corrections still matter and
//!   still halve (at 1e-7 rad each step gains only a digit or two).
//! - The ends of the number range: an f64 signal whose largest entry lies
//!   outside `[2^-256, 2^256)` is coded as `x 2^s`, the power of two that
//!   brings that entry into `[1, 2)`, with the error target scaled alike
//!   ([`trident_core::omp::SignalScale`]); the coefficients and `||r||^2`
//!   come back scaled by `2^-s` (infinite where beyond `T`, and `||r||^2`
//!   infinite where a coefficient is). Every other signal is coded with
//!   scale 1, bit for bit as without this rule; f32 signals need no scaling
//!   (the f64 loop holds every f32 square, and the f32 loop hands signals
//!   outside its range to it).
//!
//! Determinism: each signal's arithmetic is fixed (sums in a fixed order,
//! multiply-adds as `mul_add`, one rounding, in every compiled copy, in f32
//! as in f64; whether an f32 signal goes to the f64 loop depends on that
//! signal's own arithmetic only), whatever the chunking, the thread count or
//! the SIMD width picked at run time, so the output is bit-identical across
//! runs, thread counts and x86 CPUs (a test compares the copies, for f32
//! signals of both loops and f64).
//!
//! What it is not: a dictionary-learning step (no caching of `G` across calls)
//! or an approximate OMP; memory for `G` is `K^2` values of the working type
//! per call (plus `K^2` f64 for an f32 call once a signal needs the f64 loop).
//!
//! With a `tracing` subscriber at debug level, each call emits the time of
//! the coding and of the merge as an event.

mod aligned;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod kernel;
#[cfg(test)]
mod tests;

use rayon::prelude::*;
use trident_core::mem::advise_huge;
use trident_core::{
    Dictionary, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule, validate,
};

use crate::{RayonBackend, split_by};
use kernel::{Chunk, Float, Isa, Prepared, Scratch, Wide};

/// Signals per parallel task: enough to amortise task overhead and the
/// per-task output vectors, small enough to balance a few threads.
const CHUNK: usize = 256;

/// Output bytes of atoms one merge task copies at least (at 16 atoms a
/// signal): a huge page's worth, so that tasks fault in pages of their own.
const MERGE_BYTES: usize = 2 << 20;

impl<T: Scalar> SparseCoder<T> for RayonBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        encode_with(self, dict, signals, rule, None, true)
    }
}

/// [`SparseCoder::encode`], with the SIMD copy of the kernel forced (tests
/// compare them) or detected (`None`), and each group's signals coded in
/// lockstep (the default) or one after the other (tests compare the two).
fn encode_with<T: Scalar>(
    b: &RayonBackend,
    dict: &Dictionary<T>,
    signals: MatRef<'_, T>,
    rule: StopRule,
    isa: Option<Isa>,
    lockstep: bool,
) -> Result<SparseCodes<T>> {
    validate::encode(dict, &signals, &rule)?;
    let l = signals.rows();
    if l == 0 {
        return Ok(SparseCodes {
            offsets: vec![0],
            atoms: Vec::new(),
            coefs: Vec::new(),
            residual_norm2: Vec::new(),
        });
    }
    let t = tracing::enabled!(tracing::Level::DEBUG).then(std::time::Instant::now);
    let chunks = if is_f32::<T>() {
        encode_in::<T, f32>(b, dict, &signals, rule, isa, lockstep)?
    } else {
        encode_in::<T, f64>(b, dict, &signals, rule, isa, lockstep)?
    };
    let t1 = t.map(|t| (t, std::time::Instant::now()));
    // In the backend's pool, as the coding (the merge is parallel too).
    let codes = b.install(|| merge(chunks, l));
    if let Some((t0, t1)) = t1 {
        tracing::debug!(
            signals = l,
            coding_ms = (t1 - t0).as_secs_f64() * 1e3,
            merge_ms = t1.elapsed().as_secs_f64() * 1e3,
            "sparse_coder phases"
        );
    }
    Ok(codes)
}

/// [`SparseCoder::encode`] with the f64 loop for every signal, whatever
/// `T` (tests compare the f32 loop's hand-overs with it).
#[cfg(test)]
fn encode_f64_loop<T: Scalar>(
    b: &RayonBackend,
    dict: &Dictionary<T>,
    signals: MatRef<'_, T>,
    rule: StopRule,
) -> Result<SparseCodes<T>> {
    validate::encode(dict, &signals, &rule)?;
    let chunks = encode_in::<T, f64>(b, dict, &signals, rule, None, true)?;
    Ok(merge(chunks, signals.rows()))
}

/// Whether `T` is f32: its signals run the f32 loop (the precision argument
/// is in the module docs).
fn is_f32<T: Scalar>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
}

/// Codes all signals with the loop in `F` (with the f64 loop standing by for
/// the signals the f32 one hands over), in parallel chunks.
fn encode_in<T: Scalar, F: Float>(
    b: &RayonBackend,
    dict: &Dictionary<T>,
    signals: &MatRef<'_, T>,
    rule: StopRule,
    isa: Option<Isa>,
    lockstep: bool,
) -> Result<Vec<Chunk<T>>> {
    let l = signals.rows();
    b.install(|| -> Result<Vec<Chunk<T>>> {
        let mut prep = Prepared::<F>::new(dict, rule, isa, true)?;
        prep.lockstep = lockstep;
        let wide = Wide::new(dict, rule, prep.isa);
        (0..l.div_ceil(CHUNK))
            .into_par_iter()
            .map_init(
                || Scratch::new(&prep),
                |s, c| {
                    let rows = c * CHUNK..l.min((c + 1) * CHUNK);
                    kernel::encode_rows(&prep, &wide, signals, rows, s)
                },
            )
            .collect()
    })
}

/// Concatenates the chunks' codes in signal order, each chunk copied by its
/// own task into its part of the output (on 16 cores a serial copy of a
/// million signals' codes, some 150 MB with fresh pages faulted in, was a
/// sizeable serial tail).
fn merge<T: Scalar>(chunks: Vec<Chunk<T>>, l: usize) -> SparseCodes<T> {
    let nnz: usize = chunks.iter().map(|c| c.atoms.len()).sum();
    let mut offsets: Vec<usize> = Vec::with_capacity(l + 1);
    let mut atoms: Vec<u32> = Vec::with_capacity(nnz);
    let mut coefs: Vec<T> = Vec::with_capacity(nnz);
    let mut residual_norm2: Vec<T> = Vec::with_capacity(l);
    // Fresh output (150 MB for a million signals): on huge pages, and each
    // task copies enough chunks (about 2 MiB of atoms) that the tasks fault
    // in pages of their own rather than queue on the same ones.
    advise_huge(&mut offsets);
    advise_huge(&mut atoms);
    advise_huge(&mut coefs);
    advise_huge(&mut residual_norm2);
    let per_task = (MERGE_BYTES / (CHUNK * 4 * 16)).max(1);
    {
        let sig = || chunks.iter().map(|c| c.counts.len());
        let nz = || chunks.iter().map(|c| c.atoms.len());
        let mut base = 0usize;
        let bases: Vec<usize> = nz()
            .map(|n| {
                base += n;
                base - n
            })
            .collect();
        let offsets = &mut offsets.spare_capacity_mut()[..l + 1];
        offsets[0].write(0);
        let parts = split_by(&mut offsets[1..], sig())
            .into_iter()
            .zip(split_by(&mut atoms.spare_capacity_mut()[..nnz], nz()))
            .zip(split_by(&mut coefs.spare_capacity_mut()[..nnz], nz()))
            .zip(split_by(
                &mut residual_norm2.spare_capacity_mut()[..l],
                sig(),
            ))
            .zip(chunks.iter().zip(bases))
            .collect::<Vec<_>>();
        parts
            .into_par_iter()
            .with_min_len(per_task)
            .for_each(|((((o, a), f), r), (c, base))| {
                // What the SAFETY note below relies on (the kernel pushes one
                // count and one residual per signal, a coefficient per atom).
                assert!(c.residual_norm2.len() == c.counts.len() && c.coefs.len() == c.atoms.len());
                let mut end = base;
                for (slot, &k) in o.iter_mut().zip(&c.counts) {
                    end += k as usize;
                    slot.write(end);
                }
                for (d, &v) in a.iter_mut().zip(&c.atoms) {
                    d.write(v);
                }
                for (d, &v) in f.iter_mut().zip(&c.coefs) {
                    d.write(v);
                }
                for (d, &v) in r.iter_mut().zip(&c.residual_norm2) {
                    d.write(v);
                }
            });
    }
    // SAFETY: offsets[0] and, for every chunk, its own consecutive parts of
    // all four outputs were written above: the parts tile `1..=l` (offsets),
    // `0..nnz` (atoms, coefs) and `0..l` (residuals), as the chunks' lengths
    // sum to exactly those (each chunk has one count and one residual per
    // signal, and as many atoms as coefficients).
    unsafe {
        offsets.set_len(l + 1);
        atoms.set_len(nnz);
        coefs.set_len(nnz);
        residual_norm2.set_len(l);
    }
    SparseCodes {
        offsets,
        atoms,
        coefs,
        residual_norm2,
    }
}
