//! Per-row accumulators of the Gustavson product: each counts a row of `C`
//! (symbolic pass) or writes it, columns sorted (numeric pass).
//!
//! Every accumulator forms `C(i, j)` the same way: the first product
//! `A(i, p) B(p, j)` in ascending `p` initialises it and later ones are added in
//! ascending `p`, with plain `*` and `+` (no fused multiply-add). So the values
//! do not depend on which accumulator a row got, and so neither on the chunking
//! nor on the thread count.

use std::mem::MaybeUninit;

use trident_core::{CsrMatrix, Scalar};

use crate::prefetch;

/// Marks a free hash slot. No column can have it: columns are `< cols <= u32::MAX`.
const EMPTY: u32 = u32::MAX;

/// Rows with at least this many products use the dense accumulator (if `n`
/// allows one) whatever their column span: their hash table would outgrow L1,
/// and sorting their columns costs more than scanning a bitmap.
const DENSE_MIN_FLOPS: usize = 1 << 12;

/// A row whose columns can only fall in a window this wide goes to a dense
/// accumulator of this many columns, indexed from the row's first column:
/// its values (256 KiB of f32, 512 KiB of f64) stay in L2 however large `n`
/// is, and no worker ever holds an `n`-wide array for such rows (on 16
/// cores, faulting in one per worker cost more than the product). A dense
/// update is a plain load and store where a hash costs a multiply and a
/// probe. Banded matrices (Poisson) and moderate `n` (R-MAT 16) are all such
/// rows.
const DENSE_WINDOW: usize = 1 << 16;

/// Largest `n` for which a worker keeps an `n`-wide dense accumulator for
/// heavy rows wider than the window (a `T` per column plus a bit: at most 34
/// MiB for f64, and only the pages rows touch are ever faulted in). Wider
/// outputs hash such rows, whose table is bounded by the row's products.
const DENSE_MAX_COLS: usize = 1 << 22;

/// Rows of at most [`SHORT_NARROW_FLOPS`] products whose columns fall in a
/// [`DENSE_WINDOW`] go to the short-row accumulator ([`Short`]): stencil rows
/// (25 products into 13 columns for the 5-point Laplacian squared) and the
/// light rows of R-MAT; so do rows of up to `SHORT_MAX_FLOPS` products whose
/// columns span less than [`SHORT_WIDE_SPAN`]: a 9-point stencil row squared
/// (81 products into 25 columns within 4 grid lines) sorts its few columns
/// faster than the window's bitmap is scanned (a tenth of
/// stencil2d-9pt-724), while an R-MAT row of a hundred random columns would
/// sort them slower. Its slot numbers are a byte, so this must stay below 256.
pub(super) const SHORT_MAX_FLOPS: usize = 128;
const SHORT_NARROW_FLOPS: usize = 64;
const SHORT_WIDE_SPAN: usize = 1 << 13;
const _: () = assert!(SHORT_MAX_FLOPS.is_power_of_two() && SHORT_MAX_FLOPS <= 256);

/// Rows of at most this many products that no window or dense accumulator
/// takes (columns spread over a wide `n`: uniform random rows, light R-MAT
/// rows) are written by merging their sorted B rows ([`Merge`]) instead of
/// a hash table and a sort. Both give the same bits.
const MERGE_MAX_FLOPS: usize = 256;

/// Fibonacci hashing of a column into a table of `2^(64 - shift)` slots: spreads
/// strided column patterns that `col & mask` would pile into one slot.
#[inline(always)]
fn slot(col: u32, shift: u32) -> usize {
    ((col as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
}

/// What decides a row's accumulator: its products, and the column range
/// `lo..=hi` its B rows span (empty when `lo > hi`).
struct RowShape {
    flops: usize,
    lo: usize,
    hi: usize,
}

fn row_shape<T: Scalar>(acols: &[u32], b: &CsrMatrix<T>) -> RowShape {
    let (bo, bi) = (b.offsets(), b.indices());
    let mut r = RowShape {
        flops: 0,
        lo: usize::MAX,
        hi: 0,
    };
    for &p in acols {
        let (s, e) = (bo[p as usize], bo[p as usize + 1]);
        if s < e {
            r.flops = r.flops.saturating_add(e - s);
            r.lo = r.lo.min(bi[s] as usize);
            r.hi = r.hi.max(bi[e - 1] as usize);
        }
    }
    r
}

/// Rows between the prefetch of the B row offsets a row needs and the prefetch
/// of the B rows themselves, and again until the row is computed. Rows of `A`
/// that reach random rows of a large `B` are otherwise bound by memory latency
/// (one miss for the offset, then one for the row), and a row of a few dozen
/// products is too short for the CPU to overlap them on its own.
pub(super) const AHEAD: usize = 4;

/// Prefetches the offsets of the B rows that row `i` of `A` names.
#[inline]
pub(super) fn prefetch_offsets<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>, i: usize) {
    let bo = b.offsets();
    for &p in a.row(i).0 {
        prefetch(&bo[p as usize]);
    }
}

/// Prefetches the first line of the indices (and, with `values`, the values)
/// of each B row that row `i` of `A` names.
#[inline]
pub(super) fn prefetch_rows<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>, i: usize, values: bool) {
    let (bo, bi, bv) = (b.offsets(), b.indices(), b.values());
    for &p in a.row(i).0 {
        let s = bo[p as usize];
        if s < bo[p as usize + 1] {
            prefetch(&bi[s]);
            if values {
                prefetch(&bv[s]);
            }
        }
    }
}

