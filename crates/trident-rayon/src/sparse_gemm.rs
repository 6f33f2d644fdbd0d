//! SparseGemm for [`RayonBackend`]: a two-pass parallel Gustavson product
//! (row `i` of `C` is the sum of the rows `B(p, :)` scaled by `A(i, p)`).
//!
//! Passes, all on the backend's pool (on 16 cores every serial step showed,
//! so there are none of size `m` or `nnz`):
//! 0. **Checks.** Finiteness and the output's lower bound in parallel; a
//!    failure is reported by `validate::spgemm`, so errors are the canonical ones.
//! 1. **Symbolic.** Each row's distinct columns are counted, in blocks of rows
//!    that rayon hands out and steals (a block of heavy power-law rows is
//!    balanced by the others being stolen); the structure rule is the
//!    contract's, entry `(i, j)` exists iff some product `A(i, p) B(p, j)`
//!    does, so explicit zeros and exact cancellation are kept. A parallel
//!    prefix sum turns the counts into `usize` offsets and sizes the output
//!    exactly.
//! 2. **Numeric.** Rows are cut into contiguous chunks of about equal output
//!    (entries plus rows, read off the offsets: no pass of its own), several per
//!    thread; each row is recomputed and written straight into its slot of the
//!    output, columns sorted, duplicates merged. The output is allocated once
//!    and its pages are first touched by the worker that writes them. Nothing
//!    is copied after.
//!
//! **Fused pass** (instead of 1 and 2) on at most [`FUSED_MAX_THREADS`]
//! threads, when no row can have more than [`FUSED_MAX_FLOPS`] products
//! (stencil and Poisson matrices, whose rows cost as much to count as to
//! compute, and light rows of random columns, their B rows prefetched): blocks of
//! rows, claimed in row order, are computed once into the worker's buffer
//! (L2-resident) and copied to their offset, which each block learns from
//! the counts of the blocks before it ([`Chain`]; a worker never waits on a
//! descheduled one, it counts that block itself). A worker places a block
//! only after computing its next one, by when the blocks before it are
//! mostly counted (poisson2d on 16 threads: 43-44 -> 36-40 ms). The output is reserved
//! at its upper bound (`nnz(A)` times B's longest row; pages never written
//! are never faulted in) and shrunk after; a few steps ahead of the blocks,
//! one worker at a time faults the next pages in ([`FaultAhead`]), so that
//! the workers never stall together on one fresh huge page. When no row can have more than
//! 128 products (5-, 7- and 9-point stencils) a row that repeats the
//! pattern of an earlier one (its product columns shifted by the row
//! index) is summed by that row's plan, with no tags and no sort (poisson2d:
//! 496 -> 373 ms on one thread of the H100 machine); other rows go
//! straight to the short-row accumulator, its slots indexed by column modulo the window and
//! the row's span checked after, rather than found by a pass of its own.
//!
//! Each worker has one workspace for the whole call ([`accum`]); the
//! accumulator is picked per row: a row of at most 64 products within a
//! 64K-column window (stencil rows, light R-MAT rows) gets the short-row
//! one (a tag and a sum per window column, its few columns sorted by
//! insertion), and every row within the window is counted with those tags;
//! otherwise a dense one over a 64K-column window
//! starting at the row's first column when the row's columns can only fall in
//! such a window (banded matrices, moderate `n`: it stays in L2 whatever `n`
//! is), an `n`-wide dense one for rows of thousands of products when `n` is
//! moderate, otherwise a hash table of twice the row's size (L1-resident for
//! the typical row of a few dozen products), sorted on output. The numeric
//! pass writes such rows of at most 256 products (uniform random rows) by
//! merging their already sorted B rows instead (no hash, no sort). The dense
//! accumulators are branch-free (a bitmap, with a summary word per 64 words
//! for the `n`-wide one only, whose rows can span millions of columns;
//! values kept at `-0.0`, the exact additive identity, between rows) and
//! yield the row's columns sorted with no sort. A row with one entry in `A` is
//! a scaled copy of one `B` row and skips both. Both passes prefetch the `B`
//! rows a few rows ahead: with random columns (R-MAT, uniform) they are
//! otherwise bound by memory latency. A banded `A` (every entry within 64K
//! of the diagonal, checked in the lower-bound pass) names `B` rows in a few
//! sequential streams that the hardware prefetches, so every pass skips this. Output buffers are advised onto huge
//! pages, as fresh memory is faulted in while it is written.
//!
//! Determinism: each `C(i, j)` is accumulated in ascending `p` starting from the
//! first product (or from `-0.0`, which gives the same bits), whatever the
//! accumulator, so the output is bit-identical across runs and thread counts.
//! The chunking only steers who computes a row; the counts and the output are
//! exact.
//!
//! With a `tracing` subscriber at debug level, each call emits the time of
//! its phases (checks, symbolic, prefix sum, numeric) as events.
//!
//! Limits: dimensions are `u32` by construction of [`CsrMatrix`]; the output's
//! nnz is a `usize` and an output that cannot be allocated is
//! [`Error::OutOfMemory`], not an abort.

