//! Flow problems (vision grids and general networks) and the [`MaxFlow`] trait,
//! plus [`finish`], the GPU backends' shared host completion of a solve.

use std::io::{BufRead, Write};

use crate::{Error, Result};

pub mod finish;

/// A neighbour direction on a grid. The discriminant is the index of the
/// direction's capacity plane in [`GridGraph::caps`]. Non-exhaustive:
/// grids with diagonal neighbours would add directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Dir {
    /// x + 1 (right).
    PosX = 0,
    /// x - 1 (left).
    NegX = 1,
    /// y + 1 (down).
    PosY = 2,
    /// y - 1 (up).
    NegY = 3,
    /// z + 1 (3-D only).
    PosZ = 4,
    /// z - 1 (3-D only).
    NegZ = 5,
}

impl Dir {
    /// All six directions in plane order.
    pub const ALL: [Dir; 6] = [
        Dir::PosX,
        Dir::NegX,
        Dir::PosY,
        Dir::NegY,
        Dir::PosZ,
        Dir::NegZ,
    ];
    /// The opposite direction: the reverse arc of `v -> v+dir` is `v+dir -> v` in
    /// direction `dir.opposite()`.
    pub fn opposite(self) -> Dir {
        Dir::ALL[self as usize ^ 1]
    }
}

/// A 2-D (4-connected) or 3-D (6-connected) grid graph of the graph-cut kind.
///
/// Node `v = (z * height + y) * width + x`. Each node has a terminal capacity from
/// the source and to the sink, and one capacity per direction to its neighbour
/// (asymmetric allowed): `caps[dir * nodes + v]` is the capacity of `v -> v + dir`.
/// A 2-D grid has 4 planes (`PosX..NegY`), a 3-D grid 6. Planes must hold 0 where
/// the neighbour would fall off the grid, so no capacity is silently dropped.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(try_from = "crate::serde_impls::GridParts")
)]
pub struct GridGraph {
    depth: usize,
    height: usize,
    width: usize,
    three_d: bool,
    source: Vec<i64>,
    sink: Vec<i64>,
    caps: Vec<i64>,
    /// Sum of every capacity, kept from the check at construction (a device
    /// backend picks its counter width from it without another pass).
    #[cfg_attr(feature = "serde", serde(skip_serializing))]
    capacity_sum: i64,
    /// Sum of the sink capacities (the flow value is this minus what the
    /// sink arcs keep unused).
    #[cfg_attr(feature = "serde", serde(skip_serializing))]
    sink_sum: i64,
    /// The largest source, sink and neighbour capacity, kept from the same
    /// check (they bound every counter of a solve without a pass).
    #[cfg_attr(feature = "serde", serde(skip_serializing))]
    maxima: [i64; 3],
}

impl GridGraph {
    /// A 2-D `height x width` grid; `caps` holds 4 planes of `height * width`.
    pub fn new_2d(
        height: usize,
        width: usize,
        source: Vec<i64>,
        sink: Vec<i64>,
        caps: Vec<i64>,
    ) -> Result<Self> {
        Self::build(1, height, width, false, source, sink, caps)
    }

    /// A 3-D `depth x height x width` grid; `caps` holds 6 planes.
    pub fn new_3d(
        depth: usize,
        height: usize,
        width: usize,
        source: Vec<i64>,
        sink: Vec<i64>,
        caps: Vec<i64>,
    ) -> Result<Self> {
        Self::build(depth, height, width, true, source, sink, caps)
    }

