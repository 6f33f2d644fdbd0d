//! MaxFlow on grids across ranks.
//!
//! [`Sharded::grid_cut`] solves the (replicated) grid whole on rank 0's
//! device and hands the answer to every rank: one device's time and answer.
//!
//! [`Sharded::grid_cut_slabs`] cuts it instead, by region discharge (Delong
//! and Boykov's scheme): the grid is replicated, its layers (rows of a 2-D
//! grid, planes of a 3-D one) are cut into slabs, one per rank. Each round
//! every rank discharges its slab with push-relabel, heights of the
//! neighbouring slabs' boundary layers held fixed, flow pushed across a
//! boundary kept in an outbox; then neighbours swap outboxes and boundary
//! heights. After the rounds the ranks' residual states form one preflow of
//! the whole grid, which every rank completes with the exact sequential
//! finisher the GPU backends use (`trident_core::flow::finish::grid_cut`):
//! the same flow value and the same canonical cut as one device, whatever the
//! rounds left. It is exact but slow: the discharge runs on the host, and
//! flow crossing a slab boundary moves one round (one exchange) at a time. On
//! a 1024 x 1024 image, 2 CPU ranks took 2.5 s of rounds where one rank's
//! rayon solve takes 0.05 s; a slab solver on the device with halo exchange
//! is what would scale.
//!
//! General networks have no sharded form: they run on one device.

use std::collections::VecDeque;
use std::ops::Range;

use trident_core::flow::finish;
use trident_core::{Dir, GridCut, GridGraph, Result};

#[cfg(feature = "nccl")]
use trident_core::{DeviceMemory, Error};
#[cfg(feature = "nccl")]
use trident_cuda::{CudaBackend, CudaBuffer, GridLayers};

#[cfg(feature = "nccl")]
use crate::comm::DeviceRegion;
use crate::comm::{CommExt, ReduceOp};
use crate::sharded::{Sharded, even_split};

/// Height of a node that cannot reach the sink (within what it sees).
const INF: u32 = u32::MAX;

/// Rounds without fewer active nodes after which the ranks stop and hand
/// the rest to the finisher.
const STALL_ROUNDS: usize = 3;

/// One rank's view: the whole grid's arrays (only the slab and its ghost
/// layers are ever touched), its layers, and the layer geometry.
struct Slab<'g> {
    g: &'g GridGraph,
    n: usize,
    /// Nodes per layer.
    layer: usize,
    /// This rank's layers.
    layers: Range<usize>,
    /// The direction to the next and to the previous layer.
    up: Dir,
    down: Dir,
    res: Vec<i64>,
    sink: Vec<i64>,
    excess: Vec<i64>,
    height: Vec<u32>,
}

