"""The stochastic-trace RBF target's value and gradient in one compiled call.

:class:`~skgp_bayes.targets.StochasticTraceTarget` estimates only the
trace term of the gradient, with probes solved by the factor that gives
the value, so its floor is one ``dpotrf``. From NumPy the rest of an
evaluation cost as much again at n = 2,000 (one BLAS thread pair): a full
``Xs Xs'`` product, an exponential over all ``n^2`` entries, a Fortran
copy of ``K`` for the factor beside ``K_f`` for the contraction (fresh
matrices of 32 MB, whose page faults alone take milliseconds), and the
interpreter lock held through every LAPACK call, so particles on threads
took turns.

Here the exact target's factorisation (:func:`~._exact_numba.factor_rbf`:
``dsyrk``, one exponential over the strict lower triangle, ``dpotrf``)
leaves ``L`` in the lower triangle of one Fortran buffer and ``K_f``'s
strict lower triangle packed beside it. ``dpotrs`` solves for ``a = K^-1
y`` and the probes together. ``K_f`` is then mirrored into the buffer's
free upper triangle, its diagonal (the kernel variance) written over
``L``'s once the log determinant is taken, and the contraction's one
product ``K_f [V, U, V o Xs]`` is a ``dsymm`` reading that upper triangle.
The contraction itself is :func:`~._exact_numba.rbf_gradient`'s, fed the
low-rank weight's row, column and quadratic sums (:func:`_lowrank_sums`).
"""

import numba as nb
import numpy as np

from ..linalg._nogil_lapack import (
    DPOTRF,
    DPOTRS,
    DSYMM,
    DSYRK,
    cholesky_solve_f,
    symmetric_product_upper_f,
)
from ..linalg._numba_ops import copy_matrix, copy_vector
from ._exact_numba import HALF_LOG_2PI, factor_rbf, log_diagonal_sum, rbf_gradient

__all__ = ["STOCHASTIC_ROUTINES", "rbf_stochastic_trace"]

STOCHASTIC_ROUTINES = (DSYRK, DPOTRF, DPOTRS, DSYMM)


@nb.njit(cache=True, nogil=True)
def _kernel_above_factor(B, packed, variance):
    """``K_f`` into ``B``'s upper triangle and diagonal (no return).

    ``packed`` holds ``K_f``'s strict lower triangle column by column
    (:func:`~._exact_numba.rbf_log_pack`); its transpose is the upper
    triangle, written column by column so that the writes are contiguous.
    """
    n = B.shape[0]
    starts = np.empty(n, dtype=np.int64)
    start = 0
    for j in range(n):
        starts[j] = start - j - 1  # packed index of (i, j) is starts[j] + i
        start += n - j - 1
    for c in range(n):
        for i in range(c):
            B[i, c] = packed[starts[i] + c]
        B[c, c] = variance


@nb.njit(cache=True, nogil=True)
def _lowrank_sums(P, U, V, Xs1):
    """The contraction's inputs for :func:`~._exact_numba.rbf_gradient`.

    ``P`` is ``K_f [V, U, V_s o xs_c]`` (``r`` columns, ``r`` columns, then
    ``r d`` columns, probe-major). With ``M = (U V') o K_f``, its row sums
    ``(U o K_f V) 1`` and column sums ``(V o K_f U) 1`` and the quadratic
    terms ``sum_s U_as (K_f (V_s o xs_c))_a`` give every derivative; they
    go into ``rbf_gradient``'s ``P`` as ``[quad terms, (rows + cols) / 2]``,
    which its identity turns into ``sum_a xs_ac^2 (rows + cols)_a - 2 xs_c'
    quad_c``. Returns that array and ``(sum of M, trace of U V')``.
    """
    n, r = U.shape
    d = Xs1.shape[1] - 1
    out = np.zeros((n, d + 1))
    total = 0.0
    trace = 0.0
    for s in range(r):
        for a in range(n):
            u, v = U[a, s], V[a, s]
            row = u * P[a, s]
            out[a, d] += 0.5 * (row + v * P[a, r + s])
            total += row
            trace += u * v
        for c in range(d):
            column = 2 * r + s * d + c
            for a in range(n):
                out[a, c] += U[a, s] * P[a, column]
    return out, (total, trace)


@nb.njit(cache=True, nogil=True)
def rbf_stochastic_trace(params, phi_defaults, param_index, X, y, probes, routines):
    """``(ok, value, grad)`` of the stochastic-trace RBF target.

    The value is exact; the gradient is ``1/2 tr(W dK_j)`` with ``W = a a'
    - (1/S) sum_s (K^-1 r_s) r_s'`` for the ``S`` columns ``r_s`` of
    ``probes`` (module notes). The first five arguments are those of the
    exact target's compiled calls (:func:`~._exact_numba.rbf_value_and_grad`);
    ``routines`` is :data:`STOCHASTIC_ROUTINES`. ``ok`` is False where
    ``K`` is not numerically positive definite (the general path then adds
    jitter).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._stochastic_numba import (
    ...     STOCHASTIC_ROUTINES, rbf_stochastic_trace)
    >>> X = np.linspace(-1, 1, 40)[:, None]
    >>> probes = np.random.default_rng(0).choice([-1.0, 1.0], size=(40, 4))
    >>> ok, value, grad = rbf_stochastic_trace(
    ...     np.array([0.0, -1.0, -4.0]), np.array([0.0, 0.0, -np.inf, -4.0]),
    ...     np.array([0, 1, 3]), X, np.sin(3 * X[:, 0]), probes, STOCHASTIC_ROUTINES)
    >>> ok, grad.shape
    (True, (3,))
    """
    dsyrk, dpotrf, dpotrs, dsymm = routines
    n, d = X.shape
    n_probes = probes.shape[1]
    r = n_probes + 1
    grad = np.empty(param_index.size)
    ok, B, packed, Xs1, scales = factor_rbf(
        params, phi_defaults, param_index, X, dsyrk, dpotrf
    )
    if not ok:
        return False, 0.0, grad
    variance, white, noise = scales
    V = np.empty((r, n)).T  # Fortran order, as dpotrs and dsymm read it
    copy_vector(V[:, 0], y)
    copy_matrix(V[:, 1:], probes)
    U = np.empty((r, n)).T
    copy_matrix(U, V)
    if cholesky_solve_f(B, U, dpotrs) != 0:
        return False, 0.0, grad
    fit = 0.0
    for a in range(n):
        fit += y[a] * U[a, 0]
        V[a, 0] = U[a, 0]
        for s in range(1, r):
            U[a, s] /= -n_probes
    value = -0.5 * fit - log_diagonal_sum(B) - n * HALF_LOG_2PI
    _kernel_above_factor(B, packed, variance)
    columns = np.empty((r * (d + 2), n)).T
    copy_matrix(columns[:, :r], V)
    copy_matrix(columns[:, r : 2 * r], U)
    for s in range(r):
        for c in range(d):
            column = columns[:, 2 * r + s * d + c]
            for a in range(n):
                column[a] = V[a, s] * Xs1[a, c]
    P = np.empty((r * (d + 2), n)).T
    symmetric_product_upper_f(B, columns, P, dsymm)
    sums_P, sums = _lowrank_sums(P, U, V, Xs1)
    noises = (white, noise)
    rbf_gradient(Xs1, sums_P, sums, noises, param_index, phi_defaults.size, grad)
    return True, value, grad
