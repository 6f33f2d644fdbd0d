//! NearestPairs for [`WgpuBackend`]: `shaders/nearest_pairs.wgsl`.
//!
//! The CUDA backend's technique in WGSL: a hashed uniform grid on B built on
//! the device (bounding box, a density estimate from a 128^3 coarse count so
//! that clustered data gets fine cells, hash insert, a scan of the cell counts
//! with `shaders/scan.wgsl`, scatter), the queries of A ordered by the Morton
//! code of their coarse cell, and a search of rings of cells outward with
//! conservative bounds, so results are exact (the shader's header says how).
//! `closest_pairs` selects the k smallest `(d2, i)` on the device by a radix
//! select over that 64-bit key; exactly k pairs come back and the host sorts
//! them.
//!
//! Every call records all its work into one command buffer: nothing goes back
//! to the host between the upload of A and B and the download of the result
//! (radius search reads its pair count back once, to size its output).
//!
//! Radius search (`within`, `self_pairs`) runs over the same grid, built with
//! cells at least `r / 2` wide so that a ball meets at most 5 cells per axis
//! whatever `r` is: a count pass, one read back of the total (64-bit: counts
//! are added with carry), `validate::radius_count` before the output is
//! allocated, a scan of the counts into row offsets, a fill pass, and a sort
//! of each row by `(d2, j)` on the device (rows of up to 32 pairs in their
//! query's invocation, longer ones by a workgroup each: a bitonic sort that
//! needs no padding, in workgroup memory up to 1024 pairs and in place
//! beyond). Its limits: at most `2^30` pairs, 8 bytes a pair, within one
//! `max_storage_buffer_binding_size` (a clear `TooLarge` past them).
//!
//! f64 coordinates: WGSL has no f64, and rounding to f32 would change the
//! answer, so every f64 call answers `Unsupported` once its input is valid
//! and the facade hands it to the next backend.
//!
//! Limits, explicit: 13 bindings (12 storage buffers) per kernel, checked
//! against `max_storage_buffers_per_shader_stage`; every binding against
//! `max_storage_buffer_binding_size` (by the dispatch); a grid of at most
//! 1624 cells per axis, so that a cell key fits a u32 (very uneven data then
//! gets fuller cells: slower, still exact); `|A| * k < 2^32` for `knn`.
//!
//! Loop cap of llvmpipe: Mesa's software Vulkan stops a shader's loops after
//! 65535 iterations in total, silently. On CPU adapters each query gets a
//! loop budget below that cap ([`LANE_BUDGET`]); a query that runs out is
//! marked by the shader and counted, and [`WgpuBackend::np_finish_cut`]
//! recomputes exactly those queries on the host (the same f32 distance, ties
//! to the smaller index); radius rows likewise. Very uneven data (far
//! queries, cells full of duplicates) is then slower on llvmpipe, never
//! wrong.

use crate::error::failure;
use trident_core::{
    Error, NearestIndexDevice, NearestPairs, NearestPairsDevice, Neighbor, Pair, Point,
    RadiusNeighbors, Result, unscale_d2, validate,
};

use crate::WgpuBackend;
use crate::buffer::WgpuBuffer;
use crate::pipeline::{Arg, Bind, Encoder, Kernel, Shader};

/// `shaders/nearest_pairs.wgsl` with `np_query` keeping one neighbour.
static SHADER: Shader = Shader {
    name: "nearest_pairs",
    parts: &[
        "const KNN_MODE: bool = false;\n",
        include_str!("../shaders/nearest_pairs.wgsl"),
    ],
};

/// The same file with `np_query` keeping k neighbours in the output rows.
static SHADER_KNN: Shader = Shader {
    name: "nearest_pairs_knn",
    parts: &[
        "const KNN_MODE: bool = true;\n",
        include_str!("../shaders/nearest_pairs.wgsl"),
    ],
};

/// The shader's bindings; every kernel binds all of them.
const BINDS: &[Bind] = &[
    Bind::Uniform,   // 0 pp
    Bind::Read,      // 1 src: A or B
    Bind::ReadWrite, // 2 gw: grid words (atomics)
    Bind::Read,      // 3 gp: a copy of gw that the queries read
    Bind::ReadWrite, // 4 cnt: coarse counts
    Bind::ReadWrite, // 5 tkey: hash keys
    Bind::ReadWrite, // 6 tcnt: counts, then starts, then ends
    Bind::ReadWrite, // 7 table: packed slots
    Bind::ReadWrite, // 8 pts: B by cell
    Bind::ReadWrite, // 9 order: A by coarse cell
    Bind::ReadWrite, // 10 out: neighbours
    Bind::ReadWrite, // 11 hist: top-k histograms; radius: row counts, then offsets
    Bind::ReadWrite, // 12 cand: top-k pairs; radius: the long rows to sort
];

/// Storage buffers each kernel binds (all of `BINDS` but the uniform).
const STORAGE_BINDINGS: u32 = 12;

macro_rules! kernels {
    ($($id:ident = $shader:ident . $entry:literal),* $(,)?) => {
        $(static $id: Kernel = Kernel { shader: &$shader, entry: $entry, bindings: BINDS };)*
        /// Kernels of this primitive (built by `warm_up`).
        pub(crate) const KERNELS: &[&Kernel] = &[$(&$id),*];
    };
}

kernels! {
    BBOX = SHADER."np_bbox",
    SETUP = SHADER."np_setup",
    COARSE_COUNT = SHADER."np_coarse_count",
    SUMSQ = SHADER."np_sumsq",
    FINALIZE = SHADER."np_finalize",
    INSERT = SHADER."np_insert",
    SCATTER = SHADER."np_scatter",
    PACK = SHADER."np_pack",
    ORDER = SHADER."np_order",
    NEAREST = SHADER."np_query",
    KNN = SHADER_KNN."np_query",
    HIST = SHADER."np_hist",
    SELECT = SHADER."np_select",
    COMPACT = SHADER."np_compact",
    RADIUS_COUNT = SHADER."np_radius_count",
    RADIUS_FILL = SHADER."np_radius_fill",
    RADIUS_SORT = SHADER."np_radius_sort",
}

/// Points per grid cell aimed at: 8, as the CUDA backend measured on an H100
/// (`trident_cuda::nearest_pairs::DEFAULT_CELL_TARGET`); results do not
/// depend on it.
pub const CELL_TARGET: f32 = 8.0;

