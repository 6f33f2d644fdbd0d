//! NearestPairs for [`CudaBackend`]: `kernels/nearest_pairs.cu`, in f32 and
//! f64 coordinates (entry points `*_f32` / `*_f64`; an f64 call computes in
//! f64 throughout).
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
//! Radius search (`within`, `self_pairs`) uses the same grid with cells of at
//! least `r / 2`, so a ball spans a few cells per axis: a count pass, a scan
//! into u64 offsets, the total checked against `max_pairs` before anything of
//! the result is allocated, a fill pass (rows of up to 32 pairs sorted in
//! registers), and a tiled bitonic sort plus merge passes for longer rows.
//!
//! Everything between the upload of A and B and the download of the result
//! runs on the stream without a host round trip, except `closest_pairs`,
//! which reads back the candidate count once, and radius search, which reads
//! back its totals once.

use cudarc::driver::{DeviceRepr, LaunchConfig};
use trident_core::{
    Coord, Element, Error, NearestIndexDevice, NearestPairs, NearestPairsDevice, Neighbor, Pair,
    Point, RadiusNeighbors, Result, scale_coord, scaled_for_range, unscale_d2, validate,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, count_u32, launch_kernel};

/// `kernels/nearest_pairs.cu`, compiled one entry point at a time: a call
/// compiles only the kernels of its own type, all at once.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "nearest_pairs",
    source: include_str!("../kernels/nearest_pairs.cu"),
    per_entry: true,
};

/// Entry points of `kernels/nearest_pairs.cu` (the tidy test checks them).
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "np_bbox_f32",
    "np_bbox_f64",
    "np_coarse_setup_f32",
    "np_coarse_setup_f64",
    "np_coarse_count_f32",
    "np_coarse_count_f64",
    "np_sumsq",
    "np_finalize_f32",
    "np_finalize_f64",
    "np_insert_f32",
    "np_insert_f64",
    "np_assign_starts",
    "np_scatter_b_f32",
    "np_scatter_b_f64",
    "np_order_a_f32",
    "np_order_a_f64",
    "scan_local_u32",
    "scan_local_u64",
    "scan_top_u32",
    "scan_top_u64",
    "scan_add_u32",
    "scan_add_u64",
    "np_nearest_f32",
    "np_nearest_f64",
    "np_knn_f32",
    "np_knn_f64",
    "np_hist_f32",
    "np_hist_f64",
    "np_select",
    "np_compact_f32",
    "np_compact_f64",
    "np_radius_count_f32",
    "np_radius_count_f64",
    "np_radius_totals",
    "np_radius_fill_f32",
    "np_radius_fill_f64",
    "np_tile_sort_f32",
    "np_tile_sort_f64",
    "np_merge_f32",
    "np_merge_f64",
];

/// The kernels that build the grid on B and order the queries: typed (the
/// coordinate type's suffix is appended), then untyped.
const GRID_TYPED: &[&str] = &[
    "np_bbox",
    "np_coarse_setup",
    "np_coarse_count",
    "np_finalize",
    "np_insert",
    "np_scatter_b",
    "np_order_a",
];
const GRID_PLAIN: &[&str] = &[
    "np_sumsq",
    "np_assign_starts",
    "scan_local_u32",
    "scan_top_u32",
    "scan_add_u32",
];
/// What radius search adds to the grid's kernels.
const RADIUS_TYPED: &[&str] = &[
    "np_radius_count",
    "np_radius_fill",
    "np_tile_sort",
    "np_merge",
];
const RADIUS_PLAIN: &[&str] = &[
    "np_radius_totals",
    "scan_local_u64",
    "scan_top_u64",
    "scan_add_u64",
];

/// Words of the kernel's `Grid` struct (256 bytes reserved).
const GRID_WORDS: usize = 64;
/// Cells of the coarse grid (128^3, Morton-indexed).
const COARSE_CELLS: usize = 1 << 21;
/// Elements per block of `scan_local_*`.
const SCAN_BLOCK: usize = 2048;
/// Pairs per sort tile of a long radius row (the kernel's `TILE`).
const TILE: u64 = 2048;
/// Threads per sort tile (the kernel's `TILE_THREADS`).
const TILE_THREADS: u32 = 256;
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
pub(crate) struct Cand32 {
    d2: f32,
    a: u32,
    b: u32,
}

/// A candidate pair as `np_compact_f64` writes it.
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Cand64 {
    d2: f64,
    a: u32,
    b: u32,
}

