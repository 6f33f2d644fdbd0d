//! SparseGemm for [`CudaBackend`]: `kernels/sparse_gemm.cu`.
//!
//! Two-phase Gustavson with rows binned by work (the kernel file's header has
//! the bins and the determinism argument): a per-row product count and column
//! span, a symbolic pass giving each row's exact nnz, a scan into u64 offsets,
//! an exact allocation of C, and a numeric pass writing each row sorted.
//! Every value of C is `fma`-accumulated in the order of A's columns, the same
//! way in every bin, so results are bit-identical from run to run (and do not
//! depend on how rows were binned).
//!
//! The host waits on the device three times per product: for the bin counts
//! (to size the launches), for the nnz of C (to allocate it exactly), and for
//! the error flags after the numeric pass (so a kernel bug is an error, never
//! a silently wrong matrix). Everything else is queued on the stream.

use cudarc::driver::LaunchConfig;
use trident_core::{
    CsrMatrix, DeviceCsr, Error, Result, Scalar, SparseGemm, SparseGemmDevice, validate,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, Trace, count_u32, launch_kernel};

/// `kernels/sparse_gemm.cu`.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "sparse_gemm",
    source: include_str!("../kernels/sparse_gemm.cu"),
    per_entry: true,
};

/// The entry points a product of element type `ty` (`f32`/`f64`) may launch:
/// every kernel but the other type's numeric ones. A call compiles them all
/// up front, in parallel ([`CudaBackend::prepare`]): which bins it uses is
/// known only once the device has analysed the rows.
pub(crate) fn entries_for(ty: &str) -> Vec<&'static str> {
    ENTRY_POINTS
        .iter()
        .copied()
        .filter(|e| match e.rsplit_once('_') {
            Some((_, t)) if t == "f32" || t == "f64" => t == ty,
            _ => true,
        })
        .collect()
}

/// Entry points of `kernels/sparse_gemm.cu` (the tidy test checks them).
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "spg_analyze",
    "spg_bin_numeric",
    "spg_scatter",
    "spg_scan_local",
    "spg_scan_top",
    "spg_scan_add",
    "spg_sym_merge",
    "spg_num_merge_f32",
    "spg_num_merge_f64",
    "spg_sym_sort1",
    "spg_sym_sort2",
    "spg_sym_sort4",
    "spg_sym_warp_hash",
    "spg_sym_dense",
    "spg_sym_dense_parts",
    "spg_sym_block_hash",
    "spg_num_sort1_f32",
    "spg_num_sort2_f32",
    "spg_num_sort4_f32",
    "spg_num_sort1_f64",
    "spg_num_sort2_f64",
    "spg_num_sort4_f64",
    "spg_num_warp_hash_f32",
    "spg_num_warp_hash_f64",
    "spg_num_dense_f32",
    "spg_num_dense_f64",
    "spg_num_dense_parts_f32",
    "spg_num_dense_parts_f64",
    "spg_num_block_hash_f32",
    "spg_num_block_hash_f64",
];

/// Bins of the kernel file (`NBINS`, `BIN_DENSE`, `BIN_BLOCK`, `BIN_MERGE`).
const NBINS: usize = 11;
const BIN_DENSE: usize = 8;
const BIN_BLOCK: usize = 9;
const BIN_MERGE: usize = 10;

/// Layout of the kernels' meta buffer (u64 words), as in the kernel file.
const M_SYM_COUNT: usize = 0;
const M_NUM_COUNT: usize = 16;
const M_SYM_BLOCK_Q: usize = 64;
const M_SYM_SPAN: usize = 65;
const M_NUM_BLOCK_Q: usize = 66;
const M_NUM_SPAN: usize = 67;
const M_TOTAL: usize = 68;
const M_FLAGS: usize = 69;
const M_BLOCK_QUEUE: usize = 73;
const META_WORDS: usize = 80;

/// Warps per block of the sort kernels (`SORT_WARPS`).
const SORT_WARPS: usize = 8;
/// Threads of the block-per-row kernels (`BLOCK_WARPS * 32`).
const BLOCK_THREADS: u32 = 256;
/// Threads per block of the one-thread-a-row kernels (`ANALYZE_THREADS`).
const ROW_THREADS: u32 = 256;
/// Elements per block of `spg_scan_local` (`SCAN_BLOCK`).
const SCAN_BLOCK: usize = 2048;
/// Shared memory a block of the warp-hash kernels aims at (all its warps' tables).
const WARP_HASH_SMEM: usize = 64 << 10;
/// Table bytes of bin 9's first size class: small enough for three blocks an
/// SM (most rows of the bin need far less than its largest table).
const SMALL_TABLE_BYTES: usize = 64 << 10;
/// Widest dense window in columns by default (a multiple of 256, below 2^31).
pub(crate) const DENSE_WIN_MAX: u64 = 1 << 24;
/// Widest window of the dense kernels, whose bitmap lives in shared memory
/// (32 KiB).
const BITMAP_WIN_MAX: u64 = 1 << 18;
/// Threads of the symbolic dense kernel (its warps share a row's A chunks:
/// no order to keep). 1024 measured slower than 256 on rmat-16-8 (H100).
const SYM_DENSE_THREADS: u32 = 256;
/// Narrowest window the numeric dense kernel is given (columns).
const DENSE_MIN_WIN: u64 = 4096;
/// Threads per block of the merge kernels (one row per thread).
const MERGE_THREADS: u32 = 128;

