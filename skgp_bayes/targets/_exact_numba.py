"""Compiled passes of the exact RBF marginal likelihood (no fastmath).

The exact target works on one Fortran-ordered ``n x n`` buffer ``B`` that
LAPACK's ``dpotrf`` and the inverse read and write in the lower triangle
only. The kernel matrix is built once, as the strict lower triangle packed
column by column into a vector (one vectorised ``exp`` over half the
entries); the vector keeps ``K`` through the factorisation, so the residual
pass reads it there instead of evaluating any kernel entry again.
The stochastic-trace target (:mod:`._stochastic_numba`) shares the
factorisation (:func:`factor_rbf`).
"""

import math

import numba as nb
import numpy as np

from .._vector_exp import vector_exp
from ..linalg._nogil_lapack import (
    DLAUUM,
    DPOTRF,
    DPOTRI,
    DSYRK,
    DTRMM,
    DTRSV,
    DTRTRI,
    cholesky_lower_f,
    gram_lower_f,
    inverse_from_factor_f,
    solve_lower_vector_f,
)
from ._sparse_numba import cholesky_lower, solve_lower, solve_lower_t

__all__ = []

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@nb.njit(cache=True, nogil=True)
def rbf_log_pack(G, log_variance, packed):
    """Pack ``log k(x_i, x_j)``, ``i > j``, column by column into ``packed``.

    ``G`` holds the Gram product ``Xs Xs'`` in its lower triangle, as
    ``dsyrk`` leaves it, so its diagonal holds ``|xs_i|^2``. Only the strict
    lower triangle is kept: one vectorised ``exp`` then covers
    ``n (n - 1) / 2`` entries instead of ``n^2``, and the factorisation
    leaves ``K`` intact in ``packed`` for the residual pass. The squared
    distance ``|a|^2 + |b|^2 - 2 a'b`` is clipped at 0, which rounding can
    cross for near-duplicate inputs; the inner loop indexes by offset so
    that it compiles to vector instructions. Returns nothing.
    """
    n = G.shape[0]
    sq = np.empty(n)
    for i in range(n):
        sq[i] = G[i, i]
    start = 0
    for j in range(n):
        sj = sq[j]
        m = n - j - 1
        for t in range(m):
            i = j + 1 + t
            r2 = max(sq[i] + sj - 2.0 * G[i, j], 0.0)
            packed[start + t] = log_variance - 0.5 * r2
        start += m


@nb.njit(cache=True, nogil=True)
def fill_lower(B, packed, diagonal):
    """Lower triangle of ``B`` from :func:`rbf_log_pack`'s layout (no return).

    Each column of ``B``'s Fortran layout below the diagonal is one
    contiguous slice of ``packed``; ``dpotrf`` reads nothing else.
    """
    n = B.shape[0]
    start = 0
    for j in range(n):
        B[j, j] = diagonal
        m = n - j - 1
        # An explicit loop: a slice assignment compiles Numba's broadcasting
        # and shape-error machinery, 2.4 s of a first fit, for the same copy.
        for t in range(m):
            B[j + 1 + t, j] = packed[start + t]
        start += m


@nb.njit(cache=True, nogil=True)
def rbf_residual_packed(B, alpha, packed, variance):
    """Overwrite ``B`` with the full ``V = (a a' - K^-1) o K_f``.

    On entry the lower triangle of ``B`` holds ``K^-1`` and ``packed`` the
    strict lower triangle of ``K_f`` (:func:`rbf_log_pack`'s layout, after
    ``exp``); ``K_f`` is ``K`` without the noise on the diagonal, whose
    entries are ``variance``. The upper triangle of ``B`` may hold anything
    on entry. Returns ``(sum of V, trace of a a' - K^-1)``: the
    log-variance gradient and the noise gradient's trace, both before their
    factor of one half.
    """
    n = B.shape[0]
    total = 0.0
    trace = 0.0
    start = 0
    for j in range(n):
        aj = alpha[j]
        w = aj * aj - B[j, j]
        trace += w
        B[j, j] = w * variance
        m = n - j - 1
        column = 0.0
        # Contiguous reads and writes first, the strided mirror after: the
        # two loops together ran 20% quicker than one at n = 200.
        for t in range(m):
            i = j + 1 + t
            v = (alpha[i] * aj - B[i, j]) * packed[start + t]
            B[i, j] = v
            column += v
        for t in range(m):
            B[j, j + 1 + t] = B[j + 1 + t, j]
        start += m
        total += 2.0 * column + B[j, j]
    return total, trace


