"""Compiled value and gradient of the collapsed bound, fast-path kernels.

The same algebra as :class:`~skgp_bayes.targets.collapsed.CollapsedSparseTarget`
(see its module notes) in one call, built from the pieces of
:mod:`skgp_bayes.targets._sparse_numba`. HMC on the hyperparameters calls it
tens of thousands of times on problems of tens to hundreds of points, where
the per-call overhead of some thirty NumPy and LAPACK calls, not the
arithmetic, would set the cost. Serial on purpose, for the same reason.
No fastmath: the result agrees with the NumPy path to round-off.
"""

import math

import numpy as np
from numba import njit

from ..linalg._numba_ops import copy_vector
from ._sparse_numba import (
    cross_contract,
    gram_contract,
    inducing_projection,
    kernel_scales,
    lower_congruence,
    lower_factor,
    lower_solve,
    scaled,
)

__all__ = ["value_and_grad", "value_and_grad_inducing", "value_and_grad_params"]

_LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True, nogil=True)
def value_and_grad(
    X, Z, y, inv_ell, variance, noise, base, ard, jitter, log_s2, lapack, g_inputs
):
    """Collapsed bound and its gradient in ``[phi, log s2]``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Z : ndarray of shape (m, d)
    y : ndarray of shape (n,)
    inv_ell : ndarray of shape (d,)
    variance, noise : float
        Kernel variance and WhiteKernel noise (0 without one).
    base : int
        Radial function code of :mod:`skgp_bayes.kernels._lowering`.
    ard : bool
    jitter : float
        Relative diagonal jitter of ``K(Z, Z)``.
    log_s2 : float
        Log noise variance of the likelihood.
    lapack : tuple of int
        :data:`skgp_bayes.targets._sparse_numba.LAPACK`.
    g_inputs : ndarray of shape (m, d) or (0, 0)
        Zeros of ``Z``'s shape to receive the gradient in ``Z``, or empty.

    Returns
    -------
    ok : bool
        False when ``K(Z, Z)`` or ``I + A A' / s2`` is not positive
        definite (the other outputs are then meaningless).
    value : float
    g_phi : ndarray of shape (n_ls + 2,)
        Gradient in ``[log variance, log ell..., log noise]``.
    g_s2 : float
        Gradient in ``log s2``.
    """
    n = X.shape[0]
    n_ls = inv_ell.size if ard else 1
    g = np.zeros(n_ls + 2)
    Xs = scaled(X, inv_ell)
    Zs = scaled(Z, inv_ell)
    ok, Kuu, R, Kuf, A, gamma, free = inducing_projection(
        Xs, Zs, variance, noise, base, jitter, lapack, np.empty(0)
    )
    if not ok:
        return False, 0.0, g, 0.0
    s2 = math.exp(log_s2)
    AT = np.ascontiguousarray(A.T)
    G = A @ AT
    sum_gamma = gamma.sum()
    ok, value, Lp, c = _bound(G, A, y, sum_gamma, log_s2, lapack)
    if not ok:
        return False, 0.0, g, 0.0
    S, mean, resid, g_s2 = _optimal_q(Lp, c, AT, y, sum_gamma, s2, lapack)
    W, Kufbar = _kernel_weights(R, A, G, S, mean, resid, free, s2, jitter, lapack)
    gram_contract(Zs, Kuu, W, variance, noise, base, ard, g, g_inputs)
    cross_contract(Zs, Xs, Kuf, Kufbar, variance, base, ard, g, g_inputs)
    if g_inputs.shape[0] == Z.shape[0]:
        for i in range(g_inputs.shape[0]):
            for c in range(Z.shape[1]):
                g_inputs[i, c] *= inv_ell[c]
    n_free = 0
    for i in range(n):
        if free[i]:
            n_free += 1
    total = -0.5 * n_free / s2
    g[0] += variance * total
    g[n_ls + 1] += noise * total
    return True, value, g, g_s2


@njit(cache=True, nogil=True)
def _bound(G, A, y, sum_gamma, log_s2, lapack):
    """The collapsed bound from ``G = A A'``, with the factor ``Lp`` of
    ``I + G / s2`` and ``c = Lp^-1 A y / s2`` for the optimal ``q(v)``;
    ``ok`` is False when ``Lp`` does not exist."""
    n = y.size
    m = G.shape[0]
    s2 = math.exp(log_s2)
    P = G / s2
    for i in range(m):
        P[i, i] += 1.0
    ok = lower_factor(P, lapack)
    Lp = P
    if not ok:
        return False, 0.0, Lp, np.empty((m, 1))
    b = np.empty((m, 1))
    Ay = A @ y
    for j in range(m):
        b[j, 0] = Ay[j] / s2
    c = lower_solve(Lp, b, False, lapack)
    yy = 0.0
    for i in range(n):
        yy += y[i] * y[i]
    cc = 0.0
    logdet = 0.0
    for j in range(m):
        cc += c[j, 0] * c[j, 0]
        logdet += math.log(Lp[j, j])
    value = -0.5 * n * (_LOG_2PI + log_s2) - 0.5 * (yy + sum_gamma) / s2
    value += 0.5 * cc - logdet
    return True, value, Lp, c


