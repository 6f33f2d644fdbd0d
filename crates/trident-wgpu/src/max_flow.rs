//! MaxFlow for [`WgpuBackend`]: parallel push-relabel with global relabels
//! (`shaders/max_flow.wgsl`), for grids and for general networks, within a
//! work budget, finished on the host ([`trident_core::flow::finish`]) when
//! the budget runs out.
//!
//! Design:
//! - Push, grids: Hong's lock-free push-relabel, one invocation per node and
//!   pass, excesses and residuals updated with atomics. A node only ever
//!   lowers its own excess, residuals and height, so what it reads is safe to
//!   act on; the schedule changes the order of pushes, never the answer (the
//!   flow value and the canonical cut are unique).
//! - Push, networks: their answer includes per-arc flows, which Hong's scheme
//!   would make depend on the schedule. So a pass is two launches: push (each
//!   node pushes the excess it had at the start of the launch along admissible
//!   arcs; arrivals go to separate counters) and relabel (arrivals join the
//!   excess; new heights go to the other half of a double buffer). Nothing a
//!   launch reads is written during it but by the one invocation that owns
//!   it, and integer atomic adds commute, so the same input gives the same
//!   bits on any device and schedule.
//! - Global relabel: exact breadth-first distances to the target over
//!   residual arcs, computed by in-place Bellman-Ford sweeps (unit lengths)
//!   until a sweep changes nothing. The host runs sweeps in doubling batches
//!   and reads one counter per batch. Nodes that cannot reach the target get
//!   `INF` and stop. Between relabels the host queues twice as many push
//!   passes as the last relabel took sweeps (clamped), which keeps relabeling
//!   to about a third of the work. Sweeps on grids run on 16 x 16 tiles that
//!   iterate 16 Jacobi rounds in workgroup memory, so a distance crosses a
//!   tile per sweep rather than a node.
//! - The device solve stops when an exact relabel finds no node with excess
//!   that can reach the target: the preflow is then maximum, whatever the
//!   pushes did.
//! - Budget: a solve may queue at most [`FLOW_BUDGET`] dispatches (sweeps,
//!   push and relabel launches; a batch that would pass it is not queued),
//!   and no global relabel deeper than [`finish::max_levels`]. Flow that must
//!   travel a long path needs a sweep per level of the path in every relabel
//!   and a pass per node it moves: a `1 x 200,000` grid did not finish in 5
//!   minutes on llvmpipe before the budget. Past it the residual state goes to
//!   the host finisher, which gives the same value and cut (and for networks
//!   a flow) in time linear on such graphs. A grid with a side longer than
//!   that depth ([`finish::grid_is_thin`]) goes to the host from the start.
//!   The budget counts dispatches, not time, and on networks it is charged
//!   by exact search depths (see [`Solve::relabel`]), so where the switch
//!   happens is a function of the input alone.
//! - Grids keep s and t implicit: terminal arcs are two per-node arrays, what
//!   can go straight from s to t through a node is cancelled up front, and
//!   neighbours are `v ± 1, ± width, ± width * height`. The flow value is the
//!   sum over nodes of sink capacity minus residual, reduced on the device as
//!   64-bit (lo, hi) pairs. The canonical cut is the set reachable from s in
//!   the residual graph of a maximum *flow*; for a maximum preflow that is
//!   the set reachable from the nodes left with excess (every such node is
//!   reachable from s once its excess is returned, and returning it only adds
//!   arcs inside that set), found by the same sweeps run forward.
//! - Networks use a CSR residual graph (each input arc a forward slot in its
//!   tail's range and a reverse slot in its head's). The device pushes
//!   towards t until the preflow is maximum (or the budget is spent); the
//!   host then returns the stranded excess to s, reads the flow value and the
//!   per-arc flows, and finds the cut ([`finish::network_flow`], sequential,
//!   so deterministic too).
//!
//! Integers: WGSL has only 32-bit ones, so residuals and excesses are i32.
//! The host checks, before anything goes up, that no value can exceed
//! `i32::MAX`: per node the source capacity plus all capacities into it (a
//! bound on its excess), per arc pair the sum of both directions (a bound on
//! either residual), per arc its capacity. A graph that fails the check gets
//! [`Error::Unsupported`] naming the limit (the facade then runs it on the
//! next backend); nothing ever wraps. The flow value itself is summed in 64
//! bits.

use std::cell::Cell;

use trident_core::flow::finish;
use trident_core::{
    Error, FlowNetwork, GridCut, GridGraph, MaxFlow, MaxFlowDevice, NetworkFlow, Result,
};

