//! NearestPairs for [`CudaBackend`]: `kernels/nearest_pairs.cu`.
//!
//! A hashed uniform grid on B is built on the device (bounding box, a density
//! estimate from a 128^3 coarse count so that clustered data gets fine cells,
//! hash insert, cell ranges, scatter), the queries of A are ordered by the
//! Morton code of their coarse cell for coherence, and each query searches
//! rings of cells outward with conservative bounds, so results are exact (see
//! the kernel file's header). `closest_pairs` selects the k smallest `(d2, i)`
//! on the device with a 16-bit histogram of `d2`; only the candidates at or
//! below the selected bin (about k of them) come back to be sorted.
//!
//! Everything between the upload of A and B and the download of the result
//! runs on the stream without a host round trip, except `closest_pairs`,
//! which reads back the candidate count once.

use std::sync::atomic::Ordering;

use cudarc::driver::LaunchConfig;
use trident_core::{
    Error, NearestPairs, NearestPairsDevice, Neighbor, Pair, Point, RadiusNeighbors, Result,
    unscale_d2, validate,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, count_u32, launch_kernel};

/// `kernels/nearest_pairs.cu`.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "nearest_pairs",
    source: include_str!("../kernels/nearest_pairs.cu"),
    per_entry: false,
};

/// Entry points of `kernels/nearest_pairs.cu` (the tidy test checks them).
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "np_bbox_f32",
    "np_coarse_setup_f32",
    "np_coarse_count_f32",
    "np_sumsq",
    "np_finalize_f32",
    "np_insert_f32",
    "np_assign_starts",
    "np_scatter_b_f32",
    "np_order_a_f32",
    "scan_local_u32",
    "scan_top_u32",
    "scan_add_u32",
    "np_nearest_f32",
    "np_knn_f32",
    "np_hist_f32",
    "np_select",
    "np_compact_f32",
];

/// Words of the kernel's `Grid` struct (256 bytes reserved).
const GRID_WORDS: usize = 64;
/// Cells of the coarse grid (128^3, Morton-indexed).
const COARSE_CELLS: usize = 1 << 21;
/// Elements per block of `scan_local_u32`.
const SCAN_BLOCK: usize = 2048;
/// Default points per grid cell aimed at.
///
/// 8, measured on an H100 (`cuda_bench`, cell targets 2/4/8): closest_pairs(100) on
/// pairs-1M-400K took 1.27 ms at 2 points per cell, 1.07 at 4, 0.91 at 8;
/// on pairs-clustered 3.31, 2.07 and 1.58 ms. Fewer, fuller cells cost a few
/// more distance tests but far fewer cell visits and hash probes.
pub const DEFAULT_CELL_TARGET: f32 = 8.0;

/// A candidate pair as `np_compact_f32` writes it.
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Cand {
    d2: f32,
    a: u32,
    b: u32,
}

/// The grid on B: its parameters, hash table of cells, and B grouped by cell.
struct BGrid {
    grid: CudaBuffer<u32>,
    table: CudaBuffer<[u32; 4]>,
    pts: CudaBuffer<[f32; 4]>,
    coarse: CudaBuffer<u32>,
}

