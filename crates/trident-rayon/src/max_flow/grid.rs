//! Boykov-Kolmogorov max flow specialised to 4- and 6-connected grids.
//!
//! The algorithm is the one of Boykov and Kolmogorov, "An experimental comparison
//! of min-cut/max-flow algorithms for energy minimization in vision" (PAMI 2004),
//! with the timestamp/distance heuristics of Kolmogorov's maxflow v3 (the code
//! behind PyMaxflow): two search trees grown from the terminals, FIFO active
//! queue, augment on the first source-sink contact, then adopt orphans.
//!
//! What differs from the pointer-based original is the graph: neighbours are
//! implicit (`v ± 1`, `v ± width`, `v ± width * height`), so a node is one
//! 32-byte record (for `i32` capacities on a 2-D grid) holding its outgoing
//! residuals, its terminal residual and the tree state. A tree link is the
//! direction to the parent (one byte). The reverse of arc `(v, d)` is
//! `(v + off[d], d ^ 1)`. A per-node mask marks the directions whose arc pair
//! has any capacity at all; the pair's residual sum is invariant, so pairs
//! outside the mask are never looked at, and off-grid neighbours (whose planes
//! validation forces to 0) are never dereferenced.
//!
//! Parallelism, in two phases (the bottom-up merging of Liu and Sun,
//! "Parallel graph-cuts by adaptive bottom-up merging", CVPR 2010, with one
//! merge level):
//! 1. The grid is cut into strips of whole rows (whole z-planes in 3-D), one
//!    or two per thread, and BK runs on each strip at once with the arcs
//!    between strips hidden from it. A strip only touches its own nodes (a
//!    disjoint slice of the node array), and the flow it finds is a flow of
//!    the whole graph, since it uses arcs of the graph only.
//! 2. The hidden arcs are shown again and one BK run continues on the whole
//!    grid from the strips' residuals *and their search trees*: every tree
//!    path is still residual, and each strip's trees are maximal inside the
//!    strip, so the only nodes that may grow are tree nodes on a strip's
//!    edge; those start active. This is BK's own invariant, so the run ends
//!    with the maximum flow and the same canonical cut as a serial run (both
//!    are unique), and the result does not depend on the strip count.
//!
//! Most augmenting paths of a vision grid are short and stay inside a strip,
//! so phase 2 is left with the paths that cross strip edges. Small grids
//! (fewer than [`MIN_STRIP_UNITS`] rows per strip) and one-thread pools run
//! phase 2 alone, which is the plain serial BK. Building the node array and
//! the labels run on the pool too.

use std::collections::VecDeque;

use rayon::prelude::*;
use trident_core::{GridCut, GridGraph};

use super::cap::Cap;
use crate::prefetch;

/// `parent` of a node in no tree.
const FREE: u8 = 0xFF;
/// `parent` of a node linked straight to its terminal.
const TERMINAL: u8 = 0xFE;
/// `parent` of a node that lost its tree link and awaits adoption.
const ORPHAN: u8 = 0xFD;
/// `flags`: the node is in the sink tree (meaningful only with a parent).
const SINK: u8 = 1;
/// `flags`: the node is in the active queue, or is the current node.
const ACTIVE: u8 = 2;
/// A distance that means "not rooted at a terminal".
const INF_DIST: u32 = u32::MAX;

/// One grid node: residuals and BK tree state, kept together so that touching
/// a neighbour costs one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Node<C, const D: usize> {
    /// Residual capacity of `v -> v + off[d]`.
    rc: [C; D],
    /// Terminal residual: `> 0` from the source, `< 0` to the sink (the smaller
    /// of the two terminal capacities is pushed through at build time).
    tr: C,
    /// Time at which `dist` was last known right.
    ts: u32,
    /// Heuristic distance to the tree's terminal.
    dist: u32,
    /// Direction to the parent, or FREE / TERMINAL / ORPHAN.
    parent: u8,
    /// SINK | ACTIVE.
    flags: u8,
    /// Bit `d` set iff the arc pair `(v, d)` has non-zero total capacity.
    mask: u8,
}

/// Iterates the set bits of a direction mask.
#[inline(always)]
fn bits(mut m: u8) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let d = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(d)
        }
    })
}