    fn build(
        depth: usize,
        height: usize,
        width: usize,
        three_d: bool,
        source: Vec<i64>,
        sink: Vec<i64>,
        caps: Vec<i64>,
    ) -> Result<Self> {
        let nodes = depth
            .checked_mul(height)
            .and_then(|x| x.checked_mul(width))
            .filter(|&n| n <= u32::MAX as usize)
            .ok_or(Error::TooLarge {
                field: "grid nodes",
                value: depth as u128 * height as u128 * width as u128,
                limit: u32::MAX as u128,
            })?;
        let dirs = if three_d { 6 } else { 4 };
        if source.len() != nodes {
            return Err(Error::dim(
                "source",
                format!("length {}, expected {nodes} nodes", source.len()),
            ));
        }
        if sink.len() != nodes {
            return Err(Error::dim(
                "sink",
                format!("length {}, expected {nodes} nodes", sink.len()),
            ));
        }
        if caps.len() != dirs * nodes {
            return Err(Error::dim(
                "caps",
                format!("length {}, expected {dirs} planes of {nodes}", caps.len()),
            ));
        }
        let mut g = Self {
            depth,
            height,
            width,
            three_d,
            source,
            sink,
            caps,
            capacity_sum: 0,
            sink_sum: 0,
            maxima: [0; 3],
        };
        let mut total: i64 = 0;
        let mut after = [0i64; 3];
        let mut maxima = [0i64; 3];
        for (k, (field, arr)) in [("source", &g.source), ("sink", &g.sink), ("caps", &g.caps)]
            .into_iter()
            .enumerate()
        {
            for (i, &c) in arr.iter().enumerate() {
                if c < 0 {
                    return Err(Error::NegativeCapacity {
                        field,
                        index: i,
                        value: c,
                    });
                }
                total = total.checked_add(c).ok_or(Error::TooLarge {
                    field: "sum of all capacities",
                    value: total as u128 + c as u128,
                    limit: i64::MAX as u128,
                })?;
                maxima[k] = maxima[k].max(c);
            }
            after[k] = total;
        }
        g.sink_sum = after[1] - after[0];
        g.capacity_sum = total;
        g.maxima = maxima;
        for d in 0..dirs {
            let dir = Dir::ALL[d];
            for v in 0..nodes {
                let c = g.caps[d * nodes + v];
                if c != 0 && g.neighbor(v, dir).is_none() {
                    return Err(Error::arg(
                        "caps",
                        format!(
                            "caps[{}] = {c}: node {v} has no neighbour in direction {dir:?}; border arcs must be 0",
                            d * nodes + v
                        ),
                    ));
                }
            }
        }
        Ok(g)
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.source.len()
    }
    /// `(depth, height, width)`; depth is 1 for 2-D grids.
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.depth, self.height, self.width)
    }
    /// `true` for 6-connected grids.
    pub fn is_3d(&self) -> bool {
        self.three_d
    }
    /// The directions in use: 4 or 6.
    pub fn dirs(&self) -> &'static [Dir] {
        if self.three_d {
            &Dir::ALL
        } else {
            &Dir::ALL[..4]
        }
    }
    /// Source (terminal) capacities.
    pub fn source(&self) -> &[i64] {
        &self.source
    }
    /// Sink (terminal) capacities.
    pub fn sink(&self) -> &[i64] {
        &self.sink
    }
    /// Sum of every capacity (terminal and neighbour); it fits `i64` (checked
    /// at construction), and bounds every residual and excess of a solve.
    pub fn capacity_sum(&self) -> i64 {
        self.capacity_sum
    }
    /// Sum of the sink capacities.
    pub fn sink_sum(&self) -> i64 {
        self.sink_sum
    }
    /// The largest capacity of each kind, `[source, sink, neighbour]` (0 for
    /// an empty grid), kept from the check at construction: with
    /// [`capacity_sum`](Self::capacity_sum) they bound what a solve's
    /// counters can hold, and the narrowest type that carries the grid.
    pub fn max_capacities(&self) -> [i64; 3] {
        self.maxima
    }
    /// All neighbour planes, `dirs().len() * nodes()` values.
    pub fn caps(&self) -> &[i64] {
        &self.caps
    }
    /// The capacity plane of one direction.
    pub fn plane(&self, dir: Dir) -> &[i64] {
        let n = self.nodes();
        &self.caps[dir as usize * n..(dir as usize + 1) * n]
    }
    /// The neighbour of `v` in direction `dir`, if it is on the grid.
    pub fn neighbor(&self, v: usize, dir: Dir) -> Option<usize> {
        let (w, h) = (self.width, self.height);
        let x = v % w;
        let y = (v / w) % h;
        let z = v / (w * h);
        match dir {
            Dir::PosX => (x + 1 < w).then(|| v + 1),
            Dir::NegX => (x > 0).then(|| v - 1),
            Dir::PosY => (y + 1 < h).then(|| v + w),
            Dir::NegY => (y > 0).then(|| v - w),
            Dir::PosZ => (self.three_d && z + 1 < self.depth).then(|| v + w * h),
            Dir::NegZ => (self.three_d && z > 0).then(|| v - w * h),
        }
    }
    /// Capacity of the cut `(S, V \ S)` where `source_side[v]` says `v` is in S:
    /// sink arcs of S nodes, source arcs of the others, and neighbour arcs from S
    /// to the rest.
    pub fn cut_capacity(&self, source_side: &[bool]) -> i64 {
        let n = self.nodes();
        let mut c = 0i64;
        for v in 0..n {
            if source_side[v] {
                c += self.sink[v];
                for &dir in self.dirs() {
                    if let Some(u) = self.neighbor(v, dir)
                        && !source_side[u]
                    {
                        c += self.caps[dir as usize * n + v];
                    }
                }
            } else {
                c += self.source[v];
            }
        }
        c
    }
}

