"""gemm against scipy's BLAS (sgemm / dgemm), with the same arguments."""

import threading
import time

import numpy as np
import pytest
from scipy.linalg import blas

import trident_compute as tc

DTYPES = [(np.float32, blas.sgemm, 1e-5), (np.float64, blas.dgemm, 1e-12)]


def close(x, ref, rtol):
    assert x.shape == ref.shape
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    assert np.abs(x - ref).max(initial=0.0) <= rtol * scale * 10


@pytest.mark.parametrize("dtype,peer,rtol", DTYPES)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_matches_blas(rng, dtype, peer, rtol, trans_a, trans_b):
    m, n, k = 37, 29, 41
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    c = rng.standard_normal((m, n)).astype(dtype)
    c_before = c.copy()
    out = tc.gemm(a, b, alpha=-1.5, beta=0.75, c=c, trans_a=trans_a, trans_b=trans_b)
    ref = peer(-1.5, a, b, beta=0.75, c=c, trans_a=trans_a, trans_b=trans_b)
    assert out.dtype == dtype and out.flags.c_contiguous
    close(out, ref, rtol)
    np.testing.assert_array_equal(c, c_before)  # c is never written


@pytest.mark.parametrize("dtype,peer,rtol", DTYPES)
def test_layouts_read_in_place_or_copied(rng, dtype, peer, rtol):
    big = rng.standard_normal((60, 50)).astype(dtype)
    b = rng.standard_normal((20, 30)).astype(dtype)
    ref_for = lambda a, bb: peer(1.0, np.ascontiguousarray(a), np.ascontiguousarray(bb))  # noqa: E731
    views = {
        "row-strided (ld > cols)": big[:25, :20],
        "Fortran order": np.asfortranarray(big[:25, :20]),
        "transposed view": big[:20, :25].T,
        "every other row": big[::2, :20][:25],
        "reversed rows": big[24::-1, :20],
        "broadcast (zero strides)": np.broadcast_to(big[0, :20], (25, 20)),
    }
    for name, a in views.items():
        close(tc.gemm(a, b), ref_for(a, b), rtol), name


@pytest.mark.parametrize("dtype,peer,rtol", DTYPES)
def test_c_in_any_layout(rng, dtype, peer, rtol):
    a = rng.standard_normal((6, 5)).astype(dtype)
    b = rng.standard_normal((5, 4)).astype(dtype)
    c = rng.standard_normal((4, 6)).astype(dtype).T  # Fortran order
    out = tc.gemm(a, b, beta=2.0, c=c)
    assert out.flags.c_contiguous
    close(out, peer(1.0, a, b, beta=2.0, c=np.ascontiguousarray(c)), rtol)


def test_dtype_promotion(rng):
    a32 = rng.standard_normal((4, 3)).astype(np.float32)
    b64 = rng.standard_normal((3, 2))
    assert tc.gemm(a32, b64).dtype == np.float64
    assert tc.gemm(a32, a32.T.copy()).dtype == np.float32
    ints = np.arange(12).reshape(4, 3)
    out = tc.gemm(ints, ints.T)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, ints @ ints.T)
    assert tc.gemm([[1, 2]], [[3], [4]])[0, 0] == 11.0


def test_beta_zero_ignores_nan_c(rng):
    a = rng.standard_normal((3, 3))
    c = np.full((3, 3), np.nan)
    np.testing.assert_allclose(tc.gemm(a, a, c=c), a @ a)


def test_empty_shapes():
    assert tc.gemm(np.zeros((0, 5)), np.zeros((5, 3))).shape == (0, 3)
    out = tc.gemm(np.zeros((2, 0)), np.zeros((0, 3)), beta=2.0, c=np.ones((2, 3)))
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0))


def test_bad_inputs():
    a, b = np.ones((2, 3)), np.ones((4, 5))
    with pytest.raises(ValueError, match="argument b"):
        tc.gemm(a, b)
    with pytest.raises(ValueError, match="argument c"):
        tc.gemm(a, a.T, beta=1.0)
    with pytest.raises(ValueError, match="argument c"):
        tc.gemm(a, a.T, beta=1.0, c=np.ones((3, 3)))
    with pytest.raises(ValueError, match="argument a"):
        tc.gemm(np.ones(3), np.ones((3, 1)))
    with pytest.raises(TypeError, match="argument a"):
        tc.gemm(np.ones((2, 2), complex), np.ones((2, 2)))
    with pytest.raises(TypeError, match="argument b"):
        tc.gemm(np.ones((2, 2)), "ab")
    with pytest.raises(TypeError, match="argument alpha"):
        tc.gemm(a, a.T, alpha="2")
    with pytest.raises(TypeError, match="argument a"):
        tc.gemm(None, a)
    nan = a.copy()
    nan[1, 2] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        tc.gemm(nan, a.T)
    with pytest.raises(ValueError, match="alpha"):
        tc.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), alpha=1e40)


@pytest.mark.parametrize("precision", ["strict", "tf32", "tf32x3"])
def test_precision(rng, precision):
    # Tf32 is judged at its own bound (operands rounded to 10 mantissa bits);
    # strict and tf32x3 at f32's. Backends without tensor cores compute
    # strictly.
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 40)).astype(np.float32)
    out = tc.gemm(a, b, precision=precision)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    assert out.dtype == np.float32
    assert rel <= (5e-3 if precision == "tf32" else 1e-5)
    with pytest.raises(ValueError, match="argument precision"):
        tc.gemm(a, b, precision="fp16")
    with pytest.raises(TypeError, match="argument precision"):
        tc.gemm(a, b, precision=None)


def test_out_of_memory_is_memory_error():
    # A 2^20 x 2^21 float64 result (16 TiB): numpy's MemoryError, no crash.
    with pytest.raises(MemoryError):
        tc.gemm(np.zeros((2**20, 1)), np.zeros((1, 2**21)))


def test_backend_argument():
    a = np.eye(2)
    np.testing.assert_array_equal(tc.gemm(a, a, backend="rayon"), a)
    assert tc.last_backend() == "rayon"
    with pytest.raises(ValueError, match="unknown backend"):
        tc.gemm(a, a, backend="quantum")
    with pytest.raises(TypeError, match="backend"):
        tc.gemm(a, a, backend=1)
    with pytest.raises(tc.BackendUnavailableError):
        tc.gemm(a, a, backend="reference")  # not compiled into the package


def test_gil_is_released(rng):
    """A second Python thread runs while a large product is computed."""
    n = 1500
    a = rng.standard_normal((n, n))
    done = threading.Event()
    ticks = 0

    def work():
        for _ in range(3):
            tc.gemm(a, a)
        done.set()

    t = threading.Thread(target=work)
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        ticks += 1
    t.join()
    elapsed = time.perf_counter() - start
    # With the GIL held for the whole call the loop above would barely run;
    # released, it runs all the time (millions of iterations per second).
    assert ticks > 1000 * elapsed, (ticks, elapsed)
