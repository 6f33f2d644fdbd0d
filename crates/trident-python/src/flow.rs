//! Max flow: `maximum_flow` over a scipy CSR graph, and `FlowGraph`, the
//! state behind `trident_compute.maxflow`'s PyMaxflow-style `Graph`.
//!
//! `FlowGraph` keeps a graph whose nodes are one 1-, 2- or 3-D grid and whose
//! edges all join grid neighbours as Trident's `GridGraph` (capacity planes,
//! solved by the grid solvers); the first node or edge outside that shape
//! turns it into a general network (arcs, plus a source and a sink node).
//!
//! Terminal capacities follow Boykov-Kolmogorov's `add_tweights`: a node's
//! source and sink capacities are summed over calls, and the smaller of the
//! two is moved into a constant added to the flow, so at most one of them
//! stays non-zero. Negative terminal capacities are allowed as in BK (the
//! constant then shrinks); the flow is that constant plus the max flow of
//! the remaining, non-negative graph, as BK's `maxflow()` returns it.
//!
//! Every capacity is checked when it is added (ids in range, edge capacities
//! `>= 0`, the sum of all capacities within `i64`), so errors name the call
//! that added the bad value. The Python layer calls `finish` after each bulk
//! (grid) call, which builds the validated `GridGraph` then, so that
//! `maxflow()` is the solve alone, as BK's is; one-node calls leave the
//! build to `maxflow()`.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use trident::{Dir, FlowArc, FlowNetwork, GridGraph, MaxFlow};

use crate::arrays::{self, Index};
use crate::errors;
use crate::handles::{compute, compute_in, detached};

/// `scipy.sparse.csgraph.maximum_flow` on a CSR graph of `nodes` nodes
/// whose entry `(i, j)` is the capacity of arc `i -> j` (duplicates are
/// parallel arcs): `(flow_value, source_side, indptr, indices, data)`, the
/// last three scipy's net flow matrix (see [`net_flow`]).
#[pyfunction]
#[pyo3(signature = (nodes, indptr, indices, caps, source, sink, backend))]
#[allow(clippy::too_many_arguments)]
pub fn maximum_flow<'py>(
    py: Python<'py>,
    nodes: usize,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i64>,
    caps: PyReadonlyArray1<'py, i64>,
    source: i64,
    sink: i64,
    backend: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    const CALL: &str = "maximum_flow";
    let node = |name: &str, v: i64| -> PyResult<u32> {
        if v < 0 || v as u64 >= nodes as u64 {
            return Err(errors::value(
                CALL,
                format!("argument {name}: {v} is not a vertex of a graph of {nodes} vertices"),
            ));
        }
        u32::try_from(v)
            .map_err(|_| errors::value(CALL, format!("argument {name}: {v} is too large")))
    };
    let (s, t) = (node("source", source)?, node("sink", sink)?);
    if s == t {
        return Err(errors::value(
            CALL,
            format!("arguments source and sink: both are {s}; they must differ"),
        ));
    }
    let (ptr, idx, cap) = (
        arrays::vector(&indptr)?,
        arrays::vector(&indices)?,
        arrays::vector(&caps)?,
    );
    let bad = |d: String| errors::value(CALL, format!("argument csgraph: {d}"));
    if ptr.len() != nodes + 1 || ptr[0] != 0 {
        return Err(bad(format!(
            "indptr has {} entries starting at {:?}; expected {} starting at 0",
            ptr.len(),
            ptr.first(),
            nodes + 1
        )));
    }
    if ptr[nodes] as u64 != idx.len() as u64 || idx.len() != cap.len() {
        return Err(bad(format!(
            "indptr ends at {} with {} indices and {} capacities",
            ptr[nodes],
            idx.len(),
            cap.len()
        )));
    }
    let arcs = detached(py, CALL, || {
        let mut arcs = Vec::new();
        arcs.try_reserve_exact(idx.len())
            .map_err(|_| errors::to_py(CALL, oom(idx.len(), "the arcs")))?;
        for r in 0..nodes {
            let (lo, hi) = (ptr[r], ptr[r + 1]);
            if lo > hi {
                return Err(bad(format!(
                    "indptr[{}] = {hi} < indptr[{r}] = {lo}",
                    r + 1
                )));
            }
            for p in lo as usize..hi as usize {
                let to = idx[p];
                if to < 0 || to as u64 >= nodes as u64 {
                    return Err(bad(format!(
                        "indices[{p}] = {to} is not a vertex of {nodes}"
                    )));
                }
                arcs.push(FlowArc {
                    from: r as u32,
                    to: to as u32,
                    cap: cap[p],
                });
            }
        }
        Ok(arcs)
    })?;
    let (flow, side, net) = compute_in(py, CALL, backend, Some("csgraph"), move |tr| {
        let g = FlowNetwork::new(nodes, s, t, arcs)?;
        let r = tr.network_flow(&g)?;
        let net = if 2 * g.arcs().len() <= i32::MAX as usize && nodes <= i32::MAX as usize {
            NetFlow::Narrow(net_flow(nodes, g.arcs(), &r.arc_flow)?)
        } else {
            NetFlow::Wide(net_flow(nodes, g.arcs(), &r.arc_flow)?)
        };
        Ok((r.flow, r.source_side, net))
    })?;
    let (indptr, indices, data) = match net {
        NetFlow::Narrow((p, i, d)) => (
            p.into_pyarray(py).into_any(),
            i.into_pyarray(py).into_any(),
            d,
        ),
        NetFlow::Wide((p, i, d)) => (
            p.into_pyarray(py).into_any(),
            i.into_pyarray(py).into_any(),
            d,
        ),
    };
    PyTuple::new(
        py,
        [
            flow.into_pyobject(py)?.into_any(),
            side.into_pyarray(py).into_any(),
            indptr,
            indices,
            data.into_pyarray(py).into_any(),
        ],
    )
}