use crate::WgpuBackend;
use crate::buffer::WgpuBuffer;
use crate::error::failure;
use crate::pipeline::{Arg, Bind, Kernel, Shader};

static SHADER: Shader = Shader {
    name: "max_flow",
    parts: &[include_str!("../shaders/max_flow.wgsl")],
};

use Bind::{Read as R, ReadWrite as W, Uniform as U};

/// Params, residuals, excesses, heights, counters, output words, sink
/// residuals, terminal capacities.
const GRID_BINDINGS: &[Bind] = &[U, W, W, W, W, W, W, R];
/// Params, residuals, excesses, heights, counters, output words, CSR `first`,
/// `head`, `rev`.
const NET_BINDINGS: &[Bind] = &[U, W, W, W, W, W, R, R, R];

macro_rules! kernel {
    ($name:ident, $entry:literal, $b:expr) => {
        static $name: Kernel = Kernel {
            shader: &SHADER,
            entry: $entry,
            bindings: $b,
        };
    };
}

kernel!(GRID_INIT, "grid_init", GRID_BINDINGS);
kernel!(GRID_RELAX_INIT, "grid_relax_init", GRID_BINDINGS);
kernel!(GRID_RELAX, "grid_relax", GRID_BINDINGS);
kernel!(GRID_RELAX_TILE, "grid_relax_tile", GRID_BINDINGS);
kernel!(GRID_COUNT, "grid_count", GRID_BINDINGS);
kernel!(GRID_PUSH, "grid_push", GRID_BINDINGS);
kernel!(GRID_FLOW, "grid_flow", GRID_BINDINGS);
kernel!(PACK, "pack_labels", &[U, W, W, W, W, W]);
kernel!(NET_RELAX_INIT, "net_relax_init", NET_BINDINGS);
kernel!(NET_RELAX, "net_relax", NET_BINDINGS);
kernel!(NET_COUNT, "net_count", NET_BINDINGS);
kernel!(NET_PUSH, "net_push", NET_BINDINGS);
kernel!(NET_RELABEL, "net_relabel", NET_BINDINGS);

/// The launches of one push pass: Hong's asynchronous push on grids, the
/// synchronous push and relabel on networks.
static GRID_PASS: &[&Kernel] = &[&GRID_PUSH];
static NET_PASS: &[&Kernel] = &[&NET_PUSH, &NET_RELABEL];

/// The kernels of this primitive (for [`WgpuBackend::warm_up`]).
pub(crate) static KERNELS: &[&Kernel] = &[
    &GRID_INIT,
    &GRID_RELAX_INIT,
    &GRID_RELAX,
    &GRID_RELAX_TILE,
    &GRID_COUNT,
    &GRID_PUSH,
    &GRID_FLOW,
    &PACK,
    &NET_RELAX_INIT,
    &NET_RELAX,
    &NET_COUNT,
    &NET_PUSH,
    &NET_RELABEL,
];

/// Invocations per workgroup of every kernel here.
const WG: u64 = 256;
/// Side of the square tile `grid_relax_tile` sweeps (`TILE` in the shader).
const RELAX_TILE: usize = 16;
/// "No node" (the shader's NONE).
const NONE: u32 = u32::MAX;
/// Sweeps in the first batch of a global relabel; batches double up to
/// [`MAX_BATCH`].
const FIRST_BATCH: u32 = 4;
/// Most sweeps between two reads of the change counter.
const MAX_BATCH: u32 = 256;
/// Push passes between global relabels: twice the last relabel's sweep
/// count (a sweep costs about what a push pass costs, so relabeling is at
/// most a third of the work, as in hipr's frequency rule), clamped to this range.
const PUSH_PASSES: (u64, u64) = (16, 1024);
/// Dispatches (relabel sweeps, push and relabel launches) one solve may
/// queue before it hands its state to the host finisher, by default.
///
/// Far above what the catalog's graphs need. Counted on llvmpipe (network
/// counts are those of any device, their passes being synchronous; grid
/// counts vary with the device's schedule): flow-rmf (65,536 nodes) 8,422,
/// flow-rmf-20-20 4,096, flow-random-5000-40000 90, cut-512 and cut-2048
/// about 30. On a GPU a small dispatch costs 10-20 us, so a graph that
/// exhausts the budget spends about a second at most on the device before
/// the host takes over; a deep one ([`finish::max_levels`]) leaves at its
/// first global relabel.
pub(crate) const FLOW_BUDGET: u64 = 1 << 16;

