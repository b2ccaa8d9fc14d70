"""The binary logit Laplace marginal and its gradient in one compiled call.

What :class:`~skgp_bayes.targets.laplace.BinaryLaplaceProblem` computes
(Rasmussen and Williams, 2006, algorithms 3.1 and 5.1) for the
Bernoulli-logit likelihood and the whitened target's ``[c *] RBF [+ White]``
Gram matrix, the surrogate the Stein classifier maximises for its starting
hyperparameters, without returning to Python: the Gram matrix
(:func:`~skgp_bayes.targets._whitened_numba.rbf_gram_noiseless` and its
jitter), Newton's iterations from the warm start, and the gradient.

Two changes of arithmetic against the interpreted version, both exact in
exact arithmetic:

* ``diag(Sigma)``, ``Sigma = (K^-1 + W)^-1``, enters the gradient only
  through ``s2 = Sigma_ii f'''_i / 2``. With ``B = I + W^1/2 K W^1/2``,
  ``Sigma = W^-1/2 (I - B^-1) W^-1/2``, and the logit's third derivative
  is ``f''' = -W (1 - 2 sigma(f))``, so ``s2_i = -(1 - B^-1_ii)(1 - 2
  sigma(f_i)) / 2``: no triangular solve with ``n`` right-hand sides
  (1.4 ms of an 11 ms evaluation at n = 300), and no division by ``W``.
  ``B^-1`` is needed for ``R = W^1/2 B^-1 W^1/2`` anyway. Where ``1 -
  B^-1_ii`` cancels (``W_i`` small), its absolute error is a few ulps,
  which is the absolute error of ``s2_i`` too.
* ``B^-1`` is taken from the factor by
  :func:`~skgp_bayes.linalg._nogil_lapack.inverse_from_factor_f` (the exact
  target's inverse by halves), on the factor's own buffer.

The Newton iterations are :func:`~skgp_bayes.targets.laplace._newton_mode`'s,
step for step: the same proposal, backtracking and stopping rule.
"""

import math

import numpy as np
from numba import njit

from .._vector_exp import vector_exp, vector_log1p
from ..linalg._nogil_lapack import (
    DLAUUM,
    DPOTRF,
    DPOTRI,
    DPOTRS,
    DTRMM,
    DTRTRI,
    cholesky_lower_f,
    cholesky_solve_f,
    inverse_from_factor_f,
)
from ..linalg._numba_ops import TINY, copy_vector
from ._exact_numba import INVERSE_BY_HALVES_MAX_N, INVERSE_LEAF
from ._sparse_numba import kernel_scales, scaled
from ._whitened_numba import contract_rbf, jittered_gram, rbf_gram_noiseless

__all__ = [
    "FAILED",
    "LAPLACE_ROUTINES",
    "NEWTON_MAX_ITER",
    "NEWTON_TOL",
    "OK",
    "laplace_logit",
    "laplace_logit_draw",
]

# Newton iterations for a Laplace mode; logistic and probit problems converge
# quadratically in well under 20 from a warm start.
NEWTON_MAX_ITER = 50
NEWTON_TOL = 1e-9
OK, FAILED = 0, 1
LAPLACE_ROUTINES = (DPOTRF, DPOTRS, (DTRTRI, DTRMM, DLAUUM, DPOTRI))


@njit(cache=True, nogil=True)
def _sigmoid(f):
    if f >= 0.0:
        return 1.0 / (1.0 + vector_exp(-f))
    e = vector_exp(f)
    return e / (1.0 + e)


@njit(cache=True, nogil=True)
def _psi(a, f, y):
    """Newton's objective ``-a'f / 2 + sum_i log sigmoid(s_i f_i)``."""
    value = 0.0
    for i in range(f.size):
        z = (2.0 * y[i] - 1.0) * f[i]
        value += min(z, 0.0) - vector_log1p(vector_exp(-abs(z))) - 0.5 * a[i] * f[i]
    return value