/// Columns and values of row `p` of `b`.
#[inline(always)]
fn brow<T: Scalar>(b: &CsrMatrix<T>, p: u32) -> (&[u32], &[T]) {
    let o = b.offsets();
    let (s, e) = (o[p as usize], o[p as usize + 1]);
    (&b.indices()[s..e], &b.values()[s..e])
}

/// Columns per block of `vals` that is set to `-0.0` the first time a row's
/// window reaches it (so only the blocks rows touch are ever written).
const READY_BLOCK: usize = 1 << 10;

/// A dense accumulator over consecutive columns counted from a base (the
/// row's first column for the window, 0 for the `n`-wide one), updated
/// without branches: bit `j` of `bits` says relative column j is in the current row, bit `w` of `summary` says `bits[w]` is not
/// zero, and `vals[j]` holds the column's sum. Between rows all bits are zero
/// and every ready block of `vals` is `-0.0`, the exact additive identity of
/// IEEE arithmetic (`-0.0 + x` is `x` for every `x`, `-0.0` and NaN
/// included), so adding every product, the first one too, gives the same
/// bits as starting from the first product. Walking `summary`, then `bits`,
/// yields the row's columns in ascending order with no sort, however many.
struct Dense<T> {
    bits: Vec<u64>,
    summary: Vec<u64>,
    vals: Vec<T>,
    /// Blocks of `vals` already set to `-0.0`.
    ready: Vec<bool>,
}

/// Sets bit `j` of `bits` and the bit of its word in `summary`.
#[inline(always)]
fn mark(bits: &mut [u64], summary: &mut [u64], j: usize) {
    let w = j / 64;
    bits[w] |= 1u64 << (j % 64);
    summary[w / 64] |= 1u64 << (w % 64);
}

impl<T: Scalar> Dense<T> {
    fn new(n: usize) -> Self {
        let words = n.div_ceil(64);
        Self {
            bits: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
            // Zeroed memory is mapped lazily; blocks become -0.0 on first use.
            vals: vec![T::ZERO; n],
            ready: vec![false; n.div_ceil(READY_BLOCK)],
        }
    }

    /// Calls `f(self, j)` for every marked column of `lo..=hi`, ascending,
    /// and clears the marks.
    #[inline(always)]
    fn drain(&mut self, lo: usize, hi: usize, mut f: impl FnMut(&mut Self, usize)) {
        for sw in lo / 4096..=hi / 4096 {
            let mut s = std::mem::take(&mut self.summary[sw]);
            while s != 0 {
                let w = sw * 64 + s.trailing_zeros() as usize;
                let mut x = std::mem::take(&mut self.bits[w]);
                while x != 0 {
                    f(self, w * 64 + x.trailing_zeros() as usize);
                    x &= x - 1;
                }
                s &= s - 1;
            }
        }
    }

    /// [`Dense::drain`] for rows that set `bits` only (no summary): walks
    /// the words of `lo..=hi` themselves, and clears them.
    #[inline(always)]
    fn drain_words(&mut self, lo: usize, hi: usize, mut f: impl FnMut(&mut Self, usize)) {
        for w in lo / 64..=hi / 64 {
            let mut x = std::mem::take(&mut self.bits[w]);
            while x != 0 {
                f(self, w * 64 + x.trailing_zeros() as usize);
                x &= x - 1;
            }
        }
    }

    /// Makes sure the blocks of `vals` covering `lo..=hi` hold `-0.0`.
    #[inline]
    fn ready(&mut self, lo: usize, hi: usize) {
        for blk in lo / READY_BLOCK..=hi / READY_BLOCK {
            if !self.ready[blk] {
                let end = ((blk + 1) * READY_BLOCK).min(self.vals.len());
                self.vals[blk * READY_BLOCK..end].fill(T::from_f64(-0.0));
                self.ready[blk] = true;
            }
        }
    }
}

/// The accumulator of short rows, over a window of columns counted from the
/// row's first one (like [`Dense`]): a tag per column saying whether the
/// current row has met it (the row's generation), the column's running sum
/// (`-0.0` between rows, the exact additive identity), and the row's
/// distinct columns in order of first appearance, sorted by insertion at
/// the end. A product is a tag load and store and an add at an address its
/// column gives, with no branch and no chain through a shared word (the
/// bitmap's summary word serialised every product of a row, and scanning it
/// cost more than the row); for banded rows (B rows met in ascending order)
/// the sort moves a handful of columns.
///
/// Every row of either pass takes a new generation, so tags of earlier rows
/// never match and no tag is cleared between rows; when the generations run
/// out the tags are zeroed and numbering starts again at 1 (0 is what a fresh
/// tag holds).
struct Short<T> {
    tags: Vec<u32>,
    generation: u32,
    sums: Vec<T>,
    /// The row's distinct columns, in order of first appearance, then sorted.
    cols: Vec<u32>,
}