/// The coordinate types the kernels are compiled for, with the layouts of
/// what they write.
pub(crate) trait DevCoord: Coord + DeviceRepr {
    /// A neighbour as the kernels write it: `Neighbor<Self>`'s bytes (for
    /// f64 the index, 4 bytes of padding, then `d2`), as a `Pod` type.
    type DevNeighbor: Element;
    /// A `closest_pairs` candidate as `np_compact_*` writes it.
    type Cand: Element + Default;
    /// The candidate as a pair.
    fn pair(c: &Self::Cand) -> Pair<Self>;
}

impl DevCoord for f32 {
    type DevNeighbor = Neighbor<f32>;
    type Cand = Cand32;
    fn pair(c: &Cand32) -> Pair<f32> {
        Pair {
            a: c.a,
            b: c.b,
            d2: c.d2,
        }
    }
}

impl DevCoord for f64 {
    type DevNeighbor = [u32; 4];
    type Cand = Cand64;
    fn pair(c: &Cand64) -> Pair<f64> {
        Pair {
            a: c.a,
            b: c.b,
            d2: c.d2,
        }
    }
}

/// `base` with the coordinate type's suffix: `np_bbox_f64`.
fn typed<T: Coord>(base: &str) -> String {
    format!("{base}_{}", T::NAME)
}

/// The grid on B: its parameters, hash table of cells, and B grouped by cell
/// (`x, y, z` and the index's bits in the fourth coordinate's place).
struct BGrid<T: DevCoord> {
    grid: CudaBuffer<u32>,
    table: CudaBuffer<[u32; 4]>,
    pts: CudaBuffer<[T; 4]>,
}

/// What a radius search returns before scaling back: offsets, indices, d2.
type Rows<T> = (Vec<usize>, Vec<u32>, Vec<T>);

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
/// u32 or u64 as declared, coordinates in the kernel's type), and every
/// buffer holds the elements the kernel indexes (sized by the caller).
macro_rules! launch {
    ($be:expr, $name:expr, $cfg:expr, $($arg:expr),* $(,)?) => {
        launch_kernel!($be, &KERNEL, $name, $cfg, $($arg),*)
    };
}

impl CudaBackend {
    fn cell_target(&self) -> f32 {
        self.tuning.cell_target()
    }

    /// Compiles (or loads) the grid's kernels and `typed_extra` / `plain_extra`
    /// for coordinates `T`, in parallel, before the first launch needs them.
    fn prepare_np<T: Coord>(&self, typed_extra: &[&str], plain_extra: &[&str]) -> Result<()> {
        let names: Vec<String> = GRID_TYPED
            .iter()
            .chain(typed_extra)
            .map(|b| typed::<T>(b))
            .chain(GRID_PLAIN.iter().chain(plain_extra).map(|s| s.to_string()))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        self.prepare(&KERNEL, &refs)
    }

    /// Exclusive prefix sum of `n` u32 in place (three launches).
    fn scan_u32(&self, data: &CudaBuffer<u32>, n: usize) -> Result<()> {
        self.scan(data.ptr(), n, 4, "u32")
    }

    /// Exclusive prefix sum of `n` u64 in place (three launches).
    fn scan_u64(&self, data: &CudaBuffer<u64>, n: usize) -> Result<()> {
        self.scan(data.ptr(), n, 8, "u64")
    }

    /// `scan_*_{ty}` over `n` elements of `size` bytes at `data`.
    fn scan(&self, data: u64, n: usize, size: usize, ty: &str) -> Result<()> {
        let blocks = n.div_ceil(SCAN_BLOCK);
        let sums = self.alloc::<u8>(blocks * size, "scan block sums")?;
        let (s, n64, b32) = (sums.ptr(), n as u64, count_u32("scan blocks", blocks)?);
        let k = |stage: &str| format!("scan_{stage}_{ty}");
        launch!(self, &k("local"), cfg_fixed(b32, 256), &data, &n64, &s);
        launch!(self, &k("top"), cfg_fixed(1, 1024), &s, &b32);
        launch!(self, &k("add"), cfg_fixed(b32, 256), &data, &n64, &s);
        Ok(())
    }