/// `(part, nparts)` of bin 8 for rows of span up to `span` in windows of
/// `win` columns: with rows enough to fill the device (`full`), or rows of
/// fewer than `spread_from` windows, one part per row, its windows done in
/// turn; else one part per window, so that a few wide rows spread over many
/// blocks.
fn dense_parts(span: u64, win: u64, full: bool, spread_from: u64) -> (u64, u64) {
    let windows = span.div_ceil(win).max(1);
    if full || windows < spread_from {
        (windows * win, 1)
    } else {
        (win, windows)
    }
}

fn cfg(blocks: usize, threads: u32, smem: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig {
        grid_dim: (count_u32("spgemm grid", blocks.max(1))?, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: count_u32("spgemm shared memory", smem)?,
    })
}

/// Queues `$name` (a `&str`) of `kernels/sparse_gemm.cu` with
/// [`launch_kernel!`]: the arguments match the kernel's parameter list
/// (pointers as u64, counts as u32, windows as u64), and every buffer holds
/// the elements the kernel indexes (sized by the caller from the same counts).
macro_rules! launch {
    ($be:expr, $name:expr, $cfg:expr, $($arg:expr),* $(,)?) => {
        launch_kernel!($be, &KERNEL, $name, $cfg, $($arg),*)
    };
}

/// Device pointers of a CSR operand.
#[derive(Clone, Copy)]
struct Ptrs {
    off: u64,
    col: u64,
    val: u64,
}

fn ptrs<T: Scalar>(m: &DeviceCsr<CudaBackend, T>) -> Ptrs {
    Ptrs {
        off: m.offsets.ptr(),
        col: m.indices.ptr(),
        val: m.values.ptr(),
    }
}

/// Per-row scratch of one product.
struct Rows {
    work: CudaBuffer<u32>,
    lo: CudaBuffer<u32>,
    hi: CudaBuffer<u32>,
    nnz: CudaBuffer<u32>,
    list: CudaBuffer<u32>,
    meta: CudaBuffer<u64>,
}

/// A bin's slice of the row list: device pointer and count.
fn bin_slices(list: &CudaBuffer<u32>, counts: &[u64]) -> Vec<(u64, u32)> {
    let mut start = 0u64;
    let mut out = vec![(0, 0); NBINS];
    for (b, &c) in counts.iter().enumerate().skip(1) {
        out[b] = (list.ptr() + 4 * start, c as u32);
        start += c;
    }
    out
}

fn flags_error(flags: u64) -> Result<()> {
    if flags == 0 {
        return Ok(());
    }
    let mut what = Vec::new();
    if flags & 1 != 0 {
        what.push("a hash table overflowed");
    }
    if flags & 2 != 0 {
        what.push("a row's numeric nnz differs from its symbolic count");
    }
    Err(Error::Backend(
        format!(
            "internal error in kernels/sparse_gemm.cu ({}): a bug of the CUDA backend, \
             the result was discarded",
            what.join("; ")
        )
        .into(),
    ))
}

/// `(table slots, log2)` for a hash table holding up to `q` keys at load <= 1/2.
fn table_size(q: u64) -> Result<(u32, u32)> {
    let size = (2 * q.max(1)).next_power_of_two();
    if size > 1 << 31 {
        return Err(Error::TooLarge {
            field: "spgemm row hash table",
            value: size as u128,
            limit: 1 << 31,
        });
    }
    Ok((size as u32, size.trailing_zeros()))
}

/// The size classes bin 9's rows are launched in, `(size_lo, size_hi,
/// parts)`: rows whose table of `size` slots (`slot_bytes` each) has `size_lo
/// < size <= size_hi`, in dynamic shared memory of `size_hi` slots; with
/// `parts`, also every larger row, in column parts. `max_size` is the bin's
/// largest table, `smem` the shared memory a block may take. The first class
/// is small (several blocks an SM), the second takes what one block's shared
/// memory holds.
fn block_classes(max_size: u32, slot_bytes: usize, smem: usize) -> Vec<(u32, u32, bool)> {
    let pow2_floor = |bytes: usize| {
        let slots = (bytes / slot_bytes).max(2) as u32;
        1u32 << (31 - slots.leading_zeros())
    };
    let small = pow2_floor(SMALL_TABLE_BYTES.min(smem));
    let big = pow2_floor(smem).max(small);
    if max_size <= small {
        vec![(0, max_size, false)]
    } else if big == small {
        vec![(0, small, true)]
    } else {
        vec![
            (0, small, false),
            (small, max_size.min(big), max_size > big),
        ]
    }
}

