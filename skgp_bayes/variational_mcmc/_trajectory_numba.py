"""A whole leapfrog trajectory of the chains' density in one compiled call.

The density the chains move on is a stack of layers: the affine
coordinates (:class:`~skgp_bayes.inference.affine.AffineTarget`), the sinh
maps of skewed hyperparameters
(:class:`~skgp_bayes.inference.marginal_maps.MarginalMapTarget`), the
bounds guard (``GuardedTarget``), the target's compiled value and gradient
and its prior. At the sizes the chains run at by default (tens to hundreds
of rows, at most 50 inducing inputs) each layer's interpreter work cost as
much as a fraction of the compiled evaluation it wraps: on the breast
cancer classifier (300 rows, 18 inducing inputs, d = 30) a leapfrog step
took 160 us, of which the compiled target took 114; on 48 rows and 7
inducing inputs 64 us, of which 14. Here the layers' arithmetic is the
same, in the same order, and the trajectory runs without the interpreter
lock, so chains on threads run side by side.

``kind`` selects the target: the Bernoulli-logit or softmax joint target
of ``(theta, v)`` (:func:`~skgp_bayes.targets._likelihood_numba.logit_joint`,
``softmax_joint``), the collapsed bound of ``[theta, log s2]``
(:func:`~skgp_bayes.targets._collapsed_numba.value_and_grad_params`) or
the exact marginal likelihood of up to a few hundred rows with an RBF kernel
(:func:`~skgp_bayes.targets._exact_numba.rbf_value_and_grad`).
``targets`` holds the four kinds' argument tuples, those of the kinds not
used empty placeholders of the same types, so that one compiled function
(cached on disk) serves them all. ``prior`` is ``(kind, a, b, const)`` of
:func:`~skgp_bayes.targets._sparse_numba.log_prior_theta`, all of length
zero when there is no prior.

A status :data:`GENERAL` hands the whole trajectory back to the
interpreted layers: the logit rule's small-variance hand-over, and an
exact kernel matrix that needs jitter, both of which the interpreted
target handles.
"""

import math

import numpy as np
from numba import njit

from ..inference._marginal_maps_numba import map_forward
from ..targets._collapsed_numba import value_and_grad_params
from ..targets._exact_numba import rbf_value_and_grad
from ..targets._likelihood_numba import (
    DONE,
    NOT_PSD,
    logit_joint,
    softmax_joint,
)
from ..targets._sparse_numba import log_prior_theta

__all__ = [
    "GENERAL",
    "KIND_COLLAPSED",
    "KIND_EXACT",
    "KIND_LOGIT",
    "KIND_SOFTMAX",
    "OK",
    "OUTSIDE",
    "chain_density",
    "trajectory",
]

KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT = 0, 1, 2, 3
# OUTSIDE: zero density (beyond the bounds, K(Z, Z) not positive definite,
# a value or gradient not finite); the trajectory fails as the interpreted
# leapfrog's does.
OK, OUTSIDE, GENERAL = 0, 1, 2