/// Solves `g` with `D` directions (4 or 6): `i32` residuals when they provably
/// fit, else `i64`. Runs on the current rayon pool, with two strips per
/// thread; a one-thread pool runs the plain serial BK, since strips there
/// would only add phase 2's work.
pub(crate) fn solve<const D: usize>(g: &GridGraph) -> GridCut {
    let threads = rayon::current_num_threads();
    solve_in_strips::<D>(g, if threads > 1 { 2 * threads } else { 1 })
}

/// [`solve`] with at most `strips` strips in phase 1 (1: serial BK).
pub(crate) fn solve_in_strips<const D: usize>(g: &GridGraph, strips: usize) -> GridCut {
    let t0 = std::time::Instant::now();
    let c0 = cpu_now();
    let built = Built::<i32, D>::build(g);
    tracing::debug!(
        ms = t0.elapsed().as_secs_f64() * 1e3,
        cpu_ms = (cpu_now() - c0) * 1e3,
        "grid cut build"
    );
    // A valid GridGraph's capacities total at most i64::MAX, so every
    // residual fits i64 and the build cannot fail.
    #[allow(clippy::expect_used)]
    match built {
        Some(b) => b.finish(g, strips),
        None => Built::<i64, D>::build(g)
            .expect("i64 holds every residual of a valid GridGraph")
            .finish(g, strips),
    }
}

/// Phase 1 gives each strip at least this many rows (z-planes in 3-D): thinner
/// strips leave most augmenting paths crossing an edge, for phase 2.
const MIN_STRIP_UNITS: usize = 32;

/// The node array and the flow pushed straight from s to t while building.
struct Built<C, const D: usize> {
    nodes: Vec<Node<C, D>>,
    off: [usize; D],
    flow: i64,
}

/// BK's state over a slice of nodes: the whole grid, or one strip of it.
struct Solver<'a, C, const D: usize> {
    nodes: &'a mut [Node<C, D>],
    /// Index offset of each direction's neighbour, as a wrapping `usize`.
    off: [usize; D],
    /// The initial active queue is every terminal-linked node in index order;
    /// it is kept implicit (flag INIT) and scanned with this cursor before
    /// `active`, which saves a queue of `n` entries.
    cursor: usize,
    active: VecDeque<u32>,
    /// Orphans made by one augmentation, processed last-found first.
    new_orphans: Vec<u32>,
    /// Orphans made while adopting (FIFO).
    orphans: VecDeque<u32>,
    time: u32,
    flow: i64,
}

/// Nodes per parallel task when building.
const BUILD_CHUNK: usize = 1 << 14;

/// `flags`: the node is still in the implicit initial active queue.
const INIT: u8 = 4;

