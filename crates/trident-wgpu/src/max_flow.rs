//! MaxFlow for [`WgpuBackend`]: parallel push-relabel with global relabels
//! (`shaders/max_flow.wgsl`), for grids and for general networks.
//!
//! Design:
//! - Push: Hong's lock-free push-relabel, one invocation per node and pass,
//!   excesses and residuals updated with atomics. A node only ever lowers its
//!   own excess, residuals and height, so what it reads is safe to act on;
//!   the schedule changes the order of pushes, never the answer.
//! - Global relabel: exact breadth-first distances to the target over
//!   residual arcs, computed by in-place Bellman-Ford sweeps (unit lengths)
//!   until a sweep changes nothing. The host runs sweeps in doubling batches
//!   and reads one counter per batch. Nodes that cannot reach the target get
//!   `INF` and stop. Between relabels the host queues twice as many push
//!   passes as the last relabel took sweeps (clamped), which keeps relabeling
//!   to about a third of the work. Sweeps on grids run on 16 x 16 tiles that
//!   iterate 16 Jacobi rounds in workgroup memory, so a distance crosses a
//!   tile per sweep rather than a node.
//! - The solve stops when an exact relabel finds no node with excess that can
//!   reach the target: the preflow is then maximum, whatever the pushes did.
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
//!   tail's range and a reverse slot in its head's). Phase 1 pushes towards t;
//!   phase 2 runs the same kernels with s as the target, which returns the
//!   stranded excess and turns the preflow into a flow. Per-arc flows are
//!   `cap - residual`, the flow value is the net flow into t (both in i64 on
//!   the host), and the cut is the set reachable from s.
//!
//! Integers: WGSL has only 32-bit ones, so residuals and excesses are i32.
//! The host checks, before anything goes up, that no value can exceed
//! `i32::MAX`: per node the source capacity plus all capacities into it (a
//! bound on its excess), per arc pair the sum of both directions (a bound on
//! either residual), per arc its capacity. A graph that fails the check gets
//! [`Error::Unsupported`] naming the limit (the facade then runs it on the
//! next backend); nothing ever wraps. The flow value itself is summed in 64
//! bits.

use trident_core::{Error, FlowNetwork, GridCut, GridGraph, MaxFlow, NetworkFlow, Result};

use crate::WgpuBackend;
use crate::buffer::WgpuBuffer;
use crate::context::failure;
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
];

/// Invocations per workgroup of every kernel here.
const WG: u64 = 256;
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
const PUSH_PASSES: (u32, u32) = (16, 1024);
/// Relabel rounds after which the solve is declared stuck (a bug, never seen).
const MAX_ROUNDS: u32 = 1_000_000;

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
    seed_excess: u32,
    row: u32,
    _pad: u32,
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
    push: &'static Kernel,
}

