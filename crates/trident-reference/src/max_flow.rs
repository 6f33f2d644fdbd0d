//! MaxFlow for [`ReferenceBackend`]: Dinic's algorithm on an explicit residual
//! graph, then a BFS from s over arcs with residual capacity for the canonical
//! cut.
//!
//! Grids become ordinary graphs: nodes `0..N` are the grid nodes, `N` is s and
//! `N + 1` is t. The blocking-flow search is an iterative DFS with
//! current-arc pointers (no recursion, so 2048 x 2048 grids cannot blow the
//! stack). All arithmetic is `i64`: core guarantees the sum of all capacities
//! fits, and no flow or residual can exceed it.

use std::collections::VecDeque;

use trident_core::{FlowNetwork, GridCut, GridGraph, MaxFlow, NetworkFlow, Result, mem};

use crate::ReferenceBackend;

const UNSEEN: u32 = u32::MAX;

/// A residual graph. Input arc `i` is residual arc `2i` (forward, capacity
/// `cap`) paired with `2i + 1` (reverse, capacity 0); `e ^ 1` is the partner.
pub(crate) struct FlowGraph {
    n: usize,
    /// Head node of each residual arc; the tail of `e` is `head[e ^ 1]`.
    head: Vec<u32>,
    /// Residual capacity of each residual arc.
    res: Vec<i64>,
    /// Original capacity of each input arc.
    cap: Vec<i64>,
    /// Residual arcs grouped by tail: those of `v` are `adj[start[v]..start[v + 1]]`.
    start: Vec<usize>,
    adj: Vec<u32>,
}

impl FlowGraph {
    /// A graph on `n` nodes with the given `(from, to, cap)` arcs, in order.
    pub(crate) fn new(n: usize, arcs: &[(u32, u32, i64)]) -> Self {
        let m = arcs.len();
        let mut head = Vec::with_capacity(2 * m);
        let mut res = Vec::with_capacity(2 * m);
        let mut cap = Vec::with_capacity(m);
        let mut start = vec![0usize; n + 1];
        for &(u, v, c) in arcs {
            head.push(v);
            res.push(c);
            head.push(u);
            res.push(0);
            cap.push(c);
            start[u as usize + 1] += 1;
            start[v as usize + 1] += 1;
        }
        for v in 0..n {
            start[v + 1] += start[v];
        }
        let mut next = start.clone();
        let mut adj = vec![0u32; 2 * m];
        for e in 0..2 * m {
            let tail = head[e ^ 1] as usize;
            adj[next[tail]] = e as u32;
            next[tail] += 1;
        }
        Self {
            n,
            head,
            res,
            cap,
            start,
            adj,
        }
    }

    fn tail(&self, e: usize) -> usize {
        self.head[e ^ 1] as usize
    }

    /// BFS levels from `s` over arcs with residual capacity.
    fn levels(&self, s: usize, level: &mut [u32]) {
        level.fill(UNSEEN);
        level[s] = 0;
        let mut q = VecDeque::from([s]);
        while let Some(v) = q.pop_front() {
            for &e in &self.adj[self.start[v]..self.start[v + 1]] {
                let w = self.head[e as usize] as usize;
                if self.res[e as usize] > 0 && level[w] == UNSEEN {
                    level[w] = level[v] + 1;
                    q.push_back(w);
                }
            }
        }
    }

    /// Runs Dinic from `s` to `t` (s != t) and returns the flow value.
    pub(crate) fn max_flow(&mut self, s: usize, t: usize) -> i64 {
        let mut total = 0i64;
        let mut level = vec![UNSEEN; self.n];
        let mut it = vec![0usize; self.n];
        let mut path: Vec<usize> = Vec::new();
        loop {
            self.levels(s, &mut level);
            if level[t] == UNSEEN {
                return total;
            }
            it.copy_from_slice(&self.start[..self.n]);
            // Augment along shortest paths until the level graph is blocked.
            loop {
                path.clear();
                let mut v = s;
                while v != t {
                    // Advance along the current arc of v, skipping useless arcs.
                    let mut next = None;
                    while it[v] < self.start[v + 1] {
                        let e = self.adj[it[v]] as usize;
                        let w = self.head[e] as usize;
                        if self.res[e] > 0 && level[w] != UNSEEN && level[w] == level[v] + 1 {
                            next = Some((e, w));
                            break;
                        }
                        it[v] += 1;
                    }
                    match next {
                        Some((e, w)) => {
                            path.push(e);
                            v = w;
                        }
                        None if v == s => break,
                        None => {
                            // v is a dead end for this phase: retire it and
                            // move the parent past the arc that led here.
                            level[v] = UNSEEN;
                            // Only s has no parent arc, and s is never retired here.
                            #[allow(clippy::expect_used)]
                            let e = path.pop().expect("v != s has a parent arc");
                            v = self.tail(e);
                            it[v] += 1;
                        }
                    }
                }
                if v != t {
                    break;
                }
                let push = path.iter().map(|&e| self.res[e]).min().unwrap_or(0);
                for &e in &path {
                    self.res[e] -= push;
                    self.res[e ^ 1] += push;
                }
                total += push;
            }
        }
    }