impl<C: Cap, const D: usize> Built<C, D> {
    /// The residual graph with every terminal-linked node active, or `None`
    /// when some residual might not fit `C`.
    fn build(g: &GridGraph) -> Option<Self> {
        assert_eq!(g.dirs().len(), D);
        let n = g.nodes();
        let (_, h, w) = g.shape();
        let mut off = [0usize; D];
        let steps = [
            1isize,
            -1,
            w as isize,
            -(w as isize),
            (w * h) as isize,
            -((w * h) as isize),
        ];
        for d in 0..D {
            off[d] = steps[d] as usize;
        }
        let (src, snk, caps) = (g.source(), g.sink(), g.caps());
        let planes: [&[i64]; D] = std::array::from_fn(|d| &caps[d * n..(d + 1) * n]);
        let limit = C::MAX.to_i64();
        let mut nodes: Vec<Node<C, D>> = Vec::with_capacity(n);
        trident_core::mem::advise_huge(&mut nodes);
        // Row by row, so that every neighbour's plane entry is a slice read
        // (a missing neighbour row reads zeros). Per chunk: the flow pushed
        // straight from s to t, and whether some residual might not fit C.
        let (depth, h, w) = g.shape();
        let rows_per_chunk = BUILD_CHUNK.div_ceil(w.max(1));
        let zeros = vec![0i64; w];
        let parts: Vec<(i64, bool)> = nodes.spare_capacity_mut()[..n]
            .par_chunks_mut(rows_per_chunk * w.max(1))
            .enumerate()
            .map(|(ci, out)| {
                let mut flow = 0i64;
                let mut big = false;
                for (ri, out) in out.chunks_mut(w).enumerate() {
                    let r = ci * rows_per_chunk + ri;
                    let (y, z) = (r % h, r / h);
                    let base = r * w;
                    let row = |d: usize, start: usize| &planes[d][start..start + w];
                    let cur: [&[i64]; D] = std::array::from_fn(|d| row(d, base));
                    // The reverse plane of each direction, shifted to the
                    // neighbour's row (x directions are handled in the loop).
                    let back: [&[i64]; D] = std::array::from_fn(|d| match d {
                        2 if y + 1 < h => row(3, base + w),
                        3 if y > 0 => row(2, base - w),
                        4 if z + 1 < depth => row(5, base + w * h),
                        5 if z > 0 => row(4, base - w * h),
                        _ => &zeros[..],
                    });
                    let (srow, trow) = (&src[base..base + w], &snk[base..base + w]);
                    for x in 0..w {
                        let mut rc = [C::ZERO; D];
                        let mut mask = 0u8;
                        for d in 0..D {
                            let c = cur[d][x];
                            let back = match d {
                                0 => cur[1].get(x + 1).copied().unwrap_or(0),
                                1 if x > 0 => cur[0][x - 1],
                                1 => 0,
                                _ => back[d][x],
                            };
                            // A residual never exceeds its pair's capacity.
                            big |= c + back > limit;
                            rc[d] = C::from_i64(c.min(limit));
                            mask |= u8::from((c | back) != 0) << d;
                        }
                        let (s, t) = (srow[x], trow[x]);
                        big |= s.max(t) > limit;
                        flow += s.min(t);
                        out[x].write(Node {
                            rc,
                            tr: C::from_i64(s.min(limit) - t.min(limit)),
                            ts: 0,
                            dist: 1,
                            parent: if s != t { TERMINAL } else { FREE },
                            flags: match s.cmp(&t) {
                                std::cmp::Ordering::Less => SINK | ACTIVE | INIT,
                                std::cmp::Ordering::Greater => ACTIVE | INIT,
                                std::cmp::Ordering::Equal => 0,
                            },
                            mask,
                        });
                    }
                }
                (flow, big)
            })
            .collect();
        // SAFETY: the chunks above cover all n slots and wrote every one.
        unsafe { nodes.set_len(n) };
        if parts.iter().any(|p| p.1) {
            return None;
        }
        let flow = parts.iter().map(|p| p.0).sum();
        Some(Built { nodes, off, flow })
    }

