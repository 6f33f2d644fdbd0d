//! MaxFlow for [`CudaBackend`]: `kernels/max_flow.cu`.
//!
//! Parallel push-relabel on the device, for grids (implicit 4- or
//! 6-neighbour arcs, in the style of CUDA Cuts) and for general networks (a
//! CSR residual graph). The loop, all on the device but for one count read
//! back per phase:
//!
//! 1. global relabel: a level-synchronous BFS from the sink over reversed
//!    residual arcs sets exact distances (levels are queued in batches; the
//!    host reads the frontier size after each batch);
//! 2. the active nodes (excess, finite height) are compacted into a list; if
//!    there are none, the preflow is maximum and the loop ends;
//! 3. `relabel period` iterations of push + local relabel over the active
//!    list, each iteration appending the nodes that are (or became) active to
//!    the next list, so work follows the active set and not the graph.
//!
//! Terminal arcs of grids: `min(source, sink)` of each node is sent straight
//! through, the rest of the source capacity starts as excess (the source arcs
//! are saturated and stay so: nothing is pushed back to the source), and
//! pushes into the sink lower the node's sink residual. The flow value is the
//! sink capacity used. Networks saturate the source's arcs the same way and
//! never push into the source (its height stays infinite).
//!
//! Work budget: one solve may queue at most [`DEFAULT_FLOW_BUDGET`] kernel
//! launches (BFS levels, push and relabel launches, a batch that would pass
//! it is not queued). Flow that must travel one long path (a `1 x 2,000,000`
//! grid, a chain network) needs a launch per BFS level, millions per global
//! relabel, and a push launch per node it moves: minutes of launch overhead.
//! Past the budget the residual state is downloaded and the host finisher
//! ([`trident_core::flow::finish`]) completes it, linear on such graphs; the
//! answer is the same (value and cut are unique, and network flows come from
//! a device state that does not depend on the schedule, see below). The
//! budget counts launches, not time, so where the switch happens is a
//! function of the input alone.
//!
//! The canonical cut of a grid: the kernels stop at a maximum *preflow*.
//! Returning the excess to the source along the flow paths that brought it
//! raises the residual of exactly those paths, so the nodes reachable from
//! the source in the residual graph of the resulting maximum flow are the
//! nodes reachable in the preflow's residual graph from the source or from
//! any node with excess. A forward BFS on the device computes that set.
//!
//! Networks: the device computes a maximum preflow (or stops at the budget);
//! the host finisher returns the stranded excess to the source, reads the
//! per-arc flows and finds the cut. Per-arc flows are not unique, so the
//! network kernels are schedule-free (`kernels/max_flow.cu` says how): the
//! same input gives the same bits.
//!
//! Counters are `i32` when every value a solve can reach fits (half the
//! memory traffic), else `i64`. Grids: the net flow on an arc never exceeds
//! its capacity, so a node's excess stays within its source capacity plus
//! the capacities of the arcs into it, a residual within the capacities of
//! its arc pair, a sink residual within the sink capacity ([`counter_peak`]);
//! large grids whose capacities sum past `i32` usually still qualify.
//! Networks: by the sum of all capacities. `trident-core` guarantees that sum
//! fits `i64`, so the `i64` kernels take every valid input.

use std::ops::Range;

use cudarc::driver::{CudaFunction, LaunchConfig};
use trident_core::flow::finish;
use trident_core::{
    Element, Error, FlowNetwork, GridCut, GridGraph, MaxFlow, MaxFlowDevice, NetworkFlow, Result,
};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, count_u32, launch_kernel};

/// `kernels/max_flow.cu`.
pub(crate) const KERNEL: KernelSource = KernelSource {
    name: "max_flow",
    source: include_str!("../kernels/max_flow.cu"),
    per_entry: false,
};

/// Entry points of `kernels/max_flow.cu` (the tidy test checks them).
pub(crate) const ENTRY_POINTS: &[&str] = &[
    "mf_grid_init_i32",
    "mf_grid_bfs_init_i32",
    "mf_grid_level_i32",
    "mf_grid_collect_i32",
    "mf_grid_push_i32",
    "mf_grid_relabel_i32",
    "mf_grid_sink_left_i32",
    "mf_cut_init_i32",
    "mf_net_bfs_init_i32",
    "mf_net_level_i32",
    "mf_net_collect_i32",
    "mf_net_push_i32",
    "mf_net_relabel_i32",
    "mf_grid_init_i64",
    "mf_grid_bfs_init_i64",
    "mf_grid_level_i64",
    "mf_grid_collect_i64",
    "mf_grid_push_i64",
    "mf_grid_relabel_i64",
    "mf_grid_sink_left_i64",
    "mf_cut_init_i64",
    "mf_net_bfs_init_i64",
    "mf_net_level_i64",
    "mf_net_collect_i64",
    "mf_net_push_i64",
    "mf_net_relabel_i64",
    "mf_labels",
    "mf_pack16",
    "mf_unpack16",
    "mf_unpack_terminals16",
];

/// Push-relabel iterations between two global relabels, by default.
///
/// Measured on an H100 (`flow_bench`, three runs):
/// device-resident cut-512 took 1.35 / 1.10 / 1.23 / 1.97 / 4.58 ms at
/// periods 8 / 16 / 24 / 64 / 200, cut-2048 5.19 / 5.22 / 5.84 / 8.49 /
/// 14.93 ms, cut3d-256 12.2 / 13.5 / 12.5 / 16.1 ms at 8 / 16 / 24 / 64.
/// Short periods win: a global relabel costs one launch per BFS level (the
/// segmentation grids need 2-3 of them) but its exact heights stop flow from
/// sloshing between nodes whose local heights are stale.
pub const DEFAULT_RELABEL_PERIOD: u32 = 16;

/// Push-relabel iterations between two global relabels on networks, by
/// default. Longer than on grids: on flow-rmf a global relabel is about 600
/// BFS levels (one launch each) against two launches per iteration. H100,
/// host-to-host (`flow_bench`): 282 ms at period 48, 186 ms at
/// 128, 211 ms at 384; at 16, 0.5 s, with 120-136 global relabels
/// and 70-90K BFS levels in all.
pub const DEFAULT_NETWORK_RELABEL_PERIOD: u32 = 128;

/// Kernel launches one solve may queue before the host finishes it, by
/// default.
///
/// Far above what the benchmark graphs need: a launch per BFS level and two
/// per push-relabel iteration make cut-512, cut-2048 and cut3d-256 a few
/// hundred to a few thousand launches, and flow-rmf (about 600 levels per
/// global relabel) tens of thousands. At 2-5 us a launch when the work is
/// small, a graph that exhausts the budget spends well under a second on the
/// device before the host takes over.
pub const DEFAULT_FLOW_BUDGET: u64 = 1 << 17;

const THREADS: u32 = 256;

/// The residual counter of the kernels: `i32` or `i64`.
trait Counter: Element + Copy + Into<i64> + TryFrom<i64> {
    /// Suffix of the kernel names.
    const SFX: &'static str;
    /// `v` as a counter, for values the caller knows fit (a plain cast, so
    /// the staging fill vectorizes).
    fn narrow(v: i64) -> Self;
    /// The state itself when its counters are `i32` (what the kernels that
    /// widen 16-bit values write).
    fn as_i32(st: &State<Self>) -> Option<&State<i32>>;
}
impl Counter for i32 {
    const SFX: &'static str = "i32";
    fn narrow(v: i64) -> Self {
        v as i32
    }
    fn as_i32(st: &State<i32>) -> Option<&State<i32>> {
        Some(st)
    }
}
impl Counter for i64 {
    const SFX: &'static str = "i64";
    fn narrow(v: i64) -> Self {
        v
    }
    fn as_i32(_: &State<i64>) -> Option<&State<i32>> {
        None
    }
}