/// Words of the shader's `gw` (fields below 256, then `NPART` partial sums).
const GRID_WORDS: usize = 512;
/// Cells of the coarse grid (128^3, Morton-indexed).
const COARSE_CELLS: usize = 1 << 21;
/// Workgroups of `np_sumsq` (`NPART`) and of `np_bbox` at most.
const NPART: u64 = 256;
/// Bins of one top-k histogram round (16 bits).
const NBINS: usize = 1 << 16;
/// Invocations per workgroup of the build and top-k kernels (`WG`).
const WG: u64 = 256;
/// Queries per workgroup (`QWG`).
const QWG: u64 = 128;
/// Word of `gw` counting the queries that ran out of loop budget (`W_CUT`).
const W_CUT: usize = 11;
/// Neighbour index the shader writes for such a query (`CUT`).
const CUT: u32 = 0xffff_fffe;
/// Loop iterations one query may run on a CPU adapter (llvmpipe): a SIMD
/// vector of up to 16 lanes then runs at most 16 x 4000 = 64000 < 65535
/// (the shader's header gives the argument).
pub const LANE_BUDGET: u32 = 4000;
/// Of [`LANE_BUDGET`], what a radius query's walk leaves for the loops of
/// its fill that do not spend: the insertion sort of a row of up to the
/// shader's `SHORT` = 32 pairs (496 shifts) and its copy out (32).
const RADIUS_SORT_RESERVE: u32 = 600;
/// Count the shader writes for a row that ran out of loop budget (`RCUT`).
const RCUT: u32 = u32::MAX;
/// Words of `gw` the radius passes report in (`W_*` of the shader).
const W_TOT_LO: usize = 12;
const W_TOT_HI: usize = 13;
const W_LONG: usize = 14;
const W_CUT2: usize = 15;
const W_BAD: usize = 29;
const W_LIST: usize = 30;
/// Pairs one radius search may hold on the device: its row offsets are u32
/// and the sort's powers of two must not wrap.
const MAX_RADIUS_PAIRS: u64 = 1 << 30;

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    k: u32,
    tmask: u32,
    rnd: u32,
    /// Radius search: r (0 otherwise, which leaves the grid as it was).
    rad: f32,
    /// `r * r` in f32: the shader compares with it as the contract says.
    rad2: f32,
    /// `self_pairs`: 1 (only `j > i`).
    upper: u32,
    _pad: u32,
}

/// A pair as `np_compact` writes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Cand {
    d2: f32,
    a: u32,
    b: u32,
}

/// Every buffer a call binds; roles a call does not use hold one element.
struct Work {
    gw: WgpuBuffer<u32>,
    gp: WgpuBuffer<u32>,
    cnt: WgpuBuffer<u32>,
    tkey: WgpuBuffer<u32>,
    tcnt: WgpuBuffer<u32>,
    table: WgpuBuffer<[u32; 4]>,
    pts: WgpuBuffer<[u32; 4]>,
    order: WgpuBuffer<u32>,
    hist: WgpuBuffer<u32>,
    cand: WgpuBuffer<Cand>,
    tmask: u32,
}

fn count(field: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        field,
        value: n as u128,
        limit: u32::MAX as u128,
    })
}

impl WgpuBackend {
    fn np_work(&self, na: usize, nb: usize, pairs_k: usize) -> Result<Work> {
        let have = self.ctx.limits.max_storage_buffers_per_shader_stage;
        if have < STORAGE_BINDINGS {
            return Err(Error::Unsupported(format!(
                "nearest_pairs on wgpu binds {STORAGE_BINDINGS} storage buffers per kernel; \
                 this adapter's max_storage_buffers_per_shader_stage is {have}"
            )));
        }
        if nb >= CUT as usize {
            return Err(Error::TooLarge {
                field: "|B| (u32 neighbour indices below the shader's CUT mark)",
                value: nb as u128,
                limit: CUT as u128 - 1,
            });
        }
        // Load <= 1/2 even if every point of B has a cell of its own.
        let tsize = (2 * nb).next_power_of_two().max(1024);
        let top = pairs_k > 0;
        // Scratch from the buffer pool, zeroed in one submission (fresh
        // buffers each call cost driver allocations, and their release
        // churned the pool: later calls of a bench process ran 1.25x slower).
        let w = Work {
            gw: self.alloc_uninit(GRID_WORDS, "nearest_pairs grid words")?,
            gp: self.alloc_uninit(GRID_WORDS, "nearest_pairs grid params")?,
            cnt: self.alloc_uninit(COARSE_CELLS, "nearest_pairs coarse counts")?,
            tkey: self.alloc_uninit(tsize, "nearest_pairs cell keys")?,
            tcnt: self.alloc_uninit(tsize, "nearest_pairs cell counts")?,
            table: self.alloc_uninit(tsize, "nearest_pairs cell table")?,
            pts: self.alloc_uninit(nb.max(1), "nearest_pairs B by cell")?,
            order: self.alloc_uninit(na.max(1), "nearest_pairs query order")?,
            hist: self.alloc_uninit(if top { 4 * NBINS } else { 1 }, "closest_pairs histograms")?,
            cand: self.alloc_uninit(pairs_k.max(1), "closest_pairs candidates")?,
            tmask: count("nearest_pairs hash table", tsize - 1)?,
        };
        let mut enc = self.encoder("nearest_pairs scratch");
        enc.zero(&w.gw);
        enc.zero(&w.gp);
        enc.zero(&w.cnt);
        enc.zero(&w.tkey);
        enc.zero(&w.tcnt);
        enc.zero(&w.table);
        enc.zero(&w.pts);
        enc.zero(&w.order);
        enc.zero(&w.hist);
        enc.zero(&w.cand);
        enc.submit();
        Ok(w)
    }

    fn np_params(&self, w: &Work, n: usize, k: usize, round: u32) -> Result<wgpu::Buffer> {
        Ok(self.uniform(&Params {
            n: count("point count", n)?,
            k: count("k", k)?,
            tmask: w.tmask,
            rnd: round,
            ..Params::default()
        }))
    }

    /// Records the search of A's nearest (`k == 0`) or k nearest points of B
    /// into `out`, grid build included.
    #[allow(clippy::too_many_arguments)]
    fn np_record(
        &self,
        enc: &mut Encoder<'_>,
        w: &Work,
        a: &WgpuBuffer<f32>,
        na: usize,
        b: &WgpuBuffer<f32>,
        nb: usize,
        knn: Option<usize>,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        self.np_record_grid(enc, w, b, nb, 0.0, out)?;
        self.np_record_query(enc, w, a, na, knn, out)
    }