@njit(cache=True, nogil=True)
def _curvature(K, f, W, sW, B, dpotrf):
    """``W``, its root and the factor of ``B = I + W^1/2 K W^1/2`` (in ``B``).

    ``B``'s lower triangle (Fortran order) is overwritten; tiny entries are
    flushed as the interpreted version does. False where the factor fails
    (only for a non-finite ``f``: ``B``'s eigenvalues are at least 1).
    """
    n = f.size
    for i in range(n):
        s = _sigmoid(f[i])
        W[i] = max(s * (1.0 - s), 0.0)
        sW[i] = math.sqrt(W[i])
    for b in range(n):
        for a in range(b, n):
            v = sW[a] * K[a, b] * sW[b]
            B[a, b] = 0.0 if abs(v) < TINY else v
        B[b, b] += 1.0
    ok = cholesky_lower_f(B, dpotrf) == 0
    for i in range(n):
        ok = ok and math.isfinite(B[i, i])
    return ok


@njit(cache=True, nogil=True)
def _newton_step(K, f, a, y, W, sW, B, dpotrs):
    """The full Newton step's new ``a``: ``b - W^1/2 B^-1 W^1/2 K b``."""
    n = f.size
    b = np.empty(n)
    for i in range(n):
        s = 2.0 * y[i] - 1.0
        b[i] = W[i] * f[i] + s * _sigmoid(-s * f[i])
    Kb = K @ b
    rhs = np.empty((1, n)).T
    for i in range(n):
        rhs[i, 0] = sW[i] * Kb[i]
    cholesky_solve_f(B, rhs, dpotrs)
    out = np.empty(n)
    for i in range(n):
        out[i] = b[i] - sW[i] * rhs[i, 0]
    return out


@njit(cache=True, nogil=True)
def _newton_mode(K, y, a0, W, sW, B, dpotrf, dpotrs):
    """``(ok, a, f, objective)`` with ``W``, ``sW`` and ``B``'s factor at the mode.

    Newton's proposal is taken unless it would move ``f`` by at most
    ``NEWTON_TOL (1 + max |f|)``: the curvature then on hand is the mode's.
    A backtracked step whose objective gain is negligible ends the
    iterations after the curvature at its end.
    """
    n = y.size
    a = a0.copy()
    f = K @ a
    obj = _psi(a, f, y)
    stalled = False
    for it in range(NEWTON_MAX_ITER + 1):
        if not _curvature(K, f, W, sW, B, dpotrf):
            return False, a, f, obj
        if stalled or it == NEWTON_MAX_ITER:
            break
        a_new = _newton_step(K, f, a, y, W, sW, B, dpotrs)
        step = a_new - a
        f_new = K @ a_new
        moved = 0.0
        top = 0.0
        for i in range(n):
            moved = max(moved, abs(f_new[i] - f[i]))
            top = max(top, abs(f[i]))
        if moved <= NEWTON_TOL * (1.0 + top):
            break
        t = 1.0
        a_try, f_try = a_new, f_new
        obj_try = _psi(a_try, f_try, y)
        while not (obj_try >= obj - 1e-12 * abs(obj) or t < 1e-6):
            t *= 0.5
            a_try = a + t * step
            f_try = K @ a_try
            obj_try = _psi(a_try, f_try, y)
        stalled = abs(obj_try - obj) <= 1e-13 * (1.0 + abs(obj_try))
        a, f, obj = a_try, f_try, obj_try
    return True, a, f, obj