impl CudaBackend {
    fn download_meta(&self, meta: &CudaBuffer<u64>) -> Result<Vec<u64>> {
        let v = self.download_vec(meta)?;
        flags_error(v[M_FLAGS])?;
        Ok(v)
    }

    /// Column window of bin 8 for rows of span up to `span`: the whole span
    /// where it fits, else the widest multiple of 256 within `cap` and the
    /// handle's limit ([`Tuning::spgemm_window`](crate::Tuning::spgemm_window)).
    fn dense_window(&self, span: u64, cap: u64) -> u64 {
        let user = self.tuning.spgemm_window();
        let cap = (cap.min(user) / 256).max(1) * 256;
        (span.div_ceil(256).max(1) * 256).min(cap)
    }

    /// Queues `spg_sym_dense` (`_parts` with several parts a row) over bin
    /// 8's (row, part) items, `(win, part, nparts)` from [`dense_parts`]: each
    /// part's column count is added into its row's nnz, or with `pcount` (a
    /// pointer to one `u32` per item; 0 for none) stored there for the
    /// numeric pass.
    #[allow(clippy::too_many_arguments)]
    fn sym_dense(
        &self,
        a: Ptrs,
        b: Ptrs,
        r: &Rows,
        (rows, count): (u64, u32),
        (win, part, nparts): (u64, u64, u64),
        pcount: u64,
    ) -> Result<()> {
        let items = (count as usize).saturating_mul(nparts as usize);
        let (lp, hp, np, mp) = (r.lo.ptr(), r.hi.ptr(), r.nnz.ptr(), r.meta.ptr());
        // Items are drawn from a queue: the grid is what fits the device (8
        // blocks of 256 threads per SM); the bitmap lives in shared memory.
        launch!(
            self,
            if nparts > 1 {
                "spg_sym_dense_parts"
            } else {
                "spg_sym_dense"
            },
            cfg(
                items.min(8 * self.sm_count() as usize),
                SYM_DENSE_THREADS,
                win as usize / 8
            )?,
            &a.off,
            &a.col,
            &b.off,
            &b.col,
            &rows,
            &count,
            &lp,
            &hp,
            &win,
            &part,
            &nparts,
            &np,
            &pcount,
            &mp
        );
        Ok(())
    }

    /// The symbolic pass: row nnz for every bin.
    fn symbolic(&self, a: Ptrs, b: Ptrs, r: &Rows, meta: &[u64], tr: &mut Trace) -> Result<()> {
        let slices = bin_slices(&r.list, &meta[M_SYM_COUNT..M_SYM_COUNT + NBINS]);
        let (lp, hp, np, mp) = (r.lo.ptr(), r.hi.ptr(), r.nnz.ptr(), r.meta.ptr());
        for (bin, &(rows, count)) in slices.iter().enumerate() {
            if count == 0 {
                continue;
            }
            match bin {
                1..=3 => {
                    let name = ["spg_sym_sort1", "spg_sym_sort2", "spg_sym_sort4"][bin - 1];
                    let blocks = (count as usize).div_ceil(SORT_WARPS);
                    launch!(
                        self,
                        name,
                        cfg(blocks, (SORT_WARPS * 32) as u32, 0)?,
                        &a.off,
                        &a.col,
                        &b.off,
                        &b.col,
                        &rows,
                        &count,
                        &np
                    );
                }
                4..=7 => {
                    let (size, log2) = table_size(256u64 << (bin - 4))?;
                    let shift = 32 - log2;
                    let per_warp = size as usize * 4;
                    let warps = (WARP_HASH_SMEM / per_warp).clamp(1, 8);
                    let blocks = (count as usize).div_ceil(warps);
                    launch!(
                        self,
                        "spg_sym_warp_hash",
                        cfg(blocks, (warps * 32) as u32, warps * per_warp)?,
                        &a.off,
                        &a.col,
                        &b.off,
                        &b.col,
                        &rows,
                        &count,
                        &size,
                        &shift,
                        &np,
                        &mp
                    );
                }
                BIN_DENSE => {
                    let span = meta[M_SYM_SPAN];
                    let win = self.dense_window(span, BITMAP_WIN_MAX);
                    let full = count as usize >= 8 * self.sm_count() as usize;
                    let (part, nparts) = dense_parts(span, win, full, 2);
                    self.sym_dense(a, b, r, (rows, count), (win, part, nparts), 0)?;
                }
                BIN_MERGE => {
                    launch!(
                        self,
                        "spg_sym_merge",
                        cfg(
                            (count as usize).div_ceil(MERGE_THREADS as usize),
                            MERGE_THREADS,
                            0
                        )?,
                        &a.off,
                        &a.col,
                        &b.off,
                        &b.col,
                        &rows,
                        &count,
                        &np,
                        &mp
                    );
                }
                BIN_BLOCK => {
                    let wp = r.work.ptr();
                    self.block_hash_launches(
                        meta[M_SYM_BLOCK_Q],
                        4,
                        count,
                        M_BLOCK_QUEUE,
                        |blocks, smem, lo, hi, parts, queue| {
                            launch!(
                                self,
                                "spg_sym_block_hash",
                                cfg(blocks, BLOCK_THREADS, smem)?,
                                &a.off,
                                &a.col,
                                &b.off,
                                &b.col,
                                &rows,
                                &count,
                                &lp,
                                &hp,
                                &wp,
                                &lo,
                                &hi,
                                &parts,
                                &np,
                                &queue,
                                &mp
                            );
                            Ok(())
                        },
                    )?;
                }
                _ => unreachable!("bin {bin} of {NBINS}"),
            }
            tr.lap(self, || format!("symbolic bin {bin}: {count} rows"))?;
        }
        Ok(())
    }