    /// Records the queries of A once the grid on B is built (in this
    /// encoder, or kept in an index).
    fn np_record_query(
        &self,
        enc: &mut Encoder<'_>,
        w: &Work,
        a: &WgpuBuffer<f32>,
        na: usize,
        knn: Option<usize>,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        let pa = self.np_params(w, na, knn.unwrap_or(1), self.np_budget())?;
        self.np_record_order(enc, w, a, na, &pa, out)?;
        let query = if knn.is_some() { &KNN } else { &NEAREST };
        np_run(self, enc, query, &pa, a, w, out, na.div_ceil(QWG as usize))
    }

    /// Records the grid on B, with cells at least `rad / 2` wide (0: as the
    /// density of B asks).
    fn np_record_grid(
        &self,
        enc: &mut Encoder<'_>,
        w: &Work,
        b: &WgpuBuffer<f32>,
        nb: usize,
        rad: f32,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        let pb = self.uniform(&Params {
            n: count("|B|", nb)?,
            tmask: w.tmask,
            rnd: CELL_TARGET.to_bits(),
            rad,
            ..Params::default()
        });
        let run = |enc: &mut Encoder<'_>, k: &'static Kernel, groups: usize| {
            np_run(self, enc, k, &pb, b, w, out, groups)
        };
        let per = nb.div_ceil(WG as usize);
        enc.zero(&w.gw);
        enc.zero(&w.cnt);
        enc.zero(&w.tkey);
        enc.zero(&w.tcnt);
        run(enc, &BBOX, per.clamp(1, NPART as usize))?;
        run(enc, &SETUP, 1)?;
        enc.copy(&w.gw, 0, &w.gp, 0, GRID_WORDS)?;
        run(enc, &COARSE_COUNT, per)?;
        run(enc, &SUMSQ, NPART as usize)?;
        run(enc, &FINALIZE, 1)?;
        enc.copy(&w.gw, 0, &w.gp, 0, GRID_WORDS)?;
        run(enc, &INSERT, per)?;
        self.scan_exclusive_u32(enc, &w.tcnt, w.tcnt.len())?;
        run(enc, &SCATTER, per)?;
        run(enc, &PACK, w.tkey.len().div_ceil(WG as usize))
    }

    /// Records the order of A's queries by coarse cell (`pa`: A's params),
    /// once the grid on B is recorded.
    fn np_record_order(
        &self,
        enc: &mut Encoder<'_>,
        w: &Work,
        a: &WgpuBuffer<f32>,
        na: usize,
        pa: &wgpu::Buffer,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        let per = na.div_ceil(WG as usize);
        enc.zero(&w.cnt);
        np_run(self, enc, &COARSE_COUNT, pa, a, w, out, per)?;
        self.scan_exclusive_u32(enc, &w.cnt, COARSE_CELLS)?;
        np_run(self, enc, &ORDER, pa, a, w, out, per)
    }

    /// The loop budget of one query: [`LANE_BUDGET`] where the adapter is a
    /// CPU (llvmpipe, with its loop cap), none on a GPU.
    fn np_budget(&self) -> u32 {
        if self.ctx.info.device_type == wgpu::DeviceType::Cpu {
            LANE_BUDGET
        } else {
            u32::MAX
        }
    }

    /// The loop budget of a radius query's walk: as [`Self::np_budget`], less
    /// [`RADIUS_SORT_RESERVE`] on a CPU adapter.
    fn np_radius_budget(&self) -> u32 {
        self.np_budget().saturating_sub(RADIUS_SORT_RESERVE)
    }

