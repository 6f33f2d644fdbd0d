//! The GPU backends' shared host completion of a max-flow solve.
//!
//! Parallel push-relabel needs a device launch (or a Bellman-Ford sweep) per
//! breadth-first level of every global relabel, and moves excess about one
//! arc per push launch. On a graph whose flow must travel a long path (a
//! `1 x 2,000,000` grid, a chain network) that is millions of tiny launches
//! per relabel: minutes of launch overhead for a few milliseconds of work.
//! So the CUDA and wgpu solvers keep a work budget (`docs/semantics.md`,
//! MaxFlow, says what it is) and, once it is spent, download their residual
//! state, a *preflow*, and hand it here.
//!
//! The finisher is sequential highest-label push-relabel with exact global
//! relabels (a breadth-first search from the goal, again after every
//! `6 n + m` units of relabel work, as in Cherkassky and Goldberg's `hipr`).
//! Its worst case is `O(n^2 sqrt(m))` pushes and relabels; on path-like
//! graphs, the shape that stalls the device, one global relabel makes every
//! height exact and the excess runs down the path in `O(n + m)`.
//!
//! - [`grid_cut`] takes a grid's residuals (neighbour planes, sink
//!   residuals, excesses, with every source arc saturated, which is how both
//!   GPU solvers start), completes the maximum preflow and returns the flow
//!   value and the canonical cut: the nodes reachable in the residual graph
//!   from the nodes left with excess (returning that excess to the source
//!   would make exactly them reachable from it).
//! - [`network_flow`] takes a network's per-arc preflow, completes it to a
//!   maximum preflow (phase 1, towards t), returns the stranded excess to s
//!   (phase 2, the same solver towards s, t frozen), and returns the flow
//!   value, the per-arc flows and the canonical cut (the nodes reachable from
//!   s).
//!
//! Everything is sequential and in a fixed order, so the same state gives the
//! same bits. The state is checked first (capacities, conservation, signs):
//! a state that is not a preflow of the graph is a device bug, reported as
//! [`Error::Backend`], never a wrong answer.

use std::collections::VecDeque;

use super::{Dir, FlowNetwork, GridCut, GridGraph, NetworkFlow};
use crate::{Error, Result};

/// Height of a node that cannot reach the goal (and of the frozen node).
const INF: u32 = u32::MAX;
/// Work units charged per relabel on top of the node's arc count (hipr's BETA).
const RELABEL_COST: u64 = 12;
/// A global relabel runs again after `GLOBAL_NODE_WEIGHT * n + m` units of
/// relabel work (hipr's ALPHA).
const GLOBAL_NODE_WEIGHT: u64 = 6;

/// The deepest global relabel (breadth-first search, in levels) a GPU solve
/// of a graph of `nodes` nodes runs before it hands its state to the host:
/// `max(4096, 4 ceil(sqrt(nodes)))`.
///
/// A level costs a device launch or sweep whatever its width, so depth is
/// what a thin graph costs. Vision grids are about `sqrt(n)` deep or less
/// (a 2-D image's distances to the sink stay within its side, a volume's
/// within `n^(1/3)`), and general networks of the benchmark family far less
/// than 4096 (flow-rmf: about 600); a path of `n` nodes is `n` deep.
pub fn max_levels(nodes: usize) -> u64 {
    let root = (nodes as f64).sqrt().ceil() as u64;
    MIN_LEVELS.max(4 * root)
}

/// The floor of [`max_levels`].
const MIN_LEVELS: u64 = 4096;

/// `true` for a grid with a side longer than [`max_levels`] of its node
/// count (a `1 x 200,000` row, a `16 x 100,000` strip): its searches may
/// run that side deep, so the GPU backends solve it on the host from the
/// start ([`grid_cut_from_start`]) rather than spend a budget first.
pub fn grid_is_thin(depth: usize, height: usize, width: usize) -> bool {
    let nodes = depth.saturating_mul(height).saturating_mul(width);
    depth.max(height).max(width) as u64 > max_levels(nodes)
}

/// [`grid_cut`] from the state a GPU solve starts in: `min(source, sink)` of
/// each node sent straight through, the rest of the source capacity as
/// excess, nothing pushed yet.
pub fn grid_cut_from_start(g: &GridGraph) -> Result<GridCut> {
    let (source, sink) = (g.source(), g.sink());
    let through = |v: usize| source[v].min(sink[v]);
    let n = g.nodes();
    grid_cut(
        g,
        g.caps().to_vec(),
        (0..n).map(|v| sink[v] - through(v)).collect(),
        (0..n).map(|v| source[v] - through(v)).collect(),
    )
}