    /// The grid on B, with cells of at least `min_h` (0: sized by density
    /// alone).
    fn build_grid<T: DevCoord>(&self, b: &CudaBuffer<Point<T>>, min_h: T) -> Result<BGrid<T>> {
        let nb = count_u32("b", b.len())?;
        let table_size = (2 * b.len()).next_power_of_two().max(1024);
        let mask = count_u32("hash table", table_size - 1)?;
        let grid = self.alloc_zeroed_named::<u32>(GRID_WORDS, "nearest_pairs grid params")?;
        let coarse = self.alloc_zeroed_named::<u32>(COARSE_CELLS, "nearest_pairs coarse counts")?;
        let table = self.alloc_zeroed_named::<[u32; 4]>(table_size, "nearest_pairs cell table")?;
        let pts = self.alloc::<[T; 4]>(b.len(), "nearest_pairs B by cell")?;
        let (bp, gp, cp, tp, pp) = (b.ptr(), grid.ptr(), coarse.ptr(), table.ptr(), pts.ptr());
        let sms = self.sm_count();
        let red_blocks = (b.len().div_ceil(256) as u32).clamp(1, 4 * sms);
        let target = self.cell_target();
        let ncoarse = COARSE_CELLS as u32;
        let tsize = table_size as u32;
        let k = typed::<T>;
        launch!(
            self,
            &k("np_bbox"),
            cfg_fixed(red_blocks, 256),
            &bp,
            &nb,
            &gp
        );
        launch!(
            self,
            &k("np_coarse_setup"),
            cfg_fixed(1, 1),
            &gp,
            &target,
            &mask
        );
        launch!(
            self,
            &k("np_coarse_count"),
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
        launch!(self, &k("np_finalize"), cfg_fixed(1, 1), &gp, &nb, &min_h);
        launch!(
            self,
            &k("np_insert"),
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
            &k("np_scatter_b"),
            cfg1d(b.len(), 256),
            &bp,
            &nb,
            &gp,
            &tp,
            &pp
        );
        // `coarse` may go: its release is ordered after the kernels on the stream.
        Ok(BGrid { grid, table, pts })
    }

    /// Indices of A ordered by the Morton code of their coarse cell.
    fn order_queries<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        g: &BGrid<T>,
    ) -> Result<CudaBuffer<u32>> {
        let na = count_u32("a", a.len())?;
        // A's own coarse counts: the grid is read-only here, so a kept index
        // can serve several calls at once.
        let counts = self.alloc_zeroed_named::<u32>(COARSE_CELLS, "nearest_pairs query counts")?;
        let order = self.alloc::<u32>(a.len(), "nearest_pairs query order")?;
        let (ap, gp, cp, op) = (a.ptr(), g.grid.ptr(), counts.ptr(), order.ptr());
        launch!(
            self,
            &typed::<T>("np_coarse_count"),
            cfg1d(a.len(), 256),
            &ap,
            &na,
            &gp,
            &cp
        );
        self.scan_u32(&counts, COARSE_CELLS)?;
        launch!(
            self,
            &typed::<T>("np_order_a"),
            cfg1d(a.len(), 256),
            &ap,
            &na,
            &gp,
            &cp,
            &op
        );
        Ok(order)
    }