@njit(cache=True, nogil=True)
def _optimal_q(Lp, c, AT, y, sum_gamma, s2, lapack):
    """The optimal ``q(v) = N(mean, S)``, ``S = Lp^-T Lp^-1``, the residual
    ``y - A' mean`` and the gradient of the bound in ``log s2``."""
    n = y.size
    m = Lp.shape[0]
    Linv = lower_solve(Lp, np.eye(m), False, lapack)
    S = np.ascontiguousarray(Linv.T) @ Linv
    mean = lower_solve(Lp, c, True, lapack)
    resid = y - AT @ np.ascontiguousarray(mean[:, 0])
    trace_S = 0.0
    for j in range(m):
        trace_S += S[j, j]
    g_s2 = -0.5 * n + (resid @ resid + sum_gamma + s2 * (m - trace_S)) / (2.0 * s2)
    return S, mean, resid, g_s2


@njit(cache=True, nogil=True)
def _kernel_weights(R, A, G, S, mean, resid, free, s2, jitter, lapack):
    """Gradient weights on ``K(Z, Z)`` and ``K(Z, X)`` (see
    ``CollapsedSparseTarget._kernel_weights``); the jitter's share is in
    the first."""
    m, n = A.shape
    rhs = np.empty((m, m + 1))
    M = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            e = 1.0 if i == j else 0.0
            rhs[i, j] = e - S[i, j]
            M[i, j] = mean[i, 0] * mean[j, 0] + G[i, j] / s2 + S[i, j] - e
        rhs[i, m] = mean[i, 0]
    left = lower_solve(R, rhs, True, lapack)
    Kufbar = np.ascontiguousarray(left[:, :m]) @ A
    for j in range(m):
        w = left[j, m]
        for i in range(n):
            Kufbar[j, i] = (Kufbar[j, i] + w * resid[i]) / s2
    clamped = np.flatnonzero(~free)
    if clamped.size:
        Ac = np.ascontiguousarray(A[:, clamped])
        corr = lower_solve(R, Ac, True, lapack)
        for k in range(clamped.size):
            for j in range(m):
                Kufbar[j, clamped[k]] -= corr[j, k] / s2
        M -= Ac @ np.ascontiguousarray(Ac.T) / s2
    # M is symmetric, so -sym(R^-T M R^-1) / 2 is one congruence.
    lower_congruence(R, M, lapack)
    W = M
    trace = 0.0
    for i in range(m):
        for j in range(m):
            W[i, j] *= -0.5
        trace += W[i, i]
    for i in range(m):
        W[i, i] += jitter / m * trace
    return W, Kufbar


@njit(cache=True, nogil=True)
def value_and_grad_params(
    X, Z, y, params, phi_defaults, theta_index, base, jitter, lapack
):
    """:func:`value_and_grad` from the parameter vector ``[theta, log s2]``.

    ``phi_defaults`` and ``theta_index`` are the kernel spec's (see
    :mod:`skgp_bayes.kernels._lowering`): ``phi[theta_index] = theta``,
    ``phi = [log variance, log ell..., log noise]`` with ``-inf`` for an
    absent noise. Mapping ``theta`` to the kernel's scales and the gradient
    back in the compiled call saves HMC a dozen NumPy calls per gradient
    on problems of tens of points. Returns ``(ok, value, grad)`` with
    ``grad`` of shape ``(len(theta_index) + 1,)``.
    """
    return _value_and_grad_at(
        X, Z, y, params, phi_defaults, theta_index, base, jitter, lapack, False
    )


@njit(cache=True, nogil=True)
def value_and_grad_inducing(
    X, Z, y, params, phi_defaults, theta_index, base, jitter, lapack
):
    """:func:`value_and_grad_params` with the inducing inputs learned too.

    ``params`` is ``[theta, log s2, Z.ravel()]`` and ``Z`` the same inputs
    as a C-ordered ``(m, d)`` array; the gradient has ``params``' length.
    The gradient in ``Z`` falls out of the contractions that the length
    scales need (:func:`~._sparse_numba.gram_contract`,
    :func:`~._sparse_numba.cross_contract`); through the adapter it cost
    two more passes over the kernel and a dozen NumPy calls, about half of
    an evaluation at 48 inducing inputs in five dimensions.
    """
    return _value_and_grad_at(
        X, Z, y, params, phi_defaults, theta_index, base, jitter, lapack, True
    )


# Inlined into its two entry points: as a function of its own, it and the
# whole bound under it were compiled once more for each of them (13 s of a
# first fit's compilation, with an empty cache).
@njit(cache=True, nogil=True, inline="always")
def _value_and_grad_at(
    X, Z, y, params, phi_defaults, theta_index, base, jitter, lapack, inducing
):
    n_theta = theta_index.size
    variance, noise, inv_ell, ard = kernel_scales(
        params, phi_defaults, theta_index, X.shape[1]
    )
    g_inputs = np.zeros(Z.shape) if inducing else np.zeros((0, 0))
    ok, value, g_phi, g_s2 = value_and_grad(
        X, Z, y, inv_ell, variance, noise, base, ard, jitter, params[n_theta], lapack,
        g_inputs,
    )  # fmt: skip
    grad = np.empty(n_theta + 1 + g_inputs.size)
    for k in range(n_theta):
        grad[k] = g_phi[theta_index[k]]
    grad[n_theta] = g_s2
    copy_vector(grad[n_theta + 1 :], g_inputs.ravel())
    return ok, value, grad
