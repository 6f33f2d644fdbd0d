"""spgemm against scipy.sparse's own product."""

import numpy as np
import pytest
import scipy.sparse as sp

import trident_compute as tc


def stored(m):
    """The (row, column) of every stored entry, explicit zeros included."""
    m = m.tocsr()
    return set(zip(np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)).tolist(), m.indices.tolist()))


def random(rng, m, n, density, dtype, fmt="csr"):
    return sp.random(m, n, density=density, format=fmt, dtype=dtype, random_state=rng)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "bsr"])
def test_matches_scipy(rng, dtype, rtol, fmt):
    a = random(rng, 50, 80, 0.1, dtype, fmt)
    b = random(rng, 80, 30, 0.1, dtype, fmt)
    c = tc.spgemm(a, b)
    ref = (a.tocsr() @ b.tocsr()).toarray()
    assert isinstance(c, sp.csr_matrix) and c.dtype == dtype and c.shape == (50, 30)
    assert c.has_sorted_indices
    np.testing.assert_allclose(c.toarray(), ref, rtol=rtol, atol=rtol)
    # The structure is scipy's plus the entries that cancel to zero.
    assert stored(a.tocsr() @ b.tocsr()) <= stored(c)


def test_square_of_one_matrix_and_int64_indices(rng):
    a = random(rng, 60, 60, 0.05, np.float64)
    a.indices = a.indices.astype(np.int64)
    a.indptr = a.indptr.astype(np.int64)
    np.testing.assert_allclose(tc.spgemm(a, a).toarray(), (a @ a).toarray(), rtol=1e-12)


def test_duplicates_and_unsorted_are_summed(rng):
    a = sp.coo_matrix(([1.0, 2.0, 3.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    c = tc.spgemm(a, a)
    np.testing.assert_array_equal(c.toarray(), (a.tocsr() @ a.tocsr()).toarray())
    unsorted = sp.csr_matrix((np.array([2.0, 1.0]), np.array([1, 0]), np.array([0, 2, 2])), shape=(2, 2))
    np.testing.assert_array_equal(tc.spgemm(unsorted, sp.eye(2)).toarray(), [[1.0, 2.0], [0.0, 0.0]])


def test_cancellation_stays_stored():
    a = sp.csr_matrix(np.array([[1.0, 1.0]]))
    b = sp.csr_matrix(np.array([[1.0], [-1.0]]))
    c = tc.spgemm(a, b)
    assert c.nnz == 1 and c.data[0] == 0.0  # scipy drops it; the structure is symbolic here
    assert (a @ b).nnz == 0


def test_mixed_and_integer_dtypes():
    a32 = sp.csr_matrix(np.eye(3, dtype=np.float32))
    b64 = sp.csr_matrix(np.eye(3))
    assert tc.spgemm(a32, b64).dtype == np.float64
    assert tc.spgemm(a32, a32).dtype == np.float32
    ints = sp.csr_matrix(np.array([[1, 2], [0, 3]]))
    np.testing.assert_array_equal(tc.spgemm(ints, ints).toarray(), [[1, 8], [0, 9]])


def test_sparse_arrays_and_empty():
    a = sp.csr_array(np.array([[0.0, 2.0], [0.0, 0.0]]))
    np.testing.assert_array_equal(tc.spgemm(a, a).toarray(), np.zeros((2, 2)))
    e = sp.csr_matrix((0, 4))
    assert tc.spgemm(e, sp.csr_matrix((4, 3))).shape == (0, 3)


def test_bad_inputs():
    a = sp.csr_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="argument b"):
        tc.spgemm(a, a)
    with pytest.raises(TypeError, match="argument a"):
        tc.spgemm(np.ones((2, 2)), a)
    with pytest.raises(TypeError, match="argument b"):
        tc.spgemm(sp.csr_matrix(np.ones((3, 2))), [[1, 2]])
    with pytest.raises(TypeError, match="argument a"):
        tc.spgemm(sp.csr_matrix(np.ones((2, 2), complex)), a)
    nan = sp.csr_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="argument a.*not finite"):
        tc.spgemm(nan, sp.csr_matrix(np.ones((2, 1))))
    with pytest.raises(ValueError, match="unknown backend"):
        tc.spgemm(a, a.T, backend="nope")


def test_corrupt_arrays_are_errors_not_crashes():
    """The extension checks what scipy would trust: ids beyond the matrix."""
    from trident_compute import _trident

    data = np.array([1.0])
    good = (np.array([0, 1]), np.array([0], np.int32), data, (1, 1))
    bad_col = (np.array([0, 1]), np.array([7], np.int32), data, (1, 1))
    neg = (np.array([0, 1]), np.array([-1], np.int32), data, (1, 1))
    short = (np.array([0, 5]), np.array([0], np.int32), data, (1, 1))
    for bad in (bad_col, neg, short):
        with pytest.raises(ValueError):
            _trident.spgemm(bad, good, None)