fn cfg1d(n: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n.max(1)).div_ceil(threads as usize) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn cfg_fixed(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks.max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queues `$name` of `kernels/nearest_pairs.cu` with [`launch_kernel!`]: the
/// arguments match the kernel's parameter list (pointers as u64, sizes as
/// u32), and every buffer holds the elements the kernel indexes (sized by the
/// caller).
macro_rules! launch {
    ($be:expr, $name:literal, $cfg:expr, $($arg:expr),* $(,)?) => {
        launch_kernel!($be, &KERNEL, $name, $cfg, $($arg),*)
    };
}

impl CudaBackend {
    /// Sets the points-per-cell target of the NearestPairs grid (tuning and
    /// benchmarks; results do not depend on it).
    pub fn set_cell_target(&self, target: f32) {
        let t = if target.is_finite() && target > 0.0 {
            target
        } else {
            DEFAULT_CELL_TARGET
        };
        self.cell_target.store(t.to_bits(), Ordering::Relaxed);
    }

    fn cell_target(&self) -> f32 {
        f32::from_bits(self.cell_target.load(Ordering::Relaxed))
    }

    /// Exclusive prefix sum of `n` u32 in place (three launches).
    fn scan_u32(&self, data: &CudaBuffer<u32>, n: usize) -> Result<()> {
        let blocks = n.div_ceil(SCAN_BLOCK);
        let sums = self.alloc::<u32>(blocks, "scan block sums")?;
        let (d, s, n32, b32) = (
            data.ptr(),
            sums.ptr(),
            count_u32("scan n", n)?,
            blocks as u32,
        );
        launch!(self, "scan_local_u32", cfg_fixed(b32, 256), &d, &n32, &s);
        launch!(self, "scan_top_u32", cfg_fixed(1, 1024), &s, &b32);
        launch!(self, "scan_add_u32", cfg_fixed(b32, 256), &d, &n32, &s);
        Ok(())
    }

    fn build_grid(&self, b: &CudaBuffer<Point>) -> Result<BGrid> {
        let nb = count_u32("b", b.len())?;
        let table_size = (2 * b.len()).next_power_of_two().max(1024);
        let mask = count_u32("hash table", table_size - 1)?;
        let grid = self.alloc_zeroed_named::<u32>(GRID_WORDS, "nearest_pairs grid params")?;
        let coarse = self.alloc_zeroed_named::<u32>(COARSE_CELLS, "nearest_pairs coarse counts")?;
        let table = self.alloc_zeroed_named::<[u32; 4]>(table_size, "nearest_pairs cell table")?;
        let pts = self.alloc::<[f32; 4]>(b.len(), "nearest_pairs B by cell")?;
        let (bp, gp, cp, tp, pp) = (b.ptr(), grid.ptr(), coarse.ptr(), table.ptr(), pts.ptr());
        let sms = self.sm_count();
        let red_blocks = (b.len().div_ceil(256) as u32).clamp(1, 4 * sms);
        let target = self.cell_target();
        let ncoarse = COARSE_CELLS as u32;
        let tsize = table_size as u32;
        launch!(
            self,
            "np_bbox_f32",
            cfg_fixed(red_blocks, 256),
            &bp,
            &nb,
            &gp
        );
        launch!(
            self,
            "np_coarse_setup_f32",
            cfg_fixed(1, 1),
            &gp,
            &target,
            &mask
        );
        launch!(
            self,
            "np_coarse_count_f32",
            cfg1d(b.len(), 256),
            &bp,
            &nb,
            &gp,
            &cp
        );
        launch!(
            self,
            "np_sumsq",
            cfg_fixed(4 * sms, 256),
            &cp,
            &ncoarse,
            &gp
        );
        launch!(self, "np_finalize_f32", cfg_fixed(1, 1), &gp, &nb);
        launch!(
            self,
            "np_insert_f32",
            cfg1d(b.len(), 256),
            &bp,
            &nb,
            &gp,
            &tp
        );
        launch!(
            self,
            "np_assign_starts",
            cfg1d(table_size, 256),
            &tp,
            &tsize,
            &gp
        );
        launch!(
            self,
            "np_scatter_b_f32",
            cfg1d(b.len(), 256),
            &bp,
            &nb,
            &gp,
            &tp,
            &pp
        );
        Ok(BGrid {
            grid,
            table,
            pts,
            coarse,
        })
    }

    /// Indices of A ordered by the Morton code of their coarse cell.
    fn order_queries(&self, a: &CudaBuffer<Point>, g: &mut BGrid) -> Result<CudaBuffer<u32>> {
        let na = count_u32("a", a.len())?;
        self.memset_zero(&mut g.coarse)?;
        let order = self.alloc::<u32>(a.len(), "nearest_pairs query order")?;
        let (ap, gp, cp, op) = (a.ptr(), g.grid.ptr(), g.coarse.ptr(), order.ptr());
        launch!(
            self,
            "np_coarse_count_f32",
            cfg1d(a.len(), 256),
            &ap,
            &na,
            &gp,
            &cp
        );
        self.scan_u32(&g.coarse, COARSE_CELLS)?;
        launch!(
            self,
            "np_order_a_f32",
            cfg1d(a.len(), 256),
            &ap,
            &na,
            &gp,
            &cp,
            &op
        );
        Ok(order)
    }

    fn nearest_into(
        &self,
        a: &CudaBuffer<Point>,
        b: &CudaBuffer<Point>,
        out: &CudaBuffer<Neighbor>,
    ) -> Result<()> {
        if a.is_empty() {
            return Ok(());
        }
        let mut g = self.build_grid(b)?;
        let order = self.order_queries(a, &mut g)?;
        let na = a.len() as u32;
        let (ap, op, gp, tp, pp, outp) = (
            a.ptr(),
            order.ptr(),
            g.grid.ptr(),
            g.table.ptr(),
            g.pts.ptr(),
            out.ptr(),
        );
        launch!(
            self,
            "np_nearest_f32",
            cfg1d(a.len(), 128),
            &ap,
            &na,
            &op,
            &gp,
            &tp,
            &pp,
            &outp
        );
        Ok(())
    }

    /// The `k` nearest points of B for each point of A, sorted by `(d2, j)`,
    /// into `out` (`|A| * k` entries), all on the device. `k <= 32` keeps each
    /// query's list in local memory; larger `k` works in `out` itself.
    pub fn knn_device(
        &self,
        a: &CudaBuffer<Point>,
        b: &CudaBuffer<Point>,
        k: usize,
        out: &mut CudaBuffer<Neighbor>,
    ) -> Result<()> {
        trident_core::validate::knn_device(self, a, b, k, out)?;
        if k == 0 || a.is_empty() {
            return Ok(());
        }
        let mut g = self.build_grid(b)?;
        let order = self.order_queries(a, &mut g)?;
        let (na, k32) = (a.len() as u32, k as u32);
        let (ap, op, gp, tp, pp, outp) = (
            a.ptr(),
            order.ptr(),
            g.grid.ptr(),
            g.table.ptr(),
            g.pts.ptr(),
            out.ptr(),
        );
        launch!(
            self,
            "np_knn_f32",
            cfg1d(a.len(), 128),
            &ap,
            &na,
            &op,
            &gp,
            &tp,
            &pp,
            &k32,
            &outp
        );
        Ok(())
    }
}

impl NearestPairsDevice for CudaBackend {
    fn nearest_device(
        &self,
        a: &CudaBuffer<Point>,
        b: &CudaBuffer<Point>,
        out: &mut CudaBuffer<Neighbor>,
    ) -> Result<()> {
        trident_core::validate::nearest_device(self, a, b, out)?;
        self.nearest_into(a, b, out)
    }

    fn closest_pairs_device(
        &self,
        a: &CudaBuffer<Point>,
        b: &CudaBuffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>> {
        trident_core::validate::closest_pairs_device(self, a, b)?;
        let k = k.min(a.len());
        if k == 0 {
            return Ok(Vec::new());
        }
        let nbrs = self.alloc::<Neighbor>(a.len(), "closest_pairs neighbours")?;
        let mut g = self.build_grid(b)?;
        let order = self.order_queries(a, &mut g)?;
        let na = a.len() as u32;
        let k32 = k as u32;
        let (ap, op, gp, tp, pp, np) = (
            a.ptr(),
            order.ptr(),
            g.grid.ptr(),
            g.table.ptr(),
            g.pts.ptr(),
            nbrs.ptr(),
        );
        launch!(
            self,
            "np_nearest_f32",
            cfg1d(a.len(), 128),
            &ap,
            &na,
            &op,
            &gp,
            &tp,
            &pp,
            &np
        );
        let hist = self.alloc_zeroed_named::<u32>(65536, "closest_pairs histogram")?;
        let cand = self.alloc::<Cand>(a.len(), "closest_pairs candidates")?;
        let (hp, cp) = (hist.ptr(), cand.ptr());
        launch!(self, "np_hist_f32", cfg1d(a.len(), 256), &np, &na, &hp);
        launch!(self, "np_select", cfg_fixed(1, 1024), &hp, &k32, &gp);
        launch!(
            self,
            "np_compact_f32",
            cfg1d(a.len(), 256),
            &np,
            &na,
            &gp,
            &cp
        );
        let mut count = [0u32];
        self.download_into(&g.grid, &mut count)?;
        let count = count[0] as usize;
        if count < k || count > a.len() {
            return Err(Error::Backend(
                format!(
                    "closest_pairs selected {count} candidates for k = {k} of {}",
                    a.len()
                )
                .into(),
            ));
        }
        let mut c = vec![Cand::default(); count];
        self.download_into(&cand, &mut c)?;
        // d2 >= 0, so its bits order like its value.
        c.sort_unstable_by_key(|c| (c.d2.to_bits(), c.a));
        c.truncate(k);
        Ok(c.into_iter()
            .map(|c| Pair {
                a: c.a,
                b: c.b,
                d2: c.d2,
            })
            .collect())
    }
}

impl NearestPairs for CudaBackend {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        validate::nearest(a, b, out)?;
        // The device computes in f32: coordinates whose squared distances
        // would overflow or underflow are scaled by a power of two first.
        let (a, b, shift) = trident_core::scaled_for_range(a, b);
        let (a, b) = (&a[..], &b[..]);
        if a.is_empty() {
            return Ok(());
        }
        let da = self.upload_named(a, "nearest A")?;
        let db = self.upload_named(b, "nearest B")?;
        let dout = self.alloc::<Neighbor>(a.len(), "nearest out")?;
        self.nearest_into(&da, &db, &dout)?;
        self.download_into(&dout, out)?;
        unscale_neighbors(out, shift);
        Ok(())
    }

    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        validate::knn(a, b, k, out)?;
        // The device computes in f32: coordinates whose squared distances
        // would overflow or underflow are scaled by a power of two first.
        let (a, b, shift) = trident_core::scaled_for_range(a, b);
        let (a, b) = (&a[..], &b[..]);
        if k == 0 || a.is_empty() {
            return Ok(());
        }
        let da = self.upload_named(a, "knn A")?;
        let db = self.upload_named(b, "knn B")?;
        let mut dout = self.alloc::<Neighbor>(out.len(), "knn out")?;
        self.knn_device(&da, &db, k, &mut dout)?;
        self.download_into(&dout, out)?;
        unscale_neighbors(out, shift);
        Ok(())
    }

    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        validate::closest_pairs(a, b)?;
        // The device computes in f32: coordinates whose squared distances
        // would overflow or underflow are scaled by a power of two first.
        let (a, b, shift) = trident_core::scaled_for_range(a, b);
        let (a, b) = (&a[..], &b[..]);
        if k == 0 || a.is_empty() {
            return Ok(Vec::new());
        }
        let da = self.upload_named(a, "closest_pairs A")?;
        let db = self.upload_named(b, "closest_pairs B")?;
        let mut pairs = self.closest_pairs_device(&da, &db, k)?;
        for p in &mut pairs {
            p.d2 = unscale_d2(p.d2, shift);
        }
        Ok(pairs)
    }

    fn within(
        &self,
        a: &[Point],
        b: &[Point],
        r: f32,
        _max_pairs: usize,
    ) -> Result<RadiusNeighbors> {
        validate::within(a, b, r)?;
        Err(Error::Unsupported("radius search on cuda".into()))
    }

    fn self_pairs(&self, p: &[Point], r: f32, _max_pairs: usize) -> Result<RadiusNeighbors> {
        validate::self_pairs(p, r)?;
        Err(Error::Unsupported("radius search on cuda".into()))
    }
}