impl Slab<'_> {
    /// The slab and its ghost layers.
    fn seen(&self) -> Range<usize> {
        let own = self.owned();
        own.start.saturating_sub(self.layer)..(own.end + self.layer).min(self.n)
    }

    fn owned(&self) -> Range<usize> {
        self.layers.start * self.layer..self.layers.end * self.layer
    }

    /// Exact heights within the slab: breadth-first from the sink arcs and
    /// from the ghost layers (at their fixed heights), backwards along
    /// residual arcs.
    fn relabel_all(&mut self) {
        let own = self.owned();
        let n = self.n;
        for v in own.clone() {
            self.height[v] = INF;
        }
        let mut queue: VecDeque<usize> = VecDeque::new();
        for v in own.clone() {
            if self.sink[v] > 0 {
                self.height[v] = 1;
                queue.push_back(v);
            }
        }
        // Ghost nodes seed with their neighbours' heights; a label-correcting
        // search (heights only fall) settles the mixed start heights.
        for ghost in self.ghosts() {
            if self.height[ghost] != INF {
                queue.push_back(ghost);
            }
        }
        while let Some(u) = queue.pop_front() {
            let hu = self.height[u];
            for &dir in self.g.dirs() {
                // v -> u residual, with v = u's neighbour in `dir`.
                let Some(v) = self.g.neighbor(u, dir) else {
                    continue;
                };
                if !own.contains(&v) {
                    continue;
                }
                let back = dir.opposite() as usize;
                if self.res[back * n + v] > 0 && hu.saturating_add(1) < self.height[v] {
                    self.height[v] = hu + 1;
                    queue.push_back(v);
                }
            }
        }
    }

    /// The ghost nodes: the layer below the slab and the layer above it.
    fn ghosts(&self) -> Vec<usize> {
        let mut v = Vec::new();
        let total = self.g.nodes() / self.layer;
        if self.layers.start > 0 {
            let l = self.layers.start - 1;
            v.extend(l * self.layer..(l + 1) * self.layer);
        }
        if self.layers.end < total {
            let l = self.layers.end;
            v.extend(l * self.layer..(l + 1) * self.layer);
        }
        v
    }

    /// FIFO push-relabel over the slab, ghost heights fixed; flow pushed
    /// into a ghost node goes to `outbox` (indexed by ghost node). At most
    /// `budget` relabels.
    fn discharge(&mut self, outbox: &mut [i64], budget: usize) {
        let n = self.n;
        let own = self.owned();
        let mut queue: VecDeque<usize> = own
            .clone()
            .filter(|&v| self.excess[v] > 0 && self.height[v] != INF)
            .collect();
        let mut queued = vec![false; own.len()];
        for &v in &queue {
            queued[v - own.start] = true;
        }
        let mut relabels = 0usize;
        while let Some(v) = queue.pop_front() {
            queued[v - own.start] = false;
            while self.excess[v] > 0 && self.height[v] != INF {
                let h = self.height[v];
                if h == 1 && self.sink[v] > 0 {
                    let d = self.excess[v].min(self.sink[v]);
                    self.sink[v] -= d;
                    self.excess[v] -= d;
                    continue;
                }
                let mut lowest = if self.sink[v] > 0 { 0 } else { INF };
                for &dir in self.g.dirs() {
                    if self.excess[v] == 0 {
                        break;
                    }
                    let Some(u) = self.g.neighbor(v, dir) else {
                        continue;
                    };
                    let a = dir as usize * n + v;
                    if self.res[a] == 0 {
                        continue;
                    }
                    let hu = self.height[u];
                    if hu != INF && hu + 1 == h {
                        let d = self.excess[v].min(self.res[a]);
                        self.res[a] -= d;
                        self.res[dir.opposite() as usize * n + u] += d;
                        self.excess[v] -= d;
                        if own.contains(&u) {
                            self.excess[u] += d;
                            if !queued[u - own.start] {
                                queued[u - own.start] = true;
                                queue.push_back(u);
                            }
                        } else {
                            outbox[u] += d;
                        }
                    } else {
                        lowest = lowest.min(hu);
                    }
                }
                if self.excess[v] > 0 {
                    // No admissible arc left: relabel.
                    relabels += 1;
                    self.height[v] = if lowest == INF || lowest as usize + 1 >= 2 * n {
                        INF
                    } else {
                        lowest + 1
                    };
                    if relabels >= budget {
                        return;
                    }
                }
            }
        }
    }

    fn active(&self) -> u64 {
        self.owned()
            .filter(|&v| self.excess[v] > 0 && self.height[v] != INF)
            .count() as u64
    }
}

