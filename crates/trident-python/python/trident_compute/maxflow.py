"""PyMaxflow's ``Graph`` API on Trident's max-flow solvers.

A PyMaxflow script runs by changing its import::

    import trident_compute.maxflow as maxflow   # was: import maxflow

    g = maxflow.Graph[int]()
    nodes = g.add_grid_nodes(img.shape)
    g.add_grid_edges(nodes, weights=w, structure=structure, symmetric=True)
    g.add_grid_tedges(nodes, source_caps, sink_caps)
    flow = g.maxflow()
    segments = g.get_grid_segments(nodes)     # True: the sink's side

``Graph[int]`` / ``GraphInt`` and ``Graph[float]`` / ``GraphFloat`` offer
``add_nodes``, ``add_grid_nodes``, ``add_edge``, ``add_edges``, ``add_tedge``,
``add_grid_edges`` (``weights``, ``structure``, ``symmetric``,
``periodic``), ``add_grid_tedges``, ``maxflow``, ``get_segment``,
``get_grid_segments``, ``get_node_count`` / ``get_node_num``,
``get_edge_count`` / ``get_edge_num`` and ``reset``; the module has
``vonNeumann_structure`` and ``moore_structure``. A graph whose nodes are one
grid of 1 to 3 axes and whose edges all join grid neighbours (the default
4- or 6-connected structure) is solved by Trident's grid solver; any other
graph (8-connected structures, periodic grids, nodes added one by one) by
its general network solver. Both are exact.

Where the answer differs from PyMaxflow's (Boykov-Kolmogorov):

- **Tied cuts.** A graph can have several minimum cuts. Trident returns the
  one with the smallest source side: a node is on the source's side
  (``False``) exactly when it is reachable from the source in the final
  residual graph. BK labels every node that is not connected to the sink
  as the source's, so nodes joined to neither terminal after the flow (for
  example a pixel with equal source and sink capacities and no edges) are
  ``True`` (sink) here and ``False`` in PyMaxflow. On a graph with one
  minimum cut both agree.
- **Capacities.** Trident's max flow is exact in int64. ``Graph[float]``
  accepts whole-number capacities and returns the flow as a float; a
  fractional capacity raises :class:`~trident_compute.UnsupportedError`
  (scale and round the capacities, then use ``Graph[int]``). As in
  PyMaxflow, ``Graph[int]`` truncates float capacities to integers. Edge
  capacities must be ``>= 0`` (BK does not check); terminal capacities may
  be negative, as in BK. The sum of all capacities must fit in int64.
- **Not provided**: ``mark_node``, ``mark_grid_nodes``, ``copy``,
  ``get_nx_graph``, ``fastmin`` (alpha-expansion); ``maxflow(reuse_trees=True)``
  solves from scratch (the answer is the same).

Every call that adds capacities checks them at once (ids in range,
signs, the int64 sum) and raises there; a grid graph is validated at the
end of each grid call, so ``maxflow()`` is the solve alone (as BK's is).
A grid keeps its capacities twice meanwhile, as added and as validated, so
that a later change to one node does not copy the grid back out.
``set_backend(name)`` (not in PyMaxflow) picks the backend of ``maxflow()``.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from . import _trident
from ._trident import UnsupportedError

__all__ = ["Graph", "GraphFloat", "GraphInt", "moore_structure", "vonNeumann_structure"]

SOURCE = 0
SINK = 1


def vonNeumann_structure(ndim: int = 2, directed: bool = False) -> np.ndarray:
    """The 4-connected (6 in 3-D, ``2 ndim`` in general) neighbourhood as a
    ``3 x ... x 3`` structure; ``directed`` keeps only the ``+1`` neighbour
    along each axis (use it with ``symmetric=True``)."""
    s = np.zeros((3,) * ndim)
    for d in range(ndim):
        for o in (2,) if directed else (0, 2):
            idx = [1] * ndim
            idx[d] = o
            s[tuple(idx)] = 1
    return s


def moore_structure(ndim: int = 2, directed: bool = False) -> np.ndarray:
    """The 8-connected (26 in 3-D) neighbourhood: all ones, as PyMaxflow's
    (the centre is ignored); ``directed`` keeps only the neighbours after the
    centre in row-major order (use it with ``symmetric=True``)."""
    s = np.ones((3,) * ndim)
    if directed:
        flat = s.reshape(-1)
        flat[: flat.size // 2 + 1] = 0
    return s


def _int64(call: str, name: str, values: Any, integer: bool) -> np.ndarray:
    """Capacities as int64: truncated from floats for ``Graph[int]`` (as
    PyMaxflow's C++ casts them), required whole for ``Graph[float]``."""
    a = np.asarray(values)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{call}: argument {name} has dtype {a.dtype}; expected real numbers")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{call}: argument {name} holds a non-finite capacity")
        if np.any(np.abs(a) >= 2.0**63):
            raise ValueError(f"{call}: argument {name} holds a capacity beyond the int64 range")
        if integer:
            return a.astype(np.int64)
        whole = np.trunc(a)
        if not np.array_equal(whole, a):
            bad = np.flatnonzero((whole != a).reshape(-1))[0]
            raise UnsupportedError(
                f"{call}: argument {name} holds the fractional capacity {a.reshape(-1)[bad]!r}: "
                "Trident's max flow is exact in int64 capacities; scale and round them "
                "(for example np.round(w * 1000)) and use Graph[int]"
            )
        return whole.astype(np.int64)
    if a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{call}: argument {name} holds a capacity beyond the int64 range")
    return a.astype(np.int64, copy=False)