    /// Every pair of A and B (scaled for f32) with `dist2 <= r * r` in f32,
    /// `j > i` too when `upper` (B is then A), rows sorted by `(d2, j)`; `d2`
    /// as computed on the scaled points.
    fn np_radius(
        &self,
        a: &[Point],
        b: &[Point],
        upper: bool,
        r: f32,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors> {
        let (na, nb) = (a.len(), b.len());
        if na == 0 || nb == 0 {
            return Ok(RadiusNeighbors {
                offsets: vec![0; na + 1],
                ..Default::default()
            });
        }
        let da = self.upload_named(a, "points A")?;
        let db = if upper {
            None
        } else {
            Some(self.upload_named(b, "points B")?)
        };
        let fa = da.cast_ref::<f32>()?;
        let fb = db.as_ref().unwrap_or(&da).cast_ref::<f32>()?;
        let mut w = self.np_work(na, nb, 0)?;
        // The count kernel writes every row and the trailing 0.
        w.hist = self.alloc_uninit(na + 1, "radius row counts")?;
        let mut params = Params {
            n: count("|A|", na)?,
            k: 0,
            tmask: w.tmask,
            rnd: self.np_radius_budget(),
            rad: r,
            rad2: r * r,
            upper: upper as u32,
            _pad: 0,
        };
        let pa = self.uniform(&params);
        let no_out = self.alloc::<Neighbor>(1, "radius no output yet")?;
        let groups = na.div_ceil(QWG as usize);
        let mut enc = self.encoder("radius count");
        self.np_record_grid(&mut enc, &w, &fb, nb, r, &no_out)?;
        self.np_record_order(&mut enc, &w, &fa, na, &pa, &no_out)?;
        np_run(self, &mut enc, &RADIUS_COUNT, &pa, &fa, &w, &no_out, groups)?;
        enc.submit();
        let mut words = [0u32; 32];
        self.download_into(&w.gw, &mut words)?;
        let mut total = (words[W_TOT_HI] as u64) << 32 | words[W_TOT_LO] as u64;
        let long = words[W_LONG] as usize;
        validate::radius_count(total as u128, max_pairs)?;
        // Rows the device ran out of loop budget on (llvmpipe only): on the
        // host, with the shader's test, counted in before anything is sized.
        let cut = words[W_CUT] as usize;
        let mut host_rows = Vec::new();
        if cut > 0 {
            let mut counts = vec![0u32; na];
            self.download_into(&w.hist, &mut counts)?;
            let r2 = r * r;
            for (i, c) in counts.iter_mut().enumerate() {
                if *c != RCUT {
                    continue;
                }
                let row = radius_row_host(&a[i], b, r2, upper.then_some(i));
                total += row.len() as u64;
                validate::radius_count(total as u128, max_pairs)?;
                *c = row.len() as u32;
                host_rows.push((i, row));
            }
            if host_rows.len() != cut {
                return Err(crate::error::failure(
                    "radius search",
                    format!(
                        "{cut} rows ran out of loop budget but {} were marked",
                        host_rows.len()
                    ),
                ));
            }
            self.upload_into(&counts, &w.hist)?;
        }
        let limit = (self.ctx.limits.max_storage_buffer_binding_size / 8).min(MAX_RADIUS_PAIRS);
        if total > limit {
            return Err(Error::TooLarge {
                field: "pairs within r on wgpu (8-byte pairs in one storage binding, u32 row offsets)",
                value: total as u128,
                limit: limit as u128,
            });
        }
        if total == 0 {
            return Ok(RadiusNeighbors {
                offsets: vec![0; na + 1],
                ..Default::default()
            });
        }
        let out = self.alloc_uninit::<Neighbor>(total as usize, "radius pairs")?;
        w.cand = self.alloc_uninit(long.max(1), "radius long rows")?;
        params.k = count("radius long rows", long)?;
        let pf = self.uniform(&params);
        let mut enc = self.encoder("radius fill");
        self.scan_exclusive_u32(&mut enc, &w.hist, na + 1)?;
        np_run(self, &mut enc, &RADIUS_FILL, &pf, &fa, &w, &out, groups)?;
        np_run(self, &mut enc, &RADIUS_SORT, &pf, &fa, &w, &out, long)?;
        enc.submit();
        self.download_into(&w.gw, &mut words)?;
        let (cut2, bad, listed) = (words[W_CUT2] as usize, words[W_BAD], words[W_LIST] as usize);
        if cut2 != cut || bad != 0 || listed != long {
            return Err(crate::error::failure(
                "radius search",
                format!(
                    "the fill disagrees with the count: {cut2} rows cut (count: {cut}), \
                     {bad} rows of another length, {listed} long rows (count: {long})"
                ),
            ));
        }
        let mut offsets = vec![0u32; na + 1];
        self.download_into(&w.hist, &mut offsets)?;
        let mut pairs = vec![Neighbor::default(); total as usize];
        self.download_into(&out, &mut pairs)?;
        let offsets: Vec<usize> = offsets.into_iter().map(|o| o as usize).collect();
        for (i, row) in host_rows {
            pairs[offsets[i]..offsets[i + 1]].copy_from_slice(&row);
        }
        Ok(RadiusNeighbors {
            offsets,
            indices: pairs.iter().map(|p| p.index).collect(),
            d2: pairs.iter().map(|p| p.d2).collect(),
        })
    }

    /// After a search has run: the queries that ran out of loop budget (their
    /// first neighbour index is `CUT`) are recomputed exactly on the host and
    /// written back into `out`. Returns how many there were.
    fn np_finish_cut(
        &self,
        w: &Work,
        a: &WgpuBuffer<Point>,
        b: PointsOf<'_>,
        knn: Option<usize>,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<usize> {
        let mut words = [0u32; W_CUT + 1];
        self.download_into(&w.gw, &mut words)?;
        let cut = words[W_CUT] as usize;
        if cut == 0 {
            return Ok(0);
        }
        let ha = self.download_vec(a)?;
        let hb = match b {
            PointsOf::Buffer(b) => self.download_vec(b)?,
            PointsOf::Grid(pts) => {
                // B grouped by cell, each point with its index: back in order.
                let mut hb = vec![[0f32; 3]; pts.len()];
                for [x, y, z, i] in self.download_vec(pts)? {
                    hb[i as usize] = [f32::from_bits(x), f32::from_bits(y), f32::from_bits(z)];
                }
                hb
            }
        };
        let mut ho = self.download_vec(out)?;
        let k = knn.unwrap_or(1);
        let mut fixed = 0;
        for (q, row) in ha.iter().zip(ho.chunks_exact_mut(k)) {
            if row[0].index != CUT {
                continue;
            }
            fixed += 1;
            let mut all: Vec<(f32, u32)> = hb
                .iter()
                .enumerate()
                .map(|(j, p)| (trident_core::dist2(q, p), j as u32))
                .collect();
            let by_key = |x: &(f32, u32), y: &(f32, u32)| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1));
            if k < all.len() {
                all.select_nth_unstable_by(k, by_key);
                all.truncate(k);
            }
            all.sort_unstable_by(by_key);
            for (o, &(d2, index)) in row.iter_mut().zip(&all) {
                *o = Neighbor { index, d2 };
            }
        }
        if fixed != cut {
            return Err(crate::error::failure(
                "nearest_pairs",
                format!("{cut} queries ran out of loop budget but {fixed} were marked"),
            ));
        }
        self.upload_into(&ho, out)?;
        Ok(cut)
    }

    /// Records the top-k rounds over `near` (A's nearest) into `w.cand`.
    fn np_record_top(
        &self,
        enc: &mut Encoder<'_>,
        w: &Work,
        a: &WgpuBuffer<f32>,
        na: usize,
        k: usize,
        near: &WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        enc.zero(&w.hist);
        for round in 0..4u32 {
            let pp = self.np_params(w, na, k, round)?;
            let args = np_args(&pp, a, w, near);
            enc.dispatch(&HIST, &args, self.grid((na as u64).div_ceil(WG))?)?;
            enc.dispatch(&SELECT, &args, [1, 1, 1])?;
        }
        let pp = self.np_params(w, na, k, 0)?;
        let args = np_args(&pp, a, w, near);
        enc.dispatch(&COMPACT, &args, self.grid((na as u64).div_ceil(WG))?)
    }

    /// The search of A against B into `out` (`|A| * max(k, 1)` entries).
    /// Returns how many queries ran out of loop budget and were finished on
    /// the host.
    fn np_search(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        knn: Option<usize>,
        out: &WgpuBuffer<Neighbor>,
    ) -> Result<usize> {
        let (na, nb) = (a.len(), b.len());
        if na == 0 || knn == Some(0) {
            return Ok(0);
        }
        if let Some(k) = knn {
            count(
                "|A| * k (u32 indices in the wgpu shader)",
                na.saturating_mul(k),
            )?;
        }
        let w = self.np_work(na, nb, 0)?;
        let (fa, fb) = (a.cast_ref::<f32>()?, b.cast_ref::<f32>()?);
        let mut enc = self.encoder("nearest_pairs");
        self.np_record(&mut enc, &w, &fa, na, &fb, nb, knn, out)?;
        enc.submit();
        self.np_finish_cut(&w, a, PointsOf::Buffer(b), knn, out)
    }

