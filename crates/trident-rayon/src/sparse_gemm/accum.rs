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

/// Marks a free hash slot. No column can have it: columns are `< cols <= u32::MAX`.
const EMPTY: u32 = u32::MAX;

/// Rows with at least this many products use the dense accumulator (if `n`
/// allows one): their hash table would outgrow L1/L2, and sorting their columns
/// costs more than scanning a bitmap.
const DENSE_MIN_FLOPS: usize = 1 << 12;

/// A row also goes dense when the bitmap words spanning all `n` columns are at
/// most this many times its products: the scan is then cheaper than the sort.
const DENSE_SCAN_PER_FLOP: usize = 4;

/// Largest `n` for which a worker keeps an `n`-wide dense accumulator (a `T`
/// per column plus a bit: at most 34 MiB for f64, and only the pages a row
/// touches are ever faulted in). Wider outputs always hash, whose table is
/// bounded by the row's products instead.
const DENSE_MAX_COLS: usize = 1 << 22;

/// Fibonacci hashing of a column into a table of `2^(64 - shift)` slots: spreads
/// strided column patterns that `col & mask` would pile into one slot.
#[inline(always)]
fn slot(col: u32, shift: u32) -> usize {
    ((col as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
}

/// Number of scalar products in row `i` of `A * B`.
#[inline]
pub(super) fn row_flops<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>, i: usize) -> usize {
    let bo = b.offsets();
    a.row(i)
        .0
        .iter()
        .map(|&p| bo[p as usize + 1] - bo[p as usize])
        .fold(0usize, usize::saturating_add)
}

/// Rows between the prefetch of the B row offsets a row needs and the prefetch
/// of the B rows themselves, and again until the row is computed. Rows of `A`
/// that reach random rows of a large `B` are otherwise bound by memory latency
/// (one miss for the offset, then one for the row), and a row of a few dozen
/// products is too short for the CPU to overlap them on its own.
pub(super) const AHEAD: usize = 4;

/// Hints the CPU to pull the cache line holding `x` into L1.
#[inline(always)]
fn prefetch<X>(x: &X) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it cannot fault or change memory, and
    // SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(x as *const X as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

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

/// The n-wide accumulator: bit `j` of `bits` says column j is in the current
/// row. Reading the set bits word by word yields the columns already sorted, and
/// zeroes the bitmap for the next row, so no row pays for a sort or a clear of
/// more than the words its columns span.
struct Dense<T> {
    bits: Vec<u64>,
    vals: Vec<T>,
}

/// Columns from `C`'s row in the bitmap words `lo..=hi`.
#[derive(Clone, Copy)]
struct Span {
    lo: usize,
    hi: usize,
}

impl Span {
    const EMPTY: Span = Span {
        lo: usize::MAX,
        hi: 0,
    };
    #[inline(always)]
    fn add(&mut self, w: usize) {
        self.lo = self.lo.min(w);
        self.hi = self.hi.max(w);
    }
    fn words(self) -> std::ops::Range<usize> {
        if self.lo > self.hi {
            0..0
        } else {
            self.lo..self.hi + 1
        }
    }
}

/// One worker's scratch space, reused across the rows of its chunks.
pub(super) struct Workspace<T> {
    /// Columns of C.
    n: usize,
    /// Hash table keys; all `EMPTY` between rows.
    keys: Vec<u32>,
    /// Hash table values, parallel to `keys`.
    vals: Vec<T>,
    /// The row's distinct columns, sorted before they are written.
    cols: Vec<u32>,
    /// Allocated on the first heavy row only.
    dense: Option<Dense<T>>,
}

impl<T: Scalar> Workspace<T> {
    /// Scratch for products with `n` output columns.
    pub(super) fn new(n: usize) -> Self {
        Self {
            n,
            keys: Vec::new(),
            vals: Vec::new(),
            cols: Vec::new(),
            dense: None,
        }
    }

    fn use_dense(&self, flops: usize) -> bool {
        self.n <= DENSE_MAX_COLS
            && (flops >= DENSE_MIN_FLOPS
                || flops.saturating_mul(DENSE_SCAN_PER_FLOP * 64) >= self.n)
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

    fn dense(&mut self) -> &mut Dense<T> {
        let n = self.n;
        self.dense.get_or_insert_with(|| Dense {
            bits: vec![0; n.div_ceil(64)],
            vals: vec![T::ZERO; n],
        })
    }

    /// Number of distinct columns of row `i` of `A * B`, which has `flops`
    /// products.
    pub(super) fn count_row(
        &mut self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
        i: usize,
        flops: usize,
    ) -> usize {
        let acols = a.row(i).0;
        match acols.len() {
            0 => return 0,
            // One B row: its columns are already distinct.
            1 => return brow(b, acols[0]).0.len(),
            _ => {}
        }
        if flops == 0 {
            return 0;
        }
        let mut count = 0;
        if self.use_dense(flops) {
            let bits = &mut self.dense().bits;
            let mut span = Span::EMPTY;
            for &p in acols {
                for &j in brow(b, p).0 {
                    let w = j as usize / 64;
                    bits[w] |= 1 << (j % 64);
                    span.add(w);
                }
            }
            for x in &mut bits[span.words()] {
                count += x.count_ones() as usize;
                *x = 0;
            }
        } else {
            let (size, shift) = self.table(flops.min(self.n));
            let mask = size - 1;
            let keys = &mut self.keys[..size];
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
        }
        count
    }

    /// Writes row `i` of `A * B` into `idx`/`val`, whose length is the row's
    /// count from [`Self::count_row`], columns ascending.
    pub(super) fn fill_row(
        &mut self,
        a: &CsrMatrix<T>,
        b: &CsrMatrix<T>,
        i: usize,
        idx: &mut [MaybeUninit<u32>],
        val: &mut [MaybeUninit<T>],
    ) {
        let len = idx.len();
        if len == 0 {
            return;
        }
        let (acols, avals) = a.row(i);
        if acols.len() == 1 {
            let (bc, bv) = brow(b, acols[0]);
            assert_eq!(
                bc.len(),
                len,
                "spgemm: symbolic and numeric passes disagree"
            );
            let av = avals[0];
            for t in 0..len {
                idx[t].write(bc[t]);
                val[t].write(av * bv[t]);
            }
            return;
        }
        let flops = row_flops(a, b, i);
        if self.use_dense(flops) {
            let Dense { bits, vals } = self.dense();
            let mut span = Span::EMPTY;
            for (&p, &av) in acols.iter().zip(avals) {
                let (bc, bv) = brow(b, p);
                for (&j, &bj) in bc.iter().zip(bv) {
                    let prod = av * bj;
                    let (w, bit) = (j as usize / 64, 1u64 << (j % 64));
                    if bits[w] & bit == 0 {
                        bits[w] |= bit;
                        vals[j as usize] = prod;
                        span.add(w);
                    } else {
                        vals[j as usize] += prod;
                    }
                }
            }
            let mut t = 0;
            for w in span.words() {
                let mut x = std::mem::take(&mut bits[w]);
                while x != 0 {
                    let j = w * 64 + x.trailing_zeros() as usize;
                    // Out of bounds here means the passes disagree (a bug of ours).
                    idx[t].write(j as u32);
                    val[t].write(vals[j]);
                    t += 1;
                    x &= x - 1;
                }
            }
            assert_eq!(t, len, "spgemm: symbolic and numeric passes disagree");
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
                            // should the passes ever disagree (a bug of ours).
                            assert!(cols.len() < len, "spgemm: passes disagree");
                            keys[s] = j;
                            vals[s] = prod;
                            cols.push(j);
                            break;
                        }
                        s = (s + 1) & mask;
                    }
                }
            }
            assert_eq!(
                cols.len(),
                len,
                "spgemm: symbolic and numeric passes disagree"
            );
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
        }
    }
}