fn bad_state(detail: String) -> Error {
    Error::Backend(
        format!(
            "max_flow host finisher: the device state is not a preflow ({detail}; a device bug)"
        )
        .into(),
    )
}

/// The arcs of a residual graph: each arc has an id into one residual array,
/// and the arcs of node `v` are its slots `0..slots(v)`.
trait Topology {
    fn nodes(&self) -> usize;
    fn arcs(&self) -> usize;
    fn slots(&self, v: usize) -> usize;
    /// `(arc id, head)` of slot `k` of `v`, `None` where the slot leads nowhere.
    fn arc(&self, v: usize, k: usize) -> Option<(usize, usize)>;
    /// The reverse of arc `a`, whose head is `head`.
    fn rev(&self, a: usize, head: usize) -> usize;
}

/// A grid: arc `(v, d)` is `d * n + v`, its reverse `(d ^ 1) * n + u`.
struct GridTopo<'a> {
    g: &'a GridGraph,
}

impl Topology for GridTopo<'_> {
    fn nodes(&self) -> usize {
        self.g.nodes()
    }
    fn arcs(&self) -> usize {
        self.g.dirs().len() * self.g.nodes()
    }
    fn slots(&self, _v: usize) -> usize {
        self.g.dirs().len()
    }
    fn arc(&self, v: usize, k: usize) -> Option<(usize, usize)> {
        let n = self.g.nodes();
        self.g.neighbor(v, Dir::ALL[k]).map(|u| (k * n + v, u))
    }
    fn rev(&self, a: usize, head: usize) -> usize {
        let n = self.g.nodes();
        ((a / n) ^ 1) * n + head
    }
}

/// A network as a CSR residual graph: the slots of `v` are
/// `first[v]..first[v + 1]`; input arc `i` is slot `fwd[i]` (tail to head)
/// and its partner `rev[fwd[i]]`.
struct Csr {
    first: Vec<usize>,
    head: Vec<u32>,
    rev: Vec<u32>,
    fwd: Vec<u32>,
}

impl Csr {
    fn new(g: &FlowNetwork) -> Result<Self> {
        let n = g.nodes();
        let arcs = g.arcs();
        let slots = arcs
            .len()
            .checked_mul(2)
            .filter(|&s| s <= u32::MAX as usize);
        let slots = slots.ok_or(Error::TooLarge {
            field: "residual arcs, 2 per arc (host finisher)",
            value: 2 * arcs.len() as u128,
            limit: u32::MAX as u128,
        })?;
        let mut first = vec![0usize; n + 1];
        for a in arcs {
            first[a.from as usize + 1] += 1;
            first[a.to as usize + 1] += 1;
        }
        for v in 0..n {
            first[v + 1] += first[v];
        }
        let mut next = first[..n].to_vec();
        let mut head = vec![0u32; slots];
        let mut rev = vec![0u32; slots];
        let mut fwd = vec![0u32; arcs.len()];
        for (i, a) in arcs.iter().enumerate() {
            let f = next[a.from as usize];
            next[a.from as usize] += 1;
            let b = next[a.to as usize];
            next[a.to as usize] += 1;
            head[f] = a.to;
            head[b] = a.from;
            rev[f] = b as u32;
            rev[b] = f as u32;
            fwd[i] = f as u32;
        }
        Ok(Self {
            first,
            head,
            rev,
            fwd,
        })
    }
}

impl Topology for Csr {
    fn nodes(&self) -> usize {
        self.first.len() - 1
    }
    fn arcs(&self) -> usize {
        self.head.len()
    }
    fn slots(&self, v: usize) -> usize {
        self.first[v + 1] - self.first[v]
    }
    fn arc(&self, v: usize, k: usize) -> Option<(usize, usize)> {
        let a = self.first[v] + k;
        Some((a, self.head[a] as usize))
    }
    fn rev(&self, a: usize, _head: usize) -> usize {
        self.rev[a] as usize
    }
}

/// Where the flow goes: a node, or (grids) the sink behind the per-node sink
/// residuals, at height 0.
#[derive(Clone, Copy)]
enum Goal {
    Node(usize),
    Terminal,
}