    /// Launches bin 9 (`count` rows) class by class ([`block_classes`]):
    /// `launch(blocks, smem bytes, size_lo, size_hi, parts, queue)`, `queue`
    /// the class's meta counter.
    fn block_hash_launches(
        &self,
        max_q: u64,
        slot_bytes: usize,
        count: u32,
        first_queue: usize,
        mut launch: impl FnMut(usize, usize, u32, u32, u32, u32) -> Result<()>,
    ) -> Result<()> {
        // Rows past the classes' tables go in parts: no size is refused.
        let max_size = (2 * max_q.max(1)).next_power_of_two().min(1 << 31) as u32;
        // Room for the kernels' static shared memory (the product histogram of
        // `CUT_BUCKETS` words, scan sums, counters).
        let smem_limit = (self.max_shared_per_block() as usize).saturating_sub(12 << 10);
        // Blocks past the resident ones find the queue drained and leave.
        let blocks = (count as usize).min(8 * self.sm_count() as usize);
        let classes = block_classes(max_size, slot_bytes, smem_limit);
        for (i, &(lo, hi, parts)) in classes.iter().enumerate() {
            let bytes = hi as usize * slot_bytes;
            launch(
                blocks,
                bytes,
                lo,
                hi,
                parts as u32,
                (first_queue + i) as u32,
            )?;
        }
        Ok(())
    }

