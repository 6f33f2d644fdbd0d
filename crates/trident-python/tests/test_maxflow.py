"""trident_compute.maxflow against PyMaxflow: the same script, both imports.

Flow values must be equal. Segments are compared under the documented tie
rule: Trident's sink side is BK's plus the nodes joined to neither terminal
after the flow, so BK's sink side is contained in ours, and ours is a
minimum cut itself (its capacity equals the flow).
"""

import maxflow as pymaxflow
import numpy as np
import pytest

import trident_compute as tc
from trident_compute import maxflow as tmf

LIBS = [pymaxflow, tmf]


def build(lib, shape, weights, source, sink, structure=None, symmetric=False, periodic=False, kind=int):
    g = lib.Graph[kind]()
    nodes = g.add_grid_nodes(shape)
    g.add_grid_edges(nodes, weights=weights, structure=structure, symmetric=symmetric, periodic=periodic)
    g.add_grid_tedges(nodes, source, sink)
    return g, nodes


def both(*args, **kw):
    """(flow, segments) of PyMaxflow and of ours on the same construction."""
    out = []
    for lib in LIBS:
        g, nodes = build(lib, *args, **kw)
        out.append((g.maxflow(), g.get_grid_segments(nodes)))
    return out


def check(bk, ours):
    (f_bk, s_bk), (f_ours, s_ours) = bk, ours
    assert f_ours == f_bk and type(f_ours) is type(f_bk)
    assert s_ours.shape == s_bk.shape and s_ours.dtype == bool
    assert (s_ours | ~s_bk).all(), "BK's sink side must lie inside ours"


def grid_inputs(rng, shape, cap=20):
    return (
        rng.integers(0, cap, shape),
        rng.integers(0, cap, shape) * (rng.random(shape) < 0.7),
        rng.integers(0, cap, shape) * (rng.random(shape) < 0.7),
    )


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("shape", [(12, 17), (5, 6, 7), (40,)])
def test_default_structure(rng, shape, symmetric):
    w, s, t = grid_inputs(rng, shape)
    bk, ours = both(shape, w, s, t, symmetric=symmetric)
    check(bk, ours)


def test_grid_uses_the_grid_solver(rng):
    w, s, t = grid_inputs(rng, (8, 9))
    g, _ = build(tmf, (8, 9), w, s, t, symmetric=True)
    assert g._g.is_grid()
    g, _ = build(tmf, (8, 9), w, s, t, structure=tmf.moore_structure(2), symmetric=False)
    assert not g._g.is_grid()


@pytest.mark.parametrize(
    "structure",
    [
        np.array([[0, 1, 0], [4, 0, 2], [0, 3, 0]]),  # values scale the weights
        np.ones((3, 3)),  # 8-connected: the network solver
        np.ones((5, 5)),  # a wider neighbourhood
    ],
)
def test_structures(rng, structure):
    w, s, t = grid_inputs(rng, (10, 11))
    check(*both((10, 11), w, s, t, structure=structure))


def test_periodic(rng):
    w, s, t = grid_inputs(rng, (6, 7))
    check(*both((6, 7), w, s, t, periodic=True))
    check(*both((6, 7), w, s, t, periodic=[True, False]))


def test_edge_counts_match(rng):
    for kw in (dict(), dict(symmetric=True), dict(structure=np.ones((5, 5)))):
        counts = []
        for lib in LIBS:
            g = lib.Graph[int]()
            g.add_grid_edges(g.add_grid_nodes((3, 4)), weights=2, **kw)
            counts.append((g.get_edge_count(), g.get_node_count()))
        assert counts[0] == counts[1], kw


def test_node_api_example():
    """PyMaxflow's own module example: flow 8, segments [True, False]."""
    for lib in LIBS:
        g = lib.Graph[int](2, 2)
        nodes = g.add_nodes(2)
        g.add_edge(nodes[0], nodes[1], 1, 2)
        g.add_tedge(nodes[0], 2, 5)
        g.add_tedge(nodes[1], 9, 4)
        assert g.maxflow() == 8
        np.testing.assert_array_equal(g.get_grid_segments(nodes), [True, False])
        assert g.get_segment(0) == 1 and g.get_segment(1) == 0


