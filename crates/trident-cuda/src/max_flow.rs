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
//! The canonical cut: the kernels stop at a maximum *preflow*. Returning the
//! excess to the source along the flow paths that brought it raises the
//! residual of exactly those paths, so the nodes reachable from the source in
//! the residual graph of the resulting maximum flow are the nodes reachable in
//! the preflow's residual graph from the source or from any node with excess.
//! A forward BFS on the device computes that set. For networks, the per-arc
//! flows must also be a flow: the host returns the excess to the source by
//! walking flow-carrying arcs backwards from each excess node (cancelling any
//! flow cycle met on the way), which changes neither the value nor the cut.
//!
//! Counters are `i32` when the sum of all capacities fits (half the memory
//! traffic), else `i64`; every residual, excess and partial flow is bounded
//! by that sum, so nothing wraps. `trident-core` already guarantees the sum
//! fits `i64`, so the `i64` kernels take every valid input.

use std::sync::atomic::Ordering;

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use trident_core::{Element, Error, FlowNetwork, GridCut, GridGraph, MaxFlow, NetworkFlow, Result};

use crate::CudaBackend;
use crate::device::{CudaBuffer, KernelSource, driver_error};

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
    "mf_grid_flow_i32",
    "mf_cut_init_i32",
    "mf_net_bfs_init_i32",
    "mf_net_level_i32",
    "mf_net_collect_i32",
    "mf_net_push_i32",
    "mf_net_relabel_i32",
    "mf_net_cut_init_i32",
    "mf_grid_init_i64",
    "mf_grid_bfs_init_i64",
    "mf_grid_level_i64",
    "mf_grid_collect_i64",
    "mf_grid_push_i64",
    "mf_grid_relabel_i64",
    "mf_grid_flow_i64",
    "mf_cut_init_i64",
    "mf_net_bfs_init_i64",
    "mf_net_level_i64",
    "mf_net_collect_i64",
    "mf_net_push_i64",
    "mf_net_relabel_i64",
    "mf_net_cut_init_i64",
    "mf_labels",
];

/// Push-relabel iterations between two global relabels, by default.
///
/// Measured on an H100 (`flow_bench`, cuda-flow notes, runs 1-3):
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
/// host-to-host (cuda-flow notes, run 3): 282 ms at period 48, 186 ms at
/// 128, 211 ms at 384; at 16 (run 2) 0.5 s, with 120-136 global relabels
/// and 70-90K BFS levels in all.
pub const DEFAULT_NETWORK_RELABEL_PERIOD: u32 = 128;

/// Global relabels after which a solve gives up with an error. Each round
/// after a global relabel moves flow, so this is never reached by a correct
/// kernel; it turns a bug into an error instead of a hang.
const MAX_ROUNDS: u32 = 1 << 20;

const THREADS: u32 = 256;

/// The residual counter of the kernels: `i32` or `i64`.
trait Counter: Element + Copy + Into<i64> + TryFrom<i64> {
    /// Suffix of the kernel names.
    const SFX: &'static str;
}
impl Counter for i32 {
    const SFX: &'static str = "i32";
}
impl Counter for i64 {
    const SFX: &'static str = "i64";
}

/// `true` when `i32` counters hold every value a solve with capacities
/// summing to `total` can produce.
fn fits_i32(total: i64) -> bool {
    total <= i32::MAX as i64
}

fn to_counter<C: Counter>(v: i64) -> Result<C> {
    C::try_from(v).map_err(|_| Error::TooLarge {
        field: "sum of all capacities (device counter)",
        value: v.max(0) as u128,
        limit: i32::MAX as u128,
    })
}

fn count_u32(field: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        field,
        value: n as u128,
        limit: u32::MAX as u128,
    })
}

/// A grid graph uploaded to the device (capacities as given, `i64`).
pub struct GridOnDevice {
    w: u32,
    h: u32,
    d: u32,
    dirs: u32,
    n: usize,
    total: i64,
    source: CudaBuffer<i64>,
    sink: CudaBuffer<i64>,
    caps: CudaBuffer<i64>,
}

impl GridOnDevice {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.n
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

impl CudaBackend {
    /// Sets the number of push-relabel iterations between global relabels
    /// (tuning and benchmarks; results do not depend on it). 0 restores the
    /// default.
    pub fn set_flow_relabel_period(&self, k: u32) {
        let k = if k == 0 { DEFAULT_RELABEL_PERIOD } else { k };
        self.flow_period.store(k, Ordering::Relaxed);
    }