    /// The numeric pass: values and sorted columns of every row into C.
    #[allow(clippy::too_many_arguments)]
    fn numeric<T: Scalar>(
        &self,
        a: Ptrs,
        b: Ptrs,
        r: &Rows,
        meta: &[u64],
        c_off: u64,
        c_col: u64,
        c_val: u64,
        tr: &mut Trace,
    ) -> Result<()> {
        let ty = T::NAME;
        let tsize = std::mem::size_of::<T>();
        let slices = bin_slices(&r.list, &meta[M_NUM_COUNT..M_NUM_COUNT + NBINS]);
        let (lp, hp, mp) = (r.lo.ptr(), r.hi.ptr(), r.meta.ptr());
        for (bin, &(rows, count)) in slices.iter().enumerate() {
            if count == 0 {
                continue;
            }
            match bin {
                1..=3 => {
                    let e = [1, 2, 4][bin - 1];
                    let blocks = (count as usize).div_ceil(SORT_WARPS);
                    launch!(
                        self,
                        &format!("spg_num_sort{e}_{ty}"),
                        cfg(blocks, (SORT_WARPS * 32) as u32, 0)?,
                        &a.off,
                        &a.col,
                        &a.val,
                        &b.off,
                        &b.col,
                        &b.val,
                        &rows,
                        &count,
                        &c_off,
                        &c_col,
                        &c_val,
                        &mp
                    );
                }
                4..=7 => {
                    let (size, log2) = table_size(256u64 << (bin - 4))?;
                    let shift = 32 - log2;
                    let per_warp = size as usize * (4 + tsize);
                    let warps = (WARP_HASH_SMEM / per_warp).clamp(1, 8);
                    let blocks = (count as usize).div_ceil(warps);
                    launch!(
                        self,
                        &format!("spg_num_warp_hash_{ty}"),
                        cfg(blocks, (warps * 32) as u32, warps * per_warp)?,
                        &a.off,
                        &a.col,
                        &a.val,
                        &b.off,
                        &b.col,
                        &b.val,
                        &rows,
                        &count,
                        &size,
                        &shift,
                        &c_off,
                        &c_col,
                        &c_val,
                        &mp
                    );
                }
                BIN_DENSE => {
                    // Three blocks fit an SM (registers). Their value windows
                    // are sized to stay within half the L2 cache together:
                    // every product is a read-modify-write of one, and from
                    // DRAM that costs more than walking A's row once per
                    // window.
                    // A bin of few rows gets wider windows, each window
                    // then an item of its own (drawn from a queue).
                    let resident = 3 * self.sm_count() as usize;
                    let l2_cols = self.l2_cache_bytes() as u64
                        / 2
                        / ((count as usize).min(resident) * tsize) as u64;
                    let win = self.dense_window(
                        meta[M_NUM_SPAN],
                        BITMAP_WIN_MAX.min(l2_cols.max(DENSE_MIN_WIN)),
                    );
                    // Spread only rows of 4 windows or more: the parts'
                    // counts cost another symbolic pass over the bin, more
                    // than two windows in turn (rmat-16-8, H200).
                    let (part, nparts) =
                        dense_parts(meta[M_NUM_SPAN], win, count as usize >= resident, 4);
                    let items = (count as usize).saturating_mul(nparts as usize);
                    let blocks = items.min(resident);
                    // With several parts per row, every part's column count
                    // first: an item writes its columns after those of its
                    // row's earlier parts.
                    let pcount = if nparts > 1 {
                        let pcount = self.alloc::<u32>(items, "spgemm part counts")?;
                        let d = (win, part, nparts);
                        self.sym_dense(a, b, r, (rows, count), d, pcount.ptr())?;
                        Some(pcount)
                    } else {
                        None
                    };
                    let pp = pcount.as_ref().map_or(0, |b| b.ptr());
                    let vals =
                        self.alloc_zeroed_named::<T>(blocks * win as usize, "spgemm windows")?;
                    let vp = vals.ptr();
                    launch!(
                        self,
                        &if nparts > 1 {
                            format!("spg_num_dense_parts_{ty}")
                        } else {
                            format!("spg_num_dense_{ty}")
                        },
                        cfg(blocks, BLOCK_THREADS, win as usize / 8)?,
                        &a.off,
                        &a.col,
                        &a.val,
                        &b.off,
                        &b.col,
                        &b.val,
                        &rows,
                        &count,
                        &lp,
                        &hp,
                        &win,
                        &part,
                        &nparts,
                        &pp,
                        &vp,
                        &c_off,
                        &c_col,
                        &c_val,
                        &mp
                    );
                }
                BIN_MERGE => {
                    launch!(
                        self,
                        &format!("spg_num_merge_{ty}"),
                        cfg(
                            (count as usize).div_ceil(MERGE_THREADS as usize),
                            MERGE_THREADS,
                            0
                        )?,
                        &a.off,
                        &a.col,
                        &a.val,
                        &b.off,
                        &b.col,
                        &b.val,
                        &rows,
                        &count,
                        &c_off,
                        &c_col,
                        &c_val,
                        &mp
                    );
                }
                BIN_BLOCK => {
                    let name = format!("spg_num_block_hash_{ty}");
                    self.block_hash_launches(
                        meta[M_NUM_BLOCK_Q],
                        4 + tsize,
                        count,
                        M_BLOCK_QUEUE + 3,
                        |blocks, smem, lo, hi, parts, queue| {
                            launch!(
                                self,
                                &name,
                                cfg(blocks, BLOCK_THREADS, smem)?,
                                &a.off,
                                &a.col,
                                &a.val,
                                &b.off,
                                &b.col,
                                &b.val,
                                &rows,
                                &count,
                                &lp,
                                &hp,
                                &lo,
                                &hi,
                                &parts,
                                &c_off,
                                &c_col,
                                &c_val,
                                &queue,
                                &mp
                            );
                            Ok(())
                        },
                    )?;
                }
                _ => unreachable!("bin {bin} of {NBINS}"),
            }
            tr.lap(self, || format!("numeric bin {bin}: {count} rows"))?;
        }
        Ok(())
    }