/// A node's starting `(excess, sink residual)` from its source and sink
/// capacities: `min(source, sink)` goes straight through.
fn terminal_start(source: i64, sink: i64) -> (i64, i64) {
    let through = source.min(sink);
    (source - through, sink - through)
}

/// `true` when `i32` counters hold every value up to `peak`.
fn fits_i32(peak: i64) -> bool {
    peak <= i32::MAX as i64
}

/// The largest value a counter of a solve of `g` can hold: the smaller of
/// the capacity sum and the per-node bound of the module documentation taken
/// at the grid's maxima (the largest source capacity plus one largest
/// neighbour capacity per direction, twice the largest neighbour capacity,
/// the largest sink capacity), both kept by the grid, so no pass. Only when
/// neither fits `i32` is the per-node bound computed node by node (the
/// largest of: a node's source capacity plus the capacities into it, an arc
/// pair's capacities, a sink capacity), on all cores.
fn counter_peak(g: &GridGraph) -> i64 {
    let total = g.capacity_sum();
    let [source, sink, cap] = g.max_capacities();
    let dirs = g.dirs().len() as i64;
    let at_maxima = source
        .saturating_add(cap.saturating_mul(dirs))
        .max(cap.saturating_mul(2))
        .max(sink);
    let quick = total.min(at_maxima);
    if fits_i32(quick) {
        return quick;
    }
    let n = g.nodes();
    let (src, snk, caps) = (g.source(), g.sink(), g.caps());
    let peak_of = |nodes: Range<usize>| -> i64 {
        let mut peak = 0i64;
        for v in nodes {
            let mut excess = src[v];
            for &d in g.dirs() {
                if let Some(u) = g.neighbor(v, d) {
                    let into = caps[d.opposite() as usize * n + u];
                    excess += into;
                    peak = peak.max(caps[d as usize * n + v] + into);
                }
            }
            peak = peak.max(excess).max(snk[v]);
        }
        peak
    };
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|a| s.spawn(move || peak_of(a..(a + chunk).min(n))))
            .collect();
        // A part that panicked leaves the always-safe bound.
        parts
            .into_iter()
            .map(|p| p.join().unwrap_or(total))
            .max()
            .unwrap_or(0)
    })
}

fn to_counter<C: Counter>(v: i64) -> Result<C> {
    C::try_from(v).map_err(|_| Error::TooLarge {
        field: "largest residual or excess (device counter)",
        value: v.max(0) as u128,
        limit: i32::MAX as u128,
    })
}

/// A grid graph uploaded by [`MaxFlowDevice::upload_grid`] (capacities as
/// given, `i64`).
pub struct GridOnDevice {
    dims: Dims,
    source: CudaBuffer<i64>,
    sink: CudaBuffer<i64>,
    caps: CudaBuffer<i64>,
}

impl GridOnDevice {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.dims.n
    }
}

/// Layers `layers` of a grid (planes of a 3-D grid, rows of a 2-D one),
/// uploaded by [`CudaBackend::upload_grid_layers`] for a solve cut across
/// GPUs: the slab's capacities, including those of the arcs that leave it
/// (a slab solve leaves them alone; the whole grid's solve needs them), and
/// the whole grid's shape and sums.
pub struct GridLayers {
    slab: GridOnDevice,
    layers: Range<usize>,
    whole: Dims,
    capacity_sum: i64,
}

impl GridLayers {
    /// The layers this slab holds.
    pub fn layers(&self) -> Range<usize> {
        self.layers.clone()
    }
    /// The whole grid's `(depth, height, width)` (depth 1 for a 2-D grid).
    pub fn shape(&self) -> (usize, usize, usize) {
        let d = self.whole;
        (d.d as usize, d.h as usize, d.w as usize)
    }
    /// `true` for a 6-connected (3-D) grid.
    pub fn is_3d(&self) -> bool {
        self.whole.dirs == 6
    }
    /// Number of layers of the whole grid.
    pub fn total_layers(&self) -> usize {
        if self.is_3d() {
            self.whole.d as usize
        } else {
            self.whole.h as usize
        }
    }
    /// The whole grid's sum of all capacities and sum of sink capacities.
    pub fn sums(&self) -> (i64, i64) {
        (self.capacity_sum, self.whole.sink_total)
    }
    /// The largest value a counter of the whole grid's solve can reach: it
    /// picks the counter type and the width the state travels at, so the
    /// slabs of one grid must agree on it.
    pub fn counter_peak(&self) -> i64 {
        self.whole.peak
    }
}

/// The residual state of a grid solve in device memory: excess, sink
/// residuals and neighbour residuals, in the counter type the whole grid's
/// capacity sum picks. A slab's ([`CudaBackend::grid_layers_preflow`]) or
/// the whole grid's ([`CudaBackend::grid_preflow_whole`], filled from the
/// slabs), which [`CudaBackend::grid_cut_preflow`] completes.
pub struct GridPreflow {
    dims: Dims,
    state: Counters,
}

/// A [`State`] of either counter type.
enum Counters {
    I32(State<i32>),
    I64(State<i64>),
}

impl GridPreflow {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.dims.n
    }

    /// The device memory holding nodes `nodes` (`start..end`, node
    /// numbers of this state), as `(address, bytes)` runs in a fixed order:
    /// excess, sink residuals, then the neighbour residuals of each
    /// direction. The same runs of two states line up, so a slab's
    /// `regions(0..slab nodes)` go to the whole grid's `regions(its nodes)`.
    pub fn regions(&self, nodes: Range<usize>) -> Result<Vec<(u64, usize)>> {
        let n = self.dims.n;
        if nodes.start > nodes.end || nodes.end > n {
            return Err(Error::arg(
                "nodes",
                format!("{nodes:?} is not a range of the state's {n} nodes"),
            ));
        }
        let (e, rt, rc, size) = match &self.state {
            Counters::I32(s) => (s.e.ptr(), s.rt.ptr(), s.rc.ptr(), 4),
            Counters::I64(s) => (s.e.ptr(), s.rt.ptr(), s.rc.ptr(), 8),
        };
        let bytes = nodes.len() * size;
        let at = |base: u64, node: usize| base + (node * size) as u64;
        let mut out = vec![(at(e, nodes.start), bytes), (at(rt, nodes.start), bytes)];
        for d in 0..self.dims.dirs as usize {
            out.push((at(rc, d * n + nodes.start), bytes));
        }
        Ok(out)
    }
}

impl GridPreflow {
    /// Bytes per value when the state travels between GPUs: 2 when every
    /// counter fits `u16` (the per-node bound), else the counter's width.
    pub fn wire_width(&self) -> usize {
        match &self.state {
            Counters::I32(_) if self.dims.peak <= u16::MAX as i64 => 2,
            Counters::I32(_) => 4,
            Counters::I64(_) => 8,
        }
    }

    /// Bytes of `nodes` nodes' state on the wire
    /// ([`CudaBackend::pack_preflow`]).
    pub fn wire_bytes(&self, nodes: usize) -> usize {
        (2 + self.dims.dirs as usize) * nodes * self.wire_width()
    }
}

/// A grid's residual state on the device: neighbour residuals (`dirs * n`,
/// direction-major), sink residuals, excess.
struct State<C: Counter> {
    rc: CudaBuffer<C>,
    rt: CudaBuffer<C>,
    e: CudaBuffer<C>,
}

/// A host grid of the shape `dm` from its arrays.
fn grid_of(dm: Dims, source: Vec<i64>, sink: Vec<i64>, caps: Vec<i64>) -> Result<GridGraph> {
    let (d, h, w) = (dm.d as usize, dm.h as usize, dm.w as usize);
    if dm.dirs == 6 {
        GridGraph::new_3d(d, h, w, source, sink, caps)
    } else {
        GridGraph::new_2d(h, w, source, sink, caps)
    }
}