def _ids(call: str, name: str, nodeids: Any) -> np.ndarray:
    a = np.asarray(nodeids)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{call}: argument {name} must hold integer node ids, not {a.dtype}")
    return a


class _Graph:
    """The state both graph types share; ``_integer`` picks the flow type."""

    _integer = True

    def __init__(self, est_node_num: int = 0, est_edge_num: int = 0) -> None:
        # The estimates size BK's arrays; Trident's storage grows as needed.
        self._g = _trident.FlowGraph()
        self._backend: Optional[str] = None

    def _flow_type(self, v: int) -> Union[int, float]:
        return int(v) if self._integer else float(v)

    def reset(self) -> None:
        """Removes all nodes and edges."""
        self._g = _trident.FlowGraph()

    def add_nodes(self, num_nodes: int) -> np.ndarray:
        """Adds ``num_nodes`` nodes; returns their ids."""
        first = self._g.add_nodes(int(num_nodes))
        return np.arange(first, first + int(num_nodes))

    def add_grid_nodes(self, shape: Union[int, Sequence[int]]) -> np.ndarray:
        """Adds a grid of nodes; returns their ids in an array of that shape
        (row-major)."""
        shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"add_grid_nodes: negative size in shape {shape}")
        count = int(np.prod(shape, dtype=np.int64))
        first = self._g.add_grid(list(shape)) if count > 0 else self._g.add_nodes(0)
        return np.arange(first, first + count, dtype=np.int_).reshape(shape)

    def add_edge(self, i: int, j: int, capacity: Any, rcapacity: Any) -> None:
        """Adds the edge ``i -> j`` with ``capacity`` and ``j -> i`` with
        ``rcapacity``."""
        self._add_edges("add_edge", [i], [j], [capacity], [rcapacity])

    def add_edges(self, i: Any, j: Any, capacities: Any, rcapacities: Any) -> None:
        """``add_edge`` for arrays of edges."""
        self._add_edges("add_edges", i, j, capacities, rcapacities)
        self._g.finish()

    def _add_edges(self, call: str, i: Any, j: Any, capacities: Any, rcapacities: Any) -> None:
        ii, jj = _ids(call, "i", i).reshape(-1), _ids(call, "j", j).reshape(-1)
        if ii.shape != jj.shape:
            raise ValueError(f"{call}: arguments i and j must have the same length")
        cap = np.broadcast_to(_int64(call, "capacities", capacities, self._integer), ii.shape)
        rcap = np.broadcast_to(_int64(call, "rcapacities", rcapacities, self._integer), ii.shape)
        self._g.add_edges(*(np.ascontiguousarray(x, np.int64) for x in (ii, jj, cap, rcap)))

    def add_tedge(self, i: int, cap_source: Any, cap_sink: Any) -> None:
        """Adds ``cap_source`` to the edge from the source to ``i`` and
        ``cap_sink`` to the edge from ``i`` to the sink (negative allowed)."""
        call = "add_tedge"
        self._g.add_tedges(
            np.array([int(i)], np.int64),
            _int64(call, "cap_source", [cap_source], self._integer),
            _int64(call, "cap_sink", [cap_sink], self._integer),
        )

    def add_grid_edges(
        self,
        nodeids: Any,
        weights: Any = 1,
        structure: Any = None,
        symmetric: bool = False,
        periodic: Any = False,
    ) -> None:
        """For every node of ``nodeids`` and every non-zero entry of
        ``structure`` (an odd-sized array centred on the node, default
        ``vonNeumann_structure(nodeids.ndim, directed=symmetric)``), adds the
        edge to the node at that offset with capacity ``weights[node] *
        structure[offset]``; with ``symmetric`` the reverse edge gets the same
        capacity. ``periodic`` (one bool, or one per axis) wraps the grid."""
        call = "add_grid_edges"
        ids = _ids(call, "nodeids", nodeids)
        nd = ids.ndim
        if structure is None:
            structure = vonNeumann_structure(nd, directed=bool(symmetric))
        st = np.asarray(structure)
        if st.ndim != nd or any(s % 2 == 0 for s in st.shape):
            raise ValueError(f"{call}: argument structure must have {nd} axes of odd length, got shape {st.shape}")
        w = np.broadcast_to(_int64(call, "weights", weights, self._integer), ids.shape)
        st_caps = _int64(call, "structure", st, self._integer)
        wrap = np.broadcast_to(np.asarray(periodic, dtype=bool), (nd,))
        centre = np.array(st.shape) // 2
        edges_i, edges_j, caps = [], [], []
        for pos in np.argwhere(st != 0):
            off = pos - centre
            if not off.any():
                continue
            dst = ids
            src_sl, dst_sl = [], []
            for d in range(nd):
                o, n = int(off[d]), ids.shape[d]
                if wrap[d]:
                    dst = np.roll(dst, -o, axis=d)
                    src_sl.append(slice(None))
                    dst_sl.append(slice(None))
                elif o >= 0:
                    src_sl.append(slice(0, max(n - o, 0)))
                    dst_sl.append(slice(o, n))
                else:
                    src_sl.append(slice(-o, n))
                    dst_sl.append(slice(0, max(n + o, 0)))
            s_idx, d_idx = tuple(src_sl), tuple(dst_sl)
            edges_i.append(ids[s_idx].reshape(-1))
            edges_j.append(dst[d_idx].reshape(-1))
            caps.append((w[s_idx] * st_caps[tuple(pos)]).reshape(-1))
        if not edges_i:
            return
        i, j, c = (np.concatenate(x).astype(np.int64, copy=False) for x in (edges_i, edges_j, caps))
        rc = c if symmetric else np.zeros_like(c)
        self._g.add_edges(i, j, c, rc)
        self._g.finish()

    def add_grid_tedges(self, nodeids: Any, sourcecaps: Any, sinkcaps: Any) -> None:
        """``add_tedge`` for every node of ``nodeids``, with the capacities
        at the same positions of ``sourcecaps`` and ``sinkcaps`` (broadcast)."""
        call = "add_grid_tedges"
        ids = _ids(call, "nodeids", nodeids)
        s = np.broadcast_to(_int64(call, "sourcecaps", sourcecaps, self._integer), ids.shape)
        t = np.broadcast_to(_int64(call, "sinkcaps", sinkcaps, self._integer), ids.shape)
        self._g.add_tedges(*(np.ascontiguousarray(x, np.int64).reshape(-1) for x in (ids, s, t)))
        self._g.finish()

    def maxflow(self, reuse_trees: bool = False) -> Union[int, float]:
        """Solves; returns the maximum flow (the capacity of the minimum
        cut), terminal capacities' constants included as in PyMaxflow."""
        return self._flow_type(self._g.maxflow(self._backend))

    def get_segment(self, i: int) -> int:
        """``1`` (SINK) when node ``i`` is on the sink's side of the cut,
        else ``0`` (SOURCE)."""
        seg = self._g.segments()
        if not 0 <= int(i) < seg.size:
            raise ValueError(f"get_segment: node id {i} is not one of the {seg.size} nodes")
        return int(seg[int(i)])

    def get_grid_segments(self, nodeids: Any) -> np.ndarray:
        """A bool array of the shape of ``nodeids``: ``True`` for the nodes
        on the sink's side of the cut."""
        ids = _ids("get_grid_segments", "nodeids", nodeids)
        seg = self._g.segments()
        if ids.size and (ids.min() < 0 or ids.max() >= seg.size):
            raise ValueError(f"get_grid_segments: node ids outside the graph's {seg.size} nodes")
        return seg[ids]

    def get_node_count(self) -> int:
        """The number of nodes (the terminals not counted)."""
        return self._g.node_count()

    def get_edge_count(self) -> int:
        """The number of arcs, two per edge added (BK's count)."""
        return 2 * self._g.edge_count()

    get_node_num = get_node_count
    get_edge_num = get_edge_count

    def set_backend(self, backend: Optional[str]) -> None:
        """Solves on ``backend`` (``None``: Trident's choice). Not in PyMaxflow."""
        if backend is not None and not isinstance(backend, str):
            raise TypeError("set_backend: backend must be None or a backend name")
        self._backend = backend


class GraphInt(_Graph):
    """A graph with integer capacities (PyMaxflow's ``Graph[int]``)."""

    _integer = True


class GraphFloat(_Graph):
    """A graph with float capacities that must be whole numbers (PyMaxflow's
    ``Graph[float]``; see the module docs)."""

    _integer = False


Graph: Dict[type, type] = {int: GraphInt, float: GraphFloat}