mod accum;
#[cfg(test)]
mod tests;

use std::mem::MaybeUninit;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use trident_core::{CsrMatrix, Error, Result, Scalar, SparseGemm, validate};

use crate::{RayonBackend, split_by};
use accum::{AHEAD, Workspace, prefetch_offsets, prefetch_rows};
use trident_core::mem::advise_huge;

/// The largest distance from the diagonal at which `A` counts as banded: its
/// rows then name `B` rows in a few sequential streams, which the hardware
/// prefetcher follows, and the passes skip their own prefetching (on
/// poisson2d it cost a tenth of the time and saved nothing).
const BAND: usize = 1 << 16;
/// Rows per block of the parallel prefix sum over row counts.
const SCAN_BLOCK: usize = 1 << 14;
/// Rows per task of the symbolic pass: a few hundred microseconds of work for
/// light rows, so rayon's stealing evens out blocks of heavy rows.
const SYMBOLIC_ROWS: usize = 1 << 11;
/// Chunks per thread of the numeric pass: enough slack for rayon to even out
/// chunks whose cost the output size predicts badly (products per entry,
/// hash collisions, cache misses).
const CHUNKS_PER_THREAD: usize = 16;
/// A chunk's minimum work (output entries plus rows): below it, task overhead dominates.
const MIN_CHUNK_WORK: usize = 1 << 15;

impl<T: Scalar> SparseGemm<T> for RayonBackend {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        self.install(|| product(a, b, true))
    }
}

/// `A * B` on the current pool; `fuse` allows the fused pass (the tests
/// turn it off to check the two-pass product on the same small inputs,
/// which are all banded).
fn product<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>, fuse: bool) -> Result<CsrMatrix<T>> {
    let mut trace = Trace::new();
    // The contract's checks, in parallel: on 16 cores the serial
    // `validate::spgemm` and lower bound took a fifth of the product's
    // time. Any failure is reported by the serial check itself, so the
    // error is the canonical one.
    // One pass over each matrix's rows gathers what the checks and the
    // choice of pass need; `A * A` (a square of one matrix) scans it once.
    let sa = scan(a);
    let sb = if std::ptr::eq(a.values(), b.values()) {
        sa
    } else {
        scan(b)
    };
    if a.cols() != b.rows() || !sa.finite || !sb.finite {
        validate::spgemm(a, b)?;
    }
    if a.nnz() == 0 || b.nnz() == 0 {
        return CsrMatrix::zeros(a.rows(), b.cols());
    }
    // An output that cannot fit (an outer product of billions of entries)
    // is refused before the symbolic pass spends seconds counting it.
    // When even `nnz(A)` times B's longest row fits (every entry of C
    // is at least one product), the lower bound's pass over A's
    // entries is skipped: on 16 cores it was a tenth of poisson2d.
    let entry = 4 + size_of::<T>() as u128;
    let upper = a.nnz() as u128 * sb.longest as u128;
    let banded = if upper * entry <= trident_core::mem::host_memory_limit() as u128 {
        sa.banded
    } else {
        let (at_least, banded) = nnz_lower_bound(a, b);
        trident_core::mem::check_bytes(at_least * entry, || {
            format!(
                "the {} x {} product, which has at least {at_least} entries,",
                a.rows(),
                b.cols()
            )
        })?;
        banded
    };
    trace.lap("checks and lower bound", None);
    let threads = rayon::current_num_threads();
    // The fused pass reserves the upper bound, so only when the bound fits
    // the machine (and the allocator agrees); and only when no row can be
    // heavy: the blocks after a heavy one would wait for it or count it again.
    if fuse
        && threads <= FUSED_MAX_THREADS
        && upper * entry <= trident_core::mem::host_memory_limit() as u128
        && sa.longest.saturating_mul(sb.longest) <= FUSED_MAX_FLOPS
        && let Some(c) = fused(
            a,
            b,
            threads,
            upper as usize,
            sa.longest * sb.longest,
            !banded,
            &mut trace,
        )?
    {
        return Ok(c);
    }
    gustavson(a, b, threads, !banded, &mut trace)
}