@nb.njit(cache=True, nogil=True)
def rbf_scaled_inputs(params, phi_defaults, param_index, X, Xs1):
    """The kernel's scales from ``params``, and ``Xs1 = [X / ell, 1]``.

    ``phi = [log variance, log length scales..., log white noise, log noise
    variance]`` starts from ``phi_defaults`` (``-inf`` for an absent term)
    and takes ``params`` at ``param_index``; one length scale serves every
    column when ``phi`` holds one. Fills ``Xs1`` (``n x (d + 1)``) and
    returns ``(variance, white noise, noise variance)``.
    """
    phi = phi_defaults.copy()
    for k in range(param_index.size):
        phi[param_index[k]] = params[k]
    n_phi = phi.size
    n, d = X.shape
    inv_ell = np.empty(d)
    for c in range(d):
        inv_ell[c] = math.exp(-phi[1 + c if n_phi > 4 else 1])
    for a in range(n):
        for c in range(d):
            Xs1[a, c] = X[a, c] * inv_ell[c]
        Xs1[a, d] = 1.0
    return math.exp(phi[0]), math.exp(phi[n_phi - 2]), math.exp(phi[n_phi - 1])


@nb.njit(cache=True, nogil=True)
def log_diagonal_sum(B):
    """``sum_i log B_ii``: half the log determinant from a Cholesky factor."""
    total = 0.0
    for i in range(B.shape[0]):
        total += math.log(B[i, i])
    return total


@nb.njit(cache=True, nogil=True)
def rbf_gradient(Xs1, P, sums, scales, param_index, n_phi, grad):
    """The gradient in ``params`` from the residual pass (no return).

    ``P = V [Xs, 1]`` (its last column is ``V 1``), ``sums = (sum of V,
    trace of a a' - K^-1)``, ``scales = (white noise, noise variance)`` and
    ``n_phi`` is the length of ``phi`` (:func:`rbf_scaled_inputs`). The
    length-scale entries follow the identity of the module notes in
    :mod:`skgp_bayes.targets.exact`, ``2 sum_a xs_ac (xs_ac (V 1)_a -
    (V Xs)_ac)``, summed over the columns for one shared length scale;
    ``grad[k]`` is half the ``phi`` gradient at ``param_index[k]``.
    """
    n = Xs1.shape[0]
    d = Xs1.shape[1] - 1
    per_dim = np.zeros(d)
    for a in range(n):
        r = P[a, d]
        for c in range(d):
            x = Xs1[a, c]
            per_dim[c] += x * (x * r - P[a, c])
    g_phi = np.zeros(n_phi)
    g_phi[0] = sums[0]
    if n_phi > 4:
        for c in range(d):
            g_phi[1 + c] = 2.0 * per_dim[c]
    else:
        g_phi[1] = 2.0 * per_dim.sum()
    g_phi[n_phi - 2] = scales[0] * sums[1]
    g_phi[n_phi - 1] = scales[1] * sums[1]
    for k in range(param_index.size):
        grad[k] = 0.5 * g_phi[param_index[k]]


# Up to this many rows the value and gradient run the unblocked loops of
# rbf_value_and_grad_small; beyond, rbf_value_and_grad_lapack's calls to
# LAPACK and BLAS. One thread, ARD (quiet), small against LAPACK: 2.7
# against 5.3 us at 8 rows, 6.0 against 5.9 at 16, 8.2 against 8.7 at 20,
# 10.4 against 8.9 at 24, 18.5 against 13.4 at 32 and 47.0 against 29.4 at
# 48 for d = 1; 5.7 against 5.9 at 16, 8.0 against 7.5 at 20 and 19.4
# against 14.4 at 32 for d = 8.
SMALL_N = 20