/// The net flow matrix in CSR arrays, int32 or int64 indices.
enum NetFlow {
    Narrow(Csr<i32>),
    Wide(Csr<i64>),
}

type Csr<I> = (Vec<I>, Vec<I>, Vec<i64>);

/// scipy's flow matrix: entry `(u, v)` is the flow from `u` to `v` minus the
/// flow from `v` to `u`, stored for every pair joined by an arc either way
/// (zeros included, as scipy stores them), columns sorted within each row.
fn net_flow<I: Index>(nodes: usize, arcs: &[FlowArc], flow: &[i64]) -> trident::Result<Csr<I>> {
    let what = || format!("the flow matrix of {} arcs", arcs.len());
    let mut start = trident::mem::try_vec(nodes + 1, 0usize, what)?;
    for a in arcs {
        start[a.from as usize + 1] += 1;
        start[a.to as usize + 1] += 1;
    }
    for v in 0..nodes {
        start[v + 1] += start[v];
    }
    let mut fill = trident::mem::with_capacity(nodes + 1, what)?;
    fill.extend_from_slice(&start);
    let mut entries = trident::mem::try_vec(start[nodes], (0u32, 0i64), what)?;
    for (a, &f) in arcs.iter().zip(flow) {
        for (u, v, x) in [(a.from, a.to, f), (a.to, a.from, -f)] {
            entries[fill[u as usize]] = (v, x);
            fill[u as usize] += 1;
        }
    }
    let mut indptr = trident::mem::with_capacity(nodes + 1, what)?;
    let mut indices = trident::mem::with_capacity(entries.len(), what)?;
    let mut data = trident::mem::with_capacity(entries.len(), what)?;
    indptr.push(I::of(0));
    for v in 0..nodes {
        let row = &mut entries[start[v]..start[v + 1]];
        row.sort_unstable_by_key(|e| e.0);
        for (p, &(col, x)) in row.iter().enumerate() {
            if p > 0 && row[p - 1].0 == col {
                if let Some(last) = data.last_mut() {
                    *last += x;
                }
            } else {
                indices.push(I::of(col as usize));
                data.push(x);
            }
        }
        indptr.push(I::of(indices.len()));
    }
    Ok((indptr, indices, data))
}

fn oom(count: usize, what: &str) -> trident::Error {
    trident::Error::OutOfMemory {
        bytes: (count as u64).saturating_mul(16),
        detail: what.to_string(),
    }
}