/// Phase times as debug events, when a subscriber wants them (no clock
/// reads otherwise).
struct Trace(Option<std::time::Instant>);

impl Trace {
    fn new() -> Self {
        Trace(tracing::enabled!(tracing::Level::DEBUG).then(std::time::Instant::now))
    }

    /// Emits the time since the last lap under `phase`, with `nnz` (the
    /// output's entries) where the phase knows it.
    fn lap(&mut self, phase: &'static str, nnz: Option<usize>) {
        if let Some(t) = &mut self.0 {
            tracing::debug!(
                phase,
                nnz,
                ms = t.elapsed().as_secs_f64() * 1e3,
                "sparse_gemm phase"
            );
            *t = std::time::Instant::now();
        }
    }
}

/// What one pass over a matrix's rows tells: whether its values are all
/// finite, its longest row, and whether it is banded (see [`row_banded`]).
#[derive(Clone, Copy)]
struct Scan {
    finite: bool,
    longest: usize,
    banded: bool,
}

/// [`Scan`] of `m`, in parallel over blocks of [`SCAN_BLOCK`] rows (each
/// block's values checked as one slice): one pass where three (values,
/// offsets, then offsets and indices again) took a twentieth of
/// poisson2d-5pt-1024 on 2 cores.
fn scan<T: Scalar>(m: &CsrMatrix<T>) -> Scan {
    let (o, idx) = (m.offsets(), m.indices());
    (0..m.rows().div_ceil(SCAN_BLOCK))
        .into_par_iter()
        .map(|blk| {
            let (r0, r1) = (blk * SCAN_BLOCK, ((blk + 1) * SCAN_BLOCK).min(m.rows()));
            // Folds without early exits, so that they vectorise: a
            // short-circuiting `all` tested one value at a time.
            let finite = m.values()[o[r0]..o[r1]]
                .iter()
                .fold(true, |ok, x| ok & x.is_finite());
            let (mut longest, mut banded) = (0, true);
            for (i, w) in (r0..r1).zip(o[r0..=r1].windows(2)) {
                let len = w[1] - w[0];
                longest = longest.max(len);
                if len > 0 {
                    let (lo, hi) = (idx[w[0]] as usize, idx[w[1] - 1] as usize);
                    banded &= i.abs_diff(lo).max(i.abs_diff(hi)) <= BAND;
                }
            }
            Scan {
                finite,
                longest,
                banded,
            }
        })
        .reduce(
            || Scan {
                finite: true,
                longest: 0,
                banded: true,
            },
            |x, y| Scan {
                finite: x.finite && y.finite,
                longest: x.longest.max(y.longest),
                banded: x.banded && y.banded,
            },
        )
}

/// Whether row `i` of `A` has every entry within [`BAND`] of the diagonal
/// (its first and last columns say).
fn row_banded(i: usize, cols: &[u32]) -> bool {
    match (cols.first(), cols.last()) {
        (Some(&lo), Some(&hi)) => i.abs_diff(lo as usize).max(i.abs_diff(hi as usize)) <= BAND,
        _ => true,
    }
}

/// [`CsrMatrix::product_nnz_lower_bound`] in parallel (per row of `A`, the
/// longest `B` row it names), and whether `A` is banded: every entry within
/// [`BAND`] of the diagonal, so that the `B` rows consecutive rows name are
/// a few sequential streams.
fn nnz_lower_bound<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> (u128, bool) {
    let bo = b.offsets();
    (0..a.rows())
        .into_par_iter()
        .with_min_len(SCAN_BLOCK)
        .map(|i| {
            let cols = a.row(i).0;
            let longest = cols
                .iter()
                .map(|&p| (bo[p as usize + 1] - bo[p as usize]) as u128)
                .max()
                .unwrap_or(0);
            (longest, row_banded(i, cols))
        })
        .reduce(|| (0, true), |x, y| (x.0 + y.0, x.1 && y.1))
}