    /// `C = A B` on device operands whose shapes are checked.
    fn product<T: Scalar>(
        &self,
        a: &DeviceCsr<Self, T>,
        b: &DeviceCsr<Self, T>,
    ) -> Result<DeviceCsr<Self, T>> {
        let (m, n) = (a.rows(), b.cols());
        let m32 = count_u32("a.rows", m)?;
        count_u32("b.cols", n)?;
        if m == 0 || a.nnz() == 0 || b.nnz() == 0 {
            return Ok(DeviceCsr::from_parts(
                m,
                n,
                0,
                self.alloc_zeroed_named::<u64>(m + 1, "spgemm C offsets")?,
                self.alloc::<u32>(0, "spgemm C indices")?,
                self.alloc::<T>(0, "spgemm C values")?,
            ));
        }
        self.prepare(&KERNEL, &entries_for(T::NAME))?;
        let (ap, bp) = (ptrs(a), ptrs(b));
        let r = Rows {
            work: self.alloc::<u32>(m, "spgemm row work")?,
            lo: self.alloc::<u32>(m, "spgemm row spans")?,
            hi: self.alloc::<u32>(m, "spgemm row spans")?,
            nnz: self.alloc_zeroed_named::<u32>(m, "spgemm row nnz")?,
            list: self.alloc::<u32>(m, "spgemm row bins")?,
            meta: self.alloc_zeroed_named::<u64>(META_WORDS, "spgemm meta")?,
        };
        let (wp, lp, hp, np, lsp, mp) = (
            r.work.ptr(),
            r.lo.ptr(),
            r.hi.ptr(),
            r.nnz.ptr(),
            r.list.ptr(),
            r.meta.ptr(),
        );
        let rows_cfg = || cfg(m.div_ceil(ROW_THREADS as usize), ROW_THREADS, 0);
        let mut tr = Trace::new("spgemm");
        tr.lap(self, || {
            format!("start: {m} x {n}, nnz(A) {}, nnz(B) {}", a.nnz(), b.nnz())
        })?;

        // Products and spans per row, symbolic bins.
        launch!(
            self,
            "spg_analyze",
            rows_cfg()?,
            &ap.off,
            &ap.col,
            &bp.off,
            &bp.col,
            &m32,
            &wp,
            &lp,
            &hp,
            &mp
        );
        let meta = self.download_meta(&r.meta)?;
        tr.lap(self, || {
            format!(
                "analyze, bins {:?}",
                &meta[M_SYM_COUNT..M_SYM_COUNT + NBINS]
            )
        })?;
        let phase0 = 0u32;
        launch!(
            self,
            "spg_scatter",
            rows_cfg()?,
            &ap.off,
            &wp,
            &lp,
            &hp,
            &np,
            &m32,
            &phase0,
            &mp,
            &lsp
        );
        tr.lap(self, || "scatter".into())?;
        self.symbolic(ap, bp, &r, &meta, &mut tr)?;

        // Offsets, nnz of C, numeric bins.
        launch!(
            self,
            "spg_bin_numeric",
            rows_cfg()?,
            &ap.off,
            &wp,
            &lp,
            &hp,
            &np,
            &m32,
            &mp
        );
        let c_offsets = self.alloc::<u64>(m + 1, "spgemm C offsets")?;
        let blocks = m.div_ceil(SCAN_BLOCK);
        let sums = self.alloc::<u64>(blocks, "spgemm scan sums")?;
        let (op, sp, nb) = (
            c_offsets.ptr(),
            sums.ptr(),
            count_u32("scan blocks", blocks)?,
        );
        launch!(
            self,
            "spg_scan_local",
            cfg(blocks, 256, 0)?,
            &np,
            &m32,
            &op,
            &sp
        );
        launch!(
            self,
            "spg_scan_top",
            cfg(1, 1024, 0)?,
            &sp,
            &nb,
            &op,
            &m32,
            &mp
        );
        launch!(self, "spg_scan_add", cfg(blocks, 256, 0)?, &op, &m32, &sp);
        let meta = self.download_meta(&r.meta)?;
        tr.lap(self, || {
            format!(
                "bins, scan: nnz(C) {}, numeric bins {:?}",
                meta[M_TOTAL],
                &meta[M_NUM_COUNT..M_NUM_COUNT + NBINS]
            )
        })?;
        let nnz = usize::try_from(meta[M_TOTAL]).map_err(|_| Error::TooLarge {
            field: "nnz of C",
            value: meta[M_TOTAL] as u128,
            limit: usize::MAX as u128,
        })?;
        let c_indices = self.alloc::<u32>(nnz, "spgemm C indices")?;
        let c_values = self.alloc::<T>(nnz, "spgemm C values")?;
        let phase1 = 1u32;
        launch!(
            self,
            "spg_scatter",
            rows_cfg()?,
            &ap.off,
            &wp,
            &lp,
            &hp,
            &np,
            &m32,
            &phase1,
            &mp,
            &lsp
        );
        tr.lap(self, || "allocate C, scatter".into())?;
        self.numeric::<T>(
            ap,
            bp,
            &r,
            &meta,
            op,
            c_indices.ptr(),
            c_values.ptr(),
            &mut tr,
        )?;
        let mut flags = [0u64; M_FLAGS + 1];
        self.download_into(&r.meta, &mut flags)?;
        flags_error(flags[M_FLAGS])?;
        Ok(DeviceCsr::from_parts(
            m, n, nnz, c_offsets, c_indices, c_values,
        ))
    }
}