/// The grid's `(depth, height, width)` and whether it is 3-D.
#[derive(Clone, Copy)]
struct Shape {
    depth: usize,
    height: usize,
    width: usize,
    three_d: bool,
}

impl Shape {
    fn dirs(&self) -> usize {
        if self.three_d { 6 } else { 4 }
    }

    /// The direction plane of the arc `i -> j`, if `j` is `i`'s neighbour.
    fn dir(&self, i: usize, j: usize) -> Option<usize> {
        let (w, h) = (self.width, self.height);
        let plane = w * h;
        if j == i + 1 && i % w + 1 < w {
            Some(Dir::PosX as usize)
        } else if j + 1 == i && !i.is_multiple_of(w) {
            Some(Dir::NegX as usize)
        } else if j == i + w && (i / w) % h + 1 < h {
            Some(Dir::PosY as usize)
        } else if j + w == i && !(i / w).is_multiple_of(h) {
            Some(Dir::NegY as usize)
        } else if self.three_d && j == i + plane && i / plane + 1 < self.depth {
            Some(Dir::PosZ as usize)
        } else if self.three_d && j + plane == i {
            Some(Dir::NegZ as usize)
        } else {
            None
        }
    }

    fn neighbor(&self, v: usize, dir: usize) -> usize {
        let (w, plane) = (self.width, self.width * self.height);
        match dir {
            0 => v + 1,
            1 => v - 1,
            2 => v + w,
            3 => v - w,
            4 => v + plane,
            _ => v - plane,
        }
    }
}

/// Capacities of a grid as they are added.
struct GridRaw {
    source: Vec<i64>,
    sink: Vec<i64>,
    caps: Vec<i64>,
}

impl GridRaw {
    /// A copy, allocated fallibly (a grid's planes are the largest arrays here).
    fn try_clone(&self) -> trident::Result<Self> {
        let copy = |v: &[i64]| {
            let mut c = trident::mem::with_capacity(v.len(), || {
                format!("a copy of a grid's {} capacities", v.len())
            })?;
            c.extend_from_slice(v);
            Ok::<_, trident::Error>(c)
        };
        Ok(Self {
            source: copy(&self.source)?,
            sink: copy(&self.sink)?,
            caps: copy(&self.caps)?,
        })
    }
}

enum Store {
    /// A grid: the capacities added so far, and the validated `GridGraph`
    /// made of a copy of them, dropped by every change (it is immutable).
    /// Keeping both costs a second copy of the capacities but lets one
    /// node's terminal capacity change without copying the grid back out.
    Grid {
        shape: Shape,
        raw: GridRaw,
        built: Option<GridGraph>,
    },
    /// A general network; node `nodes` is the source, `nodes + 1` the sink.
    Net {
        source: Vec<i64>,
        sink: Vec<i64>,
        arcs: Vec<FlowArc>,
    },
}

/// A max-flow graph built PyMaxflow's way (see the module docs).
#[pyclass(module = "trident_compute._trident")]
pub struct FlowGraph {
    nodes: usize,
    store: Store,
    /// The sum of `min(source, sink)` moved out of the terminal capacities.
    constant: i128,
    /// The sum of every capacity stored: must stay within `i64`.
    total: i128,
    /// Edges added (each with its reverse capacity), for `get_edge_count`.
    edges: u64,
    /// The source side of the last solve, per node.
    cut: Option<Vec<bool>>,
}

const LIMIT: i128 = i64::MAX as i128;

impl FlowGraph {
    /// Turns a grid into a network: one arc per non-zero capacity.
    fn make_network(&mut self) {
        let Store::Grid { shape, raw, .. } = &mut self.store else {
            return;
        };
        let n = raw.source.len();
        let mut arcs = Vec::new();
        for d in 0..shape.dirs() {
            for v in 0..n {
                let cap = raw.caps[d * n + v];
                if cap != 0 {
                    arcs.push(FlowArc {
                        from: v as u32,
                        to: shape.neighbor(v, d) as u32,
                        cap,
                    });
                }
            }
        }
        let source = std::mem::take(&mut raw.source);
        let sink = std::mem::take(&mut raw.sink);
        self.store = Store::Net { source, sink, arcs };
    }