/// One arc of a [`FlowNetwork`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FlowArc {
    /// Tail node (0-based).
    pub from: u32,
    /// Head node (0-based).
    pub to: u32,
    /// Capacity, `>= 0`.
    pub cap: i64,
}

/// A general max-flow instance: `nodes` nodes, arcs (parallel arcs allowed),
/// source `s` and sink `t` with `s != t`. Valid by construction.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(
    feature = "serde",
    derive(serde::Deserialize),
    serde(try_from = "crate::serde_impls::NetworkParts")
)]
pub struct FlowNetwork {
    nodes: usize,
    source: u32,
    sink: u32,
    arcs: Vec<FlowArc>,
}

impl FlowNetwork {
    /// Checks and wraps a network.
    ///
    /// ```
    /// # use trident_core::{FlowArc, FlowNetwork};
    /// let g = FlowNetwork::new(2, 0, 1, vec![FlowArc { from: 0, to: 1, cap: 5 }]).unwrap();
    /// assert!(FlowNetwork::new(2, 1, 1, vec![]).is_err()); // s == t
    /// # let _ = g;
    /// ```
    pub fn new(nodes: usize, source: u32, sink: u32, arcs: Vec<FlowArc>) -> Result<Self> {
        if nodes > u32::MAX as usize {
            return Err(Error::TooLarge {
                field: "nodes",
                value: nodes as u128,
                limit: u32::MAX as u128,
            });
        }
        if source as usize >= nodes {
            return Err(Error::arg(
                "source",
                format!("s = {source} is out of range for {nodes} nodes"),
            ));
        }
        if sink as usize >= nodes {
            return Err(Error::arg(
                "sink",
                format!("t = {sink} is out of range for {nodes} nodes"),
            ));
        }
        if source == sink {
            return Err(Error::arg("sink", format!("s == t == {source}")));
        }
        let mut total: i64 = 0;
        for (i, a) in arcs.iter().enumerate() {
            if a.from as usize >= nodes || a.to as usize >= nodes {
                return Err(Error::arg(
                    "arcs",
                    format!(
                        "arcs[{i}] = ({}, {}) has an endpoint out of range for {nodes} nodes",
                        a.from, a.to
                    ),
                ));
            }
            if a.cap < 0 {
                return Err(Error::NegativeCapacity {
                    field: "arcs.cap",
                    index: i,
                    value: a.cap,
                });
            }
            total = total.checked_add(a.cap).ok_or(Error::TooLarge {
                field: "sum of arc capacities",
                value: total as u128 + a.cap as u128,
                limit: i64::MAX as u128,
            })?;
        }
        Ok(Self {
            nodes,
            source,
            sink,
            arcs,
        })
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }
    /// The source s.
    pub fn source(&self) -> u32 {
        self.source
    }
    /// The sink t.
    pub fn sink(&self) -> u32 {
        self.sink
    }
    /// The arcs.
    pub fn arcs(&self) -> &[FlowArc] {
        &self.arcs
    }