/// The shader's `Params` (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    width: u32,
    plane: u32,
    dirs: u32,
    depth: u32,
    height: u32,
    mode: u32,
    goal: u32,
    other: u32,
    hcur: u32,
    row: u32,
    hnext: u32,
}

fn unsupported_i32(what: String) -> Error {
    Error::Unsupported(format!(
        "MaxFlow on wgpu keeps residuals and excesses in i32 (WGSL has no 64-bit integers): {what} exceeds i32::MAX = {}",
        i32::MAX
    ))
}

/// The device state of one solve and the kernels that act on it.
struct Solve<'a> {
    be: &'a WgpuBackend,
    /// Residuals, excesses, heights, counters, output words, then the
    /// shape-specific buffers (grid: sink residuals, terminals; network:
    /// first, head, rev).
    bufs: Vec<&'a wgpu::Buffer>,
    ctr: &'a WgpuBuffer<u32>,
    groups: [u32; 3],
    relax_init: &'static Kernel,
    relax: &'static Kernel,
    /// Workgroups of `relax` (the tiled grid sweep has its own shape).
    relax_groups: [u32; 3],
    count: &'static Kernel,
    /// The launches of one push pass, each over all nodes.
    push: &'static [&'static Kernel],
    /// Dispatches charged so far, and how many the solve may charge.
    spent: Cell<u64>,
    budget: u64,
    /// The deepest global relabel allowed ([`finish::max_levels`]).
    max_levels: u64,
    /// Charge and schedule by exact search depths (see [`Solve::relabel`]).
    exact: bool,
}

/// What a finished global relabel found.
struct Relabel {
    sweeps: u64,
    active: u32,
    depth: u64,
}

/// The end of a device phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Done,
    /// The work budget ran out first: the host finishes.
    OverBudget,
}

impl Solve<'_> {
    fn args<'b>(&'b self, p: &'b wgpu::Buffer) -> Vec<Arg<'b>> {
        let mut a = vec![Arg::raw(p)];
        a.extend(self.bufs.iter().map(|b| Arg::raw(b)));
        a
    }

    /// Takes `n` dispatches from the budget, or says there are not enough.
    fn spend(&self, n: u64) -> bool {
        let after = self.spent.get().saturating_add(n);
        if after > self.budget {
            return false;
        }
        self.spent.set(after);
        true
    }

    fn left(&self) -> u64 {
        self.budget - self.spent.get()
    }

    /// Exact distances from the relax kernel's seeds (`mode` in `p`), or
    /// `None` when the search is deeper than [`finish::max_levels`] or than
    /// the budget left. Returns the sweeps run and, with `count`, the active
    /// nodes left and the depth (largest finite distance).
    ///
    /// A sweep settles at least one more level, so a search that still
    /// changes something after `k` sweeps is at least `k` deep. With `exact`
    /// (networks) the budget is charged `depth + 1`, the most sweeps the
    /// search can take, rather than the sweeps run (their number depends on
    /// the order in which a sweep's invocations run): the charge and every
    /// decision then follow from the exact depth, a function of the input.
    fn relabel(&self, p: &wgpu::Buffer, count: bool) -> Result<Option<Relabel>> {
        let args = self.args(p);
        if !self.spend(1) {
            return Ok(None);
        }
        let limit = self.left().min(self.max_levels + 1);
        let mut enc = self.be.encoder("max_flow relabel");
        enc.dispatch(self.relax_init, &args, self.groups)?;
        let mut batch = FIRST_BATCH as u64;
        let mut sweeps = 0u64;
        let mut host = [0u32; 3];
        loop {
            let batch_now = batch.min(limit - sweeps);
            if batch_now == 0 {
                return Ok(None);
            }
            for _ in 1..batch_now {
                enc.dispatch(self.relax, &args, self.relax_groups)?;
            }
            enc.zero(self.ctr);
            enc.dispatch(self.relax, &args, self.relax_groups)?;
            if count {
                enc.dispatch(self.count, &args, self.groups)?;
            }
            enc.submit();
            sweeps += batch_now;
            self.be.download_into(self.ctr, &mut host[..])?;
            if host[0] == 0 {
                break;
            }
            batch = (batch * 2).min(MAX_BATCH as u64);
            enc = self.be.encoder("max_flow relabel");
        }
        let depth = host[2] as u64;
        let charge = if self.exact { depth + 1 } else { sweeps };
        if (count && depth > self.max_levels) || !self.spend(charge) {
            return Ok(None);
        }
        Ok(Some(Relabel {
            sweeps,
            active: host[1],
            depth,
        }))
    }

    /// Push passes and global relabels until no node with excess can reach
    /// the target (`p` has mode 0; pass `k` runs with `p[k % 2]`).
    fn run(&self, p: [&wgpu::Buffer; 2]) -> Result<Phase> {
        let (mut total_sweeps, mut total_passes) = (0u64, 0u64);
        let mut round = 0u64;
        let end = loop {
            let Some(r) = self.relabel(p[0], true)? else {
                break Phase::OverBudget;
            };
            total_sweeps += r.sweeps;
            if r.active == 0 {
                break Phase::Done;
            }
            // About twice the relabel's work in pushes (hipr's frequency rule).
            let passes = if self.exact {
                r.depth + 1
            } else {
                2 * r.sweeps
            }
            .clamp(PUSH_PASSES.0, PUSH_PASSES.1);
            if !self.spend(passes * self.push.len() as u64) {
                break Phase::OverBudget;
            }
            total_passes += passes;
            round += 1;
            let args = [self.args(p[0]), self.args(p[1])];
            let mut enc = self.be.encoder("max_flow push");
            for k in 0..passes as usize {
                for &kernel in self.push {
                    enc.dispatch(kernel, &args[k % 2], self.groups)?;
                }
            }
            enc.submit();
        };
        tracing::debug!(
            end = ?end,
            rounds = round,
            relabel_sweeps = total_sweeps,
            push_passes = total_passes,
            dispatches = self.spent.get(),
            "max_flow push-relabel"
        );
        Ok(end)
    }

    /// Labels of the nodes with a finite distance, one bit each.
    fn labels(&self, p: &wgpu::Buffer, n: usize, out: &WgpuBuffer<u32>) -> Result<Vec<bool>> {
        let words = n.div_ceil(32);
        let groups = self.be.grid((words as u64).div_ceil(WG))?;
        let mut enc = self.be.encoder("max_flow labels");
        enc.dispatch(&PACK, &self.args(p)[..6], groups)?;
        enc.submit();
        let mut host = vec![0u32; words];
        self.be.download_into(out, &mut host)?;
        let mut side = Vec::with_capacity(words * 32);
        side.extend(
            host.iter()
                .flat_map(|&w| (0..32).map(move |b| w >> b & 1 != 0)),
        );
        side.truncate(n);
        Ok(side)
    }
}