    /// The terminal capacities, ready to change.
    fn terminals(&mut self) -> (&mut Vec<i64>, &mut Vec<i64>) {
        match &mut self.store {
            Store::Grid { raw, built, .. } => {
                *built = None;
                (&mut raw.source, &mut raw.sink)
            }
            Store::Net { source, sink, .. } => (source, sink),
        }
    }

    fn ids(&self, call: &str, name: &str, ids: &[i64]) -> PyResult<()> {
        if let Some(p) = ids
            .iter()
            .position(|&v| v < 0 || v as u64 >= self.nodes as u64)
        {
            return Err(errors::value(
                call,
                format!(
                    "argument {name}: node id {} (at position {p}) is not one of the {} nodes",
                    ids[p], self.nodes
                ),
            ));
        }
        Ok(())
    }

    /// Adds edges `i[p] -> j[p]` of capacity `cap[p]` with reverse
    /// capacity `rcap[p]` (BK's `add_edge`), all checked before any is added.
    fn apply_edges(&mut self, i: &[i64], j: &[i64], cap: &[i64], rcap: &[i64]) -> PyResult<()> {
        const CALL: &str = "add_edges";
        let len = i.len();
        if j.len() != len || cap.len() != len || rcap.len() != len {
            return Err(errors::value(
                CALL,
                "the node and capacity arrays must have the same length",
            ));
        }
        self.ids(CALL, "i", i)?;
        self.ids(CALL, "j", j)?;
        let mut sum = 0i128;
        for (name, c) in [("capacity", cap), ("rcapacity", rcap)] {
            if let Some(p) = c.iter().position(|&v| v < 0) {
                return Err(errors::value(
                    CALL,
                    format!(
                        "{name}[{p}] = {} is negative; edge capacities must be >= 0",
                        c[p]
                    ),
                ));
            }
            sum += c.iter().map(|&v| v as i128).sum::<i128>();
        }
        if self.total + sum > LIMIT {
            return Err(too_large(CALL));
        }
        let on_grid = match &self.store {
            Store::Grid { shape, .. } => {
                (0..len).all(|p| shape.dir(i[p] as usize, j[p] as usize).is_some())
            }
            Store::Net { .. } => false,
        };
        if on_grid {
            if let Store::Grid { shape, raw, built } = &mut self.store {
                *built = None;
                let n = raw.source.len();
                for p in 0..len {
                    let (a, b) = (i[p] as usize, j[p] as usize);
                    if let Some(d) = shape.dir(a, b) {
                        raw.caps[d * n + a] += cap[p];
                        raw.caps[(d ^ 1) * n + b] += rcap[p];
                    }
                }
            }
        } else {
            self.make_network();
            if let Store::Net { arcs, .. } = &mut self.store {
                arcs.try_reserve(2 * len)
                    .map_err(|_| errors::to_py(CALL, oom(2 * len, "the edges")))?;
                for p in 0..len {
                    let (from, to) = (i[p] as u32, j[p] as u32);
                    if cap[p] > 0 {
                        arcs.push(FlowArc {
                            from,
                            to,
                            cap: cap[p],
                        });
                    }
                    if rcap[p] > 0 {
                        arcs.push(FlowArc {
                            from: to,
                            to: from,
                            cap: rcap[p],
                        });
                    }
                }
            }
        }
        self.total += sum;
        self.edges += len as u64;
        self.cut = None;
        Ok(())
    }

    /// Adds `source[p]` to the capacity from the source to node `ids[p]`
    /// and `sink[p]` to its capacity to the sink (BK's `add_tweights`;
    /// negative values allowed), all checked before any is added.
    fn apply_tedges(&mut self, ids: &[i64], cs: &[i64], ct: &[i64]) -> PyResult<()> {
        const CALL: &str = "add_tedges";
        if cs.len() != ids.len() || ct.len() != ids.len() {
            return Err(errors::value(
                CALL,
                "the node and capacity arrays must have the same length",
            ));
        }
        self.ids(CALL, "ids", ids)?;
        let (mut constant, mut total) = (self.constant, self.total);
        let (src, snk) = self.terminals();
        // Apply, remembering the old values, so that a sum out of range can
        // be undone and leave the graph as it was.
        let mut undo: Vec<(usize, i64, i64)> = Vec::with_capacity(ids.len());
        let mut failed = false;
        for p in 0..ids.len() {
            let v = ids[p] as usize;
            let (s, t) = (
                src[v] as i128 + cs[p] as i128,
                snk[v] as i128 + ct[p] as i128,
            );
            let m = s.min(t);
            let (s, t) = (s - m, t - m);
            total += s + t - src[v] as i128 - snk[v] as i128;
            constant += m;
            if s > LIMIT || t > LIMIT || total > LIMIT {
                failed = true;
                break;
            }
            undo.push((v, src[v], snk[v]));
            src[v] = s as i64;
            snk[v] = t as i64;
        }
        if failed {
            for &(v, s, t) in undo.iter().rev() {
                src[v] = s;
                snk[v] = t;
            }
            return Err(too_large(CALL));
        }
        self.constant = constant;
        self.total = total;
        self.cut = None;
        Ok(())
    }

