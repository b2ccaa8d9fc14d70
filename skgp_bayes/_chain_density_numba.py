"""The chains' log density as one compiled function, for compiled samplers.

The density a chain moves on is a stack of layers: affine coordinates
``x = shift + transform w``, the sinh maps of skewed hyperparameters
(:mod:`skgp_bayes.inference.marginal_maps`), the log distances from their
bounds of hyperparameters near one
(:class:`~skgp_bayes.variational_mcmc._bounds.BoundCoordinates`), a box
of bounds, the target's compiled value and gradient and its prior.
:func:`chain_density` is that stack as one function that a compiled
sampler inlines: the variational MCMC chains' leapfrog trajectories
(:mod:`skgp_bayes.variational_mcmc._trajectory_numba`) and the Langevin
chains' Metropolis-adjusted blocks (:mod:`skgp_bayes._mala_numba`). A
caller with no affine coordinates passes a zero shift and the identity,
with no maps, no log distances or no bounds empty arrays.

The target is one of four kinds: the Bernoulli-logit or softmax joint
target of ``(theta, v)`` (:func:`~skgp_bayes.targets._likelihood_numba.logit_joint`,
``softmax_joint``), the collapsed bound of ``[theta, log s2]``
(:func:`~skgp_bayes.targets._collapsed_numba.value_and_grad_params`) or
the exact marginal likelihood with an RBF kernel
(:func:`~skgp_bayes.targets._exact_numba.rbf_value_and_grad`), with the
arguments of :func:`~skgp_bayes.targets.compiled_forms.compiled_form`.
``prior`` is ``(kind, a, b, const)`` of
:func:`~skgp_bayes.targets._sparse_numba.log_prior_theta`, all of length
zero when there is no prior. ``kind`` must be a constant where these
functions are inlined, so that the compiler drops the other kinds'
branches before typing them (see the notes of
:mod:`skgp_bayes.variational_mcmc._trajectory_numba`).

A status :data:`GENERAL` hands the evaluation back to the interpreted
layers: the logit rule's small-variance hand-over, and an exact kernel
matrix that needs jitter, both of which the interpreted target handles.
"""

import math

import numpy as np
from numba import njit

from .inference._marginal_maps_numba import map_forward
from .linalg._numba_ops import copy_vector
from .targets._collapsed_numba import value_and_grad_params
from .targets._exact_numba import rbf_value_and_grad
from .targets._likelihood_numba import (
    DONE,
    NOT_PSD,
    logit_joint,
    softmax_joint,
)
from .targets._sparse_numba import log_prior_theta

__all__ = [
    "GENERAL",
    "KIND_COLLAPSED",
    "KIND_EXACT",
    "KIND_LOGIT",
    "KIND_SOFTMAX",
    "NO_LOG_DISTANCES",
    "OK",
    "OUTSIDE",
    "chain_density",
    "target_density",
]

KIND_LOGIT, KIND_SOFTMAX, KIND_COLLAPSED, KIND_EXACT = 0, 1, 2, 3
# The chain's ``(held, free, wall, sign)`` where no coordinate is a log
# distance from a bound (see chain_density).
NO_LOG_DISTANCES = (
    np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0),
)  # fmt: skip
# OUTSIDE: zero density (beyond the bounds, K(Z, Z) not positive definite,
# a value or gradient not finite); the trajectory fails as the interpreted
# leapfrog's does.
OK, OUTSIDE, GENERAL = 0, 1, 2


# ``kind`` must be a constant where these are inlined: the branches of the
# other kinds are then dropped before they are typed (see the module notes).
@njit(cache=True, nogil=True, inline="always")
def target_density(kind, x, n_hyper, arguments, prior, grad):
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
            eps, weights, on_simplex, lapack, work = arguments[8:]
            m = Z.shape[0]
            v = x[n_hyper:].copy().reshape((m, (x.size - n_hyper) // m))
            status, value, g_theta, g_v = softmax_joint(
                X, Z, theta, defaults, index, base, jitter, v, labels, scale,
                eps, weights, on_simplex, lapack, work,
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
def chain_density(w, chain, kind, n_hyper, arguments, prior, grad):
    """``(status, log density)`` of the chains' coordinates ``w``.

    ``chain`` is ``(shift, transform, transform', mu, sigma, skew, rate,
    lower, upper, held, free, wall, sign)``: ``z = shift + transform w``,
    the first ``mu.size`` entries through their sinh maps; with ``free``
    not empty, ``x`` is ``held`` with entry ``free[i]`` set to ``z[i]``, or
    to ``wall[i] + sign[i] exp(z[i])`` where ``sign[i]`` is not zero (the
    Jacobian ``z[i]`` added), else ``x = z``; the first ``lower.size``
    entries of ``x`` are checked against their bounds. The gradient in
    ``w`` goes into ``grad``. The arithmetic is the interpreted layers',
    operation for operation, so that both give the same trajectories.
    """
    shift, transform, transform_t, mu, sigma, skew, rate, lower, upper = chain[:9]
    held, free, wall, sign = chain[9:]
    z = shift + np.dot(transform, w)
    k = mu.size
    log_jacobian = 0.0
    if k:
        mapped, slope, log_jacobian, d_log = map_forward(
            z[:k].copy(), mu, sigma, skew, rate
        )
        copy_vector(z[:k], mapped)
    x = z
    if free.size:
        x = held.copy()
        for i in range(free.size):
            if sign[i] != 0.0:
                x[free[i]] = wall[i] + sign[i] * math.exp(z[i])
            else:
                x[free[i]] = z[i]
    for j in range(lower.size):
        if x[j] < lower[j] or x[j] > upper[j]:
            return OUTSIDE, -math.inf
    grad_x = np.empty(x.size)
    status, value = target_density(kind, x, n_hyper, arguments, prior, grad_x)
    if status != OK:
        return status, value
    grad_z = grad_x
    if free.size:
        grad_z = np.empty(z.size)
        log_distance = 0.0
        for i in range(free.size):
            grad_z[i] = grad_x[free[i]]
            if sign[i] != 0.0:
                grad_z[i] = grad_z[i] * sign[i] * math.exp(z[i]) + 1.0
                log_distance += z[i]
        value += log_distance
    if k:
        for j in range(k):
            grad_z[j] = grad_z[j] * slope[j] + d_log[j]
        value += log_jacobian
    copy_vector(grad, np.dot(transform_t, grad_z))
    return OK, value