impl CudaBackend {
    /// Host CSR matrices on the device, every array of every matrix in one
    /// staged copy (one set of workers, not one ramp-up and drain per
    /// array). Offsets are copied as they are where `usize` is 64 bits (no
    /// host conversion pass), converted elsewhere.
    fn upload_csrs<T: Scalar>(&self, ms: &[&CsrMatrix<T>]) -> Result<Vec<DeviceCsr<Self, T>>> {
        let wide: Vec<Option<Vec<u64>>> = ms
            .iter()
            .map(|m| {
                (std::mem::size_of::<usize>() != 8)
                    .then(|| m.offsets().iter().map(|&o| o as u64).collect())
            })
            .collect();
        let mut spans: Vec<(&[u8], u64)> = Vec::with_capacity(3 * ms.len());
        let mut out = Vec::with_capacity(ms.len());
        for (m, wide) in ms.iter().zip(&wide) {
            let offsets: &[u8] = match wide {
                Some(w) => bytemuck::cast_slice(w),
                None => bytemuck::cast_slice(m.offsets()),
            };
            let off = self.alloc::<u64>(m.rows() + 1, "csr offsets")?;
            let idx = self.alloc::<u32>(m.nnz(), "csr indices")?;
            let val = self.alloc::<T>(m.nnz(), "csr values")?;
            spans.push((offsets, off.ptr()));
            spans.push((bytemuck::cast_slice(m.indices()), idx.ptr()));
            spans.push((bytemuck::cast_slice(m.values()), val.ptr()));
            out.push(DeviceCsr::from_parts(
                m.rows(),
                m.cols(),
                m.nnz(),
                off,
                idx,
                val,
            ));
        }
        // SAFETY: each span fills exactly the buffer just allocated for it
        // (rows + 1 offsets, nnz indices and values), which nothing else uses.
        unsafe { self.upload_spans(&spans) }?;
        Ok(out)
    }

    /// The three arrays of a device CSR matrix on the host, in one staged
    /// copy into fresh memory (offsets as `usize`; one past `usize` is
    /// [`Error::TooLarge`]).
    fn download_parts<T: Scalar>(
        &self,
        m: &DeviceCsr<Self, T>,
    ) -> Result<(Vec<usize>, Vec<u32>, Vec<T>)> {
        let (n, nnz) = (m.rows() + 1, m.nnz());
        let mut offsets = crate::device::fresh_vec::<usize>(n)?;
        let mut wide = if std::mem::size_of::<usize>() == 8 {
            None
        } else {
            Some(crate::device::fresh_vec::<u64>(n)?)
        };
        let mut indices = crate::device::fresh_vec::<u32>(nnz)?;
        let mut values = crate::device::fresh_vec::<T>(nnz)?;
        let off_dst: *mut u8 = match &mut wide {
            Some(w) => w.as_mut_ptr().cast(),
            None => offsets.as_mut_ptr().cast(),
        };
        // SAFETY: the device buffers hold rows + 1 u64 offsets and nnz
        // indices and values (the matrix says so; `device_csr` checks it for
        // a caller's matrix); each destination is the spare capacity of its
        // own fresh vector, sized to match (`usize` is 8 bytes where the
        // offsets go straight into `offsets`).
        unsafe {
            self.download_spans(&[
                (m.offsets.ptr(), off_dst, n * 8),
                (m.indices.ptr(), indices.as_mut_ptr().cast(), nnz * 4),
                (
                    m.values.ptr(),
                    values.as_mut_ptr().cast(),
                    nnz * std::mem::size_of::<T>(),
                ),
            ])?;
            // Every byte was written, and any bit pattern is valid for these.
            indices.set_len(nnz);
            values.set_len(nnz);
            match wide {
                Some(mut w) => {
                    w.set_len(n);
                    for o in w {
                        offsets.push(usize::try_from(o).map_err(|_| Error::TooLarge {
                            field: "offsets",
                            value: o as u128,
                            limit: usize::MAX as u128,
                        })?);
                    }
                }
                None => offsets.set_len(n),
            }
        }
        Ok((offsets, indices, values))
    }

    /// C of [`CudaBackend::product`] on the host, without the O(nnz) structure
    /// check: rows are written sorted by the kernels and each row's count was
    /// checked against the symbolic pass (the error flags), as the rayon
    /// backend's own results are trusted. `verify` re-checks every result.
    fn download_product<T: Scalar>(&self, c: &DeviceCsr<Self, T>) -> Result<CsrMatrix<T>> {
        let (offsets, indices, values) = self.download_parts(c)?;
        Ok(CsrMatrix::from_parts_unchecked(
            c.rows(),
            c.cols(),
            offsets,
            indices,
            values,
        ))
    }
}

impl<T: Scalar> SparseGemmDevice<T> for CudaBackend {
    fn upload_csr(&self, m: &CsrMatrix<T>) -> Result<DeviceCsr<Self, T>> {
        let mut v = self.upload_csrs(&[m])?;
        v.pop()
            .ok_or_else(|| Error::Backend("upload_csrs returned nothing".into()))
    }

    fn download_csr(&self, m: &DeviceCsr<Self, T>) -> Result<CsrMatrix<T>> {
        trident_core::validate::device_csr(self, "m", m)?;
        let (offsets, indices, values) = self.download_parts(m)?;
        CsrMatrix::from_result(m.rows(), m.cols(), offsets, indices, values)
    }