/// The shape and sums of a grid.
#[derive(Clone, Copy)]
struct Dims {
    w: u32,
    h: u32,
    d: u32,
    dirs: u32,
    n: usize,
    /// The largest value a counter can reach ([`counter_peak`]; picks the
    /// counter width).
    peak: i64,
    /// Sum of the sink capacities (the flow value is this minus the sink
    /// residuals left).
    sink_total: i64,
}

impl Dims {
    fn of(g: &GridGraph) -> Result<Self> {
        let (d, h, w) = g.shape();
        let n = g.nodes();
        count_u32("grid nodes", n)?;
        Ok(Self {
            w: w as u32,
            h: h as u32,
            d: d as u32,
            dirs: g.dirs().len() as u32,
            n,
            peak: counter_peak(g),
            sink_total: g.sink_sum(),
        })
    }
}

/// Where a grid solve starts: a grid uploaded as given (the device API;
/// `mf_grid_init` turns its `i64` capacities into the starting residuals),
/// or the caller's host grid, whose starting residuals are computed by the
/// staging workers and go up in the narrowest type that holds them: 2 bytes
/// per arc when every capacity fits `u16` (a widening kernel spreads them
/// into `i32` counters), else the counter's width, instead of the 8 bytes of
/// the given `i64` arrays.
#[derive(Clone, Copy)]
enum Start<'a> {
    Uploaded(&'a GridOnDevice),
    Host(&'a GridGraph, Dims),
    /// A residual state already on the device ([`GridPreflow`]), of a grid
    /// of these dimensions.
    Preflow(Dims),
}

impl Start<'_> {
    fn dims(&self) -> Dims {
        match self {
            Start::Uploaded(g) => g.dims,
            Start::Host(_, d) | Start::Preflow(d) => *d,
        }
    }
}

/// The kernels of one counter type, looked up once per solve.
struct Fns {
    level: CudaFunction,
    push: CudaFunction,
    relabel: CudaFunction,
}

/// The graph arguments of a BFS level launch (grid or CSR).
enum Level {
    Grid {
        w: u32,
        h: u32,
        d: u32,
        dirs: u32,
        rc: u64,
    },
    Net {
        n: u32,
        s: u32,
        start: u64,
        head: u64,
        rev: u64,
        res: u64,
    },
}

/// Work buffers shared by grid and network solves.
struct Work {
    n: usize,
    hgt: CudaBuffer<u32>,
    stamp: CudaBuffer<u32>,
    lists: CudaBuffer<u32>,
    counts: CudaBuffer<u32>,
}

/// Launches a solve may still queue, and the deepest BFS it may run.
struct Budget {
    left: u64,
    max_levels: u64,
}

impl Budget {
    /// Takes `n` launches, or says there are not that many left.
    fn take(&mut self, n: u64) -> bool {
        if n > self.left {
            return false;
        }
        self.left -= n;
        true
    }
}

impl CudaBackend {
    fn budget(&self, nodes: usize) -> Budget {
        Budget {
            left: self.tuning.flow_budget(),
            max_levels: finish::max_levels(nodes),
        }
    }

    fn flow_period(&self) -> u32 {
        self.tuning.flow_relabel_period().max(1)
    }

    fn mf_fn(&self, name: &str) -> Result<CudaFunction> {
        self.function(&KERNEL, name)
    }