    /// Runs both phases (phase 1 with at most `strips` strips) and reads the
    /// canonical cut.
    fn finish(mut self, g: &GridGraph, strips: usize) -> GridCut {
        let trace = tracing::enabled!(tracing::Level::DEBUG);
        let t1 = std::time::Instant::now();
        let c1 = cpu_now();
        let (depth, h, w) = g.shape();
        // Strips are runs of whole units: z-planes of a 3-D grid, else rows.
        let (unit, units, dpos) = if depth > 1 {
            (w * h, depth, 4)
        } else {
            (w, h, 2)
        };
        let strips = strips.min(units / MIN_STRIP_UNITS).max(1);
        let mut flow = self.flow;
        let mut time = 0;
        let mut edges = Vec::new();
        if strips > 1 && unit > 0 {
            // Strip i holds units [units * i / strips, units * (i + 1) / strips).
            edges = (1..strips).map(|i| units * i / strips * unit).collect();
            let saved = hide_edges(&mut self.nodes, &edges, unit, dpos);
            let mut parts: Vec<&mut [Node<C, D>]> = Vec::with_capacity(strips);
            let mut rest = &mut self.nodes[..];
            let mut at = 0;
            for &e in &edges {
                let (head, tail) = rest.split_at_mut(e - at);
                parts.push(head);
                rest = tail;
                at = e;
            }
            parts.push(rest);
            let off = self.off;
            let done: Vec<(i64, u32)> = parts
                .into_par_iter()
                .with_max_len(1)
                .map(|nodes| {
                    let mut s = Solver::new(nodes, off, 0);
                    s.run();
                    (s.flow, s.time)
                })
                .collect();
            show_edges(&mut self.nodes, &edges, unit, &saved);
            flow += done.iter().map(|d| d.0).sum::<i64>();
            time = done.iter().map(|d| d.1).max().unwrap_or(0);
        }
        let c_mid = cpu_now();
        let t_mid = std::time::Instant::now();
        let mut s = Solver::new(&mut self.nodes, self.off, flow);
        if !edges.is_empty() {
            // Phase 2: the strips' trees stand and no node is left in the
            // implicit initial queue; the tree nodes on either side of each
            // strip edge are the only ones that may grow. Stamps from the
            // strips are older than any stamp of this run.
            s.cursor = s.nodes.len();
            s.time = time;
            for &e in &edges {
                for v in e - unit..e + unit {
                    if s.at(v).parent != FREE {
                        s.set_active(v);
                    }
                }
            }
        }
        s.run();
        let c2 = cpu_now();
        let t2 = std::time::Instant::now();
        let source_side = s.labels();
        let t3 = std::time::Instant::now();
        if trace {
            let bfs = s.reachable_from_source();
            let t4 = std::time::Instant::now();
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            tracing::debug!(
                strips = edges.len() + 1,
                phase1_ms = ms(t_mid - t1),
                phase1_cpu_ms = (c_mid - c1) * 1e3,
                phase2_ms = ms(t2 - t_mid),
                phase2_cpu_ms = (c2 - c_mid) * 1e3,
                labels_ms = ms(t3 - t2),
                bfs_ms = ms(t4 - t3),
                bfs_same = bfs == source_side,
                "grid cut phases"
            );
        }
        debug_assert!(source_side == s.reachable_from_source());
        GridCut {
            flow: s.flow,
            source_side,
        }
    }
}

/// Clears, in the direction masks, the arcs that cross each strip edge (`e`:
/// index of the first node of a strip; the arcs run between units `e - unit..e`
/// and `e..e + unit` in directions `dpos` and `dpos + 1`), so that phase 1
/// never leaves its strip. Returns the masks it changed, for [`show_edges`].
fn hide_edges<C, const D: usize>(
    nodes: &mut [Node<C, D>],
    edges: &[usize],
    unit: usize,
    dpos: usize,
) -> Vec<u8> {
    let mut saved = Vec::with_capacity(edges.len() * 2 * unit);
    for &e in edges {
        for v in e - unit..e + unit {
            let d = if v < e { dpos } else { dpos + 1 };
            saved.push(nodes[v].mask);
            nodes[v].mask &= !(1 << d);
        }
    }
    saved
}

/// Restores the masks that [`hide_edges`] changed. Phase 1 never touched the
/// hidden arcs' residuals, so the saved masks are still right.
fn show_edges<C, const D: usize>(
    nodes: &mut [Node<C, D>],
    edges: &[usize],
    unit: usize,
    saved: &[u8],
) {
    let mut it = saved.iter();
    for &e in edges {
        for v in e - unit..e + unit {
            if let Some(&m) = it.next() {
                nodes[v].mask = m;
            }
        }
    }
}

impl<'a, C: Cap, const D: usize> Solver<'a, C, D> {
    /// BK over `nodes` as built (terminal-linked nodes active through their
    /// INIT flag), counting flow on from `flow`.
    fn new(nodes: &'a mut [Node<C, D>], off: [usize; D], flow: i64) -> Self {
        Self {
            nodes,
            off,
            cursor: 0,
            active: VecDeque::new(),
            new_orphans: Vec::new(),
            orphans: VecDeque::new(),
            time: 0,
            flow,
        }
    }

    #[inline(always)]
    fn at(&self, v: usize) -> &Node<C, D> {
        debug_assert!(v < self.nodes.len());
        unsafe { self.nodes.get_unchecked(v) }
    }

    #[inline(always)]
    fn at_mut(&mut self, v: usize) -> &mut Node<C, D> {
        debug_assert!(v < self.nodes.len());
        unsafe { self.nodes.get_unchecked_mut(v) }
    }

    #[inline(always)]
    fn nb(&self, v: usize, d: usize) -> usize {
        v.wrapping_add(self.off[d])
    }

