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

The density's layers are :func:`skgp_bayes._chain_density_numba.chain_density`;
its target is one of four kinds (the logit or softmax joint target, the
collapsed bound, the exact RBF target), each with its own entry point
(:data:`TRAJECTORIES`) that takes only its kind's argument tuple.

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

from numba import njit

from .._chain_density_numba import (
    GENERAL,
    KIND_COLLAPSED,
    KIND_EXACT,
    KIND_LOGIT,
    KIND_SOFTMAX,
    OK,
    OUTSIDE,
    chain_density,
)
from ..linalg._numba_ops import copy_vector

__all__ = ["TRAJECTORIES", "leapfrog_trajectory"]


@njit(cache=True, nogil=True, inline="always")
def leapfrog_trajectory(
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
        status, value = chain_density(wn, chain, kind, n_hyper, arguments, prior, gn)
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
        return leapfrog_trajectory(
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