impl WgpuBackend {
    fn flow_budget(&self) -> u64 {
        self.tuning.flow_budget()
    }

    /// Params with the dispatch row (invocations per row of the 2-D grid of
    /// workgroups) filled in.
    fn flow_params(&self, p: Params, groups: [u32; 3]) -> wgpu::Buffer {
        self.uniform(&Params {
            row: groups[0] * WG as u32,
            ..p
        })
    }
}

/// The i32 neighbour planes and terminals of `g` on the device, or why they
/// might overflow.
///
/// The bounds are checked while the values are converted, straight into the
/// mapped upload buffers, on all cores ([`WgpuBackend::upload_filled`]); on
/// cut-2048 (16M arcs) a sequential convert-check-copy on the host cost more
/// than the GPU solve. Index arithmetic only: a non-zero capacity always has
/// its neighbour on the grid (core rejects border arcs), so `v + offset` is
/// it, and a node `u = v - offset` whose arc in that direction would leave
/// the grid has capacity 0 there.
fn grid_upload(be: &WgpuBackend, g: &GridGraph) -> Result<(WgpuBuffer<i32>, WgpuBuffer<i32>)> {
    let n = g.nodes();
    let (_, h, w) = g.shape();
    let dirs = g.dirs().len();
    let caps = g.caps();
    let (source, sink) = (g.source(), g.sink());
    let max = i32::MAX as i64;
    let offsets = [
        1isize,
        -1,
        w as isize,
        -(w as isize),
        (w * h) as isize,
        -((w * h) as isize),
    ];
    // Per arc: both directions of its pair together (a bound on either residual).
    let planes = be.upload_filled(dirs * n, "max_flow residuals", |first, out| {
        let (mut d, mut v) = (first / n, first % n);
        for (o, &c) in out.iter_mut().zip(&caps[first..]) {
            if c != 0 {
                let u = v.wrapping_add_signed(offsets[d]);
                let back = caps[(d ^ 1) * n + u];
                if c.saturating_add(back) > max {
                    return Err(unsupported_i32(format!(
                        "the arc pair {v} <-> {u} (capacities {c} + {back})"
                    )));
                }
            }
            *o = c as i32;
            v += 1;
            if v == n {
                (d, v) = (d + 1, 0);
            }
        }
        Ok(())
    })?;
    // Per node: the source capacity plus every arc into it (a bound on its
    // excess); then the sink capacities.
    let terminals = be.upload_filled(2 * n, "max_flow terminals", |first, out| {
        for (idx, o) in (first..).zip(out.iter_mut()) {
            if idx >= n {
                let c = sink[idx - n];
                if c > max {
                    return Err(unsupported_i32(format!("sink[{}] = {c}", idx - n)));
                }
                *o = c as i32;
                continue;
            }
            let v = idx;
            let mut inflow = source[v];
            for (d, &off) in offsets.iter().enumerate().take(dirs) {
                let u = v.wrapping_add_signed(-off);
                if u < n {
                    inflow = inflow.saturating_add(caps[d * n + u]);
                }
            }
            if inflow > max {
                return Err(unsupported_i32(format!(
                    "the capacity into node {v} ({inflow})"
                )));
            }
            *o = source[v] as i32;
        }
        Ok(())
    })?;
    Ok((planes, terminals))
}

