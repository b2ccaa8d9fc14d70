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

The target is one of four kinds: the Bernoulli-logit or softmax joint
target of ``(theta, v)`` (:func:`~skgp_bayes.targets._likelihood_numba.logit_joint`,
``softmax_joint``), the collapsed bound of ``[theta, log s2]``
(:func:`~skgp_bayes.targets._collapsed_numba.value_and_grad_params`) or
the exact marginal likelihood of up to a few hundred rows with an RBF kernel
(:func:`~skgp_bayes.targets._exact_numba.rbf_value_and_grad`), each with
its own entry point (:data:`TRAJECTORIES`) that takes only its kind's
argument tuple. ``prior`` is ``(kind, a, b, const)`` of
:func:`~skgp_bayes.targets._sparse_numba.log_prior_theta`, all of length
zero when there is no prior.

Why four entry points over one loop: a compiled function is compiled
with every function it can call, and the compiler optimises and lowers
that whole tree again at each level of calls above it. When one function
served all four kinds through a runtime ``kind``, a classifier's first
fit compiled the collapsed and exact targets it never uses, and every
target three times over (the density, the chain's layers, the
trajectory): on breast cancer, with an empty cache, the trajectory took
98 of the 168 s the first fit spent compiling, and takes 13 s now
(benchmarks/RESULTS.md, "The first fit after an installation"). Here the
layers are inlined (``inline="always"``) into each entry point with
``kind`` a constant, so the compiler drops the other kinds' branches
before typing them, and each entry point compiles its own target's tree
once.

A status :data:`GENERAL` hands the whole trajectory back to the
interpreted layers: the logit rule's small-variance hand-over, and an
exact kernel matrix that needs jitter, both of which the interpreted
target handles.
"""

import math

import numpy as np
from numba import njit

from ..inference._marginal_maps_numba import map_forward
from ..linalg._numba_ops import copy_vector
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
    "TRAJECTORIES",
]

KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT = 0, 1, 2, 3
# OUTSIDE: zero density (beyond the bounds, K(Z, Z) not positive definite,
# a value or gradient not finite); the trajectory fails as the interpreted
# leapfrog's does.
OK, OUTSIDE, GENERAL = 0, 1, 2


# ``kind`` must be a constant where these are inlined: the branches of the
# other kinds are then dropped before they are typed (see the module notes).
@njit(cache=True, nogil=True, inline="always")
def _target_density(kind, x, n_hyper, arguments, prior, grad):
    """``(status, log density)`` of the target at ``x``; gradient into ``grad``."""
    if kind == KIND_EXACT:
        defaults, index, X, y, routines = arguments
        ok, value, g = rbf_value_and_grad(x, defaults, index, X, y, routines)
        if not ok:  # K needs jitter: the interpreted target adds it
            return GENERAL, math.nan
        copy_vector(grad, g)
    elif kind == KIND_COLLAPSED:
        X, Z, y, defaults, index, base, jitter, lapack = arguments
        ok, value, g = value_and_grad_params(
            X, Z, y, x, defaults, index, base, jitter, lapack
        )
        if not ok:
            return OUTSIDE, -math.inf
        copy_vector(grad, g)
    else:
        theta = x[:n_hyper].copy()
        if kind == KIND_LOGIT:
            X, Z, defaults, index, base, jitter, y, scale = arguments[:8]
            nodes, weights, counts, limits, small_var, lapack, work = arguments[8:]
            v = x[n_hyper:].copy().reshape((Z.shape[0], 1))
            status, value, g_theta, g_v = logit_joint(
                X, Z, theta, defaults, index, base, jitter, v, y, scale,
                nodes, weights, counts, limits, small_var, lapack, work,
            )  # fmt: skip
        else:
            X, Z, defaults, index, base, jitter, labels, scale = arguments[:8]
            eps, weights, lapack, work = arguments[8:]
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
        copy_vector(grad[:n_hyper], g_theta)
        copy_vector(grad[n_hyper:], g_v.ravel())
    if prior[0].size:
        prior_value, prior_grad = log_prior_theta(x[:n_hyper].copy(), *prior)
        value += prior_value
        for j in range(n_hyper):
            grad[j] += prior_grad[j]
    if not math.isfinite(value):
        return OUTSIDE, -math.inf
    return OK, value


@njit(cache=True, nogil=True, inline="always")
def _chain_density(w, chain, kind, n_hyper, arguments, prior, grad):
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
        copy_vector(x[:k], mapped)
    for j in range(lower.size):
        if x[j] < lower[j] or x[j] > upper[j]:
            return OUTSIDE, -math.inf
    grad_x = np.empty(x.size)
    status, value = _target_density(kind, x, n_hyper, arguments, prior, grad_x)
    if status != OK:
        return status, value
    if k:
        for j in range(k):
            grad_x[j] = grad_x[j] * slope[j] + d_log[j]
        value += log_jacobian
    copy_vector(grad, np.dot(transform_t, grad_x))
    return OK, value


@njit(cache=True, nogil=True, inline="always")
def _trajectory(
    w, p, grad, step, inv_mass, n_steps, chain, kind, n_hyper, arguments, prior,
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
        status, value = _chain_density(wn, chain, kind, n_hyper, arguments, prior, gn)
        if status == GENERAL:
            return GENERAL, math.nan
        if status != OK or not math.isfinite(gn.sum()):
            return OUTSIDE, math.nan
    pn = pn + half * gn
    copy_vector(w_end, wn)
    copy_vector(p_end, pn)
    copy_vector(grad_end, gn)
    return OK, value


def _entry_point(kind):
    """The compiled trajectory of one kind, ``kind`` a constant in it.

    The closure's ``kind`` is part of the cache's key: the four entry
    points share this source and each keeps its own compiled code.
    """

    @njit(cache=True, nogil=True)
    def trajectory(
        w, p, grad, step, inv_mass, n_steps, chain, n_hyper, arguments, prior,
        w_end, p_end, grad_end,
    ):  # fmt: skip
        return _trajectory(
            w, p, grad, step, inv_mass, n_steps, chain, kind, n_hyper, arguments,
            prior, w_end, p_end, grad_end,
        )  # fmt: skip

    return trajectory


# Indexed by kind. Each is ``(w, p, grad, step, inv_mass, n_steps, chain,
# n_hyper, arguments, prior, w_end, p_end, grad_end) -> (status, log
# density)``: ``n_steps`` leapfrog steps of the chains' density (see
# ``_trajectory``), ``arguments`` the kind's tuple of
# :func:`~skgp_bayes.targets.compiled_forms.compiled_form`.
TRAJECTORIES = tuple(
    _entry_point(kind)
    for kind in (KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT)
)
