//! Max flow on general networks: highest-label push-relabel on a CSR residual
//! graph, with global relabeling and the gap heuristic (Cherkassky and
//! Goldberg, "On implementing the push-relabel method for the maximum flow
//! problem", Algorithmica 1997; the design of their `hipr`).
//!
//! # Why push-relabel and not Boykov-Kolmogorov
//!
//! The grid solver ([`super::grid`]) is BK because vision grids are BK's home
//! ground: short augmenting paths, most nodes terminal-linked. A general
//! network usually has one source and one sink, and then BK's two trees
//! start from single nodes and must re-grow across the graph after every
//! saturation. On the Goldfarb-Grigoriadis RMF family (`genrmf`, the contract's
//! `flow-rmf`) that is known to blow up (Goldberg, Hed, Kaplan, Tarjan and
//! Werneck, "Maximum flows by incremental breadth-first search", ESA 2011,
//! report BK orders of magnitude behind `hipr` there), while highest-label
//! push-relabel with global relabels is the standard robust choice. So this
//! module does not share BK's tree code with `grid.rs`; it shares the
//! residual type ([`Cap`]: `i32` when every capacity fits, else `i64`) and
//! the huge-page advice for large arrays.
//!
//! # Phases
//!
//! 1. Push-relabel towards t computes a maximum *preflow*; active nodes whose
//!    label reaches `n` (they cannot reach t any more) are left with excess.
//! 2. The same machinery, now with s as the target, returns that excess to s,
//!    which turns the preflow into a flow (every node with excess can reach s
//!    in the residual graph: its excess arrived along flow paths from s).
//! 3. A BFS from s over residual arcs gives the canonical cut, and each input
//!    arc's flow is `cap - residual` of its own residual arc.
//!
//! Arcs that can never carry flow in some maximum flow are left out of the
//! residual graph and reported with flow 0: self loops, zero capacities, arcs
//! into s and arcs out of t. None of them changes the set reachable from s in
//! the residual graph of such a flow, and that set is the same for every
//! maximum flow, so the cut stays canonical.
//!
//! The solve is sequential (push-relabel's parallel variants need many cores
//! and locks or atomics per arc to pay off); the rayon pool computes the
//! per-arc flows.

use std::collections::VecDeque;

use rayon::prelude::*;
use trident_core::{Error, FlowNetwork, NetworkFlow, Result};

use super::cap::Cap;

/// "No node" in the bucket lists and "dropped" in the arc map.
const NONE: u32 = u32::MAX;

/// Work units charged per relabel on top of the node's degree (hipr's BETA).
const RELABEL_COST: u64 = 12;
/// A global relabel runs once the work since the last one exceeds
/// `GLOBAL_FREQ_INV * (GLOBAL_NODE_WEIGHT * n + m)`, `m` counting residual
/// arcs (hipr's ALPHA = 6 and update frequency 0.5). On flow-rmf (genrmf
/// 32 x 64) factors 0.25, 0.5, 1, 2, 4, 8 took 312, 271, 175, 124-155, 197,
/// 233 ms of CPU in phase 1: each global relabel costs about 5 ms there.
const GLOBAL_NODE_WEIGHT: u64 = 6;
/// See [`GLOBAL_NODE_WEIGHT`].
const GLOBAL_FREQ_INV: u64 = 2;

/// Solves `g`: `i32` residuals when every capacity fits, else `i64`.
pub(crate) fn solve(g: &FlowNetwork) -> Result<NetworkFlow> {
    // A network may declare u32::MAX nodes with a single arc (valid by the
    // contract): every node costs a solver record, a bucket, a mark and an
    // output label. Ask before allocating, so that such a network is an
    // error naming its size rather than an abort.
    let (n, m) = (g.nodes() as u128, g.arcs().len() as u128);
    let per_node = (size_of::<Node>() + size_of::<u32>() + 2) as u128;
    let per_arc = (2 * size_of::<ResArc<i64>>() + size_of::<u32>() + size_of::<i64>()) as u128;
    trident_core::mem::check_bytes((n + 1) * per_node + m * per_arc, || {
        format!("push-relabel on a network of {n} nodes and {m} arcs")
    })?;
    let fits_i32 = g.arcs().iter().all(|a| a.cap <= i32::MAX as i64);
    if fits_i32 {
        Ok(Solver::<i32>::build(g)?.finish(g))
    } else {
        Ok(Solver::<i64>::build(g)?.finish(g))
    }
}

/// A residual arc. Input arc `(u, v, c)` becomes a forward arc in `u`'s range
/// (residual `c`) and a reverse arc in `v`'s range (residual 0), each naming
/// the other's slot in `rev`.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct ResArc<C> {
    head: u32,
    rev: u32,
    res: C,
}

