"""Trident's parallel primitives for numpy and scipy.

One call per primitive, each with the names, argument order and return
shapes of the library it replaces:

======================  ==================================================
``gemm``                ``scipy.linalg.blas.sgemm`` / ``dgemm``
``spgemm``              ``a @ b`` of ``scipy.sparse`` matrices
``NearestIndex``        ``scipy.spatial.cKDTree`` (``query``) for 3-D points
``sparse_encode``       ``sklearn.decomposition.sparse_encode`` (OMP)
``maximum_flow``        ``scipy.sparse.csgraph.maximum_flow``
``maxflow``             PyMaxflow's ``Graph`` (the grid API), a module
``backends``            what is compiled in, what runs here, what is picked
======================  ==================================================

Every call runs with the GIL released. Dense float32/float64 arrays are read
in place where their layout allows (C order and row-strided views; for
``gemm`` also transposes); other layouts are copied, never refused. Sparse
matrices and graphs are converted into Trident's own CSR or arc arrays. Errors are
``ValueError`` (bad shapes or values), ``TypeError`` (wrong types),
``MemoryError``, or a subclass of :class:`TridentError`.

``backend=None`` lets Trident choose per call (CUDA where there is a GPU and
the call is large enough, else the CPU; ``TRIDENT_BACKEND`` in the
environment forces one); ``backend="rayon"`` (or ``"cuda"``, ``"wgpu"``)
uses that backend alone.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _trident
from ._trident import BackendError, BackendUnavailableError, TridentError, UnsupportedError

__version__: str = _trident.__version__

__all__ = [
    "BackendError",
    "BackendUnavailableError",
    "MaximumFlowResult",
    "NearestIndex",
    "TridentError",
    "UnsupportedError",
    "backends",
    "gemm",
    "last_backend",
    "maxflow",
    "maximum_flow",
    "report",
    "sparse_encode",
    "spgemm",
]


# Argument checks, in the caller's words -------------------------------------


def _backend(call: str, backend: Any) -> Optional[str]:
    if backend is None or isinstance(backend, str):
        return backend
    raise TypeError(f"{call}: argument backend must be None or a backend name, not {type(backend).__name__}")


def _real(call: str, name: str, x: Any) -> float:
    if isinstance(x, numbers.Real):
        return float(x)
    raise TypeError(f"{call}: argument {name} must be a real number, not {type(x).__name__}")


def _count(call: str, name: str, x: Any) -> int:
    """A non-negative Python int (numpy integers included, floats refused)."""
    try:
        v = operator.index(x)
    except TypeError:
        raise TypeError(f"{call}: argument {name} must be an integer, not {type(x).__name__}") from None
    if v < 0:
        raise ValueError(f"{call}: argument {name} = {v} must be >= 0")
    return v


def _dense(call: str, name: str, x: Any, ndim: int) -> np.ndarray:
    if _is_sparse(x):
        raise TypeError(f"{call}: argument {name} is a scipy.sparse matrix; pass a dense array (x.toarray())")
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{call}: argument {name} has dtype {a.dtype}; expected real numbers (float32 or float64)")
    if a.ndim != ndim:
        raise ValueError(f"{call}: argument {name} must be {ndim}-D, got shape {a.shape}")
    return a


def _float_type(**arrays: np.ndarray) -> type:
    """float32 when every array is float32 (or narrower floats), else float64,
    as numpy promotes them."""
    wide = any(a.dtype.kind != "f" or a.dtype.itemsize > 4 for a in arrays.values())
    return np.float64 if wide else np.float32


def _is_sparse(x: Any) -> bool:
    try:
        import scipy.sparse as sp
    except ImportError:  # scipy is a dependency; without it nothing is sparse
        return False
    return sp.issparse(x)


# The calls --------------------------------------------------------------------


def gemm(
    a: Any,
    b: Any,
    *,
    alpha: float = 1.0,
    beta: float = 0.0,
    c: Any = None,
    trans_a: bool = False,
    trans_b: bool = False,
    backend: Optional[str] = None,
    precision: str = "strict",
) -> np.ndarray:
    """``alpha * op(a) @ op(b) + beta * c`` as a new array, like
    ``scipy.linalg.blas.sgemm`` / ``dgemm`` (``op(x)`` is ``x.T`` when
    ``trans_x``).

    The result is float32 when ``a``, ``b`` (and ``c``) are all float32, else
    float64. ``c`` is read only when ``beta != 0`` and is never written.
    Strided views and transposes (``x.T``) are read in place.

    ``precision`` (float32 only; float64 is always strict): ``"strict"``
    (true f32 multiply-adds, the default), ``"tf32"`` (operands rounded to
    TF32 on tensor cores, about 3 decimal digits) or ``"tf32x3"`` (f32
    accuracy from TF32 tensor cores, each operand split in two); a backend
    without tensor cores computes strictly.
    """
    call = "gemm"
    A, B = _dense(call, "a", a, 2), _dense(call, "b", b, 2)
    arrays = {"a": A, "b": B}
    C = None
    if c is not None:
        C = arrays["c"] = _dense(call, "c", c, 2)
    dt = _float_type(**arrays)
    return _trident.gemm(
        A.astype(dt, copy=False),
        B.astype(dt, copy=False),
        None if C is None else C.astype(dt, copy=False),
        _real(call, "alpha", alpha),
        _real(call, "beta", beta),
        bool(trans_a),
        bool(trans_b),
        _backend(call, backend),
        _choice(call, "precision", precision, ("strict", "tf32", "tf32x3")),
    )


def _choice(call: str, name: str, x: Any, allowed: Tuple[str, ...]) -> str:
    if isinstance(x, str) and x in allowed:
        return x
    options = ", ".join(repr(a) for a in allowed)
    if isinstance(x, str):
        raise ValueError(f"{call}: argument {name} = {x!r} must be one of {options}")
    raise TypeError(f"{call}: argument {name} must be one of {options}, not {type(x).__name__}")


def _csr(call: str, name: str, x: Any):
    """Any 2-D scipy.sparse matrix as CSR with sorted, unique columns (a copy
    only where it is not already)."""
    if not _is_sparse(x):
        raise TypeError(f"{call}: argument {name} must be a scipy.sparse matrix or array, not {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{call}: argument {name} must be 2-D, got shape {x.shape}")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{call}: argument {name} has dtype {x.dtype}; expected real numbers")
    m = x.tocsr()
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    return m


def spgemm(a: Any, b: Any, *, backend: Optional[str] = None):
    """``a @ b`` for ``scipy.sparse`` matrices of any format (int32 or int64
    index arrays), as a ``scipy.sparse.csr_matrix`` with sorted indices.

    The structure is symbolic: an entry whose products cancel to 0 is kept
    as a stored zero, where scipy drops it (``c.eliminate_zeros()`` gives
    scipy's structure). Values are float32 when both inputs are float32,
    else float64.
    """
    import scipy.sparse as sp

    call = "spgemm"
    A = _csr(call, "a", a)
    B = A if b is a else _csr(call, "b", b)
    dt = _float_type(a=A.data, b=B.data)

    def parts(m):
        return (m.indptr, m.indices, m.data.astype(dt, copy=False), m.shape)

    pa = parts(A)
    pb = pa if B is A else parts(B)
    indptr, indices, data = _trident.spgemm(pa, pb, _backend(call, backend))
    out = sp.csr_matrix((data, indices, indptr), shape=(A.shape[0], B.shape[1]))
    out.has_canonical_format = True
    return out


def _points(call: str, name: str, x: Any, single: bool = False) -> np.ndarray:
    """An ``(n, 3)`` C-contiguous array of points (a single point of shape
    ``(d,)`` where ``single``; 1- and 2-D points get zero coordinates, which
    leaves every distance as it is): float32 where float32 holds every
    coordinate exactly (float32 input, small integers, halves), else
    float64. Coordinates are never rounded: map coordinates such as UTM
    eastings and northings stay float64 and are searched in float64."""
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{call}: argument {name} has dtype {a.dtype}; expected real coordinates")
    if single and a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2 or not 1 <= a.shape[1] <= 3:
        raise ValueError(f"{call}: argument {name} must have shape (n, 3) (or (n, 1), (n, 2)), got {a.shape}")
    if a.dtype != np.float32:
        f = a.astype(np.float32)
        a = f if np.array_equal(f, a, equal_nan=True) else a.astype(np.float64)
    if a.shape[1] < 3:
        a = np.concatenate([a, np.zeros((a.shape[0], 3 - a.shape[1]), a.dtype)], axis=1)
    return np.ascontiguousarray(a)


def _same_type(data: np.ndarray, x: np.ndarray) -> Tuple[np.ndarray, np.ndarray, bool]:
    """``data`` and ``x`` in one type: float64 (exactly widened) when either
    is, with ``True``; else both float32 and ``False``."""
    if data.dtype == np.float64 or x.dtype == np.float64:
        return data.astype(np.float64, copy=False), x.astype(np.float64, copy=False), True
    return data, x, False


class NearestIndex:
    """Nearest points of a fixed 3-D point set, with ``cKDTree``'s answers.

    ``points`` is an ``(n, 3)`` array (``(n, 1)`` and ``(n, 2)`` work too)
    of any real dtype. The search runs in float32 where float32 holds every
    coordinate of ``points`` and the query exactly, else in float64 (map
    coordinates, for one): never on rounded coordinates. The array is kept,
    not copied, when it is C-contiguous float32 (or float64 needing it).
    Each query builds the backend's search structure over ``points``.

    Ties in distance go to the smaller index; distances are Euclidean,
    float64, computed from the coordinates as cKDTree computes them.
    """

    def __init__(self, points: Any, *, backend: Optional[str] = None) -> None:
        self._backend = _backend("NearestIndex", backend)
        self.data: np.ndarray = _points("NearestIndex", "points", points)
        #: The number of points.
        self.n: int = self.data.shape[0]
        #: Their dimension (always 3 once stored).
        self.m: int = 3

    def query(self, x: Any, k: int = 1) -> Tuple[Any, Any]:
        """``(dist, idx)`` of the ``k`` nearest points to each row of ``x``, as
        ``cKDTree.query``: shape ``(len(x),)`` for ``k = 1``, ``(len(x), k)``
        otherwise, and scalars (``k = 1``) or ``(k,)`` arrays for one point of
        shape ``(3,)``. Beyond the ``n`` points, distances are ``inf`` and
        indices ``n``, as cKDTree pads them."""
        call = "NearestIndex.query"
        x_arr = np.asarray(x)
        single = x_arr.ndim == 1
        X = _points(call, "x", x_arr, single=True)
        k = _count(call, "k", k)
        if k < 1:
            raise ValueError(f"{call}: argument k = {k} must be >= 1")
        kk = min(k, self.n)
        if kk > 0:
            D, X, wide = _same_type(self.data, X)
            knn = _trident.knn_f64 if wide else _trident.knn
            dist, idx = knn(D, X, kk, self._backend)
        else:
            dist = np.empty((X.shape[0], 0))
            idx = np.empty((X.shape[0], 0), np.int64)
        if kk < k:
            pad = k - kk
            dist = np.concatenate([dist, np.full((X.shape[0], pad), np.inf)], axis=1)
            idx = np.concatenate([idx, np.full((X.shape[0], pad), self.n, np.int64)], axis=1)
        if k == 1:
            dist, idx = dist[:, 0], idx[:, 0]
            if single:
                return float(dist[0]), int(idx[0])
            return dist, idx
        if single:
            return dist[0], idx[0]
        return dist, idx

    def closest_pairs(self, x: Any, k: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs every row ``i`` of ``x`` with its nearest point ``j`` and
        returns the ``k`` pairs of smallest distance (``min(k, len(x))`` of
        them, ascending; ties to the smaller ``i``) as ``(i, j, dist)``."""
        call = "NearestIndex.closest_pairs"
        D, X, wide = _same_type(self.data, _points(call, "x", x))
        pairs = _trident.closest_pairs_f64 if wide else _trident.closest_pairs
        return pairs(D, X, _count(call, "k", k), self._backend)

    def __repr__(self) -> str:
        return f"NearestIndex(n={self.n})"


def sparse_encode(
    X: Any,
    dictionary: Any,
    *,
    n_nonzero_coefs: Optional[int] = None,
    tol: Optional[float] = None,
    sparse: bool = False,
    backend: Optional[str] = None,
):
    """Orthogonal Matching Pursuit codes in scikit-learn's layout.

    ``X`` is ``n_samples x n_features``, ``dictionary`` ``n_atoms x
    n_features`` with unit-norm rows; returns the ``n_samples x n_atoms``
    codes (a ``scipy.sparse.csr_matrix`` when ``sparse``). Each signal stops
    at ``n_nonzero_coefs`` atoms or once its squared residual norm is at most
    ``tol``, whichever comes first (with neither, scikit-learn's default
    ``n_nonzero_coefs = max(n_features / 10, 1)``, at most ``n_atoms``).
    scikit-learn's ``orthogonal_mp`` lets ``tol`` override
    ``n_nonzero_coefs``; here both apply.
    """
    call = "sparse_encode"
    Xa = _dense(call, "X", X, 2)
    D = _dense(call, "dictionary", dictionary, 2)
    dt = _float_type(X=Xa, dictionary=D)
    if n_nonzero_coefs is None and tol is None:
        n_nonzero_coefs = int(min(max(Xa.shape[1] / 10, 1), D.shape[0]))
    k = None if n_nonzero_coefs is None else _count(call, "n_nonzero_coefs", n_nonzero_coefs)
    eps = None if tol is None else _real(call, "tol", tol)
    out = _trident.sparse_encode(
        Xa.astype(dt, copy=False),
        D.astype(dt, copy=False),
        k,
        eps,
        bool(sparse),
        _backend(call, backend),
    )
    if not sparse:
        return out
    import scipy.sparse as sp

    indptr, indices, data = out
    codes = sp.csr_matrix((data, indices, indptr), shape=(Xa.shape[0], D.shape[0]))
    codes.has_canonical_format = True
    return codes


class MaximumFlowResult:
    """What :func:`maximum_flow` returns: ``flow_value``, ``flow`` (CSR, int64:
    ``flow[i, j] = -flow[j, i]`` is the net flow from ``i`` to ``j``, stored
    for every pair joined by an edge either way, as scipy stores it)
    and ``source_side`` (bool per vertex: the vertices reachable from the
    source in the final residual graph, the minimum cut with the smallest
    source side)."""

    __slots__ = ("flow_value", "flow", "source_side")

    def __init__(self, flow_value: int, flow: Any, source_side: np.ndarray) -> None:
        self.flow_value = flow_value
        self.flow = flow
        self.source_side = source_side

    def __repr__(self) -> str:
        return f"MaximumFlowResult with value of {self.flow_value}"


def maximum_flow(csgraph: Any, source: int, sink: int, *, backend: Optional[str] = None) -> MaximumFlowResult:
    """The maximum flow from ``source`` to ``sink``, as
    ``scipy.sparse.csgraph.maximum_flow``: ``csgraph[i, j]`` is the capacity
    of the edge ``i -> j`` (a square sparse matrix of any format with integer
    capacities; duplicate entries are parallel edges).

    The flow on each edge may differ from scipy's (a graph has many maximum
    flows); the value, and ``source_side``, do not.
    """
    import scipy.sparse as sp

    call = "maximum_flow"
    if not _is_sparse(csgraph):
        raise TypeError(f"{call}: argument csgraph must be a scipy.sparse matrix, not {type(csgraph).__name__}")
    if csgraph.ndim != 2 or csgraph.shape[0] != csgraph.shape[1]:
        raise ValueError(f"{call}: argument csgraph must be a square matrix, got shape {csgraph.shape}")
    if csgraph.dtype.kind not in "iu":
        raise ValueError(f"{call}: argument csgraph: capacities must be integers, got dtype {csgraph.dtype}")
    g = csgraph.tocsr()
    caps = g.data
    if caps.dtype == np.uint64 and caps.size and caps.max() > np.iinfo(np.int64).max:
        p = int(np.argmax(caps > np.iinfo(np.int64).max))
        raise ValueError(f"{call}: argument csgraph: capacity {caps[p]} (entry {p}) exceeds the int64 range")
    n = g.shape[0]
    try:
        s, t = operator.index(source), operator.index(sink)
    except TypeError:
        raise TypeError(f"{call}: arguments source and sink must be integers") from None
    indptr = g.indptr.astype(np.int64, copy=False)
    indices = g.indices.astype(np.int64, copy=False)
    value, side, f_indptr, f_indices, f_data = _trident.maximum_flow(
        n, indptr, indices, caps.astype(np.int64, copy=False), s, t, _backend(call, backend)
    )
    cls = sp.csr_array if isinstance(csgraph, getattr(sp, "sparray", ())) else sp.csr_matrix
    net = cls((f_data, f_indices, f_indptr), shape=(n, n))
    net.has_canonical_format = True
    return MaximumFlowResult(int(value), net, side)


def backends() -> Dict[str, Any]:
    """What Trident has here, as a dict:

    - ``compiled``: the backends compiled into this package, in preference order;
    - ``available``: ``(name, description)`` of those that run on this machine;
    - ``unavailable``: ``{name: reason}`` for compiled backends that do not;
    - ``default``: the backend a call with ``backend=None`` is offered first
      (``None`` when ``TRIDENT_BACKEND`` names one that cannot run);
    - ``per_call``: how a call's size moves it between CUDA and the CPU;
    - ``forced``: the value of ``TRIDENT_BACKEND``, if set.
    """
    return _trident.backends()


def last_backend() -> Optional[str]:
    """The backend that served the last call of this process (``None``
    before the first)."""
    return _trident.last_backend()


def report() -> str:
    """Which backend serves each primitive in each precision, and why the
    others were passed over (one tiny call per primitive the first time)."""
    return _trident.report()


# The PyMaxflow-style module, importable as trident_compute.maxflow.
from . import maxflow  # noqa: E402
