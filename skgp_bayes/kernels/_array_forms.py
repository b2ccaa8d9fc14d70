"""The fast-path kernels written against an array module (NumPy or CuPy).

The compiled kernels in :mod:`._numba` run on the host. On a GPU the Gram
matrix and the low-rank gradient contraction were also built there, then the
matrix copied over: measured on an H200 at n = 22,784 (d = 8), building
``K`` on one host thread took 7.6 s and the contraction 7.4 s of a 15.3 s
stochastic gradient whose CG solves took 0.14 s. Here both run where the
arrays live, in blocks of rows:

- ``r^2`` is summed column by column from coordinate differences, the
  compiled code's own arithmetic, rather than as ``|a|^2 + |b|^2 - 2 a.b``,
  whose cancellation would give near-duplicate inputs distances of the order
  of ``eps |x|^2`` (and Matern 1/2 a slope ``k / r`` that blows up there);
- the contraction over ARD dimensions,
  ``sum_ab W_ab f_ab (x_ac - x_bc)^2 = 2 (sum_a x_ac^2 m_a - x_c' M x_c)``
  with ``M = W o F`` symmetric and ``m`` its row sums, is one matrix
  product ``M X`` per block, on inputs centred first (the kernel is
  stationary) so that the two terms stay of the order of the result.

Functions take the adapter of a recognised kernel (``adapter.is_fast``) and
return the same quantities as :meth:`KernelAdapter.gram` and
:func:`~skgp_bayes.linalg.lowrank_grad_contract`, to rounding.
"""

import math

import numpy as np

from ._lowering import BASE_MATERN12, BASE_MATERN32, BASE_RBF

__all__ = [
    "array_grad_contract",
    "array_gram",
    "array_kernel_columns",
    "array_lowrank_grad_contract",
]

# Entries of one (rows, n) block temporary: 2^25 float64 are 256 MiB, and a
# block holds about six of them at once.
_BLOCK_ENTRIES = 2**25