impl Sharded<'_> {
    /// `grid_cut` of a replicated grid, solved whole by rank 0's backend;
    /// every rank returns the same [`GridCut`] (the flow value and the
    /// labels are broadcast), equal to one device's, in one device's time.
    /// A failure on rank 0 fails the call on every rank.
    pub fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        self.agree_grid(g)?;
        let root = self.cluster().rank() == 0;
        let solved = self.settle(if root {
            self.backend().grid_cut(g).map(Some)
        } else {
            Ok(None)
        })?;
        let comm = self.comm();
        let flow = comm.broadcast_vec(0, solved.as_ref().map(|c| std::slice::from_ref(&c.flow)))?;
        let labels: Option<Vec<u8>> = solved
            .as_ref()
            .map(|c| c.source_side.iter().map(|&s| u8::from(s)).collect());
        let labels = comm.broadcast_vec(0, labels.as_deref())?;
        Ok(GridCut {
            flow: flow[0],
            source_side: labels.into_iter().map(|s| s != 0).collect(),
        })
    }

    /// Shapes (and, when checked, contents) of a replicated grid agreed.
    fn agree_grid(&self, g: &GridGraph) -> Result<()> {
        let (depth, height, width) = g.shape();
        self.agree(&[
            ("grid.depth", depth as u64),
            ("grid.height", height as u64),
            ("grid.width", width as u64),
            self.replica("grid.caps (contents)", g.caps()),
            self.replica("grid.source (contents)", g.source()),
            self.replica("grid.sink (contents)", g.sink()),
        ])
    }

    /// `grid_cut` of a replicated grid, its layers cut into one slab per
    /// rank and discharged in rounds (see the module documentation); every
    /// rank returns the same [`GridCut`], equal to one device's, but slower
    /// than [`grid_cut`](Self::grid_cut) today. `rounds` caps the rounds
    /// (`None`: until no slab has work, at most `16 * ranks + 64`); the
    /// finisher completes whatever is left.
    pub fn grid_cut_slabs(&self, g: &GridGraph, rounds: Option<usize>) -> Result<GridCut> {
        self.agree_grid(g)?;
        let (depth, height, width) = g.shape();
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let n = g.nodes();
        if n == 0 {
            return self.settle(finish::grid_cut_from_start(g));
        }
        let (outer, layer, up, down) = if g.is_3d() {
            (depth, width * height, Dir::PosZ, Dir::NegZ)
        } else {
            (height, width, Dir::PosY, Dir::NegY)
        };
        let through = |v: usize| g.source()[v].min(g.sink()[v]);
        let mut s = Slab {
            g,
            n,
            layer,
            layers: even_split(outer, p, me),
            up,
            down,
            res: g.caps().to_vec(),
            sink: (0..n).map(|v| g.sink()[v] - through(v)).collect(),
            excess: (0..n).map(|v| g.source()[v] - through(v)).collect(),
            // Unknown until the first relabel: nothing pushes towards a ghost
            // before its owner has said how high it is.
            height: vec![INF; n],
        };
        let max_rounds = rounds.unwrap_or(16 * p + 64);
        let mut outbox = vec![0i64; n];
        let (mut used, mut left) = (0, 0);
        let (mut best, mut stall) = (u64::MAX, 0);
        for _ in 0..max_rounds {
            used += 1;
            // A global relabel: slab searches and boundary swaps until the
            // heights settle (each pass carries them one slab further).
            for _ in 0..=p {
                // Only the slab and its ghost layers ever change.
                let seen = s.seen();
                let before = s.height[seen.clone()].to_vec();
                s.relabel_all();
                self.swap_heights(&mut s)?;
                let mut changed = [u64::from(s.height[seen] != before[..])];
                self.comm().all_reduce_u64(&mut changed, ReduceOp::Max)?;
                if changed[0] == 0 {
                    break;
                }
            }
            let budget = 4 * s.owned().len() + 64;
            s.discharge(&mut outbox, budget);
            self.swap_flow(&mut s, &mut outbox)?;
            let mut active = [s.active()];
            self.comm().all_reduce_u64(&mut active, ReduceOp::Sum)?;
            // Stop when no slab has work, or when the active count has not
            // fallen for a few rounds (flow going back and forth across a
            // boundary): the finisher settles that faster than more rounds.
            left = active[0];
            if left == 0 {
                break;
            }
            if active[0] < best {
                best = active[0];
                stall = 0;
            } else {
                stall += 1;
            }
            if stall >= STALL_ROUNDS {
                break;
            }
        }
        tracing::debug!(
            rounds = used,
            active_left = left,
            ranks = p,
            "max_flow grid: region discharge done; the finisher completes it"
        );
        // The preflow, from each node's owner, on every rank.
        let own = s.owned();
        let mut res = Vec::with_capacity(g.dirs().len() * n);
        for &dir in g.dirs() {
            let plane = dir as usize * n;
            res.extend(self.gather_rows(&s.res[plane + own.start..plane + own.end])?);
        }
        let sink = self.gather_rows(&s.sink[own.clone()])?;
        let excess = self.gather_rows(&s.excess[own])?;
        self.settle(finish::grid_cut(g, res, sink, excess))
    }

    /// Boundary heights to the neighbouring slabs (their ghosts).
    fn swap_heights(&self, s: &mut Slab<'_>) -> Result<()> {
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let l = s.layer;
        let first = s.layers.start * l;
        let last = s.layers.end.saturating_sub(1) * l;
        let empty = s.layers.is_empty();
        let pick = |height: &[u32], at: usize| -> Vec<u32> {
            if empty {
                vec![INF; l]
            } else {
                height[at..at + l].to_vec()
            }
        };
        // Upwards: my top layer becomes the ghost below the next slab.
        let top = pick(&s.height, last);
        let got = self.exchange(&top, true)?;
        if me > 0 && !empty {
            s.height[first - l..first].copy_from_slice(&got);
        }
        let bottom = pick(&s.height, first);
        let got = self.exchange(&bottom, false)?;
        if me + 1 < p && !empty && s.layers.end * l < s.g.nodes() {
            let above = s.layers.end * l;
            s.height[above..above + l].copy_from_slice(&got);
        }
        Ok(())
    }

    /// Flow pushed into the neighbours' boundary layers, to them.
    fn swap_flow(&self, s: &mut Slab<'_>, outbox: &mut [i64]) -> Result<()> {
        let l = s.layer;
        let n = s.n;
        let below = s.layers.start.checked_sub(1).map(|b| b * l);
        let above = (s.layers.end * l < n && !s.layers.is_empty()).then_some(s.layers.end * l);
        let take = |outbox: &mut [i64], at: Option<usize>| -> Vec<i64> {
            match at {
                Some(a) if !s.layers.is_empty() => {
                    let v = outbox[a..a + l].to_vec();
                    outbox[a..a + l].iter_mut().for_each(|x| *x = 0);
                    v
                }
                _ => vec![0; l],
            }
        };
        let to_above = take(outbox, above);
        let to_below = take(outbox, below);
        let first = s.layers.start * l;
        let last = s.layers.end.saturating_sub(1) * l;
        // Pushed up into the next slab's bottom layer: it arrives from below.
        let from_below = self.exchange(&to_above, true)?;
        let from_above = self.exchange(&to_below, false)?;
        if s.layers.is_empty() {
            return Ok(());
        }
        let (down, up) = (s.down as usize, s.up as usize);
        for i in 0..l {
            if from_below[i] > 0 {
                // Pushed along `up` from the ghost below into `first + i`: the
                // reverse arc points down.
                s.excess[first + i] += from_below[i];
                s.res[down * n + first + i] += from_below[i];
            }
            if from_above[i] > 0 {
                s.excess[last + i] += from_above[i];
                s.res[up * n + last + i] += from_above[i];
            }
        }
        Ok(())
    }

    /// Sends `data` to the next rank (`upwards`) or the previous one and
    /// returns what came from the other side (zeros at the ends of the line).
    fn exchange<T: bytemuck::Pod + Default>(&self, data: &[T], upwards: bool) -> Result<Vec<T>> {
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        if p == 1 {
            return Ok(vec![T::default(); data.len()]);
        }
        let (to, from) = if upwards {
            ((me + 1) % p, (me + p - 1) % p)
        } else {
            ((me + p - 1) % p, (me + 1) % p)
        };
        let mut got = vec![T::default(); data.len()];
        self.comm().shift(
            bytemuck::cast_slice(data),
            to,
            bytemuck::cast_slice_mut(&mut got),
            from,
        )?;
        // The ring's wrap-around pair is not a boundary of the grid.
        let wrapped = if upwards { me == 0 } else { me + 1 == p };
        if wrapped {
            got.iter_mut().for_each(|x| *x = T::default());
        }
        Ok(got)
    }
}