/// Highest-label push-relabel from a preflow towards `goal`; `frozen` (the
/// other terminal) never moves and never receives.
struct PushRelabel<'a, T: Topology> {
    topo: &'a T,
    res: &'a mut [i64],
    /// Residuals to the terminal goal (grids), else empty.
    term: &'a mut [i64],
    excess: &'a mut [i64],
    goal: Goal,
    frozen: Option<usize>,
    h: Vec<u32>,
    /// Current slot of each node (where its next admissible-arc scan starts).
    cur: Vec<u32>,
    /// Active nodes by height; a node is in its height's bucket iff it has
    /// excess, a finite height, and is neither goal nor frozen.
    buckets: Vec<Vec<u32>>,
    top: usize,
}

impl<'a, T: Topology> PushRelabel<'a, T> {
    fn new(
        topo: &'a T,
        res: &'a mut [i64],
        term: &'a mut [i64],
        excess: &'a mut [i64],
        goal: Goal,
        frozen: Option<usize>,
    ) -> Self {
        let n = topo.nodes();
        Self {
            topo,
            res,
            term,
            excess,
            goal,
            frozen,
            h: vec![INF; n],
            cur: vec![0; n],
            buckets: vec![Vec::new(); n + 1],
            top: 0,
        }
    }

    fn is_goal(&self, v: usize) -> bool {
        matches!(self.goal, Goal::Node(g) if g == v)
    }

    fn movable(&self, v: usize) -> bool {
        !self.is_goal(v) && self.frozen != Some(v)
    }

    /// Exact distances to the goal over residual arcs (breadth-first from
    /// the goal over reversed arcs), then the active nodes into buckets.
    fn global_relabel(&mut self) {
        let n = self.topo.nodes();
        self.h.fill(INF);
        let mut queue = VecDeque::new();
        match self.goal {
            Goal::Node(g) => {
                self.h[g] = 0;
                queue.push_back(g);
            }
            Goal::Terminal => {
                for v in 0..n {
                    if self.term[v] > 0 {
                        self.h[v] = 1;
                        queue.push_back(v);
                    }
                }
            }
        }
        while let Some(u) = queue.pop_front() {
            let hu = self.h[u] + 1;
            for k in 0..self.topo.slots(u) {
                let Some((a, w)) = self.topo.arc(u, k) else {
                    continue;
                };
                if self.h[w] == INF && self.frozen != Some(w) && self.res[self.topo.rev(a, w)] > 0 {
                    self.h[w] = hu;
                    queue.push_back(w);
                }
            }
        }
        for b in &mut self.buckets {
            b.clear();
        }
        self.cur.fill(0);
        self.top = 0;
        for v in 0..n {
            if self.excess[v] > 0 && self.h[v] != INF && self.movable(v) {
                self.activate(v);
            }
        }
    }

    fn activate(&mut self, v: usize) {
        let hv = self.h[v] as usize;
        self.buckets[hv].push(v as u32);
        self.top = self.top.max(hv);
    }

    fn pop_highest(&mut self) -> Option<usize> {
        loop {
            if let Some(v) = self.buckets[self.top].pop() {
                return Some(v as usize);
            }
            if self.top == 0 {
                return None;
            }
            self.top -= 1;
        }
    }