def _block_rows(n, block_entries):
    return max(1, min(n, block_entries // max(n, 1)))


def _scaled_inputs(adapter, theta, X, xp):
    """(variance, noise, ard, centred scaled inputs on the device)."""
    X = np.asarray(X, dtype=np.float64)
    variance, noise, inv_ell, ard = adapter._fast_params(theta, X.shape[1])
    Xs = np.ascontiguousarray((X - X.mean(axis=0)) * inv_ell)
    return variance, noise, ard, xp.asarray(Xs)


def _squared_distances(Xs, start, stop, xp):
    """Scaled squared distances of rows ``start:stop`` to every row."""
    rows = Xs[start:stop]
    r2 = xp.zeros((stop - start, Xs.shape[0]))
    for c in range(Xs.shape[1]):
        t = rows[:, c : c + 1] - Xs[:, c][None, :]
        r2 += t * t
    return r2


def _radial(base, r2, xp, slope):
    """``k(r)``, and with ``slope`` also ``f(r) = -k'(r) / r`` (0 at r = 0)."""
    if base == BASE_RBF:
        k = xp.exp(-0.5 * r2)
        return (k, k) if slope else k
    r = xp.sqrt(r2)
    if base == BASE_MATERN12:
        k = xp.exp(-r)
        if not slope:
            return k
        positive = r > 0.0
        # r + (r == 0) keeps the division finite; the mask then zeroes it
        return k, k / (r + (r <= 0.0)) * positive
    root = math.sqrt(3.0) if base == BASE_MATERN32 else math.sqrt(5.0)
    t = root * r
    e = xp.exp(-t)
    if base == BASE_MATERN32:
        k = (1.0 + t) * e
        return (k, 3.0 * e) if slope else k
    k = (1.0 + t + (5.0 / 3.0) * r2) * e
    return (k, (5.0 / 3.0) * (1.0 + t) * e) if slope else k


def array_gram(adapter, theta, X, xp, block_entries=_BLOCK_ENTRIES):
    """``K(X, X)`` with WhiteKernel noise on the diagonal, built in ``xp``.

    Parameters
    ----------
    adapter : KernelAdapter
        A recognised kernel (``adapter.is_fast``).
    theta : ndarray of shape (n_params,)
        Log-scale hyperparameters.
    X : ndarray of shape (n, d)
        Inputs, on the host.
    xp : module
        ``numpy`` or ``cupy``; ``K`` is built and returned there.
    block_entries : int, optional
        Entries of one block of rows (memory of the temporaries).

    Returns
    -------
    K : array of shape (n, n), of module ``xp``

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.kernels._array_forms import array_gram
    >>> adapter = KernelAdapter(RBF(1.0) + WhiteKernel(0.5))
    >>> X = np.array([[0.0], [1.0]])
    >>> np.allclose(array_gram(adapter, adapter.kernel.theta, X, np),
    ...             adapter.gram(adapter.kernel.theta, X))
    True
    """
    variance, noise, _, Xs = _scaled_inputs(adapter, theta, X, xp)
    n = Xs.shape[0]
    K = xp.zeros((n, n))
    step = _block_rows(n, block_entries)
    for start in range(0, n, step):
        stop = min(n, start + step)
        K[start:stop] = variance * _radial(
            adapter.spec.base, _squared_distances(Xs, start, stop, xp), xp, False
        )
    if noise:
        diagonal = xp.arange(n)
        K[diagonal, diagonal] = variance + noise
    return K


def array_kernel_columns(adapter, theta, X, xp):
    """Columns ``i -> K(X, X[i])`` (no WhiteKernel noise), each built in ``xp``.

    The inputs are scaled, centred and copied once; a column is then a few
    element-wise passes over them on the device, where a host column would
    cost a kernel evaluation and a copy. A pivoted Cholesky takes about a
    hundred of them per preconditioner.

    Parameters
    ----------
    adapter : KernelAdapter
        A recognised kernel (``adapter.is_fast``).
    theta : ndarray of shape (n_params,)
    X : ndarray of shape (n, d)
        Inputs, on the host.
    xp : module

    Returns
    -------
    column : callable
        ``column(i)``: array of shape (n,), of module ``xp``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.kernels._array_forms import array_kernel_columns
    >>> adapter = KernelAdapter(RBF(1.0) + WhiteKernel(0.5))
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> column = array_kernel_columns(adapter, adapter.kernel.theta, X, np)
    >>> np.allclose(column(1), adapter.cross(adapter.kernel.theta, X, X[1:2])[:, 0])
    True
    """
    variance, _, _, Xs = _scaled_inputs(adapter, theta, X, xp)
    base = adapter.spec.base

    def column(i):
        t = Xs - Xs[i : i + 1]
        return variance * _radial(base, xp.sum(t * t, axis=1), xp, False)

    return column


def array_lowrank_grad_contract(
    adapter, theta, X, U, V, xp, block_entries=_BLOCK_ENTRIES
):
    """``g_j = sum_ab (U V')_ab dK(X, X)_ab / dtheta_j``, computed in ``xp``.

    Parameters
    ----------
    adapter : KernelAdapter
        A recognised kernel (``adapter.is_fast``).
    theta : ndarray of shape (n_params,)
    X : ndarray of shape (n, d)
        Inputs, on the host.
    U, V : arrays of shape (n, r), of module ``xp``
    xp : module
    block_entries : int, optional
        Entries of one block of rows.

    Returns
    -------
    g : ndarray of shape (n_params,)
        On the host.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.kernels._array_forms import array_lowrank_grad_contract
    >>> from skgp_bayes.linalg import lowrank_grad_contract
    >>> adapter = KernelAdapter(RBF([1.0, 2.0]))
    >>> rng = np.random.default_rng(0)
    >>> X, U, V = (rng.normal(size=(6, 2)) for _ in range(3))
    >>> theta = adapter.kernel.theta
    >>> np.allclose(array_lowrank_grad_contract(adapter, theta, X, U, V, np),
    ...             lowrank_grad_contract(adapter, theta, X, U, V))
    True
    """

    def rows_of_W(start, stop):
        # W = (U V' + V U') / 2 gives the same sums as U V' (k and f are
        # symmetric) and makes M symmetric, which the formula needs.
        return 0.5 * (U[start:stop] @ V.T + V[start:stop] @ U.T)

    return _contract(
        adapter, theta, X, rows_of_W, lambda: xp.sum(U * V), xp, block_entries
    )


def array_grad_contract(adapter, theta, X, W, xp, block_entries=_BLOCK_ENTRIES):
    """``g_j = sum_ab W_ab dK(X, X)_ab / dtheta_j`` for a dense symmetric ``W``.

    The exact gradient's contraction (``W = a a' - K^-1``) on the device;
    :func:`array_lowrank_grad_contract` is the same sum for ``W = U V'``.

    Parameters
    ----------
    adapter : KernelAdapter
        A recognised kernel (``adapter.is_fast``).
    theta : ndarray of shape (n_params,)
    X : ndarray of shape (n, d)
        Inputs, on the host.
    W : array of shape (n, n), of module ``xp``
        Symmetric weights.
    xp : module
    block_entries : int, optional
        Entries of one block of rows.

    Returns
    -------
    g : ndarray of shape (n_params,)
        On the host.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgp_bayes.kernels import KernelAdapter
    >>> from skgp_bayes.kernels._array_forms import array_grad_contract
    >>> adapter = KernelAdapter(RBF([1.0, 2.0]))
    >>> rng = np.random.default_rng(0)
    >>> X, U = rng.normal(size=(6, 2)), rng.normal(size=(6, 3))
    >>> theta = adapter.kernel.theta
    >>> np.allclose(array_grad_contract(adapter, theta, X, U @ U.T, np),
    ...             adapter.grad_contract(theta, X, U @ U.T))
    True
    """
    diagonal = xp.arange(W.shape[0])
    return _contract(
        adapter,
        theta,
        X,
        lambda start, stop: W[start:stop],
        lambda: xp.sum(W[diagonal, diagonal]),
        xp,
        block_entries,
    )


def _contract(adapter, theta, X, rows_of_W, trace_of_W, xp, block_entries):
    """The contraction over blocks of rows of a symmetric ``W``."""
    variance, noise, ard, Xs = _scaled_inputs(adapter, theta, X, xp)
    n, d = Xs.shape
    squares = Xs * Xs
    total_k = 0.0
    by_input = xp.zeros(d)
    step = _block_rows(n, block_entries)
    for start in range(0, n, step):
        stop = min(n, start + step)
        W = rows_of_W(start, stop)
        k, f = _radial(
            adapter.spec.base, _squared_distances(Xs, start, stop, xp), xp, True
        )
        total_k += float(xp.sum(W * k))
        M = W * f
        row_sums = xp.sum(M, axis=1)
        MX = M @ Xs
        per_input = xp.sum(squares[start:stop] * row_sums[:, None], axis=0) - xp.sum(
            Xs[start:stop] * MX, axis=0
        )
        by_input += per_input
    # float() copies one scalar to the host, on either module
    by_input = 2.0 * np.array([float(by_input[c]) for c in range(d)])
    g_phi = np.empty(adapter.spec.n_length_scales + 2)
    g_phi[0] = variance * total_k
    g_phi[1:-1] = variance * (by_input if ard else by_input.sum())
    g_phi[-1] = noise * float(trace_of_W()) if noise else 0.0
    return adapter._to_theta(g_phi)
