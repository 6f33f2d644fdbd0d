"""sparse_encode against scikit-learn's OMP (sparse_encode, orthogonal_mp)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import sparse_encode as sk_sparse_encode
from sklearn.linear_model import orthogonal_mp

import trident_compute as tc


def problem(rng, samples=40, features=16, atoms=48, dtype=np.float64):
    d = rng.standard_normal((atoms, features))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    codes = np.zeros((samples, atoms))
    for s in range(samples):
        codes[s, rng.choice(atoms, 4, replace=False)] = rng.standard_normal(4)
    x = codes @ d + 0.01 * rng.standard_normal((samples, features))
    return x.astype(dtype), d.astype(dtype)


@pytest.mark.parametrize("dtype,atol", [(np.float64, 1e-9), (np.float32, 2e-4)])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_matches_sklearn(rng, dtype, atol, k):
    x, d = problem(rng, dtype=dtype)
    ours = tc.sparse_encode(x, d, n_nonzero_coefs=k)
    ref = sk_sparse_encode(x.astype(np.float64), d.astype(np.float64), algorithm="omp", n_nonzero_coefs=k)
    assert ours.shape == ref.shape == (x.shape[0], d.shape[0]) and ours.dtype == dtype
    np.testing.assert_array_equal(ours != 0, ref != 0)  # the same atoms
    np.testing.assert_allclose(ours, ref, atol=atol * max(1.0, np.abs(ref).max()))


def test_default_sparsity_is_sklearns(rng):
    x, d = problem(rng, features=40)
    ours = tc.sparse_encode(x, d)
    ref = sk_sparse_encode(x, d, algorithm="omp")
    assert (np.count_nonzero(ours, axis=1) <= 4).all()  # int(40 / 10)
    np.testing.assert_allclose(ours, ref, atol=1e-9)


def test_sparse_output(rng):
    x, d = problem(rng)
    dense = tc.sparse_encode(x, d, n_nonzero_coefs=4)
    csr = tc.sparse_encode(x, d, n_nonzero_coefs=4, sparse=True)
    assert isinstance(csr, sp.csr_matrix) and csr.shape == dense.shape
    assert csr.has_sorted_indices and csr.nnz == np.count_nonzero(dense)
    np.testing.assert_array_equal(csr.toarray(), dense)


def test_tolerance_matches_orthogonal_mp(rng):
    x, d = problem(rng)
    tol = 0.05
    ours = tc.sparse_encode(x, d, tol=tol)
    ref = orthogonal_mp(d.T, x.T, tol=tol).T
    np.testing.assert_allclose(ours, ref, atol=1e-9)
    resid = ((x - ours @ d) ** 2).sum(axis=1)
    assert (resid <= tol * (1 + 1e-9)).all()
    # Both rules: whichever comes first.
    both = tc.sparse_encode(x, d, n_nonzero_coefs=2, tol=tol)
    assert (np.count_nonzero(both, axis=1) <= 2).all()


def test_layouts_and_dtypes(rng):
    x, d = problem(rng)
    ref = tc.sparse_encode(x, d, n_nonzero_coefs=3)
    np.testing.assert_allclose(tc.sparse_encode(np.asfortranarray(x), d, n_nonzero_coefs=3), ref)
    np.testing.assert_allclose(tc.sparse_encode(x[::-1], d, n_nonzero_coefs=3), ref[::-1])
    wide = np.concatenate([x, x], axis=1)[:, : x.shape[1]]
    np.testing.assert_allclose(tc.sparse_encode(wide, d, n_nonzero_coefs=3), ref)
    assert tc.sparse_encode(x.astype(np.float32), d, n_nonzero_coefs=3).dtype == np.float64
    assert tc.sparse_encode(np.zeros((0, x.shape[1])), d).shape == (0, d.shape[0])


def test_bad_inputs(rng):
    x, d = problem(rng)
    with pytest.raises(ValueError, match="row 2"):
        bad = d.copy()
        bad[2] *= 2
        tc.sparse_encode(x, bad)
    with pytest.raises(ValueError, match="argument X"):
        tc.sparse_encode(x[:, :5], d)
    with pytest.raises(ValueError, match="n_nonzero_coefs"):
        tc.sparse_encode(x, d, n_nonzero_coefs=-1)
    with pytest.raises(TypeError, match="n_nonzero_coefs"):
        tc.sparse_encode(x, d, n_nonzero_coefs=2.5)
    with pytest.raises(ValueError, match="tol|error"):
        tc.sparse_encode(x, d, tol=-1.0)
    with pytest.raises(TypeError, match="argument tol"):
        tc.sparse_encode(x, d, tol="0.1")
    with pytest.raises(TypeError, match="argument X"):
        tc.sparse_encode(x.astype(complex), d)
    with pytest.raises(ValueError, match="argument dictionary"):
        tc.sparse_encode(x, d[0])
    nan = x.copy()
    nan[3, 3] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        tc.sparse_encode(nan, d)