    /// Blocks of a grid-stride launch over up to `n` items.
    fn mf_blocks(&self, n: usize) -> LaunchConfig {
        let cap = (self.sm_count().max(1) * 16) as usize;
        LaunchConfig {
            grid_dim: (n.div_ceil(THREADS as usize).clamp(1, cap) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Work buffers for `n` nodes, with `heights` height slots (networks keep
    /// two halves).
    fn work(&self, n: usize, heights: usize) -> Result<Work> {
        let lists_len = n.checked_mul(3).ok_or(Error::TooLarge {
            field: "max_flow list slots",
            value: 3 * n as u128,
            limit: usize::MAX as u128,
        })?;
        Ok(Work {
            n,
            hgt: self.alloc::<u32>(heights, "max_flow heights")?,
            stamp: self.alloc_zeroed_named::<u32>(n, "max_flow list stamps")?,
            lists: self.alloc::<u32>(lists_len, "max_flow active lists")?,
            counts: self.alloc_zeroed_named::<u32>(3, "max_flow list counts")?,
        })
    }

    /// Runs BFS levels from the frontier in list slot 0 until a frontier is
    /// empty, queueing them in batches (one count read back per batch);
    /// returns the number of levels run, or `None` when the search is deeper
    /// than the budget's `max_levels` or than its launches left.
    fn mf_bfs(
        &self,
        wk: &Work,
        f: &CudaFunction,
        lv: &Level,
        forward: u32,
        batch: u32,
        budget: &mut Budget,
    ) -> Result<Option<u32>> {
        let cfg = self.mf_blocks(wk.n);
        let (hp, lp, cp) = (wk.hgt.ptr(), wk.lists.ptr(), wk.counts.ptr());
        let mut counts = [0u32; 3];
        let mut step = 0u32;
        let mut batch = batch.max(8);
        let limit = budget.max_levels + 1;
        loop {
            let batch_now =
                batch.min((limit.saturating_sub(step as u64)).min(u32::MAX as u64) as u32);
            if batch_now == 0 || !budget.take(batch_now as u64) {
                return Ok(None);
            }
            for _ in 0..batch_now {
                // The parameters of mf_grid_level / mf_net_level in order;
                // every buffer is sized for the graph.
                match lv {
                    Level::Grid { w, h, d, dirs, rc } => launch_kernel!(
                        @fn self, f, "max_flow bfs level", cfg,
                        w, h, d, dirs, rc, &hp, &lp, &cp, &step, &forward
                    ),
                    Level::Net {
                        n,
                        s,
                        start,
                        head,
                        rev,
                        res,
                    } => launch_kernel!(
                        @fn self, f, "max_flow bfs level", cfg,
                        n, s, start, head, rev, res, &hp, &lp, &cp, &step, &forward
                    ),
                }
                step += 1;
            }
            self.download_into(&wk.counts, &mut counts)?;
            if counts[(step % 3) as usize] == 0 {
                return Ok(Some(step));
            }
            batch = (batch * 2).min(1024);
        }
    }

    /// [`MaxFlowDevice::grid_cut_device`], with the host copy of the grid when
    /// the caller has it (the host finisher needs the capacities; without it
    /// they are downloaded, only on that path).
    fn grid_cut_with(&self, g: Start<'_>) -> Result<(i64, CudaBuffer<u8>)> {
        let dm = g.dims();
        if dm.n > 0 && finish::grid_is_thin(dm.d as usize, dm.h as usize, dm.w as usize) {
            return self.grid_on_host(g, "a thin grid", finish::grid_cut_from_start);
        }
        if fits_i32(dm.peak) {
            self.grid_solve::<i32>(g)
        } else {
            self.grid_solve::<i64>(g)
        }
    }

    /// Finishes a grid solve on the host from the device's residual state
    /// (the budget ran out, or a preflow start is thin).
    fn grid_finish<C: Counter>(
        &self,
        g: Start<'_>,
        st: &State<C>,
    ) -> Result<(i64, CudaBuffer<u8>)> {
        let wide = |b: &CudaBuffer<C>| -> Result<Vec<i64>> {
            Ok(self.download_vec(b)?.into_iter().map(Into::into).collect())
        };
        let (res, sink_res, excess) = (wide(&st.rc)?, wide(&st.rt)?, wide(&st.e)?);
        let Start::Preflow(dm) = g else {
            return self.grid_on_host(g, "over the launch budget", |graph| {
                finish::grid_cut(graph, res, sink_res, excess)
            });
        };
        // No grid to start from but the state itself: the rest of the flow
        // is the maximum flow of the residual grid (excess as source
        // capacities, sink residuals as sink ones), whose canonical cut is
        // the whole grid's (nodes reachable from the excess).
        let sent = dm.sink_total - sink_res.iter().sum::<i64>();
        let residual = grid_of(dm, excess, sink_res, res)?;
        self.grid_on_host(
            Start::Host(&residual, dm),
            "a preflow finished on the host",
            |graph| {
                let cut = finish::grid_cut_from_start(graph)?;
                Ok(GridCut {
                    flow: sent + cut.flow,
                    ..cut
                })
            },
        )
    }

    /// Runs `solve` on the host copy of the grid (downloaded when the caller
    /// has none); the labels go up for the device API.
    fn grid_on_host(
        &self,
        g: Start<'_>,
        why: &str,
        solve: impl FnOnce(&GridGraph) -> Result<GridCut>,
    ) -> Result<(i64, CudaBuffer<u8>)> {
        let downloaded;
        let graph = match g {
            Start::Host(h, _) => h,
            Start::Uploaded(g) => {
                downloaded = grid_of(
                    g.dims,
                    self.download_vec(&g.source)?,
                    self.download_vec(&g.sink)?,
                    self.download_vec(&g.caps)?,
                )?;
                &downloaded
            }
            Start::Preflow(_) => {
                return Err(Error::Backend(
                    "max_flow: a preflow start has no host grid".into(),
                ));
            }
        };
        let t0 = std::time::Instant::now();
        let cut = solve(graph)?;
        tracing::debug!(
            why,
            ms = t0.elapsed().as_secs_f64() * 1e3,
            "max_flow grid solved on the host"
        );
        let bytes: Vec<u8> = cut.source_side.iter().map(|&b| b as u8).collect();
        Ok((cut.flow, self.upload_named(&bytes, "max_flow labels")?))
    }

    fn grid_solve<C: Counter>(&self, g: Start<'_>) -> Result<(i64, CudaBuffer<u8>)> {
        let dm = g.dims();
        if dm.n == 0 {
            return Ok((0, self.alloc::<u8>(0, "max_flow labels")?));
        }
        to_counter::<C>(dm.peak)?;
        let st = self.grid_start::<C>(g)?;
        self.grid_cut_state(g, st)
    }

    /// The starting residual state of a grid: allocated, then filled by
    /// `mf_grid_init` (an uploaded grid) or by the staging workers (a host
    /// grid).
    fn grid_start<C: Counter>(&self, g: Start<'_>) -> Result<State<C>> {
        let dm = g.dims();
        let n = dm.n;
        let st = State {
            rc: self.alloc::<C>(dm.dirs as usize * n, "max_flow residuals")?,
            rt: self.alloc::<C>(n, "max_flow sink residuals")?,
            e: self.alloc::<C>(n, "max_flow excess")?,
        };
        if n == 0 {
            return Ok(st);
        }
        let (w, h, d, nd) = (dm.w, dm.h, dm.d, dm.dirs);
        let (rcp, rtp, ep) = (st.rc.ptr(), st.rt.ptr(), st.e.ptr());
        match g {
            Start::Uploaded(g) => {
                let f = self.mf_fn(&format!("mf_grid_init_{}", C::SFX))?;
                let (srcp, snkp, capp) = (g.source.ptr(), g.sink.ptr(), g.caps.ptr());
                // Parameters in the order of mf_grid_init; every buffer holds n
                // (rc: dirs * n) elements.
                launch_kernel!(
                    @fn self, &f, "mf_grid_init", self.mf_blocks(n),
                    &w, &h, &d, &nd, &srcp, &snkp, &capp, &rcp, &rtp, &ep
                );
            }
            Start::Host(g, _) => {
                let t0 = std::time::Instant::now();
                let short = g.max_capacities().iter().all(|&m| m <= u16::MAX as i64);
                let bits = match C::as_i32(&st) {
                    Some(st) if short => {
                        self.upload_grid_start16(g, [&st.e, &st.rt, &st.rc])?;
                        16
                    }
                    _ => {
                        let runs = [&st.e, &st.rt, &st.rc].map(|b| (b.len(), b.ptr()));
                        self.upload_grid_start::<C>(g, runs)?;
                        8 * std::mem::size_of::<C>()
                    }
                };
                tracing::debug!(
                    ms = t0.elapsed().as_secs_f64() * 1e3,
                    counter = C::SFX,
                    bits,
                    "max_flow grid start uploaded"
                );
            }
            Start::Preflow(_) => {
                return Err(Error::Backend(
                    "max_flow: a preflow start has its state already".into(),
                ));
            }
        }
        Ok(st)
    }

    /// Push-relabel from the state `st` until a global relabel leaves no
    /// active node (`true`: the preflow is maximum) or the launch budget
    /// ends (`false`: `st` is a preflow, not yet maximum).
    fn grid_discharge<C: Counter>(
        &self,
        dm: Dims,
        st: &State<C>,
        wk: &mut Work,
        budget: &mut Budget,
    ) -> Result<bool> {
        let n = dm.n;
        let sfx = C::SFX;
        let fns = Fns {
            level: self.mf_fn(&format!("mf_grid_level_{sfx}"))?,
            push: self.mf_fn(&format!("mf_grid_push_{sfx}"))?,
            relabel: self.mf_fn(&format!("mf_grid_relabel_{sfx}"))?,
        };
        let bfs_init = self.mf_fn(&format!("mf_grid_bfs_init_{sfx}"))?;
        let collect = self.mf_fn(&format!("mf_grid_collect_{sfx}"))?;
        let (w, h, d, nd) = (dm.w, dm.h, dm.d, dm.dirs);
        let n64 = n as u64;
        let (rcp, rtp, ep) = (st.rc.ptr(), st.rt.ptr(), st.e.ptr());
        let (hp, sp, lp, cp) = (
            wk.hgt.ptr(),
            wk.stamp.ptr(),
            wk.lists.ptr(),
            wk.counts.ptr(),
        );
        let sweep = self.mf_blocks(n);
        let period = self.flow_period();
        let mut tag = 0u32;
        let mut depth = 32u32;
        let mut rounds = 0u32;
        let mut levels = 0u64;
        let start_left = budget.left;
        let lv = Level::Grid {
            w,
            h,
            d,
            dirs: nd,
            rc: rcp,
        };
        let done = loop {
            rounds += 1;
            // Global relabel.
            if !budget.take(2) {
                break false;
            }
            self.memset_zero(&mut wk.counts)?;
            // Parameters in the order of mf_grid_bfs_init.
            launch_kernel!(
                @fn self, &bfs_init, "mf_grid_bfs_init", sweep,
                &n64, &rtp, &hp, &lp, &cp
            );
            let Some(got) = self.mf_bfs(wk, &fns.level, &lv, 0, depth + 8, budget)? else {
                break false;
            };
            depth = got;
            levels += depth as u64;
            // Active nodes.
            self.memset_zero(&mut wk.counts)?;
            // Parameters in the order of mf_grid_collect.
            launch_kernel!(
                @fn self, &collect, "mf_grid_collect", sweep,
                &n64, &ep, &hp, &lp, &cp
            );
            let mut counts = [0u32; 3];
            self.download_into(&wk.counts, &mut counts)?;
            if counts[0] == 0 {
                break true;
            }
            if !budget.take(2 * period as u64) {
                break false;
            }
            let lcfg = self.mf_blocks(counts[0] as usize);
            for step in 0..period {
                tag = tag.wrapping_add(1).max(1);
                // Parameters in the order of mf_grid_push and
                // mf_grid_relabel (the same list).
                launch_kernel!(
                    @fn self, &fns.push, "mf_grid_push", lcfg,
                    &w, &h, &d, &nd, &rcp, &rtp, &ep, &hp, &lp, &cp, &step, &tag, &sp
                );
                launch_kernel!(
                    @fn self, &fns.relabel, "mf_grid_relabel", lcfg,
                    &w, &h, &d, &nd, &rcp, &rtp, &ep, &hp, &lp, &cp, &step, &tag, &sp
                );
            }
        };
        tracing::debug!(
            global_relabels = rounds,
            bfs_levels = levels,
            push_relabel_iterations = (rounds - 1) * period,
            launches = start_left - budget.left,
            maximum_preflow = done,
            "max_flow grid on the device"
        );
        Ok(done)
    }

    /// Completes a solve from the residual state `st` (a preflow of `g`):
    /// push-relabel to a maximum preflow, then the flow value and the
    /// canonical cut; the host finisher takes over past the launch budget.
    fn grid_cut_state<C: Counter>(
        &self,
        g: Start<'_>,
        st: State<C>,
    ) -> Result<(i64, CudaBuffer<u8>)> {
        let dm = g.dims();
        let n = dm.n;
        let mut labels = self.alloc::<u8>(n, "max_flow labels")?;
        if n == 0 {
            return Ok((0, labels));
        }
        let mut wk = self.work(n, n)?;
        let mut budget = self.budget(n);
        if !self.grid_discharge(dm, &st, &mut wk, &mut budget)? {
            return self.grid_finish(g, &st);
        }
        let sfx = C::SFX;
        let n64 = n as u64;
        let (rtp, ep) = (st.rt.ptr(), st.e.ptr());
        let (hp, lp, cp) = (wk.hgt.ptr(), wk.lists.ptr(), wk.counts.ptr());
        let sweep = self.mf_blocks(n);
        // Flow value.
        let out = self.alloc_zeroed_named::<i64>(1, "max_flow sink residual sum")?;
        {
            let f = self.mf_fn(&format!("mf_grid_sink_left_{sfx}"))?;
            let op = out.ptr();
            // Parameters in the order of mf_grid_sink_left.
            launch_kernel!(@fn self, &f, "mf_grid_sink_left", sweep, &n64, &rtp, &op);
        }
        // Canonical cut: forward BFS from the nodes with excess.
        self.memset_zero(&mut wk.counts)?;
        {
            let f = self.mf_fn(&format!("mf_cut_init_{sfx}"))?;
            // Parameters in the order of mf_cut_init.
            launch_kernel!(@fn self, &f, "mf_cut_init", sweep, &n64, &ep, &hp, &lp, &cp);
        }
        let level = self.mf_fn(&format!("mf_grid_level_{sfx}"))?;
        let lv = Level::Grid {
            w: dm.w,
            h: dm.h,
            d: dm.d,
            dirs: dm.dirs,
            rc: st.rc.ptr(),
        };
        if self.mf_bfs(&wk, &level, &lv, 1, 32, &mut budget)?.is_none() {
            return self.grid_finish(g, &st);
        }
        self.mf_labels(&wk, &mut labels)?;
        let mut left = [0i64];
        self.download_into(&out, &mut left)?;
        Ok((dm.sink_total - left[0], labels))
    }

    /// Writes a host grid's starting state into the device runs `[excess,
    /// sink residuals, neighbour residuals]` (`(values, address)`, `C`
    /// counters): each node sends `min(source, sink)` straight through, the
    /// rest of its source capacity is excess, the rest of its sink capacity
    /// residual (what `mf_grid_init` does on the device). The staging
    /// workers compute it into the pinned buffers, so no host array of it is
    /// made and only `C`-wide values cross the bus. The caller checks that
    /// every value fits `C`: none exceeds the largest capacity of its kind.
    fn upload_grid_start<C: Counter>(&self, g: &GridGraph, runs: [(usize, u64); 3]) -> Result<()> {
        let size = std::mem::size_of::<C>();
        let parts = runs.map(|(len, ptr)| (len * size, ptr));
        let (src, snk, caps) = (g.source(), g.sink(), g.caps());
        let fill = |part: usize, off: usize, out: &mut [u8]| {
            let out: &mut [C] = bytemuck::cast_slice_mut(out);
            let (at, len) = (off / size, out.len());
            match part {
                // Excess: what the source sends beyond the sink's share;
                // sink residual: the sink's capacity beyond the source's.
                0 | 1 => {
                    let (own, other) = if part == 0 { (src, snk) } else { (snk, src) };
                    let (a, b) = (&own[at..at + len], &other[at..at + len]);
                    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                        *o = C::narrow(terminal_start(x, y).0);
                    }
                }
                _ => {
                    for (o, &c) in out.iter_mut().zip(&caps[at..at + len]) {
                        *o = C::narrow(c);
                    }
                }
            }
        };
        // SAFETY: each run lies in a whole buffer of this backend, sized for
        // the grid, that nothing else uses during the call.
        unsafe { self.upload_filled(&parts, fill) }
    }

    /// [`upload_grid_start`](Self::upload_grid_start) for a grid whose
    /// capacities all fit `u16`, into `i32` counters: half their bytes cross
    /// the bus into a scratch buffer, which two kernels spread into the
    /// counters. Each node's excess and sink residual travel side by side,
    /// so the source and sink arrays are read once, not once per output
    /// (a fifth of what the staging workers read on a 3-D grid, a quarter
    /// on a 2-D one).
    fn upload_grid_start16(&self, g: &GridGraph, dst: [&CudaBuffer<i32>; 3]) -> Result<()> {
        let n = g.nodes();
        let arcs = dst[2].len();
        let wire = self.alloc::<u16>(2 * n + arcs, "max_flow grid start (16-bit)")?;
        let (pairs, caps_at) = (wire.ptr(), wire.ptr() + 4 * n as u64);
        let (src, snk, caps) = (g.source(), g.sink(), g.caps());
        let fill = |part: usize, off: usize, out: &mut [u8]| {
            if part == 0 {
                // Excess in the low half of each node's 32 bits, its sink
                // residual in the high half; pieces start on a node
                // (offsets are multiples of 64 KiB).
                let out: &mut [u32] = bytemuck::cast_slice_mut(out);
                let (at, len) = (off / 4, out.len());
                let (a, b) = (&src[at..at + len], &snk[at..at + len]);
                for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                    let (e, rt) = terminal_start(x, y);
                    *o = e as u32 | (rt as u32) << 16;
                }
            } else {
                let out: &mut [u16] = bytemuck::cast_slice_mut(out);
                let (at, len) = (off / 2, out.len());
                for (o, &c) in out.iter_mut().zip(&caps[at..at + len]) {
                    *o = c as u16;
                }
            }
        };
        // SAFETY: both runs lie in `wire`, just allocated, which nothing
        // else uses.
        unsafe { self.upload_filled(&[(4 * n, pairs), (2 * arcs, caps_at)], fill) }?;
        let (nodes, len) = (n as u64, arcs as u64);
        let (e, rt, rc) = (dst[0].ptr(), dst[1].ptr(), dst[2].ptr());
        let f = self.mf_fn("mf_unpack_terminals16")?;
        // Parameters in the order of mf_unpack_terminals16: `n` pairs in,
        // `n` excess and `n` sink residuals out.
        launch_kernel!(
            @fn self, &f, "mf_unpack_terminals16", self.mf_blocks(n), &nodes, &pairs, &e, &rt
        );
        let f = self.mf_fn("mf_unpack16")?;
        // Parameters in the order of mf_unpack16: `arcs` u16 in, as many out.
        launch_kernel!(@fn self, &f, "mf_unpack16", self.mf_blocks(arcs), &len, &caps_at, &rc);
        // `wire` is freed on the stream, after the kernels that read it.
        Ok(())
    }

    fn mf_labels(&self, wk: &Work, labels: &mut CudaBuffer<u8>) -> Result<()> {
        let f = self.mf_fn("mf_labels")?;
        let (n64, hp, op) = (wk.n as u64, wk.hgt.ptr(), labels.ptr());
        // Parameters in the order of mf_labels; both buffers hold n.
        launch_kernel!(@fn self, &f, "mf_labels", self.mf_blocks(wk.n), &n64, &hp, &op);
        Ok(())
    }

    fn network_solve<C: Counter>(&self, g: &FlowNetwork, total: i64) -> Result<NetworkFlow> {
        let t0 = std::time::Instant::now();
        to_counter::<C>(total)?;
        let n = g.nodes();
        let arcs = g.arcs();
        let m2 = arcs.len().checked_mul(2).ok_or(Error::TooLarge {
            field: "residual arcs",
            value: 2 * arcs.len() as u128,
            limit: u32::MAX as u128,
        })?;
        count_u32("residual arcs", m2)?;
        let (s, t) = (g.source() as usize, g.sink() as usize);
        // CSR of residual arcs by tail: arc i is 2i (from -> to) and 2i + 1.
        let mut start = vec![0u32; n + 1];
        for a in arcs {
            start[a.from as usize + 1] += 1;
            start[a.to as usize + 1] += 1;
        }
        for v in 0..n {
            start[v + 1] += start[v];
        }
        let mut next = start.clone();
        let mut pos = vec![0u32; m2];
        for (i, a) in arcs.iter().enumerate() {
            for (e, tail) in [(2 * i, a.from), (2 * i + 1, a.to)] {
                pos[e] = next[tail as usize];
                next[tail as usize] += 1;
            }
        }
        drop(next);
        let mut head = vec![0u32; m2];
        let mut rev = vec![0u32; m2];
        let mut res = vec![0i64; m2];
        let mut excess = vec![0i64; n];
        for (i, a) in arcs.iter().enumerate() {
            let (f, b) = (pos[2 * i] as usize, pos[2 * i + 1] as usize);
            head[f] = a.to;
            head[b] = a.from;
            rev[f] = b as u32;
            rev[b] = f as u32;
            // Saturate the source's arcs (self-loops carry nothing).
            if a.from as usize == s && a.to as usize != s {
                res[b] = a.cap;
                excess[a.to as usize] += a.cap;
            } else {
                res[f] = a.cap;
            }
        }
        let res_c: Vec<C> = res
            .iter()
            .map(|&r| to_counter::<C>(r))
            .collect::<Result<_>>()?;
        let ex_c: Vec<C> = excess
            .iter()
            .map(|&r| to_counter::<C>(r))
            .collect::<Result<_>>()?;
        let start_d = self.upload_named(&start, "max_flow csr starts")?;
        let head_d = self.upload_named(&head, "max_flow csr heads")?;
        let rev_d = self.upload_named(&rev, "max_flow csr partners")?;
        let res_d = self.upload_named(&res_c, "max_flow residuals")?;
        let e_d = self.upload_named(&ex_c, "max_flow excess")?;
        drop((res_c, ex_c, head, rev));
        tracing::debug!(
            ms = t0.elapsed().as_secs_f64() * 1e3,
            "max_flow network CSR built and uploaded"
        );
        // Arrivals of a push launch, two halves of n (alternate iterations),
        // and two halves of heights (relabel writes the half push does not
        // read; the BFS kernels use the first).
        let n2 = n.checked_mul(2).ok_or(Error::TooLarge {
            field: "max_flow nodes",
            value: 2 * n as u128,
            limit: usize::MAX as u128,
        })?;
        let mut wk = self.work(n, n2)?;
        let inc = self.alloc_zeroed_named::<C>(n2, "max_flow arrivals")?;
        let sfx = C::SFX;
        let fns = Fns {
            level: self.mf_fn(&format!("mf_net_level_{sfx}"))?,
            push: self.mf_fn(&format!("mf_net_push_{sfx}"))?,
            relabel: self.mf_fn(&format!("mf_net_relabel_{sfx}"))?,
        };
        let bfs_init = self.mf_fn(&format!("mf_net_bfs_init_{sfx}"))?;
        let collect = self.mf_fn(&format!("mf_net_collect_{sfx}"))?;
        let (n32, s32, t32) = (n as u32, s as u32, t as u32);
        let (stp, hdp, rvp, rsp, ep) = (
            start_d.ptr(),
            head_d.ptr(),
            rev_d.ptr(),
            res_d.ptr(),
            e_d.ptr(),
        );
        let (hp, sp, lp, cp) = (
            wk.hgt.ptr(),
            wk.stamp.ptr(),
            wk.lists.ptr(),
            wk.counts.ptr(),
        );
        let hp_half = [hp, hp + (n * std::mem::size_of::<u32>()) as u64];
        let ip = inc.ptr();
        let ip_half = [ip, ip + (n * std::mem::size_of::<C>()) as u64];
        let sweep = self.mf_blocks(n);
        let lv = Level::Net {
            n: n32,
            s: s32,
            start: stp,
            head: hdp,
            rev: rvp,
            res: rsp,
        };
        let period = self.tuning.network_relabel_period().max(1);
        let (mut tag, mut depth, mut rounds, mut levels) = (0u32, 32u32, 0u32, 0u64);
        let mut budget = self.budget(n);
        let start_left = budget.left;
        let finished = loop {
            rounds += 1;
            if !budget.take(2) {
                break false;
            }
            self.memset_zero(&mut wk.counts)?;
            // Parameters in the order of mf_net_bfs_init.
            launch_kernel!(
                @fn self, &bfs_init, "mf_net_bfs_init", sweep,
                &n32, &t32, &hp, &lp, &cp
            );
            let Some(got) = self.mf_bfs(&wk, &fns.level, &lv, 0, depth + 8, &mut budget)? else {
                break false;
            };
            depth = got;
            levels += depth as u64;
            self.memset_zero(&mut wk.counts)?;
            // Parameters in the order of mf_net_collect; inc and the heights
            // hold 2 n.
            launch_kernel!(
                @fn self, &collect, "mf_net_collect", sweep,
                &n32, &s32, &t32, &ep, &ip, &hp, &lp, &cp
            );
            let mut counts = [0u32; 3];
            self.download_into(&wk.counts, &mut counts)?;
            if counts[0] == 0 {
                break true;
            }
            if !budget.take(2 * period as u64) {
                break false;
            }
            let lcfg = self.mf_blocks(counts[0] as usize);
            for step in 0..period {
                tag = tag.wrapping_add(1).max(1);
                let par = (step % 2) as usize;
                let (h_cur, h_next) = (hp_half[par], hp_half[1 - par]);
                let (inc_r, inc_w) = (ip_half[1 - par], ip_half[par]);
                // Parameters in the order of mf_net_push; each half holds n.
                launch_kernel!(
                    @fn self, &fns.push, "mf_net_push", lcfg,
                    &n32, &s32, &t32, &stp, &hdp, &rvp, &rsp,
                    &ep, &inc_r, &inc_w, &h_cur, &lp, &cp, &step, &tag, &sp
                );
                // Parameters in the order of mf_net_relabel.
                launch_kernel!(
                    @fn self, &fns.relabel, "mf_net_relabel", lcfg,
                    &n32, &stp, &hdp, &rsp, &ep, &h_cur, &h_next,
                    &lp, &cp, &step, &tag, &sp
                );
            }
        };
        tracing::debug!(
            global_relabels = rounds,
            bfs_levels = levels,
            launches = start_left - budget.left,
            maximum_preflow = finished,
            ms = t0.elapsed().as_secs_f64() * 1e3,
            "max_flow network on the device"
        );
        // The per-arc preflow; the host returns the excess and finds the cut.
        let res_back: Vec<C> = self.download_vec(&res_d)?;
        let arc_flow: Vec<i64> = arcs
            .iter()
            .enumerate()
            .map(|(i, a)| a.cap - res_back[pos[2 * i] as usize].into())
            .collect();
        drop(res_back);
        let t1 = std::time::Instant::now();
        let out = finish::network_flow(g, arc_flow)?;
        tracing::debug!(
            ms = t1.elapsed().as_secs_f64() * 1e3,
            "max_flow network finished on the host"
        );
        Ok(out)
    }
}

impl MaxFlowDevice for CudaBackend {
    /// Capacities as given (`i64`); a solve picks `i32` counters when their
    /// sum fits.
    type DeviceGrid = GridOnDevice;

    fn upload_grid(&self, g: &GridGraph) -> Result<GridOnDevice> {
        Ok(GridOnDevice {
            dims: Dims::of(g)?,
            source: self.upload_named(g.source(), "max_flow source capacities")?,
            sink: self.upload_named(g.sink(), "max_flow sink capacities")?,
            caps: self.upload_named(g.caps(), "max_flow neighbour capacities")?,
        })
    }

    fn grid_cut_device(&self, g: &GridOnDevice) -> Result<(i64, CudaBuffer<u8>)> {
        self.grid_cut_with(Start::Uploaded(g))
    }
}

/// A grid cut across GPUs, one slab of layers per GPU (what
/// `trident_dist`'s `grid_cut_resident` runs): each GPU takes its slab,
/// alone, to a maximum preflow ([`grid_layers_preflow`]); the slabs' states,
/// put side by side ([`grid_preflow_whole`], [`place_preflow`] or a
/// transport), form a preflow of the whole grid, which one GPU completes
/// ([`grid_cut_preflow`]). Flow pushed inside a slab is flow of the whole
/// grid, so the whole solve starts from a residual grid where most of it is
/// already sent; its flow value and canonical cut are the plain solve's
/// (both are unique).
///
/// [`grid_layers_preflow`]: CudaBackend::grid_layers_preflow
/// [`grid_preflow_whole`]: CudaBackend::grid_preflow_whole
/// [`place_preflow`]: CudaBackend::place_preflow
/// [`grid_cut_preflow`]: CudaBackend::grid_cut_preflow
impl CudaBackend {
    /// Uploads layers `layers` of `g` (planes of a 3-D grid, rows of a 2-D
    /// one).
    pub fn upload_grid_layers(&self, g: &GridGraph, layers: Range<usize>) -> Result<GridLayers> {
        let whole = Dims::of(g)?;
        let (depth, height, width) = g.shape();
        let (total, layer) = if g.is_3d() {
            (depth, height * width)
        } else {
            (height, width)
        };
        if layers.start > layers.end || layers.end > total {
            return Err(Error::arg(
                "layers",
                format!("{layers:?} is not a range of the grid's {total} layers"),
            ));
        }
        let nodes = layers.start * layer..layers.end * layer;
        let n = g.nodes();
        let mut caps = Vec::with_capacity(g.dirs().len() * nodes.len());
        for d in 0..g.dirs().len() {
            caps.extend_from_slice(&g.caps()[d * n + nodes.start..d * n + nodes.end]);
        }
        let count = layers.len() as u32;
        let slab = Dims {
            h: if g.is_3d() { whole.h } else { count },
            d: if g.is_3d() { count } else { 1 },
            n: nodes.len(),
            sink_total: g.sink()[nodes.clone()].iter().sum(),
            ..whole
        };
        Ok(GridLayers {
            slab: GridOnDevice {
                dims: slab,
                source: self
                    .upload_named(&g.source()[nodes.clone()], "max_flow source capacities")?,
                sink: self.upload_named(&g.sink()[nodes], "max_flow sink capacities")?,
                caps: self.upload_named(&caps, "max_flow neighbour capacities")?,
            },
            layers,
            whole,
            capacity_sum: g.capacity_sum(),
        })
    }

    /// Push-relabel on the slab alone (no flow leaves it) to a maximum
    /// preflow of the slab; a slab that exhausts the launch budget, or a
    /// thin one, hands on the preflow it has (the whole solve completes
    /// any).
    pub fn grid_layers_preflow(&self, s: &GridLayers) -> Result<GridPreflow> {
        let state = if fits_i32(s.whole.peak) {
            Counters::I32(self.slab_preflow::<i32>(s)?)
        } else {
            Counters::I64(self.slab_preflow::<i64>(s)?)
        };
        Ok(GridPreflow {
            dims: s.slab.dims,
            state,
        })
    }

    fn slab_preflow<C: Counter>(&self, s: &GridLayers) -> Result<State<C>> {
        to_counter::<C>(s.whole.peak)?;
        let dm = s.slab.dims;
        let st = self.grid_start::<C>(Start::Uploaded(&s.slab))?;
        if dm.n > 0 && !finish::grid_is_thin(dm.d as usize, dm.h as usize, dm.w as usize) {
            let mut wk = self.work(dm.n, dm.n)?;
            let mut budget = self.budget(dm.n);
            self.grid_discharge(dm, &st, &mut wk, &mut budget)?;
        }
        Ok(st)
    }

    /// Device memory for the whole grid's state of `s`'s grid (contents
    /// unspecified until every slab is placed).
    pub fn grid_preflow_whole(&self, s: &GridLayers) -> Result<GridPreflow> {
        let dm = s.whole;
        let state = if fits_i32(dm.peak) {
            Counters::I32(self.alloc_state::<i32>(dm)?)
        } else {
            Counters::I64(self.alloc_state::<i64>(dm)?)
        };
        Ok(GridPreflow { dims: dm, state })
    }

    fn alloc_state<C: Counter>(&self, dm: Dims) -> Result<State<C>> {
        Ok(State {
            rc: self.alloc::<C>(dm.dirs as usize * dm.n, "max_flow residuals")?,
            rt: self.alloc::<C>(dm.n, "max_flow sink residuals")?,
            e: self.alloc::<C>(dm.n, "max_flow excess")?,
        })
    }

    /// Copies a slab's state (on this device) into the whole grid's, at
    /// layer `first` onwards.
    pub fn place_preflow(
        &self,
        whole: &mut GridPreflow,
        part: &GridPreflow,
        first: usize,
    ) -> Result<()> {
        let dm = whole.dims;
        let layer = if dm.dirs == 6 {
            dm.w as usize * dm.h as usize
        } else {
            dm.w as usize
        };
        let start = first * layer;
        let to = whole.regions(start..start + part.nodes())?;
        let from = part.regions(0..part.nodes())?;
        if to.len() != from.len() || to.first().map(|r| r.1) != from.first().map(|r| r.1) {
            return Err(Error::arg(
                "part",
                "the slab's state does not match the whole grid's (directions or counter type)",
            ));
        }
        for ((dst, bytes), (src, _)) in to.into_iter().zip(from) {
            // SAFETY: both runs lie inside live state buffers of this device
            // (regions() checked the node range), and they do not overlap
            // (two distinct allocations).
            unsafe { self.copy_raw(dst, src, bytes)? };
        }
        Ok(())
    }

    /// Nodes `nodes` of `p`'s state in one buffer, to travel between GPUs:
    /// the runs of [`GridPreflow::regions`] one after another,
    /// [`GridPreflow::wire_width`] bytes a value.
    pub fn pack_preflow(&self, p: &GridPreflow, nodes: Range<usize>) -> Result<CudaBuffer<u8>> {
        let count = nodes.len();
        let runs = p.regions(nodes)?;
        let width = p.wire_width();
        let out = self.alloc::<u8>(p.wire_bytes(count), "max_flow state on the wire")?;
        let pack = self.mf_fn("mf_pack16")?;
        for (i, (src, bytes)) in runs.into_iter().enumerate() {
            let dst = out.ptr() + (i * count * width) as u64;
            if width == 2 {
                let n = count as u64;
                // Parameters in the order of mf_pack16: `count` i32 values
                // in, as many u16 out.
                launch_kernel!(@fn self, &pack, "mf_pack16", self.mf_blocks(count), &n, &src, &dst);
            } else {
                // SAFETY: the run lies in the state (regions() checked it),
                // the destination in `out`, sized for every run.
                unsafe { self.copy_raw(dst, src, bytes)? };
            }
        }
        Ok(out)
    }

    /// Writes what [`pack_preflow`](Self::pack_preflow) made of as many
    /// nodes (of a state of the same grid) into nodes `nodes` of `p`.
    pub fn unpack_preflow(
        &self,
        p: &mut GridPreflow,
        nodes: Range<usize>,
        packed: &CudaBuffer<u8>,
    ) -> Result<()> {
        let count = nodes.len();
        if packed.len() != p.wire_bytes(count) {
            return Err(Error::dim(
                "packed",
                format!(
                    "{} bytes for {count} nodes, {} expected",
                    packed.len(),
                    p.wire_bytes(count)
                ),
            ));
        }
        let width = p.wire_width();
        let unpack = self.mf_fn("mf_unpack16")?;
        for (i, (dst, bytes)) in p.regions(nodes)?.into_iter().enumerate() {
            let src = packed.ptr() + (i * count * width) as u64;
            if width == 2 {
                let n = count as u64;
                // Parameters in the order of mf_unpack16.
                launch_kernel!(@fn self, &unpack, "mf_unpack16", self.mf_blocks(count), &n, &src, &dst);
            } else {
                // SAFETY: the run lies in `packed` (its length checked) and
                // the destination in the state (regions() checked it).
                unsafe { self.copy_raw(dst, src, bytes)? };
            }
        }
        Ok(())
    }

    /// Completes the whole grid's preflow `p`: the flow value of the grid
    /// and one byte per node (1 = source side of the canonical cut), as
    /// [`MaxFlowDevice::grid_cut_device`] gives them.
    pub fn grid_cut_preflow(&self, p: GridPreflow) -> Result<(i64, CudaBuffer<u8>)> {
        let dm = p.dims;
        let g = Start::Preflow(dm);
        let thin = dm.n > 0 && finish::grid_is_thin(dm.d as usize, dm.h as usize, dm.w as usize);
        match p.state {
            Counters::I32(st) if thin => self.grid_finish(g, &st),
            Counters::I64(st) if thin => self.grid_finish(g, &st),
            Counters::I32(st) => self.grid_cut_state(g, st),
            Counters::I64(st) => self.grid_cut_state(g, st),
        }
    }
}

/// Labels downloaded as bytes (0 or 1, as `mf_labels` writes them) as
/// `bool`s: the same allocation, after one OR-reduction shows every byte is
/// 0 or 1, instead of a pass that writes a fresh vector (on cut-2048, 4 MB of
/// new pages on the host call's critical path).
fn bools(bytes: Vec<u8>) -> Vec<bool> {
    if bytes.iter().fold(0u8, |m, &b| m | b) > 1 {
        return bytes.iter().map(|&b| b != 0).collect();
    }
    let mut bytes = std::mem::ManuallyDrop::new(bytes);
    let (ptr, len, cap) = (bytes.as_mut_ptr(), bytes.len(), bytes.capacity());
    // SAFETY: `bool` has the size and alignment of `u8` and every byte is 0
    // or 1, a valid `bool`; the allocation passes whole, with its length and
    // capacity, to the new vector, and the old one is never dropped.
    unsafe { Vec::from_raw_parts(ptr.cast::<bool>(), len, cap) }
}

impl MaxFlow for CudaBackend {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        // GridGraph is valid by construction (trident_core::flow checks it).
        let (flow, labels) = self.grid_cut_with(Start::Host(g, Dims::of(g)?))?;
        let side = self.download_vec(&labels)?;
        Ok(GridCut {
            flow,
            source_side: bools(side),
        })
    }

    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        // FlowNetwork is valid by construction; its capacity sum fits i64.
        let total = g
            .arcs()
            .iter()
            .fold(0i64, |acc, a| acc.saturating_add(a.cap));
        if fits_i32(total) {
            self.network_solve::<i32>(g, total)
        } else {
            self.network_solve::<i64>(g, total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_peak_is_the_per_node_bound() {
        // 1 x 2: s -> v0 (3e9), v0 <-> v1 (2e9 / 1e9), v1 -> t (4e9): the sum
        // is past i32; v0's excess may reach 3e9 + 1e9 and v1's sink is 4e9.
        let g = GridGraph::new_2d(
            1,
            2,
            vec![3_000_000_000, 0],
            vec![0, 4_000_000_000],
            vec![2_000_000_000, 0, 0, 1_000_000_000, 0, 0, 0, 0],
        )
        .unwrap();
        assert_eq!(counter_peak(&g), 4_000_000_000);
        // 1 x 3: s -> v0 (2e9), v1 -> v2 (1e9), v2 -> t (1): neither the sum
        // (3e9 + 1) nor the bound at the maxima (2e9 + 4 x 1e9) fits i32,
        // the pass finds 2e9.
        let mut caps = vec![0; 12];
        caps[1] = 1_000_000_000;
        let g = GridGraph::new_2d(1, 3, vec![2_000_000_000, 0, 0], vec![0, 0, 1], caps).unwrap();
        assert_eq!(counter_peak(&g), 2_000_000_000);
        // 300 x 300, every arc 10,000, terminals 20,000: the capacities sum
        // to about 7.2e9, yet no counter passes 20,000 + 4 x 10,000.
        let (h, w) = (300, 300);
        let n = h * w;
        let grid = GridGraph::new_2d(h, w, vec![0; n], vec![0; n], vec![0; 4 * n]).unwrap();
        let caps = |c: i64| -> Vec<i64> {
            (0..4 * n)
                .map(|a| {
                    let dir = trident_core::Dir::ALL[a / n];
                    if grid.neighbor(a % n, dir).is_some() {
                        c
                    } else {
                        0
                    }
                })
                .collect()
        };
        let g = GridGraph::new_2d(h, w, vec![20_000; n], vec![20_000; n], caps(10_000)).unwrap();
        assert!(!fits_i32(g.capacity_sum()));
        assert_eq!(counter_peak(&g), 60_000);
        // The smaller of the sum and the bound at the maxima, without a pass:
        // here the sum (12 against 5 + 4 x 3)...
        let small = GridGraph::new_2d(1, 2, vec![5, 0], vec![0, 4], vec![3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(counter_peak(&small.unwrap()), 12);
        // ... and here the maxima (arcs 3, terminals 7: the sum is about 1.3e6).
        let g = GridGraph::new_2d(h, w, vec![7; n], vec![7; n], caps(3)).unwrap();
        assert_eq!(counter_peak(&g), 7 + 4 * 3);
    }

    #[test]
    fn label_bytes_become_bools() {
        assert_eq!(bools(vec![1, 0, 0, 1]), [true, false, false, true]);
        assert_eq!(bools(vec![]), Vec::<bool>::new());
        // Bytes other than 0 and 1 (never written by `mf_labels`) still read
        // as "non-zero is the source side".
        assert_eq!(bools(vec![0, 2, 255, 1]), [false, true, true, true]);
    }

    #[test]
    fn counters_pick_i32_only_when_the_sum_fits() {
        assert!(fits_i32(i32::MAX as i64));
        assert!(!fits_i32(i32::MAX as i64 + 1));
        assert!(to_counter::<i32>(1 << 40).is_err());
        assert_eq!(to_counter::<i64>(1 << 40).ok(), Some(1i64 << 40));
    }
}