    /// Capacity of the cut: arcs from a `source_side` node to another node.
    pub fn cut_capacity(&self, source_side: &[bool]) -> i64 {
        self.arcs
            .iter()
            .filter(|a| source_side[a.from as usize] && !source_side[a.to as usize])
            .map(|a| a.cap)
            .sum()
    }

    /// Reads a DIMACS max-flow file (`c` comments, `p max N M`, `n ID s`,
    /// `n ID t`, `a U V CAP`; node ids 1-based).
    ///
    /// ```
    /// # use trident_core::FlowNetwork;
    /// let text = "c tiny\np max 2 1\nn 1 s\nn 2 t\na 1 2 7\n";
    /// let g = FlowNetwork::read_dimacs(text.as_bytes()).unwrap();
    /// assert_eq!((g.nodes(), g.arcs()[0].cap), (2, 7));
    /// ```
    pub fn read_dimacs(input: impl BufRead) -> Result<Self> {
        let mut nodes: Option<(usize, usize)> = None;
        let (mut s, mut t) = (None, None);
        let mut arcs = Vec::new();
        for (no, line) in input.lines().enumerate() {
            let line = line?;
            let lineno = no + 1;
            let perr = |d: &str| Error::Parse {
                line: lineno,
                detail: format!("{d}: {line:?}"),
            };
            let mut it = line.split_whitespace();
            let Some(tag) = it.next() else { continue };
            let mut num = |what: &str| -> Result<u64> {
                it.next()
                    .ok_or_else(|| perr(&format!("missing {what}")))?
                    .parse::<u64>()
                    .map_err(|_| perr(&format!("bad {what}")))
            };
            match tag {
                "c" => {}
                "p" => {
                    if nodes.is_some() {
                        return Err(perr("second problem line"));
                    }
                    if it.next() != Some("max") {
                        return Err(perr("expected `p max N M`"));
                    }
                    let mut num = |what: &str| -> Result<u64> {
                        it.next()
                            .ok_or_else(|| perr(&format!("missing {what}")))?
                            .parse::<u64>()
                            .map_err(|_| perr(&format!("bad {what}")))
                    };
                    let n = num("node count")?;
                    let m = num("arc count")?;
                    if n > u32::MAX as u64 {
                        return Err(Error::TooLarge {
                            field: "nodes",
                            value: n as u128,
                            limit: u32::MAX as u128,
                        });
                    }
                    nodes = Some((n as usize, m as usize));
                    arcs.reserve(m.min(1 << 26) as usize);
                }
                "n" => {
                    let n = nodes
                        .ok_or_else(|| perr("node line before the problem line"))?
                        .0;
                    let id = num("node id")?;
                    if id == 0 || id > n as u64 {
                        return Err(perr("node id out of range"));
                    }
                    match it.next() {
                        Some("s") => s = Some(id as u32 - 1),
                        Some("t") => t = Some(id as u32 - 1),
                        _ => return Err(perr("expected `s` or `t`")),
                    }
                }
                "a" => {
                    let n = nodes
                        .ok_or_else(|| perr("arc line before the problem line"))?
                        .0;
                    let u = num("tail")?;
                    let v = num("head")?;
                    let capstr = it.next().ok_or_else(|| perr("missing capacity"))?;
                    let cap: i64 = capstr.parse().map_err(|_| perr("bad capacity"))?;
                    if u == 0 || v == 0 || u > n as u64 || v > n as u64 {
                        return Err(perr("arc endpoint out of range"));
                    }
                    arcs.push(FlowArc {
                        from: u as u32 - 1,
                        to: v as u32 - 1,
                        cap,
                    });
                }
                _ => return Err(perr("unknown line type")),
            }
        }
        let (n, m) = nodes.ok_or(Error::Parse {
            line: 0,
            detail: "no `p max` line".into(),
        })?;
        if arcs.len() != m {
            return Err(Error::Parse {
                line: 0,
                detail: format!(
                    "the problem line promises {m} arcs, the file has {}",
                    arcs.len()
                ),
            });
        }
        let s = s.ok_or(Error::Parse {
            line: 0,
            detail: "no source (`n ID s`) line".into(),
        })?;
        let t = t.ok_or(Error::Parse {
            line: 0,
            detail: "no sink (`n ID t`) line".into(),
        })?;
        Self::new(n, s, t, arcs)
    }