    fn np_closest(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>> {
        let (na, nb) = (a.len(), b.len());
        let k = k.min(na);
        if k == 0 {
            return Ok(Vec::new());
        }
        let w = self.np_work(na, nb, k)?;
        let near = self.alloc::<Neighbor>(na, "closest_pairs nearest")?;
        let (fa, fb) = (a.cast_ref::<f32>()?, b.cast_ref::<f32>()?);
        let mut enc = self.encoder("closest_pairs");
        self.np_record(&mut enc, &w, &fa, na, &fb, nb, None, &near)?;
        self.np_closest_from(enc, &w, a, PointsOf::Buffer(b), k, &near)
    }

    /// The top k of `near` (A's nearest, recorded in `enc`), with the
    /// queries a CPU adapter's loop cap left finished on the host.
    fn np_closest_from(
        &self,
        mut enc: Encoder<'_>,
        w: &Work,
        a: &WgpuBuffer<Point>,
        b: PointsOf<'_>,
        k: usize,
        near: &WgpuBuffer<Neighbor>,
    ) -> Result<Vec<Pair>> {
        let (na, fa) = (a.len(), a.cast_ref::<f32>()?);
        self.np_record_top(&mut enc, w, &fa, na, k, near)?;
        enc.submit();
        let mut c = vec![Cand::default(); k];
        self.download_into(&w.cand, &mut c)?;
        // The top-k above ran on every query's answer; if some queries ran
        // out of loop budget (llvmpipe only), it runs again once the host has
        // recomputed them.
        if self.np_finish_cut(w, a, b, None, near)? > 0 {
            let mut enc = self.encoder("closest_pairs after host fix-up");
            enc.zero(&w.gw);
            self.np_record_top(&mut enc, w, &fa, na, k, near)?;
            enc.submit();
            self.download_into(&w.cand, &mut c)?;
        }
        // d2 >= 0, so its bits order like its value.
        c.sort_unstable_by_key(|c| (c.d2.to_bits(), c.a));
        Ok(c.into_iter()
            .map(|c| Pair {
                a: c.a,
                b: c.b,
                d2: c.d2,
            })
            .collect())
    }
}

/// Where B's points are, for the queries finished on the host: a buffer in
/// B's order, or a grid's points grouped by cell, each with its index.
enum PointsOf<'a> {
    Buffer(&'a WgpuBuffer<Point>),
    Grid(&'a WgpuBuffer<[u32; 4]>),
}

/// B's grid built once and kept ([`NearestIndexDevice`]): its parameters,
/// the cell table and B grouped by cell, which is all a query reads.
pub struct WgpuPointIndex {
    gp: WgpuBuffer<u32>,
    table: WgpuBuffer<[u32; 4]>,
    pts: WgpuBuffer<[u32; 4]>,
    tmask: u32,
}

impl WgpuBackend {
    /// Builds and keeps the grid on B.
    fn np_index(&self, b: &WgpuBuffer<Point>) -> Result<WgpuPointIndex> {
        let nb = b.len();
        let w = self.np_work(0, nb, 0)?;
        let unused = self.alloc::<Neighbor>(1, "nearest_pairs index (no output)")?;
        let mut enc = self.encoder("nearest_pairs index");
        self.np_record_grid(&mut enc, &w, &b.cast_ref::<f32>()?, nb, 0.0, &unused)?;
        enc.submit();
        Ok(WgpuPointIndex {
            gp: w.gp,
            table: w.table,
            pts: w.pts,
            tmask: w.tmask,
        })
    }

    /// A query's scratch around a kept grid: the grid's buffers shared (only
    /// read by the queries), everything a query writes fresh and zeroed.
    fn np_query_work(&self, index: &WgpuPointIndex, na: usize, pairs_k: usize) -> Result<Work> {
        let top = pairs_k > 0;
        let w = Work {
            gw: self.alloc_uninit(GRID_WORDS, "nearest_pairs grid words")?,
            gp: index.gp.cast_ref()?,
            cnt: self.alloc_uninit(COARSE_CELLS, "nearest_pairs coarse counts")?,
            tkey: self.alloc_uninit(1, "nearest_pairs cell keys (unused)")?,
            tcnt: self.alloc_uninit(1, "nearest_pairs cell counts (unused)")?,
            table: index.table.cast_ref()?,
            pts: index.pts.cast_ref()?,
            order: self.alloc_uninit(na.max(1), "nearest_pairs query order")?,
            hist: self.alloc_uninit(if top { 4 * NBINS } else { 1 }, "closest_pairs histograms")?,
            cand: self.alloc_uninit(pairs_k.max(1), "closest_pairs candidates")?,
            tmask: index.tmask,
        };
        let mut enc = self.encoder("nearest_pairs query scratch");
        for fresh in [&w.gw, &w.cnt, &w.tkey, &w.tcnt, &w.order, &w.hist] {
            enc.zero(fresh);
        }
        enc.zero(&w.cand);
        enc.submit();
        Ok(w)
    }
}

impl NearestIndexDevice for WgpuBackend {
    type PointIndex = WgpuPointIndex;

    fn index_points(&self, b: &WgpuBuffer<Point>) -> Result<WgpuPointIndex> {
        validate::index_points(self, b)?;
        self.scoped("index_points", || self.np_index(b))
    }

    fn index_len(&self, index: &WgpuPointIndex) -> usize {
        index.pts.len()
    }

    fn nearest_indexed(
        &self,
        a: &WgpuBuffer<Point>,
        index: &WgpuPointIndex,
        out: &mut WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        validate::nearest_indexed(self, a, index.pts.len(), out)?;
        if a.is_empty() {
            return Ok(());
        }
        self.scoped("nearest_indexed", || {
            let w = self.np_query_work(index, a.len(), 0)?;
            let mut enc = self.encoder("nearest_indexed");
            self.np_record_query(&mut enc, &w, &a.cast_ref()?, a.len(), None, out)?;
            enc.submit();
            self.np_finish_cut(&w, a, PointsOf::Grid(&index.pts), None, out)
                .map(drop)
        })
    }

    fn closest_pairs_indexed(
        &self,
        a: &WgpuBuffer<Point>,
        index: &WgpuPointIndex,
        k: usize,
    ) -> Result<Vec<Pair>> {
        validate::closest_pairs_indexed(self, a)?;
        let k = k.min(a.len());
        if k == 0 {
            return Ok(Vec::new());
        }
        self.scoped("closest_pairs_indexed", || {
            let w = self.np_query_work(index, a.len(), k)?;
            let near = self.alloc::<Neighbor>(a.len(), "closest_pairs nearest")?;
            let mut enc = self.encoder("closest_pairs_indexed");
            self.np_record_query(&mut enc, &w, &a.cast_ref()?, a.len(), None, &near)?;
            self.np_closest_from(enc, &w, a, PointsOf::Grid(&index.pts), k, &near)
        })
    }
}

/// Records `k` over `groups` workgroups with the bindings of [`np_args`].
#[allow(clippy::too_many_arguments)]
fn np_run(
    be: &WgpuBackend,
    enc: &mut Encoder<'_>,
    k: &'static Kernel,
    pp: &wgpu::Buffer,
    src: &WgpuBuffer<f32>,
    w: &Work,
    out: &WgpuBuffer<Neighbor>,
    groups: usize,
) -> Result<()> {
    enc.dispatch(k, &np_args(pp, src, w, out), be.grid(groups as u64)?)
}

/// The 13 bindings of a dispatch, in `BINDS` order.
fn np_args<'a>(
    pp: &'a wgpu::Buffer,
    src: &'a WgpuBuffer<f32>,
    w: &'a Work,
    out: &'a WgpuBuffer<Neighbor>,
) -> [Arg<'a>; 13] {
    [
        Arg::raw(pp),
        Arg::buf(src),
        Arg::buf(&w.gw),
        Arg::buf(&w.gp),
        Arg::buf(&w.cnt),
        Arg::buf(&w.tkey),
        Arg::buf(&w.tcnt),
        Arg::buf(&w.table),
        Arg::buf(&w.pts),
        Arg::buf(&w.order),
        Arg::buf(out),
        Arg::buf(&w.hist),
        Arg::buf(&w.cand),
    ]
}

impl WgpuBackend {
    /// A and B on the device as the f32 search needs them, checked on the
    /// way: each block is scanned ([`trident_core::scan_coords`]) as it is
    /// copied into the staging memory, instead of a finite check and a range
    /// scan over the points first (3-4 ms of a 6 ms call on pairs-1M-400K).
    /// A non-finite coordinate fails with `full`'s error (the whole input
    /// check, which names the first bad point); coordinates whose squared
    /// distances would overflow or underflow f32 are uploaded again, scaled
    /// by `2^-shift` ([`trident_core::range_shift`]).
    fn upload_points(
        &self,
        a: &[Point],
        b: &[Point],
        full: &dyn Fn() -> Result<()>,
    ) -> Result<(WgpuBuffer<Point>, WgpuBuffer<Point>, i32)> {
        validate::point_count("a", a.len())?;
        validate::point_count("b", b.len())?;
        let seen = std::sync::Mutex::new(trident_core::CoordScan::EMPTY);
        let up = |p: &[Point], what: &str| {
            self.upload_filled(p.len(), what, |first, out: &mut [Point]| {
                let src = &p[first..first + out.len()];
                out.copy_from_slice(src);
                let s = trident_core::scan_coords(src.as_flattened());
                let mut all = seen.lock().map_err(|_| failure(what, "scan lock"))?;
                *all = all.merge(s);
                Ok(())
            })
        };
        let (da, db) = (up(a, "points A")?, up(b, "points B")?);
        let scan = *seen.lock().map_err(|_| failure("points", "scan lock"))?;
        if !scan.finite {
            full()?;
            return Err(failure("points", "a coordinate is not finite"));
        }
        match trident_core::range_shift_of::<f32>(scan.max_abs, scan.min_nonzero) {
            0 => Ok((da, db, 0)),
            s => Ok((
                self.upload_named(&trident_core::scale_points(a, s), "points A")?,
                self.upload_named(&trident_core::scale_points(b, s), "points B")?,
                s,
            )),
        }
    }
}

impl NearestPairs for WgpuBackend {
    fn nearest(&self, a: &[Point], b: &[Point], out: &mut [Neighbor]) -> Result<()> {
        if a.is_empty() || b.is_empty() || out.len() != a.len() {
            return validate::nearest(a, b, out);
        }
        // The sizes are right: what can fail is the points' check, which
        // `closest_pairs`' validation makes alike.
        let full = || validate::closest_pairs(a, b);
        let shift = self.scoped("nearest", || {
            let (da, db, shift) = self.upload_points(a, b, &full)?;
            let dout = self.alloc::<Neighbor>(a.len(), "nearest out")?;
            self.np_search(&da, &db, None, &dout)?;
            self.download_into(&dout, out)?;
            Ok(shift)
        })?;
        unscale_neighbors(out, shift);
        Ok(())
    }