impl<T: Scalar> Short<T> {
    fn new() -> Self {
        Self {
            tags: vec![0; DENSE_WINDOW],
            generation: 0,
            sums: vec![T::from_f64(-0.0); DENSE_WINDOW],
            cols: vec![0; SHORT_MAX_FLOPS],
        }
    }

    /// A generation no tag holds.
    #[inline]
    fn next_generation(&mut self) -> u32 {
        if self.generation == u32::MAX {
            self.tags.fill(0);
            self.generation = 0;
        }
        self.generation += 1;
        self.generation
    }

    /// Distinct columns of the products of `acols` with `b`, all of which lie
    /// in `base..base + DENSE_WINDOW`.
    #[inline]
    fn count(&mut self, acols: &[u32], b: &CsrMatrix<T>, base: usize) -> usize {
        let g = self.next_generation();
        let tags = &mut self.tags[..DENSE_WINDOW];
        let mut count = 0;
        for &p in acols {
            for &j in brow(b, p).0 {
                // The mask is a no-op (the row fits the window) that lets the
                // compiler drop the bounds check.
                let r = (j as usize - base) & (DENSE_WINDOW - 1);
                count += usize::from(tags[r] != g);
                tags[r] = g;
            }
        }
        count
    }

    /// [`Self::fill`] of a row of at most [`SHORT_MAX_FLOPS`] products whose
    /// span is not known yet: slots are indexed by the column modulo the
    /// window, and the span is checked after. `None` when it is the
    /// window's or more (columns then share slots): the sums are put back to
    /// `-0.0` and the caller takes another accumulator. Saves the pass that
    /// finds a row's span first (a seventh of poisson2d-5pt on 2 cores).
    #[inline]
    fn fill_any(
        &mut self,
        acols: &[u32],
        avals: &[T],
        b: &CsrMatrix<T>,
        idx: &mut [MaybeUninit<u32>],
        val: &mut [MaybeUninit<T>],
    ) -> Option<usize> {
        const M: usize = SHORT_MAX_FLOPS - 1;
        const W: usize = DENSE_WINDOW - 1;
        let g = self.next_generation();
        let tags = &mut self.tags[..DENSE_WINDOW];
        let sums = &mut self.sums[..DENSE_WINDOW];
        let cols = &mut self.cols[..SHORT_MAX_FLOPS];
        let (mut lo, mut hi) = (u32::MAX, 0);
        let mut count = 0usize;
        for (&p, &av) in acols.iter().zip(avals) {
            let (bc, bv) = brow(b, p);
            if let (Some(&first), Some(&last)) = (bc.first(), bc.last()) {
                lo = lo.min(first);
                hi = hi.max(last);
            }
            for (&j, &bj) in bc.iter().zip(bv) {
                let r = j as usize & W;
                // A branch, as in `fill::<true>`: the callers' rows repeat
                // one pattern.
                if tags[r] != g {
                    tags[r] = g;
                    cols[count & M] = j;
                    count += 1;
                }
                sums[r] += av * bj;
            }
        }
        let neg_zero = T::from_f64(-0.0);
        if lo <= hi && (hi - lo) as usize >= DENSE_WINDOW {
            for &p in acols {
                for &j in brow(b, p).0 {
                    sums[j as usize & W] = neg_zero;
                }
            }
            return None;
        }
        let cols = &mut cols[..count.min(SHORT_MAX_FLOPS)];
        insertion_sort(cols);
        // The caller gives room for every product; should it not, the
        // indexing panics (a bug of ours).
        for (t, &c) in cols.iter().enumerate() {
            idx[t].write(c);
            val[t].write(std::mem::replace(&mut sums[c as usize & W], neg_zero));
        }
        Some(count)
    }