/// A grid graph uploaded by [`MaxFlowDevice::upload_grid`]: the neighbour
/// capacities and terminals as `i32` (checked against overflow when
/// uploaded, as [`MaxFlow::grid_cut`] checks them), and the shape.
pub struct WgpuGrid {
    /// `(depth, height, width)`.
    shape: (usize, usize, usize),
    dirs: usize,
    /// Neighbour capacities, `dirs` planes of `n` (the layout of
    /// [`GridGraph::caps`]).
    planes: WgpuBuffer<i32>,
    /// Source capacities, then sink capacities.
    terminals: WgpuBuffer<i32>,
}

impl WgpuGrid {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.shape.0 * self.shape.1 * self.shape.2
    }

    /// The grid back on the host (for the host finisher of a device-resident
    /// cut, which has no host copy).
    fn download(&self, be: &WgpuBackend) -> Result<GridGraph> {
        let wide = |v: Vec<i32>| v.into_iter().map(i64::from).collect::<Vec<_>>();
        let caps = wide(be.download_vec(&self.planes)?);
        let mut source = wide(be.download_vec(&self.terminals)?);
        let sink = source.split_off(self.nodes());
        let (d, h, w) = self.shape;
        if self.dirs == 6 {
            GridGraph::new_3d(d, h, w, source, sink, caps)
        } else {
            GridGraph::new_2d(h, w, source, sink, caps)
        }
    }
}

/// The grid a solve works on: the caller's host copy, or an uploaded grid
/// (downloaded only if the host finisher needs it).
#[derive(Clone, Copy)]
enum Host<'a> {
    Given(&'a GridGraph),
    Uploaded(&'a WgpuGrid),
}

impl Host<'_> {
    fn finish(
        self,
        be: &WgpuBackend,
        f: impl FnOnce(&GridGraph) -> Result<GridCut>,
    ) -> Result<GridCut> {
        match self {
            Host::Given(g) => f(g),
            Host::Uploaded(d) => f(&d.download(be)?),
        }
    }
}

fn grid_cut(be: &WgpuBackend, g: &GridGraph) -> Result<GridCut> {
    let (rc, gin) = grid_upload(be, g)?;
    grid_solve(be, g.shape(), g.dirs().len(), rc, &gin, Host::Given(g))
}