    #[inline(always)]
    fn set_active(&mut self, v: usize) {
        let n = self.at_mut(v);
        if n.flags & ACTIVE == 0 {
            n.flags |= ACTIVE;
            self.active.push_back(v as u32);
        }
    }

    fn next_active(&mut self) -> Option<usize> {
        while self.cursor < self.nodes.len() {
            let v = self.cursor;
            self.cursor += 1;
            let n = self.at_mut(v);
            if n.flags & INIT != 0 {
                n.flags &= !(INIT | ACTIVE);
                if n.parent != FREE {
                    return Some(v);
                }
            }
        }
        while let Some(v) = self.active.pop_front() {
            if let Some(&u) = self.active.get(PREFETCH) {
                prefetch(self.at(u as usize));
            }
            let n = self.at_mut(v as usize);
            n.flags &= !ACTIVE;
            if n.parent != FREE {
                return Some(v as usize);
            }
        }
        None
    }

    fn run(&mut self) {
        let mut current: Option<usize> = None;
        loop {
            let i = match current.take() {
                Some(i)
                    if {
                        let n = self.at_mut(i);
                        n.flags &= !ACTIVE;
                        n.parent != FREE
                    } =>
                {
                    i
                }
                _ => match self.next_active() {
                    Some(i) => i,
                    None => break,
                },
            };
            let middle = if self.at(i).flags & SINK == 0 {
                self.grow::<false>(i)
            } else {
                self.grow::<true>(i)
            };
            self.tick();
            if let Some((p, d)) = middle {
                // Keep growing from i after the augmentation: it likely has
                // more contacts with the other tree.
                self.at_mut(i).flags |= ACTIVE;
                current = Some(i);
                self.augment(p, d);
                self.adopt();
            }
        }
    }

    /// Advances the clock. Timestamps must never repeat while a stale stamp
    /// survives (an equal stamp is trusted as "rooted this round"), so on
    /// wrap-around every stamp is reset.
    fn tick(&mut self) {
        if self.time == u32::MAX {
            for n in self.nodes.iter_mut() {
                n.ts = 0;
            }
            self.time = 0;
        }
        self.time += 1;
    }

    /// Grows the tree of `i` (the sink tree iff `SNK`) by its neighbourhood;
    /// returns the middle arc `(p, d)` (p in the source tree, `p + off[d]` in
    /// the sink tree) on contact with the other tree.
    #[inline(always)]
    fn grow<const SNK: bool>(&mut self, i: usize) -> Option<(usize, usize)> {
        let ni = *self.at(i);
        let (ts, dist) = (ni.ts, ni.dist);
        let sink = if SNK { SINK } else { 0 };
        for d in bits(ni.mask) {
            let j = self.nb(i, d);
            // The arc that would carry flow away from the source.
            let open = if SNK {
                self.at(j).rc[d ^ 1] > C::ZERO
            } else {
                ni.rc[d] > C::ZERO
            };
            if !open {
                continue;
            }
            let nj = self.at_mut(j);
            if nj.parent == FREE {
                nj.flags = (nj.flags & !SINK) | sink;
                nj.parent = (d ^ 1) as u8;
                nj.ts = ts;
                nj.dist = dist + 1;
                self.set_active(j);
            } else if nj.flags & SINK != sink {
                return Some(if SNK { (j, d ^ 1) } else { (i, d) });
            } else if nj.ts <= ts && nj.dist > dist {
                // A shorter path to the terminal through i.
                nj.parent = (d ^ 1) as u8;
                nj.ts = ts;
                nj.dist = dist + 1;
            }
        }
        None
    }