    /// Writes the row `(acols, avals)` times `b` (columns in
    /// `base..base + DENSE_WINDOW`, at most [`SHORT_MAX_FLOPS`] products)
    /// into the front of `idx`/`val`, columns ascending, when they have room
    /// for its columns, and returns how many it has (the caller checks).
    ///
    /// `NARROW`: the row's columns span less than [`SHORT_WIDE_SPAN`], or
    /// the row is one of the fused pass's (stencil rows, a 7-point one in 3D
    /// spans two grid planes), whose pattern of new and repeated columns is
    /// the same from row to row: a branch on it is predicted, and cheaper
    /// than the branch-free update that other rows (R-MAT, whose repeats
    /// are a coin toss) keep.
    #[inline]
    fn fill<const NARROW: bool>(
        &mut self,
        acols: &[u32],
        avals: &[T],
        b: &CsrMatrix<T>,
        base: usize,
        idx: &mut [MaybeUninit<u32>],
        val: &mut [MaybeUninit<T>],
    ) -> usize {
        const M: usize = SHORT_MAX_FLOPS - 1;
        let g = self.next_generation();
        let tags = &mut self.tags[..DENSE_WINDOW];
        let sums = &mut self.sums[..DENSE_WINDOW];
        let cols = &mut self.cols[..SHORT_MAX_FLOPS];
        // `count` stays below the row's products so far, so below
        // SHORT_MAX_FLOPS; the masks only drop bounds checks.
        let mut count = 0usize;
        for (&p, &av) in acols.iter().zip(avals) {
            let (bc, bv) = brow(b, p);
            for (&j, &bj) in bc.iter().zip(bv) {
                let r = (j as usize - base) & (DENSE_WINDOW - 1);
                if NARROW {
                    if tags[r] != g {
                        tags[r] = g;
                        cols[count & M] = j;
                        count += 1;
                    }
                } else {
                    let seen = tags[r] == g;
                    tags[r] = g;
                    // Written every time, kept only for a new column.
                    cols[count & M] = j;
                    count += usize::from(!seen);
                }
                sums[r] += av * bj;
            }
        }
        let cols = &mut cols[..count.min(SHORT_MAX_FLOPS)];
        insertion_sort(cols);
        let neg_zero = T::from_f64(-0.0);
        if count <= idx.len() && count <= val.len() {
            for ((&c, i), v) in cols.iter().zip(idx).zip(val) {
                let r = (c as usize - base) & (DENSE_WINDOW - 1);
                i.write(c);
                v.write(std::mem::replace(&mut sums[r], neg_zero));
            }
        } else {
            // The caller fails; leave the sums at the identity all the same.
            for &c in cols.iter() {
                sums[(c as usize - base) & (DENSE_WINDOW - 1)] = neg_zero;
            }
        }
        count
    }
}

/// Sorts a short row's few columns (at most [`SHORT_MAX_FLOPS`]) in place:
/// for a few dozen keys, mostly in order already, faster than `sort_unstable`.
#[inline]
fn insertion_sort(cols: &mut [u32]) {
    for h in 1..cols.len() {
        let c = cols[h];
        let mut q = h;
        while q > 0 && cols[q - 1] > c {
            cols[q] = cols[q - 1];
            q -= 1;
        }
        cols[q] = c;
    }
}

/// Consecutive rows that miss every plan and still make a new one from their
/// own pattern (a stencil's rows at a grid edge: a few patterns in a row,
/// then the interior's again).
const PLAN_RETRIES: u32 = 4;
/// Past [`PLAN_RETRIES`] misses (rows that repeat no pattern), one row in this
/// many still makes a plan, so that a later run of repeats is caught.
const PLAN_RETRY_EVERY: u32 = 64;
/// Plans a worker keeps: a grid line of a 3D stencil has five patterns
/// (two edge rows at each end, the interior), met again on every line.
const PLAN_SLOTS: usize = 8;

/// A worker's plans, the most recently matched first.
struct Plans<T> {
    list: Vec<Plan<T>>,
    /// Consecutive rows that matched no plan.
    misses: u32,
}

impl<T: Scalar> Plans<T> {
    fn new() -> Self {
        Self {
            list: Vec::new(),
            misses: 0,
        }
    }

    /// Writes row `i` by the first plan it matches and moves that plan to
    /// the front; else, while misses are few (or once every
    /// [`PLAN_RETRY_EVERY`]), makes the row's own plan in place of the least
    /// recently matched. `None` when no plan writes it. Past
    /// [`PLAN_RETRIES`] misses only the front plan is tried, so rows that
    /// repeat nothing pay one quick mismatch each.
    #[inline]
    fn fill(
        &mut self,
        i: usize,
        acols: &[u32],
        avals: &[T],
        b: &CsrMatrix<T>,
        idx: &mut [MaybeUninit<u32>],
        val: &mut [MaybeUninit<T>],
    ) -> Option<usize> {
        let tries = if self.misses <= PLAN_RETRIES {
            self.list.len()
        } else {
            self.list.len().min(1)
        };
        for t in 0..tries {
            if let Some(count) = self.list[t].apply(i, acols, avals, b, idx, val) {
                self.list[..=t].rotate_right(1);
                self.misses = 0;
                return Some(count);
            }
        }
        self.misses += 1;
        if self.misses > PLAN_RETRIES && !self.misses.is_multiple_of(PLAN_RETRY_EVERY) {
            return None;
        }
        if self.list.len() < PLAN_SLOTS {
            self.list.push(Plan::new());
        }
        self.list.rotate_right(1);
        self.list[0].make(i, acols, b);
        self.list[0].apply(i, acols, avals, b, idx, val)
    }
}