/// Per-node state, one record so that a discharge touches one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Node {
    /// Flow in minus flow out (`>= 0` except at s).
    excess: i64,
    /// Start of the node's arcs; they end at the next node's `first`.
    first: u32,
    /// The current arc: arcs before it are known not to be admissible.
    current: u32,
    /// Distance label (a lower bound on the residual distance to the target);
    /// `dead` once the node cannot reach the target.
    label: u32,
    /// Bucket list links (active: singly linked by `next`; inactive: doubly).
    next: u32,
    prev: u32,
}

/// The heads of one label's node lists.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    active: u32,
    inactive: u32,
}

const EMPTY: Bucket = Bucket {
    active: NONE,
    inactive: NONE,
};

struct Solver<C> {
    /// `n + 1` records; the last only holds the end of the arc array.
    nodes: Vec<Node>,
    arcs: Vec<ResArc<C>>,
    /// The forward residual slot of each input arc, or NONE if left out.
    slot: Vec<u32>,
    buckets: Vec<Bucket>,
    n: usize,
    s: u32,
    t: u32,
    /// The node pushes flow towards in the current phase.
    target: u32,
    /// Label of nodes cut off from the target: `n`.
    dead: u32,
    /// Highest label that may hold an active node.
    a_max: u32,
    /// Highest label that may hold any node.
    d_max: u32,
    work: u64,
    work_limit: u64,
    /// BFS queue of the global relabel, kept to reuse its memory.
    queue: VecDeque<u32>,
    stats: Stats,
}

/// Operation counts, emitted as a debug event.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    pushes: u64,
    relabels: u64,
    gaps: u64,
    globals: u64,
}

impl<C: Cap> Solver<C> {
    /// The CSR residual graph (arcs grouped by tail, input order within a
    /// tail), with nothing pushed yet.
    fn build(g: &FlowNetwork) -> Result<Self> {
        let n = g.nodes();
        let (s, t) = (g.source(), g.sink());
        let useful =
            |a: &trident_core::FlowArc| a.cap > 0 && a.from != a.to && a.to != s && a.from != t;
        // Slots are u32: two per kept arc, plus NONE kept free.
        let kept = g.arcs().iter().filter(|a| useful(a)).count();
        let slots = kept
            .checked_mul(2)
            .filter(|&x| x < NONE as usize)
            .ok_or(Error::TooLarge {
                field: "arcs (two residual arcs each, excluding self loops and zero capacities)",
                value: 2 * kept as u128,
                limit: NONE as u128 - 1,
            })?;
        let mut nodes = vec![
            Node {
                excess: 0,
                first: 0,
                current: 0,
                label: 0,
                next: NONE,
                prev: NONE,
            };
            n + 1
        ];
        for a in g.arcs().iter().filter(|a| useful(a)) {
            nodes[a.from as usize].first += 1;
            nodes[a.to as usize].first += 1;
        }
        // Exclusive prefix sum: `first` becomes each node's start.
        let mut sum = 0u32;
        for node in nodes.iter_mut() {
            let deg = node.first;
            node.first = sum;
            node.current = sum;
            sum += deg;
        }
        debug_assert_eq!(sum as usize, slots);
        let mut arcs: Vec<ResArc<C>> = Vec::with_capacity(slots);
        trident_core::mem::advise_huge(&mut arcs);
        arcs.resize(
            slots,
            ResArc {
                head: 0,
                rev: 0,
                res: C::ZERO,
            },
        );
        let mut slot = vec![NONE; g.arcs().len()];
        for (i, a) in g.arcs().iter().enumerate() {
            if !useful(a) {
                continue;
            }
            let (u, v) = (a.from as usize, a.to as usize);
            let fwd = nodes[u].current;
            nodes[u].current += 1;
            let bwd = nodes[v].current;
            nodes[v].current += 1;
            arcs[fwd as usize] = ResArc {
                head: a.to,
                rev: bwd,
                res: C::from_i64(a.cap),
            };
            arcs[bwd as usize] = ResArc {
                head: a.from,
                rev: fwd,
                res: C::ZERO,
            };
            slot[i] = fwd;
        }
        for node in nodes.iter_mut() {
            node.current = node.first;
        }
        let dead = n as u32;
        Ok(Self {
            nodes,
            arcs,
            slot,
            buckets: vec![EMPTY; n],
            n,
            s,
            t,
            target: t,
            dead,
            a_max: 0,
            d_max: 0,
            work: 0,
            work_limit: GLOBAL_FREQ_INV * (GLOBAL_NODE_WEIGHT * n as u64 + slots as u64),
            queue: VecDeque::new(),
            stats: Stats::default(),
        })
    }

