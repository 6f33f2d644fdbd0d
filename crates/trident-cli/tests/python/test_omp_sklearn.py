"""`trident omp --atoms-as-rows` against scikit-learn's OMP on the same
dictionary (atoms as rows, `components_` layout) and signals: the same atoms
and coefficients wherever scikit-learn's stop rules agree with ours, and the
documented differences (`trident omp --help`) where they do not."""

import warnings
import zipfile

import numpy as np
from sklearn.decomposition import sparse_encode
from sklearn.linear_model import orthogonal_mp


def codes(path, signals, atoms):
    """The .npz codes as a dense signals x atoms matrix."""
    with zipfile.ZipFile(path) as z:
        get = lambda m: np.load(z.open(m + ".npy"))
        off, at, co = get("offsets"), get("atoms"), get("coefs")
    dense = np.zeros((signals, atoms))
    for i in range(signals):
        dense[i, at[off[i]:off[i + 1]]] = co[off[i]:off[i + 1]]
    return dense


def problem(tmp_path, seed=3, k=40, n=16, count=50):
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((k, n))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    # Signals of 4 atoms plus a little noise: no near ties.
    x = np.zeros((count, n))
    for i in range(count):
        pick = rng.choice(k, 4, replace=False)
        x[i] = rng.uniform(1, 2, 4) * rng.choice([-1, 1], 4) @ d[pick]
    x += 1e-3 * rng.standard_normal(x.shape)
    np.save(tmp_path / "d.npy", d)
    np.save(tmp_path / "x.npy", x)
    return d, x


def test_sparsity_matches_sparse_encode(trident, tmp_path):
    d, x = problem(tmp_path)
    out = tmp_path / "c.npz"
    trident("omp", "--dict", tmp_path / "d.npy", "--atoms-as-rows",
            "--signals", tmp_path / "x.npy", "--sparsity", 4, "-o", out)
    ours = codes(out, *x.shape[:1], d.shape[0])
    theirs = sparse_encode(x, d, algorithm="omp", n_nonzero_coefs=4)
    assert ((ours != 0) == (theirs != 0)).all()
    assert np.abs(ours - theirs).max() < 1e-10


def test_tol_matches_orthogonal_mp(trident, tmp_path):
    d, x = problem(tmp_path)
    out = tmp_path / "c.npz"
    tol = 0.05
    trident("omp", "--dict", tmp_path / "d.npy", "--atoms-as-rows",
            "--signals", tmp_path / "x.npy", "--tol", tol, "-o", out)
    ours = codes(out, *x.shape[:1], d.shape[0])
    theirs = orthogonal_mp(d.T, x.T, tol=tol).T
    assert ((ours != 0) == (theirs != 0)).all()
    assert np.abs(ours - theirs).max() < 1e-10


def test_documented_differences(trident, tmp_path):
    d, _ = problem(tmp_path)
    rows = ["--dict", tmp_path / "d.npy", "--atoms-as-rows", "--signals", tmp_path / "x.npy"]
    out = tmp_path / "c.npz"
    # ||x||^2 = 1e-6 <= tol: no atom here, one in scikit-learn.
    small = np.zeros((1, d.shape[1]))
    small[0, 0] = 1e-3
    np.save(tmp_path / "x.npy", small)
    trident("omp", *rows, "--tol", 1e-5, "-o", out)
    ours = codes(out, 1, d.shape[0])
    sk = orthogonal_mp(d.T, small[0], tol=1e-5)
    assert np.count_nonzero(ours) == 0 and np.count_nonzero(sk) == 1
    # A signal of 1e-12 (1.5e-12 times atom 0): coded here as at scale 1, no
    # atom in scikit-learn (its threshold on correlations is absolute).
    tiny = 1.5e-12 * d[:1]
    np.save(tmp_path / "x.npy", tiny)
    trident("omp", *rows, "--sparsity", 1, "-o", out)
    ours = codes(out, 1, d.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sk = orthogonal_mp(d.T, tiny[0], n_nonzero_coefs=1)
    assert np.count_nonzero(sk) == 0
    assert np.flatnonzero(ours).tolist() == [0]
    assert abs(ours[0, 0] - 1.5e-12) < 1e-24