    /// The nearest point of B for each point of A into `out` (`|A|` entries).
    fn nearest_into<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        b: &CudaBuffer<Point<T>>,
        out: &CudaBuffer<T::DevNeighbor>,
    ) -> Result<()> {
        if a.is_empty() {
            return Ok(());
        }
        let g = self.build_grid(b, T::ZERO)?;
        self.nearest_with(a, &g, out)
    }

    /// [`Self::nearest_into`] on a grid already built over B.
    fn nearest_with<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        g: &BGrid<T>,
        out: &CudaBuffer<T::DevNeighbor>,
    ) -> Result<()> {
        if a.is_empty() {
            return Ok(());
        }
        let order = self.order_queries(a, g)?;
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
            &typed::<T>("np_nearest"),
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

    /// The `k` nearest points of B for each point of A into `out` (`|A| * k`
    /// entries, validated); `k <= 32` keeps each query's list in local
    /// memory, larger `k` works in `out` itself.
    fn knn_into<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        b: &CudaBuffer<Point<T>>,
        k: usize,
        out: &CudaBuffer<T::DevNeighbor>,
    ) -> Result<()> {
        if k == 0 || a.is_empty() {
            return Ok(());
        }
        let g = self.build_grid(b, T::ZERO)?;
        let order = self.order_queries(a, &g)?;
        let (na, k32) = (a.len() as u32, count_u32("k", k)?);
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
            &typed::<T>("np_knn"),
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

    /// `closest_pairs` of validated, non-empty A and B with `1 <= k <= |A|`.
    fn closest_pairs_on<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        b: &CudaBuffer<Point<T>>,
        k: usize,
    ) -> Result<Vec<Pair<T>>> {
        let g = self.build_grid(b, T::ZERO)?;
        self.closest_pairs_with(a, &g, k)
    }

    /// [`Self::closest_pairs_on`] on a grid already built over B.
    fn closest_pairs_with<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        g: &BGrid<T>,
        k: usize,
    ) -> Result<Vec<Pair<T>>> {
        let nbrs = self.alloc::<T::DevNeighbor>(a.len(), "closest_pairs neighbours")?;
        self.nearest_with(a, g, &nbrs)?;
        let na = a.len() as u32;
        let k32 = count_u32("k", k)?;
        let hist = self.alloc_zeroed_named::<u32>(65536, "closest_pairs histogram")?;
        let cand = self.alloc::<T::Cand>(a.len(), "closest_pairs candidates")?;
        // The grid's parameters hold the selected bin and the candidate count.
        let grid = self.alloc_zeroed_named::<u32>(GRID_WORDS, "closest_pairs selection")?;
        let (np, hp, cp, gp) = (nbrs.ptr(), hist.ptr(), cand.ptr(), grid.ptr());
        launch!(
            self,
            &typed::<T>("np_hist"),
            cfg1d(a.len(), 256),
            &np,
            &na,
            &hp
        );
        launch!(self, "np_select", cfg_fixed(1, 1024), &hp, &k32, &gp);
        launch!(
            self,
            &typed::<T>("np_compact"),
            cfg1d(a.len(), 256),
            &np,
            &na,
            &gp,
            &cp
        );
        let mut count = [0u32];
        self.download_into(&grid, &mut count)?;
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
        let mut c = vec![T::Cand::default(); count];
        self.download_into(&cand, &mut c)?;
        let mut pairs: Vec<Pair<T>> = c.iter().map(T::pair).collect();
        // d2 >= 0, so its bits (widened to f64, exactly) order like its value.
        pairs.sort_unstable_by_key(|p| (p.d2.to_f64().to_bits(), p.a));
        pairs.truncate(k);
        Ok(pairs)
    }

    /// Copies the first `out.len()` neighbours of `buf` into `out`.
    fn download_neighbors<T: DevCoord>(
        &self,
        buf: &CudaBuffer<T::DevNeighbor>,
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        if size_of::<T::DevNeighbor>() != size_of::<Neighbor<T>>() || out.len() > buf.len() {
            return Err(Error::Backend(
                "nearest_pairs: device neighbours do not match the host's layout".into(),
            ));
        }
        // SAFETY: `out` is `size_of_val(out)` writable bytes, ours alone here;
        // the device buffer holds as many. `Neighbor<T>` is `repr(C)` (a u32,
        // then `T` at the offset the kernel's `Neighbor<R>` puts it), and any
        // bytes are a valid value of it: every bit pattern is a u32 or a `T`,
        // and its padding (f64: 4 bytes) may hold anything.
        unsafe {
            self.download_spans(&[(
                buf.ptr(),
                out.as_mut_ptr().cast(),
                std::mem::size_of_val(out),
            )])
        }
    }

    fn nearest_host<T: DevCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        if a.is_empty() || b.is_empty() || out.len() != a.len() {
            return validate::nearest(a, b, out);
        }
        self.prepare_np::<T>(&["np_nearest"], &[])?;
        // The sizes are right: what can fail is the points' check, which
        // `closest_pairs`' validation makes alike. Coordinates whose squared
        // distances would overflow or underflow `T` are scaled on the way.
        let full = || validate::closest_pairs(a, b);
        let (da, db, shift) = self.upload_pair(a, b, "nearest", &full)?;
        let dout = self.alloc::<T::DevNeighbor>(a.len(), "nearest out")?;
        self.nearest_into(&da, &db, &dout)?;
        self.download_neighbors(&dout, out)?;
        unscale_neighbors(out, shift);
        Ok(())
    }

    fn knn_host<T: DevCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        k: usize,
        out: &mut [Neighbor<T>],
    ) -> Result<()> {
        validate::knn(a, b, k, out)?;
        let (a, b, shift) = scaled_for_range(a, b);
        if k == 0 || a.is_empty() {
            return Ok(());
        }
        self.prepare_np::<T>(&["np_knn"], &[])?;
        let da = self.upload_named(&a[..], "knn A")?;
        let db = self.upload_named(&b[..], "knn B")?;
        let dout = self.alloc::<T::DevNeighbor>(out.len(), "knn out")?;
        self.knn_into(&da, &db, k, &dout)?;
        self.download_neighbors(&dout, out)?;
        unscale_neighbors(out, shift);
        Ok(())
    }

    /// Uploads A and B as one staged copy (one set of workers for both),
    /// each piece scanned as the workers copy it
    /// ([`trident_core::scan_coords`]) instead of a finite check and a range
    /// scan over the points first (3-4 ms of a 6 ms call on pairs-1M-400K).
    /// A non-finite coordinate fails with `full`'s error (the whole input
    /// check, which names the first bad point); coordinates whose squared
    /// distances would overflow or underflow `T` go up again, scaled by
    /// `2^-shift` ([`trident_core::range_shift`]), which is returned.
    #[allow(clippy::type_complexity)]
    fn upload_pair<T: DevCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        what: &str,
        full: &dyn Fn() -> Result<()>,
    ) -> Result<(CudaBuffer<Point<T>>, CudaBuffer<Point<T>>, i32)> {
        validate::point_count("a", a.len())?;
        validate::point_count("b", b.len())?;
        let da = self.alloc::<Point<T>>(a.len(), &format!("{what} A"))?;
        let db = self.alloc::<Point<T>>(b.len(), &format!("{what} B"))?;
        let src: [&[u8]; 2] = [bytemuck::cast_slice(a), bytemuck::cast_slice(b)];
        let seen = std::sync::Mutex::new(trident_core::CoordScan::EMPTY);
        let fill = |p: usize, off: usize, out: &mut [u8]| {
            out.copy_from_slice(&src[p][off..off + out.len()]);
            // Pieces hold whole coordinates (multiples of 64 KiB, or a
            // part's end) and are 16-byte aligned.
            let s = trident_core::scan_coords::<T>(bytemuck::cast_slice(out));
            if let Ok(mut all) = seen.lock() {
                *all = all.merge(s);
            }
        };
        // SAFETY: each part fills the buffer just allocated for it, which
        // nothing else uses.
        unsafe { self.upload_filled(&[(src[0].len(), da.ptr()), (src[1].len(), db.ptr())], fill) }?;
        let scan = *seen
            .lock()
            .map_err(|_| Error::Backend("points scan lock poisoned".into()))?;
        if !scan.finite {
            full()?;
            return Err(Error::Backend("a coordinate is not finite".into()));
        }
        match trident_core::range_shift_of::<T>(scan.max_abs, scan.min_nonzero) {
            0 => Ok((da, db, 0)),
            shift => {
                let (sa, sb) = (
                    trident_core::scale_points(a, shift),
                    trident_core::scale_points(b, shift),
                );
                // SAFETY: as above; the scaled points replace the ones sent.
                unsafe {
                    self.upload_spans(&[
                        (bytemuck::cast_slice(&sa), da.ptr()),
                        (bytemuck::cast_slice(&sb), db.ptr()),
                    ])
                }?;
                Ok((da, db, shift))
            }
        }
    }

    fn closest_pairs_host<T: DevCoord>(
        &self,
        a: &[Point<T>],
        b: &[Point<T>],
        k: usize,
    ) -> Result<Vec<Pair<T>>> {
        let t0 = std::time::Instant::now();
        let k = k.min(a.len());
        if k == 0 || b.is_empty() {
            validate::closest_pairs(a, b)?;
            return Ok(Vec::new());
        }
        let t1 = std::time::Instant::now();
        self.prepare_np::<T>(&["np_nearest", "np_hist", "np_compact"], &["np_select"])?;
        let full = || validate::closest_pairs(a, b);
        let (da, db, shift) = self.upload_pair(a, b, "closest_pairs", &full)?;
        let t2 = std::time::Instant::now();
        let mut pairs = self.closest_pairs_on(&da, &db, k)?;
        tracing::debug!(
            check_ms = (t1 - t0).as_secs_f64() * 1e3,
            upload_ms = (t2 - t1).as_secs_f64() * 1e3,
            device_ms = t2.elapsed().as_secs_f64() * 1e3,
            "closest_pairs host call"
        );
        if shift != 0 {
            for p in &mut pairs {
                p.d2 = unscale_d2(p.d2, shift);
            }
        }
        Ok(pairs)
    }

    /// `within(a, b, r)` (`b` given) or `self_pairs(a, r)` (`b` None), the
    /// arguments validated.
    fn radius_host<T: DevCoord>(
        &self,
        a: &[Point<T>],
        b: Option<&[Point<T>]>,
        r: T,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<T>> {
        let (sa, sb, shift) = scaled_for_range(a, b.unwrap_or(&[]));
        let r = scale_coord(r, shift);
        let rows = a.len();
        let nothing = match b {
            Some(_) => rows == 0 || sb.is_empty(),
            None => rows < 2,
        };
        if nothing {
            return Ok(RadiusNeighbors {
                offsets: vec![0; rows + 1],
                indices: Vec::new(),
                d2: Vec::new(),
            });
        }
        self.prepare_np::<T>(RADIUS_TYPED, RADIUS_PLAIN)?;
        let (offsets, indices, mut d2) = match b {
            Some(_) => {
                let da = self.upload_named(&sa[..], "within A")?;
                let db = self.upload_named(&sb[..], "within B")?;
                self.radius_on(&da, &db, false, r, max_pairs)?
            }
            None => {
                let dp = self.upload_named(&sa[..], "self_pairs P")?;
                self.radius_on(&dp, &dp, true, r, max_pairs)?
            }
        };
        if shift != 0 {
            for d in &mut d2 {
                *d = unscale_d2(*d, shift);
            }
        }
        Ok(RadiusNeighbors {
            offsets,
            indices,
            d2,
        })
    }

    /// Every pair of A and B within `r` (scaled already), rows sorted by
    /// `(d2, j)`; with `upper` (A and B the same set) only `j > i`. A and B
    /// are not empty.
    fn radius_on<T: DevCoord>(
        &self,
        a: &CudaBuffer<Point<T>>,
        b: &CudaBuffer<Point<T>>,
        upper: bool,
        r: T,
        max_pairs: usize,
    ) -> Result<Rows<T>> {
        let n = a.len();
        let n32 = count_u32("a", n)?;
        // Decided in `T`, as the contract says: d2 <= r * r.
        let r2 = r * r;
        // Cells of at least r / 2: a ball then spans at most ~6 per axis.
        let g = self.build_grid(b, r * T::from_f64(0.5))?;
        let order = self.order_queries(a, &g)?;
        let counts = self.alloc_zeroed_named::<u64>(n + 1, "within row offsets")?;
        let tiles = self.alloc_zeroed_named::<u64>(n + 1, "within sort tiles")?;
        let meta = self.alloc_zeroed_named::<u64>(4, "within totals")?;
        let up = u32::from(upper);
        let (ap, op, gp, tp, pp) = (
            a.ptr(),
            order.ptr(),
            g.grid.ptr(),
            g.table.ptr(),
            g.pts.ptr(),
        );
        let (cp, tlp, mp) = (counts.ptr(), tiles.ptr(), meta.ptr());
        launch!(
            self,
            &typed::<T>("np_radius_count"),
            cfg1d(n, 128),
            &ap,
            &n32,
            &op,
            &gp,
            &tp,
            &pp,
            &r,
            &r2,
            &up,
            &cp,
            &tlp,
            &mp
        );
        // counts[n] and tiles[n] are 0: the scans leave the totals there.
        self.scan_u64(&counts, n + 1)?;
        self.scan_u64(&tiles, n + 1)?;
        launch!(
            self,
            "np_radius_totals",
            cfg_fixed(1, 1),
            &cp,
            &tlp,
            &n32,
            &mp
        );
        let mut m = [0u64; 4];
        self.download_into(&meta, &mut m)?;
        let [total, ntiles, max_len, _] = m;
        validate::radius_count(total as u128, max_pairs)?;
        // At most max_pairs, a usize.
        let total = total as usize;
        let idx = self.alloc::<u32>(total, "within indices")?;
        let d2 = self.alloc::<T>(total, "within distances")?;
        let (ip, dp) = (idx.ptr(), d2.ptr());
        launch!(
            self,
            &typed::<T>("np_radius_fill"),
            cfg1d(n, 128),
            &ap,
            &n32,
            &op,
            &gp,
            &tp,
            &pp,
            &r,
            &r2,
            &up,
            &cp,
            &ip,
            &dp,
            &mp
        );
        if ntiles > 0 {
            self.sort_long_rows::<T>(&counts, &tiles, n32, ntiles, max_len, &idx, &d2)?;
        }
        let offsets = self.download_vec(&counts)?;
        let indices = self.download_vec(&idx)?;
        let dists = self.download_vec(&d2)?;
        self.download_into(&meta, &mut m)?;
        if m[3] != 0 || offsets.last() != Some(&(total as u64)) {
            return Err(Error::Backend(
                "radius search: the fill pass found other pairs than the count pass".into(),
            ));
        }
        let offsets = offsets.into_iter().map(|o| o as usize).collect();
        Ok((offsets, indices, dists))
    }

    /// Sorts the rows longer than the kernel's `SHORT_ROW` by `(d2, j)`:
    /// `ntiles` tiles of [`TILE`] pairs (row `i` has tiles from
    /// `tile_start[i]`), each sorted in shared memory, then merge passes
    /// doubling the sorted runs until the longest row (`max_len`) is one,
    /// between `idx` / `d2` and a scratch of `ntiles * TILE` pairs.
    #[allow(clippy::too_many_arguments)]
    fn sort_long_rows<T: DevCoord>(
        &self,
        offsets: &CudaBuffer<u64>,
        tile_start: &CudaBuffer<u64>,
        n32: u32,
        ntiles: u64,
        max_len: u64,
        idx: &CudaBuffer<u32>,
        d2: &CudaBuffer<T>,
    ) -> Result<()> {
        let blocks = u32::try_from(ntiles)
            .ok()
            .filter(|&b| b <= i32::MAX as u32)
            .ok_or(Error::TooLarge {
                field: "radius sort tiles",
                value: ntiles as u128,
                limit: i32::MAX as u128,
            })?;
        let (op, tsp, ip, dp) = (offsets.ptr(), tile_start.ptr(), idx.ptr(), d2.ptr());
        let cfg = || cfg_fixed(blocks, TILE_THREADS);
        if max_len <= TILE {
            // One tile per row: sorted in place.
            let (none, to_scratch) = (0u64, 0u32);
            launch!(
                self,
                &typed::<T>("np_tile_sort"),
                cfg(),
                &op,
                &tsp,
                &n32,
                &ip,
                &dp,
                &none,
                &none,
                &to_scratch
            );
            return Ok(());
        }
        let len = ntiles as usize * TILE as usize;
        let sidx = self.alloc::<u32>(len, "within sort scratch")?;
        let sd2 = self.alloc::<T>(len, "within sort scratch")?;
        let (sip, sdp) = (sidx.ptr(), sd2.ptr());
        let to_scratch = 1u32;
        launch!(
            self,
            &typed::<T>("np_tile_sort"),
            cfg(),
            &op,
            &tsp,
            &n32,
            &ip,
            &dp,
            &sip,
            &sdp,
            &to_scratch
        );
        let merge = |w: u64, from_scratch: u32| -> Result<()> {
            launch!(
                self,
                &typed::<T>("np_merge"),
                cfg(),
                &op,
                &tsp,
                &n32,
                &w,
                &from_scratch,
                &ip,
                &dp,
                &sip,
                &sdp
            );
            Ok(())
        };
        let (mut w, mut from_scratch) = (TILE, 1u32);
        while w < max_len {
            merge(w, from_scratch)?;
            from_scratch ^= 1;
            w *= 2;
        }
        if from_scratch == 1 {
            // Runs longer than any row: a copy back into the output.
            merge(1 << 62, 1)?;
        }
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
        if a.is_empty() {
            return Ok(());
        }
        self.prepare_np::<f32>(&["np_nearest"], &[])?;
        self.nearest_into::<f32>(a, b, out)
    }

    /// `k <= 32` keeps each query's list in local memory; larger `k` works
    /// in `out` itself.
    fn knn_device(
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
        self.prepare_np::<f32>(&["np_knn"], &[])?;
        self.knn_into::<f32>(a, b, k, out)
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
        self.prepare_np::<f32>(&["np_nearest", "np_hist", "np_compact"], &["np_select"])?;
        self.closest_pairs_on::<f32>(a, b, k)
    }
}