/// One workspace per worker of the current pool, reused by every row that
/// worker computes in both passes: a worker's dense accumulator is allocated
/// (and its pages faulted in) once per call, not once per rayon task, and
/// never freed while other workers run (freeing mapped memory interrupts
/// every core to flush its TLB).
struct Workspaces<T>(Vec<Mutex<Workspace<T>>>);

impl<T: Scalar> Workspaces<T> {
    fn new(threads: usize, n: usize) -> Self {
        Self(
            (0..threads.max(1))
                .map(|_| Mutex::new(Workspace::new(n)))
                .collect(),
        )
    }

    /// Runs `f` with this worker's workspace. Each worker only ever takes its
    /// own slot, so the lock is never contended; a thread outside the pool
    /// (none in practice) gets a fresh workspace.
    fn with<R>(&self, n: usize, f: impl FnOnce(&mut Workspace<T>) -> R) -> R {
        match rayon::current_thread_index().and_then(|i| self.0.get(i)) {
            Some(m) => f(&mut m.lock().unwrap_or_else(|e| e.into_inner())),
            None => f(&mut Workspace::new(n)),
        }
    }
}

/// Row boundaries `[0, r1, ..., m]` of chunks of about equal work, taking
/// row `i`'s work as its output entries plus one (`offsets` is the output's
/// row offsets, `m + 1` entries): the numeric pass's cost follows what it
/// writes, and this needs no pass of its own.
fn chunk_bounds(offsets: &[usize], threads: usize) -> Vec<usize> {
    let m = offsets.len() - 1;
    let work = |r: usize| offsets[r] - offsets[0] + r;
    let total = work(m);
    let chunks = (total / MIN_CHUNK_WORK).clamp(1, threads.max(1) * CHUNKS_PER_THREAD);
    let mut bounds = vec![0];
    for c in 1..chunks {
        let target = (total as u128 * c as u128 / chunks as u128) as usize;
        // First row whose cumulative work reaches the target (binary search).
        let (mut lo, mut hi) = (0, m);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if work(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo > *bounds.last().unwrap_or(&0) {
            bounds.push(lo);
        }
    }
    if *bounds.last().unwrap_or(&0) < m {
        bounds.push(m);
    }
    bounds
}

/// While row `i` of `[.., r1)` is computed, starts fetching what rows `i + AHEAD`
/// and `i + 2 AHEAD` will need.
#[inline]
fn prefetch_ahead<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &CsrMatrix<T>,
    i: usize,
    r1: usize,
    values: bool,
) {
    if i + 2 * AHEAD < r1 {
        prefetch_offsets(a, b, i + 2 * AHEAD);
    }
    if i + AHEAD < r1 {
        prefetch_rows(a, b, i + AHEAD, values);
    }
}

/// Reserves exactly `len` elements (huge pages advised), or says how much
/// could not be had.
fn reserve<X>(len: usize, what: &str) -> Result<Vec<X>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        bytes: (len as u128 * size_of::<X>() as u128).min(u64::MAX as u128) as u64,
        detail: format!("{what} of the SpGEMM output ({len} entries)"),
    })?;
    // Fresh output memory is faulted in as it is written; on 4 KiB pages those
    // faults cost more than the arithmetic of a light row.
    advise_huge(&mut v);
    Ok(v)
}

/// Turns `counts` into their inclusive prefix sums in parallel (blocks of
/// [`SCAN_BLOCK`], then each block shifted by the blocks before it) and
/// returns the total, or [`Error::TooLarge`] past `usize`.
fn prefix_sum(counts: &mut [usize]) -> Result<usize> {
    let totals: Vec<usize> = counts
        .par_chunks_mut(SCAN_BLOCK)
        .map(|blk| {
            let mut run = 0usize;
            for c in blk.iter_mut() {
                // A block's sum is at most the total, checked below.
                run = run.saturating_add(*c);
                *c = run;
            }
            run
        })
        .collect();
    let mut bases = Vec::with_capacity(totals.len());
    let mut total = 0usize;
    for t in totals {
        bases.push(total);
        total = total.checked_add(t).ok_or(Error::TooLarge {
            field: "nnz(C)",
            value: total as u128 + t as u128,
            limit: usize::MAX as u128,
        })?;
    }
    counts
        .par_chunks_mut(SCAN_BLOCK)
        .zip(bases)
        .for_each(|(blk, base)| {
            if base != 0 {
                blk.iter_mut().for_each(|c| *c += base);
            }
        });
    Ok(total)
}