    fn finish(mut self, g: &FlowNetwork) -> NetworkFlow {
        // Phase 1: saturate every arc out of s, push towards t.
        let s = self.s as usize;
        for e in self.arc_range(s) {
            let a = self.arcs[e];
            if a.res > C::ZERO {
                self.arcs[e].res = C::ZERO;
                self.arcs[a.rev as usize].res = a.res;
                self.nodes[a.head as usize].excess += a.res.to_i64();
                self.nodes[s].excess -= a.res.to_i64();
            }
        }
        let trace = tracing::enabled!(tracing::Level::DEBUG);
        let t0 = std::time::Instant::now();
        let c0 = super::grid::cpu_now();
        self.target = self.t;
        self.run();
        let t1 = std::time::Instant::now();
        let c1 = super::grid::cpu_now();
        let stats1 = std::mem::take(&mut self.stats);
        // Phase 2: return the excess stranded at nodes cut off from t.
        self.target = self.s;
        self.run();
        if trace {
            tracing::debug!(
                phase1_ms = (t1 - t0).as_secs_f64() * 1e3,
                phase1_cpu_ms = (c1 - c0) * 1e3,
                phase1 = ?stats1,
                phase2_ms = t1.elapsed().as_secs_f64() * 1e3,
                phase2_cpu_ms = (super::grid::cpu_now() - c1) * 1e3,
                phase2 = ?self.stats,
                "network flow phases"
            );
        }
        let flow = self.nodes[self.t as usize].excess;
        debug_assert!(
            (0..self.n).all(|v| v == s || v == self.t as usize || self.nodes[v].excess == 0),
            "phase 2 left excess behind"
        );
        let source_side = self.reachable_from_source();
        let arcs = &self.arcs;
        let arc_flow = g
            .arcs()
            .par_iter()
            .zip(self.slot.par_iter())
            .with_min_len(1 << 14)
            .map(|(a, &e)| {
                if e == NONE {
                    0
                } else {
                    a.cap - arcs[e as usize].res.to_i64()
                }
            })
            .collect();
        NetworkFlow {
            flow,
            source_side,
            arc_flow,
        }
    }

    #[inline(always)]
    fn arc_range(&self, v: usize) -> std::ops::Range<usize> {
        self.nodes[v].first as usize..self.nodes[v + 1].first as usize
    }

    /// Highest-label push-relabel towards `self.target` until no node below
    /// the dead label is active. The node that is not the target (s in phase
    /// 1, t in phase 2) is kept at the dead label, so nothing is pushed into it.
    fn run(&mut self) {
        self.global_relabel();
        loop {
            if self.work > self.work_limit {
                self.global_relabel();
            }
            // The highest non-empty active bucket.
            let v = loop {
                let b = self
                    .buckets
                    .get(self.a_max as usize)
                    .map_or(NONE, |b| b.active);
                if b != NONE {
                    break b;
                }
                if self.a_max == 0 {
                    return;
                }
                self.a_max -= 1;
            };
            let l = self.nodes[v as usize].label as usize;
            self.buckets[l].active = self.nodes[v as usize].next;
            self.discharge(v as usize);
        }
    }

    /// Exact labels by BFS from the target over residual arcs (reversed), and
    /// fresh buckets. Unreached nodes get the dead label.
    fn global_relabel(&mut self) {
        self.work = 0;
        self.stats.globals += 1;
        let dead = self.dead;
        for b in &mut self.buckets[..=(self.d_max as usize).min(self.n.saturating_sub(1))] {
            *b = EMPTY;
        }
        for node in &mut self.nodes[..self.n] {
            node.label = dead;
        }
        let other = if self.target == self.t {
            self.s
        } else {
            self.t
        };
        self.nodes[self.target as usize].label = 0;
        self.a_max = 0;
        self.d_max = 0;
        let mut queue = std::mem::take(&mut self.queue);
        queue.clear();
        queue.push_back(self.target);
        while let Some(v) = queue.pop_front() {
            let v = v as usize;
            let d = self.nodes[v].label + 1;
            for e in self.arc_range(v) {
                let a = self.arcs[e];
                let w = a.head as usize;
                // w -> v must have residual capacity.
                if self.nodes[w].label != dead
                    || a.head == other
                    || self.arcs[a.rev as usize].res == C::ZERO
                {
                    continue;
                }
                let node = &mut self.nodes[w];
                node.label = d;
                node.current = node.first;
                queue.push_back(w as u32);
                if node.excess > 0 {
                    self.push_active(w);
                } else {
                    self.push_inactive(w);
                }
            }
        }
        self.queue = queue;
    }