    fn knn(&self, a: &[Point], b: &[Point], k: usize, out: &mut [Neighbor]) -> Result<()> {
        validate::knn(a, b, k, out)?;
        // The device computes in f32: coordinates whose squared distances
        // would overflow or underflow are scaled by a power of two first.
        let (a, b, shift) = trident_core::scaled_for_range(a, b);
        let (a, b) = (&a[..], &b[..]);
        if a.is_empty() || k == 0 {
            return Ok(());
        }
        self.scoped("knn", || {
            let da = self.upload_named(a, "points A")?;
            let db = self.upload_named(b, "points B")?;
            let dout = self.alloc::<Neighbor>(out.len(), "knn out")?;
            self.np_search(&da, &db, Some(k), &dout)?;
            self.download_into(&dout, out)
        })?;
        unscale_neighbors(out, shift);
        Ok(())
    }

    fn closest_pairs(&self, a: &[Point], b: &[Point], k: usize) -> Result<Vec<Pair>> {
        if a.is_empty() || b.is_empty() || k == 0 {
            validate::closest_pairs(a, b)?;
            return Ok(Vec::new());
        }
        let full = || validate::closest_pairs(a, b);
        self.scoped("closest_pairs", || {
            let (da, db, shift) = self.upload_points(a, b, &full)?;
            Ok((self.np_closest(&da, &db, k)?, shift))
        })
        .map(|(mut pairs, shift)| {
            for p in &mut pairs {
                p.d2 = unscale_d2(p.d2, shift);
            }
            pairs
        })
    }

    fn within(
        &self,
        a: &[Point],
        b: &[Point],
        r: f32,
        max_pairs: usize,
    ) -> Result<RadiusNeighbors> {
        validate::within(a, b, r)?;
        // Scaled as for the other calls; r with the points, so the test
        // d2 <= r * r keeps its meaning.
        let (a, b, shift) = trident_core::scaled_for_range(a, b);
        let r = trident_core::scale_coord(r, shift);
        let mut found = self.scoped("within", || self.np_radius(&a, &b, false, r, max_pairs))?;
        unscale_radius(&mut found, shift);
        Ok(found)
    }