    /// Sets the number of push-relabel iterations between global relabels
    /// on networks (tuning; results do not depend on it). 0 restores the
    /// default.
    pub fn set_network_relabel_period(&self, k: u32) {
        let k = if k == 0 {
            DEFAULT_NETWORK_RELABEL_PERIOD
        } else {
            k
        };
        self.net_period.store(k, Ordering::Relaxed);
    }

    fn flow_period(&self) -> u32 {
        self.flow_period.load(Ordering::Relaxed).max(1)
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

    fn work(&self, n: usize) -> Result<Work> {
        let lists_len = n.checked_mul(3).ok_or(Error::TooLarge {
            field: "max_flow list slots",
            value: 3 * n as u128,
            limit: usize::MAX as u128,
        })?;
        Ok(Work {
            n,
            hgt: self.alloc::<u32>(n, "max_flow heights")?,
            stamp: self.alloc_zeroed_named::<u32>(n, "max_flow list stamps")?,
            lists: self.alloc::<u32>(lists_len, "max_flow active lists")?,
            counts: self.alloc_zeroed_named::<u32>(3, "max_flow list counts")?,
        })
    }

    /// Runs BFS levels from the frontier in list slot 0 until a frontier is
    /// empty, queueing them in batches (one count read back per batch);
    /// returns the number of levels run.
    fn mf_bfs(
        &self,
        wk: &Work,
        f: &CudaFunction,
        lv: &Level,
        forward: u32,
        batch: u32,
    ) -> Result<u32> {
        let cfg = self.mf_blocks(wk.n);
        let (hp, lp, cp) = (wk.hgt.ptr(), wk.lists.ptr(), wk.counts.ptr());
        let mut counts = [0u32; 3];
        let mut step = 0u32;
        let mut batch = batch.max(8);
        loop {
            for _ in 0..batch {
                {
                    let mut l = self.stream().launch_builder(f);
                    match lv {
                        Level::Grid { w, h, d, dirs, rc } => {
                            l.arg(w).arg(h).arg(d).arg(dirs).arg(rc);
                        }
                        Level::Net {
                            n,
                            s,
                            start,
                            head,
                            rev,
                            res,
                        } => {
                            l.arg(n).arg(s).arg(start).arg(head).arg(rev).arg(res);
                        }
                    }
                    l.arg(&hp).arg(&lp).arg(&cp).arg(&step).arg(&forward);
                    // SAFETY: the parameters of mf_grid_level / mf_net_level in
                    // order; every buffer is sized for the graph.
                    unsafe { l.launch(cfg) }.map_err(driver_error("launch max_flow bfs level"))?;
                }
                step += 1;
            }
            self.download_into(&wk.counts, &mut counts)?;
            if counts[(step % 3) as usize] == 0 {
                return Ok(step);
            }
            batch = (batch * 2).min(1024);
        }
    }

    /// Uploads a grid for [`CudaBackend::grid_cut_device`].
    pub fn upload_grid(&self, g: &GridGraph) -> Result<GridOnDevice> {
        let (d, h, w) = g.shape();
        let n = g.nodes();
        count_u32("grid nodes", n)?;
        // The sum fits i64: GridGraph checked it when it was built.
        let total = [g.source(), g.sink(), g.caps()]
            .iter()
            .flat_map(|a| a.iter())
            .fold(0i64, |acc, &c| acc.saturating_add(c));
        Ok(GridOnDevice {
            w: w as u32,
            h: h as u32,
            d: d as u32,
            dirs: g.dirs().len() as u32,
            n,
            total,
            source: self.upload_named(g.source(), "max_flow source capacities")?,
            sink: self.upload_named(g.sink(), "max_flow sink capacities")?,
            caps: self.upload_named(g.caps(), "max_flow neighbour capacities")?,
        })
    }

    /// Max flow and canonical min cut of an uploaded grid, on the device: the
    /// flow value and one byte per node (1 = source side), left on the device.
    pub fn grid_cut_device(&self, g: &GridOnDevice) -> Result<(i64, CudaBuffer<u8>)> {
        if fits_i32(g.total) {
            self.grid_solve::<i32>(g)
        } else {
            self.grid_solve::<i64>(g)
        }
    }

    fn grid_solve<C: Counter>(&self, g: &GridOnDevice) -> Result<(i64, CudaBuffer<u8>)> {
        let n = g.n;
        let mut labels = self.alloc::<u8>(n, "max_flow labels")?;
        if n == 0 {
            return Ok((0, labels));
        }
        to_counter::<C>(g.total)?;
        let sfx = C::SFX;
        let fns = Fns {
            level: self.mf_fn(&format!("mf_grid_level_{sfx}"))?,
            push: self.mf_fn(&format!("mf_grid_push_{sfx}"))?,
            relabel: self.mf_fn(&format!("mf_grid_relabel_{sfx}"))?,
        };
        let dirs = g.dirs as usize;
        let rc = self.alloc::<C>(dirs * n, "max_flow residuals")?;
        let rt = self.alloc::<C>(n, "max_flow sink residuals")?;
        let e = self.alloc::<C>(n, "max_flow excess")?;
        let mut wk = self.work(n)?;
        let (w, h, d, nd) = (g.w, g.h, g.d, g.dirs);
        let n64 = n as u64;
        let (rcp, rtp, ep) = (rc.ptr(), rt.ptr(), e.ptr());
        let (hp, sp, lp, cp) = (
            wk.hgt.ptr(),
            wk.stamp.ptr(),
            wk.lists.ptr(),
            wk.counts.ptr(),
        );
        let sweep = self.mf_blocks(n);
        {
            let f = self.mf_fn(&format!("mf_grid_init_{sfx}"))?;
            let (srcp, snkp, capp) = (g.source.ptr(), g.sink.ptr(), g.caps.ptr());
            let mut l = self.stream().launch_builder(&f);
            l.arg(&w).arg(&h).arg(&d).arg(&nd);
            l.arg(&srcp)
                .arg(&snkp)
                .arg(&capp)
                .arg(&rcp)
                .arg(&rtp)
                .arg(&ep);
            // SAFETY: parameters in the order of mf_grid_init; every buffer
            // holds n (rc: dirs * n) elements.
            unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_grid_init"))?;
        }
        let bfs_init = self.mf_fn(&format!("mf_grid_bfs_init_{sfx}"))?;
        let collect = self.mf_fn(&format!("mf_grid_collect_{sfx}"))?;
        let period = self.flow_period();
        let mut tag = 0u32;
        let mut depth = 32u32;
        let mut rounds = 0u32;
        let mut levels = 0u64;
        let lv = Level::Grid {
            w,
            h,
            d,
            dirs: nd,
            rc: rcp,
        };
        loop {
            rounds += 1;
            if rounds > MAX_ROUNDS {
                return Err(Error::Backend(
                    "max_flow: push-relabel did not converge (a kernel bug)".into(),
                ));
            }
            // Global relabel.
            self.memset_zero(&mut wk.counts)?;
            {
                let mut l = self.stream().launch_builder(&bfs_init);
                l.arg(&n64).arg(&rtp).arg(&hp).arg(&lp).arg(&cp);
                // SAFETY: parameters in the order of mf_grid_bfs_init.
                unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_grid_bfs_init"))?;
            }
            depth = self.mf_bfs(&wk, &fns.level, &lv, 0, depth + 8)?;
            levels += depth as u64;
            // Active nodes.
            self.memset_zero(&mut wk.counts)?;
            {
                let mut l = self.stream().launch_builder(&collect);
                l.arg(&n64).arg(&ep).arg(&hp).arg(&lp).arg(&cp);
                // SAFETY: parameters in the order of mf_grid_collect.
                unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_grid_collect"))?;
            }
            let mut counts = [0u32; 3];
            self.download_into(&wk.counts, &mut counts)?;
            if counts[0] == 0 {
                break;
            }
            let lcfg = self.mf_blocks(counts[0] as usize);
            for step in 0..period {
                tag = tag.wrapping_add(1).max(1);
                let mut l = self.stream().launch_builder(&fns.push);
                l.arg(&w)
                    .arg(&h)
                    .arg(&d)
                    .arg(&nd)
                    .arg(&rcp)
                    .arg(&rtp)
                    .arg(&ep)
                    .arg(&hp);
                l.arg(&lp).arg(&cp).arg(&step).arg(&tag).arg(&sp);
                // SAFETY: parameters in the order of mf_grid_push.
                unsafe { l.launch(lcfg) }.map_err(driver_error("launch mf_grid_push"))?;
                let mut l = self.stream().launch_builder(&fns.relabel);
                l.arg(&w)
                    .arg(&h)
                    .arg(&d)
                    .arg(&nd)
                    .arg(&rcp)
                    .arg(&rtp)
                    .arg(&ep)
                    .arg(&hp);
                l.arg(&lp).arg(&cp).arg(&step).arg(&tag).arg(&sp);
                // SAFETY: parameters in the order of mf_grid_relabel.
                unsafe { l.launch(lcfg) }.map_err(driver_error("launch mf_grid_relabel"))?;
            }
        }
        // Flow value.
        trace(format_args!(
            "grid: {rounds} global relabels, {levels} BFS levels, {} push-relabel iterations",
            (rounds - 1) * period
        ));
        let out = self.alloc_zeroed_named::<i64>(1, "max_flow value")?;
        {
            let f = self.mf_fn(&format!("mf_grid_flow_{sfx}"))?;
            let (snkp, op) = (g.sink.ptr(), out.ptr());
            let mut l = self.stream().launch_builder(&f);
            l.arg(&n64).arg(&snkp).arg(&rtp).arg(&op);
            // SAFETY: parameters in the order of mf_grid_flow.
            unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_grid_flow"))?;
        }
        // Canonical cut: forward BFS from the nodes with excess.
        self.memset_zero(&mut wk.counts)?;
        {
            let f = self.mf_fn(&format!("mf_cut_init_{sfx}"))?;
            let mut l = self.stream().launch_builder(&f);
            l.arg(&n64).arg(&ep).arg(&hp).arg(&lp).arg(&cp);
            // SAFETY: parameters in the order of mf_cut_init.
            unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_cut_init"))?;
        }
        self.mf_bfs(&wk, &fns.level, &lv, 1, 32)?;
        self.mf_labels(&wk, &mut labels)?;
        let mut flow = [0i64];
        self.download_into(&out, &mut flow)?;
        Ok((flow[0], labels))
    }

    fn mf_labels(&self, wk: &Work, labels: &mut CudaBuffer<u8>) -> Result<()> {
        let f = self.mf_fn("mf_labels")?;
        let (n64, hp, op) = (wk.n as u64, wk.hgt.ptr(), labels.ptr());
        let mut l = self.stream().launch_builder(&f);
        l.arg(&n64).arg(&hp).arg(&op);
        // SAFETY: parameters in the order of mf_labels; both buffers hold n.
        unsafe { l.launch(self.mf_blocks(wk.n)) }.map_err(driver_error("launch mf_labels"))?;
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
        trace(format_args!(
            "network: CSR built and uploaded at {:.2} ms",
            t0.elapsed().as_secs_f64() * 1e3
        ));
        let mut wk = self.work(n)?;
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
        let sweep = self.mf_blocks(n);
        let lv = Level::Net {
            n: n32,
            s: s32,
            start: stp,
            head: hdp,
            rev: rvp,
            res: rsp,
        };
        let period = self.net_period.load(Ordering::Relaxed).max(1);
        let (mut tag, mut depth, mut rounds, mut levels) = (0u32, 32u32, 0u32, 0u64);
        loop {
            rounds += 1;
            if rounds > MAX_ROUNDS {
                return Err(Error::Backend(
                    "max_flow: push-relabel did not converge (a kernel bug)".into(),
                ));
            }
            self.memset_zero(&mut wk.counts)?;
            {
                let mut l = self.stream().launch_builder(&bfs_init);
                l.arg(&n32).arg(&t32).arg(&hp).arg(&lp).arg(&cp);
                // SAFETY: parameters in the order of mf_net_bfs_init.
                unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_net_bfs_init"))?;
            }
            depth = self.mf_bfs(&wk, &fns.level, &lv, 0, depth + 8)?;
            levels += depth as u64;
            self.memset_zero(&mut wk.counts)?;
            {
                let mut l = self.stream().launch_builder(&collect);
                l.arg(&n32)
                    .arg(&s32)
                    .arg(&t32)
                    .arg(&ep)
                    .arg(&hp)
                    .arg(&lp)
                    .arg(&cp);
                // SAFETY: parameters in the order of mf_net_collect.
                unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_net_collect"))?;
            }
            let mut counts = [0u32; 3];
            self.download_into(&wk.counts, &mut counts)?;
            if counts[0] == 0 {
                break;
            }
            let lcfg = self.mf_blocks(counts[0] as usize);
            for step in 0..period {
                tag = tag.wrapping_add(1).max(1);
                let mut l = self.stream().launch_builder(&fns.push);
                l.arg(&n32)
                    .arg(&s32)
                    .arg(&t32)
                    .arg(&stp)
                    .arg(&hdp)
                    .arg(&rvp)
                    .arg(&rsp);
                l.arg(&ep)
                    .arg(&hp)
                    .arg(&lp)
                    .arg(&cp)
                    .arg(&step)
                    .arg(&tag)
                    .arg(&sp);
                // SAFETY: parameters in the order of mf_net_push.
                unsafe { l.launch(lcfg) }.map_err(driver_error("launch mf_net_push"))?;
                let mut l = self.stream().launch_builder(&fns.relabel);
                l.arg(&n32).arg(&stp).arg(&hdp).arg(&rsp).arg(&ep).arg(&hp);
                l.arg(&lp).arg(&cp).arg(&step).arg(&tag).arg(&sp);
                // SAFETY: parameters in the order of mf_net_relabel.
                unsafe { l.launch(lcfg) }.map_err(driver_error("launch mf_net_relabel"))?;
            }
        }
        // Canonical cut on the device: forward BFS from s and the excess nodes.
        self.memset_zero(&mut wk.counts)?;
        {
            let f = self.mf_fn(&format!("mf_net_cut_init_{sfx}"))?;
            let mut l = self.stream().launch_builder(&f);
            l.arg(&n32)
                .arg(&s32)
                .arg(&t32)
                .arg(&ep)
                .arg(&hp)
                .arg(&lp)
                .arg(&cp);
            // SAFETY: parameters in the order of mf_net_cut_init.
            unsafe { l.launch(sweep) }.map_err(driver_error("launch mf_net_cut_init"))?;
        }
        self.mf_bfs(&wk, &fns.level, &lv, 1, 32)?;
        let mut labels = self.alloc::<u8>(n, "max_flow labels")?;
        self.mf_labels(&wk, &mut labels)?;
        trace(format_args!(
            "network: {rounds} global relabels, {levels} BFS levels, {} push-relabel iterations, device done at {:.2} ms",
            (rounds - 1) * period,
            t0.elapsed().as_secs_f64() * 1e3
        ));
        let side = self.download_vec(&labels)?;
        let res_back: Vec<C> = self.download_vec(&res_d)?;
        let e_back: Vec<C> = self.download_vec(&e_d)?;
        let flow: i64 = e_back[t].into();
        let mut arc_flow: Vec<i64> = arcs
            .iter()
            .enumerate()
            .map(|(i, a)| a.cap - res_back[pos[2 * i] as usize].into())
            .collect();
        let mut excess: Vec<i64> = e_back.iter().map(|&x| x.into()).collect();
        let t1 = std::time::Instant::now();
        return_excess(g, &mut arc_flow, &mut excess)?;
        trace(format_args!(
            "network: excess returned on the host in {:.2} ms",
            t1.elapsed().as_secs_f64() * 1e3
        ));
        Ok(NetworkFlow {
            flow,
            source_side: side.iter().map(|&b| b != 0).collect(),
            arc_flow,
        })
    }
}

/// Prints solver statistics to stderr when `TRIDENT_MF_TRACE` is set (for
/// the benchmark notes: how many relabels and levels a case needs).
fn trace(args: std::fmt::Arguments<'_>) {
    if std::env::var_os("TRIDENT_MF_TRACE").is_some() {
        eprintln!("max_flow trace: {args}");
    }
}

/// Turns a maximum preflow into a maximum flow: the excess of every node but
/// s and t goes back to s along arcs that carry flow into it, walked
/// backwards. A node on such a walk (not s) carries flow out, so it also has
/// flow in and the walk never sticks; meeting a node already on the walk
/// closes a flow cycle, which is cancelled (changing no excess). Each step
/// empties an arc or the excess, and arcs only lose flow, so the per-node
/// cursors over incoming arcs never move back.
fn return_excess(g: &FlowNetwork, flow: &mut [i64], excess: &mut [i64]) -> Result<()> {
    let n = g.nodes();
    let arcs = g.arcs();
    let (s, t) = (g.source() as usize, g.sink() as usize);
    if !excess
        .iter()
        .enumerate()
        .any(|(v, &x)| x > 0 && v != s && v != t)
    {
        return Ok(());
    }
    let mut start = vec![0usize; n + 1];
    for a in arcs {
        start[a.to as usize + 1] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut incoming = vec![0usize; arcs.len()];
    for (i, a) in arcs.iter().enumerate() {
        incoming[fill[a.to as usize]] = i;
        fill[a.to as usize] += 1;
    }
    let mut cursor = start[..n].to_vec();
    let mut on_walk = vec![usize::MAX; n];
    let stuck = || Error::Backend("max_flow: excess cannot be returned (a kernel bug)".into());
    for x in 0..n {
        if x == s || x == t {
            continue;
        }
        while excess[x] > 0 {
            // nodes[k] is the k-th node of the walk; walk[k] the arc into it.
            let mut nodes = vec![x];
            let mut walk: Vec<usize> = Vec::new();
            on_walk[x] = 0;
            while *nodes.last().ok_or_else(stuck)? != s {
                let v = *nodes.last().ok_or_else(stuck)?;
                while cursor[v] < start[v + 1] && flow[incoming[cursor[v]]] == 0 {
                    cursor[v] += 1;
                }
                if cursor[v] == start[v + 1] {
                    return Err(stuck());
                }
                let a = incoming[cursor[v]];
                let u = arcs[a].from as usize;
                if on_walk[u] != usize::MAX {
                    // Cycle u -> v -> ... -> u: arc a, then walk[k + 1..].
                    let k = on_walk[u];
                    let cyc = walk[k..].iter().copied().chain([a]);
                    let c = cyc.clone().map(|i| flow[i]).min().unwrap_or(0);
                    for i in cyc {
                        flow[i] -= c;
                    }
                    for &w in &nodes[k + 1..] {
                        on_walk[w] = usize::MAX;
                    }
                    nodes.truncate(k + 1);
                    walk.truncate(k);
                } else {
                    on_walk[u] = nodes.len();
                    nodes.push(u);
                    walk.push(a);
                }
            }
            let delta = walk
                .iter()
                .map(|&i| flow[i])
                .min()
                .unwrap_or(0)
                .min(excess[x]);
            for &i in &walk {
                flow[i] -= delta;
            }
            excess[x] -= delta;
            for &w in &nodes {
                on_walk[w] = usize::MAX;
            }
        }
    }
    Ok(())
}

impl MaxFlow for CudaBackend {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        // GridGraph is valid by construction (trident_core::flow checks it).
        let dev = self.upload_grid(g)?;
        let (flow, labels) = self.grid_cut_device(&dev)?;
        let side = self.download_vec(&labels)?;
        Ok(GridCut {
            flow,
            source_side: side.iter().map(|&b| b != 0).collect(),
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
    use trident_core::Arc;

    fn arc(from: u32, to: u32, cap: i64) -> Arc {
        Arc { from, to, cap }
    }

    /// A max preflow with excess stuck behind a flow cycle and a self-loop:
    /// s=0 -> 1 (5), 1 -> 2 (3), 2 -> t=3 (1), 1 -> 4 (2), 4 -> 1 (2), 2 -> 2 (4).
    #[test]
    fn return_excess_leaves_a_conserved_flow() {
        let g = FlowNetwork::new(
            5,
            0,
            3,
            vec![
                arc(0, 1, 5),
                arc(1, 2, 3),
                arc(2, 3, 1),
                arc(1, 4, 2),
                arc(4, 1, 2),
                arc(2, 2, 4),
            ],
        )
        .expect("valid");
        let mut flow = vec![5, 3, 1, 2, 2, 4];
        // Excess: node 1 gets 5 + 2, sends 3 + 2 -> 2; node 2 gets 3 (+4 -4), sends 1 -> 2.
        let mut excess = vec![0, 2, 2, 1, 0];
        return_excess(&g, &mut flow, &mut excess).expect("returnable");
        assert_eq!(&excess[1..3], &[0, 0]);
        let mut net = [0i64; 5];
        for (a, &f) in g.arcs().iter().zip(&flow) {
            assert!((0..=a.cap).contains(&f));
            net[a.from as usize] -= f;
            net[a.to as usize] += f;
        }
        assert_eq!(net, [-1, 0, 0, 1, 0]);
    }

    #[test]
    fn counters_pick_i32_only_when_the_sum_fits() {
        assert!(fits_i32(i32::MAX as i64));
        assert!(!fits_i32(i32::MAX as i64 + 1));
        assert!(to_counter::<i32>(1 << 40).is_err());
        assert_eq!(to_counter::<i64>(1 << 40).ok(), Some(1i64 << 40));
    }
}