@njit(cache=True, nogil=True)
def _target_density(kind, x, n_hyper, targets, prior, grad):
    """``(status, log density)`` of the target at ``x``; gradient into ``grad``."""
    logit, softmax, collapsed, exact = targets
    if kind == KIND_EXACT:
        defaults, index, X, y, routines = exact
        ok, value, g = rbf_value_and_grad(x, defaults, index, X, y, routines)
        if not ok:  # K needs jitter: the interpreted target adds it
            return GENERAL, math.nan
        grad[:] = g
    elif kind == KIND_COLLAPSED:
        X, Z, y, defaults, index, base, jitter, lapack = collapsed
        ok, value, g = value_and_grad_params(
            X, Z, y, x, defaults, index, base, jitter, lapack
        )
        if not ok:
            return OUTSIDE, -math.inf
        grad[:] = g
    else:
        theta = x[:n_hyper].copy()
        if kind == KIND_LOGIT:
            X, Z, defaults, index, base, jitter, y, scale = logit[:8]
            nodes, weights, counts, limits, small_var, lapack, work = logit[8:]
            v = x[n_hyper:].copy().reshape((Z.shape[0], 1))
            status, value, g_theta, g_v = logit_joint(
                X, Z, theta, defaults, index, base, jitter, v, y, scale,
                nodes, weights, counts, limits, small_var, lapack, work,
            )  # fmt: skip
        else:
            X, Z, defaults, index, base, jitter, labels, scale = softmax[:8]
            eps, weights, lapack, work = softmax[8:]
            m = Z.shape[0]
            v = x[n_hyper:].copy().reshape((m, (x.size - n_hyper) // m))
            status, value, g_theta, g_v = softmax_joint(
                X, Z, theta, defaults, index, base, jitter, v, labels, scale,
                eps, weights, lapack, work,
            )  # fmt: skip
        if status == NOT_PSD:
            return OUTSIDE, -math.inf
        if status != DONE:
            return GENERAL, math.nan
        grad[:n_hyper] = g_theta
        grad[n_hyper:] = g_v
    if prior[0].size:
        prior_value, prior_grad = log_prior_theta(x[:n_hyper].copy(), *prior)
        value += prior_value
        grad[:n_hyper] += prior_grad
    if not math.isfinite(value):
        return OUTSIDE, -math.inf
    return OK, value


@njit(cache=True, nogil=True)
def chain_density(w, chain, kind, n_hyper, targets, prior, grad):
    """``(status, log density)`` of the chains' coordinates ``w``.

    ``chain`` is ``(shift, transform, transform', mu, sigma, skew, rate,
    lower, upper)``: ``x = shift + transform w``, the first ``mu.size``
    entries through their sinh maps, the first ``lower.size`` checked
    against their bounds; the gradient in ``w`` goes into ``grad``.
    """
    shift, transform, transform_t, mu, sigma, skew, rate, lower, upper = chain
    x = shift + np.dot(transform, w)
    k = mu.size
    log_jacobian = 0.0
    if k:
        mapped, slope, log_jacobian, d_log = map_forward(
            x[:k].copy(), mu, sigma, skew, rate
        )
        x[:k] = mapped
    for j in range(lower.size):
        if x[j] < lower[j] or x[j] > upper[j]:
            return OUTSIDE, -math.inf
    grad_x = np.empty(x.size)
    status, value = _target_density(kind, x, n_hyper, targets, prior, grad_x)
    if status != OK:
        return status, value
    if k:
        for j in range(k):
            grad_x[j] = grad_x[j] * slope[j] + d_log[j]
        value += log_jacobian
    grad[:] = np.dot(transform_t, grad_x)
    return OK, value


@njit(cache=True, nogil=True)
def trajectory(
    w, p, grad, step, inv_mass, n_steps, chain, kind, n_hyper, targets, prior,
    w_end, p_end, grad_end,
):  # fmt: skip
    """``n_steps`` leapfrog steps from ``(w, p)``; ``(status, log density)``.

    The integrator of :func:`skgp_bayes.inference.leapfrog.leapfrog`, step
    for step: two half kicks between positions fused into one full kick,
    a path that meets a position, value or gradient that is not finite
    failing with :data:`OUTSIDE`. With :data:`OK` the end goes into
    ``w_end``, ``p_end`` and ``grad_end``.
    """
    half = 0.5 * step
    drift = step * inv_mass
    pn = p + half * grad
    gn = grad.copy()
    wn = w.copy()
    value = math.nan
    for k in range(n_steps):
        if k:
            pn = pn + step * gn
        wn = wn + drift * pn
        if not math.isfinite(wn.sum()):
            return OUTSIDE, math.nan
        status, value = chain_density(wn, chain, kind, n_hyper, targets, prior, gn)
        if status == GENERAL:
            return GENERAL, math.nan
        if status != OK or not math.isfinite(gn.sum()):
            return OUTSIDE, math.nan
    pn = pn + half * gn
    w_end[:] = wn
    p_end[:] = pn
    grad_end[:] = gn
    return OK, value