@njit(cache=True, nogil=True)
def _marginal_gradient(K0, K, Xs, a, f, y, W, sW, B, noise, ard, jitter, inverse,
                       g_phi):  # fmt: skip
    """Algorithm 5.1's gradient in ``phi`` into ``g_phi`` (module notes).

    ``B`` holds the factor of ``I + W^1/2 K W^1/2`` and is overwritten with
    its inverse; False where that inverse fails.
    """
    n = f.size
    if not inverse_from_factor_f(B, INVERSE_LEAF, INVERSE_BY_HALVES_MAX_N, inverse):
        return False
    # R = W^1/2 B^-1 W^1/2 from B^-1's lower triangle, mirrored.
    R = np.empty((n, n))
    s2 = np.empty(n)
    g = np.empty(n)
    for i in range(n):
        for j in range(i + 1):
            r = sW[i] * B[i, j] * sW[j]
            R[i, j] = r
            R[j, i] = r
        s = _sigmoid(f[i])
        s2[i] = -0.5 * (1.0 - B[i, i]) * (1.0 - 2.0 * s)
        sign = 2.0 * y[i] - 1.0
        g[i] = sign * _sigmoid(-sign * f[i])
    u = s2 - R @ (K @ s2)
    # dF/dK = a a' / 2 - R / 2 + (u g' + g u') / 2, with the jitter's weight
    Wt = np.empty((n, n))
    trace = 0.0
    for i in range(n):
        for j in range(n):
            Wt[i, j] = 0.5 * (a[i] * a[j] - R[i, j] + u[i] * g[j] + g[i] * u[j])
        trace += Wt[i, i]
    for i in range(n):
        Wt[i, i] += jitter / n * trace
    contract_rbf(Wt, K0, Xs, noise, ard, g_phi)
    return True


@njit(cache=True, nogil=True)
def laplace_logit(
    theta, a0, X, phi_defaults, theta_index, jitter, y, with_grad, routines
):  # fmt: skip
    """``(status, log marginal, a, grad)`` of the binary logit Laplace problem.

    Parameters
    ----------
    theta : ndarray of shape (p,)
        The kernel's log hyperparameters.
    a0 : ndarray of shape (n,)
        Newton's warm start (``f = K a``); zeros for none.
    X : ndarray of shape (n, d)
    phi_defaults, theta_index
        The kernel spec's layout (see
        :func:`~skgp_bayes.targets._sparse_numba.kernel_scales`).
    jitter : float
        The whitened target's relative jitter.
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    with_grad : bool
        Whether to compute the gradient (else ``grad`` is zeros).
    routines : tuple
        :data:`LAPLACE_ROUTINES`.

    Returns
    -------
    status : int
        :data:`OK`, or :data:`FAILED` where a factorisation failed (a
        non-finite ``theta``); the interpreted problem then raises.
    value : float
        The Laplace-approximate log marginal likelihood.
    a : ndarray of shape (n,)
        The mode's ``a`` (``f = K a``), the next warm start.
    grad : ndarray of shape (p,)

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._laplace_numba import (
    ...     LAPLACE_ROUTINES, OK, laplace_logit)
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> status, value, a, grad = laplace_logit(
    ...     np.zeros(2), np.zeros(6), X, np.array([0.0, 0.0, -np.inf]),
    ...     np.array([0, 1]), 1e-6, y, True, LAPLACE_ROUTINES)
    >>> status == OK, grad.shape, bool(value < 0)
    (True, (2,), True)
    """
    dpotrf, dpotrs, inverse = routines
    n, d = X.shape
    p = theta_index.size
    grad = np.zeros(p)
    variance, noise, inv_ell, ard = kernel_scales(theta, phi_defaults, theta_index, d)
    Xs = scaled(X, inv_ell)
    K0 = rbf_gram_noiseless(Xs, variance)
    K = jittered_gram(K0, noise, jitter)
    W = np.empty(n)
    sW = np.empty(n)
    B = np.empty((n, n)).T  # Fortran order: LAPACK's own
    ok, a, f, obj = _newton_mode(K, y, a0, W, sW, B, dpotrf, dpotrs)
    if not ok:
        return FAILED, 0.0, a, grad
    log_det = 0.0
    for i in range(n):
        log_det += math.log(B[i, i])
    value = obj - log_det
    if not with_grad or p == 0:
        return OK, value, a, grad
    g_phi = np.empty(phi_defaults.size)
    if not _marginal_gradient(K0, K, Xs, a, f, y, W, sW, B, noise, ard, jitter,
                              inverse, g_phi):  # fmt: skip
        return FAILED, value, a, grad
    for k in range(p):
        grad[k] = g_phi[theta_index[k]]
    return OK, value, a, grad