/// Solves on the device from residuals `rc` (the neighbour capacities, used
/// up by the solve) and terminals `gin` (only read).
fn grid_solve(
    be: &WgpuBackend,
    shape: (usize, usize, usize),
    dirs: usize,
    rc: WgpuBuffer<i32>,
    gin: &WgpuBuffer<i32>,
    host: Host<'_>,
) -> Result<GridCut> {
    let (depth, height, width) = shape;
    let n = depth * height * width;
    let groups = be.grid((n as u64).div_ceil(WG))?;
    let ex = be.alloc::<i32>(n, "max_flow excess")?;
    let hgt = be.alloc::<u32>(n, "max_flow heights")?;
    let ctr = be.alloc::<u32>(4, "max_flow counters")?;
    let flow_words = 2 * groups[0] as usize * groups[1] as usize;
    let out = be.alloc::<u32>(flow_words.max(n.div_ceil(32)), "max_flow output")?;
    let sk = be.alloc::<i32>(n, "max_flow sink residuals")?;
    let base = Params {
        n: n as u32,
        width: width as u32,
        plane: (width * height) as u32,
        dirs: dirs as u32,
        depth: depth as u32,
        height: height as u32,
        goal: NONE,
        other: NONE,
        ..Default::default()
    };
    // The tiled sweep where its workgroup grid fits the adapter's limit and
    // a tile is full: on a grid less than 16 rows tall most of a 16 x 16
    // tile's invocations would idle (on a 1-row grid, 15 in 16; llvmpipe took
    // seconds a sweep on 1 x 200,000).
    let tiles = [
        width.div_ceil(RELAX_TILE),
        height.div_ceil(RELAX_TILE),
        depth,
    ];
    let max = be.limits().max_compute_workgroups_per_dimension as usize;
    let (relax, relax_groups) = if height >= RELAX_TILE && tiles.iter().all(|&t| t <= max) {
        (&GRID_RELAX_TILE, tiles.map(|t| t as u32))
    } else {
        (&GRID_RELAX, groups)
    };
    let p0 = be.flow_params(base, groups);
    let p1 = be.flow_params(Params { mode: 1, ..base }, groups);
    let s = Solve {
        be,
        bufs: vec![
            rc.raw(),
            ex.raw(),
            hgt.raw(),
            ctr.raw(),
            out.raw(),
            sk.raw(),
            gin.raw(),
        ],
        ctr: &ctr,
        groups,
        relax_init: &GRID_RELAX_INIT,
        relax,
        relax_groups,
        count: &GRID_COUNT,
        push: GRID_PASS,
        spent: Cell::new(0),
        budget: be.flow_budget(),
        max_levels: finish::max_levels(n),
        exact: false,
    };
    let mut enc = be.encoder("max_flow init");
    enc.dispatch(&GRID_INIT, &s.args(&p0), groups)?;
    enc.submit();
    // The cut: everything reachable from the nodes left with excess.
    let cut = match s.run([&p0, &p0])? {
        Phase::Done => s.relabel(&p1, false)?,
        Phase::OverBudget => None,
    };
    if cut.is_none() {
        let wide = |v: Vec<i32>| v.into_iter().map(i64::from).collect::<Vec<_>>();
        let state = (
            wide(be.download_vec(&rc)?),
            wide(be.download_vec(&sk)?),
            wide(be.download_vec(&ex)?),
        );
        return host.finish(be, |g| finish::grid_cut(g, state.0, state.1, state.2));
    }
    let source_side = s.labels(&p1, n, &out)?;
    // The flow value: per workgroup 64-bit sums of what each node sent to t.
    let mut enc = be.encoder("max_flow value");
    enc.dispatch(&GRID_FLOW, &s.args(&p0), groups)?;
    enc.submit();
    let mut sums = vec![0u32; flow_words];
    be.download_into(&out, &mut sums)?;
    let flow = sums
        .chunks_exact(2)
        .map(|w| w[0] as u64 | (w[1] as u64) << 32)
        .try_fold(0i64, |acc, x| acc.checked_add(i64::try_from(x).ok()?))
        .ok_or_else(|| failure("max_flow", "the flow value overflowed i64"))?;
    Ok(GridCut { flow, source_side })
}

/// A CSR residual graph of a network: slots grouped by tail.
struct Csr {
    first: Vec<u32>,
    head: Vec<u32>,
    rev: Vec<u32>,
    /// Initial residuals, with the arcs out of s saturated.
    rc: Vec<i32>,
    /// Initial excesses (what the saturated arcs out of s delivered).
    ex: Vec<i32>,
    /// The forward slot of each input arc.
    slot: Vec<u32>,
}

fn network_csr(g: &FlowNetwork) -> Result<Csr> {
    let n = g.nodes();
    let arcs = g.arcs();
    let (s, t) = (g.source() as usize, g.sink() as usize);
    let max = i32::MAX as i64;
    let slots = 2 * arcs.len();
    if slots > u32::MAX as usize {
        return Err(Error::TooLarge {
            field: "residual arcs, 2 per arc (u32 indices in WGSL)",
            value: slots as u128,
            limit: u32::MAX as u128,
        });
    }
    let mut inflow = vec![0i64; n];
    let mut deg = vec![0u32; n + 1];
    for (i, a) in arcs.iter().enumerate() {
        if a.cap > max {
            return Err(unsupported_i32(format!("arcs[{i}].cap = {}", a.cap)));
        }
        if a.from != a.to {
            inflow[a.to as usize] += a.cap;
        }
        deg[a.from as usize + 1] += 1;
        deg[a.to as usize + 1] += 1;
    }
    if let Some(v) = (0..n).find(|&v| v != s && inflow[v] > max) {
        return Err(unsupported_i32(format!(
            "the capacity into node {v} ({})",
            inflow[v]
        )));
    }
    for v in 0..n {
        deg[v + 1] += deg[v];
    }
    let first = deg;
    let mut next: Vec<u32> = first[..n].to_vec();
    let mut head = vec![0u32; slots];
    let mut rev = vec![0u32; slots];
    let mut rc = vec![0i32; slots];
    let mut ex = vec![0i32; n];
    let mut slot = vec![0u32; arcs.len()];
    for (i, a) in arcs.iter().enumerate() {
        let (u, v) = (a.from as usize, a.to as usize);
        let f = next[u];
        next[u] += 1;
        let b = next[v];
        next[v] += 1;
        head[f as usize] = v as u32;
        head[b as usize] = u as u32;
        rev[f as usize] = b;
        rev[b as usize] = f;
        slot[i] = f;
        let c = a.cap as i32;
        if u == s && v != s {
            // Saturated from the start; t's excess is not kept (see the shader).
            rc[b as usize] = c;
            if v != t {
                ex[v] += c;
            }
        } else {
            rc[f as usize] = c;
        }
    }
    Ok(Csr {
        first,
        head,
        rev,
        rc,
        ex,
        slot,
    })
}