    fn self_pairs(&self, p: &[Point], r: f32, max_pairs: usize) -> Result<RadiusNeighbors> {
        validate::self_pairs(p, r)?;
        let (p, _, shift) = trident_core::scaled_for_range(p, &[]);
        let r = trident_core::scale_coord(r, shift);
        let mut found = self.scoped("self_pairs", || self.np_radius(&p, &p, true, r, max_pairs))?;
        unscale_radius(&mut found, shift);
        Ok(found)
    }
}

/// Reported radius-search distances back in the caller's units.
fn unscale_radius(found: &mut RadiusNeighbors, shift: i32) {
    if shift != 0 {
        for d in &mut found.d2 {
            *d = unscale_d2(*d, shift);
        }
    }
}

/// Why f64 calls go elsewhere: the answer of every f64 method once its input
/// is valid.
fn no_f64() -> Error {
    Error::Unsupported(
        "NearestPairs in f64 on wgpu: WGSL has no f64; the call goes to the next backend".into(),
    )
}

/// f64 coordinates: WGSL has no f64 (and rounding the points to f32 would
/// change the answer), so every call answers [`Error::Unsupported`] once its
/// input has passed validation, and the facade passes it to the next backend.
impl NearestPairs<f64> for WgpuBackend {
    fn nearest(&self, a: &[Point<f64>], b: &[Point<f64>], out: &mut [Neighbor<f64>]) -> Result<()> {
        validate::nearest(a, b, out)?;
        Err(no_f64())
    }
    fn knn(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        k: usize,
        out: &mut [Neighbor<f64>],
    ) -> Result<()> {
        validate::knn(a, b, k, out)?;
        Err(no_f64())
    }
    fn closest_pairs(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        _k: usize,
    ) -> Result<Vec<Pair<f64>>> {
        validate::closest_pairs(a, b)?;
        Err(no_f64())
    }
    fn within(
        &self,
        a: &[Point<f64>],
        b: &[Point<f64>],
        r: f64,
        _max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::within(a, b, r)?;
        Err(no_f64())
    }
    fn self_pairs(
        &self,
        p: &[Point<f64>],
        r: f64,
        _max_pairs: usize,
    ) -> Result<RadiusNeighbors<f64>> {
        validate::self_pairs(p, r)?;
        Err(no_f64())
    }
}

/// One row of a radius search on the host, as the shader computes it: the
/// points of B with `dist2(q, b) <= r2` in f32 (`j > i` only, for `Some(i)`),
/// sorted by `(d2, j)`.
fn radius_row_host(q: &Point, b: &[Point], r2: f32, above: Option<usize>) -> Vec<Neighbor> {
    let from = above.map_or(0, |i| i + 1);
    let mut row: Vec<Neighbor> = b
        .iter()
        .enumerate()
        .skip(from)
        .filter_map(|(j, p)| {
            let d2 = trident_core::dist2(q, p);
            (d2 <= r2).then_some(Neighbor {
                index: j as u32,
                d2,
            })
        })
        .collect();
    // d2 >= 0, so its bits order like its value.
    row.sort_unstable_by_key(|n| (n.d2.to_bits(), n.index));
    row
}

/// Reported distances back in the caller's units after [`trident_core::scaled_for_range`].
fn unscale_neighbors(out: &mut [Neighbor], shift: i32) {
    if shift != 0 {
        for n in out {
            n.d2 = unscale_d2(n.d2, shift);
        }
    }
}

impl NearestPairsDevice for WgpuBackend {
    fn nearest_device(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        out: &mut WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        validate::nearest_device(self, a, b, out)?;
        self.scoped("nearest_device", || {
            self.np_search(a, b, None, out).map(|_| ())
        })
    }

    fn knn_device(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        k: usize,
        out: &mut WgpuBuffer<Neighbor>,
    ) -> Result<()> {
        validate::knn_device(self, a, b, k, out)?;
        self.scoped("knn_device", || {
            self.np_search(a, b, Some(k), out).map(|_| ())
        })
    }

    fn closest_pairs_device(
        &self,
        a: &WgpuBuffer<Point>,
        b: &WgpuBuffer<Point>,
        k: usize,
    ) -> Result<Vec<Pair>> {
        validate::closest_pairs_device(self, a, b)?;
        self.scoped("closest_pairs_device", || self.np_closest(a, b, k))
    }
}

#[cfg(test)]
mod tests {
    //! The grid against a brute force on inputs that stress it: all points
    //! equal, flat and huge coordinate ranges, dense clusters with far
    //! outliers, knn past any register list. Integer coordinates keep every
    //! f32 distance exact, so indices (ties to the smaller index) must match.
    use super::*;
    use trident_core::{DeviceMemory, dist2};

    fn lcg(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s >> 33
        }
    }

    fn pts(n: usize, seed: u64, f: impl Fn(&mut dyn FnMut() -> u64) -> Point) -> Vec<Point> {
        let mut r = lcg(seed);
        (0..n).map(|_| f(&mut r)).collect()
    }

    /// Every `(d2, j)` of B for `q`, sorted: the brute-force answer.
    fn ranked(q: &Point, b: &[Point]) -> Vec<(f32, u32)> {
        let mut v: Vec<(f32, u32)> = b
            .iter()
            .enumerate()
            .map(|(j, p)| (dist2(q, p), j as u32))
            .collect();
        v.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        v
    }

    fn check(be: &WgpuBackend, name: &str, a: &[Point], b: &[Point], k: usize) {
        let mut near = vec![Neighbor::default(); a.len()];
        be.nearest(a, b, &mut near).unwrap();
        let mut kn = vec![Neighbor::default(); a.len() * k];
        be.knn(a, b, k, &mut kn).unwrap();
        let mut pairs_ref = Vec::new();
        for (i, q) in a.iter().enumerate() {
            let r = ranked(q, b);
            let got = (near[i].d2, near[i].index);
            assert_eq!(got, r[0], "{name}: nearest of a[{i}]");
            let row: Vec<(f32, u32)> = kn[i * k..(i + 1) * k]
                .iter()
                .map(|n| (n.d2, n.index))
                .collect();
            assert_eq!(row, r[..k], "{name}: knn of a[{i}]");
            pairs_ref.push((r[0].0, i as u32, r[0].1));
        }
        pairs_ref.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        for pk in [1, 7, a.len(), a.len() + 3] {
            let got: Vec<(f32, u32, u32)> = be
                .closest_pairs(a, b, pk)
                .unwrap()
                .iter()
                .map(|p| (p.d2, p.a, p.b))
                .collect();
            assert_eq!(
                got,
                pairs_ref[..pk.min(a.len())],
                "{name}: closest_pairs({pk})"
            );
        }
    }