/// B's grid built once and kept ([`NearestIndexDevice`]): the hash table of
/// cells and B's points grouped by cell, which is all a query reads.
pub struct CudaPointIndex {
    grid: BGrid<f32>,
    len: usize,
}

impl NearestIndexDevice for CudaBackend {
    type PointIndex = CudaPointIndex;

    fn index_points(&self, b: &CudaBuffer<Point>) -> Result<CudaPointIndex> {
        validate::index_points(self, b)?;
        self.prepare_np::<f32>(&["np_nearest", "np_hist", "np_compact"], &["np_select"])?;
        Ok(CudaPointIndex {
            grid: self.build_grid(b, 0.0)?,
            len: b.len(),
        })
    }

    fn index_len(&self, index: &CudaPointIndex) -> usize {
        index.len
    }

    fn nearest_indexed(
        &self,
        a: &CudaBuffer<Point>,
        index: &CudaPointIndex,
        out: &mut CudaBuffer<Neighbor>,
    ) -> Result<()> {
        validate::nearest_indexed(self, a, index.len, out)?;
        self.nearest_with::<f32>(a, &index.grid, out)
    }

    fn closest_pairs_indexed(
        &self,
        a: &CudaBuffer<Point>,
        index: &CudaPointIndex,
        k: usize,
    ) -> Result<Vec<Pair>> {
        validate::closest_pairs_indexed(self, a)?;
        let k = k.min(a.len());
        if k == 0 {
            return Ok(Vec::new());
        }
        self.closest_pairs_with::<f32>(a, &index.grid, k)
    }
}

