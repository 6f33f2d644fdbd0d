//! SparseCoder for [`RayonBackend`]: Batch-OMP (Rubinstein, Zibulevsky and
//! Elad 2008), parallel over signals.
//!
//! Design:
//! - Once per call: the dictionary in f64, padded to a multiple of
//!   [`kernel::W`] atoms with zero columns, and its Gram matrix `G = D^T D`.
//! - Signals are cut into chunks of [`CHUNK`] (a fixed size, so that which
//!   signals share a chunk never depends on the thread count); chunks run in
//!   parallel on the backend's pool, each with its thread's scratch, and their
//!   codes are concatenated in signal order.
//! - Within a chunk, `alpha0 = D^T x` is computed for [`kernel::GROUP`] signals
//!   at a time (each row of `D` loaded once per group), then each signal runs
//!   the Batch-OMP loop on the Gram matrix, never forming a residual: with
//!   `G_II = L L^T` (one row of `L` per step), `z = L^-1 alpha0_I` (one entry
//!   per step) and `V = G_{:,I} L^-T` (one row per step), the correlations
//!   are `alpha = alpha0 - V z`, updated by one row per step; the new row of
//!   `L` is read from `V`, so no triangular solve runs inside the loop;
//!   `||r||^2 = ||x||^2 - ||z||^2`; `gamma = L^-T z` is solved once at the
//!   end. This is the same computation as the paper's `alpha0 - G_I gamma`
//!   with the per-step solves folded into `V` (details in `kernel`).
//!
//! Precision: everything after reading the inputs is f64, for f32 inputs too.
//! Gram-based OMP squares the dictionary's condition number, and coherent
//! dictionaries (the overcomplete DCT) would cost f32 digits that the contract's
//! tolerances need; the f64 loop is vectorized and not the bottleneck it
//! would be in scalar code. Only the outputs are rounded to `T`.
//!
//! Where this differs from textbook Batch-OMP, and why:
//! - `||r||^2` is tracked as `||x||^2 - ||z||^2`, which cancels once the
//!   residual is tiny. Below `1e-8 ||x||^2` the stop decisions use the
//!   residual `x - D_I gamma` formed explicitly instead: a residual at
//!   rounding level is measured rather than read off a difference of two
//!   large numbers (a signal equal to an atom stops after that atom under an
//!   error target down to about 1e-30 `||x||^2`), and an exactly zero one is
//!   seen as the reference sees it (an identity dictionary).
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
//!   costs digits of its coefficients, never the selection.
//!
//! Determinism: each signal's arithmetic is fixed (sums in a fixed order,
//! multiply-adds as `mul_add`, one rounding, in every compiled copy), whatever
//! the chunking, the thread count or the SIMD width picked at run time, so the
//! output is bit-identical across runs, thread counts and x86 CPUs (a test
//! compares the copies).
//!
//! What it is not: a dictionary-learning step (no caching of `G` across calls)
//! or an approximate OMP; memory for `G` is `K^2` f64 per call.

mod kernel;
#[cfg(test)]
mod tests;

use rayon::prelude::*;
use trident_core::{
    Dictionary, MatRef, Result, Scalar, SparseCoder, SparseCodes, StopRule, validate,
};

use crate::RayonBackend;
use kernel::{Chunk, Isa, Prepared, Scratch};

/// Signals per parallel task: enough to amortise task overhead and the
/// per-task output vectors, small enough to balance a few threads.
const CHUNK: usize = 256;

impl<T: Scalar> SparseCoder<T> for RayonBackend {
    fn encode(
        &self,
        dict: &Dictionary<T>,
        signals: MatRef<'_, T>,
        rule: StopRule,
    ) -> Result<SparseCodes<T>> {
        encode_with(self, dict, signals, rule, None)
    }
}

/// [`SparseCoder::encode`], with the SIMD copy of the kernel forced (tests
/// compare them) or detected (`None`).
fn encode_with<T: Scalar>(
    b: &RayonBackend,
    dict: &Dictionary<T>,
    signals: MatRef<'_, T>,
    rule: StopRule,
    isa: Option<Isa>,
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
    let chunks = b.install(|| -> Result<Vec<Chunk<T>>> {
        let prep = Prepared::new(dict, rule, isa)?;
        Ok((0..l.div_ceil(CHUNK))
            .into_par_iter()
            .map_init(
                || Scratch::new(&prep),
                |s, c| {
                    let rows = c * CHUNK..l.min((c + 1) * CHUNK);
                    kernel::encode_rows(&prep, &signals, rows, s)
                },
            )
            .collect())
    })?;
    Ok(merge(chunks, l))
}

/// Concatenates the chunks' codes in signal order.
fn merge<T: Scalar>(chunks: Vec<Chunk<T>>, l: usize) -> SparseCodes<T> {
    let nnz: usize = chunks.iter().map(|c| c.atoms.len()).sum();
    let mut codes = SparseCodes {
        offsets: Vec::with_capacity(l + 1),
        atoms: Vec::with_capacity(nnz),
        coefs: Vec::with_capacity(nnz),
        residual_norm2: Vec::with_capacity(l),
    };
    codes.offsets.push(0);
    let mut end = 0usize;
    for c in chunks {
        for &k in &c.counts {
            end += k as usize;
            codes.offsets.push(end);
        }
        codes.atoms.extend_from_slice(&c.atoms);
        codes.coefs.extend_from_slice(&c.coefs);
        codes.residual_norm2.extend_from_slice(&c.residual_norm2);
    }
    codes
}