    fn spgemm_device(
        &self,
        a: &DeviceCsr<Self, T>,
        b: &DeviceCsr<Self, T>,
    ) -> Result<DeviceCsr<Self, T>> {
        trident_core::validate::spgemm_device(self, a, b)?;
        self.product(a, b)
    }
}

impl<T: Scalar> SparseGemm<T> for CudaBackend {
    fn spgemm(&self, a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        validate::spgemm_dims(a, b)?;
        let mut tr = Trace::new("spgemm host");
        if a.nnz() == 0 || b.nnz() == 0 {
            validate::spgemm_finite(a, b)?;
            return CsrMatrix::zeros(a.rows(), b.cols());
        }
        let bytes = [a, b]
            .iter()
            .map(|m| m.nnz() * (4 + std::mem::size_of::<T>()) + 8 * (m.rows() + 1))
            .sum();
        let mut dev = crate::device::check_beside(
            bytes,
            || validate::spgemm_finite(a, b),
            || self.upload_csrs(&[a, b]),
        )?;
        let (Some(db), Some(da)) = (dev.pop(), dev.pop()) else {
            return Err(Error::Backend("upload_csrs returned too little".into()));
        };
        tr.lap(self, || "check + upload A, B".into())?;
        let dc = self.product(&da, &db)?;
        tr.lap(self, || "product".into())?;
        let c = self.download_product(&dc);
        tr.lap(self, || "download C".into())?;
        drop(dc);
        tr.lap(self, || "free C on the device".into())?;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_text::define;

    /// A bin that fills the device takes each row whole; a bin of few rows
    /// takes each window as an item of its own.
    #[test]
    fn dense_parts_spread_only_few_rows() {
        assert_eq!(dense_parts(1000, 256, true, 2), (1024, 1));
        assert_eq!(dense_parts(1000, 256, false, 2), (256, 4));
        assert_eq!(dense_parts(1000, 256, false, 4), (256, 4));
        assert_eq!(dense_parts(700, 256, false, 4), (768, 1));
        assert_eq!(dense_parts(256, 256, false, 2), (256, 1));
        assert_eq!(dense_parts(1, 256, false, 2), (256, 1));
    }

    /// Bin 9's size classes cover every table up to the largest, in turn,
    /// and the last one takes larger rows in parts.
    #[test]
    fn block_classes_split_by_table_size() {
        let smem = (227 << 10) - (12 << 10);
        // f32 values and keys: 8192 slots in 64 KiB, 16384 in a block's shared memory.
        assert_eq!(block_classes(4096, 8, smem), vec![(0, 4096, false)]);
        assert_eq!(
            block_classes(16384, 8, smem),
            vec![(0, 8192, false), (8192, 16384, false)]
        );
        assert_eq!(
            block_classes(1 << 20, 8, smem),
            vec![(0, 8192, false), (8192, 16384, true)]
        );
        // Shared memory below the small class's bytes: one class, in parts.
        assert_eq!(block_classes(1 << 12, 8, 16 << 10), vec![(0, 2048, true)]);
        assert_eq!(block_classes(1 << 10, 8, 16 << 10), vec![(0, 1024, false)]);
    }

    /// The bins, the meta-buffer layout and the block shapes this file
    /// repeats from `kernels/sparse_gemm.cu`.
    #[test]
    fn constants_match_the_kernel() {
        let src = KERNEL.source;
        let pairs: &[(&str, usize)] = &[
            ("NBINS", NBINS),
            ("BIN_DENSE", BIN_DENSE),
            ("BIN_BLOCK", BIN_BLOCK),
            ("BIN_MERGE", BIN_MERGE),
            ("M_SYM_COUNT", M_SYM_COUNT),
            ("M_NUM_COUNT", M_NUM_COUNT),
            ("M_SYM_BLOCK_Q", M_SYM_BLOCK_Q),
            ("M_SYM_SPAN", M_SYM_SPAN),
            ("M_NUM_BLOCK_Q", M_NUM_BLOCK_Q),
            ("M_NUM_SPAN", M_NUM_SPAN),
            ("M_TOTAL", M_TOTAL),
            ("M_FLAGS", M_FLAGS),
            ("M_BLOCK_QUEUE", M_BLOCK_QUEUE),
            ("META_WORDS", META_WORDS),
            ("SORT_WARPS", SORT_WARPS),
            ("MERGE_THREADS", MERGE_THREADS as usize),
            ("ANALYZE_THREADS", ROW_THREADS as usize),
        ];
        for &(name, rust) in pairs {
            assert_eq!(define(src, name), rust as f64, "{name}");
        }
        assert_eq!(define(src, "BLOCK_WARPS") * 32.0, BLOCK_THREADS as f64);
        assert_eq!(
            define(src, "SCAN_T") * define(src, "SCAN_PER"),
            SCAN_BLOCK as f64
        );
    }
}