    /// Pushes the bottleneck along source path -> (p, d) -> sink path.
    fn augment(&mut self, p: usize, d: usize) {
        let q = self.nb(p, d);
        let mut b = self.at(p).rc[d];
        let mut v = p;
        loop {
            let pd = self.at(v).parent;
            if pd == TERMINAL {
                break;
            }
            let u = self.nb(v, pd as usize);
            b = b.min(self.at(u).rc[pd as usize ^ 1]);
            v = u;
        }
        b = b.min(self.at(v).tr);
        let mut v = q;
        loop {
            let pd = self.at(v).parent;
            if pd == TERMINAL {
                break;
            }
            b = b.min(self.at(v).rc[pd as usize]);
            v = self.nb(v, pd as usize);
        }
        b = b.min(-self.at(v).tr);
        debug_assert!(b > C::ZERO);

        self.at_mut(p).rc[d] -= b;
        self.at_mut(q).rc[d ^ 1] += b;
        let mut v = p;
        loop {
            let pd = self.at(v).parent;
            if pd == TERMINAL {
                break;
            }
            let pd = pd as usize;
            let u = self.nb(v, pd);
            self.at_mut(v).rc[pd] += b;
            let r = &mut self.at_mut(u).rc[pd ^ 1];
            *r -= b;
            if *r == C::ZERO {
                self.orphan_now(v);
            }
            v = u;
        }
        let t = &mut self.at_mut(v).tr;
        *t -= b;
        if *t == C::ZERO {
            self.orphan_now(v);
        }
        let mut v = q;
        loop {
            let pd = self.at(v).parent;
            if pd == TERMINAL {
                break;
            }
            let pd = pd as usize;
            let u = self.nb(v, pd);
            self.at_mut(u).rc[pd ^ 1] += b;
            let r = &mut self.at_mut(v).rc[pd];
            *r -= b;
            if *r == C::ZERO {
                self.orphan_now(v);
            }
            v = u;
        }
        let t = &mut self.at_mut(v).tr;
        *t += b;
        if *t == C::ZERO {
            self.orphan_now(v);
        }
        self.flow += b.to_i64();
    }

    #[inline(always)]
    fn orphan_now(&mut self, v: usize) {
        self.at_mut(v).parent = ORPHAN;
        self.new_orphans.push(v as u32);
    }

    /// Processes the orphans of the last augmentation: each one's cascade runs
    /// to completion before the next (maxflow v3's order).
    fn adopt(&mut self) {
        while let Some(o) = self.new_orphans.pop() {
            self.process_orphan(o as usize);
            while let Some(o) = self.orphans.pop_front() {
                self.process_orphan(o as usize);
            }
        }
    }

    fn process_orphan(&mut self, i: usize) {
        if self.at(i).flags & SINK == 0 {
            self.adopt_one::<false>(i)
        } else {
            self.adopt_one::<true>(i)
        }
    }

    /// Finds orphan `i` a new parent in its tree (the sink tree iff `SNK`),
    /// preferring the one closest to the terminal; failing that, frees `i`,
    /// orphans its children and activates the neighbours that could adopt it.
    #[inline(always)]
    fn adopt_one<const SNK: bool>(&mut self, i: usize) {
        let time = self.time;
        let ni = *self.at(i);
        let sink = if SNK { SINK } else { 0 };
        let mut best = FREE;
        let mut best_dist = INF_DIST;
        for d in bits(ni.mask) {
            let j = self.nb(i, d);
            let nj = self.at(j);
            // The arc from the tree towards i (source tree) or from i
            // towards the tree (sink tree) must be open.
            let open = if SNK {
                ni.rc[d] > C::ZERO
            } else {
                nj.rc[d ^ 1] > C::ZERO
            };
            if !open || nj.parent == FREE || nj.flags & SINK != sink {
                continue;
            }
            // Is j rooted at the terminal? Walk up until a node stamped in
            // this round, the terminal, or an orphan.
            let mut k = j;
            let mut dd: u32 = 0;
            loop {
                let nk = self.at_mut(k);
                if nk.ts == time {
                    dd = dd.saturating_add(nk.dist);
                    break;
                }
                let pa = nk.parent;
                dd += 1;
                if pa == TERMINAL {
                    nk.ts = time;
                    nk.dist = 1;
                    break;
                }
                if pa == ORPHAN {
                    dd = INF_DIST;
                    break;
                }
                k = self.nb(k, pa as usize);
            }
            if dd == INF_DIST {
                continue;
            }
            if dd < best_dist {
                best = d as u8;
                best_dist = dd;
            }
            // Stamp the path so later walks stop early.
            let mut k = j;
            while self.at(k).ts != time {
                let nk = self.at_mut(k);
                nk.ts = time;
                nk.dist = dd;
                dd -= 1;
                let pa = nk.parent as usize;
                k = self.nb(k, pa);
            }
        }
        if best != FREE {
            let n = self.at_mut(i);
            n.parent = best;
            n.ts = time;
            n.dist = best_dist + 1;
            return;
        }
        self.at_mut(i).parent = FREE;
        for d in bits(ni.mask) {
            let j = self.nb(i, d);
            let nj = *self.at(j);
            if nj.parent == FREE || nj.flags & SINK != sink {
                continue;
            }
            let open = if SNK {
                ni.rc[d] > C::ZERO
            } else {
                nj.rc[d ^ 1] > C::ZERO
            };
            if open {
                self.set_active(j);
            }
            if nj.parent as usize == d ^ 1 {
                self.at_mut(j).parent = ORPHAN;
                self.orphans.push_back(j as u32);
            }
        }
    }