/// The fused pass's rows of a stencil product (Poisson) repeat one pattern:
/// row `i + 1` has row `i`'s products at the same columns shifted by one.
/// A plan is such a pattern, made from one row: how many entries each of
/// its B rows has, each product's column relative to the row, the slot of
/// C's row it adds to, and the slots' relative columns, ascending. A row that
/// matches it (checked product by product, as it is summed) needs no tags,
/// no window and no sort: on poisson2d that was most of the row's cost.
/// The products are summed in the same order as by every accumulator (see
/// the module), so the bits are the same.
struct Plan<T> {
    /// Entries of the B row that each entry of A's row names.
    blens: Vec<usize>,
    /// Each product's column minus the row's index.
    rel: Vec<i64>,
    /// Each product's slot in the row of C.
    slot: Vec<u8>,
    /// Each slot's column minus the row's index, ascending.
    cols: Vec<i64>,
    /// The slots' sums.
    sums: Vec<T>,
}

impl<T: Scalar> Plan<T> {
    fn new() -> Self {
        Self {
            blens: Vec::new(),
            rel: Vec::new(),
            slot: Vec::new(),
            cols: Vec::new(),
            sums: vec![T::from_f64(-0.0); SHORT_MAX_FLOPS],
        }
    }

    /// Makes the plan of row `i` (whose products, at most
    /// [`SHORT_MAX_FLOPS`], the caller bounds).
    fn make(&mut self, i: usize, acols: &[u32], b: &CsrMatrix<T>) {
        self.blens.clear();
        self.rel.clear();
        for &p in acols {
            let bc = brow(b, p).0;
            self.blens.push(bc.len());
            self.rel.extend(bc.iter().map(|&j| j as i64 - i as i64));
        }
        debug_assert!(self.rel.len() <= SHORT_MAX_FLOPS);
        self.cols.clone_from(&self.rel);
        self.cols.sort_unstable();
        self.cols.dedup();
        self.slot.clear();
        for r in &self.rel {
            // At most SHORT_MAX_FLOPS (<= 256) slots: each fits a byte.
            self.slot
                .push(self.cols.binary_search(r).unwrap_or_default() as u8);
        }
    }

    /// Writes row `i` into the front of `idx`/`val` and returns its entries
    /// when the row has the plan's pattern and they have room; `None`
    /// otherwise (nothing of the row is kept).
    #[inline]
    fn apply(
        &mut self,
        i: usize,
        acols: &[u32],
        avals: &[T],
        b: &CsrMatrix<T>,
        idx: &mut [MaybeUninit<u32>],
        val: &mut [MaybeUninit<T>],
    ) -> Option<usize> {
        let out = self.cols.len();
        if acols.len() != self.blens.len() || out > idx.len().min(val.len()) {
            return None;
        }
        let neg_zero = T::from_f64(-0.0);
        let sums = &mut self.sums[..SHORT_MAX_FLOPS];
        sums[..out].fill(neg_zero);
        let row = i as i64;
        let mut t = 0;
        for ((&p, &av), &len) in acols.iter().zip(avals).zip(&self.blens) {
            let (bc, bv) = brow(b, p);
            if bc.len() != len {
                return None;
            }
            let (rel, slot) = (&self.rel[t..t + len], &self.slot[t..t + len]);
            for (((&j, &bj), &r), &s) in bc.iter().zip(bv).zip(rel).zip(slot) {
                if j as i64 - row != r {
                    return None;
                }
                sums[s as usize & (SHORT_MAX_FLOPS - 1)] += av * bj;
            }
            t += len;
        }
        for (((&r, &v), ix), vx) in self.cols.iter().zip(&*sums).zip(idx).zip(val) {
            ix.write((row + r) as u32);
            vx.write(v);
        }
        Some(out)
    }
}

/// The numeric pass of a row whose B rows are merged: each B row is already
/// sorted by column, so the row's products, keyed by `(column, t)` where `t`
/// counts products in ascending `p`, form one sorted run per B row; runs are
/// merged pairwise, bottom-up, without branches (`log2` of the row's A
/// entries levels); the walk over the sorted keys then sums each column's
/// products in ascending `p`, starting from the first, as the other
/// accumulators do. On uniform random rows (64 products over a million
/// columns) the hash table's inserts, sort and second lookups cost about
/// twice as much.
struct Merge<T> {
    keys: Vec<u64>,
    spare: Vec<u64>,
    prods: Vec<T>,
    /// Run boundaries in `keys` (`runs[r]..runs[r + 1]`).
    runs: Vec<usize>,
    next: Vec<usize>,
}

impl<T: Scalar> Merge<T> {
    fn new() -> Self {
        Self {
            keys: Vec::with_capacity(MERGE_MAX_FLOPS),
            spare: vec![0; MERGE_MAX_FLOPS],
            prods: Vec::with_capacity(MERGE_MAX_FLOPS),
            runs: Vec::with_capacity(MERGE_MAX_FLOPS + 1),
            next: Vec::with_capacity(MERGE_MAX_FLOPS + 1),
        }
    }

