"""NearestIndex against scipy.spatial.cKDTree: the same shapes, types and
distances (computed the same way from the same float32 coordinates)."""

import numpy as np
import pytest
from scipy.spatial import cKDTree

import trident_compute as tc


def cloud(rng, n, dtype=np.float32):
    # Integer coordinates: float32 holds them exactly, and ties are rare.
    return rng.integers(0, 1_000_000, size=(n, 3)).astype(dtype)


@pytest.mark.parametrize("k", [1, 2, 5])
def test_query_matches_ckdtree(rng, k):
    data, x = cloud(rng, 500), cloud(rng, 300)
    dist, idx = tc.NearestIndex(data).query(x, k=k)
    d_ref, i_ref = cKDTree(data).query(x, k=k)
    assert dist.shape == d_ref.shape and idx.shape == i_ref.shape
    assert dist.dtype == np.float64 and idx.dtype == np.int64
    np.testing.assert_array_equal(dist, d_ref)  # same formula, same bits
    np.testing.assert_array_equal(idx, i_ref)  # integer clouds: no ties here


def test_float64_that_float32_holds_exactly(rng):
    data, x = cloud(rng, 200, np.float64), cloud(rng, 50, np.float64)
    dist, idx = tc.NearestIndex(data).query(x)
    d_ref, i_ref = cKDTree(data).query(x)
    np.testing.assert_array_equal(dist, d_ref)
    np.testing.assert_array_equal(idx, i_ref)
    ints = cloud(rng, 20).astype(np.int64)
    assert tc.NearestIndex(ints).query(ints)[0].max() == 0.0


def test_float64_beyond_float32_is_searched_in_float64(rng):
    # Map coordinates: a jittered metre grid around (5e5, 5.3e6, 200), where
    # float32 keeps half a metre. Answers must be cKDTree's exactly.
    g = np.stack(np.meshgrid(np.arange(30.0), np.arange(30.0), indexing="ij"), -1).reshape(-1, 2)
    data = np.column_stack([5e5 + g[:, 0], 5.3e6 + g[:, 1], np.full(len(g), 200.0)])
    data += rng.uniform(-0.2, 0.2, data.shape)
    x = data[::7] + rng.uniform(-0.45, 0.45, data[::7].shape)
    for k in (1, 4):
        dist, idx = tc.NearestIndex(data).query(x, k=k)
        d_ref, i_ref = cKDTree(data).query(x, k=k)
        np.testing.assert_array_equal(idx, i_ref)
        np.testing.assert_allclose(dist, d_ref, rtol=1e-12)
    i, j, d = tc.NearestIndex(data).closest_pairs(x, 5)
    nn = cKDTree(data).query(x)[0]
    np.testing.assert_allclose(d, np.sort(nn)[:5], rtol=1e-12)
    # A float32 index queried with float64 points searches in float64.
    index = tc.NearestIndex(data.astype(np.float32))
    q = rng.random((3, 3))
    np.testing.assert_array_equal(
        index.query(q)[1], cKDTree(data.astype(np.float32).astype(np.float64)).query(q)[1]
    )


def test_single_point_and_padding(rng):
    data = cloud(rng, 4)
    tree, ours = cKDTree(data), tc.NearestIndex(data)
    d, i = ours.query(data[2])
    assert (d, i) == tree.query(data[2]) and isinstance(d, float) and isinstance(i, int)
    d, i = ours.query(data[1], k=3)
    d_ref, i_ref = tree.query(data[1], k=3)
    assert d.shape == (3,)
    np.testing.assert_array_equal(d, d_ref)
    np.testing.assert_array_equal(i, i_ref)
    # More neighbours than points: cKDTree pads with inf and index n.
    d, i = ours.query(data, k=6)
    d_ref, i_ref = tree.query(data, k=6)
    np.testing.assert_array_equal(d, d_ref)
    np.testing.assert_array_equal(i, i_ref)


def test_empty_point_set_pads_like_ckdtree():
    empty = np.zeros((0, 3), np.float32)
    d, i = tc.NearestIndex(empty).query(np.zeros((2, 3), np.float32))
    d_ref, i_ref = cKDTree(empty).query(np.zeros((2, 3)))
    np.testing.assert_array_equal(d, d_ref)
    np.testing.assert_array_equal(i, i_ref)


def test_two_dimensional_points(rng):
    data, x = cloud(rng, 100)[:, :2], cloud(rng, 30)[:, :2]
    dist, idx = tc.NearestIndex(data).query(x)
    d_ref, i_ref = cKDTree(data).query(x)
    np.testing.assert_array_equal(dist, d_ref)
    np.testing.assert_array_equal(idx, i_ref)


def test_ties_go_to_the_smaller_index():
    data = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0]], np.float32)
    dist, idx = tc.NearestIndex(data).query(np.zeros((1, 3), np.float32), k=3)
    np.testing.assert_array_equal(idx, [[0, 1, 2]])
    np.testing.assert_array_equal(dist, [[1.0, 1.0, 1.0]])


def test_closest_pairs_match_ckdtree(rng):
    data, x = cloud(rng, 400), cloud(rng, 300)
    i, j, dist = tc.NearestIndex(data).closest_pairs(x, 25)
    d_all, j_all = cKDTree(data).query(x)
    order = np.lexsort((np.arange(len(x)), d_all))[:25]
    np.testing.assert_array_equal(i, order)
    np.testing.assert_array_equal(j, j_all[order])
    np.testing.assert_array_equal(dist, d_all[order])
    assert tc.NearestIndex(data).closest_pairs(x[:3], 10)[0].shape == (3,)
    assert tc.NearestIndex(data).closest_pairs(x, 0)[0].shape == (0,)


def test_layouts(rng):
    data = cloud(rng, 100)
    x = cloud(rng, 60)
    ref = cKDTree(data).query(x)[1]
    np.testing.assert_array_equal(tc.NearestIndex(np.asfortranarray(data)).query(x[::-1])[1], ref[::-1])
    wide = np.concatenate([data, data], axis=1)[:, :3]  # strided rows
    np.testing.assert_array_equal(tc.NearestIndex(wide).query(x)[1], ref)


def test_out_of_memory_is_memory_error():
    index = tc.NearestIndex(np.zeros((2**21, 3), np.float32))
    with pytest.raises(MemoryError, match="neighbours"):
        index.query(np.zeros((2**22, 3), np.float32), k=2**20)


def test_bad_inputs(rng):
    data = cloud(rng, 10)
    index = tc.NearestIndex(data)
    with pytest.raises(ValueError, match="argument points"):
        tc.NearestIndex(np.zeros((5, 4), np.float32))
    with pytest.raises(ValueError, match="argument x"):
        index.query(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="argument k"):
        index.query(data, k=0)
    with pytest.raises(TypeError, match="argument k"):
        index.query(data, k=1.5)
    with pytest.raises(TypeError, match="argument points"):
        tc.NearestIndex(np.array([["a", "b", "c"]]))
    nan = data.copy()
    nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="not finite|finite"):
        tc.NearestIndex(nan).query(data)
    with pytest.raises(ValueError):
        tc.NearestIndex(np.zeros((0, 3), np.float32)).closest_pairs(data, 2)