    /// Pushes `v`'s excess out over admissible arcs, relabelling when none is
    /// left, until the excess is gone or `v` cannot reach the goal. Returns
    /// the relabel work done.
    fn discharge(&mut self, v: usize) -> u64 {
        let n = self.topo.nodes();
        let slots = self.topo.slots(v);
        let mut work = 0;
        while self.excess[v] > 0 {
            let hv = self.h[v];
            if hv == 1 && !self.term.is_empty() && self.term[v] > 0 {
                let d = self.excess[v].min(self.term[v]);
                self.term[v] -= d;
                self.excess[v] -= d;
                continue;
            }
            let mut k = self.cur[v] as usize;
            while k < slots && self.excess[v] > 0 {
                if let Some((a, u)) = self.topo.arc(v, k)
                    && self.res[a] > 0
                    && self.h[u] != INF
                    && self.h[u] + 1 == hv
                {
                    let d = self.excess[v].min(self.res[a]);
                    self.res[a] -= d;
                    let r = self.topo.rev(a, u);
                    self.res[r] += d;
                    self.excess[v] -= d;
                    let was = self.excess[u];
                    self.excess[u] += d;
                    if was == 0 && self.movable(u) {
                        self.activate(u);
                    }
                    if self.excess[v] == 0 {
                        break;
                    }
                }
                k += 1;
            }
            self.cur[v] = k as u32;
            if self.excess[v] == 0 {
                break;
            }
            // No admissible arc left: relabel to one above the lowest
            // residual neighbour (the terminal counts as height 0).
            work += slots as u64 + RELABEL_COST;
            let mut low = if !self.term.is_empty() && self.term[v] > 0 {
                0
            } else {
                INF
            };
            for k in 0..slots {
                if let Some((a, u)) = self.topo.arc(v, k)
                    && self.res[a] > 0
                {
                    low = low.min(self.h[u]);
                }
            }
            self.cur[v] = 0;
            if low == INF || low as usize >= n {
                // No residual path to the goal: the excess stays here.
                self.h[v] = INF;
                break;
            }
            self.h[v] = low + 1;
        }
        work
    }

    /// Runs until no node with excess can reach the goal.
    fn run(&mut self) {
        let n = self.topo.nodes() as u64;
        let budget = GLOBAL_NODE_WEIGHT * n + self.topo.arcs() as u64;
        loop {
            self.global_relabel();
            let mut work = 0;
            loop {
                let Some(v) = self.pop_highest() else {
                    return;
                };
                work += self.discharge(v);
                if self.excess[v] > 0 && self.h[v] != INF {
                    self.activate(v);
                }
                if work > budget {
                    break;
                }
            }
        }
    }
}

/// Nodes reachable over residual arcs from the `seed` nodes.
fn reachable<T: Topology>(topo: &T, res: &[i64], seed: impl Fn(usize) -> bool) -> Vec<bool> {
    let n = topo.nodes();
    let mut seen: Vec<bool> = (0..n).map(&seed).collect();
    let mut stack: Vec<usize> = (0..n).filter(|&v| seen[v]).collect();
    while let Some(v) = stack.pop() {
        for k in 0..topo.slots(v) {
            if let Some((a, u)) = topo.arc(v, k)
                && res[a] > 0
                && !seen[u]
            {
                seen[u] = true;
                stack.push(u);
            }
        }
    }
    seen
}

/// Completes a grid solve from its residual state: `residual` in the layout
/// of [`GridGraph::caps`] (residual of `v -> v + dir` at `dir * n + v`),
/// `sink_residual[v]` the residual of `v -> t`, `excess[v]` the excess of `v`,
/// with every source arc saturated (the source capacity counted into the
/// excess, as both GPU solvers start). Returns the flow value and the
/// canonical cut.
pub fn grid_cut(
    g: &GridGraph,
    mut residual: Vec<i64>,
    mut sink_residual: Vec<i64>,
    mut excess: Vec<i64>,
) -> Result<GridCut> {
    let n = g.nodes();
    let dirs = g.dirs();
    if residual.len() != dirs.len() * n || sink_residual.len() != n || excess.len() != n {
        return Err(bad_state(format!(
            "{} residuals, {} sink residuals and {} excesses for {n} nodes and {} planes",
            residual.len(),
            sink_residual.len(),
            excess.len(),
            dirs.len()
        )));
    }
    let caps = g.caps();
    for v in 0..n {
        let (rt, sink) = (sink_residual[v], g.sink()[v]);
        if !(0..=sink).contains(&rt) || excess[v] < 0 {
            return Err(bad_state(format!(
                "node {v}: sink residual {rt} of capacity {sink}, excess {}",
                excess[v]
            )));
        }
        // What arrived from s, minus what went to t and to the neighbours.
        let mut balance = g.source()[v] as i128 - (sink - rt) as i128;
        for (d, &dir) in dirs.iter().enumerate() {
            let a = d * n + v;
            match g.neighbor(v, dir) {
                None if residual[a] != 0 => {
                    return Err(bad_state(format!(
                        "off-grid residual[{a}] = {}",
                        residual[a]
                    )));
                }
                None => {}
                Some(u) => {
                    let b = (d ^ 1) * n + u;
                    if residual[a] < 0
                        || residual[a] as i128 + residual[b] as i128
                            != caps[a] as i128 + caps[b] as i128
                    {
                        return Err(bad_state(format!(
                            "arc pair {a} / {b}: residuals {} + {} against capacities {} + {}",
                            residual[a], residual[b], caps[a], caps[b]
                        )));
                    }
                    balance -= caps[a] as i128 - residual[a] as i128;
                }
            }
        }
        if balance != excess[v] as i128 {
            return Err(bad_state(format!(
                "node {v}: excess {} but the flows leave {balance}",
                excess[v]
            )));
        }
    }
    let topo = GridTopo { g };
    PushRelabel::new(
        &topo,
        &mut residual,
        &mut sink_residual,
        &mut excess,
        Goal::Terminal,
        None,
    )
    .run();
    // Every sum is at most the sum of all capacities, which fits i64.
    let flow = g
        .sink()
        .iter()
        .zip(&sink_residual)
        .map(|(&c, &r)| c - r)
        .sum();
    let source_side = reachable(&topo, &residual, |v| excess[v] > 0);
    Ok(GridCut { flow, source_side })
}