    /// Source-tree membership. At termination the source tree is closed under
    /// residual arcs (an open arc to a free or sink node would have kept its
    /// tail active) and every tree path is residual, so this is exactly the
    /// set reachable from s; debug builds check it against a BFS.
    fn labels(&self) -> Vec<bool> {
        let mut out = Vec::with_capacity(self.nodes.len());
        self.nodes
            .par_iter()
            .with_min_len(1 << 14)
            .map(|n| n.parent != FREE && n.flags & SINK == 0)
            .collect_into_vec(&mut out);
        out
    }

    /// The canonical cut by breadth-first search over the final residual graph.
    fn reachable_from_source(&self) -> Vec<bool> {
        let n = self.nodes.len();
        let mut seen = vec![false; n];
        let mut queue: Vec<u32> = Vec::new();
        for (v, node) in self.nodes.iter().enumerate() {
            if node.tr > C::ZERO {
                seen[v] = true;
                queue.push(v as u32);
            }
        }
        let mut head = 0;
        while head < queue.len() {
            let v = queue[head] as usize;
            head += 1;
            let node = self.at(v);
            for d in bits(node.mask) {
                if node.rc[d] > C::ZERO {
                    let j = self.nb(v, d);
                    if !seen[j] {
                        seen[j] = true;
                        queue.push(j as u32);
                    }
                }
            }
        }
        seen
    }
}

/// How far ahead in the active queue to prefetch.
const PREFETCH: usize = 8;

/// This thread's CPU time in seconds.
#[cfg(unix)]
pub(super) fn cpu_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Wall time from a fixed origin where no portable thread CPU clock exists
/// (Windows): the same unit, close enough for the solver's time budgeting.
#[cfg(not(unix))]
pub(super) fn cpu_now() -> f64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}

#[cfg(test)]
mod tests {
    use trident_testkit::{cases, seed_from_env};

    use super::solve_in_strips;

    /// Phase 1 on strips must not change the answer: the flow and the
    /// canonical cut are unique, so every strip count gives the serial result
    /// bit for bit (the serial BK is checked against the reference in
    /// `tests/max_flow.rs`).
    #[test]
    fn strips_give_the_serial_answer() {
        let base = seed_from_env();
        let grids = [
            ("cut(256)", cases::cut(256, base)),
            (
                "2-D, cap 20",
                cases::random_grid(1, 300, 70, false, 20, base + 1),
            ),
            (
                "2-D, cap 1e3",
                cases::random_grid(1, 200, 257, false, 1_000, base + 2),
            ),
            ("3-D", cases::random_grid(140, 6, 7, true, 20, base + 3)),
            (
                "i64 residuals",
                cases::random_grid(1, 130, 40, false, 3_000_000_000, base + 4),
            ),
        ];
        for (what, g) in &grids {
            let serial = if g.is_3d() {
                solve_in_strips::<6>(g, 1)
            } else {
                solve_in_strips::<4>(g, 1)
            };
            for strips in [2, 3, 4, 7, 9] {
                let got = if g.is_3d() {
                    solve_in_strips::<6>(g, strips)
                } else {
                    solve_in_strips::<4>(g, strips)
                };
                assert_eq!(
                    got, serial,
                    "{what} with {strips} strips; repro: TRIDENT_SEED={base:#x}"
                );
            }
        }
    }
}