fn gustavson<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &CsrMatrix<T>,
    threads: usize,
    prefetch: bool,
    trace: &mut Trace,
) -> Result<CsrMatrix<T>> {
    let (m, n) = (a.rows(), b.cols());
    let spaces = Workspaces::new(threads, n);

    // Symbolic pass: offsets[i + 1] = nnz of row i, in blocks of rows that
    // rayon hands out and steals dynamically (a heavy block is balanced by
    // the others being stolen), then the prefix sum.
    // The offsets are first written here, by the workers (no serial zeroing).
    let mut offsets: Vec<usize> = reserve(m + 1, "row offsets")?;
    {
        let slots = &mut offsets.spare_capacity_mut()[..m + 1];
        slots[0].write(0);
        slots[1..]
            .par_chunks_mut(SYMBOLIC_ROWS)
            .enumerate()
            .for_each(|(blk, counts)| {
                let r0 = blk * SYMBOLIC_ROWS;
                let r1 = r0 + counts.len();
                spaces.with(n, |ws| {
                    for (i, slot) in (r0..r1).zip(counts.iter_mut()) {
                        if prefetch {
                            prefetch_ahead(a, b, i, r1, false);
                        }
                        slot.write(ws.count_row(a, b, i));
                    }
                })
            });
    }
    // SAFETY: slot 0 and every slot of `1..=m` (the chunks tile it, each
    // chunk writes each of its slots) were initialised just above.
    unsafe { offsets.set_len(m + 1) };
    trace.lap("symbolic (row counts)", None);
    let nnz = prefix_sum(&mut offsets[1..])?;
    trace.lap("prefix sum", None);

    // Numeric pass: every row written straight into its final slot, in chunks
    // of about equal output; each chunk's pages are first touched by the
    // worker that writes them.
    let bounds = chunk_bounds(&offsets, threads);
    let chunk_nnz = bounds.windows(2).map(|w| offsets[w[1]] - offsets[w[0]]);
    let mut indices: Vec<u32> = reserve(nnz, "column indices")?;
    let mut values: Vec<T> = reserve(nnz, "values")?;
    {
        let idx_parts = split_by(&mut indices.spare_capacity_mut()[..nnz], chunk_nnz.clone());
        let val_parts = split_by(&mut values.spare_capacity_mut()[..nnz], chunk_nnz);
        let offsets = &offsets;
        idx_parts
            .into_par_iter()
            .zip(val_parts)
            .enumerate()
            .with_max_len(1)
            .for_each(|(c, (idx, val))| {
                let (r0, r1) = (bounds[c], bounds[c + 1]);
                let base = offsets[r0];
                spaces.with(n, |ws| {
                    for i in r0..r1 {
                        if prefetch {
                            prefetch_ahead(a, b, i, r1, true);
                        }
                        let (s, e) = (offsets[i] - base, offsets[i + 1] - base);
                        if s < e {
                            let (idx, val) = (&mut idx[s..e], &mut val[s..e]);
                            let count = ws.fill_row::<false>(a, b, i, |_| (idx, val));
                            assert_eq!(
                                count,
                                e - s,
                                "spgemm: symbolic and numeric passes disagree"
                            );
                        }
                    }
                })
            });
    }
    // SAFETY: the numeric pass initialised all of `0..nnz` in both vectors: the
    // chunks' output ranges tile `0..nnz` (chunk `c` holds
    // `offsets[bounds[c]]..offsets[bounds[c + 1]]`, and `offsets[0] = 0`,
    // `offsets[m] = nnz`), each chunk's rows tile its range, and `fill_row`
    // writes the first `count` elements of the range it is given, which the
    // loop asserts is all of it.
    unsafe {
        indices.set_len(nnz);
        values.set_len(nnz);
    }
    trace.lap("numeric (output faulted in here)", Some(nnz));
    Ok(CsrMatrix::from_parts_unchecked(
        m, n, offsets, indices, values,
    ))
}