/// Completes a network solve from a preflow given per arc (`arc_flow[i]`
/// within `0..=cap` of arc `i`, every node but s left with excess `>= 0`, no
/// flow out of t): saturates what is left of the source's arcs (and cancels
/// any flow into s), finishes the
/// maximum preflow, returns the stranded excess to s, and returns the flow
/// value, the per-arc flows and the canonical cut.
pub fn network_flow(g: &FlowNetwork, arc_flow: Vec<i64>) -> Result<NetworkFlow> {
    let n = g.nodes();
    let arcs = g.arcs();
    let (s, t) = (g.source() as usize, g.sink() as usize);
    if arc_flow.len() != arcs.len() {
        return Err(bad_state(format!(
            "{} arc flows for {} arcs",
            arc_flow.len(),
            arcs.len()
        )));
    }
    let mut excess = vec![0i64; n];
    for (i, (a, &f)) in arcs.iter().zip(&arc_flow).enumerate() {
        if !(0..=a.cap).contains(&f) || (a.from as usize == t && a.to != a.from && f > 0) {
            return Err(bad_state(format!(
                "arcs[{i}] ({} -> {}): flow {f} of capacity {}",
                a.from, a.to, a.cap
            )));
        }
        // Every flow is at most its capacity, so these sums fit i64.
        excess[a.from as usize] -= f;
        excess[a.to as usize] += f;
    }
    if let Some(v) = (0..n).find(|&v| v != s && excess[v] < 0) {
        return Err(bad_state(format!("node {v} has excess {}", excess[v])));
    }
    let csr = Csr::new(g)?;
    let mut res = vec![0i64; csr.arcs()];
    for (i, (a, &f)) in arcs.iter().zip(&arc_flow).enumerate() {
        let fw = csr.fwd[i] as usize;
        let mut f = f;
        // As push-relabel starts: no residual arc out of s, so every arc out
        // of s saturated and none into s carrying flow (the flow it carried
        // becomes excess of its tail again).
        if a.from as usize == s && a.to as usize != s {
            excess[a.to as usize] += a.cap - f;
            excess[s] -= a.cap - f;
            f = a.cap;
        } else if a.to as usize == s && a.from as usize != s {
            excess[a.from as usize] += f;
            excess[s] -= f;
            f = 0;
        }
        res[fw] = a.cap - f;
        res[csr.rev[fw] as usize] = f;
    }
    drop(arc_flow);
    let mut none: [i64; 0] = [];
    PushRelabel::new(
        &csr,
        &mut res,
        &mut none,
        &mut excess,
        Goal::Node(t),
        Some(s),
    )
    .run();
    PushRelabel::new(
        &csr,
        &mut res,
        &mut none,
        &mut excess,
        Goal::Node(s),
        Some(t),
    )
    .run();
    if let Some(v) = (0..n).find(|&v| v != s && v != t && excess[v] != 0) {
        return Err(bad_state(format!(
            "node {v} kept excess {} after it was returned to s",
            excess[v]
        )));
    }
    let source_side = reachable(&csr, &res, |v| v == s);
    let arc_flow = csr
        .fwd
        .iter()
        .map(|&f| res[csr.rev[f as usize] as usize])
        .collect();
    Ok(NetworkFlow {
        flow: excess[t],
        source_side,
        arc_flow,
    })
}