    /// Builds the validated grid if a change dropped it.
    fn build(&mut self) -> PyResult<()> {
        if let Store::Grid { shape, raw, built } = &mut self.store
            && built.is_none()
        {
            let raw = raw.try_clone().map_err(|e| errors::to_py("maxflow", e))?;
            let g = if shape.three_d {
                GridGraph::new_3d(
                    shape.depth,
                    shape.height,
                    shape.width,
                    raw.source,
                    raw.sink,
                    raw.caps,
                )
            } else {
                GridGraph::new_2d(shape.height, shape.width, raw.source, raw.sink, raw.caps)
            };
            *built = Some(g.map_err(|e| errors::to_py("maxflow", e))?);
        }
        Ok(())
    }
}

fn too_large(call: &str) -> PyErr {
    errors::value(
        call,
        "the sum of all capacities of the graph would exceed the int64 range",
    )
}

#[pymethods]
impl FlowGraph {
    #[new]
    fn new() -> Self {
        Self {
            nodes: 0,
            store: Store::Net {
                source: Vec::new(),
                sink: Vec::new(),
                arcs: Vec::new(),
            },
            constant: 0,
            total: 0,
            edges: 0,
            cut: None,
        }
    }

    /// Adds `count` nodes with no edges; returns the first one's id.
    fn add_nodes(&mut self, count: usize) -> PyResult<usize> {
        self.make_network();
        let first = self.nodes;
        // The network form adds a source and a sink to the node ids (u32).
        if first.saturating_add(count) > u32::MAX as usize - 2 {
            return Err(errors::value(
                "add_nodes",
                format!(
                    "{first} + {count} nodes exceed the {} a graph may hold",
                    u32::MAX - 2
                ),
            ));
        }
        let (source, sink) = self.terminals();
        source.resize(first + count, 0);
        sink.resize(first + count, 0);
        self.nodes += count;
        self.cut = None;
        Ok(first)
    }

    /// Adds a grid of nodes of `shape` (1 to 3 axes, row-major ids);
    /// returns the first id. On an empty graph the grid is kept as a grid.
    fn add_grid(&mut self, shape: Vec<usize>) -> PyResult<usize> {
        let count = shape
            .iter()
            .try_fold(1usize, |a, &s| a.checked_mul(s))
            .ok_or_else(|| errors::value("add_grid_nodes", "the grid's size overflows"))?;
        let grid = match shape[..] {
            [w] => Some((1, 1, w, false)),
            [h, w] => Some((1, h, w, false)),
            [d, h, w] => Some((d, h, w, true)),
            _ => None,
        };
        match grid {
            Some((depth, height, width, three_d)) if self.nodes == 0 && count > 0 => {
                let first = self.add_nodes(count)?;
                let shape = Shape {
                    depth,
                    height,
                    width,
                    three_d,
                };
                let (source, sink) = self.terminals();
                let raw = GridRaw {
                    source: std::mem::take(source),
                    sink: std::mem::take(sink),
                    caps: trident::mem::try_vec(shape.dirs() * count, 0, || {
                        format!("the capacity planes of a grid of {count} nodes")
                    })
                    .map_err(|e| errors::to_py("add_grid_nodes", e))?,
                };
                self.store = Store::Grid {
                    shape,
                    raw,
                    built: None,
                };
                Ok(first)
            }
            _ => self.add_nodes(count),
        }
    }