/// Rows per block of the fused pass: a block's output (a few dozen entries
/// per stencil row) stays in L2 between being computed and copied.
const FUSED_ROWS: usize = 1 << 8;

/// The most products a row may have for the fused pass (`A`'s longest row
/// times `B`'s): a 27-point stencil squared has 729. Past it a block of
/// rows can cost far more than the others, and the blocks after it, which
/// need its count, would wait for it or count it again.
const FUSED_MAX_FLOPS: usize = 1 << 10;

/// The most threads the fused pass runs on; more take the two passes.
/// Measured on the H100 machine's 16 cores (spgemm-poisson2d-2048), fused
/// against two passes: 1.3-1.5x faster on 2 threads, even on 4, 1.05-1.2x
/// faster on 8 (poisson2d-2048 on the H100 machine's cores); on 16, 11-15% slower
/// while workers stalled on the same fresh huge pages (many small blocks
/// share each), and 1.1-1.4x faster (54-69 against 67-75 ms) since
/// [`FaultAhead`] faults the output in ahead of them. Not measured on more.
/// Rows of random columns (spgemm-uniform-1M-8): 1.1-1.3x faster fused on
/// 2-8 threads, and on 16 since a worker places a block after
/// computing its next: 155-168 against 192-200 ms.
const FUSED_MAX_THREADS: usize = 16;

/// Faults the fused pass's output in ahead of the blocks being written:
/// the worker that finishes a block near the frontier populates the next
/// [`FAULT_STEP`] entries of both arrays while the frontier is less than
/// [`FAULT_AHEAD`] entries behind, so that no two workers stall on the same
/// fresh huge page (many small blocks share each one: on 16 threads the
/// pass took 61-75 ms without this, 54-69 with it).
struct FaultAhead {
    done: AtomicUsize,
    upper: usize,
}

/// Entries one [`FaultAhead`] step populates (2 MiB of `u32` indices).
const FAULT_STEP: usize = 1 << 19;
/// Offsets one task populates up front in the fused pass (2 MiB).
const OFFSETS_STEP: usize = 1 << 18;
/// How far ahead of the frontier [`FaultAhead`] keeps the output populated.
const FAULT_AHEAD: usize = 4 * FAULT_STEP;

impl FaultAhead {
    fn new(upper: usize) -> Self {
        Self {
            done: AtomicUsize::new(0),
            upper,
        }
    }

    /// Populates up to `end + FAULT_AHEAD` entries (at most `upper`), one
    /// step per successful claim, each step claimed by one worker only.
    fn reach<T>(&self, end: usize, pi: *mut u32, pv: *mut T) {
        let goal = (end + FAULT_AHEAD).min(self.upper);
        loop {
            let d = self.done.load(Ordering::Relaxed);
            if d >= goal {
                return;
            }
            let to = (d + FAULT_STEP).min(self.upper);
            if self
                .done
                .compare_exchange(d, to, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: `d..to` lies inside both arrays' reservations of
                // `upper` entries; populating writes no byte.
                unsafe {
                    trident_core::mem::populate(pi.add(d), to - d);
                    trident_core::mem::populate(pv.add(d), to - d);
                }
            }
        }
    }
}

/// A block of the fused pass, computed and waiting to be placed: its index,
/// its entries' columns and values, and each row's end in them.
struct Block<T> {
    k: usize,
    len: usize,
    idx: Vec<MaybeUninit<u32>>,
    val: Vec<MaybeUninit<T>>,
    row_ends: Vec<usize>,
}

impl<T: Scalar> Block<T> {
    fn new() -> Self {
        Self {
            k: 0,
            len: 0,
            idx: Vec::new(),
            val: Vec::new(),
            row_ends: Vec::with_capacity(FUSED_ROWS),
        }
    }
}

/// A block's count or end offset not yet known.
const PENDING: usize = usize::MAX;

/// Spins a waiting worker makes before it counts a block itself (none in
/// tests, so that they take that path).
const PATIENCE: u32 = if cfg!(test) { 0 } else { 1 << 11 };

/// A pointer to an output buffer that workers write disjoint ranges of,
/// ranges known only as the pass runs.
#[derive(Clone, Copy)]
struct Out<X>(*mut X);
// SAFETY: the fused pass only writes through it ranges that no other worker
// writes (see `fused`), and `X` is sent between threads by value.
unsafe impl<X: Send> Send for Out<X> {}
// SAFETY: as above; the pointer is never read through.
unsafe impl<X: Send> Sync for Out<X> {}