    /// A cell of 70,000 copies of one point: more iterations than
    /// llvmpipe's loop cap (65535) for any query that opens it. On a CPU
    /// adapter those queries must run out of budget and be finished by the
    /// host; on a GPU none may. Both give the brute-force answer.
    #[test]
    fn queries_past_the_loop_cap_are_finished_on_the_host() {
        let be = match WgpuBackend::new() {
            Ok(b) => b,
            Err(e) => {
                println!("SKIPPED: {e}");
                return;
            }
        };
        let mut b = vec![[5.0f32, 5.0, 5.0]; 70_000];
        b.push([-40.0, 9.0, 1.0]);
        let a = [[5.0f32, 6.0, 5.0], [-38.0, 9.0, 1.0], [60.0, -60.0, 60.0]];
        let (da, db) = (be.upload(&a).unwrap(), be.upload(&b).unwrap());
        let k = 4;
        let out = be.alloc::<Neighbor>(a.len() * k, "test out").unwrap();
        let cut = be.np_search(&da, &db, Some(k), &out).unwrap();
        let cpu = be.ctx.info.device_type == wgpu::DeviceType::Cpu;
        assert_eq!(cut > 0, cpu, "{cut} queries finished on the host");
        let got = be.download_vec(&out).unwrap();
        for (i, q) in a.iter().enumerate() {
            let want: Vec<(f32, u32)> = ranked(q, &b)[..k].to_vec();
            let row: Vec<(f32, u32)> = got[i * k..(i + 1) * k]
                .iter()
                .map(|n| (n.d2, n.index))
                .collect();
            assert_eq!(row, want, "knn of a[{i}]");
        }
        check(&be, "duplicates past the loop cap", &a, &b, 2);
    }

    #[test]
    fn grid_matches_brute_force_on_hard_inputs() {
        let be = match WgpuBackend::new() {
            Ok(b) => b,
            Err(e) => {
                println!("SKIPPED: {e}");
                return;
            }
        };
        let int = |r: &mut dyn FnMut() -> u64, m: u64| (r() % m) as f32;
        let same = vec![[3.0f32, -2.0, 7.0]; 300];
        check(&be, "all equal", &same[..40], &same, 5);
        let flat = pts(500, 1, |r| [int(r, 1000), int(r, 1000), 0.0]);
        check(
            &be,
            "flat",
            &pts(200, 2, |r| [int(r, 1000), int(r, 1000), 0.0]),
            &flat,
            4,
        );
        let line = pts(400, 3, |r| [int(r, 4000), 0.0, 0.0]);
        check(
            &be,
            "line",
            &pts(100, 4, |r| [int(r, 4000), 1.0, 0.0]),
            &line,
            3,
        );
        // A dense lattice cluster with two far outliers: the grid is capped at
        // MAX_AXIS cells per axis, so the cluster lands in few, full cells.
        let mut wide = pts(600, 5, |r| [int(r, 8), int(r, 8), int(r, 8)]);
        wide.push([1.0e12, 0.0, 0.0]);
        wide.push([-1.0e12, 5.0e11, -2.0e11]);
        let qs = {
            let mut q = pts(150, 6, |r| {
                [int(r, 12) - 2.0, int(r, 12) - 2.0, int(r, 12) - 2.0]
            });
            q.push([9.0e11, 0.0, 0.0]);
            q.push([0.0, 0.0, 3.0e11]);
            q
        };
        // Far queries see distances beyond f32's exact integers: compare the
        // near ones by index only.
        let mut near = vec![Neighbor::default(); qs.len()];
        be.nearest(&qs, &wide, &mut near).unwrap();
        for (i, q) in qs.iter().enumerate() {
            assert_eq!(near[i].index, ranked(q, &wide)[0].1, "wide: a[{i}]");
        }
        check(&be, "wide, near queries", &qs[..150], &wide, 40);
        // Queries outside B's box on every side.
        let cube = pts(300, 7, |r| [int(r, 50), int(r, 50), int(r, 50)]);
        let out = pts(120, 8, |r| {
            [
                int(r, 400) - 175.0,
                int(r, 400) - 175.0,
                int(r, 400) - 175.0,
            ]
        });
        check(&be, "outside", &out, &cube, 33);
        check(&be, "single point of B", &out[..10], &cube[..1], 1);
        // A small B far from most queries (a cube's face centres and
        // corners, queried from its centre): before the cells-per-point
        // floor its grid had 64^3 cells and llvmpipe cut the walk short.
        let mut corners = vec![];
        for c in 0..8 {
            let s = |bit: i32| if c & bit == 0 { 1.0 } else { -1.0 };
            corners.push([s(1), s(2), s(4)]);
        }
        for d in 0..3 {
            for s in [1.0f32, -1.0] {
                let mut q = [0.0; 3];
                q[d] = s;
                corners.push(q);
            }
        }
        check(
            &be,
            "small B, far queries",
            &[[0.0; 3], [2.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
            &corners,
            10,
        );
    }
}

#[cfg(test)]
mod shader_constants {
    use super::*;
    use crate::shader_text::{constant, struct_size};

    /// The grid shape, word offsets, markers and layouts this file repeats
    /// from `shaders/nearest_pairs.wgsl`.
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../shaders/nearest_pairs.wgsl");
        let pairs: &[(&str, f64)] = &[
            ("WG", WG as f64),
            ("QWG", QWG as f64),
            ("NPART", NPART as f64),
            ("NBINS", NBINS as f64),
            ("NCOARSE", COARSE_CELLS as f64),
            ("W_CUT", W_CUT as f64),
            ("CUT", CUT as f64),
            ("RCUT", RCUT as f64),
            ("W_TOT_LO", W_TOT_LO as f64),
            ("W_TOT_HI", W_TOT_HI as f64),
            ("W_LONG", W_LONG as f64),
            ("W_CUT2", W_CUT2 as f64),
            ("W_BAD", W_BAD as f64),
            ("W_LIST", W_LIST as f64),
        ];
        for &(name, rust) in pairs {
            assert_eq!(constant(src, name), rust, "{name}");
        }
        // `gw`: the fields, then NPART partial sums from W_PART on.
        assert_eq!(
            constant(src, "W_PART") + constant(src, "NPART"),
            GRID_WORDS as f64
        );
        assert_eq!(struct_size(src, "Params"), std::mem::size_of::<Params>());
        assert_eq!(struct_size(src, "Cand"), std::mem::size_of::<Cand>());
    }
}