impl NearestPairs for CudaBackend {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        self.nearest_host(a, b, out)
    }

    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        self.knn_host(a, b, k, out)
    }

    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        self.closest_pairs_host(a, b, k)
    }

    fn within(
        &self,
        a: &[Point],
        b: &[Point],
        r: f32,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors> {
        validate::within(a, b, r)?;
        self.radius_host(a, Some(b), r, max_pairs)
    }

    fn self_pairs(&self, p: &[Point], r: f32, max_pairs: usize) -> Result<RadiusNeighbors> {
        validate::self_pairs(p, r)?;
        self.radius_host(p, None, r, max_pairs)
    }
}

impl NearestPairs<f64> for CudaBackend {
    fn nearest(&self, a: &[Point<f64>], b: &[Point<f64>], out: &mut [Neighbor<f64>]) -> Result<()> {
        self.nearest_host(a, b, out)
    }

    fn knn(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        k: usize,
        out: &mut [Neighbor<f64>],
    ) -> Result<()> {
        self.knn_host(a, b, k, out)
    }

    fn closest_pairs(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        k: usize,
    ) -> Result<Vec<Pair<f64>>> {
        self.closest_pairs_host(a, b, k)
    }

    fn within(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        r: f64,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::within(a, b, r)?;
        self.radius_host(a, Some(b), r, max_pairs)
    }