impl<X> Out<X> {
    /// The pointer (a method, so closures capture the whole `Out`).
    fn get(self) -> *mut X {
        self.0
    }
}

/// What the fused pass's workers tell each other about block `k`: its
/// entries (`count`, known once computed, or counted by a worker that
/// needs it) and its end offset in the output (`end`, known once every
/// block before it has a count).
struct Chain {
    count: Vec<AtomicUsize>,
    end: Vec<AtomicUsize>,
}

impl Chain {
    fn new(blocks: usize) -> Self {
        let pending = || (0..blocks).map(|_| AtomicUsize::new(PENDING)).collect();
        Self {
            count: pending(),
            end: pending(),
        }
    }

    /// The start offset of block `k`: the end of the nearest block before
    /// it that has one, plus the counts of the blocks in between. A block
    /// with neither, after [`PATIENCE`] spins, is counted by `count_block`
    /// (its worker may have been descheduled): no worker ever waits on
    /// another for longer than that.
    fn start(&self, k: usize, mut count_block: impl FnMut(usize) -> usize) -> usize {
        let mut base = 0;
        let mut q = k;
        while q > 0 {
            q -= 1;
            let mut spins = 0;
            let c = loop {
                let e = self.end[q].load(Ordering::Acquire);
                if e != PENDING {
                    return base + e;
                }
                let c = self.count[q].load(Ordering::Acquire);
                if c != PENDING {
                    break c;
                }
                if spins == PATIENCE {
                    let c = count_block(q);
                    self.count[q].store(c, Ordering::Release);
                    break c;
                }
                spins += 1;
                std::hint::spin_loop();
            };
            base += c;
        }
        base
    }
}