/// f64 coordinates: not yet on this backend; the facade passes the call on.
impl NearestPairs<f64> for CudaBackend {
    fn nearest(&self, a: &[Point<f64>], b: &[Point<f64>], out: &mut [Neighbor<f64>]) -> Result<()> {
        validate::nearest(a, b, out)?;
        Err(Error::Unsupported("f64 coordinates on cuda".into()))
    }
    fn knn(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        k: usize,
        out: &mut [Neighbor<f64>],
    ) -> Result<()> {
        validate::knn(a, b, k, out)?;
        Err(Error::Unsupported("f64 coordinates on cuda".into()))
    }
    fn closest_pairs(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        _k: usize,
    ) -> Result<Vec<Pair<f64>>> {
        validate::closest_pairs(a, b)?;
        Err(Error::Unsupported("f64 coordinates on cuda".into()))
    }
    fn within(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        r: f64,
        _max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::within(a, b, r)?;
        Err(Error::Unsupported("f64 coordinates on cuda".into()))
    }
    fn self_pairs(
        &self,
        p: &[Point<f64>],
        r: f64,
        _max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::self_pairs(p, r)?;
        Err(Error::Unsupported("f64 coordinates on cuda".into()))
    }
}

/// Reported distances back in the caller's units after [`trident_core::scaled_for_range`].
fn unscale_neighbors(out: &mut [Neighbor], shift: i32) {
    if shift != 0 {
        for n in out {
            n.d2 = unscale_d2(n.d2, shift);
        }
    }
}