    /// Writes the row `(acols, avals)` times `b` (at most
    /// [`MERGE_MAX_FLOPS`] products) into the front of `idx`/`val`, columns
    /// ascending, as far as they have room, and returns how many columns it
    /// has (the caller checks).
    fn fill(
        &mut self,
        acols: &[u32],
        avals: &[T],
        b: &CsrMatrix<T>,
        idx: &mut [MaybeUninit<u32>],
        val: &mut [MaybeUninit<T>],
    ) -> usize {
        let (keys, prods, runs) = (&mut self.keys, &mut self.prods, &mut self.runs);
        keys.clear();
        prods.clear();
        runs.clear();
        runs.push(0);
        for (&p, &av) in acols.iter().zip(avals) {
            let (bc, bv) = brow(b, p);
            if bc.is_empty() {
                continue;
            }
            for (&j, &bj) in bc.iter().zip(bv) {
                keys.push(((j as u64) << 32) | prods.len() as u64);
                prods.push(av * bj);
            }
            runs.push(keys.len());
        }
        let n = keys.len();
        // Each level merges `src` into `dst`, then the two swap roles.
        let (mut src, mut dst) = (&mut keys[..], &mut self.spare[..n]);
        while runs.len() > 2 {
            let next = &mut self.next;
            next.clear();
            next.push(0);
            for (q, ends) in runs[1..].chunks(2).enumerate() {
                let lo = runs[2 * q];
                let mid = ends[0];
                let hi = *ends.last().unwrap_or(&mid);
                merge_into(&src[lo..mid], &src[mid..hi], &mut dst[lo..hi]);
                next.push(hi);
            }
            std::mem::swap(&mut src, &mut dst);
            std::mem::swap(runs, next);
        }
        let keys: &[u64] = src;
        // Sorted by (column, t): equal columns are adjacent, in ascending p.
        let mut count = 0usize;
        let mut t = 0;
        while t < n {
            let col = (keys[t] >> 32) as u32;
            let mut v = prods[keys[t] as u32 as usize];
            t += 1;
            while t < n && (keys[t] >> 32) as u32 == col {
                v += prods[keys[t] as u32 as usize];
                t += 1;
            }
            if count < idx.len() && count < val.len() {
                idx[count].write(col);
                val[count].write(v);
            }
            count += 1;
        }
        count
    }
}

/// Merges the sorted runs `a` and `b` (distinct keys) into `out`, choosing
/// each output with a select rather than a branch: which run wins is a coin
/// toss for random columns.
#[inline(always)]
fn merge_into(a: &[u64], b: &[u64], out: &mut [u64]) {
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let take = x < y;
        out[k] = if take { x } else { y };
        i += usize::from(take);
        j += usize::from(!take);
        k += 1;
    }
    out[k..k + a.len() - i].copy_from_slice(&a[i..]);
    let k = k + a.len() - i;
    out[k..k + b.len() - j].copy_from_slice(&b[j..]);
}

/// One worker's scratch space, reused across the rows of its chunks.
pub(super) struct Workspace<T> {
    /// Columns of C.
    n: usize,
    /// Hash table keys; all `EMPTY` between rows.
    keys: Vec<u32>,
    /// Hash table values, parallel to `keys`.
    vals: Vec<T>,
    /// The row's distinct columns in order of appearance (hash rows).
    cols: Vec<u32>,
    /// The [`DENSE_WINDOW`]-wide accumulator, allocated on the first row
    /// that fits it.
    window: Option<Dense<T>>,
    /// The `n`-wide accumulator, allocated on the first heavy row wider than
    /// the window.
    wide: Option<Dense<T>>,
    /// The short-row accumulator, allocated on the first short row.
    short: Option<Short<T>>,
    /// The run merger, allocated on the first row it takes.
    merge: Option<Merge<T>>,
    /// The fused pass's row plans, made on its first short row.
    plans: Option<Plans<T>>,
}

impl<T: Scalar> Workspace<T> {
    /// Scratch for products with `n` output columns.
    pub(super) fn new(n: usize) -> Self {
        Self {
            n,
            keys: Vec::new(),
            vals: Vec::new(),
            cols: Vec::new(),
            window: None,
            wide: None,
            short: None,
            merge: None,
            plans: None,
        }
    }

    /// The short-row accumulator and the column its tag 0 stands for, when
    /// the row is short enough for it.
    fn short(&mut self, r: &RowShape) -> Option<(&mut Short<T>, usize)> {
        let span = r.hi - r.lo;
        (span < DENSE_WINDOW
            && (r.flops <= SHORT_NARROW_FLOPS
                || (r.flops <= SHORT_MAX_FLOPS && span < SHORT_WIDE_SPAN)))
            .then(|| (self.short.get_or_insert_with(Short::new), r.lo))
    }

    /// The dense accumulator for a row of this shape and the column its
    /// index 0 stands for, or `None` when the row hashes.
    fn dense(&mut self, r: &RowShape) -> Option<(&mut Dense<T>, usize)> {
        if r.hi - r.lo < DENSE_WINDOW {
            let d = self.window.get_or_insert_with(|| Dense::new(DENSE_WINDOW));
            Some((d, r.lo))
        } else if self.n <= DENSE_MAX_COLS && r.flops >= DENSE_MIN_FLOPS {
            let n = self.n;
            Some((self.wide.get_or_insert_with(|| Dense::new(n)), 0))
        } else {
            None
        }
    }