    /// Nodes reachable from `s` over arcs with residual capacity.
    pub(crate) fn reachable(&self, s: usize) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        seen[s] = true;
        let mut stack = vec![s];
        while let Some(v) = stack.pop() {
            for &e in &self.adj[self.start[v]..self.start[v + 1]] {
                let w = self.head[e as usize] as usize;
                if self.res[e as usize] > 0 && !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
            }
        }
        seen
    }

    /// Flow on input arc `i`.
    pub(crate) fn flow(&self, i: usize) -> i64 {
        self.cap[i] - self.res[2 * i]
    }
}

/// The flows of a grid max flow, arc by arc, in [`GridGraph`]'s own layout.
pub(crate) struct GridFlows {
    pub(crate) flow: i64,
    /// Flow on `s -> v`.
    pub(crate) source: Vec<i64>,
    /// Flow on `v -> t`.
    pub(crate) sink: Vec<i64>,
    /// Flow on `v -> v + dir` at `dir * N + v`, like [`GridGraph::caps`].
    pub(crate) caps: Vec<i64>,
    pub(crate) source_side: Vec<bool>,
}

/// Max flow on a grid with every arc kept (zero capacities too), so that arc
/// `i` of the flow graph maps back to the grid's arrays by position: `s -> v`
/// are arcs `0..N`, `v -> t` arcs `N..2N`, plane `d` arcs `(2 + d) N..`.
pub(crate) fn grid_flows(g: &GridGraph) -> GridFlows {
    let n = g.nodes();
    let (s, t) = (n, n + 1);
    let dirs = g.dirs();
    let mut arcs = Vec::with_capacity((2 + dirs.len()) * n);
    arcs.extend((0..n).map(|v| (s as u32, v as u32, g.source()[v])));
    arcs.extend((0..n).map(|v| (v as u32, t as u32, g.sink()[v])));
    for &dir in dirs {
        let plane = g.plane(dir);
        for v in 0..n {
            // Off-grid arcs have capacity 0 (core checks it); a self loop keeps
            // the position without adding a real arc.
            let u = g.neighbor(v, dir).unwrap_or(v);
            arcs.push((v as u32, u as u32, plane[v]));
        }
    }
    let mut fg = FlowGraph::new(n + 2, &arcs);
    drop(arcs);
    let flow = fg.max_flow(s, t);
    let reach = fg.reachable(s);
    GridFlows {
        flow,
        source: (0..n).map(|i| fg.flow(i)).collect(),
        sink: (0..n).map(|i| fg.flow(n + i)).collect(),
        caps: (0..dirs.len() * n).map(|i| fg.flow(2 * n + i)).collect(),
        source_side: reach[..n].to_vec(),
    }
}

/// Max flow on a network: the residual graph after Dinic.
pub(crate) fn network_graph(g: &FlowNetwork) -> (i64, FlowGraph) {
    let arcs: Vec<(u32, u32, i64)> = g.arcs().iter().map(|a| (a.from, a.to, a.cap)).collect();
    let mut fg = FlowGraph::new(g.nodes(), &arcs);
    let flow = fg.max_flow(g.source() as usize, g.sink() as usize);
    (flow, fg)
}

impl MaxFlow for ReferenceBackend {
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut> {
        // GridGraph is valid by construction; nothing relates several arguments.
        let f = grid_flows(g);
        Ok(GridCut {
            flow: f.flow,
            source_side: f.source_side,
        })
    }

    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow> {
        // FlowNetwork is valid by construction (s != t, endpoints, capacities),
        // but may declare u32::MAX nodes: Dinic keeps about 30 bytes per node
        // and 64 per arc, so ask before allocating (an error, not an abort).
        let (n, m) = (g.nodes() as u128, g.arcs().len() as u128);
        mem::check_bytes(n * 30 + m * 64, || {
            format!("Dinic on a network of {n} nodes and {m} arcs")
        })?;
        let (flow, fg) = network_graph(g);
        Ok(NetworkFlow {
            flow,
            source_side: fg.reachable(g.source() as usize),
            arc_flow: (0..g.arcs().len()).map(|i| fg.flow(i)).collect(),
        })
    }
}