#[cfg(feature = "nccl")]
impl Sharded<'_> {
    /// `grid_cut` of a grid whose layers (planes of a 3-D grid, rows of a
    /// 2-D one) are cut across the ranks' GPUs: rank `r` holds layers
    /// `even_split(layers, ranks, r)` in its device memory
    /// ([`CudaBackend::upload_grid_layers`]). Each GPU takes its slab alone
    /// to a maximum preflow; the slabs' states go to rank 0's GPU over NCCL
    /// (device to device), where the whole grid's solve completes them.
    /// Every rank gets the flow value and, on its GPU, its slab's part of
    /// the canonical cut (one byte per node, 1 = source side): one GPU's
    /// `grid_cut_device` answer. It gains where the slabs carry most of the
    /// work, as in segmentation grids whose flow is mostly local; flow that
    /// must cross slabs is left to rank 0. Needs the NCCL transport for
    /// more than one rank.
    pub fn grid_cut_resident(
        &self,
        dev: &CudaBackend,
        slab: &GridLayers,
    ) -> Result<(i64, CudaBuffer<u8>)> {
        let (p, me) = (self.cluster().size(), self.cluster().rank());
        let (depth, height, width) = slab.shape();
        let (total, sink) = slab.sums();
        self.agree(&[
            ("grid.depth", depth as u64),
            ("grid.height", height as u64),
            ("grid.width", width as u64),
            ("grid.dirs", if slab.is_3d() { 6 } else { 4 }),
            ("grid capacity sum", total as u64),
            ("grid sink sum", sink as u64),
            ("grid counter peak", slab.counter_peak() as u64),
        ])?;
        let layers = slab.total_layers();
        let layer = if slab.is_3d() { width * height } else { width };
        let want = even_split(layers, p, me);
        let link = self.settle(if slab.layers() != want {
            Err(Error::arg(
                "slab.layers",
                format!(
                    "rank {me} holds layers {:?}; the even split of {layers} layers over {p} \
                     ranks gives it {want:?}",
                    slab.layers()
                ),
            ))
        } else if p == 1 {
            Ok(None)
        } else {
            self.comm().device_link().map(Some).ok_or_else(|| {
                Error::Unsupported(format!(
                    "a grid cut across GPUs moves device memory between ranks, which needs the \
                     NCCL transport; this cluster runs {}",
                    self.comm().transport()
                ))
            })
        })?;
        // Every slab alone; rank 0 puts its own into the whole grid's state.
        let t0 = std::time::Instant::now();
        let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e3;
        let part = self.settle(dev.grid_layers_preflow(slab))?;
        let slab_ms = ms(t0);
        let whole = self.settle(if me == 0 {
            dev.grid_preflow_whole(slab).and_then(|mut w| {
                dev.place_preflow(&mut w, &part, 0)?;
                Ok(Some(w))
            })
        } else {
            Ok(None)
        })?;
        // The other slabs travel packed (16-bit values when every counter
        // fits), each in one run.
        let packed = self.settle(match (&whole, link) {
            (None, Some(_)) => dev.pack_preflow(&part, 0..part.nodes()).map(Some),
            _ => Ok(None),
        })?;
        let inbox = self.settle(match &whole {
            Some(w) if link.is_some() => (1..p)
                .map(|r| {
                    let nodes = even_split(layers, p, r).len() * layer;
                    dev.alloc::<u8>(w.wire_bytes(nodes), "max_flow state on the wire")
                })
                .collect::<Result<Vec<_>>>(),
            _ => Ok(Vec::new()),
        })?;
        // NCCL runs on its own stream: the slab kernels must be done.
        self.settle(dev.synchronize())?;
        if let Some(link) = link {
            let sends: Vec<DeviceRegion> = packed
                .iter()
                .map(|b| DeviceRegion {
                    ptr: b.ptr(),
                    bytes: b.len(),
                    peer: 0,
                })
                .collect();
            let recvs: Vec<DeviceRegion> = inbox
                .iter()
                .enumerate()
                .map(|(i, b)| DeviceRegion {
                    ptr: b.ptr(),
                    bytes: b.len(),
                    peer: i + 1,
                })
                .collect();
            // SAFETY: every run is a whole live buffer on this GPU (a
            // rank's packed state, or one receive buffer per peer sized by
            // the same wire_bytes), the backend's stream is idle, and the
            // sizes match on both ends (the even split and the agreed shape).
            self.settle(unsafe { link.exchange(&sends, &recvs) })?;
        }
        let whole = self.settle(match whole {
            Some(mut w) => inbox
                .iter()
                .enumerate()
                .try_for_each(|(i, b)| {
                    let l = even_split(layers, p, i + 1);
                    dev.unpack_preflow(&mut w, l.start * layer..l.end * layer, b)
                })
                .map(|()| Some(w)),
            None => Ok(None),
        })?;
        drop((packed, inbox));
        drop(part);
        let moved_ms = ms(t0);
        let solved = self.settle(match whole {
            Some(w) => dev.grid_cut_preflow(w).map(Some),
            None => Ok(None),
        })?;
        let flow = solved.as_ref().map(|(f, _)| std::slice::from_ref(f));
        let flow = self.comm().broadcast_vec(0, flow)?[0];
        let solved_ms = ms(t0);
        // This rank's part of the cut, from rank 0's GPU.
        let nodes = want.len() * layer;
        let labels = self.settle(dev.alloc::<u8>(nodes, "max_flow labels").and_then(|mut l| {
            if let Some((_, all)) = &solved {
                dev.copy_range(all, 0, &mut l)?;
            }
            dev.synchronize()?;
            Ok(l)
        }))?;
        if let Some(link) = link {
            let mut sends = Vec::new();
            let mut recvs = Vec::new();
            match &solved {
                Some((_, all)) => {
                    for r in 1..p {
                        let l = even_split(layers, p, r);
                        let at = all.ptr() + (l.start * layer) as u64;
                        sends.push(DeviceRegion {
                            ptr: at,
                            bytes: l.len() * layer,
                            peer: r,
                        });
                    }
                }
                None => recvs.push(DeviceRegion {
                    ptr: labels.ptr(),
                    bytes: nodes,
                    peer: 0,
                }),
            }
            // SAFETY: rank 0 sends runs inside its label buffer of the whole
            // grid; each other rank receives into its own buffer of exactly
            // its slab's nodes; both streams are idle.
            self.settle(unsafe { link.exchange(&sends, &recvs) })?;
        }
        tracing::debug!(
            rank = me,
            slab_ms,
            states_moved_ms = moved_ms,
            completed_ms = solved_ms,
            labels_ms = ms(t0),
            "max_flow grid across GPUs (times since the call began)"
        );
        Ok((flow, labels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Cluster;

    #[test]
    fn one_rank_gives_the_finishers_answer() {
        // A 6 x 7 grid with a bottleneck: the sharded path on one rank runs
        // the rounds and the finisher, and must match the finisher alone.
        let (h, w) = (6, 7);
        let n = h * w;
        let source: Vec<i64> = (0..n).map(|v| if v % w < 2 { 9 } else { 0 }).collect();
        let sink: Vec<i64> = (0..n).map(|v| if v % w > 4 { 9 } else { 0 }).collect();
        let on_grid = |d: usize, v: usize| {
            let (x, y) = (v % w, v / w);
            [x + 1 < w, x > 0, y + 1 < h, y > 0][d]
        };
        let caps: Vec<i64> = (0..4 * n)
            .map(|a| {
                let (d, v) = (a / n, a % n);
                if !on_grid(d, v) {
                    0
                } else if v % w == 3 {
                    1
                } else {
                    4
                }
            })
            .collect();
        let g = GridGraph::new_2d(h, w, source, sink, caps).unwrap();
        let want = finish::grid_cut_from_start(&g).unwrap();
        let cluster = Cluster::solo();
        let backend = trident_reference::ReferenceBackend;
        let got = Sharded::new(&cluster, &backend)
            .grid_cut_slabs(&g, None)
            .unwrap();
        assert_eq!(got, want);
        assert_eq!(
            Sharded::new(&cluster, &backend)
                .grid_cut_slabs(&g, Some(0))
                .unwrap(),
            want
        );
    }
}