/// The product in one pass, for an `A` of light rows (Poisson and
/// stencil matrices, whose rows are as cheap to compute as to count: the
/// symbolic pass cost a third of the product; `prefetch` when `A` is not
/// banded, whose rows name B rows at random). Blocks of [`FUSED_ROWS`]
/// rows are claimed in row order from a counter; a worker computes its
/// block into one of its two buffers (room for each row's products),
/// publishes its count, and then places the block it computed before: finds
/// its start offset from the blocks before it ([`Chain`]), publishes its end
/// and copies it into place. The output is
/// reserved at `upper` entries (only the pages written are ever faulted
/// in) and shrunk at the end. `None` when that reservation is refused.
fn fused<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &CsrMatrix<T>,
    threads: usize,
    upper: usize,
    row_flops: usize,
    prefetch: bool,
    trace: &mut Trace,
) -> Result<Option<CsrMatrix<T>>> {
    let (m, n) = (a.rows(), b.cols());
    let mut offsets: Vec<usize> = reserve(m + 1, "row offsets")?;
    let (Ok(mut indices), Ok(mut values)) = (reserve::<u32>(upper, ""), reserve::<T>(upper, ""))
    else {
        return Ok(None);
    };
    // Every offset is written: fault them all in first, in parallel, so that
    // the workers, whose blocks' offsets share each huge page, do not stall
    // on its first touch together (poisson2d on 16 threads: 3% of the pass).
    let po = Out(offsets.as_mut_ptr());
    (0..(m + 1).div_ceil(OFFSETS_STEP))
        .into_par_iter()
        .with_max_len(1)
        .for_each(|s| {
            let d = s * OFFSETS_STEP;
            // SAFETY: `d..d + len` lies inside the `m + 1` reserved; populating
            // writes no byte.
            unsafe { trident_core::mem::populate(po.get().add(d), OFFSETS_STEP.min(m + 1 - d)) };
        });
    let spaces = Workspaces::new(threads, n);
    let blocks = m.div_ceil(FUSED_ROWS);
    let rows = |k: usize| k * FUSED_ROWS..((k + 1) * FUSED_ROWS).min(m);
    let chain = Chain::new(blocks);
    // No row has more products than the short-row accumulator takes.
    let short = row_flops <= accum::SHORT_MAX_FLOPS;
    let next = AtomicUsize::new(0);
    let (pi, pv) = (Out(indices.as_mut_ptr()), Out(values.as_mut_ptr()));
    let ahead = FaultAhead::new(upper);
    // Puts a computed block in place: its start is the end of the blocks
    // before it ([`Chain`]), it publishes its own end, faults the output in
    // ahead ([`FaultAhead`]) and copies its rows' offsets and entries.
    let place = |blk: &Block<T>, ws: &mut Workspace<T>| {
        let (k, len) = (blk.k, blk.len);
        let base = chain.start(k, |q| rows(q).map(|i| ws.count_row(a, b, i)).sum());
        let end = base + len;
        // Each entry of C is a product: `upper` bounds them all.
        assert!(end <= upper, "spgemm: more entries than products");
        chain.end[k].store(end, Ordering::Release);
        ahead.reach(end, pi.get(), pv.get());
        let r0 = rows(k).start;
        // SAFETY: block k alone writes offsets `r0 + 1..=r1` (and
        // block 0 offset 0), all below the `m + 1` reserved, and
        // entries `base..end`: `base` is the sum of the counts of
        // the blocks before it, so the blocks' ranges tile
        // `0..nnz` in row order and no other block writes these;
        // `end <= upper`, the reserved capacity. The block's buffers
        // hold `len` initialised entries, as `fill_row` wrote
        // the first `count` of each row's room.
        unsafe {
            if k == 0 {
                po.get().write(0);
            }
            for (t, &e) in blk.row_ends.iter().enumerate() {
                po.get().add(r0 + 1 + t).write(base + e);
            }
            std::ptr::copy_nonoverlapping(blk.idx.as_ptr().cast::<u32>(), pi.get().add(base), len);
            std::ptr::copy_nonoverlapping(blk.val.as_ptr().cast::<T>(), pv.get().add(base), len);
        }
    };
    (0..threads.max(1))
        .into_par_iter()
        .with_max_len(1)
        .for_each(|_| {
            spaces.with(n, |ws| {
                // Two blocks in flight: the one being computed and the
                // one before it, placed once the next is computed, by
                // when the blocks before it have their counts (waiting for
                // them right away took a fifth of the workers' time on 16
                // threads).
                let mut bufs = [Block::<T>::new(), Block::new()];
                let mut pending = None;
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= blocks {
                        break;
                    }
                    let cur = pending.map_or(0, |p: usize| 1 - p);
                    let blk = &mut bufs[cur];
                    blk.k = k;
                    blk.len = 0;
                    blk.row_ends.clear();
                    let r1 = rows(k).end;
                    for i in rows(k) {
                        if prefetch {
                            prefetch_ahead(a, b, i, r1, true);
                        }
                        let len = blk.len;
                        let (idx, val) = (&mut blk.idx, &mut blk.val);
                        let room = move |bound: usize| {
                            // Moved in, so that the room outlives the call.
                            let (idx, val) = (idx, val);
                            if idx.len() < len + bound {
                                let grow = (len + bound).max(2 * idx.len());
                                idx.resize(grow, MaybeUninit::uninit());
                                val.resize(grow, MaybeUninit::uninit());
                            }
                            (&mut idx[len..len + bound], &mut val[len..len + bound])
                        };
                        let count = if short {
                            ws.fill_short_row(a, b, i, row_flops, room)
                        } else {
                            ws.fill_row::<true>(a, b, i, room)
                        };
                        blk.len += count;
                        blk.row_ends.push(blk.len);
                    }
                    chain.count[k].store(blk.len, Ordering::Release);
                    if let Some(p) = pending {
                        place(&bufs[p], ws);
                    }
                    pending = Some(cur);
                }
                if let Some(p) = pending {
                    place(&bufs[p], ws);
                }
            })
        });
    let nnz = chain.end[blocks - 1].load(Ordering::Acquire);
    // SAFETY: every block was claimed and completed (the loop ran until the
    // counter passed `blocks` and `for_each` returned without a panic), so
    // offsets `0..=m` and entries `0..nnz` were written (see above).
    unsafe {
        offsets.set_len(m + 1);
        indices.set_len(nnz);
        values.set_len(nnz);
    }
    // Returns the untouched tail of the reservation (a remap, no copy).
    indices.shrink_to_fit();
    values.shrink_to_fit();
    trace.lap("fused (output faulted in here)", Some(nnz));
    Ok(Some(CsrMatrix::from_parts_unchecked(
        m, n, offsets, indices, values,
    )))
}