    #[inline(always)]
    fn push_active(&mut self, v: usize) {
        let l = self.nodes[v].label;
        let b = &mut self.buckets[l as usize];
        self.nodes[v].next = b.active;
        b.active = v as u32;
        self.a_max = self.a_max.max(l);
        self.d_max = self.d_max.max(l);
    }

    #[inline(always)]
    fn push_inactive(&mut self, v: usize) {
        let l = self.nodes[v].label;
        let b = &mut self.buckets[l as usize];
        let head = b.inactive;
        b.inactive = v as u32;
        self.nodes[v].next = head;
        self.nodes[v].prev = NONE;
        if head != NONE {
            self.nodes[head as usize].prev = v as u32;
        }
        self.d_max = self.d_max.max(l);
    }

    #[inline(always)]
    fn remove_inactive(&mut self, v: usize) {
        let Node {
            next, prev, label, ..
        } = self.nodes[v];
        if prev == NONE {
            self.buckets[label as usize].inactive = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next != NONE {
            self.nodes[next as usize].prev = prev;
        }
    }

    /// Pushes `v`'s excess over admissible arcs, relabelling as needed, until
    /// it is spent or `v` is cut off from the target. `v` is in no list.
    fn discharge(&mut self, v: usize) {
        let end = self.nodes[v + 1].first as usize;
        loop {
            let label = self.nodes[v].label;
            let mut excess = self.nodes[v].excess;
            let mut e = self.nodes[v].current as usize;
            while e < end {
                let a = self.arcs[e];
                if a.res > C::ZERO {
                    let w = a.head as usize;
                    // label >= 1 for every node but the target.
                    if self.nodes[w].label == label - 1 {
                        let delta = if excess < a.res.to_i64() {
                            C::from_i64(excess)
                        } else {
                            a.res
                        };
                        self.arcs[e].res -= delta;
                        self.arcs[a.rev as usize].res += delta;
                        let delta = delta.to_i64();
                        self.stats.pushes += 1;
                        if w != self.target as usize && self.nodes[w].excess == 0 {
                            self.remove_inactive(w);
                            self.push_active(w);
                        }
                        self.nodes[w].excess += delta;
                        excess -= delta;
                        if excess == 0 {
                            break;
                        }
                    }
                }
                e += 1;
            }
            self.nodes[v].excess = excess;
            self.nodes[v].current = e as u32;
            if excess == 0 {
                self.push_inactive(v);
                return;
            }
            // Relabel. If v was the last node at its label, no node above it
            // can reach the target any more (labels drop by at most one per
            // residual arc): the gap heuristic retires them all, v included.
            let b = self.buckets[label as usize];
            if b.active == NONE && b.inactive == NONE {
                self.gap(label);
                self.nodes[v].label = self.dead;
                return;
            }
            let start = self.nodes[v].first as usize;
            let mut best = self.dead;
            let mut best_arc = end;
            for e in start..end {
                let a = self.arcs[e];
                if a.res > C::ZERO {
                    let l = self.nodes[a.head as usize].label.saturating_add(1);
                    if l < best {
                        best = l;
                        best_arc = e;
                    }
                }
            }
            self.work += RELABEL_COST + (end - start) as u64;
            self.stats.relabels += 1;
            self.nodes[v].label = best;
            if best >= self.dead {
                return;
            }
            self.nodes[v].current = best_arc as u32;
            self.d_max = self.d_max.max(best);
            self.a_max = self.a_max.max(best);
        }
    }

    /// Retires every node labelled above `label` (none of them can reach the
    /// target).
    fn gap(&mut self, label: u32) {
        self.stats.gaps += 1;
        for l in label + 1..=self.d_max {
            let b = std::mem::replace(&mut self.buckets[l as usize], EMPTY);
            for mut v in [b.active, b.inactive] {
                while v != NONE {
                    let node = &mut self.nodes[v as usize];
                    node.label = self.dead;
                    v = node.next;
                }
            }
        }
        self.d_max = label.saturating_sub(1);
        self.a_max = self.a_max.min(self.d_max);
    }

    /// The canonical cut: nodes reachable from s over residual arcs.
    fn reachable_from_source(&self) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        let mut queue = Vec::new();
        seen[self.s as usize] = true;
        queue.push(self.s);
        let mut head = 0;
        while head < queue.len() {
            let v = queue[head] as usize;
            head += 1;
            for e in self.arc_range(v) {
                let a = self.arcs[e];
                if a.res > C::ZERO && !seen[a.head as usize] {
                    seen[a.head as usize] = true;
                    queue.push(a.head);
                }
            }
        }
        seen
    }
}