fn network_flow(be: &WgpuBackend, g: &FlowNetwork) -> Result<NetworkFlow> {
    let n = g.nodes();
    // Excesses and heights are two arrays of n each, indexed in u32.
    if 2 * n as u64 > u32::MAX as u64 {
        return Err(Error::TooLarge {
            field: "nodes (wgpu keeps 2 counters per node, u32 indices)",
            value: n as u128,
            limit: (u32::MAX / 2) as u128,
        });
    }
    let (s, t) = (g.source(), g.sink());
    let csr = network_csr(g)?;
    let groups = be.grid((n as u64).div_ceil(WG))?;
    let rc = be.upload_named(&csr.rc, "max_flow residuals")?;
    // Excesses, then the incoming counters of a push launch (zero).
    let mut ex_host = csr.ex;
    ex_host.resize(2 * n, 0);
    let ex = be.upload_named(&ex_host, "max_flow excess")?;
    drop(ex_host);
    let hgt = be.alloc::<u32>(2 * n, "max_flow heights")?;
    let ctr = be.alloc::<u32>(4, "max_flow counters")?;
    let out = be.alloc::<u32>(1, "max_flow output")?;
    let first = be.upload_named(&csr.first, "max_flow first")?;
    let head = be.upload_named(&csr.head, "max_flow head")?;
    let rev = be.upload_named(&csr.rev, "max_flow rev")?;
    let solve = Solve {
        be,
        bufs: vec![
            rc.raw(),
            ex.raw(),
            hgt.raw(),
            ctr.raw(),
            out.raw(),
            first.raw(),
            head.raw(),
            rev.raw(),
        ],
        ctr: &ctr,
        groups,
        relax_init: &NET_RELAX_INIT,
        relax: &NET_RELAX,
        relax_groups: groups,
        count: &NET_COUNT,
        push: NET_PASS,
        spent: Cell::new(0),
        budget: be.flow_budget(),
        max_levels: finish::max_levels(n),
        exact: true,
    };
    // A maximum preflow towards t (s never moves), or as far as the budget
    // goes; the passes alternate the halves of the height buffer.
    let n32 = n as u32;
    let base = Params {
        n: n32,
        goal: t,
        other: s,
        ..Default::default()
    };
    let even = be.flow_params(
        Params {
            hcur: 0,
            hnext: n32,
            ..base
        },
        groups,
    );
    let odd = be.flow_params(
        Params {
            hcur: n32,
            hnext: 0,
            ..base
        },
        groups,
    );
    solve.run([&even, &odd])?;
    // The host returns the stranded excess to s and finds the cut, whether
    // the device finished the preflow or ran out of budget.
    let res = be.download_vec(&rc)?;
    let arc_flow = g
        .arcs()
        .iter()
        .zip(&csr.slot)
        .map(|(a, &f)| a.cap - res[f as usize] as i64)
        .collect();
    drop(res);
    finish::network_flow(g, arc_flow)
}

impl MaxFlowDevice for WgpuBackend {
    type DeviceGrid = WgpuGrid;

    fn upload_grid(&self, g: &GridGraph) -> Result<WgpuGrid> {
        let (planes, terminals) = self.scoped("max_flow upload", || grid_upload(self, g))?;
        Ok(WgpuGrid {
            shape: g.shape(),
            dirs: g.dirs().len(),
            planes,
            terminals,
        })
    }