    /// A table of at least twice `distinct` slots (load factor <= 1/2), all
    /// `EMPTY`; returns its size and the hash shift.
    fn table(&mut self, distinct: usize) -> (usize, u32) {
        let size = distinct.saturating_mul(2).next_power_of_two().max(8);
        if self.keys.len() < size {
            self.keys.resize(size, EMPTY);
            self.vals.resize(size, T::ZERO);
        }
        (size, 64 - size.trailing_zeros())
    }

    /// Number of distinct columns of row `i` of `A * B`.
    pub(super) fn count_row(&mut self, a: &CsrMatrix<T>, b: &CsrMatrix<T>, i: usize) -> usize {
        let acols = a.row(i).0;
        match acols.len() {
            0 => return 0,
            // One B row: its columns are already distinct.
            1 => return brow(b, acols[0]).0.len(),
            _ => {}
        }
        let shape = row_shape(acols, b);
        if shape.flops == 0 {
            return 0;
        }
        // Any row within the window counts by tags (one load and store per
        // product at its column's address): the bitmap's read-modify-writes
        // of one summary word made a chain through every product of a
        // banded row (a 27-point stencil squared ran at a third of scipy's
        // speed per product).
        if shape.hi - shape.lo < DENSE_WINDOW {
            let sh = self.short.get_or_insert_with(Short::new);
            return sh.count(acols, b, shape.lo);
        }
        if let Some((d, base)) = self.dense(&shape) {
            let (bits, summary) = (&mut d.bits, &mut d.summary);
            for &p in acols {
                for &j in brow(b, p).0 {
                    mark(bits, summary, j as usize - base);
                }
            }
            let mut count = 0;
            d.drain(shape.lo - base, shape.hi - base, |_, _| count += 1);
            count
        } else {
            let (size, shift) = self.table(shape.flops.min(self.n));
            let mask = size - 1;
            let keys = &mut self.keys[..size];
            let mut count = 0;
            for &p in acols {
                for &j in brow(b, p).0 {
                    let mut s = slot(j, shift);
                    loop {
                        let k = keys[s];
                        if k == j {
                            break;
                        }
                        if k == EMPTY {
                            keys[s] = j;
                            count += 1;
                            break;
                        }
                        s = (s + 1) & mask;
                    }
                }
            }
            keys.fill(EMPTY);
            count
        }
    }