impl Solve<'_> {
    fn args<'b>(&'b self, p: &'b wgpu::Buffer) -> Vec<Arg<'b>> {
        let mut a = vec![Arg::raw(p)];
        a.extend(self.bufs.iter().map(|b| Arg::raw(b)));
        a
    }

    /// Exact distances from the relax kernel's seeds (`mode` in `p`); returns
    /// the number of sweeps and, with `count`, the active nodes left.
    fn relabel(&self, p: &wgpu::Buffer, count: bool) -> Result<(u32, u32)> {
        let args = self.args(p);
        let mut enc = self.be.encoder("max_flow relabel");
        enc.dispatch(self.relax_init, &args, self.groups)?;
        let mut batch = FIRST_BATCH;
        let mut sweeps = 0u32;
        let mut host = [0u32; 2];
        loop {
            for _ in 1..batch {
                enc.dispatch(self.relax, &args, self.relax_groups)?;
            }
            enc.zero(self.ctr);
            enc.dispatch(self.relax, &args, self.relax_groups)?;
            if count {
                enc.dispatch(self.count, &args, self.groups)?;
            }
            enc.submit();
            sweeps += batch;
            self.be.download_into(self.ctr, &mut host)?;
            if host[0] == 0 {
                return Ok((sweeps, host[1]));
            }
            batch = (batch * 2).min(MAX_BATCH);
            enc = self.be.encoder("max_flow relabel");
        }
    }

    /// Push passes and global relabels until no node with excess can reach
    /// the target (`p` has mode 0).
    fn run(&self, p: &wgpu::Buffer) -> Result<()> {
        let args = self.args(p);
        let trace = std::env::var_os("TRIDENT_WGPU_TRACE").is_some();
        let (mut total_sweeps, mut total_passes) = (0u64, 0u64);
        for round in 0..MAX_ROUNDS {
            let (sweeps, active) = self.relabel(p, true)?;
            total_sweeps += sweeps as u64;
            if active == 0 {
                if trace {
                    eprintln!(
                        "max_flow: {round} rounds, {total_sweeps} relabel sweeps, {total_passes} push passes"
                    );
                }
                return Ok(());
            }
            let passes = (2 * sweeps).clamp(PUSH_PASSES.0, PUSH_PASSES.1);
            total_passes += passes as u64;
            let mut enc = self.be.encoder("max_flow push");
            for _ in 0..passes {
                enc.dispatch(self.push, &args, self.groups)?;
            }
            enc.submit();
        }
        Err(failure(
            "max_flow",
            format!("push-relabel did not finish in {MAX_ROUNDS} rounds"),
        ))
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

fn grid_cut(be: &WgpuBackend, g: &GridGraph) -> Result<GridCut> {
    let n = g.nodes();
    let (rc, gin) = grid_upload(be, g)?;
    let (depth, height, width) = g.shape();
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
        dirs: g.dirs().len() as u32,
        depth: depth as u32,
        height: height as u32,
        goal: NONE,
        other: NONE,
        ..Default::default()
    };
    // The tiled sweep where its workgroup grid fits the adapter's limit.
    let tiles = [width.div_ceil(16), height.div_ceil(16), depth];
    let max = be.limits().max_compute_workgroups_per_dimension as usize;
    let (relax, relax_groups) = if tiles.iter().all(|&t| t <= max) {
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
        push: &GRID_PUSH,
    };
    let mut enc = be.encoder("max_flow init");
    enc.dispatch(&GRID_INIT, &s.args(&p0), groups)?;
    enc.submit();
    s.run(&p0)?;
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
    // The cut: everything reachable from the nodes left with excess.
    s.relabel(&p1, false)?;
    let source_side = s.labels(&p1, n, &out)?;
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
    let (s, t) = (g.source(), g.sink());
    let csr = network_csr(g)?;
    let groups = be.grid((n as u64).div_ceil(WG))?;
    let rc = be.upload_named(&csr.rc, "max_flow residuals")?;
    let ex = be.upload_named(&csr.ex, "max_flow excess")?;
    let hgt = be.alloc::<u32>(n, "max_flow heights")?;
    let ctr = be.alloc::<u32>(4, "max_flow counters")?;
    let out = be.alloc::<u32>(n.div_ceil(32), "max_flow output")?;
    let first = be.upload_named(&csr.first, "max_flow first")?;
    let head = be.upload_named(&csr.head, "max_flow head")?;
    let rev = be.upload_named(&csr.rev, "max_flow rev")?;
    let base = Params {
        n: n as u32,
        ..Default::default()
    };
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
        push: &NET_PUSH,
    };
    // Phase 1: a maximum preflow towards t (s never moves).
    solve.run(&be.flow_params(
        Params {
            goal: t,
            other: s,
            ..base
        },
        groups,
    ))?;
    // Phase 2: the stranded excess back to s (t never moves).
    solve.run(&be.flow_params(
        Params {
            goal: s,
            other: t,
            ..base
        },
        groups,
    ))?;
    let left = be.download_vec(&ex)?;
    if let Some(v) = (0..n).find(|&v| v as u32 != s && v as u32 != t && left[v] != 0) {
        return Err(failure(
            "max_flow",
            format!("node {v} kept excess {} after phase 2", left[v]),
        ));
    }
    let res = be.download_vec(&rc)?;
    let arcs = g.arcs();
    let arc_flow: Vec<i64> = arcs
        .iter()
        .zip(&csr.slot)
        .map(|(a, &f)| a.cap - res[f as usize] as i64)
        .collect();
    let flow = arcs
        .iter()
        .zip(&arc_flow)
        .map(|(a, &f)| match (a.to == t, a.from == t) {
            (true, false) => f,
            (false, true) => -f,
            _ => 0,
        })
        .sum();
    // The cut: everything reachable from s.
    let p1 = be.flow_params(
        Params {
            mode: 1,
            goal: s,
            other: NONE,
            ..base
        },
        groups,
    );
    solve.relabel(&p1, false)?;
    let source_side = solve.labels(&p1, n, &out)?;
    Ok(NetworkFlow {
        flow,
        source_side,
        arc_flow,
    })
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
        self.scoped("max_flow", || grid_cut(self, g))
    }

    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        // FlowNetwork is valid by construction (s != t, endpoints, capacities).
        self.scoped("max_flow", || network_flow(self, g))
    }
}

#[cfg(test)]
mod tests {
    use trident_core::{Arc, Error, FlowNetwork, GridGraph, MaxFlow};

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
            let a = |from, to| Arc { from, to, cap: c };
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