@njit(cache=True, nogil=True)
def _lower_transpose_times(L, x):
    """``L' x`` for the lower triangle of ``L`` (Fortran order)."""
    n = x.size
    out = np.zeros(n)
    for i in range(n):
        acc = 0.0
        for k in range(i, n):
            acc += L[k, i] * x[k]
        out[i] = acc
    return out


@njit(cache=True, nogil=True)
def laplace_logit_draw(
    theta, a0, f0, X, phi_defaults, theta_index, jitter, y, noise, routines
):  # fmt: skip
    """``(status, nu, nu_hat, f, L, W)``: a draw of the whitened latents.

    What :func:`~skgp_bayes.targets.laplace.binary_laplace_draw` computes,
    in one call without the interpreter lock: the Gram matrix as in
    :func:`laplace_logit`, its factor ``L``, Newton's mode from ``a0`` or,
    where ``f0`` has ``n`` entries, from ``a0 = K^-1 f0``, and ``nu = nu_hat
    + r - L' W^1/2 B^-1 W^1/2 L r`` with ``r = z1 + L' W^1/2 z2``, ``(z1,
    z2) = noise``: a draw from ``N(nu_hat, (I + L'WL)^-1)``.

    Returns
    -------
    status : int
        :data:`OK`, or :data:`FAILED` where a factorisation failed.
    nu, nu_hat, f : ndarray of shape (n,)
        The draw, the mode in whitened coordinates and in ``f``.
    L : ndarray of shape (n, n)
        The Gram matrix's lower factor, its strict upper triangle zero.
    W : ndarray of shape (n,)
        The likelihood's curvature at the mode.

    Examples
    --------
    >>> import numpy as np
    >>> from skgp_bayes.targets._laplace_numba import (
    ...     LAPLACE_ROUTINES, OK, laplace_logit_draw)
    >>> X = np.linspace(-2, 2, 6)[:, None]
    >>> y = (X[:, 0] > 0).astype(float)
    >>> status, nu, nu_hat, f, L, W = laplace_logit_draw(
    ...     np.zeros(2), np.zeros(6), np.zeros(0), X,
    ...     np.array([0.0, 0.0, -np.inf]), np.array([0, 1]), 1e-6, y,
    ...     np.zeros((2, 6)), LAPLACE_ROUTINES)
    >>> status == OK, bool(np.allclose(nu, nu_hat)), bool(np.allclose(L @ nu, f))
    (True, True, True)
    """
    dpotrf, dpotrs, _ = routines
    n, d = X.shape
    variance, noise_var, inv_ell, ard = kernel_scales(
        theta, phi_defaults, theta_index, d
    )
    K = jittered_gram(rbf_gram_noiseless(scaled(X, inv_ell), variance), noise_var,
                      jitter)  # fmt: skip
    L = np.zeros((n, n)).T  # Fortran order: LAPACK's own
    for b in range(n):
        for a in range(b, n):
            L[a, b] = K[a, b]
    empty = np.zeros(n)
    W, sW = np.empty(n), np.empty(n)
    if cholesky_lower_f(L, dpotrf) != 0:
        return FAILED, empty, empty, empty, L, W
    start = a0.copy()
    if f0.size == n:
        rhs = np.empty((1, n)).T
        copy_vector(rhs[:, 0], f0)
        cholesky_solve_f(L, rhs, dpotrs)
        start = rhs[:, 0].copy()
    B = np.empty((n, n)).T
    ok, a, f, _ = _newton_mode(K, y, start, W, sW, B, dpotrf, dpotrs)
    if not ok:
        return FAILED, empty, empty, empty, L, W
    nu_hat = _lower_transpose_times(L, a)  # L^-1 f with f = K a = L L' a
    r = noise[0] + _lower_transpose_times(L, sW * noise[1])
    rhs = np.zeros((1, n)).T
    for i in range(n):
        for k in range(i, n):
            rhs[k, 0] += L[k, i] * r[i]
    for k in range(n):
        rhs[k, 0] *= sW[k]
    cholesky_solve_f(B, rhs, dpotrs)
    nu = nu_hat + r - _lower_transpose_times(L, sW * rhs[:, 0])
    return OK, nu, nu_hat, f, L, W