    /// [`Self::fill_row`] (patterned) for a product none of whose rows has
    /// more than `bound` products, `bound` at most [`SHORT_MAX_FLOPS`]: rows
    /// of two or more A entries go straight to the short-row accumulator,
    /// their span checked after ([`Short::fill_any`]).
    pub(super) fn fill_short_row<'o>(
        &mut self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
        i: usize,
        bound: usize,
        room: impl FnOnce(usize) -> (&'o mut [MaybeUninit<u32>], &'o mut [MaybeUninit<T>]),
    ) -> usize {
        debug_assert!(bound <= SHORT_MAX_FLOPS);
        let (acols, avals) = a.row(i);
        if acols.len() < 2 {
            return self.fill_row::<true>(a, b, i, room);
        }
        let (idx, val) = room(bound.min(self.n));
        let plans = self.plans.get_or_insert_with(Plans::new);
        if let Some(count) = plans.fill(i, acols, avals, b, idx, val) {
            return count;
        }
        let sh = self.short.get_or_insert_with(Short::new);
        match sh.fill_any(acols, avals, b, idx, val) {
            Some(count) => count,
            None => self.fill_row::<true>(a, b, i, |_| (idx, val)),
        }
    }

    /// Writes row `i` of `A * B`, columns ascending, into the front of the
    /// slices that `room` returns when given an upper bound on the row's
    /// entries (its products, at most `n`), and returns how many it wrote.
    /// The slices must hold the whole row: the two-pass product passes the
    /// row's exact slot (its count from [`Self::count_row`]) and checks the
    /// returned count; the fused one passes room for the bound. A row that
    /// does not fit panics (a bug of ours) rather than be cut short.
    ///
    /// `PATTERNED`: short rows branch on new columns whatever their span
    /// (see [`Short::fill`]); the fused pass's rows (banded, light) repeat
    /// one pattern.
    pub(super) fn fill_row<'o, const PATTERNED: bool>(
        &mut self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
        i: usize,
        room: impl FnOnce(usize) -> (&'o mut [MaybeUninit<u32>], &'o mut [MaybeUninit<T>]),
    ) -> usize {
        let (acols, avals) = a.row(i);
        match acols.len() {
            0 => return 0,
            1 => {
                let (bc, bv) = brow(b, acols[0]);
                let len = bc.len();
                let (idx, val) = room(len);
                let av = avals[0];
                for ((i, v), (&j, &bj)) in idx[..len]
                    .iter_mut()
                    .zip(&mut val[..len])
                    .zip(bc.iter().zip(bv))
                {
                    i.write(j);
                    v.write(av * bj);
                }
                return len;
            }
            _ => {}
        }
        let shape = row_shape(acols, b);
        if shape.flops == 0 {
            return 0;
        }
        let (idx, val) = room(shape.flops.min(self.n));
        let len = idx.len().min(val.len());
        let shape = row_shape(acols, b);
        let narrow = PATTERNED || shape.hi - shape.lo < SHORT_WIDE_SPAN;
        if let Some((sh, base)) = self.short(&shape) {
            let count = if narrow {
                sh.fill::<true>(acols, avals, b, base, idx, val)
            } else {
                sh.fill::<false>(acols, avals, b, base, idx, val)
            };
            assert!(count <= len, "spgemm: the row does not fit its slot");
            return count;
        }
        if let Some((d, base)) = self.dense(&shape) {
            d.ready(shape.lo - base, shape.hi - base);
            // A window row (at most 1024 words) sets its bits only and is
            // drained word by word: no summary word to update per product.
            let window = shape.hi - shape.lo < DENSE_WINDOW;
            // Locals, so the loop keeps the three base pointers in registers.
            let Dense {
                bits,
                summary,
                vals,
                ..
            } = d;
            for (&p, &av) in acols.iter().zip(avals) {
                let (bc, bv) = brow(b, p);
                for (&j, &bj) in bc.iter().zip(bv) {
                    let r = j as usize - base;
                    vals[r] += av * bj;
                    if window {
                        bits[r / 64] |= 1u64 << (r % 64);
                    } else {
                        mark(bits, summary, r);
                    }
                }
            }
            let mut t = 0;
            let mut emit = |d: &mut Dense<T>, r: usize| {
                // Indexing panics (a bug of ours) should the passes disagree.
                idx[t].write((r + base) as u32);
                val[t].write(std::mem::replace(&mut d.vals[r], T::from_f64(-0.0)));
                t += 1;
            };
            let (lo, hi) = (shape.lo - base, shape.hi - base);
            if window {
                d.drain_words(lo, hi, &mut emit);
            } else {
                d.drain(lo, hi, &mut emit);
            }
            t
        } else if shape.flops <= MERGE_MAX_FLOPS {
            let m = self.merge.get_or_insert_with(Merge::new);
            let count = m.fill(acols, avals, b, idx, val);
            assert!(count <= len, "spgemm: the row does not fit its slot");
            count
        } else {
            let (size, shift) = self.table(len);
            let mask = size - 1;
            let keys = &mut self.keys[..size];
            let vals = &mut self.vals[..size];
            let cols = &mut self.cols;
            for (&p, &av) in acols.iter().zip(avals) {
                let (bc, bv) = brow(b, p);
                for (&j, &bj) in bc.iter().zip(bv) {
                    let prod = av * bj;
                    let mut s = slot(j, shift);
                    loop {
                        let k = keys[s];
                        if k == j {
                            vals[s] += prod;
                            break;
                        }
                        if k == EMPTY {
                            // A full table would make this loop spin: fail loudly
                            // should the row outgrow its slot (a bug of ours).
                            assert!(cols.len() < len, "spgemm: the row does not fit its slot");
                            keys[s] = j;
                            vals[s] = prod;
                            cols.push(j);
                            break;
                        }
                        s = (s + 1) & mask;
                    }
                }
            }
            let count = cols.len();
            cols.sort_unstable();
            for (t, &j) in cols.iter().enumerate() {
                let mut s = slot(j, shift);
                while keys[s] != j {
                    s = (s + 1) & mask;
                }
                idx[t].write(j);
                val[t].write(vals[s]);
            }
            keys.fill(EMPTY);
            cols.clear();
            count
        }
    }
}

#[cfg(test)]
mod short_tests {
    use super::*;

    /// When the generations run out, the tags are cleared and counting and
    /// sums stay right across the wrap.
    #[test]
    fn generations_wrap() {
        let b = CsrMatrix::new(
            2,
            4,
            vec![0, 2, 4],
            vec![0, 2, 1, 2],
            vec![1.0f32, 2.0, 3.0, 4.0],
        )
        .unwrap();
        let mut sh = Short::<f32>::new();
        sh.generation = u32::MAX - 2;
        for _ in 0..6 {
            assert_eq!(sh.count(&[0, 1], &b, 0), 3);
            let mut idx = [MaybeUninit::uninit(); 3];
            let mut val = [MaybeUninit::uninit(); 3];
            assert_eq!(
                sh.fill::<true>(&[0, 1], &[1.0, 1.0], &b, 0, &mut idx, &mut val),
                3
            );
            // SAFETY: `fill` wrote all three, as it returned their count.
            let (idx, val) =
                unsafe { (idx.map(|x| x.assume_init()), val.map(|x| x.assume_init())) };
            assert_eq!((idx, val), ([0, 1, 2], [1.0, 3.0, 6.0]));
        }
        // Two rows before the wrap, ten after it.
        assert_eq!(sh.generation, 10);
    }
}