def test_random_networks_by_edges(rng):
    for _ in range(5):
        n, m = 25, 80
        i, j = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = i != j
        c, rc = rng.integers(0, 30, m), rng.integers(0, 30, m)
        s, t = rng.integers(-10, 30, n), rng.integers(-10, 30, n)
        res = []
        for lib in LIBS:
            g = lib.Graph[int]()
            g.add_nodes(n)
            for a, b, x, y in zip(i[keep], j[keep], c[keep], rc[keep]):
                g.add_edge(int(a), int(b), int(x), int(y))
            for v in range(n):
                g.add_tedge(v, int(s[v]), int(t[v]))
            res.append((g.maxflow(), g.get_grid_segments(np.arange(n))))
        check(*res)


def test_negative_terminal_capacities():
    for lib in LIBS:
        g = lib.Graph[int]()
        nodes = g.add_grid_nodes((3,))
        g.add_grid_tedges(nodes, np.array([-2, 0, 3]), np.array([1, 0, -1]))
        assert g.maxflow() == -3


def test_tied_cut_differs_from_bk_as_documented():
    """One node with equal source and sink capacities: after the flow it is
    joined to neither terminal. BK calls it the source's; Trident's cut (the
    smallest source side) puts it on the sink's side."""
    seg = {}
    for lib in LIBS:
        g = lib.Graph[int]()
        nodes = g.add_grid_nodes((1,))
        g.add_grid_tedges(nodes, np.array([1]), np.array([1]))
        assert g.maxflow() == 1
        seg[lib] = g.get_grid_segments(nodes)[0]
    assert not seg[pymaxflow] and seg[tmf]


def test_float_graphs(rng):
    w, s, t = grid_inputs(rng, (6, 6))
    check(*both((6, 6), w.astype(float), s.astype(float), t.astype(float), kind=float))
    g = tmf.Graph[float]()
    nodes = g.add_grid_nodes((2,))
    with pytest.raises(tc.UnsupportedError, match="fractional"):
        g.add_grid_tedges(nodes, np.array([2.5, 0]), np.array([0, 1.5]))
    # Graph[int] truncates float capacities, as PyMaxflow's does.
    flows = []
    for lib in LIBS:
        g = lib.Graph[int]()
        nodes = g.add_grid_nodes((2,))
        g.add_grid_tedges(nodes, np.array([2.7, 0]), np.array([0, 1.9]))
        g.add_grid_edges(nodes, 1.5)
        flows.append(g.maxflow())
    assert flows[0] == flows[1] == 1


def test_changes_after_a_solve(rng):
    """A graph changed after maxflow() is solved again from its new state."""
    w, s, t = grid_inputs(rng, (7, 8))
    extra = rng.integers(0, 20, (7, 8))
    flows = []
    for lib in LIBS:
        g, nodes = build(lib, (7, 8), w, s, t)
        g.maxflow()
        g.add_grid_tedges(nodes, extra, 0)
        g.add_tedge(3, 0, 100)
        flows.append(g.maxflow())
    assert flows[0] == flows[1]


def test_bad_inputs():
    g = tmf.Graph[int]()
    nodes = g.add_grid_nodes((3, 3))
    with pytest.raises(ValueError, match="negative"):
        g.add_grid_edges(nodes, weights=-1)
    with pytest.raises(ValueError, match="structure"):
        g.add_grid_edges(nodes, structure=np.ones((2, 2)))
    with pytest.raises(TypeError, match="nodeids"):
        g.add_grid_edges(nodes.astype(float))
    with pytest.raises(ValueError, match="not one of"):
        g.add_edge(0, 9, 1, 1)
    with pytest.raises(ValueError, match="not one of"):
        g.add_tedge(-1, 1, 1)
    with pytest.raises(ValueError, match="int64"):
        g.add_grid_tedges(nodes, np.full((3, 3), 2**62), 0)
    with pytest.raises(ValueError, match="int64"):
        g.add_tedge(0, 2.0**70, 0)
    # The failed calls left the graph as it was.
    g.add_grid_tedges(nodes, 1, 0)
    assert g.maxflow() == 0 and g.get_grid_segments(nodes).sum() == 0