    /// The solve runs on the device as [`MaxFlow::grid_cut`]'s does, on a
    /// copy of the residuals (the uploaded grid stays as it was); the shader
    /// packs the cut as bits, which are unpacked on the host and uploaded
    /// as one byte per node.
    fn grid_cut_device(&self, g: &WgpuGrid) -> Result<(i64, WgpuBuffer<u8>)> {
        let n = g.nodes();
        let (depth, height, width) = g.shape;
        let cut = if n == 0 {
            GridCut {
                flow: 0,
                source_side: Vec::new(),
            }
        } else if finish::grid_is_thin(depth, height, width) {
            finish::grid_cut_from_start(&g.download(self)?)?
        } else {
            self.scoped("max_flow", || {
                let rc = self.alloc::<i32>(g.planes.len(), "max_flow residuals")?;
                let mut enc = self.encoder("max_flow residuals");
                enc.copy(&g.planes, 0, &rc, 0, g.planes.len())?;
                enc.submit();
                grid_solve(self, g.shape, g.dirs, rc, &g.terminals, Host::Uploaded(g))
            })?
        };
        let bytes: Vec<u8> = cut.source_side.iter().map(|&b| u8::from(b)).collect();
        Ok((cut.flow, self.upload_named(&bytes, "max_flow labels")?))
    }
}

impl MaxFlow for WgpuBackend {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        // GridGraph is valid by construction; only the i32 bound is ours.
        if g.nodes() == 0 {
            return Ok(GridCut {
                flow: 0,
                source_side: Vec::new(),
            });
        }
        let (depth, height, width) = g.shape();
        if finish::grid_is_thin(depth, height, width) {
            // Deeper than the device may search: the host from the start.
            return finish::grid_cut_from_start(g);
        }
        self.scoped("max_flow", || grid_cut(self, g))
    }

    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        // FlowNetwork is valid by construction (s != t, endpoints, capacities).
        self.scoped("max_flow", || network_flow(self, g))
    }
}

#[cfg(test)]
mod tests {
    use trident_core::{Error, FlowArc, FlowNetwork, GridGraph, MaxFlow};

    use crate::WgpuBackend;

    /// Capacities whose residuals or excesses could pass i32::MAX are refused
    /// with Unsupported (so the facade moves on), never wrapped; just below
    /// the bound they are solved.
    #[test]
    fn capacities_beyond_i32_are_unsupported() {
        let b = match WgpuBackend::new() {
            Ok(b) => b,
            Err(e) => return println!("SKIPPED: {e}"),
        };
        let max = i32::MAX as i64;
        let grid =
            |c: i64| GridGraph::new_2d(1, 2, vec![c, 0], vec![0, c], vec![c, 0, 0, 0, 0, 0, 0, 0]);
        let r = b.grid_cut(&grid(max + 1).unwrap());
        assert!(
            matches!(r, Err(Error::Unsupported(ref m)) if m.contains("i32")),
            "{r:?}"
        );
        let cut = b.grid_cut(&grid(max).unwrap()).unwrap();
        // Everything saturated: nothing is reachable from s.
        assert_eq!((cut.flow, cut.source_side), (max, vec![false, false]));
        let net = |c: i64| {
            let a = |from, to| FlowArc { from, to, cap: c };
            FlowNetwork::new(3, 0, 2, vec![a(0, 1), a(0, 1), a(1, 2)])
        };
        let r = b.network_flow(&net(max / 2 + 1).unwrap());
        assert!(
            matches!(r, Err(Error::Unsupported(ref m)) if m.contains("i32")),
            "{r:?}"
        );
        let f = b.network_flow(&net(max / 2).unwrap()).unwrap();
        assert_eq!(f.flow, max / 2);
    }
}

#[cfg(test)]
mod shader_constants {
    use super::*;
    use crate::shader_text::{constant, struct_size, workgroup_size};

    /// The workgroup sizes, tile, marker and uniform-block layout this file
    /// repeats from `shaders/max_flow.wgsl`.
    #[test]
    fn constants_match_the_shader() {
        let src = include_str!("../shaders/max_flow.wgsl");
        assert_eq!(constant(src, "NONE"), NONE as f64);
        assert_eq!(constant(src, "TILE"), RELAX_TILE as f64);
        let tile = RELAX_TILE as u32;
        for k in KERNELS {
            let want = if k.entry == "grid_relax_tile" {
                [tile, tile, 1]
            } else {
                [WG as u32, 1, 1]
            };
            assert_eq!(workgroup_size(src, k.entry), want, "{}", k.entry);
        }
        assert_eq!(struct_size(src, "Params"), std::mem::size_of::<Params>());
    }
}