    fn self_pairs(
        &self,
        p: &[Point<f64>],
        r: f64,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::self_pairs(p, r)?;
        self.radius_host(p, None, r, max_pairs)
    }
}

/// Reported distances back in the caller's units after [`scaled_for_range`].
fn unscale_neighbors<T: Coord>(out: &mut [Neighbor<T>], shift: i32) {
    if shift != 0 {
        for n in out {
            n.d2 = unscale_d2(n.d2, shift);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_text::{after, define};

    /// The tile, scan and grid shapes this file repeats from
    /// `kernels/nearest_pairs.cu`.
    #[test]
    fn constants_match_the_kernel() {
        let src = KERNEL.source;
        assert_eq!(define(src, "TILE"), TILE as f64);
        assert_eq!(define(src, "TILE_THREADS"), TILE_THREADS as f64);
        assert_eq!(
            define(src, "SCAN_T") * define(src, "SCAN_PER"),
            SCAN_BLOCK as f64
        );
        assert_eq!(
            (1u64 << (3 * define(src, "COARSE_BITS") as u32)) as f64,
            COARSE_CELLS as f64
        );
        assert_eq!(
            after(src, "static_assert(sizeof(Grid<double>) <= "),
            (GRID_WORDS * 4) as f64
        );
    }

    /// What the kernels write is laid out as the host reads it.
    #[test]
    fn device_layouts_match_the_host_types() {
        assert_eq!(size_of::<Neighbor<f32>>(), 8);
        assert_eq!(size_of::<Neighbor<f64>>(), 16);
        assert_eq!(std::mem::offset_of!(Neighbor<f64>, d2), 8);
        assert_eq!(size_of::<<f64 as DevCoord>::DevNeighbor>(), 16);
        assert_eq!(size_of::<Cand32>(), 12);
        assert_eq!(size_of::<Cand64>(), 16);
        assert_eq!(size_of::<[f64; 4]>(), 32);
    }

    /// Every entry a call prepares exists, for both types.
    #[test]
    fn prepared_entries_exist() {
        for ty in ["f32", "f64"] {
            for base in GRID_TYPED.iter().chain(RADIUS_TYPED).chain(&[
                "np_nearest",
                "np_knn",
                "np_hist",
                "np_compact",
            ]) {
                let e = format!("{base}_{ty}");
                assert!(ENTRY_POINTS.contains(&e.as_str()), "{e}");
            }
        }
        for e in GRID_PLAIN.iter().chain(RADIUS_PLAIN).chain(&["np_select"]) {
            assert!(ENTRY_POINTS.contains(e), "{e}");
        }
    }

    /// Each entry point compiles alone: it has an entry line of its own.
    #[test]
    fn every_entry_point_has_its_own_line() {
        for e in ENTRY_POINTS {
            assert!(
                crate::device::entry_source(KERNEL.source, e).is_some(),
                "{e} has no `*_ENTRY({e}, ...)` line"
            );
        }
    }
}