    /// Writes the network in DIMACS max-flow format (1-based ids).
    pub fn write_dimacs(&self, mut out: impl Write) -> Result<()> {
        writeln!(out, "p max {} {}", self.nodes, self.arcs.len())?;
        writeln!(out, "n {} s", self.source + 1)?;
        writeln!(out, "n {} t", self.sink + 1)?;
        for a in &self.arcs {
            writeln!(out, "a {} {} {}", a.from + 1, a.to + 1, a.cap)?;
        }
        Ok(())
    }
}

/// The answer for a grid: flow value and the canonical minimum cut.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GridCut {
    /// The maximum flow value, exact.
    pub flow: i64,
    /// `true` for the nodes reachable from the source in the final residual
    /// graph: the unique source-minimal minimum cut.
    pub source_side: Vec<bool>,
}

/// The answer for a general network.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NetworkFlow {
    /// The maximum flow value, exact.
    pub flow: i64,
    /// Nodes reachable from s in the final residual graph.
    pub source_side: Vec<bool>,
    /// Flow on each arc, parallel to [`FlowNetwork::arcs`]: within capacity and
    /// conserved at every node but s and t.
    pub arc_flow: Vec<i64>,
}

/// Minimum cut / maximum flow.
pub trait MaxFlow: Send + Sync {
    /// Max flow and canonical min cut of a vision grid.
    ///
    /// ```
    /// use trident_core::{GridGraph, MaxFlow};
    /// # fn demo(backend: &dyn MaxFlow) -> trident_core::Result<()> {
    /// // 1 x 2 grid: s -> v0 (5), v0 -> v1 (3), v1 -> t (4).
    /// let g = GridGraph::new_2d(1, 2, vec![5, 0], vec![0, 4], vec![3, 0, 0, 0, 0, 0, 0, 0])?;
    /// let cut = backend.grid_cut(&g)?;
    /// assert_eq!((cut.flow, cut.source_side.clone()), (3, vec![true, false]));
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn grid_cut(&self, g: &GridGraph) -> Result<GridCut>;

    /// Max flow, canonical min cut and per-arc flows of a general network.
    ///
    /// ```
    /// use trident_core::{FlowArc, FlowNetwork, MaxFlow};
    /// # fn demo(backend: &dyn MaxFlow) -> trident_core::Result<()> {
    /// let g = FlowNetwork::new(3, 0, 2, vec![FlowArc { from: 0, to: 1, cap: 2 }, FlowArc { from: 1, to: 2, cap: 1 }])?;
    /// let r = backend.network_flow(&g)?;
    /// assert_eq!((r.flow, r.arc_flow.clone()), (1, vec![1, 1]));
    /// # Ok(()) }
    /// # demo(&trident_reference::ReferenceBackend::new().unwrap()).unwrap();
    /// ```
    fn network_flow(&self, g: &FlowNetwork) -> Result<NetworkFlow>;
}