@nb.njit(cache=True, nogil=True)
def rbf_value_and_grad_small(params, phi_defaults, param_index, X, y):
    """The RBF target's ``(ok, value, grad)`` in one call, for small ``n``.

    The same computation as :func:`rbf_value_and_grad_lapack`
    (kernel packed by :func:`rbf_log_pack`, Cholesky factor, ``K^-1`` in the
    lower triangle, :func:`rbf_residual_packed`, :func:`rbf_gradient`) with
    the sparse target's unblocked factorisation and solves in place of
    LAPACK and BLAS. ``ok`` is False where
    ``K`` is not numerically positive definite (the general path then adds
    jitter and says so).
    """
    n, d = X.shape
    Xs1 = np.empty((n, d + 1))
    variance, white, noise = rbf_scaled_inputs(
        params, phi_defaults, param_index, X, Xs1
    )
    grad = np.empty(param_index.size)
    B = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for c in range(d):
                s += Xs1[i, c] * Xs1[j, c]
            B[i, j] = s
    packed = np.empty(n * (n - 1) // 2)
    rbf_log_pack(B, math.log(variance), packed)
    for t in range(packed.size):
        packed[t] = math.exp(packed[t])
    fill_lower(B, packed, variance + white + noise)
    if not cholesky_lower(B):
        return False, 0.0, grad
    alpha = solve_lower_t(B, solve_lower(B, y.reshape(n, 1)))[:, 0]
    fit = 0.0
    for i in range(n):
        fit += y[i] * alpha[i]
    value = -0.5 * fit - log_diagonal_sum(B) - n * HALF_LOG_2PI
    # K^-1 = L^-T L^-1, into the lower triangle
    inverse = solve_lower(B, np.eye(n))
    for j in range(n):
        for i in range(j, n):
            s = 0.0
            for k in range(i, n):
                s += inverse[k, i] * inverse[k, j]
            B[i, j] = s
    sums = rbf_residual_packed(B, alpha, packed, variance)
    P = B @ Xs1
    rbf_gradient(Xs1, P, sums, (white, noise), param_index, phi_defaults.size, grad)
    return True, value, grad


@nb.njit(cache=True, nogil=True)
def _finite_diagonal(B):
    # LAPACK passes a NaN through a factorisation without an error; the
    # general path then names the hyperparameters that made it.
    for i in range(B.shape[0]):
        if not math.isfinite(B[i, i]):
            return False
    return True


# Addresses of the BLAS and LAPACK routines of rbf_value_and_grad_lapack.
RBF_ROUTINES = (DSYRK, DPOTRF, DTRSV, (DTRTRI, DTRMM, DLAUUM, DPOTRI))
# Where the triangular inverse by halves stops recursing, and the largest
# n it is used at (module notes of skgp_bayes.targets.exact).
INVERSE_LEAF = 64
INVERSE_BY_HALVES_MAX_N = 1500


@nb.njit(cache=True, nogil=True)
def factor_rbf(params, phi_defaults, param_index, X, dsyrk, dpotrf):
    """``(ok, B, packed, Xs1, scales)``: the Cholesky factor of the RBF ``K``.

    ``B`` (Fortran order) holds the factor in its lower triangle, ``packed``
    the strict lower triangle of ``K`` without the noise (after ``exp``).
    ``ok`` is False where ``dpotrf`` fails or the factor is not finite
    (LAPACK passes a NaN through; the general path then names the
    hyperparameters that made it).
    """
    n, d = X.shape
    Xs1 = np.empty((n, d + 1))
    variance, white, noise = rbf_scaled_inputs(
        params, phi_defaults, param_index, X, Xs1
    )
    B = np.empty((n, n)).T  # Fortran order: LAPACK's own
    gram_lower_f(Xs1, d, B, dsyrk)
    packed = np.empty(n * (n - 1) // 2)
    rbf_log_pack(B, math.log(variance), packed)
    for t in range(packed.size):
        packed[t] = vector_exp(packed[t])
    fill_lower(B, packed, variance + white + noise)
    ok = cholesky_lower_f(B, dpotrf) == 0 and _finite_diagonal(B)
    return ok, B, packed, Xs1, (variance, white, noise)


@nb.njit(cache=True, nogil=True)
def rbf_value_lapack(params, phi_defaults, param_index, X, y, routines):
    """The RBF target's ``(ok, value)`` without the gradient, through LAPACK.

    The factor of :func:`rbf_value_and_grad_lapack` and one ``dtrsv``:
    ``y' K^-1 y = |L^-1 y|^2``, none of the inverse.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._exact_numba import (
    ...     RBF_ROUTINES, rbf_value_and_grad_lapack, rbf_value_lapack)
    >>> X = np.linspace(-1, 1, 40)[:, None]
    >>> args = (np.array([0.0, -1.0, -4.0]), np.array([0.0, 0.0, -np.inf, -4.0]),
    ...         np.array([0, 1, 3]), X, np.sin(3 * X[:, 0]), RBF_ROUTINES)
    >>> ok, value = rbf_value_lapack(*args)
    >>> ok, bool(np.isclose(value, rbf_value_and_grad_lapack(*args)[1]))
    (True, True)
    """
    dsyrk, dpotrf, dtrsv, _ = routines
    ok, B, _, _, _ = factor_rbf(params, phi_defaults, param_index, X, dsyrk, dpotrf)
    if not ok:
        return False, 0.0
    z = y.copy()
    solve_lower_vector_f(B, z, False, dtrsv)
    n = X.shape[0]
    return True, -0.5 * np.dot(z, z) - log_diagonal_sum(B) - n * HALF_LOG_2PI


@nb.njit(cache=True, nogil=True)
def rbf_value_and_grad_lapack(params, phi_defaults, param_index, X, y, routines):
    """The RBF target's ``(ok, value, grad)`` in one call, through LAPACK.

    The computation of the module notes of :mod:`skgp_bayes.targets.exact`:
    ``K`` from ``dsyrk`` and one vectorised exponential over its strict
    lower triangle (:func:`rbf_log_pack`), ``dpotrf``, two ``dtrsv``,
    ``K^-1`` by :func:`~skgp_bayes.linalg._nogil_lapack.inverse_from_factor_f`,
    :func:`rbf_residual_packed` and one product ``V [Xs, 1]``, on one
    Fortran-ordered buffer, without the interpreter between the calls
    (about 20 us a call) and without the GIL. ``routines`` is
    :data:`RBF_ROUTINES`; ``ok`` is False where ``K`` is not numerically
    positive definite or its factor not finite (a NaN parameter).

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._exact_numba import (
    ...     RBF_ROUTINES, rbf_value_and_grad_lapack, rbf_value_and_grad_small)
    >>> X = np.linspace(-1, 1, 40)[:, None]
    >>> y, phi = np.sin(3 * X[:, 0]), np.array([0.0, 0.0, -np.inf, -4.0])
    >>> args = (np.array([0.0, -1.0, -4.0]), phi, np.array([0, 1, 3]), X, y)
    >>> ok, value, grad = rbf_value_and_grad_lapack(*args, RBF_ROUTINES)
    >>> ok, _, small = rbf_value_and_grad_small(*args)
    >>> ok, bool(np.allclose(grad, small, rtol=1e-10))
    (True, True)
    """
    dsyrk, dpotrf, dtrsv, inverse_routines = routines
    n = X.shape[0]
    grad = np.empty(param_index.size)
    ok, B, packed, Xs1, scales = factor_rbf(
        params, phi_defaults, param_index, X, dsyrk, dpotrf
    )
    if not ok:
        return False, 0.0, grad
    variance, white, noise = scales
    alpha = y.copy()
    solve_lower_vector_f(B, alpha, False, dtrsv)
    solve_lower_vector_f(B, alpha, True, dtrsv)
    value = -0.5 * np.dot(y, alpha) - log_diagonal_sum(B) - n * HALF_LOG_2PI
    if not inverse_from_factor_f(
        B, INVERSE_LEAF, INVERSE_BY_HALVES_MAX_N, inverse_routines
    ):
        return False, 0.0, grad
    sums = rbf_residual_packed(B, alpha, packed, variance)
    P = B @ Xs1
    rbf_gradient(Xs1, P, sums, (white, noise), param_index, phi_defaults.size, grad)
    return True, value, grad


@nb.njit(cache=True, nogil=True)
def rbf_value_and_grad(params, phi_defaults, param_index, X, y, routines):
    """The RBF target's ``(ok, value, grad)``: the quicker path for ``n``.

    :func:`rbf_value_and_grad_small` up to :data:`SMALL_N` rows,
    :func:`rbf_value_and_grad_lapack` beyond.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._exact_numba import RBF_ROUTINES, rbf_value_and_grad
    >>> X = np.linspace(-1, 1, 10)[:, None]
    >>> ok, value, grad = rbf_value_and_grad(
    ...     np.array([0.0, -1.0, -4.0]), np.array([0.0, 0.0, -np.inf, -4.0]),
    ...     np.array([0, 1, 3]), X, np.sin(3 * X[:, 0]), RBF_ROUTINES)
    >>> ok, grad.shape
    (True, (3,))
    """
    if X.shape[0] <= SMALL_N:
        return rbf_value_and_grad_small(params, phi_defaults, param_index, X, y)
    return rbf_value_and_grad_lapack(params, phi_defaults, param_index, X, y, routines)
