"""maximum_flow against scipy.sparse.csgraph.maximum_flow."""

from collections import deque

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_flow as sp_maximum_flow

import trident_compute as tc


def random_graph(rng, n, m, cap=50, dtype=np.int32):
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = rows != cols
    caps = rng.integers(0, cap, m)
    return sp.csr_matrix((caps[keep].astype(dtype), (rows[keep], cols[keep])), shape=(n, n))


def stored(m):
    m = m.tocsr()
    return set(zip(np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)).tolist(), m.indices.tolist()))


def check_flow(g, res, s, t):
    """Capacity, antisymmetry, conservation, the value at s, and the cut:
    source_side is exactly what the source reaches in the residual graph."""
    n = g.shape[0]
    cap = g.toarray().astype(np.int64)
    f = res.flow.toarray()
    assert np.array_equal(f, -f.T)
    # Net flow i -> j lies between -cap(j, i) and cap(i, j) (arcs both ways).
    assert (f <= cap).all() and (f >= -cap.T).all()
    net_out = f.sum(axis=1)
    assert net_out[s] == res.flow_value and net_out[t] == -res.flow_value
    assert (np.delete(net_out, [s, t]) == 0).all()
    # Residual capacity i -> j: cap(i, j) - f(i, j).
    residual = (cap - f) > 0
    seen = np.zeros(n, bool)
    seen[s] = True
    todo = deque([s])
    while todo:
        u = todo.popleft()
        for v in np.flatnonzero(residual[u]):
            if not seen[v]:
                seen[v] = True
                todo.append(v)
    np.testing.assert_array_equal(res.source_side, seen)


@pytest.mark.parametrize("seed", range(6))
def test_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    g = random_graph(rng, 30, 150)
    ours = tc.maximum_flow(g, 0, 29)
    ref = sp_maximum_flow(g, 0, 29)
    assert ours.flow_value == ref.flow_value
    assert isinstance(ours.flow, sp.csr_matrix)
    # The same stored entries as scipy's: both directions of every edge.
    assert stored(ours.flow) == stored(ref.flow)
    check_flow(g, ours, 0, 29)


def test_formats_and_dtypes(rng):
    g = random_graph(rng, 20, 80, dtype=np.int64)
    value = sp_maximum_flow(g.astype(np.int32), 0, 19).flow_value
    for m in (g, g.tocoo(), g.tocsc(), g.astype(np.uint8), g.astype(np.int16), sp.csr_array(g)):
        assert tc.maximum_flow(m, 0, 19).flow_value == value
    assert isinstance(tc.maximum_flow(sp.csr_array(g), 0, 19).flow, sp.csr_array)


def test_parallel_edges_and_self_loops():
    # Duplicate entries are parallel arcs; a self-loop carries nothing.
    g = sp.coo_matrix(([3, 4, 9, 5], ([0, 0, 1, 1], [1, 1, 1, 2])), shape=(3, 3))
    r = tc.maximum_flow(g, 0, 2)
    assert r.flow_value == 5
    assert r.flow[0, 1] == 5 and r.flow[1, 2] == 5
    np.testing.assert_array_equal(r.source_side, [True, True, False])


def test_large_capacities():
    big = 2**40
    g = sp.csr_matrix(np.array([[0, big, 0], [0, 0, big + 1], [0, 0, 0]], dtype=np.int64))
    assert tc.maximum_flow(g, 0, 2).flow_value == big


def test_bad_inputs():
    g = sp.csr_matrix(np.array([[0, 5], [0, 0]]))
    with pytest.raises(ValueError, match="source and sink"):
        tc.maximum_flow(g, 1, 1)
    with pytest.raises(ValueError, match="argument sink"):
        tc.maximum_flow(g, 0, 2)
    with pytest.raises(ValueError, match="argument source"):
        tc.maximum_flow(g, -1, 1)
    with pytest.raises(TypeError, match="source and sink"):
        tc.maximum_flow(g, 0.0, 1)
    with pytest.raises(ValueError, match="integers"):
        tc.maximum_flow(g.astype(float), 0, 1)
    with pytest.raises(ValueError, match="square"):
        tc.maximum_flow(sp.csr_matrix(np.ones((2, 3), int)), 0, 1)
    with pytest.raises(TypeError, match="argument csgraph"):
        tc.maximum_flow(np.array([[0, 5], [0, 0]]), 0, 1)
    with pytest.raises(ValueError, match="negative"):
        tc.maximum_flow(sp.csr_matrix(np.array([[0, -5], [0, 0]])), 0, 1)
    overflow = sp.csr_matrix(np.array([[0, 2**62, 2**62], [0, 0, 2**62], [0, 0, 0]], dtype=np.int64))
    with pytest.raises(ValueError, match="exceeds|limit"):
        tc.maximum_flow(overflow, 0, 2)