    /// Adds edges `i[p] -> j[p]` of capacity `cap[p]` with reverse
    /// capacity `rcap[p]` (BK's `add_edge`), all checked before any is added.
    fn add_edges(
        &mut self,
        py: Python<'_>,
        i: PyReadonlyArray1<'_, i64>,
        j: PyReadonlyArray1<'_, i64>,
        cap: PyReadonlyArray1<'_, i64>,
        rcap: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<()> {
        let (i, j, cap, rcap) = (
            arrays::vector(&i)?,
            arrays::vector(&j)?,
            arrays::vector(&cap)?,
            arrays::vector(&rcap)?,
        );
        detached(py, "add_edges", || self.apply_edges(&i, &j, &cap, &rcap))
    }

    /// Adds `source[p]` to the capacity from the source to node `ids[p]`
    /// and `sink[p]` to its capacity to the sink (BK's `add_tweights`;
    /// negative values allowed), all checked before any is added.
    fn add_tedges(
        &mut self,
        py: Python<'_>,
        ids: PyReadonlyArray1<'_, i64>,
        source: PyReadonlyArray1<'_, i64>,
        sink: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<()> {
        let (ids, cs, ct) = (
            arrays::vector(&ids)?,
            arrays::vector(&source)?,
            arrays::vector(&sink)?,
        );
        detached(py, "add_tedges", || self.apply_tedges(&ids, &cs, &ct))
    }

    /// Builds the validated grid now, so that `maxflow()` is the solve
    /// alone (a network is built by `maxflow()`).
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        detached(py, "maxflow", || self.build())
    }

    /// Solves; returns the flow including the constant of the terminal
    /// capacities (as BK's `maxflow()`), and keeps the cut.
    #[pyo3(signature = (backend=None))]
    fn maxflow(&mut self, py: Python<'_>, backend: Option<&str>) -> PyResult<i128> {
        const CALL: &str = "maxflow";
        self.finish(py)?;
        let nodes = self.nodes;
        let (flow, side) = match &self.store {
            Store::Grid { built: Some(g), .. } => compute(py, CALL, backend, |t| {
                let c = t.grid_cut(g)?;
                Ok((c.flow, c.source_side))
            })?,
            Store::Net { source, sink, arcs } => compute(py, CALL, backend, |t| {
                let (s, k) = (nodes as u32, nodes as u32 + 1);
                let mut all = Vec::new();
                all.try_reserve_exact(arcs.len() + 2 * nodes)
                    .map_err(|_| oom(arcs.len() + 2 * nodes, "the arcs of the network"))?;
                all.extend_from_slice(arcs);
                for v in 0..nodes {
                    if source[v] > 0 {
                        all.push(FlowArc {
                            from: s,
                            to: v as u32,
                            cap: source[v],
                        });
                    }
                    if sink[v] > 0 {
                        all.push(FlowArc {
                            from: v as u32,
                            to: k,
                            cap: sink[v],
                        });
                    }
                }
                let g = FlowNetwork::new(nodes + 2, s, k, all)?;
                let mut r = t.network_flow(&g)?;
                r.source_side.truncate(nodes);
                Ok((r.flow, r.source_side))
            })?,
            Store::Grid { built: None, .. } => {
                return Err(errors::TridentError::new_err(
                    "maxflow: internal error: the grid was not built",
                ));
            }
        };
        self.cut = Some(side);
        Ok(self.constant + flow as i128)
    }

    /// Per node, `True` on the sink's side of the last cut (PyMaxflow's
    /// `get_grid_segments` convention); all `False` before a solve.
    fn segments<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        match &self.cut {
            Some(side) => side
                .iter()
                .map(|&s| !s)
                .collect::<Vec<_>>()
                .into_pyarray(py),
            None => vec![false; self.nodes].into_pyarray(py),
        }
    }

    /// Whether a solve's cut is available.
    fn solved(&self) -> bool {
        self.cut.is_some()
    }

    fn node_count(&self) -> usize {
        self.nodes
    }

    fn edge_count(&self) -> u64 {
        self.edges
    }

    /// Whether the graph is (still) one grid solved by the grid solver.
    fn is_grid(&self) -> bool {
        matches!(self.store, Store::Grid { .. })
    }
}
